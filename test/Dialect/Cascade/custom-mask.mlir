// RUN: cascade-opt %s | cascade-opt | FileCheck %s
// RUN: cascade-opt %s --mlir-print-op-generic | cascade-opt | FileCheck %s
// RUN: cascade-opt %s --verify-roundtrip
// RUN: cascade-opt %s --one-shot-bufferize="bufferize-function-boundaries" | FileCheck %s --check-prefix=BUF

// cascade.paged_attention's optional custom_mask(mask, mask_indptr): FlashInfer's
// bit-packed per-request masks on a prefill level, in both forms.

// CHECK-LABEL: func @prefill_custom_mask
// CHECK: cascade.paged_attention q({{.*}}) kv({{.*}}) qo_indptr({{.*}}) kv_indptr({{.*}}) kv_indices({{.*}}) kv_last_page_len(%{{.*}} : tensor<?xi32>)
// CHECK-SAME: custom_mask(%arg7, %arg8 : tensor<?xi8>, tensor<?xi32>)
// CHECK-SAME: outs(
// BUF-LABEL: func @prefill_custom_mask
// BUF: cascade.paged_attention {{.*}} custom_mask(%{{.*}}, %{{.*}} : memref<?xi8, strided<[?], offset: ?>>, memref<?xi32, strided<[?], offset: ?>>)
func.func @prefill_custom_mask(%q: tensor<?x32x128xf16>, %cache: tensor<?x2x1x8x128xf16>,
                               %qo: tensor<?xi32>, %kvp: tensor<?xi32>, %kvi: tensor<?xi32>,
                               %last: tensor<?xi32>, %o: tensor<?x32x128xf16>,
                               %mask: tensor<?xi8>, %mask_indptr: tensor<?xi32>,
                               %lse: tensor<?x32xf32>)
    -> (tensor<?x32x128xf16>, tensor<?x32xf32>) {
  %r:2 = cascade.paged_attention q(%q : tensor<?x32x128xf16>) kv(%cache : tensor<?x2x1x8x128xf16>)
      qo_indptr(%qo : tensor<?xi32>) kv_indptr(%kvp : tensor<?xi32>) kv_indices(%kvi : tensor<?xi32>)
      kv_last_page_len(%last : tensor<?xi32>)
      custom_mask(%mask, %mask_indptr : tensor<?xi8>, tensor<?xi32>)
      outs(%o, %lse : tensor<?x32x128xf16>, tensor<?x32xf32>) {page_size = 1 : i64, window_left = 64 : i64}
      -> tensor<?x32x128xf16>, tensor<?x32xf32>
  return %r#0, %r#1 : tensor<?x32x128xf16>, tensor<?x32xf32>
}

// CHECK-LABEL: func @buffers
// CHECK: custom_mask(%{{.*}}, %{{.*}} : memref<?xi8>, memref<5xi32>)
func.func @buffers(%q: memref<?x32x128xf16>, %k: memref<?x1x8x128xf16>, %v: memref<?x1x8x128xf16>,
                   %qo: memref<5xi32>, %kvp: memref<5xi32>, %kvi: memref<?xi32>, %last: memref<4xi32>,
                   %mask: memref<?xi8>, %mask_indptr: memref<5xi32>,
                   %o: memref<?x32x128xf16>, %lse: memref<?x32xf32>) {
  cascade.paged_attention q(%q : memref<?x32x128xf16>) kv(%k, %v : memref<?x1x8x128xf16>, memref<?x1x8x128xf16>)
      qo_indptr(%qo : memref<5xi32>) kv_indptr(%kvp : memref<5xi32>) kv_indices(%kvi : memref<?xi32>)
      kv_last_page_len(%last : memref<4xi32>)
      custom_mask(%mask, %mask_indptr : memref<?xi8>, memref<5xi32>)
      outs(%o, %lse : memref<?x32x128xf16>, memref<?x32xf32>) {page_size = 1 : i64}
  return
}
