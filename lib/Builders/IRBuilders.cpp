//===- IRBuilders.cpp - Cascade IR built through the C++ API --------------===//

#include "cascade/Builders/IRBuilders.h"

#include "cascade/Dialect/Cascade/IR/AttentionOptions.h"
#include "cascade/Dialect/Cascade/IR/CascadeDialect.h"
#include "cascade/Dialect/Cascade/IR/CascadeOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"

#include <algorithm>
#include <stdexcept>

using namespace mlir;
using namespace mlir::cascade;

namespace cascade::builders {

namespace {

constexpr int64_t kDyn = ShapedType::kDynamic;

Type elementType(MLIRContext *ctx, contract::DType t) {
  switch (t) {
  case contract::DType::F16:
    return Float16Type::get(ctx);
  case contract::DType::BF16:
    return BFloat16Type::get(ctx);
  case contract::DType::F32:
    return Float32Type::get(ctx);
  case contract::DType::F8E4M3:
    return Float8E4M3FNType::get(ctx);
  case contract::DType::F8E5M2:
    return Float8E5M2Type::get(ctx);
  }
  throw std::invalid_argument("unsupported dtype '" +
                              std::string(contract::dtypeName(t)) + "'");
}

/// Builds memrefs or tensors of one shape.
struct Shaper {
  bool tensors;
  Type operator()(ArrayRef<int64_t> shape, Type elem) const {
    if (tensors)
      return RankedTensorType::get(shape, elem);
    return MemRefType::get(shape, elem);
  }
};

/// The attributes both attention ops share, the score options aside
/// (setScoreOptions sets them on the op).
struct Options {
  IntegerAttr pageSize;
  KVLayoutAttr layout;
  UnitAttr causal;
  LSEBaseAttr base;
};

Options options(Builder &b, const AttentionConfig &c, bool causal) {
  MLIRContext *ctx = b.getContext();
  Options o;
  o.pageSize = b.getI64IntegerAttr(c.pageSize);
  o.layout = KVLayoutAttr::get(
      ctx, c.layout == contract::KvLayout::HND ? KVLayout::HND : KVLayout::NHD);
  o.causal = causal ? b.getUnitAttr() : UnitAttr();
  o.base = LSEBaseAttr::get(ctx, c.lseBase == contract::LseBase::BaseE
                                     ? LSEBase::BaseE
                                     : LSEBase::Base2);
  return o;
}

/// KV cache types: one 5-D pool or a (k, v) pair of 4-D pools (ragged K/V
/// too: [tokens / page_size, page_size, Hkv, D] views).
SmallVector<Type> kvTypes(const AttentionConfig &c, Type kvElem,
                          const Shaper &shaped) {
  const bool pair = c.form != contract::KvForm::Pool;
  // k's head_dim, or v's (head_dim_vo: a pair only).
  auto type = [&](int64_t d) {
    SmallVector<int64_t> page =
        c.layout == contract::KvLayout::HND
            ? SmallVector<int64_t>{c.numKvHeads, c.pageSize, d}
            : SmallVector<int64_t>{c.pageSize, c.numKvHeads, d};
    SmallVector<int64_t> shape = {kDyn};
    if (!pair)
      shape.push_back(2);
    shape.append(page.begin(), page.end());
    return shaped(shape, kvElem);
  };
  Type t = type(c.headDim);
  return pair ? SmallVector<Type>{t, type(c.vDim())} : SmallVector<Type>{t};
}

void checkConfig(const AttentionConfig &c) {
  const std::string why = c.validate();
  if (!why.empty())
    throw std::invalid_argument(why);
}

} // namespace

OwningOpRef<ModuleOp> newModule(MLIRContext &context) {
  return ModuleOp::create(UnknownLoc::get(&context));
}

void addAttentionFunc(ModuleOp module, const std::string &name,
                      const AttentionConfig &c, const AttentionCall &call) {
  checkConfig(c);
  MLIRContext *ctx = module.getContext();
  OpBuilder b(ctx);
  Location loc = b.getUnknownLoc();
  Shaper shaped{call.tensors};
  Type qElem = elementType(ctx, c.qType), kvElem = elementType(ctx, c.kvType);
  Type oElem = elementType(ctx, c.oType);
  Type f32 = b.getF32Type(), i32 = b.getI32Type();
  Type qT = shaped({kDyn, c.numQoHeads, c.headDim}, qElem);
  Type oT = shaped({kDyn, c.numQoHeads, c.vDim()}, oElem);
  Type lseT = shaped({kDyn, c.numQoHeads}, f32);
  Type idxT = shaped({kDyn}, i32);
  SmallVector<Type> kvT = kvTypes(c, kvElem, shaped);
  SmallVector<Type> inputs = {qT};
  inputs.append(kvT);
  // Ragged K/V has no page table: no kv_indices.
  const bool table = c.form != contract::KvForm::Ragged;
  if (!call.decode)
    inputs.push_back(idxT); // qo_indptr
  inputs.append(table ? SmallVector<Type>{idxT, idxT, idxT}
                      : SmallVector<Type>{idxT, idxT});
  if (call.customMask) {
    if (call.decode)
      throw std::invalid_argument("a custom mask needs a prefill level");
    inputs.append({shaped({kDyn}, b.getI8Type()), idxT});
  }
  // The state inputs, f32 [Hqo] each.
  for (const std::string &name : call.stateInputs) {
    if (!llvm::is_contained(PagedAttentionOp::getStateInputNames(), name))
      throw std::invalid_argument("'" + name +
                                  "' is not a state input of the attention "
                                  "ops");
    inputs.push_back(shaped({c.numQoHeads}, f32));
  }
  SmallVector<Type> planT;
  if (call.split) {
    if (call.tensors)
      throw std::invalid_argument("plan operands exist in buffer form only");
    planT = {idxT,
             idxT,
             idxT,
             MemRefType::get({kDyn}, b.getI8Type()),
             MemRefType::get({1}, i32),
             MemRefType::get({kDyn, c.numQoHeads, c.vDim()}, f32),
             MemRefType::get({kDyn, c.numQoHeads}, f32)};
    if (!call.decode)
      planT.append({idxT, idxT}); // qo_tile_indices, merge_indptr
  }
  inputs.append(planT);
  inputs.append({oT, lseT});
  SmallVector<Type> results;
  if (call.tensors)
    results = {oT, lseT};
  b.setInsertionPointToEnd(module.getBody());
  auto fn =
      func::FuncOp::create(b, loc, name, b.getFunctionType(inputs, results));
  Block *entry = fn.addEntryBlock();
  b.setInsertionPointToStart(entry);
  auto args = entry->getArguments();
  size_t i = 0;
  Value q = args[i++];
  SmallVector<Value> kv;
  for (size_t k = 0; k < kvT.size(); ++k)
    kv.push_back(args[i++]);
  Value qo = call.decode ? Value() : args[i++];
  Value kvIndptr = args[i++];
  Value kvIndices = table ? args[i++] : Value();
  Value last = args[i++];
  Value mask, maskIndptr;
  if (call.customMask) {
    mask = args[i++];
    maskIndptr = args[i++];
  }
  SmallVector<Value> stateArgs;
  for (size_t k = 0; k < call.stateInputs.size(); ++k)
    stateArgs.push_back(args[i++]);
  SmallVector<Value> plan;
  for (size_t k = 0; k < planT.size(); ++k)
    plan.push_back(args[i++]);
  Value o = args[i++], lse = args[i++];
  Options opt = options(b, c, call.causal);
  auto op = PagedAttentionOp::create(
      b, loc, TypeRange(results), q, /*q_pe=*/Value(), kv, qo, kvIndptr,
      kvIndices, last, plan, o, lse, opt.pageSize, opt.layout, opt.causal,
      opt.base, call.accumulate ? b.getUnitAttr() : UnitAttr());
  if (call.customMask) {
    op.getCustomMaskMutable().assign(mask);
    op.getMaskIndptrMutable().assign(maskIndptr);
  }
  for (auto [name, value] : llvm::zip(call.stateInputs, stateArgs))
    op.getStateInputMutable(name)->assign(value);
  setScoreOptions(op, c.score);
  func::ReturnOp::create(b, loc, op->getResults());
}

void addMultiLevelFunc(ModuleOp module, const std::string &name,
                       const AttentionConfig &c, int64_t numLevels,
                       const std::vector<int64_t> &sharedLevels,
                       const std::vector<bool> &decodeLevels, bool causal,
                       const std::vector<int64_t> &raggedLevels) {
  checkConfig(c);
  if (numLevels < 1)
    throw std::invalid_argument("num_levels must be >= 1");
  if (c.form != contract::KvForm::Pool)
    throw std::invalid_argument("a multi-level cascade reads one page pool: "
                                "kv_form must be 'pool'");
  if (!decodeLevels.empty() &&
      static_cast<int64_t>(decodeLevels.size()) != numLevels)
    throw std::invalid_argument("decode_levels needs one entry per level");
  MLIRContext *ctx = module.getContext();
  OpBuilder b(ctx);
  Location loc = b.getUnknownLoc();
  Shaper shaped{true};
  Type qElem = elementType(ctx, c.qType), kvElem = elementType(ctx, c.kvType);
  Type oElem = elementType(ctx, c.oType);
  Type i32 = b.getI32Type();
  Type qT = shaped({kDyn, c.numQoHeads, c.headDim}, qElem);
  Type oT = shaped({kDyn, c.numQoHeads, c.vDim()}, oElem);
  Type lseT = shaped({kDyn, c.numQoHeads}, b.getF32Type());
  Type poolT = kvTypes(c, kvElem, shaped)[0];
  auto isShared = [&](int64_t l) {
    return llvm::is_contained(sharedLevels, l);
  };
  for (int64_t l : raggedLevels)
    if (l < 0 || l >= numLevels)
      throw std::invalid_argument("ragged_levels names level " +
                                  std::to_string(l) + " of " +
                                  std::to_string(numLevels));
  auto isRagged = [&](int64_t l) {
    return llvm::is_contained(raggedLevels, l);
  };
  // Per level: qo_indptr, kv_indptr, kv_indices (not for a ragged level),
  // kv_last_page_len.
  SmallVector<Type> inputs = {qT, poolT};
  for (int64_t l = 0; l < numLevels; ++l) {
    Type dyn = shaped({kDyn}, i32);
    Type two = isShared(l) ? shaped({2}, i32) : dyn;
    inputs.append({two, two});
    if (!isRagged(l))
      inputs.push_back(dyn);
    inputs.push_back(isShared(l) ? shaped({1}, i32) : dyn);
  }
  inputs.append({oT, lseT});
  b.setInsertionPointToEnd(module.getBody());
  auto fn =
      func::FuncOp::create(b, loc, name, b.getFunctionType(inputs, {oT, lseT}));
  Block *entry = fn.addEntryBlock();
  b.setInsertionPointToStart(entry);
  auto args = entry->getArguments();
  SmallVector<Value> qo, kvp, kvi, kvl;
  SmallVector<bool> ragged;
  for (int64_t l = 0, a = 2; l < numLevels; ++l) {
    qo.push_back(args[a++]);
    kvp.push_back(args[a++]);
    ragged.push_back(isRagged(l));
    if (!ragged.back())
      kvi.push_back(args[a++]);
    kvl.push_back(args[a++]);
  }
  Value q = args[0], pool = args[1];
  Value o = args[args.size() - 2], lse = args[args.size() - 1];
  // The causal mask applies to the last level only; it is an attribute of
  // the whole op, as in FlashInfer's plan().
  Options opt = options(b, c, causal);
  Operation *op;
  if (numLevels == 1) {
    op = PagedAttentionOp::create(
        b, loc, TypeRange{oT, lseT}, q, /*q_pe=*/Value(), ValueRange{pool},
        qo[0], kvp[0], kvi.empty() ? Value() : kvi[0], kvl[0], ValueRange{}, o,
        lse, opt.pageSize, opt.layout, opt.causal, opt.base, UnitAttr());
  } else {
    DenseBoolArrayAttr levels;
    if (!decodeLevels.empty()) {
      SmallVector<bool> flags(decodeLevels.begin(), decodeLevels.end());
      levels = b.getDenseBoolArrayAttr(flags);
    }
    op = MultiLevelAttentionOp::create(
        b, loc, TypeRange{oT, lseT}, q, /*q_pe=*/Value(), ValueRange{pool}, qo,
        kvp, kvi, kvl, /*plans=*/ValueRange{}, o, lse, opt.pageSize, opt.layout,
        opt.causal, opt.base, levels,
        raggedLevels.empty() ? DenseBoolArrayAttr()
                             : b.getDenseBoolArrayAttr(ragged));
  }
  setScoreOptions(op, c.score);
  func::ReturnOp::create(b, loc, op->getResults());
}

void addMergeFuncs(ModuleOp module, contract::DType vType, int64_t headDim) {
  if (headDim <= 0 || headDim % 8)
    throw std::invalid_argument("merge kernels need head_dim a positive "
                                "multiple of 8");
  MLIRContext *ctx = module.getContext();
  OpBuilder b(ctx);
  Location loc = b.getUnknownLoc();
  Type v = elementType(ctx, vType), f32 = b.getF32Type();
  auto vT = MemRefType::get({kDyn, kDyn, headDim}, v);
  auto sT = MemRefType::get({kDyn, kDyn}, f32);
  auto base = LSEBaseAttr::get(ctx, LSEBase::Base2);
  auto makeFunc = [&](const std::string &name, ArrayRef<Type> inputs) {
    b.setInsertionPointToEnd(module.getBody());
    auto fn = func::FuncOp::create(b, loc, name, b.getFunctionType(inputs, {}));
    Block *entry = fn.addEntryBlock();
    b.setInsertionPointToStart(entry);
    return entry->getArguments();
  };
  {
    auto a = makeFunc("merge_state", {vT, sT, vT, sT, vT, sT});
    MergeStateOp::create(b, loc, TypeRange{}, a[0], a[1], a[2], a[3], a[4],
                         a[5], base);
    func::ReturnOp::create(b, loc);
  }
  {
    auto a = makeFunc("merge_state_in_place", {vT, sT, vT, sT});
    MergeStateInPlaceOp::create(b, loc, TypeRange{}, a[0], a[1], Value(), a[2],
                                a[3], base);
    func::ReturnOp::create(b, loc);
  }
  {
    auto maskT =
        MemRefType::get({kDyn}, b.getI8Type(),
                        StridedLayoutAttr::get(ctx, /*offset=*/0, {kDyn}));
    auto a = makeFunc("merge_state_in_place_mask", {vT, sT, maskT, vT, sT});
    MergeStateInPlaceOp::create(b, loc, TypeRange{}, a[0], a[1], a[2], a[3],
                                a[4], base);
    func::ReturnOp::create(b, loc);
  }
  {
    auto vsT = MemRefType::get({kDyn, kDyn, kDyn, headDim}, v);
    auto ssT = MemRefType::get({kDyn, kDyn, kDyn}, f32);
    auto a = makeFunc("merge_states", {vsT, ssT, vT, sT});
    MergeStatesOp::create(b, loc, TypeRange{}, a[0], a[1], a[2], a[3], base);
    func::ReturnOp::create(b, loc);
  }
}

} // namespace cascade::builders
