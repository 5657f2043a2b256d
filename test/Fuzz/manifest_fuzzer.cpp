//===- manifest_fuzzer.cpp - Fuzz kernel-bundle manifests -----------------===//
//
// libFuzzer target: the input is a manifest.json. Every kernel of an
// accepted manifest is queried and bound with arguments whose values (often
// extreme) depend on the parameter names, so grid arithmetic and range
// checks see int32/int64 limits; the manifest is then loaded as a bundle
// (loadBundle: the manifest, then the PTX files it names, from a scratch
// directory that holds one PTX file).
//
//===----------------------------------------------------------------------===//

#include "FuzzCheck.h"
#include "cascade/Runtime/Manifest.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <limits>
#include <string>
#include <unistd.h>

using namespace cascade::runtime;

namespace {

const int64_t kValues[] = {0,
                           1,
                           7,
                           4096,
                           std::numeric_limits<int32_t>::max(),
                           int64_t(1) << 31,
                           int64_t(1) << 32,
                           std::numeric_limits<int64_t>::max(),
                           std::numeric_limits<int64_t>::max() - 1,
                           -1,
                           std::numeric_limits<int64_t>::min()};

/// A scratch bundle directory with one PTX file, kernels.ptx, that names
/// the kernels of the seed manifests.
const std::string &scratchDir() {
  static const std::string dir = [] {
    char tmpl[] = "/tmp/cascade-manifest-fuzz-XXXXXX";
    FUZZ_CHECK(mkdtemp(tmpl) != nullptr);
    std::ofstream(std::string(tmpl) + "/kernels.ptx")
        << "// PTX stand-in\n.entry k\n.entry cascade_merge_state_f16_d128\n"
           ".entry cascade_decode_split_f16_d128\n";
    return std::string(tmpl);
  }();
  return dir;
}

void bindEveryKernel(const Bundle &b) {
  for (size_t i = 0; i < b.kernels.size(); ++i) {
    const KernelSpec &k = b.kernels[i];
    FUZZ_CHECK(k.numPtxParams() >= static_cast<int64_t>(k.params.size()));
    for (const auto &kv : k.statics)
      FUZZ_CHECK(k.staticString(kv.first) ==
                 b.kernels[i].staticString(kv.first));
    FUZZ_CHECK(b.find(k.name) == &k);
    FUZZ_CHECK(b.select(k.op, k.statics) != nullptr);

    ArgumentTable table;
    auto value = [&](const std::string &name) {
      size_t h = std::hash<std::string>()(name) + i;
      return kValues[h % (sizeof(kValues) / sizeof(kValues[0]))];
    };
    for (const ParamSpec &p : k.params) {
      if (p.kind == ParamKind::Memref || p.kind == ParamKind::Ptr)
        table.setBuffer(p.name, 0x10000, value(p.name), p.dtype);
      else if (p.kind == ParamKind::F32)
        table.setFloat(p.name, static_cast<double>(value(p.name)));
      else
        table.setInt(p.name, value(p.name));
    }
    for (const GridDim &g : k.grid)
      if (!g.param.empty() && !table.find(g.param))
        table.setInt(g.param, value(g.param));
    KernelLaunch launch;
    Status s = bindKernel(k, table, launch);
    if (s.ok()) {
      FUZZ_CHECK(static_cast<int64_t>(launch.slots.size()) == k.numPtxParams());
      FUZZ_CHECK(launch.slots.size() == launch.slotNames.size());
      FUZZ_CHECK(launch.paramPointers().size() == launch.slots.size());
    } else {
      FUZZ_CHECK(!s.message().empty());
    }
  }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const std::string text(reinterpret_cast<const char *>(data), size);

  Bundle parsed;
  Status s = parseManifest(text, parsed);
  if (!s.ok()) {
    FUZZ_CHECK(!s.message().empty() &&
               s.message().find('\n') == std::string::npos);
    return 0;
  }
  bindEveryKernel(parsed);

  // An accepted manifest is loaded as a bundle too (file access is slow, so
  // only for these).
  const std::string &dir = scratchDir();
  {
    std::ofstream f(dir + "/manifest.json", std::ios::binary);
    f.write(text.data(), static_cast<std::streamsize>(text.size()));
  }
  Bundle loaded;
  Status l = loadBundle(dir, loaded);
  if (l.ok()) {
    FUZZ_CHECK(loaded.kernels.size() == parsed.kernels.size());
    for (const KernelSpec &k : loaded.kernels)
      FUZZ_CHECK(loaded.ptx.count(k.ptx) == 1);
  }
  return 0;
}
