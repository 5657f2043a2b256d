//===- PlanTest.cpp - Decode, prefill and cascade plans -------------------===//

#include "TestUtil.h"

#include "cascade/Runtime/Plan.h"

#include <limits>
#include <string>
#include <thread>

using namespace cascade::runtime;
using namespace cascade::runtime::test;

TEST(DecodePlan, SplitsToFillTheGrid) {
  // Grid 4, 2 requests x 1 KV head: split; the smallest chunk (of at least
  // 32 / 16 = 2 pages) whose items fit the grid is 4 pages: 3 + 1 items.
  Batch b =
      makeBatch(PlanMode::Decode, {10, 2}, {}, 16, 8, 1, 128, 4, 1, false);
  Plan p;
  ASSERT_TRUE(makePlan(b.inputs(false), p).ok());
  checkPlanInvariants(b.in, p);
  EXPECT_TRUE(p.split_kv);
  EXPECT_EQ(p.kv_chunk_size_pages, 4);
  EXPECT_EQ(p.kv_chunk_size, 64);
  EXPECT_EQ(p.request_indices, (std::vector<int32_t>{0, 0, 0, 1}));
  EXPECT_EQ(p.kv_tile_indices, (std::vector<int32_t>{0, 1, 2, 0}));
  EXPECT_EQ(p.o_indptr, (std::vector<int32_t>{0, 3, 4}));
  EXPECT_EQ(p.merge_indptr, (std::vector<int32_t>{0, 3, 4}));
  EXPECT_EQ(p.padded_batch_size, 4);
  EXPECT_EQ(p.num_partial_rows, 4);
}

TEST(DecodePlan, NoSplitWhenTheBatchFillsTheGrid) {
  Batch b = makeBatch(PlanMode::Decode, {100, 200, 300, 400}, {}, 16, 8, 2, 128,
                      4, 1, false);
  Plan p;
  ASSERT_TRUE(makePlan(b.inputs(false), p).ok());
  checkPlanInvariants(b.in, p);
  EXPECT_FALSE(p.split_kv);
  EXPECT_EQ(p.padded_batch_size, 4);
  EXPECT_EQ(p.kv_chunk_size_pages, 400);
  EXPECT_EQ(p.float_workspace.find("tmp_v")->bytes, 0);
}

TEST(DecodePlan, ShortRequestsAreNotSplit) {
  // Requests of at most 128 tokens are not split (3 pages of 16); longer
  // ones split into chunks of down to 32 tokens (2 pages).
  Batch b =
      makeBatch(PlanMode::Decode, {3, 8}, {}, 16, 4, 1, 64, 132, 2, false);
  Plan p;
  ASSERT_TRUE(makePlan(b.inputs(false), p).ok());
  checkPlanInvariants(b.in, p);
  EXPECT_FALSE(p.split_kv);
  b = makeBatch(PlanMode::Decode, {3, 9}, {}, 16, 4, 1, 64, 132, 2, false);
  ASSERT_TRUE(makePlan(b.inputs(false), p).ok());
  checkPlanInvariants(b.in, p);
  EXPECT_TRUE(p.split_kv);
  EXPECT_EQ(p.kv_chunk_size_pages, 2);
  EXPECT_EQ(p.request_indices, (std::vector<int32_t>{0, 0, 1, 1, 1, 1, 1}));
}

TEST(DecodePlan, EmptyRequestsGetOneWorkItem) {
  Batch b =
      makeBatch(PlanMode::Decode, {0, 40, 0}, {}, 16, 4, 4, 64, 16, 1, false);
  Plan p;
  ASSERT_TRUE(makePlan(b.inputs(false), p).ok());
  checkPlanInvariants(b.in, p);
  EXPECT_TRUE(p.split_kv);
  EXPECT_EQ(p.request_indices.front(), 0);
  EXPECT_EQ(p.request_indices.back(), 2);
  EXPECT_EQ(p.o_indptr[1] - p.o_indptr[0], 1);
  EXPECT_EQ(p.o_indptr[3] - p.o_indptr[2], 1);
}

TEST(DecodePlan, EmptyBatch) {
  Batch b = makeBatch(PlanMode::Decode, {}, {}, 16, 4, 4, 64, 16, 1, false);
  Plan p;
  ASSERT_TRUE(makePlan(b.inputs(false), p).ok());
  checkPlanInvariants(b.in, p);
  EXPECT_EQ(p.padded_batch_size, 0);
}

TEST(DecodePlan, CudaGraphSizesDependOnlyOnBatchHeadsDevice) {
  std::mt19937_64 rng(7);
  Plan first;
  for (int round = 0; round < 50; ++round) {
    std::vector<int32_t> pages(5);
    for (int32_t &x : pages)
      x = static_cast<int32_t>(rng() % 300);
    Batch b = makeBatch(PlanMode::Decode, pages, {}, 16, 32, 8, 128, 132, 2,
                        true, &rng);
    Plan p;
    ASSERT_TRUE(makePlan(b.inputs(false), p).ok());
    checkPlanInvariants(b.in, p);
    EXPECT_TRUE(p.split_kv);
    EXPECT_EQ(p.padded_batch_size, 132 * 2 / 8);
    if (round == 0) {
      first = p;
      continue;
    }
    EXPECT_EQ(p.padded_batch_size, first.padded_batch_size);
    EXPECT_EQ(p.split_kv, first.split_kv);
    EXPECT_EQ(p.int_workspace.bytes, first.int_workspace.bytes);
    EXPECT_EQ(p.float_workspace.bytes, first.float_workspace.bytes);
  }
}

TEST(DecodePlan, CudaGraphWithoutSplitWhenTheBatchIsLarge) {
  std::vector<int32_t> pages(100, 7);
  Batch b =
      makeBatch(PlanMode::Decode, pages, {}, 16, 32, 8, 128, 132, 1, true);
  Plan p;
  ASSERT_TRUE(makePlan(b.inputs(false), p).ok());
  checkPlanInvariants(b.in, p);
  EXPECT_FALSE(p.split_kv);
  EXPECT_EQ(p.padded_batch_size, 100);
}

TEST(DecodePlan, QoIndptrMustBeArange) {
  Batch b = makeBatch(PlanMode::Decode, {1, 1}, {}, 16, 4, 4, 64, 16, 1, false);
  Plan p;
  ASSERT_TRUE(makePlan(b.inputs(true), p).ok()); // arange is fine
  b.qoIndptr = {0, 2, 3};
  Status s = makePlan(b.inputs(true), p);
  EXPECT_EQ(s.code(), ErrorCode::InvalidIndptr);
  EXPECT_EQ(s.message(), "decode expects one query per request, but request "
                         "0 has 2 (use mode prefill)");
}

TEST(PrefillPlan, TileSizeFromAveragePackedLength) {
  EXPECT_EQ(chooseQoTileSize(1, 128), 16);
  EXPECT_EQ(chooseQoTileSize(16, 128), 16);
  EXPECT_EQ(chooseQoTileSize(17, 128), 64);
  EXPECT_EQ(chooseQoTileSize(64, 128), 64);
  EXPECT_EQ(chooseQoTileSize(65, 128), 128);
  EXPECT_EQ(chooseQoTileSize(65, 256), 64);

  Batch b = makeBatch(PlanMode::Prefill, {4, 4}, {100, 60}, 16, 4, 1, 128, 132,
                      1, false);
  Plan p;
  ASSERT_TRUE(makePlan(b.inputs(), p).ok());
  checkPlanInvariants(b.in, p);
  EXPECT_EQ(p.qo_tile_size, 128); // avg packed (160 * 4) / 2 = 320
  EXPECT_EQ(p.num_rows, 160);
}

TEST(PrefillPlan, SplitsLongKvAcrossTiles) {
  Batch b =
      makeBatch(PlanMode::Prefill, {400}, {10}, 16, 8, 8, 128, 132, 1, false);
  Plan p;
  ASSERT_TRUE(makePlan(b.inputs(), p).ok());
  checkPlanInvariants(b.in, p);
  EXPECT_EQ(p.qo_tile_size, 16);
  EXPECT_TRUE(p.split_kv);
  EXPECT_GT(p.num_work_items, 1);
  EXPECT_LE(p.num_work_items, 132 / 8);
  // Row j of the request has its partial states at o_indptr[0] + j * n.
  const int64_t n = p.num_work_items;
  EXPECT_EQ(p.merge_indptr[3], 3 * n);
  EXPECT_EQ(p.num_partial_rows, 10 * n);
}

TEST(PrefillPlan, ChunksHoldAtLeast128Tokens) {
  // Prefill's chunks stay at 128 tokens or more (8 pages of 16), where
  // decode's would go down to 2 pages.
  Batch b =
      makeBatch(PlanMode::Prefill, {12}, {1}, 16, 8, 8, 128, 132, 1, false);
  Plan p;
  ASSERT_TRUE(makePlan(b.inputs(), p).ok());
  checkPlanInvariants(b.in, p);
  EXPECT_TRUE(p.split_kv);
  EXPECT_EQ(p.kv_chunk_size_pages, 8);
  EXPECT_EQ(p.num_work_items, 2);
}

TEST(PrefillPlan, RequestsWithoutQueriesHaveNoWork) {
  Batch b = makeBatch(PlanMode::Prefill, {5, 5, 0}, {0, 3, 2}, 4, 2, 1, 64, 8,
                      1, false);
  Plan p;
  ASSERT_TRUE(makePlan(b.inputs(), p).ok());
  checkPlanInvariants(b.in, p);
  for (int64_t w = 0; w < p.num_work_items; ++w)
    EXPECT_NE(p.request_indices[w], 0);
}

TEST(PrefillPlan, CudaGraphSizesAreStableAcrossReplans) {
  std::mt19937_64 rng(11);
  const int64_t maxRows = 512;
  Plan first;
  for (int round = 0; round < 50; ++round) {
    std::vector<int32_t> pages(8), qo(8);
    int64_t rows = 0;
    for (int i = 0; i < 8; ++i) {
      pages[i] = static_cast<int32_t>(rng() % 200);
      qo[i] = static_cast<int32_t>(rng() % 64);
      rows += qo[i];
    }
    ASSERT_LE(rows, maxRows);
    Batch b = makeBatch(PlanMode::Prefill, pages, qo, 16, 32, 8, 128, 132, 2,
                        true, &rng);
    b.in.max_num_rows = maxRows;
    Plan p;
    ASSERT_TRUE(makePlan(b.inputs(), p).ok());
    checkPlanInvariants(b.in, p);
    if (round == 0) {
      first = p;
      continue;
    }
    EXPECT_EQ(p.padded_batch_size, first.padded_batch_size);
    EXPECT_EQ(p.qo_tile_size, first.qo_tile_size);
    EXPECT_EQ(p.split_kv, first.split_kv);
    EXPECT_EQ(p.int_workspace.bytes, first.int_workspace.bytes);
    EXPECT_EQ(p.float_workspace.bytes, first.float_workspace.bytes);
    EXPECT_EQ(p.merge_indptr.size(), first.merge_indptr.size());
  }
}

TEST(PrefillPlan, CudaGraphRejectsRowsPastTheCapacity) {
  Batch b = makeBatch(PlanMode::Prefill, {2}, {9}, 16, 4, 4, 64, 8, 1, true);
  b.in.max_num_rows = 8;
  Plan p;
  Status s = makePlan(b.inputs(), p);
  EXPECT_EQ(s.code(), ErrorCode::InvalidArgument);
  EXPECT_EQ(s.message(), "max_num_rows (8) is smaller than the 9 query rows "
                         "of this batch");
}

TEST(CascadePlan, SharedPrefixPlusUniqueSuffixes) {
  Batch prefix =
      makeBatch(PlanMode::Prefill, {64}, {3}, 16, 32, 8, 128, 132, 2, false);
  Batch unique =
      makeBatch(PlanMode::Decode, {2, 1, 2}, {}, 16, 32, 8, 128, 132, 2, false);
  CascadePlan c;
  ASSERT_TRUE(makeCascadePlan({prefix.inputs(), unique.inputs(false)}, c).ok());
  ASSERT_EQ(c.levels.size(), 2u);
  checkPlanInvariants(prefix.in, c.levels[0]);
  checkPlanInvariants(unique.in, c.levels[1]);
  EXPECT_EQ(c.num_rows, 3);
  EXPECT_EQ(c.int_base[0], 0);
  EXPECT_GE(c.int_base[1], c.levels[0].int_workspace.bytes);
  EXPECT_EQ(c.int_base[1] % 256, 0);
  EXPECT_EQ(c.level_v_offset[0], -1);
  EXPECT_EQ(c.level_v_bytes, 3 * 32 * 128 * 2);
  EXPECT_EQ(c.level_s_bytes, 3 * 32 * 4);
  EXPECT_LE(c.level_s_offset[1] + c.level_s_bytes, c.float_bytes);
  EXPECT_EQ(int64_t(c.int_image.size()), c.int_bytes);
  EXPECT_EQ(std::memcmp(c.int_image.data() + c.int_base[1],
                        c.levels[1].int_image.data(),
                        c.levels[1].int_image.size()),
            0);
}

TEST(CascadePlan, LevelsMustAgreeOnRows) {
  Batch a = makeBatch(PlanMode::Prefill, {4}, {4}, 16, 4, 4, 64, 8, 1, false);
  Batch b =
      makeBatch(PlanMode::Decode, {1, 1, 1}, {}, 16, 4, 4, 64, 8, 1, false);
  CascadePlan c;
  Status s = makeCascadePlan({a.inputs(), b.inputs(false)}, c);
  EXPECT_EQ(s.code(), ErrorCode::LevelMismatch);
  EXPECT_EQ(s.message(), "level 1 covers 3 query rows but level 0 covers 4 "
                         "(every level's qo_indptr[-1] must agree)");
}

TEST(CascadePlan, LevelErrorsNameTheLevel) {
  Batch a = makeBatch(PlanMode::Prefill, {4}, {2}, 16, 4, 4, 64, 8, 1, false);
  Batch b = makeBatch(PlanMode::Decode, {1, 1}, {}, 16, 4, 4, 64, 8, 1, false);
  b.kvLastPageLen[1] = 17;
  CascadePlan c;
  Status s = makeCascadePlan({a.inputs(), b.inputs(false)}, c);
  EXPECT_EQ(s.code(), ErrorCode::InvalidLastPageLen);
  EXPECT_EQ(s.message(), "level 1: kv_last_page_len[1] = 17 is outside [1, "
                         "page_size = 16]");
  s = makeCascadePlan({}, c);
  EXPECT_EQ(s.code(), ErrorCode::InvalidArgument);
}

TEST(Plan, LargeWorkspacesUse64BitSizes) {
  // 2^31+ floats of partial state: sizes must not wrap.
  Batch b = makeBatch(PlanMode::Prefill, {1 << 21}, {1 << 16}, 1, 1, 1, 256,
                      132, 8, false);
  b.kvIndices.clear();
  b.in.qo_tile_size = 4096;
  Plan p;
  ASSERT_TRUE(makePlan(b.inputs(), p).ok());
  EXPECT_TRUE(p.split_kv);
  const WorkspaceSection *tmpV = p.float_workspace.find("tmp_v");
  EXPECT_EQ(tmpV->count, p.num_partial_rows * 256);
  EXPECT_GT(tmpV->bytes, int64_t(1) << 32);
  EXPECT_EQ(tmpV->bytes, tmpV->count * 4);
}

TEST(Plan, PartialStatesHaveVsHeadDim) {
  // v narrower than q and k (head_dim_vo): the partial states in tmp_v
  // have v's head_dim; the schedule is the same as without it.
  Batch b =
      makeBatch(PlanMode::Prefill, {2048}, {4}, 16, 8, 2, 192, 132, 1, false);
  Plan same, narrow;
  ASSERT_TRUE(makePlan(b.inputs(), same).ok());
  b.in.head_dim_vo = 128;
  ASSERT_TRUE(makePlan(b.inputs(), narrow).ok());
  ASSERT_TRUE(narrow.split_kv);
  EXPECT_EQ(narrow.vDim(), 128);
  EXPECT_EQ(same.vDim(), 192);
  EXPECT_EQ(narrow.request_indices, same.request_indices);
  EXPECT_EQ(narrow.float_workspace.find("tmp_v")->count,
            narrow.partial_rows_capacity * 8 * 128);
  EXPECT_EQ(narrow.float_workspace.find("tmp_s")->count,
            same.float_workspace.find("tmp_s")->count);
}

TEST(Plan, ScalarsByName) {
  Batch b =
      makeBatch(PlanMode::Decode, {10, 2}, {}, 16, 8, 1, 128, 4, 1, false);
  Plan p;
  ASSERT_TRUE(makePlan(b.inputs(false), p).ok());
  int64_t v = 0;
  EXPECT_TRUE(p.scalar("padded_batch_size", v));
  EXPECT_EQ(v, 4);
  EXPECT_TRUE(p.scalar("split_kv", v));
  EXPECT_EQ(v, 1);
  EXPECT_FALSE(p.scalar("nope", v));
}

// makePlan reuses the arrays of the plan it replaces (per thread): replanning
// into one Plan object must give exactly what a fresh object gets, whatever
// sizes came before, and a failing call must leave the previous plan intact.
TEST(PlanReuse, ReplanningMatchesAFreshPlan) {
  std::mt19937_64 rng(7);
  Plan reused;
  for (int iter = 0; iter < 50; ++iter) {
    const bool prefill = iter % 2;
    std::vector<int32_t> pages, qoLens;
    const size_t b = 1 + rng() % (iter % 3 == 0 ? 300 : 9);
    for (size_t i = 0; i < b; ++i) {
      pages.push_back(static_cast<int32_t>(rng() % 70));
      qoLens.push_back(static_cast<int32_t>(rng() % 20));
    }
    Batch batch =
        makeBatch(prefill ? PlanMode::Prefill : PlanMode::Decode, pages, qoLens,
                  16, 32, 8, 128, 132, 2, iter % 4 == 1, &rng);
    Plan fresh;
    ASSERT_TRUE(makePlan(batch.inputs(prefill), fresh).ok());
    ASSERT_TRUE(makePlan(batch.inputs(prefill), reused).ok());
    EXPECT_EQ(reused.request_indices, fresh.request_indices);
    EXPECT_EQ(reused.kv_tile_indices, fresh.kv_tile_indices);
    EXPECT_EQ(reused.qo_tile_indices, fresh.qo_tile_indices);
    EXPECT_EQ(reused.o_indptr, fresh.o_indptr);
    EXPECT_EQ(reused.merge_indptr, fresh.merge_indptr);
    EXPECT_EQ(reused.block_valid_mask, fresh.block_valid_mask);
    EXPECT_EQ(reused.int_image, fresh.int_image);
    EXPECT_EQ(reused.padded_batch_size, fresh.padded_batch_size);
    EXPECT_EQ(reused.kv_chunk_size, fresh.kv_chunk_size);
  }
}

TEST(PlanReuse, AFailedPlanLeavesThePreviousOneIntact) {
  Batch good =
      makeBatch(PlanMode::Decode, {10, 2, 7}, {}, 16, 8, 1, 128, 4, 1, false);
  Plan p;
  ASSERT_TRUE(makePlan(good.inputs(false), p).ok());
  const Plan before = p;
  Batch bad = good;
  bad.kvLastPageLen[1] = 17; // outside [1, page_size]
  Status s = makePlan(bad.inputs(false), p);
  EXPECT_EQ(s.code(), ErrorCode::InvalidLastPageLen);
  EXPECT_EQ(p.request_indices, before.request_indices);
  EXPECT_EQ(p.o_indptr, before.o_indptr);
  EXPECT_EQ(p.int_image, before.int_image);
  EXPECT_EQ(p.padded_batch_size, before.padded_batch_size);
}

TEST(PlanValidation, PageIdScanFindsTheFirstBadIdAnywhere) {
  // The vectorized range check works in blocks of 16 or 32 ids: a bad id in
  // any position of a block or of the scalar tail, alone or after another,
  // is found and the message names the first one; ids at the pool's ends
  // pass.
  for (int32_t n : {1, 15, 16, 17, 31, 32, 33, 63, 64, 65, 100, 257}) {
    Batch b = makeBatch(PlanMode::Decode, {n}, {}, 16, 4, 4, 64, 8, 1, false);
    b.in.num_pages = 1000;
    for (int32_t i = 0; i < n; ++i)
      b.kvIndices[i] = i % 2 ? 999 : 0;
    Plan p;
    ASSERT_TRUE(makePlan(b.inputs(false), p).ok()) << n;
    for (int32_t bad : {1000, -1, std::numeric_limits<int32_t>::min(),
                        std::numeric_limits<int32_t>::max()})
      for (int32_t k = 0; k < n; k += 1 + n / 40) {
        Batch c = b;
        c.kvIndices[k] = bad;
        if (k + 3 < n)
          c.kvIndices[k + 3] = -7; // a later bad id is not the one named
        Status s = makePlan(c.inputs(false), p);
        EXPECT_EQ(s.code(), ErrorCode::PageOutOfRange);
        EXPECT_EQ(s.message(), "kv_indices[" + std::to_string(k) +
                                   "] = " + std::to_string(bad) +
                                   " is outside the page pool [0, 1000)")
            << n;
      }
  }
  // Unknown pool size: only negative ids are bad; a pool larger than int32
  // accepts every non-negative id.
  Batch b = makeBatch(PlanMode::Decode, {40}, {}, 16, 4, 4, 64, 8, 1, false);
  b.kvIndices.assign(40, std::numeric_limits<int32_t>::max());
  Plan p;
  for (int64_t pool : {int64_t(-1), int64_t(1) << 40}) {
    b.in.num_pages = pool;
    EXPECT_TRUE(makePlan(b.inputs(false), p).ok());
  }
  b.kvIndices[37] = -3;
  b.in.num_pages = -1;
  Status s = makePlan(b.inputs(false), p);
  EXPECT_EQ(s.message(), "kv_indices[37] = -3 is negative");
}

TEST(PlanReuse, ReusedBuffersGiveAFreshThreadsPlans) {
  // Plans and cascades of varying sizes and level counts, planned one after
  // the other on this thread (each reusing the arrays of the one it
  // replaces), equal the same plans made on a new thread, whose buffers are
  // fresh.
  std::mt19937_64 rng(11);
  std::vector<Batch> batches;
  std::vector<bool> prefills;
  for (int iter = 0; iter < 30; ++iter) {
    const bool prefill = rng() % 2;
    std::vector<int32_t> pages, qoLens;
    const size_t b = 1 + rng() % (iter % 3 == 0 ? 400 : 7);
    for (size_t i = 0; i < b; ++i) {
      pages.push_back(static_cast<int32_t>(rng() % 90));
      qoLens.push_back(static_cast<int32_t>(rng() % 30));
    }
    batches.push_back(makeBatch(prefill ? PlanMode::Prefill : PlanMode::Decode,
                                pages, qoLens, 16, 32, 8, 128, 132, 2,
                                iter % 4 == 1, &rng));
    prefills.push_back(prefill);
  }
  // Cascade k: a shared prefill level of one group over every row of batch
  // k (1-3 copies), then batch k itself.
  auto cascadeInputs = [&](size_t k, std::vector<Batch> &shared) {
    std::vector<PlanInputs> levels;
    Batch &last = batches[k];
    const int64_t rows = last.qoIndptr[last.qoIndptr.size() - 1];
    const int32_t r =
        static_cast<int32_t>(prefills[k] ? rows : last.kvIndptr.size() - 1);
    shared.clear();
    for (size_t c = 0; c < 1 + k % 3; ++c)
      shared.push_back(makeBatch(PlanMode::Prefill, {int32_t(5 + 40 * c)}, {r},
                                 16, 32, 8, 128, 132, 2, false));
    for (Batch &s : shared)
      levels.push_back(s.inputs());
    levels.push_back(last.inputs(prefills[k]));
    return levels;
  };
  Plan reused;
  CascadePlan reusedCascade;
  std::vector<Batch> shared;
  for (size_t k = 0; k < batches.size(); ++k) {
    Plan fresh;
    CascadePlan freshCascade;
    Status sf, sc;
    std::vector<PlanInputs> levels = cascadeInputs(k, shared);
    std::thread([&] {
      sf = makePlan(batches[k].inputs(prefills[k]), fresh);
      sc = makeCascadePlan(levels, freshCascade);
    }).join();
    ASSERT_TRUE(sf.ok()) << sf.message();
    ASSERT_TRUE(sc.ok()) << sc.message();
    ASSERT_TRUE(makePlan(batches[k].inputs(prefills[k]), reused).ok());
    expectSamePlan(reused, fresh);
    ASSERT_TRUE(makeCascadePlan(levels, reusedCascade).ok());
    ASSERT_EQ(reusedCascade.levels.size(), freshCascade.levels.size());
    for (size_t l = 0; l < levels.size(); ++l)
      expectSamePlan(reusedCascade.levels[l], freshCascade.levels[l]);
    EXPECT_EQ(reusedCascade.num_rows, freshCascade.num_rows);
    EXPECT_EQ(reusedCascade.int_base, freshCascade.int_base);
    EXPECT_EQ(reusedCascade.float_base, freshCascade.float_base);
    EXPECT_EQ(reusedCascade.level_v_offset, freshCascade.level_v_offset);
    EXPECT_EQ(reusedCascade.level_s_offset, freshCascade.level_s_offset);
    EXPECT_EQ(reusedCascade.level_v_bytes, freshCascade.level_v_bytes);
    EXPECT_EQ(reusedCascade.level_s_bytes, freshCascade.level_s_bytes);
    EXPECT_EQ(reusedCascade.int_bytes, freshCascade.int_bytes);
    EXPECT_EQ(reusedCascade.float_bytes, freshCascade.float_bytes);
    EXPECT_EQ(reusedCascade.int_image, freshCascade.int_image);
  }
}

TEST(PlanReuse, AFailedCascadeLeavesThePreviousOneIntact) {
  Batch a = makeBatch(PlanMode::Prefill, {4}, {2}, 16, 4, 4, 64, 8, 1, false);
  Batch b = makeBatch(PlanMode::Decode, {1, 3}, {}, 16, 4, 4, 64, 8, 1, false);
  CascadePlan c;
  ASSERT_TRUE(makeCascadePlan({a.inputs(), b.inputs(false)}, c).ok());
  const CascadePlan before = c;
  b.kvLastPageLen[1] = 17;
  EXPECT_FALSE(makeCascadePlan({a.inputs(), b.inputs(false)}, c).ok());
  EXPECT_EQ(c.int_image, before.int_image);
  ASSERT_EQ(c.levels.size(), 2u);
  EXPECT_EQ(c.levels[1].request_indices, before.levels[1].request_indices);
  // The next good cascade is unaffected by the failed one.
  b.kvLastPageLen[1] = 16;
  CascadePlan again;
  ASSERT_TRUE(makeCascadePlan({a.inputs(), b.inputs(false)}, again).ok());
  EXPECT_EQ(again.int_image, before.int_image);
}
