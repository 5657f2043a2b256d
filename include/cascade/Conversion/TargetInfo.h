//===- TargetInfo.h - What kernel selection knows of a GPU ------*- C++ -*-===//
//
// The limits of the chips the kernels are built for, as kernel selection
// (`cascade-select-kernel-config`) sees them: shared memory, registers,
// threads, and the instructions a kernel family may need (wgmma, TMA). One
// row per chip name of `#nvvm.target<chip = ...>`; the numbers are the CUDA
// programming guide's "technical specifications per compute capability".
//
//===----------------------------------------------------------------------===//

#ifndef CASCADE_CONVERSION_TARGETINFO_H
#define CASCADE_CONVERSION_TARGETINFO_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <string>

namespace mlir {
namespace cascade {

/// One GPU target as kernel selection sees it.
struct TargetInfo {
  /// The chip name of `#nvvm.target` and ptxas (`sm_90a`).
  llvm::StringLiteral chip;
  /// Compute capability as major * 10 + minor (90 for sm_90 and sm_90a).
  int computeCapability;
  /// Shared memory a block may use: without the opt-in attribute (static
  /// shared memory is limited to this), and at most with it (dynamic).
  int64_t sharedBytesPerBlock;
  int64_t sharedBytesPerBlockOptin;
  /// Shared memory of one SM (all resident blocks together).
  int64_t sharedBytesPerSM;
  /// 32-bit registers of one thread and of one SM.
  int64_t registersPerThread;
  int64_t registersPerSM;
  /// Resident threads of one block and of one SM.
  int64_t maxThreadsPerBlock;
  int64_t maxThreadsPerSM;
  /// Warpgroup MMA (`wgmma.mma_async`): the arch-specific sm_90a only.
  bool hasWgmma;
  /// The tensor memory accelerator (`cp.async.bulk.tensor`): sm_90 and up.
  bool hasTma;
};

/// Every chip selection knows, oldest first.
llvm::ArrayRef<TargetInfo> getKnownTargets();

/// The row of `chip` (`sm_86`), or null where selection does not know it.
const TargetInfo *lookupTarget(llvm::StringRef chip);

/// The known chip names, comma separated (for diagnostics).
std::string getKnownChipsString();

/// The largest dynamic shared memory a block may use on any known chip
/// (sm_90's 227 KiB opt-in): the bound of code that does not know its chip.
inline constexpr int64_t kMaxSharedBytesOnAnyTarget = 227 * 1024;

/// The chip that selection assumes where neither a pass option nor an
/// attached `#nvvm.target` names one: cascade-to-ptx's default.
inline constexpr llvm::StringLiteral kDefaultChip = "sm_90";

} // namespace cascade
} // namespace mlir

#endif // CASCADE_CONVERSION_TARGETINFO_H
