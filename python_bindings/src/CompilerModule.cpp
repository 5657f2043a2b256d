//===- CompilerModule.cpp - cascade_mlir._compiler ------------------------===//
//
// Python access to the compiler without MLIR's own Python package (which
// Debian does not ship): parse and verify cascade IR, run any textual pass
// pipeline over it, build attention and merge modules through the dialect's
// C++ builders (IRBuilders.h) and compile them into kernel bundles
// (docs/kernel-bundle.md), with every diagnostic returned in the error.
//
//===----------------------------------------------------------------------===//

#include "ConfigDict.h"
#include "IRBuilders.h"

#include "cascade/Conversion/Passes.h"
#include "cascade/InitAllCascade.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "llvm/Support/raw_ostream.h"

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

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

/// A context with every cascade dialect loaded, collecting diagnostics.
struct Session {
  mlir::MLIRContext context;
  std::string diagnostics;
  llvm::raw_string_ostream diagOs{diagnostics};
  std::unique_ptr<mlir::ScopedDiagnosticHandler> handler;

  Session() : context(registry(), mlir::MLIRContext::Threading::DISABLED) {
    context.loadAllAvailableDialects();
    handler = std::make_unique<mlir::ScopedDiagnosticHandler>(
        &context, [this](mlir::Diagnostic &d) {
          diagOs << d.getLocation() << ": "
                 << (d.getSeverity() == mlir::DiagnosticSeverity::Error
                         ? "error"
                         : "note")
                 << ": " << d << "\n";
          for (mlir::Diagnostic &note : d.getNotes())
            diagOs << note.getLocation() << ": note: " << note << "\n";
          return mlir::success();
        });
  }
  static const mlir::DialectRegistry &registry() {
    registerOnce();
    static mlir::DialectRegistry *r = [] {
      auto *reg = new mlir::DialectRegistry();
      mlir::cascade::registerAllCascadeDialects(*reg);
      return reg;
    }();
    return *r;
  }
};

std::string print(mlir::ModuleOp module) {
  std::string out;
  llvm::raw_string_ostream os(out);
  module->print(os);
  return out;
}

void verifyOrThrow(Session &s, mlir::ModuleOp module, const char *what) {
  if (mlir::failed(mlir::verify(module)))
    throw py::value_error(std::string(what) + " does not verify:\n" +
                          s.diagnostics);
}

/// Parses `source`, runs `pipeline` (an anchored `builtin.module(...)`
/// string, or empty for verification only) and prints the result.
std::string runPipeline(const std::string &source,
                        const std::string &pipeline) {
  Session s;
  mlir::OwningOpRef<mlir::ModuleOp> module =
      mlir::parseSourceString<mlir::ModuleOp>(source, &s.context, "<python>");
  if (!module)
    throw py::value_error("cascade IR did not parse or verify:\n" +
                          s.diagnostics);
  if (!pipeline.empty()) {
    // parsePassPipeline(text, pm) reads `text` relative to pm's anchor, so an
    // anchored `builtin.module(...)` string would nest a second module pass
    // manager that never runs: strip the anchor first.
    llvm::StringRef text = llvm::StringRef(pipeline).trim();
    if (text.starts_with("builtin.module(") && text.ends_with(")"))
      text = text.drop_front(strlen("builtin.module(")).drop_back().trim();
    mlir::PassManager pm(&s.context);
    std::string err;
    llvm::raw_string_ostream errOs(err);
    if (mlir::failed(mlir::parsePassPipeline(text, pm, errOs)))
      throw py::value_error("bad pass pipeline '" + pipeline + "': " + err);
    if (mlir::failed(pm.run(*module)))
      throw py::value_error("pipeline '" + pipeline + "' failed:\n" +
                            s.diagnostics);
  }
  return print(*module);
}

using cascade::python::attentionConfigFromDict;

template <typename Fn> auto translateErrors(Fn &&fn) -> decltype(fn()) {
  try {
    return fn();
  } catch (const std::invalid_argument &e) {
    throw py::value_error(e.what());
  }
}

std::string attentionIr(const py::dict &config, bool decode, bool causal,
                        bool accumulate, bool split, bool tensors,
                        const std::string &name) {
  return translateErrors([&] {
    Session s;
    auto module = cascade::python::newModule(s.context);
    cascade::python::AttentionCall call{decode, causal, accumulate, split,
                                        tensors};
    cascade::python::addAttentionFunc(*module, name,
                                      attentionConfigFromDict(config), call);
    verifyOrThrow(s, *module, "the attention module");
    return print(*module);
  });
}

std::string multiLevelIr(const py::dict &config, int64_t numLevels,
                         const std::vector<int64_t> &sharedLevels,
                         const std::vector<bool> &decodeLevels, bool causal,
                         const std::string &name,
                         const std::vector<int64_t> &raggedLevels) {
  return translateErrors([&] {
    Session s;
    auto module = cascade::python::newModule(s.context);
    cascade::python::addMultiLevelFunc(
        *module, name, attentionConfigFromDict(config), numLevels, sharedLevels,
        decodeLevels, causal, raggedLevels);
    verifyOrThrow(s, *module, "the cascade module");
    return print(*module);
  });
}

/// Lowers `module` with cascade-to-ptx and writes the bundle to `dir`.
void lowerToBundle(Session &s, mlir::ModuleOp module, const std::string &dir,
                   const std::string &chip, const std::string &features) {
  verifyOrThrow(s, module, "the kernel module");
  mlir::PassManager pm(&s.context);
  mlir::cascade::CascadeToPTXOptions options;
  options.chip = chip;
  options.features = features;
  options.bundleDir = dir;
  mlir::cascade::buildCascadeToPTXPipeline(pm, options);
  if (mlir::failed(pm.run(module)))
    throw py::value_error("compiling the kernels failed:\n" + s.diagnostics);
}

/// groups: dicts {decode, causal, accumulate[, custom_mask, sinks]}; each
/// gets an unsplit and a split kernel (and the split kernel's merge), in the
/// configuration's KV form.
void compileAttentionBundle(const py::dict &config, const py::list &groups,
                            const std::string &dir, const std::string &chip,
                            const std::string &features) {
  translateErrors([&] {
    Session s;
    auto module = cascade::python::newModule(s.context);
    cascade::python::AttentionConfig c = attentionConfigFromDict(config);
    int i = 0;
    for (py::handle h : groups) {
      py::dict g = py::reinterpret_borrow<py::dict>(h);
      for (bool split : {false, true}) {
        cascade::python::AttentionCall call;
        call.decode = g["decode"].cast<bool>();
        call.causal = g["causal"].cast<bool>();
        call.accumulate = g["accumulate"].cast<bool>();
        call.customMask =
            g.contains("custom_mask") && g["custom_mask"].cast<bool>();
        call.sinks = g.contains("sinks") && g["sinks"].cast<bool>();
        call.split = split;
        cascade::python::addAttentionFunc(
            *module, "group" + std::to_string(i) + (split ? "_split" : ""), c,
            call);
      }
      ++i;
    }
    lowerToBundle(s, *module, dir, chip, features);
    return 0;
  });
}

void compileMergeBundle(const std::string &vType, int64_t headDim,
                        const std::string &dir, const std::string &chip,
                        const std::string &features) {
  translateErrors([&] {
    cascade::contract::DType t;
    if (!cascade::contract::parseDType(vType, t))
      throw py::value_error("v_dtype must be f16, bf16 or f32, got '" + vType +
                            "'");
    Session s;
    auto module = cascade::python::newModule(s.context);
    cascade::python::addMergeFuncs(*module, t, headDim);
    lowerToBundle(s, *module, dir, chip, features);
    return 0;
  });
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
  m.def("attention_ir", &attentionIr, py::arg("config"), py::arg("decode"),
        py::arg("causal") = false, py::arg("accumulate") = false,
        py::arg("split") = false, py::arg("tensors") = true,
        py::arg("name") = "attention",
        "A module with one cascade.paged_attention, built with the C++ "
        "builders (tensor form by default; buffer form with tensors=False).");
  m.def("multi_level_ir", &multiLevelIr, py::arg("config"),
        py::arg("num_levels"), py::arg("shared_levels"),
        py::arg("decode_levels"), py::arg("causal") = false,
        py::arg("name") = "cascade_attention",
        py::arg("ragged_levels") = std::vector<int64_t>{},
        "A module with one tensor-form cascade.multi_level_attention (a "
        "paged_attention for one level); levels in ragged_levels have no "
        "kv_indices.");
  m.def("compile_attention_bundle", &compileAttentionBundle, py::arg("config"),
        py::arg("groups"), py::arg("dir"), py::arg("chip") = "sm_90",
        py::arg("features") = "+ptx80",
        "Compiles the unsplit and split kernels of every group into a kernel "
        "bundle in DIR.");
  m.def("compile_merge_bundle", &compileMergeBundle, py::arg("v_dtype"),
        py::arg("head_dim"), py::arg("dir"), py::arg("chip") = "sm_90",
        py::arg("features") = "+ptx80",
        "Compiles merge_state, merge_state_in_place (plain and masked) and "
        "merge_states into a kernel bundle in DIR.");
}
