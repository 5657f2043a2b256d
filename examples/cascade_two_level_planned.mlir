// cascade_two_level_planned.mlir - the two-level decode cascade of
// cascade_two_level_decode.mlir, planned at run time.
//
// Same shapes and meaning (64/8 heads, head_dim 128, page 16, fp16, level 0
// a prefix shared by all B queries, level 1 each request's own suffix), but
// each level takes the plan the runtime makes for it on every call, as
// FlashInfer's MultiLevelCascadeAttentionWrapper.plan() and the Python
// package do: `cascade.plan` reads the host copies of the level's index
// arrays (memrefs in host memory: what a serving engine has before it copies
// them to the GPU), and the runtime shim splits the shared prefix's KV over
// the device's SMs (the split tensor-core prefill, then a merge of the
// partial states) where that pays, the suffixes as their lengths ask.
//
// Lowered by cascade-to-ptx: cascade-lower-plans turns each plan into a
// call of the runtime shim (cascade_mgpu_plan, libcascade_mlir_cuda_runtime,
// docs/runtime.md) and each level into its split launch or its
// self-scheduled launch, chosen at run time by the plan.
//
// Run:
//   cascade-opt examples/cascade_two_level_planned.mlir -cascade-decompose-levels
//   cascade-opt examples/cascade_two_level_planned.mlir --cascade-to-ptx="bundle-dir=DIR"

!shared_plan = !cascade.plan<prefill, heads = 64 / 8, head_dim = 128, page_size = 16>
!unique_plan = !cascade.plan<decode, heads = 64 / 8, head_dim = 128, page_size = 16>

func.func @cascade_two_level_planned(
    %q: tensor<?x64x128xf16>,
    %kv_cache: tensor<?x2x16x8x128xf16>,
    // Level 0: the shared prefix (one group of all B queries), on the device.
    %shared_qo_indptr: tensor<2xi32>,
    %shared_kv_indptr: tensor<2xi32>,
    %shared_kv_indices: tensor<?xi32>,
    %shared_kv_last_page_len: tensor<1xi32>,
    // Level 1: the unique suffixes (one query per request), on the device.
    %unique_qo_indptr: tensor<?xi32>,
    %unique_kv_indptr: tensor<?xi32>,
    %unique_kv_indices: tensor<?xi32>,
    %unique_kv_last_page_len: tensor<?xi32>,
    // The host copies the plans are made from.
    %host_shared_qo_indptr: memref<2xi32>,
    %host_shared_kv_indptr: memref<2xi32>,
    %host_shared_kv_last_page_len: memref<1xi32>,
    %host_unique_kv_indptr: memref<?xi32>,
    %host_unique_kv_last_page_len: memref<?xi32>)
    -> (tensor<?x64x128xf16>, tensor<?x64xf32>) {
  %shared = cascade.plan qo_indptr(%host_shared_qo_indptr : memref<2xi32>)
      kv_indptr(%host_shared_kv_indptr : memref<2xi32>)
      kv_last_page_len(%host_shared_kv_last_page_len : memref<1xi32>)
      : !shared_plan
  %unique = cascade.plan kv_indptr(%host_unique_kv_indptr : memref<?xi32>)
      kv_last_page_len(%host_unique_kv_last_page_len : memref<?xi32>)
      : !unique_plan
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
      plans(%shared, %unique : !shared_plan, !unique_plan)
      outs(%o_init, %lse_init : tensor<?x64x128xf16>, tensor<?x64xf32>)
      {page_size = 16 : i64, kv_layout = #cascade.kv_layout<nhd>,
       decode_levels = array<i1: false, true>}
      -> tensor<?x64x128xf16>, tensor<?x64xf32>
  return %o, %lse : tensor<?x64x128xf16>, tensor<?x64xf32>
}
