// RUN: cascade-opt %s --cascade-select-kernel-config -split-input-file -verify-diagnostics

// What selection cannot choose for: each gets one diagnostic that says why.

// A chip kernel selection has no limits for.
// expected-error@+1 {{kernel selection does not know chip 'sm_75' (known: sm_80, sm_86, sm_87, sm_89, sm_90, sm_90a)}}
module attributes {gpu.container_module} {
  gpu.module @cascade_kernels [#nvvm.target<chip = "sm_75">] {
  }
  func.func @decode_g16(%q: memref<?x32x128xf16>, %cache: memref<?x2x16x2x128xf16>,
      %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>,
      %o: memref<?x32x128xf16>, %lse: memref<?x32xf32>) {
    cascade.paged_attention q(%q : memref<?x32x128xf16>) kv(%cache : memref<?x2x16x2x128xf16>)
        kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>) kv_last_page_len(%last : memref<?xi32>)
        outs(%o, %lse : memref<?x32x128xf16>, memref<?x32xf32>) {page_size = 16 : i64}
    return
  }
}

// -----

// Kernels built for two chips: one configuration cannot be tuned for both.
// expected-error@+1 {{kernel selection needs one target chip; the gpu.modules target sm_80, sm_90}}
module attributes {gpu.container_module} {
  gpu.module @a [#nvvm.target<chip = "sm_80">] {
  }
  gpu.module @b [#nvvm.target<chip = "sm_90">] {
  }
  func.func @decode_g16(%q: memref<?x32x128xf16>, %cache: memref<?x2x16x2x128xf16>,
      %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>,
      %o: memref<?x32x128xf16>, %lse: memref<?x32xf32>) {
    cascade.paged_attention q(%q : memref<?x32x128xf16>) kv(%cache : memref<?x2x16x2x128xf16>)
        kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>) kv_last_page_len(%last : memref<?xi32>)
        outs(%o, %lse : memref<?x32x128xf16>, memref<?x32xf32>) {page_size = 16 : i64}
    return
  }
}

// -----

// A hand-written configuration is kept, but must fit the chip: 128 KiB is
// more than sm_86's 99 KiB.
module attributes {gpu.container_module} {
  gpu.module @cascade_kernels [#nvvm.target<chip = "sm_86">] {
  }
  func.func @prefill_big(%q: memref<?x32x128xf16>, %cache: memref<?x2x16x2x128xf16>, %qo: memref<?xi32>,
      %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>,
      %o: memref<?x32x128xf16>, %lse: memref<?x32xf32>) {
  // expected-error@+1 {{kernel_config #cascade.kernel_config<mma_sync, threads = [32, 4, 1], q_tile = 128, kv_tile = 64, stages = 3> needs 131072 bytes of shared memory per block; sm_86 allows at most 101376}}
    cascade.paged_attention q(%q : memref<?x32x128xf16>) kv(%cache : memref<?x2x16x2x128xf16>) qo_indptr(%qo : memref<?xi32>)
        kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>) kv_last_page_len(%last : memref<?xi32>)
        outs(%o, %lse : memref<?x32x128xf16>, memref<?x32xf32>) {page_size = 16 : i64,
         cascade.kernel_config = #cascade.kernel_config<mma_sync, threads = [32, 4, 1], q_tile = 128, kv_tile = 64, stages = 3>}
    return
  }
}

// -----

// Without a target or chip option: sm_90, 227 KiB.
func.func @prefill_huge(%q: memref<?x32x128xf16>, %cache: memref<?x2x16x2x128xf16>, %qo: memref<?xi32>,
    %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>,
    %o: memref<?x32x128xf16>, %lse: memref<?x32xf32>) {
// expected-error@+1 {{kernel_config #cascade.kernel_config<mma_sync, threads = [32, 8, 1], q_tile = 256, kv_tile = 128, stages = 3> needs 262144 bytes of shared memory per block; sm_90 allows at most 232448}}
  cascade.paged_attention q(%q : memref<?x32x128xf16>) kv(%cache : memref<?x2x16x2x128xf16>) qo_indptr(%qo : memref<?xi32>)
      kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>) kv_last_page_len(%last : memref<?xi32>)
      outs(%o, %lse : memref<?x32x128xf16>, memref<?x32xf32>) {page_size = 16 : i64,
         cascade.kernel_config = #cascade.kernel_config<mma_sync, threads = [32, 8, 1], q_tile = 256, kv_tile = 128, stages = 3>}
  return
}

// -----

// A launch bound must fit the SM too: three blocks of this prefill tile
// (80 KiB each, plus the 1 KiB the hardware reserves a block) are more than
// sm_90's 228 KiB.
func.func @prefill_bound(%q: memref<?x32x128xf16>, %cache: memref<?x2x16x2x128xf16>, %qo: memref<?xi32>,
    %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>,
    %o: memref<?x32x128xf16>, %lse: memref<?x32xf32>) {
// expected-error@+1 {{kernel_config #cascade.kernel_config<mma_sync, threads = [32, 4, 1], q_tile = 128, kv_tile = 32, stages = 3, min_blocks_per_sm = 3> asks for 3 blocks an SM, 248832 bytes of shared memory with what each block reserves; sm_90 has 233472}}
  cascade.paged_attention q(%q : memref<?x32x128xf16>) kv(%cache : memref<?x2x16x2x128xf16>) qo_indptr(%qo : memref<?xi32>)
      kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>) kv_last_page_len(%last : memref<?xi32>)
      outs(%o, %lse : memref<?x32x128xf16>, memref<?x32xf32>) {page_size = 16 : i64,
         cascade.kernel_config = #cascade.kernel_config<mma_sync, threads = [32, 4, 1], q_tile = 128, kv_tile = 32, stages = 3, min_blocks_per_sm = 3>}
  return
}

// -----

// And its threads: sm_86 holds 1536 threads an SM, not 16 blocks of 128.
module attributes {gpu.container_module} {
  gpu.module @cascade_kernels [#nvvm.target<chip = "sm_86">] {
  }
  func.func @decode_bound(%q: memref<?x32x128xf16>, %cache: memref<?x2x16x2x128xf16>,
      %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>,
      %o: memref<?x32x128xf16>, %lse: memref<?x32xf32>) {
  // expected-error@+1 {{kernel_config #cascade.kernel_config<rows, threads = [16, 1, 8], q_tile = 1, kv_tile = 32, stages = 2, min_blocks_per_sm = 16> asks for 16 blocks an SM, 2048 threads; sm_86 holds 1536}}
    cascade.paged_attention q(%q : memref<?x32x128xf16>) kv(%cache : memref<?x2x16x2x128xf16>)
        kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>) kv_last_page_len(%last : memref<?xi32>)
        outs(%o, %lse : memref<?x32x128xf16>, memref<?x32xf32>) {page_size = 16 : i64,
         cascade.kernel_config = #cascade.kernel_config<rows, threads = [16, 1, 8], q_tile = 1, kv_tile = 32, stages = 2, min_blocks_per_sm = 16>}
    return
  }
}

// -----

// And a rows block's static K/V stages (2 x 32 tokens x 128 x K and V, f16:
// 32 KiB): 8 of them with what each block reserves exceed sm_90's 228 KiB.
func.func @decode_bound_smem(%q: memref<?x32x128xf16>, %cache: memref<?x2x16x8x128xf16>,
    %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>,
    %o: memref<?x32x128xf16>, %lse: memref<?x32xf32>) {
  // expected-error@+1 {{kernel_config #cascade.kernel_config<rows, threads = [16, 1, 8], q_tile = 1, kv_tile = 32, stages = 2, min_blocks_per_sm = 8> asks for 8 blocks an SM, 270336 bytes of shared memory with what each block reserves; sm_90 has 233472}}
  cascade.paged_attention q(%q : memref<?x32x128xf16>) kv(%cache : memref<?x2x16x8x128xf16>)
      kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>) kv_last_page_len(%last : memref<?xi32>)
      outs(%o, %lse : memref<?x32x128xf16>, memref<?x32xf32>) {page_size = 16 : i64,
       cascade.kernel_config = #cascade.kernel_config<rows, threads = [16, 1, 8], q_tile = 1, kv_tile = 32, stages = 2, min_blocks_per_sm = 8>}
  return
}
