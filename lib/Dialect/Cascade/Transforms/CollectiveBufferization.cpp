//===- CollectiveBufferization.cpp - shard.all_gather to a runtime call ---===//
//
// The buffer form of the state gather that cascade-shard-levels emits: a
// fresh buffer for the gathered states and a call of the runtime's
// collective (NCCL), which the host code of the cascade then makes between
// the kernel launches. The shard.grid goes once no op refers to it.
//
//===----------------------------------------------------------------------===//

#include "cascade/Dialect/Cascade/Transforms/CollectiveBufferization.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/BufferizableOpInterface.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Shard/IR/ShardDialect.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/SymbolTable.h"

using namespace mlir;
using namespace mlir::bufferization;

namespace {

/// The runtime entry point for `elementType`, or "" when there is none.
std::string allGatherSymbol(Type elementType) {
  if (elementType.isF16())
    return "cascade_all_gather_f16";
  if (elementType.isBF16())
    return "cascade_all_gather_bf16";
  if (elementType.isF32())
    return "cascade_all_gather_f32";
  return "";
}

/// `name(memref<*xT>, memref<*xT>, i64, i64)`, declared once per module.
void declare(RewriterBase &rewriter, ModuleOp module, StringRef name,
             FunctionType type) {
  if (module.lookupSymbol(name))
    return;
  OpBuilder::InsertionGuard guard(rewriter);
  rewriter.setInsertionPointToStart(module.getBody());
  auto fn = func::FuncOp::create(rewriter, module.getLoc(), name, type);
  fn.setPrivate();
  fn->setAttr("llvm.emit_c_interface", rewriter.getUnitAttr());
}

struct AllGatherOpInterface
    : BufferizableOpInterface::ExternalModel<AllGatherOpInterface,
                                             shard::AllGatherOp> {
  bool bufferizesToMemoryRead(Operation *, OpOperand &,
                              const AnalysisState &) const {
    return true;
  }
  bool bufferizesToMemoryWrite(Operation *, OpOperand &,
                               const AnalysisState &) const {
    return false;
  }
  AliasingValueList getAliasingValues(Operation *, OpOperand &,
                                      const AnalysisState &) const {
    return {};
  }
  bool bufferizesToAllocation(Operation *, Value) const { return true; }

  LogicalResult bufferize(Operation *op, RewriterBase &rewriter,
                          const BufferizationOptions &options,
                          BufferizationState &state) const {
    auto gather = cast<shard::AllGatherOp>(op);
    auto type = cast<RankedTensorType>(gather.getType());
    std::string symbol = allGatherSymbol(type.getElementType());
    if (symbol.empty())
      return op->emitOpError("has element type ")
             << type.getElementType()
             << ": the runtime gathers f16, bf16 and f32 only";
    int64_t axis = gather.getGatherAxis().getSExtValue();
    if (type.isDynamicDim(axis))
      return op->emitOpError("gathers along a dynamic dimension: the grid "
                             "axes' sizes must be static to allocate the "
                             "result");
    auto module = op->getParentOfType<ModuleOp>();
    if (!module)
      return op->emitOpError("is not inside a module (the runtime call needs "
                             "a declaration)");
    FailureOr<Value> in =
        getBuffer(rewriter, gather.getInput(), options, state);
    if (failed(in))
      return failure();
    Location loc = op->getLoc();
    SmallVector<Value> dynSizes;
    for (int64_t d = 0; d < type.getRank(); ++d)
      if (type.isDynamicDim(d))
        dynSizes.push_back(memref::DimOp::create(rewriter, loc, *in, d));
    auto outType = MemRefType::get(type.getShape(), type.getElementType());
    Value out = memref::AllocOp::create(rewriter, loc, outType, dynSizes);

    int64_t axesMask = 0; // 0: every axis of the grid.
    for (int16_t a : gather.getGridAxes())
      axesMask |= int64_t(1) << a;
    auto unranked = UnrankedMemRefType::get(type.getElementType(), 0);
    Type i64 = rewriter.getI64Type();
    declare(rewriter, module, symbol,
            rewriter.getFunctionType({unranked, unranked, i64, i64}, {}));
    Value inArg = memref::CastOp::create(rewriter, loc, unranked, *in);
    Value outArg = memref::CastOp::create(rewriter, loc, unranked, out);
    Value axisArg = arith::ConstantIntOp::create(rewriter, loc, i64, axis);
    Value maskArg = arith::ConstantIntOp::create(rewriter, loc, i64, axesMask);
    func::CallOp::create(rewriter, loc, symbol, TypeRange{},
                         ValueRange{inArg, outArg, axisArg, maskArg});
    FlatSymbolRefAttr gridName = gather.getGridAttr();
    replaceOpWithBufferizedValues(rewriter, op, out);
    // The grid is a compile-time description: once nothing refers to it,
    // it goes (the host code's LLVM translation has no shard dialect).
    Operation *grid = SymbolTable::lookupSymbolIn(module, gridName);
    if (isa_and_nonnull<shard::GridOp>(grid) &&
        SymbolTable::symbolKnownUseEmpty(grid, module))
      rewriter.eraseOp(grid);
    return success();
  }
};

} // namespace

void mlir::cascade::registerCollectiveBufferizationExternalModels(
    DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *ctx, shard::ShardDialect *) {
    shard::AllGatherOp::attachInterface<AllGatherOpInterface>(*ctx);
  });
}
