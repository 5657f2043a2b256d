//===- CallChecks.h - run()'s argument checks -------------------*- C++ -*-===//
//
// What Program.run() accepts (Signature: the static configuration the
// kernels were built for) and the checks of one call against it and its
// plan (Checker): ValueError / TypeError naming the argument, before
// anything is launched. Checker also binds the KV caches' addresses to the
// launches' roles.
//
//===----------------------------------------------------------------------===//

#ifndef CASCADE_PYTHON_CALLCHECKS_H
#define CASCADE_PYTHON_CALLCHECKS_H

#include "TensorArgs.h"

#include "cascade/Contract/AttentionConfig.h"
#include "cascade/Runtime/Program.h"

#include <pybind11/pybind11.h>

#include <array>
#include <cstdint>
#include <vector>

namespace cascade::python {

namespace py = pybind11;

/// What run() accepts: the static configuration the kernels were built for.
struct Signature {
  contract::AttentionConfig config;
  /// The tensor element types of config's q, KV and output dtypes.
  ElemType qType = ElemType::F16, kvType = ElemType::F16, oType = ElemType::F16;
  int device = 0;
  /// The contiguous shared prefix of slot 1 (shared-prefix wrappers):
  /// [len, Hkv, D] (NHD) or [Hkv, len, D] (HND) pair, tokens in pages.
  bool sharedSlot = false;
  bool set = false;

  Signature() = default;
  Signature(const contract::AttentionConfig &c, int device, bool sharedSlot)
      : config(c), qType(elemTypeOf(c.qType)), kvType(elemTypeOf(c.kvType)),
        oType(elemTypeOf(c.oType)), device(device), sharedSlot(sharedSlot),
        set(true) {}
  bool hnd() const { return config.layout == contract::KvLayout::HND; }
};

/// The static part of a level's plan inputs: the configuration's.
void setPlanStatics(runtime::PlanInputs &in,
                    const contract::AttentionConfig &c);

/// How a tensor may be laid out: contiguous, or (q, out) any strides of
/// its rows and heads with head_dim contiguous, as FlashInfer takes them;
/// a written tensor's rows and heads must not overlap.
/// PagesStrided: a (k, v) pair's pools, any strides with head_dim
/// contiguous (the kernels of ragged K/V take their token and head strides;
/// for the others run() makes contiguous copies, counted).
enum class Layout { Contiguous, RowsStrided, RowsStridedWritten, PagesStrided };

/// Checks device, dtype, rank, sizes (-1 = any) and the layout.
void expectTensor(const TensorArg &a, const char *name, const Signature &sig,
                  ElemType dtype, const std::vector<int64_t> &shape,
                  const char *what, Layout layout = Layout::Contiguous);

/// The elements a [rows, heads, head_dim] view spans from its first (the
/// memref size the kernels are given).
int64_t spannedElements(const TensorArg &a);

/// The page stride of a paged cache (5-D pool or one of a 4-D pair) whose
/// pages keep the contiguous layout inside, however far apart they lie (a
/// view of one layer of a larger cache); -1 where a page's own layout is
/// strided or pages overlap.
int64_t pageStrideOf(const TensorArg &a);

/// The checks of one call against what was planned (Signature, rows):
/// ValueError / TypeError naming the argument, before anything is launched.
struct Checker {
  const Signature &sig;
  int64_t rows, cap;
  std::array<int64_t, 2> maxPageId; ///< per KV slot
  /// Slot 0's levels have page tables (not ragged K/V, whose kernels
  /// compute a key's address from kv_indptr): only then may a (k, v) pair
  /// that lies as a pool's halves run on the pool kernels.
  bool pagedSlot0 = true;

  /// q: [rows, Hqo, D] (or the row capacity of a CUDA-graph plan).
  TensorArg checkQ(py::handle q, int64_t stream = -1) const;
  void checkQ(const TensorArg &tq) const;
  TensorArg checkOut(py::handle out, const TensorArg &q, int64_t stream) const;
  void checkOut(const TensorArg &to, const TensorArg &q) const;
  TensorArg checkLse(py::handle lse, const TensorArg &q, int64_t stream) const;
  void checkLse(const TensorArg &tl, const TensorArg &q) const;

  /// The KV cache of a slot: a 5-D pool or a (k, v) pair of 4-D pools;
  /// true for a pair (then in `pair`; a pool in `pool`). Slot 0's pool may
  /// be a view whose pages lie apart (pageStrideOf).
  bool bindKv(py::handle kv, int slot, int64_t stream,
              std::array<uint64_t, runtime::kNumRoles> &ptrs,
              std::array<int64_t, runtime::kNumRoles> &counts,
              std::vector<py::object> &alive,
              std::array<TensorArg, 2> *pair = nullptr,
              TensorArg *pool = nullptr) const;

  /// Whether (k, v) are the K and V halves of one 5-D pool (`pool[:, 0]`,
  /// `pool[:, 1]`, as FlashInfer's tests and engines slice a cache; the
  /// pool may be a view of a larger cache, pageStrideOf), and that pool.
  bool poolOfPair(const TensorArg &k, const TensorArg &v,
                  TensorArg &pool) const;
  /// A 5-D pool [pages, 2, page, Hkv, D] (NHD) / [pages, 2, Hkv, page, D];
  /// slot 0's may have a page stride of its own.
  void bindPool(const TensorArg &a, int slot,
                std::array<uint64_t, runtime::kNumRoles> &ptrs,
                std::array<int64_t, runtime::kNumRoles> &counts) const;

  /// A (k, v) pair of 4-D pools [pages, page, Hkv, D] (NHD) / [pages, Hkv,
  /// page, D] (HND).
  void bindPair(const TensorArg &k, const TensorArg &v, int slot,
                std::array<uint64_t, runtime::kNumRoles> &ptrs,
                std::array<int64_t, runtime::kNumRoles> &counts) const;

  void checkPages(int64_t pages, int slot, const char *name) const;
};

/// run()'s argument checks against a signature, without a device: device
/// -1 expects host tensors (numpy), so the checks run in CI.
void checkCall(py::handle q, py::handle kv, py::handle out, py::handle lse,
               const py::dict &config, int64_t rows, int64_t maxPageId,
               int device);

} // namespace cascade::python

#endif // CASCADE_PYTHON_CALLCHECKS_H
