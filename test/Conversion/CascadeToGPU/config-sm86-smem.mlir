// RUN: cascade-opt %s --cascade-select-kernel-config=chip=sm_86 | FileCheck %s
// RUN: cascade-opt %s --cascade-select-kernel-config=chip=sm_89 | FileCheck %s
// RUN: cascade-opt %s --cascade-select-kernel-config=chip=sm_86 --convert-cascade-to-gpu | FileCheck %s --check-prefix=KERNELS
// The same ops on sm_90 keep their deeper pipelines and longer tiles.
// RUN: cascade-opt %s --cascade-select-kernel-config=chip=sm_90 | FileCheck %s --check-prefix=SM90

// sm_86 and sm_89 give a block at most 99 KiB of shared memory (opt-in).
// Selection shrinks an mma_sync configuration until it fits: fewer stages,
// then shorter KV tiles, then fewer warps along KV (each with half the tile).

// GQA 16 at head_dim 128: 196 KiB on sm_90; 2 stages (132 KiB) are still too
// many, so 64-token tiles: 68 KiB.
// CHECK-LABEL: func.func @decode_g16
// CHECK: #cascade.kernel_config<mma_sync, threads = [32, 1, 4], q_tile = 16, kv_tile = 64, stages = 2>
// SM90-LABEL: func.func @decode_g16
// SM90: #cascade.kernel_config<mma_sync, threads = [32, 1, 4], q_tile = 16, kv_tile = 128, stages = 3>
func.func @decode_g16(%q: memref<?x32x128xf16>, %cache: memref<?x2x16x2x128xf16>,
                      %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>,
                      %o: memref<?x32x128xf16>, %lse: memref<?x32xf32>) {
  cascade.paged_attention q(%q : memref<?x32x128xf16>) kv(%cache : memref<?x2x16x2x128xf16>)
      kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>) kv_last_page_len(%last : memref<?xi32>)
      outs(%o, %lse : memref<?x32x128xf16>, memref<?x32xf32>) {page_size = 16 : i64}
  return
}

// CHECK-LABEL: func.func @decode_d96
// CHECK: #cascade.kernel_config<mma_sync, threads = [32, 1, 4], q_tile = 16, kv_tile = 64, stages = 2>
func.func @decode_d96(%q: memref<?x8x96xbf16>, %cache: memref<?x2x16x8x96xbf16>,
                      %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>,
                      %o: memref<?x8x96xbf16>, %lse: memref<?x8xf32>) {
  cascade.paged_attention q(%q : memref<?x8x96xbf16>) kv(%cache : memref<?x2x16x8x96xbf16>)
      kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>) kv_last_page_len(%last : memref<?xi32>)
      outs(%o, %lse : memref<?x8x96xbf16>, memref<?x8xf32>) {page_size = 16 : i64}
  return
}

// GQA 16 at head_dim 256: 4 warps along KV need 64-token tiles (136 KiB in
// 2 stages); 2 warps with 32-token tiles take 72 KiB.
// CHECK-LABEL: func.func @decode_g16_d256
// CHECK: #cascade.kernel_config<mma_sync, threads = [32, 1, 2], q_tile = 16, kv_tile = 32, stages = 2>
// SM90-LABEL: func.func @decode_g16_d256
// SM90: #cascade.kernel_config<mma_sync, threads = [32, 1, 4], q_tile = 16, kv_tile = 64, stages = 3>
func.func @decode_g16_d256(%q: memref<?x32x256xf16>, %cache: memref<?x2x16x2x256xf16>,
    %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>,
    %o: memref<?x32x256xf16>, %lse: memref<?x32xf32>) {
  cascade.paged_attention q(%q : memref<?x32x256xf16>) kv(%cache : memref<?x2x16x2x256xf16>)
      kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>) kv_last_page_len(%last : memref<?xi32>)
      outs(%o, %lse : memref<?x32x256xf16>, memref<?x32xf32>) {page_size = 16 : i64}
  return
}

// GQA 128 at head_dim 256: 128 packed rows, 16-token tiles in 2 stages
// (96 KiB).
// CHECK-LABEL: func.func @decode_g128_d256
// CHECK: #cascade.kernel_config<mma_sync, threads = [32, 4, 1], q_tile = 128, kv_tile = 16, stages = 2>
// SM90-LABEL: func.func @decode_g128_d256
// SM90: #cascade.kernel_config<mma_sync, threads = [32, 4, 1], q_tile = 128, kv_tile = 16, stages = 3>
func.func @decode_g128_d256(%q: memref<?x128x256xf16>, %cache: memref<?x2x16x1x256xf16>,
    %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>,
    %o: memref<?x128x256xf16>, %lse: memref<?x128xf32>) {
  cascade.paged_attention q(%q : memref<?x128x256xf16>) kv(%cache : memref<?x2x16x1x256xf16>)
      kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>) kv_last_page_len(%last : memref<?xi32>)
      outs(%o, %lse : memref<?x128x256xf16>, memref<?x128xf32>) {page_size = 16 : i64}
  return
}

// Prefill at head_dim 256 (96 KiB) fits as it is.
// CHECK-LABEL: func.func @prefill_d256
// CHECK: #cascade.kernel_config<mma_sync, threads = [32, 4, 1], q_tile = 64, kv_tile = 32, stages = 2>
func.func @prefill_d256(%q: memref<?x16x256xf16>, %cache: memref<?x2x16x4x256xf16>, %qo: memref<?xi32>,
                        %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>,
                        %o: memref<?x16x256xf16>, %lse: memref<?x16xf32>) {
  cascade.paged_attention q(%q : memref<?x16x256xf16>) kv(%cache : memref<?x2x16x4x256xf16>)
      qo_indptr(%qo : memref<?xi32>) kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>)
      kv_last_page_len(%last : memref<?xi32>) outs(%o, %lse : memref<?x16x256xf16>, memref<?x16xf32>)
      {page_size = 16 : i64}
  return
}

// KERNELS-LABEL: func.func @decode_g16
// KERNELS: gpu.launch_func @cascade_kernels::@cascade_decode_mma_f16_f16_d128_g16_h2_p16_nhd_pool_w1x4_q16_kv64_s2 {{.*}} dynamic_shared_memory_size %c69632_i32
// KERNELS-LABEL: func.func @decode_d96
// KERNELS: dynamic_shared_memory_size %c56576_i32
// KERNELS-LABEL: func.func @decode_g16_d256
// KERNELS: gpu.launch_func @cascade_kernels::@cascade_decode_mma_f16_f16_d256_g16_h2_p16_nhd_pool_w1x2_q16_kv32_s2 {{.*}} dynamic_shared_memory_size %c73728_i32
// KERNELS-LABEL: func.func @decode_g128_d256
// KERNELS: gpu.launch_func @cascade_kernels::@cascade_decode_mma_f16_f16_d256_g128_h1_p16_nhd_pool_w4x1_q128_kv16_s2 {{.*}} dynamic_shared_memory_size %c98304_i32
// KERNELS-LABEL: func.func @prefill_d256
// KERNELS: dynamic_shared_memory_size %c98304_i32
