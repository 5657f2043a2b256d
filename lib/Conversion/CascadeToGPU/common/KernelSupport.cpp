//===- KernelSupport.cpp - Kernel modules, launches and manifests ---------===//

#include "common/KernelSupport.h"

#include "mlir/Dialect/LLVMIR/NVVMDialect.h"

using namespace mlir;
using namespace mlir::cascade;

//===----------------------------------------------------------------------===//
// Host side
//===----------------------------------------------------------------------===//

MemRefType cascade::flatMemRefType(Type et) {
  MLIRContext *ctx = et.getContext();
  return MemRefType::get(
      {ShapedType::kDynamic}, et,
      StridedLayoutAttr::get(ctx, ShapedType::kDynamic, {1}));
}

std::pair<Value, Value> cascade::flattenContiguous(OpBuilder &b, Location loc,
                                                   Value m) {
  auto mt = cast<MemRefType>(m.getType());
  auto md = memref::ExtractStridedMetadataOp::create(b, loc, m);
  Value n = arith::ConstantIndexOp::create(b, loc, 1);
  for (int64_t i = 0; i < mt.getRank(); ++i)
    n = arith::MulIOp::create(b, loc, n, md.getSizes()[i]);
  auto flatTy = flatMemRefType(mt.getElementType());
  Value flat = memref::ReinterpretCastOp::create(
      b, loc, flatTy, md.getBaseBuffer(), OpFoldResult(md.getOffset()),
      ArrayRef<OpFoldResult>{OpFoldResult(n)},
      ArrayRef<OpFoldResult>{OpFoldResult(b.getIndexAttr(1))});
  return {flat, n};
}

std::tuple<Value, Value, Value>
cascade::flattenStrided1D(OpBuilder &b, Location loc, Value m) {
  auto mt = cast<MemRefType>(m.getType());
  auto md = memref::ExtractStridedMetadataOp::create(b, loc, m);
  Value n = md.getSizes()[0], stride = md.getStrides()[0];
  Value c0 = arith::ConstantIndexOp::create(b, loc, 0);
  Value c1 = arith::ConstantIndexOp::create(b, loc, 1);
  Value span = arith::AddIOp::create(
      b, loc,
      arith::MulIOp::create(b, loc, arith::SubIOp::create(b, loc, n, c1),
                            stride),
      c1);
  Value isEmpty =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, n, c0);
  span = arith::SelectOp::create(b, loc, isEmpty, c0, span);
  auto flatTy = flatMemRefType(mt.getElementType());
  Value flat = memref::ReinterpretCastOp::create(
      b, loc, flatTy, md.getBaseBuffer(), OpFoldResult(md.getOffset()),
      ArrayRef<OpFoldResult>{OpFoldResult(span)},
      ArrayRef<OpFoldResult>{OpFoldResult(b.getIndexAttr(1))});
  return {flat, n, stride};
}

Value cascade::flattenSpanned(OpBuilder &b, Location loc, Value m) {
  auto mt = cast<MemRefType>(m.getType());
  auto md = memref::ExtractStridedMetadataOp::create(b, loc, m);
  Value c0 = arith::ConstantIndexOp::create(b, loc, 0);
  Value c1 = arith::ConstantIndexOp::create(b, loc, 1);
  Value span = c1, empty = arith::ConstantIntOp::create(b, loc, 0, 1);
  for (int64_t i = 0; i < mt.getRank(); ++i) {
    Value n = md.getSizes()[i];
    span = arith::AddIOp::create(
        b, loc, span,
        arith::MulIOp::create(b, loc, arith::SubIOp::create(b, loc, n, c1),
                              md.getStrides()[i]));
    empty = arith::OrIOp::create(
        b, loc, empty,
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, n, c0));
  }
  span = arith::SelectOp::create(b, loc, empty, c0, span);
  return memref::ReinterpretCastOp::create(
      b, loc, flatMemRefType(mt.getElementType()), md.getBaseBuffer(),
      OpFoldResult(md.getOffset()), ArrayRef<OpFoldResult>{OpFoldResult(span)},
      ArrayRef<OpFoldResult>{OpFoldResult(b.getIndexAttr(1))});
}

gpu::GPUModuleOp cascade::getOrCreateKernelModule(ModuleOp module) {
  module->setAttr(gpu::GPUDialect::getContainerModuleAttrName(),
                  UnitAttr::get(module.getContext()));
  if (auto gm = module.lookupSymbol<gpu::GPUModuleOp>(kKernelModuleName))
    return gm;
  OpBuilder b(module.getContext());
  b.setInsertionPointToEnd(module.getBody());
  return gpu::GPUModuleOp::create(b, module.getLoc(), kKernelModuleName);
}

gpu::GPUFuncOp cascade::createKernel(
    gpu::GPUModuleOp gm, StringRef name, ArrayRef<KernelParam> params,
    ArrayRef<int64_t> block, DictionaryAttr manifest,
    llvm::function_ref<void(OpBuilder &, gpu::GPUFuncOp)> bodyBuilder,
    bool gridDependencies) {
  OpBuilder b(gm.getContext());
  b.setInsertionPoint(gm.getBody(), gm.getBody()->end());
  SmallVector<Type> types;
  for (const KernelParam &p : params)
    types.push_back(p.type);
  auto fn = gpu::GPUFuncOp::create(b, gm.getLoc(), name,
                                   b.getFunctionType(types, {}));
  fn->setAttr(gpu::GPUDialect::getKernelFuncAttrName(), b.getUnitAttr());
  fn.setKnownBlockSizeAttr(b.getDenseI32ArrayAttr(
      {int32_t(block[0]), int32_t(block[1]), int32_t(block[2])}));
  if (gridDependencies) {
    NamedAttrList entries(manifest);
    entries.set("pdl", b.getBoolAttr(true));
    manifest = entries.getDictionary(gm.getContext());
  }
  fn->setAttr(kManifestAttrName, manifest);
  Block &entry = fn.getBody().front();
  b.setInsertionPointToStart(&entry);
  if (gridDependencies) {
    NVVM::GriddepcontrolOp::create(b, gm.getLoc(),
                                   NVVM::GridDepActionKind::wait);
    NVVM::GriddepcontrolOp::create(b, gm.getLoc(),
                                   NVVM::GridDepActionKind::launch_dependents);
  }
  bodyBuilder(b, fn);
  b.setInsertionPointToEnd(&fn.getBody().back());
  gpu::ReturnOp::create(b, gm.getLoc());
  return fn;
}

Attribute cascade::gridRule(MLIRContext *ctx, StringRef param, int64_t div,
                            int64_t mul, StringRef add) {
  Builder b(ctx);
  SmallVector<NamedAttribute> f{
      b.getNamedAttr("param", b.getStringAttr(param)),
      b.getNamedAttr("div", b.getI64IntegerAttr(div))};
  if (mul != 1)
    f.push_back(b.getNamedAttr("mul", b.getI64IntegerAttr(mul)));
  if (!add.empty())
    f.push_back(b.getNamedAttr("add", b.getStringAttr(add)));
  return b.getDictionaryAttr(f);
}

DictionaryAttr cascade::makeManifest(MLIRContext *ctx, StringRef name,
                                     StringRef op, ArrayRef<int64_t> block,
                                     ArrayRef<Attribute> grid, int64_t dynSmem,
                                     ArrayRef<NamedAttribute> statics,
                                     ArrayRef<KernelParam> params,
                                     ArrayRef<StringRef> planArrays) {
  Builder b(ctx);
  SmallVector<Attribute> ps;
  for (const KernelParam &p : params) {
    SmallVector<NamedAttribute> f{
        b.getNamedAttr("name", b.getStringAttr(p.name)),
        b.getNamedAttr("kind", b.getStringAttr(p.kind))};
    if (p.kind == "memref")
      f.push_back(b.getNamedAttr(
          "dtype", b.getStringAttr(
                       dtypeName(cast<MemRefType>(p.type).getElementType()))));
    if (p.defaultValue)
      f.push_back(
          b.getNamedAttr("default", b.getI64IntegerAttr(*p.defaultValue)));
    ps.push_back(b.getDictionaryAttr(f));
  }
  SmallVector<Attribute> pa;
  for (StringRef s : planArrays)
    pa.push_back(b.getStringAttr(s));
  return b.getDictionaryAttr({
      b.getNamedAttr("name", b.getStringAttr(name)),
      b.getNamedAttr("ptx", b.getStringAttr("kernels.ptx")),
      b.getNamedAttr("op", b.getStringAttr(op)),
      b.getNamedAttr("block", b.getI64ArrayAttr(block)),
      b.getNamedAttr("grid", b.getArrayAttr(grid)),
      b.getNamedAttr("dynamic_shared_bytes", b.getI64IntegerAttr(dynSmem)),
      b.getNamedAttr("static", b.getDictionaryAttr(statics)),
      b.getNamedAttr("params", b.getArrayAttr(ps)),
      b.getNamedAttr("plan_arrays", b.getArrayAttr(pa)),
  });
}
