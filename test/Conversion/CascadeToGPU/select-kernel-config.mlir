// RUN: cascade-opt %s --cascade-select-kernel-config | FileCheck %s
// RUN: cascade-opt %s --cascade-select-kernel-config="mma-q-tile=64 mma-kv-tile=64 mma-stages=2 rows-max-group=16 overwrite=true" | FileCheck %s --check-prefix=TUNED
// RUN: cascade-opt %s --cascade-select-kernel-config --convert-cascade-to-gpu | FileCheck %s --check-prefix=KERNELS

// The kernel configuration of every op is chosen once and recorded in the IR;
// the lowering builds one kernel per (static configuration, kernel
// configuration) and names it by both.

// Merges: head_dim / 8 threads per state, 128 threads a block.
// CHECK-LABEL: func.func @merge
// CHECK: cascade.merge_state {{.*}} {cascade.kernel_config = #cascade.kernel_config<merge, threads = [128, 1, 1], q_tile = 8, kv_tile = 0, stages = 1>}
func.func @merge(%va: memref<?x32x128xf16>, %sa: memref<?x32xf32>, %vb: memref<?x32x128xf16>,
                 %sb: memref<?x32xf32>, %v: memref<?x32x128xf16>, %s: memref<?x32xf32>) {
  cascade.merge_state ins(%va, %sa, %vb, %sb : memref<?x32x128xf16>, memref<?x32xf32>, memref<?x32x128xf16>, memref<?x32xf32>)
      outs(%v, %s : memref<?x32x128xf16>, memref<?x32xf32>)
  return
}

// Decode with a small GQA group: the rows family (CUDA cores), D/8 lanes by
// 128 / (D/8) token slices.
// CHECK-LABEL: func.func @decode_g4
// CHECK: {cascade.kernel_config = #cascade.kernel_config<rows, threads = [16, 1, 8], q_tile = 1, kv_tile = 32, stages = 2>, page_size = 16 : i64}
// TUNED-LABEL: func.func @decode_g4
// TUNED: #cascade.kernel_config<rows, threads = [16, 1, 8], q_tile = 1, kv_tile = 32, stages = 2>
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

// Prefill: 128 packed rows a block (4 warps of two m16 tiles), 32-token KV
// tiles, 3 stages for head_dim <= 128; 64 rows, 32 tokens, 2 stages at 256.
// CHECK-LABEL: func.func @prefill_d128
// CHECK: #cascade.kernel_config<mma_sync, threads = [32, 4, 1], q_tile = 128, kv_tile = 32, stages = 3>
// TUNED-LABEL: func.func @prefill_d128
// TUNED: #cascade.kernel_config<mma_sync, threads = [32, 4, 1], q_tile = 64, kv_tile = 64, stages = 2>
func.func @prefill_d128(%q: memref<?x32x128xf16>, %cache: memref<?x2x16x8x128xf16>, %qo: memref<?xi32>,
                        %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>,
                        %o: memref<?x32x128xf16>, %lse: memref<?x32xf32>) {
  cascade.paged_attention q(%q : memref<?x32x128xf16>) kv(%cache : memref<?x2x16x8x128xf16>)
      qo_indptr(%qo : memref<?xi32>) kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>)
      kv_last_page_len(%last : memref<?xi32>) outs(%o, %lse : memref<?x32x128xf16>, memref<?x32xf32>)
      {page_size = 16 : i64, causal}
  return
}

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

// Per-score options (ALiBi, soft cap) and RoPE need registers: one m16 tile
// per warp.
// CHECK-LABEL: func.func @prefill_alibi
// CHECK: #cascade.kernel_config<mma_sync, threads = [32, 4, 1], q_tile = 64, kv_tile = 64, stages = 2>
func.func @prefill_alibi(%q: memref<?x32x128xf16>, %cache: memref<?x2x16x8x128xf16>, %qo: memref<?xi32>,
                         %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>,
                         %o: memref<?x32x128xf16>, %lse: memref<?x32xf32>) {
  cascade.paged_attention q(%q : memref<?x32x128xf16>) kv(%cache : memref<?x2x16x8x128xf16>)
      qo_indptr(%qo : memref<?xi32>) kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>)
      kv_last_page_len(%last : memref<?xi32>) outs(%o, %lse : memref<?x32x128xf16>, memref<?x32xf32>)
      {page_size = 16 : i64, pos_encoding = #cascade.pos_encoding<alibi>}
  return
}

// A configuration already on an op is kept (hand tuning), unless overwrite.
// CHECK-LABEL: func.func @hand_tuned
// CHECK: #cascade.kernel_config<mma_sync, threads = [32, 8, 1], q_tile = 256, kv_tile = 32, stages = 2>
// TUNED-LABEL: func.func @hand_tuned
// TUNED: #cascade.kernel_config<mma_sync, threads = [32, 4, 1], q_tile = 64, kv_tile = 64, stages = 2>
func.func @hand_tuned(%q: memref<?x32x128xf16>, %cache: memref<?x2x16x8x128xf16>, %qo: memref<?xi32>,
                      %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>,
                      %o: memref<?x32x128xf16>, %lse: memref<?x32xf32>) {
  cascade.paged_attention q(%q : memref<?x32x128xf16>) kv(%cache : memref<?x2x16x8x128xf16>)
      qo_indptr(%qo : memref<?xi32>) kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>)
      kv_last_page_len(%last : memref<?xi32>) outs(%o, %lse : memref<?x32x128xf16>, memref<?x32xf32>)
      {page_size = 16 : i64, causal,
       cascade.kernel_config = #cascade.kernel_config<mma_sync, threads = [32, 8, 1], q_tile = 256, kv_tile = 32, stages = 2>}
  return
}

// KERNELS: gpu.module @cascade_kernels
// KERNELS-DAG: gpu.func @cascade_merge_state_f16_d128_b2_t128(
// KERNELS-DAG: gpu.func @cascade_decode_rows_f16_f16_d128_g4_h8_p16_nhd_pool_t16x8_kv32_s2(
// KERNELS-DAG: gpu.func @cascade_decode_mma_f16_f16_d128_g16_h2_p16_nhd_pool_w1x4_q16_kv128_s3(
// KERNELS-DAG: gpu.func @cascade_decode_mma_bf16_bf16_d96_g1_h8_p16_nhd_pool_sm3dd105eb_w1x4_q16_kv128_s3(
// KERNELS-DAG: gpu.func @cascade_prefill_causal_mma_f16_f16_d128_g4_h8_p16_nhd_pool_w4x1_q128_kv32_s3(
// KERNELS-DAG: gpu.func @cascade_prefill_mma_f16_f16_d256_g4_h4_p16_nhd_pool_w4x1_q64_kv32_s2(
// KERNELS-DAG: gpu.func @cascade_prefill_mma_f16_f16_d128_g4_h8_p16_nhd_pool_alibi_w4x1_q64_kv64_s2(
// KERNELS-DAG: gpu.func @cascade_prefill_causal_mma_f16_f16_d128_g4_h8_p16_nhd_pool_w8x1_q256_kv32_s2(
