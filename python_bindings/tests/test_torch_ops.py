"""The torch custom ops (cascade_mlir.torch_ops) on CPU tensors, where the
ops compute with the runtime's float64 reference: torch.library.opcheck
(schema, fake implementation vs real outputs, dynamic shapes), and
torch.compile(fullgraph=True) of a module calling them (no graph break).
The same ops on CUDA tensors, CUDA-graph capture included, are tested in
gpu/test_gpu_torch_ops.py. Skipped where torch is not installed (CI does
not install it: a multi-GB download)."""
import pytest

torch = pytest.importorskip(
    "torch", reason="torch is not installed: the custom ops are torch's "
    "(pip install torch to run these; the GPU session runs them)")

import cascade_mlir as cm  # noqa: E402
from cascade_mlir import torch_ops  # noqa: E402

H, HKV, D, PAGE, B = 4, 2, 16, 4, 3


def planned_cascade(dtype=torch.float16):
    w = cm.MultiLevelCascadeAttentionWrapper(2, None, "NHD")
    i32 = torch.int32
    w.plan([torch.tensor([0, B], dtype=i32), torch.arange(B + 1, dtype=i32)],
           [torch.tensor([0, 2], dtype=i32), torch.tensor([0, 1, 3, 4], dtype=i32)],
           [torch.tensor([0, 1], dtype=i32), torch.tensor([2, 3, 4, 5], dtype=i32)],
           [torch.tensor([PAGE], dtype=i32), torch.tensor([1, 2, 3], dtype=i32)],
           H, HKV, D, PAGE, q_data_type=dtype)
    return w


def test_ops_are_registered():
    for name in torch_ops.op_names():
        ns, op = name.split("::")
        assert hasattr(getattr(torch.ops, ns), op), name
        assert torch.Tag.pt2_compliant_tag in getattr(getattr(torch.ops, ns), op).default.tags


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_opcheck_merges(dtype):
    v, s = torch.randn(5, H, D).to(dtype), torch.randn(5, H)
    v2, s2 = torch.randn(5, H, D).to(dtype), torch.randn(5, H)
    torch.library.opcheck(torch.ops.cascade_mlir.merge_state, (v, s, v2, s2))
    torch.library.opcheck(torch.ops.cascade_mlir.merge_state_in_place,
                          (v.clone(), s.clone(), v2, s2, None))
    mask = torch.tensor([True, False, True, True, False])
    torch.library.opcheck(torch.ops.cascade_mlir.merge_state_in_place,
                          (v.clone(), s.clone(), v2, s2, mask))
    torch.library.opcheck(torch.ops.cascade_mlir.merge_states,
                          (torch.randn(5, 3, H, D).to(dtype), torch.randn(5, 3, H)))


def test_merge_ops_match_the_functions():
    v, s = torch.randn(5, H, D).half(), torch.randn(5, H)
    v2, s2 = torch.randn(5, H, D).half(), torch.randn(5, H)
    got = torch.ops.cascade_mlir.merge_state(v, s, v2, s2)
    want = cm.merge_state(v, s, v2, s2)
    assert torch.equal(got[0], want[0]) and torch.equal(got[1], want[1])
    vi, si = v.clone(), s.clone()
    torch.ops.cascade_mlir.merge_state_in_place(vi, si, v2, s2)
    assert torch.equal(vi, want[0])  # both round the float64 merge once


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_opcheck_run(dtype):
    w = planned_cascade(dtype)
    h = torch_ops.register(w)
    assert torch_ops.register(w) == h  # one handle per wrapper
    cache = torch.randn(8, 2, PAGE, HKV, D).to(dtype)
    q = torch.randn(B, H, D).to(dtype)
    torch.library.opcheck(torch.ops.cascade_mlir.run, (h, q, cache, None))
    torch.library.opcheck(torch.ops.cascade_mlir.run, (h, q, cache[:, 0], cache[:, 1]))
    o, lse = torch.ops.cascade_mlir.run(h, q, cache, None)
    want_o, want_lse = w.run(q, cache, return_lse=True)
    assert o.dtype == dtype and lse.dtype == torch.float32 and lse.shape == (B, H)
    assert torch.equal(o, want_o) and torch.equal(lse, want_lse)
    out, l2 = torch.empty_like(q), torch.empty(B, H)
    torch.library.opcheck(torch.ops.cascade_mlir.run_out, (h, q, cache, None, out, l2))
    torch.ops.cascade_mlir.run_out(h, q, cache, None, out, l2)
    assert torch.equal(out, want_o) and torch.equal(l2, want_lse)


def test_opcheck_single_level_wrappers():
    i32 = torch.int32
    d = cm.BatchDecodeWithPagedKVCacheWrapper(None)
    d.plan(torch.tensor([0, 2, 3], dtype=i32), torch.tensor([0, 1, 2], dtype=i32),
           torch.tensor([3, 1], dtype=i32), H, HKV, D, PAGE)
    cache = torch.randn(4, 2, PAGE, HKV, D).half()
    torch.library.opcheck(torch.ops.cascade_mlir.run,
                          (torch_ops.register(d), torch.randn(2, H, D).half(), cache, None))
    p = cm.BatchPrefillWithPagedKVCacheWrapper(None)
    p.plan(torch.tensor([0, 2, 5], dtype=i32), torch.tensor([0, 2, 3], dtype=i32),
           torch.tensor([0, 1, 2], dtype=i32), torch.tensor([3, 4], dtype=i32),
           H, HKV, D, PAGE, causal=True)
    torch.library.opcheck(torch.ops.cascade_mlir.run,
                          (torch_ops.register(p), torch.randn(5, H, D).half(), cache, None))


def test_opcheck_ragged_wrapper():
    """The ragged wrapper's run(q, k, v) through the op: k as paged_kv_cache,
    v as v_cache (required)."""
    i32 = torch.int32
    r = cm.BatchPrefillWithRaggedKVCacheWrapper(None)
    qo, kv = torch.tensor([0, 2, 5], dtype=i32), torch.tensor([0, 7, 13], dtype=i32)
    r.plan(qo, kv, H, HKV, D, causal=True)
    h = torch_ops.register(r)
    q, k, v = torch.randn(5, H, D).half(), torch.randn(13, HKV, D).half(), \
        torch.randn(13, HKV, D).half()
    torch.library.opcheck(torch.ops.cascade_mlir.run, (h, q, k, v))
    o, lse = torch.ops.cascade_mlir.run(h, q, k, v)
    want_o, want_lse = r.run(q, k, v, return_lse=True)
    assert torch.equal(o, want_o) and torch.equal(lse, want_lse)
    out, l2 = torch.empty_like(q), torch.empty(5, H)
    torch.library.opcheck(torch.ops.cascade_mlir.run_out, (h, q, k, v, out, l2))
    torch.ops.cascade_mlir.run_out(h, q, k, v, out, l2)
    assert torch.equal(out, want_o) and torch.equal(l2, want_lse)
    with pytest.raises(ValueError, match="pass k as paged_kv_cache and v as v_cache"):
        torch.ops.cascade_mlir.run(h, q, k, None)


def test_unplanned_or_dead_wrapper_is_a_clear_error():
    w = cm.MultiLevelCascadeAttentionWrapper(2, None, "NHD")
    h = torch_ops.register(w)
    q, cache = torch.randn(B, H, D).half(), torch.randn(8, 2, PAGE, HKV, D).half()
    with pytest.raises(ValueError, match="plan"):
        torch._library.fake_impl  # noqa: B018 - the module exists (fake mode below)
        from torch._subclasses.fake_tensor import FakeTensorMode
        with FakeTensorMode() as mode:
            torch.ops.cascade_mlir.run(h, mode.from_tensor(q), mode.from_tensor(cache), None)
    del w
    import gc
    gc.collect()
    with pytest.raises(ValueError, match="no live wrapper"):
        torch.ops.cascade_mlir.run(h, q, cache, None)


class _Attention(torch.nn.Module):
    """What a model's attention layer does: the cascade, then a merge."""

    def __init__(self, handle):
        super().__init__()
        self.handle = handle
        self.proj = torch.nn.Linear(D, D, dtype=torch.float16)

    def forward(self, x, cache):
        q = self.proj(x)
        o, lse = torch.ops.cascade_mlir.run(self.handle, q, cache, None)
        v, s = torch.ops.cascade_mlir.merge_state(o, lse, o, lse)
        return v.float().sum(-1) + s


def test_compile_fullgraph_has_no_graph_break():
    w = planned_cascade()
    m = _Attention(torch_ops.register(w))
    x, cache = torch.randn(B, H, D).half(), torch.randn(8, 2, PAGE, HKV, D).half()
    m.requires_grad_(False)  # inference: the ops have no autograd formula
    want = m(x, cache)
    explain = torch._dynamo.explain(m)(x, cache)
    assert explain.graph_break_count == 0 and explain.graph_count == 1
    torch._dynamo.reset()
    got = torch.compile(m, fullgraph=True, backend="aot_eager")(x, cache)
    assert torch.equal(got, want)


def test_ops_without_autograd_formula_say_so():
    """Inputs that require grad: the outputs' backward raises (the kernels
    are inference-only), an in-place op refuses at once; under no_grad
    nothing is tracked. In-place ops bump the version of what they write."""
    v, s = torch.randn(5, H, D).half().requires_grad_(), torch.randn(5, H)
    o, lse = torch.ops.cascade_mlir.merge_state(v, s, v.detach(), s)
    assert o.requires_grad
    with pytest.raises(RuntimeError, match="merge_state has no autograd formula"):
        o.float().sum().backward()
    with pytest.raises(RuntimeError, match="merge_state_in_place writes its arguments"):
        torch.ops.cascade_mlir.merge_state_in_place(v, s, v.detach(), s)
    with torch.no_grad():
        o, lse = torch.ops.cascade_mlir.merge_state(v, s, v.detach(), s)
    assert not o.requires_grad and o.grad_fn is None
    vi, si = v.detach().clone(), s.clone()
    before = (vi._version, si._version)
    torch.ops.cascade_mlir.merge_state_in_place(vi, si, v.detach(), s)
    assert vi._version > before[0] and si._version > before[1]


def test_probe_reads_strides_unless_contiguous():
    """The bindings read a torch tensor's strides only when it is not
    contiguous (row-major ones otherwise; a size-1 dimension's stride
    addresses nothing); what they read decides the checks' contiguity."""
    from cascade_mlir import _runtime
    t = torch.empty(4, 6, 8)
    p = _runtime._probe(t)
    assert p["strides"] == [48, 8, 1] and p["contiguous"] and p["ptr"] == t.data_ptr()
    for view, strides in ((t[:, ::2], [48, 16, 1]), (t.transpose(0, 1), [8, 48, 1]),
                          (t[..., 1:], [48, 8, 1])):
        p = _runtime._probe(view)
        assert p["strides"] == strides and not p["contiguous"], (p, strides)
        assert p["ptr"] == view.data_ptr() and p["shape"] == list(view.shape)
    one = t.as_strided((4, 1, 8), (8, 99, 1))
    p = _runtime._probe(one)
    assert p["contiguous"] and p["strides"] == [8, 8, 1]
