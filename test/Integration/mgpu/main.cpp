//===- main.cpp - mgpu integration test driver ----------------------------===//
//
// Runs host code compiled from cascade IR (host.o, see build_host_object.sh)
// against libcascade_mlir_cuda_runtime.so, which provides the mgpu* entry
// points that MLIR's gpu-to-llvm lowering calls, and compares the results
// with the runtime's float64 reference on fresh random inputs: merge_state
// (with empty states) and the shipped two-level cascade example
// (examples/cascade_two_level_decode.mlir: a shared prefix on the tensor-core
// prefill, the suffixes on a decode that merges itself into the state, its
// output buffers allocated on the device by the compiled code), its planned
// form (examples/cascade_two_level_planned.mlir: both levels planned by the
// runtime shim on every call, the shared prefix split over the SMs at
// B = 128, prefix 32768), and planned_graph.mlir in CUDA-graph mode (plan
// function, run function, replan with other lengths into the same plans and
// addresses, run again). Exit code 0 only when every element is within
// tolerance.
//
//===----------------------------------------------------------------------===//

#include "cascade/Runtime/Half.h"
#include "cascade/Runtime/Reference.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

namespace {
template <typename T, int N> struct MemRef {
  T *allocated;
  T *aligned;
  int64_t offset;
  int64_t sizes[N];
  int64_t strides[N];
};
} // namespace

extern "C" {
// From the MLIR-compiled host object (llvm.emit_c_interface).
void _mlir_ciface_merge_state(MemRef<uint16_t, 3> *va, MemRef<float, 2> *sa,
                              MemRef<uint16_t, 3> *vb, MemRef<float, 2> *sb,
                              MemRef<uint16_t, 3> *v, MemRef<float, 2> *s);
// The example's function (two results: a struct of two descriptors).
struct TwoLevelResult;
void _mlir_ciface_cascade_two_level_decode(
    TwoLevelResult *result, MemRef<uint16_t, 3> *q, MemRef<uint16_t, 5> *cache,
    MemRef<int32_t, 1> *sharedQo, MemRef<int32_t, 1> *sharedKv,
    MemRef<int32_t, 1> *sharedIdx, MemRef<int32_t, 1> *sharedLast,
    MemRef<int32_t, 1> *uniqueQo, MemRef<int32_t, 1> *uniqueKv,
    MemRef<int32_t, 1> *uniqueIdx, MemRef<int32_t, 1> *uniqueLast);
// The planned example and the graph-mode plan/run functions.
void _mlir_ciface_cascade_two_level_planned(
    TwoLevelResult *result, MemRef<uint16_t, 3> *q, MemRef<uint16_t, 5> *cache,
    MemRef<int32_t, 1> *sharedQo, MemRef<int32_t, 1> *sharedKv,
    MemRef<int32_t, 1> *sharedIdx, MemRef<int32_t, 1> *sharedLast,
    MemRef<int32_t, 1> *uniqueQo, MemRef<int32_t, 1> *uniqueKv,
    MemRef<int32_t, 1> *uniqueIdx, MemRef<int32_t, 1> *uniqueLast,
    MemRef<int32_t, 1> *hostSharedQo, MemRef<int32_t, 1> *hostSharedKv,
    MemRef<int32_t, 1> *hostSharedLast, MemRef<int32_t, 1> *hostUniqueKv,
    MemRef<int32_t, 1> *hostUniqueLast);
void _mlir_ciface_plan_graph(void *plans, MemRef<int32_t, 1> *sharedQo,
                             MemRef<int32_t, 1> *sharedKv,
                             MemRef<int32_t, 1> *sharedLast,
                             MemRef<int32_t, 1> *uniqueKv,
                             MemRef<int32_t, 1> *uniqueLast);
void _mlir_ciface_run_graph(
    MemRef<uint16_t, 3> *q, MemRef<uint16_t, 5> *cache,
    MemRef<int32_t, 1> *sharedQo, MemRef<int32_t, 1> *sharedKv,
    MemRef<int32_t, 1> *sharedIdx, MemRef<int32_t, 1> *sharedLast,
    MemRef<int32_t, 1> *uniqueQo, MemRef<int32_t, 1> *uniqueKv,
    MemRef<int32_t, 1> *uniqueIdx, MemRef<int32_t, 1> *uniqueLast,
    void *sharedPlan, void *uniquePlan, MemRef<uint16_t, 3> *o,
    MemRef<float, 2> *lse);
// The automatic-cascade example: a plain decode batch.
void _mlir_ciface_cascade_auto_decode(
    TwoLevelResult *result, MemRef<uint16_t, 3> *q, MemRef<uint16_t, 5> *cache,
    MemRef<int32_t, 1> *kvIndptr, MemRef<int32_t, 1> *kvIndices,
    MemRef<int32_t, 1> *kvLastPageLen, MemRef<int32_t, 1> *hostKvIndptr,
    MemRef<int32_t, 1> *hostKvIndices, MemRef<int32_t, 1> *hostKvLastPageLen);
// From libcascade_mlir_cuda_runtime.so (the plan shim: MgpuPlan.cpp).
void _mlir_ciface_cascade_mgpu_plan_i32(MemRef<int32_t, 1> *out, void *plan,
                                        int64_t which);
void *mgpuMemAlloc(uint64_t sizeBytes, void *stream, bool isHostShared);
void mgpuMemFree(void *ptr, void *stream);
void mgpuMemcpy(void *dst, void *src, size_t sizeBytes, void *stream);
}

struct TwoLevelResult {
  MemRef<uint16_t, 3> o;
  MemRef<float, 2> lse;
};

namespace {
constexpr int64_t kHeads = 32, kDim = 128;

template <typename T> T *toDevice(const std::vector<T> &host) {
  auto *dev = static_cast<T *>(mgpuMemAlloc(host.size() * sizeof(T), nullptr,
                                            /*isHostShared=*/false));
  mgpuMemcpy(dev, const_cast<T *>(host.data()), host.size() * sizeof(T),
             nullptr);
  return dev;
}

template <typename T, int N>
MemRef<T, N> view(T *dev, const int64_t (&sizes)[N]) {
  MemRef<T, N> m{dev, dev, 0, {}, {}};
  int64_t stride = 1;
  for (int i = N - 1; i >= 0; --i) {
    m.sizes[i] = sizes[i];
    m.strides[i] = stride;
    stride *= sizes[i];
  }
  return m;
}

int runCase(int64_t rows, std::mt19937 &rng) {
  using namespace cascade::runtime;
  std::normal_distribution<float> normal;
  const int64_t nv = rows * kHeads * kDim, ns = rows * kHeads;
  std::vector<float> va(nv), vb(nv), sa(ns), sb(ns);
  for (auto *v : {&va, &vb})
    for (float &x : *v)
      x = static_cast<float>(roundToHalf(normal(rng)));
  for (auto *s : {&sa, &sb})
    for (float &x : *s)
      x = 8.0f * normal(rng);
  // Empty states: a in row 0, b in row 1, both in row 2 (when present).
  const float ninf = -std::numeric_limits<float>::infinity();
  for (int64_t h = 0; h < kHeads; ++h) {
    if (rows > 0)
      sa[h] = ninf;
    if (rows > 1)
      sb[kHeads + h] = ninf;
    if (rows > 2)
      sa[2 * kHeads + h] = sb[2 * kHeads + h] = ninf;
  }
  std::vector<uint16_t> ha(nv), hb(nv), hv(nv, 0x7e00 /* NaN poison */);
  std::vector<float> hs(ns, std::numeric_limits<float>::quiet_NaN());
  for (int64_t i = 0; i < nv; ++i) {
    ha[i] = floatToHalf(va[i]);
    hb[i] = floatToHalf(vb[i]);
  }
  uint16_t *dva = toDevice(ha), *dvb = toDevice(hb), *dv = toDevice(hv);
  float *dsa = toDevice(sa), *dsb = toDevice(sb), *ds = toDevice(hs);
  auto mva = view(dva, {rows, kHeads, kDim}),
       mvb = view(dvb, {rows, kHeads, kDim}),
       mv = view(dv, {rows, kHeads, kDim});
  auto msa = view(dsa, {rows, kHeads}), msb = view(dsb, {rows, kHeads}),
       ms = view(ds, {rows, kHeads});
  _mlir_ciface_merge_state(&mva, &msa, &mvb, &msb, &mv, &ms);
  mgpuMemcpy(hv.data(), dv, nv * sizeof(uint16_t), nullptr);
  mgpuMemcpy(hs.data(), ds, ns * sizeof(float), nullptr);
  for (void *p : {(void *)dva, (void *)dvb, (void *)dv, (void *)dsa,
                  (void *)dsb, (void *)ds})
    mgpuMemFree(p, nullptr);

  std::vector<double> da(va.begin(), va.end()), db(vb.begin(), vb.end());
  std::vector<double> dsa64(sa.begin(), sa.end()), dsb64(sb.begin(), sb.end());
  std::vector<double> rv(nv), rs(ns);
  ref::mergeState<double, double>(da.data(), dsa64.data(), db.data(),
                                  dsb64.data(), rv.data(), rs.data(), rows,
                                  kHeads, kDim);
  double num = 0, den = 0, maxLseErr = 0;
  int64_t bad = 0;
  for (int64_t i = 0; i < nv; ++i) {
    double got = halfToFloat(hv[i]);
    if (std::isnan(got))
      ++bad;
    num += (got - rv[i]) * (got - rv[i]);
    den += rv[i] * rv[i];
  }
  for (int64_t i = 0; i < ns; ++i) {
    if (std::isinf(rs[i])) {
      bad += !(std::isinf(hs[i]) && hs[i] < 0);
      continue;
    }
    maxLseErr = std::max(maxLseErr, std::fabs(hs[i] - rs[i]));
  }
  double rel = den > 0 ? std::sqrt(num / den) : std::sqrt(num);
  bool ok = bad == 0 && rel <= 1e-3 && maxLseErr <= 1e-4;
  std::printf(
      "mgpu merge_state rows=%-5lld rel_err(v)=%.3e max_abs_err(s)=%.3e "
      "bad=%lld %s\n",
      (long long)rows, rel, maxLseErr, (long long)bad, ok ? "PASS" : "FAIL");
  return ok ? 0 : 1;
}
/// A batch of the shipped two-level examples (64 query heads, 8 KV heads,
/// D = 128, page 16): a prefix of `prefix` tokens shared by B requests, a
/// suffix of up to `maxSuffix` tokens each (request 1 without one), pages
/// shuffled through the pool; fp16 inputs as floats and as halves.
struct TwoLevelBatch {
  static constexpr int64_t hqo = 64, hkv = 8, d = 128, ps = 16;
  int64_t b = 0, prefix = 0, numPages = 0;
  std::vector<int32_t> sqo, skv, sidx, slast, uqo, ukv, uidx, ulast;
  std::vector<float> pool, q;
  std::vector<uint16_t> hpool, hq;

  TwoLevelBatch(int64_t b, int64_t prefix, int32_t maxSuffix, std::mt19937 &rng)
      : b(b), prefix(prefix) {
    std::normal_distribution<float> normal;
    std::uniform_int_distribution<int32_t> suffixLen(1, maxSuffix);
    const auto prefixPages = static_cast<int32_t>((prefix + ps - 1) / ps);
    sqo = {0, static_cast<int32_t>(b)};
    skv = {0, prefixPages};
    slast = {static_cast<int32_t>(prefix - (prefixPages - 1) * ps)};
    uqo = {0};
    ukv = {0};
    int32_t nextPage = 0;
    for (int32_t p = 0; p < prefixPages; ++p)
      sidx.push_back(nextPage++);
    for (int64_t i = 0; i < b; ++i) {
      const int32_t len = i == 1 ? 0 : suffixLen(rng);
      const int32_t pages = (len + ps - 1) / ps;
      uqo.push_back(static_cast<int32_t>(i + 1));
      ukv.push_back(ukv.back() + pages);
      for (int32_t p = 0; p < pages; ++p)
        uidx.push_back(nextPage++);
      ulast.push_back(pages ? len - (pages - 1) * ps : 1);
    }
    // Shuffle the page ids: levels read pages anywhere in the pool.
    std::vector<int32_t> perm(nextPage);
    for (int32_t p = 0; p < nextPage; ++p)
      perm[p] = p;
    std::shuffle(perm.begin(), perm.end(), rng);
    for (auto *v : {&sidx, &uidx})
      for (int32_t &x : *v)
        x = perm[x];
    numPages = std::max<int32_t>(nextPage, 1);
    pool.resize(size_t(numPages) * 2 * ps * hkv * d);
    q.resize(size_t(b) * hqo * d);
    for (auto *v : {&pool, &q})
      for (float &x : *v)
        x = static_cast<float>(cascade::runtime::roundToHalf(normal(rng)));
    for (float x : pool)
      hpool.push_back(cascade::runtime::floatToHalf(x));
    for (float x : q)
      hq.push_back(cascade::runtime::floatToHalf(x));
  }
};

/// The batch's tensors on the device, as the compiled functions take them.
struct TwoLevelDevice {
  std::vector<void *> owned;
  MemRef<uint16_t, 3> q;
  MemRef<uint16_t, 5> pool;
  MemRef<int32_t, 1> sqo, skv, sidx, slast, uqo, ukv, uidx, ulast;

  explicit TwoLevelDevice(TwoLevelBatch &t) {
    q = view(own(toDevice(t.hq)), {t.b, t.hqo, t.d});
    pool = view(own(toDevice(t.hpool)), {t.numPages, 2, t.ps, t.hkv, t.d});
    sqo = array(t.sqo), skv = array(t.skv), sidx = array(t.sidx);
    slast = array(t.slast), uqo = array(t.uqo), ukv = array(t.ukv);
    uidx = array(t.uidx), ulast = array(t.ulast);
  }
  /// An index array on the device (a real buffer even for 0 ids).
  MemRef<int32_t, 1> array(std::vector<int32_t> v) {
    const auto n = int64_t(v.size());
    if (v.empty())
      v.push_back(0);
    return view(own(toDevice(v)), {n});
  }
  ~TwoLevelDevice() {
    for (void *p : owned)
      mgpuMemFree(p, nullptr);
  }
  template <typename T> T *own(T *p) {
    owned.push_back(p);
    return p;
  }
};

/// A host view of an index array (what a plan reads).
MemRef<int32_t, 1> hostView(std::vector<int32_t> &v) {
  return view(v.data(), {int64_t(v.size())});
}

/// Copies (o, lse) back and compares them with the float64 reference of
/// the cascade; prints one line.
int checkTwoLevel(const char *what, const TwoLevelBatch &t, const void *o,
                  const void *lse) {
  using namespace cascade::runtime;
  std::vector<uint16_t> ho(size_t(t.b) * t.hqo * t.d);
  std::vector<float> hs(size_t(t.b) * t.hqo);
  mgpuMemcpy(ho.data(), const_cast<void *>(o), ho.size() * 2, nullptr);
  mgpuMemcpy(hs.data(), const_cast<void *>(lse), hs.size() * 4, nullptr);
  std::vector<ref::AttentionBatch> levels(2);
  for (int v = 0; v < 2; ++v) {
    ref::AttentionBatch &rb = levels[v];
    rb.q = t.q.data();
    rb.numQoHeads = t.hqo;
    rb.qoIndptr = v == 0 ? t.sqo : t.uqo;
    rb.kvIndptr = v == 0 ? t.skv : t.ukv;
    rb.kvIndices = v == 0 ? t.sidx : t.uidx;
    rb.kvIndices.resize(rb.kvIndptr.back());
    rb.kvLastPageLen = v == 0 ? t.slast : t.ulast;
    rb.kv = ref::PagedKvCache::combined(t.pool.data(), t.numPages, t.ps, t.hkv,
                                        t.d, ref::KvLayout::NHD);
  }
  std::vector<double> rv(ho.size()), rs(hs.size());
  Status st =
      ref::cascade(levels, ref::AttentionOptions(), rv.data(), rs.data());
  if (!st.ok()) {
    std::printf("mgpu %s reference: %s FAIL\n", what, st.message().c_str());
    return 1;
  }
  double maxErr = 0, maxRef = 0, maxLseErr = 0;
  int64_t bad = 0;
  for (size_t i = 0; i < ho.size(); ++i) {
    double got = halfToFloat(ho[i]);
    bad += std::isnan(got);
    maxErr = std::max(maxErr, std::fabs(got - rv[i]));
    maxRef = std::max(maxRef, std::fabs(rv[i]));
  }
  for (size_t i = 0; i < hs.size(); ++i) {
    bad += std::isnan(hs[i]);
    maxLseErr = std::max(maxLseErr, std::fabs(hs[i] - rs[i]) /
                                        std::max(1.0, std::fabs(rs[i])));
  }
  const double rel = maxRef > 0 ? maxErr / maxRef : maxErr;
  const bool ok = bad == 0 && rel <= 1e-3 && maxLseErr <= 1e-3;
  std::printf("mgpu %-22s B=%-3lld prefix=%-5lld "
              "max_rel_err(o)=%.3e max_rel_err(lse)=%.3e bad=%lld %s\n",
              what, (long long)t.b, (long long)t.prefix, rel, maxLseErr,
              (long long)bad, ok ? "PASS" : "FAIL");
  return ok ? 0 : 1;
}

/// The shipped two-level example, unplanned (its outputs allocated on the
/// device by the compiled code).
int runTwoLevel(int64_t b, int64_t prefix, std::mt19937 &rng) {
  TwoLevelBatch t(b, prefix, 300, rng);
  TwoLevelDevice dv(t);
  dv.uidx.sizes[0] = t.ukv.back(); // the level's kv_indptr[B] ids
  TwoLevelResult r{};
  _mlir_ciface_cascade_two_level_decode(&r, &dv.q, &dv.pool, &dv.sqo, &dv.skv,
                                        &dv.sidx, &dv.slast, &dv.uqo, &dv.ukv,
                                        &dv.uidx, &dv.ulast);
  int rc = checkTwoLevel("two-level example", t, r.o.aligned, r.lse.aligned);
  mgpuMemFree(r.o.allocated, nullptr);
  mgpuMemFree(r.lse.allocated, nullptr);
  return rc;
}

/// The planned example: each call plans both levels through the shim.
int runPlanned(int64_t b, int64_t prefix, std::mt19937 &rng) {
  TwoLevelBatch t(b, prefix, 300, rng);
  TwoLevelDevice dv(t);
  dv.uidx.sizes[0] = t.ukv.back();
  auto hsqo = hostView(t.sqo), hskv = hostView(t.skv),
       hslast = hostView(t.slast), hukv = hostView(t.ukv),
       hulast = hostView(t.ulast);
  TwoLevelResult r{};
  _mlir_ciface_cascade_two_level_planned(
      &r, &dv.q, &dv.pool, &dv.sqo, &dv.skv, &dv.sidx, &dv.slast, &dv.uqo,
      &dv.ukv, &dv.uidx, &dv.ulast, &hsqo, &hskv, &hslast, &hukv, &hulast);
  int rc = checkTwoLevel("planned example", t, r.o.aligned, r.lse.aligned);
  mgpuMemFree(r.o.allocated, nullptr);
  mgpuMemFree(r.lse.allocated, nullptr);
  return rc;
}

/// The batch of `t` as one plain batch: each request's pages are the shared
/// prefix's (page-aligned) followed by its own.
struct PlainBatch {
  std::vector<int32_t> kvIndptr{0}, kvIndices, last;
  explicit PlainBatch(const TwoLevelBatch &t) {
    for (int64_t i = 0; i < t.b; ++i) {
      kvIndices.insert(kvIndices.end(), t.sidx.begin(), t.sidx.end());
      kvIndices.insert(kvIndices.end(), t.uidx.begin() + t.ukv[i],
                       t.uidx.begin() + t.ukv[i + 1]);
      kvIndptr.push_back(static_cast<int32_t>(kvIndices.size()));
      last.push_back(t.ukv[i + 1] > t.ukv[i] ? t.ulast[i] : t.slast[0]);
    }
  }
};

/// The automatic-cascade example on a batch whose requests share a
/// page-aligned prefix: the same result as the explicit cascade.
int runAuto(int64_t b, int64_t prefix, std::mt19937 &rng) {
  TwoLevelBatch t(b, prefix, 300, rng);
  TwoLevelDevice dv(t);
  PlainBatch plain(t);
  auto kvp = dv.array(plain.kvIndptr), kvi = dv.array(plain.kvIndices),
       kl = dv.array(plain.last);
  auto hkvp = hostView(plain.kvIndptr), hkvi = hostView(plain.kvIndices),
       hkl = hostView(plain.last);
  TwoLevelResult r{};
  _mlir_ciface_cascade_auto_decode(&r, &dv.q, &dv.pool, &kvp, &kvi, &kl, &hkvp,
                                   &hkvi, &hkl);
  int rc = checkTwoLevel("auto cascade", t, r.o.aligned, r.lse.aligned);
  mgpuMemFree(r.o.allocated, nullptr);
  mgpuMemFree(r.lse.allocated, nullptr);
  return rc;
}

/// Median host time (µs) of the compiled two-level call, unplanned and
/// planned (plan + launches; every launch of gpu-to-llvm's host code is
/// synchronous), on the README's decode shape: B = 128, prefix 32768,
/// suffixes up to 256 tokens.
void benchTwoLevel(std::mt19937 &rng) {
  TwoLevelBatch t(128, 32768, 256, rng);
  TwoLevelDevice dv(t);
  dv.uidx.sizes[0] = t.ukv.back();
  auto hsqo = hostView(t.sqo), hskv = hostView(t.skv),
       hslast = hostView(t.slast), hukv = hostView(t.ukv),
       hulast = hostView(t.ulast);
  PlainBatch plain(t);
  auto kvp = dv.array(plain.kvIndptr), kvi = dv.array(plain.kvIndices),
       kl = dv.array(plain.last);
  auto hkvp = hostView(plain.kvIndptr), hkvi = hostView(plain.kvIndices),
       hkl = hostView(plain.last);
  static constexpr const char *kNames[] = {"unplanned", "planned", "auto"};
  for (int variant = 0; variant < 3; ++variant) {
    std::vector<double> us;
    for (int i = 0; i < 30; ++i) {
      TwoLevelResult r{};
      auto start = std::chrono::steady_clock::now();
      if (variant == 2)
        _mlir_ciface_cascade_auto_decode(&r, &dv.q, &dv.pool, &kvp, &kvi, &kl,
                                         &hkvp, &hkvi, &hkl);
      else if (variant == 1)
        _mlir_ciface_cascade_two_level_planned(
            &r, &dv.q, &dv.pool, &dv.sqo, &dv.skv, &dv.sidx, &dv.slast, &dv.uqo,
            &dv.ukv, &dv.uidx, &dv.ulast, &hsqo, &hskv, &hslast, &hukv,
            &hulast);
      else
        _mlir_ciface_cascade_two_level_decode(
            &r, &dv.q, &dv.pool, &dv.sqo, &dv.skv, &dv.sidx, &dv.slast, &dv.uqo,
            &dv.ukv, &dv.uidx, &dv.ulast);
      us.push_back(std::chrono::duration<double, std::micro>(
                       std::chrono::steady_clock::now() - start)
                       .count());
      mgpuMemFree(r.o.allocated, nullptr);
      mgpuMemFree(r.lse.allocated, nullptr);
    }
    std::sort(us.begin() + 5, us.end()); // the first 5 warm up
    std::printf("mgpu time two-level 64/8 B=128 prefix=32768 %-9s "
                "median %.1f us\n",
                kNames[variant], us[5 + (us.size() - 5) / 2]);
  }
}

/// The planned cascade in CUDA-graph mode (B = 64): plan, run, then replan
/// with other lengths (the same plans, every planned array where it was)
/// and run again.
int runGraph(std::mt19937 &rng) {
  struct Plans {
    void *shared, *unique;
  } first{}, plans{};
  MemRef<int32_t, 1> arrays[2][2]{};
  int failures = 0;
  for (int step = 0; step < 2; ++step) {
    TwoLevelBatch t(64, step == 0 ? 5000 : 777, step == 0 ? 300 : 40, rng);
    TwoLevelDevice dv(t);
    auto hsqo = hostView(t.sqo), hskv = hostView(t.skv),
         hslast = hostView(t.slast), hukv = hostView(t.ukv),
         hulast = hostView(t.ulast);
    _mlir_ciface_plan_graph(&plans, &hsqo, &hskv, &hslast, &hukv, &hulast);
    if (step == 0)
      first = plans;
    for (int l = 0; l < 2; ++l)
      _mlir_ciface_cascade_mgpu_plan_i32(&arrays[step][l],
                                         l ? plans.unique : plans.shared, 0);
    uint16_t *o = dv.own(toDevice(std::vector<uint16_t>(
        size_t(t.b) * t.hqo * t.d, 0x7e00 /* NaN poison */)));
    float *lse = dv.own(toDevice(std::vector<float>(
        size_t(t.b) * t.hqo, std::numeric_limits<float>::quiet_NaN())));
    auto mo = view(o, {t.b, t.hqo, t.d});
    auto ml = view(lse, {t.b, t.hqo});
    _mlir_ciface_run_graph(&dv.q, &dv.pool, &dv.sqo, &dv.skv, &dv.sidx,
                           &dv.slast, &dv.uqo, &dv.ukv, &dv.uidx, &dv.ulast,
                           plans.shared, plans.unique, &mo, &ml);
    failures += checkTwoLevel(step ? "graph after replan" : "graph first plan",
                              t, o, lse);
  }
  bool same = plans.shared == first.shared && plans.unique == first.unique;
  for (int l = 0; l < 2; ++l)
    same = same && arrays[0][l].aligned == arrays[1][l].aligned &&
           arrays[0][l].sizes[0] == arrays[1][l].sizes[0];
  std::printf("mgpu graph replan keeps plans, addresses and sizes: %s\n",
              same ? "PASS" : "FAIL");
  return failures + (same ? 0 : 1);
}

} // namespace

int main() {
  // No driver or device: the shim has already said why on stderr.
  void *probe = mgpuMemAlloc(16, nullptr, false);
  if (!probe) {
    std::printf("SKIP: no usable CUDA device\n");
    return 0;
  }
  mgpuMemFree(probe, nullptr);
  std::mt19937 rng(std::random_device{}());
  int failures = 0;
  int cases = 0;
  for (int64_t rows : {1, 3, 37, 1000, 8193}) {
    failures += runCase(rows, rng);
    ++cases;
  }
  for (auto [b, prefix] :
       {std::pair<int64_t, int64_t>{1, 17}, {7, 1000}, {64, 5000}}) {
    failures += runTwoLevel(b, prefix, rng);
    ++cases;
  }
  // Planned: small batches (unsplit), the shapes where the shared prefix
  // splits over the SMs, and the same call again (replanned in place).
  for (auto [b, prefix] : {std::pair<int64_t, int64_t>{1, 17},
                           {7, 1000},
                           {64, 5000},
                           {128, 32768},
                           {128, 32768},
                           {3, 40000}}) {
    failures += runPlanned(b, prefix, rng);
    ++cases;
  }
  failures += runGraph(rng);
  ++cases;
  // Automatic cascades: a long shared prefix (found: two levels), and one
  // shared page (not worth a level: the plain planned decode).
  for (auto [b, prefix] :
       {std::pair<int64_t, int64_t>{64, 4096}, {128, 32768}, {32, 16}}) {
    failures += runAuto(b, prefix, rng);
    ++cases;
  }
  benchTwoLevel(rng);
  std::printf("%d passed, %d failed\n", cases - failures, failures);
  return failures == 0 ? 0 : 1;
}
