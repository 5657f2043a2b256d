//===- KernelConfig.h - Kernel family and tiling selection ------*- C++ -*-===//
//
// The one place that decides, for each cascade op, which kernel family runs
// it and with which tiling (#cascade.kernel_config). The
// `cascade-select-kernel-config` pass records the choice on the ops;
// `convert-cascade-to-gpu` reads it (and applies these defaults to ops that
// carry none). Tuning happens through the options below (pass options) or by
// writing the attribute, never through the environment.
//
//===----------------------------------------------------------------------===//

#ifndef CASCADE_CONVERSION_KERNELCONFIG_H
#define CASCADE_CONVERSION_KERNELCONFIG_H

#include "cascade/Dialect/Cascade/IR/CascadeOps.h"

namespace mlir {
namespace cascade {

/// Knobs of the default selection; 0 means "choose automatically".
struct KernelConfigOptions {
  /// Merge kernels: threads per block (rounded to whole states).
  int64_t mergeThreads = 128;
  /// rows family: threads per block, KV tokens per stage, the deepest
  /// pipeline and the shared memory budget of the K/V stages (KiB).
  int64_t rowsThreads = 128;
  int64_t rowsKVTile = 32;
  int64_t rowsMaxStages = 4;
  int64_t rowsSmemKiB = 40;
  /// Decode runs on the rows family while the GQA group is at most this
  /// (and head_dim / 8 divides a warp); larger groups use tensor cores, as
  /// FlashInfer's use_tensor_cores.
  int64_t rowsMaxGroup = 8;
  /// mma_sync family: packed query rows per block, KV tokens per stage,
  /// pipeline stages and warps along the KV tile.
  int64_t mmaQTile = 0;
  int64_t mmaKVTile = 0;
  int64_t mmaStages = 0;
  int64_t mmaWarpsKV = 0;
};

/// The shared memory (bytes) a block of the mma_sync attention kernel uses
/// for `config` at `headDim`: the query tile, the K/V pipeline stages, or
/// the staging of the warps' partial states, whichever is larger.
int64_t mmaAttentionSharedBytes(KernelConfigAttr config, int64_t headDim);
/// Shared memory per block that a kernel may use on the targets we build for
/// (sm_80 and sm_90: 227 KiB with the opt-in attribute).
inline constexpr int64_t kMaxSharedBytesPerBlock = 227 * 1024;

/// Whether the rows family can run an attention op of this shape: head_dim
/// / 8 lanes must divide a warp (head_dim 8, 16, 32, 64, 128, 256).
bool rowsFamilySupportsHeadDim(int64_t headDim);

/// The default kernel configuration of `op` (a merge op or
/// cascade.paged_attention). Emits a diagnostic and fails where no kernel
/// family can run the op.
FailureOr<KernelConfigAttr> selectKernelConfig(Operation *op,
                                               const KernelConfigOptions &opts);

} // namespace cascade
} // namespace mlir

#endif // CASCADE_CONVERSION_KERNELCONFIG_H
