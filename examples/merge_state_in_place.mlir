// merge_state_in_place.mlir - fold another attention state into (v, s).
//
// FlashInfer: flashinfer.merge_state_in_place(v, s, v_other, s_other, mask).
//
// (v, s) is the running attention state of every row; (v_other, s_other) is
// the state of the same rows over another, disjoint set of keys. The op merges
// the two (same formula as cascade.merge_state, base-2 LSE) and returns the
// updated (v, s). The optional mask [rows] (i8) skips the rows where it is 0:
// those rows keep their old (v, s) - e.g. requests that have no tokens in the
// other key set. After bufferization the op updates the buffers of (v, s) in
// place (no copy when, as here, they are function arguments).
//
// Shapes: any number of rows, 32 heads, head_dim 128, f16 values, f32 LSE.
//
// Run:
//   cascade-opt examples/merge_state_in_place.mlir
//   cascade-opt examples/merge_state_in_place.mlir -one-shot-bufferize="bufferize-function-boundaries"

func.func @merge_state_in_place(%v: tensor<?x32x128xf16>, %s: tensor<?x32xf32>,
                                %v_other: tensor<?x32x128xf16>, %s_other: tensor<?x32xf32>,
                                %mask: tensor<?xi8>)
    -> (tensor<?x32x128xf16>, tensor<?x32xf32>) {
  %v_new, %s_new = cascade.merge_state_in_place
      ins(%v_other, %s_other : tensor<?x32x128xf16>, tensor<?x32xf32>)
      mask(%mask : tensor<?xi8>)
      outs(%v, %s : tensor<?x32x128xf16>, tensor<?x32xf32>)
      -> tensor<?x32x128xf16>, tensor<?x32xf32>
  return %v_new, %s_new : tensor<?x32x128xf16>, tensor<?x32xf32>
}
