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

#include <string>

namespace cascade::python {

namespace py = pybind11;

/// The configuration of a dict; absent keys keep the defaults of
/// contract::AttentionConfig, None means the default of sm_scale,
/// logits_soft_cap, rope_scale and rope_theta.
inline contract::AttentionConfig attentionConfigFromDict(const py::dict &d) {
  namespace key = contract::key;
  using namespace contract;
  static const char *const known[] = {
      key::kQDType,     key::kKvDType,     key::kODType,
      key::kKvScale,    key::kHeadDim,     key::kNumQoHeads,
      key::kNumKvHeads, key::kPageSize,    key::kKvLayout,
      key::kKvForm,     key::kSmScale,     key::kLogitsSoftCap,
      key::kWindowLeft, key::kPosEncoding, key::kRopeScale,
      key::kRopeTheta,  key::kLseBase};
  for (auto item : d) {
    const std::string k = py::str(item.first);
    bool ok = false;
    for (const char *n : known)
      ok = ok || k == n;
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
  i64(key::kNumQoHeads, c.numQoHeads);
  i64(key::kNumKvHeads, c.numKvHeads);
  i64(key::kPageSize, c.pageSize);
  i64(key::kWindowLeft, c.windowLeft);
  auto f32 = [&](const char *k, float &out) {
    if (has(k))
      out = static_cast<float>(d[k].cast<double>());
  };
  if (has(key::kSmScale))
    c.smScale = static_cast<float>(d[key::kSmScale].cast<double>());
  f32(key::kLogitsSoftCap, c.logitsSoftCap);
  f32(key::kRopeScale, c.ropeScale);
  f32(key::kRopeTheta, c.ropeTheta);
  if (has(key::kKvScale) && !parseKvScale(text(key::kKvScale), c.kvScale))
    throw bad(key::kKvScale, "none or per_tensor");
  if (has(key::kKvLayout) && !parseKvLayout(text(key::kKvLayout), c.layout))
    throw bad(key::kKvLayout, "'nhd' or 'hnd'");
  if (has(key::kKvForm) && !parseKvForm(text(key::kKvForm), c.form))
    throw bad(key::kKvForm, "'pool', 'pair' or 'ragged'");
  if (has(key::kPosEncoding) &&
      !parsePosEncoding(text(key::kPosEncoding), c.pos))
    throw bad(key::kPosEncoding, "none, rope_llama or alibi");
  if (has(key::kLseBase) && !parseLseBase(text(key::kLseBase), c.lseBase))
    throw bad(key::kLseBase, "2 or e");
  const std::string why = c.validate();
  if (!why.empty())
    throw py::value_error("attention configuration: " + why);
  return c;
}

/// The dict of a configuration (every key; sm_scale None for the default).
inline py::dict attentionConfigToDict(const contract::AttentionConfig &c) {
  namespace key = contract::key;
  using namespace contract;
  py::dict d;
  d[key::kQDType] = dtypeName(c.qType);
  d[key::kKvDType] = dtypeName(c.kvType);
  d[key::kODType] = dtypeName(c.oType);
  d[key::kKvScale] = kvScaleName(c.kvScale);
  d[key::kHeadDim] = c.headDim;
  d[key::kNumQoHeads] = c.numQoHeads;
  d[key::kNumKvHeads] = c.numKvHeads;
  d[key::kPageSize] = c.pageSize;
  d[key::kKvLayout] = kvLayoutName(c.layout);
  d[key::kKvForm] = kvFormName(c.form);
  d[key::kSmScale] =
      c.smScale ? py::object(py::float_(*c.smScale)) : py::object(py::none());
  d[key::kLogitsSoftCap] = c.logitsSoftCap;
  d[key::kWindowLeft] = c.windowLeft;
  d[key::kPosEncoding] = posEncodingName(c.pos);
  d[key::kRopeScale] = c.ropeScale;
  d[key::kRopeTheta] = c.ropeTheta;
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
