"""Attention sinks through the wrappers on the GPU against the float64
torch reference merged with each head's (0, sink) state: decode and prefill
(the rows, mma_sync and wgmma families by the kernels selection picks),
split and unsplit plans (the split merge adds the sinks), the sink wrapper's
FlashInfer calling convention, and plans with and without sinks in turn."""
import math

import pytest

import cascade_mlir as cm
from gpu_support import (TOL, attention_ref, gpu, merge_ref, random_batch,  # noqa: F401
                         rel_err, tdtype, torch, workspace)

#: (dtype, Hqo, Hkv, D, page): the sink groups of these are in the
#: gpu-tests kernel set.
SHAPES = [("f16", 32, 8, 128, 16), ("bf16", 32, 4, 64, 16)]


def with_sinks(o, lse, sinks):
    s2 = (sinks.double() / math.log(2.0))[None, :].expand_as(lse)
    return merge_ref([(o, lse), (torch.zeros_like(o), s2)])


def check(o, lse, eo, el, dtype):
    tol = TOL[str(dtype).replace("torch.", "")]
    assert rel_err(o, eo) <= tol, rel_err(o, eo)
    assert rel_err(lse, el) <= tol, rel_err(lse, el)


def cache_for(num_pages, page, hkv, d, dtype, dev):
    return torch.randn(num_pages, 2, page, hkv, d, device=dev).to(dtype)


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "-".join(map(str, s)))
@pytest.mark.parametrize("batch,split", [(5, False), (5, True), (300, False)])
def test_decode_with_sinks(gpu, shape, batch, split):
    name, hq, hkv, d, page = shape
    dtype = tdtype(name)
    num_pages = 4096
    max_pages = max(1, min(64, num_pages // batch - 1))
    indptr, indices, last = random_batch(batch, page, max_pages, num_pages, empty=(1,))
    cache = cache_for(num_pages, page, hkv, d, dtype, gpu)
    q = torch.randn(batch, hq, d, device=gpu).to(dtype)
    sinks = (torch.rand(hq, device=gpu) * 8 - 4).float()
    w = cm.BatchDecodeWithPagedKVCacheWrapper(workspace(gpu))
    w.plan(indptr.to(gpu), indices.to(gpu), last.to(gpu), hq, hkv, d, page,
           q_data_type=dtype, fixed_split_size=2 if split else None)
    o, lse = w.run(q, cache, sinks=sinks, return_lse=True)
    eo, el = attention_ref(q, cache, "NHD", torch.arange(batch + 1), indptr, indices,
                           last, page)
    eo, el = with_sinks(eo, el, sinks)
    check(o, lse, eo, el, dtype)
    # The request without keys holds only its sinks.
    assert bool((o[1] == 0).all())
    # Without sinks again: the plain answer (the wrapper plans back).
    o2, lse2 = w.run(q, cache, return_lse=True)
    po, pl = attention_ref(q, cache, "NHD", torch.arange(batch + 1), indptr, indices,
                           last, page)
    check(o2, lse2, po, pl, dtype)


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "-".join(map(str, s)))
@pytest.mark.parametrize("causal,split", [(True, False), (False, True)])
def test_sink_wrapper_prefill(gpu, shape, causal, split):
    name, hq, hkv, d, page = shape
    dtype = tdtype(name)
    batch, num_pages = 7, 2048
    indptr, indices, last = random_batch(batch, page, 24, num_pages, empty=(2,))
    kv_len = [(int(indptr[i + 1] - indptr[i]) - 1) * page + int(last[i])
              if indptr[i + 1] > indptr[i] else 0 for i in range(batch)]
    qo_len = [max(1, min(n, 90)) for n in kv_len]
    qo = torch.zeros(batch + 1, dtype=torch.int32)
    qo[1:] = torch.cumsum(torch.tensor(qo_len), 0)
    cache = cache_for(num_pages, page, hkv, d, dtype, gpu)
    q = torch.randn(int(qo[-1]), hq, d, device=gpu).to(dtype)
    sinks = (torch.rand(hq, device=gpu) * 8 - 4).float()
    w = cm.BatchAttentionWithAttentionSinkWrapper(workspace(gpu), "NHD",
                                                  q_data_type=dtype, kv_data_type=dtype,
                                                  head_dim_qk=d, head_dim_vo=d)
    w.plan(qo.to(gpu), indptr.to(gpu), indices.to(gpu), last.to(gpu), hq, hkv, d, page,
           causal=causal, q_data_type=dtype, fixed_split_size=3 if split else None)
    o, lse = w.run(q, cache, sinks, d ** -0.5, return_lse=True)
    eo, el = attention_ref(q, cache, "NHD", qo, indptr, indices, last, page, causal=causal)
    eo, el = with_sinks(eo, el, sinks)
    check(o, lse, eo, el, dtype)
