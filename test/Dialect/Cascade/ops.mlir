// RUN: cascade-opt %s | cascade-opt | FileCheck %s
// RUN: cascade-opt %s --mlir-print-op-generic | cascade-opt | FileCheck %s
// RUN: cascade-opt %s --verify-roundtrip

// CHECK-LABEL: func @merge_state
// CHECK: cascade.merge_state ins(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : tensor<?x32x128xf16>, tensor<?x32xf32>, tensor<?x32x128xf16>, tensor<?x32xf32>) outs(%{{.*}}, %{{.*}} : tensor<?x32x128xf16>, tensor<?x32xf32>) -> tensor<?x32x128xf16>, tensor<?x32xf32>
func.func @merge_state(%va: tensor<?x32x128xf16>, %sa: tensor<?x32xf32>,
                       %vb: tensor<?x32x128xf16>, %sb: tensor<?x32xf32>,
                       %v: tensor<?x32x128xf16>, %s: tensor<?x32xf32>)
    -> (tensor<?x32x128xf16>, tensor<?x32xf32>) {
  %r:2 = cascade.merge_state ins(%va, %sa, %vb, %sb : tensor<?x32x128xf16>, tensor<?x32xf32>, tensor<?x32x128xf16>, tensor<?x32xf32>)
      outs(%v, %s : tensor<?x32x128xf16>, tensor<?x32xf32>) -> tensor<?x32x128xf16>, tensor<?x32xf32>
  return %r#0, %r#1 : tensor<?x32x128xf16>, tensor<?x32xf32>
}

// CHECK-LABEL: func @merge_state_base_e_memref
// CHECK: cascade.merge_state ins({{.*}}) outs({{.*}}) {lse_base = #cascade.lse_base<base_e>}
// CHECK-NOT: ->
func.func @merge_state_base_e_memref(%va: memref<7x4x64xbf16>, %sa: memref<7x4xf32>,
                                     %vb: memref<7x4x64xbf16>, %sb: memref<7x4xf32>,
                                     %v: memref<7x4x64xbf16>, %s: memref<7x4xf32>) {
  cascade.merge_state ins(%va, %sa, %vb, %sb : memref<7x4x64xbf16>, memref<7x4xf32>, memref<7x4x64xbf16>, memref<7x4xf32>)
      outs(%v, %s : memref<7x4x64xbf16>, memref<7x4xf32>) {lse_base = #cascade.lse_base<base_e>}
  return
}

// CHECK-LABEL: func @merge_in_place_masked
// CHECK: cascade.merge_state_in_place ins(%{{.*}}, %{{.*}} : memref<?x8x128xf32>, memref<?x8xf32>) mask(%{{.*}} : memref<?xi8, strided<[?]>>) outs(%{{.*}}, %{{.*}} : memref<?x8x128xf32>, memref<?x8xf32>)
func.func @merge_in_place_masked(%vo: memref<?x8x128xf32>, %so: memref<?x8xf32>,
                                 %m: memref<?xi8, strided<[?]>>,
                                 %v: memref<?x8x128xf32>, %s: memref<?x8xf32>) {
  cascade.merge_state_in_place ins(%vo, %so : memref<?x8x128xf32>, memref<?x8xf32>)
      mask(%m : memref<?xi8, strided<[?]>>) outs(%v, %s : memref<?x8x128xf32>, memref<?x8xf32>)
  return
}

// CHECK-LABEL: func @merge_in_place_tensor
// CHECK: cascade.merge_state_in_place ins({{.*}}) outs({{.*}}) -> tensor<4x8x128xf16>, tensor<4x8xf32>
func.func @merge_in_place_tensor(%vo: tensor<4x8x128xf16>, %so: tensor<4x8xf32>,
                                 %v: tensor<4x8x128xf16>, %s: tensor<4x8xf32>)
    -> (tensor<4x8x128xf16>, tensor<4x8xf32>) {
  %r:2 = cascade.merge_state_in_place ins(%vo, %so : tensor<4x8x128xf16>, tensor<4x8xf32>)
      outs(%v, %s : tensor<4x8x128xf16>, tensor<4x8xf32>) -> tensor<4x8x128xf16>, tensor<4x8xf32>
  return %r#0, %r#1 : tensor<4x8x128xf16>, tensor<4x8xf32>
}

// CHECK-LABEL: func @merge_states
// CHECK: cascade.merge_states ins(%{{.*}}, %{{.*}} : tensor<?x16x32x128xf16>, tensor<?x16x32xf32>) outs
func.func @merge_states(%vs: tensor<?x16x32x128xf16>, %ss: tensor<?x16x32xf32>,
                        %v: tensor<?x32x128xf16>, %s: tensor<?x32xf32>)
    -> (tensor<?x32x128xf16>, tensor<?x32xf32>) {
  %r:2 = cascade.merge_states ins(%vs, %ss : tensor<?x16x32x128xf16>, tensor<?x16x32xf32>)
      outs(%v, %s : tensor<?x32x128xf16>, tensor<?x32xf32>) -> tensor<?x32x128xf16>, tensor<?x32xf32>
  return %r#0, %r#1 : tensor<?x32x128xf16>, tensor<?x32xf32>
}

// CHECK-LABEL: func @decode
// CHECK: cascade.paged_attention q(%{{.*}} : tensor<?x32x128xf16>) kv(%{{.*}} : tensor<?x2x16x8x128xf16>) kv_indptr
// CHECK-SAME: {page_size = 16 : i64}
func.func @decode(%q: tensor<?x32x128xf16>, %cache: tensor<?x2x16x8x128xf16>,
                  %kvp: tensor<?xi32>, %kvi: tensor<?xi32>, %last: tensor<?xi32>,
                  %o: tensor<?x32x128xf16>, %lse: tensor<?x32xf32>)
    -> (tensor<?x32x128xf16>, tensor<?x32xf32>) {
  %r:2 = cascade.paged_attention q(%q : tensor<?x32x128xf16>) kv(%cache : tensor<?x2x16x8x128xf16>)
      kv_indptr(%kvp : tensor<?xi32>) kv_indices(%kvi : tensor<?xi32>) kv_last_page_len(%last : tensor<?xi32>)
      outs(%o, %lse : tensor<?x32x128xf16>, tensor<?x32xf32>) {page_size = 16 : i64}
      -> tensor<?x32x128xf16>, tensor<?x32xf32>
  return %r#0, %r#1 : tensor<?x32x128xf16>, tensor<?x32xf32>
}

// CHECK-LABEL: func @prefill_all_options
// CHECK: cascade.paged_attention q({{.*}}) kv(%{{.*}}, %{{.*}} : tensor<?x1x8x64xbf16>, tensor<?x1x8x64xbf16>) qo_indptr(%{{.*}} : tensor<?xi32>)
// CHECK-SAME: causal
// CHECK-SAME: kv_layout = #cascade.kv_layout<hnd>
// CHECK-SAME: logits_soft_cap = 3.000000e+01 : f32
// CHECK-SAME: pos_encoding = #cascade.pos_encoding<rope_llama>
// CHECK-SAME: rope_theta = 5.000000e+05 : f32
// CHECK-SAME: sm_scale = 1.250000e-01 : f32
// CHECK-SAME: window_left = 128 : i64
func.func @prefill_all_options(%q: tensor<?x8x64xbf16>, %k: tensor<?x1x8x64xbf16>, %vv: tensor<?x1x8x64xbf16>,
                               %qo: tensor<?xi32>, %kvp: tensor<?xi32>, %kvi: tensor<?xi32>, %last: tensor<?xi32>,
                               %o: tensor<?x8x64xbf16>, %lse: tensor<?x8xf32>)
    -> (tensor<?x8x64xbf16>, tensor<?x8xf32>) {
  %r:2 = cascade.paged_attention q(%q : tensor<?x8x64xbf16>) kv(%k, %vv : tensor<?x1x8x64xbf16>, tensor<?x1x8x64xbf16>)
      qo_indptr(%qo : tensor<?xi32>) kv_indptr(%kvp : tensor<?xi32>) kv_indices(%kvi : tensor<?xi32>)
      kv_last_page_len(%last : tensor<?xi32>)
      outs(%o, %lse : tensor<?x8x64xbf16>, tensor<?x8xf32>)
      {page_size = 8 : i64, kv_layout = #cascade.kv_layout<hnd>, causal, sm_scale = 0.125 : f32,
       logits_soft_cap = 30.0 : f32, window_left = 128 : i64, pos_encoding = #cascade.pos_encoding<rope_llama>,
       rope_scale = 1.0 : f32, rope_theta = 500000.0 : f32}
      -> tensor<?x8x64xbf16>, tensor<?x8xf32>
  return %r#0, %r#1 : tensor<?x8x64xbf16>, tensor<?x8xf32>
}

// CHECK-LABEL: func @decode_split_plan
// CHECK: cascade.paged_attention {{.*}} plan(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : memref<?xi32>, memref<?xi32>, memref<?xi32>, memref<?xi8>, memref<1xi32>, memref<?x32x128xf32>, memref<?x32xf32>)
func.func @decode_split_plan(%q: memref<?x32x128xf16>, %cache: memref<?x2x8x16x128xf16>,
                             %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>,
                             %ri: memref<?xi32>, %kt: memref<?xi32>, %oi: memref<?xi32>, %mask: memref<?xi8>,
                             %chunk: memref<1xi32>, %tv: memref<?x32x128xf32>, %ts: memref<?x32xf32>,
                             %o: memref<?x32x128xf16>, %lse: memref<?x32xf32>) {
  cascade.paged_attention q(%q : memref<?x32x128xf16>) kv(%cache : memref<?x2x8x16x128xf16>)
      kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>) kv_last_page_len(%last : memref<?xi32>)
      plan(%ri, %kt, %oi, %mask, %chunk, %tv, %ts : memref<?xi32>, memref<?xi32>, memref<?xi32>, memref<?xi8>, memref<1xi32>, memref<?x32x128xf32>, memref<?x32xf32>)
      outs(%o, %lse : memref<?x32x128xf16>, memref<?x32xf32>) {page_size = 16 : i64, kv_layout = #cascade.kv_layout<hnd>}
  return
}

// CHECK-LABEL: func @two_level
// CHECK: cascade.multi_level_attention q({{.*}}) kv({{.*}}) qo_indptr(%{{.*}}, %{{.*}} : tensor<2xi32>, tensor<?xi32>)
func.func @two_level(%q: tensor<?x32x128xf16>, %cache: tensor<?x2x16x8x128xf16>,
                     %qo0: tensor<2xi32>, %kp0: tensor<2xi32>, %ki0: tensor<?xi32>, %kl0: tensor<1xi32>,
                     %qo1: tensor<?xi32>, %kp1: tensor<?xi32>, %ki1: tensor<?xi32>, %kl1: tensor<?xi32>,
                     %o: tensor<?x32x128xf16>, %lse: tensor<?x32xf32>)
    -> (tensor<?x32x128xf16>, tensor<?x32xf32>) {
  %r:2 = cascade.multi_level_attention q(%q : tensor<?x32x128xf16>) kv(%cache : tensor<?x2x16x8x128xf16>)
      qo_indptr(%qo0, %qo1 : tensor<2xi32>, tensor<?xi32>) kv_indptr(%kp0, %kp1 : tensor<2xi32>, tensor<?xi32>)
      kv_indices(%ki0, %ki1 : tensor<?xi32>, tensor<?xi32>) kv_last_page_len(%kl0, %kl1 : tensor<1xi32>, tensor<?xi32>)
      outs(%o, %lse : tensor<?x32x128xf16>, tensor<?x32xf32>) {page_size = 16 : i64}
      -> tensor<?x32x128xf16>, tensor<?x32xf32>
  return %r#0, %r#1 : tensor<?x32x128xf16>, tensor<?x32xf32>
}
