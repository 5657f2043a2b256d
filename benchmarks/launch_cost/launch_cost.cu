// Host cost of launching kernels on this machine (benchmarks/launch_cost):
// one cuLaunchKernel against the number of 8-byte parameters (1, 26, 82:
// the range of the runtime's kernels), and four launches issued one by one
// against one graph of four kernel nodes whose parameters are rewritten in
// place before each launch (what Program::run does).
//
//   nvcc -O2 -arch=sm_90 -o launch_cost launch_cost.cu -lcuda && ./launch_cost
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cuda.h>
#include <cuda_runtime.h>
#include <vector>

#define P(i) unsigned long long a##i
#define P10(x)                                                                 \
  P(x##0), P(x##1), P(x##2), P(x##3), P(x##4), P(x##5), P(x##6), P(x##7),      \
      P(x##8), P(x##9)

__global__ void k1(P(00)) {
  if (a00 == 12345)
    __trap();
}
__global__ void k26(P10(0), P10(1), P(20), P(21), P(22), P(23), P(24),
                    P(25)) {
  if (a00 == 12345)
    __trap();
}
__global__ void k82(P10(0), P10(1), P10(2), P10(3), P10(4), P10(5), P10(6),
                    P10(7), P(80), P(81)) {
  if (a00 == 12345)
    __trap();
}

using Clock = std::chrono::steady_clock;

template <typename F> static double medianMicros(F &&body, int n,
                                                 CUstream s) {
  std::vector<double> r;
  for (int rep = 0; rep < 7; ++rep) {
    cuStreamSynchronize(s);
    auto t0 = Clock::now();
    for (int i = 0; i < n; ++i)
      body(i);
    auto t1 = Clock::now();
    r.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count() /
                n);
  }
  cuStreamSynchronize(s);
  std::sort(r.begin(), r.end());
  return r[r.size() / 2];
}

int main() {
  cudaFree(nullptr); // creates the primary context
  CUstream s;
  cuStreamCreate(&s, CU_STREAM_NON_BLOCKING);
  CUfunction f1, f26, f82;
  cudaGetFuncBySymbol(reinterpret_cast<cudaFunction_t *>(&f1), (void *)k1);
  cudaGetFuncBySymbol(reinterpret_cast<cudaFunction_t *>(&f26), (void *)k26);
  cudaGetFuncBySymbol(reinterpret_cast<cudaFunction_t *>(&f82), (void *)k82);
  std::vector<unsigned long long> vals(82, 1);
  std::vector<void *> args(82);
  for (int i = 0; i < 82; ++i)
    args[i] = &vals[i];
  struct Row {
    const char *name;
    CUfunction f;
  } rows[] = {{"1 parameter", f1}, {"26 parameters", f26},
              {"82 parameters", f82}};
  for (const Row &row : rows) {
    auto launch = [&](int) {
      cuLaunchKernel(row.f, 132, 1, 1, 128, 1, 1, 0, s, args.data(), nullptr);
    };
    for (int i = 0; i < 100; ++i)
      launch(i);
    printf("cuLaunchKernel, %-40s %.2f us\n", row.name,
           medianMicros(launch, 500, s));
  }

  CUgraph g;
  cuGraphCreate(&g, 0);
  CUDA_KERNEL_NODE_PARAMS np{};
  np.func = f82;
  np.gridDimX = 132;
  np.gridDimY = np.gridDimZ = 1;
  np.blockDimX = 128;
  np.blockDimY = np.blockDimZ = 1;
  np.kernelParams = args.data();
  CUgraphNode nodes[4];
  for (int i = 0; i < 4; ++i)
    cuGraphAddKernelNode(&nodes[i], g, i ? &nodes[i - 1] : nullptr, i ? 1 : 0,
                         &np);
  CUgraphExec exec;
  if (cuGraphInstantiate(&exec, g, 0) != CUDA_SUCCESS) {
    printf("graph instantiation failed\n");
    return 1;
  }
  auto fourLaunches = [&](int) {
    for (int n = 0; n < 4; ++n)
      cuLaunchKernel(f82, 132, 1, 1, 128, 1, 1, 0, s, args.data(), nullptr);
  };
  auto updateAndLaunch = [&](int i) {
    vals[0] = i;
    for (int n = 0; n < 4; ++n)
      cuGraphExecKernelNodeSetParams(exec, nodes[n], &np);
    cuGraphLaunch(exec, s);
  };
  auto launchOnly = [&](int) { cuGraphLaunch(exec, s); };
  printf("4 x cuLaunchKernel (82 parameters)                        %.2f us\n",
         medianMicros(fourLaunches, 300, s));
  printf("graph of 4 nodes: 4 node updates + cuGraphLaunch          %.2f us\n",
         medianMicros(updateAndLaunch, 300, s));
  printf("graph of 4 nodes: cuGraphLaunch only                      %.2f us\n",
         medianMicros(launchOnly, 300, s));
  cuGraphExecDestroy(exec);
  cuGraphDestroy(g);
  cuStreamDestroy(s);
  return 0;
}
