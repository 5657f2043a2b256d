// RUN: cascade-opt %s -split-input-file -verify-diagnostics

// cascade.paged_attention's custom_mask(mask, mask_indptr).

func.func @decode(%q: tensor<4x32x128xf16>, %kv0: tensor<?x2x16x8x128xf16>, %kvp: tensor<5xi32>, %kvi: tensor<?xi32>, %last: tensor<4xi32>, %m: tensor<?xi8>, %mi: tensor<5xi32>, %o: tensor<4x32x128xf16>, %lse: tensor<4x32xf32>) {
  // expected-error@+1 {{a custom mask needs 'qo_indptr' (a prefill level: it masks [qo_len, kv_len] per request)}}
  %r:2 = cascade.paged_attention q(%q : tensor<4x32x128xf16>) kv(%kv0 : tensor<?x2x16x8x128xf16>)
      kv_indptr(%kvp : tensor<5xi32>) kv_indices(%kvi : tensor<?xi32>) kv_last_page_len(%last : tensor<4xi32>)
      custom_mask(%m, %mi : tensor<?xi8>, tensor<5xi32>)
      outs(%o, %lse : tensor<4x32x128xf16>, tensor<4x32xf32>) {page_size = 16 : i64}
      -> tensor<4x32x128xf16>, tensor<4x32xf32>
  return
}

// -----

func.func @causal(%q: tensor<?x32x128xf16>, %kv0: tensor<?x2x16x8x128xf16>, %qo: tensor<?xi32>, %kvp: tensor<?xi32>, %kvi: tensor<?xi32>, %last: tensor<?xi32>, %m: tensor<?xi8>, %mi: tensor<?xi32>, %o: tensor<?x32x128xf16>, %lse: tensor<?x32xf32>) {
  // expected-error@+1 {{a custom mask replaces the causal mask: drop 'causal' (or spell it in the mask)}}
  %r:2 = cascade.paged_attention q(%q : tensor<?x32x128xf16>) kv(%kv0 : tensor<?x2x16x8x128xf16>)
      qo_indptr(%qo : tensor<?xi32>) kv_indptr(%kvp : tensor<?xi32>) kv_indices(%kvi : tensor<?xi32>)
      kv_last_page_len(%last : tensor<?xi32>) custom_mask(%m, %mi : tensor<?xi8>, tensor<?xi32>)
      outs(%o, %lse : tensor<?x32x128xf16>, tensor<?x32xf32>) {page_size = 16 : i64, causal}
      -> tensor<?x32x128xf16>, tensor<?x32xf32>
  return
}

// -----

func.func @mask_bool(%q: tensor<?x32x128xf16>, %kv0: tensor<?x2x16x8x128xf16>, %qo: tensor<?xi32>, %kvp: tensor<?xi32>, %kvi: tensor<?xi32>, %last: tensor<?xi32>, %m: tensor<?xi1>, %mi: tensor<?xi32>, %o: tensor<?x32x128xf16>, %lse: tensor<?x32xf32>) {
  // expected-error@+1 {{'custom_mask' must be 1-D i8 (packed bits), got 'tensor<?xi1>'}}
  %r:2 = cascade.paged_attention q(%q : tensor<?x32x128xf16>) kv(%kv0 : tensor<?x2x16x8x128xf16>)
      qo_indptr(%qo : tensor<?xi32>) kv_indptr(%kvp : tensor<?xi32>) kv_indices(%kvi : tensor<?xi32>)
      kv_last_page_len(%last : tensor<?xi32>) custom_mask(%m, %mi : tensor<?xi1>, tensor<?xi32>)
      outs(%o, %lse : tensor<?x32x128xf16>, tensor<?x32xf32>) {page_size = 16 : i64}
      -> tensor<?x32x128xf16>, tensor<?x32xf32>
  return
}

// -----

func.func @mask_2d(%q: tensor<?x32x128xf16>, %kv0: tensor<?x2x16x8x128xf16>, %qo: tensor<?xi32>, %kvp: tensor<?xi32>, %kvi: tensor<?xi32>, %last: tensor<?xi32>, %m: tensor<?x8xi8>, %mi: tensor<?xi32>, %o: tensor<?x32x128xf16>, %lse: tensor<?x32xf32>) {
  // expected-error@+1 {{'custom_mask' must be 1-D i8 (packed bits), got 'tensor<?x8xi8>'}}
  %r:2 = cascade.paged_attention q(%q : tensor<?x32x128xf16>) kv(%kv0 : tensor<?x2x16x8x128xf16>)
      qo_indptr(%qo : tensor<?xi32>) kv_indptr(%kvp : tensor<?xi32>) kv_indices(%kvi : tensor<?xi32>)
      kv_last_page_len(%last : tensor<?xi32>) custom_mask(%m, %mi : tensor<?x8xi8>, tensor<?xi32>)
      outs(%o, %lse : tensor<?x32x128xf16>, tensor<?x32xf32>) {page_size = 16 : i64}
      -> tensor<?x32x128xf16>, tensor<?x32xf32>
  return
}

// -----

func.func @indptr_i64(%q: tensor<?x32x128xf16>, %kv0: tensor<?x2x16x8x128xf16>, %qo: tensor<?xi32>, %kvp: tensor<?xi32>, %kvi: tensor<?xi32>, %last: tensor<?xi32>, %m: tensor<?xi8>, %mi: tensor<?xi64>, %o: tensor<?x32x128xf16>, %lse: tensor<?x32xf32>) {
  // expected-error@+1 {{'mask_indptr' element type must be i32, got 'i64'}}
  %r:2 = cascade.paged_attention q(%q : tensor<?x32x128xf16>) kv(%kv0 : tensor<?x2x16x8x128xf16>)
      qo_indptr(%qo : tensor<?xi32>) kv_indptr(%kvp : tensor<?xi32>) kv_indices(%kvi : tensor<?xi32>)
      kv_last_page_len(%last : tensor<?xi32>) custom_mask(%m, %mi : tensor<?xi8>, tensor<?xi64>)
      outs(%o, %lse : tensor<?x32x128xf16>, tensor<?x32xf32>) {page_size = 16 : i64}
      -> tensor<?x32x128xf16>, tensor<?x32xf32>
  return
}

// -----

func.func @indptr_size(%q: tensor<?x32x128xf16>, %kv0: tensor<?x2x16x8x128xf16>, %qo: tensor<5xi32>, %kvp: tensor<5xi32>, %kvi: tensor<?xi32>, %last: tensor<4xi32>, %m: tensor<?xi8>, %mi: tensor<4xi32>, %o: tensor<?x32x128xf16>, %lse: tensor<?x32xf32>) {
  // expected-error@+1 {{'mask_indptr' has 4 entries but 'kv_indptr' has 5; both are [B+1]}}
  %r:2 = cascade.paged_attention q(%q : tensor<?x32x128xf16>) kv(%kv0 : tensor<?x2x16x8x128xf16>)
      qo_indptr(%qo : tensor<5xi32>) kv_indptr(%kvp : tensor<5xi32>) kv_indices(%kvi : tensor<?xi32>)
      kv_last_page_len(%last : tensor<4xi32>) custom_mask(%m, %mi : tensor<?xi8>, tensor<4xi32>)
      outs(%o, %lse : tensor<?x32x128xf16>, tensor<?x32xf32>) {page_size = 16 : i64}
      -> tensor<?x32x128xf16>, tensor<?x32xf32>
  return
}

// -----

// The generic form can give one operand without the other.
func.func @mask_without_indptr(%q: tensor<?x32x128xf16>, %kv0: tensor<?x2x16x8x128xf16>, %qo: tensor<?xi32>, %kvp: tensor<?xi32>, %kvi: tensor<?xi32>, %last: tensor<?xi32>, %m: tensor<?xi8>, %o: tensor<?x32x128xf16>, %lse: tensor<?x32xf32>) {
  // expected-error@+1 {{'custom_mask' and 'mask_indptr' go together}}
  %r:2 = "cascade.paged_attention"(%q, %kv0, %qo, %kvp, %kvi, %last, %m, %o, %lse)
      <{operandSegmentSizes = array<i32: 1, 0, 1, 1, 1, 1, 1, 0, 0, 0, 1, 0, 0, 1, 1>, page_size = 16 : i64}>
      : (tensor<?x32x128xf16>, tensor<?x2x16x8x128xf16>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi8>, tensor<?x32x128xf16>, tensor<?x32xf32>)
      -> (tensor<?x32x128xf16>, tensor<?x32xf32>)
  return
}
