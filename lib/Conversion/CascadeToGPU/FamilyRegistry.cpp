//===- FamilyRegistry.cpp - The kernel families, one row each -------------===//

#include "FamilyRegistry.h"
#include "merge/MergeFamily.h"
#include "merge/MergeTraits.h"
#include "mma_sync/MmaSyncFamily.h"
#include "mma_sync/MmaSyncTraits.h"
#include "rows/RowsFamily.h"
#include "rows/RowsTraits.h"
#include "wgmma/WgmmaFamily.h"
#include "wgmma/WgmmaTraits.h"

#include "llvm/Support/ErrorHandling.h"

using namespace mlir;
using namespace mlir::cascade;

/// In the order selection tries them:
/// - merge: merges, one 16-byte chunk of a state per thread, ~128 threads a
///   block;
/// - rows: q and KV of different f16/bf16 dtypes (the only family that
///   converts those), and decode with a small GQA group (<= rows-max-group)
///   at a head_dim the family splits over a warp (f16, bf16 or fp8 KV; fp8
///   has its own group limit, rows-max-group-fp8, 1 by default): the
///   bandwidth-bound CUDA-core kernel (all G query heads of a KV head share
///   each K/V tile read);
/// - wgmma (before mma_sync, where TargetInfo::hasWgmma: sm_90a): prefill,
///   append and shared-prefix levels of one dtype at head_dim 64, 128 or
///   256, warp-specialized on Hopper's warpgroup MMA, also over an fp8 KV
///   cache (the producer converts its tiles); the one place that decides
///   where wgmma does not pay (decode, head_dim 96 / 192, mixed f16/bf16
///   dtypes) and leaves those ops to mma_sync;
/// - mma_sync: every other attention (prefill/append, shared-prefix levels,
///   decode with large groups or other head dims), FlashAttention-2 on
///   tensor cores with the GQA group packed into the query rows, shrunk
///   until it fits the chip's shared memory; fp8 KV tiles are converted to
///   q's dtype.
static const KernelFamilyEntry kFamilies[] = {
    {kMergeTraits, mergeApplies, chooseMerge, nullptr, buildMergeKernel},
    {kRowsTraits, rowsApplies, chooseRows, buildRowsAttentionKernel, nullptr},
    {kWgmmaTraits, wgmmaApplies, chooseWgmma, buildWgmmaAttentionKernel,
     nullptr},
    {kMmaSyncTraits, mmaSyncApplies, chooseMmaSync, buildMmaSyncAttentionKernel,
     nullptr},
};

ArrayRef<KernelFamilyEntry> cascade::getKernelFamilies() { return kFamilies; }

const KernelFamilyEntry &cascade::getKernelFamily(KernelFamily family) {
  for (const KernelFamilyEntry &entry : kFamilies)
    if (entry.family() == family)
      return entry;
  llvm_unreachable("a kernel family without a row in FamilyRegistry.cpp");
}
