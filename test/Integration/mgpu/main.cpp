//===- main.cpp - mgpu integration test driver ----------------------------===//
//
// Runs host code compiled from cascade IR (host.o, see `tools/cascade-dev gpu
// host-object`)
// against libcascade_mlir_cuda_runtime.so, which provides the mgpu* entry
// points that MLIR's gpu-to-llvm lowering calls, and compares the results
// with the runtime's float64 reference on fresh random inputs: merge_state
// (with empty states) and the shipped two-level cascade example
// (examples/cascade_two_level_decode.mlir: a shared prefix on the tensor-core
// prefill, the suffixes on a decode that merges itself into the state, its
// output buffers allocated on the device by the compiled code), its planned
// form (examples/cascade_two_level_planned.mlir: both levels planned by the
// runtime shim on every call, the shared prefix split over the SMs at
// B = 128, prefix 32768), planned_graph.mlir in CUDA-graph mode (plan
// function, run function, replan with other lengths into the same plans and
// addresses, run again) and the automatic cascade example. Then the key
// cascade of issue 17 (B = 128, prefix 32768, 256 own tokens each, 32/8 and
// 32/32 heads): checks and device-event timings (LaunchTimer.h) of the
// planned, automatic and graph-mode functions, in "mgpu key" lines that
// compare.py reads. Large batches are checked on a seeded sample of 64 query
// rows (request, head), always with the first and last requests: the full
// float64 reference of a B = 128 prefix-32768 batch takes minutes. Each step
// prints its wall time. Exit code 0 only when every checked element is
// within tolerance.
//
//===----------------------------------------------------------------------===//

#include "LaunchTimer.h"

#include "cascade/Runtime/Driver.h"
#include "cascade/Runtime/Half.h"
#include "cascade/Runtime/Reference.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <malloc.h>
#include <random>
#include <string>
#include <unistd.h>
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
}

// The planned example, the graph-mode plan/run functions and the automatic
// cascade example (a plain decode batch), by type: the key cascade has the
// same functions at 32/8 and 32/32 heads.
using PlannedFn =
    void(TwoLevelResult *result, MemRef<uint16_t, 3> *q,
         MemRef<uint16_t, 5> *cache, MemRef<int32_t, 1> *sharedQo,
         MemRef<int32_t, 1> *sharedKv, MemRef<int32_t, 1> *sharedIdx,
         MemRef<int32_t, 1> *sharedLast, MemRef<int32_t, 1> *uniqueQo,
         MemRef<int32_t, 1> *uniqueKv, MemRef<int32_t, 1> *uniqueIdx,
         MemRef<int32_t, 1> *uniqueLast, MemRef<int32_t, 1> *hostSharedQo,
         MemRef<int32_t, 1> *hostSharedKv, MemRef<int32_t, 1> *hostSharedLast,
         MemRef<int32_t, 1> *hostUniqueKv, MemRef<int32_t, 1> *hostUniqueLast);
using PlanGraphFn = void(void *plans, MemRef<int32_t, 1> *sharedQo,
                         MemRef<int32_t, 1> *sharedKv,
                         MemRef<int32_t, 1> *sharedLast,
                         MemRef<int32_t, 1> *uniqueKv,
                         MemRef<int32_t, 1> *uniqueLast);
using RunGraphFn =
    void(MemRef<uint16_t, 3> *q, MemRef<uint16_t, 5> *cache,
         MemRef<int32_t, 1> *sharedQo, MemRef<int32_t, 1> *sharedKv,
         MemRef<int32_t, 1> *sharedIdx, MemRef<int32_t, 1> *sharedLast,
         MemRef<int32_t, 1> *uniqueQo, MemRef<int32_t, 1> *uniqueKv,
         MemRef<int32_t, 1> *uniqueIdx, MemRef<int32_t, 1> *uniqueLast,
         void *sharedPlan, void *uniquePlan, MemRef<uint16_t, 3> *o,
         MemRef<float, 2> *lse);
using AutoFn = void(TwoLevelResult *result, MemRef<uint16_t, 3> *q,
                    MemRef<uint16_t, 5> *cache, MemRef<int32_t, 1> *kvIndptr,
                    MemRef<int32_t, 1> *kvIndices,
                    MemRef<int32_t, 1> *kvLastPageLen,
                    MemRef<int32_t, 1> *hostKvIndptr,
                    MemRef<int32_t, 1> *hostKvIndices,
                    MemRef<int32_t, 1> *hostKvLastPageLen);

extern "C" {
PlannedFn _mlir_ciface_cascade_two_level_planned,
    _mlir_ciface_cascade_two_level_planned_h32x8,
    _mlir_ciface_cascade_two_level_planned_h32x32;
PlanGraphFn _mlir_ciface_plan_graph, _mlir_ciface_plan_graph_h32x8,
    _mlir_ciface_plan_graph_h32x32;
RunGraphFn _mlir_ciface_run_graph, _mlir_ciface_run_graph_h32x8,
    _mlir_ciface_run_graph_h32x32;
AutoFn _mlir_ciface_cascade_auto_decode, _mlir_ciface_cascade_auto_decode_h32x8,
    _mlir_ciface_cascade_auto_decode_h32x32;
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
/// A batch of the two-level examples (by default their 64/8 heads; D = 128,
/// page 16): a prefix of `prefix` tokens shared by B requests, a suffix of
/// 1..maxSuffix tokens each (request 1 without one), or of exactly
/// maxSuffix tokens each when `exactSuffix`; pages shuffled through the
/// pool; fp16 inputs (uniform values of unit variance, from a fast
/// generator seeded by `rng`: a B = 128 batch at 32/32 heads has 0.5 G).
struct TwoLevelBatch {
  static constexpr int64_t d = 128, ps = 16;
  int64_t hqo = 64, hkv = 8;
  int64_t b = 0, prefix = 0, numPages = 0;
  std::vector<int32_t> sqo, skv, sidx, slast, uqo, ukv, uidx, ulast;
  std::vector<uint16_t> hpool, hq;

  TwoLevelBatch(int64_t b, int64_t prefix, int32_t maxSuffix, std::mt19937 &rng,
                int64_t hqo = 64, int64_t hkv = 8, bool exactSuffix = false)
      : hqo(hqo), hkv(hkv), b(b), prefix(prefix) {
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
      const int32_t len =
          exactSuffix ? maxSuffix : (i == 1 ? 0 : suffixLen(rng));
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
    fill(hpool, size_t(numPages) * 2 * ps * hkv * d, rng);
    fill(hq, size_t(b) * hqo * d, rng);
  }

  /// Halves of uniform values in [-sqrt(3), sqrt(3)]: 16 bits of splitmix64
  /// each, through a table of their halves.
  static void fill(std::vector<uint16_t> &out, size_t n, std::mt19937 &rng) {
    static const std::vector<uint16_t> table = [] {
      std::vector<uint16_t> t(1 << 16);
      for (size_t u = 0; u < t.size(); ++u)
        t[u] = cascade::runtime::floatToHalf(static_cast<float>(
            (double(u) / 65535.0 * 2 - 1) * 1.7320508075688772));
      return t;
    }();
    uint64_t state = (uint64_t(rng()) << 32) | rng();
    out.resize(n);
    for (size_t i = 0; i < n; i += 4) {
      uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
      z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
      z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
      z ^= z >> 31;
      for (size_t j = i; j < std::min(n, i + 4); ++j, z >>= 16)
        out[j] = table[z & 0xffff];
    }
  }
  int64_t kvLen(int64_t i) const {
    const int32_t pages = ukv[i + 1] - ukv[i];
    return prefix + (pages ? (pages - 1) * ps + ulast[i] : 0);
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
  /// NaN-poisoned outputs on the device: o [B, Hqo, D], lse [B, Hqo].
  std::pair<MemRef<uint16_t, 3>, MemRef<float, 2>>
  outputs(const TwoLevelBatch &t) {
    uint16_t *o = own(toDevice(
        std::vector<uint16_t>(size_t(t.b) * t.hqo * t.d, 0x7e00 /* NaN */)));
    float *lse = own(toDevice(std::vector<float>(
        size_t(t.b) * t.hqo, std::numeric_limits<float>::quiet_NaN())));
    return {view(o, {t.b, t.hqo, t.d}), view(lse, {t.b, t.hqo})};
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

/// The float64 reference of the query rows of request i whose heads share
/// KV head `kh` (G = Hqo / Hkv rows: heads kh*G .. kh*G+G-1): the runtime's
/// ref::cascade over the two levels of those rows (the shared prefix, then
/// the request's own pages), on a copy of the KV head's pages in level
/// order (G query heads over one KV head). o [G, D], lse [G].
void groupReference(const TwoLevelBatch &t, int64_t i, int64_t kh, double *o,
                    double *lse) {
  using namespace cascade::runtime;
  const int64_t g = t.hqo / t.hkv;
  std::vector<int32_t> pages(t.sidx);
  pages.insert(pages.end(), t.uidx.begin() + t.ukv[i],
               t.uidx.begin() + t.ukv[i + 1]);
  const int64_t n = std::max<int64_t>(int64_t(pages.size()), 1);
  static std::vector<float> pool; // reused: one copy is 34 MB at 32768
  pool.resize(size_t(n) * 2 * t.ps * t.d);
  std::vector<float> q(g * t.d);
  for (size_t p = 0; p < pages.size(); ++p)
    for (int64_t kv = 0; kv < 2; ++kv)
      for (int64_t slot = 0; slot < t.ps; ++slot) {
        const uint16_t *src =
            &t.hpool[(((int64_t(pages[p]) * 2 + kv) * t.ps + slot) * t.hkv +
                      kh) *
                     t.d];
        float *dst = &pool[((p * 2 + kv) * t.ps + slot) * t.d];
        for (int64_t x = 0; x < t.d; ++x)
          dst[x] = halfToFloat(src[x]);
      }
  for (int64_t x = 0; x < g * t.d; ++x)
    q[x] = halfToFloat(t.hq[(i * t.hqo + kh * g) * t.d + x]);
  const auto sp = static_cast<int32_t>(t.sidx.size());
  const auto up = static_cast<int32_t>(pages.size()) - sp;
  std::vector<ref::AttentionBatch> levels(2);
  for (int v = 0; v < 2; ++v) {
    ref::AttentionBatch &rb = levels[v];
    rb.q = q.data();
    rb.numQoHeads = g;
    rb.qoIndptr = {0, 1};
    rb.kvIndptr = {0, v == 0 ? sp : up};
    for (int32_t p = 0; p < rb.kvIndptr[1]; ++p)
      rb.kvIndices.push_back(v == 0 ? p : sp + p);
    rb.kvLastPageLen = {v == 0 ? t.slast[0] : t.ulast[i]};
    rb.kv = ref::PagedKvCache::combined(pool.data(), n, t.ps, 1, t.d,
                                        ref::KvLayout::NHD);
  }
  Status st = ref::cascade(levels, ref::AttentionOptions(), o, lse);
  if (!st.ok()) {
    std::printf("mgpu reference: %s\n", st.message().c_str());
    std::fill(o, o + g * t.d, std::numeric_limits<double>::quiet_NaN());
    std::fill(lse, lse + g, std::numeric_limits<double>::quiet_NaN());
  }
}

/// The (request, KV head) groups of query rows a check compares: all of
/// them when the batch is small; else at least 64 rows' worth, from a
/// generator seeded by `seed` (printed), always including the first and the
/// last request and request 1.
std::vector<std::pair<int64_t, int64_t>> checkedGroups(const TwoLevelBatch &t,
                                                       uint32_t seed) {
  std::vector<std::pair<int64_t, int64_t>> groups;
  int64_t work = 0;
  for (int64_t i = 0; i < t.b; ++i)
    work += t.hqo * t.kvLen(i);
  if (work <= (int64_t(1) << 22)) {
    for (int64_t i = 0; i < t.b; ++i)
      for (int64_t kh = 0; kh < t.hkv; ++kh)
        groups.emplace_back(i, kh);
    return groups;
  }
  std::mt19937 pick(seed);
  std::uniform_int_distribution<int64_t> req(0, t.b - 1), head(0, t.hkv - 1);
  for (int64_t i : {int64_t(0), std::min<int64_t>(1, t.b - 1), t.b - 1})
    groups.emplace_back(i, head(pick));
  while (int64_t(groups.size()) * (t.hqo / t.hkv) < 64) {
    const int64_t i = req(pick);
    groups.emplace_back(i, head(pick));
  }
  return groups;
}

/// Copies (o, lse) back and compares the checked rows with the float64
/// reference of the cascade; prints one line.
int checkTwoLevel(const char *what, const TwoLevelBatch &t, const void *o,
                  const void *lse) {
  using namespace cascade::runtime;
  std::vector<uint16_t> ho(size_t(t.b) * t.hqo * t.d);
  std::vector<float> hs(size_t(t.b) * t.hqo);
  mgpuMemcpy(ho.data(), const_cast<void *>(o), ho.size() * 2, nullptr);
  mgpuMemcpy(hs.data(), const_cast<void *>(lse), hs.size() * 4, nullptr);
  static uint32_t sampleSeed = 1;
  const uint32_t seed = sampleSeed++;
  const auto groups = checkedGroups(t, seed);
  const int64_t g = t.hqo / t.hkv;
  double maxErr = 0, maxRef = 0, maxLseErr = 0;
  int64_t bad = 0;
  std::vector<double> rv(g * t.d), rs(g);
  for (auto [i, kh] : groups) {
    groupReference(t, i, kh, rv.data(), rs.data());
    for (int64_t j = 0; j < g; ++j) {
      const size_t row = size_t(i * t.hqo + kh * g + j);
      for (int64_t x = 0; x < t.d; ++x) {
        double got = halfToFloat(ho[row * t.d + x]), want = rv[j * t.d + x];
        bad += std::isnan(got) || std::isnan(want);
        maxErr = std::max(maxErr, std::fabs(got - want));
        maxRef = std::max(maxRef, std::fabs(want));
      }
      bad += std::isnan(hs[row]) || std::isnan(rs[j]);
      maxLseErr = std::max(maxLseErr, std::fabs(hs[row] - rs[j]) /
                                          std::max(1.0, std::fabs(rs[j])));
    }
  }
  const int64_t rows = int64_t(groups.size()) * g;
  const double rel = maxRef > 0 ? maxErr / maxRef : maxErr;
  const bool ok = bad == 0 && rel <= 1e-3 && maxLseErr <= 1e-3;
  std::printf("mgpu %-22s %lld/%lld B=%-3lld prefix=%-5lld rows=%lld/%lld%s "
              "max_rel_err(o)=%.3e max_rel_err(lse)=%.3e bad=%lld %s\n",
              what, (long long)t.hqo, (long long)t.hkv, (long long)t.b,
              (long long)t.prefix, (long long)rows, (long long)t.b * t.hqo,
              rows < t.b * t.hqo
                  ? (" (sample " + std::to_string(seed) + ")").c_str()
                  : "",
              rel, maxLseErr, (long long)bad, ok ? "PASS" : "FAIL");
  std::fflush(stdout);
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

/// Median of a sample (after `skip` warm-up entries).
double median(std::vector<double> v, size_t skip = 0) {
  std::vector<double> w(v.begin() + std::min(skip, v.size()), v.end());
  if (w.empty())
    return std::numeric_limits<double>::quiet_NaN();
  std::sort(w.begin(), w.end());
  return w[w.size() / 2];
}

/// The two plans a graph-mode plan function returns.
struct GraphPlans {
  void *shared = nullptr, *unique = nullptr;
};

/// The compiled functions of the key cascade at one head count
/// (`tools/cascade-dev gpu host-object`: the planned and automatic examples at
/// those
/// heads, key_graph.mlir.in's plan/run pair).
struct KeyFunctions {
  int64_t hqo, hkv;
  PlannedFn *planned;
  AutoFn *autoDecode;
  PlanGraphFn *plan;
  RunGraphFn *run;
};

/// Device time (summed over a call's launches, LaunchTimer.h) and host
/// time of `reps` calls of `call` (the first 5 warm up): their medians and
/// the kernels of the last call.
struct Timing {
  double deviceUs = 0, hostUs = 0;
  std::vector<std::string> kernels;
};
template <typename Call> Timing timeCalls(Call call, int reps = 30) {
  std::vector<double> dev, host;
  Timing t;
  for (int i = 0; i < reps; ++i) {
    mgputest::beginLaunches();
    auto start = std::chrono::steady_clock::now();
    call();
    host.push_back(std::chrono::duration<double, std::micro>(
                       std::chrono::steady_clock::now() - start)
                       .count());
    mgputest::Launches l = mgputest::endLaunches();
    dev.push_back(l.deviceUs);
    t.kernels = std::move(l.kernels);
  }
  t.deviceUs = median(dev, 5);
  t.hostUs = median(host, 5);
  return t;
}

/// One machine-readable result line (test/Integration/mgpu/compare.py).
void printKey(const KeyFunctions &f, const char *what, const Timing &t) {
  std::string kernels;
  for (const std::string &k : t.kernels)
    kernels += (kernels.empty() ? "" : ",") + k;
  std::printf("mgpu key %lld/%lld %-13s device_us=%.1f host_us=%.1f "
              "launches=%zu kernels=%s\n",
              (long long)f.hqo, (long long)f.hkv, what, t.deviceUs, t.hostUs,
              t.kernels.size(), kernels.c_str());
  std::fflush(stdout);
}

/// Writes new suffix lengths (1..256 tokens, on the first pages of each
/// request's own pages) into `t` and into the device arrays where the
/// captured graph reads them (same addresses, no more ids).
void shortenSuffixes(TwoLevelBatch &t, TwoLevelDevice &dv, std::mt19937 &rng) {
  std::uniform_int_distribution<int32_t> len(1, 256);
  std::vector<int32_t> ukv{0}, uidx, ulast;
  for (int64_t i = 0; i < t.b; ++i) {
    const int32_t n = len(rng), pages = (n + int32_t(t.ps) - 1) / int32_t(t.ps);
    uidx.insert(uidx.end(), t.uidx.begin() + t.ukv[i],
                t.uidx.begin() + t.ukv[i] + pages);
    ukv.push_back(ukv.back() + pages);
    ulast.push_back(n - (pages - 1) * int32_t(t.ps));
  }
  t.ukv = ukv, t.uidx = uidx, t.ulast = ulast;
  mgpuMemcpy(dv.ukv.aligned, t.ukv.data(), t.ukv.size() * 4, nullptr);
  mgpuMemcpy(dv.uidx.aligned, t.uidx.data(), t.uidx.size() * 4, nullptr);
  mgpuMemcpy(dv.ulast.aligned, t.ulast.data(), t.ulast.size() * 4, nullptr);
}

/// The key cascade of issue 17's "Done when" (B = 128, prefix 32768,
/// exactly 256 own tokens each, page 16, fp16) at one head count: checks
/// (sampled rows against float64) and device-event timings of the compiled
/// host code: planned on every call, automatic cascade on the same batch as
/// a plain batch, graph mode (plan once, run many; then the run function
/// captured into a CUDA graph and replayed, also after a replan).
int runKey(const KeyFunctions &f, std::mt19937 &rng) {
  using namespace cascade::runtime::cuda;
  TwoLevelBatch t(128, 32768, 256, rng, f.hqo, f.hkv, /*exactSuffix=*/true);
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
  int failures = 0;
  auto planned = [&](bool check) {
    TwoLevelResult r{};
    f.planned(&r, &dv.q, &dv.pool, &dv.sqo, &dv.skv, &dv.sidx, &dv.slast,
              &dv.uqo, &dv.ukv, &dv.uidx, &dv.ulast, &hsqo, &hskv, &hslast,
              &hukv, &hulast);
    if (check)
      failures += checkTwoLevel("key planned", t, r.o.aligned, r.lse.aligned);
    mgpuMemFree(r.o.allocated, nullptr);
    mgpuMemFree(r.lse.allocated, nullptr);
  };
  auto autoCascade = [&](bool check) {
    TwoLevelResult r{};
    f.autoDecode(&r, &dv.q, &dv.pool, &kvp, &kvi, &kl, &hkvp, &hkvi, &hkl);
    if (check)
      failures += checkTwoLevel("key auto", t, r.o.aligned, r.lse.aligned);
    mgpuMemFree(r.o.allocated, nullptr);
    mgpuMemFree(r.lse.allocated, nullptr);
  };
  planned(true);
  autoCascade(true);
  printKey(f, "planned", timeCalls([&] { planned(false); }));
  printKey(f, "auto", timeCalls([&] { autoCascade(false); }));

  // Graph mode: plan once, run many.
  GraphPlans plans, replanned;
  auto outputs = dv.outputs(t);
  auto &mo = outputs.first;
  auto &ml = outputs.second;
  void *o = mo.aligned, *lse = ml.aligned;
  auto run = [&] {
    f.run(&dv.q, &dv.pool, &dv.sqo, &dv.skv, &dv.sidx, &dv.slast, &dv.uqo,
          &dv.ukv, &dv.uidx, &dv.ulast, plans.shared, plans.unique, &mo, &ml);
  };
  Timing plan =
      timeCalls([&] { f.plan(&plans, &hsqo, &hskv, &hslast, &hukv, &hulast); });
  std::printf("mgpu key %lld/%lld graph plan    host_us=%.1f (both levels)\n",
              (long long)f.hqo, (long long)f.hkv, plan.hostUs);
  run();
  failures += checkTwoLevel("key graph run", t, o, lse);
  printKey(f, "graph run", timeCalls(run));

  // The run function's launches captured into a CUDA graph, replayed.
  const DriverApi *api = nullptr;
  CUstream stream = nullptr;
  CUgraph graph = nullptr;
  CUgraphExec exec = nullptr;
  bool ok = getDriver(api).ok() &&
            api->cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING) == 0;
  if (ok) {
    mgputest::redirectStreams(stream);
    ok = api->cuStreamBeginCapture(stream,
                                   CU_STREAM_CAPTURE_MODE_THREAD_LOCAL) == 0;
    if (ok)
      run();
    ok = api->cuStreamEndCapture(stream, &graph) == 0 && ok;
    mgputest::redirectStreams(nullptr);
    ok = ok && api->cuGraphInstantiateWithFlags(&exec, graph, 0) == 0;
  }
  if (!ok) {
    std::printf("mgpu key %lld/%lld graph capture FAIL\n", (long long)f.hqo,
                (long long)f.hkv);
    return failures + 1;
  }
  CUevent e0 = nullptr, e1 = nullptr;
  api->cuEventCreate(&e0, CU_EVENT_DEFAULT);
  api->cuEventCreate(&e1, CU_EVENT_DEFAULT);
  std::vector<double> replay;
  for (int rep = 0; rep < 23; ++rep) { // 3 warm up, 20 timed
    api->cuEventRecord(e0, stream);
    for (int i = 0; i < 5; ++i)
      api->cuGraphLaunch(exec, stream);
    api->cuEventRecord(e1, stream);
    api->cuEventSynchronize(e1);
    float ms = 0;
    api->cuEventElapsedTime(&ms, e0, e1);
    replay.push_back(1e3 * ms / 5);
  }
  Timing replayTiming;
  replayTiming.deviceUs = median(replay, 3);
  replayTiming.hostUs = std::numeric_limits<double>::quiet_NaN();
  printKey(f, "graph replay", replayTiming);
  // Replan with other suffix lengths into the same plans, replay.
  shortenSuffixes(t, dv, rng);
  hukv = hostView(t.ukv), hulast = hostView(t.ulast);
  f.plan(&replanned, &hsqo, &hskv, &hslast, &hukv, &hulast);
  api->cuGraphLaunch(exec, stream);
  api->cuStreamSynchronize(stream);
  failures += checkTwoLevel("key replay replan", t, o, lse);
  const bool same =
      replanned.shared == plans.shared && replanned.unique == plans.unique;
  std::printf("mgpu key %lld/%lld graph replan keeps the plans: %s\n",
              (long long)f.hqo, (long long)f.hkv, same ? "PASS" : "FAIL");
  api->cuEventDestroy(e0);
  api->cuEventDestroy(e1);
  api->cuGraphExecDestroy(exec);
  api->cuGraphDestroy(graph);
  api->cuStreamDestroy(stream);
  return failures + (same ? 0 : 1);
}

/// The planned cascade in CUDA-graph mode (B = 64): plan, run, then replan
/// with other lengths (the same plans, every planned array where it was)
/// and run again.
int runGraph(std::mt19937 &rng) {
  GraphPlans first, plans;
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
    auto outputs = dv.outputs(t);
    auto &mo = outputs.first;
    auto &ml = outputs.second;
    _mlir_ciface_run_graph(&dv.q, &dv.pool, &dv.sqo, &dv.skv, &dv.sidx,
                           &dv.slast, &dv.uqo, &dv.ukv, &dv.uidx, &dv.ulast,
                           plans.shared, plans.unique, &mo, &ml);
    failures += checkTwoLevel(step ? "graph after replan" : "graph first plan",
                              t, mo.aligned, ml.aligned);
  }
  bool same = plans.shared == first.shared && plans.unique == first.unique;
  for (int l = 0; l < 2; ++l)
    same = same && arrays[0][l].aligned == arrays[1][l].aligned &&
           arrays[0][l].sizes[0] == arrays[1][l].sizes[0];
  std::printf("mgpu graph replan keeps plans, addresses and sizes: %s\n",
              same ? "PASS" : "FAIL");
  return failures + (same ? 0 : 1);
}

/// Prints how long the step since the last call took.
/// (An empty name starts the clock.)
void stepDone(const char *step) {
  static auto last = std::chrono::steady_clock::now();
  auto now = std::chrono::steady_clock::now();
  if (!*step) {
    last = now;
    return;
  }
  std::printf("mgpu step %-34s %6.1f s\n", step,
              std::chrono::duration<double>(now - last).count());
  std::fflush(stdout);
  last = now;
}

} // namespace

int main() {
  // The float64 reference copies a KV head's 33k tokens per check group
  // (tens of MB): keep such blocks in the heap instead of mapping and
  // faulting them in again for every group.
  mallopt(M_MMAP_THRESHOLD, 1 << 30);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
  // The host object's global constructors load (and JIT) its kernel
  // modules before main: the process's age says how long that took.
  double startedS = 0, uptimeS = 0;
  if (FILE *f = std::fopen("/proc/self/stat", "r")) {
    unsigned long long ticks = 0;
    // Field 22 (starttime); the command name (field 2) has no spaces here.
    if (std::fscanf(f,
                    "%*d %*s %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u "
                    "%*u %*u %*d %*d %*d %*d %*d %*d %llu",
                    &ticks) == 1)
      startedS = double(ticks) / double(sysconf(_SC_CLK_TCK));
    std::fclose(f);
  }
  if (FILE *f = std::fopen("/proc/uptime", "r")) {
    if (std::fscanf(f, "%lf", &uptimeS) != 1)
      uptimeS = 0;
    std::fclose(f);
  }
  std::printf("mgpu step %-34s %6.1f s\n", "module loads (before main)",
              startedS > 0 && uptimeS > startedS ? uptimeS - startedS : 0.0);
  stepDone("");
  const auto mainStart = std::chrono::steady_clock::now();
  // No driver or device: the shim has already said why on stderr.
  void *probe = mgpuMemAlloc(16, nullptr, false);
  if (!probe) {
    std::printf("SKIP: no usable CUDA device\n");
    return 0;
  }
  mgpuMemFree(probe, nullptr);
  // CASCADE_MGPU_SEED reproduces a run (the seed is printed).
  const char *seedEnv = std::getenv("CASCADE_MGPU_SEED");
  const uint32_t seed =
      seedEnv ? static_cast<uint32_t>(std::strtoul(seedEnv, nullptr, 10))
              : std::random_device{}();
  std::printf("mgpu seed %u (CASCADE_MGPU_SEED)\n", seed);
  std::mt19937 rng(seed);
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
  stepDone("merge_state, two-level example");
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
  stepDone("planned example");
  failures += runGraph(rng);
  ++cases;
  stepDone("graph mode (B=64)");
  // Automatic cascades: a long shared prefix (found: two levels), and one
  // shared page (not worth a level: the plain planned decode).
  for (auto [b, prefix] :
       {std::pair<int64_t, int64_t>{64, 4096}, {128, 32768}, {32, 16}}) {
    failures += runAuto(b, prefix, rng);
    ++cases;
  }
  stepDone("auto cascade example");
  // The key cascade at the heads of issue 17's "Done when".
  const KeyFunctions keys[] = {
      {32, 8, _mlir_ciface_cascade_two_level_planned_h32x8,
       _mlir_ciface_cascade_auto_decode_h32x8, _mlir_ciface_plan_graph_h32x8,
       _mlir_ciface_run_graph_h32x8},
      {32, 32, _mlir_ciface_cascade_two_level_planned_h32x32,
       _mlir_ciface_cascade_auto_decode_h32x32, _mlir_ciface_plan_graph_h32x32,
       _mlir_ciface_run_graph_h32x32}};
  for (const KeyFunctions &f : keys) {
    failures += runKey(f, rng);
    ++cases;
    stepDone(f.hkv == 8 ? "key cascade 32/8" : "key cascade 32/32");
  }
  std::printf("mgpu step %-34s %6.1f s\n", "total in main",
              std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                            mainStart)
                  .count());
  std::printf("%d passed, %d failed\n", cases - failures, failures);
  return failures == 0 ? 0 : 1;
}
