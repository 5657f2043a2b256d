//===- PropertyTest.cpp - Randomized plan invariants ----------------------===//

#include "TestUtil.h"

using namespace cascade::runtime;
using namespace cascade::runtime::test;

namespace {

void runRandomBatches(PlanMode mode, bool graph, int count, uint64_t seed) {
  std::mt19937_64 rng(seed);
  const int64_t kvHeads[] = {1, 2, 4, 8};
  const int64_t groups[] = {1, 2, 4, 8};
  const int64_t pageSizes[] = {1, 4, 16, 64};
  const int64_t sms[] = {1, 8, 108, 132};
  for (int n = 0; n < count; ++n) {
    const int64_t b = static_cast<int64_t>(rng() % 48);
    const int64_t hkv = kvHeads[rng() % 4];
    const int64_t hqo = hkv * groups[rng() % 4];
    const int64_t pageSize = pageSizes[rng() % 4];
    const int64_t maxPages = 1 + static_cast<int64_t>(rng() % 300);
    std::vector<int32_t> pages(b), qo(b);
    int64_t rows = 0;
    for (int64_t i = 0; i < b; ++i) {
      pages[i] = static_cast<int32_t>(rng() % 8 == 0 ? 0 : rng() % maxPages);
      qo[i] = static_cast<int32_t>(rng() % 4 == 0 ? 0 : rng() % 200);
      rows += qo[i];
    }
    Batch batch =
        makeBatch(mode, pages, qo, pageSize, hqo, hkv, 128, sms[rng() % 4],
                  1 + static_cast<int64_t>(rng() % 4), graph, &rng);
    if (graph && mode == PlanMode::Prefill)
      batch.in.max_num_rows = rows + static_cast<int64_t>(rng() % 100);
    if (rng() % 3 == 0 && mode == PlanMode::Prefill)
      batch.in.qo_tile_size = 16 << (rng() % 4);
    Plan plan;
    Status s = makePlan(batch.inputs(mode == PlanMode::Prefill), plan);
    ASSERT_TRUE(s.ok()) << s.message();
    SCOPED_TRACE("batch " + std::to_string(n));
    checkPlanInvariants(batch.in, plan);
    if (::testing::Test::HasFatalFailure())
      return;
  }
}

} // namespace

TEST(PlanProperty, DecodeRandomBatches) {
  runRandomBatches(PlanMode::Decode, false, 2000, 1);
}
TEST(PlanProperty, DecodeGraphRandomBatches) {
  runRandomBatches(PlanMode::Decode, true, 1000, 2);
}
TEST(PlanProperty, PrefillRandomBatches) {
  runRandomBatches(PlanMode::Prefill, false, 2000, 3);
}
TEST(PlanProperty, PrefillGraphRandomBatches) {
  runRandomBatches(PlanMode::Prefill, true, 1000, 4);
}

TEST(PlanProperty, GraphSizesConstantAcrossRandomReplans) {
  std::mt19937_64 rng(5);
  for (int config = 0; config < 40; ++config) {
    const int64_t b = 1 + static_cast<int64_t>(rng() % 32);
    const PlanMode mode = config % 2 ? PlanMode::Prefill : PlanMode::Decode;
    const int64_t maxRows = b * 40;
    Plan first;
    for (int round = 0; round < 25; ++round) {
      std::vector<int32_t> pages(b), qo(b);
      for (int64_t i = 0; i < b; ++i) {
        pages[i] = static_cast<int32_t>(rng() % 500);
        qo[i] = static_cast<int32_t>(rng() % 41);
      }
      Batch batch =
          makeBatch(mode, pages, qo, 16, 32, 8, 128, 132, 2, true, &rng);
      batch.in.max_num_rows = maxRows;
      Plan p;
      ASSERT_TRUE(makePlan(batch.inputs(mode == PlanMode::Prefill), p).ok());
      checkPlanInvariants(batch.in, p);
      if (round == 0) {
        first = std::move(p);
        continue;
      }
      ASSERT_EQ(p.padded_batch_size, first.padded_batch_size);
      ASSERT_EQ(p.split_kv, first.split_kv);
      ASSERT_EQ(p.qo_tile_size, first.qo_tile_size);
      ASSERT_EQ(p.int_workspace.bytes, first.int_workspace.bytes);
      ASSERT_EQ(p.float_workspace.bytes, first.float_workspace.bytes);
    }
  }
}
