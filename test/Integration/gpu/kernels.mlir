// Kernels of the GPU check (test/Integration/gpu/check.py) and the
// benchmark (benchmarks/decode_merge/bench.py). Not a lit test.
// Build the bundle:  cascade-opt kernels.mlir --cascade-to-ptx="bundle-dir=DIR" -o /dev/null

func.func @dec_f16_d128_g4_p16_nhd_pool(%q: memref<?x32x128xf16>, %kv: memref<?x2x16x8x128xf16>, %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>,
    %o: memref<?x32x128xf16>, %lse: memref<?x32xf32>) {
  cascade.paged_attention q(%q : memref<?x32x128xf16>) kv(%kv : memref<?x2x16x8x128xf16>)
      kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>) kv_last_page_len(%last : memref<?xi32>)
      outs(%o, %lse : memref<?x32x128xf16>, memref<?x32xf32>) {page_size = 16 : i64, kv_layout = #cascade.kv_layout<nhd>}
  return
}

func.func @dec_bf16_d128_g4_p16_hnd_pool(%q: memref<?x32x128xbf16>, %kv: memref<?x2x8x16x128xbf16>, %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>,
    %o: memref<?x32x128xbf16>, %lse: memref<?x32xf32>) {
  cascade.paged_attention q(%q : memref<?x32x128xbf16>) kv(%kv : memref<?x2x8x16x128xbf16>)
      kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>) kv_last_page_len(%last : memref<?xi32>)
      outs(%o, %lse : memref<?x32x128xbf16>, memref<?x32xf32>) {page_size = 16 : i64, kv_layout = #cascade.kv_layout<hnd>}
  return
}

func.func @dec_f16_d64_g1_p1_nhd_pair(%q: memref<?x8x64xf16>, %k: memref<?x1x8x64xf16>, %v: memref<?x1x8x64xf16>, %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>,
    %o: memref<?x8x64xf16>, %lse: memref<?x8xf32>) {
  cascade.paged_attention q(%q : memref<?x8x64xf16>) kv(%k, %v : memref<?x1x8x64xf16>, memref<?x1x8x64xf16>)
      kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>) kv_last_page_len(%last : memref<?xi32>)
      outs(%o, %lse : memref<?x8x64xf16>, memref<?x8xf32>) {page_size = 1 : i64, kv_layout = #cascade.kv_layout<nhd>}
  return
}

func.func @dec_f16_d256_g8_p16_hnd_pair(%q: memref<?x16x256xf16>, %k: memref<?x2x16x256xf16>, %v: memref<?x2x16x256xf16>, %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>,
    %o: memref<?x16x256xf16>, %lse: memref<?x16xf32>) {
  cascade.paged_attention q(%q : memref<?x16x256xf16>) kv(%k, %v : memref<?x2x16x256xf16>, memref<?x2x16x256xf16>)
      kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>) kv_last_page_len(%last : memref<?xi32>)
      outs(%o, %lse : memref<?x16x256xf16>, memref<?x16xf32>) {page_size = 16 : i64, kv_layout = #cascade.kv_layout<hnd>}
  return
}

func.func @dec_bf16_d64_g8_p16_nhd_pool_softcap_window(%q: memref<?x32x64xbf16>, %kv: memref<?x2x16x4x64xbf16>, %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>,
    %o: memref<?x32x64xbf16>, %lse: memref<?x32xf32>) {
  cascade.paged_attention q(%q : memref<?x32x64xbf16>) kv(%kv : memref<?x2x16x4x64xbf16>)
      kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>) kv_last_page_len(%last : memref<?xi32>)
      outs(%o, %lse : memref<?x32x64xbf16>, memref<?x32xf32>) {page_size = 16 : i64, kv_layout = #cascade.kv_layout<nhd>, logits_soft_cap = 30.0 : f32, window_left = 40 : i64}
  return
}

func.func @dec_f16_d128_g1_p16_nhd_pool_rope_basee(%q: memref<?x8x128xf16>, %kv: memref<?x2x16x8x128xf16>, %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>,
    %o: memref<?x8x128xf16>, %lse: memref<?x8xf32>) {
  cascade.paged_attention q(%q : memref<?x8x128xf16>) kv(%kv : memref<?x2x16x8x128xf16>)
      kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>) kv_last_page_len(%last : memref<?xi32>)
      outs(%o, %lse : memref<?x8x128xf16>, memref<?x8xf32>) {page_size = 16 : i64, kv_layout = #cascade.kv_layout<nhd>, pos_encoding = #cascade.pos_encoding<rope_llama>, rope_theta = 10000.0 : f32, lse_base = #cascade.lse_base<base_e>}
  return
}

func.func @dec_f16_d128_g4_p16_nhd_pool_alibi(%q: memref<?x32x128xf16>, %kv: memref<?x2x16x8x128xf16>, %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>,
    %o: memref<?x32x128xf16>, %lse: memref<?x32xf32>) {
  cascade.paged_attention q(%q : memref<?x32x128xf16>) kv(%kv : memref<?x2x16x8x128xf16>)
      kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>) kv_last_page_len(%last : memref<?xi32>)
      outs(%o, %lse : memref<?x32x128xf16>, memref<?x32xf32>) {page_size = 16 : i64, kv_layout = #cascade.kv_layout<nhd>, pos_encoding = #cascade.pos_encoding<alibi>, sm_scale = 0.1 : f32}
  return
}

func.func @dec_bf16_d256_g8_p1_hnd_pool(%q: memref<?x16x256xbf16>, %kv: memref<?x2x2x1x256xbf16>, %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>,
    %o: memref<?x16x256xbf16>, %lse: memref<?x16xf32>) {
  cascade.paged_attention q(%q : memref<?x16x256xbf16>) kv(%kv : memref<?x2x2x1x256xbf16>)
      kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>) kv_last_page_len(%last : memref<?xi32>)
      outs(%o, %lse : memref<?x16x256xbf16>, memref<?x16xf32>) {page_size = 1 : i64, kv_layout = #cascade.kv_layout<hnd>}
  return
}

func.func @split_f16_d128_g4_p16_nhd_pool(%q: memref<?x32x128xf16>, %kv: memref<?x2x16x8x128xf16>, %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>, %ri: memref<?xi32>, %kt: memref<?xi32>, %oi: memref<?xi32>, %mask: memref<?xi8>, %chunk: memref<1xi32>, %tv: memref<?x32x128xf32>, %ts: memref<?x32xf32>,
    %o: memref<?x32x128xf16>, %lse: memref<?x32xf32>) {
  cascade.paged_attention q(%q : memref<?x32x128xf16>) kv(%kv : memref<?x2x16x8x128xf16>)
      kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>) kv_last_page_len(%last : memref<?xi32>) plan(%ri, %kt, %oi, %mask, %chunk, %tv, %ts : memref<?xi32>, memref<?xi32>, memref<?xi32>, memref<?xi8>, memref<1xi32>, memref<?x32x128xf32>, memref<?x32xf32>)
      outs(%o, %lse : memref<?x32x128xf16>, memref<?x32xf32>) {page_size = 16 : i64, kv_layout = #cascade.kv_layout<nhd>}
  return
}

func.func @split_bf16_d64_g8_p1_hnd_pair(%q: memref<?x32x64xbf16>, %k: memref<?x4x1x64xbf16>, %v: memref<?x4x1x64xbf16>, %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>, %ri: memref<?xi32>, %kt: memref<?xi32>, %oi: memref<?xi32>, %mask: memref<?xi8>, %chunk: memref<1xi32>, %tv: memref<?x32x64xf32>, %ts: memref<?x32xf32>,
    %o: memref<?x32x64xbf16>, %lse: memref<?x32xf32>) {
  cascade.paged_attention q(%q : memref<?x32x64xbf16>) kv(%k, %v : memref<?x4x1x64xbf16>, memref<?x4x1x64xbf16>)
      kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>) kv_last_page_len(%last : memref<?xi32>) plan(%ri, %kt, %oi, %mask, %chunk, %tv, %ts : memref<?xi32>, memref<?xi32>, memref<?xi32>, memref<?xi8>, memref<1xi32>, memref<?x32x64xf32>, memref<?x32xf32>)
      outs(%o, %lse : memref<?x32x64xbf16>, memref<?x32xf32>) {page_size = 1 : i64, kv_layout = #cascade.kv_layout<hnd>}
  return
}

func.func @ms_f16_d128(%va: memref<?x32x128xf16>, %sa: memref<?x32xf32>, %vb: memref<?x32x128xf16>, %sb: memref<?x32xf32>,
    %v: memref<?x32x128xf16>, %s: memref<?x32xf32>) {
  cascade.merge_state ins(%va, %sa, %vb, %sb : memref<?x32x128xf16>, memref<?x32xf32>, memref<?x32x128xf16>, memref<?x32xf32>)
      outs(%v, %s : memref<?x32x128xf16>, memref<?x32xf32>)
  return
}

func.func @mss_f16_d128(%vs: memref<?x?x32x128xf16>, %ss: memref<?x?x32xf32>, %v: memref<?x32x128xf16>, %s: memref<?x32xf32>) {
  cascade.merge_states ins(%vs, %ss : memref<?x?x32x128xf16>, memref<?x?x32xf32>) outs(%v, %s : memref<?x32x128xf16>, memref<?x32xf32>)
  return
}

func.func @ms_bf16_d64(%va: memref<?x8x64xbf16>, %sa: memref<?x8xf32>, %vb: memref<?x8x64xbf16>, %sb: memref<?x8xf32>,
    %v: memref<?x8x64xbf16>, %s: memref<?x8xf32>) {
  cascade.merge_state ins(%va, %sa, %vb, %sb : memref<?x8x64xbf16>, memref<?x8xf32>, memref<?x8x64xbf16>, memref<?x8xf32>)
      outs(%v, %s : memref<?x8x64xbf16>, memref<?x8xf32>)
  return
}

func.func @mss_bf16_d64(%vs: memref<?x?x8x64xbf16>, %ss: memref<?x?x8xf32>, %v: memref<?x8x64xbf16>, %s: memref<?x8xf32>) {
  cascade.merge_states ins(%vs, %ss : memref<?x?x8x64xbf16>, memref<?x?x8xf32>) outs(%v, %s : memref<?x8x64xbf16>, memref<?x8xf32>)
  return
}

func.func @ms_f32_d256(%va: memref<?x4x256xf32>, %sa: memref<?x4xf32>, %vb: memref<?x4x256xf32>, %sb: memref<?x4xf32>,
    %v: memref<?x4x256xf32>, %s: memref<?x4xf32>) {
  cascade.merge_state ins(%va, %sa, %vb, %sb : memref<?x4x256xf32>, memref<?x4xf32>, memref<?x4x256xf32>, memref<?x4xf32>)
      outs(%v, %s : memref<?x4x256xf32>, memref<?x4xf32>)
  return
}

func.func @mss_f32_d256(%vs: memref<?x?x4x256xf32>, %ss: memref<?x?x4xf32>, %v: memref<?x4x256xf32>, %s: memref<?x4xf32>) {
  cascade.merge_states ins(%vs, %ss : memref<?x?x4x256xf32>, memref<?x?x4xf32>) outs(%v, %s : memref<?x4x256xf32>, memref<?x4xf32>)
  return
}

func.func @msip_f16_d128_mask(%vo: memref<?x32x128xf16>, %so: memref<?x32xf32>, %m: memref<?xi8, strided<[?]>>,
    %v: memref<?x32x128xf16>, %s: memref<?x32xf32>) {
  cascade.merge_state_in_place ins(%vo, %so : memref<?x32x128xf16>, memref<?x32xf32>) mask(%m : memref<?xi8, strided<[?]>>)
      outs(%v, %s : memref<?x32x128xf16>, memref<?x32xf32>)
  return
}
func.func @msip_bf16_d64_basee(%vo: memref<?x8x64xbf16>, %so: memref<?x8xf32>, %v: memref<?x8x64xbf16>, %s: memref<?x8xf32>) {
  cascade.merge_state_in_place ins(%vo, %so : memref<?x8x64xbf16>, memref<?x8xf32>)
      outs(%v, %s : memref<?x8x64xbf16>, memref<?x8xf32>) {lse_base = #cascade.lse_base<base_e>}
  return
}
func.func @ms_f16_d128_basee(%va: memref<?x32x128xf16>, %sa: memref<?x32xf32>, %vb: memref<?x32x128xf16>, %sb: memref<?x32xf32>,
    %v: memref<?x32x128xf16>, %s: memref<?x32xf32>) {
  cascade.merge_state ins(%va, %sa, %vb, %sb : memref<?x32x128xf16>, memref<?x32xf32>, memref<?x32x128xf16>, memref<?x32xf32>)
      outs(%v, %s : memref<?x32x128xf16>, memref<?x32xf32>) {lse_base = #cascade.lse_base<base_e>}
  return
}

func.func @pre_f16_d128_g4_p16_nhd_pool_causal(%q: memref<?x32x128xf16>, %kv: memref<?x2x16x8x128xf16>, %qo: memref<?xi32>, %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>,
    %o: memref<?x32x128xf16>, %lse: memref<?x32xf32>) {
  cascade.paged_attention q(%q : memref<?x32x128xf16>) kv(%kv : memref<?x2x16x8x128xf16>) qo_indptr(%qo : memref<?xi32>)
      kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>) kv_last_page_len(%last : memref<?xi32>)
      outs(%o, %lse : memref<?x32x128xf16>, memref<?x32xf32>) {page_size = 16 : i64, kv_layout = #cascade.kv_layout<nhd>, causal}
  return
}
func.func @pre_f16_d128_g4_p16_nhd_pool(%q: memref<?x32x128xf16>, %kv: memref<?x2x16x8x128xf16>, %qo: memref<?xi32>, %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>,
    %o: memref<?x32x128xf16>, %lse: memref<?x32xf32>) {
  cascade.paged_attention q(%q : memref<?x32x128xf16>) kv(%kv : memref<?x2x16x8x128xf16>) qo_indptr(%qo : memref<?xi32>)
      kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>) kv_last_page_len(%last : memref<?xi32>)
      outs(%o, %lse : memref<?x32x128xf16>, memref<?x32xf32>) {page_size = 16 : i64, kv_layout = #cascade.kv_layout<nhd>}
  return
}
func.func @pre_bf16_d64_g8_p1_hnd_pair_causal_softcap_window(%q: memref<?x32x64xbf16>, %k: memref<?x4x1x64xbf16>, %v: memref<?x4x1x64xbf16>, %qo: memref<?xi32>, %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>,
    %o: memref<?x32x64xbf16>, %lse: memref<?x32xf32>) {
  cascade.paged_attention q(%q : memref<?x32x64xbf16>) kv(%k, %v : memref<?x4x1x64xbf16>, memref<?x4x1x64xbf16>) qo_indptr(%qo : memref<?xi32>)
      kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>) kv_last_page_len(%last : memref<?xi32>)
      outs(%o, %lse : memref<?x32x64xbf16>, memref<?x32xf32>) {page_size = 1 : i64, kv_layout = #cascade.kv_layout<hnd>, causal, logits_soft_cap = 30.0 : f32, window_left = 40 : i64}
  return
}
func.func @msip_f16_d128(%vo: memref<?x32x128xf16>, %so: memref<?x32xf32>, %v: memref<?x32x128xf16>, %s: memref<?x32xf32>) {
  cascade.merge_state_in_place ins(%vo, %so : memref<?x32x128xf16>, memref<?x32xf32>)
      outs(%v, %s : memref<?x32x128xf16>, memref<?x32xf32>)
  return
}
