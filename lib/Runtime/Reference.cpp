//===- Reference.cpp - CPU reference of every cascade op ------------------===//

#include "cascade/Runtime/Reference.h"

#include <algorithm>
#include <cmath>
#include <string>

namespace cascade::runtime::ref {

namespace {

constexpr double kLog2e = 1.4426950408889634;
constexpr double kNegInf = -std::numeric_limits<double>::infinity();

/// The packed custom mask covers every request's qo_len * kv_len bits.
Status validateCustomMask(const AttentionBatch &batch) {
  if (batch.maskIndptr.empty())
    return batch.customMask.empty()
               ? Status::success()
               : makeError(ErrorCode::InvalidArgument,
                           "a custom mask needs its mask_indptr");
  const int64_t b = int64_t(batch.kvIndptr.size()) - 1;
  if (int64_t(batch.maskIndptr.size()) != b + 1)
    return makeError(ErrorCode::SizeMismatch,
                     "mask_indptr has %lld entries, expected batch_size + 1 "
                     "= %lld",
                     static_cast<long long>(batch.maskIndptr.size()),
                     static_cast<long long>(b) + 1);
  for (int64_t i = 0; i < b; ++i) {
    const int64_t bits = (int64_t(batch.qoIndptr[i + 1]) - batch.qoIndptr[i]) *
                         kvLength(batch, i);
    const int64_t begin = batch.maskIndptr[i], end = batch.maskIndptr[i + 1];
    if (begin < 0 || end - begin < (bits + 7) / 8 ||
        end > int64_t(batch.customMask.size()))
      return makeError(ErrorCode::SizeMismatch,
                       "request %lld: its custom mask is bytes [%lld, %lld) of "
                       "%lld, it needs %lld bytes (qo_len x kv_len bits)",
                       static_cast<long long>(i), static_cast<long long>(begin),
                       static_cast<long long>(end),
                       static_cast<long long>(batch.customMask.size()),
                       static_cast<long long>((bits + 7) / 8));
  }
  return Status::success();
}

/// A state input's fold of its values (one per query head) into every row
/// of (v [rows, Hqo, D], s [rows, Hqo]).
using StateFold = void (*)(const float *values, int64_t rows,
                           int64_t numQoHeads, int64_t headDim, double *v,
                           double *s);

/// Attention sinks: a logit in the units of the scaled scores that joins its
/// head's softmax denominator and attends to no value, i.e. each state
/// merged with (0, sink * log2(e)).
void foldSinks(const float *sinks, int64_t rows, int64_t numQoHeads,
               int64_t headDim, double *v, double *s) {
  std::vector<double> zero(static_cast<size_t>(headDim), 0.0);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t h = 0; h < numQoHeads; ++h) {
      double *row = v + (r * numQoHeads + h) * headDim;
      const double *in[2] = {row, zero.data()};
      double lse[2] = {s[r * numQoHeads + h], double(sinks[h]) * kLog2e};
      mergeRow<double, double>(2, in, lse, headDim, row,
                               s + r * numQoHeads + h);
    }
}

/// The reference's state inputs (the compiler's are in
/// lib/Conversion/CascadeToGPU/common/StateInputs.cpp).
StateFold stateFold(const std::string &name) {
  if (name == "sinks")
    return foldSinks;
  return nullptr;
}
} // namespace

Status validateOptions(const AttentionOptions &opts) {
  const std::string why = opts.score.validate();
  if (!why.empty())
    return makeError(ErrorCode::InvalidArgument, "%s", why.c_str());
  for (const auto &[name, values] : opts.stateInputs) {
    if (!stateFold(name))
      return makeError(ErrorCode::InvalidArgument,
                       "'%s' is not a state input the reference knows",
                       name.c_str());
    if (!values)
      return makeError(ErrorCode::InvalidArgument,
                       "state input '%s' without values", name.c_str());
  }
  return Status::success();
}

namespace {

/// Rotate-half RoPE of x [D] at position pos, into out.
void applyRope(const float *x, double *out, int64_t headDim, double pos,
               const AttentionOptions &opts) {
  const int64_t half = headDim / 2;
  const double theta = opts.score.ropeTheta, scale = opts.score.ropeScale;
  for (int64_t i = 0; i < half; ++i) {
    double freq = std::pow(theta, -2.0 * double(i) / double(headDim)) / scale;
    double angle = pos * freq;
    double c = std::cos(angle), s = std::sin(angle);
    double a = x[i], b = x[i + half];
    out[i] = a * c - b * s;
    out[i + half] = b * c + a * s;
  }
}

} // namespace

Status validateBatch(const AttentionBatch &batch) {
  if (!batch.q || !batch.kv.k || !batch.kv.v)
    return makeError(ErrorCode::InvalidArgument,
                     "reference attention needs q, k and v data");
  PlanInputs in;
  in.mode = PlanMode::Prefill;
  in.qo_indptr = ArrayView<int32_t>(batch.qoIndptr);
  in.kv_indptr = ArrayView<int32_t>(batch.kvIndptr);
  in.kv_indices = ArrayView<int32_t>(batch.kvIndices);
  in.kv_last_page_len = ArrayView<int32_t>(batch.kvLastPageLen);
  in.num_pages = batch.kv.numPages;
  in.num_qo_heads = batch.numQoHeads;
  in.num_kv_heads = batch.kv.numKvHeads;
  // The index arrays and heads as a plan takes them. The head dims are the
  // reference's own: any positive width (the latent form's k is 576 wide),
  // not the kernels' limit that a plan checks.
  if (batch.kv.headDim <= 0 || batch.kv.vDim() <= 0)
    return makeError(ErrorCode::InvalidHeadDim,
                     "reference attention needs positive head dims, got %lld "
                     "and %lld",
                     static_cast<long long>(batch.kv.headDim),
                     static_cast<long long>(batch.kv.vDim()));
  in.head_dim = 8;
  in.page_size = batch.kv.pageSize;
  in.num_sms = 1;
  CASCADE_RETURN_IF_ERROR(validatePlanInputs(in));
  return validateCustomMask(batch);
}

PagedKvCache PagedKvCache::combined(const float *pool, int64_t numPages,
                                    int64_t pageSize, int64_t numKvHeads,
                                    int64_t headDim, KvLayout layout) {
  PagedKvCache c;
  const int64_t perPage = pageSize * numKvHeads * headDim;
  c.k = pool;
  c.v = pool ? pool + perPage : nullptr;
  c.pageStride = 2 * perPage;
  c.numPages = numPages;
  c.pageSize = pageSize;
  c.numKvHeads = numKvHeads;
  c.headDim = headDim;
  c.layout = layout;
  return c;
}

PagedKvCache PagedKvCache::pair(const float *k, const float *v,
                                int64_t numPages, int64_t pageSize,
                                int64_t numKvHeads, int64_t headDim,
                                KvLayout layout, int64_t vHeadDim) {
  PagedKvCache c;
  c.k = k;
  c.v = v;
  c.pageStride = pageSize * numKvHeads * headDim;
  if (vHeadDim > 0 && vHeadDim != headDim) {
    c.vHeadDim = vHeadDim;
    c.vPageStride = pageSize * numKvHeads * vHeadDim;
  }
  c.numPages = numPages;
  c.pageSize = pageSize;
  c.numKvHeads = numKvHeads;
  c.headDim = headDim;
  c.layout = layout;
  return c;
}

double alibiSlope(int64_t head, int64_t numHeads) {
  int64_t n = 1;
  while (n * 2 <= numHeads)
    n *= 2;
  if (head < n)
    return std::exp2(-8.0 * double(head + 1) / double(n));
  return std::exp2(-4.0 * double((head - n) * 2 + 1) / double(n));
}

int64_t kvLength(const AttentionBatch &batch, int64_t request) {
  int64_t pages =
      int64_t(batch.kvIndptr[request + 1]) - batch.kvIndptr[request];
  if (pages == 0)
    return 0;
  return (pages - 1) * batch.kv.pageSize + batch.kvLastPageLen[request];
}

Status attentionRequest(const AttentionBatch &batch,
                        const AttentionOptions &opts, int64_t request,
                        int64_t kvBegin, int64_t kvEnd, double *outV,
                        double *outS) {
  const PagedKvCache &kv = batch.kv;
  const int64_t d = kv.headDim, hqo = batch.numQoHeads, hkv = kv.numKvHeads;
  const int64_t dv = kv.vDim(), group = hqo / hkv;
  const int64_t qoBegin = batch.qoIndptr[request];
  const int64_t qoLen = int64_t(batch.qoIndptr[request + 1]) - qoBegin;
  const int64_t kvLen = kvLength(batch, request);
  const int64_t lo = std::max<int64_t>(kvBegin, 0);
  const int64_t hi = kvEnd < 0 ? kvLen : std::min(kvEnd, kvLen);
  const contract::ScoreOptions &so = opts.score;
  const double smScale =
      (so.smScale ? double(*so.smScale) : 1.0 / std::sqrt(double(d))) *
      opts.kScale;
  const double softCap = so.logitsSoftCap;
  const int64_t windowLeft = so.windowLeft;
  const bool rope = so.rope(), alibi = so.alibi();

  // Keys and values of [lo, hi) per KV head, keys rotated if RoPE.
  const int64_t n = std::max<int64_t>(hi - lo, 0);
  std::vector<double> keys(static_cast<size_t>(n * hkv * d));
  std::vector<const float *> vals(static_cast<size_t>(n * hkv));
  for (int64_t t = 0; t < n; ++t) {
    int64_t pos = lo + t;
    int64_t page = batch.kvIndices[batch.kvIndptr[request] + pos / kv.pageSize];
    int64_t slot = pos % kv.pageSize;
    for (int64_t h = 0; h < hkv; ++h) {
      int64_t off = kv.offset(page, slot, h);
      double *kd = &keys[(t * hkv + h) * d];
      if (rope)
        applyRope(kv.k + off, kd, d, double(pos), opts);
      else
        for (int64_t i = 0; i < d; ++i)
          kd[i] = kv.k[off + i];
      vals[t * hkv + h] = kv.v + kv.vOffset(page, slot, h);
    }
  }

  const bool custom = !batch.maskIndptr.empty();
  // Bit (j, pos) of the request's packed custom mask.
  auto maskBit = [&](int64_t j, int64_t pos) {
    const int64_t bit = j * kvLen + pos;
    return (batch.customMask[batch.maskIndptr[request] + bit / 8] >>
            (bit % 8)) &
           1;
  };
  std::vector<double> q(static_cast<size_t>(d)), score(static_cast<size_t>(n));
  for (int64_t j = 0; j < qoLen; ++j) {
    const int64_t qPos = kvLen - qoLen + j;
    for (int64_t h = 0; h < hqo; ++h) {
      const float *qRow = batch.q + ((qoBegin + j) * hqo + h) * d;
      if (rope)
        applyRope(qRow, q.data(), d, double(qPos), opts);
      else
        for (int64_t i = 0; i < d; ++i)
          q[i] = qRow[i];
      const int64_t kh = h / group;
      const double slope = alibi ? alibiSlope(h, hqo) : 0.0;
      double m = kNegInf;
      for (int64_t t = 0; t < n; ++t) {
        const int64_t pos = lo + t;
        bool visible =
            (custom ? maskBit(j, pos) != 0 : !opts.causal || pos <= qPos) &&
            (windowLeft < 0 || pos >= qPos - windowLeft);
        if (!visible) {
          score[t] = kNegInf;
          continue;
        }
        const double *kd = &keys[(t * hkv + kh) * d];
        double dot = 0;
        for (int64_t i = 0; i < d; ++i)
          dot += q[i] * kd[i];
        double x = dot * smScale;
        if (alibi)
          x += slope * double(pos - qPos);
        if (softCap > 0)
          x = softCap * std::tanh(x / softCap);
        score[t] = x * kLog2e; // base 2
        m = std::max(m, score[t]);
      }
      double *o = outV + (j * hqo + h) * dv;
      std::fill(o, o + dv, 0.0);
      if (m == kNegInf) {
        outS[j * hqo + h] = kNegInf;
        continue;
      }
      double denom = 0;
      for (int64_t t = 0; t < n; ++t) {
        if (score[t] == kNegInf)
          continue;
        double w = std::exp2(score[t] - m);
        denom += w;
        const float *vRow = vals[t * hkv + kh];
        for (int64_t i = 0; i < dv; ++i)
          o[i] += w * vRow[i];
      }
      for (int64_t i = 0; i < dv; ++i)
        o[i] = o[i] / denom * opts.vScale;
      outS[j * hqo + h] = m + std::log2(denom);
    }
  }
  return Status::success();
}

void applyStateInputs(const AttentionOptions &opts, int64_t rows,
                      int64_t numQoHeads, int64_t headDim, double *v,
                      double *s) {
  for (const auto &[name, values] : opts.stateInputs)
    stateFold(name)(values, rows, numQoHeads, headDim, v, s);
}

Status attention(const AttentionBatch &batch, const AttentionOptions &opts,
                 double *outV, double *outS) {
  CASCADE_RETURN_IF_ERROR(validateOptions(opts));
  CASCADE_RETURN_IF_ERROR(validateBatch(batch));
  const int64_t b = int64_t(batch.kvIndptr.size()) - 1;
  const int64_t hqo = batch.numQoHeads, d = batch.kv.vDim();
  for (int64_t i = 0; i < b; ++i) {
    int64_t row = batch.qoIndptr[i];
    CASCADE_RETURN_IF_ERROR(attentionRequest(
        batch, opts, i, 0, -1, outV + row * hqo * d, outS + row * hqo));
  }
  applyStateInputs(opts, batch.qoIndptr[b], hqo, d, outV, outS);
  return Status::success();
}

Status attentionSplit(const AttentionBatch &batch, const AttentionOptions &opts,
                      const Plan &plan, double *outV, double *outS) {
  CASCADE_RETURN_IF_ERROR(validateOptions(opts));
  CASCADE_RETURN_IF_ERROR(validateBatch(batch));
  const int64_t b = int64_t(batch.kvIndptr.size()) - 1;
  if (plan.batch_size != b)
    return makeError(ErrorCode::SizeMismatch,
                     "the plan is for %lld requests, the batch has %lld",
                     static_cast<long long>(plan.batch_size),
                     static_cast<long long>(b));
  const int64_t hqo = batch.numQoHeads, d = batch.kv.vDim();
  const int64_t rows = batch.qoIndptr[b];
  const int64_t partials = plan.merge_indptr[rows];
  std::vector<double> tmpV(static_cast<size_t>(partials * hqo * d));
  std::vector<double> tmpS(static_cast<size_t>(partials * hqo));
  std::vector<double> chunkV, chunkS;
  for (int64_t w = 0; w < plan.num_work_items; ++w) {
    if (plan.qo_tile_indices[w] != 0) // every tile of a chunk: once
      continue;
    const int64_t i = plan.request_indices[w], k = plan.kv_tile_indices[w];
    const int64_t qoBegin = batch.qoIndptr[i];
    const int64_t qoLen = int64_t(batch.qoIndptr[i + 1]) - qoBegin;
    chunkV.assign(static_cast<size_t>(qoLen * hqo * d), 0);
    chunkS.assign(static_cast<size_t>(qoLen * hqo), 0);
    CASCADE_RETURN_IF_ERROR(attentionRequest(
        batch, opts, i, k * plan.kv_chunk_size, (k + 1) * plan.kv_chunk_size,
        chunkV.data(), chunkS.data()));
    for (int64_t j = 0; j < qoLen; ++j) {
      const int64_t p = plan.merge_indptr[qoBegin + j] + k;
      std::copy(chunkV.begin() + j * hqo * d,
                chunkV.begin() + (j + 1) * hqo * d, tmpV.begin() + p * hqo * d);
      std::copy(chunkS.begin() + j * hqo, chunkS.begin() + (j + 1) * hqo,
                tmpS.begin() + p * hqo);
    }
  }
  std::vector<const double *> ptrs;
  std::vector<double> lse;
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t begin = plan.merge_indptr[r], end = plan.merge_indptr[r + 1];
    for (int64_t h = 0; h < hqo; ++h) {
      ptrs.clear();
      lse.clear();
      for (int64_t p = begin; p < end; ++p) {
        ptrs.push_back(&tmpV[(p * hqo + h) * d]);
        lse.push_back(tmpS[p * hqo + h]);
      }
      mergeRow<double, double>(end - begin, ptrs.data(), lse.data(), d,
                               outV + (r * hqo + h) * d, outS + r * hqo + h);
    }
  }
  applyStateInputs(opts, rows, hqo, d, outV, outS);
  return Status::success();
}

Status cascade(const std::vector<AttentionBatch> &levels,
               const AttentionOptions &opts, double *outV, double *outS) {
  if (levels.empty())
    return makeError(ErrorCode::InvalidArgument,
                     "a cascade needs at least one level");
  CASCADE_RETURN_IF_ERROR(validateOptions(opts));
  const int64_t hqo = levels[0].numQoHeads, d = levels[0].kv.vDim();
  const int64_t rows =
      levels[0].qoIndptr.empty() ? 0 : levels[0].qoIndptr.back();
  for (size_t l = 0; l < levels.size(); ++l) {
    const int64_t r =
        levels[l].qoIndptr.empty() ? 0 : levels[l].qoIndptr.back();
    if (r != rows)
      return makeError(ErrorCode::LevelMismatch,
                       "level %zu covers %lld query rows but level 0 covers "
                       "%lld",
                       l, static_cast<long long>(r),
                       static_cast<long long>(rows));
    if (levels[l].numQoHeads != hqo || levels[l].kv.vDim() != d ||
        levels[l].kv.headDim != levels[0].kv.headDim)
      return makeError(ErrorCode::LevelMismatch,
                       "level %zu differs from level 0 in heads or head_dim",
                       l);
  }
  std::vector<double> v(static_cast<size_t>(rows * hqo * d));
  std::vector<double> s(static_cast<size_t>(rows * hqo));
  for (size_t l = 0; l < levels.size(); ++l) {
    AttentionOptions o = opts;
    o.causal = opts.causal && l + 1 == levels.size();
    o.stateInputs.clear(); // once, below

    double *dstV = l == 0 ? outV : v.data();
    double *dstS = l == 0 ? outS : s.data();
    CASCADE_RETURN_IF_ERROR(attention(levels[l], o, dstV, dstS));
    if (l > 0)
      mergeStateInPlace<double, double>(outV, outS, v.data(), s.data(), nullptr,
                                        0, rows, hqo, d);
  }
  applyStateInputs(opts, rows, hqo, d, outV, outS);
  return Status::success();
}

} // namespace cascade::runtime::ref
