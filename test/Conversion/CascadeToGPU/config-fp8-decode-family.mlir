// RUN: cascade-opt %s --cascade-select-kernel-config | FileCheck %s
// RUN: cascade-opt %s --cascade-select-kernel-config="rows-max-group-fp8=8" | FileCheck %s --check-prefix=ROWS
// RUN: cascade-opt %s --cascade-select-kernel-config="chip=sm_89" | FileCheck %s --check-prefix=SM89
// RUN: cascade-opt %s --cascade-select-kernel-config="mma-min-blocks-per-sm=0" | FileCheck %s --check-prefix=NOBOUND

// Decode over an fp8 KV cache has its own group limit for the rows family
// (rows-max-group-fp8, default 1): rows does 2 G f32 FMAs per fp8 byte and
// measured 0.51 of the H200's copy bandwidth at G = 4, where mma_sync with
// the group in one m16 tile measured 0.73 (2 warps along 32-key tiles in 4
// stages; 64-key tiles over 4 warps 0.65). So fp8 decode with G >= 2 runs on
// mma_sync (q_tile 16: 2 warps along 32-key tiles), G = 1 and f16 decode
// stay on rows, and the option moves the limit back. With K and V read from
// their staging rings (head_dim 32..128, no RoPE; recorded as fp8_staging =
// direct_kv) the 32-key tiles take 2 stages and the launch bound of 8
// blocks an SM (16.25 KiB a block; 128 registers a thread), which measured
// fastest on the H200 for batches of short requests (MmaSyncSelection.cpp).
// sm_89's 100 KiB an SM cannot hold 8 such blocks: the bound is dropped
// there. The options override both.

// CHECK-LABEL: func.func @fp8_g4
// CHECK: #cascade.kernel_config<mma_sync, threads = [32, 1, 2], q_tile = 16, kv_tile = 32, stages = 2, min_blocks_per_sm = 8, fp8_staging = direct_kv>
// ROWS-LABEL: func.func @fp8_g4
// ROWS: #cascade.kernel_config<rows, threads = [16, 1, 8], q_tile = 1, kv_tile = 32, stages = 4>
// SM89-LABEL: func.func @fp8_g4
// SM89: #cascade.kernel_config<mma_sync, threads = [32, 1, 2], q_tile = 16, kv_tile = 32, stages = 2, fp8_staging = direct_kv>
// NOBOUND-LABEL: func.func @fp8_g4
// NOBOUND: #cascade.kernel_config<mma_sync, threads = [32, 1, 2], q_tile = 16, kv_tile = 32, stages = 2, fp8_staging = direct_kv>
func.func @fp8_g4(%q: memref<?x32x128xf16>, %kv: memref<?x2x16x8x128xf8E4M3FN>,
                  %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>,
                  %o: memref<?x32x128xf16>, %lse: memref<?x32xf32>) {
  cascade.paged_attention q(%q : memref<?x32x128xf16>) kv(%kv : memref<?x2x16x8x128xf8E4M3FN>)
      kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>) kv_last_page_len(%last : memref<?xi32>)
      outs(%o, %lse : memref<?x32x128xf16>, memref<?x32xf32>) {page_size = 16 : i64}
  return
}

// CHECK-LABEL: func.func @fp8_g2
// CHECK: #cascade.kernel_config<mma_sync, threads = [32, 1, 2], q_tile = 16, kv_tile = 32, stages = 2, min_blocks_per_sm = 8, fp8_staging = direct_kv>
// ROWS-LABEL: func.func @fp8_g2
// ROWS: #cascade.kernel_config<rows,
func.func @fp8_g2(%q: memref<?x16x128xf16>, %kv: memref<?x2x16x8x128xf8E5M2>,
                  %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>,
                  %o: memref<?x16x128xf16>, %lse: memref<?x16xf32>) {
  cascade.paged_attention q(%q : memref<?x16x128xf16>) kv(%kv : memref<?x2x16x8x128xf8E5M2>)
      kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>) kv_last_page_len(%last : memref<?xi32>)
      outs(%o, %lse : memref<?x16x128xf16>, memref<?x16xf32>) {page_size = 16 : i64}
  return
}

// CHECK-LABEL: func.func @fp8_g1
// CHECK: #cascade.kernel_config<rows, threads = [16, 1, 8], q_tile = 1, kv_tile = 32, stages = 4>
func.func @fp8_g1(%q: memref<?x8x128xf16>, %kv: memref<?x2x16x8x128xf8E4M3FN>,
                  %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>,
                  %o: memref<?x8x128xf16>, %lse: memref<?x8xf32>) {
  cascade.paged_attention q(%q : memref<?x8x128xf16>) kv(%kv : memref<?x2x16x8x128xf8E4M3FN>)
      kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>) kv_last_page_len(%last : memref<?xi32>)
      outs(%o, %lse : memref<?x8x128xf16>, memref<?x8xf32>) {page_size = 16 : i64}
  return
}

// Larger groups: the 64-key tile over the warps the q_tile leaves; K and V
// converted (two warps along the rows: fp8_staging stays `convert`).
// CHECK-LABEL: func.func @fp8_g32
// CHECK: #cascade.kernel_config<mma_sync, threads = [32, 2, 2], q_tile = 32, kv_tile = 64, stages = 4>,
// The 99 KiB an sm_89 block may have: one stage fewer.
// SM89-LABEL: func.func @fp8_g32
// SM89: #cascade.kernel_config<mma_sync, threads = [32, 2, 2], q_tile = 32, kv_tile = 64, stages = 3>,
func.func @fp8_g32(%q: memref<?x32x128xbf16>, %kv: memref<?x2x16x1x128xf8E4M3FN>,
                   %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>,
                   %o: memref<?x32x128xbf16>, %lse: memref<?x32xf32>) {
  cascade.paged_attention q(%q : memref<?x32x128xbf16>) kv(%kv : memref<?x2x16x1x128xf8E4M3FN>)
      kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>) kv_last_page_len(%last : memref<?xi32>)
      outs(%o, %lse : memref<?x32x128xbf16>, memref<?x32xf32>) {page_size = 16 : i64}
  return
}

// f16 decode keeps its configuration (rows up to rows-max-group).
// CHECK-LABEL: func.func @f16_g4
// CHECK: #cascade.kernel_config<rows, threads = [16, 1, 8], q_tile = 1, kv_tile = 32, stages = 2>
// ROWS-LABEL: func.func @f16_g4
// ROWS: #cascade.kernel_config<rows,
func.func @f16_g4(%q: memref<?x32x128xf16>, %kv: memref<?x2x16x8x128xf16>,
                  %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>,
                  %o: memref<?x32x128xf16>, %lse: memref<?x32xf32>) {
  cascade.paged_attention q(%q : memref<?x32x128xf16>) kv(%kv : memref<?x2x16x8x128xf16>)
      kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>) kv_last_page_len(%last : memref<?xi32>)
      outs(%o, %lse : memref<?x32x128xf16>, memref<?x32xf32>) {page_size = 16 : i64}
  return
}
