// REQUIRES: ptxas
// RUN: cascade-opt %s --convert-cascade-to-gpu | FileCheck %s
// RUN: rm -rf %t && cascade-opt %s --cascade-to-ptx="chip=sm_90a bundle-dir=%t" -o /dev/null
// RUN: FileCheck %s --check-prefix=PTX < %t/kernels.ptx
// RUN: %ptxas -arch=sm_90a -v %t/kernels.ptx -o /dev/null 2>&1 | grep -A3 "entry function 'cascade_prefill_causal_wgmma_f16_f16_d128_g4_h8_p16_nhd_pool_w4x1" | FileCheck %s --check-prefix=PTXAS
// RUN: %ptxas -arch=sm_90a -v %t/kernels.ptx -o /dev/null 2>&1 | grep -A3 "entry function 'cascade_prefill_causal_wgmma_f16_f16_d128_g4_h8_p16_nhd_pool_rope" | FileCheck %s --check-prefix=ROPE

// The register split of a wgmma kernel follows its consumer warpgroups.
// A block of a producer and three consumers (threads = [128, 4, 1], 192
// query rows) starts with 512 x 128 registers; setmaxnreg.inc only takes
// what setmaxnreg.dec gave back to that pool, so the consumers get the rest
// after the producer's share: 152 a thread (40 for the producer), 144 with
// RoPE (72). The two-consumer split (232 / 216) would ask 94,208 registers
// of the 65,536 and the consumers would wait forever.

// CHECK-LABEL: gpu.func @cascade_prefill_causal_wgmma_f16_f16_d128_g4_h8_p16_nhd_pool_w4x1_q192_kv64_s3(
// CHECK: nvvm.setmaxregister decrease 40
// CHECK: nvvm.setmaxregister increase 152
func.func @three_consumers(%q: memref<?x32x128xf16>, %cache: memref<?x2x16x8x128xf16>, %qo: memref<?xi32>,
                           %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>,
                           %o: memref<?x32x128xf16>, %lse: memref<?x32xf32>) {
  cascade.paged_attention q(%q : memref<?x32x128xf16>) kv(%cache : memref<?x2x16x8x128xf16>)
      qo_indptr(%qo : memref<?xi32>) kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>)
      kv_last_page_len(%last : memref<?xi32>) outs(%o, %lse : memref<?x32x128xf16>, memref<?x32xf32>)
      {page_size = 16 : i64, causal,
       cascade.kernel_config = #cascade.kernel_config<wgmma, threads = [128, 4, 1], q_tile = 192, kv_tile = 64, stages = 3>}
  return
}

// CHECK-LABEL: gpu.func @cascade_prefill_causal_wgmma_f16_f16_d128_g4_h8_p16_nhd_pool_rope3f800000x461c4000_w4x1_q192_kv64_s3(
// CHECK: nvvm.setmaxregister decrease 72
// CHECK: nvvm.setmaxregister increase 144
func.func @three_consumers_rope(%q: memref<?x32x128xf16>, %cache: memref<?x2x16x8x128xf16>, %qo: memref<?xi32>,
                                %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>,
                                %o: memref<?x32x128xf16>, %lse: memref<?x32xf32>) {
  cascade.paged_attention q(%q : memref<?x32x128xf16>) kv(%cache : memref<?x2x16x8x128xf16>)
      qo_indptr(%qo : memref<?xi32>) kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>)
      kv_last_page_len(%last : memref<?xi32>) outs(%o, %lse : memref<?x32x128xf16>, memref<?x32xf32>)
      {page_size = 16 : i64, causal, pos_encoding = #cascade.pos_encoding<rope_llama>,
       cascade.kernel_config = #cascade.kernel_config<wgmma, threads = [128, 4, 1], q_tile = 192, kv_tile = 64, stages = 3>}
  return
}

// PTX: .maxntid 128, 4, 1
// PTX: .minnctapersm 1
// ptxas launches the block with the 128 registers a thread the split
// assumes; the consumers' code fits its 152 without spills (with RoPE's 144
// ptxas spills a few bytes: three consumers pay off, if at all, without it).
// PTXAS: 0 bytes spill stores, 0 bytes spill loads
// PTXAS: Used 128 registers
// ROPE: Used 128 registers
