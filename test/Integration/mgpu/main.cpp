//===- main.cpp - mgpu integration test driver ----------------------------===//
//
// Runs host code compiled from cascade IR (host.o, see build_host_object.sh)
// against libcascade_mlir_cuda_runtime.so, which provides the mgpu* entry
// points that MLIR's gpu-to-llvm lowering calls, and compares the results
// with the runtime's float64 reference on fresh random inputs: merge_state
// (with empty states) and the shipped two-level cascade example
// (examples/cascade_two_level_decode.mlir: a shared prefix on the tensor-core
// prefill, the suffixes on a decode that merges itself into the state, its
// output buffers allocated on the device by the compiled code). Exit code 0
// only when every element is within tolerance.
//
//===----------------------------------------------------------------------===//

#include "cascade/Runtime/Half.h"
#include "cascade/Runtime/Reference.h"

#include <algorithm>
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
// From libcascade_mlir_cuda_runtime.so.
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
/// The shipped two-level example (64 query heads, 8 KV heads, D = 128, page
/// 16): a prefix of `prefix` tokens shared by B requests, a suffix of up to
/// 300 tokens each (request 1 without one).
int runTwoLevel(int64_t b, int64_t prefix, std::mt19937 &rng) {
  using namespace cascade::runtime;
  constexpr int64_t hqo = 64, hkv = 8, d = 128, ps = 16;
  std::normal_distribution<float> normal;
  std::uniform_int_distribution<int32_t> suffixLen(1, 300);
  const int32_t prefixPages = static_cast<int32_t>((prefix + ps - 1) / ps);
  std::vector<int32_t> sqo{0, static_cast<int32_t>(b)}, skv{0, prefixPages},
      sidx, slast{static_cast<int32_t>(prefix - (prefixPages - 1) * ps)};
  std::vector<int32_t> uqo{0}, ukv{0}, uidx, ulast;
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
  const int64_t numPages = std::max<int32_t>(nextPage, 1);
  std::vector<float> pool(size_t(numPages) * 2 * ps * hkv * d),
      q(size_t(b) * hqo * d);
  for (auto *v : {&pool, &q})
    for (float &x : *v)
      x = static_cast<float>(roundToHalf(normal(rng)));
  std::vector<uint16_t> hpool(pool.size()), hq(q.size());
  for (size_t i = 0; i < pool.size(); ++i)
    hpool[i] = floatToHalf(pool[i]);
  for (size_t i = 0; i < q.size(); ++i)
    hq[i] = floatToHalf(q[i]);
  uint16_t *dq = toDevice(hq), *dpool = toDevice(hpool);
  std::vector<int32_t *> ints;
  auto dev1 = [&](std::vector<int32_t> &v) {
    if (v.empty())
      v.push_back(0); // a real buffer even for 0 ids
    ints.push_back(toDevice(v));
    return view(ints.back(), {int64_t(v.size())});
  };
  const int64_t uniqueIds = ukv.back();
  auto mq = view(dq, {b, hqo, d});
  auto mpool = view(dpool, {numPages, 2, ps, hkv, d});
  auto msqo = dev1(sqo), mskv = dev1(skv), msidx = dev1(sidx),
       mslast = dev1(slast), muqo = dev1(uqo), mukv = dev1(ukv),
       muidx = dev1(uidx), mulast = dev1(ulast);
  muidx.sizes[0] = uniqueIds; // the level's kv_indptr[B] ids
  TwoLevelResult r{};
  _mlir_ciface_cascade_two_level_decode(&r, &mq, &mpool, &msqo, &mskv, &msidx,
                                        &mslast, &muqo, &mukv, &muidx, &mulast);
  std::vector<uint16_t> ho(size_t(b) * hqo * d);
  std::vector<float> hs(size_t(b) * hqo);
  mgpuMemcpy(ho.data(), r.o.aligned, ho.size() * 2, nullptr);
  mgpuMemcpy(hs.data(), r.lse.aligned, hs.size() * 4, nullptr);
  mgpuMemFree(r.o.allocated, nullptr);
  mgpuMemFree(r.lse.allocated, nullptr);
  mgpuMemFree(dq, nullptr);
  mgpuMemFree(dpool, nullptr);
  for (int32_t *p : ints)
    mgpuMemFree(p, nullptr);

  std::vector<ref::AttentionBatch> levels(2);
  for (int v = 0; v < 2; ++v) {
    ref::AttentionBatch &rb = levels[v];
    rb.q = q.data();
    rb.numQoHeads = hqo;
    rb.qoIndptr = v == 0 ? sqo : uqo;
    rb.kvIndptr = v == 0 ? skv : ukv;
    rb.kvIndices = v == 0 ? sidx : uidx;
    rb.kvIndices.resize(rb.kvIndptr.back());
    rb.kvLastPageLen = v == 0 ? slast : ulast;
    rb.kv = ref::PagedKvCache::combined(pool.data(), numPages, ps, hkv, d,
                                        ref::KvLayout::NHD);
  }
  std::vector<double> rv(ho.size()), rs(hs.size());
  Status st =
      ref::cascade(levels, ref::AttentionOptions(), rv.data(), rs.data());
  if (!st.ok()) {
    std::printf("mgpu two-level reference: %s FAIL\n", st.message().c_str());
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
  std::printf("mgpu two-level example B=%-3lld prefix=%-5lld "
              "max_rel_err(o)=%.3e max_rel_err(lse)=%.3e bad=%lld %s\n",
              (long long)b, (long long)prefix, rel, maxLseErr, (long long)bad,
              ok ? "PASS" : "FAIL");
  return ok ? 0 : 1;
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
  std::printf("%d passed, %d failed\n", cases - failures, failures);
  return failures == 0 ? 0 : 1;
}
