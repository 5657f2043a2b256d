//===- IndexBufferTest.cpp - Preallocated kv_indices buffers --------------===//
//
// Serving engines keep one kv_indices buffer of the largest size and pass it
// whole; as in FlashInfer, only its first kv_indptr[B] entries are read.
// Every planner (makePlan, makeCascadePlan, makeAutoCascadePlan, the C API,
// the JSON description, the float64 reference) gives with such a buffer,
// whatever its tail holds, exactly what it gives with the exact one; fewer
// entries than kv_indptr[B] are still an error.
//
//===----------------------------------------------------------------------===//

#include "cascade/Runtime/AutoCascade.h"
#include "cascade/Runtime/PlanJson.h"
#include "cascade/Runtime/Reference.h"
#include "cascade/Runtime/cascade_runtime.h"

#include "TestUtil.h"

#include <cmath>
#include <limits>

using namespace cascade::runtime;
using namespace cascade::runtime::test;

namespace {

/// What a preallocated buffer's tail may hold: stale ids of other batches,
/// ids past the pool, negative ids.
std::vector<int32_t> garbage(size_t n, int64_t numPages) {
  std::vector<int32_t> g(n);
  const int32_t bad[] = {static_cast<int32_t>(numPages),
                         -1,
                         std::numeric_limits<int32_t>::max(),
                         std::numeric_limits<int32_t>::min(),
                         0,
                         7};
  for (size_t i = 0; i < n; ++i)
    g[i] = bad[i % (sizeof(bad) / sizeof(bad[0]))];
  return g;
}

/// `b` with its kv_indices followed by `extra` garbage entries.
Batch withTail(const Batch &b, size_t extra, bool withQo) {
  Batch l = b;
  std::vector<int32_t> tail = garbage(extra, b.in.num_pages);
  l.kvIndices.insert(l.kvIndices.end(), tail.begin(), tail.end());
  l.inputs(withQo);
  return l;
}

std::vector<int32_t> vec(ArrayView<int32_t> a) {
  return std::vector<int32_t>(a.data(), a.data() + a.size());
}

/// A batch of `groups` groups of 3 requests sharing 40 pages each, and 2
/// pages of their own (`share` false: no page shared).
Batch groupedBatch(PlanMode mode, int groups, bool share, bool graph) {
  Batch b;
  b.qoIndptr = {0};
  b.kvIndptr = {0};
  int32_t next = 0;
  for (int g = 0; g < groups; ++g) {
    const int32_t prefix = next;
    if (share)
      next += 40;
    for (int r = 0; r < 3; ++r) {
      for (int32_t p = 0; p < 40 && share; ++p)
        b.kvIndices.push_back(prefix + p);
      for (int32_t p = 0; p < (share ? 2 : 42); ++p)
        b.kvIndices.push_back(next++);
      b.kvIndptr.push_back(static_cast<int32_t>(b.kvIndices.size()));
      b.qoIndptr.push_back(b.qoIndptr.back() +
                           (mode == PlanMode::Decode ? 1 : 2 + r));
      b.kvLastPageLen.push_back(1 + r);
    }
  }
  b.in.mode = mode;
  b.in.num_pages = next;
  b.in.page_size = 4;
  b.in.num_qo_heads = 8;
  b.in.num_kv_heads = 2;
  b.in.head_dim = 64;
  b.in.num_sms = 16;
  b.in.occupancy = 2;
  b.in.cuda_graph = graph;
  b.inputs(mode == PlanMode::Prefill);
  return b;
}

AutoCascadeOptions eagerOptions(bool causal) {
  AutoCascadeOptions o;
  o.level_overhead_us = 0;
  o.group_overhead_us = 0;
  o.l2_hidden_fraction = 0;
  o.causal = causal;
  return o;
}

} // namespace

TEST(IndexBuffers, LongerBufferPlansAsTheExactOne) {
  for (PlanMode mode : {PlanMode::Decode, PlanMode::Prefill})
    for (bool graph : {false, true}) {
      SCOPED_TRACE(
          std::string(mode == PlanMode::Decode ? "decode" : "prefill") +
          (graph ? ", CUDA graph" : ""));
      Batch exact = makeBatch(mode, {3, 0, 17, 64, 1}, {1, 4, 9, 2, 30}, 16, 32,
                              8, 128, 132, 2, graph);
      const bool withQo = mode == PlanMode::Prefill;
      exact.inputs(withQo);
      Plan want;
      ASSERT_TRUE(makePlan(exact.in, want).ok());
      // 12288 entries where the batch uses 85 (the issue's shape), and a
      // buffer one entry longer than needed.
      for (size_t extra : {size_t(12288 - 85), size_t(1)}) {
        Batch longer = withTail(exact, extra, withQo);
        ASSERT_TRUE(validatePlanInputs(longer.in).ok());
        EXPECT_EQ(longer.in.usedKvIndices().size(), 85);
        Plan got;
        Status s = makePlan(longer.in, got);
        ASSERT_TRUE(s.ok()) << s.message();
        expectSamePlan(got, want);
      }
    }
}

TEST(IndexBuffers, OnlyTheUsedPrefixIsRangeChecked) {
  Batch exact =
      makeBatch(PlanMode::Decode, {2, 3}, {1, 1}, 16, 8, 2, 128, 132, 1, false);
  Batch longer = withTail(exact, 100, false);
  // The tail holds ids past the pool and negative ids: not looked at.
  EXPECT_TRUE(validatePlanInputs(longer.in).ok());
  // A bad id among the used entries is reported as with the exact buffer.
  for (Batch *b : {&exact, &longer}) {
    b->kvIndices[4] = 5; // pool of 5 pages: ids 0..4
    Status s = validatePlanInputs(b->inputs(false));
    EXPECT_EQ(s.code(), ErrorCode::PageOutOfRange);
    EXPECT_EQ(s.message(), "kv_indices[4] = 5 is outside the page pool [0, 5)");
    b->kvIndices[4] = -3;
    b->in.num_pages = -1; // unknown pool size: ids must be >= 0
    s = validatePlanInputs(b->inputs(false));
    EXPECT_EQ(s.message(), "kv_indices[4] = -3 is negative");
  }
  // A pool of unknown size: the tail's negative ids are not looked at.
  Batch unknown = withTail(
      makeBatch(PlanMode::Decode, {2, 3}, {1, 1}, 16, 8, 2, 128, 132, 1, false),
      7, false);
  unknown.in.num_pages = -1;
  EXPECT_TRUE(validatePlanInputs(unknown.inputs(false)).ok());
}

TEST(IndexBuffers, TooShortIsStillRejected) {
  Batch b = makeBatch(PlanMode::Prefill, {64, 64}, {1, 1}, 16, 8, 2, 128, 132,
                      1, false);
  b.kvIndices.resize(100);
  Plan p;
  Status s = makePlan(b.inputs(), p);
  EXPECT_EQ(s.code(), ErrorCode::SizeMismatch);
  EXPECT_EQ(s.message(), "kv_indices has 100 entries but kv_indptr[2] = 128 "
                         "(it needs at least kv_indptr[batch_size] entries; "
                         "entries beyond are ignored)");
  // An empty (but present) buffer for a batch that reads pages.
  b.kvIndices.clear();
  b.in.kv_indices = ArrayView<int32_t>(b.kvIndices.data(), 0);
  s = validatePlanInputs(b.in);
  EXPECT_EQ(s.code(), ErrorCode::SizeMismatch);
}

TEST(IndexBuffers, CascadeLevels) {
  Batch shared =
      makeBatch(PlanMode::Prefill, {8}, {6}, 16, 8, 2, 64, 132, 1, false);
  Batch unique = makeBatch(PlanMode::Decode, {1, 3, 40, 2, 9, 5},
                           {1, 1, 1, 1, 1, 1}, 16, 8, 2, 64, 132, 1, false);
  CascadePlan want, got;
  ASSERT_TRUE(
      makeCascadePlan({shared.inputs(), unique.inputs(false)}, want).ok());
  Batch sharedLong = withTail(shared, 4096, true);
  Batch uniqueLong = withTail(unique, 4096, false);
  Status s = makeCascadePlan({sharedLong.in, uniqueLong.in}, got);
  ASSERT_TRUE(s.ok()) << s.message();
  expectSameCascade(got, want);
}

TEST(IndexBuffers, AutoCascadeFindsTheSameLevels) {
  for (PlanMode mode : {PlanMode::Decode, PlanMode::Prefill})
    for (bool share : {true, false})
      for (bool graph : {false, true}) {
        SCOPED_TRACE(
            std::string(mode == PlanMode::Decode ? "decode" : "prefill") +
            (share ? ", shared prefixes" : ", nothing shared") +
            (graph ? ", CUDA graph" : ""));
        const bool withQo = mode == PlanMode::Prefill;
        Batch exact = groupedBatch(mode, 4, share, graph);
        AutoCascadeOptions opt = eagerOptions(withQo);
        AutoCascade want, got;
        ASSERT_TRUE(makeAutoCascadePlan(exact.in, opt, want).ok());
        Batch longer = withTail(exact, 3 * exact.kvIndices.size(), withQo);
        Status s = makeAutoCascadePlan(longer.in, opt, got);
        ASSERT_TRUE(s.ok()) << s.message();
        EXPECT_EQ(want.stats.shared_groups > 0, share);
        ASSERT_EQ(got.levels.size(), want.levels.size());
        for (size_t l = 0; l < want.levels.size(); ++l) {
          EXPECT_EQ(vec(got.levels[l].qo_indptr),
                    vec(want.levels[l].qo_indptr));
          EXPECT_EQ(vec(got.levels[l].kv_indptr),
                    vec(want.levels[l].kv_indptr));
          // The levels' page lists hold no entry of the tail.
          EXPECT_EQ(vec(got.levels[l].kv_indices),
                    vec(want.levels[l].kv_indices));
          EXPECT_EQ(vec(got.levels[l].kv_last_page_len),
                    vec(want.levels[l].kv_last_page_len));
        }
        EXPECT_EQ(got.stats.pages_in, want.stats.pages_in);
        EXPECT_EQ(got.stats.pages_saved, want.stats.pages_saved);
        expectSameCascade(got.plan, want.plan);
        EXPECT_EQ(autoCascadeToJson(got), autoCascadeToJson(want));
      }
}

TEST(IndexBuffers, AutoCascadeStillReportsABadUsedId) {
  Batch exact = groupedBatch(PlanMode::Decode, 2, true, false);
  Batch longer = withTail(exact, 50, false);
  longer.kvIndices[45] = static_cast<int32_t>(exact.in.num_pages);
  AutoCascade ac;
  Status s = makeAutoCascadePlan(longer.inputs(false), eagerOptions(false), ac);
  EXPECT_EQ(s.code(), ErrorCode::PageOutOfRange);
  EXPECT_EQ(s.message(),
            "kv_indices[45] = " + std::to_string(exact.in.num_pages) +
                " is outside the page pool [0, " +
                std::to_string(exact.in.num_pages) + ")");
}

TEST(IndexBuffers, CApiReadsOnlyTheUsedEntries) {
  Batch exact = groupedBatch(PlanMode::Decode, 4, true, false);
  Batch longer = withTail(exact, 1000, false);
  auto inputs = [](const Batch &b) {
    cascade_plan_inputs_t in;
    cascade_plan_inputs_init(&in);
    in.batch_size = static_cast<int64_t>(b.kvLastPageLen.size());
    in.kv_indptr = b.kvIndptr.data();
    in.kv_last_page_len = b.kvLastPageLen.data();
    in.kv_indices = b.kvIndices.data();
    in.num_pages = b.in.num_pages;
    in.num_qo_heads = b.in.num_qo_heads;
    in.num_kv_heads = b.in.num_kv_heads;
    in.head_dim = b.in.head_dim;
    in.page_size = b.in.page_size;
    in.num_sms = b.in.num_sms;
    in.occupancy = b.in.occupancy;
    return in;
  };
  auto json = [](cascade_plan_t plan) {
    char *text = nullptr;
    EXPECT_EQ(cascade_plan_to_json(plan, &text), CASCADE_OK);
    std::string s = text ? text : "";
    cascade_free(text);
    cascade_plan_destroy(plan);
    return s;
  };
  cascade_plan_inputs_t a = inputs(exact), b = inputs(longer);
  cascade_plan_t pa = nullptr, pb = nullptr;
  ASSERT_EQ(cascade_plan_create(&a, &pa), CASCADE_OK) << cascade_last_error();
  ASSERT_EQ(cascade_plan_create(&b, &pb), CASCADE_OK) << cascade_last_error();
  EXPECT_EQ(json(pa), json(pb));
  ASSERT_EQ(cascade_plan_auto_cascade(&a, 0, 0, 0, &pa), CASCADE_OK)
      << cascade_last_error();
  ASSERT_EQ(cascade_plan_auto_cascade(&b, 0, 0, 0, &pb), CASCADE_OK)
      << cascade_last_error();
  EXPECT_EQ(json(pa), json(pb));
}

TEST(IndexBuffers, JsonDescription) {
  const std::string head =
      R"({"mode": "decode", "page_size": 16, "num_qo_heads": 8,
          "num_kv_heads": 2, "head_dim": 128, "num_sms": 4, "num_pages": 12,
          "kv_indptr": [0, 5, 12], "kv_last_page_len": [3, 16],
          "kv_indices": [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11)";
  auto plan = [](const std::string &text, std::string &out) {
    BatchDescription d;
    Status s = parseBatchDescription(text, d);
    if (!s.ok())
      return s;
    Plan p;
    s = makePlan(d.inputs()[0], p);
    out = s.ok() ? planToJson(p) : "";
    return s;
  };
  std::string want, got;
  ASSERT_TRUE(plan(head + "]}", want).ok());
  Status s = plan(head + ", 12, -1, 99999, 0]}", got);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(got, want);
  s = plan(R"({"mode": "decode", "page_size": 16, "num_qo_heads": 8,
               "num_kv_heads": 2, "head_dim": 128, "num_sms": 4,
               "kv_indptr": [0, 5, 12], "kv_last_page_len": [3, 16],
               "kv_indices": [0, 1, 2]})",
           got);
  EXPECT_EQ(s.code(), ErrorCode::SizeMismatch);
  EXPECT_EQ(s.message(), "kv_indices has 3 entries but kv_indptr[2] = 12 (it "
                         "needs at least kv_indptr[batch_size] entries; "
                         "entries beyond are ignored)");
}

TEST(IndexBuffers, ReferenceAttention) {
  Batch exact = makeBatch(PlanMode::Prefill, {2, 0, 3}, {3, 1, 2}, 4, 4, 2, 8,
                          1, 1, false);
  const int64_t rows = exact.qoIndptr.back(), pages = exact.in.num_pages;
  std::vector<float> q(static_cast<size_t>(rows * 4 * 8)),
      pool(static_cast<size_t>(pages * 2 * 4 * 2 * 8));
  for (size_t i = 0; i < q.size(); ++i)
    q[i] = std::sin(0.37f * float(i));
  for (size_t i = 0; i < pool.size(); ++i)
    pool[i] = std::cos(0.11f * float(i));
  auto run = [&](const std::vector<int32_t> &indices, std::vector<double> &v,
                 std::vector<double> &s) {
    ref::AttentionBatch a;
    a.q = q.data();
    a.numQoHeads = 4;
    a.qoIndptr = exact.qoIndptr;
    a.kvIndptr = exact.kvIndptr;
    a.kvIndices = indices;
    a.kvLastPageLen = exact.kvLastPageLen;
    a.kv = ref::PagedKvCache::combined(pool.data(), pages, 4, 2, 8,
                                       ref::KvLayout::NHD);
    v.assign(static_cast<size_t>(rows * 4 * 8), NAN);
    s.assign(static_cast<size_t>(rows * 4), NAN);
    return ref::attention(a, ref::AttentionOptions(), v.data(), s.data());
  };
  std::vector<double> v0, s0, v1, s1;
  ASSERT_TRUE(run(exact.kvIndices, v0, s0).ok());
  std::vector<int32_t> longer = exact.kvIndices, tail = garbage(64, pages);
  longer.insert(longer.end(), tail.begin(), tail.end());
  Status st = run(longer, v1, s1);
  ASSERT_TRUE(st.ok()) << st.message();
  EXPECT_EQ(v0, v1);
  EXPECT_EQ(s0, s1);
}
