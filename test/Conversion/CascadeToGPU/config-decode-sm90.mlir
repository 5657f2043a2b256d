// RUN: cascade-opt %s --cascade-select-kernel-config | FileCheck %s
// RUN: cascade-opt %s --cascade-select-kernel-config=chip=sm_90 | FileCheck %s
// RUN: cascade-opt %s --cascade-select-kernel-config=chip=sm_90a | FileCheck %s
// RUN: cascade-opt %s --cascade-select-kernel-config="mma-q-tile=64 mma-kv-tile=64 mma-stages=2 rows-max-group=16 overwrite=true" | FileCheck %s --check-prefix=TUNED
// RUN: cascade-opt %s --cascade-select-kernel-config --convert-cascade-to-gpu | FileCheck %s --check-prefix=KERNELS
// RUN: cascade-opt %s --cascade-select-kernel-config="rows-kv-tile=16 rows-smem-kib=32 rows-min-blocks-per-sm=5" --convert-cascade-to-gpu | FileCheck %s --check-prefix=BOUND

// The kernel configuration of every op is chosen once and recorded in the IR;
// the lowering builds one kernel per (static configuration, kernel
// configuration) and names it by both.
// Decode on sm_90 (the default chip; sm_90a has the same limits): 227 KiB
// of shared memory a block, room for 3 stages of 128-token KV tiles.

// Decode with a small GQA group: the rows family (CUDA cores), D/8 lanes by
// 128 / (D/8) token slices.
// CHECK-LABEL: func.func @decode_g4
// CHECK: {cascade.kernel_config = #cascade.kernel_config<rows, threads = [16, 1, 8], q_tile = 1, kv_tile = 32, stages = 2>, page_size = 16 : i64}
// TUNED-LABEL: func.func @decode_g4
// TUNED: #cascade.kernel_config<rows, threads = [16, 1, 8], q_tile = 1, kv_tile = 32, stages = 2>
// A launch bound for rows (rows-min-blocks-per-sm): in the config, the
// kernel's name and its .minnctapersm; 16-token tiles, 4 stages in 32 KiB.
// BOUND: gpu.func @cascade_decode_rows_f16_f16_d128_g4_h8_p16_nhd_pool_t16x8_kv16_s4_b5(
// BOUND-SAME: nvvm.minctasm = 5 : i32
func.func @decode_g4(%q: memref<?x32x128xf16>, %cache: memref<?x2x16x8x128xf16>,
                     %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>,
                     %o: memref<?x32x128xf16>, %lse: memref<?x32xf32>) {
  cascade.paged_attention q(%q : memref<?x32x128xf16>) kv(%cache : memref<?x2x16x8x128xf16>)
      kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>) kv_last_page_len(%last : memref<?xi32>)
      outs(%o, %lse : memref<?x32x128xf16>, memref<?x32xf32>) {page_size = 16 : i64}
  return
}

// Decode with a GQA group of 16 (FlashInfer's use_tensor_cores): the group's
// 16 query heads are one m16 tile; 4 warps split each KV tile.
// CHECK-LABEL: func.func @decode_g16
// CHECK: #cascade.kernel_config<mma_sync, threads = [32, 1, 4], q_tile = 16, kv_tile = 128, stages = 3>
// TUNED-LABEL: func.func @decode_g16
// TUNED: #cascade.kernel_config<rows, threads = [16, 1, 8], q_tile = 1, kv_tile = 32, stages = 2>
func.func @decode_g16(%q: memref<?x32x128xf16>, %cache: memref<?x2x16x2x128xf16>,
                      %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>,
                      %o: memref<?x32x128xf16>, %lse: memref<?x32xf32>) {
  cascade.paged_attention q(%q : memref<?x32x128xf16>) kv(%cache : memref<?x2x16x2x128xf16>)
      kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>) kv_last_page_len(%last : memref<?xi32>)
      outs(%o, %lse : memref<?x32x128xf16>, memref<?x32xf32>) {page_size = 16 : i64}
  return
}

// Decode at a head dim the rows family cannot split over a warp (96): tensor
// cores.
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

// KERNELS: gpu.module @cascade_kernels
// KERNELS-DAG: gpu.func @cascade_decode_rows_f16_f16_d128_g4_h8_p16_nhd_pool_t16x8_kv32_s2(
// KERNELS-DAG: gpu.func @cascade_decode_mma_f16_f16_d128_g16_h2_p16_nhd_pool_w1x4_q16_kv128_s3(
// KERNELS-DAG: gpu.func @cascade_decode_mma_bf16_bf16_d96_g1_h8_p16_nhd_pool_sm3dd105eb_w1x4_q16_kv128_s3(
