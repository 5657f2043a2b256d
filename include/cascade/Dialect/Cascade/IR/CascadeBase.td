//===- CascadeBase.td - Cascade dialect definition ---------*- tablegen -*-===//
//
// The `cascade` dialect: cascade attention for LLM serving.
//
//===----------------------------------------------------------------------===//

#ifndef CASCADE_DIALECT_CASCADE_IR_CASCADEBASE_TD
#define CASCADE_DIALECT_CASCADE_IR_CASCADEBASE_TD

include "mlir/IR/OpBase.td"

def Cascade_Dialect : Dialect {
  let name = "cascade";
  let cppNamespace = "::mlir::cascade";
  let summary = "Cascade attention over a paged KV cache, and attention-state merges";
  let description = [{
    The `cascade` dialect expresses the attention computations of LLM serving
    the way FlashInfer's `flashinfer.cascade` module offers them: attention
    over a paged KV cache (decode and prefill/append), the merge of attention
    states, and multi-level cascades where a shared prefix is read once for a
    whole batch.

    An *attention state* over a set of keys is a pair `(v, s)`: `v` is the
    normalized partial output `softmax(scores) @ V` and `s` the log-sum-exp of
    the scaled scores, always `f32`. The base of `s` is explicit: every op that
    produces or consumes `s` carries an `lse_base` attribute (default base 2,
    as FlashInfer). The empty state is `(0, -inf)`.

    Ops are in destination-passing style. On tensors they return new values;
    after One-Shot Bufferize they take memrefs and have no results, which is
    the form the GPU lowering consumes.

    ```mlir
    %v, %s = cascade.merge_state
        ins(%va, %sa, %vb, %sb : tensor<?x32x128xf16>, tensor<?x32xf32>,
                                 tensor<?x32x128xf16>, tensor<?x32xf32>)
        outs(%v0, %s0 : tensor<?x32x128xf16>, tensor<?x32xf32>)
        -> tensor<?x32x128xf16>, tensor<?x32xf32>
    ```
  }];
  let useDefaultAttributePrinterParser = 1;
  let useDefaultTypePrinterParser = 1;
  let extraClassDeclaration = [{
    /// Registers the dialect's types (CascadePlan.cpp).
    void registerTypes();
  }];
  let discardableAttrs = (ins "::mlir::cascade::KernelConfigAttr":$kernel_config);
  let hasOperationAttrVerify = 1;
  let dependentDialects = [];
}

#endif // CASCADE_DIALECT_CASCADE_IR_CASCADEBASE_TD
