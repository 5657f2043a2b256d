// RUN: cascade-opt %s --test-cascade-gpu-codegen=block=mma-trans --canonicalize --cse | FileCheck %s
// RUN: cascade-opt %s --test-cascade-gpu-codegen=block=mma-trans | cascade-opt %gpu_to_ptx_sm_90 | FileCheck %s --check-prefix=PTX

// O = P V: the two f32 accumulators of adjacent n8 tiles (P's columns 0-7
// and 8-15) become the A operand of the next product in registers (rounded
// to f16, pairs (0,1) from the first, (2,3) from the second: no shared
// memory, no shuffles); V, stored [k][n], is read with one ldmatrix x4
// .trans for two n8 output tiles.

// CHECK-LABEL: gpu.func @mma_trans
// CHECK: %[[P0:.*]] = vector.from_elements {{.*}} : vector<2x2xf32>
// CHECK: %[[P1:.*]] = vector.from_elements {{.*}} : vector<2x2xf32>
// CHECK: %[[H0:.*]] = arith.truncf %[[P0]] : vector<2x2xf32> to vector<2x2xf16>
// CHECK: %[[H1:.*]] = arith.truncf %[[P1]] : vector<2x2xf32> to vector<2x2xf16>
// CHECK: %[[A:.*]] = vector.shuffle %[[H0]], %[[H1]] [0, 1, 2, 3] : vector<2x2xf16>, vector<2x2xf16>
// CHECK: %[[V:.*]] = nvgpu.ldmatrix %{{.*}}[%{{.*}}] {numTiles = 4 : i32, transpose = true}
// CHECK: %[[B0:.*]] = vector.shuffle %[[V]], %[[V]] [0, 1]
// CHECK: %[[B1:.*]] = vector.shuffle %[[V]], %[[V]] [2, 3]
// CHECK: nvgpu.mma.sync(%[[A]], %[[B0]], %cst)
// CHECK: nvgpu.mma.sync(%[[A]], %[[B1]], %cst)

// PTX-NOT: st.shared
// PTX: cvt.rn.f16x2.f32
// PTX-SAME: ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16
// PTX-SAME: mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32
module {}
