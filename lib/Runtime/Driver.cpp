//===- Driver.cpp - The CUDA driver API, loaded at run time ---------------===//

#include "cascade/Runtime/Driver.h"

#include <cstdlib>
#include <dlfcn.h>
#include <mutex>
#include <string>

namespace cascade::runtime::cuda {

namespace {

template <typename Fn>
bool resolve(void *handle, const char *symbol, Fn &fn, std::string &missing) {
  void *p = dlsym(handle, symbol);
  if (!p) {
    if (missing.empty())
      missing = symbol;
    return false;
  }
  fn = reinterpret_cast<Fn>(p);
  return true;
}

} // namespace

Status loadDriverLibrary(const char *path, DriverApi &out) {
  dlerror();
  void *handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char *why = dlerror();
    return makeError(ErrorCode::DriverUnavailable,
                     "cannot load the CUDA driver %s: %s", path,
                     why ? why : "unknown dlopen error");
  }
  DriverApi api{};
  std::string missing;
#define CASCADE_RESOLVE(field, symbol)                                         \
  resolve(handle, symbol, api.field, missing)
  CASCADE_RESOLVE(cuInit, "cuInit");
  CASCADE_RESOLVE(cuGetErrorName, "cuGetErrorName");
  CASCADE_RESOLVE(cuGetErrorString, "cuGetErrorString");
  CASCADE_RESOLVE(cuDeviceGet, "cuDeviceGet");
  CASCADE_RESOLVE(cuDeviceGetCount, "cuDeviceGetCount");
  CASCADE_RESOLVE(cuDeviceGetAttribute, "cuDeviceGetAttribute");
  CASCADE_RESOLVE(cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain");
  CASCADE_RESOLVE(cuCtxSetCurrent, "cuCtxSetCurrent");
  CASCADE_RESOLVE(cuCtxGetCurrent, "cuCtxGetCurrent");
  CASCADE_RESOLVE(cuCtxSynchronize, "cuCtxSynchronize");
  CASCADE_RESOLVE(cuModuleLoadData, "cuModuleLoadData");
  CASCADE_RESOLVE(cuModuleLoadDataEx, "cuModuleLoadDataEx");
  CASCADE_RESOLVE(cuModuleUnload, "cuModuleUnload");
  CASCADE_RESOLVE(cuModuleGetFunction, "cuModuleGetFunction");
  CASCADE_RESOLVE(cuFuncSetAttribute, "cuFuncSetAttribute");
  CASCADE_RESOLVE(cuOccupancyMaxActiveBlocksPerMultiprocessor,
                  "cuOccupancyMaxActiveBlocksPerMultiprocessor");
  CASCADE_RESOLVE(cuLaunchKernel, "cuLaunchKernel");
  CASCADE_RESOLVE(cuStreamCreate, "cuStreamCreate");
  CASCADE_RESOLVE(cuStreamDestroy, "cuStreamDestroy_v2");
  CASCADE_RESOLVE(cuStreamSynchronize, "cuStreamSynchronize");
  CASCADE_RESOLVE(cuStreamWaitEvent, "cuStreamWaitEvent");
  CASCADE_RESOLVE(cuEventCreate, "cuEventCreate");
  CASCADE_RESOLVE(cuEventDestroy, "cuEventDestroy_v2");
  CASCADE_RESOLVE(cuEventRecord, "cuEventRecord");
  CASCADE_RESOLVE(cuEventSynchronize, "cuEventSynchronize");
  CASCADE_RESOLVE(cuEventElapsedTime, "cuEventElapsedTime");
  CASCADE_RESOLVE(cuMemAlloc, "cuMemAlloc_v2");
  CASCADE_RESOLVE(cuMemFree, "cuMemFree_v2");
  CASCADE_RESOLVE(cuMemAllocManaged, "cuMemAllocManaged");
  CASCADE_RESOLVE(cuMemAllocHost, "cuMemAllocHost_v2");
  CASCADE_RESOLVE(cuMemFreeHost, "cuMemFreeHost");
  CASCADE_RESOLVE(cuMemcpy, "cuMemcpy");
  CASCADE_RESOLVE(cuMemcpyAsync, "cuMemcpyAsync");
  CASCADE_RESOLVE(cuMemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2");
  CASCADE_RESOLVE(cuMemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2");
  CASCADE_RESOLVE(cuMemsetD8Async, "cuMemsetD8Async");
  CASCADE_RESOLVE(cuMemsetD16Async, "cuMemsetD16Async");
  CASCADE_RESOLVE(cuMemsetD32Async, "cuMemsetD32Async");
  CASCADE_RESOLVE(cuStreamBeginCapture, "cuStreamBeginCapture_v2");
  CASCADE_RESOLVE(cuStreamEndCapture, "cuStreamEndCapture");
  CASCADE_RESOLVE(cuGraphInstantiateWithFlags, "cuGraphInstantiateWithFlags");
  CASCADE_RESOLVE(cuGraphLaunch, "cuGraphLaunch");
  CASCADE_RESOLVE(cuGraphExecDestroy, "cuGraphExecDestroy");
  CASCADE_RESOLVE(cuGraphDestroy, "cuGraphDestroy");
#undef CASCADE_RESOLVE
  // Optional: without them a Program launches its kernels one by one.
  std::string optionalMissing;
  if (!resolve(handle, "cuGraphCreate", api.cuGraphCreate, optionalMissing) ||
      !resolve(handle, "cuGraphAddKernelNode_v2", api.cuGraphAddKernelNode,
               optionalMissing) ||
      !resolve(handle, "cuGraphExecKernelNodeSetParams_v2",
               api.cuGraphExecKernelNodeSetParams, optionalMissing) ||
      !resolve(handle, "cuStreamIsCapturing", api.cuStreamIsCapturing,
               optionalMissing)) {
    api.cuGraphCreate = nullptr;
    api.cuGraphAddKernelNode = nullptr;
    api.cuGraphExecKernelNodeSetParams = nullptr;
    api.cuStreamIsCapturing = nullptr;
  }
  // Optional: node priorities (all three, or none).
  std::string noPriorities;
  if (!resolve(handle, "cuGraphKernelNodeSetAttribute",
               api.cuGraphKernelNodeSetAttribute, noPriorities) ||
      !resolve(handle, "cuCtxGetStreamPriorityRange",
               api.cuCtxGetStreamPriorityRange, noPriorities) ||
      !resolve(handle, "cuStreamGetPriority", api.cuStreamGetPriority,
               noPriorities)) {
    api.cuGraphKernelNodeSetAttribute = nullptr;
    api.cuCtxGetStreamPriorityRange = nullptr;
    api.cuStreamGetPriority = nullptr;
  }
  // Optional: programmatic dependent launch (each alone).
  std::string noPdl;
  resolve(handle, "cuLaunchKernelEx", api.cuLaunchKernelEx, noPdl);
  resolve(handle, "cuGraphAddDependencies_v2", api.cuGraphAddDependencies,
          noPdl);
  // Optional: only the Hopper kernels' tensor maps need it.
  std::string noTensorMaps;
  resolve(handle, "cuTensorMapEncodeTiled", api.cuTensorMapEncodeTiled,
          noTensorMaps);
  if (!missing.empty()) {
    dlclose(handle);
    return makeError(ErrorCode::DriverUnavailable,
                     "the CUDA driver %s lacks %s (driver too old?)", path,
                     missing.c_str());
  }
  out = api; // the handle stays open for the life of the process
  return Status::success();
}

Status getDriver(const DriverApi *&out) {
  static std::once_flag once;
  static DriverApi api;
  static Status status;
  std::call_once(once, [] {
    const char *path = std::getenv("CASCADE_CUDA_DRIVER");
    if (!path || !*path)
      path = "libcuda.so.1";
    status = loadDriverLibrary(path, api);
    if (!status.ok())
      return;
    CUresult r = api.cuInit(0);
    if (r != CUDA_SUCCESS) {
      Status s = checkCuda(api, r, "cuInit");
      status = Status(ErrorCode::DriverUnavailable, s.message());
    }
  });
  if (!status.ok())
    return status;
  out = &api;
  return Status::success();
}

Status checkCuda(const DriverApi &api, CUresult result, const char *call) {
  if (result == CUDA_SUCCESS)
    return Status::success();
  const char *name = nullptr, *text = nullptr;
  if (api.cuGetErrorName)
    api.cuGetErrorName(result, &name);
  if (api.cuGetErrorString)
    api.cuGetErrorString(result, &text);
  return makeError(ErrorCode::Driver, "%s failed: %s (%s)", call,
                   name ? name : ("CUresult " + std::to_string(result)).c_str(),
                   text ? text : "no description");
}

} // namespace cascade::runtime::cuda
