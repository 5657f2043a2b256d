// RUN: cascade-opt %s --cascade-select-kernel-config=chip=sm_90a --convert-cascade-to-gpu | FileCheck %s
// RUN: cascade-opt %s --cascade-select-kernel-config=chip=sm_90a --convert-cascade-to-gpu | FileCheck %s --check-prefix=KERNELS
// RUN: rm -rf %t && cascade-opt %s --cascade-to-ptx="chip=sm_90a bundle-dir=%t" -o /dev/null
// RUN: FileCheck %s --check-prefix=MANIFEST < %t/manifest.json
// RUN: ptxas -arch=sm_90a %t/kernels.ptx -o /dev/null

// Attention sinks (a sink is the state (0, sink * log2(e)) merged once into
// the level's state): an unsplit kernel adds them in its epilogue (the
// `_sink` kernels take a `sinks` f32 buffer after the index arrays); a
// split level's attention kernel is the one without sinks and its merge of
// the partial states adds them (`_byreq_sink`). Every family: rows decode,
// mma_sync decode (large GQA groups), wgmma prefill on sm_90a.

// CHECK-LABEL: func.func @rows_decode
// CHECK: gpu.launch_func @cascade_kernels::@cascade_decode_rows_f16_f16_d128_g4_h8_p16_nhd_pool_sink_t16x8_kv32_s2
// MANIFEST-DAG: "name": "cascade_decode_rows_f16_f16_d128_g4_h8_p16_nhd_pool_sink_t16x8_kv32_s2"
func.func @rows_decode(%q: memref<?x32x128xf16>, %cache: memref<?x2x16x8x128xf16>,
                       %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>,
                       %sinks: memref<32xf32>, %o: memref<?x32x128xf16>, %lse: memref<?x32xf32>) {
  cascade.paged_attention q(%q : memref<?x32x128xf16>) kv(%cache : memref<?x2x16x8x128xf16>)
      kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>) kv_last_page_len(%last : memref<?xi32>)
      sinks(%sinks : memref<32xf32>)
      outs(%o, %lse : memref<?x32x128xf16>, memref<?x32xf32>) {page_size = 16 : i64}
  return
}

// Split: the attention kernel has no sinks parameter; the merge takes them.
// CHECK-LABEL: func.func @mma_decode_split
// CHECK: gpu.launch_func @cascade_kernels::@cascade_decode_split_mma_f16_f16_d128_g16_h2_p16_nhd_pool_w1x4_q16_kv128_s3
// CHECK: gpu.launch_func @cascade_kernels::@cascade_merge_states_indptr_f16_d128_h32_byreq_sink_b2_t128
// KERNELS: gpu.func @cascade_decode_split_mma_f16_f16_d128_g16_h2_p16_nhd_pool_w1x4_q16_kv128_s3(
// KERNELS-NOT: name = "sinks"
// KERNELS-SAME: known_block_size
// KERNELS: gpu.func @cascade_merge_states_indptr_f16_d128_h32_byreq_sink_b2_t128(
// KERNELS-SAME: {dtype = "f32", kind = "memref", name = "lse"}, {dtype = "f32", kind = "memref", name = "sinks"}, {kind = "i64", name = "num_rows"}
// KERNELS-SAME: sinks = true
// MANIFEST-DAG: "name": "cascade_merge_states_indptr_f16_d128_h32_byreq_sink_b2_t128"
func.func @mma_decode_split(%q: memref<?x32x128xf16>, %cache: memref<?x2x16x2x128xf16>,
    %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>, %sinks: memref<32xf32>,
    %ri: memref<?xi32>, %kt: memref<?xi32>, %oi: memref<?xi32>, %mask: memref<?xi8>, %chunk: memref<1xi32>,
    %tv: memref<?x32x128xf32>, %ts: memref<?x32xf32>,
    %o: memref<?x32x128xf16>, %lse: memref<?x32xf32>) {
  cascade.paged_attention q(%q : memref<?x32x128xf16>) kv(%cache : memref<?x2x16x2x128xf16>)
      kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>) kv_last_page_len(%last : memref<?xi32>)
      sinks(%sinks : memref<32xf32>)
      plan(%ri, %kt, %oi, %mask, %chunk, %tv, %ts : memref<?xi32>, memref<?xi32>, memref<?xi32>, memref<?xi8>, memref<1xi32>, memref<?x32x128xf32>, memref<?x32xf32>)
      outs(%o, %lse : memref<?x32x128xf16>, memref<?x32xf32>) {page_size = 16 : i64}
  return
}

// A causal prefill on sm_90a's default family (wgmma) with base-e lse: the
// sinks join in base 2 before the lse is converted.
// CHECK-LABEL: func.func @wgmma_prefill
// CHECK: gpu.launch_func @cascade_kernels::@cascade_prefill_causal_wgmma_bf16_bf16_d128_g4_h8_p16_nhd_pool_sink_lsee_w4x1_q192_kv64_s4
// MANIFEST-DAG: "name": "cascade_prefill_causal_wgmma_bf16_bf16_d128_g4_h8_p16_nhd_pool_sink_lsee_w4x1_q192_kv64_s4"
func.func @wgmma_prefill(%q: memref<?x32x128xbf16>, %cache: memref<?x2x16x8x128xbf16>,
    %qo: memref<?xi32>, %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>,
    %sinks: memref<32xf32>, %o: memref<?x32x128xbf16>, %lse: memref<?x32xf32>) {
  cascade.paged_attention q(%q : memref<?x32x128xbf16>) kv(%cache : memref<?x2x16x8x128xbf16>)
      qo_indptr(%qo : memref<?xi32>) kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>)
      kv_last_page_len(%last : memref<?xi32>) sinks(%sinks : memref<32xf32>)
      outs(%o, %lse : memref<?x32x128xbf16>, memref<?x32xf32>)
      {page_size = 16 : i64, causal, lse_base = #cascade.lse_base<base_e>}
  return
}

