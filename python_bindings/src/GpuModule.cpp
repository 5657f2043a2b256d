//===- GpuModule.cpp - GPU execution for cascade_mlir._runtime ------------===//
//
// The GPU half of cascade_mlir._runtime: Device (one CUDA device: the
// launcher and the kernel bundles loaded into it, GpuDevice.cpp), Program
// (one wrapper's plan, uploaded, with its launches bound once; run() checks
// the caller's tensors, writes their addresses into the bound launches and
// launches on the caller's current stream, ProgramHandle.cpp), MergeOps
// (MergeOps.cpp) and the module's functions, defined here with the helpers
// tests call. Checks raise ValueError / TypeError naming the argument
// before anything is launched (CallChecks.cpp).
//
//===----------------------------------------------------------------------===//

#include "GpuModule.h"
#include "CallChecks.h"
#include "GpuDevice.h"
#include "TensorArgs.h"

#include "cascade/Runtime/Program.h"

#include <pybind11/stl.h>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

namespace py = pybind11;
using namespace cascade::runtime;

namespace cascade::python {

namespace {

/// Probes a tensor the way run() does (for tests and diagnostics); bridge
/// false: torch tensors through Python even with the bridge.
py::dict probeForPython(py::handle obj, const std::string &name, bool bridge) {
  TensorArg a = probe(obj, name.c_str(), -1, bridge);
  py::dict d;
  d["ptr"] = a.ptr;
  d["device"] = a.deviceString();
  d["dtype"] = elemTypeName(a.dtype);
  std::vector<int64_t> shape(a.shape, a.shape + a.ndim);
  std::vector<int64_t> strides(a.strides, a.strides + a.ndim);
  d["shape"] = shape;
  d["strides"] = strides;
  d["contiguous"] = a.contiguous();
  d["torch"] = a.torch;
  d["bridged"] = a.bridged;
  return d;
}

/// The torch allocations of run() and the merges, for tests: (the new
/// tensor, the address the bindings launch with).
py::tuple torchEmptyLikeForPython(py::handle like) {
  TensorArg out;
  py::object t = torchEmptyLike(like, probe(like, "like"), out);
  return py::make_tuple(t, out.ptr);
}
py::tuple torchEmptyStridedForPython(const std::vector<int64_t> &shape,
                                     const std::vector<int64_t> &strides,
                                     const std::string &dtype, int device) {
  TensorArg like;
  if (shape.size() != strides.size() || shape.size() > 8)
    throw py::value_error("shape and strides: one entry per dimension, <= 8");
  like.ndim = static_cast<int>(shape.size());
  std::copy(shape.begin(), shape.end(), like.shape);
  std::copy(strides.begin(), strides.end(), like.strides);
  like.cuda = device >= 0;
  like.device = device;
  for (int i = 0; i < static_cast<int>(ElemType::Other); ++i)
    if (dtype == elemTypeName(static_cast<ElemType>(i)))
      like.dtype = static_cast<ElemType>(i);
  TensorArg out;
  py::object t = torchEmptyStrided(like, out);
  return py::make_tuple(t, out.ptr);
}

} // namespace

void registerGpu(py::module_ &m) {
  m.def("_register_torch", &registerTorch, py::arg("torch"),
        py::arg("bridge") = py::none(),
        "Called by the package when torch is imported; bridge: "
        "cascade_mlir._torch_bridge.CAPSULE (None: torch through Python).");
  m.def("_check_call", &checkCall, py::arg("q"), py::arg("paged_kv_cache"),
        py::arg("out"), py::arg("lse"), py::arg("config"), py::arg("rows"),
        py::arg("max_page_id"), py::arg("device") = -1,
        "run()'s argument checks, without a device (for tests).");
  m.def(
      "load_bundle",
      [](const std::string &dir) {
        Bundle b;
        check(loadBundle(dir, b));
        std::vector<std::pair<std::string, std::string>> out;
        for (const KernelSpec &k : b.kernels)
          out.emplace_back(k.name, k.op);
        return out;
      },
      py::arg("dir"),
      "Reads a kernel bundle as the launcher does (no GPU): (name, op) of "
      "every kernel.");
  m.def("_probe", &probeForPython, py::arg("tensor"), py::arg("name") = "x",
        py::arg("bridge") = true,
        "What run() reads from a tensor (device, dtype, shape, strides); "
        "bridge=False reads a torch tensor through Python even where "
        "cascade_mlir._torch_bridge would read it.");
  m.def("_stand_in_device", &setStandInDevice, py::arg("ordinal"),
        "For tests on the stand-in CUDA driver (tests/fake_cuda), whose "
        "device memory is host memory: torch tensors on the host are read "
        "as on cuda:ordinal, on stream 0 (-1: off).");
  m.def("_torch_bridge_version", &torchBridgeVersion,
        "The torch version of the cascade_mlir._torch_bridge in use, or None "
        "(torch tensors read and allocated through Python).");
  m.def("_torch_empty_like", &torchEmptyLikeForPython, py::arg("like"),
        "run()'s output allocation (for tests): (tensor, address).");
  m.def("_torch_empty_strided", &torchEmptyStridedForPython, py::arg("shape"),
        py::arg("strides"), py::arg("dtype"), py::arg("device"),
        "The merges' output allocation (for tests): (tensor, address); "
        "device -1 is the host.");
  m.def(
      "device_count",
      []() {
        const cuda::DriverApi *api = nullptr;
        if (!cuda::getDriver(api).ok())
          return 0;
        int n = 0;
        return api->cuDeviceGetCount(&n) == cuda::CUDA_SUCCESS ? n : 0;
      },
      "CUDA devices the driver sees (0 without a driver).");
  bindDevice(m);
  bindMergeOps(m);
  bindProgram(m);
}

} // namespace cascade::python
