//===- PagedKV.cpp - Pages of a KV cache and their gathering --------------===//

#include "common/PagedKV.h"
#include "common/KernelArgs.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"

#include "llvm/Support/MathExtras.h"

using namespace mlir;
using namespace mlir::cascade;

RequestKv mlir::cascade::requestKv(KernelBuilder &k, Value kvIndptr,
                                   Value lastLen, Value req, int64_t pageSize,
                                   Value chunkSize, Value chunk) {
  RequestKv r;
  r.pageStart = k.toIndex(k.loadScalar(kvIndptr, req));
  Value pageEnd = k.toIndex(k.loadScalar(kvIndptr, k.add(req, k.idx(1))));
  Value pages = k.sub(pageEnd, r.pageStart);
  Value last = k.toIndex(k.loadScalar(lastLen, req));
  Value zero = k.idx(0);
  Value fullLen = k.add(k.mul(k.sub(pages, k.idx(1)), k.idx(pageSize)), last);
  r.kvLen = k.select(k.cmp(arith::CmpIPredicate::sgt, pages, k.idx(0)), fullLen,
                     zero);
  if (chunkSize) {
    Value cs = k.toIndex(k.loadScalar(chunkSize, k.idx(0)));
    r.t0 = k.mul(chunk, cs);
    r.t1 = k.minU(k.add(r.t0, cs), r.kvLen);
    r.t0 = k.minU(r.t0, r.t1);
  } else {
    r.t0 = k.idx(0);
    r.t1 = r.kvLen;
  }
  return r;
}

//===----------------------------------------------------------------------===//
// PagedKVLayout
//===----------------------------------------------------------------------===//

PagedKVLayout::PagedKVLayout(const AttentionSpec &spec,
                             const AttentionArgs &args)
    : pageSize(spec.pageSize),
      pageStrideArg(args.kvStrideN ? args.kvStrideN : args.kvStridePage),
      headStrideArg(args.kvStrideH) {
  int64_t d = spec.headDim;
  int64_t page = spec.pageSize * spec.numKvHeads * d;
  pageStride = spec.pool ? 2 * page : page;
  vOffset = spec.pool ? page : 0;
  tokenStride = spec.hnd ? d : spec.numKvHeads * d;
  headStride = spec.hnd ? spec.pageSize * d : d;
  if (!spec.splitHeadDims())
    return;
  // A pair whose v is narrower: V's strides by its own head_dim.
  int64_t dv = spec.headDimVo;
  ownV = true;
  vPageStride = spec.pageSize * spec.numKvHeads * dv;
  vTokenStride = spec.hnd ? dv : spec.numKvHeads * dv;
  vHeadStride = spec.hnd ? spec.pageSize * dv : dv;
  vPageStrideArg = args.vStrideN ? args.vStrideN : args.vStridePage;
  vHeadStrideArg = args.vStrideH;
}

Value PagedKVLayout::page(KernelBuilder &k, Value kvIndices, Value pageStart,
                          Value token) const {
  Value entry = k.add(pageStart, k.div(token, k.idx(pageSize)));
  // Without a page table the entry is the page (ragged K/V): no load.
  if (!kvIndices)
    return entry;
  return k.toIndex(k.loadScalar(kvIndices, entry));
}

/// A stride: the kernel argument where there is one, else the static.
static Value stride(KernelBuilder &k, Value arg, int64_t fixed) {
  return arg ? k.toIndex(arg) : k.idx(fixed);
}

/// page * stride (elements). With a stride argument: one mul.wide.s32 of
/// the page (an int32 page id, or a token of ragged K/V) and the stride's
/// low 32 bits (the runtime refuses strides beyond int32), as a constant
/// stride compiles. Left to instruction selection, the stride's sign
/// extension, hoisted out of the loops, hides its 32-bit origin and every
/// page address costs a 64 x 64-bit multiply.
static Value pageOffset(KernelBuilder &k, Value page, Value arg,
                        int64_t fixed) {
  if (!arg)
    return k.mul(page, k.idx(fixed));
  Value s32 = arith::TruncIOp::create(k.b, k.loc, k.b.getI32Type(), arg);
  Value wide =
      LLVM::InlineAsmOp::create(
          k.b, k.loc, k.b.getI64Type(), ValueRange{k.toI32(page), s32},
          "mul.wide.s32 $0, $1, $2;", "=l,r,r", /*has_side_effects=*/false,
          /*is_align_stack=*/false, LLVM::tailcallkind::TailCallKind::None,
          LLVM::AsmDialectAttr::get(k.b.getContext(), LLVM::AsmDialect::AD_ATT),
          ArrayAttr())
          .getResult(0);
  return k.toIndex(wide);
}

Value PagedKVLayout::pageBase(KernelBuilder &k, Value page) const {
  return pageOffset(k, k.toIndex(page), pageStrideArg, pageStride);
}

Value PagedKVLayout::tokenOffset(KernelBuilder &k, Value page, Value token,
                                 Value head) const {
  return k.add(k.add(pageOffset(k, page, pageStrideArg, pageStride),
                     k.mul(k.rem(token, k.idx(pageSize)), k.idx(tokenStride))),
               k.mul(head, stride(k, headStrideArg, headStride)));
}

Value PagedKVLayout::vTokenOffset(KernelBuilder &k, Value page, Value token,
                                  Value head, Value kOffset) const {
  if (!ownV)
    return vFromK(k, kOffset);
  return k.add(k.add(pageOffset(k, page, vPageStrideArg, vPageStride),
                     k.mul(k.rem(token, k.idx(pageSize)), k.idx(vTokenStride))),
               k.mul(head, stride(k, vHeadStrideArg, vHeadStride)));
}

Value PagedKVLayout::chunkOffset(KernelBuilder &k, Value page, Value slot,
                                 Value head, Value chunk,
                                 int64_t chunkElems) const {
  return k.add(k.add(pageOffset(k, page, pageStrideArg, pageStride),
                     k.mul(slot, k.idx(tokenStride))),
               k.add(k.mul(head, stride(k, headStrideArg, headStride)),
                     k.mul(chunk, k.idx(chunkElems))));
}

//===----------------------------------------------------------------------===//
// PagedKVRowGather
//===----------------------------------------------------------------------===//

PagedKVRowGather::PagedKVRowGather(const PagedKVLayout &layout,
                                   const KVSource &src, Value smemK,
                                   Value smemV, int64_t tile, int64_t headDim,
                                   int64_t lanes, int64_t numThreads, Value tid,
                                   int64_t elementBytes)
    : layout(layout), src(src), smemK(smemK), smemV(smemV), tid(tid),
      tile(tile), headDim(headDim), lanes(lanes), numThreads(numThreads),
      chunksPerThread(tile * lanes / numThreads), loc(tid.getLoc()) {
  chunkBytes = 8 * elementBytes;
  // One-byte elements: 16-byte chunks where they spread evenly.
  int64_t wide = 16 / elementBytes;
  if (elementBytes < 2 && headDim % wide == 0 &&
      (tile * (headDim / wide)) % numThreads == 0) {
    chunkElems = wide;
    chunkBytes = 16;
    this->lanes = headDim / wide;
    chunksPerThread = tile * this->lanes / numThreads;
  }
}

SmallVector<Value> PagedKVRowGather::lookupPages(OpBuilder &b, Value i) const {
  KernelBuilder k(b, loc);
  SmallVector<Value> pages;
  for (int64_t cc = 0; cc < chunksPerThread; ++cc) {
    Value ch = k.add(tid, k.idx(cc * numThreads));
    Value j = k.div(ch, k.idx(lanes));
    Value t = k.add(k.add(src.t0, k.mul(i, k.idx(tile))), j);
    Value valid = k.cmp(arith::CmpIPredicate::ult, t, src.t1);
    auto ifp =
        scf::IfOp::create(b, loc, TypeRange{b.getI32Type()}, valid, true);
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPointToStart(ifp.thenBlock());
    Value pg = layout.page(k, src.kvIndices, src.pageStart, t);
    scf::YieldOp::create(b, loc, k.toI32(pg));
    b.setInsertionPointToStart(ifp.elseBlock());
    scf::YieldOp::create(b, loc, k.i32(0));
    pages.push_back(ifp.getResult(0));
  }
  return pages;
}

Value PagedKVRowGather::issue(OpBuilder &b, Value i, Value stage,
                              ValueRange pages) const {
  KernelBuilder k(b, loc);
  SmallVector<Value> toks;
  for (int64_t cc = 0; cc < chunksPerThread; ++cc) {
    Value ch = k.add(tid, k.idx(cc * numThreads));
    Value j = k.div(ch, k.idx(lanes));
    Value p = k.rem(ch, k.idx(lanes));
    Value t = k.add(k.add(src.t0, k.mul(i, k.idx(tile))), j);
    Value valid = k.cmp(arith::CmpIPredicate::ult, t, src.t1);
    Value page = k.toIndex(pages[cc]);
    Value slot = k.select(valid, k.rem(t, k.idx(layout.pageSize)), k.idx(0));
    Value off = layout.chunkOffset(k, page, slot, src.kvHead, p, chunkElems);
    Value n = k.select(valid, k.idx(chunkElems), k.idx(0));
    Value stageBase = k.mul(stage, k.idx(tile * headDim));
    Value dst = k.add(stageBase, k.add(k.mul(j, k.idx(headDim)),
                                       k.mul(p, k.idx(chunkElems))));
    // An 8-byte chunk stays inside its 16-byte chunk under the swizzle.
    Value dstK =
        swizzleK
            ? k.add(stageBase, fp8KStagingOffset(
                                   k, j, k.mul(p, k.idx(chunkElems)), headDim))
            : dst;
    Value dstV =
        swizzleV
            ? k.add(stageBase, fp8VStagingOffset(
                                   k, j, k.mul(p, k.idx(chunkElems)), headDim))
            : dst;
    // cp.async.cg (bypassing L1) copies 16 bytes only.
    auto bypassL1 = chunkBytes == 16 ? b.getUnitAttr() : UnitAttr();
    toks.push_back(nvgpu::DeviceAsyncCopyOp::create(
        b, loc, smemK, ValueRange{dstK}, src.kCache, ValueRange{off},
        b.getIndexAttr(chunkElems), n, bypassL1));
    Value voff = layout.vFromK(k, off);
    toks.push_back(nvgpu::DeviceAsyncCopyOp::create(
        b, loc, smemV, ValueRange{dstV}, src.vCache, ValueRange{voff},
        b.getIndexAttr(chunkElems), n, bypassL1));
  }
  return nvgpu::DeviceAsyncCreateGroupOp::create(b, loc, toks).getResult();
}

Value mlir::cascade::fp8KStagingOffset(KernelBuilder &k, Value row,
                                       Value byteCol, int64_t headDim) {
  assert(headDim >= 16 && headDim <= 128 &&
         llvm::isPowerOf2_64(static_cast<uint64_t>(headDim)) &&
         "fp8 K staging rows of 16 to 128 bytes");
  int64_t chunks = headDim / 16;
  int64_t rowsPerLine = std::max<int64_t>(1, 8 / chunks);
  int64_t mask = std::min<int64_t>(chunks, 8) - 1;
  Value chunk = k.div(byteCol, k.idx(16));
  if (mask) {
    Value s = arith::AndIOp::create(k.b, k.loc, k.div(row, k.idx(rowsPerLine)),
                                    k.idx(mask));
    chunk = arith::XOrIOp::create(k.b, k.loc, chunk, s);
  }
  return k.add(k.mul(row, k.idx(headDim)),
               k.add(k.mul(chunk, k.idx(16)), k.rem(byteCol, k.idx(16))));
}

Value mlir::cascade::fp8VStagingOffset(KernelBuilder &k, Value row,
                                       Value byteCol, int64_t headDim) {
  assert((headDim == 32 || headDim == 64 || headDim == 128) &&
         "fp8 V staging rows of 32, 64 or 128 bytes");
  int64_t mask = (headDim / 16 - 1) & 6;
  Value chunk = k.div(byteCol, k.idx(16));
  if (mask)
    chunk = arith::XOrIOp::create(
        k.b, k.loc, chunk, arith::AndIOp::create(k.b, k.loc, row, k.idx(mask)));
  return k.add(k.mul(row, k.idx(headDim)),
               k.add(k.mul(chunk, k.idx(16)), k.rem(byteCol, k.idx(16))));
}

//===----------------------------------------------------------------------===//
// PagedKVTileGather
//===----------------------------------------------------------------------===//

PagedKVTileGather::PagedKVTileGather(KernelBuilder &k,
                                     const PagedKVLayout &layout,
                                     const KVSource &src, Value smem,
                                     const SmemTileLayout &tileLayout,
                                     SmemRing kRing, SmemRing vRing,
                                     int64_t headDim, int64_t vHeadDim,
                                     int64_t numThreads, Value tid)
    : k(k), layout(layout), src(src), smem(smem), tileLayout(tileLayout),
      kRing(kRing), vRing(vRing), headDim(headDim), vHeadDim(vHeadDim),
      copy(distributeTileCopy(k, tileLayout.rows, tileLayout.cols / 8,
                              numThreads, tid)) {}

SmallVector<Value> PagedKVTileGather::lookupPages(Value i) const {
  OpBuilder &b = k.b;
  Location loc = k.loc;
  // One branch for the tile (is any of its keys real?); inside it, rows past
  // t1 read the page of key t1 - 1 (in bounds) and are zeroed by a select.
  Value tileStart = k.add(src.t0, k.mul(i, k.idx(tileLayout.rows)));
  SmallVector<Type> types(copy.rows.size(), b.getI32Type());
  auto ifOp = scf::IfOp::create(
      b, loc, types, k.cmp(arith::CmpIPredicate::ult, tileStart, src.t1),
      /*withElse=*/true);
  OpBuilder::InsertionGuard g(b);
  b.setInsertionPointToStart(ifOp.thenBlock());
  SmallVector<Value> pages;
  Value lastKey = k.sub(src.t1, k.idx(1));
  for (Value row : copy.rows) {
    Value t = k.add(tileStart, row);
    Value page = k.toI32(
        layout.page(k, src.kvIndices, src.pageStart, k.minU(t, lastKey)));
    pages.push_back(
        k.select(k.cmp(arith::CmpIPredicate::ult, t, src.t1), page, k.i32(0)));
  }
  scf::YieldOp::create(b, loc, pages);
  b.setInsertionPointToStart(ifOp.elseBlock());
  scf::YieldOp::create(b, loc, SmallVector<Value>(types.size(), k.i32(0)));
  return SmallVector<Value>(ifOp.getResults());
}

void PagedKVTileGather::issue(Value i, Value stage,
                              ArrayRef<Value> pages) const {
  Value tileStart = k.add(src.t0, k.mul(i, k.idx(tileLayout.rows)));
  SmallVector<Value> offs, vOffs, valid;
  for (auto [row, page] : llvm::zip(copy.rows, pages)) {
    Value t = k.add(tileStart, row);
    valid.push_back(k.cmp(arith::CmpIPredicate::ult, t, src.t1));
    offs.push_back(layout.tokenOffset(k, k.toIndex(page), t, src.kvHead));
    vOffs.push_back(
        layout.vTokenOffset(k, k.toIndex(page), t, src.kvHead, offs.back()));
  }
  SmallVector<Value> tokens =
      issueTileCopy(k, smem, kRing.stage(k, stage), tileLayout, copy,
                    src.kCache, offs, valid, headDim / 8);
  // A narrower v fills its first columns; the rest of the V tile is zero.
  llvm::append_range(tokens, issueTileCopy(k, smem, vRing.stage(k, stage),
                                           tileLayout, copy, src.vCache, vOffs,
                                           valid, vHeadDim / 8));
  commitGroup(k, tokens);
}
