//===- KernelArgs.cpp - A kernel's arguments, bound by name ---------------===//

#include "KernelArgs.h"
#include "KernelSpec.h"

using namespace mlir;
using namespace mlir::cascade;

KernelArgs::KernelArgs(ArrayRef<KernelParam> params, gpu::GPUFuncOp fn) {
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

Value KernelArgs::get(StringRef name) const {
  Value v = lookup(name);
  assert(v && "the kernel has no parameter of this name");
  return v;
}

AttentionArgs AttentionArgs::bind(const AttentionSpec &spec,
                                  gpu::GPUFuncOp fn) {
  KernelArgs a(spec.params(fn.getContext()), fn);
  AttentionArgs r;
  r.q = a.get("q");
  if (spec.pool) {
    r.kCache = r.vCache = a.get("kv_cache");
  } else {
    r.kCache = a.get("k_cache");
    r.vCache = a.get("v_cache");
  }
  r.qoIndptr = a.lookup("qo_indptr");
  r.kvIndptr = a.get("kv_indptr");
  r.kvIndices = a.get("kv_indices");
  r.kvLastPageLen = a.get("kv_last_page_len");
  r.requestIndices = a.lookup("request_indices");
  r.kvTileIndices = a.lookup("kv_tile_indices");
  r.oIndptr = a.lookup("o_indptr");
  r.blockValidMask = a.lookup("block_valid_mask");
  r.kvChunkSize = a.lookup("kv_chunk_size");
  r.tmpV = a.lookup("tmp_v");
  r.tmpS = a.lookup("tmp_s");
  r.qoTileIndices = a.lookup("qo_tile_indices");
  r.o = a.get("o");
  r.lse = a.get("lse");
  r.gridCount = a.get(spec.gridParam());
  r.batchSize = a.lookup("batch_size");
  return r;
}

MergeArgs MergeArgs::bind(const MergeSpec &spec, gpu::GPUFuncOp fn) {
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
  r.tmpV = a.lookup("tmp_v");
  r.tmpS = a.lookup("tmp_s");
  r.o = a.lookup("o");
  r.lse = a.lookup("lse");
  r.qoIndptr = a.lookup("qo_indptr");
  r.rowCapacity = a.lookup("row_capacity");
  r.batchSize = a.lookup("batch_size");
  r.numRows = a.lookup("num_rows");
  return r;
}
