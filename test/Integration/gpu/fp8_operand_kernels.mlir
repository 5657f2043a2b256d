// fp8 queries over an fp8 KV cache of their type on the wgmma family
// (sm_90a, both products on fp8 tensor cores): the kernels of the GPU check
// `check.py --fp8-operands` (`tools/cascade-dev gpu prepare` builds
// fp8-operand-bundle-sm90a):
//   cascade-opt fp8_operand_kernels.mlir --cascade-to-ptx="chip=sm_90a
//       bundle-dir=DIR" -o /dev/null
// head_dim 128: causal and not, e4m3 and e5m2, f16 and bf16 outputs, NHD and
// HND, pool and pair, soft cap + window, split-KV with its merge, and a
// level that accumulates into a state.

func.func @f8q_e4m3_d128_g4_p16_nhd_pool_causal_of16(%q: memref<?x32x128xf8E4M3FN>, %kv: memref<?x2x16x8x128xf8E4M3FN>, %qo: memref<?xi32>, %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>, %o: memref<?x32x128xf16>, %lse: memref<?x32xf32>, %ks: f32, %vs: f32) {
  cascade.paged_attention q(%q : memref<?x32x128xf8E4M3FN>) kv(%kv : memref<?x2x16x8x128xf8E4M3FN>)
      qo_indptr(%qo : memref<?xi32>)
      kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>) kv_last_page_len(%last : memref<?xi32>)
      k_scale(%ks) v_scale(%vs)
      outs(%o, %lse : memref<?x32x128xf16>, memref<?x32xf32>) {page_size = 16 : i64, kv_layout = #cascade.kv_layout<nhd>, causal}
  return
}

func.func @f8q_e4m3_d128_g4_p16_nhd_pool_obf16(%q: memref<?x32x128xf8E4M3FN>, %kv: memref<?x2x16x8x128xf8E4M3FN>, %qo: memref<?xi32>, %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>, %o: memref<?x32x128xbf16>, %lse: memref<?x32xf32>, %ks: f32, %vs: f32) {
  cascade.paged_attention q(%q : memref<?x32x128xf8E4M3FN>) kv(%kv : memref<?x2x16x8x128xf8E4M3FN>)
      qo_indptr(%qo : memref<?xi32>)
      kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>) kv_last_page_len(%last : memref<?xi32>)
      k_scale(%ks) v_scale(%vs)
      outs(%o, %lse : memref<?x32x128xbf16>, memref<?x32xf32>) {page_size = 16 : i64, kv_layout = #cascade.kv_layout<nhd>}
  return
}

func.func @f8q_e5m2_d128_g8_p1_hnd_pair_causal_softcap_window_obf16(%q: memref<?x32x128xf8E5M2>, %k: memref<?x4x1x128xf8E5M2>, %v: memref<?x4x1x128xf8E5M2>, %qo: memref<?xi32>, %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>, %o: memref<?x32x128xbf16>, %lse: memref<?x32xf32>, %ks: f32, %vs: f32) {
  cascade.paged_attention q(%q : memref<?x32x128xf8E5M2>) kv(%k, %v : memref<?x4x1x128xf8E5M2>, memref<?x4x1x128xf8E5M2>)
      qo_indptr(%qo : memref<?xi32>)
      kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>) kv_last_page_len(%last : memref<?xi32>)
      k_scale(%ks) v_scale(%vs)
      outs(%o, %lse : memref<?x32x128xbf16>, memref<?x32xf32>) {page_size = 1 : i64, kv_layout = #cascade.kv_layout<hnd>, causal, logits_soft_cap = 30.0 : f32, window_left = 40 : i64}
  return
}

func.func @f8q_split_e4m3_d128_g4_p16_nhd_pool_causal_obf16(%q: memref<?x32x128xf8E4M3FN>, %kv: memref<?x2x16x8x128xf8E4M3FN>, %qo: memref<?xi32>, %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>, %ri: memref<?xi32>, %kt: memref<?xi32>, %oi: memref<?xi32>, %mask: memref<?xi8>, %chunk: memref<1xi32>, %tv: memref<?x32x128xf32>, %ts: memref<?x32xf32>, %qt: memref<?xi32>, %mi: memref<?xi32>, %o: memref<?x32x128xbf16>, %lse: memref<?x32xf32>, %ks: f32, %vs: f32) {
  cascade.paged_attention q(%q : memref<?x32x128xf8E4M3FN>) kv(%kv : memref<?x2x16x8x128xf8E4M3FN>)
      qo_indptr(%qo : memref<?xi32>)
      kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>) kv_last_page_len(%last : memref<?xi32>)
      k_scale(%ks) v_scale(%vs)
      plan(%ri, %kt, %oi, %mask, %chunk, %tv, %ts, %qt, %mi : memref<?xi32>, memref<?xi32>, memref<?xi32>, memref<?xi8>, memref<1xi32>, memref<?x32x128xf32>, memref<?x32xf32>, memref<?xi32>, memref<?xi32>)
      outs(%o, %lse : memref<?x32x128xbf16>, memref<?x32xf32>) {page_size = 16 : i64, kv_layout = #cascade.kv_layout<nhd>, causal}
  return
}

func.func @f8q_acc_e5m2_d128_g4_p16_nhd_pool_of16(%q: memref<?x32x128xf8E5M2>, %kv: memref<?x2x16x8x128xf8E5M2>, %qo: memref<?xi32>, %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>, %o: memref<?x32x128xf16>, %lse: memref<?x32xf32>, %ks: f32, %vs: f32) {
  cascade.paged_attention q(%q : memref<?x32x128xf8E5M2>) kv(%kv : memref<?x2x16x8x128xf8E5M2>)
      qo_indptr(%qo : memref<?xi32>)
      kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>) kv_last_page_len(%last : memref<?xi32>)
      k_scale(%ks) v_scale(%vs)
      outs(%o, %lse : memref<?x32x128xf16>, memref<?x32xf32>) {page_size = 16 : i64, kv_layout = #cascade.kv_layout<nhd>, accumulate}
  return
}

// The benchmark's baseline (benchmarks.attention.bench --rows prefill-fp8):
// the 16-bit kernels of the first two shapes, f16 causal and bf16 not.
func.func @base_f16_d128_g4_p16_nhd_pool_causal(%q: memref<?x32x128xf16>, %kv: memref<?x2x16x8x128xf16>, %qo: memref<?xi32>, %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>, %o: memref<?x32x128xf16>, %lse: memref<?x32xf32>) {
  cascade.paged_attention q(%q : memref<?x32x128xf16>) kv(%kv : memref<?x2x16x8x128xf16>)
      qo_indptr(%qo : memref<?xi32>)
      kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>) kv_last_page_len(%last : memref<?xi32>)
      outs(%o, %lse : memref<?x32x128xf16>, memref<?x32xf32>) {page_size = 16 : i64, kv_layout = #cascade.kv_layout<nhd>, causal}
  return
}

func.func @base_bf16_d128_g4_p16_nhd_pool(%q: memref<?x32x128xbf16>, %kv: memref<?x2x16x8x128xbf16>, %qo: memref<?xi32>, %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>, %o: memref<?x32x128xbf16>, %lse: memref<?x32xf32>) {
  cascade.paged_attention q(%q : memref<?x32x128xbf16>) kv(%kv : memref<?x2x16x8x128xbf16>)
      qo_indptr(%qo : memref<?xi32>)
      kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>) kv_last_page_len(%last : memref<?xi32>)
      outs(%o, %lse : memref<?x32x128xbf16>, memref<?x32xf32>) {page_size = 16 : i64, kv_layout = #cascade.kv_layout<nhd>}
  return
}
