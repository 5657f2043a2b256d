//===- ShardLevels.cpp - cascade-shard-levels
//------------------------------===//
//
// Partitions a multi-level cascade whose levels are sharded across a
// shard.grid into what every process runs: the cascade of its shards, an
// all-gather of the resulting states over the grid, their merge, and the
// levels every process holds (docs/multi_gpu.md).
//
//===----------------------------------------------------------------------===//

#include "cascade/Dialect/Cascade/IR/CascadeOps.h"
#include "cascade/Dialect/Cascade/Transforms/Passes.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::cascade {
#define GEN_PASS_DEF_CASCADESHARDLEVELS
#include "cascade/Dialect/Cascade/Transforms/Passes.h.inc"
} // namespace mlir::cascade

using namespace mlir;
using namespace mlir::cascade;

namespace {

/// The number of processes of `grid` along `axes`, dynamic when one of
/// them is.
int64_t groupSize(shard::GridOp grid, ArrayRef<int16_t> axes) {
  ArrayRef<int64_t> shape = grid.getShape();
  int64_t size = 1;
  for (int16_t a : axes)
    size = ShapedType::isDynamic(shape[a]) || ShapedType::isDynamic(size)
               ? ShapedType::kDynamic
               : size * shape[a];
  return size;
}

/// A fresh tensor of `like`'s type (its dynamic sizes from `like`).
Value emptyLike(OpBuilder &b, Location loc, Value like) {
  auto type = cast<RankedTensorType>(like.getType());
  SmallVector<Value> dyn;
  for (int64_t d = 0; d < type.getRank(); ++d)
    if (type.isDynamicDim(d))
      dyn.push_back(tensor::DimOp::create(b, loc, like, d));
  return tensor::EmptyOp::create(b, loc, type.getShape(), type.getElementType(),
                                 dyn);
}

struct ShardMultiLevel : OpRewritePattern<MultiLevelAttentionOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(MultiLevelAttentionOp op,
                                PatternRewriter &rewriter) const override {
    if (!op.isSharded() || op.getNumResults() == 0)
      return rewriter.notifyMatchFailure(op, "no sharded level on tensors");
    auto grid = SymbolTable::lookupNearestSymbolFrom<shard::GridOp>(
        op, op.getGridAttr());
    if (!grid) // The verifier rejects this.
      return rewriter.notifyMatchFailure(op, "'grid' is not a shard.grid");
    // Without grid_axes the group is the whole grid (shard's own default,
    // an empty list, is a group of one process: spelled out here).
    SmallVector<int16_t> axes;
    if (auto a = op.getGridAxes())
      axes.assign(a->begin(), a->end());
    else
      for (int64_t a = 0; a < grid.getRank(); ++a)
        axes.push_back(static_cast<int16_t>(a));
    int64_t world = groupSize(grid, axes);
    DenseI16ArrayAttr axesAttr = rewriter.getDenseI16ArrayAttr(axes);
    Location loc = op.getLoc();

    SmallVector<unsigned> sharded, local;
    for (unsigned l = 0, n = op.getNumLevels(); l < n; ++l)
      (op.isShardedLevel(l) ? sharded : local).push_back(l);

    // A cascade of the levels `levels` of `op` into (o, lse).
    auto cascadeOf = [&](ArrayRef<unsigned> levels, Value o, Value lse,
                         bool causal) {
      SmallVector<Value> qo, kp, ki, kl, plans;
      SmallVector<bool> decode, ragged;
      for (unsigned l : levels) {
        qo.push_back(op.getQoIndptr()[l]);
        kp.push_back(op.getKvIndptr()[l]);
        if (Value table = op.getLevelKvIndices(l))
          ki.push_back(table);
        kl.push_back(op.getKvLastPageLen()[l]);
        if (!op.getPlans().empty())
          plans.push_back(op.getPlans()[l]);
        decode.push_back(op.isDecodeLevel(l));
        ragged.push_back(op.isRaggedLevel(l));
      }
      DenseBoolArrayAttr decodeAttr, raggedAttr;
      if (op.getDecodeLevels())
        decodeAttr = rewriter.getDenseBoolArrayAttr(decode);
      if (op.getRaggedLevels())
        raggedAttr = rewriter.getDenseBoolArrayAttr(ragged);
      return MultiLevelAttentionOp::create(
          rewriter, loc, TypeRange{o.getType(), lse.getType()}, op.getQ(),
          op.getKv(), qo, kp, ki, kl, op.getKScale(), op.getVScale(),
          /*sinks=*/Value(), plans, o,
          lse, op.getPageSizeAttr(), op.getKvLayoutAttr(),
          causal ? rewriter.getUnitAttr() : UnitAttr(), op.getSmScaleAttr(),
          op.getLogitsSoftCapAttr(), op.getWindowLeftAttr(),
          op.getPosEncodingAttr(), op.getRopeScaleAttr(), op.getRopeThetaAttr(),
          op.getLseBaseAttr(), decodeAttr, raggedAttr,
          /*grid=*/FlatSymbolRefAttr(), /*grid_axes=*/DenseI16ArrayAttr(),
          /*sharded_levels=*/DenseBoolArrayAttr());
    };

    // 1. This process's shard of the sharded levels.
    auto mine = cascadeOf(sharded, emptyLike(rewriter, loc, op.getO()),
                          emptyLike(rewriter, loc, op.getLse()),
                          /*causal=*/false);

    // 2. [rows, 1, ...] -> all-gather along dim 1 -> [rows, W, ...].
    auto gather = [&](Value state) {
      auto type = cast<RankedTensorType>(state.getType());
      SmallVector<int64_t> one(type.getShape());
      one.insert(one.begin() + 1, 1);
      SmallVector<ReassociationIndices> re{{0, 1}};
      for (int64_t d = 1; d < type.getRank(); ++d)
        re.push_back({d + 1});
      auto expanded = tensor::ExpandShapeOp::create(
          rewriter, loc, RankedTensorType::get(one, type.getElementType()),
          state, re);
      SmallVector<int64_t> all(one);
      all[1] = world;
      return shard::AllGatherOp::create(
          rewriter, loc, RankedTensorType::get(all, type.getElementType()),
          op.getGridAttr(), axesAttr, expanded, rewriter.getIndexAttr(1));
    };
    Value gatheredV = gather(mine.getResult(0));
    Value gatheredS = gather(mine.getResult(1));

    // 3. Their merge: into the destinations, or a temporary when the
    //    levels every process holds follow.
    bool rest = !local.empty();
    Value mergeO = rest ? emptyLike(rewriter, loc, op.getO()) : op.getO();
    Value mergeL = rest ? emptyLike(rewriter, loc, op.getLse()) : op.getLse();
    auto merged = MergeStatesOp::create(
        rewriter, loc, TypeRange{mergeO.getType(), mergeL.getType()}, gatheredV,
        gatheredS, mergeO, mergeL, op.getLseBaseAttr());
    // The temporaries die with the op (bufferized: memref.dealloc, on the
    // GPU gpu.dealloc); nothing after it reads them.
    SmallVector<Value> temporaries{mine.getResult(0), mine.getResult(1),
                                   gatheredV, gatheredS};
    auto release = [&]() {
      for (Value t : temporaries)
        bufferization::DeallocTensorOp::create(rewriter, loc, t);
    };
    if (!rest) {
      release();
      rewriter.replaceOp(op, merged.getResults());
      return success();
    }

    // 4. The levels every process holds, merged into the destinations.
    auto others =
        cascadeOf(local, emptyLike(rewriter, loc, op.getO()),
                  emptyLike(rewriter, loc, op.getLse()), op.getCausal());
    auto result = MergeStateOp::create(
        rewriter, loc, TypeRange{op.getO().getType(), op.getLse().getType()},
        merged.getResult(0), merged.getResult(1), others.getResult(0),
        others.getResult(1), op.getO(), op.getLse(), op.getLseBaseAttr());
    temporaries.append({merged.getResult(0), merged.getResult(1),
                        others.getResult(0), others.getResult(1)});
    release();
    rewriter.replaceOp(op, result.getResults());
    return success();
  }
};

struct CascadeShardLevelsPass
    : cascade::impl::CascadeShardLevelsBase<CascadeShardLevelsPass> {
  using Base::Base;
  void runOnOperation() override {
    // The buffer form cannot take the gather's temporaries: refuse it.
    WalkResult memrefs = getOperation()->walk([](MultiLevelAttentionOp op) {
      if (!op.isSharded() || op.getNumResults() != 0)
        return WalkResult::advance();
      op.emitOpError("has sharded levels on memrefs: cascade-shard-levels "
                     "partitions the tensor form (run it before "
                     "bufferization)");
      return WalkResult::interrupt();
    });
    if (memrefs.wasInterrupted())
      return signalPassFailure();
    RewritePatternSet patterns(&getContext());
    populateShardLevelsPatterns(patterns);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace

void mlir::cascade::populateShardLevelsPatterns(RewritePatternSet &patterns) {
  patterns.add<ShardMultiLevel>(patterns.getContext());
}
