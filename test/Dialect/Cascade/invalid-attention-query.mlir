// RUN: cascade-opt %s -split-input-file -verify-diagnostics

// cascade.paged_attention: the query and head_dim.

func.func @q_rank(%q: tensor<4x4096xf16>, %kv0: tensor<?x2x16x8x128xf16>, %kvp: tensor<?xi32>, %kvi: tensor<?xi32>, %last: tensor<?xi32>, %o: tensor<4x4096xf16>, %lse: tensor<4x32xf32>) {
  // expected-error@+1 {{'q' must have rank 3 ([rows, Hqo, D]), got rank 2}}
  %r:2 = cascade.paged_attention q(%q : tensor<4x4096xf16>) kv(%kv0 : tensor<?x2x16x8x128xf16>)
      kv_indptr(%kvp : tensor<?xi32>) kv_indices(%kvi : tensor<?xi32>) kv_last_page_len(%last : tensor<?xi32>)
      outs(%o, %lse : tensor<4x4096xf16>, tensor<4x32xf32>) {page_size = 16 : i64}
      -> tensor<4x4096xf16>, tensor<4x32xf32>
  return
}

// -----

func.func @q_f32(%q: tensor<4x32x128xf32>, %kv0: tensor<?x2x16x8x128xf16>, %kvp: tensor<?xi32>, %kvi: tensor<?xi32>, %last: tensor<?xi32>, %o: tensor<4x32x128xf32>, %lse: tensor<4x32xf32>) {
  // expected-error@+1 {{'q' element type must be f16, bf16, f8E4M3FN or f8E5M2, got 'f32'}}
  %r:2 = cascade.paged_attention q(%q : tensor<4x32x128xf32>) kv(%kv0 : tensor<?x2x16x8x128xf16>)
      kv_indptr(%kvp : tensor<?xi32>) kv_indices(%kvi : tensor<?xi32>) kv_last_page_len(%last : tensor<?xi32>)
      outs(%o, %lse : tensor<4x32x128xf32>, tensor<4x32xf32>) {page_size = 16 : i64}
      -> tensor<4x32x128xf32>, tensor<4x32xf32>
  return
}

// -----

func.func @head_dim_dynamic(%q: tensor<4x32x?xf16>, %kv0: tensor<?x2x16x8x128xf16>, %kvp: tensor<?xi32>, %kvi: tensor<?xi32>, %last: tensor<?xi32>, %o: tensor<4x32x?xf16>, %lse: tensor<4x32xf32>) {
  // expected-error@+1 {{head_dim (dim 2 of 'q') must be static}}
  %r:2 = cascade.paged_attention q(%q : tensor<4x32x?xf16>) kv(%kv0 : tensor<?x2x16x8x128xf16>)
      kv_indptr(%kvp : tensor<?xi32>) kv_indices(%kvi : tensor<?xi32>) kv_last_page_len(%last : tensor<?xi32>)
      outs(%o, %lse : tensor<4x32x?xf16>, tensor<4x32xf32>) {page_size = 16 : i64}
      -> tensor<4x32x?xf16>, tensor<4x32xf32>
  return
}

// -----

func.func @head_dim_not_multiple_of_8(%q: tensor<4x32x100xf16>, %kv0: tensor<?x2x16x8x100xf16>, %kvp: tensor<?xi32>, %kvi: tensor<?xi32>, %last: tensor<?xi32>, %o: tensor<4x32x100xf16>, %lse: tensor<4x32xf32>) {
  // expected-error@+1 {{head_dim must be a positive multiple of 8 and at most 256, got 100}}
  %r:2 = cascade.paged_attention q(%q : tensor<4x32x100xf16>) kv(%kv0 : tensor<?x2x16x8x100xf16>)
      kv_indptr(%kvp : tensor<?xi32>) kv_indices(%kvi : tensor<?xi32>) kv_last_page_len(%last : tensor<?xi32>)
      outs(%o, %lse : tensor<4x32x100xf16>, tensor<4x32xf32>) {page_size = 16 : i64}
      -> tensor<4x32x100xf16>, tensor<4x32xf32>
  return
}

// -----

func.func @head_dim_too_large(%q: tensor<4x32x264xf16>, %kv0: tensor<?x2x16x8x264xf16>, %kvp: tensor<?xi32>, %kvi: tensor<?xi32>, %last: tensor<?xi32>, %o: tensor<4x32x264xf16>, %lse: tensor<4x32xf32>) {
  // expected-error@+1 {{head_dim must be a positive multiple of 8 and at most 256, got 264}}
  %r:2 = cascade.paged_attention q(%q : tensor<4x32x264xf16>) kv(%kv0 : tensor<?x2x16x8x264xf16>)
      kv_indptr(%kvp : tensor<?xi32>) kv_indices(%kvi : tensor<?xi32>) kv_last_page_len(%last : tensor<?xi32>)
      outs(%o, %lse : tensor<4x32x264xf16>, tensor<4x32xf32>) {page_size = 16 : i64}
      -> tensor<4x32x264xf16>, tensor<4x32xf32>
  return
}

// -----

func.func @head_dim_zero(%q: tensor<4x32x0xf16>, %kv0: tensor<?x2x16x8x0xf16>, %kvp: tensor<?xi32>, %kvi: tensor<?xi32>, %last: tensor<?xi32>, %o: tensor<4x32x0xf16>, %lse: tensor<4x32xf32>) {
  // expected-error@+1 {{head_dim must be a positive multiple of 8 and at most 256, got 0}}
  %r:2 = cascade.paged_attention q(%q : tensor<4x32x0xf16>) kv(%kv0 : tensor<?x2x16x8x0xf16>)
      kv_indptr(%kvp : tensor<?xi32>) kv_indices(%kvi : tensor<?xi32>) kv_last_page_len(%last : tensor<?xi32>)
      outs(%o, %lse : tensor<4x32x0xf16>, tensor<4x32xf32>) {page_size = 16 : i64}
      -> tensor<4x32x0xf16>, tensor<4x32xf32>
  return
}
