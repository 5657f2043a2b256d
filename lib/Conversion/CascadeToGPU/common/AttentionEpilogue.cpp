//===- AttentionEpilogue.cpp - Where attention states go ------------------===//

#include "common/AttentionEpilogue.h"
#include "common/StateInputs.h"

#include <cmath>

using namespace mlir;
using namespace mlir::cascade;

Value mlir::cascade::lseToBase2(KernelBuilder &k, Value s, bool baseE) {
  return baseE ? k.fmul(s, k.f32(M_LOG2E)) : s;
}

Value mlir::cascade::lseFromBase2(KernelBuilder &k, Value s, bool baseE) {
  return baseE ? k.fmul(s, k.f32(M_LN2)) : s;
}

Value mlir::cascade::stateIndex(KernelBuilder &k, Value row, int64_t numHeads,
                                Value head) {
  return k.add(k.mul(row, k.idx(numHeads)), head);
}

Value mlir::cascade::partialRowBase(KernelBuilder &k, const AttentionArgs &args,
                                    Value req) {
  return k.toIndex(k.loadScalar(args.oIndptr, req));
}

//===----------------------------------------------------------------------===//
// rows
//===----------------------------------------------------------------------===//

/// Merges head g's bdz partial states (m, d, acc) through shared memory;
/// every thread gets the merged state.
static void mergeSlices(KernelBuilder &k, const RowsOutput &out, int64_t g,
                        Value isTx0, Value &m, Value &d, Value &acc) {
  OpBuilder &b = k.b;
  int64_t dim = out.spec.headDim;
  if (g > 0)
    gpu::BarrierOp::create(b, k.loc);
  k.store8(acc, out.redO, k.add(k.mul(out.tz, k.idx(dim)), out.laneOff));
  auto ifx = scf::IfOp::create(b, k.loc, isTx0, false);
  {
    OpBuilder::InsertionGuard gd(b);
    b.setInsertionPointToStart(ifx.thenBlock());
    k.storeScalar(m, out.redM, k.mul(out.tz, k.idx(2)));
    k.storeScalar(d, out.redM, k.add(k.mul(out.tz, k.idx(2)), k.idx(1)));
  }
  gpu::BarrierOp::create(b, k.loc);
  Value mm = k.negInf();
  SmallVector<Value> mz, dz;
  for (int64_t z = 0; z < out.bdz; ++z) {
    mz.push_back(k.loadScalar(out.redM, k.idx(2 * z)));
    dz.push_back(k.loadScalar(out.redM, k.idx(2 * z + 1)));
    mm = k.fmax(mm, mz.back());
  }
  Value dd = k.f32(0.0), aa = k.vsplat(0.0);
  for (int64_t z = 0; z < out.bdz; ++z) {
    Value wz =
        k.select(k.isNegInf(mz[z]), k.f32(0.0), k.ex2(k.fsub(mz[z], mm)));
    dd = k.fma(dz[z], wz, dd);
    Value oz = k.load8(out.redO, k.add(k.idx(z * dim), out.laneOff));
    aa = k.fma(oz, k.splat(wz), aa);
  }
  m = mm;
  d = dd;
  acc = aa;
}

void mlir::cascade::rowsEpilogue(KernelBuilder &k, const RowsOutput &out,
                                 ValueRange states) {
  OpBuilder &b = k.b;
  const AttentionSpec &c = out.spec;
  const AttentionArgs &a = out.args;
  Value prow;
  if (c.split)
    prow = k.add(partialRowBase(k, a, out.request), out.chunk);
  Value isZ0 = k.cmp(arith::CmpIPredicate::eq, out.tz, k.idx(0));
  Value isTx0 = k.cmp(arith::CmpIPredicate::eq, out.tx, k.idx(0));
  // accumulate: every lane of a head reads the state's lse before lane 0
  // overwrites it (a block barrier in between).
  SmallVector<Value> oldS;
  if (c.accumulate && !c.split) {
    for (int64_t g = 0; g < c.groupSize; ++g)
      oldS.push_back(lseToBase2(k, k.loadScalar(a.lse, out.qRows[g]), c.baseE));
    gpu::BarrierOp::create(b, k.loc);
  }
  for (int64_t g = 0; g < c.groupSize; ++g) {
    Value m = states[3 * g], d = states[3 * g + 1], acc = states[3 * g + 2];
    if (out.bdz > 1)
      mergeSlices(k, out, g, isTx0, m, d, acc);
    KernelBuilder::MergedState fin = k.finishRunningState({m, d, acc});
    Value outV = fin.v;
    Value outS2 = k.select(fin.empty, k.negInf(), fin.lse);
    if (!c.epilogueStateInputs().empty()) {
      Value head = k.add(k.mul(out.kvHead, k.idx(c.groupSize)), k.idx(g));
      Value scale;
      std::tie(scale, outS2) = applyStateInputs(k, c.epilogueStateInputs(),
                                                a.stateInputs, head, outS2);
      outV = k.fmul(outV, k.splat(scale));
    }
    auto ifz = scf::IfOp::create(b, k.loc, isZ0, false);
    OpBuilder::InsertionGuard gd(b);
    b.setInsertionPointToStart(ifz.thenBlock());
    Value outRow, vBase, vDst, sDst, outS;
    if (c.split) {
      Value qoHead = k.add(k.mul(out.kvHead, k.idx(c.groupSize)), k.idx(g));
      outRow = stateIndex(k, prow, c.numQoHeads, qoHead);
      vBase = k.mul(outRow, k.idx(c.headDim));
      vDst = a.tmpV;
      sDst = a.tmpS;
      outS = outS2;
    } else {
      outRow = out.qRows[g];
      vBase = out.oBases[g];
      vDst = a.o;
      sDst = a.lse;
      if (c.accumulate) {
        Value oldV = k.load8(a.o, k.add(vBase, out.laneOff));
        std::tie(outV, outS2) = k.mergeStates(oldV, oldS[g], outV, outS2);
      }
      outS = lseFromBase2(k, outS2, c.baseE);
    }
    k.store8(outV, vDst, k.add(vBase, out.laneOff));
    auto ifx = scf::IfOp::create(b, k.loc, isTx0, false);
    b.setInsertionPointToStart(ifx.thenBlock());
    k.storeScalar(outS, sDst, outRow);
  }
}

//===----------------------------------------------------------------------===//
// The tensor-core families (mma_sync, wgmma)
//===----------------------------------------------------------------------===//

/// Warps along the KV tile hold partial states of the same rows: warp z
/// stages (m, l, unnormalised O) in shared memory, warp 0 merges them.
/// Leaves the builder inside warp 0's branch.
static void mergeWarpStates(KernelBuilder &k, const MmaOutput &out,
                            MmaState &st, Value quadLane, Value isQuad0) {
  OpBuilder &b = k.b;
  const MmaTiles &t = out.tiles;
  const MmaThread &th = out.thread;
  int64_t rowsPerWarp = 16 * t.mTiles, stride = t.dp + 2, dp = t.dp;
  Value partial = dynamicSharedMemory(k, out.module, b.getF32Type(), 0,
                                      t.qTile * t.warpsKV * stride);
  auto slot = [&](Value z, int64_t r) {
    // Row of pair r of this thread in warp (warpQ, z)'s staging area.
    Value row = k.add(
        k.mul(k.add(k.mul(th.warpQ, k.idx(t.warpsKV)), z), k.idx(rowsPerWarp)),
        k.add(k.idx((r / 2) * 16 + (r % 2) * 8), k.div(th.lane, k.idx(4))));
    return k.mul(row, k.idx(stride));
  };
  gpu::BarrierOp::create(b, k.loc); // the K/V tiles are no longer read
  for (int64_t r = 0; r < 2 * t.mTiles; ++r) {
    Value base = slot(th.warpKV, r);
    auto ifq = scf::IfOp::create(b, k.loc, isQuad0, false);
    {
      OpBuilder::InsertionGuard g(b);
      b.setInsertionPointToStart(ifq.thenBlock());
      k.storeScalar(st.m[r], partial, k.add(base, k.idx(dp)));
      k.storeScalar(st.l[r], partial, k.add(base, k.idx(dp + 1)));
    }
    for (int64_t n = 0; n < t.oTiles; ++n)
      for (int64_t e = 0; e < 2; ++e)
        k.storeScalar(
            accumulatorElement(k, st.o[(r / 2) * t.oTiles + n], r % 2, e),
            partial,
            k.add(base, k.add(k.mul(quadLane, k.idx(2)), k.idx(n * 8 + e))));
  }
  gpu::BarrierOp::create(b, k.loc);
  Value outWarp = k.cmp(arith::CmpIPredicate::eq, th.warpKV, k.idx(0));
  auto ifw = scf::IfOp::create(b, k.loc, outWarp, false);
  b.setInsertionPointToStart(ifw.thenBlock());
  for (int64_t r = 0; r < 2 * t.mTiles; ++r) {
    SmallVector<Value> mz, lz;
    Value mMax = k.negInf();
    for (int64_t z = 0; z < t.warpsKV; ++z) {
      Value base = slot(k.idx(z), r);
      mz.push_back(k.loadScalar(partial, k.add(base, k.idx(dp))));
      lz.push_back(k.loadScalar(partial, k.add(base, k.idx(dp + 1))));
      mMax = k.fmax(mMax, mz.back());
    }
    Value mUse = k.select(k.isNegInf(mMax), k.f32(0.0), mMax);
    SmallVector<Value> w;
    Value lSum = k.f32(0.0);
    for (int64_t z = 0; z < t.warpsKV; ++z) {
      w.push_back(k.ex2(k.fmul(k.fsub(mz[z], mUse), out.expScale.get(k))));
      lSum = k.fma(lz[z], w[z], lSum);
    }
    st.m[r] = mMax;
    st.l[r] = lSum;
    for (int64_t n = 0; n < t.oTiles; ++n) {
      Value frag = st.o[(r / 2) * t.oTiles + n];
      SmallVector<Value> els;
      for (int64_t pr = 0; pr < 2; ++pr)
        for (int64_t e = 0; e < 2; ++e) {
          if (pr != r % 2) {
            els.push_back(accumulatorElement(k, frag, pr, e));
            continue;
          }
          Value sum = k.f32(0.0);
          for (int64_t z = 0; z < t.warpsKV; ++z) {
            Value x = k.loadScalar(
                partial,
                k.add(slot(k.idx(z), r),
                      k.add(k.mul(quadLane, k.idx(2)), k.idx(n * 8 + e))));
            sum = k.fma(x, w[z], sum);
          }
          els.push_back(sum);
        }
      st.o[(r / 2) * t.oTiles + n] = vector::FromElementsOp::create(
          b, k.loc, cast<VectorType>(frag.getType()), els);
    }
  }
}

/// Normalises row r (O / l, lse = m * scale + log2 l) and writes it.
static void writeMmaRow(KernelBuilder &k, const MmaOutput &out,
                        const MmaState &st, int64_t r, const PackedRow &row,
                        function_ref<Value()> outRow, Value oldS,
                        Value quadLane, Value isQuad0, Value prowBase,
                        Value nChunks) {
  OpBuilder &b = k.b;
  const AttentionSpec &c = out.spec;
  const AttentionArgs &a = out.args;
  int64_t mt = r / 2, pair = r % 2, d = c.headDimVo;
  Value empty = k.fcmp(arith::CmpFPredicate::OEQ, st.l[r], k.f32(0.0));
  Value inv = k.select(empty, k.f32(0.0), k.fdiv(k.f32(1.0), st.l[r]));
  Value mUse = k.select(k.isNegInf(st.m[r]), k.f32(0.0), st.m[r]);
  Value s2 =
      k.select(empty, k.negInf(),
               k.fadd(k.fmul(mUse, out.expScale.get(k)), k.lg2(st.l[r])));
  auto ifv = scf::IfOp::create(b, k.loc, row.valid, false);
  OpBuilder::InsertionGuard g(b);
  b.setInsertionPointToStart(ifv.thenBlock());
  if (!c.epilogueStateInputs().empty()) {
    Value scale;
    std::tie(scale, s2) = applyStateInputs(k, c.epilogueStateInputs(),
                                           a.stateInputs, row.head, s2);
    inv = k.fmul(inv, scale);
  }
  Value outIdx, vBase, vDst = a.o, sDst = a.lse;
  if (c.split) {
    Value prow =
        c.decode ? k.add(prowBase, out.chunk)
                 : k.add(prowBase, k.add(k.mul(row.query, nChunks), out.chunk));
    outIdx = stateIndex(k, prow, c.numQoHeads, row.head);
    vBase = k.mul(outIdx, k.idx(d));
    vDst = a.tmpV;
    sDst = a.tmpS;
  } else {
    outIdx = outRow();
    vBase = a.oOffset(k, k.add(out.qoStart, row.query), row.head);
  }
  Value sOut = s2;
  // The row's columns this lane holds, as runs of consecutive columns:
  // (n8 tile n, elements 0, 1) at 8 n + 2 c, or with permuted columns
  // (fp8DirectV) the 8 of tiles 4 q .. 4 q + 3 at 32 q + 8 c.
  const MmaTiles &t = out.tiles;
  int64_t runLen = t.fp8DirectV ? 8 : 2;
  auto runTy = VectorType::get({runLen}, b.getF32Type());
  SmallVector<Value> vals;
  SmallVector<int64_t> runCols;
  for (int64_t n0 = 0; n0 < d / 8; n0 += runLen / 2) {
    SmallVector<Value> els(runLen);
    for (int64_t n = n0; n < n0 + runLen / 2; ++n)
      for (int64_t e = 0; e < 2; ++e) {
        Value x = accumulatorElement(k, st.o[mt * t.oTiles + n], pair, e);
        els[t.permutedOColumnBase(n, e) - t.permutedOColumnBase(n0, 0)] =
            k.fmul(x, inv);
      }
    vals.push_back(vector::FromElementsOp::create(b, k.loc, runTy, els));
    runCols.push_back(t.permutedOColumnBase(n0, 0));
  }
  Value colBase = k.add(vBase, k.mul(quadLane, k.idx(t.oColumnsPerQuadLane())));
  if (c.accumulate && !c.split) {
    Value merged;
    for (size_t i = 0; i < vals.size(); ++i) {
      Value off = k.add(colBase, k.idx(runCols[i]));
      Value old = vector::LoadOp::create(
          b, k.loc, VectorType::get({runLen}, c.oType), a.o, ValueRange{off});
      Value oldF = arith::ExtFOp::create(b, k.loc, runTy, old);
      std::tie(vals[i], merged) = k.mergeStates(oldF, oldS, vals[i], s2);
    }
    sOut = merged ? merged : s2;
  }
  for (auto [v, col] : llvm::zip(vals, runCols)) {
    Value off = k.add(colBase, k.idx(col));
    Value w = v;
    if (!c.split)
      w = arith::TruncFOp::create(b, k.loc, VectorType::get({runLen}, c.oType),
                                  v);
    int64_t bytes = runLen * (c.split ? 4 : 2);
    vector::StoreOp::create(b, k.loc, w, vDst, ValueRange{off}, false,
                            llvm::Align(std::min<int64_t>(bytes, 16)));
  }
  if (!c.split)
    sOut = lseFromBase2(k, sOut, c.baseE);
  auto ifq = scf::IfOp::create(b, k.loc, isQuad0, false);
  b.setInsertionPointToStart(ifq.thenBlock());
  k.storeScalar(sOut, sDst, outIdx);
}

void mlir::cascade::mmaEpilogue(KernelBuilder &k, const MmaOutput &out,
                                MmaState st) {
  const AttentionSpec &c = out.spec;
  const AttentionArgs &a = out.args;
  const MmaTiles &t = out.tiles;
  for (Value &x : st.l)
    x = quadAllReduce(k, x, /*max=*/false);
  Value quadLane = k.rem(out.thread.lane, k.idx(4));
  Value isQuad0 = k.cmp(arith::CmpIPredicate::eq, quadLane, k.idx(0));

  // accumulate: the lanes of a row read its lse before lane 0 of the quad
  // overwrites it; the barrier below separates the two.
  SmallVector<Value> oldS;
  SmallVector<PackedRow> rows;
  for (int64_t r = 0; r < 2 * t.mTiles; ++r)
    rows.push_back(out.row(r));
  auto outRow = [&](int64_t r) {
    return stateIndex(k, k.add(out.qoStart, rows[r].query), c.numQoHeads,
                      rows[r].head);
  };
  if (c.accumulate && !c.split)
    for (int64_t r = 0; r < 2 * t.mTiles; ++r) {
      // Clamp invalid rows to a real row of the request.
      Value clamped = k.select(rows[r].valid, outRow(r),
                               k.mul(out.qoStart, k.idx(c.numQoHeads)));
      oldS.push_back(lseToBase2(k, k.loadScalar(a.lse, clamped), c.baseE));
    }

  if (t.warpsKV > 1)
    mergeWarpStates(k, out, st, quadLane, isQuad0);
  else if (c.accumulate && !c.split && out.barrier)
    out.barrier();
  else if (c.accumulate && !c.split)
    gpu::BarrierOp::create(k.b, k.loc);

  // Normalise and write.
  Value prowBase, nChunks;
  if (c.split) {
    prowBase = partialRowBase(k, a, out.request);
    if (!c.decode) {
      Value cs = k.toIndex(k.loadScalar(a.kvChunkSize, k.idx(0)));
      nChunks =
          k.maxS(k.div(k.add(out.kvLen, k.sub(cs, k.idx(1))), cs), k.idx(1));
    }
  }
  for (int64_t r = 0; r < 2 * t.mTiles; ++r)
    writeMmaRow(
        k, out, st, r, rows[r], [&] { return outRow(r); },
        oldS.empty() ? Value() : oldS[r], quadLane, isQuad0, prowBase, nChunks);
}
