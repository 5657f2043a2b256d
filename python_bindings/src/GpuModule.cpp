//===- GpuModule.cpp - GPU execution for cascade_mlir._runtime ------------===//
//
// Device (one CUDA device: the launcher and the kernel bundles loaded into
// it) and Program (one wrapper's plan, uploaded, with its launches bound
// once; run() checks the caller's tensors, writes their addresses into the
// bound launches and launches on the caller's current stream). Checks raise
// ValueError / TypeError naming the argument before anything is launched.
//
//===----------------------------------------------------------------------===//

#include "GpuModule.h"
#include "ConfigDict.h"
#include "TensorArgs.h"
#include "TorchBridgeABI.h"

#include "cascade/Runtime/Program.h"

#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <cmath>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <tuple>
#include <unordered_map>

namespace py = pybind11;
using namespace cascade::runtime;

namespace cascade::python {

namespace {

using I32Array =
    py::array_t<int32_t, py::array::c_style | py::array::forcecast>;

[[noreturn]] void fail(const Status &s) {
  std::string msg = std::string(errorCodeName(s.code())) + ": " + s.message();
  if (s.code() == ErrorCode::Driver || s.code() == ErrorCode::Internal)
    throw std::runtime_error(msg);
  throw py::value_error(msg);
}
void check(const Status &s) {
  if (!s.ok())
    fail(s);
}

cuda::CUstream asStream(int64_t s) {
  return reinterpret_cast<cuda::CUstream>(static_cast<uintptr_t>(s));
}

class Device {
public:
  explicit Device(int ordinal) : ordinal_(ordinal) {
    check(Launcher::create(Bundle(), ordinal, launcher_));
  }
  Launcher &launcher() { return *launcher_; }
  int ordinal() const { return ordinal_; }

  /// Loads DIR as bundle `key` (once per key).
  void addBundle(const std::string &dir, const std::string &key) {
    if (!loaded_.insert(key).second)
      return;
    Bundle b;
    Status s = loadBundle(dir, b);
    if (s.ok())
      s = launcher_->addBundle(b, key);
    if (!s.ok()) {
      loaded_.erase(key);
      fail(s);
    }
  }
  bool hasBundle(const std::string &key) const { return loaded_.count(key); }

  py::dict kernelInfo(const std::string &name) const {
    const KernelSpec *k = launcher_->bundle().find(name);
    if (!k)
      throw py::key_error("no kernel named " + name + " is loaded");
    py::dict statics;
    for (const auto &kv : k->statics)
      statics[py::str(kv.first)] = kv.second;
    py::dict d;
    d["name"] = k->name;
    d["op"] = k->op;
    d["static"] = statics;
    std::vector<std::string> params;
    for (const ParamSpec &p : k->params)
      params.push_back(p.name);
    d["params"] = params;
    return d;
  }

  int occupancy(const std::string &name) {
    int o = 0;
    check(launcher_->occupancy(name, o));
    return o;
  }

  /// Launches one kernel: `buffers` maps parameter names to tensors (or to
  /// (tensor, element count) pairs), `ints` to integers.
  void launch(const std::string &kernel, const py::dict &buffers,
              const py::dict &ints, int64_t stream) {
    ArgumentTable t;
    std::vector<py::object> alive;
    for (auto item : buffers) {
      const std::string name = py::str(item.first);
      py::handle value = item.second;
      int64_t count = -1;
      if (py::isinstance<py::tuple>(value)) {
        py::tuple pair = py::reinterpret_borrow<py::tuple>(value);
        value = pair[0];
        count = pair[1].cast<int64_t>();
      }
      TensorArg a = probe(value, name.c_str(), stream);
      if (!a.cuda || a.device != ordinal_)
        throw py::value_error(name + " is on " + a.deviceString() +
                              ", expected cuda:" + std::to_string(ordinal_));
      alive.push_back(a.keepAlive);
      t.setBuffer(name, a.ptr, count >= 0 ? count : a.numel());
    }
    for (auto item : ints)
      t.setInt(py::str(item.first), item.second.cast<int64_t>());
    check(launcher_->makeCurrent());
    check(launcher_->launch(kernel, t, asStream(stream)));
  }

  void synchronize() {
    check(launcher_->makeCurrent());
    check(launcher_->synchronize(nullptr));
  }

private:
  int ordinal_;
  std::unique_ptr<Launcher> launcher_;
  std::set<std::string> loaded_;
};

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
void setPlanStatics(PlanInputs &in, const contract::AttentionConfig &c) {
  in.num_qo_heads = c.numQoHeads;
  in.num_kv_heads = c.numKvHeads;
  in.head_dim = c.headDim;
  in.page_size = c.pageSize;
  in.q_dtype = c.qType;
  in.kv_dtype = c.kvType;
  in.o_dtype = c.oType;
}

std::string dims(const std::vector<int64_t> &v) {
  std::string s = "[";
  bool first = true;
  for (int64_t x : v) {
    s += (first ? "" : ", ") + (x < 0 ? std::string("*") : std::to_string(x));
    first = false;
  }
  return s + "]";
}

/// Checks device, dtype, rank, sizes (-1 = any) and contiguity.
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

/// The checks of one call against what was planned (Signature, rows):
/// ValueError / TypeError naming the argument, before anything is launched.
struct Checker {
  const Signature &sig;
  int64_t rows, cap;
  std::array<int64_t, 2> maxPageId; ///< per KV slot

  /// q: [rows, Hqo, D] (or the row capacity of a CUDA-graph plan).
  TensorArg checkQ(py::handle q, int64_t stream = -1) const {
    TensorArg tq = probe(q, "q", stream);
    checkQ(tq);
    return tq;
  }
  void checkQ(const TensorArg &tq) const {
    const int64_t qRows = tq.ndim == 3 ? tq.shape[0] : -1;
    expectTensor(
        tq, "q", sig, sig.qType,
        {qRows == cap ? cap : rows, sig.config.numQoHeads, sig.config.headDim},
        "[rows planned, num_qo_heads, head_dim] in the planned "
        "q_data_type");
  }
  TensorArg checkOut(py::handle out, const TensorArg &q, int64_t stream) const {
    TensorArg to = probe(out, "out", stream);
    checkOut(to, q);
    return to;
  }
  void checkOut(const TensorArg &to, const TensorArg &q) const {
    expectTensor(to, "out", sig, sig.oType,
                 {q.shape[0], q.shape[1], q.shape[2]},
                 "the shape of q, in the planned output dtype");
  }
  TensorArg checkLse(py::handle lse, const TensorArg &q, int64_t stream) const {
    TensorArg tl = probe(lse, "lse", stream);
    checkLse(tl, q);
    return tl;
  }
  void checkLse(const TensorArg &tl, const TensorArg &q) const {
    expectTensor(tl, "lse", sig, ElemType::F32, {q.shape[0], q.shape[1]},
                 "[rows, num_qo_heads] float32");
  }

  /// The KV cache of a slot: a 5-D pool or a (k, v) pair of 4-D pools;
  /// true for a pair.
  bool bindKv(py::handle kv, int slot, int64_t stream,
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

  /// A 5-D pool [pages, 2, page, Hkv, D] (NHD) / [pages, 2, Hkv, page, D].
  void bindPool(const TensorArg &a, int slot,
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

  /// A (k, v) pair of 4-D pools [pages, page, Hkv, D] (NHD) / [pages, Hkv,
  /// page, D] (HND).
  void bindPair(const TensorArg &k, const TensorArg &v, int slot,
                std::array<uint64_t, kNumRoles> &ptrs,
                std::array<int64_t, kNumRoles> &counts) const {
    const int64_t page = sig.config.pageSize, h = sig.config.numKvHeads,
                  d = sig.config.headDim;
    const bool hnd = sig.hnd();
    const char *what = hnd ? "[max_num_pages, num_kv_heads, page_size, "
                             "head_dim] for HND"
                           : "[max_num_pages, page_size, num_kv_heads, "
                             "head_dim] for NHD";
    const std::vector<int64_t> shape =
        hnd ? std::vector<int64_t>{-1, h, page, d}
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

  void checkPages(int64_t pages, int slot, const char *name) const {
    if (maxPageId[slot] >= pages)
      throw py::value_error(
          std::string(name) + " has " + std::to_string(pages) +
          " pages but the plan reads page " + std::to_string(maxPageId[slot]));
  }
};

/// Runs `f`, turning what it throws into the Python exception pybind11
/// would raise for it: false with that exception set.
template <typename F> bool translated(F &&f) {
  try {
    f();
    return true;
  } catch (py::error_already_set &e) {
    e.restore();
  } catch (const py::builtin_exception &e) {
    e.set_error();
  } catch (const std::exception &e) {
    PyErr_SetString(PyExc_RuntimeError, e.what());
  }
  return false;
}

/// A call from C (TorchBridgeABI.h): what `f` returns (0 or 1), or -1 with
/// the Python exception of what it threw set.
template <typename F> int calledFromC(F &&f) {
  int r = 1;
  return translated([&] { r = f(); }) ? r : -1;
}

/// A capsule named `name` holding `table` (a C table of `owner`'s
/// functions) that keeps `owner` alive.
py::object tableCapsule(void *table, const char *name, py::object owner) {
  PyObject *c = PyCapsule_New(table, name, [](PyObject *cap) {
    Py_XDECREF(static_cast<PyObject *>(PyCapsule_GetContext(cap)));
  });
  if (!c)
    throw py::error_already_set();
  py::object result = py::reinterpret_steal<py::object>(c);
  if (PyCapsule_SetContext(c, owner.release().ptr()) != 0)
    throw py::error_already_set();
  return result;
}

class ProgramHandle {
public:
  explicit ProgramHandle(std::shared_ptr<Device> device)
      : device_(std::move(device)), program_(device_->launcher()) {
    runner_.abi = CASCADE_TORCH_BRIDGE_ABI;
    runner_.size = sizeof(runner_);
    runner_.self = this;
    runner_.run = [](void *self, const CascadeRunCall *call) {
      return calledFromC(
          [&] { return static_cast<ProgramHandle *>(self)->runFromC(*call); });
    };
  }

  /// run() as a C function (TorchBridgeABI.h's CascadeRunner) in a capsule
  /// that keeps `self` (this Program) alive, for the torch bridge's kernels
  /// of cascade_mlir::run and run_out.
  static py::object runnerCapsule(py::object self) {
    ProgramHandle &p = self.cast<ProgramHandle &>();
    return tableCapsule(&p.runner_, CASCADE_RUNTIME_RUNNER_CAPSULE,
                        std::move(self));
  }

  /// config: cascade_mlir.config.AttentionConfig.as_dict(). `resolver`
  /// (called with a variant the first time run() sees it) must not hold
  /// the owner of this program strongly: the garbage collector cannot see
  /// the reference from here.
  void setSignature(const py::dict &config, bool sharedSlot,
                    py::object resolver, py::object framework) {
    sig_ = Signature(attentionConfigFromDict(config), device_->ordinal(),
                     sharedSlot);
    resolver_ = std::move(resolver);
    framework_ = std::move(framework);
  }

  /// levels: dicts with mode ("decode"/"prefill"), qo_indptr (None in
  /// decode), kv_indptr, kv_indices, kv_last_page_len (int32 numpy arrays)
  /// and optionally the plan options fixed_split_pages and disable_split_kv;
  /// the static configuration is the signature's. Returns (int workspace
  /// bytes, float workspace bytes) needed.
  py::tuple plan(const py::list &levels,
                 const std::vector<std::string> &planKernels, bool cudaGraph,
                 const py::object &indexBuffers, bool lastLevelFirst) {
    if (!sig_.set)
      throw py::value_error("set_signature() before plan()");
    ProgramSpec spec;
    std::array<int64_t, 2> nextMaxPage{-1, -1};
    spec.planKernels = planKernels;
    spec.cudaGraph = cudaGraph;
    spec.lastLevelFirst = lastLevelFirst;
    arrays_.clear();
    for (py::handle h : levels) {
      py::dict lv = py::reinterpret_borrow<py::dict>(h);
      PlanInputs in;
      const std::string mode = py::str(lv["mode"]);
      in.mode = mode == "decode" ? PlanMode::Decode : PlanMode::Prefill;
      auto keep = [&](const char *key) -> ArrayView<int32_t> {
        if (!lv.contains(key) || lv[key].is_none())
          return ArrayView<int32_t>();
        I32Array a = lv[key].cast<I32Array>();
        arrays_.push_back(a);
        return ArrayView<int32_t>(a.data(), a.size());
      };
      in.qo_indptr = keep("qo_indptr");
      in.kv_indptr = keep("kv_indptr");
      in.kv_indices = keep("kv_indices");
      in.kv_last_page_len = keep("kv_last_page_len");
      spec.masks.push_back(customMask(lv));
      setPlanStatics(in, sig_.config);
      // Plan options (not part of the kernels' configuration).
      if (lv.contains("fixed_split_pages"))
        in.fixed_split_pages = lv["fixed_split_pages"].cast<int64_t>();
      if (lv.contains("disable_split_kv"))
        in.disable_split_kv = lv["disable_split_kv"].cast<bool>();
      // The largest page id each KV slot's levels read (run() checks the
      // caller's caches against them).
      const int slot = lv.contains("kv_slot") ? lv["kv_slot"].cast<int>() : 0;
      if (slot != 0 && slot != 1)
        throw py::value_error("kv_slot must be 0 or 1");
      for (int64_t i = 0; i < in.kv_indices.size(); ++i)
        nextMaxPage[slot] =
            std::max<int64_t>(nextMaxPage[slot], in.kv_indices[i]);
      spec.levels.push_back(in);
    }
    if (!indexBuffers.is_none())
      for (py::handle h : indexBuffers) {
        py::dict d = py::reinterpret_borrow<py::dict>(h);
        IndexBuffers b;
        auto get = [&](const char *name, uint64_t &ptr, int64_t &cap) {
          if (!d.contains(name) || d[name].is_none())
            return;
          TensorArg a = probe(d[name], name);
          if (!a.cuda || a.device != device_->ordinal() ||
              a.dtype != ElemType::I32 || a.ndim != 1 || !a.contiguous())
            throw py::value_error(std::string(name) +
                                  " buffer must be a contiguous 1-D int32 "
                                  "tensor on cuda:" +
                                  std::to_string(device_->ordinal()));
          ptr = a.ptr;
          cap = a.shape[0];
        };
        get("qo_indptr", b.qoIndptr, b.qoIndptrCapacity);
        get("kv_indptr", b.kvIndptr, b.kvIndptrCapacity);
        get("kv_indices", b.kvIndices, b.kvIndicesCapacity);
        get("kv_last_page_len", b.kvLastPageLen, b.kvLastPageLenCapacity);
        spec.indexBuffers.push_back(b);
      }
    check(program_.plan(spec));
    maxPageId_ = nextMaxPage;
    planned_ = false;
    last_ = LastCall();
    return py::make_tuple(program_.intBytesNeeded(),
                          program_.floatBytesNeeded());
  }

  /// A level's custom mask: "custom_mask" (its packed bytes, uint8) and
  /// "mask_indptr" (int32 [B+1]) of the level dict, the bytes kept as
  /// 32-bit words (CustomMaskArrays); absent views without them.
  CustomMaskArrays customMask(const py::dict &lv) {
    if (!lv.contains("custom_mask") || lv["custom_mask"].is_none())
      return {};
    auto bytes = lv["custom_mask"]
                     .cast<py::array_t<uint8_t, py::array::c_style |
                                                    py::array::forcecast>>();
    I32Array words(static_cast<py::ssize_t>((bytes.size() + 3) / 4));
    std::memset(words.mutable_data(), 0, 4 * words.size());
    std::memcpy(words.mutable_data(), bytes.data(), bytes.size());
    I32Array indptr = lv["mask_indptr"].cast<I32Array>();
    arrays_.push_back(words);
    arrays_.push_back(indptr);
    return {ArrayView<int32_t>(words.data(), words.size()),
            ArrayView<int32_t>(indptr.data(), indptr.size())};
  }

  void upload(py::handle intWorkspace, py::handle floatWorkspace,
              int64_t stream) {
    TensorArg i = probe(intWorkspace, "int workspace", stream);
    TensorArg f = probe(floatWorkspace, "float_workspace_buffer", stream);
    for (const TensorArg *a : {&i, &f})
      if (!a->cuda || a->device != device_->ordinal() || !a->contiguous())
        throw py::value_error("workspace buffers must be contiguous tensors "
                              "on cuda:" +
                              std::to_string(device_->ordinal()));
    Status s =
        program_.upload(i.ptr, i.numel() * elemTypeBytes(i.dtype), f.ptr,
                        f.numel() * elemTypeBytes(f.dtype), asStream(stream));
    arrays_.clear(); // staged: the host copies are no longer read
    check(s);
    planned_ = true;
  }

  /// levels: (unsplit attention, unsplit merge, split attention, split
  /// merge, pair, kv slot) per level.
  void prepare(int variant, const py::list &levels, const std::string &merge) {
    std::vector<ProgramLevelKernels> ks;
    for (py::handle h : levels) {
      py::tuple t = py::reinterpret_borrow<py::tuple>(h);
      ProgramLevelKernels k;
      k.unsplit = {t[0].cast<std::string>(), t[1].cast<std::string>()};
      k.split = {t[2].cast<std::string>(), t[3].cast<std::string>()};
      k.pair = t[4].cast<bool>();
      k.kvSlot = t[5].cast<int>();
      ks.push_back(k);
    }
    check(program_.prepare(variant, ks, merge));
  }

  int64_t streamFor(const TensorArg &q, py::handle qObj) {
    if (q.torch)
      return torchCurrentStream(q.device);
    return framework_.attr("stream_for")(qObj, q.device).cast<int64_t>();
  }

  /// k_scale / v_scale: None is 1, as FlashInfer's run() takes them.
  py::object run(py::handle q, py::handle kv, py::handle out, py::handle lse,
                 bool returnLse, py::handle kvShared,
                 std::optional<float> kScaleArg,
                 std::optional<float> vScaleArg) {
    if (!planned_)
      throw py::value_error("run() before plan(): call plan() first");
    const float kScale = kScaleArg.value_or(1.f);
    const float vScale = vScaleArg.value_or(1.f);
    checkKvScales(kScale, vScale);
    Checker c{sig_, program_.numRows(), program_.rowCapacity(), maxPageId_};
    std::vector<py::object> alive;
    TensorArg tq = c.checkQ(q);
    const int64_t stream = streamFor(tq, q);
    if (!tq.torch)
      alive.push_back(probe(q, "q", stream).keepAlive);
    std::array<uint64_t, kNumRoles> ptrs{};
    std::array<int64_t, kNumRoles> counts{};
    setRole(ptrs, counts, Role::Q, tq);
    int variant = c.bindKv(kv, 0, stream, ptrs, counts, alive) ? 1 : 0;
    if (sig_.sharedSlot) {
      if (kvShared.is_none())
        throw py::value_error("k_shared and v_shared are required");
      c.bindKv(kvShared, 1, stream, ptrs, counts, alive);
    }
    if (!out.is_none())
      alive.push_back(c.checkOut(out, tq, stream).keepAlive);
    if (!lse.is_none())
      alive.push_back(c.checkLse(lse, tq, stream).keepAlive);
    // Outputs not given: new ones from the caller's framework (like q).
    if (out.is_none() && sig_.oType != sig_.qType)
      throw py::value_error(
          "out is required: the planned output dtype " +
          std::string(contract::dtypeName(sig_.config.oType)) +
          " differs from q's");
    py::object o = py::reinterpret_borrow<py::object>(out);
    TensorArg tout;
    if (!out.is_none()) {
      tout = probe(o, "out", stream); // checked above
    } else if (tq.torch) {
      o = torchEmptyLike(q, tq, tout); // q's shape, dtype and strides
    } else {
      o = framework_.attr("empty_like")(q);
      tout = probe(o, "out", stream);
    }
    alive.push_back(tout.keepAlive);
    setRole(ptrs, counts, Role::O, tout);
    py::object l = py::reinterpret_borrow<py::object>(lse);
    TensorArg tl;
    if (lse.is_none() && returnLse) {
      if (tq.torch) {
        TensorArg like = tq; // [rows, heads] float32, contiguous
        like.dtype = ElemType::F32;
        like.ndim = 2;
        like.setRowMajorStrides();
        l = torchEmptyStrided(like, tl);
      } else {
        l = framework_.attr("empty_f32")(
            q, py::make_tuple(tq.shape[0], tq.shape[1]));
      }
    }
    if (!l.is_none()) {
      if (!tl.torch)
        tl = probe(l, "lse", stream);
      alive.push_back(tl.keepAlive);
      setRole(ptrs, counts, Role::LSE, tl);
    }
    if (!program_.prepared(variant)) {
      resolver_(variant);
      if (!program_.prepared(variant))
        throw py::value_error("no kernels were prepared for this call");
    }
    launch(variant, ptrs, counts, stream, kScale, vScale);
    if (returnLse)
      return py::make_tuple(o, l);
    return o;
  }

  /// run() for the torch bridge (the runner's function): the same checks
  /// and launches on the tensors it describes, with k_scale = v_scale = 1
  /// (the ops pass none). 1, launching nothing, where run() would raise or
  /// must call Python first (a shared-prefix program, whose run() needs
  /// kv_shared; a KV form not prepared yet): the op's Python kernel then
  /// raises run()'s error, or prepares the form.
  int runFromC(const CascadeRunCall &c) {
    std::array<uint64_t, kNumRoles> ptrs{};
    std::array<int64_t, kNumRoles> counts{};
    int variant = 0;
    try {
      if (!planned_ || sig_.sharedSlot)
        return 1;
      Checker ch{sig_, program_.numRows(), program_.rowCapacity(), maxPageId_};
      const TensorArg tq = fromBridge(c.q), to = fromBridge(c.out);
      ch.checkQ(tq);
      if (c.has_v) {
        ch.bindPair(fromBridge(c.kv), fromBridge(c.v), 0, ptrs, counts);
        variant = 1;
      } else {
        ch.bindPool(fromBridge(c.kv), 0, ptrs, counts);
      }
      ch.checkOut(to, tq);
      setRole(ptrs, counts, Role::Q, tq);
      setRole(ptrs, counts, Role::O, to);
      if (c.has_lse) {
        const TensorArg tl = fromBridge(c.lse);
        ch.checkLse(tl, tq);
        setRole(ptrs, counts, Role::LSE, tl);
      }
      if (!program_.prepared(variant))
        return 1;
    } catch (const std::exception &) {
      return 1;
    }
    launch(variant, ptrs, counts, static_cast<int64_t>(c.stream), 1.f, 1.f);
    return 0;
  }

  int64_t numRows() const { return program_.numRows(); }
  int64_t rowCapacity() const { return program_.rowCapacity(); }
  int64_t numLaunches(int variant) const {
    return program_.numLaunches(variant);
  }
  std::vector<bool> splitKv() const {
    std::vector<bool> v;
    for (const Plan &p : program_.cascadePlan().levels)
      v.push_back(p.split_kv);
    return v;
  }
  bool prepared(int variant) const { return program_.prepared(variant); }
  Program &program() { return program_; }

  /// k_scale / v_scale: finite, and other than 1 only for an fp8 KV cache
  /// (f16/bf16 kernels have no scale parameters).
  void checkKvScales(float kScale, float vScale) const {
    const contract::DType kv = sig_.config.kvType;
    const bool fp8 =
        kv == contract::DType::F8E4M3 || kv == contract::DType::F8E5M2;
    for (auto [name, value] :
         {std::pair("k_scale", kScale), std::pair("v_scale", vScale)}) {
      if (!std::isfinite(value))
        throw py::value_error(std::string(name) + " must be finite");
      if (value != 1.f && !fp8)
        throw py::value_error(std::string(name) +
                              " dequantizes an fp8 KV cache; the planned KV "
                              "dtype is " +
                              contract::dtypeName(kv));
    }
  }

  /// The launches of the last run() again, same tensors and stream, with
  /// no argument checks: what the launches alone cost on the host
  /// (benchmarks/python/host_overhead.py). The caller keeps those tensors
  /// alive.
  void relaunch() {
    if (!last_.valid)
      throw py::value_error("_relaunch() before run()");
    check(program_.run(last_.variant, last_.ptrs, last_.counts,
                       asStream(last_.stream), last_.kScale, last_.vScale));
  }

private:
  static void setRole(std::array<uint64_t, kNumRoles> &ptrs,
                      std::array<int64_t, kNumRoles> &counts, Role role,
                      const TensorArg &a) {
    ptrs[static_cast<size_t>(role)] = a.ptr;
    counts[static_cast<size_t>(role)] = a.numel();
  }

  /// Launches the prepared `variant` on the bound addresses (and remembers
  /// the call for relaunch()).
  void launch(int variant, const std::array<uint64_t, kNumRoles> &ptrs,
              const std::array<int64_t, kNumRoles> &counts, int64_t stream,
              float kScale, float vScale) {
    check(
        program_.run(variant, ptrs, counts, asStream(stream), kScale, vScale));
    last_ = {variant, ptrs, counts, stream, kScale, vScale};
  }

  std::shared_ptr<Device> device_;
  Program program_;
  CascadeRunner runner_{};
  Signature sig_;
  bool planned_ = false;
  std::array<int64_t, 2> maxPageId_{-1, -1}; ///< per KV slot
  struct LastCall {
    int variant = 0;
    std::array<uint64_t, kNumRoles> ptrs{};
    std::array<int64_t, kNumRoles> counts{};
    int64_t stream = 0;
    float kScale = 1.f, vScale = 1.f;
    bool valid = false;
    LastCall() = default;
    LastCall(int v, const std::array<uint64_t, kNumRoles> &p,
             const std::array<int64_t, kNumRoles> &c, int64_t s, float ks,
             float vs)
        : variant(v), ptrs(p), counts(c), stream(s), kScale(ks), vScale(vs),
          valid(true) {}
  } last_;
  std::vector<I32Array> arrays_;
  py::object resolver_ = py::none(), framework_ = py::none();
};

/// The merges' fast path for torch CUDA tensors: checks, output allocation
/// and the launch in one call, no Python frame and no dict. Every method
/// returns None (and launches nothing) when it does not take the call:
/// not torch CUDA tensors, or any check failing; cascade.py then runs its
/// Python path, which names the offending argument in its error. The same
/// merges as C functions on tensors the torch bridge describes (outputs it
/// allocated) serve its kernels of the merges' torch ops (capsule()).
class MergeOps {
public:
  /// resolver(ordinal, dtype name, head_dim) -> (Device, {role: kernel})
  /// (cascade_mlir._gpu.merge_kernels: loads, or compiles, the bundle).
  explicit MergeOps(py::object resolver) : resolver_(std::move(resolver)) {
    table_.abi = CASCADE_TORCH_BRIDGE_ABI;
    table_.size = sizeof(table_);
    table_.self = this;
    table_.merge_state = [](void *self, const CascadeTorchTensor *t,
                            uint64_t stream) {
      return calledFromC([&] {
        return static_cast<MergeOps *>(self)->mergeStateFromC(t, stream);
      });
    };
    table_.merge_state_in_place = [](void *self, const CascadeTorchTensor *t,
                                     uint64_t stream) {
      return calledFromC([&] {
        return static_cast<MergeOps *>(self)->mergeStateInPlaceFromC(t, stream);
      });
    };
    table_.merge_states = [](void *self, const CascadeTorchTensor *t,
                             uint64_t stream) {
      return calledFromC([&] {
        return static_cast<MergeOps *>(self)->mergeStatesFromC(t, stream);
      });
    };
  }

  /// The C table of the merges (TorchBridgeABI.h) in a capsule that keeps
  /// `self` (this MergeOps) alive.
  static py::object capsule(py::object self) {
    MergeOps &m = self.cast<MergeOps &>();
    return tableCapsule(&m.table_, CASCADE_RUNTIME_MERGES_CAPSULE,
                        std::move(self));
  }

  py::object mergeState(py::handle va, py::handle sa, py::handle vb,
                        py::handle sb) {
    State a, b;
    if (!readState(va, sa, a) || !readState(vb, sb, b) || !same(a, b))
      return py::none();
    Kernels *k = kernels(a);
    if (!k)
      return py::none();
    TensorArg tv, ts;
    py::object v = torchEmptyLike(va, a.v, tv), s = torchEmptyLike(sa, a.s, ts);
    launchMergeState(*k, a, b, tv, ts, torchCurrentStream(a.v.device));
    return py::make_tuple(v, s);
  }
  int mergeStateFromC(const CascadeTorchTensor *t, uint64_t stream) {
    State a, b;
    if (!readState(t[0], t[1], a) || !readState(t[2], t[3], b) || !same(a, b))
      return 1;
    const TensorArg tv = fromBridge(t[4]), ts = fromBridge(t[5]);
    if (!sameLayout(tv, a.v) || !sameLayout(ts, a.s))
      return 1;
    Kernels *k = kernels(a);
    if (!k)
      return 1;
    launchMergeState(*k, a, b, tv, ts, static_cast<int64_t>(stream));
    return 0;
  }

  py::object mergeStateInPlace(py::handle v, py::handle s, py::handle vo,
                               py::handle so, py::handle mask) {
    State a, b;
    if (!readState(v, s, a) || !readState(vo, so, b) || !same(a, b))
      return py::none();
    if (!mask.is_none() && !isTorchTensor(mask))
      return py::none();
    const TensorArg m = mask.is_none() ? TensorArg() : probe(mask, "mask");
    if (!launchInPlace(a, b, mask.is_none() ? nullptr : &m,
                       torchCurrentStream(a.v.device)))
      return py::none();
    return py::bool_(true);
  }
  int mergeStateInPlaceFromC(const CascadeTorchTensor *t, uint64_t stream) {
    State a, b;
    if (!readState(t[0], t[1], a) || !readState(t[2], t[3], b) || !same(a, b))
      return 1;
    const TensorArg m = t[4].ndim < 0 ? TensorArg() : fromBridge(t[4]);
    return launchInPlace(a, b, t[4].ndim < 0 ? nullptr : &m,
                         static_cast<int64_t>(stream))
               ? 0
               : 1;
  }

  py::object mergeStates(py::handle v, py::handle s) {
    if (!isTorchTensor(v) || !isTorchTensor(s))
      return py::none();
    State st;
    st.v = probe(v, "v");
    st.s = probe(s, "s");
    Kernels *k = readStates(st);
    if (!k)
      return py::none();
    TensorArg vOut, sOut;
    py::object vo = torchEmptyStrided(statesOut(st.v, 3), vOut);
    py::object so = torchEmptyStrided(statesOut(st.s, 2), sOut);
    launchMergeStates(*k, st, vOut, sOut, torchCurrentStream(st.v.device));
    return py::make_tuple(vo, so);
  }
  int mergeStatesFromC(const CascadeTorchTensor *t, uint64_t stream) {
    State st;
    st.v = fromBridge(t[0]);
    st.s = fromBridge(t[1]);
    Kernels *k = readStates(st);
    const TensorArg vOut = fromBridge(t[2]), sOut = fromBridge(t[3]);
    if (!k || !sameLayout(vOut, statesOut(st.v, 3)) ||
        !sameLayout(sOut, statesOut(st.s, 2)))
      return 1;
    launchMergeStates(*k, st, vOut, sOut, static_cast<int64_t>(stream));
    return 0;
  }

private:
  struct State {
    TensorArg v, s;
    int64_t rows = 0, heads = 0;
  };
  struct Kernels {
    std::shared_ptr<Device> device;
    std::string mergeState, inPlace, inPlaceMask, mergeStates;
  };

  static bool isValueType(ElemType t) {
    return t == ElemType::F16 || t == ElemType::BF16 || t == ElemType::F32;
  }

  /// v [rows, heads, dim] f16/bf16/f32 and s [rows, heads] f32, contiguous
  /// CUDA torch tensors on one device, dim a multiple of 8.
  static bool readState(py::handle v, py::handle s, State &st) {
    if (!isTorchTensor(v) || !isTorchTensor(s))
      return false;
    st.v = probe(v, "v");
    st.s = probe(s, "s");
    return validState(st);
  }
  static bool readState(const CascadeTorchTensor &v,
                        const CascadeTorchTensor &s, State &st) {
    st.v = fromBridge(v);
    st.s = fromBridge(s);
    return validState(st);
  }
  static bool validState(State &st) {
    const TensorArg &a = st.v, &b = st.s;
    if (!a.cuda || a.ndim != 3 || !isValueType(a.dtype) || !a.contiguous() ||
        a.shape[2] % 8 || !b.cuda || b.device != a.device ||
        b.dtype != ElemType::F32 || b.ndim != 2 || b.shape[0] != a.shape[0] ||
        b.shape[1] != a.shape[1] || !b.contiguous())
      return false;
    st.rows = a.shape[0];
    st.heads = a.shape[1];
    return true;
  }
  static bool same(const State &a, const State &b) {
    return a.v.device == b.v.device && a.v.dtype == b.v.dtype &&
           a.v.shape[0] == b.v.shape[0] && a.v.shape[1] == b.v.shape[1] &&
           a.v.shape[2] == b.v.shape[2];
  }
  /// An output the torch bridge allocated: `like`'s device, dtype and
  /// shape, contiguous.
  static bool sameLayout(const TensorArg &out, const TensorArg &like) {
    if (out.cuda != like.cuda || out.device != like.device ||
        out.dtype != like.dtype || out.ndim != like.ndim || !out.contiguous())
      return false;
    for (int i = 0; i < out.ndim; ++i)
      if (out.shape[i] != like.shape[i])
        return false;
    return true;
  }
  /// merge_states' inputs, v [rows, n, heads, dim] f16/bf16/f32 and s
  /// [rows, n, heads] f32, contiguous CUDA tensors on one device (dim a
  /// multiple of 8), and their kernels; nullptr when not taken.
  Kernels *readStates(State &st) {
    const TensorArg &tv = st.v, &ts = st.s;
    if (!tv.cuda || tv.ndim != 4 || !isValueType(tv.dtype) ||
        !tv.contiguous() || tv.shape[3] % 8 || !ts.cuda ||
        ts.device != tv.device || ts.dtype != ElemType::F32 || ts.ndim != 3 ||
        !ts.contiguous() || ts.shape[0] != tv.shape[0] ||
        ts.shape[1] != tv.shape[1] || ts.shape[2] != tv.shape[2])
      return nullptr;
    st.rows = tv.shape[0];
    st.heads = tv.shape[2];
    return kernels(st);
  }
  /// merge_states' output of input `in` (v: rank 3, s: rank 2): its dtype
  /// and device, [rows, heads(, dim)], contiguous.
  static TensorArg statesOut(const TensorArg &in, int rank) {
    TensorArg a = in;
    a.ndim = rank;
    a.shape[1] = in.shape[2];
    if (rank == 3)
      a.shape[2] = in.shape[3];
    a.setRowMajorStrides();
    return a;
  }

  void launchMergeState(Kernels &k, const State &a, const State &b,
                        const TensorArg &v, const TensorArg &s,
                        int64_t stream) {
    Args t;
    setState(t, "v_a", "s_a", a);
    setState(t, "v_b", "s_b", b);
    t.buffer("v", v);
    t.buffer("s", s);
    t.integer("num_tasks", a.rows * a.heads);
    launch(k, k.mergeState, t, stream);
  }

  /// merge_state_in_place, with `mask` (a bool / uint8 / int8 [rows]
  /// tensor on the states' device, any positive stride) when not null;
  /// false, launching nothing, when it does not take the call.
  bool launchInPlace(const State &a, const State &b, const TensorArg *mask,
                     int64_t stream) {
    Kernels *k = kernels(a);
    if (!k)
      return false;
    Args t;
    setState(t, "v", "s", a);
    setState(t, "v_other", "s_other", b);
    t.integer("num_tasks", a.rows * a.heads);
    t.integer("num_heads", a.heads);
    const std::string *kernel = &k->inPlace;
    if (mask) {
      TensorArg m = *mask;
      const bool byte = m.dtype == ElemType::Bool || m.dtype == ElemType::U8 ||
                        m.dtype == ElemType::I8;
      const int64_t stride = m.ndim == 1 ? m.strides[0] : 0;
      if (!m.cuda || m.device != a.v.device || !byte || m.ndim != 1 ||
          m.shape[0] != a.rows || (a.rows && stride < 1))
        return false;
      m.shape[0] = a.rows ? (a.rows - 1) * stride + 1 : 0; // elements read
      t.buffer("mask", m);
      t.integer("mask_stride", a.rows ? stride : 1);
      kernel = &k->inPlaceMask;
    }
    launch(*k, *kernel, t, stream);
    return true;
  }

  void launchMergeStates(Kernels &k, const State &st, const TensorArg &v,
                         const TensorArg &s, int64_t stream) {
    Args t;
    t.buffer("v_in", st.v);
    t.buffer("s_in", st.s);
    t.buffer("v", v);
    t.buffer("s", s);
    t.integer("num_tasks", st.rows * st.heads);
    t.integer("num_states", st.v.shape[1]);
    t.integer("num_heads", st.heads);
    launch(k, k.mergeStates, t, stream);
  }

  /// One call's arguments: at most 6 buffers and 4 integers, by name
  /// (string literals: compared by address only when binding a template).
  struct Args {
    std::array<const char *, 6> bufNames{};
    std::array<uint64_t, 6> ptrs{};
    std::array<int64_t, 6> counts{};
    std::array<const char *, 4> intNames{};
    std::array<int64_t, 4> ints{};
    int numBufs = 0, numInts = 0;
    void buffer(const char *name, const TensorArg &a) {
      bufNames[numBufs] = name;
      ptrs[numBufs] = a.ptr;
      counts[numBufs++] = a.numel();
    }
    void integer(const char *name, int64_t v) {
      intNames[numInts] = name;
      ints[numInts++] = v;
    }
  };
  static void setState(Args &t, const char *v, const char *s, const State &st) {
    t.buffer(v, st.v);
    t.buffer(s, st.s);
  }

  /// The merge kernels for the state's device, dtype and head_dim (the
  /// resolver's answer, cached); nullptr when the resolver has none.
  Kernels *kernels(const State &st) {
    const int64_t key = (static_cast<int64_t>(st.v.device) << 32) |
                        (static_cast<int64_t>(st.v.dtype) << 24) |
                        st.v.shape[st.v.ndim - 1];
    auto it = cache_.find(key);
    if (it != cache_.end())
      return &it->second;
    py::object r = resolver_(st.v.device, elemTypeName(st.v.dtype),
                             st.v.shape[st.v.ndim - 1]);
    if (r.is_none())
      return nullptr;
    py::tuple pair = r.cast<py::tuple>();
    Kernels k;
    k.device = pair[0].cast<std::shared_ptr<Device>>();
    py::dict roles = pair[1];
    k.mergeState = roles["merge_state"].cast<std::string>();
    k.inPlace = roles["merge_state_in_place"].cast<std::string>();
    k.inPlaceMask = roles["merge_state_in_place_mask"].cast<std::string>();
    k.mergeStates = roles["merge_states"].cast<std::string>();
    return &cache_.emplace(key, std::move(k)).first->second;
  }

  /// A kernel bound once for one set of integer arguments (they fix the
  /// grid): the launch's parameter slots, with the slots that hold the
  /// buffers' addresses and element counts patched per call. A serving
  /// loop calls a merge with the same sizes every layer, so binding (name
  /// lookups, the argument table) happens once per size, not per call.
  ///
  /// Launched as a one-node CUDA graph updated in place (as Program does:
  /// a graph launch plus a node update costs less host time than a
  /// cuLaunchKernel), kernel by kernel under stream capture (the kernel
  /// then becomes a node of the caller's graph) or without graph support.
  struct Bound {
    std::vector<PreparedLaunch> launches; ///< one
    std::vector<uint8_t> dirty{1};
    std::unique_ptr<KernelGraph> graph;
    std::vector<std::pair<size_t, int>> ptrSlots, countSlots;
    bool empty = false; ///< a 0-sized grid: nothing to launch
  };
  struct BoundKey {
    const std::string *kernel;
    std::array<int64_t, 4> ints;
    bool operator<(const BoundKey &o) const {
      return std::tie(kernel, ints) < std::tie(o.kernel, o.ints);
    }
  };

  /// Binds `kernel` through the launcher's recorder with stand-in addresses
  /// and counts (distinct, and out of reach of any real value), then finds
  /// the slots that hold them.
  Bound &bind(Kernels &k, const std::string &kernel, const Args &t) {
    BoundKey key{&kernel, t.ints};
    auto it = bound_.find(key);
    if (it != bound_.end())
      return it->second;
    auto ptrMark = [](int i) {
      return (0xCA5CULL << 48) | (uint64_t(i) << 40);
    };
    auto countMark = [](int i) {
      return int64_t((0x0ACEULL << 48) | (uint64_t(i) << 40));
    };
    ArgumentTable table;
    for (int i = 0; i < t.numBufs; ++i)
      table.setBuffer(t.bufNames[i], ptrMark(i), countMark(i));
    for (int i = 0; i < t.numInts; ++i)
      table.setInt(t.intNames[i], t.ints[i]);
    std::vector<PreparedLaunch> recorded;
    Launcher &l = k.device->launcher();
    l.setRecorder(&recorded);
    Status s = l.launch(kernel, table, nullptr);
    l.setRecorder(nullptr);
    check(s);
    Bound b;
    b.empty = recorded.empty();
    if (!b.empty) {
      b.launches.push_back(std::move(recorded.front()));
      const std::vector<uint64_t> &slots = b.launches[0].launch.slots;
      for (size_t j = 0; j < slots.size(); ++j)
        for (int i = 0; i < t.numBufs; ++i) {
          if (slots[j] == ptrMark(i))
            b.ptrSlots.emplace_back(j, i);
          else if (slots[j] == static_cast<uint64_t>(countMark(i)))
            b.countSlots.emplace_back(j, i);
        }
      b.launches[0].finalize();
    }
    return bound_.emplace(key, std::move(b)).first->second;
  }

  void launch(Kernels &k, const std::string &kernel, const Args &t,
              int64_t streamHandle) {
    Bound &b = bind(k, kernel, t);
    if (b.empty)
      return;
    PreparedLaunch &pl = b.launches[0];
    std::vector<uint64_t> &slots = pl.launch.slots;
    auto patch = [&](size_t slot, uint64_t value) {
      if (slots[slot] != value) {
        slots[slot] = value;
        b.dirty[0] = 1;
      }
    };
    for (const auto &[slot, i] : b.ptrSlots)
      patch(slot, t.ptrs[i]);
    for (const auto &[slot, i] : b.countSlots)
      patch(slot, static_cast<uint64_t>(t.counts[i]));
    Launcher &l = k.device->launcher();
    const runtime::Device &dev = l.device();
    const cuda::CUstream stream = asStream(streamHandle);
    check(l.makeCurrent());
    if (dev.canBuildGraphs() && !(b.graph && b.graph->failed()) &&
        !dev.isCapturing(stream)) {
      if (!b.graph)
        b.graph = std::make_unique<KernelGraph>(dev);
      if (b.graph->launch(b.launches, b.dirty, stream))
        return;
    }
    check(dev.launch(pl.function, pl.launch, pl.params.data(), stream, kernel));
    b.dirty[0] = 1; // the graph (if any) has not seen these slots
  }

  py::object resolver_;
  std::unordered_map<int64_t, Kernels> cache_;
  std::map<BoundKey, Bound> bound_;
  CascadeMergeOps table_{};
};

/// run()'s argument checks against a signature, without a device: device
/// -1 expects host tensors (numpy), so the checks run in CI.
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

/// Probes a tensor the way run() does (for tests and diagnostics); bridge
/// false: torch tensors through Python even with the bridge.
py::dict probeForPython(py::handle obj, const std::string &name, bool bridge) {
  TensorArg a = probe(obj, name.c_str(), -1, bridge);
  py::dict d;
  d["ptr"] = a.ptr;
  d["device"] = a.deviceString();
  d["dtype"] = elemTypeName(a.dtype);
  std::vector<int64_t> shape(a.shape, a.shape + a.ndim);
  std::vector<int64_t> strides(a.strides, a.strides + a.ndim);
  d["shape"] = shape;
  d["strides"] = strides;
  d["contiguous"] = a.contiguous();
  d["torch"] = a.torch;
  d["bridged"] = a.bridged;
  return d;
}

/// The torch allocations of run() and the merges, for tests: (the new
/// tensor, the address the bindings launch with).
py::tuple torchEmptyLikeForPython(py::handle like) {
  TensorArg out;
  py::object t = torchEmptyLike(like, probe(like, "like"), out);
  return py::make_tuple(t, out.ptr);
}
py::tuple torchEmptyStridedForPython(const std::vector<int64_t> &shape,
                                     const std::vector<int64_t> &strides,
                                     const std::string &dtype, int device) {
  TensorArg like;
  if (shape.size() != strides.size() || shape.size() > 8)
    throw py::value_error("shape and strides: one entry per dimension, <= 8");
  like.ndim = static_cast<int>(shape.size());
  std::copy(shape.begin(), shape.end(), like.shape);
  std::copy(strides.begin(), strides.end(), like.strides);
  like.cuda = device >= 0;
  like.device = device;
  for (int i = 0; i < static_cast<int>(ElemType::Other); ++i)
    if (dtype == elemTypeName(static_cast<ElemType>(i)))
      like.dtype = static_cast<ElemType>(i);
  TensorArg out;
  py::object t = torchEmptyStrided(like, out);
  return py::make_tuple(t, out.ptr);
}

} // namespace

void registerGpu(py::module_ &m) {
  m.def("_register_torch", &registerTorch, py::arg("torch"),
        py::arg("bridge") = py::none(),
        "Called by the package when torch is imported; bridge: "
        "cascade_mlir._torch_bridge.CAPSULE (None: torch through Python).");
  m.def("_check_call", &checkCall, py::arg("q"), py::arg("paged_kv_cache"),
        py::arg("out"), py::arg("lse"), py::arg("config"), py::arg("rows"),
        py::arg("max_page_id"), py::arg("device") = -1,
        "run()'s argument checks, without a device (for tests).");
  m.def(
      "load_bundle",
      [](const std::string &dir) {
        Bundle b;
        check(loadBundle(dir, b));
        std::vector<std::pair<std::string, std::string>> out;
        for (const KernelSpec &k : b.kernels)
          out.emplace_back(k.name, k.op);
        return out;
      },
      py::arg("dir"),
      "Reads a kernel bundle as the launcher does (no GPU): (name, op) of "
      "every kernel.");
  m.def("_probe", &probeForPython, py::arg("tensor"), py::arg("name") = "x",
        py::arg("bridge") = true,
        "What run() reads from a tensor (device, dtype, shape, strides); "
        "bridge=False reads a torch tensor through Python even where "
        "cascade_mlir._torch_bridge would read it.");
  m.def("_stand_in_device", &setStandInDevice, py::arg("ordinal"),
        "For tests on the stand-in CUDA driver (tests/fake_cuda), whose "
        "device memory is host memory: torch tensors on the host are read "
        "as on cuda:ordinal, on stream 0 (-1: off).");
  m.def("_torch_bridge_version", &torchBridgeVersion,
        "The torch version of the cascade_mlir._torch_bridge in use, or None "
        "(torch tensors read and allocated through Python).");
  m.def("_torch_empty_like", &torchEmptyLikeForPython, py::arg("like"),
        "run()'s output allocation (for tests): (tensor, address).");
  m.def("_torch_empty_strided", &torchEmptyStridedForPython, py::arg("shape"),
        py::arg("strides"), py::arg("dtype"), py::arg("device"),
        "The merges' output allocation (for tests): (tensor, address); "
        "device -1 is the host.");
  m.def(
      "device_count",
      []() {
        const cuda::DriverApi *api = nullptr;
        if (!cuda::getDriver(api).ok())
          return 0;
        int n = 0;
        return api->cuDeviceGetCount(&n) == cuda::CUDA_SUCCESS ? n : 0;
      },
      "CUDA devices the driver sees (0 without a driver).");
  py::class_<Device, std::shared_ptr<Device>>(m, "Device")
      .def(py::init<int>(), py::arg("ordinal"))
      .def_property_readonly("ordinal", &Device::ordinal)
      .def_property_readonly("num_sms",
                             [](Device &d) { return d.launcher().numSms(); })
      .def_property_readonly(
          "chip", [](Device &d) { return d.launcher().kernelChip(); },
          "The chip of the kernel bundles this device runs best (sm_90a on "
          "compute capability 9.0; older chips' bundles are the fallback).")
      .def_property_readonly(
          "compute_capability", [](Device &d) { return d.launcher().chip(); },
          "The compute capability as sm_<major><minor>.")
      .def("add_bundle", &Device::addBundle, py::arg("dir"), py::arg("key"))
      .def("has_bundle", &Device::hasBundle, py::arg("key"))
      .def("kernel_info", &Device::kernelInfo, py::arg("name"))
      .def("occupancy", &Device::occupancy, py::arg("name"))
      .def("launch", &Device::launch, py::arg("kernel"), py::arg("buffers"),
           py::arg("ints"), py::arg("stream"))
      .def("synchronize", &Device::synchronize);
  py::class_<MergeOps>(m, "MergeOps",
                       "The merges on torch CUDA tensors in one call (None: "
                       "not taken, use the checked path).")
      .def(py::init<py::object>(), py::arg("resolver"))
      .def("merge_state", &MergeOps::mergeState)
      .def("merge_state_in_place", &MergeOps::mergeStateInPlace)
      .def("merge_states", &MergeOps::mergeStates)
      .def("_capsule", &MergeOps::capsule,
           "The merges as C functions, for cascade_mlir._torch_bridge's "
           "kernels of the merges' torch ops (TorchBridgeABI.h).");
  py::class_<ProgramHandle>(m, "Program")
      .def(py::init<std::shared_ptr<Device>>(), py::arg("device"))
      .def("set_signature", &ProgramHandle::setSignature, py::arg("config"),
           py::arg("shared_slot"), py::arg("resolver"), py::arg("framework"))
      .def("plan", &ProgramHandle::plan, py::arg("levels"),
           py::arg("plan_kernels"), py::arg("cuda_graph"),
           py::arg("index_buffers") = py::none(),
           py::arg("last_level_first") = false,
           "Plans every level; with last_level_first (outside CUDA-graph "
           "mode) the last level becomes the base level when an earlier one "
           "splits KV (base_level says which: every other level's kernels "
           "must accumulate).")
      .def("upload", &ProgramHandle::upload)
      .def("prepare", &ProgramHandle::prepare)
      .def("prepared", &ProgramHandle::prepared)
      .def("run", &ProgramHandle::run, py::arg("q"), py::arg("paged_kv_cache"),
           py::arg("out") = py::none(), py::arg("lse") = py::none(),
           py::arg("return_lse") = false, py::arg("kv_shared") = py::none(),
           py::arg("k_scale") = py::none(), py::arg("v_scale") = py::none())
      .def_property_readonly("num_rows", &ProgramHandle::numRows)
      .def_property_readonly("row_capacity", &ProgramHandle::rowCapacity)
      .def_property_readonly("split_kv", &ProgramHandle::splitKv)
      .def_property_readonly(
          "base_level",
          [](ProgramHandle &h) { return h.program().baseLevel(); },
          "The level that writes the output; the others accumulate into "
          "it.")
      .def("num_launches", &ProgramHandle::numLaunches)
      .def("_runner", &ProgramHandle::runnerCapsule,
           "run() as a C function, for cascade_mlir._torch_bridge's kernels "
           "of the run and run_out torch ops (TorchBridgeABI.h).")
      .def("_relaunch", &ProgramHandle::relaunch,
           "The last run()'s launches again, unchecked (for measuring).")
      .def_property(
          "graph_launch",
          [](ProgramHandle &h) { return h.program().graphLaunch(); },
          [](ProgramHandle &h, bool on) { h.program().setGraphLaunch(on); },
          "run() launches the kernels of a call as one CUDA graph (default "
          "where the driver can build graphs; nodes updated in place) or "
          "one by one.")
      .def_property_readonly("last_run_used_graph", [](ProgramHandle &h) {
        return h.program().lastRunUsedGraph();
      });
}

} // namespace cascade::python
