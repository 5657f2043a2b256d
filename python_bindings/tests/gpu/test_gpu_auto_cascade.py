"""plan(..., auto_cascade=True) on the GPU: the batch decode / prefill
wrappers find the shared page prefixes and run them as a cascade; the result
equals the float64 reference of plain attention over each request's pages
and the wrapper's plain plan (auto_cascade=False): grouped sharing, no
sharing (the plain launches), everything shared, shuffled and duplicated
page ids with nested sharing, causal prefill, and CUDA-graph replay after
replans with other sharing."""
import math

import pytest

import cascade_mlir as cm
from gpu_support import TOL, attention_ref, gpu, rel_err, torch, workspace  # noqa: F401

HQ, HKV, D, PAGE = 32, 8, 128, 16
#: A cost model under which any sharing pays (small batches still get levels).
EAGER = {"level_overhead_us": 0.0, "group_overhead_us": 0.0, "level_row_bytes": 0.0,
         "l2_hidden_fraction": 0.0}


def grouped(groups, num_pages, own=(1, 6), gen=None, nested=None, dup=False):
    """Page tables of requests in groups: (members, shared pages) per group;
    `nested` (members, pages) splits each group into sub-groups that share
    more pages after the group's; each request then has 1-5 own pages. Page
    ids are drawn from a random permutation of the pool (with dup=True, own
    pages repeat page ids used elsewhere in the batch)."""
    perm = torch.randperm(num_pages, generator=gen).tolist()
    take = iter(perm)
    indices, indptr = [], [0]
    for members, shared in groups:
        prefix = [next(take) for _ in range(shared)]
        sub = None
        for m in range(members):
            if nested and m % nested[0] == 0:
                sub = [next(take) for _ in range(nested[1])]
            n_own = int(torch.randint(own[0], own[1], (1,), generator=gen))
            mine = [next(take) for _ in range(n_own)]
            if dup and indices:
                mine[0] = indices[int(torch.randint(0, len(indices), (1,), generator=gen))]
            indices += prefix + (sub or []) + mine
            indptr.append(len(indices))
    b = len(indptr) - 1
    last = torch.randint(1, PAGE + 1, (b,), generator=gen).int()
    return (torch.tensor(indptr, dtype=torch.int32), torch.tensor(indices, dtype=torch.int32),
            last)


def run_pair(dev, cls, plan_args, q, cache, auto, **kw):
    """(o, lse, wrapper) of auto_cascade=auto and of the plain plan."""
    out = []
    for setting in (auto, False):
        w = cls(workspace(dev), "NHD")
        w.plan(*plan_args, HQ, HKV, D, PAGE, auto_cascade=setting, **kw)
        o, lse = w.run(q, cache, return_lse=True)
        out.append((o, lse, w))
    return out


def check_close(o, lse, ref, other):
    eo, el = ref
    assert rel_err(o, eo) <= TOL["float16"], rel_err(o, eo)
    assert rel_err(lse, el) <= TOL["float16"], rel_err(lse, el)
    assert rel_err(o, other[0].double()) <= TOL["float16"]
    assert rel_err(lse, other[1].double()) <= TOL["float16"]


def decode_case(dev, kp, ki, kl, num_pages, auto):
    b = kp.numel() - 1
    cache = torch.randn(num_pages, 2, PAGE, HKV, D, device=dev).half()
    q = torch.randn(b, HQ, D, device=dev).half()
    (o, lse, w), plain = run_pair(dev, cm.BatchDecodeWithPagedKVCacheWrapper,
                                  (kp.to(dev), ki.to(dev), kl.to(dev)), q, cache, auto)
    ref = attention_ref(q, cache, "NHD", torch.arange(b + 1), kp, ki, kl, PAGE)
    check_close(o, lse, ref, plain)
    return w, o, plain


def test_decode_grouped_sharing(gpu):
    # 4 groups of 8 requests, each sharing 256 pages (4096 tokens): the
    # default cost model makes them one shared level of 4 groups.
    kp, ki, kl = grouped([(8, 256)] * 4, 2048)
    w, _, _ = decode_case(gpu, kp, ki, kl, 2048, True)
    st = w.auto_cascade_stats
    assert st["num_levels"] == 2 and st["shared_groups"] == 4
    assert st["pages_saved"] == 4 * 7 * 256


def test_decode_no_sharing_is_the_plain_plan(gpu):
    kp, ki, kl = grouped([(1, 0)] * 24, 512)
    w, o, plain = decode_case(gpu, kp, ki, kl, 512, True)
    assert w.auto_cascade_stats["num_levels"] == 1
    # The same launches as the plain plan: bit-identical results.
    assert torch.equal(o, plain[0])
    assert w._engine.program.num_launches(0) == plain[2]._engine.program.num_launches(0)


def test_decode_everything_shared(gpu):
    b = 16
    common = torch.randperm(1024)[:300].int()
    kp = torch.arange(0, 300 * (b + 1), 300, dtype=torch.int32)
    ki = common.repeat(b)
    kl = torch.full((b,), 11, dtype=torch.int32)
    w, _, _ = decode_case(gpu, kp, ki, kl, 1024, True)
    st = w.auto_cascade_stats
    assert st["shared_groups"] == 1 and st["pages_saved"] == (b - 1) * 299


def test_decode_nested_sharing_shuffled_and_duplicated_pages(gpu):
    # 2 groups of 8 sharing 40 pages, within them pairs sharing 12 more;
    # page ids shuffled, some own pages repeat ids of other requests.
    kp, ki, kl = grouped([(8, 40), (1, 0), (8, 40)], 1024, nested=(2, 12), dup=True)
    w, _, _ = decode_case(gpu, kp, ki, kl, 1024, EAGER)
    st = w.auto_cascade_stats
    assert st["num_levels"] == 3, st


@pytest.mark.parametrize("causal", [True, False])
def test_prefill_grouped_sharing(gpu, causal):
    kp, ki, kl = grouped([(6, 64), (1, 3), (5, 48)], 1024, own=(3, 8))
    b = kp.numel() - 1
    kv_len = (kp[1:] - kp[:-1] - 1) * PAGE + kl
    # The queries stay within each request's own tokens: a causal query
    # inside the shared prefix sees only part of it, and the planner then
    # (rightly) cuts the prefix into one more level.
    shared = torch.tensor([64] * 6 + [3] + [48] * 5) * PAGE
    q_len = torch.minimum(torch.randint(1, 40, (b,)), kv_len.long() - shared)
    qo = torch.zeros(b + 1, dtype=torch.int32)
    qo[1:] = torch.cumsum(q_len, 0)
    rows = int(qo[-1])
    cache = torch.randn(1024, 2, PAGE, HKV, D, device=gpu).half()
    q = torch.randn(rows, HQ, D, device=gpu).half()
    (o, lse, w), plain = run_pair(gpu, cm.BatchPrefillWithPagedKVCacheWrapper,
                                  (qo, kp, ki, kl), q, cache, EAGER, causal=causal)
    st = w.auto_cascade_stats
    assert st["num_levels"] == 2 and st["shared_groups"] == 2, st
    ref = attention_ref(q, cache, "NHD", qo, kp, ki, kl, PAGE, causal=causal)
    check_close(o, lse, ref, plain)


@pytest.mark.parametrize("decode", [True, False])
def test_cuda_graph_replay_after_replan(gpu, decode):
    b, num_pages = 16, 4096
    cache = torch.randn(num_pages, 2, PAGE, HKV, D, device=gpu).half()
    cls = cm.BatchDecodeWithPagedKVCacheWrapper if decode else \
        cm.BatchPrefillWithPagedKVCacheWrapper
    w = cls(workspace(gpu), "NHD", use_cuda_graph=True)
    q_len = 1 if decode else 4
    qo = torch.arange(0, q_len * (b + 1), q_len, dtype=torch.int32)
    rows = int(qo[-1])

    def plan(groups, **kw):
        kp, ki, kl = grouped(groups, num_pages, **kw)
        args = (kp, ki, kl) if decode else (qo, kp, ki, kl)
        # Every sharing kept (EAGER): the replays, not the cost model, are
        # under test (the default's 20 us level drops the nested groups).
        w.plan(*args, HQ, HKV, D, PAGE, auto_cascade=EAGER)
        return kp, ki, kl

    q = torch.randn(rows, HQ, D, device=gpu).half()
    out = torch.empty_like(q)
    lse = torch.empty(rows, HQ, device=gpu)
    plan([(8, 200), (8, 150)])
    assert w.auto_cascade_stats["num_levels"] == 3  # fixed in graph mode
    w.run(q, cache, out=out, lse=lse)  # warm up outside the graph
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        w.run(q, cache, out=out, lse=lse)
    cases = ([(4, 300)] * 4, [(1, 0)] * b, [(b, 100)], [(8, 120)] * 2)
    for i, groups in enumerate(cases):
        kw = {"nested": (4, 60)} if i == 3 else {}
        kp, ki, kl = plan(groups, **kw)
        shared = w.auto_cascade_stats["shared_groups"]
        assert shared == (0 if i == 1 else len(groups) + (4 if i == 3 else 0)), \
            (groups, w.auto_cascade_stats)
        q.copy_(torch.randn_like(q))
        out.fill_(math.nan)
        g.replay()
        torch.cuda.synchronize()
        eo, el = attention_ref(q, cache, "NHD", qo, kp, ki, kl, PAGE, causal=False)
        assert rel_err(out, eo) <= TOL["float16"], (groups, rel_err(out, eo))
        assert rel_err(lse, el) <= TOL["float16"], groups
