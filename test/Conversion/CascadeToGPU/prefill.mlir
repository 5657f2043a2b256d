// RUN: cascade-opt %s --convert-cascade-to-gpu | FileCheck %s
// RUN: cascade-opt %s --cascade-to-ptx | FileCheck %s --check-prefix=PTX

// Prefill/append (qo_indptr) runs on the tensor-core kernel family
// (mma_sync): a block owns 128 packed query rows (query x GQA head) of one
// request and one KV head. Without a plan the blocks schedule themselves:
// ceil(rows * G / 128) + batch blocks, each finds its (request, tile) by
// binary search over qo_indptr. q and KV of different dtypes stay on the
// rows family (the row-wise prefill).

// CHECK-LABEL: func.func @prefill_causal
// CHECK: %[[ROWS:.*]] = memref.dim %arg0, %{{.*}} : memref<?x32x128xf16>
// CHECK: %[[B:.*]] = memref.dim %arg5, %{{.*}} : memref<?xi32>
// CHECK: %[[PACKED:.*]] = arith.muli %[[ROWS]], %c4 : index
// CHECK: scf.if
// CHECK: %[[TILES:.*]] = arith.ceildivui %[[PACKED]], %c128 : index
// CHECK: %[[GRID:.*]] = arith.addi %[[TILES]], %[[B]] : index
// CHECK: gpu.launch_func @cascade_kernels::@cascade_prefill_causal_mma_f16_f16_d128_g4_h8_p16_nhd_pool_w4x1_q128_kv32_s3 blocks in (%[[GRID]], %c8{{.*}}, %c1{{.*}}) threads in (%c32{{.*}}, %c4{{.*}}, %c1{{.*}}) dynamic_shared_memory_size %c81920_i32
func.func @prefill_causal(%q: memref<?x32x128xf16>, %cache: memref<?x2x16x8x128xf16>, %qo: memref<?xi32>,
                          %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>,
                          %o: memref<?x32x128xf16>, %lse: memref<?x32xf32>) {
  cascade.paged_attention q(%q : memref<?x32x128xf16>) kv(%cache : memref<?x2x16x8x128xf16>)
      qo_indptr(%qo : memref<?xi32>) kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>)
      kv_last_page_len(%last : memref<?xi32>) outs(%o, %lse : memref<?x32x128xf16>, memref<?x32xf32>)
      {page_size = 16 : i64, causal}
  return
}

// CHECK-LABEL: func.func @prefill_bf16
// CHECK: gpu.launch_func @cascade_kernels::@cascade_prefill_mma_bf16_bf16_d64_g8_h4_p1_hnd_pair_w4x1_q128_kv64_s2
func.func @prefill_bf16(%q: memref<?x32x64xbf16>, %k: memref<?x4x1x64xbf16>, %v: memref<?x4x1x64xbf16>,
                        %qo: memref<?xi32>, %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>,
                        %o: memref<?x32x64xbf16>, %lse: memref<?x32xf32>) {
  cascade.paged_attention q(%q : memref<?x32x64xbf16>) kv(%k, %v : memref<?x4x1x64xbf16>, memref<?x4x1x64xbf16>)
      qo_indptr(%qo : memref<?xi32>) kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>)
      kv_last_page_len(%last : memref<?xi32>) outs(%o, %lse : memref<?x32x64xbf16>, memref<?x32xf32>)
      {page_size = 1 : i64, kv_layout = #cascade.kv_layout<hnd>}
  return
}

// CHECK-LABEL: func.func @prefill_mixed_dtypes
// CHECK: gpu.launch_func @cascade_kernels::@cascade_prefill_causal_rows_f16_bf16_d128_g4_h8_p16_nhd_pool_t16x8_kv32_s2
func.func @prefill_mixed_dtypes(%q: memref<?x32x128xf16>, %cache: memref<?x2x16x8x128xbf16>, %qo: memref<?xi32>,
                                %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>,
                                %o: memref<?x32x128xf16>, %lse: memref<?x32xf32>) {
  cascade.paged_attention q(%q : memref<?x32x128xf16>) kv(%cache : memref<?x2x16x8x128xbf16>)
      qo_indptr(%qo : memref<?xi32>) kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>)
      kv_last_page_len(%last : memref<?xi32>) outs(%o, %lse : memref<?x32x128xf16>, memref<?x32xf32>)
      {page_size = 16 : i64, causal}
  return
}

// CHECK: gpu.module @cascade_kernels
// CHECK: memref.global @cascade_dynamic_smem : memref<0xi8, #gpu.address_space<workgroup>> {alignment = 1024 : i64}
// CHECK: gpu.func @cascade_prefill_causal_mma_f16_f16_d128_g4_h8_p16_nhd_pool_w4x1_q128_kv32_s3(
// CHECK-SAME: known_block_size = array<i32: 32, 4, 1>
// CHECK: memref.view
// CHECK: scf.while
// CHECK: nvgpu.device_async_copy {{.*}}, 8, %{{.*}} {bypassL1}
// CHECK: scf.for
// CHECK: nvgpu.device_async_wait %{{.*}} {numGroups = 1 : i32}
// CHECK: gpu.barrier
// CHECK: nvgpu.ldmatrix {{.*}} {numTiles = 4 : i32, transpose = false}
// CHECK: nvgpu.mma.sync({{.*}}) {mmaShape = [16, 8, 16]} : (vector<4x2xf16>, vector<2x2xf16>, vector<2x2xf32>) -> vector<2x2xf32>
// CHECK: gpu.shuffle  xor %{{.*}}, %c1_i32
// CHECK: gpu.shuffle  xor %{{.*}}, %c2_i32
// Lazy rescaling: the running max moves only past 2^8 (exp2 units).
// CHECK: arith.constant 8.000000e+00 : f32
// CHECK: llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f32"
// P becomes the A operand of P.V before the (rare) rescale of O.
// CHECK: vector.shuffle {{.*}} [0, 1, 2, 3] : vector<2x2xf16>, vector<2x2xf16>
// CHECK: nvvm.vote.sync  any
// CHECK: nvgpu.ldmatrix {{.*}} {numTiles = 4 : i32, transpose = true}
// CHECK: gpu.func @cascade_prefill_mma_bf16_bf16_d64_g8_h4_p1_hnd_pair_w4x1_q128_kv64_s2(
// CHECK: nvvm.mma.sync {{.*}} {layoutA = #nvvm.mma_layout<row>, layoutB = #nvvm.mma_layout<col>, multiplicandAPtxType = #nvvm.mma_type<bf16>, multiplicandBPtxType = #nvvm.mma_type<bf16>, shape = #nvvm.shape<m = 16, n = 8, k = 16>}
// CHECK: gpu.func @cascade_prefill_causal_rows_f16_bf16_d128_g4_h8_p16_nhd_pool_t16x8_kv32_s2(
// CHECK-SAME: known_block_size = array<i32: 16, 1, 8>
// CHECK: scf.while
// CHECK: scf.condition

// PTX: gpu.binary @cascade_kernels
// PTX-SAME: .extern .shared .align 1024 .b8 cascade_dynamic_smem[];
// PTX-SAME: .visible .entry cascade_prefill_causal_mma_f16_f16_d128_g4_h8_p16_nhd_pool_w4x1_q128_kv32_s3(
// PTX-SAME: .maxntid 32, 4, 1
// PTX-SAME: cp.async.cg.shared.global [%{{[a-z0-9]+}}], [%{{[a-z0-9]+}}], 16, {{%?[a-z0-9]+}};
// PTX-SAME: ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16
// PTX-SAME: mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32
// PTX-SAME: cp.async.wait_group {{(\\09)?}}1;
// PTX-SAME: ldmatrix.sync.aligned.m8n8.x4.shared.b16
// PTX-SAME: .visible .entry cascade_prefill_mma_bf16_bf16_d64_g8_h4_p1_hnd_pair_w4x1_q128_kv64_s2(
// PTX-SAME: mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32
// PTX-NOT: __nv_
