// RUN: cascade-opt %s --cascade-select-kernel-config="chip=sm_90a wgmma-head-dim-vo=false" --convert-cascade-to-gpu | FileCheck %s
// RUN: rm -rf %t && cascade-opt %s --cascade-to-ptx="chip=sm_90a bundle-dir=%t select='chip=sm_90a wgmma-head-dim-vo=false'" -o /dev/null
// RUN: %python -c "import json,sys; m=json.load(open(sys.argv[1])); [print(json.dumps(k, sort_keys=True)) for k in m['kernels']]" %t/manifest.json | FileCheck %s --check-prefix=MANIFEST
// RUN: %if ptxas %{ %ptxas -arch=sm_90a %t/kernels.ptx -o /dev/null %}
// RUN: cascade-opt %s --cascade-select-kernel-config="chip=sm_90a" --convert-cascade-to-gpu | FileCheck %s --check-prefix=WGMMA

// A (k, v) pair whose v is narrower than q and k (head_dim_vo; DeepSeek's
// prefill before MLA absorption has q/k 192 and v/o 128). The mma_sync
// family computes S = Q K^T over k's 192 columns and O's n8 tiles over v's
// 128 only; the V tile's other columns are zero-filled by the gather (the
// CHECK and MANIFEST runs, wgmma-head-dim-vo=false). rows takes one
// head_dim; on sm_90a selection gives these ops to wgmma (the WGMMA run; K's panels
// and V's narrower ones in rings of their own). Kernels are spelled
// `_d192v128`; their manifest records
// head_dim_vo, o's default strides are by 128, and V gets strides of its
// own (ragged: v_stride_n / v_stride_h; paged: v_stride_page).

// CHECK-LABEL: func.func @ragged
// CHECK: gpu.launch_func @cascade_kernels::@cascade_prefill_causal_mma_bf16_bf16_d192v128_g1_h16_p1_nhd_pair_ragged_w4x1_
// WGMMA-LABEL: func.func @ragged
// WGMMA: gpu.launch_func @cascade_kernels::@cascade_prefill_causal_wgmma_bf16_bf16_d192v128_g1_h16_p1_nhd_pair_ragged_w4x1_q192_kv64_s3
func.func @ragged(%q: memref<?x16x192xbf16>, %k: memref<?x1x16x192xbf16>, %v: memref<?x1x16x128xbf16>,
                  %qo: memref<?xi32>, %kvp: memref<?xi32>, %last: memref<?xi32>,
                  %o: memref<?x16x128xbf16>, %lse: memref<?x16xf32>) {
  cascade.paged_attention q(%q : memref<?x16x192xbf16>) kv(%k, %v : memref<?x1x16x192xbf16>, memref<?x1x16x128xbf16>)
      qo_indptr(%qo : memref<?xi32>) kv_indptr(%kvp : memref<?xi32>)
      kv_last_page_len(%last : memref<?xi32>)
      outs(%o, %lse : memref<?x16x128xbf16>, memref<?x16xf32>) {page_size = 1 : i64, causal}
  return
}

// A paged pair (GQA 16/4, HND), split-KV: the partial states and their merge
// have v's head_dim.
// CHECK-LABEL: func.func @paged_split
// CHECK: gpu.launch_func @cascade_kernels::@cascade_prefill_split_mma_f16_f16_d128v64_g4_h4_p16_hnd_pair_w
// CHECK: gpu.launch_func @cascade_kernels::@cascade_merge_states_indptr_f16_d64_h16_byrow_
// WGMMA-LABEL: func.func @paged_split
// WGMMA: gpu.launch_func @cascade_kernels::@cascade_prefill_split_wgmma_f16_f16_d128v64_g4_h4_p16_hnd_pair_w3x1_q128_kv128_s4
// WGMMA: gpu.launch_func @cascade_kernels::@cascade_merge_states_indptr_f16_d64_h16_byrow_
func.func @paged_split(%q: memref<?x16x128xf16>, %k: memref<?x4x16x128xf16>, %v: memref<?x4x16x64xf16>,
                       %qo: memref<?xi32>, %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>,
                       %ri: memref<?xi32>, %kt: memref<?xi32>, %oi: memref<?xi32>, %mask: memref<?xi8>,
                       %chunk: memref<1xi32>, %tv: memref<?x16x64xf32>, %ts: memref<?x16xf32>,
                       %qt: memref<?xi32>, %mi: memref<?xi32>,
                       %o: memref<?x16x64xf16>, %lse: memref<?x16xf32>) {
  cascade.paged_attention q(%q : memref<?x16x128xf16>) kv(%k, %v : memref<?x4x16x128xf16>, memref<?x4x16x64xf16>)
      qo_indptr(%qo : memref<?xi32>) kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>)
      kv_last_page_len(%last : memref<?xi32>)
      plan(%ri, %kt, %oi, %mask, %chunk, %tv, %ts, %qt, %mi : memref<?xi32>, memref<?xi32>, memref<?xi32>, memref<?xi8>, memref<1xi32>, memref<?x16x64xf32>, memref<?x16xf32>, memref<?xi32>, memref<?xi32>)
      outs(%o, %lse : memref<?x16x64xf16>, memref<?x16xf32>) {page_size = 16 : i64, kv_layout = #cascade.kv_layout<hnd>}
  return
}

// MANIFEST: "name": "cascade_prefill_causal_mma_bf16_bf16_d192v128_g1_h16_p1_nhd_pair_ragged_w4x1_
// MANIFEST-SAME: {"default": 3072, "kind": "i64", "name": "q_stride_n"}, {"default": 192, "kind": "i64", "name": "q_stride_h"}, {"default": 2048, "kind": "i64", "name": "o_stride_n"}, {"default": 128, "kind": "i64", "name": "o_stride_h"}, {"default": 3072, "kind": "i64", "name": "kv_stride_n"}, {"default": 192, "kind": "i64", "name": "kv_stride_h"}, {"default": 2048, "kind": "i64", "name": "v_stride_n"}, {"default": 128, "kind": "i64", "name": "v_stride_h"}
// MANIFEST-SAME: "head_dim": 192, "head_dim_vo": 128
// MANIFEST-SAME: "kernel_family": "mma_sync"
// MANIFEST: "name": "cascade_prefill_split_mma_f16_f16_d128v64_g4_h4_p16_hnd_pair_w
// MANIFEST-SAME: {"default": 2048, "kind": "i64", "name": "q_stride_n"}, {"default": 128, "kind": "i64", "name": "q_stride_h"}, {"default": 1024, "kind": "i64", "name": "o_stride_n"}, {"default": 64, "kind": "i64", "name": "o_stride_h"}, {"default": 8192, "kind": "i64", "name": "kv_stride_page"}, {"default": 4096, "kind": "i64", "name": "v_stride_page"}
// MANIFEST-NOT: v_stride_n
// MANIFEST-SAME: "head_dim": 128, "head_dim_vo": 64
// MANIFEST: "name": "cascade_merge_states_indptr_f16_d64_h16_byrow_
// MANIFEST-SAME: "static": {"accumulate": false, "head_dim": 64,
