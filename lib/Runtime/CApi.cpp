//===- CApi.cpp - The C API of the runtime --------------------------------===//

#include "cascade/Runtime/cascade_runtime.h"

#include "cascade/Runtime/Driver.h"
#include "cascade/Runtime/Half.h"
#include "cascade/Runtime/Manifest.h"
#include "cascade/Runtime/PlanJson.h"
#include "cascade/Runtime/Reference.h"

#include <cstdlib>
#include <cstring>
#include <new>

using namespace cascade::runtime;

struct cascade_plan {
  CascadePlan plan;
  bool isCascade = false;
  bool causal = false;
  /// An automatic cascade (cascade_plan_auto_cascade, or "auto_cascade" in
  /// JSON): its levels' index arrays; `plan` is a copy of auto_.plan. The
  /// description keeps the JSON path's input arrays alive (the last level
  /// may view them).
  bool isAuto = false;
  AutoCascade autoCascade;
  BatchDescription description;
  std::vector<int32_t> inputCopies[4];
};

struct cascade_bundle {
  Bundle bundle;
};

namespace {

thread_local std::string lastError;

cascade_status_t fail(const Status &s) {
  lastError = s.message();
  return static_cast<cascade_status_t>(s.code());
}

cascade_status_t fail(ErrorCode code, const char *message) {
  return fail(Status(code, message));
}

/// The PlanInputs of `c`, whose pointers were checked by checkCInputs:
/// views of its arrays, or, with `copies`, of copies of them kept there (4
/// arrays: kv_indptr, kv_last_page_len, qo_indptr, kv_indices). kv_indptr
/// is validated before kv_indices is sized from kv_indptr[B]: a bad
/// kv_indptr returns its validation error. Throws std::bad_alloc when a copy
/// does not fit.
Status toPlanInputs(const cascade_plan_inputs_t &c, PlanInputs &in,
                    std::vector<int32_t> *copies) {
  const int64_t b = c.batch_size;
  auto view = [&](const int32_t *data, int64_t n, int slot) {
    if (!copies)
      return ArrayView<int32_t>(data, n);
    copies[slot].assign(data, data + n);
    return ArrayView<int32_t>(copies[slot]);
  };
  in.mode =
      c.mode == CASCADE_PLAN_PREFILL ? PlanMode::Prefill : PlanMode::Decode;
  in.kv_indptr = view(c.kv_indptr, b + 1, 0);
  in.kv_last_page_len = view(c.kv_last_page_len, b, 1);
  if (c.qo_indptr)
    in.qo_indptr = view(c.qo_indptr, b + 1, 2);
  if (c.kv_indptr[0] != 0 || c.kv_indptr[b] < 0)
    return validatePlanInputs(in);
  if (c.kv_indices)
    in.kv_indices = view(c.kv_indices, c.kv_indptr[b], 3);
  in.num_pages = c.num_pages;
  in.num_qo_heads = c.num_qo_heads;
  in.num_kv_heads = c.num_kv_heads;
  in.head_dim = c.head_dim;
  in.page_size = c.page_size;
  in.num_sms = c.num_sms;
  in.occupancy = c.occupancy;
  in.cuda_graph = c.cuda_graph != 0;
  in.qo_tile_size = c.qo_tile_size;
  in.max_num_rows = c.max_num_rows;
  return Status::success();
}

/// The argument checks every entry point that takes plan inputs shares.
Status checkCInputs(const cascade_plan_inputs_t *c, const cascade_plan_t *out,
                    const char *fn) {
  if (!c || !out)
    return makeError(ErrorCode::InvalidArgument, "%s: null argument", fn);
  if (c->batch_size < 0 || !c->kv_indptr || !c->kv_last_page_len)
    return makeError(ErrorCode::InvalidArgument,
                     "%s: batch_size must be >= 0 and kv_indptr, "
                     "kv_last_page_len non-null",
                     fn);
  return Status::success();
}

} // namespace

extern "C" {

const char *cascade_last_error(void) { return lastError.c_str(); }

const char *cascade_status_name(cascade_status_t status) {
  return errorCodeName(static_cast<ErrorCode>(status));
}

void cascade_plan_inputs_init(cascade_plan_inputs_t *in) {
  if (!in)
    return;
  std::memset(in, 0, sizeof(*in));
  in->mode = CASCADE_PLAN_DECODE;
  in->num_pages = -1;
  in->occupancy = 1;
  in->max_num_rows = -1;
}

/// makeCascadePlan, with a failed host allocation (a plan's arrays grow with
/// its work items and rows) reported as an error instead of an exception
/// crossing the C boundary.
static Status planNoThrow(const std::vector<PlanInputs> &levels,
                          CascadePlan &out) {
  try {
    return makeCascadePlan(levels, out);
  } catch (const std::bad_alloc &) {
    return Status(ErrorCode::Internal,
                  "out of memory: the plan's host arrays do not fit");
  }
}

/// makeAutoCascadePlan into `p` (levels and a copy of the plan), with a
/// failed allocation reported as an error.
static Status autoNoThrow(const PlanInputs &in, const AutoCascadeOptions &opt,
                          cascade_plan &p) {
  try {
    CASCADE_RETURN_IF_ERROR(makeAutoCascadePlan(in, opt, p.autoCascade));
    p.plan = p.autoCascade.plan;
    return Status::success();
  } catch (const std::bad_alloc &) {
    return Status(ErrorCode::Internal,
                  "out of memory: the plan's host arrays do not fit");
  }
}

cascade_status_t cascade_plan_create(const cascade_plan_inputs_t *c,
                                     cascade_plan_t *out) {
  if (Status s = checkCInputs(c, out, "cascade_plan_create"); !s.ok())
    return fail(s);
  PlanInputs in;
  if (Status s = toPlanInputs(*c, in, nullptr); !s.ok())
    return fail(s);
  // Check the indptr first so kv_indices is never read past kv_indptr[B].
  Status v = validatePlanInputs(in);
  if (!v.ok())
    return fail(v);
  auto *p = new (std::nothrow) cascade_plan();
  if (!p)
    return fail(ErrorCode::Internal, "out of memory");
  Status s = planNoThrow({in}, p->plan);
  if (!s.ok()) {
    delete p;
    return fail(s);
  }
  *out = p;
  return CASCADE_OK;
}

cascade_status_t cascade_plan_create_from_json(const char *json, size_t length,
                                               cascade_plan_t *out) {
  if (!json || !out)
    return fail(ErrorCode::InvalidArgument,
                "cascade_plan_create_from_json: null argument");
  BatchDescription d;
  Status s = parseBatchDescription(std::string_view(json, length), d);
  if (!s.ok())
    return fail(s);
  auto *p = new (std::nothrow) cascade_plan();
  if (!p)
    return fail(ErrorCode::Internal, "out of memory");
  p->isCascade = d.isCascade;
  p->causal = d.causal;
  if (d.autoCascade) {
    p->isCascade = p->isAuto = true;
    p->description = std::move(d);
    s = autoNoThrow(p->description.inputs()[0], p->description.autoOptions, *p);
  } else {
    s = planNoThrow(d.inputs(), p->plan);
  }
  if (!s.ok()) {
    delete p;
    return fail(s);
  }
  *out = p;
  return CASCADE_OK;
}

void cascade_plan_destroy(cascade_plan_t plan) { delete plan; }

int64_t cascade_plan_num_levels(cascade_plan_t plan) {
  return plan ? static_cast<int64_t>(plan->plan.levels.size()) : 0;
}

cascade_status_t cascade_plan_get_scalar(cascade_plan_t plan, int64_t level,
                                         const char *name, int64_t *value) {
  if (!plan || !name || !value)
    return fail(ErrorCode::InvalidArgument,
                "cascade_plan_get_scalar: null argument");
  if (level < 0 || level >= static_cast<int64_t>(plan->plan.levels.size()))
    return fail(makeError(ErrorCode::InvalidArgument, "level %lld out of range",
                          static_cast<long long>(level)));
  if (!plan->plan.levels[level].scalar(name, *value))
    return fail(Status(ErrorCode::NotFound,
                       std::string("no plan scalar named ") + name));
  return CASCADE_OK;
}

cascade_status_t cascade_plan_int_workspace(cascade_plan_t plan,
                                            const void **data, int64_t *bytes) {
  if (!plan || !data || !bytes)
    return fail(ErrorCode::InvalidArgument,
                "cascade_plan_int_workspace: null argument");
  *data = plan->plan.int_image.data();
  *bytes = static_cast<int64_t>(plan->plan.int_image.size());
  return CASCADE_OK;
}

int64_t cascade_plan_float_workspace_bytes(cascade_plan_t plan) {
  return plan ? plan->plan.float_bytes : 0;
}

cascade_status_t cascade_plan_section(cascade_plan_t plan, int64_t level,
                                      const char *name, int64_t *offset,
                                      int64_t *bytes) {
  if (!plan || !name || !offset || !bytes)
    return fail(ErrorCode::InvalidArgument,
                "cascade_plan_section: null argument");
  const CascadePlan &c = plan->plan;
  if (level < 0 || level >= static_cast<int64_t>(c.levels.size()))
    return fail(makeError(ErrorCode::InvalidArgument, "level %lld out of range",
                          static_cast<long long>(level)));
  const Plan &p = c.levels[level];
  if (const WorkspaceSection *s = p.int_workspace.find(name)) {
    *offset = c.int_base[level] + s->offset;
    *bytes = s->bytes;
    return CASCADE_OK;
  }
  if (const WorkspaceSection *s = p.float_workspace.find(name)) {
    *offset = c.float_base[level] + s->offset;
    *bytes = s->bytes;
    return CASCADE_OK;
  }
  if (level != c.base_level && std::strcmp(name, "level_v") == 0) {
    *offset = c.level_v_offset[level];
    *bytes = c.level_v_bytes;
    return CASCADE_OK;
  }
  if (level != c.base_level && std::strcmp(name, "level_s") == 0) {
    *offset = c.level_s_offset[level];
    *bytes = c.level_s_bytes;
    return CASCADE_OK;
  }
  return fail(Status(ErrorCode::NotFound,
                     std::string("no workspace section named ") + name));
}

cascade_status_t cascade_plan_to_json(cascade_plan_t plan, char **json) {
  if (!plan || !json)
    return fail(ErrorCode::InvalidArgument,
                "cascade_plan_to_json: null argument");
  std::string s =
      plan->isAuto      ? autoCascadeToJson(plan->autoCascade, plan->causal)
      : plan->isCascade ? cascadePlanToJson(plan->plan, plan->causal)
                        : planToJson(plan->plan.levels[0]);
  char *out = static_cast<char *>(std::malloc(s.size() + 1));
  if (!out)
    return fail(ErrorCode::Internal, "out of memory");
  std::memcpy(out, s.c_str(), s.size() + 1);
  *json = out;
  return CASCADE_OK;
}

void cascade_free(void *p) { std::free(p); }

cascade_status_t cascade_plan_auto_cascade(const cascade_plan_inputs_t *c,
                                           int64_t max_levels,
                                           int64_t shared_qo_tile_size,
                                           int32_t causal,
                                           cascade_plan_t *out) {
  if (Status s = checkCInputs(c, out, "cascade_plan_auto_cascade"); !s.ok())
    return fail(s);
  auto *p = new (std::nothrow) cascade_plan();
  if (!p)
    return fail(ErrorCode::Internal, "out of memory");
  // The plan keeps copies of the input arrays: its last level may view them.
  Status s;
  try {
    PlanInputs in;
    s = toPlanInputs(*c, in, p->inputCopies);
    AutoCascadeOptions opt;
    if (max_levels > 0)
      opt.max_levels = max_levels;
    opt.shared_qo_tile_size = shared_qo_tile_size;
    opt.causal = causal != 0;
    if (s.ok())
      s = autoNoThrow(in, opt, *p);
  } catch (const std::bad_alloc &) {
    s = Status(ErrorCode::Internal, "out of memory copying the inputs");
  }
  if (!s.ok()) {
    delete p;
    return fail(s);
  }
  p->isCascade = p->isAuto = true;
  p->causal = causal != 0;
  *out = p;
  return CASCADE_OK;
}

cascade_status_t cascade_plan_level_array(cascade_plan_t plan, int64_t level,
                                          const char *name,
                                          const int32_t **data,
                                          int64_t *count) {
  if (!plan || !name || !data || !count)
    return fail(ErrorCode::InvalidArgument,
                "cascade_plan_level_array: null argument");
  if (!plan->isAuto)
    return fail(ErrorCode::InvalidArgument,
                "cascade_plan_level_array: not an automatic cascade (the "
                "caller owns the arrays of other plans)");
  if (level < 0 ||
      level >= static_cast<int64_t>(plan->autoCascade.levels.size()))
    return fail(makeError(ErrorCode::InvalidArgument, "level %lld out of range",
                          static_cast<long long>(level)));
  const AutoCascadeLevel &l = plan->autoCascade.levels[level];
  const std::pair<const char *, ArrayView<int32_t>> arrays[] = {
      {"qo_indptr", l.qo_indptr},
      {"kv_indptr", l.kv_indptr},
      {"kv_indices", l.kv_indices},
      {"kv_last_page_len", l.kv_last_page_len}};
  for (const auto &a : arrays)
    if (!std::strcmp(name, a.first)) {
      *data = a.second.data();
      *count = a.second.present() ? a.second.size() : 0;
      return CASCADE_OK;
    }
  return fail(
      Status(ErrorCode::NotFound, std::string("no level array named ") + name));
}

cascade_status_t cascade_bundle_load(const char *dir, cascade_bundle_t *out) {
  if (!dir || !out)
    return fail(ErrorCode::InvalidArgument,
                "cascade_bundle_load: null argument");
  auto *b = new (std::nothrow) cascade_bundle();
  if (!b)
    return fail(ErrorCode::Internal, "out of memory");
  Status s = loadBundle(dir, b->bundle);
  if (!s.ok()) {
    delete b;
    return fail(s);
  }
  *out = b;
  return CASCADE_OK;
}

void cascade_bundle_destroy(cascade_bundle_t bundle) { delete bundle; }

int64_t cascade_bundle_num_kernels(cascade_bundle_t b) {
  return b ? static_cast<int64_t>(b->bundle.kernels.size()) : 0;
}

const char *cascade_bundle_kernel_name(cascade_bundle_t b, int64_t i) {
  if (!b || i < 0 || i >= static_cast<int64_t>(b->bundle.kernels.size()))
    return nullptr;
  return b->bundle.kernels[i].name.c_str();
}

const char *cascade_bundle_kernel_op(cascade_bundle_t b, int64_t i) {
  if (!b || i < 0 || i >= static_cast<int64_t>(b->bundle.kernels.size()))
    return nullptr;
  return b->bundle.kernels[i].op.c_str();
}

cascade_status_t cascade_driver_init(void) {
  const cuda::DriverApi *api = nullptr;
  Status s = cuda::getDriver(api);
  return s.ok() ? CASCADE_OK : fail(s);
}

static bool badShape(int64_t a, int64_t b, int64_t c) {
  return a < 0 || b < 0 || c < 0;
}

cascade_status_t cascade_ref_merge_state(const float *vA, const float *sA,
                                         const float *vB, const float *sB,
                                         float *vOut, float *sOut, int64_t rows,
                                         int64_t heads, int64_t headDim) {
  if (badShape(rows, heads, headDim) || !vA || !sA || !vB || !sB || !vOut ||
      !sOut)
    return fail(ErrorCode::InvalidArgument,
                "cascade_ref_merge_state: null pointer or negative size");
  ref::mergeState<float, float>(vA, sA, vB, sB, vOut, sOut, rows, heads,
                                headDim);
  return CASCADE_OK;
}

cascade_status_t
cascade_ref_merge_state_in_place(float *v, float *s, const float *vOther,
                                 const float *sOther, const uint8_t *mask,
                                 int64_t maskStride, int64_t rows,
                                 int64_t heads, int64_t headDim) {
  if (badShape(rows, heads, headDim) || !v || !s || !vOther || !sOther ||
      (mask && maskStride < 0))
    return fail(ErrorCode::InvalidArgument,
                "cascade_ref_merge_state_in_place: null pointer or negative "
                "size");
  ref::mergeStateInPlace<float, float>(v, s, vOther, sOther, mask, maskStride,
                                       rows, heads, headDim);
  return CASCADE_OK;
}

cascade_status_t cascade_ref_merge_states(const float *v, const float *s,
                                          float *vOut, float *sOut,
                                          int64_t rows, int64_t numStates,
                                          int64_t heads, int64_t headDim) {
  if (badShape(rows, heads, headDim) || numStates < 0 || !vOut || !sOut ||
      (numStates > 0 && (!v || !s)))
    return fail(ErrorCode::InvalidArgument,
                "cascade_ref_merge_states: null pointer or negative size");
  ref::mergeStates<float, float>(v, s, vOut, sOut, rows, numStates, heads,
                                 headDim);
  return CASCADE_OK;
}

void cascade_f32_to_f16(const float *in, uint16_t *out, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    out[i] = floatToHalf(in[i]);
}
void cascade_f16_to_f32(const uint16_t *in, float *out, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    out[i] = halfToFloat(in[i]);
}
void cascade_f32_to_bf16(const float *in, uint16_t *out, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    out[i] = floatToBf16(in[i]);
}
void cascade_bf16_to_f32(const uint16_t *in, float *out, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    out[i] = bf16ToFloat(in[i]);
}

} // extern "C"
