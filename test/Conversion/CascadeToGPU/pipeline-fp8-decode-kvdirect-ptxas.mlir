// REQUIRES: ptxas
// The fp8 decode benchmark's shape (32/8 heads, head_dim 128, page 16, e4m3
// pool; test/Integration/gpu/fp8_kernels.mlir's FORCED_DECODE) at the
// mma_sync configurations that read K and V from their fp8 staging rings
// (fp8_staging = direct_kv, `_kvdirect`), plain and split-KV, without a
// launch bound: each lowers
// under its own name, takes the shared memory of the staging rings alone
// (the Q tile in the last V stage; at 2 stages of 64-key tiles the 4 warps'
// partial states, 16 x 4 x 130 f32, are larger), and ptxas accepts it with
// no spills and fewer than 200 registers, so a variant that stops fitting
// fails here and not first on the GPU machine.
// (kv128w8, 8 warps along 128-key tiles, spilled before the direct path
// too and is left out.)
// RUN: rm -rf %t && cascade-opt %s --cascade-to-ptx="bundle-dir=%t" -o /dev/null
// RUN: FileCheck %s --check-prefix=MANIFEST < %t/manifest.json
// RUN: %ptxas -arch=sm_90 -v %t/kernels.ptx -o /dev/null 2>&1 | FileCheck %s --check-prefix=PTXAS

// MANIFEST-DAG: "name": "cascade_decode_mma_f16_f8e4m3_d128_g4_h8_p16_nhd_pool_w1x2_q16_kv32_s4_kvdirect"
// MANIFEST-DAG: "name": "cascade_decode_split_mma_f16_f8e4m3_d128_g4_h8_p16_nhd_pool_w1x2_q16_kv32_s4_kvdirect"
// MANIFEST-DAG: "name": "cascade_decode_mma_f16_f8e4m3_d128_g4_h8_p16_nhd_pool_w1x2_q16_kv32_s5_kvdirect"
// MANIFEST-DAG: "name": "cascade_decode_split_mma_f16_f8e4m3_d128_g4_h8_p16_nhd_pool_w1x2_q16_kv32_s5_kvdirect"
// MANIFEST-DAG: "name": "cascade_decode_mma_f16_f8e4m3_d128_g4_h8_p16_nhd_pool_w1x2_q16_kv32_s6_kvdirect"
// MANIFEST-DAG: "name": "cascade_decode_split_mma_f16_f8e4m3_d128_g4_h8_p16_nhd_pool_w1x2_q16_kv32_s6_kvdirect"
// MANIFEST-DAG: "name": "cascade_decode_mma_f16_f8e4m3_d128_g4_h8_p16_nhd_pool_w1x2_q16_kv32_s8_kvdirect"
// MANIFEST-DAG: "name": "cascade_decode_split_mma_f16_f8e4m3_d128_g4_h8_p16_nhd_pool_w1x2_q16_kv32_s8_kvdirect"
// MANIFEST-DAG: "name": "cascade_decode_mma_f16_f8e4m3_d128_g4_h8_p16_nhd_pool_w1x4_q16_kv64_s2_kvdirect"
// MANIFEST-DAG: "name": "cascade_decode_split_mma_f16_f8e4m3_d128_g4_h8_p16_nhd_pool_w1x4_q16_kv64_s2_kvdirect"
// MANIFEST-DAG: "name": "cascade_decode_mma_f16_f8e4m3_d128_g4_h8_p16_nhd_pool_w1x4_q16_kv64_s3_kvdirect"
// MANIFEST-DAG: "name": "cascade_decode_split_mma_f16_f8e4m3_d128_g4_h8_p16_nhd_pool_w1x4_q16_kv64_s3_kvdirect"
// MANIFEST-DAG: "name": "cascade_decode_mma_f16_f8e4m3_d128_g4_h8_p16_nhd_pool_w1x4_q16_kv64_s4_kvdirect"
// MANIFEST-DAG: "name": "cascade_decode_split_mma_f16_f8e4m3_d128_g4_h8_p16_nhd_pool_w1x4_q16_kv64_s4_kvdirect"
// MANIFEST-DAG: "dynamic_shared_bytes": 32768,
// MANIFEST-DAG: "dynamic_shared_bytes": 40960,
// MANIFEST-DAG: "dynamic_shared_bytes": 49152,
// MANIFEST-DAG: "dynamic_shared_bytes": 65536,
// MANIFEST-DAG: "dynamic_shared_bytes": 33280,
// PTXAS: Compiling entry function 'cascade_
// PTXAS-NOT: {{[1-9][0-9]*}} bytes spill stores
// PTXAS-NOT: {{[1-9][0-9]*}} bytes spill loads
// PTXAS-NOT: Used {{[2-9][0-9][0-9]}} registers

func.func @decode_kv32s4(%q: memref<?x32x128xf16>, %kv: memref<?x2x16x8x128xf8E4M3FN>, %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>,
    %ks: f32, %vs: f32, %o: memref<?x32x128xf16>, %lse: memref<?x32xf32>) {
  cascade.paged_attention q(%q : memref<?x32x128xf16>) kv(%kv : memref<?x2x16x8x128xf8E4M3FN>)
      kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>) kv_last_page_len(%last : memref<?xi32>)
      k_scale(%ks) v_scale(%vs)
      outs(%o, %lse : memref<?x32x128xf16>, memref<?x32xf32>) {page_size = 16 : i64, cascade.kernel_config = #cascade.kernel_config<mma_sync, threads = [32, 1, 2], q_tile = 16, kv_tile = 32, stages = 4, fp8_staging = direct_kv>}
  return
}

func.func @split_kv32s4(%q: memref<?x32x128xf16>, %kv: memref<?x2x16x8x128xf8E4M3FN>, %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>,
    %ri: memref<?xi32>, %kt: memref<?xi32>, %oi: memref<?xi32>, %mask: memref<?xi8>, %chunk: memref<1xi32>, %tv: memref<?x32x128xf32>, %ts: memref<?x32xf32>,
    %ks: f32, %vs: f32, %o: memref<?x32x128xf16>, %lse: memref<?x32xf32>) {
  cascade.paged_attention q(%q : memref<?x32x128xf16>) kv(%kv : memref<?x2x16x8x128xf8E4M3FN>)
      kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>) kv_last_page_len(%last : memref<?xi32>)
      k_scale(%ks) v_scale(%vs)
      plan(%ri, %kt, %oi, %mask, %chunk, %tv, %ts : memref<?xi32>, memref<?xi32>, memref<?xi32>, memref<?xi8>, memref<1xi32>, memref<?x32x128xf32>, memref<?x32xf32>)
      outs(%o, %lse : memref<?x32x128xf16>, memref<?x32xf32>) {page_size = 16 : i64, cascade.kernel_config = #cascade.kernel_config<mma_sync, threads = [32, 1, 2], q_tile = 16, kv_tile = 32, stages = 4, fp8_staging = direct_kv>}
  return
}

func.func @decode_kv32s5(%q: memref<?x32x128xf16>, %kv: memref<?x2x16x8x128xf8E4M3FN>, %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>,
    %ks: f32, %vs: f32, %o: memref<?x32x128xf16>, %lse: memref<?x32xf32>) {
  cascade.paged_attention q(%q : memref<?x32x128xf16>) kv(%kv : memref<?x2x16x8x128xf8E4M3FN>)
      kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>) kv_last_page_len(%last : memref<?xi32>)
      k_scale(%ks) v_scale(%vs)
      outs(%o, %lse : memref<?x32x128xf16>, memref<?x32xf32>) {page_size = 16 : i64, cascade.kernel_config = #cascade.kernel_config<mma_sync, threads = [32, 1, 2], q_tile = 16, kv_tile = 32, stages = 5, fp8_staging = direct_kv>}
  return
}

func.func @split_kv32s5(%q: memref<?x32x128xf16>, %kv: memref<?x2x16x8x128xf8E4M3FN>, %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>,
    %ri: memref<?xi32>, %kt: memref<?xi32>, %oi: memref<?xi32>, %mask: memref<?xi8>, %chunk: memref<1xi32>, %tv: memref<?x32x128xf32>, %ts: memref<?x32xf32>,
    %ks: f32, %vs: f32, %o: memref<?x32x128xf16>, %lse: memref<?x32xf32>) {
  cascade.paged_attention q(%q : memref<?x32x128xf16>) kv(%kv : memref<?x2x16x8x128xf8E4M3FN>)
      kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>) kv_last_page_len(%last : memref<?xi32>)
      k_scale(%ks) v_scale(%vs)
      plan(%ri, %kt, %oi, %mask, %chunk, %tv, %ts : memref<?xi32>, memref<?xi32>, memref<?xi32>, memref<?xi8>, memref<1xi32>, memref<?x32x128xf32>, memref<?x32xf32>)
      outs(%o, %lse : memref<?x32x128xf16>, memref<?x32xf32>) {page_size = 16 : i64, cascade.kernel_config = #cascade.kernel_config<mma_sync, threads = [32, 1, 2], q_tile = 16, kv_tile = 32, stages = 5, fp8_staging = direct_kv>}
  return
}

func.func @decode_kv32s6(%q: memref<?x32x128xf16>, %kv: memref<?x2x16x8x128xf8E4M3FN>, %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>,
    %ks: f32, %vs: f32, %o: memref<?x32x128xf16>, %lse: memref<?x32xf32>) {
  cascade.paged_attention q(%q : memref<?x32x128xf16>) kv(%kv : memref<?x2x16x8x128xf8E4M3FN>)
      kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>) kv_last_page_len(%last : memref<?xi32>)
      k_scale(%ks) v_scale(%vs)
      outs(%o, %lse : memref<?x32x128xf16>, memref<?x32xf32>) {page_size = 16 : i64, cascade.kernel_config = #cascade.kernel_config<mma_sync, threads = [32, 1, 2], q_tile = 16, kv_tile = 32, stages = 6, fp8_staging = direct_kv>}
  return
}

func.func @split_kv32s6(%q: memref<?x32x128xf16>, %kv: memref<?x2x16x8x128xf8E4M3FN>, %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>,
    %ri: memref<?xi32>, %kt: memref<?xi32>, %oi: memref<?xi32>, %mask: memref<?xi8>, %chunk: memref<1xi32>, %tv: memref<?x32x128xf32>, %ts: memref<?x32xf32>,
    %ks: f32, %vs: f32, %o: memref<?x32x128xf16>, %lse: memref<?x32xf32>) {
  cascade.paged_attention q(%q : memref<?x32x128xf16>) kv(%kv : memref<?x2x16x8x128xf8E4M3FN>)
      kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>) kv_last_page_len(%last : memref<?xi32>)
      k_scale(%ks) v_scale(%vs)
      plan(%ri, %kt, %oi, %mask, %chunk, %tv, %ts : memref<?xi32>, memref<?xi32>, memref<?xi32>, memref<?xi8>, memref<1xi32>, memref<?x32x128xf32>, memref<?x32xf32>)
      outs(%o, %lse : memref<?x32x128xf16>, memref<?x32xf32>) {page_size = 16 : i64, cascade.kernel_config = #cascade.kernel_config<mma_sync, threads = [32, 1, 2], q_tile = 16, kv_tile = 32, stages = 6, fp8_staging = direct_kv>}
  return
}

func.func @decode_kv32s8(%q: memref<?x32x128xf16>, %kv: memref<?x2x16x8x128xf8E4M3FN>, %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>,
    %ks: f32, %vs: f32, %o: memref<?x32x128xf16>, %lse: memref<?x32xf32>) {
  cascade.paged_attention q(%q : memref<?x32x128xf16>) kv(%kv : memref<?x2x16x8x128xf8E4M3FN>)
      kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>) kv_last_page_len(%last : memref<?xi32>)
      k_scale(%ks) v_scale(%vs)
      outs(%o, %lse : memref<?x32x128xf16>, memref<?x32xf32>) {page_size = 16 : i64, cascade.kernel_config = #cascade.kernel_config<mma_sync, threads = [32, 1, 2], q_tile = 16, kv_tile = 32, stages = 8, fp8_staging = direct_kv>}
  return
}

func.func @split_kv32s8(%q: memref<?x32x128xf16>, %kv: memref<?x2x16x8x128xf8E4M3FN>, %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>,
    %ri: memref<?xi32>, %kt: memref<?xi32>, %oi: memref<?xi32>, %mask: memref<?xi8>, %chunk: memref<1xi32>, %tv: memref<?x32x128xf32>, %ts: memref<?x32xf32>,
    %ks: f32, %vs: f32, %o: memref<?x32x128xf16>, %lse: memref<?x32xf32>) {
  cascade.paged_attention q(%q : memref<?x32x128xf16>) kv(%kv : memref<?x2x16x8x128xf8E4M3FN>)
      kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>) kv_last_page_len(%last : memref<?xi32>)
      k_scale(%ks) v_scale(%vs)
      plan(%ri, %kt, %oi, %mask, %chunk, %tv, %ts : memref<?xi32>, memref<?xi32>, memref<?xi32>, memref<?xi8>, memref<1xi32>, memref<?x32x128xf32>, memref<?x32xf32>)
      outs(%o, %lse : memref<?x32x128xf16>, memref<?x32xf32>) {page_size = 16 : i64, cascade.kernel_config = #cascade.kernel_config<mma_sync, threads = [32, 1, 2], q_tile = 16, kv_tile = 32, stages = 8, fp8_staging = direct_kv>}
  return
}

func.func @decode_kv64s2(%q: memref<?x32x128xf16>, %kv: memref<?x2x16x8x128xf8E4M3FN>, %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>,
    %ks: f32, %vs: f32, %o: memref<?x32x128xf16>, %lse: memref<?x32xf32>) {
  cascade.paged_attention q(%q : memref<?x32x128xf16>) kv(%kv : memref<?x2x16x8x128xf8E4M3FN>)
      kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>) kv_last_page_len(%last : memref<?xi32>)
      k_scale(%ks) v_scale(%vs)
      outs(%o, %lse : memref<?x32x128xf16>, memref<?x32xf32>) {page_size = 16 : i64, cascade.kernel_config = #cascade.kernel_config<mma_sync, threads = [32, 1, 4], q_tile = 16, kv_tile = 64, stages = 2, fp8_staging = direct_kv>}
  return
}

func.func @split_kv64s2(%q: memref<?x32x128xf16>, %kv: memref<?x2x16x8x128xf8E4M3FN>, %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>,
    %ri: memref<?xi32>, %kt: memref<?xi32>, %oi: memref<?xi32>, %mask: memref<?xi8>, %chunk: memref<1xi32>, %tv: memref<?x32x128xf32>, %ts: memref<?x32xf32>,
    %ks: f32, %vs: f32, %o: memref<?x32x128xf16>, %lse: memref<?x32xf32>) {
  cascade.paged_attention q(%q : memref<?x32x128xf16>) kv(%kv : memref<?x2x16x8x128xf8E4M3FN>)
      kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>) kv_last_page_len(%last : memref<?xi32>)
      k_scale(%ks) v_scale(%vs)
      plan(%ri, %kt, %oi, %mask, %chunk, %tv, %ts : memref<?xi32>, memref<?xi32>, memref<?xi32>, memref<?xi8>, memref<1xi32>, memref<?x32x128xf32>, memref<?x32xf32>)
      outs(%o, %lse : memref<?x32x128xf16>, memref<?x32xf32>) {page_size = 16 : i64, cascade.kernel_config = #cascade.kernel_config<mma_sync, threads = [32, 1, 4], q_tile = 16, kv_tile = 64, stages = 2, fp8_staging = direct_kv>}
  return
}

func.func @decode_kv64s3(%q: memref<?x32x128xf16>, %kv: memref<?x2x16x8x128xf8E4M3FN>, %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>,
    %ks: f32, %vs: f32, %o: memref<?x32x128xf16>, %lse: memref<?x32xf32>) {
  cascade.paged_attention q(%q : memref<?x32x128xf16>) kv(%kv : memref<?x2x16x8x128xf8E4M3FN>)
      kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>) kv_last_page_len(%last : memref<?xi32>)
      k_scale(%ks) v_scale(%vs)
      outs(%o, %lse : memref<?x32x128xf16>, memref<?x32xf32>) {page_size = 16 : i64, cascade.kernel_config = #cascade.kernel_config<mma_sync, threads = [32, 1, 4], q_tile = 16, kv_tile = 64, stages = 3, fp8_staging = direct_kv>}
  return
}

func.func @split_kv64s3(%q: memref<?x32x128xf16>, %kv: memref<?x2x16x8x128xf8E4M3FN>, %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>,
    %ri: memref<?xi32>, %kt: memref<?xi32>, %oi: memref<?xi32>, %mask: memref<?xi8>, %chunk: memref<1xi32>, %tv: memref<?x32x128xf32>, %ts: memref<?x32xf32>,
    %ks: f32, %vs: f32, %o: memref<?x32x128xf16>, %lse: memref<?x32xf32>) {
  cascade.paged_attention q(%q : memref<?x32x128xf16>) kv(%kv : memref<?x2x16x8x128xf8E4M3FN>)
      kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>) kv_last_page_len(%last : memref<?xi32>)
      k_scale(%ks) v_scale(%vs)
      plan(%ri, %kt, %oi, %mask, %chunk, %tv, %ts : memref<?xi32>, memref<?xi32>, memref<?xi32>, memref<?xi8>, memref<1xi32>, memref<?x32x128xf32>, memref<?x32xf32>)
      outs(%o, %lse : memref<?x32x128xf16>, memref<?x32xf32>) {page_size = 16 : i64, cascade.kernel_config = #cascade.kernel_config<mma_sync, threads = [32, 1, 4], q_tile = 16, kv_tile = 64, stages = 3, fp8_staging = direct_kv>}
  return
}

func.func @decode_kv64s4(%q: memref<?x32x128xf16>, %kv: memref<?x2x16x8x128xf8E4M3FN>, %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>,
    %ks: f32, %vs: f32, %o: memref<?x32x128xf16>, %lse: memref<?x32xf32>) {
  cascade.paged_attention q(%q : memref<?x32x128xf16>) kv(%kv : memref<?x2x16x8x128xf8E4M3FN>)
      kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>) kv_last_page_len(%last : memref<?xi32>)
      k_scale(%ks) v_scale(%vs)
      outs(%o, %lse : memref<?x32x128xf16>, memref<?x32xf32>) {page_size = 16 : i64, cascade.kernel_config = #cascade.kernel_config<mma_sync, threads = [32, 1, 4], q_tile = 16, kv_tile = 64, stages = 4, fp8_staging = direct_kv>}
  return
}

func.func @split_kv64s4(%q: memref<?x32x128xf16>, %kv: memref<?x2x16x8x128xf8E4M3FN>, %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>,
    %ri: memref<?xi32>, %kt: memref<?xi32>, %oi: memref<?xi32>, %mask: memref<?xi8>, %chunk: memref<1xi32>, %tv: memref<?x32x128xf32>, %ts: memref<?x32xf32>,
    %ks: f32, %vs: f32, %o: memref<?x32x128xf16>, %lse: memref<?x32xf32>) {
  cascade.paged_attention q(%q : memref<?x32x128xf16>) kv(%kv : memref<?x2x16x8x128xf8E4M3FN>)
      kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>) kv_last_page_len(%last : memref<?xi32>)
      k_scale(%ks) v_scale(%vs)
      plan(%ri, %kt, %oi, %mask, %chunk, %tv, %ts : memref<?xi32>, memref<?xi32>, memref<?xi32>, memref<?xi8>, memref<1xi32>, memref<?x32x128xf32>, memref<?x32xf32>)
      outs(%o, %lse : memref<?x32x128xf16>, memref<?x32xf32>) {page_size = 16 : i64, cascade.kernel_config = #cascade.kernel_config<mma_sync, threads = [32, 1, 4], q_tile = 16, kv_tile = 64, stages = 4, fp8_staging = direct_kv>}
  return
}
