//===- Manifest.h - Kernel bundles and argument binding ---------*- C++ -*-===//
//
// Reads a kernel bundle (docs/kernel-bundle.md: manifest.json + PTX) and
// turns named arguments into the flat parameter list of cuLaunchKernel plus
// the launch grid. Nothing here touches the GPU, so it is unit-testable.
//
//===----------------------------------------------------------------------===//

#ifndef CASCADE_RUNTIME_MANIFEST_H
#define CASCADE_RUNTIME_MANIFEST_H

#include "cascade/Runtime/Plan.h"
#include "cascade/Runtime/Status.h"

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace cascade::runtime {

enum class ParamKind { Memref, Ptr, I32, I64, F32 };
const char *paramKindName(ParamKind kind);

/// One kernel parameter of the manifest.
struct ParamSpec {
  std::string name;
  ParamKind kind = ParamKind::I64;
  std::string dtype; ///< element type of memref/ptr ("" if not given)
  /// A scalar's value where the argument table binds none (the manifest's
  /// "default": the contiguous strides of q and o).
  std::optional<int64_t> defaultValue;
};

/// One grid entry: a constant, or ceil(value(param) * mul / div) +
/// value(add) (`add` optional: the self-scheduled tensor-core prefill needs
/// ceil(rows * G / q_tile) + batch_size blocks).
struct GridDim {
  int64_t value = 1;
  std::string param; ///< empty: constant
  int64_t div = 1;
  int64_t mul = 1;
  std::string add; ///< empty: nothing added
};

/// One kernel of a bundle.
struct KernelSpec {
  std::string name; ///< PTX .entry name
  std::string ptx;  ///< PTX file, relative to the bundle directory
  std::string op;
  std::array<int64_t, 3> block{1, 1, 1};
  std::array<GridDim, 3> grid;
  int64_t dynamicSharedBytes = 0;
  /// The members of the "static" object in manifest order, each value as
  /// text: strings unquoted ("f16"), integers and booleans as written
  /// ("128", "true"), other numbers in their shortest exact form ("1.5",
  /// "1e-05"), arrays and objects as one-line JSON.
  std::vector<std::pair<std::string, std::string>> statics;
  std::vector<ParamSpec> params;
  std::vector<std::string> planArrays;
  /// The manifest's "pdl": the kernel may be launched as a programmatic
  /// dependent of the kernel before it.
  bool pdl = false;

  /// A "static" value as text ("128", "f16", "true"); "" if absent.
  std::string staticString(const std::string &key) const;
  /// Number of PTX-level parameters (a memref counts five).
  int64_t numPtxParams() const;
};

/// A parsed bundle: the manifest and the PTX text of every file it names.
struct Bundle {
  std::string dir;
  int64_t version = 0;
  std::string chip, features;
  std::vector<KernelSpec> kernels;
  std::map<std::string, std::string> ptx; ///< file -> text (NUL-free)

  const KernelSpec *find(const std::string &name) const;
  /// The first kernel of `op` whose statics match every (key, value).
  const KernelSpec *
  select(const std::string &op,
         const std::vector<std::pair<std::string, std::string>> &statics) const;
};

/// Checks the statics `kernel` was specialised on against the plan of the
/// level it runs: page_size, head_dim, num_qo_heads and num_kv_heads, and,
/// where the caller states the level's dtypes (`inputs`, the PlanInputs the
/// plan was made from), q_dtype, kv_dtype, o_dtype and a merge kernel's
/// v_dtype (the output's). A static the kernel does not carry is not
/// checked (merge kernels carry only head_dim, num_qo_heads and v_dtype).
/// A size that differs is ErrorCode::SizeMismatch, a dtype
/// ErrorCode::InvalidArgument, e.g. "kernel K was built for page_size 16,
/// the plan has 8".
Status checkKernelStatics(const KernelSpec &kernel, const Plan &plan,
                          const PlanInputs *inputs = nullptr);

/// Parses manifest.json text (no file access). Malformed JSON is
/// ErrorCode::Parse with the line and column, content errors
/// ErrorCode::Schema naming the kernel and the key.
Status parseManifest(std::string_view json, Bundle &out);
/// Reads DIR/manifest.json and every PTX file it names.
Status loadBundle(const std::string &dir, Bundle &out);
/// Reads a whole file.
Status readFile(const std::string &path, std::string &out);

//===----------------------------------------------------------------------===//
// Argument binding
//===----------------------------------------------------------------------===//

/// What a name is bound to: a device buffer, a scalar, or both (plan values
/// such as kv_chunk_size exist as a scalar and as a one-element buffer).
struct Binding {
  bool hasBuffer = false;
  uint64_t ptr = 0;
  int64_t count = 0;
  std::string dtype; ///< "" = unchecked
  bool hasScalar = false;
  bool isFloat = false;
  int64_t intValue = 0;
  double floatValue = 0;
};

/// Named arguments of a launch.
class ArgumentTable {
public:
  void setBuffer(const std::string &name, uint64_t ptr, int64_t count,
                 const std::string &dtype = "");
  void setInt(const std::string &name, int64_t value);
  void setFloat(const std::string &name, double value);
  const Binding *find(const std::string &name) const;
  /// Copies every binding of `other` (overwriting).
  void merge(const ArgumentTable &other);

private:
  std::map<std::string, Binding> bindings_;
};

/// Binds every int section of the plan's int workspace (device address
/// `intWorkspace` of this plan's first byte), tmp_v/tmp_s of its float
/// workspace, and every plan scalar (Plan::scalar names).
void addPlanBindings(ArgumentTable &table, const Plan &plan,
                     uint64_t intWorkspace, uint64_t floatWorkspace);

/// A bound launch: grid, block and the cuLaunchKernel parameter slots.
struct KernelLaunch {
  std::array<uint32_t, 3> grid{1, 1, 1};
  std::array<uint32_t, 3> block{1, 1, 1};
  uint32_t sharedBytes = 0;
  /// One 8-byte slot per PTX parameter (i32/f32 in the low 4 bytes).
  std::vector<uint64_t> slots;
  /// "q.aligned", "num_rows", ... for messages and tests.
  std::vector<std::string> slotNames;

  /// True when some grid dimension is 0 (nothing to launch).
  bool empty() const { return grid[0] == 0 || grid[1] == 0 || grid[2] == 0; }
  /// Pointers to the slots, as cuLaunchKernel's kernelParams.
  std::vector<void *> paramPointers();
};

/// Binds `kernel`'s params from `table` and computes its grid; a scalar
/// param the table lacks takes its manifest default where it has one.
/// Errors name the kernel and the parameter (missing binding, buffer vs
/// scalar, dtype).
Status bindKernel(const KernelSpec &kernel, const ArgumentTable &table,
                  KernelLaunch &out);

} // namespace cascade::runtime

#endif // CASCADE_RUNTIME_MANIFEST_H
