//===- CascadeOps.td - Cascade dialect operations ----------*- tablegen -*-===//
//
// Attention-state merges, paged attention and multi-level cascades.
//
//===----------------------------------------------------------------------===//

#ifndef CASCADE_DIALECT_CASCADE_IR_CASCADEOPS_TD
#define CASCADE_DIALECT_CASCADE_IR_CASCADEOPS_TD

include "cascade/Dialect/Cascade/IR/CascadeBase.td"
include "cascade/Dialect/Cascade/IR/CascadeAttrs.td"
include "cascade/Dialect/Cascade/IR/CascadePlan.td"
include "mlir/Interfaces/DestinationStyleOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/IR/OpBase.td"

//===----------------------------------------------------------------------===//
// Common pieces
//===----------------------------------------------------------------------===//

/// A ranked tensor (value semantics) or a strided memref (buffer semantics).
def Cascade_TensorOrMemRef : AnyTypeOf<[AnyRankedTensor, AnyStridedMemRef],
                                       "ranked tensor or strided memref">;

/// Every cascade op is in destination-passing style: its last two operands
/// are the destinations `(v, s)` or `(o, lse)`. On tensors it returns two
/// results of the destinations' types; on memrefs it returns nothing.
class Cascade_Op<string mnemonic, list<Trait> traits = []>
    : Op<Cascade_Dialect, mnemonic, !listconcat(traits, [
        DestinationStyleOpInterface,
        DeclareOpInterfaceMethods<MemoryEffectsOpInterface>])> {
  let results = (outs Variadic<AnyRankedTensor>:$results);
  let hasVerifier = 1;
  code dpsClassDeclaration = [{
    /// The destinations are always the last two operands.
    ::mlir::MutableOperandRange getDpsInitsMutable() {
      return ::mlir::MutableOperandRange(getOperation(),
                                         getOperation()->getNumOperands() - 2,
                                         2);
    }
  }];
  let extraClassDeclaration = dpsClassDeclaration;
}

def Cascade_DefaultLSEBase
    : DefaultValuedAttr<Cascade_LSEBaseAttr, "::mlir::cascade::LSEBase::Base2">;

//===----------------------------------------------------------------------===//
// Merge ops
//===----------------------------------------------------------------------===//

def Cascade_MergeStateOp : Cascade_Op<"merge_state"> {
  let summary = "Merge two attention states";
  let description = [{
    Merges the attention states `(v_a, s_a)` and `(v_b, s_b)` of two disjoint
    key sets into the state of their union, written to the destinations
    `(v, s)`. `v_*` are `[L, H, D]` (f16, bf16 or f32), `s_*` are `[L, H]` f32.
    With `m = max(s_a, s_b)`, `w_x = exp2(s_x - m)` (base 2):
    `v = (w_a v_a + w_b v_b) / (w_a + w_b)`, `s = m + log2(w_a + w_b)`.
    Arithmetic is f32. An empty state `(0, -inf)` merged with any state returns
    that state exactly; two empty states give `(0, -inf)`, never NaN.

    Example:

    ```mlir
    %v, %s = cascade.merge_state
        ins(%va, %sa, %vb, %sb : tensor<?x32x128xf16>, tensor<?x32xf32>,
                                 tensor<?x32x128xf16>, tensor<?x32xf32>)
        outs(%v0, %s0 : tensor<?x32x128xf16>, tensor<?x32xf32>)
        -> tensor<?x32x128xf16>, tensor<?x32xf32>
    ```
  }];
  let arguments = (ins Cascade_TensorOrMemRef:$v_a, Cascade_TensorOrMemRef:$s_a,
                       Cascade_TensorOrMemRef:$v_b, Cascade_TensorOrMemRef:$s_b,
                       Cascade_TensorOrMemRef:$v, Cascade_TensorOrMemRef:$s,
                       Cascade_DefaultLSEBase:$lse_base);
  let assemblyFormat = [{
    `ins` `(` $v_a `,` $s_a `,` $v_b `,` $s_b `:` type($v_a) `,` type($s_a) `,`
        type($v_b) `,` type($s_b) `)`
    `outs` `(` $v `,` $s `:` type($v) `,` type($s) `)`
    attr-dict (`->` type($results)^)?
  }];
}

def Cascade_MergeStateInPlaceOp
    : Cascade_Op<"merge_state_in_place"> {
  let summary = "Merge another attention state into `(v, s)` in place";
  let description = [{
    Merges `(v_other, s_other)` into the destination state `(v, s)`. Shapes are
    as for `cascade.merge_state`. The optional `mask` (`[L]`, `i1` or `i8`,
    possibly strided) skips the rows where it is 0: those rows of `(v, s)` are
    left untouched. On tensors the op returns the updated state; after
    bufferization it updates the buffers of `(v, s)` in place.

    Example:

    ```mlir
    cascade.merge_state_in_place
        ins(%vo, %so : memref<?x32x128xf16>, memref<?x32xf32>)
        mask(%m : memref<?xi8, strided<[?]>>)
        outs(%v, %s : memref<?x32x128xf16>, memref<?x32xf32>)
    ```
  }];
  let arguments = (ins Cascade_TensorOrMemRef:$v_other,
                       Cascade_TensorOrMemRef:$s_other,
                       Optional<Cascade_TensorOrMemRef>:$mask,
                       Cascade_TensorOrMemRef:$v, Cascade_TensorOrMemRef:$s,
                       Cascade_DefaultLSEBase:$lse_base);
  let assemblyFormat = [{
    `ins` `(` $v_other `,` $s_other `:` type($v_other) `,` type($s_other) `)`
    (`mask` `(` $mask^ `:` type($mask) `)`)?
    `outs` `(` $v `,` $s `:` type($v) `,` type($s) `)`
    attr-dict (`->` type($results)^)?
  }];
}

def Cascade_MergeStatesOp : Cascade_Op<"merge_states"> {
  let summary = "Merge N attention states per row";
  let description = [{
    Merges, for every row and head, the N states `(v[:, i], s[:, i])` of
    `v [L, N, H, D]`, `s [L, N, H]` into `(v_out [L, H, D], s_out [L, H])`.
    `N = 0` gives the empty state `(0, -inf)`.

    Example:

    ```mlir
    %v, %s = cascade.merge_states
        ins(%vs, %ss : tensor<?x16x32x128xf16>, tensor<?x16x32xf32>)
        outs(%v0, %s0 : tensor<?x32x128xf16>, tensor<?x32xf32>)
        -> tensor<?x32x128xf16>, tensor<?x32xf32>
    ```
  }];
  let arguments = (ins Cascade_TensorOrMemRef:$v_in,
                       Cascade_TensorOrMemRef:$s_in,
                       Cascade_TensorOrMemRef:$v, Cascade_TensorOrMemRef:$s,
                       Cascade_DefaultLSEBase:$lse_base);
  let assemblyFormat = [{
    `ins` `(` $v_in `,` $s_in `:` type($v_in) `,` type($s_in) `)`
    `outs` `(` $v `,` $s `:` type($v) `,` type($s) `)`
    attr-dict (`->` type($results)^)?
  }];
}

//===----------------------------------------------------------------------===//
// Attention over a paged KV cache
//===----------------------------------------------------------------------===//

/// The options of one attention level, shared by `paged_attention` and
/// `multi_level_attention`.
defvar Cascade_AttentionOptions = (ins
    ConfinedAttr<I64Attr, [IntPositive]>:$page_size,
    DefaultValuedAttr<Cascade_KVLayoutAttr, "::mlir::cascade::KVLayout::NHD">:$kv_layout,
    UnitAttr:$causal,
    OptionalAttr<F32Attr>:$sm_scale,
    DefaultValuedAttr<F32Attr, "0.0f">:$logits_soft_cap,
    DefaultValuedAttr<I64Attr, "-1">:$window_left,
    DefaultValuedAttr<Cascade_PosEncodingAttr, "::mlir::cascade::PosEncoding::None">:$pos_encoding,
    DefaultValuedAttr<F32Attr, "1.0f">:$rope_scale,
    DefaultValuedAttr<F32Attr, "10000.0f">:$rope_theta,
    Cascade_DefaultLSEBase:$lse_base);

/// The state inputs of an attention op (docs/semantics.md, "State inputs"):
/// optional f32 `[Hqo]` operands, one value per query head, that act on each
/// head's final softmax state, once per cascade. Both attention ops name
/// them here, and only here: the verifier, the decomposition, the planner,
/// the IR builders and the kernels' specs and launches reach them through
/// these methods, each input's kernel hook through its name
/// (lib/Conversion/CascadeToGPU/common/StateInputs.cpp).
defvar Cascade_StateInputsDeclaration = [{
    /// The state inputs' names, in operand order.
    static ::llvm::ArrayRef<::llvm::StringLiteral> getStateInputNames() {
      static constexpr ::llvm::StringLiteral kNames[] = {"sinks"};
      return kNames;
    }
    /// The operand of the state input `name`; nullopt for a name that is
    /// not one. The one place that maps names to operands.
    std::optional<::mlir::MutableOperandRange>
    getStateInputMutable(::llvm::StringRef name) {
      if (name == "sinks")
        return getSinksMutable();
      return std::nullopt;
    }
    /// The state input `name` (null when absent or not a state input).
    ::mlir::Value getStateInput(::llvm::StringRef name) {
      std::optional<::mlir::MutableOperandRange> r = getStateInputMutable(name);
      return r && !r->empty() ? (*r)[0].get() : ::mlir::Value();
    }
    /// The state inputs the op has, (name, value) in operand order.
    ::llvm::SmallVector<std::pair<::llvm::StringRef, ::mlir::Value>, 1>
    getPresentStateInputs() {
      ::llvm::SmallVector<std::pair<::llvm::StringRef, ::mlir::Value>, 1> r;
      for (::llvm::StringRef n : getStateInputNames())
        if (::mlir::Value v = getStateInput(n))
          r.push_back({n, v});
      return r;
    }
}];

def Cascade_PagedAttentionOp
    : Cascade_Op<"paged_attention", [AttrSizedOperandSegments]> {
  let summary = "Attention of ragged queries over a paged KV cache";
  let description = [{
    Batch attention over a paged KV cache, FlashInfer's
    `BatchPrefillWithPagedKVCacheWrapper` / `BatchDecodeWithPagedKVCacheWrapper`.

    Operands:
    - `q`: `[rows, Hqo, D]`, f16 or bf16; `rows = qo_indptr[B]`.
    - `q_pe` (optional): the *latent* form, DeepSeek's multi-head latent
      attention (MLA, FlashInfer's `BatchMLAPagedAttentionWrapper`) after
      weight absorption. `q` is then `q_nope [rows, Hqo, Dc]`, `q_pe`
      `[rows, Hqo, Dr]` (q's element type), and `kv` the latent cache
      `(ckv, kpe)` of `[P, page_size, Dc]` and `[P, page_size, Dr]`: one
      latent row and one rotary row per token, shared by every head. A
      head's score is `sm_scale * (q_nope . ckv + q_pe . kpe)`, its value
      the token's `ckv` row, so `o` is `[rows, Hqo, Dc]` (in the latent
      space). `sm_scale` must be given (the absorbed head_dim is not the
      model's), `kv_layout` is `nhd` (the cache has no head dimension) and
      `pos_encoding` `none` (the rotary part comes rotated). `Dc` and `Dr`
      are positive multiples of 8, at most 512 and 128.
    - `kv`: the page pool, either one `[P, 2, page_size, Hkv, D]` (`nhd`) /
      `[P, 2, Hkv, page_size, D]` (`hnd`) value, index 0 of dim 1 the keys,
      or a pair `(k, v)` of `[P, page_size, Hkv, D]` / `[P, Hkv, page_size, D]`.
      A pair's `v` may have a head_dim `Dv` of its own (FlashInfer's
      `head_dim_vo`, e.g. q/k 192 and v 128 in DeepSeek's prefill); the
      output then has `Dv`. Elements f16 or bf16 (q's type, or the other one: the rows kernels
      convert), or fp8 (`f8E4M3FN`, `f8E5M2`), converted to q's type as
      they are read.
    - `k_scale`, `v_scale` (optional f32, fp8 KV only; absent = 1): the
      per-tensor dequantization scales of an fp8 cache (FlashInfer's
      `run(k_scale=, v_scale=)`). `k_scale` multiplies every logit before
      soft cap, ALiBi bias and softmax (`s = sm_scale * k_scale * q.k`)
      and must be positive and finite (checked here when it is a
      constant), `v_scale` the attention output (`o = v_scale * sum p v`,
      so the LSE is unchanged by it).
    - `sinks` (optional, 1-D f32 `[Hqo]`): attention sinks (FlashInfer's
      `sinks`, as gpt-oss-class models learn them): one logit per query
      head, in the units of the scaled scores (natural log), that joins the
      softmax's denominator and attends to no value:
      `o = sum_j e^(x_j) v_j / (e^sink + sum_j e^(x_j))`. In state terms the
      level's state is merged with the empty-valued state
      `(0, sink * log2(e))`, so the returned LSE includes the sink, and a
      request with no keys gets `(0, sink)` instead of `(0, -inf)`.
    - `qo_indptr [B+1]` (optional), `kv_indptr [B+1]`, `kv_indices`
      (optional), `kv_last_page_len [B]`: i32 CSR index arrays. Without
      `qo_indptr` the op is a *decode*: one query per request (`rows = B`),
      and it lowers to a decode kernel. Without `kv_indices` the page table
      is the identity: request i's pages are the consecutive pool pages
      `kv_indptr[i] .. kv_indptr[i+1] - 1`, and the kernels compute a key's
      address instead of loading its page id. With `page_size = 1` and a
      `(k, v)` pair of `[tokens, 1, Hkv, D]` views that is FlashInfer's ragged
      (contiguous) K/V: `kv_indptr` holds token offsets.
    - `custom_mask(mask, mask_indptr)` (optional, prefill only):
      FlashInfer's custom mask. `mask` (1-D i8) holds, for request i from
      byte `mask_indptr[i]` (1-D i32 `[B+1]`), the `[qo_len_i, kv_len_i]`
      visibility matrix row-major, bit-packed little-endian (bit `j % 8` of
      byte `j / 8` is element `j`; 1 = visible). It replaces the causal mask
      (so `causal` is rejected with it); the sliding window still applies.
    - `plan(...)` (optional, buffer form only): the plan-phase scheduling
      metadata of a split-KV launch, computed on the host by the runtime
      (`docs/plan-schema.md`): `request_indices`, `kv_tile_indices`,
      `o_indptr`, `block_valid_mask` (1-D i32/i32/i32/i8), `kv_chunk_size`
      (tokens, a `memref<1xi32>` in device memory so that a captured CUDA
      graph stays valid across replans) and the f32 workspaces `tmp_v`
      `[partial_rows, Hqo, Dv]` and `tmp_s` `[partial_rows, Hqo]`; a prefill
      (with `qo_indptr`) adds `qo_tile_indices` (i32, work item -> query
      tile) and `merge_indptr` (i32 `[rows + 1]`, partial states per query
      row). Without it, the lowering schedules the work itself. Or, in
      either form, one `!cascade.plan` value (`cascade.plan`) of the level's
      kind (decode or prefill), heads, `head_dim` and page size: the level
      then runs as planned at run time, split-KV or not as the plan says
      (`cascade-lower-plans`).
    - destinations `o [rows, Hqo, Dv]` (q's element type; `Dv = D` but for
      a pair with a narrower `v`) and `lse [rows, Hqo]` f32.

    `kv_len(i) = (pages_i - 1) * page_size + last_page_len(i)` (0 without
    pages). Options are those of `docs/semantics.md`: `causal`, `sm_scale`
    (default `1/sqrt(D)`), `logits_soft_cap` (0 = off), `window_left`
    (-1 = off), `pos_encoding`, `rope_scale`, `rope_theta`, `lse_base`.

    With `accumulate`, the destinations hold an attention state on entry
    (over other keys of the same queries) and the op merges its own state
    into them (the rules of `cascade.merge_state`): a cascade level fused
    with the merge that follows it, so no temporary state and no separate
    merge launch are needed.

    Example (decode, GQA 32/8 heads, page 16):

    ```mlir
    %o, %lse = cascade.paged_attention
        q(%q : tensor<?x32x128xf16>) kv(%cache : tensor<?x2x16x8x128xf16>)
        kv_indptr(%kvp : tensor<?xi32>) kv_indices(%kvi : tensor<?xi32>)
        kv_last_page_len(%last : tensor<?xi32>)
        outs(%o0, %l0 : tensor<?x32x128xf16>, tensor<?x32xf32>)
        {page_size = 16 : i64} -> tensor<?x32x128xf16>, tensor<?x32xf32>
    ```

    Ragged (contiguous) K/V, causal prefill: no page table, one token a page.

    ```mlir
    %o, %lse = cascade.paged_attention
        q(%q : tensor<?x32x128xf16>)
        kv(%k, %v : tensor<?x1x8x128xf16>, tensor<?x1x8x128xf16>)
        qo_indptr(%qop : tensor<?xi32>) kv_indptr(%kvp : tensor<?xi32>)
        kv_last_page_len(%ones : tensor<?xi32>)
        outs(%o0, %l0 : tensor<?x32x128xf16>, tensor<?x32xf32>)
        {page_size = 1 : i64, causal} -> tensor<?x32x128xf16>, tensor<?x32xf32>
    ```

    Latent (MLA) decode, 128 heads, ckv 512 + kpe 64, page 64:

    ```mlir
    %o, %lse = cascade.paged_attention
        q(%q_nope : tensor<?x128x512xbf16>) q_pe(%q_pe : tensor<?x128x64xbf16>)
        kv(%ckv, %kpe : tensor<?x64x512xbf16>, tensor<?x64x64xbf16>)
        kv_indptr(%kvp : tensor<?xi32>) kv_indices(%kvi : tensor<?xi32>)
        kv_last_page_len(%last : tensor<?xi32>)
        outs(%o0, %l0 : tensor<?x128x512xbf16>, tensor<?x128xf32>)
        {page_size = 64 : i64, sm_scale = 0.0721687 : f32}
        -> tensor<?x128x512xbf16>, tensor<?x128xf32>
    ```
  }];
  let arguments = !con((ins
      Cascade_TensorOrMemRef:$q,
      Optional<Cascade_TensorOrMemRef>:$q_pe,
      Variadic<Cascade_TensorOrMemRef>:$kv,
      Optional<Cascade_TensorOrMemRef>:$qo_indptr,
      Cascade_TensorOrMemRef:$kv_indptr,
      Optional<Cascade_TensorOrMemRef>:$kv_indices,
      Cascade_TensorOrMemRef:$kv_last_page_len,
      Optional<F32>:$k_scale,
      Optional<F32>:$v_scale,
      Optional<Cascade_TensorOrMemRef>:$sinks,
      Optional<Cascade_TensorOrMemRef>:$custom_mask,
      Optional<Cascade_TensorOrMemRef>:$mask_indptr,
      Variadic<AnyType>:$plan,
      Cascade_TensorOrMemRef:$o,
      Cascade_TensorOrMemRef:$lse), Cascade_AttentionOptions,
      (ins UnitAttr:$accumulate));
  // The level's core: the optional feature operands (fp8 scales, state
  // inputs, custom mask) are set after creation through their accessors,
  // and the score options through setScoreOptions / copyScoreOptions, so
  // that a new one changes no caller.
  let builders = [
    OpBuilder<(ins "::mlir::TypeRange":$resultTypes, "::mlir::Value":$q,
        "::mlir::Value":$q_pe, "::mlir::ValueRange":$kv,
        "::mlir::Value":$qo_indptr, "::mlir::Value":$kv_indptr,
        "::mlir::Value":$kv_indices, "::mlir::Value":$kv_last_page_len,
        "::mlir::ValueRange":$plan, "::mlir::Value":$o, "::mlir::Value":$lse,
        "::mlir::IntegerAttr":$page_size,
        "::mlir::cascade::KVLayoutAttr":$kv_layout, "::mlir::UnitAttr":$causal,
        "::mlir::cascade::LSEBaseAttr":$lse_base,
        "::mlir::UnitAttr":$accumulate), [{
      build($_builder, $_state, resultTypes, q, q_pe, kv, qo_indptr, kv_indptr,
            kv_indices, kv_last_page_len, /*k_scale=*/::mlir::Value(),
            /*v_scale=*/::mlir::Value(), /*sinks=*/::mlir::Value(),
            /*custom_mask=*/::mlir::Value(), /*mask_indptr=*/::mlir::Value(),
            plan, o, lse, page_size, kv_layout, causal, {}, {}, {}, {}, {}, {},
            lse_base, accumulate);
    }]>];
  let assemblyFormat = [{
    `q` `(` $q `:` type($q) `)`
    (`q_pe` `(` $q_pe^ `:` type($q_pe) `)`)?
    `kv` `(` $kv `:` type($kv) `)`
    (`qo_indptr` `(` $qo_indptr^ `:` type($qo_indptr) `)`)?
    `kv_indptr` `(` $kv_indptr `:` type($kv_indptr) `)`
    (`kv_indices` `(` $kv_indices^ `:` type($kv_indices) `)`)?
    `kv_last_page_len` `(` $kv_last_page_len `:` type($kv_last_page_len) `)`
    (`k_scale` `(` $k_scale^ `)`)? (`v_scale` `(` $v_scale^ `)`)?
    (`sinks` `(` $sinks^ `:` type($sinks) `)`)?
    (`custom_mask` `(` $custom_mask^ `,` $mask_indptr `:` type($custom_mask) `,`
        type($mask_indptr) `)`)?
    (`plan` `(` $plan^ `:` type($plan) `)`)?
    `outs` `(` $o `,` $lse `:` type($o) `,` type($lse) `)`
    attr-dict (`->` type($results)^)?
  }];
  let extraClassDeclaration = !strconcat(dpsClassDeclaration,
      Cascade_StateInputsDeclaration, [{
    /// True when the op has no `qo_indptr`: one query per request.
    bool isDecode() { return !getQoIndptr(); }
    /// True for the latent (MLA) form: `q_pe` given, `kv` = (ckv, kpe).
    bool isLatent() { return static_cast<bool>(getQPe()); }
    /// True when the op has no `kv_indices`: request i's pages are the
    /// pool pages kv_indptr[i] .. kv_indptr[i+1] - 1 (ragged K/V at page
    /// size 1).
    bool hasIdentityPages() { return !getKvIndices(); }
    /// True when a custom mask decides which keys each query sees (the
    /// tensor-core families apply it per key; the rows family, which mixed
    /// q/KV dtypes select, refuses it with a diagnostic).
    bool hasCustomMask() { return static_cast<bool>(getCustomMask()); }
    /// The softmax scale, `1/sqrt(head_dim)` when not given.
    float getEffectiveSmScale();
  }]);
}

def Cascade_MultiLevelAttentionOp
    : Cascade_Op<"multi_level_attention", [AttrSizedOperandSegments]> {
  let summary = "Multi-level cascade attention over one page pool";
  let description = [{
    FlashInfer's `MultiLevelCascadeAttentionWrapper`: L levels over one page
    pool, level `l` with its own `qo_indptr`, `kv_indptr`, `kv_indices` and
    `kv_last_page_len` (the four operand lists hold one value per level, in
    level order). Every level covers the same query rows. `k_scale` /
    `v_scale` (fp8 KV) apply to every level; `sinks` (`[Hqo]` f32, see
    `cascade.paged_attention`) join the cascade's softmax once, as if one
    more level had the state `(0, sink)`: the decomposition gives them to
    the first level. A shared prefix is a
    level whose `qo_indptr` is `[0, B]`: all B queries form one group that
    reads the prefix pages once. The result is the merge over levels of every
    level's attention state; `causal` applies to the last level only. The
    options are those of `cascade.paged_attention`, and so is the latent
    (MLA) form: with `q_pe`, `kv` is the latent cache `(ckv, kpe)` and every
    level is a latent level over it (a shared prefix of latent pages is
    read once for all heads of all its requests).

    `decode_levels` (optional, one boolean per level) marks the levels that
    have exactly one query per request (`qo_indptr[l]` is `[0, 1, ..., B]`,
    as the unique suffixes of a decode cascade): they lower to decode
    kernels (their `qo_indptr` is then not read), the other levels to the
    multi-query (tensor-core) prefill. Marking a level whose requests have
    several queries gives wrong results.

    `ragged_levels` (optional, one boolean per level) marks the levels that
    have no page table: request i of a ragged level reads the pages from
    `kv_indptr[l][i]` on, in order (a `cascade.paged_attention` without
    `kv_indices`; at page size 1 over a `(k, v)` pair, contiguous ragged
    K/V). `kv_indices` then lists one table per level that is not ragged,
    in level order, and is left out when every level is ragged.

    `plans` (optional): one `!cascade.plan` per level (`cascade.plan`), a
    decode plan for each decode level and a prefill plan for the others,
    with the op's heads, `head_dim` and page size, all in CUDA-graph mode or
    none. Each level then runs as its plan says (split KV and merge where
    the plan splits), as the runtime's planned cascade does.

    `cascade-decompose-levels` rewrites it into one `cascade.paged_attention`
    per level, each later level merging itself into the running state; each
    level keeps its plan.

    Example (a shared prefix and per-request suffixes; below it the same
    cascade with a ragged prefix, whose pages are contiguous from
    `%kp0[0]`):

    ```mlir
    %o, %lse = cascade.multi_level_attention
        q(%q : tensor<?x32x128xf16>) kv(%cache : tensor<?x2x16x8x128xf16>)
        qo_indptr(%qo0, %qo1 : tensor<2xi32>, tensor<?xi32>)
        kv_indptr(%kp0, %kp1 : tensor<2xi32>, tensor<?xi32>)
        kv_indices(%ki0, %ki1 : tensor<?xi32>, tensor<?xi32>)
        kv_last_page_len(%kl0, %kl1 : tensor<1xi32>, tensor<?xi32>)
        outs(%o0, %l0 : tensor<?x32x128xf16>, tensor<?x32xf32>)
        {page_size = 16 : i64, decode_levels = array<i1: false, true>}
        -> tensor<?x32x128xf16>, tensor<?x32xf32>

    %o2, %lse2 = cascade.multi_level_attention
        q(%q : tensor<?x32x128xf16>) kv(%cache : tensor<?x2x16x8x128xf16>)
        qo_indptr(%qo0, %qo1 : tensor<2xi32>, tensor<?xi32>)
        kv_indptr(%kp0, %kp1 : tensor<2xi32>, tensor<?xi32>)
        kv_indices(%ki1 : tensor<?xi32>)
        kv_last_page_len(%kl0, %kl1 : tensor<1xi32>, tensor<?xi32>)
        outs(%o0, %l0 : tensor<?x32x128xf16>, tensor<?x32xf32>)
        {page_size = 16 : i64, decode_levels = array<i1: false, true>,
         ragged_levels = array<i1: true, false>}
        -> tensor<?x32x128xf16>, tensor<?x32xf32>
    ```
  }];
  let arguments = !con((ins
      Cascade_TensorOrMemRef:$q,
      Optional<Cascade_TensorOrMemRef>:$q_pe,
      Variadic<Cascade_TensorOrMemRef>:$kv,
      Variadic<Cascade_TensorOrMemRef>:$qo_indptr,
      Variadic<Cascade_TensorOrMemRef>:$kv_indptr,
      Variadic<Cascade_TensorOrMemRef>:$kv_indices,
      Variadic<Cascade_TensorOrMemRef>:$kv_last_page_len,
      Optional<F32>:$k_scale,
      Optional<F32>:$v_scale,
      Optional<Cascade_TensorOrMemRef>:$sinks,
      Variadic<Cascade_PlanType>:$plans,
      Cascade_TensorOrMemRef:$o,
      Cascade_TensorOrMemRef:$lse), Cascade_AttentionOptions,
      (ins OptionalAttr<DenseBoolArrayAttr>:$decode_levels,
           OptionalAttr<DenseBoolArrayAttr>:$ragged_levels));
  // The cascade's core, as paged_attention's builder.
  let builders = [
    OpBuilder<(ins "::mlir::TypeRange":$resultTypes, "::mlir::Value":$q,
        "::mlir::Value":$q_pe, "::mlir::ValueRange":$kv,
        "::mlir::ValueRange":$qo_indptr, "::mlir::ValueRange":$kv_indptr,
        "::mlir::ValueRange":$kv_indices, "::mlir::ValueRange":$kv_last_page_len,
        "::mlir::ValueRange":$plans, "::mlir::Value":$o, "::mlir::Value":$lse,
        "::mlir::IntegerAttr":$page_size,
        "::mlir::cascade::KVLayoutAttr":$kv_layout, "::mlir::UnitAttr":$causal,
        "::mlir::cascade::LSEBaseAttr":$lse_base,
        "::mlir::DenseBoolArrayAttr":$decode_levels,
        "::mlir::DenseBoolArrayAttr":$ragged_levels), [{
      build($_builder, $_state, resultTypes, q, q_pe, kv, qo_indptr, kv_indptr,
            kv_indices, kv_last_page_len, /*k_scale=*/::mlir::Value(),
            /*v_scale=*/::mlir::Value(), /*sinks=*/::mlir::Value(), plans, o,
            lse, page_size, kv_layout, causal, {}, {}, {}, {}, {}, {}, lse_base,
            decode_levels, ragged_levels);
    }]>];
  let assemblyFormat = [{
    `q` `(` $q `:` type($q) `)`
    (`q_pe` `(` $q_pe^ `:` type($q_pe) `)`)?
    `kv` `(` $kv `:` type($kv) `)`
    `qo_indptr` `(` $qo_indptr `:` type($qo_indptr) `)`
    `kv_indptr` `(` $kv_indptr `:` type($kv_indptr) `)`
    (`kv_indices` `(` $kv_indices^ `:` type($kv_indices) `)`)?
    `kv_last_page_len` `(` $kv_last_page_len `:` type($kv_last_page_len) `)`
    (`k_scale` `(` $k_scale^ `)`)? (`v_scale` `(` $v_scale^ `)`)?
    (`sinks` `(` $sinks^ `:` type($sinks) `)`)?
    (`plans` `(` $plans^ `:` type($plans) `)`)?
    `outs` `(` $o `,` $lse `:` type($o) `,` type($lse) `)`
    attr-dict (`->` type($results)^)?
  }];
  let extraClassDeclaration = !strconcat(dpsClassDeclaration,
      Cascade_StateInputsDeclaration, [{
    /// Number of levels of the cascade.
    unsigned getNumLevels() { return getQoIndptr().size(); }
    /// True for the latent (MLA) form: `q_pe` given, `kv` = (ckv, kpe).
    bool isLatent() { return static_cast<bool>(getQPe()); }
    /// Whether level `l` has one query per request (decode_levels).
    bool isDecodeLevel(unsigned l) {
      auto levels = getDecodeLevels();
      return levels && l < levels->size() && (*levels)[l];
    }
    /// Whether level `l` has no page table (ragged_levels).
    bool isRaggedLevel(unsigned l) {
      auto levels = getRaggedLevels();
      return levels && l < levels->size() && (*levels)[l];
    }
    /// Level `l`'s page table: its entry of `kv_indices`, or a null value
    /// for a ragged level.
    ::mlir::Value getLevelKvIndices(unsigned l);
    /// The softmax scale, `1/sqrt(head_dim)` when not given.
    float getEffectiveSmScale();
    /// Checks the optional per-level plans (CascadeOps.cpp).
    ::mlir::LogicalResult verifyPlans();
  }]);
}

#endif // CASCADE_DIALECT_CASCADE_IR_CASCADEOPS_TD
