// RUN: cascade-opt %s --cascade-select-kernel-config=chip=sm_90a | FileCheck %s
// RUN: cascade-opt %s --cascade-select-kernel-config=chip=sm_89 | FileCheck %s --check-prefix=MMA
// RUN: cascade-opt %s --cascade-select-kernel-config=chip=sm_90 | FileCheck %s --check-prefix=MMA
// RUN: cascade-opt %s --cascade-select-kernel-config="chip=sm_90a wgmma=false" | FileCheck %s --check-prefix=MMA
// RUN: cascade-opt %s --cascade-select-kernel-config="chip=sm_90a wgmma-split-kv-barriers=true" | FileCheck %s --check-prefix=SPLIT
// RUN: cascade-opt %s --cascade-select-kernel-config=chip=sm_90a --convert-cascade-to-gpu | FileCheck %s --check-prefix=KERNELS

// An fp8 KV cache (e4m3, e5m2) on the wgmma family (sm_90a): prefill,
// append and shared-prefix levels. The producer warpgroup gathers each fp8
// K/V tile with 16-byte cp.async (16 elements a chunk) into staging rings
// after the panel ring, `stages` - 1 tiles ahead; to publish a tile it
// waits for its own copies and the tile's ring stage, converts the chunks it
// copied (cvt.rn.f16x2.{e4m3x2,e5m2x2}; bf16 through f32) into the
// 128-byte-swizzled panel stage, fences the async proxy and arrives on
// `full`; the consumers scale the raw scores by k_scale and the output by
// v_scale, as mma_sync does. The ring stays joint (3 stages or more): KV
// tiles shrink until three stages of panels and staging fit 227 KiB, then
// as many stages (up to 4) as fit: head_dim 64 kv128 s4 (208 KiB), 128
// kv64 s4 (224 KiB), 256 kv32 s3 (208 KiB). sm_89, plain sm_90 and
// wgmma=false keep mma_sync; with wgmma-split-kv-barriers, fp8 ops stay on
// mma_sync (the fp8 producer publishes whole tiles: no split rings).

// CHECK-LABEL: func.func @prefill_e4m3_d128
// CHECK: #cascade.kernel_config<wgmma, threads = [128, 3, 1], q_tile = 128, kv_tile = 64, stages = 4>
// MMA-LABEL: func.func @prefill_e4m3_d128
// MMA: #cascade.kernel_config<mma_sync,
// SPLIT-LABEL: func.func @prefill_e4m3_d128
// SPLIT: #cascade.kernel_config<mma_sync,
// KERNELS-LABEL: module attributes {cascade.bundle
// KERNELS-SAME: dynamic_shared_bytes = 229376 : i64
// KERNELS-SAME: name = "cascade_prefill_causal_wgmma_f16_f8e4m3_d128_g4_h8_p16_nhd_pool_w3x1_q128_kv64_s4"
// KERNELS-LABEL: gpu.func @cascade_prefill_causal_wgmma_f16_f8e4m3_d128_g4_h8_p16_nhd_pool_w3x1_q128_kv64_s4(
// KERNELS-SAME: %[[KS:arg[0-9]+]]: f32, %[[VS:arg[0-9]+]]: f32
// The panel ring (Q 128 x 128 and 4 stages of 64-key K and V tiles: 81920
// f16), then the K and V staging rings (4 x 64 x 128 fp8 each).
// KERNELS: memref.view {{.*}} to memref<81920xf16, #gpu.address_space<workgroup>>
// KERNELS: %[[SK:.*]] = memref.view {{.*}}[%c163840{{.*}} to memref<32768xf8E4M3FN, #gpu.address_space<workgroup>>
// KERNELS: %[[SV:.*]] = memref.view {{.*}}[%c196608{{.*}} to memref<32768xf8E4M3FN, #gpu.address_space<workgroup>>
// The producer: 56 registers. Its copies land in the staging rings, 16
// bytes each, without waiting for anything (no mbarrier wait before them)
// and without arriving on `full` themselves.
// KERNELS: nvvm.setmaxregister decrease 56
// KERNELS-NOT: nvgpu.mbarrier.try_wait.parity
// KERNELS: nvgpu.device_async_copy %arg1[{{.*}}], %[[SK]][{{.*}}], 16, {{.*}} {bypassL1}
// KERNELS-NEXT: arith.addi
// KERNELS-NEXT: nvgpu.device_async_copy %arg1[{{.*}}], %[[SV]][{{.*}}], 16, {{.*}} {bypassL1}
// KERNELS-NOT: nvvm.cp.async.mbarrier.arrive
// KERNELS: nvvm.cp.async.commit.group
// Tile i - 3 is published after tile i was issued (3 tiles' copies in
// flight): its own copies waited for, its ring stage released by the
// consumers, its chunks converted into the panel stage, fenced, arrived.
// KERNELS: nvvm.cp.async.wait.group 3
// KERNELS: nvgpu.mbarrier.try_wait.parity
// KERNELS: vector.load %[[SK]][{{.*}}] {alignment = 16 : i64} : {{.*}}, vector<16xf8E4M3FN>
// KERNELS: arith.select {{.*}} : vector<8xi8>
// KERNELS: nvvm.convert.f8x2.to.f16x2 {{.*}} : vector<2xi8>(f8E4M3FN) -> vector<2xf16>
// KERNELS: vector.store {{.*}} {alignment = 16 : i64} : memref<81920xf16, #gpu.address_space<workgroup>>, vector<8xf16>
// KERNELS: vector.load %[[SV]][{{.*}}] {alignment = 16 : i64} : {{.*}}, vector<16xf8E4M3FN>
// KERNELS: vector.store {{.*}} : memref<81920xf16, #gpu.address_space<workgroup>>, vector<8xf16>
// KERNELS: nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}
// KERNELS-NEXT: nvgpu.mbarrier.arrive
// The last three tiles, with 2, 1 and 0 newer groups in flight.
// KERNELS: nvvm.cp.async.wait.group 2
// KERNELS: nvvm.fence.proxy
// KERNELS-NEXT: nvgpu.mbarrier.arrive
// KERNELS: nvvm.cp.async.wait.group 1
// KERNELS: nvvm.fence.proxy
// KERNELS-NEXT: nvgpu.mbarrier.arrive
// KERNELS: nvvm.cp.async.wait.group 0
// KERNELS: nvvm.fence.proxy
// KERNELS-NEXT: nvgpu.mbarrier.arrive
// The consumers: 224 registers; k_scale folded into the softmax's exp2
// scale once (sm_scale * log2 e = 0.1275 at head_dim 128; NaN unless
// k_scale is positive and finite), so no multiply of the scores; the
// producer fenced, so no fence after their wait on `full`; v_scale on the
// output.
// KERNELS: nvvm.setmaxregister increase 224
// KERNELS-NEXT: %[[INF:.*]] = arith.constant 0x7F800000 : f32
// KERNELS-NEXT: %[[FINITE:.*]] = arith.cmpf olt, %[[KS]], %[[INF]] : f32
// KERNELS-NEXT: %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// KERNELS-NEXT: %[[POS:.*]] = arith.cmpf ogt, %[[KS]], %[[ZERO]] : f32
// KERNELS-NEXT: %[[OK:.*]] = arith.andi %[[POS]], %[[FINITE]] : i1
// KERNELS-NEXT: %[[NAN:.*]] = arith.constant 0x7FC00000 : f32
// KERNELS-NEXT: %[[C:.*]] = arith.constant 0.127517432 : f32
// KERNELS-NEXT: %[[KC:.*]] = arith.mulf %[[KS]], %[[C]] : f32
// KERNELS-NEXT: %[[EXPS:.*]] = arith.select %[[OK]], %[[KC]], %[[NAN]] : f32
// KERNELS: nvgpu.mbarrier.try_wait.parity
// KERNELS-NOT: nvvm.fence.proxy
// KERNELS: nvvm.wgmma.mma_async
// KERNELS-NOT: vector.broadcast %[[KS]]
// KERNELS: llvm.intr.fma(%{{.*}}, %[[EXPS]], %{{.*}}) : (f32, f32, f32) -> f32
// KERNELS: vector.broadcast %[[VS]] : f32 to vector<2x2xf32>
// KERNELS-NEXT: arith.mulf
func.func @prefill_e4m3_d128(%q: memref<?x32x128xf16>, %cache: memref<?x2x16x8x128xf8E4M3FN>, %qo: memref<?xi32>,
                             %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>,
                             %o: memref<?x32x128xf16>, %lse: memref<?x32xf32>, %ks: f32, %vs: f32) {
  cascade.paged_attention q(%q : memref<?x32x128xf16>) kv(%cache : memref<?x2x16x8x128xf8E4M3FN>)
      qo_indptr(%qo : memref<?xi32>) kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>)
      kv_last_page_len(%last : memref<?xi32>) k_scale(%ks) v_scale(%vs)
      outs(%o, %lse : memref<?x32x128xf16>, memref<?x32xf32>)
      {page_size = 16 : i64, causal}
  return
}

// A non-causal level at head_dim 128 (a cascade's shared prefix) takes three
// consumers: 192 query rows a block over 64-key tiles in 3 stages (Q 48 KiB,
// panels 96, staging 48).
// CHECK-LABEL: func.func @prefix_e4m3_d128
// CHECK: #cascade.kernel_config<wgmma, threads = [128, 4, 1], q_tile = 192, kv_tile = 64, stages = 3>
// MMA-LABEL: func.func @prefix_e4m3_d128
// MMA: #cascade.kernel_config<mma_sync,
// KERNELS-LABEL: gpu.func @cascade_prefill_wgmma_f16_f8e4m3_d128_g4_h8_p16_nhd_pool_w4x1_q192_kv64_s3(
func.func @prefix_e4m3_d128(%q: memref<?x32x128xf16>, %cache: memref<?x2x16x8x128xf8E4M3FN>, %qo: memref<?xi32>,
                            %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>,
                            %o: memref<?x32x128xf16>, %lse: memref<?x32xf32>, %ks: f32, %vs: f32) {
  cascade.paged_attention q(%q : memref<?x32x128xf16>) kv(%cache : memref<?x2x16x8x128xf8E4M3FN>)
      qo_indptr(%qo : memref<?xi32>) kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>)
      kv_last_page_len(%last : memref<?xi32>) k_scale(%ks) v_scale(%vs)
      outs(%o, %lse : memref<?x32x128xf16>, memref<?x32xf32>)
      {page_size = 16 : i64}
  return
}

// bf16 q over an e5m2 pair in HND: f16 -> f32 -> bf16 after the cvt.
// CHECK-LABEL: func.func @prefill_e5m2_d64_bf16
// CHECK: #cascade.kernel_config<wgmma, threads = [128, 3, 1], q_tile = 128, kv_tile = 128, stages = 4>
// MMA-LABEL: func.func @prefill_e5m2_d64_bf16
// MMA: #cascade.kernel_config<mma_sync,
// KERNELS-LABEL: gpu.func @cascade_prefill_wgmma_bf16_f8e5m2_d64_g4_h4_p8_hnd_pair_w3x1_q128_kv128_s4(
// KERNELS: nvvm.setmaxregister decrease 56
// KERNELS: vector.load {{.*}} : memref<32768xf8E5M2, #gpu.address_space<workgroup>>, vector<16xf8E5M2>
// KERNELS: nvvm.convert.f8x2.to.f16x2 {{.*}} : vector<2xi8>(f8E5M2) -> vector<2xf16>
// KERNELS: arith.extf {{.*}} : vector<8xf16> to vector<8xf32>
// KERNELS-NEXT: arith.truncf {{.*}} : vector<8xf32> to vector<8xbf16>
// KERNELS-NEXT: vector.store {{.*}} : memref<{{[0-9]+}}xbf16, #gpu.address_space<workgroup>>, vector<8xbf16>
// KERNELS: nvvm.setmaxregister increase 224
func.func @prefill_e5m2_d64_bf16(%q: memref<?x16x64xbf16>, %k: memref<?x4x8x64xf8E5M2>, %v: memref<?x4x8x64xf8E5M2>,
                                 %qo: memref<?xi32>, %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>,
                                 %o: memref<?x16x64xbf16>, %lse: memref<?x16xf32>) {
  cascade.paged_attention q(%q : memref<?x16x64xbf16>) kv(%k, %v : memref<?x4x8x64xf8E5M2>, memref<?x4x8x64xf8E5M2>)
      qo_indptr(%qo : memref<?xi32>) kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>)
      kv_last_page_len(%last : memref<?xi32>) outs(%o, %lse : memref<?x16x64xbf16>, memref<?x16xf32>)
      {page_size = 8 : i64, kv_layout = #cascade.kv_layout<hnd>}
  return
}

// head_dim 256: 32-key tiles in 3 stages (64-key tiles do not fit three).
// CHECK-LABEL: func.func @prefill_e4m3_d256
// CHECK: #cascade.kernel_config<wgmma, threads = [128, 3, 1], q_tile = 128, kv_tile = 32, stages = 3>
// MMA-LABEL: func.func @prefill_e4m3_d256
// MMA: #cascade.kernel_config<mma_sync,
// KERNELS-LABEL: gpu.func @cascade_prefill_causal_wgmma_f16_f8e4m3_d256_g4_h4_p16_nhd_pool_w3x1_q128_kv32_s3(
func.func @prefill_e4m3_d256(%q: memref<?x16x256xf16>, %cache: memref<?x2x16x4x256xf8E4M3FN>, %qo: memref<?xi32>,
                             %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>,
                             %o: memref<?x16x256xf16>, %lse: memref<?x16xf32>) {
  cascade.paged_attention q(%q : memref<?x16x256xf16>) kv(%cache : memref<?x2x16x4x256xf8E4M3FN>)
      qo_indptr(%qo : memref<?xi32>) kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>)
      kv_last_page_len(%last : memref<?xi32>) outs(%o, %lse : memref<?x16x256xf16>, memref<?x16xf32>)
      {page_size = 16 : i64, causal}
  return
}

// RoPE: the producer converts, then (after a producer barrier) rotates K:
// 88 / 208 registers.
// CHECK-LABEL: func.func @prefill_e4m3_rope
// CHECK: #cascade.kernel_config<wgmma, threads = [128, 3, 1], q_tile = 128, kv_tile = 64, stages = 4>
// KERNELS-LABEL: gpu.func @cascade_prefill_causal_wgmma_f16_f8e4m3_d128_g4_h8_p16_nhd_pool_rope3f800000x461c4000_w3x1_q128_kv64_s4(
// KERNELS: nvvm.setmaxregister decrease 88
// KERNELS: nvvm.cp.async.wait.group 3
// KERNELS: nvvm.convert.f8x2.to.f16x2
// KERNELS: nvvm.barrier id = %c1_i32{{.*}} number_of_threads = %c128_i32
// KERNELS: nvvm.fence.proxy
// KERNELS-NEXT: nvgpu.mbarrier.arrive
// KERNELS: nvvm.setmaxregister increase 208
func.func @prefill_e4m3_rope(%q: memref<?x32x128xf16>, %cache: memref<?x2x16x8x128xf8E4M3FN>, %qo: memref<?xi32>,
                             %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>,
                             %o: memref<?x32x128xf16>, %lse: memref<?x32xf32>) {
  cascade.paged_attention q(%q : memref<?x32x128xf16>) kv(%cache : memref<?x2x16x8x128xf8E4M3FN>)
      qo_indptr(%qo : memref<?xi32>) kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>)
      kv_last_page_len(%last : memref<?xi32>) outs(%o, %lse : memref<?x32x128xf16>, memref<?x32xf32>)
      {page_size = 16 : i64, causal, pos_encoding = #cascade.pos_encoding<rope_llama>}
  return
}

// Decode stays on its families.
// CHECK-LABEL: func.func @decode_e4m3_g4
// CHECK: #cascade.kernel_config<mma_sync,
func.func @decode_e4m3_g4(%q: memref<?x32x128xf16>, %cache: memref<?x2x16x8x128xf8E4M3FN>,
                          %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>,
                          %o: memref<?x32x128xf16>, %lse: memref<?x32xf32>) {
  cascade.paged_attention q(%q : memref<?x32x128xf16>) kv(%cache : memref<?x2x16x8x128xf8E4M3FN>)
      kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>)
      kv_last_page_len(%last : memref<?xi32>) outs(%o, %lse : memref<?x32x128xf16>, memref<?x32xf32>)
      {page_size = 16 : i64}
  return
}
