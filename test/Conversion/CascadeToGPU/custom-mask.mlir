// RUN: cascade-opt %s --convert-cascade-to-gpu | FileCheck %s
// RUN: rm -rf %t && cascade-opt %s --cascade-to-ptx="chip=sm_90a bundle-dir=%t" -o /dev/null
// RUN: FileCheck %s --check-prefix=PTX < %t/kernels.ptx
// RUN: FileCheck %s --check-prefix=MANIFEST < %t/manifest.json
// RUN: rm -rf %t90 && cascade-opt %s --cascade-to-ptx="chip=sm_90 bundle-dir=%t90" -o /dev/null
// RUN: FileCheck %s --check-prefix=PTX90 < %t90/kernels.ptx

// A custom mask (FlashInfer's packed bits, custom_mask(mask, mask_indptr))
// on the tensor-core prefill kernels: the kernel takes the bits (u8) and the
// per-request byte offsets (i32) after kv_last_page_len, every tile is
// masked, and per accumulator row the warp's keys are read as aligned
// 32-bit words (one per 32 keys and one more, clamped to the word of the
// request's last bit) and funnel-shifted into place. mma_sync on sm_90,
// wgmma on sm_90a, both on the tiles they take without a mask; the mask
// replaces causal, so the kernel is not causal.

// CHECK-LABEL: func.func @masked
// CHECK: gpu.launch_func @cascade_kernels::@cascade_prefill_mma_f16_f16_d128_g4_h8_p16_nhd_pool_win100_cmask_w4x1_q128_kv32_s3
// CHECK-SAME: %{{.*}} : memref<?xi32, strided<[1], offset: ?>>, %[[M:.*]] : memref<?xi8, strided<[1], offset: ?>>, %[[MI:.*]] : memref<?xi32, strided<[1], offset: ?>>, %{{.*}} : memref<?xf16
func.func @masked(%q: memref<?x32x128xf16>, %cache: memref<?x2x16x8x128xf16>,
                  %qo: memref<?xi32>, %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>,
                  %m: memref<?xi8>, %mi: memref<?xi32>,
                  %o: memref<?x32x128xf16>, %lse: memref<?x32xf32>) {
  cascade.paged_attention q(%q : memref<?x32x128xf16>) kv(%cache : memref<?x2x16x8x128xf16>)
      qo_indptr(%qo : memref<?xi32>) kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>)
      kv_last_page_len(%last : memref<?xi32>) custom_mask(%m, %mi : memref<?xi8>, memref<?xi32>)
      outs(%o, %lse : memref<?x32x128xf16>, memref<?x32xf32>) {page_size = 16 : i64, window_left = 100 : i64}
  return
}

// mma.sync (sm_90): before each tile's scores a warp votes on whether the
// mask (with the keys from t1 on) hides all of its keys of the tile from all
// of its rows (no bit of 0x03030303 set in any row's chunks) and then skips
// the tile: no scores, softmax or P V (the first mma.sync follows the vote).
// The wgmma kernels skip per warpgroup (below).
// PTX90-LABEL: .entry cascade_prefill_mma_f16_f16_d128_g4_h8_p16_nhd_pool_win100_cmask_w4x1_q128_kv32_s3(
// PTX90: and.b32 [[SEEN:%r[0-9]+]], %r{{[0-9]+}}, 50529027;
// PTX90-NEXT: setp.ne.b32 [[SEES:%p[0-9]+]], [[SEEN]], 0;
// PTX90-NEXT: vote.sync.any.pred [[ANY:%p[0-9]+]], [[SEES]], -1;
// PTX90-NOT: mma.sync
// PTX90: not.pred %p{{[0-9]+}}, [[ANY]];
// PTX90: mma.sync.aligned.m16n8k16
// PTX90-LABEL: .entry cascade_prefill_mma_f16_f16_d128_g4_h8_p16_nhd_pool_cmask_w4x1_q128_kv32_s3(
// PTX90: and.b32 {{%r[0-9]+}}, %r{{[0-9]+}}, 50529027;
// PTX90-NEXT: setp.ne.b32
// PTX90-NEXT: vote.sync.any.pred
// PTX90-LABEL: .entry cascade_prefill_mma_f16_f16_d128_g4_h8_p16_nhd_pool_win100_w4x1_q128_kv32_s3(
// PTX90-NOT: 50529027
// PTX90: ret;
// CHECK-LABEL: func.func @masked_no_window
// CHECK: gpu.launch_func @cascade_kernels::@cascade_prefill_mma_f16_f16_d128_g4_h8_p16_nhd_pool_cmask_w4x1_q128_kv32_s3
func.func @masked_no_window(%q: memref<?x32x128xf16>, %cache: memref<?x2x16x8x128xf16>,
                  %qo: memref<?xi32>, %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>,
                  %m: memref<?xi8>, %mi: memref<?xi32>,
                  %o: memref<?x32x128xf16>, %lse: memref<?x32xf32>) {
  cascade.paged_attention q(%q : memref<?x32x128xf16>) kv(%cache : memref<?x2x16x8x128xf16>)
      qo_indptr(%qo : memref<?xi32>) kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>)
      kv_last_page_len(%last : memref<?xi32>) custom_mask(%m, %mi : memref<?xi8>, memref<?xi32>)
      outs(%o, %lse : memref<?x32x128xf16>, memref<?x32xf32>) {page_size = 16 : i64}
  return
}

// The same op without its mask keeps the unmasked kernel.
// CHECK-LABEL: func.func @unmasked
// CHECK: gpu.launch_func @cascade_kernels::@cascade_prefill_mma_f16_f16_d128_g4_h8_p16_nhd_pool_win100_w4x1_q128_kv32_s3
func.func @unmasked(%q: memref<?x32x128xf16>, %cache: memref<?x2x16x8x128xf16>,
                    %qo: memref<?xi32>, %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>,
                    %o: memref<?x32x128xf16>, %lse: memref<?x32xf32>) {
  cascade.paged_attention q(%q : memref<?x32x128xf16>) kv(%cache : memref<?x2x16x8x128xf16>)
      qo_indptr(%qo : memref<?xi32>) kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>)
      kv_last_page_len(%last : memref<?xi32>)
      outs(%o, %lse : memref<?x32x128xf16>, memref<?x32xf32>) {page_size = 16 : i64, window_left = 100 : i64}
  return
}

// The kernel: mask_indptr[request] * 8 once, then per row two word loads
// (32 keys a warp: one word and one more) clamped to the request's last
// word.
// CHECK: gpu.func @cascade_prefill_mma_f16_f16_d128_g4_h8_p16_nhd_pool_win100_cmask_w4x1_q128_kv32_s3(
// CHECK-SAME: %[[KL:[a-z0-9]+]]: memref<?xi32, strided<[1], offset: ?>>, %[[BITS:[a-z0-9]+]]: memref<?xi8, strided<[1], offset: ?>>, %[[OFF:[a-z0-9]+]]: memref<?xi32, strided<[1], offset: ?>>,
// CHECK-SAME: name = "custom_mask"
// CHECK-SAME: name = "mask_indptr"
// CHECK-SAME: custom_mask = true
// CHECK: memref.load %[[OFF]]
// CHECK: vector.load %[[BITS]][%{{.*}}] {alignment = 4 : i64} : memref<?xi8, strided<[1], offset: ?>>, vector<4xi8>
// CHECK: vector.bitcast %{{.*}} : vector<4xi8> to vector<1xi32>
// CHECK: vector.load %[[BITS]]
// CHECK-NOT: vector.load %[[BITS]]
// CHECK: arith.shli %{{.*}}, %{{.*}} : i64
// CHECK: arith.shrui %{{.*}}, %{{.*}} : i64
// CHECK: arith.trunci %{{.*}} : i64 to i32

// sm_90a: the wgmma family (three consumer warpgroups, as a plain prefill
// takes; 64-key tiles). The producer warpgroup stages the mask beside each
// K/V stage, after the dynamic shared memory of the tiles (Q 192 x 128 and
// four stages of 64-key K and V, f16: 180224 bytes): per stage, the 64 bits
// of each query the block's 192 packed rows span (49 queries at G = 4, two
// words each), then a verdict word per consumer warpgroup.
// The consumers' code comes first: after its wait on the stage's
// `full` barrier, a consumer reads its warpgroup's verdict and its two
// rows' words, and votes on bit 0 (some key of the tile shown to one of its
// 64 rows), so that ptxas sees a uniform branch; a tile hidden from all of
// them issues no S = Q K^T (the warpgroup's turn, then its wgmma, come
// after the branch).
// PTX-LABEL: .entry cascade_prefill_wgmma_f16_f16_d128_g4_h8_p16_nhd_pool_win100_cmask_w4x1_q192_kv64_s4(
// PTX: mbarrier.try_wait.parity.shared.b64
// PTX: wgmma.mma_async.sync.aligned.m64n64k16
// PTX: mbarrier.try_wait.parity.shared.b64
// PTX: fence.proxy.async.shared::cta;
// PTX: ld.shared.b32 [[VERDICT:%r[0-9]+]], [%rd{{[0-9]+}}+180612];
// PTX-NEXT: add.s64
// PTX-NEXT: ld.shared.v2.b32 {%r{{[0-9]+}}, %r{{[0-9]+}}}, [%rd{{[0-9]+}}+180224];
// PTX-NEXT: add.s64
// PTX-NEXT: ld.shared.v2.b32 {%r{{[0-9]+}}, %r{{[0-9]+}}}, [%rd{{[0-9]+}}+180224];
// PTX-NEXT: and.b32 [[SHOWN:%r[0-9]+]], [[VERDICT]], 1;
// PTX-NEXT: setp.ne.b32 [[ANY:%p[0-9]+]], [[SHOWN]], 0;
// PTX-NEXT: vote.sync.any.pred [[UNIFORM:%p[0-9]+]], [[ANY]], -1;
// PTX-NEXT: not.pred [[HIDDEN:%p[0-9]+]], [[UNIFORM]];
// PTX-NOT: wgmma.mma_async
// PTX: @[[HIDDEN]] bra
// PTX-NEXT: bar.sync
// PTX: wgmma.mma_async.sync.aligned.m64n64k16
// The producer (48 registers, 8 of them for the mask): per tile, lane l of
// warp w < 3 loads the three words of query q0 + l (clamped to the
// request's last word), funnel-shifts them to the tile's key 0, clears the
// keys from t1 on and stores the two words; the warp votes whether a key is
// shown (vote.any) and whether every key is (vote.all), stores the verdict
// word (bit 1: all) and arrives on `full` a second time, besides its
// copies' arrival.
// PTX: setmaxnreg.dec.sync.aligned.u32 48;
// PTX: vote.sync.any.pred [[PANY:%p[0-9]+]], %p{{[0-9]+}}, -1;
// PTX-NEXT: vote.sync.all.pred [[PALL:%p[0-9]+]], %p{{[0-9]+}}, -1;
// PTX-NEXT: selp.b32 [[ALLBIT:%r[0-9]+]], 2, 0, [[PALL]];
// PTX-NEXT: selp.b32 [[ANYBIT:%r[0-9]+]], 1, 0, [[PANY]];
// PTX-NEXT: or.b32 [[WORD:%r[0-9]+]], [[ALLBIT]], [[ANYBIT]];
// PTX-NEXT: add.s64
// PTX-NEXT: st.shared.b32 [%rd{{[0-9]+}}+180616], [[WORD]];
// PTX: mbarrier.arrive.shared.b64
// PTX: cp.async.mbarrier.arrive.noinc.shared.b64
// PTX: ld.global.b32
// PTX: ld.global.b32
// PTX: ld.global.b32
// PTX: shl.b64 [[HI:%rd[0-9]+]], %rd{{[0-9]+}}, 32;
// PTX-NEXT: or.b64 %rd{{[0-9]+}}, [[HI]], %rd{{[0-9]+}};
// PTX: min.s32 %r{{[0-9]+}}, %r{{[0-9]+}}, 32;
// PTX: st.shared.v2.b32 [%rd{{[0-9]+}}+180224]
// PTX-LABEL: .entry cascade_prefill_wgmma_f16_f16_d128_g4_h8_p16_nhd_pool_win100_w4x1_q192_kv64_s4(
// PTX-NOT: ld.global.b32 %rd
// PTX-NOT: shr.u64 %rd{{[0-9]+}}, %rd{{[0-9]+}}, %r{{[0-9]+}};
// PTX: ret;
// The masked kernel's shared memory: the tiles' 180224 bytes and four
// stages of side data, (49 queries x 2 words + 4 verdicts) x 4 bytes each.
// MANIFEST: "dynamic_shared_bytes": 181856,
// MANIFEST-NEXT: "grid"
// MANIFEST: "name": "cascade_prefill_wgmma_f16_f16_d128_g4_h8_p16_nhd_pool_win100_cmask_w4x1_q192_kv64_s4"
// MANIFEST: "name": "custom_mask"
// MANIFEST: "custom_mask": true
