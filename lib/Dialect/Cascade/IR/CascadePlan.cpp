//===- CascadePlan.cpp - !cascade.plan and cascade.plan -------------------===//
//
// The plan of one attention level as a value: its type (assembly,
// verification), the op that makes one, and the check that an attention
// op's plans fit its levels.
//
//===----------------------------------------------------------------------===//

#include "cascade/Dialect/Cascade/IR/CascadeOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::cascade;

#define GET_TYPEDEF_CLASSES
#include "cascade/Dialect/Cascade/IR/CascadeOpsTypes.cpp.inc"

void CascadeDialect::registerTypes() {
  addTypes<
#define GET_TYPEDEF_LIST
#include "cascade/Dialect/Cascade/IR/CascadeOpsTypes.cpp.inc"
      >();
}

//===----------------------------------------------------------------------===//
// PlanType
//===----------------------------------------------------------------------===//

/// `<decode|prefill, heads = Q / K, head_dim = D, page_size = P
///  [, graph_rows = R] [, auto_cascade]>`
Type PlanType::parse(AsmParser &parser) {
  StringRef mode;
  int64_t qo = 0, kv = 0, dim = 0, page = 0, rows = 0;
  SMLoc loc = parser.getCurrentLocation();
  if (parser.parseLess() || parser.parseKeyword(&mode))
    return {};
  if (mode != "decode" && mode != "prefill") {
    parser.emitError(loc, "expected 'decode' or 'prefill', got '")
        << mode << "'";
    return {};
  }
  if (parser.parseComma() || parser.parseKeyword("heads") ||
      parser.parseEqual() || parser.parseInteger(qo) || parser.parseSlash() ||
      parser.parseInteger(kv) || parser.parseComma() ||
      parser.parseKeyword("head_dim") || parser.parseEqual() ||
      parser.parseInteger(dim) || parser.parseComma() ||
      parser.parseKeyword("page_size") || parser.parseEqual() ||
      parser.parseInteger(page))
    return {};
  bool autoCascade = false;
  while (succeeded(parser.parseOptionalComma())) {
    if (succeeded(parser.parseOptionalKeyword("auto_cascade"))) {
      autoCascade = true;
      continue;
    }
    if (parser.parseKeyword("graph_rows") || parser.parseEqual() ||
        parser.parseInteger(rows))
      return {};
  }
  if (parser.parseGreater())
    return {};
  return parser.getChecked<PlanType>(loc, parser.getContext(),
                                     mode == "prefill", qo, kv, dim, page, rows,
                                     autoCascade);
}

void PlanType::print(AsmPrinter &printer) const {
  printer << "<" << (getPrefill() ? "prefill" : "decode")
          << ", heads = " << getNumQoHeads() << " / " << getNumKvHeads()
          << ", head_dim = " << getHeadDim()
          << ", page_size = " << getPageSize();
  if (isGraph())
    printer << ", graph_rows = " << getGraphRows();
  if (getAutoCascade())
    printer << ", auto_cascade";
  printer << ">";
}

LogicalResult PlanType::verify(function_ref<InFlightDiagnostic()> emitError,
                               bool prefill, int64_t numQoHeads,
                               int64_t numKvHeads, int64_t headDim,
                               int64_t pageSize, int64_t graphRows,
                               bool autoCascade) {
  if (numQoHeads < 1 || numKvHeads < 1 || numQoHeads % numKvHeads != 0)
    return emitError() << "plan heads must be positive with the query heads "
                          "a multiple of the KV heads, got "
                       << numQoHeads << " / " << numKvHeads;
  if (headDim < 8 || headDim > 256 || headDim % 8 != 0)
    return emitError() << "plan head_dim must be a positive multiple of 8 "
                          "and at most 256, got "
                       << headDim;
  if (pageSize < 1)
    return emitError() << "plan page_size must be positive, got " << pageSize;
  if (graphRows < 0)
    return emitError() << "plan graph_rows must be >= 0 (0: not CUDA-graph "
                          "mode), got "
                       << graphRows;
  if (autoCascade && prefill)
    return emitError() << "automatic cascades from IR are decode batches "
                          "(one query per request); got a prefill plan";
  return success();
}

//===----------------------------------------------------------------------===//
// PlanOp
//===----------------------------------------------------------------------===//

LogicalResult PlanOp::verify() {
  PlanType type = getPlan().getType();
  if (type.getPrefill() && !getQoIndptr())
    return emitOpError("a prefill plan needs 'qo_indptr'");
  if (!type.getPrefill() && getQoIndptr())
    return emitOpError("a decode plan takes no 'qo_indptr' (one query per "
                       "request)");
  int64_t fixedSplit = getFixedSplitPagesAttr().getInt();
  if (fixedSplit < 0)
    return emitOpError("'fixed_split_pages' must be >= 0, got ") << fixedSplit;
  if (fixedSplit > 0 && getDisableSplitKv())
    return emitOpError("'fixed_split_pages' and 'disable_split_kv' exclude "
                       "each other");
  if (std::optional<int64_t> occ = getOccupancy(); occ && *occ < 1)
    return emitOpError("'occupancy' must be >= 1, got ") << *occ;
  if (type.getAutoCascade() && !getKvIndices())
    return emitOpError("an auto_cascade plan needs 'kv_indices' (the page "
                       "ids whose shared prefixes it finds)");
  if (type.getAutoCascade() && (fixedSplit != 0 || getDisableSplitKv()))
    return emitOpError("an auto_cascade plan takes no split options");
  int64_t kvp = getKvIndptr().getType().getDimSize(0);
  int64_t last = getKvLastPageLen().getType().getDimSize(0);
  if (!ShapedType::isDynamic(kvp) && !ShapedType::isDynamic(last) &&
      kvp != last + 1)
    return emitOpError("'kv_last_page_len' has ")
           << last << " entries but 'kv_indptr' has " << kvp
           << "; expected [B] and [B+1]";
  if (Value qo = getQoIndptr()) {
    int64_t qop = cast<MemRefType>(qo.getType()).getDimSize(0);
    if (!ShapedType::isDynamic(kvp) && !ShapedType::isDynamic(qop) &&
        qop != kvp)
      return emitOpError("'qo_indptr' has ")
             << qop << " entries but 'kv_indptr' has " << kvp
             << "; both are [B+1]";
  }
  return success();
}

void PlanOp::getEffects(
    SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>>
        &effects) {
  // Reads the host index arrays; the plan it owns is state that the next
  // execution of the op overwrites, so two plan ops never fold into one.
  for (OpOperand &operand : getOperation()->getOpOperands())
    effects.emplace_back(MemoryEffects::Read::get(), &operand,
                         SideEffects::DefaultResource::get());
  effects.emplace_back(MemoryEffects::Write::get(),
                       SideEffects::DefaultResource::get());
}

//===----------------------------------------------------------------------===//
// Plans of attention levels
//===----------------------------------------------------------------------===//

LogicalResult mlir::cascade::verifyLevelPlan(Operation *op, Type planType,
                                             bool decode, ShapedType q,
                                             ShapedType kv0, bool pool,
                                             KVLayout layout, int64_t pageSize,
                                             const Twine &where) {
  auto plan = dyn_cast<PlanType>(planType);
  if (!plan)
    return op->emitOpError("plan")
           << where << " must be a !cascade.plan, got " << planType;
  if (plan.getPrefill() == decode)
    return op->emitOpError("plan")
           << where << " is a " << (plan.getPrefill() ? "prefill" : "decode")
           << " plan but the level is a "
           << (decode ? "decode (one query per request)" : "prefill");
  bool nhd = layout == KVLayout::NHD;
  int64_t headsDim = pool ? (nhd ? 3 : 2) : (nhd ? 2 : 1);
  int64_t hqo = q.getDimSize(1), hkv = kv0.getDimSize(headsDim);
  auto differs = [](int64_t dim, int64_t planned) {
    return !ShapedType::isDynamic(dim) && dim != planned;
  };
  if (differs(hqo, plan.getNumQoHeads()) || differs(hkv, plan.getNumKvHeads()))
    return op->emitOpError("plan")
           << where << " is for " << plan.getNumQoHeads() << " / "
           << plan.getNumKvHeads() << " heads but the op has " << hqo << " / "
           << hkv;
  if (differs(q.getDimSize(2), plan.getHeadDim()))
    return op->emitOpError("plan")
           << where << " is for head_dim " << plan.getHeadDim()
           << " but the op has " << q.getDimSize(2);
  if (plan.getPageSize() != pageSize)
    return op->emitOpError("plan")
           << where << " is for page_size " << plan.getPageSize()
           << " but the op has " << pageSize;
  int64_t rows = q.getDimSize(0);
  if (plan.isGraph() && !ShapedType::isDynamic(rows) &&
      rows > plan.getGraphRows())
    return op->emitOpError("plan")
           << where << " holds up to " << plan.getGraphRows()
           << " rows (graph_rows) but 'q' has " << rows;
  return success();
}
