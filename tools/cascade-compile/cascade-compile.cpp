//===- cascade-compile.cpp - Kernel bundles by key ------------------------===//
//
// The compiler as the Python package (or any embedder without MLIR) runs it:
//
//   cascade-compile --out ROOT [--chip sm_90,sm_90a] [-j N] KEY...
//
// compiles the bundle of every key (cascade/Contract/BundleKey.h) for every
// chip into ROOT/<chip>/<key>/ (manifest.json and one <kernel>.ptx per
// kernel, or kernels.ptx with --ptx-per-kernel=false), the layout of the
// package's kernel cache. The kernels of all bundles are lowered and
// code-generated in parallel on one pool of threads (--kernel-threads), so
// that a bundle takes about as long as its largest kernel. A bundle already
// there is kept. Each bundle is written to a temporary directory beside it and
// renamed into place, under an exclusive lock on ROOT/<chip>/.<key>.lock, so
// that processes and threads asking for the same key at once compile it once
// and never see half a bundle. Prints one line per bundle (`built|cached <chip>
// <key> <seconds>`) and exits non-zero if any failed (each error on stderr).
//
// Built with -DCASCADE_STATIC_COMPILER=ON it links LLVM and MLIR statically
// and needs nothing but the C library: the compiler that travels with the
// package.
//
//===----------------------------------------------------------------------===//

#include "cascade/Builders/CompileBundle.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/ThreadPool.h"
#include "llvm/Support/Threading.h"
#include "llvm/Support/raw_ostream.h"

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <mutex>
#include <optional>
#include <thread>

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

namespace cl = llvm::cl;
namespace contract = cascade::contract;

static cl::OptionCategory category("cascade-compile options");
static cl::list<std::string> keys(cl::Positional, cl::desc("<bundle key>..."),
                                  cl::cat(category));
static cl::opt<std::string> outRoot("out", cl::desc("output root directory"),
                                    cl::value_desc("dir"), cl::cat(category));
static cl::opt<std::string> chips("chip",
                                  cl::desc("target chip(s), comma-separated"),
                                  cl::init("sm_90"), cl::cat(category));
static cl::opt<std::string>
    features("features",
             cl::desc("PTX features (default: by chip, +ptx80 / +ptx86)"),
             cl::cat(category));
static cl::opt<unsigned> jobs("j",
                              cl::desc("parallel compilations (0: one "
                                       "per hardware thread)"),
                              cl::init(0), cl::cat(category));
static cl::opt<bool> ptxPerKernel(
    "ptx-per-kernel",
    cl::desc("one PTX file per kernel, the kernels compiled in parallel "
             "(default; =false: every kernel in kernels.ptx)"),
    cl::init(true), cl::cat(category));
static cl::opt<unsigned>
    kernelThreads("kernel-threads",
                  cl::desc("threads shared by the kernels of all bundles "
                           "(with --ptx-per-kernel; 0: one per hardware "
                           "thread, 1: none)"),
                  cl::init(0), cl::cat(category));
static cl::opt<bool> timing("timing",
                            cl::desc("print each bundle's pass timing to "
                                     "stderr (as --mlir-timing)"),
                            cl::cat(category));
static cl::opt<unsigned>
    optLevel("opt-level",
             cl::desc("LLVM optimisation level of the PTX code generation "
                      "(0..3; every bundle is built with 3: to measure)"),
             cl::init(3), cl::cat(category));
static cl::opt<std::string> selectOptions(
    "select",
    cl::desc("options of cascade-select-kernel-config, as \"rows-threads=256 "
             "rows-min-blocks-per-sm=5\" (tuning experiments: the bundle's "
             "key does not record them)"),
    cl::cat(category));
static cl::opt<bool> parseOnly(
    "parse-keys",
    cl::desc("only parse the keys: print each in its normal spelling"),
    cl::cat(category));

namespace {
struct Task {
  std::string key, chip;
  contract::BundleKey parsed;
};

/// Holds an exclusive flock on `path` while alive.
class FileLock {
public:
  explicit FileLock(const std::string &path)
      : fd(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644)) {
    if (fd >= 0)
      while (::flock(fd, LOCK_EX) != 0 && errno == EINTR) {
      }
  }
  ~FileLock() {
    if (fd >= 0)
      ::close(fd);
  }
  bool ok() const { return fd >= 0; }

private:
  int fd;
};

bool haveBundle(const std::string &dir) {
  return llvm::sys::fs::exists(dir + "/manifest.json");
}

/// Threads for the kernels of every bundle (none: each on its own thread).
llvm::ThreadPoolInterface *kernelPool = nullptr;

/// Compiles one task; "" or the error.
std::string run(const Task &t, double &seconds, bool &cached) {
  llvm::SmallString<256> chipDir(outRoot);
  llvm::sys::path::append(chipDir, t.chip);
  if (std::error_code ec = llvm::sys::fs::create_directories(chipDir))
    return "cannot create " + std::string(chipDir) + ": " + ec.message();
  std::string dest = (chipDir + "/" + t.key).str();
  cached = haveBundle(dest);
  if (cached)
    return "";
  // Hidden, as the temporary directories are, from whatever lists bundles.
  std::string lockPath = (chipDir + "/." + t.key + ".lock").str();
  FileLock lock(lockPath);
  if (!lock.ok())
    return "cannot lock " + lockPath;
  cached = haveBundle(dest); // another process built it while we waited
  if (cached)
    return "";
  llvm::SmallString<256> tmp;
  if (std::error_code ec = llvm::sys::fs::createUniqueDirectory(
          (chipDir + "/.build-" + t.key).str(), tmp))
    return "cannot create a temporary directory: " + ec.message();
  // Readable by all, as a bundle the package ships is.
  if (std::error_code ec =
          llvm::sys::fs::setPermissions(tmp, llvm::sys::fs::perms(0755)))
    return "cannot make " + std::string(tmp) + " readable: " + ec.message();
  auto start = std::chrono::steady_clock::now();
  cascade::builders::CompileOptions options;
  options.chip = t.chip;
  options.features = features;
  options.ptxPerKernel = ptxPerKernel;
  options.threads = kernelPool;
  options.timing = timing;
  options.optLevel = optLevel;
  options.selectOptions = selectOptions;
  std::string err =
      cascade::builders::compileBundle(t.parsed, std::string(tmp), options);
  seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  if (err.empty()) {
    // A stale partial copy (no manifest) is replaced.
    std::error_code ec;
    if (llvm::sys::fs::exists(dest))
      ec = llvm::sys::fs::remove_directories(dest);
    if (!ec)
      ec = llvm::sys::fs::rename(tmp, dest);
    if (ec)
      err = "cannot rename the bundle into " + dest + ": " + ec.message();
  }
  if (!err.empty()) {
    // Best effort: a leftover temporary directory is hidden and harmless.
    std::error_code ignored = llvm::sys::fs::remove_directories(tmp);
    (void)ignored;
  }
  return err;
}
} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  cl::HideUnrelatedOptions(category);
  cl::ParseCommandLineOptions(
      argc, argv,
      "cascade-compile: kernel bundles by key (docs/kernel-bundle.md)\n");
  std::vector<Task> tasks;
  bool bad = false;
  llvm::SmallVector<llvm::StringRef> chipList;
  llvm::StringRef(chips).split(chipList, ',', -1, false);
  for (const std::string &key : keys) {
    contract::BundleKey parsed;
    if (std::string why = contract::parseBundleKey(key, parsed); !why.empty()) {
      llvm::errs() << "error: " << why << "\n";
      bad = true;
      continue;
    }
    if (parseOnly) {
      llvm::outs() << parsed.str() << "\n";
      continue;
    }
    for (llvm::StringRef chip : chipList)
      tasks.push_back({key, chip.str(), parsed});
  }
  if (parseOnly || bad)
    return bad ? 1 : 0;
  if (outRoot.empty()) {
    llvm::errs() << "error: --out ROOT is required\n";
    return 2;
  }
  // createUniqueDirectory puts a relative path under the system's temporary
  // directory: the root is made absolute first.
  llvm::SmallString<256> absRoot(outRoot);
  if (std::error_code ec = llvm::sys::fs::make_absolute(absRoot)) {
    llvm::errs() << "error: " << outRoot << ": " << ec.message() << "\n";
    return 2;
  }
  outRoot = std::string(absRoot);
  if (optLevel > 3) {
    llvm::errs() << "error: --opt-level must be 0..3\n";
    return 2;
  }
  std::optional<llvm::DefaultThreadPool> pool;
  if (ptxPerKernel && kernelThreads != 1) {
    pool.emplace(llvm::hardware_concurrency(kernelThreads));
    kernelPool = &*pool;
  }

  std::atomic<size_t> next{0};
  std::atomic<bool> failed{false};
  std::mutex io;
  auto worker = [&] {
    for (size_t i = next++; i < tasks.size(); i = next++) {
      double seconds = 0;
      bool cached = false;
      std::string err = run(tasks[i], seconds, cached);
      std::lock_guard<std::mutex> g(io);
      if (!err.empty()) {
        failed = true;
        llvm::errs() << "error: " << tasks[i].chip << " " << tasks[i].key
                     << ": " << err << "\n";
        continue;
      }
      char secs[32];
      std::snprintf(secs, sizeof secs, "%.3f", seconds);
      llvm::outs() << (cached ? "cached " : "built ") << tasks[i].chip << " "
                   << tasks[i].key << " " << secs << "\n";
      llvm::outs().flush();
    }
  };
  unsigned n = jobs ? unsigned(jobs) : std::thread::hardware_concurrency();
  n = std::max(1u, std::min<unsigned>(n, tasks.size()));
  std::vector<std::thread> threads;
  for (unsigned i = 1; i < n; ++i)
    threads.emplace_back(worker);
  worker();
  for (std::thread &t : threads)
    t.join();
  return failed ? 1 : 0;
}
