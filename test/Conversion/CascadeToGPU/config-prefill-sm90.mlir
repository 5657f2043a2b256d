// RUN: cascade-opt %s --cascade-select-kernel-config | FileCheck %s
// RUN: cascade-opt %s --cascade-select-kernel-config=chip=sm_90 | FileCheck %s
// RUN: cascade-opt %s --cascade-select-kernel-config="mma-q-tile=64 mma-kv-tile=64 mma-stages=2 rows-max-group=16 overwrite=true" | FileCheck %s --check-prefix=TUNED
// RUN: cascade-opt %s --cascade-select-kernel-config --convert-cascade-to-gpu | FileCheck %s --check-prefix=KERNELS
// The prefill defaults need at most 96 KiB a block: every known chip gets
// the same configurations.
// RUN: cascade-opt %s --cascade-select-kernel-config=chip=sm_80 | FileCheck %s
// RUN: cascade-opt %s --cascade-select-kernel-config=chip=sm_86 | FileCheck %s
// RUN: cascade-opt %s --cascade-select-kernel-config=chip=sm_89 | FileCheck %s

// The kernel configuration of every op is chosen once and recorded in the IR;
// the lowering builds one kernel per (static configuration, kernel
// configuration) and names it by both.

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

// KERNELS: gpu.module @cascade_kernels
// KERNELS-DAG: gpu.func @cascade_prefill_causal_mma_f16_f16_d128_g4_h8_p16_nhd_pool_w4x1_q128_kv32_s3(
// KERNELS-DAG: gpu.func @cascade_prefill_mma_f16_f16_d256_g4_h4_p16_nhd_pool_w4x1_q64_kv32_s2(
// KERNELS-DAG: gpu.func @cascade_prefill_mma_f16_f16_d128_g4_h8_p16_nhd_pool_alibi_w4x1_q64_kv64_s2(
