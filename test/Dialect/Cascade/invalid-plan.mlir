// RUN: cascade-opt %s -split-input-file -verify-diagnostics

// !cascade.plan, cascade.plan, and the plans of attention ops.

// expected-error@+1 {{plan heads must be positive with the query heads a multiple of the KV heads, got 32 / 6}}
func.func private @heads(!cascade.plan<decode, heads = 32 / 6, head_dim = 128, page_size = 16>)

// -----

// expected-error@+1 {{plan head_dim must be a positive multiple of 8 and at most 256, got 100}}
func.func private @head_dim(!cascade.plan<decode, heads = 32 / 8, head_dim = 100, page_size = 16>)

// -----

// expected-error@+1 {{plan page_size must be positive, got 0}}
func.func private @page(!cascade.plan<decode, heads = 32 / 8, head_dim = 128, page_size = 0>)

// -----

// expected-error@+1 {{plan graph_rows must be >= 0 (0: not CUDA-graph mode), got -4}}
func.func private @graph(!cascade.plan<decode, heads = 32 / 8, head_dim = 128, page_size = 16, graph_rows = -4>)

// -----

// expected-error@+1 {{expected 'decode' or 'prefill', got 'append'}}
func.func private @mode(!cascade.plan<append, heads = 32 / 8, head_dim = 128, page_size = 16>)

// -----

func.func @prefill_without_qo(%kp: memref<?xi32>, %kl: memref<?xi32>) {
  // expected-error@+1 {{a prefill plan needs 'qo_indptr'}}
  %p = cascade.plan kv_indptr(%kp : memref<?xi32>) kv_last_page_len(%kl : memref<?xi32>)
      : !cascade.plan<prefill, heads = 32 / 8, head_dim = 128, page_size = 16>
  return
}

// -----

func.func @decode_with_qo(%qo: memref<?xi32>, %kp: memref<?xi32>, %kl: memref<?xi32>) {
  // expected-error@+1 {{a decode plan takes no 'qo_indptr' (one query per request)}}
  %p = cascade.plan qo_indptr(%qo : memref<?xi32>) kv_indptr(%kp : memref<?xi32>) kv_last_page_len(%kl : memref<?xi32>)
      : !cascade.plan<decode, heads = 32 / 8, head_dim = 128, page_size = 16>
  return
}

// -----

func.func @split_options(%kp: memref<?xi32>, %kl: memref<?xi32>) {
  // expected-error@+1 {{'fixed_split_pages' and 'disable_split_kv' exclude each other}}
  %p = cascade.plan kv_indptr(%kp : memref<?xi32>) kv_last_page_len(%kl : memref<?xi32>)
      {fixed_split_pages = 2 : i64, disable_split_kv}
      : !cascade.plan<decode, heads = 32 / 8, head_dim = 128, page_size = 16>
  return
}

// -----

func.func @negative_split(%kp: memref<?xi32>, %kl: memref<?xi32>) {
  // expected-error@+1 {{'fixed_split_pages' must be >= 0, got -2}}
  %p = cascade.plan kv_indptr(%kp : memref<?xi32>) kv_last_page_len(%kl : memref<?xi32>)
      {fixed_split_pages = -2 : i64} : !cascade.plan<decode, heads = 32 / 8, head_dim = 128, page_size = 16>
  return
}

// -----

// expected-error@+1 {{automatic cascades from IR are decode batches (one query per request); got a prefill plan}}
func.func private @auto_prefill(!cascade.plan<prefill, heads = 32 / 8, head_dim = 128, page_size = 16, auto_cascade>)

// -----

func.func @auto_without_ids(%kp: memref<?xi32>, %kl: memref<?xi32>) {
  // expected-error@+1 {{an auto_cascade plan needs 'kv_indices' (the page ids whose shared prefixes it finds)}}
  %p = cascade.plan kv_indptr(%kp : memref<?xi32>) kv_last_page_len(%kl : memref<?xi32>)
      : !cascade.plan<decode, heads = 32 / 8, head_dim = 128, page_size = 16, auto_cascade>
  return
}

// -----

func.func @auto_split_options(%kp: memref<?xi32>, %kl: memref<?xi32>, %ki: memref<?xi32>) {
  // expected-error@+1 {{an auto_cascade plan takes no split options}}
  %p = cascade.plan kv_indptr(%kp : memref<?xi32>) kv_last_page_len(%kl : memref<?xi32>) kv_indices(%ki : memref<?xi32>)
      {disable_split_kv} : !cascade.plan<decode, heads = 32 / 8, head_dim = 128, page_size = 16, auto_cascade>
  return
}

// -----

!auto = !cascade.plan<decode, heads = 32 / 8, head_dim = 128, page_size = 16, auto_cascade>
!decode = !cascade.plan<decode, heads = 32 / 8, head_dim = 128, page_size = 16>
func.func @auto_on_a_level(%q: tensor<?x32x128xf16>, %c: tensor<?x2x16x8x128xf16>,
    %qo0: tensor<2xi32>, %qo1: tensor<?xi32>, %kp0: tensor<2xi32>, %kp1: tensor<?xi32>,
    %ki0: tensor<?xi32>, %ki1: tensor<?xi32>, %kl0: tensor<1xi32>, %kl1: tensor<?xi32>,
    %p0: !decode, %p1: !auto, %o: tensor<?x32x128xf16>, %lse: tensor<?x32xf32>) {
  // expected-error@+1 {{plan [1] is an auto_cascade plan: it belongs on a plain cascade.paged_attention, whose levels it finds}}
  %r:2 = cascade.multi_level_attention q(%q : tensor<?x32x128xf16>) kv(%c : tensor<?x2x16x8x128xf16>)
      qo_indptr(%qo0, %qo1 : tensor<2xi32>, tensor<?xi32>) kv_indptr(%kp0, %kp1 : tensor<2xi32>, tensor<?xi32>)
      kv_indices(%ki0, %ki1 : tensor<?xi32>, tensor<?xi32>) kv_last_page_len(%kl0, %kl1 : tensor<1xi32>, tensor<?xi32>)
      plans(%p0, %p1 : !decode, !auto)
      outs(%o, %lse : tensor<?x32x128xf16>, tensor<?x32xf32>)
      {page_size = 16 : i64, decode_levels = array<i1: true, true>} -> tensor<?x32x128xf16>, tensor<?x32xf32>
  return
}

// -----

func.func @occupancy(%kp: memref<?xi32>, %kl: memref<?xi32>) {
  // expected-error@+1 {{'occupancy' must be >= 1, got 0}}
  %p = cascade.plan kv_indptr(%kp : memref<?xi32>) kv_last_page_len(%kl : memref<?xi32>)
      {occupancy = 0 : i64} : !cascade.plan<decode, heads = 32 / 8, head_dim = 128, page_size = 16>
  return
}

// -----

func.func @batch_sizes(%kp: memref<5xi32>, %kl: memref<3xi32>) {
  // expected-error@+1 {{'kv_last_page_len' has 3 entries but 'kv_indptr' has 5; expected [B] and [B+1]}}
  %p = cascade.plan kv_indptr(%kp : memref<5xi32>) kv_last_page_len(%kl : memref<3xi32>)
      : !cascade.plan<decode, heads = 32 / 8, head_dim = 128, page_size = 16>
  return
}

// -----

func.func @host_arrays_i64(%kp: memref<?xi64>, %kl: memref<?xi32>) {
  // expected-error@+1 {{operand #0 must be 1D memref of 32-bit signless integer values}}
  %p = cascade.plan kv_indptr(%kp : memref<?xi64>) kv_last_page_len(%kl : memref<?xi32>)
      : !cascade.plan<decode, heads = 32 / 8, head_dim = 128, page_size = 16>
  return
}

// -----

!prefill = !cascade.plan<prefill, heads = 32 / 8, head_dim = 128, page_size = 16>
func.func @decode_level_prefill_plan(%q: tensor<?x32x128xf16>, %c: tensor<?x2x16x8x128xf16>,
    %qo0: tensor<2xi32>, %qo1: tensor<?xi32>, %kp0: tensor<2xi32>, %kp1: tensor<?xi32>,
    %ki0: tensor<?xi32>, %ki1: tensor<?xi32>, %kl0: tensor<1xi32>, %kl1: tensor<?xi32>,
    %p0: !prefill, %p1: !prefill, %o: tensor<?x32x128xf16>, %lse: tensor<?x32xf32>) {
  // expected-error@+1 {{plan [1] is a prefill plan but the level is a decode (one query per request)}}
  %r:2 = cascade.multi_level_attention q(%q : tensor<?x32x128xf16>) kv(%c : tensor<?x2x16x8x128xf16>)
      qo_indptr(%qo0, %qo1 : tensor<2xi32>, tensor<?xi32>) kv_indptr(%kp0, %kp1 : tensor<2xi32>, tensor<?xi32>)
      kv_indices(%ki0, %ki1 : tensor<?xi32>, tensor<?xi32>) kv_last_page_len(%kl0, %kl1 : tensor<1xi32>, tensor<?xi32>)
      plans(%p0, %p1 : !prefill, !prefill)
      outs(%o, %lse : tensor<?x32x128xf16>, tensor<?x32xf32>)
      {page_size = 16 : i64, decode_levels = array<i1: false, true>} -> tensor<?x32x128xf16>, tensor<?x32xf32>
  return
}

// -----

!prefill = !cascade.plan<prefill, heads = 32 / 8, head_dim = 128, page_size = 16>
func.func @plan_count(%q: tensor<?x32x128xf16>, %c: tensor<?x2x16x8x128xf16>,
    %qo0: tensor<2xi32>, %qo1: tensor<?xi32>, %kp0: tensor<2xi32>, %kp1: tensor<?xi32>,
    %ki0: tensor<?xi32>, %ki1: tensor<?xi32>, %kl0: tensor<1xi32>, %kl1: tensor<?xi32>,
    %p0: !prefill, %o: tensor<?x32x128xf16>, %lse: tensor<?x32xf32>) {
  // expected-error@+1 {{expects one plan per level, got 1 plans for 2 levels}}
  %r:2 = cascade.multi_level_attention q(%q : tensor<?x32x128xf16>) kv(%c : tensor<?x2x16x8x128xf16>)
      qo_indptr(%qo0, %qo1 : tensor<2xi32>, tensor<?xi32>) kv_indptr(%kp0, %kp1 : tensor<2xi32>, tensor<?xi32>)
      kv_indices(%ki0, %ki1 : tensor<?xi32>, tensor<?xi32>) kv_last_page_len(%kl0, %kl1 : tensor<1xi32>, tensor<?xi32>)
      plans(%p0 : !prefill)
      outs(%o, %lse : tensor<?x32x128xf16>, tensor<?x32xf32>)
      {page_size = 16 : i64} -> tensor<?x32x128xf16>, tensor<?x32xf32>
  return
}

// -----

!prefill = !cascade.plan<prefill, heads = 32 / 8, head_dim = 128, page_size = 16>
!graph = !cascade.plan<prefill, heads = 32 / 8, head_dim = 128, page_size = 16, graph_rows = 64>
func.func @graph_mix(%q: tensor<?x32x128xf16>, %c: tensor<?x2x16x8x128xf16>,
    %qo0: tensor<2xi32>, %qo1: tensor<?xi32>, %kp0: tensor<2xi32>, %kp1: tensor<?xi32>,
    %ki0: tensor<?xi32>, %ki1: tensor<?xi32>, %kl0: tensor<1xi32>, %kl1: tensor<?xi32>,
    %p0: !graph, %p1: !prefill, %o: tensor<?x32x128xf16>, %lse: tensor<?x32xf32>) {
  // expected-error@+1 {{plan [1] is not in CUDA-graph mode but plan [0] is; all levels replay or none}}
  %r:2 = cascade.multi_level_attention q(%q : tensor<?x32x128xf16>) kv(%c : tensor<?x2x16x8x128xf16>)
      qo_indptr(%qo0, %qo1 : tensor<2xi32>, tensor<?xi32>) kv_indptr(%kp0, %kp1 : tensor<2xi32>, tensor<?xi32>)
      kv_indices(%ki0, %ki1 : tensor<?xi32>, tensor<?xi32>) kv_last_page_len(%kl0, %kl1 : tensor<1xi32>, tensor<?xi32>)
      plans(%p0, %p1 : !graph, !prefill)
      outs(%o, %lse : tensor<?x32x128xf16>, tensor<?x32xf32>)
      {page_size = 16 : i64} -> tensor<?x32x128xf16>, tensor<?x32xf32>
  return
}

// -----

func.func @heads_mismatch(%q: memref<?x32x128xf16>, %c: memref<?x2x16x8x128xf16>, %kp: memref<?xi32>, %ki: memref<?xi32>, %kl: memref<?xi32>,
    %p: !cascade.plan<decode, heads = 32 / 4, head_dim = 128, page_size = 16>, %o: memref<?x32x128xf16>, %lse: memref<?x32xf32>) {
  // expected-error@+1 {{plan is for 32 / 4 heads but the op has 32 / 8}}
  cascade.paged_attention q(%q : memref<?x32x128xf16>) kv(%c : memref<?x2x16x8x128xf16>)
      kv_indptr(%kp : memref<?xi32>) kv_indices(%ki : memref<?xi32>) kv_last_page_len(%kl : memref<?xi32>)
      plan(%p : !cascade.plan<decode, heads = 32 / 4, head_dim = 128, page_size = 16>)
      outs(%o, %lse : memref<?x32x128xf16>, memref<?x32xf32>) {page_size = 16 : i64}
  return
}

// -----

func.func @head_dim_mismatch(%q: memref<?x32x128xf16>, %c: memref<?x2x16x8x128xf16>, %kp: memref<?xi32>, %ki: memref<?xi32>, %kl: memref<?xi32>,
    %p: !cascade.plan<decode, heads = 32 / 8, head_dim = 64, page_size = 16>, %o: memref<?x32x128xf16>, %lse: memref<?x32xf32>) {
  // expected-error@+1 {{plan is for head_dim 64 but the op has 128}}
  cascade.paged_attention q(%q : memref<?x32x128xf16>) kv(%c : memref<?x2x16x8x128xf16>)
      kv_indptr(%kp : memref<?xi32>) kv_indices(%ki : memref<?xi32>) kv_last_page_len(%kl : memref<?xi32>)
      plan(%p : !cascade.plan<decode, heads = 32 / 8, head_dim = 64, page_size = 16>)
      outs(%o, %lse : memref<?x32x128xf16>, memref<?x32xf32>) {page_size = 16 : i64}
  return
}

// -----

func.func @page_mismatch(%q: memref<?x32x128xf16>, %c: memref<?x2x16x8x128xf16>, %kp: memref<?xi32>, %ki: memref<?xi32>, %kl: memref<?xi32>,
    %p: !cascade.plan<decode, heads = 32 / 8, head_dim = 128, page_size = 32>, %o: memref<?x32x128xf16>, %lse: memref<?x32xf32>) {
  // expected-error@+1 {{plan is for page_size 32 but the op has 16}}
  cascade.paged_attention q(%q : memref<?x32x128xf16>) kv(%c : memref<?x2x16x8x128xf16>)
      kv_indptr(%kp : memref<?xi32>) kv_indices(%ki : memref<?xi32>) kv_last_page_len(%kl : memref<?xi32>)
      plan(%p : !cascade.plan<decode, heads = 32 / 8, head_dim = 128, page_size = 32>)
      outs(%o, %lse : memref<?x32x128xf16>, memref<?x32xf32>) {page_size = 16 : i64}
  return
}

// -----

func.func @graph_capacity(%q: memref<64x32x128xf16>, %c: memref<?x2x16x8x128xf16>, %kp: memref<65xi32>, %ki: memref<?xi32>, %kl: memref<64xi32>,
    %p: !cascade.plan<decode, heads = 32 / 8, head_dim = 128, page_size = 16, graph_rows = 32>, %o: memref<64x32x128xf16>, %lse: memref<64x32xf32>) {
  // expected-error@+1 {{plan holds up to 32 rows (graph_rows) but 'q' has 64}}
  cascade.paged_attention q(%q : memref<64x32x128xf16>) kv(%c : memref<?x2x16x8x128xf16>)
      kv_indptr(%kp : memref<65xi32>) kv_indices(%ki : memref<?xi32>) kv_last_page_len(%kl : memref<64xi32>)
      plan(%p : !cascade.plan<decode, heads = 32 / 8, head_dim = 128, page_size = 16, graph_rows = 32>)
      outs(%o, %lse : memref<64x32x128xf16>, memref<64x32xf32>) {page_size = 16 : i64}
  return
}

// -----

func.func @prefill_op_decode_plan(%q: memref<?x32x128xf16>, %c: memref<?x2x16x8x128xf16>, %qo: memref<?xi32>, %kp: memref<?xi32>, %ki: memref<?xi32>, %kl: memref<?xi32>,
    %p: !cascade.plan<decode, heads = 32 / 8, head_dim = 128, page_size = 16>, %o: memref<?x32x128xf16>, %lse: memref<?x32xf32>) {
  // expected-error@+1 {{plan is a decode plan but the level is a prefill}}
  cascade.paged_attention q(%q : memref<?x32x128xf16>) kv(%c : memref<?x2x16x8x128xf16>)
      qo_indptr(%qo : memref<?xi32>) kv_indptr(%kp : memref<?xi32>) kv_indices(%ki : memref<?xi32>) kv_last_page_len(%kl : memref<?xi32>)
      plan(%p : !cascade.plan<decode, heads = 32 / 8, head_dim = 128, page_size = 16>)
      outs(%o, %lse : memref<?x32x128xf16>, memref<?x32xf32>) {page_size = 16 : i64}
  return
}
