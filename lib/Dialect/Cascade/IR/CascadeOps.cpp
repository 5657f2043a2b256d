//===- CascadeOps.cpp - Cascade dialect operations ------------------------===//
//
// Verifiers and interface implementations of the cascade ops.
//
//===----------------------------------------------------------------------===//

#include "cascade/Dialect/Cascade/IR/CascadeOps.h"
#include "VerifyUtils.h"
#include "cascade/Dialect/Cascade/IR/AttentionOptions.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/DialectImplementation.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/OpImplementation.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/TypeSwitch.h"

#include <cmath>

using namespace mlir;
using namespace mlir::cascade;
using namespace mlir::cascade::detail;

//===----------------------------------------------------------------------===//
// Shared verification helpers
//===----------------------------------------------------------------------===//

namespace {

/// Checks the destination-passing form shared by every cascade op: all shaped
/// operands are tensors (then there are two results, typed like the
/// destinations) or all are memrefs (then there are no results).
LogicalResult verifyDpsForm(Operation *op, ValueRange shapedOperands) {
  auto dps = cast<DestinationStyleOpInterface>(op);
  bool anyTensor = false, anyMemRef = false;
  for (Value v : shapedOperands) {
    anyTensor |= isa<RankedTensorType>(v.getType());
    anyMemRef |= isa<MemRefType>(v.getType());
  }
  if (anyTensor && anyMemRef)
    return op->emitOpError(
        "operands must be all tensors or all memrefs, not a mix");
  if (anyMemRef) {
    if (op->getNumResults() != 0)
      return op->emitOpError("on memrefs must have no results, got ")
             << op->getNumResults();
    return success();
  }
  if (op->getNumResults() != 2)
    return op->emitOpError("on tensors must have 2 results, got ")
           << op->getNumResults();
  for (auto [i, init] : llvm::enumerate(dps.getDpsInits()))
    if (op->getResult(i).getType() != init.getType())
      return op->emitOpError("result #")
             << i << " type " << op->getResult(i).getType()
             << " does not match its destination type " << init.getType();
  return success();
}

/// Checks one attention state `(v [L, H, D], s [L, H])`.
LogicalResult verifyState(Operation *op, Value v, Value s, StringRef vName,
                          StringRef sName) {
  auto vt = cast<ShapedType>(v.getType());
  auto st = cast<ShapedType>(s.getType());
  if (vt.getRank() != 3)
    return op->emitOpError("'")
           << vName << "' must have rank 3 ([L, H, D]), got rank "
           << vt.getRank();
  if (st.getRank() != 2)
    return op->emitOpError("'")
           << sName << "' must have rank 2 ([L, H]), got rank " << st.getRank();
  Type ve = vt.getElementType();
  if (!ve.isF16() && !ve.isBF16() && !ve.isF32())
    return op->emitOpError("'")
           << vName << "' element type must be f16, bf16 or f32, got " << ve;
  if (!st.getElementType().isF32())
    return op->emitOpError("'") << sName << "' element type must be f32, got "
                                << st.getElementType();
  for (unsigned d = 0; d < 2; ++d)
    if (!dimsAgree(vt.getDimSize(d), st.getDimSize(d)))
      return op->emitOpError("'")
             << sName << "' shape " << shapeStr(st) << " does not match '"
             << vName << "' shape " << shapeStr(vt) << " in dim " << d;
  return success();
}

/// Checks that two states have the same element type and compatible shapes.
LogicalResult verifySameState(Operation *op, Value v0, StringRef n0, Value v1,
                              StringRef n1) {
  auto t0 = cast<ShapedType>(v0.getType());
  auto t1 = cast<ShapedType>(v1.getType());
  if (t0.getElementType() != t1.getElementType())
    return op->emitOpError("'")
           << n1 << "' element type " << t1.getElementType()
           << " does not match '" << n0 << "' element type "
           << t0.getElementType();
  if (t0.getRank() != t1.getRank())
    return op->emitOpError("'")
           << n1 << "' rank " << t1.getRank() << " does not match '" << n0
           << "' rank " << t0.getRank();
  for (int64_t d = 0; d < t0.getRank(); ++d)
    if (!dimsAgree(t0.getDimSize(d), t1.getDimSize(d)))
      return op->emitOpError("'")
             << n1 << "' shape " << shapeStr(t1) << " does not match '" << n0
             << "' shape " << shapeStr(t0);
  return success();
}

/// Checks a 1-D i32 index array.
LogicalResult verifyIndexArray(Operation *op, Value v, StringRef name) {
  auto t = cast<ShapedType>(v.getType());
  if (t.getRank() != 1)
    return op->emitOpError("'")
           << name << "' must be 1-D, got rank " << t.getRank();
  if (!t.getElementType().isInteger(32))
    return op->emitOpError("'")
           << name << "' element type must be i32, got " << t.getElementType();
  return success();
}

/// Checks the index arrays of one level: `[B+1]`, `[B+1]`, `[nnz]`, `[B]`
/// (qo_indptr and kv_indices may be absent).
LogicalResult verifyLevelIndices(Operation *op, Value qoIndptr, Value kvIndptr,
                                 Value kvIndices, Value kvLastPageLen,
                                 const Twine &where) {
  std::string suffix = where.str();
  if (qoIndptr && failed(verifyIndexArray(op, qoIndptr, "qo_indptr" + suffix)))
    return failure();
  if (failed(verifyIndexArray(op, kvIndptr, "kv_indptr" + suffix)) ||
      (kvIndices &&
       failed(verifyIndexArray(op, kvIndices, "kv_indices" + suffix))) ||
      failed(verifyIndexArray(op, kvLastPageLen, "kv_last_page_len" + suffix)))
    return failure();
  int64_t kvp = cast<ShapedType>(kvIndptr.getType()).getDimSize(0);
  int64_t last = cast<ShapedType>(kvLastPageLen.getType()).getDimSize(0);
  if (!ShapedType::isDynamic(kvp) && kvp < 2)
    return op->emitOpError("'kv_indptr")
           << suffix << "' must have at least 2 entries ([B+1], B >= 1), got "
           << kvp;
  if (qoIndptr) {
    int64_t qop = cast<ShapedType>(qoIndptr.getType()).getDimSize(0);
    if (!dimsAgree(qop, kvp))
      return op->emitOpError("'qo_indptr")
             << suffix << "' has " << qop << " entries but 'kv_indptr" << suffix
             << "' has " << kvp << "; both are [B+1]";
  }
  if (!ShapedType::isDynamic(kvp) && !dimsAgree(last, kvp - 1))
    return op->emitOpError("'kv_last_page_len")
           << suffix << "' has " << last << " entries but 'kv_indptr" << suffix
           << "' has " << kvp << "; expected [B] and [B+1]";
  return success();
}

/// The latent form's plans: none yet.
constexpr char kLatentPlan[] =
    "a latent (MLA) level takes no plan yet: its kernels, whose query rows "
    "are the heads, have no plan-phase schedule";

template <typename OpTy> AttentionView viewOf(OpTy op) {
  return AttentionView{op.getQ(),
                       op.getQPe(),
                       op.getKv(),
                       op.getO(),
                       op.getLse(),
                       static_cast<int64_t>(op.getPageSize()),
                       op.getKvLayout(),
                       getScoreOptions(op),
                       op.getKScale(),
                       op.getVScale(),
                       op.getPresentStateInputs()};
}

template <typename OpTy> float effectiveSmScale(OpTy op) {
  if (std::optional<float> sm = getScoreOptions(op).smScale)
    return *sm;
  int64_t d = cast<ShapedType>(op.getQ().getType()).getDimSize(2);
  return 1.0f / std::sqrt(static_cast<float>(d));
}

/// Memory effects: reads of every memref operand, writes of the
/// destinations. Tensor forms have none.
void addEffects(
    Operation *op,
    SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>>
        &effects) {
  auto dps = cast<DestinationStyleOpInterface>(op);
  for (OpOperand &operand : op->getOpOperands()) {
    if (!isa<MemRefType>(operand.get().getType()))
      continue;
    effects.emplace_back(MemoryEffects::Read::get(), &operand,
                         SideEffects::DefaultResource::get());
    if (dps.isDpsInit(&operand))
      effects.emplace_back(MemoryEffects::Write::get(), &operand,
                           SideEffects::DefaultResource::get());
  }
}

} // namespace

//===----------------------------------------------------------------------===//
// MergeStateOp
//===----------------------------------------------------------------------===//

LogicalResult MergeStateOp::verify() {
  if (failed(verifyDpsForm(*this, getOperands())) ||
      failed(verifyState(*this, getVA(), getSA(), "v_a", "s_a")) ||
      failed(verifyState(*this, getVB(), getSB(), "v_b", "s_b")) ||
      failed(verifyState(*this, getV(), getS(), "v", "s")) ||
      failed(verifySameState(*this, getVA(), "v_a", getVB(), "v_b")) ||
      failed(verifySameState(*this, getVA(), "v_a", getV(), "v")) ||
      failed(verifySameState(*this, getSA(), "s_a", getSB(), "s_b")) ||
      failed(verifySameState(*this, getSA(), "s_a", getS(), "s")))
    return failure();
  return success();
}

void MergeStateOp::getEffects(
    SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>>
        &effects) {
  addEffects(*this, effects);
}

//===----------------------------------------------------------------------===//
// MergeStateInPlaceOp
//===----------------------------------------------------------------------===//

LogicalResult MergeStateInPlaceOp::verify() {
  if (failed(verifyDpsForm(*this, getOperands())) ||
      failed(
          verifyState(*this, getVOther(), getSOther(), "v_other", "s_other")) ||
      failed(verifyState(*this, getV(), getS(), "v", "s")) ||
      failed(verifySameState(*this, getV(), "v", getVOther(), "v_other")) ||
      failed(verifySameState(*this, getS(), "s", getSOther(), "s_other")))
    return failure();
  if (Value mask = getMask()) {
    auto mt = cast<ShapedType>(mask.getType());
    if (mt.getRank() != 1)
      return emitOpError("'mask' must be 1-D ([L]), got rank ") << mt.getRank();
    if (!mt.getElementType().isInteger(1) && !mt.getElementType().isInteger(8))
      return emitOpError("'mask' element type must be i1 or i8, got ")
             << mt.getElementType();
    int64_t rows = cast<ShapedType>(getV().getType()).getDimSize(0);
    if (!dimsAgree(mt.getDimSize(0), rows))
      return emitOpError("'mask' has ")
             << mt.getDimSize(0) << " entries but 'v' has " << rows << " rows";
  }
  return success();
}

void MergeStateInPlaceOp::getEffects(
    SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>>
        &effects) {
  addEffects(*this, effects);
}

//===----------------------------------------------------------------------===//
// MergeStatesOp
//===----------------------------------------------------------------------===//

LogicalResult MergeStatesOp::verify() {
  if (failed(verifyDpsForm(*this, getOperands())) ||
      failed(verifyState(*this, getV(), getS(), "v", "s")))
    return failure();
  auto vin = cast<ShapedType>(getVIn().getType());
  auto sin = cast<ShapedType>(getSIn().getType());
  auto vout = cast<ShapedType>(getV().getType());
  if (vin.getRank() != 4)
    return emitOpError("'v_in' must have rank 4 ([L, N, H, D]), got rank ")
           << vin.getRank();
  if (sin.getRank() != 3)
    return emitOpError("'s_in' must have rank 3 ([L, N, H]), got rank ")
           << sin.getRank();
  if (vin.getElementType() != vout.getElementType())
    return emitOpError("'v_in' element type ")
           << vin.getElementType() << " does not match 'v' element type "
           << vout.getElementType();
  if (!sin.getElementType().isF32())
    return emitOpError("'s_in' element type must be f32, got ")
           << sin.getElementType();
  for (unsigned d = 0; d < 3; ++d)
    if (!dimsAgree(sin.getDimSize(d), vin.getDimSize(d)))
      return emitOpError("'s_in' shape ")
             << shapeStr(sin) << " does not match 'v_in' shape "
             << shapeStr(vin) << " in dim " << d;
  // v_in [L, N, H, D] -> v [L, H, D].
  static constexpr std::pair<unsigned, unsigned> kOutToIn[] = {
      {0, 0}, {1, 2}, {2, 3}};
  for (auto [outDim, inDim] : kOutToIn)
    if (!dimsAgree(vout.getDimSize(outDim), vin.getDimSize(inDim)))
      return emitOpError("'v' shape ")
             << shapeStr(vout) << " does not match 'v_in' shape "
             << shapeStr(vin) << " ([L, N, H, D] -> [L, H, D])";
  return success();
}

void MergeStatesOp::getEffects(
    SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>>
        &effects) {
  addEffects(*this, effects);
}

//===----------------------------------------------------------------------===//
// PagedAttentionOp
//===----------------------------------------------------------------------===//

float PagedAttentionOp::getEffectiveSmScale() {
  return effectiveSmScale(*this);
}

/// Checks the optional plan operands of a split-KV launch.
static LogicalResult verifyPlan(PagedAttentionOp op) {
  ValueRange plan = op.getPlan();
  if (plan.empty())
    return success();
  if (op.isLatent())
    return op.emitOpError(kLatentPlan);
  // One !cascade.plan: planned at run time (CascadePlan.cpp).
  if (plan.size() == 1 && isa<PlanType>(plan[0].getType()))
    return verifyLevelPlan(op, plan[0].getType(), op.isDecode(),
                           cast<ShapedType>(op.getQ().getType()),
                           cast<ShapedType>(op.getKv()[0].getType()),
                           op.getKv().size() == 1, op.getKvLayout(),
                           op.getPageSize(), "");
  if (op.isDecode() && plan.size() != kNumPlanOperands)
    return op.emitOpError("expects ")
           << kNumPlanOperands
           << " plan operands for a decode (request_indices, kv_tile_indices, "
              "o_indptr, block_valid_mask, kv_chunk_size, tmp_v, tmp_s), got "
           << plan.size();
  if (!op.isDecode() && plan.size() != kNumPrefillPlanOperands)
    return op.emitOpError("expects ")
           << kNumPrefillPlanOperands
           << " plan operands for a prefill (request_indices, "
              "kv_tile_indices, o_indptr, block_valid_mask, kv_chunk_size, "
              "tmp_v, tmp_s, qo_tile_indices, merge_indptr), got "
           << plan.size();
  if (!isa<MemRefType>(op.getQ().getType()))
    return op.emitOpError("plan operands are only allowed on memrefs (after "
                          "bufferization)");
  static constexpr StringLiteral kNames[] = {
      "request_indices", "kv_tile_indices", "o_indptr", "block_valid_mask"};
  for (unsigned i = 0; i < 4; ++i) {
    auto t = dyn_cast<MemRefType>(plan[i].getType());
    unsigned width = i == 3 ? 8 : 32;
    if (!t || t.getRank() != 1 || !t.getElementType().isInteger(width))
      return op.emitOpError("plan operand '")
             << kNames[i] << "' must be a 1-D memref of i" << width << ", got "
             << plan[i].getType();
  }
  auto chunk = dyn_cast<MemRefType>(plan[4].getType());
  if (!chunk || chunk.getRank() != 1 || !chunk.getElementType().isInteger(32) ||
      !dimsAgree(chunk.getDimSize(0), 1))
    return op.emitOpError("plan operand 'kv_chunk_size' must be a one-element "
                          "memref of i32 (memref<1xi32>), got ")
           << plan[4].getType();
  auto qt = cast<ShapedType>(op.getQ().getType());
  auto tv = dyn_cast<MemRefType>(plan[5].getType());
  auto ts = dyn_cast<MemRefType>(plan[6].getType());
  auto ot = cast<ShapedType>(op.getO().getType());
  if (!tv || tv.getRank() != 3 || !tv.getElementType().isF32() ||
      !dimsAgree(tv.getDimSize(1), qt.getDimSize(1)) ||
      !dimsAgree(tv.getDimSize(2), ot.getDimSize(2)))
    return op.emitOpError("plan operand 'tmp_v' must be an f32 memref "
                          "[partial_rows, Hqo, D] (D: the output's head_dim), "
                          "got ")
           << plan[5].getType();
  if (!ts || ts.getRank() != 2 || !ts.getElementType().isF32() ||
      !dimsAgree(ts.getDimSize(0), tv.getDimSize(0)) ||
      !dimsAgree(ts.getDimSize(1), qt.getDimSize(1)))
    return op.emitOpError("plan operand 'tmp_s' must be an f32 memref "
                          "[partial_rows, Hqo], got ")
           << plan[6].getType();
  if (op.isDecode())
    return success();
  static constexpr StringLiteral kPrefillNames[] = {"qo_tile_indices",
                                                    "merge_indptr"};
  for (unsigned i = kPlanQOTileIndices; i <= kPlanMergeIndptr; ++i) {
    auto t = dyn_cast<MemRefType>(plan[i].getType());
    if (!t || t.getRank() != 1 || !t.getElementType().isInteger(32))
      return op.emitOpError("plan operand '")
             << kPrefillNames[i - kPlanQOTileIndices]
             << "' must be a 1-D memref of i32, got " << plan[i].getType();
  }
  return success();
}

/// FlashInfer's packed custom mask: 1-D i8 bits with [B+1] i32 byte
/// offsets, on a prefill level, instead of the causal mask.
LogicalResult verifyCustomMask(PagedAttentionOp op) {
  Value mask = op.getCustomMask(), indptr = op.getMaskIndptr();
  if (!mask && !indptr)
    return success();
  if (!mask || !indptr)
    return op.emitOpError("'custom_mask' and 'mask_indptr' go together");
  if (op.isDecode())
    return op.emitOpError("a custom mask needs 'qo_indptr' (a prefill level: "
                          "it masks [qo_len, kv_len] per request)");
  if (op.getCausal())
    return op.emitOpError("a custom mask replaces the causal mask: drop "
                          "'causal' (or spell it in the mask)");
  auto maskT = cast<ShapedType>(mask.getType());
  if (maskT.getRank() != 1 || !maskT.getElementType().isInteger(8))
    return op.emitOpError("'custom_mask' must be 1-D i8 (packed bits), got ")
           << mask.getType();
  if (failed(verifyIndexArray(op, indptr, "mask_indptr")))
    return failure();
  int64_t n = cast<ShapedType>(indptr.getType()).getDimSize(0);
  int64_t kvp = cast<ShapedType>(op.getKvIndptr().getType()).getDimSize(0);
  if (!dimsAgree(n, kvp))
    return op.emitOpError("'mask_indptr' has ")
           << n << " entries but 'kv_indptr' has " << kvp << "; both are [B+1]";
  return success();
}

LogicalResult PagedAttentionOp::verify() {
  SmallVector<Value> shaped;
  for (Value v : getOperands())
    if (isa<ShapedType>(v.getType()) && !llvm::is_contained(getPlan(), v))
      shaped.push_back(v);
  if (failed(verifyDpsForm(*this, shaped)) ||
      failed(verifyAttention(*this, viewOf(*this))) ||
      failed(verifyLevelIndices(*this, getQoIndptr(), getKvIndptr(),
                                getKvIndices(), getKvLastPageLen(), "")) ||
      failed(verifyPlan(*this)))
    return failure();
  if (failed(verifyCustomMask(*this)))
    return failure();
  if (isDecode()) {
    int64_t rows = cast<ShapedType>(getQ().getType()).getDimSize(0);
    int64_t batch =
        cast<ShapedType>(getKvLastPageLen().getType()).getDimSize(0);
    if (!dimsAgree(rows, batch))
      return emitOpError("decode (no 'qo_indptr') expects one query per "
                         "request, but 'q' has ")
             << rows << " rows and 'kv_last_page_len' has " << batch
             << " entries";
  }
  return success();
}

void PagedAttentionOp::getEffects(
    SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>>
        &effects) {
  addEffects(*this, effects);
  // The split-KV workspaces (tmp_v, tmp_s) are scratch that the kernels
  // write.
  MutableOperandRange plan = getPlanMutable();
  for (unsigned i = kPlanTmpV; i <= kPlanTmpS && i < plan.size(); ++i)
    if (isa<MemRefType>(plan[i].get().getType()))
      effects.emplace_back(MemoryEffects::Write::get(), &plan[i],
                           SideEffects::DefaultResource::get());
}

//===----------------------------------------------------------------------===//
// MultiLevelAttentionOp
//===----------------------------------------------------------------------===//

float MultiLevelAttentionOp::getEffectiveSmScale() {
  return effectiveSmScale(*this);
}

Value MultiLevelAttentionOp::getLevelKvIndices(unsigned l) {
  if (isRaggedLevel(l))
    return Value();
  unsigned tables = 0;
  for (unsigned i = 0; i < l; ++i)
    tables += !isRaggedLevel(i);
  return getKvIndices()[tables];
}

LogicalResult MultiLevelAttentionOp::verify() {
  if (failed(verifyDpsForm(*this, getOperands())) ||
      failed(verifyAttention(*this, viewOf(*this))))
    return failure();
  size_t n = getQoIndptr().size();
  if (n == 0)
    return emitOpError("expects at least one level");
  if (getKvIndptr().size() != n || getKvLastPageLen().size() != n)
    return emitOpError("expects one qo_indptr, kv_indptr and "
                       "kv_last_page_len per level, got ")
           << n << ", " << getKvIndptr().size() << " and "
           << getKvLastPageLen().size();
  for (auto [name, levels] : {std::pair("decode_levels", getDecodeLevels()),
                              std::pair("ragged_levels", getRaggedLevels())})
    if (levels && levels->size() != n)
      return emitOpError("'")
             << name << "' has " << levels->size()
             << " entries but the cascade has " << n << " levels";
  size_t tables = 0;
  for (size_t l = 0; l < n; ++l)
    tables += !isRaggedLevel(l);
  if (getKvIndices().size() != tables)
    return emitOpError("expects one kv_indices per level that is not "
                       "ragged (ragged_levels): ")
           << tables << " of " << n << " levels, got " << getKvIndices().size();
  for (size_t l = 0; l < n; ++l)
    if (failed(verifyLevelIndices(*this, getQoIndptr()[l], getKvIndptr()[l],
                                  getLevelKvIndices(l), getKvLastPageLen()[l],
                                  "[" + Twine(l) + "]")))
      return failure();
  return verifyPlans();
}

LogicalResult MultiLevelAttentionOp::verifyPlans() {
  ValueRange plans = getPlans();
  if (plans.empty())
    return success();
  if (isLatent())
    return emitOpError(kLatentPlan);
  if (plans.size() != getNumLevels())
    return emitOpError("expects one plan per level, got ")
           << plans.size() << " plans for " << getNumLevels() << " levels";
  auto q = cast<ShapedType>(getQ().getType());
  auto kv0 = cast<ShapedType>(getKv()[0].getType());
  for (auto [l, plan] : llvm::enumerate(plans))
    if (auto t = dyn_cast<PlanType>(plan.getType()); t && t.getAutoCascade())
      return emitOpError("plan [")
             << l
             << "] is an auto_cascade plan: it belongs on a plain "
                "cascade.paged_attention, whose levels it finds";
  for (auto [l, plan] : llvm::enumerate(plans))
    if (failed(verifyLevelPlan(*this, plan.getType(), isDecodeLevel(l), q, kv0,
                               getKv().size() == 1, getKvLayout(),
                               getPageSize(), " [" + Twine(l) + "]")))
      return failure();
  bool graph = cast<PlanType>(plans[0].getType()).isGraph();
  for (auto [l, plan] : llvm::enumerate(plans))
    if (cast<PlanType>(plan.getType()).isGraph() != graph)
      return emitOpError("plan [")
             << l << "] is " << (graph ? "not " : "")
             << "in CUDA-graph mode but plan [0] is" << (graph ? "" : " not")
             << "; all levels replay or none";
  return success();
}

void MultiLevelAttentionOp::getEffects(
    SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>>
        &effects) {
  addEffects(*this, effects);
}

//===----------------------------------------------------------------------===//
// TableGen'd definitions
//===----------------------------------------------------------------------===//

#define GET_OP_CLASSES
#include "cascade/Dialect/Cascade/IR/CascadeOps.cpp.inc"
