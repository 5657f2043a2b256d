// cascade-to-ptx chooses the kernels for its `chip`: the GQA-16 decode at
// head_dim 128 takes 196 KiB of shared memory on sm_90, 132 KiB on sm_80
// (163 KiB a block), 68 KiB on sm_86 (99 KiB a block).
// RUN: cascade-opt %s --cascade-to-ptx | FileCheck %s --check-prefix=SM90
// RUN: cascade-opt %s --cascade-to-ptx=chip=sm_80 | FileCheck %s --check-prefix=SM80
// RUN: cascade-opt %s --cascade-to-ptx=chip=sm_86 | FileCheck %s --check-prefix=SM86
// A chip that looks right but that selection has no limits for.
// RUN: not cascade-opt %s --cascade-to-ptx=chip=sm_75 2>&1 | FileCheck %s --check-prefix=UNKNOWN

// SM90: gpu.launch_func @cascade_kernels::@cascade_decode_mma_f16_f16_d128_g16_h2_p16_nhd_pool_w1x4_q16_kv128_s3 {{.*}} dynamic_shared_memory_size %c200704_i32
// SM90: gpu.binary @cascade_kernels  [#gpu.object<#nvvm.target<O = 3, chip = "sm_90", features = "+ptx80">
// Programmatic dependent launch is sm_90's: older chips' kernels have none.
// SM90-SAME: griddepcontrol.wait;
// SM80-NOT: griddepcontrol
// SM80: gpu.launch_func @cascade_kernels::@cascade_decode_mma_f16_f16_d128_g16_h2_p16_nhd_pool_w1x4_q16_kv128_s2 {{.*}} dynamic_shared_memory_size %c135168_i32
// SM80: gpu.binary @cascade_kernels  [#gpu.object<#nvvm.target<O = 3, chip = "sm_80", features = "+ptx80">
// SM86: gpu.launch_func @cascade_kernels::@cascade_decode_mma_f16_f16_d128_g16_h2_p16_nhd_pool_w1x4_q16_kv64_s2 {{.*}} dynamic_shared_memory_size %c69632_i32
// SM86: gpu.binary @cascade_kernels  [#gpu.object<#nvvm.target<O = 3, chip = "sm_86", features = "+ptx80">
// UNKNOWN: cascade-to-ptx: no kernel selection for chip 'sm_75' (known: sm_80, sm_86, sm_87, sm_89, sm_90, sm_90a)
func.func @decode_g16(%q: memref<?x32x128xf16>, %cache: memref<?x2x16x2x128xf16>,
                      %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>,
                      %o: memref<?x32x128xf16>, %lse: memref<?x32xf32>) {
  cascade.paged_attention q(%q : memref<?x32x128xf16>) kv(%cache : memref<?x2x16x2x128xf16>)
      kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>) kv_last_page_len(%last : memref<?xi32>)
      outs(%o, %lse : memref<?x32x128xf16>, memref<?x32xf32>) {page_size = 16 : i64}
  return
}
