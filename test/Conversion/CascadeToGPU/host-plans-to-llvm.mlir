// The planned two-level example through cascade-to-ptx and the upstream
// host lowering (as test/Integration/mgpu builds it): LLVM IR that plans each
// level through the runtime shim's C interface, keeps each plan in its
// slot, and launches the split kernels (with their merge) or the unsplit
// ones as the plan says.
// RUN: cascade-opt %cascade_src_root/examples/cascade_two_level_planned.mlir --cascade-to-ptx \
// RUN:   --gpu-to-llvm --convert-func-to-llvm --finalize-memref-to-llvm \
// RUN:   --convert-scf-to-cf --convert-arith-to-llvm --convert-index-to-llvm \
// RUN:   --convert-cf-to-llvm --reconcile-unrealized-casts \
// RUN: | mlir-translate --mlir-to-llvmir | FileCheck %s

// CHECK-DAG: @__cascade_plan_slot_0 = internal global ptr null
// CHECK-DAG: @__cascade_plan_slot_1 = internal global ptr null
// Both levels' kernels, split and not, are in the binary.
// CHECK-DAG: @cascade_kernels_binary = internal constant {{.*}}.visible .entry cascade_prefill_split_mma_f16_f16_d128_g8_h8_p16_nhd_pool_w4x1_q128_kv32_s3

// CHECK-LABEL: define { {{.*}} } @cascade_two_level_planned(
// Level 0: a prefill plan (64 / 8 heads, head_dim 128, page 16, no graph),
// two blocks an SM for the 128-row tensor-core kernel, its query tile 128.
// CHECK: %[[P0:.*]] = call ptr @cascade_mgpu_plan(ptr @__cascade_plan_slot_0, {{.*}}, i64 1, i64 64, i64 8, i64 128, i64 16, i64 0, i64 2, i64 128, i64 0, i64 0)
// Level 1: a decode plan on the rows kernel.
// CHECK: %[[P1:.*]] = call ptr @cascade_mgpu_plan(ptr @__cascade_plan_slot_1, {{.*}}, i64 0, i64 64, i64 8, i64 128, i64 16, i64 0, i64 4, i64 0, i64 0, i64 0)
// CHECK: call i32 @cascade_mgpu_plan_split_kv(ptr %[[P0]], i64 128)
// CHECK: call { ptr, ptr, i64, [1 x i64], [1 x i64] } @cascade_mgpu_plan_i32(ptr %[[P0]], i64 0)
// CHECK: call { ptr, ptr, i64, [3 x i64], [3 x i64] } @cascade_mgpu_plan_tmp_v(ptr %[[P0]])
// CHECK: call { ptr, ptr, i64, [1 x i64], [1 x i64] } @cascade_mgpu_plan_i32(ptr %[[P0]], i64 8)
// CHECK: call void @mgpuLaunchKernel(
// CHECK: call i32 @cascade_mgpu_plan_split_kv(ptr %[[P1]], i64 0)
// CHECK: call void @mgpuLaunchKernel(
// CHECK-NOT: __nv_
// The shim's C interface (lib/Runtime/MgpuPlan.cpp).
// CHECK-DAG: declare ptr @_mlir_ciface_cascade_mgpu_plan(ptr, ptr, ptr, ptr, ptr, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64)
// CHECK-DAG: declare i32 @cascade_mgpu_plan_split_kv(ptr, i64)
// CHECK-DAG: declare void @_mlir_ciface_cascade_mgpu_plan_i32(ptr, ptr, i64)
// CHECK-DAG: declare void @_mlir_ciface_cascade_mgpu_plan_i8(ptr, ptr, i64)
// CHECK-DAG: declare void @_mlir_ciface_cascade_mgpu_plan_tmp_v(ptr, ptr)
// CHECK-DAG: declare void @_mlir_ciface_cascade_mgpu_plan_tmp_s(ptr, ptr)
