//===- ConfigDict.h - The attention configuration from Python ---*- C++ -*-===//
//
// The one crossing of the static attention configuration from Python into
// C++: cascade_mlir.config.AttentionConfig.as_dict() (the contract's key
// names, cascade/Contract/BundleContract.h) <-> contract::AttentionConfig.
// Both extension modules (the compiler's IR builders, the GPU program's
// signature) read it here. Unknown keys and values raise ValueError.
//
//===----------------------------------------------------------------------===//

#ifndef CASCADE_PYTHON_CONFIGDICT_H
#define CASCADE_PYTHON_CONFIGDICT_H

#include "cascade/Contract/AttentionConfig.h"

#include <pybind11/pybind11.h>

#include <optional>
#include <string>
#include <type_traits>

namespace cascade::python {

namespace py = pybind11;

namespace detail {
// One score option from a dict value (not None).
inline void scoreFromPy(const py::handle &v, std::optional<float> &f) {
  f = static_cast<float>(v.cast<double>());
}
inline void scoreFromPy(const py::handle &v, float &f) {
  f = static_cast<float>(v.cast<double>());
}
inline void scoreFromPy(const py::handle &v, int64_t &i) {
  i = v.cast<int64_t>();
}
/// false: not a position encoding's name.
inline bool scoreFromPy(const py::handle &v, contract::PosEncoding &p) {
  return contract::parsePosEncoding(std::string(py::str(v)), p);
}

// One score option as a dict value.
inline py::object scoreToPy(const std::optional<float> &f) {
  return f ? py::object(py::float_(*f)) : py::object(py::none());
}
inline py::object scoreToPy(float f) { return py::float_(f); }
inline py::object scoreToPy(int64_t i) { return py::int_(i); }
inline py::object scoreToPy(contract::PosEncoding p) {
  return py::str(contract::posEncodingName(p));
}
} // namespace detail

/// Reads the score options of `d` into `s`, each under the key `keyOf`
/// maps its contract name to (ScoreOptions::forEachField); absent or None
/// keeps the value `s` has. A bad position encoding raises ValueError
/// "<context><key> must be none, rope_llama or alibi, got '<value>'".
template <class KeyOf>
void scoreOptionsFromDict(const py::dict &d, contract::ScoreOptions &s,
                          const std::string &context, KeyOf &&keyOf) {
  contract::ScoreOptions::forEachField(s, [&](const char *name, auto &field) {
    const std::string k = keyOf(name);
    if (!d.contains(k) || d[k.c_str()].is_none())
      return;
    py::object v = d[k.c_str()];
    using Field = std::decay_t<decltype(field)>;
    if constexpr (std::is_same_v<Field, contract::PosEncoding>) {
      if (!detail::scoreFromPy(v, field))
        throw py::value_error(context + k +
                              " must be none, rope_llama or alibi, got '" +
                              std::string(py::str(v)) + "'");
    } else {
      detail::scoreFromPy(v, field);
    }
  });
}

/// Writes every score option into `d` under its contract name (sm_scale
/// None for the default).
inline void scoreOptionsToDict(const contract::ScoreOptions &s, py::dict &d) {
  contract::ScoreOptions::forEachField(s, [&](const char *name, auto &field) {
    d[name] = detail::scoreToPy(field);
  });
}

/// The configuration of a dict; absent keys keep the defaults of
/// contract::AttentionConfig, None means the default (of sm_scale and the
/// other score options too).
inline contract::AttentionConfig attentionConfigFromDict(const py::dict &d) {
  namespace key = contract::key;
  using namespace contract;
  static const char *const known[] = {
      key::kQDType,   key::kKvDType,   key::kODType,     key::kKvScale,
      key::kHeadDim,  key::kHeadDimVo, key::kNumQoHeads, key::kNumKvHeads,
      key::kPageSize, key::kKvLayout,  key::kKvForm,     key::kLseBase};
  for (auto item : d) {
    const std::string k = py::str(item.first);
    bool ok = false;
    for (const char *n : known)
      ok = ok || k == n;
    ScoreOptions::forEachMember(
        [&](const char *n, auto) { ok = ok || k == n; });
    if (!ok)
      throw py::value_error("attention configuration: unknown key '" + k + "'");
  }
  auto has = [&](const char *k) { return d.contains(k) && !d[k].is_none(); };
  auto text = [&](const char *k) { return std::string(py::str(d[k])); };
  auto bad = [&](const char *k, const std::string &allowed) {
    return py::value_error("attention configuration: " + std::string(k) +
                           " must be " + allowed + ", got '" + text(k) + "'");
  };
  AttentionConfig c;
  auto dtype = [&](const char *k, DType &out) {
    if (has(k) && !parseDType(text(k), out))
      throw bad(k, "f16, bf16, f32, f8e4m3 or f8e5m2");
  };
  dtype(key::kQDType, c.qType);
  c.kvType = c.oType = c.qType;
  dtype(key::kKvDType, c.kvType);
  dtype(key::kODType, c.oType);
  auto i64 = [&](const char *k, int64_t &out) {
    if (has(k))
      out = d[k].cast<int64_t>();
  };
  i64(key::kHeadDim, c.headDim);
  // Absent or None: head_dim's (0); head_dim itself is the same.
  i64(key::kHeadDimVo, c.headDimVo);
  i64(key::kNumQoHeads, c.numQoHeads);
  i64(key::kNumKvHeads, c.numKvHeads);
  i64(key::kPageSize, c.pageSize);
  if (has(key::kKvScale) && !parseKvScale(text(key::kKvScale), c.kvScale))
    throw bad(key::kKvScale, "none or per_tensor");
  if (has(key::kKvLayout) && !parseKvLayout(text(key::kKvLayout), c.layout))
    throw bad(key::kKvLayout, "'nhd' or 'hnd'");
  if (has(key::kKvForm) && !parseKvForm(text(key::kKvForm), c.form))
    throw bad(key::kKvForm, "'pool', 'pair' or 'ragged'");
  scoreOptionsFromDict(d, c.score, "attention configuration: ",
                       [](const char *name) { return std::string(name); });
  if (has(key::kLseBase) && !parseLseBase(text(key::kLseBase), c.lseBase))
    throw bad(key::kLseBase, "2 or e");
  const std::string why = c.validate();
  if (!why.empty())
    throw py::value_error("attention configuration: " + why);
  return c;
}

/// The dict of a configuration (every key; sm_scale None for the default,
/// head_dim_vo the head_dim of v and the output, head_dim's when the same).
inline py::dict attentionConfigToDict(const contract::AttentionConfig &c) {
  namespace key = contract::key;
  using namespace contract;
  py::dict d;
  d[key::kQDType] = dtypeName(c.qType);
  d[key::kKvDType] = dtypeName(c.kvType);
  d[key::kODType] = dtypeName(c.oType);
  d[key::kKvScale] = kvScaleName(c.kvScale);
  d[key::kHeadDim] = c.headDim;
  d[key::kHeadDimVo] = c.vDim();
  d[key::kNumQoHeads] = c.numQoHeads;
  d[key::kNumKvHeads] = c.numKvHeads;
  d[key::kPageSize] = c.pageSize;
  d[key::kKvLayout] = kvLayoutName(c.layout);
  d[key::kKvForm] = kvFormName(c.form);
  scoreOptionsToDict(c.score, d);
  d[key::kLseBase] = lseBaseName(c.lseBase);
  return d;
}

/// `_attention_config(dict)` (normalised dict) and `_attention_config_key
/// (dict)` (the C++ spelling of the bundle key): the tests check the Python
/// dataclass against the contract with them.
inline void registerAttentionConfig(py::module_ &m) {
  m.def(
      "_attention_config",
      [](const py::dict &d) {
        return attentionConfigToDict(attentionConfigFromDict(d));
      },
      py::arg("config"),
      "The configuration dict as C++ reads it (cascade/Contract).");
  m.def(
      "_attention_config_key",
      [](const py::dict &d) { return attentionConfigFromDict(d).key(); },
      py::arg("config"),
      "contract::AttentionConfig::key() of the configuration dict.");
}

} // namespace cascade::python

#endif // CASCADE_PYTHON_CONFIGDICT_H
