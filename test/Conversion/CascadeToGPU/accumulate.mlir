// RUN: cascade-opt %s --convert-cascade-to-gpu | FileCheck %s

// `accumulate`: the level merges its state into the state its destinations
// hold, in the epilogue of its last kernel. Every lane of a row reads the old
// lse before a block barrier, then the row's lane 0 writes the merged one.

// Unsplit decode (rows family): the decode kernel merges.
// CHECK-LABEL: func.func @decode_acc
// CHECK: gpu.launch_func @cascade_kernels::@cascade_decode_acc_rows_f16_f16_d128_g4_h8_p16_nhd_pool_t16x8_kv32_s2
// CHECK-NOT: gpu.launch_func
func.func @decode_acc(%q: memref<?x32x128xf16>, %cache: memref<?x2x16x8x128xf16>,
                      %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>,
                      %o: memref<?x32x128xf16>, %lse: memref<?x32xf32>) {
  cascade.paged_attention q(%q : memref<?x32x128xf16>) kv(%cache : memref<?x2x16x8x128xf16>)
      kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>) kv_last_page_len(%last : memref<?xi32>)
      outs(%o, %lse : memref<?x32x128xf16>, memref<?x32xf32>) {page_size = 16 : i64, accumulate}
  return
}

// Split prefill: the partial-state merge (by query row) merges into (o, lse);
// the attention kernel itself is the plain split one.
// CHECK-LABEL: func.func @prefill_split_acc
// CHECK: gpu.launch_func @cascade_kernels::@cascade_prefill_split_acc_mma_f16_f16_d128_g4_h8_p16_nhd_pool_w4x1_q128_kv32_s3
// CHECK: gpu.launch_func @cascade_kernels::@cascade_merge_states_indptr_f16_d128_h32_byrow_acc_b2_t128
func.func @prefill_split_acc(%q: memref<?x32x128xf16>, %cache: memref<?x2x16x8x128xf16>, %qo: memref<?xi32>,
                             %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>,
                             %ri: memref<?xi32>, %kt: memref<?xi32>, %oi: memref<?xi32>, %mask: memref<?xi8>,
                             %chunk: memref<1xi32>, %tv: memref<?x32x128xf32>, %ts: memref<?x32xf32>,
                             %qt: memref<?xi32>, %mi: memref<?xi32>,
                             %o: memref<?x32x128xf16>, %lse: memref<?x32xf32>) {
  cascade.paged_attention q(%q : memref<?x32x128xf16>) kv(%cache : memref<?x2x16x8x128xf16>)
      qo_indptr(%qo : memref<?xi32>) kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>)
      kv_last_page_len(%last : memref<?xi32>)
      plan(%ri, %kt, %oi, %mask, %chunk, %tv, %ts, %qt, %mi : memref<?xi32>, memref<?xi32>, memref<?xi32>, memref<?xi8>, memref<1xi32>, memref<?x32x128xf32>, memref<?x32xf32>, memref<?xi32>, memref<?xi32>)
      outs(%o, %lse : memref<?x32x128xf16>, memref<?x32xf32>) {page_size = 16 : i64, accumulate}
  return
}

// Unsplit tensor-core prefill: its epilogue merges.
// CHECK-LABEL: func.func @prefill_acc
// CHECK: gpu.launch_func @cascade_kernels::@cascade_prefill_acc_mma_f16_f16_d128_g4_h8_p16_nhd_pool_w4x1_q128_kv32_s3
func.func @prefill_acc(%q: memref<?x32x128xf16>, %cache: memref<?x2x16x8x128xf16>, %qo: memref<?xi32>,
                       %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>,
                       %o: memref<?x32x128xf16>, %lse: memref<?x32xf32>) {
  cascade.paged_attention q(%q : memref<?x32x128xf16>) kv(%cache : memref<?x2x16x8x128xf16>)
      qo_indptr(%qo : memref<?xi32>) kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>)
      kv_last_page_len(%last : memref<?xi32>) outs(%o, %lse : memref<?x32x128xf16>, memref<?x32xf32>)
      {page_size = 16 : i64, accumulate}
  return
}

// CHECK: gpu.func @cascade_decode_acc_rows_f16_f16_d128_g4_h8_p16_nhd_pool_t16x8_kv32_s2(
// CHECK: scf.for
// CHECK: memref.load %{{.*}} : memref<?xf32, strided<[1], offset: ?>>
// CHECK: gpu.barrier
// CHECK: vector.load {{.*}} : memref<?xf16, strided<[1], offset: ?>>, vector<8xf16>
// CHECK: arith.andi
// CHECK: gpu.func @cascade_prefill_split_acc_mma_f16_f16_d128_g4_h8_p16_nhd_pool_w4x1_q128_kv32_s3(
// CHECK-NOT: gpu.func
// CHECK: vector.store {{.*}} : memref<?xf32, strided<[1], offset: ?>>, vector<2xf32>
// CHECK: gpu.func @cascade_merge_states_indptr_f16_d128_h32_byrow_acc_b2_t128(
// CHECK: %[[OLD:.*]] = memref.load %arg4[%{{.*}}] : memref<?xf32, strided<[1], offset: ?>>
// CHECK: gpu.barrier
// CHECK: scf.if
// CHECK: scf.for
// CHECK: vector.load %arg3
// CHECK: gpu.func @cascade_prefill_acc_mma_f16_f16_d128_g4_h8_p16_nhd_pool_w4x1_q128_kv32_s3(
// CHECK: scf.for
// CHECK: memref.load %arg{{[0-9]+}}[%{{.*}}] : memref<?xf32, strided<[1], offset: ?>>
// CHECK: gpu.barrier
// CHECK: vector.load %{{.*}} : memref<?xf16, strided<[1], offset: ?>>, vector<2xf16>
