//===- ReferenceTest.cpp - The CPU reference and fp16/bf16 helpers --------===//

#include "TestUtil.h"

#include "cascade/Runtime/Half.h"
#include "cascade/Runtime/Reference.h"

#include <cmath>

using namespace cascade::runtime;
using namespace cascade::runtime::test;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

std::vector<float> randomFloats(std::mt19937_64 &rng, int64_t n) {
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  std::vector<float> v(static_cast<size_t>(n));
  for (float &x : v)
    x = dist(rng);
  return v;
}

struct Problem {
  Batch batch;
  std::vector<float> q, pool;
  ref::AttentionBatch attn;
};

Problem makeProblem(std::mt19937_64 &rng, const std::vector<int32_t> &pages,
                    const std::vector<int32_t> &qo, int64_t pageSize,
                    int64_t hqo, int64_t hkv, int64_t d, ref::KvLayout layout,
                    bool combined) {
  Problem p;
  p.batch = makeBatch(PlanMode::Prefill, pages, qo, pageSize, hqo, hkv, d, 4, 1,
                      false, &rng);
  // Shuffle page ids so paging matters.
  std::shuffle(p.batch.kvIndices.begin(), p.batch.kvIndices.end(), rng);
  const int64_t numPages = p.batch.in.num_pages;
  p.q = randomFloats(rng, p.batch.qoIndptr.back() * hqo * d);
  p.pool = randomFloats(rng, std::max<int64_t>(numPages, 1) * 2 * pageSize *
                                 hkv * d);
  p.attn.q = p.q.data();
  p.attn.numQoHeads = hqo;
  p.attn.qoIndptr = p.batch.qoIndptr;
  p.attn.kvIndptr = p.batch.kvIndptr;
  p.attn.kvIndices = p.batch.kvIndices;
  p.attn.kvLastPageLen = p.batch.kvLastPageLen;
  if (combined)
    p.attn.kv = ref::PagedKvCache::combined(p.pool.data(), numPages, pageSize,
                                            hkv, d, layout);
  else
    p.attn.kv = ref::PagedKvCache::pair(
        p.pool.data(), p.pool.data() + numPages * pageSize * hkv * d, numPages,
        pageSize, hkv, d, layout);
  return p;
}

} // namespace

TEST(RefMerge, EmptyStateIsTheIdentityExactly) {
  std::mt19937_64 rng(1);
  const int64_t h = 3, d = 16;
  std::vector<float> v = randomFloats(rng, h * d), s = randomFloats(rng, h);
  std::vector<float> ev(h * d, 0.f), es(h, -INFINITY), ov(h * d), os(h);
  ref::mergeState<float, float>(v.data(), s.data(), ev.data(), es.data(),
                                ov.data(), os.data(), 1, h, d);
  EXPECT_EQ(ov, v);
  EXPECT_EQ(os, s);
  ref::mergeState<float, float>(ev.data(), es.data(), v.data(), s.data(),
                                ov.data(), os.data(), 1, h, d);
  EXPECT_EQ(ov, v);
  EXPECT_EQ(os, s);
}

TEST(RefMerge, TwoEmptiesGiveEmptyNotNaN) {
  std::vector<float> ev(8, 0.f), es(1, -INFINITY), ov(8, 7.f), os(1, 7.f);
  ref::mergeState<float, float>(ev.data(), es.data(), ev.data(), es.data(),
                                ov.data(), os.data(), 1, 1, 8);
  for (float x : ov)
    EXPECT_EQ(x, 0.f);
  EXPECT_EQ(os[0], -INFINITY);
}

TEST(RefMerge, MergeStatesWithNoStatesIsEmpty) {
  std::vector<float> ov(2 * 3 * 8, 5.f), os(2 * 3, 5.f);
  ref::mergeStates<float, float>(nullptr, nullptr, ov.data(), os.data(), 2, 0,
                                 3, 8);
  for (float x : ov)
    EXPECT_EQ(x, 0.f);
  for (float x : os)
    EXPECT_EQ(x, -INFINITY);
}

TEST(RefMerge, KnownValuesBase2) {
  // Equal LSEs: the mean, and s + 1 (base 2).
  std::vector<float> a{1, 2}, b{3, 6}, sa{0.5f}, sb{0.5f}, ov(2), os(1);
  ref::mergeState<float, float>(a.data(), sa.data(), b.data(), sb.data(),
                                ov.data(), os.data(), 1, 1, 2);
  EXPECT_FLOAT_EQ(ov[0], 2);
  EXPECT_FLOAT_EQ(ov[1], 4);
  EXPECT_FLOAT_EQ(os[0], 1.5f);
}

TEST(RefMerge, InPlaceHonoursAStridedMask) {
  std::mt19937_64 rng(2);
  const int64_t rows = 4, h = 2, d = 8;
  std::vector<float> v = randomFloats(rng, rows * h * d),
                     s = randomFloats(rng, rows * h),
                     vo = randomFloats(rng, rows * h * d),
                     so = randomFloats(rng, rows * h);
  // Mask with stride 3: rows 0 and 2 merged.
  std::vector<uint8_t> mask{1, 9, 9, 0, 9, 9, 1, 9, 9, 0, 9, 9};
  std::vector<float> v2 = v, s2 = s;
  ref::mergeStateInPlace<float, float>(v2.data(), s2.data(), vo.data(),
                                       so.data(), mask.data(), 3, rows, h, d);
  std::vector<float> mv(rows * h * d), ms(rows * h);
  ref::mergeState<float, float>(v.data(), s.data(), vo.data(), so.data(),
                                mv.data(), ms.data(), rows, h, d);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t i = 0; i < h * d; ++i)
      EXPECT_EQ(v2[r * h * d + i],
                r % 2 == 0 ? mv[r * h * d + i] : v[r * h * d + i]);
}

TEST(RefMerge, MergeStatesEqualsPairwiseMerges) {
  std::mt19937_64 rng(3);
  const int64_t rows = 2, n = 5, h = 2, d = 8;
  std::vector<double> v(rows * n * h * d), s(rows * n * h);
  for (double &x : v)
    x = std::uniform_real_distribution<double>(-1, 1)(rng);
  for (double &x : s)
    x = std::uniform_real_distribution<double>(-5, 5)(rng);
  s[3] = -kInf; // one empty state
  std::vector<double> ov(rows * h * d), os(rows * h);
  ref::mergeStates<double, double>(v.data(), s.data(), ov.data(), os.data(),
                                   rows, n, h, d);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t hh = 0; hh < h; ++hh) {
      std::vector<double> accV(d, 0.0);
      double accS = -kInf;
      for (int64_t i = 0; i < n; ++i)
        ref::mergeStateInPlace<double, double>(
            accV.data(), &accS, &v[((r * n + i) * h + hh) * d],
            &s[(r * n + i) * h + hh], nullptr, 0, 1, 1, d);
      EXPECT_NEAR(accS, os[r * h + hh], 1e-12);
      for (int64_t k = 0; k < d; ++k)
        EXPECT_NEAR(accV[k], ov[(r * h + hh) * d + k], 1e-12);
    }
}

TEST(RefAttention, SingleKeyGivesItsValue) {
  std::mt19937_64 rng(4);
  Problem p = makeProblem(rng, {1}, {1}, 4, 1, 1, 8, ref::KvLayout::NHD, true);
  p.batch.kvLastPageLen[0] = 1;
  p.attn.kvLastPageLen = p.batch.kvLastPageLen;
  std::vector<double> v(8), s(1);
  ASSERT_TRUE(ref::attention(p.attn, {}, v.data(), s.data()).ok());
  const int64_t page = p.batch.kvIndices[0];
  const float *val = p.attn.kv.v + p.attn.kv.offset(page, 0, 0);
  for (int i = 0; i < 8; ++i)
    EXPECT_DOUBLE_EQ(v[i], val[i]);
  double dot = 0;
  const float *key = p.attn.kv.k + p.attn.kv.offset(page, 0, 0);
  for (int i = 0; i < 8; ++i)
    dot += double(p.q[i]) * key[i];
  EXPECT_NEAR(s[0], dot / std::sqrt(8.0) * 1.4426950408889634, 1e-12);
}

TEST(RefAttention, NarrowerVEqualsTheFirstColumnsOfAPaddedV) {
  // v with its own head_dim (head_dim_vo) computes the first dv columns of
  // the attention whose v is zero-padded to k's head_dim; the LSE is the
  // same.
  std::mt19937_64 rng(11);
  const int64_t d = 32, dv = 16, hqo = 4, hkv = 2, page = 4;
  for (ref::KvLayout layout : {ref::KvLayout::NHD, ref::KvLayout::HND}) {
    Problem p = makeProblem(rng, {3, 1, 2}, {2, 1, 3}, page, hqo, hkv, d,
                            layout, false);
    const int64_t numPages = p.attn.kv.numPages;
    std::vector<float> narrow = randomFloats(rng, numPages * page * hkv * dv);
    std::vector<float> padded(numPages * page * hkv * d, 0.f);
    for (int64_t i = 0; i < numPages * page * hkv; ++i)
      std::copy_n(narrow.begin() + i * dv, dv, padded.begin() + i * d);
    ref::AttentionBatch a = p.attn, b = p.attn;
    a.kv = ref::PagedKvCache::pair(p.pool.data(), narrow.data(), numPages, page,
                                   hkv, d, layout, dv);
    b.kv = ref::PagedKvCache::pair(p.pool.data(), padded.data(), numPages, page,
                                   hkv, d, layout);
    const int64_t rows = p.attn.qoIndptr.back();
    std::vector<double> va(rows * hqo * dv), sa(rows * hqo);
    std::vector<double> vb(rows * hqo * d), sb(rows * hqo);
    ref::AttentionOptions opts;
    opts.causal = true;
    ASSERT_TRUE(ref::attention(a, opts, va.data(), sa.data()).ok());
    ASSERT_TRUE(ref::attention(b, opts, vb.data(), sb.data()).ok());
    for (int64_t r = 0; r < rows * hqo; ++r) {
      EXPECT_EQ(sa[r], sb[r]);
      for (int64_t i = 0; i < dv; ++i)
        EXPECT_NEAR(va[r * dv + i], vb[r * d + i], 1e-12);
    }
  }
}

TEST(RefAttention, EmptyRequestGivesTheEmptyState) {
  std::mt19937_64 rng(5);
  Problem p =
      makeProblem(rng, {0, 2}, {2, 1}, 4, 2, 1, 8, ref::KvLayout::HND, false);
  std::vector<double> v(3 * 2 * 8, 9), s(3 * 2, 9);
  ASSERT_TRUE(ref::attention(p.attn, {}, v.data(), s.data()).ok());
  for (int i = 0; i < 2 * 2 * 8; ++i)
    EXPECT_EQ(v[i], 0.0);
  for (int i = 0; i < 4; ++i)
    EXPECT_EQ(s[i], -kInf);
  EXPECT_TRUE(std::isfinite(s[4]));
}

TEST(RefAttention, RejectsBadInputs) {
  std::mt19937_64 rng(6);
  Problem p = makeProblem(rng, {2}, {1}, 4, 2, 1, 8, ref::KvLayout::NHD, true);
  p.attn.kvIndices[0] = 99;
  std::vector<double> v(16), s(2);
  Status st = ref::attention(p.attn, {}, v.data(), s.data());
  EXPECT_EQ(st.code(), ErrorCode::PageOutOfRange);
}

/// FlashInfer's packed layout of per-request [qo_len, kv_len] masks
/// (little bit order, each request from a new byte) and its byte offsets.
void packMasks(const std::vector<std::vector<bool>> &masks,
               std::vector<uint8_t> &packed, std::vector<int32_t> &indptr) {
  packed.clear();
  indptr.assign(1, 0);
  for (const std::vector<bool> &m : masks) {
    const size_t base = packed.size();
    packed.resize(base + (m.size() + 7) / 8, 0);
    for (size_t i = 0; i < m.size(); ++i)
      if (m[i])
        packed[base + i / 8] |= uint8_t(1u << (i % 8));
    indptr.push_back(int32_t(packed.size()));
  }
}

// A custom mask that spells the causal pattern gives causal attention; one
// that hides a whole row gives that row the empty state; it replaces the
// causal option (FlashInfer's MaskMode::kCustom).
TEST(RefAttention, CustomMaskEqualsTheMaskItSpells) {
  std::mt19937_64 rng(8);
  const std::vector<int32_t> pages{3, 2}, qo{4, 3};
  Problem p =
      makeProblem(rng, pages, qo, 4, 4, 2, 16, ref::KvLayout::NHD, true);
  const int64_t rows = 7, hqo = 4, d = 16;
  std::vector<std::vector<bool>> causal, hidden;
  for (int64_t i = 0; i < 2; ++i) {
    const int64_t kvLen = ref::kvLength(p.attn, i), qoLen = qo[i];
    std::vector<bool> m, h;
    for (int64_t j = 0; j < qoLen; ++j)
      for (int64_t t = 0; t < kvLen; ++t) {
        m.push_back(t <= kvLen - qoLen + j);
        h.push_back(j != 1 && t % 2 == 0); // row 1 sees nothing
      }
    causal.push_back(m);
    hidden.push_back(h);
  }
  ref::AttentionOptions causalOpts;
  causalOpts.causal = true;
  std::vector<double> ev(rows * hqo * d), es(rows * hqo);
  ASSERT_TRUE(ref::attention(p.attn, causalOpts, ev.data(), es.data()).ok());
  packMasks(causal, p.attn.customMask, p.attn.maskIndptr);
  std::vector<double> v(ev.size()), s(es.size());
  ASSERT_TRUE(ref::attention(p.attn, {}, v.data(), s.data()).ok());
  EXPECT_EQ(v, ev);
  EXPECT_EQ(s, es);
  packMasks(hidden, p.attn.customMask, p.attn.maskIndptr);
  ASSERT_TRUE(ref::attention(p.attn, causalOpts, v.data(), s.data()).ok());
  for (int64_t row : {1, 5}) // row 1 of each request
    for (int64_t h = 0; h < hqo; ++h) {
      EXPECT_EQ(s[row * hqo + h], -kInf);
      EXPECT_EQ(v[(row * hqo + h) * d], 0.0);
    }
  EXPECT_TRUE(std::isfinite(s[0]));
  EXPECT_NE(v, ev); // the causal option did not apply
}

// The score options are checked as the IR verifier checks them.
TEST(RefAttention, RejectsInvalidScoreOptions) {
  std::mt19937_64 rng(10);
  Problem p =
      makeProblem(rng, {2, 1}, {3, 2}, 4, 2, 1, 8, ref::KvLayout::NHD, true);
  std::vector<double> v(5 * 2 * 8), s(5 * 2);
  ref::AttentionOptions opts;
  opts.score.windowLeft = -2;
  Status st = ref::attention(p.attn, opts, v.data(), s.data());
  EXPECT_EQ(st.code(), ErrorCode::InvalidArgument);
  EXPECT_EQ(st.message(), "window_left must be >= -1 (-1 = off), got -2");
  opts.score = {};
  opts.score.smScale = 0.f;
  st = ref::attention(p.attn, opts, v.data(), s.data());
  EXPECT_EQ(st.message(), "sm_scale must be finite and > 0, got 0.000000e+00");
  opts.score = {};
  opts.score.ropeTheta = -INFINITY;
  st = ref::attention(p.attn, opts, v.data(), s.data());
  EXPECT_EQ(st.message(), "rope_theta must be finite and > 0, got -INF");
}

TEST(RefAttention, RejectsCustomMasksOfTheWrongSize) {
  std::mt19937_64 rng(9);
  Problem p =
      makeProblem(rng, {2, 1}, {3, 2}, 4, 2, 1, 8, ref::KvLayout::NHD, true);
  std::vector<double> v(5 * 2 * 8), s(5 * 2);
  p.attn.customMask.assign(64, 0xff);
  p.attn.maskIndptr = {0, 1};
  EXPECT_EQ(ref::attention(p.attn, {}, v.data(), s.data()).code(),
            ErrorCode::SizeMismatch); // B + 1 offsets needed
  const int64_t need0 = (3 * ref::kvLength(p.attn, 0) + 7) / 8;
  p.attn.maskIndptr = {0, int32_t(need0 - 1), 40};
  Status st = ref::attention(p.attn, {}, v.data(), s.data());
  EXPECT_EQ(st.code(), ErrorCode::SizeMismatch);
  EXPECT_NE(st.message().find("request 0"), std::string::npos) << st.message();
  p.attn.maskIndptr = {0, int32_t(need0), 65};
  EXPECT_EQ(ref::attention(p.attn, {}, v.data(), s.data()).code(),
            ErrorCode::SizeMismatch); // past the mask's end
  p.attn.maskIndptr = {0, int32_t(need0), 64};
  EXPECT_TRUE(ref::attention(p.attn, {}, v.data(), s.data()).ok());
  p.attn.maskIndptr.clear();
  EXPECT_EQ(ref::attention(p.attn, {}, v.data(), s.data()).code(),
            ErrorCode::InvalidArgument); // a mask without offsets
}

// Splitting the KV of every request into plan chunks and merging the chunk
// states equals unsplit attention, for every option and layout.
TEST(RefAttention, SplitThenMergeEqualsUnsplit) {
  std::mt19937_64 rng(7);
  struct Case {
    ref::AttentionOptions opts;
    ref::KvLayout layout;
    bool combined;
    int64_t hqo, hkv;
  };
  std::vector<Case> cases;
  for (int c = 0; c < 12; ++c) {
    Case k;
    k.opts.causal = c % 2;
    cascade::contract::ScoreOptions &score = k.opts.score;
    if (c % 3 != 0)
      score.smScale = 0.2f;
    score.logitsSoftCap = c % 4 == 1 ? 5.f : 0.f;
    score.windowLeft = c % 5 == 2 ? 7 : -1;
    score.pos = c % 3 == 1   ? cascade::contract::PosEncoding::RopeLlama
                : c % 3 == 2 ? cascade::contract::PosEncoding::ALiBi
                             : cascade::contract::PosEncoding::None;
    score.ropeScale = c % 2 ? 2.f : 1.f;
    k.layout = c % 2 ? ref::KvLayout::HND : ref::KvLayout::NHD;
    k.combined = c % 3 != 0;
    k.hqo = c % 2 ? 4 : 6;
    k.hkv = c % 2 ? 2 : 3;
    cases.push_back(k);
  }
  for (const Case &k : cases) {
    const bool prefill = rng() % 2;
    std::vector<int32_t> pages{9, 0, 4, 13}, qo{3, 2, 1, 5};
    if (!prefill)
      qo = {1, 1, 1, 1};
    Problem p =
        makeProblem(rng, pages, qo, 4, k.hqo, k.hkv, 16, k.layout, k.combined);
    // A plan with small chunks: 1 SM, min chunk 128/4 = 32 pages is too big,
    // so force splitting through the page size of the plan inputs.
    PlanInputs in = p.batch.inputs();
    in.mode = prefill ? PlanMode::Prefill : PlanMode::Decode;
    if (!prefill)
      in.qo_indptr = ArrayView<int32_t>();
    in.page_size = 64; // min chunk 2 pages (plan only; keeps chunks small)
    in.kv_last_page_len = ArrayView<int32_t>(p.batch.kvLastPageLen);
    in.num_sms = 16;
    in.occupancy = 1;
    in.num_kv_heads = 1;
    in.num_qo_heads = 1;
    Plan plan;
    ASSERT_TRUE(makePlan(in, plan).ok());
    ASSERT_TRUE(plan.split_kv);
    // Re-express the chunk in tokens of the real page size.
    plan.kv_chunk_size = plan.kv_chunk_size_pages * 4;
    const int64_t rows = p.batch.qoIndptr.back();
    std::vector<double> v1(rows * k.hqo * 16), s1(rows * k.hqo);
    std::vector<double> v2(v1.size()), s2(s1.size());
    ASSERT_TRUE(ref::attention(p.attn, k.opts, v1.data(), s1.data()).ok());
    ASSERT_TRUE(
        ref::attentionSplit(p.attn, k.opts, plan, v2.data(), s2.data()).ok());
    for (size_t i = 0; i < s1.size(); ++i) {
      if (std::isinf(s1[i]))
        EXPECT_EQ(s1[i], s2[i]);
      else
        EXPECT_NEAR(s1[i], s2[i], 1e-12);
    }
    for (size_t i = 0; i < v1.size(); ++i)
      EXPECT_NEAR(v1[i], v2[i], 1e-12);
  }
}

// A two-level cascade (shared prefix [0, B] + per-request suffixes) equals
// one flat attention over prefix + suffix pages (causal on the last level).
TEST(RefAttention, CascadeEqualsFlatAttention) {
  std::mt19937_64 rng(8);
  const int64_t ps = 4, hqo = 4, hkv = 2, d = 16;
  for (int causal = 0; causal < 2; ++causal) {
    // Pool: 6 prefix pages (full), then suffix pages.
    const std::vector<int32_t> suffixPages{2, 3, 1};
    const std::vector<int32_t> qo{1, 2, 1};
    const int64_t b = 3;
    Problem flat = makeProblem(rng, {8, 9, 7}, qo, ps, hqo, hkv, d,
                               ref::KvLayout::NHD, true);
    // Rebuild flat's page lists: prefix pages 0..5 shared, then own pages.
    std::vector<int32_t> kvIndptr{0}, kvIndices, lastLen;
    int32_t next = 6;
    std::vector<int32_t> sufIndptr{0}, sufIndices;
    for (int64_t i = 0; i < b; ++i) {
      for (int32_t pg = 0; pg < 6; ++pg)
        kvIndices.push_back(pg);
      for (int32_t pg = 0; pg < suffixPages[i]; ++pg) {
        kvIndices.push_back(next);
        sufIndices.push_back(next++);
      }
      kvIndptr.push_back(static_cast<int32_t>(kvIndices.size()));
      sufIndptr.push_back(static_cast<int32_t>(sufIndices.size()));
      lastLen.push_back(static_cast<int32_t>(1 + rng() % ps));
    }
    ASSERT_LE(next, flat.attn.kv.numPages);
    flat.attn.kvIndptr = kvIndptr;
    flat.attn.kvIndices = kvIndices;
    flat.attn.kvLastPageLen = lastLen;

    ref::AttentionBatch prefix = flat.attn;
    prefix.qoIndptr = {0, flat.attn.qoIndptr.back()};
    prefix.kvIndptr = {0, 6};
    prefix.kvIndices = {0, 1, 2, 3, 4, 5};
    prefix.kvLastPageLen = {static_cast<int32_t>(ps)};
    ref::AttentionBatch suffix = flat.attn;
    suffix.kvIndptr = sufIndptr;
    suffix.kvIndices = sufIndices;

    ref::AttentionOptions opts;
    opts.causal = causal;
    const int64_t rows = flat.attn.qoIndptr.back();
    std::vector<double> v1(rows * hqo * d), s1(rows * hqo);
    std::vector<double> v2(v1.size()), s2(s1.size());
    ASSERT_TRUE(ref::attention(flat.attn, opts, v1.data(), s1.data()).ok());
    ASSERT_TRUE(
        ref::cascade({prefix, suffix}, opts, v2.data(), s2.data()).ok());
    for (size_t i = 0; i < s1.size(); ++i)
      EXPECT_NEAR(s1[i], s2[i], 1e-12);
    for (size_t i = 0; i < v1.size(); ++i)
      EXPECT_NEAR(v1[i], v2[i], 1e-12);
  }
}

TEST(RefAttention, AlibiSlopesMatchFlashInfer) {
  EXPECT_DOUBLE_EQ(ref::alibiSlope(0, 8), std::exp2(-1.0));
  EXPECT_DOUBLE_EQ(ref::alibiSlope(7, 8), std::exp2(-8.0));
  // 12 heads: n = 8; heads 8.. use the interleaved slopes.
  EXPECT_DOUBLE_EQ(ref::alibiSlope(8, 12), std::exp2(-0.5));
  EXPECT_DOUBLE_EQ(ref::alibiSlope(9, 12), std::exp2(-1.5));
}

TEST(Half, Fp16Conversions) {
  EXPECT_EQ(floatToHalf(1.0f), 0x3c00);
  EXPECT_EQ(floatToHalf(-2.0f), 0xc000);
  EXPECT_EQ(floatToHalf(65504.0f), 0x7bff);
  EXPECT_EQ(floatToHalf(65519.0f), 0x7bff);
  EXPECT_EQ(floatToHalf(65520.0f), 0x7c00);
  EXPECT_EQ(floatToHalf(INFINITY), 0x7c00);
  EXPECT_EQ(floatToHalf(5.9604644775390625e-08f), 0x0001);
  EXPECT_EQ(floatToHalf(2.98023223876953125e-08f), 0x0000); // tie -> even
  EXPECT_EQ(floatToHalf(1.0f + 1.0f / 2048), 0x3c00);       // tie -> even
  EXPECT_EQ(floatToHalf(1.0f + 3.0f / 2048), 0x3c02);       // tie -> even
  EXPECT_TRUE(std::isnan(halfToFloat(floatToHalf(NAN))));
  EXPECT_EQ(halfToFloat(0x0001), 5.9604644775390625e-08f);
  EXPECT_EQ(halfToFloat(0x7bff), 65504.0f);
  EXPECT_EQ(halfToFloat(0x8000), -0.0f);
  // Every half round-trips.
  for (uint32_t h = 0; h < 0x10000; ++h) {
    if ((h & 0x7c00) == 0x7c00 && (h & 0x3ff))
      continue; // NaN payloads
    ASSERT_EQ(floatToHalf(halfToFloat(static_cast<uint16_t>(h))), h) << h;
  }
}

TEST(Half, Bf16Conversions) {
  EXPECT_EQ(floatToBf16(1.0f), 0x3f80);
  EXPECT_EQ(bf16ToFloat(0x3f80), 1.0f);
  EXPECT_EQ(floatToBf16(bitsFloat(0x3f808000)), 0x3f80); // tie -> even
  EXPECT_EQ(floatToBf16(bitsFloat(0x3f818000)), 0x3f82); // tie -> even
  EXPECT_TRUE(std::isnan(bf16ToFloat(floatToBf16(NAN))));
  EXPECT_EQ(roundToBf16(3.0f), 3.0f);
}

TEST(Half, Fp8Conversions) {
  EXPECT_EQ(e4m3ToFloat(0x38), 1.0f);
  EXPECT_EQ(e4m3ToFloat(0xb8), -1.0f);
  EXPECT_EQ(e4m3ToFloat(0x7e), 448.0f);       // the largest finite
  EXPECT_EQ(e4m3ToFloat(0x08), 0.015625f);    // smallest normal 2^-6
  EXPECT_EQ(e4m3ToFloat(0x01), 0.001953125f); // smallest subnormal 2^-9
  EXPECT_EQ(e4m3ToFloat(0x07), 7 * 0.001953125f);
  EXPECT_EQ(e4m3ToFloat(0x80), -0.0f);
  EXPECT_TRUE(std::signbit(e4m3ToFloat(0x80)));
  EXPECT_TRUE(std::isnan(e4m3ToFloat(0x7f)));
  EXPECT_TRUE(std::isnan(e4m3ToFloat(0xff)));
  EXPECT_EQ(e4m3ToFloat(0x77), 240.0f); // 0.1110.111: 2^7 * 1.875
  EXPECT_EQ(e5m2ToFloat(0x3c), 1.0f);
  EXPECT_EQ(e5m2ToFloat(0x7b), 57344.0f);
  EXPECT_EQ(e5m2ToFloat(0x7c), INFINITY);
  EXPECT_EQ(e5m2ToFloat(0xfc), -INFINITY);
  EXPECT_TRUE(std::isnan(e5m2ToFloat(0x7d)));
  EXPECT_EQ(e5m2ToFloat(0x01), 1.52587890625e-05f); // 2^-16
  // Every finite fp8 value is an fp16 value (the kernels convert through
  // cvt.rn.f16x2.e4m3x2 exactly), and e4m3 values increase with their
  // codes.
  float prev = -1;
  for (uint32_t x = 0; x < 0x7f; ++x) {
    float f = e4m3ToFloat(static_cast<uint8_t>(x));
    EXPECT_GT(f, prev) << x;
    prev = f;
    EXPECT_EQ(roundToHalf(f), f) << x;
    EXPECT_EQ(roundToBf16(f), f) << x;
  }
}

TEST(RefAttention, Fp8ScalesEqualScaledKeysAndValues) {
  // k_scale multiplies the logits and v_scale the output: the same as a
  // cache holding k_scale * k and v_scale * v (docs/semantics.md).
  std::mt19937_64 rng(18);
  Problem p =
      makeProblem(rng, {3, 2}, {2, 1}, 4, 4, 2, 16, ref::KvLayout::NHD, true);
  std::vector<float> scaled = p.pool;
  const double ks = 0.25, vs = 4; // powers of two: the scaled cache is exact
  const int64_t half = p.attn.kv.pageStride / 2; // K, then V, per page
  for (size_t i = 0; i < scaled.size(); ++i)
    scaled[i] =
        float(double(scaled[i]) * ((int64_t(i) / half) % 2 == 0 ? ks : vs));
  ref::AttentionOptions opts;
  opts.score.logitsSoftCap = 7;
  opts.score.pos = cascade::contract::PosEncoding::RopeLlama;
  const int64_t rows = p.batch.qoIndptr.back();
  std::vector<double> v1(rows * 4 * 16), s1(rows * 4), v2(v1), s2(s1);
  ref::AttentionBatch plain = p.attn;
  plain.kv = ref::PagedKvCache::combined(scaled.data(), p.attn.kv.numPages, 4,
                                         2, 16, ref::KvLayout::NHD);
  ASSERT_TRUE(ref::attention(plain, opts, v1.data(), s1.data()).ok());
  opts.kScale = ks;
  opts.vScale = vs;
  ASSERT_TRUE(ref::attention(p.attn, opts, v2.data(), s2.data()).ok());
  for (size_t i = 0; i < v1.size(); ++i)
    EXPECT_NEAR(v1[i], v2[i], 1e-12 * (1 + std::abs(v1[i]))) << i;
  for (size_t i = 0; i < s1.size(); ++i)
    EXPECT_NEAR(s1[i], s2[i], 1e-12 * (1 + std::abs(s1[i]))) << i;
  // The unscaled cache gives another result.
  opts.kScale = opts.vScale = 1;
  std::vector<double> v3(v1.size()), s3(s1.size());
  ASSERT_TRUE(ref::attention(p.attn, opts, v3.data(), s3.data()).ok());
  EXPECT_GT(std::abs(s3[0] - s1[0]), 1e-6);
}

// Sinks, written out: o = sum_j e^x_j v_j / (e^sink + sum_j e^x_j), with the
// sink in the LSE too; a request without keys gets (0, sink * log2(e)).
TEST(RefAttention, SinksJoinTheDenominatorOnce) {
  std::mt19937_64 rng(11);
  const int64_t ps = 4, hqo = 2, hkv = 1, d = 8;
  Problem p = makeProblem(rng, {2, 0}, {1, 1}, ps, hqo, hkv, d,
                          ref::KvLayout::NHD, true);
  const float sinks[hqo] = {0.75f, -2.5f};
  ref::AttentionOptions opts;
  opts.stateInputs = {{"sinks", sinks}};
  std::vector<double> v(2 * hqo * d), s(2 * hqo);
  ASSERT_TRUE(ref::attention(p.attn, opts, v.data(), s.data()).ok());
  const int64_t kvLen = ref::kvLength(p.attn, 0);
  ASSERT_GT(kvLen, 0);
  for (int64_t h = 0; h < hqo; ++h) {
    double denom = std::exp(double(sinks[h]));
    std::vector<double> acc(d, 0.0);
    for (int64_t t = 0; t < kvLen; ++t) {
      const int32_t page = p.attn.kvIndices[p.attn.kvIndptr[0] + t / ps];
      const float *key = p.attn.kv.k + p.attn.kv.offset(page, t % ps, 0);
      const float *val = p.attn.kv.v + p.attn.kv.offset(page, t % ps, 0);
      double dot = 0;
      for (int64_t i = 0; i < d; ++i)
        dot += double(p.q[h * d + i]) * key[i];
      const double w = std::exp(dot / std::sqrt(double(d)));
      denom += w;
      for (int64_t i = 0; i < d; ++i)
        acc[i] += w * val[i];
    }
    for (int64_t i = 0; i < d; ++i)
      EXPECT_NEAR(v[h * d + i], acc[i] / denom, 1e-12);
    EXPECT_NEAR(s[h], std::log2(denom), 1e-12);
    // Request 1 has no keys: only the sink.
    for (int64_t i = 0; i < d; ++i)
      EXPECT_EQ(v[(hqo + h) * d + i], 0.0);
    EXPECT_NEAR(s[hqo + h], sinks[h] * 1.4426950408889634, 1e-12);
  }

  // A cascade of the same keys applies them once, not once per level.
  ref::AttentionBatch first = p.attn, second = p.attn;
  first.kvIndptr = {0, 1, 1};
  first.kvIndices = {p.attn.kvIndices[0]};
  first.kvLastPageLen = {static_cast<int32_t>(ps), 1};
  second.kvIndptr = {0, 1, 1};
  second.kvIndices = {p.attn.kvIndices[1]};
  std::vector<double> cv(v.size()), cs(s.size());
  ASSERT_TRUE(ref::cascade({first, second}, opts, cv.data(), cs.data()).ok());
  for (int64_t h = 0; h < hqo; ++h) {
    EXPECT_NEAR(cs[h], s[h], 1e-12);
    for (int64_t i = 0; i < d; ++i)
      EXPECT_NEAR(cv[h * d + i], v[h * d + i], 1e-12);
  }
}

// A state input the reference does not know is refused before any data is
// read, by name; so is one without values.
TEST(RefAttention, UnknownStateInputsAreRefused) {
  std::mt19937_64 rng(12);
  Problem p = makeProblem(rng, {3}, {1}, 4, 2, 1, 8, ref::KvLayout::NHD, true);
  const float values[2] = {0.f, 0.f};
  std::vector<double> v(2 * 8), s(2);
  ref::AttentionOptions opts;
  opts.stateInputs = {{"bias", values}};
  Status st = ref::attention(p.attn, opts, v.data(), s.data());
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("'bias' is not a state input"), std::string::npos)
      << st.message();
  opts.stateInputs = {{"sinks", nullptr}};
  EXPECT_FALSE(ref::attention(p.attn, opts, v.data(), s.data()).ok());
  opts.stateInputs = {{"bias", values}};
  EXPECT_FALSE(ref::cascade({p.attn}, opts, v.data(), s.data()).ok());
}
