//===- LowerPlans.cpp - Run-time plans -> calls of the runtime shim -------===//
//
// `cascade.plan` becomes a call of the shim's cascade_mgpu_plan (planning on
// the host with the runtime's makePlan, workspaces kept in a global slot of
// the op); a `cascade.paged_attention` with a `!cascade.plan` becomes the
// split-KV launch on the planned arrays or the self-scheduled launch, as the
// plan decides at run time. The ABI is docs/runtime.md's "Plans for compiled
// host code".
//
//===----------------------------------------------------------------------===//

#include "FamilyRegistry.h"
#include "cascade/Conversion/KernelConfig.h"
#include "cascade/Conversion/Passes.h"
#include "cascade/Dialect/Cascade/IR/CascadeOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Func/Transforms/FuncConversions.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Transforms/DialectConversion.h"

#include <algorithm>

namespace mlir::cascade {
#define GEN_PASS_DEF_CASCADELOWERPLANS
#include "cascade/Conversion/Passes.h.inc"
} // namespace mlir::cascade

using namespace mlir;
using namespace mlir::cascade;

namespace {

/// The shim's entry points (lib/Runtime/MgpuPlan.cpp).
constexpr StringLiteral kPlanFn = "cascade_mgpu_plan";
constexpr StringLiteral kSplitFn = "cascade_mgpu_plan_split_kv";
constexpr StringLiteral kI32Fn = "cascade_mgpu_plan_i32";
constexpr StringLiteral kI8Fn = "cascade_mgpu_plan_i8";
constexpr StringLiteral kTmpVFn = "cascade_mgpu_plan_tmp_v";
constexpr StringLiteral kTmpSFn = "cascade_mgpu_plan_tmp_s";
constexpr StringLiteral kAutoPlanFn = "cascade_mgpu_auto_plan";
constexpr StringLiteral kAutoLevelsFn = "cascade_mgpu_auto_num_levels";
constexpr StringLiteral kAutoLevelFn = "cascade_mgpu_auto_level";
constexpr StringLiteral kAutoArrayFn = "cascade_mgpu_auto_array";

/// The 1-D i32 memref type of the shim's array arguments (any layout).
MemRefType anyI32Array(MLIRContext *ctx) {
  int64_t dyn = ShapedType::kDynamic;
  return MemRefType::get({dyn}, IntegerType::get(ctx, 32),
                         StridedLayoutAttr::get(ctx, dyn, {dyn}));
}

/// Declares `name` in `module` once; `cInterface` for memref arguments or
/// results (the shim implements `_mlir_ciface_<name>`).
func::FuncOp declare(ModuleOp module, StringRef name, FunctionType type,
                     bool cInterface) {
  if (auto fn = module.lookupSymbol<func::FuncOp>(name))
    return fn;
  OpBuilder b = OpBuilder::atBlockEnd(module.getBody());
  auto fn = func::FuncOp::create(b, module.getLoc(), name, type);
  fn.setPrivate();
  if (cInterface)
    fn->setAttr(LLVM::LLVMDialect::getEmitCWrapperAttrName(), b.getUnitAttr());
  return fn;
}

Value i64(OpBuilder &b, Location loc, int64_t v) {
  return arith::ConstantIntOp::create(b, loc, v, 64);
}

/// The kernel configuration a plan is made for: the query tile and resident
/// blocks per SM of the split kernel that runs the level.
struct PlanKernel {
  int64_t qoTile = 0;
  int64_t occupancy = 1;
  /// auto_cascade: the query tile and the occupancy of the shared level's
  /// prefill kernel (its grid limit: not the decode kernel's).
  int64_t sharedQoTile = 0;
  int64_t sharedOccupancy = 0;
};

/// What the occupancy of a level's kernel depends on besides its
/// configuration.
struct LevelKernel {
  int64_t headDim;
  Type qType, kvType;
  bool decode, rope;
};

/// Resident blocks per SM of a kernel with `config` on `target`: threads,
/// registers (the family's traits: mma_sync kernels use up to the 255 a
/// thread may have, wgmma kernels are launched with the register file over
/// their warpgroups, the rows kernels stay well under 128) and shared
/// memory (the tensor-core tiles, with an fp8 cache's staging rings).
int64_t estimateOccupancy(KernelConfigAttr config, const LevelKernel &level,
                          const TargetInfo &target) {
  const KernelFamilyTraits &traits = getKernelFamily(config.getFamily()).traits;
  int64_t threads = std::max<int64_t>(1, config.getNumThreads());
  int64_t regs = traits.registersPerThread(config, target);
  int64_t occ = std::min(target.maxThreadsPerSM / threads,
                         target.registersPerSM / (threads * regs));
  if (traits.dynamicSharedBytes) {
    AttentionShape shape;
    shape.headDim = level.headDim;
    shape.qType = level.qType;
    shape.kvType = level.kvType;
    shape.decode = level.decode;
    shape.rope = level.rope;
    occ = std::min(occ, target.sharedBytesPerSM /
                            (traits.dynamicSharedBytes(config, shape) + 1024));
  }
  return std::max<int64_t>(occ, 1);
}

/// The shared level of an automatic cascade over `op`'s batch: `op` as a
/// prefill over `qo` (groups of its rows) and that level's KV arrays,
/// writing (or, if `op` accumulates, merging into) `op`'s outputs, with its
/// own kernel configuration. Created at the builder's insertion point.
/// Selection sees it as the planned level it is (it runs as the automatic
/// plan's level 0 splits it), still holding `op`'s plan: so it gets the
/// configuration of an explicit cascade's planned shared level (on sm_90a
/// two consumer warpgroups over 128 rows, not the three over 192 that a
/// plain prefill gets and that leave a shared prefix's few rows a KV head
/// partly empty: docs/lowering.md).
FailureOr<PagedAttentionOp> createSharedLevel(OpBuilder &b, PagedAttentionOp op,
                                              ValueRange arrays,
                                              const TargetInfo &target) {
  auto shared = cast<PagedAttentionOp>(b.clone(*op));
  shared.getQoIndptrMutable().assign(arrays[0]);
  shared.getKvIndptrMutable().assign(arrays[1]);
  shared.getKvIndicesMutable().assign(arrays[2]);
  shared.getKvLastPageLenMutable().assign(arrays[3]);
  auto helper = op->getContext()
                    ->getLoadedDialect<CascadeDialect>()
                    ->getKernelConfigAttrHelper();
  shared->removeAttr(helper.getName());
  FailureOr<KernelConfigAttr> config =
      selectKernelConfig(shared, KernelConfigOptions(), target);
  shared.getPlanMutable().clear();
  if (failed(config)) {
    shared->erase();
    return failure();
  }
  helper.setAttr(shared, *config);
  return shared;
}

/// The kernel configurations of the attention ops that run each plan:
/// those that take the plan value in its function, else (a plan returned
/// to a run function) those anywhere in the module that take a plan of the
/// same type.
class PlanKernels {
public:
  PlanKernels(ModuleOp module, const TargetInfo &target) : target(target) {
    auto helper = module.getContext()
                      ->getLoadedDialect<CascadeDialect>()
                      ->getKernelConfigAttrHelper();
    module.walk([&](PagedAttentionOp op) {
      ValueRange plan = op.getPlan();
      if (plan.size() != 1 || !isa<PlanType>(plan[0].getType()))
        return;
      KernelConfigAttr config = helper.getAttr(op);
      if (!config) {
        FailureOr<KernelConfigAttr> c =
            selectKernelConfig(op, KernelConfigOptions(), target);
        if (failed(c))
          return;
        config = *c;
      }
      auto type = cast<PlanType>(plan[0].getType());
      Type qType = cast<ShapedType>(op.getQ().getType()).getElementType();
      Type kvType = cast<ShapedType>(op.getKv()[0].getType()).getElementType();
      bool rope = op.getPosEncoding() == PosEncoding::RopeLlama;
      int64_t sharedQoTile = 0, sharedOccupancy = 0;
      if (type.getAutoCascade()) {
        // The shared level's kernel, on stand-in arrays (the op's own).
        OpBuilder b(op);
        Value kvp = op.getKvIndptr();
        FailureOr<PagedAttentionOp> shared = createSharedLevel(
            b, op, {kvp, kvp, op.getKvIndices(), op.getKvLastPageLen()},
            target);
        if (succeeded(shared)) {
          KernelConfigAttr sc = helper.getAttr(*shared);
          if (sc.isTensorCore())
            sharedQoTile = sc.getQTile();
          sharedOccupancy = estimateOccupancy(
              sc, LevelKernel{type.getHeadDim(), qType, kvType, false, rope},
              target);
          shared->erase();
        }
      }
      LevelKernel level{type.getHeadDim(), qType, kvType, op.isDecode(), rope};
      users.push_back({plan[0], config, sharedQoTile, sharedOccupancy, level});
    });
  }

  /// The configuration of `plan`'s split kernel, or failure (with a
  /// diagnostic on `op`) when its users disagree.
  FailureOr<PlanKernel> find(PlanOp op) const {
    Value plan = op.getPlan();
    auto type = cast<PlanType>(plan.getType());
    SmallVector<const User *> runs;
    for (const User &u : users)
      if (u.plan == plan)
        runs.push_back(&u);
    if (runs.empty())
      for (const User &u : users)
        if (u.plan.getType() == type)
          runs.push_back(&u);
    SmallVector<KernelConfigAttr> configs;
    for (const User *u : runs)
      configs.push_back(u->config);
    PlanKernel k;
    if (configs.empty()) {
      k.occupancy = op.getOccupancy().value_or(1);
      return k;
    }
    KernelConfigAttr c = configs.front();
    for (KernelConfigAttr other : configs)
      if (type.getPrefill() && other.getQTile() != c.getQTile())
        return op.emitOpError("the levels that run this plan have kernels "
                              "with different query tiles (")
               << c.getQTile() << " and " << other.getQTile()
               << "); give each its own plan";
    // The kernel's own query tile: the plan counts its work items in it
    // (0 lets the runtime choose, for the rows family).
    k.qoTile = type.getPrefill() && c.isTensorCore() ? c.getQTile() : 0;
    k.occupancy = op.getOccupancy().value_or(
        estimateOccupancy(c, runs.front()->level, target));
    for (const User &u : users)
      if (u.plan == plan || u.plan.getType() == type) {
        k.sharedQoTile = std::max(k.sharedQoTile, u.sharedQoTile);
        k.sharedOccupancy = std::max(k.sharedOccupancy, u.sharedOccupancy);
      }
    return k;
  }

private:
  struct User {
    Value plan;
    KernelConfigAttr config;
    int64_t sharedQoTile;
    int64_t sharedOccupancy;
    LevelKernel level;
  };
  SmallVector<User> users;
  const TargetInfo &target;
};

/// cascade.plan -> `cascade_mgpu_plan(slot, qo, kv_indptr, last, indices,
/// prefill, Hqo, Hkv, D, page, graph_rows, occupancy, qo_tile, fixed split,
/// disable split)`, the slot an internal global of the module.
struct PlanOpLowering : OpConversionPattern<PlanOp> {
  PlanOpLowering(const TypeConverter &converter, MLIRContext *ctx,
                 const DenseMap<Operation *, PlanKernel> &kernels)
      : OpConversionPattern(converter, ctx), kernels(kernels) {}

  LogicalResult
  matchAndRewrite(PlanOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto kernel = kernels.find(op);
    if (kernel == kernels.end())
      return failure();
    Location loc = op.getLoc();
    MLIRContext *ctx = op.getContext();
    auto module = op->getParentOfType<ModuleOp>();
    auto ptr = LLVM::LLVMPointerType::get(ctx);
    MemRefType arr = anyI32Array(ctx);
    Type i64Type = rewriter.getI64Type();

    // The op's slot: a pointer-sized global, null until the first plan.
    OpBuilder mb = OpBuilder::atBlockBegin(module.getBody());
    std::string name;
    for (unsigned n = 0;; ++n) {
      name = ("__cascade_plan_slot_" + Twine(n)).str();
      if (!module.lookupSymbol(name))
        break;
    }
    auto global =
        LLVM::GlobalOp::create(mb, loc, ptr, /*isConstant=*/false,
                               LLVM::Linkage::Internal, name, Attribute());
    Block *init = mb.createBlock(&global.getInitializerRegion());
    mb.setInsertionPointToStart(init);
    Value null = LLVM::ZeroOp::create(mb, loc, ptr);
    LLVM::ReturnOp::create(mb, loc, null);

    Value slot = LLVM::AddressOfOp::create(rewriter, loc, global);
    PlanType type = op.getPlan().getType();
    if (type.getAutoCascade()) {
      // cascade_mgpu_auto_plan(slot, kv_indptr, last, indices, Hqo, Hkv, D,
      // page, graph_rows, occupancy, shared level's query tile and
      // occupancy).
      SmallVector<Type> autoArgs = {ptr, arr, arr, arr};
      autoArgs.append(8, i64Type);
      func::FuncOp autoFn = declare(
          module, kAutoPlanFn, FunctionType::get(ctx, autoArgs, {ptr}), true);
      auto cast = [&](Value v) -> Value {
        return memref::CastOp::create(rewriter, loc, arr, v);
      };
      SmallVector<Value> operands = {
          slot,
          cast(adaptor.getKvIndptr()),
          cast(adaptor.getKvLastPageLen()),
          cast(adaptor.getKvIndices()),
          i64(rewriter, loc, type.getNumQoHeads()),
          i64(rewriter, loc, type.getNumKvHeads()),
          i64(rewriter, loc, type.getHeadDim()),
          i64(rewriter, loc, type.getPageSize()),
          i64(rewriter, loc, type.getGraphRows()),
          i64(rewriter, loc, kernel->second.occupancy),
          i64(rewriter, loc, kernel->second.sharedQoTile),
          i64(rewriter, loc, kernel->second.sharedOccupancy)};
      rewriter.replaceOpWithNewOp<func::CallOp>(op, autoFn, operands);
      return success();
    }
    SmallVector<Type> args = {ptr, arr, arr, arr, arr};
    args.append(10, i64Type);
    func::FuncOp fn =
        declare(module, kPlanFn, FunctionType::get(ctx, args, {ptr}), true);
    auto array = [&](Value v) -> Value {
      if (!v)
        v = memref::AllocaOp::create(
            rewriter, loc, MemRefType::get({0}, rewriter.getI32Type()));
      return memref::CastOp::create(rewriter, loc, arr, v);
    };
    SmallVector<Value> operands = {
        slot,
        array(adaptor.getQoIndptr()),
        array(adaptor.getKvIndptr()),
        array(adaptor.getKvLastPageLen()),
        array(adaptor.getKvIndices()),
        i64(rewriter, loc, type.getPrefill()),
        i64(rewriter, loc, type.getNumQoHeads()),
        i64(rewriter, loc, type.getNumKvHeads()),
        i64(rewriter, loc, type.getHeadDim()),
        i64(rewriter, loc, type.getPageSize()),
        i64(rewriter, loc, type.getGraphRows()),
        i64(rewriter, loc, kernel->second.occupancy),
        i64(rewriter, loc, kernel->second.qoTile),
        i64(rewriter, loc, op.getFixedSplitPagesAttr().getInt()),
        i64(rewriter, loc, op.getDisableSplitKv())};
    rewriter.replaceOpWithNewOp<func::CallOp>(op, fn, operands);
    return success();
  }

  const DenseMap<Operation *, PlanKernel> &kernels;
};

/// `op` planned by `handle` (a level's plan, !llvm.ptr): if the plan splits
/// KV (and was made for this kernel's query tile), `op` with the planned
/// arrays as its split-KV plan operands; else `op` without a plan, the
/// self-scheduled launch. Created at the rewriter's insertion point; `op`
/// is left for the caller to erase.
void emitPlannedLevel(ConversionPatternRewriter &rewriter, PagedAttentionOp op,
                      Value handle) {
  OpBuilder::InsertionGuard guard(rewriter);
  Location loc = op.getLoc();
  MLIRContext *ctx = op.getContext();
  auto module = op->getParentOfType<ModuleOp>();
  Type ptr = handle.getType(), i64Type = rewriter.getI64Type();
  auto i32 = rewriter.getI32Type();

  // The query tile the split kernel was built for: the shim refuses to
  // split with a plan made for another (the launch would be wrong).
  auto config = ctx->getLoadedDialect<CascadeDialect>()
                    ->getKernelConfigAttrHelper()
                    .getAttr(op);
  int64_t qoTile =
      !op.isDecode() && config && config.isTensorCore() ? config.getQTile() : 0;
  func::FuncOp splitFn = declare(
      module, kSplitFn, FunctionType::get(ctx, {ptr, i64Type}, {i32}), false);
  Value split =
      func::CallOp::create(rewriter, loc, splitFn,
                           ValueRange{handle, i64(rewriter, loc, qoTile)})
          .getResult(0);
  Value zero = arith::ConstantIntOp::create(rewriter, loc, 0, 32);
  Value isSplit = arith::CmpIOp::create(rewriter, loc, arith::CmpIPredicate::ne,
                                        split, zero);
  auto ifOp = scf::IfOp::create(rewriter, loc, isSplit, /*withElse=*/true);

  // Split: the plan's arrays and workspaces as memref descriptors.
  int64_t dyn = ShapedType::kDynamic;
  auto vec = [&](Type elem) { return MemRefType::get({dyn}, elem); };
  rewriter.setInsertionPointToStart(ifOp.thenBlock());
  auto call = [&](StringRef name, Type result, int64_t which) {
    SmallVector<Type> args = {ptr};
    SmallVector<Value> operands = {handle};
    if (which >= 0) {
      args.push_back(i64Type);
      operands.push_back(i64(rewriter, loc, which));
    }
    func::FuncOp fn =
        declare(module, name, FunctionType::get(ctx, args, {result}), true);
    return func::CallOp::create(rewriter, loc, fn, operands).getResult(0);
  };
  unsigned count = op.isDecode() ? kNumPlanOperands : kNumPrefillPlanOperands;
  SmallVector<Value> arrays;
  for (unsigned i = 0; i < count; ++i) {
    if (i == kPlanTmpV)
      arrays.push_back(
          call(kTmpVFn, MemRefType::get({dyn, dyn, dyn}, rewriter.getF32Type()),
               -1));
    else if (i == kPlanTmpS)
      arrays.push_back(call(
          kTmpSFn, MemRefType::get({dyn, dyn}, rewriter.getF32Type()), -1));
    else if (i == kPlanBlockValidMask)
      arrays.push_back(call(kI8Fn, vec(rewriter.getI8Type()), i));
    else
      arrays.push_back(call(kI32Fn, vec(i32), i));
  }
  auto splitOp = cast<PagedAttentionOp>(rewriter.clone(*op));
  splitOp.getPlanMutable().assign(arrays);

  // Not split: the self-scheduled launch.
  rewriter.setInsertionPointToStart(ifOp.elseBlock());
  auto plainOp = cast<PagedAttentionOp>(rewriter.clone(*op));
  plainOp.getPlanMutable().clear();
}

/// The plan type of `op`'s plan operand, if it takes a !cascade.plan.
PlanType planTypeOf(PagedAttentionOp op) {
  ValueRange plan = op.getPlan();
  return plan.size() == 1 ? dyn_cast<PlanType>(plan[0].getType()) : PlanType();
}

/// A paged_attention with a level's !cascade.plan: emitPlannedLevel.
struct PlannedAttentionLowering : OpConversionPattern<PagedAttentionOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(PagedAttentionOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    PlanType type = planTypeOf(op);
    if (!type || type.getAutoCascade())
      return failure();
    emitPlannedLevel(rewriter, op, adaptor.getPlan()[0]);
    rewriter.eraseOp(op);
    return success();
  }
};

/// A decode paged_attention with an auto_cascade plan: if the runtime found
/// a shared level, that level (a prefill over the groups it found, on its
/// own arrays, as planned) and then each request's own pages merged into it
/// (accumulate); else the batch as it is, as planned. Every level split or
/// not as its plan says (emitPlannedLevel).
struct AutoCascadeAttentionLowering : OpConversionPattern<PagedAttentionOp> {
  AutoCascadeAttentionLowering(const TypeConverter &converter, MLIRContext *ctx,
                               const TargetInfo &target)
      : OpConversionPattern(converter, ctx), target(target) {}

  LogicalResult
  matchAndRewrite(PagedAttentionOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    PlanType type = planTypeOf(op);
    if (!type || !type.getAutoCascade())
      return failure();
    Location loc = op.getLoc();
    MLIRContext *ctx = op.getContext();
    auto module = op->getParentOfType<ModuleOp>();
    Value handle = adaptor.getPlan()[0];
    Type ptr = handle.getType(), i64Type = rewriter.getI64Type();
    auto array = MemRefType::get({ShapedType::kDynamic}, rewriter.getI32Type());
    func::FuncOp levelsFn = declare(
        module, kAutoLevelsFn, FunctionType::get(ctx, {ptr}, {i64Type}), false);
    func::FuncOp levelFn =
        declare(module, kAutoLevelFn,
                FunctionType::get(ctx, {ptr, i64Type}, {ptr}), false);
    func::FuncOp arrayFn =
        declare(module, kAutoArrayFn,
                FunctionType::get(ctx, {ptr, i64Type, i64Type}, {array}), true);
    auto level = [&](int64_t l) {
      return func::CallOp::create(rewriter, loc, levelFn,
                                  ValueRange{handle, i64(rewriter, loc, l)})
          .getResult(0);
    };
    auto arrays = [&](int64_t l) {
      SmallVector<Value> result;
      for (int64_t a = 0; a < 4; ++a)
        result.push_back(
            func::CallOp::create(rewriter, loc, arrayFn,
                                 ValueRange{handle, i64(rewriter, loc, l),
                                            i64(rewriter, loc, a)})
                .getResult(0));
      return result;
    };
    Value numLevels =
        func::CallOp::create(rewriter, loc, levelsFn, ValueRange{handle})
            .getResult(0);
    Value two = arith::CmpIOp::create(rewriter, loc, arith::CmpIPredicate::eq,
                                      numLevels, i64(rewriter, loc, 2));
    auto ifOp = scf::IfOp::create(rewriter, loc, two, /*withElse=*/true);
    {
      // Two levels: the shared prefix, then each request's own pages.
      OpBuilder::InsertionGuard guard(rewriter);
      rewriter.setInsertionPointToStart(ifOp.thenBlock());
      Value sharedPlan = level(0);
      FailureOr<PagedAttentionOp> shared =
          createSharedLevel(rewriter, op, arrays(0), target);
      if (failed(shared))
        return failure();
      emitPlannedLevel(rewriter, *shared, sharedPlan);
      rewriter.eraseOp(*shared);
      Value ownPlan = level(1);
      SmallVector<Value> own = arrays(1);
      auto ownOp = cast<PagedAttentionOp>(rewriter.clone(*op));
      ownOp.getKvIndptrMutable().assign(own[1]);
      ownOp.getKvIndicesMutable().assign(own[2]);
      ownOp.getKvLastPageLenMutable().assign(own[3]);
      ownOp.setAccumulate(true);
      // The state inputs joined the shared level's state: once.
      for (StringRef name : PagedAttentionOp::getStateInputNames())
        ownOp.getStateInputMutable(name)->clear();
      emitPlannedLevel(rewriter, ownOp, ownPlan);
      rewriter.eraseOp(ownOp);
    }
    {
      // One level: the batch as it is.
      OpBuilder::InsertionGuard guard(rewriter);
      rewriter.setInsertionPointToStart(ifOp.elseBlock());
      emitPlannedLevel(rewriter, op, level(0));
    }
    rewriter.eraseOp(op);
    return success();
  }

  const TargetInfo &target;
};

bool hasPlanOperand(PagedAttentionOp op) {
  return llvm::any_of(op->getOperandTypes(), llvm::IsaPred<PlanType>);
}

struct CascadeLowerPlansPass
    : cascade::impl::CascadeLowerPlansBase<CascadeLowerPlansPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    bool any = false;
    module.walk([&](Operation *op) {
      any |= isa<PlanOp>(op) ||
             llvm::any_of(op->getOperandTypes(), llvm::IsaPred<PlanType>);
    });
    if (!any)
      return;
    FailureOr<const TargetInfo *> target = resolveSelectionTarget(module, chip);
    if (failed(target))
      return signalPassFailure();
    // What the patterns need, checked first: the kernel of every plan,
    // planned levels on memrefs.
    PlanKernels planKernels(module, **target);
    DenseMap<Operation *, PlanKernel> kernels;
    WalkResult checked = module.walk([&](Operation *op) {
      if (auto plan = dyn_cast<PlanOp>(op)) {
        FailureOr<PlanKernel> k = planKernels.find(plan);
        if (failed(k))
          return WalkResult::interrupt();
        kernels[op] = *k;
      }
      auto attention = dyn_cast<PagedAttentionOp>(op);
      if (attention && hasPlanOperand(attention) &&
          attention.getNumResults() != 0) {
        attention.emitOpError("a planned level must be bufferized before "
                              "cascade-lower-plans");
        return WalkResult::interrupt();
      }
      return WalkResult::advance();
    });
    if (checked.wasInterrupted())
      return signalPassFailure();

    MLIRContext *ctx = &getContext();
    TypeConverter converter;
    converter.addConversion([](Type t) { return t; });
    converter.addConversion(
        [ctx](PlanType) -> Type { return LLVM::LLVMPointerType::get(ctx); });
    ConversionTarget legality(*ctx);
    legality.addLegalDialect<arith::ArithDialect, func::FuncDialect,
                             LLVM::LLVMDialect, memref::MemRefDialect,
                             scf::SCFDialect, CascadeDialect>();
    legality.addIllegalOp<PlanOp>();
    legality.addDynamicallyLegalOp<PagedAttentionOp>(
        [](PagedAttentionOp op) { return !hasPlanOperand(op); });
    legality.addDynamicallyLegalOp<func::FuncOp>([&](func::FuncOp op) {
      return converter.isSignatureLegal(op.getFunctionType()) &&
             converter.isLegal(&op.getBody());
    });
    legality.addDynamicallyLegalOp<func::CallOp, func::ReturnOp>(
        [&](Operation *op) { return converter.isLegal(op); });
    legality.markUnknownOpDynamicallyLegal([&](Operation *op) {
      return converter.isLegal(op->getOperandTypes()) &&
             converter.isLegal(op->getResultTypes());
    });

    RewritePatternSet patterns(ctx);
    patterns.add<PlanOpLowering>(converter, ctx, kernels);
    patterns.add<PlannedAttentionLowering>(converter, ctx);
    patterns.add<AutoCascadeAttentionLowering>(converter, ctx, **target);
    populateFunctionOpInterfaceTypeConversionPattern<func::FuncOp>(patterns,
                                                                   converter);
    populateCallOpTypeConversionPattern(patterns, converter);
    populateReturnOpTypeConversionPattern(patterns, converter);
    if (failed(applyPartialConversion(module, legality, std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
