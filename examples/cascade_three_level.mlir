// cascade_three_level.mlir - three-level cascade append (prefill) attention:
// a system prompt shared by every request, a context shared by each group of
// requests, and each request's own suffix.
//
// FlashInfer: MultiLevelCascadeAttentionWrapper(3, ..., "NHD") planned with
// causal=True; num_qo_heads = 32, num_kv_heads = 8, head_dim = 128,
// page_size = 16, fp16. The batch has B requests in G groups; request i
// appends n_i new query tokens (rows = n_0 + ... + n_{B-1}, in request order,
// requests of a group adjacent). Every level covers all rows:
//
//   level 0 (system prompt): qo_indptr = [0, rows] - every query token of the
//            batch reads the system-prompt pages once;
//            kv_indptr = [0, prompt_pages], kv_last_page_len [1].
//   level 1 (group context): qo_indptr [G+1] = the first row of each group;
//            kv_indptr [G+1], kv_last_page_len [G]: one page list per group.
//   level 2 (request suffix): qo_indptr [B+1] = the first row of each
//            request; kv_indptr [B+1], kv_last_page_len [B]: each request's
//            own pages, which include its n_i new tokens.
//
// `causal` applies to the last level only (the prefix levels precede every
// new token): token j of request i sees the whole system prompt, the whole
// group context and suffix keys up to position suffix_len_i - n_i + j.
// The page pool [num_pages, 2, 16, 8, 128] (NHD) holds all three levels' pages.
//
// cascade-decompose-levels rewrites the op into three cascade.paged_attention
// (only the third causal); levels 1 and 2 accumulate into level 0's state in
// their own epilogues.
//
// Run:
//   cascade-opt examples/cascade_three_level.mlir
//   cascade-opt examples/cascade_three_level.mlir -cascade-decompose-levels
//   cascade-opt examples/cascade_three_level.mlir -cascade-decompose-levels -one-shot-bufferize="bufferize-function-boundaries"

func.func @cascade_three_level(
    %q: tensor<?x32x128xf16>,
    %kv_cache: tensor<?x2x16x8x128xf16>,
    // Level 0: the system prompt, shared by all rows.
    %prompt_qo_indptr: tensor<2xi32>,
    %prompt_kv_indptr: tensor<2xi32>,
    %prompt_kv_indices: tensor<?xi32>,
    %prompt_kv_last_page_len: tensor<1xi32>,
    // Level 1: one context per group of requests.
    %group_qo_indptr: tensor<?xi32>,
    %group_kv_indptr: tensor<?xi32>,
    %group_kv_indices: tensor<?xi32>,
    %group_kv_last_page_len: tensor<?xi32>,
    // Level 2: one suffix per request.
    %request_qo_indptr: tensor<?xi32>,
    %request_kv_indptr: tensor<?xi32>,
    %request_kv_indices: tensor<?xi32>,
    %request_kv_last_page_len: tensor<?xi32>)
    -> (tensor<?x32x128xf16>, tensor<?x32xf32>) {
  %c0 = arith.constant 0 : index
  %rows = tensor.dim %q, %c0 : tensor<?x32x128xf16>
  %o_init = tensor.empty(%rows) : tensor<?x32x128xf16>
  %lse_init = tensor.empty(%rows) : tensor<?x32xf32>
  %o, %lse = cascade.multi_level_attention
      q(%q : tensor<?x32x128xf16>) kv(%kv_cache : tensor<?x2x16x8x128xf16>)
      qo_indptr(%prompt_qo_indptr, %group_qo_indptr, %request_qo_indptr
                : tensor<2xi32>, tensor<?xi32>, tensor<?xi32>)
      kv_indptr(%prompt_kv_indptr, %group_kv_indptr, %request_kv_indptr
                : tensor<2xi32>, tensor<?xi32>, tensor<?xi32>)
      kv_indices(%prompt_kv_indices, %group_kv_indices, %request_kv_indices
                 : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>)
      kv_last_page_len(%prompt_kv_last_page_len, %group_kv_last_page_len, %request_kv_last_page_len
                       : tensor<1xi32>, tensor<?xi32>, tensor<?xi32>)
      outs(%o_init, %lse_init : tensor<?x32x128xf16>, tensor<?x32xf32>)
      {page_size = 16 : i64, kv_layout = #cascade.kv_layout<nhd>, causal}
      -> tensor<?x32x128xf16>, tensor<?x32xf32>
  return %o, %lse : tensor<?x32x128xf16>, tensor<?x32xf32>
}
