//===- Launcher.h - Running bundle kernels on a GPU -------------*- C++ -*-===//
//
// Loads the PTX of a kernel bundle through the dlopen'd CUDA driver, binds
// named arguments (Manifest.h), uploads plans (one async copy of the int
// workspace image) and runs single ops, attention levels (attention kernel,
// plus the indptr merge in split mode) and whole cascades. Everything is
// enqueued on a caller's stream, so it can be captured into a CUDA graph:
// replan -> uploadPlan into the same buffers -> replay.
//
//===----------------------------------------------------------------------===//

#ifndef CASCADE_RUNTIME_LAUNCHER_H
#define CASCADE_RUNTIME_LAUNCHER_H

#include "cascade/Runtime/Driver.h"
#include "cascade/Runtime/Manifest.h"
#include "cascade/Runtime/Plan.h"

#include <map>
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

/// A kernel bound once (grid, block, parameter slots) and launched many
/// times. The owner may rewrite slots between launches (a Program patches
/// the caller's tensors into them); `params` point into `launch.slots` once
/// `finalize()` has run, so the object must not be copied afterwards.
struct PreparedLaunch {
  std::string kernel;
  cuda::CUfunction function = nullptr;
  KernelLaunch launch;
  std::vector<void *> params;
  void finalize() { params = launch.paramPointers(); }
};

/// A captured and instantiated CUDA graph.
struct CapturedGraph {
  cuda::CUgraph graph = nullptr;
  cuda::CUgraphExec exec = nullptr;
};

class Launcher {
public:
  /// Loads the driver, makes device `device`'s primary context current and
  /// loads every PTX file of the bundle.
  static Status create(const Bundle &bundle, int device,
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
  const std::string &chip() const { return chip_; }
  cuda::CUcontext context() const { return context_; }
  /// Makes the launcher's context (the device's primary context, which CUDA
  /// runtime users such as torch share) current on the calling thread.
  Status makeCurrent();
  /// While a recorder is set, launch() (and so runLevel / runCascade) binds
  /// each kernel into it instead of launching; nothing is enqueued.
  void setRecorder(std::vector<PreparedLaunch> *recorder) {
    recorder_ = recorder;
  }
  /// Launches a prepared kernel with its current slots.
  Status launchPrepared(const PreparedLaunch &l, cuda::CUstream stream) const;
  const cuda::DriverApi &api() const { return *api_; }
  int numSms() const { return numSms_; }
  /// Resident blocks per SM of a kernel (the plan's `occupancy`).
  Status occupancy(const std::string &kernel, int &blocksPerSm);

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
  /// tmp_v/tmp_s and the merge kernel writes o/lse.
  Status runLevel(const Plan &plan, uint64_t intWorkspace,
                  uint64_t floatWorkspace, const LevelKernels &kernels,
                  const ArgumentTable &args, cuda::CUstream stream);

  /// A whole cascade: level 0 writes the user's o/lse. A level l >= 1 whose
  /// kernels accumulate (static "accumulate": true, the fused merge of
  /// cascade-decompose-levels) merges itself into o/lse in its last kernel;
  /// any other level writes its state into the float workspace and
  /// `mergeKernel` (op merge_state_in_place: v, s, v_other, s_other) merges
  /// it into o/lse (`mergeKernel` may be empty when every level
  /// accumulates).
  Status runCascade(const CascadePlan &plan, uint64_t intWorkspace,
                    uint64_t floatWorkspace,
                    const std::vector<LevelKernels> &kernels,
                    const std::vector<ArgumentTable> &levelArgs,
                    const std::string &mergeKernel, cuda::CUstream stream);

  // Small helpers over the driver.
  Status alloc(size_t bytes, uint64_t &ptr);
  Status free(uint64_t ptr);
  Status copyToDevice(uint64_t dst, const void *src, size_t bytes,
                      cuda::CUstream stream);
  Status copyToHost(void *dst, uint64_t src, size_t bytes,
                    cuda::CUstream stream);
  Status memsetD32(uint64_t dst, uint32_t value, size_t count,
                   cuda::CUstream stream);
  Status createStream(cuda::CUstream &stream);
  Status destroyStream(cuda::CUstream stream);
  Status synchronize(cuda::CUstream stream);
  Status beginCapture(cuda::CUstream stream);
  Status endCapture(cuda::CUstream stream, CapturedGraph &graph);
  Status replay(const CapturedGraph &graph, cuda::CUstream stream);
  void destroyGraph(CapturedGraph &graph);

private:
  Launcher() = default;
  Status function(const std::string &kernel, cuda::CUfunction &fn);
  /// Loads one PTX text, or the cubin at `cubinPath` when that file exists.
  Status loadModule(const std::string &key, const std::string &ptx,
                    const std::string &cubinPath);
  /// One asynchronous copy of a plan's int-workspace image.
  Status uploadImage(const std::vector<uint8_t> &image, uint64_t intWorkspace,
                     cuda::CUstream stream);

  Bundle bundle_;
  const cuda::DriverApi *api_ = nullptr;
  cuda::CUcontext context_ = nullptr;
  int numSms_ = 0;
  std::string chip_;
  std::vector<PreparedLaunch> *recorder_ = nullptr;
  std::map<std::string, cuda::CUmodule> modules_; ///< ptx file -> module
  std::map<std::string, cuda::CUfunction> functions_;
};

} // namespace cascade::runtime

#endif // CASCADE_RUNTIME_LAUNCHER_H
