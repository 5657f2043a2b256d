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
// takes; 64-key tiles: 3 words a row, the word of the request's last bit
// computed once), each tile's words loaded (for both rows a thread holds)
// one tile ahead of its scores. The word indices are 32-bit (mask_indptr counts bytes in
// int32), the words 32-bit global loads, joined and funnel-shifted by a
// register; the bits from the block's key end t1 on are cleared in the
// chunk ((1 << n) - 1, n clamped to [0, 32]), so a masked score is one bit
// test and one select. A warp whose lanes' keys are all shown (bits
// 0x03030303 of each chunk: keys n * 8 + {0, 1}) votes for the unmasked
// path.
// PTX-LABEL: .entry cascade_prefill_wgmma_f16_f16_d128_g4_h8_p16_nhd_pool_win100_cmask_w4x1_q192_kv64_s4(
// PTX: shr.u64 [[LAST:%rd[0-9]+]], %rd{{[0-9]+}}, 5;
// PTX: shr.u64 [[W0:%rd[0-9]+]], %rd{{[0-9]+}}, 5;
// PTX-NEXT: cvt.u32.u64 [[W0I:%r[0-9]+]], [[W0]];
// PTX-NEXT: cvt.u32.u64 [[LASTI:%r[0-9]+]], [[LAST]];
// PTX-NEXT: min.u32 [[C0:%r[0-9]+]], [[W0I]], [[LASTI]];
// PTX-NEXT: shl.b32 [[B0:%r[0-9]+]], [[C0]], 2;
// PTX-NEXT: cvt.u64.u32 [[O0:%rd[0-9]+]], [[B0]];
// PTX-NEXT: add.s64 [[A0:%rd[0-9]+]], [[BASE:%rd[0-9]+]], [[O0]];
// PTX-NEXT: ld.global.b32 [[X0:%rd[0-9]+]], {{\[}}[[A0]]{{\]}};
// PTX-NEXT: add.s32 [[W1:%r[0-9]+]], [[W0I]], 1;
// PTX-NEXT: min.u32 [[C1:%r[0-9]+]], [[W1]], [[LASTI]];
// PTX-NEXT: shl.b32 [[B1:%r[0-9]+]], [[C1]], 2;
// PTX-NEXT: cvt.u64.u32 [[O1:%rd[0-9]+]], [[B1]];
// PTX-NEXT: add.s64 [[A1:%rd[0-9]+]], [[BASE]], [[O1]];
// PTX-NEXT: ld.global.b32 [[X1:%rd[0-9]+]], {{\[}}[[A1]]{{\]}};
// PTX: shl.b64 [[HI:%rd[0-9]+]], [[X1]], 32;
// PTX-NEXT: or.b64 [[PAIR:%rd[0-9]+]], [[HI]], [[X0]];
// PTX-NEXT: cvt.u32.u64 [[SH:%r[0-9]+]], %rd{{[0-9]+}};
// PTX-NEXT: shr.u64 %rd{{[0-9]+}}, [[PAIR]], [[SH]];
// PTX: max.s32 [[N:%r[0-9]+]], %r{{[0-9]+}}, 0;
// PTX-NEXT: min.s32 [[N32:%r[0-9]+]], [[N]], 32;
// PTX-NEXT: mov.b64 [[ONES:%rd[0-9]+]], -1;
// PTX-NEXT: shl.b64 %rd{{[0-9]+}}, [[ONES]], [[N32]];
// Tile 0's scores (computed without a verdict); the warp votes for the
// unmasked path.
// PTX: wgmma.mma_async.sync.aligned.m64n64k16
// PTX: and.b32 [[USED:%r[0-9]+]], %r{{[0-9]+}}, 50529027;
// PTX-NEXT: setp.ne.b32 [[HIDES:%p[0-9]+]], [[USED]], 50529027;
// PTX-NEXT: vote.sync.any.pred %p{{[0-9]+}}, [[HIDES]], -1;
// Before each later tile's wgmma, its warpgroup's verdict: whether any used
// bit of a thread's rows is set, OR-reduced over the warpgroup's 128
// threads on a named barrier of its own (6 + the consumer's index) and
// voted on, so that ptxas sees a warp-uniform branch; a tile hidden from
// all 64 rows issues no S = Q K^T.
// PTX: add.s32 [[BAR:%r[0-9]+]], %r{{[0-9]+}}, 6;
// PTX: and.b32 [[SEEN:%r[0-9]+]], %r{{[0-9]+}}, 50529027;
// PTX-NEXT: setp.ne.b32 [[SEES:%p[0-9]+]], [[SEEN]], 0;
// PTX-NEXT: selp.b32 [[IN:%r[0-9]+]], 1, 0, [[SEES]];
// PTX-NEXT: mov.b32 [[THREADS:%r[0-9]+]], 128;
// PTX: setp.ne.u32 p, [[IN]], 0;
// PTX-NEXT: bar.red.or.pred q, [[BAR]], [[THREADS]], p;
// PTX-NEXT: selp.u32 [[ANYI:%r[0-9]+]], 1, 0, q;
// PTX: setp.ne.b32 [[ANY:%p[0-9]+]], [[ANYI]], 0;
// PTX-NEXT: vote.sync.any.pred %p{{[0-9]+}}, [[ANY]], -1;
// PTX: wgmma.mma_async.sync.aligned.m64n64k16
// PTX-LABEL: .entry cascade_prefill_wgmma_f16_f16_d128_g4_h8_p16_nhd_pool_win100_w4x1_q192_kv64_s4(
// PTX-NOT: ld.global.b32 %rd
// PTX-NOT: shr.u64 %rd{{[0-9]+}}, %rd{{[0-9]+}}, %r{{[0-9]+}};
// PTX: ret;
// MANIFEST: "name": "custom_mask"
// MANIFEST: "custom_mask": true
