// RUN: cascade-opt %s --cascade-select-kernel-config -split-input-file | FileCheck %s --check-prefix=SELECT
// RUN: cascade-opt %s --cascade-select-kernel-config --convert-cascade-to-gpu -split-input-file | FileCheck %s --check-prefix=KERNEL

// The fp8 staging of mma_sync decode is part of #cascade.kernel_config
// (fp8_staging): selection records `direct_kv` where K and V can both be
// read from their fp8 staging tiles (decode without RoPE, one warp along
// the rows with one m16 tile, head_dim 32, 64 or 128), `direct_k` where
// only K can (head_dim 16), and nothing (the default `convert`) elsewhere;
// the lowering builds the kernel the configuration names (`_kvdirect`,
// `_kdirect` or neither), a hand-written configuration included.

// SELECT-LABEL: func.func @d128
// SELECT: fp8_staging = direct_kv>
// KERNEL: gpu.func @cascade_decode_mma_f16_f8e4m3_d128_g4_h8_p16_nhd_pool_w1x2_q16_kv32_s2_b8_kvdirect(
func.func @d128(%q: memref<?x32x128xf16>, %kv: memref<?x2x16x8x128xf8E4M3FN>,
                %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>,
                %o: memref<?x32x128xf16>, %lse: memref<?x32xf32>) {
  cascade.paged_attention q(%q : memref<?x32x128xf16>) kv(%kv : memref<?x2x16x8x128xf8E4M3FN>)
      kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>) kv_last_page_len(%last : memref<?xi32>)
      outs(%o, %lse : memref<?x32x128xf16>, memref<?x32xf32>) {page_size = 16 : i64}
  return
}

// -----

// head_dim 16: V's n8 tiles do not fill the 32-column groups that P V reads
// from the staging tile; K is read directly, V converted.
// SELECT-LABEL: func.func @d16
// SELECT: #cascade.kernel_config<mma_sync, threads = [32, 1, 2], q_tile = 16, kv_tile = 32, stages = 3, fp8_staging = direct_k>
// KERNEL: gpu.func @cascade_decode_mma_f16_f8e5m2_d16_g4_h8_p16_nhd_pool_w1x2_q16_kv32_s3_kdirect(
func.func @d16(%q: memref<?x32x16xf16>, %kv: memref<?x2x16x8x16xf8E5M2>,
               %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>,
               %o: memref<?x32x16xf16>, %lse: memref<?x32xf32>) {
  cascade.paged_attention q(%q : memref<?x32x16xf16>) kv(%kv : memref<?x2x16x8x16xf8E5M2>)
      kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>) kv_last_page_len(%last : memref<?xi32>)
      outs(%o, %lse : memref<?x32x16xf16>, memref<?x32xf32>) {page_size = 16 : i64}
  return
}

// -----

// RoPE rotates a converted K tile: nothing is read directly.
// SELECT-LABEL: func.func @rope
// SELECT: #cascade.kernel_config<mma_sync, threads = [32, 1, 2], q_tile = 16, kv_tile = 32, stages = 3>
// SELECT-NOT: fp8_staging
// KERNEL: gpu.func @cascade_decode_mma_f16_f8e4m3_d128_g4_h8_p16_nhd_pool_rope{{[0-9a-f]+}}x{{[0-9a-f]+}}_w1x2_q16_kv32_s3(
func.func @rope(%q: memref<?x32x128xf16>, %kv: memref<?x2x16x8x128xf8E4M3FN>,
                %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>,
                %o: memref<?x32x128xf16>, %lse: memref<?x32xf32>) {
  cascade.paged_attention q(%q : memref<?x32x128xf16>) kv(%kv : memref<?x2x16x8x128xf8E4M3FN>)
      kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>) kv_last_page_len(%last : memref<?xi32>)
      outs(%o, %lse : memref<?x32x128xf16>, memref<?x32xf32>)
      {page_size = 16 : i64, pos_encoding = #cascade.pos_encoding<rope_llama>}
  return
}

// -----

// A hand-written `convert` (here the default, left out) on a shape that
// selection would give direct staging is honoured: the converting kernel,
// without `_kdirect` / `_kvdirect`, and the shared memory of its K/V tiles
// (config-fp8-staging-errors.mlir: it does not leave room for selection's
// 8 blocks an SM).
// SELECT-LABEL: func.func @hand_convert
// SELECT: #cascade.kernel_config<mma_sync, threads = [32, 1, 2], q_tile = 16, kv_tile = 32, stages = 2>,
// KERNEL: gpu.func @cascade_decode_mma_f16_f8e4m3_d128_g4_h8_p16_nhd_pool_w1x2_q16_kv32_s2(
func.func @hand_convert(%q: memref<?x32x128xf16>, %kv: memref<?x2x16x8x128xf8E4M3FN>,
                        %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>,
                        %o: memref<?x32x128xf16>, %lse: memref<?x32xf32>) {
  cascade.paged_attention q(%q : memref<?x32x128xf16>) kv(%kv : memref<?x2x16x8x128xf8E4M3FN>)
      kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>) kv_last_page_len(%last : memref<?xi32>)
      outs(%o, %lse : memref<?x32x128xf16>, memref<?x32xf32>)
      {page_size = 16 : i64,
       cascade.kernel_config = #cascade.kernel_config<mma_sync, threads = [32, 1, 2], q_tile = 16, kv_tile = 32, stages = 2, fp8_staging = convert>}
  return
}

// -----

// A hand-written `direct_k` where selection records `direct_kv`: K read
// from its staging tile, V converted.
// SELECT-LABEL: func.func @hand_direct_k
// SELECT: #cascade.kernel_config<mma_sync, threads = [32, 1, 2], q_tile = 16, kv_tile = 32, stages = 3, fp8_staging = direct_k>,
// KERNEL: gpu.func @cascade_decode_mma_bf16_f8e4m3_d64_g4_h8_p16_hnd_pool_w1x2_q16_kv32_s3_kdirect(
func.func @hand_direct_k(%q: memref<?x32x64xbf16>, %kv: memref<?x2x8x16x64xf8E4M3FN>,
                         %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>,
                         %o: memref<?x32x64xbf16>, %lse: memref<?x32xf32>) {
  cascade.paged_attention q(%q : memref<?x32x64xbf16>) kv(%kv : memref<?x2x8x16x64xf8E4M3FN>)
      kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>) kv_last_page_len(%last : memref<?xi32>)
      outs(%o, %lse : memref<?x32x64xbf16>, memref<?x32xf32>)
      {page_size = 16 : i64, kv_layout = #cascade.kv_layout<hnd>,
       cascade.kernel_config = #cascade.kernel_config<mma_sync, threads = [32, 1, 2], q_tile = 16, kv_tile = 32, stages = 3, fp8_staging = direct_k>}
  return
}
