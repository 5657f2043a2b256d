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

void expectTensor(const TensorArg &a, const char *name, const Signature &sig,
                  ElemType dtype, const std::vector<int64_t> &shape,
                  const char *what) {
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
  if (!a.contiguous())
    throw py::value_error(std::string(name) +
                          " must be contiguous (row-major): the kernels "
                          "address it as one flat buffer");
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
      "q_data_type");
}

TensorArg Checker::checkOut(py::handle out, const TensorArg &q,
                            int64_t stream) const {
  TensorArg to = probe(out, "out", stream);
  checkOut(to, q);
  return to;
}

void Checker::checkOut(const TensorArg &to, const TensorArg &q) const {
  expectTensor(to, "out", sig, sig.oType, {q.shape[0], q.shape[1], q.shape[2]},
               "the shape of q, in the planned output dtype");
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
                     std::vector<py::object> &alive) const {
  const bool pair =
      py::isinstance<py::tuple>(kv) || py::isinstance<py::list>(kv);
  if (!pair) {
    TensorArg a = probe(kv, slot ? "k_shared" : "paged_kv_cache", stream);
    alive.push_back(a.keepAlive);
    bindPool(a, slot, ptrs, counts);
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
  bindPair(k, v, slot, ptrs, counts);
  return true;
}

void Checker::bindPool(const TensorArg &a, int slot,
                       std::array<uint64_t, kNumRoles> &ptrs,
                       std::array<int64_t, kNumRoles> &counts) const {
  const int64_t page = sig.config.pageSize, h = sig.config.numKvHeads,
                d = sig.config.headDim;
  const bool hnd = sig.hnd();
  const char *name = slot ? "k_shared" : "paged_kv_cache";
  expectTensor(a, name, sig, sig.kvType,
               hnd ? std::vector<int64_t>{-1, 2, h, page, d}
                   : std::vector<int64_t>{-1, 2, page, h, d},
               hnd ? "[max_num_pages, 2, num_kv_heads, page_size, "
                     "head_dim] for HND"
                   : "[max_num_pages, 2, page_size, num_kv_heads, "
                     "head_dim] for NHD");
  checkPages(a.shape[0], slot, name);
  const size_t r = static_cast<size_t>(Role::KV0);
  ptrs[r] = a.ptr;
  counts[r] = a.numel();
}

void Checker::bindPair(const TensorArg &k, const TensorArg &v, int slot,
                       std::array<uint64_t, kNumRoles> &ptrs,
                       std::array<int64_t, kNumRoles> &counts) const {
  const int64_t page = sig.config.pageSize, h = sig.config.numKvHeads,
                d = sig.config.headDim;
  const bool hnd = sig.hnd();
  const char *what = hnd ? "[max_num_pages, num_kv_heads, page_size, "
                           "head_dim] for HND"
                         : "[max_num_pages, page_size, num_kv_heads, "
                           "head_dim] for NHD";
  const std::vector<int64_t> shape = hnd ? std::vector<int64_t>{-1, h, page, d}
                                         : std::vector<int64_t>{-1, page, h, d};
  const char *kName = slot ? "k_shared" : "paged_kv_cache[0]";
  const char *vName = slot ? "v_shared" : "paged_kv_cache[1]";
  expectTensor(k, kName, sig, sig.kvType, shape, what);
  expectTensor(v, vName, sig, sig.kvType, shape, what);
  if (k.shape[0] != v.shape[0])
    throw py::value_error(std::string(kName) + " and " + vName +
                          " have different numbers of pages");
  checkPages(k.shape[0], slot, slot ? "k_shared" : "paged_kv_cache");
  const size_t kr = static_cast<size_t>(slot ? Role::K1 : Role::K0);
  const size_t vr = static_cast<size_t>(slot ? Role::V1 : Role::V0);
  ptrs[kr] = k.ptr;
  counts[kr] = k.numel();
  ptrs[vr] = v.ptr;
  counts[vr] = v.numel();
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
