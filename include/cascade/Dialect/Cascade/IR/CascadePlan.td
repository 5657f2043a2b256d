//===- CascadePlan.td - Plans of attention levels ----------*- tablegen -*-===//
//
// The plan-phase scheduling of an attention level as a value of the IR: the
// `!cascade.plan` type and the `cascade.plan` op that makes one at run time
// through the runtime shim (docs/lowering.md, "Plans in IR").
//
//===----------------------------------------------------------------------===//

#ifndef CASCADE_DIALECT_CASCADE_IR_CASCADEPLAN_TD
#define CASCADE_DIALECT_CASCADE_IR_CASCADEPLAN_TD

include "cascade/Dialect/Cascade/IR/CascadeBase.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/IR/OpBase.td"

def Cascade_PlanType : TypeDef<Cascade_Dialect, "Plan"> {
  let mnemonic = "plan";
  let summary = "The plan of one attention level, made at run time";
  let description = [{
    A handle to the plan of one attention level (docs/plan-schema.md): the
    split-KV work partition, the query tiles and the workspaces, made on the
    host from the host copies of the level's index arrays by the runtime's
    `makePlan` and uploaded to the device. `cascade.paged_attention` and
    `cascade.multi_level_attention` take plans to run planned launches.

    The type fixes what a plan depends on besides the lengths: whether the
    level is a decode (one query per request) or a prefill (query tiles),
    the query and KV head counts, `head_dim`, the page size and, for
    CUDA-graph mode, the row capacity (`graph_rows`): every replan keeps
    every launch size and device address of the first one, for up to
    `graph_rows` query rows (decode: requests). `auto_cascade` (decode
    plans): the plan of a plain batch that the runtime turns into a cascade
    when adjacent requests share page prefixes (docs/auto-cascade.md): a
    shared level read once per group, then each request's own pages.

    Examples:

    ```mlir
    !cascade.plan<decode, heads = 32 / 8, head_dim = 128, page_size = 16>
    !cascade.plan<prefill, heads = 64 / 8, head_dim = 128, page_size = 16,
                  graph_rows = 4096>
    !cascade.plan<decode, heads = 32 / 8, head_dim = 128, page_size = 16,
                  auto_cascade>
    ```
  }];
  let parameters = (ins "bool":$prefill, "int64_t":$numQoHeads,
                        "int64_t":$numKvHeads, "int64_t":$headDim,
                        "int64_t":$pageSize, "int64_t":$graphRows,
                        "bool":$autoCascade);
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// True when the plan is made for CUDA-graph replay (graph_rows > 0).
    bool isGraph() const { return getGraphRows() > 0; }
  }];
}

def Cascade_PlanOp : Op<Cascade_Dialect, "plan", [
    AttrSizedOperandSegments,
    DeclareOpInterfaceMethods<MemoryEffectsOpInterface>]> {
  let summary = "Plan one attention level at run time";
  let description = [{
    Plans one attention level from the host copies of its index arrays
    (1-D i32 memrefs in host memory): `qo_indptr` (prefill plans only),
    `kv_indptr`, `kv_last_page_len` and optionally `kv_indices` (then page
    ids are checked). The result type says what is planned (decode or
    prefill, heads, `head_dim`, page size, CUDA-graph row capacity).

    Lowered by `cascade-lower-plans` into a call of the runtime shim
    (`cascade_mgpu_plan`, docs/runtime.md) that plans with the runtime's
    `makePlan`, allocates the level's workspaces or reuses those of the
    previous plan made by the same op, and uploads the plan. Each op owns
    one plan: a later execution of the same op replans into it, so a plan
    handed to a run function stays valid (and, in graph mode, keeps its
    device addresses) until the op runs again.

    An `auto_cascade` plan reads `kv_indices` (required) to find the page
    prefixes that adjacent requests share, and plans the cascade it finds
    (at most one shared level; docs/auto-cascade.md); the level that takes
    it runs as that cascade, or as the plain batch when nothing is shared.

    Options: `fixed_split_pages` (FlashInfer's `fixed_split_size`: a fixed
    KV chunk in pages, 0 = automatic), `disable_split_kv` (never split), and
    `occupancy` (resident blocks per SM of the level's split kernel; by
    default the lowering estimates it from the kernel configuration and the
    chip).

    Example:

    ```mlir
    %p = cascade.plan qo_indptr(%qo : memref<?xi32>) kv_indptr(%kv : memref<?xi32>)
        kv_last_page_len(%last : memref<?xi32>)
        : !cascade.plan<prefill, heads = 64 / 8, head_dim = 128, page_size = 16>
    ```
  }];
  let arguments = (ins Optional<MemRefRankOf<[I32], [1]>>:$qo_indptr,
                       MemRefRankOf<[I32], [1]>:$kv_indptr,
                       MemRefRankOf<[I32], [1]>:$kv_last_page_len,
                       Optional<MemRefRankOf<[I32], [1]>>:$kv_indices,
                       DefaultValuedAttr<I64Attr, "0">:$fixed_split_pages,
                       UnitAttr:$disable_split_kv,
                       OptionalAttr<I64Attr>:$occupancy);
  let results = (outs Cascade_PlanType:$plan);
  let assemblyFormat = [{
    (`qo_indptr` `(` $qo_indptr^ `:` type($qo_indptr) `)`)?
    `kv_indptr` `(` $kv_indptr `:` type($kv_indptr) `)`
    `kv_last_page_len` `(` $kv_last_page_len `:` type($kv_last_page_len) `)`
    (`kv_indices` `(` $kv_indices^ `:` type($kv_indices) `)`)?
    attr-dict `:` qualified(type($plan))
  }];
  let hasVerifier = 1;
}

#endif // CASCADE_DIALECT_CASCADE_IR_CASCADEPLAN_TD
