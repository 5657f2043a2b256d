//===- Passes.td - Cascade dialect passes ------------------*- tablegen -*-===//

#ifndef CASCADE_DIALECT_CASCADE_TRANSFORMS_PASSES_TD
#define CASCADE_DIALECT_CASCADE_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def CascadeDecomposeLevels : Pass<"cascade-decompose-levels"> {
  let summary = "Rewrite multi-level cascades into per-level attention and merges";
  let description = [{
    Rewrites every `cascade.multi_level_attention` into one
    `cascade.paged_attention` per level. Level 0 writes straight into the
    op's destinations. By default (`fuse-merges=true`) every later level is a
    `cascade.paged_attention {accumulate}` on the same destinations: it merges
    its state into the running one in its own epilogue, so a cascade needs no
    temporary state and no separate merge launch. With `fuse-merges=false`
    every later level writes into a fresh temporary (`tensor.empty` on
    tensors, `memref.alloc` + `memref.dealloc` on memrefs) of the
    destinations' shape and a `cascade.merge_state_in_place` folds it in.
    Only the last level keeps `causal`; every other option is copied to all
    levels.

    Example:

    ```mlir
    %o, %lse = cascade.multi_level_attention q(%q : ...) kv(%c : ...)
        qo_indptr(%qo0, %qo1 : ...) kv_indptr(%kp0, %kp1 : ...)
        kv_indices(%ki0, %ki1 : ...) kv_last_page_len(%kl0, %kl1 : ...)
        outs(%o0, %l0 : ...) {causal, page_size = 16 : i64} -> ...
    ```

    becomes

    ```mlir
    %a:2 = cascade.paged_attention ... qo_indptr(%qo0 : ...) ... outs(%o0, %l0 : ...)
    %b:2 = cascade.paged_attention ... qo_indptr(%qo1 : ...) ... outs(%a#0, %a#1 : ...)
        {accumulate, causal, ...}
    ```
  }];
  let options = [
    Option<"fuseMerges", "fuse-merges", "bool", /*default=*/"true",
           "Fuse each level's merge into the level (accumulate) instead of "
           "a temporary state and a merge_state_in_place">,
  ];
  let dependentDialects = ["::mlir::tensor::TensorDialect",
                           "::mlir::memref::MemRefDialect"];
}

#endif // CASCADE_DIALECT_CASCADE_TRANSFORMS_PASSES_TD
