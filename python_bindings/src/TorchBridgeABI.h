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

/* The other way: the runtime's one-call paths for the bridge's C++ kernels
 * of cascade_mlir's torch ops (cascade_mlir.torch_ops), as C functions on
 * tensors the bridge describes (CascadeTorchTensor: no Python object is
 * made or read on the way) and outputs it allocates with at:: calls. They
 * are called with the GIL held and return 0 when they launched, 1 when they
 * do not take the call (nothing launched: a check failed, or the call needs
 * Python first; the op's Python kernel then runs and raises the checked
 * path's error), or -1 with a Python exception set (a launch failed).
 * `stream` is the CUstream to launch on: torch's current stream of the
 * tensors' device. */

/* The merges (_gpu.MERGES, MergeOps.cpp's MergeOps), from
 * MergeOps._capsule(): a capsule named CASCADE_RUNTIME_MERGES_CAPSULE.
 * `t` holds the op's tensors in schema order (an absent mask has ndim -1),
 * then the outputs:
 *   merge_state          v_a, s_a, v_b, s_b, v (like v_a), s (like s_a)
 *   merge_state_in_place v, s, v_other, s_other, mask
 *   merge_states         v, s, v_out [rows, heads, dim] of v's dtype,
 *                        s_out [rows, heads] float32 (both contiguous) */
#define CASCADE_RUNTIME_MERGES_CAPSULE "cascade_mlir._runtime.merges.v2"

typedef int (*CascadeMergeFn)(void *self, const CascadeTorchTensor *t,
                              uint64_t stream);

typedef struct CascadeMergeOps {
  uint32_t abi;  /* CASCADE_TORCH_BRIDGE_ABI */
  uint32_t size; /* sizeof(CascadeMergeOps) */
  void *self;    /* the MergeOps the capsule keeps alive */
  CascadeMergeFn merge_state;
  CascadeMergeFn merge_state_in_place;
  CascadeMergeFn merge_states;
} CascadeMergeOps;

/* One wrapper's planned run (the runtime's Program, _runtime.Program's
 * _runner() capsule named CASCADE_RUNTIME_RUNNER_CAPSULE) for the kernels
 * of cascade_mlir::run and run_out: what program.run(q, kv, out, lse)
 * does, kv being paged_kv_cache, or (paged_kv_cache, v_cache) when has_v.
 * out is given (run: at::empty_like(q), as run() allocates it); lse is read
 * when has_lse (run: [rows, num_qo_heads] float32). */
#define CASCADE_RUNTIME_RUNNER_CAPSULE "cascade_mlir._runtime.runner.v1"

typedef struct CascadeRunCall {
  CascadeTorchTensor q;
  CascadeTorchTensor kv; /* the 5-D pool, or the k pool of a pair */
  CascadeTorchTensor v;  /* the v pool of a pair (has_v) */
  CascadeTorchTensor out;
  CascadeTorchTensor lse; /* has_lse */
  int32_t has_v;
  int32_t has_lse;
  uint64_t stream;
} CascadeRunCall;

typedef int (*CascadeRunFn)(void *self, const CascadeRunCall *call);

typedef struct CascadeRunner {
  uint32_t abi;  /* CASCADE_TORCH_BRIDGE_ABI */
  uint32_t size; /* sizeof(CascadeRunner) */
  void *self;    /* the Program the capsule keeps alive */
  CascadeRunFn run;
} CascadeRunner;

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* CASCADE_PYTHON_TORCHBRIDGEABI_H */
