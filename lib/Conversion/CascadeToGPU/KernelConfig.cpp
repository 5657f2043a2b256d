//===- KernelConfig.cpp - Kernel family and tiling selection --------------===//
//
// Default #cascade.kernel_config of every cascade op on a target chip, and
// the cascade-select-kernel-config pass that records it. The kernel families
// are the rows of FamilyRegistry.cpp, tried in order; the first whose rule
// applies to an op chooses its configuration (each family's rule is in its
// folder: rows/, mma_sync/, wgmma/, merge/). Which family reads which KV
// dtype is each family's traits (FamilyTraits.h). This file analyses the
// op, checks configurations against the chip and resolves the target.
//
//===----------------------------------------------------------------------===//

#include "cascade/Conversion/KernelConfig.h"
#include "FamilyRegistry.h"
#include "cascade/Conversion/GPUCodegen/Fp8Convert.h"
#include "cascade/Conversion/Passes.h"
#include "cascade/Dialect/Cascade/IR/AttentionOptions.h"
#include "cascade/Dialect/Cascade/IR/CascadeDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"

#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/MathExtras.h"

namespace mlir {
namespace cascade {
#define GEN_PASS_DEF_CASCADESELECTKERNELCONFIG
#include "cascade/Conversion/Passes.h.inc"
} // namespace cascade
} // namespace mlir

using namespace mlir;
using namespace mlir::cascade;

//===----------------------------------------------------------------------===//
// The target
//===----------------------------------------------------------------------===//

/// The GQA group size of `op` where it has a custom mask (1, the most
/// side data, while a head count is dynamic), else 0.
static int64_t maskGroupSize(PagedAttentionOp op) {
  if (!op.hasCustomMask())
    return 0;
  bool pool = op.getKv().size() == 1, nhd = op.getKvLayout() == KVLayout::NHD;
  int64_t qHeads = cast<ShapedType>(op.getQ().getType()).getDimSize(1);
  int64_t kvHeads = cast<ShapedType>(op.getKv()[0].getType())
                        .getDimSize(pool ? (nhd ? 3 : 2) : (nhd ? 2 : 1));
  if (ShapedType::isDynamic(qHeads) || ShapedType::isDynamic(kvHeads) ||
      kvHeads < 1)
    return 1;
  return std::max<int64_t>(qHeads / kvHeads, 1);
}

/// The shared memory of a block of `op`'s kernel under `config`: its
/// dynamic part (0 for the families whose shared memory is static: rows,
/// merge) and the static part its family counts (staticSharedBytes).
struct BlockSharedBytes {
  int64_t dynamic = 0, counted = 0;
};
static BlockSharedBytes blockSharedBytes(Operation *op,
                                         KernelConfigAttr config) {
  auto attention = dyn_cast<PagedAttentionOp>(op);
  const KernelFamilyTraits &traits = getKernelFamily(config.getFamily()).traits;
  if (!attention || (!traits.dynamicSharedBytes && !traits.staticSharedBytes))
    return {};
  int64_t headDim =
      cast<ShapedType>(attention.getQ().getType()).getShape().back();
  if (ShapedType::isDynamic(headDim))
    return {};
  AttentionShape shape;
  shape.headDim = headDim;
  // v's head_dim: the last dimension of the (k, v) pair's v (a pool's is
  // k's).
  int64_t headDimVo =
      cast<ShapedType>(attention.getKv().back().getType()).getShape().back();
  shape.headDimVo = ShapedType::isDynamic(headDimVo) ? headDim : headDimVo;
  shape.qType = cast<ShapedType>(attention.getQ().getType()).getElementType();
  shape.kvType =
      cast<ShapedType>(attention.getKv()[0].getType()).getElementType();
  shape.decode = attention.isDecode();
  shape.rope = getScoreOptions(attention).rope();
  if (int64_t group = maskGroupSize(attention)) {
    shape.customMask = true;
    shape.groupSize = group;
  }
  BlockSharedBytes bytes;
  if (traits.dynamicSharedBytes)
    bytes.dynamic = traits.dynamicSharedBytes(config, shape);
  bytes.counted = bytes.dynamic;
  if (traits.staticSharedBytes)
    bytes.counted += traits.staticSharedBytes(config, shape);
  return bytes;
}

/// The shared memory the hardware reserves for each resident block (sm_80
/// and later).
static constexpr int64_t kReservedSharedBytesPerBlock = 1024;

/// Why `config` does not fit `target` (empty where it fits).
static std::string whyNotFits(Operation *op, KernelConfigAttr config,
                              const TargetInfo &target) {
  std::string why;
  llvm::raw_string_ostream os(why);
  BlockSharedBytes bytes = blockSharedBytes(op, config);
  int64_t smem = bytes.dynamic;
  if (smem > target.sharedBytesPerBlockOptin) {
    os << "needs " << smem << " bytes of shared memory per block; "
       << target.chip << " allows at most " << target.sharedBytesPerBlockOptin;
    return why;
  }
  int64_t blocks = config.getMinBlocksPerSm();
  if (!blocks)
    return why;
  int64_t threads = blocks * config.getNumThreads();
  int64_t perSM = blocks * (bytes.counted + kReservedSharedBytesPerBlock);
  if (threads > target.maxThreadsPerSM)
    os << "asks for " << blocks << " blocks an SM, " << threads << " threads; "
       << target.chip << " holds " << target.maxThreadsPerSM;
  else if (perSM > target.sharedBytesPerSM)
    os << "asks for " << blocks << " blocks an SM, " << perSM
       << " bytes of shared memory with what each block reserves; "
       << target.chip << " has " << target.sharedBytesPerSM;
  return why;
}

static bool fitsTarget(Operation *op, KernelConfigAttr config,
                       const TargetInfo &target) {
  return whyNotFits(op, config, target).empty();
}

LogicalResult mlir::cascade::verifyKernelConfigFitsTarget(
    Operation *op, KernelConfigAttr config, const TargetInfo &target) {
  if (auto attention = dyn_cast<PagedAttentionOp>(op);
      attention && failed(refuseLatentAttention(attention)))
    return failure();
  std::string why = whyNotFits(op, config, target);
  if (why.empty())
    return success();
  return op->emitError("kernel_config ") << config << " " << why;
}

FailureOr<const TargetInfo *>
mlir::cascade::resolveSelectionTarget(ModuleOp module, StringRef chipOption) {
  // The chips the kernels are built for, where a target is attached.
  llvm::SetVector<StringRef> attached;
  module.walk([&](gpu::GPUModuleOp gpuModule) {
    if (ArrayAttr targets = gpuModule.getTargetsAttr())
      for (Attribute t : targets)
        if (auto nvvm = dyn_cast<NVVM::NVVMTargetAttr>(t))
          attached.insert(nvvm.getChip());
  });
  if (attached.size() > 1)
    return module.emitError("kernel selection needs one target chip; the "
                            "gpu.modules target ")
               << llvm::join(attached, ", "),
           failure();
  StringRef chip = chipOption;
  if (!attached.empty()) {
    if (!chipOption.empty() && chipOption != attached.front())
      return module.emitError("kernel selection for chip '")
                 << chipOption << "', but the gpu.modules target '"
                 << attached.front() << "' (#nvvm.target)",
             failure();
    chip = attached.front();
  }
  if (chip.empty())
    chip = kDefaultChip;
  const TargetInfo *target = lookupTarget(chip);
  if (!target)
    return module.emitError("kernel selection does not know chip '")
               << chip << "' (known: " << getKnownChipsString() << ")",
           failure();
  return target;
}

//===----------------------------------------------------------------------===//
// Selection
//===----------------------------------------------------------------------===//

/// What selection looks at in `op`; fails with a diagnostic where the
/// shapes it needs are not static.
static FailureOr<OpShape> analyseOp(Operation *op) {
  auto headDimOf = [](Value v) {
    return cast<ShapedType>(v.getType()).getShape().back();
  };
  if (auto attention = dyn_cast<PagedAttentionOp>(op);
      attention && failed(refuseLatentAttention(attention)))
    return failure();
  OpShape s;
  Value mergedV = llvm::TypeSwitch<Operation *, Value>(op)
                      .Case<MergeStateOp, MergeStateInPlaceOp, MergeStatesOp>(
                          [](auto m) { return m.getV(); })
                      .Default([](Operation *) { return Value(); });
  if (mergedV) {
    s.merge = true;
    s.headDim = headDimOf(mergedV);
    if (ShapedType::isDynamic(s.headDim) || s.headDim % 8 != 0 ||
        s.headDim / 8 > 1024)
      return op->emitError("merge lowering needs a static head_dim multiple "
                           "of 8 and <= 8192"),
             failure();
    return s;
  }
  auto a = dyn_cast<PagedAttentionOp>(op);
  if (!a)
    return op->emitError("no kernel family for this op"), failure();
  auto qt = cast<ShapedType>(a.getQ().getType());
  auto kt = cast<ShapedType>(a.getKv()[0].getType());
  bool hnd = a.getKvLayout() == KVLayout::HND;
  int64_t headsDim = a.getKv().size() == 1 ? (hnd ? 2 : 3) : (hnd ? 1 : 2);
  int64_t hqo = qt.getDimSize(1), hkv = kt.getDimSize(headsDim);
  if (ShapedType::isDynamic(hqo) || ShapedType::isDynamic(hkv))
    return a.emitError("attention lowering needs static head counts (dims of "
                       "'q' and the KV cache)"),
           failure();
  s.headDim = qt.getDimSize(2);
  s.headDimVo = headDimOf(a.getKv().back());
  s.group = hqo / hkv;
  s.decode = a.isDecode();
  s.qType = qt.getElementType();
  s.kvType = kt.getElementType();
  s.mixedTypes = s.qType != s.kvType;
  ScoreOptions score = getScoreOptions(a);
  // Options that touch every score (soft cap, ALiBi) or q and k (RoPE).
  s.heavyOptions = !score.plainScores() || score.rope();
  s.customMask = a.hasCustomMask();
  s.planned = !a.getPlan().empty();
  s.accumulate = a.getAccumulate();
  s.causal = a.getCausal();
  s.rope = score.rope();
  s.pageTable = static_cast<bool>(a.getKvIndices());
  s.pageSize = a.getPageSize();
  return s;
}

FailureOr<KernelConfigAttr> mlir::cascade::selectKernelConfig(
    Operation *op, const KernelConfigOptions &opts, const TargetInfo &target) {
  FailureOr<OpShape> shape = analyseOp(op);
  if (failed(shape))
    return failure();
  auto fits = [&](KernelConfigAttr c) { return fitsTarget(op, c, target); };
  auto verifyFits = [&](KernelConfigAttr c) {
    return verifyKernelConfigFitsTarget(op, c, target);
  };
  SelectionInput in{op, *shape, opts, target, fits, verifyFits};
  for (const KernelFamilyEntry &family : getKernelFamilies())
    if (family.applies(in))
      return family.choose(in);
  if (isFp8KVType(shape->qType)) {
    InFlightDiagnostic d = op->emitError("fp8 queries (")
                           << shape->qType << ") run on the wgmma family only";
    if (!target.hasWgmma)
      d << ", which needs sm_90a; the target is " << target.chip;
    else if (!opts.wgmmaFp8Operands)
      d << ", whose fp8 operands cascade-select-kernel-config's "
           "wgmma-fp8-operands=false turned off";
    else if (shape->decode)
      d << ", which runs prefill and append, not decode";
    else
      d << ", which needs head_dim 128 for them and no RoPE or custom mask";
    return failure();
  }
  if (isFp8KVType(shape->kvType) &&
      !fp8KVConvertSupported(target.computeCapability))
    return op->emitError("an fp8 KV cache (")
               << shape->kvType << ") needs sm_"
               << kFp8ConvertMinComputeCapability
               << " or newer (cvt.rn.f16x2.e4m3x2 / .e5m2x2); the target is "
               << target.chip,
           failure();
  if (shape->mixedTypes)
    return op->emitError("q and KV of different dtypes run on the rows kernel "
                         "family, which needs head_dim 8, 16, 32, 64, 128 or "
                         "256; got ")
               << shape->headDim,
           failure();
  return op->emitError("no kernel family for this op"), failure();
}

FailureOr<KernelConfigAttr>
mlir::cascade::selectKernelConfig(Operation *op,
                                  const KernelConfigOptions &opts) {
  StringRef chip = opts.chip.empty() ? StringRef(kDefaultChip) : opts.chip;
  const TargetInfo *target = lookupTarget(chip);
  if (!target)
    return op->emitError("kernel selection does not know chip '")
               << chip << "' (known: " << getKnownChipsString() << ")",
           failure();
  return selectKernelConfig(op, opts, *target);
}

//===----------------------------------------------------------------------===//
// cascade-select-kernel-config
//===----------------------------------------------------------------------===//

namespace {
struct SelectKernelConfigPass
    : mlir::cascade::impl::CascadeSelectKernelConfigBase<
          SelectKernelConfigPass> {
  using Base::Base;

  /// The pass's options as the generated struct that selection takes.
  KernelConfigOptions getSelectionOptions() const {
    KernelConfigOptions o;
    o.overwrite = overwrite;
    o.chip = chip;
    o.mergeThreads = mergeThreads;
    o.rowsThreads = rowsThreads;
    o.rowsKVTile = rowsKVTile;
    o.rowsMaxStages = rowsMaxStages;
    o.rowsSmemKiB = rowsSmemKiB;
    o.rowsMinBlocksPerSM = rowsMinBlocksPerSM;
    o.rowsMaxGroup = rowsMaxGroup;
    o.rowsMaxGroupFp8 = rowsMaxGroupFp8;
    o.mmaQTile = mmaQTile;
    o.mmaKVTile = mmaKVTile;
    o.mmaStages = mmaStages;
    o.mmaWarpsKV = mmaWarpsKV;
    o.mmaMinBlocksPerSM = mmaMinBlocksPerSM;
    o.wgmma = wgmma;
    o.wgmmaKVTile = wgmmaKVTile;
    o.wgmmaStages = wgmmaStages;
    o.wgmmaConsumers = wgmmaConsumers;
    o.wgmmaSplitKVBarriers = wgmmaSplitKVBarriers;
    o.wgmmaFp8Operands = wgmmaFp8Operands;
    o.wgmmaExp2Emulation = wgmmaExp2Emulation;
    o.wgmmaPageLookahead = wgmmaPageLookahead;
    o.wgmmaHeadDimVo = wgmmaHeadDimVo;
    o.wgmmaSweepTiles = wgmmaSweepTiles;
    return o;
  }

  void runOnOperation() override {
    FailureOr<const TargetInfo *> target =
        resolveSelectionTarget(getOperation(), chip);
    if (failed(target))
      return signalPassFailure();
    KernelConfigOptions opts = getSelectionOptions();
    auto helper = getContext()
                      .getLoadedDialect<CascadeDialect>()
                      ->getKernelConfigAttrHelper();
    bool failedAny = false;
    getOperation()->walk([&](Operation *op) {
      if (!isa<MergeStateOp, MergeStateInPlaceOp, MergeStatesOp,
               PagedAttentionOp>(op) ||
          op->getParentOfType<gpu::GPUModuleOp>())
        return;
      if (KernelConfigAttr kept = helper.getAttr(op); kept && !overwrite) {
        // A hand-written configuration must still fit the chip.
        if (failed(verifyKernelConfigFitsTarget(op, kept, **target)))
          failedAny = true;
        return;
      }
      FailureOr<KernelConfigAttr> c = selectKernelConfig(op, opts, **target);
      // A tuning option (a launch bound) may ask for more than the chip has.
      if (failed(c) || failed(verifyKernelConfigFitsTarget(op, *c, **target))) {
        failedAny = true;
        return;
      }
      helper.setAttr(op, *c);
    });
    if (failedAny)
      signalPassFailure();
  }
};
} // namespace
