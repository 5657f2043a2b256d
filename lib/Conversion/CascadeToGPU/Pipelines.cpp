//===- Pipelines.cpp - cascade-to-ptx pipeline + registration -------------===//

#include "cascade/Conversion/Passes.h"
#include "cascade/Conversion/TargetInfo.h"
#include "cascade/Dialect/Cascade/Transforms/Passes.h"

#include "mlir/Conversion/ArithToLLVM/ArithToLLVM.h"
#include "mlir/Conversion/ControlFlowToLLVM/ControlFlowToLLVM.h"
#include "mlir/Conversion/FuncToLLVM/ConvertFuncToLLVM.h"
#include "mlir/Conversion/GPUCommon/GPUToLLVM.h"
#include "mlir/Conversion/GPUToNVVM/GPUToNVVM.h"
#include "mlir/Conversion/IndexToLLVM/IndexToLLVM.h"
#include "mlir/Conversion/MathToLLVM/MathToLLVM.h"
#include "mlir/Conversion/MemRefToLLVM/MemRefToLLVM.h"
#include "mlir/Conversion/NVVMToLLVM/NVVMToLLVM.h"
#include "mlir/Conversion/Passes.h"
#include "mlir/Conversion/UBToLLVM/UBToLLVM.h"
#include "mlir/Conversion/VectorToLLVM/ConvertVectorToLLVM.h"
#include "mlir/Dialect/Bufferization/Transforms/OneShotAnalysis.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/Index/IR/IndexDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/LLVMIR/Transforms/Passes.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/UB/IR/UBOps.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassOptions.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Target/LLVM/NVVM/Target.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/GPU/GPUToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/NVVM/NVVMToLLVMIRTranslation.h"
#include "mlir/Transforms/Passes.h"

#include "llvm/Support/Regex.h"

using namespace mlir;

namespace {
struct PipelineOptions : public PassPipelineOptions<PipelineOptions> {
  Option<std::string> chip{*this, "chip", llvm::cl::desc("GPU chip"),
                           llvm::cl::init("sm_90")};
  Option<std::string> features{*this, "features",
                               llvm::cl::desc("PTX features"),
                               llvm::cl::init("+ptx80")};
  Option<unsigned> optLevel{*this, "opt-level",
                            llvm::cl::desc("LLVM optimisation level"),
                            llvm::cl::init(3)};
  Option<std::string> bundleDir{
      *this, "bundle-dir",
      llvm::cl::desc("Write kernels.ptx + manifest.json to this directory"),
      llvm::cl::init("")};
  Option<bool> ptxPerKernel{
      *this, "ptx-per-kernel",
      llvm::cl::desc("One gpu.module and one PTX file per kernel, compiled "
                     "in parallel where the context is multithreaded"),
      llvm::cl::init(false)};
  Option<std::string> select{
      *this, "select",
      llvm::cl::desc("Options of cascade-select-kernel-config, as "
                     "{rows-threads=256 rows-kv-tile=16} (tuning)"),
      llvm::cl::init("")};
};
} // namespace

LogicalResult cascade::buildCascadeToPTXPipeline(
    OpPassManager &pm, const CascadeToPTXOptions &o,
    function_ref<LogicalResult(const Twine &)> errorHandler) {
  // Tensor-level input: decompose cascades, then bufferize (no-ops on
  // memref input).
  pm.addPass(createCascadeDecomposeLevels());
  bufferization::OneShotBufferizePassOptions bo;
  bo.bufferizeFunctionBoundaries = true;
  // Contiguous buffers at function boundaries: the kernels read flat,
  // row-major memory (convert-cascade-to-gpu rejects anything else).
  bo.functionBoundaryTypeConversion =
      bufferization::LayoutMapOption::IdentityLayoutMap;
  pm.addPass(bufferization::createOneShotBufferizePass(bo));
  // Kernels are chosen for the chip they are built for.
  CascadeSelectKernelConfigOptions so;
  so.chip = o.chip;
  std::unique_ptr<Pass> select = createCascadeSelectKernelConfig(so);
  if (!o.selectOptions.empty()) {
    if (failed(select->initializeOptions(o.selectOptions, errorHandler)))
      return failure();
    // The pipeline's chip, whatever the string says.
    if (failed(select->initializeOptions("chip=" + o.chip, errorHandler)))
      return failure();
  }
  pm.addPass(std::move(select));
  // Plans made at run time: calls of the runtime shim (no-op without them).
  CascadeLowerPlansOptions lo;
  lo.chip = o.chip;
  pm.addPass(createCascadeLowerPlans(lo));
  ConvertCascadeToGPUOptions go;
  go.chip = o.chip;
  pm.addPass(createConvertCascadeToGPU(go));
  if (o.ptxPerKernel)
    pm.addPass(createCascadeSplitKernelModules());
  GpuNVVMAttachTargetOptions t;
  t.triple = "nvptx64-nvidia-cuda";
  t.chip = o.chip;
  t.features = o.features;
  t.optLevel = o.optLevel;
  pm.addPass(createGpuNVVMAttachTarget(t));
  OpPassManager &gpm = pm.nest<gpu::GPUModuleOp>();
  gpm.addPass(createSCFToControlFlowPass());
  gpm.addPass(createConvertNVGPUToNVVMPass());
  gpm.addPass(createConvertGpuOpsToNVVMOps());
  // NVVM ops without an LLVM intrinsic (mbarrier waits, wgmma, ...) become
  // inline PTX here; without it their translation fails.
  gpm.addPass(createConvertNVVMToLLVMPass());
  gpm.addPass(createCanonicalizerPass());
  gpm.addPass(createCSEPass());
  gpm.addPass(createReconcileUnrealizedCastsPass());
  // Upstream's gpu-module-to-binary{format=isa}, the modules in parallel.
  CascadeGpuModuleToBinaryOptions bin;
  bin.compilationTarget = "isa";
  bin.remarkTimes = o.remarkTimes;
  pm.addPass(createCascadeGpuModuleToBinary(bin));
  if (!o.bundleDir.empty()) {
    CascadeEmitBundleOptions eo;
    eo.dir = o.bundleDir;
    pm.addPass(createCascadeEmitBundle(eo));
  }
  return success();
}

void cascade::registerConversionPasses() {
  registerCascadeConversionPasses();
  // Registered by hand (not PassPipelineRegistration) so that a bad target
  // is a diagnostic: LLVM would otherwise warn, ignore the processor and
  // still emit PTX for a default target.
  registerPassPipeline(
      "cascade-to-ptx",
      "Lower cascade ops (tensor or memref form) to GPU kernels and PTX "
      "(gpu.binary with #gpu.object assembly); bundle-dir= also writes "
      "kernels.ptx (ptx-per-kernel: one PTX file per kernel) + manifest.json",
      [](OpPassManager &pm, StringRef optionsStr,
         function_ref<LogicalResult(const Twine &)> errorHandler) {
        PipelineOptions po;
        if (failed(po.parseFromString(optionsStr)))
          return failure();
        if (!llvm::Regex("^sm_[0-9]+a?$").match(po.chip))
          return errorHandler("cascade-to-ptx: chip must look like sm_80 or "
                              "sm_90a, got '" +
                              po.chip + "'");
        if (!lookupTarget(po.chip))
          return errorHandler("cascade-to-ptx: no kernel selection for chip '" +
                              po.chip + "' (known: " + getKnownChipsString() +
                              ")");
        if (!llvm::Regex("^\\+ptx[0-9]+$").match(po.features))
          return errorHandler("cascade-to-ptx: features must look like "
                              "+ptx80, got '" +
                              po.features + "'");
        if (po.optLevel > 3)
          return errorHandler("cascade-to-ptx: opt-level must be 0..3, got " +
                              Twine(po.optLevel));
        CascadeToPTXOptions o;
        o.chip = po.chip;
        o.features = po.features;
        o.optLevel = po.optLevel;
        o.bundleDir = po.bundleDir;
        o.ptxPerKernel = po.ptxPerKernel;
        o.selectOptions = po.select;
        return buildCascadeToPTXPipeline(pm, o, errorHandler);
      },
      [](function_ref<void(const detail::PassOptions &)> optHandler) {
        optHandler(PipelineOptions());
      });
}

void cascade::registerConversionDialects(DialectRegistry &registry) {
  registry.insert<gpu::GPUDialect, NVVM::NVVMDialect, nvgpu::NVGPUDialect>();
  NVVM::registerNVVMTargetInterfaceExternalModels(registry);
  registerBuiltinDialectTranslation(registry);
  registerLLVMDialectTranslation(registry);
  registerNVVMDialectTranslation(registry);
  registerGPUDialectTranslation(registry);
  NVVM::registerConvertGpuToNVVMInterface(registry);
  // convert-gpu-to-nvvm lowers the kernels' arith/math/vector/memref/cf/ub
  // ops through these ConvertToLLVM interfaces: without them an embedding
  // tool gets libdevice calls and unconverted ops (mlir-opt registers them
  // all; a downstream opt tool may not).
  registry.insert<arith::ArithDialect, cf::ControlFlowDialect,
                  index::IndexDialect, math::MathDialect, ub::UBDialect>();
  arith::registerConvertArithToLLVMInterface(registry);
  cf::registerConvertControlFlowToLLVMInterface(registry);
  registerConvertFuncToLLVMInterface(registry);
  index::registerConvertIndexToLLVMInterface(registry);
  registerConvertMathToLLVMInterface(registry);
  registerConvertMemRefToLLVMInterface(registry);
  registerConvertNVVMToLLVMInterface(registry);
  ub::registerConvertUBToLLVMInterface(registry);
  vector::registerConvertVectorToLLVMInterface(registry);
  gpu::registerConvertGpuToLLVMInterface(registry);
}
