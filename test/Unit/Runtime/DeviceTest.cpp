//===- DeviceTest.cpp - Plans without a device; Devices on a stand-in -----===//
//
// A cascade planned from PlanTargets alone (no driver, no Launcher) equals
// the plan a Program makes on a device. The Device's driver helpers, the
// Launcher's cascade steps and a Program's upload, launches and graph
// replays run against the stand-in CUDA driver of the Python tests
// (python_bindings/tests/fake_cuda/fake_cuda.c: one device, 132 SMs, sm_90,
// occupancy 2, device memory is host memory, launches are recorded).
//
//===----------------------------------------------------------------------===//

#include "FakeCuda.h"
#include "TestUtil.h"

#include "cascade/Runtime/Device.h"
#include "cascade/Runtime/Launcher.h"
#include "cascade/Runtime/PlanJson.h"
#include "cascade/Runtime/Program.h"

#include <gtest/gtest.h>

#include <array>
#include <cstring>
#include <string>
#include <vector>

using namespace cascade::runtime;
using namespace cascade::runtime::test;

namespace {

//===----------------------------------------------------------------------===//
// The stand-in driver
//===----------------------------------------------------------------------===//

/// The test bundle: attention kernels of both modes (the prefill one with a
/// query tile of 64), the merge of KV splits and the merge of a level. The
/// `_p16` / `_h8` kernels carry the statics of TwoLevels' plans (page size
/// 16, 8 / 2 heads, f16), which the runtime checks.
const char *const kManifest = R"({
  "format": "cascade-kernel-bundle", "version": 1,
  "target": {"chip": "sm_90", "features": "+ptx80"},
  "kernels": [
    {"name": "t_decode_split", "ptx": "t.ptx", "op": "decode_split",
     "block": [128, 1, 1],
     "grid": [{"param": "padded_batch_size"}, {"param": "num_kv_heads"}, 1],
     "dynamic_shared_bytes": 65536, "static": {"head_dim": 64},
     "params": [{"name": "q", "kind": "memref", "dtype": "f16"},
                {"name": "o", "kind": "memref", "dtype": "f16"},
                {"name": "request_indices", "kind": "memref", "dtype": "i32"},
                {"name": "tmp_v", "kind": "memref", "dtype": "f32"}],
     "plan_arrays": ["request_indices", "tmp_v"]},
    {"name": "t_decode_split_fp8", "ptx": "t.ptx", "op": "decode_split",
     "block": [128, 1, 1],
     "grid": [{"param": "padded_batch_size"}, {"param": "num_kv_heads"}, 1],
     "dynamic_shared_bytes": 0, "static": {"head_dim": 64},
     "params": [{"name": "q", "kind": "memref", "dtype": "f16"},
                {"name": "o", "kind": "memref", "dtype": "f16"},
                {"name": "request_indices", "kind": "memref", "dtype": "i32"},
                {"name": "tmp_v", "kind": "memref", "dtype": "f32"},
                {"name": "k_scale", "kind": "f32"},
                {"name": "v_scale", "kind": "f32"}],
     "plan_arrays": ["request_indices", "tmp_v"]},
    {"name": "t_decode_split_p16", "ptx": "t.ptx", "op": "decode_split",
     "block": [128, 1, 1],
     "grid": [{"param": "padded_batch_size"}, {"param": "num_kv_heads"}, 1],
     "dynamic_shared_bytes": 0,
     "static": {"head_dim": 64, "num_qo_heads": 8, "num_kv_heads": 2,
                "page_size": 16, "q_dtype": "f16", "kv_dtype": "f16",
                "o_dtype": "f16"},
     "params": [{"name": "q", "kind": "memref", "dtype": "f16"},
                {"name": "o", "kind": "memref", "dtype": "f16"},
                {"name": "request_indices", "kind": "memref", "dtype": "i32"},
                {"name": "tmp_v", "kind": "memref", "dtype": "f32"}],
     "plan_arrays": ["request_indices", "tmp_v"]},
    {"name": "t_prefill_split", "ptx": "t.ptx", "op": "prefill_split",
     "block": [128, 1, 1],
     "grid": [{"param": "padded_batch_size"}, {"param": "num_kv_heads"}, 1],
     "dynamic_shared_bytes": 0, "static": {"head_dim": 64, "qo_tile_size": 64},
     "params": [{"name": "q", "kind": "memref", "dtype": "f16"},
                {"name": "o", "kind": "memref", "dtype": "f16"},
                {"name": "request_indices", "kind": "memref", "dtype": "i32"},
                {"name": "tmp_v", "kind": "memref", "dtype": "f32"}],
     "plan_arrays": ["request_indices", "tmp_v"]},
    {"name": "t_merge_splits", "ptx": "t.ptx", "op": "merge_states_indptr",
     "block": [64, 1, 1],
     "grid": [{"param": "num_rows"}, {"param": "num_qo_heads"}, 1],
     "dynamic_shared_bytes": 0, "static": {"head_dim": 64},
     "params": [{"name": "tmp_v", "kind": "memref", "dtype": "f32"},
                {"name": "merge_indptr", "kind": "memref", "dtype": "i32"},
                {"name": "o", "kind": "memref", "dtype": "f16"}],
     "plan_arrays": ["tmp_v", "merge_indptr"]},
    {"name": "t_merge_splits_h8", "ptx": "t.ptx",
     "op": "merge_states_indptr", "block": [64, 1, 1],
     "grid": [{"param": "num_rows"}, {"param": "num_qo_heads"}, 1],
     "dynamic_shared_bytes": 0,
     "static": {"head_dim": 64, "num_qo_heads": 8, "v_dtype": "f16"},
     "params": [{"name": "tmp_v", "kind": "memref", "dtype": "f32"},
                {"name": "merge_indptr", "kind": "memref", "dtype": "i32"},
                {"name": "o", "kind": "memref", "dtype": "f16"}],
     "plan_arrays": ["tmp_v", "merge_indptr"]},
    {"name": "t_merge_level", "ptx": "t.ptx", "op": "merge_state_in_place",
     "block": [128, 1, 1], "grid": [{"param": "num_tasks", "div": 4}, 1, 1],
     "dynamic_shared_bytes": 0, "static": {"head_dim": 64},
     "params": [{"name": "v", "kind": "memref", "dtype": "f16"},
                {"name": "s", "kind": "memref", "dtype": "f32"},
                {"name": "v_other", "kind": "memref", "dtype": "f16"},
                {"name": "s_other", "kind": "memref", "dtype": "f32"},
                {"name": "num_tasks", "kind": "i64"}],
     "plan_arrays": []}
  ]
})";

/// PTX-like text with an `.entry` per kernel and one `.param` per PTX
/// parameter: what the stand-in reads to count a kernel's parameters.
std::string ptxOf(const Bundle &b) {
  std::string text;
  for (const KernelSpec &k : b.kernels) {
    text += ".entry " + k.name + "(";
    for (int64_t i = 0; i < k.numPtxParams(); ++i)
      text +=
          (i ? ", " : "") + std::string(".param .u64 p") + std::to_string(i);
    text += ")\n{\n}\n";
  }
  return text;
}

/// The stand-in driver, its recording hooks, one Device and one Launcher of
/// the test bundle: per process and never destroyed, like a driver (the
/// stand-in's function handles stay reachable for the leak checker).
struct Fake : test::FakeCudaLibrary {
  int (*numLaunches)() = nullptr;
  void (*reset)() = nullptr;
  int (*numGraphLaunches)() = nullptr;
  int (*graphDep)(int, int) = nullptr;
  int (*graphDepProgrammatic)(int, int) = nullptr;
  int (*launchProgrammatic)(int) = nullptr;
  int (*graphPriority)(int) = nullptr;
  unsigned long long (*graphFlags)() = nullptr;
  const char *(*launchName)(int) = nullptr;
  unsigned (*launchGrid)(int, int) = nullptr;
  uint64_t (*launchParam)(int, int) = nullptr;
  std::shared_ptr<Device> device;
  std::unique_ptr<Launcher> launcher;
};

Fake &fake() {
  static Fake *f = [] {
    auto *f = new Fake();
    f->open();
    if (!f->status.ok())
      return f;
    f->hook(f->numLaunches, "fake_cuda_num_launches");
    f->hook(f->reset, "fake_cuda_reset");
    f->hook(f->numGraphLaunches, "fake_cuda_num_graph_launches");
    f->hook(f->graphDep, "fake_cuda_graph_dep");
    f->hook(f->graphDepProgrammatic, "fake_cuda_graph_dep_programmatic");
    f->hook(f->launchProgrammatic, "fake_cuda_launch_programmatic");
    f->hook(f->graphPriority, "fake_cuda_graph_priority");
    f->hook(f->graphFlags, "fake_cuda_graph_flags");
    f->hook(f->launchName, "fake_cuda_launch_name");
    f->hook(f->launchGrid, "fake_cuda_launch_grid");
    f->hook(f->launchParam, "fake_cuda_launch_param");
    if (f->status.ok())
      f->status = Device::open(f->api, 0, f->device);
    Bundle b;
    if (f->status.ok())
      f->status = parseManifest(kManifest, b);
    b.ptx["t.ptx"] = ptxOf(b);
    if (f->status.ok())
      f->status = Launcher::create(f->device, b, f->launcher);
    return f;
  }();
  return *f;
}

/// A two-level cascade: a prefill level over a shared prefix (one request
/// of 6 queries) and a decode level of 6 requests of different lengths.
struct TwoLevels {
  Batch shared, unique;
  ProgramSpec spec;

  explicit TwoLevels(bool graph, int32_t longest = 40, int32_t prefixPages = 8,
                     int64_t pageSize = 16) {
    shared = makeBatch(PlanMode::Prefill, {prefixPages}, {6}, pageSize, 8, 2,
                       64, 0, 1, false);
    unique = makeBatch(PlanMode::Decode, {1, 3, longest, 2, 9, 5},
                       {1, 1, 1, 1, 1, 1}, pageSize, 8, 2, 64, 0, 1, false);
    for (Batch *b : {&shared, &unique}) {
      b->in.num_pages = 1024 + prefixPages; // any id the batches use
      b->in.num_sms = 0; // the device facts come from the targets
    }
    spec.levels = {shared.inputs(), unique.inputs(/*withQo=*/false)};
    spec.planKernels = {"t_prefill_split", "t_decode_split"};
    spec.cudaGraph = graph;
  }

  /// Each level's arguments: q, o and lse of the 6 query rows, 8 heads of 64.
  std::vector<ArgumentTable> argumentTables() const {
    std::vector<ArgumentTable> args(2);
    for (ArgumentTable &a : args) {
      a.setBuffer("q", 0x1000, 6 * 8 * 64, "f16");
      a.setBuffer("o", 0x2000, 6 * 8 * 64, "f16");
      a.setBuffer("lse", 0x3000, 6 * 8, "f32");
    }
    return args;
  }
};

/// What the stand-in device measures for the test kernels.
const std::vector<PlanTarget> kFakeTargets = {{132, 2, 64}, {132, 2, 0}};

} // namespace

//===----------------------------------------------------------------------===//
// Plans without a device
//===----------------------------------------------------------------------===//

TEST(PlanTarget, IsTheDeviceFactsOfPlanInputs) {
  PlanInputs in;
  in.setTarget({132, 3, 64});
  EXPECT_EQ(in.num_sms, 132);
  EXPECT_EQ(in.occupancy, 3);
  EXPECT_EQ(in.qo_tile_size, 64);
  EXPECT_EQ(in.target(), (PlanTarget{132, 3, 64}));
  EXPECT_NE(in.target(), (PlanTarget{132, 3, 0}));
}

TEST(PlanTarget, CascadeFromTargetsIsTheCascadeOfTheirInputs) {
  // No driver is loaded or needed: the targets are plain values.
  for (bool graph : {false, true}) {
    TwoLevels t(graph);
    CascadePlan got;
    ASSERT_TRUE(
        makeCascadePlan(t.spec.levels, kFakeTargets, graph, 0, got).ok());
    std::vector<PlanInputs> inputs = t.spec.levels;
    for (size_t l = 0; l < inputs.size(); ++l) {
      inputs[l].setTarget(kFakeTargets[l]);
      inputs[l].cuda_graph = graph;
      inputs[l].max_num_rows =
          graph && inputs[l].mode == PlanMode::Prefill ? 6 : -1;
    }
    CascadePlan want;
    ASSERT_TRUE(makeCascadePlan(inputs, want).ok());
    expectSameCascade(got, want);
    EXPECT_EQ(got.levels[0].qo_tile_size, 64);
    EXPECT_EQ(got.levels[0].grid_limit, 264);
  }
}

TEST(PlanTarget, MinRowCapacityKeepsAGraphPlansRows) {
  TwoLevels t(/*graph=*/true);
  CascadePlan p;
  ASSERT_TRUE(makeCascadePlan(t.spec.levels, kFakeTargets, true, 48, p).ok());
  EXPECT_EQ(p.levels[0].row_capacity, 48);
  EXPECT_EQ(p.levels[0].num_rows, 6);
  // Outside graph mode the capacity is the rows of the call.
  ASSERT_TRUE(makeCascadePlan(t.spec.levels, kFakeTargets, false, 48, p).ok());
  EXPECT_EQ(p.levels[0].row_capacity, 6);
}

TEST(PlanTarget, OneTargetPerLevel) {
  TwoLevels t(false);
  CascadePlan p;
  Status s = makeCascadePlan(t.spec.levels, {kFakeTargets[0]}, false, 0, p);
  EXPECT_EQ(s.code(), ErrorCode::InvalidArgument);
  EXPECT_EQ(s.message(), "a cascade of 2 levels needs one plan target per "
                         "level, got 1");
  // A bad target is a bad plan input, with the level named.
  s = makeCascadePlan(t.spec.levels, {kFakeTargets[0], {0, 2, 0}}, false, 0, p);
  EXPECT_EQ(s.code(), ErrorCode::InvalidArgument);
  EXPECT_EQ(s.message(), "level 1: num_sms must be positive, got 0");
}

TEST(PlanSteps, WorkKindsAndLaunchOrder) {
  TwoLevels t(false);
  CascadePlan p;
  ASSERT_TRUE(makeCascadePlan(t.spec.levels, kFakeTargets, false, 0, p).ok());
  // 264 blocks over 2 KV heads: the prefill level (8 pages, tiles of 64
  // packed rows) runs whole; the decode level splits its longest request.
  ASSERT_FALSE(p.levels[0].split_kv);
  ASSERT_TRUE(p.levels[1].split_kv);
  EXPECT_EQ(p.levels[0].work_kind, WorkKind::Prefill);
  EXPECT_EQ(p.levels[1].work_kind, WorkKind::DecodeSplit);
  ASSERT_EQ(p.steps.size(), 4u);
  const WorkKind kinds[] = {WorkKind::Prefill, WorkKind::DecodeSplit,
                            WorkKind::MergeSplits, WorkKind::MergeLevel};
  const int32_t levels[] = {0, 1, 1, 1};
  const int64_t blocks[] = {p.levels[0].padded_batch_size,
                            p.levels[1].padded_batch_size, 6, 6};
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(p.steps[i].kind, kinds[i]) << workKindName(p.steps[i].kind);
    EXPECT_EQ(p.steps[i].level, levels[i]);
    EXPECT_EQ(p.steps[i].blocks, blocks[i]);
  }
  WorkKind k = WorkKind::MergeLevel;
  EXPECT_TRUE(workItemKind(p.levels[1], 0, k));
  EXPECT_EQ(k, WorkKind::DecodeSplit);
  EXPECT_FALSE(workItemKind(p.levels[1], p.levels[1].num_work_items, k));
  EXPECT_STREQ(workKindName(WorkKind::PrefillSplit), "prefill_split");
  EXPECT_STREQ(workKindName(WorkKind::MergeSplits), "merge_splits");
}

TEST(PlanSteps, TheLastLevelAsTheBase) {
  // A long prefix: level 0 splits KV, and the last level becomes the base.
  TwoLevels t(false, 40, /*prefixPages=*/4000);
  CascadePlan p;
  ASSERT_TRUE(makeCascadePlan(t.spec.levels, kFakeTargets, false, 0, p).ok());
  ASSERT_TRUE(p.levels[0].split_kv);
  ASSERT_TRUE(p.levels[1].split_kv);
  EXPECT_EQ(p.base_level, 0);
  EXPECT_EQ(p.level_v_offset[0], -1);
  EXPECT_GE(p.level_v_offset[1], 0);
  EXPECT_EQ(preferredCascadeBaseLevel(p), 1);
  const int64_t floatBytes = p.float_bytes;

  ASSERT_TRUE(setCascadeBaseLevel(p, 1).ok());
  EXPECT_EQ(p.base_level, 1);
  const WorkKind kinds[] = {WorkKind::DecodeSplit, WorkKind::MergeSplits,
                            WorkKind::PrefillSplit, WorkKind::MergeSplits,
                            WorkKind::MergeLevel};
  const int32_t levels[] = {1, 1, 0, 0, 0};
  ASSERT_EQ(p.steps.size(), 5u);
  for (size_t i = 0; i < 5; ++i) {
    EXPECT_EQ(p.steps[i].kind, kinds[i]) << workKindName(p.steps[i].kind);
    EXPECT_EQ(p.steps[i].level, levels[i]);
  }
  // Level 0's state takes the place of level 1's.
  EXPECT_EQ(p.level_v_offset[1], -1);
  EXPECT_EQ(p.level_s_offset[1], -1);
  EXPECT_GE(p.level_v_offset[0], 0);
  EXPECT_GE(p.level_s_offset[0], p.level_v_offset[0] + p.level_v_bytes);
  EXPECT_EQ(p.float_bytes, floatBytes);
  const std::string json = cascadePlanToJson(p, false);
  EXPECT_NE(json.find("\"output_level\": 1"), std::string::npos) << json;
  EXPECT_NE(json.find("\"order\": [0]"), std::string::npos);

  // Back to level 0, and bad levels.
  ASSERT_TRUE(setCascadeBaseLevel(p, 0).ok());
  EXPECT_EQ(p.steps[0].kind, WorkKind::PrefillSplit);
  EXPECT_EQ(p.level_v_offset[0], -1);
  for (int32_t bad : {-1, 2}) {
    Status s = setCascadeBaseLevel(p, bad);
    EXPECT_EQ(s.code(), ErrorCode::InvalidArgument);
    EXPECT_EQ(s.message(), "base level " + std::to_string(bad) +
                               " of a cascade of 2 levels");
  }
  EXPECT_EQ(p.base_level, 0);

  // A short prefix is not split: no level runs beside the base.
  TwoLevels shortPrefix(false);
  CascadePlan q;
  ASSERT_TRUE(
      makeCascadePlan(shortPrefix.spec.levels, kFakeTargets, false, 0, q).ok());
  ASSERT_FALSE(q.levels[0].split_kv);
  EXPECT_EQ(preferredCascadeBaseLevel(q), 0);
}

//===----------------------------------------------------------------------===//
// Device helpers on the stand-in driver
//===----------------------------------------------------------------------===//

TEST(KernelChip, Sm90aOnComputeCapability90Only) {
  EXPECT_EQ(kernelChipFor(9, 0), "sm_90a");
  EXPECT_EQ(kernelChipFor(8, 9), "sm_89");
  EXPECT_EQ(kernelChipFor(8, 0), "sm_80");
  EXPECT_EQ(kernelChipFor(10, 0), "sm_100");
}

TEST(DeviceOnStandIn, FactsAndModules) {
  NEED_FAKE();
  Device &d = *fake().device;
  EXPECT_EQ(d.ordinal(), 0);
  EXPECT_EQ(d.numSms(), 132);
  EXPECT_EQ(d.chip(), "sm_90");
  EXPECT_EQ(d.kernelChip(), "sm_90a"); // the stand-in is compute capability 9.0
  EXPECT_TRUE(d.canBuildGraphs());
  EXPECT_TRUE(d.makeCurrent().ok());
  EXPECT_TRUE(d.hasModule("t.ptx")); // the launcher's bundle

  Status s = d.loadModule("t.ptx", ".entry x()\n");
  EXPECT_EQ(s.code(), ErrorCode::InvalidArgument);
  EXPECT_EQ(s.message(), "module t.ptx is already loaded on this device");

  cuda::CUfunction fn = nullptr, again = nullptr;
  ASSERT_TRUE(d.function("t.ptx", "t_decode_split", 65536, fn).ok());
  ASSERT_TRUE(d.function("t.ptx", "t_decode_split", 65536, again).ok());
  EXPECT_EQ(fn, again); // looked up once
  int blocks = 0;
  ASSERT_TRUE(d.occupancy(fn, 128, 65536, blocks).ok());
  EXPECT_EQ(blocks, 2);
  EXPECT_TRUE(d.setMaxDynamicSharedBytes(fn, 100 * 1024).ok());

  s = d.function("nope.ptx", "t_decode_split", 0, fn);
  EXPECT_EQ(s.code(), ErrorCode::NotFound);
  EXPECT_EQ(s.message(), "no module nope.ptx is loaded");
  s = d.function("t.ptx", "missing", 0, fn);
  EXPECT_EQ(s.code(), ErrorCode::Driver);
  EXPECT_EQ(s.message(), "cuModuleGetFunction(&fn, module->second, "
                         "name.c_str()) failed: CUDA_ERROR_FAKE (fake "
                         "driver)");

  std::shared_ptr<Device> other;
  s = Device::open(fake().api, 1, other);
  EXPECT_EQ(s.code(), ErrorCode::Driver);
  EXPECT_EQ(s.message(), "cuDeviceGet failed: CUDA_ERROR_FAKE (fake driver)");
  EXPECT_EQ(other, nullptr);
}

TEST(DeviceOnStandIn, MemoryStreamsAndEvents) {
  NEED_FAKE();
  Device &d = *fake().device;
  cuda::CUstream stream = nullptr;
  ASSERT_TRUE(d.createStream(stream).ok());
  uint64_t buf = 0;
  ASSERT_TRUE(d.alloc(64, buf).ok());
  const uint32_t in[4] = {1, 2, 3, 4};
  ASSERT_TRUE(d.copyToDevice(buf, in, sizeof(in), stream).ok());
  ASSERT_TRUE(d.memsetD32(buf + 8, 7, 1, stream).ok());
  uint32_t out[4] = {};
  ASSERT_TRUE(d.copyToHost(out, buf, sizeof(out), stream).ok());
  ASSERT_TRUE(d.synchronize(stream).ok());
  EXPECT_EQ(out[0], 1u);
  EXPECT_EQ(out[2], 7u);
  EXPECT_EQ(out[3], 4u);
  void *host = nullptr;
  ASSERT_TRUE(d.allocHost(16, host).ok());
  EXPECT_NE(host, nullptr);
  d.freeHost(host);
  cuda::CUevent event = nullptr;
  ASSERT_TRUE(d.createEvent(event, cuda::CU_EVENT_DISABLE_TIMING).ok());
  EXPECT_TRUE(d.recordEvent(event, stream).ok());
  EXPECT_TRUE(d.synchronizeEvent(event).ok());
  d.destroyEvent(event);
  EXPECT_TRUE(d.free(buf).ok());
  EXPECT_TRUE(d.destroyStream(stream).ok());
}

/// The test bundle's two merge kernels as prepared launches (grids 3 and 4,
/// first slots 100 and 101), finalized in place.
static void prepareTwoLaunches(Device &d,
                               std::vector<PreparedLaunch> &launches) {
  for (size_t i = 0; i < 2; ++i) {
    PreparedLaunch &pl = launches[i];
    pl.kernel = i ? "t_merge_splits" : "t_merge_level";
    ASSERT_TRUE(d.function("t.ptx", pl.kernel, 0, pl.function).ok());
    pl.launch.grid = {static_cast<uint32_t>(3 + i), 2, 1};
    pl.launch.slots.assign(i ? 15 : 21, 0);
    pl.launch.slots[0] = 100 + i;
    pl.finalize();
  }
}

TEST(DeviceOnStandIn, LaunchCaptureAndKernelGraph) {
  NEED_FAKE();
  Device &d = *fake().device;
  cuda::CUstream stream = nullptr;
  ASSERT_TRUE(d.createStream(stream).ok());
  std::vector<PreparedLaunch> launches(2);
  ASSERT_NO_FATAL_FAILURE(prepareTwoLaunches(d, launches));
  ASSERT_TRUE(d.launch(launches[0], stream).ok());
  ASSERT_EQ(fake().numLaunches(), 1);
  EXPECT_STREQ(fake().launchName(0), "t_merge_level");
  EXPECT_EQ(fake().launchGrid(0, 0), 3u);
  EXPECT_EQ(fake().launchParam(0, 0), 100u);

  // A captured stream: graph helpers, and isCapturing sees it.
  EXPECT_FALSE(d.isCapturing(stream));
  ASSERT_TRUE(d.beginCapture(stream).ok());
  EXPECT_TRUE(d.isCapturing(stream));
  CapturedGraph captured;
  ASSERT_TRUE(d.endCapture(stream, captured).ok());
  EXPECT_FALSE(d.isCapturing(stream));
  EXPECT_TRUE(d.replay(captured, stream).ok());
  d.destroyGraph(captured);
  EXPECT_EQ(captured.exec, nullptr);

  // A graph built node by node: one graph launch runs both kernels; a
  // rewritten slot reaches its node only when marked dirty.
  fake().reset();
  KernelGraph graph(d);
  std::vector<uint8_t> dirty(2, 1);
  ASSERT_TRUE(graph.launch(launches, dirty, stream));
  EXPECT_TRUE(graph.built());
  EXPECT_EQ(dirty, std::vector<uint8_t>(2, 0));
  launches[1].launch.slots[0] = 777;
  ASSERT_TRUE(graph.launch(launches, dirty, stream));
  dirty[1] = 1;
  ASSERT_TRUE(graph.launch(launches, dirty, stream));
  EXPECT_EQ(fake().numGraphLaunches(), 3);
  ASSERT_EQ(fake().numLaunches(), 6);
  EXPECT_STREQ(fake().launchName(1), "t_merge_splits");
  EXPECT_EQ(fake().launchParam(3, 0), 101u); // not dirty: the old value
  EXPECT_EQ(fake().launchParam(5, 0), 777u);
  EXPECT_FALSE(graph.failed());
  EXPECT_TRUE(d.destroyStream(stream).ok());
}

TEST(DeviceOnStandIn, ProgrammaticDependentLaunch) {
  NEED_FAKE();
  Device &d = *fake().device;
  // On by default on sm_90 where the driver has the entry points.
  ASSERT_TRUE(d.programmaticLaunch());
  cuda::CUstream stream = nullptr;
  ASSERT_TRUE(d.createStream(stream).ok());
  std::vector<PreparedLaunch> launches(2);
  ASSERT_NO_FATAL_FAILURE(prepareTwoLaunches(d, launches));
  launches[1].pdl = true;
  // On a stream, only a kernel that waits for its predecessors itself and
  // follows another kernel of the run starts as a programmatic dependent.
  ASSERT_TRUE(d.launch(launches[0], stream).ok());
  ASSERT_TRUE(d.launch(launches[1], stream, /*dependent=*/true).ok());
  ASSERT_TRUE(d.launch(launches[1], stream, /*dependent=*/false).ok());
  launches[1].pdl = false;
  ASSERT_TRUE(d.launch(launches[1], stream, /*dependent=*/true).ok());
  launches[1].pdl = true;
  d.setProgrammaticLaunch(false);
  ASSERT_TRUE(d.launch(launches[1], stream, /*dependent=*/true).ok());
  ASSERT_EQ(fake().numLaunches(), 5);
  const int expected[] = {0, 1, 0, 0, 0};
  for (int i = 0; i < 5; ++i)
    EXPECT_EQ(fake().launchProgrammatic(i), expected[i]) << "launch " << i;
  EXPECT_EQ(fake().launchGrid(1, 0), 4u);
  EXPECT_EQ(fake().launchParam(1, 0), 101u);

  // In a graph built node by node, the edge into such a kernel is
  // programmatic; with the option off it is a plain one.
  for (bool on : {true, false}) {
    d.setProgrammaticLaunch(on);
    fake().reset();
    KernelGraph graph(d);
    std::vector<uint8_t> dirty(2, 1);
    ASSERT_TRUE(graph.launch(launches, dirty, stream));
    EXPECT_EQ(fake().graphDep(0, -1), 0);
    ASSERT_EQ(fake().graphDep(1, -1), 1);
    EXPECT_EQ(fake().graphDep(1, 0), 0);
    EXPECT_EQ(fake().graphDepProgrammatic(1, 0), on ? 1 : 0);
    EXPECT_EQ(fake().numLaunches(), 2);
  }
  d.setProgrammaticLaunch(true);

  // $CASCADE_PDL=0 turns it off for the devices opened after.
  ASSERT_EQ(setenv("CASCADE_PDL", "0", 1), 0);
  std::shared_ptr<Device> off;
  Status s = Device::open(fake().api, 0, off);
  unsetenv("CASCADE_PDL");
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_FALSE(off->programmaticLaunch());
  EXPECT_TRUE(d.destroyStream(stream).ok());
}

//===----------------------------------------------------------------------===//
// Launcher and Program on the stand-in driver
//===----------------------------------------------------------------------===//

TEST(LauncherOnStandIn, PlanTargetsAreTheDevicesFacts) {
  NEED_FAKE();
  Launcher &l = *fake().launcher;
  PlanTarget t;
  ASSERT_TRUE(l.planTarget("t_prefill_split", t).ok());
  EXPECT_EQ(t, kFakeTargets[0]);
  ASSERT_TRUE(l.planTarget("t_decode_split", t).ok());
  EXPECT_EQ(t, kFakeTargets[1]);
  Status s = l.planTarget("nope", t);
  EXPECT_EQ(s.code(), ErrorCode::NotFound);
  EXPECT_EQ(s.message(), "kernel nope is not loaded");
}

TEST(LauncherOnStandIn, CascadeLaunchesFollowThePlansSteps) {
  NEED_FAKE();
  Launcher &l = *fake().launcher;
  TwoLevels t(false);
  CascadePlan p;
  ASSERT_TRUE(makeCascadePlan(t.spec.levels, kFakeTargets, false, 0, p).ok());
  std::vector<ArgumentTable> args = t.argumentTables();
  const std::vector<LevelKernels> kernels = {
      {"t_prefill_split", "t_merge_splits"},
      {"t_decode_split", "t_merge_splits"}};
  ASSERT_TRUE(
      l.runCascade(p, 0x10000, 0x20000, kernels, args, "t_merge_level", nullptr)
          .ok());
  const char *names[] = {"t_prefill_split", "t_decode_split", "t_merge_splits",
                         "t_merge_level"};
  ASSERT_EQ(fake().numLaunches(), 4);
  for (int i = 0; i < 4; ++i)
    EXPECT_STREQ(fake().launchName(i), names[i]) << "launch " << i;
  EXPECT_EQ(fake().launchGrid(1, 0),
            static_cast<unsigned>(p.levels[1].padded_batch_size));
  EXPECT_EQ(fake().launchGrid(2, 0), 6u);  // query rows
  EXPECT_EQ(fake().launchGrid(3, 0), 12u); // 6 rows x 8 heads / 4

  // Without the merge kernel a level that does not accumulate fails after
  // its own launches.
  fake().reset();
  Status s = l.runCascade(p, 0x10000, 0x20000, kernels, args, "", nullptr);
  EXPECT_EQ(s.code(), ErrorCode::InvalidArgument);
  EXPECT_EQ(s.message(),
            "level 1 does not accumulate and no merge kernel was given");
}

TEST(LauncherOnStandIn, KernelStaticsMustMatchThePlan) {
  NEED_FAKE();
  Launcher &l = *fake().launcher;
  TwoLevels t(false);
  CascadePlan p;
  ASSERT_TRUE(makeCascadePlan(t.spec.levels, kFakeTargets, false, 0, p).ok());
  ASSERT_TRUE(p.levels[1].split_kv);
  std::vector<ArgumentTable> args = t.argumentTables();
  const std::vector<LevelKernels> kernels = {
      {"t_prefill_split", "t_merge_splits"},
      {"t_decode_split_p16", "t_merge_splits_h8"}};
  // The plan the kernels were built for runs as before.
  ASSERT_TRUE(
      l.runCascade(p, 0x10000, 0x20000, kernels, args, "t_merge_level", nullptr)
          .ok());
  ASSERT_EQ(fake().numLaunches(), 4);
  EXPECT_STREQ(fake().launchName(1), "t_decode_split_p16");
  EXPECT_STREQ(fake().launchName(2), "t_merge_splits_h8");
  fake().reset();
  ASSERT_TRUE(
      l.runLevel(p.levels[1], 0x10000, 0x20000, kernels[1], args[1], nullptr)
          .ok());
  EXPECT_EQ(fake().numLaunches(), 2);

  // A plan of another page size, head_dim or head count: a clear error
  // before anything is launched.
  const struct {
    int64_t Plan::*field;
    int64_t value;
    const char *message;
  } cases[] = {
      {&Plan::page_size, 8,
       "kernel t_decode_split_p16 was built for page_size 16, the plan has 8"},
      {&Plan::head_dim, 128,
       "kernel t_decode_split_p16 was built for head_dim 64, the plan has "
       "128"},
      {&Plan::num_qo_heads, 16,
       "kernel t_decode_split_p16 was built for num_qo_heads 8, the plan has "
       "16"},
      {&Plan::num_kv_heads, 4,
       "kernel t_decode_split_p16 was built for num_kv_heads 2, the plan has "
       "4"}};
  for (const auto &c : cases) {
    SCOPED_TRACE(c.message);
    CascadePlan bad = p;
    bad.levels[1].*c.field = c.value;
    fake().reset();
    Status s = l.runCascade(bad, 0x10000, 0x20000, kernels, args,
                            "t_merge_level", nullptr);
    EXPECT_EQ(s.code(), ErrorCode::SizeMismatch);
    EXPECT_EQ(s.message(), std::string("level 1: ") + c.message);
    s = l.runLevel(bad.levels[1], 0x10000, 0x20000, kernels[1], args[1],
                   nullptr);
    EXPECT_EQ(s.code(), ErrorCode::SizeMismatch);
    EXPECT_EQ(s.message(), c.message);
    EXPECT_EQ(fake().numLaunches(), 0);
  }

  // A merge kernel is checked on what it carries (head_dim, num_qo_heads),
  // and only where the plan launches it.
  CascadePlan heads = p;
  heads.levels[1].num_qo_heads = 16;
  const std::vector<LevelKernels> plainAttention = {
      {"t_prefill_split", "t_merge_splits"},
      {"t_decode_split", "t_merge_splits_h8"}};
  fake().reset();
  Status s = l.runCascade(heads, 0x10000, 0x20000, plainAttention, args,
                          "t_merge_level", nullptr);
  EXPECT_EQ(s.code(), ErrorCode::SizeMismatch);
  EXPECT_EQ(s.message(), "level 1: kernel t_merge_splits_h8 was built for "
                         "num_qo_heads 8, the plan has 16");
  EXPECT_EQ(fake().numLaunches(), 0);
  heads.levels[1].split_kv = false;
  EXPECT_TRUE(l.runLevel(heads.levels[1], 0x10000, 0x20000, plainAttention[1],
                         args[1], nullptr)
                  .ok());
}

TEST(ProgramOnStandIn, PlanIsTheDeviceFreePlan) {
  NEED_FAKE();
  for (bool graph : {false, true}) {
    SCOPED_TRACE(graph ? "CUDA graph" : "plain");
    Program program(*fake().launcher);
    TwoLevels t(graph);
    ASSERT_TRUE(program.plan(t.spec).ok());
    std::vector<PlanTarget> targets;
    ASSERT_TRUE(program.planTargets(t.spec, targets).ok());
    EXPECT_EQ(targets.size(), 2u);
    EXPECT_EQ(targets[0], kFakeTargets[0]);
    EXPECT_EQ(targets[1], kFakeTargets[1]);
    // The same plan made with no device at all.
    CascadePlan deviceFree;
    ASSERT_TRUE(
        makeCascadePlan(t.spec.levels, kFakeTargets, graph, 0, deviceFree)
            .ok());
    expectSameCascade(program.cascadePlan(), deviceFree);

    // Bound instead of planned: the same program state.
    Program bound(*fake().launcher);
    ASSERT_TRUE(bound.bind(t.spec, deviceFree).ok());
    expectSameCascade(bound.cascadePlan(), program.cascadePlan());
    EXPECT_EQ(bound.intBytesNeeded(), program.intBytesNeeded());
    EXPECT_EQ(bound.floatBytesNeeded(), program.floatBytesNeeded());
  }
}

TEST(ProgramOnStandIn, BindRejectsAPlanOfOtherInputs) {
  NEED_FAKE();
  Program program(*fake().launcher);
  TwoLevels t(false), other(false);
  // The same rows in two requests of the shared level.
  other.shared =
      makeBatch(PlanMode::Prefill, {4, 4}, {3, 3}, 16, 8, 2, 64, 0, 1, false);
  other.spec.levels[0] = other.shared.inputs();
  CascadePlan p;
  ASSERT_TRUE(
      makeCascadePlan(other.spec.levels, kFakeTargets, false, 0, p).ok());
  Status s = program.bind(t.spec, p);
  EXPECT_EQ(s.code(), ErrorCode::InvalidArgument);
  EXPECT_EQ(s.message(), "level 0 of the plan was not made from the "
                         "program's inputs (batch size or CUDA-graph mode "
                         "differ)");
  s = program.plan(t.spec, {kFakeTargets[0]});
  EXPECT_EQ(s.code(), ErrorCode::InvalidArgument);
  EXPECT_EQ(s.message(), "a program needs one plan target (and at most one "
                         "set of index buffers) per level; got 2 levels, 1 "
                         "targets");
}

/// Workspaces on the stand-in device for a planned program, aligned as the
/// runtime asks (16 / 256 bytes), and the plan uploaded into them.
struct StandInWorkspaces {
  uint64_t intWs = 0, floatWs = 0, intAt = 0, floatAt = 0;
};
static void allocAndUpload(Device &d, Program &program, StandInWorkspaces &w) {
  ASSERT_TRUE(d.alloc(program.intBytesNeeded() + 16, w.intWs).ok());
  ASSERT_TRUE(d.alloc(program.floatBytesNeeded() + 256, w.floatWs).ok());
  w.intAt = (w.intWs + 15) / 16 * 16;
  w.floatAt = (w.floatWs + 255) / 256 * 256;
  ASSERT_TRUE(program
                  .upload(w.intAt, program.intBytesNeeded(), w.floatAt,
                          program.floatBytesNeeded(), nullptr)
                  .ok());
}

TEST(ProgramOnStandIn, CustomMasksGoToTheIntWorkspace) {
  NEED_FAKE();
  Device &d = *fake().device;
  TwoLevels t(false);
  Program plain(*fake().launcher), masked(*fake().launcher);
  ASSERT_TRUE(plain.plan(t.spec).ok());
  // The prefill level's mask: 100 words (400 bytes) and its [B+1] offsets.
  std::vector<int32_t> words(100), indptr = {0, 397};
  for (size_t i = 0; i < words.size(); ++i)
    words[i] = static_cast<int32_t>(0x5a000000u | i);
  t.spec.masks = {{ArrayView<int32_t>(words), ArrayView<int32_t>(indptr)},
                  CustomMaskArrays()};
  ASSERT_TRUE(masked.plan(t.spec).ok());
  // Both arrays in the fixed part, 16-byte aligned: 16 + 400 bytes more.
  EXPECT_EQ(masked.intBytesNeeded(), plain.intBytesNeeded() + 16 + 400);
  StandInWorkspaces ws;
  ASSERT_NO_FATAL_FAILURE(allocAndUpload(d, masked, ws));
  const auto *img = reinterpret_cast<const uint8_t *>(ws.intAt);
  int64_t found = -1;
  for (int64_t at = 0; at + 400 <= masked.intBytesNeeded(); at += 16)
    if (std::memcmp(img + at, words.data(), 400) == 0)
      found = at;
  EXPECT_GE(found, 16) << "the mask words are in the int workspace";
  EXPECT_EQ(std::memcmp(img + found - 16, indptr.data(), 8), 0)
      << "mask_indptr just before them";
  EXPECT_TRUE(d.free(ws.intWs).ok());
  EXPECT_TRUE(d.free(ws.floatWs).ok());

  // Clear errors: offsets past the mask, a decode level, CUDA graphs.
  indptr[1] = 401;
  Status s = masked.plan(t.spec);
  EXPECT_EQ(s.code(), ErrorCode::SizeMismatch);
  EXPECT_EQ(s.message(), "level 0: mask_indptr ends at byte 401, past the "
                         "400 bytes of the mask");
  indptr[1] = 397;
  t.spec.masks = {CustomMaskArrays(),
                  {ArrayView<int32_t>(words), ArrayView<int32_t>(indptr)}};
  s = masked.plan(t.spec);
  EXPECT_EQ(s.code(), ErrorCode::InvalidArgument);
  EXPECT_EQ(s.message(), "level 1: a custom mask needs a prefill level and "
                         "mask_indptr of batch_size + 1 entries");
  TwoLevels graph(true);
  graph.spec.masks = {{ArrayView<int32_t>(words), ArrayView<int32_t>(indptr)},
                      CustomMaskArrays()};
  Program g(*fake().launcher);
  s = g.plan(graph.spec);
  EXPECT_EQ(s.code(), ErrorCode::InvalidArgument);
  EXPECT_EQ(s.message(), "CUDA-graph mode does not take custom masks (their "
                         "size changes with every plan)");
}

TEST(ProgramOnStandIn, UploadRunAndGraphReplay) {
  NEED_FAKE();
  Device &d = *fake().device;
  Program program(*fake().launcher);
  TwoLevels t(/*graph=*/true);
  ASSERT_TRUE(program.plan(t.spec).ok());
  StandInWorkspaces ws;
  ASSERT_NO_FATAL_FAILURE(allocAndUpload(d, program, ws));
  const uint64_t intWs = ws.intWs, floatWs = ws.floatWs, intAt = ws.intAt,
                 floatAt = ws.floatAt;
  // The plan's int image is the start of the int workspace.
  const std::vector<uint8_t> &image = program.cascadePlan().int_image;
  EXPECT_EQ(std::memcmp(reinterpret_cast<const void *>(intAt), image.data(),
                        image.size()),
            0);

  std::vector<ProgramLevelKernels> levels(2);
  levels[0].split = levels[0].unsplit = {"t_prefill_split", "t_merge_splits"};
  levels[1].split = levels[1].unsplit = {"t_decode_split", "t_merge_splits"};
  ASSERT_TRUE(program.prepare(0, levels, "t_merge_level").ok());
  const int64_t n = program.numLaunches(0);
  EXPECT_EQ(n, static_cast<int64_t>(program.cascadePlan().steps.size()));

  std::array<uint64_t, kNumRoles> ptrs{};
  std::array<int64_t, kNumRoles> counts{};
  ptrs[static_cast<size_t>(Role::Q)] = 0x5000;
  ptrs[static_cast<size_t>(Role::O)] = 0x6000;
  ptrs[static_cast<size_t>(Role::KV0)] = 0x7000;
  fake().reset();
  ASSERT_TRUE(program.run(0, ptrs, counts, nullptr).ok());
  EXPECT_TRUE(program.lastRunUsedGraph());
  EXPECT_EQ(fake().numGraphLaunches(), 1);
  ASSERT_EQ(fake().numLaunches(), n);
  EXPECT_EQ(fake().launchParam(0, 0), 0x5000u); // q, allocated pointer
  EXPECT_EQ(fake().launchParam(0, 1), 0x5000u); // q, aligned pointer
  // Level 0 as the base: a chain, nothing urgent, the stream's priority.
  EXPECT_EQ(fake().graphFlags(), 0u);
  EXPECT_EQ(fake().graphPriority(0), 99);

  // Another q: the graph's nodes are rewritten in place, one graph launch.
  ptrs[static_cast<size_t>(Role::Q)] = 0x9000;
  fake().reset();
  ASSERT_TRUE(program.run(0, ptrs, counts, nullptr).ok());
  EXPECT_EQ(fake().numGraphLaunches(), 1);
  ASSERT_EQ(fake().numLaunches(), n);
  EXPECT_EQ(fake().launchParam(0, 0), 0x9000u);

  // A replan with the same sizes (graph mode) is the device-free plan for
  // the first plan's row capacity, and runs again once prepared.
  TwoLevels shorter(/*graph=*/true, /*longest=*/37);
  ASSERT_TRUE(program.plan(shorter.spec).ok());
  CascadePlan deviceFree;
  ASSERT_TRUE(makeCascadePlan(shorter.spec.levels, kFakeTargets, true,
                              program.minRowCapacity(), deviceFree)
                  .ok());
  expectSameCascade(program.cascadePlan(), deviceFree);
  ASSERT_TRUE(program
                  .upload(intAt, program.intBytesNeeded(), floatAt,
                          program.floatBytesNeeded(), nullptr)
                  .ok());
  ASSERT_TRUE(program.prepare(0, levels, "t_merge_level").ok());
  ptrs[static_cast<size_t>(Role::Q)] = 0x8000;
  fake().reset();
  ASSERT_TRUE(program.run(0, ptrs, counts, nullptr).ok());
  ASSERT_EQ(fake().numLaunches(), n);
  EXPECT_EQ(fake().launchParam(0, 0), 0x8000u);

  // Kernel by kernel when asked: the same launches.
  program.setGraphLaunch(false);
  fake().reset();
  ASSERT_TRUE(program.run(0, ptrs, counts, nullptr).ok());
  EXPECT_FALSE(program.lastRunUsedGraph());
  EXPECT_EQ(fake().numGraphLaunches(), 0);
  EXPECT_EQ(fake().numLaunches(), n);
  EXPECT_TRUE(d.free(intWs).ok());
  EXPECT_TRUE(d.free(floatWs).ok());
}

TEST(ProgramOnStandIn, LastLevelFirstRunsTheSplitPrefixBesideIt) {
  NEED_FAKE();
  Device &d = *fake().device;
  std::vector<ProgramLevelKernels> levels(2);
  levels[0].split = levels[0].unsplit = {"t_prefill_split", "t_merge_splits"};
  levels[1].split = levels[1].unsplit = {"t_decode_split", "t_merge_splits"};
  std::array<uint64_t, kNumRoles> ptrs{};
  std::array<int64_t, kNumRoles> counts{};
  ptrs[static_cast<size_t>(Role::Q)] = 0x5000;
  ptrs[static_cast<size_t>(Role::O)] = 0x6000;
  ptrs[static_cast<size_t>(Role::KV0)] = 0x7000;

  // CUDA-graph mode keeps level 0 as the base (a replan keeps the launches).
  {
    Program program(*fake().launcher);
    TwoLevels t(/*graph=*/true, 40, /*prefixPages=*/4000);
    t.spec.lastLevelFirst = true;
    ASSERT_TRUE(program.plan(t.spec).ok());
    EXPECT_EQ(program.baseLevel(), 0);
  }
  Program program(*fake().launcher);
  TwoLevels t(/*graph=*/false, 40, /*prefixPages=*/4000);
  t.spec.lastLevelFirst = true;
  ASSERT_TRUE(program.plan(t.spec).ok());
  ASSERT_EQ(program.baseLevel(), 1);
  StandInWorkspaces ws;
  ASSERT_NO_FATAL_FAILURE(allocAndUpload(d, program, ws));
  ASSERT_TRUE(program.prepare(0, levels, "t_merge_level").ok());
  ASSERT_EQ(program.numLaunches(0), 5);

  // The prefix's split attention first: a root like the base level's
  // attention. Level 1's merge waits for its attention; level 0's merge
  // for its attention and for level 1's merge (it writes the level state,
  // merged into the output last).
  const char *names[] = {"t_prefill_split", "t_decode_split", "t_merge_splits",
                         "t_merge_splits", "t_merge_level"};
  const std::vector<std::vector<int>> deps = {{}, {}, {1}, {0, 2}, {3}};
  fake().reset();
  ASSERT_TRUE(program.run(0, ptrs, counts, nullptr).ok());
  ASSERT_TRUE(program.lastRunUsedGraph());
  ASSERT_EQ(fake().numLaunches(), 5);
  for (int i = 0; i < 5; ++i) {
    SCOPED_TRACE("launch " + std::to_string(i));
    EXPECT_STREQ(fake().launchName(i), names[i]);
    ASSERT_EQ(fake().graphDep(i, -1), static_cast<int>(deps[i].size()));
    for (size_t k = 0; k < deps[i].size(); ++k)
      EXPECT_EQ(fake().graphDep(i, static_cast<int>(k)), deps[i][k]);
  }
  // The prefix's split attention at the context's greatest priority (the
  // stand-in's -5), the rest at the stream's (0), and the graph runs them
  // at their own priorities.
  EXPECT_EQ(fake().graphFlags(), 8u);
  for (int i = 0; i < 5; ++i)
    EXPECT_EQ(fake().graphPriority(i), i == 0 ? -5 : 0) << "node " << i;
  // Level 1 writes o; level 0's merge of splits writes its level state.
  EXPECT_EQ(
      fake().launchGrid(0, 0),
      static_cast<unsigned>(program.cascadePlan().levels[0].padded_batch_size));

  // Kernel by kernel: the same launches in the same order.
  program.setGraphLaunch(false);
  fake().reset();
  ASSERT_TRUE(program.run(0, ptrs, counts, nullptr).ok());
  EXPECT_FALSE(program.lastRunUsedGraph());
  ASSERT_EQ(fake().numLaunches(), 5);
  for (int i = 0; i < 5; ++i)
    EXPECT_STREQ(fake().launchName(i), names[i]) << "launch " << i;
  EXPECT_TRUE(d.free(ws.intWs).ok());
  EXPECT_TRUE(d.free(ws.floatWs).ok());
}

TEST(ProgramOnStandIn, Fp8ScalesReachTheirSlotsAndRewriteTheGraph) {
  NEED_FAKE();
  Device &d = *fake().device;
  Program program(*fake().launcher);
  TwoLevels t(/*graph=*/true);
  ASSERT_TRUE(program.plan(t.spec).ok());
  StandInWorkspaces ws;
  ASSERT_NO_FATAL_FAILURE(allocAndUpload(d, program, ws));
  std::vector<ProgramLevelKernels> levels(2);
  levels[0].split = levels[0].unsplit = {"t_prefill_split", "t_merge_splits"};
  levels[1].split =
      levels[1].unsplit = {"t_decode_split_fp8", "t_merge_splits"};
  ASSERT_TRUE(program.prepare(0, levels, "t_merge_level").ok());
  const int64_t n = program.numLaunches(0);
  std::array<uint64_t, kNumRoles> ptrs{};
  std::array<int64_t, kNumRoles> counts{};
  ptrs[static_cast<size_t>(Role::Q)] = 0x5000;
  ptrs[static_cast<size_t>(Role::O)] = 0x6000;
  ptrs[static_cast<size_t>(Role::KV0)] = 0x7000;
  // The fp8 kernel's parameters: q, o, request_indices, tmp_v (5 slots
  // each), then k_scale (slot 20) and v_scale (slot 21), f32 bits in the
  // low 4 bytes.
  auto f32Slot = [](float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    return uint64_t(u);
  };
  auto fp8Launch = [&] {
    for (int i = 0; i < fake().numLaunches(); ++i)
      if (std::string(fake().launchName(i)) == "t_decode_split_fp8")
        return i;
    return -1;
  };
  for (auto [ks, vs] : {std::pair(1.f, 1.f), std::pair(0.5f, 2.25f),
                        std::pair(0.03125f, 1.f)}) {
    fake().reset();
    ASSERT_TRUE(program.run(0, ptrs, counts, nullptr, ks, vs).ok());
    EXPECT_TRUE(program.lastRunUsedGraph());
    EXPECT_EQ(fake().numGraphLaunches(), 1);
    ASSERT_EQ(fake().numLaunches(), n);
    int i = fp8Launch();
    ASSERT_GE(i, 0);
    EXPECT_EQ(fake().launchParam(i, 20), f32Slot(ks)) << ks;
    EXPECT_EQ(fake().launchParam(i, 21), f32Slot(vs)) << vs;
  }
  EXPECT_TRUE(d.free(ws.intWs).ok());
  EXPECT_TRUE(d.free(ws.floatWs).ok());
}

/// Plans `t`, uploads and prepares variant 0 with the checked kernels of
/// the test bundle at level 1.
static void prepareChecked(Program &program, TwoLevels &t, Status &prepared) {
  Device &d = *fake().device;
  std::vector<ProgramLevelKernels> levels(2);
  levels[0].split = levels[0].unsplit = {"t_prefill_split", "t_merge_splits"};
  levels[1].split =
      levels[1].unsplit = {"t_decode_split_p16", "t_merge_splits_h8"};
  ASSERT_TRUE(program.plan(t.spec).ok());
  StandInWorkspaces ws;
  ASSERT_NO_FATAL_FAILURE(allocAndUpload(d, program, ws));
  prepared = program.prepare(0, levels, "t_merge_level");
  EXPECT_TRUE(d.free(ws.intWs).ok());
  EXPECT_TRUE(d.free(ws.floatWs).ok());
}

TEST(ProgramOnStandIn, PrepareChecksTheKernelsStatics) {
  NEED_FAKE();
  {
    // The plan the kernels were built for is prepared as before.
    Program program(*fake().launcher);
    TwoLevels t(false);
    Status s;
    ASSERT_NO_FATAL_FAILURE(prepareChecked(program, t, s));
    ASSERT_TRUE(s.ok()) << s.message();
    EXPECT_EQ(program.numLaunches(0),
              static_cast<int64_t>(program.cascadePlan().steps.size()));
  }
  // Another page size, head count or q dtype: nothing is prepared.
  TwoLevels page8(false, 40, 8, /*pageSize=*/8), heads(false), bf16(false);
  for (PlanInputs &in : heads.spec.levels) {
    in.num_qo_heads = 16;
    in.num_kv_heads = 4;
  }
  bf16.spec.levels[1].q_dtype = DType::BF16;
  const struct {
    TwoLevels *t;
    ErrorCode code;
    const char *message;
  } cases[] = {
      {&page8, ErrorCode::SizeMismatch,
       "level 1: kernel t_decode_split_p16 was built for page_size 16, the "
       "plan has 8"},
      {&heads, ErrorCode::SizeMismatch,
       "level 1: kernel t_decode_split_p16 was built for num_qo_heads 8, the "
       "plan has 16"},
      {&bf16, ErrorCode::InvalidArgument,
       "level 1: kernel t_decode_split_p16 was built for q_dtype f16, the "
       "plan has bf16"}};
  for (const auto &c : cases) {
    SCOPED_TRACE(c.message);
    Program program(*fake().launcher);
    Status s;
    ASSERT_NO_FATAL_FAILURE(prepareChecked(program, *c.t, s));
    EXPECT_EQ(s.code(), c.code);
    EXPECT_EQ(s.message(), c.message);
    EXPECT_FALSE(program.prepared(0));
  }
}

TEST(ProgramOnStandIn, PreallocatedKvIndicesBufferIsReadUpToKvIndptrB) {
  NEED_FAKE();
  Device &d = *fake().device;
  for (bool graph : {false, true}) {
    SCOPED_TRACE(graph ? "CUDA graph" : "plain");
    // The decode level's page list in a buffer 4 times its length whose
    // tail holds ids past the pool (a serving engine's stale entries).
    TwoLevels exact(graph), longer(graph);
    const size_t used = exact.unique.kvIndices.size();
    longer.unique.kvIndices.resize(4 * used, 1 << 30);
    longer.spec.levels[1] = longer.unique.inputs(/*withQo=*/false);
    Program a(*fake().launcher), b(*fake().launcher);
    ASSERT_TRUE(a.plan(exact.spec).ok());
    Status s = b.plan(longer.spec);
    ASSERT_TRUE(s.ok()) << s.message();
    expectSameCascade(b.cascadePlan(), a.cascadePlan());
    EXPECT_EQ(b.maxPageId(), a.maxPageId()); // run() checks caches by it
    EXPECT_EQ(b.intBytesNeeded(), a.intBytesNeeded());
    EXPECT_EQ(b.floatBytesNeeded(), a.floatBytesNeeded());
    StandInWorkspaces wa, wb;
    ASSERT_NO_FATAL_FAILURE(allocAndUpload(d, a, wa));
    ASSERT_NO_FATAL_FAILURE(allocAndUpload(d, b, wb));
    EXPECT_EQ(std::memcmp(reinterpret_cast<const void *>(wa.intAt),
                          reinterpret_cast<const void *>(wb.intAt),
                          static_cast<size_t>(a.intBytesNeeded())),
              0)
        << "the same int workspace: only the used page ids are uploaded";
    for (uint64_t p : {wa.intWs, wa.floatWs, wb.intWs, wb.floatWs})
      EXPECT_TRUE(d.free(p).ok());

    // A caller's device buffer of exactly kv_indptr[B] entries is enough.
    uint64_t buf = 0;
    ASSERT_TRUE(d.alloc(4 * used, buf).ok());
    IndexBuffers user;
    user.kvIndices = buf;
    user.kvIndicesCapacity = static_cast<int64_t>(used);
    longer.spec.indexBuffers = {IndexBuffers(), user};
    Program c(*fake().launcher);
    s = c.plan(longer.spec);
    ASSERT_TRUE(s.ok()) << s.message();
    StandInWorkspaces wc;
    ASSERT_NO_FATAL_FAILURE(allocAndUpload(d, c, wc));
    EXPECT_EQ(std::memcmp(reinterpret_cast<const void *>(buf),
                          exact.unique.kvIndices.data(), 4 * used),
              0);
    for (uint64_t p : {wc.intWs, wc.floatWs, buf})
      EXPECT_TRUE(d.free(p).ok());
  }
}
