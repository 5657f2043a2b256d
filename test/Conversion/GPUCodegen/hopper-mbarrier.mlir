// REQUIRES: ptxas
// DEFINE: %{to_ptx_sm90a} = --pass-pipeline='builtin.module(nvvm-attach-target{chip=sm_90a features=+ptx80 O=3},gpu.module(convert-scf-to-cf,convert-nvgpu-to-nvvm,convert-gpu-to-nvvm,convert-nvvm-to-llvm,canonicalize,cse,reconcile-unrealized-casts),gpu-module-to-binary{format=isa})'
// RUN: cascade-opt %s --test-cascade-hopper-codegen=block=mbarrier --canonicalize --cse | FileCheck %s
// RUN: rm -rf %t && mkdir -p %t
// RUN: cascade-opt %s --test-cascade-hopper-codegen=block=mbarrier | cascade-opt %{to_ptx_sm90a} -o %t/k.mlir
// RUN: %python %S/Inputs/gpu-binary-ptx.py %t/k.mlir %t/k.ptx
// RUN: FileCheck %s --check-prefix=PTX < %t/k.ptx
// RUN: %ptxas -arch=sm_90a %t/k.ptx -o %t/k.cubin

// Wgmma.h's mbarrier helpers on nvgpu.mbarrier.*: one barrier in shared
// memory, initialized (one arrival) by thread 0 only, a barrier so every
// thread sees it initialized, thread 0's arrive.expect_tx (0 bytes: no TMA
// copy completes on it here), and every thread waiting for phase 0 (parity
// false) in the try_wait.parity retry loop.

// CHECK-LABEL: gpu.func @mbarrier
// CHECK-DAG: %[[C0:.*]] = arith.constant 0 : index
// CHECK-DAG: %[[C1:.*]] = arith.constant 1 : index
// CHECK-DAG: %[[FALSE:.*]] = arith.constant false
// CHECK: %[[LEADER:.*]] = arith.cmpi eq, %{{.*}}, %[[C0]] : index
// CHECK: %[[BARS:.*]] = nvgpu.mbarrier.create -> <memorySpace = #gpu.address_space<workgroup>>
// CHECK-NEXT: nvgpu.mbarrier.init %[[BARS]][%[[C0]]], %[[C1]], predicate = %[[LEADER]]
// CHECK-NEXT: gpu.barrier
// CHECK-NEXT: nvgpu.mbarrier.arrive.expect_tx %[[BARS]][%[[C0]]], %[[C0]], predicate = %[[LEADER]]
// CHECK-NEXT: nvgpu.mbarrier.try_wait.parity %[[BARS]][%[[C0]]], %[[FALSE]], %{{.*}}
// CHECK: memref.store

// PTX: .target sm_90a
// PTX: .shared .align 8 .b8 __mbarrier[8];
// PTX: @%p{{[0-9]+}} mbarrier.init.shared.b64 [%r[[BAR:[0-9]+]]], %r{{[0-9]+}};
// PTX: bar.sync 0;
// PTX: @%p{{[0-9]+}} mbarrier.arrive.expect_tx.shared.b64 _, [%r[[BAR]]], %r{{[0-9]+}};
// PTX: LAB_WAIT:
// PTX-NEXT: mbarrier.try_wait.parity.shared.b64 P1, [%r[[BAR]]], 0, %r{{[0-9]+}};
// PTX-NEXT: @P1 bra.uni DONE;
// PTX-NEXT: bra.uni LAB_WAIT;
module {}
