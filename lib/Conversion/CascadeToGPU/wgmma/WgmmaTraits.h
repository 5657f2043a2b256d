//===- WgmmaTraits.h - The wgmma family's facts -----------------*- C++ -*-===//
//
// What selection, spec analysis and plan lowering know of the wgmma family
// (sm_90a, warp-specialized on Hopper's warpgroup MMA): the head dims and
// KV types it takes, its registers (the split setmaxnreg makes between the
// producer and the consumer warpgroups), its shared memory (the panel ring,
// an fp8 cache's staging rings, a custom mask's side data) and its
// kKernelFamilyTraits row (kWgmmaTraits).
//
//===----------------------------------------------------------------------===//

#ifndef CASCADE_LIB_CONVERSION_CASCADETOGPU_WGMMA_WGMMATRAITS_H
#define CASCADE_LIB_CONVERSION_CASCADETOGPU_WGMMA_WGMMATRAITS_H

#include "FamilyTraits.h"

namespace mlir {
namespace cascade {

extern const KernelFamilyTraits kWgmmaTraits;

/// Named barriers of a wgmma block (0 is the whole block's).
inline constexpr int64_t kWgmmaProducerBarrier = 1;
inline constexpr int64_t kWgmmaConsumerBarrier = 2;
/// Threads of the producer warpgroup.
inline constexpr int64_t kWgmmaProducerThreads = 128;
/// Named barriers kWgmmaFirstTurnBarrier + w: the turn of consumer
/// warpgroup w (0-based) to issue its wgmma (ping-pong).
inline constexpr int64_t kWgmmaFirstTurnBarrier = 3;

/// The registers a thread of each role gets with setmaxnreg: the consumers'
/// f32 tiles take most; a producer that also rotates K (RoPE) needs more.
/// setmaxnreg.inc only takes registers that setmaxnreg.dec gave back to the
/// block's pool: a split whose total exceeds what the block was launched
/// with blocks the consumers' inc forever (the RoPE kernels hung so with
/// {128, 192}: 65536 registers asked of a pool of 384 x 168 = 64512).
struct WgmmaRegisterSplit {
  int64_t producer, consumer;
};
/// Registers a thread at entry for a block of `warpgroups` warpgroups:
/// ptxas's count for .maxntid 128 x warpgroups with .minnctapersm 1, the
/// 64K register file over the block's threads rounded down to the
/// allocation granule of 8 (and under the 255 a thread can address): 168
/// for a producer and two consumers, 128 for three consumers.
constexpr int64_t wgmmaEntryRegisters(int64_t warpgroups) {
  int64_t r = 65536 / (kWgmmaProducerThreads * warpgroups) / 8 * 8;
  return r > 248 ? 248 : r;
}
/// Registers a consumer thread needs besides a wgmma's f32 accumulator to
/// issue it (operand fragments, descriptors, addresses): ptxas asked for
/// 158 at head_dim 256 (a 128-register output tile) where 128 were left.
inline constexpr int64_t kWgmmaOperandRegisters = 30;
/// The registers a block of a producer and `consumers` consumer warpgroups
/// starts with, which setmaxnreg redistributes.
constexpr int64_t wgmmaRegisterPool(int64_t consumers) {
  return (consumers + 1) * kWgmmaProducerThreads *
         wgmmaEntryRegisters(consumers + 1);
}
constexpr bool fitsEntryPool(WgmmaRegisterSplit s, int64_t consumers = 2) {
  return s.producer % 8 == 0 && s.consumer % 8 == 0 && s.producer >= 24 &&
         s.consumer <= 256 &&
         kWgmmaProducerThreads * s.producer +
                 consumers * kWgmmaProducerThreads * s.consumer <=
             wgmmaRegisterPool(consumers);
}
/// The splits of a producer and two consumers.
inline constexpr WgmmaRegisterSplit kWgmmaRegisters{40, 232};
inline constexpr WgmmaRegisterSplit kWgmmaRopeRegisters{72, 216};
/// A producer that converts fp8 tiles holds a 16-byte chunk and its 16
/// converted elements besides the gather's addresses: 56 (the pool's rest
/// at 224 a consumer thread).
inline constexpr WgmmaRegisterSplit kWgmmaFp8Registers{56, 224};
/// Both: the conversion and the rotation.
inline constexpr WgmmaRegisterSplit kWgmmaRopeFp8Registers{88, 208};
static_assert(fitsEntryPool(kWgmmaRegisters) &&
                  fitsEntryPool(kWgmmaRopeRegisters) &&
                  fitsEntryPool(kWgmmaFp8Registers) &&
                  fitsEntryPool(kWgmmaRopeFp8Registers),
              "a register split beyond the block's pool deadlocks setmaxnreg");
/// A producer that stages a custom mask (WgmmaProducerHooks::annotate)
/// holds the mask's row offsets and a query's words besides the gather's
/// state: 8 registers more (ptxas spilled 16-32 bytes without them).
inline constexpr int64_t kWgmmaMaskProducerRegisters = 8;
/// The split for `consumers` consumer warpgroups: the producer's share of
/// the two-consumer split (8 registers more where it stages a custom mask),
/// the consumers the rest of the entry pool (in granules of 8), never more
/// than with two. With three consumers the pool is 512 x 128 registers, so
/// they get 152 a thread (144 with RoPE, 136 with RoPE and fp8); the
/// two-consumer numbers would ask 94,208 registers of those 65,536 and
/// block setmaxnreg.inc forever. Two consumers that give the mask's
/// producer its registers keep 224 (216 with RoPE or fp8).
constexpr WgmmaRegisterSplit wgmmaRegisterSplit(bool ropeInProducer,
                                                bool fp8InProducer = false,
                                                int64_t consumers = 2,
                                                bool maskInProducer = false) {
  WgmmaRegisterSplit s =
      ropeInProducer
          ? (fp8InProducer ? kWgmmaRopeFp8Registers : kWgmmaRopeRegisters)
          : (fp8InProducer ? kWgmmaFp8Registers : kWgmmaRegisters);
  if (maskInProducer)
    s.producer += kWgmmaMaskProducerRegisters;
  int64_t rest =
      (wgmmaRegisterPool(consumers) - kWgmmaProducerThreads * s.producer) /
      (consumers * kWgmmaProducerThreads) / 8 * 8;
  if (rest < s.consumer)
    s.consumer = rest;
  return s;
}
static_assert(wgmmaRegisterSplit(false, false, 2).consumer == 232 &&
                  wgmmaRegisterSplit(true, true, 2).consumer == 208 &&
                  wgmmaRegisterSplit(false, false, 1).consumer == 232,
              "two consumers (and one) keep their splits");
static_assert(fitsEntryPool(wgmmaRegisterSplit(false, false, 2, true)) &&
                  fitsEntryPool(wgmmaRegisterSplit(true, true, 2, true)) &&
                  fitsEntryPool(wgmmaRegisterSplit(true, true, 3, true), 3) &&
                  wgmmaRegisterSplit(false, false, 3, true).consumer == 152 &&
                  wgmmaRegisterSplit(false, false, 2, true).consumer == 224,
              "a mask's producer registers fit the pool");
static_assert(fitsEntryPool(wgmmaRegisterSplit(false, false, 3), 3) &&
                  fitsEntryPool(wgmmaRegisterSplit(true, false, 3), 3) &&
                  fitsEntryPool(wgmmaRegisterSplit(false, true, 3), 3) &&
                  fitsEntryPool(wgmmaRegisterSplit(true, true, 3), 3),
              "three consumers fit the pool of 512 x 128");

/// Whether the wgmma family can run an attention op of this head_dim: whole
/// 128-byte swizzle panels of 16-bit elements (64, 128 or 256).
bool wgmmaFamilySupportsHeadDim(int64_t headDim);
/// Whether the wgmma family can run q/k of `headDim` with v and the output
/// of `headDimVo`: whole panels for both (multiples of 64), v no wider than
/// k and at most 256 (head_dim 192, and DeepSeek's 192 / 128 prefill, beside
/// wgmmaFamilySupportsHeadDim's). Beyond the equal 64 / 128 / 256, only a
/// 16-bit cache of q's type without RoPE (wgmmaWhyNotHeadDims).
bool wgmmaSupportsHeadDims(int64_t headDim, int64_t headDimVo);
/// Whether the producer copies K's and V's rows in loops of their own
/// widths (WgmmaKVGather::issueOwnWidths): a narrower v, or rows whose
/// 16-byte chunks do not divide the producer's threads (head_dim 192).
bool wgmmaOwnWidths(int64_t headDim, int64_t headDimVo);
/// Why the family cannot run these head dims with these types and options
/// (empty where it can).
std::string wgmmaWhyNotHeadDims(int64_t headDim, int64_t headDimVo, Type qType,
                                Type kvType, bool rope);

/// Whether the family reads a KV cache of `kvType` with queries of `qType`
/// on `target` (sm_90a): KV of q's type lands straight in the tiles wgmma
/// reads; an fp8 cache (f8E4M3FN, f8E5M2, on chips with the fp8 conversion
/// instructions) lands in a staging ring that the producer converts into
/// them, or, with fp8 queries of the cache's type (wgmmaFp8Operands), is
/// read by fp8 wgmma as it is.
bool wgmmaSupportsKVType(Type qType, Type kvType, const TargetInfo &target);

/// fp8 queries (`qType` f8E4M3FN or f8E5M2, the KV cache's type): both
/// products on fp8 tensor cores (m64nNk32). The tiles are fp8 in the
/// panels (128 elements a 128-byte panel row), V transposed by the
/// producer (wgmma reads fp8 B operands K-major only) and P narrowed to
/// the cache's type (wgmmaFp8ARegisters).
bool wgmmaFp8Operands(Type qType);

/// Why the fp8-operand form cannot take a configuration or shape (empty
/// where it can): head_dim 128 (its rows whole 128-byte panels), 128-key
/// tiles (V's transposed rows whole panels), one ring of three stages or
/// more (the producer transposes V from a staging slot while the next
/// tile lands), no RoPE and no custom mask (their producer hooks work on
/// 16-bit tiles).
std::string wgmmaWhyNotFp8Operands(KernelConfigAttr config, int64_t headDim,
                                   bool rope, bool customMask);

/// Whether a wgmma block of `consumers` consumer warpgroups can hold the
/// P.V accumulator of `headDim` (v's head_dim): ptxas compiles the kernel
/// within the registers a thread has at entry (the 64K register file over the
/// block, 168 with two consumers, 128 with three; setmaxnreg only moves them at
/// run time), and one wgmma needs its whole f32 output tile (head_dim / 2
/// registers a thread) live with its operands' ~30. Head_dim 256 with three
/// consumers needs 158 of 128: ptxas stops with "insufficient registers".
bool wgmmaConsumersHoldHeadDim(int64_t consumers, int64_t headDim);

/// Why page_lookahead cannot serve an op (empty where it can): it needs the
/// schedule whose copies publish their tile (a paged 16-bit cache with q of
/// its type, no RoPE, one K/V ring, rows of K and V copied together:
/// `ownWidths` false, wgmmaOwnWidths) and at most 31 pages of `pageSize`
/// tokens a KV tile of `kvTile` (a warp's lanes hold them). Selection sets
/// it only where this is empty; the family refuses a hand-written one
/// where it is not.
std::string wgmmaWhyNotPageLookahead(bool pageTable, int64_t pageSize,
                                     Type qType, Type kvType, bool rope,
                                     bool ownWidths, bool splitBarriers,
                                     int64_t kvTile);

/// Whether the wgmma producer's gather of an fp8 cache tiles a KV tile of
/// `kvTile` keys: its 128 threads copy 16-byte chunks (16 fp8 elements),
/// 2048 / head_dim whole rows a pass.
bool wgmmaFp8GatherFits(int64_t kvTile, int64_t headDim);

/// A custom mask: the producer stages each tile's mask bits in shared
/// memory beside the tile, one row of kv_tile bits (whole 32-bit words, bit
/// j the tile's key j) for every query the block's q_tile packed rows span
/// (wgmmaMaskQueries: the rows of a query share its bits), then a verdict
/// word per consumer warpgroup (kWgmmaMaskVerdicts of them): bit 0 set
/// where a key of the tile is shown to one of its rows, bit 1 where every
/// key is shown to every row.
inline constexpr int64_t kWgmmaMaskVerdicts = 4;
int64_t wgmmaMaskQueries(KernelConfigAttr config, int64_t groupSize);
/// The most queries that `rows` consecutive packed rows span, G =
/// `groupSize` rows a query: (rows - 1) / G + 2, at most `rows`.
int64_t queriesSpanned(int64_t rows, int64_t groupSize);
/// 32-bit words of a stage's side data: the rows, then the verdicts.
int64_t wgmmaMaskStageWords(KernelConfigAttr config, int64_t groupSize);
/// Bytes of every stage's side data.
int64_t wgmmaMaskSideBytes(KernelConfigAttr config, int64_t groupSize);

/// The dynamic shared memory (bytes) of a wgmma block: the Q tile and the
/// K/V ring in unpadded 128-byte-swizzled panels (no partial states to
/// merge; V's tiles `headDimVo` wide), over an fp8 cache the staging rings
/// after them (K and V, every stage, head_dim bytes a key; with fp8 queries the
/// tiles are fp8 and only V is staged), and with a custom mask
/// (`maskGroupSize`, the GQA group size; 0 without) its side data last.
int64_t wgmmaSharedBytes(KernelConfigAttr config, int64_t headDim,
                         int64_t headDimVo, Type qType, Type kvType,
                         int64_t maskGroupSize = 0);

} // namespace cascade
} // namespace mlir

#endif // CASCADE_LIB_CONVERSION_CASCADETOGPU_WGMMA_WGMMATRAITS_H
