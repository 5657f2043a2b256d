//===- KernelConfig.cpp - Kernel family and tiling selection --------------===//
//
// Default #cascade.kernel_config of every cascade op on a target chip, and
// the cascade-select-kernel-config pass that records it. The kernel families
// are rows of one table (kFamilies), tried in order; the first that applies
// to an op chooses its configuration:
// - merge: merges, one 16-byte chunk of a state per thread, ~128 threads a
//   block;
// - rows: q and KV of different f16/bf16 dtypes (the only family that
//   converts those), and decode with a small GQA group (<= rows-max-group)
//   at a head_dim the family splits over a warp (f16, bf16 or fp8 KV; fp8
//   has its own group limit, rows-max-group-fp8, 1 by default): the
//   bandwidth-bound CUDA-core kernel (all G query heads of a KV head share
//   each K/V tile read);
// - mma_sync: every other attention (prefill/append, shared-prefix levels,
//   decode with large groups or other head dims), FlashAttention-2 on tensor
//   cores with the GQA group packed into the query rows, shrunk until it
//   fits the chip's shared memory; fp8 KV tiles are converted to q's dtype.
// - wgmma (before mma_sync, where TargetInfo::hasWgmma: sm_90a): prefill,
//   append and shared-prefix levels of one dtype at head_dim 64, 128 or 256,
//   warp-specialized on Hopper's warpgroup MMA, also over an fp8 KV cache
//   (the producer converts its tiles); the one place that decides where
//   wgmma does not pay (decode, head_dim 96 / 192, mixed f16/bf16 dtypes)
//   and leaves those ops to mma_sync.
// Which family reads which KV dtype is kernelFamilySupportsKVType.
//
//===----------------------------------------------------------------------===//

#include "cascade/Conversion/KernelConfig.h"
#include "cascade/Conversion/GPUCodegen/Fp8Convert.h"
#include "cascade/Conversion/Passes.h"
#include "cascade/Dialect/Cascade/IR/CascadeDialect.h"
#include "wgmma/WgmmaMainloop.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"

#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/MathExtras.h"

namespace mlir {
namespace cascade {
#define GEN_PASS_DEF_CASCADESELECTKERNELCONFIG
#include "cascade/Conversion/Passes.h.inc"
} // namespace cascade
} // namespace mlir

using namespace mlir;
using namespace mlir::cascade;

bool cascade::rowsFamilySupportsHeadDim(int64_t headDim) {
  return headDim % 8 == 0 && headDim / 8 <= 32 && 32 % (headDim / 8) == 0;
}

bool cascade::kernelFamilySupportsKVType(KernelFamily family, Type qType,
                                         Type kvType,
                                         const TargetInfo &target) {
  bool f16OrBf16 = kvType.isF16() || kvType.isBF16();
  switch (family) {
  case KernelFamily::Merge:
    return false;
  case KernelFamily::Rows:
    return f16OrBf16 || (isFp8KVType(kvType) &&
                         fp8KVConvertSupported(target.computeCapability));
  case KernelFamily::MmaSync:
    return (f16OrBf16 && kvType == qType) ||
           (isFp8KVType(kvType) &&
            fp8KVConvertSupported(target.computeCapability));
  case KernelFamily::Wgmma:
    // KV of q's type lands straight in the tiles wgmma reads; an fp8 cache
    // lands in a staging ring that the producer converts into them.
    return target.hasWgmma &&
           ((f16OrBf16 && kvType == qType) ||
            (isFp8KVType(kvType) &&
             fp8KVConvertSupported(target.computeCapability)));
  }
  return false;
}

/// Row stride (elements) of a tile of head_dim columns rounded up to 16:
/// SmemTileLayout's choice (swizzled rows of a multiple of 64 elements,
/// padded rows otherwise).
static int64_t mmaRowStride(int64_t headDim) {
  int64_t cols = llvm::alignTo(headDim, 16);
  return (cols / 8) % 8 == 0 ? cols : cols + 8;
}

bool cascade::wgmmaFamilySupportsHeadDim(int64_t headDim) {
  return headDim == 64 || headDim == 128 || headDim == 256;
}

bool cascade::wgmmaConsumersHoldHeadDim(int64_t consumers, int64_t headDim) {
  return headDim / 2 + kWgmmaOperandRegisters <=
         wgmmaEntryRegisters(1 + consumers);
}

bool cascade::wgmmaFp8GatherFits(int64_t kvTile, int64_t headDim) {
  int64_t rowsPerPass = 128 / (headDim / 16);
  return rowsPerPass > 0 && kvTile % rowsPerPass == 0;
}

/// mma_sync: the partial states of the warps along KV that the epilogue
/// merges in shared memory (per row, D f32 plus (m, l)); 0 with one warp.
static int64_t partialStateBytes(KernelConfigAttr c, int64_t headDim) {
  if (c.getWarpsKV() <= 1)
    return 0;
  return c.getQTile() * c.getWarpsKV() * (llvm::alignTo(headDim, 16) + 2) * 4;
}

int64_t cascade::mmaAttentionSharedBytes(KernelConfigAttr c, int64_t headDim) {
  // wgmma: unpadded 128-byte-swizzled panels, no partial states to merge.
  if (c.getFamily() == KernelFamily::Wgmma)
    return (c.getQTile() + 2 * c.getStages() * c.getKvTile()) * headDim * 2;
  int64_t stride = mmaRowStride(headDim);
  int64_t tiles =
      (c.getQTile() + 2 * c.getStages() * c.getKvTile()) * stride * 2;
  return std::max(tiles, partialStateBytes(c, headDim));
}

bool cascade::mmaSyncFp8DirectK(KernelConfigAttr c, int64_t headDim,
                                Type kvType, bool decode, bool rope) {
  return c.getFamily() == KernelFamily::MmaSync && isFp8KVType(kvType) &&
         decode && !rope && c.getWarpsQ() == 1 && c.getMmaTilesPerWarp() == 1 &&
         headDim >= 16 && headDim <= 128 &&
         llvm::isPowerOf2_64(static_cast<uint64_t>(headDim));
}

bool cascade::mmaSyncFp8DirectV(KernelConfigAttr c, int64_t headDim,
                                Type kvType, bool decode, bool rope) {
  return mmaSyncFp8DirectK(c, headDim, kvType, decode, rope) &&
         headDim % 32 == 0;
}

int64_t cascade::mmaSyncFp8DirectQTileOffset(KernelConfigAttr c,
                                             int64_t headDim) {
  return (2 * c.getStages() - 1) * c.getKvTile() * headDim;
}

/// The tiles of mmaAttentionSharedBytes, with an fp8 cache's staging.
static int64_t tileSharedBytes(KernelConfigAttr c, int64_t headDim, Type kvType,
                               bool decode, bool rope) {
  if (!isFp8KVType(kvType))
    return mmaAttentionSharedBytes(c, headDim);
  // wgmma: the panel ring of q's dtype, then the fp8 staging rings (K and
  // V, `stages` deep).
  if (c.getFamily() == KernelFamily::Wgmma)
    return mmaAttentionSharedBytes(c, headDim) +
           2 * c.getStages() * c.getKvTile() * headDim;
  // The Q tile and the f16/bf16 K/V rings (decode: one K and one V tile,
  // each stage converted into them just before its scores; no K tile where
  // the scores read K's staging ring), then the fp8 staging rings; the
  // partial states of the warps along KV reuse the memory from 0. Where P V
  // reads V's staging ring too, there are only the staging rings, and the
  // Q tile in the last V stage (it may reach past the ring's end: the
  // rows of the Q tile are padded).
  int64_t stride = mmaRowStride(headDim);
  int64_t staging = 2 * c.getStages() * c.getKvTile() * headDim;
  if (mmaSyncFp8DirectV(c, headDim, kvType, decode, rope))
    return std::max(
        {staging,
         mmaSyncFp8DirectQTileOffset(c, headDim) + c.getQTile() * stride * 2,
         partialStateBytes(c, headDim)});
  int64_t ring = decode ? 1 : c.getStages();
  int64_t kRing =
      mmaSyncFp8DirectK(c, headDim, kvType, decode, rope) ? 0 : ring;
  int64_t tiles = (c.getQTile() + (kRing + ring) * c.getKvTile()) * stride * 2;
  return std::max(tiles + staging, partialStateBytes(c, headDim));
}

int64_t cascade::queriesSpanned(int64_t rows, int64_t groupSize) {
  int64_t g = std::max<int64_t>(groupSize, 1);
  return std::min(rows, (rows - 1) / g + 2);
}

int64_t cascade::wgmmaMaskQueries(KernelConfigAttr c, int64_t groupSize) {
  return queriesSpanned(c.getQTile(), groupSize);
}

int64_t cascade::wgmmaMaskStageWords(KernelConfigAttr c, int64_t groupSize) {
  return wgmmaMaskQueries(c, groupSize) * llvm::divideCeil(c.getKvTile(), 32) +
         kWgmmaMaskVerdicts;
}

int64_t cascade::wgmmaMaskSideBytes(KernelConfigAttr c, int64_t groupSize) {
  if (c.getFamily() != KernelFamily::Wgmma)
    return 0;
  return c.getStages() * wgmmaMaskStageWords(c, groupSize) * 4;
}

int64_t cascade::mmaAttentionSharedBytes(KernelConfigAttr c, int64_t headDim,
                                         Type kvType, bool decode, bool rope,
                                         int64_t maskGroupSize) {
  int64_t mask = maskGroupSize ? wgmmaMaskSideBytes(c, maskGroupSize) : 0;
  return mask + tileSharedBytes(c, headDim, kvType, decode, rope);
}

//===----------------------------------------------------------------------===//
// The target
//===----------------------------------------------------------------------===//

/// The GQA group size of `op` where it has a custom mask (1, the most
/// side data, while a head count is dynamic), else 0.
static int64_t maskGroupSize(PagedAttentionOp op) {
  if (!op.hasCustomMask())
    return 0;
  bool pool = op.getKv().size() == 1, nhd = op.getKvLayout() == KVLayout::NHD;
  int64_t qHeads = cast<ShapedType>(op.getQ().getType()).getDimSize(1);
  int64_t kvHeads = cast<ShapedType>(op.getKv()[0].getType())
                        .getDimSize(pool ? (nhd ? 3 : 2) : (nhd ? 2 : 1));
  if (ShapedType::isDynamic(qHeads) || ShapedType::isDynamic(kvHeads) ||
      kvHeads < 1)
    return 1;
  return std::max<int64_t>(qHeads / kvHeads, 1);
}

/// The dynamic shared memory of a block of `op`'s kernel under `config`
/// (0 for the families whose shared memory is static: rows, merge).
static int64_t dynamicSharedBytes(Operation *op, KernelConfigAttr config) {
  auto attention = dyn_cast<PagedAttentionOp>(op);
  if (!attention || !config.isTensorCore())
    return 0;
  int64_t headDim =
      cast<ShapedType>(attention.getQ().getType()).getShape().back();
  if (ShapedType::isDynamic(headDim))
    return 0;
  return mmaAttentionSharedBytes(
      config, headDim,
      cast<ShapedType>(attention.getKv()[0].getType()).getElementType(),
      attention.isDecode(),
      attention.getPosEncoding() == PosEncoding::RopeLlama,
      maskGroupSize(attention));
}

/// The shared memory the hardware reserves for each resident block (sm_80
/// and later).
static constexpr int64_t kReservedSharedBytesPerBlock = 1024;

/// Why `config` does not fit `target` (empty where it fits).
static std::string whyNotFits(Operation *op, KernelConfigAttr config,
                              const TargetInfo &target) {
  std::string why;
  llvm::raw_string_ostream os(why);
  int64_t smem = dynamicSharedBytes(op, config);
  if (smem > target.sharedBytesPerBlockOptin) {
    os << "needs " << smem << " bytes of shared memory per block; "
       << target.chip << " allows at most " << target.sharedBytesPerBlockOptin;
    return why;
  }
  int64_t blocks = config.getMinBlocksPerSm();
  if (!blocks)
    return why;
  int64_t threads = blocks * config.getNumThreads();
  int64_t perSM = blocks * (smem + kReservedSharedBytesPerBlock);
  if (threads > target.maxThreadsPerSM)
    os << "asks for " << blocks << " blocks an SM, " << threads << " threads; "
       << target.chip << " holds " << target.maxThreadsPerSM;
  else if (perSM > target.sharedBytesPerSM)
    os << "asks for " << blocks << " blocks an SM, " << perSM
       << " bytes of shared memory with what each block reserves; "
       << target.chip << " has " << target.sharedBytesPerSM;
  return why;
}

static bool fitsTarget(Operation *op, KernelConfigAttr config,
                       const TargetInfo &target) {
  return whyNotFits(op, config, target).empty();
}

LogicalResult cascade::verifyKernelConfigFitsTarget(Operation *op,
                                                    KernelConfigAttr config,
                                                    const TargetInfo &target) {
  std::string why = whyNotFits(op, config, target);
  if (why.empty())
    return success();
  return op->emitError("kernel_config ") << config << " " << why;
}

FailureOr<const TargetInfo *>
cascade::resolveSelectionTarget(ModuleOp module, StringRef chipOption) {
  // The chips the kernels are built for, where a target is attached.
  llvm::SetVector<StringRef> attached;
  module.walk([&](gpu::GPUModuleOp gpuModule) {
    if (ArrayAttr targets = gpuModule.getTargetsAttr())
      for (Attribute t : targets)
        if (auto nvvm = dyn_cast<NVVM::NVVMTargetAttr>(t))
          attached.insert(nvvm.getChip());
  });
  if (attached.size() > 1)
    return module.emitError("kernel selection needs one target chip; the "
                            "gpu.modules target ")
               << llvm::join(attached, ", "),
           failure();
  StringRef chip = chipOption;
  if (!attached.empty()) {
    if (!chipOption.empty() && chipOption != attached.front())
      return module.emitError("kernel selection for chip '")
                 << chipOption << "', but the gpu.modules target '"
                 << attached.front() << "' (#nvvm.target)",
             failure();
    chip = attached.front();
  }
  if (chip.empty())
    chip = kDefaultChip;
  const TargetInfo *target = lookupTarget(chip);
  if (!target)
    return module.emitError("kernel selection does not know chip '")
               << chip << "' (known: " << getKnownChipsString() << ")",
           failure();
  return target;
}

//===----------------------------------------------------------------------===//
// The families
//===----------------------------------------------------------------------===//

namespace {
/// What selection looks at in an op.
struct OpShape {
  bool merge = false;
  int64_t headDim = 0;
  /// Attention only.
  int64_t group = 1;
  bool decode = false;
  /// q and KV of different element types.
  bool mixedTypes = false;
  /// Attention: the element types of q and KV.
  Type qType, kvType;
  /// Options computed per score (ALiBi bias, soft cap) or per tile (RoPE in
  /// shared memory): they need registers that a 128-row tile does not leave.
  bool heavyOptions = false;
  /// A custom mask operand: a word of mask bits per 32 scores of a row.
  bool customMask = false;
  /// Attention: planned (split-KV work items from a plan) or accumulating
  /// into a state (a fused cascade level).
  bool planned = false;
  bool accumulate = false;
  /// Attention: the causal mask.
  bool causal = false;
  /// Attention: RoPE rotates the K tiles in shared memory.
  bool rope = false;
};

/// Everything a family's choice depends on.
struct SelectionInput {
  Operation *op;
  const OpShape &shape;
  const KernelConfigOptions &opts;
  const TargetInfo &target;
};

/// One kernel family: when it runs an op, and how it configures it.
struct FamilyRule {
  KernelFamily family;
  bool (*applies)(const SelectionInput &);
  FailureOr<KernelConfigAttr> (*choose)(const SelectionInput &);
};
} // namespace

static bool mergeApplies(const SelectionInput &in) { return in.shape.merge; }

static FailureOr<KernelConfigAttr> chooseMerge(const SelectionInput &in) {
  int64_t tpt = in.shape.headDim / 8;
  int64_t tpb = std::max<int64_t>(1, in.opts.mergeThreads / tpt);
  return KernelConfigAttr::get(in.op->getContext(), KernelFamily::Merge,
                               {tpb * tpt, 1, 1}, tpb, 0, 1);
}

static bool rowsApplies(const SelectionInput &in) {
  const OpShape &s = in.shape;
  // q and KV of different f16/bf16 dtypes run here only; an fp8 cache runs
  // here for small-group decode (bandwidth-bound) and on tensor cores
  // otherwise, like f16.
  bool onlyRows = s.mixedTypes && !isFp8KVType(s.kvType);
  // fp8 decode on rows does 2 G f32 FMAs per KV byte (f16: G), about 11 PTX
  // instructions a byte at G = 4, and measured 0.51 of the H200's copy
  // bandwidth there against mma_sync's 0.68 (chooseMmaSync): its own limit,
  // 1 by default. At G = 1 rows does about 5 a byte, fewer than f16's 5.7
  // at 0.91 of copy, where mma_sync's 16-row tile (15 rows idle) costs what
  // it costs at G = 4.
  int64_t maxGroup =
      isFp8KVType(s.kvType) ? in.opts.rowsMaxGroupFp8 : in.opts.rowsMaxGroup;
  return !s.merge && rowsFamilySupportsHeadDim(s.headDim) &&
         kernelFamilySupportsKVType(KernelFamily::Rows, s.qType, s.kvType,
                                    in.target) &&
         (onlyRows || (s.decode && s.group <= maxGroup));
}

/// The rows family: D/8 lanes own 8 elements each, bdz slices of a tile;
/// the tile (tokens) and the pipeline depth fit the K/V smem budget (in
/// bytes: an fp8 cache's stages are half an f16 one's, so twice as many fit
/// and the bytes in flight stay those of f16).
static FailureOr<KernelConfigAttr> chooseRows(const SelectionInput &in) {
  const KernelConfigOptions &o = in.opts;
  int64_t headDim = in.shape.headDim;
  int64_t bdx = headDim / 8;
  int64_t bdz = std::max<int64_t>(1, o.rowsThreads / bdx);
  int64_t nthreads = bdx * bdz;
  int64_t budget = o.rowsSmemKiB * 1024;
  int64_t tile = std::max<int64_t>(1, o.rowsKVTile), stages = 0;
  for (;; tile /= 2) {
    while ((tile * bdx) % nthreads != 0 || tile % bdz != 0)
      tile *= 2;
    int64_t stageBytes =
        2 * tile * headDim * (isFp8KVType(in.shape.kvType) ? 1 : 2);
    stages = std::min<int64_t>(o.rowsMaxStages, budget / stageBytes);
    if (stages >= 2 || tile <= 16)
      break;
  }
  return KernelConfigAttr::get(in.op->getContext(), KernelFamily::Rows,
                               {bdx, 1, bdz}, 1, tile,
                               std::max<int64_t>(stages, 1));
}

/// Tensor cores need q and KV of one dtype.
static bool mmaSyncApplies(const SelectionInput &in) {
  return !in.shape.merge &&
         kernelFamilySupportsKVType(KernelFamily::MmaSync, in.shape.qType,
                                    in.shape.kvType, in.target);
}

/// The mma_sync family. Prefill: 4 warps along the query rows with two m16
/// tiles each for head_dim <= 128 (128 packed rows a block: every K/V
/// fragment read from shared memory feeds two mma, which halves the
/// ldmatrix traffic per FLOP) and one above (the f32 output tile of
/// head_dim 256 fills the registers); KV tiles of 32 tokens (64 for
/// head_dim <= 64) so that the 128-row output tile and the scores fit in
/// 255 registers without spills (FlashInfer's FA2 choice at head_dim 128);
/// 3 stages for the 128-row, 32-token tiles (80 KiB: two blocks an SM), 2
/// otherwise. Decode: the packed rows of one request (its GQA group) in
/// 16..128 rows, and the warps a block has to spare along the KV tile.
/// Then fewer stages, shorter KV tiles and (where chosen here) fewer warps
/// along KV until the block fits the chip's shared memory.
static FailureOr<KernelConfigAttr> chooseMmaSync(const SelectionInput &in) {
  const KernelConfigOptions &o = in.opts;
  const OpShape &s = in.shape;
  int64_t dp = llvm::alignTo(s.headDim, 16);
  int64_t qTile, warpsQ, warpsKV, kvTile, stages;
  int64_t minBlocks = std::max<int64_t>(o.mmaMinBlocksPerSM, 0);
  // fp8 decode whose scores and P V read K and V from their staging rings
  // (mmaSyncFp8DirectV): one warp along the rows, one m16 tile.
  auto fp8DirectKV = [&] {
    return isFp8KVType(s.kvType) && s.decode && warpsQ == 1 && qTile == 16 &&
           !s.rope && s.headDim % 32 == 0 && s.headDim <= 128;
  };
  if (s.decode) {
    qTile = o.mmaQTile
                ? o.mmaQTile
                : std::min<int64_t>(
                      128, llvm::PowerOf2Ceil(std::max<int64_t>(s.group, 16)));
    warpsQ = std::min<int64_t>(4, std::max<int64_t>(1, qTile / 16));
    warpsKV = o.mmaWarpsKV ? o.mmaWarpsKV : std::max<int64_t>(1, 4 / warpsQ);
    if (isFp8KVType(s.kvType)) {
      // fp8: 64-key tiles (16 keys a warp at q_tile 16) and 4 staging
      // stages, 100 KiB at head_dim 128: two blocks an SM, three tiles in
      // flight each. Measured on the H200 (32/8 heads, D=128, page 16,
      // fraction of copy bandwidth at B64 L4K / B16 L32K split / B256 L1K),
      // before fp8 stages held one converted K/V tile instead of `stages`:
      // 64-key tiles over 4 warps 0.68 / 0.70 / 0.62, 128-key tiles 0.39 /
      // 0.40 (no split) / 0.37, 32-key tiles over 2 warps in 4 stages 0.47
      // / 0.47 / 0.44 (rows: 0.51 / 0.51 / 0.52). The 64-key tiles in 2
      // stages then had one tile in flight a block; the freed shared memory
      // now holds two more. With the one converted tile, a 16-row block
      // measured faster with 2 warps of 16 keys (32-key tiles) in 4 stages:
      // 0.73 / 0.77 / 0.67 against 0.65 / 0.66 / 0.58 for 64-key tiles over
      // 4 warps, in one H200 run (both checked against float64 there).
      // With K read from its staging tile (kdirect), 3 stages (36 KiB, six
      // blocks an SM) against 4 (44 KiB, five): 0.89 / 0.99 / 0.87 against
      // 0.92 / 0.92 / 0.82, in one H200 run (2 stages: 0.90 / 1.00 / 0.87);
      // a batch of short requests runs in waves of resident blocks, and
      // more of them keep more bytes in flight.
      // With V read from its staging tile too (kvdirect: 24 KiB in 3
      // stages, 16 in 2, 129-131 registers), at B256 L1K / B64 L4K (split
      // as planned) / B16 L32K split / B99 L1K in one H200 run: 2 stages
      // with min_blocks_per_sm = 8 (128 registers, 24-32 bytes of spills)
      // 0.91 / 0.93 / 0.97 / 0.87, against 0.85 / 0.93 / 0.96 / 0.89 in 2
      // stages and 0.86 / 0.92 / 0.70 / 0.87 in 3 without the bound (seven
      // blocks an SM), and 0.83 / 0.80 / 0.84 / 0.81 for 3 stages held to
      // eight blocks (72-92 bytes of spills). kdirect 3 stages in the same
      // run: 0.84 / 0.86 / 0.94 / 0.87.
      if (!o.mmaWarpsKV && warpsQ == 1)
        warpsKV = 2;
      kvTile = o.mmaKVTile   ? o.mmaKVTile
               : warpsQ == 1 ? 16 * warpsKV
                             : std::max<int64_t>(64, 16 * warpsKV);
      stages = o.mmaStages     ? o.mmaStages
               : fp8DirectKV() ? 2
               : warpsQ == 1   ? 3
                               : 4;
      if (o.mmaMinBlocksPerSM < 0 && fp8DirectKV() && s.group <= 8 &&
          !s.heavyOptions)
        minBlocks = 8;
    } else {
      kvTile = o.mmaKVTile ? o.mmaKVTile : 16 * warpsKV * (dp <= 128 ? 2 : 1);
      stages = o.mmaStages ? o.mmaStages : 3;
    }
  } else {
    qTile = o.mmaQTile ? o.mmaQTile : dp <= 128 && !s.heavyOptions ? 128 : 64;
    warpsQ = std::min<int64_t>(4, std::max<int64_t>(1, qTile / 16));
    warpsKV = o.mmaWarpsKV ? o.mmaWarpsKV : 1;
    kvTile = o.mmaKVTile    ? o.mmaKVTile
             : qTile == 128 ? (dp <= 64 ? 64 : 32)
                            : (dp <= 128 ? 64 : 32);
    // A third stage pays off with 32-token tiles (measured on the H200:
    // shared-prefix levels 4-9% faster, causal prefill equal).
    stages = o.mmaStages ? o.mmaStages : qTile == 128 && kvTile <= 32 ? 3 : 2;
  }
  auto make = [&] {
    return KernelConfigAttr::getChecked(
        [&] { return in.op->emitError("invalid mma_sync tuning options: "); },
        in.op->getContext(), KernelFamily::MmaSync,
        ArrayRef<int64_t>{32, warpsQ, warpsKV}, qTile, kvTile, stages,
        KVBarriers::Joint, minBlocks);
  };
  // Fit the shared memory: fewer stages first, then shorter KV tiles, then
  // (unless the options fix them) fewer warps along KV, each with half the
  // tile.
  KernelConfigAttr c = make();
  if (!c)
    return failure();
  while (!fitsTarget(in.op, c, in.target)) {
    if (minBlocks && o.mmaMinBlocksPerSM < 0) {
      minBlocks = 0; // chosen here: dropped before anything else
    } else if (stages > 2) {
      --stages;
    } else if (kvTile > 16 * warpsKV) {
      kvTile /= 2;
    } else if (!o.mmaWarpsKV && warpsKV > 1) {
      warpsKV /= 2;
      kvTile /= 2;
    } else {
      break;
    }
    c = make();
    if (!c)
      return failure();
  }
  if (failed(verifyKernelConfigFitsTarget(in.op, c, in.target)))
    return failure();
  return c;
}

/// Hopper's warpgroup MMA where the chip has it, for the ops where it pays:
/// query tiles of 64 rows a warpgroup (prefill, append, shared-prefix
/// levels; not decode), whole 128-byte swizzle panels (head_dim 64, 128,
/// 256), q and KV of one dtype.
static bool wgmmaApplies(const SelectionInput &in) {
  const OpShape &s = in.shape;
  // An fp8 cache's producer converts each tile after its copies landed and
  // publishes it whole: one joint ring of three or more stages (no split
  // K/V barriers), else mma_sync.
  bool fp8Fits = !isFp8KVType(s.kvType) ||
                 (!in.opts.wgmmaSplitKVBarriers &&
                  (!in.opts.wgmmaStages || in.opts.wgmmaStages >= 3) &&
                  (!in.opts.wgmmaKVTile ||
                   wgmmaFp8GatherFits(in.opts.wgmmaKVTile, s.headDim)));
  return in.opts.wgmma && !s.merge && !s.decode &&
         kernelFamilySupportsKVType(KernelFamily::Wgmma, s.qType, s.kvType,
                                    in.target) &&
         wgmmaFamilySupportsHeadDim(s.headDim) && fp8Fits;
}

/// The wgmma family: a producer warpgroup and two consumer warpgroups (128
/// query rows), KV tiles of 128 tokens up to head_dim 128 and of 64 above
/// (head_dim 256's f32 output tile takes 128 registers a thread), and 64
/// with per-score options, custom masks (their words for 64 keys, as checked
/// on the GPU) or RoPE at any head_dim. With the producer's
/// copies publishing their tile, 128 tokens in 3 stages measured 456-472
/// TFLOP/s against 427-443 for 64 tokens in 4 at head_dim 128 causal on the
/// H200 (when the producer published each tile itself, the 64-token ring
/// was the faster by 1.3-3.3%); shorter KV tiles until two
/// stages fit the chip, then as many stages (up to 4) as fit. With
/// wgmma-split-kv-barriers, K and V get barrier rings of their own (the
/// same `stages` deep each: the shared memory is that of the joint ring);
/// where only two stages fit (head_dim 256), they do too, since a joint
/// ring needs three (the attribute's verifier says why). Over an fp8 cache
/// the staging rings (fp8 bytes of K and V per stage) come on top, and the
/// ring stays joint: the KV tile shrinks until three stages fit.
static FailureOr<KernelConfigAttr> chooseWgmma(const SelectionInput &in) {
  const KernelConfigOptions &o = in.opts;
  const OpShape &s = in.shape;
  // Three consumers (192 query rows a block) by default for a plain
  // prefill (not planned, not accumulating, f16/bf16 KV, no per-score
  // options; a custom mask allowed) up to head_dim 128: on the H200 at B8
  // L4096 32/8 they ran causal D128 at 473-489 TFLOP/s against 454-469 with
  // two, non-causal D128 at 502-518 against 493-504, causal D64 at 363-373
  // against 337-348. A custom mask keeps the 64-key tiles it has with two
  // (its words a row fit: ptxas, no spills) and takes the same three.
  // A planned level keeps two: the cascade's shared-prefix level (512 rows
  // a KV head) took 153 us in 192-row tiles against 131 in 128-row ones.
  // Over an fp8 cache at head_dim 128 the staging rings keep the KV tiles
  // at 64 tokens either way, and a non-causal level (the shared prefix,
  // planned or accumulating or not) takes three (at 64, two consumers keep
  // 128-token tiles, which three cannot; not measured): the 32/8 cascade's
  // prefix (B128,
  // 32768 tokens) took 186-187 us in 192-row tiles against 192-197 in
  // 128-row ones before the suffix level, and 171.6-172.1 against
  // 176.1-177.0 beside it (benchmarks/RESULTS.md, fifteenth session).
  // wgmma-consumers overrides, where the consumers' registers hold the head
  // dim's output tile (not head_dim 256 with three).
  bool fp8 = isFp8KVType(s.kvType);
  bool plain = !s.planned && !s.accumulate && !fp8 && !s.heavyOptions;
  bool fp8Prefix =
      fp8 && !s.causal && !s.heavyOptions && !s.customMask && s.headDim == 128;
  int64_t consumers = o.wgmmaConsumers     ? o.wgmmaConsumers
                      : plain || fp8Prefix ? 3
                                           : 2;
  if (!wgmmaConsumersHoldHeadDim(consumers, s.headDim))
    consumers = 2;
  // Per-score options (ALiBi, soft cap), custom masks and RoPE keep more
  // values live next to the pipelined S and P tiles: 64-token tiles there.
  // So do more than two consumers, whose share of the register file (152 a
  // thread with three) spills a 128-token S tile (1.5 KB a thread at
  // head_dim 128 by ptxas).
  bool wide =
      s.headDim <= 128 && !s.heavyOptions && !s.customMask && consumers <= 2;
  int64_t kvTile = o.wgmmaKVTile ? o.wgmmaKVTile : wide ? 128 : 64;
  // An fp8 cache needs a joint ring (three stages or more) and adds its
  // staging rings, so its KV tiles shrink until three stages fit: 64
  // tokens in 4 stages at head_dim 128 (224 KiB), 32 in 3 at 256.
  int64_t minStages = fp8 ? 3 : 2;
  int64_t minKVTile = fp8 ? std::max<int64_t>(16, 2048 / s.headDim) : 16;
  int64_t stages = o.wgmmaStages ? o.wgmmaStages : minStages;
  auto make = [&] {
    bool split = o.wgmmaSplitKVBarriers || (!o.wgmmaStages && stages < 3);
    return KernelConfigAttr::getChecked(
        [&] { return in.op->emitError("invalid wgmma tuning options: "); },
        in.op->getContext(), KernelFamily::Wgmma,
        ArrayRef<int64_t>{128, 1 + consumers, 1}, 64 * consumers, kvTile,
        stages, split ? KVBarriers::Split : KVBarriers::Joint);
  };
  KernelConfigAttr c = make();
  if (!c)
    return failure();
  while (!fitsTarget(in.op, c, in.target) && !o.wgmmaKVTile &&
         kvTile > minKVTile) {
    kvTile /= 2;
    c = make();
  }
  // A deeper ring where it fits (up to 4 stages): the producer's copies of
  // a tile then have two tiles of compute to land in.
  while (!o.wgmmaStages && stages < 4) {
    ++stages;
    KernelConfigAttr deeper = make();
    if (!deeper || !fitsTarget(in.op, deeper, in.target)) {
      --stages;
      break;
    }
    c = deeper;
  }
  if (failed(verifyKernelConfigFitsTarget(in.op, c, in.target)))
    return failure();
  return c;
}

/// The families, in the order selection tries them.
static const FamilyRule kFamilies[] = {
    {KernelFamily::Merge, mergeApplies, chooseMerge},
    {KernelFamily::Rows, rowsApplies, chooseRows},
    {KernelFamily::Wgmma, wgmmaApplies, chooseWgmma},
    {KernelFamily::MmaSync, mmaSyncApplies, chooseMmaSync},
};

/// What selection looks at in `op`; fails with a diagnostic where the
/// shapes it needs are not static.
static FailureOr<OpShape> analyseOp(Operation *op) {
  auto headDimOf = [](Value v) {
    return cast<ShapedType>(v.getType()).getShape().back();
  };
  OpShape s;
  Value mergedV = llvm::TypeSwitch<Operation *, Value>(op)
                      .Case<MergeStateOp, MergeStateInPlaceOp, MergeStatesOp>(
                          [](auto m) { return m.getV(); })
                      .Default([](Operation *) { return Value(); });
  if (mergedV) {
    s.merge = true;
    s.headDim = headDimOf(mergedV);
    if (ShapedType::isDynamic(s.headDim) || s.headDim % 8 != 0 ||
        s.headDim / 8 > 1024)
      return op->emitError("merge lowering needs a static head_dim multiple "
                           "of 8 and <= 8192"),
             failure();
    return s;
  }
  auto a = dyn_cast<PagedAttentionOp>(op);
  if (!a)
    return op->emitError("no kernel family for this op"), failure();
  auto qt = cast<ShapedType>(a.getQ().getType());
  auto kt = cast<ShapedType>(a.getKv()[0].getType());
  bool hnd = a.getKvLayout() == KVLayout::HND;
  int64_t headsDim = a.getKv().size() == 1 ? (hnd ? 2 : 3) : (hnd ? 1 : 2);
  int64_t hqo = qt.getDimSize(1), hkv = kt.getDimSize(headsDim);
  if (ShapedType::isDynamic(hqo) || ShapedType::isDynamic(hkv))
    return a.emitError("attention lowering needs static head counts (dims of "
                       "'q' and the KV cache)"),
           failure();
  s.headDim = qt.getDimSize(2);
  s.group = hqo / hkv;
  s.decode = a.isDecode();
  s.qType = qt.getElementType();
  s.kvType = kt.getElementType();
  s.mixedTypes = s.qType != s.kvType;
  s.heavyOptions =
      a.getPosEncoding() != PosEncoding::None || !a.getLogitsSoftCap().isZero();
  s.customMask = a.hasCustomMask();
  s.planned = !a.getPlan().empty();
  s.accumulate = a.getAccumulate();
  s.causal = a.getCausal();
  s.rope = a.getPosEncoding() == PosEncoding::RopeLlama;
  return s;
}

FailureOr<KernelConfigAttr>
cascade::selectKernelConfig(Operation *op, const KernelConfigOptions &opts,
                            const TargetInfo &target) {
  FailureOr<OpShape> shape = analyseOp(op);
  if (failed(shape))
    return failure();
  SelectionInput in{op, *shape, opts, target};
  for (const FamilyRule &rule : kFamilies)
    if (rule.applies(in))
      return rule.choose(in);
  if (isFp8KVType(shape->kvType) &&
      !fp8KVConvertSupported(target.computeCapability))
    return op->emitError("an fp8 KV cache (")
               << shape->kvType << ") needs sm_"
               << kFp8ConvertMinComputeCapability
               << " or newer (cvt.rn.f16x2.e4m3x2 / .e5m2x2); the target is "
               << target.chip,
           failure();
  if (shape->mixedTypes)
    return op->emitError("q and KV of different dtypes run on the rows kernel "
                         "family, which needs head_dim 8, 16, 32, 64, 128 or "
                         "256; got ")
               << shape->headDim,
           failure();
  return op->emitError("no kernel family for this op"), failure();
}

FailureOr<KernelConfigAttr>
cascade::selectKernelConfig(Operation *op, const KernelConfigOptions &opts) {
  StringRef chip = opts.chip.empty() ? StringRef(kDefaultChip) : opts.chip;
  const TargetInfo *target = lookupTarget(chip);
  if (!target)
    return op->emitError("kernel selection does not know chip '")
               << chip << "' (known: " << getKnownChipsString() << ")",
           failure();
  return selectKernelConfig(op, opts, *target);
}

//===----------------------------------------------------------------------===//
// cascade-select-kernel-config
//===----------------------------------------------------------------------===//

namespace {
struct SelectKernelConfigPass
    : cascade::impl::CascadeSelectKernelConfigBase<SelectKernelConfigPass> {
  using Base::Base;

  /// The pass's options as the generated struct that selection takes.
  KernelConfigOptions getSelectionOptions() const {
    KernelConfigOptions o;
    o.overwrite = overwrite;
    o.chip = chip;
    o.mergeThreads = mergeThreads;
    o.rowsThreads = rowsThreads;
    o.rowsKVTile = rowsKVTile;
    o.rowsMaxStages = rowsMaxStages;
    o.rowsSmemKiB = rowsSmemKiB;
    o.rowsMaxGroup = rowsMaxGroup;
    o.rowsMaxGroupFp8 = rowsMaxGroupFp8;
    o.mmaQTile = mmaQTile;
    o.mmaKVTile = mmaKVTile;
    o.mmaStages = mmaStages;
    o.mmaWarpsKV = mmaWarpsKV;
    o.mmaMinBlocksPerSM = mmaMinBlocksPerSM;
    o.wgmma = wgmma;
    o.wgmmaKVTile = wgmmaKVTile;
    o.wgmmaStages = wgmmaStages;
    o.wgmmaConsumers = wgmmaConsumers;
    o.wgmmaSplitKVBarriers = wgmmaSplitKVBarriers;
    return o;
  }

  void runOnOperation() override {
    FailureOr<const TargetInfo *> target =
        resolveSelectionTarget(getOperation(), chip);
    if (failed(target))
      return signalPassFailure();
    KernelConfigOptions opts = getSelectionOptions();
    auto helper = getContext()
                      .getLoadedDialect<CascadeDialect>()
                      ->getKernelConfigAttrHelper();
    bool failedAny = false;
    getOperation()->walk([&](Operation *op) {
      if (!isa<MergeStateOp, MergeStateInPlaceOp, MergeStatesOp,
               PagedAttentionOp>(op) ||
          op->getParentOfType<gpu::GPUModuleOp>())
        return;
      if (KernelConfigAttr kept = helper.getAttr(op); kept && !overwrite) {
        // A hand-written configuration must still fit the chip.
        if (failed(verifyKernelConfigFitsTarget(op, kept, **target)))
          failedAny = true;
        return;
      }
      FailureOr<KernelConfigAttr> c = selectKernelConfig(op, opts, **target);
      if (failed(c)) {
        failedAny = true;
        return;
      }
      helper.setAttr(op, *c);
    });
    if (failedAny)
      signalPassFailure();
  }
};
} // namespace
