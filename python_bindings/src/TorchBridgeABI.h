/*===- TorchBridgeABI.h - The C ABI of cascade_mlir._torch_bridge -*- C -*-===//
 *
 * What cascade_mlir._torch_bridge (TorchBridge.cpp, compiled against one
 * torch) hands cascade_mlir._runtime (no torch dependency): a PyCapsule
 * named CASCADE_TORCH_BRIDGE_CAPSULE holding a CascadeTorchBridge, a table
 * of plain C function pointers that read torch tensors and allocate them
 * without any Python call. Only C types cross: the two modules may be
 * built with different pybind11s and C++ standard libraries.
 *
 * The capsule's name carries the ABI version; the table also carries its
 * own size and the torch version it was compiled against, which the
 * runtime compares with the running torch.__version__ before it calls any
 * function of the table.
 *
 *===----------------------------------------------------------------------===*/

#ifndef CASCADE_PYTHON_TORCHBRIDGEABI_H
#define CASCADE_PYTHON_TORCHBRIDGEABI_H

#include <Python.h>

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define CASCADE_TORCH_BRIDGE_CAPSULE "cascade_mlir._torch_bridge.v1"
#define CASCADE_TORCH_BRIDGE_ABI 1
#define CASCADE_TORCH_BRIDGE_MAX_DIMS 8

/* Element types: the values of cascade::python::ElemType (TensorArgs.h). */
enum {
  CASCADE_TORCH_F16 = 0,
  CASCADE_TORCH_BF16 = 1,
  CASCADE_TORCH_F32 = 2,
  CASCADE_TORCH_F64 = 3,
  CASCADE_TORCH_I32 = 4,
  CASCADE_TORCH_I64 = 5,
  CASCADE_TORCH_U8 = 6,
  CASCADE_TORCH_I8 = 7,
  CASCADE_TORCH_BOOL = 8,
  CASCADE_TORCH_F8E4M3 = 9,
  CASCADE_TORCH_F8E5M2 = 10,
  CASCADE_TORCH_OTHER = 11
};

/* A strided tensor on the host or on a CUDA device. */
typedef struct CascadeTorchTensor {
  uint64_t data;      /* address of element 0 (storage offset included) */
  int32_t dtype;      /* CASCADE_TORCH_* */
  int32_t device;     /* CUDA ordinal, -1 for host memory */
  int32_t ndim;       /* <= CASCADE_TORCH_BRIDGE_MAX_DIMS */
  int32_t contiguous; /* row-major contiguous (torch's is_contiguous()) */
  int64_t sizes[CASCADE_TORCH_BRIDGE_MAX_DIMS];
  int64_t strides[CASCADE_TORCH_BRIDGE_MAX_DIMS]; /* in elements */
} CascadeTorchTensor;

/* The functions return 0 when done, -1 with a Python exception set on an
 * error, and (probe, empty_like) 1 when they do not take the object: the
 * caller then asks torch through Python, as without the bridge. */
typedef struct CascadeTorchBridge {
  uint32_t abi;              /* CASCADE_TORCH_BRIDGE_ABI */
  uint32_t size;             /* sizeof(CascadeTorchBridge) */
  const char *torch_version; /* torch.__version__ compiled against */
  /* Reads a torch.Tensor (exactly that type, or a Parameter) that is
   * strided, has storage, lives on the host or a CUDA device and has at
   * most CASCADE_TORCH_BRIDGE_MAX_DIMS dimensions; 1 for anything else
   * (subclasses, sparse, other devices, not a tensor). */
  int (*probe)(PyObject *obj, CascadeTorchTensor *out);
  /* torch.empty_like(like) for a tensor probe() takes (1 otherwise): a new
   * reference in *out and its address in *data. */
  int (*empty_like)(PyObject *like, PyObject **out, uint64_t *data);
  /* torch.empty_strided(sizes, strides, dtype, device) of desc (its data
   * and contiguous fields are not read). */
  int (*empty_strided)(const CascadeTorchTensor *desc, PyObject **out,
                       uint64_t *data);
} CascadeTorchBridge;

/* The other way: the merges' one-call path of cascade_mlir._runtime
 * (_gpu.MERGES, GpuModule.cpp's MergeOps) for the bridge's C++ kernels of
 * the merges' torch ops (cascade_mlir.torch_ops), a capsule named
 * CASCADE_RUNTIME_MERGES_CAPSULE from MergeOps._capsule(). Each function
 * takes the op's arguments in schema order (mask: Py_None when absent) and
 * returns a new reference: the result, Py_None when it does not take the
 * call (the op's Python kernel then does), or NULL with an exception set. */
#define CASCADE_RUNTIME_MERGES_CAPSULE "cascade_mlir._runtime.merges.v1"

typedef PyObject *(*CascadeMergeFn)(void *self, PyObject *const *args);

typedef struct CascadeMergeOps {
  uint32_t abi;               /* CASCADE_TORCH_BRIDGE_ABI */
  uint32_t size;              /* sizeof(CascadeMergeOps) */
  void *self;                 /* the MergeOps the capsule keeps alive */
  CascadeMergeFn merge_state; /* v_a, s_a, v_b, s_b -> (v, s) */
  CascadeMergeFn merge_state_in_place; /* v, s, v_other, s_other, mask */
  CascadeMergeFn merge_states;         /* v, s -> (v, s) */
} CascadeMergeOps;

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* CASCADE_PYTHON_TORCHBRIDGEABI_H */
