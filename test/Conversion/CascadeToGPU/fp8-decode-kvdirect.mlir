// REQUIRES: ptxas
// fp8 decode on mma_sync whose warps hold Q in registers reads the B
// operands straight from the fp8 staging rings (MmaSyncMainloop.cpp).
// S = Q K^T (`_kdirect`): the gather stores K's 16-byte chunk p of row r at
// chunk p ^ s(r) (s(r) = r % 8 at head_dim 128, (r / 2) % 4 at 64), each
// lane loads 4 fp8 bytes (dims 16 kb + 4c .. + 3 of key g) per k step and
// converts them with two cvt into its B fragment, the Q fragments are built
// once from 8-byte loads with the same head_dim permutation (a0/a1 dims 4c,
// 4c+1 of rows g / g+8, a2/a3 dims 4c+2, 4c+3), and no ldmatrix reads K.
// O += P V at head_dim 32..128 (`_kvdirect`): V's chunk p of row r lands at
// p ^ (r & 6) (r & 2 at 64); each lane loads 4 bytes (dims 32 q + 4 g .. +
// 3) of the keys 2c, 2c+1, 2c+8, 2c+9 of each 16-key step, and byte t of
// the four loads, permuted and converted, is the B fragment of O's n8 tile
// 4q + t; there is no V tile, no ldmatrix and no barrier before P V, the Q
// tile sits in the last V staging stage, and the epilogue writes the 8
// consecutive dims 32 q + 8 c of each group as one vector. Selection gives
// these kernels 2 stages and 8 blocks an SM (nvvm.minctasm 8). At head_dim
// 16 V is converted into its tile (`_kdirect` only). k_scale folds into the
// softmax's scale. RoPE decode keeps the converted K tile (RoPE rotates it)
// and its name. ptxas: no spills where no launch bound asks for them.
// RUN: cascade-opt %s --convert-cascade-to-gpu --canonicalize --cse | FileCheck %s
// RUN: cascade-opt %s --convert-cascade-to-gpu --canonicalize --cse | FileCheck %s --check-prefix=LDK
// RUN: rm -rf %t && mkdir -p %t
// RUN: cascade-opt %s --cascade-to-ptx="bundle-dir=%t/b" -o /dev/null
// RUN: FileCheck %s --check-prefix=PTX < %t/b/kernels.ptx
// RUN: FileCheck %s --check-prefix=PTXLDK < %t/b/kernels.ptx
// RUN: FileCheck %s --check-prefix=MANIFEST < %t/b/manifest.json
// RUN: %ptxas -arch=sm_90 -v %t/b/kernels.ptx -o %t/k.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS

// CHECK-LABEL: gpu.func @cascade_decode_mma_f16_f8e4m3_d128_g4_h8_p16_nhd_pool_w1x2_q16_kv32_s2_b8_kvdirect(
// CHECK-SAME: %[[KSCALE:arg13]]: f32
// CHECK-SAME: nvvm.minctasm = 8 : i32
// The staging rings of 2 stages of 32 x 128 fp8 (K at byte 0, V at 8192),
// the Q tile (16 x 128 f16) in V's last stage.
// CHECK-DAG: %[[KST:.*]] = memref.view %{{.*}}[%c0][] : {{.*}} to memref<8192xf8E4M3FN, #gpu.address_space<workgroup>>
// CHECK-DAG: %[[VST:.*]] = memref.view %{{.*}}[%c8192][] : {{.*}} to memref<8192xf8E4M3FN, #gpu.address_space<workgroup>>
// CHECK-DAG: %[[QT:.*]] = memref.view %{{.*}}[%c12288][] : {{.*}} to memref<2048xf16, #gpu.address_space<workgroup>>
// The first K / V chunk pair of the prologue (after the copy size, 16 bytes
// or 0): K's chunk swizzled by row % 8, V's by row & 6.
// CHECK: arith.select %{{.*}}, %c16, %c0 : index
// CHECK-NEXT: %[[CHUNK:.*]] = arith.divui %[[COL:.*]], %c16 : index
// CHECK-NEXT: %[[R8:.*]] = arith.andi %[[ROW:.*]], %c7 : index
// CHECK-NEXT: %[[KSW:.*]] = arith.xori %[[CHUNK]], %[[R8]] : index
// CHECK-NEXT: %[[INC:.*]] = arith.remui %[[COL]], %c16 : index
// CHECK-NEXT: %[[KB:.*]] = arith.muli %[[KSW]], %c16 : index
// CHECK-NEXT: %[[KC:.*]] = arith.addi %[[KB]], %[[INC]] : index
// CHECK-NEXT: %[[ROWOFF:.*]] = arith.muli %[[ROW]], %c128 : index
// CHECK-NEXT: %[[KDST:.*]] = arith.addi %[[ROWOFF]], %[[KC]] : index
// CHECK-NEXT: %[[R6:.*]] = arith.andi %[[ROW]], %c6 : index
// CHECK-NEXT: %[[VSW:.*]] = arith.xori %[[CHUNK]], %[[R6]] : index
// CHECK-NEXT: %[[VB:.*]] = arith.muli %[[VSW]], %c16 : index
// CHECK-NEXT: %[[VC:.*]] = arith.addi %[[VB]], %[[INC]] : index
// CHECK-NEXT: %[[VDST:.*]] = arith.addi %[[ROWOFF]], %[[VC]] : index
// CHECK-NEXT: nvgpu.device_async_copy %{{.*}}, %[[KST]][%[[KDST]]], 16, %{{.*}} {bypassL1}
// CHECK-NEXT: arith.addi
// CHECK-NEXT: nvgpu.device_async_copy %{{.*}}, %[[VST]][%[[VDST]]], 16, %{{.*}} {bypassL1}
// k_scale folds into the softmax's exp2 scale once, before the loop (NaN
// unless it is positive and finite), instead of multiplying the scores.
// CHECK: %[[KOK:.*]] = arith.andi %{{.*}}, %{{.*}} : i1
// CHECK-NEXT: %[[KCS:.*]] = arith.mulf %[[KSCALE]], %{{.*}} : f32
// CHECK-NEXT: %[[EXPS:.*]] = arith.select %[[KOK]], %[[KCS]], %{{.*}} : f32
// The Q fragments, once before the loop: pairs [a0 a1 a2 a3] = [top 0:2,
// bottom 0:2, top 2:4, bottom 2:4] of 4 elements of rows g and g + 8.
// CHECK: %[[TOP:.*]] = vector.load %[[QT]][%{{.*}}] {alignment = 8 : i64} : memref<2048xf16, #gpu.address_space<workgroup>>, vector<4xf16>
// CHECK: %[[BOT:.*]] = vector.load %[[QT]][%{{.*}}] {alignment = 8 : i64} : memref<2048xf16, #gpu.address_space<workgroup>>, vector<4xf16>
// CHECK-NEXT: vector.shuffle %[[TOP]], %[[BOT]] [0, 1, 4, 5, 2, 3, 6, 7] : vector<4xf16>, vector<4xf16>
// The loop: tile i landed, the one barrier of the iteration, then nothing
// converted in shared memory.
// CHECK: scf.for
// CHECK: nvgpu.device_async_wait
// CHECK-NEXT: gpu.barrier
// CHECK-NOT: gpu.barrier
// CHECK-NOT: vector<8xf8E4M3FN>
// S = Q K^T: chunk 0 at the lane's offset, one 4-byte load, two cvt, the
// B fragment [b0 b1] = dims [4c, 4c+1], [4c+2, 4c+3]; chunk kb at the same
// offset xor 16 kb.
// CHECK: %[[OFF:.*]] = arith.addi %{{.*}}, %{{.*}} : i32
// CHECK-NEXT: %[[I0:.*]] = arith.index_castui %[[OFF]] : i32 to index
// CHECK-NEXT: %[[W0:.*]] = vector.load %[[KST]][%[[I0]]] {alignment = 4 : i64} : memref<8192xf8E4M3FN, #gpu.address_space<workgroup>>, vector<4xf8E4M3FN>
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
// CHECK-NEXT: nvgpu.mma.sync(%{{.*}}, %[[BF]], %{{.*}}) {mmaShape = [16, 8, 16]}
// CHECK-NEXT: %[[OFF1:.*]] = arith.xori %[[OFF]], %c16_i32 : i32
// CHECK-NEXT: %[[I1:.*]] = arith.index_castui %[[OFF1]] : i32 to index
// CHECK-NEXT: vector.load %[[KST]][%[[I1]]] {alignment = 4 : i64}
// CHECK: arith.xori %[[OFF]], %c112_i32 : i32
// The raw scores of the two n8 tiles go to the softmax unscaled: its exp2
// takes k_scale with the scale (EXPS). Rows 8..15 hold no query (a group
// of 4 heads): only row g's exponents are computed.
// CHECK: arith.xori %{{.*}}, %c112_i32 : i32
// CHECK: nvgpu.mma.sync
// CHECK-NOT: vector.broadcast %[[KSCALE]]
// CHECK-COUNT-4: llvm.intr.fma(%{{.*}}, %[[EXPS]], %{{.*}}) : (f32, f32, f32) -> f32
// CHECK-NOT: llvm.intr.fma(%{{.*}}, %[[EXPS]], %{{.*}})
// CHECK: nvvm.vote.sync any
// P V: the lane's four keys 2c, 2c+1, 2c+8, 2c+9 (rows 128 bytes apart,
// keys 8 and 9 at +1024 and +1152), 4 bytes each; byte 0 of each is tile
// 0's B fragment (keys 2c, 2c+1 as b0, 2c+8, 2c+9 as b1).
// CHECK: %[[V0:.*]] = arith.addi %{{.*}}, %{{.*}} : i32
// CHECK-NEXT: %[[J0:.*]] = arith.index_castui %[[V0]] : i32 to index
// CHECK-NEXT: %[[K0:.*]] = vector.load %[[VST]][%[[J0]]] {alignment = 4 : i64} : memref<8192xf8E4M3FN, #gpu.address_space<workgroup>>, vector<4xf8E4M3FN>
// CHECK-NEXT: %[[V1:.*]] = arith.addi %[[V0]], %c128_i32 : i32
// CHECK-NEXT: %[[J1:.*]] = arith.index_castui %[[V1]] : i32 to index
// CHECK-NEXT: %[[K1:.*]] = vector.load %[[VST]][%[[J1]]] {alignment = 4 : i64}
// CHECK-NEXT: %[[V8:.*]] = arith.addi %[[V0]], %c1024_i32 : i32
// CHECK-NEXT: %[[J8:.*]] = arith.index_castui %[[V8]] : i32 to index
// CHECK-NEXT: %[[K8:.*]] = vector.load %[[VST]][%[[J8]]] {alignment = 4 : i64}
// CHECK-NEXT: %[[V9:.*]] = arith.addi %[[V0]], %c1152_i32 : i32
// CHECK-NEXT: %[[J9:.*]] = arith.index_castui %[[V9]] : i32 to index
// CHECK-NEXT: %[[K9:.*]] = vector.load %[[VST]][%[[J9]]] {alignment = 4 : i64}
// CHECK-NEXT: %[[HI89:.*]] = vector.shuffle %[[K8]], %[[K9]] [0, 4] : vector<4xf8E4M3FN>, vector<4xf8E4M3FN>
// CHECK-NEXT: %[[LO01:.*]] = vector.shuffle %[[K0]], %[[K1]] [0, 4] : vector<4xf8E4M3FN>, vector<4xf8E4M3FN>
// CHECK-NEXT: vector.shuffle %[[LO01]], %[[HI89]] [0, 1, 2, 3] : vector<2xf8E4M3FN>, vector<2xf8E4M3FN>
// CHECK-COUNT-2: nvvm.convert.f8x2.to.f16x2
// CHECK: nvgpu.mma.sync
// CHECK: vector.shuffle %[[K8]], %[[K9]] [1, 5] : vector<4xf8E4M3FN>, vector<4xf8E4M3FN>
// The next 32 dims: the same keys' bytes at the offset xor 32.
// CHECK: arith.xori %[[V0]], %c32_i32 : i32
// CHECK: arith.xori %[[V0]], %c96_i32 : i32
// CHECK-NOT: nvgpu.ldmatrix
// CHECK: scf.yield
// The epilogue writes each group q's 8 dims (tiles 4q .. 4q+3, element 0
// then element 1) from 8 c + 32 q as one 16-byte store.
// CHECK: %[[ROWV:.*]] = vector.from_elements %[[A0:.*]], %[[A1:.*]], %[[A2:.*]], %[[A3:.*]], %[[A4:.*]], %[[A5:.*]], %[[A6:.*]], %[[A7:.*]] : vector<8xf32>
// CHECK: %[[ROWH:.*]] = arith.truncf %[[ROWV]] : vector<8xf32> to vector<8xf16>
// CHECK-NEXT: vector.store %[[ROWH]], %{{.*}}[%{{.*}}] {alignment = 16 : i64} : memref<?xf16, strided<[1], offset: ?>>, vector<8xf16>

// head_dim 64, bf16 q: 64-byte rows, K's chunk swizzled by (row / 2) % 4,
// V's by row & 2; the bytes go through f16 and f32 to bf16 (exact).
// CHECK-LABEL: gpu.func @cascade_decode_mma_bf16_f8e5m2_d64_g8_h4_p16_nhd_pair_w1x2_q16_kv32_s2_b8_kvdirect(
// CHECK-DAG: %[[KST64:.*]] = memref.view %{{.*}}[%c0][] : {{.*}} to memref<4096xf8E5M2, #gpu.address_space<workgroup>>
// CHECK-DAG: %[[VST64:.*]] = memref.view %{{.*}}[%c4096][] : {{.*}} to memref<4096xf8E5M2, #gpu.address_space<workgroup>>
// CHECK: arith.select %{{.*}}, %c16, %c0 : index
// CHECK-NEXT: %[[CHUNK64:.*]] = arith.divui %{{.*}}, %c16 : index
// CHECK-NEXT: %[[HALF:.*]] = arith.divui %[[ROW64:.*]], %c2 : index
// CHECK-NEXT: %[[R4:.*]] = arith.andi %[[HALF]], %c3 : index
// CHECK-NEXT: arith.xori %[[CHUNK64]], %[[R4]] : index
// CHECK: %[[R2:.*]] = arith.andi %[[ROW64]], %c2 : index
// CHECK-NEXT: arith.xori %[[CHUNK64]], %[[R2]] : index
// CHECK: nvgpu.device_async_copy %{{.*}}, %[[KST64]][%{{.*}}], 16
// CHECK: nvgpu.device_async_copy %{{.*}}, %[[VST64]][%{{.*}}], 16
// CHECK: vector.shuffle %{{.*}}, %{{.*}} [0, 1, 4, 5, 2, 3, 6, 7] : vector<4xbf16>, vector<4xbf16>
// CHECK: scf.for
// CHECK: gpu.barrier
// CHECK-NOT: gpu.barrier
// CHECK: %[[W64:.*]] = vector.load %[[KST64]][%{{.*}}] {alignment = 4 : i64} : {{.*}}, vector<4xf8E5M2>
// CHECK: nvvm.convert.f8x2.to.f16x2 %{{.*}} : vector<2xi8>(f8E5M2) -> vector<2xf16>
// CHECK: nvvm.convert.f8x2.to.f16x2 %{{.*}} : vector<2xi8>(f8E5M2) -> vector<2xf16>
// CHECK: %[[F32:.*]] = arith.extf %{{.*}} : vector<4xf16> to vector<4xf32>
// CHECK-NEXT: arith.truncf %[[F32]] : vector<4xf32> to vector<4xbf16>
// CHECK: nvvm.mma.sync
// CHECK: vector.load %[[VST64]][%{{.*}}] {alignment = 4 : i64} : {{.*}}, vector<4xf8E5M2>
// CHECK-NOT: nvgpu.ldmatrix
// CHECK: scf.yield

// RoPE: K is rotated in its converted tile; no direct path.
// CHECK-LABEL: gpu.func @cascade_decode_mma_f16_f8e4m3_d128_g4_h8_p16_nhd_pool_rope3f800000x461c4000_w1x2_q16_kv32_s3(

// head_dim 16: K direct, V converted into its tile (8-byte staging loads)
// and read with ldmatrix .trans after the barrier that publishes it.
// CHECK-LABEL: gpu.func @cascade_decode_mma_f16_f8e4m3_d16_g4_h8_p16_nhd_pool_w1x2_q16_kv32_s3_kdirect(
// CHECK-DAG: %[[T16:.*]] = memref.view %{{.*}}[%c0][] : {{.*}} to memref<1152xf16, #gpu.address_space<workgroup>>
// CHECK-DAG: %[[VST16:.*]] = memref.view %{{.*}}[%c3840][] : {{.*}} to memref<1536xf8E4M3FN, #gpu.address_space<workgroup>>
// CHECK: scf.for
// CHECK: nvgpu.device_async_wait
// CHECK-NEXT: gpu.barrier
// CHECK: vector.load %[[VST16]][%{{.*}}] {alignment = 8 : i64} : {{.*}}, vector<8xf8E4M3FN>
// CHECK: gpu.barrier
// CHECK: nvgpu.ldmatrix %[[T16]][%{{.*}}] {numTiles = 4 : i32, transpose = true}

// No ldmatrix of K (without .trans) in the direct kernels; the RoPE kernel
// keeps it.
// LDK-LABEL: gpu.func @cascade_decode_mma_f16_f8e4m3_d128_g4_h8_p16_nhd_pool_w1x2_q16_kv32_s2_b8_kvdirect(
// LDK-NOT: transpose = false
// LDK-LABEL: gpu.func @cascade_decode_mma_bf16_f8e5m2_d64_g8_h4_p16_nhd_pair_w1x2_q16_kv32_s2_b8_kvdirect(
// LDK-NOT: transpose = false
// LDK-LABEL: gpu.func @cascade_decode_mma_f16_f8e4m3_d128_g4_h8_p16_nhd_pool_rope3f800000x461c4000_w1x2_q16_kv32_s3(
// LDK: transpose = false
// LDK-LABEL: gpu.func @cascade_decode_mma_f16_f8e4m3_d16_g4_h8_p16_nhd_pool_w1x2_q16_kv32_s3_kdirect(
// LDK-NOT: transpose = false

// PTX-LABEL: .visible .entry cascade_decode_mma_f16_f8e4m3_d128_g4_h8_p16_nhd_pool_w1x2_q16_kv32_s2_b8_kvdirect(
// PTX: .minnctapersm 8
// PTX-DAG: cp.async.cg.shared.global [{{.*}}], [{{.*}}], 16, {{.*}};
// PTX-DAG: cvt.rn.f16x2.e4m3x2
// PTX-DAG: xor.b32 {{.*}}, 112;
// PTX-DAG: prmt.b32
// PTX-DAG: st.global.v4.b32
// PTX-DAG: mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32
// PTX-LABEL: .visible .entry cascade_decode_mma_bf16_f8e5m2_d64_g8_h4_p16_nhd_pair_w1x2_q16_kv32_s2_b8_kvdirect(
// PTX-DAG: cvt.rn.f16x2.e5m2x2
// PTX-DAG: mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32
// PTX-LABEL: .visible .entry cascade_decode_mma_f16_f8e4m3_d16_g4_h8_p16_nhd_pool_w1x2_q16_kv32_s3_kdirect(
// PTX: ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16
// PTXLDK-LABEL: .visible .entry cascade_decode_mma_f16_f8e4m3_d128_g4_h8_p16_nhd_pool_w1x2_q16_kv32_s2_b8_kvdirect(
// PTXLDK-NOT: ldmatrix
// PTXLDK-LABEL: .visible .entry cascade_decode_mma_bf16_f8e5m2_d64_g8_h4_p16_nhd_pair_w1x2_q16_kv32_s2_b8_kvdirect(
// PTXLDK-NOT: ldmatrix
// PTXLDK-LABEL: .visible .entry cascade_decode_mma_f16_f8e4m3_d128_g4_h8_p16_nhd_pool_rope3f800000x461c4000_w1x2_q16_kv32_s3(
// PTXLDK: ldmatrix.sync.aligned.m8n8.x4.shared.b16

// Two stages of staging (16 KiB; the warps' partial states at the end take
// 16 x 2 x 130 f32, 16640 bytes); head_dim 64: staging 8 KiB, partial
// states 8448; RoPE: Q + K and V tiles 20 KiB + staging 24 KiB; head_dim
// 16: Q 16 x 24 + V tile 32 x 24 f16 (padded rows) + 3 KiB of staging.
// MANIFEST: "dynamic_shared_bytes": 16640,
// MANIFEST: "name": "cascade_decode_mma_f16_f8e4m3_d128_g4_h8_p16_nhd_pool_w1x2_q16_kv32_s2_b8_kvdirect",
// MANIFEST: "dynamic_shared_bytes": 8448,
// MANIFEST: "name": "cascade_decode_mma_bf16_f8e5m2_d64_g8_h4_p16_nhd_pair_w1x2_q16_kv32_s2_b8_kvdirect",
// MANIFEST: "dynamic_shared_bytes": 45056,
// MANIFEST: "name": "cascade_decode_mma_f16_f8e4m3_d128_g4_h8_p16_nhd_pool_rope3f800000x461c4000_w1x2_q16_kv32_s3",
// MANIFEST: "dynamic_shared_bytes": 5376,
// MANIFEST: "name": "cascade_decode_mma_f16_f8e4m3_d16_g4_h8_p16_nhd_pool_w1x2_q16_kv32_s3_kdirect",

// The launch bound of 8 blocks an SM holds the kvdirect kernels to 128
// registers, where ptxas spills a few loop invariants (24 to 32 bytes
// today); a change that makes it spill 100 bytes or more fails here.
// PTXAS: Compiling entry function 'cascade_
// PTXAS-NOT: {{[0-9][0-9][0-9]+}} bytes spill stores

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

func.func @decode_e4m3_d16(%q: memref<?x32x16xf16>, %cache: memref<?x2x16x8x16xf8E4M3FN>,
                           %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>,
                           %o: memref<?x32x16xf16>, %lse: memref<?x32xf32>) {
  cascade.paged_attention q(%q : memref<?x32x16xf16>) kv(%cache : memref<?x2x16x8x16xf8E4M3FN>)
      kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>) kv_last_page_len(%last : memref<?xi32>)
      outs(%o, %lse : memref<?x32x16xf16>, memref<?x32xf32>) {page_size = 16 : i64}
  return
}
