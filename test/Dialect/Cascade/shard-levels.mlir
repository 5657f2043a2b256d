// RUN: cascade-opt %s --cascade-shard-levels --split-input-file | FileCheck %s

// cascade-shard-levels: a cascade with sharded levels becomes what every
// process of the grid runs (docs/multi_gpu.md).

// A sharded prefix over 4 processes, per-request decode suffixes held by all.
// CHECK-LABEL: func @sharded_prefix
// CHECK-SAME: (%[[Q:[^:]*]]: tensor<?x32x128xf16>, %[[C:[^:]*]]: tensor<?x2x16x8x128xf16>, %[[QO0:[^:]*]]: tensor<2xi32>, %[[KP0:[^:]*]]: tensor<2xi32>, %[[KI0:[^:]*]]: tensor<?xi32>, %[[KL0:[^:]*]]: tensor<1xi32>, %[[QO1:[^:]*]]: tensor<?xi32>, %[[KP1:[^:]*]]: tensor<?xi32>, %[[KI1:[^:]*]]: tensor<?xi32>, %[[KL1:[^:]*]]: tensor<?xi32>, %[[O:[^:]*]]: tensor<?x32x128xf16>, %[[LSE:[^:]*]]: tensor<?x32xf32>)
// CHECK-NOT: grid =
// CHECK: %[[MINE:.*]]:2 = cascade.multi_level_attention q(%[[Q]] : {{.*}}) kv(%[[C]] : {{.*}}) qo_indptr(%[[QO0]] : tensor<2xi32>) kv_indptr(%[[KP0]] : tensor<2xi32>) kv_indices(%[[KI0]] : tensor<?xi32>) kv_last_page_len(%[[KL0]] : tensor<1xi32>) outs({{.*}}) {decode_levels = array<i1: false>, page_size = 16 : i64, sm_scale = 1.250000e-01 : f32}
// CHECK: %[[EV:.*]] = tensor.expand_shape %[[MINE]]#0 {{\[\[}}0, 1], [2], [3]] {{.*}} : tensor<?x32x128xf16> into tensor<?x1x32x128xf16>
// CHECK: %[[GV:.*]] = shard.all_gather %[[EV]] on @node grid_axes = [0] gather_axis = 1 : tensor<?x1x32x128xf16> -> tensor<?x4x32x128xf16>
// CHECK: %[[ES:.*]] = tensor.expand_shape %[[MINE]]#1 {{\[\[}}0, 1], [2]] {{.*}} : tensor<?x32xf32> into tensor<?x1x32xf32>
// CHECK: %[[GS:.*]] = shard.all_gather %[[ES]] on @node grid_axes = [0] gather_axis = 1 : tensor<?x1x32xf32> -> tensor<?x4x32xf32>
// CHECK: %[[M:.*]]:2 = cascade.merge_states ins(%[[GV]], %[[GS]] : tensor<?x4x32x128xf16>, tensor<?x4x32xf32>)
// CHECK: %[[REST:.*]]:2 = cascade.multi_level_attention q(%[[Q]] : {{.*}}) kv(%[[C]] : {{.*}}) qo_indptr(%[[QO1]] : tensor<?xi32>) kv_indptr(%[[KP1]] : tensor<?xi32>) kv_indices(%[[KI1]] : tensor<?xi32>) kv_last_page_len(%[[KL1]] : tensor<?xi32>) outs({{.*}}) {decode_levels = array<i1: true>, page_size = 16 : i64, sm_scale = 1.250000e-01 : f32}
// CHECK: %[[R:.*]]:2 = cascade.merge_state ins(%[[M]]#0, %[[M]]#1, %[[REST]]#0, %[[REST]]#1 : {{.*}}) outs(%[[O]], %[[LSE]] : {{.*}})
// CHECK-COUNT-8: bufferization.dealloc_tensor
// CHECK: return %[[R]]#0, %[[R]]#1
shard.grid @node(shape = 4)
func.func @sharded_prefix(%q: tensor<?x32x128xf16>, %c: tensor<?x2x16x8x128xf16>, %qo0: tensor<2xi32>, %kp0: tensor<2xi32>, %ki0: tensor<?xi32>, %kl0: tensor<1xi32>, %qo1: tensor<?xi32>, %kp1: tensor<?xi32>, %ki1: tensor<?xi32>, %kl1: tensor<?xi32>, %o: tensor<?x32x128xf16>, %lse: tensor<?x32xf32>) -> (tensor<?x32x128xf16>, tensor<?x32xf32>) {
  %r:2 = cascade.multi_level_attention q(%q : tensor<?x32x128xf16>) kv(%c : tensor<?x2x16x8x128xf16>)
      qo_indptr(%qo0, %qo1 : tensor<2xi32>, tensor<?xi32>) kv_indptr(%kp0, %kp1 : tensor<2xi32>, tensor<?xi32>)
      kv_indices(%ki0, %ki1 : tensor<?xi32>, tensor<?xi32>) kv_last_page_len(%kl0, %kl1 : tensor<1xi32>, tensor<?xi32>)
      outs(%o, %lse : tensor<?x32x128xf16>, tensor<?x32xf32>) {page_size = 16 : i64, decode_levels = array<i1: false, true>, grid = @node, sharded_levels = array<i1: true, false>, sm_scale = 0.125 : f32}
      -> tensor<?x32x128xf16>, tensor<?x32xf32>
  return %r#0, %r#1 : tensor<?x32x128xf16>, tensor<?x32xf32>
}

// -----

// Every level sharded: the merge of the gathered states is the result.
// Heads split along axis 0 of the grid, pages along axis 1 (group of 8).
// CHECK-LABEL: func @all_levels_sharded
// CHECK: cascade.multi_level_attention {{.*}}qo_indptr(%{{.*}}, %{{.*}} : tensor<2xi32>, tensor<?xi32>)
// CHECK: shard.all_gather %{{.*}} on @tp_sp grid_axes = [1] gather_axis = 1 : tensor<?x1x32x128xf16> -> tensor<?x8x32x128xf16>
// CHECK: shard.all_gather %{{.*}} on @tp_sp grid_axes = [1] gather_axis = 1 : tensor<?x1x32xf32> -> tensor<?x8x32xf32>
// CHECK: %[[M:.*]]:2 = cascade.merge_states ins({{.*}}) outs(%arg10, %arg11 : {{.*}})
// CHECK-NOT: cascade.merge_state
// CHECK-NOT: cascade.multi_level_attention
// CHECK-COUNT-4: bufferization.dealloc_tensor
// CHECK: return %[[M]]#0, %[[M]]#1
shard.grid @tp_sp(shape = 2x8)
func.func @all_levels_sharded(%q: tensor<?x32x128xf16>, %c: tensor<?x2x16x8x128xf16>, %qo0: tensor<2xi32>, %kp0: tensor<2xi32>, %ki0: tensor<?xi32>, %kl0: tensor<1xi32>, %qo1: tensor<?xi32>, %kp1: tensor<?xi32>, %ki1: tensor<?xi32>, %kl1: tensor<?xi32>, %o: tensor<?x32x128xf16>, %lse: tensor<?x32xf32>) -> (tensor<?x32x128xf16>, tensor<?x32xf32>) {
  %r:2 = cascade.multi_level_attention q(%q : tensor<?x32x128xf16>) kv(%c : tensor<?x2x16x8x128xf16>)
      qo_indptr(%qo0, %qo1 : tensor<2xi32>, tensor<?xi32>) kv_indptr(%kp0, %kp1 : tensor<2xi32>, tensor<?xi32>)
      kv_indices(%ki0, %ki1 : tensor<?xi32>, tensor<?xi32>) kv_last_page_len(%kl0, %kl1 : tensor<1xi32>, tensor<?xi32>)
      outs(%o, %lse : tensor<?x32x128xf16>, tensor<?x32xf32>) {page_size = 16 : i64, grid = @tp_sp, grid_axes = array<i16: 1>, sharded_levels = array<i1: true, true>}
      -> tensor<?x32x128xf16>, tensor<?x32xf32>
  return %r#0, %r#1 : tensor<?x32x128xf16>, tensor<?x32xf32>
}

// -----

// A grid of unknown size: the gathered dimension is dynamic. causal goes
// with the unsharded last level.
// CHECK-LABEL: func @dynamic_grid
// CHECK: cascade.multi_level_attention {{.*}}kv_last_page_len(%{{.*}} : tensor<1xi32>) {{.*}}{page_size = 16 : i64}
// CHECK: shard.all_gather %{{.*}} on @any grid_axes = [0, 1] gather_axis = 1 : tensor<?x1x32x128xf16> -> tensor<?x?x32x128xf16>
// CHECK: cascade.merge_states ins(%{{.*}}, %{{.*}} : tensor<?x?x32x128xf16>, tensor<?x?x32xf32>)
// CHECK: cascade.multi_level_attention {{.*}}kv_last_page_len(%{{.*}} : tensor<?xi32>) {{.*}}{causal, page_size = 16 : i64}
shard.grid @any(shape = 2x?)
func.func @dynamic_grid(%q: tensor<?x32x128xf16>, %c: tensor<?x2x16x8x128xf16>, %qo0: tensor<2xi32>, %kp0: tensor<2xi32>, %ki0: tensor<?xi32>, %kl0: tensor<1xi32>, %qo1: tensor<?xi32>, %kp1: tensor<?xi32>, %ki1: tensor<?xi32>, %kl1: tensor<?xi32>, %o: tensor<?x32x128xf16>, %lse: tensor<?x32xf32>) -> (tensor<?x32x128xf16>, tensor<?x32xf32>) {
  %r:2 = cascade.multi_level_attention q(%q : tensor<?x32x128xf16>) kv(%c : tensor<?x2x16x8x128xf16>)
      qo_indptr(%qo0, %qo1 : tensor<2xi32>, tensor<?xi32>) kv_indptr(%kp0, %kp1 : tensor<2xi32>, tensor<?xi32>)
      kv_indices(%ki0, %ki1 : tensor<?xi32>, tensor<?xi32>) kv_last_page_len(%kl0, %kl1 : tensor<1xi32>, tensor<?xi32>)
      outs(%o, %lse : tensor<?x32x128xf16>, tensor<?x32xf32>) {page_size = 16 : i64, causal, grid = @any, sharded_levels = array<i1: true, false>}
      -> tensor<?x32x128xf16>, tensor<?x32xf32>
  return %r#0, %r#1 : tensor<?x32x128xf16>, tensor<?x32xf32>
}

// -----

// Cascades without sharded levels are left alone.
// CHECK-LABEL: func @not_sharded
// CHECK: cascade.multi_level_attention
// CHECK-NOT: shard.all_gather
func.func @not_sharded(%q: tensor<?x32x128xf16>, %c: tensor<?x2x16x8x128xf16>, %qo0: tensor<2xi32>, %kp0: tensor<2xi32>, %ki0: tensor<?xi32>, %kl0: tensor<1xi32>, %qo1: tensor<?xi32>, %kp1: tensor<?xi32>, %ki1: tensor<?xi32>, %kl1: tensor<?xi32>, %o: tensor<?x32x128xf16>, %lse: tensor<?x32xf32>) -> (tensor<?x32x128xf16>, tensor<?x32xf32>) {
  %r:2 = cascade.multi_level_attention q(%q : tensor<?x32x128xf16>) kv(%c : tensor<?x2x16x8x128xf16>)
      qo_indptr(%qo0, %qo1 : tensor<2xi32>, tensor<?xi32>) kv_indptr(%kp0, %kp1 : tensor<2xi32>, tensor<?xi32>)
      kv_indices(%ki0, %ki1 : tensor<?xi32>, tensor<?xi32>) kv_last_page_len(%kl0, %kl1 : tensor<1xi32>, tensor<?xi32>)
      outs(%o, %lse : tensor<?x32x128xf16>, tensor<?x32xf32>) {page_size = 16 : i64, decode_levels = array<i1: false, true>}
      -> tensor<?x32x128xf16>, tensor<?x32xf32>
  return %r#0, %r#1 : tensor<?x32x128xf16>, tensor<?x32xf32>
}
