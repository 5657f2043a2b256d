"""cascade_mlir._torch_bridge on CUDA tensors: the probe agrees with the
Python path field by field, allocations land on the asked device with the
asked layout, and run() / the merges give bit-identical results with the
bridge and without it (torch through Python), CUDA-graph capture included.
The torch ops' C++ kernels: the merges' and run / run_out's outputs are
w.run()'s and the functions' bit for bit, under CUDA-graph capture too, and
what they must not take gets the Python kernels' errors. Needs the bridge:
skipped without it (failed with CASCADE_EXPECT_TORCH_BRIDGE=1, as the GPU
session runs it). The CPU side: tests/test_torch_bridge.py and, on the
stand-in driver, tests/test_host_cost.py."""
import contextlib
import math
import re

import pytest

import cascade_mlir as cm
from cascade_mlir import _runtime
from gpu_support import gpu, torch, workspace  # noqa: F401
from test_gpu_cascade import seed_levels

if torch is not None:  # the CPU tests' helpers (they need torch)
    from test_torch_bridge import DTYPES, require_bridge, without_bridge
else:  # every test skips (gpu_support says why)
    DTYPES = ["float16"]


@pytest.fixture
def bridge(gpu):
    require_bridge()
    return gpu


@pytest.mark.parametrize("dtype", DTYPES)
def test_probe_agrees_on_cuda(bridge, dtype):
    base = torch.arange(4 * 6 * 8, device=bridge).reshape(4, 6, 8).to(getattr(torch, dtype))
    for what, t in {"contiguous": base, "transposed": base.transpose(0, 2),
                    "sliced": base[1:, ::2, 3:], "zero-size": base[:, :0],
                    "0-d": base[1, 2, 3]}.items():
        fast, slow = _runtime._probe(t, what), _runtime._probe(t, what, bridge=False)
        assert fast.pop("bridged") and not slow.pop("bridged"), what
        assert fast == slow and fast["device"] == "cuda:0", (what, fast, slow)
        assert fast["ptr"] == t.data_ptr(), what


def test_allocations_on_cuda(bridge):
    for dtype in ("float16", "float32", "bfloat16"):
        t, ptr = _runtime._torch_empty_strided([5, 3], [1, 5], dtype, 0)
        assert t.device == bridge and t.stride() == (1, 5) and ptr == t.data_ptr()
        assert t.dtype == getattr(torch, dtype)
    like = torch.empty(7, 64, 128, device=bridge, dtype=torch.float16)
    t, ptr = _runtime._torch_empty_like(like)
    assert (t.shape, t.stride(), t.dtype, t.device) == \
        (like.shape, like.stride(), like.dtype, like.device) and ptr == t.data_ptr()


def _cascade(dev, use_cuda_graph=False):
    total, levels = seed_levels(dev)
    w = cm.MultiLevelCascadeAttentionWrapper(2, workspace(dev), "NHD",
                                             use_cuda_graph=use_cuda_graph)
    w.plan(*levels, 64, 8, 128, 16)
    cache = torch.randn(total, 2, 16, 8, 128, device=dev).half()
    q = torch.randn(7, 64, 128, device=dev).half()
    return w, q, cache


def test_run_and_merges_are_bit_identical_without_the_bridge(bridge):
    w, q, cache = _cascade(bridge)
    v, s = torch.randn(300, 32, 128, device=bridge).half(), torch.randn(300, 32, device=bridge)
    v2, s2 = torch.randn_like(v), torch.randn_like(s)
    vs, ss = torch.randn(300, 3, 32, 128, device=bridge).half(), torch.randn(300, 3, 32,
                                                                            device=bridge)

    def calls():
        o, lse = w.run(q, cache, return_lse=True)
        m = cm.merge_state(v, s, v2, s2)
        n = cm.merge_states(vs, ss)
        vi, si = v.clone(), s.clone()
        cm.merge_state_in_place(vi, si, v2, s2)
        torch.cuda.synchronize()
        return [o, lse, *m, *n, vi, si]

    fast = calls()
    with without_bridge():
        slow = calls()
    for a, b in zip(fast, slow):
        assert (a.shape, a.stride(), a.dtype, a.device) == (b.shape, b.stride(), b.dtype,
                                                            b.device)
        assert torch.equal(a, b)


def test_errors_are_the_same_without_the_bridge(bridge):
    w, q, cache = _cascade(bridge)
    bad = {"q dtype": (q.float(), cache), "q on the host": (q.cpu(), cache),
           "cache pages": (q, cache[:10])}
    for what, args in bad.items():
        got = []
        for ctx in (contextlib.nullcontext(), without_bridge()):
            with ctx, pytest.raises((TypeError, ValueError)) as e:
                w.run(*args)
            got.append((type(e.value), str(e.value)))
        assert got[0] == got[1], what


def test_output_allocated_under_capture(bridge):
    """run() allocating its output (and lse) inside CUDA-graph capture: the
    bridge's at::empty_like draws from the capture's pool as
    torch.empty_like does."""
    w, q, cache = _cascade(bridge, use_cuda_graph=True)
    want, want_lse = w.run(q, cache, return_lse=True)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        o, lse = w.run(q, cache, return_lse=True)
    o.zero_()
    lse.zero_()
    g.replay()
    torch.cuda.synchronize()
    assert torch.equal(o, want) and torch.equal(lse, want_lse)


def test_merge_ops_run_the_cpp_kernels(bridge):
    """torch.ops.cascade_mlir's merges on CUDA tensors: the bridge's C++
    kernels (the runtime's one-call merges from the dispatcher), with the
    results of the functions, version bumps of what they write, the Python
    kernels' errors and autograd refusal."""
    from cascade_mlir import torch_ops
    assert torch_ops.CPP_KERNELS.startswith("registered for CUDA")
    for op in ("merge_state", "merge_state_in_place", "merge_states"):
        dump = torch._C._dispatch_dump("cascade_mlir::" + op)
        assert "CUDA: registered at" in dump and "TorchBridge.cpp" in dump, dump
    ops = torch.ops.cascade_mlir
    v, s = torch.randn(300, 32, 128, device=bridge).half(), torch.randn(300, 32, device=bridge)
    v2, s2 = torch.randn_like(v), torch.randn_like(s)
    got, want = ops.merge_state(v, s, v2, s2), cm.merge_state(v, s, v2, s2)
    assert torch.equal(got[0], want[0]) and torch.equal(got[1], want[1])
    vs, ss = torch.randn(300, 3, 32, 128, device=bridge).half(), torch.randn(300, 3, 32,
                                                                            device=bridge)
    got, want = ops.merge_states(vs, ss), cm.merge_states(vs, ss)
    assert torch.equal(got[0], want[0]) and torch.equal(got[1], want[1])
    vi, si = v.clone(), s.clone()
    before = (vi._version, si._version)
    mask = torch.rand(600, device=bridge) > 0.5
    ops.merge_state_in_place(vi, si, v2, s2, mask[::2])
    assert vi._version > before[0] and si._version > before[1]
    wv, ws = v.clone(), s.clone()
    cm.merge_state_in_place(wv, ws, v2, s2, mask=mask[::2])
    assert torch.equal(vi, wv) and torch.equal(si, ws)
    for args in ((v[:3], s, v2, s2), (v, s, v2, s2[:, :2]), (v, s, v2.float(), s2)):
        with pytest.raises(Exception) as py_kernel:
            torch_ops._PY_KERNELS["merge_state"](*args)
        message = re.escape(str(py_kernel.value)[:30])
        with pytest.raises(type(py_kernel.value), match=message):
            ops.merge_state(*args)
    vg = v.clone().requires_grad_()
    o, _ = ops.merge_state(vg, s, v2, s2)
    with pytest.raises(RuntimeError, match="merge_state has no autograd formula"):
        o.float().sum().backward()
    with pytest.raises(RuntimeError, match="merge_state_in_place writes its arguments"):
        ops.merge_state_in_place(vg, s.clone(), v2, s2)


def _planned(kind, dev, use_cuda_graph=False):
    """A planned wrapper of `kind` (cascade, decode, prefill), a q and a 5-D
    KV cache for it."""
    if kind == "cascade":
        return _cascade(dev, use_cuda_graph)
    i32 = torch.int32
    indptr = torch.tensor([0, 3, 3, 10, 24, 25], dtype=i32)
    last = torch.tensor([5, 1, 16, 2, 9], dtype=i32)
    pages = torch.randperm(40, dtype=i32)[:25]
    cache = torch.randn(40, 2, 16, 8, 128, device=dev).half()
    if kind == "decode":
        w = cm.BatchDecodeWithPagedKVCacheWrapper(workspace(dev), "NHD",
                                                  use_cuda_graph=use_cuda_graph)
        w.plan(indptr, pages, last, 32, 8, 128, 16)
        return w, torch.randn(5, 32, 128, device=dev).half(), cache
    # Every request of the prefill has keys for each of its queries.
    indptr = torch.tensor([0, 3, 4, 10, 24, 25], dtype=i32)
    w = cm.BatchPrefillWithPagedKVCacheWrapper(workspace(dev), "NHD",
                                               use_cuda_graph=use_cuda_graph)
    w.plan(torch.tensor([0, 4, 5, 19, 20, 28], dtype=i32), indptr, pages, last,
           32, 8, 128, 16, causal=True)
    return w, torch.randn(28, 32, 128, device=dev).half(), cache


def _error(fn):
    with pytest.raises(Exception) as e:
        fn()
    return type(e.value), str(e.value)


@pytest.mark.parametrize("kind", ["cascade", "decode", "prefill"])
def test_run_ops_run_the_cpp_kernels(bridge, kind):
    """torch.ops.cascade_mlir.run / run_out on CUDA tensors: the bridge's C++
    kernels over the wrapper's planned program give w.run()'s outputs bit
    for bit (pool and pair forms), bump what run_out writes, and leave
    bad arguments and inputs that require grad to the Python kernel."""
    from cascade_mlir import _frameworks, torch_ops
    for op in ("run", "run_out"):
        dump = torch._C._dispatch_dump("cascade_mlir::" + op)
        assert "CUDA: registered at" in dump and "TorchBridge.cpp" in dump, dump
    ops = torch.ops.cascade_mlir
    w, q, cache = _planned(kind, bridge)
    h = torch_ops.register(w)
    assert h in _frameworks.TORCH_BRIDGE.bound_runners()
    o, lse = ops.run(h, q, cache, None)
    want_o, want_lse = w.run(q, cache, return_lse=True)
    for a, b in ((o, want_o), (lse, want_lse)):
        assert (a.shape, a.stride(), a.dtype, a.device) == (b.shape, b.stride(), b.dtype,
                                                            b.device)
        assert torch.equal(a, b)
    out, l2 = torch.full_like(q, math.nan), torch.full_like(lse, math.nan)
    versions = (out._version, l2._version)
    ops.run_out(h, q, cache, None, out, l2)
    assert (out._version, l2._version) == (versions[0] + 1, versions[1] + 1)
    assert torch.equal(out, want_o) and torch.equal(l2, want_lse)
    out.fill_(math.nan)
    ops.run_out(h, q, cache, None, out, None)
    assert torch.equal(out, want_o)
    k, v = cache[:, 0].contiguous(), cache[:, 1].contiguous()
    if kind != "cascade":  # the GPU tests' kernel set has 32/8 pair bundles
        want_pair = w.run(q, (k, v), return_lse=True)
        for _ in range(2):  # the pair form's kernels prepared, then in C++
            got = ops.run(h, q, k, v)
            assert torch.equal(got[0], want_pair[0]) and torch.equal(got[1], want_pair[1])
    bad = {"q dtype": (q.float(), cache, None), "q rows": (q[:2], cache, None),
           "q on the host": (q.cpu(), cache, None), "pages": (q, cache[:3], None),
           "k/v pages": (q, k, v[:3])}
    for what, args in bad.items():
        want = _error(lambda: torch_ops._PY_KERNELS["run"](h, *args))
        assert _error(lambda: ops.run(h, *args)) == want, what
    want = _error(lambda: torch_ops._PY_KERNELS["run_out"](h, q, cache, None, out[:2], None))
    assert _error(lambda: ops.run_out(h, q, cache, None, out[:2], None)) == want
    qg = q.clone().requires_grad_()
    og, _ = ops.run(h, qg, cache, None)
    assert torch.equal(og, want_o)
    with pytest.raises(RuntimeError, match="run has no autograd formula"):
        og.float().sum().backward()
    with pytest.raises(RuntimeError, match="run_out writes its arguments"):
        ops.run_out(h, qg, cache, None, out, None)


@pytest.mark.parametrize("kind", ["cascade", "decode"])
def test_run_op_captured_replays_after_replan(bridge, kind):
    """The run op's C++ kernel under CUDA-graph capture (a use_cuda_graph
    wrapper): its outputs come from the capture's pool and its kernels
    become the graph's nodes; after plan() with new lengths the replay
    gives what w.run() gives."""
    from cascade_mlir import torch_ops
    w, q, cache = _planned(kind, bridge, use_cuda_graph=True)
    h = torch_ops.register(w)
    torch.ops.cascade_mlir.run(h, q, cache, None)  # warm-up (kernels loaded)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        o, lse = torch.ops.cascade_mlir.run(h, q, cache, None)
    if kind == "cascade":
        total, levels = seed_levels(bridge, shared_pages=300,
                                    unique=(40, 1, 2, 90, 0, 7, 33),
                                    last=(16, 1, 5, 9, 1, 2, 3))
        w.plan(*levels, 64, 8, 128, 16)
    else:
        i32 = torch.int32
        w.plan(torch.tensor([0, 1, 9, 9, 30, 31], dtype=i32),
               torch.randperm(40, dtype=i32)[:31], torch.tensor([16, 3, 1, 1, 2], dtype=i32),
               32, 8, 128, 16)
    q.copy_(torch.randn_like(q))
    g.replay()
    want_o, want_lse = w.run(q, cache, return_lse=True)
    torch.cuda.synchronize()
    assert torch.equal(o, want_o) and torch.equal(lse, want_lse)
