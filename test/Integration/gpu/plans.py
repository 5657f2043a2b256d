"""The plans of the GPU check, all made by the runtime
(`cascade_mlir._runtime.plan`, lib/Runtime/Plan.cpp); no cupy, so that
python_bindings/tests/test_gpu_check_plans.py runs every case's planning on
the CPU.

The check wants some plans that the runtime makes only on request:
- a split-KV level with a given KV chunk (cases name it in pages, as small as
  2 pages, so that short requests still get several chunks): the runtime
  picks its chunk as the smallest that fits its grid budget (num_sms *
  occupancy blocks), so the budget is searched, with the runtime, for the
  smallest one whose chunk is at most the case's. That chunk splits every
  request into as many chunks as the case's would (it may be a few pages
  smaller). The runtime never chunks finer than 128 tokens (a performance
  rule, not a kernel limit): these levels are planned with a page size of
  128 tokens, which nothing else in a plan depends on (work items count
  pages), and the chunk is converted back to tokens of the real page size.
  They are planned in CUDA-graph mode, where the runtime always splits and
  pads the work items as a graph-stable plan does;
- `pad` more padded work items (block_valid_mask 0): appended to the plan;
- a prefill grid with rows of slack past qo_indptr[-1] (what a CUDA-graph
  plan's max_num_rows does): row_capacity of a CUDA-graph plan with
  max_num_rows = rows + ROW_SLACK.
"""
import numpy as np

from cascade_mlir import _runtime

# Rows of grid slack given to every prefill launch.
ROW_SLACK = 37
# A page size at which the runtime's minimum chunk (128 tokens) is one page.
PLAN_PAGE_SIZE = 128


def paged_layout(lens, ps):
    """Pages per request, kv_last_page_len and kv_indptr of KV lengths."""
    pages = [-(-int(L) // ps) for L in lens]
    last = np.array([(int(L) - (n - 1) * ps) if n else 1 for L, n in zip(lens, pages)],
                    np.int32)
    indptr = np.concatenate([[0], np.cumsum(pages)]).astype(np.int32)
    return pages, last, indptr


def request_lengths(rng, B, max_qo, max_len, decode):
    """Query and KV lengths of a batch of B requests, with the corner cases
    every kernel must handle (see check.py)."""
    if decode:
        qo = np.ones(B, np.int64)
        lens = rng.integers(1, max_len + 1, B)
        lens[rng.random(B) < 0.15] = 0
        lens[0] = 0
        if B > 1:
            lens[1] = max_len
        return qo, lens
    qo = rng.integers(1, max_qo + 1, B)
    qo[rng.random(B) < 0.15] = 0
    lens = np.maximum(rng.integers(1, max_len + 1, B), qo)
    lens[0] = 0
    qo[0] = 2  # queries with no keys at all
    if B > 2:
        lens[2] = 1
        qo[2] = 3  # more queries than keys: causal rows that see nothing
    if B > 3:
        qo[3] = max_qo  # a long query run (several query tiles)
        lens[3] = max(lens[3], max_qo)
    return qo, lens


def _inputs(kv_indptr, last, qo_indptr, decode):
    kw = dict(kv_indptr=np.asarray(kv_indptr, np.int32),
              kv_last_page_len=np.asarray(last, np.int32))
    if not decode:
        kw["qo_indptr"] = np.asarray(qo_indptr, np.int32)
    return kw


def row_capacity(qo_indptr, kv_indptr, last, *, ps, Hqo, Hkv, D):
    """The rows a CUDA-graph prefill plan with max_num_rows = rows +
    ROW_SLACK covers (its merge_indptr has row_capacity + 1 entries)."""
    rows = int(qo_indptr[-1])
    p = _runtime.plan("prefill", cuda_graph=1, max_num_rows=rows + ROW_SLACK, page_size=ps,
                      num_qo_heads=Hqo, num_kv_heads=Hkv, head_dim=D, num_sms=1,
                      **_inputs(kv_indptr, last, qo_indptr, False))
    return len(p["merge_indptr"]) - 1


def split_plan(*, decode, qo_indptr, kv_indptr, last, ps, Hqo, Hkv, D, chunk_pages,
               qo_tile=0, pad=0, max_num_rows=-1, dtype="f16"):
    """A split-KV runtime plan whose chunk is at most `chunk_pages` pages with
    as many chunks per request as that chunk gives, plus `pad` padded work
    items (see the module docstring). kv_chunk_size is in tokens of `ps`."""
    kw = dict(page_size=max(ps, PLAN_PAGE_SIZE), num_qo_heads=Hqo, num_kv_heads=Hkv,
              head_dim=D, qo_tile_size=qo_tile, cuda_graph=1, q_dtype=dtype,
              **_inputs(kv_indptr, last, qo_indptr, decode))
    if not decode:
        kw["max_num_rows"] = max_num_rows
    mode = "decode" if decode else "prefill"
    # The smallest budget of work items per KV head (num_sms = Hkv * budget,
    # occupancy 1) whose chunk is at most chunk_pages: the budget doubled
    # until one is, then bisected.

    def plan(budget):
        return _runtime.plan(mode, num_sms=Hkv * budget, occupancy=1, **kw)

    def ok(budget):
        p = plan(budget)
        return p["split_kv"] and p["kv_chunk_size"] // kw["page_size"] <= chunk_pages
    lo, hi = 1, int(kv_indptr[-1]) + len(last) + 1
    while not ok(hi):
        if Hkv * hi * 2 > 1 << 20:
            raise ValueError(f"the runtime does not split this batch into chunks of "
                             f"{chunk_pages} pages")
        lo, hi = hi + 1, hi * 2
    while lo < hi:
        mid = (lo + hi) // 2
        if ok(mid):
            hi = mid
        else:
            lo = mid + 1
    p = plan(lo)
    chunk = p["kv_chunk_size"] // kw["page_size"]
    p["kv_chunk_size_pages"] = chunk
    p["kv_chunk_size"] = chunk * ps
    return pad_plan(p, pad)


def pad_plan(p, pad):
    """The plan with `pad` more padded work items (block_valid_mask 0)."""
    if pad:
        for k in ("request_indices", "kv_tile_indices", "qo_tile_indices"):
            p[k] = np.concatenate([p[k], np.zeros(pad, np.int32)])
        p["block_valid_mask"] = np.concatenate([p["block_valid_mask"],
                                                np.zeros(pad, np.uint8)])
        p["padded_batch_size"] += pad
    return p
