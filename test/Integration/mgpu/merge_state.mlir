// Host code for the mgpu integration test: a cascade.merge_state on device
// buffers, lowered by cascade-to-ptx plus upstream gpu-to-llvm into host LLVM
// that calls the mgpu* entry points of libcascade_mlir_cuda_runtime.so.
// `tools/cascade-dev gpu host-object` turns it into merge_state_host.o.
func.func @merge_state(%va: memref<?x32x128xf16>, %sa: memref<?x32xf32>,
                       %vb: memref<?x32x128xf16>, %sb: memref<?x32xf32>,
                       %v: memref<?x32x128xf16>, %s: memref<?x32xf32>)
    attributes {llvm.emit_c_interface} {
  cascade.merge_state ins(%va, %sa, %vb, %sb : memref<?x32x128xf16>, memref<?x32xf32>,
                                               memref<?x32x128xf16>, memref<?x32xf32>)
      outs(%v, %s : memref<?x32x128xf16>, memref<?x32xf32>)
  return
}
