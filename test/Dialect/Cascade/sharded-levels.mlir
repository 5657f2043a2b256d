// RUN: cascade-opt %s | cascade-opt | FileCheck %s
// RUN: cascade-opt %s --mlir-print-op-generic | cascade-opt | FileCheck %s
// RUN: cascade-opt %s --verify-roundtrip

// A shared prefix sharded across the 4 processes of a grid (docs/multi_gpu.md).

shard.grid @node(shape = 4)
shard.grid @tp_sp(shape = 2x4)

// CHECK-LABEL: func @sharded_prefix
// CHECK: cascade.multi_level_attention
// CHECK-SAME: grid = @node
// CHECK-SAME: sharded_levels = array<i1: true, false>
func.func @sharded_prefix(%q: tensor<?x32x128xf16>, %c: tensor<?x2x16x8x128xf16>, %qo0: tensor<2xi32>, %kp0: tensor<2xi32>, %ki0: tensor<?xi32>, %kl0: tensor<1xi32>, %qo1: tensor<?xi32>, %kp1: tensor<?xi32>, %ki1: tensor<?xi32>, %kl1: tensor<?xi32>, %o: tensor<?x32x128xf16>, %lse: tensor<?x32xf32>) -> (tensor<?x32x128xf16>, tensor<?x32xf32>) {
  %r:2 = cascade.multi_level_attention q(%q : tensor<?x32x128xf16>) kv(%c : tensor<?x2x16x8x128xf16>)
      qo_indptr(%qo0, %qo1 : tensor<2xi32>, tensor<?xi32>) kv_indptr(%kp0, %kp1 : tensor<2xi32>, tensor<?xi32>)
      kv_indices(%ki0, %ki1 : tensor<?xi32>, tensor<?xi32>) kv_last_page_len(%kl0, %kl1 : tensor<1xi32>, tensor<?xi32>)
      outs(%o, %lse : tensor<?x32x128xf16>, tensor<?x32xf32>) {page_size = 16 : i64, decode_levels = array<i1: false, true>, grid = @node, sharded_levels = array<i1: true, false>}
      -> tensor<?x32x128xf16>, tensor<?x32xf32>
  return %r#0, %r#1 : tensor<?x32x128xf16>, tensor<?x32xf32>
}

// Tensor parallelism x prefix sharding: heads split along axis 0 (each
// process holds its heads' q and KV), pages along axis 1.
// CHECK-LABEL: func @sharded_along_one_axis
// CHECK: cascade.multi_level_attention
// CHECK-SAME: causal
// CHECK-SAME: grid = @tp_sp, grid_axes = array<i16: 1>
// CHECK-SAME: sharded_levels = array<i1: true, false>
func.func @sharded_along_one_axis(%q: tensor<?x32x128xf16>, %c: tensor<?x2x16x8x128xf16>, %qo0: tensor<2xi32>, %kp0: tensor<2xi32>, %ki0: tensor<?xi32>, %kl0: tensor<1xi32>, %qo1: tensor<?xi32>, %kp1: tensor<?xi32>, %ki1: tensor<?xi32>, %kl1: tensor<?xi32>, %o: tensor<?x32x128xf16>, %lse: tensor<?x32xf32>) -> (tensor<?x32x128xf16>, tensor<?x32xf32>) {
  %r:2 = cascade.multi_level_attention q(%q : tensor<?x32x128xf16>) kv(%c : tensor<?x2x16x8x128xf16>)
      qo_indptr(%qo0, %qo1 : tensor<2xi32>, tensor<?xi32>) kv_indptr(%kp0, %kp1 : tensor<2xi32>, tensor<?xi32>)
      kv_indices(%ki0, %ki1 : tensor<?xi32>, tensor<?xi32>) kv_last_page_len(%kl0, %kl1 : tensor<1xi32>, tensor<?xi32>)
      outs(%o, %lse : tensor<?x32x128xf16>, tensor<?x32xf32>) {page_size = 16 : i64, causal, grid = @tp_sp, grid_axes = array<i16: 1>, sharded_levels = array<i1: true, false>}
      -> tensor<?x32x128xf16>, tensor<?x32xf32>
  return %r#0, %r#1 : tensor<?x32x128xf16>, tensor<?x32xf32>
}
