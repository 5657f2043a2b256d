//===- KernelConfig.h - Kernel family and tiling selection ------*- C++ -*-===//
//
// The one place that decides, for each cascade op, which kernel family runs
// it and with which tiling (#cascade.kernel_config), for one target chip
// (TargetInfo.h). What each family takes (head dims, KV types, shared
// memory, registers) is the family's traits, inside the library
// (lib/Conversion/CascadeToGPU/FamilyTraits.h). The
// `cascade-select-kernel-config` pass records the choice on the ops;
// `convert-cascade-to-gpu` reads it (and applies these defaults to ops that
// carry none). Tuning happens through the pass options (declared
// once, in Passes.td) or by writing the attribute, never through the
// environment.
//
//===----------------------------------------------------------------------===//

#ifndef CASCADE_CONVERSION_KERNELCONFIG_H
#define CASCADE_CONVERSION_KERNELCONFIG_H

#include "cascade/Conversion/Passes.h"
#include "cascade/Conversion/TargetInfo.h"
#include "cascade/Dialect/Cascade/IR/CascadeOps.h"

namespace mlir {
class ModuleOp;
namespace cascade {

/// Knobs of the default selection: the options of
/// `cascade-select-kernel-config` as tablegen generates them from Passes.td
/// (one declaration, with the defaults); 0 means "choose automatically".
/// `chip` names the target (empty: kDefaultChip); `overwrite` only concerns
/// the pass.
using KernelConfigOptions = CascadeSelectKernelConfigOptions;

/// Whether a block of `op`'s kernel with `config` fits the shared memory of
/// `target`. Fails with a diagnostic on `op` (naming the bytes needed and the
/// chip's limit) where it does not. The one check of a configuration against
/// a chip: selection applies it to the configurations it chooses and to the
/// hand-written ones it keeps.
LogicalResult verifyKernelConfigFitsTarget(Operation *op,
                                           KernelConfigAttr config,
                                           const TargetInfo &target);

/// The target selection works for. Precedence: the chip of the
/// `#nvvm.target`s attached to the gpu.modules inside `module`, else
/// `chipOption` (the pass option), else kDefaultChip. A chip option that
/// disagrees with an attached target, gpu.modules targeting different chips,
/// or a chip missing from getKnownTargets() fail with a diagnostic on
/// `module`.
FailureOr<const TargetInfo *> resolveSelectionTarget(ModuleOp module,
                                                     StringRef chipOption);

/// The default kernel configuration of `op` (a merge op or
/// cascade.paged_attention) on `target`. Emits a diagnostic and fails where
/// no kernel family can run the op there.
FailureOr<KernelConfigAttr> selectKernelConfig(Operation *op,
                                               const KernelConfigOptions &opts,
                                               const TargetInfo &target);
/// The same on the chip `opts.chip` names (kDefaultChip when empty).
FailureOr<KernelConfigAttr> selectKernelConfig(Operation *op,
                                               const KernelConfigOptions &opts);

} // namespace cascade
} // namespace mlir

#endif // CASCADE_CONVERSION_KERNELCONFIG_H
