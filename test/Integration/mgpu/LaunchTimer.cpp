//===- LaunchTimer.cpp - device time of compiled host code's launches -----===//
//
// See LaunchTimer.h. The mgpu* definitions here take the host object's calls
// and forward them to libcascade_mlir_cuda_runtime's.
//
//===----------------------------------------------------------------------===//

#include "LaunchTimer.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <dlfcn.h>
#include <unordered_map>
#include <utility>

using namespace cascade::runtime::cuda;

namespace {

/// The shared library's definition of `name` (the next one after ours).
template <typename Fn> Fn next(const char *name) {
  auto *fn = reinterpret_cast<Fn>(dlsym(RTLD_NEXT, name));
  if (!fn) {
    std::fprintf(stderr, "mgpu test: no %s after the test's own\n", name);
    std::abort();
  }
  return fn;
}

const DriverApi &driver() {
  static const DriverApi *api = [] {
    const DriverApi *a = nullptr;
    if (!getDriver(a).ok())
      std::abort(); // only reached after the shim made a launch
    return a;
  }();
  return *api;
}

struct State {
  bool recording = false;
  size_t used = 0; ///< event pairs recorded since beginLaunches
  std::vector<std::pair<CUevent, CUevent>> events;
  std::vector<std::string> kernels;
  std::unordered_map<CUfunction, std::string> names;
  CUstream redirect = nullptr;
};

State &state() {
  static State s;
  return s;
}

} // namespace

void mgputest::beginLaunches() {
  State &s = state();
  s.recording = true;
  s.used = 0;
  s.kernels.clear();
}

mgputest::Launches mgputest::endLaunches() {
  State &s = state();
  Launches out;
  out.kernels = std::move(s.kernels);
  s.kernels.clear();
  for (size_t i = 0; i < s.used; ++i) {
    float ms = 0;
    driver().cuEventSynchronize(s.events[i].second);
    if (driver().cuEventElapsedTime(&ms, s.events[i].first,
                                    s.events[i].second) == 0)
      out.deviceUs += 1e3 * ms;
  }
  s.recording = false;
  s.used = 0;
  return out;
}

void mgputest::redirectStreams(CUstream stream) { state().redirect = stream; }

extern "C" {

CUfunction mgpuModuleGetFunction(CUmodule module, const char *name) {
  static auto real =
      next<CUfunction (*)(CUmodule, const char *)>("mgpuModuleGetFunction");
  CUfunction fn = real(module, name);
  if (fn)
    state().names.emplace(fn, name);
  return fn;
}

void mgpuLaunchKernel(CUfunction function, intptr_t gridX, intptr_t gridY,
                      intptr_t gridZ, intptr_t blockX, intptr_t blockY,
                      intptr_t blockZ, int32_t smem, CUstream stream,
                      void **params, void **extra, size_t paramsCount) {
  using Fn =
      void (*)(CUfunction, intptr_t, intptr_t, intptr_t, intptr_t, intptr_t,
               intptr_t, int32_t, CUstream, void **, void **, size_t);
  static auto real = next<Fn>("mgpuLaunchKernel");
  State &s = state();
  const bool timed = s.recording && !s.redirect;
  if (s.recording) {
    auto it = s.names.find(function);
    s.kernels.push_back(it == s.names.end() ? "?" : it->second);
  }
  if (timed) {
    if (s.used == s.events.size()) {
      std::pair<CUevent, CUevent> pair{};
      driver().cuEventCreate(&pair.first, CU_EVENT_DEFAULT);
      driver().cuEventCreate(&pair.second, CU_EVENT_DEFAULT);
      s.events.push_back(pair);
    }
    driver().cuEventRecord(s.events[s.used].first, stream);
  }
  real(function, gridX, gridY, gridZ, blockX, blockY, blockZ, smem, stream,
       params, extra, paramsCount);
  if (timed)
    driver().cuEventRecord(s.events[s.used++].second, stream);
}

CUstream mgpuStreamCreate() {
  static auto real = next<CUstream (*)()>("mgpuStreamCreate");
  return state().redirect ? state().redirect : real();
}

void mgpuStreamSynchronize(CUstream stream) {
  static auto real = next<void (*)(CUstream)>("mgpuStreamSynchronize");
  if (!state().redirect || stream != state().redirect)
    real(stream);
}

void mgpuStreamDestroy(CUstream stream) {
  static auto real = next<void (*)(CUstream)>("mgpuStreamDestroy");
  if (!state().redirect || stream != state().redirect)
    real(stream);
}

} // extern "C"
