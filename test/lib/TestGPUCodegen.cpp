//===- TestGPUCodegen.cpp - Kernels that exercise one building block ------===//
//
// `test-cascade-gpu-codegen{block=NAME}` adds to the module a gpu.module
// @test_blocks holding one small kernel that uses the mma.sync building
// block NAME (GPUCodegen/MmaSync.h) the way the attention kernels do, on
// global buffers, so that each block has a lit test of its IR and of the PTX
// it lowers to:
//
//   smem-tile     a 64x128 f16 tile copied global -> shared with cp.async
//                 (swizzled layout) and read back at its logical positions
//   padded-tile   a 20x96 tile (padded rows, an uneven last copy pass)
//   mma-f16       C[16x16] = A[16x16] B^T over a tile in shared memory:
//                 ldmatrix A, ldmatrix B from [n][k], two mma.sync
//   mma-bf16      the same on bf16 (nvvm.mma.sync on packed registers)
//   mma-trans     O[16x16] = P[16x16] V with V stored [k][n] (ldmatrix
//                 .trans) and P made of two accumulators in registers
//   row-reduce    per-row max and sum of a 16x16 accumulator tile across the
//                 quad of lanes sharing each row, and row scaling
//   dynamic-smem  the kernel's dynamic shared memory (one .extern .shared
//                 buffer) viewed as typed tiles
//
//===----------------------------------------------------------------------===//

#include "cascade/Conversion/GPUCodegen/MmaSync.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

#include "TestKernel.h"

using namespace mlir;
using namespace mlir::cascade;

namespace {

struct TestGPUCodegenPass
    : PassWrapper<TestGPUCodegenPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(TestGPUCodegenPass)

  TestGPUCodegenPass() = default;
  TestGPUCodegenPass(const TestGPUCodegenPass &other) : PassWrapper(other) {}

  StringRef getArgument() const final { return "test-cascade-gpu-codegen"; }
  StringRef getDescription() const final {
    return "Add a kernel exercising one GPU codegen building block";
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

using test::makeTestKernelOfBuffers;

/// Copies a rows x cols f16 tile into shared memory and writes it back.
void tileRoundTrip(ModuleOp module, StringRef name, int64_t rows,
                   int64_t cols) {
  OpBuilder b(module.getContext());
  Type f16 = b.getF16Type();
  makeTestKernelOfBuffers(
      module, name, {f16, f16}, {128, 1, 1},
      [&](KernelBuilder &k, gpu::GPUModuleOp gm, ValueRange args) {
        SmemTileLayout layout = SmemTileLayout::get(rows, cols);
        Value smem = dynamicSharedMemory(k, gm, f16, 0, layout.numElements());
        Value tid = k.threadId(gpu::Dimension::x);
        TileCopyPlan plan = distributeTileCopy(k, rows, cols / 8, 128, tid);
        SmallVector<Value> offs, valid;
        for (Value r : plan.rows) {
          offs.push_back(k.mul(r, k.idx(cols)));
          valid.push_back(arith::ConstantIntOp::create(k.b, k.loc, 1, 1));
        }
        Value group =
            commitGroup(k, issueTileCopy(k, smem, k.idx(0), layout, plan,
                                         args[0], offs, valid, cols / 8));
        waitGroups(k, group, 0);
        gpu::BarrierOp::create(k.b, k.loc);
        auto vt = VectorType::get({8}, f16);
        for (size_t p = 0; p < plan.rows.size(); ++p) {
          Value v = vector::LoadOp::create(
              k.b, k.loc, vt, smem,
              ValueRange{layout.chunkOffset(k, plan.rows[p], plan.chunks[p])});
          Value dst = k.add(offs[p], k.mul(plan.chunks[p], k.idx(8)));
          vector::StoreOp::create(k.b, k.loc, v, args[1], ValueRange{dst});
        }
      });
}

/// C[16x16] = A[16x16] B^T: A and B (stored [n][k]) staged in shared memory,
/// C stored through the accumulator layout.
void mmaGemm(ModuleOp module, StringRef name, Type t) {
  OpBuilder b(module.getContext());
  makeTestKernelOfBuffers(
      module, name, {t, t, b.getF32Type()}, {32, 1, 1},
      [&](KernelBuilder &k, gpu::GPUModuleOp gm, ValueRange args) {
        SmemTileLayout layout = SmemTileLayout::get(16, 64);
        Value smem = dynamicSharedMemory(k, gm, t, 0, 2 * layout.numElements());
        Value lane = k.threadId(gpu::Dimension::x);
        TileCopyPlan plan = distributeTileCopy(k, 16, 8, 32, lane);
        SmallVector<Value> offs, valid;
        for (Value r : plan.rows) {
          offs.push_back(k.mul(r, k.idx(64)));
          valid.push_back(arith::ConstantIntOp::create(k.b, k.loc, 1, 1));
        }
        SmallVector<Value> tokens = issueTileCopy(
            k, smem, k.idx(0), layout, plan, args[0], offs, valid, 8);
        llvm::append_range(
            tokens, issueTileCopy(k, smem, k.idx(layout.numElements()), layout,
                                  plan, args[1], offs, valid, 8));
        waitGroups(k, commitGroup(k, tokens), 0);
        gpu::BarrierOp::create(k.b, k.loc);
        MmaBuilder mma(k, t, lane);
        Value acc0 = mma.zeroAccumulator(), acc1 = mma.zeroAccumulator();
        for (int64_t kk = 0; kk < 4; ++kk) {
          Value a = mma.loadA(smem, k.idx(0), layout, k.idx(0), kk * 16);
          auto [b0, b1] = mma.loadBFromNK(smem, k.idx(layout.numElements()),
                                          layout, k.idx(0), kk * 16);
          acc0 = mma.mma(a, b0, acc0);
          acc1 = mma.mma(a, b1, acc1);
        }
        // Element (pair, half) of n-tile j sits at row lane/4 + 8 pair,
        // column 8 j + 2 (lane % 4) + half (mma::Accumulator).
        SmallVector<Value> accs = {acc0, acc1};
        for (auto [j, acc] : llvm::enumerate(accs))
          for (int64_t pair = 0; pair < 2; ++pair)
            for (int64_t half = 0; half < 2; ++half) {
              Value row = k.add(k.div(lane, k.idx(4)), k.idx(8 * pair));
              Value col = k.add(k.idx(8 * int64_t(j) + half),
                                k.mul(k.rem(lane, k.idx(4)), k.idx(2)));
              k.storeScalar(accumulatorElement(k, acc, pair, half), args[2],
                            k.add(k.mul(row, k.idx(16)), col));
            }
      });
}

/// O[16x16] = P[16x16] V: P = the two accumulators of a Q K^T-shaped
/// product turned into an A operand in registers, V stored [k][n].
void mmaTrans(ModuleOp module, StringRef name) {
  OpBuilder b(module.getContext());
  Type f16 = b.getF16Type();
  makeTestKernelOfBuffers(
      module, name, {b.getF32Type(), f16, b.getF32Type()}, {32, 1, 1},
      [&](KernelBuilder &k, gpu::GPUModuleOp gm, ValueRange args) {
        SmemTileLayout layout = SmemTileLayout::get(16, 64);
        Value smem = dynamicSharedMemory(k, gm, f16, 0, layout.numElements());
        Value lane = k.threadId(gpu::Dimension::x);
        TileCopyPlan plan = distributeTileCopy(k, 16, 8, 32, lane);
        SmallVector<Value> offs, valid;
        for (Value r : plan.rows) {
          offs.push_back(k.mul(r, k.idx(64)));
          valid.push_back(arith::ConstantIntOp::create(k.b, k.loc, 1, 1));
        }
        waitGroups(k,
                   commitGroup(k, issueTileCopy(k, smem, k.idx(0), layout, plan,
                                                args[1], offs, valid, 8)),
                   0);
        gpu::BarrierOp::create(k.b, k.loc);
        MmaBuilder mma(k, f16, lane);
        // P's accumulators come from global memory (f32) in the accumulator
        // layout.
        SmallVector<Value> p;
        for (int64_t j = 0; j < 2; ++j)
          p.push_back(mapAccumulator(
              k, mma.zeroAccumulator(), [&](Value, int64_t pair, int64_t half) {
                Value row = k.add(k.div(lane, k.idx(4)), k.idx(8 * pair));
                Value col = k.add(k.idx(8 * j + half),
                                  k.mul(k.rem(lane, k.idx(4)), k.idx(2)));
                return k.loadScalar(args[0], k.add(k.mul(row, k.idx(16)), col));
              }));
        Value a = mma.accumulatorsToA(p[0], p[1]);
        auto [b0, b1] = mma.loadBFromKN(smem, k.idx(0), layout, k.idx(0), 0);
        Value o0 = mma.mma(a, b0, mma.zeroAccumulator());
        Value o1 = mma.mma(a, b1, mma.zeroAccumulator());
        SmallVector<Value> outs = {o0, o1};
        for (auto [j, acc] : llvm::enumerate(outs))
          for (int64_t pair = 0; pair < 2; ++pair)
            for (int64_t half = 0; half < 2; ++half) {
              Value row = k.add(k.div(lane, k.idx(4)), k.idx(8 * pair));
              Value col = k.add(k.idx(8 * int64_t(j) + half),
                                k.mul(k.rem(lane, k.idx(4)), k.idx(2)));
              k.storeScalar(accumulatorElement(k, acc, pair, half), args[2],
                            k.add(k.mul(row, k.idx(16)), col));
            }
      });
}

/// Per-row max and sum of a 16x16 accumulator tile, and the tile scaled by
/// 1 / row sum.
void rowReduceKernel(ModuleOp module, StringRef name) {
  OpBuilder b(module.getContext());
  Type f32 = b.getF32Type();
  makeTestKernelOfBuffers(
      module, name, {f32, f32, f32}, {32, 1, 1},
      [&](KernelBuilder &k, gpu::GPUModuleOp, ValueRange args) {
        Value lane = k.threadId(gpu::Dimension::x);
        auto at = [&](int64_t j, int64_t pair, int64_t half) {
          Value row = k.add(k.div(lane, k.idx(4)), k.idx(8 * pair));
          Value col = k.add(k.idx(8 * j + half),
                            k.mul(k.rem(lane, k.idx(4)), k.idx(2)));
          return k.add(k.mul(row, k.idx(16)), col);
        };
        MmaBuilder mma(k, b.getF16Type(), lane);
        SmallVector<Value> frags;
        for (int64_t j = 0; j < 2; ++j)
          frags.push_back(mapAccumulator(
              k, mma.zeroAccumulator(), [&](Value, int64_t pair, int64_t half) {
                return k.loadScalar(args[0], at(j, pair, half));
              }));
        RowPair mx = rowReduce(k, frags, /*max=*/true);
        RowPair sum = rowReduce(k, frags, /*max=*/false);
        for (int64_t pair = 0; pair < 2; ++pair) {
          Value row = k.add(k.div(lane, k.idx(4)), k.idx(8 * pair));
          k.storeScalar(mx[pair], args[1], k.mul(row, k.idx(2)));
          k.storeScalar(sum[pair], args[1],
                        k.add(k.mul(row, k.idx(2)), k.idx(1)));
        }
        RowPair inv = {k.fdiv(k.f32(1.0), sum[0]), k.fdiv(k.f32(1.0), sum[1])};
        for (int64_t j = 0; j < 2; ++j) {
          Value scaled = scaleRows(k, frags[j], inv);
          for (int64_t pair = 0; pair < 2; ++pair)
            for (int64_t half = 0; half < 2; ++half)
              k.storeScalar(accumulatorElement(k, scaled, pair, half), args[2],
                            at(j, pair, half));
        }
      });
}

void TestGPUCodegenPass::runOnOperation() {
  ModuleOp module = getOperation();
  OpBuilder b(module.getContext());
  if (block == "smem-tile" || block == "dynamic-smem")
    return tileRoundTrip(module, "tile_round_trip", 64, 128);
  if (block == "padded-tile")
    return tileRoundTrip(module, "padded_tile_round_trip", 20, 96);
  if (block == "mma-f16")
    return mmaGemm(module, "mma_f16", b.getF16Type());
  if (block == "mma-bf16")
    return mmaGemm(module, "mma_bf16", b.getBF16Type());
  if (block == "mma-trans")
    return mmaTrans(module, "mma_trans");
  if (block == "row-reduce")
    return rowReduceKernel(module, "row_reduce");
  module.emitError("unknown building block '") << block << "'";
  signalPassFailure();
}

} // namespace

namespace mlir::cascade {
void registerTestGPUCodegenPass() { PassRegistration<TestGPUCodegenPass>(); }
} // namespace mlir::cascade
