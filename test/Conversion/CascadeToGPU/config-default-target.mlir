// RUN: cascade-opt %s --convert-cascade-to-gpu | FileCheck %s

// convert-cascade-to-gpu gives an op without a #cascade.kernel_config the
// selection pass's default for the chip the module's kernels target: here an
// attached sm_86 target (99 KiB of shared memory a block), so GQA 16 at
// head_dim 128 runs with 2 stages of 64-token tiles, not sm_90's 3 stages of
// 128-token tiles (196 KiB, which sm_86 cannot launch).

// CHECK: gpu.module @cascade_kernels [#nvvm.target<chip = "sm_86">]
// CHECK: gpu.func @cascade_decode_mma_{{.*}}_w1x4_q16_kv64_s2(
// CHECK-NOT: _kv128_s3(
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
