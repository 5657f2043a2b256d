//===- KernelArgs.cpp - A kernel's arguments, bound by name ---------------===//

#include "common/KernelArgs.h"
#include "KernelSpec.h"

#include "cascade/Contract/BundleContract.h"

// The bundle contract declares namespace ::cascade: this file's own
// definitions are qualified mlir::cascade:: to stay unambiguous.
using namespace mlir;
using namespace mlir::cascade;
namespace cplan = ::cascade::contract::plan;
namespace cparam = ::cascade::contract::param;

mlir::cascade::KernelArgs::KernelArgs(ArrayRef<KernelParam> params,
                                      gpu::GPUFuncOp fn) {
  auto args = fn.getArguments();
  assert(args.size() == params.size() &&
         "kernel arguments do not follow the spec's params");
  for (auto [param, arg] : llvm::zip_equal(params, args)) {
    assert(arg.getType() == param.type && "kernel argument of another type");
    bool inserted = byName.try_emplace(param.name, arg).second;
    assert(inserted && "two kernel parameters of one name");
    (void)inserted;
  }
}

Value mlir::cascade::KernelArgs::get(StringRef name) const {
  Value v = lookup(name);
  assert(v && "the kernel has no parameter of this name");
  return v;
}

AttentionArgs mlir::cascade::AttentionArgs::bind(const AttentionSpec &spec,
                                                 gpu::GPUFuncOp fn) {
  KernelArgs a(spec.params(fn.getContext()), fn);
  AttentionArgs r;
  r.q = a.get(cparam::kQ);
  if (spec.pool) {
    r.kCache = r.vCache = a.get(cparam::kKvCache);
  } else {
    r.kCache = a.get(cparam::kKCache);
    r.vCache = a.get(cparam::kVCache);
  }
  r.qoIndptr = a.lookup(cplan::kQoIndptr);
  r.kvIndptr = a.get(cplan::kKvIndptr);
  r.kvIndices = a.lookup(cplan::kKvIndices); // absent: identity pages
  r.kvLastPageLen = a.get(cplan::kKvLastPageLen);
  r.customMask = a.lookup(cparam::kCustomMask);
  r.maskIndptr = a.lookup(cparam::kMaskIndptr);
  for (StringRef in : spec.epilogueStateInputs())
    r.stateInputs.push_back(a.get(in));
  r.requestIndices = a.lookup(cplan::kRequestIndices);
  r.kvTileIndices = a.lookup(cplan::kKvTileIndices);
  r.oIndptr = a.lookup(cplan::kOIndptr);
  r.blockValidMask = a.lookup(cplan::kBlockValidMask);
  r.kvChunkSize = a.lookup(cplan::kKvChunkSize);
  r.tmpV = a.lookup(cplan::kTmpV);
  r.tmpS = a.lookup(cplan::kTmpS);
  r.qoTileIndices = a.lookup(cplan::kQoTileIndices);
  r.o = a.get(cparam::kO);
  r.lse = a.get(cparam::kLse);
  r.gridCount = a.get(spec.gridParam());
  r.batchSize = a.lookup(cplan::kBatchSize);
  r.kScale = a.lookup(cparam::kKScale);
  r.vScale = a.lookup(cparam::kVScale);
  r.qStrideN = a.get(cparam::kQStrideN);
  r.qStrideH = a.get(cparam::kQStrideH);
  r.oStrideN = a.get(cparam::kOStrideN);
  r.oStrideH = a.get(cparam::kOStrideH);
  r.kvStrideN = a.lookup(cparam::kKvStrideN);
  r.kvStrideH = a.lookup(cparam::kKvStrideH);
  r.vStrideN = a.lookup(cparam::kVStrideN);
  r.vStrideH = a.lookup(cparam::kVStrideH);
  r.kvStridePage = a.lookup(cparam::kKvStridePage);
  r.vStridePage = a.lookup(cparam::kVStridePage);
  return r;
}

/// token * strideN + head * strideH, in index arithmetic.
static Value rowOffset(KernelBuilder &k, Value strideN, Value strideH,
                       Value token, Value head) {
  assert(strideN && strideH && "the kernel takes no strides for this buffer");
  return k.add(k.mul(token, k.toIndex(strideN)),
               k.mul(head, k.toIndex(strideH)));
}

Value mlir::cascade::AttentionArgs::qOffset(KernelBuilder &k, Value token,
                                            Value head) const {
  return rowOffset(k, qStrideN, qStrideH, token, head);
}

Value mlir::cascade::AttentionArgs::oOffset(KernelBuilder &k, Value token,
                                            Value head) const {
  return rowOffset(k, oStrideN, oStrideH, token, head);
}

MergeArgs mlir::cascade::MergeArgs::bind(const MergeSpec &spec,
                                         gpu::GPUFuncOp fn) {
  KernelArgs a(spec.params(fn.getContext()), fn);
  MergeArgs r;
  r.vA = a.lookup("v_a");
  r.sA = a.lookup("s_a");
  r.vB = a.lookup("v_b");
  r.sB = a.lookup("s_b");
  r.vOther = a.lookup("v_other");
  r.sOther = a.lookup("s_other");
  r.mask = a.lookup("mask");
  r.maskStride = a.lookup("mask_stride");
  r.vIn = a.lookup("v_in");
  r.sIn = a.lookup("s_in");
  r.numStates = a.lookup("num_states");
  r.v = a.lookup("v");
  r.s = a.lookup("s");
  r.numTasks = a.lookup("num_tasks");
  r.numHeads = a.lookup("num_heads");
  if (spec.kind == MergeKind::Indptr)
    r.indptr = a.get(spec.indptr);
  r.tmpV = a.lookup(cplan::kTmpV);
  r.tmpS = a.lookup(cplan::kTmpS);
  r.o = a.lookup(cparam::kO);
  r.lse = a.lookup(cparam::kLse);
  for (StringRef in : spec.stateInputs)
    r.stateInputs.push_back(a.get(in));
  r.qoIndptr = a.lookup(cplan::kQoIndptr);
  r.rowCapacity = a.lookup(cplan::kRowCapacity);
  r.batchSize = a.lookup(cplan::kBatchSize);
  r.numRows = a.lookup(cplan::kNumRows);
  r.oStrideN = a.lookup(cparam::kOStrideN);
  r.oStrideH = a.lookup(cparam::kOStrideH);
  return r;
}
