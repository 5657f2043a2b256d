// RUN: cascade-opt %s --cascade-to-ptx | FileCheck %s --check-prefix=PTX
// RUN: cascade-opt %s --cascade-decompose-levels=fuse-merges=false \
// RUN:   --one-shot-bufferize="bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map" \
// RUN:   --convert-cascade-to-gpu | FileCheck %s --check-prefix=UNFUSED

// Multi-level cascade (tensor form): decomposed with fused merges (level 1
// accumulates into level 0's state in its epilogue), bufferized, lowered to
// PTX as two launches, with no temporary state and no merge launch.
// PTX-LABEL: func.func @two_level
// PTX-NOT: memref.alloc
// PTX-NOT: gpu.alloc
// PTX: gpu.launch_func @cascade_kernels::@cascade_prefill_mma_f16_f16_d128_g4_h8_p16_nhd_pool_w4x1_q128_kv32_s3
// PTX: gpu.launch_func @cascade_kernels::@cascade_prefill_causal_acc_mma_f16_f16_d128_g4_h8_p16_nhd_pool_w4x1_q128_kv32_s3
// PTX-NOT: gpu.launch_func

// Unfused, the temporaries that the kernels write are device buffers.
// UNFUSED-LABEL: func.func @two_level
// UNFUSED: gpu.launch_func @cascade_kernels::@cascade_prefill_mma_f16_f16_d128_g4_h8_p16_nhd_pool_w4x1_q128_kv32_s3
// UNFUSED-DAG: %[[TV:.*]], %{{.*}} = gpu.alloc async [%{{.*}}] (%{{.*}}) : memref<?x32x128xf16>
// UNFUSED-DAG: %[[TS:.*]], %{{.*}} = gpu.alloc async [%{{.*}}] (%{{.*}}) : memref<?x32xf32>
// UNFUSED: gpu.launch_func @cascade_kernels::@cascade_prefill_causal_mma_f16_f16_d128_g4_h8_p16_nhd_pool_w4x1_q128_kv32_s3
// UNFUSED: gpu.launch_func @cascade_kernels::@cascade_merge_state_in_place_f16_d128_b2_t128
// UNFUSED-NOT: memref.alloc
func.func @two_level(%q: tensor<?x32x128xf16>, %cache: tensor<?x2x16x8x128xf16>,
                     %qo0: tensor<2xi32>, %kp0: tensor<2xi32>, %ki0: tensor<?xi32>, %kl0: tensor<1xi32>,
                     %qo1: tensor<?xi32>, %kp1: tensor<?xi32>, %ki1: tensor<?xi32>, %kl1: tensor<?xi32>,
                     %o: tensor<?x32x128xf16>, %lse: tensor<?x32xf32>)
    -> (tensor<?x32x128xf16>, tensor<?x32xf32>) {
  %r:2 = cascade.multi_level_attention q(%q : tensor<?x32x128xf16>) kv(%cache : tensor<?x2x16x8x128xf16>)
      qo_indptr(%qo0, %qo1 : tensor<2xi32>, tensor<?xi32>) kv_indptr(%kp0, %kp1 : tensor<2xi32>, tensor<?xi32>)
      kv_indices(%ki0, %ki1 : tensor<?xi32>, tensor<?xi32>) kv_last_page_len(%kl0, %kl1 : tensor<1xi32>, tensor<?xi32>)
      outs(%o, %lse : tensor<?x32x128xf16>, tensor<?x32xf32>) {page_size = 16 : i64, causal}
      -> tensor<?x32x128xf16>, tensor<?x32xf32>
  return %r#0, %r#1 : tensor<?x32x128xf16>, tensor<?x32xf32>
}


// A ragged prefix level (no page table: its pages contiguous from
// kv_indptr[0][0]) over a decode level with one: the prefix lowers to the
// `_ragged` prefill kernel, which takes no kv_indices, and the unique level
// to the decode kernel that reads its table and accumulates.
// PTX-LABEL: func.func @ragged_prefix
// PTX: gpu.launch_func @cascade_kernels::@cascade_prefill_mma_f16_f16_d128_g4_h8_p16_nhd_pool_ragged_w4x1_q128_kv32_s3
// PTX: gpu.launch_func @cascade_kernels::@cascade_decode_acc_{{[a-z0-9_]*}}_p16_nhd_pool_{{[a-z0-9_]*}}
// PTX-NOT: gpu.launch_func
// PTX: gpu.binary @cascade_kernels
// UNFUSED-LABEL: func.func @ragged_prefix
// UNFUSED: gpu.launch_func @cascade_kernels::@cascade_prefill_mma_f16_f16_d128_g4_h8_p16_nhd_pool_ragged_w4x1_q128_kv32_s3
// UNFUSED: gpu.launch_func @cascade_kernels::@cascade_decode_{{[a-z0-9_]*}}_p16_nhd_pool_{{[a-z0-9_]*}}
// UNFUSED: gpu.launch_func @cascade_kernels::@cascade_merge_state_in_place_f16_d128_b2_t128
func.func @ragged_prefix(%q: tensor<?x32x128xf16>, %cache: tensor<?x2x16x8x128xf16>,
                         %qo0: tensor<2xi32>, %kp0: tensor<2xi32>, %kl0: tensor<1xi32>,
                         %qo1: tensor<?xi32>, %kp1: tensor<?xi32>, %ki1: tensor<?xi32>, %kl1: tensor<?xi32>,
                         %o: tensor<?x32x128xf16>, %lse: tensor<?x32xf32>)
    -> (tensor<?x32x128xf16>, tensor<?x32xf32>) {
  %r:2 = cascade.multi_level_attention q(%q : tensor<?x32x128xf16>) kv(%cache : tensor<?x2x16x8x128xf16>)
      qo_indptr(%qo0, %qo1 : tensor<2xi32>, tensor<?xi32>) kv_indptr(%kp0, %kp1 : tensor<2xi32>, tensor<?xi32>)
      kv_indices(%ki1 : tensor<?xi32>) kv_last_page_len(%kl0, %kl1 : tensor<1xi32>, tensor<?xi32>)
      outs(%o, %lse : tensor<?x32x128xf16>, tensor<?x32xf32>)
      {page_size = 16 : i64, decode_levels = array<i1: false, true>, ragged_levels = array<i1: true, false>}
      -> tensor<?x32x128xf16>, tensor<?x32xf32>
  return %r#0, %r#1 : tensor<?x32x128xf16>, tensor<?x32xf32>
}
