// RUN: cascade-opt %s --cascade-select-kernel-config -split-input-file -verify-diagnostics
// RUN: cascade-opt %s --convert-cascade-to-gpu -split-input-file -verify-diagnostics

// The latent (MLA) form has no kernel family yet: selection refuses it
// (a hand-written configuration too), and so does the lowering, which
// selects where no configuration is given. One diagnostic each, naming the
// form.

module attributes {gpu.container_module} {
  gpu.module @cascade_kernels [#nvvm.target<chip = "sm_90a">] {
  }
  func.func @mla_decode(%qn: memref<?x128x512xbf16>, %qp: memref<?x128x64xbf16>,
      %ckv: memref<?x64x512xbf16>, %kpe: memref<?x64x64xbf16>,
      %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>,
      %o: memref<?x128x512xbf16>, %lse: memref<?x128xf32>) {
    // expected-error@+1 {{the latent (MLA) form has no kernel family yet: no family takes a (ckv, kpe) cache}}
    cascade.paged_attention q(%qn : memref<?x128x512xbf16>) q_pe(%qp : memref<?x128x64xbf16>)
        kv(%ckv, %kpe : memref<?x64x512xbf16>, memref<?x64x64xbf16>)
        kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>) kv_last_page_len(%last : memref<?xi32>)
        outs(%o, %lse : memref<?x128x512xbf16>, memref<?x128xf32>) {page_size = 64 : i64, sm_scale = 0.0721687 : f32}
    return
  }
}

// -----

module attributes {gpu.container_module} {
  gpu.module @cascade_kernels [#nvvm.target<chip = "sm_90a">] {
  }
  func.func @mla_hand_config(%qn: memref<?x16x512xf16>, %qp: memref<?x16x64xf16>,
      %ckv: memref<?x16x512xf16>, %kpe: memref<?x16x64xf16>, %qo: memref<?xi32>,
      %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>,
      %o: memref<?x16x512xf16>, %lse: memref<?x16xf32>) {
    // expected-error@+1 {{the latent (MLA) form has no kernel family yet: no family takes a (ckv, kpe) cache}}
    cascade.paged_attention q(%qn : memref<?x16x512xf16>) q_pe(%qp : memref<?x16x64xf16>)
        kv(%ckv, %kpe : memref<?x16x512xf16>, memref<?x16x64xf16>)
        qo_indptr(%qo : memref<?xi32>) kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>)
        kv_last_page_len(%last : memref<?xi32>)
        outs(%o, %lse : memref<?x16x512xf16>, memref<?x16xf32>)
        {page_size = 16 : i64, sm_scale = 0.0721687 : f32,
         cascade.kernel_config = #cascade.kernel_config<mma_sync, threads = [32, 4, 1], q_tile = 64, kv_tile = 64, stages = 2>}
    return
  }
}
