//===- CompileBundle.cpp - Kernel bundles from configurations -------------===//

#include "cascade/Builders/CompileBundle.h"

#include "cascade/Builders/IRBuilders.h"
#include "cascade/Builders/Session.h"
#include "cascade/Conversion/Passes.h"

#include "mlir/Pass/PassInstrumentation.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>
#include <map>
#include <mutex>

using namespace cascade::builders;
namespace contract = ::cascade::contract;

std::string cascade::builders::defaultFeatures(const std::string &chip) {
  int cc = 90;
  if (chip.rfind("sm_", 0) == 0)
    cc = std::atoi(chip.c_str() + 3);
  return cc >= 100 ? "+ptx86" : "+ptx80";
}

namespace {
/// The wall time of the nested passes on every gpu.module (what one kernel
/// of a per-kernel bundle costs its thread before its serialization).
struct ModuleTimes : mlir::PassInstrumentation {
  using Clock = std::chrono::steady_clock;
  std::mutex mutex;
  std::map<std::pair<mlir::Pass *, mlir::Operation *>, Clock::time_point>
      started;
  std::map<std::string, double> seconds;

  static bool isKernelModule(mlir::Operation *op) {
    return op->getName().getStringRef() == "gpu.module";
  }
  void runBeforePass(mlir::Pass *pass, mlir::Operation *op) override {
    if (!isKernelModule(op))
      return;
    std::lock_guard<std::mutex> g(mutex);
    started[{pass, op}] = Clock::now();
  }
  void runAfterPass(mlir::Pass *pass, mlir::Operation *op) override {
    if (!isKernelModule(op))
      return;
    std::lock_guard<std::mutex> g(mutex);
    auto it = started.find({pass, op});
    auto name = op->getAttrOfType<mlir::StringAttr>("sym_name");
    seconds[name ? name.str() : "?"] +=
        std::chrono::duration<double>(Clock::now() - it->second).count();
    started.erase(it);
  }
};

/// Lowers `module` with cascade-to-ptx, writing the bundle to `dir`.
std::string lowerToBundle(Session &s, mlir::ModuleOp module,
                          const std::string &dir, const CompileOptions &o) {
  if (std::string err = s.verify(module, "the kernel module"); !err.empty())
    return err;
  if (o.threads)
    s.context.setThreadPool(*o.threads);
  mlir::PassManager pm(&s.context);
  ModuleTimes *times = nullptr;
  if (o.timing) {
    pm.enableTiming();
    auto owned = std::make_unique<ModuleTimes>();
    times = owned.get();
    pm.addInstrumentation(std::move(owned));
  }
  mlir::cascade::CascadeToPTXOptions options;
  options.chip = o.chip;
  options.features = o.features.empty() ? defaultFeatures(o.chip) : o.features;
  options.bundleDir = dir;
  options.ptxPerKernel = o.ptxPerKernel;
  options.optLevel = o.optLevel;
  options.remarkTimes = o.timing;
  options.selectOptions = o.selectOptions;
  std::string optionError;
  if (mlir::failed(mlir::cascade::buildCascadeToPTXPipeline(
          pm, options, [&](const llvm::Twine &msg) {
            optionError = msg.str();
            return mlir::failure();
          })))
    return "bad kernel selection options '" + o.selectOptions + "'" +
           (optionError.empty() ? "" : ": " + optionError);
  if (mlir::failed(pm.run(module)))
    return "compiling the kernels failed:\n" + s.diagnostics;
  if (times) {
    // Per module: its nested passes, then (the remarks) its serialization.
    for (const auto &[name, secs] : times->seconds)
      llvm::errs() << "gpu.module @" << name << ": passes "
                   << llvm::format("%.1f", secs * 1e3) << " ms\n";
    llvm::SmallVector<llvm::StringRef> lines;
    llvm::StringRef(s.diagnostics).split(lines, '\n');
    for (llvm::StringRef line : lines)
      if (size_t at = line.find("gpu.module @");
          at != llvm::StringRef::npos && line.contains("serialized in"))
        llvm::errs() << line.substr(at) << "\n";
  }
  return "";
}

/// The builders report bad configurations as std::invalid_argument.
template <typename Fn> std::string catching(Fn &&fn) {
  try {
    return fn();
  } catch (const std::invalid_argument &e) {
    return e.what();
  }
}

CompileOptions optionsFor(const std::string &chip,
                          const std::string &features) {
  CompileOptions o;
  o.chip = chip;
  o.features = features;
  return o;
}

std::string attentionBundle(const contract::AttentionConfig &config,
                            const std::vector<contract::AttentionGroup> &groups,
                            const std::string &dir, const CompileOptions &o) {
  return catching([&] {
    Session s;
    auto module = newModule(s.context);
    int i = 0;
    for (const contract::AttentionGroup &g : groups) {
      for (bool split : {false, true}) {
        addAttentionFunc(*module,
                         "group" + std::to_string(i) + (split ? "_split" : ""),
                         config, AttentionCall(g, split));
      }
      ++i;
    }
    return lowerToBundle(s, *module, dir, o);
  });
}

std::string mergeBundle(contract::DType vType, int64_t headDim,
                        const std::string &dir, const CompileOptions &o) {
  return catching([&] {
    Session s;
    auto module = newModule(s.context);
    addMergeFuncs(*module, vType, headDim);
    return lowerToBundle(s, *module, dir, o);
  });
}
} // namespace

std::string cascade::builders::compileAttentionBundle(
    const contract::AttentionConfig &config,
    const std::vector<contract::AttentionGroup> &groups, const std::string &dir,
    const std::string &chip, const std::string &features) {
  return attentionBundle(config, groups, dir, optionsFor(chip, features));
}

std::string cascade::builders::compileMergeBundle(contract::DType vType,
                                                  int64_t headDim,
                                                  const std::string &dir,
                                                  const std::string &chip,
                                                  const std::string &features) {
  return mergeBundle(vType, headDim, dir, optionsFor(chip, features));
}

std::string cascade::builders::compileBundle(const contract::BundleKey &key,
                                             const std::string &dir,
                                             const CompileOptions &options) {
  if (key.kind == contract::BundleKey::Kind::Merge)
    return mergeBundle(key.vType, key.headDim, dir, options);
  return attentionBundle(key.config, {key.group}, dir, options);
}

std::string cascade::builders::compileBundle(const contract::BundleKey &key,
                                             const std::string &dir,
                                             const std::string &chip,
                                             const std::string &features) {
  return compileBundle(key, dir, optionsFor(chip, features));
}
