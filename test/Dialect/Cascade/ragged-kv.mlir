// RUN: cascade-opt %s | cascade-opt | FileCheck %s
// RUN: cascade-opt %s --mlir-print-op-generic | cascade-opt | FileCheck %s
// RUN: cascade-opt %s --verify-roundtrip
// RUN: cascade-opt %s --one-shot-bufferize="bufferize-function-boundaries" | FileCheck %s --check-prefix=BUF

// cascade.paged_attention without kv_indices: the identity page table.
// Request i's pages are kv_indptr[i] .. kv_indptr[i+1] - 1 of the pool; at
// page size 1 with a (k, v) pair of [tokens, 1, Hkv, D] views, that is
// ragged (contiguous) K/V, kv_indptr holding token offsets.

// CHECK-LABEL: func @ragged_prefill
// CHECK: cascade.paged_attention q(%{{.*}} : tensor<?x32x128xf16>) kv(%{{.*}}, %{{.*}} : tensor<?x1x8x128xf16>, tensor<?x1x8x128xf16>) qo_indptr(%{{.*}} : tensor<?xi32>) kv_indptr(%{{.*}} : tensor<?xi32>) kv_last_page_len(%{{.*}} : tensor<?xi32>) outs(
// CHECK-SAME: {causal, page_size = 1 : i64}
// BUF-LABEL: func @ragged_prefill
// BUF: cascade.paged_attention {{.*}} kv_indptr(%{{.*}} : memref<?xi32, strided<[?], offset: ?>>) kv_last_page_len(
func.func @ragged_prefill(%q: tensor<?x32x128xf16>, %k: tensor<?x1x8x128xf16>,
                          %v: tensor<?x1x8x128xf16>, %qo: tensor<?xi32>, %kvp: tensor<?xi32>,
                          %ones: tensor<?xi32>, %o: tensor<?x32x128xf16>, %lse: tensor<?x32xf32>)
    -> (tensor<?x32x128xf16>, tensor<?x32xf32>) {
  %r:2 = cascade.paged_attention q(%q : tensor<?x32x128xf16>)
      kv(%k, %v : tensor<?x1x8x128xf16>, tensor<?x1x8x128xf16>)
      qo_indptr(%qo : tensor<?xi32>) kv_indptr(%kvp : tensor<?xi32>)
      kv_last_page_len(%ones : tensor<?xi32>)
      outs(%o, %lse : tensor<?x32x128xf16>, tensor<?x32xf32>) {page_size = 1 : i64, causal}
      -> tensor<?x32x128xf16>, tensor<?x32xf32>
  return %r#0, %r#1 : tensor<?x32x128xf16>, tensor<?x32xf32>
}

// A pool read in request order (page size 16, decode): the same rule.
// CHECK-LABEL: func @contiguous_pool_decode
// CHECK: kv_indptr(%{{.*}} : memref<?xi32>) kv_last_page_len(%{{.*}} : memref<?xi32>) outs(
func.func @contiguous_pool_decode(%q: memref<?x32x128xbf16>, %cache: memref<?x2x16x8x128xbf16>,
                                  %kvp: memref<?xi32>, %last: memref<?xi32>,
                                  %o: memref<?x32x128xbf16>, %lse: memref<?x32xf32>) {
  cascade.paged_attention q(%q : memref<?x32x128xbf16>) kv(%cache : memref<?x2x16x8x128xbf16>)
      kv_indptr(%kvp : memref<?xi32>) kv_last_page_len(%last : memref<?xi32>)
      outs(%o, %lse : memref<?x32x128xbf16>, memref<?x32xf32>) {page_size = 16 : i64}
  return
}

// A cascade whose shared prefix is ragged (its pages contiguous from
// kv_indptr[0][0]) and whose unique level has a page table: kv_indices
// lists the unique level's table only.
// CHECK-LABEL: func @ragged_prefix_level
// CHECK: cascade.multi_level_attention {{.*}} kv_indptr(%{{.*}}, %{{.*}} : tensor<2xi32>, tensor<?xi32>) kv_indices(%[[KI1:.*]] : tensor<?xi32>) kv_last_page_len(
// CHECK-SAME: decode_levels = array<i1: false, true>
// CHECK-SAME: ragged_levels = array<i1: true, false>
// BUF-LABEL: func @ragged_prefix_level
// BUF: cascade.multi_level_attention {{.*}} kv_indices(%{{.*}} : memref<?xi32, strided<[?], offset: ?>>) kv_last_page_len(
func.func @ragged_prefix_level(%q: tensor<?x32x128xf16>, %cache: tensor<?x2x16x8x128xf16>,
                               %qo0: tensor<2xi32>, %qo1: tensor<?xi32>,
                               %kp0: tensor<2xi32>, %kp1: tensor<?xi32>, %ki1: tensor<?xi32>,
                               %kl0: tensor<1xi32>, %kl1: tensor<?xi32>,
                               %o: tensor<?x32x128xf16>, %lse: tensor<?x32xf32>)
    -> (tensor<?x32x128xf16>, tensor<?x32xf32>) {
  %r:2 = cascade.multi_level_attention q(%q : tensor<?x32x128xf16>) kv(%cache : tensor<?x2x16x8x128xf16>)
      qo_indptr(%qo0, %qo1 : tensor<2xi32>, tensor<?xi32>)
      kv_indptr(%kp0, %kp1 : tensor<2xi32>, tensor<?xi32>)
      kv_indices(%ki1 : tensor<?xi32>)
      kv_last_page_len(%kl0, %kl1 : tensor<1xi32>, tensor<?xi32>)
      outs(%o, %lse : tensor<?x32x128xf16>, tensor<?x32xf32>)
      {page_size = 16 : i64, decode_levels = array<i1: false, true>, ragged_levels = array<i1: true, false>}
      -> tensor<?x32x128xf16>, tensor<?x32xf32>
  return %r#0, %r#1 : tensor<?x32x128xf16>, tensor<?x32xf32>
}

// Every level ragged: no kv_indices.
// CHECK-LABEL: func @all_levels_ragged
// CHECK: kv_indptr(%{{.*}}, %{{.*}} : tensor<2xi32>, tensor<?xi32>) kv_last_page_len(
func.func @all_levels_ragged(%q: tensor<?x32x128xf16>, %cache: tensor<?x2x16x8x128xf16>,
                             %qo0: tensor<2xi32>, %qo1: tensor<?xi32>,
                             %kp0: tensor<2xi32>, %kp1: tensor<?xi32>,
                             %kl0: tensor<1xi32>, %kl1: tensor<?xi32>,
                             %o: tensor<?x32x128xf16>, %lse: tensor<?x32xf32>)
    -> (tensor<?x32x128xf16>, tensor<?x32xf32>) {
  %r:2 = cascade.multi_level_attention q(%q : tensor<?x32x128xf16>) kv(%cache : tensor<?x2x16x8x128xf16>)
      qo_indptr(%qo0, %qo1 : tensor<2xi32>, tensor<?xi32>)
      kv_indptr(%kp0, %kp1 : tensor<2xi32>, tensor<?xi32>)
      kv_last_page_len(%kl0, %kl1 : tensor<1xi32>, tensor<?xi32>)
      outs(%o, %lse : tensor<?x32x128xf16>, tensor<?x32xf32>)
      {page_size = 16 : i64, ragged_levels = array<i1: true, true>}
      -> tensor<?x32x128xf16>, tensor<?x32xf32>
  return %r#0, %r#1 : tensor<?x32x128xf16>, tensor<?x32xf32>
}

// v narrower than q and k (head_dim_vo, DeepSeek's prefill: 192 / 128): the
// output takes v's head_dim.
// CHECK-LABEL: func @ragged_prefill_head_dim_vo
// CHECK: kv(%{{.*}}, %{{.*}} : tensor<?x1x16x192xbf16>, tensor<?x1x16x128xbf16>)
// CHECK-SAME: outs(%{{.*}}, %{{.*}} : tensor<?x16x128xbf16>, tensor<?x16xf32>)
// BUF-LABEL: func @ragged_prefill_head_dim_vo
// BUF: cascade.paged_attention
func.func @ragged_prefill_head_dim_vo(%q: tensor<?x16x192xbf16>, %k: tensor<?x1x16x192xbf16>,
                                      %v: tensor<?x1x16x128xbf16>, %qo: tensor<?xi32>, %kvp: tensor<?xi32>,
                                      %ones: tensor<?xi32>, %o: tensor<?x16x128xbf16>, %lse: tensor<?x16xf32>)
    -> (tensor<?x16x128xbf16>, tensor<?x16xf32>) {
  %r:2 = cascade.paged_attention q(%q : tensor<?x16x192xbf16>)
      kv(%k, %v : tensor<?x1x16x192xbf16>, tensor<?x1x16x128xbf16>)
      qo_indptr(%qo : tensor<?xi32>) kv_indptr(%kvp : tensor<?xi32>)
      kv_last_page_len(%ones : tensor<?xi32>)
      outs(%o, %lse : tensor<?x16x128xbf16>, tensor<?x16xf32>) {page_size = 1 : i64, causal}
      -> tensor<?x16x128xbf16>, tensor<?x16xf32>
  return %r#0, %r#1 : tensor<?x16x128xbf16>, tensor<?x16xf32>
}
