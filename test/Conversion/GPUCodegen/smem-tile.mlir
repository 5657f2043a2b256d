// RUN: cascade-opt %s --test-cascade-gpu-codegen=block=smem-tile --canonicalize --cse | FileCheck %s
// RUN: cascade-opt %s --test-cascade-gpu-codegen=block=padded-tile --canonicalize --cse | FileCheck %s --check-prefix=PAD
// RUN: cascade-opt %s --test-cascade-gpu-codegen=block=smem-tile | cascade-opt %gpu_to_ptx_sm_90 | FileCheck %s --check-prefix=PTX

// Shared-memory tiles (SmemTileLayout), dynamic shared memory and cp.async
// tile copies. A 64 x 128 f16 tile has 16 chunks (16 bytes) a row: chunk c of
// row r sits at chunk c ^ (r % 8) (the 128-byte XOR swizzle); 128 threads
// copy it in 8 passes, thread t always chunk t % 16 of rows t / 16 + 8 p.

// CHECK: memref.global @cascade_dynamic_smem : memref<0xi8, #gpu.address_space<workgroup>> {alignment = 1024 : i64}
// CHECK-LABEL: gpu.func @tile_round_trip
// CHECK: %[[G:.*]] = memref.get_global @cascade_dynamic_smem
// CHECK: %[[S:.*]] = memref.view %[[G]][%c0][] : memref<0xi8, #gpu.address_space<workgroup>> to memref<8192xf16, #gpu.address_space<workgroup>>
// CHECK: %[[TID:.*]] = gpu.thread_id  x
// CHECK: %[[CHUNK:.*]] = arith.remui %[[TID]], %c16 : index
// CHECK: %[[ROW0:.*]] = arith.divui %[[TID]], %c16 : index
// CHECK: %[[SRC0:.*]] = arith.muli %[[ROW0]], %c128 : index
// CHECK: %[[R7:.*]] = arith.andi %[[ROW0]], %c7 : index
// CHECK: %[[SW:.*]] = arith.xori %[[CHUNK]], %[[R7]] : index
// CHECK: %[[SWE:.*]] = arith.muli %[[SW]], %c8 : index
// CHECK: %[[DST0:.*]] = arith.addi %[[SRC0]], %[[SWE]] : index
// CHECK: nvgpu.device_async_copy %arg0[%{{.*}}], %[[S]][%[[DST0]]], 8, %c8 {bypassL1}
// CHECK-COUNT-7: nvgpu.device_async_copy
// CHECK: nvgpu.device_async_create_group
// CHECK: nvgpu.device_async_wait %{{.*}} {numGroups = 0 : i32}
// CHECK: gpu.barrier

// 96 columns are 12 chunks a row, not a multiple of 8: rows are padded by
// one chunk (104 elements). A 20-row tile is 240 chunks: the second of the
// two copy passes is guarded (threads past the tile copy nothing).
// PAD-LABEL: gpu.func @padded_tile_round_trip
// PAD: memref.view {{.*}} to memref<2080xf16, #gpu.address_space<workgroup>>
// PAD-NOT: arith.xori
// PAD: %[[IN:.*]] = arith.cmpi ult, %{{.*}}, %c240 : index
// PAD: arith.muli %{{.*}}, %c104 : index
// PAD: nvgpu.device_async_copy
// PAD: scf.if %[[IN]] {
// PAD: nvgpu.device_async_copy

// PTX: .extern .shared .align 1024 .b8 cascade_dynamic_smem[];
// PTX-SAME: cp.async.cg.shared.global [%{{[a-z0-9]+}}], [%{{[a-z0-9]+}}], 16, {{%?[a-z0-9]+}};
// PTX-SAME: cp.async.commit_group;
// PTX-SAME: cp.async.wait_group {{(\\09)?}}0;
// PTX-SAME: bar.sync
module {}
