//===- TestKernel.h - Kernels of the codegen test passes --------*- C++ -*-===//
//
// The test passes (-test-cascade-gpu-codegen, -test-cascade-hopper-codegen)
// each add kernels exercising one building block to `gpu.module
// @test_blocks`; this is how they make one.
//
//===----------------------------------------------------------------------===//

#ifndef CASCADE_TEST_LIB_TESTKERNEL_H
#define CASCADE_TEST_LIB_TESTKERNEL_H

#include "cascade/Conversion/GPUCodegen/KernelBuilder.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/BuiltinOps.h"

namespace mlir {
namespace cascade {
namespace test {

/// The body of a test kernel: the builder is at the start of its entry block
/// and the arguments are its parameters.
using TestKernelBody =
    function_ref<void(KernelBuilder &, gpu::GPUModuleOp, ValueRange)>;

/// memref<?xT>, the flat buffer parameter of a test kernel.
inline MemRefType flatBuffer(Type t) {
  return MemRefType::get({ShapedType::kDynamic}, t);
}

/// Adds kernel `name` with parameters `types` and the known block size
/// `blockSize` to `gpu.module @test_blocks` (created, and the module marked a
/// container module, on first use), and builds its body.
inline void makeTestKernel(ModuleOp module, StringRef name,
                           ArrayRef<Type> types, ArrayRef<int32_t> blockSize,
                           TestKernelBody body) {
  OpBuilder b(module.getContext());
  module->setAttr(gpu::GPUDialect::getContainerModuleAttrName(),
                  b.getUnitAttr());
  auto gm = module.lookupSymbol<gpu::GPUModuleOp>("test_blocks");
  if (!gm) {
    b.setInsertionPointToEnd(module.getBody());
    gm = gpu::GPUModuleOp::create(b, module.getLoc(), "test_blocks");
  }
  b.setInsertionPointToEnd(gm.getBody());
  auto fn = gpu::GPUFuncOp::create(b, module.getLoc(), name,
                                   b.getFunctionType(types, {}));
  fn->setAttr(gpu::GPUDialect::getKernelFuncAttrName(), b.getUnitAttr());
  fn.setKnownBlockSizeAttr(b.getDenseI32ArrayAttr(blockSize));
  b.setInsertionPointToStart(&fn.getBody().front());
  KernelBuilder k(b, fn.getLoc());
  body(k, gm, fn.getArguments());
  gpu::ReturnOp::create(b, fn.getLoc());
}

/// makeTestKernel with flat buffers of the given element types.
inline void makeTestKernelOfBuffers(ModuleOp module, StringRef name,
                                    ArrayRef<Type> elementTypes,
                                    ArrayRef<int32_t> blockSize,
                                    TestKernelBody body) {
  SmallVector<Type> types;
  for (Type t : elementTypes)
    types.push_back(flatBuffer(t));
  makeTestKernel(module, name, types, blockSize, body);
}

} // namespace test
} // namespace cascade
} // namespace mlir

#endif // CASCADE_TEST_LIB_TESTKERNEL_H
