//===- CompileBundle.h - Kernel bundles from configurations -----*- C++ -*-===//
//
// The compiler's entry point for an embedder that has a configuration, not
// IR: build the kernels of a bundle key (cascade/Contract/BundleKey.h) with
// the dialect's builders (IRBuilders.h), lower them with cascade-to-ptx and
// write the bundle (docs/kernel-bundle.md). The Python package's compiler
// module and the self-contained `cascade-compile` executable both call it.
//
//===----------------------------------------------------------------------===//

#ifndef CASCADE_BUILDERS_COMPILEBUNDLE_H
#define CASCADE_BUILDERS_COMPILEBUNDLE_H

#include "cascade/Contract/BundleKey.h"

#include <string>
#include <vector>

namespace llvm {
class ThreadPoolInterface;
} // namespace llvm

namespace cascade::builders {

/// How a bundle is compiled.
struct CompileOptions {
  std::string chip = "sm_90";
  /// "" for the chip's defaultFeatures.
  std::string features;
  /// One PTX file per kernel (docs/kernel-bundle.md), each kernel lowered
  /// and code-generated apart: in parallel on `threads`, and assembled by
  /// one ptxas each. Every kernel's PTX is the one of the single file.
  bool ptxPerKernel = false;
  /// Threads for the kernels of the bundle (the context's thread pool; may
  /// be shared by concurrent compilations). None: this thread only.
  llvm::ThreadPoolInterface *threads = nullptr;
  /// Print the pipeline's pass timing (as --mlir-timing) and each
  /// gpu.module's nested passes and serialization times to stderr.
  bool timing = false;
  /// LLVM's optimisation level for the NVPTX code generation (3, the
  /// default, is what every bundle is built with; for measurements).
  unsigned optLevel = 3;
  /// cascade-select-kernel-config options for tuning experiments
  /// (CascadeToPTXOptions::selectOptions); "" for the defaults that every
  /// bundle is built with.
  std::string selectOptions;
};

/// The PTX features a chip's bundles are lowered with (sm_100 and newer
/// need PTX 8.6; older chips PTX 8.0).
std::string defaultFeatures(const std::string &chip);

/// Compiles the unsplit and split kernels of every group of `config` into
/// a bundle in `dir` (an existing, empty directory). Returns "" or the
/// error, with every diagnostic. Thread-safe: each call has its own
/// MLIRContext.
std::string
compileAttentionBundle(const contract::AttentionConfig &config,
                       const std::vector<contract::AttentionGroup> &groups,
                       const std::string &dir, const std::string &chip,
                       const std::string &features);

/// merge_state, merge_state_in_place (plain and masked) and merge_states of
/// `vType` states with `headDim`, into a bundle in `dir`.
std::string compileMergeBundle(contract::DType vType, int64_t headDim,
                               const std::string &dir, const std::string &chip,
                               const std::string &features);

/// The bundle of `key` (one group, or the merges) into `dir`.
std::string compileBundle(const contract::BundleKey &key,
                          const std::string &dir,
                          const CompileOptions &options);
std::string compileBundle(const contract::BundleKey &key,
                          const std::string &dir, const std::string &chip,
                          const std::string &features);

} // namespace cascade::builders

#endif // CASCADE_BUILDERS_COMPILEBUNDLE_H
