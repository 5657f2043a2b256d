"""FlashInfer's MultiLevelCascadeAttentionWrapper example on Cascade-MLIR.

The program of FlashInfer's documentation (two levels: a 512-page prefix
shared by a batch of 7 decode requests, then each request's own pages; 32
layers; 64 query heads over 8 KV heads, head_dim 128, page size 16, fp16),
with only the import line changed, followed by a check of every layer
against a float64 reference of plain attention over the concatenated KV and
the time of one layer's run(). Needs a CUDA GPU and torch.

    python examples/python/multi_level_cascade.py [--layers 32]
"""
import argparse
import math
import sys

import torch

import cascade_mlir as flashinfer  # the only change: was `import flashinfer`


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--layers", type=int, default=32)
    args = ap.parse_args()
    if not torch.cuda.is_available():
        print("no CUDA device: this example runs the kernels on a GPU")
        return 2

    # --- the example, as in FlashInfer's documentation ------------------------
    num_layers = args.layers
    num_qo_heads, num_kv_heads, head_dim, page_size = 64, 8, 128, 16
    workspace_buffer = torch.empty(128 * 1024 * 1024, dtype=torch.uint8, device="cuda:0")
    wrapper = flashinfer.MultiLevelCascadeAttentionWrapper(2, workspace_buffer, "NHD")
    batch_size = 7
    shared_kv_num_pages, unique_kv_num_pages = 512, 128
    total_num_pages = shared_kv_num_pages + unique_kv_num_pages
    shared_kv_page_indices = torch.arange(shared_kv_num_pages).int().to("cuda:0")
    shared_kv_page_indptr = torch.tensor([0, shared_kv_num_pages], dtype=torch.int32,
                                         device="cuda:0")
    unique_kv_page_indices = torch.arange(shared_kv_num_pages, total_num_pages).int().to("cuda:0")
    unique_kv_page_indptr = torch.tensor([0, 17, 29, 44, 48, 66, 100, 128], dtype=torch.int32,
                                         device="cuda:0")
    shared_kv_last_page_len = torch.tensor([page_size], dtype=torch.int32, device="cuda:0")
    unique_kv_last_page_len = torch.tensor([1, 7, 14, 4, 3, 1, 16], dtype=torch.int32,
                                           device="cuda:0")
    kv_cache_at_layer = [
        torch.randn(total_num_pages, 2, page_size, num_kv_heads, head_dim,
                    dtype=torch.float16, device="cuda:0")
        for _ in range(num_layers)
    ]
    qo_indptr_arr = [
        torch.tensor([0, batch_size], dtype=torch.int32, device="cuda:0"),
        torch.arange(batch_size + 1, dtype=torch.int32, device="cuda:0"),
    ]
    wrapper.plan(qo_indptr_arr, [shared_kv_page_indptr, unique_kv_page_indptr],
                 [shared_kv_page_indices, unique_kv_page_indices],
                 [shared_kv_last_page_len, unique_kv_last_page_len],
                 num_qo_heads, num_kv_heads, head_dim, page_size)
    outputs, queries = [], []
    for i in range(num_layers):
        q = torch.randn(batch_size, num_qo_heads, head_dim).half().to("cuda:0")
        o = wrapper.run(q, kv_cache_at_layer[i])
        outputs.append(o)
        queries.append(q)
    print("outputs[0].shape:", tuple(outputs[0].shape))

    # --- check: plain float64 attention over the concatenated KV -------------
    torch.cuda.synchronize()
    group = num_qo_heads // num_kv_heads
    worst = 0.0
    indptr = unique_kv_page_indptr.tolist()
    lens = unique_kv_last_page_len.tolist()
    for i in range(num_layers):
        cache = kv_cache_at_layer[i].double()
        ref = torch.empty(batch_size, num_qo_heads, head_dim, dtype=torch.float64,
                          device="cuda:0")
        for b in range(batch_size):
            pages = torch.cat([shared_kv_page_indices,
                               unique_kv_page_indices[indptr[b]:indptr[b + 1]]]).long()
            n = (pages.numel() - 1) * page_size + lens[b]
            k = cache[pages, 0].reshape(-1, num_kv_heads, head_dim)[:n]
            v = cache[pages, 1].reshape(-1, num_kv_heads, head_dim)[:n]
            k, v = k.repeat_interleave(group, 1), v.repeat_interleave(group, 1)
            s = torch.einsum("hd,thd->ht", queries[i][b].double(), k) / math.sqrt(head_dim)
            ref[b] = torch.einsum("ht,thd->hd", torch.softmax(s, -1), v)
        err = ((outputs[i].double() - ref).abs().max() / ref.abs().max()).item()
        worst = max(worst, err)
    print(f"max relative error vs float64 reference over {num_layers} layers: {worst:.2e}")

    # --- time per layer: run() of one layer, back to back -------------------
    for i in range(5):
        wrapper.run(queries[i % num_layers], kv_cache_at_layer[i % num_layers])
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    reps = 200
    start.record()
    for r in range(reps):
        wrapper.run(queries[r % num_layers], kv_cache_at_layer[r % num_layers])
    stop.record()
    stop.synchronize()
    print(f"time per layer: {start.elapsed_time(stop) / reps * 1000:.1f} us "
          f"(GPU, {reps} back-to-back runs)")
    ok = worst <= 2e-3
    print("PASS" if ok else "FAIL", "(tolerance 2e-3, fp16)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
