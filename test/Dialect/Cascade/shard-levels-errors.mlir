// RUN: cascade-opt %s --cascade-shard-levels -split-input-file -verify-diagnostics

// The buffer form cannot take the gather's temporaries.
shard.grid @node(shape = 2)
func.func @memrefs(%q: memref<?x32x128xf16>, %c: memref<?x2x16x8x128xf16>, %qo0: memref<2xi32>, %kp0: memref<2xi32>, %ki0: memref<?xi32>, %kl0: memref<1xi32>, %o: memref<?x32x128xf16>, %lse: memref<?x32xf32>) {
  // expected-error@+1 {{has sharded levels on memrefs: cascade-shard-levels partitions the tensor form (run it before bufferization)}}
  cascade.multi_level_attention q(%q : memref<?x32x128xf16>) kv(%c : memref<?x2x16x8x128xf16>)
      qo_indptr(%qo0 : memref<2xi32>) kv_indptr(%kp0 : memref<2xi32>)
      kv_indices(%ki0 : memref<?xi32>) kv_last_page_len(%kl0 : memref<1xi32>)
      outs(%o, %lse : memref<?x32x128xf16>, memref<?x32xf32>) {page_size = 16 : i64, grid = @node, sharded_levels = array<i1: true>}
  return
}
