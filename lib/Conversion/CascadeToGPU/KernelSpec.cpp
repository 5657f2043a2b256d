//===- KernelSpec.cpp - What a cascade kernel is specialised on -----------===//

#include "KernelSpec.h"
#include "common/StateInputs.h"

#include "cascade/Contract/BundleContract.h"
#include "cascade/Conversion/GPUCodegen/Fp8Convert.h"

#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/MathExtras.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>

// The bundle contract declares namespace ::cascade: this file's own
// definitions are qualified mlir::cascade:: to stay unambiguous.
using namespace mlir;
using namespace mlir::cascade;
namespace ckey = ::cascade::contract::key;
namespace cop = ::cascade::contract::op;
namespace cplan = ::cascade::contract::plan;
namespace cparam = ::cascade::contract::param;
namespace cfamily = ::cascade::contract::family;

static uint32_t bits(float f) { return llvm::bit_cast<uint32_t>(f); }

static Attribute lseBaseStatic(Builder &b, bool baseE) {
  return baseE ? Attribute(b.getStringAttr("e"))
               : Attribute(b.getI64IntegerAttr(2));
}

static MemRefType flat(Type elementType) { return flatMemRefType(elementType); }

/// What the state inputs `names` add to a kernel's name.
static std::string stateInputSuffixes(ArrayRef<StringRef> names) {
  std::string s;
  for (StringRef n : names)
    s += findStateInputHook(n)->suffix.str();
  return s;
}

//===----------------------------------------------------------------------===//
// MergeSpec
//===----------------------------------------------------------------------===//

bool MergeSpec::operator==(const MergeSpec &o) const {
  return kind == o.kind && headDim == o.headDim && vType == o.vType &&
         baseE == o.baseE && maskType == o.maskType && numHeads == o.numHeads &&
         indptr == o.indptr && accumulate == o.accumulate &&
         stateInputs == o.stateInputs && config == o.config;
}

StringRef MergeSpec::opName() const {
  switch (kind) {
  case MergeKind::Pair:
    return cop::kMergeState;
  case MergeKind::InPlace:
    return cop::kMergeStateInPlace;
  case MergeKind::States:
    return cop::kMergeStates;
  case MergeKind::Indptr:
    return cop::kMergeStatesIndptr;
  }
  llvm_unreachable("merge kind");
}

std::string MergeSpec::name() const {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << "cascade_" << opName() << "_" << dtypeName(vType) << "_d" << headDim;
  if (kind == MergeKind::Indptr)
    os << "_h" << numHeads << (indptr == cplan::kOIndptr ? "_byreq" : "_byrow")
       << (accumulate ? "_acc" : "") << stateInputSuffixes(stateInputs);
  os << (baseE ? "_be" : "_b2");
  if (maskType)
    os << "_mask" << dtypeName(maskType);
  os << "_t" << config.getThreads()[0];
  return s;
}

SmallVector<KernelParam> MergeSpec::params(MLIRContext *ctx) const {
  Builder b(ctx);
  Type f32 = b.getF32Type(), i64 = b.getI64Type();
  auto mem = [&](StringRef n, Type t) {
    return KernelParam{n.str(), "memref", flat(t)};
  };
  auto scalar = [&](StringRef n) { return KernelParam{n.str(), "i64", i64}; };
  switch (kind) {
  case MergeKind::Pair:
    return {mem("v_a", vType),  mem("s_a", f32), mem("v_b", vType),
            mem("s_b", f32),    mem("v", vType), mem("s", f32),
            scalar("num_tasks")};
  case MergeKind::InPlace: {
    SmallVector<KernelParam> p = {mem("v_other", vType), mem("s_other", f32)};
    if (maskType) {
      p.push_back(mem("mask", maskType));
      p.push_back(scalar("mask_stride"));
    }
    p.push_back(mem("v", vType));
    p.push_back(mem("s", f32));
    p.push_back(scalar("num_tasks"));
    p.push_back(scalar("num_heads"));
    return p;
  }
  case MergeKind::States:
    return {mem("v_in", vType), mem("s_in", f32),    mem("v", vType),
            mem("s", f32),      scalar("num_tasks"), scalar("num_states"),
            scalar("num_heads")};
  case MergeKind::Indptr: {
    SmallVector<KernelParam> p = {
        mem(indptr, b.getI32Type()), mem(cplan::kTmpV, f32),
        mem(cplan::kTmpS, f32), mem(cparam::kO, vType), mem(cparam::kLse, f32)};
    for (StringRef in : stateInputs)
      p.push_back(mem(in, f32));
    if (byRow()) {
      // Rows past qo_indptr[batch_size] (the slack of a CUDA-graph plan
      // sized for row_capacity) are left alone.
      p.push_back(mem(cplan::kQoIndptr, b.getI32Type()));
      p.push_back(scalar(cplan::kRowCapacity));
      p.push_back(scalar(cplan::kBatchSize));
    } else {
      p.push_back(scalar(cplan::kNumRows));
    }
    p.push_back({cparam::kOStrideN, "i64", i64, numHeads * headDim});
    p.push_back({cparam::kOStrideH, "i64", i64, headDim});
    return p;
  }
  }
  llvm_unreachable("merge kind");
}

SmallVector<NamedAttribute> MergeSpec::statics(Builder &b) const {
  SmallVector<NamedAttribute> s = {
      b.getNamedAttr(ckey::kHeadDim, b.getI64IntegerAttr(headDim))};
  if (kind == MergeKind::Indptr)
    s.push_back(
        b.getNamedAttr(ckey::kNumQoHeads, b.getI64IntegerAttr(numHeads)));
  s.push_back(b.getNamedAttr(ckey::kVDType, b.getStringAttr(dtypeName(vType))));
  s.push_back(b.getNamedAttr(ckey::kLseBase, lseBaseStatic(b, baseE)));
  if (kind == MergeKind::InPlace)
    s.push_back(b.getNamedAttr(
        ckey::kMask, b.getStringAttr(maskType ? dtypeName(maskType) : "none")));
  if (kind == MergeKind::Indptr) {
    s.push_back(b.getNamedAttr(ckey::kIndptr, b.getStringAttr(indptr)));
    s.push_back(b.getNamedAttr(ckey::kAccumulate, b.getBoolAttr(accumulate)));
    for (StringRef in : stateInputs)
      s.push_back(b.getNamedAttr(in, b.getBoolAttr(true)));
  }
  s.push_back(
      b.getNamedAttr(ckey::kKernelFamily, b.getStringAttr(cfamily::kMerge)));
  return s;
}

SmallVector<StringRef> MergeSpec::planArrays() const {
  if (kind != MergeKind::Indptr)
    return {};
  return {indptr, cplan::kTmpV, cplan::kTmpS};
}

StringRef MergeSpec::gridParam() const {
  if (kind != MergeKind::Indptr)
    return "num_tasks";
  return byRow() ? cplan::kRowCapacity : cplan::kNumRows;
}

StringRef MergeSpec::gridAdd() const {
  // A prefill's rows are many (and its row capacity may be far above
  // them): its chunks are spread over rows already.
  return kind == MergeKind::Indptr && !byRow() ? cplan::kPartialRowsCapacity
                                               : "";
}

FailureOr<MergeSpec> mlir::cascade::analyseMerge(Operation *op,
                                                 KernelConfigAttr config) {
  MergeSpec s;
  s.config = config;
  Value v;
  SmallVector<Value> others;
  LSEBase base;
  if (auto m = dyn_cast<MergeStateOp>(op)) {
    s.kind = MergeKind::Pair;
    v = m.getV();
    others = {m.getVA(), m.getVB()};
    base = m.getLseBase();
  } else if (auto m = dyn_cast<MergeStateInPlaceOp>(op)) {
    s.kind = MergeKind::InPlace;
    v = m.getV();
    others = {m.getVOther()};
    base = m.getLseBase();
    if (Value mask = m.getMask()) {
      auto mt = cast<MemRefType>(mask.getType());
      s.maskType = mt.getElementType();
      if (mt.getRank() != 1 ||
          !(s.maskType.isInteger(8) || s.maskType.isInteger(1)))
        return op->emitError("mask must be a 1-D i8 or i1 memref"), failure();
    }
  } else {
    auto ms = cast<MergeStatesOp>(op);
    s.kind = MergeKind::States;
    v = ms.getV();
    others = {ms.getVIn()};
    base = ms.getLseBase();
  }
  auto mt = cast<MemRefType>(v.getType());
  s.headDim = mt.getShape().back();
  s.vType = mt.getElementType();
  s.baseE = base == LSEBase::BaseE;
  if (ShapedType::isDynamic(s.headDim) || s.headDim % 8 != 0)
    return op->emitError("merge lowering needs a static head_dim multiple of "
                         "8"),
           failure();
  if (!s.vType.isF16() && !s.vType.isBF16() && !s.vType.isF32())
    return op->emitError("merge lowering supports f16, bf16 and f32 states"),
           failure();
  for (Value o : others)
    if (cast<MemRefType>(o.getType()).getElementType() != s.vType)
      return op->emitError("merge lowering needs one v dtype"), failure();
  if (config.getFamily() != KernelFamily::Merge ||
      config.getThreads()[0] != config.getQTile() * s.threadsPerState())
    return op->emitError("kernel_config ")
               << config << " does not fit this merge: expected family merge "
               << "with threads[0] = q_tile * head_dim / 8",
           failure();
  return s;
}

//===----------------------------------------------------------------------===//
// AttentionSpec
//===----------------------------------------------------------------------===//

bool AttentionSpec::operator==(const AttentionSpec &o) const {
  return headDim == o.headDim && headDimVo == o.headDimVo &&
         numQoHeads == o.numQoHeads && numKvHeads == o.numKvHeads &&
         pageSize == o.pageSize && hnd == o.hnd && pool == o.pool &&
         decode == o.decode && causal == o.causal && split == o.split &&
         accumulate == o.accumulate && customMask == o.customMask &&
         epilogueStateInputs() == o.epilogueStateInputs() &&
         pageTable == o.pageTable && qType == o.qType && kvType == o.kvType &&
         oType == o.oType && score == o.score && baseE == o.baseE &&
         config == o.config && fp8DirectK == o.fp8DirectK &&
         fp8DirectV == o.fp8DirectV;
}

StringRef AttentionSpec::opName() const {
  if (decode)
    return split ? cop::kDecodeSplit : cop::kDecode;
  return split ? cop::kPrefillSplit : cop::kPrefill;
}

std::string AttentionSpec::name() const {
  std::string s;
  llvm::raw_string_ostream os(s);
  bool mma = tensorCore();
  StringRef familyTag = traits->kernelTag;
  os << "cascade_" << opName() << (causal ? "_causal" : "")
     << (accumulate ? "_acc" : "") << familyTag << "_" << dtypeName(qType)
     << "_" << dtypeName(kvType) << "_d" << headDim;
  if (splitHeadDims())
    os << "v" << headDimVo;
  // An output of its own type (fp8 queries write f16 or bf16).
  if (oType != qType)
    os << "_o" << dtypeName(oType);
  os << "_g" << groupSize << "_h" << numKvHeads << "_p" << pageSize
     << (hnd ? "_hnd" : "_nhd") << (pool ? "_pool" : "_pair")
     << (pageTable ? "" : "_ragged");
  // Options that differ from their defaults, spelled out (floats as their
  // IEEE bits, so that the name is exact and stable).
  auto hex = [](float f) { return llvm::format_hex_no_prefix(bits(f), 8); };
  if (bits(smScale()) != bits(float(1.0 / std::sqrt(double(headDim)))))
    os << "_sm" << hex(smScale());
  if (score.softCapped())
    os << "_cap" << hex(score.logitsSoftCap);
  if (score.windowed())
    os << "_win" << score.windowLeft;
  if (customMask)
    os << "_cmask";
  os << stateInputSuffixes(epilogueStateInputs());
  if (score.rope())
    os << "_rope" << hex(score.ropeScale) << "x" << hex(score.ropeTheta);
  if (score.alibi())
    os << "_alibi";
  if (baseE)
    os << "_lsee";
  ArrayRef<int64_t> t = config.getThreads();
  if (mma)
    os << "_w" << t[1] << "x" << t[2] << "_q" << config.getQTile();
  else
    os << "_t" << t[0] << "x" << t[2];
  os << "_kv" << config.getKvTile() << "_s" << config.getStages();
  if (int64_t blocks = config.getMinBlocksPerSm())
    os << "_b" << blocks;
  if (config.hasSplitKVBarriers())
    os << "_kvsplit";
  if (fp8DirectV)
    os << "_kvdirect";
  else if (fp8DirectK)
    os << "_kdirect";
  if (int64_t e = config.getExp2Emulation())
    os << "_ex2e" << e;
  if (config.getPageLookahead())
    os << "_pla";
  return s;
}

StringRef AttentionSpec::gridParam() const {
  if (split)
    return cplan::kPaddedBatchSize;
  // A prefill grid covers the plan's row capacity (the rows of a CUDA-graph
  // plan may shrink on replay); the kernel reads the real row count from
  // qo_indptr[batch_size].
  return decode ? cplan::kBatchSize : cplan::kRowCapacity;
}

int64_t AttentionSpec::decodeTilesPerRequest() const {
  return (groupSize + config.getQTile() - 1) / config.getQTile();
}

bool AttentionSpec::selfScheduledPrefill() const {
  return !split && !decode && tensorCore();
}

int64_t AttentionSpec::gridMul() const {
  if (!split && decode && tensorCore())
    return decodeTilesPerRequest();
  // ceil(rows * G / q_tile) + batch_size blocks cover every request's query
  // tiles (see MmaAttentionKernel.cpp).
  return selfScheduledPrefill() ? groupSize : 1;
}

int64_t AttentionSpec::gridDiv() const {
  return selfScheduledPrefill() ? config.getQTile() : 1;
}

StringRef AttentionSpec::gridAdd() const {
  return selfScheduledPrefill() ? cplan::kBatchSize : "";
}

SmallVector<KernelParam> AttentionSpec::params(MLIRContext *ctx) const {
  Builder b(ctx);
  Type i32 = b.getI32Type(), f32 = b.getF32Type(), i64 = b.getI64Type();
  auto mem = [&](StringRef n, Type t) {
    return KernelParam{n.str(), "memref", flat(t)};
  };
  SmallVector<KernelParam> p = {mem(cparam::kQ, qType)};
  if (pool) {
    p.push_back(mem(cparam::kKvCache, kvType));
  } else {
    p.push_back(mem(cparam::kKCache, kvType));
    p.push_back(mem(cparam::kVCache, kvType));
  }
  if (!decode)
    p.push_back(mem(cplan::kQoIndptr, i32));
  p.push_back(mem(cplan::kKvIndptr, i32));
  if (pageTable)
    p.push_back(mem(cplan::kKvIndices, i32));
  p.push_back(mem(cplan::kKvLastPageLen, i32));
  if (customMask) {
    p.push_back(mem(cparam::kCustomMask, b.getI8Type()));
    p.push_back(mem(cparam::kMaskIndptr, i32));
  }
  for (StringRef in : epilogueStateInputs())
    p.push_back(mem(in, f32));
  if (split) {
    p.push_back(mem(cplan::kRequestIndices, i32));
    p.push_back(mem(cplan::kKvTileIndices, i32));
    p.push_back(mem(cplan::kOIndptr, i32));
    p.push_back(mem(cplan::kBlockValidMask, b.getI8Type()));
    p.push_back(mem(cplan::kKvChunkSize, i32));
    p.push_back(mem(cplan::kTmpV, f32));
    p.push_back(mem(cplan::kTmpS, f32));
    if (!decode)
      p.push_back(mem(cplan::kQoTileIndices, i32));
  }
  p.push_back(mem(cparam::kO, oType));
  p.push_back(mem(cparam::kLse, f32));
  p.push_back({gridParam().str(), "i64", i64});
  // Strided q and o: element strides of a row and a head, by default the
  // contiguous layout's. A split kernel takes o (and its strides) without
  // writing it: every kernel that takes a buffer takes its strides.
  p.push_back({cparam::kQStrideN, "i64", i64, numQoHeads * headDim});
  p.push_back({cparam::kQStrideH, "i64", i64, headDim});
  p.push_back({cparam::kOStrideN, "i64", i64, numQoHeads * headDimVo});
  p.push_back({cparam::kOStrideH, "i64", i64, headDimVo});
  // Ragged K/V (one-token pages, no page table) may be views, e.g. of a
  // packed QKV projection: their token and head strides (V's own where its
  // head_dim differs).
  // A paged cache may be a view of a larger tensor (one layer of a cache of
  // every layer): its page stride (V's own where its head_dim differs).
  if (pageTable) {
    const int64_t kPage = pageSize * numKvHeads * headDim;
    p.push_back({cparam::kKvStridePage, "i64", i64, pool ? 2 * kPage : kPage});
    if (splitHeadDims())
      p.push_back({cparam::kVStridePage, "i64", i64,
                   pageSize * numKvHeads * headDimVo});
  } else {
    p.push_back(
        {cparam::kKvStrideN, "i64", i64, pageSize * numKvHeads * headDim});
    p.push_back(
        {cparam::kKvStrideH, "i64", i64, hnd ? pageSize * headDim : headDim});
    if (splitHeadDims()) {
      p.push_back(
          {cparam::kVStrideN, "i64", i64, pageSize * numKvHeads * headDimVo});
      p.push_back({cparam::kVStrideH, "i64", i64,
                   hnd ? pageSize * headDimVo : headDimVo});
    }
  }
  bool mma = tensorCore();
  if (!decode || (mma && gridParam() != cplan::kBatchSize))
    p.push_back({cplan::kBatchSize, "i64", i64});
  if (isFp8KVType(kvType)) {
    p.push_back({cparam::kKScale, "f32", f32});
    p.push_back({cparam::kVScale, "f32", f32});
  }
  return p;
}

SmallVector<StringRef> AttentionSpec::planArrays() const {
  if (!split)
    return {};
  SmallVector<StringRef> a = {cplan::kRequestIndices,
                              cplan::kKvTileIndices,
                              cplan::kOIndptr,
                              cplan::kBlockValidMask,
                              cplan::kKvChunkSize,
                              cplan::kTmpV,
                              cplan::kTmpS};
  if (!decode)
    a.push_back(cplan::kQoTileIndices);
  return a;
}

// A score option's static (its manifest value).
static Attribute scoreStatic(Builder &b, const std::optional<float> &f) {
  return b.getF32FloatAttr(f.value());
}
static Attribute scoreStatic(Builder &b, float f) {
  return b.getF32FloatAttr(f);
}
static Attribute scoreStatic(Builder &b, int64_t i) {
  return b.getI64IntegerAttr(i);
}
static Attribute scoreStatic(Builder &b, ::cascade::contract::PosEncoding p) {
  return b.getStringAttr(::cascade::contract::posEncodingName(p));
}

SmallVector<NamedAttribute> AttentionSpec::statics(Builder &b) const {
  bool mma = tensorCore();
  StringRef familyName = traits->contractName;
  SmallVector<NamedAttribute> s = {
      b.getNamedAttr(ckey::kHeadDim, b.getI64IntegerAttr(headDim)),
      b.getNamedAttr(ckey::kNumQoHeads, b.getI64IntegerAttr(numQoHeads)),
      b.getNamedAttr(ckey::kNumKvHeads, b.getI64IntegerAttr(numKvHeads)),
      b.getNamedAttr(ckey::kGqaGroupSize, b.getI64IntegerAttr(groupSize)),
      b.getNamedAttr(ckey::kPageSize, b.getI64IntegerAttr(pageSize)),
      b.getNamedAttr(ckey::kKvLayout, b.getStringAttr(hnd ? "hnd" : "nhd")),
      b.getNamedAttr(ckey::kLayout, b.getStringAttr(hnd ? "HND" : "NHD")),
      b.getNamedAttr(ckey::kODType, b.getStringAttr(dtypeName(oType))),
      b.getNamedAttr(ckey::kCausal, b.getBoolAttr(causal)),
      b.getNamedAttr(ckey::kKvForm, b.getStringAttr(pool        ? "pool"
                                                    : pageTable ? "pair"
                                                                : "ragged")),
      b.getNamedAttr(ckey::kQDType, b.getStringAttr(dtypeName(qType))),
      b.getNamedAttr(ckey::kKvDType, b.getStringAttr(dtypeName(kvType))),
  };
  // The score options (sm_scale: the effective scale), as the contract's
  // field table names them.
  ScoreOptions::forEachField(score, [&](const char *name, const auto &field) {
    s.push_back(b.getNamedAttr(name, scoreStatic(b, field)));
  });
  s.append({
      b.getNamedAttr(ckey::kLseBase, lseBaseStatic(b, baseE)),
      b.getNamedAttr(ckey::kTileTokens,
                     b.getI64IntegerAttr(config.getKvTile())),
      b.getNamedAttr(ckey::kStages, b.getI64IntegerAttr(config.getStages())),
      b.getNamedAttr(ckey::kKernelFamily, b.getStringAttr(familyName)),
      b.getNamedAttr(ckey::kAccumulate, b.getBoolAttr(accumulate)),
  });
  if (splitHeadDims())
    s.push_back(
        b.getNamedAttr(ckey::kHeadDimVo, b.getI64IntegerAttr(headDimVo)));
  if (customMask)
    s.push_back(b.getNamedAttr(ckey::kCustomMask, b.getBoolAttr(true)));
  for (StringRef in : epilogueStateInputs())
    s.push_back(b.getNamedAttr(in, b.getBoolAttr(true)));
  if (!pageTable)
    s.push_back(b.getNamedAttr(ckey::kPageTable, b.getBoolAttr(false)));
  // The runtime plans a prefill level with the kernel's query tile.
  if (mma && !decode)
    s.push_back(b.getNamedAttr(ckey::kQoTileSize,
                               b.getI64IntegerAttr(config.getQTile())));
  return s;
}

int64_t AttentionSpec::dynamicSharedBytes() const {
  if (!traits->dynamicSharedBytes)
    return 0;
  return traits->dynamicSharedBytes(config, attentionShape(*this));
}

AttentionShape mlir::cascade::attentionShape(const AttentionSpec &spec) {
  AttentionShape s;
  s.headDim = spec.headDim;
  s.headDimVo = spec.headDimVo;
  s.groupSize = spec.groupSize;
  s.qType = spec.qType;
  s.kvType = spec.kvType;
  s.decode = spec.decode;
  s.split = spec.split;
  s.rope = spec.score.rope();
  s.customMask = spec.customMask;
  s.pageTable = spec.pageTable;
  s.pageSize = spec.pageSize;
  return s;
}

MergeSpec AttentionSpec::splitMerge() const {
  MergeSpec m;
  m.kind = MergeKind::Indptr;
  m.headDim = headDimVo;
  m.vType = oType;
  m.baseE = baseE;
  m.numHeads = numQoHeads;
  m.indptr = decode ? cplan::kOIndptr : cplan::kMergeIndptr;
  m.accumulate = accumulate;
  m.stateInputs = stateInputs;
  // ~128 threads a block, head_dim / 8 per state.
  int64_t tpt = headDimVo / 8, tpb = std::max<int64_t>(1, 128 / tpt);
  m.config = KernelConfigAttr::get(config.getContext(), KernelFamily::Merge,
                                   {tpb * tpt, 1, 1}, tpb, 0, 1);
  return m;
}

FailureOr<AttentionSpec>
mlir::cascade::analyseAttention(PagedAttentionOp op, KernelConfigAttr config,
                                const KernelFamilyTraits &traits) {
  if (failed(refuseLatentAttention(op)))
    return failure();
  AttentionSpec c;
  c.config = config;
  c.traits = &traits;
  auto qT = cast<MemRefType>(op.getQ().getType());
  auto kv = op.getKv();
  c.numQoHeads = qT.getDimSize(1);
  c.headDim = qT.getDimSize(2);
  c.qType = qT.getElementType();
  c.oType = cast<MemRefType>(op.getO().getType()).getElementType();
  c.pool = kv.size() == 1;
  auto kT = cast<MemRefType>(kv[0].getType());
  c.kvType = kT.getElementType();
  c.hnd = op.getKvLayout() == KVLayout::HND;
  c.pageSize = op.getPageSize();
  ArrayRef<int64_t> sh = kT.getShape();
  int64_t hDim = c.pool ? (c.hnd ? sh[2] : sh[3]) : (c.hnd ? sh[1] : sh[2]);
  int64_t psDim = c.pool ? (c.hnd ? sh[3] : sh[2]) : (c.hnd ? sh[2] : sh[1]);
  c.numKvHeads = hDim;
  c.headDimVo = cast<MemRefType>(kv.back().getType()).getShape().back();
  if (ShapedType::isDynamic(c.numQoHeads) || ShapedType::isDynamic(c.headDim) ||
      ShapedType::isDynamic(c.numKvHeads) || ShapedType::isDynamic(psDim))
    return op.emitError("attention lowering needs static heads, head_dim and "
                        "page size"),
           failure();
  c.groupSize = c.numQoHeads / c.numKvHeads;
  c.decode = op.isDecode();
  c.split = !op.getPlan().empty();
  c.causal = !c.decode && op.getCausal();
  c.customMask = op.hasCustomMask();
  for (auto [name, value] : op.getPresentStateInputs()) {
    if (!findStateInputHook(name))
      return op.emitError("no kernel implements the state input '")
                 << name << "'",
             failure();
    c.stateInputs.push_back(name);
  }
  c.pageTable = !op.hasIdentityPages();
  c.accumulate = op.getAccumulate();
  c.score = getScoreOptions(op);
  c.score.smScale = op.getEffectiveSmScale();
  c.baseE = op.getLseBase() == LSEBase::BaseE;
  // The configuration's fp8 staging (the family's whyNotAttention refuses
  // it where the op cannot take it).
  c.fp8DirectK = config.readsFp8KDirect();
  c.fp8DirectV = config.readsFp8VDirect();
  AttentionShape shape = attentionShape(c);
  std::string why = traits.whyNotAttention(config, shape);
  // Every family with dynamic shared memory: at most what any target lets a
  // block opt into (the chip's own limit is checked against its target).
  if (why.empty() && traits.dynamicSharedBytes) {
    int64_t bytes = traits.dynamicSharedBytes(config, shape);
    if (bytes > kMaxSharedBytesOnAnyTarget)
      why =
          ("it needs " + Twine(bytes) + " bytes of shared memory, more than " +
           Twine(kMaxSharedBytesOnAnyTarget))
              .str();
  }
  if (!why.empty()) {
    op.emitError("kernel_config ")
        << config << " cannot run this attention: " << why;
    return failure();
  }
  return c;
}
