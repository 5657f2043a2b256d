//===- CascadeToGPUPass.cpp - convert-cascade-to-gpu ----------------------===//
//
// The pass: checks the buffers, moves host allocations that kernels read
// onto the device, computes each op's kernel spec (its static configuration
// and #cascade.kernel_config), builds one kernel per distinct spec with the
// family's generator, then rewrites the ops into launches (LaunchToGPU.cpp)
// and collects the kernels' manifest entries for the bundle.
//
//===----------------------------------------------------------------------===//

#include "FamilyRegistry.h"
#include "KernelSpec.h"
#include "cascade/Conversion/KernelConfig.h"
#include "cascade/Conversion/Passes.h"
#include "cascade/Dialect/Cascade/IR/CascadeDialect.h"
#include "cascade/Dialect/Cascade/IR/CascadeOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/WalkPatternRewriteDriver.h"

namespace mlir {
namespace cascade {
#define GEN_PASS_DEF_CONVERTCASCADETOGPU
#include "cascade/Conversion/Passes.h.inc"
} // namespace cascade
} // namespace mlir

using namespace mlir;
using namespace mlir::cascade;

namespace {

/// Kernels index flat, row-major buffers. A memref whose layout is not
/// provably contiguous row-major (static strides matching the sizes of the
/// inner dims) would be read wrong, so it is rejected before lowering.
bool isContiguousRowMajor(MemRefType t) {
  if (t.getLayout().isIdentity())
    return true;
  SmallVector<int64_t> strides;
  int64_t offset;
  if (failed(t.getStridesAndOffset(strides, offset)))
    return false;
  int64_t expected = 1;
  for (int64_t i = t.getRank() - 1; i >= 0; --i) {
    if (t.getDimSize(i) != 1 && strides[i] != expected)
      return false;
    if (i == 0)
      break;
    if (ShapedType::isDynamic(t.getDimSize(i)))
      return false;
    expected *= t.getDimSize(i);
  }
  return true;
}

/// A [rows, heads, head_dim] view whose head_dim is contiguous (stride 1)
/// and whose row and head strides are any (static or dynamic): the q and o
/// of paged attention, whose strides are kernel parameters.
bool isRowsStrided(MemRefType t) {
  SmallVector<int64_t> strides;
  int64_t offset;
  return t.getRank() == 3 &&
         succeeded(t.getStridesAndOffset(strides, offset)) &&
         (strides[2] == 1 || t.getDimSize(2) == 1);
}

/// A paged cache (a pool or one of a pair) whose pages keep the contiguous
/// row-major layout inside while the page stride is any (static or
/// dynamic, at least a page): one layer of a larger cache. The page stride
/// is a kernel parameter (kv_stride_page / v_stride_page).
bool isPageStrided(MemRefType t) {
  SmallVector<int64_t> strides;
  int64_t offset;
  if (t.getRank() < 2 || failed(t.getStridesAndOffset(strides, offset)))
    return false;
  int64_t inner = 1;
  for (int64_t i = t.getRank() - 1; i >= 1; --i) {
    if (ShapedType::isDynamic(t.getDimSize(i)) ||
        (t.getDimSize(i) != 1 && strides[i] != inner))
      return false;
    inner *= t.getDimSize(i);
  }
  return ShapedType::isDynamic(strides[0]) || strides[0] >= inner;
}

/// Checks every buffer operand of the cascade ops in `module`; the mask of
/// merge_state_in_place is exempt (its stride is passed to the kernel),
/// paged attention's q and o may be row-strided views, and its paged cache
/// page-strided (a pair's K and V alike where they share a head_dim: the
/// kernels take one page stride for both).
LogicalResult checkLayouts(ModuleOp module) {
  bool ok = true;
  module.walk([&](Operation *op) {
    if (!isa<CascadeDialect>(op->getDialect()))
      return;
    auto inPlace = dyn_cast<MergeStateInPlaceOp>(op);
    auto attention = dyn_cast<PagedAttentionOp>(op);
    for (OpOperand &operand : op->getOpOperands()) {
      auto t = dyn_cast<MemRefType>(operand.get().getType());
      if (!t || (inPlace && operand.get() == inPlace.getMask()))
        continue;
      if (isContiguousRowMajor(t))
        continue;
      if (attention &&
          (operand.get() == attention.getQ() ||
           operand.get() == attention.getO()) &&
          isRowsStrided(t))
        continue;
      if (attention && attention.getKvIndices() && isPageStrided(t) &&
          llvm::is_contained(attention.getKv(), operand.get())) {
        auto kv = attention.getKv();
        auto kt = cast<MemRefType>(kv[0].getType());
        auto vt = cast<MemRefType>(kv.back().getType());
        if (kv.size() == 1 || kt.getShape().back() != vt.getShape().back() ||
            kt.getLayout() == vt.getLayout())
          continue;
        op->emitOpError("operand #")
            << operand.getOperandNumber() << " of type " << t
            << ": k and v of one head_dim must have the same layout (the "
               "kernels take one page stride for both)";
        ok = false;
        continue;
      }
      op->emitOpError("operand #")
          << operand.getOperandNumber() << " of type " << t
          << " is not contiguous row-major; the GPU kernels read flat "
             "buffers (copy it into an identity-layout buffer first, or "
             "bufferize with function-boundary-type-conversion="
             "identity-layout-map)";
      ok = false;
    }
  });
  return success(ok);
}

/// Host buffers that kernels read or write must live on the device: a
/// memref.alloc whose buffer a cascade op uses (the temporaries of an
/// unfused cascade, say) becomes a gpu.alloc, its deallocs gpu.dealloc.
void moveKernelBuffersToDevice(ModuleOp module) {
  SmallVector<memref::AllocOp> allocs;
  module.walk([&](memref::AllocOp alloc) {
    if (alloc->getParentOfType<gpu::GPUModuleOp>())
      return;
    if (llvm::any_of(alloc->getUsers(), [](Operation *user) {
          return isa<CascadeDialect>(user->getDialect());
        }))
      allocs.push_back(alloc);
  });
  // Async forms on a stream of their own (gpu.wait async ... gpu.wait):
  // what gpu-to-llvm lowers to mgpuMemAlloc / mgpuMemFree, synchronously.
  auto tokenTy = gpu::AsyncTokenType::get(module.getContext());
  for (memref::AllocOp alloc : allocs) {
    OpBuilder b(alloc);
    Location loc = alloc.getLoc();
    Value start =
        gpu::WaitOp::create(b, loc, tokenTy, ValueRange{}).getResult(0);
    auto dev = gpu::AllocOp::create(b, loc, alloc.getType(), tokenTy,
                                    ValueRange{start}, alloc.getDynamicSizes(),
                                    alloc.getSymbolOperands(),
                                    /*hostShared=*/false);
    gpu::WaitOp::create(b, loc, Type(), ValueRange{dev.getAsyncToken()});
    for (Operation *user : llvm::make_early_inc_range(alloc->getUsers()))
      if (auto dealloc = dyn_cast<memref::DeallocOp>(user)) {
        OpBuilder db(dealloc);
        Value t0 =
            gpu::WaitOp::create(db, dealloc.getLoc(), tokenTy, ValueRange{})
                .getResult(0);
        Value t1 = gpu::DeallocOp::create(db, dealloc.getLoc(), tokenTy,
                                          ValueRange{t0}, dev.getMemref())
                       .getAsyncToken();
        gpu::WaitOp::create(db, dealloc.getLoc(), Type(), ValueRange{t1});
        dealloc.erase();
      }
    alloc.replaceAllUsesWith(dev.getMemref());
    alloc.erase();
  }
}

/// The kernels of the module, one per distinct spec.
class KernelSet {
public:
  /// `gridDependencies`: the kernels take part in programmatic dependent
  /// launch (createKernel); the target chip must be sm_90 or newer.
  KernelSet(ModuleOp module, bool gridDependencies)
      : module(module), gm(getOrCreateKernelModule(module)),
        gridDependencies(gridDependencies) {}

  /// The kernel of `spec` (built by `generate` the first time) and its
  /// launch.
  template <typename Spec>
  FailureOr<KernelLaunch> get(const Spec &spec, Operation *op,
                              KernelGenerator<Spec> generate) {
    std::vector<std::pair<Spec, KernelLaunch>> &built = cache<Spec>();
    for (auto &[s, l] : built)
      if (s == spec)
        return l;
    KernelLaunch l = launchOf(spec);
    if (failed(build(spec, op, l, [&](OpBuilder &b, gpu::GPUFuncOp fn) {
          generate(b, fn, gm, spec);
        })))
      return failure();
    built.push_back({spec, l});
    return l;
  }

private:
  template <typename Spec> std::vector<std::pair<Spec, KernelLaunch>> &cache();

  /// The launch of a spec's kernel: parameters, block and grid rule.
  template <typename Spec> KernelLaunch launchOf(const Spec &spec) {
    KernelLaunch l;
    l.params = spec.params(module.getContext());
    ArrayRef<int64_t> t = spec.config.getThreads();
    l.block.assign(t.begin(), t.end());
    l.gridParam = spec.gridParam().str();
    l.gridMul = spec.gridMul();
    l.gridDiv = spec.gridDiv();
    l.gridAdd = spec.gridAdd().str();
    l.gridY = spec.gridY();
    l.dynamicSharedBytes = spec.dynamicSharedBytes();
    return l;
  }

  /// Creates the kernel of `spec` with launch `l` (grid rule, manifest,
  /// body) under its spelled-out name.
  template <typename Spec>
  LogicalResult build(const Spec &spec, Operation *op, KernelLaunch &l,
                      function_ref<void(OpBuilder &, gpu::GPUFuncOp)> body) {
    MLIRContext *ctx = module.getContext();
    Builder bb(ctx);
    SmallVector<Attribute> grid = {
        gridRule(ctx, l.gridParam, l.gridDiv, l.gridMul, l.gridAdd),
        bb.getI64IntegerAttr(l.gridY), bb.getI64IntegerAttr(1)};
    std::string name = spec.name();
    if (failed(checkName(name, op)))
      return failure();
    auto manifest = makeManifest(ctx, name, spec.opName(), l.block, grid,
                                 l.dynamicSharedBytes, spec.statics(bb),
                                 l.params, spec.planArrays());
    l.fn = createKernel(gm, name, l.params, l.block, manifest, body,
                        gridDependencies);
    // The launch bound beside .maxntid (the known block size): ptxas keeps
    // the registers that many blocks an SM leave a thread.
    if (int64_t blocks = spec.config.getMinBlocksPerSm())
      l.fn->setAttr("nvvm.minctasm", bb.getI32IntegerAttr(blocks));
    return success();
  }

  /// Names spell specs out; two specs with one name would be a bug of the
  /// naming, never silently one kernel for both.
  LogicalResult checkName(StringRef name, Operation *op) {
    if (!gm.lookupSymbol(name))
      return success();
    return op->emitError("internal error: two kernel configurations are both "
                         "named ")
           << name;
  }

  ModuleOp module;
  gpu::GPUModuleOp gm;
  bool gridDependencies;
  std::vector<std::pair<AttentionSpec, KernelLaunch>> attention;
  std::vector<std::pair<MergeSpec, KernelLaunch>> merges;
};

template <>
std::vector<std::pair<AttentionSpec, KernelLaunch>> &
KernelSet::cache<AttentionSpec>() {
  return attention;
}
template <>
std::vector<std::pair<MergeSpec, KernelLaunch>> &KernelSet::cache<MergeSpec>() {
  return merges;
}

/// An attention family: the op's spec under `config` (analyseAttention
/// diagnoses, with the traits of config's family, what it cannot run), its
/// kernel and, for a split-KV level, the merge of the partial states.
FailureOr<OpLaunches> lowerAttention(KernelSet &kernels, Operation *op,
                                     KernelConfigAttr config,
                                     const KernelFamilyEntry &family) {
  FailureOr<AttentionSpec> spec =
      analyseAttention(cast<PagedAttentionOp>(op), config,
                       getKernelFamily(config.getFamily()).traits);
  if (failed(spec))
    return failure();
  OpLaunches launches;
  FailureOr<KernelLaunch> main = kernels.get(*spec, op, family.buildAttention);
  if (failed(main))
    return failure();
  launches.main = *main;
  if (spec->split) {
    FailureOr<KernelLaunch> merge =
        kernels.get(spec->splitMerge(), op,
                    getKernelFamily(KernelFamily::Merge).buildMerge);
    if (failed(merge))
      return failure();
    launches.merge = *merge;
  }
  return launches;
}

/// The merge family: merge_state, merge_state_in_place, merge_states.
FailureOr<OpLaunches> lowerMerge(KernelSet &kernels, Operation *op,
                                 KernelConfigAttr config,
                                 const KernelFamilyEntry &family) {
  FailureOr<MergeSpec> spec = analyseMerge(op, config);
  if (failed(spec))
    return failure();
  FailureOr<KernelLaunch> main = kernels.get(*spec, op, family.buildMerge);
  if (failed(main))
    return failure();
  OpLaunches launches;
  launches.main = *main;
  return launches;
}

/// Whether the kernels of `family` run `op`: attention families attention,
/// the merge family the merge ops.
bool runs(const KernelFamilyEntry &family, Operation *op) {
  if (isa<PagedAttentionOp>(op))
    return family.buildAttention;
  return isa<MergeStateOp, MergeStateInPlaceOp, MergeStatesOp>(op) &&
         family.buildMerge;
}

/// The launches of `op` under `config`: the family of config
/// (FamilyRegistry.h), or, where that family does not run the op, the first
/// that does (whose analysis then rejects the config with a diagnostic).
FailureOr<OpLaunches> lowerOp(KernelSet &kernels, Operation *op,
                              KernelConfigAttr config) {
  const KernelFamilyEntry *row = nullptr;
  for (const KernelFamilyEntry &family : getKernelFamilies())
    if (runs(family, op) && (!row || family.family() == config.getFamily()))
      row = &family;
  if (!row)
    return op->emitError("no kernel family runs this op"), failure();
  if (row->buildAttention)
    return lowerAttention(kernels, op, config, *row);
  return lowerMerge(kernels, op, config, *row);
}

struct ConvertCascadeToGPUPass
    : mlir::cascade::impl::ConvertCascadeToGPUBase<ConvertCascadeToGPUPass> {
  using Base::Base;
  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (failed(checkLayouts(module)))
      return signalPassFailure();

    // One diagnostic per op that cannot be lowered.
    SmallVector<Operation *> ops;
    bool failedAny = false;
    module.walk([&](Operation *op) {
      if (!isa<CascadeDialect>(op->getDialect()) ||
          op->getParentOfType<gpu::GPUModuleOp>())
        return;
      if (isa<MultiLevelAttentionOp>(op)) {
        op->emitError(
            "run cascade-decompose-levels before convert-cascade-to-gpu");
        failedAny = true;
      } else if (llvm::any_of(op->getOperandTypes(),
                              [](Type t) { return isa<TensorType>(t); })) {
        op->emitError("convert-cascade-to-gpu lowers the buffer form of "
                      "cascade ops: bufferize first (one-shot-bufferize)");
        failedAny = true;
      } else {
        ops.push_back(op);
      }
    });
    if (failedAny)
      return signalPassFailure();
    if (ops.empty())
      return;

    moveKernelBuffersToDevice(module);
    auto helper = getContext()
                      .getLoadedDialect<CascadeDialect>()
                      ->getKernelConfigAttrHelper();
    // Ops without a configuration get the selection pass's defaults for the
    // chip (the option, an attached #nvvm.target, else sm_90), as if
    // cascade-select-kernel-config had run first.
    KernelConfigOptions defaults;
    FailureOr<const TargetInfo *> target = resolveSelectionTarget(module, chip);
    if (failed(target))
      return signalPassFailure();
    // griddepcontrol is sm_90's (PTX ISA 7.8).
    KernelSet kernels(module, (*target)->computeCapability >= 90);
    LaunchTable table;
    for (Operation *op : ops) {
      KernelConfigAttr config = helper.getAttr(op);
      if (!config) {
        FailureOr<KernelConfigAttr> c =
            selectKernelConfig(op, defaults, **target);
        if (failed(c)) {
          failedAny = true;
          continue;
        }
        config = *c;
      }
      FailureOr<OpLaunches> launches = lowerOp(kernels, op, config);
      if (failed(launches)) {
        failedAny = true;
        continue;
      }
      table[op] = *launches;
    }
    if (failedAny)
      return signalPassFailure();

    RewritePatternSet patterns(&getContext());
    populateCascadeLaunchPatterns(patterns, table);
    walkAndApplyPatterns(module, std::move(patterns));

    // Collect the manifest entries onto the module so they survive
    // gpu-module-to-binary.
    SmallVector<Attribute> entries;
    if (auto gm = module.lookupSymbol<gpu::GPUModuleOp>(kKernelModuleName))
      for (auto fn : gm.getOps<gpu::GPUFuncOp>())
        if (auto d = fn->getAttrOfType<DictionaryAttr>(kManifestAttrName))
          entries.push_back(d);
    if (!entries.empty())
      module->setAttr(kBundleAttrName, ArrayAttr::get(&getContext(), entries));
  }
};
} // namespace
