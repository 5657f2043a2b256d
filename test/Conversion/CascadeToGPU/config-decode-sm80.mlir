// RUN: cascade-opt %s --cascade-select-kernel-config=chip=sm_80 | FileCheck %s
// RUN: cascade-opt %s --cascade-select-kernel-config=chip=sm_80 --convert-cascade-to-gpu | FileCheck %s --check-prefix=KERNELS

// Decode on sm_80 (A100): 163 KiB of shared memory a block (opt-in), not
// sm_90's 227 KiB. The rows family and every configuration within 163 KiB
// are the same as on sm_90 (config-decode-sm90.mlir); the GQA-16 decode at
// head_dim 128 drops its third stage (196 KiB -> 132 KiB).

// CHECK-LABEL: func.func @decode_g4
// CHECK: {cascade.kernel_config = #cascade.kernel_config<rows, threads = [16, 1, 8], q_tile = 1, kv_tile = 32, stages = 2>, page_size = 16 : i64}
func.func @decode_g4(%q: memref<?x32x128xf16>, %cache: memref<?x2x16x8x128xf16>,
                     %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>,
                     %o: memref<?x32x128xf16>, %lse: memref<?x32xf32>) {
  cascade.paged_attention q(%q : memref<?x32x128xf16>) kv(%cache : memref<?x2x16x8x128xf16>)
      kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>) kv_last_page_len(%last : memref<?xi32>)
      outs(%o, %lse : memref<?x32x128xf16>, memref<?x32xf32>) {page_size = 16 : i64}
  return
}

// CHECK-LABEL: func.func @decode_g16
// CHECK: #cascade.kernel_config<mma_sync, threads = [32, 1, 4], q_tile = 16, kv_tile = 128, stages = 2>
func.func @decode_g16(%q: memref<?x32x128xf16>, %cache: memref<?x2x16x2x128xf16>,
                      %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>,
                      %o: memref<?x32x128xf16>, %lse: memref<?x32xf32>) {
  cascade.paged_attention q(%q : memref<?x32x128xf16>) kv(%cache : memref<?x2x16x2x128xf16>)
      kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>) kv_last_page_len(%last : memref<?xi32>)
      outs(%o, %lse : memref<?x32x128xf16>, memref<?x32xf32>) {page_size = 16 : i64}
  return
}

// 159 KiB at head_dim 96 (rows padded to 104 elements): fits, 3 stages.
// CHECK-LABEL: func.func @decode_d96
// CHECK: #cascade.kernel_config<mma_sync, threads = [32, 1, 4], q_tile = 16, kv_tile = 128, stages = 3>
func.func @decode_d96(%q: memref<?x8x96xbf16>, %cache: memref<?x2x16x8x96xbf16>,
                      %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>,
                      %o: memref<?x8x96xbf16>, %lse: memref<?x8xf32>) {
  cascade.paged_attention q(%q : memref<?x8x96xbf16>) kv(%cache : memref<?x2x16x8x96xbf16>)
      kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>) kv_last_page_len(%last : memref<?xi32>)
      outs(%o, %lse : memref<?x8x96xbf16>, memref<?x8xf32>) {page_size = 16 : i64}
  return
}

// KERNELS-LABEL: func.func @decode_g16
// KERNELS: gpu.launch_func @cascade_kernels::@cascade_decode_mma_f16_f16_d128_g16_h2_p16_nhd_pool_w1x4_q16_kv128_s2 {{.*}} dynamic_shared_memory_size %c135168_i32
// KERNELS-LABEL: func.func @decode_d96
// KERNELS: gpu.launch_func @cascade_kernels::@cascade_decode_mma_bf16_bf16_d96_g1_h8_p16_nhd_pool_sm3dd105eb_w1x4_q16_kv128_s3 {{.*}} dynamic_shared_memory_size %c163072_i32
