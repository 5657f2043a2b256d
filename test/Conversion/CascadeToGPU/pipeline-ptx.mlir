// REQUIRES: ptxas
// PTX of every kernel of merge.mlir and decode.mlir, for sm_90 and sm_80:
// ptxas accepts it, accesses are 16 bytes wide, reductions use shuffles, exp2/
// log2 are the approx instructions and nothing calls libdevice.
// RUN: rm -rf %t && mkdir -p %t
// RUN: cascade-opt %S/merge.mlir --cascade-to-ptx="bundle-dir=%t/m90" -o /dev/null
// RUN: cascade-opt %S/decode.mlir --cascade-to-ptx="bundle-dir=%t/d90" -o /dev/null
// RUN: cascade-opt %S/merge.mlir --cascade-to-ptx="chip=sm_80 bundle-dir=%t/m80" -o /dev/null
// RUN: cascade-opt %S/decode.mlir --cascade-to-ptx="chip=sm_80 features=+ptx80 opt-level=2 bundle-dir=%t/d80" -o /dev/null
// RUN: %ptxas -arch=sm_90 %t/m90/kernels.ptx -o %t/m90.cubin
// RUN: %ptxas -arch=sm_90 %t/d90/kernels.ptx -o %t/d90.cubin
// RUN: %ptxas -arch=sm_80 %t/m80/kernels.ptx -o %t/m80.cubin
// RUN: %ptxas -arch=sm_80 %t/d80/kernels.ptx -o %t/d80.cubin
// RUN: FileCheck %s --check-prefix=MERGE < %t/m90/kernels.ptx
// RUN: FileCheck %s --check-prefix=DECODE < %t/d90/kernels.ptx
// RUN: FileCheck %s --check-prefix=NOLIBDEVICE < %t/m90/kernels.ptx
// RUN: FileCheck %s --check-prefix=NOLIBDEVICE < %t/d90/kernels.ptx
// RUN: FileCheck %s --check-prefix=SM80 < %t/d80/kernels.ptx
// RUN: FileCheck %s --check-prefix=MANIFEST < %t/d90/manifest.json

// MERGE: .target sm_90
// MERGE-LABEL: .visible .entry cascade_merge_state_f16_d128_b2_t128(
// MERGE-DAG: ld.global.v4.b32
// MERGE-DAG: ex2.approx.ftz.f32
// MERGE-DAG: lg2.approx.ftz.f32
// MERGE-DAG: st.global.v4.b32
// MERGE-LABEL: .visible .entry cascade_merge_state_in_place_bf16_d64_be_masku8_t128(
// MERGE-DAG: bar.sync
// MERGE-DAG: ld.global.v4.b32
// MERGE-DAG: st.global.v4.b32
// MERGE-LABEL: .visible .entry cascade_merge_states_f32_d256_b2_t128(
// MERGE-DAG: ld.global.v4
// MERGE-DAG: st.global.v4

// DECODE-LABEL: .visible .entry cascade_decode_rows_f16_f16_d128_g4_h8_p16_nhd_pool_t16x8_kv32_s2(
// DECODE-DAG: cp.async.cg.shared.global [{{.*}}], [{{.*}}], 16, {{.*}};
// DECODE-DAG: cp.async.commit_group
// DECODE-DAG: cp.async.wait_group 1;
// DECODE-DAG: ld.shared.v4
// DECODE-DAG: shfl.sync.bfly.b32
// DECODE-DAG: shfl.sync.idx.b32
// DECODE-DAG: ex2.approx.ftz.f32
// DECODE-DAG: lg2.approx.ftz.f32
// DECODE-DAG: st.global.v4.b32
// DECODE-LABEL: .visible .entry cascade_decode_split_rows_f16_f16_d128_g4_h8_p16_hnd_pool_t16x8_kv32_s2(
// DECODE-DAG: cp.async.cg.shared.global
// DECODE-DAG: ld.global.b8
// DECODE-LABEL: .visible .entry cascade_merge_states_indptr_f16_d128_h32_byreq_b2_t128(
// DECODE-DAG: ld.global.v4
// DECODE-LABEL: .visible .entry cascade_decode_rows_bf16_bf16_d64_g1_h8_p1_hnd_pair_cap41f00000_win128_rope3f800000x461c4000_lsee_t8x16_kv32_s4(
// DECODE-DAG: cos.approx
// DECODE-DAG: sin.approx
// DECODE-DAG: cp.async.wait_group 3;
// DECODE-LABEL: .visible .entry cascade_decode_rows_f16_f16_d256_g8_h2_p16_nhd_pool_alibi_t32x4_kv16_s2(
// DECODE-DAG: cp.async.wait_group 1;
// DECODE-DAG: shfl.sync.idx.b32

// NOLIBDEVICE-NOT: __nv_
// NOLIBDEVICE-NOT: .extern .func

// SM80: .target sm_80

// MANIFEST: "format": "cascade-kernel-bundle"
// MANIFEST: "kernels": [
// MANIFEST: "block": [
// MANIFEST-NEXT: 16,
// MANIFEST-NEXT: 1,
// MANIFEST-NEXT: 8
// MANIFEST: "name": "cascade_decode_rows_f16_f16_d128_g4_h8_p16_nhd_pool_t16x8_kv32_s2"
// MANIFEST: "op": "decode"
// MANIFEST: "kind": "memref"
// MANIFEST: "name": "q"
// MANIFEST: "plan_arrays": []
// MANIFEST: "name": "cascade_decode_split_rows_f16_f16_d128_g4_h8_p16_hnd_pool_t16x8_kv32_s2"
// MANIFEST: "op": "decode_split"
// MANIFEST: "plan_arrays": [
// MANIFEST-NEXT: "request_indices"
// MANIFEST: "target": {
// MANIFEST-NEXT: "chip": "sm_90",
// MANIFEST-NEXT: "features": "+ptx80"
