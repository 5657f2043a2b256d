// RUN: cascade-opt %s -split-input-file -cascade-lower-plans -verify-diagnostics

// One plan run by levels whose kernels have different query tiles: the plan
// cannot fit both.

!prefill = !cascade.plan<prefill, heads = 32 / 8, head_dim = 128, page_size = 16>
func.func @tiles(%q: memref<?x32x128xf16>, %c: memref<?x2x16x8x128xf16>,
    %qo: memref<?xi32>, %kp: memref<?xi32>, %ki: memref<?xi32>, %kl: memref<?xi32>,
    %o: memref<?x32x128xf16>, %lse: memref<?x32xf32>) {
  // expected-error@+1 {{the levels that run this plan have kernels with different query tiles (64 and 128); give each its own plan}}
  %p = cascade.plan qo_indptr(%qo : memref<?xi32>) kv_indptr(%kp : memref<?xi32>) kv_last_page_len(%kl : memref<?xi32>) : !prefill
  cascade.paged_attention q(%q : memref<?x32x128xf16>) kv(%c : memref<?x2x16x8x128xf16>)
      qo_indptr(%qo : memref<?xi32>) kv_indptr(%kp : memref<?xi32>) kv_indices(%ki : memref<?xi32>)
      kv_last_page_len(%kl : memref<?xi32>) plan(%p : !prefill)
      outs(%o, %lse : memref<?x32x128xf16>, memref<?x32xf32>)
      {page_size = 16 : i64, cascade.kernel_config = #cascade.kernel_config<mma_sync, threads = [32, 4, 1], q_tile = 64, kv_tile = 32, stages = 2>}
  cascade.paged_attention q(%q : memref<?x32x128xf16>) kv(%c : memref<?x2x16x8x128xf16>)
      qo_indptr(%qo : memref<?xi32>) kv_indptr(%kp : memref<?xi32>) kv_indices(%ki : memref<?xi32>)
      kv_last_page_len(%kl : memref<?xi32>) plan(%p : !prefill)
      outs(%o, %lse : memref<?x32x128xf16>, memref<?x32xf32>)
      {page_size = 16 : i64, cascade.kernel_config = #cascade.kernel_config<mma_sync, threads = [32, 4, 1], q_tile = 128, kv_tile = 32, stages = 2>}
  return
}

// -----

// Planned levels are lowered on memrefs (after bufferization).
!decode = !cascade.plan<decode, heads = 32 / 8, head_dim = 128, page_size = 16>
func.func @tensors(%q: tensor<?x32x128xf16>, %c: tensor<?x2x16x8x128xf16>, %kp: tensor<?xi32>, %ki: tensor<?xi32>, %kl: tensor<?xi32>,
    %p: !decode, %o: tensor<?x32x128xf16>, %lse: tensor<?x32xf32>) -> (tensor<?x32x128xf16>, tensor<?x32xf32>) {
  // expected-error@+1 {{a planned level must be bufferized before cascade-lower-plans}}
  %r:2 = cascade.paged_attention q(%q : tensor<?x32x128xf16>) kv(%c : tensor<?x2x16x8x128xf16>)
      kv_indptr(%kp : tensor<?xi32>) kv_indices(%ki : tensor<?xi32>) kv_last_page_len(%kl : tensor<?xi32>)
      plan(%p : !decode) outs(%o, %lse : tensor<?x32x128xf16>, tensor<?x32xf32>) {page_size = 16 : i64}
      -> tensor<?x32x128xf16>, tensor<?x32xf32>
  return %r#0, %r#1 : tensor<?x32x128xf16>, tensor<?x32xf32>
}
