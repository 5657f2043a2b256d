//===- MmaSyncTraits.h - The mma_sync family's facts ------------*- C++ -*-===//
//
// What selection, spec analysis and plan lowering know of the mma_sync
// family (FlashAttention-2 on mma.sync.m16n8k16, sm_80 and up): the KV
// types it takes, its shared memory (the Q tile, the K/V rings, an fp8
// cache's staging rings, the warps' partial states), which fp8 decode
// shapes can read K (and V) straight from their staging rings (the
// configuration's fp8_staging), and its kKernelFamilyTraits row
// (kMmaSyncTraits).
//
//===----------------------------------------------------------------------===//

#ifndef CASCADE_LIB_CONVERSION_CASCADETOGPU_MMA_SYNC_MMASYNCTRAITS_H
#define CASCADE_LIB_CONVERSION_CASCADETOGPU_MMA_SYNC_MMASYNCTRAITS_H

#include "FamilyTraits.h"

namespace mlir {
namespace cascade {

extern const KernelFamilyTraits kMmaSyncTraits;

/// Whether the family reads a KV cache of `kvType` with queries of `qType`
/// on `target`: KV of q's type (f16, bf16), or an fp8 cache (f8E4M3FN,
/// f8E5M2) on chips with the fp8 conversion instructions (sm_89 and up),
/// whose K/V tiles are converted to q's type in shared memory before the
/// mma.
bool mmaSyncSupportsKVType(Type qType, Type kvType, const TargetInfo &target);

/// The shared memory (bytes) a block uses for `config` at `headDim`: the
/// query tile and the K/V pipeline stages, or the staging of the warps'
/// partial states, whichever is larger.
int64_t mmaSyncSharedBytes(KernelConfigAttr config, int64_t headDim);
/// The same for a KV cache of element type `kvType` in a `decode` or
/// prefill kernel: an fp8 cache adds the
/// staging rings its tiles land in before their conversion (K and V, every
/// stage, head_dim bytes a key); fp8 decode converts every stage into one
/// K and one V tile, or only into a V tile where K's scores read the
/// staging ring (config's fp8_staging = direct_k), or into none where P V
/// reads V's staging ring too (direct_kv: the staging rings and the Q
/// tile, which then shares the last V stage).
int64_t mmaSyncSharedBytes(KernelConfigAttr config, int64_t headDim,
                           Type kvType, bool decode);

/// Why a kernel of `config` cannot read the K/V tiles of an attention op of
/// `shape` as `staging` says (empty where it can; always for `convert`).
/// direct_k (S = Q K^T reads the B operand straight from the fp8 K staging
/// tile: 32-bit loads and cvt, no f16 K tile, Q's fragments built with a
/// permuted head_dim) needs fp8 decode without RoPE whose warps keep their
/// Q fragments in registers (one warp along the query rows, one m16 tile),
/// with one head_dim for q, k and v: 16, 32, 64 or 128. direct_kv (O += P V
/// also reads V straight from its fp8 staging tile: 32-bit loads, byte
/// permutes and cvt; no f16 V tile, O's columns in a permuted head_dim
/// order that the epilogue undoes) needs that at head_dim 32, 64 or 128.
std::string mmaSyncWhyNotFp8Staging(Fp8Staging staging, KernelConfigAttr config,
                                    const AttentionShape &shape);
/// The fp8 staging that selection records for a kernel of `config` (its
/// own fp8_staging aside) over `shape`: direct_kv where the op can take it,
/// else direct_k where it can, else convert.
Fp8Staging mmaSyncFp8Staging(KernelConfigAttr config,
                             const AttentionShape &shape);
/// fp8_staging = direct_kv: where the Q tile starts (bytes), in the last stage
/// of the V staging ring, which no copy fills before the Q fragments are in
/// registers.
int64_t mmaSyncFp8DirectQTileOffset(KernelConfigAttr config, int64_t headDim);

} // namespace cascade
} // namespace mlir

#endif // CASCADE_LIB_CONVERSION_CASCADETOGPU_MMA_SYNC_MMASYNCTRAITS_H
