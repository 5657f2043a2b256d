//===- BufferizableOpInterfaceImpl.h - One-Shot Bufferize -------*- C++ -*-===//

#ifndef CASCADE_DIALECT_CASCADE_TRANSFORMS_BUFFERIZABLEOPINTERFACEIMPL_H
#define CASCADE_DIALECT_CASCADE_TRANSFORMS_BUFFERIZABLEOPINTERFACEIMPL_H

namespace mlir {
class DialectRegistry;
namespace cascade {
/// Attaches the BufferizableOpInterface to every cascade op, so that
/// One-Shot Bufferize turns their tensor form into the memref form.
void registerBufferizableOpInterfaceExternalModels(DialectRegistry &registry);
} // namespace cascade
} // namespace mlir

#endif
