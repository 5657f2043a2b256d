// A cascade whose shared prefix is sharded over the 4 processes of a grid,
// through cascade-to-ptx: each process's prefill kernel over its shard, the
// gathers as calls of the runtime's collective (memref<*x..>, gather axis 1,
// grid-axes mask 1) into device buffers, the merge of the 4 states, the
// decode level every process holds, the final merge, every temporary freed,
// and no shard op left (docs/multi_gpu.md).
// RUN: cascade-opt %s --cascade-to-ptx | FileCheck %s
// RUN: cascade-opt %s --cascade-to-ptx --gpu-to-llvm --expand-strided-metadata \
// RUN:   --convert-func-to-llvm --finalize-memref-to-llvm --convert-scf-to-cf \
// RUN:   --convert-arith-to-llvm --convert-index-to-llvm --convert-cf-to-llvm \
// RUN:   --reconcile-unrealized-casts \
// RUN: | mlir-translate --mlir-to-llvmir | FileCheck %s --check-prefix=LLVM

// CHECK-NOT: shard.
// CHECK-DAG: func.func private @cascade_all_gather_f16(memref<*xf16>, memref<*xf16>, i64, i64) attributes {llvm.emit_c_interface}
// CHECK-DAG: func.func private @cascade_all_gather_f32(memref<*xf32>, memref<*xf32>, i64, i64) attributes {llvm.emit_c_interface}
// CHECK-LABEL: func.func @sharded_prefix
// CHECK: gpu.launch_func @cascade_kernels::@cascade_prefill_mma_f16_f16_d128_g4_h8_p16_nhd_pool_{{.*}} args(
// CHECK: %[[GV:.*]], %{{.*}} = gpu.alloc async [%{{.*}}] (%{{.*}}) : memref<?x4x32x128xf16>
// CHECK: %[[OUTV:.*]] = memref.cast %[[GV]] : memref<?x4x32x128xf16> to memref<*xf16>
// CHECK: call @cascade_all_gather_f16(%{{.*}}, %[[OUTV]], %[[AX:.*]], %[[MASK:.*]]) : (memref<*xf16>, memref<*xf16>, i64, i64) -> ()
// CHECK: %[[GS:.*]], %{{.*}} = gpu.alloc async [%{{.*}}] (%{{.*}}) : memref<?x4x32xf32>
// CHECK: call @cascade_all_gather_f32(
// CHECK: memref.extract_strided_metadata %[[GV]] : memref<?x4x32x128xf16>
// CHECK: memref.extract_strided_metadata %[[GS]] : memref<?x4x32xf32>
// CHECK: gpu.launch_func @cascade_kernels::@cascade_merge_states_f16_d128_
// CHECK: gpu.launch_func @cascade_kernels::@cascade_decode_rows_f16_f16_d128_g4_h8_p16_nhd_pool_
// CHECK: gpu.launch_func @cascade_kernels::@cascade_merge_state_f16_d128_
// CHECK-COUNT-8: gpu.dealloc async
// CHECK: gpu.binary @cascade_kernels
// CHECK-SAME: .visible .entry cascade_prefill_mma_f16_f16_d128_g4_h8_p16_nhd_pool_
// CHECK-SAME: .visible .entry cascade_merge_states_f16_d128_
// CHECK-SAME: .visible .entry cascade_decode_rows_f16_f16_d128_g4_h8_p16_nhd_pool_
// CHECK-SAME: .visible .entry cascade_merge_state_f16_d128_

// LLVM-DAG: declare void @_mlir_ciface_cascade_all_gather_f16(ptr, ptr, i64, i64)
// LLVM-DAG: declare void @_mlir_ciface_cascade_all_gather_f32(ptr, ptr, i64, i64)
// LLVM-DAG: call void @cascade_all_gather_f16(i64 4, ptr %{{.*}}, i64 4, ptr %{{.*}}, i64 1, i64 1)
// LLVM-DAG: call void @mgpuLaunchKernel(

shard.grid @node(shape = 4)
func.func @sharded_prefix(%q: tensor<?x32x128xf16>, %c: tensor<?x2x16x8x128xf16>, %qo0: tensor<2xi32>, %kp0: tensor<2xi32>, %ki0: tensor<?xi32>, %kl0: tensor<1xi32>, %qo1: tensor<?xi32>, %kp1: tensor<?xi32>, %ki1: tensor<?xi32>, %kl1: tensor<?xi32>, %o: tensor<?x32x128xf16>, %lse: tensor<?x32xf32>) -> (tensor<?x32x128xf16>, tensor<?x32xf32>) {
  %r:2 = cascade.multi_level_attention q(%q : tensor<?x32x128xf16>) kv(%c : tensor<?x2x16x8x128xf16>)
      qo_indptr(%qo0, %qo1 : tensor<2xi32>, tensor<?xi32>) kv_indptr(%kp0, %kp1 : tensor<2xi32>, tensor<?xi32>)
      kv_indices(%ki0, %ki1 : tensor<?xi32>, tensor<?xi32>) kv_last_page_len(%kl0, %kl1 : tensor<1xi32>, tensor<?xi32>)
      outs(%o, %lse : tensor<?x32x128xf16>, tensor<?x32xf32>) {page_size = 16 : i64, decode_levels = array<i1: false, true>, grid = @node, sharded_levels = array<i1: true, false>}
      -> tensor<?x32x128xf16>, tensor<?x32xf32>
  return %r#0, %r#1 : tensor<?x32x128xf16>, tensor<?x32xf32>
}
