// RUN: cascade-opt %s --convert-cascade-to-gpu | FileCheck %s

// One kernel per distinct static configuration: the two head_dim = 64 merges
// share a gpu.func, the head_dim = 128 merge gets its own; every op still
// gets its own launch, in program order.
// CHECK-LABEL: func.func @two
// CHECK: gpu.launch_func @cascade_kernels::@cascade_merge_state_f16_d64_b2
// CHECK: gpu.launch_func @cascade_kernels::@cascade_merge_state_f16_d64_b2
// CHECK: gpu.launch_func @cascade_kernels::@cascade_merge_state_f16_d128_b2
// CHECK: gpu.module @cascade_kernels
// CHECK-COUNT-2: gpu.func
// CHECK-NOT: gpu.func
func.func @two(%va: memref<?x8x64xf16>, %sa: memref<?x8xf32>, %v: memref<?x8x64xf16>, %s: memref<?x8xf32>,
               %wa: memref<?x8x128xf16>, %ta: memref<?x8xf32>, %w: memref<?x8x128xf16>, %t: memref<?x8xf32>) {
  cascade.merge_state ins(%va, %sa, %va, %sa : memref<?x8x64xf16>, memref<?x8xf32>, memref<?x8x64xf16>, memref<?x8xf32>)
      outs(%v, %s : memref<?x8x64xf16>, memref<?x8xf32>)
  cascade.merge_state ins(%v, %s, %va, %sa : memref<?x8x64xf16>, memref<?x8xf32>, memref<?x8x64xf16>, memref<?x8xf32>)
      outs(%v, %s : memref<?x8x64xf16>, memref<?x8xf32>)
  cascade.merge_state ins(%wa, %ta, %wa, %ta : memref<?x8x128xf16>, memref<?x8xf32>, memref<?x8x128xf16>, memref<?x8xf32>)
      outs(%w, %t : memref<?x8x128xf16>, memref<?x8xf32>)
  return
}
