// REQUIRES: ptxas
// DEFINE: %{to_ptx_sm90a} = --pass-pipeline='builtin.module(nvvm-attach-target{chip=sm_90a features=+ptx80 O=3},gpu.module(convert-scf-to-cf,convert-nvgpu-to-nvvm,convert-gpu-to-nvvm,convert-nvvm-to-llvm,canonicalize,cse,reconcile-unrealized-casts),gpu-module-to-binary{format=isa})'
// RUN: cascade-opt %s --test-cascade-hopper-codegen=block=setmaxnreg --canonicalize --cse | FileCheck %s
// RUN: rm -rf %t && mkdir -p %t
// RUN: cascade-opt %s --test-cascade-hopper-codegen=block=setmaxnreg | cascade-opt %{to_ptx_sm90a} -o %t/k.mlir
// RUN: %python %S/Inputs/gpu-binary-ptx.py %t/k.mlir %t/k.ptx
// RUN: FileCheck %s --check-prefix=PTX < %t/k.ptx
// RUN: %ptxas -arch=sm_90a %t/k.ptx -o %t/k.cubin 2>&1 | count 0

// Wgmma.h's setMaxRegisters: of two warpgroups, the first (threads 0-127,
// a producer) shrinks its register budget to 40, the second (a consumer)
// grows it to 232. ptxas honours setmaxnreg only under launch bounds that
// fix the register count at entry: here .maxntid (the block size) with
// .minnctapersm 1 (with .maxntid alone: "C7508 ... 'setmaxnreg' ignored");
// `count 0` checks that ptxas prints nothing.

// CHECK-LABEL: gpu.func @setmaxnreg
// CHECK-SAME: known_block_size = array<i32: 256, 1, 1>
// CHECK-SAME: nvvm.minctasm = 1 : i32
// CHECK: %[[P:.*]] = arith.cmpi ult, %{{.*}}, %c128 : index
// CHECK: scf.if %[[P]] {
// CHECK-NEXT: nvvm.setmaxregister decrease 40
// CHECK-NEXT: } else {
// CHECK-NEXT: nvvm.setmaxregister increase 232

// PTX: .target sm_90a
// PTX: .maxntid 256, 1, 1
// PTX-NEXT: .minnctapersm 1
// PTX-DAG: setmaxnreg.dec.sync.aligned.u32 40;
// PTX-DAG: setmaxnreg.inc.sync.aligned.u32 232;
module {}
