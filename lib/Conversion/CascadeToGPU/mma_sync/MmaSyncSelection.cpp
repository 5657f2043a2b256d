//===- MmaSyncSelection.cpp - The mma_sync selection rule -----------------===//
//
// The mma_sync family's selection rule (FamilyRegistry.h).
//
//===----------------------------------------------------------------------===//

#include "mma_sync/MmaSyncFamily.h"
#include "mma_sync/MmaSyncTraits.h"

#include "cascade/Conversion/GPUCodegen/Fp8Convert.h"

#include "llvm/Support/MathExtras.h"

using namespace mlir;
using namespace mlir::cascade;

/// Tensor cores need q and KV of one dtype.
bool cascade::mmaSyncApplies(const SelectionInput &in) {
  return !in.shape.merge &&
         mmaSyncSupportsKVType(in.shape.qType, in.shape.kvType, in.target);
}

/// What the family's traits look at in an op that selection analysed.
static AttentionShape attentionShapeOf(const OpShape &s) {
  AttentionShape a;
  a.headDim = s.headDim;
  a.headDimVo = s.headDimVo;
  a.groupSize = s.group;
  a.qType = s.qType;
  a.kvType = s.kvType;
  a.decode = s.decode;
  a.split = s.planned;
  a.rope = s.rope;
  a.customMask = s.customMask;
  return a;
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
/// along KV until the block fits the chip's shared memory. fp8 decode
/// records the fp8 staging its shape can take (mmaSyncFp8Staging).
FailureOr<KernelConfigAttr> cascade::chooseMmaSync(const SelectionInput &in) {
  const CascadeSelectKernelConfigOptions &o = in.opts;
  const OpShape &s = in.shape;
  int64_t dp = llvm::alignTo(s.headDim, 16);
  int64_t qTile, warpsQ, warpsKV, kvTile, stages;
  int64_t minBlocks = std::max<int64_t>(o.mmaMinBlocksPerSM, 0);
  // fp8 decode whose scores and P V read K and V from their staging rings
  // (fp8_staging = direct_kv, recorded below): one warp along the rows, one
  // m16 tile.
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
  Fp8Staging staging = Fp8Staging::Convert;
  auto make = [&] {
    return KernelConfigAttr::getChecked(
        [&] { return in.op->emitError("invalid mma_sync tuning options: "); },
        in.op->getContext(), KernelFamily::MmaSync,
        ArrayRef<int64_t>{32, warpsQ, warpsKV}, qTile, kvTile, stages,
        KVBarriers::Joint, minBlocks, staging);
  };
  KernelConfigAttr c = make();
  if (!c)
    return failure();
  // fp8 decode: record whether K (and V) are read from their staging
  // tiles (it depends on the rows of a warp, which the fitting below keeps,
  // and sizes the shared memory that it checks).
  staging = mmaSyncFp8Staging(c, attentionShapeOf(s));
  if (staging != Fp8Staging::Convert) {
    c = make();
    if (!c)
      return failure();
  }
  // Fit the shared memory: fewer stages first, then shorter KV tiles, then
  // (unless the options fix them) fewer warps along KV, each with half the
  // tile.
  while (!in.fits(c)) {
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
  if (failed(in.verifyFits(c)))
    return failure();
  return c;
}
