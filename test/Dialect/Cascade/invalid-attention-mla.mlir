// RUN: cascade-opt %s -split-input-file -verify-diagnostics

// The latent (MLA) form of cascade.paged_attention: q_pe beside q (q_nope),
// the cache (ckv, kpe), sm_scale given.

// q_pe: q's rows, heads and element type.

func.func @q_pe_heads(%qn: tensor<4x16x512xbf16>, %qp: tensor<4x8x64xbf16>, %c0: tensor<?x64x512xbf16>, %c1: tensor<?x64x64xbf16>, %kvp: tensor<?xi32>, %kvi: tensor<?xi32>, %last: tensor<?xi32>, %o: tensor<4x16x512xbf16>, %lse: tensor<4x16xf32>) {
  // expected-error@+1 {{'q_pe' must be [rows, Hqo, Dr] with q's rows, heads and element type, got [4, 8, 64] 'bf16'}}
  %r:2 = cascade.paged_attention q(%qn : tensor<4x16x512xbf16>) q_pe(%qp : tensor<4x8x64xbf16>)
      kv(%c0, %c1 : tensor<?x64x512xbf16>, tensor<?x64x64xbf16>)
      kv_indptr(%kvp : tensor<?xi32>) kv_indices(%kvi : tensor<?xi32>) kv_last_page_len(%last : tensor<?xi32>)
      outs(%o, %lse : tensor<4x16x512xbf16>, tensor<4x16xf32>) {page_size = 64 : i64, sm_scale = 0.07 : f32}
      -> tensor<4x16x512xbf16>, tensor<4x16xf32>
  return
}

// -----

func.func @q_pe_type(%qn: tensor<4x16x512xbf16>, %qp: tensor<4x16x64xf16>, %c0: tensor<?x64x512xbf16>, %c1: tensor<?x64x64xbf16>, %kvp: tensor<?xi32>, %kvi: tensor<?xi32>, %last: tensor<?xi32>, %o: tensor<4x16x512xbf16>, %lse: tensor<4x16xf32>) {
  // expected-error@+1 {{'q_pe' must be [rows, Hqo, Dr] with q's rows, heads and element type, got [4, 16, 64] 'f16'}}
  %r:2 = cascade.paged_attention q(%qn : tensor<4x16x512xbf16>) q_pe(%qp : tensor<4x16x64xf16>)
      kv(%c0, %c1 : tensor<?x64x512xbf16>, tensor<?x64x64xbf16>)
      kv_indptr(%kvp : tensor<?xi32>) kv_indices(%kvi : tensor<?xi32>) kv_last_page_len(%last : tensor<?xi32>)
      outs(%o, %lse : tensor<4x16x512xbf16>, tensor<4x16xf32>) {page_size = 64 : i64, sm_scale = 0.07 : f32}
      -> tensor<4x16x512xbf16>, tensor<4x16xf32>
  return
}

// -----

func.func @q_pe_dim(%qn: tensor<4x16x512xbf16>, %qp: tensor<4x16x192xbf16>, %c0: tensor<?x64x512xbf16>, %c1: tensor<?x64x192xbf16>, %kvp: tensor<?xi32>, %kvi: tensor<?xi32>, %last: tensor<?xi32>, %o: tensor<4x16x512xbf16>, %lse: tensor<4x16xf32>) {
  // expected-error@+1 {{the rotary head_dim must be a positive multiple of 8 and at most 128, got 192}}
  %r:2 = cascade.paged_attention q(%qn : tensor<4x16x512xbf16>) q_pe(%qp : tensor<4x16x192xbf16>)
      kv(%c0, %c1 : tensor<?x64x512xbf16>, tensor<?x64x192xbf16>)
      kv_indptr(%kvp : tensor<?xi32>) kv_indices(%kvi : tensor<?xi32>) kv_last_page_len(%last : tensor<?xi32>)
      outs(%o, %lse : tensor<4x16x512xbf16>, tensor<4x16xf32>) {page_size = 64 : i64, sm_scale = 0.07 : f32}
      -> tensor<4x16x512xbf16>, tensor<4x16xf32>
  return
}

// -----

// The latent head_dim (q_nope's, ckv's) goes up to 512.

func.func @latent_dim(%qn: tensor<4x16x520xbf16>, %qp: tensor<4x16x64xbf16>, %c0: tensor<?x64x520xbf16>, %c1: tensor<?x64x64xbf16>, %kvp: tensor<?xi32>, %kvi: tensor<?xi32>, %last: tensor<?xi32>, %o: tensor<4x16x520xbf16>, %lse: tensor<4x16xf32>) {
  // expected-error@+1 {{head_dim must be a positive multiple of 8 and at most 512, got 520}}
  %r:2 = cascade.paged_attention q(%qn : tensor<4x16x520xbf16>) q_pe(%qp : tensor<4x16x64xbf16>)
      kv(%c0, %c1 : tensor<?x64x520xbf16>, tensor<?x64x64xbf16>)
      kv_indptr(%kvp : tensor<?xi32>) kv_indices(%kvi : tensor<?xi32>) kv_last_page_len(%last : tensor<?xi32>)
      outs(%o, %lse : tensor<4x16x520xbf16>, tensor<4x16xf32>) {page_size = 64 : i64, sm_scale = 0.07 : f32}
      -> tensor<4x16x520xbf16>, tensor<4x16xf32>
  return
}

// -----

func.func @one_cache(%qn: tensor<4x16x512xbf16>, %qp: tensor<4x16x64xbf16>, %c0: tensor<?x64x512xbf16>, %kvp: tensor<?xi32>, %kvi: tensor<?xi32>, %last: tensor<?xi32>, %o: tensor<4x16x512xbf16>, %lse: tensor<4x16xf32>) {
  // expected-error@+1 {{the latent form (q_pe) expects the cache pair kv(ckv, kpe), got 1 values}}
  %r:2 = cascade.paged_attention q(%qn : tensor<4x16x512xbf16>) q_pe(%qp : tensor<4x16x64xbf16>)
      kv(%c0 : tensor<?x64x512xbf16>)
      kv_indptr(%kvp : tensor<?xi32>) kv_indices(%kvi : tensor<?xi32>) kv_last_page_len(%last : tensor<?xi32>)
      outs(%o, %lse : tensor<4x16x512xbf16>, tensor<4x16xf32>) {page_size = 64 : i64, sm_scale = 0.07 : f32}
      -> tensor<4x16x512xbf16>, tensor<4x16xf32>
  return
}

// -----

// The latent cache has no head dimension.

func.func @ckv_heads(%qn: tensor<4x16x512xbf16>, %qp: tensor<4x16x64xbf16>, %c0: tensor<?x64x1x512xbf16>, %c1: tensor<?x64x1x64xbf16>, %kvp: tensor<?xi32>, %kvi: tensor<?xi32>, %last: tensor<?xi32>, %o: tensor<4x16x512xbf16>, %lse: tensor<4x16xf32>) {
  // expected-error@+1 {{'ckv' must be [P, page_size, 512] (one row per token, shared by every head), got [?, 64, 1, 512]}}
  %r:2 = cascade.paged_attention q(%qn : tensor<4x16x512xbf16>) q_pe(%qp : tensor<4x16x64xbf16>)
      kv(%c0, %c1 : tensor<?x64x1x512xbf16>, tensor<?x64x1x64xbf16>)
      kv_indptr(%kvp : tensor<?xi32>) kv_indices(%kvi : tensor<?xi32>) kv_last_page_len(%last : tensor<?xi32>)
      outs(%o, %lse : tensor<4x16x512xbf16>, tensor<4x16xf32>) {page_size = 64 : i64, sm_scale = 0.07 : f32}
      -> tensor<4x16x512xbf16>, tensor<4x16xf32>
  return
}

// -----

func.func @kpe_width(%qn: tensor<4x16x512xbf16>, %qp: tensor<4x16x64xbf16>, %c0: tensor<?x64x512xbf16>, %c1: tensor<?x64x32xbf16>, %kvp: tensor<?xi32>, %kvi: tensor<?xi32>, %last: tensor<?xi32>, %o: tensor<4x16x512xbf16>, %lse: tensor<4x16xf32>) {
  // expected-error@+1 {{'kpe' must be [P, page_size, 64] (one row per token, shared by every head), got [?, 64, 32]}}
  %r:2 = cascade.paged_attention q(%qn : tensor<4x16x512xbf16>) q_pe(%qp : tensor<4x16x64xbf16>)
      kv(%c0, %c1 : tensor<?x64x512xbf16>, tensor<?x64x32xbf16>)
      kv_indptr(%kvp : tensor<?xi32>) kv_indices(%kvi : tensor<?xi32>) kv_last_page_len(%last : tensor<?xi32>)
      outs(%o, %lse : tensor<4x16x512xbf16>, tensor<4x16xf32>) {page_size = 64 : i64, sm_scale = 0.07 : f32}
      -> tensor<4x16x512xbf16>, tensor<4x16xf32>
  return
}

// -----

func.func @ckv_width(%qn: tensor<4x16x512xbf16>, %qp: tensor<4x16x64xbf16>, %c0: tensor<?x64x256xbf16>, %c1: tensor<?x64x64xbf16>, %kvp: tensor<?xi32>, %kvi: tensor<?xi32>, %last: tensor<?xi32>, %o: tensor<4x16x512xbf16>, %lse: tensor<4x16xf32>) {
  // expected-error@+1 {{'ckv' must be [P, page_size, 512] (one row per token, shared by every head), got [?, 64, 256]}}
  %r:2 = cascade.paged_attention q(%qn : tensor<4x16x512xbf16>) q_pe(%qp : tensor<4x16x64xbf16>)
      kv(%c0, %c1 : tensor<?x64x256xbf16>, tensor<?x64x64xbf16>)
      kv_indptr(%kvp : tensor<?xi32>) kv_indices(%kvi : tensor<?xi32>) kv_last_page_len(%last : tensor<?xi32>)
      outs(%o, %lse : tensor<4x16x512xbf16>, tensor<4x16xf32>) {page_size = 64 : i64, sm_scale = 0.07 : f32}
      -> tensor<4x16x512xbf16>, tensor<4x16xf32>
  return
}

// -----

func.func @cache_types(%qn: tensor<4x16x512xbf16>, %qp: tensor<4x16x64xbf16>, %c0: tensor<?x64x512xbf16>, %c1: tensor<?x64x64xf16>, %kvp: tensor<?xi32>, %kvi: tensor<?xi32>, %last: tensor<?xi32>, %o: tensor<4x16x512xbf16>, %lse: tensor<4x16xf32>) {
  // expected-error@+1 {{'ckv' and 'kpe' must have one element type, got 'bf16' and 'f16'}}
  %r:2 = cascade.paged_attention q(%qn : tensor<4x16x512xbf16>) q_pe(%qp : tensor<4x16x64xbf16>)
      kv(%c0, %c1 : tensor<?x64x512xbf16>, tensor<?x64x64xf16>)
      kv_indptr(%kvp : tensor<?xi32>) kv_indices(%kvi : tensor<?xi32>) kv_last_page_len(%last : tensor<?xi32>)
      outs(%o, %lse : tensor<4x16x512xbf16>, tensor<4x16xf32>) {page_size = 64 : i64, sm_scale = 0.07 : f32}
      -> tensor<4x16x512xbf16>, tensor<4x16xf32>
  return
}

// -----

func.func @cache_pages(%qn: tensor<4x16x512xbf16>, %qp: tensor<4x16x64xbf16>, %c0: tensor<8x64x512xbf16>, %c1: tensor<9x64x64xbf16>, %kvp: tensor<?xi32>, %kvi: tensor<?xi32>, %last: tensor<?xi32>, %o: tensor<4x16x512xbf16>, %lse: tensor<4x16xf32>) {
  // expected-error@+1 {{'ckv' [8, 64, 512] and 'kpe' [9, 64, 64] must have the same pages and page size}}
  %r:2 = cascade.paged_attention q(%qn : tensor<4x16x512xbf16>) q_pe(%qp : tensor<4x16x64xbf16>)
      kv(%c0, %c1 : tensor<8x64x512xbf16>, tensor<9x64x64xbf16>)
      kv_indptr(%kvp : tensor<?xi32>) kv_indices(%kvi : tensor<?xi32>) kv_last_page_len(%last : tensor<?xi32>)
      outs(%o, %lse : tensor<4x16x512xbf16>, tensor<4x16xf32>) {page_size = 64 : i64, sm_scale = 0.07 : f32}
      -> tensor<4x16x512xbf16>, tensor<4x16xf32>
  return
}

// -----

func.func @page_size(%qn: tensor<4x16x512xbf16>, %qp: tensor<4x16x64xbf16>, %c0: tensor<?x64x512xbf16>, %c1: tensor<?x64x64xbf16>, %kvp: tensor<?xi32>, %kvi: tensor<?xi32>, %last: tensor<?xi32>, %o: tensor<4x16x512xbf16>, %lse: tensor<4x16xf32>) {
  // expected-error@+1 {{page dimension of the KV cache is 64 but page_size = 16}}
  %r:2 = cascade.paged_attention q(%qn : tensor<4x16x512xbf16>) q_pe(%qp : tensor<4x16x64xbf16>)
      kv(%c0, %c1 : tensor<?x64x512xbf16>, tensor<?x64x64xbf16>)
      kv_indptr(%kvp : tensor<?xi32>) kv_indices(%kvi : tensor<?xi32>) kv_last_page_len(%last : tensor<?xi32>)
      outs(%o, %lse : tensor<4x16x512xbf16>, tensor<4x16xf32>) {page_size = 16 : i64, sm_scale = 0.07 : f32}
      -> tensor<4x16x512xbf16>, tensor<4x16xf32>
  return
}

// -----

func.func @hnd(%qn: tensor<4x16x512xbf16>, %qp: tensor<4x16x64xbf16>, %c0: tensor<?x64x512xbf16>, %c1: tensor<?x64x64xbf16>, %kvp: tensor<?xi32>, %kvi: tensor<?xi32>, %last: tensor<?xi32>, %o: tensor<4x16x512xbf16>, %lse: tensor<4x16xf32>) {
  // expected-error@+1 {{a latent cache has no head dimension: kv_layout must be nhd}}
  %r:2 = cascade.paged_attention q(%qn : tensor<4x16x512xbf16>) q_pe(%qp : tensor<4x16x64xbf16>)
      kv(%c0, %c1 : tensor<?x64x512xbf16>, tensor<?x64x64xbf16>)
      kv_indptr(%kvp : tensor<?xi32>) kv_indices(%kvi : tensor<?xi32>) kv_last_page_len(%last : tensor<?xi32>)
      outs(%o, %lse : tensor<4x16x512xbf16>, tensor<4x16xf32>) {page_size = 64 : i64, sm_scale = 0.07 : f32, kv_layout = #cascade.kv_layout<hnd>}
      -> tensor<4x16x512xbf16>, tensor<4x16xf32>
  return
}

// -----

func.func @no_sm_scale(%qn: tensor<4x16x512xbf16>, %qp: tensor<4x16x64xbf16>, %c0: tensor<?x64x512xbf16>, %c1: tensor<?x64x64xbf16>, %kvp: tensor<?xi32>, %kvi: tensor<?xi32>, %last: tensor<?xi32>, %o: tensor<4x16x512xbf16>, %lse: tensor<4x16xf32>) {
  // expected-error@+1 {{the latent form needs 'sm_scale' (1/sqrt of the model's head_dim before absorption)}}
  %r:2 = cascade.paged_attention q(%qn : tensor<4x16x512xbf16>) q_pe(%qp : tensor<4x16x64xbf16>)
      kv(%c0, %c1 : tensor<?x64x512xbf16>, tensor<?x64x64xbf16>)
      kv_indptr(%kvp : tensor<?xi32>) kv_indices(%kvi : tensor<?xi32>) kv_last_page_len(%last : tensor<?xi32>)
      outs(%o, %lse : tensor<4x16x512xbf16>, tensor<4x16xf32>) {page_size = 64 : i64}
      -> tensor<4x16x512xbf16>, tensor<4x16xf32>
  return
}

// -----

func.func @rope(%qn: tensor<4x16x512xbf16>, %qp: tensor<4x16x64xbf16>, %c0: tensor<?x64x512xbf16>, %c1: tensor<?x64x64xbf16>, %kvp: tensor<?xi32>, %kvi: tensor<?xi32>, %last: tensor<?xi32>, %o: tensor<4x16x512xbf16>, %lse: tensor<4x16xf32>) {
  // expected-error@+1 {{the latent form takes its rotary part rotated (q_pe, kpe): pos_encoding must be none}}
  %r:2 = cascade.paged_attention q(%qn : tensor<4x16x512xbf16>) q_pe(%qp : tensor<4x16x64xbf16>)
      kv(%c0, %c1 : tensor<?x64x512xbf16>, tensor<?x64x64xbf16>)
      kv_indptr(%kvp : tensor<?xi32>) kv_indices(%kvi : tensor<?xi32>) kv_last_page_len(%last : tensor<?xi32>)
      outs(%o, %lse : tensor<4x16x512xbf16>, tensor<4x16xf32>) {page_size = 64 : i64, sm_scale = 0.07 : f32, pos_encoding = #cascade.pos_encoding<rope_llama>}
      -> tensor<4x16x512xbf16>, tensor<4x16xf32>
  return
}

// -----

// The output is in the latent space: q_nope's width.

func.func @output_width(%qn: tensor<4x16x512xbf16>, %qp: tensor<4x16x64xbf16>, %c0: tensor<?x64x512xbf16>, %c1: tensor<?x64x64xbf16>, %kvp: tensor<?xi32>, %kvi: tensor<?xi32>, %last: tensor<?xi32>, %o: tensor<4x16x576xbf16>, %lse: tensor<4x16xf32>) {
  // expected-error@+1 {{'o' must be [4, 16, 512] 'bf16' (q's rows, heads and element type, v's head_dim), got [4, 16, 576] 'bf16'}}
  %r:2 = cascade.paged_attention q(%qn : tensor<4x16x512xbf16>) q_pe(%qp : tensor<4x16x64xbf16>)
      kv(%c0, %c1 : tensor<?x64x512xbf16>, tensor<?x64x64xbf16>)
      kv_indptr(%kvp : tensor<?xi32>) kv_indices(%kvi : tensor<?xi32>) kv_last_page_len(%last : tensor<?xi32>)
      outs(%o, %lse : tensor<4x16x576xbf16>, tensor<4x16xf32>) {page_size = 64 : i64, sm_scale = 0.07 : f32}
      -> tensor<4x16x576xbf16>, tensor<4x16xf32>
  return
}

// -----

func.func @cache_type(%qn: tensor<4x16x512xbf16>, %qp: tensor<4x16x64xbf16>, %c0: tensor<?x64x512xf32>, %c1: tensor<?x64x64xf32>, %kvp: tensor<?xi32>, %kvi: tensor<?xi32>, %last: tensor<?xi32>, %o: tensor<4x16x512xbf16>, %lse: tensor<4x16xf32>) {
  // expected-error@+1 {{KV cache element type must be f16, bf16, f8E4M3FN or f8E5M2, got 'f32'}}
  %r:2 = cascade.paged_attention q(%qn : tensor<4x16x512xbf16>) q_pe(%qp : tensor<4x16x64xbf16>)
      kv(%c0, %c1 : tensor<?x64x512xf32>, tensor<?x64x64xf32>)
      kv_indptr(%kvp : tensor<?xi32>) kv_indices(%kvi : tensor<?xi32>) kv_last_page_len(%last : tensor<?xi32>)
      outs(%o, %lse : tensor<4x16x512xbf16>, tensor<4x16xf32>) {page_size = 64 : i64, sm_scale = 0.07 : f32}
      -> tensor<4x16x512xbf16>, tensor<4x16xf32>
  return
}

// -----

// A latent cascade takes no plans yet.

func.func @latent_plans(%qn: memref<4x16x512xbf16>, %qp: memref<4x16x64xbf16>, %c0: memref<?x64x512xbf16>, %c1: memref<?x64x64xbf16>, %qo: memref<?xi32>, %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>, %p: !cascade.plan<decode, heads = 16 / 1, head_dim = 128, page_size = 64>, %o: memref<4x16x512xbf16>, %lse: memref<4x16xf32>) {
  // expected-error@+1 {{a latent (MLA) level takes no plan yet: its kernels, whose query rows are the heads, have no plan-phase schedule}}
  cascade.multi_level_attention q(%qn : memref<4x16x512xbf16>) q_pe(%qp : memref<4x16x64xbf16>)
      kv(%c0, %c1 : memref<?x64x512xbf16>, memref<?x64x64xbf16>)
      qo_indptr(%qo : memref<?xi32>) kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>)
      kv_last_page_len(%last : memref<?xi32>) plans(%p : !cascade.plan<decode, heads = 16 / 1, head_dim = 128, page_size = 64>)
      outs(%o, %lse : memref<4x16x512xbf16>, memref<4x16xf32>)
      {page_size = 64 : i64, sm_scale = 0.07 : f32, decode_levels = array<i1: true>}
  return
}
