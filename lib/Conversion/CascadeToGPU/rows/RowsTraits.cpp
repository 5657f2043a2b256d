//===- RowsTraits.cpp - The rows family's facts ---------------------------===//

#include "rows/RowsTraits.h"

#include "cascade/Contract/BundleContract.h"
#include "cascade/Conversion/GPUCodegen/Fp8Convert.h"

#include "llvm/ADT/Twine.h"

using namespace mlir;
using namespace mlir::cascade;

bool mlir::cascade::rowsFamilySupportsHeadDim(int64_t headDim) {
  return headDim % 8 == 0 && headDim / 8 <= 32 && 32 % (headDim / 8) == 0;
}

bool mlir::cascade::rowsSupportsKVType(Type qType, Type kvType,
                                       const TargetInfo &target) {
  // Queries are f16 or bf16 (fp8 queries run on wgmma only).
  if (!qType.isF16() && !qType.isBF16())
    return false;
  bool f16OrBf16 = kvType.isF16() || kvType.isBF16();
  return f16OrBf16 || (isFp8KVType(kvType) &&
                       fp8KVConvertSupported(target.computeCapability));
}

int64_t mlir::cascade::rowsKVStageBytes(int64_t tile, int64_t headDim,
                                        Type kvType, int64_t stages) {
  return stages * 2 * tile * headDim * (isFp8KVType(kvType) ? 1 : 2);
}

/// The K/V stages (the reduction buffers beside them are not counted).
static int64_t staticSharedBytes(KernelConfigAttr config,
                                 const AttentionShape &s) {
  return rowsKVStageBytes(config.getKvTile(), s.headDim, s.kvType,
                          config.getStages());
}

/// The rows kernels stay well under 128 registers a thread.
static int64_t registersPerThread(KernelConfigAttr, const TargetInfo &) {
  return 128;
}

static std::string whyNotAttention(KernelConfigAttr config,
                                   const AttentionShape &s) {
  if (isFp8KVType(s.qType))
    return "fp8 queries run on the wgmma family only (fp8 tensor cores)";
  if (s.headDimVo != s.headDim)
    return "the rows family needs v's head_dim to be q's and k's (a "
           "narrower v runs on mma_sync)";
  if (!rowsFamilySupportsHeadDim(s.headDim))
    return "the rows family needs head_dim 8, 16, 32, 64, 128 or 256 "
           "(head_dim / 8 lanes dividing a warp)";
  if (config.getThreads()[0] != s.headDim / 8)
    return ("the rows family takes threads[0] = head_dim / 8 = " +
            Twine(s.headDim / 8))
        .str();
  if (s.groupSize > 16)
    return "the rows family keeps every query head of a GQA group in "
           "registers and supports groups up to 16 (use mma_sync)";
  if (!s.decode && s.split)
    return "the rows family has no split-KV prefill (use mma_sync)";
  if (s.customMask)
    return "custom masks run on the tensor-core families (mma_sync, wgmma): "
           "q and KV of one dtype";
  if (staticSharedBytes(config, s) > 48 * 1024)
    return "the K/V stages exceed 48 KiB of static shared memory";
  return {};
}

const KernelFamilyTraits mlir::cascade::kRowsTraits = {
    KernelFamily::Rows,
    ::cascade::contract::family::kRows,
    "_rows",
    rowsSupportsKVType,
    /*dynamicSharedBytes=*/nullptr,
    staticSharedBytes,
    registersPerThread,
    whyNotAttention,
};
