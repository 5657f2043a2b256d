//===- GpuDevice.cpp - One CUDA device for cascade_mlir._runtime ----------===//
//
// Device's methods and its Python class (cascade_mlir._runtime.Device).
//
//===----------------------------------------------------------------------===//

#include "GpuDevice.h"
#include "GpuModule.h"
#include "TensorArgs.h"

#include <pybind11/stl.h>

#include <vector>

namespace py = pybind11;
using namespace cascade::runtime;

namespace cascade::python {

void fail(const Status &s) {
  std::string msg = std::string(errorCodeName(s.code())) + ": " + s.message();
  if (s.code() == ErrorCode::Driver || s.code() == ErrorCode::Internal)
    throw std::runtime_error(msg);
  throw py::value_error(msg);
}

Device::Device(int ordinal) : ordinal_(ordinal) {
  check(Launcher::create(Bundle(), ordinal, launcher_));
}

void Device::addBundle(const std::string &dir, const std::string &key) {
  if (!loaded_.insert(key).second)
    return;
  Bundle b;
  Status s = loadBundle(dir, b);
  if (s.ok())
    s = launcher_->addBundle(b, key);
  if (!s.ok()) {
    loaded_.erase(key);
    fail(s);
  }
}

py::dict Device::kernelInfo(const std::string &name) const {
  const KernelSpec *k = launcher_->bundle().find(name);
  if (!k)
    throw py::key_error("no kernel named " + name + " is loaded");
  py::dict statics;
  for (const auto &kv : k->statics)
    statics[py::str(kv.first)] = kv.second;
  py::dict d;
  d["name"] = k->name;
  d["op"] = k->op;
  d["static"] = statics;
  std::vector<std::string> params;
  for (const ParamSpec &p : k->params)
    params.push_back(p.name);
  d["params"] = params;
  return d;
}

int Device::occupancy(const std::string &name) {
  int o = 0;
  check(launcher_->occupancy(name, o));
  return o;
}

void Device::launch(const std::string &kernel, const py::dict &buffers,
                    const py::dict &ints, int64_t stream) {
  ArgumentTable t;
  std::vector<py::object> alive;
  for (auto item : buffers) {
    const std::string name = py::str(item.first);
    py::handle value = item.second;
    int64_t count = -1;
    if (py::isinstance<py::tuple>(value)) {
      py::tuple pair = py::reinterpret_borrow<py::tuple>(value);
      value = pair[0];
      count = pair[1].cast<int64_t>();
    }
    TensorArg a = probe(value, name.c_str(), stream);
    if (!a.cuda || a.device != ordinal_)
      throw py::value_error(name + " is on " + a.deviceString() +
                            ", expected cuda:" + std::to_string(ordinal_));
    alive.push_back(a.keepAlive);
    t.setBuffer(name, a.ptr, count >= 0 ? count : a.numel());
  }
  for (auto item : ints)
    t.setInt(py::str(item.first), item.second.cast<int64_t>());
  check(launcher_->makeCurrent());
  check(launcher_->launch(kernel, t, asStream(stream)));
}

void Device::synchronize() {
  check(launcher_->makeCurrent());
  check(launcher_->synchronize(nullptr));
}

void bindDevice(py::module_ &m) {
  py::class_<Device, std::shared_ptr<Device>>(m, "Device")
      .def(py::init<int>(), py::arg("ordinal"))
      .def_property_readonly("ordinal", &Device::ordinal)
      .def_property_readonly("num_sms",
                             [](Device &d) { return d.launcher().numSms(); })
      .def_property_readonly(
          "chip", [](Device &d) { return d.launcher().kernelChip(); },
          "The chip of the kernel bundles this device runs best (sm_90a on "
          "compute capability 9.0; older chips' bundles are the fallback).")
      .def_property_readonly(
          "compute_capability", [](Device &d) { return d.launcher().chip(); },
          "The compute capability as sm_<major><minor>.")
      .def("add_bundle", &Device::addBundle, py::arg("dir"), py::arg("key"))
      .def("has_bundle", &Device::hasBundle, py::arg("key"))
      .def("kernel_info", &Device::kernelInfo, py::arg("name"))
      .def("occupancy", &Device::occupancy, py::arg("name"))
      .def("launch", &Device::launch, py::arg("kernel"), py::arg("buffers"),
           py::arg("ints"), py::arg("stream"))
      .def("synchronize", &Device::synchronize);
}

} // namespace cascade::python
