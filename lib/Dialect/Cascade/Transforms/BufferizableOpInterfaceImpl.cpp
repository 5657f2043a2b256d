//===- BufferizableOpInterfaceImpl.cpp - One-Shot Bufferize models --------===//
//
// Every cascade op is in destination-passing style, so bufferizing it means
// replacing each tensor operand by its buffer and dropping the results: the
// destinations' buffers then hold the output.
//
//===----------------------------------------------------------------------===//

#include "cascade/Dialect/Cascade/Transforms/BufferizableOpInterfaceImpl.h"
#include "cascade/Dialect/Cascade/IR/CascadeOps.h"

#include "mlir/Dialect/Bufferization/IR/BufferizableOpInterface.h"
#include "mlir/Dialect/Bufferization/IR/DstBufferizableOpInterfaceImpl.h"
#include "mlir/IR/DialectRegistry.h"

using namespace mlir;
using namespace mlir::bufferization;
using namespace mlir::cascade;

namespace {

template <typename OpTy>
struct CascadeOpBufferization : public DstBufferizableOpInterfaceExternalModel<
                                    CascadeOpBufferization<OpTy>, OpTy> {
  /// A destination is read only by the in-place merge and by an
  /// accumulating attention level; every other op overwrites it completely.
  bool bufferizesToMemoryRead(Operation *op, OpOperand &operand,
                              const AnalysisState &state) const {
    auto dps = cast<DestinationStyleOpInterface>(op);
    if (!dps.isDpsInit(&operand) || isa<MergeStateInPlaceOp>(op))
      return true;
    auto attention = dyn_cast<PagedAttentionOp>(op);
    return attention && attention.getAccumulate();
  }

  LogicalResult bufferize(Operation *op, RewriterBase &rewriter,
                          const BufferizationOptions &options,
                          BufferizationState &state) const {
    SmallVector<Value> operands;
    operands.reserve(op->getNumOperands());
    for (Value operand : op->getOperands()) {
      if (!isa<TensorType>(operand.getType())) {
        operands.push_back(operand);
        continue;
      }
      FailureOr<Value> buffer = getBuffer(rewriter, operand, options, state);
      if (failed(buffer))
        return failure();
      operands.push_back(*buffer);
    }
    auto dps = cast<DestinationStyleOpInterface>(op);
    SmallVector<Value> inits(operands.end() - dps.getNumDpsInits(),
                             operands.end());

    rewriter.setInsertionPoint(op);
    OperationState bufferized(op->getLoc(), op->getName());
    bufferized.addOperands(operands);
    bufferized.propertiesAttr = op->getPropertiesAsAttribute();
    bufferized.addAttributes(llvm::to_vector(op->getDiscardableAttrs()));
    rewriter.create(bufferized);
    replaceOpWithBufferizedValues(rewriter, op, inits);
    return success();
  }
};

template <typename... Ops> void attachModels(MLIRContext *ctx) {
  (Ops::template attachInterface<CascadeOpBufferization<Ops>>(*ctx), ...);
}

} // namespace

void mlir::cascade::registerBufferizableOpInterfaceExternalModels(
    DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *ctx, CascadeDialect *) {
    attachModels<MergeStateOp, MergeStateInPlaceOp, MergeStatesOp,
                 PagedAttentionOp, MultiLevelAttentionOp>(ctx);
  });
}
