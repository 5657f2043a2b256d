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

namespace cascade::builders {

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
                          const std::string &dir, const std::string &chip,
                          const std::string &features);

} // namespace cascade::builders

#endif // CASCADE_BUILDERS_COMPILEBUNDLE_H
