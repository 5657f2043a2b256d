// RUN: cascade-opt %s --cascade-select-kernel-config=chip=sm_90a | FileCheck %s
// RUN: cascade-opt %s --cascade-select-kernel-config="chip=sm_90a wgmma=false" | FileCheck %s --check-prefix=NOWGMMA
// RUN: cascade-opt %s --cascade-select-kernel-config="chip=sm_90a wgmma-kv-tile=64 wgmma-stages=3 wgmma-consumers=1" | FileCheck %s --check-prefix=TUNED
// RUN: cascade-opt %s --cascade-select-kernel-config="chip=sm_90a wgmma-consumers=3" | FileCheck %s --check-prefix=THREE
// RUN: cascade-opt %s --cascade-select-kernel-config="chip=sm_90a wgmma-sweep-tiles=false" | FileCheck %s --check-prefix=FORMER
// RUN: cascade-opt %s --cascade-select-kernel-config="chip=sm_90a wgmma-kv-tile=64" | FileCheck %s --check-prefix=KV64
// RUN: cascade-opt %s --cascade-select-kernel-config=chip=sm_90 | FileCheck %s --check-prefix=SM90
// RUN: cascade-opt %s --cascade-select-kernel-config=chip=sm_90a --convert-cascade-to-gpu | FileCheck %s --check-prefix=KERNELS

// On sm_90a (Hopper with its architecture-specific instructions), prefill,
// append and shared-prefix levels of one dtype at head_dim 64, 128 and 256
// run on the wgmma family: a producer warpgroup and consumer warpgroups of
// 64 rows. A plain prefill up to head_dim 128 gets three consumers
// (threads [128, 4, 1], q_tile 192) and 64-token KV tiles (a 128-token S
// tile spills in their 152 registers), 4 stages; planned or accumulating
// levels, per-score options, masks and head_dim 256 keep two (q_tile 128),
// with KV tiles of 128 tokens up to head_dim 128 and as many stages (up to
// 4) as fit the chip's shared memory: 3 at head_dim 128. wgmma-sweep-tiles
// (the default) gives three consumers 96-token tiles at head_dim 64 and
// shrinks head_dim 256's tiles by 16 tokens until three stages of a joint
// ring fit (48 tokens); without it (FORMER) head_dim 64 keeps 64-token
// tiles and 256 two stages of 64 in split K/V rings, as does a 64-token
// tile fixed by wgmma-kv-tile. Everything
// else keeps its family: head_dim 96 (not whole 128-byte
// panels), decode, and everything on plain sm_90, whose PTX may not use
// wgmma.

// CHECK-LABEL: func.func @prefill_d128
// CHECK: #cascade.kernel_config<wgmma, threads = [128, 4, 1], q_tile = 192, kv_tile = 64, stages = 4>
// NOWGMMA-LABEL: func.func @prefill_d128
// NOWGMMA: #cascade.kernel_config<mma_sync, threads = [32, 4, 1], q_tile = 128, kv_tile = 32, stages = 3>
// TUNED-LABEL: func.func @prefill_d128
// TUNED: #cascade.kernel_config<wgmma, threads = [128, 2, 1], q_tile = 64, kv_tile = 64, stages = 3>
// Three consumers get 152 registers a thread: 64-token tiles (a 128-token S
// tile spills), as many stages as fit.
// THREE-LABEL: func.func @prefill_d128
// THREE: #cascade.kernel_config<wgmma, threads = [128, 4, 1], q_tile = 192, kv_tile = 64, stages = 4>
// SM90-LABEL: func.func @prefill_d128
// SM90: #cascade.kernel_config<mma_sync,
// KERNELS: gpu.func @cascade_prefill_causal_wgmma_f16_f16_d128_g4_h8_p16_nhd_pool_w4x1_q192_kv64_s4(
// KERNELS-SAME: known_block_size = array<i32: 128, 4, 1>
// KERNELS-SAME: nvvm.minctasm = 1 : i32
// KERNELS: nvgpu.mbarrier.create
// KERNELS: nvvm.setmaxregister decrease 40
// The producer's copies publish their tile on `full` themselves; no
// cp.async wait inside its loop, one at its end.
// KERNELS: nvgpu.mbarrier.try_wait.parity
// KERNELS: nvgpu.device_async_copy
// KERNELS-NOT: nvvm.cp.async.wait.group
// KERNELS: %[[FULL:.*]] = nvgpu.mbarrier.get
// KERNELS-NEXT: %[[PTR:.*]] = llvm.inttoptr %[[FULL]] : i32 to !llvm.ptr<3>
// KERNELS-NEXT: nvvm.cp.async.mbarrier.arrive %[[PTR]] {noinc = true} : !llvm.ptr<3>
// KERNELS: nvvm.cp.async.wait.group 0
// KERNELS: nvvm.setmaxregister increase 152
// The consumers fence the async proxy after each wait on `full`.
// KERNELS: nvgpu.mbarrier.try_wait.parity
// KERNELS-NEXT: nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}
// KERNELS: nvvm.wgmma.mma_async
// KERNELS: llvm.inline_asm has_side_effects {{.*}}wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16
func.func @prefill_d128(%q: memref<?x32x128xf16>, %cache: memref<?x2x16x8x128xf16>, %qo: memref<?xi32>,
                        %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>,
                        %o: memref<?x32x128xf16>, %lse: memref<?x32xf32>) {
  cascade.paged_attention q(%q : memref<?x32x128xf16>) kv(%cache : memref<?x2x16x8x128xf16>)
      qo_indptr(%qo : memref<?xi32>) kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>)
      kv_last_page_len(%last : memref<?xi32>) outs(%o, %lse : memref<?x32x128xf16>, memref<?x32xf32>)
      {page_size = 16 : i64, causal}
  return
}

// A level that accumulates into a state, or runs planned work items (a
// cascade's shared-prefix level: few rows a KV head, which 192-row tiles
// leave partly empty), keeps two consumers and 128-token tiles.
// CHECK-LABEL: func.func @prefill_d128_acc
// CHECK: #cascade.kernel_config<wgmma, threads = [128, 3, 1], q_tile = 128, kv_tile = 128, stages = 3>
func.func @prefill_d128_acc(%q: memref<?x32x128xf16>, %cache: memref<?x2x16x8x128xf16>, %qo: memref<?xi32>,
                            %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>,
                            %o: memref<?x32x128xf16>, %lse: memref<?x32xf32>) {
  cascade.paged_attention q(%q : memref<?x32x128xf16>) kv(%cache : memref<?x2x16x8x128xf16>)
      qo_indptr(%qo : memref<?xi32>) kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>)
      kv_last_page_len(%last : memref<?xi32>) outs(%o, %lse : memref<?x32x128xf16>, memref<?x32xf32>)
      {page_size = 16 : i64, accumulate}
  return
}

// CHECK-LABEL: func.func @prefill_d128_planned
// CHECK: #cascade.kernel_config<wgmma, threads = [128, 3, 1], q_tile = 128, kv_tile = 128, stages = 3>
func.func @prefill_d128_planned(%q: memref<?x32x128xf16>, %kv: memref<?x2x16x8x128xf16>, %qo: memref<?xi32>, %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>, %ri: memref<?xi32>, %kt: memref<?xi32>, %oi: memref<?xi32>, %mask: memref<?xi8>, %chunk: memref<1xi32>, %tv: memref<?x32x128xf32>, %ts: memref<?x32xf32>, %qt: memref<?xi32>, %mi: memref<?xi32>, %o: memref<?x32x128xf16>, %lse: memref<?x32xf32>) {
  cascade.paged_attention q(%q : memref<?x32x128xf16>) kv(%kv : memref<?x2x16x8x128xf16>)
      qo_indptr(%qo : memref<?xi32>)
      kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>) kv_last_page_len(%last : memref<?xi32>)
      plan(%ri, %kt, %oi, %mask, %chunk, %tv, %ts, %qt, %mi : memref<?xi32>, memref<?xi32>, memref<?xi32>, memref<?xi8>, memref<1xi32>, memref<?x32x128xf32>, memref<?x32xf32>, memref<?xi32>, memref<?xi32>)
      outs(%o, %lse : memref<?x32x128xf16>, memref<?x32xf32>) {page_size = 16 : i64}
  return
}

// CHECK-LABEL: func.func @prefill_d256
// Three stages of a joint ring with 48-token tiles (208 KiB) at head_dim
// 256; without wgmma-sweep-tiles only two stages of 64-token tiles fit:
// split K/V rings (a joint ring needs three).
// CHECK: #cascade.kernel_config<wgmma, threads = [128, 3, 1], q_tile = 128, kv_tile = 48, stages = 3>
// FORMER-LABEL: func.func @prefill_d256
// FORMER: #cascade.kernel_config<wgmma, threads = [128, 3, 1], q_tile = 128, kv_tile = 64, stages = 2, kv_barriers = split>
// KV64-LABEL: func.func @prefill_d256
// KV64: #cascade.kernel_config<wgmma, threads = [128, 3, 1], q_tile = 128, kv_tile = 64, stages = 2, kv_barriers = split>
// Three consumers cannot hold head_dim 256's output tile (wgmmaConsumersHoldHeadDim):
// wgmma-consumers=3 keeps two here.
// THREE-LABEL: func.func @prefill_d256
// THREE: #cascade.kernel_config<wgmma, threads = [128, 3, 1], q_tile = 128, kv_tile = 48, stages = 3>
func.func @prefill_d256(%q: memref<?x16x256xbf16>, %cache: memref<?x2x16x4x256xbf16>, %qo: memref<?xi32>,
                        %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>,
                        %o: memref<?x16x256xbf16>, %lse: memref<?x16xf32>) {
  cascade.paged_attention q(%q : memref<?x16x256xbf16>) kv(%cache : memref<?x2x16x4x256xbf16>)
      qo_indptr(%qo : memref<?xi32>) kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>)
      kv_last_page_len(%last : memref<?xi32>) outs(%o, %lse : memref<?x16x256xbf16>, memref<?x16xf32>)
      {page_size = 16 : i64}
  return
}

// CHECK-LABEL: func.func @prefill_d96
// CHECK: #cascade.kernel_config<mma_sync,
func.func @prefill_d96(%q: memref<?x8x96xf16>, %cache: memref<?x2x16x8x96xf16>, %qo: memref<?xi32>,
                       %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>,
                       %o: memref<?x8x96xf16>, %lse: memref<?x8xf32>) {
  cascade.paged_attention q(%q : memref<?x8x96xf16>) kv(%cache : memref<?x2x16x8x96xf16>)
      qo_indptr(%qo : memref<?xi32>) kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>)
      kv_last_page_len(%last : memref<?xi32>) outs(%o, %lse : memref<?x8x96xf16>, memref<?x8xf32>)
      {page_size = 16 : i64}
  return
}

// CHECK-LABEL: func.func @decode_g8
// CHECK: #cascade.kernel_config<rows,
func.func @decode_g8(%q: memref<?x32x128xf16>, %cache: memref<?x2x16x4x128xf16>,
                     %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>,
                     %o: memref<?x32x128xf16>, %lse: memref<?x32xf32>) {
  cascade.paged_attention q(%q : memref<?x32x128xf16>) kv(%cache : memref<?x2x16x4x128xf16>)
      kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>)
      kv_last_page_len(%last : memref<?xi32>) outs(%o, %lse : memref<?x32x128xf16>, memref<?x32xf32>)
      {page_size = 16 : i64}
  return
}

// Three consumers at head_dim 64: 96-token S tiles (48 registers a thread
// beside O's 32), 4 stages; without wgmma-sweep-tiles 64-token tiles.
// CHECK-LABEL: func.func @prefill_d64_causal
// CHECK: #cascade.kernel_config<wgmma, threads = [128, 4, 1], q_tile = 192, kv_tile = 96, stages = 4>
// FORMER-LABEL: func.func @prefill_d64_causal
// FORMER: #cascade.kernel_config<wgmma, threads = [128, 4, 1], q_tile = 192, kv_tile = 64, stages = 4>
func.func @prefill_d64_causal(%q: memref<?x32x64xf16>, %cache: memref<?x2x16x8x64xf16>, %qo: memref<?xi32>,
                              %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>,
                              %o: memref<?x32x64xf16>, %lse: memref<?x32xf32>) {
  cascade.paged_attention q(%q : memref<?x32x64xf16>) kv(%cache : memref<?x2x16x8x64xf16>)
      qo_indptr(%qo : memref<?xi32>) kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>)
      kv_last_page_len(%last : memref<?xi32>) outs(%o, %lse : memref<?x32x64xf16>, memref<?x32xf32>)
      {page_size = 16 : i64, causal}
  return
}
