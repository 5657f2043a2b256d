//===- Launcher.cpp - Running bundle kernels on a GPU ---------------------===//

#include "cascade/Runtime/Launcher.h"

namespace cascade::runtime {

using namespace cuda;

#define CASCADE_CU(call)                                                       \
  CASCADE_RETURN_IF_ERROR(checkCuda(*api_, api_->call, #call))

Status Launcher::create(const Bundle &bundle, int device,
                        std::unique_ptr<Launcher> &out) {
  const DriverApi *api = nullptr;
  CASCADE_RETURN_IF_ERROR(getDriver(api));
  std::unique_ptr<Launcher> l(new Launcher());
  l->api_ = api;
  l->bundle_ = bundle;
  CUdevice dev;
  CASCADE_RETURN_IF_ERROR(
      checkCuda(*api, api->cuDeviceGet(&dev, device), "cuDeviceGet"));
  CASCADE_RETURN_IF_ERROR(
      checkCuda(*api, api->cuDevicePrimaryCtxRetain(&l->context_, dev),
                "cuDevicePrimaryCtxRetain"));
  CASCADE_RETURN_IF_ERROR(
      checkCuda(*api, api->cuCtxSetCurrent(l->context_), "cuCtxSetCurrent"));
  CASCADE_RETURN_IF_ERROR(
      checkCuda(*api,
                api->cuDeviceGetAttribute(
                    &l->numSms_, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev),
                "cuDeviceGetAttribute"));
  int major = 0, minor = 0;
  CASCADE_RETURN_IF_ERROR(
      checkCuda(*api,
                api->cuDeviceGetAttribute(
                    &major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev),
                "cuDeviceGetAttribute"));
  CASCADE_RETURN_IF_ERROR(
      checkCuda(*api,
                api->cuDeviceGetAttribute(
                    &minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev),
                "cuDeviceGetAttribute"));
  l->chip_ = "sm_" + std::to_string(major) + std::to_string(minor);
  for (const auto &file : l->bundle_.ptx)
    CASCADE_RETURN_IF_ERROR(l->loadModule(file.first, file.second, ""));
  out = std::move(l);
  return Status::success();
}

Status Launcher::loadModule(const std::string &key, const std::string &ptx,
                            const std::string &cubinPath) {
  std::string cubin;
  const bool useCubin = !cubinPath.empty() && readFile(cubinPath, cubin).ok();
  char log[8192] = {0};
  CUjit_option options[] = {CU_JIT_ERROR_LOG_BUFFER,
                            CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  void *values[] = {log, reinterpret_cast<void *>(sizeof(log))};
  CUmodule module = nullptr;
  CUresult r = api_->cuModuleLoadDataEx(
      &module, useCubin ? cubin.data() : ptx.c_str(), 2, options, values);
  if (r != CUDA_SUCCESS) {
    Status s = checkCuda(*api_, r, "cuModuleLoadDataEx");
    return Status(s.code(), "loading " + (useCubin ? cubinPath : key) + ": " +
                                s.message() +
                                (log[0] ? std::string(": ") + log : ""));
  }
  modules_[key] = module;
  return Status::success();
}

Status Launcher::addBundle(const Bundle &bundle, const std::string &prefix) {
  CASCADE_RETURN_IF_ERROR(makeCurrent());
  std::map<std::string, std::string> files; // original name -> prefixed
  for (const KernelSpec &k : bundle.kernels) {
    if (bundle_.find(k.name))
      continue;
    const std::string key = prefix + "/" + k.ptx;
    if (!modules_.count(key)) {
      auto text = bundle.ptx.find(k.ptx);
      if (text == bundle.ptx.end())
        return Status(ErrorCode::NotFound,
                      "bundle " + bundle.dir + ": no PTX text for " + k.ptx);
      std::string cubin;
      const std::string suffix = ".ptx";
      if (!bundle.dir.empty() && k.ptx.size() > suffix.size() &&
          k.ptx.compare(k.ptx.size() - suffix.size(), suffix.size(), suffix) ==
              0)
        cubin = bundle.dir + "/" +
                k.ptx.substr(0, k.ptx.size() - suffix.size()) + "." + chip_ +
                ".cubin";
      CASCADE_RETURN_IF_ERROR(loadModule(key, text->second, cubin));
    }
    KernelSpec spec = k;
    spec.ptx = key;
    bundle_.kernels.push_back(std::move(spec));
  }
  return Status::success();
}

Status Launcher::makeCurrent() {
  CUcontext current = nullptr;
  if (api_->cuCtxGetCurrent(&current) == CUDA_SUCCESS && current == context_)
    return Status::success();
  CASCADE_CU(cuCtxSetCurrent(context_));
  return Status::success();
}

Status Launcher::launchPrepared(const PreparedLaunch &l,
                                CUstream stream) const {
  const KernelLaunch &k = l.launch;
  CUresult r = api_->cuLaunchKernel(
      l.function, k.grid[0], k.grid[1], k.grid[2], k.block[0], k.block[1],
      k.block[2], k.sharedBytes, stream, const_cast<void **>(l.params.data()),
      nullptr);
  if (r != CUDA_SUCCESS) {
    Status s = checkCuda(*api_, r, "cuLaunchKernel");
    return Status(s.code(), l.kernel + ": " + s.message());
  }
  return Status::success();
}

Launcher::~Launcher() {
  if (!api_)
    return;
  for (auto &m : modules_)
    api_->cuModuleUnload(m.second);
}

Status Launcher::function(const std::string &kernel, CUfunction &fn) {
  auto it = functions_.find(kernel);
  if (it != functions_.end()) {
    fn = it->second;
    return Status::success();
  }
  const KernelSpec *spec = bundle_.find(kernel);
  if (!spec)
    return Status(ErrorCode::NotFound,
                  "no kernel named " + kernel + " in the bundle");
  CASCADE_CU(
      cuModuleGetFunction(&fn, modules_.at(spec->ptx), spec->name.c_str()));
  if (spec->dynamicSharedBytes > 48 * 1024)
    CASCADE_CU(
        cuFuncSetAttribute(fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                           static_cast<int>(spec->dynamicSharedBytes)));
  functions_[kernel] = fn;
  return Status::success();
}

Status Launcher::occupancy(const std::string &kernel, int &blocksPerSm) {
  CUfunction fn;
  CASCADE_RETURN_IF_ERROR(function(kernel, fn));
  const KernelSpec *spec = bundle_.find(kernel);
  int threads =
      static_cast<int>(spec->block[0] * spec->block[1] * spec->block[2]);
  CASCADE_CU(cuOccupancyMaxActiveBlocksPerMultiprocessor(
      &blocksPerSm, fn, threads,
      static_cast<size_t>(spec->dynamicSharedBytes)));
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
    recorder_->push_back(std::move(p));
    return Status::success();
  }
  std::vector<void *> params = l.paramPointers();
  CUresult r = api_->cuLaunchKernel(
      fn, l.grid[0], l.grid[1], l.grid[2], l.block[0], l.block[1], l.block[2],
      l.sharedBytes, stream, params.data(), nullptr);
  if (r != CUDA_SUCCESS) {
    Status s = checkCuda(*api_, r, "cuLaunchKernel");
    return Status(s.code(), kernel + ": " + s.message());
  }
  return Status::success();
}

Status Launcher::uploadImage(const std::vector<uint8_t> &image,
                             uint64_t intWorkspace, CUstream stream) {
  if (image.empty())
    return Status::success();
  CASCADE_CU(
      cuMemcpyHtoDAsync(intWorkspace, image.data(), image.size(), stream));
  return Status::success();
}

Status Launcher::uploadPlan(const Plan &plan, uint64_t intWorkspace,
                            CUstream stream) {
  return uploadImage(plan.int_image, intWorkspace, stream);
}

Status Launcher::uploadPlan(const CascadePlan &plan, uint64_t intWorkspace,
                            CUstream stream) {
  return uploadImage(plan.int_image, intWorkspace, stream);
}

Status Launcher::runLevel(const Plan &plan, uint64_t intWorkspace,
                          uint64_t floatWorkspace, const LevelKernels &kernels,
                          const ArgumentTable &args, CUstream stream) {
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
                            const std::string &mergeKernel, CUstream stream) {
  const size_t n = plan.levels.size();
  if (kernels.size() != n || levelArgs.size() != n)
    return makeError(ErrorCode::SizeMismatch,
                     "the cascade has %zu levels but %zu kernel sets and %zu "
                     "argument tables were given",
                     n, kernels.size(), levelArgs.size());
  const Binding *o = levelArgs[0].find("o");
  const Binding *lse = levelArgs[0].find("lse");
  if (n > 1 && (!o || !o->hasBuffer || !lse || !lse->hasBuffer))
    return Status(ErrorCode::NotFound,
                  "level 0 arguments need the output buffers 'o' and 'lse'");
  for (size_t l = 0; l < n; ++l) {
    const Plan &p = plan.levels[l];
    ArgumentTable args = levelArgs[l];
    const int64_t sCount = plan.num_rows * p.num_qo_heads;
    // An accumulating level (static "accumulate": the compiler fused the
    // level's merge) merges itself into the user's o/lse in its last kernel:
    // no temporary state and no merge launch.
    const KernelSpec *attention = bundle_.find(kernels[l].attention);
    const bool accumulates =
        attention && attention->staticString("accumulate") == "true";
    if (accumulates && l == 0)
      return makeError(ErrorCode::InvalidArgument,
                       "level 0 of a cascade writes the output; kernel %s "
                       "accumulates into it",
                       kernels[l].attention.c_str());
    if (l > 0 && accumulates) {
      args.setBuffer("o", o->ptr, o->count, o->dtype);
      args.setBuffer("lse", lse->ptr, lse->count, lse->dtype);
    } else if (l > 0) {
      args.setBuffer("o", floatWorkspace + plan.level_v_offset[l],
                     sCount * p.head_dim, o->dtype);
      args.setBuffer("lse", floatWorkspace + plan.level_s_offset[l], sCount,
                     "f32");
    }
    CASCADE_RETURN_IF_ERROR(runLevel(p, intWorkspace + plan.int_base[l],
                                     floatWorkspace + plan.float_base[l],
                                     kernels[l], args, stream));
    if (l == 0 || accumulates)
      continue;
    if (mergeKernel.empty())
      return makeError(ErrorCode::InvalidArgument,
                       "level %zu does not accumulate and no merge kernel was "
                       "given",
                       l);
    ArgumentTable m;
    addPlanBindings(m, p, intWorkspace + plan.int_base[l],
                    floatWorkspace + plan.float_base[l]);
    m.merge(levelArgs[0]);
    m.setBuffer("v", o->ptr, o->count, o->dtype);
    m.setBuffer("s", lse->ptr, lse->count, lse->dtype);
    m.setBuffer("v_other", floatWorkspace + plan.level_v_offset[l],
                sCount * p.head_dim, o->dtype);
    m.setBuffer("s_other", floatWorkspace + plan.level_s_offset[l], sCount,
                "f32");
    m.setInt("num_heads", p.num_qo_heads);
    m.setInt("num_tasks", sCount); // one (row, head) state per task
    CASCADE_RETURN_IF_ERROR(launch(mergeKernel, m, stream));
  }
  return Status::success();
}

Status Launcher::alloc(size_t bytes, uint64_t &ptr) {
  CUdeviceptr p = 0;
  CASCADE_CU(cuMemAlloc(&p, bytes ? bytes : 1));
  ptr = p;
  return Status::success();
}

Status Launcher::free(uint64_t ptr) {
  CASCADE_CU(cuMemFree(ptr));
  return Status::success();
}

Status Launcher::copyToDevice(uint64_t dst, const void *src, size_t bytes,
                              CUstream stream) {
  if (bytes)
    CASCADE_CU(cuMemcpyHtoDAsync(dst, src, bytes, stream));
  return Status::success();
}

Status Launcher::copyToHost(void *dst, uint64_t src, size_t bytes,
                            CUstream stream) {
  if (bytes)
    CASCADE_CU(cuMemcpyDtoHAsync(dst, src, bytes, stream));
  return Status::success();
}

Status Launcher::memsetD32(uint64_t dst, uint32_t value, size_t count,
                           CUstream stream) {
  CASCADE_CU(cuMemsetD32Async(dst, value, count, stream));
  return Status::success();
}

Status Launcher::createStream(CUstream &stream) {
  CASCADE_CU(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
  return Status::success();
}

Status Launcher::destroyStream(CUstream stream) {
  CASCADE_CU(cuStreamDestroy(stream));
  return Status::success();
}

Status Launcher::synchronize(CUstream stream) {
  CASCADE_CU(cuStreamSynchronize(stream));
  return Status::success();
}

Status Launcher::beginCapture(CUstream stream) {
  CASCADE_CU(cuStreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
  return Status::success();
}

Status Launcher::endCapture(CUstream stream, CapturedGraph &graph) {
  CASCADE_CU(cuStreamEndCapture(stream, &graph.graph));
  CASCADE_CU(cuGraphInstantiateWithFlags(&graph.exec, graph.graph, 0));
  return Status::success();
}

Status Launcher::replay(const CapturedGraph &graph, CUstream stream) {
  CASCADE_CU(cuGraphLaunch(graph.exec, stream));
  return Status::success();
}

void Launcher::destroyGraph(CapturedGraph &graph) {
  if (graph.exec)
    api_->cuGraphExecDestroy(graph.exec);
  if (graph.graph)
    api_->cuGraphDestroy(graph.graph);
  graph = CapturedGraph();
}

} // namespace cascade::runtime
