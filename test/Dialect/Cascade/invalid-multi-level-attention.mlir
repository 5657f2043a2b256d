// RUN: cascade-opt %s -split-input-file -verify-diagnostics

// cascade.multi_level_attention: shared attention checks and the destination-passing form.

func.func @gqa_not_multiple(%q: tensor<?x32x128xf16>, %kv0: tensor<?x2x16x5x128xf16>, %qo0: tensor<2xi32>, %qo1: tensor<?xi32>, %kp0: tensor<2xi32>, %kp1: tensor<?xi32>, %ki0: tensor<?xi32>, %ki1: tensor<?xi32>, %kl0: tensor<1xi32>, %kl1: tensor<?xi32>, %o: tensor<?x32x128xf16>, %lse: tensor<?x32xf32>) {
  // expected-error@+1 {{number of query heads (32) must be a multiple of the number of KV heads (5)}}
  %r:2 = cascade.multi_level_attention q(%q : tensor<?x32x128xf16>) kv(%kv0 : tensor<?x2x16x5x128xf16>)
      qo_indptr(%qo0, %qo1 : tensor<2xi32>, tensor<?xi32>) kv_indptr(%kp0, %kp1 : tensor<2xi32>, tensor<?xi32>)
      kv_indices(%ki0, %ki1 : tensor<?xi32>, tensor<?xi32>) kv_last_page_len(%kl0, %kl1 : tensor<1xi32>, tensor<?xi32>)
      outs(%o, %lse : tensor<?x32x128xf16>, tensor<?x32xf32>) {page_size = 16 : i64}
      -> tensor<?x32x128xf16>, tensor<?x32xf32>
  return
}

// -----

func.func @page_size_mismatch(%q: tensor<?x32x128xf16>, %kv0: tensor<?x2x16x8x128xf16>, %qo0: tensor<2xi32>, %qo1: tensor<?xi32>, %kp0: tensor<2xi32>, %kp1: tensor<?xi32>, %ki0: tensor<?xi32>, %ki1: tensor<?xi32>, %kl0: tensor<1xi32>, %kl1: tensor<?xi32>, %o: tensor<?x32x128xf16>, %lse: tensor<?x32xf32>) {
  // expected-error@+1 {{page dimension of the KV cache is 16 but page_size = 32}}
  %r:2 = cascade.multi_level_attention q(%q : tensor<?x32x128xf16>) kv(%kv0 : tensor<?x2x16x8x128xf16>)
      qo_indptr(%qo0, %qo1 : tensor<2xi32>, tensor<?xi32>) kv_indptr(%kp0, %kp1 : tensor<2xi32>, tensor<?xi32>)
      kv_indices(%ki0, %ki1 : tensor<?xi32>, tensor<?xi32>) kv_last_page_len(%kl0, %kl1 : tensor<1xi32>, tensor<?xi32>)
      outs(%o, %lse : tensor<?x32x128xf16>, tensor<?x32xf32>) {page_size = 32 : i64}
      -> tensor<?x32x128xf16>, tensor<?x32xf32>
  return
}

// -----

func.func @hnd_pair_rank(%q: tensor<?x32x128xf16>, %kv0: tensor<?x2x8x16x128xf16>, %kv1: tensor<?x2x8x16x128xf16>, %qo0: tensor<2xi32>, %qo1: tensor<?xi32>, %kp0: tensor<2xi32>, %kp1: tensor<?xi32>, %ki0: tensor<?xi32>, %ki1: tensor<?xi32>, %kl0: tensor<1xi32>, %kl1: tensor<?xi32>, %o: tensor<?x32x128xf16>, %lse: tensor<?x32xf32>) {
  // expected-error@+1 {{a (k, v) page pool must have rank 4 ([P, Hkv, page_size, D]), got rank 5}}
  %r:2 = cascade.multi_level_attention q(%q : tensor<?x32x128xf16>) kv(%kv0, %kv1 : tensor<?x2x8x16x128xf16>, tensor<?x2x8x16x128xf16>)
      qo_indptr(%qo0, %qo1 : tensor<2xi32>, tensor<?xi32>) kv_indptr(%kp0, %kp1 : tensor<2xi32>, tensor<?xi32>)
      kv_indices(%ki0, %ki1 : tensor<?xi32>, tensor<?xi32>) kv_last_page_len(%kl0, %kl1 : tensor<1xi32>, tensor<?xi32>)
      outs(%o, %lse : tensor<?x32x128xf16>, tensor<?x32xf32>) {page_size = 16 : i64, kv_layout = #cascade.kv_layout<hnd>}
      -> tensor<?x32x128xf16>, tensor<?x32xf32>
  return
}

// -----

func.func @window_left(%q: tensor<?x32x128xf16>, %kv0: tensor<?x2x16x8x128xf16>, %qo0: tensor<2xi32>, %qo1: tensor<?xi32>, %kp0: tensor<2xi32>, %kp1: tensor<?xi32>, %ki0: tensor<?xi32>, %ki1: tensor<?xi32>, %kl0: tensor<1xi32>, %kl1: tensor<?xi32>, %o: tensor<?x32x128xf16>, %lse: tensor<?x32xf32>) {
  // expected-error@+1 {{window_left must be >= -1 (-1 = off), got -5}}
  %r:2 = cascade.multi_level_attention q(%q : tensor<?x32x128xf16>) kv(%kv0 : tensor<?x2x16x8x128xf16>)
      qo_indptr(%qo0, %qo1 : tensor<2xi32>, tensor<?xi32>) kv_indptr(%kp0, %kp1 : tensor<2xi32>, tensor<?xi32>)
      kv_indices(%ki0, %ki1 : tensor<?xi32>, tensor<?xi32>) kv_last_page_len(%kl0, %kl1 : tensor<1xi32>, tensor<?xi32>)
      outs(%o, %lse : tensor<?x32x128xf16>, tensor<?x32xf32>) {page_size = 16 : i64, window_left = -5 : i64}
      -> tensor<?x32x128xf16>, tensor<?x32xf32>
  return
}

// -----

func.func @lse_heads(%q: tensor<?x32x128xf16>, %kv0: tensor<?x2x16x8x128xf16>, %qo0: tensor<2xi32>, %qo1: tensor<?xi32>, %kp0: tensor<2xi32>, %kp1: tensor<?xi32>, %ki0: tensor<?xi32>, %ki1: tensor<?xi32>, %kl0: tensor<1xi32>, %kl1: tensor<?xi32>, %o: tensor<?x32x128xf16>, %lse: tensor<?x8xf32>) {
  // expected-error@+1 {{'lse' must be f32 [rows, Hqo]}}
  %r:2 = cascade.multi_level_attention q(%q : tensor<?x32x128xf16>) kv(%kv0 : tensor<?x2x16x8x128xf16>)
      qo_indptr(%qo0, %qo1 : tensor<2xi32>, tensor<?xi32>) kv_indptr(%kp0, %kp1 : tensor<2xi32>, tensor<?xi32>)
      kv_indices(%ki0, %ki1 : tensor<?xi32>, tensor<?xi32>) kv_last_page_len(%kl0, %kl1 : tensor<1xi32>, tensor<?xi32>)
      outs(%o, %lse : tensor<?x32x128xf16>, tensor<?x8xf32>) {page_size = 16 : i64}
      -> tensor<?x32x128xf16>, tensor<?x8xf32>
  return
}

// -----

func.func @mix(%q: tensor<?x32x128xf16>, %kv0: tensor<?x2x16x8x128xf16>, %qo0: tensor<2xi32>, %qo1: tensor<?xi32>, %kp0: tensor<2xi32>, %kp1: tensor<?xi32>, %ki0: tensor<?xi32>, %ki1: tensor<?xi32>, %kl0: memref<1xi32>, %kl1: memref<?xi32>, %o: tensor<?x32x128xf16>, %lse: tensor<?x32xf32>) {
  // expected-error@+1 {{operands must be all tensors or all memrefs, not a mix}}
  %r:2 = cascade.multi_level_attention q(%q : tensor<?x32x128xf16>) kv(%kv0 : tensor<?x2x16x8x128xf16>)
      qo_indptr(%qo0, %qo1 : tensor<2xi32>, tensor<?xi32>) kv_indptr(%kp0, %kp1 : tensor<2xi32>, tensor<?xi32>)
      kv_indices(%ki0, %ki1 : tensor<?xi32>, tensor<?xi32>) kv_last_page_len(%kl0, %kl1 : memref<1xi32>, memref<?xi32>)
      outs(%o, %lse : tensor<?x32x128xf16>, tensor<?x32xf32>) {page_size = 16 : i64}
      -> tensor<?x32x128xf16>, tensor<?x32xf32>
  return
}

// -----

func.func @memref_with_results(%q: memref<?x32x128xf16>, %kv0: memref<?x2x16x8x128xf16>, %qo0: memref<2xi32>, %qo1: memref<?xi32>, %kp0: memref<2xi32>, %kp1: memref<?xi32>, %ki0: memref<?xi32>, %ki1: memref<?xi32>, %kl0: memref<1xi32>, %kl1: memref<?xi32>, %o: memref<?x32x128xf16>, %lse: memref<?x32xf32>) {
  // expected-error@+1 {{on memrefs must have no results, got 2}}
  %r:2 = cascade.multi_level_attention q(%q : memref<?x32x128xf16>) kv(%kv0 : memref<?x2x16x8x128xf16>)
      qo_indptr(%qo0, %qo1 : memref<2xi32>, memref<?xi32>) kv_indptr(%kp0, %kp1 : memref<2xi32>, memref<?xi32>)
      kv_indices(%ki0, %ki1 : memref<?xi32>, memref<?xi32>) kv_last_page_len(%kl0, %kl1 : memref<1xi32>, memref<?xi32>)
      outs(%o, %lse : memref<?x32x128xf16>, memref<?x32xf32>) {page_size = 16 : i64}
      -> tensor<?x32x128xf16>, tensor<?x32xf32>
  return
}

// -----

func.func @tensor_no_results(%q: tensor<?x32x128xf16>, %kv0: tensor<?x2x16x8x128xf16>, %qo0: tensor<2xi32>, %qo1: tensor<?xi32>, %kp0: tensor<2xi32>, %kp1: tensor<?xi32>, %ki0: tensor<?xi32>, %ki1: tensor<?xi32>, %kl0: tensor<1xi32>, %kl1: tensor<?xi32>, %o: tensor<?x32x128xf16>, %lse: tensor<?x32xf32>) {
  // expected-error@+1 {{on tensors must have 2 results, got 0}}
  cascade.multi_level_attention q(%q : tensor<?x32x128xf16>) kv(%kv0 : tensor<?x2x16x8x128xf16>)
      qo_indptr(%qo0, %qo1 : tensor<2xi32>, tensor<?xi32>) kv_indptr(%kp0, %kp1 : tensor<2xi32>, tensor<?xi32>)
      kv_indices(%ki0, %ki1 : tensor<?xi32>, tensor<?xi32>) kv_last_page_len(%kl0, %kl1 : tensor<1xi32>, tensor<?xi32>)
      outs(%o, %lse : tensor<?x32x128xf16>, tensor<?x32xf32>) {page_size = 16 : i64}
  return
}
