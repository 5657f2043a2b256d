//===- GpuDevice.h - One CUDA device for cascade_mlir._runtime --*- C++ -*-===//
//
// Device: one CUDA device, its launcher and the kernel bundles loaded into
// it (cascade_mlir._runtime.Device), shared by the programs and the merges
// that launch on it. Also the translation of a runtime Status into the
// Python exception every GPU entry point raises.
//
//===----------------------------------------------------------------------===//

#ifndef CASCADE_PYTHON_GPUDEVICE_H
#define CASCADE_PYTHON_GPUDEVICE_H

#include "cascade/Runtime/Program.h"

#include <pybind11/pybind11.h>

#include <cstdint>
#include <memory>
#include <set>
#include <string>

namespace cascade::python {

namespace py = pybind11;

/// Raises a runtime error: RuntimeError for driver and internal errors,
/// ValueError for everything else, with the error code's name.
[[noreturn]] void fail(const runtime::Status &s);
inline void check(const runtime::Status &s) {
  if (!s.ok())
    fail(s);
}

/// A stream handle from Python (an integer) as a CUstream.
inline runtime::cuda::CUstream asStream(int64_t s) {
  return reinterpret_cast<runtime::cuda::CUstream>(static_cast<uintptr_t>(s));
}

class Device {
public:
  explicit Device(int ordinal);
  runtime::Launcher &launcher() { return *launcher_; }
  int ordinal() const { return ordinal_; }

  /// Loads DIR as bundle `key` (once per key).
  void addBundle(const std::string &dir, const std::string &key);
  bool hasBundle(const std::string &key) const { return loaded_.count(key); }

  py::dict kernelInfo(const std::string &name) const;
  int occupancy(const std::string &name);

  /// Launches one kernel: `buffers` maps parameter names to tensors (or to
  /// (tensor, element count) pairs), `ints` to integers.
  void launch(const std::string &kernel, const py::dict &buffers,
              const py::dict &ints, int64_t stream);
  void synchronize();

private:
  int ordinal_;
  std::unique_ptr<runtime::Launcher> launcher_;
  std::set<std::string> loaded_;
};

} // namespace cascade::python

#endif // CASCADE_PYTHON_GPUDEVICE_H
