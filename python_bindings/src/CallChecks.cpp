//===- CallChecks.cpp - run()'s argument checks ---------------------------===//

#include "CallChecks.h"
#include "ConfigDict.h"

#include <string>

namespace py = pybind11;
using namespace cascade::runtime;

namespace cascade::python {

void setPlanStatics(PlanInputs &in, const contract::AttentionConfig &c) {
  in.num_qo_heads = c.numQoHeads;
  in.num_kv_heads = c.numKvHeads;
  in.head_dim = c.headDim;
  in.head_dim_vo = c.splitHeadDims() ? c.vDim() : 0;
  in.page_size = c.pageSize;
  in.q_dtype = c.qType;
  in.kv_dtype = c.kvType;
  in.o_dtype = c.oType;
}

static std::string dims(const std::vector<int64_t> &v) {
  std::string s = "[";
  bool first = true;
  for (int64_t x : v) {
    s += (first ? "" : ", ") + (x < 0 ? std::string("*") : std::to_string(x));
    first = false;
  }
  return s + "]";
}

int64_t spannedElements(const TensorArg &a) {
  if (a.numel() == 0)
    return 0;
  int64_t last = 0;
  for (int i = 0; i < a.ndim; ++i)
    last += (a.shape[i] - 1) * a.strides[i];
  return last + 1;
}

int64_t pageStrideOf(const TensorArg &a) {
  if (a.ndim < 2)
    return -1;
  int64_t inner = 1;
  for (int i = a.ndim - 1; i >= 1; --i) {
    if (a.shape[i] != 1 && a.strides[i] != inner)
      return -1;
    inner *= a.shape[i];
  }
  if (a.shape[0] <= 1)
    return inner;
  return a.strides[0] >= inner ? a.strides[0] : -1;
}

/// Whether a 3-D [rows, heads, head_dim] view has a contiguous head_dim
/// and non-negative row and head strides; `written`: and no two of its
/// (row, head) vectors overlap.
static bool rowsStrided(const TensorArg &a, bool written) {
  if (a.ndim != 3 || a.numel() == 0)
    return a.contiguous();
  if (a.shape[2] != 1 && a.strides[2] != 1)
    return false;
  if (a.strides[0] < 0 || a.strides[1] < 0)
    return false;
  if (!written)
    return true;
  // The two outer dimensions, inner (smaller stride) first: each step of
  // a dimension must clear everything the dimensions inside it span.
  int inner = a.strides[0] <= a.strides[1] ? 0 : 1, outer = 1 - inner;
  if (a.shape[inner] == 1)
    std::swap(inner, outer);
  int64_t span = a.shape[2];
  for (int d : {inner, outer}) {
    if (a.shape[d] == 1)
      continue;
    if (a.strides[d] < span)
      return false;
    span = a.strides[d] * (a.shape[d] - 1) + span;
  }
  return true;
}

void expectTensor(const TensorArg &a, const char *name, const Signature &sig,
                  ElemType dtype, const std::vector<int64_t> &shape,
                  const char *what, Layout layout) {
  const bool here = sig.device < 0 ? !a.cuda && a.device == -1
                                   : a.cuda && a.device == sig.device;
  if (!here)
    throw py::value_error(std::string(name) + " is on " + a.deviceString() +
                          "; the wrapper runs on " +
                          (sig.device < 0
                               ? std::string("the host")
                               : "cuda:" + std::to_string(sig.device)) +
                          " (the device of its float_workspace_buffer)");
  if (a.dtype != dtype)
    throw py::type_error(std::string(name) + " has dtype " +
                         elemTypeName(a.dtype) + ", expected " +
                         elemTypeName(dtype) + " (" + what + ")");
  bool ok = a.ndim == static_cast<int>(shape.size());
  int i = 0;
  for (int64_t d : shape) {
    ok = ok && (d < 0 || a.shape[i] == d);
    ++i;
  }
  if (!ok)
    throw py::value_error(std::string(name) + " has shape " + a.shapeString() +
                          ", expected " + dims(shape) + " (" + what + ")");
  if (layout == Layout::Contiguous && !a.contiguous())
    throw py::value_error(std::string(name) +
                          " must be contiguous (row-major): the kernels "
                          "address it as one flat buffer");
  if (layout == Layout::PagesStrided) {
    bool ok = a.numel() == 0 || a.shape[a.ndim - 1] == 1 ||
              a.strides[a.ndim - 1] == 1;
    for (int i = 0; i + 1 < a.ndim; ++i)
      ok = ok && a.strides[i] >= 0;
    if (!ok)
      throw py::value_error(std::string(name) + " has strides " +
                            a.stridesString() +
                            ": the kernels take a cache whose head_dim is "
                            "contiguous (stride 1) and whose other strides "
                            "are not negative");
    return;
  }
  if (layout != Layout::Contiguous &&
      !rowsStrided(a, layout == Layout::RowsStridedWritten))
    throw py::value_error(
        std::string(name) + " has strides " + a.stridesString() +
        (layout == Layout::RowsStridedWritten
             ? ": the kernels take an output whose head_dim is contiguous "
               "(stride 1) and whose rows and heads do not overlap"
             : ": the kernels take a view whose head_dim is contiguous "
               "(stride 1) and whose row and head strides are not "
               "negative"));
}

TensorArg Checker::checkQ(py::handle q, int64_t stream) const {
  TensorArg tq = probe(q, "q", stream);
  checkQ(tq);
  return tq;
}

void Checker::checkQ(const TensorArg &tq) const {
  const int64_t qRows = tq.ndim == 3 ? tq.shape[0] : -1;
  expectTensor(
      tq, "q", sig, sig.qType,
      {qRows == cap ? cap : rows, sig.config.numQoHeads, sig.config.headDim},
      "[rows planned, num_qo_heads, head_dim] in the planned "
      "q_data_type",
      Layout::RowsStrided);
}

TensorArg Checker::checkOut(py::handle out, const TensorArg &q,
                            int64_t stream) const {
  TensorArg to = probe(out, "out", stream);
  checkOut(to, q);
  return to;
}

void Checker::checkOut(const TensorArg &to, const TensorArg &q) const {
  if (sig.config.splitHeadDims()) {
    expectTensor(to, "out", sig, sig.oType,
                 {q.shape[0], q.shape[1], sig.config.vDim()},
                 "[rows of q, num_qo_heads, head_dim_vo], in the planned "
                 "output dtype",
                 Layout::RowsStridedWritten);
    return;
  }
  expectTensor(to, "out", sig, sig.oType, {q.shape[0], q.shape[1], q.shape[2]},
               "the shape of q, in the planned output dtype",
               Layout::RowsStridedWritten);
}

TensorArg Checker::checkLse(py::handle lse, const TensorArg &q,
                            int64_t stream) const {
  TensorArg tl = probe(lse, "lse", stream);
  checkLse(tl, q);
  return tl;
}

void Checker::checkLse(const TensorArg &tl, const TensorArg &q) const {
  expectTensor(tl, "lse", sig, ElemType::F32, {q.shape[0], q.shape[1]},
               "[rows, num_qo_heads] float32");
}

bool Checker::bindKv(py::handle kv, int slot, int64_t stream,
                     std::array<uint64_t, kNumRoles> &ptrs,
                     std::array<int64_t, kNumRoles> &counts,
                     std::vector<py::object> &alive,
                     std::array<TensorArg, 2> *pairOut,
                     TensorArg *poolOut) const {
  const bool pair =
      py::isinstance<py::tuple>(kv) || py::isinstance<py::list>(kv);
  if (!pair) {
    TensorArg a = probe(kv, slot ? "k_shared" : "paged_kv_cache", stream);
    alive.push_back(a.keepAlive);
    bindPool(a, slot, ptrs, counts);
    if (poolOut)
      *poolOut = a;
    return false;
  }
  py::sequence seq = py::reinterpret_borrow<py::sequence>(kv);
  if (py::len(seq) != 2)
    throw py::value_error(std::string(slot ? "k_shared" : "paged_kv_cache") +
                          " must be one 5-D tensor or a (k_cache, "
                          "v_cache) pair");
  TensorArg k = probe(seq[0], "k_cache", stream);
  TensorArg v = probe(seq[1], "v_cache", stream);
  alive.push_back(k.keepAlive);
  alive.push_back(v.keepAlive);
  // (pool[:, 0], pool[:, 1]) of one 5-D pool: the pool itself (never with
  // a head_dim of v of its own: a pool cannot hold it).
  TensorArg pool;
  // (The shared prefix of slot 1 runs pair kernels, ragged K/V kernels
  // without a page table: they stay a pair. Packed K and V views of a QKV
  // projection, V right after K, would otherwise read as a pool.)
  if (slot == 0 && pagedSlot0 && !sig.config.splitHeadDims() &&
      poolOfPair(k, v, pool)) {
    bindPool(pool, slot, ptrs, counts);
    if (poolOut)
      *poolOut = pool;
    return false;
  }
  bindPair(k, v, slot, ptrs, counts);
  if (pairOut)
    *pairOut = {k, v};
  return true;
}

bool Checker::poolOfPair(const TensorArg &k, const TensorArg &v,
                         TensorArg &pool) const {
  if (k.ndim != 4 || v.ndim != 4 || k.dtype != v.dtype || k.cuda != v.cuda ||
      k.device != v.device || k.shape[0] < 1)
    return false;
  int64_t inner = 1;
  for (int i = 3; i >= 1; --i) {
    if (k.shape[i] != v.shape[i] || k.strides[i] != inner ||
        v.strides[i] != inner)
      return false;
    inner *= k.shape[i];
  }
  // K's and V's pages alike, each a pool page apart (2 * inner; more in a
  // view of a larger cache), V the second half of K's page.
  const int64_t bytes = elemTypeBytes(k.dtype);
  if (k.shape[0] != v.shape[0] ||
      (k.shape[0] > 1 &&
       (k.strides[0] < 2 * inner || v.strides[0] != k.strides[0])) ||
      v.ptr != k.ptr + static_cast<uint64_t>(inner * bytes))
    return false;
  const int64_t pageStride = k.shape[0] > 1 ? k.strides[0] : 2 * inner;
  pool = k;
  pool.ndim = 5;
  pool.shape[0] = k.shape[0];
  pool.shape[1] = 2;
  for (int i = 1; i < 4; ++i)
    pool.shape[i + 1] = k.shape[i];
  pool.setRowMajorStrides();
  pool.strides[0] = pageStride;
  return true;
}

void Checker::bindPool(const TensorArg &a, int slot,
                       std::array<uint64_t, kNumRoles> &ptrs,
                       std::array<int64_t, kNumRoles> &counts) const {
  const int64_t page = sig.config.pageSize, h = sig.config.numKvHeads,
                d = sig.config.headDim;
  const bool hnd = sig.hnd();
  const char *name = slot ? "k_shared" : "paged_kv_cache";
  if (sig.config.splitHeadDims())
    throw py::value_error(
        std::string(name) + " is one tensor, but the plan's head_dim_vo (" +
        std::to_string(sig.config.vDim()) + ") differs from head_dim (" +
        std::to_string(d) +
        "): pass a (k_cache, v_cache) pair, k [..., head_dim] and v [..., "
        "head_dim_vo] (a 5-D pool holds k and v of one head_dim)");
  // Slot 0's pool may be a view whose pages lie apart (one layer of a
  // larger cache: run() binds its kv_stride_page); the shared prefix of
  // slot 1 is contiguous.
  expectTensor(a, name, sig, sig.kvType,
               hnd ? std::vector<int64_t>{-1, 2, h, page, d}
                   : std::vector<int64_t>{-1, 2, page, h, d},
               hnd ? "[max_num_pages, 2, num_kv_heads, page_size, "
                     "head_dim] for HND"
                   : "[max_num_pages, 2, page_size, num_kv_heads, "
                     "head_dim] for NHD",
               slot ? Layout::Contiguous : Layout::PagesStrided);
  if (!a.contiguous() && pageStrideOf(a) < 0)
    throw py::value_error(std::string(name) + " has strides " +
                          a.stridesString() +
                          ": a view of a cache is taken where its pages keep "
                          "the contiguous layout inside (only the page "
                          "stride may differ, as in one layer of a cache of "
                          "every layer)");
  checkPages(a.shape[0], slot, name);
  const size_t r = static_cast<size_t>(slot ? Role::KV1 : Role::KV0);
  ptrs[r] = a.ptr;
  counts[r] = a.contiguous() ? a.numel() : spannedElements(a);
}

void Checker::bindPair(const TensorArg &k, const TensorArg &v, int slot,
                       std::array<uint64_t, kNumRoles> &ptrs,
                       std::array<int64_t, kNumRoles> &counts) const {
  const int64_t page = sig.config.pageSize, h = sig.config.numKvHeads,
                d = sig.config.headDim, dv = sig.config.vDim();
  const bool hnd = sig.hnd();
  const char *what = hnd ? "[max_num_pages, num_kv_heads, page_size, "
                           "head_dim] for HND"
                         : "[max_num_pages, page_size, num_kv_heads, "
                           "head_dim] for NHD";
  // v's head_dim where it has its own (head_dim_vo).
  const char *vWhat = !sig.config.splitHeadDims() ? what
                      : hnd ? "[max_num_pages, num_kv_heads, page_size, "
                              "head_dim_vo] for HND"
                            : "[max_num_pages, page_size, num_kv_heads, "
                              "head_dim_vo] for NHD";
  auto shapeOf = [&](int64_t dim) {
    return hnd ? std::vector<int64_t>{-1, h, page, dim}
               : std::vector<int64_t>{-1, page, h, dim};
  };
  const char *kName = slot ? "k_shared" : "paged_kv_cache[0]";
  const char *vName = slot ? "v_shared" : "paged_kv_cache[1]";
  // Slot 0 may be strided views (run() binds their strides or copies);
  // the shared prefix of slot 1 is contiguous.
  const Layout layout = slot ? Layout::Contiguous : Layout::PagesStrided;
  expectTensor(k, kName, sig, sig.kvType, shapeOf(d), what, layout);
  expectTensor(v, vName, sig, sig.kvType, shapeOf(dv), vWhat, layout);
  if (k.shape[0] != v.shape[0])
    throw py::value_error(std::string(kName) + " and " + vName +
                          " have different numbers of pages");
  checkPages(k.shape[0], slot, slot ? "k_shared" : "paged_kv_cache");
  const size_t kr = static_cast<size_t>(slot ? Role::K1 : Role::K0);
  const size_t vr = static_cast<size_t>(slot ? Role::V1 : Role::V0);
  ptrs[kr] = k.ptr;
  counts[kr] = k.contiguous() ? k.numel() : spannedElements(k);
  ptrs[vr] = v.ptr;
  counts[vr] = v.contiguous() ? v.numel() : spannedElements(v);
}

void Checker::checkPages(int64_t pages, int slot, const char *name) const {
  if (maxPageId[slot] >= pages)
    throw py::value_error(std::string(name) + " has " + std::to_string(pages) +
                          " pages but the plan reads page " +
                          std::to_string(maxPageId[slot]));
}

void checkCall(py::handle q, py::handle kv, py::handle out, py::handle lse,
               const py::dict &config, int64_t rows, int64_t maxPageId,
               int device) {
  Signature sig(attentionConfigFromDict(config), device, false);
  Checker c{sig, rows, rows, {maxPageId, -1}};
  TensorArg tq = c.checkQ(q);
  std::array<uint64_t, kNumRoles> ptrs{};
  std::array<int64_t, kNumRoles> counts{};
  std::vector<py::object> alive;
  c.bindKv(kv, 0, -1, ptrs, counts, alive);
  if (!out.is_none())
    c.checkOut(out, tq, -1);
  if (!lse.is_none())
    c.checkLse(lse, tq, -1);
}

} // namespace cascade::python
