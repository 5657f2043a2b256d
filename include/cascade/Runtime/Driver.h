//===- Driver.h - The CUDA driver API, loaded at run time -------*- C++ -*-===//
//
// The runtime never links libcuda: it dlopens libcuda.so.1 (or the file named
// by $CASCADE_CUDA_DRIVER) on first use and declares the few driver types it
// needs itself, so it builds and its GPU-free parts run on machines without
// a driver. Values of the enums below are those of CUDA's cuda.h.
//
//===----------------------------------------------------------------------===//

#ifndef CASCADE_RUNTIME_DRIVER_H
#define CASCADE_RUNTIME_DRIVER_H

#include "cascade/Runtime/Status.h"

#include <cstddef>
#include <cstdint>

namespace cascade::runtime::cuda {

using CUresult = int;
using CUdevice = int;
using CUdeviceptr = unsigned long long;
struct CUctx_st;
struct CUmod_st;
struct CUfunc_st;
struct CUstream_st;
struct CUevent_st;
struct CUgraph_st;
struct CUgraphExec_st;
struct CUgraphNode_st;
using CUcontext = CUctx_st *;
using CUmodule = CUmod_st *;
using CUfunction = CUfunc_st *;
using CUstream = CUstream_st *;
using CUevent = CUevent_st *;
using CUgraph = CUgraph_st *;
using CUgraphExec = CUgraphExec_st *;
using CUgraphNode = CUgraphNode_st *;
using CUjit_option = int;

constexpr CUresult CUDA_SUCCESS = 0;
constexpr int CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16;
constexpr int CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75;
constexpr int CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76;
constexpr int CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8;
constexpr unsigned CU_STREAM_NON_BLOCKING = 1;
constexpr unsigned CU_MEM_ATTACH_GLOBAL = 1;
constexpr unsigned CU_EVENT_DEFAULT = 0;
constexpr unsigned CU_EVENT_DISABLE_TIMING = 2;
constexpr int CU_STREAM_CAPTURE_MODE_GLOBAL = 0;
constexpr int CU_STREAM_CAPTURE_MODE_THREAD_LOCAL = 1;
constexpr int CU_STREAM_CAPTURE_STATUS_NONE = 0;
constexpr CUjit_option CU_JIT_INFO_LOG_BUFFER = 3;
constexpr CUjit_option CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES = 4;
constexpr CUjit_option CU_JIT_ERROR_LOG_BUFFER = 5;
constexpr CUjit_option CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES = 6;
constexpr CUjit_option CU_JIT_OPTIMIZATION_LEVEL = 7;

/// A kernel node of a graph (cuda.h's CUDA_KERNEL_NODE_PARAMS_v2).
struct CudaKernelNodeParams {
  CUfunction func;
  unsigned gridDimX, gridDimY, gridDimZ;
  unsigned blockDimX, blockDimY, blockDimZ;
  unsigned sharedMemBytes;
  void **kernelParams;
  void **extra;
  void *kern; ///< CUkernel, unused (func is set)
  CUcontext ctx;
};

/// A launch attribute's value (cuda.h's CUlaunchAttributeValue, a 64-byte
/// union); only the members below are used.
union CudaLaunchAttributeValue {
  int priority;
  int programmaticStreamSerializationAllowed;
  char pad[64];
};
/// cuda.h's CU_LAUNCH_ATTRIBUTE_PRIORITY.
constexpr int CU_LAUNCH_ATTRIBUTE_PRIORITY = 8;
/// cuda.h's CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION (value:
/// an int, 1 = the launch may start before the previous kernel of its
/// stream completes; the kernel itself waits with griddepcontrol.wait).
constexpr int CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION = 6;
/// cuda.h's CUlaunchAttribute: an id, padding to 8 bytes, a value.
struct CudaLaunchAttribute {
  int id;
  char pad[8 - sizeof(int)];
  CudaLaunchAttributeValue value;
};
/// cuda.h's CUlaunchConfig (cuLaunchKernelEx).
struct CudaLaunchConfig {
  unsigned gridDimX, gridDimY, gridDimZ;
  unsigned blockDimX, blockDimY, blockDimZ;
  unsigned sharedMemBytes;
  CUstream hStream;
  CudaLaunchAttribute *attrs;
  unsigned numAttrs;
};
/// cuda.h's CUgraphEdgeData (CUDA 12.3): an edge of a graph; a
/// programmatic edge from a kernel node's programmatic port lets the
/// downstream kernel start once every block upstream has run
/// griddepcontrol.launch_dependents (or exited).
struct CudaGraphEdgeData {
  unsigned char from_port, to_port, type;
  unsigned char reserved[5];
};
constexpr unsigned char CU_GRAPH_KERNEL_NODE_PORT_PROGRAMMATIC = 1;
constexpr unsigned char CU_GRAPH_DEPENDENCY_TYPE_PROGRAMMATIC = 1;
/// cuda.h's CUDA_GRAPH_INSTANTIATE_FLAG_USE_NODE_PRIORITY: a graph launch
/// schedules each kernel node at its own priority attribute instead of the
/// launch stream's.
constexpr unsigned long long CUDA_GRAPH_INSTANTIATE_FLAG_USE_NODE_PRIORITY = 8;

/// The driver entry points the runtime uses (versioned symbols resolved).
struct DriverApi {
  CUresult (*cuInit)(unsigned);
  CUresult (*cuGetErrorName)(CUresult, const char **);
  CUresult (*cuGetErrorString)(CUresult, const char **);
  CUresult (*cuDeviceGet)(CUdevice *, int);
  CUresult (*cuDeviceGetCount)(int *);
  CUresult (*cuDeviceGetAttribute)(int *, int, CUdevice);
  CUresult (*cuDevicePrimaryCtxRetain)(CUcontext *, CUdevice);
  CUresult (*cuCtxSetCurrent)(CUcontext);
  CUresult (*cuCtxGetCurrent)(CUcontext *);
  CUresult (*cuCtxSynchronize)();
  CUresult (*cuModuleLoadData)(CUmodule *, const void *);
  CUresult (*cuModuleLoadDataEx)(CUmodule *, const void *, unsigned,
                                 CUjit_option *, void **);
  CUresult (*cuModuleUnload)(CUmodule);
  CUresult (*cuModuleGetFunction)(CUfunction *, CUmodule, const char *);
  CUresult (*cuFuncSetAttribute)(CUfunction, int, int);
  CUresult (*cuOccupancyMaxActiveBlocksPerMultiprocessor)(int *, CUfunction,
                                                          int, size_t);
  CUresult (*cuLaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned,
                             unsigned, unsigned, unsigned, CUstream, void **,
                             void **);
  CUresult (*cuStreamCreate)(CUstream *, unsigned);
  CUresult (*cuStreamDestroy)(CUstream);
  CUresult (*cuStreamSynchronize)(CUstream);
  CUresult (*cuStreamWaitEvent)(CUstream, CUevent, unsigned);
  CUresult (*cuEventCreate)(CUevent *, unsigned);
  CUresult (*cuEventDestroy)(CUevent);
  CUresult (*cuEventRecord)(CUevent, CUstream);
  CUresult (*cuEventSynchronize)(CUevent);
  CUresult (*cuEventElapsedTime)(float *, CUevent, CUevent);
  CUresult (*cuMemAlloc)(CUdeviceptr *, size_t);
  CUresult (*cuMemFree)(CUdeviceptr);
  CUresult (*cuMemAllocManaged)(CUdeviceptr *, size_t, unsigned);
  CUresult (*cuMemAllocHost)(void **, size_t);
  CUresult (*cuMemFreeHost)(void *);
  CUresult (*cuMemcpy)(CUdeviceptr, CUdeviceptr, size_t);
  CUresult (*cuMemcpyAsync)(CUdeviceptr, CUdeviceptr, size_t, CUstream);
  CUresult (*cuMemcpyHtoDAsync)(CUdeviceptr, const void *, size_t, CUstream);
  CUresult (*cuMemcpyDtoHAsync)(void *, CUdeviceptr, size_t, CUstream);
  CUresult (*cuMemsetD8Async)(CUdeviceptr, unsigned char, size_t, CUstream);
  CUresult (*cuMemsetD16Async)(CUdeviceptr, unsigned short, size_t, CUstream);
  CUresult (*cuMemsetD32Async)(CUdeviceptr, unsigned, size_t, CUstream);
  CUresult (*cuStreamBeginCapture)(CUstream, int);
  CUresult (*cuStreamEndCapture)(CUstream, CUgraph *);
  CUresult (*cuGraphInstantiateWithFlags)(CUgraphExec *, CUgraph,
                                          unsigned long long);
  CUresult (*cuGraphLaunch)(CUgraphExec, CUstream);
  CUresult (*cuGraphExecDestroy)(CUgraphExec);
  CUresult (*cuGraphDestroy)(CUgraph);

  // Optional (null when the driver lacks them): graphs built node by node,
  // whose kernel parameters are updated in place between launches.
  CUresult (*cuGraphCreate)(CUgraph *, unsigned);
  CUresult (*cuGraphAddKernelNode)(CUgraphNode *, CUgraph, const CUgraphNode *,
                                   size_t, const CudaKernelNodeParams *);
  CUresult (*cuGraphExecKernelNodeSetParams)(CUgraphExec, CUgraphNode,
                                             const CudaKernelNodeParams *);
  CUresult (*cuStreamIsCapturing)(CUstream, int *);
  // Optional: per-node priorities of a built graph (without them every
  // node runs at the launch stream's priority).
  CUresult (*cuGraphKernelNodeSetAttribute)(CUgraphNode, int,
                                            const CudaLaunchAttributeValue *);
  CUresult (*cuCtxGetStreamPriorityRange)(int *, int *);
  CUresult (*cuStreamGetPriority)(CUstream, int *);
  // Optional: programmatic dependent launch, on a stream (CUDA 12.0) and
  // as graph edges (12.3).
  CUresult (*cuLaunchKernelEx)(const CudaLaunchConfig *, CUfunction, void **,
                               void **);
  CUresult (*cuGraphAddDependencies)(CUgraph, const CUgraphNode *,
                                     const CUgraphNode *,
                                     const CudaGraphEdgeData *, size_t);
  // Optional (null before CUDA 12.0 drivers): TMA tensor maps. The enums
  // are passed as their cuda.h values; TensorMap.h checks the description
  // and reports a missing entry point when a map is encoded.
  CUresult (*cuTensorMapEncodeTiled)(
      void *tensorMap, int dataType, unsigned rank, void *globalAddress,
      const uint64_t *globalDim, const uint64_t *globalStrides,
      const uint32_t *boxDim, const uint32_t *elementStrides, int interleave,
      int swizzle, int l2Promotion, int oobFill);
  /// Whether the optional graph-building entry points were found.
  bool canBuildGraphs() const {
    return cuGraphCreate && cuGraphAddKernelNode &&
           cuGraphExecKernelNodeSetParams && cuStreamIsCapturing;
  }
  /// Whether a built graph's nodes can be given priorities.
  bool canPrioritizeNodes() const {
    return cuGraphKernelNodeSetAttribute && cuCtxGetStreamPriorityRange &&
           cuStreamGetPriority;
  }
};

/// The process-wide driver: loaded and cuInit'ed once. Fails with
/// ErrorCode::DriverUnavailable (and the dlopen/cuInit reason) when there is
/// no driver or no device; the same error is returned on every later call.
Status getDriver(const DriverApi *&out);

/// Loads a driver library from `path` without caching (for tests); does not
/// call cuInit. `out` is filled only on success.
Status loadDriverLibrary(const char *path, DriverApi &out);

/// Turns a CUresult into a Status "<call> failed: CUDA_ERROR_X (text)".
Status checkCuda(const DriverApi &api, CUresult result, const char *call);

} // namespace cascade::runtime::cuda

#endif // CASCADE_RUNTIME_DRIVER_H
