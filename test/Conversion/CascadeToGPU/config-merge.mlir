// RUN: cascade-opt %s --cascade-select-kernel-config | FileCheck %s
// RUN: cascade-opt %s --cascade-select-kernel-config=chip=sm_86 | FileCheck %s
// RUN: cascade-opt %s --cascade-select-kernel-config --convert-cascade-to-gpu | FileCheck %s --check-prefix=KERNELS

// The kernel configuration of every op is chosen once and recorded in the IR;
// the lowering builds one kernel per (static configuration, kernel
// configuration) and names it by both.
// Merge kernels use no dynamic shared memory: the same on every chip.

// Merges: head_dim / 8 threads per state, 128 threads a block.
// CHECK-LABEL: func.func @merge
// CHECK: cascade.merge_state {{.*}} {cascade.kernel_config = #cascade.kernel_config<merge, threads = [128, 1, 1], q_tile = 8, kv_tile = 0, stages = 1>}
func.func @merge(%va: memref<?x32x128xf16>, %sa: memref<?x32xf32>, %vb: memref<?x32x128xf16>,
                 %sb: memref<?x32xf32>, %v: memref<?x32x128xf16>, %s: memref<?x32xf32>) {
  cascade.merge_state ins(%va, %sa, %vb, %sb : memref<?x32x128xf16>, memref<?x32xf32>, memref<?x32x128xf16>, memref<?x32xf32>)
      outs(%v, %s : memref<?x32x128xf16>, memref<?x32xf32>)
  return
}

// KERNELS: gpu.module @cascade_kernels
// KERNELS-DAG: gpu.func @cascade_merge_state_f16_d128_b2_t128(
