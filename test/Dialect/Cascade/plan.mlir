// RUN: cascade-opt %s | cascade-opt | FileCheck %s --check-prefix=ROUNDTRIP
// RUN: cascade-opt %s -cascade-decompose-levels | FileCheck %s

// Plans in IR: `cascade.plan` makes the plan of one level at run time from
// the host copies of its index arrays; a multi-level cascade takes one plan
// per level, and cascade-decompose-levels hands each level its own plan.

!prefill = !cascade.plan<prefill, heads = 32 / 8, head_dim = 128, page_size = 16>
!decode = !cascade.plan<decode, heads = 32 / 8, head_dim = 128, page_size = 16>
!graph = !cascade.plan<decode, heads = 32 / 8, head_dim = 128, page_size = 16, graph_rows = 256>

// ROUNDTRIP-LABEL: func.func @two_level
// ROUNDTRIP: %[[P0:.*]] = cascade.plan qo_indptr(%{{.*}} : memref<2xi32>) kv_indptr(%{{.*}} : memref<2xi32>) kv_last_page_len(%{{.*}} : memref<1xi32>) kv_indices(%{{.*}} : memref<?xi32>) : !cascade.plan<prefill, heads = 32 / 8, head_dim = 128, page_size = 16>
// ROUNDTRIP: %[[P1:.*]] = cascade.plan kv_indptr(%{{.*}} : memref<?xi32>) kv_last_page_len(%{{.*}} : memref<?xi32>) {fixed_split_pages = 4 : i64, occupancy = 2 : i64} : !cascade.plan<decode, heads = 32 / 8, head_dim = 128, page_size = 16>
// ROUNDTRIP: plans(%[[P0]], %[[P1]] : !cascade.plan<prefill, heads = 32 / 8, head_dim = 128, page_size = 16>, !cascade.plan<decode, heads = 32 / 8, head_dim = 128, page_size = 16>)

// CHECK-LABEL: func.func @two_level
// CHECK: %[[P0:.*]] = cascade.plan qo_indptr
// CHECK: %[[P1:.*]] = cascade.plan kv_indptr
// CHECK: %[[L0:.*]]:2 = cascade.paged_attention {{.*}} qo_indptr(%{{.*}} : tensor<2xi32>) {{.*}} plan(%[[P0]] : !cascade.plan<prefill, {{.*}}>) outs(
// CHECK-NOT: accumulate
// CHECK: %[[L1:.*]]:2 = cascade.paged_attention {{.*}} kv_indptr(%{{.*}} : tensor<?xi32>) {{.*}} plan(%[[P1]] : !cascade.plan<decode, {{.*}}>) outs(%[[L0]]#0, %[[L0]]#1 : {{.*}}) {accumulate
// CHECK: return %[[L1]]#0, %[[L1]]#1
func.func @two_level(%q: tensor<?x32x128xf16>, %cache: tensor<?x2x16x8x128xf16>,
    %qo0: tensor<2xi32>, %qo1: tensor<?xi32>, %kp0: tensor<2xi32>, %kp1: tensor<?xi32>,
    %ki0: tensor<?xi32>, %ki1: tensor<?xi32>, %kl0: tensor<1xi32>, %kl1: tensor<?xi32>,
    %hqo0: memref<2xi32>, %hkp0: memref<2xi32>, %hkl0: memref<1xi32>, %hki0: memref<?xi32>,
    %hkp1: memref<?xi32>, %hkl1: memref<?xi32>,
    %o0: tensor<?x32x128xf16>, %l0: tensor<?x32xf32>) -> (tensor<?x32x128xf16>, tensor<?x32xf32>) {
  %p0 = cascade.plan qo_indptr(%hqo0 : memref<2xi32>) kv_indptr(%hkp0 : memref<2xi32>)
      kv_last_page_len(%hkl0 : memref<1xi32>) kv_indices(%hki0 : memref<?xi32>) : !prefill
  %p1 = cascade.plan kv_indptr(%hkp1 : memref<?xi32>) kv_last_page_len(%hkl1 : memref<?xi32>)
      {fixed_split_pages = 4 : i64, occupancy = 2 : i64} : !decode
  %o, %lse = cascade.multi_level_attention
      q(%q : tensor<?x32x128xf16>) kv(%cache : tensor<?x2x16x8x128xf16>)
      qo_indptr(%qo0, %qo1 : tensor<2xi32>, tensor<?xi32>)
      kv_indptr(%kp0, %kp1 : tensor<2xi32>, tensor<?xi32>)
      kv_indices(%ki0, %ki1 : tensor<?xi32>, tensor<?xi32>)
      kv_last_page_len(%kl0, %kl1 : tensor<1xi32>, tensor<?xi32>)
      plans(%p0, %p1 : !prefill, !decode)
      outs(%o0, %l0 : tensor<?x32x128xf16>, tensor<?x32xf32>)
      {page_size = 16 : i64, decode_levels = array<i1: false, true>}
      -> tensor<?x32x128xf16>, tensor<?x32xf32>
  return %o, %lse : tensor<?x32x128xf16>, tensor<?x32xf32>
}

// A paged_attention (here on memrefs) takes one plan in place of the split-KV
// plan operands; graph mode is part of the type.
// ROUNDTRIP-LABEL: func.func @planned_decode
// ROUNDTRIP: cascade.paged_attention {{.*}} plan(%{{.*}} : !cascade.plan<decode, heads = 32 / 8, head_dim = 128, page_size = 16, graph_rows = 256>) outs(
func.func @planned_decode(%q: memref<?x32x128xf16>, %cache: memref<?x2x16x8x128xf16>,
    %kp: memref<?xi32>, %ki: memref<?xi32>, %kl: memref<?xi32>, %plan: !graph,
    %o: memref<?x32x128xf16>, %lse: memref<?x32xf32>) {
  cascade.paged_attention q(%q : memref<?x32x128xf16>) kv(%cache : memref<?x2x16x8x128xf16>)
      kv_indptr(%kp : memref<?xi32>) kv_indices(%ki : memref<?xi32>) kv_last_page_len(%kl : memref<?xi32>)
      plan(%plan : !graph)
      outs(%o, %lse : memref<?x32x128xf16>, memref<?x32xf32>) {page_size = 16 : i64}
  return
}
