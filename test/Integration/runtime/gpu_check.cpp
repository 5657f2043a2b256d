//===- gpu_check.cpp - Runtime checks on a real GPU -----------------------===//
//
// Usage: cascade-gpu-check [BUNDLE_DIR]
//
// 1. Always: loads the driver, allocates, uploads a plan image with one copy
//    and reads it back, captures a CUDA graph (memsets), replays it.
// 2. With a bundle: runs merge_state kernels and attention levels (decode /
//    prefill, split or not, with the merge_states_indptr kernel) on fresh
//    random inputs against the CPU reference, eager and under CUDA-graph
//    capture with a replan, and prints the max relative error per case.
//    Parameters are bound by the names of docs/kernel-bundle.md ("Runtime
//    binding conventions"). A kernel that cannot be checked is a failure
//    (SKIP, counted), unless the case cannot apply here, which is reported
//    as N/A with the reason (and where the kernel is checked instead).
// 3. Two-level cascades through runCascade (a shared prefix on the
//    tensor-core prefill + per-request decodes), fused (accumulating levels)
//    and unfused (merge_state_in_place), eager and graph-replayed after a
//    replan.
//    Exit code 1 if any case fails, errors or is skipped.
//
//===----------------------------------------------------------------------===//

#include "cascade/Runtime/Half.h"
#include "cascade/Runtime/Launcher.h"
#include "cascade/Runtime/Reference.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <optional>
#include <random>

using namespace cascade::runtime;

namespace {

int failures = 0;

#define CHECK_OK(expr)                                                         \
  do {                                                                         \
    Status s_ = (expr);                                                        \
    if (!s_.ok()) {                                                            \
      std::printf("ERROR %s: %s\n", #expr, s_.message().c_str());              \
      ++failures;                                                              \
      return;                                                                  \
    }                                                                          \
  } while (0)

/// Host values stored in `dtype` ("f16", "bf16", "f32") as raw bytes, and
/// the float values they represent.
struct HostTensor {
  std::string dtype;
  std::vector<uint8_t> bytes;
  std::vector<float> values;
};

HostTensor makeTensor(const std::string &dtype, std::vector<float> v) {
  HostTensor t;
  t.dtype = dtype.empty() ? "f16" : dtype;
  t.values = std::move(v);
  const size_t n = t.values.size();
  if (t.dtype == "f32") {
    t.bytes.resize(4 * n);
    std::memcpy(t.bytes.data(), t.values.data(), 4 * n);
    return t;
  }
  t.bytes.resize(2 * n);
  for (size_t i = 0; i < n; ++i) {
    uint16_t h =
        t.dtype == "bf16" ? floatToBf16(t.values[i]) : floatToHalf(t.values[i]);
    t.values[i] = t.dtype == "bf16" ? bf16ToFloat(h) : halfToFloat(h);
    std::memcpy(&t.bytes[2 * i], &h, 2);
  }
  return t;
}

std::vector<float> decode(const std::string &dtype,
                          const std::vector<uint8_t> &bytes) {
  if (dtype == "f32") {
    std::vector<float> v(bytes.size() / 4);
    std::memcpy(v.data(), bytes.data(), bytes.size());
    return v;
  }
  std::vector<float> v(bytes.size() / 2);
  for (size_t i = 0; i < v.size(); ++i) {
    uint16_t h;
    std::memcpy(&h, &bytes[2 * i], 2);
    v[i] = dtype == "bf16" ? bf16ToFloat(h) : halfToFloat(h);
  }
  return v;
}

std::vector<float> randomValues(std::mt19937_64 &rng, size_t n, float lo,
                                float hi) {
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (float &x : v)
    x = d(rng);
  return v;
}

/// Device copies, freed at scope exit.
struct DeviceArena {
  Launcher &l;
  std::vector<uint64_t> ptrs;
  explicit DeviceArena(Launcher &l) : l(l) {}
  ~DeviceArena() {
    for (uint64_t p : ptrs)
      (void)l.free(p);
  }
  uint64_t upload(const void *data, size_t bytes) {
    uint64_t p = 0;
    if (!l.alloc(bytes, p).ok())
      return 0;
    ptrs.push_back(p);
    if (bytes)
      (void)l.copyToDevice(p, data, bytes, nullptr);
    return p;
  }
  uint64_t zeros(size_t bytes) {
    std::vector<uint8_t> z(bytes, 0);
    return upload(z.data(), bytes);
  }
};

/// Normwise relative error max|a - b| / max|b| (inf entries must agree).
double relError(const std::vector<float> &got, const std::vector<double> &ref) {
  double num = 0, den = 1e-30;
  for (size_t i = 0; i < ref.size(); ++i) {
    if (std::isinf(ref[i])) {
      if (got[i] != ref[i])
        return INFINITY;
      continue;
    }
    if (std::isnan(got[i]) || std::isinf(got[i]))
      return INFINITY; // NaN never passes (max() would skip it)
    num = std::max(num, std::fabs(double(got[i]) - ref[i]));
    den = std::max(den, std::fabs(ref[i]));
  }
  return num / den;
}

/// A case that should have run and did not: a failure.
void skip(const std::string &what, const std::string &why) {
  std::printf("SKIP %s: %s\n", what.c_str(), why.c_str());
  ++failures;
}

/// A case that cannot apply here (not a failure), with the reason.
void notApplicable(const std::string &what, const std::string &why) {
  std::printf("N/A  %s: %s\n", what.c_str(), why.c_str());
}

void report(const std::string &name, double errV, double errS, double tol) {
  bool ok = errV <= tol && errS <= tol;
  std::printf("%-4s %-60s max_rel_err v=%.3e s=%.3e (tol %.0e)\n",
              ok ? "OK" : "FAIL", name.c_str(), errV, errS, tol);
  failures += !ok;
}

void checkDriver(Launcher &l) {
  DeviceArena arena(l);
  cuda::CUstream stream = nullptr;
  CHECK_OK(l.createStream(stream));
  // One-copy plan upload.
  std::vector<int32_t> kvIndptr{0, 300, 301, 340}, last{7, 16, 1};
  PlanInputs in;
  in.kv_indptr = ArrayView<int32_t>(kvIndptr);
  in.kv_last_page_len = ArrayView<int32_t>(last);
  in.num_qo_heads = 32;
  in.num_kv_heads = 8;
  in.head_dim = 128;
  in.page_size = 16;
  in.num_sms = l.numSms();
  in.cuda_graph = true;
  Plan plan;
  CHECK_OK(makePlan(in, plan));
  uint64_t ws = arena.zeros(plan.int_image.size());
  CHECK_OK(l.uploadPlan(plan, ws, stream));
  std::vector<uint8_t> back(plan.int_image.size());
  CHECK_OK(l.copyToHost(back.data(), ws, back.size(), stream));
  CHECK_OK(l.synchronize(stream));
  bool same = back == plan.int_image;
  std::printf("%-4s plan upload (%zu bytes, one copy)\n", same ? "OK" : "FAIL",
              back.size());
  failures += !same;
  // Graph capture and replay of memsets.
  uint64_t buf = arena.zeros(4096);
  CapturedGraph g;
  CHECK_OK(l.beginCapture(stream));
  CHECK_OK(l.memsetD32(buf, 0xC0FFEE, 1024, stream));
  CHECK_OK(l.endCapture(stream, g));
  CHECK_OK(l.replay(g, stream));
  std::vector<uint32_t> words(1024);
  CHECK_OK(l.copyToHost(words.data(), buf, 4096, stream));
  CHECK_OK(l.synchronize(stream));
  l.destroyGraph(g);
  same = std::all_of(words.begin(), words.end(),
                     [](uint32_t w) { return w == 0xC0FFEE; });
  std::printf("%-4s graph capture + replay\n", same ? "OK" : "FAIL");
  failures += !same;
  CHECK_OK(l.destroyStream(stream));
}

// A score option from its static (absent: the default stays).
void readStatic(const std::string &v, std::optional<float> &f) {
  if (!v.empty())
    f = std::stof(v);
}
void readStatic(const std::string &v, float &f) {
  if (!v.empty())
    f = std::stof(v);
}
void readStatic(const std::string &v, int64_t &i) {
  if (!v.empty())
    i = std::stoll(v);
}
void readStatic(const std::string &v, cascade::contract::PosEncoding &p) {
  cascade::contract::parsePosEncoding(v, p);
}

int64_t staticInt(const KernelSpec &k, const char *key, int64_t dflt) {
  std::string s = k.staticString(key);
  return s.empty() ? dflt : std::stoll(s);
}

void checkMergeState(Launcher &l, const KernelSpec &k, std::mt19937_64 &rng) {
  DeviceArena arena(l);
  const int64_t rows = 777, heads = staticInt(k, "num_heads", 32),
                d = staticInt(k, "head_dim", 128);
  const std::string vt = k.staticString("v_dtype");
  const size_t nv = rows * heads * d, ns = rows * heads;
  HostTensor va = makeTensor(vt, randomValues(rng, nv, -2, 2));
  HostTensor vb = makeTensor(vt, randomValues(rng, nv, -2, 2));
  std::vector<float> sa = randomValues(rng, ns, -8, 8),
                     sb = randomValues(rng, ns, -8, 8);
  for (size_t i = 0; i < ns; i += 17)
    sa[i] = -INFINITY; // empty states
  for (size_t i = 0; i < ns; i += 51)
    sb[i] = -INFINITY;
  ArgumentTable t;
  t.setBuffer("v_a", arena.upload(va.bytes.data(), va.bytes.size()), nv,
              va.dtype);
  t.setBuffer("v_b", arena.upload(vb.bytes.data(), vb.bytes.size()), nv,
              vb.dtype);
  t.setBuffer("s_a", arena.upload(sa.data(), 4 * ns), ns, "f32");
  t.setBuffer("s_b", arena.upload(sb.data(), 4 * ns), ns, "f32");
  uint64_t vOut = arena.zeros(va.bytes.size()), sOut = arena.zeros(4 * ns);
  t.setBuffer("v", vOut, nv, va.dtype);
  t.setBuffer("s", sOut, ns, "f32");
  t.setInt("num_rows", rows);
  t.setInt("num_heads", heads);
  t.setInt("head_dim", d);
  t.setInt("num_tasks", rows * heads);
  KernelLaunch probe;
  Status bind = bindKernel(k, t, probe);
  if (!bind.ok())
    return skip(k.name, bind.message());
  CHECK_OK(l.launch(k.name, t, nullptr));
  std::vector<uint8_t> vb2(va.bytes.size());
  std::vector<float> s2(ns);
  CHECK_OK(l.copyToHost(vb2.data(), vOut, vb2.size(), nullptr));
  CHECK_OK(l.copyToHost(s2.data(), sOut, 4 * ns, nullptr));
  CHECK_OK(l.synchronize(nullptr));
  std::vector<double> rv(nv), rs(ns), dva(va.values.begin(), va.values.end()),
      dvb(vb.values.begin(), vb.values.end()), dsa(sa.begin(), sa.end()),
      dsb(sb.begin(), sb.end());
  // The reference merges in base 2; a base-e kernel's states convert with
  // s_2 = s_e / ln 2 on the way in and back on the way out.
  const bool baseE = k.staticString("lse_base") == "e";
  if (baseE)
    for (auto *v : {&dsa, &dsb})
      for (double &x : *v)
        x /= std::log(2.0);
  ref::mergeState<double, double>(dva.data(), dsa.data(), dvb.data(),
                                  dsb.data(), rv.data(), rs.data(), rows, heads,
                                  d);
  if (baseE)
    for (double &x : rs)
      x *= std::log(2.0);
  report(k.name + " (L=777)", relError(decode(va.dtype, vb2), rv),
         relError(s2, rs), vt == "f32" ? 1e-5 : 1e-2);
}

void checkAttention(Launcher &l, const Bundle &bundle, const KernelSpec &k,
                    std::mt19937_64 &rng) {
  const bool prefill = k.op.rfind("prefill", 0) == 0;
  const int64_t d = staticInt(k, "head_dim", 128);
  const int64_t ps = staticInt(k, "page_size", 16);
  const int64_t hkv = staticInt(k, "num_kv_heads", 8);
  const int64_t hqo = staticInt(k, "num_qo_heads", hkv * 4);
  const bool causal = k.staticString("causal") == "true";
  const bool hnd = k.staticString("layout") == "HND";
  const std::string qt = k.staticString("q_dtype"),
                    kvt = k.staticString("kv_dtype"),
                    ot = k.staticString("o_dtype").empty()
                             ? (qt.empty() ? "f16" : qt)
                             : k.staticString("o_dtype");
  const bool decodeOp = k.op.rfind("decode", 0) == 0;
  const KernelSpec *merge =
      bundle.select("merge_states_indptr",
                    {{"head_dim", std::to_string(d)},
                     {"num_qo_heads", std::to_string(hqo)},
                     {"v_dtype", ot},
                     {"lse_base", k.staticString("lse_base")},
                     {"accumulate", "false"},
                     {"indptr", decodeOp ? "o_indptr" : "merge_indptr"}});
  int occupancy = 1;
  CHECK_OK(l.occupancy(k.name, occupancy));
  // Split kernels get a small batch (the plan splits it); unsplit kernels a
  // batch that fills the grid, so that the plan picks them. Prefill plans
  // always split in graph mode, so an unsplit prefill kernel runs eagerly.
  const bool wantSplit = k.op.find("split") != std::string::npos;
  const bool graphMode = !(prefill && !wantSplit);
  const int64_t b =
      wantSplit ? 7 : (int64_t(occupancy) * l.numSms() + hkv - 1) / hkv + 1;
  const int64_t numPages = 4096;
  HostTensor pool = makeTensor(
      kvt, randomValues(rng, size_t(numPages) * 2 * ps * hkv * d, -1, 1));
  DeviceArena arena(l);
  const uint64_t poolDev = arena.upload(pool.bytes.data(), pool.bytes.size());
  // The (k, v) pair form: the same values, keys and values of every page
  // split into two pools [P, page, Hkv, D] / [P, Hkv, page, D].
  const bool pairForm = k.staticString("kv_form") == "pair";
  uint64_t kDev = 0, vDev = 0;
  if (pairForm) {
    const size_t pageBytes = pool.bytes.size() / size_t(numPages) / 2;
    std::vector<uint8_t> kb(pool.bytes.size() / 2), vb(pool.bytes.size() / 2);
    for (int64_t pg = 0; pg < numPages; ++pg) {
      std::memcpy(&kb[pg * pageBytes], &pool.bytes[2 * pg * pageBytes],
                  pageBytes);
      std::memcpy(&vb[pg * pageBytes], &pool.bytes[(2 * pg + 1) * pageBytes],
                  pageBytes);
    }
    kDev = arena.upload(kb.data(), kb.size());
    vDev = arena.upload(vb.data(), vb.size());
  }

  // Two batches with the same B: eager on batch 0; capture on batch 0, then
  // replan + upload batch 1 and replay.
  struct Inputs {
    std::vector<int32_t> qo{0}, kv{0}, idx, last;
    HostTensor q;
    Plan plan;
  } in[2];
  for (int v = 0; v < 2; ++v) {
    for (int64_t i = 0; i < b; ++i) {
      int32_t pages = static_cast<int32_t>(rng() % 200);
      in[v].kv.push_back(in[v].kv.back() + pages);
      in[v].qo.push_back(in[v].qo.back() +
                         (prefill ? 1 + static_cast<int32_t>(rng() % 40) : 1));
      in[v].last.push_back(1 + static_cast<int32_t>(rng() % ps));
      for (int32_t p = 0; p < pages; ++p)
        in[v].idx.push_back(static_cast<int32_t>(rng() % numPages));
    }
    in[v].q = makeTensor(
        qt, randomValues(rng, size_t(in[v].qo.back()) * hqo * d, -1, 1));
    PlanInputs pi;
    pi.mode = prefill ? PlanMode::Prefill : PlanMode::Decode;
    pi.qo_indptr =
        prefill ? ArrayView<int32_t>(in[v].qo) : ArrayView<int32_t>();
    pi.kv_indptr = ArrayView<int32_t>(in[v].kv);
    pi.kv_last_page_len = ArrayView<int32_t>(in[v].last);
    pi.kv_indices = ArrayView<int32_t>(in[v].idx);
    pi.num_pages = numPages;
    pi.num_qo_heads = hqo;
    pi.num_kv_heads = hkv;
    pi.head_dim = d;
    pi.page_size = ps;
    pi.num_sms = l.numSms();
    pi.occupancy = occupancy;
    pi.cuda_graph = graphMode;
    pi.max_num_rows = prefill && graphMode ? b * 40 : -1;
    pi.qo_tile_size = staticInt(k, "qo_tile_size", 0);
    CHECK_OK(makePlan(pi, in[v].plan));
  }
  if (in[0].plan.split_kv != wantSplit)
    return skip(k.name, "the plan for this batch has split_kv=" +
                            std::to_string(int(in[0].plan.split_kv)));
  if (wantSplit && !merge)
    return skip(k.name, "the bundle has no merge_states_indptr kernel for "
                        "its partial states");
  const int64_t maxRows = prefill ? b * 40 : b;
  const size_t maxIdx = size_t(b) * 200;
  uint64_t qDev = arena.zeros(size_t(maxRows) * hqo * d * 4);
  uint64_t qoDev = arena.zeros(4 * (b + 1)), kvDev = arena.zeros(4 * (b + 1));
  uint64_t idxDev = arena.zeros(4 * maxIdx), lastDev = arena.zeros(4 * b);
  uint64_t oDev = arena.zeros(size_t(maxRows) * hqo * d * 4);
  uint64_t lseDev = arena.zeros(size_t(maxRows) * hqo * 4);
  uint64_t intWs = arena.zeros(in[0].plan.int_workspace.bytes);
  uint64_t floatWs = arena.zeros(in[0].plan.float_workspace.bytes);
  const int64_t pageElems = ps * hkv * d;
  auto bindFor = [&](int v, ArgumentTable &t) {
    const int64_t rows = in[v].qo.back();
    t.setBuffer("q", qDev, rows * hqo * d, in[v].q.dtype);
    t.setBuffer("kv_cache", poolDev, numPages * 2 * pageElems, pool.dtype);
    if (pairForm) {
      t.setBuffer("k_cache", kDev, numPages * pageElems, pool.dtype);
      t.setBuffer("v_cache", vDev, numPages * pageElems, pool.dtype);
    }
    t.setBuffer("qo_indptr", qoDev, b + 1, "i32");
    t.setBuffer("kv_indptr", kvDev, b + 1, "i32");
    t.setBuffer("kv_indices", idxDev, int64_t(maxIdx), "i32");
    t.setBuffer("kv_last_page_len", lastDev, b, "i32");
    t.setBuffer("o", oDev, maxRows * hqo * d, ot);
    t.setBuffer("lse", lseDev, maxRows * hqo, "f32");
    t.setFloat("sm_scale", 1.0 / std::sqrt(double(d)));
    t.setFloat("logits_soft_cap", 0.0);
    t.setInt("window_left", -1);
    t.setFloat("rope_scale", 1.0);
    t.setFloat("rope_theta", 1e4);
    t.setInt("num_pages", numPages);
    t.setInt("page_stride", 2 * pageElems);
  };
  auto upload = [&](int v) -> Status {
    CASCADE_RETURN_IF_ERROR(l.copyToDevice(qDev, in[v].q.bytes.data(),
                                           in[v].q.bytes.size(), nullptr));
    CASCADE_RETURN_IF_ERROR(
        l.copyToDevice(qoDev, in[v].qo.data(), 4 * in[v].qo.size(), nullptr));
    CASCADE_RETURN_IF_ERROR(
        l.copyToDevice(kvDev, in[v].kv.data(), 4 * in[v].kv.size(), nullptr));
    CASCADE_RETURN_IF_ERROR(l.copyToDevice(idxDev, in[v].idx.data(),
                                           4 * in[v].idx.size(), nullptr));
    CASCADE_RETURN_IF_ERROR(l.copyToDevice(lastDev, in[v].last.data(),
                                           4 * in[v].last.size(), nullptr));
    return l.uploadPlan(in[v].plan, intWs, nullptr);
  };
  auto compare = [&](int v, const std::string &what) {
    const int64_t rows = in[v].qo.back();
    std::vector<uint8_t> oBytes(size_t(rows) * hqo * d * (ot == "f32" ? 4 : 2));
    std::vector<float> lse(size_t(rows) * hqo);
    CHECK_OK(l.copyToHost(oBytes.data(), oDev, oBytes.size(), nullptr));
    CHECK_OK(l.copyToHost(lse.data(), lseDev, 4 * lse.size(), nullptr));
    CHECK_OK(l.synchronize(nullptr));
    ref::AttentionBatch rb;
    rb.q = in[v].q.values.data();
    rb.numQoHeads = hqo;
    rb.qoIndptr = in[v].qo;
    rb.kvIndptr = in[v].kv;
    rb.kvIndices = in[v].idx;
    rb.kvLastPageLen = in[v].last;
    rb.kv = ref::PagedKvCache::combined(
        pool.values.data(), numPages, ps, hkv, d,
        hnd ? ref::KvLayout::HND : ref::KvLayout::NHD);
    // The kernel was specialised on these options at compile time; the
    // manifest's "static" section records them.
    ref::AttentionOptions opts;
    opts.causal = causal;
    cascade::contract::ScoreOptions::forEachField(
        opts.score, [&](const char *key, auto &field) {
          readStatic(k.staticString(key), field);
        });
    std::vector<double> rv(size_t(rows) * hqo * d), rs(size_t(rows) * hqo);
    CHECK_OK(ref::attention(rb, opts, rv.data(), rs.data()));
    if (k.staticString("lse_base") == "e")
      for (double &x : rs)
        x *= std::log(2.0); // the reference is base 2
    report(k.name + " " + what, relError(decode(ot, oBytes), rv),
           relError(lse, rs), 2e-2);
  };
  LevelKernels kernels{k.name, merge ? merge->name : ""};
  ArgumentTable t0;
  bindFor(0, t0);
  {
    ArgumentTable probeTable;
    addPlanBindings(probeTable, in[0].plan, intWs, floatWs);
    probeTable.merge(t0);
    KernelLaunch probe;
    Status bind = bindKernel(k, probeTable, probe);
    if (!bind.ok())
      return skip(k.name, bind.message());
  }
  CHECK_OK(upload(0));
  CHECK_OK(l.runLevel(in[0].plan, intWs, floatWs, kernels, t0, nullptr));
  compare(0, "eager");
  if (!graphMode)
    return;
  // Graph: capture with batch 0's bindings, replan/upload batch 1, replay.
  cuda::CUstream stream = nullptr;
  CHECK_OK(l.createStream(stream));
  CapturedGraph g;
  CHECK_OK(l.beginCapture(stream));
  CHECK_OK(l.runLevel(in[0].plan, intWs, floatWs, kernels, t0, stream));
  CHECK_OK(l.endCapture(stream, g));
  CHECK_OK(upload(1));
  CHECK_OK(l.synchronize(nullptr));
  CHECK_OK(l.replay(g, stream));
  CHECK_OK(l.synchronize(stream));
  compare(1, "graph replay after replan");
  l.destroyGraph(g);
  CHECK_OK(l.destroyStream(stream));
}

/// A two-level decode cascade through Launcher::runCascade: level 0 is the
/// prefix shared by every request as one group of all B queries (qo_indptr
/// [0, B]) on the tensor-core prefill (split-KV: graph-mode plans always
/// split it), level 1 the per-request suffixes (some empty) on decode
/// kernels. `fused`: level 1's kernels accumulate into level 0's state (what
/// cascade-decompose-levels emits); otherwise level 1 writes the workspace
/// and merge_state_in_place merges it. Eager first; then captured in a CUDA
/// graph, replanned with new suffix lengths (same B), uploaded into the same
/// buffers and replayed.
void checkCascade(Launcher &l, const Bundle &bundle, std::mt19937_64 &rng,
                  bool fused) {
  const int64_t b = 9, hqo = 32, hkv = 8, d = 128, ps = 16, numPages = 2048;
  const std::string what =
      std::string("two-level cascade (runCascade, ") +
      (fused ? "fused level merge)" : "merge_state_in_place)");
  const std::vector<std::pair<std::string, std::string>> common = {
      {"head_dim", "128"},      {"num_qo_heads", "32"},
      {"lse_base", "2"},        {"q_dtype", "f16"},
      {"kv_dtype", "f16"},      {"page_size", "16"},
      {"num_kv_heads", "8"},    {"layout", "NHD"},
      {"kv_form", "pool"},      {"pos_encoding", "none"},
      {"logits_soft_cap", "0"}, {"window_left", "-1"}};
  auto with = [&](std::vector<std::pair<std::string, std::string>> extra) {
    extra.insert(extra.end(), common.begin(), common.end());
    return extra;
  };
  const std::string acc = fused ? "true" : "false";
  const KernelSpec *shared =
      bundle.select("prefill_split", with({{"kernel_family", "mma_sync"},
                                           {"causal", "false"},
                                           {"accumulate", "false"}}));
  const KernelSpec *sharedMerge =
      bundle.select("merge_states_indptr", {{"head_dim", "128"},
                                            {"num_qo_heads", "32"},
                                            {"v_dtype", "f16"},
                                            {"lse_base", "2"},
                                            {"accumulate", "false"},
                                            {"indptr", "merge_indptr"}});
  const KernelSpec *dec = bundle.select(
      "decode", with({{"kernel_family", "rows"}, {"accumulate", acc}}));
  const KernelSpec *split = bundle.select(
      "decode_split", with({{"kernel_family", "rows"}, {"accumulate", acc}}));
  const KernelSpec *splitMerge =
      bundle.select("merge_states_indptr", {{"head_dim", "128"},
                                            {"num_qo_heads", "32"},
                                            {"v_dtype", "f16"},
                                            {"lse_base", "2"},
                                            {"accumulate", acc},
                                            {"indptr", "o_indptr"}});
  const KernelSpec *mergeIn = bundle.select(
      "merge_state_in_place",
      {{"head_dim", "128"}, {"v_dtype", "f16"}, {"mask", "none"}});
  if (!shared || !sharedMerge || !dec || !split || !splitMerge ||
      (!fused && !mergeIn))
    return skip(what, "the bundle lacks one of its f16 D=128 32/8 kernels "
                      "(tensor-core split prefill, its merge, decode, "
                      "decode_split, their merge, merge_state_in_place)");
  int occShared = 1, occDec = 1;
  CHECK_OK(l.occupancy(shared->name, occShared));
  CHECK_OK(l.occupancy(dec->name, occDec));
  DeviceArena arena(l);
  HostTensor pool = makeTensor(
      "f16", randomValues(rng, size_t(numPages) * 2 * ps * hkv * d, -1, 1));
  HostTensor q =
      makeTensor("f16", randomValues(rng, size_t(b) * hqo * d, -2, 2));
  const uint64_t poolDev = arena.upload(pool.bytes.data(), pool.bytes.size());
  const uint64_t qDev = arena.upload(q.bytes.data(), q.bytes.size());

  struct Level {
    std::vector<int32_t> qo{0}, kv{0}, idx, last;
  };
  const int32_t prefixPages = 37, prefixLast = 11;
  auto makeLevels = [&](std::vector<Level> &lv) {
    lv.assign(2, Level());
    // Level 0: one group of all b queries over the shared pages.
    lv[0].qo.push_back(static_cast<int32_t>(b));
    lv[0].kv.push_back(prefixPages);
    for (int32_t p = 0; p < prefixPages; ++p)
      lv[0].idx.push_back(p);
    lv[0].last.push_back(prefixLast);
    for (int64_t i = 0; i < b; ++i) {
      lv[1].qo.push_back(static_cast<int32_t>(i + 1));
      int32_t pages = i == 3 ? 0 : static_cast<int32_t>(rng() % 90);
      lv[1].kv.push_back(lv[1].kv.back() + pages);
      for (int32_t p = 0; p < pages; ++p)
        lv[1].idx.push_back(prefixPages +
                            static_cast<int32_t>(rng() % (numPages - 64)));
      lv[1].last.push_back(pages ? 1 + static_cast<int32_t>(rng() % ps) : 1);
    }
  };
  auto planFor = [&](std::vector<Level> &lv, CascadePlan &cp) -> Status {
    std::vector<PlanInputs> in(2);
    for (int v = 0; v < 2; ++v) {
      in[v].mode = v == 0 ? PlanMode::Prefill : PlanMode::Decode;
      in[v].qo_indptr = ArrayView<int32_t>(lv[v].qo);
      in[v].kv_indptr = ArrayView<int32_t>(lv[v].kv);
      in[v].kv_last_page_len = ArrayView<int32_t>(lv[v].last);
      in[v].kv_indices = ArrayView<int32_t>(lv[v].idx);
      in[v].num_pages = numPages;
      in[v].num_qo_heads = hqo;
      in[v].num_kv_heads = hkv;
      in[v].head_dim = d;
      in[v].page_size = ps;
      in[v].num_sms = l.numSms();
      in[v].occupancy = v == 0 ? occShared : occDec;
      in[v].cuda_graph = true;
    }
    in[0].qo_tile_size = staticInt(*shared, "qo_tile_size", 0);
    in[0].max_num_rows = b;
    return makeCascadePlan(in, cp);
  };
  std::vector<Level> lv0, lv1;
  makeLevels(lv0);
  makeLevels(lv1);
  CascadePlan cp0, cp1;
  CHECK_OK(planFor(lv0, cp0));
  CHECK_OK(planFor(lv1, cp1));
  if (cp0.int_bytes != cp1.int_bytes || cp0.float_bytes != cp1.float_bytes) {
    std::printf("FAIL %s: graph-mode workspace sizes changed across "
                "replans\n",
                what.c_str());
    ++failures;
    return;
  }
  const size_t maxIdx = std::max<size_t>(size_t(b) * 90, prefixPages);
  uint64_t qoDev[2], kvDev[2], idxDev[2], lastDev[2];
  for (int v = 0; v < 2; ++v) {
    qoDev[v] = arena.zeros(4 * (b + 1));
    kvDev[v] = arena.zeros(4 * (b + 1));
    idxDev[v] = arena.zeros(4 * maxIdx);
    lastDev[v] = arena.zeros(4 * b);
  }
  uint64_t oDev = arena.zeros(size_t(b) * hqo * d * 2);
  uint64_t lseDev = arena.zeros(size_t(b) * hqo * 4);
  uint64_t intWs = arena.zeros(cp0.int_bytes),
           floatWs = arena.zeros(cp0.float_bytes);

  std::vector<ArgumentTable> args(2);
  for (int v = 0; v < 2; ++v) {
    const int64_t groups = v == 0 ? 1 : b;
    ArgumentTable &t = args[v];
    t.setBuffer("q", qDev, b * hqo * d, "f16");
    t.setBuffer("kv_cache", poolDev, numPages * 2 * ps * hkv * d, "f16");
    t.setBuffer("qo_indptr", qoDev[v], groups + 1, "i32");
    t.setBuffer("kv_indptr", kvDev[v], groups + 1, "i32");
    t.setBuffer("kv_indices", idxDev[v], int64_t(maxIdx), "i32");
    t.setBuffer("kv_last_page_len", lastDev[v], groups, "i32");
    t.setBuffer("o", oDev, b * hqo * d, "f16");
    t.setBuffer("lse", lseDev, b * hqo, "f32");
  }
  auto upload = [&](std::vector<Level> &lv, const CascadePlan &cp) -> Status {
    for (int v = 0; v < 2; ++v) {
      CASCADE_RETURN_IF_ERROR(l.copyToDevice(qoDev[v], lv[v].qo.data(),
                                             4 * lv[v].qo.size(), nullptr));
      CASCADE_RETURN_IF_ERROR(l.copyToDevice(kvDev[v], lv[v].kv.data(),
                                             4 * lv[v].kv.size(), nullptr));
      CASCADE_RETURN_IF_ERROR(l.copyToDevice(idxDev[v], lv[v].idx.data(),
                                             4 * lv[v].idx.size(), nullptr));
      CASCADE_RETURN_IF_ERROR(l.copyToDevice(lastDev[v], lv[v].last.data(),
                                             4 * lv[v].last.size(), nullptr));
    }
    CASCADE_RETURN_IF_ERROR(l.uploadPlan(cp, intWs, nullptr));
    return l.synchronize(nullptr);
  };
  auto compare = [&](std::vector<Level> &lv, const char *when) {
    std::vector<uint8_t> ob(size_t(b) * hqo * d * 2);
    std::vector<float> lse(size_t(b) * hqo);
    CHECK_OK(l.copyToHost(ob.data(), oDev, ob.size(), nullptr));
    CHECK_OK(l.copyToHost(lse.data(), lseDev, 4 * lse.size(), nullptr));
    CHECK_OK(l.synchronize(nullptr));
    std::vector<ref::AttentionBatch> batches(2);
    for (int v = 0; v < 2; ++v) {
      ref::AttentionBatch &rb = batches[v];
      rb.q = q.values.data();
      rb.numQoHeads = hqo;
      rb.qoIndptr = lv[v].qo;
      rb.kvIndptr = lv[v].kv;
      rb.kvIndices = lv[v].idx;
      rb.kvLastPageLen = lv[v].last;
      rb.kv = ref::PagedKvCache::combined(pool.values.data(), numPages, ps, hkv,
                                          d, ref::KvLayout::NHD);
    }
    std::vector<double> rv(size_t(b) * hqo * d), rs(size_t(b) * hqo);
    CHECK_OK(
        ref::cascade(batches, ref::AttentionOptions(), rv.data(), rs.data()));
    report(what + " " + when, relError(decode("f16", ob), rv),
           relError(lse, rs), 2e-2);
  };
  auto pick = [&](const CascadePlan &cp) {
    std::vector<LevelKernels> kernels(2);
    kernels[0] = LevelKernels{shared->name, sharedMerge->name};
    kernels[1] = LevelKernels{cp.levels[1].split_kv ? split->name : dec->name,
                              splitMerge->name};
    return kernels;
  };
  const std::string merge = fused ? std::string() : mergeIn->name;
  if (!cp0.levels[0].split_kv)
    return skip(what, "the graph-mode plan of the shared level did not split");
  CHECK_OK(upload(lv0, cp0));
  CHECK_OK(l.runCascade(cp0, intWs, floatWs, pick(cp0), args, merge, nullptr));
  compare(lv0, "eager");

  // Graph mode: capture with plan 0, replan (plan 1), upload, replay.
  cuda::CUstream stream = nullptr;
  CHECK_OK(l.createStream(stream));
  CapturedGraph g;
  CHECK_OK(l.beginCapture(stream));
  CHECK_OK(l.runCascade(cp0, intWs, floatWs, pick(cp0), args, merge, stream));
  CHECK_OK(l.endCapture(stream, g));
  bool sameKernels = true;
  for (int v = 0; v < 2; ++v)
    sameKernels &= cp0.levels[v].split_kv == cp1.levels[v].split_kv;
  if (!sameKernels) {
    std::printf("FAIL %s: graph-mode replan switched between split and "
                "unsplit kernels\n",
                what.c_str());
    ++failures;
  } else {
    CHECK_OK(upload(lv1, cp1));
    CHECK_OK(l.replay(g, stream));
    CHECK_OK(l.synchronize(stream));
    compare(lv1, "graph replay after replan");
  }
  l.destroyGraph(g);
  CHECK_OK(l.destroyStream(stream));
}
} // namespace

int main(int argc, char **argv) {
  Bundle bundle;
  const bool haveBundle = argc > 1;
  if (haveBundle) {
    Status s = loadBundle(argv[1], bundle);
    if (!s.ok()) {
      std::printf("ERROR loading bundle %s: %s\n", argv[1],
                  s.message().c_str());
      return 1;
    }
  }
  std::unique_ptr<Launcher> launcher;
  Status s = Launcher::create(bundle, 0, launcher);
  if (!s.ok()) {
    std::printf("ERROR %s\n", s.message().c_str());
    return 1;
  }
  std::printf("device 0: %d SMs\n", launcher->numSms());
  checkDriver(*launcher);
  if (!haveBundle) {
    skip("kernel checks", "no bundle directory given (usage: "
                          "cascade-gpu-check BUNDLE_DIR)");
    std::printf("FAILED: %d failure(s)\n", failures);
    return 1;
  }
  std::mt19937_64 rng(1234);
  for (const KernelSpec &k : bundle.kernels) {
    const bool attention = k.op == "decode" || k.op == "decode_split" ||
                           k.op == "prefill" || k.op == "prefill_split";
    if (k.op == "merge_state")
      checkMergeState(*launcher, k, rng);
    else if (attention && k.staticString("accumulate") == "true")
      notApplicable(k.name, "an accumulating level needs the state of "
                            "another level: it runs in the fused cascades "
                            "below (f16 D=128 32/8) and against a random "
                            "prior state in test/Integration/gpu/check.py");
    else if (attention)
      checkAttention(*launcher, bundle, k, rng);
    else if (k.op == "merge_states_indptr")
      notApplicable(k.name, "the second kernel of a split level: it runs in "
                            "every split case above and below");
    else
      notApplicable(k.name, "op " + k.op +
                                " is checked against the float64 reference "
                                "by test/Integration/gpu/check.py (and "
                                "merge_state_in_place in the unfused cascade "
                                "below)");
  }
  checkCascade(*launcher, bundle, rng, /*fused=*/true);
  checkCascade(*launcher, bundle, rng, /*fused=*/false);
  std::printf("%s: %d failure(s)\n", failures ? "FAILED" : "PASSED", failures);
  return failures ? 1 : 0;
}
