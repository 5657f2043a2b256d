// RUN: cascade-opt %s -split-input-file -cascade-lower-plans -cse | FileCheck %s

// cascade-lower-plans: a plan becomes a call of the runtime shim with the
// level's static facts, a planned level the split launch or the
// self-scheduled one as the plan says at run time.

!prefill = !cascade.plan<prefill, heads = 32 / 8, head_dim = 128, page_size = 16>

// CHECK: llvm.mlir.global internal @__cascade_plan_slot_0() {{.*}} : !llvm.ptr {
// CHECK-NEXT: llvm.mlir.zero : !llvm.ptr
// CHECK-LABEL: func.func @prefill(
// CHECK-SAME: %[[Q:[^:]*]]: memref<?x32x128xf16>
// CHECK: %[[SLOT:.*]] = llvm.mlir.addressof @__cascade_plan_slot_0 : !llvm.ptr
// CHECK: %[[QO:.*]] = memref.cast %{{.*}} : memref<?xi32> to memref<?xi32, strided<[?], offset: ?>>
// No kv_indices: an empty array.
// CHECK: memref.alloca() : memref<0xi32>
// Prefill, 32 / 8 heads, head_dim 128, page 16, not graph mode, occupancy 3
// (given), the kernel's query tile 64, no fixed split, split allowed.
// CHECK-DAG: %[[ONE:.*]] = arith.constant 1 : i64
// CHECK-DAG: %[[OCC:.*]] = arith.constant 3 : i64
// CHECK-DAG: %[[TILE:.*]] = arith.constant 64 : i64
// CHECK: %[[PLAN:.*]] = call @cascade_mgpu_plan(%[[SLOT]], %[[QO]], %{{.*}}, %{{.*}}, %{{.*}}, %[[ONE]], %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[OCC]], %[[TILE]], %{{.*}}, %{{.*}}) : (!llvm.ptr, memref<?xi32, strided<[?], offset: ?>>, memref<?xi32, strided<[?], offset: ?>>, memref<?xi32, strided<[?], offset: ?>>, memref<?xi32, strided<[?], offset: ?>>, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64) -> !llvm.ptr
// CHECK: %[[S:.*]] = call @cascade_mgpu_plan_split_kv(%[[PLAN]], %[[TILE]]) : (!llvm.ptr, i64) -> i32
// CHECK: %[[SPLIT:.*]] = arith.cmpi ne, %[[S]]
// CHECK: scf.if %[[SPLIT]] {
// CHECK: %[[RI:.*]] = func.call @cascade_mgpu_plan_i32(%[[PLAN]], %{{.*}}) : (!llvm.ptr, i64) -> memref<?xi32>
// CHECK: %[[MASK:.*]] = func.call @cascade_mgpu_plan_i8(%[[PLAN]], %{{.*}}) : (!llvm.ptr, i64) -> memref<?xi8>
// CHECK: %[[TV:.*]] = func.call @cascade_mgpu_plan_tmp_v(%[[PLAN]]) : (!llvm.ptr) -> memref<?x?x?xf32>
// CHECK: %[[TS:.*]] = func.call @cascade_mgpu_plan_tmp_s(%[[PLAN]]) : (!llvm.ptr) -> memref<?x?xf32>
// CHECK: cascade.paged_attention q(%[[Q]] : {{.*}} plan(%[[RI]], %{{.*}}, %{{.*}}, %[[MASK]], %{{.*}}, %[[TV]], %[[TS]], %{{.*}}, %{{.*}} : memref<?xi32>, memref<?xi32>, memref<?xi32>, memref<?xi8>, memref<?xi32>, memref<?x?x?xf32>, memref<?x?xf32>, memref<?xi32>, memref<?xi32>) outs(
// CHECK-SAME: cascade.kernel_config = #cascade.kernel_config<mma_sync, threads = [32, 4, 1], q_tile = 64, kv_tile = 32, stages = 2>
// CHECK: } else {
// CHECK: cascade.paged_attention q(%[[Q]] : {{.*}} kv_last_page_len(%{{.*}} : memref<?xi32>) outs(
// CHECK-SAME: cascade.kernel_config = #cascade.kernel_config<mma_sync, threads = [32, 4, 1], q_tile = 64, kv_tile = 32, stages = 2>
// CHECK: func.func private @cascade_mgpu_plan(!llvm.ptr, memref<?xi32, strided<[?], offset: ?>>, {{.*}}) -> !llvm.ptr attributes {llvm.emit_c_interface}
// CHECK: func.func private @cascade_mgpu_plan_split_kv(!llvm.ptr, i64) -> i32
// CHECK-NOT: llvm.emit_c_interface
// CHECK: func.func private @cascade_mgpu_plan_i32(!llvm.ptr, i64) -> memref<?xi32> attributes {llvm.emit_c_interface}
func.func @prefill(%q: memref<?x32x128xf16>, %c: memref<?x2x16x8x128xf16>,
    %qo: memref<?xi32>, %kp: memref<?xi32>, %ki: memref<?xi32>, %kl: memref<?xi32>,
    %hqo: memref<?xi32>, %hkp: memref<?xi32>, %hkl: memref<?xi32>,
    %o: memref<?x32x128xf16>, %lse: memref<?x32xf32>) {
  %p = cascade.plan qo_indptr(%hqo : memref<?xi32>) kv_indptr(%hkp : memref<?xi32>)
      kv_last_page_len(%hkl : memref<?xi32>) {occupancy = 3 : i64} : !prefill
  cascade.paged_attention q(%q : memref<?x32x128xf16>) kv(%c : memref<?x2x16x8x128xf16>)
      qo_indptr(%qo : memref<?xi32>) kv_indptr(%kp : memref<?xi32>) kv_indices(%ki : memref<?xi32>)
      kv_last_page_len(%kl : memref<?xi32>) plan(%p : !prefill)
      outs(%o, %lse : memref<?x32x128xf16>, memref<?x32xf32>)
      {page_size = 16 : i64, cascade.kernel_config = #cascade.kernel_config<mma_sync, threads = [32, 4, 1], q_tile = 64, kv_tile = 32, stages = 2>}
  return
}

// -----

// Graph mode, split into a plan function and a run function: the plan
// crosses the call as an !llvm.ptr, the kernel's configuration is found
// through the plan's type, the occupancy estimated for it (rows decode: 128
// threads -> 4 blocks an SM on sm_90), the capacity passed as graph_rows.

!graph = !cascade.plan<decode, heads = 32 / 8, head_dim = 128, page_size = 16, graph_rows = 128>

// CHECK-LABEL: func.func @plan_step(
// CHECK-SAME: -> !llvm.ptr
// CHECK-DAG: %[[ROWS:.*]] = arith.constant 128 : i64
// CHECK-DAG: %[[OCC:.*]] = arith.constant 4 : i64
// CHECK-DAG: %[[ZERO:.*]] = arith.constant 0 : i64
// CHECK: %[[P:.*]] = call @cascade_mgpu_plan({{.*}}, %[[ZERO]], %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[ROWS]], %[[OCC]], %[[ZERO]], %{{.*}}, %{{.*}})
// CHECK: return %[[P]] : !llvm.ptr
// CHECK-LABEL: func.func @run_step(
// CHECK-SAME: %[[PLAN:[^:]*]]: !llvm.ptr
// CHECK: call @cascade_mgpu_plan_split_kv(%[[PLAN]], %{{.*}})
// CHECK: scf.if
// CHECK-LABEL: func.func @step(
// CHECK: %[[H:.*]] = call @plan_step(%{{.*}}, %{{.*}}) : (memref<?xi32>, memref<?xi32>) -> !llvm.ptr
// CHECK: call @run_step(%{{.*}}, %[[H]], %{{.*}}, %{{.*}})
func.func @plan_step(%hkp: memref<?xi32>, %hkl: memref<?xi32>) -> !graph {
  %p = cascade.plan kv_indptr(%hkp : memref<?xi32>) kv_last_page_len(%hkl : memref<?xi32>) : !graph
  return %p : !graph
}
func.func @run_step(%q: memref<128x32x128xf16>, %c: memref<?x2x16x8x128xf16>,
    %kp: memref<129xi32>, %ki: memref<?xi32>, %kl: memref<128xi32>, %p: !graph,
    %o: memref<128x32x128xf16>, %lse: memref<128x32xf32>) {
  cascade.paged_attention q(%q : memref<128x32x128xf16>) kv(%c : memref<?x2x16x8x128xf16>)
      kv_indptr(%kp : memref<129xi32>) kv_indices(%ki : memref<?xi32>) kv_last_page_len(%kl : memref<128xi32>)
      plan(%p : !graph) outs(%o, %lse : memref<128x32x128xf16>, memref<128x32xf32>)
      {page_size = 16 : i64, cascade.kernel_config = #cascade.kernel_config<rows, threads = [16, 1, 8], q_tile = 1, kv_tile = 32, stages = 2>}
  return
}
func.func @step(%hkp: memref<?xi32>, %hkl: memref<?xi32>, %q: memref<128x32x128xf16>, %c: memref<?x2x16x8x128xf16>,
    %kp: memref<129xi32>, %ki: memref<?xi32>, %kl: memref<128xi32>,
    %o: memref<128x32x128xf16>, %lse: memref<128x32xf32>) {
  %p = call @plan_step(%hkp, %hkl) : (memref<?xi32>, memref<?xi32>) -> !graph
  call @run_step(%q, %c, %kp, %ki, %kl, %p, %o, %lse) : (memref<128x32x128xf16>, memref<?x2x16x8x128xf16>, memref<129xi32>, memref<?xi32>, memref<128xi32>, !graph, memref<128x32x128xf16>, memref<128x32xf32>) -> ()
  return
}

// -----

// An auto_cascade plan: the runtime's automatic cascade of the batch. Two
// levels found: the shared level (a prefill over the groups, on the level's
// own arrays, with its own tensor-core kernel whose query tile the plan is
// made for), then each request's own pages merged into it; else the batch
// as it is. Every level split or not as its plan says.

!auto = !cascade.plan<decode, heads = 32 / 8, head_dim = 128, page_size = 16, auto_cascade>

// CHECK-LABEL: func.func @auto(
// CHECK-DAG: %[[C0:.*]] = arith.constant 0 : i64
// CHECK-DAG: %[[C4:.*]] = arith.constant 4 : i64
// CHECK-DAG: %[[C128:.*]] = arith.constant 128 : i64
// CHECK-DAG: %[[C2:.*]] = arith.constant 2 : i64
// Decode rows kernel: 4 blocks an SM; the shared level's kernel: q_tile 128,
// 2 blocks an SM (its grid, not the decode kernel's).
// CHECK: %[[PLAN:.*]] = call @cascade_mgpu_auto_plan(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[C128]], %{{.*}}, %[[C0]], %[[C4]], %[[C128]], %[[C2]])
// CHECK: %[[N:.*]] = call @cascade_mgpu_auto_num_levels(%[[PLAN]]) : (!llvm.ptr) -> i64
// CHECK: %[[TWO:.*]] = arith.cmpi eq, %[[N]], %[[C2]]
// CHECK: scf.if %[[TWO]] {
// CHECK: %[[L0:.*]] = func.call @cascade_mgpu_auto_level(%[[PLAN]], %[[C0]])
// CHECK: %[[QO:.*]] = func.call @cascade_mgpu_auto_array(%[[PLAN]], %[[C0]], %[[C0]]) : (!llvm.ptr, i64, i64) -> memref<?xi32>
// CHECK: %[[C1:.*]] = arith.constant 1 : i64
// CHECK: %[[KV:.*]] = func.call @cascade_mgpu_auto_array(%[[PLAN]], %[[C0]], %[[C1]])
// CHECK: func.call @cascade_mgpu_plan_split_kv(%[[L0]], %[[C128]])
// CHECK: scf.if
// CHECK: cascade.paged_attention {{.*}} qo_indptr(%[[QO]] : memref<?xi32>) kv_indptr(%[[KV]] : memref<?xi32>) {{.*}} plan(
// CHECK-SAME: {cascade.kernel_config = #cascade.kernel_config<mma_sync, threads = [32, 4, 1], q_tile = 128,
// CHECK: } else {
// CHECK: cascade.paged_attention {{.*}} qo_indptr(%[[QO]] : memref<?xi32>)
// CHECK: %[[L1:.*]] = func.call @cascade_mgpu_auto_level(%[[PLAN]], %[[C1]])
// CHECK: %[[OWN:.*]] = func.call @cascade_mgpu_auto_array(%[[PLAN]], %[[C1]], %[[C1]])
// CHECK: func.call @cascade_mgpu_plan_split_kv(%[[L1]], %[[C0]])
// CHECK: cascade.paged_attention {{.*}} kv_indptr(%[[OWN]] : memref<?xi32>) {{.*}} plan(
// CHECK-SAME: {accumulate, cascade.kernel_config = #cascade.kernel_config<rows,
// CHECK: } else {
// CHECK: %[[ONE:.*]] = func.call @cascade_mgpu_auto_level(%[[PLAN]], %[[C0]])
// CHECK: func.call @cascade_mgpu_plan_split_kv(%[[ONE]], %[[C0]])
// CHECK: cascade.paged_attention {{.*}} kv_indptr(%arg2 : memref<?xi32>)
// CHECK-NOT: accumulate
// CHECK-SAME: {cascade.kernel_config = #cascade.kernel_config<rows,
func.func @auto(%q: memref<?x32x128xf16>, %c: memref<?x2x16x8x128xf16>,
    %kp: memref<?xi32>, %ki: memref<?xi32>, %kl: memref<?xi32>,
    %hkp: memref<?xi32>, %hki: memref<?xi32>, %hkl: memref<?xi32>,
    %o: memref<?x32x128xf16>, %lse: memref<?x32xf32>) {
  %p = cascade.plan kv_indptr(%hkp : memref<?xi32>) kv_last_page_len(%hkl : memref<?xi32>)
      kv_indices(%hki : memref<?xi32>) : !auto
  cascade.paged_attention q(%q : memref<?x32x128xf16>) kv(%c : memref<?x2x16x8x128xf16>)
      kv_indptr(%kp : memref<?xi32>) kv_indices(%ki : memref<?xi32>) kv_last_page_len(%kl : memref<?xi32>)
      plan(%p : !auto) outs(%o, %lse : memref<?x32x128xf16>, memref<?x32xf32>)
      {page_size = 16 : i64, cascade.kernel_config = #cascade.kernel_config<rows, threads = [16, 1, 8], q_tile = 1, kv_tile = 32, stages = 2>}
  return
}

// -----

// An automatic cascade on sm_90a: its shared level runs as the plan splits
// it, so it gets the planned level's configuration, as an explicit
// cascade's shared level does (two consumer warpgroups over 128 rows), not
// the plain prefill's three over 192; the plan counts its work items in
// 128-row tiles on a grid of one such block an SM.

!auto = !cascade.plan<decode, heads = 32 / 8, head_dim = 128, page_size = 16, auto_cascade>

// CHECK-LABEL: func.func @auto_sm90a(
// CHECK-DAG: %[[C128:.*]] = arith.constant 128 : i64
// CHECK-DAG: %[[C1:.*]] = arith.constant 1 : i64
// CHECK: call @cascade_mgpu_auto_plan({{.*}}, %[[C128]], %[[C1]]) :
// CHECK: func.call @cascade_mgpu_plan_split_kv(%{{.*}}, %[[C128]])
// CHECK: cascade.paged_attention {{.*}} plan(
// CHECK-SAME: {cascade.kernel_config = #cascade.kernel_config<wgmma, threads = [128, 3, 1], q_tile = 128, kv_tile = 128, stages = 3>,
// CHECK: } else {
// CHECK: cascade.paged_attention
// CHECK-SAME: {cascade.kernel_config = #cascade.kernel_config<wgmma, threads = [128, 3, 1], q_tile = 128, kv_tile = 128, stages = 3>,
// CHECK-NOT: q_tile = 192
module attributes {gpu.container_module} {
  gpu.module @cascade_kernels [#nvvm.target<chip = "sm_90a">] {
  }
  func.func @auto_sm90a(%q: memref<?x32x128xf16>, %c: memref<?x2x16x8x128xf16>,
      %kp: memref<?xi32>, %ki: memref<?xi32>, %kl: memref<?xi32>,
      %hkp: memref<?xi32>, %hki: memref<?xi32>, %hkl: memref<?xi32>,
      %o: memref<?x32x128xf16>, %lse: memref<?x32xf32>) {
    %p = cascade.plan kv_indptr(%hkp : memref<?xi32>) kv_last_page_len(%hkl : memref<?xi32>)
        kv_indices(%hki : memref<?xi32>) : !auto
    cascade.paged_attention q(%q : memref<?x32x128xf16>) kv(%c : memref<?x2x16x8x128xf16>)
        kv_indptr(%kp : memref<?xi32>) kv_indices(%ki : memref<?xi32>) kv_last_page_len(%kl : memref<?xi32>)
        plan(%p : !auto) outs(%o, %lse : memref<?x32x128xf16>, memref<?x32xf32>)
        {page_size = 16 : i64, cascade.kernel_config = #cascade.kernel_config<rows, threads = [16, 1, 8], q_tile = 1, kv_tile = 32, stages = 2>}
    return
  }
}

// -----

// A wgmma level (sm_90a): the plan counts work items in the kernel's own
// query tile (128 rows), and one block an SM fits (384 threads launched
// with 168 registers each, 192 KiB of tiles).

!wg = !cascade.plan<prefill, heads = 32 / 8, head_dim = 128, page_size = 16>

// CHECK-LABEL: func.func @wgmma_prefill(
// CHECK-DAG: %[[ONE:.*]] = arith.constant 1 : i64
// CHECK-DAG: %[[TILE:.*]] = arith.constant 128 : i64
// CHECK: call @cascade_mgpu_plan(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[ONE]], %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[ONE]], %[[TILE]], %{{.*}}, %{{.*}})
// CHECK: call @cascade_mgpu_plan_split_kv(%{{.*}}, %[[TILE]])
func.func @wgmma_prefill(%q: memref<?x32x128xf16>, %c: memref<?x2x16x8x128xf16>,
    %qo: memref<?xi32>, %kp: memref<?xi32>, %ki: memref<?xi32>, %kl: memref<?xi32>,
    %hqo: memref<?xi32>, %hkp: memref<?xi32>, %hkl: memref<?xi32>,
    %o: memref<?x32x128xf16>, %lse: memref<?x32xf32>) {
  %p = cascade.plan qo_indptr(%hqo : memref<?xi32>) kv_indptr(%hkp : memref<?xi32>)
      kv_last_page_len(%hkl : memref<?xi32>) : !wg
  cascade.paged_attention q(%q : memref<?x32x128xf16>) kv(%c : memref<?x2x16x8x128xf16>)
      qo_indptr(%qo : memref<?xi32>) kv_indptr(%kp : memref<?xi32>) kv_indices(%ki : memref<?xi32>)
      kv_last_page_len(%kl : memref<?xi32>) plan(%p : !wg)
      outs(%o, %lse : memref<?x32x128xf16>, memref<?x32xf32>)
      {page_size = 16 : i64, cascade.kernel_config = #cascade.kernel_config<wgmma, threads = [128, 3, 1], q_tile = 128, kv_tile = 128, stages = 3>}
  return
}

// -----

// An automatic cascade: the shared level keeps the sinks, the request's own
// level (which accumulates into it) does not, so they join once.
!auto = !cascade.plan<decode, heads = 32 / 8, head_dim = 128, page_size = 16, auto_cascade>

// CHECK-LABEL: func.func @auto_sinks(
// CHECK: scf.if
// CHECK: cascade.paged_attention {{.*}} sinks(%arg5 : memref<32xf32>) plan(
// CHECK: } else {
// CHECK: cascade.paged_attention {{.*}} sinks(%arg5 : memref<32xf32>) outs(
// CHECK: cascade.paged_attention
// CHECK-NOT: sinks(
// CHECK-SAME: accumulate
// CHECK: } else {
// CHECK: cascade.paged_attention {{.*}} sinks(%arg5 : memref<32xf32>)
func.func @auto_sinks(%q: memref<?x32x128xf16>, %c: memref<?x2x16x8x128xf16>,
    %kp: memref<?xi32>, %ki: memref<?xi32>, %kl: memref<?xi32>, %sinks: memref<32xf32>,
    %hkp: memref<?xi32>, %hki: memref<?xi32>, %hkl: memref<?xi32>,
    %o: memref<?x32x128xf16>, %lse: memref<?x32xf32>) {
  %p = cascade.plan kv_indptr(%hkp : memref<?xi32>) kv_last_page_len(%hkl : memref<?xi32>)
      kv_indices(%hki : memref<?xi32>) : !auto
  cascade.paged_attention q(%q : memref<?x32x128xf16>) kv(%c : memref<?x2x16x8x128xf16>)
      kv_indptr(%kp : memref<?xi32>) kv_indices(%ki : memref<?xi32>) kv_last_page_len(%kl : memref<?xi32>)
      sinks(%sinks : memref<32xf32>)
      plan(%p : !auto) outs(%o, %lse : memref<?x32x128xf16>, memref<?x32xf32>)
      {page_size = 16 : i64, cascade.kernel_config = #cascade.kernel_config<rows, threads = [16, 1, 8], q_tile = 1, kv_tile = 32, stages = 2>}
  return
}
