//===- MergeOps.cpp - cascade_mlir._runtime.MergeOps ----------------------===//
//
// The merges' one-call path for torch CUDA tensors (merge_state,
// merge_state_in_place, merge_states): checks, output allocation and a
// launch bound once per size, from Python (_gpu.MERGES) or as C functions
// for the torch bridge's merge ops.
//
//===----------------------------------------------------------------------===//

#include "BridgeTables.h"
#include "GpuDevice.h"
#include "GpuModule.h"
#include "TensorArgs.h"
#include "TorchBridgeABI.h"

#include "cascade/Runtime/Program.h"

#include <array>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

namespace py = pybind11;
using namespace cascade::runtime;

namespace cascade::python {

namespace {

/// The merges' fast path for torch CUDA tensors: checks, output allocation
/// and the launch in one call, no Python frame and no dict. Every method
/// returns None (and launches nothing) when it does not take the call:
/// not torch CUDA tensors, or any check failing; _merge.py then runs its
/// Python path, which names the offending argument in its error. The same
/// merges as C functions on tensors the torch bridge describes (outputs it
/// allocated) serve its kernels of the merges' torch ops (capsule()).
class MergeOps {
public:
  /// resolver(ordinal, dtype name, head_dim) -> (Device, {role: kernel})
  /// (cascade_mlir._gpu.merge_kernels: loads, or compiles, the bundle).
  explicit MergeOps(py::object resolver) : resolver_(std::move(resolver)) {
    table_.abi = CASCADE_TORCH_BRIDGE_ABI;
    table_.size = sizeof(table_);
    table_.self = this;
    table_.merge_state = [](void *self, const CascadeTorchTensor *t,
                            uint64_t stream) {
      return calledFromC([&] {
        return static_cast<MergeOps *>(self)->mergeStateFromC(t, stream);
      });
    };
    table_.merge_state_in_place = [](void *self, const CascadeTorchTensor *t,
                                     uint64_t stream) {
      return calledFromC([&] {
        return static_cast<MergeOps *>(self)->mergeStateInPlaceFromC(t, stream);
      });
    };
    table_.merge_states = [](void *self, const CascadeTorchTensor *t,
                             uint64_t stream) {
      return calledFromC([&] {
        return static_cast<MergeOps *>(self)->mergeStatesFromC(t, stream);
      });
    };
  }

  /// The C table of the merges (TorchBridgeABI.h) in a capsule that keeps
  /// `self` (this MergeOps) alive.
  static py::object capsule(py::object self) {
    MergeOps &m = self.cast<MergeOps &>();
    return tableCapsule(&m.table_, CASCADE_RUNTIME_MERGES_CAPSULE,
                        std::move(self));
  }

  py::object mergeState(py::handle va, py::handle sa, py::handle vb,
                        py::handle sb) {
    State a, b;
    if (!readState(va, sa, a) || !readState(vb, sb, b) || !same(a, b))
      return py::none();
    Kernels *k = kernels(a);
    if (!k)
      return py::none();
    TensorArg tv, ts;
    py::object v = torchEmptyLike(va, a.v, tv), s = torchEmptyLike(sa, a.s, ts);
    launchMergeState(*k, a, b, tv, ts, torchCurrentStream(a.v.device));
    return py::make_tuple(v, s);
  }
  int mergeStateFromC(const CascadeTorchTensor *t, uint64_t stream) {
    State a, b;
    if (!readState(t[0], t[1], a) || !readState(t[2], t[3], b) || !same(a, b))
      return 1;
    const TensorArg tv = fromBridge(t[4]), ts = fromBridge(t[5]);
    if (!sameLayout(tv, a.v) || !sameLayout(ts, a.s))
      return 1;
    Kernels *k = kernels(a);
    if (!k)
      return 1;
    launchMergeState(*k, a, b, tv, ts, static_cast<int64_t>(stream));
    return 0;
  }

  py::object mergeStateInPlace(py::handle v, py::handle s, py::handle vo,
                               py::handle so, py::handle mask) {
    State a, b;
    if (!readState(v, s, a) || !readState(vo, so, b) || !same(a, b))
      return py::none();
    if (!mask.is_none() && !isTorchTensor(mask))
      return py::none();
    const TensorArg m = mask.is_none() ? TensorArg() : probe(mask, "mask");
    if (!launchInPlace(a, b, mask.is_none() ? nullptr : &m,
                       torchCurrentStream(a.v.device)))
      return py::none();
    return py::bool_(true);
  }
  int mergeStateInPlaceFromC(const CascadeTorchTensor *t, uint64_t stream) {
    State a, b;
    if (!readState(t[0], t[1], a) || !readState(t[2], t[3], b) || !same(a, b))
      return 1;
    const TensorArg m = t[4].ndim < 0 ? TensorArg() : fromBridge(t[4]);
    return launchInPlace(a, b, t[4].ndim < 0 ? nullptr : &m,
                         static_cast<int64_t>(stream))
               ? 0
               : 1;
  }

  py::object mergeStates(py::handle v, py::handle s) {
    if (!isTorchTensor(v) || !isTorchTensor(s))
      return py::none();
    State st;
    st.v = probe(v, "v");
    st.s = probe(s, "s");
    Kernels *k = readStates(st);
    if (!k)
      return py::none();
    TensorArg vOut, sOut;
    py::object vo = torchEmptyStrided(statesOut(st.v, 3), vOut);
    py::object so = torchEmptyStrided(statesOut(st.s, 2), sOut);
    launchMergeStates(*k, st, vOut, sOut, torchCurrentStream(st.v.device));
    return py::make_tuple(vo, so);
  }
  int mergeStatesFromC(const CascadeTorchTensor *t, uint64_t stream) {
    State st;
    st.v = fromBridge(t[0]);
    st.s = fromBridge(t[1]);
    Kernels *k = readStates(st);
    const TensorArg vOut = fromBridge(t[2]), sOut = fromBridge(t[3]);
    if (!k || !sameLayout(vOut, statesOut(st.v, 3)) ||
        !sameLayout(sOut, statesOut(st.s, 2)))
      return 1;
    launchMergeStates(*k, st, vOut, sOut, static_cast<int64_t>(stream));
    return 0;
  }

private:
  struct State {
    TensorArg v, s;
    int64_t rows = 0, heads = 0;
  };
  struct Kernels {
    std::shared_ptr<Device> device;
    std::string mergeState, inPlace, inPlaceMask, mergeStates;
  };

  static bool isValueType(ElemType t) {
    return t == ElemType::F16 || t == ElemType::BF16 || t == ElemType::F32;
  }

  /// v [rows, heads, dim] f16/bf16/f32 and s [rows, heads] f32, contiguous
  /// CUDA torch tensors on one device, dim a multiple of 8.
  static bool readState(py::handle v, py::handle s, State &st) {
    if (!isTorchTensor(v) || !isTorchTensor(s))
      return false;
    st.v = probe(v, "v");
    st.s = probe(s, "s");
    return validState(st);
  }
  static bool readState(const CascadeTorchTensor &v,
                        const CascadeTorchTensor &s, State &st) {
    st.v = fromBridge(v);
    st.s = fromBridge(s);
    return validState(st);
  }
  static bool validState(State &st) {
    const TensorArg &a = st.v, &b = st.s;
    if (!a.cuda || a.ndim != 3 || !isValueType(a.dtype) || !a.contiguous() ||
        a.shape[2] % 8 || !b.cuda || b.device != a.device ||
        b.dtype != ElemType::F32 || b.ndim != 2 || b.shape[0] != a.shape[0] ||
        b.shape[1] != a.shape[1] || !b.contiguous())
      return false;
    st.rows = a.shape[0];
    st.heads = a.shape[1];
    return true;
  }
  static bool same(const State &a, const State &b) {
    return a.v.device == b.v.device && a.v.dtype == b.v.dtype &&
           a.v.shape[0] == b.v.shape[0] && a.v.shape[1] == b.v.shape[1] &&
           a.v.shape[2] == b.v.shape[2];
  }
  /// An output the torch bridge allocated: `like`'s device, dtype and
  /// shape, contiguous.
  static bool sameLayout(const TensorArg &out, const TensorArg &like) {
    if (out.cuda != like.cuda || out.device != like.device ||
        out.dtype != like.dtype || out.ndim != like.ndim || !out.contiguous())
      return false;
    for (int i = 0; i < out.ndim; ++i)
      if (out.shape[i] != like.shape[i])
        return false;
    return true;
  }
  /// merge_states' inputs, v [rows, n, heads, dim] f16/bf16/f32 and s
  /// [rows, n, heads] f32, contiguous CUDA tensors on one device (dim a
  /// multiple of 8), and their kernels; nullptr when not taken.
  Kernels *readStates(State &st) {
    const TensorArg &tv = st.v, &ts = st.s;
    if (!tv.cuda || tv.ndim != 4 || !isValueType(tv.dtype) ||
        !tv.contiguous() || tv.shape[3] % 8 || !ts.cuda ||
        ts.device != tv.device || ts.dtype != ElemType::F32 || ts.ndim != 3 ||
        !ts.contiguous() || ts.shape[0] != tv.shape[0] ||
        ts.shape[1] != tv.shape[1] || ts.shape[2] != tv.shape[2])
      return nullptr;
    st.rows = tv.shape[0];
    st.heads = tv.shape[2];
    return kernels(st);
  }
  /// merge_states' output of input `in` (v: rank 3, s: rank 2): its dtype
  /// and device, [rows, heads(, dim)], contiguous.
  static TensorArg statesOut(const TensorArg &in, int rank) {
    TensorArg a = in;
    a.ndim = rank;
    a.shape[1] = in.shape[2];
    if (rank == 3)
      a.shape[2] = in.shape[3];
    a.setRowMajorStrides();
    return a;
  }

  void launchMergeState(Kernels &k, const State &a, const State &b,
                        const TensorArg &v, const TensorArg &s,
                        int64_t stream) {
    Args t;
    setState(t, "v_a", "s_a", a);
    setState(t, "v_b", "s_b", b);
    t.buffer("v", v);
    t.buffer("s", s);
    t.integer("num_tasks", a.rows * a.heads);
    launch(k, k.mergeState, t, stream);
  }

  /// merge_state_in_place, with `mask` (a bool / uint8 / int8 [rows]
  /// tensor on the states' device, any positive stride) when not null;
  /// false, launching nothing, when it does not take the call.
  bool launchInPlace(const State &a, const State &b, const TensorArg *mask,
                     int64_t stream) {
    Kernels *k = kernels(a);
    if (!k)
      return false;
    Args t;
    setState(t, "v", "s", a);
    setState(t, "v_other", "s_other", b);
    t.integer("num_tasks", a.rows * a.heads);
    t.integer("num_heads", a.heads);
    const std::string *kernel = &k->inPlace;
    if (mask) {
      TensorArg m = *mask;
      const bool byte = m.dtype == ElemType::Bool || m.dtype == ElemType::U8 ||
                        m.dtype == ElemType::I8;
      const int64_t stride = m.ndim == 1 ? m.strides[0] : 0;
      if (!m.cuda || m.device != a.v.device || !byte || m.ndim != 1 ||
          m.shape[0] != a.rows || (a.rows && stride < 1))
        return false;
      m.shape[0] = a.rows ? (a.rows - 1) * stride + 1 : 0; // elements read
      t.buffer("mask", m);
      t.integer("mask_stride", a.rows ? stride : 1);
      kernel = &k->inPlaceMask;
    }
    launch(*k, *kernel, t, stream);
    return true;
  }

  void launchMergeStates(Kernels &k, const State &st, const TensorArg &v,
                         const TensorArg &s, int64_t stream) {
    Args t;
    t.buffer("v_in", st.v);
    t.buffer("s_in", st.s);
    t.buffer("v", v);
    t.buffer("s", s);
    t.integer("num_tasks", st.rows * st.heads);
    t.integer("num_states", st.v.shape[1]);
    t.integer("num_heads", st.heads);
    launch(k, k.mergeStates, t, stream);
  }

  /// One call's arguments: at most 6 buffers and 4 integers, by name
  /// (string literals: compared by address only when binding a template).
  struct Args {
    std::array<const char *, 6> bufNames{};
    std::array<uint64_t, 6> ptrs{};
    std::array<int64_t, 6> counts{};
    std::array<const char *, 4> intNames{};
    std::array<int64_t, 4> ints{};
    int numBufs = 0, numInts = 0;
    void buffer(const char *name, const TensorArg &a) {
      bufNames[numBufs] = name;
      ptrs[numBufs] = a.ptr;
      counts[numBufs++] = a.numel();
    }
    void integer(const char *name, int64_t v) {
      intNames[numInts] = name;
      ints[numInts++] = v;
    }
  };
  static void setState(Args &t, const char *v, const char *s, const State &st) {
    t.buffer(v, st.v);
    t.buffer(s, st.s);
  }

  /// The merge kernels for the state's device, dtype and head_dim (the
  /// resolver's answer, cached); nullptr when the resolver has none.
  Kernels *kernels(const State &st) {
    const int64_t key = (static_cast<int64_t>(st.v.device) << 32) |
                        (static_cast<int64_t>(st.v.dtype) << 24) |
                        st.v.shape[st.v.ndim - 1];
    auto it = cache_.find(key);
    if (it != cache_.end())
      return &it->second;
    py::object r = resolver_(st.v.device, elemTypeName(st.v.dtype),
                             st.v.shape[st.v.ndim - 1]);
    if (r.is_none())
      return nullptr;
    py::tuple pair = r.cast<py::tuple>();
    Kernels k;
    k.device = pair[0].cast<std::shared_ptr<Device>>();
    py::dict roles = pair[1];
    k.mergeState = roles["merge_state"].cast<std::string>();
    k.inPlace = roles["merge_state_in_place"].cast<std::string>();
    k.inPlaceMask = roles["merge_state_in_place_mask"].cast<std::string>();
    k.mergeStates = roles["merge_states"].cast<std::string>();
    return &cache_.emplace(key, std::move(k)).first->second;
  }

  /// A kernel bound once for one set of integer arguments (they fix the
  /// grid): the launch's parameter slots, with the slots that hold the
  /// buffers' addresses and element counts patched per call. A serving
  /// loop calls a merge with the same sizes every layer, so binding (name
  /// lookups, the argument table) happens once per size, not per call.
  ///
  /// Launched as a one-node CUDA graph updated in place (as Program does:
  /// a graph launch plus a node update costs less host time than a
  /// cuLaunchKernel), kernel by kernel under stream capture (the kernel
  /// then becomes a node of the caller's graph) or without graph support.
  struct Bound {
    std::vector<PreparedLaunch> launches; ///< one
    std::vector<uint8_t> dirty{1};
    std::unique_ptr<KernelGraph> graph;
    std::vector<std::pair<size_t, int>> ptrSlots, countSlots;
    bool empty = false; ///< a 0-sized grid: nothing to launch
  };
  struct BoundKey {
    const std::string *kernel;
    std::array<int64_t, 4> ints;
    bool operator<(const BoundKey &o) const {
      return std::tie(kernel, ints) < std::tie(o.kernel, o.ints);
    }
  };

  /// Binds `kernel` through the launcher's recorder with stand-in addresses
  /// and counts (distinct, and out of reach of any real value), then finds
  /// the slots that hold them.
  Bound &bind(Kernels &k, const std::string &kernel, const Args &t) {
    BoundKey key{&kernel, t.ints};
    auto it = bound_.find(key);
    if (it != bound_.end())
      return it->second;
    auto ptrMark = [](int i) {
      return (0xCA5CULL << 48) | (uint64_t(i) << 40);
    };
    auto countMark = [](int i) {
      return int64_t((0x0ACEULL << 48) | (uint64_t(i) << 40));
    };
    ArgumentTable table;
    for (int i = 0; i < t.numBufs; ++i)
      table.setBuffer(t.bufNames[i], ptrMark(i), countMark(i));
    for (int i = 0; i < t.numInts; ++i)
      table.setInt(t.intNames[i], t.ints[i]);
    std::vector<PreparedLaunch> recorded;
    Launcher &l = k.device->launcher();
    l.setRecorder(&recorded);
    Status s = l.launch(kernel, table, nullptr);
    l.setRecorder(nullptr);
    check(s);
    Bound b;
    b.empty = recorded.empty();
    if (!b.empty) {
      b.launches.push_back(std::move(recorded.front()));
      const std::vector<uint64_t> &slots = b.launches[0].launch.slots;
      for (size_t j = 0; j < slots.size(); ++j)
        for (int i = 0; i < t.numBufs; ++i) {
          if (slots[j] == ptrMark(i))
            b.ptrSlots.emplace_back(j, i);
          else if (slots[j] == static_cast<uint64_t>(countMark(i)))
            b.countSlots.emplace_back(j, i);
        }
      b.launches[0].finalize();
    }
    return bound_.emplace(key, std::move(b)).first->second;
  }

  void launch(Kernels &k, const std::string &kernel, const Args &t,
              int64_t streamHandle) {
    Bound &b = bind(k, kernel, t);
    if (b.empty)
      return;
    PreparedLaunch &pl = b.launches[0];
    std::vector<uint64_t> &slots = pl.launch.slots;
    auto patch = [&](size_t slot, uint64_t value) {
      if (slots[slot] != value) {
        slots[slot] = value;
        b.dirty[0] = 1;
      }
    };
    for (const auto &[slot, i] : b.ptrSlots)
      patch(slot, t.ptrs[i]);
    for (const auto &[slot, i] : b.countSlots)
      patch(slot, static_cast<uint64_t>(t.counts[i]));
    Launcher &l = k.device->launcher();
    const runtime::Device &dev = l.device();
    const cuda::CUstream stream = asStream(streamHandle);
    check(l.makeCurrent());
    if (dev.canBuildGraphs() && !(b.graph && b.graph->failed()) &&
        !dev.isCapturing(stream)) {
      if (!b.graph)
        b.graph = std::make_unique<KernelGraph>(dev);
      if (b.graph->launch(b.launches, b.dirty, stream))
        return;
    }
    check(dev.launch(pl.function, pl.launch, pl.params.data(), stream, kernel));
    b.dirty[0] = 1; // the graph (if any) has not seen these slots
  }

  py::object resolver_;
  std::unordered_map<int64_t, Kernels> cache_;
  std::map<BoundKey, Bound> bound_;
  CascadeMergeOps table_{};
};

} // namespace

void bindMergeOps(py::module_ &m) {
  py::class_<MergeOps>(m, "MergeOps",
                       "The merges on torch CUDA tensors in one call (None: "
                       "not taken, use the checked path).")
      .def(py::init<py::object>(), py::arg("resolver"))
      .def("merge_state", &MergeOps::mergeState)
      .def("merge_state_in_place", &MergeOps::mergeStateInPlace)
      .def("merge_states", &MergeOps::mergeStates)
      .def("_capsule", &MergeOps::capsule,
           "The merges as C functions, for cascade_mlir._torch_bridge's "
           "kernels of the merges' torch ops (TorchBridgeABI.h).");
}

} // namespace cascade::python
