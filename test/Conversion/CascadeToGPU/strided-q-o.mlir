// RUN: cascade-opt %s --convert-cascade-to-gpu | FileCheck %s

// A strided q (a view of a packed QKV projection's output) and o (a view of
// a larger buffer): each is passed as the flat buffer it spans from its
// first element, followed by nothing else of its layout; its row and head
// strides go to the kernel's q_stride_n / q_stride_h / o_stride_n /
// o_stride_h parameters (docs/kernel-bundle.md).

// CHECK-LABEL: func.func @decode_views
// CHECK-SAME: (%[[Q:[^:]*]]: memref<?x32x128xf16, strided<[6144, 128, 1], offset: ?>>
// CHECK-SAME: %[[O:[^:]*]]: memref<?x32x128xf16, strided<[8192, 256, 1], offset: ?>>
// CHECK-DAG: %[[QB:.*]], %[[QOFF:.*]], %[[QSIZES:.*]]:3, %[[QSTRIDES:.*]]:3 = memref.extract_strided_metadata %[[Q]]
// CHECK-DAG: %[[OB:.*]], %[[OOFF:.*]], %[[OSIZES:.*]]:3, %[[OSTRIDES:.*]]:3 = memref.extract_strided_metadata %[[O]]
// CHECK-DAG: %[[QSN:.*]] = arith.index_cast %[[QSTRIDES]]#0 : index to i64
// CHECK-DAG: %[[QSH:.*]] = arith.index_cast %[[QSTRIDES]]#1 : index to i64
// CHECK-DAG: %[[OSN:.*]] = arith.index_cast %[[OSTRIDES]]#0 : index to i64
// CHECK-DAG: %[[OSH:.*]] = arith.index_cast %[[OSTRIDES]]#1 : index to i64
// CHECK: gpu.launch_func @cascade_kernels::@cascade_decode_rows_f16_f16_d128_g4_h8_p16_nhd_pool_t16x8_kv32_s2
// CHECK-SAME: %[[QSN]] : i64, %[[QSH]] : i64, %[[OSN]] : i64, %[[OSH]] : i64
func.func @decode_views(%q: memref<?x32x128xf16, strided<[6144, 128, 1], offset: ?>>,
                        %o: memref<?x32x128xf16, strided<[8192, 256, 1], offset: ?>>,
                        %cache: memref<?x2x16x8x128xf16>, %kvp: memref<?xi32>,
                        %kvi: memref<?xi32>, %last: memref<?xi32>, %lse: memref<?x32xf32>) {
  cascade.paged_attention q(%q : memref<?x32x128xf16, strided<[6144, 128, 1], offset: ?>>)
      kv(%cache : memref<?x2x16x8x128xf16>)
      kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>) kv_last_page_len(%last : memref<?xi32>)
      outs(%o, %lse : memref<?x32x128xf16, strided<[8192, 256, 1], offset: ?>>, memref<?x32xf32>)
      {page_size = 16 : i64}
  return
}

// The kernel addresses q row r, head h at r * q_stride_n + h * q_stride_h.
// CHECK-LABEL: gpu.func @cascade_decode_rows_f16_f16_d128_g4_h8_p16_nhd_pool_t16x8_kv32_s2
// CHECK-SAME: %arg7: i64, %[[KQSN:arg8]]: i64, %[[KQSH:arg9]]: i64, %[[KOSN:arg10]]: i64, %[[KOSH:arg11]]: i64
// CHECK-DAG: arith.index_cast %[[KQSN]] : i64 to index
// CHECK-DAG: arith.index_cast %[[KQSH]] : i64 to index
// CHECK-DAG: arith.index_cast %[[KOSN]] : i64 to index
// CHECK-DAG: arith.index_cast %[[KOSH]] : i64 to index
