//===- TestUtil.h - Shared helpers of the runtime unit tests ----*- C++ -*-===//

#ifndef CASCADE_TEST_UNIT_RUNTIME_TESTUTIL_H
#define CASCADE_TEST_UNIT_RUNTIME_TESTUTIL_H

#include "cascade/Runtime/Plan.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace cascade::runtime::test {

/// Owning storage for PlanInputs.
struct Batch {
  std::vector<int32_t> qoIndptr, kvIndptr, kvLastPageLen, kvIndices;
  PlanInputs in;

  /// Points `in` at the arrays (call after changing them).
  PlanInputs &inputs(bool withQo = true) {
    in.kv_indptr = ArrayView<int32_t>(kvIndptr);
    in.kv_last_page_len = ArrayView<int32_t>(kvLastPageLen);
    in.kv_indices = kvIndices.empty() ? ArrayView<int32_t>()
                                      : ArrayView<int32_t>(kvIndices);
    in.qo_indptr = withQo ? ArrayView<int32_t>(qoIndptr) : ArrayView<int32_t>();
    return in;
  }
};

/// A batch with the given pages and query lengths per request.
inline Batch makeBatch(PlanMode mode, const std::vector<int32_t> &pages,
                       const std::vector<int32_t> &qoLens, int64_t pageSize,
                       int64_t hqo, int64_t hkv, int64_t headDim,
                       int64_t numSms, int64_t occupancy, bool graph,
                       std::mt19937_64 *rng = nullptr) {
  Batch b;
  b.qoIndptr = {0};
  b.kvIndptr = {0};
  int32_t page = 0;
  for (size_t i = 0; i < pages.size(); ++i) {
    b.kvIndptr.push_back(b.kvIndptr.back() + pages[i]);
    b.qoIndptr.push_back(b.qoIndptr.back() +
                         (mode == PlanMode::Decode ? 1 : qoLens[i]));
    int32_t last = static_cast<int32_t>(pageSize);
    if (rng)
      last = static_cast<int32_t>(1 + (*rng)() % pageSize);
    b.kvLastPageLen.push_back(pages[i] ? last : 0);
    for (int32_t p = 0; p < pages[i]; ++p)
      b.kvIndices.push_back(page++);
  }
  b.in.mode = mode;
  b.in.num_pages = page;
  b.in.page_size = pageSize;
  b.in.num_qo_heads = hqo;
  b.in.num_kv_heads = hkv;
  b.in.head_dim = headDim;
  b.in.num_sms = numSms;
  b.in.occupancy = occupancy;
  b.in.cuda_graph = graph;
  b.inputs();
  return b;
}

/// Every field of two plans agrees.
inline void expectSamePlan(const Plan &a, const Plan &b) {
  for (const char *name :
       {"batch_size", "num_rows", "row_capacity", "num_qo_heads",
        "num_kv_heads", "head_dim", "page_size", "gqa_group_size", "cuda_graph",
        "split_kv", "padded_batch_size", "num_work_items", "kv_chunk_size",
        "kv_chunk_size_pages", "qo_tile_size", "num_partial_rows",
        "partial_rows_capacity", "int_workspace_bytes",
        "float_workspace_bytes"}) {
    int64_t x = -1, y = -2;
    ASSERT_TRUE(a.scalar(name, x));
    ASSERT_TRUE(b.scalar(name, y));
    EXPECT_EQ(x, y) << name;
  }
  EXPECT_EQ(a.mode, b.mode);
  EXPECT_EQ(a.grid_limit, b.grid_limit);
  EXPECT_EQ(a.o_dtype, b.o_dtype);
  EXPECT_EQ(a.request_indices, b.request_indices);
  EXPECT_EQ(a.kv_tile_indices, b.kv_tile_indices);
  EXPECT_EQ(a.qo_tile_indices, b.qo_tile_indices);
  EXPECT_EQ(a.o_indptr, b.o_indptr);
  EXPECT_EQ(a.merge_indptr, b.merge_indptr);
  EXPECT_EQ(a.block_valid_mask, b.block_valid_mask);
  EXPECT_EQ(a.int_image, b.int_image);
  for (const WorkspaceLayout *l : {&a.int_workspace, &a.float_workspace}) {
    const WorkspaceLayout &m =
        l == &a.int_workspace ? b.int_workspace : b.float_workspace;
    EXPECT_EQ(l->alignment, m.alignment);
    ASSERT_EQ(l->sections.size(), m.sections.size());
    for (size_t k = 0; k < l->sections.size(); ++k) {
      EXPECT_STREQ(l->sections[k].name, m.sections[k].name);
      EXPECT_EQ(l->sections[k].offset, m.sections[k].offset);
      EXPECT_EQ(l->sections[k].bytes, m.sections[k].bytes);
      EXPECT_EQ(l->sections[k].count, m.sections[k].count);
    }
  }
}

/// Every field of two cascade plans agrees, levels and steps included.
inline void expectSameCascade(const CascadePlan &a, const CascadePlan &b) {
  ASSERT_EQ(a.levels.size(), b.levels.size());
  for (size_t l = 0; l < a.levels.size(); ++l) {
    SCOPED_TRACE("level " + std::to_string(l));
    expectSamePlan(a.levels[l], b.levels[l]);
  }
  EXPECT_EQ(a.num_rows, b.num_rows);
  EXPECT_EQ(a.int_base, b.int_base);
  EXPECT_EQ(a.float_base, b.float_base);
  EXPECT_EQ(a.level_v_offset, b.level_v_offset);
  EXPECT_EQ(a.level_s_offset, b.level_s_offset);
  EXPECT_EQ(a.level_v_bytes, b.level_v_bytes);
  EXPECT_EQ(a.level_s_bytes, b.level_s_bytes);
  EXPECT_EQ(a.int_bytes, b.int_bytes);
  EXPECT_EQ(a.float_bytes, b.float_bytes);
  EXPECT_EQ(a.int_image, b.int_image);
  ASSERT_EQ(a.steps.size(), b.steps.size());
  for (size_t i = 0; i < a.steps.size(); ++i) {
    EXPECT_EQ(a.steps[i].kind, b.steps[i].kind) << "step " << i;
    EXPECT_EQ(a.steps[i].level, b.steps[i].level) << "step " << i;
    EXPECT_EQ(a.steps[i].blocks, b.steps[i].blocks) << "step " << i;
  }
}

inline int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

/// Checks every structural invariant of a plan against its inputs.
inline void checkPlanInvariants(const PlanInputs &in, const Plan &p) {
  const int64_t b = in.kv_indptr.size() - 1;
  const bool decode = in.mode == PlanMode::Decode;
  const int64_t g = in.num_qo_heads / in.num_kv_heads;
  ASSERT_EQ(p.batch_size, b);
  ASSERT_EQ(int64_t(p.request_indices.size()), p.padded_batch_size);
  ASSERT_EQ(int64_t(p.kv_tile_indices.size()), p.padded_batch_size);
  ASSERT_EQ(int64_t(p.qo_tile_indices.size()), p.padded_batch_size);
  ASSERT_EQ(int64_t(p.block_valid_mask.size()), p.padded_batch_size);
  ASSERT_EQ(int64_t(p.o_indptr.size()), b + 1);
  ASSERT_EQ(int64_t(p.merge_indptr.size()), p.row_capacity + 1);
  ASSERT_LE(p.num_work_items, p.padded_batch_size);
  ASSERT_EQ(p.kv_chunk_size, p.kv_chunk_size_pages * in.page_size);
  ASSERT_GE(p.kv_chunk_size_pages, 1);
  for (int64_t w = 0; w < p.padded_batch_size; ++w)
    ASSERT_EQ(p.block_valid_mask[w], w < p.num_work_items ? 1 : 0) << w;

  // Every (request, query tile, chunk) exactly once.
  std::vector<std::vector<int>> seen(static_cast<size_t>(b));
  std::vector<int64_t> tiles(b), chunks(b), qoLens(b);
  for (int64_t i = 0; i < b; ++i) {
    const int64_t pages = in.kv_indptr[i + 1] - in.kv_indptr[i];
    qoLens[i] = decode ? 1 : in.qo_indptr[i + 1] - in.qo_indptr[i];
    tiles[i] = decode ? 1 : ceilDiv(qoLens[i] * g, p.qo_tile_size);
    chunks[i] =
        tiles[i] == 0
            ? 0
            : std::max<int64_t>(ceilDiv(pages, p.kv_chunk_size_pages), 1);
    if (!p.split_kv && tiles[i]) {
      ASSERT_EQ(chunks[i], 1);
    }
    seen[i].assign(static_cast<size_t>(tiles[i] * chunks[i]), 0);
    // Chunks are contiguous, inside kv_len, and cover it.
    const int64_t kvLen =
        pages ? (pages - 1) * in.page_size + in.kv_last_page_len[i] : 0;
    if (kvLen > 0 && chunks[i] > 0) {
      ASSERT_LT((chunks[i] - 1) * p.kv_chunk_size, kvLen);
      ASSERT_GE(chunks[i] * p.kv_chunk_size, kvLen);
    }
  }
  for (int64_t w = 0; w < p.num_work_items; ++w) {
    const int64_t i = p.request_indices[w], t = p.qo_tile_indices[w],
                  k = p.kv_tile_indices[w];
    ASSERT_GE(i, 0);
    ASSERT_LT(i, b);
    ASSERT_LT(t, tiles[i]);
    ASSERT_LT(k, chunks[i]);
    ASSERT_EQ(seen[i][t * chunks[i] + k]++, 0) << "duplicate item " << w;
  }
  for (int64_t i = 0; i < b; ++i)
    for (int s : seen[i])
      ASSERT_EQ(s, 1) << "request " << i << " not fully covered";

  // o_indptr and merge_indptr agree with the chunks.
  ASSERT_EQ(p.o_indptr[0], 0);
  int64_t row = 0;
  for (int64_t i = 0; i < b; ++i) {
    ASSERT_EQ(p.o_indptr[i + 1] - p.o_indptr[i], qoLens[i] * chunks[i]);
    for (int64_t j = 0; j < qoLens[i]; ++j, ++row) {
      ASSERT_EQ(p.merge_indptr[row], p.o_indptr[i] + j * chunks[i]);
      ASSERT_EQ(p.merge_indptr[row + 1] - p.merge_indptr[row], chunks[i]);
    }
  }
  ASSERT_EQ(row, p.num_rows);
  for (int64_t r = row; r < p.row_capacity; ++r)
    ASSERT_EQ(p.merge_indptr[r + 1], p.merge_indptr[r]);
  ASSERT_EQ(p.num_partial_rows, p.split_kv ? p.o_indptr[b] : 0);
  ASSERT_LE(p.num_partial_rows, p.partial_rows_capacity);

  // A fixed chunk (or none) instead of the grid search below.
  if (in.disable_split_kv) {
    ASSERT_FALSE(p.split_kv);
  }
  if (in.fixed_split_pages > 0 && p.split_kv) {
    ASSERT_EQ(p.kv_chunk_size_pages, in.fixed_split_pages);
  }
  // Grid: the split plan fits occupancy * num_sms, at most two blocks an
  // SM for decode (or one chunk each).
  const int64_t grid =
      in.num_sms * (decode ? std::min<int64_t>(in.occupancy, 2) : in.occupancy);
  ASSERT_EQ(p.grid_limit, grid);
  const bool searched = in.fixed_split_pages == 0 && !in.disable_split_kv;
  if (searched && p.split_kv &&
      p.kv_chunk_size_pages > std::max<int64_t>(128 / in.page_size, 1)) {
    // The chunk is minimal: one page less would not fit.
    int64_t items = 0;
    for (int64_t i = 0; i < b; ++i) {
      const int64_t pages = in.kv_indptr[i + 1] - in.kv_indptr[i];
      items += tiles[i] *
               std::max<int64_t>(ceilDiv(pages, p.kv_chunk_size_pages - 1), 1);
    }
    ASSERT_GT(items, grid / in.num_kv_heads);
  }
  if (searched && decode && b * in.num_kv_heads >= grid) {
    ASSERT_FALSE(p.split_kv);
  }
  if (searched && decode && p.split_kv) {
    ASSERT_LE(p.num_work_items * in.num_kv_heads, grid);
  }

  // Workspace sections: aligned, disjoint, and the image holds the arrays.
  for (const WorkspaceLayout *l : {&p.int_workspace, &p.float_workspace}) {
    int64_t end = 0;
    for (const WorkspaceSection &s : l->sections) {
      ASSERT_EQ(s.offset % l->alignment, 0) << s.name;
      ASSERT_GE(s.offset, end) << s.name;
      end = s.offset + s.bytes;
    }
    ASSERT_LE(end, l->bytes);
  }
  ASSERT_EQ(int64_t(p.int_image.size()), p.int_workspace.bytes);
  auto expectSection = [&](const char *name, const void *data, size_t bytes) {
    const WorkspaceSection *s = p.int_workspace.find(name);
    ASSERT_NE(s, nullptr) << name;
    ASSERT_EQ(size_t(s->bytes), bytes) << name;
    if (bytes) {
      ASSERT_EQ(std::memcmp(p.int_image.data() + s->offset, data, bytes), 0)
          << name;
    }
  };
  expectSection("request_indices", p.request_indices.data(),
                4 * p.request_indices.size());
  expectSection("kv_tile_indices", p.kv_tile_indices.data(),
                4 * p.kv_tile_indices.size());
  expectSection("qo_tile_indices", p.qo_tile_indices.data(),
                4 * p.qo_tile_indices.size());
  expectSection("o_indptr", p.o_indptr.data(), 4 * p.o_indptr.size());
  expectSection("merge_indptr", p.merge_indptr.data(),
                4 * p.merge_indptr.size());
  expectSection("block_valid_mask", p.block_valid_mask.data(),
                p.block_valid_mask.size());
  const int32_t chunk = static_cast<int32_t>(p.kv_chunk_size);
  expectSection("kv_chunk_size", &chunk, 4);
  const WorkspaceSection *tmpV = p.float_workspace.find("tmp_v");
  ASSERT_NE(tmpV, nullptr);
  ASSERT_EQ(tmpV->count,
            p.partial_rows_capacity * in.num_qo_heads * in.head_dim);
}

} // namespace cascade::runtime::test

#endif // CASCADE_TEST_UNIT_RUNTIME_TESTUTIL_H
