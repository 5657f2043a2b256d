//===- RowsSelection.cpp - When rows runs an op, and its configuration ----===//
//
// The rows family's selection rule (FamilyRegistry.h).
//
//===----------------------------------------------------------------------===//

#include "rows/RowsFamily.h"
#include "rows/RowsTraits.h"

#include "cascade/Conversion/GPUCodegen/Fp8Convert.h"

#include "llvm/Support/MathExtras.h"

using namespace mlir;
using namespace mlir::cascade;

bool cascade::rowsApplies(const SelectionInput &in) {
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
         s.headDimVo == s.headDim &&
         rowsSupportsKVType(s.qType, s.kvType, in.target) &&
         (onlyRows || (s.decode && s.group <= maxGroup));
}

/// The rows family: D/8 lanes own 8 elements each, bdz slices of a tile;
/// the tile (tokens) and the pipeline depth fit the K/V smem budget (in
/// bytes: an fp8 cache's stages are half an f16 one's, so twice as many fit
/// and the bytes in flight stay those of f16).
FailureOr<KernelConfigAttr> cascade::chooseRows(const SelectionInput &in) {
  const CascadeSelectKernelConfigOptions &o = in.opts;
  int64_t headDim = in.shape.headDim;
  int64_t bdx = headDim / 8;
  int64_t bdz = std::max<int64_t>(1, o.rowsThreads / bdx);
  int64_t nthreads = bdx * bdz;
  int64_t budget = o.rowsSmemKiB * 1024;
  int64_t tile = std::max<int64_t>(1, o.rowsKVTile), stages = 0;
  for (;; tile /= 2) {
    while ((tile * bdx) % nthreads != 0 || tile % bdz != 0)
      tile *= 2;
    int64_t stageBytes = rowsKVStageBytes(tile, headDim, in.shape.kvType);
    stages = std::min<int64_t>(o.rowsMaxStages, budget / stageBytes);
    if (stages >= 2 || tile <= 16)
      break;
  }
  // Checked: rows-min-blocks-per-sm comes from the options as it is (and
  // selection checks the bound against the chip).
  KernelConfigAttr config = KernelConfigAttr::getChecked(
      [&] { return in.op->emitError("rows-min-blocks-per-sm: "); },
      in.op->getContext(), KernelFamily::Rows, ArrayRef<int64_t>{bdx, 1, bdz},
      int64_t{1}, tile, std::max<int64_t>(stages, 1), KVBarriers::Joint,
      o.rowsMinBlocksPerSM, Fp8Staging::Convert);
  if (!config)
    return failure();
  return config;
}
