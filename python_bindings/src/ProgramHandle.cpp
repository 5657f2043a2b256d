//===- ProgramHandle.cpp - cascade_mlir._runtime.Program ------------------===//
//
// Program: one wrapper's plan, uploaded, with its launches bound once.
// run() checks the caller's tensors (CallChecks.h), writes their addresses
// into the bound launches and launches on the caller's current stream; the
// same run() as a C function serves the torch bridge's run ops.
//
//===----------------------------------------------------------------------===//

#include "BridgeTables.h"
#include "CallChecks.h"
#include "ConfigDict.h"
#include "GpuDevice.h"
#include "GpuModule.h"
#include "TensorArgs.h"
#include "TorchBridgeABI.h"

#include "cascade/Runtime/Program.h"

#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <optional>

namespace py = pybind11;
using namespace cascade::runtime;

namespace cascade::python {

namespace {

using I32Array =
    py::array_t<int32_t, py::array::c_style | py::array::forcecast>;

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
    bool nextPagedSlot0 = true;
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
      // Ragged K/V (no page table) in slot 0.
      if (slot == 0 &&
          (!lv.contains("kv_indices") || lv["kv_indices"].is_none()))
        nextPagedSlot0 = false;
      // Only the pages the requests use: a preallocated kv_indices buffer
      // may hold anything past kv_indptr[B].
      const ArrayView<int32_t> ids = in.usedKvIndices();
      for (int64_t i = 0; i < ids.size(); ++i)
        nextMaxPage[slot] = std::max<int64_t>(nextMaxPage[slot], ids[i]);
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
    pagedSlot0_ = nextPagedSlot0;
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
  /// state_inputs: {name: tensor}, the state inputs (float32
  /// [num_qo_heads] on q's device each), required exactly when the planned
  /// kernels take them.
  py::object run(py::handle q, py::handle kv, py::handle out, py::handle lse,
                 bool returnLse, py::handle kvShared,
                 std::optional<float> kScaleArg, std::optional<float> vScaleArg,
                 py::handle stateInputs) {
    if (!planned_)
      throw py::value_error("run() before plan(): call plan() first");
    const float kScale = kScaleArg.value_or(1.f);
    const float vScale = vScaleArg.value_or(1.f);
    checkKvScales(kScale, vScale);
    Checker c{sig_, program_.numRows(), program_.rowCapacity(), maxPageId_,
              pagedSlot0_};
    std::vector<py::object> alive;
    TensorArg tq = c.checkQ(q);
    const int64_t stream = streamFor(tq, q);
    if (!tq.torch)
      alive.push_back(probe(q, "q", stream).keepAlive);
    std::array<uint64_t, kNumRoles> ptrs{};
    std::array<int64_t, kNumRoles> counts{};
    setRole(ptrs, counts, Role::Q, tq);
    std::array<TensorArg, 2> pair;
    TensorArg pool;
    int variant =
        c.bindKv(kv, 0, stream, ptrs, counts, alive, &pair, &pool) ? 1 : 0;
    if (sig_.sharedSlot) {
      if (kvShared.is_none())
        throw py::value_error("k_shared and v_shared are required");
      c.bindKv(kvShared, 1, stream, ptrs, counts, alive);
    }
    if (!stateInputs.is_none())
      bindStateInputs(py::reinterpret_borrow<py::dict>(stateInputs), tq, stream,
                      ptrs, counts, alive);
    if (!out.is_none())
      alive.push_back(c.checkOut(out, tq, stream).keepAlive);
    if (!lse.is_none())
      alive.push_back(c.checkLse(lse, tq, stream).keepAlive);
    // Outputs not given: new ones from the caller's framework (like q; with
    // torch, of the planned dtype where it is not q's: fp8 queries write
    // f16 or bf16).
    if (out.is_none() && sig_.oType != sig_.qType && !tq.torch)
      throw py::value_error(
          "out is required: the planned output dtype " +
          std::string(contract::dtypeName(sig_.config.oType)) +
          " differs from q's");
    TensorArg tout;
    py::object o = output(q, tq, out, stream, tout);
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
    RowStrides strides = rowStrides(tq, tout);
    bindKvStrides(variant, pool, pair, kv, stream, strides, ptrs, counts,
                  alive);
    // A kernel that reads q or o as a flat buffer (one built without their
    // strides, a merge_state_in_place into o): a contiguous copy, counted.
    py::object qCopy, oCopy;
    if (strides.strided(Role::Q) && !program_.takesStrides(variant, Role::Q)) {
      qCopy = contiguousCopy(q, tq, "q");
      alive.push_back(qCopy);
      setRole(ptrs, counts, Role::Q, probe(qCopy, "q", stream));
    }
    if (strides.strided(Role::O) && !program_.takesStrides(variant, Role::O)) {
      TensorArg like = tout, tmp;
      like.setRowMajorStrides();
      if (!tout.torch)
        throw py::value_error("a strided out needs torch here: this plan's "
                              "kernels write o as a contiguous buffer");
      oCopy = torchEmptyStrided(like, tmp);
      alive.push_back(oCopy);
      setRole(ptrs, counts, Role::O, tmp);
      ++copyFallbacks_;
    }
    if (qCopy)
      strides.set(Role::Q, -1, -1);
    if (oCopy)
      strides.set(Role::O, -1, -1);
    launch(variant, ptrs, counts, stream, kScale, vScale, strides);
    if (oCopy)
      o.attr("copy_")(oCopy);
    if (returnLse)
      return py::make_tuple(o, l);
    return o;
  }

  /// run()'s output: the caller's `out` (checked before), else a new one
  /// from q's framework, [rows, heads, head_dim_vo] in q's dtype (like q
  /// where q is contiguous and head_dim_vo is q's head_dim, else
  /// contiguous). Its view in `tout`.
  py::object output(py::handle q, const TensorArg &tq, py::handle out,
                    int64_t stream, TensorArg &tout) {
    py::object o = py::reinterpret_borrow<py::object>(out);
    const int64_t vDim = sig_.config.vDim();
    if (!out.is_none()) {
      tout = probe(o, "out", stream);
    } else if (tq.torch && tq.contiguous() && vDim == tq.shape[2] &&
               sig_.oType == sig_.qType) {
      o = torchEmptyLike(q, tq, tout); // q's shape, dtype and strides
    } else if (tq.torch) {
      // A strided q (a view), an output whose head_dim is v's
      // (head_dim_vo) or whose dtype is its own: a contiguous [rows, heads,
      // head_dim_vo] output of the planned dtype.
      TensorArg like = tq;
      like.shape[2] = vDim;
      like.dtype = sig_.oType;
      like.setRowMajorStrides();
      o = torchEmptyStrided(like, tout);
    } else if (vDim != tq.shape[2]) {
      o = framework_.attr("empty_shaped")(
          q, py::make_tuple(tq.shape[0], tq.shape[1], vDim));
      tout = probe(o, "out", stream);
    } else {
      o = framework_.attr("empty_like")(q);
      tout = probe(o, "out", stream);
    }
    return o;
  }

  /// The strides of slot 0's cache where it is a view: a pool whose pages
  /// lie apart (a view of one layer of a larger cache) binds its page
  /// stride; a strided (k, v) pair of ragged K/V (one-token pages) its
  /// token and head strides (one pair for both, or v's own where its
  /// head_dim differs: head_dim_vo), a paged pair whose pages lie apart its
  /// page strides (one for both, or v's own); any other strided pair is
  /// copied, counted in copy_fallbacks.
  void bindKvStrides(int variant, const TensorArg &pool,
                     const std::array<TensorArg, 2> &pair, py::handle kv,
                     int64_t stream, RowStrides &strides,
                     std::array<uint64_t, kNumRoles> &ptrs,
                     std::array<int64_t, kNumRoles> &counts,
                     std::vector<py::object> &alive) {
    if (variant == 0 && !pool.contiguous()) {
      if (!program_.takesStrides(0, Role::KV0, RowStrides::Page))
        throw py::value_error(
            "paged_kv_cache is a view with page stride " +
            std::to_string(pool.strides[0]) +
            ": this plan's kernels (built before kv_stride_page) read a "
            "contiguous cache; pass a contiguous one");
      strides.setPage(Role::KV0, pool.strides[0]);
    }
    if (variant == 1 && (!pair[0].contiguous() || !pair[1].contiguous())) {
      const int hd = sig_.hnd() ? 1 : 2;
      const bool split = sig_.config.splitHeadDims();
      const bool same = split || (pair[0].strides[0] == pair[1].strides[0] &&
                                  pair[0].strides[hd] == pair[1].strides[hd]);
      const int64_t kPage = pageStrideOf(pair[0]),
                    vPage = pageStrideOf(pair[1]);
      if (sig_.config.pageSize == 1 && same &&
          program_.takesStrides(variant, Role::K0) &&
          program_.takesStrides(variant, Role::V0)) {
        strides.set(Role::K0, pair[0].strides[0], pair[0].strides[hd]);
        strides.set(Role::V0, pair[1].strides[0], pair[1].strides[hd]);
      } else if (kPage >= 0 && vPage >= 0 && (split || kPage == vPage) &&
                 program_.takesStrides(variant, Role::K0, RowStrides::Page) &&
                 program_.takesStrides(variant, Role::V0, RowStrides::Page)) {
        strides.setPage(Role::K0, kPage);
        strides.setPage(Role::V0, vPage);
      } else {
        py::sequence seq = py::reinterpret_borrow<py::sequence>(kv);
        for (int i = 0; i < 2; ++i) {
          py::object copy = contiguousCopy(seq[i], pair[i], i ? "v" : "k");
          alive.push_back(copy);
          setRole(ptrs, counts, i ? Role::V0 : Role::K0,
                  probe(copy, i ? "v" : "k", stream));
        }
      }
    }
  }

  /// The row and head strides of q and o that are not contiguous.
  static RowStrides rowStrides(const TensorArg &q, const TensorArg &o) {
    RowStrides r;
    if (!q.contiguous())
      r.set(Role::Q, q.strides[0], q.strides[1]);
    if (!o.contiguous())
      r.set(Role::O, o.strides[0], o.strides[1]);
    return r;
  }

  /// A contiguous copy of a strided tensor (torch), counted in
  /// copy_fallbacks.
  py::object contiguousCopy(py::handle x, const TensorArg &t,
                            const char *name) {
    if (!t.torch)
      throw py::value_error(std::string("a strided ") + name +
                            " needs torch here: this plan's kernels read it "
                            "as a contiguous buffer");
    ++copyFallbacks_;
    return x.attr("contiguous")();
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
    RowStrides strides;
    try {
      // State inputs come only through run(): its Python kernel passes
      // them.
      if (!planned_ || sig_.sharedSlot || !program_.stateInputs().empty())
        return 1;
      Checker ch{sig_, program_.numRows(), program_.rowCapacity(), maxPageId_,
                 pagedSlot0_};
      const TensorArg tq = fromBridge(c.q), to = fromBridge(c.out);
      ch.checkQ(tq);
      TensorArg pool;
      if (c.has_v && pagedSlot0_ && !sig_.config.splitHeadDims() &&
          ch.poolOfPair(fromBridge(c.kv), fromBridge(c.v), pool)) {
        if (!pool.contiguous())
          return 1; // run() binds its page stride
        ch.bindPool(pool, 0, ptrs, counts);
      } else if (c.has_v) {
        const TensorArg k = fromBridge(c.kv), v = fromBridge(c.v);
        if (!k.contiguous() || !v.contiguous())
          return 1; // run() binds their strides or copies them
        ch.bindPair(k, v, 0, ptrs, counts);
        variant = 1;
      } else {
        pool = fromBridge(c.kv);
        if (!pool.contiguous())
          return 1; // run() binds its page stride
        ch.bindPool(pool, 0, ptrs, counts);
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
      strides = rowStrides(tq, to);
      for (Role role : {Role::Q, Role::O})
        if (strides.strided(role) && !program_.takesStrides(variant, role))
          return 1; // run() copies
    } catch (const std::exception &) {
      return 1;
    }
    launch(variant, ptrs, counts, static_cast<int64_t>(c.stream), 1.f, 1.f,
           strides);
    return 0;
  }

  int64_t numRows() const { return program_.numRows(); }
  int64_t copyFallbacks() const { return copyFallbacks_; }
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
                       asStream(last_.stream), last_.kScale, last_.vScale,
                       last_.strides));
  }

private:
  /// Binds the state inputs `inputs` ({name: tensor}); that every input
  /// the plan takes is given is the runtime's check (Program::run).
  void bindStateInputs(const py::dict &inputs, const TensorArg &tq,
                       int64_t stream, std::array<uint64_t, kNumRoles> &ptrs,
                       std::array<int64_t, kNumRoles> &counts,
                       std::vector<py::object> &alive) {
    for (auto [key, value] : inputs) {
      const std::string name = py::str(key);
      if (value.is_none())
        continue;
      const Role role = program_.stateInputRole(name);
      if (role == Role::Count)
        throw py::value_error(name +
                              " given, but this plan's kernels take none: "
                              "plan with " +
                              name);
      TensorArg ts = probe(value, name.c_str(), stream);
      alive.push_back(ts.keepAlive);
      if (ts.dtype != ElemType::F32 || ts.ndim != 1 ||
          ts.shape[0] != sig_.config.numQoHeads || !ts.contiguous())
        throw py::value_error(
            name +
            " must be a contiguous float32 tensor of [num_qo_heads] = [" +
            std::to_string(sig_.config.numQoHeads) + "], got " +
            ts.shapeString());
      if (ts.device != tq.device)
        throw py::value_error(name + " must be on q's device (" +
                              tq.deviceString() + "), got " +
                              ts.deviceString());
      setRole(ptrs, counts, role, ts);
    }
  }

  static void setRole(std::array<uint64_t, kNumRoles> &ptrs,
                      std::array<int64_t, kNumRoles> &counts, Role role,
                      const TensorArg &a) {
    ptrs[static_cast<size_t>(role)] = a.ptr;
    // A view's memref size is what it spans (q and o may be strided).
    counts[static_cast<size_t>(role)] =
        a.contiguous() ? a.numel() : spannedElements(a);
  }

  /// Launches the prepared `variant` on the bound addresses (and remembers
  /// the call for relaunch()).
  void launch(int variant, const std::array<uint64_t, kNumRoles> &ptrs,
              const std::array<int64_t, kNumRoles> &counts, int64_t stream,
              float kScale, float vScale, const RowStrides &strides = {}) {
    check(program_.run(variant, ptrs, counts, asStream(stream), kScale, vScale,
                       strides));
    last_ = {variant, ptrs, counts, stream, kScale, vScale, strides};
  }

  std::shared_ptr<Device> device_;
  Program program_;
  CascadeRunner runner_{};
  Signature sig_;
  bool planned_ = false;
  std::array<int64_t, 2> maxPageId_{-1, -1}; ///< per KV slot
  bool pagedSlot0_ = true;                   ///< Checker::pagedSlot0
  struct LastCall {
    int variant = 0;
    std::array<uint64_t, kNumRoles> ptrs{};
    std::array<int64_t, kNumRoles> counts{};
    int64_t stream = 0;
    float kScale = 1.f, vScale = 1.f;
    RowStrides strides;
    bool valid = false;
    LastCall() = default;
    LastCall(int v, const std::array<uint64_t, kNumRoles> &p,
             const std::array<int64_t, kNumRoles> &c, int64_t s, float ks,
             float vs, const RowStrides &st)
        : variant(v), ptrs(p), counts(c), stream(s), kScale(ks), vScale(vs),
          strides(st), valid(true) {}
  } last_;
  std::vector<I32Array> arrays_;
  /// run()s that copied a strided q or out (see run()).
  int64_t copyFallbacks_ = 0;
  py::object resolver_ = py::none(), framework_ = py::none();
};

} // namespace

void bindProgram(py::module_ &m) {
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
           py::arg("k_scale") = py::none(), py::arg("v_scale") = py::none(),
           py::arg("state_inputs") = py::none())
      .def_property_readonly("num_rows", &ProgramHandle::numRows)
      .def_property_readonly(
          "copy_fallbacks",
          [](const ProgramHandle &h) { return h.copyFallbacks(); },
          "run()s that copied a strided q or out because a kernel of the "
          "plan reads it as a contiguous buffer (0 on the kernels built "
          "today: every attention and split-merge kernel takes strides).")
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
