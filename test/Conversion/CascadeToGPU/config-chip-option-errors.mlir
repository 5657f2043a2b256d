// RUN: cascade-opt %s --cascade-select-kernel-config=chip=sm_75 -split-input-file -verify-diagnostics

// The chip option names a chip kernel selection has no limits for.
// expected-error@+1 {{kernel selection does not know chip 'sm_75' (known: sm_80, sm_86, sm_87, sm_89, sm_90, sm_90a)}}
module {
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

// The chip option disagrees with the target the kernels are built for.
// expected-error@+1 {{kernel selection for chip 'sm_75', but the gpu.modules target 'sm_90' (#nvvm.target)}}
module attributes {gpu.container_module} {
  gpu.module @cascade_kernels [#nvvm.target<chip = "sm_90">] {
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
