//===- WgmmaTraits.cpp - The wgmma family's facts -------------------------===//

#include "wgmma/WgmmaTraits.h"

#include "cascade/Contract/BundleContract.h"
#include "cascade/Conversion/GPUCodegen/Fp8Convert.h"
#include "cascade/Conversion/TargetInfo.h"

#include "llvm/ADT/Twine.h"
#include "llvm/Support/MathExtras.h"

#include <algorithm>

using namespace mlir;
using namespace mlir::cascade;

bool mlir::cascade::wgmmaFamilySupportsHeadDim(int64_t headDim) {
  return headDim == 64 || headDim == 128 || headDim == 256;
}

bool mlir::cascade::wgmmaSupportsHeadDims(int64_t headDim, int64_t headDimVo) {
  return headDim % 64 == 0 && headDim >= 64 && headDim <= 256 &&
         headDimVo % 64 == 0 && headDimVo >= 64 && headDimVo <= headDim;
}

bool mlir::cascade::wgmmaOwnWidths(int64_t headDim, int64_t headDimVo) {
  return headDimVo != headDim || kWgmmaProducerThreads % (headDim / 8) != 0;
}

std::string mlir::cascade::wgmmaWhyNotHeadDims(int64_t headDim,
                                               int64_t headDimVo, Type qType,
                                               Type kvType, bool rope) {
  if (headDim == headDimVo && wgmmaFamilySupportsHeadDim(headDim))
    return {};
  if (!wgmmaSupportsHeadDims(headDim, headDimVo))
    return ("the wgmma family needs head_dim a multiple of 64 up to 256 "
            "(whole 128-byte swizzle panels) and v's head_dim a multiple of "
            "64 up to it, got " +
            Twine(headDim) + " / " + Twine(headDimVo) + " (use mma_sync)")
        .str();
  if (isFp8KVType(kvType) || qType != kvType)
    return ("head_dim " + Twine(headDim) + " / " + Twine(headDimVo) +
            " on wgmma takes a 16-bit cache of q's type (its gather copies "
            "K and V rows of their own widths straight into the panels)")
        .str();
  if (rope)
    return ("head_dim " + Twine(headDim) + " / " + Twine(headDimVo) +
            " on wgmma takes no RoPE (the producer rotates K tiles of head_dim "
            "64, 128 or 256 only)")
        .str();
  return {};
}

bool mlir::cascade::wgmmaSupportsKVType(Type qType, Type kvType,
                                        const TargetInfo &target) {
  bool f16OrBf16 = kvType.isF16() || kvType.isBF16();
  // KV of q's type lands straight in the tiles wgmma reads; an fp8 cache
  // lands in a staging ring that the producer converts into them (16-bit
  // queries) or reads as it is (fp8 queries of its type).
  bool qFits = qType.isF16() || qType.isBF16() || qType == kvType;
  return target.hasWgmma && qFits &&
         ((f16OrBf16 && kvType == qType) ||
          (isFp8KVType(kvType) &&
           fp8KVConvertSupported(target.computeCapability)));
}

bool mlir::cascade::wgmmaFp8Operands(Type qType) {
  return qType && isFp8KVType(qType);
}

std::string mlir::cascade::wgmmaWhyNotFp8Operands(KernelConfigAttr config,
                                                  int64_t headDim, bool rope,
                                                  bool customMask) {
  if (headDim != 128)
    return ("fp8 queries on wgmma need head_dim 128 (whole 128-byte panel "
            "rows of fp8), got " +
            Twine(headDim))
        .str();
  if (config.getKvTile() != 128)
    return "fp8 queries on wgmma need kv_tile 128 (the transposed V tile's "
           "rows are whole 128-byte panels)";
  if (config.hasSplitKVBarriers() || config.getStages() < 3)
    return "fp8 queries on wgmma need one K/V ring (kv_barriers = joint) of "
           "three stages or more: the producer transposes V from a staging "
           "slot while the next tile lands";
  if (rope)
    return "fp8 queries on wgmma take no RoPE (its rotation works on 16-bit "
           "tiles); rotate q and k before quantizing them";
  if (customMask)
    return "fp8 queries on wgmma take no custom mask yet (its producer "
           "hooks work on 16-bit tiles)";
  return {};
}

bool mlir::cascade::wgmmaConsumersHoldHeadDim(int64_t consumers,
                                              int64_t headDim) {
  return headDim / 2 + kWgmmaOperandRegisters <=
         wgmmaEntryRegisters(1 + consumers);
}

bool mlir::cascade::wgmmaFp8GatherFits(int64_t kvTile, int64_t headDim) {
  int64_t rowsPerPass = 128 / (headDim / 16);
  return rowsPerPass > 0 && kvTile % rowsPerPass == 0;
}

int64_t mlir::cascade::queriesSpanned(int64_t rows, int64_t groupSize) {
  int64_t g = std::max<int64_t>(groupSize, 1);
  return std::min(rows, (rows - 1) / g + 2);
}

int64_t mlir::cascade::wgmmaMaskQueries(KernelConfigAttr c, int64_t groupSize) {
  return queriesSpanned(c.getQTile(), groupSize);
}

int64_t mlir::cascade::wgmmaMaskStageWords(KernelConfigAttr c,
                                           int64_t groupSize) {
  return wgmmaMaskQueries(c, groupSize) * llvm::divideCeil(c.getKvTile(), 32) +
         kWgmmaMaskVerdicts;
}

int64_t mlir::cascade::wgmmaMaskSideBytes(KernelConfigAttr c,
                                          int64_t groupSize) {
  return c.getStages() * wgmmaMaskStageWords(c, groupSize) * 4;
}

int64_t mlir::cascade::wgmmaSharedBytes(KernelConfigAttr c, int64_t headDim,
                                        int64_t headDimVo, Type qType,
                                        Type kvType, int64_t maskGroupSize) {
  int64_t mask = maskGroupSize ? wgmmaMaskSideBytes(c, maskGroupSize) : 0;
  int64_t ring = c.getStages() * c.getKvTile() * headDim;
  // A narrower v (16-bit, no staging): K's ring and V's ring of their own
  // widths.
  if (headDimVo && headDimVo != headDim)
    return mask + c.getQTile() * headDim * 2 +
           c.getStages() * c.getKvTile() * (headDim + headDimVo) * 2;
  // fp8 queries: fp8 panels (Q, K, transposed V), then V's staging ring.
  if (wgmmaFp8Operands(qType))
    return mask + c.getQTile() * headDim + 3 * ring;
  // Unpadded 128-byte-swizzled panels, no partial states to merge.
  int64_t tiles = c.getQTile() * headDim * 2 + 2 * ring * 2;
  // The panel ring of q's dtype, then the fp8 staging rings (K and V,
  // `stages` deep).
  if (isFp8KVType(kvType))
    tiles += 2 * ring;
  return mask + tiles;
}

static int64_t dynamicSharedBytes(KernelConfigAttr c, const AttentionShape &s) {
  return wgmmaSharedBytes(c, s.headDim, s.headDimVo, s.qType, s.kvType,
                          s.customMask ? s.groupSize : 0);
}

/// Launched with the register file over the block's warpgroups.
static int64_t registersPerThread(KernelConfigAttr c, const TargetInfo &) {
  return wgmmaEntryRegisters(c.getThreads()[1]);
}

std::string mlir::cascade::wgmmaWhyNotPageLookahead(
    bool pageTable, int64_t pageSize, Type qType, Type kvType, bool rope,
    bool ownWidths, bool splitBarriers, int64_t kvTile) {
  if (!pageTable || isFp8KVType(kvType) || wgmmaFp8Operands(qType) || rope ||
      splitBarriers)
    return "page_lookahead needs the schedule whose copies publish their "
           "tile: a paged 16-bit cache, no RoPE, one K/V ring "
           "(kv_barriers = joint)";
  if (ownWidths)
    return "page_lookahead needs K and V of one head_dim whose rows divide "
           "the producer's 128 threads (its passes copy the K and V chunks "
           "of whole rows together)";
  if (pageSize < 1 || kvTile / pageSize + 1 > 32)
    return ("page_lookahead needs at most 31 pages a KV tile (a warp's lanes "
            "hold them), got kv_tile " +
            Twine(kvTile) + " at page size " + Twine(pageSize))
        .str();
  return {};
}

static std::string whyNotAttention(KernelConfigAttr config,
                                   const AttentionShape &s) {
  if (s.qType != s.kvType && !isFp8KVType(s.kvType))
    return "tensor cores need q and KV of one dtype (or an fp8 KV cache, "
           "converted to q's)";
  std::string dims =
      wgmmaWhyNotHeadDims(s.headDim, s.headDimVo, s.qType, s.kvType, s.rope);
  if (!dims.empty())
    return dims;
  if (!wgmmaConsumersHoldHeadDim(config.getConsumerWarpgroups(), s.headDimVo))
    return ("its " + Twine(config.getConsumerWarpgroups()) +
            " consumer warpgroups leave a thread too few registers for "
            "head_dim " +
            Twine(s.headDimVo) + "'s f32 output tile (" +
            Twine(s.headDimVo / 2) +
            " a thread, all live in one wgmma); use two consumers")
        .str();
  if (isFp8KVType(s.kvType) && config.hasSplitKVBarriers())
    return "an fp8 KV cache on wgmma needs one K/V ring (kv_barriers = "
           "joint): its producer converts and publishes whole tiles";
  if (isFp8KVType(s.kvType) &&
      !wgmmaFp8GatherFits(config.getKvTile(), s.headDim))
    return ("an fp8 KV cache on wgmma needs kv_tile a multiple of " +
            Twine(2048 / s.headDim) +
            " (the producer's 128 threads copy 2048 / head_dim keys a pass "
            "in 16-byte chunks)")
        .str();
  if (wgmmaFp8Operands(s.qType)) {
    std::string why =
        wgmmaWhyNotFp8Operands(config, s.headDim, s.rope, s.customMask);
    if (!why.empty())
      return why;
  }
  if (config.getPageLookahead()) {
    std::string why = wgmmaWhyNotPageLookahead(
        s.pageTable, s.pageSize, s.qType, s.kvType, s.rope,
        wgmmaOwnWidths(s.headDim, s.headDimVo), config.hasSplitKVBarriers(),
        config.getKvTile());
    if (!why.empty())
      return why;
  }
  if (s.decode)
    return "the wgmma family runs prefill and append, not decode (a decode "
           "request fills too few of its 64-row warpgroup tiles; use rows or "
           "mma_sync)";
  return {};
}

const KernelFamilyTraits mlir::cascade::kWgmmaTraits = {
    KernelFamily::Wgmma,
    ::cascade::contract::family::kWgmma,
    "_wgmma",
    wgmmaSupportsKVType,
    dynamicSharedBytes,
    /*staticSharedBytes=*/nullptr,
    registersPerThread,
    whyNotAttention,
};
