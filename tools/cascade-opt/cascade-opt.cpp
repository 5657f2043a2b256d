//===- cascade-opt.cpp - The Cascade-MLIR optimizer driver ----------------===//
//
// `mlir-opt` plus the cascade dialect, its passes and pipelines: every
// upstream dialect and pass is registered too, so cascade IR can be lowered
// all the way to PTX from one tool.
//
//===----------------------------------------------------------------------===//

#include "cascade/InitAllCascade.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

namespace mlir::cascade {
// Test passes (test/lib): not part of the installed libraries.
void registerTestGPUCodegenPass();
void registerTestHopperCodegenPass();
} // namespace mlir::cascade

int main(int argc, char **argv) {
  mlir::registerAllPasses();
  mlir::cascade::registerAllCascadePasses();
  mlir::cascade::registerTestGPUCodegenPass();
  mlir::cascade::registerTestHopperCodegenPass();

  mlir::DialectRegistry registry;
  mlir::registerAllDialects(registry);
  mlir::registerAllExtensions(registry);
  mlir::cascade::registerAllCascadeDialects(registry);

  return mlir::asMainReturnCode(mlir::MlirOptMain(
      argc, argv, "Cascade-MLIR optimizer driver\n", registry));
}
