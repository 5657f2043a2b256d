"""The plans of the GPU check, all made by the runtime
(`cascade_mlir._runtime.plan`, lib/Runtime/Plan.cpp); no cupy, so that
python_bindings/tests/test_gpu_check_plans.py runs every case's planning on
the CPU.

The check wants some plans that the runtime makes only on request:
- a split-KV level with a given KV chunk (cases name it in pages, as small as
  2 pages, so that short requests still get several chunks): planned with
  `fixed_split_pages` (FlashInfer's fixed_split_size), which splits every
  request into chunks of exactly that many pages, in CUDA-graph mode, where
  the runtime always splits and pads the work items as a graph-stable plan
  does. The grid budget (num_sms * occupancy blocks) is the number of work
  items the chunk gives (a first plan with the largest grid counts them; in
  decode at least B + 1), so that the padding is the graph plan's own
  (prefill: at least its query-tile bound);
- `pad` more padded work items (block_valid_mask 0): appended to the plan;
- a prefill grid with rows of slack past qo_indptr[-1] (what a CUDA-graph
  plan's max_num_rows does): row_capacity of a CUDA-graph plan with
  max_num_rows = rows + ROW_SLACK.
"""
import numpy as np

from cascade_mlir import _runtime

# Rows of grid slack given to every prefill launch.
ROW_SLACK = 37
# The largest num_sms the runtime takes: the grid of the plan that counts the
# work items of a chunk.
MAX_NUM_SMS = 1 << 20


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
    """A split-KV runtime plan with KV chunks of `chunk_pages` pages (every
    request split into ceil(pages / chunk_pages) chunks, at least one), plus
    `pad` padded work items (see the module docstring)."""
    kw = dict(page_size=ps, num_qo_heads=Hqo, num_kv_heads=Hkv, head_dim=D,
              qo_tile_size=qo_tile, cuda_graph=1, q_dtype=dtype,
              fixed_split_pages=chunk_pages, occupancy=1,
              **_inputs(kv_indptr, last, qo_indptr, decode))
    if not decode:
        kw["max_num_rows"] = max_num_rows
    mode = "decode" if decode else "prefill"
    # The work items of the chunk (the query tile does not depend on the
    # grid), then the plan whose grid is that many items per KV head; in
    # decode at least B + 1 (the grid the runtime's automatic rule needs to
    # split a decode batch, which these plans have always had: one padded
    # item when every request is one chunk).
    items = _runtime.plan(mode, num_sms=MAX_NUM_SMS, **kw)["num_work_items"]
    budget = max(items, len(last) + 1) if decode else max(items, 1)
    p = _runtime.plan(mode, num_sms=Hkv * budget, **kw)
    assert p["split_kv"] and p["kv_chunk_size_pages"] == chunk_pages
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
