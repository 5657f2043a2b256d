//===- TensorArgs.cpp - Device tensors from Python, without copies --------===//

#include "TensorArgs.h"
#include "TorchBridgeABI.h"

#include <cstring>
#include <string>

namespace cascade::python {

namespace {

// The DLPack ABI (dlpack.h, version 0.x "dltensor" capsules), declared here
// so that the bindings need no header of any framework.
struct DLDevice {
  int32_t device_type;
  int32_t device_id;
};
struct DLDataType {
  uint8_t code;
  uint8_t bits;
  uint16_t lanes;
};
struct DLTensor {
  void *data;
  DLDevice device;
  int32_t ndim;
  DLDataType dtype;
  int64_t *shape;
  int64_t *strides;
  uint64_t byte_offset;
};
struct DLManagedTensor {
  DLTensor dl_tensor;
  void *manager_ctx;
  void (*deleter)(DLManagedTensor *);
};
constexpr int32_t kDLCPU = 1, kDLCUDA = 2, kDLCUDAHost = 3, kDLCUDAManaged = 13;
constexpr uint8_t kDLInt = 0, kDLUInt = 1, kDLFloat = 2, kDLBfloat = 4,
                  kDLBool = 6, kDLFloat8E4M3FN = 10, kDLFloat8E5M2 = 12;

// The bridge's element type codes are ElemType's.
static_assert(static_cast<int>(ElemType::F16) == CASCADE_TORCH_F16 &&
              static_cast<int>(ElemType::BF16) == CASCADE_TORCH_BF16 &&
              static_cast<int>(ElemType::F32) == CASCADE_TORCH_F32 &&
              static_cast<int>(ElemType::F64) == CASCADE_TORCH_F64 &&
              static_cast<int>(ElemType::I32) == CASCADE_TORCH_I32 &&
              static_cast<int>(ElemType::I64) == CASCADE_TORCH_I64 &&
              static_cast<int>(ElemType::U8) == CASCADE_TORCH_U8 &&
              static_cast<int>(ElemType::I8) == CASCADE_TORCH_I8 &&
              static_cast<int>(ElemType::Bool) == CASCADE_TORCH_BOOL &&
              static_cast<int>(ElemType::F8E4M3) == CASCADE_TORCH_F8E4M3 &&
              static_cast<int>(ElemType::F8E5M2) == CASCADE_TORCH_F8E5M2 &&
              static_cast<int>(ElemType::Other) == CASCADE_TORCH_OTHER);
static_assert(CASCADE_TORCH_BRIDGE_MAX_DIMS ==
              sizeof(TensorArg::shape) / sizeof(int64_t));

struct Torch {
  PyObject *tensorType = nullptr;
  PyObject *version = nullptr; ///< torch.__version__
  /// cascade_mlir._torch_bridge's functions (null: torch through Python)
  /// and the capsule that holds them.
  const CascadeTorchBridge *bridge = nullptr;
  py::object bridgeCapsule;
  PyObject *dtypes[static_cast<int>(ElemType::Other)] = {nullptr};
  py::object emptyLike, emptyStrided, currentStream;
  py::object dtypeDeviceNames; ///< ("dtype", "device"): vectorcall kwnames
  py::object sDataPtr, sDtype, sShape, sStride, sGetDevice, sIsCuda,
      sIsContiguous;
};
Torch &torch() {
  static Torch *t = new Torch(); // never destroyed: outlives the interpreter
  return *t;
}

ElemType fromDl(DLDataType t) {
  if (t.lanes != 1)
    return ElemType::Other;
  switch (t.code) {
  case kDLFloat:
    return t.bits == 16   ? ElemType::F16
           : t.bits == 32 ? ElemType::F32
           : t.bits == 64 ? ElemType::F64
                          : ElemType::Other;
  case kDLBfloat:
    return t.bits == 16 ? ElemType::BF16 : ElemType::Other;
  case kDLInt:
    return t.bits == 32   ? ElemType::I32
           : t.bits == 64 ? ElemType::I64
           : t.bits == 8  ? ElemType::I8
                          : ElemType::Other;
  case kDLUInt:
    return t.bits == 8 ? ElemType::U8 : ElemType::Other;
  case kDLBool:
    return ElemType::Bool;
  case kDLFloat8E4M3FN:
    return t.bits == 8 ? ElemType::F8E4M3 : ElemType::Other;
  case kDLFloat8E5M2:
    return t.bits == 8 ? ElemType::F8E5M2 : ElemType::Other;
  default:
    return ElemType::Other;
  }
}

int64_t toInt(PyObject *o, const char *name) {
  long long v = PyLong_AsLongLong(o);
  if (v == -1 && PyErr_Occurred())
    throw py::error_already_set();
  (void)name;
  return v;
}

void readTuple(PyObject *tuple, int64_t *out, int &ndim, const char *name) {
  if (!PyTuple_Check(tuple))
    throw py::type_error(std::string(name) + ": shape is not a tuple");
  Py_ssize_t n = PyTuple_GET_SIZE(tuple);
  if (n > 8)
    throw py::value_error(std::string(name) + " has more than 8 dimensions");
  ndim = static_cast<int>(n);
  for (Py_ssize_t i = 0; i < n; ++i)
    out[i] = toInt(PyTuple_GET_ITEM(tuple, i), name);
}

/// setStandInDevice's ordinal (-1: off).
int standInDevice = -1;

/// A host torch tensor as one on the stand-in device, when there is one.
void applyStandIn(TensorArg &a) {
  if (standInDevice >= 0 && !a.cuda && a.device == -1) {
    a.cuda = true;
    a.device = standInDevice;
  }
}

uint64_t torchDataPtr(PyObject *o) {
  py::object ptr = py::reinterpret_steal<py::object>(
      PyObject_CallMethodNoArgs(o, torch().sDataPtr.ptr()));
  if (!ptr)
    throw py::error_already_set();
  return static_cast<uint64_t>(PyLong_AsUnsignedLongLongMask(ptr.ptr()));
}

TensorArg probeTorch(py::handle obj, const char *name) {
  Torch &t = torch();
  TensorArg a;
  a.torch = true;
  PyObject *o = obj.ptr();
  a.ptr = torchDataPtr(o);
  py::object dtype =
      py::reinterpret_steal<py::object>(PyObject_GetAttr(o, t.sDtype.ptr()));
  if (!dtype)
    throw py::error_already_set();
  for (int i = 0; i < static_cast<int>(ElemType::Other); ++i)
    if (dtype.ptr() == t.dtypes[i])
      a.dtype = static_cast<ElemType>(i);
  py::object cuda =
      py::reinterpret_steal<py::object>(PyObject_GetAttr(o, t.sIsCuda.ptr()));
  if (!cuda)
    throw py::error_already_set();
  a.cuda = cuda.ptr() == Py_True;
  if (a.cuda) {
    py::object dev = py::reinterpret_steal<py::object>(
        PyObject_CallMethodNoArgs(o, t.sGetDevice.ptr()));
    if (!dev)
      throw py::error_already_set();
    a.device = static_cast<int>(toInt(dev.ptr(), name));
  }
  applyStandIn(a);
  py::object shape =
      py::reinterpret_steal<py::object>(PyObject_GetAttr(o, t.sShape.ptr()));
  if (!shape)
    throw py::error_already_set();
  readTuple(shape.ptr(), a.shape, a.ndim, name);
  // A contiguous tensor's strides are the row-major ones, up to those of
  // size-1 dimensions, which address nothing: is_contiguous() costs less
  // than stride() and its tuple.
  py::object contiguous = py::reinterpret_steal<py::object>(
      PyObject_CallMethodNoArgs(o, t.sIsContiguous.ptr()));
  if (!contiguous)
    throw py::error_already_set();
  if (contiguous.ptr() == Py_True) {
    a.setRowMajorStrides();
    return a;
  }
  py::object stride = py::reinterpret_steal<py::object>(
      PyObject_CallMethodNoArgs(o, t.sStride.ptr()));
  if (!stride)
    throw py::error_already_set();
  int sdim = 0;
  readTuple(stride.ptr(), a.strides, sdim, name);
  return a;
}

/// A torch tensor described by the bridge; false when it does not take it.
bool probeBridged(const CascadeTorchBridge &b, py::handle obj,
                  CascadeTorchTensor &d) {
  const int r = b.probe(obj.ptr(), &d);
  if (r < 0)
    throw py::error_already_set();
  return r == 0;
}

/// `like` at the address of a new torch tensor (of like's shape, dtype,
/// device and strides).
TensorArg allocated(const TensorArg &like, uint64_t ptr) {
  TensorArg a = like;
  a.keepAlive = py::object();
  a.torch = true;
  a.bridged = false;
  a.ptr = ptr;
  return a;
}

/// The result of a bridge allocation.
py::object bridgeResult(int r, PyObject *obj) {
  if (r < 0)
    throw py::error_already_set();
  return py::reinterpret_steal<py::object>(obj);
}

TensorArg probeDlpack(py::handle obj, const char *name, int64_t stream) {
  if (!py::hasattr(obj, "__dlpack__") || !py::hasattr(obj, "__dlpack_device__"))
    throw py::type_error(
        std::string(name) +
        " must be a torch tensor or support DLPack "
        "(__dlpack__), got " +
        std::string(py::str(py::type::of(obj).attr("__name__"))));
  py::tuple dev = obj.attr("__dlpack_device__")();
  const int devType = dev[0].cast<int>();
  py::object capsule;
  // DLPack disallows stream 0 (ambiguous) and names the legacy default
  // stream 1 (CUDA's handle 0 for it, CU_STREAM_LEGACY = 1 as well).
  if (devType == kDLCUDA && stream >= 0)
    capsule =
        obj.attr("__dlpack__")(py::arg("stream") = stream == 0 ? 1 : stream);
  else
    capsule = obj.attr("__dlpack__")();
  auto *m = static_cast<DLManagedTensor *>(
      PyCapsule_GetPointer(capsule.ptr(), "dltensor"));
  if (!m)
    throw py::error_already_set();
  const DLTensor &t = m->dl_tensor;
  TensorArg a;
  a.keepAlive = capsule;
  a.ptr = reinterpret_cast<uint64_t>(t.data) + t.byte_offset;
  a.cuda =
      t.device.device_type == kDLCUDA || t.device.device_type == kDLCUDAManaged;
  a.device = a.cuda ? t.device.device_id : -1;
  if (t.device.device_type != kDLCPU && t.device.device_type != kDLCUDAHost &&
      !a.cuda)
    a.device = -2; // another accelerator
  a.dtype = fromDl(t.dtype);
  if (t.ndim > 8)
    throw py::value_error(std::string(name) + " has more than 8 dimensions");
  a.ndim = t.ndim;
  int64_t expect = 1;
  for (int i = t.ndim - 1; i >= 0; --i) {
    a.shape[i] = t.shape[i];
    a.strides[i] = t.strides ? t.strides[i] : expect;
    expect *= t.shape[i];
  }
  return a;
}

} // namespace

const char *elemTypeName(ElemType t) {
  static const char *names[] = {"float16",       "bfloat16",    "float32",
                                "float64",       "int32",       "int64",
                                "uint8",         "int8",        "bool",
                                "float8_e4m3fn", "float8_e5m2", "other"};
  return names[static_cast<int>(t)];
}

ElemType elemTypeOf(contract::DType t) {
  switch (t) {
  case contract::DType::F16:
    return ElemType::F16;
  case contract::DType::BF16:
    return ElemType::BF16;
  case contract::DType::F32:
    return ElemType::F32;
  case contract::DType::F8E4M3:
    return ElemType::F8E4M3;
  case contract::DType::F8E5M2:
    return ElemType::F8E5M2;
  }
  return ElemType::Other;
}

int64_t elemTypeBytes(ElemType t) {
  switch (t) {
  case ElemType::F16:
  case ElemType::BF16:
    return 2;
  case ElemType::F32:
  case ElemType::I32:
    return 4;
  case ElemType::F64:
  case ElemType::I64:
    return 8;
  default:
    return 1;
  }
}

TensorArg fromBridge(const CascadeTorchTensor &d) {
  TensorArg a;
  a.torch = true;
  a.bridged = true;
  a.ptr = d.data;
  a.cuda = d.device >= 0;
  a.device = d.device;
  a.dtype = d.dtype >= 0 && d.dtype < CASCADE_TORCH_OTHER
                ? static_cast<ElemType>(d.dtype)
                : ElemType::Other;
  a.ndim = d.ndim;
  std::memcpy(a.shape, d.sizes, sizeof(int64_t) * d.ndim);
  if (d.contiguous)
    a.setRowMajorStrides(); // as probeTorch: size-1 dimensions' strides
  else
    std::memcpy(a.strides, d.strides, sizeof(int64_t) * d.ndim);
  applyStandIn(a);
  return a;
}

void setStandInDevice(int ordinal) {
  standInDevice = ordinal < 0 ? -1 : ordinal;
}

int64_t TensorArg::numel() const {
  int64_t n = 1;
  for (int i = 0; i < ndim; ++i)
    n *= shape[i];
  return n;
}

bool TensorArg::contiguous() const {
  if (numel() == 0)
    return true; // no element to address: any strides will do
  int64_t expect = 1;
  for (int i = ndim - 1; i >= 0; --i) {
    if (shape[i] != 1 && strides[i] != expect)
      return false;
    expect *= shape[i];
  }
  return true;
}

void TensorArg::setRowMajorStrides() {
  int64_t stride = 1;
  for (int i = ndim - 1; i >= 0; --i) {
    strides[i] = stride;
    stride *= shape[i];
  }
}

/// "[a, b, ...]" of the first n values. No iostreams: on the H200 machine
/// (torch 2.11, Python 3.12) building a message with std::ostringstream
/// segfaulted inside run()'s error path; std::to_string does not.
static std::string listString(const int64_t *v, int n) {
  std::string s = "[";
  for (int i = 0; i < n; ++i)
    s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

std::string TensorArg::shapeString() const { return listString(shape, ndim); }

std::string TensorArg::stridesString() const {
  return listString(strides, ndim);
}

std::string TensorArg::deviceString() const {
  if (cuda)
    return "cuda:" + std::to_string(device);
  return device == -2 ? "a non-CUDA accelerator" : "cpu";
}

namespace {

void registerTorchModule(py::handle torchModule) {
  Torch &t = torch();
  py::module_ tm = py::reinterpret_borrow<py::module_>(torchModule);
  const char *names[] = {"float16", "bfloat16",      "float32",    "float64",
                         "int32",   "int64",         "uint8",      "int8",
                         "bool",    "float8_e4m3fn", "float8_e5m2"};
  static_assert(std::size(names) == static_cast<size_t>(ElemType::Other));
  for (int i = 0; i < static_cast<int>(ElemType::Other); ++i)
    if (py::hasattr(tm, names[i])) // torch < 2.1 has no float8 dtypes
      t.dtypes[i] = py::object(tm.attr(names[i])).release().ptr();
  t.emptyLike = tm.attr("empty_like");
  t.emptyStrided = tm.attr("empty_strided");
  t.dtypeDeviceNames = py::make_tuple("dtype", "device");
  py::object c = tm.attr("_C");
  if (py::hasattr(c, "_cuda_getCurrentRawStream"))
    t.currentStream = c.attr("_cuda_getCurrentRawStream");
  t.sDataPtr = py::str("data_ptr");
  t.sDtype = py::str("dtype");
  t.sShape = py::str("shape");
  t.sStride = py::str("stride");
  t.sGetDevice = py::str("get_device");
  t.sIsCuda = py::str("is_cuda");
  t.sIsContiguous = py::str("is_contiguous");
  t.version =
      py::str(py::getattr(tm, "__version__", py::str(""))).release().ptr();
  t.tensorType = py::object(tm.attr("Tensor")).release().ptr();
}

/// The bridge's table in `capsule`, checked against this runtime's ABI and
/// the registered torch's version.
const CascadeTorchBridge *checkedBridge(py::handle capsule) {
  if (!PyCapsule_IsValid(capsule.ptr(), CASCADE_TORCH_BRIDGE_CAPSULE))
    throw py::type_error("bridge must be cascade_mlir._torch_bridge.CAPSULE "
                         "(a capsule named " CASCADE_TORCH_BRIDGE_CAPSULE ")");
  auto *b = static_cast<const CascadeTorchBridge *>(
      PyCapsule_GetPointer(capsule.ptr(), CASCADE_TORCH_BRIDGE_CAPSULE));
  if (!b)
    throw py::error_already_set();
  if (b->abi != CASCADE_TORCH_BRIDGE_ABI || b->size < sizeof(*b))
    throw py::value_error("the torch bridge has ABI " + std::to_string(b->abi) +
                          " (table of " + std::to_string(b->size) +
                          " bytes); this runtime reads ABI " +
                          std::to_string(CASCADE_TORCH_BRIDGE_ABI));
  const std::string running = py::str(torch().version);
  if (!b->torch_version || running != b->torch_version)
    throw py::value_error(std::string("the torch bridge was built for torch ") +
                          (b->torch_version ? b->torch_version : "?") +
                          ", this is torch " + running);
  return b;
}

} // namespace

void registerTorch(py::handle torchModule, py::handle bridge) {
  Torch &t = torch();
  if (!t.tensorType)
    registerTorchModule(torchModule);
  if (bridge.is_none()) {
    t.bridge = nullptr;
    t.bridgeCapsule = py::object();
    return;
  }
  const CascadeTorchBridge *b = checkedBridge(bridge);
  t.bridgeCapsule = py::reinterpret_borrow<py::object>(bridge);
  t.bridge = b;
}

bool torchRegistered() { return torch().tensorType != nullptr; }

py::object torchBridgeVersion() {
  const CascadeTorchBridge *b = torch().bridge;
  return b ? py::object(py::str(b->torch_version)) : py::object(py::none());
}

bool isTorchTensor(py::handle obj) {
  PyObject *type = torch().tensorType;
  return type &&
         PyObject_TypeCheck(obj.ptr(), reinterpret_cast<PyTypeObject *>(type));
}

TensorArg probe(py::handle obj, const char *name, int64_t stream, bool bridge) {
  if (isTorchTensor(obj)) {
    const CascadeTorchBridge *b = torch().bridge;
    CascadeTorchTensor d;
    if (b && bridge && probeBridged(*b, obj, d))
      return fromBridge(d);
    return probeTorch(obj, name);
  }
  return probeDlpack(obj, name, stream);
}

int64_t torchCurrentStream(int device) {
  if (standInDevice >= 0 && device == standInDevice)
    return 0;
  Torch &t = torch();
  if (!t.currentStream)
    throw py::value_error("this torch has no CUDA support "
                          "(torch._C._cuda_getCurrentRawStream is missing)");
  return t.currentStream(device).cast<int64_t>();
}

py::object torchEmptyLike(py::handle obj, const TensorArg &like,
                          TensorArg &out) {
  Torch &t = torch();
  if (t.bridge) {
    PyObject *o = nullptr;
    uint64_t ptr = 0;
    const int r = t.bridge->empty_like(obj.ptr(), &o, &ptr);
    if (r <= 0) {
      py::object result = bridgeResult(r, o);
      out = allocated(like, ptr);
      return result;
    }
  }
  py::object result = t.emptyLike(obj);
  out = allocated(like, torchDataPtr(result.ptr()));
  return result;
}

py::object torchEmptyStrided(const TensorArg &like, TensorArg &out) {
  Torch &t = torch();
  if (like.dtype == ElemType::Other)
    throw py::type_error("torchEmptyStrided: a dtype torch does not have");
  if (t.bridge) {
    CascadeTorchTensor d{};
    d.dtype = static_cast<int32_t>(like.dtype);
    d.device = like.cuda && like.device != standInDevice ? like.device : -1;
    d.ndim = like.ndim;
    std::memcpy(d.sizes, like.shape, sizeof(int64_t) * like.ndim);
    std::memcpy(d.strides, like.strides, sizeof(int64_t) * like.ndim);
    PyObject *o = nullptr;
    uint64_t ptr = 0;
    const int r = t.bridge->empty_strided(&d, &o, &ptr);
    py::object result = bridgeResult(r, o);
    out = allocated(like, ptr);
    return result;
  }
  PyObject *dtype = t.dtypes[static_cast<int>(like.dtype)];
  if (!dtype)
    throw py::type_error("torchEmptyStrided: a dtype torch does not have");
  py::tuple shape(like.ndim), strides(like.ndim);
  for (int i = 0; i < like.ndim; ++i) {
    shape[i] = py::int_(like.shape[i]);
    strides[i] = py::int_(like.strides[i]);
  }
  py::object device = like.cuda && like.device != standInDevice
                          ? py::object(py::int_(like.device))
                          : py::object(py::str("cpu"));
  PyObject *args[] = {shape.ptr(), strides.ptr(), dtype, device.ptr()};
  PyObject *r = PyObject_Vectorcall(t.emptyStrided.ptr(), args, 2,
                                    t.dtypeDeviceNames.ptr());
  if (!r)
    throw py::error_already_set();
  py::object result = py::reinterpret_steal<py::object>(r);
  out = allocated(like, torchDataPtr(result.ptr()));
  return result;
}

} // namespace cascade::python
