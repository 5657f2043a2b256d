//===- PlanJson.cpp - Batch descriptions and plans as JSON ----------------===//

#include "cascade/Runtime/PlanJson.h"

#include "JsonSupport.h"

#include "cascade/Contract/BundleContract.h"

#include <cmath>
#include <cstring>
#include <limits>

namespace cascade::runtime {

using json::Json;
namespace ck = contract::key;
namespace pk = contract::plan;

namespace {

Status schemaError(const std::string &message) {
  return Status(ErrorCode::Schema, message);
}

Status getInt(const Json &obj, const char *key, bool required, int64_t &out) {
  const Json *v = json::find(obj, key);
  if (!v) {
    if (required)
      return schemaError(std::string("missing required key \"") + key + "\"");
    return Status::success();
  }
  if (!json::getInt64(*v, out))
    return schemaError(
        std::string("key \"") + key + "\" must be an int64 integer, got " +
        (v->is_number_integer() ? json::formatScalar(*v) : json::kindName(*v)));
  return Status::success();
}

Status getBool(const Json &obj, const char *key, bool &out) {
  const Json *v = json::find(obj, key);
  if (!v)
    return Status::success();
  if (!v->is_boolean())
    return schemaError(std::string("key \"") + key +
                       "\" must be true or false, got " + json::kindName(*v));
  out = v->get<bool>();
  return Status::success();
}

Status getInt32Array(const Json &obj, const char *key, bool &present,
                     std::vector<int32_t> &out) {
  const Json *v = json::find(obj, key);
  present = v != nullptr;
  if (!v)
    return Status::success();
  if (!v->is_array())
    return schemaError(std::string("key \"") + key +
                       "\" must be an array of integers, got " +
                       json::kindName(*v));
  out.clear();
  out.reserve(v->size());
  for (size_t i = 0; i < v->size(); ++i) {
    const Json &e = (*v)[i];
    int64_t x = 0;
    if (!json::getInt64(e, x) || x < std::numeric_limits<int32_t>::min() ||
        x > std::numeric_limits<int32_t>::max())
      return schemaError(
          std::string(key) + "[" + std::to_string(i) +
          "] must be an int32 integer, got " +
          (e.is_number_integer() ? json::formatScalar(e) : json::kindName(e)));
    out.push_back(static_cast<int32_t>(x));
  }
  return Status::success();
}

Status getDType(const Json &obj, const char *key, DType &out) {
  const Json *v = json::find(obj, key);
  if (!v)
    return Status::success();
  if (!v->is_string() || !parseDType(v->get<std::string>(), out)) {
    std::string names;
    for (contract::DType t : contract::kAllDTypes)
      names +=
          std::string(names.empty() ? "" : ", ") + "\"" + dtypeName(t) + "\"";
    return schemaError(std::string("key \"") + key + "\" must be one of " +
                       names);
  }
  return Status::success();
}

Status getMode(const Json &obj, bool required, bool &present, PlanMode &out) {
  const Json *v = json::find(obj, "mode");
  present = v != nullptr;
  if (!v) {
    if (required)
      return schemaError("missing required key \"mode\"");
    return Status::success();
  }
  if (v->is_string() && v->get_ref<const std::string &>() == "decode")
    out = PlanMode::Decode;
  else if (v->is_string() && v->get_ref<const std::string &>() == "prefill")
    out = PlanMode::Prefill;
  else
    return schemaError("key \"mode\" must be \"decode\" or \"prefill\"");
  return Status::success();
}

/// Checks that every key of `obj` is in `allowed` or `alsoAllowed` (both
/// null-terminated; `alsoAllowed` may be null).
Status checkKeys(const Json &obj, const char *const *allowed, const char *where,
                 const char *const *alsoAllowed = nullptr) {
  for (const auto &m : obj.items()) {
    bool known = false;
    for (const char *const *k = allowed; *k; ++k)
      known |= m.key() == *k;
    for (const char *const *k = alsoAllowed; k && *k; ++k)
      known |= m.key() == *k;
    if (!known)
      return schemaError("unknown key " + json::quote(m.key()) + " in " +
                         where);
  }
  return Status::success();
}

const char *const kLevelKeys[] = {
    "mode",         pk::kQoIndptr,   pk::kKvIndptr,  pk::kKvLastPageLen,
    pk::kKvIndices, ck::kQoTileSize, "max_num_rows", nullptr};

const char *const kTopKeys[] = {
    "mode",          pk::kQoIndptr,  pk::kKvIndptr, pk::kKvLastPageLen,
    pk::kKvIndices,  "num_pages",    ck::kPageSize, ck::kNumQoHeads,
    ck::kNumKvHeads, ck::kHeadDim,   "num_sms",     "occupancy",
    "cuda_graph",    ck::kQDType,    ck::kKvDType,  ck::kODType,
    ck::kQoTileSize, "max_num_rows", "levels",      ck::kCausal,
    "auto_cascade",  ck::kHeadDimVo, nullptr};

/// Plan options (top level only: shared by every level).
const char *const kOptionKeys[] = {"fixed_split_pages", "disable_split_kv",
                                   nullptr};

const char *const kAutoKeys[] = {"max_levels",
                                 "graph_group_capacity",
                                 "shared_qo_tile_size",
                                 "shared_occupancy",
                                 "level_overhead_us",
                                 "group_overhead_us",
                                 "bandwidth_bytes_per_us",
                                 "level_row_bytes",
                                 "l2_hidden_fraction",
                                 nullptr};

Status getDouble(const Json &obj, const char *key, double &out) {
  const Json *v = json::find(obj, key);
  if (!v)
    return Status::success();
  if (!v->is_number())
    return schemaError(std::string("key \"") + key +
                       "\" must be a number, got " + json::kindName(*v));
  out = v->get<double>();
  return Status::success();
}

/// `"auto_cascade"`: true/false or an object of AutoCascadeOptions.
Status parseAutoCascade(const Json &root, BatchDescription &d) {
  const Json *v = json::find(root, "auto_cascade");
  if (!v)
    return Status::success();
  if (v->is_boolean()) {
    d.autoCascade = v->get<bool>();
    return Status::success();
  }
  if (!v->is_object())
    return schemaError(std::string("key \"auto_cascade\" must be true, "
                                   "false or an object of options, got ") +
                       json::kindName(*v));
  CASCADE_RETURN_IF_ERROR(checkKeys(*v, kAutoKeys, "\"auto_cascade\""));
  AutoCascadeOptions &o = d.autoOptions;
  CASCADE_RETURN_IF_ERROR(getInt(*v, "max_levels", false, o.max_levels));
  CASCADE_RETURN_IF_ERROR(
      getInt(*v, "graph_group_capacity", false, o.graph_group_capacity));
  CASCADE_RETURN_IF_ERROR(
      getInt(*v, "shared_qo_tile_size", false, o.shared_qo_tile_size));
  CASCADE_RETURN_IF_ERROR(
      getInt(*v, "shared_occupancy", false, o.shared_occupancy));
  CASCADE_RETURN_IF_ERROR(
      getDouble(*v, "level_overhead_us", o.level_overhead_us));
  CASCADE_RETURN_IF_ERROR(
      getDouble(*v, "group_overhead_us", o.group_overhead_us));
  CASCADE_RETURN_IF_ERROR(
      getDouble(*v, "bandwidth_bytes_per_us", o.bandwidth_bytes_per_us));
  CASCADE_RETURN_IF_ERROR(getDouble(*v, "level_row_bytes", o.level_row_bytes));
  CASCADE_RETURN_IF_ERROR(
      getDouble(*v, "l2_hidden_fraction", o.l2_hidden_fraction));
  d.autoCascade = true;
  return Status::success();
}

Status parseLevel(const Json &obj, PlanMode defaultMode, bool topLevel,
                  BatchDescription::Level &level) {
  bool hasMode = false;
  PlanMode mode = defaultMode;
  if (!topLevel)
    CASCADE_RETURN_IF_ERROR(getMode(obj, false, hasMode, mode));
  bool present = false;
  CASCADE_RETURN_IF_ERROR(
      getInt32Array(obj, pk::kQoIndptr, level.hasQoIndptr, level.qoIndptr));
  CASCADE_RETURN_IF_ERROR(
      getInt32Array(obj, pk::kKvIndptr, present, level.kvIndptr));
  if (!present)
    return schemaError(std::string("missing required key \"") + pk::kKvIndptr +
                       "\"");
  CASCADE_RETURN_IF_ERROR(
      getInt32Array(obj, pk::kKvLastPageLen, present, level.kvLastPageLen));
  if (!present)
    return schemaError(std::string("missing required key \"") +
                       pk::kKvLastPageLen + "\"");
  CASCADE_RETURN_IF_ERROR(
      getInt32Array(obj, pk::kKvIndices, level.hasKvIndices, level.kvIndices));
  CASCADE_RETURN_IF_ERROR(
      getInt(obj, ck::kQoTileSize, false, level.qoTileSize));
  CASCADE_RETURN_IF_ERROR(getInt(obj, "max_num_rows", false, level.maxNumRows));
  // In a cascade, a level without its own mode is decode only if it has one
  // query per request; a shared-prefix level ([0, B]) is a prefill.
  if (!topLevel && !hasMode && defaultMode == PlanMode::Decode &&
      level.hasQoIndptr) {
    for (size_t i = 0; i < level.qoIndptr.size(); ++i)
      if (level.qoIndptr[i] != static_cast<int32_t>(i)) {
        mode = PlanMode::Prefill;
        break;
      }
  }
  level.mode = mode;
  return Status::success();
}

} // namespace

std::vector<PlanInputs> BatchDescription::inputs() const {
  std::vector<PlanInputs> result;
  for (const Level &l : levels) {
    PlanInputs in = common;
    in.mode = l.mode;
    if (l.hasQoIndptr)
      in.qo_indptr = ArrayView<int32_t>(l.qoIndptr);
    in.kv_indptr = ArrayView<int32_t>(l.kvIndptr);
    in.kv_last_page_len = ArrayView<int32_t>(l.kvLastPageLen);
    if (l.hasKvIndices)
      in.kv_indices = ArrayView<int32_t>(l.kvIndices);
    if (l.qoTileSize)
      in.qo_tile_size = l.qoTileSize;
    if (l.maxNumRows >= 0)
      in.max_num_rows = l.maxNumRows;
    result.push_back(in);
  }
  return result;
}

/// The batch description in `root` (a parsed document).
static Status parseDescription(const Json &root, BatchDescription &out) {
  if (!root.is_object())
    return schemaError(std::string("the batch description must be a JSON "
                                   "object, got ") +
                       json::kindName(root));
  CASCADE_RETURN_IF_ERROR(
      checkKeys(root, kTopKeys, "the batch description", kOptionKeys));
  BatchDescription d;
  PlanInputs &c = d.common;
  bool hasMode = false;
  CASCADE_RETURN_IF_ERROR(getMode(root, true, hasMode, c.mode));
  CASCADE_RETURN_IF_ERROR(getInt(root, ck::kPageSize, true, c.page_size));
  CASCADE_RETURN_IF_ERROR(getInt(root, ck::kNumQoHeads, true, c.num_qo_heads));
  CASCADE_RETURN_IF_ERROR(getInt(root, ck::kNumKvHeads, true, c.num_kv_heads));
  CASCADE_RETURN_IF_ERROR(getInt(root, ck::kHeadDim, true, c.head_dim));
  CASCADE_RETURN_IF_ERROR(getInt(root, ck::kHeadDimVo, false, c.head_dim_vo));
  CASCADE_RETURN_IF_ERROR(getInt(root, "num_sms", true, c.num_sms));
  CASCADE_RETURN_IF_ERROR(getInt(root, "occupancy", false, c.occupancy));
  CASCADE_RETURN_IF_ERROR(getInt(root, "num_pages", false, c.num_pages));
  CASCADE_RETURN_IF_ERROR(getInt(root, ck::kQoTileSize, false, c.qo_tile_size));
  CASCADE_RETURN_IF_ERROR(getInt(root, "max_num_rows", false, c.max_num_rows));
  CASCADE_RETURN_IF_ERROR(getBool(root, "cuda_graph", c.cuda_graph));
  CASCADE_RETURN_IF_ERROR(
      getInt(root, "fixed_split_pages", false, c.fixed_split_pages));
  CASCADE_RETURN_IF_ERROR(
      getBool(root, "disable_split_kv", c.disable_split_kv));
  CASCADE_RETURN_IF_ERROR(getBool(root, ck::kCausal, d.causal));
  CASCADE_RETURN_IF_ERROR(getDType(root, ck::kQDType, c.q_dtype));
  CASCADE_RETURN_IF_ERROR(getDType(root, ck::kKvDType, c.kv_dtype));
  CASCADE_RETURN_IF_ERROR(getDType(root, ck::kODType, c.o_dtype));
  CASCADE_RETURN_IF_ERROR(parseAutoCascade(root, d));
  d.autoOptions.causal = d.causal;

  const Json *levels = json::find(root, "levels");
  if (levels && d.autoCascade)
    return schemaError("key \"auto_cascade\" finds the levels itself: give "
                       "one plain batch, not \"levels\"");
  if (levels) {
    static const char *const arrays[] = {pk::kQoIndptr, pk::kKvIndptr,
                                         pk::kKvLastPageLen, pk::kKvIndices};
    for (const char *a : arrays)
      if (json::find(root, a))
        return schemaError(std::string("key \"") + a +
                           "\" belongs inside \"levels\" when \"levels\" is "
                           "given");
    if (!levels->is_array() || levels->empty())
      return schemaError("key \"levels\" must be a non-empty array of "
                         "objects");
    d.isCascade = true;
    for (size_t i = 0; i < levels->size(); ++i) {
      const Json &lv = (*levels)[i];
      std::string where = "levels[" + std::to_string(i) + "]";
      if (!lv.is_object())
        return schemaError(where + " must be an object, got " +
                           json::kindName(lv));
      CASCADE_RETURN_IF_ERROR(checkKeys(lv, kLevelKeys, where.c_str()));
      BatchDescription::Level level;
      Status s = parseLevel(lv, c.mode, false, level);
      if (!s.ok())
        return Status(s.code(), where + ": " + s.message());
      d.levels.push_back(std::move(level));
    }
  } else {
    BatchDescription::Level level;
    CASCADE_RETURN_IF_ERROR(parseLevel(root, c.mode, true, level));
    d.levels.push_back(std::move(level));
  }
  out = std::move(d);
  return Status::success();
}

Status parseBatchDescription(std::string_view text, BatchDescription &out) {
  Json root;
  CASCADE_RETURN_IF_ERROR(json::parse(text, root));
  return parseDescription(root, out);
}

static Json layoutJson(const WorkspaceLayout &layout, int64_t base) {
  Json sections = Json::array();
  for (const WorkspaceSection &s : layout.sections)
    sections.push_back({{"name", s.name},
                        {"dtype", s.dtype},
                        {"offset", s.offset},
                        {"bytes", s.bytes},
                        {"count", s.count}});
  return {{"alignment", layout.alignment},
          {"base", base},
          {"bytes", layout.bytes},
          {"sections", std::move(sections)}};
}

static Json planJson(const Plan &p, int64_t intBase, int64_t floatBase) {
  Json j = Json::object();
  j["mode"] = p.mode == PlanMode::Decode ? "decode" : "prefill";
  j[pk::kSplitKv] = p.split_kv;
  j["cuda_graph"] = p.cuda_graph;
  for (const char *name : pk::kIntScalars) {
    int64_t v = 0;
    p.scalar(name, v);
    j[name] = v;
  }
  j[pk::kRequestIndices] = p.request_indices;
  j[pk::kKvTileIndices] = p.kv_tile_indices;
  j[pk::kQoTileIndices] = p.qo_tile_indices;
  j[pk::kOIndptr] = p.o_indptr;
  j[pk::kMergeIndptr] = p.merge_indptr;
  j[pk::kBlockValidMask] = p.block_valid_mask;
  j["int_workspace"] = layoutJson(p.int_workspace, intBase);
  j["float_workspace"] = layoutJson(p.float_workspace, floatBase);
  return j;
}

std::string planToJson(const Plan &plan) {
  return json::format(planJson(plan, 0, 0)) + "\n";
}

static Json cascadeJson(const CascadePlan &plan, bool causal) {
  const int64_t n = static_cast<int64_t>(plan.levels.size());
  Json levels = Json::array(), order = Json::array(), states = Json::array();
  for (int64_t l = 0; l < n; ++l)
    levels.push_back(
        planJson(plan.levels[l], plan.int_base[l], plan.float_base[l]));
  for (int64_t l = 0; l < n; ++l) {
    if (l == plan.base_level)
      continue;
    order.push_back(l);
    states.push_back({{"level", l},
                      {"v_offset", plan.level_v_offset[l]},
                      {"v_bytes", plan.level_v_bytes},
                      {ck::kVDType, dtypeName(plan.levels[l].o_dtype)},
                      {"s_offset", plan.level_s_offset[l]},
                      {"s_bytes", plan.level_s_bytes}});
  }
  Json j = Json::object();
  j["mode"] = "cascade";
  j["num_levels"] = n;
  j["num_rows"] = plan.num_rows;
  j["int_workspace_bytes"] = plan.int_bytes;
  j["float_workspace_bytes"] = plan.float_bytes;
  j["levels"] = std::move(levels);
  j["merge"] = {{"op", contract::op::kMergeStateInPlace},
                {"output_level", plan.base_level},
                {"order", std::move(order)},
                {"causal_level", causal ? n - 1 : int64_t(-1)},
                {"level_states", std::move(states)}};
  return j;
}

std::string cascadePlanToJson(const CascadePlan &plan, bool causal) {
  return json::format(cascadeJson(plan, causal)) + "\n";
}

std::string autoCascadeToJson(const AutoCascade &ac, bool causal) {
  Json j = cascadeJson(ac.plan, causal);
  Json &levels = j["levels"];
  for (size_t l = 0; l < ac.levels.size(); ++l) {
    const AutoCascadeLevel &lv = ac.levels[l];
    Json in = Json::object();
    in["mode"] = lv.mode == PlanMode::Decode ? "decode" : "prefill";
    auto vec = [](ArrayView<int32_t> a) {
      return std::vector<int32_t>(a.data(), a.data() + a.size());
    };
    if (lv.qo_indptr.present())
      in[pk::kQoIndptr] = vec(lv.qo_indptr);
    in[pk::kKvIndptr] = vec(lv.kv_indptr);
    in[pk::kKvIndices] = vec(lv.kv_indices);
    in[pk::kKvLastPageLen] = vec(lv.kv_last_page_len);
    in["num_page_groups"] = lv.num_page_groups;
    levels[l]["inputs"] = std::move(in);
  }
  const AutoCascadeStats &st = ac.stats;
  j["auto_cascade"] = {{"num_levels", st.num_levels},
                       {"shared_levels", st.shared_levels},
                       {"candidate_groups", st.candidate_groups},
                       {"shared_groups", st.shared_groups},
                       {"pages_in", st.pages_in},
                       {"pages_read", st.pages_read},
                       {"pages_saved", st.pages_saved},
                       {"saved_us", std::round(st.saved_us * 1e3) / 1e3},
                       {"overhead_us", std::round(st.overhead_us * 1e3) / 1e3}};
  return json::format(j) + "\n";
}

} // namespace cascade::runtime
