// REQUIRES: ptxas
// DEFINE: %{to_ptx_sm90a} = --pass-pipeline='builtin.module(nvvm-attach-target{chip=sm_90a features=+ptx80 O=3},gpu.module(convert-scf-to-cf,convert-nvgpu-to-nvvm,convert-gpu-to-nvvm,convert-nvvm-to-llvm,canonicalize,cse,reconcile-unrealized-casts),gpu-module-to-binary{format=isa})'
// RUN: cascade-opt %s --test-cascade-hopper-codegen=block=turns --canonicalize --cse | FileCheck %s
// RUN: rm -rf %t && mkdir -p %t
// RUN: cascade-opt %s --test-cascade-hopper-codegen=block=turns | cascade-opt %{to_ptx_sm90a} -o %t/k.mlir
// RUN: %python %S/Inputs/gpu-binary-ptx.py %t/k.mlir %t/k.ptx
// RUN: FileCheck %s --check-prefix=PTX < %t/k.ptx
// RUN: %ptxas -arch=sm_90a %t/k.ptx -o %t/k.cubin

// Wgmma.h's named-barrier turns (the ping-pong of the wgmma consumers):
// warpgroup 0 gives itself the first turn with bar.arrive on barrier 3, each
// warpgroup w waits on barrier 3 + w (its own 128 threads plus the 128 that
// handed it the turn: 256), and hands the turn on with bar.arrive on
// barrier 3 + (w + 1) % 2. The barrier ids are computed at run time.

// CHECK-LABEL: gpu.func @turns
// CHECK: %[[WG:.*]] = arith.index_cast %{{.*}} : index to i32
// CHECK: %[[FIRST:.*]] = arith.cmpi eq, %[[WG]], %{{.*}} : i32
// CHECK: scf.if %[[FIRST]] {
// CHECK-NEXT: nvvm.barrier.arrive id = %{{.*}} number_of_threads = %{{.*}}
// CHECK: %[[MINE:.*]] = arith.addi %[[WG]], %{{.*}} : i32
// CHECK: nvvm.barrier id = %[[MINE]] number_of_threads = %{{.*}}
// CHECK: memref.store
// CHECK: %[[NEXT:.*]] = arith.remui
// CHECK: %[[ID:.*]] = arith.addi %[[NEXT]], %{{.*}} : i32
// CHECK: nvvm.barrier.arrive id = %[[ID]] number_of_threads = %{{.*}}

// PTX: .target sm_90a
// PTX: bar.arrive 3, 256;
// PTX: bar.sync %r{{[0-9]+}}, 256;
// PTX: bar.arrive %r{{[0-9]+}}, 256;
module {}
