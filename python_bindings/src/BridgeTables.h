//===- BridgeTables.h - C tables for the torch bridge -----------*- C++ -*-===//
//
// What _runtime hands cascade_mlir._torch_bridge (TorchBridgeABI.h): C
// tables of functions (a Program's run(), the merges) in capsules that keep
// their owner alive, and the wrapper that turns what a C++ method throws
// into a Python exception for its C caller.
//
//===----------------------------------------------------------------------===//

#ifndef CASCADE_PYTHON_BRIDGETABLES_H
#define CASCADE_PYTHON_BRIDGETABLES_H

#include <pybind11/pybind11.h>

#include <exception>

namespace cascade::python {

namespace py = pybind11;

/// Runs `f`, turning what it throws into the Python exception pybind11
/// would raise for it: false with that exception set.
template <typename F> bool translated(F &&f) {
  try {
    f();
    return true;
  } catch (py::error_already_set &e) {
    e.restore();
  } catch (const py::builtin_exception &e) {
    e.set_error();
  } catch (const std::exception &e) {
    PyErr_SetString(PyExc_RuntimeError, e.what());
  }
  return false;
}

/// A call from C (TorchBridgeABI.h): what `f` returns (0 or 1), or -1 with
/// the Python exception of what it threw set.
template <typename F> int calledFromC(F &&f) {
  int r = 1;
  return translated([&] { r = f(); }) ? r : -1;
}

/// A capsule named `name` holding `table` (a C table of `owner`'s
/// functions) that keeps `owner` alive.
inline py::object tableCapsule(void *table, const char *name,
                               py::object owner) {
  PyObject *c = PyCapsule_New(table, name, [](PyObject *cap) {
    Py_XDECREF(static_cast<PyObject *>(PyCapsule_GetContext(cap)));
  });
  if (!c)
    throw py::error_already_set();
  py::object result = py::reinterpret_steal<py::object>(c);
  if (PyCapsule_SetContext(c, owner.release().ptr()) != 0)
    throw py::error_already_set();
  return result;
}

} // namespace cascade::python

#endif // CASCADE_PYTHON_BRIDGETABLES_H
