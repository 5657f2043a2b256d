//===- EmitBundle.cpp - cascade-emit-bundle -------------------------------===//
//
// Writes kernels.ptx (from the #gpu.object of gpu.binary @cascade_kernels)
// and manifest.json (from the module's cascade.bundle attribute) into a
// directory: the kernel bundle of docs/kernel-bundle.md.
//
//===----------------------------------------------------------------------===//

#include "cascade/Contract/BundleContract.h"
#include "cascade/Conversion/Passes.h"
#include "common/KernelSupport.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <nlohmann/json.hpp>

namespace mlir {
namespace cascade {
#define GEN_PASS_DEF_CASCADEEMITBUNDLE
#include "cascade/Conversion/Passes.h.inc"
} // namespace cascade
} // namespace mlir

using namespace mlir;
using namespace mlir::cascade;
namespace mf = ::cascade::contract::manifest;

/// The manifest is written with nlohmann-json, the JSON library the runtime
/// reads it with: its numbers do not depend on the process locale (printf
/// would write sm_scale as 0,088... under a German LC_NUMERIC). Object keys
/// come out sorted.
static nlohmann::json toJson(Attribute a) {
  if (auto s = dyn_cast<StringAttr>(a))
    return s.getValue().str();
  if (auto b = dyn_cast<BoolAttr>(a))
    return b.getValue();
  if (auto i = dyn_cast<IntegerAttr>(a))
    return i.getInt();
  if (auto f = dyn_cast<FloatAttr>(a))
    return f.getValueAsDouble();
  if (auto arr = dyn_cast<ArrayAttr>(a)) {
    nlohmann::json out = nlohmann::json::array();
    for (Attribute e : arr)
      out.push_back(toJson(e));
    return out;
  }
  if (auto d = dyn_cast<DictionaryAttr>(a)) {
    nlohmann::json o = nlohmann::json::object();
    for (NamedAttribute na : d)
      o[na.getName().str()] = toJson(na.getValue());
    return o;
  }
  std::string s;
  llvm::raw_string_ostream os(s);
  a.print(os);
  return s;
}

namespace {
struct CascadeEmitBundlePass
    : mlir::cascade::impl::CascadeEmitBundleBase<CascadeEmitBundlePass> {
  using Base::Base;
  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (dir.empty()) {
      module.emitError("cascade-emit-bundle needs dir=");
      return signalPassFailure();
    }
    auto bin = module.lookupSymbol<gpu::BinaryOp>(kKernelModuleName);
    if (!bin) {
      module.emitError("no gpu.binary @cascade_kernels: run "
                       "gpu-module-to-binary{format=isa} first");
      return signalPassFailure();
    }
    std::string ptx, chip = "sm_90", features = "+ptx80";
    for (Attribute oa : bin.getObjects()) {
      auto obj = cast<gpu::ObjectAttr>(oa);
      if (obj.getFormat() != gpu::CompilationTarget::Assembly)
        continue;
      ptx = obj.getObject().getValue().str();
      if (auto t = dyn_cast<NVVM::NVVMTargetAttr>(obj.getTarget())) {
        chip = t.getChip().str();
        features = t.getFeatures().str();
      }
      break;
    }
    if (ptx.empty()) {
      module.emitError(
          "gpu.binary @cascade_kernels holds no PTX (use format=isa)");
      return signalPassFailure();
    }
    if (std::error_code ec = llvm::sys::fs::create_directories(dir)) {
      module.emitError("cannot create ") << dir << ": " << ec.message();
      return signalPassFailure();
    }
    llvm::SmallString<256> ptxPath(dir), manPath(dir);
    llvm::sys::path::append(ptxPath, mf::kPtxFileName);
    llvm::sys::path::append(manPath, mf::kFileName);
    {
      std::error_code ec;
      llvm::raw_fd_ostream os(ptxPath, ec);
      if (ec) {
        module.emitError("cannot write ") << ptxPath << ": " << ec.message();
        return signalPassFailure();
      }
      os << ptx;
    }
    nlohmann::json kernels = nlohmann::json::array();
    if (auto entries = module->getAttrOfType<ArrayAttr>(kBundleAttrName))
      for (Attribute e : entries)
        kernels.push_back(toJson(e));
    nlohmann::json root = {
        {mf::kFormat, mf::kFormatName},
        {mf::kVersionKey, mf::kVersion},
        {mf::kTarget, {{mf::kChip, chip}, {mf::kFeatures, features}}},
        {mf::kKernels, std::move(kernels)}};
    std::error_code ec;
    llvm::raw_fd_ostream os(manPath, ec);
    if (ec) {
      module.emitError("cannot write ") << manPath << ": " << ec.message();
      return signalPassFailure();
    }
    os << root.dump(2) << "\n";
  }
};
} // namespace
