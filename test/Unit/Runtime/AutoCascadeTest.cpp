//===- AutoCascadeTest.cpp - Automatic cascades vs plain attention --------===//
//
// makeAutoCascadePlan on hand-made and random batches: the levels it emits,
// run through the float64 reference cascade, equal plain attention over each
// request's pages; the structure (levels, groups, pages saved) is the one the
// sharing implies; bad inputs get makePlan's codes.
//
//===----------------------------------------------------------------------===//

#include "cascade/Runtime/AutoCascade.h"
#include "cascade/Runtime/PlanJson.h"
#include "cascade/Runtime/Reference.h"
#include "cascade/Runtime/cascade_runtime.h"

#include "TestUtil.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <thread>

using namespace cascade::runtime;
using namespace cascade::runtime::test;

namespace {

std::vector<int32_t> vec(ArrayView<int32_t> a) {
  return std::vector<int32_t>(a.data(), a.data() + a.size());
}

/// A batch given by each request's page ids, last-page length and queries.
struct PageBatch {
  std::vector<std::vector<int32_t>> pages;
  std::vector<int32_t> last;
  std::vector<int32_t> qoLens; ///< empty: decode
  int64_t numPages = 0;
  int64_t pageSize = 4;
  int64_t hqo = 4, hkv = 2, headDim = 8;

  Batch build(bool graph = false) const {
    Batch b;
    b.qoIndptr = {0};
    b.kvIndptr = {0};
    for (size_t i = 0; i < pages.size(); ++i) {
      b.kvIndices.insert(b.kvIndices.end(), pages[i].begin(), pages[i].end());
      b.kvIndptr.push_back(static_cast<int32_t>(b.kvIndices.size()));
      b.qoIndptr.push_back(b.qoIndptr.back() +
                           (qoLens.empty() ? 1 : qoLens[i]));
    }
    b.kvLastPageLen = last;
    b.in.mode = qoLens.empty() ? PlanMode::Decode : PlanMode::Prefill;
    b.in.num_pages = numPages;
    b.in.page_size = pageSize;
    b.in.num_qo_heads = hqo;
    b.in.num_kv_heads = hkv;
    b.in.head_dim = headDim;
    b.in.num_sms = 16;
    b.in.occupancy = 2;
    b.in.cuda_graph = graph;
    b.inputs(!qoLens.empty());
    return b;
  }
};

/// Random float data for q and the page pool.
struct Data {
  std::vector<float> q, pool;
  Data(const PageBatch &pb, int64_t rows, uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::normal_distribution<float> nd(0.f, 1.f);
    q.resize(static_cast<size_t>(rows * pb.hqo * pb.headDim));
    pool.resize(static_cast<size_t>(pb.numPages * 2 * pb.pageSize * pb.hkv *
                                    pb.headDim));
    for (float &x : q)
      x = nd(rng);
    for (float &x : pool)
      x = nd(rng);
  }
};

ref::AttentionBatch refBatch(const PageBatch &pb, const Data &data,
                             const std::vector<int32_t> &qo,
                             const std::vector<int32_t> &kvp,
                             const std::vector<int32_t> &idx,
                             const std::vector<int32_t> &last) {
  ref::AttentionBatch a;
  a.q = data.q.data();
  a.numQoHeads = pb.hqo;
  a.qoIndptr = qo;
  a.kvIndptr = kvp;
  a.kvIndices = idx;
  a.kvLastPageLen = last;
  a.kv = ref::PagedKvCache::combined(data.pool.data(), pb.numPages, pb.pageSize,
                                     pb.hkv, pb.headDim, ref::KvLayout::NHD);
  return a;
}

/// Max |difference| between plain attention and the auto cascade's levels
/// in the reference (v and s).
double cascadeError(const PageBatch &pb, const Batch &b, const AutoCascade &ac,
                    bool causal, uint64_t seed) {
  const int64_t rows = b.qoIndptr.back();
  Data data(pb, rows, seed);
  ref::AttentionOptions opts;
  opts.causal = causal;
  const size_t nv = static_cast<size_t>(rows * pb.hqo * pb.headDim);
  const size_t ns = static_cast<size_t>(rows * pb.hqo);
  std::vector<double> v0(nv), s0(ns), v1(nv), s1(ns);
  Status s = ref::attention(
      refBatch(pb, data, b.qoIndptr, b.kvIndptr, b.kvIndices, b.kvLastPageLen),
      opts, v0.data(), s0.data());
  EXPECT_TRUE(s.ok()) << s.message();
  std::vector<ref::AttentionBatch> levels;
  for (const AutoCascadeLevel &l : ac.levels) {
    std::vector<int32_t> qo = vec(l.qo_indptr);
    if (qo.empty()) { // decode: one query per request
      qo.resize(l.kv_indptr.size());
      std::iota(qo.begin(), qo.end(), 0);
    }
    levels.push_back(refBatch(pb, data, qo, vec(l.kv_indptr), vec(l.kv_indices),
                              vec(l.kv_last_page_len)));
  }
  s = ref::cascade(levels, opts, v1.data(), s1.data());
  EXPECT_TRUE(s.ok()) << s.message();
  double err = 0;
  for (size_t i = 0; i < nv; ++i)
    err = std::max(err, std::fabs(v0[i] - v1[i]));
  for (size_t i = 0; i < ns; ++i) {
    if (std::isinf(s0[i]) || std::isinf(s1[i])) {
      if (s0[i] != s1[i])
        return INFINITY;
      continue;
    }
    err = std::max(err, std::fabs(s0[i] - s1[i]));
  }
  return err;
}

/// Every level covers the batch's rows; the pages of all levels together
/// are each request's pages (checked by the reference); the statistics add
/// up.
void checkStructure(const Batch &b, const AutoCascade &ac) {
  ASSERT_EQ(ac.plan.levels.size(), ac.levels.size());
  const int64_t rows = b.qoIndptr.back();
  int64_t read = 0;
  for (size_t l = 0; l < ac.levels.size(); ++l) {
    const AutoCascadeLevel &lv = ac.levels[l];
    const std::vector<int32_t> qo = vec(lv.qo_indptr), kvp = vec(lv.kv_indptr);
    if (!qo.empty()) {
      EXPECT_EQ(qo.back(), rows) << "level " << l;
      EXPECT_EQ(qo.size(), kvp.size());
    }
    EXPECT_EQ(lv.kv_last_page_len.size() + 1, lv.kv_indptr.size());
    EXPECT_EQ(int64_t(lv.kv_indices.size()), int64_t(kvp.back()));
    EXPECT_EQ(ac.plan.levels[l].num_rows, rows);
    read += kvp.back();
  }
  EXPECT_EQ(ac.stats.num_levels, int64_t(ac.levels.size()));
  EXPECT_EQ(ac.stats.pages_in, int64_t(b.kvIndptr.back()));
  EXPECT_EQ(ac.stats.pages_read, read);
  EXPECT_EQ(ac.stats.pages_saved, ac.stats.pages_in - read);
  // The last level keeps every non-empty request's last page.
  const AutoCascadeLevel &own = ac.levels.back();
  ASSERT_EQ(own.kv_indptr.size(), b.kvIndptr.size());
  for (size_t i = 0; i + 1 < b.kvIndptr.size(); ++i)
    if (b.kvIndptr[i + 1] > b.kvIndptr[i]) {
      ASSERT_GT(own.kv_indptr[i + 1], own.kv_indptr[i]);
      EXPECT_EQ(own.kv_indices[own.kv_indptr[i + 1] - 1],
                b.kvIndices[b.kvIndptr[i + 1] - 1]);
    }
}

/// Each level's plan is makePlan's for the level's inputs (shared levels
/// with the options' query tile), and the cascade is makeCascadePlan's.
void checkPlansAreMakePlans(const PlanInputs &in, const AutoCascadeOptions &o,
                            const AutoCascade &ac) {
  std::vector<PlanInputs> levels = ac.inputs(in);
  for (size_t l = 0; l + 1 < levels.size(); ++l) {
    levels[l].qo_tile_size = o.shared_qo_tile_size;
    if (o.shared_occupancy > 0)
      levels[l].occupancy = o.shared_occupancy;
  }
  CascadePlan want;
  Status s = makeCascadePlan(levels, want);
  ASSERT_TRUE(s.ok()) << s.message();
  ASSERT_EQ(ac.plan.levels.size(), want.levels.size());
  for (size_t l = 0; l < levels.size(); ++l) {
    const Plan &a = ac.plan.levels[l], &w = want.levels[l];
    Plan single;
    ASSERT_TRUE(makePlan(levels[l], single).ok());
    EXPECT_EQ(single.int_image, w.int_image);
    EXPECT_EQ(a.mode, w.mode);
    EXPECT_EQ(a.batch_size, w.batch_size);
    EXPECT_EQ(a.num_rows, w.num_rows);
    EXPECT_EQ(a.row_capacity, w.row_capacity);
    EXPECT_EQ(a.split_kv, w.split_kv);
    EXPECT_EQ(a.padded_batch_size, w.padded_batch_size);
    EXPECT_EQ(a.num_work_items, w.num_work_items);
    EXPECT_EQ(a.kv_chunk_size, w.kv_chunk_size);
    EXPECT_EQ(a.qo_tile_size, w.qo_tile_size);
    EXPECT_EQ(a.partial_rows_capacity, w.partial_rows_capacity);
    EXPECT_EQ(a.request_indices, w.request_indices);
    EXPECT_EQ(a.kv_tile_indices, w.kv_tile_indices);
    EXPECT_EQ(a.qo_tile_indices, w.qo_tile_indices);
    EXPECT_EQ(a.o_indptr, w.o_indptr);
    EXPECT_EQ(a.merge_indptr, w.merge_indptr);
    EXPECT_EQ(a.block_valid_mask, w.block_valid_mask);
    EXPECT_EQ(a.int_image, w.int_image);
    EXPECT_EQ(a.int_workspace.bytes, w.int_workspace.bytes);
    EXPECT_EQ(a.float_workspace.bytes, w.float_workspace.bytes);
  }
  EXPECT_EQ(ac.plan.int_base, want.int_base);
  EXPECT_EQ(ac.plan.float_base, want.float_base);
  EXPECT_EQ(ac.plan.level_v_offset, want.level_v_offset);
  EXPECT_EQ(ac.plan.level_s_offset, want.level_s_offset);
  EXPECT_EQ(ac.plan.int_bytes, want.int_bytes);
  EXPECT_EQ(ac.plan.float_bytes, want.float_bytes);
  EXPECT_EQ(ac.plan.int_image, want.int_image);
}

std::vector<int32_t> range(int32_t from, int32_t n) {
  std::vector<int32_t> v(static_cast<size_t>(n));
  std::iota(v.begin(), v.end(), from);
  return v;
}

std::vector<int32_t> concat(std::vector<int32_t> a,
                            const std::vector<int32_t> &b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

/// Options under which any sharing pays (to test structure on tiny data).
AutoCascadeOptions eager(int64_t maxLevels = 3) {
  AutoCascadeOptions o;
  o.level_overhead_us = 0;
  o.group_overhead_us = 0;
  o.level_row_bytes = 0;
  o.l2_hidden_fraction = 0;
  o.max_levels = maxLevels;
  return o;
}

} // namespace

TEST(AutoCascade, GroupsOfRequestsWithTheirOwnPrefix) {
  // 3 groups of 4 requests; group g shares 5 + g pages; 2 unique pages each.
  PageBatch pb;
  int32_t next = 0;
  for (int g = 0; g < 3; ++g) {
    std::vector<int32_t> prefix = range(next, 5 + g);
    next += 5 + g;
    for (int r = 0; r < 4; ++r) {
      pb.pages.push_back(concat(prefix, range(next, 2)));
      next += 2;
      pb.last.push_back(1 + (r + g) % 4);
    }
  }
  pb.numPages = next;
  Batch b = pb.build();
  AutoCascade ac;
  Status s = makeAutoCascadePlan(b.in, eager(), ac);
  ASSERT_TRUE(s.ok()) << s.message();
  checkStructure(b, ac);
  ASSERT_EQ(ac.levels.size(), 2u);
  EXPECT_EQ(ac.stats.shared_groups, 3);
  EXPECT_EQ(vec(ac.levels[0].qo_indptr), (std::vector<int32_t>{0, 4, 8, 12}));
  EXPECT_EQ(vec(ac.levels[0].kv_indptr), (std::vector<int32_t>{0, 5, 11, 18}));
  EXPECT_EQ(ac.levels[0].mode, PlanMode::Prefill);
  EXPECT_EQ(ac.levels[1].mode, PlanMode::Decode);
  EXPECT_EQ(ac.stats.pages_saved, 3 * (5 + 6 + 7));
  EXPECT_LT(cascadeError(pb, b, ac, false, 1), 1e-12);
}

TEST(AutoCascade, SharedLevelsTakeTheirOwnOccupancy) {
  // 8 requests sharing 64 pages: the shared level (a prefill) splits to fill
  // the grid of its own kernel (shared_occupancy x 16 SMs), the per-request
  // level keeps the batch's occupancy.
  PageBatch pb;
  std::vector<int32_t> prefix = range(0, 64);
  int32_t next = 64;
  for (int r = 0; r < 8; ++r) {
    pb.pages.push_back(concat(prefix, range(next, 2)));
    next += 2;
    pb.last.push_back(3);
  }
  pb.numPages = next;
  pb.pageSize = 128; // chunks of one page and up
  Batch b = pb.build();
  b.in.occupancy = 4;
  auto plan = [&](int64_t sharedOccupancy, AutoCascade &ac) {
    AutoCascadeOptions o = eager(2);
    o.shared_occupancy = sharedOccupancy;
    Status s = makeAutoCascadePlan(b.in, o, ac);
    ASSERT_TRUE(s.ok()) << s.message();
    ASSERT_EQ(ac.levels.size(), 2u);
    checkPlansAreMakePlans(b.in, o, ac);
  };
  AutoCascade byBatch, own;
  plan(0, byBatch);
  plan(1, own);
  // One query tile over 8 x 2 rows; the grid limit over 2 KV heads.
  EXPECT_EQ(byBatch.plan.levels[0].num_work_items, 4 * 16 / 2);
  EXPECT_EQ(own.plan.levels[0].num_work_items, 16 / 2);
  EXPECT_EQ(own.plan.levels[1].int_image, byBatch.plan.levels[1].int_image);
  AutoCascadeOptions bad;
  bad.shared_occupancy = -1;
  Status s = makeAutoCascadePlan(b.in, bad, own);
  EXPECT_EQ(s.code(), ErrorCode::InvalidArgument);
  EXPECT_EQ(s.message(), "auto cascade shared_occupancy must be in [0, 4096] "
                         "(0 = the batch's occupancy), got -1");
}

TEST(AutoCascade, NoSharingIsThePlainPlan) {
  PageBatch pb;
  std::mt19937_64 rng(3);
  std::vector<int32_t> perm = range(0, 40);
  std::shuffle(perm.begin(), perm.end(), rng);
  for (int r = 0; r < 8; ++r) {
    pb.pages.push_back(
        std::vector<int32_t>(perm.begin() + 5 * r, perm.begin() + 5 * r + 5));
    pb.last.push_back(3);
  }
  pb.numPages = 40;
  for (bool decode : {true, false}) {
    if (!decode)
      pb.qoLens = {1, 2, 3, 4, 1, 2, 3, 4};
    Batch b = pb.build();
    AutoCascade ac;
    ASSERT_TRUE(makeAutoCascadePlan(b.in, eager(), ac).ok());
    checkStructure(b, ac);
    ASSERT_EQ(ac.levels.size(), 1u);
    EXPECT_EQ(ac.stats.pages_saved, 0);
    EXPECT_EQ(vec(ac.levels[0].kv_indices), b.kvIndices);
    Plan plain;
    ASSERT_TRUE(makePlan(b.in, plain).ok());
    const Plan &p = ac.plan.levels[0];
    EXPECT_EQ(p.mode, plain.mode);
    EXPECT_EQ(p.padded_batch_size, plain.padded_batch_size);
    EXPECT_EQ(p.split_kv, plain.split_kv);
    EXPECT_EQ(p.kv_chunk_size, plain.kv_chunk_size);
    EXPECT_EQ(p.int_image, plain.int_image);
    // The cascade's image is the level's, padded to 256 bytes.
    ASSERT_GE(ac.plan.int_image.size(), plain.int_image.size());
    EXPECT_TRUE(std::equal(plain.int_image.begin(), plain.int_image.end(),
                           ac.plan.int_image.begin()));
    EXPECT_LT(cascadeError(pb, b, ac, !decode, 4), 1e-12);
  }
}

TEST(AutoCascade, EverythingSharedKeepsTheLastPage) {
  // Identical page lists (full last pages): each request keeps its last.
  PageBatch pb;
  for (int r = 0; r < 6; ++r) {
    pb.pages.push_back({7, 3, 9, 1, 4});
    pb.last.push_back(4);
  }
  pb.numPages = 10;
  Batch b = pb.build();
  AutoCascade ac;
  ASSERT_TRUE(makeAutoCascadePlan(b.in, eager(), ac).ok());
  checkStructure(b, ac);
  ASSERT_EQ(ac.levels.size(), 2u);
  EXPECT_EQ(vec(ac.levels[0].qo_indptr), (std::vector<int32_t>{0, 6}));
  EXPECT_EQ(vec(ac.levels[0].kv_indices), (std::vector<int32_t>{7, 3, 9, 1}));
  EXPECT_EQ(vec(ac.levels[1].kv_indices), (std::vector<int32_t>(6, 4)));
  EXPECT_EQ(ac.stats.pages_saved, 5 * 4);
  EXPECT_LT(cascadeError(pb, b, ac, false, 5), 1e-12);
}

TEST(AutoCascade, NestedPrefixesMakeNestedLevels) {
  // 8 requests share 4 pages; requests 0-3 share 3 more, 4-7 share 2 more;
  // request 8 shares nothing. Page ids are shuffled and one page id is
  // used twice within a request.
  PageBatch pb;
  std::mt19937_64 rng(7);
  std::vector<int32_t> perm = range(0, 64);
  std::shuffle(perm.begin(), perm.end(), rng);
  int next = 0;
  auto take = [&](int n) {
    std::vector<int32_t> v(perm.begin() + next, perm.begin() + next + n);
    next += n;
    return v;
  };
  std::vector<int32_t> top = take(4), a = take(3), c = take(2);
  a[1] = top[2]; // a duplicated page id inside the shared pages
  for (int r = 0; r < 8; ++r) {
    pb.pages.push_back(concat(concat(top, r < 4 ? a : c), take(1 + r % 3)));
    pb.last.push_back(1 + r % 4);
  }
  pb.pages.push_back(take(3));
  pb.last.push_back(2);
  pb.numPages = 64;
  Batch b = pb.build();
  AutoCascade ac;
  ASSERT_TRUE(makeAutoCascadePlan(b.in, eager(3), ac).ok());
  checkStructure(b, ac);
  ASSERT_EQ(ac.levels.size(), 3u);
  EXPECT_EQ(vec(ac.levels[0].qo_indptr), (std::vector<int32_t>{0, 8, 9}));
  EXPECT_EQ(vec(ac.levels[0].kv_indptr), (std::vector<int32_t>{0, 4, 4}));
  EXPECT_EQ(vec(ac.levels[1].qo_indptr), (std::vector<int32_t>{0, 4, 8, 9}));
  EXPECT_EQ(vec(ac.levels[1].kv_indptr), (std::vector<int32_t>{0, 3, 5, 5}));
  EXPECT_EQ(ac.stats.pages_saved, 7 * 4 + 3 * 3 + 3 * 2);
  EXPECT_LT(cascadeError(pb, b, ac, false, 8), 1e-12);

  // With two levels at most, the nested prefixes fold into one level.
  ASSERT_TRUE(makeAutoCascadePlan(b.in, eager(2), ac).ok());
  checkStructure(b, ac);
  ASSERT_EQ(ac.levels.size(), 2u);
  EXPECT_LT(cascadeError(pb, b, ac, false, 9), 1e-12);
}

TEST(AutoCascade, CostModelSkipsSmallPrefixes) {
  // Two requests sharing 10 pages of 16 tokens (8 KV heads, D=128, f16:
  // 640 KiB saved, ~0.16 us) do not pay for a level at default costs; 16
  // requests sharing 512 pages (~530 us of reads saved) do.
  PageBatch pb;
  pb.pageSize = 16;
  pb.hqo = 32;
  pb.hkv = 8;
  pb.headDim = 128;
  std::vector<int32_t> shared = range(0, 10);
  pb.pages = {concat(shared, {10}), concat(shared, {11})};
  pb.last = {5, 16};
  pb.numPages = 12;
  Batch b = pb.build();
  AutoCascade ac;
  ASSERT_TRUE(makeAutoCascadePlan(b.in, AutoCascadeOptions(), ac).ok());
  EXPECT_EQ(ac.levels.size(), 1u);
  EXPECT_EQ(ac.stats.candidate_groups, 1);
  EXPECT_EQ(ac.stats.shared_groups, 0);

  pb.pages.clear();
  pb.last.clear();
  shared = range(0, 512);
  for (int r = 0; r < 16; ++r) {
    pb.pages.push_back(concat(shared, {512 + r}));
    pb.last.push_back(9);
  }
  pb.numPages = 512 + 16;
  b = pb.build();
  ASSERT_TRUE(makeAutoCascadePlan(b.in, AutoCascadeOptions(), ac).ok());
  ASSERT_EQ(ac.levels.size(), 2u);
  EXPECT_GT(ac.stats.saved_us, 100.0);
  EXPECT_GT(ac.stats.saved_us, ac.stats.overhead_us);
}

TEST(AutoCascade, PlainAttentionHidesReReadsBehindOwnPages) {
  // 128 decode requests, 16 own pages each, behind an 8-page prefix (32/32
  // heads, D=128, f16: 256 KiB a page). The prefix's re-reads (127 x 8
  // pages, 266 MB, 66 us at 4 TB/s) beat the 12 us level alone, but not
  // once half of the batch's unique pages (537 MB: every page once) hide
  // that many re-reads (67 us more); 32 prefix pages (4x the re-reads) pay
  // either way.
  PageBatch pb;
  pb.pageSize = 16;
  pb.hqo = 32;
  pb.hkv = 32;
  pb.headDim = 128;
  for (int32_t prefixPages : {8, 32}) {
    pb.pages.clear();
    pb.last.clear();
    const std::vector<int32_t> shared = range(0, prefixPages);
    for (int32_t r = 0; r < 128; ++r) {
      pb.pages.push_back(concat(shared, range(prefixPages + 16 * r, 16)));
      pb.last.push_back(16);
    }
    pb.numPages = prefixPages + 128 * 16;
    Batch b = pb.build();
    AutoCascade ac;
    AutoCascadeOptions o;
    ASSERT_TRUE(makeAutoCascadePlan(b.in, o, ac).ok());
    EXPECT_EQ(ac.levels.size(), prefixPages == 8 ? 1u : 2u) << prefixPages;
    if (prefixPages == 32) // the level's cost includes the hidden re-reads
      EXPECT_NEAR(ac.stats.overhead_us - o.group_overhead_us,
                  o.level_overhead_us + 128 * 4 * 32 * (128 * 2 + 4) / 4.0e6 +
                      0.5 * (128 * 16 + 32) * 262144 / 4.0e6,
                  0.01);
    o.l2_hidden_fraction = 0;
    ASSERT_TRUE(makeAutoCascadePlan(b.in, o, ac).ok());
    EXPECT_EQ(ac.levels.size(), 2u) << prefixPages;
  }
  AutoCascadeOptions bad;
  bad.l2_hidden_fraction = -0.5;
  Batch b = pb.build();
  AutoCascade ac;
  Status s = makeAutoCascadePlan(b.in, bad, ac);
  EXPECT_EQ(s.code(), ErrorCode::InvalidArgument);
  EXPECT_NE(s.message().find("l2_hidden_fraction"), std::string::npos);
}

TEST(AutoCascade, NonAdjacentSharingIsNotGrouped) {
  // Requests 0 and 2 share 6 pages, request 1 between them shares nothing:
  // a group must be contiguous rows, so there is no cascade.
  PageBatch pb;
  std::vector<int32_t> shared = range(0, 6);
  pb.pages = {concat(shared, {6}), {7, 8}, concat(shared, {9})};
  pb.last = {1, 2, 3};
  pb.numPages = 10;
  Batch b = pb.build();
  AutoCascade ac;
  ASSERT_TRUE(makeAutoCascadePlan(b.in, eager(), ac).ok());
  EXPECT_EQ(ac.levels.size(), 1u);
}

TEST(AutoCascade, CausalPrefillSharesOnlyFullyVisiblePages) {
  // Page 4; requests of 6 pages (last 2 tokens: kv_len 22) share 5 pages.
  // With 12 queries, the earliest query is at position 10: pages 0-1 (tokens
  // 0-7) are fully visible, page 2 (8-11) is not.
  PageBatch pb;
  std::vector<int32_t> shared = range(0, 5);
  for (int r = 0; r < 4; ++r) {
    pb.pages.push_back(concat(shared, {5 + r}));
    pb.last.push_back(2);
  }
  pb.qoLens = {12, 1, 3, 12};
  pb.numPages = 9;
  Batch b = pb.build();
  AutoCascade ac;
  ASSERT_TRUE(makeAutoCascadePlan(b.in, eager(), ac).ok());
  checkStructure(b, ac);
  ASSERT_EQ(ac.levels.size(), 3u); // [0,4) share 2 pages; 1-2 share 5
  EXPECT_EQ(vec(ac.levels[0].kv_indptr), (std::vector<int32_t>{0, 2}));
  EXPECT_EQ(vec(ac.levels[1].qo_indptr), (std::vector<int32_t>{0, 12, 16, 28}));
  EXPECT_EQ(vec(ac.levels[1].kv_indptr), (std::vector<int32_t>{0, 0, 3, 3}));
  EXPECT_LT(cascadeError(pb, b, ac, true, 11), 1e-12);

  // A non-causal batch may share all 5 pages.
  AutoCascadeOptions o = eager();
  o.causal = false;
  ASSERT_TRUE(makeAutoCascadePlan(b.in, o, ac).ok());
  checkStructure(b, ac);
  ASSERT_EQ(ac.levels.size(), 2u);
  EXPECT_EQ(vec(ac.levels[0].kv_indptr), (std::vector<int32_t>{0, 5}));
  EXPECT_LT(cascadeError(pb, b, ac, false, 12), 1e-12);
}

TEST(AutoCascade, RandomBatchesEqualPlainAttention) {
  // Random sharing trees: requests in runs with a shared prefix, nested
  // sub-runs, shuffled and duplicated page ids, empty requests, decode and
  // (causal or not) prefill, with and without graph mode.
  std::mt19937_64 rng(2026);
  int cascades = 0, nested = 0;
  for (int iter = 0; iter < 120; ++iter) {
    PageBatch pb;
    pb.pageSize = 1 + rng() % 5;
    pb.numPages = 48;
    auto randPages = [&](int n) {
      std::vector<int32_t> v;
      for (int i = 0; i < n; ++i)
        v.push_back(static_cast<int32_t>(rng() % pb.numPages));
      return v;
    };
    const bool prefill = rng() % 2;
    const int runs = 1 + rng() % 4;
    for (int r = 0; r < runs; ++r) {
      std::vector<int32_t> p1 = randPages(rng() % 6);
      const int subs = 1 + rng() % 3;
      for (int s = 0; s < subs; ++s) {
        std::vector<int32_t> p2 = concat(p1, randPages(rng() % 4));
        const int members = 1 + rng() % 4;
        for (int m = 0; m < members; ++m) {
          std::vector<int32_t> p = concat(p2, randPages(rng() % 3));
          if (rng() % 8 == 0)
            p.clear();
          pb.pages.push_back(p);
          pb.last.push_back(
              p.empty() ? 0 : static_cast<int32_t>(1 + rng() % pb.pageSize));
          if (prefill)
            pb.qoLens.push_back(static_cast<int32_t>(rng() % 5));
        }
      }
    }
    const bool graph = rng() % 4 == 0;
    Batch b = pb.build(graph);
    AutoCascadeOptions o = eager(1 + rng() % 4);
    o.causal = rng() % 2;
    const bool causal = prefill && o.causal;
    AutoCascade ac;
    Status s = makeAutoCascadePlan(b.in, o, ac);
    ASSERT_TRUE(s.ok()) << s.message();
    checkStructure(b, ac);
    if (graph)
      EXPECT_EQ(int64_t(ac.levels.size()), o.max_levels);
    else
      EXPECT_LE(int64_t(ac.levels.size()), o.max_levels);
    EXPECT_LT(cascadeError(pb, b, ac, causal, iter), 1e-12) << "iter " << iter;
    checkPlansAreMakePlans(b.in, o, ac);
    cascades += ac.stats.pages_saved > 0;
    nested += ac.stats.pages_saved > 0 && ac.levels.size() > 2 &&
              ac.levels[1].num_page_groups > 0;
  }
  // The draws exercise cascades, nested ones included.
  EXPECT_GT(cascades, 40);
  EXPECT_GT(nested, 5);
}

TEST(AutoCascade, GraphModeHasAFixedStructure) {
  // Two batches of 16 requests with different sharing: the same number of
  // levels and groups, the same grids and workspace sizes.
  auto batch = [](int groups, int prefix) {
    PageBatch pb;
    pb.pageSize = 16;
    int32_t next = 0;
    const int per = 16 / groups;
    for (int g = 0; g < groups; ++g) {
      std::vector<int32_t> p = range(next, prefix);
      next += prefix;
      for (int r = 0; r < per; ++r) {
        pb.pages.push_back(concat(p, range(next, 1 + r % 3)));
        next += 1 + r % 3;
        pb.last.push_back(1 + r);
      }
    }
    pb.numPages = next;
    return pb;
  };
  AutoCascadeOptions o = eager(3);
  o.graph_group_capacity = 6;
  std::vector<AutoCascade> acs(3);
  PageBatch pbs[3] = {batch(2, 40), batch(4, 8), batch(16, 3)};
  for (int k = 0; k < 3; ++k) {
    Batch b = pbs[k].build(true);
    ASSERT_TRUE(makeAutoCascadePlan(b.in, o, acs[k]).ok());
    checkStructure(b, acs[k]);
    ASSERT_EQ(acs[k].levels.size(), 3u);
    for (int l = 0; l < 2; ++l)
      EXPECT_EQ(acs[k].levels[l].kv_last_page_len.size(), 6);
    EXPECT_LT(cascadeError(pbs[k], b, acs[k], false, 20 + k), 1e-12);
  }
  EXPECT_GT(acs[0].stats.pages_saved, 0);
  EXPECT_GT(acs[1].stats.pages_saved, 0);
  EXPECT_EQ(acs[2].stats.pages_saved, 0); // 16 singletons: nothing shared
  for (int k = 1; k < 3; ++k) {
    EXPECT_EQ(acs[k].plan.int_bytes, acs[0].plan.int_bytes);
    EXPECT_EQ(acs[k].plan.float_bytes, acs[0].plan.float_bytes);
    for (int l = 0; l < 3; ++l)
      EXPECT_EQ(acs[k].plan.levels[l].padded_batch_size,
                acs[0].plan.levels[l].padded_batch_size);
  }

  // 4 groups of 4 (4 groups) fit a capacity of 4; 8 groups of 2 do not, and
  // keep only the groups that fit (the rest read their pages themselves).
  o.graph_group_capacity = 4;
  PageBatch many = batch(8, 5);
  Batch b = many.build(true);
  AutoCascade ac;
  ASSERT_TRUE(makeAutoCascadePlan(b.in, o, ac).ok());
  checkStructure(b, ac);
  EXPECT_EQ(ac.levels[0].kv_last_page_len.size(), 4);
  EXPECT_GT(ac.stats.shared_groups, 0);
  EXPECT_LT(ac.stats.shared_groups, 8);
  EXPECT_LT(cascadeError(many, b, ac, false, 30), 1e-12);
}

TEST(AutoCascade, BadInputsGetMakePlansErrors) {
  PageBatch pb;
  pb.pages = {{0, 1, 2}, {0, 1, 3}};
  pb.last = {2, 4};
  pb.numPages = 4;
  auto same = [](const PlanInputs &in) {
    Plan p;
    AutoCascade ac;
    Status a = makePlan(in, p);
    Status b = makeAutoCascadePlan(in, AutoCascadeOptions(), ac);
    EXPECT_FALSE(a.ok());
    EXPECT_EQ(a.code(), b.code());
    EXPECT_EQ(a.message(), b.message());
  };
  {
    Batch b = pb.build();
    b.kvIndices[4] = 9; // outside the pool
    same(b.inputs(false));
  }
  {
    Batch b = pb.build();
    b.kvIndices[0] = -1; // negative, in a request the search compares
    same(b.inputs(false));
  }
  {
    Batch b = pb.build();
    b.in.num_pages = 0; // an empty pool
    same(b.inputs(false));
  }
  {
    // One id too few (more are a preallocated buffer's tail, read by
    // neither: IndexBufferTest.cpp).
    Batch b = pb.build();
    b.kvIndices.pop_back();
    same(b.inputs(false));
  }
  {
    // A bad id is reported before bad options, and without the search
    // (one level) too.
    Batch b = pb.build();
    b.kvIndices[5] = 4;
    b.inputs(false);
    Plan p;
    Status want = makePlan(b.in, p);
    AutoCascade ac;
    for (int64_t levels : {0, 1, 3}) {
      AutoCascadeOptions o;
      o.max_levels = levels;
      Status got = makeAutoCascadePlan(b.in, o, ac);
      EXPECT_EQ(got.code(), ErrorCode::PageOutOfRange);
      EXPECT_EQ(got.message(), want.message());
    }
  }
  {
    Batch b = pb.build();
    b.kvIndptr[1] = 7; // not monotone
    same(b.inputs(false));
  }
  {
    Batch b = pb.build();
    b.kvLastPageLen[0] = 5; // > page_size
    same(b.inputs(false));
  }
  {
    Batch b = pb.build();
    b.in.num_qo_heads = 3;
    same(b.inputs(false));
  }
  {
    Batch b = pb.build();
    b.kvLastPageLen.pop_back();
    same(b.inputs(false));
  }
  {
    Batch b = pb.build();
    b.in.page_size = 0;
    same(b.inputs(false));
  }
  Batch b = pb.build();
  AutoCascade ac;
  b.inputs(false);
  b.in.kv_indices = ArrayView<int32_t>();
  Status s = makeAutoCascadePlan(b.in, AutoCascadeOptions(), ac);
  EXPECT_EQ(s.code(), ErrorCode::InvalidArgument);
  EXPECT_NE(s.message().find("kv_indices"), std::string::npos);
  b.inputs(false);
  AutoCascadeOptions o;
  o.max_levels = 0;
  EXPECT_EQ(makeAutoCascadePlan(b.in, o, ac).code(),
            ErrorCode::InvalidArgument);
  o = AutoCascadeOptions();
  o.bandwidth_bytes_per_us = 0;
  EXPECT_EQ(makeAutoCascadePlan(b.in, o, ac).code(),
            ErrorCode::InvalidArgument);
  o = AutoCascadeOptions();
  o.level_overhead_us = NAN;
  EXPECT_EQ(makeAutoCascadePlan(b.in, o, ac).code(),
            ErrorCode::InvalidArgument);
}

TEST(AutoCascade, CApi) {
  // 2 groups of 3 requests sharing 8 pages of 16 tokens (8 KV heads,
  // D=128): eager options are not reachable from C, so the prefixes are
  // long enough to pay at default costs (3 x 2 x 512 pages).
  PageBatch pb;
  pb.pageSize = 16;
  pb.hqo = 32;
  pb.hkv = 8;
  pb.headDim = 128;
  int32_t next = 0;
  for (int g = 0; g < 2; ++g) {
    std::vector<int32_t> prefix = range(next, 512);
    next += 512;
    for (int r = 0; r < 3; ++r) {
      pb.pages.push_back(concat(prefix, range(next, 2)));
      next += 2;
      pb.last.push_back(5);
    }
  }
  pb.numPages = next;
  Batch b = pb.build();
  cascade_plan_inputs_t in;
  cascade_plan_inputs_init(&in);
  in.batch_size = 6;
  in.kv_indptr = b.kvIndptr.data();
  in.kv_last_page_len = b.kvLastPageLen.data();
  in.kv_indices = b.kvIndices.data();
  in.num_pages = pb.numPages;
  in.num_qo_heads = 32;
  in.num_kv_heads = 8;
  in.head_dim = 128;
  in.page_size = 16;
  in.num_sms = 16;
  in.occupancy = 2;
  cascade_plan_t plan = nullptr;
  ASSERT_EQ(cascade_plan_auto_cascade(&in, 0, 128, 0, &plan), CASCADE_OK)
      << cascade_last_error();
  ASSERT_EQ(cascade_plan_num_levels(plan), 2);
  AutoCascadeOptions o;
  o.shared_qo_tile_size = 128;
  o.causal = false;
  AutoCascade ac;
  ASSERT_TRUE(makeAutoCascadePlan(b.in, o, ac).ok());
  const char *names[] = {"qo_indptr", "kv_indptr", "kv_indices",
                         "kv_last_page_len"};
  for (int l = 0; l < 2; ++l)
    for (const char *name : names) {
      const int32_t *data = nullptr;
      int64_t count = -1;
      ASSERT_EQ(cascade_plan_level_array(plan, l, name, &data, &count),
                CASCADE_OK);
      const AutoCascadeLevel &lv = ac.levels[l];
      ArrayView<int32_t> want = !std::strcmp(name, "qo_indptr")   ? lv.qo_indptr
                                : !std::strcmp(name, "kv_indptr") ? lv.kv_indptr
                                : !std::strcmp(name, "kv_indices")
                                    ? lv.kv_indices
                                    : lv.kv_last_page_len;
      EXPECT_EQ(std::vector<int32_t>(data, data + count), vec(want))
          << "level " << l << " " << name;
    }
  int64_t v = 0;
  ASSERT_EQ(cascade_plan_get_scalar(plan, 0, "qo_tile_size", &v), CASCADE_OK);
  EXPECT_EQ(v, 128);
  char *json = nullptr;
  ASSERT_EQ(cascade_plan_to_json(plan, &json), CASCADE_OK);
  EXPECT_EQ(std::string(json), autoCascadeToJson(ac));
  cascade_free(json);
  const int32_t *data = nullptr;
  int64_t count = 0;
  EXPECT_EQ(cascade_plan_level_array(plan, 2, "kv_indptr", &data, &count),
            CASCADE_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(cascade_plan_level_array(plan, 0, "indices", &data, &count),
            CASCADE_ERROR_NOT_FOUND);
  cascade_plan_destroy(plan);

  // The JSON path gives the same plan.
  std::string desc =
      R"({"mode": "decode", "page_size": 16, "num_qo_heads": 32,
          "num_kv_heads": 8, "head_dim": 128, "num_sms": 16, "occupancy": 2,
          "auto_cascade": {"shared_qo_tile_size": 128}, "kv_indptr": [)";
  for (size_t i = 0; i < b.kvIndptr.size(); ++i)
    desc += (i ? "," : "") + std::to_string(b.kvIndptr[i]);
  desc += R"(], "kv_last_page_len": [5, 5, 5, 5, 5, 5], "kv_indices": [)";
  for (size_t i = 0; i < b.kvIndices.size(); ++i)
    desc += (i ? "," : "") + std::to_string(b.kvIndices[i]);
  desc += "]}";
  ASSERT_EQ(cascade_plan_create_from_json(desc.data(), desc.size(), &plan),
            CASCADE_OK)
      << cascade_last_error();
  ASSERT_EQ(cascade_plan_to_json(plan, &json), CASCADE_OK);
  EXPECT_EQ(std::string(json), autoCascadeToJson(ac));
  cascade_free(json);
  cascade_plan_destroy(plan);

  // Bad input: makePlan's codes; kv_indices required.
  in.kv_indices = nullptr;
  EXPECT_EQ(cascade_plan_auto_cascade(&in, 0, 0, 0, &plan),
            CASCADE_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(cascade_last_error()).find("kv_indices"),
            std::string::npos);
  in.kv_indices = b.kvIndices.data();
  in.num_pages = 3;
  EXPECT_EQ(cascade_plan_auto_cascade(&in, 0, 0, 0, &plan),
            CASCADE_ERROR_PAGE_OUT_OF_RANGE);
  EXPECT_EQ(cascade_plan_auto_cascade(nullptr, 0, 0, 0, &plan),
            CASCADE_ERROR_INVALID_ARGUMENT);
}

TEST(AutoCascade, BadPageIdsAnywhereGetMakePlansError) {
  // The search checks each shared page id once (in the level that reads
  // it), not once per request: a bad id in a shared prefix (in every copy
  // of it, or in one), in a request's own pages, or in a batch without
  // sharing is still found, and the error is makePlan's (the first bad id),
  // under any options.
  std::mt19937_64 rng(99);
  int inShared = 0;
  for (int iter = 0; iter < 300; ++iter) {
    PageBatch pb;
    pb.pageSize = 1 + rng() % 4;
    pb.numPages = 40;
    auto randPages = [&](int n) {
      std::vector<int32_t> v;
      for (int i = 0; i < n; ++i)
        v.push_back(static_cast<int32_t>(rng() % pb.numPages));
      return v;
    };
    const int runs = 1 + rng() % 3;
    std::vector<int> firstOfRun;
    for (int r = 0; r < runs; ++r) {
      std::vector<int32_t> prefix = randPages(rng() % 7);
      firstOfRun.push_back(static_cast<int>(pb.pages.size()));
      for (int m = 0, members = 1 + rng() % 4; m < members; ++m) {
        pb.pages.push_back(concat(prefix, randPages(1 + rng() % 3)));
        pb.last.push_back(static_cast<int32_t>(1 + rng() % pb.pageSize));
      }
    }
    const int32_t bad = rng() % 2 ? -1 - static_cast<int32_t>(rng() % 5)
                                  : 40 + static_cast<int32_t>(rng() % 5);
    const int where = rng() % 3;
    const size_t req = rng() % pb.pages.size();
    std::vector<int32_t> &victim = pb.pages[req];
    const size_t pos = rng() % victim.size();
    if (where == 0) {
      // The same page of every member of its run: the sharing is kept.
      const int r = static_cast<int>(std::upper_bound(firstOfRun.begin(),
                                                      firstOfRun.end(),
                                                      static_cast<int>(req)) -
                                     firstOfRun.begin() - 1);
      const size_t end = r + 1 < runs ? firstOfRun[r + 1] : pb.pages.size();
      size_t common = victim.size();
      for (size_t k = firstOfRun[r]; k < end; ++k)
        common = std::min(common, pb.pages[k].size());
      const size_t p = pos % common;
      for (size_t k = firstOfRun[r]; k < end; ++k)
        pb.pages[k][p] = bad;
      inShared += end - firstOfRun[r] > 1 && p + 1 < common;
    } else if (where == 1) {
      victim[pos] = bad;
    } // else: no bad id
    Batch b = pb.build(rng() % 4 == 0);
    Plan plain;
    Status want = makePlan(b.in, plain);
    EXPECT_EQ(want.ok(), where == 2);
    for (int64_t levels : {1, 2, 3}) {
      AutoCascadeOptions o = eager(levels);
      o.causal = rng() % 2;
      AutoCascade ac;
      Status got = makeAutoCascadePlan(b.in, o, ac);
      EXPECT_EQ(got.code(), want.code()) << "iter " << iter;
      EXPECT_EQ(got.message(), want.message()) << "iter " << iter;
    }
  }
  EXPECT_GT(inShared, 20); // bad ids inside shared prefixes were drawn
}

TEST(AutoCascade, ReusedBuffersGiveTheSameResult) {
  // Cascades of different shapes one after the other (each call reuses the
  // arrays of the result it replaces) equal those planned on a new thread.
  std::mt19937_64 rng(5);
  std::vector<PageBatch> pbs;
  for (int k = 0; k < 12; ++k) {
    PageBatch pb;
    pb.pageSize = 16;
    pb.numPages = 5000;
    int32_t next = 0;
    const int groups = 1 + rng() % 6, per = 1 + rng() % 9;
    const int prefix = static_cast<int>(rng() % 200);
    for (int g = 0; g < groups; ++g) {
      std::vector<int32_t> p = range(next, prefix);
      next += prefix;
      for (int r = 0; r < per; ++r) {
        const int own = 1 + static_cast<int>(rng() % 30);
        pb.pages.push_back(concat(p, range(next, own)));
        next += own;
        pb.last.push_back(static_cast<int32_t>(1 + rng() % 16));
        if (k % 2)
          pb.qoLens.push_back(static_cast<int32_t>(1 + rng() % 20));
      }
    }
    pbs.push_back(pb);
  }
  AutoCascade reused;
  for (size_t k = 0; k < pbs.size(); ++k) {
    Batch b = pbs[k].build(k % 3 == 2);
    AutoCascadeOptions o = eager(2 + k % 2);
    AutoCascade fresh;
    Status sf;
    std::thread([&] { sf = makeAutoCascadePlan(b.in, o, fresh); }).join();
    ASSERT_TRUE(sf.ok()) << sf.message();
    ASSERT_TRUE(makeAutoCascadePlan(b.in, o, reused).ok());
    ASSERT_EQ(reused.levels.size(), fresh.levels.size());
    for (size_t l = 0; l < fresh.levels.size(); ++l) {
      const AutoCascadeLevel &x = reused.levels[l], &y = fresh.levels[l];
      EXPECT_EQ(x.mode, y.mode);
      EXPECT_EQ(vec(x.qo_indptr), vec(y.qo_indptr));
      EXPECT_EQ(vec(x.kv_indptr), vec(y.kv_indptr));
      EXPECT_EQ(vec(x.kv_indices), vec(y.kv_indices));
      EXPECT_EQ(vec(x.kv_last_page_len), vec(y.kv_last_page_len));
      EXPECT_EQ(x.num_page_groups, y.num_page_groups);
      EXPECT_EQ(reused.plan.levels[l].int_image,
                fresh.plan.levels[l].int_image);
    }
    EXPECT_EQ(reused.plan.int_image, fresh.plan.int_image);
    EXPECT_EQ(reused.plan.float_bytes, fresh.plan.float_bytes);
    EXPECT_EQ(reused.stats.pages_saved, fresh.stats.pages_saved);
    EXPECT_EQ(reused.stats.candidate_groups, fresh.stats.candidate_groups);
    EXPECT_EQ(reused.stats.shared_groups, fresh.stats.shared_groups);
    EXPECT_EQ(reused.stats.saved_us, fresh.stats.saved_us);
    checkPlansAreMakePlans(b.in, o, reused);
  }
}
