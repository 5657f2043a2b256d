// RUN: cascade-opt %s --cascade-select-kernel-config="chip=sm_90a wgmma-fp8-operands=false" -split-input-file -verify-diagnostics
// RUN: not cascade-opt %s --cascade-select-kernel-config="chip=sm_90" -split-input-file 2>&1 | FileCheck %s --check-prefix=SM90
// RUN: not cascade-opt %s --cascade-select-kernel-config="chip=sm_90a" -split-input-file 2>&1 | FileCheck %s --check-prefix=ON

// fp8 queries run on the wgmma family's fp8 tensor cores only
// (wgmma-fp8-operands, on by default): with it off every op here is
// refused with the reason; on plain sm_90 (no wgmma) every one is refused;
// on sm_90a only the prefill at head_dim 128 runs, and
// the others say why not (config-fp8-operands-hand-written.mlir: the
// configurations written on ops).

func.func @prefill(%q: memref<?x32x128xf8E4M3FN>, %cache: memref<?x2x16x8x128xf8E4M3FN>, %qo: memref<?xi32>,
                   %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>,
                   %o: memref<?x32x128xbf16>, %lse: memref<?x32xf32>) {
  // expected-error@+1 {{fp8 queries ('f8E4M3FN') run on the wgmma family only, whose fp8 operands cascade-select-kernel-config's wgmma-fp8-operands=false turned off}}
  cascade.paged_attention q(%q : memref<?x32x128xf8E4M3FN>) kv(%cache : memref<?x2x16x8x128xf8E4M3FN>)
      qo_indptr(%qo : memref<?xi32>) kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>)
      kv_last_page_len(%last : memref<?xi32>) outs(%o, %lse : memref<?x32x128xbf16>, memref<?x32xf32>)
      {page_size = 16 : i64, causal}
  return
}
// SM90: fp8 queries ('f8E4M3FN') run on the wgmma family only, which needs sm_90a; the target is sm_90
// SM90: fp8 queries ('f8E4M3FN') run on the wgmma family only, which needs sm_90a; the target is sm_90
// SM90: fp8 queries ('f8E5M2') run on the wgmma family only, which needs sm_90a; the target is sm_90
// SM90: fp8 queries ('f8E4M3FN') run on the wgmma family only, which needs sm_90a; the target is sm_90
// (With the option this one is selected: wgmma-fp8-operands.mlir.)
// ON-NOT: wgmma-fp8-operands=false turned off

// -----

func.func @decode(%q: memref<?x32x128xf8E4M3FN>, %cache: memref<?x2x16x8x128xf8E4M3FN>,
                  %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>,
                  %o: memref<?x32x128xbf16>, %lse: memref<?x32xf32>) {
  // expected-error@+1 {{fp8 queries ('f8E4M3FN') run on the wgmma family only, whose fp8 operands}}
  cascade.paged_attention q(%q : memref<?x32x128xf8E4M3FN>) kv(%cache : memref<?x2x16x8x128xf8E4M3FN>)
      kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>)
      kv_last_page_len(%last : memref<?xi32>) outs(%o, %lse : memref<?x32x128xbf16>, memref<?x32xf32>)
      {page_size = 16 : i64}
  return
}
// ON: fp8 queries ('f8E4M3FN') run on the wgmma family only, which runs prefill and append, not decode

// -----

func.func @head_dim_64(%q: memref<?x32x64xf8E5M2>, %cache: memref<?x2x16x8x64xf8E5M2>, %qo: memref<?xi32>,
                       %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>,
                       %o: memref<?x32x64xf16>, %lse: memref<?x32xf32>) {
  // expected-error@+1 {{fp8 queries ('f8E5M2') run on the wgmma family only, whose fp8 operands}}
  cascade.paged_attention q(%q : memref<?x32x64xf8E5M2>) kv(%cache : memref<?x2x16x8x64xf8E5M2>)
      qo_indptr(%qo : memref<?xi32>) kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>)
      kv_last_page_len(%last : memref<?xi32>) outs(%o, %lse : memref<?x32x64xf16>, memref<?x32xf32>)
      {page_size = 16 : i64}
  return
}
// ON: fp8 queries ('f8E5M2') run on the wgmma family only, which needs head_dim 128 for them and no RoPE or custom mask

// -----

func.func @rope(%q: memref<?x32x128xf8E4M3FN>, %cache: memref<?x2x16x8x128xf8E4M3FN>, %qo: memref<?xi32>,
                %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>,
                %o: memref<?x32x128xbf16>, %lse: memref<?x32xf32>) {
  // expected-error@+1 {{fp8 queries ('f8E4M3FN') run on the wgmma family only, whose fp8 operands}}
  cascade.paged_attention q(%q : memref<?x32x128xf8E4M3FN>) kv(%cache : memref<?x2x16x8x128xf8E4M3FN>)
      qo_indptr(%qo : memref<?xi32>) kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>)
      kv_last_page_len(%last : memref<?xi32>) outs(%o, %lse : memref<?x32x128xbf16>, memref<?x32xf32>)
      {page_size = 16 : i64, causal, pos_encoding = #cascade.pos_encoding<rope_llama>}
  return
}
// ON: fp8 queries ('f8E4M3FN') run on the wgmma family only, which needs head_dim 128 for them and no RoPE or custom mask
