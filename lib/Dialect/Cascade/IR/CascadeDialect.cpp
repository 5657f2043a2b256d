//===- CascadeDialect.cpp - Cascade dialect -------------------------------===//

#include "cascade/Dialect/Cascade/IR/CascadeDialect.h"
#include "cascade/Dialect/Cascade/IR/CascadeOps.h"

#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::cascade;

#include "cascade/Dialect/Cascade/IR/CascadeOpsDialect.cpp.inc"

#include "cascade/Dialect/Cascade/IR/CascadeEnums.cpp.inc"

/// One of an enum's keywords (`symbolize` names them) as the value of
/// `key`; else an error listing `choices`.
template <typename E>
static ParseResult parseEnumKeyword(AsmParser &p,
                                    std::optional<E> (*symbolize)(StringRef),
                                    StringRef key, StringRef choices, E &out) {
  StringRef value;
  llvm::SMLoc loc = p.getCurrentLocation();
  if (p.parseKeyword(&value))
    return failure();
  std::optional<E> v = symbolize(value);
  if (!v)
    return p.emitError(loc)
           << key << " must be " << choices << ", got '" << value << "'";
  out = *v;
  return success();
}

/// The options of #cascade.kernel_config after `stages`, each `, key =
/// value` where it differs from its default, in any order when parsed:
/// `kv_barriers = joint | split`, `min_blocks_per_sm = n`, `fp8_staging =
/// convert | direct_k | direct_kv`.
static ParseResult
parseKernelConfigOptions(AsmParser &p, KVBarriers &kvBarriers,
                         int64_t &minBlocks, Fp8Staging &fp8Staging,
                         int64_t &exp2Emulation, int64_t &pageLookahead) {
  kvBarriers = KVBarriers::Joint;
  minBlocks = 0;
  fp8Staging = Fp8Staging::Convert;
  exp2Emulation = 0;
  pageLookahead = 0;
  bool seenBarriers = false, seenBlocks = false, seenStaging = false,
       seenExp2 = false, seenLookahead = false;
  while (succeeded(p.parseOptionalComma())) {
    StringRef key;
    llvm::SMLoc loc = p.getCurrentLocation();
    if (p.parseKeyword(&key) || p.parseEqual())
      return failure();
    if (key == "kv_barriers" && !seenBarriers) {
      seenBarriers = true;
      if (parseEnumKeyword<KVBarriers>(p, symbolizeKVBarriers, key,
                                       "joint or split", kvBarriers))
        return failure();
    } else if (key == "min_blocks_per_sm" && !seenBlocks) {
      seenBlocks = true;
      int64_t n;
      if (p.parseInteger(n))
        return failure();
      minBlocks = n;
    } else if (key == "fp8_staging" && !seenStaging) {
      seenStaging = true;
      if (parseEnumKeyword<Fp8Staging>(p, symbolizeFp8Staging, key,
                                       "convert, direct_k or direct_kv",
                                       fp8Staging))
        return failure();
    } else if (key == "exp2_emulation" && !seenExp2) {
      seenExp2 = true;
      if (p.parseInteger(exp2Emulation))
        return failure();
    } else if (key == "page_lookahead" && !seenLookahead) {
      seenLookahead = true;
      if (p.parseInteger(pageLookahead))
        return failure();
    } else {
      return p.emitError(loc, "expected kv_barriers, min_blocks_per_sm, "
                              "fp8_staging, exp2_emulation or page_lookahead "
                              "(each at most once), got '")
             << key << "'";
    }
  }
  return success();
}

static void printKernelConfigOptions(AsmPrinter &p, KVBarriers kvBarriers,
                                     int64_t minBlocks, Fp8Staging fp8Staging,
                                     int64_t exp2Emulation,
                                     int64_t pageLookahead) {
  if (kvBarriers != KVBarriers::Joint)
    p << ", kv_barriers = " << stringifyKVBarriers(kvBarriers);
  if (minBlocks)
    p << ", min_blocks_per_sm = " << minBlocks;
  if (fp8Staging != Fp8Staging::Convert)
    p << ", fp8_staging = " << stringifyFp8Staging(fp8Staging);
  if (exp2Emulation)
    p << ", exp2_emulation = " << exp2Emulation;
  if (pageLookahead)
    p << ", page_lookahead = " << pageLookahead;
}

#define GET_ATTRDEF_CLASSES
#include "cascade/Dialect/Cascade/IR/CascadeAttrs.cpp.inc"

//===----------------------------------------------------------------------===//
// KernelConfigAttr
//===----------------------------------------------------------------------===//

int64_t KernelConfigAttr::getNumThreads() const {
  int64_t n = 1;
  for (int64_t t : getThreads())
    n *= t;
  return n;
}

LogicalResult KernelConfigAttr::verify(
    function_ref<InFlightDiagnostic()> emitError, KernelFamily family,
    ArrayRef<int64_t> threads, int64_t qTile, int64_t kvTile, int64_t stages,
    KVBarriers kvBarriers, int64_t minBlocksPerSM, Fp8Staging fp8Staging,
    int64_t exp2Emulation, int64_t pageLookahead) {
  if (threads.size() != 3)
    return emitError() << "threads must have 3 entries (x, y, z), got "
                       << threads.size();
  int64_t total = 1;
  for (int64_t t : threads) {
    if (t < 1 || t > 1024)
      return emitError() << "every threads entry must be in [1, 1024], got "
                         << t;
    total *= t;
  }
  if (total > 1024)
    return emitError() << "a block has at most 1024 threads, got " << total;
  if (qTile < 1)
    return emitError() << "q_tile must be >= 1, got " << qTile;
  if (kvTile < 0)
    return emitError() << "kv_tile must be >= 0, got " << kvTile;
  if (stages < 1 || stages > 8)
    return emitError() << "stages must be in [1, 8], got " << stages;
  if (kvBarriers != KVBarriers::Joint && family != KernelFamily::Wgmma)
    return emitError() << "kv_barriers = " << stringifyKVBarriers(kvBarriers)
                       << " is a wgmma option";
  if (minBlocksPerSM < 0 || minBlocksPerSM > 32)
    return emitError() << "min_blocks_per_sm must be in [0, 32], got "
                       << minBlocksPerSM;
  if (minBlocksPerSM && family != KernelFamily::Rows &&
      family != KernelFamily::MmaSync)
    return emitError() << "min_blocks_per_sm is a rows or mma_sync option";
  if (minBlocksPerSM * total > 2048)
    return emitError() << "min_blocks_per_sm = " << minBlocksPerSM
                       << " blocks of " << total
                       << " threads exceed the 2048 threads an SM holds";
  // Direct fp8 staging reads keep a warp's Q fragments in registers: one
  // warp along the query rows, one m16 tile.
  if (fp8Staging != Fp8Staging::Convert) {
    if (family != KernelFamily::MmaSync)
      return emitError() << "fp8_staging = " << stringifyFp8Staging(fp8Staging)
                         << " is an mma_sync option";
    if (threads[1] != 1 || qTile != 16)
      return emitError() << "fp8_staging = " << stringifyFp8Staging(fp8Staging)
                         << " needs threads[1] = 1 and q_tile = 16 (one warp "
                            "along the query rows, its Q fragments in "
                            "registers), got threads[1] = "
                         << threads[1] << " and q_tile = " << qTile;
  }
  if (exp2Emulation < 0 || exp2Emulation > 8)
    return emitError() << "exp2_emulation must be in [0, 8] (eighths of the "
                          "S columns), got "
                       << exp2Emulation;
  if (pageLookahead != 0 && pageLookahead != 1)
    return emitError() << "page_lookahead must be 0 or 1, got "
                       << pageLookahead;
  if (pageLookahead && family != KernelFamily::Wgmma)
    return emitError() << "page_lookahead is a wgmma option (its producer "
                          "warpgroup's gather)";
  if (exp2Emulation && family != KernelFamily::MmaSync &&
      family != KernelFamily::Wgmma)
    return emitError() << "exp2_emulation is a tensor-core option (mma_sync "
                          "or wgmma: their online softmax on MMA fragments)";
  switch (family) {
  case KernelFamily::Merge:
    if (threads[1] != 1 || threads[2] != 1 || kvTile != 0 || stages != 1)
      return emitError() << "a merge kernel takes threads = [n, 1, 1], "
                            "kv_tile = 0 and stages = 1";
    if (threads[0] % qTile != 0)
      return emitError() << "merge: threads[0] (" << threads[0]
                         << ") must be a multiple of q_tile (" << qTile
                         << "), the states per block";
    return success();
  case KernelFamily::Rows:
    if (qTile != 1 || threads[1] != 1)
      return emitError() << "a rows kernel takes q_tile = 1 and threads[1] "
                            "= 1";
    if (kvTile < 1 || kvTile % threads[2] != 0)
      return emitError() << "rows: kv_tile (" << kvTile
                         << ") must be a positive multiple of threads[2] ("
                         << threads[2] << ")";
    if (stages < 2)
      return emitError() << "rows: stages must be >= 2, got " << stages;
    return success();
  case KernelFamily::MmaSync:
    if (threads[0] != 32)
      return emitError() << "mma_sync: threads[0] must be 32 (one warp), got "
                         << threads[0];
    if (qTile % (16 * threads[1]) != 0)
      return emitError() << "mma_sync: q_tile (" << qTile
                         << ") must be a multiple of 16 * threads[1] ("
                         << 16 * threads[1] << ")";
    if (kvTile < 16 || kvTile % (16 * threads[2]) != 0)
      return emitError() << "mma_sync: kv_tile (" << kvTile
                         << ") must be a positive multiple of 16 * threads[2] "
                            "("
                         << 16 * threads[2] << ")";
    if (stages < 2)
      return emitError() << "mma_sync: stages must be >= 2, got " << stages;
    return success();
  case KernelFamily::Wgmma:
    if (threads[0] != 128 || threads[2] != 1 || threads[1] < 2)
      return emitError() << "wgmma: threads must be [128, 1 + consumer "
                            "warpgroups, 1] (a producer warpgroup and at "
                            "least one consumer)";
    if (qTile != 64 * (threads[1] - 1))
      return emitError() << "wgmma: q_tile (" << qTile
                         << ") must be 64 rows per consumer warpgroup ("
                         << 64 * (threads[1] - 1) << ")";
    if (kvTile < 16 || kvTile > 256 || kvTile % 16 != 0)
      return emitError() << "wgmma: kv_tile (" << kvTile
                         << ") must be a multiple of 16 in [16, 256]";
    if (stages < 2)
      return emitError() << "wgmma: stages must be >= 2, got " << stages;
    // One ring for K and V: the producer publishes a tile once the next
    // one's copies are issued, which waits for the stage two tiles back,
    // and the consumers release a stage only after its P.V, one iteration
    // after its scores. With two stages each side waits for the other.
    if (kvBarriers == KVBarriers::Joint && stages < 3)
      return emitError() << "wgmma: joint K/V barriers need stages >= 3, "
                            "got "
                         << stages
                         << " (two stages deadlock: use kv_barriers = split)";
    return success();
  }
  return success();
}

//===----------------------------------------------------------------------===//
// CascadeDialect
//===----------------------------------------------------------------------===//

LogicalResult CascadeDialect::verifyOperationAttribute(Operation *op,
                                                       NamedAttribute attr) {
  StringRef name = attr.getName().getValue();
  if (name == KernelConfigAttrHelper::getNameStr()) {
    if (!isa<KernelConfigAttr>(attr.getValue()))
      return op->emitError("'")
             << name << "' must be a #cascade.kernel_config, got "
             << attr.getValue();
    if (!isa<CascadeDialect>(op->getDialect()) ||
        isa<MultiLevelAttentionOp>(op))
      return op->emitError("'")
             << name
             << "' belongs on cascade.paged_attention and the merge ops";
    return success();
  }
  // Written by convert-cascade-to-gpu: a kernel's manifest entry and the
  // module's list of them (docs/kernel-bundle.md).
  if (name == "cascade.manifest" || name == "cascade.bundle")
    return success(isa<DictionaryAttr, ArrayAttr>(attr.getValue()));
  return op->emitError("unknown cascade attribute '") << name << "'";
}

void CascadeDialect::initialize() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "cascade/Dialect/Cascade/IR/CascadeAttrs.cpp.inc"
      >();
  addOperations<
#define GET_OP_LIST
#include "cascade/Dialect/Cascade/IR/CascadeOps.cpp.inc"
      >();
  registerTypes();
}
