/*===- cascade_runtime.h - C API of the Cascade-MLIR runtime -----*- C -*-===*\
|*                                                                            *|
|* The MLIR-free runtime of Cascade-MLIR behind a plain C interface, for      *|
|* embedding in other runtimes and for ctypes. Every function returns a       *|
|* cascade_status_t; on failure cascade_last_error() gives a message (per     *|
|* thread, valid until the next failing call on that thread).                 *|
|*                                                                            *|
\*===----------------------------------------------------------------------===*/

#ifndef CASCADE_RUNTIME_CASCADE_RUNTIME_H
#define CASCADE_RUNTIME_CASCADE_RUNTIME_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define CASCADE_RT_EXPORT __attribute__((visibility("default")))
#else
#define CASCADE_RT_EXPORT
#endif

/** Error codes. The numeric values are stable. */
typedef enum cascade_status_t {
  CASCADE_OK = 0,
  CASCADE_ERROR_INVALID_ARGUMENT = 1,  /**< bad scalar option, null pointer */
  CASCADE_ERROR_INVALID_INDPTR = 2,    /**< indptr[0] != 0 or not monotone */
  CASCADE_ERROR_SIZE_MISMATCH = 3,     /**< array lengths disagree */
  CASCADE_ERROR_PAGE_OUT_OF_RANGE = 4, /**< page id outside [0, num_pages) */
  CASCADE_ERROR_INVALID_LAST_PAGE_LEN = 5, /**< not in [1, page_size] */
  CASCADE_ERROR_LEVEL_MISMATCH = 6,      /**< cascade levels disagree on rows */
  CASCADE_ERROR_INVALID_HEADS = 7,       /**< head counts, Hqo % Hkv != 0 */
  CASCADE_ERROR_INVALID_HEAD_DIM = 8,    /**< not a multiple of 8 or > 512 */
  CASCADE_ERROR_INVALID_PAGE_SIZE = 9,   /**< page_size <= 0 */
  CASCADE_ERROR_OVERFLOW = 10,           /**< a size does not fit its type */
  CASCADE_ERROR_PARSE = 11,              /**< malformed JSON */
  CASCADE_ERROR_SCHEMA = 12,             /**< JSON well formed, content wrong */
  CASCADE_ERROR_IO = 13,                 /**< file could not be read */
  CASCADE_ERROR_NOT_FOUND = 14,          /**< no such kernel, param, section */
  CASCADE_ERROR_DRIVER_UNAVAILABLE = 15, /**< libcuda.so.1 not loadable */
  CASCADE_ERROR_DRIVER = 16,             /**< a CUDA driver call failed */
  CASCADE_ERROR_UNSUPPORTED = 17,        /**< valid but not implemented */
  CASCADE_ERROR_INTERNAL = 18
} cascade_status_t;

/** Message of the last failing call on this thread ("" if none). */
CASCADE_RT_EXPORT const char *cascade_last_error(void);
/** Name of a status code, e.g. "CASCADE_ERROR_INVALID_INDPTR". */
CASCADE_RT_EXPORT const char *cascade_status_name(cascade_status_t status);

/*===------------------------------ Plans ---------------------------------===*/

typedef struct cascade_plan *cascade_plan_t;

typedef enum cascade_plan_mode_t {
  CASCADE_PLAN_DECODE = 0,
  CASCADE_PLAN_PREFILL = 1
} cascade_plan_mode_t;

/** Inputs of one plan (one attention level). Arrays are host int32. */
typedef struct cascade_plan_inputs_t {
  cascade_plan_mode_t mode;
  int64_t batch_size;              /**< B */
  const int32_t *qo_indptr;        /**< [B+1]; NULL in decode = arange */
  const int32_t *kv_indptr;        /**< [B+1] */
  const int32_t *kv_last_page_len; /**< [B] */
  /** Page ids or NULL (no check): only the first kv_indptr[B] entries are
   *  read, so a longer (preallocated) buffer may be passed. */
  const int32_t *kv_indices;
  int64_t num_pages; /**< pool size, -1 = unknown */
  int64_t num_qo_heads, num_kv_heads, head_dim, page_size;
  int64_t num_sms;      /**< multiprocessors of the device */
  int64_t occupancy;    /**< blocks per SM of the kernel (>= 1) */
  int32_t cuda_graph;   /**< nonzero: graph-stable sizes */
  int64_t qo_tile_size; /**< prefill: 0 = automatic */
  int64_t max_num_rows; /**< prefill graph capacity, -1 = rows */
} cascade_plan_inputs_t;

/** Fills `inputs` with defaults (decode, occupancy 1, num_pages -1...). */
CASCADE_RT_EXPORT void cascade_plan_inputs_init(cascade_plan_inputs_t *inputs);

/** Plans one level. */
CASCADE_RT_EXPORT cascade_status_t
cascade_plan_create(const cascade_plan_inputs_t *inputs, cascade_plan_t *out);
/** Plans from a JSON batch description (docs/plan-schema.md); a description
 *  with `levels` gives a cascade plan. */
CASCADE_RT_EXPORT cascade_status_t cascade_plan_create_from_json(
    const char *json, size_t length, cascade_plan_t *out);
CASCADE_RT_EXPORT void cascade_plan_destroy(cascade_plan_t plan);

/** Number of levels (1 for a single plan). */
CASCADE_RT_EXPORT int64_t cascade_plan_num_levels(cascade_plan_t plan);
/** A scalar of level `level`: "padded_batch_size", "split_kv",
 *  "kv_chunk_size", "num_rows", "qo_tile_size", "num_partial_rows", ... */
CASCADE_RT_EXPORT cascade_status_t cascade_plan_get_scalar(cascade_plan_t plan,
                                                           int64_t level,
                                                           const char *name,
                                                           int64_t *value);
/** Host image of the whole int workspace (all levels), ready for one copy. */
CASCADE_RT_EXPORT cascade_status_t cascade_plan_int_workspace(
    cascade_plan_t plan, const void **data, int64_t *bytes);
/** Bytes of the float workspace (all levels and cascade level states). */
CASCADE_RT_EXPORT int64_t
cascade_plan_float_workspace_bytes(cascade_plan_t plan);
/** Byte offset (from the workspace start) and size of a section of level
 *  `level`, e.g. "request_indices" (int) or "tmp_v" (float). */
CASCADE_RT_EXPORT cascade_status_t cascade_plan_section(cascade_plan_t plan,
                                                        int64_t level,
                                                        const char *name,
                                                        int64_t *offset,
                                                        int64_t *bytes);
/** The plan as JSON (the cascade-plan output); free with cascade_free. */
CASCADE_RT_EXPORT cascade_status_t cascade_plan_to_json(cascade_plan_t plan,
                                                        char **json);
CASCADE_RT_EXPORT void cascade_free(void *p);

/** Plans the automatic cascade of one plain batch (docs/auto-cascade.md):
 *  `inputs` as for cascade_plan_create, kv_indices required (copied);
 *  `max_levels` <= 0 = the default (3); `shared_qo_tile_size` the query tile
 *  of the prefill kernel of the shared levels (0 = automatic); `causal`
 *  nonzero when the batch runs with causal masking. Without sharing worth a
 *  level the plan has one level, the plain plan. A JSON description with
 *  "auto_cascade" (cascade_plan_create_from_json) gives the same plan. */
CASCADE_RT_EXPORT cascade_status_t cascade_plan_auto_cascade(
    const cascade_plan_inputs_t *inputs, int64_t max_levels,
    int64_t shared_qo_tile_size, int32_t causal, cascade_plan_t *out);
/** An index array of level `level` of an automatic cascade: "qo_indptr"
 *  (NULL, 0 for a decode level without it), "kv_indptr", "kv_indices",
 *  "kv_last_page_len"; owned by the plan. */
CASCADE_RT_EXPORT cascade_status_t
cascade_plan_level_array(cascade_plan_t plan, int64_t level, const char *name,
                         const int32_t **data, int64_t *count);

/*===------------------------ Kernel bundles ------------------------------===*/

typedef struct cascade_bundle *cascade_bundle_t;

/** Parses DIR/manifest.json and reads the PTX files it names. */
CASCADE_RT_EXPORT cascade_status_t cascade_bundle_load(const char *dir,
                                                       cascade_bundle_t *out);
CASCADE_RT_EXPORT void cascade_bundle_destroy(cascade_bundle_t bundle);
CASCADE_RT_EXPORT int64_t cascade_bundle_num_kernels(cascade_bundle_t bundle);
CASCADE_RT_EXPORT const char *cascade_bundle_kernel_name(cascade_bundle_t b,
                                                         int64_t index);
CASCADE_RT_EXPORT const char *cascade_bundle_kernel_op(cascade_bundle_t b,
                                                       int64_t index);

/*===------------------------- CUDA driver --------------------------------===*/

/** Loads libcuda.so.1 (or $CASCADE_CUDA_DRIVER) and calls cuInit. Fails
 *  with CASCADE_ERROR_DRIVER_UNAVAILABLE on machines without a driver. */
CASCADE_RT_EXPORT cascade_status_t cascade_driver_init(void);

/*===------------------- CPU reference (float64 inside) -------------------===*/

/** merge_state: v_* [L, H, D], s_* [L, H] (base-2 LSE). */
CASCADE_RT_EXPORT cascade_status_t cascade_ref_merge_state(
    const float *v_a, const float *s_a, const float *v_b, const float *s_b,
    float *v_out, float *s_out, int64_t rows, int64_t heads, int64_t head_dim);
/** merge_state_in_place with an optional mask (NULL = all rows) of stride
 *  `mask_stride` elements. */
CASCADE_RT_EXPORT cascade_status_t cascade_ref_merge_state_in_place(
    float *v, float *s, const float *v_other, const float *s_other,
    const uint8_t *mask, int64_t mask_stride, int64_t rows, int64_t heads,
    int64_t head_dim);
/** merge_states: v [L, N, H, D], s [L, N, H] -> v_out [L, H, D], s_out. */
CASCADE_RT_EXPORT cascade_status_t cascade_ref_merge_states(
    const float *v, const float *s, float *v_out, float *s_out, int64_t rows,
    int64_t num_states, int64_t heads, int64_t head_dim);
/** fp16 / bf16 <-> fp32, round to nearest even. */
CASCADE_RT_EXPORT void cascade_f32_to_f16(const float *in, uint16_t *out,
                                          int64_t n);
CASCADE_RT_EXPORT void cascade_f16_to_f32(const uint16_t *in, float *out,
                                          int64_t n);
CASCADE_RT_EXPORT void cascade_f32_to_bf16(const float *in, uint16_t *out,
                                           int64_t n);
CASCADE_RT_EXPORT void cascade_bf16_to_f32(const uint16_t *in, float *out,
                                           int64_t n);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* CASCADE_RUNTIME_CASCADE_RUNTIME_H */
