//===- LaunchToGPU.cpp - Host-side launches of the cascade kernels --------===//
//
// Rewrites each memref-form cascade op into the gpu.launch_func ops of the
// kernels the conversion pass built for it. Every kernel parameter is bound
// by name from the op: buffers are flattened to the 1-D memrefs of the
// kernel ABI (docs/kernel-bundle.md), sizes are i64 scalars read from the
// buffers' shapes. A launch whose grid is empty is skipped.
//
//===----------------------------------------------------------------------===//

#include "KernelSpec.h"

#include "cascade/Contract/BundleContract.h"
#include "cascade/Dialect/Cascade/IR/CascadeOps.h"

#include "mlir/IR/PatternMatch.h"
#include "llvm/ADT/StringMap.h"

using namespace mlir;
using namespace mlir::cascade;
namespace cparam = ::cascade::contract::param;

namespace {

/// Host values of the kernel parameters of one op, created on demand.
class HostValues {
public:
  HostValues(OpBuilder &b, Location loc) : b(b), loc(loc) {}

  /// A buffer parameter, flattened.
  void buffer(StringRef name, Value memref) {
    if (memref)
      buffers[name] = memref;
  }
  /// A 1-D strided buffer (the mask) and its stride parameter.
  void strided(StringRef name, Value memref) { stridedBuffers[name] = memref; }
  /// An index-valued scalar (passed as i64).
  void scalar(StringRef name, Value index) { scalars[name] = index; }
  /// A [rows, heads, head_dim] view (q, o) whose row and head strides are
  /// the parameters `<name>_stride_n` and `<name>_stride_h`.
  void rowsStrided(StringRef name, Value memref) {
    spannedBuffers[name] = memref;
    auto md = memref::ExtractStridedMetadataOp::create(b, loc, memref);
    scalars[(name + "_stride_n").str()] = md.getStrides()[0];
    scalars[(name + "_stride_h").str()] = md.getStrides()[1];
  }
  /// A paged cache whose page stride (possibly not the contiguous one:
  /// one layer of a larger cache) is the parameter `strideName`.
  void pageStrided(StringRef name, Value memref, StringRef strideName) {
    spannedBuffers[name] = memref;
    auto md = memref::ExtractStridedMetadataOp::create(b, loc, memref);
    scalars[strideName] = md.getStrides()[0];
  }
  /// An f32 scalar; where `value` is null, a launch that takes it gets
  /// `absent`.
  void f32(StringRef name, Value value, float absent) {
    floats[name] = {value, absent};
  }

  Value index(StringRef name) {
    auto it = scalars.find(name);
    assert(it != scalars.end() && "no host value for a scalar parameter");
    return it->second;
  }

  Value get(const KernelParam &p) {
    if (p.kind == "memref") {
      if (auto it = stridedBuffers.find(p.name); it != stridedBuffers.end()) {
        auto [flat, n, stride] = flattenStrided1D(b, loc, it->second);
        scalars[p.name + "_stride"] = stride;
        return flat;
      }
      if (auto it = spannedBuffers.find(p.name); it != spannedBuffers.end())
        return flattenSpanned(b, loc, it->second);
      auto it = buffers.find(p.name);
      assert(it != buffers.end() && "no host value for a buffer parameter");
      return flattenContiguous(b, loc, it->second).first;
    }
    if (p.kind == "f32") {
      auto it = floats.find(p.name);
      assert(it != floats.end() && "no host value for an f32 parameter");
      auto [value, absent] = it->second;
      return value ? value
                   : arith::ConstantFloatOp::create(b, loc, b.getF32Type(),
                                                    APFloat(absent));
    }
    // A scalar the op does not give (ragged K/V's strides: the op's K and
    // V are contiguous) takes the kernel's default.
    if (p.defaultValue && !scalars.count(p.name))
      return arith::ConstantIntOp::create(b, loc, *p.defaultValue, 64);
    return arith::IndexCastOp::create(b, loc, b.getI64Type(), index(p.name));
  }

private:
  OpBuilder &b;
  Location loc;
  llvm::StringMap<Value> buffers, stridedBuffers, spannedBuffers, scalars;
  llvm::StringMap<std::pair<Value, float>> floats;
};

Value cst(OpBuilder &b, Location loc, int64_t v) {
  return arith::ConstantIndexOp::create(b, loc, v);
}

Value dim(OpBuilder &b, Location loc, Value memref, int64_t d) {
  return memref::DimOp::create(b, loc, memref, d);
}

/// Launches `l` when its grid is not empty.
void emitLaunch(OpBuilder &b, Location loc, const KernelLaunch &l,
                HostValues &values) {
  SmallVector<Value> args;
  for (const KernelParam &p : l.params)
    args.push_back(values.get(p));
  Value count = values.index(l.gridParam);
  if (l.gridMul != 1)
    count = arith::MulIOp::create(b, loc, count, cst(b, loc, l.gridMul));
  Value nonEmpty = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ugt,
                                         count, cst(b, loc, 0));
  auto ifOp = scf::IfOp::create(b, loc, nonEmpty, /*withElse=*/false);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(ifOp.thenBlock());
  Value gx =
      l.gridDiv == 1
          ? count
          : arith::CeilDivUIOp::create(b, loc, count, cst(b, loc, l.gridDiv));
  if (!l.gridAdd.empty())
    gx = arith::AddIOp::create(b, loc, gx, values.index(l.gridAdd));
  Value smem;
  if (l.dynamicSharedBytes)
    smem = arith::ConstantIntOp::create(b, loc, l.dynamicSharedBytes, 32);
  gpu::LaunchFuncOp::create(
      b, loc, l.fn, gpu::KernelDim3{gx, cst(b, loc, l.gridY), cst(b, loc, 1)},
      gpu::KernelDim3{cst(b, loc, l.block[0]), cst(b, loc, l.block[1]),
                      cst(b, loc, l.block[2])},
      smem, args);
}

/// Rewrites one op into the launches the table holds for it.
template <typename OpTy> struct LaunchPattern : OpRewritePattern<OpTy> {
  LaunchPattern(MLIRContext *ctx, const LaunchTable &table)
      : OpRewritePattern<OpTy>(ctx), table(table) {}

  LogicalResult matchAndRewrite(OpTy op,
                                PatternRewriter &rewriter) const override {
    auto it = table.find(op.getOperation());
    if (it == table.end())
      return failure();
    Location loc = op.getLoc();
    HostValues values(rewriter, loc);
    bind(op, rewriter, values);
    emitLaunch(rewriter, loc, it->second.main, values);
    if (it->second.merge)
      emitLaunch(rewriter, loc, *it->second.merge, values);
    rewriter.eraseOp(op);
    return success();
  }

  /// Number of (row, head) states of an [rows, heads] lse/s buffer.
  static Value states(OpBuilder &b, Location loc, Value s) {
    return arith::MulIOp::create(b, loc, dim(b, loc, s, 0), dim(b, loc, s, 1));
  }

  void bind(MergeStateOp op, OpBuilder &b, HostValues &v) const {
    Location loc = op.getLoc();
    v.buffer("v_a", op.getVA());
    v.buffer("s_a", op.getSA());
    v.buffer("v_b", op.getVB());
    v.buffer("s_b", op.getSB());
    v.buffer("v", op.getV());
    v.buffer("s", op.getS());
    v.scalar("num_tasks", states(b, loc, op.getS()));
  }
  void bind(MergeStateInPlaceOp op, OpBuilder &b, HostValues &v) const {
    Location loc = op.getLoc();
    v.buffer("v_other", op.getVOther());
    v.buffer("s_other", op.getSOther());
    if (op.getMask())
      v.strided("mask", op.getMask());
    v.buffer("v", op.getV());
    v.buffer("s", op.getS());
    v.scalar("num_tasks", states(b, loc, op.getS()));
    v.scalar("num_heads", dim(b, loc, op.getS(), 1));
  }
  void bind(MergeStatesOp op, OpBuilder &b, HostValues &v) const {
    Location loc = op.getLoc();
    v.buffer("v_in", op.getVIn());
    v.buffer("s_in", op.getSIn());
    v.buffer("v", op.getV());
    v.buffer("s", op.getS());
    v.scalar("num_tasks", states(b, loc, op.getS()));
    v.scalar("num_states", dim(b, loc, op.getSIn(), 1));
    v.scalar("num_heads", dim(b, loc, op.getS(), 1));
  }
  void bind(PagedAttentionOp op, OpBuilder &b, HostValues &v) const {
    Location loc = op.getLoc();
    v.rowsStrided("q", op.getQ());
    // The cache's page stride goes to the kernels with a page table; those
    // without one (ragged K/V, contiguous) take their default strides.
    auto kv = op.getKv();
    if (kv.size() == 1) {
      v.pageStrided("kv_cache", kv[0], cparam::kKvStridePage);
    } else {
      v.pageStrided("k_cache", kv[0], cparam::kKvStridePage);
      v.pageStrided("v_cache", kv[1], cparam::kVStridePage);
    }
    v.buffer("qo_indptr", op.getQoIndptr());
    v.buffer("kv_indptr", op.getKvIndptr());
    v.buffer("kv_indices", op.getKvIndices());
    v.buffer("kv_last_page_len", op.getKvLastPageLen());
    v.buffer("custom_mask", op.getCustomMask());
    v.buffer("mask_indptr", op.getMaskIndptr());
    for (auto [name, value] : op.getPresentStateInputs())
      v.buffer(name, value);
    v.rowsStrided("o", op.getO());
    v.buffer("lse", op.getLse());
    Value rows = dim(b, loc, op.getQ(), 0);
    Value batch = dim(b, loc, op.getKvLastPageLen(), 0);
    v.scalar("num_rows", rows);
    v.scalar("row_capacity", rows);
    v.scalar("batch_size", batch);
    // fp8 KV: the dequantization scales, 1 when the op has none.
    v.f32("k_scale", op.getKScale(), 1.0f);
    v.f32("v_scale", op.getVScale(), 1.0f);
    auto plan = op.getPlan();
    if (!plan.empty()) {
      static constexpr StringLiteral kNames[] = {
          "request_indices", "kv_tile_indices", "o_indptr", "block_valid_mask",
          "kv_chunk_size",   "tmp_v",           "tmp_s",    "qo_tile_indices",
          "merge_indptr"};
      for (auto [i, p] : llvm::enumerate(plan))
        v.buffer(kNames[i], p);
      v.scalar("padded_batch_size", dim(b, loc, plan[kPlanRequestIndices], 0));
      v.scalar("partial_rows_capacity", dim(b, loc, plan[kPlanTmpS], 0));
    }
  }

  const LaunchTable &table;
};

} // namespace

void mlir::cascade::populateCascadeLaunchPatterns(RewritePatternSet &patterns,
                                                  const LaunchTable &table) {
  MLIRContext *ctx = patterns.getContext();
  patterns.add<LaunchPattern<MergeStateOp>, LaunchPattern<MergeStateInPlaceOp>,
               LaunchPattern<MergeStatesOp>, LaunchPattern<PagedAttentionOp>>(
      ctx, table);
}
