// RUN: cascade-opt %s --convert-cascade-to-gpu | FileCheck %s

// A launch with zero blocks is a CUDA error, and an empty batch (L = 0 rows)
// is legal input: every launch is guarded by its work count.
// CHECK-LABEL: func.func @merge_states_maybe_empty
// CHECK: %[[BASE:.*]], %[[OFF:.*]], %[[SIZES:.*]]:2, %[[STRIDES:.*]]:2 = memref.extract_strided_metadata %arg3
// CHECK: %[[N:.*]] = arith.muli %{{.*}}, %[[SIZES]]#1 : index
// CHECK: %[[C0:.*]] = arith.constant 0 : index
// CHECK: %[[NONEMPTY:.*]] = arith.cmpi ugt, %[[N]], %[[C0]] : index
// CHECK: scf.if %[[NONEMPTY]] {
// CHECK: %[[BLOCKS:.*]] = arith.ceildivui %[[N]], %{{.*}} : index
// CHECK: gpu.launch_func @cascade_kernels::@cascade_merge_states_f16_d128_b2 blocks in (%[[BLOCKS]],
// CHECK: }
func.func @merge_states_maybe_empty(%vs: memref<?x4x32x128xf16>, %ss: memref<?x4x32xf32>,
                                    %v: memref<?x32x128xf16>, %s: memref<?x32xf32>) {
  cascade.merge_states ins(%vs, %ss : memref<?x4x32x128xf16>, memref<?x4x32xf32>)
      outs(%v, %s : memref<?x32x128xf16>, memref<?x32xf32>)
  return
}
