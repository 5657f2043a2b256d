// cascade_auto_decode.mlir - a plain paged decode whose cascade the runtime
// finds at run time.
//
// One query per request (64 query heads, 8 KV heads, head_dim 128, page 16,
// fp16) over a paged KV cache, written as a plain cascade.paged_attention.
// Its plan is an `auto_cascade` plan: on every call the runtime shim
// compares the page tables of adjacent requests (docs/auto-cascade.md) and,
// where a group of requests shares a page prefix worth a level (a system
// prompt, a few-shot context), runs it as a two-level cascade: the shared
// pages read once per group on the tensor-core prefill (split over the SMs
// where that pays), then each request's own pages merged into that state.
// A batch that shares nothing runs as the plain planned decode.
//
// The plan reads the host copies of kv_indptr, kv_last_page_len and
// kv_indices (the page ids it compares); the attention reads their device
// copies.
//
// Run:
//   cascade-opt examples/cascade_auto_decode.mlir
//   cascade-opt examples/cascade_auto_decode.mlir --cascade-to-ptx="bundle-dir=DIR"

!auto = !cascade.plan<decode, heads = 64 / 8, head_dim = 128, page_size = 16, auto_cascade>

func.func @cascade_auto_decode(
    %q: tensor<?x64x128xf16>,
    %kv_cache: tensor<?x2x16x8x128xf16>,
    %kv_indptr: tensor<?xi32>,
    %kv_indices: tensor<?xi32>,
    %kv_last_page_len: tensor<?xi32>,
    %host_kv_indptr: memref<?xi32>,
    %host_kv_indices: memref<?xi32>,
    %host_kv_last_page_len: memref<?xi32>)
    -> (tensor<?x64x128xf16>, tensor<?x64xf32>) {
  %plan = cascade.plan kv_indptr(%host_kv_indptr : memref<?xi32>)
      kv_last_page_len(%host_kv_last_page_len : memref<?xi32>)
      kv_indices(%host_kv_indices : memref<?xi32>) : !auto
  %c0 = arith.constant 0 : index
  %batch = tensor.dim %q, %c0 : tensor<?x64x128xf16>
  %o_init = tensor.empty(%batch) : tensor<?x64x128xf16>
  %lse_init = tensor.empty(%batch) : tensor<?x64xf32>
  %o, %lse = cascade.paged_attention
      q(%q : tensor<?x64x128xf16>) kv(%kv_cache : tensor<?x2x16x8x128xf16>)
      kv_indptr(%kv_indptr : tensor<?xi32>) kv_indices(%kv_indices : tensor<?xi32>)
      kv_last_page_len(%kv_last_page_len : tensor<?xi32>)
      plan(%plan : !auto)
      outs(%o_init, %lse_init : tensor<?x64x128xf16>, tensor<?x64xf32>)
      {page_size = 16 : i64} -> tensor<?x64x128xf16>, tensor<?x64xf32>
  return %o, %lse : tensor<?x64x128xf16>, tensor<?x64xf32>
}
