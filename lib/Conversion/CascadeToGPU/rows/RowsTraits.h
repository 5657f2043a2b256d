//===- RowsTraits.h - The rows family's facts -------------------*- C++ -*-===//
//
// What selection, spec analysis and plan lowering know of the rows family
// (the CUDA-core kernel of bandwidth-bound decode and of q and KV of
// different f16/bf16 dtypes): the head dims and KV types it takes, and its
// kKernelFamilyTraits row (kRowsTraits). Its shared memory is static.
//
//===----------------------------------------------------------------------===//

#ifndef CASCADE_LIB_CONVERSION_CASCADETOGPU_ROWS_ROWSTRAITS_H
#define CASCADE_LIB_CONVERSION_CASCADETOGPU_ROWS_ROWSTRAITS_H

#include "FamilyTraits.h"

namespace mlir {
namespace cascade {

extern const KernelFamilyTraits kRowsTraits;

/// Whether the rows family can run an attention op of this shape: head_dim
/// / 8 lanes must divide a warp (head_dim 8, 16, 32, 64, 128, 256).
bool rowsFamilySupportsHeadDim(int64_t headDim);

/// Whether the family reads a KV cache of `kvType` with queries of `qType`
/// on `target`: f16 and bf16 KV with either query type, and fp8 KV
/// (f8E4M3FN, f8E5M2; converted in registers) on chips with the fp8
/// conversion instructions (sm_89 and up).
bool rowsSupportsKVType(Type qType, Type kvType, const TargetInfo &target);

/// The shared memory (bytes) of `stages` K/V stages of `tile` tokens.
int64_t rowsKVStageBytes(int64_t tile, int64_t headDim, Type kvType,
                         int64_t stages = 1);

} // namespace cascade
} // namespace mlir

#endif // CASCADE_LIB_CONVERSION_CASCADETOGPU_ROWS_ROWSTRAITS_H
