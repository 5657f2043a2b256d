// RUN: cascade-opt %s -cascade-decompose-levels=fuse-merges=false | FileCheck %s
// RUN: cascade-opt %s -cascade-decompose-levels | FileCheck %s --check-prefix=FUSED

// cascade-decompose-levels rewrites a multi-level cascade into one
// cascade.paged_attention per level (in level order, each with its own index
// arrays). By default every later level merges itself into the running state
// (`accumulate` on the same destinations: no temporaries, no merge op); with
// fuse-merges=false it writes temporaries that cascade.merge_state_in_place
// ops fold into level 0's state. Only the last level keeps `causal`; every
// other option is copied to all levels (and lse_base to the merges).

// FUSED-LABEL: func.func @two_level
// FUSED-NOT: tensor.empty
// FUSED: %[[L0:.*]]:2 = cascade.paged_attention {{.*}} outs(%arg10, %arg11 : tensor<?x32x128xf16>, tensor<?x32xf32>)
// FUSED-SAME: {kv_layout = #cascade.kv_layout<hnd>, logits_soft_cap = 3.000000e+01 : f32, lse_base = #cascade.lse_base<base_e>, page_size = 16 : i64, pos_encoding = #cascade.pos_encoding<rope_llama>, rope_scale = 2.000000e+00 : f32, rope_theta = 5.000000e+05 : f32, sm_scale = 1.250000e-01 : f32, window_left = 256 : i64}
// FUSED: %[[L1:.*]]:2 = cascade.paged_attention {{.*}} qo_indptr(%arg6 : tensor<?xi32>) {{.*}} outs(%[[L0]]#0, %[[L0]]#1 : tensor<?x32x128xf16>, tensor<?x32xf32>)
// FUSED-SAME: {accumulate, causal, kv_layout = #cascade.kv_layout<hnd>, logits_soft_cap = 3.000000e+01 : f32, lse_base = #cascade.lse_base<base_e>, page_size = 16 : i64, pos_encoding = #cascade.pos_encoding<rope_llama>, rope_scale = 2.000000e+00 : f32, rope_theta = 5.000000e+05 : f32, sm_scale = 1.250000e-01 : f32, window_left = 256 : i64}
// FUSED-NOT: cascade.merge_state_in_place
// FUSED: return %[[L1]]#0, %[[L1]]#1
// FUSED-LABEL: func.func @three_level
// FUSED: %[[A:.*]]:2 = cascade.paged_attention {{.*}} qo_indptr(%arg3 : tensor<2xi32>)
// FUSED: %[[B:.*]]:2 = cascade.paged_attention {{.*}} qo_indptr(%arg4 : tensor<?xi32>) {{.*}} outs(%[[A]]#0, %[[A]]#1 : {{.*}}) {accumulate, page_size = 16 : i64
// FUSED: %[[C:.*]]:2 = cascade.paged_attention {{.*}} qo_indptr(%arg5 : tensor<?xi32>) {{.*}} outs(%[[B]]#0, %[[B]]#1 : {{.*}}) {accumulate, causal, page_size = 16 : i64
// FUSED: return %[[C]]#0, %[[C]]#1

// CHECK-LABEL: func.func @two_level
// CHECK-SAME: (%[[Q:.*]]: tensor<?x32x128xf16>, %[[C:.*]]: tensor<?x2x8x16x128xf16>,
// CHECK-SAME: %[[QO0:[^:]*]]: tensor<2xi32>, %[[KP0:[^:]*]]: tensor<2xi32>, %[[KI0:[^:]*]]: tensor<?xi32>, %[[KL0:[^:]*]]: tensor<1xi32>,
// CHECK-SAME: %[[QO1:[^:]*]]: tensor<?xi32>, %[[KP1:[^:]*]]: tensor<?xi32>, %[[KI1:[^:]*]]: tensor<?xi32>, %[[KL1:[^:]*]]: tensor<?xi32>,
// CHECK-SAME: %[[O:[^:]*]]: tensor<?x32x128xf16>, %[[LSE:[^:]*]]: tensor<?x32xf32>)
// CHECK-NOT: cascade.multi_level_attention
// CHECK: %[[C0:.*]] = arith.constant 0 : index
// Level 0 writes straight into the op's destinations and is not causal.
// CHECK: %[[L0:.*]]:2 = cascade.paged_attention q(%[[Q]] : tensor<?x32x128xf16>) kv(%[[C]] : tensor<?x2x8x16x128xf16>)
// CHECK-SAME: qo_indptr(%[[QO0]] : tensor<2xi32>) kv_indptr(%[[KP0]] : tensor<2xi32>) kv_indices(%[[KI0]] : tensor<?xi32>) kv_last_page_len(%[[KL0]] : tensor<1xi32>)
// CHECK-SAME: outs(%[[O]], %[[LSE]] : tensor<?x32x128xf16>, tensor<?x32xf32>)
// CHECK-SAME: {kv_layout = #cascade.kv_layout<hnd>, logits_soft_cap = 3.000000e+01 : f32, lse_base = #cascade.lse_base<base_e>, page_size = 16 : i64, pos_encoding = #cascade.pos_encoding<rope_llama>, rope_scale = 2.000000e+00 : f32, rope_theta = 5.000000e+05 : f32, sm_scale = 1.250000e-01 : f32, window_left = 256 : i64}
// CHECK-SAME: -> tensor<?x32x128xf16>, tensor<?x32xf32>
// Level 1 writes into temporaries shaped like the destinations.
// CHECK: %[[ROWS_V:.*]] = tensor.dim %[[O]], %[[C0]] : tensor<?x32x128xf16>
// CHECK: %[[TV:.*]] = tensor.empty(%[[ROWS_V]]) : tensor<?x32x128xf16>
// CHECK: %[[ROWS_S:.*]] = tensor.dim %[[LSE]], %[[C0]] : tensor<?x32xf32>
// CHECK: %[[TS:.*]] = tensor.empty(%[[ROWS_S]]) : tensor<?x32xf32>
// CHECK: %[[L1:.*]]:2 = cascade.paged_attention q(%[[Q]] : tensor<?x32x128xf16>) kv(%[[C]] : tensor<?x2x8x16x128xf16>)
// CHECK-SAME: qo_indptr(%[[QO1]] : tensor<?xi32>) kv_indptr(%[[KP1]] : tensor<?xi32>) kv_indices(%[[KI1]] : tensor<?xi32>) kv_last_page_len(%[[KL1]] : tensor<?xi32>)
// CHECK-SAME: outs(%[[TV]], %[[TS]] : tensor<?x32x128xf16>, tensor<?x32xf32>)
// CHECK-SAME: {causal, kv_layout = #cascade.kv_layout<hnd>, logits_soft_cap = 3.000000e+01 : f32, lse_base = #cascade.lse_base<base_e>, page_size = 16 : i64, pos_encoding = #cascade.pos_encoding<rope_llama>, rope_scale = 2.000000e+00 : f32, rope_theta = 5.000000e+05 : f32, sm_scale = 1.250000e-01 : f32, window_left = 256 : i64}
// CHECK: %[[M:.*]]:2 = cascade.merge_state_in_place ins(%[[L1]]#0, %[[L1]]#1 : tensor<?x32x128xf16>, tensor<?x32xf32>)
// CHECK-SAME: outs(%[[L0]]#0, %[[L0]]#1 : tensor<?x32x128xf16>, tensor<?x32xf32>) {lse_base = #cascade.lse_base<base_e>}
// CHECK-NOT: cascade.
// CHECK: return %[[M]]#0, %[[M]]#1
func.func @two_level(%q: tensor<?x32x128xf16>, %cache: tensor<?x2x8x16x128xf16>,
                     %qo0: tensor<2xi32>, %kp0: tensor<2xi32>, %ki0: tensor<?xi32>, %kl0: tensor<1xi32>,
                     %qo1: tensor<?xi32>, %kp1: tensor<?xi32>, %ki1: tensor<?xi32>, %kl1: tensor<?xi32>,
                     %o: tensor<?x32x128xf16>, %lse: tensor<?x32xf32>)
    -> (tensor<?x32x128xf16>, tensor<?x32xf32>) {
  %r:2 = cascade.multi_level_attention q(%q : tensor<?x32x128xf16>) kv(%cache : tensor<?x2x8x16x128xf16>)
      qo_indptr(%qo0, %qo1 : tensor<2xi32>, tensor<?xi32>) kv_indptr(%kp0, %kp1 : tensor<2xi32>, tensor<?xi32>)
      kv_indices(%ki0, %ki1 : tensor<?xi32>, tensor<?xi32>) kv_last_page_len(%kl0, %kl1 : tensor<1xi32>, tensor<?xi32>)
      outs(%o, %lse : tensor<?x32x128xf16>, tensor<?x32xf32>)
      {page_size = 16 : i64, kv_layout = #cascade.kv_layout<hnd>, causal, sm_scale = 0.125 : f32,
       logits_soft_cap = 30.0 : f32, window_left = 256 : i64, pos_encoding = #cascade.pos_encoding<rope_llama>,
       rope_scale = 2.0 : f32, rope_theta = 500000.0 : f32, lse_base = #cascade.lse_base<base_e>}
      -> tensor<?x32x128xf16>, tensor<?x32xf32>
  return %r#0, %r#1 : tensor<?x32x128xf16>, tensor<?x32xf32>
}

// A 3-level cascade with a (k, v) page pool: levels 1 and 2 each get their own
// temporaries; the merges chain into level 0's state (level 1 first); only
// level 2 is causal.
// CHECK-LABEL: func.func @three_level
// CHECK-SAME: (%[[Q:[^:]*]]: tensor<?x64x128xbf16>, %[[K:[^:]*]]: tensor<?x16x8x128xbf16>, %[[V:[^:]*]]: tensor<?x16x8x128xbf16>,
// CHECK-SAME: %[[QO0:[^:]*]]: tensor<2xi32>, %[[QO1:[^:]*]]: tensor<?xi32>, %[[QO2:[^:]*]]: tensor<?xi32>,
// CHECK-SAME: %[[KP0:[^:]*]]: tensor<2xi32>, %[[KP1:[^:]*]]: tensor<?xi32>, %[[KP2:[^:]*]]: tensor<?xi32>,
// CHECK-SAME: %[[KI0:[^:]*]]: tensor<?xi32>, %[[KI1:[^:]*]]: tensor<?xi32>, %[[KI2:[^:]*]]: tensor<?xi32>,
// CHECK-SAME: %[[KL0:[^:]*]]: tensor<1xi32>, %[[KL1:[^:]*]]: tensor<?xi32>, %[[KL2:[^:]*]]: tensor<?xi32>,
// CHECK-SAME: %[[O:[^:]*]]: tensor<?x64x128xbf16>, %[[LSE:[^:]*]]: tensor<?x64xf32>)
// CHECK: %[[L0:.*]]:2 = cascade.paged_attention q(%[[Q]] : {{[^)]*}}) kv(%[[K]], %[[V]] : tensor<?x16x8x128xbf16>, tensor<?x16x8x128xbf16>)
// CHECK-SAME: qo_indptr(%[[QO0]] : {{[^)]*}}) kv_indptr(%[[KP0]] : {{[^)]*}}) kv_indices(%[[KI0]] : {{[^)]*}}) kv_last_page_len(%[[KL0]] : {{[^)]*}})
// CHECK-SAME: outs(%[[O]], %[[LSE]] : {{[^)]*}}) {page_size = 16 : i64, sm_scale = 0.0883883535 : f32}
// CHECK: %[[TV1:.*]] = tensor.empty(%{{.*}}) : tensor<?x64x128xbf16>
// CHECK: %[[TS1:.*]] = tensor.empty(%{{.*}}) : tensor<?x64xf32>
// CHECK: %[[L1:.*]]:2 = cascade.paged_attention q(%[[Q]] : {{[^)]*}}) kv(%[[K]], %[[V]] : {{[^)]*}})
// CHECK-SAME: qo_indptr(%[[QO1]] : {{[^)]*}}) kv_indptr(%[[KP1]] : {{[^)]*}}) kv_indices(%[[KI1]] : {{[^)]*}}) kv_last_page_len(%[[KL1]] : {{[^)]*}})
// CHECK-SAME: outs(%[[TV1]], %[[TS1]] : {{[^)]*}}) {page_size = 16 : i64, sm_scale = 0.0883883535 : f32}
// CHECK: %[[M1:.*]]:2 = cascade.merge_state_in_place ins(%[[L1]]#0, %[[L1]]#1 : {{[^)]*}}) outs(%[[L0]]#0, %[[L0]]#1 : {{[^)]*}}) ->
// CHECK: %[[TV2:.*]] = tensor.empty(%{{.*}}) : tensor<?x64x128xbf16>
// CHECK: %[[TS2:.*]] = tensor.empty(%{{.*}}) : tensor<?x64xf32>
// CHECK: %[[L2:.*]]:2 = cascade.paged_attention q(%[[Q]] : {{[^)]*}}) kv(%[[K]], %[[V]] : {{[^)]*}})
// CHECK-SAME: qo_indptr(%[[QO2]] : {{[^)]*}}) kv_indptr(%[[KP2]] : {{[^)]*}}) kv_indices(%[[KI2]] : {{[^)]*}}) kv_last_page_len(%[[KL2]] : {{[^)]*}})
// CHECK-SAME: outs(%[[TV2]], %[[TS2]] : {{[^)]*}}) {causal, page_size = 16 : i64, sm_scale = 0.0883883535 : f32}
// CHECK: %[[M2:.*]]:2 = cascade.merge_state_in_place ins(%[[L2]]#0, %[[L2]]#1 : {{[^)]*}}) outs(%[[M1]]#0, %[[M1]]#1 : {{[^)]*}}) ->
// CHECK-NOT: cascade.
// CHECK: return %[[M2]]#0, %[[M2]]#1
func.func @three_level(%q: tensor<?x64x128xbf16>, %k: tensor<?x16x8x128xbf16>, %v: tensor<?x16x8x128xbf16>,
                       %qo0: tensor<2xi32>, %qo1: tensor<?xi32>, %qo2: tensor<?xi32>,
                       %kp0: tensor<2xi32>, %kp1: tensor<?xi32>, %kp2: tensor<?xi32>,
                       %ki0: tensor<?xi32>, %ki1: tensor<?xi32>, %ki2: tensor<?xi32>,
                       %kl0: tensor<1xi32>, %kl1: tensor<?xi32>, %kl2: tensor<?xi32>,
                       %o: tensor<?x64x128xbf16>, %lse: tensor<?x64xf32>)
    -> (tensor<?x64x128xbf16>, tensor<?x64xf32>) {
  %r:2 = cascade.multi_level_attention q(%q : tensor<?x64x128xbf16>) kv(%k, %v : tensor<?x16x8x128xbf16>, tensor<?x16x8x128xbf16>)
      qo_indptr(%qo0, %qo1, %qo2 : tensor<2xi32>, tensor<?xi32>, tensor<?xi32>)
      kv_indptr(%kp0, %kp1, %kp2 : tensor<2xi32>, tensor<?xi32>, tensor<?xi32>)
      kv_indices(%ki0, %ki1, %ki2 : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>)
      kv_last_page_len(%kl0, %kl1, %kl2 : tensor<1xi32>, tensor<?xi32>, tensor<?xi32>)
      outs(%o, %lse : tensor<?x64x128xbf16>, tensor<?x64xf32>)
      {page_size = 16 : i64, causal, sm_scale = 0.08838835 : f32}
      -> tensor<?x64x128xbf16>, tensor<?x64xf32>
  return %r#0, %r#1 : tensor<?x64x128xbf16>, tensor<?x64xf32>
}

// Static row counts: the temporaries need no tensor.dim.
// CHECK-LABEL: func.func @two_level_static
// CHECK-NOT: tensor.dim
// CHECK: tensor.empty() : tensor<8x32x128xf16>
// CHECK: tensor.empty() : tensor<8x32xf32>
// CHECK: cascade.merge_state_in_place
func.func @two_level_static(%q: tensor<8x32x128xf16>, %cache: tensor<?x2x16x8x128xf16>,
                            %qo0: tensor<2xi32>, %kp0: tensor<2xi32>, %ki0: tensor<?xi32>, %kl0: tensor<1xi32>,
                            %qo1: tensor<9xi32>, %kp1: tensor<9xi32>, %ki1: tensor<?xi32>, %kl1: tensor<8xi32>,
                            %o: tensor<8x32x128xf16>, %lse: tensor<8x32xf32>)
    -> (tensor<8x32x128xf16>, tensor<8x32xf32>) {
  %r:2 = cascade.multi_level_attention q(%q : tensor<8x32x128xf16>) kv(%cache : tensor<?x2x16x8x128xf16>)
      qo_indptr(%qo0, %qo1 : tensor<2xi32>, tensor<9xi32>) kv_indptr(%kp0, %kp1 : tensor<2xi32>, tensor<9xi32>)
      kv_indices(%ki0, %ki1 : tensor<?xi32>, tensor<?xi32>) kv_last_page_len(%kl0, %kl1 : tensor<1xi32>, tensor<8xi32>)
      outs(%o, %lse : tensor<8x32x128xf16>, tensor<8x32xf32>) {page_size = 16 : i64}
      -> tensor<8x32x128xf16>, tensor<8x32xf32>
  return %r#0, %r#1 : tensor<8x32x128xf16>, tensor<8x32xf32>
}

// On memrefs: level 0 writes into the destination buffers, later levels into
// memref.alloc temporaries that are freed after their merge; no results.
// CHECK-LABEL: func.func @two_level_memref
// CHECK-SAME: (%[[Q:[^:]*]]: memref<?x32x128xf16>, %[[C:[^:]*]]: memref<?x2x16x8x128xf16>,
// CHECK-SAME: %[[QO0:[^:]*]]: memref<2xi32>, %[[KP0:[^:]*]]: memref<2xi32>, %[[KI0:[^:]*]]: memref<?xi32>, %[[KL0:[^:]*]]: memref<1xi32>,
// CHECK-SAME: %[[QO1:[^:]*]]: memref<?xi32>, %[[KP1:[^:]*]]: memref<?xi32>, %[[KI1:[^:]*]]: memref<?xi32>, %[[KL1:[^:]*]]: memref<?xi32>,
// CHECK-SAME: %[[O:[^:]*]]: memref<?x32x128xf16>, %[[LSE:[^:]*]]: memref<?x32xf32>)
// CHECK: %[[C0:.*]] = arith.constant 0 : index
// CHECK: cascade.paged_attention q(%[[Q]] : memref<?x32x128xf16>) kv(%[[C]] : memref<?x2x16x8x128xf16>)
// CHECK-SAME: qo_indptr(%[[QO0]] : memref<2xi32>) kv_indptr(%[[KP0]] : memref<2xi32>) kv_indices(%[[KI0]] : memref<?xi32>) kv_last_page_len(%[[KL0]] : memref<1xi32>)
// CHECK-SAME: outs(%[[O]], %[[LSE]] : memref<?x32x128xf16>, memref<?x32xf32>) {page_size = 16 : i64, window_left = 64 : i64}{{$}}
// CHECK: %[[DV:.*]] = memref.dim %[[O]], %[[C0]] : memref<?x32x128xf16>
// CHECK: %[[TV:.*]] = memref.alloc(%[[DV]]) : memref<?x32x128xf16>
// CHECK: %[[DS:.*]] = memref.dim %[[LSE]], %[[C0]] : memref<?x32xf32>
// CHECK: %[[TS:.*]] = memref.alloc(%[[DS]]) : memref<?x32xf32>
// CHECK: cascade.paged_attention q(%[[Q]] : memref<?x32x128xf16>) kv(%[[C]] : memref<?x2x16x8x128xf16>)
// CHECK-SAME: qo_indptr(%[[QO1]] : memref<?xi32>) kv_indptr(%[[KP1]] : memref<?xi32>) kv_indices(%[[KI1]] : memref<?xi32>) kv_last_page_len(%[[KL1]] : memref<?xi32>)
// CHECK-SAME: outs(%[[TV]], %[[TS]] : memref<?x32x128xf16>, memref<?x32xf32>) {causal, page_size = 16 : i64, window_left = 64 : i64}{{$}}
// CHECK: cascade.merge_state_in_place ins(%[[TV]], %[[TS]] : memref<?x32x128xf16>, memref<?x32xf32>)
// CHECK-SAME: outs(%[[O]], %[[LSE]] : memref<?x32x128xf16>, memref<?x32xf32>){{$}}
// CHECK: memref.dealloc %[[TV]] : memref<?x32x128xf16>
// CHECK: memref.dealloc %[[TS]] : memref<?x32xf32>
// CHECK-NEXT: return{{$}}
func.func @two_level_memref(%q: memref<?x32x128xf16>, %cache: memref<?x2x16x8x128xf16>,
                            %qo0: memref<2xi32>, %kp0: memref<2xi32>, %ki0: memref<?xi32>, %kl0: memref<1xi32>,
                            %qo1: memref<?xi32>, %kp1: memref<?xi32>, %ki1: memref<?xi32>, %kl1: memref<?xi32>,
                            %o: memref<?x32x128xf16>, %lse: memref<?x32xf32>) {
  cascade.multi_level_attention q(%q : memref<?x32x128xf16>) kv(%cache : memref<?x2x16x8x128xf16>)
      qo_indptr(%qo0, %qo1 : memref<2xi32>, memref<?xi32>) kv_indptr(%kp0, %kp1 : memref<2xi32>, memref<?xi32>)
      kv_indices(%ki0, %ki1 : memref<?xi32>, memref<?xi32>) kv_last_page_len(%kl0, %kl1 : memref<1xi32>, memref<?xi32>)
      outs(%o, %lse : memref<?x32x128xf16>, memref<?x32xf32>) {page_size = 16 : i64, causal, window_left = 64 : i64}
  return
}

// A 3-level cascade on memrefs: two temporaries pairs, each freed after its
// merge into the destination buffers.
// CHECK-LABEL: func.func @three_level_memref
// CHECK-SAME: %[[O:[^:]*]]: memref<?x32x128xf16>, %[[LSE:[^:]*]]: memref<?x32xf32>)
// CHECK: cascade.paged_attention {{.*}} outs(%[[O]], %[[LSE]] : {{[^)]*}}) {page_size = 16 : i64}{{$}}
// CHECK: %[[TV1:.*]] = memref.alloc
// CHECK: %[[TS1:.*]] = memref.alloc
// CHECK: cascade.paged_attention {{.*}} outs(%[[TV1]], %[[TS1]] : {{[^)]*}}) {page_size = 16 : i64}{{$}}
// CHECK: cascade.merge_state_in_place ins(%[[TV1]], %[[TS1]] : {{[^)]*}}) outs(%[[O]], %[[LSE]] :
// CHECK: memref.dealloc %[[TV1]]
// CHECK: memref.dealloc %[[TS1]]
// CHECK: %[[TV2:.*]] = memref.alloc
// CHECK: %[[TS2:.*]] = memref.alloc
// CHECK: cascade.paged_attention {{.*}} outs(%[[TV2]], %[[TS2]] : {{[^)]*}}) {causal, page_size = 16 : i64}{{$}}
// CHECK: cascade.merge_state_in_place ins(%[[TV2]], %[[TS2]] : {{[^)]*}}) outs(%[[O]], %[[LSE]] :
// CHECK: memref.dealloc %[[TV2]]
// CHECK: memref.dealloc %[[TS2]]
// CHECK-NOT: cascade.
// CHECK: return
func.func @three_level_memref(%q: memref<?x32x128xf16>, %cache: memref<?x2x16x8x128xf16>,
                              %qo0: memref<2xi32>, %qo1: memref<?xi32>, %qo2: memref<?xi32>,
                              %kp0: memref<2xi32>, %kp1: memref<?xi32>, %kp2: memref<?xi32>,
                              %ki0: memref<?xi32>, %ki1: memref<?xi32>, %ki2: memref<?xi32>,
                              %kl0: memref<1xi32>, %kl1: memref<?xi32>, %kl2: memref<?xi32>,
                              %o: memref<?x32x128xf16>, %lse: memref<?x32xf32>) {
  cascade.multi_level_attention q(%q : memref<?x32x128xf16>) kv(%cache : memref<?x2x16x8x128xf16>)
      qo_indptr(%qo0, %qo1, %qo2 : memref<2xi32>, memref<?xi32>, memref<?xi32>)
      kv_indptr(%kp0, %kp1, %kp2 : memref<2xi32>, memref<?xi32>, memref<?xi32>)
      kv_indices(%ki0, %ki1, %ki2 : memref<?xi32>, memref<?xi32>, memref<?xi32>)
      kv_last_page_len(%kl0, %kl1, %kl2 : memref<1xi32>, memref<?xi32>, memref<?xi32>)
      outs(%o, %lse : memref<?x32x128xf16>, memref<?x32xf32>) {page_size = 16 : i64, causal}
  return
}

// One level: a single paged_attention into the destinations, which keeps
// `causal` (it is the last level); no temporaries, no merge.
// CHECK-LABEL: func.func @one_level
// CHECK-SAME: %[[O:[^:]*]]: tensor<?x32x128xf16>, %[[LSE:[^:]*]]: tensor<?x32xf32>)
// CHECK-NOT: tensor.empty
// CHECK: %[[R:.*]]:2 = cascade.paged_attention {{.*}} outs(%[[O]], %[[LSE]] : tensor<?x32x128xf16>, tensor<?x32xf32>) {causal, page_size = 16 : i64}
// CHECK-NOT: cascade.merge_state_in_place
// CHECK-NOT: tensor.empty
// CHECK: return %[[R]]#0, %[[R]]#1
func.func @one_level(%q: tensor<?x32x128xf16>, %cache: tensor<?x2x16x8x128xf16>,
                     %qo: tensor<?xi32>, %kp: tensor<?xi32>, %ki: tensor<?xi32>, %kl: tensor<?xi32>,
                     %o: tensor<?x32x128xf16>, %lse: tensor<?x32xf32>)
    -> (tensor<?x32x128xf16>, tensor<?x32xf32>) {
  %r:2 = cascade.multi_level_attention q(%q : tensor<?x32x128xf16>) kv(%cache : tensor<?x2x16x8x128xf16>)
      qo_indptr(%qo : tensor<?xi32>) kv_indptr(%kp : tensor<?xi32>)
      kv_indices(%ki : tensor<?xi32>) kv_last_page_len(%kl : tensor<?xi32>)
      outs(%o, %lse : tensor<?x32x128xf16>, tensor<?x32xf32>) {page_size = 16 : i64, causal}
      -> tensor<?x32x128xf16>, tensor<?x32xf32>
  return %r#0, %r#1 : tensor<?x32x128xf16>, tensor<?x32xf32>
}

// One level on memrefs.
// CHECK-LABEL: func.func @one_level_memref
// CHECK-NOT: memref.alloc
// CHECK: cascade.paged_attention {{.*}} {page_size = 16 : i64}{{$}}
// CHECK-NOT: cascade.merge_state_in_place
// CHECK-NOT: memref.alloc
// CHECK: return
func.func @one_level_memref(%q: memref<?x32x128xf16>, %cache: memref<?x2x16x8x128xf16>,
                            %qo: memref<?xi32>, %kp: memref<?xi32>, %ki: memref<?xi32>, %kl: memref<?xi32>,
                            %o: memref<?x32x128xf16>, %lse: memref<?x32xf32>) {
  cascade.multi_level_attention q(%q : memref<?x32x128xf16>) kv(%cache : memref<?x2x16x8x128xf16>)
      qo_indptr(%qo : memref<?xi32>) kv_indptr(%kp : memref<?xi32>)
      kv_indices(%ki : memref<?xi32>) kv_last_page_len(%kl : memref<?xi32>)
      outs(%o, %lse : memref<?x32x128xf16>, memref<?x32xf32>) {page_size = 16 : i64}
  return
}

// Levels marked in decode_levels become decodes (no qo_indptr, never
// causal): the unique suffixes of a decode cascade.
// CHECK-LABEL: func.func @decode_level
// CHECK: cascade.paged_attention {{.*}} qo_indptr(%arg2 : tensor<2xi32>)
// CHECK: %[[D:.*]]:2 = cascade.paged_attention q(%arg0 : tensor<?x32x128xf16>) kv(%arg1 : tensor<?x2x16x8x128xf16>) kv_indptr(%arg7 : tensor<?xi32>)
// CHECK-SAME: {page_size = 16 : i64}
// CHECK: cascade.merge_state_in_place ins(%[[D]]#0, %[[D]]#1
// FUSED-LABEL: func.func @decode_level
// FUSED: %[[P:.*]]:2 = cascade.paged_attention {{.*}} qo_indptr(%arg2 : tensor<2xi32>)
// FUSED: cascade.paged_attention q(%arg0 : tensor<?x32x128xf16>) kv(%arg1 : tensor<?x2x16x8x128xf16>) kv_indptr(%arg7 : tensor<?xi32>) {{.*}} outs(%[[P]]#0, %[[P]]#1 : {{.*}}) {accumulate, page_size = 16 : i64}
func.func @decode_level(%q: tensor<?x32x128xf16>, %cache: tensor<?x2x16x8x128xf16>,
                        %qo0: tensor<2xi32>, %kp0: tensor<2xi32>, %ki0: tensor<?xi32>, %kl0: tensor<1xi32>,
                        %qo1: tensor<?xi32>, %kp1: tensor<?xi32>, %ki1: tensor<?xi32>, %kl1: tensor<?xi32>,
                        %o: tensor<?x32x128xf16>, %lse: tensor<?x32xf32>)
    -> (tensor<?x32x128xf16>, tensor<?x32xf32>) {
  %r:2 = cascade.multi_level_attention q(%q : tensor<?x32x128xf16>) kv(%cache : tensor<?x2x16x8x128xf16>)
      qo_indptr(%qo0, %qo1 : tensor<2xi32>, tensor<?xi32>) kv_indptr(%kp0, %kp1 : tensor<2xi32>, tensor<?xi32>)
      kv_indices(%ki0, %ki1 : tensor<?xi32>, tensor<?xi32>) kv_last_page_len(%kl0, %kl1 : tensor<1xi32>, tensor<?xi32>)
      outs(%o, %lse : tensor<?x32x128xf16>, tensor<?x32xf32>)
      {page_size = 16 : i64, causal, decode_levels = array<i1: false, true>}
      -> tensor<?x32x128xf16>, tensor<?x32xf32>
  return %r#0, %r#1 : tensor<?x32x128xf16>, tensor<?x32xf32>
}
