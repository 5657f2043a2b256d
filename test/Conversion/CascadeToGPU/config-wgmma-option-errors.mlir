// RUN: cascade-opt %s --cascade-select-kernel-config="chip=sm_90a wgmma-stages=2" -split-input-file -verify-diagnostics
// RUN: cascade-opt %s --cascade-select-kernel-config="chip=sm_90a wgmma-stages=2 wgmma-split-kv-barriers" -split-input-file | FileCheck %s

// Two stages of one joint K/V ring would deadlock where the producer
// publishes a tile after issuing the next one (RoPE, which rotates the landed
// tile first; the consumers release a stage after its P.V): the option is
// refused unless K and V have rings of their own.
// CHECK-LABEL: func.func @prefill_two_stages
// CHECK: #cascade.kernel_config<wgmma, threads = [128, 4, 1], q_tile = 192, kv_tile = 64, stages = 2, kv_barriers = split>
func.func @prefill_two_stages(%q: memref<?x32x128xf16>, %cache: memref<?x2x16x8x128xf16>, %qo: memref<?xi32>,
                              %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>,
                              %o: memref<?x32x128xf16>, %lse: memref<?x32xf32>) {
  // expected-error@+1 {{invalid wgmma tuning options: wgmma: joint K/V barriers need stages >= 3, got 2 (two stages deadlock: use kv_barriers = split)}}
  cascade.paged_attention q(%q : memref<?x32x128xf16>) kv(%cache : memref<?x2x16x8x128xf16>)
      qo_indptr(%qo : memref<?xi32>) kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>)
      kv_last_page_len(%last : memref<?xi32>) outs(%o, %lse : memref<?x32x128xf16>, memref<?x32xf32>)
      {page_size = 16 : i64, causal}
  return
}
