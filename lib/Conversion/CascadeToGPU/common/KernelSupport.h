//===- KernelSupport.h - Kernel modules, launches and manifests -*- C++ -*-===//
//
// Host-side helpers of convert-cascade-to-gpu: the kernel module, kernel
// parameters in manifest order, the manifest entry of a kernel, and the
// flattening of host buffers into the 1-D memrefs of the kernel ABI.
//
//===----------------------------------------------------------------------===//

#ifndef CASCADE_LIB_CONVERSION_CASCADETOGPU_COMMON_KERNELSUPPORT_H
#define CASCADE_LIB_CONVERSION_CASCADETOGPU_COMMON_KERNELSUPPORT_H

#include "cascade/Conversion/GPUCodegen/KernelBuilder.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/BuiltinOps.h"

#include <optional>
#include <string>

namespace mlir {
namespace cascade {

/// Name of the gpu.module holding every cascade kernel.
inline constexpr llvm::StringLiteral kKernelModuleName = "cascade_kernels";
/// Attribute (DictionaryAttr) on each gpu.func: its manifest entry.
inline constexpr llvm::StringLiteral kManifestAttrName = "cascade.manifest";
/// Attribute (ArrayAttr of dictionaries) on the top module, collected by the
/// conversion pass so that it survives gpu-module-to-binary.
inline constexpr llvm::StringLiteral kBundleAttrName = "cascade.bundle";

/// The kernel-side type of a flat buffer: memref<?xT, strided<[1],
/// offset: ?>> (ABI: 5 params ptr, ptr, offset, size, stride).
MemRefType flatMemRefType(Type elementType);

/// Host side: flattens a contiguous memref (identity layout) to memref<?xT>
/// over the same buffer. Returns {flat, numElements}.
std::pair<Value, Value> flattenContiguous(OpBuilder &b, Location loc, Value m);
/// Host side: flattens a 1-D strided memref to memref<?xT> starting at its
/// first element, covering (n-1)*stride+1 elements. Returns {flat, n, stride}
/// (index values).
std::tuple<Value, Value, Value> flattenStrided1D(OpBuilder &b, Location loc,
                                                 Value m);
/// Host side: flattens a memref of any strides to memref<?xT> starting at
/// its first element and covering the elements it spans (1 + sum of
/// (size - 1) * stride; 0 when empty): a q or o view whose strides are
/// kernel parameters.
Value flattenSpanned(OpBuilder &b, Location loc, Value m);

/// Gets (or creates) `gpu.module @cascade_kernels` in `module` and marks the
/// module a gpu.container_module.
gpu::GPUModuleOp getOrCreateKernelModule(ModuleOp module);

/// One kernel parameter in manifest order.
struct KernelParam {
  std::string name;
  std::string kind; // memref | i32 | i64 | f32
  Type type;        // memref<?xT> or scalar
  /// A scalar's value when the caller binds none (the manifest's
  /// "default"): the element strides of q and o are those of the
  /// contiguous layout unless a caller passes a strided view.
  std::optional<int64_t> defaultValue = std::nullopt;
};

/// Creates the gpu.func kernel `name` in the kernel module with `params`,
/// the known block size `block` and the given manifest dictionary;
/// `bodyBuilder` fills the body (the builder is at the start of the entry
/// block, args are the block args).
///
/// With `gridDependencies` (sm_90 and up) the kernel takes part in
/// programmatic dependent launch: its threads first wait for the grids it
/// was launched after (griddepcontrol.wait: complete, their writes visible;
/// a no-op for a plain launch), then let the grids launched after it start
/// (griddepcontrol.launch_dependents). Its manifest then gets "pdl": true,
/// which is what allows the runtime to launch it early.
gpu::GPUFuncOp
createKernel(gpu::GPUModuleOp module, StringRef name,
             ArrayRef<KernelParam> params, ArrayRef<int64_t> block,
             DictionaryAttr manifest,
             llvm::function_ref<void(OpBuilder &, gpu::GPUFuncOp)> bodyBuilder,
             bool gridDependencies = false);

/// Builds a manifest dictionary.
DictionaryAttr makeManifest(MLIRContext *ctx, StringRef name, StringRef op,
                            ArrayRef<int64_t> block, ArrayRef<Attribute> grid,
                            int64_t dynSmem, ArrayRef<NamedAttribute> statics,
                            ArrayRef<KernelParam> params,
                            ArrayRef<StringRef> planArrays);
/// A grid entry {"param": p, "div": k} (with "mul": m when m != 1:
/// ceil(p * m / k)).
Attribute gridRule(MLIRContext *ctx, StringRef param, int64_t div,
                   int64_t mul = 1, StringRef add = {});

} // namespace cascade
} // namespace mlir

#endif
