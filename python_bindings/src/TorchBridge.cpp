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

#include <ATen/ops/empty.h>
#include <ATen/ops/empty_like.h>
#include <ATen/ops/empty_strided.h>
#include <c10/core/GradMode.h>
#include <c10/core/impl/VirtualGuardImpl.h>
#include <torch/csrc/Exceptions.h>
#include <torch/csrc/autograd/python_variable.h>
#include <torch/csrc/utils/device_lazy_init.h>
#include <torch/csrc/utils/object_ptr.h>
#include <torch/library.h>

#include <algorithm>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

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

/// Whether the bridge describes `t`: strided with storage, on the host or
/// a CUDA device, at most CASCADE_TORCH_BRIDGE_MAX_DIMS dimensions.
bool describable(const at::Tensor &t) {
  if (!t.defined() || t.layout() != c10::kStrided || t.is_nested() ||
      !t.has_storage() || t.dim() > CASCADE_TORCH_BRIDGE_MAX_DIMS)
    return false;
  const c10::DeviceType d = t.device().type();
  return d == c10::DeviceType::CPU || d == c10::DeviceType::CUDA;
}

/// The tensor of `obj` when the bridge takes it: a torch.Tensor or
/// Parameter (not a subclass, whose Python methods may answer otherwise)
/// that is describable(). nullptr: not taken.
const at::Tensor *taken(PyObject *obj) {
  if (!THPVariable_CheckExact(obj))
    return nullptr;
  const at::Tensor &t = THPVariable_Unpack(obj);
  return describable(t) ? &t : nullptr;
}

/// The address of a tensor's element 0, as Tensor.data_ptr() reads it.
uint64_t address(const at::Tensor &t) {
  return reinterpret_cast<uint64_t>(t.data_ptr());
}

/// What the runtime reads of a describable() tensor.
CascadeTorchTensor described(const at::Tensor &t) {
  CascadeTorchTensor d{};
  d.data = address(t);
  d.dtype = codeOf(t.scalar_type());
  d.device = t.is_cuda() ? t.get_device() : -1;
  d.ndim = static_cast<int32_t>(t.dim());
  d.contiguous = t.is_contiguous() ? 1 : 0;
  const c10::IntArrayRef sizes = t.sizes(), strides = t.strides();
  for (int32_t i = 0; i < d.ndim; ++i) {
    d.sizes[i] = sizes[i];
    d.strides[i] = strides[i];
  }
  return d;
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
  *out = described(*tp);
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
// C++ kernels of cascade_mlir's torch ops
//===----------------------------------------------------------------------===//
//
// cascade_mlir.torch_ops defines the ops with Python kernels (every backend)
// and, when this bridge is in use, registers these for CUDA: run and run_out
// call the planned program of the handle's wrapper (its runner, which the
// package binds here with bind_runner() when the wrapper is planned), the
// merges the runtime's one-call merges (_gpu.MERGES), through the C tables
// of TorchBridgeABI.h, on tensors described here and outputs allocated here
// with at:: calls: no Python object is made or read on the way (the
// dispatcher wraps the outputs once, for the caller). A call they do not
// take (no runner bound, a check failing: the checked path names the
// argument) or whose inputs require grad with grad mode on (the Python
// kernel raises "no autograd formula") goes to the op's Python kernel.

enum Op { kMergeState, kMergeStateInPlace, kMergeStates, kRun, kRunOut };
constexpr int kNumOps = 5;

struct OpKernels {
  const CascadeMergeOps *merges = nullptr;
  PyObject *mergesCapsule = nullptr; ///< keeps merges alive
  PyObject *fallbacks[kNumOps] = {}; ///< the ops' Python kernels
  struct Runner {
    const CascadeRunner *table;
    PyObject *capsule; ///< keeps table alive
  };
  std::unordered_map<int64_t, Runner> runners;       ///< by wrapper handle
  std::map<std::string, torch::Library *> libraries; ///< by group and key
};
OpKernels &opKernels() {
  static auto *k = new OpKernels(); // never destroyed: the dispatcher
  return *k;                        // may call into it at exit
}

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
    if (t && t->defined() && t->requires_grad())
      return true;
  return false;
}

const at::Tensor *orNull(const std::optional<at::Tensor> &t) {
  return t ? &*t : nullptr;
}

/// Whether every tensor given (null: an absent optional) is describable().
bool allDescribable(std::initializer_list<const at::Tensor *> ts) {
  for (const at::Tensor *t : ts)
    if (t && !describable(*t))
      return false;
  return true;
}

/// torch's current stream of `t`'s CUDA device (what
/// torch.cuda.current_stream(device).cuda_stream is); 0 for the host.
uint64_t currentStream(const at::Tensor &t) {
  if (!t.is_cuda())
    return 0;
  const c10::impl::VirtualGuardImpl impl(c10::DeviceType::CUDA);
  return reinterpret_cast<uint64_t>(
      impl.getStreamNativeHandle(impl.getStream(t.device())));
}

/// A result of the runtime's tables: true when it launched, false when it
/// did not take the call; its Python exception thrown.
bool launched(int r) {
  if (r < 0)
    throwPython();
  return r == 0;
}

THPObjectPtr pyObject(const at::Tensor &t) {
  THPObjectPtr o(THPVariable_Wrap(t));
  if (!o)
    throwPython();
  return o;
}
THPObjectPtr pyObject(const std::optional<at::Tensor> &t) {
  if (t)
    return pyObject(*t);
  Py_INCREF(Py_None);
  return THPObjectPtr(Py_None);
}
THPObjectPtr pyObject(int64_t v) {
  THPObjectPtr o(PyLong_FromLongLong(v));
  if (!o)
    throwPython();
  return o;
}

/// The op's Python kernel on the same arguments: a new reference to what
/// it returned.
template <typename... A> THPObjectPtr fallback(Op op, const A &...args) {
  THPObjectPtr objects[] = {pyObject(args)...};
  PyObject *a[sizeof...(A)];
  for (size_t i = 0; i < sizeof...(A); ++i)
    a[i] = objects[i].get();
  THPObjectPtr r(
      PyObject_Vectorcall(opKernels().fallbacks[op], a, sizeof...(A), nullptr));
  if (!r)
    throwPython();
  return r;
}

/// A (v, s) pair of tensors returned by a Python kernel.
std::tuple<at::Tensor, at::Tensor> tensorPair(THPObjectPtr r, const char *op) {
  PyObject *o = r.get();
  if (!PyTuple_Check(o) || PyTuple_GET_SIZE(o) != 2 ||
      !THPVariable_Check(PyTuple_GET_ITEM(o, 0)) ||
      !THPVariable_Check(PyTuple_GET_ITEM(o, 1))) {
    PyErr_Format(PyExc_TypeError,
                 "cascade_mlir::%s: its kernel returned no pair of tensors",
                 op);
    throwPython();
  }
  return {THPVariable_Unpack(PyTuple_GET_ITEM(o, 0)),
          THPVariable_Unpack(PyTuple_GET_ITEM(o, 1))};
}

/// What a kernel that mutates `ts` does after the runtime launched: bump
/// their version counters, as ADInplaceOrView would (the Python kernels
/// bump them themselves).
void bumpVersions(std::initializer_list<const at::Tensor *> ts) {
  for (const at::Tensor *t : ts)
    if (t)
      t->unsafeGetTensorImpl()->bump_version();
}

std::tuple<at::Tensor, at::Tensor> mergeStateKernel(const at::Tensor &va,
                                                    const at::Tensor &sa,
                                                    const at::Tensor &vb,
                                                    const at::Tensor &sb) {
  Gil gil;
  const CascadeMergeOps &m = *opKernels().merges;
  if (!requiresGrad({&va, &sa, &vb, &sb}) &&
      allDescribable({&va, &sa, &vb, &sb})) {
    at::Tensor v = at::empty_like(va), s = at::empty_like(sa);
    const CascadeTorchTensor t[] = {described(va), described(sa), described(vb),
                                    described(sb), described(v),  described(s)};
    if (launched(m.merge_state(m.self, t, currentStream(va))))
      return {v, s};
  }
  return tensorPair(fallback(kMergeState, va, sa, vb, sb), "merge_state");
}

void mergeStateInPlaceKernel(const at::Tensor &v, const at::Tensor &s,
                             const at::Tensor &vOther, const at::Tensor &sOther,
                             const std::optional<at::Tensor> &mask) {
  Gil gil;
  const CascadeMergeOps &m = *opKernels().merges;
  if (!requiresGrad({&v, &s, &vOther, &sOther}) &&
      allDescribable({&v, &s, &vOther, &sOther, orNull(mask)})) {
    CascadeTorchTensor t[] = {
        described(v), described(s), described(vOther), described(sOther), {}};
    if (mask)
      t[4] = described(*mask);
    else
      t[4].ndim = -1;
    if (launched(m.merge_state_in_place(m.self, t, currentStream(v)))) {
      bumpVersions({&v, &s});
      return;
    }
  }
  fallback(kMergeStateInPlace, v, s, vOther, sOther, mask);
}

std::tuple<at::Tensor, at::Tensor> mergeStatesKernel(const at::Tensor &v,
                                                     const at::Tensor &s) {
  Gil gil;
  const CascadeMergeOps &m = *opKernels().merges;
  if (!requiresGrad({&v, &s}) && allDescribable({&v, &s}) && v.dim() == 4 &&
      s.dim() == 3) {
    at::Tensor vOut = at::empty({v.size(0), v.size(2), v.size(3)}, v.options());
    at::Tensor sOut = at::empty({s.size(0), s.size(2)}, s.options());
    const CascadeTorchTensor t[] = {described(v), described(s), described(vOut),
                                    described(sOut)};
    if (launched(m.merge_states(m.self, t, currentStream(v))))
      return {vOut, sOut};
  }
  return tensorPair(fallback(kMergeStates, v, s), "merge_states");
}

/// The runner bound to `handle`, or null.
const CascadeRunner *runnerOf(int64_t handle) {
  OpKernels &k = opKernels();
  auto it = k.runners.find(handle);
  return it == k.runners.end() ? nullptr : it->second.table;
}

/// A call of a runner on q, the KV cache (kv, or the pair (kv, v)), out
/// and lse (may be null).
bool runLaunched(const CascadeRunner &r, const at::Tensor &q,
                 const at::Tensor &kv, const std::optional<at::Tensor> &v,
                 const at::Tensor &out, const at::Tensor *lse) {
  CascadeRunCall c{};
  c.q = described(q);
  c.kv = described(kv);
  c.has_v = v ? 1 : 0;
  if (v)
    c.v = described(*v);
  c.out = described(out);
  c.has_lse = lse ? 1 : 0;
  if (lse)
    c.lse = described(*lse);
  c.stream = currentStream(q);
  return launched(r.run(r.self, &c));
}

std::tuple<at::Tensor, at::Tensor>
runKernel(c10::SymInt handle, const at::Tensor &q, const at::Tensor &kv,
          const std::optional<at::Tensor> &v) {
  Gil gil;
  const int64_t h = handle.guard_int(__FILE__, __LINE__);
  const CascadeRunner *r = runnerOf(h);
  if (r && !requiresGrad({&q, &kv, orNull(v)}) &&
      allDescribable({&q, &kv, orNull(v)}) && q.dim() == 3) {
    // As run() allocates them: out like q (with v's head_dim where v has
    // its own, head_dim_vo: [rows, heads, head_dim_vo], contiguous), lse
    // [rows, heads] float32.
    const bool vOwnDim = v && v->dim() > 0 && v->size(-1) != q.size(2);
    at::Tensor out =
        vOwnDim ? at::empty({q.size(0), q.size(1), v->size(-1)}, q.options())
                : at::empty_like(q);
    at::Tensor lse =
        at::empty({q.size(0), q.size(1)}, q.options().dtype(at::kFloat));
    if (runLaunched(*r, q, kv, v, out, &lse))
      return {out, lse};
  }
  return tensorPair(fallback(kRun, h, q, kv, v), "run");
}

void runOutKernel(c10::SymInt handle, const at::Tensor &q, const at::Tensor &kv,
                  const std::optional<at::Tensor> &v, const at::Tensor &out,
                  const std::optional<at::Tensor> &lse) {
  Gil gil;
  const int64_t h = handle.guard_int(__FILE__, __LINE__);
  const CascadeRunner *r = runnerOf(h);
  if (r && !requiresGrad({&q, &kv, orNull(v), &out, orNull(lse)}) &&
      allDescribable({&q, &kv, orNull(v), &out, orNull(lse)}) &&
      runLaunched(*r, q, kv, v, out, orNull(lse))) {
    bumpVersions({&out, orNull(lse)});
    return;
  }
  fallback(kRunOut, h, q, kv, v, out, lse);
}

/// A new library for `group`'s kernels on dispatch key `key` ("CUDA", or
/// "CPU" for tests), with `fallbacks` (a tuple of callables, `what`) kept as
/// the Python kernels of ops first, first + 1, ...; null when registered
/// on that key before (*before) or with a Python exception set.
torch::Library *newLibrary(const char *group, const char *key,
                           PyObject *fallbacks, int first, int n,
                           const char *what, bool *before) {
  std::optional<c10::DispatchKey> dk;
  if (std::string(key) == "CUDA")
    dk = c10::DispatchKey::CUDA;
  else if (std::string(key) == "CPU")
    dk = c10::DispatchKey::CPU;
  if (!dk) {
    PyErr_Format(PyExc_ValueError, "dispatch_key must be CUDA or CPU, not %s",
                 key);
    return nullptr;
  }
  OpKernels &k = opKernels();
  const std::string name = std::string(group) + "/" + key;
  *before = k.libraries.count(name) > 0;
  if (*before)
    return nullptr;
  if (PyTuple_GET_SIZE(fallbacks) != n) {
    PyErr_Format(PyExc_ValueError, "fallbacks: the Python kernels of %s", what);
    return nullptr;
  }
  // The kernels read these from now on (and forever: never released).
  for (int i = 0; i < n; ++i) {
    PyObject *f = PyTuple_GET_ITEM(fallbacks, i);
    Py_INCREF(f);
    Py_XDECREF(k.fallbacks[first + i]);
    k.fallbacks[first + i] = f;
  }
  auto *lib = new torch::Library(torch::Library::IMPL, "cascade_mlir", *dk,
                                 __FILE__, __LINE__);
  k.libraries[name] = lib;
  return lib;
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
  bool before = false;
  torch::Library *lib =
      newLibrary("merges", key, fallbacks, kMergeState, 3,
                 "merge_state, merge_state_in_place and merge_states", &before);
  if (!lib) {
    if (before)
      Py_RETURN_FALSE;
    return nullptr;
  }
  OpKernels &k = opKernels();
  Py_INCREF(capsule); // kept forever, as the fallbacks
  Py_XDECREF(k.mergesCapsule);
  k.mergesCapsule = capsule;
  k.merges = ops;
  lib->impl("merge_state", TORCH_FN(mergeStateKernel));
  lib->impl("merge_state_in_place", TORCH_FN(mergeStateInPlaceKernel));
  lib->impl("merge_states", TORCH_FN(mergeStatesKernel));
  Py_RETURN_TRUE;
  END_HANDLE_TH_ERRORS
}

/// register_run_kernels(fallbacks, dispatch_key="CUDA")
PyObject *registerRunKernels(PyObject * /*module*/, PyObject *args) {
  HANDLE_TH_ERRORS
  PyObject *fallbacks = nullptr;
  const char *key = "CUDA";
  if (!PyArg_ParseTuple(args, "O!|s", &PyTuple_Type, &fallbacks, &key))
    return nullptr;
  bool before = false;
  torch::Library *lib =
      newLibrary("run", key, fallbacks, kRun, 2, "run and run_out", &before);
  if (!lib) {
    if (before)
      Py_RETURN_FALSE;
    return nullptr;
  }
  lib->impl("run", TORCH_FN(runKernel));
  lib->impl("run_out", TORCH_FN(runOutKernel));
  Py_RETURN_TRUE;
  END_HANDLE_TH_ERRORS
}

/// bind_runner(handle, runner_capsule_or_None)
PyObject *bindRunner(PyObject * /*module*/, PyObject *args) {
  HANDLE_TH_ERRORS
  long long handle = 0;
  PyObject *capsule = nullptr;
  if (!PyArg_ParseTuple(args, "LO", &handle, &capsule))
    return nullptr;
  const CascadeRunner *table = nullptr;
  if (capsule != Py_None) {
    table = static_cast<const CascadeRunner *>(
        PyCapsule_GetPointer(capsule, CASCADE_RUNTIME_RUNNER_CAPSULE));
    if (!table)
      return nullptr;
    if (table->abi != CASCADE_TORCH_BRIDGE_ABI ||
        table->size < sizeof(*table)) {
      PyErr_SetString(PyExc_ValueError,
                      "the runtime's runner capsule has another ABI");
      return nullptr;
    }
  }
  OpKernels &k = opKernels();
  auto it = k.runners.find(handle);
  PyObject *old = it == k.runners.end() ? nullptr : it->second.capsule;
  if (table) {
    Py_INCREF(capsule);
    k.runners[handle] = {table, capsule};
  } else if (it != k.runners.end()) {
    k.runners.erase(it);
  }
  Py_XDECREF(old); // may free a Program: after the table no longer has it
  Py_RETURN_NONE;
  END_HANDLE_TH_ERRORS
}

/// bound_runners() -> the handles with a runner, sorted
PyObject *boundRunners(PyObject * /*module*/, PyObject * /*args*/) {
  HANDLE_TH_ERRORS
  std::vector<int64_t> handles;
  for (const auto &entry : opKernels().runners)
    handles.push_back(entry.first);
  std::sort(handles.begin(), handles.end());
  THPObjectPtr list(PyList_New(static_cast<Py_ssize_t>(handles.size())));
  if (!list)
    return nullptr;
  for (size_t i = 0; i < handles.size(); ++i) {
    PyObject *h = PyLong_FromLongLong(handles[i]);
    if (!h)
      return nullptr;
    PyList_SET_ITEM(list.get(), static_cast<Py_ssize_t>(i), h);
  }
  return list.release();
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
    {"register_run_kernels", registerRunKernels, METH_VARARGS,
     "register_run_kernels(fallbacks, dispatch_key='CUDA'): C++ kernels for "
     "cascade_mlir::run and run_out on one dispatch key (CUDA; CPU for "
     "tests) over the runners bound with bind_runner(), falling back to the "
     "ops' Python kernels (a tuple of the two). True if registered now, "
     "False if that key's were registered before."},
    {"bind_runner", bindRunner, METH_VARARGS,
     "bind_runner(handle, runner): the planned program (Program._runner()) "
     "the run kernels call for the wrapper of `handle`; None unbinds it."},
    {"bound_runners", boundRunners, METH_NOARGS,
     "The handles that have a runner bound, sorted (for tests)."},
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
