//===- RowsAttentionKernel.cpp - Attention on CUDA cores, one row a block -===//
//
// The rows kernel family: decode (one query per request) and row-wise
// prefill over a paged KV cache, FlashInfer's BatchDecodeWithPagedKVCache
// kernel shape: one block per (work item, KV head), threads (D/8, 1, bdz): tx
// owns 8 elements (16 bytes) of head_dim for every query head of the GQA
// group (all G heads share each K/V tile), tz a slice of the tokens of a
// tile. K/V tiles of T tokens are copied with 16-byte cp.async
// (nvgpu.device_async_copy, zero-fill past the end) into shared memory
// through an S-stage pipeline. Scores are reduced with gpu.shuffle xor over
// the D/8 lanes; the online softmax is base 2 (ex2.approx); the bdz partial
// states are merged through shared memory.
//
// Split-KV (plan operands): work item w handles request request_indices[w],
// chunk kv_tile_indices[w] (tokens [k*C, (k+1)*C)), and writes its partial
// state to tmp_v/tmp_s row o_indptr[req] + chunk (f32, base 2); the
// merge_states_indptr kernel merges them. With `accumulate` (unsplit), the
// epilogue merges the block's state into the (o, lse) the outputs hold.
//
// Used for decode with small GQA groups (bandwidth-bound: every K/V byte is
// read once per KV head and feeds all G query heads) and for q/KV of
// different dtypes; everything else runs on the mma_sync family.
//
//===----------------------------------------------------------------------===//

#include "KernelSpec.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"

#include <cmath>

using namespace mlir;
using namespace mlir::cascade;

namespace {

struct DecodeConfig {
  int64_t d = 0, hqo = 0, hkv = 0, g = 0, ps = 0;
  bool hnd = false, pool = true, split = false, prefill = false, causal = false,
       accumulate = false;
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

/// The rows kernel's geometry and the options it is specialised on.
static DecodeConfig geometry(const AttentionSpec &spec) {
  DecodeConfig c;
  c.d = spec.headDim;
  c.hqo = spec.numQoHeads;
  c.hkv = spec.numKvHeads;
  c.g = spec.groupSize;
  c.ps = spec.pageSize;
  c.hnd = spec.hnd;
  c.pool = spec.pool;
  c.split = spec.split;
  c.prefill = !spec.decode;
  c.causal = spec.causal;
  c.accumulate = spec.accumulate;
  c.qT = spec.qType;
  c.kvT = spec.kvType;
  c.smScale = spec.smScale;
  c.softCap = spec.softCap;
  c.ropeScale = spec.ropeScale;
  c.ropeTheta = spec.ropeTheta;
  c.windowLeft = spec.windowLeft;
  c.pos = spec.pos;
  c.baseE = spec.baseE;
  ArrayRef<int64_t> t = spec.config.getThreads();
  c.bdx = t[0];
  c.bdy = 1;
  c.bdz = t[2];
  c.nthreads = c.bdx * c.bdy * c.bdz;
  c.tile = spec.config.getKvTile();
  c.stages = spec.config.getStages();
  c.tpz = c.tile / c.bdz;
  c.chunksPerThread = c.tile * c.bdx / c.nthreads;
  int64_t page = c.ps * c.hkv * c.d;
  c.pageStride = c.pool ? 2 * page : page;
  c.vSel = c.pool ? page : 0;
  c.tokStride = c.hnd ? c.d : c.hkv * c.d;
  c.headStride = c.hnd ? c.ps * c.d : c.d;
  return c;
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
  ai++; // batch_size / padded_batch_size / row_capacity (grid size)
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
    ropeTab = constantTable(b, loc, gm, (name + "_rope").str(), inv);
  }
  if (c.pos == PosEncoding::ALiBi) {
    SmallVector<float> sl;
    for (int64_t h = 0; h < c.hqo; ++h)
      sl.push_back(float(alibiSlope(h, c.hqo)));
    alibiTab = constantTable(b, loc, gm, (name + "_alibi").str(), sl);
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
      req = k.lastIndexWithKeyAtMost(
          k.toIndex(batchSize), w, arith::CmpIPredicate::sle,
          [&](KernelBuilder &kk, Value i) {
            return kk.toIndex(kk.loadScalar(qoIndptr, i));
          });
    } else {
      req = w;
    }
    RequestKv kv = requestKv(k, kvIndptr, lastLen, req, c.ps,
                             c.split ? chunkSize : Value(), chunk);
    Value pstart = kv.pageStart, kvLen = kv.kvLen;
    t0 = kv.t0;
    t1 = kv.t1;
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
    // accumulate: every lane of a head reads the state's lse before lane 0
    // overwrites it (a block barrier in between).
    SmallVector<Value> oldS;
    if (c.accumulate && !c.split) {
      for (int64_t g = 0; g < c.g; ++g) {
        Value s = k.loadScalar(lse, qRows[g]);
        oldS.push_back(c.baseE ? k.fmul(s, k.f32(M_LOG2E)) : s);
      }
      gpu::BarrierOp::create(bb, loc);
    }
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
      KernelBuilder::MergedState fin = k.finishRunningState({m, d, acc});
      Value outV = fin.v;
      Value outS2 = k.select(fin.empty, k.negInf(), fin.lse);
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
        if (c.accumulate) {
          Value oldV = k.load8(o, k.add(k.mul(outRow, k.idx(c.d)), laneOff));
          std::tie(outV, outS2) = k.mergeStates(oldV, oldS[g], outV, outS2);
        }
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
  } else if (c.prefill) {
    // The grid covers row_capacity rows; qo_indptr[batch_size] are real.
    Value rows = k.toIndex(k.loadScalar(qoIndptr, k.toIndex(batchSize)));
    auto ifr = scf::IfOp::create(
        b, loc, k.cmp(arith::CmpIPredicate::ult, w, rows), false);
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPointToStart(ifr.thenBlock());
    body(b);
  } else {
    body(b);
  }
}

} // namespace

void cascade::buildRowsAttentionKernel(OpBuilder &b, gpu::GPUFuncOp fn,
                                       gpu::GPUModuleOp module,
                                       const AttentionSpec &spec) {
  buildDecodeBody(b, fn, geometry(spec), module, fn.getName());
}
