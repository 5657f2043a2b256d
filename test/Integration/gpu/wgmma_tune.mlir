// Tuning variants for the attention benchmark on sm_90a
// (`tools/cascade-dev gpu prepare` adds this file to bundle-sm90a only: a
// wgmma kernel_config is an error on other chips). The causal prefill of the
// benchmark (32/8 heads, D=128, page 16), with the KV tile and the depth of
// the shared-memory ring fixed, so that one run shows how the kernel's time
// depends on how far the producer can run ahead of the consumers. The
// `_kvsplit` variants (kv_barriers = split, what wgmma-split-kv-barriers
// selects) give K and V barrier rings of their own, next to the joint ring
// of the same tile and depth: the A/B of FlashAttention-3's separate K and
// V pipelines. The default, three consumer warpgroups (192 query rows a
// block, 152 registers a consumer thread) with 64-key tiles in 4 stages,
// comes from mma_kernels.mlir; two consumers with kv128 s3, the default
// before, and kv64 s4, the one before the producer's copies published their
// own tiles, are here. The other `w4x1_q192` variants have three consumers
// with 3 stages: the causal prefill in f16 and bf16 and the cascade's
// shared-prefix level (a split prefill, which keeps two by default; 128-key
// tiles spill at 152 registers).
// Last, the decode cascade's unique level (an accumulating decode, 32/8
// heads): `bench.py --rows cascade` times each of them as that level.

func.func @wgmma_tune_f16_kv64_s4(%q: memref<?x32x128xf16>, %kv: memref<?x2x16x8x128xf16>, %qo: memref<?xi32>, %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>, %o: memref<?x32x128xf16>, %lse: memref<?x32xf32>) {
  cascade.paged_attention q(%q : memref<?x32x128xf16>) kv(%kv : memref<?x2x16x8x128xf16>)
      qo_indptr(%qo : memref<?xi32>)
      kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>) kv_last_page_len(%last : memref<?xi32>)
      outs(%o, %lse : memref<?x32x128xf16>, memref<?x32xf32>) {page_size = 16 : i64, kv_layout = #cascade.kv_layout<nhd>, causal, cascade.kernel_config = #cascade.kernel_config<wgmma, threads = [128, 3, 1], q_tile = 128, kv_tile = 64, stages = 4>}
  return
}

func.func @wgmma_tune_f16_kv64_s6(%q: memref<?x32x128xf16>, %kv: memref<?x2x16x8x128xf16>, %qo: memref<?xi32>, %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>, %o: memref<?x32x128xf16>, %lse: memref<?x32xf32>) {
  cascade.paged_attention q(%q : memref<?x32x128xf16>) kv(%kv : memref<?x2x16x8x128xf16>)
      qo_indptr(%qo : memref<?xi32>)
      kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>) kv_last_page_len(%last : memref<?xi32>)
      outs(%o, %lse : memref<?x32x128xf16>, memref<?x32xf32>) {page_size = 16 : i64, kv_layout = #cascade.kv_layout<nhd>, causal, cascade.kernel_config = #cascade.kernel_config<wgmma, threads = [128, 3, 1], q_tile = 128, kv_tile = 64, stages = 6>}
  return
}

func.func @wgmma_tune_bf16_kv64_s4(%q: memref<?x32x128xbf16>, %kv: memref<?x2x16x8x128xbf16>, %qo: memref<?xi32>, %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>, %o: memref<?x32x128xbf16>, %lse: memref<?x32xf32>) {
  cascade.paged_attention q(%q : memref<?x32x128xbf16>) kv(%kv : memref<?x2x16x8x128xbf16>)
      qo_indptr(%qo : memref<?xi32>)
      kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>) kv_last_page_len(%last : memref<?xi32>)
      outs(%o, %lse : memref<?x32x128xbf16>, memref<?x32xf32>) {page_size = 16 : i64, kv_layout = #cascade.kv_layout<nhd>, causal, cascade.kernel_config = #cascade.kernel_config<wgmma, threads = [128, 3, 1], q_tile = 128, kv_tile = 64, stages = 4>}
  return
}

func.func @wgmma_tune_bf16_kv64_s6(%q: memref<?x32x128xbf16>, %kv: memref<?x2x16x8x128xbf16>, %qo: memref<?xi32>, %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>, %o: memref<?x32x128xbf16>, %lse: memref<?x32xf32>) {
  cascade.paged_attention q(%q : memref<?x32x128xbf16>) kv(%kv : memref<?x2x16x8x128xbf16>)
      qo_indptr(%qo : memref<?xi32>)
      kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>) kv_last_page_len(%last : memref<?xi32>)
      outs(%o, %lse : memref<?x32x128xbf16>, memref<?x32xf32>) {page_size = 16 : i64, kv_layout = #cascade.kv_layout<nhd>, causal, cascade.kernel_config = #cascade.kernel_config<wgmma, threads = [128, 3, 1], q_tile = 128, kv_tile = 64, stages = 6>}
  return
}

func.func @wgmma_tune_f16_kv128_s3_kvsplit(%q: memref<?x32x128xf16>, %kv: memref<?x2x16x8x128xf16>, %qo: memref<?xi32>, %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>, %o: memref<?x32x128xf16>, %lse: memref<?x32xf32>) {
  cascade.paged_attention q(%q : memref<?x32x128xf16>) kv(%kv : memref<?x2x16x8x128xf16>)
      qo_indptr(%qo : memref<?xi32>)
      kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>) kv_last_page_len(%last : memref<?xi32>)
      outs(%o, %lse : memref<?x32x128xf16>, memref<?x32xf32>) {page_size = 16 : i64, kv_layout = #cascade.kv_layout<nhd>, causal, cascade.kernel_config = #cascade.kernel_config<wgmma, threads = [128, 3, 1], q_tile = 128, kv_tile = 128, stages = 3, kv_barriers = split>}
  return
}

func.func @wgmma_tune_f16_kv128_s2_kvsplit(%q: memref<?x32x128xf16>, %kv: memref<?x2x16x8x128xf16>, %qo: memref<?xi32>, %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>, %o: memref<?x32x128xf16>, %lse: memref<?x32xf32>) {
  cascade.paged_attention q(%q : memref<?x32x128xf16>) kv(%kv : memref<?x2x16x8x128xf16>)
      qo_indptr(%qo : memref<?xi32>)
      kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>) kv_last_page_len(%last : memref<?xi32>)
      outs(%o, %lse : memref<?x32x128xf16>, memref<?x32xf32>) {page_size = 16 : i64, kv_layout = #cascade.kv_layout<nhd>, causal, cascade.kernel_config = #cascade.kernel_config<wgmma, threads = [128, 3, 1], q_tile = 128, kv_tile = 128, stages = 2, kv_barriers = split>}
  return
}

func.func @wgmma_tune_f16_kv64_s4_kvsplit(%q: memref<?x32x128xf16>, %kv: memref<?x2x16x8x128xf16>, %qo: memref<?xi32>, %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>, %o: memref<?x32x128xf16>, %lse: memref<?x32xf32>) {
  cascade.paged_attention q(%q : memref<?x32x128xf16>) kv(%kv : memref<?x2x16x8x128xf16>)
      qo_indptr(%qo : memref<?xi32>)
      kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>) kv_last_page_len(%last : memref<?xi32>)
      outs(%o, %lse : memref<?x32x128xf16>, memref<?x32xf32>) {page_size = 16 : i64, kv_layout = #cascade.kv_layout<nhd>, causal, cascade.kernel_config = #cascade.kernel_config<wgmma, threads = [128, 3, 1], q_tile = 128, kv_tile = 64, stages = 4, kv_barriers = split>}
  return
}

func.func @wgmma_tune_bf16_kv128_s3_kvsplit(%q: memref<?x32x128xbf16>, %kv: memref<?x2x16x8x128xbf16>, %qo: memref<?xi32>, %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>, %o: memref<?x32x128xbf16>, %lse: memref<?x32xf32>) {
  cascade.paged_attention q(%q : memref<?x32x128xbf16>) kv(%kv : memref<?x2x16x8x128xbf16>)
      qo_indptr(%qo : memref<?xi32>)
      kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>) kv_last_page_len(%last : memref<?xi32>)
      outs(%o, %lse : memref<?x32x128xbf16>, memref<?x32xf32>) {page_size = 16 : i64, kv_layout = #cascade.kv_layout<nhd>, causal, cascade.kernel_config = #cascade.kernel_config<wgmma, threads = [128, 3, 1], q_tile = 128, kv_tile = 128, stages = 3, kv_barriers = split>}
  return
}

func.func @wgmma_tune_bf16_kv128_s2_kvsplit(%q: memref<?x32x128xbf16>, %kv: memref<?x2x16x8x128xbf16>, %qo: memref<?xi32>, %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>, %o: memref<?x32x128xbf16>, %lse: memref<?x32xf32>) {
  cascade.paged_attention q(%q : memref<?x32x128xbf16>) kv(%kv : memref<?x2x16x8x128xbf16>)
      qo_indptr(%qo : memref<?xi32>)
      kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>) kv_last_page_len(%last : memref<?xi32>)
      outs(%o, %lse : memref<?x32x128xbf16>, memref<?x32xf32>) {page_size = 16 : i64, kv_layout = #cascade.kv_layout<nhd>, causal, cascade.kernel_config = #cascade.kernel_config<wgmma, threads = [128, 3, 1], q_tile = 128, kv_tile = 128, stages = 2, kv_barriers = split>}
  return
}

func.func @wgmma_tune_bf16_kv64_s4_kvsplit(%q: memref<?x32x128xbf16>, %kv: memref<?x2x16x8x128xbf16>, %qo: memref<?xi32>, %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>, %o: memref<?x32x128xbf16>, %lse: memref<?x32xf32>) {
  cascade.paged_attention q(%q : memref<?x32x128xbf16>) kv(%kv : memref<?x2x16x8x128xbf16>)
      qo_indptr(%qo : memref<?xi32>)
      kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>) kv_last_page_len(%last : memref<?xi32>)
      outs(%o, %lse : memref<?x32x128xbf16>, memref<?x32xf32>) {page_size = 16 : i64, kv_layout = #cascade.kv_layout<nhd>, causal, cascade.kernel_config = #cascade.kernel_config<wgmma, threads = [128, 3, 1], q_tile = 128, kv_tile = 64, stages = 4, kv_barriers = split>}
  return
}

// The benchmark's other shapes: non-causal head_dim 128 on the former
// default, kv128 s3, and causal head_dim 64 on kv64 s4 (its default is
// kv128 s4).

func.func @wgmma_tune_f16_noncausal_kv128_s3(%q: memref<?x32x128xf16>, %kv: memref<?x2x16x8x128xf16>, %qo: memref<?xi32>, %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>, %o: memref<?x32x128xf16>, %lse: memref<?x32xf32>) {
  cascade.paged_attention q(%q : memref<?x32x128xf16>) kv(%kv : memref<?x2x16x8x128xf16>)
      qo_indptr(%qo : memref<?xi32>)
      kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>) kv_last_page_len(%last : memref<?xi32>)
      outs(%o, %lse : memref<?x32x128xf16>, memref<?x32xf32>) {page_size = 16 : i64, kv_layout = #cascade.kv_layout<nhd>, cascade.kernel_config = #cascade.kernel_config<wgmma, threads = [128, 3, 1], q_tile = 128, kv_tile = 128, stages = 3>}
  return
}

func.func @wgmma_tune_f16_d64_kv64_s4(%q: memref<?x32x64xf16>, %kv: memref<?x2x16x8x64xf16>, %qo: memref<?xi32>, %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>, %o: memref<?x32x64xf16>, %lse: memref<?x32xf32>) {
  cascade.paged_attention q(%q : memref<?x32x64xf16>) kv(%kv : memref<?x2x16x8x64xf16>)
      qo_indptr(%qo : memref<?xi32>)
      kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>) kv_last_page_len(%last : memref<?xi32>)
      outs(%o, %lse : memref<?x32x64xf16>, memref<?x32xf32>) {page_size = 16 : i64, kv_layout = #cascade.kv_layout<nhd>, causal, cascade.kernel_config = #cascade.kernel_config<wgmma, threads = [128, 3, 1], q_tile = 128, kv_tile = 64, stages = 4>}
  return
}

func.func @wgmma_tune_bf16_noncausal_kv128_s3(%q: memref<?x32x128xbf16>, %kv: memref<?x2x16x8x128xbf16>, %qo: memref<?xi32>, %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>, %o: memref<?x32x128xbf16>, %lse: memref<?x32xf32>) {
  cascade.paged_attention q(%q : memref<?x32x128xbf16>) kv(%kv : memref<?x2x16x8x128xbf16>)
      qo_indptr(%qo : memref<?xi32>)
      kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>) kv_last_page_len(%last : memref<?xi32>)
      outs(%o, %lse : memref<?x32x128xbf16>, memref<?x32xf32>) {page_size = 16 : i64, kv_layout = #cascade.kv_layout<nhd>, cascade.kernel_config = #cascade.kernel_config<wgmma, threads = [128, 3, 1], q_tile = 128, kv_tile = 128, stages = 3>}
  return
}

func.func @wgmma_tune_bf16_d64_kv64_s4(%q: memref<?x32x64xbf16>, %kv: memref<?x2x16x8x64xbf16>, %qo: memref<?xi32>, %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>, %o: memref<?x32x64xbf16>, %lse: memref<?x32xf32>) {
  cascade.paged_attention q(%q : memref<?x32x64xbf16>) kv(%kv : memref<?x2x16x8x64xbf16>)
      qo_indptr(%qo : memref<?xi32>)
      kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>) kv_last_page_len(%last : memref<?xi32>)
      outs(%o, %lse : memref<?x32x64xbf16>, memref<?x32xf32>) {page_size = 16 : i64, kv_layout = #cascade.kv_layout<nhd>, causal, cascade.kernel_config = #cascade.kernel_config<wgmma, threads = [128, 3, 1], q_tile = 128, kv_tile = 64, stages = 4>}
  return
}

func.func @wgmma_tune_f16_w4_kv64_s3(%q: memref<?x32x128xf16>, %kv: memref<?x2x16x8x128xf16>, %qo: memref<?xi32>, %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>, %o: memref<?x32x128xf16>, %lse: memref<?x32xf32>) {
  cascade.paged_attention q(%q : memref<?x32x128xf16>) kv(%kv : memref<?x2x16x8x128xf16>)
      qo_indptr(%qo : memref<?xi32>)
      kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>) kv_last_page_len(%last : memref<?xi32>)
      outs(%o, %lse : memref<?x32x128xf16>, memref<?x32xf32>) {page_size = 16 : i64, kv_layout = #cascade.kv_layout<nhd>, causal, cascade.kernel_config = #cascade.kernel_config<wgmma, threads = [128, 4, 1], q_tile = 192, kv_tile = 64, stages = 3>}
  return
}

func.func @wgmma_tune_bf16_w4_kv64_s3(%q: memref<?x32x128xbf16>, %kv: memref<?x2x16x8x128xbf16>, %qo: memref<?xi32>, %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>, %o: memref<?x32x128xbf16>, %lse: memref<?x32xf32>) {
  cascade.paged_attention q(%q : memref<?x32x128xbf16>) kv(%kv : memref<?x2x16x8x128xbf16>)
      qo_indptr(%qo : memref<?xi32>)
      kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>) kv_last_page_len(%last : memref<?xi32>)
      outs(%o, %lse : memref<?x32x128xbf16>, memref<?x32xf32>) {page_size = 16 : i64, kv_layout = #cascade.kv_layout<nhd>, causal, cascade.kernel_config = #cascade.kernel_config<wgmma, threads = [128, 4, 1], q_tile = 192, kv_tile = 64, stages = 3>}
  return
}

func.func @f16_prefix_g4_wgmma_w4_kv64_s3(%q: memref<?x32x128xf16>, %kv: memref<?x2x16x8x128xf16>, %qo: memref<?xi32>, %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>, %ri: memref<?xi32>, %kt: memref<?xi32>, %oi: memref<?xi32>, %mask: memref<?xi8>, %chunk: memref<1xi32>, %tv: memref<?x32x128xf32>, %ts: memref<?x32xf32>, %qt: memref<?xi32>, %mi: memref<?xi32>, %o: memref<?x32x128xf16>, %lse: memref<?x32xf32>) {
  cascade.paged_attention q(%q : memref<?x32x128xf16>) kv(%kv : memref<?x2x16x8x128xf16>)
      qo_indptr(%qo : memref<?xi32>)
      kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>) kv_last_page_len(%last : memref<?xi32>)
      plan(%ri, %kt, %oi, %mask, %chunk, %tv, %ts, %qt, %mi : memref<?xi32>, memref<?xi32>, memref<?xi32>, memref<?xi8>, memref<1xi32>, memref<?x32x128xf32>, memref<?x32xf32>, memref<?xi32>, memref<?xi32>)
      outs(%o, %lse : memref<?x32x128xf16>, memref<?x32xf32>) {page_size = 16 : i64, kv_layout = #cascade.kv_layout<nhd>, cascade.kernel_config = #cascade.kernel_config<wgmma, threads = [128, 4, 1], q_tile = 192, kv_tile = 64, stages = 3>}
  return
}

// The two-consumer configurations that were the defaults before three
// consumers (causal D128 kv128 s3, causal D64 kv128 s4; non-causal D128
// kv128 s3 is above), and three consumers in 3 stages on non-causal D128:
// the A/B partners of the defaults.

func.func @wgmma_tune_causal_f16_d128_w3_kv128_s3(%q: memref<?x32x128xf16>, %kv: memref<?x2x16x8x128xf16>, %qo: memref<?xi32>, %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>, %o: memref<?x32x128xf16>, %lse: memref<?x32xf32>) {
  cascade.paged_attention q(%q : memref<?x32x128xf16>) kv(%kv : memref<?x2x16x8x128xf16>)
      qo_indptr(%qo : memref<?xi32>)
      kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>) kv_last_page_len(%last : memref<?xi32>)
      outs(%o, %lse : memref<?x32x128xf16>, memref<?x32xf32>) {page_size = 16 : i64, kv_layout = #cascade.kv_layout<nhd>, causal, cascade.kernel_config = #cascade.kernel_config<wgmma, threads = [128, 3, 1], q_tile = 128, kv_tile = 128, stages = 3>}
  return
}

func.func @wgmma_tune_causal_f16_d64_w3_kv128_s4(%q: memref<?x32x64xf16>, %kv: memref<?x2x16x8x64xf16>, %qo: memref<?xi32>, %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>, %o: memref<?x32x64xf16>, %lse: memref<?x32xf32>) {
  cascade.paged_attention q(%q : memref<?x32x64xf16>) kv(%kv : memref<?x2x16x8x64xf16>)
      qo_indptr(%qo : memref<?xi32>)
      kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>) kv_last_page_len(%last : memref<?xi32>)
      outs(%o, %lse : memref<?x32x64xf16>, memref<?x32xf32>) {page_size = 16 : i64, kv_layout = #cascade.kv_layout<nhd>, causal, cascade.kernel_config = #cascade.kernel_config<wgmma, threads = [128, 3, 1], q_tile = 128, kv_tile = 128, stages = 4>}
  return
}

func.func @wgmma_tune_causal_bf16_d128_w3_kv128_s3(%q: memref<?x32x128xbf16>, %kv: memref<?x2x16x8x128xbf16>, %qo: memref<?xi32>, %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>, %o: memref<?x32x128xbf16>, %lse: memref<?x32xf32>) {
  cascade.paged_attention q(%q : memref<?x32x128xbf16>) kv(%kv : memref<?x2x16x8x128xbf16>)
      qo_indptr(%qo : memref<?xi32>)
      kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>) kv_last_page_len(%last : memref<?xi32>)
      outs(%o, %lse : memref<?x32x128xbf16>, memref<?x32xf32>) {page_size = 16 : i64, kv_layout = #cascade.kv_layout<nhd>, causal, cascade.kernel_config = #cascade.kernel_config<wgmma, threads = [128, 3, 1], q_tile = 128, kv_tile = 128, stages = 3>}
  return
}

func.func @wgmma_tune_causal_bf16_d64_w3_kv128_s4(%q: memref<?x32x64xbf16>, %kv: memref<?x2x16x8x64xbf16>, %qo: memref<?xi32>, %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>, %o: memref<?x32x64xbf16>, %lse: memref<?x32xf32>) {
  cascade.paged_attention q(%q : memref<?x32x64xbf16>) kv(%kv : memref<?x2x16x8x64xbf16>)
      qo_indptr(%qo : memref<?xi32>)
      kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>) kv_last_page_len(%last : memref<?xi32>)
      outs(%o, %lse : memref<?x32x64xbf16>, memref<?x32xf32>) {page_size = 16 : i64, kv_layout = #cascade.kv_layout<nhd>, causal, cascade.kernel_config = #cascade.kernel_config<wgmma, threads = [128, 3, 1], q_tile = 128, kv_tile = 128, stages = 4>}
  return
}

func.func @wgmma_tune_full_f16_d128_w4_kv64_s3(%q: memref<?x32x128xf16>, %kv: memref<?x2x16x8x128xf16>, %qo: memref<?xi32>, %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>, %o: memref<?x32x128xf16>, %lse: memref<?x32xf32>) {
  cascade.paged_attention q(%q : memref<?x32x128xf16>) kv(%kv : memref<?x2x16x8x128xf16>)
      qo_indptr(%qo : memref<?xi32>)
      kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>) kv_last_page_len(%last : memref<?xi32>)
      outs(%o, %lse : memref<?x32x128xf16>, memref<?x32xf32>) {page_size = 16 : i64, kv_layout = #cascade.kv_layout<nhd>, cascade.kernel_config = #cascade.kernel_config<wgmma, threads = [128, 4, 1], q_tile = 192, kv_tile = 64, stages = 3>}
  return
}

func.func @wgmma_tune_full_bf16_d128_w4_kv64_s3(%q: memref<?x32x128xbf16>, %kv: memref<?x2x16x8x128xbf16>, %qo: memref<?xi32>, %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>, %o: memref<?x32x128xbf16>, %lse: memref<?x32xf32>) {
  cascade.paged_attention q(%q : memref<?x32x128xbf16>) kv(%kv : memref<?x2x16x8x128xbf16>)
      qo_indptr(%qo : memref<?xi32>)
      kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>) kv_last_page_len(%last : memref<?xi32>)
      outs(%o, %lse : memref<?x32x128xbf16>, memref<?x32xf32>) {page_size = 16 : i64, kv_layout = #cascade.kv_layout<nhd>, cascade.kernel_config = #cascade.kernel_config<wgmma, threads = [128, 4, 1], q_tile = 192, kv_tile = 64, stages = 3>}
  return
}

func.func @unique_level_rows_kv16_s2(%q: memref<?x32x128xf16>, %kv: memref<?x2x16x8x128xf16>, %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>,
    %o: memref<?x32x128xf16>, %lse: memref<?x32xf32>) {
  cascade.paged_attention q(%q : memref<?x32x128xf16>) kv(%kv : memref<?x2x16x8x128xf16>)
      kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>) kv_last_page_len(%last : memref<?xi32>)
      outs(%o, %lse : memref<?x32x128xf16>, memref<?x32xf32>) {page_size = 16 : i64, kv_layout = #cascade.kv_layout<nhd>, accumulate, cascade.kernel_config = #cascade.kernel_config<rows, threads = [16, 1, 8], q_tile = 1, kv_tile = 16, stages = 2>}
  return
}

func.func @unique_level_rows_kv16_s4(%q: memref<?x32x128xf16>, %kv: memref<?x2x16x8x128xf16>, %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>,
    %o: memref<?x32x128xf16>, %lse: memref<?x32xf32>) {
  cascade.paged_attention q(%q : memref<?x32x128xf16>) kv(%kv : memref<?x2x16x8x128xf16>)
      kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>) kv_last_page_len(%last : memref<?xi32>)
      outs(%o, %lse : memref<?x32x128xf16>, memref<?x32xf32>) {page_size = 16 : i64, kv_layout = #cascade.kv_layout<nhd>, accumulate, cascade.kernel_config = #cascade.kernel_config<rows, threads = [16, 1, 8], q_tile = 1, kv_tile = 16, stages = 4>}
  return
}

func.func @unique_level_rows_t16x4_kv32_s2(%q: memref<?x32x128xf16>, %kv: memref<?x2x16x8x128xf16>, %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>,
    %o: memref<?x32x128xf16>, %lse: memref<?x32xf32>) {
  cascade.paged_attention q(%q : memref<?x32x128xf16>) kv(%kv : memref<?x2x16x8x128xf16>)
      kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>) kv_last_page_len(%last : memref<?xi32>)
      outs(%o, %lse : memref<?x32x128xf16>, memref<?x32xf32>) {page_size = 16 : i64, kv_layout = #cascade.kv_layout<nhd>, accumulate, cascade.kernel_config = #cascade.kernel_config<rows, threads = [16, 1, 4], q_tile = 1, kv_tile = 32, stages = 2>}
  return
}

func.func @unique_level_mma_w1x2_kv32_s4(%q: memref<?x32x128xf16>, %kv: memref<?x2x16x8x128xf16>, %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>,
    %o: memref<?x32x128xf16>, %lse: memref<?x32xf32>) {
  cascade.paged_attention q(%q : memref<?x32x128xf16>) kv(%kv : memref<?x2x16x8x128xf16>)
      kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>) kv_last_page_len(%last : memref<?xi32>)
      outs(%o, %lse : memref<?x32x128xf16>, memref<?x32xf32>) {page_size = 16 : i64, kv_layout = #cascade.kv_layout<nhd>, accumulate, cascade.kernel_config = #cascade.kernel_config<mma_sync, threads = [32, 1, 2], q_tile = 16, kv_tile = 32, stages = 4>}
  return
}

func.func @unique_level_mma_w1x4_kv64_s2(%q: memref<?x32x128xf16>, %kv: memref<?x2x16x8x128xf16>, %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>,
    %o: memref<?x32x128xf16>, %lse: memref<?x32xf32>) {
  cascade.paged_attention q(%q : memref<?x32x128xf16>) kv(%kv : memref<?x2x16x8x128xf16>)
      kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>) kv_last_page_len(%last : memref<?xi32>)
      outs(%o, %lse : memref<?x32x128xf16>, memref<?x32xf32>) {page_size = 16 : i64, kv_layout = #cascade.kv_layout<nhd>, accumulate, cascade.kernel_config = #cascade.kernel_config<mma_sync, threads = [32, 1, 4], q_tile = 16, kv_tile = 64, stages = 2>}
  return
}
