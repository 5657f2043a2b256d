// The kernel bundle is the contract with the runtime (docs/kernel-bundle.md):
// PTX entries and a manifest naming every parameter in PTX order, the grid
// rule, and the plan arrays a split-KV kernel reads.
// RUN: rm -rf %t && cascade-opt %s --cascade-to-ptx="bundle-dir=%t" -o /dev/null
// RUN: FileCheck %s --check-prefix=PTX < %t/kernels.ptx
// One line per kernel (keys sorted), then the bundle header.
// RUN: %python -c "import json,sys; m=json.load(open(sys.argv[1])); [print(json.dumps(k, sort_keys=True)) for k in m['kernels']]; print(json.dumps({k: v for k, v in m.items() if k != 'kernels'}, sort_keys=True))" %t/manifest.json | FileCheck %s

// On sm_90 every kernel first waits for the grids launched before it, then
// lets those after it start (programmatic dependent launch), before any
// memory access.
// PTX: .visible .entry cascade_decode_split_rows_f16_f16_d128_g4_h8_p16_nhd_pool_t16x8_kv32_s2(
// PTX-NOT: ld.global
// PTX: griddepcontrol.wait;
// PTX-NEXT: griddepcontrol.launch_dependents;
// PTX: .visible .entry cascade_merge_states_indptr_f16_d128_h32_byreq_b2_t128(
// PTX-NOT: ld.global
// PTX: griddepcontrol.wait;
// PTX-NEXT: griddepcontrol.launch_dependents;
// PTX: .visible .entry cascade_prefill_split_causal_mma_f16_f16_d128_g4_h8_p16_nhd_pool_w4x1_q128_kv32_s3(
// PTX: .visible .entry cascade_merge_states_indptr_f16_d128_h32_byrow_b2_t128(

// Every attention kernel takes the row and head strides of q and o (a
// strided view's, else their "default": the contiguous layout's) and, with
// a page table, the page stride of the cache; the split merge those of o.
// Split mode launches the padded grid (CUDA-graph stable), one block per
// (work item, KV head); kv_chunk_size is read from device memory.
// CHECK: {"block": [16, 1, 8], "dynamic_shared_bytes": 0,
// CHECK-SAME: "grid": [{"div": 1, "param": "padded_batch_size"}, 8, 1]
// CHECK-SAME: "name": "cascade_decode_split_rows_f16_f16_d128_g4_h8_p16_nhd_pool_t16x8_kv32_s2", "op": "decode_split"
// CHECK-SAME: "params": [{"dtype": "f16", "kind": "memref", "name": "q"}, {"dtype": "f16", "kind": "memref", "name": "kv_cache"}, {"dtype": "i32", "kind": "memref", "name": "kv_indptr"}, {"dtype": "i32", "kind": "memref", "name": "kv_indices"}, {"dtype": "i32", "kind": "memref", "name": "kv_last_page_len"}, {"dtype": "i32", "kind": "memref", "name": "request_indices"}, {"dtype": "i32", "kind": "memref", "name": "kv_tile_indices"}, {"dtype": "i32", "kind": "memref", "name": "o_indptr"}, {"dtype": "u8", "kind": "memref", "name": "block_valid_mask"}, {"dtype": "i32", "kind": "memref", "name": "kv_chunk_size"}, {"dtype": "f32", "kind": "memref", "name": "tmp_v"}, {"dtype": "f32", "kind": "memref", "name": "tmp_s"}, {"dtype": "f16", "kind": "memref", "name": "o"}, {"dtype": "f32", "kind": "memref", "name": "lse"}, {"kind": "i64", "name": "padded_batch_size"}, {"default": 4096, "kind": "i64", "name": "q_stride_n"}, {"default": 128, "kind": "i64", "name": "q_stride_h"}, {"default": 4096, "kind": "i64", "name": "o_stride_n"}, {"default": 128, "kind": "i64", "name": "o_stride_h"}, {"default": 32768, "kind": "i64", "name": "kv_stride_page"}]
// CHECK-SAME: "pdl": true, "plan_arrays": ["request_indices", "kv_tile_indices", "o_indptr", "block_valid_mask", "kv_chunk_size", "tmp_v", "tmp_s"]
// CHECK-SAME: "ptx": "kernels.ptx", "static": {"accumulate": false, "causal": false, "gqa_group_size": 4, "head_dim": 128, "kernel_family": "rows", "kv_dtype": "f16",
// The merge of a decode's partial states: rows of o_indptr (per request),
// 8 states of 16 threads a block, and a spare block per partial row over
// which the states of a small batch spread their chunks.
// CHECK-NEXT: {"block": [128, 1, 1], "dynamic_shared_bytes": 0, "grid": [{"add": "partial_rows_capacity", "div": 8, "mul": 32, "param": "num_rows"}, 1, 1]
// CHECK-SAME: "name": "cascade_merge_states_indptr_f16_d128_h32_byreq_b2_t128", "op": "merge_states_indptr"
// CHECK-SAME: "plan_arrays": ["o_indptr", "tmp_v", "tmp_s"]
// CHECK-SAME: "static": {"accumulate": false, "head_dim": 128, "indptr": "o_indptr", "kernel_family": "merge",
// A split prefill on tensor cores: 128 packed rows a block, the dynamic
// shared memory of its Q tile and 3 K/V stages, the query tile the runtime
// must plan with, and the plan arrays including qo_tile_indices.
// CHECK-NEXT: {"block": [32, 4, 1], "dynamic_shared_bytes": 81920, "grid": [{"div": 1, "param": "padded_batch_size"}, 8, 1]
// CHECK-SAME: "name": "cascade_prefill_split_causal_mma_f16_f16_d128_g4_h8_p16_nhd_pool_w4x1_q128_kv32_s3", "op": "prefill_split"
// CHECK-SAME: {"dtype": "i32", "kind": "memref", "name": "qo_tile_indices"}, {"dtype": "f16", "kind": "memref", "name": "o"}, {"dtype": "f32", "kind": "memref", "name": "lse"}, {"kind": "i64", "name": "padded_batch_size"}, {"default": 4096, "kind": "i64", "name": "q_stride_n"}, {"default": 128, "kind": "i64", "name": "q_stride_h"}, {"default": 4096, "kind": "i64", "name": "o_stride_n"}, {"default": 128, "kind": "i64", "name": "o_stride_h"}, {"default": 32768, "kind": "i64", "name": "kv_stride_page"}, {"kind": "i64", "name": "batch_size"}]
// CHECK-SAME: "plan_arrays": ["request_indices", "kv_tile_indices", "o_indptr", "block_valid_mask", "kv_chunk_size", "tmp_v", "tmp_s", "qo_tile_indices"]
// CHECK-SAME: "kernel_family": "mma_sync"
// CHECK-SAME: "qo_tile_size": 128
// The merge of a prefill's partial states: rows of merge_indptr (per query
// row). Its grid covers the plan's row capacity (CUDA-graph stable); the
// real rows, qo_indptr[batch_size], are read on the device.
// CHECK-NEXT: "grid": [{"div": 8, "mul": 32, "param": "row_capacity"}, 1, 1]
// CHECK-SAME: "name": "cascade_merge_states_indptr_f16_d128_h32_byrow_b2_t128", "op": "merge_states_indptr"
// CHECK-SAME: "params": [{"dtype": "i32", "kind": "memref", "name": "merge_indptr"}, {"dtype": "f32", "kind": "memref", "name": "tmp_v"}, {"dtype": "f32", "kind": "memref", "name": "tmp_s"}, {"dtype": "f16", "kind": "memref", "name": "o"}, {"dtype": "f32", "kind": "memref", "name": "lse"}, {"dtype": "i32", "kind": "memref", "name": "qo_indptr"}, {"kind": "i64", "name": "row_capacity"}, {"kind": "i64", "name": "batch_size"}, {"default": 4096, "kind": "i64", "name": "o_stride_n"}, {"default": 128, "kind": "i64", "name": "o_stride_h"}]
// CHECK-SAME: "plan_arrays": ["merge_indptr", "tmp_v", "tmp_s"]
// CHECK-NEXT: {"format": "cascade-kernel-bundle", "target": {"chip": "sm_90", "features": "+ptx80"}, "version": 1}

func.func @decode_split(%q: memref<?x32x128xf16>, %cache: memref<?x2x16x8x128xf16>,
                        %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>,
                        %ri: memref<?xi32>, %kt: memref<?xi32>, %oi: memref<?xi32>, %mask: memref<?xi8>,
                        %chunk: memref<1xi32>, %tv: memref<?x32x128xf32>, %ts: memref<?x32xf32>,
                        %o: memref<?x32x128xf16>, %lse: memref<?x32xf32>) {
  cascade.paged_attention q(%q : memref<?x32x128xf16>) kv(%cache : memref<?x2x16x8x128xf16>)
      kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>) kv_last_page_len(%last : memref<?xi32>)
      plan(%ri, %kt, %oi, %mask, %chunk, %tv, %ts : memref<?xi32>, memref<?xi32>, memref<?xi32>, memref<?xi8>, memref<1xi32>, memref<?x32x128xf32>, memref<?x32xf32>)
      outs(%o, %lse : memref<?x32x128xf16>, memref<?x32xf32>) {page_size = 16 : i64}
  return
}

func.func @prefill_split(%q: memref<?x32x128xf16>, %cache: memref<?x2x16x8x128xf16>, %qo: memref<?xi32>,
                         %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>,
                         %ri: memref<?xi32>, %kt: memref<?xi32>, %oi: memref<?xi32>, %mask: memref<?xi8>,
                         %chunk: memref<1xi32>, %tv: memref<?x32x128xf32>, %ts: memref<?x32xf32>,
                         %qt: memref<?xi32>, %mi: memref<?xi32>,
                         %o: memref<?x32x128xf16>, %lse: memref<?x32xf32>) {
  cascade.paged_attention q(%q : memref<?x32x128xf16>) kv(%cache : memref<?x2x16x8x128xf16>)
      qo_indptr(%qo : memref<?xi32>) kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>)
      kv_last_page_len(%last : memref<?xi32>)
      plan(%ri, %kt, %oi, %mask, %chunk, %tv, %ts, %qt, %mi : memref<?xi32>, memref<?xi32>, memref<?xi32>, memref<?xi8>, memref<1xi32>, memref<?x32x128xf32>, memref<?x32xf32>, memref<?xi32>, memref<?xi32>)
      outs(%o, %lse : memref<?x32x128xf16>, memref<?x32xf32>) {page_size = 16 : i64, causal}
  return
}
