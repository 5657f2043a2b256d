// RUN: cascade-opt %s -canonicalize -cse | FileCheck %s

// On tensors the ops are pure: an unused result is dead code, and two
// identical ops are one.
// CHECK-LABEL: func.func @tensor_ops_are_pure
// CHECK-NEXT: %[[R:.*]]:2 = cascade.merge_state
// CHECK-NOT: cascade.merge_state
// CHECK: return %[[R]]#0, %[[R]]#1
func.func @tensor_ops_are_pure(%va: tensor<?x8x64xf16>, %sa: tensor<?x8xf32>,
                               %vb: tensor<?x8x64xf16>, %sb: tensor<?x8xf32>,
                               %v: tensor<?x8x64xf16>, %s: tensor<?x8xf32>)
    -> (tensor<?x8x64xf16>, tensor<?x8xf32>) {
  %dead:2 = cascade.merge_state_in_place ins(%va, %sa : tensor<?x8x64xf16>, tensor<?x8xf32>)
      outs(%v, %s : tensor<?x8x64xf16>, tensor<?x8xf32>) -> tensor<?x8x64xf16>, tensor<?x8xf32>
  %a:2 = cascade.merge_state ins(%va, %sa, %vb, %sb : tensor<?x8x64xf16>, tensor<?x8xf32>, tensor<?x8x64xf16>, tensor<?x8xf32>)
      outs(%v, %s : tensor<?x8x64xf16>, tensor<?x8xf32>) -> tensor<?x8x64xf16>, tensor<?x8xf32>
  %b:2 = cascade.merge_state ins(%va, %sa, %vb, %sb : tensor<?x8x64xf16>, tensor<?x8xf32>, tensor<?x8x64xf16>, tensor<?x8xf32>)
      outs(%v, %s : tensor<?x8x64xf16>, tensor<?x8xf32>) -> tensor<?x8x64xf16>, tensor<?x8xf32>
  return %b#0, %b#1 : tensor<?x8x64xf16>, tensor<?x8xf32>
}

// On memrefs they write their destinations: nothing is removed or merged,
// even with no users and identical operands.
// CHECK-LABEL: func.func @memref_ops_write
// CHECK-COUNT-2: cascade.merge_state ins
// CHECK: cascade.paged_attention
// CHECK: return
func.func @memref_ops_write(%va: memref<?x8x64xf16>, %sa: memref<?x8xf32>,
                            %v: memref<?x8x64xf16>, %s: memref<?x8xf32>,
                            %q: memref<?x8x64xf16>, %cache: memref<?x2x16x8x64xf16>,
                            %kp: memref<?xi32>, %ki: memref<?xi32>, %kl: memref<?xi32>) {
  cascade.merge_state ins(%va, %sa, %va, %sa : memref<?x8x64xf16>, memref<?x8xf32>, memref<?x8x64xf16>, memref<?x8xf32>)
      outs(%v, %s : memref<?x8x64xf16>, memref<?x8xf32>)
  cascade.merge_state ins(%va, %sa, %va, %sa : memref<?x8x64xf16>, memref<?x8xf32>, memref<?x8x64xf16>, memref<?x8xf32>)
      outs(%v, %s : memref<?x8x64xf16>, memref<?x8xf32>)
  cascade.paged_attention q(%q : memref<?x8x64xf16>) kv(%cache : memref<?x2x16x8x64xf16>)
      kv_indptr(%kp : memref<?xi32>) kv_indices(%ki : memref<?xi32>) kv_last_page_len(%kl : memref<?xi32>)
      outs(%v, %s : memref<?x8x64xf16>, memref<?x8xf32>) {page_size = 16 : i64}
  return
}
