//===- TensorCoreAttention.cpp - What both tensor-core generators share ---===//

#include "common/TensorCoreAttention.h"

#include "cascade/Conversion/GPUCodegen/Fp8Convert.h"

#include <limits>

using namespace mlir;
using namespace mlir::cascade;

void TensorCoreAttention::allocateTiles() {
  if (tiles.fp8Operands) {
    // fp8 tiles in 16-bit units, the same bytes as fp8, then V's staging.
    int64_t units = tiles.sharedElements();
    smem = dynamicSharedMemory(k, module, k.b.getF16Type(), 0, units);
    smem8 = dynamicSharedMemory(k, module, c.qType, 0, 2 * units);
    stagingV = dynamicSharedMemory(k, module, c.kvType, 2 * units,
                                   tiles.stages * tiles.kvTile * c.headDim);
    return;
  }
  smem = dynamicSharedMemory(k, module, c.qType, 0, tiles.sharedElements());
  if (isFp8KVType(c.kvType)) {
    int64_t ring = tiles.stages * tiles.kvTile * c.headDim;
    int64_t base = tiles.sharedElements() * 2; // after the 16-bit tiles
    stagingK = dynamicSharedMemory(k, module, c.kvType, base, ring);
    stagingV = dynamicSharedMemory(k, module, c.kvType, base + ring, ring);
  }
}

void TensorCoreAttention::findWorkItem() {
  Value w = k.blockId(gpu::Dimension::x);
  if (c.split) {
    Value active = planItemValid(k, args, w);
    item = planItem(k, args, w);
    item.active = active;
    if (!item.qoTile)
      item.qoTile = k.idx(0);
  } else if (c.decode) {
    item = decodeTile(k, w, c.decodeTilesPerRequest());
  } else {
    item = selfScheduledTile(k, args, w, c.groupSize, tiles.qTile, c.causal);
  }
  queries = queryRows(k, args, item.request, c.decode);
  // A tile past the request's packed rows has nothing to do.
  Value packed = k.mul(queries.len, k.idx(c.groupSize));
  item.active = arith::AndIOp::create(
      k.b, k.loc, item.active,
      k.cmp(arith::CmpIPredicate::ult, k.mul(item.qoTile, k.idx(tiles.qTile)),
            packed));
}

void TensorCoreAttention::findKeyRange() {
  kv = requestKv(k, args.kvIndptr, args.kvLastPageLen, item.request, c.pageSize,
                 c.split ? args.kvChunkSize : Value(), item.chunk);
  int64_t qTile = tiles.qTile;
  tileRow0 = k.mul(item.qoTile, k.idx(qTile));
  firstQuery = k.div(tileRow0, k.idx(c.groupSize));
  lastQuery =
      k.minU(k.sub(queries.len, k.idx(1)),
             k.div(k.add(tileRow0, k.idx(qTile - 1)), k.idx(c.groupSize)));
  // Query position of query j: kv_len - qo_len + j (may be negative).
  posBase = k.sub(kv.kvLen, queries.len);
  // Keys no row of the tile sees are never loaded.
  variant.clampKeyRange(
      k, kv.t0, kv.t1, [&] { return k.add(posBase, firstQuery); },
      [&] { return k.add(posBase, lastQuery); });
  numTiles = k.div(k.add(k.sub(kv.t1, kv.t0), k.idx(tiles.kvTile - 1)),
                   k.idx(tiles.kvTile));
  if (variant.customMask()) {
    maskBase =
        k.mul(k.toIndex(k.loadScalar(args.maskIndptr, item.request)), k.idx(8));
    maskLastBit =
        k.sub(k.add(maskBase, k.mul(queries.len, kv.kvLen)), k.idx(1));
  }
}

void TensorCoreAttention::copyQTile() {
  // Packed row r is query (tileRow0 + r) / G of head kv_head * G +
  // (tileRow0 + r) % G; rows past the request are zero-filled.
  int64_t d = c.headDim;
  // fp8 queries: 16 bytes a chunk (MmaTiles::fp8Operands).
  int64_t chunkElements = tiles.fp8Operands ? 16 : 8;
  TileCopyPlan qCopy = distributeTileCopy(
      k, tiles.qTile, tiles.dp / chunkElements, tiles.numThreads, th.tid);
  SmallVector<Value> offs, valid;
  for (Value r : qCopy.rows) {
    Value packed = k.add(tileRow0, r);
    Value j = k.div(packed, k.idx(c.groupSize));
    Value head = k.add(k.mul(th.kvHead, k.idx(c.groupSize)),
                       k.rem(packed, k.idx(c.groupSize)));
    valid.push_back(k.cmp(arith::CmpIPredicate::ult, j, queries.len));
    offs.push_back(args.qOffset(k, k.add(queries.start, j), head));
  }
  qGroup =
      commitGroup(k, issueTileCopy(k, tiles.fp8Operands ? smem8 : smem,
                                   k.idx(0), tiles.qLayout, qCopy, args.q, offs,
                                   valid, d / chunkElements, chunkElements));
}

PackedRow TensorCoreAttention::row(int64_t r) {
  Value packed = k.add(
      tileRow0, k.add(th.localRow(k, r / 2, r % 2), k.div(th.lane, k.idx(4))));
  PackedRow info;
  info.query = k.div(packed, k.idx(c.groupSize));
  info.head = k.add(k.mul(th.kvHead, k.idx(c.groupSize)),
                    k.rem(packed, k.idx(c.groupSize)));
  info.valid = k.cmp(arith::CmpIPredicate::ult, info.query, queries.len);
  info.pos = k.add(posBase, info.query);
  return info;
}

Value TensorCoreAttention::warpKey0(Value tileStart) {
  return k.add(tileStart, k.mul(th.warpKV, k.idx(tiles.kvPerWarp)));
}

Value TensorCoreAttention::laneQuad() {
  return k.mul(k.rem(th.lane, k.idx(4)), k.idx(2));
}

/// The variant on the raw scores (ScoreVariant::scale and logits); with
/// `masked`, keys past t1, after the causal diagonal or before the window
/// (or hidden by the custom mask's `keep` rows) become -inf.
SmallVector<Value> TensorCoreAttention::transformScores(ArrayRef<Value> s,
                                                        Value tileStart,
                                                        bool masked,
                                                        const MaskRows &keep) {
  SmallVector<Value> out;
  Value key0 = warpKey0(tileStart);
  Value quad = laneQuad();
  bool needRow = masked || variant.alibi();
  for (int64_t mt = 0; mt < tiles.mTiles; ++mt) {
    for (int64_t n = 0; n < tiles.sTiles; ++n) {
      Value colBase = k.add(key0, k.add(k.idx(n * 8), quad));
      out.push_back(mapAccumulator(
          k, s[mt * tiles.sTiles + n],
          [&](Value x, int64_t pair, int64_t half) {
            PackedRow ri = needRow ? row(mt * 2 + pair) : PackedRow();
            Value t;
            if (needRow)
              t = k.add(colBase, k.idx(half));
            x = variant.logits(
                k, variant.scale(k, x),
                [&] { return k.loadScalar(slopes, ri.head); },
                [&] { return k.toF32(k.sub(t, ri.pos)); });
            if (!masked)
              return x;
            Value hidden;
            if (!keep.empty())
              hidden = ScoreVariant::customMaskHidden(k, keep[mt * 2 + pair],
                                                      n * 8 + half);
            return variant.maskKey(k, x, t, ri.pos, kv.t1, hidden);
          }));
    }
  }
  return out;
}

/// Masks only on the tiles that need them. With a custom mask, a tile
/// whose keys the mask shows to every row of the warp (a request's history
/// under a tree of drafts, say) takes the unmasked path too: the warp
/// votes, so the branch stays uniform.
SmallVector<Value> TensorCoreAttention::transformScores(ArrayRef<Value> s,
                                                        Value tileStart,
                                                        ValueRange maskWords) {
  SmallVector<Type> sTypes(s.size(), s.front().getType());
  Value need = variant.tileNeedsMask(
      k, tileStart, tiles.kvTile, kv.t1,
      [&] { return k.add(k.sub(kv.kvLen, queries.len), firstQuery); },
      [&] { return k.add(k.sub(kv.kvLen, queries.len), lastQuery); });
  MaskRows maskRows;
  if (maskSide) {
    // The producer's verdict: every key of the tile shown to every row of
    // the warpgroup (keys from t1 on count as hidden).
    maskRows = maskRowsOf(tileStart, maskWords);
    Value whole = stagedVerdict(maskWords, 1);
    need = arith::OrIOp::create(
        k.b, k.loc, need,
        arith::XOrIOp::create(
            k.b, k.loc, whole,
            arith::ConstantIntOp::create(k.b, k.loc, k.b.getI1Type(), 1)));
  } else if (variant.customMask()) {
    // (A tile past t1 takes the masked path anyway: `need`.)
    SmallVector<uint32_t> used = customMaskUsedBits();
    Value shows;
    maskRows = maskRowsOf(tileStart, maskWords);
    for (const SmallVector<Value> &row : maskRows) {
      Value rowShows = ScoreVariant::customMaskShows(k, row, used);
      shows =
          shows ? arith::AndIOp::create(k.b, k.loc, shows, rowShows) : rowShows;
    }
    Value hides = arith::XOrIOp::create(
        k.b, k.loc, shows,
        arith::ConstantIntOp::create(k.b, k.loc, k.b.getI1Type(), 1));
    need = arith::OrIOp::create(k.b, k.loc, need, warpAny(k, hides));
  }
  auto ifMask = scf::IfOp::create(k.b, k.loc, sTypes, need,
                                  /*withElse=*/true);
  OpBuilder::InsertionGuard ig(k.b);
  k.b.setInsertionPointToStart(ifMask.thenBlock());
  MaskRows kept;
  if (variant.customMask())
    kept = maskSide ? maskRows : keptMaskRows(maskRows, tileStart);
  scf::YieldOp::create(k.b, k.loc, transformScores(s, tileStart, true, kept));
  k.b.setInsertionPointToStart(ifMask.elseBlock());
  scf::YieldOp::create(k.b, k.loc,
                       transformScores(s, tileStart, false, MaskRows()));
  return SmallVector<Value>(ifMask.getResults());
}

Value TensorCoreAttention::scaled(Value v, Value s) {
  if (auto vt = dyn_cast<VectorType>(v.getType()))
    s = vector::BroadcastOp::create(k.b, k.loc, vt, s);
  return k.fmul(v, s);
}

SmallVector<Value>
TensorCoreAttention::dequantizedScores(ArrayRef<Value> s, Value tileStart,
                                       ValueRange maskWords) {
  if (!args.kScale || kScaleFolds())
    return transformScores(s, tileStart, maskWords);
  // k_scale multiplies every logit (docs/semantics.md), before the soft cap
  // and ALiBi.
  SmallVector<Value> sk;
  for (Value x : s)
    sk.push_back(scaled(x, args.kScale));
  return transformScores(sk, tileStart, maskWords);
}

void TensorCoreAttention::foldKScale() {
  if (!kScaleFolds())
    return;
  // exp2(s * c * k - m * c * k) with m the running max of the raw scores s:
  // for k > 0 the max of s * k is m * k. Any other k_scale (zero, negative,
  // infinite or NaN; the runtime and the Python package refuse them before
  // a launch) gives NaN, so that every output of the block is NaN rather
  // than quietly wrong.
  Value ks = args.kScale;
  Value valid = arith::AndIOp::create(
      k.b, k.loc, k.fcmp(arith::CmpFPredicate::OGT, ks, k.f32(0.0)),
      k.fcmp(arith::CmpFPredicate::OLT, ks,
             k.f32(std::numeric_limits<double>::infinity())));
  expScale.folded = k.select(valid, k.fmul(ks, k.f32(expScale.constant)),
                             k.f32(std::numeric_limits<double>::quiet_NaN()));
}

void TensorCoreAttention::applyVScale(MmaState &state) {
  if (!args.vScale)
    return;
  for (Value &o : state.o)
    o = scaled(o, args.vScale);
}

void TensorCoreAttention::epilogue(MmaState state,
                                   function_ref<void()> barrier) {
  auto rowOf = [&](int64_t r) { return row(r); };
  MmaOutput out{c,          args,     tiles,         th,
                module,     expScale, queries.start, item.request,
                item.chunk, kv.kvLen, rowOf,         barrier};
  mmaEpilogue(k, out, std::move(state));
}
