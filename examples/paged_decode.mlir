// paged_decode.mlir - batch decode attention over a paged KV cache.
//
// FlashInfer: BatchDecodeWithPagedKVCacheWrapper(kv_layout="NHD") with
// num_qo_heads = 32, num_kv_heads = 8 (GQA, 4 query heads per KV head),
// head_dim = 128, page_size = 16, fp16 q and KV cache.
//
// One query token per request (B requests, so q has B rows). Request i owns
// the pages kv_indices[kv_indptr[i] : kv_indptr[i+1]] of the page pool; its
// last page holds kv_last_page_len[i] tokens, so its KV length is
// (pages_i - 1) * 16 + kv_last_page_len[i]. The page pool is one tensor
// [num_pages, 2, page_size, num_kv_heads, head_dim] (NHD; index 0 of dim 1 is
// K, index 1 is V). sm_scale defaults to 1/sqrt(128).
//
// Results: o [B, 32, 128] f16 and the attention state's LSE [B, 32] f32
// (base 2), which can be merged with other states (see merge_state.mlir).
//
// Run:
//   cascade-opt examples/paged_decode.mlir
//   cascade-opt examples/paged_decode.mlir -one-shot-bufferize="bufferize-function-boundaries"

func.func @paged_decode(%q: tensor<?x32x128xf16>,
                        %kv_cache: tensor<?x2x16x8x128xf16>,
                        %kv_indptr: tensor<?xi32>,
                        %kv_indices: tensor<?xi32>,
                        %kv_last_page_len: tensor<?xi32>)
    -> (tensor<?x32x128xf16>, tensor<?x32xf32>) {
  %c0 = arith.constant 0 : index
  %batch = tensor.dim %q, %c0 : tensor<?x32x128xf16>
  %o_init = tensor.empty(%batch) : tensor<?x32x128xf16>
  %lse_init = tensor.empty(%batch) : tensor<?x32xf32>
  %o, %lse = cascade.paged_attention
      q(%q : tensor<?x32x128xf16>) kv(%kv_cache : tensor<?x2x16x8x128xf16>)
      kv_indptr(%kv_indptr : tensor<?xi32>)
      kv_indices(%kv_indices : tensor<?xi32>)
      kv_last_page_len(%kv_last_page_len : tensor<?xi32>)
      outs(%o_init, %lse_init : tensor<?x32x128xf16>, tensor<?x32xf32>)
      {page_size = 16 : i64, kv_layout = #cascade.kv_layout<nhd>}
      -> tensor<?x32x128xf16>, tensor<?x32xf32>
  return %o, %lse : tensor<?x32x128xf16>, tensor<?x32xf32>
}
