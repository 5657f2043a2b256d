// RUN: cascade-opt %s --convert-cascade-to-gpu -split-input-file -verify-diagnostics

// Configurations written on ops with fp8 queries: another family than
// wgmma, or wgmma tiles the fp8 form cannot take, are refused with the
// reason when the kernels are built.

func.func @hand_written_mma_sync(%q: memref<?x32x128xf8E4M3FN>, %cache: memref<?x2x16x8x128xf8E4M3FN>, %qo: memref<?xi32>,
                                 %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>,
                                 %o: memref<?x32x128xbf16>, %lse: memref<?x32xf32>) {
  // expected-error@+1 {{kernel_config #cascade.kernel_config<mma_sync, threads = [32, 4, 1], q_tile = 128, kv_tile = 64, stages = 2> cannot run this attention: fp8 queries run on the wgmma family only (fp8 tensor cores)}}
  cascade.paged_attention q(%q : memref<?x32x128xf8E4M3FN>) kv(%cache : memref<?x2x16x8x128xf8E4M3FN>)
      qo_indptr(%qo : memref<?xi32>) kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>)
      kv_last_page_len(%last : memref<?xi32>) outs(%o, %lse : memref<?x32x128xbf16>, memref<?x32xf32>)
      {page_size = 16 : i64, causal,
       cascade.kernel_config = #cascade.kernel_config<mma_sync, threads = [32, 4, 1], q_tile = 128, kv_tile = 64, stages = 2>}
  return
}

// -----

func.func @hand_written_kv_tile_64(%q: memref<?x32x128xf8E4M3FN>, %cache: memref<?x2x16x8x128xf8E4M3FN>, %qo: memref<?xi32>,
                                   %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>,
                                   %o: memref<?x32x128xbf16>, %lse: memref<?x32xf32>) {
  // expected-error@+1 {{fp8 queries on wgmma need kv_tile 128 (the transposed V tile's rows are whole 128-byte panels)}}
  cascade.paged_attention q(%q : memref<?x32x128xf8E4M3FN>) kv(%cache : memref<?x2x16x8x128xf8E4M3FN>)
      qo_indptr(%qo : memref<?xi32>) kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>)
      kv_last_page_len(%last : memref<?xi32>) outs(%o, %lse : memref<?x32x128xbf16>, memref<?x32xf32>)
      {page_size = 16 : i64, causal,
       cascade.kernel_config = #cascade.kernel_config<wgmma, threads = [128, 3, 1], q_tile = 128, kv_tile = 64, stages = 4>}
  return
}
