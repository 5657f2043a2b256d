//===- CollectiveBufferization.h - shard collectives to calls ---*- C++ -*-===//

#ifndef CASCADE_DIALECT_CASCADE_TRANSFORMS_COLLECTIVEBUFFERIZATION_H
#define CASCADE_DIALECT_CASCADE_TRANSFORMS_COLLECTIVEBUFFERIZATION_H

namespace mlir {
class DialectRegistry;
namespace cascade {
/// Attaches the BufferizableOpInterface to `shard.all_gather`: One-Shot
/// Bufferize turns it into a buffer for the result and a call of the
/// runtime's `cascade_all_gather_<f16|bf16|f32>(in, out, gather_axis,
/// grid_axes_mask)` on unranked memrefs (docs/multi_gpu.md), which gathers
/// over NCCL; the last gather over a `shard.grid` erases the grid (the host
/// code's LLVM translation has no shard dialect). The upstream route
/// (`convert-shard-to-mpi`) needs MPI.
void registerCollectiveBufferizationExternalModels(DialectRegistry &registry);
} // namespace cascade
} // namespace mlir

#endif
