// RUN: cascade-opt %s --cascade-select-kernel-config="chip=sm_90a wgmma-split-kv-barriers=true wgmma-consumers=2" | FileCheck %s --check-prefix=SELECT
// RUN: cascade-opt %s --cascade-select-kernel-config=chip=sm_90a | FileCheck %s --check-prefix=JOINT
// RUN: cascade-opt %s --cascade-select-kernel-config="chip=sm_90a wgmma-split-kv-barriers=true wgmma-consumers=2" --convert-cascade-to-gpu | FileCheck %s

// wgmma-split-kv-barriers: the wgmma kernels keep K and V under barrier
// rings of their own (kv_barriers = split, a kernel name of its own; off by
// default; two consumers here, which the RUN lines pin). The producer
// issues K one tile ahead of V, each part its own cp.async group, and
// publishes the part issued before once only the newest group is in flight
// (cp.async.wait_group 1); the consumers release K_i
// right after the wgmma wait that covers S_i = Q K_i^T, and V_{i-1} after
// the one that covers P_{i-1} V_{i-1}. RoPE rotates the K tiles only.

// SELECT-LABEL: func.func @prefill_causal
// SELECT: #cascade.kernel_config<wgmma, threads = [128, 3, 1], q_tile = 128, kv_tile = 128, stages = 3, kv_barriers = split>
// SELECT-LABEL: func.func @prefill_rope
// SELECT: #cascade.kernel_config<wgmma, threads = [128, 3, 1], q_tile = 128, kv_tile = 64, stages = 4, kv_barriers = split>
// SELECT-LABEL: func.func @decode
// SELECT: #cascade.kernel_config<rows,
// SELECT-NOT: kv_barriers
// JOINT-LABEL: func.func @prefill_causal
// JOINT: #cascade.kernel_config<wgmma, threads = [128, 4, 1], q_tile = 192, kv_tile = 64, stages = 4>
// JOINT-NOT: kv_barriers

// CHECK-LABEL: gpu.func @cascade_prefill_causal_wgmma_f16_f16_d128_g4_h8_p16_nhd_pool_w3x1_q128_kv128_s3_kvsplit(
// Four rings of 4 stages: full and empty of K, then of V.
// CHECK: %[[FULLK:.*]] = nvgpu.mbarrier.create -> <memorySpace = #gpu.address_space<workgroup>, num_barriers = 3>
// CHECK: %[[EMPTYK:.*]] = nvgpu.mbarrier.create
// CHECK: %[[FULLV:.*]] = nvgpu.mbarrier.create
// CHECK: %[[EMPTYV:.*]] = nvgpu.mbarrier.create
// CHECK-NOT: nvgpu.mbarrier.create
// The producer's 128 threads publish, the consumers' 256 release.
// CHECK: nvgpu.mbarrier.init %[[FULLK]][%{{.*}}], %c128
// CHECK: nvgpu.mbarrier.init %[[EMPTYK]][%{{.*}}], %c256
// CHECK: nvgpu.mbarrier.init %[[FULLV]][%{{.*}}], %c128
// CHECK: nvgpu.mbarrier.init %[[EMPTYV]][%{{.*}}], %c256

// The producer. Prologue: K_0, published once landed.
// CHECK: nvvm.setmaxregister decrease 40
// CHECK: nvgpu.device_async_copy
// CHECK: nvvm.cp.async.commit.group
// CHECK-NEXT: nvvm.cp.async.wait.group 0
// CHECK: nvvm.fence.proxy
// CHECK-NEXT: nvgpu.mbarrier.arrive %[[FULLK]]
// Tiles j = 1 .. n-1: K_j (into a stage K_{j-stages} released), then
// V_{j-2} published; V_{j-1} (into a stage of the V ring), then K_j published.
// CHECK: scf.for
// CHECK: nvgpu.mbarrier.try_wait.parity %[[EMPTYK]]
// CHECK: nvvm.cp.async.commit.group
// CHECK-NEXT: nvvm.cp.async.wait.group 1
// CHECK: nvgpu.mbarrier.arrive %[[FULLV]]
// CHECK: nvgpu.mbarrier.try_wait.parity %[[EMPTYV]]
// CHECK: nvvm.cp.async.commit.group
// CHECK-NEXT: nvvm.cp.async.wait.group 1
// CHECK: nvvm.fence.proxy
// CHECK-NEXT: nvgpu.mbarrier.arrive %[[FULLK]]
// Tail: V_{n-1}, then V_{n-2} and V_{n-1} published.
// CHECK: nvgpu.mbarrier.try_wait.parity %[[EMPTYV]]
// CHECK: nvvm.cp.async.commit.group
// CHECK-NEXT: nvvm.cp.async.wait.group 1
// CHECK: nvgpu.mbarrier.arrive %[[FULLV]]
// CHECK: nvvm.cp.async.wait.group 0
// CHECK: nvgpu.mbarrier.arrive %[[FULLV]]

// The consumers. Tile 0: K_0 released as soon as S_0 completed.
// CHECK: nvvm.setmaxregister increase 232
// CHECK: nvgpu.mbarrier.try_wait.parity %[[FULLK]]
// CHECK: nvvm.wgmma.commit.group.sync.aligned
// CHECK: nvvm.wgmma.wait.group.sync.aligned 0
// CHECK-NEXT: nvgpu.mbarrier.arrive %[[EMPTYK]]
// Tiles 1 .. n-1: wait for K_i and V_{i-1}; issue S_i and P_{i-1} V_{i-1};
// release K_i once the older group (S_i) completed, V_{i-1} once both did.
// CHECK: scf.for
// CHECK: nvgpu.mbarrier.try_wait.parity %[[FULLK]]
// CHECK: nvgpu.mbarrier.try_wait.parity %[[FULLV]]
// CHECK: nvvm.wgmma.commit.group.sync.aligned
// CHECK: nvvm.wgmma.commit.group.sync.aligned
// CHECK: nvvm.wgmma.wait.group.sync.aligned 1
// CHECK-NEXT: nvgpu.mbarrier.arrive %[[EMPTYK]]
// CHECK: nvvm.wgmma.wait.group.sync.aligned 0
// CHECK-NOT: nvgpu.mbarrier.arrive %[[EMPTYK]]
// CHECK: nvgpu.mbarrier.arrive %[[EMPTYV]]
// CHECK: scf.yield
// The last tile's P V: wait for V_{n-1}, release it.
// CHECK: nvgpu.mbarrier.try_wait.parity %[[FULLV]]
// CHECK: nvvm.wgmma.wait.group.sync.aligned 0
// CHECK-NOT: nvgpu.mbarrier.arrive %[[EMPTYK]]
// CHECK: nvgpu.mbarrier.arrive %[[EMPTYV]]
func.func @prefill_causal(%q: memref<?x32x128xf16>, %cache: memref<?x2x16x8x128xf16>, %qo: memref<?xi32>,
                          %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>,
                          %o: memref<?x32x128xf16>, %lse: memref<?x32xf32>) {
  cascade.paged_attention q(%q : memref<?x32x128xf16>) kv(%cache : memref<?x2x16x8x128xf16>)
      qo_indptr(%qo : memref<?xi32>) kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>)
      kv_last_page_len(%last : memref<?xi32>) outs(%o, %lse : memref<?x32x128xf16>, memref<?x32xf32>)
      {page_size = 16 : i64, causal}
  return
}

// RoPE on K: the producer rotates each K tile after its copies landed (a
// producer barrier, 1, then the rotation) and before publishing it; V tiles
// are published as they landed. Its producer keeps 72 registers a thread and
// the consumers grow to 216: 128 x 72 + 256 x 216 fills the 384 x 168 the block
// was launched with, and no more (more would block setmaxnreg.inc forever).
// CHECK-LABEL: gpu.func @cascade_prefill_causal_wgmma_f16_f16_d128_g4_h8_p16_nhd_pool_rope3f800000x461c4000_w3x1_q128_kv64_s4_kvsplit(
// CHECK: %[[RFULLK:.*]] = nvgpu.mbarrier.create -> <memorySpace = #gpu.address_space<workgroup>, num_barriers = 4>
// CHECK: %[[REMPTYK:.*]] = nvgpu.mbarrier.create
// CHECK: %[[RFULLV:.*]] = nvgpu.mbarrier.create
// CHECK: nvvm.setmaxregister decrease 72
// CHECK: nvvm.cp.async.wait.group 0
// CHECK: nvvm.barrier id = %c1_i32{{(_[0-9]+)?}} number_of_threads = %c128_i32{{(_[0-9]+)?$}}
// CHECK: nvgpu.mbarrier.arrive %[[RFULLK]]
// CHECK: scf.for
// CHECK: nvvm.cp.async.wait.group 1
// CHECK-NOT: nvvm.barrier id = %c1_i32
// CHECK: nvgpu.mbarrier.arrive %[[RFULLV]]
// CHECK: nvvm.cp.async.wait.group 1
// CHECK: nvvm.barrier id = %c1_i32{{(_[0-9]+)?}} number_of_threads = %c128_i32{{(_[0-9]+)?$}}
// CHECK: nvgpu.mbarrier.arrive %[[RFULLK]]
// CHECK: nvvm.setmaxregister increase 216
func.func @prefill_rope(%q: memref<?x32x128xf16>, %cache: memref<?x2x16x8x128xf16>, %qo: memref<?xi32>,
                        %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>,
                        %o: memref<?x32x128xf16>, %lse: memref<?x32xf32>) {
  cascade.paged_attention q(%q : memref<?x32x128xf16>) kv(%cache : memref<?x2x16x8x128xf16>)
      qo_indptr(%qo : memref<?xi32>) kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>)
      kv_last_page_len(%last : memref<?xi32>) outs(%o, %lse : memref<?x32x128xf16>, memref<?x32xf32>)
      {page_size = 16 : i64, causal, pos_encoding = #cascade.pos_encoding<rope_llama>}
  return
}

// Other families keep their configuration.
func.func @decode(%q: memref<?x32x128xf16>, %cache: memref<?x2x16x8x128xf16>,
                  %kvp: memref<?xi32>, %kvi: memref<?xi32>, %last: memref<?xi32>,
                  %o: memref<?x32x128xf16>, %lse: memref<?x32xf32>) {
  cascade.paged_attention q(%q : memref<?x32x128xf16>) kv(%cache : memref<?x2x16x8x128xf16>)
      kv_indptr(%kvp : memref<?xi32>) kv_indices(%kvi : memref<?xi32>)
      kv_last_page_len(%last : memref<?xi32>) outs(%o, %lse : memref<?x32x128xf16>, memref<?x32xf32>)
      {page_size = 16 : i64}
  return
}
