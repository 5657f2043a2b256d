// RUN: cascade-opt %s --convert-cascade-to-gpu | FileCheck %s

// CHECK: module attributes {cascade.bundle = [{{.*}}], gpu.container_module}
// CHECK-LABEL: func.func @merge_state
// CHECK: memref.reinterpret_cast
// CHECK: gpu.launch_func @cascade_kernels::@cascade_merge_state_f16_d128_b2_t128 blocks in ({{.*}}) threads in ({{.*}}) args(
func.func @merge_state(%va: memref<?x32x128xf16>, %sa: memref<?x32xf32>,
                       %vb: memref<?x32x128xf16>, %sb: memref<?x32xf32>,
                       %v: memref<?x32x128xf16>, %s: memref<?x32xf32>) {
  cascade.merge_state ins(%va, %sa, %vb, %sb : memref<?x32x128xf16>, memref<?x32xf32>, memref<?x32x128xf16>, memref<?x32xf32>)
      outs(%v, %s : memref<?x32x128xf16>, memref<?x32xf32>)
  return
}

// CHECK-LABEL: func.func @merge_in_place_masked
// CHECK: memref.extract_strided_metadata
// CHECK: gpu.launch_func @cascade_kernels::@cascade_merge_state_in_place_bf16_d64_be_masku8_t128
func.func @merge_in_place_masked(%vo: memref<?x8x64xbf16>, %so: memref<?x8xf32>,
                                 %m: memref<?xi8, strided<[?]>>,
                                 %v: memref<?x8x64xbf16>, %s: memref<?x8xf32>) {
  cascade.merge_state_in_place ins(%vo, %so : memref<?x8x64xbf16>, memref<?x8xf32>)
      mask(%m : memref<?xi8, strided<[?]>>) outs(%v, %s : memref<?x8x64xbf16>, memref<?x8xf32>)
      {lse_base = #cascade.lse_base<base_e>}
  return
}

// CHECK-LABEL: func.func @merge_states
// CHECK: gpu.launch_func @cascade_kernels::@cascade_merge_states_f32_d256_b2_t128
func.func @merge_states(%vs: memref<?x?x4x256xf32>, %ss: memref<?x?x4xf32>,
                        %v: memref<?x4x256xf32>, %s: memref<?x4xf32>) {
  cascade.merge_states ins(%vs, %ss : memref<?x?x4x256xf32>, memref<?x?x4xf32>)
      outs(%v, %s : memref<?x4x256xf32>, memref<?x4xf32>)
  return
}

// CHECK: gpu.module @cascade_kernels
// CHECK: gpu.func @cascade_merge_state_f16_d128_b2_t128(%{{.*}}: memref<?xf16, strided<[1], offset: ?>>, %{{.*}}: memref<?xf32, strided<[1], offset: ?>>, %{{.*}}: memref<?xf16, strided<[1], offset: ?>>, %{{.*}}: memref<?xf32, strided<[1], offset: ?>>, %{{.*}}: memref<?xf16, strided<[1], offset: ?>>, %{{.*}}: memref<?xf32, strided<[1], offset: ?>>, %{{.*}}: i64) kernel
// CHECK-SAME: known_block_size = array<i32: 128, 1, 1>
// CHECK: vector.load {{.*}} {alignment = 16 : i64} : memref<?xf16, strided<[1], offset: ?>>, vector<8xf16>
// CHECK: llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f32"
// CHECK: llvm.call_intrinsic "llvm.nvvm.lg2.approx.ftz.f"
// CHECK: vector.store {{.*}} {alignment = 16 : i64} : memref<?xf16, strided<[1], offset: ?>>, vector<8xf16>
// CHECK: gpu.func @cascade_merge_state_in_place_bf16_d64_be_masku8_t128
// CHECK: gpu.barrier
// CHECK: memref.load %{{.*}} : memref<?xi8, strided<[1], offset: ?>>
// CHECK: gpu.func @cascade_merge_states_f32_d256_b2_t128
// CHECK: scf.for
