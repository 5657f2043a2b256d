//===- MmaAttentionKernel.cpp - Tiled attention on tensor cores -----------===//
//
// The mma_sync kernel family: FlashAttention-2 over a paged KV cache on
// mma.sync.m16n8k16 (f32 accumulators), built from the tensor-core blocks of
// GPUCodegen/MmaSync.h.
//
// A block owns a tile of q_tile packed query rows of one request and one KV
// head: packed row p is query p / G, query head kv_head * G + p % G (the GQA
// group is packed into the rows, as FlashInfer does), so every K/V tile
// gathered from the pages feeds all G heads. Warps are laid out
// [32, warps_q, warps_kv]: warp (y, z) owns rows [y * 16 * M, (y + 1) * 16 *
// M) of the tile (M m16 tiles) and keys [z * kv_tile / warps_kv, ...) of
// every KV tile.
//
// Per block: the Q tile is copied into shared memory once (cp.async); K/V
// tiles of kv_tile tokens are gathered from the pages with 16-byte cp.async
// into a `stages`-deep ring of swizzled shared-memory tiles. Per KV tile a
// warp computes S = Q K^T (ldmatrix + mma), applies the options (scale,
// ALiBi, soft cap; causal / window / length masks only on tiles that need
// them), runs the online softmax in base 2 on the accumulator fragments
// (row max / sum over the quad of lanes of a row), turns P into A fragments
// in registers and accumulates O += P V (ldmatrix .trans + mma). Tiles past
// the causal diagonal and before the sliding window are never loaded.
//
// Work: without a plan the block finds its (request, query tile) itself
// (decode: request = block / tiles per request; prefill: a binary search
// over v(i) = ceil(qo_indptr[i] * G / q_tile) + i, which leaves room for
// every request's tiles); with a plan (split-KV) it reads request, query
// tile and KV chunk from the plan arrays and writes an f32 partial state
// that merge_states_indptr merges. `accumulate` merges the result into the
// state the outputs hold.
//
//===----------------------------------------------------------------------===//

#include "KernelSpec.h"

#include "cascade/Conversion/GPUCodegen/MmaSync.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "llvm/Support/MathExtras.h"

#include <cmath>

using namespace mlir;
using namespace mlir::cascade;

namespace {

/// How far (log2 units) a tile's row max may exceed the running max before
/// the running max, and with it O, is rescaled (FlashAttention-4's lazy
/// rescaling): exponents stay below 2^8.
constexpr double kRescaleLog2 = 8.0;

/// Builds one mma_sync attention kernel.
class MmaAttentionGen {
public:
  MmaAttentionGen(OpBuilder &b, gpu::GPUFuncOp fn, gpu::GPUModuleOp module,
                  const AttentionSpec &spec)
      : b(b), k(b, fn.getLoc()), loc(fn.getLoc()), fn(fn), module(module),
        c(spec) {
    const KernelConfigAttr &cfg = spec.config;
    d = spec.headDim;
    dp = llvm::alignTo(d, 16);
    warpsQ = cfg.getWarpsQ();
    warpsKV = cfg.getWarpsKV();
    mTiles = cfg.getMmaTilesPerWarp();
    qTile = cfg.getQTile();
    kvTile = cfg.getKvTile();
    stages = cfg.getStages();
    kvPerWarp = kvTile / warpsKV;
    sTiles = kvPerWarp / 8;
    oTiles = dp / 8;
    numThreads = 32 * warpsQ * warpsKV;
    qLayout = SmemTileLayout::get(qTile, dp);
    kvLayout = SmemTileLayout::get(kvTile, dp);
    int64_t page = c.pageSize * c.numKvHeads * d;
    pageStride = c.pool ? 2 * page : page;
    vSel = c.pool ? page : 0;
    tokStride = c.hnd ? d : c.numKvHeads * d;
    headStride = c.hnd ? c.pageSize * d : d;
    expScale = c.plainScores() ? double(c.smScale) * M_LOG2E : 1.0;
    prefetchPages = mTiles == 1;
  }

  void build();

private:
  // Setup.
  void bindArguments();
  void resolveWorkItem();
  void body();
  // Pieces of the body.
  Value kvPage(Value token);
  Value kvSourceOffset(Value page, Value token);
  SmallVector<Value> lookupPages(Value tile);
  void issueKV(Value tile, Value stage, ArrayRef<Value> pages);
  void ropeInPlace(Value tileBase, const SmemTileLayout &layout, int64_t rows,
                   function_ref<Value(Value)> position);
  SmallVector<Value> scores(Value stage);
  SmallVector<Value> transformScores(ArrayRef<Value> s, Value tileStart,
                                     bool masked);
  Value needsMask(Value tileStart);
  void epilogue(ArrayRef<Value> o, ArrayRef<Value> m, ArrayRef<Value> l);

  Value kBase(Value stage) {
    return k.add(k.idx(qLayout.numElements()),
                 k.mul(stage, k.idx(kvLayout.numElements())));
  }
  Value vBase(Value stage) {
    return k.add(k.idx(qLayout.numElements() + stages * kvLayout.numElements()),
                 k.mul(stage, k.idx(kvLayout.numElements())));
  }
  /// Tile-local row of pair `pair` of m-tile `mt` held by this thread.
  Value localRow(int64_t mt, int64_t pair) {
    return k.add(warpRow0, k.idx(mt * 16 + 8 * pair));
  }
  Value i1(bool v) { return arith::ConstantIntOp::create(b, loc, v, 1); }
  Value andI(Value x, Value y) { return arith::AndIOp::create(b, loc, x, y); }
  Value orI(Value x, Value y) { return arith::OrIOp::create(b, loc, x, y); }

  OpBuilder &b;
  KernelBuilder k;
  Location loc;
  gpu::GPUFuncOp fn;
  gpu::GPUModuleOp module;
  const AttentionSpec &c;

  // Geometry.
  int64_t d, dp, warpsQ, warpsKV, mTiles, qTile, kvTile, stages, kvPerWarp,
      sTiles, oTiles, numThreads;
  SmemTileLayout qLayout, kvLayout;
  int64_t pageStride, vSel, tokStride, headStride;
  double expScale;
  bool prefetchPages;

  // Arguments.
  Value q, kCache, vCache, qoIndptr, kvIndptr, kvIndices, lastLen;
  Value reqIdx, kvTileIdx, oIndptr, validMask, chunkSize, tmpV, tmpS, qoTileIdx;
  Value o, lse, gridCount, batchSize;

  // Thread geometry.
  Value lane, warpQ, warpKV, tid, kvHead, smem, warpRow0;
  // Work item.
  Value req, qTileIdx, chunk, active;
  // Per block.
  Value qoStart, qoLen, kvLen, pageStart, t0, t1, numTiles, firstQuery,
      lastQuery;
  /// One of the thread's accumulator rows (index mt * 2 + pair): computed
  /// where it is used rather than kept live across the KV loop.
  struct RowInfo {
    Value query, head, valid, pos;
  };
  RowInfo row(int64_t r);
  Value tileRow0, posBase, slopes;
  // Copies.
  TileCopyPlan kvCopy;
  Value ropeTable;
  /// The Q tile's cp.async group. Waits name it: with their group counts
  /// they wait for every older group, the Q tile's included.
  Value qGroup;
};

void MmaAttentionGen::bindArguments() {
  auto a = fn.getArguments();
  unsigned i = 0;
  q = a[i++];
  kCache = a[i++];
  vCache = c.pool ? kCache : a[i++];
  if (!c.decode)
    qoIndptr = a[i++];
  kvIndptr = a[i++];
  kvIndices = a[i++];
  lastLen = a[i++];
  if (c.split) {
    reqIdx = a[i++];
    kvTileIdx = a[i++];
    oIndptr = a[i++];
    validMask = a[i++];
    chunkSize = a[i++];
    tmpV = a[i++];
    tmpS = a[i++];
    if (!c.decode)
      qoTileIdx = a[i++];
  }
  o = a[i++];
  lse = a[i++];
  gridCount = a[i++];
  if (i < a.size())
    batchSize = a[i++];
}

void MmaAttentionGen::resolveWorkItem() {
  Value w = k.blockId(gpu::Dimension::x);
  if (c.split) {
    Value mv = k.loadScalar(validMask, w);
    active = k.cmp(arith::CmpIPredicate::ne, mv,
                   arith::ConstantIntOp::create(b, loc, mv.getType(), 0));
    req = k.toIndex(k.loadScalar(reqIdx, w));
    chunk = k.toIndex(k.loadScalar(kvTileIdx, w));
    qTileIdx = c.decode ? k.idx(0) : k.toIndex(k.loadScalar(qoTileIdx, w));
  } else if (c.decode) {
    int64_t perReq = c.decodeTilesPerRequest();
    req = k.div(w, k.idx(perReq));
    qTileIdx = k.rem(w, k.idx(perReq));
    active = i1(true);
  } else {
    // v(i) = ceil(qo_indptr[i] * G / q_tile) + i is increasing and leaves
    // v(i + 1) - v(i) >= the tiles of request i; block w belongs to the
    // largest i with v(i) <= w.
    auto v = [&](KernelBuilder &kk, Value i) {
      Value rows = kk.toIndex(kk.loadScalar(qoIndptr, i));
      return kk.add(
          kk.div(kk.add(kk.mul(rows, kk.idx(c.groupSize)), kk.idx(qTile - 1)),
                 kk.idx(qTile)),
          i);
    };
    req = k.lastIndexWithKeyAtMost(k.toIndex(batchSize), w,
                                   arith::CmpIPredicate::ule, v);
    qTileIdx = k.sub(w, v(k, req));
    active = i1(true);
    if (c.causal) {
      // Causal tiles get longer along a request: run them longest first,
      // so that the short ones fill the tail of the grid.
      Value rows =
          k.sub(k.toIndex(k.loadScalar(qoIndptr, k.add(req, k.idx(1)))),
                k.toIndex(k.loadScalar(qoIndptr, req)));
      Value tiles =
          k.div(k.add(k.mul(rows, k.idx(c.groupSize)), k.idx(qTile - 1)),
                k.idx(qTile));
      // Blocks past the request's tiles (the slack of v) keep an index past
      // them and do nothing.
      Value inside = k.cmp(arith::CmpIPredicate::ult, qTileIdx, tiles);
      qTileIdx =
          k.select(inside, k.sub(k.sub(tiles, k.idx(1)), qTileIdx), qTileIdx);
    }
  }
  if (c.decode) {
    qoStart = req;
    qoLen = k.idx(1);
  } else {
    qoStart = k.toIndex(k.loadScalar(qoIndptr, req));
    qoLen =
        k.sub(k.toIndex(k.loadScalar(qoIndptr, k.add(req, k.idx(1)))), qoStart);
  }
  // A tile past the request's packed rows has nothing to do.
  Value packed = k.mul(qoLen, k.idx(c.groupSize));
  active = andI(active, k.cmp(arith::CmpIPredicate::ult,
                              k.mul(qTileIdx, k.idx(qTile)), packed));
}

MmaAttentionGen::RowInfo MmaAttentionGen::row(int64_t r) {
  Value packed =
      k.add(tileRow0, k.add(localRow(r / 2, r % 2), k.div(lane, k.idx(4))));
  RowInfo info;
  info.query = k.div(packed, k.idx(c.groupSize));
  info.head = k.add(k.mul(kvHead, k.idx(c.groupSize)),
                    k.rem(packed, k.idx(c.groupSize)));
  info.valid = k.cmp(arith::CmpIPredicate::ult, info.query, qoLen);
  info.pos = k.add(posBase, info.query);
  return info;
}

Value MmaAttentionGen::kvPage(Value token) {
  return k.toIndex(k.loadScalar(
      kvIndices, k.add(pageStart, k.div(token, k.idx(c.pageSize)))));
}

Value MmaAttentionGen::kvSourceOffset(Value page, Value token) {
  return k.add(k.add(k.mul(page, k.idx(pageStride)),
                     k.mul(k.rem(token, k.idx(c.pageSize)), k.idx(tokStride))),
               k.mul(kvHead, k.idx(headStride)));
}

/// The page ids of the rows this thread copies for KV tile `tile` (0 past
/// the keys), as i32 to keep the prefetch registers few.
SmallVector<Value> MmaAttentionGen::lookupPages(Value tile) {
  // One branch for the tile (is any of its keys real?); inside it, rows past
  // t1 read the page of key t1 - 1 (in bounds) and are zeroed by a select.
  Value tileStart = k.add(t0, k.mul(tile, k.idx(kvTile)));
  SmallVector<Type> types(kvCopy.rows.size(), b.getI32Type());
  auto ifOp = scf::IfOp::create(b, loc, types,
                                k.cmp(arith::CmpIPredicate::ult, tileStart, t1),
                                /*withElse=*/true);
  OpBuilder::InsertionGuard g(b);
  b.setInsertionPointToStart(ifOp.thenBlock());
  SmallVector<Value> pages;
  Value lastKey = k.sub(t1, k.idx(1));
  for (Value row : kvCopy.rows) {
    Value t = k.add(tileStart, row);
    Value page = k.toI32(kvPage(k.minU(t, lastKey)));
    pages.push_back(
        k.select(k.cmp(arith::CmpIPredicate::ult, t, t1), page, k.i32(0)));
  }
  scf::YieldOp::create(b, loc, pages);
  b.setInsertionPointToStart(ifOp.elseBlock());
  scf::YieldOp::create(b, loc, SmallVector<Value>(types.size(), k.i32(0)));
  return SmallVector<Value>(ifOp.getResults());
}

void MmaAttentionGen::issueKV(Value tile, Value stage, ArrayRef<Value> pages) {
  Value tileStart = k.add(t0, k.mul(tile, k.idx(kvTile)));
  SmallVector<Value> offs, valid;
  for (auto [row, page] : llvm::zip(kvCopy.rows, pages)) {
    Value t = k.add(tileStart, row);
    valid.push_back(k.cmp(arith::CmpIPredicate::ult, t, t1));
    offs.push_back(kvSourceOffset(k.toIndex(page), t));
  }
  SmallVector<Value> tokens = issueTileCopy(k, smem, kBase(stage), kvLayout,
                                            kvCopy, kCache, offs, valid, d / 8);
  SmallVector<Value> vOffs;
  for (Value off : offs)
    vOffs.push_back(k.add(off, k.idx(vSel)));
  llvm::append_range(tokens,
                     issueTileCopy(k, smem, vBase(stage), kvLayout, kvCopy,
                                   vCache, vOffs, valid, d / 8));
  commitGroup(k, tokens);
}

/// Rotate-half RoPE applied in place to `rows` rows of a shared-memory tile:
/// element i and i + D/2 of a row at position p become x cos - y sin and
/// y cos + x sin with angle p / (rope_scale * rope_theta^(2i/D)). A thread
/// takes one (row, 8-element chunk of the first half) at a time.
void MmaAttentionGen::ropeInPlace(Value tileBase, const SmemTileLayout &layout,
                                  int64_t rows,
                                  function_ref<Value(Value)> position) {
  int64_t halfChunks = d / 16;
  TileCopyPlan units = distributeTileCopy(k, rows, halfChunks, numThreads, tid);
  auto vt = VectorType::get({8}, c.qType);
  auto vf = VectorType::get({8}, b.getF32Type());
  for (size_t u = 0; u < units.rows.size(); ++u) {
    auto ifOp = scf::IfOp::create(b, loc, units.inRange[u], false);
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPointToStart(ifOp.thenBlock());
    Value row = units.rows[u], ch = units.chunks[u];
    Value xOff = k.add(tileBase, layout.chunkOffset(k, row, ch));
    Value yOff = k.add(
        tileBase, layout.chunkOffset(k, row, k.add(ch, k.idx(halfChunks))));
    auto load = [&](Value off) {
      Value v = vector::LoadOp::create(b, loc, vt, smem, ValueRange{off}, false,
                                       llvm::Align(16));
      return arith::ExtFOp::create(b, loc, vf, v).getResult();
    };
    Value x = load(xOff), y = load(yOff);
    Value pos = k.toF32(position(row));
    SmallVector<Value> cs, sn;
    for (int64_t e = 0; e < 8; ++e) {
      Value inv = k.loadScalar(ropeTable, k.add(k.mul(ch, k.idx(8)), k.idx(e)));
      Value ang = k.fmul(pos, inv);
      // Range-reduce to [-pi, pi] for sin/cos.approx.
      Value turns = arith::FPToSIOp::create(
          b, loc, b.getI32Type(),
          k.fadd(k.fmul(ang, k.f32(1.0 / (2.0 * M_PI))),
                 k.select(k.fcmp(arith::CmpFPredicate::OLT, ang, k.f32(0.0)),
                          k.f32(-0.5), k.f32(0.5))));
      Value r = k.fsub(
          ang, k.fmul(arith::SIToFPOp::create(b, loc, b.getF32Type(), turns),
                      k.f32(2.0 * M_PI)));
      cs.push_back(k.cosApprox(r));
      sn.push_back(k.sinApprox(r));
    }
    Value cv = vector::FromElementsOp::create(b, loc, vf, cs);
    Value sv = vector::FromElementsOp::create(b, loc, vf, sn);
    Value xr = k.fsub(k.fmul(x, cv), k.fmul(y, sv));
    Value yr = k.fadd(k.fmul(y, cv), k.fmul(x, sv));
    auto store = [&](Value v, Value off) {
      vector::StoreOp::create(b, loc, arith::TruncFOp::create(b, loc, vt, v),
                              smem, ValueRange{off}, false, llvm::Align(16));
    };
    store(xr, xOff);
    store(yr, yOff);
  }
}

/// S = Q K^T for this warp's rows and keys: [mt * sTiles + n] accumulators.
SmallVector<Value> MmaAttentionGen::scores(Value stage) {
  MmaBuilder mma(k, c.qType, lane);
  SmallVector<Value> acc(mTiles * sTiles, mma.zeroAccumulator());
  Value kb = kBase(stage);
  Value key0 = k.mul(warpKV, k.idx(kvPerWarp));
  for (int64_t kk = 0; kk < dp / 16; ++kk) {
    SmallVector<Value> a;
    for (int64_t mt = 0; mt < mTiles; ++mt)
      a.push_back(mma.loadA(smem, k.idx(0), qLayout, localRow(mt, 0), kk * 16));
    for (int64_t np = 0; np < sTiles / 2; ++np) {
      auto [b0, b1] = mma.loadBFromNK(smem, kb, kvLayout,
                                      k.add(key0, k.idx(np * 16)), kk * 16);
      for (int64_t mt = 0; mt < mTiles; ++mt) {
        Value &s0 = acc[mt * sTiles + 2 * np];
        Value &s1 = acc[mt * sTiles + 2 * np + 1];
        s0 = mma.mma(a[mt], b0, s0);
        s1 = mma.mma(a[mt], b1, s1);
      }
    }
  }
  return acc;
}

/// Whether the KV tile starting at token `tileStart` needs a mask: it runs
/// past t1, crosses the causal diagonal of the first row, or starts before
/// the window of the last row.
Value MmaAttentionGen::needsMask(Value tileStart) {
  Value end = k.add(tileStart, k.idx(kvTile));
  Value need = k.cmp(arith::CmpIPredicate::sgt, end, t1);
  Value firstPos = k.add(k.sub(kvLen, qoLen), firstQuery);
  Value lastPos = k.add(k.sub(kvLen, qoLen), lastQuery);
  if (c.causal)
    need = orI(
        need, k.cmp(arith::CmpIPredicate::sgt, k.sub(end, k.idx(1)), firstPos));
  if (c.windowLeft >= 0)
    need = orI(need, k.cmp(arith::CmpIPredicate::slt, tileStart,
                           k.sub(lastPos, k.idx(c.windowLeft))));
  return need;
}

/// The options on the raw scores: with plain scores nothing (the scale
/// folds into the exponent); otherwise x * sm_scale, + ALiBi bias, soft cap,
/// then * log2(e). With `masked`, keys past t1, after the causal diagonal or
/// before the window become -inf.
SmallVector<Value> MmaAttentionGen::transformScores(ArrayRef<Value> s,
                                                    Value tileStart,
                                                    bool masked) {
  SmallVector<Value> out;
  Value key0 = k.add(tileStart, k.mul(warpKV, k.idx(kvPerWarp)));
  Value quad = k.mul(k.rem(lane, k.idx(4)), k.idx(2));
  for (int64_t mt = 0; mt < mTiles; ++mt)
    for (int64_t n = 0; n < sTiles; ++n) {
      Value colBase = k.add(key0, k.add(k.idx(n * 8), quad));
      out.push_back(mapAccumulator(
          k, s[mt * sTiles + n], [&](Value x, int64_t pair, int64_t half) {
            int64_t r = mt * 2 + pair;
            RowInfo ri =
                (masked || c.pos == PosEncoding::ALiBi) ? row(r) : RowInfo();
            Value t;
            if (masked || c.pos == PosEncoding::ALiBi)
              t = k.add(colBase, k.idx(half));
            if (!c.plainScores()) {
              x = k.fmul(x, k.f32(c.smScale));
              if (c.pos == PosEncoding::ALiBi)
                x = k.fma(k.loadScalar(slopes, ri.head),
                          k.toF32(k.sub(t, ri.pos)), x);
              if (c.softCap > 0.f)
                x = k.fmul(k.tanhFast(k.fmul(x, k.f32(1.0 / c.softCap))),
                           k.f32(c.softCap));
              x = k.fmul(x, k.f32(M_LOG2E));
            }
            if (!masked)
              return x;
            Value off = k.cmp(arith::CmpIPredicate::sge, t, t1);
            if (c.causal)
              off = orI(off, k.cmp(arith::CmpIPredicate::sgt, t, ri.pos));
            if (c.windowLeft >= 0)
              off = orI(off, k.cmp(arith::CmpIPredicate::slt, t,
                                   k.sub(ri.pos, k.idx(c.windowLeft))));
            return k.select(off, k.negInf(), x);
          }));
    }
  return out;
}

void MmaAttentionGen::build() {
  bindArguments();
  lane = k.threadId(gpu::Dimension::x);
  warpQ = k.threadId(gpu::Dimension::y);
  warpKV = k.threadId(gpu::Dimension::z);
  tid =
      k.add(lane, k.mul(k.add(warpQ, k.mul(warpKV, k.idx(warpsQ))), k.idx(32)));
  kvHead = k.blockId(gpu::Dimension::y);
  warpRow0 = k.mul(warpQ, k.idx(16 * mTiles));
  int64_t elems = qLayout.numElements() + 2 * stages * kvLayout.numElements();
  smem = dynamicSharedMemory(k, module, c.qType, 0, elems);
  if (c.pos == PosEncoding::RopeLlama)
    ropeTable = constantTable(b, loc, module, (fn.getName() + "_rope").str(),
                              ropeInverseFrequencies(c));
  resolveWorkItem();
  // Everything below depends only on block-uniform values: the branch is
  // uniform and the barriers inside are reached by the whole block.
  auto ifOp = scf::IfOp::create(b, loc, active, false);
  OpBuilder::InsertionGuard g(b);
  b.setInsertionPointToStart(ifOp.thenBlock());
  body();
}

void MmaAttentionGen::body() {
  // KV range of the block.
  RequestKv kv = requestKv(k, kvIndptr, lastLen, req, c.pageSize,
                           c.split ? chunkSize : Value(), chunk);
  pageStart = kv.pageStart;
  kvLen = kv.kvLen;
  t0 = kv.t0;
  t1 = kv.t1;
  tileRow0 = k.mul(qTileIdx, k.idx(qTile));
  firstQuery = k.div(tileRow0, k.idx(c.groupSize));
  lastQuery =
      k.minU(k.sub(qoLen, k.idx(1)),
             k.div(k.add(tileRow0, k.idx(qTile - 1)), k.idx(c.groupSize)));
  // Query position of query j: kv_len - qo_len + j (may be negative).
  posBase = k.sub(kvLen, qoLen);
  if (c.causal) {
    // Keys past the last row's diagonal are never loaded.
    Value lastPos = k.add(posBase, lastQuery);
    t1 = k.minU(t1, k.maxS(k.add(lastPos, k.idx(1)), k.idx(0)));
    t0 = k.minU(t0, t1);
  }
  if (c.windowLeft >= 0) {
    // Nor keys before the first row's window.
    Value firstPos = k.add(posBase, firstQuery);
    Value start = k.maxS(k.sub(firstPos, k.idx(c.windowLeft)), k.idx(0));
    t0 = k.minU(k.maxS(t0, start), t1);
  }
  numTiles = k.div(k.add(k.sub(t1, t0), k.idx(kvTile - 1)), k.idx(kvTile));

  if (c.pos == PosEncoding::ALiBi) {
    SmallVector<float> sl;
    for (int64_t h = 0; h < c.numQoHeads; ++h)
      sl.push_back(float(alibiSlope(h, c.numQoHeads)));
    slopes = constantTable(b, loc, module, (fn.getName() + "_alibi").str(), sl);
  }

  // Q tile: packed row r is query (tileRow0 + r) / G of head kv_head * G +
  // (tileRow0 + r) % G; rows past the request are zero-filled.
  {
    TileCopyPlan qCopy = distributeTileCopy(k, qTile, dp / 8, numThreads, tid);
    SmallVector<Value> offs, valid;
    for (Value r : qCopy.rows) {
      Value packed = k.add(tileRow0, r);
      Value j = k.div(packed, k.idx(c.groupSize));
      Value head = k.add(k.mul(kvHead, k.idx(c.groupSize)),
                         k.rem(packed, k.idx(c.groupSize)));
      valid.push_back(k.cmp(arith::CmpIPredicate::ult, j, qoLen));
      offs.push_back(
          k.mul(k.add(k.mul(k.add(qoStart, j), k.idx(c.numQoHeads)), head),
                k.idx(d)));
    }
    qGroup = commitGroup(k, issueTileCopy(k, smem, k.idx(0), qLayout, qCopy, q,
                                          offs, valid, d / 8));
  }
  kvCopy = distributeTileCopy(k, kvTile, dp / 8, numThreads, tid);
  // Prologue: tiles 0 .. S-2 in flight, the page ids of tile S-1 looked up.
  for (int64_t s = 0; s + 1 < stages; ++s)
    issueKV(k.idx(s), k.idx(s), lookupPages(k.idx(s)));
  if (c.pos == PosEncoding::RopeLlama) {
    waitGroups(k, qGroup, stages - 1); // the Q group is the oldest
    gpu::BarrierOp::create(b, loc);
    ropeInPlace(k.idx(0), qLayout, qTile, [&](Value r) {
      return k.add(posBase, k.div(k.add(tileRow0, r), k.idx(c.groupSize)));
    });
  }

  MmaBuilder mma(k, c.qType, lane);
  SmallVector<Value> init;
  for (int64_t i = 0; i < mTiles * oTiles; ++i)
    init.push_back(mma.zeroAccumulator());
  for (int64_t i = 0; i < 2 * mTiles; ++i)
    init.push_back(k.negInf()); // running max (raw score units)
  for (int64_t i = 0; i < 2 * mTiles; ++i)
    init.push_back(k.f32(0.0)); // this thread's part of the row sums
  if (prefetchPages)
    llvm::append_range(init, lookupPages(k.idx(stages - 1)));
  int64_t nO = mTiles * oTiles, nM = 2 * mTiles;

  auto loop = scf::ForOp::create(
      b, loc, k.idx(0), numTiles, k.idx(1), init,
      [&](OpBuilder &lb, Location, Value i, ValueRange it) {
        OpBuilder::InsertionGuard lg(b);
        b.setInsertionPoint(lb.getInsertionBlock(), lb.getInsertionPoint());
        SmallVector<Value> acc(it.begin(), it.begin() + nO);
        SmallVector<Value> m(it.begin() + nO, it.begin() + nO + nM);
        SmallVector<Value> l(it.begin() + nO + nM, it.begin() + nO + 2 * nM);
        SmallVector<Value> pages(it.begin() + nO + 2 * nM, it.end());

        // Tile i has landed (at most S-2 younger groups pending) and every
        // warp is done with tile i-1, whose stage the next copy reuses.
        waitGroups(k, qGroup, stages - 2);
        gpu::BarrierOp::create(b, loc);
        Value next = k.add(i, k.idx(stages - 1));
        // Page ids are looked up a tile ahead (their loads overlap a tile of
        // compute) when registers allow: one m16 tile per warp.
        SmallVector<Value> nextPages;
        if (prefetchPages) {
          issueKV(next, k.rem(next, k.idx(stages)), pages);
          nextPages = lookupPages(k.add(i, k.idx(stages)));
        } else {
          issueKV(next, k.rem(next, k.idx(stages)), lookupPages(next));
        }

        Value stage = k.rem(i, k.idx(stages));
        Value tileStart = k.add(t0, k.mul(i, k.idx(kvTile)));
        if (c.pos == PosEncoding::RopeLlama) {
          ropeInPlace(kBase(stage), kvLayout, kvTile,
                      [&](Value r) { return k.add(tileStart, r); });
          gpu::BarrierOp::create(b, loc);
        }
        SmallVector<Value> s = scores(stage);
        // Options and masks; masks only where the tile needs them.
        SmallVector<Type> sTypes(s.size(), mma.accType());
        auto ifMask = scf::IfOp::create(b, loc, sTypes, needsMask(tileStart),
                                        /*withElse=*/true);
        {
          OpBuilder::InsertionGuard ig(b);
          b.setInsertionPointToStart(ifMask.thenBlock());
          scf::YieldOp::create(b, loc, transformScores(s, tileStart, true));
          b.setInsertionPointToStart(ifMask.elseBlock());
          scf::YieldOp::create(b, loc, transformScores(s, tileStart, false));
        }
        s.assign(ifMask.getResults().begin(), ifMask.getResults().end());

        // Online softmax in base 2 on the fragments.
        SmallVector<Value> p(s.size());
        SmallVector<Value> pA(s.size() / 2);
        SmallVector<RowPair> alphas;
        Value rescale;
        for (int64_t mt = 0; mt < mTiles; ++mt) {
          ArrayRef<Value> rowFrags =
              ArrayRef<Value>(s).slice(mt * sTiles, sTiles);
          RowPair tileMax = rowReduce(k, rowFrags, /*max=*/true);
          RowPair alpha, negMScaled;
          for (int64_t pair = 0; pair < 2; ++pair) {
            int64_t r = mt * 2 + pair;
            // The running max m moves only when the tile's max exceeds it by
            // more than kRescaleLog2 (exp2 units): exponents stay <= 2^8
            // (exact in f32, and in f16/bf16 P as precise as any value), and
            // O is rescaled on few tiles instead of on most. With m = -inf
            // any finite max moves it (+inf > threshold); -inf - -inf = NaN
            // compares false and keeps it.
            Value grow =
                k.fcmp(arith::CmpFPredicate::OGT,
                       k.fmul(k.fsub(tileMax[pair], m[r]), k.f32(expScale)),
                       k.f32(kRescaleLog2));
            Value mNew = k.select(grow, tileMax[pair], m[r]);
            // A row with no visible key yet keeps m = -inf; exponents then
            // use 0 so that no -inf - -inf appears.
            Value mUse = k.select(k.isNegInf(mNew), k.f32(0.0), mNew);
            Value mScaled = k.fmul(mUse, k.f32(expScale));
            alpha[pair] = k.ex2(k.fsub(k.fmul(m[r], k.f32(expScale)), mScaled));
            negMScaled[pair] = k.fsub(k.f32(0.0), mScaled);
            // O needs rescaling where m moved from a finite value (a row
            // whose m was -inf has O = 0; where m stays, alpha = 1 exactly).
            Value moved = andI(grow, k.cmp(arith::CmpIPredicate::eq,
                                           k.isNegInf(m[r]), i1(false)));
            m[r] = mNew;
            l[r] = k.fmul(l[r], alpha[pair]);
            rescale = rescale ? orI(rescale, moved) : moved;
          }
          for (int64_t n = 0; n < sTiles; ++n) {
            int64_t idx = mt * sTiles + n;
            p[idx] =
                mapAccumulator(k, s[idx], [&](Value x, int64_t pair, int64_t) {
                  return k.ex2(expScale == 1.0 ? k.fadd(x, negMScaled[pair])
                                               : k.fma(x, k.f32(expScale),
                                                       negMScaled[pair]));
                });
          }
          RowPair sum = rowReduceInThread(
              k, ArrayRef<Value>(p).slice(mt * sTiles, sTiles), false);
          for (int64_t pair = 0; pair < 2; ++pair)
            l[mt * 2 + pair] = k.fadd(l[mt * 2 + pair], sum[pair]);
          alphas.push_back(alpha);
          // P as A operands of P.V right away: half the registers of the
          // f32 values, which would otherwise live through the rescale.
          for (int64_t kk = 0; kk < sTiles / 2; ++kk)
            pA[kk * mTiles + mt] = mma.accumulatorsToA(
                p[mt * sTiles + 2 * kk], p[mt * sTiles + 2 * kk + 1]);
        }
        // Rescale O only when some row of the warp has a new maximum (after
        // the first tiles, most tiles leave every maximum where it was).
        {
          Value any = warpAny(k, rescale);
          SmallVector<Type> accTypes(acc.size(), mma.accType());
          auto ifScale = scf::IfOp::create(b, loc, accTypes, any,
                                           /*withElse=*/true);
          OpBuilder::InsertionGuard ig(b);
          b.setInsertionPointToStart(ifScale.thenBlock());
          SmallVector<Value> scaled;
          for (int64_t mt = 0; mt < mTiles; ++mt)
            for (int64_t n = 0; n < oTiles; ++n)
              scaled.push_back(scaleRows(k, acc[mt * oTiles + n], alphas[mt]));
          scf::YieldOp::create(b, loc, scaled);
          b.setInsertionPointToStart(ifScale.elseBlock());
          scf::YieldOp::create(b, loc, acc);
          acc.assign(ifScale.getResults().begin(), ifScale.getResults().end());
        }

        // O += P V.
        Value vb = vBase(stage);
        Value key0 = k.mul(warpKV, k.idx(kvPerWarp));
        for (int64_t kk = 0; kk < sTiles / 2; ++kk) {
          ArrayRef<Value> pa = ArrayRef<Value>(pA).slice(kk * mTiles, mTiles);
          for (int64_t np = 0; np < oTiles / 2; ++np) {
            auto [b0, b1] = mma.loadBFromKN(
                smem, vb, kvLayout, k.add(key0, k.idx(kk * 16)), np * 16);
            for (int64_t mt = 0; mt < mTiles; ++mt) {
              Value &o0 = acc[mt * oTiles + 2 * np];
              Value &o1 = acc[mt * oTiles + 2 * np + 1];
              o0 = mma.mma(pa[mt], b0, o0);
              o1 = mma.mma(pa[mt], b1, o1);
            }
          }
        }
        SmallVector<Value> yields(acc);
        llvm::append_range(yields, m);
        llvm::append_range(yields, l);
        llvm::append_range(yields, nextPages);
        scf::YieldOp::create(b, loc, yields);
      });
  // Drain the copies still in flight (zero-filled tiles past the end).
  waitGroups(k, qGroup, 0);
  SmallVector<Value> res(loop.getResults().begin(), loop.getResults().end());
  epilogue(ArrayRef<Value>(res).take_front(nO),
           ArrayRef<Value>(res).slice(nO, nM),
           ArrayRef<Value>(res).slice(nO + nM, nM));
}

void MmaAttentionGen::epilogue(ArrayRef<Value> oAcc, ArrayRef<Value> mIn,
                               ArrayRef<Value> lIn) {
  SmallVector<Value> acc(oAcc), m(mIn), l;
  for (Value x : lIn)
    l.push_back(quadAllReduce(k, x, /*max=*/false));
  Value quadLane = k.rem(lane, k.idx(4));
  Value isQuad0 = k.cmp(arith::CmpIPredicate::eq, quadLane, k.idx(0));
  auto f32 = b.getF32Type();

  // accumulate: the lanes of a row read its lse before lane 0 of the quad
  // overwrites it; the barrier below separates the two.
  SmallVector<Value> oldS;
  SmallVector<RowInfo> rows;
  for (int64_t r = 0; r < 2 * mTiles; ++r)
    rows.push_back(row(r));
  auto outRow = [&](int64_t r) {
    return k.add(k.mul(k.add(qoStart, rows[r].query), k.idx(c.numQoHeads)),
                 rows[r].head);
  };
  if (c.accumulate && !c.split)
    for (int64_t r = 0; r < 2 * mTiles; ++r) {
      // Clamp invalid rows to a real row of the request.
      Value clamped = k.select(rows[r].valid, outRow(r),
                               k.mul(qoStart, k.idx(c.numQoHeads)));
      Value s = k.loadScalar(lse, clamped);
      oldS.push_back(c.baseE ? k.fmul(s, k.f32(M_LOG2E)) : s);
    }

  // Warps along the KV tile hold partial states of the same rows: warp z
  // stages (m, l, unnormalised O) in shared memory, warp 0 merges them.
  Value outWarp = i1(true);
  if (warpsKV > 1) {
    int64_t rowsPerWarp = 16 * mTiles, stride = dp + 2;
    Value partial =
        dynamicSharedMemory(k, module, f32, 0, qTile * warpsKV * stride);
    auto slot = [&](Value z, int64_t r) {
      // Row of pair r of this thread in warp (warpQ, z)'s staging area.
      Value row = k.add(
          k.mul(k.add(k.mul(warpQ, k.idx(warpsKV)), z), k.idx(rowsPerWarp)),
          k.add(k.idx((r / 2) * 16 + (r % 2) * 8), k.div(lane, k.idx(4))));
      return k.mul(row, k.idx(stride));
    };
    gpu::BarrierOp::create(b, loc); // the K/V tiles are no longer read
    for (int64_t r = 0; r < 2 * mTiles; ++r) {
      Value base = slot(warpKV, r);
      auto ifq = scf::IfOp::create(b, loc, isQuad0, false);
      {
        OpBuilder::InsertionGuard g(b);
        b.setInsertionPointToStart(ifq.thenBlock());
        k.storeScalar(m[r], partial, k.add(base, k.idx(dp)));
        k.storeScalar(l[r], partial, k.add(base, k.idx(dp + 1)));
      }
      for (int64_t n = 0; n < oTiles; ++n)
        for (int64_t e = 0; e < 2; ++e)
          k.storeScalar(
              accumulatorElement(k, acc[(r / 2) * oTiles + n], r % 2, e),
              partial,
              k.add(base, k.add(k.mul(quadLane, k.idx(2)), k.idx(n * 8 + e))));
    }
    gpu::BarrierOp::create(b, loc);
    outWarp = k.cmp(arith::CmpIPredicate::eq, warpKV, k.idx(0));
    auto ifw = scf::IfOp::create(b, loc, outWarp, false);
    b.setInsertionPointToStart(ifw.thenBlock());
    for (int64_t r = 0; r < 2 * mTiles; ++r) {
      SmallVector<Value> mz, lz;
      Value mMax = k.negInf();
      for (int64_t z = 0; z < warpsKV; ++z) {
        Value base = slot(k.idx(z), r);
        mz.push_back(k.loadScalar(partial, k.add(base, k.idx(dp))));
        lz.push_back(k.loadScalar(partial, k.add(base, k.idx(dp + 1))));
        mMax = k.fmax(mMax, mz.back());
      }
      Value mUse = k.select(k.isNegInf(mMax), k.f32(0.0), mMax);
      SmallVector<Value> w;
      Value lSum = k.f32(0.0);
      for (int64_t z = 0; z < warpsKV; ++z) {
        w.push_back(k.ex2(k.fmul(k.fsub(mz[z], mUse), k.f32(expScale))));
        lSum = k.fma(lz[z], w[z], lSum);
      }
      m[r] = mMax;
      l[r] = lSum;
      for (int64_t n = 0; n < oTiles; ++n) {
        Value frag = acc[(r / 2) * oTiles + n];
        SmallVector<Value> els;
        for (int64_t pr = 0; pr < 2; ++pr)
          for (int64_t e = 0; e < 2; ++e) {
            if (pr != r % 2) {
              els.push_back(accumulatorElement(k, frag, pr, e));
              continue;
            }
            Value sum = k.f32(0.0);
            for (int64_t z = 0; z < warpsKV; ++z) {
              Value x = k.loadScalar(
                  partial,
                  k.add(slot(k.idx(z), r),
                        k.add(k.mul(quadLane, k.idx(2)), k.idx(n * 8 + e))));
              sum = k.fma(x, w[z], sum);
            }
            els.push_back(sum);
          }
        acc[(r / 2) * oTiles + n] = vector::FromElementsOp::create(
            b, loc, cast<VectorType>(frag.getType()), els);
      }
    }
  } else if (c.accumulate && !c.split) {
    gpu::BarrierOp::create(b, loc);
  }

  // Normalise and write.
  Value prowBase;
  Value nChunks;
  if (c.split) {
    prowBase = k.toIndex(k.loadScalar(oIndptr, req));
    if (!c.decode) {
      Value cs = k.toIndex(k.loadScalar(chunkSize, k.idx(0)));
      nChunks = k.maxS(k.div(k.add(kvLen, k.sub(cs, k.idx(1))), cs), k.idx(1));
    }
  }
  auto pairTy = VectorType::get({2}, f32);
  for (int64_t r = 0; r < 2 * mTiles; ++r) {
    int64_t mt = r / 2, pair = r % 2;
    Value empty = k.fcmp(arith::CmpFPredicate::OEQ, l[r], k.f32(0.0));
    Value inv = k.select(empty, k.f32(0.0), k.fdiv(k.f32(1.0), l[r]));
    Value mUse = k.select(k.isNegInf(m[r]), k.f32(0.0), m[r]);
    Value s2 = k.select(empty, k.negInf(),
                        k.fadd(k.fmul(mUse, k.f32(expScale)), k.lg2(l[r])));
    auto ifv = scf::IfOp::create(b, loc, rows[r].valid, false);
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPointToStart(ifv.thenBlock());
    Value outIdx, vDst = o, sDst = lse;
    if (c.split) {
      Value prow =
          c.decode
              ? k.add(prowBase, chunk)
              : k.add(prowBase, k.add(k.mul(rows[r].query, nChunks), chunk));
      outIdx = k.add(k.mul(prow, k.idx(c.numQoHeads)), rows[r].head);
      vDst = tmpV;
      sDst = tmpS;
    } else {
      outIdx = outRow(r);
    }
    Value sOut = s2;
    SmallVector<Value> vals;
    for (int64_t n = 0; n < d / 8; ++n) {
      Value frag = acc[mt * oTiles + n];
      Value v = vector::FromElementsOp::create(
          b, loc, pairTy,
          ValueRange{k.fmul(accumulatorElement(k, frag, pair, 0), inv),
                     k.fmul(accumulatorElement(k, frag, pair, 1), inv)});
      vals.push_back(v);
    }
    Value colBase = k.add(k.mul(outIdx, k.idx(d)), k.mul(quadLane, k.idx(2)));
    if (c.accumulate && !c.split) {
      Value merged;
      for (int64_t n = 0; n < d / 8; ++n) {
        Value off = k.add(colBase, k.idx(n * 8));
        Value old = vector::LoadOp::create(
            b, loc, VectorType::get({2}, c.qType), o, ValueRange{off});
        Value oldF = arith::ExtFOp::create(b, loc, pairTy, old);
        std::tie(vals[n], merged) = k.mergeStates(oldF, oldS[r], vals[n], s2);
      }
      sOut = merged ? merged : s2;
    }
    for (int64_t n = 0; n < d / 8; ++n) {
      Value off = k.add(colBase, k.idx(n * 8));
      Value v = vals[n];
      if (!c.split)
        v = arith::TruncFOp::create(b, loc, VectorType::get({2}, c.qType), v);
      vector::StoreOp::create(b, loc, v, vDst, ValueRange{off}, false,
                              llvm::Align(c.split ? 8 : 4));
    }
    if (!c.split && c.baseE)
      sOut = k.fmul(sOut, k.f32(M_LN2));
    auto ifq = scf::IfOp::create(b, loc, isQuad0, false);
    b.setInsertionPointToStart(ifq.thenBlock());
    k.storeScalar(sOut, sDst, outIdx);
  }
}

} // namespace

void cascade::buildMmaAttentionKernel(OpBuilder &b, gpu::GPUFuncOp fn,
                                      gpu::GPUModuleOp module,
                                      const AttentionSpec &spec) {
  MmaAttentionGen(b, fn, module, spec).build();
}
