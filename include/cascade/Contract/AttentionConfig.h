//===- AttentionConfig.h - The static attention configuration ---*- C++ -*-===//
//
// What an attention kernel is specialised on, besides the kernel kind
// (decode or prefill, causal, accumulating, split) and the tuning
// (#cascade.kernel_config): dtypes of q, KV and the output (separate), the
// KV scaling, head counts, head_dim, page size, KV layout and form, and the
// score options (docs/semantics.md). One type for the compiler's Python
// builders, the Python bindings' run() checks and the runtime's plan inputs;
// the Python package's `AttentionConfig` dataclass is its mirror, and
// `key()` spells it as the package's bundle keys do (docs/python.md).
// Header-only, no MLIR, C++17.
//
//===----------------------------------------------------------------------===//

#ifndef CASCADE_CONTRACT_ATTENTIONCONFIG_H
#define CASCADE_CONTRACT_ATTENTIONCONFIG_H

#include "cascade/Contract/BundleContract.h"
#include "cascade/Contract/DType.h"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>

namespace cascade::contract {

enum class KvLayout { NHD, HND };
/// A 5-D page pool [pages, 2, ...], a (k, v) pair of 4-D pools, or ragged
/// K/V: a (k, v) pair without a page table (request i's pages are
/// kv_indptr[i] onwards; at page size 1, contiguous [tokens, Hkv, D] K and V).
enum class KvForm { Pool, Pair, Ragged };
enum class PosEncoding { None, RopeLlama, ALiBi };
enum class LseBase { Base2, BaseE };
/// How KV values are scaled: not at all (f16/bf16 KV), or by one scale per
/// tensor (fp8 KV; reserved, no kernel reads it yet).
enum class KvScale { None, PerTensor };

// Names, as the manifest's statics and the configuration dict spell them.
constexpr const char *kvLayoutName(KvLayout l) {
  return l == KvLayout::HND ? "hnd" : "nhd";
}
constexpr const char *kvFormName(KvForm f) {
  return f == KvForm::Pair ? "pair" : f == KvForm::Ragged ? "ragged" : "pool";
}
constexpr const char *posEncodingName(PosEncoding p) {
  return p == PosEncoding::RopeLlama ? "rope_llama"
         : p == PosEncoding::ALiBi   ? "alibi"
                                     : "none";
}
constexpr const char *lseBaseName(LseBase b) {
  return b == LseBase::BaseE ? "e" : "2";
}
constexpr const char *kvScaleName(KvScale s) {
  return s == KvScale::PerTensor ? "per_tensor" : "none";
}

constexpr bool parseKvLayout(std::string_view s, KvLayout &out) {
  if (s == "nhd" || s == "NHD")
    return out = KvLayout::NHD, true;
  if (s == "hnd" || s == "HND")
    return out = KvLayout::HND, true;
  return false;
}
constexpr bool parseKvForm(std::string_view s, KvForm &out) {
  if (s == "pool")
    return out = KvForm::Pool, true;
  if (s == "pair")
    return out = KvForm::Pair, true;
  if (s == "ragged")
    return out = KvForm::Ragged, true;
  return false;
}
constexpr bool parsePosEncoding(std::string_view s, PosEncoding &out) {
  if (s == "none" || s == "NONE")
    return out = PosEncoding::None, true;
  if (s == "rope_llama" || s == "ROPE_LLAMA")
    return out = PosEncoding::RopeLlama, true;
  if (s == "alibi" || s == "ALIBI")
    return out = PosEncoding::ALiBi, true;
  return false;
}
constexpr bool parseLseBase(std::string_view s, LseBase &out) {
  if (s == "2" || s == "base2")
    return out = LseBase::Base2, true;
  if (s == "e" || s == "base_e")
    return out = LseBase::BaseE, true;
  return false;
}
constexpr bool parseKvScale(std::string_view s, KvScale &out) {
  if (s == "none")
    return out = KvScale::None, true;
  if (s == "per_tensor")
    return out = KvScale::PerTensor, true;
  return false;
}

/// The options that transform or mask a score (docs/semantics.md), as one
/// unit: the IR's attention attributes, the configuration dict's keys and
/// the manifest's statics spell them as forEachField names them.
struct ScoreOptions {
  /// Absent: 1 / sqrt(head_dim).
  std::optional<float> smScale;
  /// 0: off; else cap * tanh(x / cap).
  float logitsSoftCap = 0.f;
  /// -1: off; else a query at position p sees the keys >= p - window.
  int64_t windowLeft = -1;
  PosEncoding pos = PosEncoding::None;
  float ropeScale = 1.f, ropeTheta = 1e4f;

  /// The field table: calls f(name, &ScoreOptions::field) for every field,
  /// in this order. The names are the IR attributes' and the dict's keys.
  template <class F> static void forEachMember(F &&f) {
    f("sm_scale", &ScoreOptions::smScale);
    f("logits_soft_cap", &ScoreOptions::logitsSoftCap);
    f("window_left", &ScoreOptions::windowLeft);
    f("pos_encoding", &ScoreOptions::pos);
    f("rope_scale", &ScoreOptions::ropeScale);
    f("rope_theta", &ScoreOptions::ropeTheta);
  }
  /// Calls f(name, s.field) for every field (Self: ScoreOptions, const or
  /// not).
  template <class Self, class F> static void forEachField(Self &s, F &&f) {
    forEachMember([&](const char *name, auto member) { f(name, s.*member); });
  }

  /// One field's values compare equal: floats by their bits (so a NaN
  /// option equals itself and -0 differs from 0, as the kernel names do).
  static bool same(float a, float b) { return bits(a) == bits(b); }
  static bool same(const std::optional<float> &a,
                   const std::optional<float> &b) {
    return a.has_value() == b.has_value() && (!a || same(*a, *b));
  }
  static bool same(int64_t a, int64_t b) { return a == b; }
  static bool same(PosEncoding a, PosEncoding b) { return a == b; }

  bool operator==(const ScoreOptions &o) const {
    bool eq = true;
    forEachMember(
        [&](const char *, auto m) { eq = eq && same(this->*m, o.*m); });
    return eq;
  }
  bool operator!=(const ScoreOptions &o) const { return !(*this == o); }

  float effectiveSmScale(int64_t headDim) const {
    return smScale ? *smScale : defaultSmScale(headDim);
  }
  static float defaultSmScale(int64_t headDim) {
    return float(1.0 / std::sqrt(double(headDim)));
  }
  bool alibi() const { return pos == PosEncoding::ALiBi; }
  bool rope() const { return pos == PosEncoding::RopeLlama; }
  bool softCapped() const { return logitsSoftCap != 0.f; }
  bool windowed() const { return windowLeft >= 0; }
  /// Scores need no transformation besides the scale (no soft cap, no
  /// ALiBi): the scale then folds into the exponent.
  bool plainScores() const { return !softCapped() && !alibi(); }

  /// The first thing wrong with the options, "" if nothing is (the IR
  /// verifier's messages; floats as MLIR diagnostics print them).
  std::string validate() const {
    auto positive = [](float f) { return std::isfinite(f) && f > 0.f; };
    if (smScale && !positive(*smScale))
      return "sm_scale must be finite and > 0, got " + diagFloat(*smScale);
    if (!(std::isfinite(logitsSoftCap) && logitsSoftCap >= 0.f))
      return "logits_soft_cap must be finite and >= 0 (0 = off), got " +
             diagFloat(logitsSoftCap);
    if (windowLeft < -1)
      return "window_left must be >= -1 (-1 = off), got " +
             std::to_string(windowLeft);
    if (!positive(ropeScale))
      return "rope_scale must be finite and > 0, got " + diagFloat(ropeScale);
    if (!positive(ropeTheta))
      return "rope_theta must be finite and > 0, got " + diagFloat(ropeTheta);
    return "";
  }

  /// The options' part of a bundle key (AttentionConfig::key()): those
  /// that differ from their defaults, floats as their IEEE bits in hex.
  std::string keySuffix(int64_t headDim) const {
    std::string s;
    if (smScale && bits(*smScale) != bits(defaultSmScale(headDim)))
      s += ".sm" + hex(*smScale);
    if (softCapped())
      s += ".cap" + hex(logitsSoftCap);
    if (windowed())
      s += ".win" + std::to_string(windowLeft);
    if (rope())
      s += ".rope" + hex(ropeScale) + "x" + hex(ropeTheta);
    if (alibi())
      s += ".alibi";
    return s;
  }

  static uint32_t bits(float f) {
    uint32_t u;
    std::memcpy(&u, &f, sizeof u);
    return u;
  }
  static std::string hex(float f) {
    static const char digits[] = "0123456789abcdef";
    uint32_t u = bits(f);
    std::string s(8, '0');
    for (int i = 7; i >= 0; --i, u >>= 4)
      s[i] = digits[u & 0xf];
    return s;
  }
  /// As llvm::raw_ostream prints a double (MLIR diagnostics): "%e", "nan",
  /// "INF" / "-INF".
  static std::string diagFloat(double d) {
    if (std::isnan(d))
      return "nan";
    if (std::isinf(d))
      return d < 0 ? "-INF" : "INF";
    char buf[32];
    std::snprintf(buf, sizeof buf, "%e", d);
    return buf;
  }
};

/// The static configuration of an attention call.
struct AttentionConfig {
  DType qType = DType::F16, kvType = DType::F16, oType = DType::F16;
  KvScale kvScale = KvScale::None;
  int64_t numQoHeads = 32, numKvHeads = 8, headDim = 128, pageSize = 16;
  /// The head_dim of v and the output where it differs from q's and k's
  /// (`headDim`), as in DeepSeek's prefill (192 / 128); 0: the same.
  int64_t headDimVo = 0;
  KvLayout layout = KvLayout::NHD;
  KvForm form = KvForm::Pool;
  ScoreOptions score;
  LseBase lseBase = LseBase::Base2;

  int64_t groupSize() const {
    return numKvHeads > 0 ? numQoHeads / numKvHeads : 0;
  }
  float effectiveSmScale() const { return score.effectiveSmScale(headDim); }
  /// The head_dim of v and the output.
  int64_t vDim() const { return headDimVo > 0 ? headDimVo : headDim; }
  /// v and the output have a head_dim of their own.
  bool splitHeadDims() const { return vDim() != headDim; }

  /// Field by field; the score options as ScoreOptions compares them.
  bool operator==(const AttentionConfig &o) const {
    return qType == o.qType && kvType == o.kvType && oType == o.oType &&
           kvScale == o.kvScale && numQoHeads == o.numQoHeads &&
           numKvHeads == o.numKvHeads && headDim == o.headDim &&
           vDim() == o.vDim() && pageSize == o.pageSize && layout == o.layout &&
           form == o.form && score == o.score && lseBase == o.lseBase;
  }
  bool operator!=(const AttentionConfig &o) const { return !(*this == o); }

  /// The first thing wrong with the configuration, "" if nothing is.
  std::string validate() const {
    if (numQoHeads <= 0 || numKvHeads <= 0 || headDim <= 0 || pageSize <= 0)
      return "head_dim, num_qo_heads, num_kv_heads and page_size must be "
             "positive";
    if (headDimVo < 0)
      return "head_dim_vo must be positive (0: head_dim's)";
    if (splitHeadDims() && form == KvForm::Pool)
      return "head_dim_vo (" + std::to_string(vDim()) +
             ") differs from head_dim (" + std::to_string(headDim) +
             "): k and v need a cache each (a pair or ragged K/V), not one "
             "pool";
    if (vDim() > headDim)
      return "head_dim_vo (" + std::to_string(vDim()) +
             ") larger than head_dim (" + std::to_string(headDim) +
             ") is not supported: the kernels compute v's columns within "
             "q's and k's";
    return score.validate();
  }

  /// The configuration's part of a kernel bundle key, as the Python package
  /// spells it (`<q>-<kv>.d<D>.h<Hqo>x<Hkv>.p<page>.<layout>.<form>`, then
  /// the options that differ from their defaults, floats as their IEEE bits
  /// in hex, then `.dv<D>` for a head_dim of v and o of their own):
  /// `f16-f16.d128.h32x8.p16.nhd.pool`.
  std::string key() const {
    std::string s = std::string(dtypeName(qType)) + "-" + dtypeName(kvType) +
                    ".d" + std::to_string(headDim) + ".h" +
                    std::to_string(numQoHeads) + "x" +
                    std::to_string(numKvHeads) + ".p" +
                    std::to_string(pageSize) + "." + kvLayoutName(layout) +
                    "." + kvFormName(form) + score.keySuffix(headDim);
    if (splitHeadDims())
      s += ".dv" + std::to_string(vDim());
    if (oType != qType)
      s += std::string(".o") + dtypeName(oType);
    if (kvScale != KvScale::None)
      s += std::string(".kvscale_") + kvScaleName(kvScale);
    if (lseBase == LseBase::BaseE)
      s += ".lsee";
    return s;
  }
};

} // namespace cascade::contract

#endif // CASCADE_CONTRACT_ATTENTIONCONFIG_H
