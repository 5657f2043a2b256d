//===- KernelConfig.cpp - Kernel family and tiling selection --------------===//
//
// Default #cascade.kernel_config of every cascade op, and the
// cascade-select-kernel-config pass that records it. The choices:
// - merges: one 16-byte chunk of a state per thread, ~128 threads a block;
// - decode with a small GQA group (<= rows-max-group) and head_dim 64, 128
//   or 256: the bandwidth-bound rows family (all G query heads of a KV head
//   share each K/V tile read);
// - every other attention (prefill/append, shared-prefix levels, decode with
//   large groups or other head dims): the mma_sync family, FlashAttention-2
//   on tensor cores with the GQA group packed into the query rows;
// - q and KV of different dtypes (f16 / bf16 mixes): the rows family, which
//   converts both to f32.
//
//===----------------------------------------------------------------------===//

#include "cascade/Conversion/KernelConfig.h"
#include "cascade/Conversion/Passes.h"
#include "cascade/Dialect/Cascade/IR/CascadeDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"

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

/// Row stride (elements) of a tile of head_dim columns rounded up to 16:
/// SmemTileLayout's choice (swizzled rows of a multiple of 64 elements,
/// padded rows otherwise).
static int64_t mmaRowStride(int64_t headDim) {
  int64_t cols = llvm::alignTo(headDim, 16);
  return (cols / 8) % 8 == 0 ? cols : cols + 8;
}

int64_t cascade::mmaAttentionSharedBytes(KernelConfigAttr c, int64_t headDim) {
  int64_t stride = mmaRowStride(headDim);
  int64_t tiles =
      (c.getQTile() + 2 * c.getStages() * c.getKvTile()) * stride * 2;
  // Partial states of the warps along KV: per row, D f32 plus (m, l).
  int64_t merge = 0;
  if (c.getWarpsKV() > 1)
    merge =
        c.getQTile() * c.getWarpsKV() * (llvm::alignTo(headDim, 16) + 2) * 4;
  return std::max(tiles, merge);
}

static KernelConfigAttr mergeConfig(MLIRContext *ctx, int64_t headDim,
                                    const KernelConfigOptions &o) {
  int64_t tpt = headDim / 8;
  int64_t tpb = std::max<int64_t>(1, o.mergeThreads / tpt);
  return KernelConfigAttr::get(ctx, KernelFamily::Merge, {tpb * tpt, 1, 1}, tpb,
                               0, 1);
}

/// The rows family: D/8 lanes own 8 elements each, bdz slices of a tile;
/// the tile (tokens) and the pipeline depth fit the K/V smem budget.
static KernelConfigAttr rowsConfig(MLIRContext *ctx, int64_t headDim,
                                   const KernelConfigOptions &o) {
  int64_t bdx = headDim / 8;
  int64_t bdz = std::max<int64_t>(1, o.rowsThreads / bdx);
  int64_t nthreads = bdx * bdz;
  int64_t budget = o.rowsSmemKiB * 1024;
  int64_t tile = std::max<int64_t>(1, o.rowsKVTile), stages = 0;
  for (;; tile /= 2) {
    while ((tile * bdx) % nthreads != 0 || tile % bdz != 0)
      tile *= 2;
    int64_t stageBytes = 2 * tile * headDim * 2;
    stages = std::min<int64_t>(o.rowsMaxStages, budget / stageBytes);
    if (stages >= 2 || tile <= 16)
      break;
  }
  return KernelConfigAttr::get(ctx, KernelFamily::Rows, {bdx, 1, bdz}, 1, tile,
                               std::max<int64_t>(stages, 1));
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
static KernelConfigAttr
mmaConfig(MLIRContext *ctx, int64_t headDim, int64_t group, bool decode,
          bool heavyOptions, const KernelConfigOptions &o,
          function_ref<InFlightDiagnostic()> emitError) {
  int64_t dp = llvm::alignTo(headDim, 16);
  int64_t qTile, warpsQ, warpsKV, kvTile, stages;
  if (decode) {
    qTile = o.mmaQTile
                ? o.mmaQTile
                : std::min<int64_t>(
                      128, llvm::PowerOf2Ceil(std::max<int64_t>(group, 16)));
    warpsQ = std::min<int64_t>(4, std::max<int64_t>(1, qTile / 16));
    warpsKV = o.mmaWarpsKV ? o.mmaWarpsKV : std::max<int64_t>(1, 4 / warpsQ);
    kvTile = o.mmaKVTile ? o.mmaKVTile : 16 * warpsKV * (dp <= 128 ? 2 : 1);
    stages = o.mmaStages ? o.mmaStages : 3;
  } else {
    qTile = o.mmaQTile ? o.mmaQTile : dp <= 128 && !heavyOptions ? 128 : 64;
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
    return KernelConfigAttr::getChecked(emitError, ctx, KernelFamily::MmaSync,
                                        ArrayRef<int64_t>{32, warpsQ, warpsKV},
                                        qTile, kvTile, stages);
  };
  // Fit the shared memory: fewer stages first, then shorter KV tiles.
  KernelConfigAttr c = make();
  while (c && mmaAttentionSharedBytes(c, headDim) > kMaxSharedBytesPerBlock) {
    if (stages > 2)
      --stages;
    else if (kvTile > 16 * warpsKV)
      kvTile /= 2;
    else
      break;
    c = make();
  }
  return c;
}

FailureOr<KernelConfigAttr>
cascade::selectKernelConfig(Operation *op, const KernelConfigOptions &o) {
  MLIRContext *ctx = op->getContext();
  auto headDimOf = [](Value v) {
    return cast<ShapedType>(v.getType()).getShape().back();
  };
  auto mergeOf = [&](Value v) -> FailureOr<KernelConfigAttr> {
    int64_t d = headDimOf(v);
    if (ShapedType::isDynamic(d) || d % 8 != 0 || d / 8 > 1024) {
      op->emitError("merge lowering needs a static head_dim multiple of 8 and "
                    "<= 8192");
      return failure();
    }
    return mergeConfig(ctx, d, o);
  };
  return llvm::TypeSwitch<Operation *, FailureOr<KernelConfigAttr>>(op)
      .Case<MergeStateOp, MergeStateInPlaceOp, MergeStatesOp>(
          [&](auto m) { return mergeOf(m.getV()); })
      .Case<PagedAttentionOp>([&](PagedAttentionOp a)
                                  -> FailureOr<KernelConfigAttr> {
        auto qt = cast<ShapedType>(a.getQ().getType());
        auto kt = cast<ShapedType>(a.getKv()[0].getType());
        bool hnd = a.getKvLayout() == KVLayout::HND;
        int64_t headsDim =
            a.getKv().size() == 1 ? (hnd ? 2 : 3) : (hnd ? 1 : 2);
        int64_t d = qt.getDimSize(2), hqo = qt.getDimSize(1),
                hkv = kt.getDimSize(headsDim);
        if (ShapedType::isDynamic(hqo) || ShapedType::isDynamic(hkv)) {
          a.emitError("attention lowering needs static head counts (dims of "
                      "'q' and the KV cache)");
          return failure();
        }
        int64_t group = hqo / hkv;
        bool mixed = qt.getElementType() != kt.getElementType();
        bool rowsOk = rowsFamilySupportsHeadDim(d);
        if (mixed) {
          if (!rowsOk) {
            a.emitError("q and KV of different dtypes run on the rows kernel "
                        "family, which needs head_dim 8, 16, 32, 64, 128 or "
                        "256; got ")
                << d;
            return failure();
          }
          return rowsConfig(ctx, d, o);
        }
        if (a.isDecode() && rowsOk && group <= o.rowsMaxGroup)
          return rowsConfig(ctx, d, o);
        // Options computed per score (ALiBi bias, soft cap) or per tile
        // (RoPE in shared memory) need registers that a 128-row tile does
        // not leave: one m16 tile per warp.
        bool heavyOptions = a.getPosEncoding() != PosEncoding::None ||
                            !a.getLogitsSoftCap().isZero();
        KernelConfigAttr c =
            mmaConfig(ctx, d, group, a.isDecode(), heavyOptions, o, [&] {
              return a.emitError("invalid mma_sync tuning options: ");
            });
        if (!c)
          return failure();
        return c;
      })
      .Default([&](Operation *) -> FailureOr<KernelConfigAttr> {
        op->emitError("no kernel family for this op");
        return failure();
      });
}

//===----------------------------------------------------------------------===//
// cascade-select-kernel-config
//===----------------------------------------------------------------------===//

namespace {
struct SelectKernelConfigPass
    : cascade::impl::CascadeSelectKernelConfigBase<SelectKernelConfigPass> {
  using Base::Base;
  void runOnOperation() override {
    KernelConfigOptions o;
    o.mergeThreads = mergeThreads;
    o.rowsThreads = rowsThreads;
    o.rowsKVTile = rowsKVTile;
    o.rowsMaxStages = rowsMaxStages;
    o.rowsSmemKiB = rowsSmemKiB;
    o.rowsMaxGroup = rowsMaxGroup;
    o.mmaQTile = mmaQTile;
    o.mmaKVTile = mmaKVTile;
    o.mmaStages = mmaStages;
    o.mmaWarpsKV = mmaWarpsKV;
    auto helper = getContext()
                      .getLoadedDialect<CascadeDialect>()
                      ->getKernelConfigAttrHelper();
    bool failedAny = false;
    getOperation()->walk([&](Operation *op) {
      if (!isa<MergeStateOp, MergeStateInPlaceOp, MergeStatesOp,
               PagedAttentionOp>(op) ||
          op->getParentOfType<gpu::GPUModuleOp>())
        return;
      if (helper.isAttrPresent(op) && !overwrite)
        return;
      FailureOr<KernelConfigAttr> c = selectKernelConfig(op, o);
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
