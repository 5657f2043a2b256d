// RUN: cascade-opt %s | cascade-opt | FileCheck %s
// RUN: cascade-opt %s -cascade-decompose-levels | FileCheck %s --check-prefix=DECOMPOSE
// RUN: cascade-opt %s -one-shot-bufferize="bufferize-function-boundaries" | FileCheck %s --check-prefix=BUFFER

// The latent (MLA) form of paged attention: q split into q_nope and q_pe,
// the cache the pair (ckv, kpe) of rank 3 (no head dimension), the output
// in the latent space. It round-trips on both attention ops, and every
// level of a latent cascade keeps q_pe.

// CHECK-LABEL: func.func @mla_decode
// CHECK: cascade.paged_attention q(%{{.*}} : tensor<?x128x512xbf16>) q_pe(%{{.*}} : tensor<?x128x64xbf16>)
// CHECK-SAME: kv(%{{.*}}, %{{.*}} : tensor<?x64x512xbf16>, tensor<?x64x64xbf16>)
// CHECK-SAME: outs(%{{.*}}, %{{.*}} : tensor<?x128x512xbf16>, tensor<?x128xf32>)
// CHECK-SAME: page_size = 64 : i64
// CHECK-SAME: sm_scale = 7.216870e-02 : f32
// BUFFER-LABEL: func.func @mla_decode
// BUFFER: cascade.paged_attention q(%{{.*}} : memref<?x128x512xbf16{{.*}}>) q_pe(%{{.*}} : memref<?x128x64xbf16{{.*}}>)
func.func @mla_decode(%qn: tensor<?x128x512xbf16>, %qp: tensor<?x128x64xbf16>,
                      %ckv: tensor<?x64x512xbf16>, %kpe: tensor<?x64x64xbf16>,
                      %kvp: tensor<?xi32>, %kvi: tensor<?xi32>, %last: tensor<?xi32>,
                      %o: tensor<?x128x512xbf16>, %lse: tensor<?x128xf32>)
    -> (tensor<?x128x512xbf16>, tensor<?x128xf32>) {
  %r:2 = cascade.paged_attention q(%qn : tensor<?x128x512xbf16>) q_pe(%qp : tensor<?x128x64xbf16>)
      kv(%ckv, %kpe : tensor<?x64x512xbf16>, tensor<?x64x64xbf16>)
      kv_indptr(%kvp : tensor<?xi32>) kv_indices(%kvi : tensor<?xi32>) kv_last_page_len(%last : tensor<?xi32>)
      outs(%o, %lse : tensor<?x128x512xbf16>, tensor<?x128xf32>) {page_size = 64 : i64, sm_scale = 0.0721687 : f32}
      -> tensor<?x128x512xbf16>, tensor<?x128xf32>
  return %r#0, %r#1 : tensor<?x128x512xbf16>, tensor<?x128xf32>
}

// A causal latent prefill over an fp8 (e4m3) latent cache with its scales,
// page size 1 (FlashInfer's MLA takes any page size).
// CHECK-LABEL: func.func @mla_prefill_fp8
// CHECK: q_pe(%{{.*}} : tensor<?x16x64xf16>)
// CHECK-SAME: kv(%{{.*}}, %{{.*}} : tensor<?x1x512xf8E4M3FN>, tensor<?x1x64xf8E4M3FN>)
// CHECK-SAME: k_scale(%{{.*}}) v_scale(%{{.*}})
// CHECK-SAME: causal
func.func @mla_prefill_fp8(%qn: tensor<?x16x512xf16>, %qp: tensor<?x16x64xf16>,
                           %ckv: tensor<?x1x512xf8E4M3FN>, %kpe: tensor<?x1x64xf8E4M3FN>,
                           %qo: tensor<?xi32>, %kvp: tensor<?xi32>, %kvi: tensor<?xi32>, %last: tensor<?xi32>,
                           %ks: f32, %vs: f32,
                           %o: tensor<?x16x512xf16>, %lse: tensor<?x16xf32>)
    -> (tensor<?x16x512xf16>, tensor<?x16xf32>) {
  %r:2 = cascade.paged_attention q(%qn : tensor<?x16x512xf16>) q_pe(%qp : tensor<?x16x64xf16>)
      kv(%ckv, %kpe : tensor<?x1x512xf8E4M3FN>, tensor<?x1x64xf8E4M3FN>)
      qo_indptr(%qo : tensor<?xi32>) kv_indptr(%kvp : tensor<?xi32>) kv_indices(%kvi : tensor<?xi32>)
      kv_last_page_len(%last : tensor<?xi32>) k_scale(%ks) v_scale(%vs)
      outs(%o, %lse : tensor<?x16x512xf16>, tensor<?x16xf32>) {page_size = 1 : i64, causal, sm_scale = 0.1 : f32}
      -> tensor<?x16x512xf16>, tensor<?x16xf32>
  return %r#0, %r#1 : tensor<?x16x512xf16>, tensor<?x16xf32>
}

// A latent cascade: a shared prefix of latent pages and per-request
// suffixes. Each level keeps q_pe and the (ckv, kpe) pair.
// CHECK-LABEL: func.func @mla_cascade
// CHECK: cascade.multi_level_attention q(%{{.*}} : tensor<?x128x512xbf16>) q_pe(%{{.*}} : tensor<?x128x64xbf16>)
// DECOMPOSE-LABEL: func.func @mla_cascade
// DECOMPOSE: %[[L0:.*]]:2 = cascade.paged_attention q(%[[QN:[^ ]*]] : tensor<?x128x512xbf16>) q_pe(%[[QP:[^ ]*]] : tensor<?x128x64xbf16>) kv(%[[CKV:[^,]*]], %[[KPE:[^ ]*]] :
// DECOMPOSE-SAME: sm_scale = 7.216870e-02
// DECOMPOSE: cascade.paged_attention q(%[[QN]] : tensor<?x128x512xbf16>) q_pe(%[[QP]] : tensor<?x128x64xbf16>) kv(%[[CKV]], %[[KPE]] :
// DECOMPOSE-SAME: outs(%[[L0]]#0, %[[L0]]#1
// DECOMPOSE-SAME: accumulate
func.func @mla_cascade(%qn: tensor<?x128x512xbf16>, %qp: tensor<?x128x64xbf16>,
                       %ckv: tensor<?x64x512xbf16>, %kpe: tensor<?x64x64xbf16>,
                       %qo0: tensor<2xi32>, %qo1: tensor<?xi32>,
                       %kp0: tensor<2xi32>, %kp1: tensor<?xi32>,
                       %ki0: tensor<?xi32>, %ki1: tensor<?xi32>,
                       %kl0: tensor<1xi32>, %kl1: tensor<?xi32>,
                       %o: tensor<?x128x512xbf16>, %lse: tensor<?x128xf32>)
    -> (tensor<?x128x512xbf16>, tensor<?x128xf32>) {
  %r:2 = cascade.multi_level_attention q(%qn : tensor<?x128x512xbf16>) q_pe(%qp : tensor<?x128x64xbf16>)
      kv(%ckv, %kpe : tensor<?x64x512xbf16>, tensor<?x64x64xbf16>)
      qo_indptr(%qo0, %qo1 : tensor<2xi32>, tensor<?xi32>)
      kv_indptr(%kp0, %kp1 : tensor<2xi32>, tensor<?xi32>)
      kv_indices(%ki0, %ki1 : tensor<?xi32>, tensor<?xi32>)
      kv_last_page_len(%kl0, %kl1 : tensor<1xi32>, tensor<?xi32>)
      outs(%o, %lse : tensor<?x128x512xbf16>, tensor<?x128xf32>)
      {page_size = 64 : i64, sm_scale = 0.0721687 : f32, decode_levels = array<i1: false, true>}
      -> tensor<?x128x512xbf16>, tensor<?x128xf32>
  return %r#0, %r#1 : tensor<?x128x512xbf16>, tensor<?x128xf32>
}
