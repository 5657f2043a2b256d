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
