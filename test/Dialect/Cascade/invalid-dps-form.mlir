// RUN: cascade-opt %s -split-input-file -verify-diagnostics

// Destination-passing form shared by every cascade op: all tensors (two results typed like the destinations) or all memrefs (no results).

func.func @tensor_no_results(%vo: tensor<4x8x64xf16>, %so: tensor<4x8xf32>, %v: tensor<4x8x64xf16>, %s: tensor<4x8xf32>) {
  // expected-error@+1 {{on tensors must have 2 results, got 0}}
  cascade.merge_state_in_place ins(%vo, %so : tensor<4x8x64xf16>, tensor<4x8xf32>)
      outs(%v, %s : tensor<4x8x64xf16>, tensor<4x8xf32>)
  return
}

// -----

func.func @tensor_one_result(%vo: tensor<4x8x64xf16>, %so: tensor<4x8xf32>, %v: tensor<4x8x64xf16>, %s: tensor<4x8xf32>) {
  // expected-error@+1 {{on tensors must have 2 results, got 1}}
  %r = cascade.merge_state_in_place ins(%vo, %so : tensor<4x8x64xf16>, tensor<4x8xf32>)
      outs(%v, %s : tensor<4x8x64xf16>, tensor<4x8xf32>) -> tensor<4x8x64xf16>
  return
}

// -----

func.func @memref_results(%vo: memref<4x8x64xf16>, %so: memref<4x8xf32>, %v: memref<4x8x64xf16>, %s: memref<4x8xf32>) {
  // expected-error@+1 {{on memrefs must have no results, got 2}}
  %r:2 = cascade.merge_state_in_place ins(%vo, %so : memref<4x8x64xf16>, memref<4x8xf32>)
      outs(%v, %s : memref<4x8x64xf16>, memref<4x8xf32>) -> tensor<4x8x64xf16>, tensor<4x8xf32>
  return
}

// -----

func.func @result_type_mismatch(%vo: tensor<4x8x64xf16>, %so: tensor<4x8xf32>, %v: tensor<4x8x64xf16>, %s: tensor<4x8xf32>) {
  // expected-error@+1 {{result #1 type 'tensor<4x?xf32>' does not match its destination type 'tensor<4x8xf32>'}}
  %r:2 = cascade.merge_state_in_place ins(%vo, %so : tensor<4x8x64xf16>, tensor<4x8xf32>)
      outs(%v, %s : tensor<4x8x64xf16>, tensor<4x8xf32>) -> tensor<4x8x64xf16>, tensor<4x?xf32>
  return
}

// -----

func.func @result0_type_mismatch(%vo: tensor<4x8x64xf16>, %so: tensor<4x8xf32>, %v: tensor<4x8x64xf16>, %s: tensor<4x8xf32>) {
  // expected-error@+1 {{result #0 type 'tensor<4x8x64xbf16>' does not match its destination type 'tensor<4x8x64xf16>'}}
  %r:2 = cascade.merge_state_in_place ins(%vo, %so : tensor<4x8x64xf16>, tensor<4x8xf32>)
      outs(%v, %s : tensor<4x8x64xf16>, tensor<4x8xf32>) -> tensor<4x8x64xbf16>, tensor<4x8xf32>
  return
}

// -----

func.func @mix_dest_memref(%vo: tensor<4x8x64xf16>, %so: tensor<4x8xf32>, %v: tensor<4x8x64xf16>, %s: memref<4x8xf32>) {
  // expected-error@+1 {{operands must be all tensors or all memrefs, not a mix}}
  cascade.merge_state_in_place ins(%vo, %so : tensor<4x8x64xf16>, tensor<4x8xf32>)
      outs(%v, %s : tensor<4x8x64xf16>, memref<4x8xf32>)
  return
}

// -----

func.func @mix_input_memref(%vo: memref<4x8x64xf16>, %so: tensor<4x8xf32>, %v: tensor<4x8x64xf16>, %s: tensor<4x8xf32>) {
  // expected-error@+1 {{operands must be all tensors or all memrefs, not a mix}}
  %r:2 = cascade.merge_state_in_place ins(%vo, %so : memref<4x8x64xf16>, tensor<4x8xf32>)
      outs(%v, %s : tensor<4x8x64xf16>, tensor<4x8xf32>) -> tensor<4x8x64xf16>, tensor<4x8xf32>
  return
}

// -----

func.func @paged_mix(%q: tensor<4x32x128xf16>, %kv0: memref<?x2x16x8x128xf16>, %kvp: tensor<?xi32>, %kvi: tensor<?xi32>, %last: tensor<?xi32>, %o: tensor<4x32x128xf16>, %lse: tensor<4x32xf32>) {
  // expected-error@+1 {{operands must be all tensors or all memrefs, not a mix}}
  %r:2 = cascade.paged_attention q(%q : tensor<4x32x128xf16>) kv(%kv0 : memref<?x2x16x8x128xf16>)
      kv_indptr(%kvp : tensor<?xi32>) kv_indices(%kvi : tensor<?xi32>) kv_last_page_len(%last : tensor<?xi32>)
      outs(%o, %lse : tensor<4x32x128xf16>, tensor<4x32xf32>) {page_size = 16 : i64}
      -> tensor<4x32x128xf16>, tensor<4x32xf32>
  return
}

// -----

func.func @paged_memref_results(%q: memref<4x32x128xf16>, %kv0: memref<?x2x16x8x128xf16>, %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>, %o: memref<4x32x128xf16>, %lse: memref<4x32xf32>) {
  // expected-error@+1 {{on memrefs must have no results, got 2}}
  %r:2 = cascade.paged_attention q(%q : memref<4x32x128xf16>) kv(%kv0 : memref<?x2x16x8x128xf16>)
      kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>) kv_last_page_len(%last : memref<?xi32>)
      outs(%o, %lse : memref<4x32x128xf16>, memref<4x32xf32>) {page_size = 16 : i64}
      -> tensor<4x32x128xf16>, tensor<4x32xf32>
  return
}

// -----

func.func @paged_tensor_no_results(%q: tensor<4x32x128xf16>, %kv0: tensor<?x2x16x8x128xf16>, %kvp: tensor<?xi32>, %kvi: tensor<?xi32>, %last: tensor<?xi32>, %o: tensor<4x32x128xf16>, %lse: tensor<4x32xf32>) {
  // expected-error@+1 {{on tensors must have 2 results, got 0}}
  cascade.paged_attention q(%q : tensor<4x32x128xf16>) kv(%kv0 : tensor<?x2x16x8x128xf16>)
      kv_indptr(%kvp : tensor<?xi32>) kv_indices(%kvi : tensor<?xi32>) kv_last_page_len(%last : tensor<?xi32>)
      outs(%o, %lse : tensor<4x32x128xf16>, tensor<4x32xf32>) {page_size = 16 : i64}
  return
}

// -----

func.func @merge_states_mix(%vin: tensor<4x2x8x64xf16>, %sin: tensor<4x2x8xf32>, %v: memref<4x8x64xf16>, %s: memref<4x8xf32>) {
  // expected-error@+1 {{operands must be all tensors or all memrefs, not a mix}}
  cascade.merge_states ins(%vin, %sin : tensor<4x2x8x64xf16>, tensor<4x2x8xf32>)
      outs(%v, %s : memref<4x8x64xf16>, memref<4x8xf32>)
  return
}

// -----

func.func @merge_state_tensor_no_results(%va: tensor<4x8x64xf16>, %sa: tensor<4x8xf32>, %v: tensor<4x8x64xf16>, %s: tensor<4x8xf32>) {
  // expected-error@+1 {{on tensors must have 2 results, got 0}}
  cascade.merge_state ins(%va, %sa, %va, %sa : tensor<4x8x64xf16>, tensor<4x8xf32>, tensor<4x8x64xf16>, tensor<4x8xf32>)
      outs(%v, %s : tensor<4x8x64xf16>, tensor<4x8xf32>)
  return
}

// -----

func.func @generic_three_results(%v: tensor<4x8x64xf16>, %s: tensor<4x8xf32>) {
  // expected-error@+1 {{on tensors must have 2 results, got 3}}
  %r:3 = "cascade.merge_state_in_place"(%v, %s, %v, %s)
      : (tensor<4x8x64xf16>, tensor<4x8xf32>, tensor<4x8x64xf16>, tensor<4x8xf32>)
      -> (tensor<4x8x64xf16>, tensor<4x8xf32>, tensor<4x8xf32>)
  return
}

// -----

func.func @unranked_tensor(%vo: tensor<*xf16>, %so: tensor<4x8xf32>, %v: tensor<4x8x64xf16>, %s: tensor<4x8xf32>) {
  // expected-error@+1 {{operand #0 must be ranked tensor or strided memref, but got 'tensor<*xf16>'}}
  %r:2 = "cascade.merge_state_in_place"(%vo, %so, %v, %s)
      : (tensor<*xf16>, tensor<4x8xf32>, tensor<4x8x64xf16>, tensor<4x8xf32>)
      -> (tensor<4x8x64xf16>, tensor<4x8xf32>)
  return
}

// -----

func.func @vector_operand(%vo: vector<4x8x64xf16>, %so: tensor<4x8xf32>, %v: tensor<4x8x64xf16>, %s: tensor<4x8xf32>) {
  // expected-error@+1 {{operand #0 must be ranked tensor or strided memref, but got 'vector<4x8x64xf16>'}}
  %r:2 = "cascade.merge_state_in_place"(%vo, %so, %v, %s)
      : (vector<4x8x64xf16>, tensor<4x8xf32>, tensor<4x8x64xf16>, tensor<4x8xf32>)
      -> (tensor<4x8x64xf16>, tensor<4x8xf32>)
  return
}

// -----

func.func @non_strided_memref(%vo: memref<4x8x64xf16>, %so: memref<4x8xf32, affine_map<(d0, d1) -> (d0 floordiv 2, d1)>>, %v: memref<4x8x64xf16>, %s: memref<4x8xf32>) {
  // expected-error@+1 {{operand #1 must be ranked tensor or strided memref}}
  cascade.merge_state_in_place ins(%vo, %so : memref<4x8x64xf16>, memref<4x8xf32, affine_map<(d0, d1) -> (d0 floordiv 2, d1)>>)
      outs(%v, %s : memref<4x8x64xf16>, memref<4x8xf32>)
  return
}

// -----

func.func @memref_result_type(%vo: tensor<4x8x64xf16>, %so: tensor<4x8xf32>, %v: tensor<4x8x64xf16>, %s: tensor<4x8xf32>) {
  // expected-error@+1 {{result #0 must be variadic of ranked tensor of any type values, but got 'memref<4x8x64xf16>'}}
  %r:2 = "cascade.merge_state_in_place"(%vo, %so, %v, %s)
      : (tensor<4x8x64xf16>, tensor<4x8xf32>, tensor<4x8x64xf16>, tensor<4x8xf32>)
      -> (memref<4x8x64xf16>, memref<4x8xf32>)
  return
}
