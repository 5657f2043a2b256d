//===- WgmmaKVGather.cpp - The wgmma producer's paged K/V gather ----------===//

#include "wgmma/WgmmaKVGather.h"
#include "wgmma/WgmmaTraits.h"

#include "cascade/Conversion/GPUCodegen/Fp8Convert.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"

using namespace mlir;
using namespace mlir::cascade;

/// Passes of the producer's gather unrolled per loop iteration.
static constexpr int64_t kGatherUnroll = 4;

WgmmaKVGather::WgmmaKVGather(KernelBuilder &k, const PagedKVLayout &layout,
                             const KVSource &src, Value smem,
                             const MmaTiles &tiles, Value tid, Value stagingK,
                             Value stagingV, Value smem8)
    : k(k), layout(layout), src(src), smem(smem), tid(tid), stagingK(stagingK),
      stagingV(stagingV), smem8(smem8), tiles(tiles) {
  assert((tiles.fp8Operands ? stagingV && smem8 && !stagingK
                            : !stagingK == !stagingV) &&
         "fp8: K and V staging rings; fp8 operands: V's and the byte view");
}

int64_t WgmmaKVGather::chunksPerRow() const {
  return tiles.dp / (fp8Bytes() ? 16 : 8);
}

int64_t WgmmaKVGather::rowsPerPass() const {
  return kWgmmaProducerThreads / chunksPerRow();
}

int64_t WgmmaKVGather::passes() const {
  assert(kWgmmaProducerThreads % chunksPerRow() == 0 &&
         tiles.kvTile % rowsPerPass() == 0 &&
         "the producer's passes tile the KV tile");
  return tiles.kvTile / rowsPerPass();
}

int64_t WgmmaKVGather::unroll() const {
  int64_t u = std::min(kGatherUnroll, passes());
  while (passes() % u != 0)
    u /= 2;
  return u;
}

void WgmmaKVGather::issueOwnWidths(Value i, Value stage,
                                   WgmmaKVPart part) const {
  const MmaTiles &t = tiles;
  Value tileStart = k.add(src.t0, k.mul(i, k.idx(t.kvTile)));
  Value lastKey = k.sub(src.t1, k.idx(1));
  Value sub = k.div(tid, k.idx(8));
  Value inPanel = k.rem(tid, k.idx(8));
  auto copyRows = [&](bool isV) {
    int64_t panels = (isV ? t.dvp : t.dp) / 64;
    int64_t passes = t.kvTile * panels / 16;
    int64_t n = std::min(kGatherUnroll, passes);
    while (passes % n != 0)
      n /= 2;
    Value base = isV ? t.vRing().stage(k, stage) : t.kRing().stage(k, stage);
    Value cache = isV ? src.vCache : src.kCache;
    scf::ForOp::create(
        k.b, k.loc, k.idx(0), k.idx(passes), k.idx(n), ValueRange{},
        [&](OpBuilder &lb, Location, Value p0, ValueRange) {
          OpBuilder::InsertionGuard lg(k.b);
          k.b.setInsertionPoint(lb.getInsertionBlock(), lb.getInsertionPoint());
          for (int64_t u = 0; u < n; ++u) {
            Value rp = k.add(k.mul(k.add(p0, k.idx(u)), k.idx(16)), sub);
            Value row = k.div(rp, k.idx(panels));
            Value chunk =
                k.add(k.mul(k.rem(rp, k.idx(panels)), k.idx(8)), inPanel);
            Value key = k.add(tileStart, row);
            Value valid = k.cmp(arith::CmpIPredicate::ult, key, src.t1);
            // Rows past t1 read the last key's page with a source size of
            // 0: the chunk is zero-filled.
            Value inRange = k.minU(key, lastKey);
            Value page = layout.page(k, src.kvIndices, src.pageStart, inRange);
            // V's rows: by V's own strides (a narrower v), else K's offset
            // in the pool or pair.
            Value token =
                isV && layout.ownV
                    ? layout.vTokenOffset(k, page, inRange, src.kvHead, {})
                    : layout.tokenOffset(k, page, inRange, src.kvHead);
            if (isV && !layout.ownV)
              token = layout.vFromK(k, token);
            Value off = k.add(token, k.mul(chunk, k.idx(8)));
            Value dst = k.add(
                base,
                (isV ? t.vLayout : t.kvLayout).chunkOffset(k, row, chunk));
            Value bytes = k.select(valid, k.idx(8), k.idx(0));
            nvgpu::DeviceAsyncCopyOp::create(
                k.b, k.loc, smem, ValueRange{dst}, cache, ValueRange{off},
                k.b.getIndexAttr(8), bytes, k.b.getUnitAttr());
          }
          scf::YieldOp::create(k.b, k.loc);
        });
  };
  if (part != WgmmaKVPart::V)
    copyRows(/*isV=*/false);
  if (part != WgmmaKVPart::K)
    copyRows(/*isV=*/true);
  NVVM::CpAsyncCommitGroupOp::create(k.b, k.loc);
}

void WgmmaKVGather::issue(Value i, Value stage, WgmmaKVPart part) const {
  const MmaTiles &t = tiles;
  if (!fp8Bytes() && wgmmaOwnWidths(t.dp, t.dvp)) {
    issueOwnWidths(i, stage, part);
    return;
  }
  // fp8 operands: K straight into its ring stage (the fp8 panel form wgmma
  // reads, through `smem8`), V into its staging slot (transposeV turns it
  // into the ring's form).
  bool operands = t.fp8Operands;
  assert((!operands || part == WgmmaKVPart::KV) &&
         "fp8 operands: one K/V ring");
  int64_t chunks = chunksPerRow(), rows = rowsPerPass(), n = unroll();
  // Elements of a 16-byte chunk: 8 of q's dtype, 16 fp8.
  int64_t elems = fp8Bytes() ? 16 : 8;
  Value chunk = k.rem(tid, k.idx(chunks));
  Value row0 = k.div(tid, k.idx(chunks));
  Value tileStart = k.add(src.t0, k.mul(i, k.idx(t.kvTile)));
  Value lastKey = k.sub(src.t1, k.idx(1));
  // Destinations: the panel stages, or the fp8 staging stages.
  Value kDst = smem, vDst = smem, kBase, vBase;
  if (operands) {
    kDst = smem8;
    vDst = stagingV;
    kBase = t.kRing().stage(k, stage);
  } else if (fp8()) {
    kDst = stagingK;
    vDst = stagingV;
    kBase = vBase = k.mul(stage, k.idx(t.kvTile * t.dp));
  } else {
    kBase = t.kRing().stage(k, stage);
    vBase = t.vRing().stage(k, stage);
  }
  scf::ForOp::create(
      k.b, k.loc, k.idx(0), k.idx(passes()), k.idx(n), ValueRange{},
      [&](OpBuilder &lb, Location, Value p0, ValueRange) {
        OpBuilder::InsertionGuard lg(k.b);
        k.b.setInsertionPoint(lb.getInsertionBlock(), lb.getInsertionPoint());
        for (int64_t u = 0; u < n; ++u) {
          Value row = k.add(k.mul(k.add(p0, k.idx(u)), k.idx(rows)), row0);
          Value key = k.add(tileStart, row);
          Value valid = k.cmp(arith::CmpIPredicate::ult, key, src.t1);
          // Rows past t1 read the page of the last key (in bounds) with a
          // source size of 0: the chunk is zero-filled.
          Value inRange = k.minU(key, lastKey);
          Value page = layout.page(k, src.kvIndices, src.pageStart, inRange);
          Value kOff = k.add(layout.tokenOffset(k, page, inRange, src.kvHead),
                             k.mul(chunk, k.idx(elems)));
          Value dst;
          if (!operands)
            dst = fp8() ? k.add(k.mul(row, k.idx(t.dp)),
                                k.mul(chunk, k.idx(elems)))
                        : t.kvLayout.chunkOffset(k, row, chunk);
          Value bytes = k.select(valid, k.idx(elems), k.idx(0));
          // The element offset of a part's chunk in its destination.
          auto at = [&](bool isK, Value base) -> Value {
            if (!operands)
              return k.add(base, dst);
            if (!isK)
              return vStagingOffset(stage, row, chunk);
            return k.mul(k.add(base, t.kvLayout.chunkOffset(k, row, chunk)),
                         k.idx(2));
          };
          SmallVector<std::tuple<bool, Value, Value, Value, Value>, 2> copies;
          if (part != WgmmaKVPart::V)
            copies.push_back({true, kDst, kBase, src.kCache, kOff});
          if (part != WgmmaKVPart::K)
            copies.push_back(
                {false, vDst, vBase, src.vCache, layout.vFromK(k, kOff)});
          for (auto [isK, to, base, cache, off] : copies)
            nvgpu::DeviceAsyncCopyOp::create(
                k.b, k.loc, to, ValueRange{at(isK, base)}, cache,
                ValueRange{off}, k.b.getIndexAttr(elems), bytes,
                k.b.getUnitAttr());
        }
        scf::YieldOp::create(k.b, k.loc);
      });
  NVVM::CpAsyncCommitGroupOp::create(k.b, k.loc);
}

SmallVector<Value> WgmmaKVGather::lookupPages(Value i) const {
  assert(supportsLookahead() && "page lookahead of a 16-bit paged gather");
  const MmaTiles &t = tiles;
  // Lane l of each producer warp holds the id of page l of the tile's page
  // list (from the page of its first key; the last key's page past t1):
  // one register a thread, where a page a pass would take `passes()` (and
  // spill from the producer's 40 at 12 or more). Keys of one request fit
  // 32 bits (the plan's kv lengths are int32): the arithmetic is 32-bit.
  Value lane = k.toI32(k.rem(tid, k.idx(32)));
  Value tileStart = k.toI32(k.add(src.t0, k.mul(i, k.idx(t.kvTile))));
  Value lastPage =
      k.div(k.toI32(k.sub(src.t1, k.idx(1))), k.i32(layout.pageSize));
  Value first = k.div(tileStart, k.i32(layout.pageSize));
  Value entry =
      k.add(k.toI32(src.pageStart), k.minU(k.add(first, lane), lastPage));
  return {k.loadScalar(src.kvIndices, k.toIndex(entry))};
}

void WgmmaKVGather::issueLooked(Value i, Value stage, ValueRange pages) const {
  assert(supportsLookahead() && pages.size() == 1 && "the lane's page id");
  const MmaTiles &t = tiles;
  assert(t.kvTile / layout.pageSize + 1 <= 32 &&
         "a tile's pages fit a warp's lanes");
  int64_t chunks = chunksPerRow(), rows = rowsPerPass();
  Value chunk = k.rem(tid, k.idx(chunks));
  Value row0 = k.div(tid, k.idx(chunks));
  Value tileStart = k.toI32(k.add(src.t0, k.mul(i, k.idx(t.kvTile))));
  Value first = k.div(tileStart, k.i32(layout.pageSize));
  Value end = k.toI32(src.t1);
  Value lastKey = k.sub(end, k.i32(1));
  // The chunk's element offset within a token's row of its head (static
  // strides: a paged 16-bit cache).
  Value headChunk = k.add(k.mul(k.toI32(src.kvHead), k.i32(layout.headStride)),
                          k.mul(k.toI32(chunk), k.i32(8)));
  Value kBase = t.kRing().stage(k, stage), vBase = t.vRing().stage(k, stage);
  for (int64_t p = 0; p < passes(); ++p) {
    Value row = k.add(k.idx(p * rows), row0);
    Value key = k.add(tileStart, k.toI32(row));
    Value valid = k.cmp(arith::CmpIPredicate::ult, key, end);
    Value inRange = k.minU(key, lastKey);
    // The lane holding this key's page (the whole warp shuffles: every
    // producer thread runs every pass).
    Value srcLane = k.sub(k.div(inRange, k.i32(layout.pageSize)), first);
    Value page = gpu::ShuffleOp::create(k.b, k.loc, pages[0], srcLane,
                                        k.i32(32), gpu::ShuffleMode::IDX)
                     .getShuffleResult();
    Value slot = k.rem(inRange, k.i32(layout.pageSize));
    Value inPage = k.add(k.mul(slot, k.i32(layout.tokenStride)), headChunk);
    Value kOff = k.add(layout.pageBase(k, page), k.toIndex(inPage));
    Value dst = t.kvLayout.chunkOffset(k, row, chunk);
    Value bytes = k.select(valid, k.idx(8), k.idx(0));
    for (auto [base, cache, off] :
         {std::tuple(kBase, src.kCache, kOff),
          std::tuple(vBase, src.vCache, layout.vFromK(k, kOff))})
      nvgpu::DeviceAsyncCopyOp::create(
          k.b, k.loc, smem, ValueRange{k.add(base, dst)}, cache,
          ValueRange{off}, k.b.getIndexAttr(8), bytes, k.b.getUnitAttr());
  }
  NVVM::CpAsyncCommitGroupOp::create(k.b, k.loc);
}

void WgmmaKVGather::convertStaged(Value stage, Type to) const {
  assert(fp8() && "conversion of fp8 staging tiles");
  const MmaTiles &t = tiles;
  int64_t chunks = chunksPerRow(), rows = rowsPerPass();
  Type fp8Type = cast<MemRefType>(stagingK.getType()).getElementType();
  Value chunk = k.rem(tid, k.idx(chunks));
  Value row0 = k.div(tid, k.idx(chunks));
  Value stagingBase = k.mul(stage, k.idx(t.kvTile * t.dp));
  // fp8 chunk c becomes the 8-element chunks 2c and 2c + 1 of the panel row.
  // At head_dim >= 128 the 8 threads of a store phase share a row: those in
  // odd panels store their odd chunk first, so that each store instruction
  // of the phase covers all eight 16-byte bank groups (else the chunks of
  // two panels collide pairwise). At 64 a phase spans two rows, whose
  // swizzles already keep their even chunks apart.
  Value oddPanel =
      k.cmp(arith::CmpIPredicate::ne,
            arith::AndIOp::create(k.b, k.loc, k.div(chunk, k.idx(4)), k.idx(1)),
            k.idx(0));
  Value first =
      k.add(k.mul(chunk, k.idx(2)), k.select(oddPanel, k.idx(1), k.idx(0)));
  Value second =
      k.add(k.mul(chunk, k.idx(2)), k.select(oddPanel, k.idx(0), k.idx(1)));
  // One pass per iteration: a chunk and its converted halves stay within
  // the producer's registers.
  scf::ForOp::create(
      k.b, k.loc, k.idx(0), k.idx(passes()), k.idx(1), ValueRange{},
      [&](OpBuilder &lb, Location, Value p, ValueRange) {
        OpBuilder::InsertionGuard lg(k.b);
        k.b.setInsertionPoint(lb.getInsertionBlock(), lb.getInsertionPoint());
        Value row = k.add(k.mul(p, k.idx(rows)), row0);
        Value from = k.add(stagingBase, k.add(k.mul(row, k.idx(t.dp)),
                                              k.mul(chunk, k.idx(16))));
        Value toFirst = t.kvLayout.chunkOffset(k, row, first);
        Value toSecond = t.kvLayout.chunkOffset(k, row, second);
        for (auto [staging, ring] :
             {std::pair(stagingK, t.kRing()), std::pair(stagingV, t.vRing())}) {
          // Bytes (i8) until the conversion: the LLVM lowering keeps no
          // fp8 vector through slices and selects.
          Value v16 = arith::BitcastOp::create(
              k.b, k.loc, VectorType::get({16}, k.b.getI8Type()),
              vector::LoadOp::create(k.b, k.loc, VectorType::get({16}, fp8Type),
                                     staging, ValueRange{from},
                                     /*nontemporal=*/false, llvm::Align(16)));
          auto halfOf = [&](int64_t at) -> Value {
            return vector::ShuffleOp::create(
                k.b, k.loc, v16, v16,
                llvm::to_vector(llvm::seq<int64_t>(at, at + 8)));
          };
          Value lo = halfOf(0), hi = halfOf(8);
          Value base = ring.stage(k, stage);
          for (auto [bytes, dst] :
               {std::pair(arith::SelectOp::create(k.b, k.loc, oddPanel, hi, lo)
                              .getResult(),
                          toFirst),
                std::pair(arith::SelectOp::create(k.b, k.loc, oddPanel, lo, hi)
                              .getResult(),
                          toSecond)}) {
            Value v8 = arith::BitcastOp::create(
                k.b, k.loc, VectorType::get({8}, fp8Type), bytes);
            vector::StoreOp::create(k.b, k.loc, fp8Convert(k, v8, to), smem,
                                    ValueRange{k.add(base, dst)},
                                    /*nontemporal=*/false, llvm::Align(16));
          }
        }
        scf::YieldOp::create(k.b, k.loc);
      });
}

Value WgmmaKVGather::vStagingOffset(Value stage, Value row, Value chunk) const {
  // Row-major [kv_tile][head_dim] bytes with the 16-byte chunks of a row
  // swizzled by its key (chunk ^ row % 8): transposeV's loads of one chunk
  // from rows 2 apart then fall in four bank groups.
  const MmaTiles &t = tiles;
  Value swizzled = arith::XOrIOp::create(
      k.b, k.loc, chunk, arith::AndIOp::create(k.b, k.loc, row, k.idx(7)));
  return k.add(k.mul(stage, k.idx(t.kvTile * t.dp)),
               k.add(k.mul(row, k.idx(t.dp)), k.mul(swizzled, k.idx(16))));
}

void WgmmaKVGather::transposeV(Value stage) const {
  // A unit: keys {k0, k0 + 1, k0 + 8, k0 + 9} (k0 = 32 c + 16 h + 2 q) of
  // 16 dims from 16 b, which are the transposed tile's bytes 32 c + 16 h +
  // 4 q .. + 3 (wgmmaFp8ARegisters' key permutation) of its rows 16 b ..
  // 16 b + 15. A warp's 32 lanes take one b and every (c, h, q) of a
  // 128-key tile, so each of its 16 four-byte stores covers the 32 banks.
  const MmaTiles &t = tiles;
  assert(t.kvTile % 128 == 0 && t.dp % 16 == 0 && "whole warps of units");
  Type fp8Type = cast<MemRefType>(stagingV.getType()).getElementType();
  Type i8 = k.b.getI8Type();
  int64_t units = (t.kvTile / 32) * 8 * (t.dp / 16);
  assert(units % kWgmmaProducerThreads == 0 && "whole passes of units");
  Value vtBase = t.vRing().stage(k, stage);
  for (int64_t pass = 0; pass < units / kWgmmaProducerThreads; ++pass) {
    Value u = k.add(tid, k.idx(pass * kWgmmaProducerThreads));
    Value q = k.rem(u, k.idx(4));
    Value h = k.rem(k.div(u, k.idx(4)), k.idx(2));
    Value rest = k.div(u, k.idx(8));
    // c's low two bits from the lane, its high bits past every b.
    Value c = k.add(k.rem(rest, k.idx(4)),
                    k.mul(k.div(rest, k.idx(4 * (t.dp / 16))), k.idx(4)));
    Value b = k.rem(k.div(rest, k.idx(4)), k.idx(t.dp / 16));
    Value k0 = k.add(k.mul(c, k.idx(32)),
                     k.add(k.mul(h, k.idx(16)), k.mul(q, k.idx(2))));
    SmallVector<Value> rowsOf;
    for (int64_t delta : {0, 1, 8, 9}) {
      Value key = k.add(k0, k.idx(delta));
      Value v = vector::LoadOp::create(
          k.b, k.loc, VectorType::get({16}, fp8Type), stagingV,
          ValueRange{vStagingOffset(stage, key, b)}, /*nontemporal=*/false,
          llvm::Align(16));
      rowsOf.push_back(
          arith::BitcastOp::create(k.b, k.loc, VectorType::get({16}, i8), v));
    }
    auto concat = [&](Value x, Value y) {
      return vector::ShuffleOp::create(
          k.b, k.loc, x, y, llvm::to_vector(llvm::seq<int64_t>(0, 32)));
    };
    SmallVector<int64_t> mask;
    for (int64_t d = 0; d < 16; ++d)
      for (int64_t j = 0; j < 4; ++j)
        mask.push_back(16 * j + d);
    Value transposed =
        vector::ShuffleOp::create(k.b, k.loc, concat(rowsOf[0], rowsOf[1]),
                                  concat(rowsOf[2], rowsOf[3]), mask);
    Value chunk = k.add(k.mul(c, k.idx(2)), h);
    for (int64_t d = 0; d < 16; ++d) {
      Value word = vector::ShuffleOp::create(
          k.b, k.loc, transposed, transposed,
          llvm::to_vector(llvm::seq<int64_t>(4 * d, 4 * d + 4)));
      Value row = k.add(k.mul(b, k.idx(16)), k.idx(d));
      Value at = k.add(
          k.mul(k.add(vtBase, t.vtLayout.chunkOffset(k, row, chunk)), k.idx(2)),
          k.mul(q, k.idx(4)));
      vector::StoreOp::create(
          k.b, k.loc,
          arith::BitcastOp::create(k.b, k.loc, VectorType::get({4}, fp8Type),
                                   word),
          smem8, ValueRange{at}, /*nontemporal=*/false, llvm::Align(4));
    }
  }
}
