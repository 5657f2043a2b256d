// RUN: cascade-opt %s --cascade-select-kernel-config | FileCheck %s
// RUN: cascade-opt %s --cascade-select-kernel-config="mma-q-tile=64 mma-kv-tile=64 mma-stages=2 rows-max-group=16 overwrite=true" | FileCheck %s --check-prefix=TUNED
// RUN: cascade-opt %s --cascade-select-kernel-config --convert-cascade-to-gpu | FileCheck %s --check-prefix=KERNELS

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
// KERNELS-DAG: gpu.func @cascade_prefill_causal_mma_f16_f16_d128_g4_h8_p16_nhd_pool_w8x1_q256_kv32_s2(
