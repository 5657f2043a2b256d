// RUN: cascade-opt %s -split-input-file -verify-diagnostics

// cascade.paged_attention: query heads must be a multiple of KV heads.

func.func @gqa_not_multiple(%q: tensor<4x32x128xf16>, %kv0: tensor<?x2x16x6x128xf16>, %kvp: tensor<?xi32>, %kvi: tensor<?xi32>, %last: tensor<?xi32>, %o: tensor<4x32x128xf16>, %lse: tensor<4x32xf32>) {
  // expected-error@+1 {{number of query heads (32) must be a multiple of the number of KV heads (6)}}
  %r:2 = cascade.paged_attention q(%q : tensor<4x32x128xf16>) kv(%kv0 : tensor<?x2x16x6x128xf16>)
      kv_indptr(%kvp : tensor<?xi32>) kv_indices(%kvi : tensor<?xi32>) kv_last_page_len(%last : tensor<?xi32>)
      outs(%o, %lse : tensor<4x32x128xf16>, tensor<4x32xf32>) {page_size = 16 : i64}
      -> tensor<4x32x128xf16>, tensor<4x32xf32>
  return
}

// -----

func.func @gqa_hnd_not_multiple(%q: tensor<4x32x128xf16>, %kv0: tensor<?x12x16x128xf16>, %kv1: tensor<?x12x16x128xf16>, %kvp: tensor<?xi32>, %kvi: tensor<?xi32>, %last: tensor<?xi32>, %o: tensor<4x32x128xf16>, %lse: tensor<4x32xf32>) {
  // expected-error@+1 {{number of query heads (32) must be a multiple of the number of KV heads (12)}}
  %r:2 = cascade.paged_attention q(%q : tensor<4x32x128xf16>) kv(%kv0, %kv1 : tensor<?x12x16x128xf16>, tensor<?x12x16x128xf16>)
      kv_indptr(%kvp : tensor<?xi32>) kv_indices(%kvi : tensor<?xi32>) kv_last_page_len(%last : tensor<?xi32>)
      outs(%o, %lse : tensor<4x32x128xf16>, tensor<4x32xf32>) {page_size = 16 : i64, kv_layout = #cascade.kv_layout<hnd>}
      -> tensor<4x32x128xf16>, tensor<4x32xf32>
  return
}

// -----

func.func @zero_kv_heads(%q: tensor<4x32x128xf16>, %kv0: tensor<?x2x16x0x128xf16>, %kvp: tensor<?xi32>, %kvi: tensor<?xi32>, %last: tensor<?xi32>, %o: tensor<4x32x128xf16>, %lse: tensor<4x32xf32>) {
  // expected-error@+1 {{number of query heads (32) must be a multiple of the number of KV heads (0)}}
  %r:2 = cascade.paged_attention q(%q : tensor<4x32x128xf16>) kv(%kv0 : tensor<?x2x16x0x128xf16>)
      kv_indptr(%kvp : tensor<?xi32>) kv_indices(%kvi : tensor<?xi32>) kv_last_page_len(%last : tensor<?xi32>)
      outs(%o, %lse : tensor<4x32x128xf16>, tensor<4x32xf32>) {page_size = 16 : i64}
      -> tensor<4x32x128xf16>, tensor<4x32xf32>
  return
}
