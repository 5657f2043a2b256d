//===- WgmmaSelection.cpp - The wgmma selection rule ----------------------===//
//
// The wgmma family's selection rule (FamilyRegistry.h).
//
//===----------------------------------------------------------------------===//

#include "wgmma/WgmmaFamily.h"
#include "wgmma/WgmmaTraits.h"

#include "cascade/Conversion/GPUCodegen/Fp8Convert.h"

#include "llvm/Support/MathExtras.h"

using namespace mlir;
using namespace mlir::cascade;

/// Hopper's warpgroup MMA where the chip has it, for the ops where it pays:
/// query tiles of 64 rows a warpgroup (prefill, append, shared-prefix
/// levels; not decode), whole 128-byte swizzle panels (head_dim 64, 128,
/// 256), q and KV of one dtype.
bool cascade::wgmmaApplies(const SelectionInput &in) {
  const OpShape &s = in.shape;
  // An fp8 cache's producer converts each tile after its copies landed and
  // publishes it whole: one joint ring of three or more stages (no split
  // K/V barriers), else mma_sync.
  bool fp8Fits = !isFp8KVType(s.kvType) ||
                 (!in.opts.wgmmaSplitKVBarriers &&
                  (!in.opts.wgmmaStages || in.opts.wgmmaStages >= 3) &&
                  (!in.opts.wgmmaKVTile ||
                   wgmmaFp8GatherFits(in.opts.wgmmaKVTile, s.headDim)));
  // fp8 queries: both products on fp8 tensor cores, behind their option.
  if (wgmmaFp8Operands(s.qType))
    fp8Fits = in.opts.wgmmaFp8Operands && s.headDim == 128 && !s.rope &&
              !s.customMask && !in.opts.wgmmaSplitKVBarriers &&
              (!in.opts.wgmmaStages || in.opts.wgmmaStages >= 3) &&
              (!in.opts.wgmmaKVTile || in.opts.wgmmaKVTile == 128);
  // A narrower v (DeepSeek's 192 / 128 prefill) with wgmma-head-dim-vo
  // (default; checked against float64 on the H100, 1.5x mma_sync's rate at
  // 192 / 128 and 2.3x at 256 / 128). Not head_dim 192 with v of 192: O's
  // 96 registers a thread spill 372 bytes with three consumers, and two
  // have not run on the GPU (a hand-written configuration runs).
  bool dims = wgmmaFamilySupportsHeadDim(s.headDim) && s.headDimVo == s.headDim;
  if (!dims && in.opts.wgmmaHeadDimVo && s.headDimVo < s.headDim)
    dims =
        wgmmaWhyNotHeadDims(s.headDim, s.headDimVo, s.qType, s.kvType, s.rope)
            .empty();
  return in.opts.wgmma && !s.merge && !s.decode &&
         wgmmaSupportsKVType(s.qType, s.kvType, in.target) && dims && fp8Fits;
}

/// The wgmma family: a producer warpgroup and two consumer warpgroups (128
/// query rows), KV tiles of 128 tokens up to head_dim 128 and of 64 above
/// (head_dim 256's f32 output tile takes 128 registers a thread), and 64
/// with per-score options, custom masks (their words for 64 keys, as checked
/// on the GPU) or RoPE at any head_dim. With the producer's
/// copies publishing their tile, 128 tokens in 3 stages measured 456-472
/// TFLOP/s against 427-443 for 64 tokens in 4 at head_dim 128 causal on the
/// H200 (when the producer published each tile itself, the 64-token ring
/// was the faster by 1.3-3.3%); shorter KV tiles until two stages fit the
/// chip (three with wgmma-sweep-tiles: 48 tokens at head_dim 256), then as
/// many stages (up to 4) as fit.
/// With wgmma-split-kv-barriers, K and V get barrier rings of their own
/// (the same `stages` deep each: the shared memory is that of the joint
/// ring); where only two stages fit (head_dim 256 by default, or a KV tile
/// fixed by wgmma-kv-tile), they do too, since a joint ring needs three
/// (the attribute's verifier says why). Over an fp8 cache the staging rings
/// (fp8 bytes of K and V per stage) come on top, and the ring stays joint.
FailureOr<KernelConfigAttr> cascade::chooseWgmma(const SelectionInput &in) {
  const CascadeSelectKernelConfigOptions &o = in.opts;
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
  // fp8 queries (wgmmaFp8Operands) take two consumers (their S tile of 128
  // keys, O and P in registers; three spill 1.6 KB) over 128-key tiles (the
  // transposed V's rows whole panels), never shrunk.
  bool fp8 = isFp8KVType(s.kvType);
  bool operands = wgmmaFp8Operands(s.qType);
  bool plain = !s.planned && !s.accumulate && !fp8 && !s.heavyOptions;
  bool fp8Prefix =
      fp8 && !s.causal && !s.heavyOptions && !s.customMask && s.headDim == 128;
  int64_t consumers = o.wgmmaConsumers                    ? o.wgmmaConsumers
                      : !operands && (plain || fp8Prefix) ? 3
                                                          : 2;
  if (!wgmmaConsumersHoldHeadDim(consumers, s.headDimVo))
    consumers = 2;
  // Per-score options (ALiBi, soft cap), custom masks and RoPE keep more
  // values live next to the pipelined S and P tiles: 64-token tiles there.
  // So do more than two consumers, whose share of the register file (152 a
  // thread with three) spills a 128-token S tile (1.5 KB a thread at
  // head_dim 128 by ptxas).
  // (O's width is v's: a narrower v keeps the registers of its head_dim.)
  bool wide =
      s.headDimVo <= 128 && !s.heavyOptions && !s.customMask && consumers <= 2;
  // wgmma-sweep-tiles (default; checked against float64 on the H100):
  // three consumers at head_dim 64 hold a 96-token S tile (48 registers a
  // thread beside O's 32; 128 tokens spill 64 bytes): on the H100 (B8
  // L4096 32/8) 393-404 TFLOP/s causal against 370-371 for 64 tokens,
  // 434-439 non-causal against 410-422; at B2 L16384 0.95-0.99 of SDPA
  // against 0.92-0.95.
  bool sweep = o.wgmmaSweepTiles;
  bool wide3 = sweep && s.headDim <= 64 && !s.heavyOptions && !s.customMask &&
               consumers == 3 && !fp8;
  int64_t kvTile = o.wgmmaKVTile      ? o.wgmmaKVTile
                   : wide || operands ? 128
                   : wide3            ? 96
                                      : 64;
  // An fp8 cache needs a joint ring (three stages or more) and adds its
  // staging rings, so its KV tiles shrink by halves until three stages fit:
  // 64 tokens in 4 stages at head_dim 128 (224 KiB), 32 in 3 at 256.
  // Otherwise two stages may do (split K/V rings: 64 tokens at head_dim
  // 256); with wgmma-sweep-tiles the tiles shrink by 16 tokens until three
  // stages of a joint ring fit instead: 48 in 3 (208 KiB) at head_dim 256
  // measured 465-478 TFLOP/s causal and 495-509 non-causal on the H100 (B8
  // L4096 32/8) against 404-428 for 64 tokens in 2 split stages and 340-456
  // for 32 in 4 (joint or split); at B2 L16384 502-523 against 420-435
  // (0.76-0.78 of SDPA against 0.62-0.66).
  int64_t minStages = fp8 ? 3 : 2;
  int64_t minKVTile = operands ? kvTile
                      : fp8    ? std::max<int64_t>(16, 2048 / s.headDim)
                               : 16;
  int64_t stages = o.wgmmaStages ? o.wgmmaStages : sweep ? 3 : minStages;
  auto make = [&] {
    bool split = o.wgmmaSplitKVBarriers || (!o.wgmmaStages && stages < 3);
    // wgmma-page-lookahead (off: right against float64 on the H100 but no
    // faster, B8 L4096: -10% to +3%): the producer looks up a tile's pages
    // before waiting for its stage, where the family can
    // (wgmmaWhyNotPageLookahead).
    bool lookahead = o.wgmmaPageLookahead &&
                     wgmmaWhyNotPageLookahead(
                         s.pageTable, s.pageSize, s.qType, s.kvType, s.rope,
                         wgmmaOwnWidths(s.headDim, s.headDimVo), split, kvTile)
                         .empty();
    return KernelConfigAttr::getChecked(
        [&] { return in.op->emitError("invalid wgmma tuning options: "); },
        in.op->getContext(), KernelFamily::Wgmma,
        ArrayRef<int64_t>{128, 1 + consumers, 1}, 64 * consumers, kvTile,
        stages, split ? KVBarriers::Split : KVBarriers::Joint,
        /*min_blocks_per_sm=*/int64_t{0}, Fp8Staging::Convert,
        int64_t{o.wgmmaExp2Emulation}, int64_t{lookahead});
  };
  KernelConfigAttr c = make();
  if (!c)
    return failure();
  // Shorter KV tiles until the ring fits: by halves (over an fp8 cache the
  // gather's passes of 2048 / head_dim keys), by 16 tokens with
  // wgmma-sweep-tiles.
  while (!in.fits(c) && !o.wgmmaKVTile && kvTile > minKVTile) {
    kvTile = sweep && !fp8 ? kvTile - 16 : kvTile / 2;
    c = make();
  }
  // A KV tile fixed by wgmma-kv-tile that leaves no room for three stages
  // gets two, in split K/V rings (a joint ring of two deadlocks).
  while (c && !in.fits(c) && !o.wgmmaStages && stages > minStages) {
    --stages;
    c = make();
  }
  if (!c)
    return failure();
  // A deeper ring where it fits (up to 4 stages): the producer's copies of
  // a tile then have two tiles of compute to land in.
  while (!o.wgmmaStages && stages < 4) {
    ++stages;
    KernelConfigAttr deeper = make();
    if (!deeper || !in.fits(deeper)) {
      --stages;
      break;
    }
    c = deeper;
  }
  if (failed(in.verifyFits(c)))
    return failure();
  return c;
}
