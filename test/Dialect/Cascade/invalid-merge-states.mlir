// RUN: cascade-opt %s -split-input-file -verify-diagnostics

// cascade.merge_states: [L, N, H, D] inputs to [L, H, D] outputs.

func.func @states_v_in_rank(%vin: tensor<4x8x64xf16>, %sin: tensor<4x2x8xf32>, %v: tensor<4x8x64xf16>, %s: tensor<4x8xf32>) {
  // expected-error@+1 {{'v_in' must have rank 4 ([L, N, H, D]), got rank 3}}
  %r:2 = cascade.merge_states ins(%vin, %sin : tensor<4x8x64xf16>, tensor<4x2x8xf32>)
      outs(%v, %s : tensor<4x8x64xf16>, tensor<4x8xf32>) -> tensor<4x8x64xf16>, tensor<4x8xf32>
  return
}

// -----

func.func @states_s_in_rank(%vin: tensor<4x2x8x64xf16>, %sin: tensor<4x8xf32>, %v: tensor<4x8x64xf16>, %s: tensor<4x8xf32>) {
  // expected-error@+1 {{'s_in' must have rank 3 ([L, N, H]), got rank 2}}
  %r:2 = cascade.merge_states ins(%vin, %sin : tensor<4x2x8x64xf16>, tensor<4x8xf32>)
      outs(%v, %s : tensor<4x8x64xf16>, tensor<4x8xf32>) -> tensor<4x8x64xf16>, tensor<4x8xf32>
  return
}

// -----

func.func @states_v_in_element_type(%vin: tensor<4x2x8x64xbf16>, %sin: tensor<4x2x8xf32>, %v: tensor<4x8x64xf16>, %s: tensor<4x8xf32>) {
  // expected-error@+1 {{'v_in' element type 'bf16' does not match 'v' element type 'f16'}}
  %r:2 = cascade.merge_states ins(%vin, %sin : tensor<4x2x8x64xbf16>, tensor<4x2x8xf32>)
      outs(%v, %s : tensor<4x8x64xf16>, tensor<4x8xf32>) -> tensor<4x8x64xf16>, tensor<4x8xf32>
  return
}

// -----

func.func @states_s_in_element_type(%vin: tensor<4x2x8x64xf16>, %sin: tensor<4x2x8xf16>, %v: tensor<4x8x64xf16>, %s: tensor<4x8xf32>) {
  // expected-error@+1 {{'s_in' element type must be f32, got 'f16'}}
  %r:2 = cascade.merge_states ins(%vin, %sin : tensor<4x2x8x64xf16>, tensor<4x2x8xf16>)
      outs(%v, %s : tensor<4x8x64xf16>, tensor<4x8xf32>) -> tensor<4x8x64xf16>, tensor<4x8xf32>
  return
}

// -----

func.func @states_s_in_num_states(%vin: tensor<4x2x8x64xf16>, %sin: tensor<4x3x8xf32>, %v: tensor<4x8x64xf16>, %s: tensor<4x8xf32>) {
  // expected-error@+1 {{'s_in' shape [4, 3, 8] does not match 'v_in' shape [4, 2, 8, 64] in dim 1}}
  %r:2 = cascade.merge_states ins(%vin, %sin : tensor<4x2x8x64xf16>, tensor<4x3x8xf32>)
      outs(%v, %s : tensor<4x8x64xf16>, tensor<4x8xf32>) -> tensor<4x8x64xf16>, tensor<4x8xf32>
  return
}

// -----

func.func @states_s_in_heads(%vin: tensor<4x2x8x64xf16>, %sin: tensor<4x2x16xf32>, %v: tensor<4x8x64xf16>, %s: tensor<4x8xf32>) {
  // expected-error@+1 {{'s_in' shape [4, 2, 16] does not match 'v_in' shape [4, 2, 8, 64] in dim 2}}
  %r:2 = cascade.merge_states ins(%vin, %sin : tensor<4x2x8x64xf16>, tensor<4x2x16xf32>)
      outs(%v, %s : tensor<4x8x64xf16>, tensor<4x8xf32>) -> tensor<4x8x64xf16>, tensor<4x8xf32>
  return
}

// -----

func.func @states_v_heads(%vin: tensor<4x2x8x64xf16>, %sin: tensor<4x2x8xf32>, %v: tensor<4x16x64xf16>, %s: tensor<4x16xf32>) {
  // expected-error@+1 {{'v' shape [4, 16, 64] does not match 'v_in' shape [4, 2, 8, 64] ([L, N, H, D] -> [L, H, D])}}
  %r:2 = cascade.merge_states ins(%vin, %sin : tensor<4x2x8x64xf16>, tensor<4x2x8xf32>)
      outs(%v, %s : tensor<4x16x64xf16>, tensor<4x16xf32>) -> tensor<4x16x64xf16>, tensor<4x16xf32>
  return
}

// -----

func.func @states_v_rows(%vin: tensor<4x2x8x64xf16>, %sin: tensor<4x2x8xf32>, %v: tensor<5x8x64xf16>, %s: tensor<5x8xf32>) {
  // expected-error@+1 {{'v' shape [5, 8, 64] does not match 'v_in' shape [4, 2, 8, 64] ([L, N, H, D] -> [L, H, D])}}
  %r:2 = cascade.merge_states ins(%vin, %sin : tensor<4x2x8x64xf16>, tensor<4x2x8xf32>)
      outs(%v, %s : tensor<5x8x64xf16>, tensor<5x8xf32>) -> tensor<5x8x64xf16>, tensor<5x8xf32>
  return
}

// -----

func.func @states_v_head_dim(%vin: tensor<4x2x8x64xf16>, %sin: tensor<4x2x8xf32>, %v: tensor<4x8x128xf16>, %s: tensor<4x8xf32>) {
  // expected-error@+1 {{'v' shape [4, 8, 128] does not match 'v_in' shape [4, 2, 8, 64] ([L, N, H, D] -> [L, H, D])}}
  %r:2 = cascade.merge_states ins(%vin, %sin : tensor<4x2x8x64xf16>, tensor<4x2x8xf32>)
      outs(%v, %s : tensor<4x8x128xf16>, tensor<4x8xf32>) -> tensor<4x8x128xf16>, tensor<4x8xf32>
  return
}

// -----

func.func @states_dest_s_element_type(%vin: tensor<4x2x8x64xf16>, %sin: tensor<4x2x8xf32>, %v: tensor<4x8x64xf16>, %s: tensor<4x8xf16>) {
  // expected-error@+1 {{'s' element type must be f32, got 'f16'}}
  %r:2 = cascade.merge_states ins(%vin, %sin : tensor<4x2x8x64xf16>, tensor<4x2x8xf32>)
      outs(%v, %s : tensor<4x8x64xf16>, tensor<4x8xf16>) -> tensor<4x8x64xf16>, tensor<4x8xf16>
  return
}

// -----

func.func @states_dest_v_element_type(%vin: tensor<4x2x8x64xf64>, %sin: tensor<4x2x8xf32>, %v: tensor<4x8x64xf64>, %s: tensor<4x8xf32>) {
  // expected-error@+1 {{'v' element type must be f16, bf16 or f32, got 'f64'}}
  %r:2 = cascade.merge_states ins(%vin, %sin : tensor<4x2x8x64xf64>, tensor<4x2x8xf32>)
      outs(%v, %s : tensor<4x8x64xf64>, tensor<4x8xf32>) -> tensor<4x8x64xf64>, tensor<4x8xf32>
  return
}
