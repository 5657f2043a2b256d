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
#include <c10/core/GradMode.h>
#include <torch/csrc/Exceptions.h>
#include <torch/csrc/autograd/python_variable.h>
#include <torch/csrc/utils/device_lazy_init.h>
#include <torch/csrc/utils/object_ptr.h>
#include <torch/library.h>

#include <map>
#include <string>

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

//===----------------------------------------------------------------------===//
// C++ kernels of the merges' torch ops
//===----------------------------------------------------------------------===//
//
// cascade_mlir.torch_ops defines cascade_mlir::merge_state,
// merge_state_in_place and merge_states with Python kernels (every backend)
// and, when this bridge is in use, registers these for CUDA: the runtime's
// one-call merges (_gpu.MERGES, through the CascadeMergeOps capsule) called
// straight from the dispatcher, without the Python kernel's frames and
// argument boxing. A call the fast path does not take (bad arguments: the
// checked path names them) or whose inputs require grad (the Python kernel
// raises "no autograd formula") goes to the op's Python kernel, as before.

struct MergeKernels {
  const CascadeMergeOps *ops = nullptr;
  PyObject *capsule = nullptr; ///< keeps ops alive
  PyObject *fallbacks[3] = {}; ///< the ops' Python kernels
  std::map<std::string, torch::Library *> libraries; ///< by dispatch key
};
MergeKernels &mergeKernels() {
  static auto *k = new MergeKernels(); // never destroyed: the dispatcher
  return *k;                           // may call into it at exit
}

enum MergeOp { kMergeState, kMergeStateInPlace, kMergeStates };

/// The GIL, which the dispatcher released when called from Python.
struct Gil {
  PyGILState_STATE state = PyGILState_Ensure();
  Gil() = default;
  Gil(const Gil &) = delete;
  Gil &operator=(const Gil &) = delete;
  ~Gil() { PyGILState_Release(state); }
};

/// The Python exception set, as a C++ exception the dispatcher carries back
/// to the Python caller (who sees the original exception).
[[noreturn]] void throwPython() {
  python_error e;
  e.persist();
  throw e;
}

bool requiresGrad(std::initializer_list<const at::Tensor *> ts) {
  if (!c10::GradMode::is_enabled())
    return false;
  for (const at::Tensor *t : ts)
    if (t->defined() && t->requires_grad())
      return true;
  return false;
}

/// Calls merge `op` on `args` (new references): the runtime's fast path
/// unless `grad`, then the op's Python kernel if that did not take it.
/// `fast` says which answered. A new reference to the result.
THPObjectPtr callMerge(MergeOp op, THPObjectPtr *args, size_t n, bool grad,
                       bool &fast) {
  MergeKernels &k = mergeKernels();
  PyObject *a[5];
  for (size_t i = 0; i < n; ++i)
    a[i] = args[i].get();
  CascadeMergeFn fns[] = {k.ops->merge_state, k.ops->merge_state_in_place,
                          k.ops->merge_states};
  THPObjectPtr r;
  fast = !grad;
  if (fast) {
    r = fns[op](k.ops->self, a);
    if (!r)
      throwPython();
    fast = r.get() != Py_None;
  }
  if (!fast) {
    r = PyObject_Vectorcall(k.fallbacks[op], a, n, nullptr);
    if (!r)
      throwPython();
  }
  return r;
}

THPObjectPtr wrap(const at::Tensor &t) {
  THPObjectPtr o(THPVariable_Wrap(t));
  if (!o)
    throwPython();
  return o;
}

/// A (v, s) pair of tensors returned by a merge.
std::tuple<at::Tensor, at::Tensor> tensorPair(PyObject *r, const char *op) {
  if (!PyTuple_Check(r) || PyTuple_GET_SIZE(r) != 2 ||
      !THPVariable_Check(PyTuple_GET_ITEM(r, 0)) ||
      !THPVariable_Check(PyTuple_GET_ITEM(r, 1))) {
    PyErr_Format(PyExc_TypeError,
                 "cascade_mlir::%s: its kernel returned no (v, s) pair", op);
    throwPython();
  }
  return {THPVariable_Unpack(PyTuple_GET_ITEM(r, 0)),
          THPVariable_Unpack(PyTuple_GET_ITEM(r, 1))};
}

std::tuple<at::Tensor, at::Tensor> mergeStateKernel(const at::Tensor &va,
                                                    const at::Tensor &sa,
                                                    const at::Tensor &vb,
                                                    const at::Tensor &sb) {
  Gil gil;
  THPObjectPtr args[] = {wrap(va), wrap(sa), wrap(vb), wrap(sb)};
  bool fast = false;
  THPObjectPtr r =
      callMerge(kMergeState, args, 4, requiresGrad({&va, &sa, &vb, &sb}), fast);
  return tensorPair(r.get(), "merge_state");
}

void mergeStateInPlaceKernel(const at::Tensor &v, const at::Tensor &s,
                             const at::Tensor &vOther, const at::Tensor &sOther,
                             const std::optional<at::Tensor> &mask) {
  Gil gil;
  Py_INCREF(Py_None);
  THPObjectPtr none(Py_None);
  THPObjectPtr args[] = {wrap(v), wrap(s), wrap(vOther), wrap(sOther),
                         mask ? wrap(*mask) : std::move(none)};
  bool fast = false;
  THPObjectPtr r = callMerge(kMergeStateInPlace, args, 5,
                             requiresGrad({&v, &s, &vOther, &sOther}), fast);
  if (fast) { // the Python kernel bumps them itself, as ADInplaceOrView would
    v.unsafeGetTensorImpl()->bump_version();
    s.unsafeGetTensorImpl()->bump_version();
  }
}

std::tuple<at::Tensor, at::Tensor> mergeStatesKernel(const at::Tensor &v,
                                                     const at::Tensor &s) {
  Gil gil;
  THPObjectPtr args[] = {wrap(v), wrap(s)};
  bool fast = false;
  THPObjectPtr r =
      callMerge(kMergeStates, args, 2, requiresGrad({&v, &s}), fast);
  return tensorPair(r.get(), "merge_states");
}

/// register_merge_kernels(merges_capsule, fallbacks, dispatch_key="CUDA")
PyObject *registerMergeKernels(PyObject * /*module*/, PyObject *args) {
  HANDLE_TH_ERRORS
  PyObject *capsule = nullptr, *fallbacks = nullptr;
  const char *key = "CUDA";
  if (!PyArg_ParseTuple(args, "OO!|s", &capsule, &PyTuple_Type, &fallbacks,
                        &key))
    return nullptr;
  auto *ops = static_cast<const CascadeMergeOps *>(
      PyCapsule_GetPointer(capsule, CASCADE_RUNTIME_MERGES_CAPSULE));
  if (!ops)
    return nullptr;
  if (ops->abi != CASCADE_TORCH_BRIDGE_ABI || ops->size < sizeof(*ops)) {
    PyErr_SetString(PyExc_ValueError,
                    "the runtime's merges capsule has another ABI");
    return nullptr;
  }
  if (PyTuple_GET_SIZE(fallbacks) != 3) {
    PyErr_SetString(PyExc_ValueError,
                    "fallbacks: the Python kernels of merge_state, "
                    "merge_state_in_place and merge_states");
    return nullptr;
  }
  std::optional<c10::DispatchKey> k;
  if (std::string(key) == "CUDA")
    k = c10::DispatchKey::CUDA;
  else if (std::string(key) == "CPU")
    k = c10::DispatchKey::CPU;
  else {
    PyErr_Format(PyExc_ValueError, "dispatch_key must be CUDA or CPU, not %s",
                 key);
    return nullptr;
  }
  MergeKernels &m = mergeKernels();
  if (m.libraries.count(key))
    Py_RETURN_FALSE; // registered before
  // The kernels read these from now on (and forever: never released).
  Py_INCREF(capsule);
  Py_XDECREF(m.capsule);
  m.capsule = capsule;
  m.ops = ops;
  for (int i = 0; i < 3; ++i) {
    PyObject *f = PyTuple_GET_ITEM(fallbacks, i);
    Py_INCREF(f);
    Py_XDECREF(m.fallbacks[i]);
    m.fallbacks[i] = f;
  }
  auto *lib = new torch::Library(torch::Library::IMPL, "cascade_mlir", k,
                                 __FILE__, __LINE__);
  lib->impl("merge_state", TORCH_FN(mergeStateKernel));
  lib->impl("merge_state_in_place", TORCH_FN(mergeStateInPlaceKernel));
  lib->impl("merge_states", TORCH_FN(mergeStatesKernel));
  m.libraries[key] = lib;
  Py_RETURN_TRUE;
  END_HANDLE_TH_ERRORS
}

PyMethodDef kMethods[] = {
    {"register_merge_kernels", registerMergeKernels, METH_VARARGS,
     "register_merge_kernels(merges_capsule, fallbacks, dispatch_key='CUDA'): "
     "C++ kernels for cascade_mlir::merge_state, merge_state_in_place and "
     "merge_states on one dispatch key (CUDA; CPU for tests) over the "
     "runtime's merges (_gpu.MERGES._capsule()), falling back to the ops' "
     "Python kernels (a tuple of the three). True if registered now, False "
     "if that key's were registered before."},
    {nullptr, nullptr, 0, nullptr}};

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
    kMethods,
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
