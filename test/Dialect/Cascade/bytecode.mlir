// The dialect's ops and enum attributes survive MLIR bytecode.
// RUN: cascade-opt %cascade_src_root/test/Dialect/Cascade/ops.mlir -emit-bytecode | cascade-opt | FileCheck %s
// RUN: cascade-opt %cascade_src_root/examples/cascade_three_level.mlir -emit-bytecode | cascade-opt -cascade-decompose-levels | FileCheck %s --check-prefix=THREE
// CHECK-LABEL: func.func @merge_state_base_e_memref
// CHECK: {lse_base = #cascade.lse_base<base_e>}
// CHECK-LABEL: func.func @prefill_all_options
// CHECK: kv_layout = #cascade.kv_layout<hnd>
// CHECK-SAME: pos_encoding = #cascade.pos_encoding<rope_llama>
// CHECK-LABEL: func.func @decode_split_plan
// CHECK: plan(
// THREE: cascade.paged_attention
// THREE: cascade.paged_attention {{.*}} {accumulate, page_size = 16 : i64}
// THREE: cascade.paged_attention {{.*}} {accumulate, causal, page_size = 16 : i64}
