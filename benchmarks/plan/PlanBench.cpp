//===- PlanBench.cpp - Host time of makePlan ------------------------------===//
//
// Times makePlan (validation, chunk search, work items, int workspace image)
// for decode and prefill batches of B in {1, 64, 1024} requests, H200-like
// device (132 SMs), 32 query / 8 KV heads, head_dim 128, page 16, with and
// without CUDA-graph mode, with and without the kv_indices check. Prints the
// median of 15 repetitions, each the mean over enough iterations to run for ~20
// ms.
//
//===----------------------------------------------------------------------===//

#include "cascade/Runtime/Plan.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>
#include <vector>

using namespace cascade::runtime;

namespace {

struct Batch {
  std::vector<int32_t> qo, kv, last, indices;
};

Batch makeBatch(int64_t b, bool prefill, std::mt19937_64 &rng) {
  Batch x;
  x.qo = {0};
  x.kv = {0};
  for (int64_t i = 0; i < b; ++i) {
    int32_t pages =
        1 + static_cast<int32_t>(rng() % 256); // up to 4K tokens of KV
    int32_t q = prefill ? 1 + static_cast<int32_t>(rng() % 32) : 1;
    x.kv.push_back(x.kv.back() + pages);
    x.qo.push_back(x.qo.back() + q);
    x.last.push_back(1 + static_cast<int32_t>(rng() % 16));
  }
  x.indices.resize(x.kv.back());
  for (size_t i = 0; i < x.indices.size(); ++i)
    x.indices[i] = static_cast<int32_t>(i);
  return x;
}

double timePlan(const PlanInputs &in) {
  using clock = std::chrono::steady_clock;
  Plan plan;
  int64_t iters = 1;
  for (;;) { // calibrate to ~20 ms
    auto t0 = clock::now();
    for (int64_t i = 0; i < iters; ++i)
      (void)makePlan(in, plan);
    double s = std::chrono::duration<double>(clock::now() - t0).count();
    if (s > 0.02)
      break;
    iters *= 2;
  }
  std::vector<double> us;
  for (int rep = 0; rep < 15; ++rep) {
    auto t0 = clock::now();
    for (int64_t i = 0; i < iters; ++i)
      (void)makePlan(in, plan);
    double s = std::chrono::duration<double>(clock::now() - t0).count();
    us.push_back(s * 1e6 / double(iters));
  }
  std::sort(us.begin(), us.end());
  return us[us.size() / 2];
}

} // namespace

int main() {
  std::mt19937_64 rng(42);
  std::printf("%-8s %-6s %-6s %12s %14s %8s %8s\n", "mode", "B", "graph",
              "us/plan", "us(no ids)", "split", "padded");
  for (bool prefill : {false, true})
    for (int64_t b : {1, 64, 1024})
      for (bool graph : {false, true}) {
        Batch x = makeBatch(b, prefill, rng);
        PlanInputs in;
        in.mode = prefill ? PlanMode::Prefill : PlanMode::Decode;
        in.qo_indptr =
            prefill ? ArrayView<int32_t>(x.qo) : ArrayView<int32_t>();
        in.kv_indptr = ArrayView<int32_t>(x.kv);
        in.kv_last_page_len = ArrayView<int32_t>(x.last);
        in.kv_indices = ArrayView<int32_t>(x.indices);
        in.num_pages = static_cast<int64_t>(x.indices.size());
        in.num_qo_heads = 32;
        in.num_kv_heads = 8;
        in.head_dim = 128;
        in.page_size = 16;
        in.num_sms = 132;
        in.occupancy = 2;
        in.cuda_graph = graph;
        in.max_num_rows = x.qo.back();
        Plan p;
        Status s = makePlan(in, p);
        if (!s.ok()) {
          std::fprintf(stderr, "plan failed: %s\n", s.message().c_str());
          return 1;
        }
        double us = timePlan(in);
        PlanInputs noIds = in;
        noIds.kv_indices = ArrayView<int32_t>();
        double usNoIds = timePlan(noIds);
        std::printf("%-8s %-6lld %-6s %12.2f %14.2f %8s %8lld\n",
                    prefill ? "prefill" : "decode", static_cast<long long>(b),
                    graph ? "yes" : "no", us, usNoIds,
                    p.split_kv ? "yes" : "no",
                    static_cast<long long>(p.padded_batch_size));
      }
  return 0;
}
