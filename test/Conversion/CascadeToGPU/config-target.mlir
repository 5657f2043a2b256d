// RUN: cascade-opt %s --cascade-select-kernel-config | FileCheck %s
// RUN: cascade-opt %s --cascade-select-kernel-config=chip=sm_86 | FileCheck %s

// Selection reads the chip from the #nvvm.target attached to the module's
// gpu.modules: here sm_86 (99 KiB of shared memory a block), so the GQA-16
// decode gets sm_86's configuration (config-sm86-smem.mlir) without a chip
// option. A chip option that agrees changes nothing; one that disagrees is
// an error (config-target-errors.mlir).

// CHECK: gpu.module @cascade_kernels [#nvvm.target<chip = "sm_86">]
// CHECK-LABEL: func.func @decode_g16
// CHECK: #cascade.kernel_config<mma_sync, threads = [32, 1, 4], q_tile = 16, kv_tile = 64, stages = 2>
module attributes {gpu.container_module} {
  gpu.module @cascade_kernels [#nvvm.target<chip = "sm_86">] {
  }
  func.func @decode_g16(%q: memref<?x32x128xf16>, %cache: memref<?x2x16x2x128xf16>,
                        %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>,
                        %o: memref<?x32x128xf16>, %lse: memref<?x32xf32>) {
    cascade.paged_attention q(%q : memref<?x32x128xf16>) kv(%cache : memref<?x2x16x2x128xf16>)
        kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>) kv_last_page_len(%last : memref<?xi32>)
        outs(%o, %lse : memref<?x32x128xf16>, memref<?x32xf32>) {page_size = 16 : i64}
    return
  }
}
