// merge_state.mlir - merge two attention states into their union.
//
// FlashInfer: flashinfer.merge_state(v_a, s_a, v_b, s_b) -> (v, s).
//
// (v_a, s_a) and (v_b, s_b) are the attention states of the same queries over
// two disjoint sets of keys (for example a shared prefix and a unique suffix):
// v_* is the softmax-normalized partial output [rows, heads, head_dim] and s_*
// the log-sum-exp of the scaled scores [rows, heads] (base 2, FlashInfer's
// convention). The result is the state over the union of the two key sets:
//
//   m = max(s_a, s_b), w_x = exp2(s_x - m)
//   v = (w_a v_a + w_b v_b) / (w_a + w_b),  s = m + log2(w_a + w_b)
//
// Shapes: any number of rows, 32 heads, head_dim 128, f16 values, f32 LSE.
// The destinations (%v_init, %s_init) are fully overwritten.
//
// Run:
//   cascade-opt examples/merge_state.mlir
//   cascade-opt examples/merge_state.mlir -one-shot-bufferize="bufferize-function-boundaries"

func.func @merge_state(%v_a: tensor<?x32x128xf16>, %s_a: tensor<?x32xf32>,
                       %v_b: tensor<?x32x128xf16>, %s_b: tensor<?x32xf32>)
    -> (tensor<?x32x128xf16>, tensor<?x32xf32>) {
  %c0 = arith.constant 0 : index
  %rows = tensor.dim %v_a, %c0 : tensor<?x32x128xf16>
  %v_init = tensor.empty(%rows) : tensor<?x32x128xf16>
  %s_init = tensor.empty(%rows) : tensor<?x32xf32>
  %v, %s = cascade.merge_state
      ins(%v_a, %s_a, %v_b, %s_b : tensor<?x32x128xf16>, tensor<?x32xf32>,
                                   tensor<?x32x128xf16>, tensor<?x32xf32>)
      outs(%v_init, %s_init : tensor<?x32x128xf16>, tensor<?x32xf32>)
      -> tensor<?x32x128xf16>, tensor<?x32xf32>
  return %v, %s : tensor<?x32x128xf16>, tensor<?x32xf32>
}
