//===- PagedDecodeToGPU.cpp - Lower decode paged_attention to GPU ---------===//
//
// Decode (one query per request) over a paged KV cache, FlashInfer's
// BatchDecodeWithPagedKVCacheKernel shape: one block per (work item, KV head),
// threads (D/8, G, bdz): tx owns 8 elements (16 bytes) of head_dim, ty one
// query head of the GQA group (all G heads share each K/V tile), tz a slice of
// the tokens of a tile. K/V tiles of T tokens are copied with 16-byte
// cp.async (nvgpu.device_async_copy, zero-fill past the end) into shared
// memory through an S-stage pipeline (S = 2..4). Scores are reduced with
// gpu.shuffle xor over the D/8 lanes; the online softmax is base 2
// (ex2.approx); the bdz partial states are merged through shared memory.
//
// Split-KV (plan operands): work item w handles request request_indices[w],
// chunk kv_tile_indices[w] (tokens [k*C, (k+1)*C)), writes its partial state
// to tmp_v/tmp_s row o_indptr[req] + chunk (f32, base 2); a second kernel
// merges rows o_indptr[req] .. o_indptr[req+1] into o/lse.
//
//===----------------------------------------------------------------------===//

#include "KernelBuilder.h"
#include "cascade/Conversion/Passes.h"
#include "cascade/Dialect/Cascade/IR/CascadeOps.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/IR/PatternMatch.h"
#include "llvm/ADT/Hashing.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <cstdlib>

using namespace mlir;
using namespace mlir::cascade;

namespace {

struct DecodeConfig {
  int64_t d = 0, hqo = 0, hkv = 0, g = 0, ps = 0;
  bool hnd = false, pool = true, split = false, prefill = false, causal = false;
  Type qT, kvT;
  float smScale = 0, softCap = 0, ropeScale = 1, ropeTheta = 1e4;
  int64_t windowLeft = -1;
  PosEncoding pos = PosEncoding::None;
  bool baseE = false;
  // Geometry.
  int64_t bdx = 0, bdy = 0, bdz = 0, nthreads = 0, tile = 0, tpz = 0,
          stages = 0, chunksPerThread = 0;
  // Element strides.
  int64_t pageStride = 0, vSel = 0, tokStride = 0, headStride = 0;
};

static MemRefType flatTy(Value m) {
  return flatMemRefType(cast<MemRefType>(m.getType()).getElementType());
}

static Value idxToI64(OpBuilder &b, Location loc, Value v) {
  return arith::IndexCastOp::create(b, loc, b.getI64Type(), v);
}

/// FlashInfer's ALiBi slope of head h out of n heads.
static double alibiSlope(int64_t h, int64_t n) {
  int64_t p = 1;
  while (p * 2 <= n)
    p *= 2;
  double m0 = std::exp2(-8.0 / p);
  if (h < p)
    return std::pow(m0, double(h + 1));
  double m1 = std::exp2(-4.0 / p);
  return std::pow(m1, double((h - p) * 2 + 1));
}

/// A constant f32 table in the kernel module; returns a memref.get_global.
static Value constTable(OpBuilder &b, Location loc, gpu::GPUModuleOp gm,
                        StringRef name, ArrayRef<float> values) {
  auto ty = MemRefType::get({int64_t(values.size())}, b.getF32Type());
  if (!gm.lookupSymbol(name)) {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(gm.getBody());
    auto tt = RankedTensorType::get({int64_t(values.size())}, b.getF32Type());
    memref::GlobalOp::create(b, loc, name, b.getStringAttr("private"), ty,
                             DenseElementsAttr::get(tt, values),
                             /*constant=*/true, /*alignment=*/IntegerAttr());
  }
  return memref::GetGlobalOp::create(b, loc, ty, name);
}

static FailureOr<DecodeConfig> analyse(PagedAttentionOp op) {
  DecodeConfig c;
  auto qT = cast<MemRefType>(op.getQ().getType());
  auto kv = op.getKv();
  if (qT.getRank() != 3)
    return op.emitError("q must be [rows, Hqo, D]"), failure();
  c.hqo = qT.getDimSize(1);
  c.d = qT.getDimSize(2);
  c.qT = qT.getElementType();
  c.pool = kv.size() == 1;
  auto kT = cast<MemRefType>(kv[0].getType());
  c.kvT = kT.getElementType();
  c.hnd = op.getKvLayout() == KVLayout::HND;
  c.ps = op.getPageSize();
  ArrayRef<int64_t> sh = kT.getShape();
  int64_t psDim, hDim, dDim;
  if (c.pool) {
    if (sh.size() != 5)
      return op.emitError("kv pool must be 5-D"), failure();
    psDim = c.hnd ? sh[3] : sh[2];
    hDim = c.hnd ? sh[2] : sh[3];
    dDim = sh[4];
  } else {
    if (sh.size() != 4)
      return op.emitError("k/v must be 4-D"), failure();
    psDim = c.hnd ? sh[2] : sh[1];
    hDim = c.hnd ? sh[1] : sh[2];
    dDim = sh[3];
    if (cast<MemRefType>(kv[1].getType()).getElementType() != c.kvT)
      return op.emitError("k and v must have one dtype"), failure();
  }
  c.hkv = hDim;
  if (ShapedType::isDynamic(c.hqo) || ShapedType::isDynamic(c.d) ||
      ShapedType::isDynamic(c.hkv) || ShapedType::isDynamic(psDim) ||
      ShapedType::isDynamic(dDim))
    return op.emitError(
               "decode lowering needs static heads, head_dim and page size"),
           failure();
  if (psDim != c.ps || dDim != c.d || c.hqo % c.hkv != 0)
    return op.emitError("inconsistent decode shapes"), failure();
  if (c.d % 8 != 0 || c.d / 8 > 32 || 32 % (c.d / 8) != 0)
    return op.emitError("decode lowering supports head_dim 64, 128, 256 (D/8 "
                        "lanes must divide a warp)"),
           failure();
  if (!(c.qT.isF16() || c.qT.isBF16()) || !(c.kvT.isF16() || c.kvT.isBF16()))
    return op.emitError("decode lowering supports f16/bf16 q and kv"),
           failure();
  c.g = c.hqo / c.hkv;
  c.split = !op.getPlan().empty();
  c.prefill = !op.isDecode();
  c.causal = c.prefill && op.getCausal();
  if (c.prefill && c.split)
    return op.emitError("split-KV prefill lowering not implemented yet"),
           failure();
  c.smScale = op.getEffectiveSmScale();
  c.softCap = op.getLogitsSoftCap().convertToFloat();
  c.windowLeft = op.getWindowLeft();
  c.pos = op.getPosEncoding();
  c.ropeScale = op.getRopeScale().convertToFloat();
  c.ropeTheta = op.getRopeTheta().convertToFloat();
  c.baseE = op.getLseBase() == LSEBase::BaseE;
  if (op.getCausal()) {
    // Decode: the single query is the last position, causal masks nothing.
  }
  // Geometry.
  // Each thread owns 8 elements of D for every query head of the GQA group
  // (K/V are read from shared memory and converted once per block).
  c.bdx = c.d / 8;
  c.bdy = 1;
  if (c.g > 16)
    return op.emitError("decode lowering supports GQA groups up to 16"),
           failure();
  // Tuning knobs (benchmarking only): CASCADE_DECODE_THREADS (threads per
  // block, default 128), CASCADE_DECODE_TILE (tokens per tile, default 32),
  // CASCADE_DECODE_STAGES (max pipeline depth, default 4),
  // CASCADE_DECODE_SMEM_KB (K/V smem budget, default 40; static smem <= 48).
  auto knob = [](const char *name, int64_t dflt) {
    const char *v = std::getenv(name);
    return v ? std::max<int64_t>(1, std::atoll(v)) : dflt;
  };
  c.bdz = std::max<int64_t>(1, knob("CASCADE_DECODE_THREADS", 128) / c.bdx);
  c.nthreads = c.bdx * c.bdy * c.bdz;
  int64_t budget = knob("CASCADE_DECODE_SMEM_KB", 40) * 1024;
  for (c.tile = knob("CASCADE_DECODE_TILE", 32);; c.tile /= 2) {
    while ((c.tile * c.bdx) % c.nthreads != 0 || c.tile % c.bdz != 0)
      c.tile *= 2;
    int64_t stageBytes = 2 * c.tile * c.d * 2;
    c.stages = std::min<int64_t>(knob("CASCADE_DECODE_STAGES", 4),
                                 budget / stageBytes);
    if (c.stages >= 2 || c.tile <= 16)
      break;
  }
  c.tpz = c.tile / c.bdz;
  c.chunksPerThread = c.tile * c.bdx / c.nthreads;
  if (c.stages < 2)
    return op.emitError("decode tile does not fit shared memory"), failure();
  int64_t page = c.ps * c.hkv * c.d;
  c.pageStride = c.pool ? 2 * page : page;
  c.vSel = c.pool ? page : 0;
  c.tokStride = c.hnd ? c.d : c.hkv * c.d;
  c.headStride = c.hnd ? c.ps * c.d : c.d;
  return c;
}

static std::string kernelName(const DecodeConfig &c, PagedAttentionOp op) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << (c.prefill ? "cascade_prefill_rows" : "cascade_decode")
     << (c.split ? "_split" : "") << (c.causal ? "_causal" : "") << "_"
     << dtypeName(c.qT) << "_" << dtypeName(c.kvT) << "_d" << c.d << "_g" << c.g
     << "_h" << c.hkv << "_p" << c.ps << (c.hnd ? "_hnd" : "_nhd")
     << (c.pool ? "_pool" : "_pair");
  // Options hash keeps distinct option sets apart.
  std::string opts;
  llvm::raw_string_ostream oo(opts);
  oo << llvm::bit_cast<uint32_t>(c.smScale) << ","
     << llvm::bit_cast<uint32_t>(c.softCap) << "," << c.windowLeft << ","
     << int(c.pos) << "," << llvm::bit_cast<uint32_t>(c.ropeScale) << ","
     << llvm::bit_cast<uint32_t>(c.ropeTheta) << "," << c.baseE;
  llvm::hash_code h = llvm::hash_value(StringRef(opts));
  bool defaults = c.softCap == 0 && c.windowLeft < 0 &&
                  c.pos == PosEncoding::None && !c.baseE &&
                  c.smScale == float(1.0 / std::sqrt(double(c.d)));
  if (!defaults)
    os << "_o" << llvm::format_hex_no_prefix(uint32_t(size_t(h)), 8);
  (void)op;
  return s;
}

static SmallVector<NamedAttribute> decodeStatics(Builder &b,
                                                 const DecodeConfig &c) {
  return {
      b.getNamedAttr("head_dim", b.getI64IntegerAttr(c.d)),
      b.getNamedAttr("num_qo_heads", b.getI64IntegerAttr(c.hqo)),
      b.getNamedAttr("num_kv_heads", b.getI64IntegerAttr(c.hkv)),
      b.getNamedAttr("gqa_group_size", b.getI64IntegerAttr(c.g)),
      b.getNamedAttr("page_size", b.getI64IntegerAttr(c.ps)),
      b.getNamedAttr("kv_layout", b.getStringAttr(c.hnd ? "hnd" : "nhd")),
      b.getNamedAttr("layout", b.getStringAttr(c.hnd ? "HND" : "NHD")),
      b.getNamedAttr("o_dtype", b.getStringAttr(dtypeName(c.qT))),
      b.getNamedAttr("causal", b.getBoolAttr(c.causal)),
      b.getNamedAttr("kv_form", b.getStringAttr(c.pool ? "pool" : "pair")),
      b.getNamedAttr("q_dtype", b.getStringAttr(dtypeName(c.qT))),
      b.getNamedAttr("kv_dtype", b.getStringAttr(dtypeName(c.kvT))),
      b.getNamedAttr("sm_scale", b.getF32FloatAttr(c.smScale)),
      b.getNamedAttr("logits_soft_cap", b.getF32FloatAttr(c.softCap)),
      b.getNamedAttr("window_left", b.getI64IntegerAttr(c.windowLeft)),
      b.getNamedAttr("pos_encoding",
                     b.getStringAttr(c.pos == PosEncoding::None ? "none"
                                     : c.pos == PosEncoding::RopeLlama
                                         ? "rope_llama"
                                         : "alibi")),
      b.getNamedAttr("rope_scale", b.getF32FloatAttr(c.ropeScale)),
      b.getNamedAttr("rope_theta", b.getF32FloatAttr(c.ropeTheta)),
      b.getNamedAttr("lse_base", c.baseE ? Attribute(b.getStringAttr("e"))
                                         : Attribute(b.getI64IntegerAttr(2))),
      b.getNamedAttr("tile_tokens", b.getI64IntegerAttr(c.tile)),
      b.getNamedAttr("stages", b.getI64IntegerAttr(c.stages)),
  };
}

/// Applies rotate-half RoPE to the 8 elements `x` (vector<8xf32>) that this
/// lane owns, given the partner's 8 elements (offset D/2) and `posF` (f32).
static Value applyRope(KernelBuilder &k, Value x, Value partner, Value invFreq8,
                       Value posF, Value firstHalf) {
  Value ang = k.fmul(invFreq8, k.splat(posF));
  // Range-reduce to [-pi, pi] for sin/cos.approx (angles are >= 0).
  SmallVector<Value> cs, sn;
  for (int64_t e = 0; e < 8; ++e) {
    Value a = vector::ExtractOp::create(k.b, k.loc, ang, e);
    Value q = arith::FPToSIOp::create(
        k.b, k.loc, k.b.getI32Type(),
        k.fadd(k.fmul(a, k.f32(1.0 / (2.0 * M_PI))), k.f32(0.5)));
    Value r = k.fsub(
        a, k.fmul(arith::SIToFPOp::create(k.b, k.loc, k.b.getF32Type(), q),
                  k.f32(2.0 * M_PI)));
    cs.push_back(k.cosApprox(r));
    sn.push_back(k.sinApprox(r));
  }
  auto vt = VectorType::get({8}, k.b.getF32Type());
  Value cv = vector::FromElementsOp::create(k.b, k.loc, vt, cs);
  Value sv = vector::FromElementsOp::create(k.b, k.loc, vt, sn);
  // first half: x*cos - partner*sin ; second half: x*cos + partner*sin
  Value sgn = k.select(firstHalf, k.f32(-1.0), k.f32(1.0));
  return k.fadd(k.fmul(x, cv), k.fmul(k.fmul(partner, sv), k.splat(sgn)));
}

/// Builds the decode kernel body.
static void buildDecodeBody(OpBuilder &b, gpu::GPUFuncOp f,
                            const DecodeConfig &c, gpu::GPUModuleOp gm,
                            StringRef name) {
  KernelBuilder k(b, f.getLoc());
  Location loc = f.getLoc();
  MLIRContext *ctx = b.getContext();
  auto wg = gpu::AddressSpaceAttr::get(ctx, gpu::AddressSpace::Workgroup);
  int64_t stageElems = c.tile * c.d;
  auto smemKVTy = MemRefType::get({c.stages * stageElems}, c.kvT,
                                  MemRefLayoutAttrInterface(), wg);
  auto redOTy = MemRefType::get({c.bdz * c.d}, b.getF32Type(),
                                MemRefLayoutAttrInterface(), wg);
  auto redMTy = MemRefType::get({c.bdz * 2}, b.getF32Type(),
                                MemRefLayoutAttrInterface(), wg);
  Value smK = f.addWorkgroupAttribution(smemKVTy, loc);
  Value smV = f.addWorkgroupAttribution(smemKVTy, loc);
  Value redO = f.addWorkgroupAttribution(redOTy, loc);
  Value redM = f.addWorkgroupAttribution(redMTy, loc);
  for (unsigned i = 0; i < 4; ++i)
    f.setWorkgroupAttributionAttr(i, LLVM::LLVMDialect::getAlignAttrName(),
                                  b.getI64IntegerAttr(16));

  // Arguments.
  auto args = f.getArguments();
  unsigned ai = 0;
  Value q = args[ai++];
  Value kBuf = args[ai++];
  Value vBuf = c.pool ? kBuf : args[ai++];
  Value qoIndptr;
  if (c.prefill)
    qoIndptr = args[ai++];
  Value kvIndptr = args[ai++], kvIndices = args[ai++], lastLen = args[ai++];
  Value reqIdx, tileIdx, oIndptr, validMask, chunkSize, tmpV, tmpS;
  if (c.split) {
    reqIdx = args[ai++];
    tileIdx = args[ai++];
    oIndptr = args[ai++];
    validMask = args[ai++];
    chunkSize = args[ai++];
    tmpV = args[ai++];
    tmpS = args[ai++];
  }
  Value o = args[ai++], lse = args[ai++];
  ai++; // batch_size / num_work_items / num_rows (grid size)
  Value batchSize = c.prefill ? args[ai++] : Value();

  Value tx = k.threadId(gpu::Dimension::x), ty = k.threadId(gpu::Dimension::y),
        tz = k.threadId(gpu::Dimension::z);
  Value w = k.blockId(gpu::Dimension::x), kvh = k.blockId(gpu::Dimension::y);
  Value lt = k.add(k.mul(k.add(k.mul(tz, k.idx(c.bdy)), ty), k.idx(c.bdx)), tx);
  Value laneId = k.toI32(k.rem(lt, k.idx(32)));

  // Tables (RoPE inverse frequencies per element of D, ALiBi slopes).
  Value ropeTab, alibiTab;
  if (c.pos == PosEncoding::RopeLlama) {
    SmallVector<float> inv;
    for (int64_t i = 0; i < c.d; ++i) {
      int64_t fi = i % (c.d / 2);
      inv.push_back(float(1.0 / (double(c.ropeScale) *
                                 std::pow(double(c.ropeTheta),
                                          2.0 * double(fi) / double(c.d)))));
    }
    ropeTab = constTable(b, loc, gm, (name + "_rope").str(), inv);
  }
  if (c.pos == PosEncoding::ALiBi) {
    SmallVector<float> sl;
    for (int64_t h = 0; h < c.hqo; ++h)
      sl.push_back(float(alibiSlope(h, c.hqo)));
    alibiTab = constTable(b, loc, gm, (name + "_alibi").str(), sl);
  }

  auto body = [&](OpBuilder &bb) {
    KernelBuilder k(bb, loc);
    Value req, t0, t1, chunk, qIndex = w;
    if (c.split) {
      req = k.toIndex(k.loadScalar(reqIdx, w));
      chunk = k.toIndex(k.loadScalar(tileIdx, w));
      qIndex = req;
    } else if (c.prefill) {
      // Query row w: its request is the largest i with qo_indptr[i] <= w
      // (binary search).
      auto idxT = bb.getIndexType();
      auto wl = scf::WhileOp::create(
          bb, loc, TypeRange{idxT, idxT},
          ValueRange{k.idx(0), k.toIndex(batchSize)},
          [&](OpBuilder &wb, Location l, ValueRange a) {
            KernelBuilder kk(wb, l);
            Value more = kk.cmp(arith::CmpIPredicate::sgt, kk.sub(a[1], a[0]),
                                kk.idx(1));
            scf::ConditionOp::create(wb, l, more, a);
          },
          [&](OpBuilder &wb, Location l, ValueRange a) {
            KernelBuilder kk(wb, l);
            Value mid = kk.div(kk.add(a[0], a[1]), kk.idx(2));
            Value v = kk.toIndex(kk.loadScalar(qoIndptr, mid));
            Value le = kk.cmp(arith::CmpIPredicate::sle, v, w);
            scf::YieldOp::create(
                wb, l,
                ValueRange{kk.select(le, mid, a[0]), kk.select(le, a[1], mid)});
          });
      req = wl.getResult(0);
    } else {
      req = w;
    }
    Value pstart = k.toIndex(k.loadScalar(kvIndptr, req));
    Value pend = k.toIndex(k.loadScalar(kvIndptr, k.add(req, k.idx(1))));
    Value npages = k.sub(pend, pstart);
    Value last = k.toIndex(k.loadScalar(lastLen, req));
    Value hasPages = k.cmp(arith::CmpIPredicate::sgt, npages, k.idx(0));
    Value kvLen = k.select(
        hasPages, k.add(k.mul(k.sub(npages, k.idx(1)), k.idx(c.ps)), last),
        k.idx(0));
    if (c.split) {
      // kv_chunk_size lives in device memory (one i32), so a CUDA graph
      // captured once stays right when a replan changes the chunk size.
      Value cs = k.toIndex(k.loadScalar(chunkSize, k.idx(0)));
      t0 = k.mul(chunk, cs);
      t1 = k.minU(k.add(t0, cs), kvLen);
      t0 = k.minU(t0, t1);
    } else {
      t0 = k.idx(0);
      t1 = kvLen;
    }
    // Position of the query: kv_len - 1 in decode; kv_len - qo_len + j for
    // query j of a prefill request (may be negative when qo_len > kv_len).
    Value qPos = k.sub(kvLen, k.idx(1)); // may be -1 when empty; unused then
    if (c.prefill) {
      Value qs = k.toIndex(k.loadScalar(qoIndptr, req));
      Value qe = k.toIndex(k.loadScalar(qoIndptr, k.add(req, k.idx(1))));
      qPos = k.add(k.sub(kvLen, k.sub(qe, qs)), k.sub(w, qs));
      if (c.causal)
        t1 = k.minU(kvLen, k.maxS(k.add(qPos, k.idx(1)), k.idx(0)));
    }
    if (c.windowLeft >= 0) {
      Value wStart = k.maxS(k.sub(qPos, k.idx(c.windowLeft)), k.idx(0));
      t0 = k.minU(k.maxS(t0, wStart), t1);
    }
    Value ntok = k.sub(t1, t0);
    Value numTiles = k.div(k.add(ntok, k.idx(c.tile - 1)), k.idx(c.tile));

    Value laneOff = k.mul(tx, k.idx(8));
    Value firstHalf = k.cmp(arith::CmpIPredicate::ult, laneOff, k.idx(c.d / 2));
    Value partnerOff = k.rem(k.add(laneOff, k.idx(c.d / 2)), k.idx(c.d));
    Value invFreq8;
    if (c.pos == PosEncoding::RopeLlama) {
      SmallVector<Value> fr;
      for (int64_t e = 0; e < 8; ++e)
        fr.push_back(k.loadScalar(ropeTab, k.add(laneOff, k.idx(e))));
      invFreq8 = vector::FromElementsOp::create(
          bb, loc, VectorType::get({8}, bb.getF32Type()), fr);
    }
    bool plainScores = c.softCap == 0 && c.pos != PosEncoding::ALiBi;
    double qScale = plainScores ? c.smScale * M_LOG2E : c.smScale;
    SmallVector<Value> qRows, q8s, slopes;
    for (int64_t g = 0; g < c.g; ++g) {
      Value qoHead = k.add(k.mul(kvh, k.idx(c.g)), k.idx(g));
      Value qRow = k.add(k.mul(qIndex, k.idx(c.hqo)), qoHead);
      Value qBase = k.mul(qRow, k.idx(c.d));
      Value q8 = k.load8(q, k.add(qBase, laneOff));
      if (c.pos == PosEncoding::RopeLlama) {
        Value qp = k.load8(q, k.add(qBase, partnerOff));
        q8 = applyRope(k, q8, qp, invFreq8, k.toF32(qPos), firstHalf);
      }
      q8s.push_back(k.fmul(q8, k.vsplat(qScale)));
      qRows.push_back(qRow);
      if (c.pos == PosEncoding::ALiBi)
        slopes.push_back(k.loadScalar(alibiTab, qoHead));
    }

    // Page ids of the chunks this thread copies for tile `i` (looked up one
    // tile ahead of the copy, so the index load's latency overlaps compute).
    auto lookup = [&](OpBuilder &ib, Value i) {
      KernelBuilder k(ib, loc);
      SmallVector<Value> pages;
      for (int64_t cc = 0; cc < c.chunksPerThread; ++cc) {
        Value ch = k.add(lt, k.idx(cc * c.nthreads));
        Value j = k.div(ch, k.idx(c.bdx));
        Value t = k.add(k.add(t0, k.mul(i, k.idx(c.tile))), j);
        Value valid = k.cmp(arith::CmpIPredicate::ult, t, t1);
        auto ifp = scf::IfOp::create(ib, loc, TypeRange{ib.getIndexType()},
                                     valid, true);
        OpBuilder::InsertionGuard g(ib);
        ib.setInsertionPointToStart(ifp.thenBlock());
        Value pg = k.toIndex(
            k.loadScalar(kvIndices, k.add(pstart, k.div(t, k.idx(c.ps)))));
        scf::YieldOp::create(ib, loc, pg);
        ib.setInsertionPointToStart(ifp.elseBlock());
        scf::YieldOp::create(ib, loc, k.idx(0));
        pages.push_back(ifp.getResult(0));
      }
      return pages;
    };
    // 16-byte cp.async copies of tile `i` into stage `st` (zero-fill past
    // the end of the chunk); returns the group token.
    auto issue = [&](OpBuilder &ib, Value i, Value st, ValueRange pages) {
      KernelBuilder k(ib, loc);
      SmallVector<Value> toks;
      for (int64_t cc = 0; cc < c.chunksPerThread; ++cc) {
        Value ch = k.add(lt, k.idx(cc * c.nthreads));
        Value j = k.div(ch, k.idx(c.bdx));
        Value p = k.rem(ch, k.idx(c.bdx));
        Value t = k.add(k.add(t0, k.mul(i, k.idx(c.tile))), j);
        Value valid = k.cmp(arith::CmpIPredicate::ult, t, t1);
        Value page = pages[cc];
        Value pos = k.select(valid, k.rem(t, k.idx(c.ps)), k.idx(0));
        Value off =
            k.add(k.add(k.mul(page, k.idx(c.pageStride)),
                        k.mul(pos, k.idx(c.tokStride))),
                  k.add(k.mul(kvh, k.idx(c.headStride)), k.mul(p, k.idx(8))));
        Value n = k.select(valid, k.idx(8), k.idx(0));
        Value dst = k.add(k.mul(k.add(k.mul(st, k.idx(c.tile)), j), k.idx(c.d)),
                          k.mul(p, k.idx(8)));
        auto unit = ib.getUnitAttr();
        toks.push_back(nvgpu::DeviceAsyncCopyOp::create(
            ib, loc, smK, ValueRange{dst}, kBuf, ValueRange{off},
            ib.getIndexAttr(8), n, unit));
        Value voff = k.add(off, k.idx(c.vSel));
        toks.push_back(nvgpu::DeviceAsyncCopyOp::create(
            ib, loc, smV, ValueRange{dst}, vBuf, ValueRange{voff},
            ib.getIndexAttr(8), n, unit));
      }
      return nvgpu::DeviceAsyncCreateGroupOp::create(ib, loc, toks).getResult();
    };

    // Prologue: tiles 0 .. S-2, and the page ids of tile S-1.
    for (int64_t s = 0; s + 1 < c.stages; ++s)
      issue(bb, k.idx(s), k.idx(s), lookup(bb, k.idx(s)));
    // Loop state: (m, d, acc) per query head, then the prefetched page ids.
    SmallVector<Value> init;
    for (int64_t g = 0; g < c.g; ++g) {
      init.push_back(k.negInf());
      init.push_back(k.f32(0.0));
      init.push_back(k.vsplat(0.0));
    }
    int64_t nState = 3 * c.g;
    llvm::append_range(init, lookup(bb, k.idx(c.stages - 1)));

    auto loop = scf::ForOp::create(
        bb, loc, k.idx(0), numTiles, k.idx(1), init,
        [&](OpBuilder &lb, Location, Value i, ValueRange it) {
          KernelBuilder k(lb, loc);
          Value nextTile = k.add(i, k.idx(c.stages - 1));
          Value tok = issue(lb, nextTile, k.rem(nextTile, k.idx(c.stages)),
                            it.drop_front(nState));
          SmallVector<Value> nextPages = lookup(lb, k.add(i, k.idx(c.stages)));
          nvgpu::DeviceAsyncWaitOp::create(lb, loc, tok,
                                           lb.getI32IntegerAttr(c.stages - 1));
          gpu::BarrierOp::create(lb, loc);
          Value st = k.rem(i, k.idx(c.stages));
          Value tileBase = k.add(t0, k.mul(i, k.idx(c.tile)));
          SmallVector<Value> rows;
          SmallVector<SmallVector<Value>> scores(c.g);
          for (int64_t jj = 0; jj < c.tpz; ++jj) {
            Value j = k.add(k.mul(tz, k.idx(c.tpz)), k.idx(jj));
            Value row = k.mul(k.add(k.mul(st, k.idx(c.tile)), j), k.idx(c.d));
            rows.push_back(row);
            Value k8 = k.load8(smK, k.add(row, laneOff));
            Value t = k.add(tileBase, j);
            if (c.pos == PosEncoding::RopeLlama) {
              Value kp = k.load8(smK, k.add(row, partnerOff));
              k8 = applyRope(k, k8, kp, invFreq8, k.toF32(t), firstHalf);
            }
            Value valid = k.cmp(arith::CmpIPredicate::ult, t, t1);
            Value rel;
            if (c.pos == PosEncoding::ALiBi)
              rel = k.toF32(k.sub(t, qPos));
            SmallVector<Value> dots;
            for (int64_t g = 0; g < c.g; ++g)
              dots.push_back(k.dot8(q8s[g], k8));
            dots = k.warpAllReduceSumMulti(dots, c.bdx, laneId);
            for (int64_t g = 0; g < c.g; ++g) {
              Value x = dots[g];
              if (c.pos == PosEncoding::ALiBi)
                x = k.fma(slopes[g], rel, x);
              if (c.softCap > 0)
                x = k.fmul(k.tanhFast(k.fmul(x, k.f32(1.0 / c.softCap))),
                           k.f32(c.softCap));
              if (!plainScores)
                x = k.fmul(x, k.f32(M_LOG2E));
              scores[g].push_back(k.select(valid, x, k.negInf()));
            }
          }
          Value zero = k.f32(0.0);
          SmallVector<Value> ms, ds, accs, ps;
          for (int64_t g = 0; g < c.g; ++g) {
            Value m = it[3 * g], d = it[3 * g + 1], acc = it[3 * g + 2];
            Value mNew = m;
            for (Value sc : scores[g])
              mNew = k.fmax(mNew, sc);
            Value scale = k.select(k.isNegInf(m), zero, k.ex2(k.fsub(m, mNew)));
            d = k.fmul(d, scale);
            acc = k.fmul(acc, k.splat(scale));
            ms.push_back(mNew);
            ds.push_back(d);
            accs.push_back(acc);
          }
          for (int64_t jj = 0; jj < c.tpz; ++jj) {
            Value v8 = k.load8(smV, k.add(rows[jj], laneOff));
            for (int64_t g = 0; g < c.g; ++g) {
              Value sc = scores[g][jj];
              Value p =
                  k.select(k.isNegInf(sc), zero, k.ex2(k.fsub(sc, ms[g])));
              ds[g] = k.fadd(ds[g], p);
              accs[g] = k.fma(v8, k.splat(p), accs[g]);
            }
          }
          gpu::BarrierOp::create(lb, loc);
          SmallVector<Value> yields;
          for (int64_t g = 0; g < c.g; ++g) {
            yields.push_back(ms[g]);
            yields.push_back(ds[g]);
            yields.push_back(accs[g]);
          }
          llvm::append_range(yields, nextPages);
          scf::YieldOp::create(lb, loc, yields);
        });
    // Drain outstanding (empty) groups before leaving.
    {
      auto tok = nvgpu::DeviceAsyncCreateGroupOp::create(bb, loc, ValueRange{});
      nvgpu::DeviceAsyncWaitOp::create(bb, loc, tok, bb.getI32IntegerAttr(0));
    }
    Value prow;
    if (c.split)
      prow = k.add(k.toIndex(k.loadScalar(oIndptr, req)), chunk);
    Value isZ0 = k.cmp(arith::CmpIPredicate::eq, tz, k.idx(0));
    Value isTx0 = k.cmp(arith::CmpIPredicate::eq, tx, k.idx(0));
    for (int64_t g = 0; g < c.g; ++g) {
      Value m = loop.getResult(3 * g), d = loop.getResult(3 * g + 1),
            acc = loop.getResult(3 * g + 2);
      // Merge the bdz partial states of head g through shared memory.
      if (c.bdz > 1) {
        if (g > 0)
          gpu::BarrierOp::create(bb, loc);
        k.store8(acc, redO, k.add(k.mul(tz, k.idx(c.d)), laneOff));
        auto ifx = scf::IfOp::create(bb, loc, isTx0, false);
        {
          OpBuilder::InsertionGuard gd(bb);
          bb.setInsertionPointToStart(ifx.thenBlock());
          k.storeScalar(m, redM, k.mul(tz, k.idx(2)));
          k.storeScalar(d, redM, k.add(k.mul(tz, k.idx(2)), k.idx(1)));
        }
        gpu::BarrierOp::create(bb, loc);
        Value mm = k.negInf();
        SmallVector<Value> mz, dz;
        for (int64_t z = 0; z < c.bdz; ++z) {
          mz.push_back(k.loadScalar(redM, k.idx(2 * z)));
          dz.push_back(k.loadScalar(redM, k.idx(2 * z + 1)));
          mm = k.fmax(mm, mz.back());
        }
        Value dd = k.f32(0.0), aa = k.vsplat(0.0);
        for (int64_t z = 0; z < c.bdz; ++z) {
          Value wz =
              k.select(k.isNegInf(mz[z]), k.f32(0.0), k.ex2(k.fsub(mz[z], mm)));
          dd = k.fma(dz[z], wz, dd);
          Value oz = k.load8(redO, k.add(k.idx(z * c.d), laneOff));
          aa = k.fma(oz, k.splat(wz), aa);
        }
        m = mm;
        d = dd;
        acc = aa;
      }
      Value empty = k.fcmp(arith::CmpFPredicate::OEQ, d, k.f32(0.0));
      Value inv = k.select(empty, k.f32(0.0), k.fdiv(k.f32(1.0), d));
      Value outV = k.select(empty, k.vsplat(0.0), k.fmul(acc, k.splat(inv)));
      Value outS2 = k.select(empty, k.negInf(), k.fadd(m, k.lg2(d)));
      auto ifz = scf::IfOp::create(bb, loc, isZ0, false);
      OpBuilder::InsertionGuard gd(bb);
      bb.setInsertionPointToStart(ifz.thenBlock());
      Value outRow, vDst, sDst, outS;
      Value qoHead = k.add(k.mul(kvh, k.idx(c.g)), k.idx(g));
      if (c.split) {
        outRow = k.add(k.mul(prow, k.idx(c.hqo)), qoHead);
        vDst = tmpV;
        sDst = tmpS;
        outS = outS2;
      } else {
        outRow = qRows[g];
        vDst = o;
        sDst = lse;
        outS = c.baseE ? k.fmul(outS2, k.f32(M_LN2)) : outS2;
      }
      k.store8(outV, vDst, k.add(k.mul(outRow, k.idx(c.d)), laneOff));
      auto ifx = scf::IfOp::create(bb, loc, isTx0, false);
      bb.setInsertionPointToStart(ifx.thenBlock());
      k.storeScalar(outS, sDst, outRow);
    }
  };

  if (c.split) {
    Value mv = k.loadScalar(validMask, w);
    Value zero = arith::ConstantIntOp::create(b, loc, mv.getType(), 0);
    Value on = k.cmp(arith::CmpIPredicate::ne, mv, zero);
    auto ifv = scf::IfOp::create(b, loc, on, false);
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPointToStart(ifv.thenBlock());
    body(b);
  } else {
    body(b);
  }
}

/// The variable-length merge driven by o_indptr: one task per (request,
/// head), rows o_indptr[req] .. o_indptr[req+1] of tmp_v/tmp_s (base 2).
static void buildIndptrMergeBody(OpBuilder &b, gpu::GPUFuncOp f,
                                 const DecodeConfig &c, int64_t tpb) {
  KernelBuilder k(b, f.getLoc());
  Location loc = f.getLoc();
  auto a = f.getArguments();
  Value oIndptr = a[0], tmpV = a[1], tmpS = a[2], o = a[3], lse = a[4];
  Value numTasks = k.mul(k.toIndex(a[5]), k.idx(c.hqo));
  int64_t tpt = c.d / 8;
  Value tid = k.threadId(gpu::Dimension::x), bid = k.blockId(gpu::Dimension::x);
  Value task = k.add(k.mul(bid, k.idx(tpb)), k.div(tid, k.idx(tpt)));
  Value lane = k.rem(tid, k.idx(tpt));
  Value inRange = k.cmp(arith::CmpIPredicate::ult, task, numTasks);
  auto ifOp = scf::IfOp::create(b, loc, inRange, false);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(ifOp.thenBlock());
  Value req = k.div(task, k.idx(c.hqo)), head = k.rem(task, k.idx(c.hqo));
  Value r0 = k.toIndex(k.loadScalar(oIndptr, req));
  Value r1 = k.toIndex(k.loadScalar(oIndptr, k.add(req, k.idx(1))));
  Value laneOff = k.mul(lane, k.idx(8));
  auto loop = scf::ForOp::create(
      b, loc, r0, r1, k.idx(1),
      ValueRange{k.negInf(), k.f32(0.0), k.vsplat(0.0)},
      [&](OpBuilder &lb, Location l, Value r, ValueRange it) {
        KernelBuilder kk(lb, l);
        Value sidx = kk.add(kk.mul(r, kk.idx(c.hqo)), head);
        Value si = kk.loadScalar(tmpS, sidx);
        Value vi = kk.load8(tmpV, kk.add(kk.mul(sidx, kk.idx(c.d)), laneOff));
        Value m = it[0], d = it[1], acc = it[2];
        Value mNew = kk.fmax(m, si);
        Value zero = kk.f32(0.0);
        Value scale = kk.select(kk.isNegInf(m), zero, kk.ex2(kk.fsub(m, mNew)));
        Value w = kk.select(kk.isNegInf(si), zero, kk.ex2(kk.fsub(si, mNew)));
        Value dNew = kk.fadd(kk.fmul(d, scale), w);
        Value accNew =
            kk.fadd(kk.fmul(acc, kk.splat(scale)), kk.fmul(vi, kk.splat(w)));
        scf::YieldOp::create(lb, l, ValueRange{mNew, dNew, accNew});
      });
  Value m = loop.getResult(0), d = loop.getResult(1), acc = loop.getResult(2);
  Value empty = k.fcmp(arith::CmpFPredicate::OEQ, d, k.f32(0.0));
  Value inv = k.select(empty, k.f32(0.0), k.fdiv(k.f32(1.0), d));
  Value v = k.select(empty, k.vsplat(0.0), k.fmul(acc, k.splat(inv)));
  Value s2 = k.fadd(m, k.lg2(d));
  Value s =
      k.select(empty, k.negInf(), c.baseE ? k.fmul(s2, k.f32(M_LN2)) : s2);
  k.store8(v, o, k.add(k.mul(task, k.idx(c.d)), laneOff));
  Value isLane0 = k.cmp(arith::CmpIPredicate::eq, lane, k.idx(0));
  auto if0 = scf::IfOp::create(b, loc, isLane0, false);
  b.setInsertionPointToStart(if0.thenBlock());
  k.storeScalar(s, lse, task);
}

struct PagedDecodeToGPU : OpRewritePattern<PagedAttentionOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(PagedAttentionOp op,
                                PatternRewriter &rewriter) const override {
    for (Value v : op->getOperands())
      if (isa<RankedTensorType>(v.getType()))
        return failure(); // bufferize first
    auto cfg = analyse(op);
    if (failed(cfg))
      return failure();
    DecodeConfig c = *cfg;
    MLIRContext *ctx = op.getContext();
    Builder bb(ctx);
    auto module = op->getParentOfType<ModuleOp>();
    gpu::GPUModuleOp gm = getOrCreateKernelModule(module);
    std::string name = kernelName(c, op);
    auto kv = op.getKv();

    SmallVector<KernelParam> params = {{"q", "memref", flatTy(op.getQ())}};
    if (c.pool) {
      params.push_back({"kv_cache", "memref", flatTy(kv[0])});
    } else {
      params.push_back({"k_cache", "memref", flatTy(kv[0])});
      params.push_back({"v_cache", "memref", flatTy(kv[1])});
    }
    if (c.prefill)
      params.push_back({"qo_indptr", "memref", flatTy(op.getQoIndptr())});
    params.push_back({"kv_indptr", "memref", flatTy(op.getKvIndptr())});
    params.push_back({"kv_indices", "memref", flatTy(op.getKvIndices())});
    params.push_back(
        {"kv_last_page_len", "memref", flatTy(op.getKvLastPageLen())});
    SmallVector<StringRef> planArrays;
    auto plan = op.getPlan();
    if (c.split) {
      if (plan.size() != 7)
        return op.emitError("split decode expects 7 plan operands"), failure();
      params.push_back({"request_indices", "memref", flatTy(plan[0])});
      params.push_back({"kv_tile_indices", "memref", flatTy(plan[1])});
      params.push_back({"o_indptr", "memref", flatTy(plan[2])});
      params.push_back({"block_valid_mask", "memref", flatTy(plan[3])});
      params.push_back({"kv_chunk_size", "memref", flatTy(plan[4])});
      params.push_back({"tmp_v", "memref", flatTy(plan[5])});
      params.push_back({"tmp_s", "memref", flatTy(plan[6])});
      planArrays = {
          "request_indices", "kv_tile_indices", "o_indptr", "block_valid_mask",
          "kv_chunk_size",   "tmp_v",           "tmp_s"};
    }
    params.push_back({"o", "memref", flatTy(op.getO())});
    params.push_back({"lse", "memref", flatTy(op.getLse())});
    // Split mode launches the plan's padded grid: it depends only on the
    // batch size, heads and device, so a captured graph survives replans;
    // surplus work items read block_valid_mask = 0 and return.
    StringRef gridParam = c.split     ? "padded_batch_size"
                          : c.prefill ? "num_rows"
                                      : "batch_size";
    params.push_back({gridParam.str(), "i64", bb.getI64Type()});
    if (c.prefill)
      params.push_back({"batch_size", "i64", bb.getI64Type()});
    SmallVector<int64_t> block = {c.bdx, c.bdy, c.bdz};
    auto manifest =
        makeManifest(ctx, name,
                     c.split     ? "decode_split"
                     : c.prefill ? "prefill"
                                 : "decode",
                     block,
                     {gridRule(ctx, gridParam, 1), bb.getI64IntegerAttr(c.hkv),
                      bb.getI64IntegerAttr(1)},
                     0, decodeStatics(bb, c), params, planArrays);
    gpu::GPUFuncOp fn = getOrCreateKernel(module, name, params, block, manifest,
                                          [&](OpBuilder &b, gpu::GPUFuncOp f) {
                                            buildDecodeBody(b, f, c, gm, name);
                                          });

    Location loc = op.getLoc();
    auto flat = [&](Value v) {
      return flattenContiguous(rewriter, loc, v).first;
    };
    SmallVector<Value> args = {flat(op.getQ())};
    for (Value v : kv)
      args.push_back(flat(v));
    if (c.prefill)
      args.push_back(flat(op.getQoIndptr()));
    args.push_back(flat(op.getKvIndptr()));
    args.push_back(flat(op.getKvIndices()));
    args.push_back(flat(op.getKvLastPageLen()));
    if (c.split) {
      for (int i = 0; i < 4; ++i)
        args.push_back(flat(plan[i]));
      args.push_back(flat(plan[4]));
      args.push_back(flat(plan[5]));
      args.push_back(flat(plan[6]));
    }
    args.push_back(flat(op.getO()));
    args.push_back(flat(op.getLse()));
    Value batch =
        memref::DimOp::create(rewriter, loc, op.getKvLastPageLen(), 0);
    Value items =
        c.split ? memref::DimOp::create(rewriter, loc, plan[0], 0).getResult()
        : c.prefill
            ? memref::DimOp::create(rewriter, loc, op.getQ(), 0).getResult()
            : batch;
    args.push_back(idxToI64(rewriter, loc, items));
    if (c.prefill)
      args.push_back(idxToI64(rewriter, loc, batch));

    Value c0 = arith::ConstantIndexOp::create(rewriter, loc, 0);
    Value c1 = arith::ConstantIndexOp::create(rewriter, loc, 1);
    {
      Value nonEmpty = arith::CmpIOp::create(
          rewriter, loc, arith::CmpIPredicate::ugt, items, c0);
      auto ifOp = scf::IfOp::create(rewriter, loc, nonEmpty, false);
      OpBuilder::InsertionGuard g(rewriter);
      rewriter.setInsertionPointToStart(ifOp.thenBlock());
      Value hk = arith::ConstantIndexOp::create(rewriter, loc, c.hkv);
      auto cst = [&](int64_t v) {
        return arith::ConstantIndexOp::create(rewriter, loc, v).getResult();
      };
      gpu::LaunchFuncOp::create(
          rewriter, loc, fn, gpu::KernelDim3{items, hk, c1},
          gpu::KernelDim3{cst(c.bdx), cst(c.bdy), cst(c.bdz)}, Value(), args);
    }
    if (c.split) {
      // The variable-length merge of the partial states.
      int64_t tpt = c.d / 8, tpb = std::max<int64_t>(1, 128 / tpt);
      std::string mname = "cascade_merge_states_indptr_" + dtypeName(c.qT) +
                          "_d" + std::to_string(c.d) + "_h" +
                          std::to_string(c.hqo) + (c.baseE ? "_be" : "_b2");
      SmallVector<KernelParam> mparams = {
          {"o_indptr", "memref", flatTy(plan[2])},
          {"tmp_v", "memref", flatTy(plan[5])},
          {"tmp_s", "memref", flatTy(plan[6])},
          {"o", "memref", flatTy(op.getO())},
          {"lse", "memref", flatTy(op.getLse())},
          {"num_rows", "i64", bb.getI64Type()}};
      SmallVector<NamedAttribute> ms = {
          bb.getNamedAttr("head_dim", bb.getI64IntegerAttr(c.d)),
          bb.getNamedAttr("num_qo_heads", bb.getI64IntegerAttr(c.hqo)),
          bb.getNamedAttr("v_dtype", bb.getStringAttr(dtypeName(c.qT))),
          bb.getNamedAttr("lse_base",
                          c.baseE ? Attribute(bb.getStringAttr("e"))
                                  : Attribute(bb.getI64IntegerAttr(2)))};
      auto mman =
          makeManifest(ctx, mname, "merge_states_indptr", {tpb * tpt, 1, 1},
                       {gridRule(ctx, "num_rows", tpb, c.hqo),
                        bb.getI64IntegerAttr(1), bb.getI64IntegerAttr(1)},
                       0, ms, mparams, {"o_indptr", "tmp_v", "tmp_s"});
      gpu::GPUFuncOp mfn =
          getOrCreateKernel(module, mname, mparams, {tpb * tpt, 1, 1}, mman,
                            [&](OpBuilder &b, gpu::GPUFuncOp f) {
                              buildIndptrMergeBody(b, f, c, tpb);
                            });
      Value tasks = arith::MulIOp::create(
          rewriter, loc, batch,
          arith::ConstantIndexOp::create(rewriter, loc, c.hqo));
      Value nonEmpty = arith::CmpIOp::create(
          rewriter, loc, arith::CmpIPredicate::ugt, tasks, c0);
      auto ifOp = scf::IfOp::create(rewriter, loc, nonEmpty, false);
      OpBuilder::InsertionGuard g(rewriter);
      rewriter.setInsertionPointToStart(ifOp.thenBlock());
      Value grid = arith::CeilDivUIOp::create(
          rewriter, loc, tasks,
          arith::ConstantIndexOp::create(rewriter, loc, tpb));
      Value bx = arith::ConstantIndexOp::create(rewriter, loc, tpb * tpt);
      gpu::LaunchFuncOp::create(
          rewriter, loc, mfn, gpu::KernelDim3{grid, c1, c1},
          gpu::KernelDim3{bx, c1, c1}, Value(),
          ValueRange{flat(plan[2]), flat(plan[5]), flat(plan[6]),
                     flat(op.getO()), flat(op.getLse()),
                     idxToI64(rewriter, loc, batch)});
    }
    rewriter.eraseOp(op);
    return success();
  }
};

} // namespace

void cascade::populatePagedDecodeToGPUPatterns(RewritePatternSet &patterns) {
  patterns.add<PagedDecodeToGPU>(patterns.getContext());
}
