//===- EmitBundle.cpp - cascade-emit-bundle -------------------------------===//
//
// Writes the PTX of every gpu.binary (kernels.ptx for @cascade_kernels, the
// module of every kernel; <kernel>.ptx for the per-kernel modules of
// cascade-split-kernel-modules) and manifest.json (from the module's
// cascade.bundle attribute, each kernel's "ptx" the file with its .entry)
// into a directory: the kernel bundle of docs/kernel-bundle.md.
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
/// One gpu.binary's PTX and the file it goes to.
struct PtxFile {
  std::string name, ptx, chip = "sm_90", features = "+ptx80";
};

/// The PTX of `bin`, the `index`th binary (its first assembly object), or
/// "".
PtxFile ptxOf(gpu::BinaryOp bin, size_t index) {
  PtxFile f;
  // @cascade_kernels (every kernel in one module) keeps the bundle's
  // historic name; a module of cascade-split-kernel-modules is named after
  // its kernel, within a file name's 255 bytes (with the cubin's
  // .<chip>.cubin beside it).
  if (bin.getName() == kKernelModuleName)
    f.name = mf::kPtxFileName;
  else if (bin.getName().size() <= 200)
    f.name = (bin.getName() + ".ptx").str();
  else
    f.name = "kernel" + std::to_string(index) + ".ptx";
  for (Attribute oa : bin.getObjects()) {
    auto obj = cast<gpu::ObjectAttr>(oa);
    if (obj.getFormat() != gpu::CompilationTarget::Assembly)
      continue;
    f.ptx = obj.getObject().getValue().str();
    if (auto t = dyn_cast<NVVM::NVVMTargetAttr>(obj.getTarget())) {
      f.chip = t.getChip().str();
      f.features = t.getFeatures().str();
    }
    break;
  }
  return f;
}

/// Whether `ptx` defines the entry `name`.
bool definesEntry(llvm::StringRef ptx, llvm::StringRef name) {
  std::string entry = (".entry " + name + "(").str();
  return ptx.contains(entry);
}

struct CascadeEmitBundlePass
    : mlir::cascade::impl::CascadeEmitBundleBase<CascadeEmitBundlePass> {
  using Base::Base;
  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (dir.empty()) {
      module.emitError("cascade-emit-bundle needs dir=");
      return signalPassFailure();
    }
    std::vector<PtxFile> files;
    for (auto bin : module.getOps<gpu::BinaryOp>()) {
      files.push_back(ptxOf(bin, files.size()));
      if (files.back().ptx.empty()) {
        bin.emitError("gpu.binary @")
            << bin.getName() << " holds no PTX (use format=isa)";
        return signalPassFailure();
      }
    }
    if (files.empty()) {
      module.emitError("no gpu.binary @cascade_kernels: run "
                       "gpu-module-to-binary{format=isa} first");
      return signalPassFailure();
    }
    if (std::error_code ec = llvm::sys::fs::create_directories(dir)) {
      module.emitError("cannot create ") << dir << ": " << ec.message();
      return signalPassFailure();
    }
    for (const PtxFile &f : files) {
      llvm::SmallString<256> ptxPath(dir);
      llvm::sys::path::append(ptxPath, f.name);
      std::error_code ec;
      llvm::raw_fd_ostream os(ptxPath, ec);
      if (ec) {
        module.emitError("cannot write ") << ptxPath << ": " << ec.message();
        return signalPassFailure();
      }
      os << f.ptx;
    }
    // Each kernel names the file that holds its entry.
    nlohmann::json kernels = nlohmann::json::array();
    if (auto entries = module->getAttrOfType<ArrayAttr>(kBundleAttrName))
      for (Attribute e : entries) {
        nlohmann::json k = toJson(e);
        auto d = cast<DictionaryAttr>(e);
        if (auto name = d.getAs<StringAttr>("name"))
          for (const PtxFile &f : files)
            if (files.size() == 1 || definesEntry(f.ptx, name.getValue())) {
              k[mf::kPtx] = f.name;
              break;
            }
        kernels.push_back(std::move(k));
      }
    nlohmann::json root = {{mf::kFormat, mf::kFormatName},
                           {mf::kVersionKey, mf::kVersion},
                           {mf::kTarget,
                            {{mf::kChip, files.front().chip},
                             {mf::kFeatures, files.front().features}}},
                           {mf::kKernels, std::move(kernels)}};
    llvm::SmallString<256> manPath(dir);
    llvm::sys::path::append(manPath, mf::kFileName);
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
