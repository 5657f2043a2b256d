//===- MergeTraits.cpp - The merge family's facts -------------------------===//

#include "merge/MergeTraits.h"

#include "cascade/Contract/BundleContract.h"

using namespace mlir;
using namespace mlir::cascade;

static bool supportsKVType(Type, Type, const TargetInfo &) { return false; }

static int64_t registersPerThread(KernelConfigAttr, const TargetInfo &) {
  return 128;
}

static std::string whyNotAttention(KernelConfigAttr, const AttentionShape &) {
  return "merge is not an attention kernel family";
}

const KernelFamilyTraits mlir::cascade::kMergeTraits = {
    KernelFamily::Merge,
    ::cascade::contract::family::kMerge,
    "_merge",
    supportsKVType,
    /*dynamicSharedBytes=*/nullptr,
    /*staticSharedBytes=*/nullptr,
    registersPerThread,
    whyNotAttention,
};
