"""Helpers of the GPU tests: the skip (or, with CASCADE_REQUIRE_GPU=1, the
failure) without a GPU, random paged KV caches, and a float64 torch
reference of docs/semantics.md written independently of the runtime's."""
import math
import os
import zlib

import pytest

try:
    import torch
except ImportError:  # pragma: no cover - depends on the machine
    torch = None


def gpu_unavailable_reason():
    if torch is None:
        return "torch is not installed here: the GPU tests drive CUDA tensors through torch"
    if not torch.cuda.is_available():
        return ("no CUDA device here (torch.cuda.is_available() is False); the GPU tests "
                "run on a GPU machine: tools/cascade-dev gpu python tests")
    return None


#: Fresh random inputs every session; CASCADE_TEST_SEED=N repeats a run
#: (pytest prints the seed in its header, python_bindings/tests/conftest.py).
SEED = int(os.environ.get("CASCADE_TEST_SEED") or
           int.from_bytes(os.urandom(4), "little") & 0x7FFFFFFF)


@pytest.fixture(autouse=True)
def gpu(request):
    """Every test of this directory needs a CUDA device."""
    why = gpu_unavailable_reason()
    if why:
        if os.environ.get("CASCADE_REQUIRE_GPU") == "1":
            pytest.fail(why)
        pytest.skip(why)
    torch.manual_seed(SEED + zlib.crc32(request.node.nodeid.encode()))
    return torch.device("cuda:0")


DTYPES = {"f16": "float16", "bf16": "bfloat16", "f32": "float32"}
TOL = {"float16": 2e-3, "bfloat16": 1.6e-2, "float32": 1e-5}


def tdtype(name):
    return getattr(torch, DTYPES.get(name, name))


def rel_err(got, ref):
    """Normwise max|got - ref| / max|ref|; -inf entries must agree exactly
    and NaN never passes."""
    got = got.double()
    ref = ref.double()
    inf = torch.isinf(ref)
    if not torch.equal(torch.isinf(got), inf) or bool((got[inf] != ref[inf]).any()):
        return math.inf
    if bool(torch.isnan(got).any()):
        return math.inf
    fin = ~inf
    if not bool(fin.any()):
        return 0.0
    num = (got[fin] - ref[fin]).abs().max().item()
    return num / max(ref[fin].abs().max().item(), 1e-30)


def workspace(dev, mb=128):
    return torch.empty(mb << 20, dtype=torch.uint8, device=dev)


def random_batch(B, page, max_pages, num_pages, empty=(), gen=None):
    """CSR of B requests with random page counts (some empty) over distinct
    random pages of a pool of num_pages."""
    counts = torch.randint(1, max_pages + 1, (B,), generator=gen)
    for i in empty:
        counts[i] = 0
    indptr = torch.zeros(B + 1, dtype=torch.int32)
    indptr[1:] = torch.cumsum(counts, 0)
    indices = torch.randperm(num_pages, generator=gen)[: int(indptr[-1])].int()
    last = torch.randint(1, page + 1, (B,), generator=gen).int()
    return indptr, indices, last


def kv_tokens(cache, layout, pages, kv_len):
    """K [kv_len, Hkv, D], V [kv_len, Hkv, Dv] float64 of a request from the
    pool or pair (a pair's v may have a head_dim of its own, head_dim_vo)."""
    if isinstance(cache, (tuple, list)):
        k, v = cache
    else:
        k, v = cache[:, 0], cache[:, 1]
    k, v = k[pages].double(), v[pages].double()
    if layout == "HND":
        k, v = k.transpose(1, 2), v.transpose(1, 2)
    hkv = k.shape[2]
    return (k.reshape(-1, hkv, k.shape[3])[:kv_len],
            v.reshape(-1, hkv, v.shape[3])[:kv_len])


def rope(x, pos, scale, theta):
    d = x.shape[-1]
    half = d // 2
    inv = 1.0 / (scale * theta ** (torch.arange(half, dtype=torch.float64,
                                                 device=x.device) * 2 / d))
    ang = pos.double()[:, None] * inv[None, :]
    cos, sin = torch.cos(ang)[:, None, :], torch.sin(ang)[:, None, :]
    a, b = x[..., :half], x[..., half:]
    return torch.cat([a * cos - b * sin, b * cos + a * sin], dim=-1)


def alibi_slopes(h):
    n = 2 ** int(math.floor(math.log2(h)))
    s = [2 ** (-8 * (i + 1) / n) for i in range(n)]
    s += [2 ** (-4 * (2 * (i - n) + 1) / n) for i in range(n, h)]
    return torch.tensor(s, dtype=torch.float64)


def attention_ref(q, cache, layout, qo_indptr, kv_indptr, kv_indices, last, page,
                  causal=False, sm_scale=None, logits_soft_cap=0.0, window_left=-1,
                  pos_encoding="NONE", rope_scale=1.0, rope_theta=1e4, masks=None):
    """(o, lse) float64 of one level: o [rows, Hqo, Dv] (v's head_dim), lse
    base 2; the default scale is 1 / sqrt(D), q's and k's head_dim. `masks`:
    per request a [qo_len, kv_len] bool custom mask, which replaces the
    causal mask (FlashInfer's MaskMode.CUSTOM)."""
    rows, hq, d = q.shape
    dev = q.device
    dv = (cache[1] if isinstance(cache, (tuple, list)) else cache).shape[-1]
    o = torch.zeros(rows, hq, dv, dtype=torch.float64, device=dev)
    lse = torch.full((rows, hq), -math.inf, dtype=torch.float64, device=dev)
    scale = sm_scale if sm_scale is not None else d ** -0.5
    qo, kp, ki, kl = (t.tolist() for t in (qo_indptr, kv_indptr, kv_indices, last))
    slopes = alibi_slopes(hq).to(dev)
    for i in range(len(kp) - 1):
        npages = kp[i + 1] - kp[i]
        kv_len = (npages - 1) * page + kl[i] if npages else 0
        r0, r1 = qo[i], qo[i + 1]
        if r1 == r0 or kv_len == 0:
            continue
        pages = torch.tensor(ki[kp[i]:kp[i + 1]], device=dev, dtype=torch.long)
        k, v = kv_tokens(cache, layout, pages, kv_len)
        g = hq // k.shape[1]
        k, v = k.repeat_interleave(g, dim=1), v.repeat_interleave(g, dim=1)
        qq = q[r0:r1].double()
        qpos = torch.arange(kv_len - (r1 - r0), kv_len, device=dev)
        kpos = torch.arange(kv_len, device=dev)
        if pos_encoding == "ROPE_LLAMA":
            qq = rope(qq, qpos, rope_scale, rope_theta)
            k = rope(k, kpos, rope_scale, rope_theta)
        x = torch.einsum("rhd,thd->hrt", qq, k) * scale
        if pos_encoding == "ALIBI":
            x = x + slopes[:, None, None] * (kpos[None, None, :] - qpos[None, :, None])
        if logits_soft_cap:
            x = logits_soft_cap * torch.tanh(x / logits_soft_cap)
        vis = torch.ones(r1 - r0, kv_len, dtype=torch.bool, device=dev)
        if masks is not None:
            vis &= torch.as_tensor(masks[i], device=dev)
        elif causal:
            vis &= kpos[None, :] <= qpos[:, None]
        if window_left >= 0:
            vis &= kpos[None, :] >= qpos[:, None] - window_left
        x = x.masked_fill(~vis[None], -math.inf)
        m = x.amax(-1, keepdim=True)
        ok = torch.isfinite(m)
        w = torch.where(ok, torch.exp(x - torch.where(ok, m, 0)), 0)
        den = w.sum(-1)
        out = torch.einsum("hrt,thd->rhd", w, v) / den.clamp_min(1e-300).T[..., None]
        o[r0:r1] = torch.where(ok.squeeze(-1).T[..., None], out, 0)
        lse[r0:r1] = torch.where(ok.squeeze(-1).T, (m.squeeze(-1) + torch.log(den)).T
                                 / math.log(2), -math.inf)
    return o, lse


def merge_ref(states):
    """The base-2 merge of docs/semantics.md over a list of (o, lse)."""
    lses = torch.stack([s for _, s in states])
    m = lses.amax(0)
    ok = torch.isfinite(m)
    w = torch.where(torch.isfinite(lses), torch.exp2(lses - torch.where(ok, m, 0)), 0)
    den = w.sum(0)
    o = sum(wi[..., None] * oi for wi, (oi, _) in zip(w, states)) / den.clamp_min(1e-300)[..., None]
    o = torch.where(ok[..., None], o, 0)
    return o, torch.where(ok, m + torch.log2(den.clamp_min(1e-300)), -math.inf)
