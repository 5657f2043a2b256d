// RUN: cascade-opt %s --cascade-select-kernel-config | FileCheck %s
// RUN: cascade-opt %s --cascade-select-kernel-config="rows-max-group-fp8=2" | FileCheck %s --check-prefix=MMA

// Decode over an fp8 KV cache has its own group limit for the rows family
// (rows-max-group-fp8, default 8 like rows-max-group): fp8 does twice the
// f32 FMAs per KV byte of f16 on CUDA cores, so tensor cores may pay from
// smaller groups. Lowering the limit moves fp8 decode of larger groups to
// mma_sync (the GQA group in one m16 tile) and leaves f16 decode and
// smaller fp8 groups on rows.

// CHECK-LABEL: func.func @fp8_g4
// CHECK: #cascade.kernel_config<rows, threads = [16, 1, 8], q_tile = 1, kv_tile = 32, stages = 4>
// MMA-LABEL: func.func @fp8_g4
// MMA: #cascade.kernel_config<mma_sync, threads = [32, 1, 4], q_tile = 16, kv_tile = 128, stages = 2>
func.func @fp8_g4(%q: memref<?x32x128xf16>, %kv: memref<?x2x16x8x128xf8E4M3FN>,
                  %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>,
                  %o: memref<?x32x128xf16>, %lse: memref<?x32xf32>) {
  cascade.paged_attention q(%q : memref<?x32x128xf16>) kv(%kv : memref<?x2x16x8x128xf8E4M3FN>)
      kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>) kv_last_page_len(%last : memref<?xi32>)
      outs(%o, %lse : memref<?x32x128xf16>, memref<?x32xf32>) {page_size = 16 : i64}
  return
}

// CHECK-LABEL: func.func @fp8_g2
// CHECK: #cascade.kernel_config<rows,
// MMA-LABEL: func.func @fp8_g2
// MMA: #cascade.kernel_config<rows,
func.func @fp8_g2(%q: memref<?x16x128xf16>, %kv: memref<?x2x16x8x128xf8E5M2>,
                  %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>,
                  %o: memref<?x16x128xf16>, %lse: memref<?x16xf32>) {
  cascade.paged_attention q(%q : memref<?x16x128xf16>) kv(%kv : memref<?x2x16x8x128xf8E5M2>)
      kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>) kv_last_page_len(%last : memref<?xi32>)
      outs(%o, %lse : memref<?x16x128xf16>, memref<?x16xf32>) {page_size = 16 : i64}
  return
}

// CHECK-LABEL: func.func @f16_g4
// CHECK: #cascade.kernel_config<rows,
// MMA-LABEL: func.func @f16_g4
// MMA: #cascade.kernel_config<rows,
func.func @f16_g4(%q: memref<?x32x128xf16>, %kv: memref<?x2x16x8x128xf16>,
                  %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>,
                  %o: memref<?x32x128xf16>, %lse: memref<?x32xf32>) {
  cascade.paged_attention q(%q : memref<?x32x128xf16>) kv(%kv : memref<?x2x16x8x128xf16>)
      kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>) kv_last_page_len(%last : memref<?xi32>)
      outs(%o, %lse : memref<?x32x128xf16>, memref<?x32xf32>) {page_size = 16 : i64}
  return
}
