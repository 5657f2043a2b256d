// RUN: cascade-opt %s --cascade-select-kernel-config="chip=sm_90a wgmma-exp2-emulation=2" | FileCheck %s --check-prefix=CONFIG
// RUN: cascade-opt %s --cascade-select-kernel-config="chip=sm_90a wgmma-exp2-emulation=2" --convert-cascade-to-gpu | FileCheck %s --check-prefix=KERNEL
// RUN: cascade-opt %s --cascade-select-kernel-config="chip=sm_90a" --convert-cascade-to-gpu | FileCheck %s --check-prefix=DEFAULT

// exp2_emulation (FlashAttention-4's offload of MUFU.EX2): selection records
// the option on the wgmma configuration, the kernel's name says it, and the
// softmax evaluates exp2 of the first two of every eight S fragment columns
// with the polynomial (the 1.5 * 2^23 rounding add, three fmas, the exponent
// added as an integer) while the others, and the rescale factors, keep
// ex2.approx. Without the option no polynomial is emitted. A hand-written
// mma_sync configuration takes it too (the same online softmax).

// CONFIG-LABEL: func.func @prefill_d64
// CONFIG: #cascade.kernel_config<wgmma, threads = [128, 4, 1], q_tile = 192, kv_tile = 96, stages = 4, exp2_emulation = 2>
// CONFIG-LABEL: func.func @prefill_mma_sync
// CONFIG: #cascade.kernel_config<mma_sync, threads = [32, 4, 1], q_tile = 64, kv_tile = 64, stages = 2, exp2_emulation = 8>

// KERNEL-LABEL: gpu.func @cascade_prefill_causal_wgmma_f16_f16_d64_g4_h8_p16_nhd_pool_w4x1_q192_kv96_s4_ex2e2
// KERNEL-DAG: arith.constant 0x4B400000 : f32
// KERNEL-DAG: arith.constant -1.270000e+02 : f32
// KERNEL-DAG: arith.constant 0.0550089329 : f32
// KERNEL-DAG: arith.constant 23 : i32
// KERNEL: arith.maxnumf
// KERNEL: llvm.intr.fma
// KERNEL: arith.shli
// KERNEL: llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f32"
// KERNEL-LABEL: gpu.func @cascade_prefill_mma_f16_f16_d128_g4_h8_p16_nhd_pool_w4x1_q64_kv64_s2_ex2e8
// KERNEL: arith.shli

// DEFAULT-LABEL: gpu.func @cascade_prefill_causal_wgmma_f16_f16_d64_g4_h8_p16_nhd_pool_w4x1_q192_kv96_s4(
// DEFAULT-NOT: 0x4B400000
// DEFAULT: gpu.return
func.func @prefill_d64(%q: memref<?x32x64xf16>, %cache: memref<?x2x16x8x64xf16>, %qo: memref<?xi32>,
                       %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>,
                       %o: memref<?x32x64xf16>, %lse: memref<?x32xf32>) {
  cascade.paged_attention q(%q : memref<?x32x64xf16>) kv(%cache : memref<?x2x16x8x64xf16>)
      qo_indptr(%qo : memref<?xi32>) kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>)
      kv_last_page_len(%last : memref<?xi32>) outs(%o, %lse : memref<?x32x64xf16>, memref<?x32xf32>)
      {page_size = 16 : i64, causal}
  return
}

func.func @prefill_mma_sync(%q: memref<?x32x128xf16>, %cache: memref<?x2x16x8x128xf16>, %qo: memref<?xi32>,
                            %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>,
                            %o: memref<?x32x128xf16>, %lse: memref<?x32xf32>) {
  cascade.paged_attention q(%q : memref<?x32x128xf16>) kv(%cache : memref<?x2x16x8x128xf16>)
      qo_indptr(%qo : memref<?xi32>) kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>)
      kv_last_page_len(%last : memref<?xi32>) outs(%o, %lse : memref<?x32x128xf16>, memref<?x32xf32>)
      {page_size = 16 : i64,
       cascade.kernel_config = #cascade.kernel_config<mma_sync, threads = [32, 4, 1], q_tile = 64, kv_tile = 64, stages = 2, exp2_emulation = 8>}
  return
}
