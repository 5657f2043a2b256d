//===- BundleContract.h - Names shared by compiler and runtime --*- C++ -*-===//
//
// The names a kernel bundle (docs/kernel-bundle.md) and a plan
// (docs/plan-schema.md) are written and read with: manifest keys, kernel op
// names, the keys of a kernel's "static" object, plan arrays and plan
// scalars. The compiler writes them, the runtime and the Python package read
// them; each is spelled here once. Header-only, no MLIR, C++17.
//
// The namespace is ::cascade::contract: a compiler file that says `using
// namespace mlir;` and includes this qualifies its own definitions as
// mlir::cascade::... (a bare cascade:: would be ambiguous).
//
//===----------------------------------------------------------------------===//

#ifndef CASCADE_CONTRACT_BUNDLECONTRACT_H
#define CASCADE_CONTRACT_BUNDLECONTRACT_H

#include <cstdint>

namespace cascade::contract {

/// manifest.json: the document and each kernel entry.
namespace manifest {
inline constexpr char kFileName[] = "manifest.json";
inline constexpr char kPtxFileName[] = "kernels.ptx";
inline constexpr char kFormatName[] = "cascade-kernel-bundle";
inline constexpr int64_t kVersion = 1;

// Top-level keys.
inline constexpr char kFormat[] = "format";
inline constexpr char kVersionKey[] = "version";
inline constexpr char kTarget[] = "target";
inline constexpr char kChip[] = "chip";
inline constexpr char kFeatures[] = "features";
inline constexpr char kKernels[] = "kernels";

// Keys of one kernel.
inline constexpr char kName[] = "name";
inline constexpr char kPtx[] = "ptx";
inline constexpr char kOp[] = "op";
inline constexpr char kBlock[] = "block";
inline constexpr char kGrid[] = "grid";
inline constexpr char kDynamicSharedBytes[] = "dynamic_shared_bytes";
inline constexpr char kStatic[] = "static";
inline constexpr char kParams[] = "params";
inline constexpr char kPlanArrays[] = "plan_arrays";
/// true: the kernel's threads wait for the grids launched before it
/// (griddepcontrol.wait) before their first memory access, so the runtime
/// may launch it as a programmatic dependent of the kernel before it
/// (docs/kernel-bundle.md). Absent: false.
inline constexpr char kPdl[] = "pdl";
inline constexpr const char *kKernelKeys[] = {
    kName,   kPtx,    kOp,         kBlock, kGrid, kDynamicSharedBytes,
    kStatic, kParams, kPlanArrays, kPdl};

// Keys of one parameter ("name" as above) and the parameter kinds.
inline constexpr char kKind[] = "kind";
inline constexpr char kDType[] = "dtype";
/// A scalar parameter's value where the caller binds none (an integer).
inline constexpr char kDefault[] = "default";
inline constexpr char kKindMemref[] = "memref";
inline constexpr char kKindPtr[] = "ptr";
inline constexpr char kKindI32[] = "i32";
inline constexpr char kKindI64[] = "i64";
inline constexpr char kKindF32[] = "f32";

// Keys of a computed grid entry.
inline constexpr char kGridParam[] = "param";
inline constexpr char kGridDiv[] = "div";
inline constexpr char kGridMul[] = "mul";
inline constexpr char kGridAdd[] = "add";
inline constexpr const char *kGridKeys[] = {kGridParam, kGridDiv, kGridMul,
                                            kGridAdd};
} // namespace manifest

/// The "op" of a kernel: what it computes, which the runtime binds it for.
namespace op {
inline constexpr char kMergeState[] = "merge_state";
inline constexpr char kMergeStateInPlace[] = "merge_state_in_place";
inline constexpr char kMergeStates[] = "merge_states";
inline constexpr char kMergeStatesIndptr[] = "merge_states_indptr";
inline constexpr char kDecode[] = "decode";
inline constexpr char kDecodeSplit[] = "decode_split";
inline constexpr char kPrefill[] = "prefill";
inline constexpr char kPrefillSplit[] = "prefill_split";
inline constexpr const char *kAll[] = {
    kMergeState, kMergeStateInPlace, kMergeStates, kMergeStatesIndptr,
    kDecode,     kDecodeSplit,       kPrefill,     kPrefillSplit};
} // namespace op

/// Keys of a kernel's "static" object (what it was specialised on). The
/// attention configuration (AttentionConfig.h) uses the same names.
namespace key {
inline constexpr char kHeadDim[] = "head_dim";
/// The head_dim of v and the output, where it differs from head_dim (q's
/// and k's); absent: head_dim.
inline constexpr char kHeadDimVo[] = "head_dim_vo";
inline constexpr char kNumQoHeads[] = "num_qo_heads";
inline constexpr char kNumKvHeads[] = "num_kv_heads";
inline constexpr char kGqaGroupSize[] = "gqa_group_size";
inline constexpr char kPageSize[] = "page_size";
inline constexpr char kKvLayout[] = "kv_layout"; ///< "nhd" / "hnd"
inline constexpr char kLayout[] = "layout";      ///< "NHD" / "HND"
inline constexpr char kKvForm[] = "kv_form";     ///< "pool" / "pair" / "ragged"
inline constexpr char kQDType[] = "q_dtype";
inline constexpr char kKvDType[] = "kv_dtype";
inline constexpr char kODType[] = "o_dtype";
inline constexpr char kVDType[] = "v_dtype";
inline constexpr char kKvScale[] = "kv_scale"; ///< "none" / "per_tensor"
inline constexpr char kCausal[] = "causal";
// The score options' keys: ScoreOptions::forEachMember (AttentionConfig.h).
inline constexpr char kLseBase[] = "lse_base"; ///< 2 or "e"
inline constexpr char kTileTokens[] = "tile_tokens";
inline constexpr char kStages[] = "stages";
inline constexpr char kKernelFamily[] = "kernel_family";
inline constexpr char kAccumulate[] = "accumulate";
inline constexpr char kQoTileSize[] = "qo_tile_size";
inline constexpr char kMask[] = "mask";     ///< "none" or the mask dtype
inline constexpr char kIndptr[] = "indptr"; ///< plan::kOIndptr / kMergeIndptr
/// true on prefill kernels that take a custom mask (absent otherwise).
inline constexpr char kCustomMask[] = "custom_mask";
// A state input's name (AttentionGroup::stateInputs) is a static too: true
// on the attention kernels and split merges that take it, absent otherwise.
/// false on kernels without a page table (no kv_indices parameter: request
/// i's pages are kv_indptr[i] onwards); absent otherwise.
inline constexpr char kPageTable[] = "page_table";
} // namespace key

/// Values of the "kernel_family" static.
namespace family {
inline constexpr char kMmaSync[] = "mma_sync";
inline constexpr char kWgmma[] = "wgmma";
inline constexpr char kRows[] = "rows";
inline constexpr char kMerge[] = "merge";
} // namespace family

/// Plans: the caller's index arrays, the plan's arrays (int workspace
/// sections and kernel parameters of the same name), the partial states of
/// split-KV, and the plan's scalars (Plan::scalar, kernel scalars and grid
/// parameters).
namespace plan {
// The caller's index arrays.
inline constexpr char kQoIndptr[] = "qo_indptr";
inline constexpr char kKvIndptr[] = "kv_indptr";
inline constexpr char kKvIndices[] = "kv_indices";
inline constexpr char kKvLastPageLen[] = "kv_last_page_len";

// The plan's arrays.
inline constexpr char kRequestIndices[] = "request_indices";
inline constexpr char kKvTileIndices[] = "kv_tile_indices";
inline constexpr char kQoTileIndices[] = "qo_tile_indices";
inline constexpr char kOIndptr[] = "o_indptr";
inline constexpr char kMergeIndptr[] = "merge_indptr";
inline constexpr char kBlockValidMask[] = "block_valid_mask";
/// A scalar that is also a one-element device array (read by the kernels
/// so that a captured CUDA graph stays right after a replan).
inline constexpr char kKvChunkSize[] = "kv_chunk_size";
// Partial states of split-KV (float workspace).
inline constexpr char kTmpV[] = "tmp_v";
inline constexpr char kTmpS[] = "tmp_s";

// Scalars.
inline constexpr char kBatchSize[] = "batch_size";
inline constexpr char kNumRows[] = "num_rows";
inline constexpr char kRowCapacity[] = "row_capacity";
inline constexpr char kSplitKv[] = "split_kv";
inline constexpr char kPaddedBatchSize[] = "padded_batch_size";
inline constexpr char kNumWorkItems[] = "num_work_items";
inline constexpr char kKvChunkSizePages[] = "kv_chunk_size_pages";
inline constexpr char kNumPartialRows[] = "num_partial_rows";
inline constexpr char kPartialRowsCapacity[] = "partial_rows_capacity";
/// The integer scalars of a plan, in the order plans are printed
/// (docs/plan-schema.md); split_kv is a boolean beside them.
inline constexpr const char *kIntScalars[] = {
    kBatchSize,       kNumRows,        kRowCapacity,        key::kNumQoHeads,
    key::kNumKvHeads, key::kHeadDim,   key::kPageSize,      key::kGqaGroupSize,
    kPaddedBatchSize, kNumWorkItems,   kKvChunkSize,        kKvChunkSizePages,
    key::kQoTileSize, kNumPartialRows, kPartialRowsCapacity};
} // namespace plan

/// Kernel parameters the caller's tensors bind to.
namespace param {
inline constexpr char kQ[] = "q";
inline constexpr char kKvCache[] = "kv_cache";
inline constexpr char kKCache[] = "k_cache";
inline constexpr char kVCache[] = "v_cache";
inline constexpr char kO[] = "o";
inline constexpr char kLse[] = "lse";
/// f32 scalars of the kernels that read an fp8 KV cache: the per-tensor
/// dequantization scales (k_scale multiplies the logits, v_scale the output;
/// docs/semantics.md).
inline constexpr char kKScale[] = "k_scale";
inline constexpr char kVScale[] = "v_scale";
/// The custom mask of a prefill kernel (FlashInfer's packed layout, i8) and
/// its per-request byte offsets (i32 [B+1]); docs/semantics.md.
inline constexpr char kCustomMask[] = "custom_mask";
inline constexpr char kMaskIndptr[] = "mask_indptr";
// A state input (AttentionGroup::stateInputs) is a buffer parameter of an
// attention kernel or split merge named as the input, f32 [num_qo_heads],
// beside a static of that name, true: the runtime binds it by name from
// the caller (Program::run).

/// Element strides of q's and o's rows and heads (i64; head_dim is
/// contiguous): attention kernels take q_stride_n / q_stride_h and, where
/// they write o (and the split merge), o_stride_n / o_stride_h, each with
/// the contiguous layout's value as the manifest's "default". A caller
/// binds them for a strided view (a q sliced from a packed QKV projection,
/// an `out` view of a larger buffer).
inline constexpr char kQStrideN[] = "q_stride_n";
inline constexpr char kQStrideH[] = "q_stride_h";
inline constexpr char kOStrideN[] = "o_stride_n";
inline constexpr char kOStrideH[] = "o_stride_h";
/// Element strides of ragged K and V (kernels without a page table): of a
/// token (a one-token page) and of a head, shared by K and V.
inline constexpr char kKvStrideN[] = "kv_stride_n";
inline constexpr char kKvStrideH[] = "kv_stride_h";
/// Ragged V's own token and head strides, where v's head_dim differs from
/// k's (head_dim_vo; otherwise V shares K's kv_stride_*).
inline constexpr char kVStrideN[] = "v_stride_n";
inline constexpr char kVStrideH[] = "v_stride_h";
/// Element stride of a page of a paged cache (kernels with a page table):
/// K's, or a pool page's (K and V); V shares it, except where v's head_dim
/// differs from k's (v_stride_page, its own). The contiguous cache's by
/// default; a larger one where the cache is a view of a larger tensor (one
/// layer of a cache of every layer), whose pages keep their contiguous
/// layout inside.
inline constexpr char kKvStridePage[] = "kv_stride_page";
inline constexpr char kVStridePage[] = "v_stride_page";
} // namespace param

} // namespace cascade::contract

#endif // CASCADE_CONTRACT_BUNDLECONTRACT_H
