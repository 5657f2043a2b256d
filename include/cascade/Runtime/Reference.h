//===- Reference.h - CPU reference of every cascade op ----------*- C++ -*-===//
//
// Straightforward float64-accumulating implementations of the ops of
// docs/semantics.md: the three merges, paged attention (decode and
// prefill, NHD/HND, 5-D pool or k/v pair, causal, sm_scale, soft cap,
// sliding window, RoPE-llama on the fly, ALiBi, FlashInfer's bit-packed
// custom masks) and multi-level cascades.
// LSEs are base 2; the empty state is (0, -inf). Used by the unit tests and
// by the GPU checks (test/Integration/runtime).
//
//===----------------------------------------------------------------------===//

#ifndef CASCADE_RUNTIME_REFERENCE_H
#define CASCADE_RUNTIME_REFERENCE_H

#include "cascade/Contract/AttentionConfig.h"
#include "cascade/Runtime/Plan.h"
#include "cascade/Runtime/Status.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

namespace cascade::runtime::ref {

//===----------------------------------------------------------------------===//
// Merges (V: float or double values, S: float or double LSEs)
//===----------------------------------------------------------------------===//

/// Merges `n` states (v_i [D] at v[i*vStride], s_i at s[i*sStride]) into
/// (outV [D], outS), in float64. Terms of weight 0 are skipped, so merging
/// with an empty state returns the other state exactly, and merging only
/// empty states gives (0, -inf).
template <typename V, typename S>
void mergeRow(int64_t n, const V *const *v, const S *s, int64_t headDim,
              V *outV, S *outS) {
  double m = -std::numeric_limits<double>::infinity();
  for (int64_t i = 0; i < n; ++i)
    m = std::max(m, static_cast<double>(s[i]));
  if (m == -std::numeric_limits<double>::infinity() || std::isnan(m)) {
    for (int64_t d = 0; d < headDim; ++d)
      outV[d] = V(0);
    *outS = static_cast<S>(m);
    return;
  }
  double denom = 0;
  std::vector<double> acc(static_cast<size_t>(headDim), 0.0);
  for (int64_t i = 0; i < n; ++i) {
    double w = std::exp2(static_cast<double>(s[i]) - m);
    if (w == 0)
      continue;
    denom += w;
    for (int64_t d = 0; d < headDim; ++d)
      acc[d] += w * static_cast<double>(v[i][d]);
  }
  for (int64_t d = 0; d < headDim; ++d)
    outV[d] = static_cast<V>(acc[d] / denom);
  *outS = static_cast<S>(m + std::log2(denom));
}

/// merge_state: v_* [L, H, D], s_* [L, H].
template <typename V, typename S>
void mergeState(const V *vA, const S *sA, const V *vB, const S *sB, V *vOut,
                S *sOut, int64_t rows, int64_t heads, int64_t headDim) {
  for (int64_t r = 0; r < rows * heads; ++r) {
    const V *v[2] = {vA + r * headDim, vB + r * headDim};
    const S s[2] = {sA[r], sB[r]};
    mergeRow<V, S>(2, v, s, headDim, vOut + r * headDim, sOut + r);
  }
}

/// merge_state_in_place: rows whose mask[row * maskStride] is 0 are left
/// untouched (mask == nullptr: every row).
template <typename V, typename S>
void mergeStateInPlace(V *v, S *s, const V *vOther, const S *sOther,
                       const uint8_t *mask, int64_t maskStride, int64_t rows,
                       int64_t heads, int64_t headDim) {
  std::vector<V> tmp(static_cast<size_t>(headDim));
  for (int64_t row = 0; row < rows; ++row) {
    if (mask && mask[row * maskStride] == 0)
      continue;
    for (int64_t h = 0; h < heads; ++h) {
      int64_t r = row * heads + h;
      const V *in[2] = {v + r * headDim, vOther + r * headDim};
      const S sIn[2] = {s[r], sOther[r]};
      S sNew;
      mergeRow<V, S>(2, in, sIn, headDim, tmp.data(), &sNew);
      for (int64_t d = 0; d < headDim; ++d)
        v[r * headDim + d] = tmp[d];
      s[r] = sNew;
    }
  }
}

/// merge_states: v [L, N, H, D], s [L, N, H] -> vOut [L, H, D], sOut [L, H].
template <typename V, typename S>
void mergeStates(const V *v, const S *s, V *vOut, S *sOut, int64_t rows,
                 int64_t numStates, int64_t heads, int64_t headDim) {
  std::vector<const V *> ptrs(static_cast<size_t>(numStates));
  std::vector<S> lse(static_cast<size_t>(numStates));
  for (int64_t row = 0; row < rows; ++row)
    for (int64_t h = 0; h < heads; ++h) {
      for (int64_t i = 0; i < numStates; ++i) {
        ptrs[i] = v + ((row * numStates + i) * heads + h) * headDim;
        lse[i] = s[(row * numStates + i) * heads + h];
      }
      mergeRow<V, S>(numStates, ptrs.data(), lse.data(), headDim,
                     vOut + (row * heads + h) * headDim,
                     sOut + row * heads + h);
    }
}

//===----------------------------------------------------------------------===//
// Paged attention
//===----------------------------------------------------------------------===//

enum class KvLayout { NHD, HND };

/// A paged KV cache over float data (convert fp16/bf16 with Half.h).
struct PagedKvCache {
  const float *k = nullptr; ///< keys of page 0
  const float *v = nullptr; ///< values of page 0
  int64_t pageStride = 0;   ///< elements from one page to the next
  int64_t numPages = 0, pageSize = 0, numKvHeads = 0, headDim = 0;
  /// v's head_dim where it differs from k's (a pair only; 0: headDim), and
  /// v's page stride then.
  int64_t vHeadDim = 0, vPageStride = 0;
  KvLayout layout = KvLayout::NHD;

  int64_t vDim() const { return vHeadDim > 0 ? vHeadDim : headDim; }

  /// One tensor [P, 2, page, Hkv, D] (NHD) or [P, 2, Hkv, page, D] (HND).
  static PagedKvCache combined(const float *pool, int64_t numPages,
                               int64_t pageSize, int64_t numKvHeads,
                               int64_t headDim, KvLayout layout);
  /// Two tensors [P, page, Hkv, D] (NHD) or [P, Hkv, page, D] (HND); v's
  /// last dim is `vHeadDim` where given (> 0).
  static PagedKvCache pair(const float *k, const float *v, int64_t numPages,
                           int64_t pageSize, int64_t numKvHeads,
                           int64_t headDim, KvLayout layout,
                           int64_t vHeadDim = 0);

  /// Element offset of (page, slot, head, 0) from k (or v).
  int64_t offset(int64_t page, int64_t slot, int64_t head) const {
    int64_t inPage = layout == KvLayout::NHD
                         ? (slot * numKvHeads + head) * headDim
                         : (head * pageSize + slot) * headDim;
    return page * pageStride + inPage;
  }
  /// Element offset of (page, slot, head, 0) from v.
  int64_t vOffset(int64_t page, int64_t slot, int64_t head) const {
    if (vDim() == headDim)
      return offset(page, slot, head);
    int64_t dv = vDim();
    int64_t inPage = layout == KvLayout::NHD ? (slot * numKvHeads + head) * dv
                                             : (head * pageSize + slot) * dv;
    return page * vPageStride + inPage;
  }
};

struct AttentionOptions {
  bool causal = false;
  /// sm_scale, soft cap, sliding window, position encoding
  /// (docs/semantics.md); checked by ScoreOptions::validate().
  contract::ScoreOptions score;
  /// fp8 KV dequantization (docs/semantics.md): k_scale multiplies the
  /// logits (with sm_scale), v_scale the output; 1 for f16/bf16 KV.
  double kScale = 1;
  double vScale = 1;
  /// The state inputs (docs/semantics.md, "State inputs"), by name:
  /// numQoHeads values each, folded into each head's final state once (a
  /// cascade's, not each level's). validateOptions refuses a name the
  /// reference does not know.
  std::vector<std::pair<std::string, const float *>> stateInputs;
};

/// Checks the options: the score options, and that each state input is
/// one the reference knows.
Status validateOptions(const AttentionOptions &opts);

/// One attention level over a paged cache.
struct AttentionBatch {
  const float *q = nullptr; ///< [rows, Hqo, D]
  int64_t numQoHeads = 0;
  std::vector<int32_t> qoIndptr;      ///< [B+1]
  std::vector<int32_t> kvIndptr;      ///< [B+1]
  std::vector<int32_t> kvIndices;     ///< [kvIndptr[B]]
  std::vector<int32_t> kvLastPageLen; ///< [B]
  PagedKvCache kv;
  /// FlashInfer's custom mask (empty: none): request i's [qo_len, kv_len]
  /// visibility, row-major, packed little-endian (bit j of a byte is element
  /// 8 * byte + j) from byte maskIndptr[i]. It replaces the causal mask
  /// (the sliding window still applies).
  std::vector<uint8_t> customMask;
  std::vector<int32_t> maskIndptr; ///< [B+1] byte offsets, or empty
};

/// Checks one level before any data is read: q, k and v present, positive
/// head dims (any width: the reference has no kernel limit), and the index
/// arrays, heads and page size as a plan takes them (validatePlanInputs),
/// and the custom mask's extent. attention() and its kin call it first.
Status validateBatch(const AttentionBatch &batch);

/// FlashInfer's ALiBi slope of head `head` out of `numHeads`.
double alibiSlope(int64_t head, int64_t numHeads);

/// kv_len of request i.
int64_t kvLength(const AttentionBatch &batch, int64_t request);

/// The state of every query row of request `request` over the keys in
/// [kvBegin, kvEnd) of that request (clipped to kv_len; kvEnd < 0 means to
/// the end), masks applied with positions relative to the whole request.
/// outV [qo_len, Hqo, Dv] (Dv: v's head_dim), outS [qo_len, Hqo].
Status attentionRequest(const AttentionBatch &batch,
                        const AttentionOptions &opts, int64_t request,
                        int64_t kvBegin, int64_t kvEnd, double *outV,
                        double *outS);

/// The state of every query row: outV [rows, Hqo, D], outS [rows, Hqo].
Status attention(const AttentionBatch &batch, const AttentionOptions &opts,
                 double *outV, double *outS);

/// Emulates a split-KV plan: one state per work item (chunks of
/// plan.kv_chunk_size tokens), merged per row through merge_indptr. Must
/// equal attention() up to rounding.
Status attentionSplit(const AttentionBatch &batch, const AttentionOptions &opts,
                      const Plan &plan, double *outV, double *outS);

/// Folds opts' state inputs into every row of (v [rows, Hqo, D],
/// s [rows, Hqo]), in order; nothing without them.
void applyStateInputs(const AttentionOptions &opts, int64_t rows,
                      int64_t numQoHeads, int64_t headDim, double *v,
                      double *s);

/// A multi-level cascade: the merge of every level's state, causal (if
/// opts.causal) on the last level only, and the state inputs (if any)
/// once.
Status cascade(const std::vector<AttentionBatch> &levels,
               const AttentionOptions &opts, double *outV, double *outS);

} // namespace cascade::runtime::ref

#endif // CASCADE_RUNTIME_REFERENCE_H
