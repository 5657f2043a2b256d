//===- mlir_passes_fuzzer.cpp - Fuzz parse, verify and the cascade passes -===//
//
// libFuzzer target: the input is MLIR text. It is parsed and verified with
// every dialect cascade-opt knows, then cascade-decompose-levels and
// convert-cascade-to-gpu run on it in-process, as `cascade-opt
// -cascade-decompose-levels -convert-cascade-to-gpu` would. Diagnostics are
// swallowed: rejecting bad input is the expected outcome, only crashes,
// sanitizer reports, hangs and leaks are findings.
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

#include <cstddef>
#include <cstdint>
#include <string>

using namespace mlir;

namespace {

/// One registry and pass pipeline text for the whole run.
struct Setup {
  DialectRegistry registry;
  Setup() {
    cascade::registerAllCascadeDialects(registry);
    cascade::registerAllCascadePasses();
  }
};

} // namespace

/// The MLIR and LLVM libraries are prebuilt without ASan, but their headers
/// poison and unpoison BumpPtrAllocator slabs when the including code is
/// built with ASan: code inlined here would poison memory that the library's
/// own (uninstrumented) allocation never unpoisons, a false
/// use-after-poison. Manual poisoning is turned off; every other check
/// stays.
extern "C" const char *__asan_default_options() {
  return "allow_user_poisoning=0";
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static Setup setup;
  // A fresh context per input: nothing (uniqued attributes, interned
  // strings, diagnostics state) leaks from one input into the next.
  MLIRContext context(setup.registry, MLIRContext::Threading::DISABLED);
  context.allowUnregisteredDialects(false);
  ScopedDiagnosticHandler quiet(&context,
                                [](Diagnostic &) { return success(); });

  std::string text(reinterpret_cast<const char *>(data), size);
  ParserConfig config(&context, /*verifyAfterParse=*/true);
  OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(text, config);
  if (!module)
    return 0;

  PassManager pm(&context);
  std::string errors;
  llvm::raw_string_ostream errorStream(errors);
  if (failed(parsePassPipeline(
          "builtin.module(cascade-decompose-levels,convert-cascade-to-gpu)", pm,
          errorStream))) {
    llvm::errs() << "fuzzer setup: cannot build the pipeline: " << errors
                 << "\n";
    __builtin_trap();
  }
  (void)pm.run(*module);
  return 0;
}
