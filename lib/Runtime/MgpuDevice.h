//===- MgpuDevice.h - The device of the mgpu* entry points ------*- C++ -*-===//
//
// Private to libcascade_mlir_cuda_runtime: the Device its entry points use
// (MgpuRuntime.cpp), shared with the plan entry points (MgpuPlan.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef CASCADE_RUNTIME_MGPUDEVICE_H
#define CASCADE_RUNTIME_MGPUDEVICE_H

#include "cascade/Runtime/Device.h"

namespace cascade::runtime::mgpu {

/// The default device (mgpuSetDefaultDevice) with its primary context
/// current on the calling thread, or null after a message on stderr.
Device *enterDevice();

/// Prints a failed status on stderr (the mgpu* convention); true on success.
bool reportStatus(const Status &s);

} // namespace cascade::runtime::mgpu

#endif // CASCADE_RUNTIME_MGPUDEVICE_H
