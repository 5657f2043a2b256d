// RUN: cascade-opt %s -split-input-file -verify-diagnostics --convert-cascade-to-gpu

// The kernels read flat row-major buffers: a layout that is not provably
// contiguous is rejected instead of being read wrong.

func.func @dynamic_strides(%va: memref<?x8x64xf16, strided<[?, ?, ?], offset: ?>>, %sa: memref<?x8xf32>,
                           %v: memref<?x8x64xf16>, %s: memref<?x8xf32>) {
  // expected-error@+1 {{operand #0 of type 'memref<?x8x64xf16, strided<[?, ?, ?], offset: ?>>' is not contiguous row-major}}
  cascade.merge_state ins(%va, %sa, %v, %s : memref<?x8x64xf16, strided<[?, ?, ?], offset: ?>>, memref<?x8xf32>, memref<?x8x64xf16>, memref<?x8xf32>)
      outs(%v, %s : memref<?x8x64xf16>, memref<?x8xf32>)
  return
}

// -----

// A row stride larger than a row: a strided view into a bigger buffer.
func.func @padded_rows(%vo: memref<?x8x64xf16, strided<[1024, 64, 1]>>, %so: memref<?x8xf32>,
                       %v: memref<?x8x64xf16>, %s: memref<?x8xf32>) {
  // expected-error@+1 {{operand #0 of type 'memref<?x8x64xf16, strided<[1024, 64, 1]>>' is not contiguous row-major}}
  cascade.merge_state_in_place ins(%vo, %so : memref<?x8x64xf16, strided<[1024, 64, 1]>>, memref<?x8xf32>)
      outs(%v, %s : memref<?x8x64xf16>, memref<?x8xf32>)
  return
}

// -----

// Static row-major strides with an offset are contiguous, and a strided mask
// is fine (its stride is a kernel parameter): this lowers.
func.func @contiguous_view(%vo: memref<?x8x64xf16, strided<[512, 64, 1], offset: ?>>, %so: memref<?x8xf32>,
                           %m: memref<?xi8, strided<[?]>>, %v: memref<?x8x64xf16>, %s: memref<?x8xf32>) {
  cascade.merge_state_in_place ins(%vo, %so : memref<?x8x64xf16, strided<[512, 64, 1], offset: ?>>, memref<?x8xf32>)
      mask(%m : memref<?xi8, strided<[?]>>) outs(%v, %s : memref<?x8x64xf16>, memref<?x8xf32>)
  return
}

// -----

// Paged attention's q and o may be views whose head_dim is contiguous: q
// sliced from a packed QKV projection, o a slice of a larger buffer. Their
// row and head strides are kernel parameters: this lowers.
func.func @strided_q_o(%q: memref<?x32x128xf16, strided<[?, 128, 1], offset: ?>>,
                       %cache: memref<?x2x16x8x128xf16>, %kvp: memref<?xi32>,
                       %kvi: memref<?xi32>, %last: memref<?xi32>,
                       %o: memref<?x32x128xf16, strided<[8192, 256, 1], offset: ?>>,
                       %lse: memref<?x32xf32>) {
  cascade.paged_attention q(%q : memref<?x32x128xf16, strided<[?, 128, 1], offset: ?>>)
      kv(%cache : memref<?x2x16x8x128xf16>)
      kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>) kv_last_page_len(%last : memref<?xi32>)
      outs(%o, %lse : memref<?x32x128xf16, strided<[8192, 256, 1], offset: ?>>, memref<?x32xf32>)
      {page_size = 16 : i64}
  return
}

// -----

// A head_dim that is not contiguous cannot be addressed.
func.func @strided_head_dim(%q: memref<?x32x128xf16, strided<[8192, 256, 2]>>,
                            %cache: memref<?x2x16x8x128xf16>, %kvp: memref<?xi32>,
                            %kvi: memref<?xi32>, %last: memref<?xi32>,
                            %o: memref<?x32x128xf16>, %lse: memref<?x32xf32>) {
  // expected-error@+1 {{operand #0 of type 'memref<?x32x128xf16, strided<[8192, 256, 2]>>' is not contiguous row-major}}
  cascade.paged_attention q(%q : memref<?x32x128xf16, strided<[8192, 256, 2]>>)
      kv(%cache : memref<?x2x16x8x128xf16>)
      kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>) kv_last_page_len(%last : memref<?xi32>)
      outs(%o, %lse : memref<?x32x128xf16>, memref<?x32xf32>)
      {page_size = 16 : i64}
  return
}

// -----

// A paged cache strided inside its pages (heads sliced out of a wider
// cache) cannot be addressed: only the page stride is a kernel parameter.
func.func @cache_strided_inside_pages(%q: memref<?x32x128xf16>,
                                      %cache: memref<?x2x16x8x128xf16, strided<[65536, 32768, 2048, 128, 1]>>,
                                      %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>,
                                      %o: memref<?x32x128xf16>, %lse: memref<?x32xf32>) {
  // expected-error@+1 {{operand #1 of type 'memref<?x2x16x8x128xf16, strided<[65536, 32768, 2048, 128, 1]>>' is not contiguous row-major}}
  cascade.paged_attention q(%q : memref<?x32x128xf16>)
      kv(%cache : memref<?x2x16x8x128xf16, strided<[65536, 32768, 2048, 128, 1]>>)
      kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>) kv_last_page_len(%last : memref<?xi32>)
      outs(%o, %lse : memref<?x32x128xf16>, memref<?x32xf32>)
      {page_size = 16 : i64}
  return
}

// -----

// K and V of one head_dim share the kernels' one page stride: a pair whose
// layouts differ is refused.
func.func @pair_of_two_page_strides(%q: memref<?x32x128xf16>,
                                    %k: memref<?x16x8x128xf16, strided<[32768, 1024, 128, 1]>>,
                                    %v: memref<?x16x8x128xf16, strided<[49152, 1024, 128, 1]>>,
                                    %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>,
                                    %o: memref<?x32x128xf16>, %lse: memref<?x32xf32>) {
  // expected-error@+2 {{operand #1 of type 'memref<?x16x8x128xf16, strided<[32768, 1024, 128, 1]>>': k and v of one head_dim must have the same layout (the kernels take one page stride for both)}}
  // expected-error@+1 {{operand #2 of type 'memref<?x16x8x128xf16, strided<[49152, 1024, 128, 1]>>': k and v of one head_dim must have the same layout (the kernels take one page stride for both)}}
  cascade.paged_attention q(%q : memref<?x32x128xf16>)
      kv(%k, %v : memref<?x16x8x128xf16, strided<[32768, 1024, 128, 1]>>, memref<?x16x8x128xf16, strided<[49152, 1024, 128, 1]>>)
      kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>) kv_last_page_len(%last : memref<?xi32>)
      outs(%o, %lse : memref<?x32x128xf16>, memref<?x32xf32>)
      {page_size = 16 : i64}
  return
}
