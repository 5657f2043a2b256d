// RUN: cascade-opt %s -split-input-file -verify-diagnostics

// cascade.paged_attention: the destinations o and lse.

func.func @o_element_type(%q: tensor<4x32x128xf16>, %kv0: tensor<?x2x16x8x128xf16>, %kvp: tensor<?xi32>, %kvi: tensor<?xi32>, %last: tensor<?xi32>, %o: tensor<4x32x128xbf16>, %lse: tensor<4x32xf32>) {
  // expected-error@+1 {{'o' must be [4, 32, 128] 'f16' (q's rows, heads and element type, v's head_dim), got [4, 32, 128] 'bf16'}}
  %r:2 = cascade.paged_attention q(%q : tensor<4x32x128xf16>) kv(%kv0 : tensor<?x2x16x8x128xf16>)
      kv_indptr(%kvp : tensor<?xi32>) kv_indices(%kvi : tensor<?xi32>) kv_last_page_len(%last : tensor<?xi32>)
      outs(%o, %lse : tensor<4x32x128xbf16>, tensor<4x32xf32>) {page_size = 16 : i64}
      -> tensor<4x32x128xbf16>, tensor<4x32xf32>
  return
}

// -----

func.func @o_rank(%q: tensor<4x32x128xf16>, %kv0: tensor<?x2x16x8x128xf16>, %kvp: tensor<?xi32>, %kvi: tensor<?xi32>, %last: tensor<?xi32>, %o: tensor<4x4096xf16>, %lse: tensor<4x32xf32>) {
  // expected-error@+1 {{'o' must be [4, 32, 128] 'f16' (q's rows, heads and element type, v's head_dim), got [4, 4096] 'f16'}}
  %r:2 = cascade.paged_attention q(%q : tensor<4x32x128xf16>) kv(%kv0 : tensor<?x2x16x8x128xf16>)
      kv_indptr(%kvp : tensor<?xi32>) kv_indices(%kvi : tensor<?xi32>) kv_last_page_len(%last : tensor<?xi32>)
      outs(%o, %lse : tensor<4x4096xf16>, tensor<4x32xf32>) {page_size = 16 : i64}
      -> tensor<4x4096xf16>, tensor<4x32xf32>
  return
}

// -----

func.func @o_shape(%q: tensor<4x32x128xf16>, %kv0: tensor<?x2x16x8x128xf16>, %kvp: tensor<?xi32>, %kvi: tensor<?xi32>, %last: tensor<?xi32>, %o: tensor<5x32x128xf16>, %lse: tensor<4x32xf32>) {
  // expected-error@+1 {{'o' must be [4, 32, 128] 'f16' (q's rows, heads and element type, v's head_dim), got [5, 32, 128] 'f16'}}
  %r:2 = cascade.paged_attention q(%q : tensor<4x32x128xf16>) kv(%kv0 : tensor<?x2x16x8x128xf16>)
      kv_indptr(%kvp : tensor<?xi32>) kv_indices(%kvi : tensor<?xi32>) kv_last_page_len(%last : tensor<?xi32>)
      outs(%o, %lse : tensor<5x32x128xf16>, tensor<4x32xf32>) {page_size = 16 : i64}
      -> tensor<5x32x128xf16>, tensor<4x32xf32>
  return
}

// -----

func.func @lse_rank(%q: tensor<4x32x128xf16>, %kv0: tensor<?x2x16x8x128xf16>, %kvp: tensor<?xi32>, %kvi: tensor<?xi32>, %last: tensor<?xi32>, %o: tensor<4x32x128xf16>, %lse: tensor<4x32x1xf32>) {
  // expected-error@+1 {{'lse' must be f32 [rows, Hqo] = [4, 32], got [4, 32, 1] 'f32'}}
  %r:2 = cascade.paged_attention q(%q : tensor<4x32x128xf16>) kv(%kv0 : tensor<?x2x16x8x128xf16>)
      kv_indptr(%kvp : tensor<?xi32>) kv_indices(%kvi : tensor<?xi32>) kv_last_page_len(%last : tensor<?xi32>)
      outs(%o, %lse : tensor<4x32x128xf16>, tensor<4x32x1xf32>) {page_size = 16 : i64}
      -> tensor<4x32x128xf16>, tensor<4x32x1xf32>
  return
}

// -----

func.func @lse_f16(%q: tensor<4x32x128xf16>, %kv0: tensor<?x2x16x8x128xf16>, %kvp: tensor<?xi32>, %kvi: tensor<?xi32>, %last: tensor<?xi32>, %o: tensor<4x32x128xf16>, %lse: tensor<4x32xf16>) {
  // expected-error@+1 {{'lse' must be f32 [rows, Hqo] = [4, 32], got [4, 32] 'f16'}}
  %r:2 = cascade.paged_attention q(%q : tensor<4x32x128xf16>) kv(%kv0 : tensor<?x2x16x8x128xf16>)
      kv_indptr(%kvp : tensor<?xi32>) kv_indices(%kvi : tensor<?xi32>) kv_last_page_len(%last : tensor<?xi32>)
      outs(%o, %lse : tensor<4x32x128xf16>, tensor<4x32xf16>) {page_size = 16 : i64}
      -> tensor<4x32x128xf16>, tensor<4x32xf16>
  return
}

// -----

func.func @lse_heads(%q: tensor<4x32x128xf16>, %kv0: tensor<?x2x16x8x128xf16>, %kvp: tensor<?xi32>, %kvi: tensor<?xi32>, %last: tensor<?xi32>, %o: tensor<4x32x128xf16>, %lse: tensor<4x8xf32>) {
  // expected-error@+1 {{'lse' must be f32 [rows, Hqo] = [4, 32], got [4, 8] 'f32'}}
  %r:2 = cascade.paged_attention q(%q : tensor<4x32x128xf16>) kv(%kv0 : tensor<?x2x16x8x128xf16>)
      kv_indptr(%kvp : tensor<?xi32>) kv_indices(%kvi : tensor<?xi32>) kv_last_page_len(%last : tensor<?xi32>)
      outs(%o, %lse : tensor<4x32x128xf16>, tensor<4x8xf32>) {page_size = 16 : i64}
      -> tensor<4x32x128xf16>, tensor<4x8xf32>
  return
}

// -----

// With dynamic rows the message prints the kDynamic sentinel instead of '?' (see the report); only the prefix is checked.
func.func @lse_dynamic_rows(%q: tensor<?x32x128xf16>, %kv0: tensor<?x2x16x8x128xf16>, %kvp: tensor<?xi32>, %kvi: tensor<?xi32>, %last: tensor<?xi32>, %o: tensor<?x32x128xf16>, %lse: tensor<?x8xf32>) {
  // expected-error@+1 {{'lse' must be f32 [rows, Hqo] = [?, 32], got [?, 8] 'f32'}}
  %r:2 = cascade.paged_attention q(%q : tensor<?x32x128xf16>) kv(%kv0 : tensor<?x2x16x8x128xf16>)
      kv_indptr(%kvp : tensor<?xi32>) kv_indices(%kvi : tensor<?xi32>) kv_last_page_len(%last : tensor<?xi32>)
      outs(%o, %lse : tensor<?x32x128xf16>, tensor<?x8xf32>) {page_size = 16 : i64}
      -> tensor<?x32x128xf16>, tensor<?x8xf32>
  return
}
