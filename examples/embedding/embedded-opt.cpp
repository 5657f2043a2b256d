//===- embedded-opt.cpp - A downstream opt tool embedding Cascade-MLIR ----===//
//
// Shows the one call a downstream compiler needs: register the cascade
// dialect (plus what its lowerings produce) and the cascade passes, next to
// whatever upstream pieces the downstream tool already uses.
//
//===----------------------------------------------------------------------===//

#include "cascade/InitAllCascade.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  mlir::cascade::registerAllCascadePasses();
  mlir::DialectRegistry registry;
  mlir::cascade::registerAllCascadeDialects(registry);
  return mlir::asMainReturnCode(mlir::MlirOptMain(
      argc, argv, "Downstream compiler embedding Cascade-MLIR\n", registry));
}
