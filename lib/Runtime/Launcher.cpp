//===- Launcher.cpp - Running bundle kernels on a GPU ---------------------===//

#include "cascade/Runtime/Launcher.h"

#include <algorithm>
#include <fstream>

namespace cascade::runtime {

using namespace cuda;

Status checkCascadeKernels(const Bundle &bundle, const CascadePlan &plan,
                           const std::vector<LevelKernels> &kernels,
                           const std::string &mergeKernel,
                           const std::vector<PlanInputs> *inputs) {
  const size_t n = plan.levels.size();
  auto check = [&](const std::string &kernel, size_t l) {
    const KernelSpec *spec = kernel.empty() ? nullptr : bundle.find(kernel);
    if (!spec)
      return Status::success();
    Status s = checkKernelStatics(*spec, plan.levels[l],
                                  inputs && inputs->size() == n ? &(*inputs)[l]
                                                                : nullptr);
    return s.ok() ? s
                  : Status(s.code(),
                           "level " + std::to_string(l) + ": " + s.message());
  };
  for (const PlanStep &step : plan.steps) {
    const auto l = static_cast<size_t>(step.level);
    if (step.level < 0 || l >= n || l >= kernels.size())
      continue; // runCascade reports it
    switch (step.kind) {
    case WorkKind::Decode:
    case WorkKind::DecodeSplit:
    case WorkKind::Prefill:
    case WorkKind::PrefillSplit:
      CASCADE_RETURN_IF_ERROR(check(kernels[l].attention, l));
      break;
    case WorkKind::MergeSplits:
      CASCADE_RETURN_IF_ERROR(check(kernels[l].merge, l));
      break;
    case WorkKind::MergeLevel: {
      if (step.level == plan.base_level)
        break;
      const KernelSpec *attention = bundle.find(kernels[l].attention);
      if (attention && attention->staticString("accumulate") == "true")
        break;
      CASCADE_RETURN_IF_ERROR(check(mergeKernel, l));
      break;
    }
    }
  }
  return Status::success();
}

Status Launcher::create(const Bundle &bundle, int device,
                        std::unique_ptr<Launcher> &out) {
  std::shared_ptr<Device> d;
  CASCADE_RETURN_IF_ERROR(Device::open(device, d));
  return create(std::move(d), bundle, out);
}

Status Launcher::create(std::shared_ptr<Device> device, const Bundle &bundle,
                        std::unique_ptr<Launcher> &out) {
  if (!device)
    return Status(ErrorCode::InvalidArgument, "Launcher::create: no device");
  std::unique_ptr<Launcher> l(new Launcher());
  l->device_ = std::move(device);
  l->bundle_ = bundle;
  CASCADE_RETURN_IF_ERROR(l->device_->makeCurrent());
  for (const auto &file : l->bundle_.ptx)
    CASCADE_RETURN_IF_ERROR(
        l->device_->loadModule(file.first, file.second, ""));
  out = std::move(l);
  return Status::success();
}

Status Launcher::addBundle(const Bundle &bundle, const std::string &prefix) {
  CASCADE_RETURN_IF_ERROR(makeCurrent());
  std::map<std::string, std::string> files; // original name -> prefixed
  for (const KernelSpec &k : bundle.kernels) {
    if (bundle_.find(k.name))
      continue;
    const std::string key = prefix + "/" + k.ptx;
    if (!device_->hasModule(key)) {
      auto text = bundle.ptx.find(k.ptx);
      if (text == bundle.ptx.end())
        return Status(ErrorCode::NotFound,
                      "bundle " + bundle.dir + ": no PTX text for " + k.ptx);
      // A cubin beside the PTX, for the device's kernel chip (sm_90a) or its
      // compute capability (sm_90): the first that exists.
      std::string cubin;
      const std::string suffix = ".ptx";
      if (!bundle.dir.empty() && k.ptx.size() > suffix.size() &&
          k.ptx.compare(k.ptx.size() - suffix.size(), suffix.size(), suffix) ==
              0) {
        std::string stem = bundle.dir + "/" +
                           k.ptx.substr(0, k.ptx.size() - suffix.size()) + ".";
        for (const std::string &chip :
             {device_->kernelChip(), device_->chip()}) {
          if (std::ifstream(stem + chip + ".cubin").good()) {
            cubin = stem + chip + ".cubin";
            break;
          }
        }
      }
      CASCADE_RETURN_IF_ERROR(device_->loadModule(key, text->second, cubin));
    }
    KernelSpec spec = k;
    spec.ptx = key;
    bundle_.kernels.push_back(std::move(spec));
  }
  return Status::success();
}

Status Launcher::launchPrepared(const PreparedLaunch &l,
                                CUstream stream) const {
  return device_->launch(l, stream);
}

Launcher::~Launcher() = default;

Status Launcher::function(const std::string &kernel, CUfunction &fn) {
  const KernelSpec *spec = bundle_.find(kernel);
  if (!spec)
    return Status(ErrorCode::NotFound,
                  "no kernel named " + kernel + " in the bundle");
  return device_->function(spec->ptx, spec->name, spec->dynamicSharedBytes, fn);
}

Status Launcher::occupancy(const std::string &kernel, int &blocksPerSm) {
  CUfunction fn;
  CASCADE_RETURN_IF_ERROR(function(kernel, fn));
  const KernelSpec *spec = bundle_.find(kernel);
  int threads =
      static_cast<int>(spec->block[0] * spec->block[1] * spec->block[2]);
  return device_->occupancy(fn, threads, spec->dynamicSharedBytes, blocksPerSm);
}

Status Launcher::planTarget(const std::string &kernel, PlanTarget &out) {
  const KernelSpec *k = bundle_.find(kernel);
  if (!k)
    return Status(ErrorCode::NotFound, "kernel " + kernel + " is not loaded");
  int occupancy = 1;
  CASCADE_RETURN_IF_ERROR(this->occupancy(k->name, occupancy));
  out.num_sms = device_->numSms();
  out.occupancy = std::max(occupancy, 1);
  const std::string tile = k->staticString("qo_tile_size");
  out.qo_tile_size = tile.empty() ? 0 : std::stoll(tile);
  return Status::success();
}

Status Launcher::launch(const std::string &kernel, const ArgumentTable &args,
                        CUstream stream) {
  const KernelSpec *spec = bundle_.find(kernel);
  if (!spec)
    return Status(ErrorCode::NotFound,
                  "no kernel named " + kernel + " in the bundle");
  KernelLaunch l;
  CASCADE_RETURN_IF_ERROR(bindKernel(*spec, args, l));
  if (l.empty())
    return Status::success();
  CUfunction fn;
  CASCADE_RETURN_IF_ERROR(function(kernel, fn));
  if (recorder_) {
    PreparedLaunch p;
    p.kernel = kernel;
    p.function = fn;
    p.launch = std::move(l);
    p.pdl = spec->pdl;
    recorder_->push_back(std::move(p));
    return Status::success();
  }
  std::vector<void *> params = l.paramPointers();
  return device_->launch(fn, l, params.data(), stream, kernel);
}

Status Launcher::uploadPlan(const Plan &plan, uint64_t intWorkspace,
                            CUstream stream) {
  return device_->copyToDevice(intWorkspace, plan.int_image.data(),
                               plan.int_image.size(), stream);
}

Status Launcher::uploadPlan(const CascadePlan &plan, uint64_t intWorkspace,
                            CUstream stream) {
  return device_->copyToDevice(intWorkspace, plan.int_image.data(),
                               plan.int_image.size(), stream);
}

Status Launcher::runLevel(const Plan &plan, uint64_t intWorkspace,
                          uint64_t floatWorkspace, const LevelKernels &kernels,
                          const ArgumentTable &args, CUstream stream) {
  // The kernels' statics against the plan, before anything is launched.
  if (const KernelSpec *attention = bundle_.find(kernels.attention))
    CASCADE_RETURN_IF_ERROR(checkKernelStatics(*attention, plan));
  if (const KernelSpec *merge =
          plan.split_kv ? bundle_.find(kernels.merge) : nullptr)
    CASCADE_RETURN_IF_ERROR(checkKernelStatics(*merge, plan));
  ArgumentTable table;
  addPlanBindings(table, plan, intWorkspace, floatWorkspace);
  table.merge(args);
  CASCADE_RETURN_IF_ERROR(launch(kernels.attention, table, stream));
  if (plan.split_kv) {
    if (kernels.merge.empty())
      return Status(ErrorCode::InvalidArgument,
                    "the plan splits KV but no merge kernel was given");
    CASCADE_RETURN_IF_ERROR(launch(kernels.merge, table, stream));
  }
  return Status::success();
}

Status Launcher::runCascade(const CascadePlan &plan, uint64_t intWorkspace,
                            uint64_t floatWorkspace,
                            const std::vector<LevelKernels> &kernels,
                            const std::vector<ArgumentTable> &levelArgs,
                            const std::string &mergeKernel, CUstream stream,
                            std::vector<int32_t> *launchSteps) {
  const size_t n = plan.levels.size();
  if (kernels.size() != n || levelArgs.size() != n)
    return makeError(ErrorCode::SizeMismatch,
                     "the cascade has %zu levels but %zu kernel sets and %zu "
                     "argument tables were given",
                     n, kernels.size(), levelArgs.size());
  if (n > 0 && plan.steps.empty())
    return Status(ErrorCode::InvalidArgument,
                  "the cascade plan lists no steps (plan it with "
                  "makeCascadePlan)");
  const auto base = static_cast<size_t>(plan.base_level);
  if (base >= n)
    return makeError(ErrorCode::Internal,
                     "the plan's base level %d is not one of its %zu levels",
                     plan.base_level, n);
  const Binding *o = levelArgs[0].find("o");
  const Binding *lse = levelArgs[0].find("lse");
  if (n > 1 && (!o || !o->hasBuffer || !lse || !lse->hasBuffer))
    return Status(ErrorCode::NotFound,
                  "level 0 arguments need the output buffers 'o' and 'lse'");
  // An accumulating level (static "accumulate": the compiler fused the
  // level's merge) merges itself into the user's o/lse in its last kernel:
  // no temporary state and no MergeLevel launch.
  auto accumulates = [&](size_t l) {
    const KernelSpec *attention = bundle_.find(kernels[l].attention);
    return attention && attention->staticString("accumulate") == "true";
  };
  CASCADE_RETURN_IF_ERROR(
      checkCascadeKernels(bundle_, plan, kernels, mergeKernel));
  std::vector<ArgumentTable> tables(n); // per level, from its attention step
  for (size_t si = 0; si < plan.steps.size(); ++si) {
    // The launches the previous step recorded were its own.
    if (launchSteps && recorder_)
      launchSteps->resize(recorder_->size(), static_cast<int32_t>(si) - 1);
    const PlanStep &step = plan.steps[si];
    const auto l = static_cast<size_t>(step.level);
    if (step.level < 0 || l >= n)
      return makeError(ErrorCode::Internal, "a plan step names level %d of %zu",
                       step.level, n);
    const Plan &p = plan.levels[l];
    const uint64_t intBase = intWorkspace + plan.int_base[l];
    const uint64_t floatBase = floatWorkspace + plan.float_base[l];
    const int64_t sCount = plan.num_rows * p.num_qo_heads;
    switch (step.kind) {
    case WorkKind::Decode:
    case WorkKind::DecodeSplit:
    case WorkKind::Prefill:
    case WorkKind::PrefillSplit: {
      const bool acc = accumulates(l);
      if (acc && l == base)
        return makeError(ErrorCode::InvalidArgument,
                         "level %zu is the cascade's base level and writes "
                         "the output; kernel %s accumulates into it",
                         l, kernels[l].attention.c_str());
      ArgumentTable args = levelArgs[l];
      if (n > 1 && (l == base || acc)) {
        args.setBuffer("o", o->ptr, o->count, o->dtype);
        args.setBuffer("lse", lse->ptr, lse->count, lse->dtype);
      } else if (l != base) {
        args.setBuffer("o", floatWorkspace + plan.level_v_offset[l],
                       sCount * p.vDim(), o->dtype);
        args.setBuffer("lse", floatWorkspace + plan.level_s_offset[l], sCount,
                       "f32");
      }
      ArgumentTable &table = tables[l];
      table = ArgumentTable();
      addPlanBindings(table, p, intBase, floatBase);
      table.merge(args);
      CASCADE_RETURN_IF_ERROR(launch(kernels[l].attention, table, stream));
      break;
    }
    case WorkKind::MergeSplits:
      if (kernels[l].merge.empty())
        return Status(ErrorCode::InvalidArgument,
                      "the plan splits KV but no merge kernel was given");
      CASCADE_RETURN_IF_ERROR(launch(kernels[l].merge, tables[l], stream));
      break;
    case WorkKind::MergeLevel: {
      if (l == base || accumulates(l))
        break;
      if (mergeKernel.empty())
        return makeError(ErrorCode::InvalidArgument,
                         "level %zu does not accumulate and no merge kernel "
                         "was given",
                         l);
      ArgumentTable m;
      addPlanBindings(m, p, intBase, floatBase);
      m.merge(levelArgs[0]);
      m.setBuffer("v", o->ptr, o->count, o->dtype);
      m.setBuffer("s", lse->ptr, lse->count, lse->dtype);
      m.setBuffer("v_other", floatWorkspace + plan.level_v_offset[l],
                  sCount * p.vDim(), o->dtype);
      m.setBuffer("s_other", floatWorkspace + plan.level_s_offset[l], sCount,
                  "f32");
      m.setInt("num_heads", p.num_qo_heads);
      m.setInt("num_tasks", sCount); // one (row, head) state per task
      CASCADE_RETURN_IF_ERROR(launch(mergeKernel, m, stream));
      break;
    }
    }
  }
  if (launchSteps && recorder_)
    launchSteps->resize(recorder_->size(),
                        static_cast<int32_t>(plan.steps.size()) - 1);
  return Status::success();
}

} // namespace cascade::runtime
