//===- TorchBridge.cpp - cascade_mlir._torch_bridge: torch without Python -===//
//
// An optional extension module compiled against one torch (its headers,
// libc10, libtorch_cpu, libtorch_python): it reads torch tensors and
// allocates them in C++ (THPVariable_Unpack, at::empty_like,
// at::empty_strided) for cascade_mlir._runtime, which has no torch
// dependency and otherwise asks torch through Python (a handful of
// attribute lookups and method calls a tensor, ~2 us on the H200's host).
//
// A plain CPython module (no pybind11: torch bundles its own, the package
// another): PyInit__torch_bridge only makes the module, its TORCH_VERSION
// string and the capsule of TorchBridgeABI.h; nothing of torch is touched
// before cascade_mlir._frameworks has compared TORCH_VERSION with the
// running torch.__version__ (and the runtime again, from the capsule).
//
//===----------------------------------------------------------------------===//

#include "TorchBridgeABI.h"

#include <ATen/ops/empty_like.h>
#include <ATen/ops/empty_strided.h>
#include <torch/csrc/Exceptions.h>
#include <torch/csrc/autograd/python_variable.h>
#include <torch/csrc/utils/device_lazy_init.h>

#ifndef CASCADE_TORCH_VERSION
#error "CASCADE_TORCH_VERSION (torch.__version__ of the headers) is not defined"
#endif

namespace {

/// torch's scalar types by CASCADE_TORCH_* code.
constexpr c10::ScalarType kScalarTypes[] = {
    c10::ScalarType::Half,       c10::ScalarType::BFloat16,
    c10::ScalarType::Float,      c10::ScalarType::Double,
    c10::ScalarType::Int,        c10::ScalarType::Long,
    c10::ScalarType::Byte,       c10::ScalarType::Char,
    c10::ScalarType::Bool,       c10::ScalarType::Float8_e4m3fn,
    c10::ScalarType::Float8_e5m2};
static_assert(std::size(kScalarTypes) == CASCADE_TORCH_OTHER);

int32_t codeOf(c10::ScalarType t) {
  for (int32_t i = 0; i < CASCADE_TORCH_OTHER; ++i)
    if (kScalarTypes[i] == t)
      return i;
  return CASCADE_TORCH_OTHER;
}

/// The tensor of `obj` when the bridge takes it: a torch.Tensor or
/// Parameter (not a subclass, whose Python methods may answer otherwise),
/// strided with storage, on the host or a CUDA device, at most
/// CASCADE_TORCH_BRIDGE_MAX_DIMS dimensions. nullptr: not taken.
const at::Tensor *taken(PyObject *obj) {
  if (!THPVariable_CheckExact(obj))
    return nullptr;
  const at::Tensor &t = THPVariable_Unpack(obj);
  if (!t.defined() || t.layout() != c10::kStrided || t.is_nested() ||
      !t.has_storage() || t.dim() > CASCADE_TORCH_BRIDGE_MAX_DIMS)
    return nullptr;
  const c10::DeviceType d = t.device().type();
  if (d != c10::DeviceType::CPU && d != c10::DeviceType::CUDA)
    return nullptr;
  return &t;
}

/// The address of a tensor's element 0, as Tensor.data_ptr() reads it.
uint64_t address(const at::Tensor &t) {
  return reinterpret_cast<uint64_t>(t.data_ptr());
}

/// Hands a new tensor to the caller: a new reference and its address.
int handOut(at::Tensor &&t, PyObject **out, uint64_t *data) {
  *data = address(t);
  *out = THPVariable_Wrap(std::move(t));
  return *out ? 0 : -1;
}

int probe(PyObject *obj, CascadeTorchTensor *out) {
  HANDLE_TH_ERRORS
  const at::Tensor *tp = taken(obj);
  if (!tp)
    return 1;
  const at::Tensor &t = *tp;
  out->data = address(t);
  out->dtype = codeOf(t.scalar_type());
  out->device = t.is_cuda() ? t.get_device() : -1;
  out->ndim = static_cast<int32_t>(t.dim());
  out->contiguous = t.is_contiguous() ? 1 : 0;
  const c10::IntArrayRef sizes = t.sizes(), strides = t.strides();
  for (int32_t i = 0; i < out->ndim; ++i) {
    out->sizes[i] = sizes[i];
    out->strides[i] = strides[i];
  }
  return 0;
  END_HANDLE_TH_ERRORS_RET(-1)
}

int emptyLike(PyObject *like, PyObject **out, uint64_t *data) {
  HANDLE_TH_ERRORS
  const at::Tensor *t = taken(like);
  if (!t)
    return 1;
  return handOut(at::empty_like(*t), out, data);
  END_HANDLE_TH_ERRORS_RET(-1)
}

int emptyStrided(const CascadeTorchTensor *desc, PyObject **out,
                 uint64_t *data) {
  HANDLE_TH_ERRORS
  if (desc->dtype < 0 || desc->dtype >= CASCADE_TORCH_OTHER || desc->ndim < 0 ||
      desc->ndim > CASCADE_TORCH_BRIDGE_MAX_DIMS) {
    PyErr_SetString(PyExc_ValueError,
                    "_torch_bridge.empty_strided: no such dtype or rank");
    return -1;
  }
  at::Device device =
      desc->device < 0
          ? at::Device(c10::DeviceType::CPU)
          : at::Device(c10::DeviceType::CUDA,
                       static_cast<c10::DeviceIndex>(desc->device));
  torch::utils::maybe_initialize_device(device);
  const c10::IntArrayRef sizes(desc->sizes, desc->ndim),
      strides(desc->strides, desc->ndim);
  return handOut(
      at::empty_strided(
          sizes, strides,
          at::TensorOptions().dtype(kScalarTypes[desc->dtype]).device(device)),
      out, data);
  END_HANDLE_TH_ERRORS_RET(-1)
}

const CascadeTorchBridge kBridge = {CASCADE_TORCH_BRIDGE_ABI,
                                    sizeof(CascadeTorchBridge),
                                    CASCADE_TORCH_VERSION,
                                    probe,
                                    emptyLike,
                                    emptyStrided};

PyModuleDef kModule = {
    PyModuleDef_HEAD_INIT,
    "_torch_bridge",
    "torch tensors read and allocated in C++ for cascade_mlir._runtime "
    "(python_bindings/src/TorchBridgeABI.h); built for "
    "torch " CASCADE_TORCH_VERSION ".",
    -1,
    nullptr,
    nullptr,
    nullptr,
    nullptr,
    nullptr};

} // namespace

PyMODINIT_FUNC PyInit__torch_bridge() {
  PyObject *m = PyModule_Create(&kModule);
  if (!m)
    return nullptr;
  PyObject *capsule = PyCapsule_New(const_cast<CascadeTorchBridge *>(&kBridge),
                                    CASCADE_TORCH_BRIDGE_CAPSULE, nullptr);
  if (!capsule || PyModule_AddObject(m, "CAPSULE", capsule) < 0) {
    Py_XDECREF(capsule); // PyModule_AddObject steals it only on success
    Py_DECREF(m);
    return nullptr;
  }
  if (PyModule_AddStringConstant(m, "TORCH_VERSION", CASCADE_TORCH_VERSION) <
          0 ||
      PyModule_AddIntConstant(m, "ABI", CASCADE_TORCH_BRIDGE_ABI) < 0) {
    Py_DECREF(m);
    return nullptr;
  }
  return m;
}
