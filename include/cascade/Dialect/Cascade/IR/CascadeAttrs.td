//===- CascadeAttrs.td - Cascade enum attributes -----------*- tablegen -*-===//

#ifndef CASCADE_DIALECT_CASCADE_IR_CASCADEATTRS_TD
#define CASCADE_DIALECT_CASCADE_IR_CASCADEATTRS_TD

include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"
include "cascade/Dialect/Cascade/IR/CascadeBase.td"

//===----------------------------------------------------------------------===//
// KV layout
//===----------------------------------------------------------------------===//

def Cascade_KVLayout : I32EnumAttr<"KVLayout", "layout of one page of the KV cache", [
    I32EnumAttrCase<"NHD", 0, "nhd">,
    I32EnumAttrCase<"HND", 1, "hnd">]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::mlir::cascade";
}

def Cascade_KVLayoutAttr : EnumAttr<Cascade_Dialect, Cascade_KVLayout, "kv_layout"> {
  let summary = "Layout of a page of the paged KV cache";
  let description = [{
    `nhd`: a page is `[page_size, num_kv_heads, head_dim]` (the pool is
    `[P, 2, page_size, Hkv, D]` or a pair of `[P, page_size, Hkv, D]`).
    `hnd`: a page is `[num_kv_heads, page_size, head_dim]` (the pool is
    `[P, 2, Hkv, page_size, D]` or a pair of `[P, Hkv, page_size, D]`).

    Example: `#cascade.kv_layout<hnd>`
  }];
  let assemblyFormat = "`<` $value `>`";
}

//===----------------------------------------------------------------------===//
// Position encoding
//===----------------------------------------------------------------------===//

def Cascade_PosEncoding : I32EnumAttr<"PosEncoding", "position encoding applied inside attention", [
    I32EnumAttrCase<"None", 0, "none">,
    I32EnumAttrCase<"RopeLlama", 1, "rope_llama">,
    I32EnumAttrCase<"ALiBi", 2, "alibi">]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::mlir::cascade";
}

def Cascade_PosEncodingAttr : EnumAttr<Cascade_Dialect, Cascade_PosEncoding, "pos_encoding"> {
  let summary = "Position encoding applied on the fly inside attention";
  let description = [{
    `none`: q and k are used as given. `rope_llama`: LLaMA's rotate-half rotary
    embedding applied to q and k on the fly, with `rope_scale` and
    `rope_theta`. `alibi`: the ALiBi linear bias with FlashInfer's slopes.

    Example: `#cascade.pos_encoding<rope_llama>`
  }];
  let assemblyFormat = "`<` $value `>`";
}

//===----------------------------------------------------------------------===//
// Log-sum-exp base
//===----------------------------------------------------------------------===//

def Cascade_LSEBase : I32EnumAttr<"LSEBase", "base of the log-sum-exp of an attention state", [
    I32EnumAttrCase<"Base2", 0, "base2">,
    I32EnumAttrCase<"BaseE", 1, "base_e">]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::mlir::cascade";
}

def Cascade_LSEBaseAttr : EnumAttr<Cascade_Dialect, Cascade_LSEBase, "lse_base"> {
  let summary = "Base of the log-sum-exp `s` of an attention state";
  let description = [{
    `base2` (FlashInfer's convention and the default): scores are multiplied by
    `sm_scale * log2(e)` and merges use `exp2`/`log2`. `base_e`: natural log,
    as some other libraries store it. Mixing the two silently is a known
    source of wrong answers, so the base is part of every op that touches `s`.

    Example: `#cascade.lse_base<base_e>`
  }];
  let assemblyFormat = "`<` $value `>`";
}

#endif // CASCADE_DIALECT_CASCADE_IR_CASCADEATTRS_TD
