// RUN: cascade-opt %s | cascade-opt | FileCheck %s
// RUN: cascade-opt %s -cascade-decompose-levels | FileCheck %s --check-prefix=DECOMPOSE
// RUN: cascade-opt %s -cascade-decompose-levels=fuse-merges=false | FileCheck %s --check-prefix=UNFUSED

// Attention sinks: one f32 logit per query head that joins the softmax's
// denominator. They round-trip on both attention ops, and a cascade gives
// them to exactly one level (the first), since a sink is one more state
// (0, sink) in the merge of the levels.

// CHECK-LABEL: func.func @decode_sinks
// CHECK: cascade.paged_attention
// CHECK-SAME: kv_last_page_len(%{{.*}} : tensor<?xi32>) sinks(%{{.*}} : tensor<32xf32>)
// CHECK-SAME: outs(
func.func @decode_sinks(%q: tensor<?x32x128xf16>, %cache: tensor<?x2x16x8x128xf16>,
                        %kvp: tensor<?xi32>, %kvi: tensor<?xi32>, %last: tensor<?xi32>,
                        %sinks: tensor<32xf32>,
                        %o: tensor<?x32x128xf16>, %lse: tensor<?x32xf32>)
    -> (tensor<?x32x128xf16>, tensor<?x32xf32>) {
  %r:2 = cascade.paged_attention q(%q : tensor<?x32x128xf16>) kv(%cache : tensor<?x2x16x8x128xf16>)
      kv_indptr(%kvp : tensor<?xi32>) kv_indices(%kvi : tensor<?xi32>) kv_last_page_len(%last : tensor<?xi32>)
      sinks(%sinks : tensor<32xf32>)
      outs(%o, %lse : tensor<?x32x128xf16>, tensor<?x32xf32>) {page_size = 16 : i64}
      -> tensor<?x32x128xf16>, tensor<?x32xf32>
  return %r#0, %r#1 : tensor<?x32x128xf16>, tensor<?x32xf32>
}

// fp8 scales come before the sinks; a dynamic [Hqo] is accepted.
// CHECK-LABEL: func.func @fp8_prefill_sinks
// CHECK: k_scale(%{{.*}}) v_scale(%{{.*}}) sinks(%{{.*}} : tensor<?xf32>)
func.func @fp8_prefill_sinks(%q: tensor<?x8x64xbf16>, %cache: tensor<?x2x16x2x64xf8E4M3FN>,
                             %qo: tensor<?xi32>, %kvp: tensor<?xi32>, %kvi: tensor<?xi32>, %last: tensor<?xi32>,
                             %ks: f32, %vs: f32, %sinks: tensor<?xf32>,
                             %o: tensor<?x8x64xbf16>, %lse: tensor<?x8xf32>)
    -> (tensor<?x8x64xbf16>, tensor<?x8xf32>) {
  %r:2 = cascade.paged_attention q(%q : tensor<?x8x64xbf16>) kv(%cache : tensor<?x2x16x2x64xf8E4M3FN>)
      qo_indptr(%qo : tensor<?xi32>) kv_indptr(%kvp : tensor<?xi32>) kv_indices(%kvi : tensor<?xi32>)
      kv_last_page_len(%last : tensor<?xi32>) k_scale(%ks) v_scale(%vs) sinks(%sinks : tensor<?xf32>)
      outs(%o, %lse : tensor<?x8x64xbf16>, tensor<?x8xf32>) {page_size = 16 : i64, causal}
      -> tensor<?x8x64xbf16>, tensor<?x8xf32>
  return %r#0, %r#1 : tensor<?x8x64xbf16>, tensor<?x8xf32>
}

// CHECK-LABEL: func.func @cascade_sinks
// CHECK: cascade.multi_level_attention
// CHECK-SAME: sinks(%{{.*}} : tensor<32xf32>)
// DECOMPOSE-LABEL: func.func @cascade_sinks
// DECOMPOSE-SAME: %[[SINKS:[^:]*]]: tensor<32xf32>,
// DECOMPOSE: %[[L0:.*]]:2 = cascade.paged_attention {{.*}} kv_last_page_len(%{{.*}} : tensor<1xi32>) sinks(%[[SINKS]] : tensor<32xf32>) outs(
// DECOMPOSE-NOT: sinks(
// DECOMPOSE: cascade.paged_attention {{.*}} outs(%[[L0]]#0, %[[L0]]#1 : {{.*}}) {accumulate
// DECOMPOSE-NOT: sinks(
// DECOMPOSE: return
// UNFUSED-LABEL: func.func @cascade_sinks
// UNFUSED: cascade.paged_attention {{.*}} sinks(
// UNFUSED-NOT: sinks(
// UNFUSED: cascade.merge_state_in_place
// UNFUSED-NOT: sinks(
// UNFUSED: return
func.func @cascade_sinks(%q: tensor<?x32x128xf16>, %cache: tensor<?x2x16x8x128xf16>,
                         %qo0: tensor<2xi32>, %kp0: tensor<2xi32>, %ki0: tensor<?xi32>, %kl0: tensor<1xi32>,
                         %qo1: tensor<?xi32>, %kp1: tensor<?xi32>, %ki1: tensor<?xi32>, %kl1: tensor<?xi32>,
                         %sinks: tensor<32xf32>,
                         %o: tensor<?x32x128xf16>, %lse: tensor<?x32xf32>)
    -> (tensor<?x32x128xf16>, tensor<?x32xf32>) {
  %r:2 = cascade.multi_level_attention q(%q : tensor<?x32x128xf16>) kv(%cache : tensor<?x2x16x8x128xf16>)
      qo_indptr(%qo0, %qo1 : tensor<2xi32>, tensor<?xi32>) kv_indptr(%kp0, %kp1 : tensor<2xi32>, tensor<?xi32>)
      kv_indices(%ki0, %ki1 : tensor<?xi32>, tensor<?xi32>) kv_last_page_len(%kl0, %kl1 : tensor<1xi32>, tensor<?xi32>)
      sinks(%sinks : tensor<32xf32>)
      outs(%o, %lse : tensor<?x32x128xf16>, tensor<?x32xf32>)
      {page_size = 16 : i64, decode_levels = array<i1: false, true>}
      -> tensor<?x32x128xf16>, tensor<?x32xf32>
  return %r#0, %r#1 : tensor<?x32x128xf16>, tensor<?x32xf32>
}
