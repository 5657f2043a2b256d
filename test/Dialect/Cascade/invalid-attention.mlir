// RUN: cascade-opt %s -split-input-file -verify-diagnostics

// Verifier errors of cascade.paged_attention: q, the page pool (single value
// and (k, v) pair, NHD and HND), the destinations, the options, the index
// arrays, the decode row count and the split-KV plan operands.

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
  // expected-error@+1 {{'q' element type must be f16 or bf16, got 'f32'}}
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
  // expected-error@+1 {{head_dim must be a positive multiple of 8 and at most 512, got 100}}
  %r:2 = cascade.paged_attention q(%q : tensor<4x32x100xf16>) kv(%kv0 : tensor<?x2x16x8x100xf16>)
      kv_indptr(%kvp : tensor<?xi32>) kv_indices(%kvi : tensor<?xi32>) kv_last_page_len(%last : tensor<?xi32>)
      outs(%o, %lse : tensor<4x32x100xf16>, tensor<4x32xf32>) {page_size = 16 : i64}
      -> tensor<4x32x100xf16>, tensor<4x32xf32>
  return
}

// -----

func.func @head_dim_too_large(%q: tensor<4x32x520xf16>, %kv0: tensor<?x2x16x8x520xf16>, %kvp: tensor<?xi32>, %kvi: tensor<?xi32>, %last: tensor<?xi32>, %o: tensor<4x32x520xf16>, %lse: tensor<4x32xf32>) {
  // expected-error@+1 {{head_dim must be a positive multiple of 8 and at most 512, got 520}}
  %r:2 = cascade.paged_attention q(%q : tensor<4x32x520xf16>) kv(%kv0 : tensor<?x2x16x8x520xf16>)
      kv_indptr(%kvp : tensor<?xi32>) kv_indices(%kvi : tensor<?xi32>) kv_last_page_len(%last : tensor<?xi32>)
      outs(%o, %lse : tensor<4x32x520xf16>, tensor<4x32xf32>) {page_size = 16 : i64}
      -> tensor<4x32x520xf16>, tensor<4x32xf32>
  return
}

// -----

func.func @head_dim_zero(%q: tensor<4x32x0xf16>, %kv0: tensor<?x2x16x8x0xf16>, %kvp: tensor<?xi32>, %kvi: tensor<?xi32>, %last: tensor<?xi32>, %o: tensor<4x32x0xf16>, %lse: tensor<4x32xf32>) {
  // expected-error@+1 {{head_dim must be a positive multiple of 8 and at most 512, got 0}}
  %r:2 = cascade.paged_attention q(%q : tensor<4x32x0xf16>) kv(%kv0 : tensor<?x2x16x8x0xf16>)
      kv_indptr(%kvp : tensor<?xi32>) kv_indices(%kvi : tensor<?xi32>) kv_last_page_len(%last : tensor<?xi32>)
      outs(%o, %lse : tensor<4x32x0xf16>, tensor<4x32xf32>) {page_size = 16 : i64}
      -> tensor<4x32x0xf16>, tensor<4x32xf32>
  return
}

// -----

func.func @kv_three_values(%q: tensor<4x32x128xf16>, %kv0: tensor<?x16x8x128xf16>, %kv1: tensor<?x16x8x128xf16>, %kv2: tensor<?x16x8x128xf16>, %kvp: tensor<?xi32>, %kvi: tensor<?xi32>, %last: tensor<?xi32>, %o: tensor<4x32x128xf16>, %lse: tensor<4x32xf32>) {
  // expected-error@+1 {{expects one page pool or a (k, v) pair in 'kv', got 3 values}}
  %r:2 = cascade.paged_attention q(%q : tensor<4x32x128xf16>) kv(%kv0, %kv1, %kv2 : tensor<?x16x8x128xf16>, tensor<?x16x8x128xf16>, tensor<?x16x8x128xf16>)
      kv_indptr(%kvp : tensor<?xi32>) kv_indices(%kvi : tensor<?xi32>) kv_last_page_len(%last : tensor<?xi32>)
      outs(%o, %lse : tensor<4x32x128xf16>, tensor<4x32xf32>) {page_size = 16 : i64}
      -> tensor<4x32x128xf16>, tensor<4x32xf32>
  return
}

// -----

// No page pool at all (only expressible in the generic form).
func.func @kv_empty(%q: tensor<4x32x128xf16>, %kvp: tensor<?xi32>, %kvi: tensor<?xi32>, %last: tensor<?xi32>,
                    %o: tensor<4x32x128xf16>, %lse: tensor<4x32xf32>) {
  // expected-error@+1 {{expects one page pool or a (k, v) pair in 'kv', got 0 values}}
  %r:2 = "cascade.paged_attention"(%q, %kvp, %kvi, %last, %o, %lse)
      <{operandSegmentSizes = array<i32: 1, 0, 0, 1, 1, 1, 0, 1, 1>, page_size = 16 : i64}>
      : (tensor<4x32x128xf16>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<4x32x128xf16>, tensor<4x32xf32>)
      -> (tensor<4x32x128xf16>, tensor<4x32xf32>)
  return
}

// -----

func.func @single_pool_rank_nhd(%q: tensor<4x32x128xf16>, %kv0: tensor<?x16x8x128xf16>, %kvp: tensor<?xi32>, %kvi: tensor<?xi32>, %last: tensor<?xi32>, %o: tensor<4x32x128xf16>, %lse: tensor<4x32xf32>) {
  // expected-error@+1 {{a single page pool must have rank 5 ([P, 2, page_size, Hkv, D]), got rank 4}}
  %r:2 = cascade.paged_attention q(%q : tensor<4x32x128xf16>) kv(%kv0 : tensor<?x16x8x128xf16>)
      kv_indptr(%kvp : tensor<?xi32>) kv_indices(%kvi : tensor<?xi32>) kv_last_page_len(%last : tensor<?xi32>)
      outs(%o, %lse : tensor<4x32x128xf16>, tensor<4x32xf32>) {page_size = 16 : i64}
      -> tensor<4x32x128xf16>, tensor<4x32xf32>
  return
}

// -----

func.func @single_pool_rank_hnd(%q: tensor<4x32x128xf16>, %kv0: tensor<?x8x16x128xf16>, %kvp: tensor<?xi32>, %kvi: tensor<?xi32>, %last: tensor<?xi32>, %o: tensor<4x32x128xf16>, %lse: tensor<4x32xf32>) {
  // expected-error@+1 {{a single page pool must have rank 5 ([P, 2, Hkv, page_size, D]), got rank 4}}
  %r:2 = cascade.paged_attention q(%q : tensor<4x32x128xf16>) kv(%kv0 : tensor<?x8x16x128xf16>)
      kv_indptr(%kvp : tensor<?xi32>) kv_indices(%kvi : tensor<?xi32>) kv_last_page_len(%last : tensor<?xi32>)
      outs(%o, %lse : tensor<4x32x128xf16>, tensor<4x32xf32>) {page_size = 16 : i64, kv_layout = #cascade.kv_layout<hnd>}
      -> tensor<4x32x128xf16>, tensor<4x32xf32>
  return
}

// -----

func.func @pair_pool_rank_nhd(%q: tensor<4x32x128xf16>, %kv0: tensor<?x2x16x8x128xf16>, %kv1: tensor<?x2x16x8x128xf16>, %kvp: tensor<?xi32>, %kvi: tensor<?xi32>, %last: tensor<?xi32>, %o: tensor<4x32x128xf16>, %lse: tensor<4x32xf32>) {
  // expected-error@+1 {{a (k, v) page pool must have rank 4 ([P, page_size, Hkv, D]), got rank 5}}
  %r:2 = cascade.paged_attention q(%q : tensor<4x32x128xf16>) kv(%kv0, %kv1 : tensor<?x2x16x8x128xf16>, tensor<?x2x16x8x128xf16>)
      kv_indptr(%kvp : tensor<?xi32>) kv_indices(%kvi : tensor<?xi32>) kv_last_page_len(%last : tensor<?xi32>)
      outs(%o, %lse : tensor<4x32x128xf16>, tensor<4x32xf32>) {page_size = 16 : i64}
      -> tensor<4x32x128xf16>, tensor<4x32xf32>
  return
}

// -----

func.func @pair_pool_rank_hnd(%q: tensor<4x32x128xf16>, %kv0: tensor<?x16x128xf16>, %kv1: tensor<?x16x128xf16>, %kvp: tensor<?xi32>, %kvi: tensor<?xi32>, %last: tensor<?xi32>, %o: tensor<4x32x128xf16>, %lse: tensor<4x32xf32>) {
  // expected-error@+1 {{a (k, v) page pool must have rank 4 ([P, Hkv, page_size, D]), got rank 3}}
  %r:2 = cascade.paged_attention q(%q : tensor<4x32x128xf16>) kv(%kv0, %kv1 : tensor<?x16x128xf16>, tensor<?x16x128xf16>)
      kv_indptr(%kvp : tensor<?xi32>) kv_indices(%kvi : tensor<?xi32>) kv_last_page_len(%last : tensor<?xi32>)
      outs(%o, %lse : tensor<4x32x128xf16>, tensor<4x32xf32>) {page_size = 16 : i64, kv_layout = #cascade.kv_layout<hnd>}
      -> tensor<4x32x128xf16>, tensor<4x32xf32>
  return
}

// -----

func.func @pool_dim1_not_2(%q: tensor<4x32x128xf16>, %kv0: tensor<?x1x16x8x128xf16>, %kvp: tensor<?xi32>, %kvi: tensor<?xi32>, %last: tensor<?xi32>, %o: tensor<4x32x128xf16>, %lse: tensor<4x32xf32>) {
  // expected-error@+1 {{dim 1 of the page pool must be 2 (keys, values), got 1}}
  %r:2 = cascade.paged_attention q(%q : tensor<4x32x128xf16>) kv(%kv0 : tensor<?x1x16x8x128xf16>)
      kv_indptr(%kvp : tensor<?xi32>) kv_indices(%kvi : tensor<?xi32>) kv_last_page_len(%last : tensor<?xi32>)
      outs(%o, %lse : tensor<4x32x128xf16>, tensor<4x32xf32>) {page_size = 16 : i64}
      -> tensor<4x32x128xf16>, tensor<4x32xf32>
  return
}

// -----

func.func @pair_element_type_mismatch(%q: tensor<4x32x128xf16>, %kv0: tensor<?x16x8x128xf16>, %kv1: tensor<?x16x8x128xbf16>, %kvp: tensor<?xi32>, %kvi: tensor<?xi32>, %last: tensor<?xi32>, %o: tensor<4x32x128xf16>, %lse: tensor<4x32xf32>) {
  // expected-error@+1 {{'v' element type 'bf16' does not match 'k' element type 'f16'}}
  %r:2 = cascade.paged_attention q(%q : tensor<4x32x128xf16>) kv(%kv0, %kv1 : tensor<?x16x8x128xf16>, tensor<?x16x8x128xbf16>)
      kv_indptr(%kvp : tensor<?xi32>) kv_indices(%kvi : tensor<?xi32>) kv_last_page_len(%last : tensor<?xi32>)
      outs(%o, %lse : tensor<4x32x128xf16>, tensor<4x32xf32>) {page_size = 16 : i64}
      -> tensor<4x32x128xf16>, tensor<4x32xf32>
  return
}

// -----

func.func @pair_rank_mismatch(%q: tensor<4x32x128xf16>, %kv0: tensor<?x16x8x128xf16>, %kv1: tensor<?x16x128xf16>, %kvp: tensor<?xi32>, %kvi: tensor<?xi32>, %last: tensor<?xi32>, %o: tensor<4x32x128xf16>, %lse: tensor<4x32xf32>) {
  // expected-error@+1 {{'v' rank 3 does not match 'k' rank 4}}
  %r:2 = cascade.paged_attention q(%q : tensor<4x32x128xf16>) kv(%kv0, %kv1 : tensor<?x16x8x128xf16>, tensor<?x16x128xf16>)
      kv_indptr(%kvp : tensor<?xi32>) kv_indices(%kvi : tensor<?xi32>) kv_last_page_len(%last : tensor<?xi32>)
      outs(%o, %lse : tensor<4x32x128xf16>, tensor<4x32xf32>) {page_size = 16 : i64}
      -> tensor<4x32x128xf16>, tensor<4x32xf32>
  return
}

// -----

func.func @pair_shape_mismatch(%q: tensor<4x32x128xf16>, %kv0: tensor<?x16x8x128xf16>, %kv1: tensor<?x16x4x128xf16>, %kvp: tensor<?xi32>, %kvi: tensor<?xi32>, %last: tensor<?xi32>, %o: tensor<4x32x128xf16>, %lse: tensor<4x32xf32>) {
  // expected-error@+1 {{'v' shape [?, 16, 4, 128] does not match 'k' shape [?, 16, 8, 128]}}
  %r:2 = cascade.paged_attention q(%q : tensor<4x32x128xf16>) kv(%kv0, %kv1 : tensor<?x16x8x128xf16>, tensor<?x16x4x128xf16>)
      kv_indptr(%kvp : tensor<?xi32>) kv_indices(%kvi : tensor<?xi32>) kv_last_page_len(%last : tensor<?xi32>)
      outs(%o, %lse : tensor<4x32x128xf16>, tensor<4x32xf32>) {page_size = 16 : i64}
      -> tensor<4x32x128xf16>, tensor<4x32xf32>
  return
}

// -----

func.func @pool_f32(%q: tensor<4x32x128xf16>, %kv0: tensor<?x2x16x8x128xf32>, %kvp: tensor<?xi32>, %kvi: tensor<?xi32>, %last: tensor<?xi32>, %o: tensor<4x32x128xf16>, %lse: tensor<4x32xf32>) {
  // expected-error@+1 {{KV cache element type must be f16 or bf16, got 'f32'}}
  %r:2 = cascade.paged_attention q(%q : tensor<4x32x128xf16>) kv(%kv0 : tensor<?x2x16x8x128xf32>)
      kv_indptr(%kvp : tensor<?xi32>) kv_indices(%kvi : tensor<?xi32>) kv_last_page_len(%last : tensor<?xi32>)
      outs(%o, %lse : tensor<4x32x128xf16>, tensor<4x32xf32>) {page_size = 16 : i64}
      -> tensor<4x32x128xf16>, tensor<4x32xf32>
  return
}

// -----

func.func @pair_f32(%q: tensor<4x32x128xf16>, %kv0: tensor<?x16x8x128xf32>, %kv1: tensor<?x16x8x128xf32>, %kvp: tensor<?xi32>, %kvi: tensor<?xi32>, %last: tensor<?xi32>, %o: tensor<4x32x128xf16>, %lse: tensor<4x32xf32>) {
  // expected-error@+1 {{KV cache element type must be f16 or bf16, got 'f32'}}
  %r:2 = cascade.paged_attention q(%q : tensor<4x32x128xf16>) kv(%kv0, %kv1 : tensor<?x16x8x128xf32>, tensor<?x16x8x128xf32>)
      kv_indptr(%kvp : tensor<?xi32>) kv_indices(%kvi : tensor<?xi32>) kv_last_page_len(%last : tensor<?xi32>)
      outs(%o, %lse : tensor<4x32x128xf16>, tensor<4x32xf32>) {page_size = 16 : i64}
      -> tensor<4x32x128xf16>, tensor<4x32xf32>
  return
}

// -----

func.func @page_size_mismatch_single_nhd(%q: tensor<4x32x128xf16>, %kv0: tensor<?x2x32x8x128xf16>, %kvp: tensor<?xi32>, %kvi: tensor<?xi32>, %last: tensor<?xi32>, %o: tensor<4x32x128xf16>, %lse: tensor<4x32xf32>) {
  // expected-error@+1 {{page dimension of the KV cache is 32 but page_size = 16}}
  %r:2 = cascade.paged_attention q(%q : tensor<4x32x128xf16>) kv(%kv0 : tensor<?x2x32x8x128xf16>)
      kv_indptr(%kvp : tensor<?xi32>) kv_indices(%kvi : tensor<?xi32>) kv_last_page_len(%last : tensor<?xi32>)
      outs(%o, %lse : tensor<4x32x128xf16>, tensor<4x32xf32>) {page_size = 16 : i64}
      -> tensor<4x32x128xf16>, tensor<4x32xf32>
  return
}

// -----

// An NHD-shaped pool used with kv_layout = hnd: the page dimension is dim 3
// ([P, 2, Hkv, page_size, D]), here 8.
func.func @page_size_mismatch_single_hnd(%q: tensor<4x32x128xf16>, %kv0: tensor<?x2x16x8x128xf16>, %kvp: tensor<?xi32>, %kvi: tensor<?xi32>, %last: tensor<?xi32>, %o: tensor<4x32x128xf16>, %lse: tensor<4x32xf32>) {
  // expected-error@+1 {{page dimension of the KV cache is 8 but page_size = 16}}
  %r:2 = cascade.paged_attention q(%q : tensor<4x32x128xf16>) kv(%kv0 : tensor<?x2x16x8x128xf16>)
      kv_indptr(%kvp : tensor<?xi32>) kv_indices(%kvi : tensor<?xi32>) kv_last_page_len(%last : tensor<?xi32>)
      outs(%o, %lse : tensor<4x32x128xf16>, tensor<4x32xf32>) {page_size = 16 : i64, kv_layout = #cascade.kv_layout<hnd>}
      -> tensor<4x32x128xf16>, tensor<4x32xf32>
  return
}

// -----

func.func @page_size_mismatch_pair_nhd(%q: tensor<4x32x128xf16>, %kv0: tensor<?x1x8x128xf16>, %kv1: tensor<?x1x8x128xf16>, %kvp: tensor<?xi32>, %kvi: tensor<?xi32>, %last: tensor<?xi32>, %o: tensor<4x32x128xf16>, %lse: tensor<4x32xf32>) {
  // expected-error@+1 {{page dimension of the KV cache is 1 but page_size = 16}}
  %r:2 = cascade.paged_attention q(%q : tensor<4x32x128xf16>) kv(%kv0, %kv1 : tensor<?x1x8x128xf16>, tensor<?x1x8x128xf16>)
      kv_indptr(%kvp : tensor<?xi32>) kv_indices(%kvi : tensor<?xi32>) kv_last_page_len(%last : tensor<?xi32>)
      outs(%o, %lse : tensor<4x32x128xf16>, tensor<4x32xf32>) {page_size = 16 : i64}
      -> tensor<4x32x128xf16>, tensor<4x32xf32>
  return
}

// -----

// HND pair: [P, Hkv, page_size, D], so this NHD-shaped pool has page dimension 8.
func.func @page_size_mismatch_pair_hnd(%q: tensor<4x32x128xf16>, %kv0: tensor<?x16x8x128xf16>, %kv1: tensor<?x16x8x128xf16>, %kvp: tensor<?xi32>, %kvi: tensor<?xi32>, %last: tensor<?xi32>, %o: tensor<4x32x128xf16>, %lse: tensor<4x32xf32>) {
  // expected-error@+1 {{page dimension of the KV cache is 8 but page_size = 16}}
  %r:2 = cascade.paged_attention q(%q : tensor<4x32x128xf16>) kv(%kv0, %kv1 : tensor<?x16x8x128xf16>, tensor<?x16x8x128xf16>)
      kv_indptr(%kvp : tensor<?xi32>) kv_indices(%kvi : tensor<?xi32>) kv_last_page_len(%last : tensor<?xi32>)
      outs(%o, %lse : tensor<4x32x128xf16>, tensor<4x32xf32>) {page_size = 16 : i64, kv_layout = #cascade.kv_layout<hnd>}
      -> tensor<4x32x128xf16>, tensor<4x32xf32>
  return
}

// -----

func.func @kv_head_dim_mismatch(%q: tensor<4x32x128xf16>, %kv0: tensor<?x2x16x8x64xf16>, %kvp: tensor<?xi32>, %kvi: tensor<?xi32>, %last: tensor<?xi32>, %o: tensor<4x32x128xf16>, %lse: tensor<4x32xf32>) {
  // expected-error@+1 {{head_dim of the KV cache is 64 but 'q' has head_dim 128}}
  %r:2 = cascade.paged_attention q(%q : tensor<4x32x128xf16>) kv(%kv0 : tensor<?x2x16x8x64xf16>)
      kv_indptr(%kvp : tensor<?xi32>) kv_indices(%kvi : tensor<?xi32>) kv_last_page_len(%last : tensor<?xi32>)
      outs(%o, %lse : tensor<4x32x128xf16>, tensor<4x32xf32>) {page_size = 16 : i64}
      -> tensor<4x32x128xf16>, tensor<4x32xf32>
  return
}

// -----

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

// -----

func.func @o_element_type(%q: tensor<4x32x128xf16>, %kv0: tensor<?x2x16x8x128xf16>, %kvp: tensor<?xi32>, %kvi: tensor<?xi32>, %last: tensor<?xi32>, %o: tensor<4x32x128xbf16>, %lse: tensor<4x32xf32>) {
  // expected-error@+1 {{'o' must have the type of 'q' [4, 32, 128] 'f16', got [4, 32, 128] 'bf16'}}
  %r:2 = cascade.paged_attention q(%q : tensor<4x32x128xf16>) kv(%kv0 : tensor<?x2x16x8x128xf16>)
      kv_indptr(%kvp : tensor<?xi32>) kv_indices(%kvi : tensor<?xi32>) kv_last_page_len(%last : tensor<?xi32>)
      outs(%o, %lse : tensor<4x32x128xbf16>, tensor<4x32xf32>) {page_size = 16 : i64}
      -> tensor<4x32x128xbf16>, tensor<4x32xf32>
  return
}

// -----

func.func @o_rank(%q: tensor<4x32x128xf16>, %kv0: tensor<?x2x16x8x128xf16>, %kvp: tensor<?xi32>, %kvi: tensor<?xi32>, %last: tensor<?xi32>, %o: tensor<4x4096xf16>, %lse: tensor<4x32xf32>) {
  // expected-error@+1 {{'o' must have the type of 'q' [4, 32, 128] 'f16', got [4, 4096] 'f16'}}
  %r:2 = cascade.paged_attention q(%q : tensor<4x32x128xf16>) kv(%kv0 : tensor<?x2x16x8x128xf16>)
      kv_indptr(%kvp : tensor<?xi32>) kv_indices(%kvi : tensor<?xi32>) kv_last_page_len(%last : tensor<?xi32>)
      outs(%o, %lse : tensor<4x4096xf16>, tensor<4x32xf32>) {page_size = 16 : i64}
      -> tensor<4x4096xf16>, tensor<4x32xf32>
  return
}

// -----

func.func @o_shape(%q: tensor<4x32x128xf16>, %kv0: tensor<?x2x16x8x128xf16>, %kvp: tensor<?xi32>, %kvi: tensor<?xi32>, %last: tensor<?xi32>, %o: tensor<5x32x128xf16>, %lse: tensor<4x32xf32>) {
  // expected-error@+1 {{'o' must have the type of 'q' [4, 32, 128] 'f16', got [5, 32, 128] 'f16'}}
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

// -----

func.func @sm_scale_zero(%q: tensor<4x32x128xf16>, %kv0: tensor<?x2x16x8x128xf16>, %kvp: tensor<?xi32>, %kvi: tensor<?xi32>, %last: tensor<?xi32>, %o: tensor<4x32x128xf16>, %lse: tensor<4x32xf32>) {
  // expected-error@+1 {{sm_scale must be finite and > 0, got 0.000000e+00}}
  %r:2 = cascade.paged_attention q(%q : tensor<4x32x128xf16>) kv(%kv0 : tensor<?x2x16x8x128xf16>)
      kv_indptr(%kvp : tensor<?xi32>) kv_indices(%kvi : tensor<?xi32>) kv_last_page_len(%last : tensor<?xi32>)
      outs(%o, %lse : tensor<4x32x128xf16>, tensor<4x32xf32>) {page_size = 16 : i64, sm_scale = 0.0 : f32}
      -> tensor<4x32x128xf16>, tensor<4x32xf32>
  return
}

// -----

func.func @sm_scale_negative(%q: tensor<4x32x128xf16>, %kv0: tensor<?x2x16x8x128xf16>, %kvp: tensor<?xi32>, %kvi: tensor<?xi32>, %last: tensor<?xi32>, %o: tensor<4x32x128xf16>, %lse: tensor<4x32xf32>) {
  // expected-error@+1 {{sm_scale must be finite and > 0, got -1.000000e+00}}
  %r:2 = cascade.paged_attention q(%q : tensor<4x32x128xf16>) kv(%kv0 : tensor<?x2x16x8x128xf16>)
      kv_indptr(%kvp : tensor<?xi32>) kv_indices(%kvi : tensor<?xi32>) kv_last_page_len(%last : tensor<?xi32>)
      outs(%o, %lse : tensor<4x32x128xf16>, tensor<4x32xf32>) {page_size = 16 : i64, sm_scale = -1.0 : f32}
      -> tensor<4x32x128xf16>, tensor<4x32xf32>
  return
}

// -----

func.func @sm_scale_inf(%q: tensor<4x32x128xf16>, %kv0: tensor<?x2x16x8x128xf16>, %kvp: tensor<?xi32>, %kvi: tensor<?xi32>, %last: tensor<?xi32>, %o: tensor<4x32x128xf16>, %lse: tensor<4x32xf32>) {
  // expected-error@+1 {{sm_scale must be finite and > 0, got INF}}
  %r:2 = cascade.paged_attention q(%q : tensor<4x32x128xf16>) kv(%kv0 : tensor<?x2x16x8x128xf16>)
      kv_indptr(%kvp : tensor<?xi32>) kv_indices(%kvi : tensor<?xi32>) kv_last_page_len(%last : tensor<?xi32>)
      outs(%o, %lse : tensor<4x32x128xf16>, tensor<4x32xf32>) {page_size = 16 : i64, sm_scale = 0x7F800000 : f32}
      -> tensor<4x32x128xf16>, tensor<4x32xf32>
  return
}

// -----

func.func @sm_scale_nan(%q: tensor<4x32x128xf16>, %kv0: tensor<?x2x16x8x128xf16>, %kvp: tensor<?xi32>, %kvi: tensor<?xi32>, %last: tensor<?xi32>, %o: tensor<4x32x128xf16>, %lse: tensor<4x32xf32>) {
  // expected-error@+1 {{sm_scale must be finite and > 0, got nan}}
  %r:2 = cascade.paged_attention q(%q : tensor<4x32x128xf16>) kv(%kv0 : tensor<?x2x16x8x128xf16>)
      kv_indptr(%kvp : tensor<?xi32>) kv_indices(%kvi : tensor<?xi32>) kv_last_page_len(%last : tensor<?xi32>)
      outs(%o, %lse : tensor<4x32x128xf16>, tensor<4x32xf32>) {page_size = 16 : i64, sm_scale = 0x7FC00000 : f32}
      -> tensor<4x32x128xf16>, tensor<4x32xf32>
  return
}

// -----

func.func @soft_cap_negative(%q: tensor<4x32x128xf16>, %kv0: tensor<?x2x16x8x128xf16>, %kvp: tensor<?xi32>, %kvi: tensor<?xi32>, %last: tensor<?xi32>, %o: tensor<4x32x128xf16>, %lse: tensor<4x32xf32>) {
  // expected-error@+1 {{logits_soft_cap must be finite and >= 0 (0 = off), got -1.000000e+00}}
  %r:2 = cascade.paged_attention q(%q : tensor<4x32x128xf16>) kv(%kv0 : tensor<?x2x16x8x128xf16>)
      kv_indptr(%kvp : tensor<?xi32>) kv_indices(%kvi : tensor<?xi32>) kv_last_page_len(%last : tensor<?xi32>)
      outs(%o, %lse : tensor<4x32x128xf16>, tensor<4x32xf32>) {page_size = 16 : i64, logits_soft_cap = -1.0 : f32}
      -> tensor<4x32x128xf16>, tensor<4x32xf32>
  return
}

// -----

// +inf is rejected too (the check is finite && >= 0; the message only says >= 0).
func.func @soft_cap_inf(%q: tensor<4x32x128xf16>, %kv0: tensor<?x2x16x8x128xf16>, %kvp: tensor<?xi32>, %kvi: tensor<?xi32>, %last: tensor<?xi32>, %o: tensor<4x32x128xf16>, %lse: tensor<4x32xf32>) {
  // expected-error@+1 {{logits_soft_cap must be finite and >= 0 (0 = off), got INF}}
  %r:2 = cascade.paged_attention q(%q : tensor<4x32x128xf16>) kv(%kv0 : tensor<?x2x16x8x128xf16>)
      kv_indptr(%kvp : tensor<?xi32>) kv_indices(%kvi : tensor<?xi32>) kv_last_page_len(%last : tensor<?xi32>)
      outs(%o, %lse : tensor<4x32x128xf16>, tensor<4x32xf32>) {page_size = 16 : i64, logits_soft_cap = 0x7F800000 : f32}
      -> tensor<4x32x128xf16>, tensor<4x32xf32>
  return
}

// -----

func.func @window_left_below_minus_one(%q: tensor<4x32x128xf16>, %kv0: tensor<?x2x16x8x128xf16>, %kvp: tensor<?xi32>, %kvi: tensor<?xi32>, %last: tensor<?xi32>, %o: tensor<4x32x128xf16>, %lse: tensor<4x32xf32>) {
  // expected-error@+1 {{window_left must be >= -1 (-1 = off), got -2}}
  %r:2 = cascade.paged_attention q(%q : tensor<4x32x128xf16>) kv(%kv0 : tensor<?x2x16x8x128xf16>)
      kv_indptr(%kvp : tensor<?xi32>) kv_indices(%kvi : tensor<?xi32>) kv_last_page_len(%last : tensor<?xi32>)
      outs(%o, %lse : tensor<4x32x128xf16>, tensor<4x32xf32>) {page_size = 16 : i64, window_left = -2 : i64}
      -> tensor<4x32x128xf16>, tensor<4x32xf32>
  return
}

// -----

func.func @rope_scale_zero(%q: tensor<4x32x128xf16>, %kv0: tensor<?x2x16x8x128xf16>, %kvp: tensor<?xi32>, %kvi: tensor<?xi32>, %last: tensor<?xi32>, %o: tensor<4x32x128xf16>, %lse: tensor<4x32xf32>) {
  // expected-error@+1 {{rope_scale must be finite and > 0, got 0.000000e+00}}
  %r:2 = cascade.paged_attention q(%q : tensor<4x32x128xf16>) kv(%kv0 : tensor<?x2x16x8x128xf16>)
      kv_indptr(%kvp : tensor<?xi32>) kv_indices(%kvi : tensor<?xi32>) kv_last_page_len(%last : tensor<?xi32>)
      outs(%o, %lse : tensor<4x32x128xf16>, tensor<4x32xf32>) {page_size = 16 : i64, pos_encoding = #cascade.pos_encoding<rope_llama>, rope_scale = 0.0 : f32}
      -> tensor<4x32x128xf16>, tensor<4x32xf32>
  return
}

// -----

func.func @rope_scale_nan(%q: tensor<4x32x128xf16>, %kv0: tensor<?x2x16x8x128xf16>, %kvp: tensor<?xi32>, %kvi: tensor<?xi32>, %last: tensor<?xi32>, %o: tensor<4x32x128xf16>, %lse: tensor<4x32xf32>) {
  // expected-error@+1 {{rope_scale must be finite and > 0, got nan}}
  %r:2 = cascade.paged_attention q(%q : tensor<4x32x128xf16>) kv(%kv0 : tensor<?x2x16x8x128xf16>)
      kv_indptr(%kvp : tensor<?xi32>) kv_indices(%kvi : tensor<?xi32>) kv_last_page_len(%last : tensor<?xi32>)
      outs(%o, %lse : tensor<4x32x128xf16>, tensor<4x32xf32>) {page_size = 16 : i64, rope_scale = 0x7FC00000 : f32}
      -> tensor<4x32x128xf16>, tensor<4x32xf32>
  return
}

// -----

func.func @rope_theta_negative(%q: tensor<4x32x128xf16>, %kv0: tensor<?x2x16x8x128xf16>, %kvp: tensor<?xi32>, %kvi: tensor<?xi32>, %last: tensor<?xi32>, %o: tensor<4x32x128xf16>, %lse: tensor<4x32xf32>) {
  // expected-error@+1 {{rope_theta must be finite and > 0, got -1.000000e+04}}
  %r:2 = cascade.paged_attention q(%q : tensor<4x32x128xf16>) kv(%kv0 : tensor<?x2x16x8x128xf16>)
      kv_indptr(%kvp : tensor<?xi32>) kv_indices(%kvi : tensor<?xi32>) kv_last_page_len(%last : tensor<?xi32>)
      outs(%o, %lse : tensor<4x32x128xf16>, tensor<4x32xf32>) {page_size = 16 : i64, pos_encoding = #cascade.pos_encoding<rope_llama>, rope_theta = -10000.0 : f32}
      -> tensor<4x32x128xf16>, tensor<4x32xf32>
  return
}

// -----

func.func @rope_theta_inf(%q: tensor<4x32x128xf16>, %kv0: tensor<?x2x16x8x128xf16>, %kvp: tensor<?xi32>, %kvi: tensor<?xi32>, %last: tensor<?xi32>, %o: tensor<4x32x128xf16>, %lse: tensor<4x32xf32>) {
  // expected-error@+1 {{rope_theta must be finite and > 0, got INF}}
  %r:2 = cascade.paged_attention q(%q : tensor<4x32x128xf16>) kv(%kv0 : tensor<?x2x16x8x128xf16>)
      kv_indptr(%kvp : tensor<?xi32>) kv_indices(%kvi : tensor<?xi32>) kv_last_page_len(%last : tensor<?xi32>)
      outs(%o, %lse : tensor<4x32x128xf16>, tensor<4x32xf32>) {page_size = 16 : i64, rope_theta = 0x7F800000 : f32}
      -> tensor<4x32x128xf16>, tensor<4x32xf32>
  return
}

// -----

func.func @kv_indptr_rank(%q: tensor<4x32x128xf16>, %kv0: tensor<?x2x16x8x128xf16>, %kvp: tensor<5x1xi32>, %kvi: tensor<?xi32>, %last: tensor<?xi32>, %o: tensor<4x32x128xf16>, %lse: tensor<4x32xf32>) {
  // expected-error@+1 {{'kv_indptr' must be 1-D, got rank 2}}
  %r:2 = cascade.paged_attention q(%q : tensor<4x32x128xf16>) kv(%kv0 : tensor<?x2x16x8x128xf16>)
      kv_indptr(%kvp : tensor<5x1xi32>) kv_indices(%kvi : tensor<?xi32>) kv_last_page_len(%last : tensor<?xi32>)
      outs(%o, %lse : tensor<4x32x128xf16>, tensor<4x32xf32>) {page_size = 16 : i64}
      -> tensor<4x32x128xf16>, tensor<4x32xf32>
  return
}

// -----

func.func @kv_indices_i64(%q: tensor<4x32x128xf16>, %kv0: tensor<?x2x16x8x128xf16>, %kvp: tensor<?xi32>, %kvi: tensor<?xi64>, %last: tensor<?xi32>, %o: tensor<4x32x128xf16>, %lse: tensor<4x32xf32>) {
  // expected-error@+1 {{'kv_indices' element type must be i32, got 'i64'}}
  %r:2 = cascade.paged_attention q(%q : tensor<4x32x128xf16>) kv(%kv0 : tensor<?x2x16x8x128xf16>)
      kv_indptr(%kvp : tensor<?xi32>) kv_indices(%kvi : tensor<?xi64>) kv_last_page_len(%last : tensor<?xi32>)
      outs(%o, %lse : tensor<4x32x128xf16>, tensor<4x32xf32>) {page_size = 16 : i64}
      -> tensor<4x32x128xf16>, tensor<4x32xf32>
  return
}

// -----

func.func @kv_last_page_len_rank(%q: tensor<4x32x128xf16>, %kv0: tensor<?x2x16x8x128xf16>, %kvp: tensor<?xi32>, %kvi: tensor<?xi32>, %last: tensor<i32>, %o: tensor<4x32x128xf16>, %lse: tensor<4x32xf32>) {
  // expected-error@+1 {{'kv_last_page_len' must be 1-D, got rank 0}}
  %r:2 = cascade.paged_attention q(%q : tensor<4x32x128xf16>) kv(%kv0 : tensor<?x2x16x8x128xf16>)
      kv_indptr(%kvp : tensor<?xi32>) kv_indices(%kvi : tensor<?xi32>) kv_last_page_len(%last : tensor<i32>)
      outs(%o, %lse : tensor<4x32x128xf16>, tensor<4x32xf32>) {page_size = 16 : i64}
      -> tensor<4x32x128xf16>, tensor<4x32xf32>
  return
}

// -----

func.func @qo_indptr_i64(%q: tensor<4x32x128xf16>, %kv0: tensor<?x2x16x8x128xf16>, %qo: tensor<?xi64>, %kvp: tensor<?xi32>, %kvi: tensor<?xi32>, %last: tensor<?xi32>, %o: tensor<4x32x128xf16>, %lse: tensor<4x32xf32>) {
  // expected-error@+1 {{'qo_indptr' element type must be i32, got 'i64'}}
  %r:2 = cascade.paged_attention q(%q : tensor<4x32x128xf16>) kv(%kv0 : tensor<?x2x16x8x128xf16>)
      qo_indptr(%qo : tensor<?xi64>) kv_indptr(%kvp : tensor<?xi32>) kv_indices(%kvi : tensor<?xi32>) kv_last_page_len(%last : tensor<?xi32>)
      outs(%o, %lse : tensor<4x32x128xf16>, tensor<4x32xf32>) {page_size = 16 : i64}
      -> tensor<4x32x128xf16>, tensor<4x32xf32>
  return
}

// -----

func.func @qo_indptr_rank(%q: tensor<4x32x128xf16>, %kv0: tensor<?x2x16x8x128xf16>, %qo: tensor<2x3xi32>, %kvp: tensor<?xi32>, %kvi: tensor<?xi32>, %last: tensor<?xi32>, %o: tensor<4x32x128xf16>, %lse: tensor<4x32xf32>) {
  // expected-error@+1 {{'qo_indptr' must be 1-D, got rank 2}}
  %r:2 = cascade.paged_attention q(%q : tensor<4x32x128xf16>) kv(%kv0 : tensor<?x2x16x8x128xf16>)
      qo_indptr(%qo : tensor<2x3xi32>) kv_indptr(%kvp : tensor<?xi32>) kv_indices(%kvi : tensor<?xi32>) kv_last_page_len(%last : tensor<?xi32>)
      outs(%o, %lse : tensor<4x32x128xf16>, tensor<4x32xf32>) {page_size = 16 : i64}
      -> tensor<4x32x128xf16>, tensor<4x32xf32>
  return
}

// -----

func.func @kv_indptr_too_short(%q: tensor<4x32x128xf16>, %kv0: tensor<?x2x16x8x128xf16>, %kvp: tensor<1xi32>, %kvi: tensor<?xi32>, %last: tensor<?xi32>, %o: tensor<4x32x128xf16>, %lse: tensor<4x32xf32>) {
  // expected-error@+1 {{'kv_indptr' must have at least 2 entries ([B+1], B >= 1), got 1}}
  %r:2 = cascade.paged_attention q(%q : tensor<4x32x128xf16>) kv(%kv0 : tensor<?x2x16x8x128xf16>)
      kv_indptr(%kvp : tensor<1xi32>) kv_indices(%kvi : tensor<?xi32>) kv_last_page_len(%last : tensor<?xi32>)
      outs(%o, %lse : tensor<4x32x128xf16>, tensor<4x32xf32>) {page_size = 16 : i64}
      -> tensor<4x32x128xf16>, tensor<4x32xf32>
  return
}

// -----

func.func @qo_kv_indptr_mismatch(%q: tensor<4x32x128xf16>, %kv0: tensor<?x2x16x8x128xf16>, %qo: tensor<3xi32>, %kvp: tensor<4xi32>, %kvi: tensor<?xi32>, %last: tensor<?xi32>, %o: tensor<4x32x128xf16>, %lse: tensor<4x32xf32>) {
  // expected-error@+1 {{'qo_indptr' has 3 entries but 'kv_indptr' has 4; both are [B+1]}}
  %r:2 = cascade.paged_attention q(%q : tensor<4x32x128xf16>) kv(%kv0 : tensor<?x2x16x8x128xf16>)
      qo_indptr(%qo : tensor<3xi32>) kv_indptr(%kvp : tensor<4xi32>) kv_indices(%kvi : tensor<?xi32>) kv_last_page_len(%last : tensor<?xi32>)
      outs(%o, %lse : tensor<4x32x128xf16>, tensor<4x32xf32>) {page_size = 16 : i64}
      -> tensor<4x32x128xf16>, tensor<4x32xf32>
  return
}

// -----

func.func @last_page_len_mismatch(%q: tensor<4x32x128xf16>, %kv0: tensor<?x2x16x8x128xf16>, %qo: tensor<?xi32>, %kvp: tensor<4xi32>, %kvi: tensor<?xi32>, %last: tensor<2xi32>, %o: tensor<4x32x128xf16>, %lse: tensor<4x32xf32>) {
  // expected-error@+1 {{'kv_last_page_len' has 2 entries but 'kv_indptr' has 4; expected [B] and [B+1]}}
  %r:2 = cascade.paged_attention q(%q : tensor<4x32x128xf16>) kv(%kv0 : tensor<?x2x16x8x128xf16>)
      qo_indptr(%qo : tensor<?xi32>) kv_indptr(%kvp : tensor<4xi32>) kv_indices(%kvi : tensor<?xi32>) kv_last_page_len(%last : tensor<2xi32>)
      outs(%o, %lse : tensor<4x32x128xf16>, tensor<4x32xf32>) {page_size = 16 : i64}
      -> tensor<4x32x128xf16>, tensor<4x32xf32>
  return
}

// -----

func.func @decode_rows(%q: tensor<4x32x128xf16>, %kv0: tensor<?x2x16x8x128xf16>, %kvp: tensor<?xi32>, %kvi: tensor<?xi32>, %last: tensor<3xi32>, %o: tensor<4x32x128xf16>, %lse: tensor<4x32xf32>) {
  // expected-error@+1 {{decode (no 'qo_indptr') expects one query per request, but 'q' has 4 rows and 'kv_last_page_len' has 3 entries}}
  %r:2 = cascade.paged_attention q(%q : tensor<4x32x128xf16>) kv(%kv0 : tensor<?x2x16x8x128xf16>)
      kv_indptr(%kvp : tensor<?xi32>) kv_indices(%kvi : tensor<?xi32>) kv_last_page_len(%last : tensor<3xi32>)
      outs(%o, %lse : tensor<4x32x128xf16>, tensor<4x32xf32>) {page_size = 16 : i64}
      -> tensor<4x32x128xf16>, tensor<4x32xf32>
  return
}

// -----

func.func @plan_count(%q: memref<?x32x128xf16>, %kv0: memref<?x2x16x8x128xf16>, %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>, %p0: memref<?xi32>, %p1: memref<?xi32>, %p2: memref<?xi32>, %p3: memref<?xi8>, %p4: i32, %p5: memref<?x32x128xf32>, %o: memref<?x32x128xf16>, %lse: memref<?x32xf32>) {
  // expected-error@+1 {{expects 7 plan operands (request_indices, kv_tile_indices, o_indptr, block_valid_mask, kv_chunk_size, tmp_v, tmp_s), got 6}}
  cascade.paged_attention q(%q : memref<?x32x128xf16>) kv(%kv0 : memref<?x2x16x8x128xf16>)
      kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>) kv_last_page_len(%last : memref<?xi32>)
      plan(%p0, %p1, %p2, %p3, %p4, %p5 : memref<?xi32>, memref<?xi32>, memref<?xi32>, memref<?xi8>, i32, memref<?x32x128xf32>)
      outs(%o, %lse : memref<?x32x128xf16>, memref<?x32xf32>) {page_size = 16 : i64}
  return
}

// -----

func.func @plan_on_tensors(%q: tensor<?x32x128xf16>, %kv0: tensor<?x2x16x8x128xf16>, %kvp: tensor<?xi32>, %kvi: tensor<?xi32>, %last: tensor<?xi32>, %p0: memref<?xi32>, %p1: memref<?xi32>, %p2: memref<?xi32>, %p3: memref<?xi8>, %p4: i32, %p5: memref<?x32x128xf32>, %p6: memref<?x32xf32>, %o: tensor<?x32x128xf16>, %lse: tensor<?x32xf32>) {
  // expected-error@+1 {{plan operands are only allowed on memrefs (after bufferization)}}
  %r:2 = cascade.paged_attention q(%q : tensor<?x32x128xf16>) kv(%kv0 : tensor<?x2x16x8x128xf16>)
      kv_indptr(%kvp : tensor<?xi32>) kv_indices(%kvi : tensor<?xi32>) kv_last_page_len(%last : tensor<?xi32>)
      plan(%p0, %p1, %p2, %p3, %p4, %p5, %p6 : memref<?xi32>, memref<?xi32>, memref<?xi32>, memref<?xi8>, i32, memref<?x32x128xf32>, memref<?x32xf32>)
      outs(%o, %lse : tensor<?x32x128xf16>, tensor<?x32xf32>) {page_size = 16 : i64}
      -> tensor<?x32x128xf16>, tensor<?x32xf32>
  return
}

// -----

func.func @plan_request_indices(%q: memref<?x32x128xf16>, %kv0: memref<?x2x16x8x128xf16>, %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>, %p0: memref<?xi64>, %p1: memref<?xi32>, %p2: memref<?xi32>, %p3: memref<?xi8>, %p4: i32, %p5: memref<?x32x128xf32>, %p6: memref<?x32xf32>, %o: memref<?x32x128xf16>, %lse: memref<?x32xf32>) {
  // expected-error@+1 {{plan operand 'request_indices' must be a 1-D memref of i32, got 'memref<?xi64>'}}
  cascade.paged_attention q(%q : memref<?x32x128xf16>) kv(%kv0 : memref<?x2x16x8x128xf16>)
      kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>) kv_last_page_len(%last : memref<?xi32>)
      plan(%p0, %p1, %p2, %p3, %p4, %p5, %p6 : memref<?xi64>, memref<?xi32>, memref<?xi32>, memref<?xi8>, i32, memref<?x32x128xf32>, memref<?x32xf32>)
      outs(%o, %lse : memref<?x32x128xf16>, memref<?x32xf32>) {page_size = 16 : i64}
  return
}

// -----

func.func @plan_kv_tile_indices(%q: memref<?x32x128xf16>, %kv0: memref<?x2x16x8x128xf16>, %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>, %p0: memref<?xi32>, %p1: tensor<?xi32>, %p2: memref<?xi32>, %p3: memref<?xi8>, %p4: i32, %p5: memref<?x32x128xf32>, %p6: memref<?x32xf32>, %o: memref<?x32x128xf16>, %lse: memref<?x32xf32>) {
  // expected-error@+1 {{plan operand 'kv_tile_indices' must be a 1-D memref of i32, got 'tensor<?xi32>'}}
  cascade.paged_attention q(%q : memref<?x32x128xf16>) kv(%kv0 : memref<?x2x16x8x128xf16>)
      kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>) kv_last_page_len(%last : memref<?xi32>)
      plan(%p0, %p1, %p2, %p3, %p4, %p5, %p6 : memref<?xi32>, tensor<?xi32>, memref<?xi32>, memref<?xi8>, i32, memref<?x32x128xf32>, memref<?x32xf32>)
      outs(%o, %lse : memref<?x32x128xf16>, memref<?x32xf32>) {page_size = 16 : i64}
  return
}

// -----

func.func @plan_o_indptr(%q: memref<?x32x128xf16>, %kv0: memref<?x2x16x8x128xf16>, %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>, %p0: memref<?xi32>, %p1: memref<?xi32>, %p2: memref<?x2xi32>, %p3: memref<?xi8>, %p4: i32, %p5: memref<?x32x128xf32>, %p6: memref<?x32xf32>, %o: memref<?x32x128xf16>, %lse: memref<?x32xf32>) {
  // expected-error@+1 {{plan operand 'o_indptr' must be a 1-D memref of i32, got 'memref<?x2xi32>'}}
  cascade.paged_attention q(%q : memref<?x32x128xf16>) kv(%kv0 : memref<?x2x16x8x128xf16>)
      kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>) kv_last_page_len(%last : memref<?xi32>)
      plan(%p0, %p1, %p2, %p3, %p4, %p5, %p6 : memref<?xi32>, memref<?xi32>, memref<?x2xi32>, memref<?xi8>, i32, memref<?x32x128xf32>, memref<?x32xf32>)
      outs(%o, %lse : memref<?x32x128xf16>, memref<?x32xf32>) {page_size = 16 : i64}
  return
}

// -----

func.func @plan_block_valid_mask(%q: memref<?x32x128xf16>, %kv0: memref<?x2x16x8x128xf16>, %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>, %p0: memref<?xi32>, %p1: memref<?xi32>, %p2: memref<?xi32>, %p3: memref<?xi1>, %p4: i32, %p5: memref<?x32x128xf32>, %p6: memref<?x32xf32>, %o: memref<?x32x128xf16>, %lse: memref<?x32xf32>) {
  // expected-error@+1 {{plan operand 'block_valid_mask' must be a 1-D memref of i8, got 'memref<?xi1>'}}
  cascade.paged_attention q(%q : memref<?x32x128xf16>) kv(%kv0 : memref<?x2x16x8x128xf16>)
      kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>) kv_last_page_len(%last : memref<?xi32>)
      plan(%p0, %p1, %p2, %p3, %p4, %p5, %p6 : memref<?xi32>, memref<?xi32>, memref<?xi32>, memref<?xi1>, i32, memref<?x32x128xf32>, memref<?x32xf32>)
      outs(%o, %lse : memref<?x32x128xf16>, memref<?x32xf32>) {page_size = 16 : i64}
  return
}

// -----

func.func @plan_kv_chunk_size(%q: memref<?x32x128xf16>, %kv0: memref<?x2x16x8x128xf16>, %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>, %p0: memref<?xi32>, %p1: memref<?xi32>, %p2: memref<?xi32>, %p3: memref<?xi8>, %p4: index, %p5: memref<?x32x128xf32>, %p6: memref<?x32xf32>, %o: memref<?x32x128xf16>, %lse: memref<?x32xf32>) {
  // expected-error@+1 {{plan operand 'kv_chunk_size' must be i32, got 'index'}}
  cascade.paged_attention q(%q : memref<?x32x128xf16>) kv(%kv0 : memref<?x2x16x8x128xf16>)
      kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>) kv_last_page_len(%last : memref<?xi32>)
      plan(%p0, %p1, %p2, %p3, %p4, %p5, %p6 : memref<?xi32>, memref<?xi32>, memref<?xi32>, memref<?xi8>, index, memref<?x32x128xf32>, memref<?x32xf32>)
      outs(%o, %lse : memref<?x32x128xf16>, memref<?x32xf32>) {page_size = 16 : i64}
  return
}

// -----

func.func @plan_tmp_v_f16(%q: memref<?x32x128xf16>, %kv0: memref<?x2x16x8x128xf16>, %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>, %p0: memref<?xi32>, %p1: memref<?xi32>, %p2: memref<?xi32>, %p3: memref<?xi8>, %p4: i32, %p5: memref<?x32x128xf16>, %p6: memref<?x32xf32>, %o: memref<?x32x128xf16>, %lse: memref<?x32xf32>) {
  // expected-error@+1 {{plan operand 'tmp_v' must be an f32 memref [partial_rows, Hqo, D], got 'memref<?x32x128xf16>'}}
  cascade.paged_attention q(%q : memref<?x32x128xf16>) kv(%kv0 : memref<?x2x16x8x128xf16>)
      kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>) kv_last_page_len(%last : memref<?xi32>)
      plan(%p0, %p1, %p2, %p3, %p4, %p5, %p6 : memref<?xi32>, memref<?xi32>, memref<?xi32>, memref<?xi8>, i32, memref<?x32x128xf16>, memref<?x32xf32>)
      outs(%o, %lse : memref<?x32x128xf16>, memref<?x32xf32>) {page_size = 16 : i64}
  return
}

// -----

func.func @plan_tmp_v_heads(%q: memref<?x32x128xf16>, %kv0: memref<?x2x16x8x128xf16>, %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>, %p0: memref<?xi32>, %p1: memref<?xi32>, %p2: memref<?xi32>, %p3: memref<?xi8>, %p4: i32, %p5: memref<?x8x128xf32>, %p6: memref<?x32xf32>, %o: memref<?x32x128xf16>, %lse: memref<?x32xf32>) {
  // expected-error@+1 {{plan operand 'tmp_v' must be an f32 memref [partial_rows, Hqo, D], got 'memref<?x8x128xf32>'}}
  cascade.paged_attention q(%q : memref<?x32x128xf16>) kv(%kv0 : memref<?x2x16x8x128xf16>)
      kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>) kv_last_page_len(%last : memref<?xi32>)
      plan(%p0, %p1, %p2, %p3, %p4, %p5, %p6 : memref<?xi32>, memref<?xi32>, memref<?xi32>, memref<?xi8>, i32, memref<?x8x128xf32>, memref<?x32xf32>)
      outs(%o, %lse : memref<?x32x128xf16>, memref<?x32xf32>) {page_size = 16 : i64}
  return
}

// -----

func.func @plan_tmp_s_rank(%q: memref<?x32x128xf16>, %kv0: memref<?x2x16x8x128xf16>, %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>, %p0: memref<?xi32>, %p1: memref<?xi32>, %p2: memref<?xi32>, %p3: memref<?xi8>, %p4: i32, %p5: memref<?x32x128xf32>, %p6: memref<?xf32>, %o: memref<?x32x128xf16>, %lse: memref<?x32xf32>) {
  // expected-error@+1 {{plan operand 'tmp_s' must be an f32 memref [partial_rows, Hqo], got 'memref<?xf32>'}}
  cascade.paged_attention q(%q : memref<?x32x128xf16>) kv(%kv0 : memref<?x2x16x8x128xf16>)
      kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>) kv_last_page_len(%last : memref<?xi32>)
      plan(%p0, %p1, %p2, %p3, %p4, %p5, %p6 : memref<?xi32>, memref<?xi32>, memref<?xi32>, memref<?xi8>, i32, memref<?x32x128xf32>, memref<?xf32>)
      outs(%o, %lse : memref<?x32x128xf16>, memref<?x32xf32>) {page_size = 16 : i64}
  return
}

// -----

func.func @plan_tmp_s_rows(%q: memref<?x32x128xf16>, %kv0: memref<?x2x16x8x128xf16>, %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>, %p0: memref<?xi32>, %p1: memref<?xi32>, %p2: memref<?xi32>, %p3: memref<?xi8>, %p4: i32, %p5: memref<10x32x128xf32>, %p6: memref<12x32xf32>, %o: memref<?x32x128xf16>, %lse: memref<?x32xf32>) {
  // expected-error@+1 {{plan operand 'tmp_s' must be an f32 memref [partial_rows, Hqo], got 'memref<12x32xf32>'}}
  cascade.paged_attention q(%q : memref<?x32x128xf16>) kv(%kv0 : memref<?x2x16x8x128xf16>)
      kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>) kv_last_page_len(%last : memref<?xi32>)
      plan(%p0, %p1, %p2, %p3, %p4, %p5, %p6 : memref<?xi32>, memref<?xi32>, memref<?xi32>, memref<?xi8>, i32, memref<10x32x128xf32>, memref<12x32xf32>)
      outs(%o, %lse : memref<?x32x128xf16>, memref<?x32xf32>) {page_size = 16 : i64}
  return
}
