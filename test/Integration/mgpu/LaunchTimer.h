//===- LaunchTimer.h - device time of compiled host code's launches -------===//
//
// The mgpu integration test's view of the launches that MLIR-compiled host
// code makes through the mgpu* functions of libcascade_mlir_cuda_runtime:
// LaunchTimer.cpp defines mgpuLaunchKernel, mgpuModuleGetFunction and the
// stream functions in the test executable, so that the host object's calls
// reach them first (the executable's definitions win over the shared
// library's); each one forwards to the library's own function (dlsym
// RTLD_NEXT). What it adds:
// - a pair of timing events on the launch's stream around every launch, so
//   that a call's device time is the sum of its kernels' times (the host
//   code synchronises its stream after every launch: the gaps between the
//   kernels are the host's, not the GPU's);
// - the name of every kernel launched (which kernels a call ran);
// - stream redirection for capture: while a capture stream is set, the host
//   code's per-launch streams are that stream and their synchronisations do
//   nothing, so that a run function's launches land in a CUDA graph.
//
//===----------------------------------------------------------------------===//

#ifndef CASCADE_TEST_INTEGRATION_MGPU_LAUNCHTIMER_H
#define CASCADE_TEST_INTEGRATION_MGPU_LAUNCHTIMER_H

#include "cascade/Runtime/Driver.h"

#include <string>
#include <vector>

namespace mgputest {

/// Starts recording the launches of the calls that follow.
void beginLaunches();

/// The launches since beginLaunches: their device time in microseconds
/// (summed over the launches; waits for them) and their kernel names.
struct Launches {
  double deviceUs = 0;
  std::vector<std::string> kernels;
};
Launches endLaunches();

/// While `stream` is non-null, the compiled code launches on it and does
/// not synchronise it (to capture its launches into a CUDA graph).
void redirectStreams(cascade::runtime::cuda::CUstream stream);

} // namespace mgputest

#endif // CASCADE_TEST_INTEGRATION_MGPU_LAUNCHTIMER_H
