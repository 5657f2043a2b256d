// RUN: cascade-opt %s --convert-cascade-to-gpu | FileCheck %s
// RUN: rm -rf %t && cascade-opt %s --cascade-to-ptx="bundle-dir=%t" -o /dev/null
// RUN: %python -c "import json,sys; m=json.load(open(sys.argv[1])); [print(json.dumps(k, sort_keys=True)) for k in m['kernels']]" %t/manifest.json | FileCheck %s --check-prefix=MANIFEST
// RUN: %if ptxas %{ %ptxas -arch=sm_90 %t/kernels.ptx -o /dev/null %}

// A paged cache that is one layer of a cache of every layer
// ([pages, layers, 2, page, heads, dim][:, l], as an engine allocates it
// once): a page keeps its contiguous layout inside and only the pages lie
// further apart. The kernels take that page stride (kv_stride_page; by
// default the contiguous cache's), and the host launch passes the memref's
// first stride.

// CHECK-LABEL: func.func @layer_of_pool
// CHECK-SAME: %[[CACHE:[^:]*]]: memref<?x2x16x8x128xf16, strided<[?, 16384, 1024, 128, 1], offset: ?>>
// CHECK: %{{.*}}, %{{.*}}, %{{.*}}:5, %[[STRIDES:.*]]:5 = memref.extract_strided_metadata %[[CACHE]]
// CHECK: %[[PAGE:.*]] = arith.index_cast %[[STRIDES]]#0 : index to i64
// CHECK: gpu.launch_func @cascade_kernels::@cascade_decode_rows_f16_f16_d128_g4_h8_p16_nhd_pool_
// CHECK-SAME: %[[PAGE]] : i64
func.func @layer_of_pool(%q: memref<?x32x128xf16>,
                         %cache: memref<?x2x16x8x128xf16, strided<[?, 16384, 1024, 128, 1], offset: ?>>,
                         %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>,
                         %o: memref<?x32x128xf16>, %lse: memref<?x32xf32>) {
  cascade.paged_attention q(%q : memref<?x32x128xf16>)
      kv(%cache : memref<?x2x16x8x128xf16, strided<[?, 16384, 1024, 128, 1], offset: ?>>)
      kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>) kv_last_page_len(%last : memref<?xi32>)
      outs(%o, %lse : memref<?x32x128xf16>, memref<?x32xf32>)
      {page_size = 16 : i64}
  return
}

// A (k, v) pair of per-layer caches, HND, a static page stride (3 layers).
// CHECK-LABEL: func.func @layer_of_pair
// CHECK-SAME: %[[K:[^:]*]]: memref<?x8x16x128xf16, strided<[49152, 2048, 128, 1], offset: ?>>
// CHECK: %{{.*}}, %{{.*}}, %{{.*}}:4, %[[KSTRIDES:.*]]:4 = memref.extract_strided_metadata %[[K]]
// CHECK: %[[KPAGE:.*]] = arith.index_cast %[[KSTRIDES]]#0 : index to i64
// CHECK: gpu.launch_func @cascade_kernels::@cascade_prefill_causal_
// CHECK-SAME: %[[KPAGE]] : i64
func.func @layer_of_pair(%q: memref<?x32x128xf16>,
                         %k: memref<?x8x16x128xf16, strided<[49152, 2048, 128, 1], offset: ?>>,
                         %v: memref<?x8x16x128xf16, strided<[49152, 2048, 128, 1], offset: ?>>,
                         %qo: memref<?xi32>, %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>,
                         %o: memref<?x32x128xf16>, %lse: memref<?x32xf32>) {
  cascade.paged_attention q(%q : memref<?x32x128xf16>)
      kv(%k, %v : memref<?x8x16x128xf16, strided<[49152, 2048, 128, 1], offset: ?>>, memref<?x8x16x128xf16, strided<[49152, 2048, 128, 1], offset: ?>>)
      qo_indptr(%qo : memref<?xi32>) kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>)
      kv_last_page_len(%last : memref<?xi32>)
      outs(%o, %lse : memref<?x32x128xf16>, memref<?x32xf32>)
      {page_size = 16 : i64, causal, kv_layout = #cascade.kv_layout<hnd>}
  return
}

// The kernel addresses page p at p * kv_stride_page.
// CHECK-LABEL: gpu.func @cascade_decode_rows_f16_f16_d128_g4_h8_p16_nhd_pool_
// CHECK-SAME: %[[KPAGE:arg[0-9]+]]: i64, %arg{{[0-9]+}}: i64)
// CHECK: arith.index_cast %[[KPAGE]] : i64 to index

// MANIFEST: "name": "cascade_decode_rows_f16_f16_d128_g4_h8_p16_nhd_pool_
// MANIFEST-SAME: {"default": 32768, "kind": "i64", "name": "kv_stride_page"}
// MANIFEST-NOT: v_stride_page
// MANIFEST: "name": "cascade_prefill_causal_
// MANIFEST-SAME: {"default": 16384, "kind": "i64", "name": "kv_stride_page"}
// MANIFEST-NOT: v_stride_page
