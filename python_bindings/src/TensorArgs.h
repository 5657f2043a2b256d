//===- TensorArgs.h - Device tensors from Python, without copies -*- C++
//-*-===//
//
// Reads what the launcher needs from a caller's tensor: its device address,
// device, dtype, shape and strides. torch tensors are read in C++ through
// cascade_mlir._torch_bridge when the package has one built for the running
// torch (TorchBridgeABI.h), else through their Python attributes (no DLPack
// capsule per call either way: this is run()'s hot path); any other object
// through the DLPack protocol (`__dlpack_device__` / `__dlpack__`, e.g. cupy
// and numpy). Nothing is copied or synchronised.
//
//===----------------------------------------------------------------------===//

#ifndef CASCADE_PYTHON_TENSORARGS_H
#define CASCADE_PYTHON_TENSORARGS_H

#include "cascade/Contract/DType.h"

#include <pybind11/pybind11.h>

#include <cstdint>
#include <string>

struct CascadeTorchTensor; // TorchBridgeABI.h

namespace cascade::python {

namespace py = pybind11;

/// Element types the kernels and checks know.
enum class ElemType : uint8_t {
  F16,
  BF16,
  F32,
  F64,
  I32,
  I64,
  U8,
  I8,
  Bool,
  F8E4M3,
  F8E5M2,
  Other
};
const char *elemTypeName(ElemType t);
/// The tensor element type of a contract dtype (fp8: torch's
/// float8_e4m3fn / float8_e5m2, DLPack's kDLFloat8_e4m3fn / kDLFloat8_e5m2).
ElemType elemTypeOf(contract::DType t);
int64_t elemTypeBytes(ElemType t);

struct TensorArg {
  uint64_t ptr = 0;
  bool cuda = false;
  int device = -1; ///< CUDA ordinal, -1 for host memory
  ElemType dtype = ElemType::Other;
  int ndim = 0;
  int64_t shape[8] = {0};
  int64_t strides[8] = {0}; ///< elements
  bool torch = false;
  bool bridged = false; ///< read by cascade_mlir._torch_bridge
  py::object keepAlive; ///< a DLPack capsule

  int64_t numel() const;
  /// Row-major contiguous (size-1 dimensions may have any stride).
  bool contiguous() const;
  /// Sets `strides` to the row-major strides of `shape`.
  void setRowMajorStrides();
  std::string shapeString() const;
  std::string stridesString() const;
  std::string deviceString() const;
};

/// Remembers torch's Tensor type, dtypes and the callables run() uses
/// (torch.empty_like, torch.empty_strided,
/// torch._C._cuda_getCurrentRawStream), once; then takes `bridge` (the
/// CAPSULE of cascade_mlir._torch_bridge, or None: torch through Python)
/// after checking its ABI and that it was built for torch.__version__
/// (ValueError / TypeError otherwise, the previous bridge kept).
void registerTorch(py::handle torchModule, py::handle bridge);
bool torchRegistered();
bool isTorchTensor(py::handle obj);
/// The torch version of the bridge in use, or None.
py::object torchBridgeVersion();

/// Reads `obj` (a torch tensor or a DLPack producer); TypeError naming
/// `name` if it is neither. `stream` is passed to `__dlpack__` of CUDA
/// producers (-1: none). `bridge`: false reads torch tensors through
/// Python even where the bridge would take them (for tests).
TensorArg probe(py::handle obj, const char *name, int64_t stream = -1,
                bool bridge = true);

/// A torch tensor as cascade_mlir._torch_bridge described it (with the
/// stand-in device below applied).
TensorArg fromBridge(const CascadeTorchTensor &d);

/// Tests on the stand-in CUDA driver (tests/fake_cuda), whose device memory
/// is host memory: torch tensors on the host are read as if on cuda:ordinal,
/// on stream 0, and outputs "on" it are allocated on the host. -1 (the
/// default) turns it off.
void setStandInDevice(int ordinal);

/// torch's current raw stream of a device.
int64_t torchCurrentStream(int device);
/// torch.empty_like(obj), `like` being probe(obj); `out` is `like` at the
/// new tensor's address.
py::object torchEmptyLike(py::handle obj, const TensorArg &like,
                          TensorArg &out);
/// torch.empty_strided(like's shape, strides, dtype, device); `out` is
/// `like` at the new tensor's address.
py::object torchEmptyStrided(const TensorArg &like, TensorArg &out);

} // namespace cascade::python

#endif // CASCADE_PYTHON_TENSORARGS_H
