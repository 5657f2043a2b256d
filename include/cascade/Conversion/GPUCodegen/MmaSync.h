//===- MmaSync.h - Building blocks of mma.sync kernels ----------*- C++ -*-===//
//
// The pieces a tiled kernel on the mma.sync generation of tensor cores
// (Ampere and later: ldmatrix, mma.sync, cp.async) is assembled from; the
// wgmma and TMA pieces of Hopper sit beside this file. Each is built from
// upstream ops (nvgpu.ldmatrix, nvgpu.mma.sync / nvvm.mma.sync,
// nvgpu.device_async_copy, gpu.shuffle, vector) and each exercised by its own
// lit test (test/Conversion/GPUCodegen):
//
// - SmemTileLayout: a row-major tile of 16-bit elements in shared memory,
//   addressed in 16-byte chunks, XOR-swizzled (chunk ^ row % 8: the 128-byte
//   swizzle of TMA) or padded by one chunk per row, so that ldmatrix and
//   cp.async are free of bank conflicts.
// - Dynamic shared memory: one `.extern .shared` buffer per kernel module.
// - Tile copies: a block's 16-byte cp.async copies of a tile of gathered
//   rows (paged KV), with zero fill.
// - MmaBuilder: ldmatrix loads of A / B fragments (B from [n][k] tiles like
//   K, or transposed from [k][n] tiles like V), mma.sync m16n8k16 with f32
//   accumulators for f16 and bf16, and accumulators turned into A operands
//   (P in P.V) in registers.
// - Row operations over accumulator fragments (MmaLayout.h's layout): per
//   row max / sum within a thread and across the quad of lanes sharing a
//   row, row scaling, and element-wise maps that know each element's
//   (row, column).
//
//===----------------------------------------------------------------------===//

#ifndef CASCADE_CONVERSION_GPUCODEGEN_MMASYNC_H
#define CASCADE_CONVERSION_GPUCODEGEN_MMASYNC_H

#include "cascade/Conversion/GPUCodegen/KernelBuilder.h"
#include "cascade/Conversion/GPUCodegen/MmaLayout.h"

#include <array>

namespace mlir {
namespace cascade {

/// A row-major tile of `rows` x `cols` 16-bit elements in shared memory.
/// Rows hold `cols / 8` 16-byte chunks. With `swizzle`, chunk c of row r is
/// stored at chunk position c ^ (r % 8) of the row (needs a multiple of 8
/// chunks per row); otherwise rows are `rowStride = cols + 8` elements apart
/// (one chunk of padding), which also spreads 8 consecutive rows over all
/// banks.
///
/// The panel form (`panels`, what wgmma descriptors read): the tile is cut
/// into column panels of 64 elements (128 bytes), stored one after the
/// other, each `rows` x 64 with the 128-byte swizzle (chunk c of row r at
/// chunk c ^ (r % 8)); `rowStride` is 64 then. With one panel (cols = 64)
/// it is the swizzled row-major tile.
struct SmemTileLayout {
  int64_t rows = 0;
  int64_t cols = 0;
  int64_t rowStride = 0;
  bool swizzle = false;
  bool panels = false;

  /// The conflict-free layout of a tile: XOR swizzle when the rows have a
  /// multiple of 8 chunks, padding otherwise. `cols` must be a multiple of 8.
  static SmemTileLayout get(int64_t rows, int64_t cols);
  /// The panel form; `cols` must be a multiple of 64.
  static SmemTileLayout getPanels(int64_t rows, int64_t cols);

  int64_t chunksPerRow() const { return cols / 8; }
  /// Elements the tile occupies.
  int64_t numElements() const {
    return rows * rowStride * (panels ? cols / 64 : 1);
  }
  /// Panel form: elements from one panel to the next.
  int64_t panelElements() const { return rows * 64; }
  /// Element offset (from the tile start) of chunk `chunk` of row `row`.
  Value chunkOffset(KernelBuilder &k, Value row, Value chunk) const;
  Value chunkOffset(KernelBuilder &k, Value row, int64_t chunk) const;

  /// Fragment loads address row r0 + rl, chunk c0 + cl, where the lane
  /// parts rl, cl are fixed per lane, r0 is a multiple of 8 and c0 is even
  /// (cl is 0 or 1). Then the swizzle only permutes within what the lane
  /// part fixes: offset = (r0 * rowStride + 64 * (c0 / 8) + laneTerm) ^
  /// (8 * (c0 % 8)) with laneTerm = rl * rowStride + 8 * (cl ^ (rl % 8)),
  /// one add and one xor with constants per load instead of the full
  /// address arithmetic (padded rows: r0 * rowStride + 8 * c0 + laneTerm).
  Value laneTerm(KernelBuilder &k, Value rl, Value cl) const;
  Value fragmentOffset(KernelBuilder &k, Value tileBase, Value laneTerm,
                       Value r0, int64_t c0) const;
};

/// The dynamic shared memory of a kernel seen as `count` elements of
/// `elementType` starting at byte `byteOffset` (a 1-D workgroup memref). The
/// buffer is one `.extern .shared .align 1024` symbol of the kernel module;
/// launches pass its size as the dynamic shared memory size.
Value dynamicSharedMemory(KernelBuilder &k, gpu::GPUModuleOp module,
                          Type elementType, int64_t byteOffset, int64_t count);

/// One thread's share of a tile copy: the chunks it copies, one per pass.
/// Chunk ids `tid + pass * numThreads` enumerate the tile row-major, so
/// consecutive threads copy consecutive 16-byte chunks of a row.
struct TileCopyPlan {
  SmallVector<Value> rows;    ///< tile row of each pass
  SmallVector<Value> chunks;  ///< chunk (16 bytes) within the row
  SmallVector<Value> inRange; ///< i1, false past the tile (last pass only)
};
TileCopyPlan distributeTileCopy(KernelBuilder &k, int64_t rows,
                                int64_t chunksPerRow, int64_t numThreads,
                                Value tid);

/// Issues the cp.async copies of `plan`: chunk `chunks[p]` of tile row
/// `rows[p]` comes from `src` at element offset `srcRowOffsets[p] + 8 *
/// chunk`, 16 bytes with L1 bypass; where `valid[p]` is false or the chunk
/// is `>= validChunks` it is zero-filled instead (nothing is read). Returns
/// the copies' tokens (for nvgpu.device_async_create_group). With
/// `chunkElements` 16, `smem` and `src` hold bytes (fp8): the layout's
/// 16-bit offsets (and `tileBase`) are doubled and a chunk is 16 of them.
SmallVector<Value> issueTileCopy(KernelBuilder &k, Value smem, Value tileBase,
                                 const SmemTileLayout &layout,
                                 const TileCopyPlan &plan, Value src,
                                 ArrayRef<Value> srcRowOffsets,
                                 ArrayRef<Value> valid, int64_t validChunks,
                                 int64_t chunkElements = 8);

/// Commits `tokens` as one cp.async group; returns the group token.
Value commitGroup(KernelBuilder &k, ArrayRef<Value> tokens);
/// Waits until at most `pending` committed groups are still in flight.
void waitGroups(KernelBuilder &k, Value group, int64_t pending);

/// mma.sync.m16n8k16 with f32 accumulators on f16 or bf16 operands, and the
/// ldmatrix loads that feed it. `lane` is the lane id (index).
class MmaBuilder {
public:
  MmaBuilder(KernelBuilder &k, Type elementType, Value lane);

  /// vector<4x2xT>, vector<2x2xT>, vector<2x2xf32>.
  VectorType aType() const;
  VectorType bType() const;
  VectorType accType() const;
  Value zeroAccumulator();

  /// The A fragment of rows [row0, row0 + 16) and columns [col0, col0 + 16)
  /// of a row-major tile (ldmatrix x4).
  Value loadA(Value smem, Value tileBase, const SmemTileLayout &layout,
              Value row0, int64_t col0);
  /// The B fragments of n-tiles [n0, n0 + 8) and [n0 + 8, n0 + 16) for the
  /// k16 step at column k0 of a tile stored [n][k] (K in Q.K^T; ldmatrix
  /// x4).
  std::pair<Value, Value> loadBFromNK(Value smem, Value tileBase,
                                      const SmemTileLayout &layout, Value n0,
                                      int64_t k0);
  /// The B fragments of n-tiles [n0, n0 + 8) and [n0 + 8, n0 + 16) for the
  /// k16 step at rows [k0, k0 + 16) of a tile stored [k][n] (V in P.V;
  /// ldmatrix x4 .trans).
  std::pair<Value, Value> loadBFromKN(Value smem, Value tileBase,
                                      const SmemTileLayout &layout, Value k0,
                                      int64_t n0);
  /// acc + a * b.
  Value mma(Value a, Value b, Value acc);
  /// The A operand made of two accumulators of adjacent n8 tiles (columns
  /// 0-7 and 8-15 of the k16 step), rounded to the operand type.
  Value accumulatorsToA(Value acc0, Value acc1);

private:
  KernelBuilder &k;
  Type elementType;
  Value lane;
  Value ldmatrix(Value smem, Value offset, bool transpose);
  /// The lane parts (row, chunk) of the three ldmatrix address maps.
  std::pair<Value, Value> aLane, nkLane, knLane;
};

/// Accumulator rows. Every helper takes fragments of one m16 row block
/// (vector<2x2xf32>); index 0 of a row pair is row lane/4, index 1 row
/// lane/4 + 8.
using RowPair = std::array<Value, 2>;

/// Max (maxnumf) or sum of each row over the thread's elements of `frags`.
RowPair rowReduceInThread(KernelBuilder &k, ArrayRef<Value> frags, bool max);
/// All-reduce (max or sum) of a per-thread row value over the four lanes
/// that share the row.
Value quadAllReduce(KernelBuilder &k, Value x, bool max);
/// rowReduceInThread followed by quadAllReduce.
RowPair rowReduce(KernelBuilder &k, ArrayRef<Value> frags, bool max);
/// frag * scale of its row.
Value scaleRows(KernelBuilder &k, Value frag, const RowPair &scale);
/// Applies `fn(value, pair, half)` to every element of an accumulator.
Value mapAccumulator(KernelBuilder &k, Value frag,
                     function_ref<Value(Value, int64_t, int64_t)> fn);
/// Whether `pred` holds on any lane of the warp (vote.sync.any).
Value warpAny(KernelBuilder &k, Value pred);
/// Whether `pred` holds on every lane of the warp (vote.sync.all).
Value warpAll(KernelBuilder &k, Value pred);
/// Element (pair, half) of an accumulator.
Value accumulatorElement(KernelBuilder &k, Value frag, int64_t pair,
                         int64_t half);

} // namespace cascade
} // namespace mlir

#endif // CASCADE_CONVERSION_GPUCODEGEN_MMASYNC_H
