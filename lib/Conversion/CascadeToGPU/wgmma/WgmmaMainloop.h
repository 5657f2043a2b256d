//===- WgmmaMainloop.h - The KV loop of attention on Hopper -----*- C++ -*-===//
//
// The mainloop of the wgmma attention kernels (sm_90a), warp-specialized:
//
// - the producer warpgroup (warpgroup 0, registers given up with
//   setmaxnreg) fills a ring of `stages` K/V tiles in shared memory, in the
//   128-byte-swizzled panel form that wgmma descriptors read. Per tile it
//   waits until the consumers have released the stage (mbarrier `empty`),
//   issues the tile's copies (a hook: the paged cp.async gather), and
//   publishes it on mbarrier `full`: each producer thread's
//   cp.async.mbarrier.arrive makes its arrival wait for its own copies, so
//   the producer runs on to the next free stage at once and the consumers
//   fence the async proxy after their wait. Where the producer works on a
//   landed tile (RoPE rotates K in shared memory) it publishes tile j
//   itself instead, after issuing tile j + 1 and waiting for tile j's
//   cp.async group. Over an fp8 KV cache the copies land in a staging ring
//   of fp8 tiles (`stages` slots, no wait to issue), and the producer
//   publishes tile j after issuing tile j + stages - 1: it waits for tile
//   j's group, acquires its ring stage, converts its own chunks into it,
//   fences the async proxy and arrives;
// - the consumer warpgroups (registers taken with setmaxnreg), each owning
//   64 query rows, per tile: wait on `full`, S = Q K^T on wgmma (Q and K
//   through descriptors), the score transform (a hook), the online softmax
//   in base 2 (MmaSoftmax, on the accumulator fragments: a wgmma
//   accumulator is mma.sync's per warp), O += P V on wgmma with P from
//   registers and V through an MN-major descriptor, then arrive on `empty`.
//
// Within a consumer warpgroup, the softmax of tile i overlaps the wgmma of
// P V of tile i - 1 (FlashAttention-3's intra-warpgroup pipelining): per
// iteration, S_i = Q K_i^T and O += P_{i-1} V_{i-1} are issued as two
// groups, the softmax of S_i runs once the first completed, and O is
// rescaled once the second did. Between the consumer warpgroups, the
// issue of those groups takes turns (FlashAttention-3's ping-pong): a
// warpgroup issues its wgmma of a tile in its turn only and then hands the
// turn to the next, so that while one runs its softmax the tensor cores work
// on the other's tile, instead of both warpgroups drifting into the same
// phase and waiting for the tensor cores together.
//
// K and V under barriers of their own (`kv_barriers = split`,
// FlashAttention-3's separate pipelines): with one ring, a stage is
// released only after P V of its tile, so a consumer warpgroup holds two
// stages (tile i's K, tile i - 1's V) and the producer of a 3-stage ring
// runs a single tile ahead. With split barriers, K and V have rings of
// their own (`full` / `empty` then K's, `fullV` / `emptyV` V's, both
// `stages` deep over the same shared memory): the producer gathers K one
// tile ahead of V (K_0, K_1, V_0, K_2, V_1, ...), each part one cp.async
// group published as soon as it landed; a consumer releases K_i as soon as
// S_i = Q K_i^T completed and V_{i-1} after P_{i-1} V_{i-1}.
//
// Side data (a custom mask): the producer may annotate each tile in its
// stage's side slots (the mask bits of the tile's rows and a verdict per
// consumer warpgroup) after the stage was acquired, and publishes them with
// a plain arrive of its own on `full` (release; `full` then counts two
// arrivals a producer thread). A consumer reads them right after its wait
// on `full` (acquire), before it can release the stage, and skips a tile
// whose verdict hides it from all its rows.
//
//===----------------------------------------------------------------------===//

#ifndef CASCADE_LIB_CONVERSION_CASCADETOGPU_WGMMA_WGMMAMAINLOOP_H
#define CASCADE_LIB_CONVERSION_CASCADETOGPU_WGMMA_WGMMAMAINLOOP_H

#include "common/MmaSoftmax.h"
#include "wgmma/WgmmaKVGather.h"
#include "wgmma/WgmmaTraits.h"

namespace mlir {
namespace cascade {

struct AttentionSpec;

/// The geometry of a wgmma block (MmaTiles) for `spec`, seen from its
/// consumer warps.
MmaTiles wgmmaTiles(const AttentionSpec &spec);
/// This thread's place in a wgmma block of `tiles`: block [128, 1 +
/// consumers], thread x of warpgroup y; consumer warpgroup y - 1 holds rows
/// [64 (y - 1), 64 y). Meaningless in the producer warpgroup (y = 0), which
/// does not use it.
MmaThread wgmmaThread(KernelBuilder &k, const MmaTiles &tiles);

/// What the producer asks of the kernel around it.
struct WgmmaProducerHooks {
  /// Issues the copies of `part` of tile `i` into stage `stage` as one
  /// cp.async group (KV with one ring; K or V with split barriers).
  function_ref<void(Value i, Value stage, WgmmaKVPart part)> issue;
  /// After tile `i`'s copies landed (this thread's; a producer barrier
  /// first where the work spans other threads' copies) and before it is
  /// published: work on the tile in shared memory (RoPE on K; with split
  /// barriers called for the K part only); may be null.
  function_ref<void(Value stage, Value tileStart)> prepare;
  /// page_lookahead (the CopiesArrive schedule only; both or neither): the
  /// tile's page ids, loaded before its stage is acquired, and the copies
  /// issued from them once it was (instead of `issue`).
  function_ref<SmallVector<Value>(Value i)> lookup;
  function_ref<void(Value i, Value stage, ValueRange pages)> issueLooked;
  /// Issues the loads of the side data of the tile from `tileStart` (a
  /// custom mask's words) and returns them: called before the tile's stage
  /// is acquired and its copies issued, so that the loads' latency overlaps
  /// both; may be null.
  function_ref<SmallVector<Value>(Value tileStart)> loadSide;
  /// Once the tile's stage (K's, with split barriers) was acquired: writes
  /// the tile's side data, made of `loaded` (loadSide's values), into the
  /// stage's side slots (every producer thread calls it; the mainloop then
  /// arrives on `full` for it); may be null. Needs a mainloop built with
  /// `annotated`.
  function_ref<void(Value stage, Value tileStart, ValueRange loaded)> annotate;
};

class WgmmaMainloop {
public:
  /// How the producer publishes a tile (one ring unless noted):
  enum class Publish {
    /// after the next tile's copies were issued (prepare hook: RoPE);
    AfterNext,
    /// by the copies themselves (no prepare hook);
    CopiesArrive,
    /// K and V parts apart, on split barrier rings;
    SplitKV,
    /// the copies land in a staging ring of `stages` slots (an fp8 cache)
    /// and the prepare hook converts each into its ring stage: tile j is
    /// published after tile j + stages - 1 was issued.
    Staged,
  };
  /// `annotated`: the producer annotates every tile (the `annotate` hook),
  /// so `full` counts an arrival more a producer thread.
  WgmmaMainloop(KernelBuilder &k, const MmaTiles &tiles,
                const MmaThread &thread, Value smem, Type elementType,
                ExpScale expScale, Publish publish = Publish::AfterNext,
                bool annotated = false);

  /// The consumers' exp2 scale with a runtime factor folded in
  /// (ExpScale::folded): set by the consumer warpgroups before consume(),
  /// after their register reallocation (a value computed before it would
  /// live across setmaxnreg).
  void setFoldedExpScale(Value folded) { expScale.folded = folded; }

  /// Creates and initializes the `full` and `empty` mbarrier rings (and
  /// `fullV`, `emptyV` with split barriers); every thread of the block
  /// calls it before the roles split.
  void initBarriers();

  /// The producer's loop over tiles [0, numTiles) (first key t0 + i *
  /// kv_tile).
  void produce(Value numTiles, Value t0, const WgmmaProducerHooks &hooks);

  /// What a consumer reads of a tile's side data (the `annotate` hook's):
  /// `read(stage)`, right after the tile's wait on `full`, returns values
  /// of `types` that the tile's `transform` gets. Optional:
  /// `shown(values)`, an i1 uniform over the consumer warpgroup (the hook
  /// votes, so that ptxas sees a uniform branch), false where the tile is
  /// hidden from all 64 rows of the warpgroup. Such a tile is skipped (no
  /// S, no softmax; only the previous tile's P V, if that tile was not
  /// skipped too). P is zero after a skipped tile, and packed only after
  /// the previous P V completed on the computing path, so no register a
  /// wgmma in flight reads is written (ptxas would serialize the pipeline,
  /// C7513). Tile 0 is always computed.
  struct TileSideData {
    SmallVector<Type> types;
    function_ref<SmallVector<Value>(Value)> read;
    function_ref<Value(ValueRange)> shown;
  };
  /// The consumers' loop: returns the final state of this thread's rows.
  /// `transform(scores, tileStart, side)` turns raw scores into log2-unit
  /// logits with masked keys at -inf (as the mma_sync mainloop's transform
  /// hook); `side` holds the tile's TileSideData values (empty without).
  using TransformFn =
      function_ref<SmallVector<Value>(ArrayRef<Value>, Value, ValueRange)>;
  MmaState consume(Value numTiles, Value t0, TransformFn transform,
                   const TileSideData *side = nullptr);

private:
  /// What the consumers' loop builds its tiles with.
  struct ConsumerLoop {
    ConsumerLoop(WgmmaMainloop &loop, Value t0, TransformFn transform,
                 const TileSideData *side);
    MmaBuilder mma;
    /// The online softmax (mma.sync's fragments are a wgmma accumulator's).
    MmaSoftmax softmax;
    TransformFn transform;
    const TileSideData *side;
    Value t0;
    /// Tiles hidden from the whole warpgroup are skipped.
    bool skips;
  };
  /// One iteration i >= 1 of the consumers' loop: its stage and tile i -
  /// 1's, the state before the tile, P_{i-1}, whether P_{i-1} V_{i-1} is
  /// still to be issued (skips only), and the tile's side data.
  struct ConsumerStep {
    Value i, stage, prevStage, pending;
    MmaState state;
    SmallVector<Value> pPrev, side;
  };
  /// Tile 0 from the `initial` state (O zero): S_0, its softmax; returns m,
  /// l and P_0.
  SmallVector<Value> firstTile(ConsumerLoop &c, const MmaState &initial);
  /// A tile shown to the warpgroup: S_i with P_{i-1} V_{i-1} in flight,
  /// the softmax, the rescale; returns O, m, l and P_i.
  SmallVector<Value> computeTile(ConsumerLoop &c, const ConsumerStep &step);
  /// A tile hidden from the warpgroup's rows: P_{i-1} V_{i-1} alone, unless
  /// tile i - 1 was skipped too; m and l stay, P becomes zero once no wgmma
  /// reads it. Returns what computeTile returns.
  SmallVector<Value> skipTile(ConsumerLoop &c, const ConsumerStep &step);
  /// Scores of tile i (accumulator `acc`, landed), transformed.
  SmallVector<Value> scoresOf(ConsumerLoop &c, Value i, Value acc,
                              ValueRange side);
  /// The side data of the tile in `stage`, just waited for (none without).
  SmallVector<Value> sideOf(ConsumerLoop &c, Value stage);
  /// A zero P (the A operands of P V).
  SmallVector<Value> zeroP(ConsumerLoop &c);
  /// After the consumers' loop: P V of the last tile (P `pLast`) into the
  /// accumulators `o0` (of `accType`), when there were tiles.
  /// `pending` (i1, or null: always) says whether pLast is still to be
  /// multiplied.
  SmallVector<Value> lastPV(Value numTiles, ArrayRef<Value> pLast,
                            ArrayRef<Value> o0, Type accType,
                            Value pending = Value());
  /// The producer, with the `loadSide` hook: issues tile `i`'s loads.
  SmallVector<Value> loadSideOf(const WgmmaProducerHooks &hooks, Value i,
                                Value t0);
  /// The producer, with the `annotate` hook: annotates tile `i` in its
  /// acquired stage `stage` from `loaded` (loadSideOf's values) and arrives
  /// on `full` for it.
  void annotateStage(const WgmmaProducerHooks &hooks, Value stage, Value i,
                     Value t0, ValueRange loaded);
  /// The producer's loop with split K/V barriers.
  void produceSplit(Value numTiles, Value t0, const WgmmaProducerHooks &hooks);
  /// The producer's loop where the copies publish their tile.
  void produceArriving(Value numTiles, Value t0,
                       const WgmmaProducerHooks &hooks);
  /// The producer's loop over a staging ring (Publish::Staged).
  void produceStaged(Value numTiles, Value t0, const WgmmaProducerHooks &hooks);
  /// The consumers: wait until tile `i`'s copies are in stage `stage`
  /// (phase `parity` of `full`).
  void waitFull(Value stage, Value parity);
  /// The producer: waits until the stage of tile `i` in the ring `empty` is
  /// free (the consumers released tile i - stages); returns the stage.
  Value acquireStage(Value emptyRing, Value i);
  /// The producer: publishes the copies of tile `j` to the ring `fullRing`
  /// once they landed (the caller waited for their group); `prepare` (may
  /// be null) works on the stage first.
  void publishStage(Value fullRing, Value j, Value t0,
                    function_ref<void(Value, Value)> prepare);
  /// Issues S = Q K^T of this warpgroup's 64 rows and the tile in stage
  /// `stage` as one wgmma group; returns the accumulator (read it after a
  /// wait, through scoresOf).
  Value issueScores(Value stage);
  /// Issues O += P V on stage `stage` (P the A operands [kv_tile / 16]) as
  /// one wgmma group; returns the accumulator. fp8 operands: P narrowed to
  /// k32 fragments, V read transposed (K-major, MmaTiles::vtLayout).
  Value issuePV(ArrayRef<Value> pA, Value stage, ArrayRef<Value> o);
  /// An accumulator after its group completed, as fragments.
  SmallVector<Value> fragmentsOf(Value acc, int64_t n);
  /// Shared byte address of element `offset` of the dynamic shared memory.
  Value address(Value offset);
  /// Tile i's stage and the parity of its use of that stage (i1).
  std::pair<Value, Value> stageAndParity(Value i);
  /// Ping-pong, with two or more consumer warpgroups (no-ops with one):
  /// giveFirstTurn starts it (consumer warpgroup 0 may issue first),
  /// waitTurn blocks until this warpgroup may issue, passTurn hands the turn
  /// to the next warpgroup once this one's groups are issued. Every
  /// warpgroup takes as many turns as it passes.
  void giveFirstTurn();
  void waitTurn();
  void passTurn();
  /// This thread's consumer warpgroup (0-based), i32.
  Value consumerIndex();
  /// The block's consumer warpgroups.
  int64_t consumers() const;

  KernelBuilder &k;
  const MmaTiles &tiles;
  const MmaThread &thread;
  Value smem;
  /// The wgmma operands' type (q's: f16, bf16 or fp8) and P's as the
  /// softmax builds it (f16 for fp8 operands, narrowed at P V's issue).
  Type elementType, pType;
  ExpScale expScale;
  bool splitKV;
  bool copiesArrive;
  bool staged;
  bool annotated;
  /// One ring: K and V of a stage; split barriers: K's (and fullV, emptyV
  /// V's).
  Value full, empty, fullV, emptyV;
};

} // namespace cascade
} // namespace mlir

#endif // CASCADE_LIB_CONVERSION_CASCADETOGPU_WGMMA_WGMMAMAINLOOP_H
