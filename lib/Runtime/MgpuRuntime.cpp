//===- MgpuRuntime.cpp - mgpu* entry points for MLIR host code ------------===//
//
// MLIR's gpu-to-llvm lowering turns host-side GPU ops into calls to mgpu*
// functions (upstream: libmlir_cuda_runtime). This library,
// libcascade_mlir_cuda_runtime, implements the ones Cascade-MLIR's host code
// uses over the dlopen'd driver (Driver.h), so it needs no CUDA toolkit at
// build time. Like upstream, failures are reported on stderr and the call
// returns a null handle; the calls use the primary context of the default
// device (mgpuSetDefaultDevice, 0 by default), opened as a Device (Device.h)
// once per thread.
//
//===----------------------------------------------------------------------===//

#include "MgpuDevice.h"

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>

using namespace cascade::runtime;
using namespace cascade::runtime::cuda;

#define CASCADE_MGPU_EXPORT extern "C" __attribute__((visibility("default")))

namespace {

int32_t defaultDevice = 0;

/// The driver with the default device's primary context current, or null
/// (after a message on stderr).
const DriverApi *enter() {
  Device *device = mgpu::enterDevice();
  return device ? &device->api() : nullptr;
}

/// Reports a failed driver call on stderr; true on success.
bool report(const DriverApi &api, CUresult r, const char *call) {
  return mgpu::reportStatus(checkCuda(api, r, call));
}

CUmodule loadModule(void *data, int optLevel) {
  const DriverApi *api = enter();
  if (!api)
    return nullptr;
  CUmodule module = nullptr;
  std::string log;
  CUresult r = Device::loadModuleImage(*api, data, optLevel, module, log);
  if (!report(*api, r, "cuModuleLoadDataEx")) {
    if (!log.empty())
      std::fprintf(stderr, "cascade_mlir_cuda_runtime: JIT log: %s\n",
                   log.c_str());
    return nullptr;
  }
  return module;
}

} // namespace

Device *mgpu::enterDevice() {
  static thread_local std::shared_ptr<Device> device;
  if (!device || device->ordinal() != defaultDevice) {
    std::shared_ptr<Device> opened;
    if (!reportStatus(Device::open(defaultDevice, opened)))
      return nullptr;
    device = std::move(opened);
  }
  (void)device->makeCurrent(); // as cuCtxSetCurrent was: best effort
  return device.get();
}

bool mgpu::reportStatus(const Status &s) {
  if (!s.ok())
    std::fprintf(stderr, "cascade_mlir_cuda_runtime: %s\n",
                 s.message().c_str());
  return s.ok();
}

CASCADE_MGPU_EXPORT CUmodule mgpuModuleLoad(void *data, size_t /*size*/) {
  return loadModule(data, -1);
}

CASCADE_MGPU_EXPORT CUmodule mgpuModuleLoadJIT(void *data, int optLevel,
                                               size_t /*size*/) {
  return loadModule(data, optLevel);
}

CASCADE_MGPU_EXPORT void mgpuModuleUnload(CUmodule module) {
  const DriverApi *api = nullptr;
  if (module && getDriver(api).ok())
    api->cuModuleUnload(module);
}

CASCADE_MGPU_EXPORT CUfunction mgpuModuleGetFunction(CUmodule module,
                                                     const char *name) {
  const DriverApi *api = enter();
  CUfunction fn = nullptr;
  if (api)
    report(*api, api->cuModuleGetFunction(&fn, module, name),
           "cuModuleGetFunction");
  return fn;
}

CASCADE_MGPU_EXPORT void
mgpuLaunchKernel(CUfunction function, intptr_t gridX, intptr_t gridY,
                 intptr_t gridZ, intptr_t blockX, intptr_t blockY,
                 intptr_t blockZ, int32_t smem, CUstream stream, void **params,
                 void **extra, size_t /*paramsCount*/) {
  const DriverApi *api = enter();
  if (!api)
    return;
  if (smem > 48 * 1024)
    report(*api,
           api->cuFuncSetAttribute(
               function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, smem),
           "cuFuncSetAttribute");
  report(*api,
         api->cuLaunchKernel(
             function, static_cast<unsigned>(gridX),
             static_cast<unsigned>(gridY), static_cast<unsigned>(gridZ),
             static_cast<unsigned>(blockX), static_cast<unsigned>(blockY),
             static_cast<unsigned>(blockZ), static_cast<unsigned>(smem), stream,
             params, extra),
         "cuLaunchKernel");
}

CASCADE_MGPU_EXPORT CUstream mgpuStreamCreate() {
  const DriverApi *api = enter();
  CUstream stream = nullptr;
  if (api)
    report(*api, api->cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING),
           "cuStreamCreate");
  return stream;
}

CASCADE_MGPU_EXPORT void mgpuStreamDestroy(CUstream stream) {
  if (const DriverApi *api = enter())
    report(*api, api->cuStreamDestroy(stream), "cuStreamDestroy");
}

CASCADE_MGPU_EXPORT void mgpuStreamSynchronize(CUstream stream) {
  if (const DriverApi *api = enter())
    report(*api, api->cuStreamSynchronize(stream), "cuStreamSynchronize");
}

CASCADE_MGPU_EXPORT void mgpuStreamWaitEvent(CUstream stream, CUevent event) {
  if (const DriverApi *api = enter())
    report(*api, api->cuStreamWaitEvent(stream, event, 0), "cuStreamWaitEvent");
}

CASCADE_MGPU_EXPORT CUevent mgpuEventCreate() {
  const DriverApi *api = enter();
  CUevent event = nullptr;
  if (api)
    report(*api, api->cuEventCreate(&event, CU_EVENT_DISABLE_TIMING),
           "cuEventCreate");
  return event;
}

CASCADE_MGPU_EXPORT void mgpuEventDestroy(CUevent event) {
  if (const DriverApi *api = enter())
    report(*api, api->cuEventDestroy(event), "cuEventDestroy");
}

CASCADE_MGPU_EXPORT void mgpuEventSynchronize(CUevent event) {
  if (const DriverApi *api = enter())
    report(*api, api->cuEventSynchronize(event), "cuEventSynchronize");
}

CASCADE_MGPU_EXPORT void mgpuEventRecord(CUevent event, CUstream stream) {
  if (const DriverApi *api = enter())
    report(*api, api->cuEventRecord(event, stream), "cuEventRecord");
}

CASCADE_MGPU_EXPORT void *mgpuMemAlloc(uint64_t sizeBytes, CUstream /*stream*/,
                                       bool isHostShared) {
  const DriverApi *api = enter();
  CUdeviceptr ptr = 0;
  if (!api || sizeBytes == 0)
    return nullptr;
  if (isHostShared)
    report(*api, api->cuMemAllocManaged(&ptr, sizeBytes, CU_MEM_ATTACH_GLOBAL),
           "cuMemAllocManaged");
  else
    report(*api, api->cuMemAlloc(&ptr, sizeBytes), "cuMemAlloc");
  return reinterpret_cast<void *>(ptr);
}

CASCADE_MGPU_EXPORT void mgpuMemFree(void *ptr, CUstream /*stream*/) {
  if (!ptr)
    return;
  if (const DriverApi *api = enter())
    report(*api, api->cuMemFree(reinterpret_cast<CUdeviceptr>(ptr)),
           "cuMemFree");
}

CASCADE_MGPU_EXPORT void mgpuMemcpy(void *dst, void *src, size_t sizeBytes,
                                    CUstream stream) {
  if (const DriverApi *api = enter())
    report(*api,
           api->cuMemcpyAsync(reinterpret_cast<CUdeviceptr>(dst),
                              reinterpret_cast<CUdeviceptr>(src), sizeBytes,
                              stream),
           "cuMemcpyAsync");
}

CASCADE_MGPU_EXPORT void mgpuMemset32(void *dst, unsigned int value,
                                      size_t count, CUstream stream) {
  if (const DriverApi *api = enter())
    report(*api,
           api->cuMemsetD32Async(reinterpret_cast<CUdeviceptr>(dst), value,
                                 count, stream),
           "cuMemsetD32Async");
}

CASCADE_MGPU_EXPORT void mgpuMemset16(void *dst, unsigned short value,
                                      size_t count, CUstream stream) {
  if (const DriverApi *api = enter())
    report(*api,
           api->cuMemsetD16Async(reinterpret_cast<CUdeviceptr>(dst), value,
                                 count, stream),
           "cuMemsetD16Async");
}

CASCADE_MGPU_EXPORT void mgpuSetDefaultDevice(int32_t device) {
  defaultDevice = device;
}
