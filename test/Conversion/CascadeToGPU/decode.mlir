// RUN: cascade-opt %s --convert-cascade-to-gpu | FileCheck %s

// CHECK-LABEL: func.func @decode
// CHECK: gpu.launch_func @cascade_kernels::@cascade_decode_rows_f16_f16_d128_g4_h8_p16_nhd_pool_t16x8_kv32_s2 blocks in (%{{.*}}, %{{.*}}, %{{.*}}) threads in (%{{.*}}, %{{.*}}, %{{.*}})
func.func @decode(%q: memref<?x32x128xf16>, %cache: memref<?x2x16x8x128xf16>,
                  %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>,
                  %o: memref<?x32x128xf16>, %lse: memref<?x32xf32>) {
  cascade.paged_attention q(%q : memref<?x32x128xf16>) kv(%cache : memref<?x2x16x8x128xf16>)
      kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>) kv_last_page_len(%last : memref<?xi32>)
      outs(%o, %lse : memref<?x32x128xf16>, memref<?x32xf32>) {page_size = 16 : i64}
  return
}

// CHECK-LABEL: func.func @decode_split_plan
// CHECK: gpu.launch_func @cascade_kernels::@cascade_decode_split_rows_f16_f16_d128_g4_h8_p16_hnd_pool_t16x8_kv32_s2
// CHECK: gpu.launch_func @cascade_kernels::@cascade_merge_states_indptr_f16_d128_h32_byreq_b2_t128
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

// CHECK-LABEL: func.func @decode_pair_options
// CHECK: gpu.launch_func @cascade_kernels::@cascade_decode_rows_bf16_bf16_d64_g1_h8_p1_hnd_pair_cap41f00000_win128_rope3f800000x461c4000_lsee_t8x16_kv32_s4
func.func @decode_pair_options(%q: memref<?x8x64xbf16>, %k: memref<?x8x1x64xbf16>, %v: memref<?x8x1x64xbf16>,
                               %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>,
                               %o: memref<?x8x64xbf16>, %lse: memref<?x8xf32>) {
  cascade.paged_attention q(%q : memref<?x8x64xbf16>) kv(%k, %v : memref<?x8x1x64xbf16>, memref<?x8x1x64xbf16>)
      kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>) kv_last_page_len(%last : memref<?xi32>)
      outs(%o, %lse : memref<?x8x64xbf16>, memref<?x8xf32>)
      {page_size = 1 : i64, kv_layout = #cascade.kv_layout<hnd>, logits_soft_cap = 30.0 : f32,
       window_left = 128 : i64, pos_encoding = #cascade.pos_encoding<rope_llama>,
       lse_base = #cascade.lse_base<base_e>}
  return
}

// CHECK-LABEL: func.func @decode_alibi
// CHECK: gpu.launch_func @cascade_kernels::@cascade_decode_rows_f16_f16_d256_g8_h2_p16_nhd_pool_alibi_t32x4_kv16_s2
func.func @decode_alibi(%q: memref<?x16x256xf16>, %cache: memref<?x2x16x2x256xf16>,
                        %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>,
                        %o: memref<?x16x256xf16>, %lse: memref<?x16xf32>) {
  cascade.paged_attention q(%q : memref<?x16x256xf16>) kv(%cache : memref<?x2x16x2x256xf16>)
      kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>) kv_last_page_len(%last : memref<?xi32>)
      outs(%o, %lse : memref<?x16x256xf16>, memref<?x16xf32>)
      {page_size = 16 : i64, pos_encoding = #cascade.pos_encoding<alibi>}
  return
}

// CHECK: gpu.module @cascade_kernels
// CHECK-DAG: memref.global "private" constant @cascade_decode_rows_f16_f16_d256_g8_h2_p16_nhd_pool_alibi_t32x4_kv16_s2_alibi : memref<16xf32>
// CHECK-DAG: memref.global "private" constant @cascade_decode_rows_bf16_bf16_d64_g1_h8_p1_hnd_pair_cap41f00000_win128_rope3f800000x461c4000_lsee_t8x16_kv32_s4_rope : memref<64xf32>
// CHECK: gpu.func @cascade_decode_rows_f16_f16_d128_g4_h8_p16_nhd_pool_t16x8_kv32_s2(
// CHECK-SAME: workgroup(
// CHECK-SAME: kernel
// CHECK-SAME: known_block_size = array<i32: 16, 1, 8>
// CHECK: nvgpu.device_async_copy {{.*}}, 8, %{{.*}} {bypassL1}
// CHECK: nvgpu.device_async_create_group
// CHECK: scf.for
// CHECK: nvgpu.device_async_wait %{{.*}} {numGroups = 1 : i32}
// CHECK: gpu.barrier
// CHECK: gpu.shuffle  xor
// CHECK: gpu.shuffle  idx
// CHECK: llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f32"
// CHECK: gpu.func @cascade_decode_split_rows_f16_f16_d128_g4_h8_p16_hnd_pool_t16x8_kv32_s2(
// CHECK: memref.load %{{.*}} : memref<?xi8, strided<[1], offset: ?>>
// CHECK: gpu.func @cascade_merge_states_indptr_f16_d128_h32_byreq_b2_t128(
// CHECK: gpu.func @cascade_decode_rows_bf16_bf16_d64_g1_h8_p1_hnd_pair_cap41f00000_win128_rope3f800000x461c4000_lsee_t8x16_kv32_s4(
// CHECK: llvm.call_intrinsic "llvm.nvvm.cos.approx.ftz.f"
// CHECK: gpu.func @cascade_decode_rows_f16_f16_d256_g8_h2_p16_nhd_pool_alibi_t32x4_kv16_s2(
