//===- FixedSplitTest.cpp - fixed_split_pages and disable_split_kv --------===//
//
// FlashInfer's fixed_split_size (a fixed KV chunk in pages: batch-invariant
// plans) and disable_split_kv (never split) in the runtime planner.
//
//===----------------------------------------------------------------------===//

#include "TestUtil.h"

#include "cascade/Runtime/Plan.h"

using namespace cascade::runtime;
using namespace cascade::runtime::test;

namespace {

/// The KV chunks of request i in plan p (0 for a request without items).
int64_t chunksOf(const Plan &p, int32_t i) {
  int64_t n = 0;
  for (int64_t w = 0; w < p.num_work_items; ++w)
    if (p.request_indices[w] == i && p.qo_tile_indices[w] == 0)
      ++n;
  return n;
}

/// (request, kv tile) of every valid work item of request i, in order.
std::vector<int32_t> tilesOf(const Plan &p, int32_t i) {
  std::vector<int32_t> out;
  for (int64_t w = 0; w < p.num_work_items; ++w)
    if (p.request_indices[w] == i)
      out.push_back(p.kv_tile_indices[w]);
  return out;
}

} // namespace

TEST(FixedSplit, DecodeChunksOfTheGivenPages) {
  // Four requests x 2 KV heads fill the grid of 4 * 2: the automatic plan
  // would not split. A fixed chunk of 16 pages splits every request into
  // ceil(pages / 16) chunks.
  Batch b = makeBatch(PlanMode::Decode, {40, 1, 16, 17}, {}, 16, 8, 2, 64, 4, 2,
                      false);
  b.in.fixed_split_pages = 16;
  Plan p;
  ASSERT_TRUE(makePlan(b.inputs(false), p).ok());
  checkPlanInvariants(b.in, p);
  EXPECT_TRUE(p.split_kv);
  EXPECT_EQ(p.work_kind, WorkKind::DecodeSplit);
  EXPECT_EQ(p.kv_chunk_size_pages, 16);
  EXPECT_EQ(p.kv_chunk_size, 256);
  EXPECT_EQ(p.request_indices, (std::vector<int32_t>{0, 0, 0, 1, 2, 3, 3}));
  EXPECT_EQ(p.kv_tile_indices, (std::vector<int32_t>{0, 1, 2, 0, 0, 0, 1}));
  EXPECT_EQ(p.o_indptr, (std::vector<int32_t>{0, 3, 4, 5, 7}));
  EXPECT_EQ(p.merge_indptr, (std::vector<int32_t>{0, 3, 4, 5, 7}));
  EXPECT_EQ(p.num_work_items, 7);
  EXPECT_EQ(p.padded_batch_size, 7);
  EXPECT_EQ(p.num_partial_rows, 7);
}

TEST(FixedSplit, PrefillChunksPerQueryTile) {
  // Two requests of 20 and 5 query rows (G = 1, tile 16): 2 + 1 tiles; 33
  // and 8 pages in chunks of 8: 5 and 1 chunks.
  Batch b = makeBatch(PlanMode::Prefill, {33, 8}, {20, 5}, 16, 4, 4, 64, 132, 1,
                      false);
  b.in.qo_tile_size = 16;
  b.in.fixed_split_pages = 8;
  Plan p;
  ASSERT_TRUE(makePlan(b.inputs(), p).ok());
  checkPlanInvariants(b.in, p);
  EXPECT_TRUE(p.split_kv);
  EXPECT_EQ(p.kv_chunk_size_pages, 8);
  EXPECT_EQ(p.num_work_items, 2 * 5 + 1 * 1);
  EXPECT_EQ(chunksOf(p, 0), 5);
  EXPECT_EQ(chunksOf(p, 1), 1);
  EXPECT_EQ(p.o_indptr, (std::vector<int32_t>{0, 20 * 5, 20 * 5 + 5}));
  // Row j of request 0 merges chunks [5 j, 5 (j + 1)).
  EXPECT_EQ(p.merge_indptr[1], 5);
  EXPECT_EQ(p.merge_indptr[20], 100);
  EXPECT_EQ(p.merge_indptr[21], 101);
  EXPECT_EQ(p.merge_indptr[25], 105);
}

TEST(FixedSplit, NoSplitWhenEveryRequestFitsOneChunk) {
  Batch b =
      makeBatch(PlanMode::Decode, {3, 8, 0}, {}, 16, 4, 1, 64, 4, 1, false);
  b.in.fixed_split_pages = 8;
  Plan p;
  ASSERT_TRUE(makePlan(b.inputs(false), p).ok());
  checkPlanInvariants(b.in, p);
  EXPECT_FALSE(p.split_kv);
  EXPECT_EQ(p.num_work_items, 3);
  EXPECT_EQ(p.num_partial_rows, 0);
}

TEST(FixedSplit, EqualsTheAutomaticPlanWithItsChunk) {
  const std::vector<std::pair<PlanMode, std::vector<int32_t>>> cases = {
      {PlanMode::Decode, {10, 2}},
      {PlanMode::Decode, {0, 40, 0}},
      {PlanMode::Prefill, {400}},
      {PlanMode::Prefill, {90, 7, 33}}};
  for (bool graph : {false, true})
    for (const auto &[mode, pages] : cases) {
      std::vector<int32_t> qo(pages.size(), 10);
      Batch b = makeBatch(mode, pages, qo, 16, 8, 2, 128, 20, 1, graph);
      b.in.max_num_rows = 40;
      Plan automatic, fixed;
      ASSERT_TRUE(
          makePlan(b.inputs(mode == PlanMode::Prefill), automatic).ok());
      ASSERT_TRUE(automatic.split_kv);
      b.in.fixed_split_pages = automatic.kv_chunk_size_pages;
      ASSERT_TRUE(makePlan(b.inputs(mode == PlanMode::Prefill), fixed).ok());
      SCOPED_TRACE(::testing::Message()
                   << "graph " << graph << " requests " << pages.size());
      EXPECT_EQ(fixed.split_kv, automatic.split_kv);
      EXPECT_EQ(fixed.kv_chunk_size, automatic.kv_chunk_size);
      EXPECT_EQ(fixed.padded_batch_size, automatic.padded_batch_size);
      EXPECT_EQ(fixed.request_indices, automatic.request_indices);
      EXPECT_EQ(fixed.qo_tile_indices, automatic.qo_tile_indices);
      EXPECT_EQ(fixed.kv_tile_indices, automatic.kv_tile_indices);
      EXPECT_EQ(fixed.block_valid_mask, automatic.block_valid_mask);
      EXPECT_EQ(fixed.o_indptr, automatic.o_indptr);
      EXPECT_EQ(fixed.merge_indptr, automatic.merge_indptr);
      EXPECT_EQ(fixed.int_image, automatic.int_image);
      EXPECT_EQ(fixed.float_workspace.bytes, automatic.float_workspace.bytes);
    }
}

TEST(FixedSplit, ChunkingOfARequestIsBatchInvariant) {
  // Request 0 (37 pages) alone and among other requests: the same chunks,
  // while the automatic chunk changes with the batch.
  const std::vector<std::vector<int32_t>> batches = {
      {37}, {37, 1}, {37, 200, 3}, {37, 5, 5, 5, 5, 5, 5, 5, 5, 5}};
  std::vector<int64_t> automaticChunks;
  for (const std::vector<int32_t> &pages : batches) {
    Batch b =
        makeBatch(PlanMode::Decode, pages, {}, 16, 4, 1, 64, 16, 1, false);
    Plan p;
    ASSERT_TRUE(makePlan(b.inputs(false), p).ok());
    automaticChunks.push_back(p.kv_chunk_size_pages);
    b.in.fixed_split_pages = 5;
    ASSERT_TRUE(makePlan(b.inputs(false), p).ok());
    checkPlanInvariants(b.in, p);
    EXPECT_EQ(tilesOf(p, 0), (std::vector<int32_t>{0, 1, 2, 3, 4, 5, 6, 7}));
    EXPECT_EQ(p.o_indptr[1], 8);
    EXPECT_EQ(p.kv_chunk_size, 5 * 16);
  }
  EXPECT_NE(automaticChunks.front(), automaticChunks[2]);
}

TEST(FixedSplit, CudaGraphKeepsTheGridAndSplits) {
  // Graph mode: split even when every request fits one chunk; the padded
  // grid is the usual occupancy * num_sms / Hkv whatever the lengths.
  for (const std::vector<int32_t> &pages :
       {std::vector<int32_t>{1, 2}, std::vector<int32_t>{13, 7}}) {
    Batch b = makeBatch(PlanMode::Decode, pages, {}, 16, 4, 2, 64, 8, 2, true);
    b.in.fixed_split_pages = 4;
    Plan p;
    ASSERT_TRUE(makePlan(b.inputs(false), p).ok());
    checkPlanInvariants(b.in, p);
    EXPECT_TRUE(p.split_kv);
    EXPECT_EQ(p.padded_batch_size, 8 * 2 / 2);
    EXPECT_EQ(p.partial_rows_capacity, 8);
    EXPECT_EQ(p.num_work_items, (pages[0] + 3) / 4 + (pages[1] + 3) / 4);
  }
}

TEST(FixedSplit, CudaGraphOverflowIsAnError) {
  // 33 pages in chunks of 4 = 9 items > the grid of 8.
  Batch b = makeBatch(PlanMode::Decode, {33}, {}, 16, 4, 2, 64, 8, 2, true);
  b.in.fixed_split_pages = 4;
  Plan p;
  Status s = makePlan(b.inputs(false), p);
  EXPECT_EQ(s.code(), ErrorCode::InvalidArgument);
  EXPECT_EQ(s.message(),
            "fixed_split_pages (fixed_split_size) = 4 gives 9 work items, "
            "more than the 8 of the CUDA-graph grid; use a larger chunk");

  Batch pre =
      makeBatch(PlanMode::Prefill, {100}, {16}, 16, 2, 2, 64, 4, 1, true);
  pre.in.qo_tile_size = 16;
  pre.in.fixed_split_pages = 10;
  s = makePlan(pre.inputs(), p);
  EXPECT_EQ(s.code(), ErrorCode::InvalidArgument);
  EXPECT_EQ(s.message(),
            "fixed_split_pages (fixed_split_size) = 10 gives 10 work items, "
            "more than the 2 of the CUDA-graph grid; use a larger chunk");
}

TEST(DisableSplitKv, NeverSplits) {
  for (bool graph : {false, true}) {
    // Decode: a batch the automatic plan splits.
    Batch b =
        makeBatch(PlanMode::Decode, {10, 2}, {}, 16, 8, 1, 128, 4, 1, graph);
    b.in.disable_split_kv = true;
    Plan p;
    ASSERT_TRUE(makePlan(b.inputs(false), p).ok());
    checkPlanInvariants(b.in, p);
    EXPECT_FALSE(p.split_kv);
    EXPECT_EQ(p.work_kind, WorkKind::Decode);
    EXPECT_EQ(p.padded_batch_size, 2);
    EXPECT_EQ(p.kv_chunk_size_pages, 10);
    EXPECT_EQ(p.request_indices, (std::vector<int32_t>{0, 1}));
    EXPECT_EQ(p.num_partial_rows, 0);
    EXPECT_EQ(p.partial_rows_capacity, 0);

    // Prefill: one item per query tile; in graph mode the tile bound.
    Batch q = makeBatch(PlanMode::Prefill, {400, 3}, {20, 5}, 16, 4, 4, 64, 132,
                        1, graph);
    q.in.qo_tile_size = 16;
    q.in.max_num_rows = 40;
    q.in.disable_split_kv = true;
    ASSERT_TRUE(makePlan(q.inputs(), p).ok());
    checkPlanInvariants(q.in, p);
    EXPECT_FALSE(p.split_kv);
    EXPECT_EQ(p.work_kind, WorkKind::Prefill);
    EXPECT_EQ(p.num_work_items, 3);
    EXPECT_EQ(p.kv_tile_indices, std::vector<int32_t>(p.padded_batch_size, 0));
    // Graph: floor((40 * 1 + 2 * 15) / 16) = 4.
    EXPECT_EQ(p.padded_batch_size, graph ? 4 : 3);
    EXPECT_EQ(p.partial_rows_capacity, 0);
  }
}

TEST(FixedSplit, InvalidInputs) {
  Batch b =
      makeBatch(PlanMode::Decode, {10, 2}, {}, 16, 8, 1, 128, 4, 1, false);
  b.in.fixed_split_pages = -3;
  Plan p;
  Status s = makePlan(b.inputs(false), p);
  EXPECT_EQ(s.code(), ErrorCode::InvalidArgument);
  EXPECT_EQ(s.message(),
            "fixed_split_pages must be >= 0 (0 = automatic), got -3");
  EXPECT_EQ(validatePlanInputs(b.in).message(), s.message());

  b.in.fixed_split_pages = 4;
  b.in.disable_split_kv = true;
  s = makePlan(b.inputs(false), p);
  EXPECT_EQ(s.code(), ErrorCode::InvalidArgument);
  EXPECT_EQ(s.message(), "fixed_split_pages (4) and disable_split_kv are "
                         "exclusive: a fixed chunk splits KV");
}
