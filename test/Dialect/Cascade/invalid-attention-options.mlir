// RUN: cascade-opt %s -split-input-file -verify-diagnostics

// cascade.paged_attention: option ranges (sm_scale, logits_soft_cap, window_left, rope_scale, rope_theta).

func.func @sm_scale_zero(%q: tensor<4x32x128xf16>, %kv0: tensor<?x2x16x8x128xf16>, %kvp: tensor<?xi32>, %kvi: tensor<?xi32>, %last: tensor<?xi32>, %o: tensor<4x32x128xf16>, %lse: tensor<4x32xf32>) {
  // expected-error@+1 {{sm_scale must be finite and > 0, got 0.000000e+00}}
  %r:2 = cascade.paged_attention q(%q : tensor<4x32x128xf16>) kv(%kv0 : tensor<?x2x16x8x128xf16>)
      kv_indptr(%kvp : tensor<?xi32>) kv_indices(%kvi : tensor<?xi32>) kv_last_page_len(%last : tensor<?xi32>)
      outs(%o, %lse : tensor<4x32x128xf16>, tensor<4x32xf32>) {page_size = 16 : i64, sm_scale = 0.0 : f32}
      -> tensor<4x32x128xf16>, tensor<4x32xf32>
  return
}

// -----

func.func @sm_scale_negative(%q: tensor<4x32x128xf16>, %kv0: tensor<?x2x16x8x128xf16>, %kvp: tensor<?xi32>, %kvi: tensor<?xi32>, %last: tensor<?xi32>, %o: tensor<4x32x128xf16>, %lse: tensor<4x32xf32>) {
  // expected-error@+1 {{sm_scale must be finite and > 0, got -1.000000e+00}}
  %r:2 = cascade.paged_attention q(%q : tensor<4x32x128xf16>) kv(%kv0 : tensor<?x2x16x8x128xf16>)
      kv_indptr(%kvp : tensor<?xi32>) kv_indices(%kvi : tensor<?xi32>) kv_last_page_len(%last : tensor<?xi32>)
      outs(%o, %lse : tensor<4x32x128xf16>, tensor<4x32xf32>) {page_size = 16 : i64, sm_scale = -1.0 : f32}
      -> tensor<4x32x128xf16>, tensor<4x32xf32>
  return
}

// -----

func.func @sm_scale_inf(%q: tensor<4x32x128xf16>, %kv0: tensor<?x2x16x8x128xf16>, %kvp: tensor<?xi32>, %kvi: tensor<?xi32>, %last: tensor<?xi32>, %o: tensor<4x32x128xf16>, %lse: tensor<4x32xf32>) {
  // expected-error@+1 {{sm_scale must be finite and > 0, got INF}}
  %r:2 = cascade.paged_attention q(%q : tensor<4x32x128xf16>) kv(%kv0 : tensor<?x2x16x8x128xf16>)
      kv_indptr(%kvp : tensor<?xi32>) kv_indices(%kvi : tensor<?xi32>) kv_last_page_len(%last : tensor<?xi32>)
      outs(%o, %lse : tensor<4x32x128xf16>, tensor<4x32xf32>) {page_size = 16 : i64, sm_scale = 0x7F800000 : f32}
      -> tensor<4x32x128xf16>, tensor<4x32xf32>
  return
}

// -----

func.func @sm_scale_nan(%q: tensor<4x32x128xf16>, %kv0: tensor<?x2x16x8x128xf16>, %kvp: tensor<?xi32>, %kvi: tensor<?xi32>, %last: tensor<?xi32>, %o: tensor<4x32x128xf16>, %lse: tensor<4x32xf32>) {
  // expected-error@+1 {{sm_scale must be finite and > 0, got nan}}
  %r:2 = cascade.paged_attention q(%q : tensor<4x32x128xf16>) kv(%kv0 : tensor<?x2x16x8x128xf16>)
      kv_indptr(%kvp : tensor<?xi32>) kv_indices(%kvi : tensor<?xi32>) kv_last_page_len(%last : tensor<?xi32>)
      outs(%o, %lse : tensor<4x32x128xf16>, tensor<4x32xf32>) {page_size = 16 : i64, sm_scale = 0x7FC00000 : f32}
      -> tensor<4x32x128xf16>, tensor<4x32xf32>
  return
}

// -----

func.func @soft_cap_negative(%q: tensor<4x32x128xf16>, %kv0: tensor<?x2x16x8x128xf16>, %kvp: tensor<?xi32>, %kvi: tensor<?xi32>, %last: tensor<?xi32>, %o: tensor<4x32x128xf16>, %lse: tensor<4x32xf32>) {
  // expected-error@+1 {{logits_soft_cap must be finite and >= 0 (0 = off), got -1.000000e+00}}
  %r:2 = cascade.paged_attention q(%q : tensor<4x32x128xf16>) kv(%kv0 : tensor<?x2x16x8x128xf16>)
      kv_indptr(%kvp : tensor<?xi32>) kv_indices(%kvi : tensor<?xi32>) kv_last_page_len(%last : tensor<?xi32>)
      outs(%o, %lse : tensor<4x32x128xf16>, tensor<4x32xf32>) {page_size = 16 : i64, logits_soft_cap = -1.0 : f32}
      -> tensor<4x32x128xf16>, tensor<4x32xf32>
  return
}

// -----

// +inf is rejected too (the check is finite && >= 0; the message only says >= 0).
func.func @soft_cap_inf(%q: tensor<4x32x128xf16>, %kv0: tensor<?x2x16x8x128xf16>, %kvp: tensor<?xi32>, %kvi: tensor<?xi32>, %last: tensor<?xi32>, %o: tensor<4x32x128xf16>, %lse: tensor<4x32xf32>) {
  // expected-error@+1 {{logits_soft_cap must be finite and >= 0 (0 = off), got INF}}
  %r:2 = cascade.paged_attention q(%q : tensor<4x32x128xf16>) kv(%kv0 : tensor<?x2x16x8x128xf16>)
      kv_indptr(%kvp : tensor<?xi32>) kv_indices(%kvi : tensor<?xi32>) kv_last_page_len(%last : tensor<?xi32>)
      outs(%o, %lse : tensor<4x32x128xf16>, tensor<4x32xf32>) {page_size = 16 : i64, logits_soft_cap = 0x7F800000 : f32}
      -> tensor<4x32x128xf16>, tensor<4x32xf32>
  return
}

// -----

func.func @window_left_below_minus_one(%q: tensor<4x32x128xf16>, %kv0: tensor<?x2x16x8x128xf16>, %kvp: tensor<?xi32>, %kvi: tensor<?xi32>, %last: tensor<?xi32>, %o: tensor<4x32x128xf16>, %lse: tensor<4x32xf32>) {
  // expected-error@+1 {{window_left must be >= -1 (-1 = off), got -2}}
  %r:2 = cascade.paged_attention q(%q : tensor<4x32x128xf16>) kv(%kv0 : tensor<?x2x16x8x128xf16>)
      kv_indptr(%kvp : tensor<?xi32>) kv_indices(%kvi : tensor<?xi32>) kv_last_page_len(%last : tensor<?xi32>)
      outs(%o, %lse : tensor<4x32x128xf16>, tensor<4x32xf32>) {page_size = 16 : i64, window_left = -2 : i64}
      -> tensor<4x32x128xf16>, tensor<4x32xf32>
  return
}

// -----

func.func @rope_scale_zero(%q: tensor<4x32x128xf16>, %kv0: tensor<?x2x16x8x128xf16>, %kvp: tensor<?xi32>, %kvi: tensor<?xi32>, %last: tensor<?xi32>, %o: tensor<4x32x128xf16>, %lse: tensor<4x32xf32>) {
  // expected-error@+1 {{rope_scale must be finite and > 0, got 0.000000e+00}}
  %r:2 = cascade.paged_attention q(%q : tensor<4x32x128xf16>) kv(%kv0 : tensor<?x2x16x8x128xf16>)
      kv_indptr(%kvp : tensor<?xi32>) kv_indices(%kvi : tensor<?xi32>) kv_last_page_len(%last : tensor<?xi32>)
      outs(%o, %lse : tensor<4x32x128xf16>, tensor<4x32xf32>) {page_size = 16 : i64, pos_encoding = #cascade.pos_encoding<rope_llama>, rope_scale = 0.0 : f32}
      -> tensor<4x32x128xf16>, tensor<4x32xf32>
  return
}

// -----

func.func @rope_scale_nan(%q: tensor<4x32x128xf16>, %kv0: tensor<?x2x16x8x128xf16>, %kvp: tensor<?xi32>, %kvi: tensor<?xi32>, %last: tensor<?xi32>, %o: tensor<4x32x128xf16>, %lse: tensor<4x32xf32>) {
  // expected-error@+1 {{rope_scale must be finite and > 0, got nan}}
  %r:2 = cascade.paged_attention q(%q : tensor<4x32x128xf16>) kv(%kv0 : tensor<?x2x16x8x128xf16>)
      kv_indptr(%kvp : tensor<?xi32>) kv_indices(%kvi : tensor<?xi32>) kv_last_page_len(%last : tensor<?xi32>)
      outs(%o, %lse : tensor<4x32x128xf16>, tensor<4x32xf32>) {page_size = 16 : i64, rope_scale = 0x7FC00000 : f32}
      -> tensor<4x32x128xf16>, tensor<4x32xf32>
  return
}

// -----

func.func @rope_theta_negative(%q: tensor<4x32x128xf16>, %kv0: tensor<?x2x16x8x128xf16>, %kvp: tensor<?xi32>, %kvi: tensor<?xi32>, %last: tensor<?xi32>, %o: tensor<4x32x128xf16>, %lse: tensor<4x32xf32>) {
  // expected-error@+1 {{rope_theta must be finite and > 0, got -1.000000e+04}}
  %r:2 = cascade.paged_attention q(%q : tensor<4x32x128xf16>) kv(%kv0 : tensor<?x2x16x8x128xf16>)
      kv_indptr(%kvp : tensor<?xi32>) kv_indices(%kvi : tensor<?xi32>) kv_last_page_len(%last : tensor<?xi32>)
      outs(%o, %lse : tensor<4x32x128xf16>, tensor<4x32xf32>) {page_size = 16 : i64, pos_encoding = #cascade.pos_encoding<rope_llama>, rope_theta = -10000.0 : f32}
      -> tensor<4x32x128xf16>, tensor<4x32xf32>
  return
}

// -----

func.func @rope_theta_inf(%q: tensor<4x32x128xf16>, %kv0: tensor<?x2x16x8x128xf16>, %kvp: tensor<?xi32>, %kvi: tensor<?xi32>, %last: tensor<?xi32>, %o: tensor<4x32x128xf16>, %lse: tensor<4x32xf32>) {
  // expected-error@+1 {{rope_theta must be finite and > 0, got INF}}
  %r:2 = cascade.paged_attention q(%q : tensor<4x32x128xf16>) kv(%kv0 : tensor<?x2x16x8x128xf16>)
      kv_indptr(%kvp : tensor<?xi32>) kv_indices(%kvi : tensor<?xi32>) kv_last_page_len(%last : tensor<?xi32>)
      outs(%o, %lse : tensor<4x32x128xf16>, tensor<4x32xf32>) {page_size = 16 : i64, rope_theta = 0x7F800000 : f32}
      -> tensor<4x32x128xf16>, tensor<4x32xf32>
  return
}
