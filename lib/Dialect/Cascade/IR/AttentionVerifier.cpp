//===- AttentionVerifier.cpp - What both attention ops must satisfy -------===//
//
// The checks cascade.paged_attention and cascade.multi_level_attention share:
// q, the paged cache (pool, (k, v) pair, or the latent form's (ckv, kpe)),
// the destinations, the fp8 scales, the state inputs and the score options.
//
//===----------------------------------------------------------------------===//

#include "VerifyUtils.h"

#include "mlir/IR/Matchers.h"

#include <cmath>
#include <tuple>

using namespace mlir;
using namespace mlir::cascade;
using namespace mlir::cascade::detail;

namespace {

/// Checks a (k, v) pair of page pools whose types differ: the same element
/// type and shape but for the head_dim, which may differ (v's is the
/// output's: head_dim_vo).
LogicalResult verifyKVPair(Operation *op, ShapedType kt, ShapedType vt) {
  if (kt.getElementType() != vt.getElementType())
    return op->emitOpError("'v' element type ")
           << vt.getElementType() << " does not match 'k' element type "
           << kt.getElementType();
  if (kt.getRank() != vt.getRank())
    return op->emitOpError("'v' rank ")
           << vt.getRank() << " does not match 'k' rank " << kt.getRank();
  for (int64_t d = 0; d + 1 < kt.getRank(); ++d)
    if (!dimsAgree(kt.getDimSize(d), vt.getDimSize(d)))
      return op->emitOpError("'v' shape ")
             << shapeStr(vt) << " does not match 'k' shape " << shapeStr(kt)
             << " (only the head_dim may differ)";
  int64_t dv = vt.getShape().back();
  if (ShapedType::isDynamic(dv))
    return op->emitOpError("head_dim of 'v' must be static");
  if (dv % 8 != 0 || dv <= 0 || dv > 256)
    return op->emitOpError("head_dim of 'v' must be a positive multiple of 8 "
                           "and at most 256, got ")
           << dv;
  return success();
}

/// A static head_dim (dim 2 of a query) that is a positive multiple of 8
/// and at most `limit`.
LogicalResult verifyHeadDim(Operation *op, ShapedType t, StringRef name,
                            StringRef what, int64_t limit) {
  int64_t d = t.getDimSize(2);
  if (ShapedType::isDynamic(d))
    return op->emitOpError()
           << what << " (dim 2 of '" << name << "') must be static";
  if (d % 8 != 0 || d <= 0 || d > limit)
    return op->emitOpError()
           << what << " must be a positive multiple of 8 and at most " << limit
           << ", got " << d;
  return success();
}

/// The latent (MLA) form: q_pe beside q (= q_nope), the cache (ckv, kpe)
/// of rank 3, no head dimension in the cache, sm_scale given.
LogicalResult verifyLatentCache(Operation *op, const AttentionView &a) {
  auto qt = cast<ShapedType>(a.q.getType());
  auto pt = cast<ShapedType>(a.qPe.getType());
  if (pt.getRank() != 3 || pt.getElementType() != qt.getElementType() ||
      !dimsAgree(pt.getDimSize(0), qt.getDimSize(0)) ||
      !dimsAgree(pt.getDimSize(1), qt.getDimSize(1)))
    return op->emitOpError("'q_pe' must be [rows, Hqo, Dr] with q's rows, "
                           "heads and element type, got ")
           << shapeStr(pt) << " " << pt.getElementType();
  if (failed(verifyHeadDim(op, pt, "q_pe", "the rotary head_dim", 128)))
    return failure();
  if (a.kv.size() != 2)
    return op->emitOpError("the latent form (q_pe) expects the cache pair "
                           "kv(ckv, kpe), got ")
           << a.kv.size() << " values";
  auto ct = cast<ShapedType>(a.kv[0].getType());
  auto rt = cast<ShapedType>(a.kv[1].getType());
  for (auto [t, name, dim] : {std::tuple(ct, "ckv", qt.getDimSize(2)),
                              std::tuple(rt, "kpe", pt.getDimSize(2))})
    if (t.getRank() != 3 || !dimsAgree(t.getDimSize(2), dim))
      return op->emitOpError("'")
             << name << "' must be [P, page_size, " << dim
             << "] (one row per token, shared by every head), got "
             << shapeStr(t);
  if (ct.getElementType() != rt.getElementType())
    return op->emitOpError("'ckv' and 'kpe' must have one element type, got ")
           << ct.getElementType() << " and " << rt.getElementType();
  if (!dimsAgree(ct.getDimSize(0), rt.getDimSize(0)) ||
      !dimsAgree(ct.getDimSize(1), rt.getDimSize(1)))
    return op->emitOpError("'ckv' ")
           << shapeStr(ct) << " and 'kpe' " << shapeStr(rt)
           << " must have the same pages and page size";
  if (a.layout != KVLayout::NHD)
    return op->emitOpError("a latent cache has no head dimension: kv_layout "
                           "must be nhd");
  if (!a.score.smScale)
    return op->emitOpError("the latent form needs 'sm_scale' (1/sqrt of the "
                           "model's head_dim before absorption)");
  if (a.score.pos != ::cascade::contract::PosEncoding::None)
    return op->emitOpError("the latent form takes its rotary part rotated "
                           "(q_pe, kpe): pos_encoding must be none");
  return success();
}

/// The page pool or (k, v) pair of the plain form: rank, page and head
/// dimensions. Sets `pageDim` and `headsDim` (the dims of `kv[0]`).
LogicalResult verifyPagedCache(Operation *op, const AttentionView &a,
                               int64_t &pageDim, int64_t &headsDim) {
  if (a.kv.size() != 1 && a.kv.size() != 2)
    return op->emitOpError("expects one page pool or a (k, v) pair in 'kv', "
                           "got ")
           << a.kv.size() << " values";
  bool nhd = a.layout == KVLayout::NHD;
  auto kt = cast<ShapedType>(a.kv[0].getType());
  if (a.kv.size() == 1) {
    if (kt.getRank() != 5)
      return op->emitOpError("a single page pool must have rank 5 (")
             << (nhd ? "[P, 2, page_size, Hkv, D]"
                     : "[P, 2, Hkv, page_size, D]")
             << "), got rank " << kt.getRank();
    if (!dimsAgree(kt.getDimSize(1), 2))
      return op->emitOpError("dim 1 of the page pool must be 2 (keys, values), "
                             "got ")
             << kt.getDimSize(1);
    pageDim = nhd ? 2 : 3;
    headsDim = nhd ? 3 : 2;
  } else {
    auto vt = cast<ShapedType>(a.kv[1].getType());
    if (kt.getRank() != 4)
      return op->emitOpError("a (k, v) page pool must have rank 4 (")
             << (nhd ? "[P, page_size, Hkv, D]" : "[P, Hkv, page_size, D]")
             << "), got rank " << kt.getRank();
    if (kt != vt && failed(verifyKVPair(op, kt, vt)))
      return failure();
    pageDim = nhd ? 1 : 2;
    headsDim = nhd ? 2 : 1;
  }
  return success();
}

} // namespace

/// Verifies q, the page pool, the destinations and the options.
LogicalResult mlir::cascade::detail::verifyAttention(Operation *op,
                                                     const AttentionView &a) {
  auto qt = cast<ShapedType>(a.q.getType());
  if (qt.getRank() != 3)
    return op->emitOpError("'q' must have rank 3 ([rows, Hqo, D]), got rank ")
           << qt.getRank();
  // fp8 queries need a cache of their type (checked with the cache below).
  bool fp8Q = isFp8KV(qt.getElementType());
  if (!isF16OrBF16(qt.getElementType()) && !fp8Q)
    return op->emitOpError("'q' element type must be f16, bf16, f8E4M3FN or "
                           "f8E5M2, got ")
           << qt.getElementType();
  if (fp8Q && a.qPe)
    return op->emitOpError("the latent (MLA) form takes f16 or bf16 'q', got ")
           << qt.getElementType();
  if (failed(verifyHeadDim(op, qt, "q", "head_dim", a.qPe ? 512 : 256)))
    return failure();
  int64_t headDim = qt.getDimSize(2);
  // The cache: the latent pair (pages on dim 1, no heads) or the pool.
  int64_t pageDim = 1, headsDim = -1;
  if (a.qPe ? failed(verifyLatentCache(op, a))
            : failed(verifyPagedCache(op, a, pageDim, headsDim)))
    return failure();
  auto kt = cast<ShapedType>(a.kv[0].getType());
  Type kvType = kt.getElementType();
  if (!isF16OrBF16(kvType) && !isFp8KV(kvType))
    return op->emitOpError("KV cache element type must be f16, bf16, "
                           "f8E4M3FN or f8E5M2, got ")
           << kvType;
  if (fp8Q && kvType != qt.getElementType())
    return op->emitOpError("fp8 'q' (")
           << qt.getElementType()
           << ") needs a KV cache of its element type, got " << kvType;
  for (auto [scale, name] :
       {std::pair(a.kScale, "k_scale"), std::pair(a.vScale, "v_scale")})
    if (scale && !isFp8KV(kvType))
      return op->emitOpError("'")
             << name << "' dequantizes an fp8 KV cache (f8E4M3FN or "
             << "f8E5M2), but the KV cache is " << kvType;
  // The tensor-core kernels fold k_scale into the softmax's exponent scale
  // (like sm_scale, it must be positive there); a constant one is checked
  // here, a runtime one by the runtime before a launch (and a kernel given
  // another writes NaN).
  FloatAttr ks;
  if (a.kScale && matchPattern(a.kScale, m_Constant(&ks)) &&
      !(std::isfinite(ks.getValueAsDouble()) && ks.getValueAsDouble() > 0))
    return op->emitOpError("'k_scale' must be finite and > 0, got ")
           << ks.getValueAsDouble();
  if (!dimsAgree(kt.getDimSize(pageDim), a.pageSize))
    return op->emitOpError("page dimension of the KV cache is ")
           << kt.getDimSize(pageDim) << " but page_size = " << a.pageSize;
  if (!dimsAgree(kt.getShape().back(), headDim))
    return op->emitOpError("head_dim of the KV cache is ")
           << kt.getShape().back() << " but 'q' has head_dim " << headDim;
  int64_t hqo = qt.getDimSize(1);
  int64_t hkv = headsDim < 0 ? 1 : kt.getDimSize(headsDim);
  if (!ShapedType::isDynamic(hqo) && !ShapedType::isDynamic(hkv) &&
      (hkv == 0 || hqo % hkv != 0))
    return op->emitOpError("number of query heads (")
           << hqo << ") must be a multiple of the number of KV heads (" << hkv
           << ")";

  // Destinations: q's rows and heads, v's head_dim (the latent form's v
  // is ckv, q's width).
  auto ot = cast<ShapedType>(a.o.getType());
  SmallVector<int64_t> oShape(qt.getShape());
  if (!a.qPe)
    oShape[2] = cast<ShapedType>(a.kv.back().getType()).getShape().back();
  // The output of fp8 queries is f16 or bf16 (the caller's choice); of
  // 16-bit queries, q's type.
  Type oType = ot.getElementType();
  if (fp8Q && !isF16OrBF16(oType))
    return op->emitOpError("'o' of fp8 'q' must be f16 or bf16, got ") << oType;
  if ((!fp8Q && oType != qt.getElementType()) || ot.getRank() != qt.getRank() ||
      !llvm::all_of(llvm::seq<int64_t>(0, 3), [&](int64_t d) {
        return dimsAgree(ot.getDimSize(d), oShape[d]);
      }))
    return op->emitOpError("'o' must be ")
           << shapeStr(RankedTensorType::get(oShape, qt.getElementType()))
           << " " << (fp8Q ? oType : qt.getElementType())
           << " (q's rows, heads and element type, v's head_dim), got "
           << shapeStr(ot) << " " << ot.getElementType();
  auto lt = cast<ShapedType>(a.lse.getType());
  if (lt.getRank() != 2 || !lt.getElementType().isF32() ||
      !dimsAgree(lt.getDimSize(0), qt.getDimSize(0)) ||
      !dimsAgree(lt.getDimSize(1), qt.getDimSize(1)))
    return op->emitOpError("'lse' must be f32 [rows, Hqo] = ")
           << shapeStr(RankedTensorType::get(qt.getShape().drop_back(),
                                             lt.getElementType()))
           << ", got " << shapeStr(lt) << " " << lt.getElementType();

  for (auto [name, value] : a.stateInputs) {
    auto st = cast<ShapedType>(value.getType());
    if (st.getRank() != 1 || !st.getElementType().isF32() ||
        !dimsAgree(st.getDimSize(0), hqo))
      return op->emitOpError("'")
             << name << "' must be f32 [Hqo] = ["
             << (ShapedType::isDynamic(hqo) ? std::string("?")
                                            : std::to_string(hqo))
             << "] (one value per query head), got " << shapeStr(st) << " "
             << st.getElementType();
  }

  // Options.
  std::string why = a.score.validate();
  if (!why.empty())
    return op->emitOpError(why);
  return success();
}
