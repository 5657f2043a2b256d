//===- Launcher.h - Running bundle kernels on a GPU -------------*- C++ -*-===//
//
// Loads the PTX of kernel bundles into a Device (Device.h: the driver
// helpers), binds named arguments (Manifest.h), uploads plans (one async copy
// of the int workspace image) and runs single ops, attention levels
// (attention kernel, plus the indptr merge in split mode) and whole cascades
// in the order of their steps. Everything is enqueued on a caller's stream,
// so it can be captured into a CUDA graph: replan -> uploadPlan into the same
// buffers -> replay.
//
//===----------------------------------------------------------------------===//

#ifndef CASCADE_RUNTIME_LAUNCHER_H
#define CASCADE_RUNTIME_LAUNCHER_H

#include "cascade/Runtime/Device.h"
#include "cascade/Runtime/Manifest.h"
#include "cascade/Runtime/Plan.h"

#include <memory>
#include <string>
#include <vector>

namespace cascade::runtime {

/// The kernels of one attention level: `attention` (op decode/prefill or
/// decode_split/prefill_split) and, used only when the plan splits KV,
/// `merge` (op merge_states_indptr).
struct LevelKernels {
  std::string attention;
  std::string merge;
};

/// checkKernelStatics (Manifest.h) for every kernel of `bundle` that
/// Launcher::runCascade launches for `plan` (by its steps: each level's
/// attention kernel, its merge kernel where it splits KV, `mergeKernel`
/// for a level that neither writes the output nor accumulates), against
/// the plan of its level; `inputs`, if given, holds the PlanInputs of
/// every level (their dtypes are checked as well). Kernels the bundle
/// lacks are left to the launch, which reports them. Messages start with
/// "level L: ".
Status checkCascadeKernels(const Bundle &bundle, const CascadePlan &plan,
                           const std::vector<LevelKernels> &kernels,
                           const std::string &mergeKernel,
                           const std::vector<PlanInputs> *inputs = nullptr);

class Launcher {
public:
  /// Loads the driver, makes device `device`'s primary context current and
  /// loads every PTX file of the bundle.
  static Status create(const Bundle &bundle, int device,
                       std::unique_ptr<Launcher> &out);
  /// The same on an opened device (which other launchers may share: their
  /// bundles need distinct PTX file names, see Device::loadModule).
  static Status create(std::shared_ptr<Device> device, const Bundle &bundle,
                       std::unique_ptr<Launcher> &out);
  ~Launcher();
  Launcher(const Launcher &) = delete;
  Launcher &operator=(const Launcher &) = delete;

  const Bundle &bundle() const { return bundle_; }
  /// Adds the kernels of another bundle and loads its PTX files (or, when
  /// the bundle directory holds `<file stem>.sm_<major><minor>.cubin` for
  /// this device, that cubin). Kernels whose name is already known are
  /// skipped (a kernel name spells out its whole configuration); PTX file
  /// names are prefixed with `prefix + "/"` to keep bundles apart.
  Status addBundle(const Bundle &bundle, const std::string &prefix);
  /// The device's compute capability as `sm_<major><minor>` ("sm_90").
  const std::string &chip() const { return device_->chip(); }
  const std::string &kernelChip() const { return device_->kernelChip(); }
  cuda::CUcontext context() const { return device_->context(); }
  Device &device() const { return *device_; }
  const std::shared_ptr<Device> &sharedDevice() const { return device_; }
  /// Makes the launcher's context (the device's primary context, which CUDA
  /// runtime users such as torch share) current on the calling thread.
  Status makeCurrent() { return device_->makeCurrent(); }
  /// While a recorder is set, launch() (and so runLevel / runCascade) binds
  /// each kernel into it instead of launching; nothing is enqueued.
  void setRecorder(std::vector<PreparedLaunch> *recorder) {
    recorder_ = recorder;
  }
  /// Launches a prepared kernel with its current slots.
  Status launchPrepared(const PreparedLaunch &l, cuda::CUstream stream) const;
  const cuda::DriverApi &api() const { return device_->api(); }
  int numSms() const { return device_->numSms(); }
  /// Resident blocks per SM of a kernel (the plan's `occupancy`).
  Status occupancy(const std::string &kernel, int &blocksPerSm);
  /// The device facts a plan for `kernel` needs: the SM count, the kernel's
  /// occupancy (at least 1) and its `qo_tile_size` static (0 if none).
  Status planTarget(const std::string &kernel, PlanTarget &out);

  /// Binds and launches one kernel; a grid with a 0 dimension launches
  /// nothing.
  Status launch(const std::string &kernel, const ArgumentTable &args,
                cuda::CUstream stream);

  /// Uploads the plan's int workspace image to `intWorkspace` (one
  /// cuMemcpyHtoDAsync).
  Status uploadPlan(const Plan &plan, uint64_t intWorkspace,
                    cuda::CUstream stream);
  Status uploadPlan(const CascadePlan &plan, uint64_t intWorkspace,
                    cuda::CUstream stream);

  /// One attention level. `args` holds the user's buffers (q, the KV pool,
  /// index arrays, o, lse) and options; the plan's arrays and scalars are
  /// added (addPlanBindings). In split mode the attention kernel writes
  /// tmp_v/tmp_s and the merge kernel writes o/lse. Before anything is
  /// launched, the kernels' statics are checked against the plan
  /// (checkKernelStatics).
  Status runLevel(const Plan &plan, uint64_t intWorkspace,
                  uint64_t floatWorkspace, const LevelKernels &kernels,
                  const ArgumentTable &args, cuda::CUstream stream);

  /// A whole cascade, launched in the order of plan.steps: the base level
  /// (plan.base_level) writes the user's o/lse, found in level 0's
  /// arguments. Another level whose
  /// kernels accumulate (static "accumulate": true, the fused merge of
  /// cascade-decompose-levels) merges itself into o/lse in its last kernel;
  /// any other level writes its state into the float workspace and
  /// `mergeKernel` (op merge_state_in_place: v, s, v_other, s_other) merges
  /// it into o/lse (`mergeKernel` may be empty when every level
  /// accumulates). With `launchSteps`, while a recorder is set, the index
  /// into plan.steps of every recorded launch is appended to it. Before
  /// anything is launched, the kernels' statics are checked against the
  /// plans of their levels (checkCascadeKernels).
  Status runCascade(const CascadePlan &plan, uint64_t intWorkspace,
                    uint64_t floatWorkspace,
                    const std::vector<LevelKernels> &kernels,
                    const std::vector<ArgumentTable> &levelArgs,
                    const std::string &mergeKernel, cuda::CUstream stream,
                    std::vector<int32_t> *launchSteps = nullptr);

  // The device's helpers (Device.h), for callers that hold a launcher.
  Status alloc(size_t bytes, uint64_t &ptr) {
    return device_->alloc(bytes, ptr);
  }
  Status free(uint64_t ptr) { return device_->free(ptr); }
  Status copyToDevice(uint64_t dst, const void *src, size_t bytes,
                      cuda::CUstream stream) {
    return device_->copyToDevice(dst, src, bytes, stream);
  }
  Status copyToHost(void *dst, uint64_t src, size_t bytes,
                    cuda::CUstream stream) {
    return device_->copyToHost(dst, src, bytes, stream);
  }
  Status memsetD32(uint64_t dst, uint32_t value, size_t count,
                   cuda::CUstream stream) {
    return device_->memsetD32(dst, value, count, stream);
  }
  Status createStream(cuda::CUstream &stream) {
    return device_->createStream(stream);
  }
  Status destroyStream(cuda::CUstream stream) {
    return device_->destroyStream(stream);
  }
  Status synchronize(cuda::CUstream stream) {
    return device_->synchronize(stream);
  }
  Status beginCapture(cuda::CUstream stream) {
    return device_->beginCapture(stream);
  }
  Status endCapture(cuda::CUstream stream, CapturedGraph &graph) {
    return device_->endCapture(stream, graph);
  }
  Status replay(const CapturedGraph &graph, cuda::CUstream stream) {
    return device_->replay(graph, stream);
  }
  void destroyGraph(CapturedGraph &graph) { device_->destroyGraph(graph); }

private:
  Launcher() = default;
  /// The kernel's function on the device (looked up once).
  Status function(const std::string &kernel, cuda::CUfunction &fn);

  std::shared_ptr<Device> device_;
  Bundle bundle_;
  std::vector<PreparedLaunch> *recorder_ = nullptr;
};

} // namespace cascade::runtime

#endif // CASCADE_RUNTIME_LAUNCHER_H
