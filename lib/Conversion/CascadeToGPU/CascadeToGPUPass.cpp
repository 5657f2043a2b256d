//===- CascadeToGPUPass.cpp - convert-cascade-to-gpu ----------------------===//

#include "KernelBuilder.h"
#include "cascade/Conversion/Passes.h"
#include "cascade/Dialect/Cascade/IR/CascadeDialect.h"
#include "cascade/Dialect/Cascade/IR/CascadeOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/WalkPatternRewriteDriver.h"

namespace mlir {
namespace cascade {
#define GEN_PASS_DEF_CONVERTCASCADETOGPU
#include "cascade/Conversion/Passes.h.inc"
} // namespace cascade
} // namespace mlir

using namespace mlir;
using namespace mlir::cascade;

namespace {

/// Kernels index flat, row-major buffers. A memref whose layout is not
/// provably contiguous row-major (static strides matching the sizes of the
/// inner dims) would be read wrong, so it is rejected before lowering.
bool isContiguousRowMajor(MemRefType t) {
  if (t.getLayout().isIdentity())
    return true;
  SmallVector<int64_t> strides;
  int64_t offset;
  if (failed(t.getStridesAndOffset(strides, offset)))
    return false;
  int64_t expected = 1;
  for (int64_t i = t.getRank() - 1; i >= 0; --i) {
    if (t.getDimSize(i) != 1 && strides[i] != expected)
      return false;
    if (i == 0)
      break;
    if (ShapedType::isDynamic(t.getDimSize(i)))
      return false;
    expected *= t.getDimSize(i);
  }
  return true;
}

/// Checks every buffer operand of the cascade ops in `module`; the mask of
/// merge_state_in_place is exempt (its stride is passed to the kernel).
LogicalResult checkLayouts(ModuleOp module) {
  bool ok = true;
  module.walk([&](Operation *op) {
    if (!isa<CascadeDialect>(op->getDialect()))
      return;
    auto inPlace = dyn_cast<MergeStateInPlaceOp>(op);
    for (OpOperand &operand : op->getOpOperands()) {
      auto t = dyn_cast<MemRefType>(operand.get().getType());
      if (!t || (inPlace && operand.get() == inPlace.getMask()))
        continue;
      if (isContiguousRowMajor(t))
        continue;
      op->emitOpError("operand #")
          << operand.getOperandNumber() << " of type " << t
          << " is not contiguous row-major; the GPU kernels read flat "
             "buffers (copy it into an identity-layout buffer first, or "
             "bufferize with function-boundary-type-conversion="
             "identity-layout-map)";
      ok = false;
    }
  });
  return success(ok);
}

struct ConvertCascadeToGPUPass
    : cascade::impl::ConvertCascadeToGPUBase<ConvertCascadeToGPUPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (failed(checkLayouts(module)))
      return signalPassFailure();
    RewritePatternSet patterns(&getContext());
    populateMergeToGPUPatterns(patterns);
    populatePagedDecodeToGPUPatterns(patterns);
    walkAndApplyPatterns(module, std::move(patterns));

    bool failedAny = false;
    module.walk([&](Operation *op) {
      if (isa<CascadeDialect>(op->getDialect()) &&
          !op->getParentOfType<gpu::GPUModuleOp>()) {
        if (isa<MultiLevelAttentionOp>(op))
          op->emitError(
              "run cascade-decompose-levels before convert-cascade-to-gpu");
        else
          op->emitError(
              "cascade op could not be lowered to GPU "
              "(tensor form: bufferize first; see diagnostics above)");
        failedAny = true;
      }
    });
    if (failedAny)
      return signalPassFailure();

    // Collect the manifest entries onto the module so they survive
    // gpu-module-to-binary.
    SmallVector<Attribute> entries;
    if (auto gm = module.lookupSymbol<gpu::GPUModuleOp>(kKernelModuleName))
      for (auto fn : gm.getOps<gpu::GPUFuncOp>())
        if (auto d = fn->getAttrOfType<DictionaryAttr>(kManifestAttrName))
          entries.push_back(d);
    if (!entries.empty())
      module->setAttr(kBundleAttrName, ArrayAttr::get(&getContext(), entries));
  }
};
} // namespace
