// The GPU check's ops whose v (and output) is narrower than q and k
// (head_dim_vo: DeepSeek's 192 / 128 prefill before MLA absorption), for
// check.py --head-dim-vo, which checks every prefill kernel of the bundle by
// name. `tools/cascade-dev gpu prepare integration` builds them for sm_90a
// with wgmma-head-dim-vo into bundle-sm90a-dvo (the wgmma kernels) and
// without into bundle-sm90a-dvo-mma (mma_sync, the A/B). Not a lit test.

// Ragged K/V (page size 1, no page table), causal, MHA 16/16, bf16.
func.func @dvo_ragged_causal_bf16_d192v128(%q: memref<?x16x192xbf16>, %k: memref<?x1x16x192xbf16>, %v: memref<?x1x16x128xbf16>,
    %qo: memref<?xi32>, %kvp: memref<?xi32>, %last: memref<?xi32>,
    %o: memref<?x16x128xbf16>, %lse: memref<?x16xf32>) {
  cascade.paged_attention q(%q : memref<?x16x192xbf16>) kv(%k, %v : memref<?x1x16x192xbf16>, memref<?x1x16x128xbf16>)
      qo_indptr(%qo : memref<?xi32>) kv_indptr(%kvp : memref<?xi32>)
      kv_last_page_len(%last : memref<?xi32>)
      outs(%o, %lse : memref<?x16x128xbf16>, memref<?x16xf32>) {page_size = 1 : i64, causal}
  return
}

// Paged (NHD, page 16), causal, GQA 32/8, f16.
func.func @dvo_paged_causal_f16_d192v128(%q: memref<?x32x192xf16>, %k: memref<?x16x8x192xf16>, %v: memref<?x16x8x128xf16>,
    %qo: memref<?xi32>, %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>,
    %o: memref<?x32x128xf16>, %lse: memref<?x32xf32>) {
  cascade.paged_attention q(%q : memref<?x32x192xf16>) kv(%k, %v : memref<?x16x8x192xf16>, memref<?x16x8x128xf16>)
      qo_indptr(%qo : memref<?xi32>) kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>)
      kv_last_page_len(%last : memref<?xi32>)
      outs(%o, %lse : memref<?x32x128xf16>, memref<?x32xf32>) {page_size = 16 : i64, causal}
  return
}

// Paged (NHD, page 16), not causal, MHA 16/16, bf16.
func.func @dvo_paged_full_bf16_d192v128(%q: memref<?x16x192xbf16>, %k: memref<?x16x16x192xbf16>, %v: memref<?x16x16x128xbf16>,
    %qo: memref<?xi32>, %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>,
    %o: memref<?x16x128xbf16>, %lse: memref<?x16xf32>) {
  cascade.paged_attention q(%q : memref<?x16x192xbf16>) kv(%k, %v : memref<?x16x16x192xbf16>, memref<?x16x16x128xbf16>)
      qo_indptr(%qo : memref<?xi32>) kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>)
      kv_last_page_len(%last : memref<?xi32>)
      outs(%o, %lse : memref<?x16x128xbf16>, memref<?x16xf32>) {page_size = 16 : i64}
  return
}

// Split-KV (a plan), causal, paged NHD, MHA 16/16, bf16: partial states of
// v's head_dim and their merge.
func.func @dvo_split_causal_bf16_d192v128(%q: memref<?x16x192xbf16>, %k: memref<?x16x16x192xbf16>, %v: memref<?x16x16x128xbf16>,
    %qo: memref<?xi32>, %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>,
    %ri: memref<?xi32>, %kt: memref<?xi32>, %oi: memref<?xi32>, %mask: memref<?xi8>,
    %chunk: memref<1xi32>, %tv: memref<?x16x128xf32>, %ts: memref<?x16xf32>,
    %qt: memref<?xi32>, %mi: memref<?xi32>,
    %o: memref<?x16x128xbf16>, %lse: memref<?x16xf32>) {
  cascade.paged_attention q(%q : memref<?x16x192xbf16>) kv(%k, %v : memref<?x16x16x192xbf16>, memref<?x16x16x128xbf16>)
      qo_indptr(%qo : memref<?xi32>) kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>)
      kv_last_page_len(%last : memref<?xi32>)
      plan(%ri, %kt, %oi, %mask, %chunk, %tv, %ts, %qt, %mi : memref<?xi32>, memref<?xi32>, memref<?xi32>, memref<?xi8>, memref<1xi32>, memref<?x16x128xf32>, memref<?x16xf32>, memref<?xi32>, memref<?xi32>)
      outs(%o, %lse : memref<?x16x128xbf16>, memref<?x16xf32>) {page_size = 16 : i64, causal}
  return
}

// Split-KV, not causal, paged HND, GQA 16/4, f16, head_dim 128 with v of 64.
func.func @dvo_split_full_f16_d128v64(%q: memref<?x16x128xf16>, %k: memref<?x4x16x128xf16>, %v: memref<?x4x16x64xf16>,
    %qo: memref<?xi32>, %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>,
    %ri: memref<?xi32>, %kt: memref<?xi32>, %oi: memref<?xi32>, %mask: memref<?xi8>,
    %chunk: memref<1xi32>, %tv: memref<?x16x64xf32>, %ts: memref<?x16xf32>,
    %qt: memref<?xi32>, %mi: memref<?xi32>,
    %o: memref<?x16x64xf16>, %lse: memref<?x16xf32>) {
  cascade.paged_attention q(%q : memref<?x16x128xf16>) kv(%k, %v : memref<?x4x16x128xf16>, memref<?x4x16x64xf16>)
      qo_indptr(%qo : memref<?xi32>) kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>)
      kv_last_page_len(%last : memref<?xi32>)
      plan(%ri, %kt, %oi, %mask, %chunk, %tv, %ts, %qt, %mi : memref<?xi32>, memref<?xi32>, memref<?xi32>, memref<?xi8>, memref<1xi32>, memref<?x16x64xf32>, memref<?x16xf32>, memref<?xi32>, memref<?xi32>)
      outs(%o, %lse : memref<?x16x64xf16>, memref<?x16xf32>) {page_size = 16 : i64, kv_layout = #cascade.kv_layout<hnd>}
  return
}

// Head_dim 256 with v of 128, not causal, GQA 32/8, bf16.
func.func @dvo_paged_full_bf16_d256v128(%q: memref<?x32x256xbf16>, %k: memref<?x16x8x256xbf16>, %v: memref<?x16x8x128xbf16>,
    %qo: memref<?xi32>, %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>,
    %o: memref<?x32x128xbf16>, %lse: memref<?x32xf32>) {
  cascade.paged_attention q(%q : memref<?x32x256xbf16>) kv(%k, %v : memref<?x16x8x256xbf16>, memref<?x16x8x128xbf16>)
      qo_indptr(%qo : memref<?xi32>) kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>)
      kv_last_page_len(%last : memref<?xi32>)
      outs(%o, %lse : memref<?x32x128xbf16>, memref<?x32xf32>) {page_size = 16 : i64}
  return
}

// Soft cap and a sliding window, causal, paged NHD, GQA 16/4, bf16, with an
// sm_scale of its own.
func.func @dvo_paged_softcap_window_bf16_d192v128(%q: memref<?x16x192xbf16>, %k: memref<?x16x4x192xbf16>, %v: memref<?x16x4x128xbf16>,
    %qo: memref<?xi32>, %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>,
    %o: memref<?x16x128xbf16>, %lse: memref<?x16xf32>) {
  cascade.paged_attention q(%q : memref<?x16x192xbf16>) kv(%k, %v : memref<?x16x4x192xbf16>, memref<?x16x4x128xbf16>)
      qo_indptr(%qo : memref<?xi32>) kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>)
      kv_last_page_len(%last : memref<?xi32>)
      outs(%o, %lse : memref<?x16x128xbf16>, memref<?x16xf32>) {page_size = 16 : i64, causal, sm_scale = 0.125 : f32, logits_soft_cap = 30.0 : f32, window_left = 40 : i64}
  return
}

// Accumulating (a fused cascade level merged into the state the outputs
// hold), not causal, paged NHD, MHA 16/16, f16.
func.func @dvo_paged_acc_f16_d192v128(%q: memref<?x16x192xf16>, %k: memref<?x16x16x192xf16>, %v: memref<?x16x16x128xf16>,
    %qo: memref<?xi32>, %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>,
    %o: memref<?x16x128xf16>, %lse: memref<?x16xf32>) {
  cascade.paged_attention q(%q : memref<?x16x192xf16>) kv(%k, %v : memref<?x16x16x192xf16>, memref<?x16x16x128xf16>)
      qo_indptr(%qo : memref<?xi32>) kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>)
      kv_last_page_len(%last : memref<?xi32>)
      outs(%o, %lse : memref<?x16x128xf16>, memref<?x16xf32>) {page_size = 16 : i64, accumulate}
  return
}
