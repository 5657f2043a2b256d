//===- ValidationTest.cpp - Every bad-input path of planning --------------===//

#include "TestUtil.h"

using namespace cascade::runtime;
using namespace cascade::runtime::test;

namespace {

Batch good(PlanMode mode = PlanMode::Prefill) {
  return makeBatch(mode, {2, 3}, {1, 4}, 16, 8, 2, 128, 132, 1, false);
}

void expectError(Batch &b, bool withQo, ErrorCode code,
                 const std::string &message) {
  Plan p;
  Status s = makePlan(b.inputs(withQo), p);
  EXPECT_EQ(s.code(), code) << s.message();
  EXPECT_EQ(s.message(), message);
}

} // namespace

TEST(Validation, GoodInputsPass) {
  Batch b = good();
  EXPECT_TRUE(validatePlanInputs(b.inputs()).ok());
}

TEST(Validation, PageSize) {
  Batch b = good();
  b.in.page_size = 0;
  expectError(b, true, ErrorCode::InvalidPageSize,
              "page_size must be positive, got 0");
  b.in.page_size = -4;
  expectError(b, true, ErrorCode::InvalidPageSize,
              "page_size must be positive, got -4");
  b.in.page_size = int64_t(1) << 40;
  expectError(b, true, ErrorCode::InvalidPageSize,
              "page_size 1099511627776 does not fit in int32");
}

TEST(Validation, HeadDim) {
  for (int64_t d : {0, -8, 12, 264, 520}) {
    Batch b = good();
    b.in.head_dim = d;
    expectError(b, true, ErrorCode::InvalidHeadDim,
                "head_dim must be a positive multiple of 8 and at most 256, "
                "got " +
                    std::to_string(d));
  }
  Batch b = good();
  b.in.head_dim = 256;
  EXPECT_TRUE(validatePlanInputs(b.inputs()).ok());
}

TEST(Validation, HeadDimVo) {
  // v's head_dim where it differs: a multiple of 8 no larger than q's/k's.
  for (int64_t dv : {-8, 12, 136}) {
    Batch b = good();
    b.in.head_dim_vo = dv;
    expectError(b, true, ErrorCode::InvalidHeadDim,
                "head_dim_vo must be 0 (head_dim's) or a positive multiple of "
                "8 no larger than head_dim (" +
                    std::to_string(b.in.head_dim) + "), got " +
                    std::to_string(dv));
  }
  Batch b = good();
  b.in.head_dim_vo = b.in.head_dim / 2;
  EXPECT_TRUE(validatePlanInputs(b.inputs()).ok());
}

TEST(Validation, Heads) {
  Batch b = good();
  b.in.num_qo_heads = 6;
  b.in.num_kv_heads = 4;
  expectError(b, true, ErrorCode::InvalidHeads,
              "num_qo_heads (6) must be a multiple of num_kv_heads (4)");
  b.in.num_kv_heads = 0;
  expectError(b, true, ErrorCode::InvalidHeads,
              "num_qo_heads and num_kv_heads must be positive, got 6 and 0");
  b.in.num_qo_heads = 1 << 17;
  b.in.num_kv_heads = 1;
  expectError(b, true, ErrorCode::InvalidHeads,
              "head counts must be at most 65535, got 131072 and 1");
}

TEST(Validation, DeviceAndOptions) {
  Batch b = good();
  b.in.num_sms = 0;
  expectError(b, true, ErrorCode::InvalidArgument,
              "num_sms must be positive, got 0");
  b = good();
  b.in.occupancy = -1;
  expectError(b, true, ErrorCode::InvalidArgument,
              "occupancy must be positive, got -1");
  b = good();
  b.in.qo_tile_size = -16;
  expectError(b, true, ErrorCode::InvalidArgument,
              "qo_tile_size must be in [0, 4096] (0 = automatic), got -16");
}

TEST(Validation, Sizes) {
  Batch b = good();
  b.kvIndptr.clear();
  expectError(b, true, ErrorCode::SizeMismatch,
              "kv_indptr must have batch_size + 1 >= 1 entries");
  b = good();
  b.kvLastPageLen.push_back(3);
  expectError(b, true, ErrorCode::SizeMismatch,
              "kv_last_page_len has 3 entries, expected batch_size = 2");
  b = good();
  b.qoIndptr.pop_back();
  expectError(b, true, ErrorCode::SizeMismatch,
              "qo_indptr has 2 entries, expected batch_size + 1 = 3");
  b = good();
  expectError(b, false, ErrorCode::SizeMismatch,
              "prefill needs qo_indptr with batch_size + 1 = 3 entries");
  b = good();
  b.kvIndices.pop_back();
  expectError(b, true, ErrorCode::SizeMismatch,
              "kv_indices has 4 entries but kv_indptr[2] = 5 (it needs at "
              "least kv_indptr[batch_size] entries; entries beyond are "
              "ignored)");
  // A longer kv_indices (a preallocated buffer) is not an error.
  b = good();
  b.kvIndices.push_back(1 << 30);
  EXPECT_TRUE(validatePlanInputs(b.inputs()).ok());
}

TEST(Validation, Indptr) {
  Batch b = good();
  b.kvIndptr = {1, 3, 5};
  expectError(b, true, ErrorCode::InvalidIndptr,
              "kv_indptr[0] must be 0, got 1");
  b = good();
  b.kvIndptr = {0, 3, 2};
  expectError(b, true, ErrorCode::InvalidIndptr,
              "kv_indptr is not monotone: kv_indptr[2] = 2 < kv_indptr[1] = 3");
  b = good();
  b.qoIndptr = {0, 5, 4};
  expectError(b, true, ErrorCode::InvalidIndptr,
              "qo_indptr is not monotone: qo_indptr[2] = 4 < qo_indptr[1] = 5");
  b = good();
  b.qoIndptr = {-1, 0, 4};
  expectError(b, true, ErrorCode::InvalidIndptr,
              "qo_indptr[0] must be 0, got -1");
}

TEST(Validation, PageIds) {
  Batch b = good();
  b.kvIndices[3] = 5; // pool has 5 pages: ids 0..4
  expectError(b, true, ErrorCode::PageOutOfRange,
              "kv_indices[3] = 5 is outside the page pool [0, 5)");
  b = good();
  b.kvIndices[0] = -2;
  expectError(b, true, ErrorCode::PageOutOfRange,
              "kv_indices[0] = -2 is outside the page pool [0, 5)");
  b.in.num_pages = -1;
  expectError(b, true, ErrorCode::PageOutOfRange,
              "kv_indices[0] = -2 is negative");
}

TEST(Validation, LastPageLen) {
  Batch b = good();
  b.kvLastPageLen[1] = 0;
  expectError(b, true, ErrorCode::InvalidLastPageLen,
              "kv_last_page_len[1] = 0 is outside [1, page_size = 16]");
  b.kvLastPageLen[1] = 17;
  expectError(b, true, ErrorCode::InvalidLastPageLen,
              "kv_last_page_len[1] = 17 is outside [1, page_size = 16]");
  // Requests without pages may have any last_page_len (it is unused).
  Batch e =
      makeBatch(PlanMode::Decode, {0, 1}, {}, 16, 8, 2, 128, 132, 1, false);
  e.kvLastPageLen[0] = 0;
  EXPECT_TRUE(validatePlanInputs(e.inputs(false)).ok());
  e.kvLastPageLen[0] = -7;
  EXPECT_TRUE(validatePlanInputs(e.inputs(false)).ok());
}

TEST(Validation, TokenCountsPastInt32) {
  Batch b = makeBatch(PlanMode::Decode, {1 << 20}, {}, 1 << 12, 8, 2, 128, 132,
                      1, false);
  b.kvIndices.clear();
  expectError(b, false, ErrorCode::Overflow,
              "request 0 has 4294967296 KV tokens, more than 2^31 - 1");
}

TEST(Validation, MaxNumRows) {
  Batch b = good();
  b.in.max_num_rows = int64_t(1) << 33;
  expectError(b, true, ErrorCode::Overflow,
              "max_num_rows 8589934592 exceeds the plan's bound of 2^22 rows");
  // The bound itself is accepted (nothing is allocated for it here: the
  // batch is not in graph mode).
  b.in.max_num_rows = int64_t(1) << 22;
  Plan p;
  EXPECT_TRUE(makePlan(b.inputs(true), p).ok());
  b.in.max_num_rows = (int64_t(1) << 22) + 1;
  expectError(b, true, ErrorCode::Overflow,
              "max_num_rows 4194305 exceeds the plan's bound of 2^22 rows");
}
