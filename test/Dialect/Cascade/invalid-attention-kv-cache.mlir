// RUN: cascade-opt %s -split-input-file -verify-diagnostics

// cascade.paged_attention: the page pool (single 5-D pool or (k, v) pair, NHD/HND), its element type, page size and head_dim.

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
      <{operandSegmentSizes = array<i32: 1, 0, 0, 0, 1, 1, 1, 0, 0, 0, 0, 0, 0, 1, 1>, page_size = 16 : i64}>
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
  // expected-error@+1 {{'v' shape [?, 16, 4, 128] does not match 'k' shape [?, 16, 8, 128] (only the head_dim may differ)}}
  %r:2 = cascade.paged_attention q(%q : tensor<4x32x128xf16>) kv(%kv0, %kv1 : tensor<?x16x8x128xf16>, tensor<?x16x4x128xf16>)
      kv_indptr(%kvp : tensor<?xi32>) kv_indices(%kvi : tensor<?xi32>) kv_last_page_len(%last : tensor<?xi32>)
      outs(%o, %lse : tensor<4x32x128xf16>, tensor<4x32xf32>) {page_size = 16 : i64}
      -> tensor<4x32x128xf16>, tensor<4x32xf32>
  return
}

// -----

func.func @pool_f32(%q: tensor<4x32x128xf16>, %kv0: tensor<?x2x16x8x128xf32>, %kvp: tensor<?xi32>, %kvi: tensor<?xi32>, %last: tensor<?xi32>, %o: tensor<4x32x128xf16>, %lse: tensor<4x32xf32>) {
  // expected-error@+1 {{KV cache element type must be f16, bf16, f8E4M3FN or f8E5M2, got 'f32'}}
  %r:2 = cascade.paged_attention q(%q : tensor<4x32x128xf16>) kv(%kv0 : tensor<?x2x16x8x128xf32>)
      kv_indptr(%kvp : tensor<?xi32>) kv_indices(%kvi : tensor<?xi32>) kv_last_page_len(%last : tensor<?xi32>)
      outs(%o, %lse : tensor<4x32x128xf16>, tensor<4x32xf32>) {page_size = 16 : i64}
      -> tensor<4x32x128xf16>, tensor<4x32xf32>
  return
}

// -----

func.func @pair_f32(%q: tensor<4x32x128xf16>, %kv0: tensor<?x16x8x128xf32>, %kv1: tensor<?x16x8x128xf32>, %kvp: tensor<?xi32>, %kvi: tensor<?xi32>, %last: tensor<?xi32>, %o: tensor<4x32x128xf16>, %lse: tensor<4x32xf32>) {
  // expected-error@+1 {{KV cache element type must be f16, bf16, f8E4M3FN or f8E5M2, got 'f32'}}
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

// v's head_dim may differ from k's (head_dim_vo), but must be a multiple of 8.
func.func @pair_v_head_dim_not_multiple_of_8(%q: tensor<4x32x128xf16>, %kv0: tensor<?x16x8x128xf16>, %kv1: tensor<?x16x8x60xf16>, %kvp: tensor<?xi32>, %kvi: tensor<?xi32>, %last: tensor<?xi32>, %o: tensor<4x32x60xf16>, %lse: tensor<4x32xf32>) {
  // expected-error@+1 {{head_dim of 'v' must be a positive multiple of 8 and at most 256, got 60}}
  %r:2 = cascade.paged_attention q(%q : tensor<4x32x128xf16>) kv(%kv0, %kv1 : tensor<?x16x8x128xf16>, tensor<?x16x8x60xf16>)
      qo_indptr(%kvp : tensor<?xi32>) kv_indptr(%kvp : tensor<?xi32>) kv_indices(%kvi : tensor<?xi32>) kv_last_page_len(%last : tensor<?xi32>)
      outs(%o, %lse : tensor<4x32x60xf16>, tensor<4x32xf32>) {page_size = 16 : i64}
      -> tensor<4x32x60xf16>, tensor<4x32xf32>
  return
}

// -----

// With a narrower v the output has v's head_dim, not q's.
func.func @pair_v_narrower_o_of_q(%q: tensor<4x32x192xf16>, %kv0: tensor<?x16x8x192xf16>, %kv1: tensor<?x16x8x128xf16>, %kvp: tensor<?xi32>, %kvi: tensor<?xi32>, %last: tensor<?xi32>, %o: tensor<4x32x192xf16>, %lse: tensor<4x32xf32>) {
  // expected-error@+1 {{'o' must be [4, 32, 128] 'f16' (q's rows, heads and element type, v's head_dim), got [4, 32, 192] 'f16'}}
  %r:2 = cascade.paged_attention q(%q : tensor<4x32x192xf16>) kv(%kv0, %kv1 : tensor<?x16x8x192xf16>, tensor<?x16x8x128xf16>)
      qo_indptr(%kvp : tensor<?xi32>) kv_indptr(%kvp : tensor<?xi32>) kv_indices(%kvi : tensor<?xi32>) kv_last_page_len(%last : tensor<?xi32>)
      outs(%o, %lse : tensor<4x32x192xf16>, tensor<4x32xf32>) {page_size = 16 : i64}
      -> tensor<4x32x192xf16>, tensor<4x32xf32>
  return
}
