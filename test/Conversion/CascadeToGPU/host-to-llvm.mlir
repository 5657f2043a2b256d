// The host side of cascade-to-ptx lowers with upstream gpu-to-llvm into LLVM
// IR that calls the mgpu* entry points; lib/Runtime/MgpuRuntime.cpp provides
// them (test/Integration/mgpu runs this on a GPU). The PTX is embedded and
// JIT-loaded (mgpuModuleLoadJIT) since the object holds assembly.
// RUN: cascade-opt %cascade_src_root/test/Integration/mgpu/merge_state.mlir --cascade-to-ptx \
// RUN:   --gpu-to-llvm --convert-func-to-llvm --finalize-memref-to-llvm \
// RUN:   --convert-scf-to-cf --convert-arith-to-llvm --convert-index-to-llvm \
// RUN:   --convert-cf-to-llvm --reconcile-unrealized-casts \
// RUN: | mlir-translate --mlir-to-llvmir | FileCheck %s

// CHECK-DAG: @cascade_kernels_binary = internal constant {{.*}}.visible .entry cascade_merge_state_f16_d128_b2
// CHECK-DAG: define void @merge_state(
// CHECK-DAG: define void @_mlir_ciface_merge_state(
// CHECK-DAG: call ptr @mgpuModuleLoadJIT(
// CHECK-DAG: call ptr @mgpuModuleGetFunction(
// CHECK-DAG: call ptr @mgpuStreamCreate()
// CHECK-DAG: call void @mgpuLaunchKernel(
// CHECK-DAG: call void @mgpuStreamSynchronize(
// CHECK-NOT: __nv_
