// REQUIRES: ptxas
// fp8 decode on mma_sync whose warps hold Q in registers reads the B
// operand of S = Q K^T straight from K's fp8 staging ring (`_kdirect`,
// MmaSyncMainloop.cpp): the gather stores K's 16-byte chunk p of row r at
// chunk p ^ s(r) (s(r) = r % 8 at head_dim 128, (r / 2) % 4 at 64), each
// lane loads 4 fp8 bytes (dims 16 kb + 4c .. + 3 of key g) per k step and
// converts them with two cvt into its B fragment, the Q fragments are
// built once from 8-byte loads with the same head_dim permutation (a0/a1
// dims 4c, 4c+1 of rows g / g+8, a2/a3 dims 4c+2, 4c+3), and no ldmatrix
// reads K. Only V is converted (into the one V tile); there is no K tile.
// k_scale folds into the softmax's scale. RoPE decode keeps the converted
// K tile (RoPE rotates it) and its name. ptxas: no spills.
// RUN: cascade-opt %s --convert-cascade-to-gpu --canonicalize --cse | FileCheck %s
// RUN: cascade-opt %s --convert-cascade-to-gpu --canonicalize --cse | FileCheck %s --check-prefix=LDK
// RUN: rm -rf %t && mkdir -p %t
// RUN: cascade-opt %s --cascade-to-ptx="bundle-dir=%t/b" -o /dev/null
// RUN: FileCheck %s --check-prefix=PTX < %t/b/kernels.ptx
// RUN: FileCheck %s --check-prefix=PTXLDK < %t/b/kernels.ptx
// RUN: FileCheck %s --check-prefix=MANIFEST < %t/b/manifest.json
// RUN: %ptxas -arch=sm_90 -v %t/b/kernels.ptx -o %t/k.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS

// CHECK-LABEL: gpu.func @cascade_decode_mma_f16_f8e4m3_d128_g4_h8_p16_nhd_pool_w1x2_q16_kv32_s3_kdirect(
// CHECK-SAME: %[[KSCALE:arg8]]: f32
// The Q tile and the V tile (16 + 32 rows of 128 f16), then the staging
// rings of 3 stages of 32 x 128 fp8: K at byte 12288, V at 24576.
// CHECK-DAG: %[[TILES:.*]] = memref.view %{{.*}}[%c0][] : {{.*}} to memref<6144xf16, #gpu.address_space<workgroup>>
// CHECK-DAG: %[[KST:.*]] = memref.view %{{.*}}[%c12288][] : {{.*}} to memref<12288xf8E4M3FN, #gpu.address_space<workgroup>>
// CHECK-DAG: %[[VST:.*]] = memref.view %{{.*}}[%c24576][] : {{.*}} to memref<12288xf8E4M3FN, #gpu.address_space<workgroup>>
// The first K / V chunk pair of the prologue: V's at row * 128 + column,
// K's chunk swizzled by row % 8 (after the copy size, 16 bytes or 0).
// CHECK: arith.select %{{.*}}, %c16, %c0 : index
// CHECK-NEXT: %[[ROWOFF:.*]] = arith.muli %[[ROW:.*]], %c128 : index
// CHECK-NEXT: %[[VDST:.*]] = arith.addi %[[ROWOFF]], %[[COL:.*]] : index
// CHECK-NEXT: %[[CHUNK:.*]] = arith.divui %[[COL]], %c16 : index
// CHECK-NEXT: %[[R8:.*]] = arith.andi %[[ROW]], %c7 : index
// CHECK-NEXT: %[[SWZ:.*]] = arith.xori %[[CHUNK]], %[[R8]] : index
// CHECK-NEXT: %[[INC:.*]] = arith.remui %[[COL]], %c16 : index
// CHECK-NEXT: %[[SWB:.*]] = arith.muli %[[SWZ]], %c16 : index
// CHECK-NEXT: %[[SWC:.*]] = arith.addi %[[SWB]], %[[INC]] : index
// CHECK-NEXT: %[[KDST:.*]] = arith.addi %[[ROWOFF]], %[[SWC]] : index
// CHECK-NEXT: nvgpu.device_async_copy %{{.*}}, %[[KST]][%[[KDST]]], 16, %{{.*}} {bypassL1}
// CHECK-NEXT: arith.addi
// CHECK-NEXT: nvgpu.device_async_copy %{{.*}}, %[[VST]][%[[VDST]]], 16, %{{.*}} {bypassL1}
// k_scale folds into the softmax's exp2 scale once, before the loop (NaN
// unless it is positive and finite), instead of multiplying the scores.
// CHECK: %[[KOK:.*]] = arith.andi %{{.*}}, %{{.*}} : i1
// CHECK-NEXT: %[[KC:.*]] = arith.mulf %[[KSCALE]], %{{.*}} : f32
// CHECK-NEXT: %[[EXPS:.*]] = arith.select %[[KOK]], %[[KC]], %{{.*}} : f32
// The Q fragments, once before the loop: pairs [a0 a1 a2 a3] = [top 0:2,
// bottom 0:2, top 2:4, bottom 2:4] of 4 elements of rows g and g + 8.
// CHECK: %[[TOP:.*]] = vector.load %[[TILES]][%{{.*}}] {alignment = 8 : i64} : memref<6144xf16, #gpu.address_space<workgroup>>, vector<4xf16>
// CHECK: %[[BOT:.*]] = vector.load %[[TILES]][%{{.*}}] {alignment = 8 : i64} : memref<6144xf16, #gpu.address_space<workgroup>>, vector<4xf16>
// CHECK-NEXT: %[[QF:.*]] = vector.shuffle %[[TOP]], %[[BOT]] [0, 1, 4, 5, 2, 3, 6, 7] : vector<4xf16>, vector<4xf16>
// The loop: tile i landed, the barrier, V alone converted (8-byte staging
// loads), and the scores read K's staging ring with no barrier between:
// the barrier that publishes the V tile comes before P V.
// CHECK: scf.for
// CHECK: nvgpu.device_async_wait
// CHECK-NEXT: gpu.barrier
// CHECK: vector.load %[[VST]][%{{.*}}] {alignment = 8 : i64} : {{.*}}, vector<8xf8E4M3FN>
// CHECK-NOT: gpu.barrier
// S = Q K^T: chunk 0 at the lane's offset, one 4-byte load, two cvt, the
// B fragment [b0 b1] = dims [4c, 4c+1], [4c+2, 4c+3]; chunk kb at the same
// offset xor 16 kb.
// CHECK: %[[OFF:.*]] = arith.addi %{{.*}}, %{{.*}} : i32
// CHECK-NEXT: %[[I0:.*]] = arith.index_castui %[[OFF]] : i32 to index
// CHECK-NEXT: %[[W0:.*]] = vector.load %[[KST]][%[[I0]]] {alignment = 4 : i64} : memref<12288xf8E4M3FN, #gpu.address_space<workgroup>>, vector<4xf8E4M3FN>
// CHECK-NEXT: %[[B0:.*]] = arith.bitcast %[[W0]] : vector<4xf8E4M3FN> to vector<4xi8>
// CHECK-NEXT: %[[LO:.*]] = vector.shuffle %[[B0]], %[[B0]] [0, 1] : vector<4xi8>, vector<4xi8>
// CHECK-NEXT: %[[CLO:.*]] = nvvm.convert.f8x2.to.f16x2 %[[LO]] : vector<2xi8>(f8E4M3FN) -> vector<2xf16>
// CHECK-NEXT: %[[HI:.*]] = vector.shuffle %[[B0]], %[[B0]] [2, 3] : vector<4xi8>, vector<4xi8>
// CHECK-NEXT: %[[CHI:.*]] = nvvm.convert.f8x2.to.f16x2 %[[HI]] : vector<2xi8>(f8E4M3FN) -> vector<2xf16>
// CHECK-NEXT: %[[CAT:.*]] = vector.shuffle %[[CLO]], %[[CHI]] [0, 1, 2, 3] : vector<2xf16>, vector<2xf16>
// CHECK-NEXT: %[[P0:.*]] = vector.shuffle %[[CAT]], %[[CAT]] [0, 1] : vector<4xf16>, vector<4xf16>
// CHECK-NEXT: %[[P1:.*]] = vector.shuffle %[[CAT]], %[[CAT]] [2, 3] : vector<4xf16>, vector<4xf16>
// CHECK-NEXT: %[[E0:.*]]:2 = vector.to_elements %[[P0]] : vector<2xf16>
// CHECK-NEXT: %[[E1:.*]]:2 = vector.to_elements %[[P1]] : vector<2xf16>
// CHECK-NEXT: %[[BF:.*]] = vector.from_elements %[[E0]]#0, %[[E0]]#1, %[[E1]]#0, %[[E1]]#1 : vector<2x2xf16>
// CHECK-NEXT: %[[S0:.*]] = nvgpu.mma.sync(%{{.*}}, %[[BF]], %{{.*}}) {mmaShape = [16, 8, 16]}
// CHECK-NEXT: %[[OFF1:.*]] = arith.xori %[[OFF]], %c16_i32 : i32
// CHECK-NEXT: %[[I1:.*]] = arith.index_castui %[[OFF1]] : i32 to index
// CHECK-NEXT: vector.load %[[KST]][%[[I1]]] {alignment = 4 : i64}
// CHECK: arith.xori %[[OFF]], %c32_i32 : i32
// CHECK: arith.xori %[[OFF]], %c112_i32 : i32
// The raw scores of the two n8 tiles (the second n8 tile's keys 8 rows
// further, its last chunk again at xor 112) go to the softmax unscaled:
// its exp2 takes k_scale with the scale (EXPS). Rows 8..15 hold no query
// (a group of 4 heads): only row g's exponents are computed.
// CHECK: arith.xori %{{.*}}, %c112_i32 : i32
// CHECK: nvgpu.mma.sync
// CHECK-NOT: vector.broadcast %[[KSCALE]]
// CHECK-COUNT-4: llvm.intr.fma(%{{.*}}, %[[EXPS]], %{{.*}}) : (f32, f32, f32) -> f32
// CHECK-NOT: llvm.intr.fma(%{{.*}}, %[[EXPS]], %{{.*}})
// CHECK: nvvm.vote.sync any
// CHECK: gpu.barrier
// CHECK: nvgpu.ldmatrix %[[TILES]][%{{.*}}] {numTiles = 4 : i32, transpose = true}

// head_dim 64, bf16 q: 64-byte rows, the chunk swizzled by (row / 2) % 4;
// K's bytes go through f16 and f32 to bf16 (exact).
// CHECK-LABEL: gpu.func @cascade_decode_mma_bf16_f8e5m2_d64_g8_h4_p16_nhd_pair_w1x2_q16_kv32_s3_kdirect(
// CHECK-DAG: %[[KST64:.*]] = memref.view %{{.*}}[%c6144][] : {{.*}} to memref<6144xf8E5M2, #gpu.address_space<workgroup>>
// CHECK: arith.select %{{.*}}, %c16, %c0 : index
// CHECK-NEXT: %[[ROWOFF64:.*]] = arith.muli %[[ROW64:.*]], %c64 : index
// CHECK-NEXT: arith.addi %[[ROWOFF64]], %{{.*}} : index
// CHECK-NEXT: %[[CHUNK64:.*]] = arith.divui %{{.*}}, %c16 : index
// CHECK-NEXT: %[[HALF:.*]] = arith.divui %[[ROW64]], %c2 : index
// CHECK-NEXT: %[[R4:.*]] = arith.andi %[[HALF]], %c3 : index
// CHECK-NEXT: arith.xori %[[CHUNK64]], %[[R4]] : index
// CHECK: nvgpu.device_async_copy %{{.*}}, %[[KST64]][%{{.*}}], 16
// CHECK: vector.shuffle %{{.*}}, %{{.*}} [0, 1, 4, 5, 2, 3, 6, 7] : vector<4xbf16>, vector<4xbf16>
// CHECK: scf.for
// CHECK: gpu.barrier
// CHECK: %[[W64:.*]] = vector.load %[[KST64]][%{{.*}}] {alignment = 4 : i64} : {{.*}}, vector<4xf8E5M2>
// CHECK: nvvm.convert.f8x2.to.f16x2 %{{.*}} : vector<2xi8>(f8E5M2) -> vector<2xf16>
// CHECK: nvvm.convert.f8x2.to.f16x2 %{{.*}} : vector<2xi8>(f8E5M2) -> vector<2xf16>
// CHECK: %[[F32:.*]] = arith.extf %{{.*}} : vector<4xf16> to vector<4xf32>
// CHECK-NEXT: arith.truncf %[[F32]] : vector<4xf32> to vector<4xbf16>
// CHECK: nvvm.mma.sync

// RoPE: K is rotated in its converted tile; no direct path.
// CHECK-LABEL: gpu.func @cascade_decode_mma_f16_f8e4m3_d128_g4_h8_p16_nhd_pool_rope3f800000x461c4000_w1x2_q16_kv32_s3(

// No ldmatrix of K (without .trans) in the direct kernels; the RoPE kernel
// keeps it.
// LDK-LABEL: gpu.func @cascade_decode_mma_f16_f8e4m3_d128_g4_h8_p16_nhd_pool_w1x2_q16_kv32_s3_kdirect(
// LDK-NOT: transpose = false
// LDK-LABEL: gpu.func @cascade_decode_mma_bf16_f8e5m2_d64_g8_h4_p16_nhd_pair_w1x2_q16_kv32_s3_kdirect(
// LDK-NOT: transpose = false
// LDK-LABEL: gpu.func @cascade_decode_mma_f16_f8e4m3_d128_g4_h8_p16_nhd_pool_rope3f800000x461c4000_w1x2_q16_kv32_s3(
// LDK: transpose = false

// PTX-LABEL: .visible .entry cascade_decode_mma_f16_f8e4m3_d128_g4_h8_p16_nhd_pool_w1x2_q16_kv32_s3_kdirect(
// PTX-DAG: cp.async.cg.shared.global [{{.*}}], [{{.*}}], 16, {{.*}};
// PTX-DAG: ld.shared.v2.b16 {{.*}}+12288];
// PTX-DAG: cvt.rn.f16x2.e4m3x2
// PTX-DAG: xor.b32 {{.*}}, 112;
// PTX-DAG: st.shared.v4.b32 [{{.*}}+4096]
// PTX-DAG: ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16
// PTX-DAG: mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32
// PTX-LABEL: .visible .entry cascade_decode_mma_bf16_f8e5m2_d64_g8_h4_p16_nhd_pair_w1x2_q16_kv32_s3_kdirect(
// PTX-DAG: cvt.rn.f16x2.e5m2x2
// PTX-DAG: mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32
// PTXLDK-LABEL: .visible .entry cascade_decode_mma_f16_f8e4m3_d128_g4_h8_p16_nhd_pool_w1x2_q16_kv32_s3_kdirect(
// PTXLDK-NOT: ldmatrix.sync.aligned.m8n8.x4.shared.b16
// PTXLDK-LABEL: .visible .entry cascade_decode_mma_bf16_f8e5m2_d64_g8_h4_p16_nhd_pair_w1x2_q16_kv32_s3_kdirect(
// PTXLDK-NOT: ldmatrix.sync.aligned.m8n8.x4.shared.b16
// PTXLDK-LABEL: .visible .entry cascade_decode_mma_f16_f8e4m3_d128_g4_h8_p16_nhd_pool_rope3f800000x461c4000_w1x2_q16_kv32_s3(
// PTXLDK: ldmatrix.sync.aligned.m8n8.x4.shared.b16

// Three stages: Q 4 KiB + V tile 8 KiB + staging 24 KiB; head_dim 64: Q
// 2 KiB + V 4 KiB + staging 12 KiB; RoPE: Q + K and V tiles 20 KiB +
// staging 24 KiB.
// MANIFEST: "dynamic_shared_bytes": 36864,
// MANIFEST: "name": "cascade_decode_mma_f16_f8e4m3_d128_g4_h8_p16_nhd_pool_w1x2_q16_kv32_s3_kdirect",
// MANIFEST: "dynamic_shared_bytes": 18432,
// MANIFEST: "name": "cascade_decode_mma_bf16_f8e5m2_d64_g8_h4_p16_nhd_pair_w1x2_q16_kv32_s3_kdirect",
// MANIFEST: "dynamic_shared_bytes": 45056,
// MANIFEST: "name": "cascade_decode_mma_f16_f8e4m3_d128_g4_h8_p16_nhd_pool_rope3f800000x461c4000_w1x2_q16_kv32_s3",

// PTXAS: Compiling entry function 'cascade_
// PTXAS-NOT: {{[1-9][0-9]*}} bytes spill stores
// PTXAS-NOT: {{[1-9][0-9]*}} bytes spill loads

func.func @decode_e4m3_d128(%q: memref<?x32x128xf16>, %cache: memref<?x2x16x8x128xf8E4M3FN>,
                            %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>,
                            %ks: f32, %vs: f32, %o: memref<?x32x128xf16>, %lse: memref<?x32xf32>) {
  cascade.paged_attention q(%q : memref<?x32x128xf16>) kv(%cache : memref<?x2x16x8x128xf8E4M3FN>)
      kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>) kv_last_page_len(%last : memref<?xi32>)
      k_scale(%ks) v_scale(%vs)
      outs(%o, %lse : memref<?x32x128xf16>, memref<?x32xf32>) {page_size = 16 : i64}
  return
}

func.func @decode_e5m2_d64_bf16(%q: memref<?x32x64xbf16>, %k: memref<?x16x4x64xf8E5M2>, %v: memref<?x16x4x64xf8E5M2>,
                                %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>,
                                %o: memref<?x32x64xbf16>, %lse: memref<?x32xf32>) {
  cascade.paged_attention q(%q : memref<?x32x64xbf16>) kv(%k, %v : memref<?x16x4x64xf8E5M2>, memref<?x16x4x64xf8E5M2>)
      kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>) kv_last_page_len(%last : memref<?xi32>)
      outs(%o, %lse : memref<?x32x64xbf16>, memref<?x32xf32>) {page_size = 16 : i64}
  return
}

func.func @decode_e4m3_d128_rope(%q: memref<?x32x128xf16>, %cache: memref<?x2x16x8x128xf8E4M3FN>,
                                 %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>,
                                 %o: memref<?x32x128xf16>, %lse: memref<?x32xf32>) {
  cascade.paged_attention q(%q : memref<?x32x128xf16>) kv(%cache : memref<?x2x16x8x128xf8E4M3FN>)
      kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>) kv_last_page_len(%last : memref<?xi32>)
      outs(%o, %lse : memref<?x32x128xf16>, memref<?x32xf32>) {page_size = 16 : i64, pos_encoding = #cascade.pos_encoding<rope_llama>}
  return
}
