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
// states are merged through shared memory. With RoPE, q' and k' are rotated
// in f32 registers and rounded once to their storage dtype (k' of an fp8
// cache: q's) before the dot product, as the tensor-core families round them
// in shared memory (docs/semantics.md, "Where RoPE rounds").
//
// Split-KV (plan operands): work item w handles request request_indices[w],
// chunk kv_tile_indices[w] (tokens [k*C, (k+1)*C)), and writes its partial
// state to tmp_v/tmp_s row o_indptr[req] + chunk (f32, base 2); the
// merge_states_indptr kernel merges them. With `accumulate` (unsplit), the
// epilogue merges the block's state into the (o, lse) the outputs hold.
//
// Composed of the generator stages WorkItems, PagedKV (the row gather),
// ScoreVariant and AttentionEpilogue around the CUDA-core KV loop here.
//
// Used for decode with small GQA groups (bandwidth-bound: every K/V byte is
// read once per KV head and feeds all G query heads) and for q/KV of
// different dtypes; everything else runs on the mma_sync family.
//
// fp8 KV (f8E4M3FN, f8E5M2): tiles move as fp8 bytes (16-byte cp.async
// chunks of 16 elements, half an f16 cache's bytes) and each lane converts
// its 8 elements to f32 after its 8-byte shared-memory load (Fp8Convert.h).
// k_scale folds into q's scale (so into every logit), v_scale multiplies the
// accumulated output before the epilogue (the partial states of a split and
// an accumulating level's merge see the dequantized output).
//
//===----------------------------------------------------------------------===//

#include "KernelSpec.h"
#include "common/AttentionEpilogue.h"
#include "common/KernelArgs.h"
#include "common/PagedKV.h"
#include "common/ScoreVariant.h"
#include "common/WorkItems.h"
#include "rows/RowsFamily.h"

#include "cascade/Conversion/GPUCodegen/Fp8Convert.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"

using namespace mlir;
using namespace mlir::cascade;

namespace {

/// One rows-family attention kernel: the stages composed for one spec.
class RowsAttentionKernel {
public:
  RowsAttentionKernel(OpBuilder &b, gpu::GPUFuncOp fn, gpu::GPUModuleOp module,
                      const AttentionSpec &spec);
  void build();

private:
  /// The block's work: its item, keys, queries, the KV loop, the epilogue.
  void block();
  /// The block's request (and chunk) and its keys [t0, t1).
  void findKeyRange(Value &req, Value &chunk);
  /// q of every head of the group in registers, RoPE'd and scaled.
  void loadQueries();
  /// The KV loop; returns (m, d, acc) per head.
  ValueRange mainloop(const PagedKVRowGather &gather);
  /// The loop body of tile i.
  SmallVector<Value> step(const PagedKVRowGather &gather, Value i,
                          ValueRange it);
  /// The logits of the keys of stage `st` this thread's z-slice holds,
  /// [head][key]; `rows` gets each key's row offset.
  SmallVector<SmallVector<Value>> tileScores(Value st, Value tileBase,
                                             SmallVector<Value> &rows);
  /// A RoPE'd q' or k' (vector<8xf32>) rounded once to `storage` (round to
  /// nearest even) and widened back: the rounding the tensor-core families
  /// apply when they store the rotated tile in shared memory
  /// (docs/semantics.md, "Where RoPE rounds").
  Value roundToStorage(Value x8, Type storage);
  /// The dtype k' rounds to: KV's own (f16 / bf16), or q's for an fp8 cache
  /// (whose tiles the tensor-core families convert to q's dtype).
  Type keyStorageType() const {
    return isFp8KVType(c.kvType) ? c.qType : c.kvType;
  }

  KernelBuilder k;
  gpu::GPUFuncOp fn;
  gpu::GPUModuleOp module;
  const AttentionSpec &c;
  AttentionArgs args;
  ScoreVariant variant;
  PagedKVLayout kvLayout;
  // Geometry: threads (bdx = D/8, 1, bdz), tiles of `tile` tokens, tpz of
  // them per z-slice.
  int64_t d, bdx, bdy, bdz, nthreads, tile, tpz, stages;

  Value smK, smV, redO, redM;
  Value tx, ty, tz, w, kvh, lt, laneId, ropeTab, alibiTab;
  // Per block.
  Value t0, t1, kvLen, pageStart, qPos, numTiles, qIndex;
  Value laneOff, firstHalf, partnerOff, invFreq8;
  SmallVector<Value> qRows, oBases, q8s, slopes;
};

RowsAttentionKernel::RowsAttentionKernel(OpBuilder &b, gpu::GPUFuncOp fn,
                                         gpu::GPUModuleOp module,
                                         const AttentionSpec &spec)
    : k(b, fn.getLoc()), fn(fn), module(module), c(spec),
      args(AttentionArgs::bind(spec, fn)), variant(spec), kvLayout(spec, args) {
  ArrayRef<int64_t> t = spec.config.getThreads();
  d = spec.headDim;
  bdx = t[0];
  bdy = 1;
  bdz = t[2];
  nthreads = bdx * bdy * bdz;
  tile = spec.config.getKvTile();
  stages = spec.config.getStages();
  tpz = tile / bdz;
}

void RowsAttentionKernel::build() {
  OpBuilder &b = k.b;
  Location loc = k.loc;
  auto wg =
      gpu::AddressSpaceAttr::get(b.getContext(), gpu::AddressSpace::Workgroup);
  auto smemKVTy = MemRefType::get({stages * tile * d}, c.kvType,
                                  MemRefLayoutAttrInterface(), wg);
  auto redOTy = MemRefType::get({bdz * d}, b.getF32Type(),
                                MemRefLayoutAttrInterface(), wg);
  auto redMTy = MemRefType::get({bdz * 2}, b.getF32Type(),
                                MemRefLayoutAttrInterface(), wg);
  smK = fn.addWorkgroupAttribution(smemKVTy, loc);
  smV = fn.addWorkgroupAttribution(smemKVTy, loc);
  redO = fn.addWorkgroupAttribution(redOTy, loc);
  redM = fn.addWorkgroupAttribution(redMTy, loc);
  for (unsigned i = 0; i < 4; ++i)
    fn.setWorkgroupAttributionAttr(i, LLVM::LLVMDialect::getAlignAttrName(),
                                   b.getI64IntegerAttr(16));

  tx = k.threadId(gpu::Dimension::x);
  ty = k.threadId(gpu::Dimension::y);
  tz = k.threadId(gpu::Dimension::z);
  w = k.blockId(gpu::Dimension::x);
  kvh = k.blockId(gpu::Dimension::y);
  lt = k.add(k.mul(k.add(k.mul(tz, k.idx(bdy)), ty), k.idx(bdx)), tx);
  laneId = k.toI32(k.rem(lt, k.idx(32)));
  if (variant.rope())
    ropeTab = variant.ropeInverseFrequencies(k, module, fn.getName());
  if (variant.alibi())
    alibiTab = variant.alibiSlopes(k, module, fn.getName());

  // Blocks without work: a padded plan item, a row past the real ones (the
  // grid covers row_capacity rows).
  Value active;
  if (c.split)
    active = planItemValid(k, args, w);
  else if (!c.decode)
    active = rowIsReal(k, args, w);
  if (!active)
    return block();
  auto ifv = scf::IfOp::create(b, loc, active, false);
  OpBuilder::InsertionGuard g(b);
  b.setInsertionPointToStart(ifv.thenBlock());
  block();
}

void RowsAttentionKernel::findKeyRange(Value &req, Value &chunk) {
  qIndex = w;
  if (c.split) {
    WorkItem item = planItem(k, args, w);
    req = item.request;
    chunk = item.chunk;
    qIndex = req;
  } else if (!c.decode) {
    // Query row w: its request is the largest i with qo_indptr[i] <= w.
    req = requestOfRow(k, args, w);
  } else {
    req = w;
  }
  RequestKv kv =
      requestKv(k, args.kvIndptr, args.kvLastPageLen, req, c.pageSize,
                c.split ? args.kvChunkSize : Value(), chunk);
  pageStart = kv.pageStart;
  kvLen = kv.kvLen;
  t0 = kv.t0;
  t1 = kv.t1;
  // Position of the query: kv_len - 1 in decode; kv_len - qo_len + j for
  // query j of a prefill request (may be negative when qo_len > kv_len).
  qPos = k.sub(kvLen, k.idx(1)); // may be -1 when empty; unused then
  if (!c.decode) {
    Value qs = k.toIndex(k.loadScalar(args.qoIndptr, req));
    Value qe = k.toIndex(k.loadScalar(args.qoIndptr, k.add(req, k.idx(1))));
    qPos = k.add(k.sub(kvLen, k.sub(qe, qs)), k.sub(w, qs));
  }
  variant.clampKeyRange(
      k, t0, t1, [&] { return qPos; }, [&] { return qPos; });
  Value ntok = k.sub(t1, t0);
  numTiles = k.div(k.add(ntok, k.idx(tile - 1)), k.idx(tile));
}

void RowsAttentionKernel::loadQueries() {
  laneOff = k.mul(tx, k.idx(8));
  firstHalf = k.cmp(arith::CmpIPredicate::ult, laneOff, k.idx(d / 2));
  partnerOff = k.rem(k.add(laneOff, k.idx(d / 2)), k.idx(d));
  if (variant.rope()) {
    SmallVector<Value> fr;
    for (int64_t e = 0; e < 8; ++e)
      fr.push_back(k.loadScalar(ropeTab, k.add(laneOff, k.idx(e))));
    invFreq8 = vector::FromElementsOp::create(
        k.b, k.loc, VectorType::get({8}, k.b.getF32Type()), fr);
  }
  // The scale is folded into q.
  double qScale = variant.queryScale();
  for (int64_t g = 0; g < c.groupSize; ++g) {
    Value qoHead = k.add(k.mul(kvh, k.idx(c.groupSize)), k.idx(g));
    Value qRow = stateIndex(k, qIndex, c.numQoHeads, qoHead);
    Value qBase = args.qOffset(k, qIndex, qoHead);
    Value q8 = k.load8(args.q, k.add(qBase, laneOff));
    if (variant.rope()) {
      Value qp = k.load8(args.q, k.add(qBase, partnerOff));
      q8 = roundToStorage(
          ropeLane8(k, q8, qp, invFreq8, k.toF32(qPos), firstHalf), c.qType);
    }
    if (args.kScale)
      q8s.push_back(k.fmul(q8, k.splat(k.fmul(k.f32(qScale), args.kScale))));
    else
      q8s.push_back(k.fmul(q8, k.vsplat(qScale)));
    qRows.push_back(qRow);
    if (!c.split)
      oBases.push_back(args.oOffset(k, qIndex, qoHead));
    if (variant.alibi())
      slopes.push_back(k.loadScalar(alibiTab, qoHead));
  }
}

void RowsAttentionKernel::block() {
  Value req, chunk;
  findKeyRange(req, chunk);
  loadQueries();
  KVSource src{args.kCache, args.vCache, args.kvIndices, pageStart, kvh,
               t0,          t1};
  int64_t kvBytes = isFp8KVType(c.kvType) ? 1 : 2;
  PagedKVRowGather gather(kvLayout, src, smK, smV, tile, d, bdx, nthreads, lt,
                          kvBytes);
  SmallVector<Value> states(mainloop(gather));
  if (args.vScale)
    for (int64_t g = 0; g < c.groupSize; ++g)
      states[3 * g + 2] = k.fmul(states[3 * g + 2], k.splat(args.vScale));
  RowsOutput out{c,    args, tx,    tz,     kvh, laneOff, redO,
                 redM, bdz,  qRows, oBases, req, chunk};
  rowsEpilogue(k, out, states);
}

ValueRange RowsAttentionKernel::mainloop(const PagedKVRowGather &gather) {
  OpBuilder &b = k.b;
  // Prologue: tiles 0 .. S-2, and the page ids of tile S-1.
  for (int64_t s = 0; s + 1 < stages; ++s)
    gather.issue(b, k.idx(s), k.idx(s), gather.lookupPages(b, k.idx(s)));
  // Loop state: (m, d, acc) per query head, then the prefetched page ids.
  SmallVector<Value> init;
  for (int64_t g = 0; g < c.groupSize; ++g) {
    init.push_back(k.negInf());
    init.push_back(k.f32(0.0));
    init.push_back(k.vsplat(0.0));
  }
  llvm::append_range(init, gather.lookupPages(b, k.idx(stages - 1)));
  auto loop =
      scf::ForOp::create(b, k.loc, k.idx(0), numTiles, k.idx(1), init,
                         [&](OpBuilder &lb, Location, Value i, ValueRange it) {
                           scf::YieldOp::create(lb, k.loc, step(gather, i, it));
                         });
  // Drain outstanding (empty) groups before leaving.
  auto tok = nvgpu::DeviceAsyncCreateGroupOp::create(b, k.loc, ValueRange{});
  nvgpu::DeviceAsyncWaitOp::create(b, k.loc, tok, b.getI32IntegerAttr(0));
  return loop.getResults();
}

Value RowsAttentionKernel::roundToStorage(Value x8, Type storage) {
  Value r =
      arith::TruncFOp::create(k.b, k.loc, VectorType::get({8}, storage), x8);
  return arith::ExtFOp::create(k.b, k.loc, x8.getType(), r);
}

SmallVector<SmallVector<Value>>
RowsAttentionKernel::tileScores(Value st, Value tileBase,
                                SmallVector<Value> &rows) {
  SmallVector<SmallVector<Value>> scores(c.groupSize);
  for (int64_t jj = 0; jj < tpz; ++jj) {
    Value j = k.add(k.mul(tz, k.idx(tpz)), k.idx(jj));
    Value row = k.mul(k.add(k.mul(st, k.idx(tile)), j), k.idx(d));
    rows.push_back(row);
    Value k8 = loadKV8AsF32(k, smK, k.add(row, laneOff));
    Value t = k.add(tileBase, j);
    if (variant.rope()) {
      Value kp = loadKV8AsF32(k, smK, k.add(row, partnerOff));
      k8 = roundToStorage(ropeLane8(k, k8, kp, invFreq8, k.toF32(t), firstHalf),
                          keyStorageType());
    }
    Value valid = k.cmp(arith::CmpIPredicate::ult, t, t1);
    Value rel;
    if (variant.alibi())
      rel = k.toF32(k.sub(t, qPos));
    SmallVector<Value> dots;
    for (int64_t g = 0; g < c.groupSize; ++g)
      dots.push_back(k.dot8(q8s[g], k8));
    dots = k.warpAllReduceSumMulti(dots, bdx, laneId);
    for (int64_t g = 0; g < c.groupSize; ++g) {
      Value x = variant.logits(
          k, dots[g], [&] { return slopes[g]; }, [&] { return rel; });
      scores[g].push_back(k.select(valid, x, k.negInf()));
    }
  }
  return scores;
}

SmallVector<Value> RowsAttentionKernel::step(const PagedKVRowGather &gather,
                                             Value i, ValueRange it) {
  OpBuilder &b = k.b;
  int64_t nState = 3 * c.groupSize;
  Value nextTile = k.add(i, k.idx(stages - 1));
  Value tok = gather.issue(b, nextTile, k.rem(nextTile, k.idx(stages)),
                           it.drop_front(nState));
  SmallVector<Value> nextPages = gather.lookupPages(b, k.add(i, k.idx(stages)));
  nvgpu::DeviceAsyncWaitOp::create(b, k.loc, tok,
                                   b.getI32IntegerAttr(stages - 1));
  gpu::BarrierOp::create(b, k.loc);
  Value st = k.rem(i, k.idx(stages));
  Value tileBase = k.add(t0, k.mul(i, k.idx(tile)));
  SmallVector<Value> rows;
  SmallVector<SmallVector<Value>> scores = tileScores(st, tileBase, rows);
  // Online softmax in base 2: rescale by the new maxima, then add P V.
  Value zero = k.f32(0.0);
  SmallVector<Value> ms, ds, accs;
  for (int64_t g = 0; g < c.groupSize; ++g) {
    Value m = it[3 * g], dsum = it[3 * g + 1], acc = it[3 * g + 2];
    Value mNew = m;
    for (Value sc : scores[g])
      mNew = k.fmax(mNew, sc);
    Value scale = k.select(k.isNegInf(m), zero, k.ex2(k.fsub(m, mNew)));
    dsum = k.fmul(dsum, scale);
    acc = k.fmul(acc, k.splat(scale));
    ms.push_back(mNew);
    ds.push_back(dsum);
    accs.push_back(acc);
  }
  for (int64_t jj = 0; jj < tpz; ++jj) {
    Value v8 = loadKV8AsF32(k, smV, k.add(rows[jj], laneOff));
    for (int64_t g = 0; g < c.groupSize; ++g) {
      Value sc = scores[g][jj];
      Value p = k.select(k.isNegInf(sc), zero, k.ex2(k.fsub(sc, ms[g])));
      ds[g] = k.fadd(ds[g], p);
      accs[g] = k.fma(v8, k.splat(p), accs[g]);
    }
  }
  gpu::BarrierOp::create(b, k.loc);
  SmallVector<Value> yields;
  for (int64_t g = 0; g < c.groupSize; ++g) {
    yields.push_back(ms[g]);
    yields.push_back(ds[g]);
    yields.push_back(accs[g]);
  }
  llvm::append_range(yields, nextPages);
  return yields;
}

} // namespace

void mlir::cascade::buildRowsAttentionKernel(OpBuilder &b, gpu::GPUFuncOp fn,
                                             gpu::GPUModuleOp module,
                                             const AttentionSpec &spec) {
  RowsAttentionKernel(b, fn, module, spec).build();
}
