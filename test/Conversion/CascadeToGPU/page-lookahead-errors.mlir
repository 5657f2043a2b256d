// RUN: cascade-opt %s --convert-cascade-to-gpu -split-input-file -verify-diagnostics

// A hand-written page_lookahead where the producer cannot look pages up
// ahead is refused with the reason.

func.func @split_barriers(%q: memref<?x32x128xf16>, %cache: memref<?x2x16x8x128xf16>, %qo: memref<?xi32>,
                          %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>,
                          %o: memref<?x32x128xf16>, %lse: memref<?x32xf32>) {
  // expected-error@+1 {{cannot run this attention: page_lookahead needs the schedule whose copies publish their tile: a paged 16-bit cache, no RoPE, one K/V ring (kv_barriers = joint)}}
  cascade.paged_attention q(%q : memref<?x32x128xf16>) kv(%cache : memref<?x2x16x8x128xf16>)
      qo_indptr(%qo : memref<?xi32>) kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>)
      kv_last_page_len(%last : memref<?xi32>) outs(%o, %lse : memref<?x32x128xf16>, memref<?x32xf32>)
      {page_size = 16 : i64, cascade.kernel_config = #cascade.kernel_config<wgmma, threads = [128, 3, 1], q_tile = 128, kv_tile = 64, stages = 2, kv_barriers = split, page_lookahead = 1>}
  return
}

// -----

func.func @too_many_pages(%q: memref<?x32x64xf16>, %cache: memref<?x2x4x8x64xf16>, %qo: memref<?xi32>,
                          %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>,
                          %o: memref<?x32x64xf16>, %lse: memref<?x32xf32>) {
  // expected-error@+1 {{cannot run this attention: page_lookahead needs at most 31 pages a KV tile (a warp's lanes hold them), got kv_tile 128 at page size 4}}
  cascade.paged_attention q(%q : memref<?x32x64xf16>) kv(%cache : memref<?x2x4x8x64xf16>)
      qo_indptr(%qo : memref<?xi32>) kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>)
      kv_last_page_len(%last : memref<?xi32>) outs(%o, %lse : memref<?x32x64xf16>, memref<?x32xf32>)
      {page_size = 4 : i64, cascade.kernel_config = #cascade.kernel_config<wgmma, threads = [128, 3, 1], q_tile = 128, kv_tile = 128, stages = 4, page_lookahead = 1>}
  return
}

// -----

func.func @fp8_cache(%q: memref<?x32x128xf16>, %cache: memref<?x2x16x8x128xf8E4M3FN>, %qo: memref<?xi32>,
                     %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>,
                     %o: memref<?x32x128xf16>, %lse: memref<?x32xf32>) {
  // expected-error@+1 {{cannot run this attention: page_lookahead needs the schedule whose copies publish their tile}}
  cascade.paged_attention q(%q : memref<?x32x128xf16>) kv(%cache : memref<?x2x16x8x128xf8E4M3FN>)
      qo_indptr(%qo : memref<?xi32>) kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>)
      kv_last_page_len(%last : memref<?xi32>) outs(%o, %lse : memref<?x32x128xf16>, memref<?x32xf32>)
      {page_size = 16 : i64, cascade.kernel_config = #cascade.kernel_config<wgmma, threads = [128, 3, 1], q_tile = 128, kv_tile = 64, stages = 4, page_lookahead = 1>}
  return
}
