// RUN: cascade-opt %s --convert-cascade-to-gpu | FileCheck %s

// A launch with zero blocks is a CUDA error, and an empty batch (L = 0 rows)
// is legal input: every launch is guarded by its work count.
// CHECK-LABEL: func.func @merge_states_maybe_empty
// CHECK-DAG: %[[C0:.*]] = arith.constant 0 : index
// CHECK-DAG: %[[C1:.*]] = arith.constant 1 : index
// CHECK-DAG: %[[HEADS:.*]] = memref.dim %arg3, %[[C1]] : memref<?x32xf32>
// CHECK-DAG: %[[ROWS:.*]] = memref.dim %arg3, %[[C0]] : memref<?x32xf32>
// CHECK: %[[N:.*]] = arith.muli %[[ROWS]], %[[HEADS]] : index
// CHECK: %[[ZERO:.*]] = arith.constant 0 : index
// CHECK: %[[NONEMPTY:.*]] = arith.cmpi ugt, %[[N]], %[[ZERO]] : index
// CHECK: scf.if %[[NONEMPTY]] {
// CHECK: %[[BLOCKS:.*]] = arith.ceildivui %[[N]], %{{.*}} : index
// CHECK: gpu.launch_func @cascade_kernels::@cascade_merge_states_f16_d128_b2_t128 blocks in (%[[BLOCKS]],
// CHECK: }
func.func @merge_states_maybe_empty(%vs: memref<?x4x32x128xf16>, %ss: memref<?x4x32xf32>,
                                    %v: memref<?x32x128xf16>, %s: memref<?x32xf32>) {
  cascade.merge_states ins(%vs, %ss : memref<?x4x32x128xf16>, memref<?x4x32xf32>)
      outs(%v, %s : memref<?x32x128xf16>, memref<?x32xf32>)
  return
}
