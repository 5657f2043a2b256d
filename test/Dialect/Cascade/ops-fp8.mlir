// RUN: cascade-opt %s | cascade-opt | FileCheck %s
// RUN: cascade-opt %s --mlir-print-op-generic | cascade-opt | FileCheck %s
// RUN: cascade-opt %s --verify-roundtrip
// RUN: cascade-opt %s --cascade-decompose-levels | FileCheck %s --check-prefix=DECOMPOSE

// fp8 KV caches with and without their dequantization scales.

// CHECK-LABEL: func @decode_e4m3_scaled
// CHECK: cascade.paged_attention q(%{{.*}} : tensor<?x32x128xf16>) kv(%{{.*}} : tensor<?x2x16x8x128xf8E4M3FN>) kv_indptr(%{{.*}} : tensor<?xi32>) kv_indices(%{{.*}} : tensor<?xi32>) kv_last_page_len(%{{.*}} : tensor<?xi32>) k_scale(%arg5) v_scale(%arg6) outs(
func.func @decode_e4m3_scaled(%q: tensor<?x32x128xf16>, %cache: tensor<?x2x16x8x128xf8E4M3FN>,
                              %kvp: tensor<?xi32>, %kvi: tensor<?xi32>, %last: tensor<?xi32>,
                              %ks: f32, %vs: f32,
                              %o: tensor<?x32x128xf16>, %lse: tensor<?x32xf32>)
    -> (tensor<?x32x128xf16>, tensor<?x32xf32>) {
  %r:2 = cascade.paged_attention q(%q : tensor<?x32x128xf16>) kv(%cache : tensor<?x2x16x8x128xf8E4M3FN>)
      kv_indptr(%kvp : tensor<?xi32>) kv_indices(%kvi : tensor<?xi32>) kv_last_page_len(%last : tensor<?xi32>)
      k_scale(%ks) v_scale(%vs)
      outs(%o, %lse : tensor<?x32x128xf16>, tensor<?x32xf32>) {page_size = 16 : i64}
      -> tensor<?x32x128xf16>, tensor<?x32xf32>
  return %r#0, %r#1 : tensor<?x32x128xf16>, tensor<?x32xf32>
}

// CHECK-LABEL: func @prefill_e5m2_pair_v_scale_only
// CHECK: kv(%{{.*}}, %{{.*}} : memref<?x1x8x64xf8E5M2>, memref<?x1x8x64xf8E5M2>)
// CHECK-NOT: k_scale
// CHECK: v_scale(%arg7) outs(
func.func @prefill_e5m2_pair_v_scale_only(%q: memref<?x8x64xbf16>, %k: memref<?x1x8x64xf8E5M2>,
    %v: memref<?x1x8x64xf8E5M2>, %qo: memref<?xi32>, %kvp: memref<?xi32>, %kvi: memref<?xi32>,
    %last: memref<?xi32>, %vs: f32, %o: memref<?x8x64xbf16>, %lse: memref<?x8xf32>) {
  cascade.paged_attention q(%q : memref<?x8x64xbf16>) kv(%k, %v : memref<?x1x8x64xf8E5M2>, memref<?x1x8x64xf8E5M2>)
      qo_indptr(%qo : memref<?xi32>) kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>)
      kv_last_page_len(%last : memref<?xi32>) v_scale(%vs)
      outs(%o, %lse : memref<?x8x64xbf16>, memref<?x8xf32>) {page_size = 8 : i64, kv_layout = #cascade.kv_layout<hnd>, causal}
  return
}

// fp8 queries over a cache of their type, writing bf16 (FlashAttention-3's
// fp8 prefill: both products on fp8 tensor cores).
// CHECK-LABEL: func @prefill_fp8_query
// CHECK: cascade.paged_attention q(%{{.*}} : memref<?x32x128xf8E4M3FN>) kv(%{{.*}} : memref<?x2x16x8x128xf8E4M3FN>)
// CHECK-SAME: outs(%{{.*}}, %{{.*}} : memref<?x32x128xbf16>, memref<?x32xf32>)
func.func @prefill_fp8_query(%q: memref<?x32x128xf8E4M3FN>, %cache: memref<?x2x16x8x128xf8E4M3FN>,
    %qo: memref<?xi32>, %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>,
    %ks: f32, %vs: f32, %o: memref<?x32x128xbf16>, %lse: memref<?x32xf32>) {
  cascade.paged_attention q(%q : memref<?x32x128xf8E4M3FN>) kv(%cache : memref<?x2x16x8x128xf8E4M3FN>)
      qo_indptr(%qo : memref<?xi32>) kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>)
      kv_last_page_len(%last : memref<?xi32>) k_scale(%ks) v_scale(%vs)
      outs(%o, %lse : memref<?x32x128xbf16>, memref<?x32xf32>) {page_size = 16 : i64, causal}
  return
}

// The scales apply to every level: decomposition hands them to each.
// CHECK-LABEL: func @cascade_e4m3
// CHECK: cascade.multi_level_attention {{.*}} k_scale(%{{.*}}) v_scale(%{{.*}}) outs(
// DECOMPOSE-LABEL: func @cascade_e4m3
// DECOMPOSE: cascade.paged_attention {{.*}}xf8E4M3FN>) {{.*}} k_scale(%arg11) v_scale(%arg12) outs(
// DECOMPOSE: cascade.paged_attention {{.*}}xf8E4M3FN>) {{.*}} k_scale(%arg11) v_scale(%arg12) outs({{.*}}accumulate
func.func @cascade_e4m3(%q: tensor<?x32x128xf16>, %cache: tensor<?x2x16x8x128xf8E4M3FN>,
                        %qo0: tensor<2xi32>, %qo1: tensor<?xi32>, %kp0: tensor<2xi32>, %kp1: tensor<?xi32>,
                        %ki0: tensor<?xi32>, %ki1: tensor<?xi32>, %kl0: tensor<1xi32>, %kl1: tensor<?xi32>,
                        %o: tensor<?x32x128xf16>, %ks: f32, %vs: f32, %lse: tensor<?x32xf32>)
    -> (tensor<?x32x128xf16>, tensor<?x32xf32>) {
  %r:2 = cascade.multi_level_attention q(%q : tensor<?x32x128xf16>) kv(%cache : tensor<?x2x16x8x128xf8E4M3FN>)
      qo_indptr(%qo0, %qo1 : tensor<2xi32>, tensor<?xi32>)
      kv_indptr(%kp0, %kp1 : tensor<2xi32>, tensor<?xi32>)
      kv_indices(%ki0, %ki1 : tensor<?xi32>, tensor<?xi32>)
      kv_last_page_len(%kl0, %kl1 : tensor<1xi32>, tensor<?xi32>)
      k_scale(%ks) v_scale(%vs)
      outs(%o, %lse : tensor<?x32x128xf16>, tensor<?x32xf32>)
      {page_size = 16 : i64, decode_levels = array<i1: false, true>}
      -> tensor<?x32x128xf16>, tensor<?x32xf32>
  return %r#0, %r#1 : tensor<?x32x128xf16>, tensor<?x32xf32>
}
