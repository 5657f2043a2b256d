//===- Session.h - A context for building and lowering cascade IR -*- C++ -*-=//
//
// One MLIRContext with every cascade dialect loaded (threading off: one
// compilation per context; run several contexts on several threads) and a
// diagnostic handler that collects every diagnostic as text, for embedders
// that report errors as strings or exceptions rather than on stderr.
//
//===----------------------------------------------------------------------===//

#ifndef CASCADE_BUILDERS_SESSION_H
#define CASCADE_BUILDERS_SESSION_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/raw_ostream.h"

#include <memory>
#include <string>

namespace cascade::builders {

struct Session {
  mlir::MLIRContext context;
  /// Every diagnostic so far, one per line (`<loc>: error|note: <text>`).
  std::string diagnostics;

  Session();
  Session(const Session &) = delete;
  Session &operator=(const Session &) = delete;

  /// "" if `module` verifies, else `what` + " does not verify:" and the
  /// diagnostics.
  std::string verify(mlir::ModuleOp module, const std::string &what);

private:
  llvm::raw_string_ostream diagOs{diagnostics};
  std::unique_ptr<mlir::ScopedDiagnosticHandler> handler;
};

/// `op` printed in the custom form.
std::string print(mlir::Operation *op);

} // namespace cascade::builders

#endif // CASCADE_BUILDERS_SESSION_H
