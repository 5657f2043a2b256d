//===- DecomposeLevels.cpp - Multi-level cascade -> per-level ops ---------===//
//
// A multi-level cascade is the merge over its levels of each level's
// attention state. This pass spells that out: one `cascade.paged_attention`
// per level, folded into level 0's state with `cascade.merge_state_in_place`.
//
//===----------------------------------------------------------------------===//

#include "cascade/Dialect/Cascade/IR/AttentionOptions.h"
#include "cascade/Dialect/Cascade/IR/CascadeOps.h"
#include "cascade/Dialect/Cascade/Transforms/Passes.h"

#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::cascade {
#define GEN_PASS_DEF_CASCADEDECOMPOSELEVELS
#include "cascade/Dialect/Cascade/Transforms/Passes.h.inc"
} // namespace mlir::cascade

using namespace mlir;
using namespace mlir::cascade;

namespace {

/// Creates an uninitialized value shaped like `like` (a tensor or a memref),
/// with its dynamic sizes read from `like`. On memrefs the caller frees it.
Value createTemporary(OpBuilder &b, Location loc, Value like) {
  auto type = cast<ShapedType>(like.getType());
  SmallVector<Value> dynSizes;
  for (int64_t d = 0; d < type.getRank(); ++d) {
    if (!type.isDynamicDim(d))
      continue;
    if (isa<RankedTensorType>(type))
      dynSizes.push_back(tensor::DimOp::create(b, loc, like, d));
    else
      dynSizes.push_back(memref::DimOp::create(b, loc, like, d));
  }
  if (auto tt = dyn_cast<RankedTensorType>(type))
    return tensor::EmptyOp::create(b, loc, tt.getShape(), tt.getElementType(),
                                   dynSizes);
  auto mt = cast<MemRefType>(type);
  // A fresh identity-layout buffer in the destination's memory space.
  auto plain =
      MemRefType::get(mt.getShape(), mt.getElementType(),
                      MemRefLayoutAttrInterface(), mt.getMemorySpace());
  return memref::AllocOp::create(b, loc, plain, dynSizes);
}

struct DecomposeMultiLevel : OpRewritePattern<MultiLevelAttentionOp> {
  DecomposeMultiLevel(MLIRContext *ctx, bool fuseMerges)
      : OpRewritePattern(ctx), fuseMerges(fuseMerges) {}

  LogicalResult matchAndRewrite(MultiLevelAttentionOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    bool onTensors = op.getNumResults() != 0;
    unsigned numLevels = op.getNumLevels();

    // Level `l`'s attention into destinations (o, lse); with `accumulate`
    // it merges its state into the state they hold.
    auto emitLevel = [&](unsigned l, Value o, Value lse, bool accumulate) {
      SmallVector<Type, 2> results;
      if (onTensors)
        results = {o.getType(), lse.getType()};
      bool causal =
          op.getCausal() && l + 1 == numLevels && !op.isDecodeLevel(l);
      // A decode level reads no qo_indptr: one query per request.
      Value qoIndptr = op.isDecodeLevel(l) ? Value() : op.getQoIndptr()[l];
      // The level keeps its plan (if the cascade is planned).
      ValueRange plan =
          op.getPlans().empty() ? ValueRange{} : op.getPlans().slice(l, 1);
      auto level = PagedAttentionOp::create(
          rewriter, loc, results, op.getQ(), op.getQPe(), op.getKv(), qoIndptr,
          op.getKvIndptr()[l], op.getLevelKvIndices(l),
          op.getKvLastPageLen()[l], plan, o, lse, op.getPageSizeAttr(),
          op.getKvLayoutAttr(), causal ? rewriter.getUnitAttr() : UnitAttr(),
          op.getLseBaseAttr(),
          accumulate ? rewriter.getUnitAttr() : UnitAttr());
      rewriter.modifyOpInPlace(level, [&] {
        // The score options and the fp8 scales: copied whole.
        copyScoreOptions(op, level);
        if (Value s = op.getKScale())
          level.getKScaleMutable().assign(s);
        if (Value s = op.getVScale())
          level.getVScaleMutable().assign(s);
        // The state inputs join the cascade's softmax once: in the first
        // level.
        if (l == 0)
          for (auto [name, value] : op.getPresentStateInputs())
            level.getStateInputMutable(name)->assign(value);
      });
      return level;
    };

    PagedAttentionOp first = emitLevel(0, op.getO(), op.getLse(), false);
    Value accV = onTensors ? first.getResult(0) : op.getO();
    Value accS = onTensors ? first.getResult(1) : op.getLse();
    for (unsigned l = 1; l < numLevels; ++l) {
      if (fuseMerges) {
        // The level merges itself into the running state: no temporary.
        PagedAttentionOp level = emitLevel(l, accV, accS, true);
        if (onTensors) {
          accV = level.getResult(0);
          accS = level.getResult(1);
        }
        continue;
      }
      Value tmpV = createTemporary(rewriter, loc, op.getO());
      Value tmpS = createTemporary(rewriter, loc, op.getLse());
      PagedAttentionOp level = emitLevel(l, tmpV, tmpS, false);
      Value levelV = onTensors ? level.getResult(0) : tmpV;
      Value levelS = onTensors ? level.getResult(1) : tmpS;
      SmallVector<Type, 2> results;
      if (onTensors)
        results = {accV.getType(), accS.getType()};
      auto merge = MergeStateInPlaceOp::create(rewriter, loc, results, levelV,
                                               levelS, /*mask=*/Value(), accV,
                                               accS, op.getLseBaseAttr());
      if (onTensors) {
        accV = merge.getResult(0);
        accS = merge.getResult(1);
      } else {
        memref::DeallocOp::create(rewriter, loc, tmpV);
        memref::DeallocOp::create(rewriter, loc, tmpS);
      }
    }
    if (onTensors)
      rewriter.replaceOp(op, ValueRange{accV, accS});
    else
      rewriter.eraseOp(op);
    return success();
  }

private:
  bool fuseMerges;
};

struct CascadeDecomposeLevelsPass
    : mlir::cascade::impl::CascadeDecomposeLevelsBase<
          CascadeDecomposeLevelsPass> {
  using Base::Base;
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    populateDecomposeLevelsPatterns(patterns, fuseMerges);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace

void mlir::cascade::populateDecomposeLevelsPatterns(RewritePatternSet &patterns,
                                                    bool fuseMerges) {
  patterns.add<DecomposeMultiLevel>(patterns.getContext(), fuseMerges);
}
