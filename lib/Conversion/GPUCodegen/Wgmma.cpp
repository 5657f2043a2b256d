//===- Wgmma.cpp - Building blocks of Hopper (sm_90a) kernels -------------===//

#include "cascade/Conversion/GPUCodegen/Wgmma.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "llvm/Support/ErrorHandling.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace mlir::cascade;

//===----------------------------------------------------------------------===//
// wgmma
//===----------------------------------------------------------------------===//

Value cascade::sharedAddress(KernelBuilder &k, Value smem,
                             Value elementOffset) {
  auto type = cast<MemRefType>(smem.getType());
  int64_t elementBytes = type.getElementTypeBitWidth() / 8;
  Value base = memref::ExtractAlignedPointerAsIndexOp::create(k.b, k.loc, smem);
  Value addr = k.add(base, k.mul(elementOffset, k.idx(elementBytes)));
  return arith::IndexCastUIOp::create(k.b, k.loc, k.b.getI64Type(), addr);
}

Value cascade::wgmmaDescriptor(KernelBuilder &k, Value address,
                               int64_t leadingByteOffset,
                               int64_t strideByteOffset,
                               wgmma::Swizzle swizzle) {
  std::optional<uint64_t> fixed = wgmma::encodeDescriptor(
      {0, static_cast<uint64_t>(leadingByteOffset),
       static_cast<uint64_t>(strideByteOffset), 0, swizzle});
  if (leadingByteOffset < 0 || strideByteOffset < 0 || !fixed)
    llvm::report_fatal_error("wgmma descriptor: byte offsets must be "
                             "multiples of 16 below 2^18");
  // Start address field: bits 4-17 of the shared address, at bits 0-13.
  Value field = arith::ShRUIOp::create(
      k.b, k.loc,
      arith::AndIOp::create(k.b, k.loc, address,
                            k.i64(int64_t(wgmma::kMaxFieldBytes - 1))),
      k.i64(4));
  return arith::OrIOp::create(k.b, k.loc, field,
                              k.i64(static_cast<int64_t>(*fixed)));
}

Type cascade::wgmmaAccumulatorType(MLIRContext *ctx, int64_t n) {
  if (!wgmma::Accumulator::validN(n))
    llvm::report_fatal_error("wgmma: n must be a multiple of 8 in [8, 256]");
  SmallVector<Type> fields(wgmma::Accumulator::numRegisters(n),
                           Float32Type::get(ctx));
  return LLVM::LLVMStructType::getLiteral(ctx, fields);
}

Value cascade::wgmmaZeroAccumulator(KernelBuilder &k, int64_t n) {
  return LLVM::ZeroOp::create(k.b, k.loc,
                              wgmmaAccumulatorType(k.b.getContext(), n));
}

Value cascade::wgmmaAccumulatorElement(KernelBuilder &k, Value acc,
                                       int64_t reg) {
  return LLVM::ExtractValueOp::create(k.b, k.loc, acc, reg);
}

void cascade::fenceProxyAsyncShared(KernelBuilder &k) {
  NVVM::FenceProxyOp::create(
      k.b, k.loc, NVVM::ProxyKind::async_shared,
      NVVM::SharedSpaceAttr::get(k.b.getContext(),
                                 NVVM::SharedSpace::shared_cta));
}

void cascade::wgmmaFence(KernelBuilder &k) {
  NVVM::WgmmaFenceAlignedOp::create(k.b, k.loc);
}

static NVVM::MMALayout layoutOf(WgmmaMajor major, bool isA) {
  // nvvm.wgmma.mma_async's layouts: A row / B col are K-major (no
  // transpose), A col / B row are M- / N-major (imm-trans 1).
  if (isA)
    return major == WgmmaMajor::K ? NVVM::MMALayout::row : NVVM::MMALayout::col;
  return major == WgmmaMajor::K ? NVVM::MMALayout::col : NVVM::MMALayout::row;
}

Value cascade::wgmmaMmaAsync(KernelBuilder &k, Value acc, Value descA,
                             Value descB, int64_t n, Type elementType,
                             bool accumulate, WgmmaMajor majorA,
                             WgmmaMajor majorB) {
  NVVM::WGMMATypes t;
  if (elementType.isF16())
    t = NVVM::WGMMATypes::f16;
  else if (elementType.isBF16())
    t = NVVM::WGMMATypes::bf16;
  else if (isa<Float8E4M3FNType>(elementType))
    t = NVVM::WGMMATypes::e4m3;
  else if (isa<Float8E5M2Type>(elementType))
    t = NVVM::WGMMATypes::e5m2;
  else
    llvm::report_fatal_error("wgmma: operands must be f16, bf16 or fp8");
  if (wgmmaKStep(elementType) == 32 &&
      (majorA != WgmmaMajor::K || majorB != WgmmaMajor::K))
    llvm::report_fatal_error("wgmma: fp8 operands are K-major only");
  MLIRContext *ctx = k.b.getContext();
  return NVVM::WgmmaMmaAsyncOp::create(
      k.b, k.loc, wgmmaAccumulatorType(ctx, n), acc, descA, descB,
      NVVM::MMAShapeAttr::get(ctx, 64, n, wgmmaKStep(elementType)), t, t,
      NVVM::WGMMATypes::f32,
      accumulate ? NVVM::WGMMAScaleOut::one : NVVM::WGMMAScaleOut::zero,
      NVVM::WGMMAScaleIn::one, NVVM::WGMMAScaleIn::one,
      layoutOf(majorA, /*isA=*/true), layoutOf(majorB, /*isA=*/false),
      /*satfinite=*/NVVM::MMAIntOverflowAttr());
}

/// Inline PTX `asmString` that reads and rewrites every register of the f32
/// accumulator `acc` in place: its registers are outputs $0 .. $(n-1) ("=f")
/// tied to the old values, after the other inputs `inputs` ($n ..., with
/// `inputConstraints`).
static Value accumulatorInlineAsm(KernelBuilder &k, Value acc,
                                  StringRef asmString, ValueRange inputs,
                                  StringRef inputConstraints) {
  int64_t regs = cast<LLVM::LLVMStructType>(acc.getType()).getBody().size();
  std::string cons;
  for (int64_t i = 0; i < regs; ++i)
    cons += "=f,";
  cons += inputConstraints.str();
  for (int64_t i = 0; i < regs; ++i)
    cons += (inputConstraints.empty() && i == 0 ? "" : ",") + std::to_string(i);
  SmallVector<Value> operands(inputs.begin(), inputs.end());
  for (int64_t i = 0; i < regs; ++i)
    operands.push_back(wgmmaAccumulatorElement(k, acc, i));
  return LLVM::InlineAsmOp::create(
             k.b, k.loc, acc.getType(), operands, asmString, cons,
             /*has_side_effects=*/true, /*is_align_stack=*/false,
             LLVM::tailcallkind::TailCallKind::None,
             LLVM::AsmDialectAttr::get(k.b.getContext(),
                                       LLVM::AsmDialect::AD_ATT),
             ArrayAttr())
      .getResult(0);
}

Value cascade::wgmmaMmaAsyncRegA(KernelBuilder &k, Value acc, ArrayRef<Value> a,
                                 Value descB, int64_t n, Type elementType,
                                 WgmmaMajor majorB) {
  assert(a.size() == 4 && wgmma::Accumulator::validN(n) &&
         "m64nNk16 / m64nNk32 take four A registers and n in 8..256");
  int64_t regs = wgmma::Accumulator::numRegisters(n);
  bool fp8 = wgmmaKStep(elementType) == 32;
  if (fp8 && majorB != WgmmaMajor::K)
    llvm::report_fatal_error("wgmma: an fp8 B operand is K-major only");
  StringRef ty = elementType.isBF16()                 ? "bf16"
                 : isa<Float8E4M3FNType>(elementType) ? "e4m3"
                 : isa<Float8E5M2Type>(elementType)   ? "e5m2"
                                                      : "f16";
  std::string str;
  llvm::raw_string_ostream os(str);
  os << "{\n.reg .pred p;\nsetp.ne.b32 p, 1, "
        "0;\nwgmma.mma_async.sync.aligned.m64n"
     << n << "k" << wgmmaKStep(elementType) << ".f32." << ty << "." << ty
     << " {";
  for (int64_t i = 0; i < regs; ++i)
    os << (i ? ", " : "") << "$" << i;
  os << "}, {$" << regs << ", $" << regs + 1 << ", $" << regs + 2 << ", $"
     << regs + 3 << "}, $" << regs + 4 << ", p, 1, 1";
  // fp8 has no transpose immediate (its operands are K-major).
  if (!fp8)
    os << ", " << (majorB == WgmmaMajor::MN ? 1 : 0);
  os << ";\n}";
  // Inputs: A ("r"), the descriptor ("l").
  SmallVector<Value> inputs(a.begin(), a.end());
  inputs.push_back(descB);
  return accumulatorInlineAsm(k, acc, str, inputs, "r,r,r,r,l");
}

Value cascade::wgmmaFenceOperand(KernelBuilder &k, Value acc) {
  return accumulatorInlineAsm(k, acc, "", ValueRange(), "");
}

void cascade::wgmmaKeepRegisters(KernelBuilder &k, ValueRange regs) {
  if (regs.empty())
    return;
  std::string cons = "r";
  for (size_t i = 1; i < regs.size(); ++i)
    cons += ",r";
  LLVM::InlineAsmOp::create(
      k.b, k.loc, TypeRange(), regs, "", cons, /*has_side_effects=*/true,
      /*is_align_stack=*/false, LLVM::tailcallkind::TailCallKind::None,
      LLVM::AsmDialectAttr::get(k.b.getContext(), LLVM::AsmDialect::AD_ATT),
      ArrayAttr());
}

SmallVector<Value> cascade::wgmmaARegisters(KernelBuilder &k, Value fragA) {
  assert(cast<VectorType>(fragA.getType()).getShape() ==
             ArrayRef<int64_t>({4, 2}) &&
         "A fragments are vector<4x2xT>");
  auto wordTy = VectorType::get({1}, k.b.getI32Type());
  SmallVector<Value> regs;
  for (int64_t i = 0; i < 4; ++i) {
    Value pair =
        vector::ExtractOp::create(k.b, k.loc, fragA, ArrayRef<int64_t>{i});
    Value word = vector::BitCastOp::create(k.b, k.loc, wordTy, pair);
    regs.push_back(
        vector::ExtractOp::create(k.b, k.loc, word, ArrayRef<int64_t>{0}));
  }
  return regs;
}

int64_t cascade::wgmmaKStep(Type elementType) {
  return isa<Float8E4M3FNType, Float8E5M2Type>(elementType) ? 32 : 16;
}

SmallVector<Value> cascade::wgmmaFp8ARegisters(KernelBuilder &k, Value lo,
                                               Value hi, Type fp8Type) {
  // Register r of the k32 fragment holds row g (r even) or g + 8 (r odd) at
  // four consecutive k: the f16 pairs of registers r % 2 and r % 2 + 2 of
  // the k16 fragment `lo` (r < 2) or `hi` (r >= 2), narrowed (round to
  // nearest, saturating) and packed low pair first.
  StringRef ty = isa<Float8E5M2Type>(fp8Type) ? "e5m2" : "e4m3";
  std::string str;
  llvm::raw_string_ostream os(str);
  os << "{\n.reg .b16 l, h;\ncvt.rn.satfinite." << ty
     << "x2.f16x2 l, $1;\ncvt.rn.satfinite." << ty
     << "x2.f16x2 h, $2;\nmov.b32 $0, {l, h};\n}";
  Type i32 = k.b.getI32Type();
  SmallVector<Value> out;
  for (Value frag : {lo, hi}) {
    SmallVector<Value> r = wgmmaARegisters(k, frag);
    for (int64_t row = 0; row < 2; ++row)
      out.push_back(LLVM::InlineAsmOp::create(
                        k.b, k.loc, i32, ValueRange{r[row], r[row + 2]}, str,
                        "=r,r,r", /*has_side_effects=*/false,
                        /*is_align_stack=*/false,
                        LLVM::tailcallkind::TailCallKind::None,
                        LLVM::AsmDialectAttr::get(k.b.getContext(),
                                                  LLVM::AsmDialect::AD_ATT),
                        ArrayAttr())
                        .getResult(0));
  }
  return out;
}

SmallVector<Value> cascade::wgmmaAccumulatorToFragments(KernelBuilder &k,
                                                        Value acc, int64_t n) {
  auto fragTy = VectorType::get({2, 2}, k.b.getF32Type());
  SmallVector<Value> frags;
  for (int64_t j = 0; j < n / 8; ++j) {
    SmallVector<Value> e;
    for (int64_t r = 0; r < 4; ++r)
      e.push_back(wgmmaAccumulatorElement(k, acc, 4 * j + r));
    frags.push_back(vector::FromElementsOp::create(k.b, k.loc, fragTy, e));
  }
  return frags;
}

Value cascade::wgmmaFragmentsToAccumulator(KernelBuilder &k,
                                           ArrayRef<Value> frags) {
  int64_t n = 8 * static_cast<int64_t>(frags.size());
  Value acc = LLVM::UndefOp::create(k.b, k.loc,
                                    wgmmaAccumulatorType(k.b.getContext(), n));
  for (auto [j, f] : llvm::enumerate(frags))
    for (int64_t r = 0; r < 4; ++r) {
      Value e = vector::ExtractOp::create(k.b, k.loc, f,
                                          ArrayRef<int64_t>{r / 2, r % 2});
      acc = LLVM::InsertValueOp::create(k.b, k.loc, acc, e, int64_t(4 * j + r));
    }
  return acc;
}

void cascade::wgmmaCommitGroup(KernelBuilder &k) {
  NVVM::WgmmaGroupSyncAlignedOp::create(k.b, k.loc);
}

void cascade::wgmmaWaitGroup(KernelBuilder &k, int64_t pending) {
  NVVM::WgmmaWaitGroupSyncOp::create(k.b, k.loc, pending);
}

//===----------------------------------------------------------------------===//
// mbarrier
//===----------------------------------------------------------------------===//

Value cascade::createMbarriers(KernelBuilder &k, int64_t count) {
  MLIRContext *ctx = k.b.getContext();
  auto wg = gpu::AddressSpaceAttr::get(ctx, gpu::AddressSpace::Workgroup);
  auto type = nvgpu::MBarrierGroupType::get(ctx, wg, count);
  return nvgpu::MBarrierCreateOp::create(k.b, k.loc, type);
}

void cascade::mbarrierInit(KernelBuilder &k, Value group, Value id,
                           Value arrivals, Value pred) {
  nvgpu::MBarrierInitOp::create(k.b, k.loc, group, arrivals, id, pred);
}

void cascade::mbarrierArriveExpectTx(KernelBuilder &k, Value group, Value id,
                                     Value txBytes, Value pred) {
  nvgpu::MBarrierArriveExpectTxOp::create(k.b, k.loc, group, txBytes, id, pred);
}

void cascade::mbarrierWait(KernelBuilder &k, Value group, Value id,
                           Value parity) {
  // The suspend-time hint of each try_wait (ns); the op retries until the
  // phase completes.
  static constexpr int64_t kTicks = 10000000;
  nvgpu::MBarrierTryWaitParityOp::create(k.b, k.loc, group, parity,
                                         k.idx(kTicks), id);
}

//===----------------------------------------------------------------------===//
// Register reallocation
//===----------------------------------------------------------------------===//

void cascade::setMaxRegisters(KernelBuilder &k, int64_t count, bool increase) {
  if (count < 24 || count > 256 || count % 8 != 0)
    llvm::report_fatal_error(
        "setmaxnreg: the count must be a multiple of 8 in [24, 256]");
  NVVM::SetMaxRegisterOp::create(k.b, k.loc, static_cast<uint32_t>(count),
                                 increase
                                     ? NVVM::SetMaxRegisterAction::increase
                                     : NVVM::SetMaxRegisterAction::decrease);
}

void cascade::mbarrierArrive(KernelBuilder &k, Value group, Value id) {
  nvgpu::MBarrierArriveOp::create(
      k.b, k.loc, nvgpu::MBarrierTokenType::get(k.b.getContext()), group, id);
}

void cascade::mbarrierArriveOnCopies(KernelBuilder &k, Value group, Value id) {
  // The barrier's shared-memory address (32 bits), as the shared pointer
  // the NVVM op takes.
  Value addr =
      nvgpu::MBarrierGetOp::create(k.b, k.loc, k.b.getI32Type(), group, id);
  auto sharedPtr = LLVM::LLVMPointerType::get(
      k.b.getContext(), static_cast<unsigned>(NVVM::NVVMMemorySpace::Shared));
  Value ptr = LLVM::IntToPtrOp::create(k.b, k.loc, sharedPtr, addr);
  NVVM::CpAsyncMBarrierArriveOp::create(k.b, k.loc, ptr, /*noinc=*/true);
}

void cascade::namedBarrier(KernelBuilder &k, int64_t id, int64_t numThreads) {
  assert(id > 0 && id < 16 && "named barriers 1..15");
  namedBarrier(k, k.i32(id), numThreads);
}

void cascade::namedBarrier(KernelBuilder &k, Value id, int64_t numThreads) {
  assert(numThreads % 32 == 0 && "named barriers of whole warps");
  NVVM::BarrierOp::create(k.b, k.loc, TypeRange(), id, k.i32(numThreads),
                          NVVM::BarrierReductionAttr(), Value());
}

void cascade::namedBarrierArrive(KernelBuilder &k, Value id,
                                 int64_t numThreads) {
  assert(numThreads % 32 == 0 && "named barriers of whole warps");
  NVVM::BarrierArriveOp::create(k.b, k.loc, id, k.i32(numThreads));
}
