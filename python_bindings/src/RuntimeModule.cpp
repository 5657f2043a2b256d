//===- RuntimeModule.cpp - cascade_mlir._runtime --------------------------===//
//
// Python bindings of the MLIR-free runtime: plans (decode, prefill and
// multi-level cascades) and the float64 CPU reference of every op. Arrays
// cross as numpy arrays; runtime errors become ValueError with the runtime's
// message.
//
//===----------------------------------------------------------------------===//

#include "ConfigDict.h"
#include "GpuModule.h"

#include "cascade/Runtime/AutoCascade.h"
#include "cascade/Runtime/Plan.h"
#include "cascade/Runtime/Reference.h"

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <optional>
#include <string>

namespace py = pybind11;
using namespace cascade::runtime;

namespace {

using I32Array =
    py::array_t<int32_t, py::array::c_style | py::array::forcecast>;
using F32Array = py::array_t<float, py::array::c_style | py::array::forcecast>;
using F64Array = py::array_t<double, py::array::c_style | py::array::forcecast>;

void check(const Status &status) {
  if (!status.ok())
    throw py::value_error(std::string(errorCodeName(status.code())) + ": " +
                          status.message());
}

template <typename T> std::vector<T> toVector(const py::array_t<T> &a) {
  if (a.ndim() != 1)
    throw py::value_error("index arrays must be 1-D");
  return std::vector<T>(a.data(), a.data() + a.size());
}

template <typename T> py::array_t<T> toNumpy(const std::vector<T> &v) {
  py::array_t<T> out(static_cast<py::ssize_t>(v.size()));
  std::copy(v.begin(), v.end(), out.mutable_data());
  return out;
}

/// Keeps the host arrays alive while a PlanInputs views them.
struct LevelArrays {
  std::vector<int32_t> qoIndptr, kvIndptr, kvLastPageLen, kvIndices;
};

PlanInputs makeInputs(const LevelArrays &arrays, bool hasQo, bool hasIndices,
                      const std::string &mode, const py::dict &opts) {
  PlanInputs in;
  if (mode == "decode")
    in.mode = PlanMode::Decode;
  else if (mode == "prefill")
    in.mode = PlanMode::Prefill;
  else
    throw py::value_error("mode must be 'decode' or 'prefill', got '" + mode +
                          "'");
  if (hasQo)
    in.qo_indptr = ArrayView<int32_t>(arrays.qoIndptr);
  in.kv_indptr = ArrayView<int32_t>(arrays.kvIndptr);
  in.kv_last_page_len = ArrayView<int32_t>(arrays.kvLastPageLen);
  if (hasIndices)
    in.kv_indices = ArrayView<int32_t>(arrays.kvIndices);
  auto get = [&](const char *key, int64_t dflt) {
    return opts.contains(key) ? opts[key].cast<int64_t>() : dflt;
  };
  in.num_pages = get("num_pages", -1);
  in.num_qo_heads = get("num_qo_heads", 0);
  in.num_kv_heads = get("num_kv_heads", 0);
  in.head_dim = get("head_dim", 0);
  // v's and the output's head_dim where it differs (absent or 0: head_dim).
  in.head_dim_vo = get("head_dim_vo", 0);
  in.page_size = get("page_size", 0);
  in.num_sms = get("num_sms", 0);
  in.occupancy = get("occupancy", 1);
  in.cuda_graph = get("cuda_graph", 0) != 0;
  in.qo_tile_size = get("qo_tile_size", 0);
  in.max_num_rows = get("max_num_rows", -1);
  in.fixed_split_pages = get("fixed_split_pages", 0);
  in.disable_split_kv = opts.contains("disable_split_kv") &&
                        opts["disable_split_kv"].cast<bool>();
  auto dtype = [&](const char *key, DType &out) {
    if (!opts.contains(key) || opts[key].is_none())
      return;
    const std::string name = py::str(opts[key]);
    if (!parseDType(name, out))
      throw py::value_error(std::string(key) +
                            " must be f16, bf16 or f32, "
                            "got '" +
                            name + "'");
  };
  dtype(cascade::contract::key::kQDType, in.q_dtype);
  in.kv_dtype = in.o_dtype = in.q_dtype;
  dtype(cascade::contract::key::kKvDType, in.kv_dtype);
  dtype(cascade::contract::key::kODType, in.o_dtype);
  return in;
}

py::dict planToDict(const Plan &p) {
  py::dict d;
  d["mode"] = p.mode == PlanMode::Decode ? "decode" : "prefill";
  d["batch_size"] = p.batch_size;
  d["num_rows"] = p.num_rows;
  d["split_kv"] = p.split_kv;
  d["cuda_graph"] = p.cuda_graph;
  d["padded_batch_size"] = p.padded_batch_size;
  d["num_work_items"] = p.num_work_items;
  d["kv_chunk_size"] = p.kv_chunk_size;
  d["kv_chunk_size_pages"] = p.kv_chunk_size_pages;
  d["qo_tile_size"] = p.qo_tile_size;
  d["num_partial_rows"] = p.num_partial_rows;
  d["request_indices"] = toNumpy(p.request_indices);
  d["kv_tile_indices"] = toNumpy(p.kv_tile_indices);
  d["qo_tile_indices"] = toNumpy(p.qo_tile_indices);
  d["o_indptr"] = toNumpy(p.o_indptr);
  d["merge_indptr"] = toNumpy(p.merge_indptr);
  d["block_valid_mask"] = toNumpy(p.block_valid_mask);
  d["int_workspace_bytes"] = p.int_workspace.bytes;
  d["float_workspace_bytes"] = p.float_workspace.bytes;
  return d;
}

/// plan(mode, kv_indptr, kv_last_page_len, qo_indptr=None, kv_indices=None,
///      **options) -> dict
py::dict plan(const std::string &mode, const I32Array &kvIndptr,
              const I32Array &kvLastPageLen, std::optional<I32Array> qoIndptr,
              std::optional<I32Array> kvIndices, const py::kwargs &opts) {
  LevelArrays arrays;
  arrays.kvIndptr = toVector<int32_t>(kvIndptr);
  arrays.kvLastPageLen = toVector<int32_t>(kvLastPageLen);
  if (qoIndptr)
    arrays.qoIndptr = toVector<int32_t>(*qoIndptr);
  if (kvIndices)
    arrays.kvIndices = toVector<int32_t>(*kvIndices);
  PlanInputs in = makeInputs(arrays, qoIndptr.has_value(),
                             kvIndices.has_value(), mode, opts);
  Plan out;
  check(makePlan(in, out));
  return planToDict(out);
}

/// The option keys of auto_cascade() that are AutoCascadeOptions; the other
/// keyword options are makeInputs's.
const char *const kAutoOptionKeys[] = {"causal",
                                       "max_levels",
                                       "graph_group_capacity",
                                       "shared_qo_tile_size",
                                       "shared_occupancy",
                                       "bandwidth_bytes_per_us",
                                       "level_overhead_us",
                                       "group_overhead_us",
                                       "level_row_bytes",
                                       "l2_hidden_fraction"};

/// auto_cascade(mode, kv_indptr, kv_last_page_len, qo_indptr=None,
///              kv_indices=None, **options) -> dict
/// makeAutoCascadePlan over one plain batch: the levels (index arrays, the
/// level's plan) and the statistics. Options: AutoCascadeOptions's fields
/// and plan()'s keyword options.
py::dict autoCascade(const std::string &mode, const I32Array &kvIndptr,
                     const I32Array &kvLastPageLen,
                     std::optional<I32Array> qoIndptr,
                     std::optional<I32Array> kvIndices,
                     const py::kwargs &opts) {
  static const char *const kPlanKeys[] = {
      "num_pages",   "num_qo_heads", "num_kv_heads",      "head_dim",
      "head_dim_vo", "page_size",    "num_sms",           "occupancy",
      "cuda_graph",  "qo_tile_size", "max_num_rows",      "q_dtype",
      "kv_dtype",    "o_dtype",      "fixed_split_pages", "disable_split_kv"};
  for (auto item : opts) {
    const std::string key = py::str(item.first);
    bool known = false;
    for (const char *k : kAutoOptionKeys)
      known = known || key == k;
    for (const char *k : kPlanKeys)
      known = known || key == k;
    if (!known)
      throw py::type_error("auto_cascade() got an unexpected keyword "
                           "argument '" +
                           key + "'");
  }
  LevelArrays arrays;
  arrays.kvIndptr = toVector<int32_t>(kvIndptr);
  arrays.kvLastPageLen = toVector<int32_t>(kvLastPageLen);
  if (qoIndptr)
    arrays.qoIndptr = toVector<int32_t>(*qoIndptr);
  if (kvIndices)
    arrays.kvIndices = toVector<int32_t>(*kvIndices);
  PlanInputs in = makeInputs(arrays, qoIndptr.has_value(),
                             kvIndices.has_value(), mode, opts);
  if (!opts.contains("num_sms")) // the levels' plans are informative here
    in.num_sms = 1;
  AutoCascadeOptions o;
  auto has = [&](const char *key) {
    return opts.contains(key) && !opts[key].is_none();
  };
  auto set = [&](const char *key, auto &field) {
    if (has(key))
      field = opts[key].cast<std::decay_t<decltype(field)>>();
  };
  set("causal", o.causal);
  set("max_levels", o.max_levels);
  set("graph_group_capacity", o.graph_group_capacity);
  set("shared_qo_tile_size", o.shared_qo_tile_size);
  set("shared_occupancy", o.shared_occupancy);
  set("bandwidth_bytes_per_us", o.bandwidth_bytes_per_us);
  set("level_overhead_us", o.level_overhead_us);
  set("group_overhead_us", o.group_overhead_us);
  set("level_row_bytes", o.level_row_bytes);
  set("l2_hidden_fraction", o.l2_hidden_fraction);
  AutoCascade res;
  check(makeAutoCascadePlan(in, o, res));
  // Copies out of the result (whose views may point into `arrays`).
  auto copy = [](ArrayView<int32_t> v) -> py::object {
    if (!v.present())
      return py::none();
    py::array_t<int32_t> out(static_cast<py::ssize_t>(v.size()));
    std::copy(v.data(), v.data() + v.size(), out.mutable_data());
    return std::move(out);
  };
  py::list levels;
  for (size_t l = 0; l < res.levels.size(); ++l) {
    const AutoCascadeLevel &lv = res.levels[l];
    py::dict d;
    d["mode"] = lv.mode == PlanMode::Decode ? "decode" : "prefill";
    d["qo_indptr"] = copy(lv.qo_indptr);
    d["kv_indptr"] = copy(lv.kv_indptr);
    d["kv_indices"] = copy(lv.kv_indices);
    d["kv_last_page_len"] = copy(lv.kv_last_page_len);
    d["num_page_groups"] = lv.num_page_groups;
    d["plan"] = planToDict(res.plan.levels[l]);
    levels.append(d);
  }
  const AutoCascadeStats &st = res.stats;
  py::dict stats;
  stats["num_levels"] = st.num_levels;
  stats["shared_levels"] = st.shared_levels;
  stats["candidate_groups"] = st.candidate_groups;
  stats["shared_groups"] = st.shared_groups;
  stats["pages_in"] = st.pages_in;
  stats["pages_read"] = st.pages_read;
  stats["pages_saved"] = st.pages_saved;
  stats["saved_us"] = st.saved_us;
  stats["overhead_us"] = st.overhead_us;
  py::dict result;
  result["levels"] = levels;
  result["stats"] = stats;
  result["int_workspace_bytes"] = res.plan.int_bytes;
  result["float_workspace_bytes"] = res.plan.float_bytes;
  return result;
}

//===----------------------------------------------------------------------===//
// Reference
//===----------------------------------------------------------------------===//

void requireShape(const py::array &a, std::initializer_list<py::ssize_t> shape,
                  const char *name) {
  bool ok = a.ndim() == static_cast<py::ssize_t>(shape.size());
  size_t i = 0;
  for (py::ssize_t d : shape)
    ok = ok && a.shape(i++) == d;
  if (!ok)
    throw py::value_error(std::string(name) + " has the wrong shape");
}

py::tuple refMergeState(const F64Array &va, const F64Array &sa,
                        const F64Array &vb, const F64Array &sb) {
  if (va.ndim() != 3)
    throw py::value_error("v_a must be [L, H, D]");
  py::ssize_t L = va.shape(0), H = va.shape(1), D = va.shape(2);
  requireShape(vb, {L, H, D}, "v_b");
  requireShape(sa, {L, H}, "s_a");
  requireShape(sb, {L, H}, "s_b");
  F64Array v({L, H, D}), s({L, H});
  ref::mergeState<double, double>(va.data(), sa.data(), vb.data(), sb.data(),
                                  v.mutable_data(), s.mutable_data(), L, H, D);
  return py::make_tuple(v, s);
}

void refMergeStateInPlace(py::array_t<double> v, py::array_t<double> s,
                          const F64Array &vo, const F64Array &so,
                          std::optional<py::array> mask) {
  if (v.ndim() != 3 || !(v.flags() & py::array::c_style) ||
      !(s.flags() & py::array::c_style))
    throw py::value_error("v must be a C-contiguous float64 [L, H, D] array");
  py::ssize_t L = v.shape(0), H = v.shape(1), D = v.shape(2);
  requireShape(s, {L, H}, "s");
  requireShape(vo, {L, H, D}, "v_other");
  requireShape(so, {L, H}, "s_other");
  const uint8_t *maskPtr = nullptr;
  int64_t maskStride = 0;
  py::array maskArr;
  if (mask) {
    maskArr = *mask;
    if (maskArr.ndim() != 1 || maskArr.shape(0) != L || maskArr.itemsize() != 1)
      throw py::value_error("mask must be a 1-D bool/uint8 array of L rows");
    maskPtr = static_cast<const uint8_t *>(maskArr.data());
    maskStride = maskArr.strides(0); // bytes == elements for 1-byte items
  }
  ref::mergeStateInPlace<double, double>(v.mutable_data(), s.mutable_data(),
                                         vo.data(), so.data(), maskPtr,
                                         maskStride, L, H, D);
}

py::tuple refMergeStates(const F64Array &v, const F64Array &s) {
  if (v.ndim() != 4)
    throw py::value_error("v must be [L, N, H, D]");
  py::ssize_t L = v.shape(0), N = v.shape(1), H = v.shape(2), D = v.shape(3);
  requireShape(s, {L, N, H}, "s");
  F64Array vo({L, H, D}), so({L, H});
  ref::mergeStates<double, double>(v.data(), s.data(), vo.mutable_data(),
                                   so.mutable_data(), L, N, H, D);
  return py::make_tuple(vo, so);
}

/// The reference's options from ref_attention's keywords: the score
/// options under their contract names (the position encoding as
/// `pos_encoding_mode`, FlashInfer's spelling), causal, k_scale, v_scale.
ref::AttentionOptions makeOptions(const py::dict &o) {
  ref::AttentionOptions opts;
  if (o.contains("causal"))
    opts.causal = o["causal"].cast<bool>();
  cascade::python::scoreOptionsFromDict(
      o, opts.score, "", [](const std::string &name) {
        return name == "pos_encoding" ? name + "_mode" : name;
      });
  // fp8 KV dequantization (docs/semantics.md): k_scale on the logits,
  // v_scale on the output.
  if (o.contains("k_scale") && !o["k_scale"].is_none())
    opts.kScale = o["k_scale"].cast<double>();
  if (o.contains("v_scale") && !o["v_scale"].is_none())
    opts.vScale = o["v_scale"].cast<double>();
  return opts;
}

/// Views a float32 page pool: one [P, 2, ...] array or a (k, v) pair.
ref::PagedKvCache makeCache(const std::vector<F32Array> &kv,
                            const std::string &layout, int64_t pageSize) {
  ref::KvLayout l;
  if (layout == "NHD")
    l = ref::KvLayout::NHD;
  else if (layout == "HND")
    l = ref::KvLayout::HND;
  else
    throw py::value_error("kv_layout must be 'NHD' or 'HND', got '" + layout +
                          "'");
  bool nhd = l == ref::KvLayout::NHD;
  if (kv.size() == 1) {
    const F32Array &pool = kv[0];
    if (pool.ndim() != 5 || pool.shape(1) != 2)
      throw py::value_error("paged_kv_cache must be [P, 2, page, Hkv, D] "
                            "(NHD) or [P, 2, Hkv, page, D] (HND)");
    int64_t page = pool.shape(nhd ? 2 : 3), heads = pool.shape(nhd ? 3 : 2);
    if (page != pageSize)
      throw py::value_error("page size of paged_kv_cache does not match");
    return ref::PagedKvCache::combined(pool.data(), pool.shape(0), page, heads,
                                       pool.shape(4), l);
  }
  if (kv.size() != 2)
    throw py::value_error("paged_kv_cache must be one tensor or a (k, v) pair");
  const F32Array &k = kv[0], &v = kv[1];
  if (k.ndim() != 4 || v.ndim() != 4)
    throw py::value_error("k and v caches must be 4-D");
  // v's head_dim may differ from k's (head_dim_vo); the rest agrees.
  for (int i = 0; i < 3; ++i)
    if (k.shape(i) != v.shape(i))
      throw py::value_error("k and v caches must have the same pages, page "
                            "size and heads (only their head_dims may "
                            "differ: head_dim and head_dim_vo)");
  int64_t page = k.shape(nhd ? 1 : 2), heads = k.shape(nhd ? 2 : 1);
  if (page != pageSize)
    throw py::value_error("page size of paged_kv_cache does not match");
  return ref::PagedKvCache::pair(k.data(), v.data(), k.shape(0), page, heads,
                                 k.shape(3), l,
                                 v.shape(3) != k.shape(3) ? v.shape(3) : 0);
}

using U8Array = py::array_t<uint8_t, py::array::c_style | py::array::forcecast>;

struct Level {
  I32Array qo, kvIndptr, kvIndices, last;
  /// FlashInfer's packed custom mask and its per-request byte offsets
  /// (both empty: none).
  U8Array customMask;
  I32Array maskIndptr;
};

/// cascade(q, kv, levels, page_size, kv_layout, **options) -> (o, lse)
/// A single level is plain paged attention.
py::tuple refCascade(const F32Array &q, const std::vector<F32Array> &kv,
                     const std::vector<Level> &levels, int64_t pageSize,
                     const std::string &layout, const py::kwargs &o) {
  if (q.ndim() != 3)
    throw py::value_error("q must be [rows, Hqo, D]");
  if (levels.empty())
    throw py::value_error("at least one level is needed");
  ref::PagedKvCache cache = makeCache(kv, layout, pageSize);
  if (cache.headDim != q.shape(2))
    throw py::value_error("head_dim of q and of the KV cache differ");
  std::vector<ref::AttentionBatch> batches;
  for (const Level &l : levels) {
    ref::AttentionBatch b;
    b.q = q.data();
    b.numQoHeads = q.shape(1);
    b.qoIndptr = toVector<int32_t>(l.qo);
    b.kvIndptr = toVector<int32_t>(l.kvIndptr);
    b.kvIndices = toVector<int32_t>(l.kvIndices);
    b.kvLastPageLen = toVector<int32_t>(l.last);
    b.kv = cache;
    b.customMask.assign(l.customMask.data(),
                        l.customMask.data() + l.customMask.size());
    b.maskIndptr = toVector<int32_t>(l.maskIndptr);
    if (b.qoIndptr.empty() || b.qoIndptr.back() != q.shape(0))
      throw py::value_error("every level's qo_indptr[-1] must equal the rows "
                            "of q");
    // Validate the batch as the reference does, before touching data.
    check(ref::validateBatch(b));
    batches.push_back(std::move(b));
  }
  // The output has v's head_dim (head_dim_vo where it differs from q's).
  F64Array out(
      {q.shape(0), q.shape(1), static_cast<py::ssize_t>(cache.vDim())}),
      lse({q.shape(0), q.shape(1)});
  ref::AttentionOptions opts = makeOptions(o);
  // The state inputs ({name: values}): float32 [num_qo_heads] each (kept
  // alive here); the reference refuses a name it does not know.
  std::vector<F32Array> inputs;
  if (o.contains("state_inputs") && !o["state_inputs"].is_none())
    for (auto [key, value] : o["state_inputs"].cast<py::dict>()) {
      if (value.is_none())
        continue;
      const std::string name = py::str(key);
      inputs.push_back(value.cast<F32Array>());
      if (inputs.back().ndim() != 1 || inputs.back().shape(0) != q.shape(1))
        throw py::value_error(name + " must be [num_qo_heads] = [" +
                              std::to_string(q.shape(1)) + "]");
      opts.stateInputs.emplace_back(name, inputs.back().data());
    }
  if (batches.size() == 1)
    check(ref::attention(batches[0], opts, out.mutable_data(),
                         lse.mutable_data()));
  else
    check(ref::cascade(batches, opts, out.mutable_data(), lse.mutable_data()));
  return py::make_tuple(out, lse);
}

} // namespace

PYBIND11_MODULE(_runtime, m) {
  m.doc() = "Cascade-MLIR runtime: plans, GPU execution and the float64 CPU "
            "reference";
  cascade::python::registerGpu(m);
  cascade::python::registerAttentionConfig(m);
  // __init__.py refuses numpy 2 under a pybind11 that predates it.
  m.attr("_pybind11_version") =
      py::make_tuple(PYBIND11_VERSION_MAJOR, PYBIND11_VERSION_MINOR);

  m.def("plan", &plan, py::arg("mode"), py::arg("kv_indptr"),
        py::arg("kv_last_page_len"), py::arg("qo_indptr") = py::none(),
        py::arg("kv_indices") = py::none(),
        "Plan one attention level (see docs/plan-schema.md). Keyword options: "
        "num_qo_heads, num_kv_heads, head_dim, head_dim_vo, page_size, "
        "num_sms, occupancy, cuda_graph, num_pages, qo_tile_size, "
        "max_num_rows.");

  m.def("auto_cascade", &autoCascade, py::arg("mode"), py::arg("kv_indptr"),
        py::arg("kv_last_page_len"), py::arg("qo_indptr") = py::none(),
        py::arg("kv_indices") = py::none(),
        "Automatic cascade of one plain batch (docs/auto-cascade.md): "
        "returns {'levels': [{mode, qo_indptr, kv_indptr, kv_indices, "
        "kv_last_page_len, num_page_groups, plan}], 'stats': {...}}. Keyword "
        "options: causal, max_levels, graph_group_capacity, "
        "shared_qo_tile_size, shared_occupancy, bandwidth_bytes_per_us, "
        "level_overhead_us, group_overhead_us, level_row_bytes, "
        "l2_hidden_fraction, and "
        "plan()'s (num_qo_heads, ..., cuda_graph, q_dtype, kv_dtype; num_sms "
        "defaults to 1).");

  py::class_<Level>(m, "Level")
      .def(py::init([](I32Array qo, I32Array kvIndptr, I32Array kvIndices,
                       I32Array last, py::object mask, py::object maskIndptr) {
             if (mask.is_none() != maskIndptr.is_none())
               throw py::value_error("custom_mask and mask_indptr go together");
             Level l{std::move(qo),   std::move(kvIndptr), std::move(kvIndices),
                     std::move(last), U8Array(0),          I32Array(0)};
             if (!mask.is_none()) {
               l.customMask = mask.cast<U8Array>();
               l.maskIndptr = maskIndptr.cast<I32Array>();
             }
             return l;
           }),
           py::arg("qo_indptr"), py::arg("kv_indptr"), py::arg("kv_indices"),
           py::arg("kv_last_page_len"), py::arg("custom_mask") = py::none(),
           py::arg("mask_indptr") = py::none(),
           "One level of ref_attention; custom_mask: FlashInfer's packed "
           "mask (uint8, little bit order), mask_indptr its byte offsets per "
           "request.");

  m.def("ref_merge_state", &refMergeState, py::arg("v_a"), py::arg("s_a"),
        py::arg("v_b"), py::arg("s_b"),
        "Reference merge of two states (base-2 LSE), float64.");
  m.def("ref_merge_state_in_place", &refMergeStateInPlace, py::arg("v"),
        py::arg("s"), py::arg("v_other"), py::arg("s_other"),
        py::arg("mask") = py::none(),
        "Reference in-place merge into float64 arrays v, s; rows where the "
        "(possibly strided) mask is 0 are untouched.");
  m.def("ref_merge_states", &refMergeStates, py::arg("v"), py::arg("s"),
        "Reference merge of N states per row: v [L, N, H, D], s [L, N, H].");
  m.def("ref_attention", &refCascade, py::arg("q"), py::arg("paged_kv_cache"),
        py::arg("levels"), py::arg("page_size"), py::arg("kv_layout") = "NHD",
        "Reference paged attention (one level) or multi-level cascade "
        "(several): returns float64 (o, lse), lse in base 2; o has v's "
        "head_dim (a (k, v) pair's v may have its own, head_dim_vo).");
}
