//===- Device.cpp - One CUDA device and its driver helpers ----------------===//

#include "cascade/Runtime/Device.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

namespace cascade::runtime {

using namespace cuda;

#define CASCADE_CU(call)                                                       \
  CASCADE_RETURN_IF_ERROR(checkCuda(*api_, api_->call, #call))

//===----------------------------------------------------------------------===//
// Opening a device
//===----------------------------------------------------------------------===//

Status Device::open(int ordinal, std::shared_ptr<Device> &out) {
  const DriverApi *api = nullptr;
  CASCADE_RETURN_IF_ERROR(getDriver(api));
  return open(*api, ordinal, out);
}

Status Device::open(const DriverApi &api, int ordinal,
                    std::shared_ptr<Device> &out) {
  std::shared_ptr<Device> d(new Device());
  d->api_ = &api;
  d->ordinal_ = ordinal;
  CUdevice dev;
  CASCADE_RETURN_IF_ERROR(
      checkCuda(api, api.cuDeviceGet(&dev, ordinal), "cuDeviceGet"));
  CASCADE_RETURN_IF_ERROR(
      checkCuda(api, api.cuDevicePrimaryCtxRetain(&d->context_, dev),
                "cuDevicePrimaryCtxRetain"));
  CASCADE_RETURN_IF_ERROR(
      checkCuda(api, api.cuCtxSetCurrent(d->context_), "cuCtxSetCurrent"));
  CASCADE_RETURN_IF_ERROR(
      checkCuda(api,
                api.cuDeviceGetAttribute(
                    &d->numSms_, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev),
                "cuDeviceGetAttribute"));
  int major = 0, minor = 0;
  CASCADE_RETURN_IF_ERROR(
      checkCuda(api,
                api.cuDeviceGetAttribute(
                    &major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev),
                "cuDeviceGetAttribute"));
  CASCADE_RETURN_IF_ERROR(
      checkCuda(api,
                api.cuDeviceGetAttribute(
                    &minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev),
                "cuDeviceGetAttribute"));
  d->chip_ = "sm_" + std::to_string(major) + std::to_string(minor);
  const char *pdl = std::getenv("CASCADE_PDL");
  d->setProgrammaticLaunch(major >= 9 && !(pdl && std::strcmp(pdl, "0") == 0));
  d->kernelChip_ = kernelChipFor(major, minor);
  out = std::move(d);
  return Status::success();
}

std::string kernelChipFor(int major, int minor) {
  std::string chip = "sm_" + std::to_string(major) + std::to_string(minor);
  return major == 9 && minor == 0 ? chip + "a" : chip;
}

Device::~Device() {
  if (!api_)
    return;
  for (auto &m : modules_)
    api_->cuModuleUnload(m.second);
}

Status Device::makeCurrent() const {
  CUcontext current = nullptr;
  if (api_->cuCtxGetCurrent(&current) == CUDA_SUCCESS && current == context_)
    return Status::success();
  CASCADE_CU(cuCtxSetCurrent(context_));
  return Status::success();
}

//===----------------------------------------------------------------------===//
// Modules and functions
//===----------------------------------------------------------------------===//

CUresult Device::loadModuleImage(const DriverApi &api, const void *image,
                                 int optLevel, CUmodule &module,
                                 std::string &log) {
  char buffer[8192] = {0};
  CUjit_option options[] = {CU_JIT_ERROR_LOG_BUFFER,
                            CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
                            CU_JIT_OPTIMIZATION_LEVEL};
  void *values[] = {buffer, reinterpret_cast<void *>(sizeof(buffer)),
                    reinterpret_cast<void *>(static_cast<intptr_t>(optLevel))};
  module = nullptr;
  CUresult r = api.cuModuleLoadDataEx(&module, image, optLevel >= 0 ? 3 : 2,
                                      options, values);
  log = r == CUDA_SUCCESS ? std::string() : std::string(buffer);
  return r;
}

Status Device::loadModule(const std::string &key, const std::string &ptx,
                          const std::string &cubinPath) {
  if (modules_.count(key))
    return Status(ErrorCode::InvalidArgument,
                  "module " + key + " is already loaded on this device");
  std::string cubin;
  const bool useCubin = !cubinPath.empty() && readFile(cubinPath, cubin).ok();
  CUmodule module = nullptr;
  std::string log;
  CUresult r = loadModuleImage(*api_, useCubin ? cubin.data() : ptx.c_str(), -1,
                               module, log);
  if (r != CUDA_SUCCESS) {
    Status s = checkCuda(*api_, r, "cuModuleLoadDataEx");
    return Status(s.code(), "loading " + (useCubin ? cubinPath : key) + ": " +
                                s.message() + (log.empty() ? "" : ": " + log));
  }
  modules_[key] = module;
  return Status::success();
}

Status Device::function(const std::string &key, const std::string &name,
                        int64_t dynamicSharedBytes, CUfunction &fn) {
  auto cached = functions_.find({key, name});
  if (cached != functions_.end()) {
    fn = cached->second;
    return Status::success();
  }
  auto module = modules_.find(key);
  if (module == modules_.end())
    return Status(ErrorCode::NotFound, "no module " + key + " is loaded");
  CASCADE_CU(cuModuleGetFunction(&fn, module->second, name.c_str()));
  CASCADE_RETURN_IF_ERROR(setMaxDynamicSharedBytes(fn, dynamicSharedBytes));
  functions_[{key, name}] = fn;
  return Status::success();
}

Status Device::setMaxDynamicSharedBytes(CUfunction fn, int64_t bytes) const {
  if (bytes > 48 * 1024)
    CASCADE_CU(
        cuFuncSetAttribute(fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                           static_cast<int>(bytes)));
  return Status::success();
}

Status Device::occupancy(CUfunction fn, int threads, int64_t dynamicSharedBytes,
                         int &blocksPerSm) const {
  CASCADE_CU(cuOccupancyMaxActiveBlocksPerMultiprocessor(
      &blocksPerSm, fn, threads, static_cast<size_t>(dynamicSharedBytes)));
  return Status::success();
}

/// The status of launch entry point `call` of kernel `what`.
static Status launchStatus(const DriverApi &api, CUresult r, const char *call,
                           const std::string &what) {
  if (r == CUDA_SUCCESS)
    return Status::success();
  Status s = checkCuda(api, r, call);
  return Status(s.code(), what + ": " + s.message());
}

Status Device::launch(CUfunction fn, const KernelLaunch &l, void **params,
                      CUstream stream, const std::string &what) const {
  CUresult r = api_->cuLaunchKernel(fn, l.grid[0], l.grid[1], l.grid[2],
                                    l.block[0], l.block[1], l.block[2],
                                    l.sharedBytes, stream, params, nullptr);
  return launchStatus(*api_, r, "cuLaunchKernel", what);
}

void Device::setProgrammaticLaunch(bool on) {
  pdl_ = on && api_->cuLaunchKernelEx;
}

Status Device::launch(const PreparedLaunch &l, CUstream stream,
                      bool dependent) const {
  void **params = const_cast<void **>(l.params.data());
  if (!(dependent && l.pdl && pdl_))
    return launch(l.function, l.launch, params, stream, l.kernel);
  const KernelLaunch &k = l.launch;
  cuda::CudaLaunchAttribute attr{};
  attr.id = cuda::CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
  attr.value.programmaticStreamSerializationAllowed = 1;
  cuda::CudaLaunchConfig config{
      k.grid[0],  k.grid[1],     k.grid[2], k.block[0], k.block[1],
      k.block[2], k.sharedBytes, stream,    &attr,      1};
  CUresult r = api_->cuLaunchKernelEx(&config, l.function, params, nullptr);
  return launchStatus(*api_, r, "cuLaunchKernelEx", l.kernel);
}

//===----------------------------------------------------------------------===//
// Memory, streams, events
//===----------------------------------------------------------------------===//

Status Device::alloc(size_t bytes, uint64_t &ptr) const {
  CUdeviceptr p = 0;
  CASCADE_CU(cuMemAlloc(&p, bytes ? bytes : 1));
  ptr = p;
  return Status::success();
}

Status Device::free(uint64_t ptr) const {
  CASCADE_CU(cuMemFree(ptr));
  return Status::success();
}

Status Device::allocHost(size_t bytes, void *&ptr) const {
  CASCADE_CU(cuMemAllocHost(&ptr, bytes));
  return Status::success();
}

void Device::freeHost(void *ptr) const {
  if (ptr)
    api_->cuMemFreeHost(ptr);
}

Status Device::copyToDevice(uint64_t dst, const void *src, size_t bytes,
                            CUstream stream) const {
  if (bytes)
    CASCADE_CU(cuMemcpyHtoDAsync(dst, src, bytes, stream));
  return Status::success();
}

Status Device::copyToHost(void *dst, uint64_t src, size_t bytes,
                          CUstream stream) const {
  if (bytes)
    CASCADE_CU(cuMemcpyDtoHAsync(dst, src, bytes, stream));
  return Status::success();
}

Status Device::memsetD32(uint64_t dst, uint32_t value, size_t count,
                         CUstream stream) const {
  CASCADE_CU(cuMemsetD32Async(dst, value, count, stream));
  return Status::success();
}

Status Device::createStream(CUstream &stream) const {
  CASCADE_CU(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
  return Status::success();
}

Status Device::destroyStream(CUstream stream) const {
  CASCADE_CU(cuStreamDestroy(stream));
  return Status::success();
}

Status Device::synchronize(CUstream stream) const {
  CASCADE_CU(cuStreamSynchronize(stream));
  return Status::success();
}

bool Device::isCapturing(CUstream stream) const {
  if (!api_->cuStreamIsCapturing)
    return false;
  int capture = CU_STREAM_CAPTURE_STATUS_NONE;
  return api_->cuStreamIsCapturing(stream, &capture) != CUDA_SUCCESS ||
         capture != CU_STREAM_CAPTURE_STATUS_NONE;
}

Status Device::createEvent(CUevent &event, unsigned flags) const {
  CASCADE_CU(cuEventCreate(&event, flags));
  return Status::success();
}

void Device::destroyEvent(CUevent event) const {
  if (event)
    api_->cuEventDestroy(event);
}

Status Device::recordEvent(CUevent event, CUstream stream) const {
  CASCADE_CU(cuEventRecord(event, stream));
  return Status::success();
}

Status Device::synchronizeEvent(CUevent event) const {
  CASCADE_CU(cuEventSynchronize(event));
  return Status::success();
}

//===----------------------------------------------------------------------===//
// Graphs
//===----------------------------------------------------------------------===//

Status Device::beginCapture(CUstream stream) const {
  CASCADE_CU(cuStreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
  return Status::success();
}

Status Device::endCapture(CUstream stream, CapturedGraph &graph) const {
  CASCADE_CU(cuStreamEndCapture(stream, &graph.graph));
  CASCADE_CU(cuGraphInstantiateWithFlags(&graph.exec, graph.graph, 0));
  return Status::success();
}

Status Device::replay(const CapturedGraph &graph, CUstream stream) const {
  CASCADE_CU(cuGraphLaunch(graph.exec, stream));
  return Status::success();
}

void Device::destroyGraph(CapturedGraph &graph) const {
  if (graph.exec)
    api_->cuGraphExecDestroy(graph.exec);
  if (graph.graph)
    api_->cuGraphDestroy(graph.graph);
  graph = CapturedGraph();
}

void KernelGraph::reset() {
  const DriverApi &api = device_->api();
  if (exec_)
    api.cuGraphExecDestroy(exec_);
  if (graph_)
    api.cuGraphDestroy(graph_);
  exec_ = nullptr;
  graph_ = nullptr;
  nodes_.clear();
  prioritized_ = false;
}

bool KernelGraph::fail() {
  reset();
  failed_ = true;
  return false;
}

bool KernelGraph::prioritize(const std::vector<uint8_t> &urgent,
                             CUstream stream) {
  const DriverApi &api = device_->api();
  if (!api.canPrioritizeNodes())
    return false;
  int least = 0, greatest = 0, own = 0;
  if (api.cuCtxGetStreamPriorityRange(&least, &greatest) != CUDA_SUCCESS ||
      api.cuStreamGetPriority(stream, &own) != CUDA_SUCCESS)
    return false;
  // Every node gets a priority: with the instantiation flag, one without
  // the attribute would run at the default (least) priority, not the
  // stream's.
  for (size_t i = 0; i < nodes_.size(); ++i) {
    cuda::CudaLaunchAttributeValue value{};
    value.priority = urgent[i] ? greatest : own;
    if (api.cuGraphKernelNodeSetAttribute(nodes_[i],
                                          cuda::CU_LAUNCH_ATTRIBUTE_PRIORITY,
                                          &value) != CUDA_SUCCESS)
      return false; // instantiated without the flag: the stream's priority
  }
  return true;
}

bool KernelGraph::launch(const std::vector<PreparedLaunch> &launches,
                         std::vector<uint8_t> &dirty, CUstream stream,
                         const std::vector<std::vector<uint32_t>> *deps,
                         const std::vector<uint8_t> *urgent) {
  const DriverApi &api = device_->api();
  if (failed_ || !api.canBuildGraphs())
    return false;
  auto nodeParams = [](const PreparedLaunch &pl) {
    const KernelLaunch &k = pl.launch;
    CudaKernelNodeParams np{};
    np.func = pl.function;
    np.gridDimX = static_cast<unsigned>(k.grid[0]);
    np.gridDimY = static_cast<unsigned>(k.grid[1]);
    np.gridDimZ = static_cast<unsigned>(k.grid[2]);
    np.blockDimX = static_cast<unsigned>(k.block[0]);
    np.blockDimY = static_cast<unsigned>(k.block[1]);
    np.blockDimZ = static_cast<unsigned>(k.block[2]);
    np.sharedMemBytes = static_cast<unsigned>(k.sharedBytes);
    np.kernelParams = const_cast<void **>(pl.params.data());
    return np;
  };
  if (!exec_) {
    if (api.cuGraphCreate(&graph_, 0) != CUDA_SUCCESS)
      return fail();
    nodes_.assign(launches.size(), nullptr);
    const size_t n = launches.size();
    if (deps && deps->size() != n)
      return fail();
    std::vector<CUgraphNode> on, to;
    std::vector<cuda::CudaGraphEdgeData> edges;
    // A kernel that waits for its prerequisites itself (pdl) hangs off
    // programmatic edges: it starts while they finish.
    const bool programmatic =
        device_->programmaticLaunch() && api.cuGraphAddDependencies;
    auto add = [&](size_t i) {
      on.clear();
      if (!deps && i)
        on.push_back(nodes_[i - 1]);
      for (uint32_t d = 0; deps && d < (*deps)[i].size(); ++d) {
        const uint32_t j = (*deps)[i][d];
        if (j >= i || !nodes_[j])
          return false; // only earlier launches, added already
        on.push_back(nodes_[j]);
      }
      const CudaKernelNodeParams np = nodeParams(launches[i]);
      if (!(programmatic && launches[i].pdl) || on.empty())
        return api.cuGraphAddKernelNode(&nodes_[i], graph_, on.data(),
                                        on.size(), &np) == CUDA_SUCCESS;
      if (api.cuGraphAddKernelNode(&nodes_[i], graph_, nullptr, 0, &np) !=
          CUDA_SUCCESS)
        return false;
      to.assign(on.size(), nodes_[i]);
      cuda::CudaGraphEdgeData e{};
      e.from_port = cuda::CU_GRAPH_KERNEL_NODE_PORT_PROGRAMMATIC;
      e.type = cuda::CU_GRAPH_DEPENDENCY_TYPE_PROGRAMMATIC;
      edges.assign(on.size(), e);
      return api.cuGraphAddDependencies(graph_, on.data(), to.data(),
                                        edges.data(),
                                        on.size()) == CUDA_SUCCESS;
    };
    // Roots first, each pass in launch order.
    for (int pass = 0; pass < 2; ++pass)
      for (size_t i = 0; i < n; ++i) {
        const bool root = !deps ? i == 0 : (*deps)[i].empty();
        if (root == (pass == 0) && !add(i))
          return fail();
      }
    prioritized_ =
        urgent && urgent->size() == n &&
        std::find(urgent->begin(), urgent->end(), 1) != urgent->end() &&
        prioritize(*urgent, stream);
    if (api.cuGraphInstantiateWithFlags(
            &exec_, graph_,
            prioritized_ ? cuda::CUDA_GRAPH_INSTANTIATE_FLAG_USE_NODE_PRIORITY
                         : 0) != CUDA_SUCCESS)
      return fail();
  } else {
    for (size_t i = 0; i < launches.size(); ++i) {
      if (!dirty[i])
        continue;
      const CudaKernelNodeParams np = nodeParams(launches[i]);
      if (api.cuGraphExecKernelNodeSetParams(exec_, nodes_[i], &np) !=
          CUDA_SUCCESS)
        return fail();
    }
  }
  std::fill(dirty.begin(), dirty.end(), 0);
  if (api.cuGraphLaunch(exec_, stream) != CUDA_SUCCESS)
    return fail();
  return true;
}

} // namespace cascade::runtime
