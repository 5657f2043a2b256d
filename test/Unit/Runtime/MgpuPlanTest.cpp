//===- MgpuPlanTest.cpp - The plan entry points of the mgpu shim ----------===//
//
// What host code lowered from `cascade.plan` calls (lib/Runtime/MgpuPlan.cpp),
// on the stand-in driver of the Python tests (its device memory is host
// memory): plans into a slot, replans in place, graph mode keeps every
// address and size, the planned arrays as memref descriptors, and failures
// as a null plan that reads as "not split".
//
//===----------------------------------------------------------------------===//

#include "cascade/Runtime/Plan.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <numeric>
#include <string>
#include <vector>

namespace {
template <typename T, int N> struct MemRef {
  T *allocated;
  T *aligned;
  int64_t offset;
  int64_t sizes[N];
  int64_t strides[N];
};
using Array = MemRef<int32_t, 1>;
} // namespace

extern "C" {
void *_mlir_ciface_cascade_mgpu_plan(void **slot, Array *qo, Array *kvIndptr,
                                     Array *last, Array *indices,
                                     int64_t prefill, int64_t hqo, int64_t hkv,
                                     int64_t headDim, int64_t pageSize,
                                     int64_t graphRows, int64_t occupancy,
                                     int64_t qoTile, int64_t fixedSplit,
                                     int64_t disableSplit);
int32_t cascade_mgpu_plan_split_kv(void *plan, int64_t qoTileSize);
void _mlir_ciface_cascade_mgpu_plan_i32(Array *out, void *plan, int64_t which);
void _mlir_ciface_cascade_mgpu_plan_i8(MemRef<int8_t, 1> *out, void *plan,
                                       int64_t which);
void _mlir_ciface_cascade_mgpu_plan_tmp_v(MemRef<float, 3> *out, void *plan);
void _mlir_ciface_cascade_mgpu_plan_tmp_s(MemRef<float, 2> *out, void *plan);
void cascade_mgpu_plan_destroy(void **slot);
void *_mlir_ciface_cascade_mgpu_auto_plan(
    void **slot, Array *kvIndptr, Array *last, Array *indices, int64_t hqo,
    int64_t hkv, int64_t headDim, int64_t pageSize, int64_t graphRows,
    int64_t occupancy, int64_t sharedQoTile, int64_t sharedOccupancy);
int64_t cascade_mgpu_auto_num_levels(void *plan);
void *cascade_mgpu_auto_level(void *plan, int64_t level);
void _mlir_ciface_cascade_mgpu_auto_array(Array *out, void *plan, int64_t level,
                                          int64_t which);
void cascade_mgpu_auto_plan_destroy(void **slot);
}

namespace {

Array view(std::vector<int32_t> &v) {
  return {v.data(), v.data(), 0, {int64_t(v.size())}, {1}};
}

/// A decode batch: B requests of `pages` pages each, full last pages.
struct Batch {
  std::vector<int32_t> qo, kvIndptr, last, none;
  Batch(int32_t b, int32_t pages, bool prefill) {
    kvIndptr.resize(b + 1);
    for (int32_t i = 0; i <= b; ++i)
      kvIndptr[i] = i * pages;
    last.assign(b, 16);
    if (prefill) {
      qo.resize(b + 1);
      std::iota(qo.begin(), qo.end(), 0);
      qo.back() = b; // rows: one per request
    }
  }
  void *plan(void **slot, int64_t graphRows = 0, int64_t qoTile = 0) {
    Array q = view(qo), k = view(kvIndptr), l = view(last), n = view(none);
    return _mlir_ciface_cascade_mgpu_plan(slot, &q, &k, &l, &n, !qo.empty(), 32,
                                          8, 128, 16, graphRows, 2, qoTile, 0,
                                          0);
  }
};

class MgpuPlanTest : public ::testing::Test {
protected:
  static void SetUpTestSuite() {
    // The shim's process-wide driver is the stand-in (before its first use).
    setenv("CASCADE_CUDA_DRIVER", CASCADE_FAKE_CUDA, 1);
  }
  void TearDown() override { cascade_mgpu_plan_destroy(&slot); }
  void *slot = nullptr;
};

TEST_F(MgpuPlanTest, PlansIntoItsSlotAndDescribesTheArrays) {
  Batch batch(4, 512, /*prefill=*/false); // long KV, few requests: split
  void *plan = batch.plan(&slot);
  ASSERT_NE(plan, nullptr);
  EXPECT_NE(slot, nullptr);
  EXPECT_EQ(cascade_mgpu_plan_split_kv(plan, 0), 1);
  Array ri{};
  _mlir_ciface_cascade_mgpu_plan_i32(&ri, plan, 0); // request_indices
  ASSERT_NE(ri.aligned, nullptr);
  EXPECT_GT(ri.sizes[0], 4);
  EXPECT_EQ(ri.strides[0], 1);
  Array chunk{};
  _mlir_ciface_cascade_mgpu_plan_i32(&chunk, plan, 4); // kv_chunk_size
  EXPECT_EQ(chunk.sizes[0], 1);
  // The int workspace holds the uploaded plan (device memory is host here).
  EXPECT_GT(*chunk.aligned, 0);
  EXPECT_EQ(*chunk.aligned % 16, 0);
  MemRef<int8_t, 1> mask{};
  _mlir_ciface_cascade_mgpu_plan_i8(&mask, plan, 3);
  EXPECT_EQ(mask.sizes[0], ri.sizes[0]);
  MemRef<float, 3> tv{};
  MemRef<float, 2> ts{};
  _mlir_ciface_cascade_mgpu_plan_tmp_v(&tv, plan);
  _mlir_ciface_cascade_mgpu_plan_tmp_s(&ts, plan);
  EXPECT_GT(tv.sizes[0], 4);
  EXPECT_EQ(tv.sizes[1], 32);
  EXPECT_EQ(tv.sizes[2], 128);
  EXPECT_EQ(tv.strides[0], 32 * 128);
  EXPECT_EQ(ts.sizes[0], tv.sizes[0]);
  EXPECT_EQ(ts.sizes[1], 32);
}

TEST_F(MgpuPlanTest, ReplansInPlaceAndGrowsOutsideGraphMode) {
  Batch small(2, 4, false), large(200, 64, false);
  void *first = small.plan(&slot);
  ASSERT_NE(first, nullptr);
  void *second = large.plan(&slot);
  EXPECT_EQ(second, first); // the same plan object, replanned
  Array ri{};
  _mlir_ciface_cascade_mgpu_plan_i32(&ri, second, 0);
  EXPECT_GE(ri.sizes[0], 200);
}

TEST_F(MgpuPlanTest, GraphModeKeepsAddressesAndSizes) {
  Batch a(64, 300, false), b(64, 20, false);
  void *plan = a.plan(&slot, /*graphRows=*/64);
  ASSERT_NE(plan, nullptr);
  Array before{}, after{};
  MemRef<float, 3> tvBefore{}, tvAfter{};
  _mlir_ciface_cascade_mgpu_plan_i32(&before, plan, 0);
  _mlir_ciface_cascade_mgpu_plan_tmp_v(&tvBefore, plan);
  ASSERT_EQ(b.plan(&slot, 64), plan);
  _mlir_ciface_cascade_mgpu_plan_i32(&after, plan, 0);
  _mlir_ciface_cascade_mgpu_plan_tmp_v(&tvAfter, plan);
  EXPECT_EQ(after.aligned, before.aligned);
  EXPECT_EQ(after.sizes[0], before.sizes[0]);
  EXPECT_EQ(tvAfter.aligned, tvBefore.aligned);
  EXPECT_EQ(tvAfter.sizes[0], tvBefore.sizes[0]);
}

TEST_F(MgpuPlanTest, GraphModeRefusesALargerBatch) {
  Batch a(8, 300, false), b(64, 300, false);
  void *first = a.plan(&slot, 8);
  ASSERT_NE(first, nullptr);
  ASSERT_EQ(cascade_mgpu_plan_split_kv(first, 0), 1);
  EXPECT_EQ(b.plan(&slot, 8), nullptr);
  // The plan handed out before reads as unsplit now (the host code runs the
  // unplanned kernel), and describes no arrays.
  EXPECT_EQ(cascade_mgpu_plan_split_kv(first, 0), 0);
  Array ri{};
  _mlir_ciface_cascade_mgpu_plan_i32(&ri, first, 0);
  EXPECT_EQ(ri.aligned, nullptr);
}

TEST_F(MgpuPlanTest, PrefillPlanForAnotherQueryTileIsNotSplit) {
  Batch batch(2, 2048, /*prefill=*/true);
  void *plan = batch.plan(&slot, 0, /*qoTile=*/128);
  ASSERT_NE(plan, nullptr);
  ASSERT_EQ(cascade_mgpu_plan_split_kv(plan, 128), 1);
  EXPECT_EQ(cascade_mgpu_plan_split_kv(plan, 64), 0);
  Array merge{};
  _mlir_ciface_cascade_mgpu_plan_i32(&merge, plan, 8); // merge_indptr
  EXPECT_EQ(merge.sizes[0], 3);
}

TEST_F(MgpuPlanTest, BadInputIsANullPlan) {
  Batch batch(4, 8, false);
  batch.kvIndptr[2] = 100; // not monotone
  EXPECT_EQ(batch.plan(&slot), nullptr);
  EXPECT_EQ(cascade_mgpu_plan_split_kv(nullptr, 0), 0);
  Array ri{};
  _mlir_ciface_cascade_mgpu_plan_i32(&ri, nullptr, 0);
  EXPECT_EQ(ri.aligned, nullptr);
  EXPECT_EQ(ri.sizes[0], 0);
  cascade_mgpu_plan_destroy(&slot);
  EXPECT_EQ(slot, nullptr);
}

/// The request_indices and kv_chunk_size of a plan, uploaded (device memory
/// is host memory here).
std::vector<int32_t> plannedArrays(void *plan) {
  Array ri{}, chunk{};
  _mlir_ciface_cascade_mgpu_plan_i32(&ri, plan, 0);
  _mlir_ciface_cascade_mgpu_plan_i32(&chunk, plan, 4);
  std::vector<int32_t> out(ri.aligned, ri.aligned + ri.sizes[0]);
  out.push_back(*chunk.aligned);
  return out;
}

TEST_F(MgpuPlanTest, PreallocatedKvIndicesBufferIsReadUpToKvIndptrB) {
  // 4 requests of 300 pages in a buffer of 4096 whose tail is stale
  // (negative ids, which the plan would reject among the used entries).
  Batch batch(4, 300, /*prefill=*/false);
  std::vector<int32_t> exact(1200), buffer(4096, -1), strided(2 * 4096, -1);
  std::iota(exact.begin(), exact.end(), 0);
  std::copy(exact.begin(), exact.end(), buffer.begin());
  for (size_t i = 0; i < exact.size(); ++i)
    strided[2 * i] = exact[i];
  Array q = view(batch.qo), k = view(batch.kvIndptr), l = view(batch.last);
  auto plan = [&](void **s, Array ids) {
    return _mlir_ciface_cascade_mgpu_plan(s, &q, &k, &l, &ids, 0, 32, 8, 128,
                                          16, 0, 2, 0, 0, 0);
  };
  void *want = plan(&slot, view(exact));
  ASSERT_NE(want, nullptr);
  const std::vector<int32_t> wanted = plannedArrays(want);
  for (int stride : {1, 2}) {
    SCOPED_TRACE("stride " + std::to_string(stride));
    void *other = nullptr;
    Array ids = stride == 1 ? view(buffer) : view(strided);
    ids.sizes[0] = 4096;
    ids.strides[0] = stride;
    void *got = plan(&other, ids);
    ASSERT_NE(got, nullptr);
    EXPECT_EQ(plannedArrays(got), wanted);
    // Fewer entries than kv_indptr[B]: an error, a null plan.
    ids.sizes[0] = 1199;
    EXPECT_EQ(plan(&other, ids), nullptr);
    cascade_mgpu_plan_destroy(&other);
  }
}

/// A decode batch of `b` requests, each with `shared` pages that all
/// requests share (the same ids) and 3 pages of its own.
struct SharedBatch {
  std::vector<int32_t> kvIndptr{0}, last, indices;
  SharedBatch(int32_t b, int32_t shared) {
    int32_t next = shared;
    for (int32_t i = 0; i < b; ++i) {
      for (int32_t p = 0; p < shared; ++p)
        indices.push_back(p);
      for (int32_t p = 0; p < 3; ++p)
        indices.push_back(next++);
      kvIndptr.push_back(static_cast<int32_t>(indices.size()));
      last.push_back(16);
    }
  }
  void *plan(void **slot, int64_t occupancy = 2, int64_t sharedOccupancy = 0) {
    Array k = view(kvIndptr), l = view(last), n = view(indices);
    return _mlir_ciface_cascade_mgpu_auto_plan(
        slot, &k, &l, &n, 32, 8, 128, 16, 0, occupancy, 128, sharedOccupancy);
  }
};

TEST_F(MgpuPlanTest, AutoCascadeFindsTheSharedPrefix) {
  SharedBatch batch(64, 512);
  void *plan = batch.plan(&slot);
  ASSERT_NE(plan, nullptr);
  ASSERT_EQ(cascade_mgpu_auto_num_levels(plan), 2);
  // Level 0: the shared pages, one group of all 64 queries.
  Array qo{}, kv{}, ids{}, last{};
  _mlir_ciface_cascade_mgpu_auto_array(&qo, plan, 0, 0);
  _mlir_ciface_cascade_mgpu_auto_array(&kv, plan, 0, 1);
  _mlir_ciface_cascade_mgpu_auto_array(&ids, plan, 0, 2);
  _mlir_ciface_cascade_mgpu_auto_array(&last, plan, 0, 3);
  ASSERT_EQ(qo.sizes[0], 2);
  EXPECT_EQ(qo.aligned[1], 64);
  EXPECT_EQ(kv.aligned[1], 512);
  EXPECT_EQ(ids.sizes[0], 512);
  EXPECT_EQ(last.sizes[0], 1);
  // Level 1: each request's own 3 pages.
  _mlir_ciface_cascade_mgpu_auto_array(&kv, plan, 1, 1);
  _mlir_ciface_cascade_mgpu_auto_array(&ids, plan, 1, 2);
  ASSERT_EQ(kv.sizes[0], 65);
  EXPECT_EQ(kv.aligned[64], 64 * 3);
  EXPECT_EQ(ids.sizes[0], 64 * 3);
  // Each level is a plan the level functions take.
  void *shared = cascade_mgpu_auto_level(plan, 0);
  ASSERT_NE(shared, nullptr);
  EXPECT_EQ(cascade_mgpu_plan_split_kv(shared, 128), 1);
  Array merge{};
  _mlir_ciface_cascade_mgpu_plan_i32(&merge, shared, 8);
  EXPECT_EQ(merge.sizes[0], 65);
  EXPECT_EQ(cascade_mgpu_auto_level(plan, 2), nullptr);
  cascade_mgpu_auto_plan_destroy(&slot);
}

// The shared level is planned for the grid of its own (prefill) kernel:
// with shared_occupancy 1 its split has a quarter of the work items that the
// decode kernel's occupancy 4 would give it (the stand-in device's SMs x 1
// over 8 KV heads, against x 4).
TEST_F(MgpuPlanTest, AutoCascadeSharedLevelHasItsOwnOccupancy) {
  SharedBatch batch(64, 2048);
  auto sharedItems = [&](int64_t sharedOccupancy) {
    void *other = nullptr;
    void *plan = batch.plan(&other, 4, sharedOccupancy);
    EXPECT_NE(plan, nullptr);
    EXPECT_EQ(cascade_mgpu_auto_num_levels(plan), 2);
    Array req{};
    _mlir_ciface_cascade_mgpu_plan_i32(&req, cascade_mgpu_auto_level(plan, 0),
                                       0);
    int64_t items = req.sizes[0];
    cascade_mgpu_auto_plan_destroy(&other);
    return items;
  };
  const int64_t byDecode = sharedItems(0), own = sharedItems(1);
  EXPECT_GT(own, 0);
  EXPECT_EQ(byDecode, sharedItems(4));
  EXPECT_LT(own, byDecode);
  EXPECT_GE(own * 4, byDecode - 4); // up to one partial chunk per tile
}

TEST_F(MgpuPlanTest, AutoCascadeIgnoresAPreallocatedBuffersTail) {
  for (int32_t shared : {512, 0}) {
    SCOPED_TRACE("shared pages: " + std::to_string(shared));
    SharedBatch exact(64, shared), longer(64, shared);
    longer.indices.resize(longer.indices.size() + 5000, -7);
    void *other = nullptr;
    void *want = exact.plan(&slot), *got = longer.plan(&other);
    ASSERT_NE(want, nullptr);
    ASSERT_NE(got, nullptr);
    const int64_t levels = cascade_mgpu_auto_num_levels(want);
    ASSERT_EQ(cascade_mgpu_auto_num_levels(got), levels);
    for (int64_t lv = 0; lv < levels; ++lv)
      for (int64_t which = 0; which < 4; ++which) {
        Array a{}, b{};
        _mlir_ciface_cascade_mgpu_auto_array(&a, want, lv, which);
        _mlir_ciface_cascade_mgpu_auto_array(&b, got, lv, which);
        ASSERT_EQ(a.sizes[0], b.sizes[0]) << lv << " " << which;
        EXPECT_TRUE(std::equal(a.aligned, a.aligned + a.sizes[0], b.aligned))
            << lv << " " << which;
      }
    cascade_mgpu_auto_plan_destroy(&slot);
    cascade_mgpu_auto_plan_destroy(&other);
  }
}

TEST_F(MgpuPlanTest, AutoCascadeWithoutSharingIsOneLevel) {
  SharedBatch batch(64, 0);
  void *plan = batch.plan(&slot);
  ASSERT_NE(plan, nullptr);
  EXPECT_EQ(cascade_mgpu_auto_num_levels(plan), 1);
  EXPECT_NE(cascade_mgpu_auto_level(plan, 0), nullptr);
  EXPECT_EQ(cascade_mgpu_auto_level(plan, 1), nullptr);
  EXPECT_EQ(cascade_mgpu_auto_num_levels(nullptr), 0);
  cascade_mgpu_auto_plan_destroy(&slot);
}

} // namespace
