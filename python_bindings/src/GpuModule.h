//===- GpuModule.h - GPU execution for cascade_mlir._runtime ----*- C++ -*-===//

#ifndef CASCADE_PYTHON_GPUMODULE_H
#define CASCADE_PYTHON_GPUMODULE_H

#include <pybind11/pybind11.h>

namespace cascade::python {
/// Adds Device, Program and the tensor helpers to the _runtime module.
void registerGpu(pybind11::module_ &m);
} // namespace cascade::python

#endif // CASCADE_PYTHON_GPUMODULE_H
