// rows-min-blocks-per-sm is a tuning option taken as given: a launch bound
// that the chip cannot hold is an error on the op, not a kernel that ptxas
// or the driver refuses later. Shared memory counts the K/V stages (32 KiB
// here) and the 1 KiB the hardware reserves a block: 7 do not fit sm_90's
// 228 KiB, 6 do.
// RUN: not cascade-opt %s --cascade-select-kernel-config="rows-min-blocks-per-sm=40" -o /dev/null 2>&1 | FileCheck %s --check-prefix=RANGE
// RUN: not cascade-opt %s --cascade-select-kernel-config="rows-min-blocks-per-sm=17" -o /dev/null 2>&1 | FileCheck %s --check-prefix=THREADS
// RUN: not cascade-opt %s --cascade-select-kernel-config="rows-min-blocks-per-sm=8" -o /dev/null 2>&1 | FileCheck %s --check-prefix=SMEM
// RUN: not cascade-opt %s --cascade-select-kernel-config="rows-min-blocks-per-sm=7" -o /dev/null 2>&1 | FileCheck %s --check-prefix=SMEM7
// RUN: cascade-opt %s --cascade-select-kernel-config="rows-min-blocks-per-sm=6" | FileCheck %s --check-prefix=FITS

// RANGE: error: rows-min-blocks-per-sm: min_blocks_per_sm must be in [0, 32], got 40
// THREADS: error: rows-min-blocks-per-sm: min_blocks_per_sm = 17 blocks of 128 threads exceed the 2048 threads an SM holds
// SMEM: error: kernel_config #cascade.kernel_config<rows, threads = [16, 1, 8], q_tile = 1, kv_tile = 32, stages = 2, min_blocks_per_sm = 8> asks for 8 blocks an SM, 270336 bytes of shared memory with what each block reserves; sm_90 has 233472
// SMEM7: error: kernel_config #cascade.kernel_config<rows, threads = [16, 1, 8], q_tile = 1, kv_tile = 32, stages = 2, min_blocks_per_sm = 7> asks for 7 blocks an SM, 236544 bytes of shared memory with what each block reserves; sm_90 has 233472
// FITS: #cascade.kernel_config<rows, threads = [16, 1, 8], q_tile = 1, kv_tile = 32, stages = 2, min_blocks_per_sm = 6>
func.func @decode_g4(%q: memref<?x32x128xf16>, %cache: memref<?x2x16x8x128xf16>,
                     %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>,
                     %o: memref<?x32x128xf16>, %lse: memref<?x32xf32>) {
  cascade.paged_attention q(%q : memref<?x32x128xf16>) kv(%cache : memref<?x2x16x8x128xf16>)
      kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>) kv_last_page_len(%last : memref<?xi32>)
      outs(%o, %lse : memref<?x32x128xf16>, memref<?x32xf32>) {page_size = 16 : i64}
  return
}
