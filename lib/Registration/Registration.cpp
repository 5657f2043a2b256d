//===- Registration.cpp - Register everything Cascade-MLIR has ------------===//

#include "cascade/Dialect/Cascade/IR/CascadeDialect.h"
#include "cascade/Dialect/Cascade/Transforms/BufferizableOpInterfaceImpl.h"
#include "cascade/Dialect/Cascade/Transforms/Passes.h"
#include "cascade/InitAllCascade.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Bufferization/Transforms/FuncBufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/Func/Extensions/AllExtensions.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Tensor/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/DialectRegistry.h"

#ifdef CASCADE_HAS_CONVERSION
#include "cascade/Conversion/Passes.h"
#endif

using namespace mlir;

void cascade::registerCascadeDialect(DialectRegistry &registry) {
  registry.insert<CascadeDialect>();
  registerBufferizableOpInterfaceExternalModels(registry);
}

void cascade::registerAllCascadeDialects(DialectRegistry &registry) {
  registerCascadeDialect(registry);
  registry.insert<arith::ArithDialect, bufferization::BufferizationDialect,
                  func::FuncDialect, gpu::GPUDialect, LLVM::LLVMDialect,
                  math::MathDialect, memref::MemRefDialect, NVVM::NVVMDialect,
                  nvgpu::NVGPUDialect, scf::SCFDialect, tensor::TensorDialect,
                  vector::VectorDialect>();
  func::registerAllExtensions(registry);
  arith::registerBufferizableOpInterfaceExternalModels(registry);
  tensor::registerBufferizableOpInterfaceExternalModels(registry);
  bufferization::func_ext::registerBufferizableOpInterfaceExternalModels(
      registry);
#ifdef CASCADE_HAS_CONVERSION
  registerConversionDialects(registry);
#endif
}

void cascade::registerAllCascadePasses() {
  registerCascadePasses();
  bufferization::registerBufferizationPasses();
#ifdef CASCADE_HAS_CONVERSION
  registerConversionPasses();
#endif
}
