//===- MergeToGPU.cpp - Lower cascade merge ops to GPU kernels
//-------------===//
//
// merge_state, merge_state_in_place (optional strided mask) and merge_states.
// One thread owns 8 contiguous elements (16 bytes for f16/bf16) of one
// (row, head) task; a block of ~128 threads covers 128/(D/8) tasks; the grid
// covers ceil(rows*heads / tasks_per_block) blocks. Arithmetic is f32 with
// ex2.approx/lg2.approx; empty states (-inf) never produce NaN and merging an
// empty state returns the other one exactly.
//
//===----------------------------------------------------------------------===//

#include "KernelBuilder.h"
#include "cascade/Conversion/Passes.h"
#include "cascade/Dialect/Cascade/IR/CascadeOps.h"

#include "mlir/IR/PatternMatch.h"

#include <cmath>

using namespace mlir;
using namespace mlir::cascade;

namespace {

constexpr int64_t kTargetThreads = 128;

struct MergeGeom {
  int64_t d, tpt, tpb, block;
  Type vt;    // element type of every v operand
  bool baseE; // lse_base = base_e
};

static FailureOr<MergeGeom> mergeGeom(Operation *op, Type vTy) {
  auto mt = dyn_cast<MemRefType>(vTy);
  if (!mt)
    return failure();
  int64_t d = mt.getShape().back();
  if (ShapedType::isDynamic(d) || d % 8 != 0 || d / 8 > kTargetThreads) {
    op->emitError(
        "merge lowering needs a static head_dim multiple of 8 and <= 1024");
    return failure();
  }
  Type et = mt.getElementType();
  if (!et.isF16() && !et.isBF16() && !et.isF32()) {
    op->emitError("merge lowering supports f16, bf16 and f32 states");
    return failure();
  }
  MergeGeom g;
  g.d = d;
  g.tpt = d / 8;
  g.tpb = std::max<int64_t>(1, kTargetThreads / g.tpt);
  g.block = g.tpb * g.tpt;
  return g;
}

static bool allMemRefs(Operation *op) {
  for (Value v : op->getOperands())
    if (!isa<MemRefType>(v.getType()))
      return false;
  return true;
}

/// The preconditions shared by the merge patterns: buffer form, a supported
/// v type and head_dim, and one element type for `v` and every `others`.
template <typename OpTy>
static FailureOr<MergeGeom> matchMerge(OpTy op, ValueRange others) {
  if (!allMemRefs(op))
    return failure();
  auto g = mergeGeom(op, op.getV().getType());
  if (failed(g))
    return failure();
  g->vt = cast<MemRefType>(op.getV().getType()).getElementType();
  for (Value v : others)
    if (cast<MemRefType>(v.getType()).getElementType() != g->vt)
      return op.emitError("merge lowering needs one v dtype"), failure();
  g->baseE = op.getLseBase() == LSEBase::BaseE;
  return g;
}

static MemRefType flatTy(Value m) {
  return flatMemRefType(cast<MemRefType>(m.getType()).getElementType());
}

/// Converts an s value to base 2 (in) or from base 2 (out).
static Value toBase2(KernelBuilder &k, Value s, bool baseE) {
  return baseE ? k.fmul(s, k.f32(M_LOG2E)) : s;
}
static Value fromBase2(KernelBuilder &k, Value s, bool baseE) {
  return baseE ? k.fmul(s, k.f32(M_LN2)) : s;
}

/// Common prologue: computes (task, lane, inRange).
struct TaskIds {
  Value task, lane, inRange;
};
static TaskIds taskIds(KernelBuilder &k, const MergeGeom &g,
                       Value numTasksI64) {
  Value tid = k.threadId(gpu::Dimension::x);
  Value bid = k.blockId(gpu::Dimension::x);
  Value task = k.add(k.mul(bid, k.idx(g.tpb)), k.div(tid, k.idx(g.tpt)));
  Value lane = k.rem(tid, k.idx(g.tpt));
  Value inRange =
      k.cmp(arith::CmpIPredicate::ult, task, k.toIndex(numTasksI64));
  return {task, lane, inRange};
}

/// Finds or creates the merge kernel `name`: `g.block` threads, a grid over
/// `num_tasks` (one (row, head) state per `g.tpt` threads), and its manifest
/// entry (op `opName`, `statics`, `params`).
static gpu::GPUFuncOp getOrCreateMergeKernel(
    Operation *op, StringRef name, StringRef opName, const MergeGeom &g,
    ArrayRef<NamedAttribute> statics, ArrayRef<KernelParam> params,
    llvm::function_ref<void(OpBuilder &, gpu::GPUFuncOp)> body) {
  MLIRContext *ctx = op->getContext();
  Builder bb(ctx);
  auto manifest =
      makeManifest(ctx, name, opName, {g.block, 1, 1},
                   {gridRule(ctx, "num_tasks", g.tpb), bb.getI64IntegerAttr(1),
                    bb.getI64IntegerAttr(1)},
                   0, statics, params, {});
  return getOrCreateKernel(op->getParentOfType<ModuleOp>(), name, params,
                           {g.block, 1, 1}, manifest, body);
}

/// Merges two states (va, sa), (vb, sb) in base 2 with the exact empty rules.
static std::pair<Value, Value> mergeTwo(KernelBuilder &k, Value va, Value sa,
                                        Value vb, Value sb) {
  Value aEmpty = k.isNegInf(sa), bEmpty = k.isNegInf(sb);
  Value m = k.fmax(sa, sb);
  Value zero = k.f32(0.0);
  Value wa = k.select(aEmpty, zero, k.ex2(k.fsub(sa, m)));
  Value wb = k.select(bEmpty, zero, k.ex2(k.fsub(sb, m)));
  Value d = k.fadd(wa, wb);
  Value inv = k.fdiv(k.f32(1.0), d);
  Value acc = k.fadd(k.fmul(va, k.splat(wa)), k.fmul(vb, k.splat(wb)));
  Value v = k.fmul(acc, k.splat(inv));
  Value s = k.fadd(m, k.lg2(d));
  Value both = arith::AndIOp::create(k.b, k.loc, aEmpty, bEmpty);
  v = k.select(bEmpty, va, v);
  s = k.select(bEmpty, sa, s);
  v = k.select(aEmpty, vb, v);
  s = k.select(aEmpty, sb, s);
  v = k.select(both, k.vsplat(0.0), v);
  s = k.select(both, k.negInf(), s);
  return {v, s};
}

static std::string lseSuffix(LSEBase base) {
  return base == LSEBase::Base2 ? "b2" : "be";
}

static SmallVector<NamedAttribute> mergeStatics(Builder &b, const MergeGeom &g,
                                                Type vt, LSEBase base) {
  return {b.getNamedAttr("head_dim", b.getI64IntegerAttr(g.d)),
          b.getNamedAttr("v_dtype", b.getStringAttr(dtypeName(vt))),
          b.getNamedAttr("lse_base", base == LSEBase::Base2
                                         ? Attribute(b.getI64IntegerAttr(2))
                                         : Attribute(b.getStringAttr("e")))};
}

/// Launches `fn` with a 1-D grid of ceil(numTasks / tpb) blocks when
/// numTasks > 0.
static void launch(OpBuilder &b, Location loc, gpu::GPUFuncOp fn,
                   const MergeGeom &g, Value numTasks, ValueRange args) {
  Value c0 = arith::ConstantIndexOp::create(b, loc, 0);
  Value c1 = arith::ConstantIndexOp::create(b, loc, 1);
  Value nonEmpty =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ugt, numTasks, c0);
  auto ifOp = scf::IfOp::create(b, loc, nonEmpty, /*withElse=*/false);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(ifOp.thenBlock());
  Value grid = arith::CeilDivUIOp::create(
      b, loc, numTasks, arith::ConstantIndexOp::create(b, loc, g.tpb));
  Value bx = arith::ConstantIndexOp::create(b, loc, g.block);
  gpu::LaunchFuncOp::create(b, loc, fn, gpu::KernelDim3{grid, c1, c1},
                            gpu::KernelDim3{bx, c1, c1}, Value(), args);
}

static Value idxToI64(OpBuilder &b, Location loc, Value v) {
  return arith::IndexCastOp::create(b, loc, b.getI64Type(), v);
}

//===----------------------------------------------------------------------===//
// merge_state
//===----------------------------------------------------------------------===//

struct MergeStateToGPU : OpRewritePattern<MergeStateOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(MergeStateOp op,
                                PatternRewriter &rewriter) const override {
    auto g = matchMerge(op, {op.getVA(), op.getVB()});
    if (failed(g))
      return failure();
    Type vt = g->vt;
    bool baseE = g->baseE;
    Builder bb(op.getContext());
    std::string name = "cascade_merge_state_" + dtypeName(vt) + "_d" +
                       std::to_string(g->d) + "_" + lseSuffix(op.getLseBase());
    SmallVector<KernelParam> params = {{"v_a", "memref", flatTy(op.getVA())},
                                       {"s_a", "memref", flatTy(op.getSA())},
                                       {"v_b", "memref", flatTy(op.getVB())},
                                       {"s_b", "memref", flatTy(op.getSB())},
                                       {"v", "memref", flatTy(op.getV())},
                                       {"s", "memref", flatTy(op.getS())},
                                       {"num_tasks", "i64", bb.getI64Type()}};
    MergeGeom geom = *g;
    gpu::GPUFuncOp fn = getOrCreateMergeKernel(
        op, name, "merge_state", geom,
        mergeStatics(bb, geom, vt, op.getLseBase()), params,
        [&](OpBuilder &b, gpu::GPUFuncOp f) {
          KernelBuilder k(b, f.getLoc());
          auto a = f.getArguments();
          TaskIds t = taskIds(k, geom, a[6]);
          auto ifOp = scf::IfOp::create(b, k.loc, t.inRange, false);
          OpBuilder::InsertionGuard guard(b);
          b.setInsertionPointToStart(ifOp.thenBlock());
          Value off =
              k.add(k.mul(t.task, k.idx(geom.d)), k.mul(t.lane, k.idx(8)));
          Value sa = toBase2(k, k.loadScalar(a[1], t.task), baseE);
          Value sb = toBase2(k, k.loadScalar(a[3], t.task), baseE);
          Value va = k.load8(a[0], off), vb = k.load8(a[2], off);
          auto [v, s] = mergeTwo(k, va, sa, vb, sb);
          k.store8(v, a[4], off);
          Value isLane0 = k.cmp(arith::CmpIPredicate::eq, t.lane, k.idx(0));
          auto if0 = scf::IfOp::create(b, k.loc, isLane0, false);
          b.setInsertionPointToStart(if0.thenBlock());
          // Exactness: an empty input returns the other s unconverted.
          Value sOut = fromBase2(k, s, baseE);
          if (baseE) {
            Value sar = k.loadScalar(a[1], t.task),
                  sbr = k.loadScalar(a[3], t.task);
            sOut = k.select(k.isNegInf(sb), sar, sOut);
            sOut = k.select(k.isNegInf(sa), sbr, sOut);
          }
          k.storeScalar(sOut, a[5], t.task);
        });
    Location loc = op.getLoc();
    auto [fva, n0] = flattenContiguous(rewriter, loc, op.getVA());
    auto [fsa, n1] = flattenContiguous(rewriter, loc, op.getSA());
    auto [fvb, n2] = flattenContiguous(rewriter, loc, op.getVB());
    auto [fsb, n3] = flattenContiguous(rewriter, loc, op.getSB());
    auto [fv, n4] = flattenContiguous(rewriter, loc, op.getV());
    auto [fs, numTasks] = flattenContiguous(rewriter, loc, op.getS());
    launch(rewriter, loc, fn, *g, numTasks,
           {fva, fsa, fvb, fsb, fv, fs, idxToI64(rewriter, loc, numTasks)});
    rewriter.eraseOp(op);
    return success();
  }
};

//===----------------------------------------------------------------------===//
// merge_state_in_place
//===----------------------------------------------------------------------===//

struct MergeStateInPlaceToGPU : OpRewritePattern<MergeStateInPlaceOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(MergeStateInPlaceOp op,
                                PatternRewriter &rewriter) const override {
    auto g = matchMerge(op, {op.getVOther()});
    if (failed(g))
      return failure();
    Type vt = g->vt;
    bool baseE = g->baseE;
    bool hasMask = static_cast<bool>(op.getMask());
    Type maskElt;
    if (hasMask) {
      auto mt = cast<MemRefType>(op.getMask().getType());
      maskElt = mt.getElementType();
      if (mt.getRank() != 1 || !(maskElt.isInteger(8) || maskElt.isInteger(1)))
        return op.emitError("mask must be a 1-D i8 or i1 memref"), failure();
    }
    Builder bb(op.getContext());
    std::string name = "cascade_merge_state_in_place_" + dtypeName(vt) + "_d" +
                       std::to_string(g->d) + "_" + lseSuffix(op.getLseBase()) +
                       (hasMask ? "_mask" + dtypeName(maskElt) : "");
    SmallVector<KernelParam> params = {
        {"v_other", "memref", flatTy(op.getVOther())},
        {"s_other", "memref", flatTy(op.getSOther())}};
    if (hasMask) {
      params.push_back({"mask", "memref", flatTy(op.getMask())});
      params.push_back({"mask_stride", "i64", bb.getI64Type()});
    }
    params.push_back({"v", "memref", flatTy(op.getV())});
    params.push_back({"s", "memref", flatTy(op.getS())});
    params.push_back({"num_tasks", "i64", bb.getI64Type()});
    params.push_back({"num_heads", "i64", bb.getI64Type()});
    auto statics = mergeStatics(bb, *g, vt, op.getLseBase());
    statics.push_back(bb.getNamedAttr(
        "mask", bb.getStringAttr(hasMask ? dtypeName(maskElt) : "none")));
    MergeGeom geom = *g;
    gpu::GPUFuncOp fn = getOrCreateMergeKernel(
        op, name, "merge_state_in_place", geom, statics, params,
        [&](OpBuilder &b, gpu::GPUFuncOp f) {
          KernelBuilder k(b, f.getLoc());
          auto a = f.getArguments();
          unsigned i = 0;
          Value vO = a[i++], sO = a[i++], mask, maskStride;
          if (hasMask) {
            mask = a[i++];
            maskStride = a[i++];
          }
          Value v = a[i++], s = a[i++], numTasks = a[i++], numHeads = a[i++];
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
          if (hasMask) {
            Value row = k.div(t.task, k.toIndex(numHeads));
            Value mv = k.loadScalar(mask, k.mul(row, k.toIndex(maskStride)));
            Value zero =
                arith::ConstantIntOp::create(b, k.loc, mv.getType(), 0);
            Value on = k.cmp(arith::CmpIPredicate::ne, mv, zero);
            auto ifM = scf::IfOp::create(b, k.loc, on, false);
            b.setInsertionPointToStart(ifM.thenBlock());
          }
          Value off =
              k.add(k.mul(t.task, k.idx(geom.d)), k.mul(t.lane, k.idx(8)));
          Value sa = toBase2(k, sar, baseE), sb = toBase2(k, sbr, baseE);
          Value va = k.load8(v, off), vb = k.load8(vO, off);
          auto [vm, sm] = mergeTwo(k, va, sa, vb, sb);
          k.store8(vm, v, off);
          // All lanes of the task must read s before lane 0 overwrites it:
          // they do (loads above precede the store in every thread of the
          // task, but threads of a task are different threads). Write s only
          // after the v store, from lane 0, and use the value read by lane 0.
          Value isLane0 = k.cmp(arith::CmpIPredicate::eq, t.lane, k.idx(0));
          auto if0 = scf::IfOp::create(b, k.loc, isLane0, false);
          b.setInsertionPointToStart(if0.thenBlock());
          Value sOut = fromBase2(k, sm, baseE);
          if (baseE) {
            sOut = k.select(k.isNegInf(sb), sar, sOut);
            sOut = k.select(k.isNegInf(sa), sbr, sOut);
          }
          k.storeScalar(sOut, s, t.task);
        });
    Location loc = op.getLoc();
    SmallVector<Value> args;
    args.push_back(flattenContiguous(rewriter, loc, op.getVOther()).first);
    args.push_back(flattenContiguous(rewriter, loc, op.getSOther()).first);
    if (hasMask) {
      auto [fm, n, stride] = flattenStrided1D(rewriter, loc, op.getMask());
      args.push_back(fm);
      args.push_back(idxToI64(rewriter, loc, stride));
    }
    args.push_back(flattenContiguous(rewriter, loc, op.getV()).first);
    auto [fs, numTasks] = flattenContiguous(rewriter, loc, op.getS());
    args.push_back(fs);
    args.push_back(idxToI64(rewriter, loc, numTasks));
    Value heads = memref::DimOp::create(rewriter, loc, op.getS(), 1);
    args.push_back(idxToI64(rewriter, loc, heads));
    launch(rewriter, loc, fn, *g, numTasks, args);
    rewriter.eraseOp(op);
    return success();
  }
};

//===----------------------------------------------------------------------===//
// merge_states
//===----------------------------------------------------------------------===//

struct MergeStatesToGPU : OpRewritePattern<MergeStatesOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(MergeStatesOp op,
                                PatternRewriter &rewriter) const override {
    auto g = matchMerge(op, {op.getVIn()});
    if (failed(g))
      return failure();
    Type vt = g->vt;
    bool baseE = g->baseE;
    Builder bb(op.getContext());
    std::string name = "cascade_merge_states_" + dtypeName(vt) + "_d" +
                       std::to_string(g->d) + "_" + lseSuffix(op.getLseBase());
    SmallVector<KernelParam> params = {{"v_in", "memref", flatTy(op.getVIn())},
                                       {"s_in", "memref", flatTy(op.getSIn())},
                                       {"v", "memref", flatTy(op.getV())},
                                       {"s", "memref", flatTy(op.getS())},
                                       {"num_tasks", "i64", bb.getI64Type()},
                                       {"num_states", "i64", bb.getI64Type()},
                                       {"num_heads", "i64", bb.getI64Type()}};
    MergeGeom geom = *g;
    gpu::GPUFuncOp fn = getOrCreateMergeKernel(
        op, name, "merge_states", geom,
        mergeStatics(bb, geom, vt, op.getLseBase()), params,
        [&](OpBuilder &b, gpu::GPUFuncOp f) {
          KernelBuilder k(b, f.getLoc());
          auto a = f.getArguments();
          TaskIds t = taskIds(k, geom, a[4]);
          auto ifOp = scf::IfOp::create(b, k.loc, t.inRange, false);
          OpBuilder::InsertionGuard guard(b);
          b.setInsertionPointToStart(ifOp.thenBlock());
          Value nStates = k.toIndex(a[5]), nHeads = k.toIndex(a[6]);
          Value row = k.div(t.task, nHeads), head = k.rem(t.task, nHeads);
          Value laneOff = k.mul(t.lane, k.idx(8));
          Value rowBase = k.mul(row, nStates);
          auto loop = scf::ForOp::create(
              b, k.loc, k.idx(0), nStates, k.idx(1),
              ValueRange{k.negInf(), k.f32(0.0), k.vsplat(0.0)},
              [&](OpBuilder &lb, Location l, Value i, ValueRange it) {
                KernelBuilder kk(lb, l);
                Value sidx = kk.add(kk.mul(kk.add(rowBase, i), nHeads), head);
                Value si = toBase2(kk, kk.loadScalar(a[1], sidx), baseE);
                Value vi = kk.load8(
                    a[0], kk.add(kk.mul(sidx, kk.idx(geom.d)), laneOff));
                Value m = it[0], d = it[1], acc = it[2];
                Value mNew = kk.fmax(m, si);
                Value zero = kk.f32(0.0);
                Value scale =
                    kk.select(kk.isNegInf(m), zero, kk.ex2(kk.fsub(m, mNew)));
                Value w =
                    kk.select(kk.isNegInf(si), zero, kk.ex2(kk.fsub(si, mNew)));
                Value dNew = kk.fadd(kk.fmul(d, scale), w);
                Value accNew = kk.fadd(kk.fmul(acc, kk.splat(scale)),
                                       kk.fmul(vi, kk.splat(w)));
                scf::YieldOp::create(lb, l, ValueRange{mNew, dNew, accNew});
              });
          Value m = loop.getResult(0), d = loop.getResult(1),
                acc = loop.getResult(2);
          Value empty = k.fcmp(arith::CmpFPredicate::OEQ, d, k.f32(0.0));
          Value inv = k.select(empty, k.f32(0.0), k.fdiv(k.f32(1.0), d));
          Value v = k.fmul(acc, k.splat(inv));
          v = k.select(empty, k.vsplat(0.0), v);
          Value s = k.select(empty, k.negInf(),
                             fromBase2(k, k.fadd(m, k.lg2(d)), baseE));
          k.store8(v, a[2], k.add(k.mul(t.task, k.idx(geom.d)), laneOff));
          Value isLane0 = k.cmp(arith::CmpIPredicate::eq, t.lane, k.idx(0));
          auto if0 = scf::IfOp::create(b, k.loc, isLane0, false);
          b.setInsertionPointToStart(if0.thenBlock());
          k.storeScalar(s, a[3], t.task);
        });
    Location loc = op.getLoc();
    auto [fvi, n0] = flattenContiguous(rewriter, loc, op.getVIn());
    auto [fsi, n1] = flattenContiguous(rewriter, loc, op.getSIn());
    auto [fv, n2] = flattenContiguous(rewriter, loc, op.getV());
    auto [fs, numTasks] = flattenContiguous(rewriter, loc, op.getS());
    Value nStates = memref::DimOp::create(rewriter, loc, op.getSIn(), 1);
    Value heads = memref::DimOp::create(rewriter, loc, op.getS(), 1);
    launch(rewriter, loc, fn, *g, numTasks,
           {fvi, fsi, fv, fs, idxToI64(rewriter, loc, numTasks),
            idxToI64(rewriter, loc, nStates), idxToI64(rewriter, loc, heads)});
    rewriter.eraseOp(op);
    return success();
  }
};

} // namespace

void cascade::populateMergeToGPUPatterns(RewritePatternSet &patterns) {
  patterns.add<MergeStateToGPU, MergeStateInPlaceToGPU, MergeStatesToGPU>(
      patterns.getContext());
}
