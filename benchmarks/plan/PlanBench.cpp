//===- PlanBench.cpp - Host time of makePlan ------------------------------===//
//
// Times makePlan (validation, chunk search, work items, int workspace image)
// for decode and prefill batches of B in {1, 64, 1024} requests, H200-like
// device (132 SMs), 32 query / 8 KV heads, head_dim 128, page 16, with and
// without CUDA-graph mode, with and without the kv_indices check; then
// makeAutoCascadePlan (docs/auto-cascade.md) at B = 1024 with grouped
// sharing (64 groups of 16 requests, a 2048-token prefix per group, 100-1000
// unique tokens per request) and without sharing. Prints the median of 15
// repetitions, each the mean over enough iterations to run for ~20 ms.
//
// Usage: cascade-plan-bench [plain|auto] [ROW...]: `plain` / `auto` runs one
// table only; ROW words (decode, prefill, grouped, none) keep the auto rows
// whose label has all of them (for profiling one row; also graph, eager).
//
//===----------------------------------------------------------------------===//

#include "cascade/Runtime/AutoCascade.h"
#include "cascade/Runtime/Plan.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

using namespace cascade::runtime;

namespace {

struct Batch {
  std::vector<int32_t> qo, kv, last, indices;
  int64_t poolPages = -1; ///< -1: indices.size()
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

/// 64 groups of 16 requests: each group shares a 2048-token prefix (128
/// pages), each request has 100-1000 tokens of its own; page ids shuffled.
/// `shared` = false: the same lengths, nothing shared.
Batch makeGroupedBatch(bool shared, bool prefill, std::mt19937_64 &rng) {
  constexpr int kGroups = 64, kPerGroup = 16, kPrefixPages = 2048 / 16;
  Batch x;
  x.qo = {0};
  x.kv = {0};
  x.poolPages = 0;
  std::vector<int32_t> lens;
  int64_t total = 0;
  for (int g = 0; g < kGroups; ++g)
    for (int r = 0; r < kPerGroup; ++r) {
      int32_t tokens = 100 + static_cast<int32_t>(rng() % 901);
      lens.push_back(tokens);
      total += kPrefixPages + (tokens + 15) / 16;
    }
  std::vector<int32_t> ids(static_cast<size_t>(total));
  x.poolPages = total;
  for (size_t i = 0; i < ids.size(); ++i)
    ids[i] = static_cast<int32_t>(i);
  std::shuffle(ids.begin(), ids.end(), rng);
  size_t next = 0;
  for (int g = 0; g < kGroups; ++g) {
    std::vector<int32_t> prefix;
    if (shared) {
      prefix.assign(ids.begin() + next, ids.begin() + next + kPrefixPages);
      next += kPrefixPages;
    }
    for (int r = 0; r < kPerGroup; ++r) {
      const int32_t tokens = lens[g * kPerGroup + r];
      if (shared) {
        x.indices.insert(x.indices.end(), prefix.begin(), prefix.end());
      } else {
        x.indices.insert(x.indices.end(), ids.begin() + next,
                         ids.begin() + next + kPrefixPages);
        next += kPrefixPages;
      }
      const int32_t own = (tokens + 15) / 16;
      x.indices.insert(x.indices.end(), ids.begin() + next,
                       ids.begin() + next + own);
      next += own;
      x.kv.push_back(static_cast<int32_t>(x.indices.size()));
      x.qo.push_back(x.qo.back() +
                     (prefill ? 1 + static_cast<int32_t>(rng() % 32) : 1));
      x.last.push_back(tokens - (own - 1) * 16);
    }
  }
  return x;
}

template <typename F> double timeIt(F &&call) {
  using clock = std::chrono::steady_clock;
  int64_t iters = 1;
  for (;;) { // calibrate to ~20 ms
    auto t0 = clock::now();
    for (int64_t i = 0; i < iters; ++i)
      call();
    double s = std::chrono::duration<double>(clock::now() - t0).count();
    if (s > 0.02)
      break;
    iters *= 2;
  }
  std::vector<double> us;
  for (int rep = 0; rep < 15; ++rep) {
    auto t0 = clock::now();
    for (int64_t i = 0; i < iters; ++i)
      call();
    double s = std::chrono::duration<double>(clock::now() - t0).count();
    us.push_back(s * 1e6 / double(iters));
  }
  std::sort(us.begin(), us.end());
  return us[us.size() / 2];
}

double timePlan(const PlanInputs &in) {
  Plan plan;
  return timeIt([&] { (void)makePlan(in, plan); });
}

PlanInputs inputsOf(const Batch &x, bool prefill, bool graph) {
  PlanInputs in;
  in.mode = prefill ? PlanMode::Prefill : PlanMode::Decode;
  in.qo_indptr = prefill ? ArrayView<int32_t>(x.qo) : ArrayView<int32_t>();
  in.kv_indptr = ArrayView<int32_t>(x.kv);
  in.kv_last_page_len = ArrayView<int32_t>(x.last);
  in.kv_indices = ArrayView<int32_t>(x.indices);
  in.num_pages =
      x.poolPages >= 0 ? x.poolPages : static_cast<int64_t>(x.indices.size());
  in.num_qo_heads = 32;
  in.num_kv_heads = 8;
  in.head_dim = 128;
  in.page_size = 16;
  in.num_sms = 132;
  in.occupancy = 2;
  in.cuda_graph = graph;
  in.max_num_rows = x.qo.back();
  return in;
}

/// True if every word of `filter` occurs in `label`.
bool matches(const std::vector<std::string> &filter, const std::string &label) {
  for (const std::string &w : filter)
    if (label.find(w) == std::string::npos)
      return false;
  return true;
}

int autoCascadeRows(std::mt19937_64 &rng,
                    const std::vector<std::string> &filter) {
  std::printf("\nauto cascade, B = 1024 (64 groups of 16, prefix 2048, unique "
              "100-1000 tokens; or nothing shared)\n");
  std::printf("%-8s %-8s %-6s %10s %10s %7s %7s %12s\n", "mode", "sharing",
              "graph", "us/auto", "us/plain", "levels", "groups",
              "pages saved");
  for (bool prefill : {false, true})
    for (bool shared : {true, false})
      for (bool graph : {false, true}) {
        Batch x = makeGroupedBatch(shared, prefill, rng);
        const std::string label =
            std::string(prefill ? "prefill " : "decode ") +
            (shared ? "grouped " : "none ") + (graph ? "graph" : "eager");
        if (!matches(filter, label))
          continue;
        PlanInputs in = inputsOf(x, prefill, graph);
        AutoCascadeOptions opt;
        opt.max_levels = graph ? 2 : 3;
        opt.graph_group_capacity = 128;
        AutoCascade ac;
        Status s = makeAutoCascadePlan(in, opt, ac);
        if (!s.ok()) {
          std::fprintf(stderr, "auto cascade failed: %s\n",
                       s.message().c_str());
          return 1;
        }
        double us = timeIt([&] { (void)makeAutoCascadePlan(in, opt, ac); });
        double usPlain = timePlan(in);
        std::printf("%-8s %-8s %-6s %10.2f %10.2f %7lld %7lld %12lld\n",
                    prefill ? "prefill" : "decode", shared ? "grouped" : "none",
                    graph ? "yes" : "no", us, usPlain,
                    static_cast<long long>(ac.stats.num_levels),
                    static_cast<long long>(ac.stats.shared_groups),
                    static_cast<long long>(ac.stats.pages_saved));
      }
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  bool plain = true, autoRows = true;
  std::vector<std::string> filter;
  for (int a = 1; a < argc; ++a) {
    const std::string arg = argv[a];
    if (arg == "plain")
      autoRows = false;
    else if (arg == "auto")
      plain = false;
    else
      filter.push_back(arg);
  }
  std::mt19937_64 rng(42);
  if (plain)
    std::printf("%-8s %-6s %-6s %12s %14s %8s %8s\n", "mode", "B", "graph",
                "us/plan", "us(no ids)", "split", "padded");
  for (bool prefill : {false, true})
    for (int64_t b : {1, 64, 1024})
      for (bool graph : {false, true}) {
        Batch x = makeBatch(b, prefill, rng);
        if (!plain)
          continue;
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
  return autoRows ? autoCascadeRows(rng, filter) : 0;
}
