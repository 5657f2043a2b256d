// RUN: cascade-opt %s --convert-cascade-to-gpu -split-input-file -verify-diagnostics

// wgmma with head_dim 192 or a v narrower than q and k (head_dim_vo): a
// hand-written configuration the family cannot run is refused with the
// reason (selection gives these ops to wgmma only with wgmma-head-dim-vo,
// and only where none of these holds).

func.func @not_whole_panels(%q: memref<?x16x96xf16>, %k: memref<?x16x16x96xf16>, %v: memref<?x16x16x64xf16>,
                            %qo: memref<?xi32>, %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>,
                            %o: memref<?x16x64xf16>, %lse: memref<?x16xf32>) {
  // expected-error@+1 {{cannot run this attention: the wgmma family needs head_dim a multiple of 64 up to 256 (whole 128-byte swizzle panels) and v's head_dim a multiple of 64 up to it, got 96 / 64 (use mma_sync)}}
  cascade.paged_attention q(%q : memref<?x16x96xf16>) kv(%k, %v : memref<?x16x16x96xf16>, memref<?x16x16x64xf16>)
      qo_indptr(%qo : memref<?xi32>) kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>)
      kv_last_page_len(%last : memref<?xi32>) outs(%o, %lse : memref<?x16x64xf16>, memref<?x16xf32>)
      {page_size = 16 : i64, cascade.kernel_config = #cascade.kernel_config<wgmma, threads = [128, 3, 1], q_tile = 128, kv_tile = 64, stages = 3>}
  return
}

// -----

func.func @rope(%q: memref<?x16x192xbf16>, %k: memref<?x16x16x192xbf16>, %v: memref<?x16x16x128xbf16>,
                %qo: memref<?xi32>, %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>,
                %o: memref<?x16x128xbf16>, %lse: memref<?x16xf32>) {
  // expected-error@+1 {{cannot run this attention: head_dim 192 / 128 on wgmma takes no RoPE (the producer rotates K tiles of head_dim 64, 128 or 256 only)}}
  cascade.paged_attention q(%q : memref<?x16x192xbf16>) kv(%k, %v : memref<?x16x16x192xbf16>, memref<?x16x16x128xbf16>)
      qo_indptr(%qo : memref<?xi32>) kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>)
      kv_last_page_len(%last : memref<?xi32>) outs(%o, %lse : memref<?x16x128xbf16>, memref<?x16xf32>)
      {page_size = 16 : i64, pos_encoding = #cascade.pos_encoding<rope_llama>, cascade.kernel_config = #cascade.kernel_config<wgmma, threads = [128, 3, 1], q_tile = 128, kv_tile = 64, stages = 3>}
  return
}

// -----

func.func @fp8_cache(%q: memref<?x16x192xbf16>, %k: memref<?x16x16x192xf8E4M3FN>, %v: memref<?x16x16x128xf8E4M3FN>,
                     %qo: memref<?xi32>, %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>,
                     %o: memref<?x16x128xbf16>, %lse: memref<?x16xf32>) {
  // expected-error@+1 {{cannot run this attention: head_dim 192 / 128 on wgmma takes a 16-bit cache of q's type}}
  cascade.paged_attention q(%q : memref<?x16x192xbf16>) kv(%k, %v : memref<?x16x16x192xf8E4M3FN>, memref<?x16x16x128xf8E4M3FN>)
      qo_indptr(%qo : memref<?xi32>) kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>)
      kv_last_page_len(%last : memref<?xi32>) outs(%o, %lse : memref<?x16x128xbf16>, memref<?x16xf32>)
      {page_size = 16 : i64, cascade.kernel_config = #cascade.kernel_config<wgmma, threads = [128, 3, 1], q_tile = 128, kv_tile = 64, stages = 3>}
  return
}

// -----

func.func @page_lookahead(%q: memref<?x16x192xbf16>, %k: memref<?x16x16x192xbf16>, %v: memref<?x16x16x128xbf16>,
                          %qo: memref<?xi32>, %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>,
                          %o: memref<?x16x128xbf16>, %lse: memref<?x16xf32>) {
  // expected-error@+1 {{cannot run this attention: page_lookahead needs K and V of one head_dim whose rows divide the producer's 128 threads (its passes copy the K and V chunks of whole rows together)}}
  cascade.paged_attention q(%q : memref<?x16x192xbf16>) kv(%k, %v : memref<?x16x16x192xbf16>, memref<?x16x16x128xbf16>)
      qo_indptr(%qo : memref<?xi32>) kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>)
      kv_last_page_len(%last : memref<?xi32>) outs(%o, %lse : memref<?x16x128xbf16>, memref<?x16xf32>)
      {page_size = 16 : i64, cascade.kernel_config = #cascade.kernel_config<wgmma, threads = [128, 3, 1], q_tile = 128, kv_tile = 64, stages = 3, page_lookahead = 1>}
  return
}

// -----

// A wgmma configuration that runs: head_dim 192 with v of 128, written by
// hand (no selection option needed).
func.func @runs(%q: memref<?x16x192xbf16>, %k: memref<?x16x16x192xbf16>, %v: memref<?x16x16x128xbf16>,
                %qo: memref<?xi32>, %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>,
                %o: memref<?x16x128xbf16>, %lse: memref<?x16xf32>) {
  cascade.paged_attention q(%q : memref<?x16x192xbf16>) kv(%k, %v : memref<?x16x16x192xbf16>, memref<?x16x16x128xbf16>)
      qo_indptr(%qo : memref<?xi32>) kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>)
      kv_last_page_len(%last : memref<?xi32>) outs(%o, %lse : memref<?x16x128xbf16>, memref<?x16xf32>)
      {page_size = 16 : i64, cascade.kernel_config = #cascade.kernel_config<wgmma, threads = [128, 3, 1], q_tile = 128, kv_tile = 64, stages = 3>}
  return
}

// -----

// head_dim 192 with v of 192, written by hand (selection leaves it to
// mma_sync): its 24-chunk rows take the panel-walking gather for K and V.
func.func @runs_d192(%q: memref<?x8x192xf16>, %cache: memref<?x2x16x2x192xf16>, %qo: memref<?xi32>,
                     %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>,
                     %o: memref<?x8x192xf16>, %lse: memref<?x8xf32>) {
  cascade.paged_attention q(%q : memref<?x8x192xf16>) kv(%cache : memref<?x2x16x2x192xf16>)
      qo_indptr(%qo : memref<?xi32>) kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>)
      kv_last_page_len(%last : memref<?xi32>) outs(%o, %lse : memref<?x8x192xf16>, memref<?x8xf32>)
      {page_size = 16 : i64, causal, cascade.kernel_config = #cascade.kernel_config<wgmma, threads = [128, 3, 1], q_tile = 128, kv_tile = 64, stages = 3>}
  return
}
