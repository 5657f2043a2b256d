//===- TensorMapTest.cpp - TMA tensor maps on the stand-in driver ---------===//
//
// encodeTiledTensorMap against the stand-in CUDA driver
// (python_bindings/tests/fake_cuda/fake_cuda.c), which records the arguments
// of each cuTensorMapEncodeTiled call and fills the map with 0xA5: a valid
// description reaches the driver field for field; every invalid one is
// rejected with InvalidArgument before the driver is called; a driver
// without the entry point is an Unsupported error when a map is encoded.
//
//===----------------------------------------------------------------------===//

#include "FakeCuda.h"

#include "cascade/Runtime/TensorMap.h"

#include <gtest/gtest.h>

#include <functional>
#include <string>

using namespace cascade::runtime;

namespace {

struct FakeDriver : test::FakeCudaLibrary {
  void (*reset)() = nullptr;
  int (*numTensorMaps)() = nullptr;
  uint64_t (*arg)(int, const char *, int) = nullptr;
};

FakeDriver &fake() {
  static FakeDriver *f = [] {
    auto *f = new FakeDriver();
    f->open();
    if (!f->status.ok())
      return f;
    f->hook(f->reset, "fake_cuda_reset");
    f->hook(f->numTensorMaps, "fake_cuda_num_tensor_maps");
    f->hook(f->arg, "fake_cuda_tensor_map_arg");
    if (!f->reset || !f->numTensorMaps || !f->arg)
      f->status = Status(ErrorCode::DriverUnavailable,
                         "the stand-in driver lacks its tensor-map hooks");
    return f;
  }();
  return *f;
}

/// A 64x64 f16 tile of a 192 x 320 row-major f16 tensor (rows 640 bytes
/// apart) in the 128-byte swizzle: the description of the tma check.
TiledTensorMapDesc tile2d() {
  TiledTensorMapDesc d;
  d.dtype = TensorMapDtype::F16;
  d.globalAddress = 0x7f0000001000;
  d.globalDims = {320, 192};
  d.globalStrides = {640};
  d.boxDims = {64, 64};
  d.swizzle = TensorMapSwizzle::B128;
  return d;
}

TEST(TensorMapTest, ElementBytes) {
  EXPECT_EQ(tensorMapElementBytes(TensorMapDtype::U8), 1);
  EXPECT_EQ(tensorMapElementBytes(TensorMapDtype::F16), 2);
  EXPECT_EQ(tensorMapElementBytes(TensorMapDtype::BF16), 2);
  EXPECT_EQ(tensorMapElementBytes(TensorMapDtype::I32), 4);
  EXPECT_EQ(tensorMapElementBytes(TensorMapDtype::F32), 4);
  EXPECT_EQ(tensorMapElementBytes(TensorMapDtype::F64), 8);
}

TEST(TensorMapTest, Encode2DPassesTheDescription) {
  NEED_FAKE();
  TensorMap map{};
  ASSERT_TRUE(encodeTiledTensorMap(fake().api, tile2d(), map).ok());
  ASSERT_EQ(fake().numTensorMaps(), 1);
  auto arg = [](const char *f, int j = 0) { return fake().arg(0, f, j); };
  EXPECT_EQ(arg("dtype"), 6u); // CU_TENSOR_MAP_DATA_TYPE_FLOAT16
  EXPECT_EQ(arg("rank"), 2u);
  EXPECT_EQ(arg("address"), 0x7f0000001000u);
  EXPECT_EQ(arg("dims", 0), 320u);
  EXPECT_EQ(arg("dims", 1), 192u);
  EXPECT_EQ(arg("strides", 0), 640u);
  EXPECT_EQ(arg("box", 0), 64u);
  EXPECT_EQ(arg("box", 1), 64u);
  EXPECT_EQ(arg("estrides", 0), 1u); // defaulted
  EXPECT_EQ(arg("estrides", 1), 1u);
  EXPECT_EQ(arg("interleave"), 0u); // CU_TENSOR_MAP_INTERLEAVE_NONE
  EXPECT_EQ(arg("swizzle"), 3u);    // CU_TENSOR_MAP_SWIZZLE_128B
  EXPECT_EQ(arg("l2"), 0u);
  EXPECT_EQ(arg("oob"), 0u);
  // The map the driver wrote is the one returned.
  for (uint64_t word : map.opaque)
    EXPECT_EQ(word, 0xA5A5A5A5A5A5A5A5u);
}

TEST(TensorMapTest, Encode3DWithOptions) {
  NEED_FAKE();
  TiledTensorMapDesc d;
  d.dtype = TensorMapDtype::BF16;
  d.globalAddress = 0x10000;
  d.globalDims = {128, 16, 1000}; // head dim, page size, pages
  d.globalStrides = {256, 4096};
  d.boxDims = {32, 16, 1};
  d.elementStrides = {1, 2, 1};
  d.swizzle = TensorMapSwizzle::B64;
  d.l2Promotion = TensorMapL2Promotion::B256;
  d.oobFill = TensorMapOobFill::NaN;
  TensorMap map{};
  ASSERT_TRUE(encodeTiledTensorMap(fake().api, d, map).ok());
  ASSERT_EQ(fake().numTensorMaps(), 1);
  auto arg = [](const char *f, int j = 0) { return fake().arg(0, f, j); };
  EXPECT_EQ(arg("dtype"), 9u); // CU_TENSOR_MAP_DATA_TYPE_BFLOAT16
  EXPECT_EQ(arg("rank"), 3u);
  EXPECT_EQ(arg("dims", 2), 1000u);
  EXPECT_EQ(arg("strides", 0), 256u);
  EXPECT_EQ(arg("strides", 1), 4096u);
  EXPECT_EQ(arg("box", 0), 32u);
  EXPECT_EQ(arg("box", 1), 16u);
  EXPECT_EQ(arg("box", 2), 1u);
  EXPECT_EQ(arg("estrides", 1), 2u);
  EXPECT_EQ(arg("swizzle"), 2u); // CU_TENSOR_MAP_SWIZZLE_64B
  EXPECT_EQ(arg("l2"), 3u);      // CU_TENSOR_MAP_L2_PROMOTION_L2_256B
  EXPECT_EQ(arg("oob"), 1u);     // CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_...
}

TEST(TensorMapTest, RankOneHasNoStrides) {
  NEED_FAKE();
  TiledTensorMapDesc d;
  d.dtype = TensorMapDtype::F32;
  d.globalAddress = 0x20000;
  d.globalDims = {1000};
  d.boxDims = {256};
  d.swizzle = TensorMapSwizzle::None;
  TensorMap map{};
  ASSERT_TRUE(encodeTiledTensorMap(fake().api, d, map).ok());
  EXPECT_EQ(fake().arg(0, "rank", 0), 1u);
  EXPECT_EQ(fake().arg(0, "box", 0), 256u);
}

struct InvalidCase {
  const char *name;
  std::function<void(TiledTensorMapDesc &)> edit;
  const char *message;
};

TEST(TensorMapTest, InvalidDescriptionsNeverReachTheDriver) {
  NEED_FAKE();
  const InvalidCase cases[] = {
      {"rank 0",
       [](TiledTensorMapDesc &d) {
         d.globalDims.clear();
         d.globalStrides.clear();
         d.boxDims.clear();
       },
       "tensor map: rank 0 is not in [1, 5]"},
      {"rank 6",
       [](TiledTensorMapDesc &d) {
         d.globalDims.assign(6, 64);
         d.globalStrides.assign(5, 128);
         d.boxDims.assign(6, 64);
       },
       "tensor map: rank 6 is not in [1, 5]"},
      {"stride count",
       [](TiledTensorMapDesc &d) {
         d.globalStrides = {640, 640};
       },
       "tensor map: 2 global strides for rank 2 (expected 1: dims 1 .. "
       "rank-1)"},
      {"box count", [](TiledTensorMapDesc &d) { d.boxDims = {64}; },
       "tensor map: 1 box dims for rank 2"},
      {"element stride count",
       [](TiledTensorMapDesc &d) { d.elementStrides = {1}; },
       "tensor map: 1 element strides for rank 2"},
      {"null address", [](TiledTensorMapDesc &d) { d.globalAddress = 0; },
       "tensor map: global address 0x0 is not a non-null multiple of 16"},
      {"misaligned address",
       [](TiledTensorMapDesc &d) { d.globalAddress += 8; },
       "tensor map: global address 0x7f0000001008 is not a non-null "
       "multiple of 16"},
      {"zero dim", [](TiledTensorMapDesc &d) { d.globalDims[1] = 0; },
       "tensor map: global dim 1 is 0, not in [1, 2^32]"},
      {"huge dim",
       [](TiledTensorMapDesc &d) { d.globalDims[0] = (1ull << 32) + 1; },
       "tensor map: global dim 0 is 4294967297, not in [1, 2^32]"},
      {"misaligned stride",
       [](TiledTensorMapDesc &d) { d.globalStrides[0] = 648; },
       "tensor map: global stride of dim 1 is 648 bytes, not a multiple of "
       "16 below 2^40"},
      {"huge stride",
       [](TiledTensorMapDesc &d) { d.globalStrides[0] = 1ull << 40; },
       "tensor map: global stride of dim 1 is 1099511627776 bytes, not a "
       "multiple of 16 below 2^40"},
      {"zero box", [](TiledTensorMapDesc &d) { d.boxDims[1] = 0; },
       "tensor map: box dim 1 is 0, not in [1, 256]"},
      {"box 257", [](TiledTensorMapDesc &d) { d.boxDims[1] = 257; },
       "tensor map: box dim 1 is 257, not in [1, 256]"},
      {"element stride 9",
       [](TiledTensorMapDesc &d) {
         d.elementStrides = {1, 9};
       },
       "tensor map: element stride 1 is 9, not in [1, 8]"},
      {"element stride 0",
       [](TiledTensorMapDesc &d) {
         d.elementStrides = {0, 1};
       },
       "tensor map: element stride 0 is 0, not in [1, 8]"},
      {"inner box not 16 bytes",
       [](TiledTensorMapDesc &d) {
         d.swizzle = TensorMapSwizzle::None;
         d.boxDims[0] = 12;
       },
       "tensor map: the box's inner dim spans 24 bytes, not a multiple of "
       "16"},
      {"inner box wider than the 128B swizzle",
       [](TiledTensorMapDesc &d) { d.boxDims[0] = 72; },
       "tensor map: the box's inner dim spans 144 bytes, more than the "
       "128-byte swizzle"},
      {"inner box wider than the 32B swizzle",
       [](TiledTensorMapDesc &d) {
         d.swizzle = TensorMapSwizzle::B32;
         d.boxDims[0] = 32;
       },
       "tensor map: the box's inner dim spans 64 bytes, more than the "
       "32-byte swizzle"},
      {"NaN fill on integers",
       [](TiledTensorMapDesc &d) {
         d.dtype = TensorMapDtype::I32;
         d.boxDims[0] = 16;
         d.oobFill = TensorMapOobFill::NaN;
       },
       "tensor map: NaN out-of-bounds fill needs a floating-point element "
       "type"},
      {"unknown dtype",
       [](TiledTensorMapDesc &d) { d.dtype = static_cast<TensorMapDtype>(42); },
       "tensor map: unknown element type 42"},
      {"unknown swizzle",
       [](TiledTensorMapDesc &d) {
         d.swizzle = static_cast<TensorMapSwizzle>(7);
       },
       "tensor map: unknown swizzle 7"},
      {"unknown L2 promotion",
       [](TiledTensorMapDesc &d) {
         d.l2Promotion = static_cast<TensorMapL2Promotion>(4);
       },
       "tensor map: unknown L2 promotion 4"},
      {"unknown fill",
       [](TiledTensorMapDesc &d) {
         d.oobFill = static_cast<TensorMapOobFill>(2);
       },
       "tensor map: unknown out-of-bounds fill 2"},
  };
  for (const InvalidCase &c : cases) {
    SCOPED_TRACE(c.name);
    TiledTensorMapDesc d = tile2d();
    c.edit(d);
    Status v = validateTiledTensorMap(d);
    EXPECT_EQ(v.code(), ErrorCode::InvalidArgument);
    EXPECT_EQ(v.message(), c.message);
    TensorMap map{};
    map.opaque[0] = 7;
    Status s = encodeTiledTensorMap(fake().api, d, map);
    EXPECT_EQ(s.code(), ErrorCode::InvalidArgument);
    EXPECT_EQ(s.message(), c.message);
    EXPECT_EQ(map.opaque[0], 7u); // untouched
  }
  EXPECT_EQ(fake().numTensorMaps(), 0);
  // The unedited description is valid (each case above fails on its edit).
  EXPECT_TRUE(validateTiledTensorMap(tile2d()).ok());
}

TEST(TensorMapTest, DriverWithoutTheEntryPoint) {
  NEED_FAKE();
  cuda::DriverApi old = fake().api;
  old.cuTensorMapEncodeTiled = nullptr;
  TensorMap map{};
  Status s = encodeTiledTensorMap(old, tile2d(), map);
  EXPECT_EQ(s.code(), ErrorCode::Unsupported);
  EXPECT_EQ(s.message(), "the CUDA driver lacks cuTensorMapEncodeTiled (TMA "
                         "tensor maps need a CUDA 12.0 or newer driver)");
  EXPECT_EQ(fake().numTensorMaps(), 0);
  // A bad description is still reported as such.
  TiledTensorMapDesc bad = tile2d();
  bad.boxDims[1] = 300;
  EXPECT_EQ(encodeTiledTensorMap(old, bad, map).code(),
            ErrorCode::InvalidArgument);
}

TEST(TensorMapTest, DriverErrorIsReported) {
  NEED_FAKE();
  // A driver that rejects the map: its CUresult becomes a Driver error
  // naming the call, and the output is left as it was.
  cuda::DriverApi api = fake().api;
  api.cuTensorMapEncodeTiled = [](void *, int, unsigned, void *,
                                  const uint64_t *, const uint64_t *,
                                  const uint32_t *, const uint32_t *, int, int,
                                  int, int) -> cuda::CUresult { return 1; };
  TensorMap map{};
  map.opaque[0] = 7;
  Status s = encodeTiledTensorMap(api, tile2d(), map);
  EXPECT_EQ(s.code(), ErrorCode::Driver);
  EXPECT_EQ(s.message(),
            "cuTensorMapEncodeTiled failed: CUDA_ERROR_FAKE (fake driver)");
  EXPECT_EQ(map.opaque[0], 7u);
}

} // namespace
