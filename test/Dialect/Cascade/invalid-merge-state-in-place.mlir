// RUN: cascade-opt %s -split-input-file -verify-diagnostics

// cascade.merge_state_in_place: states and the optional (strided) mask.

func.func @in_place_v_other_rank(%vo: tensor<4x512xf16>, %so: tensor<4x8xf32>, %v: tensor<4x8x64xf16>, %s: tensor<4x8xf32>) {
  // expected-error@+1 {{'v_other' must have rank 3 ([L, H, D]), got rank 2}}
  %r:2 = cascade.merge_state_in_place ins(%vo, %so : tensor<4x512xf16>, tensor<4x8xf32>)
      outs(%v, %s : tensor<4x8x64xf16>, tensor<4x8xf32>) -> tensor<4x8x64xf16>, tensor<4x8xf32>
  return
}

// -----

func.func @in_place_s_other_element_type(%vo: tensor<4x8x64xf16>, %so: tensor<4x8xf16>, %v: tensor<4x8x64xf16>, %s: tensor<4x8xf32>) {
  // expected-error@+1 {{'s_other' element type must be f32, got 'f16'}}
  %r:2 = cascade.merge_state_in_place ins(%vo, %so : tensor<4x8x64xf16>, tensor<4x8xf16>)
      outs(%v, %s : tensor<4x8x64xf16>, tensor<4x8xf32>) -> tensor<4x8x64xf16>, tensor<4x8xf32>
  return
}

// -----

func.func @in_place_v_s_mismatch(%vo: tensor<4x8x64xf16>, %so: tensor<4x8xf32>, %v: tensor<4x8x64xf16>, %s: tensor<4x4xf32>) {
  // expected-error@+1 {{'s' shape [4, 4] does not match 'v' shape [4, 8, 64] in dim 1}}
  %r:2 = cascade.merge_state_in_place ins(%vo, %so : tensor<4x8x64xf16>, tensor<4x8xf32>)
      outs(%v, %s : tensor<4x8x64xf16>, tensor<4x4xf32>) -> tensor<4x8x64xf16>, tensor<4x4xf32>
  return
}

// -----

func.func @in_place_element_type_mismatch(%vo: tensor<4x8x64xbf16>, %so: tensor<4x8xf32>, %v: tensor<4x8x64xf16>, %s: tensor<4x8xf32>) {
  // expected-error@+1 {{'v_other' element type 'bf16' does not match 'v' element type 'f16'}}
  %r:2 = cascade.merge_state_in_place ins(%vo, %so : tensor<4x8x64xbf16>, tensor<4x8xf32>)
      outs(%v, %s : tensor<4x8x64xf16>, tensor<4x8xf32>) -> tensor<4x8x64xf16>, tensor<4x8xf32>
  return
}

// -----

func.func @in_place_v_shape_mismatch(%vo: tensor<4x16x64xf16>, %so: tensor<4x16xf32>, %v: tensor<4x8x64xf16>, %s: tensor<4x8xf32>) {
  // expected-error@+1 {{'v_other' shape [4, 16, 64] does not match 'v' shape [4, 8, 64]}}
  %r:2 = cascade.merge_state_in_place ins(%vo, %so : tensor<4x16x64xf16>, tensor<4x16xf32>)
      outs(%v, %s : tensor<4x8x64xf16>, tensor<4x8xf32>) -> tensor<4x8x64xf16>, tensor<4x8xf32>
  return
}

// -----

func.func @in_place_s_shape_mismatch(%vo: tensor<?x8x64xf16>, %so: tensor<3x8xf32>, %v: tensor<4x8x64xf16>, %s: tensor<4x8xf32>) {
  // expected-error@+1 {{'s_other' shape [3, 8] does not match 's' shape [4, 8]}}
  %r:2 = cascade.merge_state_in_place ins(%vo, %so : tensor<?x8x64xf16>, tensor<3x8xf32>)
      outs(%v, %s : tensor<4x8x64xf16>, tensor<4x8xf32>) -> tensor<4x8x64xf16>, tensor<4x8xf32>
  return
}

// -----

func.func @mask_rank(%vo: tensor<4x8x64xf16>, %so: tensor<4x8xf32>, %m: tensor<4x1xi8>, %v: tensor<4x8x64xf16>, %s: tensor<4x8xf32>) {
  // expected-error@+1 {{'mask' must be 1-D ([L]), got rank 2}}
  %r:2 = cascade.merge_state_in_place ins(%vo, %so : tensor<4x8x64xf16>, tensor<4x8xf32>)
      mask(%m : tensor<4x1xi8>)
      outs(%v, %s : tensor<4x8x64xf16>, tensor<4x8xf32>) -> tensor<4x8x64xf16>, tensor<4x8xf32>
  return
}

// -----

func.func @mask_element_type(%vo: tensor<4x8x64xf16>, %so: tensor<4x8xf32>, %m: tensor<4xi32>, %v: tensor<4x8x64xf16>, %s: tensor<4x8xf32>) {
  // expected-error@+1 {{'mask' element type must be i1 or i8, got 'i32'}}
  %r:2 = cascade.merge_state_in_place ins(%vo, %so : tensor<4x8x64xf16>, tensor<4x8xf32>)
      mask(%m : tensor<4xi32>)
      outs(%v, %s : tensor<4x8x64xf16>, tensor<4x8xf32>) -> tensor<4x8x64xf16>, tensor<4x8xf32>
  return
}

// -----

func.func @mask_rows(%vo: tensor<4x8x64xf16>, %so: tensor<4x8xf32>, %m: tensor<5xi1>, %v: tensor<4x8x64xf16>, %s: tensor<4x8xf32>) {
  // expected-error@+1 {{'mask' has 5 entries but 'v' has 4 rows}}
  %r:2 = cascade.merge_state_in_place ins(%vo, %so : tensor<4x8x64xf16>, tensor<4x8xf32>)
      mask(%m : tensor<5xi1>)
      outs(%v, %s : tensor<4x8x64xf16>, tensor<4x8xf32>) -> tensor<4x8x64xf16>, tensor<4x8xf32>
  return
}

// -----

func.func @mask_rows_memref(%vo: memref<4x8x64xf16>, %so: memref<4x8xf32>, %m: memref<3xi8, strided<[?]>>, %v: memref<4x8x64xf16>, %s: memref<4x8xf32>) {
  // expected-error@+1 {{'mask' has 3 entries but 'v' has 4 rows}}
  cascade.merge_state_in_place ins(%vo, %so : memref<4x8x64xf16>, memref<4x8xf32>)
      mask(%m : memref<3xi8, strided<[?]>>)
      outs(%v, %s : memref<4x8x64xf16>, memref<4x8xf32>)
  return
}

// -----

func.func @mask_tensor_on_memrefs(%vo: memref<4x8x64xf16>, %so: memref<4x8xf32>, %m: tensor<4xi8>, %v: memref<4x8x64xf16>, %s: memref<4x8xf32>) {
  // expected-error@+1 {{operands must be all tensors or all memrefs, not a mix}}
  cascade.merge_state_in_place ins(%vo, %so : memref<4x8x64xf16>, memref<4x8xf32>)
      mask(%m : tensor<4xi8>)
      outs(%v, %s : memref<4x8x64xf16>, memref<4x8xf32>)
  return
}
