//===- KernelSpec.h - What a cascade kernel is specialised on ---*- C++ -*-===//
//
// A kernel spec is the static configuration of a cascade op (shapes, dtypes,
// layout, options) together with its #cascade.kernel_config: everything the
// generated kernel depends on. Specs compare by value (that is how kernels
// are deduplicated), name their kernel (a spelled-out, stable key: no
// hashes), and define the kernel's parameters, manifest entry and launch
// geometry, which the kernel generators and the host-side launch lowering
// share.
//
//===----------------------------------------------------------------------===//

#ifndef CASCADE_LIB_CONVERSION_CASCADETOGPU_KERNELSPEC_H
#define CASCADE_LIB_CONVERSION_CASCADETOGPU_KERNELSPEC_H

#include "FamilyTraits.h"
#include "common/KernelSupport.h"

#include "cascade/Dialect/Cascade/IR/AttentionOptions.h"
#include "cascade/Dialect/Cascade/IR/CascadeOps.h"

#include "llvm/ADT/DenseMap.h"

#include <optional>

namespace mlir {
namespace cascade {

/// The four merge kernels.
enum class MergeKind {
  Pair,    ///< merge_state
  InPlace, ///< merge_state_in_place
  States,  ///< merge_states
  Indptr,  ///< the partial states of a split-KV level, rows from an indptr
};

struct MergeSpec {
  MergeKind kind = MergeKind::Pair;
  int64_t headDim = 0;
  Type vType;
  bool baseE = false;
  /// InPlace: the mask's element type (null without a mask).
  Type maskType;
  /// Indptr: query heads, the indptr's name (`o_indptr` for decode,
  /// `merge_indptr` for prefill) and whether the result is merged into the
  /// state the outputs hold (a fused cascade level).
  int64_t numHeads = 0;
  std::string indptr;
  bool accumulate = false;
  /// Indptr: the level's state inputs (common/StateInputs.h), folded into
  /// each merged state (a parameter of each name, f32 [numHeads]).
  SmallVector<StringRef, 1> stateInputs;
  KernelConfigAttr config;

  bool operator==(const MergeSpec &o) const;
  /// Indptr: one state per query row (prefill), bounded by qo_indptr.
  bool byRow() const { return indptr == "merge_indptr"; }
  StringRef opName() const;
  std::string name() const;
  SmallVector<KernelParam> params(MLIRContext *ctx) const;
  SmallVector<NamedAttribute> statics(Builder &b) const;
  SmallVector<StringRef> planArrays() const;
  /// States merged per block and threads per state.
  int64_t statesPerBlock() const { return config.getQTile(); }
  int64_t threadsPerState() const { return headDim / 8; }
  /// The grid is (ceil(gridParam * gridMul / statesPerBlock) + gridAdd, 1,
  /// 1). A decode's split merge adds a block per partial row the plan holds
  /// room for (partial_rows_capacity: CUDA-graph stable): the kernel spreads
  /// each state's chunks over the spare threads (chunkGroupsLog2 in
  /// merge/MergeKernels.cpp).
  StringRef gridParam() const;
  int64_t gridMul() const { return kind == MergeKind::Indptr ? numHeads : 1; }
  int64_t gridDiv() const { return statesPerBlock(); }
  StringRef gridAdd() const;
  int64_t gridY() const { return 1; }
  int64_t dynamicSharedBytes() const { return 0; }
};

/// The merge spec of a merge op (its kernel_config given).
FailureOr<MergeSpec> analyseMerge(Operation *op, KernelConfigAttr config);

struct AttentionSpec {
  int64_t headDim = 0, numQoHeads = 0, numKvHeads = 0, groupSize = 0,
          pageSize = 0;
  /// The head_dim of v and the output: headDim, or its own (head_dim_vo,
  /// a (k, v) pair whose v is narrower, as DeepSeek's prefill has it).
  int64_t headDimVo = 0;
  bool hnd = false, pool = true, decode = true, causal = false, split = false,
       accumulate = false;
  /// Prefill with a custom mask (custom_mask / mask_indptr parameters).
  bool customMask = false;
  /// The level's state inputs (common/StateInputs.h), in the op's order:
  /// an unsplit kernel folds them in its epilogue (a parameter of each name,
  /// the hook's suffix in its name); a split level's merge folds them after
  /// the chunks, and its attention kernel is the one without them.
  SmallVector<StringRef, 1> stateInputs;
  /// Pages looked up in kv_indices; without (the op has no kv_indices),
  /// request i's pages are kv_indptr[i] onwards: ragged K/V at page size 1.
  bool pageTable = true;
  /// Element types of q, KV and the output (o is q's type today; the
  /// verifier requires it).
  Type qType, kvType, oType;
  /// The op's score options, sm_scale always set: the effective scale
  /// (`1/sqrt(head_dim)` when the op has none), so that kernels with the
  /// same scale compare equal.
  ScoreOptions score;
  bool baseE = false;
  KernelConfigAttr config;
  /// The traits of config's family (FamilyRegistry.h).
  const KernelFamilyTraits *traits = nullptr;
  /// mma_sync over an fp8 cache: S = Q K^T reads K straight from its fp8
  /// staging tile (config's fp8_staging = direct_k or direct_kv, which
  /// analyseAttention checks against the fields above; spelled `_kdirect`
  /// in the kernel name).
  bool fp8DirectK = false;
  /// And O += P V reads V straight from its fp8 staging tile (direct_kv;
  /// `_kvdirect` in the kernel name instead).
  bool fp8DirectV = false;

  bool operator==(const AttentionSpec &o) const;
  /// v and the output have a head_dim of their own (head_dim_vo).
  bool splitHeadDims() const { return headDimVo != headDim; }
  /// The state inputs this kernel's epilogue folds (see `stateInputs`).
  ArrayRef<StringRef> epilogueStateInputs() const {
    return split ? ArrayRef<StringRef>() : ArrayRef<StringRef>(stateInputs);
  }
  KernelFamily family() const { return config.getFamily(); }
  /// A tensor-core family (mma_sync or wgmma): query tiles of packed rows,
  /// self-scheduled prefill grids and dynamic shared memory.
  bool tensorCore() const { return config.isTensorCore(); }
  /// Scores need no transformation besides the scale (no soft cap, no
  /// ALiBi): the scale then folds into the exponent.
  bool plainScores() const { return score.plainScores(); }
  /// The effective softmax scale.
  float smScale() const { return *score.smScale; }
  /// The manifest op: decode, decode_split, prefill or prefill_split.
  StringRef opName() const;
  std::string name() const;
  SmallVector<KernelParam> params(MLIRContext *ctx) const;
  SmallVector<StringRef> planArrays() const;
  SmallVector<NamedAttribute> statics(Builder &b) const;
  int64_t dynamicSharedBytes() const;
  /// The grid is (ceil(gridParam * gridMul / gridDiv) + gridAdd,
  /// num_kv_heads, 1).
  StringRef gridParam() const;
  int64_t gridMul() const;
  int64_t gridDiv() const;
  StringRef gridAdd() const;
  int64_t gridY() const { return numKvHeads; }
  /// An unsplit tensor-core prefill: blocks find their query tile.
  bool selfScheduledPrefill() const;
  /// mma_sync decode: query tiles per request, ceil(G / q_tile).
  int64_t decodeTilesPerRequest() const;
  /// The kernel that merges the partial states of a split level.
  MergeSpec splitMerge() const;
};

/// The attention spec of a memref-form cascade.paged_attention (its
/// kernel_config given, `traits` those of its family). Emits a diagnostic
/// on configurations the family cannot run.
FailureOr<AttentionSpec> analyseAttention(PagedAttentionOp op,
                                          KernelConfigAttr config,
                                          const KernelFamilyTraits &traits);
/// The shape that a family's traits look at in `spec`.
AttentionShape attentionShape(const AttentionSpec &spec);

/// How the host launches one kernel: the pass records it per op when it
/// builds the kernel, and the launch patterns read it.
struct KernelLaunch {
  gpu::GPUFuncOp fn;
  SmallVector<KernelParam> params;
  SmallVector<int64_t, 3> block;
  /// grid = (ceil(value of gridParam * gridMul / gridDiv) + value of
  /// gridAdd, gridY, 1); no launch when gridParam's value is 0.
  std::string gridParam, gridAdd;
  int64_t gridMul = 1, gridDiv = 1, gridY = 1;
  int64_t dynamicSharedBytes = 0;
};
/// The launches of one op: its kernel and, for a split-KV attention level,
/// the merge of the partial states.
struct OpLaunches {
  KernelLaunch main;
  std::optional<KernelLaunch> merge;
};
using LaunchTable = llvm::DenseMap<Operation *, OpLaunches>;

/// Patterns rewriting each cascade op of `table` into its launches.
void populateCascadeLaunchPatterns(RewritePatternSet &patterns,
                                   const LaunchTable &table);

} // namespace cascade
} // namespace mlir

#endif // CASCADE_LIB_CONVERSION_CASCADETOGPU_KERNELSPEC_H
