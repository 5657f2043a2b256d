//===- ManifestTest.cpp - Bundles, argument binding, the driver loader ----===//

#include "TestUtil.h"

#include "cascade/Runtime/Driver.h"
#include "cascade/Runtime/Launcher.h"
#include "cascade/Runtime/Manifest.h"

#include <cmath>
#include <cstring>
#include <limits>

using namespace cascade::runtime;
using namespace cascade::runtime::test;

namespace {

const std::string kBundle = std::string(CASCADE_TEST_INPUTS) + "/bundle";

Bundle loadTestBundle() {
  Bundle b;
  Status s = loadBundle(kBundle, b);
  EXPECT_TRUE(s.ok()) << s.message();
  return b;
}

std::string manifestWith(const std::string &kernel) {
  return R"({"format": "cascade-kernel-bundle", "version": 1, "kernels": [)" +
         kernel + "]}";
}

Status parseKernel(const std::string &kernel) {
  Bundle b;
  return parseManifest(manifestWith(kernel), b);
}

} // namespace

TEST(Manifest, LoadsTheHandwrittenBundle) {
  Bundle b = loadTestBundle();
  EXPECT_EQ(b.version, 1);
  EXPECT_EQ(b.chip, "sm_90");
  EXPECT_EQ(b.features, "+ptx80");
  ASSERT_EQ(b.kernels.size(), 2u);
  const KernelSpec *k = b.find("cascade_merge_state_f16_d128");
  ASSERT_NE(k, nullptr);
  EXPECT_EQ(k->op, "merge_state");
  EXPECT_EQ(k->block[0], 128);
  EXPECT_EQ(k->grid[0].param, "num_tasks");
  EXPECT_EQ(k->grid[0].div, 4);
  EXPECT_EQ(k->grid[1].value, 1);
  EXPECT_EQ(k->numPtxParams(), 11);
  EXPECT_EQ(k->staticString("head_dim"), "128");
  EXPECT_EQ(k->staticString("v_dtype"), "f16");
  EXPECT_EQ(k->staticString("missing"), "");
  EXPECT_EQ(b.ptx.size(), 1u);
  EXPECT_EQ(b.select("decode_split", {{"head_dim", "128"}, {"layout", "NHD"}}),
            b.find("cascade_decode_split_f16_d128"));
  EXPECT_EQ(b.select("decode_split", {{"layout", "HND"}}), nullptr);
  // Numbers match by value, whatever their spelling; text does not.
  EXPECT_EQ(b.select("decode_split", {{"head_dim", "128.0"}}),
            b.find("cascade_decode_split_f16_d128"));
  EXPECT_EQ(b.select("decode_split", {{"head_dim", "1.28e2"}}),
            b.find("cascade_decode_split_f16_d128"));
  EXPECT_EQ(b.select("decode_split", {{"head_dim", "128x"}}), nullptr);
  EXPECT_EQ(b.select("decode_split", {{"head_dim", "64"}}), nullptr);
  EXPECT_EQ(b.find("nope"), nullptr);
}

TEST(Manifest, PdlSaysTheKernelWaitsForItsPredecessors) {
  // Absent (a bundle of an older compiler): never launched early.
  Bundle b = loadTestBundle();
  for (const KernelSpec &k : b.kernels)
    EXPECT_FALSE(k.pdl) << k.name;
  for (bool pdl : {true, false}) {
    Bundle one;
    const std::string kernel =
        std::string(R"({"name": "k", "ptx": "a.ptx", "op": "decode",
             "block": [1, 1, 1], "grid": [1, 1, 1], "params": [], "pdl": )") +
        (pdl ? "true}" : "false}");
    ASSERT_TRUE(parseManifest(manifestWith(kernel), one).ok());
    EXPECT_EQ(one.kernels.at(0).pdl, pdl);
  }
}

TEST(Manifest, BindsMemrefsAsFiveParams) {
  Bundle b = loadTestBundle();
  ArgumentTable t;
  t.setBuffer("v_a", 0x1000, 4096, "f16");
  t.setBuffer("s_a", 0x2000, 32, "f32");
  t.setInt("num_tasks", 10);
  KernelLaunch l;
  Status s = bindKernel(*b.find("cascade_merge_state_f16_d128"), t, l);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(l.slots, (std::vector<uint64_t>{0x1000, 0x1000, 0, 4096, 1, 0x2000,
                                            0x2000, 0, 32, 1, 10}));
  EXPECT_EQ(l.slotNames[1], "v_a.aligned");
  EXPECT_EQ(l.slotNames[8], "s_a.size");
  EXPECT_EQ(l.grid, (std::array<uint32_t, 3>{3, 1, 1})); // ceil(10 / 4)
  EXPECT_EQ(l.block, (std::array<uint32_t, 3>{128, 1, 1}));
  std::vector<void *> ptrs = l.paramPointers();
  ASSERT_EQ(ptrs.size(), 11u);
  EXPECT_EQ(*static_cast<uint64_t *>(ptrs[3]), 4096u);
  t.setInt("num_tasks", 0);
  ASSERT_TRUE(bindKernel(*b.find("cascade_merge_state_f16_d128"), t, l).ok());
  EXPECT_TRUE(l.empty());
}

TEST(Manifest, BindsPlanArraysAndScalars) {
  Bundle b = loadTestBundle();
  Batch batch =
      makeBatch(PlanMode::Decode, {10, 2}, {}, 16, 8, 1, 128, 4, 1, false);
  Plan plan;
  ASSERT_TRUE(makePlan(batch.inputs(false), plan).ok());
  ArgumentTable t;
  addPlanBindings(t, plan, 0x10000, 0x80000);
  t.setBuffer("q", 0x5000, 2 * 8 * 128, "f16");
  t.setFloat("sm_scale", 0.125);
  KernelLaunch l;
  Status s = bindKernel(*b.find("cascade_decode_split_f16_d128"), t, l);
  ASSERT_TRUE(s.ok()) << s.message();
  const WorkspaceSection *req = plan.int_workspace.find("request_indices");
  const WorkspaceSection *mask = plan.int_workspace.find("block_valid_mask");
  const WorkspaceSection *chunk = plan.int_workspace.find("kv_chunk_size");
  const WorkspaceSection *tmpV = plan.float_workspace.find("tmp_v");
  EXPECT_EQ(l.slots[5], 0x10000u + req->offset);
  EXPECT_EQ(l.slots[8], 4u);                       // padded_batch_size elements
  EXPECT_EQ(l.slots[10], 0x10000u + mask->offset); // ptr: one slot
  EXPECT_EQ(l.slots[11], 0x10000u + chunk->offset);
  EXPECT_EQ(l.slots[14], 1u);
  EXPECT_EQ(l.slots[16], 0x80000u + tmpV->offset);
  int32_t headDim;
  std::memcpy(&headDim, &l.slots[21], 4);
  EXPECT_EQ(headDim, 128);
  float scale;
  std::memcpy(&scale, &l.slots[22], 4);
  EXPECT_EQ(scale, 0.125f);
  EXPECT_EQ(l.slots.size(), 23u);
  EXPECT_EQ(l.grid, (std::array<uint32_t, 3>{4, 1, 1}));
  EXPECT_EQ(l.sharedBytes, 65536u);
}

TEST(Manifest, BindingErrorsNameTheParameter) {
  Bundle b = loadTestBundle();
  const KernelSpec &k = *b.find("cascade_merge_state_f16_d128");
  ArgumentTable t;
  t.setBuffer("v_a", 0x1000, 4096, "f16");
  KernelLaunch l;
  Status s = bindKernel(k, t, l);
  EXPECT_EQ(s.code(), ErrorCode::NotFound);
  EXPECT_EQ(s.message(), "kernel cascade_merge_state_f16_d128: no buffer "
                         "bound for parameter 's_a' (memref f32)");
  t.setBuffer("s_a", 0x2000, 32, "f16");
  s = bindKernel(k, t, l);
  EXPECT_EQ(s.code(), ErrorCode::InvalidArgument);
  EXPECT_EQ(s.message(), "kernel cascade_merge_state_f16_d128: parameter "
                         "'s_a' expects f32 elements, the bound buffer holds "
                         "f16");
  t.setBuffer("s_a", 0x2000, 32, "f32");
  s = bindKernel(k, t, l);
  EXPECT_EQ(s.message(), "kernel cascade_merge_state_f16_d128: no scalar "
                         "bound for parameter 'num_tasks' (i64)");
  t.setInt("num_tasks", int64_t(1) << 40);
  s = bindKernel(k, t, l);
  EXPECT_EQ(s.code(), ErrorCode::Overflow);
  EXPECT_EQ(s.message(), "kernel cascade_merge_state_f16_d128: grid[0] = "
                         "274877906944 exceeds the device limit 2147483647");
}

TEST(Manifest, SchemaErrors) {
  const std::string ok =
      R"({"name": "k", "ptx": "a.ptx", "op": "decode", "block": [32, 1, 1],
          "grid": [1, 1, 1], "params": []})";
  EXPECT_TRUE(parseKernel(ok).ok());
  struct Case {
    std::string kernel, message;
  };
  const Case cases[] = {
      {R"({"name": "k", "ptx": "a.ptx", "op": "fly", "block": [1, 1, 1],
           "grid": [1, 1, 1], "params": []})",
       "manifest: kernels[0] (k): unknown op \"fly\""},
      {R"({"name": "k", "ptx": "a.ptx", "op": "decode", "block": [64, 32, 1],
           "grid": [1, 1, 1], "params": []})",
       "manifest: kernels[0] (k): a block has more than 1024 threads"},
      {R"({"name": "k", "ptx": "a.ptx", "op": "decode", "block": [1, 1, 1],
           "grid": [{"param": "n", "div": 0}, 1, 1], "params": []})",
       "manifest: kernels[0] (k): grid[0]: \"div\" must be a positive "
       "integer"},
      {R"({"name": "k", "ptx": "a.ptx", "op": "decode", "block": [1, 1, 1],
           "grid": [1, 1, 1], "params": [{"name": "x", "kind": "vec"}]})",
       "manifest: kernels[0] (k): params[0]: unknown kind \"vec\" (memref, "
       "ptr, i32, i64, f32)"},
      {R"({"name": "k", "ptx": "a.ptx", "op": "decode", "block": [1, 1, 1],
           "grid": [1, 1, 1], "params": [], "plan_arrays": ["o_indptr"]})",
       "manifest: kernels[0] (k): plan array \"o_indptr\" is not a param"},
      {R"({"name": "k", "ptx": "a.ptx", "op": "decode", "block": [1, 1, 1],
           "grid": [1, 1, 1], "params": [], "extra": 1})",
       "manifest: kernels[0]: unknown key \"extra\""},
      {R"({"name": "k", "ptx": "a.ptx", "op": "decode", "block": [1, 1, 1],
           "grid": [1, 1, 1], "params": [], "pdl": 1})",
       "manifest: kernels[0] (k): \"pdl\" must be a boolean"},
      // Text from the manifest is quoted as JSON in messages, so that a
      // message stays one line (found by test/Fuzz/plan_json_fuzzer).
      {R"({"name": "k", "ptx": "a.ptx", "op": "decode", "block": [1, 1, 1],
           "grid": [1, 1, 1], "params": [], "ex\ntra": 1})",
       "manifest: kernels[0]: unknown key \"ex\\ntra\""},
      // Names are PTX identifiers, paths stay inside the bundle.
      {R"({"name": "k\n", "ptx": "a.ptx", "op": "decode", "block": [1, 1, 1],
           "grid": [1, 1, 1], "params": []})",
       "manifest: kernels[0]: \"name\" \"k\\n\" is not a PTX identifier"},
      {R"({"name": "k", "ptx": "a.ptx", "op": "decode", "block": [1, 1, 1],
           "grid": [1, 1, 1], "params": [{"name": "1x", "kind": "i32"}]})",
       "manifest: kernels[0] (k): params[0]: \"name\" \"1x\" is not an "
       "identifier"},
      {R"({"name": "k", "ptx": "a.ptx", "op": "decode", "block": [1, 1, 1],
           "grid": [{"param": "n m"}, 1, 1], "params": []})",
       "manifest: kernels[0] (k): grid[0]: \"param\" \"n m\" is not an "
       "identifier"},
      {R"({"name": "k", "ptx": "../a.ptx", "op": "decode", "block": [1, 1, 1],
           "grid": [1, 1, 1], "params": []})",
       "manifest: kernels[0] (k): ptx path \"../a.ptx\" must be a relative "
       "path inside the bundle"},
      {R"({"name": "k", "ptx": "/etc/a.ptx", "op": "decode",
           "block": [1, 1, 1], "grid": [1, 1, 1], "params": []})",
       "manifest: kernels[0] (k): ptx path \"/etc/a.ptx\" must be a "
       "relative path inside the bundle"},
  };
  for (const Case &c : cases) {
    Status s = parseKernel(c.kernel);
    EXPECT_EQ(s.code(), ErrorCode::Schema);
    EXPECT_EQ(s.message(), c.message);
  }
  Bundle b;
  Status s = parseManifest(R"({"format": "cascade-kernel-bundle",
                               "version": 2, "kernels": []})",
                           b);
  EXPECT_EQ(s.code(), ErrorCode::Unsupported);
  EXPECT_EQ(s.message(), "manifest: version 2 is not supported (this runtime "
                         "reads version 1)");
  s = parseManifest("{", b);
  EXPECT_EQ(s.code(), ErrorCode::Parse);
  EXPECT_EQ(
      s.message(),
      "manifest: line 1, column 2: syntax error while parsing object key - "
      "unexpected end of input; expected string literal");
}

TEST(Manifest, GridOfHugeValuesIsAnOverflowError) {
  // ceil(v * mul / div) with v near INT64_MAX used to overflow (signed
  // overflow, found by test/Fuzz/manifest_fuzzer); it is now computed without
  // leaving int64 and reported against the device limit.
  Bundle b;
  ASSERT_TRUE(parseManifest(manifestWith(R"({"name": "k", "ptx": "a.ptx",
      "op": "decode", "block": [1, 1, 1],
      "grid": [{"param": "n", "div": 2}, {"param": "n", "div": 1024}, 1],
      "params": []})"),
                            b)
                  .ok());
  ArgumentTable t;
  t.setInt("n", std::numeric_limits<int64_t>::max());
  KernelLaunch l;
  Status s = bindKernel(b.kernels[0], t, l);
  EXPECT_EQ(s.code(), ErrorCode::Overflow);
  EXPECT_EQ(s.message(), "kernel k: grid[0] = 4611686018427387904 exceeds the "
                         "device limit 2147483647");
  // Exact ceilings at the int32 edge.
  t.setInt("n", 2 * int64_t(std::numeric_limits<int32_t>::max()) - 1);
  ASSERT_FALSE(bindKernel(b.kernels[0], t, l).ok()); // grid[1] > 65535
  Bundle c;
  ASSERT_TRUE(parseManifest(manifestWith(R"({"name": "k", "ptx": "a.ptx",
      "op": "decode", "block": [1, 1, 1],
      "grid": [{"param": "n", "div": 2}, 1, 1], "params": []})"),
                            c)
                  .ok());
  s = bindKernel(c.kernels[0], t, l);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(l.grid[0], uint32_t(std::numeric_limits<int32_t>::max()));
  t.setInt("n", 5);
  ASSERT_TRUE(bindKernel(c.kernels[0], t, l).ok());
  EXPECT_EQ(l.grid[0], 3u);
}

TEST(Manifest, ScalarDefaultsBindWhereTheTableHasNone) {
  // q_stride_n / q_stride_h: the contiguous layout's strides unless the
  // caller binds a strided view's.
  Bundle b;
  ASSERT_TRUE(parseManifest(manifestWith(R"({"name": "k", "ptx": "a.ptx",
      "op": "decode", "block": [1, 1, 1], "grid": [1, 1, 1],
      "params": [{"name": "q_stride_n", "kind": "i64", "default": 4096},
                 {"name": "q_stride_h", "kind": "i32", "default": 128},
                 {"name": "n", "kind": "i64"}]})"),
                            b)
                  .ok());
  const KernelSpec &k = b.kernels[0];
  ASSERT_TRUE(k.params[0].defaultValue.has_value());
  EXPECT_EQ(*k.params[0].defaultValue, 4096);
  EXPECT_FALSE(k.params[2].defaultValue.has_value());
  ArgumentTable t;
  KernelLaunch l;
  // A param without a default still needs a binding.
  Status s = bindKernel(k, t, l);
  EXPECT_EQ(s.code(), ErrorCode::NotFound);
  EXPECT_EQ(s.message(), "kernel k: no scalar bound for parameter 'n' (i64)");
  t.setInt("n", 7);
  ASSERT_TRUE(bindKernel(k, t, l).ok());
  ASSERT_EQ(l.slots.size(), 3u);
  EXPECT_EQ(l.slots[0], 4096u);
  EXPECT_EQ(l.slots[1], 128u);
  // A bound value wins over the default.
  t.setInt("q_stride_n", 6144);
  t.setInt("q_stride_h", 256);
  ASSERT_TRUE(bindKernel(k, t, l).ok());
  EXPECT_EQ(l.slots[0], 6144u);
  EXPECT_EQ(l.slots[1], 256u);
  // A default only on integer scalars.
  for (const char *bad : {R"({"name": "q", "kind": "memref", "default": 1})",
                          R"({"name": "x", "kind": "f32", "default": 1})",
                          R"({"name": "x", "kind": "i64", "default": 1.5})",
                          R"({"name": "x", "kind": "i64", "default": "1"})"}) {
    Status e = parseKernel(std::string(R"({"name": "k", "ptx": "a.ptx",
        "op": "decode", "block": [1, 1, 1], "grid": [1, 1, 1], "params": [)") +
                           bad + "]}");
    EXPECT_EQ(e.code(), ErrorCode::Schema) << bad;
    EXPECT_EQ(e.message(),
              "manifest: kernels[0] (k): params[0]: \"default\" must "
              "be an integer, on an i32 or i64 param")
        << bad;
  }
}

TEST(Manifest, FloatBindingsOutsideInt64AreWellDefined) {
  // Converting 2^63 or NaN to int64 is undefined behaviour (found by
  // test/Fuzz/manifest_fuzzer); the integer view saturates instead.
  ArgumentTable t;
  t.setFloat("big", 9.3e18);
  t.setFloat("small", -1e300);
  t.setFloat("nan", std::nan(""));
  t.setFloat("x", -2.75);
  EXPECT_EQ(t.find("big")->intValue, std::numeric_limits<int64_t>::max());
  EXPECT_EQ(t.find("small")->intValue, std::numeric_limits<int64_t>::min());
  EXPECT_EQ(t.find("nan")->intValue, 0);
  EXPECT_EQ(t.find("x")->intValue, -2);
  EXPECT_TRUE(t.find("big")->isFloat);
  EXPECT_EQ(t.find("big")->floatValue, 9.3e18);
}

TEST(Manifest, KernelStaticsAreCheckedAgainstThePlan) {
  Bundle b = loadTestBundle();
  KernelSpec decode = *b.find("cascade_decode_split_f16_d128");
  const KernelSpec &merge = *b.find("cascade_merge_state_f16_d128");
  Plan plan;
  plan.page_size = 16;
  plan.head_dim = 128;
  plan.num_qo_heads = 32;
  plan.num_kv_heads = 8;
  PlanInputs in;
  EXPECT_TRUE(checkKernelStatics(decode, plan, &in).ok());
  EXPECT_TRUE(checkKernelStatics(merge, plan, &in).ok());

  // Only the statics a kernel carries are checked: the heads and dtypes
  // once it carries them.
  plan.num_qo_heads = 64;
  in.q_dtype = DType::BF16;
  EXPECT_TRUE(checkKernelStatics(decode, plan, &in).ok());
  decode.statics.push_back({"num_qo_heads", "32"});
  decode.statics.push_back({"q_dtype", "f16"});
  Status s = checkKernelStatics(decode, plan, &in);
  EXPECT_EQ(s.code(), ErrorCode::SizeMismatch);
  EXPECT_EQ(s.message(), "kernel cascade_decode_split_f16_d128 was built for "
                         "num_qo_heads 32, the plan has 64");
  plan.num_qo_heads = 32;
  s = checkKernelStatics(decode, plan, &in);
  EXPECT_EQ(s.code(), ErrorCode::InvalidArgument);
  EXPECT_EQ(s.message(), "kernel cascade_decode_split_f16_d128 was built for "
                         "q_dtype f16, the plan has bf16");
  // Without the caller's dtypes only the sizes are checked.
  EXPECT_TRUE(checkKernelStatics(decode, plan).ok());

  plan.page_size = 8;
  s = checkKernelStatics(decode, plan);
  EXPECT_EQ(s.code(), ErrorCode::SizeMismatch);
  EXPECT_EQ(s.message(), "kernel cascade_decode_split_f16_d128 was built for "
                         "page_size 16, the plan has 8");
  // A merge kernel carries head_dim and v_dtype (the output's dtype).
  EXPECT_TRUE(checkKernelStatics(merge, plan).ok());
  in.o_dtype = DType::F32;
  s = checkKernelStatics(merge, plan, &in);
  EXPECT_EQ(s.code(), ErrorCode::InvalidArgument);
  EXPECT_EQ(s.message(), "kernel cascade_merge_state_f16_d128 was built for "
                         "v_dtype f16, the plan has f32");
  plan.head_dim = 64;
  s = checkKernelStatics(merge, plan);
  EXPECT_EQ(s.code(), ErrorCode::SizeMismatch);
  EXPECT_EQ(s.message(), "kernel cascade_merge_state_f16_d128 was built for "
                         "head_dim 128, the plan has 64");
}

TEST(Manifest, HeadDimVoIsCheckedAgainstThePlan) {
  // v narrower than q and k: an attention kernel records head_dim_vo, and a
  // merge's head_dim is v's.
  Bundle b = loadTestBundle();
  KernelSpec prefill = *b.find("cascade_decode_split_f16_d128");
  KernelSpec merge = *b.find("cascade_merge_state_f16_d128");
  Plan plan;
  plan.page_size = 16;
  plan.head_dim = 128;
  plan.num_qo_heads = 32;
  plan.num_kv_heads = 8;
  // A kernel without head_dim_vo has v's head_dim = its head_dim.
  plan.head_dim_vo = 64;
  Status s = checkKernelStatics(prefill, plan);
  EXPECT_EQ(s.code(), ErrorCode::SizeMismatch);
  EXPECT_EQ(s.message(), "kernel cascade_decode_split_f16_d128 was built for "
                         "a v head_dim (head_dim_vo) of 128, the plan has 64");
  prefill.statics.push_back({"head_dim_vo", "64"});
  EXPECT_TRUE(checkKernelStatics(prefill, plan).ok());
  plan.head_dim_vo = 0;
  EXPECT_EQ(checkKernelStatics(prefill, plan).code(), ErrorCode::SizeMismatch);
  // The merge of 64-wide states against a plan of q/k 128, v 64.
  plan.head_dim_vo = 64;
  EXPECT_EQ(checkKernelStatics(merge, plan).code(), ErrorCode::SizeMismatch);
  for (auto &[key, value] : merge.statics)
    if (key == "head_dim")
      value = "64";
  EXPECT_TRUE(checkKernelStatics(merge, plan).ok());
}

TEST(Manifest, MissingBundleIsAnIOError) {
  Bundle b;
  Status s = loadBundle("/nonexistent/bundle", b);
  EXPECT_EQ(s.code(), ErrorCode::IO);
  EXPECT_EQ(s.message(), "cannot open /nonexistent/bundle/manifest.json: No "
                         "such file or directory");
}

TEST(Driver, MissingLibraryIsAClearError) {
  cuda::DriverApi api{};
  Status s = cuda::loadDriverLibrary("/nonexistent/libcuda.so.1", api);
  EXPECT_EQ(s.code(), ErrorCode::DriverUnavailable);
  EXPECT_EQ(s.message().rfind("cannot load the CUDA driver "
                              "/nonexistent/libcuda.so.1: ",
                              0),
            0u)
      << s.message();
}

TEST(Driver, LauncherWithoutADriverFailsCleanly) {
  const cuda::DriverApi *api = nullptr;
  if (cuda::getDriver(api).ok())
    GTEST_SKIP() << "a CUDA driver and device are present";
  Bundle b = loadTestBundle();
  std::unique_ptr<Launcher> launcher;
  Status s = Launcher::create(b, 0, launcher);
  EXPECT_EQ(s.code(), ErrorCode::DriverUnavailable);
  EXPECT_NE(s.message().find("libcuda.so.1"), std::string::npos) << s.message();
  EXPECT_EQ(launcher, nullptr);
  EXPECT_EQ(cascade_driver_init(), CASCADE_ERROR_DRIVER_UNAVAILABLE);
}
