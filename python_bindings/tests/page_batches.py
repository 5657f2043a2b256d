"""Page tables of test batches, shared by the CPU tests and the stand-in
driver's scenarios (fake_cuda/fake_device_checks.py)."""

import numpy as np


def grouped_pages(groups, own=2, last_page_len=3):
    """Requests in groups: (members, shared) gives `members` requests that
    start with the same `shared` pages, then `own` pages each; page ids in
    order of first use. Returns (kv_indptr, kv_indices, kv_last_page_len,
    pages used), int32 arrays."""
    ids, indptr, nxt = [], [0], 0
    for members, shared in groups:
        prefix = list(range(nxt, nxt + shared))
        nxt += shared
        for _ in range(members):
            ids += prefix + list(range(nxt, nxt + own))
            nxt += own
            indptr.append(len(ids))
    b = len(indptr) - 1
    return (np.array(indptr, np.int32), np.array(ids, np.int32),
            np.full(b, last_page_len, np.int32), nxt)
