//===- TargetInfo.cpp - What kernel selection knows of a GPU --------------===//
//
// The table of TargetInfo.h. Numbers from the CUDA C++ programming guide
// (compute capabilities, technical specifications): 8.0 A100, 8.6 GA10x,
// 8.7 Orin, 8.9 Ada, 9.0 H100/H200.
//
//===----------------------------------------------------------------------===//

#include "cascade/Conversion/TargetInfo.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"

using namespace mlir::cascade;

static constexpr int64_t kKiB = 1024;

// chip, cc, smem/block, opt-in, smem/SM, regs/thread, regs/SM,
// threads/block, threads/SM, wgmma, TMA
static constexpr TargetInfo kTargets[] = {
    {"sm_80", 80, 48 * kKiB, 163 * kKiB, 164 * kKiB, 255, 65536, 1024, 2048,
     false, false},
    {"sm_86", 86, 48 * kKiB, 99 * kKiB, 100 * kKiB, 255, 65536, 1024, 1536,
     false, false},
    {"sm_87", 87, 48 * kKiB, 163 * kKiB, 164 * kKiB, 255, 65536, 1024, 1536,
     false, false},
    {"sm_89", 89, 48 * kKiB, 99 * kKiB, 100 * kKiB, 255, 65536, 1024, 1536,
     false, false},
    {"sm_90", 90, 48 * kKiB, 227 * kKiB, 228 * kKiB, 255, 65536, 1024, 2048,
     false, true},
    {"sm_90a", 90, 48 * kKiB, 227 * kKiB, 228 * kKiB, 255, 65536, 1024, 2048,
     true, true},
};

static constexpr int64_t largestOptin() {
  int64_t m = 0;
  for (const TargetInfo &t : kTargets)
    m = t.sharedBytesPerBlockOptin > m ? t.sharedBytesPerBlockOptin : m;
  return m;
}
static_assert(largestOptin() == kMaxSharedBytesOnAnyTarget,
              "kMaxSharedBytesOnAnyTarget must be the table's largest opt-in");

llvm::ArrayRef<TargetInfo> mlir::cascade::getKnownTargets() { return kTargets; }

const TargetInfo *mlir::cascade::lookupTarget(llvm::StringRef chip) {
  const auto *it = llvm::find_if(
      kTargets, [&](const TargetInfo &t) { return t.chip == chip; });
  return it == std::end(kTargets) ? nullptr : it;
}

std::string mlir::cascade::getKnownChipsString() {
  return llvm::join(llvm::map_range(kTargets,
                                    [](const TargetInfo &t) -> llvm::StringRef {
                                      return t.chip;
                                    }),
                    ", ");
}
