//===- Device.h - One CUDA device and its driver helpers --------*- C++ -*-===//
//
// A Device is the runtime's one place for driver calls on a device: its
// primary context, the modules loaded into it and their functions (with the
// max-dynamic-shared-memory attribute set once), the occupancy query a plan
// needs, memory, streams, events, and CUDA graphs (captured from a stream or
// built node by node). The Launcher (bundle kernels by name) and the Program
// (a plan bound to a device) go through it; planning does not
// (Plan.h: a PlanTarget holds the device facts a plan needs).
//
//===----------------------------------------------------------------------===//

#ifndef CASCADE_RUNTIME_DEVICE_H
#define CASCADE_RUNTIME_DEVICE_H

#include "cascade/Runtime/Driver.h"
#include "cascade/Runtime/Manifest.h"

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace cascade::runtime {

/// A kernel bound once (grid, block, parameter slots) and launched many
/// times. The owner may rewrite slots between launches (a Program patches
/// the caller's tensors into them); `params` point into `launch.slots` once
/// `finalize()` has run, so the object must not be copied afterwards.
struct PreparedLaunch {
  std::string kernel;
  cuda::CUfunction function = nullptr;
  KernelLaunch launch;
  std::vector<void *> params;
  /// The kernel waits for the grids before it itself (its manifest's
  /// "pdl"): it may be launched as their programmatic dependent.
  bool pdl = false;
  void finalize() { params = launch.paramPointers(); }
};

/// A captured and instantiated CUDA graph.
struct CapturedGraph {
  cuda::CUgraph graph = nullptr;
  cuda::CUgraphExec exec = nullptr;
};

class Device;

/// The chip name of the kernel bundles that suit a device of compute
/// capability major.minor best: the arch-specific "sm_90a" on 9.0 (the
/// compiler's wgmma family needs it, and its PTX runs on 9.0 only), else
/// "sm_<major><minor>". Bundles of an older chip still run (the driver
/// compiles their PTX); the Python package falls back to them.
std::string kernelChipFor(int major, int minor);

/// Launches as one CUDA graph built node by node: a kernel node per launch,
/// in order (or with explicit dependencies), instantiated on the first launch;
/// later launches rewrite only the nodes marked dirty
/// (cuGraphExecKernelNodeSetParams). Needs the driver's optional graph-building
/// entry points (canBuildGraphs).
class KernelGraph {
public:
  explicit KernelGraph(const Device &device) : device_(&device) {}
  ~KernelGraph() { reset(); }
  KernelGraph(const KernelGraph &) = delete;
  KernelGraph &operator=(const KernelGraph &) = delete;

  /// Builds the graph of `launches` (first call) or updates the nodes whose
  /// `dirty` flag is set (then clears the flags), and launches it on
  /// `stream`. False when a driver call failed: the graph is dropped and
  /// failed() stays true (the caller then launches kernel by kernel).
  /// `deps` (one list per launch, of earlier launches' indices) makes the
  /// graph a DAG instead of a chain: a launch with no dependencies is a
  /// root, and roots are added to the graph first (the driver starts them
  /// in that order). `urgent` (one flag per launch) gives the flagged
  /// launches the context's greatest priority and the others the stream's
  /// (at the first call), so that the block scheduler places an urgent
  /// root's blocks before another root's whatever order the driver starts
  /// them in; where the driver cannot prioritize nodes it is ignored.
  bool launch(const std::vector<PreparedLaunch> &launches,
              std::vector<uint8_t> &dirty, cuda::CUstream stream,
              const std::vector<std::vector<uint32_t>> *deps = nullptr,
              const std::vector<uint8_t> *urgent = nullptr);
  bool failed() const { return failed_; }
  bool built() const { return exec_ != nullptr; }
  /// Whether the built graph runs its nodes at their own priorities.
  bool prioritized() const { return prioritized_; }

private:
  void reset();
  bool fail();
  /// Sets every node's priority (see launch()); false if the driver cannot.
  bool prioritize(const std::vector<uint8_t> &urgent, cuda::CUstream stream);

  const Device *device_;
  cuda::CUgraph graph_ = nullptr;
  cuda::CUgraphExec exec_ = nullptr;
  std::vector<cuda::CUgraphNode> nodes_;
  bool failed_ = false;
  bool prioritized_ = false;
};

class Device {
public:
  /// Loads the process-wide driver (getDriver), retains device `ordinal`'s
  /// primary context, makes it current and reads the SM count and compute
  /// capability.
  static Status open(int ordinal, std::shared_ptr<Device> &out);
  /// The same over a given driver table, which must outlive the device (a
  /// stand-in driver loaded with loadDriverLibrary, for tests).
  static Status open(const cuda::DriverApi &api, int ordinal,
                     std::shared_ptr<Device> &out);
  /// Unloads the modules loaded through loadModule.
  ~Device();
  Device(const Device &) = delete;
  Device &operator=(const Device &) = delete;

  const cuda::DriverApi &api() const { return *api_; }
  int ordinal() const { return ordinal_; }
  cuda::CUcontext context() const { return context_; }
  int numSms() const { return numSms_; }
  /// The compute capability as `sm_<major><minor>` ("sm_90").
  const std::string &chip() const { return chip_; }
  /// The chip whose kernel bundles suit this device best (kernelChipFor):
  /// "sm_90a" on compute capability 9.0, where the wgmma family runs,
  /// else chip().
  const std::string &kernelChip() const { return kernelChip_; }
  /// Makes the device's primary context (which CUDA runtime users such as
  /// torch share) current on the calling thread.
  Status makeCurrent() const;
  /// Whether the driver has the graph-building entry points KernelGraph
  /// needs.
  bool canBuildGraphs() const { return api_->canBuildGraphs(); }
  /// Programmatic dependent launch: a kernel that waits for the grids
  /// before it itself (PreparedLaunch::pdl) and follows another kernel of
  /// the same run starts while that one finishes (on a stream with
  /// cuLaunchKernelEx, in a KernelGraph through programmatic edges). On by
  /// default where the driver has the entry points; $CASCADE_PDL=0 turns
  /// it off for the process, setProgrammaticLaunch for this device.
  bool programmaticLaunch() const { return pdl_; }
  void setProgrammaticLaunch(bool on);

  // Modules and functions.

  /// Loads a PTX text (or, when `cubinPath` names a readable file, that
  /// cubin) as module `key`; errors carry the JIT log. Keys are the
  /// device's: loading a key twice is an error (launchers sharing a device
  /// keep their bundles apart with addBundle's prefix).
  Status loadModule(const std::string &key, const std::string &ptx,
                    const std::string &cubinPath = "");
  bool hasModule(const std::string &key) const { return modules_.count(key); }
  /// Function `name` of module `key`, looked up once. A kernel with more
  /// than 48 KiB of dynamic shared memory gets the max-dynamic-shared-size
  /// attribute set to `dynamicSharedBytes` on first lookup.
  Status function(const std::string &key, const std::string &name,
                  int64_t dynamicSharedBytes, cuda::CUfunction &fn);
  /// Sets CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES when `bytes` is
  /// above the 48 KiB a kernel gets without it (nothing otherwise).
  Status setMaxDynamicSharedBytes(cuda::CUfunction fn, int64_t bytes) const;
  /// Resident blocks per SM of `fn` launched with `threads` threads and
  /// `dynamicSharedBytes` (cuOccupancyMaxActiveBlocksPerMultiprocessor).
  Status occupancy(cuda::CUfunction fn, int threads, int64_t dynamicSharedBytes,
                   int &blocksPerSm) const;
  /// One cuLaunchKernel of `fn` with `launch`'s grid, block, shared bytes
  /// and `params`; errors are prefixed with `what`.
  Status launch(cuda::CUfunction fn, const KernelLaunch &launch, void **params,
                cuda::CUstream stream, const std::string &what) const;
  /// `dependent`: the launch follows another kernel of the same run on
  /// `stream`, and starts as its programmatic dependent where l.pdl and
  /// programmaticLaunch() allow.
  Status launch(const PreparedLaunch &l, cuda::CUstream stream,
                bool dependent = false) const;

  /// cuModuleLoadDataEx of `image` with an error log (and the optimization
  /// level when `optLevel >= 0`); `log` holds the JIT's message on failure.
  static cuda::CUresult loadModuleImage(const cuda::DriverApi &api,
                                        const void *image, int optLevel,
                                        cuda::CUmodule &module,
                                        std::string &log);

  // Memory.
  Status alloc(size_t bytes, uint64_t &ptr) const;
  Status free(uint64_t ptr) const;
  /// Page-locked host memory (staging of asynchronous uploads).
  Status allocHost(size_t bytes, void *&ptr) const;
  void freeHost(void *ptr) const;
  Status copyToDevice(uint64_t dst, const void *src, size_t bytes,
                      cuda::CUstream stream) const;
  Status copyToHost(void *dst, uint64_t src, size_t bytes,
                    cuda::CUstream stream) const;
  Status memsetD32(uint64_t dst, uint32_t value, size_t count,
                   cuda::CUstream stream) const;

  // Streams and events.
  Status createStream(cuda::CUstream &stream) const;
  Status destroyStream(cuda::CUstream stream) const;
  Status synchronize(cuda::CUstream stream) const;
  /// Whether `stream` is being captured into a graph (false when the driver
  /// cannot tell).
  bool isCapturing(cuda::CUstream stream) const;
  Status createEvent(cuda::CUevent &event, unsigned flags) const;
  void destroyEvent(cuda::CUevent event) const;
  Status recordEvent(cuda::CUevent event, cuda::CUstream stream) const;
  Status synchronizeEvent(cuda::CUevent event) const;

  // Graphs captured from a stream.
  Status beginCapture(cuda::CUstream stream) const;
  Status endCapture(cuda::CUstream stream, CapturedGraph &graph) const;
  Status replay(const CapturedGraph &graph, cuda::CUstream stream) const;
  void destroyGraph(CapturedGraph &graph) const;

private:
  Device() = default;

  const cuda::DriverApi *api_ = nullptr;
  int ordinal_ = 0;
  cuda::CUcontext context_ = nullptr;
  int numSms_ = 0;
  bool pdl_ = false;
  std::string chip_, kernelChip_;
  std::map<std::string, cuda::CUmodule> modules_;
  std::map<std::pair<std::string, std::string>, cuda::CUfunction> functions_;
};

} // namespace cascade::runtime

#endif // CASCADE_RUNTIME_DEVICE_H
