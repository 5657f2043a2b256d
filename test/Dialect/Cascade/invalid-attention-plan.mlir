// RUN: cascade-opt %s -split-input-file -verify-diagnostics

// cascade.paged_attention: the split-KV plan operands.

func.func @plan_count(%q: memref<?x32x128xf16>, %kv0: memref<?x2x16x8x128xf16>, %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>, %p0: memref<?xi32>, %p1: memref<?xi32>, %p2: memref<?xi32>, %p3: memref<?xi8>, %p4: memref<1xi32>, %p5: memref<?x32x128xf32>, %o: memref<?x32x128xf16>, %lse: memref<?x32xf32>) {
  // expected-error@+1 {{expects 7 plan operands for a decode (request_indices, kv_tile_indices, o_indptr, block_valid_mask, kv_chunk_size, tmp_v, tmp_s), got 6}}
  cascade.paged_attention q(%q : memref<?x32x128xf16>) kv(%kv0 : memref<?x2x16x8x128xf16>)
      kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>) kv_last_page_len(%last : memref<?xi32>)
      plan(%p0, %p1, %p2, %p3, %p4, %p5 : memref<?xi32>, memref<?xi32>, memref<?xi32>, memref<?xi8>, memref<1xi32>, memref<?x32x128xf32>)
      outs(%o, %lse : memref<?x32x128xf16>, memref<?x32xf32>) {page_size = 16 : i64}
  return
}

// -----

func.func @plan_on_tensors(%q: tensor<?x32x128xf16>, %kv0: tensor<?x2x16x8x128xf16>, %kvp: tensor<?xi32>, %kvi: tensor<?xi32>, %last: tensor<?xi32>, %p0: memref<?xi32>, %p1: memref<?xi32>, %p2: memref<?xi32>, %p3: memref<?xi8>, %p4: memref<1xi32>, %p5: memref<?x32x128xf32>, %p6: memref<?x32xf32>, %o: tensor<?x32x128xf16>, %lse: tensor<?x32xf32>) {
  // expected-error@+1 {{plan operands are only allowed on memrefs (after bufferization)}}
  %r:2 = cascade.paged_attention q(%q : tensor<?x32x128xf16>) kv(%kv0 : tensor<?x2x16x8x128xf16>)
      kv_indptr(%kvp : tensor<?xi32>) kv_indices(%kvi : tensor<?xi32>) kv_last_page_len(%last : tensor<?xi32>)
      plan(%p0, %p1, %p2, %p3, %p4, %p5, %p6 : memref<?xi32>, memref<?xi32>, memref<?xi32>, memref<?xi8>, memref<1xi32>, memref<?x32x128xf32>, memref<?x32xf32>)
      outs(%o, %lse : tensor<?x32x128xf16>, tensor<?x32xf32>) {page_size = 16 : i64}
      -> tensor<?x32x128xf16>, tensor<?x32xf32>
  return
}

// -----

func.func @plan_request_indices(%q: memref<?x32x128xf16>, %kv0: memref<?x2x16x8x128xf16>, %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>, %p0: memref<?xi64>, %p1: memref<?xi32>, %p2: memref<?xi32>, %p3: memref<?xi8>, %p4: memref<1xi32>, %p5: memref<?x32x128xf32>, %p6: memref<?x32xf32>, %o: memref<?x32x128xf16>, %lse: memref<?x32xf32>) {
  // expected-error@+1 {{plan operand 'request_indices' must be a 1-D memref of i32, got 'memref<?xi64>'}}
  cascade.paged_attention q(%q : memref<?x32x128xf16>) kv(%kv0 : memref<?x2x16x8x128xf16>)
      kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>) kv_last_page_len(%last : memref<?xi32>)
      plan(%p0, %p1, %p2, %p3, %p4, %p5, %p6 : memref<?xi64>, memref<?xi32>, memref<?xi32>, memref<?xi8>, memref<1xi32>, memref<?x32x128xf32>, memref<?x32xf32>)
      outs(%o, %lse : memref<?x32x128xf16>, memref<?x32xf32>) {page_size = 16 : i64}
  return
}

// -----

func.func @plan_kv_tile_indices(%q: memref<?x32x128xf16>, %kv0: memref<?x2x16x8x128xf16>, %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>, %p0: memref<?xi32>, %p1: tensor<?xi32>, %p2: memref<?xi32>, %p3: memref<?xi8>, %p4: memref<1xi32>, %p5: memref<?x32x128xf32>, %p6: memref<?x32xf32>, %o: memref<?x32x128xf16>, %lse: memref<?x32xf32>) {
  // expected-error@+1 {{plan operand 'kv_tile_indices' must be a 1-D memref of i32, got 'tensor<?xi32>'}}
  cascade.paged_attention q(%q : memref<?x32x128xf16>) kv(%kv0 : memref<?x2x16x8x128xf16>)
      kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>) kv_last_page_len(%last : memref<?xi32>)
      plan(%p0, %p1, %p2, %p3, %p4, %p5, %p6 : memref<?xi32>, tensor<?xi32>, memref<?xi32>, memref<?xi8>, memref<1xi32>, memref<?x32x128xf32>, memref<?x32xf32>)
      outs(%o, %lse : memref<?x32x128xf16>, memref<?x32xf32>) {page_size = 16 : i64}
  return
}

// -----

func.func @plan_o_indptr(%q: memref<?x32x128xf16>, %kv0: memref<?x2x16x8x128xf16>, %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>, %p0: memref<?xi32>, %p1: memref<?xi32>, %p2: memref<?x2xi32>, %p3: memref<?xi8>, %p4: memref<1xi32>, %p5: memref<?x32x128xf32>, %p6: memref<?x32xf32>, %o: memref<?x32x128xf16>, %lse: memref<?x32xf32>) {
  // expected-error@+1 {{plan operand 'o_indptr' must be a 1-D memref of i32, got 'memref<?x2xi32>'}}
  cascade.paged_attention q(%q : memref<?x32x128xf16>) kv(%kv0 : memref<?x2x16x8x128xf16>)
      kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>) kv_last_page_len(%last : memref<?xi32>)
      plan(%p0, %p1, %p2, %p3, %p4, %p5, %p6 : memref<?xi32>, memref<?xi32>, memref<?x2xi32>, memref<?xi8>, memref<1xi32>, memref<?x32x128xf32>, memref<?x32xf32>)
      outs(%o, %lse : memref<?x32x128xf16>, memref<?x32xf32>) {page_size = 16 : i64}
  return
}

// -----

func.func @plan_block_valid_mask(%q: memref<?x32x128xf16>, %kv0: memref<?x2x16x8x128xf16>, %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>, %p0: memref<?xi32>, %p1: memref<?xi32>, %p2: memref<?xi32>, %p3: memref<?xi1>, %p4: memref<1xi32>, %p5: memref<?x32x128xf32>, %p6: memref<?x32xf32>, %o: memref<?x32x128xf16>, %lse: memref<?x32xf32>) {
  // expected-error@+1 {{plan operand 'block_valid_mask' must be a 1-D memref of i8, got 'memref<?xi1>'}}
  cascade.paged_attention q(%q : memref<?x32x128xf16>) kv(%kv0 : memref<?x2x16x8x128xf16>)
      kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>) kv_last_page_len(%last : memref<?xi32>)
      plan(%p0, %p1, %p2, %p3, %p4, %p5, %p6 : memref<?xi32>, memref<?xi32>, memref<?xi32>, memref<?xi1>, memref<1xi32>, memref<?x32x128xf32>, memref<?x32xf32>)
      outs(%o, %lse : memref<?x32x128xf16>, memref<?x32xf32>) {page_size = 16 : i64}
  return
}

// -----

func.func @plan_kv_chunk_size(%q: memref<?x32x128xf16>, %kv0: memref<?x2x16x8x128xf16>, %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>, %p0: memref<?xi32>, %p1: memref<?xi32>, %p2: memref<?xi32>, %p3: memref<?xi8>, %p4: index, %p5: memref<?x32x128xf32>, %p6: memref<?x32xf32>, %o: memref<?x32x128xf16>, %lse: memref<?x32xf32>) {
  // expected-error@+1 {{plan operand 'kv_chunk_size' must be a one-element memref of i32 (memref<1xi32>), got 'index'}}
  cascade.paged_attention q(%q : memref<?x32x128xf16>) kv(%kv0 : memref<?x2x16x8x128xf16>)
      kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>) kv_last_page_len(%last : memref<?xi32>)
      plan(%p0, %p1, %p2, %p3, %p4, %p5, %p6 : memref<?xi32>, memref<?xi32>, memref<?xi32>, memref<?xi8>, index, memref<?x32x128xf32>, memref<?x32xf32>)
      outs(%o, %lse : memref<?x32x128xf16>, memref<?x32xf32>) {page_size = 16 : i64}
  return
}

// -----

func.func @plan_tmp_v_f16(%q: memref<?x32x128xf16>, %kv0: memref<?x2x16x8x128xf16>, %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>, %p0: memref<?xi32>, %p1: memref<?xi32>, %p2: memref<?xi32>, %p3: memref<?xi8>, %p4: memref<1xi32>, %p5: memref<?x32x128xf16>, %p6: memref<?x32xf32>, %o: memref<?x32x128xf16>, %lse: memref<?x32xf32>) {
  // expected-error@+1 {{plan operand 'tmp_v' must be an f32 memref [partial_rows, Hqo, D] (D: the output's head_dim), got 'memref<?x32x128xf16>'}}
  cascade.paged_attention q(%q : memref<?x32x128xf16>) kv(%kv0 : memref<?x2x16x8x128xf16>)
      kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>) kv_last_page_len(%last : memref<?xi32>)
      plan(%p0, %p1, %p2, %p3, %p4, %p5, %p6 : memref<?xi32>, memref<?xi32>, memref<?xi32>, memref<?xi8>, memref<1xi32>, memref<?x32x128xf16>, memref<?x32xf32>)
      outs(%o, %lse : memref<?x32x128xf16>, memref<?x32xf32>) {page_size = 16 : i64}
  return
}

// -----

func.func @plan_tmp_v_heads(%q: memref<?x32x128xf16>, %kv0: memref<?x2x16x8x128xf16>, %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>, %p0: memref<?xi32>, %p1: memref<?xi32>, %p2: memref<?xi32>, %p3: memref<?xi8>, %p4: memref<1xi32>, %p5: memref<?x8x128xf32>, %p6: memref<?x32xf32>, %o: memref<?x32x128xf16>, %lse: memref<?x32xf32>) {
  // expected-error@+1 {{plan operand 'tmp_v' must be an f32 memref [partial_rows, Hqo, D] (D: the output's head_dim), got 'memref<?x8x128xf32>'}}
  cascade.paged_attention q(%q : memref<?x32x128xf16>) kv(%kv0 : memref<?x2x16x8x128xf16>)
      kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>) kv_last_page_len(%last : memref<?xi32>)
      plan(%p0, %p1, %p2, %p3, %p4, %p5, %p6 : memref<?xi32>, memref<?xi32>, memref<?xi32>, memref<?xi8>, memref<1xi32>, memref<?x8x128xf32>, memref<?x32xf32>)
      outs(%o, %lse : memref<?x32x128xf16>, memref<?x32xf32>) {page_size = 16 : i64}
  return
}

// -----

func.func @plan_tmp_s_rank(%q: memref<?x32x128xf16>, %kv0: memref<?x2x16x8x128xf16>, %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>, %p0: memref<?xi32>, %p1: memref<?xi32>, %p2: memref<?xi32>, %p3: memref<?xi8>, %p4: memref<1xi32>, %p5: memref<?x32x128xf32>, %p6: memref<?xf32>, %o: memref<?x32x128xf16>, %lse: memref<?x32xf32>) {
  // expected-error@+1 {{plan operand 'tmp_s' must be an f32 memref [partial_rows, Hqo], got 'memref<?xf32>'}}
  cascade.paged_attention q(%q : memref<?x32x128xf16>) kv(%kv0 : memref<?x2x16x8x128xf16>)
      kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>) kv_last_page_len(%last : memref<?xi32>)
      plan(%p0, %p1, %p2, %p3, %p4, %p5, %p6 : memref<?xi32>, memref<?xi32>, memref<?xi32>, memref<?xi8>, memref<1xi32>, memref<?x32x128xf32>, memref<?xf32>)
      outs(%o, %lse : memref<?x32x128xf16>, memref<?x32xf32>) {page_size = 16 : i64}
  return
}

// -----

func.func @plan_tmp_s_rows(%q: memref<?x32x128xf16>, %kv0: memref<?x2x16x8x128xf16>, %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>, %p0: memref<?xi32>, %p1: memref<?xi32>, %p2: memref<?xi32>, %p3: memref<?xi8>, %p4: memref<1xi32>, %p5: memref<10x32x128xf32>, %p6: memref<12x32xf32>, %o: memref<?x32x128xf16>, %lse: memref<?x32xf32>) {
  // expected-error@+1 {{plan operand 'tmp_s' must be an f32 memref [partial_rows, Hqo], got 'memref<12x32xf32>'}}
  cascade.paged_attention q(%q : memref<?x32x128xf16>) kv(%kv0 : memref<?x2x16x8x128xf16>)
      kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>) kv_last_page_len(%last : memref<?xi32>)
      plan(%p0, %p1, %p2, %p3, %p4, %p5, %p6 : memref<?xi32>, memref<?xi32>, memref<?xi32>, memref<?xi8>, memref<1xi32>, memref<10x32x128xf32>, memref<12x32xf32>)
      outs(%o, %lse : memref<?x32x128xf16>, memref<?x32xf32>) {page_size = 16 : i64}
  return
}

// -----

func.func @plan_kv_chunk_size_scalar(%q: memref<?x32x128xf16>, %kv0: memref<?x2x16x8x128xf16>, %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>, %p0: memref<?xi32>, %p1: memref<?xi32>, %p2: memref<?xi32>, %p3: memref<?xi8>, %p4: i32, %p5: memref<?x32x128xf32>, %p6: memref<?x32xf32>, %o: memref<?x32x128xf16>, %lse: memref<?x32xf32>) {
  // A host scalar would be frozen into a captured CUDA graph.
  // expected-error@+1 {{plan operand 'kv_chunk_size' must be a one-element memref of i32 (memref<1xi32>), got 'i32'}}
  cascade.paged_attention q(%q : memref<?x32x128xf16>) kv(%kv0 : memref<?x2x16x8x128xf16>)
      kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>) kv_last_page_len(%last : memref<?xi32>)
      plan(%p0, %p1, %p2, %p3, %p4, %p5, %p6 : memref<?xi32>, memref<?xi32>, memref<?xi32>, memref<?xi8>, i32, memref<?x32x128xf32>, memref<?x32xf32>)
      outs(%o, %lse : memref<?x32x128xf16>, memref<?x32xf32>) {page_size = 16 : i64}
  return
}

// -----

func.func @plan_kv_chunk_size_two_elements(%q: memref<?x32x128xf16>, %kv0: memref<?x2x16x8x128xf16>, %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>, %p0: memref<?xi32>, %p1: memref<?xi32>, %p2: memref<?xi32>, %p3: memref<?xi8>, %p4: memref<2xi32>, %p5: memref<?x32x128xf32>, %p6: memref<?x32xf32>, %o: memref<?x32x128xf16>, %lse: memref<?x32xf32>) {
  // expected-error@+1 {{plan operand 'kv_chunk_size' must be a one-element memref of i32 (memref<1xi32>), got 'memref<2xi32>'}}
  cascade.paged_attention q(%q : memref<?x32x128xf16>) kv(%kv0 : memref<?x2x16x8x128xf16>)
      kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>) kv_last_page_len(%last : memref<?xi32>)
      plan(%p0, %p1, %p2, %p3, %p4, %p5, %p6 : memref<?xi32>, memref<?xi32>, memref<?xi32>, memref<?xi8>, memref<2xi32>, memref<?x32x128xf32>, memref<?x32xf32>)
      outs(%o, %lse : memref<?x32x128xf16>, memref<?x32xf32>) {page_size = 16 : i64}
  return
}

// -----

func.func @prefill_plan_count(%q: memref<?x32x128xf16>, %kv0: memref<?x2x16x8x128xf16>, %qo: memref<?xi32>, %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>, %p0: memref<?xi32>, %p1: memref<?xi32>, %p2: memref<?xi32>, %p3: memref<?xi8>, %p4: memref<1xi32>, %p5: memref<?x32x128xf32>, %p6: memref<?x32xf32>, %o: memref<?x32x128xf16>, %lse: memref<?x32xf32>) {
  // expected-error@+1 {{expects 9 plan operands for a prefill (request_indices, kv_tile_indices, o_indptr, block_valid_mask, kv_chunk_size, tmp_v, tmp_s, qo_tile_indices, merge_indptr), got 7}}
  cascade.paged_attention q(%q : memref<?x32x128xf16>) kv(%kv0 : memref<?x2x16x8x128xf16>)
      qo_indptr(%qo : memref<?xi32>) kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>) kv_last_page_len(%last : memref<?xi32>)
      plan(%p0, %p1, %p2, %p3, %p4, %p5, %p6 : memref<?xi32>, memref<?xi32>, memref<?xi32>, memref<?xi8>, memref<1xi32>, memref<?x32x128xf32>, memref<?x32xf32>)
      outs(%o, %lse : memref<?x32x128xf16>, memref<?x32xf32>) {page_size = 16 : i64}
  return
}

// -----

func.func @prefill_plan_merge_indptr(%q: memref<?x32x128xf16>, %kv0: memref<?x2x16x8x128xf16>, %qo: memref<?xi32>, %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>, %p0: memref<?xi32>, %p1: memref<?xi32>, %p2: memref<?xi32>, %p3: memref<?xi8>, %p4: memref<1xi32>, %p5: memref<?x32x128xf32>, %p6: memref<?x32xf32>, %p7: memref<?xi32>, %p8: memref<?xi64>, %o: memref<?x32x128xf16>, %lse: memref<?x32xf32>) {
  // expected-error@+1 {{plan operand 'merge_indptr' must be a 1-D memref of i32, got 'memref<?xi64>'}}
  cascade.paged_attention q(%q : memref<?x32x128xf16>) kv(%kv0 : memref<?x2x16x8x128xf16>)
      qo_indptr(%qo : memref<?xi32>) kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>) kv_last_page_len(%last : memref<?xi32>)
      plan(%p0, %p1, %p2, %p3, %p4, %p5, %p6, %p7, %p8 : memref<?xi32>, memref<?xi32>, memref<?xi32>, memref<?xi8>, memref<1xi32>, memref<?x32x128xf32>, memref<?x32xf32>, memref<?xi32>, memref<?xi64>)
      outs(%o, %lse : memref<?x32x128xf16>, memref<?x32xf32>) {page_size = 16 : i64}
  return
}
