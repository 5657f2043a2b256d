// REQUIRES: ptxas
// DEFINE: %{to_ptx_sm90a} = --pass-pipeline='builtin.module(nvvm-attach-target{chip=sm_90a features=+ptx80 O=3},gpu.module(convert-scf-to-cf,convert-nvgpu-to-nvvm,convert-gpu-to-nvvm,convert-nvvm-to-llvm,canonicalize,cse,reconcile-unrealized-casts),gpu-module-to-binary{format=isa})'
// RUN: cascade-opt %s --test-cascade-hopper-codegen=block=tma --canonicalize --cse | FileCheck %s
// RUN: rm -rf %t && mkdir -p %t
// RUN: cascade-opt %s --test-cascade-hopper-codegen=block=tma | cascade-opt %{to_ptx_sm90a} -o %t/k.mlir
// RUN: %python %S/Inputs/gpu-binary-ptx.py %t/k.mlir %t/k.ptx
// RUN: FileCheck %s --check-prefix=PTX < %t/k.ptx
// RUN: %ptxas -arch=sm_90a -v %t/k.ptx -o %t/k.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS
// RUN: cascade-opt %s --test-cascade-hopper-codegen=block=tma-3d --canonicalize --cse | FileCheck %s --check-prefix=3D
// RUN: cascade-opt %s --test-cascade-hopper-codegen=block=tma-3d | cascade-opt %{to_ptx_sm90a} -o %t/k3.mlir
// RUN: %python %S/Inputs/gpu-binary-ptx.py %t/k3.mlir %t/k3.ptx
// RUN: FileCheck %s --check-prefix=PTX-3D < %t/k3.ptx
// RUN: %ptxas -arch=sm_90a -v %t/k3.ptx -o %t/k3.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS

// Tma.h on one warpgroup a block: the tensor map arrives as an !llvm.ptr
// (the device address of the CUtensorMap) and is cast to the descriptor of
// 64x64 f16 boxes in the 128-byte swizzle. One thread (warp 0's elect.sync)
// prefetches the map, initializes the mbarrier (one arrival) and fences the
// init for the async proxy; after the CTA barrier it arrives with the
// tile's 64 * 64 * 2 = 8192 bytes expected and issues the TMA load of the
// box at column 64 blockIdx.x, row 64 blockIdx.y (innermost coordinate
// first) into the 1024-byte aligned dynamic shared memory. Every thread
// waits on phase 0, then copies 16-byte chunk c of row r from byte
// r * 128 + (16 c ^ 16 (r % 8)) (the 128-byte swizzle) to row r, column
// 8 c of output tile blockIdx.y * gridDim.x + blockIdx.x.

// CHECK-LABEL: gpu.func @tma
// CHECK-SAME: (%[[MAP:.*]]: !llvm.ptr, %[[OUT:.*]]: memref<?xf16>)
// CHECK-SAME: known_block_size = array<i32: 128, 1, 1>
// CHECK-DAG: %[[C0:.*]] = arith.constant 0 : index
// CHECK-DAG: %[[C1:.*]] = arith.constant 1 : index
// CHECK-DAG: %[[C64:.*]] = arith.constant 64 : index
// CHECK-DAG: %[[BYTES:.*]] = arith.constant 8192 : index
// CHECK-DAG: %[[FALSE:.*]] = arith.constant false
// CHECK: %[[DESC:.*]] = builtin.unrealized_conversion_cast %[[MAP]] : !llvm.ptr to !nvgpu.tensormap.descriptor<tensor = memref<64x64xf16, #gpu.address_space<workgroup>>, swizzle = swizzle_128b, l2promo = none, oob = zero, interleave = none>
// CHECK: %[[BYTES_BUF:.*]] = memref.get_global @cascade_dynamic_smem
// CHECK: %[[FLAT:.*]] = memref.view %[[BYTES_BUF]][%[[C0]]][] : {{.*}} to memref<4096xf16, #gpu.address_space<workgroup>>
// CHECK: %[[BOX:.*]] = memref.view %[[BYTES_BUF]][%[[C0]]][] : {{.*}} to memref<64x64xf16, #gpu.address_space<workgroup>>
// CHECK: %[[WARP0:.*]] = arith.cmpi eq
// CHECK: %[[ELECTED:.*]] = nvvm.elect.sync -> i1
// CHECK: %[[LEADER:.*]] = arith.andi %[[WARP0]], %[[ELECTED]] : i1
// CHECK: %[[BARS:.*]] = nvgpu.mbarrier.create
// CHECK: scf.if %[[LEADER]] {
// CHECK-NEXT: nvgpu.tma.prefetch.descriptor %[[DESC]]
// CHECK-NEXT: nvgpu.mbarrier.init %[[BARS]][%[[C0]]], %[[C1]]
// CHECK-NEXT: nvvm.fence.mbarrier.init
// CHECK-NEXT: }
// CHECK-NEXT: gpu.barrier
// CHECK-NEXT: nvgpu.mbarrier.arrive.expect_tx %[[BARS]][%[[C0]]], %[[BYTES]], predicate = %[[LEADER]]
// CHECK: %[[BX:.*]] = gpu.block_id x
// CHECK: %[[BY:.*]] = gpu.block_id y
// CHECK: %[[X:.*]] = arith.muli %[[BX]], %[[C64]] : index
// CHECK: %[[Y:.*]] = arith.muli %[[BY]], %[[C64]] : index
// CHECK: nvgpu.tma.async.load %[[DESC]][%[[X]], %[[Y]]], %[[BARS]][%[[C0]]] to %[[BOX]], predicate = %[[LEADER]]
// CHECK-NEXT: nvgpu.mbarrier.try_wait.parity %[[BARS]][%[[C0]]], %[[FALSE]]
// The un-swizzled copy: chunk (r, c) read at byte r * 128 + (16 c ^ 16 (r % 8)).
// CHECK: %[[ROW:.*]] = arith.divui %{{.*}}, %c8 : index
// CHECK: %[[CHUNK:.*]] = arith.remui %{{.*}}, %c8 : index
// CHECK: %[[CB:.*]] = arith.muli %[[CHUNK]], %c16 : index
// CHECK: %[[R8:.*]] = arith.remui %[[ROW]], %c8 : index
// CHECK: %[[PHASE:.*]] = arith.muli %[[R8]], %c16 : index
// CHECK: %[[SW:.*]] = arith.xori %[[CB]], %[[PHASE]] : index
// CHECK: %[[RB:.*]] = arith.muli %[[ROW]], %c128 : index
// CHECK: %[[OFF:.*]] = arith.addi %[[RB]], %[[SW]] : index
// CHECK: %[[ELEM:.*]] = arith.divui %[[OFF]], %c2 : index
// CHECK: %[[V:.*]] = vector.load %[[FLAT]][%[[ELEM]]] : memref<4096xf16, #gpu.address_space<workgroup>>, vector<8xf16>
// CHECK: vector.store %[[V]], %[[OUT]]
// CHECK-COUNT-3: vector.store %{{.*}}, %[[OUT]]
// CHECK-NOT: vector.store

// The fence after the init is fence.mbarrier_init (release, cluster scope);
// the copy is the 2-D tiled bulk tensor copy completing on the mbarrier as
// transaction bytes, its coordinates {64 ctaid.x, 64 ctaid.y} (the
// lowering's inline PTX leaves the default load mode .tile unspelled).
// PTX: .target sm_90a
// PTX: .extern .shared .align 1024 .b8 cascade_dynamic_smem[];
// PTX: .maxntid 128, 1, 1
// PTX: ld.param.b64 %rd[[MAP:[0-9]+]], [tma_param_0];
// PTX: elect.sync
// PTX: prefetch.tensormap [%rd[[MAP]]];
// PTX: mbarrier.init.shared.b64
// PTX-NEXT: fence.mbarrier_init.release.cluster;
// PTX: bar.sync 0;
// PTX: @%p[[LEADER:[0-9]+]] mbarrier.arrive.expect_tx.shared.b64 _, [%r[[BAR:[0-9]+]]], %r{{[0-9]+}};
// PTX: shl.b32 %r[[X:[0-9]+]], %r{{[0-9]+}}, 6;
// PTX: shl.b32 %r[[Y:[0-9]+]], %r{{[0-9]+}}, 6;
// PTX: @%p[[LEADER]] cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%rd{{[0-9]+}}], [%rd[[MAP]], {%r[[X]],%r[[Y]]} ], [%r[[BAR]]];
// PTX: LAB_WAIT:
// PTX-NEXT: mbarrier.try_wait.parity.shared.b64 P1, [%r[[BAR]]], 0, %r{{[0-9]+}};
// PTX-COUNT-4: ld.shared.v4.b32
// PTX-NOT: ld.shared

// The 3-D block: 1x64x64 boxes (the same 8192 bytes), blockIdx.z the
// outermost coordinate, output tile (z * gridDim.y + y) * gridDim.x + x.
// 3D-LABEL: gpu.func @tma_3d
// 3D: %[[DESC:.*]] = builtin.unrealized_conversion_cast %{{.*}} : !llvm.ptr to !nvgpu.tensormap.descriptor<tensor = memref<1x64x64xf16, #gpu.address_space<workgroup>>, swizzle = swizzle_128b
// 3D: %[[BOX:.*]] = memref.view {{.*}} to memref<1x64x64xf16, #gpu.address_space<workgroup>>
// 3D: nvgpu.mbarrier.arrive.expect_tx %{{.*}}[%{{.*}}], %c8192
// 3D: %[[BX:.*]] = gpu.block_id x
// 3D: %[[BY:.*]] = gpu.block_id y
// 3D: %[[X:.*]] = arith.muli %[[BX]], %c64 : index
// 3D: %[[Y:.*]] = arith.muli %[[BY]], %c64 : index
// 3D: %[[BZ:.*]] = gpu.block_id z
// 3D: %[[GY:.*]] = gpu.grid_dim y
// 3D: %[[ZG:.*]] = arith.muli %[[BZ]], %[[GY]] : index
// 3D: %[[TILE:.*]] = arith.addi %[[ZG]], %[[BY]] : index
// 3D: nvgpu.tma.async.load %[[DESC]][%[[X]], %[[Y]], %[[BZ]]], %{{.*}} to %[[BOX]]
// 3D: %[[GX:.*]] = gpu.grid_dim x
// 3D: arith.muli %[[TILE]], %[[GX]] : index
// PTX-3D: .target sm_90a
// PTX-3D: cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes [%rd{{[0-9]+}}], [%rd{{[0-9]+}}, {%r{{[0-9]+}},%r{{[0-9]+}},%r{{[0-9]+}}} ], [%r{{[0-9]+}}];

// PTXAS-NOT: warning
// PTXAS: 0 bytes spill stores, 0 bytes spill loads
// PTXAS-NOT: warning
module {}
