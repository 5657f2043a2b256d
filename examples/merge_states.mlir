// merge_states.mlir - merge N attention states per row.
//
// FlashInfer: flashinfer.merge_states(v, s) with v [rows, N, heads, head_dim]
// and s [rows, N, heads].
//
// For every row and head, the N states (v[:, i], s[:, i]) - e.g. the partial
// results of N KV chunks of a split-KV decode - are merged into one state
// (v_out [rows, heads, head_dim], s_out [rows, heads]). With base-2 LSE:
//
//   m = max_i s_i, w_i = exp2(s_i - m)
//   v_out = sum_i w_i v_i / sum_i w_i,  s_out = m + log2(sum_i w_i)
//
// Shapes: any number of rows, N = 4 states, 32 heads, head_dim 128, f16.
//
// Run:
//   cascade-opt examples/merge_states.mlir
//   cascade-opt examples/merge_states.mlir -one-shot-bufferize="bufferize-function-boundaries"

func.func @merge_states(%v_in: tensor<?x4x32x128xf16>, %s_in: tensor<?x4x32xf32>)
    -> (tensor<?x32x128xf16>, tensor<?x32xf32>) {
  %c0 = arith.constant 0 : index
  %rows = tensor.dim %v_in, %c0 : tensor<?x4x32x128xf16>
  %v_init = tensor.empty(%rows) : tensor<?x32x128xf16>
  %s_init = tensor.empty(%rows) : tensor<?x32xf32>
  %v, %s = cascade.merge_states
      ins(%v_in, %s_in : tensor<?x4x32x128xf16>, tensor<?x4x32xf32>)
      outs(%v_init, %s_init : tensor<?x32x128xf16>, tensor<?x32xf32>)
      -> tensor<?x32x128xf16>, tensor<?x32xf32>
  return %v, %s : tensor<?x32x128xf16>, tensor<?x32xf32>
}
