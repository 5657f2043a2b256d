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

bool mlir::cascade::mmaSyncFp8DirectK(KernelConfigAttr c, int64_t headDim,
                                      Type kvType, bool decode, bool rope) {
  return c.getFamily() == KernelFamily::MmaSync && isFp8KVType(kvType) &&
         decode && !rope && c.getWarpsQ() == 1 && c.getMmaTilesPerWarp() == 1 &&
         headDim >= 16 && headDim <= 128 &&
         llvm::isPowerOf2_64(static_cast<uint64_t>(headDim));
}

bool mlir::cascade::mmaSyncFp8DirectV(KernelConfigAttr c, int64_t headDim,
                                      Type kvType, bool decode, bool rope) {
  return mmaSyncFp8DirectK(c, headDim, kvType, decode, rope) &&
         headDim % 32 == 0;
}

int64_t mlir::cascade::mmaSyncFp8DirectQTileOffset(KernelConfigAttr c,
                                                   int64_t headDim) {
  return (2 * c.getStages() - 1) * c.getKvTile() * headDim;
}

int64_t mlir::cascade::mmaSyncSharedBytes(KernelConfigAttr c, int64_t headDim,
                                          Type kvType, bool decode, bool rope) {
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
  if (mmaSyncFp8DirectV(c, headDim, kvType, decode, rope))
    return std::max(
        {staging,
         mmaSyncFp8DirectQTileOffset(c, headDim) + c.getQTile() * stride * 2,
         partialStateBytes(c, headDim)});
  int64_t ring = decode ? 1 : c.getStages();
  int64_t kRing =
      mmaSyncFp8DirectK(c, headDim, kvType, decode, rope) ? 0 : ring;
  int64_t tiles = (c.getQTile() + (kRing + ring) * c.getKvTile()) * stride * 2;
  return std::max(tiles + staging, partialStateBytes(c, headDim));
}

static int64_t dynamicSharedBytes(KernelConfigAttr c, const AttentionShape &s) {
  return mmaSyncSharedBytes(c, s.headDim, s.kvType, s.decode, s.rope);
}

/// mma_sync kernels use up to the registers a thread may have.
static int64_t registersPerThread(KernelConfigAttr, const TargetInfo &target) {
  return target.registersPerThread;
}

// The fp8 staging-tile reads assume one head_dim for K and V.
static bool fp8DirectK(KernelConfigAttr c, const AttentionShape &s) {
  return s.headDimVo == s.headDim &&
         mmaSyncFp8DirectK(c, s.headDim, s.kvType, s.decode, s.rope);
}

static bool fp8DirectV(KernelConfigAttr c, const AttentionShape &s) {
  return s.headDimVo == s.headDim &&
         mmaSyncFp8DirectV(c, s.headDim, s.kvType, s.decode, s.rope);
}

static std::string whyNotAttention(KernelConfigAttr config,
                                   const AttentionShape &s) {
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
    registersPerThread,
    whyNotAttention,
    fp8DirectK,
    fp8DirectV,
};
