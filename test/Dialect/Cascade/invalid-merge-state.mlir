// RUN: cascade-opt %s -split-input-file -verify-diagnostics

// cascade.merge_state: state ranks, element types and shapes.

func.func @v_a_rank(%va: tensor<4x512xf16>, %sa: tensor<4x8xf32>, %vb: tensor<4x8x64xf16>, %sb: tensor<4x8xf32>, %v: tensor<4x8x64xf16>, %s: tensor<4x8xf32>) {
  // expected-error@+1 {{'v_a' must have rank 3 ([L, H, D]), got rank 2}}
  %r:2 = cascade.merge_state ins(%va, %sa, %vb, %sb : tensor<4x512xf16>, tensor<4x8xf32>, tensor<4x8x64xf16>, tensor<4x8xf32>)
      outs(%v, %s : tensor<4x8x64xf16>, tensor<4x8xf32>) -> tensor<4x8x64xf16>, tensor<4x8xf32>
  return
}

// -----

func.func @s_a_rank(%va: tensor<4x8x64xf16>, %sa: tensor<4x8x1xf32>, %vb: tensor<4x8x64xf16>, %sb: tensor<4x8xf32>, %v: tensor<4x8x64xf16>, %s: tensor<4x8xf32>) {
  // expected-error@+1 {{'s_a' must have rank 2 ([L, H]), got rank 3}}
  %r:2 = cascade.merge_state ins(%va, %sa, %vb, %sb : tensor<4x8x64xf16>, tensor<4x8x1xf32>, tensor<4x8x64xf16>, tensor<4x8xf32>)
      outs(%v, %s : tensor<4x8x64xf16>, tensor<4x8xf32>) -> tensor<4x8x64xf16>, tensor<4x8xf32>
  return
}

// -----

func.func @v_a_element_type(%va: tensor<4x8x64xf64>, %sa: tensor<4x8xf32>, %vb: tensor<4x8x64xf16>, %sb: tensor<4x8xf32>, %v: tensor<4x8x64xf16>, %s: tensor<4x8xf32>) {
  // expected-error@+1 {{'v_a' element type must be f16, bf16 or f32, got 'f64'}}
  %r:2 = cascade.merge_state ins(%va, %sa, %vb, %sb : tensor<4x8x64xf64>, tensor<4x8xf32>, tensor<4x8x64xf16>, tensor<4x8xf32>)
      outs(%v, %s : tensor<4x8x64xf16>, tensor<4x8xf32>) -> tensor<4x8x64xf16>, tensor<4x8xf32>
  return
}

// -----

func.func @s_a_element_type(%va: tensor<4x8x64xf16>, %sa: tensor<4x8xf16>, %vb: tensor<4x8x64xf16>, %sb: tensor<4x8xf32>, %v: tensor<4x8x64xf16>, %s: tensor<4x8xf32>) {
  // expected-error@+1 {{'s_a' element type must be f32, got 'f16'}}
  %r:2 = cascade.merge_state ins(%va, %sa, %vb, %sb : tensor<4x8x64xf16>, tensor<4x8xf16>, tensor<4x8x64xf16>, tensor<4x8xf32>)
      outs(%v, %s : tensor<4x8x64xf16>, tensor<4x8xf32>) -> tensor<4x8x64xf16>, tensor<4x8xf32>
  return
}

// -----

func.func @s_a_rows(%va: tensor<4x8x64xf16>, %sa: tensor<5x8xf32>, %vb: tensor<4x8x64xf16>, %sb: tensor<4x8xf32>, %v: tensor<4x8x64xf16>, %s: tensor<4x8xf32>) {
  // expected-error@+1 {{'s_a' shape [5, 8] does not match 'v_a' shape [4, 8, 64] in dim 0}}
  %r:2 = cascade.merge_state ins(%va, %sa, %vb, %sb : tensor<4x8x64xf16>, tensor<5x8xf32>, tensor<4x8x64xf16>, tensor<4x8xf32>)
      outs(%v, %s : tensor<4x8x64xf16>, tensor<4x8xf32>) -> tensor<4x8x64xf16>, tensor<4x8xf32>
  return
}

// -----

func.func @s_a_heads(%va: tensor<4x8x64xf16>, %sa: tensor<4x16xf32>, %vb: tensor<4x8x64xf16>, %sb: tensor<4x8xf32>, %v: tensor<4x8x64xf16>, %s: tensor<4x8xf32>) {
  // expected-error@+1 {{'s_a' shape [4, 16] does not match 'v_a' shape [4, 8, 64] in dim 1}}
  %r:2 = cascade.merge_state ins(%va, %sa, %vb, %sb : tensor<4x8x64xf16>, tensor<4x16xf32>, tensor<4x8x64xf16>, tensor<4x8xf32>)
      outs(%v, %s : tensor<4x8x64xf16>, tensor<4x8xf32>) -> tensor<4x8x64xf16>, tensor<4x8xf32>
  return
}

// -----

func.func @v_b_rank(%va: tensor<4x8x64xf16>, %sa: tensor<4x8xf32>, %vb: tensor<4x8x64x1xf16>, %sb: tensor<4x8xf32>, %v: tensor<4x8x64xf16>, %s: tensor<4x8xf32>) {
  // expected-error@+1 {{'v_b' must have rank 3 ([L, H, D]), got rank 4}}
  %r:2 = cascade.merge_state ins(%va, %sa, %vb, %sb : tensor<4x8x64xf16>, tensor<4x8xf32>, tensor<4x8x64x1xf16>, tensor<4x8xf32>)
      outs(%v, %s : tensor<4x8x64xf16>, tensor<4x8xf32>) -> tensor<4x8x64xf16>, tensor<4x8xf32>
  return
}

// -----

func.func @s_b_element_type(%va: tensor<4x8x64xf16>, %sa: tensor<4x8xf32>, %vb: tensor<4x8x64xf16>, %sb: tensor<4x8xbf16>, %v: tensor<4x8x64xf16>, %s: tensor<4x8xf32>) {
  // expected-error@+1 {{'s_b' element type must be f32, got 'bf16'}}
  %r:2 = cascade.merge_state ins(%va, %sa, %vb, %sb : tensor<4x8x64xf16>, tensor<4x8xf32>, tensor<4x8x64xf16>, tensor<4x8xbf16>)
      outs(%v, %s : tensor<4x8x64xf16>, tensor<4x8xf32>) -> tensor<4x8x64xf16>, tensor<4x8xf32>
  return
}

// -----

func.func @dest_v_element_type(%va: tensor<4x8x64xf16>, %sa: tensor<4x8xf32>, %vb: tensor<4x8x64xf16>, %sb: tensor<4x8xf32>, %v: tensor<4x8x64xi16>, %s: tensor<4x8xf32>) {
  // expected-error@+1 {{'v' element type must be f16, bf16 or f32, got 'i16'}}
  %r:2 = cascade.merge_state ins(%va, %sa, %vb, %sb : tensor<4x8x64xf16>, tensor<4x8xf32>, tensor<4x8x64xf16>, tensor<4x8xf32>)
      outs(%v, %s : tensor<4x8x64xi16>, tensor<4x8xf32>) -> tensor<4x8x64xi16>, tensor<4x8xf32>
  return
}

// -----

func.func @dest_s_rank(%va: tensor<4x8x64xf16>, %sa: tensor<4x8xf32>, %vb: tensor<4x8x64xf16>, %sb: tensor<4x8xf32>, %v: tensor<4x8x64xf16>, %s: tensor<4xf32>) {
  // expected-error@+1 {{'s' must have rank 2 ([L, H]), got rank 1}}
  %r:2 = cascade.merge_state ins(%va, %sa, %vb, %sb : tensor<4x8x64xf16>, tensor<4x8xf32>, tensor<4x8x64xf16>, tensor<4x8xf32>)
      outs(%v, %s : tensor<4x8x64xf16>, tensor<4xf32>) -> tensor<4x8x64xf16>, tensor<4xf32>
  return
}

// -----

func.func @v_b_element_type_mismatch(%va: tensor<4x8x64xf16>, %sa: tensor<4x8xf32>, %vb: tensor<4x8x64xbf16>, %sb: tensor<4x8xf32>, %v: tensor<4x8x64xf16>, %s: tensor<4x8xf32>) {
  // expected-error@+1 {{'v_b' element type 'bf16' does not match 'v_a' element type 'f16'}}
  %r:2 = cascade.merge_state ins(%va, %sa, %vb, %sb : tensor<4x8x64xf16>, tensor<4x8xf32>, tensor<4x8x64xbf16>, tensor<4x8xf32>)
      outs(%v, %s : tensor<4x8x64xf16>, tensor<4x8xf32>) -> tensor<4x8x64xf16>, tensor<4x8xf32>
  return
}

// -----

func.func @v_b_shape_mismatch(%va: tensor<4x8x64xf16>, %sa: tensor<4x8xf32>, %vb: tensor<4x8x128xf16>, %sb: tensor<4x8xf32>, %v: tensor<4x8x64xf16>, %s: tensor<4x8xf32>) {
  // expected-error@+1 {{'v_b' shape [4, 8, 128] does not match 'v_a' shape [4, 8, 64]}}
  %r:2 = cascade.merge_state ins(%va, %sa, %vb, %sb : tensor<4x8x64xf16>, tensor<4x8xf32>, tensor<4x8x128xf16>, tensor<4x8xf32>)
      outs(%v, %s : tensor<4x8x64xf16>, tensor<4x8xf32>) -> tensor<4x8x64xf16>, tensor<4x8xf32>
  return
}

// -----

func.func @v_element_type_mismatch(%va: tensor<4x8x64xf16>, %sa: tensor<4x8xf32>, %vb: tensor<4x8x64xf16>, %sb: tensor<4x8xf32>, %v: tensor<4x8x64xf32>, %s: tensor<4x8xf32>) {
  // expected-error@+1 {{'v' element type 'f32' does not match 'v_a' element type 'f16'}}
  %r:2 = cascade.merge_state ins(%va, %sa, %vb, %sb : tensor<4x8x64xf16>, tensor<4x8xf32>, tensor<4x8x64xf16>, tensor<4x8xf32>)
      outs(%v, %s : tensor<4x8x64xf32>, tensor<4x8xf32>) -> tensor<4x8x64xf32>, tensor<4x8xf32>
  return
}

// -----

func.func @v_shape_mismatch(%va: tensor<4x8x64xf16>, %sa: tensor<4x8xf32>, %vb: tensor<4x8x64xf16>, %sb: tensor<4x8xf32>, %v: tensor<4x8x32xf16>, %s: tensor<4x8xf32>) {
  // expected-error@+1 {{'v' shape [4, 8, 32] does not match 'v_a' shape [4, 8, 64]}}
  %r:2 = cascade.merge_state ins(%va, %sa, %vb, %sb : tensor<4x8x64xf16>, tensor<4x8xf32>, tensor<4x8x64xf16>, tensor<4x8xf32>)
      outs(%v, %s : tensor<4x8x32xf16>, tensor<4x8xf32>) -> tensor<4x8x32xf16>, tensor<4x8xf32>
  return
}

// -----

// Each s agrees with its own (dynamic) v, but s_a and s_b disagree.
func.func @s_b_shape_mismatch(%va: tensor<4x8x64xf16>, %sa: tensor<4x8xf32>, %vb: tensor<?x8x64xf16>, %sb: tensor<5x8xf32>, %v: tensor<4x8x64xf16>, %s: tensor<4x8xf32>) {
  // expected-error@+1 {{'s_b' shape [5, 8] does not match 's_a' shape [4, 8]}}
  %r:2 = cascade.merge_state ins(%va, %sa, %vb, %sb : tensor<4x8x64xf16>, tensor<4x8xf32>, tensor<?x8x64xf16>, tensor<5x8xf32>)
      outs(%v, %s : tensor<4x8x64xf16>, tensor<4x8xf32>) -> tensor<4x8x64xf16>, tensor<4x8xf32>
  return
}

// -----

func.func @s_shape_mismatch(%va: tensor<4x8x64xf16>, %sa: tensor<4x8xf32>, %vb: tensor<4x8x64xf16>, %sb: tensor<4x8xf32>, %v: tensor<?x8x64xf16>, %s: tensor<6x8xf32>) {
  // expected-error@+1 {{'s' shape [6, 8] does not match 's_a' shape [4, 8]}}
  %r:2 = cascade.merge_state ins(%va, %sa, %vb, %sb : tensor<4x8x64xf16>, tensor<4x8xf32>, tensor<4x8x64xf16>, tensor<4x8xf32>)
      outs(%v, %s : tensor<?x8x64xf16>, tensor<6x8xf32>) -> tensor<?x8x64xf16>, tensor<6x8xf32>
  return
}

// -----

func.func @memref_with_results(%va: memref<4x8x64xf16>, %sa: memref<4x8xf32>, %vb: memref<4x8x64xf16>, %sb: memref<4x8xf32>, %v: memref<4x8x64xf16>, %s: memref<4x8xf32>) {
  // expected-error@+1 {{on memrefs must have no results, got 2}}
  %r:2 = cascade.merge_state ins(%va, %sa, %vb, %sb : memref<4x8x64xf16>, memref<4x8xf32>, memref<4x8x64xf16>, memref<4x8xf32>)
      outs(%v, %s : memref<4x8x64xf16>, memref<4x8xf32>) -> tensor<4x8x64xf16>, tensor<4x8xf32>
  return
}
