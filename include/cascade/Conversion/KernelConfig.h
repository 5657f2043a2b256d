//===- KernelConfig.h - Kernel family and tiling selection ------*- C++ -*-===//
//
// The one place that decides, for each cascade op, which kernel family runs
// it and with which tiling (#cascade.kernel_config), for one target chip
// (TargetInfo.h). The `cascade-select-kernel-config` pass records the choice
// on the ops; `convert-cascade-to-gpu` reads it (and applies these defaults
// to ops that carry none). Tuning happens through the pass options (declared
// once, in Passes.td) or by writing the attribute, never through the
// environment.
//
//===----------------------------------------------------------------------===//

#ifndef CASCADE_CONVERSION_KERNELCONFIG_H
#define CASCADE_CONVERSION_KERNELCONFIG_H

#include "cascade/Conversion/Passes.h"
#include "cascade/Conversion/TargetInfo.h"
#include "cascade/Dialect/Cascade/IR/CascadeOps.h"

namespace mlir {
class ModuleOp;
namespace cascade {

/// Knobs of the default selection: the options of
/// `cascade-select-kernel-config` as tablegen generates them from Passes.td
/// (one declaration, with the defaults); 0 means "choose automatically".
/// `chip` names the target (empty: kDefaultChip); `overwrite` only concerns
/// the pass.
using KernelConfigOptions = CascadeSelectKernelConfigOptions;

/// The shared memory (bytes) a block of a tensor-core attention kernel
/// (mma_sync or wgmma) uses for `config` at `headDim`: the query tile, the
/// K/V pipeline stages, or the staging of the warps' partial states,
/// whichever is larger.
int64_t mmaAttentionSharedBytes(KernelConfigAttr config, int64_t headDim);
/// The same for a KV cache of element type `kvType` in a `decode` or
/// prefill kernel (`rope`: RoPE rotates the K tiles): an fp8 cache adds the
/// staging rings its tiles land in before their conversion (K and V, every
/// stage, head_dim bytes a key); mma_sync's fp8 decode converts every stage
/// into one K and one V tile, or only into a V tile where K's scores read
/// the staging ring (mmaSyncFp8DirectK), or into none where P V reads V's
/// staging ring too (mmaSyncFp8DirectV: the staging rings and the Q tile,
/// which then shares the last V stage); wgmma keeps its f16/bf16 panel
/// ring and adds the staging rings.
/// `maskGroupSize` (the GQA group size; 0 without a custom mask) adds a
/// wgmma kernel's custom-mask side data (wgmmaMaskSideBytes).
int64_t mmaAttentionSharedBytes(KernelConfigAttr config, int64_t headDim,
                                Type kvType, bool decode, bool rope,
                                int64_t maskGroupSize = 0);
/// wgmma with a custom mask: the producer stages each tile's mask bits in
/// shared memory beside the tile, one row of kv_tile bits (whole 32-bit
/// words, bit j the tile's key j) for every query the block's q_tile
/// packed rows span (wgmmaMaskQueries: the rows of a query share its
/// bits), then a verdict word per consumer warpgroup (kWgmmaMaskVerdicts of
/// them): bit 0 set where a key of the tile is shown to one of its rows,
/// bit 1 where every key is shown to every row.
inline constexpr int64_t kWgmmaMaskVerdicts = 4;
int64_t wgmmaMaskQueries(KernelConfigAttr config, int64_t groupSize);
/// The most queries that `rows` consecutive packed rows span, G =
/// `groupSize` rows a query: (rows - 1) / G + 2, at most `rows`.
int64_t queriesSpanned(int64_t rows, int64_t groupSize);
/// 32-bit words of a stage's side data: the rows, then the verdicts.
int64_t wgmmaMaskStageWords(KernelConfigAttr config, int64_t groupSize);
/// Bytes of every stage's side data (0 for the other families).
int64_t wgmmaMaskSideBytes(KernelConfigAttr config, int64_t groupSize);
/// Whether an mma_sync attention kernel reads the B operand of S = Q K^T
/// straight from the fp8 K staging tile (32-bit loads and cvt, no f16 K
/// tile, Q's fragments built with a permuted head_dim): fp8 decode without
/// RoPE whose warps keep their Q fragments in registers (one warp along the
/// query rows, one m16 tile) at head_dim 16, 32, 64 or 128.
bool mmaSyncFp8DirectK(KernelConfigAttr config, int64_t headDim, Type kvType,
                       bool decode, bool rope);
/// Whether such a kernel also reads the B operand of O += P V straight from
/// the fp8 V staging tile (32-bit loads, byte permutes and cvt; no f16 V
/// tile, O's columns in a permuted head_dim order that the epilogue
/// undoes): mmaSyncFp8DirectK at head_dim 32, 64 or 128.
bool mmaSyncFp8DirectV(KernelConfigAttr config, int64_t headDim, Type kvType,
                       bool decode, bool rope);
/// mmaSyncFp8DirectV: where the Q tile starts (bytes), in the last stage of
/// the V staging ring, which no copy fills before the Q fragments are in
/// registers.
int64_t mmaSyncFp8DirectQTileOffset(KernelConfigAttr config, int64_t headDim);
/// Shared memory per block that a kernel may use on some known target (the
/// largest opt-in of TargetInfo.cpp's table): the bound of code that does
/// not know the chip. Selection checks the chip's own limit
/// (verifyKernelConfigFitsTarget).
inline constexpr int64_t kMaxSharedBytesPerBlock = kMaxSharedBytesOnAnyTarget;

/// Whether the rows family can run an attention op of this shape: head_dim
/// / 8 lanes must divide a warp (head_dim 8, 16, 32, 64, 128, 256).
bool rowsFamilySupportsHeadDim(int64_t headDim);

/// Whether kernel family `family` reads a KV cache of element type `kvType`
/// with queries of `qType` on `target`: the one place that says which family
/// takes which KV dtype (selection skips a family that does not). rows: f16
/// and bf16 KV with either query type; mma_sync and wgmma (sm_90a): KV of
/// q's type; all three: fp8 KV (f8E4M3FN, f8E5M2) on chips with the fp8
/// conversion instructions (sm_89 and up), converted to q's type (rows: in
/// registers; mma_sync: K/V tiles in shared memory before the mma; wgmma:
/// by the producer warpgroup, from a staging ring into the panels the
/// consumers' descriptors read); merge: no KV.
bool kernelFamilySupportsKVType(KernelFamily family, Type qType, Type kvType,
                                const TargetInfo &target);

/// Whether the wgmma family can run an attention op of this head_dim: whole
/// 128-byte swizzle panels of 16-bit elements (64, 128 or 256).
bool wgmmaFamilySupportsHeadDim(int64_t headDim);

/// Whether a wgmma block of `consumers` consumer warpgroups can hold the
/// P.V accumulator of `headDim`: ptxas compiles the kernel within the
/// registers a thread has at entry (the 64K register file over the block,
/// 168 with two consumers, 128 with three; setmaxnreg only moves them at run
/// time), and one wgmma needs its whole f32 output tile (head_dim / 2
/// registers a thread) live with its operands' ~30. Head_dim 256 with three
/// consumers needs 158 of 128: ptxas stops with "insufficient registers".
bool wgmmaConsumersHoldHeadDim(int64_t consumers, int64_t headDim);

/// Whether the wgmma producer's gather of an fp8 cache tiles a KV tile of
/// `kvTile` keys: its 128 threads copy 16-byte chunks (16 fp8 elements),
/// 2048 / head_dim whole rows a pass.
bool wgmmaFp8GatherFits(int64_t kvTile, int64_t headDim);

/// Whether a block of `op`'s kernel with `config` fits the shared memory of
/// `target`. Fails with a diagnostic on `op` (naming the bytes needed and the
/// chip's limit) where it does not. The one check of a configuration against
/// a chip: selection applies it to the configurations it chooses and to the
/// hand-written ones it keeps.
LogicalResult verifyKernelConfigFitsTarget(Operation *op,
                                           KernelConfigAttr config,
                                           const TargetInfo &target);

/// The target selection works for. Precedence: the chip of the
/// `#nvvm.target`s attached to the gpu.modules inside `module`, else
/// `chipOption` (the pass option), else kDefaultChip. A chip option that
/// disagrees with an attached target, gpu.modules targeting different chips,
/// or a chip missing from getKnownTargets() fail with a diagnostic on
/// `module`.
FailureOr<const TargetInfo *> resolveSelectionTarget(ModuleOp module,
                                                     StringRef chipOption);

/// The default kernel configuration of `op` (a merge op or
/// cascade.paged_attention) on `target`. Emits a diagnostic and fails where
/// no kernel family can run the op there.
FailureOr<KernelConfigAttr> selectKernelConfig(Operation *op,
                                               const KernelConfigOptions &opts,
                                               const TargetInfo &target);
/// The same on the chip `opts.chip` names (kDefaultChip when empty).
FailureOr<KernelConfigAttr> selectKernelConfig(Operation *op,
                                               const KernelConfigOptions &opts);

} // namespace cascade
} // namespace mlir

#endif // CASCADE_CONVERSION_KERNELCONFIG_H
