// RUN: cascade-opt %s -split-input-file -verify-diagnostics

// cascade.multi_level_attention: level counts and per-level index arrays.

func.func @no_levels(%q: tensor<?x32x128xf16>, %c: tensor<?x2x16x8x128xf16>,
                     %o: tensor<?x32x128xf16>, %lse: tensor<?x32xf32>) {
  // expected-error@+1 {{expects at least one level}}
  %r:2 = "cascade.multi_level_attention"(%q, %c, %o, %lse)
      <{operandSegmentSizes = array<i32: 1, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1>, page_size = 16 : i64}>
      : (tensor<?x32x128xf16>, tensor<?x2x16x8x128xf16>, tensor<?x32x128xf16>, tensor<?x32xf32>)
      -> (tensor<?x32x128xf16>, tensor<?x32xf32>)
  return
}

// -----

func.func @kv_indptr_count(%q: tensor<?x32x128xf16>, %kv0: tensor<?x2x16x8x128xf16>, %qo0: tensor<2xi32>, %qo1: tensor<?xi32>, %kp0: tensor<2xi32>, %ki0: tensor<?xi32>, %ki1: tensor<?xi32>, %kl0: tensor<1xi32>, %kl1: tensor<?xi32>, %o: tensor<?x32x128xf16>, %lse: tensor<?x32xf32>) {
  // expected-error@+1 {{expects one qo_indptr, kv_indptr and kv_last_page_len per level, got 2, 1 and 2}}
  %r:2 = cascade.multi_level_attention q(%q : tensor<?x32x128xf16>) kv(%kv0 : tensor<?x2x16x8x128xf16>)
      qo_indptr(%qo0, %qo1 : tensor<2xi32>, tensor<?xi32>) kv_indptr(%kp0 : tensor<2xi32>)
      kv_indices(%ki0, %ki1 : tensor<?xi32>, tensor<?xi32>) kv_last_page_len(%kl0, %kl1 : tensor<1xi32>, tensor<?xi32>)
      outs(%o, %lse : tensor<?x32x128xf16>, tensor<?x32xf32>) {page_size = 16 : i64}
      -> tensor<?x32x128xf16>, tensor<?x32xf32>
  return
}

// -----

func.func @kv_indices_count(%q: tensor<?x32x128xf16>, %kv0: tensor<?x2x16x8x128xf16>, %qo0: tensor<2xi32>, %qo1: tensor<?xi32>, %kp0: tensor<2xi32>, %kp1: tensor<?xi32>, %ki0: tensor<?xi32>, %ki1: tensor<?xi32>, %ki2: tensor<?xi32>, %kl0: tensor<1xi32>, %kl1: tensor<?xi32>, %o: tensor<?x32x128xf16>, %lse: tensor<?x32xf32>) {
  // expected-error@+1 {{expects one kv_indices per level that is not ragged (ragged_levels): 2 of 2 levels, got 3}}
  %r:2 = cascade.multi_level_attention q(%q : tensor<?x32x128xf16>) kv(%kv0 : tensor<?x2x16x8x128xf16>)
      qo_indptr(%qo0, %qo1 : tensor<2xi32>, tensor<?xi32>) kv_indptr(%kp0, %kp1 : tensor<2xi32>, tensor<?xi32>)
      kv_indices(%ki0, %ki1, %ki2 : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) kv_last_page_len(%kl0, %kl1 : tensor<1xi32>, tensor<?xi32>)
      outs(%o, %lse : tensor<?x32x128xf16>, tensor<?x32xf32>) {page_size = 16 : i64}
      -> tensor<?x32x128xf16>, tensor<?x32xf32>
  return
}

// -----

func.func @kv_last_page_len_count(%q: tensor<?x32x128xf16>, %kv0: tensor<?x2x16x8x128xf16>, %qo0: tensor<?xi32>, %kp0: tensor<?xi32>, %ki0: tensor<?xi32>, %kl0: tensor<1xi32>, %kl1: tensor<?xi32>, %o: tensor<?x32x128xf16>, %lse: tensor<?x32xf32>) {
  // expected-error@+1 {{expects one qo_indptr, kv_indptr and kv_last_page_len per level, got 1, 1 and 2}}
  %r:2 = cascade.multi_level_attention q(%q : tensor<?x32x128xf16>) kv(%kv0 : tensor<?x2x16x8x128xf16>)
      qo_indptr(%qo0 : tensor<?xi32>) kv_indptr(%kp0 : tensor<?xi32>)
      kv_indices(%ki0 : tensor<?xi32>) kv_last_page_len(%kl0, %kl1 : tensor<1xi32>, tensor<?xi32>)
      outs(%o, %lse : tensor<?x32x128xf16>, tensor<?x32xf32>) {page_size = 16 : i64}
      -> tensor<?x32x128xf16>, tensor<?x32xf32>
  return
}

// -----

func.func @qo_indptr_element_type(%q: tensor<?x32x128xf16>, %kv0: tensor<?x2x16x8x128xf16>, %qo0: tensor<2xi64>, %qo1: tensor<?xi32>, %kp0: tensor<2xi32>, %kp1: tensor<?xi32>, %ki0: tensor<?xi32>, %ki1: tensor<?xi32>, %kl0: tensor<1xi32>, %kl1: tensor<?xi32>, %o: tensor<?x32x128xf16>, %lse: tensor<?x32xf32>) {
  // expected-error@+1 {{'qo_indptr[0]' element type must be i32, got 'i64'}}
  %r:2 = cascade.multi_level_attention q(%q : tensor<?x32x128xf16>) kv(%kv0 : tensor<?x2x16x8x128xf16>)
      qo_indptr(%qo0, %qo1 : tensor<2xi64>, tensor<?xi32>) kv_indptr(%kp0, %kp1 : tensor<2xi32>, tensor<?xi32>)
      kv_indices(%ki0, %ki1 : tensor<?xi32>, tensor<?xi32>) kv_last_page_len(%kl0, %kl1 : tensor<1xi32>, tensor<?xi32>)
      outs(%o, %lse : tensor<?x32x128xf16>, tensor<?x32xf32>) {page_size = 16 : i64}
      -> tensor<?x32x128xf16>, tensor<?x32xf32>
  return
}

// -----

func.func @kv_indptr_rank(%q: tensor<?x32x128xf16>, %kv0: tensor<?x2x16x8x128xf16>, %qo0: tensor<2xi32>, %qo1: tensor<?xi32>, %kp0: tensor<2xi32>, %kp1: tensor<?x1xi32>, %ki0: tensor<?xi32>, %ki1: tensor<?xi32>, %kl0: tensor<1xi32>, %kl1: tensor<?xi32>, %o: tensor<?x32x128xf16>, %lse: tensor<?x32xf32>) {
  // expected-error@+1 {{'kv_indptr[1]' must be 1-D, got rank 2}}
  %r:2 = cascade.multi_level_attention q(%q : tensor<?x32x128xf16>) kv(%kv0 : tensor<?x2x16x8x128xf16>)
      qo_indptr(%qo0, %qo1 : tensor<2xi32>, tensor<?xi32>) kv_indptr(%kp0, %kp1 : tensor<2xi32>, tensor<?x1xi32>)
      kv_indices(%ki0, %ki1 : tensor<?xi32>, tensor<?xi32>) kv_last_page_len(%kl0, %kl1 : tensor<1xi32>, tensor<?xi32>)
      outs(%o, %lse : tensor<?x32x128xf16>, tensor<?x32xf32>) {page_size = 16 : i64}
      -> tensor<?x32x128xf16>, tensor<?x32xf32>
  return
}

// -----

func.func @kv_indices_element_type(%q: tensor<?x32x128xf16>, %kv0: tensor<?x2x16x8x128xf16>, %qo0: tensor<2xi32>, %qo1: tensor<?xi32>, %kp0: tensor<2xi32>, %kp1: tensor<?xi32>, %ki0: tensor<?xi32>, %ki1: tensor<?xi8>, %kl0: tensor<1xi32>, %kl1: tensor<?xi32>, %o: tensor<?x32x128xf16>, %lse: tensor<?x32xf32>) {
  // expected-error@+1 {{'kv_indices[1]' element type must be i32, got 'i8'}}
  %r:2 = cascade.multi_level_attention q(%q : tensor<?x32x128xf16>) kv(%kv0 : tensor<?x2x16x8x128xf16>)
      qo_indptr(%qo0, %qo1 : tensor<2xi32>, tensor<?xi32>) kv_indptr(%kp0, %kp1 : tensor<2xi32>, tensor<?xi32>)
      kv_indices(%ki0, %ki1 : tensor<?xi32>, tensor<?xi8>) kv_last_page_len(%kl0, %kl1 : tensor<1xi32>, tensor<?xi32>)
      outs(%o, %lse : tensor<?x32x128xf16>, tensor<?x32xf32>) {page_size = 16 : i64}
      -> tensor<?x32x128xf16>, tensor<?x32xf32>
  return
}

// -----

func.func @kv_last_page_len_rank(%q: tensor<?x32x128xf16>, %kv0: tensor<?x2x16x8x128xf16>, %qo0: tensor<2xi32>, %qo1: tensor<?xi32>, %kp0: tensor<2xi32>, %kp1: tensor<?xi32>, %ki0: tensor<?xi32>, %ki1: tensor<?xi32>, %kl0: tensor<1x1xi32>, %kl1: tensor<?xi32>, %o: tensor<?x32x128xf16>, %lse: tensor<?x32xf32>) {
  // expected-error@+1 {{'kv_last_page_len[0]' must be 1-D, got rank 2}}
  %r:2 = cascade.multi_level_attention q(%q : tensor<?x32x128xf16>) kv(%kv0 : tensor<?x2x16x8x128xf16>)
      qo_indptr(%qo0, %qo1 : tensor<2xi32>, tensor<?xi32>) kv_indptr(%kp0, %kp1 : tensor<2xi32>, tensor<?xi32>)
      kv_indices(%ki0, %ki1 : tensor<?xi32>, tensor<?xi32>) kv_last_page_len(%kl0, %kl1 : tensor<1x1xi32>, tensor<?xi32>)
      outs(%o, %lse : tensor<?x32x128xf16>, tensor<?x32xf32>) {page_size = 16 : i64}
      -> tensor<?x32x128xf16>, tensor<?x32xf32>
  return
}

// -----

func.func @kv_indptr_too_short(%q: tensor<?x32x128xf16>, %kv0: tensor<?x2x16x8x128xf16>, %qo0: tensor<2xi32>, %qo1: tensor<?xi32>, %kp0: tensor<2xi32>, %kp1: tensor<1xi32>, %ki0: tensor<?xi32>, %ki1: tensor<?xi32>, %kl0: tensor<1xi32>, %kl1: tensor<?xi32>, %o: tensor<?x32x128xf16>, %lse: tensor<?x32xf32>) {
  // expected-error@+1 {{'kv_indptr[1]' must have at least 2 entries ([B+1], B >= 1), got 1}}
  %r:2 = cascade.multi_level_attention q(%q : tensor<?x32x128xf16>) kv(%kv0 : tensor<?x2x16x8x128xf16>)
      qo_indptr(%qo0, %qo1 : tensor<2xi32>, tensor<?xi32>) kv_indptr(%kp0, %kp1 : tensor<2xi32>, tensor<1xi32>)
      kv_indices(%ki0, %ki1 : tensor<?xi32>, tensor<?xi32>) kv_last_page_len(%kl0, %kl1 : tensor<1xi32>, tensor<?xi32>)
      outs(%o, %lse : tensor<?x32x128xf16>, tensor<?x32xf32>) {page_size = 16 : i64}
      -> tensor<?x32x128xf16>, tensor<?x32xf32>
  return
}

// -----

func.func @qo_kv_indptr_mismatch(%q: tensor<?x32x128xf16>, %kv0: tensor<?x2x16x8x128xf16>, %qo0: tensor<2xi32>, %qo1: tensor<9xi32>, %kp0: tensor<2xi32>, %kp1: tensor<5xi32>, %ki0: tensor<?xi32>, %ki1: tensor<?xi32>, %kl0: tensor<1xi32>, %kl1: tensor<?xi32>, %o: tensor<?x32x128xf16>, %lse: tensor<?x32xf32>) {
  // expected-error@+1 {{'qo_indptr[1]' has 9 entries but 'kv_indptr[1]' has 5; both are [B+1]}}
  %r:2 = cascade.multi_level_attention q(%q : tensor<?x32x128xf16>) kv(%kv0 : tensor<?x2x16x8x128xf16>)
      qo_indptr(%qo0, %qo1 : tensor<2xi32>, tensor<9xi32>) kv_indptr(%kp0, %kp1 : tensor<2xi32>, tensor<5xi32>)
      kv_indices(%ki0, %ki1 : tensor<?xi32>, tensor<?xi32>) kv_last_page_len(%kl0, %kl1 : tensor<1xi32>, tensor<?xi32>)
      outs(%o, %lse : tensor<?x32x128xf16>, tensor<?x32xf32>) {page_size = 16 : i64}
      -> tensor<?x32x128xf16>, tensor<?x32xf32>
  return
}

// -----

// A shared-prefix level has one request ([0, B] qo_indptr): one last-page length.
func.func @shared_prefix_last_page_len(%q: tensor<?x32x128xf16>, %kv0: tensor<?x2x16x8x128xf16>, %qo0: tensor<2xi32>, %qo1: tensor<?xi32>, %kp0: tensor<2xi32>, %kp1: tensor<?xi32>, %ki0: tensor<?xi32>, %ki1: tensor<?xi32>, %kl0: tensor<2xi32>, %kl1: tensor<?xi32>, %o: tensor<?x32x128xf16>, %lse: tensor<?x32xf32>) {
  // expected-error@+1 {{'kv_last_page_len[0]' has 2 entries but 'kv_indptr[0]' has 2; expected [B] and [B+1]}}
  %r:2 = cascade.multi_level_attention q(%q : tensor<?x32x128xf16>) kv(%kv0 : tensor<?x2x16x8x128xf16>)
      qo_indptr(%qo0, %qo1 : tensor<2xi32>, tensor<?xi32>) kv_indptr(%kp0, %kp1 : tensor<2xi32>, tensor<?xi32>)
      kv_indices(%ki0, %ki1 : tensor<?xi32>, tensor<?xi32>) kv_last_page_len(%kl0, %kl1 : tensor<2xi32>, tensor<?xi32>)
      outs(%o, %lse : tensor<?x32x128xf16>, tensor<?x32xf32>) {page_size = 16 : i64}
      -> tensor<?x32x128xf16>, tensor<?x32xf32>
  return
}

// -----

func.func @three_levels_third_bad(%q: tensor<?x32x128xf16>, %kv0: tensor<?x2x16x8x128xf16>, %qo0: tensor<2xi32>, %qo1: tensor<?xi32>, %qo2: tensor<?xi32>, %kp0: tensor<2xi32>, %kp1: tensor<?xi32>, %kp2: tensor<0xi32>, %ki0: tensor<?xi32>, %ki1: tensor<?xi32>, %ki2: tensor<?xi32>, %kl0: tensor<1xi32>, %kl1: tensor<?xi32>, %kl2: tensor<?xi32>, %o: tensor<?x32x128xf16>, %lse: tensor<?x32xf32>) {
  // expected-error@+1 {{'kv_indptr[2]' must have at least 2 entries ([B+1], B >= 1), got 0}}
  %r:2 = cascade.multi_level_attention q(%q : tensor<?x32x128xf16>) kv(%kv0 : tensor<?x2x16x8x128xf16>)
      qo_indptr(%qo0, %qo1, %qo2 : tensor<2xi32>, tensor<?xi32>, tensor<?xi32>) kv_indptr(%kp0, %kp1, %kp2 : tensor<2xi32>, tensor<?xi32>, tensor<0xi32>)
      kv_indices(%ki0, %ki1, %ki2 : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) kv_last_page_len(%kl0, %kl1, %kl2 : tensor<1xi32>, tensor<?xi32>, tensor<?xi32>)
      outs(%o, %lse : tensor<?x32x128xf16>, tensor<?x32xf32>) {page_size = 16 : i64}
      -> tensor<?x32x128xf16>, tensor<?x32xf32>
  return
}

// -----

// A ragged level has no page table: kv_indices lists the other levels'.
func.func @ragged_level_with_table(%q: tensor<?x32x128xf16>, %kv0: tensor<?x2x16x8x128xf16>, %qo0: tensor<2xi32>, %qo1: tensor<?xi32>, %kp0: tensor<2xi32>, %kp1: tensor<?xi32>, %ki0: tensor<?xi32>, %ki1: tensor<?xi32>, %kl0: tensor<1xi32>, %kl1: tensor<?xi32>, %o: tensor<?x32x128xf16>, %lse: tensor<?x32xf32>) {
  // expected-error@+1 {{expects one kv_indices per level that is not ragged (ragged_levels): 1 of 2 levels, got 2}}
  %r:2 = cascade.multi_level_attention q(%q : tensor<?x32x128xf16>) kv(%kv0 : tensor<?x2x16x8x128xf16>)
      qo_indptr(%qo0, %qo1 : tensor<2xi32>, tensor<?xi32>) kv_indptr(%kp0, %kp1 : tensor<2xi32>, tensor<?xi32>)
      kv_indices(%ki0, %ki1 : tensor<?xi32>, tensor<?xi32>) kv_last_page_len(%kl0, %kl1 : tensor<1xi32>, tensor<?xi32>)
      outs(%o, %lse : tensor<?x32x128xf16>, tensor<?x32xf32>) {page_size = 16 : i64, ragged_levels = array<i1: true, false>}
      -> tensor<?x32x128xf16>, tensor<?x32xf32>
  return
}

// -----

func.func @ragged_levels_count(%q: tensor<?x32x128xf16>, %kv0: tensor<?x2x16x8x128xf16>, %qo0: tensor<2xi32>, %qo1: tensor<?xi32>, %kp0: tensor<2xi32>, %kp1: tensor<?xi32>, %ki1: tensor<?xi32>, %kl0: tensor<1xi32>, %kl1: tensor<?xi32>, %o: tensor<?x32x128xf16>, %lse: tensor<?x32xf32>) {
  // expected-error@+1 {{'ragged_levels' has 3 entries but the cascade has 2 levels}}
  %r:2 = cascade.multi_level_attention q(%q : tensor<?x32x128xf16>) kv(%kv0 : tensor<?x2x16x8x128xf16>)
      qo_indptr(%qo0, %qo1 : tensor<2xi32>, tensor<?xi32>) kv_indptr(%kp0, %kp1 : tensor<2xi32>, tensor<?xi32>)
      kv_indices(%ki1 : tensor<?xi32>) kv_last_page_len(%kl0, %kl1 : tensor<1xi32>, tensor<?xi32>)
      outs(%o, %lse : tensor<?x32x128xf16>, tensor<?x32xf32>) {page_size = 16 : i64, ragged_levels = array<i1: true, false, false>}
      -> tensor<?x32x128xf16>, tensor<?x32xf32>
  return
}

// -----

// Every level ragged: no kv_indices at all, and a table is one too many.
func.func @all_ragged_with_table(%q: tensor<?x32x128xf16>, %kv0: tensor<?x2x16x8x128xf16>, %qo0: tensor<2xi32>, %kp0: tensor<2xi32>, %ki0: tensor<?xi32>, %kl0: tensor<1xi32>, %o: tensor<?x32x128xf16>, %lse: tensor<?x32xf32>) {
  // expected-error@+1 {{expects one kv_indices per level that is not ragged (ragged_levels): 0 of 1 levels, got 1}}
  %r:2 = cascade.multi_level_attention q(%q : tensor<?x32x128xf16>) kv(%kv0 : tensor<?x2x16x8x128xf16>)
      qo_indptr(%qo0 : tensor<2xi32>) kv_indptr(%kp0 : tensor<2xi32>)
      kv_indices(%ki0 : tensor<?xi32>) kv_last_page_len(%kl0 : tensor<1xi32>)
      outs(%o, %lse : tensor<?x32x128xf16>, tensor<?x32xf32>) {page_size = 16 : i64, ragged_levels = array<i1: true>}
      -> tensor<?x32x128xf16>, tensor<?x32xf32>
  return
}
