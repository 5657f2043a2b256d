"""Custom masks (FlashInfer's `custom_mask` / `packed_custom_mask`) on the
tensor-core prefill kernels, against the float64 torch reference: random
masks with fully masked rows (the empty state: o = 0, lse = -inf) and tree
masks, f16 and bf16, head_dim 64 and 128, the paged wrapper (page 16) and
the ragged wrapper and single-request prefill (page 1), unsplit and
split-KV (fixed_split_size). Every configuration is in the gpu-tests kernel
set."""
import numpy as np
import pytest

import cascade_mlir as cm
from gpu_support import (TOL, attention_ref, gpu, rel_err, tdtype, torch,  # noqa: F401
                         workspace)


def random_masks(qo_lens, kv_lens, gen, density=0.5, empty_rows=True):
    """Per request a [qo_len, kv_len] bool mask; with `empty_rows` the first
    row of every other request sees nothing."""
    masks = []
    for i, (r, c) in enumerate(zip(qo_lens, kv_lens)):
        m = torch.rand(r, c, generator=gen) < density
        if empty_rows and r and i % 2 == 0:
            m[0] = False
        masks.append(m)
    return masks


def tree_mask(qo_len, kv_len, gen):
    """Speculative decoding's tree attention: every query sees the prefix
    (the first kv_len - qo_len keys), itself and its ancestors in a random
    tree over the draft tokens."""
    prefix = kv_len - qo_len
    m = torch.zeros(qo_len, kv_len, dtype=torch.bool)
    m[:, :prefix] = True
    parent = [-1] + [int(torch.randint(0, j, (1,), generator=gen)) for j in range(1, qo_len)]
    for j in range(qo_len):
        a = j
        while a >= 0:
            m[j, prefix + a] = True
            a = parent[a]
    return m


def flat(masks):
    return torch.cat([m.reshape(-1) for m in masks]) if masks else torch.zeros(0, dtype=torch.bool)


def paged_batch(kv_lens, page, gen):
    pages = [(n + page - 1) // page for n in kv_lens]
    kv_indptr = torch.zeros(len(kv_lens) + 1, dtype=torch.int32)
    kv_indptr[1:] = torch.cumsum(torch.tensor(pages), 0)
    total = int(kv_indptr[-1])
    indices = torch.randperm(total + 3, generator=gen)[:total].int()
    last = torch.tensor([n - (p - 1) * page if p else 0 for n, p in zip(kv_lens, pages)],
                        dtype=torch.int32)
    last = torch.where(torch.tensor(pages) > 0, last, torch.ones_like(last))
    return kv_indptr, indices, last, total + 3


def indptr_of(lens):
    ip = torch.zeros(len(lens) + 1, dtype=torch.int32)
    ip[1:] = torch.cumsum(torch.tensor(lens), 0)
    return ip


@pytest.mark.parametrize("dtype", ["f16", "bf16"])
@pytest.mark.parametrize("head_dim", [64, 128])
@pytest.mark.parametrize("split", [None, 2])
@pytest.mark.parametrize("packed", [False, True])
def test_paged_prefill_custom_mask(gpu, dtype, head_dim, split, packed):
    gen = torch.Generator().manual_seed(head_dim + (split or 0) + packed)
    qo_lens = [17, 1, 130, 64, 0, 33]
    kv_lens = [200, 9, 700, 64, 16, 1000]
    page = 16
    kv_indptr, indices, last, num_pages = paged_batch(kv_lens, page, gen)
    qo_indptr = indptr_of(qo_lens)
    masks = random_masks(qo_lens, kv_lens, gen)
    td = tdtype(dtype)
    q = torch.randn(int(qo_indptr[-1]), 32, head_dim, device=gpu).to(td)
    cache = torch.randn(num_pages, 2, page, 8, head_dim, device=gpu).to(td)
    arg = {"custom_mask": flat(masks).to(gpu)}
    if packed:
        bits = indptr_of([r * c for r, c in zip(qo_lens, kv_lens)])
        arg = {"packed_custom_mask": cm.segment_packbits(flat(masks).to(gpu), bits.to(gpu),
                                                         "little")[0]}
    w = cm.BatchPrefillWithPagedKVCacheWrapper(workspace(gpu))
    w.plan(qo_indptr.to(gpu), kv_indptr.to(gpu), indices.to(gpu), last.to(gpu), 32, 8,
           head_dim, page, causal=True, q_data_type=td, fixed_split_size=split, **arg)
    o, lse = w.run(q, cache, return_lse=True)
    eo, el = attention_ref(q, cache, "NHD", qo_indptr, kv_indptr, indices, last, page,
                           masks=masks)
    tol = TOL[str(td).replace("torch.", "")]
    assert rel_err(o, eo) <= tol and rel_err(lse, el) <= tol
    # Fully masked rows: the empty state exactly.
    for i in range(0, len(qo_lens), 2):
        if qo_lens[i]:
            r = int(qo_indptr[i])
            assert torch.all(o[r] == 0) and torch.all(torch.isneginf(lse[r]))


@pytest.mark.parametrize("dtype", ["f16", "bf16"])
@pytest.mark.parametrize("head_dim", [64, 128])
@pytest.mark.parametrize("split", [None, 64])
def test_ragged_tree_mask(gpu, dtype, head_dim, split):
    """Tree attention over ragged K/V (page 1): draft tokens after a prefix."""
    gen = torch.Generator().manual_seed(3 * head_dim + (split or 0))
    qo_lens = [8, 31, 1, 64, 5]
    kv_lens = [100, 531, 1, 2000, 5]
    masks = [tree_mask(r, c, gen) for r, c in zip(qo_lens, kv_lens)]
    qo_indptr, kv_indptr = indptr_of(qo_lens), indptr_of(kv_lens)
    td = tdtype(dtype)
    q = torch.randn(int(qo_indptr[-1]), 32, head_dim, device=gpu).to(td)
    k = torch.randn(int(kv_indptr[-1]), 8, head_dim, device=gpu).to(td)
    v = torch.randn(int(kv_indptr[-1]), 8, head_dim, device=gpu).to(td)
    w = cm.BatchPrefillWithRaggedKVCacheWrapper(workspace(gpu))
    w.plan(qo_indptr.to(gpu), kv_indptr.to(gpu), 32, 8, head_dim,
           custom_mask=flat(masks).to(gpu), q_data_type=td, fixed_split_size=split)
    o, lse = w.run(q, k, v, return_lse=True)
    t = int(kv_indptr[-1])
    cache = (k.reshape(t, 1, 8, head_dim), v.reshape(t, 1, 8, head_dim))
    eo, el = attention_ref(q, cache, "NHD", qo_indptr, kv_indptr, torch.arange(t),
                           torch.ones(len(kv_lens), dtype=torch.int32), 1, masks=masks)
    tol = TOL[str(td).replace("torch.", "")]
    assert rel_err(o, eo) <= tol and rel_err(lse, el) <= tol


@pytest.mark.parametrize("density", [0.0, 0.1, 1.0])
def test_single_prefill_custom_mask(gpu, density):
    """All-ones equals no mask; all-zeros is the empty state everywhere."""
    gen = torch.Generator().manual_seed(11)
    q = torch.randn(77, 32, 128, device=gpu).half()
    k = torch.randn(333, 8, 128, device=gpu).half()
    v = torch.randn(333, 8, 128, device=gpu).half()
    m = torch.rand(77, 333, generator=gen) < density
    o, lse = cm.single_prefill_with_kv_cache(q, k, v, custom_mask=m.to(gpu), return_lse=True)
    cache = (k.reshape(333, 1, 8, 128), v.reshape(333, 1, 8, 128))
    eo, el = attention_ref(q, cache, "NHD", torch.tensor([0, 77]), torch.tensor([0, 333]),
                           torch.arange(333), torch.ones(1, dtype=torch.int32), 1, masks=[m])
    assert rel_err(o, eo) <= TOL["float16"] and rel_err(lse, el) <= TOL["float16"]
    if density == 1.0:
        plain = cm.single_prefill_with_kv_cache(q, k, v)
        assert rel_err(o, plain.double()) <= TOL["float16"]


def test_cuda_graph_wrappers_refuse_custom_masks(gpu):
    with pytest.raises(cm.UnsupportedFeatureError, match="CUDA-graph"):
        cm.BatchPrefillWithRaggedKVCacheWrapper(
            workspace(gpu), use_cuda_graph=True, qo_indptr_buf=torch.zeros(2, dtype=torch.int32,
                                                                           device=gpu),
            kv_indptr_buf=torch.zeros(2, dtype=torch.int32, device=gpu),
            custom_mask_buf=torch.zeros(8, dtype=torch.uint8, device=gpu))
