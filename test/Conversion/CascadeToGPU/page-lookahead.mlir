// RUN: cascade-opt %s --cascade-select-kernel-config="chip=sm_90a wgmma-page-lookahead" | FileCheck %s --check-prefix=CONFIG
// RUN: cascade-opt %s --cascade-select-kernel-config="chip=sm_90a wgmma-page-lookahead wgmma-sweep-tiles=false" | FileCheck %s --check-prefix=FORMER
// RUN: cascade-opt %s --cascade-select-kernel-config="chip=sm_90a wgmma-page-lookahead" --convert-cascade-to-gpu | FileCheck %s --check-prefix=KERNEL
// RUN: cascade-opt %s --cascade-select-kernel-config="chip=sm_90a" --convert-cascade-to-gpu | FileCheck %s --check-prefix=DEFAULT

// page_lookahead (off by default: right against float64 on the H100, but
// no faster there): selection sets it where the producer's copies publish
// their tile (a paged 16-bit cache, no RoPE, one K/V ring), so not on RoPE
// (nor where two stages take split K/V rings: head_dim 256 without
// wgmma-sweep-tiles, FORMER). In the kernel the producer
// loads its lane's page id of the tile's page list before it waits for the
// tile's free stage, then takes each pass's page with an index shuffle and
// issues the pass's K and V copies; without it, each pass loads its page
// id after the wait.

// CONFIG-LABEL: func.func @prefill_d128
// CONFIG: #cascade.kernel_config<wgmma, threads = [128, 4, 1], q_tile = 192, kv_tile = 64, stages = 4, page_lookahead = 1>
// CONFIG-LABEL: func.func @prefill_d128_rope
// CONFIG-NOT: page_lookahead
// CONFIG-LABEL: func.func @prefill_d256
// CONFIG: kv_tile = 48, stages = 3, page_lookahead = 1>
// FORMER-LABEL: func.func @prefill_d256
// FORMER: kv_barriers = split>

// KERNEL-LABEL: gpu.func @cascade_prefill_causal_wgmma_f16_f16_d128_g4_h8_p16_nhd_pool_w4x1_q192_kv64_s4_pla(
// KERNEL: nvvm.setmaxregister decrease 40
// KERNEL: scf.for
// KERNEL: %[[PAGE:.*]] = memref.load %{{.*}}[%{{.*}}] : memref<?xi32
// KERNEL: nvgpu.mbarrier.try_wait.parity
// KERNEL: gpu.shuffle  idx %[[PAGE]],
// KERNEL: nvgpu.device_async_copy
// KERNEL: nvgpu.device_async_copy
// KERNEL: gpu.shuffle  idx %[[PAGE]],
// KERNEL: nvvm.cp.async.commit.group
// KERNEL: nvvm.cp.async.mbarrier.arrive
// KERNEL: nvvm.setmaxregister increase

// DEFAULT-LABEL: gpu.func @cascade_prefill_causal_wgmma_f16_f16_d128_g4_h8_p16_nhd_pool_w4x1_q192_kv64_s4(
// DEFAULT: nvvm.setmaxregister decrease 40
// DEFAULT-NOT: gpu.shuffle
// DEFAULT: nvvm.setmaxregister increase
func.func @prefill_d128(%q: memref<?x32x128xf16>, %cache: memref<?x2x16x8x128xf16>, %qo: memref<?xi32>,
                        %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>,
                        %o: memref<?x32x128xf16>, %lse: memref<?x32xf32>) {
  cascade.paged_attention q(%q : memref<?x32x128xf16>) kv(%cache : memref<?x2x16x8x128xf16>)
      qo_indptr(%qo : memref<?xi32>) kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>)
      kv_last_page_len(%last : memref<?xi32>) outs(%o, %lse : memref<?x32x128xf16>, memref<?x32xf32>)
      {page_size = 16 : i64, causal}
  return
}

func.func @prefill_d128_rope(%q: memref<?x32x128xf16>, %cache: memref<?x2x16x8x128xf16>, %qo: memref<?xi32>,
                             %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>,
                             %o: memref<?x32x128xf16>, %lse: memref<?x32xf32>) {
  cascade.paged_attention q(%q : memref<?x32x128xf16>) kv(%cache : memref<?x2x16x8x128xf16>)
      qo_indptr(%qo : memref<?xi32>) kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>)
      kv_last_page_len(%last : memref<?xi32>) outs(%o, %lse : memref<?x32x128xf16>, memref<?x32xf32>)
      {page_size = 16 : i64, causal, pos_encoding = #cascade.pos_encoding<rope_llama>}
  return
}

func.func @prefill_d256(%q: memref<?x16x256xf16>, %cache: memref<?x2x16x4x256xf16>, %qo: memref<?xi32>,
                        %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>,
                        %o: memref<?x16x256xf16>, %lse: memref<?x16xf32>) {
  cascade.paged_attention q(%q : memref<?x16x256xf16>) kv(%cache : memref<?x2x16x4x256xf16>)
      qo_indptr(%qo : memref<?xi32>) kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>)
      kv_last_page_len(%last : memref<?xi32>) outs(%o, %lse : memref<?x16x256xf16>, memref<?x16xf32>)
      {page_size = 16 : i64}
  return
}
