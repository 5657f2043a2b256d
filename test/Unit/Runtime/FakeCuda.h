//===- FakeCuda.h - The stand-in CUDA driver in the unit tests --*- C++ -*-===//
//
// DeviceTest and TensorMapTest run the runtime against the stand-in driver of
// the Python tests (python_bindings/tests/fake_cuda), built as a module whose
// path CMake passes as CASCADE_FAKE_CUDA. This loads it as the runtime's
// driver and looks up its test hooks (counters, recorded arguments).
//
//===----------------------------------------------------------------------===//

#ifndef CASCADE_TEST_UNIT_RUNTIME_FAKECUDA_H
#define CASCADE_TEST_UNIT_RUNTIME_FAKECUDA_H

#include "cascade/Runtime/Driver.h"
#include "cascade/Runtime/Status.h"

#include <gtest/gtest.h>

#include <dlfcn.h>

#include <type_traits>

namespace cascade::runtime::test {

/// The stand-in driver: its DriverApi, and its hooks by name.
struct FakeCudaLibrary {
  cuda::DriverApi api{};
  Status status;
  void *handle = nullptr;

  /// Loads the driver (and cuInit's it); `status` says what failed.
  void open() {
    status = cuda::loadDriverLibrary(CASCADE_FAKE_CUDA, api);
    if (!status.ok())
      return;
    status = cuda::checkCuda(api, api.cuInit(0), "cuInit");
    // The library is loaded already: this handle is the same instance.
    handle = dlopen(CASCADE_FAKE_CUDA, RTLD_NOW | RTLD_LOCAL);
    if (!handle)
      status = Status(ErrorCode::DriverUnavailable, dlerror());
  }
  /// Sets `fn` to the hook `name`; false (fn null) when there is none.
  template <typename Fn> bool hook(Fn &fn, const char *name) const {
    fn =
        handle
            ? reinterpret_cast<std::remove_reference_t<Fn>>(dlsym(handle, name))
            : nullptr;
    return fn != nullptr;
  }
};

} // namespace cascade::runtime::test

/// At the start of a test that runs on the stand-in driver: its fixture
/// (`fake()`, which has `status` and `reset`) must have loaded, and the
/// driver's records start empty.
#define NEED_FAKE()                                                            \
  do {                                                                         \
    ASSERT_TRUE(fake().status.ok()) << fake().status.message();                \
    fake().reset();                                                            \
  } while (0)

#endif // CASCADE_TEST_UNIT_RUNTIME_FAKECUDA_H
