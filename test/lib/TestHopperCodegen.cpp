//===- TestHopperCodegen.cpp - Kernels that exercise one Hopper block -----===//
//
// `test-cascade-hopper-codegen{block=NAME}` adds to the module a gpu.module
// @test_blocks holding one small kernel that uses the Hopper building block
// NAME (GPUCodegen/Wgmma.h), so that each block has a lit test of its IR and
// of the sm_90a PTX it lowers to:
//
//   wgmma       one warpgroup: D[64x64] = A[64x64] B^T (f16, B stored
//               [n][k]): both tiles copied to shared memory in the 128-byte
//               swizzle, four m64n64k16 wgmma from descriptors (the first
//               with scale-d 0), commit, wait 0, and D written to global
//               memory through the accumulator fragment layout
//   wgmma-bf16  the same on bf16
//   mbarrier    one mbarrier: init by one thread, arrive.expect_tx, and every
//               thread waiting on phase 0 with try_wait.parity
//   setmaxnreg  two warpgroups: the first gives registers up (40), the
//               second takes them (232), as a producer and a consumer would
//   turns       two warpgroups taking turns on named barriers 3 and 4
//               (ping-pong): the first gives itself the first turn
//               (bar.arrive 3), each waits for its turn (bar.sync 3 + w),
//               writes, and hands the turn on (bar.arrive 3 + (w + 1) % 2)
//   tma         one warpgroup per 64x64 f16 tile of a row-major global
//               tensor behind a tensor map (GPUCodegen/Tma.h): one elected
//               thread prefetches the map, inits the mbarrier and fences
//               the init, arrives with the tile's 8192 bytes expected and
//               issues the TMA load of tile (blockIdx.y, blockIdx.x) in
//               the 128-byte swizzle; every thread waits on the barrier and
//               copies the tile, un-swizzled, to output tile
//               blockIdx.y * gridDim.x + blockIdx.x (row-major 64x64)
//   tma-3d      the same on a 3-D tensor with 1x64x64 boxes, blockIdx.z the
//               outermost coordinate (a page id, say): output tile
//               (blockIdx.z * gridDim.y + blockIdx.y) * gridDim.x +
//               blockIdx.x
//
//===----------------------------------------------------------------------===//

#include "cascade/Conversion/GPUCodegen/MmaSync.h"
#include "cascade/Conversion/GPUCodegen/Tma.h"
#include "cascade/Conversion/GPUCodegen/Wgmma.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

#include "TestKernel.h"

using namespace mlir;
using namespace mlir::cascade;

namespace {

struct TestHopperCodegenPass
    : PassWrapper<TestHopperCodegenPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(TestHopperCodegenPass)

  TestHopperCodegenPass() = default;
  TestHopperCodegenPass(const TestHopperCodegenPass &other)
      : PassWrapper(other) {}

  StringRef getArgument() const final { return "test-cascade-hopper-codegen"; }
  StringRef getDescription() const final {
    return "Add a kernel exercising one Hopper (sm_90a) codegen building block";
  }
  void getDependentDialects(DialectRegistry &registry) const override {
    registry.insert<arith::ArithDialect, gpu::GPUDialect, memref::MemRefDialect,
                    nvgpu::NVGPUDialect, NVVM::NVVMDialect, LLVM::LLVMDialect,
                    scf::SCFDialect, vector::VectorDialect>();
  }

  Option<std::string> block{*this, "block",
                            llvm::cl::desc("The building block to exercise")};

  void runOnOperation() override;
};

using test::flatBuffer;

/// A test kernel of one-dimensional blocks of `blockSize` threads with
/// parameters `types`.
void makeKernelOfTypes(ModuleOp module, StringRef name, ArrayRef<Type> types,
                       int32_t blockSize, test::TestKernelBody body) {
  test::makeTestKernel(module, name, types, {blockSize, 1, 1}, body);
}

/// The same with flat buffers of the given element types.
void makeKernel(ModuleOp module, StringRef name, ArrayRef<Type> elementTypes,
                int32_t blockSize, test::TestKernelBody body) {
  test::makeTestKernelOfBuffers(module, name, elementTypes, {blockSize, 1, 1},
                                body);
}

/// D[64x64] (f32) = A[64x64] B^T on one warpgroup, A and B row-major 64x64
/// tiles (B stored [n][k]) staged in 128B-swizzled shared memory.
void wgmmaGemm(ModuleOp module, StringRef name, Type t) {
  OpBuilder b(module.getContext());
  makeKernel(
      module, name, {t, t, b.getF32Type()}, wgmma::kWarpgroupSize,
      [&](KernelBuilder &k, gpu::GPUModuleOp gm, ValueRange args) {
        constexpr int64_t kTile = 64 * 64;
        // 64 f16 = 128 bytes a row: SmemTileLayout's XOR swizzle is the
        // 128-byte swizzle (wgmma::swizzle128B), and the buffer is
        // 1024-byte aligned as the swizzle atoms need.
        SmemTileLayout layout = SmemTileLayout::get(64, 64);
        Value smem = dynamicSharedMemory(k, gm, t, 0, 2 * kTile);
        Value tid = k.threadId(gpu::Dimension::x);
        auto vt = VectorType::get({8}, t);
        for (int64_t p = 0; p < kTile / 8 / wgmma::kWarpgroupSize; ++p) {
          Value c = k.add(tid, k.idx(p * wgmma::kWarpgroupSize));
          Value row = k.div(c, k.idx(8)), chunk = k.rem(c, k.idx(8));
          Value src = k.add(k.mul(row, k.idx(64)), k.mul(chunk, k.idx(8)));
          Value dst = layout.chunkOffset(k, row, chunk);
          for (int64_t m = 0; m < 2; ++m) {
            Value v = vector::LoadOp::create(k.b, k.loc, vt, args[m],
                                             ValueRange{src});
            vector::StoreOp::create(k.b, k.loc, v, smem,
                                    ValueRange{k.add(dst, k.idx(m * kTile))});
          }
        }
        fenceProxyAsyncShared(k);
        gpu::BarrierOp::create(k.b, k.loc);
        // K-major operands with the 128B swizzle: 8-row groups are 1024
        // bytes apart (SBO), the leading offset is unused (16); the k16
        // step j starts 32 j bytes into the rows.
        Value addrA = sharedAddress(k, smem, k.idx(0));
        Value addrB = sharedAddress(k, smem, k.idx(kTile));
        Value acc = wgmmaZeroAccumulator(k, 64);
        wgmmaFence(k);
        for (int64_t j = 0; j < 4; ++j) {
          Value descA = wgmmaDescriptor(k, k.add(addrA, k.i64(32 * j)), 16,
                                        1024, wgmma::Swizzle::B128);
          Value descB = wgmmaDescriptor(k, k.add(addrB, k.i64(32 * j)), 16,
                                        1024, wgmma::Swizzle::B128);
          acc = wgmmaMmaAsync(k, acc, descA, descB, 64, t,
                              /*accumulate=*/j > 0);
        }
        wgmmaCommitGroup(k);
        wgmmaWaitGroup(k, 0);
        // Register i of thread tid is D[row0 + 8 ((i / 2) % 2)][col0 + 8 (i
        // / 4) + i % 2] (wgmma::Accumulator).
        Value row0 = k.add(k.mul(k.div(tid, k.idx(32)), k.idx(16)),
                           k.div(k.rem(tid, k.idx(32)), k.idx(4)));
        Value col0 = k.mul(k.rem(tid, k.idx(4)), k.idx(2));
        for (int64_t i = 0; i < wgmma::Accumulator::numRegisters(64); ++i) {
          Value row = k.add(row0, k.idx(8 * ((i / 2) % 2)));
          Value col = k.add(col0, k.idx(8 * (i / 4) + i % 2));
          k.storeScalar(wgmmaAccumulatorElement(k, acc, i), args[2],
                        k.add(k.mul(row, k.idx(64)), col));
        }
      });
}

/// One mbarrier: thread 0 initializes it (one arrival) and arrives with an
/// expected transaction count of 0 bytes (no TMA copy here), every thread
/// waits for phase 0 and then writes its id.
void mbarrierKernel(ModuleOp module, StringRef name) {
  OpBuilder b(module.getContext());
  makeKernel(module, name, {b.getF32Type()}, wgmma::kWarpgroupSize,
             [&](KernelBuilder &k, gpu::GPUModuleOp, ValueRange args) {
               Value tid = k.threadId(gpu::Dimension::x);
               Value leader = k.cmp(arith::CmpIPredicate::eq, tid, k.idx(0));
               Value bars = createMbarriers(k, 1);
               mbarrierInit(k, bars, k.idx(0), k.idx(1), leader);
               gpu::BarrierOp::create(k.b, k.loc);
               mbarrierArriveExpectTx(k, bars, k.idx(0), k.idx(0), leader);
               Value phase0 = arith::ConstantIntOp::create(k.b, k.loc, 0, 1);
               mbarrierWait(k, bars, k.idx(0), phase0);
               k.storeScalar(k.toF32(tid), args[0], tid);
             });
}

/// Two warpgroups: warpgroup 0 shrinks its registers to 40, warpgroup 1
/// grows them to 232.
void setMaxRegistersKernel(ModuleOp module, StringRef name) {
  OpBuilder b(module.getContext());
  makeKernel(module, name, {b.getF32Type()}, 2 * wgmma::kWarpgroupSize,
             [&](KernelBuilder &k, gpu::GPUModuleOp, ValueRange args) {
               // .minnctapersm 1 with .maxntid: the launch bounds that let
               // ptxas know the register count at entry.
               k.b.getInsertionBlock()->getParentOp()->setAttr(
                   "nvvm.minctasm", k.b.getI32IntegerAttr(1));
               Value tid = k.threadId(gpu::Dimension::x);
               Value producer = k.cmp(arith::CmpIPredicate::ult, tid,
                                      k.idx(wgmma::kWarpgroupSize));
               auto ifOp = scf::IfOp::create(k.b, k.loc, producer,
                                             /*withElseRegion=*/true);
               {
                 OpBuilder::InsertionGuard guard(k.b);
                 k.b.setInsertionPointToStart(ifOp.thenBlock());
                 setMaxRegisters(k, 40, /*increase=*/false);
                 k.b.setInsertionPointToStart(ifOp.elseBlock());
                 setMaxRegisters(k, 232, /*increase=*/true);
               }
               k.storeScalar(k.toF32(tid), args[0], tid);
             });
}

void turnsKernel(ModuleOp module, StringRef name) {
  OpBuilder b(module.getContext());
  makeKernel(
      module, name, {b.getF32Type()}, 2 * wgmma::kWarpgroupSize,
      [&](KernelBuilder &k, gpu::GPUModuleOp, ValueRange args) {
        Value tid = k.threadId(gpu::Dimension::x);
        Value wg = k.toI32(k.div(tid, k.idx(wgmma::kWarpgroupSize)));
        Value first = arith::CmpIOp::create(
            k.b, k.loc, arith::CmpIPredicate::eq, wg, k.i32(0));
        auto ifFirst = scf::IfOp::create(k.b, k.loc, first,
                                         /*withElseRegion=*/false);
        {
          OpBuilder::InsertionGuard guard(k.b);
          k.b.setInsertionPointToStart(ifFirst.thenBlock());
          namedBarrierArrive(k, k.i32(3), 2 * wgmma::kWarpgroupSize);
        }
        namedBarrier(k, k.add(wg, k.i32(3)), 2 * wgmma::kWarpgroupSize);
        k.storeScalar(k.toF32(tid), args[0], tid);
        Value next =
            arith::RemUIOp::create(k.b, k.loc, k.add(wg, k.i32(1)), k.i32(2));
        namedBarrierArrive(k, k.add(next, k.i32(3)), 2 * wgmma::kWarpgroupSize);
      });
}

/// One 64x64 f16 tile a block, loaded by TMA (128-byte swizzle) on one
/// mbarrier and copied un-swizzled to the block's output tile; `rank` 3
/// loads 1x64x64 boxes with blockIdx.z as the outer coordinate. Parameters:
/// the device address of the tensor map (!llvm.ptr), the output.
void tmaKernel(ModuleOp module, StringRef name, int64_t rank) {
  MLIRContext *ctx = module.getContext();
  OpBuilder b(ctx);
  Type f16 = b.getF16Type();
  makeKernelOfTypes(
      module, name, {LLVM::LLVMPointerType::get(ctx), flatBuffer(f16)},
      wgmma::kWarpgroupSize,
      [&](KernelBuilder &k, gpu::GPUModuleOp gm, ValueRange args) {
        constexpr int64_t kRows = 64, kCols = 64, kTile = kRows * kCols;
        SmallVector<int64_t> boxShape = {kRows, kCols};
        if (rank == 3)
          boxShape.insert(boxShape.begin(), 1);
        nvgpu::TensorMapDescriptorType type =
            tmaDescriptorType(ctx, boxShape, f16);
        Value desc = tmaDescriptorFromPointer(k, args[0], type);
        Value smem = dynamicSharedMemory(k, gm, f16, 0, kTile);
        Value box = tmaBoxView(k, smem, type);
        Value tid = k.threadId(gpu::Dimension::x);
        // One thread of warp 0, chosen by elect.sync.
        Value warp0 =
            k.cmp(arith::CmpIPredicate::eq, k.div(tid, k.idx(32)), k.idx(0));
        Value elected =
            NVVM::ElectSyncOp::create(k.b, k.loc, k.b.getI1Type(), Value());
        Value leader = arith::AndIOp::create(k.b, k.loc, warp0, elected);
        Value bars = createMbarriers(k, 1);
        auto ifOp = scf::IfOp::create(k.b, k.loc, leader,
                                      /*withElseRegion=*/false);
        {
          OpBuilder::InsertionGuard guard(k.b);
          k.b.setInsertionPointToStart(ifOp.thenBlock());
          tmaPrefetchDescriptor(k, desc);
          mbarrierInit(k, bars, k.idx(0), k.idx(1));
          fenceMbarrierInit(k);
        }
        gpu::BarrierOp::create(k.b, k.loc);
        mbarrierArriveExpectTx(k, bars, k.idx(0), k.idx(tmaBoxBytes(type)),
                               leader);
        // Coordinates innermost first: column 64 blockIdx.x, row 64
        // blockIdx.y (then blockIdx.z for rank 3).
        Value bx = k.blockId(gpu::Dimension::x);
        Value by = k.blockId(gpu::Dimension::y);
        SmallVector<Value> coords = {k.mul(bx, k.idx(kCols)),
                                     k.mul(by, k.idx(kRows))};
        Value tile = by;
        if (rank == 3) {
          Value bz = k.blockId(gpu::Dimension::z);
          coords.push_back(bz);
          Value gy = gpu::GridDimOp::create(k.b, k.loc, gpu::Dimension::y);
          tile = k.add(k.mul(bz, gy), by);
        }
        tmaLoadBox(k, desc, coords, bars, k.idx(0), box, leader);
        Value phase0 = arith::ConstantIntOp::create(k.b, k.loc, 0, 1);
        mbarrierWait(k, bars, k.idx(0), phase0);
        // 16-byte chunk c of row r sits at swizzle128B(r, 16 c).
        Value gx = gpu::GridDimOp::create(k.b, k.loc, gpu::Dimension::x);
        Value outBase = k.mul(k.add(k.mul(tile, gx), bx), k.idx(kTile));
        auto vt = VectorType::get({8}, f16);
        for (int64_t p = 0; p < kTile / 8 / wgmma::kWarpgroupSize; ++p) {
          Value c = k.add(tid, k.idx(p * wgmma::kWarpgroupSize));
          Value row = k.div(c, k.idx(8)), chunk = k.rem(c, k.idx(8));
          Value src = k.div(swizzle128BOffset(k, row, k.mul(chunk, k.idx(16))),
                            k.idx(2));
          Value v =
              vector::LoadOp::create(k.b, k.loc, vt, smem, ValueRange{src});
          Value dst = k.add(
              outBase, k.add(k.mul(row, k.idx(kCols)), k.mul(chunk, k.idx(8))));
          vector::StoreOp::create(k.b, k.loc, v, args[1], ValueRange{dst});
        }
      });
}

void TestHopperCodegenPass::runOnOperation() {
  ModuleOp module = getOperation();
  OpBuilder b(module.getContext());
  if (block == "wgmma")
    return wgmmaGemm(module, "wgmma_f16", b.getF16Type());
  if (block == "wgmma-bf16")
    return wgmmaGemm(module, "wgmma_bf16", b.getBF16Type());
  if (block == "mbarrier")
    return mbarrierKernel(module, "mbarrier");
  if (block == "setmaxnreg")
    return setMaxRegistersKernel(module, "setmaxnreg");
  if (block == "turns")
    return turnsKernel(module, "turns");
  if (block == "tma")
    return tmaKernel(module, "tma", 2);
  if (block == "tma-3d")
    return tmaKernel(module, "tma_3d", 3);
  module.emitError("unknown Hopper building block '") << block << "'";
  signalPassFailure();
}

} // namespace

namespace mlir::cascade {
void registerTestHopperCodegenPass() {
  PassRegistration<TestHopperCodegenPass>();
}
} // namespace mlir::cascade
