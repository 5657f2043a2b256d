// RUN: cascade-opt %s --convert-cascade-to-gpu | FileCheck %s
// RUN: rm -rf %t && cascade-opt %s --cascade-to-ptx="chip=sm_90a bundle-dir=%t" -o /dev/null
// RUN: FileCheck %s --check-prefix=MANIFEST < %t/manifest.json

// Ragged K/V: a cascade.paged_attention without kv_indices (the identity page
// table) lowers to kernels without a kv_indices parameter, spelled `_ragged`
// after the KV form, whose gather computes a key's page (kv_indptr[i] + its
// position) instead of loading it. The same op with a page table
// keeps the pair kernels, which load the page id of every row they copy.

// CHECK-LABEL: func.func @ragged
// CHECK: gpu.launch_func @cascade_kernels::@cascade_prefill_causal_mma_f16_f16_d128_g4_h8_p1_nhd_pair_ragged_w4x1_q128_kv32_s3
func.func @ragged(%q: memref<?x32x128xf16>, %k: memref<?x1x8x128xf16>, %v: memref<?x1x8x128xf16>,
                  %qo: memref<?xi32>, %kvp: memref<?xi32>, %last: memref<?xi32>,
                  %o: memref<?x32x128xf16>, %lse: memref<?x32xf32>) {
  cascade.paged_attention q(%q : memref<?x32x128xf16>) kv(%k, %v : memref<?x1x8x128xf16>, memref<?x1x8x128xf16>)
      qo_indptr(%qo : memref<?xi32>) kv_indptr(%kvp : memref<?xi32>)
      kv_last_page_len(%last : memref<?xi32>)
      outs(%o, %lse : memref<?x32x128xf16>, memref<?x32xf32>) {page_size = 1 : i64, causal}
  return
}

// CHECK-LABEL: func.func @table
// CHECK: gpu.launch_func @cascade_kernels::@cascade_prefill_causal_mma_f16_f16_d128_g4_h8_p1_nhd_pair_w4x1_q128_kv32_s3
func.func @table(%q: memref<?x32x128xf16>, %k: memref<?x1x8x128xf16>, %v: memref<?x1x8x128xf16>,
                 %qo: memref<?xi32>, %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>,
                 %o: memref<?x32x128xf16>, %lse: memref<?x32xf32>) {
  cascade.paged_attention q(%q : memref<?x32x128xf16>) kv(%k, %v : memref<?x1x8x128xf16>, memref<?x1x8x128xf16>)
      qo_indptr(%qo : memref<?xi32>) kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>)
      kv_last_page_len(%last : memref<?xi32>)
      outs(%o, %lse : memref<?x32x128xf16>, memref<?x32xf32>) {page_size = 1 : i64, causal}
  return
}

// A ragged decode (tensor-core decode of a 16-query group).
// CHECK-LABEL: func.func @ragged_decode
// CHECK: gpu.launch_func @cascade_kernels::@cascade_decode_mma_f16_f16_d128_g16_h2_p1_nhd_pair_ragged_
func.func @ragged_decode(%q: memref<?x32x128xf16>, %k: memref<?x1x2x128xf16>, %v: memref<?x1x2x128xf16>,
                         %kvp: memref<?xi32>, %last: memref<?xi32>,
                         %o: memref<?x32x128xf16>, %lse: memref<?x32xf32>) {
  cascade.paged_attention q(%q : memref<?x32x128xf16>) kv(%k, %v : memref<?x1x2x128xf16>, memref<?x1x2x128xf16>)
      kv_indptr(%kvp : memref<?xi32>) kv_last_page_len(%last : memref<?xi32>)
      outs(%o, %lse : memref<?x32x128xf16>, memref<?x32xf32>) {page_size = 1 : i64}
  return
}

// The ragged kernel: q, k, v, then qo_indptr, kv_indptr, kv_last_page_len
// (%arg3 .. %arg5), no kv_indices.
// CHECK: gpu.func @cascade_prefill_causal_mma_f16_f16_d128_g4_h8_p1_nhd_pair_ragged_w4x1_q128_kv32_s3(%{{.*}}: memref<?xf16, strided<[1], offset: ?>>, %{{.*}}: memref<?xf16, strided<[1], offset: ?>>, %{{.*}}: memref<?xf16, strided<[1], offset: ?>>, %{{.*}}: memref<?xi32, strided<[1], offset: ?>>, %{{.*}}: memref<?xi32, strided<[1], offset: ?>>, %{{.*}}: memref<?xi32, strided<[1], offset: ?>>, %{{.*}}: memref<?xf16, strided<[1], offset: ?>>, %{{.*}}: memref<?xf32
// CHECK-SAME: name = "kv_indptr"}, {dtype = "i32", kind = "memref", name = "kv_last_page_len"}
// CHECK-SAME: kv_form = "ragged"
// CHECK-SAME: page_table = false
// CHECK: gpu.return
// The table's kernel loads page ids from kv_indices (%arg5).
// CHECK: gpu.func @cascade_prefill_causal_mma_f16_f16_d128_g4_h8_p1_nhd_pair_w4x1_q128_kv32_s3(
// CHECK-SAME: name = "kv_indptr"}, {dtype = "i32", kind = "memref", name = "kv_indices"}
// CHECK-SAME: kv_form = "pair"
// CHECK: memref.load %arg5[

// sm_90a: the ragged prefill on the wgmma family (a plain prefill: three
// consumer warpgroups), its manifest without kv_indices.
// MANIFEST: "name": "cascade_prefill_causal_wgmma_f16_f16_d128_g4_h8_p1_nhd_pair_ragged_w4x1_q192_kv64_s4"
// MANIFEST-NOT: "kv_indices"
// Ragged K and V may be views (of a packed QKV projection, or HND): their
// token and head strides are parameters, by default a contiguous
// [tokens, 8, 128]'s.
// MANIFEST: "default": 1024,
// MANIFEST-NEXT: "kind": "i64",
// MANIFEST-NEXT: "name": "kv_stride_n"
// MANIFEST: "default": 128,
// MANIFEST-NEXT: "kind": "i64",
// MANIFEST-NEXT: "name": "kv_stride_h"
// MANIFEST: "kv_form": "ragged"
// MANIFEST: "page_table": false
