//===- MergeKernels.cpp - The merge kernel family -------------------------===//
//
// merge_state, merge_state_in_place (optional strided mask), merge_states and
// merge_states_indptr (the partial states of a split-KV attention level,
// optionally merged into the state the outputs hold). One thread owns 8
// contiguous elements (16 bytes for f16/bf16) of one (row, head) state; a
// block of q_tile states takes q_tile * head_dim / 8 threads; the grid
// covers ceil(states / q_tile) blocks. Arithmetic is f32 with
// ex2.approx/lg2.approx; empty states (-inf) never produce NaN and merging
// an empty state returns the other one exactly.
//
//===----------------------------------------------------------------------===//

#include "KernelSpec.h"
#include "common/AttentionEpilogue.h"
#include "common/KernelArgs.h"
#include "common/StateInputs.h"
#include "merge/MergeFamily.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"

#include <cmath>

using namespace mlir;
using namespace mlir::cascade;

namespace {

/// Common prologue: computes (task, lane, inRange).
struct TaskIds {
  Value task, lane, inRange;
};
static TaskIds taskIds(KernelBuilder &k, const MergeSpec &g,
                       Value numTasksI64) {
  Value tid = k.threadId(gpu::Dimension::x);
  Value bid = k.blockId(gpu::Dimension::x);
  int64_t tpb = g.statesPerBlock(), tpt = g.threadsPerState();
  Value task = k.add(k.mul(bid, k.idx(tpb)), k.div(tid, k.idx(tpt)));
  Value lane = k.rem(tid, k.idx(tpt));
  Value inRange =
      k.cmp(arith::CmpIPredicate::ult, task, k.toIndex(numTasksI64));
  return {task, lane, inRange};
}

static void buildPairBody(OpBuilder &b, gpu::GPUFuncOp f,
                          const MergeSpec &geom) {
  bool baseE = geom.baseE;
  KernelBuilder k(b, f.getLoc());
  MergeArgs a = MergeArgs::bind(geom, f);
  TaskIds t = taskIds(k, geom, a.numTasks);
  auto ifOp = scf::IfOp::create(b, k.loc, t.inRange, false);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(ifOp.thenBlock());
  Value off =
      k.add(k.mul(t.task, k.idx(geom.headDim)), k.mul(t.lane, k.idx(8)));
  Value sa = lseToBase2(k, k.loadScalar(a.sA, t.task), baseE);
  Value sb = lseToBase2(k, k.loadScalar(a.sB, t.task), baseE);
  Value va = k.load8(a.vA, off), vb = k.load8(a.vB, off);
  auto [v, s] = k.mergeStates(va, sa, vb, sb);
  k.store8(v, a.v, off);
  Value isLane0 = k.cmp(arith::CmpIPredicate::eq, t.lane, k.idx(0));
  auto if0 = scf::IfOp::create(b, k.loc, isLane0, false);
  b.setInsertionPointToStart(if0.thenBlock());
  // Exactness: an empty input returns the other s unconverted.
  Value sOut = lseFromBase2(k, s, baseE);
  if (baseE) {
    Value sar = k.loadScalar(a.sA, t.task), sbr = k.loadScalar(a.sB, t.task);
    sOut = k.select(k.isNegInf(sb), sar, sOut);
    sOut = k.select(k.isNegInf(sa), sbr, sOut);
  }
  k.storeScalar(sOut, a.s, t.task);
}

static void buildInPlaceBody(OpBuilder &b, gpu::GPUFuncOp f,
                             const MergeSpec &geom) {
  bool baseE = geom.baseE;
  KernelBuilder k(b, f.getLoc());
  MergeArgs a = MergeArgs::bind(geom, f);
  Value vO = a.vOther, sO = a.sOther, mask = a.mask, maskStride = a.maskStride;
  Value v = a.v, s = a.s, numTasks = a.numTasks, numHeads = a.numHeads;
  TaskIds t = taskIds(k, geom, numTasks);
  // Every thread of a task reads the old s before lane 0 of the task
  // overwrites it: read (clamped) before a block barrier.
  Value last = k.sub(k.toIndex(numTasks), k.idx(1));
  Value taskC = k.minU(t.task, last);
  Value sar = k.loadScalar(s, taskC), sbr = k.loadScalar(sO, taskC);
  gpu::BarrierOp::create(b, k.loc);
  Value cond = t.inRange;
  auto ifOp = scf::IfOp::create(b, k.loc, cond, false);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(ifOp.thenBlock());
  if (geom.maskType) {
    Value row = k.div(t.task, k.toIndex(numHeads));
    Value mv = k.loadScalar(mask, k.mul(row, k.toIndex(maskStride)));
    Value zero = arith::ConstantIntOp::create(b, k.loc, mv.getType(), 0);
    Value on = k.cmp(arith::CmpIPredicate::ne, mv, zero);
    auto ifM = scf::IfOp::create(b, k.loc, on, false);
    b.setInsertionPointToStart(ifM.thenBlock());
  }
  Value off =
      k.add(k.mul(t.task, k.idx(geom.headDim)), k.mul(t.lane, k.idx(8)));
  Value sa = lseToBase2(k, sar, baseE), sb = lseToBase2(k, sbr, baseE);
  Value va = k.load8(v, off), vb = k.load8(vO, off);
  auto [vm, sm] = k.mergeStates(va, sa, vb, sb);
  k.store8(vm, v, off);
  // All lanes of the task must read s before lane 0 overwrites it:
  // they do (loads above precede the store in every thread of the
  // task, but threads of a task are different threads). Write s only
  // after the v store, from lane 0, and use the value read by lane 0.
  Value isLane0 = k.cmp(arith::CmpIPredicate::eq, t.lane, k.idx(0));
  auto if0 = scf::IfOp::create(b, k.loc, isLane0, false);
  b.setInsertionPointToStart(if0.thenBlock());
  Value sOut = lseFromBase2(k, sm, baseE);
  if (baseE) {
    sOut = k.select(k.isNegInf(sb), sar, sOut);
    sOut = k.select(k.isNegInf(sa), sbr, sOut);
  }
  k.storeScalar(sOut, s, t.task);
}

static void buildStatesBody(OpBuilder &b, gpu::GPUFuncOp f,
                            const MergeSpec &geom) {
  bool baseE = geom.baseE;
  KernelBuilder k(b, f.getLoc());
  MergeArgs a = MergeArgs::bind(geom, f);
  TaskIds t = taskIds(k, geom, a.numTasks);
  auto ifOp = scf::IfOp::create(b, k.loc, t.inRange, false);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(ifOp.thenBlock());
  Value nStates = k.toIndex(a.numStates), nHeads = k.toIndex(a.numHeads);
  Value row = k.div(t.task, nHeads), head = k.rem(t.task, nHeads);
  Value laneOff = k.mul(t.lane, k.idx(8));
  Value rowBase = k.mul(row, nStates);
  auto loop = scf::ForOp::create(
      b, k.loc, k.idx(0), nStates, k.idx(1), k.emptyRunningState(),
      [&](OpBuilder &lb, Location l, Value i, ValueRange it) {
        KernelBuilder kk(lb, l);
        Value sidx = kk.add(kk.mul(kk.add(rowBase, i), nHeads), head);
        Value si = lseToBase2(kk, kk.loadScalar(a.sIn, sidx), baseE);
        Value vi = kk.load8(
            a.vIn, kk.add(kk.mul(sidx, kk.idx(geom.headDim)), laneOff));
        scf::YieldOp::create(lb, l, kk.absorbState(it, vi, si));
      });
  KernelBuilder::MergedState merged = k.finishRunningState(loop.getResults());
  Value v = merged.v;
  Value s =
      k.select(merged.empty, k.negInf(), lseFromBase2(k, merged.lse, baseE));
  k.store8(v, a.v, k.add(k.mul(t.task, k.idx(geom.headDim)), laneOff));
  Value isLane0 = k.cmp(arith::CmpIPredicate::eq, t.lane, k.idx(0));
  auto if0 = scf::IfOp::create(b, k.loc, isLane0, false);
  b.setInsertionPointToStart(if0.thenBlock());
  k.storeScalar(s, a.s, t.task);
}

/// Partial states the split-KV merge loads together (buildIndptrBody).
constexpr int64_t kIndptrMergeUnroll = 4;

/// log2 of the chunk groups a state of the split-KV merge is spread over:
/// the largest power of two G <= statesPerBlock (and dividing it) with
/// numTasks * G <= gridDim.x * statesPerBlock (every state is served) and
/// G * kIndptrMergeUnroll <= the grid's spare blocks / rows. A decode's
/// grid holds a block per statesPerBlock states plus one per partial row
/// (MergeSpec::gridAdd), so the spare blocks per row are its chunks: a
/// small batch split into many chunks spreads each state's chunks over up
/// to statesPerBlock groups of threads instead of walking them one after
/// another, while a group still gets a full unrolled iteration of chunks
/// (with fewer, the groups' merge in shared memory would cost more than it
/// saves).
static Value chunkGroupsLog2(KernelBuilder &k, int64_t statesPerBlock,
                             Value numTasks, Value rows) {
  Value grid = gpu::GridDimOp::create(k.b, k.loc, gpu::Dimension::x);
  Value spb = k.idx(statesPerBlock);
  Value ratio = k.div(k.mul(grid, spb), k.maxS(numTasks, k.idx(1)));
  Value stateBlocks = k.div(k.add(numTasks, k.idx(statesPerBlock - 1)), spb);
  Value spare = k.sub(grid, k.minU(grid, stateBlocks));
  Value perRow =
      k.div(spare, k.mul(k.maxS(rows, k.idx(1)), k.idx(kIndptrMergeUnroll)));
  ratio = k.minU(ratio, perRow);
  Value lg = k.idx(0);
  for (int64_t g = 2, l = 1; g <= statesPerBlock && statesPerBlock % g == 0;
       g *= 2, ++l)
    lg = k.select(k.cmp(arith::CmpIPredicate::uge, ratio, k.idx(g)), k.idx(l),
                  lg);
  return lg;
}

/// The partial states of a split-KV level: state (row, head) merges rows
/// indptr[row] .. indptr[row + 1] of tmp_v/tmp_s (f32, base 2), where row is
/// a request (decode, o_indptr) or a query row (prefill, merge_indptr).
/// With `accumulate`, the result is merged into the state (o, lse) holds.
///
/// A block holds statesPerBlock slots of threadsPerState threads. G = 2^lg
/// consecutive slots serve one state (chunkGroupsLog2): slot group j takes
/// the state's rows r0 + j, r0 + j + G, ..., and with G > 1 the groups'
/// states meet in shared memory, where group 0 merges them and writes.
static void buildIndptrBody(OpBuilder &b, gpu::GPUFuncOp f,
                            const MergeSpec &c) {
  KernelBuilder k(b, f.getLoc());
  Location loc = f.getLoc();
  MergeArgs a = MergeArgs::bind(c, f);
  Value indptr = a.indptr, tmpV = a.tmpV, tmpS = a.tmpS, o = a.o, lse = a.lse;
  Value rows = k.toIndex(c.byRow() ? a.rowCapacity : a.numRows);
  if (c.byRow())
    rows = k.minU(rows,
                  k.toIndex(k.loadScalar(a.qoIndptr, k.toIndex(a.batchSize))));
  Value numTasks = k.mul(rows, k.idx(c.numHeads));
  int64_t spb = c.statesPerBlock(), tpt = c.threadsPerState();
  auto wg =
      gpu::AddressSpaceAttr::get(b.getContext(), gpu::AddressSpace::Workgroup);
  Value vSm = f.addWorkgroupAttribution(
      MemRefType::get({spb * tpt * 8}, b.getF32Type(),
                      MemRefLayoutAttrInterface(), wg),
      loc);
  Value sSm = f.addWorkgroupAttribution(
      MemRefType::get({spb}, b.getF32Type(), MemRefLayoutAttrInterface(), wg),
      loc);
  f.setWorkgroupAttributionAttr(0, LLVM::LLVMDialect::getAlignAttrName(),
                                b.getI64IntegerAttr(16));

  Value lg = chunkGroupsLog2(k, spb, numTasks, rows);
  Value groups = arith::ShLIOp::create(b, loc, k.idx(1), lg);
  Value tid = k.threadId(gpu::Dimension::x), bid = k.blockId(gpu::Dimension::x);
  Value slot = k.div(tid, k.idx(tpt)), lane = k.rem(tid, k.idx(tpt));
  Value group = arith::AndIOp::create(b, loc, slot, k.sub(groups, k.idx(1)));
  // The block's state that this slot serves, and its first slot.
  Value state = arith::ShRUIOp::create(b, loc, slot, lg);
  Value firstSlot = arith::ShLIOp::create(b, loc, state, lg);
  Value task =
      k.add(k.mul(bid, arith::ShRUIOp::create(b, loc, k.idx(spb), lg)), state);
  Value inRange = k.cmp(arith::CmpIPredicate::ult, task, numTasks);
  Value oldS;
  if (c.accumulate) {
    // Every thread of a state reads its lse before lane 0 overwrites it:
    // read (clamped to a real state) before a block barrier.
    Value last = k.sub(numTasks, k.idx(1));
    oldS = lseToBase2(k, k.loadScalar(lse, k.minU(task, last)), c.baseE);
    gpu::BarrierOp::create(b, loc);
  }
  Value req = k.div(task, k.idx(c.numHeads)),
        head = k.rem(task, k.idx(c.numHeads));
  // Threads past the last state run no chunk, but reach the barriers.
  Type idxTy = b.getIndexType();
  auto bounds =
      scf::IfOp::create(b, loc, TypeRange{idxTy, idxTy}, inRange, true);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(bounds.thenBlock());
    Value r0 = k.toIndex(k.loadScalar(indptr, req));
    Value r1 = k.toIndex(k.loadScalar(indptr, k.add(req, k.idx(1))));
    scf::YieldOp::create(b, loc, ValueRange{r0, r1});
    b.setInsertionPointToStart(bounds.elseBlock());
    scf::YieldOp::create(b, loc, ValueRange{k.idx(0), k.idx(0)});
  }
  Value r0 = bounds.getResult(0), r1 = bounds.getResult(1);
  Value laneOff = k.mul(lane, k.idx(8));
  // kIndptrMergeUnroll partial states an iteration, their loads issued
  // before any is absorbed: with few states to merge the loop is bound by
  // load latency, not bandwidth. Rows past r1 read row r1 - 1 and are
  // absorbed as (v, -inf), which leaves the running state exactly as it is
  // (absorbState's weight 0 and scale 1).
  auto loop = scf::ForOp::create(
      b, loc, k.add(r0, group), r1, k.mul(groups, k.idx(kIndptrMergeUnroll)),
      k.emptyRunningState(),
      [&](OpBuilder &lb, Location l, Value r, ValueRange it) {
        KernelBuilder kk(lb, l);
        Value lastRow = kk.sub(r1, kk.idx(1));
        SmallVector<Value, kIndptrMergeUnroll> ss, vs;
        for (int64_t j = 0; j < kIndptrMergeUnroll; ++j) {
          Value rj = kk.add(r, kk.mul(groups, kk.idx(j)));
          Value sidx =
              kk.add(kk.mul(kk.minU(rj, lastRow), kk.idx(c.numHeads)), head);
          Value si = kk.loadScalar(tmpS, sidx);
          ss.push_back(
              j == 0 ? si
                     : kk.select(kk.cmp(arith::CmpIPredicate::ult, rj, r1), si,
                                 kk.negInf()));
          vs.push_back(
              kk.load8(tmpV, kk.add(kk.mul(sidx, kk.idx(c.headDim)), laneOff)));
        }
        SmallVector<Value> state(it.begin(), it.end());
        for (int64_t j = 0; j < kIndptrMergeUnroll; ++j)
          state = kk.absorbState(state, vs[j], ss[j]);
        scf::YieldOp::create(lb, l, state);
      });
  KernelBuilder::MergedState merged = k.finishRunningState(loop.getResults());
  Value v = merged.v;
  Value s2 = k.select(merged.empty, k.negInf(), merged.lse);

  // G > 1 (uniform in the block): the groups' states meet in shared memory.
  Value isLane0 = k.cmp(arith::CmpIPredicate::eq, lane, k.idx(0));
  auto combine =
      scf::IfOp::create(b, loc, TypeRange{v.getType(), s2.getType()},
                        k.cmp(arith::CmpIPredicate::ne, lg, k.idx(0)), true);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(combine.thenBlock());
    k.store8(v, vSm, k.mul(tid, k.idx(8)));
    auto ifLane0 = scf::IfOp::create(b, loc, isLane0, false);
    b.setInsertionPointToStart(ifLane0.thenBlock());
    k.storeScalar(s2, sSm, slot);
    b.setInsertionPointAfter(ifLane0);
    gpu::BarrierOp::create(b, loc);
    auto all = scf::ForOp::create(
        b, loc, firstSlot, k.add(firstSlot, groups), k.idx(1),
        k.emptyRunningState(),
        [&](OpBuilder &lb, Location l, Value s, ValueRange it) {
          KernelBuilder kk(lb, l);
          Value vi = kk.load8(
              vSm, kk.add(kk.mul(kk.mul(s, kk.idx(tpt)), kk.idx(8)), laneOff));
          scf::YieldOp::create(lb, l,
                               kk.absorbState(it, vi, kk.loadScalar(sSm, s)));
        });
    KernelBuilder::MergedState m = k.finishRunningState(all.getResults());
    scf::YieldOp::create(b, loc,
                         ValueRange{m.v, k.select(m.empty, k.negInf(), m.lse)});
    b.setInsertionPointToStart(combine.elseBlock());
    scf::YieldOp::create(b, loc, ValueRange{v, s2});
  }
  v = combine.getResult(0);
  s2 = combine.getResult(1);

  Value writes = arith::AndIOp::create(
      b, loc, inRange, k.cmp(arith::CmpIPredicate::eq, group, k.idx(0)));
  auto ifOp = scf::IfOp::create(b, loc, writes, false);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(ifOp.thenBlock());
  if (!c.stateInputs.empty()) {
    // The level's state inputs fold in once, after its chunks.
    Value scale;
    std::tie(scale, s2) =
        applyStateInputs(k, c.stateInputs, a.stateInputs, head, s2);
    v = k.fmul(v, k.splat(scale));
  }
  // o may be a strided view: row `req` (a request of a decode, a query
  // row of a prefill) and head at the bound strides.
  Value vOff = k.add(k.add(k.mul(req, k.toIndex(a.oStrideN)),
                           k.mul(head, k.toIndex(a.oStrideH))),
                     laneOff);
  if (c.accumulate)
    std::tie(v, s2) = k.mergeStates(k.load8(o, vOff), oldS, v, s2);
  Value s = lseFromBase2(k, s2, c.baseE);
  k.store8(v, o, vOff);
  auto if0 = scf::IfOp::create(b, loc, isLane0, false);
  b.setInsertionPointToStart(if0.thenBlock());
  k.storeScalar(s, lse, task);
}

} // namespace

void mlir::cascade::buildMergeKernel(OpBuilder &b, gpu::GPUFuncOp fn,
                                     gpu::GPUModuleOp, const MergeSpec &spec) {
  switch (spec.kind) {
  case MergeKind::Pair:
    return buildPairBody(b, fn, spec);
  case MergeKind::InPlace:
    return buildInPlaceBody(b, fn, spec);
  case MergeKind::States:
    return buildStatesBody(b, fn, spec);
  case MergeKind::Indptr:
    return buildIndptrBody(b, fn, spec);
  }
}
