// RUN: cascade-opt %s -split-input-file -verify-diagnostics

// Attention sinks are f32 [Hqo]: one logit per query head.

func.func @sinks_wrong_heads(%q: tensor<4x32x128xf16>, %kv0: tensor<?x2x16x8x128xf16>, %kvp: tensor<?xi32>, %kvi: tensor<?xi32>, %last: tensor<?xi32>, %sinks: tensor<8xf32>, %o: tensor<4x32x128xf16>, %lse: tensor<4x32xf32>) {
  // expected-error@+1 {{'sinks' must be f32 [Hqo] = [32] (one value per query head), got [8] 'f32'}}
  %r:2 = cascade.paged_attention q(%q : tensor<4x32x128xf16>) kv(%kv0 : tensor<?x2x16x8x128xf16>)
      kv_indptr(%kvp : tensor<?xi32>) kv_indices(%kvi : tensor<?xi32>) kv_last_page_len(%last : tensor<?xi32>)
      sinks(%sinks : tensor<8xf32>)
      outs(%o, %lse : tensor<4x32x128xf16>, tensor<4x32xf32>) {page_size = 16 : i64}
      -> tensor<4x32x128xf16>, tensor<4x32xf32>
  return
}

// -----

func.func @sinks_f16(%q: tensor<4x32x128xf16>, %kv0: tensor<?x2x16x8x128xf16>, %kvp: tensor<?xi32>, %kvi: tensor<?xi32>, %last: tensor<?xi32>, %sinks: tensor<32xf16>, %o: tensor<4x32x128xf16>, %lse: tensor<4x32xf32>) {
  // expected-error@+1 {{'sinks' must be f32 [Hqo] = [32] (one value per query head), got [32] 'f16'}}
  %r:2 = cascade.paged_attention q(%q : tensor<4x32x128xf16>) kv(%kv0 : tensor<?x2x16x8x128xf16>)
      kv_indptr(%kvp : tensor<?xi32>) kv_indices(%kvi : tensor<?xi32>) kv_last_page_len(%last : tensor<?xi32>)
      sinks(%sinks : tensor<32xf16>)
      outs(%o, %lse : tensor<4x32x128xf16>, tensor<4x32xf32>) {page_size = 16 : i64}
      -> tensor<4x32x128xf16>, tensor<4x32xf32>
  return
}

// -----

func.func @sinks_rank2(%q: tensor<?x32x128xf16>, %kv0: tensor<?x2x16x8x128xf16>, %kvp: tensor<?xi32>, %kvi: tensor<?xi32>, %last: tensor<?xi32>, %sinks: tensor<4x32xf32>, %o: tensor<?x32x128xf16>, %lse: tensor<?x32xf32>) {
  // expected-error@+1 {{'sinks' must be f32 [Hqo] = [32] (one value per query head), got [4, 32] 'f32'}}
  %r:2 = cascade.paged_attention q(%q : tensor<?x32x128xf16>) kv(%kv0 : tensor<?x2x16x8x128xf16>)
      kv_indptr(%kvp : tensor<?xi32>) kv_indices(%kvi : tensor<?xi32>) kv_last_page_len(%last : tensor<?xi32>)
      sinks(%sinks : tensor<4x32xf32>)
      outs(%o, %lse : tensor<?x32x128xf16>, tensor<?x32xf32>) {page_size = 16 : i64}
      -> tensor<?x32x128xf16>, tensor<?x32xf32>
  return
}

// -----

func.func @cascade_sinks_wrong_heads(%q: tensor<?x32x128xf16>, %cache: tensor<?x2x16x8x128xf16>,
    %qo0: tensor<2xi32>, %kp0: tensor<2xi32>, %ki0: tensor<?xi32>, %kl0: tensor<1xi32>,
    %sinks: tensor<64xf32>, %o: tensor<?x32x128xf16>, %lse: tensor<?x32xf32>) {
  // expected-error@+1 {{'sinks' must be f32 [Hqo] = [32] (one value per query head), got [64] 'f32'}}
  %r:2 = cascade.multi_level_attention q(%q : tensor<?x32x128xf16>) kv(%cache : tensor<?x2x16x8x128xf16>)
      qo_indptr(%qo0 : tensor<2xi32>) kv_indptr(%kp0 : tensor<2xi32>)
      kv_indices(%ki0 : tensor<?xi32>) kv_last_page_len(%kl0 : tensor<1xi32>)
      sinks(%sinks : tensor<64xf32>)
      outs(%o, %lse : tensor<?x32x128xf16>, tensor<?x32xf32>) {page_size = 16 : i64}
      -> tensor<?x32x128xf16>, tensor<?x32xf32>
  return
}
