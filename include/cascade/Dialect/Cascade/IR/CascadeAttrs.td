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


//===----------------------------------------------------------------------===//
// Kernel configuration
//===----------------------------------------------------------------------===//

def Cascade_KernelFamily : I32EnumAttr<"KernelFamily", "family of GPU kernels an op lowers to", [
    I32EnumAttrCase<"Merge", 0, "merge">,
    I32EnumAttrCase<"Rows", 1, "rows">,
    I32EnumAttrCase<"MmaSync", 2, "mma_sync">,
    I32EnumAttrCase<"Wgmma", 3, "wgmma">]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::mlir::cascade";
}

def Cascade_KVBarriers : I32EnumAttr<"KVBarriers", "how a wgmma kernel's producer publishes K/V tiles", [
    I32EnumAttrCase<"Joint", 0, "joint">,
    I32EnumAttrCase<"Split", 1, "split">]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::mlir::cascade";
}

def Cascade_Fp8Staging : I32EnumAttr<"Fp8Staging", "how an mma_sync kernel reads an fp8 cache's K/V tiles", [
    I32EnumAttrCase<"Convert", 0, "convert">,
    I32EnumAttrCase<"DirectK", 1, "direct_k">,
    I32EnumAttrCase<"DirectKV", 2, "direct_kv">]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::mlir::cascade";
}

def Cascade_KernelConfigAttr : AttrDef<Cascade_Dialect, "KernelConfig"> {
  let mnemonic = "kernel_config";
  let summary = "The GPU kernel family and tiling chosen for one cascade op";
  let description = [{
    Set by `cascade-select-kernel-config` (or written by hand to tune) as the
    discardable attribute `cascade.kernel_config` of a cascade op, and read by
    `convert-cascade-to-gpu`. Two ops with equal static configurations and
    equal kernel configurations share one kernel.

    - `merge`: the merge kernels. `threads = [n, 1, 1]`; `q_tile` is the
      number of (row, head) states a block merges (each state takes
      `head_dim / 8` threads, so `n = q_tile * head_dim / 8`); `kv_tile = 0`,
      `stages = 1`.
    - `rows`: attention on CUDA cores, one block per (query row or decode
      request, KV head). `threads = [head_dim / 8, 1, bdz]`: a thread owns 8
      elements of head_dim, `bdz` slices of a KV tile are reduced at the end;
      `q_tile = 1`; `kv_tile` tokens per stage of a `stages`-deep `cp.async`
      pipeline (`kv_tile` a multiple of `bdz`).
    - `mma_sync`: tiled attention on tensor cores (`mma.sync.m16n8k16`,
      FlashAttention-2 style). `threads = [32, warps_q, warps_kv]`: each warp
      owns `q_tile / warps_q` packed query rows (a multiple of 16; the GQA
      group's query heads are packed into the rows) and `kv_tile / warps_kv`
      keys of every KV tile (a multiple of 16); K/V tiles of `kv_tile` tokens
      go through a `stages`-deep `cp.async` pipeline in shared memory.
    - `wgmma`: tiled attention on Hopper's warpgroup tensor cores
      (`wgmma.mma_async`, sm_90a), warp-specialized. `threads = [128, 1 + c,
      1]`: warpgroup 0 is the producer (it gathers K/V tiles from the pages
      into a `stages`-deep ring of 128-byte-swizzled shared-memory tiles
      under mbarriers), warpgroups 1..c are consumers, each owning 64 of the
      `q_tile = 64 * c` packed query rows; `kv_tile` keys a tile (a multiple
      of 16, at most 256). `kv_barriers` (wgmma only; default `joint`,
      then not printed): `joint` publishes and releases the K and V tiles of
      a stage together (one `full` / `empty` mbarrier ring); `split` gives K
      and V rings of their own (`fullK` / `emptyK`, `fullV` / `emptyV`,
      `stages` deep each, FlashAttention-3's separate pipelines): the
      producer gathers K one tile ahead of V, and the consumers release K_i
      as soon as S_i = Q K_i^T completed and V_{i-1} after P_{i-1} V_{i-1}.

    `min_blocks_per_sm` (rows and mma_sync; default 0, then not printed): a
    launch bound, the blocks of this kernel that each SM must be able to
    hold at once (PTX `.minnctapersm`). ptxas then keeps the registers of a
    thread at or under what that many blocks leave (65536 / (threads *
    min_blocks_per_sm) on sm_90), spilling if it must. Selection sets it
    where more resident blocks measured faster than the spills cost (fp8
    decode).

    `fp8_staging` (mma_sync only; default `convert`, then not printed): how
    the kernel reads the K/V tiles of an fp8 KV cache, which land in fp8
    staging rings. `convert`: each stage is converted to q's type into K
    and V tiles that the mma read (fp8 caches of any shape; with f16/bf16
    caches it is the only value). `direct_k` (kernel names end in
    `_kdirect`): S = Q K^T reads K straight from its staging tile and
    converts in registers (no K tile); `direct_kv` (`_kvdirect`): O += P V
    reads V from its staging tile too (no V tile; the Q tile sits in the
    last V stage). Both need `threads = [32, 1, n]` and `q_tile = 16` (the
    warp keeps its Q fragments in registers), and an fp8 decode without
    RoPE whose q, k and v have one head_dim, a power of two in [16, 128]
    (`direct_k`) or 32, 64 or 128 (`direct_kv`); convert-cascade-to-gpu
    rejects other ops. Selection records `direct_kv` (or `direct_k`)
    wherever the op can take it.

    `exp2_emulation` (tensor-core families; default 0, then not printed): in
    how many eighths of the S tile's key columns (fragment columns n with
    n mod 8 below it) the online softmax evaluates its exp2 with a
    polynomial on the FMA and integer pipes instead of the special-function
    unit (MUFU.EX2), FlashAttention-4's offload: at head_dim 64 an S
    element costs the tensor cores as long as its MUFU.EX2 (16 an SM a
    clock). It measured slower on the H100 (the kernels are bound by issue
    slots, not by MUFU), so selection never sets it. The polynomial is
    of degree 3 on [-0.5, 0.5] after rounding, relative error 1.0e-4 (under
    half an f16 ulp of P); exponents at or below -127 (masked keys, -inf)
    give exactly 0, as ex2.approx.ftz does. Kernel names end in
    `_ex2e<n>`.

    `page_lookahead` (wgmma; default 0, then not printed; 1 to set): the
    producer looks up a tile's pages before it waits for the tile's free
    stage (lane l of each producer warp loads page l of the tile's page
    list) and, once the stage is free, takes each pass's page from its lane
    with a shuffle and computes the copies' addresses in 32-bit arithmetic,
    instead of loading a page id a pass after the wait in 64-bit index
    arithmetic. For the schedule whose copies publish their tile (one K/V
    ring, a paged 16-bit cache, no RoPE, k and v of one head_dim) with at
    most 31 pages a tile; convert-cascade-to-gpu refuses other ops. Kernel
    names end in `_pla`.

    Example:

    ```mlir
    cascade.paged_attention ... {page_size = 16 : i64,
        cascade.kernel_config = #cascade.kernel_config<wgmma,
            threads = [128, 4, 1], q_tile = 192, kv_tile = 64, stages = 4,
            exp2_emulation = 2>}
    cascade.paged_attention ... {page_size = 16 : i64,
        cascade.kernel_config = #cascade.kernel_config<wgmma,
            threads = [128, 3, 1], q_tile = 128, kv_tile = 48, stages = 3,
            page_lookahead = 1>}
    cascade.paged_attention ... {page_size = 16 : i64,
        cascade.kernel_config = #cascade.kernel_config<mma_sync,
            threads = [32, 4, 1], q_tile = 128, kv_tile = 64, stages = 2>}
    cascade.paged_attention ... {page_size = 16 : i64,
        cascade.kernel_config = #cascade.kernel_config<wgmma,
            threads = [128, 3, 1], q_tile = 128, kv_tile = 128, stages = 2>}
    cascade.paged_attention ... {page_size = 16 : i64,
        cascade.kernel_config = #cascade.kernel_config<mma_sync,
            threads = [32, 1, 2], q_tile = 16, kv_tile = 32, stages = 2,
            min_blocks_per_sm = 8, fp8_staging = direct_kv>}
    ```
  }];
  let parameters = (ins
      EnumParameter<Cascade_KernelFamily>:$family,
      ArrayRefParameter<"int64_t", "block dimensions (x, y, z)">:$threads,
      "int64_t":$q_tile,
      "int64_t":$kv_tile,
      "int64_t":$stages,
      DefaultValuedParameter<"::mlir::cascade::KVBarriers",
                             "::mlir::cascade::KVBarriers::Joint",
                             "wgmma: K/V barrier rings">:$kv_barriers,
      DefaultValuedParameter<"int64_t", "0",
                             "launch bound: blocks an SM (0: none)">:
          $min_blocks_per_sm,
      DefaultValuedParameter<"::mlir::cascade::Fp8Staging",
                             "::mlir::cascade::Fp8Staging::Convert",
                             "mma_sync: how fp8 K/V tiles are read">:
          $fp8_staging,
      DefaultValuedParameter<"int64_t", "0",
                             "tensor cores: eighths of the S columns whose "
                             "exp2 is a polynomial">:$exp2_emulation,
      DefaultValuedParameter<"int64_t", "0",
                             "wgmma: the producer looks up a tile's pages "
                             "before waiting for its stage">:$page_lookahead);
  let assemblyFormat = [{
    `<` $family `,` `threads` `=` `[` $threads `]` `,` `q_tile` `=` $q_tile `,`
    `kv_tile` `=` $kv_tile `,` `stages` `=` $stages
    `` custom<KernelConfigOptions>($kv_barriers, $min_blocks_per_sm,
                                   $fp8_staging, $exp2_emulation,
                                   $page_lookahead) `>`
  }];
  // The builders with `kv_barriers` (joint by default), `min_blocks_per_sm`
  // (none by default), `fp8_staging` (convert by default),
  // `exp2_emulation` (none by default) and `page_lookahead` (off by
  // default) last.
  let skipDefaultBuilders = 1;
  let builders = [
    AttrBuilder<(ins "KernelFamily":$family, "ArrayRef<int64_t>":$threads,
                     "int64_t":$q_tile, "int64_t":$kv_tile, "int64_t":$stages,
                     CArg<"KVBarriers", "KVBarriers::Joint">:$kv_barriers,
                     CArg<"int64_t", "0">:$min_blocks_per_sm,
                     CArg<"Fp8Staging", "Fp8Staging::Convert">:$fp8_staging,
                     CArg<"int64_t", "0">:$exp2_emulation,
                     CArg<"int64_t", "0">:$page_lookahead),
    [{
      return $_get($_ctxt, family, threads, q_tile, kv_tile, stages,
                   kv_barriers, min_blocks_per_sm, fp8_staging,
                   exp2_emulation, page_lookahead);
    }]>
  ];
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// Threads per block.
    int64_t getNumThreads() const;
    /// A tensor-core family (mma_sync or wgmma): a block owns a tile of
    /// q_tile packed query rows in dynamic shared memory.
    bool isTensorCore() const {
      return getFamily() == KernelFamily::MmaSync ||
             getFamily() == KernelFamily::Wgmma;
    }
    /// mma_sync: warps along the query rows / along the KV tile, and m16
    /// tiles per warp.
    int64_t getWarpsQ() const { return getThreads()[1]; }
    int64_t getWarpsKV() const { return getThreads()[2]; }
    int64_t getMmaTilesPerWarp() const { return getQTile() / (16 * getWarpsQ()); }
    /// wgmma: the consumer warpgroups (threads[1] - 1; warpgroup 0 is the
    /// producer).
    int64_t getConsumerWarpgroups() const { return getThreads()[1] - 1; }
    /// wgmma: K and V tiles under barrier rings of their own.
    bool hasSplitKVBarriers() const {
      return getKvBarriers() == KVBarriers::Split;
    }
    /// mma_sync over an fp8 cache: S = Q K^T reads K from its staging tile
    /// (direct_k or direct_kv).
    bool readsFp8KDirect() const {
      return getFp8Staging() != Fp8Staging::Convert;
    }
    /// And O += P V reads V from its staging tile (direct_kv).
    bool readsFp8VDirect() const {
      return getFp8Staging() == Fp8Staging::DirectKV;
    }
  }];
}

#endif // CASCADE_DIALECT_CASCADE_IR_CASCADEATTRS_TD
