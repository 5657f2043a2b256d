// REQUIRES: ptxas
// DEFINE: %{to_ptx_sm90a} = --pass-pipeline='builtin.module(nvvm-attach-target{chip=sm_90a features=+ptx80 O=3},gpu.module(convert-scf-to-cf,convert-nvgpu-to-nvvm,convert-gpu-to-nvvm,convert-nvvm-to-llvm,canonicalize,cse,reconcile-unrealized-casts),gpu-module-to-binary{format=isa})'
// RUN: cascade-opt %s --test-cascade-hopper-codegen=block=wgmma --canonicalize --cse | FileCheck %s
// RUN: cascade-opt %s --test-cascade-hopper-codegen=block=wgmma-bf16 --canonicalize --cse | FileCheck %s --check-prefix=BF16
// RUN: rm -rf %t && mkdir -p %t
// RUN: cascade-opt %s --test-cascade-hopper-codegen=block=wgmma | cascade-opt %{to_ptx_sm90a} -o %t/f16.mlir
// RUN: %python %S/Inputs/gpu-binary-ptx.py %t/f16.mlir %t/f16.ptx
// RUN: FileCheck %s --check-prefix=PTX --implicit-check-not=cvta.shared --implicit-check-not=cvta.to.shared < %t/f16.ptx
// RUN: %ptxas -arch=sm_90a -v %t/f16.ptx -o %t/f16.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS
// RUN: cascade-opt %s --test-cascade-hopper-codegen=block=wgmma-bf16 | cascade-opt %{to_ptx_sm90a} -o %t/bf16.mlir
// RUN: %python %S/Inputs/gpu-binary-ptx.py %t/bf16.mlir %t/bf16.ptx
// RUN: FileCheck %s --check-prefix=PTX-BF16 < %t/bf16.ptx
// RUN: %ptxas -arch=sm_90a -v %t/bf16.ptx -o %t/bf16.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS

// Wgmma.h on one warpgroup: D[64x64] = A[64x64] B^T, both operands K-major
// 64x64 tiles in the 128-byte swizzle (16-byte chunk c of row r at chunk
// c ^ (r % 8)), written with st.shared and made visible to the async proxy
// (fence.proxy.async) before the barrier. Descriptors: the shared address
// field ((addr & 0x3ffff) >> 4) or'ed with the constant fields 128B swizzle
// (1 << 62), SBO 1024 B (64 << 32), LBO 16 B (1 << 16) =
// 0x4000004000010000; the k16 step j starts 32 j bytes later. Four m64n64k16
// wgmma in one group, the first with scale-d 0, then wait 0 and D stored
// through the accumulator layout (register i of thread t: row 16 (t / 32) +
// (t % 32) / 4 + 8 ((i / 2) % 2), column 8 (i / 4) + 2 (t % 4) + i % 2).

// CHECK-LABEL: gpu.func @wgmma_f16
// CHECK-SAME: known_block_size = array<i32: 128, 1, 1>
// CHECK-DAG: %[[FIXED:.*]] = arith.constant 4611686293305360384 : i64
// CHECK-DAG: %[[MASK:.*]] = arith.constant 262143 : i64
// CHECK-DAG: %[[ZERO:.*]] = llvm.mlir.zero : !llvm.struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>
// CHECK: %[[SMEM:.*]] = memref.view {{.*}} to memref<8192xf16, #gpu.address_space<workgroup>>
// CHECK: arith.andi %{{.*}}, %c7 : index
// CHECK: arith.xori
// CHECK-COUNT-8: vector.store %{{.*}}, %[[SMEM]]
// CHECK: nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}
// CHECK-NEXT: gpu.barrier
// CHECK: %[[PTR:.*]] = memref.extract_aligned_pointer_as_index %[[SMEM]]
// CHECK: %[[ADDRA:.*]] = arith.index_castui %[[PTR]] : index to i64
// CHECK: nvvm.wgmma.fence.aligned
// CHECK: %[[A0:.*]] = arith.andi %[[ADDRA]], %[[MASK]] : i64
// CHECK: %[[A1:.*]] = arith.shrui %[[A0]], %c4_i64 : i64
// CHECK: %[[DA:.*]] = arith.ori %[[A1]], %[[FIXED]] : i64
// CHECK: %[[DB:.*]] = arith.ori %{{.*}}, %[[FIXED]] : i64
// CHECK: %[[D0:.*]] = nvvm.wgmma.mma_async %[[DA]], %[[DB]], %[[ZERO]], <m = 64, n = 64, k = 16>, D[<f32>, <zero>], A[<f16>, <one>, <row>], B[<f16>, <one>, <col>]
// CHECK: arith.addi %[[ADDRA]], %c32_i64 : i64
// CHECK: %[[D1:.*]] = nvvm.wgmma.mma_async %{{.*}}, %{{.*}}, %[[D0]], <m = 64, n = 64, k = 16>, D[<f32>, <one>]
// CHECK: arith.addi %[[ADDRA]], %c64_i64 : i64
// CHECK: %[[D2:.*]] = nvvm.wgmma.mma_async %{{.*}}, %{{.*}}, %[[D1]], {{.*}} D[<f32>, <one>]
// CHECK: arith.addi %[[ADDRA]], %c96_i64 : i64
// CHECK: %[[D3:.*]] = nvvm.wgmma.mma_async %{{.*}}, %{{.*}}, %[[D2]], {{.*}} D[<f32>, <one>]
// CHECK-NOT: nvvm.wgmma.mma_async
// CHECK: nvvm.wgmma.commit.group.sync.aligned
// CHECK-NEXT: nvvm.wgmma.wait.group.sync.aligned 0
// CHECK: llvm.extractvalue %[[D3]][0]
// CHECK: llvm.extractvalue %[[D3]][31]
// CHECK-NOT: llvm.extractvalue %[[D3]][32]

// BF16-LABEL: gpu.func @wgmma_bf16
// BF16-COUNT-4: nvvm.wgmma.mma_async {{.*}} A[<bf16>, <one>, <row>], B[<bf16>, <one>, <col>]

// The descriptors take the shared-window address of the buffer (no generic
// address conversion anywhere).
// PTX: .target sm_90a
// PTX: .extern .shared .align 1024 .b8 cascade_dynamic_smem[];
// PTX: .maxntid 128, 1, 1
// PTX: mov.b64 %rd[[BASE:[0-9]+]], cascade_dynamic_smem;
// PTX: fence.proxy.async.shared::cta;
// PTX-NEXT: bar.sync 0;
// PTX-NEXT: wgmma.fence.sync.aligned;
// PTX: shr.u64 %rd{{[0-9]+}}, %rd[[BASE]], 4;
// PTX: or.b64 {{.*}}, 4611686293305360384;
// PTX-COUNT-4: wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 {{.*}}, 1, 1, 0, 0;
// PTX-NOT: wgmma.mma_async
// PTX: wgmma.commit_group.sync.aligned;
// PTX-NEXT: wgmma.wait_group.sync.aligned 0;
// PTX-BF16: .target sm_90a
// PTX-BF16-COUNT-4: wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16

// ptxas accepts it with no spills and no wgmma serialization warning.
// PTXAS-NOT: warning
// PTXAS: 0 bytes spill stores, 0 bytes spill loads
// PTXAS-NOT: warning
module {}
