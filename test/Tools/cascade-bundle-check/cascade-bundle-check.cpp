//===- cascade-bundle-check.cpp - Load and bind a bundle on the CPU -------===//
//
// Usage: cascade-bundle-check BUNDLE_DIR BATCH.json
//
// The compiler/runtime contract without a GPU: loads a kernel bundle that
// cascade-opt emitted (loadBundle: manifest + PTX), plans the batch
// description (docs/plan-schema.md) and binds every kernel of the bundle
// with the runtime's binding code (addPlanBindings + bindKernel), with user
// buffers named and typed as docs/kernel-bundle.md says the runtime and the
// GPU checks bind them. Checks that each kernel's statics agree with the
// batch. Prints one line per kernel (grid, block, parameter slots) and exits
// 1 if anything fails.
//
//===----------------------------------------------------------------------===//

#include "cascade/Runtime/Manifest.h"
#include "cascade/Runtime/PlanJson.h"

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

using namespace cascade::runtime;

namespace {

int failures = 0;

void fail(const std::string &what) {
  std::printf("FAIL %s\n", what.c_str());
  ++failures;
}

/// Fake device addresses: distinct, aligned, never dereferenced.
uint64_t nextAddress() {
  static uint64_t next = 0x7f0000000000ull;
  next += 1ull << 32;
  return next;
}

/// The plan a kernel runs with: the first level of its mode (merges use
/// level 0).
const Plan &planFor(const KernelSpec &k, const CascadePlan &plan) {
  const bool decode = k.op == "decode" || k.op == "decode_split";
  const bool prefill = k.op == "prefill" || k.op == "prefill_split";
  for (const Plan &p : plan.levels)
    if ((decode && p.mode == PlanMode::Decode) ||
        (prefill && p.mode == PlanMode::Prefill))
      return p;
  return plan.levels[0];
}

/// Static `key`, if the kernel has it, must equal `value`.
void checkStatic(const KernelSpec &k, const char *key, int64_t value) {
  const std::string s = k.staticString(key);
  if (!s.empty() && s != std::to_string(value))
    fail(k.name + ": static " + key + " = " + s + " but the batch has " +
         std::to_string(value));
}

void bindOne(const KernelSpec &k, const CascadePlan &plan,
             const BatchDescription &d) {
  const Plan &p = planFor(k, plan);
  checkStatic(k, "head_dim", p.head_dim);
  checkStatic(k, "page_size", p.page_size);
  checkStatic(k, "num_qo_heads", p.num_qo_heads);
  checkStatic(k, "num_kv_heads", p.num_kv_heads);
  checkStatic(k, "gqa_group_size", p.gqa_group_size);

  ArgumentTable t;
  addPlanBindings(t, p, nextAddress(), nextAddress());
  const int64_t rows = p.num_rows, hqo = p.num_qo_heads, dim = p.head_dim;
  const int64_t b = p.batch_size;
  size_t level = static_cast<size_t>(&p - plan.levels.data());
  const BatchDescription::Level &lv = d.levels[level];
  const int64_t pages = lv.kvIndptr.empty() ? 0 : lv.kvIndptr.back();
  const int64_t poolPages =
      d.common.num_pages > 0 ? d.common.num_pages : std::max<int64_t>(pages, 1);
  const int64_t pageElems = p.page_size * p.num_kv_heads * dim;
  const std::string vt = k.staticString("v_dtype");
  const std::string qt = k.staticString("q_dtype"),
                    kvt = k.staticString("kv_dtype"),
                    ot = k.staticString("o_dtype");
  // Attention.
  t.setBuffer("q", nextAddress(), rows * hqo * dim, qt);
  t.setBuffer("kv_cache", nextAddress(), poolPages * 2 * pageElems, kvt);
  t.setBuffer("k_cache", nextAddress(), poolPages * pageElems, kvt);
  t.setBuffer("v_cache", nextAddress(), poolPages * pageElems, kvt);
  t.setBuffer("qo_indptr", nextAddress(), b + 1, "i32");
  t.setBuffer("kv_indptr", nextAddress(), b + 1, "i32");
  t.setBuffer("kv_indices", nextAddress(), pages, "i32");
  t.setBuffer("kv_last_page_len", nextAddress(), b, "i32");
  t.setBuffer("o", nextAddress(), rows * hqo * dim, ot.empty() ? vt : ot);
  t.setBuffer("lse", nextAddress(), rows * hqo, "f32");
  t.setFloat("sm_scale", 0.125);
  t.setFloat("logits_soft_cap", 0);
  t.setInt("window_left", -1);
  t.setFloat("rope_scale", 1);
  t.setFloat("rope_theta", 1e4);
  // Merges: (rows, heads) states; merge_states merges two per row.
  const int64_t states = 2;
  for (const char *v : {"v_a", "v_b", "v", "v_other"})
    t.setBuffer(v, nextAddress(), rows * hqo * dim, vt);
  for (const char *s : {"s_a", "s_b", "s", "s_other"})
    t.setBuffer(s, nextAddress(), rows * hqo, "f32");
  t.setBuffer("v_in", nextAddress(), rows * states * hqo * dim, vt);
  t.setBuffer("s_in", nextAddress(), rows * states * hqo, "f32");
  t.setBuffer("mask", nextAddress(), rows, "u8");
  t.setInt("mask_stride", 1);
  t.setInt("num_heads", hqo);
  t.setInt("num_states", states);
  t.setInt("num_tasks", rows * hqo);

  KernelLaunch l;
  Status s = bindKernel(k, t, l);
  if (!s.ok()) {
    fail(k.name + ": " + s.message());
    return;
  }
  if (static_cast<int64_t>(l.slots.size()) != k.numPtxParams())
    fail(k.name + ": " + std::to_string(l.slots.size()) + " slots for " +
         std::to_string(k.numPtxParams()) + " PTX params");
  std::printf("%s (%s, level %zu): grid [%u, %u, %u] block [%u, %u, %u] "
              "smem %u slots %zu\n",
              k.name.c_str(), k.op.c_str(), level, l.grid[0], l.grid[1],
              l.grid[2], l.block[0], l.block[1], l.block[2], l.sharedBytes,
              l.slots.size());
}

} // namespace

int main(int argc, char **argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: cascade-bundle-check BUNDLE_DIR BATCH.json\n");
    return 2;
  }
  Bundle bundle;
  Status s = loadBundle(argv[1], bundle);
  if (!s.ok()) {
    std::printf("FAIL loading %s: %s\n", argv[1], s.message().c_str());
    return 1;
  }
  std::string text;
  BatchDescription d;
  CascadePlan plan;
  s = readFile(argv[2], text);
  if (s.ok())
    s = parseBatchDescription(text, d);
  if (s.ok())
    s = makeCascadePlan(d.inputs(), plan);
  if (!s.ok()) {
    std::printf("FAIL planning %s: %s\n", argv[2], s.message().c_str());
    return 1;
  }
  std::printf("bundle %s: %zu kernels, chip %s\n", argv[1],
              bundle.kernels.size(), bundle.chip.c_str());
  for (size_t l = 0; l < plan.levels.size(); ++l) {
    const Plan &p = plan.levels[l];
    std::printf("level %zu: %s, batch %lld, rows %lld, split_kv %s\n", l,
                p.mode == PlanMode::Decode ? "decode" : "prefill",
                static_cast<long long>(p.batch_size),
                static_cast<long long>(p.num_rows),
                p.split_kv ? "true" : "false");
  }
  for (const KernelSpec &k : bundle.kernels)
    bindOne(k, plan, d);
  std::printf("%zu kernels bound, %d failures\n", bundle.kernels.size(),
              failures);
  return failures ? 1 : 0;
}
