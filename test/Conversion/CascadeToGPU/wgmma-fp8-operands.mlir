// RUN: cascade-opt %s --cascade-select-kernel-config=chip=sm_90a | FileCheck %s
// RUN: cascade-opt %s --cascade-select-kernel-config=chip=sm_90a --convert-cascade-to-gpu | FileCheck %s --check-prefix=KERNELS

// fp8 queries over an fp8 cache of their type (FlashAttention-3's fp8
// prefill) on the wgmma family (wgmma-fp8-operands, on by default; GPU-checked
// against float64: check.py --fp8-operands): both products on
// fp8 tensor cores (m64nNk32). Two consumer warpgroups over 128-key tiles in
// 4 stages: Q (128 x 128 bytes), the K ring and the transposed V ring (4 x
// 16 KiB each) and V's staging ring (4 x 16 KiB): 208 KiB.
// CHECK-LABEL: func.func @prefill_fp8_query
// CHECK: #cascade.kernel_config<wgmma, threads = [128, 3, 1], q_tile = 128, kv_tile = 128, stages = 4>
// The output's type is in the name (it differs from q's).
// KERNELS-LABEL: module attributes {cascade.bundle
// KERNELS-SAME: dynamic_shared_bytes = 212992 : i64
// KERNELS-SAME: name = "cascade_prefill_causal_wgmma_f8e4m3_f8e4m3_d128_obf16_g4_h8_p16_nhd_pool_w3x1_q128_kv128_s4"
// KERNELS-LABEL: gpu.func @cascade_prefill_causal_wgmma_f8e4m3_f8e4m3_d128_obf16_g4_h8_p16_nhd_pool_w3x1_q128_kv128_s4(
// The tiles in 16-bit units (Q, 4 K stages, 4 V stages: 73728), the same
// bytes as fp8, then V's staging ring.
// KERNELS: memref.view {{.*}} to memref<73728xf16, #gpu.address_space<workgroup>>
// KERNELS: %[[T8:.*]] = memref.view {{.*}} to memref<147456xf8E4M3FN, #gpu.address_space<workgroup>>
// KERNELS: %[[SV:.*]] = memref.view {{.*}}[%c147456{{.*}} to memref<65536xf8E4M3FN, #gpu.address_space<workgroup>>
// The producer acquires the stage, copies K into its ring stage and V into
// its staging slot (16 bytes each), and publishes the previous tile after
// its copies landed and the producer's barrier: V transposed into the ring,
// four bytes (four keys of one dim) a store.
// KERNELS: nvvm.setmaxregister decrease 56
// KERNELS: nvgpu.mbarrier.try_wait.parity
// KERNELS: nvgpu.device_async_copy %arg1[{{.*}}], %[[T8]][{{.*}}], 16, {{.*}} {bypassL1}
// KERNELS: nvgpu.device_async_copy %arg1[{{.*}}], %[[SV]][{{.*}}], 16, {{.*}} {bypassL1}
// KERNELS: nvvm.cp.async.commit.group
// KERNELS: nvvm.cp.async.wait.group 1
// KERNELS: nvvm.barrier id = %{{.*}} number_of_threads = %{{.*}}
// KERNELS: vector.load %[[SV]][{{.*}}] {alignment = 16 : i64} : {{.*}}, vector<16xf8E4M3FN>
// KERNELS: vector.shuffle {{.*}} : vector<32xi8>, vector<32xi8>
// KERNELS: vector.store {{.*}}, %[[T8]][{{.*}}] {alignment = 4 : i64} : memref<147456xf8E4M3FN, #gpu.address_space<workgroup>>, vector<4xf8E4M3FN>
// KERNELS: nvvm.fence.proxy
// KERNELS-NEXT: nvgpu.mbarrier.arrive
// The consumers: Q copied as fp8 bytes, S = Q K^T on k32 wgmma, P narrowed
// to e4m3 pairs and P V with A from registers and V K-major (no transpose
// immediate), O scaled by v_scale.
// KERNELS: nvvm.setmaxregister increase 224
// KERNELS: nvgpu.device_async_copy %arg0[{{.*}}], %[[T8]][{{.*}}], 16, {{.*}} {bypassL1}
// KERNELS: nvvm.wgmma.mma_async {{.*}}, <m = 64, n = 128, k = 32>, D[<f32>, <zero>], A[<e4m3>, <one>, <row>], B[<e4m3>, <one>, <col>]
// KERNELS: cvt.rn.satfinite.e4m3x2.f16x2
// KERNELS: wgmma.mma_async.sync.aligned.m64n128k32.f32.e4m3.e4m3 {{.*}}, p, 1, 1;
// KERNELS: vector.broadcast %{{.*}} : f32 to vector<2x2xf32>
// KERNELS: arith.truncf {{.*}} to vector<2xbf16>
func.func @prefill_fp8_query(%q: memref<?x32x128xf8E4M3FN>, %cache: memref<?x2x16x8x128xf8E4M3FN>, %qo: memref<?xi32>,
                             %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>,
                             %o: memref<?x32x128xbf16>, %lse: memref<?x32xf32>, %ks: f32, %vs: f32) {
  cascade.paged_attention q(%q : memref<?x32x128xf8E4M3FN>) kv(%cache : memref<?x2x16x8x128xf8E4M3FN>)
      qo_indptr(%qo : memref<?xi32>) kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>)
      kv_last_page_len(%last : memref<?xi32>) k_scale(%ks) v_scale(%vs)
      outs(%o, %lse : memref<?x32x128xbf16>, memref<?x32xf32>)
      {page_size = 16 : i64, causal}
  return
}

// e5m2, a non-causal level writing f16: the same configuration.
// CHECK-LABEL: func.func @prefix_fp8_query_e5m2
// CHECK: #cascade.kernel_config<wgmma, threads = [128, 3, 1], q_tile = 128, kv_tile = 128, stages = 4>
// KERNELS-LABEL: gpu.func @cascade_prefill_wgmma_f8e5m2_f8e5m2_d128_of16_g1_h32_p16_nhd_pool_w3x1_q128_kv128_s4(
// KERNELS: nvvm.wgmma.mma_async {{.*}}, <m = 64, n = 128, k = 32>, D[<f32>, <zero>], A[<e5m2>, <one>, <row>], B[<e5m2>, <one>, <col>]
// KERNELS: cvt.rn.satfinite.e5m2x2.f16x2
// KERNELS: wgmma.mma_async.sync.aligned.m64n128k32.f32.e5m2.e5m2
func.func @prefix_fp8_query_e5m2(%q: memref<?x32x128xf8E5M2>, %cache: memref<?x2x16x32x128xf8E5M2>, %qo: memref<?xi32>,
                                 %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>,
                                 %o: memref<?x32x128xf16>, %lse: memref<?x32xf32>) {
  cascade.paged_attention q(%q : memref<?x32x128xf8E5M2>) kv(%cache : memref<?x2x16x32x128xf8E5M2>)
      qo_indptr(%qo : memref<?xi32>) kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>)
      kv_last_page_len(%last : memref<?xi32>)
      outs(%o, %lse : memref<?x32x128xf16>, memref<?x32xf32>)
      {page_size = 16 : i64}
  return
}
