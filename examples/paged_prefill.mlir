// paged_prefill.mlir - causal batch prefill / append attention over a paged
// KV cache, HND layout, LLaMA rotary embedding applied on the fly.
//
// FlashInfer: BatchPrefillWithPagedKVCacheWrapper(kv_layout="HND") planned
// with causal=True, pos_encoding_mode="ROPE_LLAMA", rope_theta=500000
// (LLaMA-3), num_qo_heads = 32, num_kv_heads = 8, head_dim = 128,
// page_size = 16, bf16.
//
// Request i appends the query tokens q[qo_indptr[i] : qo_indptr[i+1]] to a
// sequence whose keys/values (including the new tokens) are in the pages
// kv_indices[kv_indptr[i] : kv_indptr[i+1]]. With `causal`, query token j of
// request i (qo_len_i new tokens, kv_len_i keys) attends to the keys at
// positions <= kv_len_i - qo_len_i + j. The KV cache is a (k, v) pair of
// [num_pages, num_kv_heads, page_size, head_dim] (HND). rope_llama rotates q
// and k by their positions (rope_scale 1, rope_theta 500000) inside the
// kernel.
//
// Run:
//   cascade-opt examples/paged_prefill.mlir
//   cascade-opt examples/paged_prefill.mlir -one-shot-bufferize="bufferize-function-boundaries"

func.func @paged_prefill(%q: tensor<?x32x128xbf16>,
                         %k_cache: tensor<?x8x16x128xbf16>,
                         %v_cache: tensor<?x8x16x128xbf16>,
                         %qo_indptr: tensor<?xi32>,
                         %kv_indptr: tensor<?xi32>,
                         %kv_indices: tensor<?xi32>,
                         %kv_last_page_len: tensor<?xi32>)
    -> (tensor<?x32x128xbf16>, tensor<?x32xf32>) {
  %c0 = arith.constant 0 : index
  %rows = tensor.dim %q, %c0 : tensor<?x32x128xbf16>
  %o_init = tensor.empty(%rows) : tensor<?x32x128xbf16>
  %lse_init = tensor.empty(%rows) : tensor<?x32xf32>
  %o, %lse = cascade.paged_attention
      q(%q : tensor<?x32x128xbf16>)
      kv(%k_cache, %v_cache : tensor<?x8x16x128xbf16>, tensor<?x8x16x128xbf16>)
      qo_indptr(%qo_indptr : tensor<?xi32>)
      kv_indptr(%kv_indptr : tensor<?xi32>)
      kv_indices(%kv_indices : tensor<?xi32>)
      kv_last_page_len(%kv_last_page_len : tensor<?xi32>)
      outs(%o_init, %lse_init : tensor<?x32x128xbf16>, tensor<?x32xf32>)
      {page_size = 16 : i64, kv_layout = #cascade.kv_layout<hnd>, causal,
       pos_encoding = #cascade.pos_encoding<rope_llama>,
       rope_scale = 1.0 : f32, rope_theta = 500000.0 : f32}
      -> tensor<?x32x128xbf16>, tensor<?x32xf32>
  return %o, %lse : tensor<?x32x128xbf16>, tensor<?x32xf32>
}
