//===- KernelModules.cpp - One gpu.module per kernel, serialized in parallel =//
//
// cascade-split-kernel-modules gives every kernel a gpu.module (and so a
// PTX file) of its own; cascade-gpu-module-to-binary is upstream's
// gpu-module-to-binary with the modules serialized in parallel. Together
// they let the kernels of one bundle be lowered, code-generated and
// assembled independently: a new configuration's first use waits for its
// largest kernel, not for the sum of them (issue 42).
//
//===----------------------------------------------------------------------===//

#include "cascade/Conversion/Passes.h"

#include "mlir/Dialect/GPU/IR/CompilationInterfaces.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/IR/Threading.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/FormatVariadic.h"

#include <chrono>
#include <optional>

namespace mlir {
namespace cascade {
#define GEN_PASS_DEF_CASCADESPLITKERNELMODULES
#define GEN_PASS_DEF_CASCADEGPUMODULETOBINARY
#include "cascade/Conversion/Passes.h.inc"
} // namespace cascade
} // namespace mlir

using namespace mlir;
using namespace mlir::cascade;

namespace {

/// The names of the symbols `root` refers to, directly or through the
/// non-kernel symbols of `from` it uses (a global, a helper function).
llvm::DenseSet<StringAttr> usedSymbols(Operation *root, gpu::GPUModuleOp from) {
  llvm::DenseSet<StringAttr> used;
  SmallVector<Operation *> work{root};
  while (!work.empty()) {
    Operation *op = work.pop_back_val();
    std::optional<SymbolTable::UseRange> uses = SymbolTable::getSymbolUses(op);
    if (!uses)
      continue;
    for (const SymbolTable::SymbolUse &use : *uses) {
      StringAttr name = use.getSymbolRef().getRootReference();
      if (!used.insert(name).second)
        continue;
      if (Operation *def = SymbolTable::lookupSymbolIn(from, name))
        work.push_back(def);
    }
  }
  return used;
}

bool isKernel(Operation &op) {
  auto fn = dyn_cast<gpu::GPUFuncOp>(op);
  return fn && fn.isKernel();
}

struct SplitKernelModulesPass
    : mlir::cascade::impl::CascadeSplitKernelModulesBase<
          SplitKernelModulesPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SymbolTable table(module);
    // Old module and kernel name -> the kernel's own module.
    llvm::DenseMap<std::pair<StringAttr, StringAttr>, StringAttr> moved;
    for (auto gm : llvm::to_vector(module.getOps<gpu::GPUModuleOp>())) {
      SmallVector<Operation *> ops;
      SmallVector<gpu::GPUFuncOp> kernels;
      for (Operation &op : *gm.getBody()) {
        ops.push_back(&op);
        if (isKernel(op))
          kernels.push_back(cast<gpu::GPUFuncOp>(op));
      }
      // No kernel, or one and nothing else: nothing to split.
      if (kernels.empty() || (kernels.size() == 1 && ops.size() == 1))
        continue;
      OpBuilder b(gm);
      for (gpu::GPUFuncOp kernel : kernels) {
        llvm::DenseSet<StringAttr> used = usedSymbols(kernel, gm);
        auto own = cast<gpu::GPUModuleOp>(b.cloneWithoutRegions(*gm));
        own.getBodyRegion().emplaceBlock();
        own->setAttr(SymbolTable::getSymbolAttrName(),
                     b.getStringAttr(kernel.getName()));
        OpBuilder inner = OpBuilder::atBlockEnd(own.getBody());
        // The module's other ops in their order (PTX declarations as the
        // shared module has them), only those the kernel uses.
        for (Operation *op : ops) {
          if (op == kernel.getOperation()) {
            kernel->moveBefore(inner.getInsertionBlock(),
                               inner.getInsertionPoint());
            continue;
          }
          if (isKernel(*op))
            continue;
          auto sym = dyn_cast<SymbolOpInterface>(op);
          if (sym && !used.contains(sym.getNameAttr()))
            continue;
          inner.clone(*op);
        }
        // A name another top-level symbol has gets a unique suffix.
        table.remove(own);
        StringAttr name = table.insert(own);
        moved[{gm.getNameAttr(), kernel.getNameAttr()}] = name;
      }
      gm.erase();
    }
    if (moved.empty())
      return;
    module.walk([&](gpu::LaunchFuncOp launch) {
      SymbolRefAttr ref = launch.getKernelAttr();
      auto it = moved.find({ref.getRootReference(), ref.getLeafReference()});
      if (it != moved.end())
        launch.setKernelAttr(SymbolRefAttr::get(
            it->second, {FlatSymbolRefAttr::get(ref.getLeafReference())}));
    });
  }
};

struct GpuModuleToBinaryPass
    : mlir::cascade::impl::CascadeGpuModuleToBinaryBase<GpuModuleToBinaryPass> {
  using Base::Base;
  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto format =
        llvm::StringSwitch<std::optional<gpu::CompilationTarget>>(
            compilationTarget)
            .Cases({"offloading", "llvm"}, gpu::CompilationTarget::Offload)
            .Cases({"assembly", "isa"}, gpu::CompilationTarget::Assembly)
            .Cases({"binary", "bin"}, gpu::CompilationTarget::Binary)
            .Cases({"fatbinary", "fatbin"}, gpu::CompilationTarget::Fatbin)
            .Default(std::nullopt);
    if (!format) {
      module.emitError("invalid format ") << compilationTarget;
      return signalPassFailure();
    }
    // Built before the threads start (upstream builds it lazily).
    SymbolTable parentTable(module);
    gpu::TargetOptions options({}, {}, {}, {}, *format,
                               [&]() { return &parentTable; });

    struct Work {
      gpu::GPUModuleOp gm;
      SmallVector<std::optional<SmallVector<char, 0>>> objects;
      double seconds = 0;
    };
    SmallVector<Work> work;
    for (auto gm : module.getOps<gpu::GPUModuleOp>()) {
      if (!gm.getTargetsAttr()) {
        gm.emitError("the module has no target attributes");
        return signalPassFailure();
      }
      work.push_back({gm, {}});
    }
    // Each serialization translates its own module into an LLVMContext of
    // its own; only the (thread-safe, when multithreaded) MLIRContext is
    // shared.
    if (failed(failableParallelForEach(
            &getContext(), work, [&](Work &w) -> LogicalResult {
              auto start = std::chrono::steady_clock::now();
              for (Attribute t : w.gm.getTargetsAttr()) {
                auto target = cast<gpu::TargetAttrInterface>(t);
                w.objects.push_back(target.serializeToObject(w.gm, options));
                if (!w.objects.back())
                  return w.gm.emitError(
                      "An error happened while serializing the module.");
              }
              w.seconds = std::chrono::duration<double>(
                              std::chrono::steady_clock::now() - start)
                              .count();
              return success();
            })))
      return signalPassFailure();
    for (Work &w : work) {
      if (remarkTimes)
        w.gm.emitRemark("gpu.module @")
            << w.gm.getName() << ": serialized in "
            << llvm::formatv("{0:F1}", w.seconds * 1e3).str() << " ms";
      SmallVector<Attribute> objects;
      for (auto [t, obj] : llvm::zip(w.gm.getTargetsAttr(), w.objects)) {
        auto target = cast<gpu::TargetAttrInterface>(t);
        Attribute object = target.createObject(w.gm, *obj, options);
        if (!object) {
          w.gm.emitError("An error happened while creating the object.");
          return signalPassFailure();
        }
        objects.push_back(object);
      }
      OpBuilder b(w.gm);
      b.setInsertionPointAfter(w.gm);
      auto handler =
          dyn_cast_or_null<gpu::OffloadingLLVMTranslationAttrInterface>(
              w.gm.getOffloadingHandlerAttr());
      gpu::BinaryOp::create(b, w.gm.getLoc(), w.gm.getName(), handler,
                            b.getArrayAttr(objects));
      w.gm.erase();
    }
  }
};

} // namespace
