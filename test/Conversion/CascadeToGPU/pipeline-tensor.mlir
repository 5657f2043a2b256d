// Tensor-level input: cascade-to-ptx bufferizes (function boundaries, with
// identity layouts so that every buffer is contiguous) and lowers to a
// gpu.binary holding PTX.
// RUN: cascade-opt %s --cascade-to-ptx | FileCheck %s

// CHECK-LABEL: func.func @merge_then_decode
// CHECK-SAME: (%arg0: memref<?x32x128xf16>, %arg1: memref<?x32xf32>,
// CHECK: gpu.launch_func @cascade_kernels::@cascade_merge_state_f16_d128_b2_t128
// CHECK: gpu.launch_func @cascade_kernels::@cascade_decode_rows_f16_f16_d128_g4_h8_p16_nhd_pool_t16x8_kv32_s2
// CHECK: gpu.binary @cascade_kernels  [#gpu.object<#nvvm.target<O = 3, chip = "sm_90", features = "+ptx80">, {{.*}}assembly = "
// CHECK-SAME: .visible .entry cascade_merge_state_f16_d128_b2_t128(
// CHECK-SAME: .visible .entry cascade_decode_rows_f16_f16_d128_g4_h8_p16_nhd_pool_t16x8_kv32_s2(
func.func @merge_then_decode(%va: tensor<?x32x128xf16>, %sa: tensor<?x32xf32>,
                             %vb: tensor<?x32x128xf16>, %sb: tensor<?x32xf32>,
                             %v: tensor<?x32x128xf16>, %s: tensor<?x32xf32>,
                             %q: tensor<?x32x128xf16>, %cache: tensor<?x2x16x8x128xf16>,
                             %kvp: tensor<?xi32>, %kvi: tensor<?xi32>, %last: tensor<?xi32>,
                             %o: tensor<?x32x128xf16>, %lse: tensor<?x32xf32>)
    -> (tensor<?x32x128xf16>, tensor<?x32xf32>, tensor<?x32x128xf16>, tensor<?x32xf32>) {
  %m:2 = cascade.merge_state ins(%va, %sa, %vb, %sb : tensor<?x32x128xf16>, tensor<?x32xf32>, tensor<?x32x128xf16>, tensor<?x32xf32>)
      outs(%v, %s : tensor<?x32x128xf16>, tensor<?x32xf32>) -> tensor<?x32x128xf16>, tensor<?x32xf32>
  %r:2 = cascade.paged_attention q(%q : tensor<?x32x128xf16>) kv(%cache : tensor<?x2x16x8x128xf16>)
      kv_indptr(%kvp : tensor<?xi32>) kv_indices(%kvi : tensor<?xi32>) kv_last_page_len(%last : tensor<?xi32>)
      outs(%o, %lse : tensor<?x32x128xf16>, tensor<?x32xf32>) {page_size = 16 : i64}
      -> tensor<?x32x128xf16>, tensor<?x32xf32>
  return %m#0, %m#1, %r#0, %r#1 : tensor<?x32x128xf16>, tensor<?x32xf32>, tensor<?x32x128xf16>, tensor<?x32xf32>
}
