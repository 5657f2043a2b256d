//===- BundleKey.h - Kernel bundle keys -------------------------*- C++ -*-===//
//
// A kernel bundle's key names what the bundle holds, and is the name of its
// directory in a kernel cache (`<root>/<chip>/<key>/`):
//
//   attention: `<group>.<AttentionConfig::key()>`, the group
//              `decode|prefill` then `-causal`, `-acc`, `-mask` in that
//              order, then `-<name>` for each state input the kernels take
//              (`prefill-causal-acc.f16-f16.d128.h32x8.p16.nhd.pool`);
//   merges:    `merge.<v dtype>.d<head_dim>` (`merge.f16.d128`).
//
// The Python package spells keys the same way (cascade_mlir.kernels); a key
// is accepted only in its normal spelling, so that one configuration has one
// key. Header-only, no MLIR, C++17.
//
//===----------------------------------------------------------------------===//

#ifndef CASCADE_CONTRACT_BUNDLEKEY_H
#define CASCADE_CONTRACT_BUNDLEKEY_H

#include "cascade/Contract/AttentionConfig.h"

#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

namespace cascade::contract {

/// The kind of attention level a bundle's kernels compute (each group
/// yields an unsplit and a split-KV kernel).
struct AttentionGroup {
  bool decode = true, causal = false, accumulate = false, customMask = false;
  /// The state inputs the kernels take (docs/kernel-bundle.md): f32
  /// [num_qo_heads] buffers, each a kernel parameter of its name, which the
  /// compiler knows by name and the runtime binds by name.
  std::vector<std::string> stateInputs;

  std::string name() const {
    std::string s = std::string(decode ? "decode" : "prefill") +
                    (causal ? "-causal" : "") + (accumulate ? "-acc" : "") +
                    (customMask ? "-mask" : "");
    for (const std::string &in : stateInputs)
      s += "-" + in;
    return s;
  }
  bool operator==(const AttentionGroup &o) const { return name() == o.name(); }
};

struct BundleKey {
  enum class Kind { Attention, Merge };
  Kind kind = Kind::Attention;
  /// Kind::Attention.
  AttentionConfig config;
  AttentionGroup group;
  /// Kind::Merge: the states' value type and head_dim.
  DType vType = DType::F16;
  int64_t headDim = 128;

  std::string str() const {
    if (kind == Kind::Merge)
      return std::string("merge.") + dtypeName(vType) + ".d" +
             std::to_string(headDim);
    return group.name() + "." + config.key();
  }
};

namespace detail {
inline std::vector<std::string_view> splitKey(std::string_view s, char sep) {
  std::vector<std::string_view> parts;
  size_t start = 0;
  for (size_t i = 0; i <= s.size(); ++i)
    if (i == s.size() || s[i] == sep) {
      parts.push_back(s.substr(start, i - start));
      start = i + 1;
    }
  return parts;
}
/// A decimal integer > 0 (or >= 0 with allowZero), nothing else.
inline bool parseCount(std::string_view s, int64_t &out,
                       bool allowZero = false) {
  if (s.empty() || s.size() > 12)
    return false;
  int64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9')
      return false;
    v = v * 10 + (c - '0');
  }
  if (v == 0 && !allowZero)
    return false;
  out = v;
  return true;
}
/// Eight hex digits: a float's IEEE bits.
inline bool parseFloatBits(std::string_view s, float &out) {
  if (s.size() != 8)
    return false;
  uint32_t u = 0;
  for (char c : s) {
    int d = c >= '0' && c <= '9'   ? c - '0'
            : c >= 'a' && c <= 'f' ? c - 'a' + 10
                                   : -1;
    if (d < 0)
      return false;
    u = u << 4 | uint32_t(d);
  }
  std::memcpy(&out, &u, sizeof out);
  return true;
}
/// A state input's name: lower-case letters and underscores, not one of
/// the group's flags.
inline bool isStateInputName(std::string_view s) {
  return !s.empty() && s != "causal" && s != "acc" && s != "mask" &&
         s != "decode" && s != "prefill" &&
         s.find_first_not_of("abcdefghijklmnopqrstuvwxyz_") ==
             std::string_view::npos;
}
/// How many of `names` are `s`.
inline size_t countOf(const std::vector<std::string> &names,
                      std::string_view s) {
  size_t n = 0;
  for (const std::string &name : names)
    n += name == s ? 1 : 0;
  return n;
}
inline bool startsWith(std::string_view s, std::string_view p) {
  return s.substr(0, p.size()) == p;
}

/// One option segment of AttentionConfig::key() after the layout and form.
inline bool parseConfigOption(std::string_view p, AttentionConfig &c) {
  ScoreOptions &o = c.score;
  float f;
  if (startsWith(p, "sm"))
    return parseFloatBits(p.substr(2), f) && (o.smScale = f, true);
  if (startsWith(p, "cap"))
    return parseFloatBits(p.substr(3), o.logitsSoftCap);
  if (startsWith(p, "win"))
    return parseCount(p.substr(3), o.windowLeft, /*allowZero=*/true);
  if (startsWith(p, "rope")) {
    auto st = splitKey(p.substr(4), 'x');
    o.pos = PosEncoding::RopeLlama;
    return st.size() == 2 && parseFloatBits(st[0], o.ropeScale) &&
           parseFloatBits(st[1], o.ropeTheta);
  }
  if (p == "alibi")
    return o.pos = PosEncoding::ALiBi, true;
  if (p == "lsee")
    return c.lseBase = LseBase::BaseE, true;
  if (startsWith(p, "dv"))
    return parseCount(p.substr(2), c.headDimVo);
  if (startsWith(p, "kvscale_"))
    return parseKvScale(p.substr(8), c.kvScale);
  if (startsWith(p, "o"))
    return parseDType(p.substr(1), c.oType);
  return false;
}

inline bool parseGroup(std::string_view s, AttentionGroup &g) {
  auto parts = splitKey(s, '-');
  if (parts[0] != "decode" && parts[0] != "prefill")
    return false;
  g.decode = parts[0] == "decode";
  for (size_t i = 1; i < parts.size(); ++i) {
    if (parts[i] == "causal")
      g.causal = true;
    else if (parts[i] == "acc")
      g.accumulate = true;
    else if (parts[i] == "mask")
      g.customMask = true;
    else if (isStateInputName(parts[i]) &&
             countOf(g.stateInputs, parts[i]) == 0)
      g.stateInputs.emplace_back(parts[i]);
    else
      return false;
  }
  return g.name() == s;
}

inline bool parseAttentionConfig(const std::vector<std::string_view> &parts,
                                 AttentionConfig &c) {
  // <q>-<kv>.d<D>.h<Hqo>x<Hkv>.p<page>.<layout>.<form>[.<option>...]
  if (parts.size() < 7)
    return false;
  auto types = splitKey(parts[1], '-');
  auto heads = splitKey(parts[3].substr(parts[3].empty() ? 0 : 1), 'x');
  if (types.size() != 2 || !parseDType(types[0], c.qType) ||
      !parseDType(types[1], c.kvType) || !startsWith(parts[2], "d") ||
      !parseCount(parts[2].substr(1), c.headDim) ||
      !startsWith(parts[3], "h") || heads.size() != 2 ||
      !parseCount(heads[0], c.numQoHeads) ||
      !parseCount(heads[1], c.numKvHeads) || !startsWith(parts[4], "p") ||
      !parseCount(parts[4].substr(1), c.pageSize) ||
      !parseKvLayout(parts[5], c.layout) || !parseKvForm(parts[6], c.form))
    return false;
  c.oType = c.qType;
  for (size_t i = 7; i < parts.size(); ++i)
    if (!parseConfigOption(parts[i], c))
      return false;
  return true;
}
} // namespace detail

/// Parses `key` into `out`: "" on success, else why it is not a key.
inline std::string parseBundleKey(std::string_view key, BundleKey &out) {
  std::string bad =
      "'" + std::string(key) +
      "' is not a kernel bundle key (e.g. "
      "'decode.f16-f16.d128.h32x8.p16.nhd.pool' or 'merge.f16.d128')";
  auto parts = detail::splitKey(key, '.');
  BundleKey k;
  if (parts[0] == "merge") {
    k.kind = BundleKey::Kind::Merge;
    if (parts.size() != 3 || !parseDType(parts[1], k.vType) ||
        !detail::startsWith(parts[2], "d") ||
        !detail::parseCount(parts[2].substr(1), k.headDim))
      return bad;
  } else {
    if (!detail::parseGroup(parts[0], k.group) ||
        !detail::parseAttentionConfig(parts, k.config))
      return bad;
    if (std::string why = k.config.validate(); !why.empty())
      return bad + ": " + why;
  }
  // One configuration, one key: only the normal spelling is accepted.
  if (k.str() != key)
    return bad + " (not in its normal spelling '" + k.str() + "')";
  out = k;
  return "";
}

} // namespace cascade::contract

#endif // CASCADE_CONTRACT_BUNDLEKEY_H
