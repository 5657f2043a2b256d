//===- AutoCascade.cpp - Cascades found in the page tables ----------------===//
//
// The sharing of a batch is the longest-common-prefix (LCP) interval tree of
// its requests' page-id sequences in batch order: h[i] = the pages requests
// i-1 and i have in common at their start (capped so that every request
// keeps its last page, and under causal masking every page its queries see
// in full); an interval [lb, rb] of requests with min h = l is a node that
// shares l pages. One pass compares neighbours (O(page ids)), one stack pass
// builds the tree (O(B)). Only neighbours are compared because a level's
// groups are contiguous query rows (docs/semantics.md): requests that share
// pages but are not adjacent cannot form a group without reordering rows.
// A selected node is a group of the level below its nearest selected
// ancestor and reads the pages between the ancestor's prefix and its own;
// docs/auto-cascade.md describes the cost model that selects.
//
//===----------------------------------------------------------------------===//

#include "cascade/Runtime/AutoCascade.h"

#include "PlanInternal.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#if (defined(__x86_64__) || defined(__i386__)) &&                              \
    (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#endif

namespace cascade::runtime {

namespace {

long long ll(int64_t v) { return static_cast<long long>(v); }

/// Common prefix length (in ids) of a[0..n) and b[0..n), portable: 64-bit
/// words (two ids) compared at a time.
int64_t commonPrefixGeneric(const int32_t *a, const int32_t *b, int64_t n) {
  int64_t i = 0;
  for (; i + 2 <= n; i += 2) {
    uint64_t x, y;
    std::memcpy(&x, a + i, 8);
    std::memcpy(&y, b + i, 8);
    if (x != y)
      break;
  }
  while (i < n && a[i] == b[i])
    ++i;
  return i;
}

#if (defined(__x86_64__) || defined(__i386__)) &&                              \
    (defined(__GNUC__) || defined(__clang__)) &&                               \
    !defined(CASCADE_NO_AVX2_DISPATCH)
#define CASCADE_AUTO_AVX2_PREFIX 1
/// The same with AVX2: 16 ids per step (two 8-id compares, one mask test),
/// the first mismatch found from the compare masks; no call per block.
__attribute__((target("avx2"))) int64_t
commonPrefixAvx2(const int32_t *a, const int32_t *b, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m256i a0 =
        _mm256_loadu_si256(reinterpret_cast<const __m256i *>(a + i));
    const __m256i b0 =
        _mm256_loadu_si256(reinterpret_cast<const __m256i *>(b + i));
    const __m256i a1 =
        _mm256_loadu_si256(reinterpret_cast<const __m256i *>(a + i + 8));
    const __m256i b1 =
        _mm256_loadu_si256(reinterpret_cast<const __m256i *>(b + i + 8));
    const uint32_t m0 = static_cast<uint32_t>(
        _mm256_movemask_ps(_mm256_castsi256_ps(_mm256_cmpeq_epi32(a0, b0))));
    const uint32_t m1 = static_cast<uint32_t>(
        _mm256_movemask_ps(_mm256_castsi256_ps(_mm256_cmpeq_epi32(a1, b1))));
    const uint32_t eq = m0 | (m1 << 8); // bit k: id i + k equal
    if (eq != 0xffffu)
      return i + __builtin_ctz(~eq);
  }
  for (; i + 8 <= n; i += 8) {
    const __m256i a0 =
        _mm256_loadu_si256(reinterpret_cast<const __m256i *>(a + i));
    const __m256i b0 =
        _mm256_loadu_si256(reinterpret_cast<const __m256i *>(b + i));
    const uint32_t eq = static_cast<uint32_t>(
        _mm256_movemask_ps(_mm256_castsi256_ps(_mm256_cmpeq_epi32(a0, b0))));
    if (eq != 0xffu)
      return i + __builtin_ctz(~eq);
  }
  while (i < n && a[i] == b[i])
    ++i;
  return i;
}
#endif

/// The last level's page ids: request i's ids from `skip[i]` on, at
/// dst + outIndptr[i] (portable: one memcpy per request).
void copyOwnIdsGeneric(const int32_t *ids, const int32_t *ip,
                       const int32_t *skip, const int32_t *outIndptr,
                       int32_t *dst, int64_t b) {
  for (int64_t i = 0; i < b; ++i)
    if (outIndptr[i + 1] > outIndptr[i])
      std::memcpy(dst + outIndptr[i], ids + ip[i] + skip[i],
                  sizeof(int32_t) *
                      static_cast<size_t>(outIndptr[i + 1] - outIndptr[i]));
}

#ifdef CASCADE_AUTO_AVX2_PREFIX
/// The same with AVX2, without a call per request: whole 8-id vectors,
/// the last one of a request spilling up to 7 ids past its end, which the
/// next request's ids then overwrite (`dst` has 8 ids of room after the
/// last request). A request whose source vector would read past the batch's
/// ids (`numIds`), the last ones, is copied exactly. Returns the largest id
/// copied, as unsigned (a negative id is >= 2^31), for the range check; the
/// spilled ids are ids of the batch too, so a bad one is a bad batch.
__attribute__((target("avx2"))) uint32_t
copyOwnIdsAvx2(const int32_t *ids, const int32_t *ip, const int32_t *skip,
               const int32_t *outIndptr, int32_t *dst, int64_t b,
               int64_t numIds) {
  __m256i vmax = _mm256_setzero_si256();
  uint32_t smax = 0;
  for (int64_t i = 0; i < b; ++i) {
    const int64_t n = int64_t(outIndptr[i + 1]) - outIndptr[i];
    const int32_t *src = ids + ip[i] + skip[i];
    int32_t *out = dst + outIndptr[i];
    if (int64_t(ip[i + 1]) + 8 <= numIds) {
      for (int64_t k = 0; k < n; k += 8) {
        const __m256i v =
            _mm256_loadu_si256(reinterpret_cast<const __m256i *>(src + k));
        _mm256_storeu_si256(reinterpret_cast<__m256i *>(out + k), v);
        vmax = _mm256_max_epu32(vmax, v);
      }
    } else {
      for (int64_t k = 0; k < n; ++k) {
        out[k] = src[k];
        const uint32_t x = static_cast<uint32_t>(src[k]);
        smax = x > smax ? x : smax;
      }
    }
  }
  alignas(32) uint32_t lanes[8];
  _mm256_store_si256(reinterpret_cast<__m256i *>(lanes), vmax);
  for (uint32_t x : lanes)
    smax = x > smax ? x : smax;
  return smax;
}
#endif

/// Common prefix length (in ids) of a[0..n) and b[0..n).
int64_t commonPrefix(const int32_t *a, const int32_t *b, int64_t n) {
#ifdef CASCADE_AUTO_AVX2_PREFIX
  static const bool avx2 = __builtin_cpu_supports("avx2");
  if (avx2)
    return commonPrefixAvx2(a, b, n);
#endif
  return commonPrefixGeneric(a, b, n);
}

struct Node {
  int32_t lcp = 0; ///< pages shared by requests lb..rb
  int32_t lb = 0, rb = 0;
  int32_t parent = -1; ///< -1 for the root
};

/// Per-node state of one selection pass.
struct Selection {
  std::vector<int32_t> level; ///< 0 = not selected, else shared level + 1
  std::vector<int32_t> start; ///< pages before this node's segment
  std::vector<double> benefitUs;
};

/// Per-thread scratch arrays and the spare result whose arrays the next
/// call reuses (fresh arrays of a few 100 KB cost page faults on first
/// touch, more than filling them).
struct Scratch {
  std::vector<int32_t> cap, stack, popped, order, consumed;
  std::vector<Node> nodes;
  std::vector<uint8_t> forbidden;
  Selection sel;
  std::vector<double> levelBenefit;
  std::vector<int64_t> levelGroups;
  std::vector<std::vector<int32_t>> levelNodes;
  std::vector<PlanInputs> levelInputs;
  AutoCascade spare;
};

Scratch &scratch() {
  static thread_local Scratch s;
  return s;
}

} // namespace

std::vector<PlanInputs> AutoCascade::inputs(const PlanInputs &common) const {
  std::vector<PlanInputs> result;
  result.reserve(levels.size());
  for (const AutoCascadeLevel &lv : levels) {
    PlanInputs p = common;
    p.mode = lv.mode;
    p.qo_indptr = lv.qo_indptr;
    p.kv_indptr = lv.kv_indptr;
    p.kv_indices = lv.kv_indices;
    p.kv_last_page_len = lv.kv_last_page_len;
    result.push_back(p);
  }
  return result;
}

namespace {

/// The options' own checks (after the batch's: a bad batch is reported
/// first, as by makePlan).
Status checkOptions(const AutoCascadeOptions &opt) {
  if (opt.max_levels < 1 || opt.max_levels > 16)
    return makeError(ErrorCode::InvalidArgument,
                     "auto cascade max_levels must be in [1, 16], got %lld",
                     ll(opt.max_levels));
  if (opt.graph_group_capacity < 0 || opt.graph_group_capacity > (1 << 30))
    return makeError(ErrorCode::InvalidArgument,
                     "auto cascade graph_group_capacity must be in [0, 2^30] "
                     "(0 = the batch size), got %lld",
                     ll(opt.graph_group_capacity));
  if (opt.shared_occupancy < 0 || opt.shared_occupancy > (1 << 12))
    return makeError(ErrorCode::InvalidArgument,
                     "auto cascade shared_occupancy must be in [0, 4096] "
                     "(0 = the batch's occupancy), got %lld",
                     ll(opt.shared_occupancy));
  if (opt.shared_qo_tile_size < 0 || opt.shared_qo_tile_size > 4096)
    return makeError(ErrorCode::InvalidArgument,
                     "auto cascade shared_qo_tile_size must be in [0, 4096] "
                     "(0 = automatic), got %lld",
                     ll(opt.shared_qo_tile_size));
  if (!(opt.bandwidth_bytes_per_us > 0) || !(opt.level_overhead_us >= 0) ||
      !(opt.group_overhead_us >= 0) || opt.bandwidth_bytes_per_us > 1e30 ||
      opt.level_overhead_us > 1e30 || opt.group_overhead_us > 1e30 ||
      std::isnan(opt.level_row_bytes) || opt.level_row_bytes > 1e30)
    return makeError(ErrorCode::InvalidArgument,
                     "auto cascade cost model: bandwidth must be positive and "
                     "the overheads non-negative (finite)");
  if (!(opt.l2_hidden_fraction >= 0) || opt.l2_hidden_fraction > 1e30)
    return makeError(ErrorCode::InvalidArgument,
                     "auto cascade l2_hidden_fraction must be non-negative "
                     "(finite), got %g",
                     opt.l2_hidden_fraction);
  return Status::success();
}

/// validatePlanInputs, in its order (so with its errors), except that the
/// page ids are range-checked on the levels' arrays once they are built
/// (each shared id once, not once per request; see checkLevelPageIds).
/// Whenever an error that makePlan reports after the page ids (or a bad
/// option) is returned instead, the full id check runs first, so that a bad
/// page id is reported as makePlan reports it.
Status validateAutoCascadeInputs(const PlanInputs &in,
                                 const AutoCascadeOptions &opt) {
  CASCADE_RETURN_IF_ERROR(detail::validateBeforePageIds(in));
  Status rest = detail::validateAfterPageIds(in);
  if (!rest.ok()) {
    CASCADE_RETURN_IF_ERROR(detail::checkPageIds(in));
    return rest;
  }
  if (!in.kv_indices.present())
    return makeError(ErrorCode::InvalidArgument,
                     "auto cascade needs kv_indices: the sharing is found by "
                     "comparing page ids");
  Status badOptions = checkOptions(opt);
  if (!badOptions.ok()) {
    CASCADE_RETURN_IF_ERROR(detail::checkPageIds(in));
    return badOptions;
  }
  return Status::success();
}

/// The (validated) batch as the stages below read it.
struct Batch {
  const PlanInputs &in;
  int64_t b;          ///< requests
  bool decode;        ///< one query row per request (no qo_indptr)
  int64_t page;       ///< page size
  const int32_t *ip;  ///< kv_indptr
  const int32_t *ids; ///< kv_indices

  explicit Batch(const PlanInputs &inputs)
      : in(inputs), b(inputs.kv_indptr.size() - 1),
        decode(inputs.mode == PlanMode::Decode), page(inputs.page_size),
        ip(inputs.kv_indptr.data()), ids(inputs.kv_indices.data()) {}

  /// The first query row of request i (i = b: the number of rows).
  int32_t qoBegin(int64_t i) const {
    return decode ? static_cast<int32_t>(i) : in.qo_indptr[i];
  }
};

/// Per request, the pages it may share: all but its last, and under causal
/// masking (prefill) only those every one of its queries sees in full.
void computeShareCaps(const Batch &bt, const AutoCascadeOptions &opt,
                      std::vector<int32_t> &cap) {
  const PlanInputs &in = bt.in;
  const int64_t page = bt.page;
  cap.resize(static_cast<size_t>(bt.b));
  // Pages of `visible` tokens by a shift where the page size is a power of
  // two (it nearly always is), not a division per request.
  const int pageShift =
      (page & (page - 1)) == 0
          ? __builtin_ctzll(static_cast<unsigned long long>(page))
          : -1;
  for (int64_t i = 0; i < bt.b; ++i) {
    const int64_t pages = int64_t(bt.ip[i + 1]) - bt.ip[i];
    int64_t c = pages > 0 ? pages - 1 : 0;
    if (opt.causal && !bt.decode && pages > 0) {
      const int64_t kvLen = (pages - 1) * page + in.kv_last_page_len[i];
      const int64_t qoLen = int64_t(in.qo_indptr[i + 1]) - in.qo_indptr[i];
      const int64_t visible = kvLen - qoLen + 1; // tokens every query sees
      c = std::min(c, visible <= 0     ? 0
                      : pageShift >= 0 ? visible >> pageShift
                                       : visible / page);
    }
    cap[i] = static_cast<int32_t>(c);
  }
}

/// The LCP interval tree of the batch's page ids, each request's prefix
/// capped at cap[i]: sc.nodes[0] is the root (lcp 0, every request),
/// sc.order lists the other nodes parents first. Both are empty when no
/// level may be shared (`maxShared` 0) or the batch has one request.
void buildLcpTree(const Batch &bt, int64_t maxShared, Scratch &sc) {
  const int64_t b = bt.b;
  const int32_t *ip = bt.ip;
  const int32_t *ids = bt.ids;
  const std::vector<int32_t> &cap = sc.cap;
  std::vector<Node> &nodes = sc.nodes;
  std::vector<int32_t> &order = sc.order;
  nodes.clear();
  order.clear();
  if (maxShared <= 0 || b <= 1)
    return;
  nodes.push_back({0, 0, static_cast<int32_t>(b - 1), -1});
  std::vector<int32_t> &stack = sc.stack;
  std::vector<int32_t> &popped = sc.popped;
  stack.assign(1, 0);
  popped.clear();
  for (int64_t i = 1; i <= b; ++i) {
    int32_t h = 0;
    if (i < b) {
      const int64_t m = std::min(cap[i - 1], cap[i]);
      if (m > 0 && ids[ip[i - 1]] == ids[ip[i]])
        h = static_cast<int32_t>(commonPrefix(ids + ip[i - 1], ids + ip[i], m));
    }
    int32_t lb = static_cast<int32_t>(i - 1);
    int32_t last = -1;
    while (h < nodes[stack.back()].lcp) {
      const int32_t n = stack.back();
      stack.pop_back();
      nodes[n].rb = static_cast<int32_t>(i - 1);
      lb = nodes[n].lb;
      popped.push_back(n);
      last = n;
      if (h <= nodes[stack.back()].lcp) {
        nodes[n].parent = stack.back();
        last = -1;
      }
    }
    if (h > nodes[stack.back()].lcp) {
      nodes.push_back({h, lb, 0, -1});
      stack.push_back(static_cast<int32_t>(nodes.size() - 1));
      if (last >= 0)
        nodes[last].parent = stack.back();
    }
  }
  order.assign(popped.rbegin(), popped.rend());
}

/// The cost model's constants for one batch (docs/auto-cascade.md).
struct CostModel {
  double pageBytes = 0;   ///< K and V of one page
  double bw = 0;          ///< bytes per microsecond
  double levelCostUs = 0; ///< one more level over the batch's rows
  /// What the first shared level must save beyond levelCostUs: the share
  /// of the saved traffic plain attention hides (l2_hidden_fraction).
  double hiddenUs = 0;
  double groupOverheadUs = 0;
  bool graph = false;    ///< CUDA-graph mode: groups per level capped
  int64_t capacity = 0;  ///< groups of a shared level in graph mode
  int64_t maxShared = 0; ///< shared levels at most
};

CostModel makeCostModel(const Batch &bt, const AutoCascadeOptions &opt) {
  const PlanInputs &in = bt.in;
  const double stateBytes =
      double(in.num_qo_heads) *
      (double(in.head_dim) * double(dtypeBytes(in.o_dtype)) + 4.0);
  const double rowBytes =
      opt.level_row_bytes < 0 ? 4.0 * stateBytes : opt.level_row_bytes;
  CostModel cm;
  cm.pageBytes = 2.0 * double(bt.page) * double(in.num_kv_heads) *
                 double(in.head_dim) * double(dtypeBytes(in.kv_dtype));
  cm.bw = opt.bandwidth_bytes_per_us;
  cm.levelCostUs =
      opt.level_overhead_us + double(bt.qoBegin(bt.b)) * rowBytes / cm.bw;
  cm.groupOverheadUs = opt.group_overhead_us;
  cm.graph = in.cuda_graph;
  cm.capacity = opt.graph_group_capacity ? opt.graph_group_capacity
                                         : std::max<int64_t>(bt.b, 1);
  cm.maxShared = opt.max_levels - 1;
  return cm;
}

/// The time of the re-reads that plain attention hides behind the pages it
/// streams from HBM (CostModel::hiddenUs): l2_hidden_fraction of the
/// batch's unique bytes, every page once (pages_in less every node's
/// re-reads).
double hiddenReadsUs(const Batch &bt, const CostModel &cm,
                     const AutoCascadeOptions &opt, const Scratch &sc) {
  if (opt.l2_hidden_fraction == 0)
    return 0;
  int64_t rereads = 0;
  for (int32_t n : sc.order) {
    const Node &nd = sc.nodes[n];
    const int32_t above = nd.parent >= 0 ? sc.nodes[nd.parent].lcp : 0;
    rereads += (int64_t(nd.rb) - nd.lb) * (int64_t(nd.lcp) - above);
  }
  const double own = double(int64_t(bt.ip[bt.b]) - rereads) * cm.pageBytes;
  return opt.l2_hidden_fraction * own / cm.bw;
}

/// One greedy top-down pass over the tree: a node that is not forbidden,
/// lies above the level limit and saves more than a group costs becomes a
/// group of the level below its nearest selected ancestor. Fills sc.sel,
/// and per shared level (1-based) sc.levelBenefit and sc.levelNodes.
void assignLevels(const CostModel &cm, Scratch &sc) {
  const std::vector<Node> &nodes = sc.nodes;
  const std::vector<uint8_t> &forbidden = sc.forbidden;
  Selection &sel = sc.sel;
  std::vector<double> &levelBenefit = sc.levelBenefit;
  std::vector<std::vector<int32_t>> &levelNodes = sc.levelNodes;
  const int64_t maxShared = cm.maxShared;
  levelBenefit.assign(static_cast<size_t>(maxShared + 1), 0);
  sc.levelGroups.assign(static_cast<size_t>(maxShared + 1), 0);
  if (levelNodes.size() < static_cast<size_t>(maxShared + 1))
    levelNodes.resize(static_cast<size_t>(maxShared + 1));
  for (std::vector<int32_t> &ln : levelNodes)
    ln.clear();
  for (int32_t n : sc.order) {
    const Node &nd = nodes[n];
    const int32_t p = nd.parent;
    // Nearest selected ancestor: the parent if selected, else the
    // parent's own nearest selected ancestor (kept in start/level).
    int32_t ancLevel, ancEnd;
    if (p <= 0) {
      ancLevel = 0;
      ancEnd = 0;
    } else if (sel.level[p] > 0) {
      ancLevel = sel.level[p];
      ancEnd = nodes[p].lcp;
    } else {
      ancLevel = sel.level[p] < 0 ? -sel.level[p] - 1 : 0;
      ancEnd = sel.start[p];
    }
    const int64_t members = int64_t(nd.rb) - nd.lb + 1;
    const int64_t seg = int64_t(nd.lcp) - ancEnd;
    const double benefit =
        double(members - 1) * double(seg) * cm.pageBytes / cm.bw;
    sel.start[n] = ancEnd;
    sel.benefitUs[n] = benefit;
    if (!forbidden[n] && ancLevel < maxShared && seg > 0 &&
        benefit > cm.groupOverheadUs) {
      sel.level[n] = ancLevel + 1;
      levelBenefit[ancLevel + 1] += benefit - cm.groupOverheadUs;
      levelNodes[ancLevel + 1].push_back(n);
    } else {
      // Not selected: remember the ancestor's level (encoded negative)
      // and end (in start) for the children.
      sel.level[n] = -(ancLevel + 1);
    }
  }
}

/// After assignLevels: sorts each level's nodes by first request, counts
/// its groups (gaps included) into sc.levelGroups, and returns the number
/// of shared levels in use. `worst` is set to the level whose benefit
/// covers the least of its cost when that is under its cost, else -1.
int64_t countLevelGroups(const CostModel &cm, int64_t b, Scratch &sc,
                         int64_t &worst) {
  const std::vector<Node> &nodes = sc.nodes;
  int64_t numShared = 0;
  worst = -1;
  double worstRatio = 1.0;
  for (int64_t l = 1; l <= cm.maxShared; ++l) {
    std::vector<int32_t> &ln = sc.levelNodes[l];
    if (ln.empty())
      break;
    std::sort(ln.begin(), ln.end(),
              [&](int32_t x, int32_t y) { return nodes[x].lb < nodes[y].lb; });
    int64_t groups = 0, cur = 0;
    for (int32_t n : ln) {
      groups += (nodes[n].lb > cur) + 1;
      cur = nodes[n].rb + 1;
    }
    groups += cur < b;
    sc.levelGroups[l] = groups;
    numShared = l;
    const double ratio =
        sc.levelBenefit[l] / (cm.levelCostUs + (l == 1 ? cm.hiddenUs : 0));
    if (ratio < worstRatio) {
      worstRatio = ratio;
      worst = l;
    }
  }
  return numShared;
}

/// Graph mode: forbids the smallest groups of the first shared level with
/// more groups than the capacity. Returns whether one was over.
bool forbidOverCapacity(const CostModel &cm, int64_t numShared, Scratch &sc) {
  const Selection &sel = sc.sel;
  for (int64_t l = 1; l <= numShared; ++l) {
    if (sc.levelGroups[l] <= cm.capacity)
      continue;
    std::vector<int32_t> &ln = sc.levelNodes[l];
    std::sort(ln.begin(), ln.end(), [&](int32_t x, int32_t y) {
      return sel.benefitUs[x] < sel.benefitUs[y];
    });
    const int64_t drop = std::min<int64_t>(
        int64_t(ln.size()),
        std::max<int64_t>(1, sc.levelGroups[l] - cm.capacity));
    for (int64_t k = 0; k < drop; ++k)
      sc.forbidden[ln[k]] = 1;
    return true;
  }
  return false;
}

/// Selection: greedy top-down, then drop whole levels that do not pay (and
/// in graph mode the smallest groups of a level over its capacity) until
/// the selection is stable. Every round forbids at least one node. Leaves
/// the selection in sc.sel and returns the number of shared levels.
int64_t selectLevels(const CostModel &cm, int64_t b, Scratch &sc) {
  const size_t numNodes = sc.nodes.size();
  sc.forbidden.assign(numNodes, 0);
  sc.sel.level.assign(numNodes, 0);
  sc.sel.start.assign(numNodes, 0);
  sc.sel.benefitUs.assign(numNodes, 0);
  for (;;) {
    assignLevels(cm, sc);
    int64_t worst = -1;
    const int64_t numShared = countLevelGroups(cm, b, sc, worst);
    if (worst > 0) {
      for (int32_t n : sc.levelNodes[worst])
        sc.forbidden[n] = 1;
      continue;
    }
    if (!cm.graph || !forbidOverCapacity(cm, numShared, sc))
      return numShared;
  }
}

/// Sorts the selected nodes into sc.levelNodes by shared level (0-based,
/// `levelsOut` lists), marks the pages they consume of each request in
/// sc.consumed, and adds their benefit and overhead to `st`.
void collectSelected(const Batch &bt, const CostModel &cm, int64_t levelsOut,
                     Scratch &sc, AutoCascadeStats &st) {
  const std::vector<Node> &nodes = sc.nodes;
  const Selection &sel = sc.sel;
  std::vector<int32_t> &consumed = sc.consumed;
  consumed.assign(static_cast<size_t>(bt.b), 0);
  // Selected nodes per shared level (reusing the selection's lists).
  std::vector<std::vector<int32_t>> &perLevel = sc.levelNodes;
  if (perLevel.size() < static_cast<size_t>(levelsOut))
    perLevel.resize(static_cast<size_t>(levelsOut));
  for (std::vector<int32_t> &ln : perLevel)
    ln.clear();
  for (int32_t n : sc.order)
    if (sel.level[n] > 0) {
      perLevel[sel.level[n] - 1].push_back(n);
      std::fill(consumed.begin() + nodes[n].lb,
                consumed.begin() + nodes[n].rb + 1, nodes[n].lcp);
      st.saved_us += sel.benefitUs[n];
      st.overhead_us += cm.groupOverheadUs;
      ++st.shared_groups;
    }
}

/// One shared level's arrays: a group per selected node `ln` (a prefill
/// group of its requests' rows reading its segment of pages), groups of no
/// pages over the rows in between, and in graph mode empty groups up to
/// the capacity.
void emitSharedLevel(const Batch &bt, const CostModel &cm,
                     const std::vector<Node> &nodes, const Selection &sel,
                     std::vector<int32_t> &ln, AutoCascadeLevel &lv) {
  const int64_t b = bt.b;
  lv.mode = PlanMode::Prefill;
  std::sort(ln.begin(), ln.end(),
            [&](int32_t x, int32_t y) { return nodes[x].lb < nodes[y].lb; });
  std::vector<int32_t> &qo = lv.qoStorage, &kvp = lv.kvIndptrStorage,
                       &idx = lv.kvIndicesStorage, &last = lv.lastStorage;
  qo.assign(1, 0);
  kvp.assign(1, 0);
  idx.clear();
  last.clear();
  auto gap = [&](int64_t end) {
    qo.push_back(bt.qoBegin(end));
    kvp.push_back(kvp.back());
    last.push_back(static_cast<int32_t>(bt.page));
  };
  int64_t cur = 0;
  for (int32_t n : ln) {
    const Node &nd = nodes[n];
    if (nd.lb > cur)
      gap(nd.lb);
    const int32_t *src = bt.ids + bt.ip[nd.lb];
    idx.insert(idx.end(), src + sel.start[n], src + nd.lcp);
    qo.push_back(bt.qoBegin(int64_t(nd.rb) + 1));
    kvp.push_back(static_cast<int32_t>(idx.size()));
    last.push_back(static_cast<int32_t>(bt.page));
    cur = nd.rb + 1;
  }
  if (cur < b || qo.size() == 1)
    gap(b);
  if (cm.graph)
    while (int64_t(last.size()) < cm.capacity)
      gap(b);
  lv.num_page_groups = static_cast<int64_t>(ln.size());
  lv.qo_indptr = ArrayView<int32_t>(qo);
  lv.kv_indptr = ArrayView<int32_t>(kvp);
  lv.kv_indices = ArrayView<int32_t>(idx);
  lv.kv_last_page_len = ArrayView<int32_t>(last);
}

/// Whether the last level's page ids were range-checked while they were
/// copied (`checked`), and if so the outcome (`ok`).
struct OwnIdsCheck {
  bool checked = false;
  bool ok = false;
};

/// The last level: every request's own pages (those after `consumed[i]`).
/// Its qo_indptr and kv_last_page_len are the batch's; so are its page
/// arrays when nothing is shared (`shared` false).
OwnIdsCheck emitOwnLevel(const Batch &bt, const std::vector<int32_t> &consumed,
                         bool shared, AutoCascadeLevel &own) {
  const PlanInputs &in = bt.in;
  const int64_t b = bt.b;
  const int32_t *ip = bt.ip;
  OwnIdsCheck check;
  own.mode = in.mode;
  own.qo_indptr = in.qo_indptr;
  own.kv_last_page_len = in.kv_last_page_len;
  own.num_page_groups = b;
  if (!shared) {
    own.kv_indptr = in.kv_indptr;
    own.kv_indices = in.usedKvIndices(); // not a preallocated buffer's tail
    return check;
  }
  std::vector<int32_t> &kvp = own.kvIndptrStorage;
  std::vector<int32_t> &idx = own.kvIndicesStorage;
  kvp.resize(static_cast<size_t>(b + 1));
  int32_t *const kvpOut = kvp.data();
  kvpOut[0] = 0;
  for (int64_t i = 0; i < b; ++i)
    kvpOut[i + 1] = kvpOut[i] + (ip[i + 1] - ip[i] - consumed[i]);
  // Sized first (8 ids of room for the vector copy), then every id
  // written once: resize keeps the reused array's old contents instead of
  // clearing it.
  const int64_t total = kvpOut[b];
  idx.resize(static_cast<size_t>(total + 8));
#ifdef CASCADE_AUTO_AVX2_PREFIX
  static const bool avx2 = __builtin_cpu_supports("avx2");
  if (avx2) {
    const uint32_t maxId = copyOwnIdsAvx2(bt.ids, ip, consumed.data(), kvpOut,
                                          idx.data(), b, ip[b]);
    // In range iff the largest is (one id of that value stands for all).
    const int32_t probe = static_cast<int32_t>(maxId);
    check.checked = true;
    check.ok = total == 0 || detail::pageIdsInRange(&probe, 1, in.num_pages);
  } else
#endif
    copyOwnIdsGeneric(bt.ids, ip, consumed.data(), kvpOut, idx.data(), b);
  idx.resize(static_cast<size_t>(total));
  own.kv_indptr = ArrayView<int32_t>(kvp);
  own.kv_indices = ArrayView<int32_t>(idx);
  return check;
}

/// The page-id range check. Every id of request i is in some level's
/// kv_indices (its ancestors' segments, then its own pages: that is what
/// makes the cascade exact), so scanning the levels' arrays, contiguous and
/// just written, checks every id of the batch while reading each shared id
/// once instead of once per request. Nothing before depends on the values
/// being in range. (The last level's own ids were checked while they were
/// copied, where that copy is vectorized: `own`.)
bool levelPageIdsInRange(const AutoCascade &res, OwnIdsCheck own,
                         int64_t numPages) {
  bool idsOk = !own.checked || own.ok;
  for (size_t l = 0; idsOk && l < res.levels.size(); ++l)
    if (l + 1 < res.levels.size() || !own.checked)
      idsOk = detail::pageIdsInRange(res.levels[l].kv_indices.data(),
                                     res.levels[l].kv_indices.size(), numPages);
  return idsOk;
}

/// Plans every level, in place into `res.plan`. The levels are valid by
/// construction (sub-ranges of requests that passed the checks, groups of
/// whole pages, the batch's rows and scalars, a query tile checked with the
/// options), so they are not validated again; the plans do not depend on
/// the page ids. Adds every level's page reads to res.stats.pages_read.
Status planLevels(const PlanInputs &in, const AutoCascadeOptions &opt,
                  std::vector<PlanInputs> &levelInputs, AutoCascade &res) {
  levelInputs.resize(res.levels.size());
  for (size_t l = 0; l < levelInputs.size(); ++l) {
    const AutoCascadeLevel &lv = res.levels[l];
    PlanInputs &p = levelInputs[l];
    p = in;
    p.mode = lv.mode;
    p.qo_indptr = lv.qo_indptr;
    p.kv_indptr = lv.kv_indptr;
    p.kv_indices = ArrayView<int32_t>();
    p.kv_last_page_len = lv.kv_last_page_len;
    if (l + 1 < levelInputs.size()) {
      p.qo_tile_size = opt.shared_qo_tile_size;
      if (opt.shared_occupancy > 0)
        p.occupancy = opt.shared_occupancy;
    }
    res.stats.pages_read += lv.kv_indptr[lv.kv_indptr.size() - 1];
  }
  return detail::cascadePlanValidated(levelInputs.data(), levelInputs.size(),
                                      res.plan);
}

} // namespace

Status makeAutoCascadePlan(const PlanInputs &in, const AutoCascadeOptions &opt,
                           AutoCascade &out) {
  CASCADE_RETURN_IF_ERROR(validateAutoCascadeInputs(in, opt));
  const Batch bt(in);
  const int64_t b = bt.b;
  Scratch &sc = scratch();

  // Find the sharing, then keep what pays.
  computeShareCaps(bt, opt, sc.cap);
  CostModel cm = makeCostModel(bt, opt);
  buildLcpTree(bt, cm.maxShared, sc);
  cm.hiddenUs = hiddenReadsUs(bt, cm, opt, sc);
  const int64_t numShared = selectLevels(cm, b, sc);

  // Emit the levels into the spare result's arrays.
  AutoCascade res = std::move(sc.spare);
  res.stats = AutoCascadeStats();
  AutoCascadeStats &st = res.stats;
  st.pages_in = bt.ip[b];
  st.candidate_groups = static_cast<int64_t>(sc.order.size());
  const int64_t levelsOut = cm.graph ? opt.max_levels : numShared + 1;
  res.levels.resize(static_cast<size_t>(levelsOut));
  collectSelected(bt, cm, levelsOut, sc, st);
  for (int64_t l = 0; l + 1 < levelsOut; ++l) {
    emitSharedLevel(bt, cm, sc.nodes, sc.sel, sc.levelNodes[l], res.levels[l]);
    st.overhead_us += cm.levelCostUs + (l == 0 ? cm.hiddenUs : 0);
  }
  const OwnIdsCheck own =
      emitOwnLevel(bt, sc.consumed, st.shared_groups != 0, res.levels.back());

  // On a bad page id the batch is scanned again in order for makePlan's
  // message (the first bad id).
  if (!levelPageIdsInRange(res, own, in.num_pages)) {
    sc.spare = std::move(res);
    return detail::checkPageIds(in);
  }

  // Plan every level, in place into the spare result's plan.
  Status s = planLevels(in, opt, sc.levelInputs, res);
  if (!s.ok()) {
    sc.spare = std::move(res);
    return s;
  }
  st.num_levels = levelsOut;
  st.shared_levels = levelsOut - 1;
  st.pages_saved = st.pages_in - st.pages_read;
  std::swap(out, res);
  sc.spare = std::move(res);
  return Status::success();
}

} // namespace cascade::runtime
