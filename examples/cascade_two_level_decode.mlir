// cascade_two_level_decode.mlir - two-level cascade decode: a prefix shared by
// the whole batch plus each request's unique suffix.
//
// FlashInfer: the decode example of MultiLevelCascadeAttentionWrapper(2, ...,
// "NHD"): num_qo_heads = 64, num_kv_heads = 8, head_dim = 128, page_size = 16,
// fp16, one query token per request (batch size B, 7 in FlashInfer's example):
//
//   level 0 (shared prefix): qo_indptr = [0, B]       - all B queries form a
//            single group that reads the shared pages once;
//            kv_indptr = [0, shared_pages], kv_last_page_len = [16].
//   level 1 (unique suffix): qo_indptr = [0, 1, ..., B] - one query per request;
//            kv_indptr / kv_indices / kv_last_page_len per request.
//
// Both levels index the same page pool [num_pages, 2, 16, 8, 128] (NHD). The
// result is the merge of the two levels' attention states: exactly the
// attention of each query over shared prefix + its own suffix, with
// sm_scale = 1/sqrt(128). o [B, 64, 128] f16, lse [B, 64] f32 (base 2).
//
// decode_levels marks level 1 as one query per request: it lowers to a decode
// kernel, level 0 (all B queries over the shared pages) to the tensor-core
// multi-query prefill, which reads every shared page once per KV head.
// cascade-decompose-levels rewrites the op into one cascade.paged_attention
// per level; level 1 accumulates into level 0's state in its own epilogue
// (no temporary state, no separate merge launch).
//
// Run:
//   cascade-opt examples/cascade_two_level_decode.mlir
//   cascade-opt examples/cascade_two_level_decode.mlir -cascade-decompose-levels
//   cascade-opt examples/cascade_two_level_decode.mlir -cascade-decompose-levels -one-shot-bufferize="bufferize-function-boundaries"
//   cascade-opt examples/cascade_two_level_decode.mlir --cascade-to-ptx="bundle-dir=DIR"

func.func @cascade_two_level_decode(
    %q: tensor<?x64x128xf16>,
    %kv_cache: tensor<?x2x16x8x128xf16>,
    // Level 0: the shared prefix (one group of all B queries).
    %shared_qo_indptr: tensor<2xi32>,
    %shared_kv_indptr: tensor<2xi32>,
    %shared_kv_indices: tensor<?xi32>,
    %shared_kv_last_page_len: tensor<1xi32>,
    // Level 1: the unique suffixes (one query per request).
    %unique_qo_indptr: tensor<?xi32>,
    %unique_kv_indptr: tensor<?xi32>,
    %unique_kv_indices: tensor<?xi32>,
    %unique_kv_last_page_len: tensor<?xi32>)
    -> (tensor<?x64x128xf16>, tensor<?x64xf32>) {
  %c0 = arith.constant 0 : index
  %batch = tensor.dim %q, %c0 : tensor<?x64x128xf16>
  %o_init = tensor.empty(%batch) : tensor<?x64x128xf16>
  %lse_init = tensor.empty(%batch) : tensor<?x64xf32>
  %o, %lse = cascade.multi_level_attention
      q(%q : tensor<?x64x128xf16>) kv(%kv_cache : tensor<?x2x16x8x128xf16>)
      qo_indptr(%shared_qo_indptr, %unique_qo_indptr : tensor<2xi32>, tensor<?xi32>)
      kv_indptr(%shared_kv_indptr, %unique_kv_indptr : tensor<2xi32>, tensor<?xi32>)
      kv_indices(%shared_kv_indices, %unique_kv_indices : tensor<?xi32>, tensor<?xi32>)
      kv_last_page_len(%shared_kv_last_page_len, %unique_kv_last_page_len : tensor<1xi32>, tensor<?xi32>)
      outs(%o_init, %lse_init : tensor<?x64x128xf16>, tensor<?x64xf32>)
      {page_size = 16 : i64, kv_layout = #cascade.kv_layout<nhd>,
       decode_levels = array<i1: false, true>}
      -> tensor<?x64x128xf16>, tensor<?x64xf32>
  return %o, %lse : tensor<?x64x128xf16>, tensor<?x64xf32>
}
