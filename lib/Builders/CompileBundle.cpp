//===- CompileBundle.cpp - Kernel bundles from configurations -------------===//

#include "cascade/Builders/CompileBundle.h"

#include "cascade/Builders/IRBuilders.h"
#include "cascade/Builders/Session.h"
#include "cascade/Conversion/Passes.h"

#include "mlir/Pass/PassManager.h"

using namespace cascade::builders;

std::string cascade::builders::defaultFeatures(const std::string &chip) {
  int cc = 90;
  if (chip.rfind("sm_", 0) == 0)
    cc = std::atoi(chip.c_str() + 3);
  return cc >= 100 ? "+ptx86" : "+ptx80";
}

namespace {
/// Lowers `module` with cascade-to-ptx, writing the bundle to `dir`.
std::string lowerToBundle(Session &s, mlir::ModuleOp module,
                          const std::string &dir, const std::string &chip,
                          const std::string &features) {
  if (std::string err = s.verify(module, "the kernel module"); !err.empty())
    return err;
  mlir::PassManager pm(&s.context);
  mlir::cascade::CascadeToPTXOptions options;
  options.chip = chip;
  options.features = features;
  options.bundleDir = dir;
  mlir::cascade::buildCascadeToPTXPipeline(pm, options);
  if (mlir::failed(pm.run(module)))
    return "compiling the kernels failed:\n" + s.diagnostics;
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
} // namespace

std::string cascade::builders::compileAttentionBundle(
    const contract::AttentionConfig &config,
    const std::vector<contract::AttentionGroup> &groups, const std::string &dir,
    const std::string &chip, const std::string &features) {
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
    return lowerToBundle(s, *module, dir, chip, features);
  });
}

std::string cascade::builders::compileMergeBundle(contract::DType vType,
                                                  int64_t headDim,
                                                  const std::string &dir,
                                                  const std::string &chip,
                                                  const std::string &features) {
  return catching([&] {
    Session s;
    auto module = newModule(s.context);
    addMergeFuncs(*module, vType, headDim);
    return lowerToBundle(s, *module, dir, chip, features);
  });
}

std::string cascade::builders::compileBundle(const contract::BundleKey &key,
                                             const std::string &dir,
                                             const std::string &chip,
                                             const std::string &features) {
  if (key.kind == contract::BundleKey::Kind::Merge)
    return compileMergeBundle(key.vType, key.headDim, dir, chip, features);
  return compileAttentionBundle(key.config, {key.group}, dir, chip, features);
}
