// REQUIRES: ptxas
// fp8 KV caches (e4m3, e5m2). Decode with G = 1 on the rows family: 16-byte
// cp.async chunks of 16 fp8 elements, cvt.rn.f16x2.{e4m3x2,e5m2x2} after
// the shared-memory loads. Prefill and decode with G >= 2 on mma_sync: the
// fp8 tiles land in staging rings (16-byte cp.async) and are converted into
// the swizzled f16/bf16 tiles of their stage before the mma (the staging
// adds 2 * stages * kv_tile * D bytes of shared memory); decode with Q in
// registers reads K's and V's fp8 staging tiles themselves (`_kvdirect`,
// fp8-decode-kvdirect.mlir). k_scale / v_scale f32 kernel parameters (1.0
// at launch where the op has none), a manifest naming the fp8 dtype; ptxas
// accepts the PTX (spilling a few bytes only where the launch bound of 8
// blocks an SM asks for 128 registers); sm_80 is refused with an error
// naming the chip.
// RUN: rm -rf %t && mkdir -p %t
// RUN: cascade-opt %s --cascade-to-ptx="bundle-dir=%t/b" -o %t/host.mlir
// RUN: %ptxas -arch=sm_90 -v %t/b/kernels.ptx -o %t/k.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS
// RUN: FileCheck %s --check-prefix=PTX < %t/b/kernels.ptx
// RUN: FileCheck %s --check-prefix=MANIFEST < %t/b/manifest.json
// RUN: FileCheck %s --check-prefix=HOST < %t/host.mlir
// RUN: not cascade-opt %s --cascade-to-ptx="chip=sm_80 bundle-dir=%t/b80" -o /dev/null 2>&1 | FileCheck %s --check-prefix=SM80

// PTXAS: bytes spill stores
// PTXAS-NOT: {{[0-9][0-9][0-9]+}} bytes spill stores
// PTXAS-NOT: warning

// PTX-LABEL: .visible .entry cascade_decode_rows_f16_f8e4m3_d128_g1_h8_p16_nhd_pool_t16x8_kv32_s4(
// PTX: .param .f32 cascade_decode_rows_f16_f8e4m3_d128_g1_h8_p16_nhd_pool_t16x8_kv32_s4_param_{{[0-9]+}},
// PTX-NEXT: .param .f32 cascade_decode_rows_f16_f8e4m3_d128_g1_h8_p16_nhd_pool_t16x8_kv32_s4_param_{{[0-9]+}}
// PTX-NOT: .entry
// PTX-DAG: cp.async.cg.shared.global [{{.*}}], [{{.*}}], 16, {{.*}};
// PTX-DAG: cvt.rn.f16x2.e4m3x2
// PTX-LABEL: .visible .entry cascade_decode_split_rows_bf16_f8e5m2_d64_g1_h4_p8_hnd_pair
// PTX-DAG: cp.async.cg.shared.global [{{.*}}], [{{.*}}], 16, {{.*}};
// PTX-DAG: cvt.rn.f16x2.e5m2x2
// PTX-LABEL: .visible .entry cascade_prefill_causal_mma_f16_f8e4m3_d128_g4_h8_p16_nhd_pool_w4x1_q128_kv32_s3(
// PTX-DAG: cp.async.cg.shared.global [{{.*}}], [{{.*}}], 16, {{.*}};
// PTX-DAG: cvt.rn.f16x2.e4m3x2
// PTX-DAG: ldmatrix.sync.aligned.m8n8.x4.shared.b16
// PTX-DAG: mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32
// PTX-LABEL: .visible .entry cascade_decode_mma_bf16_f8e5m2_d128_g16_h2_p16_nhd_pool_w1x2_q16_kv32_s2_kvdirect(
// PTX-DAG: cvt.rn.f16x2.e5m2x2
// PTX-DAG: mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32
// The decode benchmark's shape (G = 4) on mma_sync, 8 blocks an SM: K's
// and V's fp8 bytes are read from their staging rings with 4-byte loads
// (V's byte permutes before the cvt), no converted tile is stored to shared
// memory (16-byte st.shared; the epilogue's partial states are 4 and 8
// bytes), and no ldmatrix reads a tile.
// PTX-LABEL: .visible .entry cascade_decode_mma_f16_f8e4m3_d128_g4_h8_p16_nhd_pool_w1x2_q16_kv32_s2_b8_kvdirect(
// PTX: .minnctapersm 8
// PTX-DAG: cvt.rn.f16x2.e4m3x2
// PTX-DAG: prmt.b32
// PTX-NOT: st.shared.v4
// PTX-NOT: ldmatrix
// PTX: ret;

// MANIFEST: "name": "cascade_decode_rows_f16_f8e4m3_d128_g1_h8_p16_nhd_pool_t16x8_kv32_s4",
// MANIFEST: "kind": "f32",
// MANIFEST-NEXT: "name": "k_scale"
// MANIFEST: "kind": "f32",
// MANIFEST-NEXT: "name": "v_scale"
// MANIFEST: "kv_dtype": "f8e4m3",
// MANIFEST: "dynamic_shared_bytes": 106496,
// MANIFEST-NEXT: "grid"
// MANIFEST: "name": "cascade_prefill_causal_mma_f16_f8e4m3_d128_g4_h8_p16_nhd_pool_w4x1_q128_kv32_s3",
// 2 stages of 32 fp8 K and V rows (16 KiB; the Q tile in the last V stage),
// less than the warps' partial states at the end (16 x 2 x 130 f32).
// MANIFEST: "dynamic_shared_bytes": 16640,
// MANIFEST-NEXT: "grid"
// MANIFEST: "name": "cascade_decode_mma_f16_f8e4m3_d128_g4_h8_p16_nhd_pool_w1x2_q16_kv32_s2_b8_kvdirect",

// HOST-LABEL: func.func @decode_e4m3
// HOST: gpu.launch_func  @cascade_kernels::@cascade_decode_rows_f16_f8e4m3_d128_g1_h8_p16_nhd_pool_t16x8_kv32_s4
// HOST-SAME: %arg5 : f32, %arg6 : f32)
// HOST-LABEL: func.func @split_e5m2_unscaled
// HOST: %[[K:.*]] = arith.constant 1.000000e+00 : f32
// HOST: %[[V:.*]] = arith.constant 1.000000e+00 : f32
// HOST: gpu.launch_func  @cascade_kernels::@cascade_decode_split_rows_bf16_f8e5m2
// HOST-SAME: %[[K]] : f32, %[[V]] : f32)

// SM80: error: an fp8 KV cache ('f8E4M3FN') needs sm_89 or newer (cvt.rn.f16x2.e4m3x2 / .e5m2x2); the target is sm_80

func.func @decode_e4m3(%q: memref<?x8x128xf16>, %cache: memref<?x2x16x8x128xf8E4M3FN>,
                       %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>,
                       %ks: f32, %vs: f32, %o: memref<?x8x128xf16>, %lse: memref<?x8xf32>) {
  cascade.paged_attention q(%q : memref<?x8x128xf16>) kv(%cache : memref<?x2x16x8x128xf8E4M3FN>)
      kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>) kv_last_page_len(%last : memref<?xi32>)
      k_scale(%ks) v_scale(%vs)
      outs(%o, %lse : memref<?x8x128xf16>, memref<?x8xf32>) {page_size = 16 : i64}
  return
}

func.func @split_e5m2_unscaled(%q: memref<?x4x64xbf16>, %k: memref<?x4x8x64xf8E5M2>, %v: memref<?x4x8x64xf8E5M2>,
    %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>,
    %ri: memref<?xi32>, %kti: memref<?xi32>, %oi: memref<?xi32>, %bvm: memref<?xi8>, %cs: memref<1xi32>,
    %tv: memref<?x4x64xf32>, %ts: memref<?x4xf32>, %o: memref<?x4x64xbf16>, %lse: memref<?x4xf32>) {
  cascade.paged_attention q(%q : memref<?x4x64xbf16>) kv(%k, %v : memref<?x4x8x64xf8E5M2>, memref<?x4x8x64xf8E5M2>)
      kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>) kv_last_page_len(%last : memref<?xi32>)
      plan(%ri, %kti, %oi, %bvm, %cs, %tv, %ts : memref<?xi32>, memref<?xi32>, memref<?xi32>, memref<?xi8>, memref<1xi32>, memref<?x4x64xf32>, memref<?x4xf32>)
      outs(%o, %lse : memref<?x4x64xbf16>, memref<?x4xf32>) {page_size = 8 : i64, kv_layout = #cascade.kv_layout<hnd>, logits_soft_cap = 30.0 : f32, pos_encoding = #cascade.pos_encoding<rope_llama>}
  return
}

func.func @prefill_e4m3(%q: memref<?x32x128xf16>, %cache: memref<?x2x16x8x128xf8E4M3FN>, %qo: memref<?xi32>,
                        %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>,
                        %ks: f32, %vs: f32, %o: memref<?x32x128xf16>, %lse: memref<?x32xf32>) {
  cascade.paged_attention q(%q : memref<?x32x128xf16>) kv(%cache : memref<?x2x16x8x128xf8E4M3FN>) qo_indptr(%qo : memref<?xi32>)
      kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>) kv_last_page_len(%last : memref<?xi32>)
      k_scale(%ks) v_scale(%vs)
      outs(%o, %lse : memref<?x32x128xf16>, memref<?x32xf32>) {page_size = 16 : i64, causal}
  return
}

func.func @decode_g16_e5m2(%q: memref<?x32x128xbf16>, %cache: memref<?x2x16x2x128xf8E5M2>,
                           %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>,
                           %o: memref<?x32x128xbf16>, %lse: memref<?x32xf32>) {
  cascade.paged_attention q(%q : memref<?x32x128xbf16>) kv(%cache : memref<?x2x16x2x128xf8E5M2>)
      kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>) kv_last_page_len(%last : memref<?xi32>)
      outs(%o, %lse : memref<?x32x128xbf16>, memref<?x32xf32>) {page_size = 16 : i64}
  return
}

func.func @decode_g4_e4m3(%q: memref<?x32x128xf16>, %cache: memref<?x2x16x8x128xf8E4M3FN>,
                          %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>,
                          %o: memref<?x32x128xf16>, %lse: memref<?x32xf32>) {
  cascade.paged_attention q(%q : memref<?x32x128xf16>) kv(%cache : memref<?x2x16x8x128xf8E4M3FN>)
      kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>) kv_last_page_len(%last : memref<?xi32>)
      outs(%o, %lse : memref<?x32x128xf16>, memref<?x32xf32>) {page_size = 16 : i64}
  return
}
