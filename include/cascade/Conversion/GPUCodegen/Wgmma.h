//===- Wgmma.h - Building blocks of Hopper (sm_90a) kernels -----*- C++ -*-===//
//
// The pieces a warpgroup kernel on Hopper's tensor cores is assembled from,
// next to the mma.sync pieces of MmaSync.h, each built from upstream ops and
// exercised by its own lit test (test/Conversion/GPUCodegen/hopper-*.mlir):
//
// - wgmma: the shared-memory matrix descriptor of an operand computed in IR
//   (WgmmaLayout.h's encoding: the address field from a shared address, the
//   constant fields folded), nvvm.wgmma.fence.aligned,
//   nvvm.wgmma.mma_async m64nNk16 on f16 / bf16 operands from descriptors
//   with an f32 accumulator struct (scale-d zero or one), commit group and
//   wait group, and the proxy fence between generic shared-memory writes
//   and wgmma's reads. The accumulator is a plain !llvm.struct of n / 2 f32,
//   laid out as wgmma::Accumulator says, so kernels read and rewrite it with
//   llvm.extractvalue / insertvalue.
// - mbarriers (nvgpu.mbarrier.*): a group in shared memory, init,
//   arrive.expect_tx and the try_wait.parity retry loop.
// - nvvm.setmaxregister: per-warpgroup register reallocation of
//   warp-specialized kernels.
//
// Nothing here checks the target: these ops need sm_90a (`nvvm.wgmma.*` is
// rejected for sm_90; setmaxnreg cannot be selected for it).
//
//===----------------------------------------------------------------------===//

#ifndef CASCADE_CONVERSION_GPUCODEGEN_WGMMA_H
#define CASCADE_CONVERSION_GPUCODEGEN_WGMMA_H

#include "cascade/Conversion/GPUCodegen/KernelBuilder.h"
#include "cascade/Conversion/GPUCodegen/WgmmaLayout.h"

namespace mlir {
namespace cascade {

//===----------------------------------------------------------------------===//
// wgmma
//===----------------------------------------------------------------------===//

/// The shared-memory byte address (i64) of element `elementOffset` (index)
/// of a workgroup memref.
Value sharedAddress(KernelBuilder &k, Value smem, Value elementOffset);

/// The matrix descriptor (i64) of an operand starting at shared byte address
/// `address` (i64, 16-byte aligned) with the given byte offsets and swizzle
/// mode. The byte offsets must fit their fields (wgmma::fitsField); an
/// out-of-range value is a generator bug and aborts with a message.
Value wgmmaDescriptor(KernelBuilder &k, Value address,
                      int64_t leadingByteOffset, int64_t strideByteOffset,
                      wgmma::Swizzle swizzle);

/// !llvm.struct of n / 2 f32: the accumulator of a 64 x n wgmma.
Type wgmmaAccumulatorType(MLIRContext *ctx, int64_t n);
/// An all-zero accumulator of a 64 x n wgmma.
Value wgmmaZeroAccumulator(KernelBuilder &k, int64_t n);
/// Register `reg` of an accumulator (f32).
Value wgmmaAccumulatorElement(KernelBuilder &k, Value acc, int64_t reg);

/// fence.proxy.async.shared::cta: makes this thread's earlier shared-memory
/// writes (st.shared, cp.async) visible to the async proxy that wgmma and
/// TMA read through; follow it with a barrier before the wgmma.
void fenceProxyAsyncShared(KernelBuilder &k);

/// wgmma.fence: orders earlier register accesses of the warpgroup before
/// the following wgmma.mma_async.
void wgmmaFence(KernelBuilder &k);

/// How an operand is laid out in shared memory.
enum class WgmmaMajor { K, MN };

/// The K of one wgmma on operands of `elementType`: 16 for f16 / bf16, 32
/// for fp8 (f8E4M3FN, f8E5M2). Either way a step is 32 bytes of a
/// K-major row.
int64_t wgmmaKStep(Type elementType);

/// wgmma.mma_async m64nNk16 (m64nNk32 for fp8) with f32 accumulators: acc
/// (+)= A * B with A (64 x K) and B (K x n) read through descriptors,
/// `elementType` f16, bf16, f8E4M3FN or f8E5M2 (fp8: both K-major, the only
/// form the instruction has). `accumulate` false gives A * B (scale-d 0;
/// `acc` is only the result's type then). B K-major is B stored [n][k] (K
/// in Q.K^T), MN-major stored [k][n] (V in P.V).
Value wgmmaMmaAsync(KernelBuilder &k, Value acc, Value descA, Value descB,
                    int64_t n, Type elementType, bool accumulate,
                    WgmmaMajor majorA = WgmmaMajor::K,
                    WgmmaMajor majorB = WgmmaMajor::K);

/// wgmma.mma_async m64nNk16 (fp8: m64nNk32, B K-major) with A from
/// registers and B through a descriptor, accumulating into `acc` (64 x n,
/// f32): `a` is the thread's four 32-bit registers of two packed
/// `elementType` (f16 / bf16) each (fp8: four, wgmmaFp8ARegisters), in
/// the A fragment layout of mma.sync m16n8k16 per warp (which is how an
/// accumulator's registers pack into A: P in P.V). No upstream op takes A
/// from registers (nvvm.wgmma.mma_async reads descriptors only), so this is
/// inline PTX; the accumulator is read and written in place.
Value wgmmaMmaAsyncRegA(KernelBuilder &k, Value acc, ArrayRef<Value> a,
                        Value descB, int64_t n, Type elementType,
                        WgmmaMajor majorB);

/// Pins an accumulator's registers at this point of the program (an empty
/// inline asm reading and writing each): the wgmma results are read only
/// after the wait that precedes this, and the values given to a wgmma are
/// computed before it, whatever the compiler's scheduling.
Value wgmmaFenceOperand(KernelBuilder &k, Value acc);
/// An empty asm (with side effects) that reads the 32-bit registers `regs`:
/// after a wgmma wait, the registers an asynchronous wgmma read stay
/// allocated until it completed, so that values computed meanwhile are not
/// put in them (LLVM sees the wgmma's operands as read at its issue; ptxas
/// serializes the pipeline where a register in flight is written, C7513).
void wgmmaKeepRegisters(KernelBuilder &k, ValueRange regs);

/// The four 32-bit A registers of an mma.sync A fragment (vector<4x2xT>,
/// T f16 or bf16), as wgmmaMmaAsyncRegA takes them.
SmallVector<Value> wgmmaARegisters(KernelBuilder &k, Value fragA);

/// The four A registers of an fp8 (`fp8Type`) m64nNk32 wgmma from two f16
/// A fragments (vector<4x2xf16>) `lo` and `hi` of consecutive k16 steps,
/// narrowed with cvt.rn.satfinite (sm_89+). The k32 fragment puts four
/// consecutive k of a row in a register where the k16 ones hold two pairs 8
/// apart, so k is permuted: within each 16 of the 32, the k32 fragment's
/// k = 4 c + j holds the k16 fragment's 8 (j / 2) + 2 c + j % 2 (c the lane
/// in its quad). The B operand must be stored with the same permutation of
/// its k (P.V: V's keys).
SmallVector<Value> wgmmaFp8ARegisters(KernelBuilder &k, Value lo, Value hi,
                                      Type fp8Type);

/// The accumulator of a 64 x n wgmma as mma.sync accumulator fragments
/// (vector<2x2xf32>, one per 8 columns: [row lane / 4 (+ 8)][column
/// 2 (lane % 4) (+ 1)] of the warp's 16 rows), and back. Registers 4j ..
/// 4j + 3 are fragment j, so both directions are renamings.
SmallVector<Value> wgmmaAccumulatorToFragments(KernelBuilder &k, Value acc,
                                               int64_t n);
Value wgmmaFragmentsToAccumulator(KernelBuilder &k, ArrayRef<Value> frags);

/// wgmma.commit_group: the wgmma.mma_async ops issued since the last commit
/// become one group.
void wgmmaCommitGroup(KernelBuilder &k);
/// wgmma.wait_group: waits until at most `pending` groups are in flight.
void wgmmaWaitGroup(KernelBuilder &k, int64_t pending);

//===----------------------------------------------------------------------===//
// mbarrier
//===----------------------------------------------------------------------===//

/// `count` mbarriers in shared memory (!nvgpu.mbarrier.group).
Value createMbarriers(KernelBuilder &k, int64_t count);
/// Initializes barrier `id` of `group` to expect `arrivals` arrivals per
/// phase; only threads where `pred` (i1, may be null: all) holds do it.
void mbarrierInit(KernelBuilder &k, Value group, Value id, Value arrivals,
                  Value pred = nullptr);
/// Arrives on barrier `id` and adds `txBytes` to the bytes the current
/// phase waits for (the TMA copies that complete on it); only where `pred`
/// (i1, may be null) holds.
void mbarrierArriveExpectTx(KernelBuilder &k, Value group, Value id,
                            Value txBytes, Value pred = nullptr);
/// Blocks until the phase of barrier `id` with parity `parity` (i1) has
/// completed (mbarrier.try_wait.parity in a retry loop).
void mbarrierWait(KernelBuilder &k, Value group, Value id, Value parity);
/// Arrives on barrier `id` (one arrival of the current phase).
void mbarrierArrive(KernelBuilder &k, Value group, Value id);
/// Arrives on barrier `id` once every cp.async this thread issued so far
/// has landed (cp.async.mbarrier.arrive.noinc: the arrival counts against
/// the arrivals the barrier was initialized with). The thread goes on at
/// once; a consumer that waits for the phase and then reads the copies
/// through the async proxy (wgmma) needs fenceProxyAsyncShared after the
/// wait.
void mbarrierArriveOnCopies(KernelBuilder &k, Value group, Value id);

/// bar.sync `id`, `numThreads`: a barrier among the warps that name it
/// (a warpgroup, or the consumers of a warp-specialized block), where
/// gpu.barrier would wait for the whole block. Id 0 is gpu.barrier's.
void namedBarrier(KernelBuilder &k, int64_t id, int64_t numThreads);
/// The same with the barrier id computed at run time (i32, uniform in each
/// warp, in 1..15): a warpgroup waiting on a barrier of its own.
void namedBarrier(KernelBuilder &k, Value id, int64_t numThreads);
/// bar.arrive `id`, `numThreads`: the executing warps count towards barrier
/// `id` (i32) without waiting for it; `numThreads` counts both the arriving
/// warps and those that wait on it with namedBarrier. One warpgroup hands a
/// turn to another this way.
void namedBarrierArrive(KernelBuilder &k, Value id, int64_t numThreads);

//===----------------------------------------------------------------------===//
// Register reallocation
//===----------------------------------------------------------------------===//

/// setmaxnreg: the executing warpgroup's per-thread register budget grows
/// (`increase`) or shrinks to `count`, a multiple of 8 in [24, 256]; other
/// counts abort with a message. ptxas honours it only when the kernel's
/// register count at entry is known from launch bounds: .maxntid
/// (known_block_size) with .minnctapersm (`nvvm.minctasm`), or .reqntid or
/// .maxnreg; otherwise it ignores it with warning C7508.
void setMaxRegisters(KernelBuilder &k, int64_t count, bool increase);

} // namespace cascade
} // namespace mlir

#endif // CASCADE_CONVERSION_GPUCODEGEN_WGMMA_H
