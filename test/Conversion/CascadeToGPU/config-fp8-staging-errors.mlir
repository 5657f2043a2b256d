// RUN: cascade-opt %s --cascade-select-kernel-config --convert-cascade-to-gpu -split-input-file -verify-diagnostics

// A hand-written fp8_staging that the op cannot take is refused with the
// reason (never silently converted), and the shared memory that selection
// checks a hand-written configuration against is that of its staging.

func.func @direct_k_rope(%q: memref<?x32x128xf16>, %kv: memref<?x2x16x8x128xf8E4M3FN>,
                         %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>,
                         %o: memref<?x32x128xf16>, %lse: memref<?x32xf32>) {
  // expected-error@+1 {{cannot run this attention: fp8_staging = direct_k needs an op without RoPE (RoPE rotates a converted K tile)}}
  cascade.paged_attention q(%q : memref<?x32x128xf16>) kv(%kv : memref<?x2x16x8x128xf8E4M3FN>)
      kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>) kv_last_page_len(%last : memref<?xi32>)
      outs(%o, %lse : memref<?x32x128xf16>, memref<?x32xf32>)
      {page_size = 16 : i64, pos_encoding = #cascade.pos_encoding<rope_llama>,
       cascade.kernel_config = #cascade.kernel_config<mma_sync, threads = [32, 1, 2], q_tile = 16, kv_tile = 32, stages = 3, fp8_staging = direct_k>}
  return
}

// -----

func.func @direct_kv_d16(%q: memref<?x32x16xf16>, %kv: memref<?x2x16x8x16xf8E5M2>,
                         %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>,
                         %o: memref<?x32x16xf16>, %lse: memref<?x32xf32>) {
  // expected-error@+1 {{cannot run this attention: fp8_staging = direct_kv needs head_dim 32, 64 or 128, got 16 (direct_k reads only K from its staging tile)}}
  cascade.paged_attention q(%q : memref<?x32x16xf16>) kv(%kv : memref<?x2x16x8x16xf8E5M2>)
      kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>) kv_last_page_len(%last : memref<?xi32>)
      outs(%o, %lse : memref<?x32x16xf16>, memref<?x32xf32>)
      {page_size = 16 : i64,
       cascade.kernel_config = #cascade.kernel_config<mma_sync, threads = [32, 1, 2], q_tile = 16, kv_tile = 32, stages = 2, fp8_staging = direct_kv>}
  return
}

// -----

func.func @direct_k_d96(%q: memref<?x32x96xf16>, %kv: memref<?x2x16x8x96xf8E4M3FN>,
                        %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>,
                        %o: memref<?x32x96xf16>, %lse: memref<?x32xf32>) {
  // expected-error@+1 {{cannot run this attention: fp8_staging = direct_k needs head_dim 16, 32, 64 or 128, got 96}}
  cascade.paged_attention q(%q : memref<?x32x96xf16>) kv(%kv : memref<?x2x16x8x96xf8E4M3FN>)
      kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>) kv_last_page_len(%last : memref<?xi32>)
      outs(%o, %lse : memref<?x32x96xf16>, memref<?x32xf32>)
      {page_size = 16 : i64,
       cascade.kernel_config = #cascade.kernel_config<mma_sync, threads = [32, 1, 2], q_tile = 16, kv_tile = 32, stages = 2, fp8_staging = direct_k>}
  return
}

// -----

func.func @direct_k_f16(%q: memref<?x32x128xf16>, %kv: memref<?x2x16x8x128xf16>,
                        %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>,
                        %o: memref<?x32x128xf16>, %lse: memref<?x32xf32>) {
  // expected-error@+1 {{cannot run this attention: fp8_staging = direct_k needs an fp8 KV cache, not f16}}
  cascade.paged_attention q(%q : memref<?x32x128xf16>) kv(%kv : memref<?x2x16x8x128xf16>)
      kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>) kv_last_page_len(%last : memref<?xi32>)
      outs(%o, %lse : memref<?x32x128xf16>, memref<?x32xf32>)
      {page_size = 16 : i64,
       cascade.kernel_config = #cascade.kernel_config<mma_sync, threads = [32, 1, 2], q_tile = 16, kv_tile = 32, stages = 2, fp8_staging = direct_k>}
  return
}

// -----

func.func @direct_kv_prefill(%q: memref<?x32x128xf16>, %qo: memref<?xi32>, %kv: memref<?x2x16x8x128xf8E4M3FN>,
                             %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>,
                             %o: memref<?x32x128xf16>, %lse: memref<?x32xf32>) {
  // expected-error@+1 {{cannot run this attention: fp8_staging = direct_kv needs a decode (prefill converts its K/V tiles)}}
  cascade.paged_attention q(%q : memref<?x32x128xf16>) kv(%kv : memref<?x2x16x8x128xf8E4M3FN>)
      qo_indptr(%qo : memref<?xi32>)
      kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>) kv_last_page_len(%last : memref<?xi32>)
      outs(%o, %lse : memref<?x32x128xf16>, memref<?x32xf32>)
      {page_size = 16 : i64,
       cascade.kernel_config = #cascade.kernel_config<mma_sync, threads = [32, 1, 2], q_tile = 16, kv_tile = 32, stages = 2, fp8_staging = direct_kv>}
  return
}

// -----

// Selection's configuration for this op with `convert` instead of
// `direct_kv`: the converted K and V tiles take 17 KiB more a block, and 8
// blocks of 37 KiB do not fit an SM.
func.func @convert_bound(%q: memref<?x32x128xf16>, %kv: memref<?x2x16x8x128xf8E4M3FN>,
                         %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>,
                         %o: memref<?x32x128xf16>, %lse: memref<?x32xf32>) {
  // expected-error@+1 {{asks for 8 blocks an SM, 303104 bytes of shared memory with what each block reserves; sm_90 has 233472}}
  cascade.paged_attention q(%q : memref<?x32x128xf16>) kv(%kv : memref<?x2x16x8x128xf8E4M3FN>)
      kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>) kv_last_page_len(%last : memref<?xi32>)
      outs(%o, %lse : memref<?x32x128xf16>, memref<?x32xf32>)
      {page_size = 16 : i64,
       cascade.kernel_config = #cascade.kernel_config<mma_sync, threads = [32, 1, 2], q_tile = 16, kv_tile = 32, stages = 2, min_blocks_per_sm = 8>}
  return
}
