//===- CascadeSharding.cpp - Sharded levels of multi-level cascades -------===//
//
// The verifier of `cascade.multi_level_attention`'s `grid`, `grid_axes` and
// `sharded_levels` (docs/multi_gpu.md): which levels are split across the
// process group of a `shard.grid`.
//
//===----------------------------------------------------------------------===//

#include "cascade/Dialect/Cascade/IR/CascadeOps.h"

#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/IR/SymbolTable.h"

#include "llvm/ADT/SmallSet.h"

using namespace mlir;
using namespace mlir::cascade;

LogicalResult MultiLevelAttentionOp::verifySharding() {
  auto levels = getShardedLevels();
  if (!isSharded()) {
    if (levels)
      return emitOpError("'sharded_levels' needs a 'grid': the shard.grid "
                         "whose processes hold the shards");
    if (getGridAxes())
      return emitOpError("'grid_axes' needs a 'grid'");
    return success();
  }
  unsigned n = getNumLevels();
  if (!levels)
    return emitOpError("'grid' is given but 'sharded_levels' is not: say "
                       "which levels are split across the grid");
  if (levels->size() != n)
    return emitOpError("'sharded_levels' has ")
           << levels->size() << " entries but the cascade has " << n
           << " levels";
  if (llvm::none_of(*levels, [](bool b) { return b; }))
    return emitOpError("'sharded_levels' marks no level: drop 'grid' for a "
                       "cascade computed on one process");
  if (getCausal() && isShardedLevel(n - 1))
    return emitOpError("'causal' applies to the last level (")
           << n - 1
           << "), which is sharded: a causal mask is positional, shard "
              "prefix levels only";
  if (auto axes = getGridAxes()) {
    llvm::SmallSet<int16_t, 4> seen;
    for (int16_t a : *axes) {
      if (a < 0)
        return emitOpError("'grid_axes' has the negative axis ") << a;
      if (!seen.insert(a).second)
        return emitOpError("'grid_axes' names axis ") << a << " twice";
    }
  }
  return success();
}

LogicalResult
MultiLevelAttentionOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  if (!isSharded())
    return success();
  FlatSymbolRefAttr name = getGridAttr();
  auto grid = symbolTable.lookupNearestSymbolFrom<shard::GridOp>(*this, name);
  if (!grid)
    return emitOpError("'grid' ") << name << " does not name a shard.grid";
  if (auto axes = getGridAxes())
    for (int16_t a : *axes)
      if (a >= grid.getRank())
        return emitOpError("'grid_axes' names axis ")
               << a << " but " << name << " has " << grid.getRank()
               << (grid.getRank() == 1 ? " axis" : " axes");
  return success();
}
