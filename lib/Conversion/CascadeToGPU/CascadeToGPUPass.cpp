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
struct ConvertCascadeToGPUPass
    : cascade::impl::ConvertCascadeToGPUBase<ConvertCascadeToGPUPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
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
