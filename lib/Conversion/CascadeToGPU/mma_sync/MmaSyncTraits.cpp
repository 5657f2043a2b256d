//===- MmaSyncTraits.cpp - The mma_sync family's facts --------------------===//

#include "mma_sync/MmaSyncTraits.h"

#include "cascade/Contract/BundleContract.h"
#include "cascade/Conversion/GPUCodegen/Fp8Convert.h"

#include "llvm/ADT/Twine.h"
#include "llvm/Support/MathExtras.h"

#include <algorithm>

using namespace mlir;
using namespace mlir::cascade;

bool mlir::cascade::mmaSyncSupportsKVType(Type qType, Type kvType,
                                          const TargetInfo &target) {
  // Queries are f16 or bf16 (fp8 queries run on wgmma only).
  if (!qType.isF16() && !qType.isBF16())
    return false;
  bool f16OrBf16 = kvType.isF16() || kvType.isBF16();
  return (f16OrBf16 && kvType == qType) ||
         (isFp8KVType(kvType) &&
          fp8KVConvertSupported(target.computeCapability));
}

/// Row stride (elements) of a tile of head_dim columns rounded up to 16:
/// SmemTileLayout's choice (swizzled rows of a multiple of 64 elements,
/// padded rows otherwise).
static int64_t mmaRowStride(int64_t headDim) {
  int64_t cols = llvm::alignTo(headDim, 16);
  return (cols / 8) % 8 == 0 ? cols : cols + 8;
}

/// The partial states of the warps along KV that the epilogue merges in
/// shared memory (per row, D f32 plus (m, l)); 0 with one warp.
static int64_t partialStateBytes(KernelConfigAttr c, int64_t headDim) {
  if (c.getWarpsKV() <= 1)
    return 0;
  return c.getQTile() * c.getWarpsKV() * (llvm::alignTo(headDim, 16) + 2) * 4;
}

int64_t mlir::cascade::mmaSyncSharedBytes(KernelConfigAttr c, int64_t headDim) {
  int64_t stride = mmaRowStride(headDim);
  int64_t tiles =
      (c.getQTile() + 2 * c.getStages() * c.getKvTile()) * stride * 2;
  return std::max(tiles, partialStateBytes(c, headDim));
}

std::string mlir::cascade::mmaSyncWhyNotFp8Staging(Fp8Staging staging,
                                                   KernelConfigAttr c,
                                                   const AttentionShape &s) {
  if (staging == Fp8Staging::Convert)
    return {};
  std::string why;
  llvm::raw_string_ostream os(why);
  os << "fp8_staging = " << stringifyFp8Staging(staging) << " ";
  if (c.getFamily() != KernelFamily::MmaSync)
    os << "is an mma_sync option";
  else if (c.getWarpsQ() != 1 || c.getMmaTilesPerWarp() != 1)
    os << "needs threads[1] = 1 and q_tile = 16";
  else if (!isFp8KVType(s.kvType))
    os << "needs an fp8 KV cache, not " << s.kvType;
  else if (!s.decode)
    os << "needs a decode (prefill converts its K/V tiles)";
  else if (s.rope)
    os << "needs an op without RoPE (RoPE rotates a converted K tile)";
  else if (s.headDimVo != s.headDim)
    os << "needs v's head_dim (" << s.headDimVo << ") to be k's (" << s.headDim
       << ")";
  else if (s.headDim < 16 || s.headDim > 128 ||
           !llvm::isPowerOf2_64(static_cast<uint64_t>(s.headDim)))
    os << "needs head_dim 16, 32, 64 or 128, got " << s.headDim;
  else if (staging == Fp8Staging::DirectKV && s.headDim % 32 != 0)
    os << "needs head_dim 32, 64 or 128, got " << s.headDim
       << " (direct_k reads only K from its staging tile)";
  else
    return {};
  return why;
}

Fp8Staging mlir::cascade::mmaSyncFp8Staging(KernelConfigAttr c,
                                            const AttentionShape &s) {
  for (Fp8Staging staging : {Fp8Staging::DirectKV, Fp8Staging::DirectK})
    if (mmaSyncWhyNotFp8Staging(staging, c, s).empty())
      return staging;
  return Fp8Staging::Convert;
}

int64_t mlir::cascade::mmaSyncFp8DirectQTileOffset(KernelConfigAttr c,
                                                   int64_t headDim) {
  return (2 * c.getStages() - 1) * c.getKvTile() * headDim;
}

int64_t mlir::cascade::mmaSyncSharedBytes(KernelConfigAttr c, int64_t headDim,
                                          Type kvType, bool decode) {
  if (!isFp8KVType(kvType))
    return mmaSyncSharedBytes(c, headDim);
  // The Q tile and the f16/bf16 K/V rings (decode: one K and one V tile,
  // each stage converted into them just before its scores; no K tile where
  // the scores read K's staging ring), then the fp8 staging rings; the
  // partial states of the warps along KV reuse the memory from 0. Where P V
  // reads V's staging ring too, there are only the staging rings, and the
  // Q tile in the last V stage (it may reach past the ring's end: the
  // rows of the Q tile are padded).
  int64_t stride = mmaRowStride(headDim);
  int64_t staging = 2 * c.getStages() * c.getKvTile() * headDim;
  if (c.readsFp8VDirect())
    return std::max(
        {staging,
         mmaSyncFp8DirectQTileOffset(c, headDim) + c.getQTile() * stride * 2,
         partialStateBytes(c, headDim)});
  int64_t ring = decode ? 1 : c.getStages();
  int64_t kRing = c.readsFp8KDirect() ? 0 : ring;
  int64_t tiles = (c.getQTile() + (kRing + ring) * c.getKvTile()) * stride * 2;
  return std::max(tiles + staging, partialStateBytes(c, headDim));
}

static int64_t dynamicSharedBytes(KernelConfigAttr c, const AttentionShape &s) {
  return mmaSyncSharedBytes(c, s.headDim, s.kvType, s.decode);
}

/// mma_sync kernels use up to the registers a thread may have.
static int64_t registersPerThread(KernelConfigAttr, const TargetInfo &target) {
  return target.registersPerThread;
}

static std::string whyNotAttention(KernelConfigAttr config,
                                   const AttentionShape &s) {
  if (isFp8KVType(s.qType))
    return "fp8 queries run on the wgmma family only (fp8 tensor cores)";
  if (s.qType != s.kvType && !isFp8KVType(s.kvType))
    return "tensor cores need q and KV of one dtype (or an fp8 KV cache, "
           "converted to q's)";
  // A narrower v: its columns are the first of the V tile (the rest zero)
  // and O has only its n8 tiles.
  if (s.headDimVo > s.headDim)
    return ("v's head_dim (" + Twine(s.headDimVo) +
            ") must not exceed q's and k's (" + Twine(s.headDim) +
            "): the V tile has k's width")
        .str();
  if (s.headDimVo != s.headDim && isFp8KVType(s.kvType))
    return "an fp8 KV cache needs v's head_dim to be q's and k's (its "
           "staging tiles have one width)";
  if (isFp8KVType(s.kvType) && s.headDim % 16 != 0)
    return "an fp8 KV cache on tensor cores needs head_dim a multiple of 16 "
           "(16-byte rows of the staging tiles)";
  if (isFp8KVType(s.kvType) &&
      (config.getKvTile() * s.headDim / 8) %
              (32 * config.getWarpsQ() * config.getWarpsKV()) !=
          0)
    return "an fp8 KV cache on tensor cores needs the KV tile's 8-element "
           "chunks to spread evenly over the threads";
  std::string why = mmaSyncWhyNotFp8Staging(config.getFp8Staging(), config, s);
  if (!why.empty())
    return why;
  // A split decode's query tiles per request: ceil(G / q_tile).
  if (s.decode && s.split &&
      (s.groupSize + config.getQTile() - 1) / config.getQTile() != 1)
    return ("a split decode keeps a request's GQA group in one query tile: "
            "q_tile must be >= " +
            Twine(s.groupSize))
        .str();
  return {};
}

const KernelFamilyTraits mlir::cascade::kMmaSyncTraits = {
    KernelFamily::MmaSync,
    ::cascade::contract::family::kMmaSync,
    "_mma",
    mmaSyncSupportsKVType,
    dynamicSharedBytes,
    /*staticSharedBytes=*/nullptr,
    registersPerThread,
    whyNotAttention,
};
