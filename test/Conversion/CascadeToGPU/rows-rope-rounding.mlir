// RoPE on the rows family rounds like the tensor-core families
// (docs/semantics.md, "Where RoPE rounds"): q' and k' are rotated in f32
// (cos/sin.approx) and rounded once to q's storage dtype before the f32 dot
// product: q' to q's dtype, k' to KV's (an fp8 cache's to q's). Decode
// kernels of f16, bf16, an fp8 cache, q f16 over a bf16 cache and, as the
// negative, the same f16 decode without RoPE.
// RUN: cascade-opt %s --convert-cascade-to-gpu | FileCheck %s
// RUN: cascade-opt %s --cascade-to-ptx="bundle-dir=%t" -o /dev/null
// RUN: FileCheck %s --check-prefix=PTX < %t/kernels.ptx

// The q row: rotated, rounded to f16, widened, then scaled.
// CHECK-LABEL: gpu.func @cascade_decode_rows_f16_f16_d128_g4_h8_p16_nhd_pool_rope
// CHECK: llvm.call_intrinsic "llvm.nvvm.sin.approx.ftz.f"
// CHECK: %[[Q:.*]] = arith.truncf %{{.*}} : vector<8xf32> to vector<8xf16>
// CHECK-NEXT: arith.extf %[[Q]] : vector<8xf16> to vector<8xf32>
// The K row of every key in the loop: the same rounding before the dot.
// CHECK: scf.for
// CHECK: llvm.call_intrinsic "llvm.nvvm.sin.approx.ftz.f"
// CHECK: %[[K:.*]] = arith.truncf %{{.*}} : vector<8xf32> to vector<8xf16>
// CHECK-NEXT: %[[KW:.*]] = arith.extf %[[K]] : vector<8xf16> to vector<8xf32>
// CHECK: vector.extract %[[KW]][0]
// CHECK: llvm.intr.fma
// CHECK-LABEL: gpu.func @cascade_decode_rows_f16_f16_d128_g4_h8_p16_nhd_pool_t
// CHECK-NOT: arith.truncf %{{.*}} : vector<8xf32> to vector<8xf16>
// CHECK: scf.for
// CHECK-NOT: arith.truncf %{{.*}} : vector<8xf32> to vector<8xf16>
// CHECK: gpu.shuffle
// CHECK-LABEL: gpu.func @cascade_decode_rows_bf16_bf16_d64_g1_h8_p16_nhd_pool_rope
// CHECK: arith.truncf %{{.*}} : vector<8xf32> to vector<8xbf16>
// CHECK: scf.for
// CHECK: arith.truncf %{{.*}} : vector<8xf32> to vector<8xbf16>
// CHECK-LABEL: gpu.func @cascade_decode_rows_f16_f8e4m3_d128_g1_h8_p16_nhd_pool_rope
// CHECK: arith.truncf %{{.*}} : vector<8xf32> to vector<8xf16>
// CHECK: scf.for
// CHECK: nvvm.convert.f8x2.to.f16x2
// CHECK: arith.truncf %{{.*}} : vector<8xf32> to vector<8xf16>
// CHECK-LABEL: gpu.func @cascade_decode_rows_f16_bf16_d64_g1_h8_p16_nhd_pool_rope
// CHECK: arith.truncf %{{.*}} : vector<8xf32> to vector<8xf16>
// CHECK-NEXT: arith.extf
// CHECK: scf.for
// CHECK: arith.truncf %{{.*}} : vector<8xf32> to vector<8xbf16>
// CHECK-NEXT: arith.extf

// In the PTX the rounding is a cvt.rn to the storage dtype after the
// rotation's sin.approx (packed pairs or single halves, as LLVM chooses),
// for q before the KV loop's first barrier (the output's cvt comes after).
// PTX-LABEL: .entry cascade_decode_rows_f16_f16_d128_g4_h8_p16_nhd_pool_rope
// PTX: sin.approx.ftz.f32
// PTX-NOT: bar.sync
// PTX: cvt.rn.f16{{(x2)?}}.f32
// PTX-LABEL: .entry cascade_decode_rows_bf16_bf16_d64_g1_h8_p16_nhd_pool_rope
// PTX: sin.approx.ftz.f32
// PTX-NOT: bar.sync
// PTX: cvt.rn.bf16{{(x2)?}}.f32

func.func @rope_f16(%q: memref<?x32x128xf16>, %kv: memref<?x2x16x8x128xf16>,
                    %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>,
                    %o: memref<?x32x128xf16>, %lse: memref<?x32xf32>) {
  cascade.paged_attention q(%q : memref<?x32x128xf16>) kv(%kv : memref<?x2x16x8x128xf16>)
      kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>) kv_last_page_len(%last : memref<?xi32>)
      outs(%o, %lse : memref<?x32x128xf16>, memref<?x32xf32>) {page_size = 16 : i64, pos_encoding = #cascade.pos_encoding<rope_llama>, rope_theta = 10000.0 : f32}
  return
}

func.func @plain_f16(%q: memref<?x32x128xf16>, %kv: memref<?x2x16x8x128xf16>,
                     %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>,
                     %o: memref<?x32x128xf16>, %lse: memref<?x32xf32>) {
  cascade.paged_attention q(%q : memref<?x32x128xf16>) kv(%kv : memref<?x2x16x8x128xf16>)
      kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>) kv_last_page_len(%last : memref<?xi32>)
      outs(%o, %lse : memref<?x32x128xf16>, memref<?x32xf32>) {page_size = 16 : i64}
  return
}

func.func @rope_bf16(%q: memref<?x8x64xbf16>, %kv: memref<?x2x16x8x64xbf16>,
                     %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>,
                     %o: memref<?x8x64xbf16>, %lse: memref<?x8xf32>) {
  cascade.paged_attention q(%q : memref<?x8x64xbf16>) kv(%kv : memref<?x2x16x8x64xbf16>)
      kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>) kv_last_page_len(%last : memref<?xi32>)
      outs(%o, %lse : memref<?x8x64xbf16>, memref<?x8xf32>) {page_size = 16 : i64, pos_encoding = #cascade.pos_encoding<rope_llama>, rope_theta = 10000.0 : f32}
  return
}

func.func @rope_fp8(%q: memref<?x8x128xf16>, %kv: memref<?x2x16x8x128xf8E4M3FN>,
                    %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>,
                    %o: memref<?x8x128xf16>, %lse: memref<?x8xf32>) {
  cascade.paged_attention q(%q : memref<?x8x128xf16>) kv(%kv : memref<?x2x16x8x128xf8E4M3FN>)
      kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>) kv_last_page_len(%last : memref<?xi32>)
      outs(%o, %lse : memref<?x8x128xf16>, memref<?x8xf32>) {page_size = 16 : i64, pos_encoding = #cascade.pos_encoding<rope_llama>, rope_theta = 10000.0 : f32}
  return
}

func.func @rope_mixed(%q: memref<?x8x64xf16>, %kv: memref<?x2x16x8x64xbf16>,
                      %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>,
                      %o: memref<?x8x64xf16>, %lse: memref<?x8xf32>) {
  cascade.paged_attention q(%q : memref<?x8x64xf16>) kv(%kv : memref<?x2x16x8x64xbf16>)
      kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>) kv_last_page_len(%last : memref<?xi32>)
      outs(%o, %lse : memref<?x8x64xf16>, memref<?x8xf32>) {page_size = 16 : i64, pos_encoding = #cascade.pos_encoding<rope_llama>, rope_theta = 10000.0 : f32}
  return
}
