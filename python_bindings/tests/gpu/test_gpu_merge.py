"""merge_state / merge_state_in_place / merge_states on the GPU against the
float64 merge of docs/semantics.md (gpu_support.merge_ref)."""
import math

import pytest

import cascade_mlir as cm
from gpu_support import TOL, gpu, merge_ref, rel_err, tdtype, torch  # noqa: F401


def state(rows, heads, dim, dtype, dev, empty_every=0):
    v = torch.randn(rows, heads, dim, device=dev).to(tdtype(dtype))
    s = torch.randn(rows, heads, device=dev) * 6
    if empty_every:
        s.view(-1)[::empty_every] = -math.inf
        v.view(-1, dim)[::empty_every] = 0
    return v, s


@pytest.mark.parametrize("dtype", ["f16", "bf16", "f32"])
@pytest.mark.parametrize("dim", [64, 128, 256])
def test_merge_state(gpu, dtype, dim):
    va, sa = state(777, 32, dim, dtype, gpu, empty_every=17)
    vb, sb = state(777, 32, dim, dtype, gpu, empty_every=51)
    v, s = cm.merge_state(va, sa, vb, sb)
    assert v.dtype == va.dtype and s.dtype == torch.float32 and v.device == gpu
    ev, es = merge_ref([(va.double(), sa.double()), (vb.double(), sb.double())])
    tol = TOL[str(va.dtype).replace("torch.", "")]
    assert rel_err(v, ev) <= tol and rel_err(s, es) <= 1e-5
    both_empty = torch.isinf(sa) & torch.isinf(sb)
    assert bool((v[both_empty] == 0).all()) and bool(torch.isinf(s[both_empty]).all())


def test_merge_state_in_place_strided_mask(gpu):
    v, s = state(300, 8, 128, "f16", gpu, empty_every=13)
    vo, so = state(300, 8, 128, "f16", gpu)
    backing = torch.rand(600, device=gpu) > 0.4
    mask = backing[::2]
    v0, s0 = v.clone(), s.clone()
    cm.merge_state_in_place(v, s, vo, so, mask=mask)
    ev, es = merge_ref([(v0.double(), s0.double()), (vo.double(), so.double())])
    keep = mask
    assert torch.equal(v[~keep], v0[~keep]) and torch.equal(s[~keep], s0[~keep])
    assert rel_err(v[keep], ev[keep]) <= TOL["float16"]
    assert rel_err(s[keep], es[keep]) <= 1e-5
    v1 = v0.clone()
    s1 = s0.clone()
    cm.merge_state_in_place(v1, s1, vo, so)
    assert rel_err(v1, ev) <= TOL["float16"]


@pytest.mark.parametrize("n", [0, 1, 5])
def test_merge_states(gpu, n):
    v = torch.randn(200, n, 16, 128, device=gpu).to(torch.bfloat16)
    s = torch.randn(200, n, 16, device=gpu) * 4
    if n:
        s[0, :, 3] = -math.inf
    vo, so = cm.merge_states(v, s)
    assert vo.shape == (200, 16, 128) and so.shape == (200, 16)
    if n == 0:
        assert bool((vo == 0).all()) and bool(torch.isinf(so).all())
        return
    ev, es = merge_ref([(v[:, i].double(), s[:, i].double()) for i in range(n)])
    assert rel_err(vo, ev) <= TOL["bfloat16"] and rel_err(so, es) <= 1e-5


def test_bad_merge_arguments_leave_outputs_untouched(gpu):
    v, s = state(10, 4, 64, "f16", gpu)
    vo, so = state(10, 4, 64, "f16", gpu)
    v0 = v.clone()
    with pytest.raises(ValueError, match="s_other is on cpu"):
        cm.merge_state_in_place(v, s, vo, so.cpu())
    with pytest.raises(TypeError, match="v_other has dtype"):
        cm.merge_state_in_place(v, s, vo.float(), so)
    with pytest.raises(ValueError, match="s must be contiguous|s has shape"):
        cm.merge_state_in_place(v, s.t().contiguous().t(), vo, so)
    with pytest.raises(ValueError, match="mask has shape"):
        cm.merge_state_in_place(v, s, vo, so, mask=torch.ones(3, dtype=torch.bool, device=gpu))
    torch.cuda.synchronize()
    assert torch.equal(v, v0)


def test_cupy_through_dlpack(gpu):
    cp = pytest.importorskip("cupy", reason="cupy is not installed here: the DLPack "
                             "path is checked with cupy arrays")
    va, sa = state(64, 8, 128, "f16", gpu)
    vb, sb = state(64, 8, 128, "f16", gpu)
    v, s = cm.merge_state(*(cp.from_dlpack(t) for t in (va, sa, vb, sb)))
    assert isinstance(v, cp.ndarray)
    ev, es = merge_ref([(va.double(), sa.double()), (vb.double(), sb.double())])
    assert rel_err(torch.from_dlpack(v), ev) <= TOL["float16"]
    assert rel_err(torch.from_dlpack(s), es) <= 1e-5
