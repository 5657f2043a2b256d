// REQUIRES: ptxas
// RUN: cascade-opt %s --test-cascade-gpu-codegen=block=mma-f16 --canonicalize --cse | FileCheck %s
// RUN: cascade-opt %s --test-cascade-gpu-codegen=block=mma-bf16 --canonicalize --cse | FileCheck %s --check-prefix=BF16
// RUN: rm -rf %t && mkdir -p %t
// RUN: cascade-opt %s --test-cascade-gpu-codegen=block=mma-f16 | cascade-opt %gpu_to_ptx_sm_90 | FileCheck %s --check-prefix=PTX
// RUN: cascade-opt %s --test-cascade-gpu-codegen=block=mma-bf16 | cascade-opt %gpu_to_ptx_sm_80 | FileCheck %s --check-prefix=PTX80

// MmaBuilder: C[16x16] = A[16x64] B^T with B stored [n][k] (K in Q.K^T).
// Per k16 step: one ldmatrix x4 for A (lane l addresses row l % 16, chunk
// l / 16), one ldmatrix x4 for the B fragments of two n8 tiles (row l % 8 +
// 8 (l / 16), chunk (l / 8) % 2), and two mma.sync m16n8k16 with f32
// accumulators. Addresses of later k steps are the first one xor'ed with a
// constant (the swizzle only permutes within the lane's part).

// CHECK-LABEL: gpu.func @mma_f16
// CHECK: %[[LANE:.*]] = gpu.thread_id  x
// CHECK: %[[A0:.*]] = nvgpu.ldmatrix %{{.*}}[%{{.*}}] {numTiles = 4 : i32, transpose = false} : memref<2048xf16, #gpu.address_space<workgroup>> -> vector<4x2xf16>
// CHECK: %[[BX4:.*]] = nvgpu.ldmatrix %{{.*}}[%{{.*}}] {numTiles = 4 : i32, transpose = false} : memref<2048xf16, #gpu.address_space<workgroup>> -> vector<4x2xf16>
// CHECK: %[[B0:.*]] = vector.shuffle %[[BX4]], %[[BX4]] [0, 1] : vector<4x2xf16>, vector<4x2xf16>
// CHECK: %[[B1:.*]] = vector.shuffle %[[BX4]], %[[BX4]] [2, 3] : vector<4x2xf16>, vector<4x2xf16>
// CHECK: %[[C0:.*]] = nvgpu.mma.sync(%[[A0]], %[[B0]], %cst) {mmaShape = [16, 8, 16]} : (vector<4x2xf16>, vector<2x2xf16>, vector<2x2xf32>) -> vector<2x2xf32>
// CHECK: %[[C1:.*]] = nvgpu.mma.sync(%[[A0]], %[[B1]], %cst) {mmaShape = [16, 8, 16]}
// CHECK: arith.xori %{{.*}}, %c16_i32 : i32
// CHECK: nvgpu.mma.sync({{.*}}, {{.*}}, %[[C0]])
// CHECK: nvgpu.mma.sync({{.*}}, {{.*}}, %[[C1]])
// CHECK-COUNT-4: nvgpu.mma.sync
// CHECK-NOT: nvgpu.mma.sync
// CHECK: vector.extract %{{.*}}[0, 0] : f32 from vector<2x2xf32>

// bf16 operands go through nvvm.mma.sync on i32 register pairs (nvgpu's
// mma.sync cannot type bf16), with the same fragments.
// BF16-LABEL: gpu.func @mma_bf16
// BF16: nvgpu.ldmatrix {{.*}} -> vector<4x2xbf16>
// BF16: vector.bitcast %{{.*}} : vector<2xbf16> to vector<1xi32>
// BF16: nvvm.mma.sync A[{{.*}}]  B[{{.*}}]  C[{{.*}}]  {layoutA = #nvvm.mma_layout<row>, layoutB = #nvvm.mma_layout<col>, multiplicandAPtxType = #nvvm.mma_type<bf16>, multiplicandBPtxType = #nvvm.mma_type<bf16>, shape = #nvvm.shape<m = 16, n = 8, k = 16>} : (i32, i32, f32) -> !llvm.struct<(f32, f32, f32, f32)>
// BF16: llvm.extractvalue %{{.*}}[3] : !llvm.struct<(f32, f32, f32, f32)>

// PTX: .target sm_90
// PTX-SAME: ldmatrix.sync.aligned.m8n8.x4.shared.b16
// PTX-SAME: mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32
// PTX80: .target sm_80
// PTX80-SAME: ldmatrix.sync.aligned.m8n8.x4.shared.b16
// PTX80-SAME: mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32
module {}
