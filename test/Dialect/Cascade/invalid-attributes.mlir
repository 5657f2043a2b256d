// RUN: cascade-opt %s -split-input-file -verify-diagnostics

// Attribute constraints and enum parsing (page_size, sm_scale, window_left, kv_layout, pos_encoding, lse_base, kernel_config's fp8_staging, exp2_emulation and page_lookahead).

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

// -----

// #cascade.kernel_config's fp8_staging: an mma_sync option, whose direct
// reads keep one warp's Q fragments in registers.

// expected-error@+1 {{fp8_staging = direct_kv is an mma_sync option}}
func.func private @fp8_staging_rows() attributes {config = #cascade.kernel_config<rows, threads = [16, 1, 8], q_tile = 1, kv_tile = 32, stages = 4, fp8_staging = direct_kv>}

// -----

// expected-error@+1 {{fp8_staging = direct_k is an mma_sync option}}
func.func private @fp8_staging_wgmma() attributes {config = #cascade.kernel_config<wgmma, threads = [128, 3, 1], q_tile = 128, kv_tile = 128, stages = 3, fp8_staging = direct_k>}

// -----

// expected-error@+1 {{fp8_staging = direct_k is an mma_sync option}}
func.func private @fp8_staging_merge() attributes {config = #cascade.kernel_config<merge, threads = [64, 1, 1], q_tile = 8, kv_tile = 0, stages = 1, fp8_staging = direct_k>}

// -----

// expected-error@+1 {{fp8_staging = direct_kv needs threads[1] = 1 and q_tile = 16 (one warp along the query rows, its Q fragments in registers), got threads[1] = 2 and q_tile = 32}}
func.func private @fp8_staging_two_warps_q() attributes {config = #cascade.kernel_config<mma_sync, threads = [32, 2, 2], q_tile = 32, kv_tile = 64, stages = 4, fp8_staging = direct_kv>}

// -----

// expected-error@+1 {{fp8_staging = direct_k needs threads[1] = 1 and q_tile = 16 (one warp along the query rows, its Q fragments in registers), got threads[1] = 1 and q_tile = 32}}
func.func private @fp8_staging_two_tiles() attributes {config = #cascade.kernel_config<mma_sync, threads = [32, 1, 2], q_tile = 32, kv_tile = 32, stages = 2, fp8_staging = direct_k>}

// -----

// expected-error@+1 {{fp8_staging must be convert, direct_k or direct_kv, got 'direct_v'}}
func.func private @fp8_staging_unknown() attributes {config = #cascade.kernel_config<mma_sync, threads = [32, 1, 2], q_tile = 16, kv_tile = 32, stages = 2, fp8_staging = direct_v>}

// -----

// expected-error@+1 {{expected kv_barriers, min_blocks_per_sm, fp8_staging, exp2_emulation or page_lookahead (each at most once), got 'fp8_staging'}}
func.func private @fp8_staging_twice() attributes {config = #cascade.kernel_config<mma_sync, threads = [32, 1, 2], q_tile = 16, kv_tile = 32, stages = 2, fp8_staging = direct_k, fp8_staging = direct_k>}

// -----

// #cascade.kernel_config's exp2_emulation: eighths of the S columns, on the
// tensor-core families' online softmax.

// expected-error@+1 {{exp2_emulation must be in [0, 8] (eighths of the S columns), got 9}}
func.func private @exp2_emulation_nine() attributes {config = #cascade.kernel_config<wgmma, threads = [128, 4, 1], q_tile = 192, kv_tile = 64, stages = 4, exp2_emulation = 9>}

// -----

// expected-error@+1 {{exp2_emulation must be in [0, 8] (eighths of the S columns), got -1}}
func.func private @exp2_emulation_negative() attributes {config = #cascade.kernel_config<mma_sync, threads = [32, 4, 1], q_tile = 128, kv_tile = 64, stages = 2, exp2_emulation = -1>}

// -----

// expected-error@+1 {{exp2_emulation is a tensor-core option (mma_sync or wgmma: their online softmax on MMA fragments)}}
func.func private @exp2_emulation_rows() attributes {config = #cascade.kernel_config<rows, threads = [16, 1, 8], q_tile = 1, kv_tile = 32, stages = 4, exp2_emulation = 2>}

// -----

// expected-error@+1 {{expected kv_barriers, min_blocks_per_sm, fp8_staging, exp2_emulation or page_lookahead (each at most once), got 'exp2_emulation'}}
func.func private @exp2_emulation_twice() attributes {config = #cascade.kernel_config<wgmma, threads = [128, 4, 1], q_tile = 192, kv_tile = 64, stages = 4, exp2_emulation = 2, exp2_emulation = 2>}

// -----

// #cascade.kernel_config's page_lookahead: 0 or 1, the wgmma producer's.

// expected-error@+1 {{page_lookahead must be 0 or 1, got 2}}
func.func private @page_lookahead_two() attributes {config = #cascade.kernel_config<wgmma, threads = [128, 4, 1], q_tile = 192, kv_tile = 64, stages = 4, page_lookahead = 2>}

// -----

// expected-error@+1 {{page_lookahead is a wgmma option (its producer warpgroup's gather)}}
func.func private @page_lookahead_mma_sync() attributes {config = #cascade.kernel_config<mma_sync, threads = [32, 4, 1], q_tile = 128, kv_tile = 64, stages = 2, page_lookahead = 1>}

// -----

// expected-error@+1 {{expected kv_barriers, min_blocks_per_sm, fp8_staging, exp2_emulation or page_lookahead (each at most once), got 'page_lookahead'}}
func.func private @page_lookahead_twice() attributes {config = #cascade.kernel_config<wgmma, threads = [128, 4, 1], q_tile = 192, kv_tile = 64, stages = 4, page_lookahead = 1, page_lookahead = 1>}
