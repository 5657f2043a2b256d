//===- WorkItems.cpp - The work item of an attention block ----------------===//

#include "common/WorkItems.h"

using namespace mlir;
using namespace mlir::cascade;

static Value i1(KernelBuilder &k, bool v) {
  return arith::ConstantIntOp::create(k.b, k.loc, v, 1);
}

Value cascade::planItemValid(KernelBuilder &k, const AttentionArgs &args,
                             Value w) {
  Value mv = k.loadScalar(args.blockValidMask, w);
  Value zero = arith::ConstantIntOp::create(k.b, k.loc, mv.getType(), 0);
  return k.cmp(arith::CmpIPredicate::ne, mv, zero);
}

WorkItem cascade::planItem(KernelBuilder &k, const AttentionArgs &args,
                           Value w) {
  WorkItem item;
  item.request = k.toIndex(k.loadScalar(args.requestIndices, w));
  item.chunk = k.toIndex(k.loadScalar(args.kvTileIndices, w));
  if (args.qoTileIndices)
    item.qoTile = k.toIndex(k.loadScalar(args.qoTileIndices, w));
  return item;
}

Value cascade::requestOfRow(KernelBuilder &k, const AttentionArgs &args,
                            Value w) {
  return k.lastIndexWithKeyAtMost(
      k.toIndex(args.batchSize), w, arith::CmpIPredicate::sle,
      [&](KernelBuilder &kk, Value i) {
        return kk.toIndex(kk.loadScalar(args.qoIndptr, i));
      });
}

Value cascade::rowIsReal(KernelBuilder &k, const AttentionArgs &args, Value w) {
  Value rows =
      k.toIndex(k.loadScalar(args.qoIndptr, k.toIndex(args.batchSize)));
  return k.cmp(arith::CmpIPredicate::ult, w, rows);
}

WorkItem cascade::decodeTile(KernelBuilder &k, Value w,
                             int64_t tilesPerRequest) {
  WorkItem item;
  item.request = k.div(w, k.idx(tilesPerRequest));
  item.qoTile = k.rem(w, k.idx(tilesPerRequest));
  item.active = i1(k, true);
  return item;
}

WorkItem cascade::selfScheduledTile(KernelBuilder &k, const AttentionArgs &args,
                                    Value w, int64_t groupSize, int64_t qTile,
                                    bool longestFirst) {
  auto v = [&](KernelBuilder &kk, Value i) {
    Value rows = kk.toIndex(kk.loadScalar(args.qoIndptr, i));
    return kk.add(
        kk.div(kk.add(kk.mul(rows, kk.idx(groupSize)), kk.idx(qTile - 1)),
               kk.idx(qTile)),
        i);
  };
  WorkItem item;
  item.request = k.lastIndexWithKeyAtMost(k.toIndex(args.batchSize), w,
                                          arith::CmpIPredicate::ule, v);
  item.qoTile = k.sub(w, v(k, item.request));
  item.active = i1(k, true);
  if (longestFirst) {
    // Causal tiles get longer along a request: run them longest first, so
    // that the short ones fill the tail of the grid.
    Value req = item.request;
    Value rows =
        k.sub(k.toIndex(k.loadScalar(args.qoIndptr, k.add(req, k.idx(1)))),
              k.toIndex(k.loadScalar(args.qoIndptr, req)));
    Value tiles = k.div(k.add(k.mul(rows, k.idx(groupSize)), k.idx(qTile - 1)),
                        k.idx(qTile));
    // Blocks past the request's tiles (the slack of v) keep an index past
    // them and do nothing.
    Value inside = k.cmp(arith::CmpIPredicate::ult, item.qoTile, tiles);
    item.qoTile = k.select(inside, k.sub(k.sub(tiles, k.idx(1)), item.qoTile),
                           item.qoTile);
  }
  return item;
}

QueryRows cascade::queryRows(KernelBuilder &k, const AttentionArgs &args,
                             Value req, bool decode) {
  if (decode)
    return {req, k.idx(1)};
  Value start = k.toIndex(k.loadScalar(args.qoIndptr, req));
  Value len = k.sub(
      k.toIndex(k.loadScalar(args.qoIndptr, k.add(req, k.idx(1)))), start);
  return {start, len};
}
