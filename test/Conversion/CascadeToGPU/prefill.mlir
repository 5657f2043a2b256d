// RUN: cascade-opt %s --convert-cascade-to-gpu | FileCheck %s
// RUN: cascade-opt %s --cascade-to-ptx | FileCheck %s --check-prefix=PTX

// Prefill (qo_indptr) lowers to the row-wise kernel: one block per (query
// row, KV head); the request of a row is found by binary search on qo_indptr.

// PTX: gpu.binary @cascade_kernels
// PTX-SAME: .visible .entry cascade_prefill_rows_causal_f16_f16_d128_g4_h8_p16_nhd_pool

// CHECK-LABEL: func.func @prefill_causal
// CHECK: gpu.launch_func @cascade_kernels::@cascade_prefill_rows_causal_f16_f16_d128_g4_h8_p16_nhd_pool
func.func @prefill_causal(%q: memref<?x32x128xf16>, %cache: memref<?x2x16x8x128xf16>, %qo: memref<?xi32>,
                          %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>,
                          %o: memref<?x32x128xf16>, %lse: memref<?x32xf32>) {
  cascade.paged_attention q(%q : memref<?x32x128xf16>) kv(%cache : memref<?x2x16x8x128xf16>)
      qo_indptr(%qo : memref<?xi32>) kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>)
      kv_last_page_len(%last : memref<?xi32>) outs(%o, %lse : memref<?x32x128xf16>, memref<?x32xf32>)
      {page_size = 16 : i64, causal}
  return
}

// CHECK: gpu.func @cascade_prefill_rows_causal_f16_f16_d128_g4_h8_p16_nhd_pool
// CHECK-SAME: known_block_size = array<i32: 16, 1, 8>
// CHECK: scf.while
// CHECK: scf.condition
// CHECK: nvgpu.device_async_copy
