//===- CompilerModule.cpp - cascade_mlir._compiler ------------------------===//
//
// Python access to the compiler without MLIR's own Python package (which
// Debian does not ship): parse and verify cascade IR, and run any textual
// pass pipeline over it, with every diagnostic returned in the error.
//
//===----------------------------------------------------------------------===//

#include "cascade/InitAllCascade.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "llvm/Support/raw_ostream.h"

#include <pybind11/pybind11.h>

#include <cstring>
#include <mutex>
#include <string>

namespace py = pybind11;

namespace {

/// One context per call keeps calls independent; registration is global and
/// done once.
void registerOnce() {
  static std::once_flag flag;
  std::call_once(flag, [] { mlir::cascade::registerAllCascadePasses(); });
}

/// Parses `source`, runs `pipeline` (an anchored `builtin.module(...)`
/// string, or empty for verification only) and prints the result.
std::string runPipeline(const std::string &source,
                        const std::string &pipeline) {
  registerOnce();
  mlir::DialectRegistry registry;
  mlir::cascade::registerAllCascadeDialects(registry);
  mlir::MLIRContext context(registry, mlir::MLIRContext::Threading::DISABLED);
  context.loadAllAvailableDialects();

  std::string diagnostics;
  llvm::raw_string_ostream diagOs(diagnostics);
  mlir::ScopedDiagnosticHandler handler(&context, [&](mlir::Diagnostic &d) {
    diagOs << d.getLocation() << ": "
           << (d.getSeverity() == mlir::DiagnosticSeverity::Error ? "error"
                                                                  : "note")
           << ": " << d << "\n";
    for (mlir::Diagnostic &note : d.getNotes())
      diagOs << note.getLocation() << ": note: " << note << "\n";
    return mlir::success();
  });

  mlir::OwningOpRef<mlir::ModuleOp> module =
      mlir::parseSourceString<mlir::ModuleOp>(source, &context, "<python>");
  if (!module)
    throw py::value_error("cascade IR did not parse or verify:\n" +
                          diagnostics);
  if (!pipeline.empty()) {
    // parsePassPipeline(text, pm) reads `text` relative to pm's anchor, so an
    // anchored `builtin.module(...)` string would nest a second module pass
    // manager that never runs: strip the anchor first.
    llvm::StringRef text = llvm::StringRef(pipeline).trim();
    if (text.starts_with("builtin.module(") && text.ends_with(")"))
      text = text.drop_front(strlen("builtin.module(")).drop_back().trim();
    mlir::PassManager pm(&context);
    std::string err;
    llvm::raw_string_ostream errOs(err);
    if (mlir::failed(mlir::parsePassPipeline(text, pm, errOs)))
      throw py::value_error("bad pass pipeline '" + pipeline + "': " + err);
    if (mlir::failed(pm.run(*module)))
      throw py::value_error("pipeline '" + pipeline + "' failed:\n" +
                            diagnostics);
  }
  std::string out;
  llvm::raw_string_ostream os(out);
  module->print(os);
  return out;
}

} // namespace

PYBIND11_MODULE(_compiler, m) {
  m.doc() = "Cascade-MLIR compiler: parse, verify and lower cascade IR";
  m.def(
      "verify",
      [](const std::string &source) { return runPipeline(source, ""); },
      py::arg("source"),
      "Parses and verifies cascade IR; returns it printed in custom form. "
      "Raises ValueError with every diagnostic.");
  m.def("run_pipeline", &runPipeline, py::arg("source"), py::arg("pipeline"),
        "Runs an anchored textual pass pipeline, e.g. "
        "'builtin.module(cascade-decompose-levels)', and returns the IR.");
}
