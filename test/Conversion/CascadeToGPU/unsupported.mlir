// RUN: cascade-opt %s --convert-cascade-to-gpu -split-input-file -verify-diagnostics

// Every op the lowering cannot run gets exactly one diagnostic that says why
// (-verify-diagnostics fails on any other).

func.func @dynamic_heads(%q: memref<?x?x128xf16>, %cache: memref<?x2x16x?x128xf16>,
                         %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>,
                         %o: memref<?x?x128xf16>, %lse: memref<?x?xf32>) {
  // expected-error@+1 {{attention lowering needs static head counts (dims of 'q' and the KV cache)}}
  cascade.paged_attention q(%q : memref<?x?x128xf16>) kv(%cache : memref<?x2x16x?x128xf16>)
      kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>)
      kv_last_page_len(%last : memref<?xi32>) outs(%o, %lse : memref<?x?x128xf16>, memref<?x?xf32>)
      {page_size = 16 : i64}
  return
}

// -----

func.func @rows_big_group(%q: memref<?x32x64xf16>, %cache: memref<?x2x16x1x64xf16>,
                          %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>,
                          %o: memref<?x32x64xf16>, %lse: memref<?x32xf32>) {
  // expected-error@+1 {{cannot run this attention: the rows family keeps every query head of a GQA group in registers and supports groups up to 16 (use mma_sync)}}
  cascade.paged_attention q(%q : memref<?x32x64xf16>) kv(%cache : memref<?x2x16x1x64xf16>)
      kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>)
      kv_last_page_len(%last : memref<?xi32>) outs(%o, %lse : memref<?x32x64xf16>, memref<?x32xf32>)
      {page_size = 16 : i64,
       cascade.kernel_config = #cascade.kernel_config<rows, threads = [8, 1, 16], q_tile = 1, kv_tile = 32, stages = 2>}
  return
}

// -----

func.func @mma_mixed_dtypes(%q: memref<?x8x128xf16>, %cache: memref<?x2x16x8x128xbf16>, %qo: memref<?xi32>,
                            %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>,
                            %o: memref<?x8x128xf16>, %lse: memref<?x8xf32>) {
  // expected-error@+1 {{cannot run this attention: tensor cores need q and KV of one dtype}}
  cascade.paged_attention q(%q : memref<?x8x128xf16>) kv(%cache : memref<?x2x16x8x128xbf16>)
      qo_indptr(%qo : memref<?xi32>) kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>)
      kv_last_page_len(%last : memref<?xi32>) outs(%o, %lse : memref<?x8x128xf16>, memref<?x8xf32>)
      {page_size = 16 : i64,
       cascade.kernel_config = #cascade.kernel_config<mma_sync, threads = [32, 4, 1], q_tile = 64, kv_tile = 64, stages = 2>}
  return
}

// -----

func.func @mixed_dtypes_head_dim(%q: memref<?x8x96xf16>, %cache: memref<?x2x16x8x96xbf16>, %qo: memref<?xi32>,
                                 %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>,
                                 %o: memref<?x8x96xf16>, %lse: memref<?x8xf32>) {
  // expected-error@+1 {{q and KV of different dtypes run on the rows kernel family, which needs head_dim 8, 16, 32, 64, 128 or 256; got 96}}
  cascade.paged_attention q(%q : memref<?x8x96xf16>) kv(%cache : memref<?x2x16x8x96xbf16>)
      qo_indptr(%qo : memref<?xi32>) kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>)
      kv_last_page_len(%last : memref<?xi32>) outs(%o, %lse : memref<?x8x96xf16>, memref<?x8xf32>)
      {page_size = 16 : i64}
  return
}

// -----

func.func @split_decode_group_past_tile(%q: memref<?x32x128xf16>, %cache: memref<?x2x16x1x128xf16>,
                                        %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>,
                                        %ri: memref<?xi32>, %kt: memref<?xi32>, %oi: memref<?xi32>, %mask: memref<?xi8>,
                                        %chunk: memref<1xi32>, %tv: memref<?x32x128xf32>, %ts: memref<?x32xf32>,
                                        %o: memref<?x32x128xf16>, %lse: memref<?x32xf32>) {
  // expected-error@+1 {{a split decode keeps a request's GQA group in one query tile: q_tile must be >= 32}}
  cascade.paged_attention q(%q : memref<?x32x128xf16>) kv(%cache : memref<?x2x16x1x128xf16>)
      kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>) kv_last_page_len(%last : memref<?xi32>)
      plan(%ri, %kt, %oi, %mask, %chunk, %tv, %ts : memref<?xi32>, memref<?xi32>, memref<?xi32>, memref<?xi8>, memref<1xi32>, memref<?x32x128xf32>, memref<?x32xf32>)
      outs(%o, %lse : memref<?x32x128xf16>, memref<?x32xf32>)
      {page_size = 16 : i64,
       cascade.kernel_config = #cascade.kernel_config<mma_sync, threads = [32, 1, 4], q_tile = 16, kv_tile = 64, stages = 2>}
  return
}

// -----

func.func @merge_config_mismatch(%va: memref<4x8x64xf16>, %sa: memref<4x8xf32>, %vb: memref<4x8x64xf16>,
                                 %sb: memref<4x8xf32>, %v: memref<4x8x64xf16>, %s: memref<4x8xf32>) {
  // expected-error@+1 {{does not fit this merge: expected family merge with threads[0] = q_tile * head_dim / 8}}
  cascade.merge_state ins(%va, %sa, %vb, %sb : memref<4x8x64xf16>, memref<4x8xf32>, memref<4x8x64xf16>, memref<4x8xf32>)
      outs(%v, %s : memref<4x8x64xf16>, memref<4x8xf32>)
      {cascade.kernel_config = #cascade.kernel_config<merge, threads = [128, 1, 1], q_tile = 4, kv_tile = 0, stages = 1>}
  return
}

// -----

func.func @tensor_form(%va: tensor<4x8x64xf16>, %sa: tensor<4x8xf32>, %vb: tensor<4x8x64xf16>,
                       %sb: tensor<4x8xf32>, %v: tensor<4x8x64xf16>, %s: tensor<4x8xf32>)
    -> (tensor<4x8x64xf16>, tensor<4x8xf32>) {
  // expected-error@+1 {{convert-cascade-to-gpu lowers the buffer form of cascade ops: bufferize first (one-shot-bufferize)}}
  %r:2 = cascade.merge_state ins(%va, %sa, %vb, %sb : tensor<4x8x64xf16>, tensor<4x8xf32>, tensor<4x8x64xf16>, tensor<4x8xf32>)
      outs(%v, %s : tensor<4x8x64xf16>, tensor<4x8xf32>) -> tensor<4x8x64xf16>, tensor<4x8xf32>
  return %r#0, %r#1 : tensor<4x8x64xf16>, tensor<4x8xf32>
}

// -----

func.func @not_decomposed(%q: memref<?x32x128xf16>, %cache: memref<?x2x16x8x128xf16>,
                          %qo0: memref<2xi32>, %kp0: memref<2xi32>, %ki0: memref<?xi32>, %kl0: memref<1xi32>,
                          %o: memref<?x32x128xf16>, %lse: memref<?x32xf32>) {
  // expected-error@+1 {{run cascade-decompose-levels before convert-cascade-to-gpu}}
  cascade.multi_level_attention q(%q : memref<?x32x128xf16>) kv(%cache : memref<?x2x16x8x128xf16>)
      qo_indptr(%qo0 : memref<2xi32>) kv_indptr(%kp0 : memref<2xi32>)
      kv_indices(%ki0 : memref<?xi32>) kv_last_page_len(%kl0 : memref<1xi32>)
      outs(%o, %lse : memref<?x32x128xf16>, memref<?x32xf32>) {page_size = 16 : i64}
  return
}

// -----

// q and KV of different dtypes run on the rows family, which has no custom
// masks.
func.func @custom_mask_mixed_types(%q: memref<?x32x128xf16>, %cache: memref<?x2x16x8x128xbf16>,
                       %qo: memref<?xi32>, %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>,
                       %m: memref<?xi8>, %mi: memref<?xi32>,
                       %o: memref<?x32x128xf16>, %lse: memref<?x32xf32>) {
  // expected-error@+1 {{cannot run this attention: custom masks run on the tensor-core families (mma_sync, wgmma): q and KV of one dtype}}
  cascade.paged_attention q(%q : memref<?x32x128xf16>) kv(%cache : memref<?x2x16x8x128xbf16>)
      qo_indptr(%qo : memref<?xi32>) kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>)
      kv_last_page_len(%last : memref<?xi32>) custom_mask(%m, %mi : memref<?xi8>, memref<?xi32>)
      outs(%o, %lse : memref<?x32x128xf16>, memref<?x32xf32>) {page_size = 16 : i64}
  return
}

// -----

// An fp8 cache on wgmma: the producer converts whole tiles and publishes
// each on one ring; split K/V barriers are refused.
func.func @wgmma_fp8_split_barriers(%q: memref<?x32x128xf16>, %cache: memref<?x2x16x8x128xf8E4M3FN>, %qo: memref<?xi32>,
                                    %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>,
                                    %o: memref<?x32x128xf16>, %lse: memref<?x32xf32>) {
  // expected-error@+1 {{cannot run this attention: an fp8 KV cache on wgmma needs one K/V ring (kv_barriers = joint): its producer converts and publishes whole tiles}}
  cascade.paged_attention q(%q : memref<?x32x128xf16>) kv(%cache : memref<?x2x16x8x128xf8E4M3FN>)
      qo_indptr(%qo : memref<?xi32>) kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>)
      kv_last_page_len(%last : memref<?xi32>) outs(%o, %lse : memref<?x32x128xf16>, memref<?x32xf32>)
      {page_size = 16 : i64,
       cascade.kernel_config = #cascade.kernel_config<wgmma, threads = [128, 3, 1], q_tile = 128, kv_tile = 64, stages = 2, kv_barriers = split>}
  return
}

// -----

// An fp8 cache on wgmma at head_dim 64: the producer's 128 threads copy 32
// rows of 4 chunks a pass, so a 16-key tile is refused.
func.func @wgmma_fp8_short_kv_tile(%q: memref<?x32x64xf16>, %cache: memref<?x2x16x8x64xf8E5M2>, %qo: memref<?xi32>,
                                   %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>,
                                   %o: memref<?x32x64xf16>, %lse: memref<?x32xf32>) {
  // expected-error@+1 {{cannot run this attention: an fp8 KV cache on wgmma needs kv_tile a multiple of 32 (the producer's 128 threads copy 2048 / head_dim keys a pass in 16-byte chunks)}}
  cascade.paged_attention q(%q : memref<?x32x64xf16>) kv(%cache : memref<?x2x16x8x64xf8E5M2>)
      qo_indptr(%qo : memref<?xi32>) kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>)
      kv_last_page_len(%last : memref<?xi32>) outs(%o, %lse : memref<?x32x64xf16>, memref<?x32xf32>)
      {page_size = 16 : i64,
       cascade.kernel_config = #cascade.kernel_config<wgmma, threads = [128, 3, 1], q_tile = 128, kv_tile = 16, stages = 4>}
  return
}

// -----

// Three consumer warpgroups at head_dim 256: ptxas compiles the kernel within
// the 128 registers a thread of a four-warpgroup block has at entry, and the
// P.V wgmma needs its 128-register output tile and operands live at once.
func.func @wgmma_three_consumers_d256(%q: memref<?x16x256xf16>, %cache: memref<?x2x16x4x256xf16>, %qo: memref<?xi32>,
                                      %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>,
                                      %o: memref<?x16x256xf16>, %lse: memref<?x16xf32>) {
  // expected-error@+1 {{cannot run this attention: its 3 consumer warpgroups leave a thread too few registers for head_dim 256's f32 output tile (128 a thread, all live in one wgmma); use two consumers}}
  cascade.paged_attention q(%q : memref<?x16x256xf16>) kv(%cache : memref<?x2x16x4x256xf16>)
      qo_indptr(%qo : memref<?xi32>) kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>)
      kv_last_page_len(%last : memref<?xi32>) outs(%o, %lse : memref<?x16x256xf16>, memref<?x16xf32>)
      {page_size = 16 : i64,
       cascade.kernel_config = #cascade.kernel_config<wgmma, threads = [128, 4, 1], q_tile = 192, kv_tile = 64, stages = 2, kv_barriers = split>}
  return
}
