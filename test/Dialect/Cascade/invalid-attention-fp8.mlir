// RUN: cascade-opt %s -split-input-file -verify-diagnostics

// fp8 KV caches (f8E4M3FN, f8E5M2): q is f16/bf16 or fp8 of the cache's
// element type (whose output is f16 or bf16), the pair agrees in its
// element type, and k_scale / v_scale dequantize fp8 caches only.

func.func @fp8_query_fp8_output(%q: tensor<4x32x128xf8E4M3FN>, %kv0: tensor<?x2x16x8x128xf8E4M3FN>, %kvp: tensor<?xi32>, %kvi: tensor<?xi32>, %last: tensor<?xi32>, %o: tensor<4x32x128xf8E4M3FN>, %lse: tensor<4x32xf32>) {
  // expected-error@+1 {{'o' of fp8 'q' must be f16 or bf16, got 'f8E4M3FN'}}
  %r:2 = cascade.paged_attention q(%q : tensor<4x32x128xf8E4M3FN>) kv(%kv0 : tensor<?x2x16x8x128xf8E4M3FN>)
      kv_indptr(%kvp : tensor<?xi32>) kv_indices(%kvi : tensor<?xi32>) kv_last_page_len(%last : tensor<?xi32>)
      outs(%o, %lse : tensor<4x32x128xf8E4M3FN>, tensor<4x32xf32>) {page_size = 16 : i64}
      -> tensor<4x32x128xf8E4M3FN>, tensor<4x32xf32>
  return
}

// -----

func.func @fp8_query_f16_cache(%q: tensor<4x32x128xf8E4M3FN>, %kv0: tensor<?x2x16x8x128xf16>, %kvp: tensor<?xi32>, %kvi: tensor<?xi32>, %last: tensor<?xi32>, %o: tensor<4x32x128xf16>, %lse: tensor<4x32xf32>) {
  // expected-error@+1 {{fp8 'q' ('f8E4M3FN') needs a KV cache of its element type, got 'f16'}}
  %r:2 = cascade.paged_attention q(%q : tensor<4x32x128xf8E4M3FN>) kv(%kv0 : tensor<?x2x16x8x128xf16>)
      kv_indptr(%kvp : tensor<?xi32>) kv_indices(%kvi : tensor<?xi32>) kv_last_page_len(%last : tensor<?xi32>)
      outs(%o, %lse : tensor<4x32x128xf16>, tensor<4x32xf32>) {page_size = 16 : i64}
      -> tensor<4x32x128xf16>, tensor<4x32xf32>
  return
}

// -----

func.func @fp8_query_other_fp8_cache(%q: tensor<4x32x128xf8E4M3FN>, %kv0: tensor<?x2x16x8x128xf8E5M2>, %kvp: tensor<?xi32>, %kvi: tensor<?xi32>, %last: tensor<?xi32>, %o: tensor<4x32x128xbf16>, %lse: tensor<4x32xf32>) {
  // expected-error@+1 {{fp8 'q' ('f8E4M3FN') needs a KV cache of its element type, got 'f8E5M2'}}
  %r:2 = cascade.paged_attention q(%q : tensor<4x32x128xf8E4M3FN>) kv(%kv0 : tensor<?x2x16x8x128xf8E5M2>)
      kv_indptr(%kvp : tensor<?xi32>) kv_indices(%kvi : tensor<?xi32>) kv_last_page_len(%last : tensor<?xi32>)
      outs(%o, %lse : tensor<4x32x128xbf16>, tensor<4x32xf32>) {page_size = 16 : i64}
      -> tensor<4x32x128xbf16>, tensor<4x32xf32>
  return
}

// -----

func.func @other_fp8_kv(%q: tensor<4x32x128xf16>, %kv0: tensor<?x2x16x8x128xf8E4M3FNUZ>, %kvp: tensor<?xi32>, %kvi: tensor<?xi32>, %last: tensor<?xi32>, %o: tensor<4x32x128xf16>, %lse: tensor<4x32xf32>) {
  // expected-error@+1 {{KV cache element type must be f16, bf16, f8E4M3FN or f8E5M2, got 'f8E4M3FNUZ'}}
  %r:2 = cascade.paged_attention q(%q : tensor<4x32x128xf16>) kv(%kv0 : tensor<?x2x16x8x128xf8E4M3FNUZ>)
      kv_indptr(%kvp : tensor<?xi32>) kv_indices(%kvi : tensor<?xi32>) kv_last_page_len(%last : tensor<?xi32>)
      outs(%o, %lse : tensor<4x32x128xf16>, tensor<4x32xf32>) {page_size = 16 : i64}
      -> tensor<4x32x128xf16>, tensor<4x32xf32>
  return
}

// -----

func.func @mixed_fp8_pair(%q: tensor<4x32x128xf16>, %k: tensor<?x16x8x128xf8E4M3FN>, %v: tensor<?x16x8x128xf8E5M2>, %kvp: tensor<?xi32>, %kvi: tensor<?xi32>, %last: tensor<?xi32>, %o: tensor<4x32x128xf16>, %lse: tensor<4x32xf32>) {
  // expected-error@+1 {{'v' element type 'f8E5M2' does not match 'k' element type 'f8E4M3FN'}}
  %r:2 = cascade.paged_attention q(%q : tensor<4x32x128xf16>) kv(%k, %v : tensor<?x16x8x128xf8E4M3FN>, tensor<?x16x8x128xf8E5M2>)
      kv_indptr(%kvp : tensor<?xi32>) kv_indices(%kvi : tensor<?xi32>) kv_last_page_len(%last : tensor<?xi32>)
      outs(%o, %lse : tensor<4x32x128xf16>, tensor<4x32xf32>) {page_size = 16 : i64}
      -> tensor<4x32x128xf16>, tensor<4x32xf32>
  return
}

// -----

func.func @fp8_output(%q: tensor<4x32x128xf16>, %kv0: tensor<?x2x16x8x128xf8E4M3FN>, %kvp: tensor<?xi32>, %kvi: tensor<?xi32>, %last: tensor<?xi32>, %o: tensor<4x32x128xf8E4M3FN>, %lse: tensor<4x32xf32>) {
  // expected-error@+1 {{'o' must be [4, 32, 128] 'f16' (q's rows, heads and element type, v's head_dim), got [4, 32, 128] 'f8E4M3FN'}}
  %r:2 = cascade.paged_attention q(%q : tensor<4x32x128xf16>) kv(%kv0 : tensor<?x2x16x8x128xf8E4M3FN>)
      kv_indptr(%kvp : tensor<?xi32>) kv_indices(%kvi : tensor<?xi32>) kv_last_page_len(%last : tensor<?xi32>)
      outs(%o, %lse : tensor<4x32x128xf8E4M3FN>, tensor<4x32xf32>) {page_size = 16 : i64}
      -> tensor<4x32x128xf8E4M3FN>, tensor<4x32xf32>
  return
}

// -----

func.func @k_scale_f16_kv(%q: tensor<4x32x128xf16>, %kv0: tensor<?x2x16x8x128xf16>, %kvp: tensor<?xi32>, %kvi: tensor<?xi32>, %last: tensor<?xi32>, %ks: f32, %o: tensor<4x32x128xf16>, %lse: tensor<4x32xf32>) {
  // expected-error@+1 {{'k_scale' dequantizes an fp8 KV cache (f8E4M3FN or f8E5M2), but the KV cache is 'f16'}}
  %r:2 = cascade.paged_attention q(%q : tensor<4x32x128xf16>) kv(%kv0 : tensor<?x2x16x8x128xf16>)
      kv_indptr(%kvp : tensor<?xi32>) kv_indices(%kvi : tensor<?xi32>) kv_last_page_len(%last : tensor<?xi32>)
      k_scale(%ks)
      outs(%o, %lse : tensor<4x32x128xf16>, tensor<4x32xf32>) {page_size = 16 : i64}
      -> tensor<4x32x128xf16>, tensor<4x32xf32>
  return
}

// -----

func.func @v_scale_bf16_kv(%q: tensor<4x32x128xbf16>, %kv0: tensor<?x2x16x8x128xbf16>, %kvp: tensor<?xi32>, %kvi: tensor<?xi32>, %last: tensor<?xi32>, %vs: f32, %o: tensor<4x32x128xbf16>, %lse: tensor<4x32xf32>) {
  // expected-error@+1 {{'v_scale' dequantizes an fp8 KV cache (f8E4M3FN or f8E5M2), but the KV cache is 'bf16'}}
  %r:2 = cascade.paged_attention q(%q : tensor<4x32x128xbf16>) kv(%kv0 : tensor<?x2x16x8x128xbf16>)
      kv_indptr(%kvp : tensor<?xi32>) kv_indices(%kvi : tensor<?xi32>) kv_last_page_len(%last : tensor<?xi32>)
      v_scale(%vs)
      outs(%o, %lse : tensor<4x32x128xbf16>, tensor<4x32xf32>) {page_size = 16 : i64}
      -> tensor<4x32x128xbf16>, tensor<4x32xf32>
  return
}

// -----

func.func @multi_level_scale_f16(%q: tensor<?x32x128xf16>, %cache: tensor<?x2x16x8x128xf16>, %qo0: tensor<2xi32>, %kp0: tensor<2xi32>, %ki0: tensor<?xi32>, %kl0: tensor<1xi32>, %ks: f32, %o: tensor<?x32x128xf16>, %lse: tensor<?x32xf32>) {
  // expected-error@+1 {{'k_scale' dequantizes an fp8 KV cache (f8E4M3FN or f8E5M2), but the KV cache is 'f16'}}
  %r:2 = cascade.multi_level_attention q(%q : tensor<?x32x128xf16>) kv(%cache : tensor<?x2x16x8x128xf16>)
      qo_indptr(%qo0 : tensor<2xi32>) kv_indptr(%kp0 : tensor<2xi32>) kv_indices(%ki0 : tensor<?xi32>)
      kv_last_page_len(%kl0 : tensor<1xi32>) k_scale(%ks)
      outs(%o, %lse : tensor<?x32x128xf16>, tensor<?x32xf32>) {page_size = 16 : i64}
      -> tensor<?x32x128xf16>, tensor<?x32xf32>
  return
}

// -----

// A constant k_scale must be positive: the tensor-core kernels fold it into
// the softmax's exponent scale.
func.func @k_scale_negative(%q: tensor<4x32x128xf16>, %kv0: tensor<?x2x16x8x128xf8E4M3FN>, %kvp: tensor<?xi32>, %kvi: tensor<?xi32>, %last: tensor<?xi32>, %o: tensor<4x32x128xf16>, %lse: tensor<4x32xf32>) {
  %ks = arith.constant -5.000000e-01 : f32
  // expected-error@+1 {{'k_scale' must be finite and > 0, got -5.000000e-01}}
  %r:2 = cascade.paged_attention q(%q : tensor<4x32x128xf16>) kv(%kv0 : tensor<?x2x16x8x128xf8E4M3FN>)
      kv_indptr(%kvp : tensor<?xi32>) kv_indices(%kvi : tensor<?xi32>) kv_last_page_len(%last : tensor<?xi32>)
      k_scale(%ks)
      outs(%o, %lse : tensor<4x32x128xf16>, tensor<4x32xf32>) {page_size = 16 : i64}
      -> tensor<4x32x128xf16>, tensor<4x32xf32>
  return
}

// -----

func.func @k_scale_zero(%q: tensor<4x32x128xf16>, %kv0: tensor<?x2x16x8x128xf8E5M2>, %kvp: tensor<?xi32>, %kvi: tensor<?xi32>, %last: tensor<?xi32>, %o: tensor<4x32x128xf16>, %lse: tensor<4x32xf32>) {
  %ks = arith.constant 0.000000e+00 : f32
  // expected-error@+1 {{'k_scale' must be finite and > 0, got 0.000000e+00}}
  %r:2 = cascade.paged_attention q(%q : tensor<4x32x128xf16>) kv(%kv0 : tensor<?x2x16x8x128xf8E5M2>)
      kv_indptr(%kvp : tensor<?xi32>) kv_indices(%kvi : tensor<?xi32>) kv_last_page_len(%last : tensor<?xi32>)
      k_scale(%ks)
      outs(%o, %lse : tensor<4x32x128xf16>, tensor<4x32xf32>) {page_size = 16 : i64}
      -> tensor<4x32x128xf16>, tensor<4x32xf32>
  return
}
