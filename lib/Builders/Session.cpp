//===- Session.cpp - A context for building and lowering cascade IR -------===//

#include "cascade/Builders/Session.h"

#include "cascade/InitAllCascade.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/Verifier.h"

#include <mutex>

using namespace cascade::builders;

namespace {
/// Registration is global: done once, whichever thread asks first.
const mlir::DialectRegistry &registry() {
  static std::once_flag flag;
  static mlir::DialectRegistry *r = nullptr;
  std::call_once(flag, [] {
    mlir::cascade::registerAllCascadePasses();
    r = new mlir::DialectRegistry();
    mlir::cascade::registerAllCascadeDialects(*r);
  });
  return *r;
}
} // namespace

Session::Session()
    : context(registry(), mlir::MLIRContext::Threading::DISABLED) {
  context.loadAllAvailableDialects();
  handler = std::make_unique<mlir::ScopedDiagnosticHandler>(
      &context, [this](mlir::Diagnostic &d) {
        diagOs << d.getLocation() << ": "
               << (d.getSeverity() == mlir::DiagnosticSeverity::Error ? "error"
                                                                      : "note")
               << ": " << d << "\n";
        for (mlir::Diagnostic &note : d.getNotes())
          diagOs << note.getLocation() << ": note: " << note << "\n";
        return mlir::success();
      });
}

std::string Session::verify(mlir::ModuleOp module, const std::string &what) {
  if (mlir::succeeded(mlir::verify(module)))
    return "";
  return what + " does not verify:\n" + diagnostics;
}

std::string cascade::builders::print(mlir::Operation *op) {
  std::string out;
  llvm::raw_string_ostream os(out);
  op->print(os);
  return out;
}
