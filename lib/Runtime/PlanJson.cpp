//===- PlanJson.cpp - Batch descriptions and plans as JSON ----------------===//

#include "cascade/Runtime/PlanJson.h"

#include <cstring>
#include <limits>

namespace cascade::runtime {

namespace {

Status schemaError(const std::string &message) {
  return Status(ErrorCode::Schema, message);
}

Status getInt(const JsonValue &obj, const char *key, bool required,
              int64_t &out) {
  const JsonValue *v = obj.find(key);
  if (!v) {
    if (required)
      return schemaError(std::string("missing required key \"") + key + "\"");
    return Status::success();
  }
  if (!v->isInt())
    return schemaError(std::string("key \"") + key +
                       "\" must be an integer, got " + v->kindName());
  out = v->asInt();
  return Status::success();
}

Status getBool(const JsonValue &obj, const char *key, bool &out) {
  const JsonValue *v = obj.find(key);
  if (!v)
    return Status::success();
  if (!v->isBool())
    return schemaError(std::string("key \"") + key +
                       "\" must be true or false, got " + v->kindName());
  out = v->asBool();
  return Status::success();
}

Status getInt32Array(const JsonValue &obj, const char *key, bool &present,
                     std::vector<int32_t> &out) {
  const JsonValue *v = obj.find(key);
  present = v != nullptr;
  if (!v)
    return Status::success();
  if (!v->isArray())
    return schemaError(std::string("key \"") + key +
                       "\" must be an array of integers, got " + v->kindName());
  out.clear();
  out.reserve(v->elements().size());
  for (size_t i = 0; i < v->elements().size(); ++i) {
    const JsonValue &e = v->elements()[i];
    if (!e.isInt() || e.asInt() < std::numeric_limits<int32_t>::min() ||
        e.asInt() > std::numeric_limits<int32_t>::max())
      return schemaError(
          std::string(key) + "[" + std::to_string(i) +
          "] must be an int32 integer, got " +
          (e.isInt() ? std::to_string(e.asInt()) : std::string(e.kindName())));
    out.push_back(static_cast<int32_t>(e.asInt()));
  }
  return Status::success();
}

Status getDType(const JsonValue &obj, const char *key, DType &out) {
  const JsonValue *v = obj.find(key);
  if (!v)
    return Status::success();
  if (!v->isString() || !parseDType(v->asString(), out))
    return schemaError(std::string("key \"") + key +
                       "\" must be one of \"f16\", \"bf16\", \"f32\", "
                       "\"f8e4m3\", \"f8e5m2\"");
  return Status::success();
}

Status getMode(const JsonValue &obj, bool required, bool &present,
               PlanMode &out) {
  const JsonValue *v = obj.find("mode");
  present = v != nullptr;
  if (!v) {
    if (required)
      return schemaError("missing required key \"mode\"");
    return Status::success();
  }
  if (v->isString() && v->asString() == "decode")
    out = PlanMode::Decode;
  else if (v->isString() && v->asString() == "prefill")
    out = PlanMode::Prefill;
  else
    return schemaError("key \"mode\" must be \"decode\" or \"prefill\"");
  return Status::success();
}

Status checkKeys(const JsonValue &obj, const char *const *allowed,
                 const char *where) {
  for (const auto &m : obj.members()) {
    bool known = false;
    for (const char *const *k = allowed; *k; ++k)
      known |= m.first == *k;
    if (!known)
      return schemaError(std::string("unknown key \"") + m.first + "\" in " +
                         where);
  }
  return Status::success();
}

const char *const kLevelKeys[] = {
    "mode",       "qo_indptr",    "kv_indptr",    "kv_last_page_len",
    "kv_indices", "qo_tile_size", "max_num_rows", nullptr};

const char *const kTopKeys[] = {
    "mode",         "qo_indptr",    "kv_indptr", "kv_last_page_len",
    "kv_indices",   "num_pages",    "page_size", "num_qo_heads",
    "num_kv_heads", "head_dim",     "num_sms",   "occupancy",
    "cuda_graph",   "q_dtype",      "kv_dtype",  "o_dtype",
    "qo_tile_size", "max_num_rows", "levels",    "causal",
    nullptr};

Status parseLevel(const JsonValue &obj, PlanMode defaultMode, bool topLevel,
                  BatchDescription::Level &level) {
  bool hasMode = false;
  PlanMode mode = defaultMode;
  if (!topLevel)
    CASCADE_RETURN_IF_ERROR(getMode(obj, false, hasMode, mode));
  bool present = false;
  CASCADE_RETURN_IF_ERROR(
      getInt32Array(obj, "qo_indptr", level.hasQoIndptr, level.qoIndptr));
  CASCADE_RETURN_IF_ERROR(
      getInt32Array(obj, "kv_indptr", present, level.kvIndptr));
  if (!present)
    return schemaError("missing required key \"kv_indptr\"");
  CASCADE_RETURN_IF_ERROR(
      getInt32Array(obj, "kv_last_page_len", present, level.kvLastPageLen));
  if (!present)
    return schemaError("missing required key \"kv_last_page_len\"");
  CASCADE_RETURN_IF_ERROR(
      getInt32Array(obj, "kv_indices", level.hasKvIndices, level.kvIndices));
  CASCADE_RETURN_IF_ERROR(getInt(obj, "qo_tile_size", false, level.qoTileSize));
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

Status parseBatchDescription(const JsonValue &root, BatchDescription &out) {
  if (!root.isObject())
    return schemaError(std::string("the batch description must be a JSON "
                                   "object, got ") +
                       root.kindName());
  CASCADE_RETURN_IF_ERROR(checkKeys(root, kTopKeys, "the batch description"));
  BatchDescription d;
  PlanInputs &c = d.common;
  bool hasMode = false;
  CASCADE_RETURN_IF_ERROR(getMode(root, true, hasMode, c.mode));
  CASCADE_RETURN_IF_ERROR(getInt(root, "page_size", true, c.page_size));
  CASCADE_RETURN_IF_ERROR(getInt(root, "num_qo_heads", true, c.num_qo_heads));
  CASCADE_RETURN_IF_ERROR(getInt(root, "num_kv_heads", true, c.num_kv_heads));
  CASCADE_RETURN_IF_ERROR(getInt(root, "head_dim", true, c.head_dim));
  CASCADE_RETURN_IF_ERROR(getInt(root, "num_sms", true, c.num_sms));
  CASCADE_RETURN_IF_ERROR(getInt(root, "occupancy", false, c.occupancy));
  CASCADE_RETURN_IF_ERROR(getInt(root, "num_pages", false, c.num_pages));
  CASCADE_RETURN_IF_ERROR(getInt(root, "qo_tile_size", false, c.qo_tile_size));
  CASCADE_RETURN_IF_ERROR(getInt(root, "max_num_rows", false, c.max_num_rows));
  CASCADE_RETURN_IF_ERROR(getBool(root, "cuda_graph", c.cuda_graph));
  CASCADE_RETURN_IF_ERROR(getBool(root, "causal", d.causal));
  CASCADE_RETURN_IF_ERROR(getDType(root, "q_dtype", c.q_dtype));
  CASCADE_RETURN_IF_ERROR(getDType(root, "kv_dtype", c.kv_dtype));
  CASCADE_RETURN_IF_ERROR(getDType(root, "o_dtype", c.o_dtype));

  const JsonValue *levels = root.find("levels");
  if (levels) {
    static const char *const arrays[] = {"qo_indptr", "kv_indptr",
                                         "kv_last_page_len", "kv_indices"};
    for (const char *a : arrays)
      if (root.find(a))
        return schemaError(std::string("key \"") + a +
                           "\" belongs inside \"levels\" when \"levels\" is "
                           "given");
    if (!levels->isArray() || levels->elements().empty())
      return schemaError("key \"levels\" must be a non-empty array of "
                         "objects");
    d.isCascade = true;
    for (size_t i = 0; i < levels->elements().size(); ++i) {
      const JsonValue &lv = levels->elements()[i];
      std::string where = "levels[" + std::to_string(i) + "]";
      if (!lv.isObject())
        return schemaError(where + " must be an object, got " + lv.kindName());
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

Status parseBatchDescription(std::string_view json, BatchDescription &out) {
  JsonValue root;
  CASCADE_RETURN_IF_ERROR(parseJson(json, root));
  return parseBatchDescription(root, out);
}

static void writeLayout(JsonWriter &w, const WorkspaceLayout &layout,
                        int64_t base) {
  w.beginObject();
  w.key("alignment");
  w.value(layout.alignment);
  w.key("base");
  w.value(base);
  w.key("bytes");
  w.value(layout.bytes);
  w.key("sections");
  w.beginArray();
  for (const WorkspaceSection &s : layout.sections) {
    w.beginObject(true);
    w.key("name");
    w.value(s.name);
    w.key("dtype");
    w.value(s.dtype);
    w.key("offset");
    w.value(s.offset);
    w.key("bytes");
    w.value(s.bytes);
    w.key("count");
    w.value(s.count);
    w.endObject();
  }
  w.endArray();
  w.endObject();
}

static void writePlanMembersAt(JsonWriter &w, const Plan &p, int64_t intBase,
                               int64_t floatBase) {
  w.key("mode");
  w.value(p.mode == PlanMode::Decode ? "decode" : "prefill");
  static const char *const scalars[] = {
      "batch_size",     "num_rows",         "row_capacity",
      "num_qo_heads",   "num_kv_heads",     "head_dim",
      "page_size",      "gqa_group_size",   "padded_batch_size",
      "num_work_items", "kv_chunk_size",    "kv_chunk_size_pages",
      "qo_tile_size",   "num_partial_rows", "partial_rows_capacity"};
  w.key("split_kv");
  w.value(p.split_kv);
  w.key("cuda_graph");
  w.value(p.cuda_graph);
  for (const char *name : scalars) {
    int64_t v = 0;
    p.scalar(name, v);
    w.key(name);
    w.value(v);
  }
  w.key("request_indices");
  w.intArray(p.request_indices.data(), int64_t(p.request_indices.size()));
  w.key("kv_tile_indices");
  w.intArray(p.kv_tile_indices.data(), int64_t(p.kv_tile_indices.size()));
  w.key("qo_tile_indices");
  w.intArray(p.qo_tile_indices.data(), int64_t(p.qo_tile_indices.size()));
  w.key("o_indptr");
  w.intArray(p.o_indptr.data(), int64_t(p.o_indptr.size()));
  w.key("merge_indptr");
  w.intArray(p.merge_indptr.data(), int64_t(p.merge_indptr.size()));
  w.key("block_valid_mask");
  w.intArray(p.block_valid_mask.data(), int64_t(p.block_valid_mask.size()));
  w.key("int_workspace");
  writeLayout(w, p.int_workspace, intBase);
  w.key("float_workspace");
  writeLayout(w, p.float_workspace, floatBase);
}

void writePlanMembers(JsonWriter &w, const Plan &plan) {
  writePlanMembersAt(w, plan, 0, 0);
}

std::string planToJson(const Plan &plan) {
  JsonWriter w;
  w.beginObject();
  writePlanMembers(w, plan);
  w.endObject();
  std::string s = w.take();
  s += '\n';
  return s;
}

std::string cascadePlanToJson(const CascadePlan &plan, bool causal) {
  JsonWriter w;
  w.beginObject();
  w.key("mode");
  w.value("cascade");
  w.key("num_levels");
  w.value(int64_t(plan.levels.size()));
  w.key("num_rows");
  w.value(plan.num_rows);
  w.key("int_workspace_bytes");
  w.value(plan.int_bytes);
  w.key("float_workspace_bytes");
  w.value(plan.float_bytes);
  w.key("levels");
  w.beginArray();
  for (size_t l = 0; l < plan.levels.size(); ++l) {
    w.beginObject();
    writePlanMembersAt(w, plan.levels[l], plan.int_base[l], plan.float_base[l]);
    w.endObject();
  }
  w.endArray();
  w.key("merge");
  w.beginObject();
  w.key("op");
  w.value("merge_state_in_place");
  w.key("output_level");
  w.value(int64_t(0));
  w.key("order");
  w.beginArray(true);
  for (size_t l = 1; l < plan.levels.size(); ++l)
    w.value(int64_t(l));
  w.endArray();
  w.key("causal_level");
  w.value(causal ? int64_t(plan.levels.size()) - 1 : int64_t(-1));
  w.key("level_states");
  w.beginArray();
  for (size_t l = 1; l < plan.levels.size(); ++l) {
    w.beginObject(true);
    w.key("level");
    w.value(int64_t(l));
    w.key("v_offset");
    w.value(plan.level_v_offset[l]);
    w.key("v_bytes");
    w.value(plan.level_v_bytes);
    w.key("v_dtype");
    w.value(dtypeName(plan.levels[l].o_dtype));
    w.key("s_offset");
    w.value(plan.level_s_offset[l]);
    w.key("s_bytes");
    w.value(plan.level_s_bytes);
    w.endObject();
  }
  w.endArray();
  w.endObject();
  w.endObject();
  std::string s = w.take();
  s += '\n';
  return s;
}

} // namespace cascade::runtime
