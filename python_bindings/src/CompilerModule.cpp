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

#include "cascade/Builders/CompileBundle.h"
#include "cascade/Builders/IRBuilders.h"
#include "cascade/Builders/Session.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "llvm/Support/raw_ostream.h"

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstring>
#include <string>

namespace py = pybind11;
namespace builders = cascade::builders;

namespace {

using builders::Session;

std::string print(mlir::ModuleOp module) { return builders::print(module); }

void verifyOrThrow(Session &s, mlir::ModuleOp module, const char *what) {
  if (std::string err = s.verify(module, what); !err.empty())
    throw py::value_error(err);
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
    auto module = builders::newModule(s.context);
    cascade::contract::AttentionGroup group;
    group.decode = decode;
    group.causal = causal;
    group.accumulate = accumulate;
    builders::AttentionCall call(group, split, tensors);
    builders::addAttentionFunc(*module, name, attentionConfigFromDict(config),
                               call);
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
    auto module = builders::newModule(s.context);
    builders::addMultiLevelFunc(*module, name, attentionConfigFromDict(config),
                                numLevels, sharedLevels, decodeLevels, causal,
                                raggedLevels);
    verifyOrThrow(s, *module, "the cascade module");
    return print(*module);
  });
}

/// groups: dicts {decode, causal, accumulate[, custom_mask, state_inputs
/// (a list of names)]}; each
/// gets an unsplit and a split kernel (and the split kernel's merge), in the
/// configuration's KV form. The GIL is released while compiling: threads
/// compile in parallel.
void compileAttentionBundle(const py::dict &config, const py::list &groups,
                            const std::string &dir, const std::string &chip,
                            const std::string &features) {
  cascade::contract::AttentionConfig c =
      translateErrors([&] { return attentionConfigFromDict(config); });
  std::vector<cascade::contract::AttentionGroup> gs;
  for (py::handle h : groups) {
    py::dict g = py::reinterpret_borrow<py::dict>(h);
    auto flag = [&](const char *name) {
      return g.contains(name) && g[name].cast<bool>();
    };
    cascade::contract::AttentionGroup group;
    group.decode = g["decode"].cast<bool>();
    group.causal = g["causal"].cast<bool>();
    group.accumulate = g["accumulate"].cast<bool>();
    group.customMask = flag("custom_mask");
    if (g.contains("state_inputs"))
      group.stateInputs = g["state_inputs"].cast<std::vector<std::string>>();
    gs.push_back(group);
  }
  std::string err;
  {
    py::gil_scoped_release release;
    err = builders::compileAttentionBundle(c, gs, dir, chip, features);
  }
  if (!err.empty())
    throw py::value_error(err);
}

void compileMergeBundle(const std::string &vType, int64_t headDim,
                        const std::string &dir, const std::string &chip,
                        const std::string &features) {
  cascade::contract::DType t;
  if (!cascade::contract::parseDType(vType, t))
    throw py::value_error("v_dtype must be f16, bf16 or f32, got '" + vType +
                          "'");
  std::string err;
  {
    py::gil_scoped_release release;
    err = builders::compileMergeBundle(t, headDim, dir, chip, features);
  }
  if (!err.empty())
    throw py::value_error(err);
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
