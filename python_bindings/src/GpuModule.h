//===- GpuModule.h - GPU execution for cascade_mlir._runtime ----*- C++ -*-===//

#ifndef CASCADE_PYTHON_GPUMODULE_H
#define CASCADE_PYTHON_GPUMODULE_H

#include <pybind11/pybind11.h>

namespace cascade::python {
/// Adds Device, Program and the tensor helpers to the _runtime module.
void registerGpu(pybind11::module_ &m);

/// The classes registerGpu adds, in this order (a class's signatures name
/// the classes registered before it): Device (GpuDevice.cpp), MergeOps
/// (MergeOps.cpp) and Program (ProgramHandle.cpp).
void bindDevice(pybind11::module_ &m);
void bindMergeOps(pybind11::module_ &m);
void bindProgram(pybind11::module_ &m);
} // namespace cascade::python

#endif // CASCADE_PYTHON_GPUMODULE_H
