// RUN: cascade-opt %s --cascade-decompose-levels=fuse-merges=false --convert-cascade-to-gpu | FileCheck %s

// Buffers that kernels read or write must be device memory: the temporaries
// of an unfused cascade (memref.alloc / memref.dealloc on the host) become
// gpu.alloc / gpu.dealloc (async forms on their own stream, which
// gpu-to-llvm lowers to mgpuMemAlloc / mgpuMemFree); buffers nothing on the
// GPU uses stay as they are.
// CHECK-LABEL: func.func @two_level_memrefs
// CHECK-NOT: memref.alloc
// CHECK: %[[W0:.*]] = gpu.wait async
// CHECK: %[[TV:.*]], %[[A0:.*]] = gpu.alloc async [%[[W0]]] (%{{.*}}) : memref<?x32x128xf16>
// CHECK: gpu.wait [%[[A0]]]
// CHECK: %[[TS:.*]], %{{.*}} = gpu.alloc async [%{{.*}}] (%{{.*}}) : memref<?x32xf32>
// CHECK: gpu.launch_func @cascade_kernels::@cascade_decode_rows_f16_f16_d128_g4_h8_p16_nhd_pool_t16x8_kv32_s2
// CHECK: gpu.launch_func @cascade_kernels::@cascade_merge_state_in_place_f16_d128_b2_t128
// CHECK: %[[W1:.*]] = gpu.wait async
// CHECK: %[[D0:.*]] = gpu.dealloc async [%[[W1]]] %[[TV]] : memref<?x32x128xf16>
// CHECK: gpu.wait [%[[D0]]]
// CHECK: gpu.dealloc async [%{{.*}}] %[[TS]] : memref<?x32xf32>
// CHECK: %[[HOST:.*]] = memref.alloc() : memref<4xf32>
// CHECK: memref.dealloc %[[HOST]] : memref<4xf32>
func.func @two_level_memrefs(%q: memref<?x32x128xf16>, %cache: memref<?x2x16x8x128xf16>,
                             %qo0: memref<2xi32>, %kp0: memref<2xi32>, %ki0: memref<?xi32>, %kl0: memref<1xi32>,
                             %qo1: memref<?xi32>, %kp1: memref<?xi32>, %ki1: memref<?xi32>, %kl1: memref<?xi32>,
                             %o: memref<?x32x128xf16>, %lse: memref<?x32xf32>) {
  cascade.multi_level_attention q(%q : memref<?x32x128xf16>) kv(%cache : memref<?x2x16x8x128xf16>)
      qo_indptr(%qo0, %qo1 : memref<2xi32>, memref<?xi32>) kv_indptr(%kp0, %kp1 : memref<2xi32>, memref<?xi32>)
      kv_indices(%ki0, %ki1 : memref<?xi32>, memref<?xi32>) kv_last_page_len(%kl0, %kl1 : memref<1xi32>, memref<?xi32>)
      outs(%o, %lse : memref<?x32x128xf16>, memref<?x32xf32>)
      {page_size = 16 : i64, decode_levels = array<i1: false, true>}
  %host = memref.alloc() : memref<4xf32>
  memref.dealloc %host : memref<4xf32>
  return
}
