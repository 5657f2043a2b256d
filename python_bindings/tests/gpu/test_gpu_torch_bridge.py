"""cascade_mlir._torch_bridge on CUDA tensors: the probe agrees with the
Python path field by field, allocations land on the asked device with the
asked layout, and run() / the merges give bit-identical results with the
bridge and without it (torch through Python), CUDA-graph capture included.
Needs the bridge: skipped without it (failed with
CASCADE_EXPECT_TORCH_BRIDGE=1, as the GPU session runs it). The CPU side:
tests/test_torch_bridge.py."""
import contextlib
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
    assert torch_ops.CPP_MERGE_KERNELS.startswith("registered for CUDA")
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
