// RUN: cascade-opt %s --test-cascade-gpu-codegen=block=row-reduce --canonicalize --cse | FileCheck %s
// RUN: cascade-opt %s --test-cascade-gpu-codegen=block=row-reduce | cascade-opt %gpu_to_ptx_sm_90 | FileCheck %s --check-prefix=PTX

// Row reductions over accumulator fragments (mma::Accumulator): a lane holds
// two columns of rows lane/4 and lane/4 + 8 per n8 tile; a row is reduced in
// the thread (maxnumf / addf over its 2 x tiles elements) and then over the
// quad of lanes lane/4 shares (shuffle xor 1 and 2). Row scaling multiplies
// pair r of every fragment by the scale of row r.

// CHECK-LABEL: gpu.func @row_reduce
// CHECK: %[[M0:.*]] = arith.maxnumf
// CHECK: %[[S1:.*]], %{{.*}} = gpu.shuffle  xor %[[T0:.*]], %c1_i32, %c32_i32 : f32
// CHECK: %[[Q1:.*]] = arith.maxnumf %[[T0]], %[[S1]] : f32
// CHECK: %[[S2:.*]], %{{.*}} = gpu.shuffle  xor %[[Q1]], %c2_i32, %c32_i32 : f32
// CHECK: arith.maxnumf %[[Q1]], %[[S2]] : f32
// CHECK: gpu.shuffle  xor %{{.*}}, %c1_i32, %c32_i32 : f32
// CHECK: gpu.shuffle  xor %{{.*}}, %c2_i32, %c32_i32 : f32
// CHECK: arith.addf
// CHECK: gpu.shuffle  xor %{{.*}}, %c1_i32, %c32_i32 : f32
// CHECK: arith.addf
// CHECK: gpu.shuffle  xor %{{.*}}, %c2_i32, %c32_i32 : f32
// CHECK: gpu.shuffle  xor %{{.*}}, %c1_i32, %c32_i32 : f32
// CHECK: gpu.shuffle  xor %{{.*}}, %c2_i32, %c32_i32 : f32
// CHECK-NOT: gpu.shuffle
// CHECK: %[[SC:.*]] = vector.from_elements %[[I0:.*]], %[[I0]], %[[I1:.*]], %[[I1]] : vector<2x2xf32>
// CHECK: arith.mulf %{{.*}}, %[[SC]] : vector<2x2xf32>

// PTX-COUNT-8: shfl.sync.bfly.b32
module {}
