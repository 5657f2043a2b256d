// RUN: not cascade-opt %s --convert-cascade-to-gpu -split-input-file 2>&1 | FileCheck %s

// CHECK: error: decode lowering supports head_dim 64, 128, 256
func.func @odd_head_dim(%q: memref<?x8x72xf16>, %cache: memref<?x2x16x8x72xf16>,
                        %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>,
                        %o: memref<?x8x72xf16>, %lse: memref<?x8xf32>) {
  cascade.paged_attention q(%q : memref<?x8x72xf16>) kv(%cache : memref<?x2x16x8x72xf16>)
      kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>)
      kv_last_page_len(%last : memref<?xi32>) outs(%o, %lse : memref<?x8x72xf16>, memref<?x8xf32>)
      {page_size = 16 : i64}
  return
}

// -----

// CHECK: error: decode lowering supports GQA groups up to 16
func.func @big_group(%q: memref<?x32x64xf16>, %cache: memref<?x2x16x1x64xf16>,
                     %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>,
                     %o: memref<?x32x64xf16>, %lse: memref<?x32xf32>) {
  cascade.paged_attention q(%q : memref<?x32x64xf16>) kv(%cache : memref<?x2x16x1x64xf16>)
      kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>)
      kv_last_page_len(%last : memref<?xi32>) outs(%o, %lse : memref<?x32x64xf16>, memref<?x32xf32>)
      {page_size = 16 : i64}
  return
}

// -----

// CHECK: error: cascade op could not be lowered to GPU (tensor form: bufferize first
func.func @tensor_form(%va: tensor<4x8x64xf16>, %sa: tensor<4x8xf32>, %vb: tensor<4x8x64xf16>,
                       %sb: tensor<4x8xf32>, %v: tensor<4x8x64xf16>, %s: tensor<4x8xf32>)
    -> (tensor<4x8x64xf16>, tensor<4x8xf32>) {
  %r:2 = cascade.merge_state ins(%va, %sa, %vb, %sb : tensor<4x8x64xf16>, tensor<4x8xf32>, tensor<4x8x64xf16>, tensor<4x8xf32>)
      outs(%v, %s : tensor<4x8x64xf16>, tensor<4x8xf32>) -> tensor<4x8x64xf16>, tensor<4x8xf32>
  return %r#0, %r#1 : tensor<4x8x64xf16>, tensor<4x8xf32>
}
