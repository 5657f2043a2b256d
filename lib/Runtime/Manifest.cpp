//===- Manifest.cpp - Kernel bundles and argument binding -----------------===//

#include "cascade/Runtime/Manifest.h"

#include "JsonSupport.h"

#include "cascade/Contract/BundleContract.h"

#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <locale>
#include <set>
#include <sstream>

namespace cascade::runtime {

using json::Json;
namespace mf = contract::manifest;
namespace plankey = contract::plan;

namespace {

Status schema(const std::string &message) {
  return Status(ErrorCode::Schema, "manifest: " + message);
}

/// Kernel, parameter and grid names: a letter, '_' or '$', then letters,
/// digits, '_' or '$' (PTX identifiers; they also appear in messages).
bool isIdentifier(const std::string &s) {
  auto alpha = [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
           c == '$';
  };
  if (s.empty() || !alpha(s[0]))
    return false;
  for (char c : s)
    if (!alpha(c) && !(c >= '0' && c <= '9'))
      return false;
  return true;
}

/// A PTX file of the bundle: relative, no "..", no control characters.
bool isBundlePath(const std::string &s) {
  if (s.empty() || s[0] == '/' || s.find("..") != std::string::npos)
    return false;
  for (char c : s)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f)
      return false;
  return true;
}

/// `obj[key]` as a non-empty string.
Status getString(const Json &obj, const char *key, const std::string &where,
                 std::string &out) {
  const Json *v = json::find(obj, key);
  if (!v || !v->is_string() || v->get_ref<const std::string &>().empty())
    return schema(where + ": \"" + key + "\" must be a non-empty string");
  out = v->get<std::string>();
  return Status::success();
}

/// `v` as an integer in [lo, hi].
bool getIntIn(const Json &v, int64_t lo, int64_t hi, int64_t &out) {
  return json::getInt64(v, out) && out >= lo && out <= hi;
}

template <typename Keys>
Status checkKeys(const Json &obj, const Keys &keys, const std::string &where) {
  for (const auto &m : obj.items()) {
    bool known = false;
    for (const char *key : keys)
      known |= m.key() == key;
    if (!known)
      return schema(where + ": unknown key " + json::quote(m.key()));
  }
  return Status::success();
}

Status parseGridDim(const Json &v, const std::string &where, GridDim &out) {
  if (v.is_number_integer()) {
    if (!getIntIn(v, 1, std::numeric_limits<int32_t>::max(), out.value))
      return schema(where + " must be a positive integer");
    return Status::success();
  }
  if (!v.is_object())
    return schema(where + " must be an integer or {\"param\": P, \"div\": k}");
  CASCADE_RETURN_IF_ERROR(checkKeys(v, mf::kGridKeys, where));
  CASCADE_RETURN_IF_ERROR(getString(v, mf::kGridParam, where, out.param));
  if (!isIdentifier(out.param))
    return schema(where + ": \"param\" " + json::quote(out.param) +
                  " is not an identifier");
  if (json::find(v, mf::kGridAdd)) {
    CASCADE_RETURN_IF_ERROR(getString(v, mf::kGridAdd, where, out.add));
    if (!isIdentifier(out.add))
      return schema(where + ": \"add\" " + json::quote(out.add) +
                    " is not an identifier");
  }
  for (const char *k : {mf::kGridDiv, mf::kGridMul}) {
    const Json *n = json::find(v, k);
    if (!n)
      continue;
    if (!getIntIn(*n, 1, int64_t(1) << 30,
                  std::strcmp(k, mf::kGridDiv) == 0 ? out.div : out.mul))
      return schema(where + ": \"" + k + "\" must be a positive integer");
  }
  return Status::success();
}

/// A "static" value as text (see KernelSpec::statics).
std::string staticText(const Json &v) {
  if (v.is_string())
    return v.get<std::string>();
  return json::formatScalar(v);
}

Status parseKernel(const Json &k, const std::string &where, KernelSpec &out) {
  if (!k.is_object())
    return schema(where + " must be an object");
  CASCADE_RETURN_IF_ERROR(checkKeys(k, mf::kKernelKeys, where));
  CASCADE_RETURN_IF_ERROR(getString(k, mf::kName, where, out.name));
  if (!isIdentifier(out.name))
    return schema(where + ": \"name\" " + json::quote(out.name) +
                  " is not a PTX identifier");
  const std::string at = where + " (" + out.name + ")";
  CASCADE_RETURN_IF_ERROR(getString(k, mf::kPtx, at, out.ptx));
  if (!isBundlePath(out.ptx))
    return schema(at + ": ptx path " + json::quote(out.ptx) +
                  " must be a relative path inside the bundle");
  CASCADE_RETURN_IF_ERROR(getString(k, mf::kOp, at, out.op));
  bool knownOp = false;
  for (const char *op : contract::op::kAll)
    knownOp |= out.op == op;
  if (!knownOp)
    return schema(at + ": unknown op " + json::quote(out.op));

  const Json *block = json::find(k, mf::kBlock);
  if (!block || !block->is_array() || block->size() != 3)
    return schema(at + ": \"block\" must be an array of three integers");
  int64_t threads = 1;
  for (size_t i = 0; i < 3; ++i) {
    if (!getIntIn((*block)[i], 1, 1024, out.block[i]))
      return schema(at + ": \"block\" entries must be integers in [1, 1024]");
    threads *= out.block[i];
  }
  if (threads > 1024)
    return schema(at + ": a block has more than 1024 threads");

  const Json *grid = json::find(k, mf::kGrid);
  if (!grid || !grid->is_array() || grid->size() != 3)
    return schema(at + ": \"grid\" must be an array of three entries");
  for (size_t i = 0; i < 3; ++i)
    CASCADE_RETURN_IF_ERROR(parseGridDim(
        (*grid)[i], at + ": grid[" + std::to_string(i) + "]", out.grid[i]));

  if (const Json *smem = json::find(k, mf::kDynamicSharedBytes))
    if (!getIntIn(*smem, 0, int64_t(1) << 30, out.dynamicSharedBytes))
      return schema(at + ": \"dynamic_shared_bytes\" must be a non-negative "
                         "integer");
  if (const Json *pdl = json::find(k, mf::kPdl)) {
    if (!pdl->is_boolean())
      return schema(at + ": \"pdl\" must be a boolean");
    out.pdl = pdl->get<bool>();
  }
  if (const Json *st = json::find(k, mf::kStatic)) {
    if (!st->is_object())
      return schema(at + ": \"static\" must be an object");
    for (const auto &m : st->items())
      out.statics.emplace_back(m.key(), staticText(m.value()));
  }

  const Json *params = json::find(k, mf::kParams);
  if (!params || !params->is_array())
    return schema(at + ": \"params\" must be an array");
  std::set<std::string> names;
  for (size_t i = 0; i < params->size(); ++i) {
    const Json &p = (*params)[i];
    const std::string pw = at + ": params[" + std::to_string(i) + "]";
    if (!p.is_object())
      return schema(pw + " must be an object");
    ParamSpec spec;
    CASCADE_RETURN_IF_ERROR(getString(p, mf::kName, pw, spec.name));
    if (!isIdentifier(spec.name))
      return schema(pw + ": \"name\" " + json::quote(spec.name) +
                    " is not an identifier");
    std::string kind;
    CASCADE_RETURN_IF_ERROR(getString(p, mf::kKind, pw, kind));
    if (kind == mf::kKindMemref)
      spec.kind = ParamKind::Memref;
    else if (kind == mf::kKindPtr)
      spec.kind = ParamKind::Ptr;
    else if (kind == mf::kKindI32)
      spec.kind = ParamKind::I32;
    else if (kind == mf::kKindI64)
      spec.kind = ParamKind::I64;
    else if (kind == mf::kKindF32)
      spec.kind = ParamKind::F32;
    else
      return schema(pw + ": unknown kind " + json::quote(kind) +
                    " (memref, ptr, i32, i64, f32)");
    if (const Json *dt = json::find(p, mf::kDType)) {
      if (!dt->is_string())
        return schema(pw + ": \"dtype\" must be a string");
      spec.dtype = dt->get<std::string>();
    }
    if (const Json *dv = json::find(p, mf::kDefault)) {
      if (!dv->is_number_integer() || spec.kind == ParamKind::Memref ||
          spec.kind == ParamKind::Ptr || spec.kind == ParamKind::F32)
        return schema(pw + ": \"default\" must be an integer, on an i32 or "
                           "i64 param");
      spec.defaultValue = dv->get<int64_t>();
    }
    if (!names.insert(spec.name).second)
      return schema(at + ": duplicate param \"" + spec.name + "\"");
    out.params.push_back(std::move(spec));
  }
  if (const Json *pa = json::find(k, mf::kPlanArrays)) {
    if (!pa->is_array())
      return schema(at + ": \"plan_arrays\" must be an array of strings");
    for (const Json &e : *pa) {
      if (!e.is_string())
        return schema(at + ": \"plan_arrays\" must be an array of strings");
      const std::string &name = e.get_ref<const std::string &>();
      if (!names.count(name))
        return schema(at + ": plan array " + json::quote(name) +
                      " is not a param");
      out.planArrays.push_back(name);
    }
  }
  return Status::success();
}

} // namespace

const char *paramKindName(ParamKind kind) {
  switch (kind) {
  case ParamKind::Memref:
    return mf::kKindMemref;
  case ParamKind::Ptr:
    return mf::kKindPtr;
  case ParamKind::I32:
    return mf::kKindI32;
  case ParamKind::I64:
    return mf::kKindI64;
  case ParamKind::F32:
    return mf::kKindF32;
  }
  return "?";
}

std::string KernelSpec::staticString(const std::string &key) const {
  for (const auto &kv : statics)
    if (kv.first == key)
      return kv.second;
  return "";
}

int64_t KernelSpec::numPtxParams() const {
  int64_t n = 0;
  for (const ParamSpec &p : params)
    n += p.kind == ParamKind::Memref ? 5 : 1;
  return n;
}

const KernelSpec *Bundle::find(const std::string &name) const {
  for (const KernelSpec &k : kernels)
    if (k.name == name)
      return &k;
  return nullptr;
}

/// Static values compare as text, except that two numbers compare by value
/// ("0" matches the "0.0" a writer may print for a double, "1e-05" matches
/// "0.00001").
static bool sameStaticValue(const std::string &have, const std::string &want) {
  if (have == want)
    return true;
  auto number = [](const std::string &t, double &v) {
    if (t.empty())
      return false;
    std::istringstream is(t);
    is.imbue(std::locale::classic());
    is >> v;
    return !is.fail() && is.peek() == std::char_traits<char>::eof();
  };
  double a, b;
  return number(have, a) && number(want, b) && a == b;
}

const KernelSpec *Bundle::select(
    const std::string &op,
    const std::vector<std::pair<std::string, std::string>> &statics) const {
  for (const KernelSpec &k : kernels) {
    if (k.op != op)
      continue;
    bool match = true;
    for (const auto &kv : statics)
      match &= sameStaticValue(k.staticString(kv.first), kv.second);
    if (match)
      return &k;
  }
  return nullptr;
}

Status checkKernelStatics(const KernelSpec &kernel, const Plan &plan,
                          const PlanInputs *inputs) {
  namespace key = contract::key;
  auto check = [&](const char *name, const std::string &planValue,
                   ErrorCode code) {
    const std::string have = kernel.staticString(name);
    if (have.empty() || sameStaticValue(have, planValue))
      return Status::success();
    return makeError(code, "kernel %s was built for %s %s, the plan has %s",
                     kernel.name.c_str(), name, have.c_str(),
                     planValue.c_str());
  };
  // A merge's head_dim is its states': v's and the output's.
  const bool merge = kernel.op.rfind("merge", 0) == 0;
  const std::pair<const char *, int64_t> sizes[] = {
      {key::kPageSize, plan.page_size},
      {key::kHeadDim, merge ? plan.vDim() : plan.head_dim},
      {key::kNumQoHeads, plan.num_qo_heads},
      {key::kNumKvHeads, plan.num_kv_heads}};
  for (const auto &[name, value] : sizes)
    CASCADE_RETURN_IF_ERROR(
        check(name, std::to_string(value), ErrorCode::SizeMismatch));
  // An attention kernel's v head_dim: its head_dim_vo static where v has
  // its own, else its head_dim.
  if (!merge && !kernel.staticString(key::kHeadDim).empty()) {
    std::string vo = kernel.staticString(key::kHeadDimVo);
    if (vo.empty())
      vo = kernel.staticString(key::kHeadDim);
    if (!sameStaticValue(vo, std::to_string(plan.vDim())))
      return makeError(ErrorCode::SizeMismatch,
                       "kernel %s was built for a v head_dim (head_dim_vo) of "
                       "%s, the plan has %lld",
                       kernel.name.c_str(), vo.c_str(),
                       static_cast<long long>(plan.vDim()));
  }
  if (!inputs)
    return Status::success();
  const std::pair<const char *, DType> dtypes[] = {
      {key::kQDType, inputs->q_dtype},
      {key::kKvDType, inputs->kv_dtype},
      {key::kODType, inputs->o_dtype},
      {key::kVDType, inputs->o_dtype}};
  for (const auto &[name, value] : dtypes)
    CASCADE_RETURN_IF_ERROR(
        check(name, dtypeName(value), ErrorCode::InvalidArgument));
  return Status::success();
}

Status parseManifest(std::string_view text, Bundle &out) {
  Json root;
  Status s = json::parse(text, root);
  if (!s.ok())
    return Status(s.code(), "manifest: " + s.message());
  if (!root.is_object())
    return schema("the manifest must be a JSON object, got " +
                  std::string(json::kindName(root)));
  const Json *format = json::find(root, mf::kFormat);
  if (!format || !format->is_string() ||
      format->get_ref<const std::string &>() != mf::kFormatName)
    return schema(std::string("\"") + mf::kFormat + "\" must be \"" +
                  mf::kFormatName + "\"");
  const Json *version = json::find(root, mf::kVersionKey);
  int64_t v = 0;
  if (!version || !json::getInt64(*version, v))
    return schema("\"version\" must be an integer");
  if (v != mf::kVersion)
    return Status(ErrorCode::Unsupported,
                  "manifest: version " + std::to_string(v) +
                      " is not supported (this runtime reads version " +
                      std::to_string(mf::kVersion) + ")");
  Bundle b;
  b.version = mf::kVersion;
  if (const Json *target = json::find(root, mf::kTarget)) {
    if (!target->is_object())
      return schema("\"target\" must be an object");
    if (const Json *chip = json::find(*target, mf::kChip);
        chip && chip->is_string())
      b.chip = chip->get<std::string>();
    if (const Json *f = json::find(*target, mf::kFeatures); f && f->is_string())
      b.features = f->get<std::string>();
  }
  const Json *kernels = json::find(root, mf::kKernels);
  if (!kernels || !kernels->is_array())
    return schema("\"kernels\" must be an array");
  std::set<std::string> names;
  for (size_t i = 0; i < kernels->size(); ++i) {
    KernelSpec k;
    CASCADE_RETURN_IF_ERROR(
        parseKernel((*kernels)[i], "kernels[" + std::to_string(i) + "]", k));
    if (!names.insert(k.name).second)
      return schema("duplicate kernel \"" + k.name + "\"");
    b.kernels.push_back(std::move(k));
  }
  out = std::move(b);
  return Status::success();
}

Status readFile(const std::string &path, std::string &out) {
  std::ifstream f(path, std::ios::binary);
  if (!f)
    return Status(ErrorCode::IO,
                  "cannot open " + path + ": " + std::strerror(errno));
  std::ostringstream ss;
  ss << f.rdbuf();
  if (f.bad())
    return Status(ErrorCode::IO, "cannot read " + path);
  out = ss.str();
  return Status::success();
}

Status loadBundle(const std::string &dir, Bundle &out) {
  std::string text;
  CASCADE_RETURN_IF_ERROR(readFile(dir + "/" + mf::kFileName, text));
  Bundle b;
  CASCADE_RETURN_IF_ERROR(parseManifest(text, b));
  b.dir = dir;
  for (const KernelSpec &k : b.kernels) {
    if (b.ptx.count(k.ptx))
      continue; // paths were checked by parseManifest
    std::string ptx;
    CASCADE_RETURN_IF_ERROR(readFile(dir + "/" + k.ptx, ptx));
    if (ptx.find('\0') != std::string::npos)
      return schema("kernel " + k.name + ": " + k.ptx +
                    " contains a NUL byte (PTX text expected)");
    b.ptx.emplace(k.ptx, std::move(ptx));
  }
  for (const KernelSpec &k : b.kernels)
    if (b.ptx.at(k.ptx).find(k.name) == std::string::npos)
      return Status(ErrorCode::NotFound, "manifest: kernel " + k.name +
                                             " does not appear in " + k.ptx);
  out = std::move(b);
  return Status::success();
}

//===----------------------------------------------------------------------===//
// Binding
//===----------------------------------------------------------------------===//

void ArgumentTable::setBuffer(const std::string &name, uint64_t ptr,
                              int64_t count, const std::string &dtype) {
  Binding &b = bindings_[name];
  b.hasBuffer = true;
  b.ptr = ptr;
  b.count = count;
  b.dtype = dtype;
}

void ArgumentTable::setInt(const std::string &name, int64_t value) {
  Binding &b = bindings_[name];
  b.hasScalar = true;
  b.isFloat = false;
  b.intValue = value;
  b.floatValue = static_cast<double>(value);
}

void ArgumentTable::setFloat(const std::string &name, double value) {
  Binding &b = bindings_[name];
  b.hasScalar = true;
  b.isFloat = true;
  b.floatValue = value;
  // Truncated when representable; NaN and values outside int64 (converting
  // them would be undefined behaviour) saturate. Integer parameters reject
  // float bindings anyway; this only keeps the struct well defined.
  constexpr double kTwo63 = 9223372036854775808.0;
  if (std::isnan(value))
    b.intValue = 0;
  else if (value >= kTwo63)
    b.intValue = std::numeric_limits<int64_t>::max();
  else if (value < -kTwo63)
    b.intValue = std::numeric_limits<int64_t>::min();
  else
    b.intValue = static_cast<int64_t>(value);
}

const Binding *ArgumentTable::find(const std::string &name) const {
  auto it = bindings_.find(name);
  return it == bindings_.end() ? nullptr : &it->second;
}

void ArgumentTable::merge(const ArgumentTable &other) {
  for (const auto &kv : other.bindings_)
    bindings_[kv.first] = kv.second;
}

void addPlanBindings(ArgumentTable &table, const Plan &plan,
                     uint64_t intWorkspace, uint64_t floatWorkspace) {
  for (const WorkspaceSection &s : plan.int_workspace.sections)
    table.setBuffer(s.name, intWorkspace + static_cast<uint64_t>(s.offset),
                    s.count, s.dtype);
  for (const WorkspaceSection &s : plan.float_workspace.sections)
    table.setBuffer(s.name, floatWorkspace + static_cast<uint64_t>(s.offset),
                    s.count, s.dtype);
  for (const char *name : plankey::kIntScalars) {
    int64_t v = 0;
    plan.scalar(name, v);
    table.setInt(name, v);
  }
  table.setInt(plankey::kSplitKv, plan.split_kv ? 1 : 0);
}

std::vector<void *> KernelLaunch::paramPointers() {
  std::vector<void *> ptrs(slots.size());
  for (size_t i = 0; i < slots.size(); ++i)
    ptrs[i] = &slots[i];
  return ptrs;
}

Status bindKernel(const KernelSpec &kernel, const ArgumentTable &table,
                  KernelLaunch &out) {
  KernelLaunch l;
  for (const ParamSpec &p : kernel.params) {
    const Binding *b = table.find(p.name);
    const bool wantsBuffer =
        p.kind == ParamKind::Memref || p.kind == ParamKind::Ptr;
    Binding fallback;
    if (!b && p.defaultValue) {
      fallback.hasScalar = true;
      fallback.intValue = *p.defaultValue;
      b = &fallback;
    }
    if (!b || (wantsBuffer && !b->hasBuffer) || (!wantsBuffer && !b->hasScalar))
      return makeError(ErrorCode::NotFound,
                       "kernel %s: no %s bound for parameter '%s' (%s%s%s)",
                       kernel.name.c_str(), wantsBuffer ? "buffer" : "scalar",
                       p.name.c_str(), paramKindName(p.kind),
                       p.dtype.empty() ? "" : " ", p.dtype.c_str());
    if (wantsBuffer && !p.dtype.empty() && !b->dtype.empty() &&
        p.dtype != b->dtype)
      return makeError(ErrorCode::InvalidArgument,
                       "kernel %s: parameter '%s' expects %s elements, the "
                       "bound buffer holds %s",
                       kernel.name.c_str(), p.name.c_str(), p.dtype.c_str(),
                       b->dtype.c_str());
    switch (p.kind) {
    case ParamKind::Memref:
      // MLIR's 1-D memref descriptor: allocated, aligned, offset, size, stride.
      l.slots.push_back(b->ptr);
      l.slots.push_back(b->ptr);
      l.slots.push_back(0);
      l.slots.push_back(static_cast<uint64_t>(b->count));
      l.slots.push_back(1);
      for (const char *f :
           {".allocated", ".aligned", ".offset", ".size", ".stride"})
        l.slotNames.push_back(p.name + f);
      break;
    case ParamKind::Ptr:
      l.slots.push_back(b->ptr);
      l.slotNames.push_back(p.name);
      break;
    case ParamKind::I32: {
      if (b->isFloat || b->intValue < std::numeric_limits<int32_t>::min() ||
          b->intValue > std::numeric_limits<int32_t>::max())
        return makeError(ErrorCode::Overflow,
                         "kernel %s: value %lld of i32 parameter '%s' does "
                         "not fit in int32",
                         kernel.name.c_str(),
                         static_cast<long long>(b->intValue), p.name.c_str());
      int32_t v = static_cast<int32_t>(b->intValue);
      uint64_t slot = 0;
      std::memcpy(&slot, &v, 4);
      l.slots.push_back(slot);
      l.slotNames.push_back(p.name);
      break;
    }
    case ParamKind::I64: {
      if (b->isFloat)
        return makeError(ErrorCode::InvalidArgument,
                         "kernel %s: i64 parameter '%s' is bound to a float",
                         kernel.name.c_str(), p.name.c_str());
      uint64_t slot = 0;
      std::memcpy(&slot, &b->intValue, 8);
      l.slots.push_back(slot);
      l.slotNames.push_back(p.name);
      break;
    }
    case ParamKind::F32: {
      float v = static_cast<float>(b->floatValue);
      uint64_t slot = 0;
      std::memcpy(&slot, &v, 4);
      l.slots.push_back(slot);
      l.slotNames.push_back(p.name);
      break;
    }
    }
  }
  for (int i = 0; i < 3; ++i) {
    const GridDim &g = kernel.grid[i];
    int64_t v = g.value;
    auto scalar = [&](const std::string &name, int64_t &out) -> Status {
      const Binding *b = table.find(name);
      if (!b || !b->hasScalar || b->isFloat)
        return makeError(ErrorCode::NotFound,
                         "kernel %s: grid[%d] needs integer '%s', which is "
                         "not bound",
                         kernel.name.c_str(), i, name.c_str());
      if (b->intValue < 0)
        return makeError(ErrorCode::InvalidArgument,
                         "kernel %s: grid[%d] from '%s' = %lld is negative",
                         kernel.name.c_str(), i, name.c_str(),
                         static_cast<long long>(b->intValue));
      out = b->intValue;
      return Status::success();
    };
    if (!g.param.empty()) {
      int64_t base = 0, scaled = 0;
      CASCADE_RETURN_IF_ERROR(scalar(g.param, base));
      if (__builtin_mul_overflow(base, g.mul, &scaled))
        return makeError(ErrorCode::Overflow, "kernel %s: grid[%d] overflows",
                         kernel.name.c_str(), i);
      v = scaled / g.div + (scaled % g.div != 0); // ceil, cannot overflow
      if (!g.add.empty()) {
        int64_t extra = 0;
        CASCADE_RETURN_IF_ERROR(scalar(g.add, extra));
        if (__builtin_add_overflow(v, extra, &v))
          return makeError(ErrorCode::Overflow, "kernel %s: grid[%d] overflows",
                           kernel.name.c_str(), i);
      }
    }
    const int64_t limit = i == 0 ? std::numeric_limits<int32_t>::max() : 65535;
    if (v > limit)
      return makeError(ErrorCode::Overflow,
                       "kernel %s: grid[%d] = %lld exceeds the device limit "
                       "%lld",
                       kernel.name.c_str(), i, static_cast<long long>(v),
                       static_cast<long long>(limit));
    l.grid[i] = static_cast<uint32_t>(v);
    l.block[i] = static_cast<uint32_t>(kernel.block[i]);
  }
  l.sharedBytes = static_cast<uint32_t>(kernel.dynamicSharedBytes);
  out = std::move(l);
  return Status::success();
}

} // namespace cascade::runtime
