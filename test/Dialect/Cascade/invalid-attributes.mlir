// RUN: cascade-opt %s -split-input-file -verify-diagnostics

// Attribute constraints and enum parsing (page_size, sm_scale, window_left, kv_layout, pos_encoding, lse_base).

func.func @page_size_zero(%q: tensor<4x32x128xf16>, %kv0: tensor<?x2x16x8x128xf16>, %kvp: tensor<?xi32>, %kvi: tensor<?xi32>, %last: tensor<?xi32>, %o: tensor<4x32x128xf16>, %lse: tensor<4x32xf32>) {
  // expected-error@+3 {{'page_size' failed to satisfy constraint: 64-bit signless integer attribute whose value is positive}}
  %r:2 = cascade.paged_attention q(%q : tensor<4x32x128xf16>) kv(%kv0 : tensor<?x2x16x8x128xf16>)
      kv_indptr(%kvp : tensor<?xi32>) kv_indices(%kvi : tensor<?xi32>) kv_last_page_len(%last : tensor<?xi32>)
      outs(%o, %lse : tensor<4x32x128xf16>, tensor<4x32xf32>) {page_size = 0 : i64}
      -> tensor<4x32x128xf16>, tensor<4x32xf32>
  return
}

// -----

func.func @page_size_negative(%q: tensor<4x32x128xf16>, %kv0: tensor<?x2x16x8x128xf16>, %kvp: tensor<?xi32>, %kvi: tensor<?xi32>, %last: tensor<?xi32>, %o: tensor<4x32x128xf16>, %lse: tensor<4x32xf32>) {
  // expected-error@+3 {{'page_size' failed to satisfy constraint: 64-bit signless integer attribute whose value is positive}}
  %r:2 = cascade.paged_attention q(%q : tensor<4x32x128xf16>) kv(%kv0 : tensor<?x2x16x8x128xf16>)
      kv_indptr(%kvp : tensor<?xi32>) kv_indices(%kvi : tensor<?xi32>) kv_last_page_len(%last : tensor<?xi32>)
      outs(%o, %lse : tensor<4x32x128xf16>, tensor<4x32xf32>) {page_size = -16 : i64}
      -> tensor<4x32x128xf16>, tensor<4x32xf32>
  return
}

// -----

func.func @page_size_missing(%q: tensor<4x32x128xf16>, %kv0: tensor<?x2x16x8x128xf16>, %kvp: tensor<?xi32>, %kvi: tensor<?xi32>, %last: tensor<?xi32>, %o: tensor<4x32x128xf16>, %lse: tensor<4x32xf32>) {
  // expected-error@+1 {{requires attribute 'page_size'}}
  %r:2 = cascade.paged_attention q(%q : tensor<4x32x128xf16>) kv(%kv0 : tensor<?x2x16x8x128xf16>)
      kv_indptr(%kvp : tensor<?xi32>) kv_indices(%kvi : tensor<?xi32>) kv_last_page_len(%last : tensor<?xi32>)
      outs(%o, %lse : tensor<4x32x128xf16>, tensor<4x32xf32>) {causal}
      -> tensor<4x32x128xf16>, tensor<4x32xf32>
  return
}

// -----

func.func @page_size_i32(%q: tensor<4x32x128xf16>, %kv0: tensor<?x2x16x8x128xf16>, %kvp: tensor<?xi32>, %kvi: tensor<?xi32>, %last: tensor<?xi32>, %o: tensor<4x32x128xf16>, %lse: tensor<4x32xf32>) {
  // expected-error@+3 {{'page_size' failed to satisfy constraint: 64-bit signless integer attribute whose value is positive}}
  %r:2 = cascade.paged_attention q(%q : tensor<4x32x128xf16>) kv(%kv0 : tensor<?x2x16x8x128xf16>)
      kv_indptr(%kvp : tensor<?xi32>) kv_indices(%kvi : tensor<?xi32>) kv_last_page_len(%last : tensor<?xi32>)
      outs(%o, %lse : tensor<4x32x128xf16>, tensor<4x32xf32>) {page_size = 16 : i32}
      -> tensor<4x32x128xf16>, tensor<4x32xf32>
  return
}

// -----

// A float literal without a type is f64; the options are f32.
func.func @sm_scale_f64(%q: tensor<4x32x128xf16>, %kv0: tensor<?x2x16x8x128xf16>, %kvp: tensor<?xi32>, %kvi: tensor<?xi32>, %last: tensor<?xi32>, %o: tensor<4x32x128xf16>, %lse: tensor<4x32xf32>) {
  // expected-error@+3 {{'sm_scale' failed to satisfy constraint: 32-bit float attribute}}
  %r:2 = cascade.paged_attention q(%q : tensor<4x32x128xf16>) kv(%kv0 : tensor<?x2x16x8x128xf16>)
      kv_indptr(%kvp : tensor<?xi32>) kv_indices(%kvi : tensor<?xi32>) kv_last_page_len(%last : tensor<?xi32>)
      outs(%o, %lse : tensor<4x32x128xf16>, tensor<4x32xf32>) {page_size = 16 : i64, sm_scale = 0.125}
      -> tensor<4x32x128xf16>, tensor<4x32xf32>
  return
}

// -----

func.func @window_left_i32(%q: tensor<4x32x128xf16>, %kv0: tensor<?x2x16x8x128xf16>, %kvp: tensor<?xi32>, %kvi: tensor<?xi32>, %last: tensor<?xi32>, %o: tensor<4x32x128xf16>, %lse: tensor<4x32xf32>) {
  // expected-error@+3 {{'window_left' failed to satisfy constraint: 64-bit signless integer attribute}}
  %r:2 = cascade.paged_attention q(%q : tensor<4x32x128xf16>) kv(%kv0 : tensor<?x2x16x8x128xf16>)
      kv_indptr(%kvp : tensor<?xi32>) kv_indices(%kvi : tensor<?xi32>) kv_last_page_len(%last : tensor<?xi32>)
      outs(%o, %lse : tensor<4x32x128xf16>, tensor<4x32xf32>) {page_size = 16 : i64, window_left = 128 : i32}
      -> tensor<4x32x128xf16>, tensor<4x32xf32>
  return
}

// -----

func.func @bad_kv_layout(%q: tensor<4x32x128xf16>, %kv0: tensor<?x2x16x8x128xf16>, %kvp: tensor<?xi32>, %kvi: tensor<?xi32>, %last: tensor<?xi32>, %o: tensor<4x32x128xf16>, %lse: tensor<4x32xf32>) {
  // expected-error@+4 {{expected ::mlir::cascade::KVLayout to be one of: nhd, hnd}}
  // expected-error@+3 {{failed to parse Cascade_KVLayoutAttr parameter 'value'}}
  %r:2 = cascade.paged_attention q(%q : tensor<4x32x128xf16>) kv(%kv0 : tensor<?x2x16x8x128xf16>)
      kv_indptr(%kvp : tensor<?xi32>) kv_indices(%kvi : tensor<?xi32>) kv_last_page_len(%last : tensor<?xi32>)
      outs(%o, %lse : tensor<4x32x128xf16>, tensor<4x32xf32>) {page_size = 16 : i64, kv_layout = #cascade.kv_layout<xyz>}
      -> tensor<4x32x128xf16>, tensor<4x32xf32>
  return
}

// -----

func.func @bad_pos_encoding(%q: tensor<4x32x128xf16>, %kv0: tensor<?x2x16x8x128xf16>, %kvp: tensor<?xi32>, %kvi: tensor<?xi32>, %last: tensor<?xi32>, %o: tensor<4x32x128xf16>, %lse: tensor<4x32xf32>) {
  // expected-error@+4 {{expected ::mlir::cascade::PosEncoding to be one of: none, rope_llama, alibi}}
  // expected-error@+3 {{failed to parse Cascade_PosEncodingAttr parameter 'value'}}
  %r:2 = cascade.paged_attention q(%q : tensor<4x32x128xf16>) kv(%kv0 : tensor<?x2x16x8x128xf16>)
      kv_indptr(%kvp : tensor<?xi32>) kv_indices(%kvi : tensor<?xi32>) kv_last_page_len(%last : tensor<?xi32>)
      outs(%o, %lse : tensor<4x32x128xf16>, tensor<4x32xf32>) {page_size = 16 : i64, pos_encoding = #cascade.pos_encoding<rope>}
      -> tensor<4x32x128xf16>, tensor<4x32xf32>
  return
}

// -----

func.func @kv_layout_wrong_attr_kind(%q: tensor<4x32x128xf16>, %kv0: tensor<?x2x16x8x128xf16>, %kvp: tensor<?xi32>, %kvi: tensor<?xi32>, %last: tensor<?xi32>, %o: tensor<4x32x128xf16>, %lse: tensor<4x32xf32>) {
  // expected-error@+3 {{'kv_layout' failed to satisfy constraint: Layout of a page of the paged KV cache}}
  %r:2 = cascade.paged_attention q(%q : tensor<4x32x128xf16>) kv(%kv0 : tensor<?x2x16x8x128xf16>)
      kv_indptr(%kvp : tensor<?xi32>) kv_indices(%kvi : tensor<?xi32>) kv_last_page_len(%last : tensor<?xi32>)
      outs(%o, %lse : tensor<4x32x128xf16>, tensor<4x32xf32>) {page_size = 16 : i64, kv_layout = #cascade.pos_encoding<none>}
      -> tensor<4x32x128xf16>, tensor<4x32xf32>
  return
}

// -----

func.func @kv_layout_string(%q: tensor<4x32x128xf16>, %kv0: tensor<?x2x16x8x128xf16>, %kvp: tensor<?xi32>, %kvi: tensor<?xi32>, %last: tensor<?xi32>, %o: tensor<4x32x128xf16>, %lse: tensor<4x32xf32>) {
  // expected-error@+3 {{'kv_layout' failed to satisfy constraint: Layout of a page of the paged KV cache}}
  %r:2 = cascade.paged_attention q(%q : tensor<4x32x128xf16>) kv(%kv0 : tensor<?x2x16x8x128xf16>)
      kv_indptr(%kvp : tensor<?xi32>) kv_indices(%kvi : tensor<?xi32>) kv_last_page_len(%last : tensor<?xi32>)
      outs(%o, %lse : tensor<4x32x128xf16>, tensor<4x32xf32>) {page_size = 16 : i64, kv_layout = "hnd"}
      -> tensor<4x32x128xf16>, tensor<4x32xf32>
  return
}

// -----

func.func @bad_lse_base(%vo: tensor<4x8x64xf16>, %so: tensor<4x8xf32>, %v: tensor<4x8x64xf16>, %s: tensor<4x8xf32>) {
  // expected-error@+3 {{expected ::mlir::cascade::LSEBase to be one of: base2, base_e}}
  // expected-error@+2 {{failed to parse Cascade_LSEBaseAttr parameter 'value'}}
  %r:2 = cascade.merge_state_in_place ins(%vo, %so : tensor<4x8x64xf16>, tensor<4x8xf32>)
      outs(%v, %s : tensor<4x8x64xf16>, tensor<4x8xf32>) {lse_base = #cascade.lse_base<base10>} -> tensor<4x8x64xf16>, tensor<4x8xf32>
  return
}

// -----

func.func @bad_lse_base_generic(%v: tensor<4x8x64xf16>, %s: tensor<4x8xf32>) {
  // expected-error@+2 {{expected ::mlir::cascade::LSEBase to be one of: base2, base_e}}
  // expected-error@+1 {{failed to parse Cascade_LSEBaseAttr parameter 'value'}}
  %r:2 = "cascade.merge_state_in_place"(%v, %s, %v, %s) <{lse_base = #cascade.lse_base<e>}>
      : (tensor<4x8x64xf16>, tensor<4x8xf32>, tensor<4x8x64xf16>, tensor<4x8xf32>)
      -> (tensor<4x8x64xf16>, tensor<4x8xf32>)
  return
}
