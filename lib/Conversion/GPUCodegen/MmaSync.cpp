//===- MmaSync.cpp - Building blocks of mma.sync kernels ------------------===//

#include "cascade/Conversion/GPUCodegen/MmaSync.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"

using namespace mlir;
using namespace mlir::cascade;

//===----------------------------------------------------------------------===//
// Shared memory
//===----------------------------------------------------------------------===//

SmemTileLayout SmemTileLayout::get(int64_t rows, int64_t cols) {
  assert(cols % 8 == 0 && "tiles are made of 16-byte chunks");
  SmemTileLayout l;
  l.rows = rows;
  l.cols = cols;
  l.swizzle = (cols / 8) % 8 == 0;
  l.rowStride = l.swizzle ? cols : cols + 8;
  return l;
}

SmemTileLayout SmemTileLayout::getPanels(int64_t rows, int64_t cols) {
  assert(cols % 64 == 0 && "panels are 64 elements (128 bytes) wide");
  SmemTileLayout l;
  l.rows = rows;
  l.cols = cols;
  l.swizzle = true;
  l.panels = true;
  l.rowStride = 64;
  return l;
}

Value SmemTileLayout::chunkOffset(KernelBuilder &k, Value row,
                                  Value chunk) const {
  if (panels) {
    // Panel chunk / 8, chunk (chunk % 8) ^ (row % 8) of the panel's row.
    Value inPanel =
        arith::XOrIOp::create(k.b, k.loc, k.rem(chunk, k.idx(8)),
                              arith::AndIOp::create(k.b, k.loc, row, k.idx(7)));
    return k.add(k.mul(k.div(chunk, k.idx(8)), k.idx(panelElements())),
                 k.add(k.mul(row, k.idx(64)), k.mul(inPanel, k.idx(8))));
  }
  Value c = chunk;
  if (swizzle)
    c = arith::XOrIOp::create(k.b, k.loc, chunk,
                              arith::AndIOp::create(k.b, k.loc, row, k.idx(7)));
  return k.add(k.mul(row, k.idx(rowStride)), k.mul(c, k.idx(8)));
}

Value SmemTileLayout::chunkOffset(KernelBuilder &k, Value row,
                                  int64_t chunk) const {
  return chunkOffset(k, row, k.idx(chunk));
}

// Fragment addresses are computed in 32 bits (shared memory is far below
// 4 GiB): the lane terms stay live in every tile loop, and 64-bit values
// would take twice the registers there.
static Value i32c(KernelBuilder &k, int64_t v) { return k.i32(v); }

Value SmemTileLayout::laneTerm(KernelBuilder &k, Value rl, Value cl) const {
  assert(!panels && "fragment loads read row-major tiles");
  Value r = k.toI32(rl), c = k.toI32(cl);
  if (swizzle)
    c = arith::XOrIOp::create(k.b, k.loc, c,
                              arith::AndIOp::create(k.b, k.loc, r, i32c(k, 7)));
  return k.add(k.mul(r, i32c(k, rowStride)), k.mul(c, i32c(k, 8)));
}

Value SmemTileLayout::fragmentOffset(KernelBuilder &k, Value tileBase,
                                     Value laneTerm, Value r0,
                                     int64_t c0) const {
  assert(c0 % 2 == 0 && "fragment loads start at an even chunk");
  Value base32 =
      k.add(k.toI32(tileBase), k.mul(k.toI32(r0), i32c(k, rowStride)));
  Value off;
  if (!swizzle) {
    off = k.add(base32, k.add(laneTerm, i32c(k, 8 * c0)));
  } else {
    // tileBase and r0 * rowStride are multiples of 64 elements (rows of a
    // multiple of 8 chunks): the xor only touches the lane part.
    off = k.add(base32, k.add(laneTerm, i32c(k, 64 * (c0 / 8))));
    if (c0 % 8 != 0)
      off = arith::XOrIOp::create(k.b, k.loc, off, i32c(k, 8 * (c0 % 8)));
  }
  return arith::IndexCastUIOp::create(k.b, k.loc, k.b.getIndexType(), off);
}

Value cascade::dynamicSharedMemory(KernelBuilder &k, gpu::GPUModuleOp module,
                                   Type elementType, int64_t byteOffset,
                                   int64_t count) {
  static constexpr StringLiteral kName = "cascade_dynamic_smem";
  MLIRContext *ctx = k.b.getContext();
  auto wg = gpu::AddressSpaceAttr::get(ctx, gpu::AddressSpace::Workgroup);
  auto bytesTy =
      MemRefType::get({0}, k.b.getI8Type(), MemRefLayoutAttrInterface(), wg);
  if (!module.lookupSymbol(kName)) {
    OpBuilder::InsertionGuard guard(k.b);
    k.b.setInsertionPointToStart(module.getBody());
    // Public and uninitialized: the NVPTX backend emits `.extern .shared
    // .align 1024 .b8 cascade_dynamic_smem[]`, the kernel's dynamic shared
    // memory (a private global would become a 1-byte static buffer).
    memref::GlobalOp::create(k.b, k.loc, kName, /*sym_visibility=*/nullptr,
                             bytesTy, /*initial_value=*/Attribute(),
                             /*constant=*/false, k.b.getI64IntegerAttr(1024));
  }
  Value g = memref::GetGlobalOp::create(k.b, k.loc, bytesTy, kName);
  auto dynTy = MemRefType::get({ShapedType::kDynamic}, k.b.getI8Type(),
                               MemRefLayoutAttrInterface(), wg);
  Value flat = memref::CastOp::create(k.b, k.loc, dynTy, g);
  auto viewTy =
      MemRefType::get({count}, elementType, MemRefLayoutAttrInterface(), wg);
  return memref::ViewOp::create(k.b, k.loc, viewTy, flat, k.idx(byteOffset),
                                ValueRange{});
}

//===----------------------------------------------------------------------===//
// Tile copies
//===----------------------------------------------------------------------===//

TileCopyPlan cascade::distributeTileCopy(KernelBuilder &k, int64_t rows,
                                         int64_t chunksPerRow,
                                         int64_t numThreads, Value tid) {
  TileCopyPlan plan;
  int64_t total = rows * chunksPerRow;
  int64_t passes = (total + numThreads - 1) / numThreads;
  bool regular = numThreads % chunksPerRow == 0;
  Value chunk = regular ? k.rem(tid, k.idx(chunksPerRow)) : Value();
  Value row0 = regular ? k.div(tid, k.idx(chunksPerRow)) : Value();
  Value trueV = arith::ConstantIntOp::create(k.b, k.loc, 1, 1);
  for (int64_t p = 0; p < passes; ++p) {
    Value id = k.add(tid, k.idx(p * numThreads));
    if (regular) {
      plan.rows.push_back(k.add(row0, k.idx(p * (numThreads / chunksPerRow))));
      plan.chunks.push_back(chunk);
    } else {
      plan.rows.push_back(k.div(id, k.idx(chunksPerRow)));
      plan.chunks.push_back(k.rem(id, k.idx(chunksPerRow)));
    }
    bool partial = (p + 1) * numThreads > total;
    plan.inRange.push_back(
        partial ? k.cmp(arith::CmpIPredicate::ult, id, k.idx(total)) : trueV);
  }
  return plan;
}

SmallVector<Value> cascade::issueTileCopy(
    KernelBuilder &k, Value smem, Value tileBase, const SmemTileLayout &layout,
    const TileCopyPlan &plan, Value src, ArrayRef<Value> srcRowOffsets,
    ArrayRef<Value> valid, int64_t validChunks, int64_t chunkElements) {
  // The layout counts 16-bit units (8 a chunk); `smem` and `src` elements
  // of chunkElements a chunk (16: bytes).
  int64_t scale = chunkElements / 8;
  SmallVector<Value> tokens;
  for (size_t p = 0; p < plan.rows.size(); ++p) {
    auto emit = [&](KernelBuilder &kk) {
      Value ok = valid[p];
      if (validChunks < layout.chunksPerRow())
        ok = arith::AndIOp::create(kk.b, kk.loc, ok,
                                   kk.cmp(arith::CmpIPredicate::ult,
                                          plan.chunks[p], kk.idx(validChunks)));
      Value srcOff =
          kk.select(ok,
                    kk.add(srcRowOffsets[p],
                           kk.mul(plan.chunks[p], kk.idx(chunkElements))),
                    kk.idx(0));
      Value dst = kk.add(tileBase,
                         layout.chunkOffset(kk, plan.rows[p], plan.chunks[p]));
      if (scale != 1)
        dst = kk.mul(dst, kk.idx(scale));
      Value n = kk.select(ok, kk.idx(chunkElements), kk.idx(0));
      return nvgpu::DeviceAsyncCopyOp::create(
                 kk.b, kk.loc, smem, ValueRange{dst}, src, ValueRange{srcOff},
                 kk.b.getIndexAttr(chunkElements), n, kk.b.getUnitAttr())
          .getResult();
    };
    auto inRange = plan.inRange[p].getDefiningOp<arith::ConstantIntOp>();
    if (inRange && inRange.value() == 1) {
      tokens.push_back(emit(k));
      continue;
    }
    // The last pass of an uneven tile: threads past the tile copy nothing
    // (a zero-filling copy would clobber the next tile).
    auto ifOp = scf::IfOp::create(k.b, k.loc, plan.inRange[p], false);
    OpBuilder::InsertionGuard guard(k.b);
    k.b.setInsertionPointToStart(ifOp.thenBlock());
    emit(k);
  }
  return tokens;
}

Value cascade::commitGroup(KernelBuilder &k, ArrayRef<Value> tokens) {
  return nvgpu::DeviceAsyncCreateGroupOp::create(k.b, k.loc, tokens);
}

void cascade::waitGroups(KernelBuilder &k, Value group, int64_t pending) {
  nvgpu::DeviceAsyncWaitOp::create(k.b, k.loc, group,
                                   k.b.getI32IntegerAttr(pending));
}

//===----------------------------------------------------------------------===//
// MmaBuilder
//===----------------------------------------------------------------------===//

MmaBuilder::MmaBuilder(KernelBuilder &k, Type elementType, Value lane)
    : k(k), elementType(elementType), lane(lane) {
  assert((elementType.isF16() || elementType.isBF16()) &&
         "mma.sync operands are f16 or bf16");
  // The lane -> row-address maps of mma::LdMatrix: matrix m = lane / 8,
  // row in matrix = lane % 8.
  Value l8 = k.rem(lane, k.idx(8)), l16 = k.rem(lane, k.idx(16));
  Value hi = k.div(lane, k.idx(16)),
        mid = k.rem(k.div(lane, k.idx(8)), k.idx(2));
  // A: row lane % 16, chunk lane / 16.
  aLane = {l16, hi};
  // B from [n][k]: row lane % 8 + 8 * (lane / 16), chunk (lane / 8) % 2.
  nkLane = {k.add(l8, k.mul(hi, k.idx(8))), mid};
  // B from [k][n] (transposed): row lane % 16, chunk lane / 16.
  knLane = {l16, hi};
}

VectorType MmaBuilder::aType() const {
  return VectorType::get({4, 2}, elementType);
}
VectorType MmaBuilder::bType() const {
  return VectorType::get({2, 2}, elementType);
}
VectorType MmaBuilder::accType() const {
  return VectorType::get({2, 2}, k.b.getF32Type());
}

Value MmaBuilder::zeroAccumulator() {
  VectorType t = accType();
  return arith::ConstantOp::create(
      k.b, k.loc, t, DenseElementsAttr::get(t, k.b.getF32FloatAttr(0.0f)));
}

Value MmaBuilder::ldmatrix(Value smem, Value offset, bool transpose) {
  return nvgpu::LdMatrixOp::create(k.b, k.loc, aType(), smem,
                                   ValueRange{offset}, transpose,
                                   /*numTiles=*/4);
}

Value MmaBuilder::loadA(Value smem, Value tileBase,
                        const SmemTileLayout &layout, Value row0,
                        int64_t col0) {
  Value lt = layout.laneTerm(k, aLane.first, aLane.second);
  return ldmatrix(smem, layout.fragmentOffset(k, tileBase, lt, row0, col0 / 8),
                  /*transpose=*/false);
}

static std::pair<Value, Value> splitPairs(KernelBuilder &k, Value x4) {
  // Register pairs 0-1 and 2-3 of an x4 load (a shuffle along the leading
  // dimension lowers to plain register moves).
  auto half = [&](int64_t first) {
    return vector::ShuffleOp::create(k.b, k.loc, x4, x4,
                                     ArrayRef<int64_t>{first, first + 1})
        .getResult();
  };
  return {half(0), half(2)};
}

std::pair<Value, Value> MmaBuilder::loadBFromNK(Value smem, Value tileBase,
                                                const SmemTileLayout &layout,
                                                Value n0, int64_t k0) {
  Value lt = layout.laneTerm(k, nkLane.first, nkLane.second);
  return splitPairs(
      k, ldmatrix(smem, layout.fragmentOffset(k, tileBase, lt, n0, k0 / 8),
                  /*transpose=*/false));
}

std::pair<Value, Value> MmaBuilder::loadBFromKN(Value smem, Value tileBase,
                                                const SmemTileLayout &layout,
                                                Value k0, int64_t n0) {
  Value lt = layout.laneTerm(k, knLane.first, knLane.second);
  return splitPairs(
      k, ldmatrix(smem, layout.fragmentOffset(k, tileBase, lt, k0, n0 / 8),
                  /*transpose=*/true));
}

/// The i32 registers of a fragment of 16-bit pairs.
static SmallVector<Value> packPairs(KernelBuilder &k, Value frag) {
  auto vt = cast<VectorType>(frag.getType());
  SmallVector<Value> regs;
  auto pairTy = VectorType::get({2}, vt.getElementType());
  auto i32x1 = VectorType::get({1}, k.b.getI32Type());
  for (int64_t r = 0; r < vt.getDimSize(0); ++r) {
    Value pair = vector::ExtractOp::create(k.b, k.loc, frag, r);
    (void)pairTy;
    Value bits = vector::BitCastOp::create(k.b, k.loc, i32x1, pair);
    regs.push_back(vector::ExtractOp::create(k.b, k.loc, bits, 0));
  }
  return regs;
}

Value MmaBuilder::mma(Value a, Value b, Value acc) {
  if (elementType.isF16())
    return nvgpu::MmaSyncOp::create(k.b, k.loc, a, b, acc,
                                    ArrayRef<int64_t>{16, 8, 16});
  // nvgpu.mma.sync cannot type bf16 operands: use nvvm.mma.sync on the
  // packed registers.
  SmallVector<Value> c;
  for (int64_t r = 0; r < 2; ++r)
    for (int64_t e = 0; e < 2; ++e)
      c.push_back(accumulatorElement(k, acc, r, e));
  Type f32 = k.b.getF32Type();
  auto resTy =
      LLVM::LLVMStructType::getLiteral(k.b.getContext(), {f32, f32, f32, f32});
  auto op = NVVM::MmaOp::create(
      k.b, k.loc, resTy, packPairs(k, a), packPairs(k, b), c, {16, 8, 16},
      std::nullopt, std::nullopt,
      std::array<NVVM::MMATypes, 2>{NVVM::MMATypes::bf16, NVVM::MMATypes::bf16},
      std::array<NVVM::MMALayout, 2>{NVVM::MMALayout::row,
                                     NVVM::MMALayout::col});
  SmallVector<Value> d;
  for (int64_t i = 0; i < 4; ++i)
    d.push_back(LLVM::ExtractValueOp::create(k.b, k.loc, op.getRes(), i));
  return vector::FromElementsOp::create(k.b, k.loc, accType(), d);
}

Value MmaBuilder::accumulatorsToA(Value acc0, Value acc1) {
  auto t = VectorType::get({2, 2}, elementType);
  Value p0 = arith::TruncFOp::create(k.b, k.loc, t, acc0);
  Value p1 = arith::TruncFOp::create(k.b, k.loc, t, acc1);
  // Pairs (0, 1) of the A fragment are acc0's rows, (2, 3) acc1's
  // (mma::accumulatorOfAPair).
  return vector::ShuffleOp::create(k.b, k.loc, p0, p1,
                                   ArrayRef<int64_t>{0, 1, 2, 3});
}

//===----------------------------------------------------------------------===//
// Accumulator rows
//===----------------------------------------------------------------------===//

Value cascade::accumulatorElement(KernelBuilder &k, Value frag, int64_t pair,
                                  int64_t half) {
  return vector::ExtractOp::create(k.b, k.loc, frag,
                                   ArrayRef<int64_t>{pair, half});
}

RowPair cascade::rowReduceInThread(KernelBuilder &k, ArrayRef<Value> frags,
                                   bool max) {
  RowPair out;
  for (int64_t r = 0; r < 2; ++r) {
    Value acc;
    for (Value f : frags)
      for (int64_t e = 0; e < 2; ++e) {
        Value x = accumulatorElement(k, f, r, e);
        acc = !acc ? x : max ? k.fmax(acc, x) : k.fadd(acc, x);
      }
    out[r] = acc;
  }
  return out;
}

Value cascade::quadAllReduce(KernelBuilder &k, Value x, bool max) {
  for (int64_t mask : mma::Accumulator::kRowShuffleMasks) {
    Value o =
        gpu::ShuffleOp::create(k.b, k.loc, x, int32_t(mask),
                               int32_t(mma::kWarpSize), gpu::ShuffleMode::XOR)
            .getShuffleResult();
    x = max ? k.fmax(x, o) : k.fadd(x, o);
  }
  return x;
}

RowPair cascade::rowReduce(KernelBuilder &k, ArrayRef<Value> frags, bool max) {
  RowPair r = rowReduceInThread(k, frags, max);
  return {quadAllReduce(k, r[0], max), quadAllReduce(k, r[1], max)};
}

Value cascade::mapAccumulator(KernelBuilder &k, Value frag,
                              function_ref<Value(Value, int64_t, int64_t)> fn) {
  SmallVector<Value> els;
  for (int64_t r = 0; r < 2; ++r)
    for (int64_t e = 0; e < 2; ++e)
      els.push_back(fn(accumulatorElement(k, frag, r, e), r, e));
  return vector::FromElementsOp::create(k.b, k.loc,
                                        cast<VectorType>(frag.getType()), els);
}

static Value warpVote(KernelBuilder &k, Value pred, NVVM::VoteSyncKind kind) {
  return NVVM::VoteSyncOp::create(
      k.b, k.loc, k.b.getI1Type(), k.i32(-1), pred,
      NVVM::VoteSyncKindAttr::get(k.b.getContext(), kind));
}

Value cascade::warpAny(KernelBuilder &k, Value pred) {
  return warpVote(k, pred, NVVM::VoteSyncKind::any);
}

Value cascade::warpAll(KernelBuilder &k, Value pred) {
  return warpVote(k, pred, NVVM::VoteSyncKind::all);
}

Value cascade::scaleRows(KernelBuilder &k, Value frag, const RowPair &scale) {
  auto t = cast<VectorType>(frag.getType());
  Value s = vector::FromElementsOp::create(
      k.b, k.loc, t, ValueRange{scale[0], scale[0], scale[1], scale[1]});
  return k.fmul(frag, s);
}
