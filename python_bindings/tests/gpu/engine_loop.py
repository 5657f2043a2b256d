"""A small serving engine over cascade_mlir's FlashInfer-shaped wrappers,
driving them the way vLLM's (vllm/v1/attention/backends/flashinfer.py) and
SGLang's (python/sglang/srt/layers/attention/flashinfer_backend.py)
FlashInfer backends drive FlashInfer 0.5.3 (issue 41, item 4), and the same
loop on torch SDPA. Shared by gpu/test_gpu_engine_loop.py (CUDA tensors:
the kernels) and test_engine_loop.py (CPU tensors: the package's float64
reference path). Written from the engines' calling conventions, not their
code.

The model: `layers` attention layers with random Q/K/V projection weights
only. A step feeds each scheduled request's new tokens (random embeddings);
per layer x -> rmsnorm -> packed qkv = h @ W -> K/V written into the paged
cache -> attention -> x + o. The schedule (SCHEDULE) prefills requests of
different lengths, decodes with requests joining (a chunked prefill whose
second chunk has a cached prefix, new requests on pages freed by finished
ones, whose stale contents must stay masked) and leaving, so that the
decode batch moves across the CUDA-graph buckets (captured once each,
replayed after re-plans).

Each engine convention is a flag (CONVENTIONS says what it does); a test
turns on one flag or an engine's whole set (PROFILES). check() runs the
engine and returns every layer's attention error of every step against
(a) the float64 reference of gpu_support.attention_ref over the same cache
contents and queries, (b) the same loop on torch SDPA (per request, causal
aligned to the request's last key, K/V repeated for GQA)."""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field
from typing import Any, Dict, FrozenSet, List, Optional, Sequence, Tuple

import cascade_mlir as cm
from gpu_support import TOL, attention_ref, rel_err, torch  # torch None: the tests skip

#: Each engine convention, as the flag that turns it on.
CONVENTIONS: Dict[str, str] = {
    "buffers": "index buffers of the largest size allocated once: plan() gets views of "
               "them (indptr[:b+1], last_page_len[:b]) and the whole kv_indices buffer, "
               "whose tail beyond indptr[-1] is stale or garbage",
    "strided_q": "q = qkv[:, :Hq*D].view(-1, Hq, D), a view of the packed QKV projection "
                 "(row stride (Hq+2Hkv)*D), for decode and prefill",
    "strided_kv": "the ragged wrapper's k, v as views of the packed QKV projection",
    "out": "run(..., out=) into row slices of a preallocated output buffer (decode rows "
           "first, prefill rows after them)",
    "graphs": "pure-decode steps through CUDA-graph decode wrappers, one per batch-size "
              "bucket (padded with empty requests), captured once, replayed after re-plans",
    "pair": "the cache as per-layer (k_cache, v_cache) [pages, page, Hkv, D] instead of "
            "the 5-D pool [pages, 2, page, Hkv, D]",
    "layer_views": "one cache allocation for every layer, [pages, layers, 2, page, Hkv, D], "
                   "each layer's cache its slice [:, l] (with pair: that slice's K and V "
                   "halves), as an engine that allocates the KV cache once hands out "
                   "per-layer views",
    "scales": "run(..., k_scale=1.0, v_scale=1.0) over an f16/bf16 cache (vLLM passes "
              "layer._k_scale_float / _v_scale_float on every call)",
    "mixed": "decodes and prefills of one step share one page table: the prefill plan "
             "gets its tail, paged_kv_indptr[num_decodes:] (first entry not 0), and the "
             "whole kv_indices (vLLM)",
    "ragged": "prefill: new tokens through the ragged wrapper (causal), the cached prefix "
              "through the paged wrapper (non-causal), merged with merge_state (SGLang)",
    "forward": "the deprecated forward() / forward_return_lse() with causal=, sm_scale=, "
               "logits_soft_cap= (and window_left=) as SGLang calls them; plan() without "
               "causal",
    "vllm_args": "plan() with vLLM's arguments: host indptr / last_page_len, the decode "
                 "plan positional (..., block_tables=None, seq_lens=None, "
                 "fixed_split_size=-1, disable_split_kv=False), the prefill plan with "
                 "sm_scale, window_left=-1, logits_soft_cap=None, fixed_split_size=-1",
    "sglang_args": "begin_forward() with SGLang's arguments (data_type=, non_blocking=True, "
                   "fixed_split_size=None, custom_mask=None and the multi-item arguments at "
                   "their defaults); captured decode wrappers re-planned through "
                   "fast_decode_plan with global_override_indptr_cpu",
}

#: What each engine does at once.
PROFILES: Dict[str, FrozenSet[str]] = {
    "tidy": frozenset(),
    "vllm": frozenset({"buffers", "strided_q", "out", "graphs", "scales", "mixed",
                       "vllm_args"}),
    "sglang": frozenset({"buffers", "strided_kv", "graphs", "pair", "ragged", "forward",
                         "sglang_args"}),
}

#: One test per convention: test name -> the conventions it turns on.
SINGLE: Dict[str, FrozenSet[str]] = {
    "tidy": frozenset(),
    "preallocated_buffers": frozenset({"buffers"}),
    "strided_q": frozenset({"strided_q"}),
    "out_view": frozenset({"out"}),
    "cuda_graph_buckets": frozenset({"graphs"}),
    "cuda_graph_buckets_on_buffers": frozenset({"graphs", "buffers"}),
    "kv_pair": frozenset({"pair"}),
    "layer_views": frozenset({"layer_views"}),
    "layer_views_pair": frozenset({"layer_views", "pair"}),
    "run_k_v_scale": frozenset({"scales"}),
    "mixed_batch": frozenset({"mixed"}),
    "mixed_batch_on_buffers": frozenset({"mixed", "buffers"}),
    "ragged_extend": frozenset({"ragged"}),
    "ragged_extend_strided_kv": frozenset({"ragged", "strided_kv"}),
    "forward_score_options": frozenset({"forward"}),
    "forward_score_options_ragged": frozenset({"forward", "ragged"}),
    "vllm_plan_args": frozenset({"vllm_args"}),
    "sglang_plan_args": frozenset({"sglang_args"}),
    "sglang_fast_decode_plan": frozenset({"sglang_args", "graphs", "buffers"}),
}

#: Those that need no GPU (no CUDA graphs).
SINGLE_ON_CPU: Dict[str, FrozenSet[str]] = {
    name: conv for name, conv in SINGLE.items() if "graphs" not in conv}

#: Steps of (request, new tokens), decodes (one new token of a running
#: request) first. A, D and H leave after step 4, E's prompt comes in two
#: chunks (steps 2, 3), F and G take the freed pages at step 6. Pure-decode
#: batches: 4 (step 1, bucket 4 captured), 6 (bucket 8 captured), 3 and 4
#: (bucket 4 replayed), 1 (bucket 1), 5 (bucket 8 replayed).
SCHEDULE: Tuple[Tuple[Tuple[str, int], ...], ...] = (
    (("A", 45), ("B", 16), ("C", 130), ("D", 3)),
    (("A", 1), ("B", 1), ("C", 1), ("D", 1)),
    (("A", 1), ("B", 1), ("C", 1), ("D", 1), ("E", 40)),
    (("A", 1), ("B", 1), ("C", 1), ("D", 1), ("E", 29), ("H", 7)),
    (("A", 1), ("B", 1), ("C", 1), ("D", 1), ("E", 1), ("H", 1)),
    (("B", 1), ("C", 1), ("E", 1)),
    (("F", 20), ("G", 33)),
    (("C", 1), ("F", 1), ("G", 1), ("E", 1)),
    (("F", 1),),
    (("B", 1), ("C", 1), ("E", 1), ("F", 1), ("G", 1)),
)
BUCKETS = (1, 2, 4, 8)
WORKSPACE_BYTES = 128 << 20
I32 = None if torch is None else torch.int32


def _totals(schedule: Sequence[Sequence[Tuple[str, int]]]) -> Dict[str, int]:
    out: Dict[str, int] = {}
    for step in schedule:
        for req, n in step:
            out[req] = out.get(req, 0) + n
    return out


@dataclass
class Model:
    """Random Q/K/V projections and token embeddings (float32 draws from
    one generator, so every engine and the SDPA loop see the same model)."""

    hq: int
    hkv: int
    d: int
    page: int
    dtype: torch.dtype
    device: torch.device
    w: List[torch.Tensor]
    emb: Dict[str, torch.Tensor]

    @property
    def hidden(self) -> int:
        return self.hq * self.d

    @property
    def sm_scale(self) -> float:
        return self.d ** -0.5

    @property
    def layers(self) -> int:
        return len(self.w)

    def qkv(self, x: torch.Tensor, layer: int) -> torch.Tensor:
        """The packed projection [rows, (Hq + 2 Hkv) D] of rmsnorm(x)."""
        xf = x.float()
        h = (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-6)).to(self.dtype)
        return h @ self.w[layer]

    def split(self, qkv: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """q, k, v as views of the packed projection (strided rows)."""
        a, b = self.hq * self.d, (self.hq + self.hkv) * self.d
        return (qkv[:, :a].view(-1, self.hq, self.d), qkv[:, a:b].view(-1, self.hkv, self.d),
                qkv[:, b:].view(-1, self.hkv, self.d))


def make_model(hq: int, hkv: int, d: int, dtype: Any, device: Any, seed: int,
               layers: int = 3, page: int = 16) -> Model:
    gen = torch.Generator().manual_seed(seed)
    dt = getattr(torch, dtype) if isinstance(dtype, str) else dtype
    hidden = hq * d
    w = [(torch.randn(hidden, (hq + 2 * hkv) * d, generator=gen) / math.sqrt(hidden))
         .to(device=device, dtype=dt) for _ in range(layers)]
    emb = {r: torch.randn(n, hidden, generator=gen).to(device=device, dtype=dt)
           for r, n in sorted(_totals(SCHEDULE).items())}
    return Model(hq, hkv, d, page, dt, torch.device(device), w, emb)


# --- torch SDPA --------------------------------------------------------------

def sdpa_loop(m: Model) -> List[List[torch.Tensor]]:
    """The schedule on torch SDPA with contiguous per-request K/V: per step,
    per layer, the attention output of the step's rows."""
    kv: Dict[Tuple[str, int], Tuple[torch.Tensor, torch.Tensor]] = {}
    lens: Dict[str, int] = {}
    group = m.hq // m.hkv
    results = []
    for step in SCHEDULE:
        x = torch.cat([m.emb[r][lens.get(r, 0):lens.get(r, 0) + n] for r, n in step])
        outs = []
        for layer in range(m.layers):
            q, k, v = m.split(m.qkv(x, layer))
            o = torch.empty(x.shape[0], m.hq, m.d, dtype=m.dtype, device=m.device)
            r0 = 0
            for r, n in step:
                old = kv.get((r, layer))
                kk, vv = k[r0:r0 + n], v[r0:r0 + n]
                if old is not None:
                    kk, vv = torch.cat([old[0], kk]), torch.cat([old[1], vv])
                kv[(r, layer)] = (kk, vv)
                total = kk.shape[0]
                pos = torch.arange(total, device=m.device)
                mask = pos[None, :] <= (total - n + torch.arange(n, device=m.device))[:, None]
                heads = [t.repeat_interleave(group, dim=1).transpose(0, 1)[None]
                         for t in (kk, vv)]
                o[r0:r0 + n] = torch.nn.functional.scaled_dot_product_attention(
                    q[r0:r0 + n].transpose(0, 1)[None], heads[0], heads[1],
                    attn_mask=mask, scale=m.sm_scale)[0].transpose(0, 1)
                r0 += n
            outs.append(o)
            x = x + o.reshape(x.shape[0], m.hidden)
        for r, n in step:
            lens[r] = lens.get(r, 0) + n
        results.append(outs)
    return results


# --- the engine ----------------------------------------------------------------

@dataclass
class Table:
    """A CSR page table over some requests (host int32 tensors)."""

    indptr: torch.Tensor
    indices: torch.Tensor
    last: torch.Tensor

    @property
    def batch(self) -> int:
        return self.last.numel()

    def padded(self, batch: int) -> "Table":
        """Padded with empty requests (indptr repeated, last page length 1),
        as vLLM pads a decode batch to its CUDA-graph bucket."""
        extra = batch - self.batch
        return Table(torch.cat([self.indptr, self.indptr[-1:].repeat(extra)]), self.indices,
                     torch.cat([self.last, torch.ones(extra, dtype=I32)]))


class IndexBuffers:
    """An engine's index buffers, allocated once at their largest size;
    kv_indices starts out as garbage (ids past the cache, negative ids).
    indptr / last / qo are what plan() gets: device buffers, or host ones
    where the engine plans from host arrays (vLLM); the CUDA-graph wrappers
    are built on the device ones (indptr_dev, last_dev)."""

    def __init__(self, max_reqs: int, num_pages: int, device: Any, host: bool):
        dev = torch.device(device)
        garbage = torch.randint(-(2 ** 31), 2 ** 31 - 1, (num_pages + 64,), dtype=I32)
        garbage[1::3] = num_pages + 7
        self.indices = garbage.to(dev)
        self.indptr_dev = torch.zeros(max_reqs + 1, dtype=I32, device=dev)
        self.last_dev = torch.zeros(max_reqs, dtype=I32, device=dev)
        where = torch.device("cpu") if host else dev
        self.qo = torch.zeros(max_reqs + 1, dtype=I32, device=where)
        self.indptr = torch.zeros_like(self.indptr_dev, device=where) if host \
            else self.indptr_dev
        self.last = torch.zeros_like(self.last_dev, device=where) if host else self.last_dev

    def fill(self, t: Table, qo: Optional[torch.Tensor] = None) -> None:
        b, n = t.batch, t.indices.numel()
        for buf in {id(x): x for x in (self.indptr, self.indptr_dev)}.values():
            buf[:b + 1].copy_(t.indptr)
        for buf in {id(x): x for x in (self.last, self.last_dev)}.values():
            buf[:b].copy_(t.last)
        self.indices[:n].copy_(t.indices)
        if qo is not None:
            self.qo[:b + 1].copy_(qo)


@dataclass
class Graph:
    """A batch-size bucket's CUDA graph: wrapper, static inputs, outputs."""

    wrapper: Any
    bucket: int
    x: torch.Tensor
    page_ids: torch.Tensor
    offsets: torch.Tensor
    out: List[torch.Tensor]
    graph: Any = None
    q: List[torch.Tensor] = field(default_factory=list)
    o: List[torch.Tensor] = field(default_factory=list)


@dataclass
class StepResult:
    """Per layer the queries and attention outputs of the step's rows, and
    the page table of the step's requests (their whole KV, new tokens
    included) for the reference."""

    q: List[torch.Tensor]
    o: List[torch.Tensor]
    qo_indptr: torch.Tensor
    table: Table


class Engine:
    def __init__(self, m: Model, conv: FrozenSet[str], seed: int):
        unknown = set(conv) - set(CONVENTIONS)
        assert not unknown, unknown
        assert not ({"mixed", "ragged"} <= conv), "vLLM mixes, SGLang runs ragged"
        self.m, self.c = m, conv
        self.cuda = m.device.type == "cuda"
        assert self.cuda or "graphs" not in conv, "CUDA graphs need a GPU"
        totals = _totals(SCHEDULE)
        self.num_pages = sum(-(-n // m.page) for n in totals.values())
        self.max_rows = max(sum(n for _, n in step) for step in SCHEDULE)
        self.max_reqs = max(BUCKETS[-1], max(len(step) for step in SCHEDULE))
        gen = torch.Generator().manual_seed(seed)
        # LIFO free list over shuffled page ids: freed pages are reused first.
        self.free = torch.randperm(self.num_pages, generator=gen).tolist()
        self.scratch = self.num_pages  # where padded graph rows write their K/V
        self.pages: Dict[str, List[int]] = {}
        self.lens: Dict[str, int] = {}
        # Junk in every slot: what a request has not written must stay masked.
        shape = (self.num_pages + 1, 2, m.page, m.hkv, m.d)
        self.caches: List[Any] = []
        every = None
        if "layer_views" in conv:
            every = torch.randn((shape[0], m.layers) + shape[1:], generator=gen).to(
                device=m.device, dtype=m.dtype)
        for layer in range(m.layers):
            if every is not None:
                pool = every[:, layer]
                self.caches.append((pool[:, 0], pool[:, 1]) if "pair" in conv else pool)
                continue
            pool = torch.randn(shape, generator=gen).to(device=m.device, dtype=m.dtype)
            self.caches.append((pool[:, 0].contiguous(), pool[:, 1].contiguous())
                               if "pair" in conv else pool)
        dev = m.device
        # One workspace for every wrapper, as both engines share theirs.
        self.ws = torch.empty(WORKSPACE_BYTES if self.cuda else 1, dtype=torch.uint8,
                              device=dev)
        tc = {"use_tensor_cores": True} if conv & {"vllm_args", "sglang_args"} else {}
        self.decode_w = cm.BatchDecodeWithPagedKVCacheWrapper(self.ws, "NHD", **tc)
        self.prefill_w = cm.BatchPrefillWithPagedKVCacheWrapper(self.ws, "NHD")
        self.ragged_w = cm.BatchPrefillWithRaggedKVCacheWrapper(self.ws, "NHD")
        self.bufs: Optional[IndexBuffers] = None
        self.pre_bufs: Optional[IndexBuffers] = None
        if "buffers" in conv:
            host = "vllm_args" in conv
            self.bufs = IndexBuffers(self.max_reqs, self.num_pages, dev, host)
            self.pre_bufs = IndexBuffers(self.max_reqs, self.num_pages, dev, host)
        self.out_buf = [torch.empty(self.max_rows, m.hq, m.d, dtype=m.dtype, device=dev)
                        for _ in range(m.layers)] if "out" in conv else None
        self.graphs: Dict[int, Graph] = {}

    # --- bookkeeping ---------------------------------------------------------

    def release(self, req: str) -> None:
        self.free.extend(reversed(self.pages.pop(req)))
        del self.lens[req]

    def _table(self, entries: Sequence[Tuple[str, int]], prefix: bool = False) -> Table:
        """Page table of the requests' KV after the step (prefix: before it)."""
        indptr, indices, last = [0], [], []
        for req, n in entries:
            length = self.lens[req] - (n if prefix else 0)
            pages = -(-length // self.m.page)
            indices += self.pages[req][:pages]
            indptr.append(indptr[-1] + pages)
            last.append(length - (pages - 1) * self.m.page if pages else 1)
        return Table(torch.tensor(indptr, dtype=I32), torch.tensor(indices, dtype=I32),
                     torch.tensor(last, dtype=I32))

    def _dev(self, t: torch.Tensor, host_ok: bool = True) -> torch.Tensor:
        """A fresh exact-size index array where no buffers are kept: on the
        device, or on the host for vLLM's indptr / last_page_len."""
        return t if host_ok and "vllm_args" in self.c else t.to(self.m.device)

    # --- plan() / run() as the engines spell them ---------------------------

    def _plan_decode(self, w: Any, indptr: Any, indices: Any, last: Any,
                     override: Optional[torch.Tensor] = None) -> None:
        m = self.m
        if "vllm_args" in self.c:
            w.plan(indptr, indices, last, m.hq, m.hkv, m.d, m.page, "NONE", -1, None,
                   m.dtype, m.dtype, None, m.sm_scale, None, None, True, None, None, -1,
                   False)
        elif "sglang_args" in self.c:
            kw: Dict[str, Any] = {}
            if isinstance(w.begin_forward, functools.partial):  # fast_decode_plan
                kw["global_override_indptr_cpu"] = override
            w.begin_forward(indptr, indices, last, m.hq, m.hkv, m.d, m.page,
                            data_type=m.dtype, q_data_type=m.dtype, non_blocking=True,
                            fixed_split_size=None, disable_split_kv=False, **kw)
        else:
            w.plan(indptr, indices, last, m.hq, m.hkv, m.d, m.page, q_data_type=m.dtype,
                   kv_data_type=m.dtype)

    def _plan_prefill(self, qo: Any, indptr: Any, indices: Any, last: Any,
                      causal: bool) -> None:
        m, w = self.m, self.prefill_w
        if "vllm_args" in self.c:
            w.plan(qo, indptr, indices, last, m.hq, m.hkv, m.d, m.page, causal=causal,
                   sm_scale=m.sm_scale, window_left=-1, logits_soft_cap=None,
                   q_data_type=m.dtype, kv_data_type=m.dtype, fixed_split_size=-1,
                   disable_split_kv=False)
            return
        kw: Dict[str, Any] = {} if "forward" in self.c else {"causal": causal}
        if "sglang_args" in self.c:
            w.begin_forward(qo, indptr, indices, last, m.hq, m.hkv, m.d, m.page,
                            q_data_type=m.dtype, kv_data_type=m.dtype, custom_mask=None,
                            non_blocking=True, fixed_split_size=None, prefix_len_ptr=None,
                            token_pos_in_items_ptr=None, token_pos_in_items_len=0,
                            max_item_len_ptr=None, **kw)
        else:
            w.plan(qo, indptr, indices, last, m.hq, m.hkv, m.d, m.page,
                   q_data_type=m.dtype, kv_data_type=m.dtype, **kw)

    def _plan_ragged(self, qo: Any) -> None:
        m = self.m
        kw: Dict[str, Any] = {} if "forward" in self.c else {"causal": True}
        fn = self.ragged_w.begin_forward if "sglang_args" in self.c else self.ragged_w.plan
        fn(qo, qo, m.hq, m.hkv, m.d, q_data_type=m.dtype, **kw)

    def _scales(self) -> Dict[str, float]:
        return {"k_scale": 1.0, "v_scale": 1.0} if "scales" in self.c else {}

    def _score(self, causal: Optional[bool]) -> Dict[str, Any]:
        """forward()'s score options, as SGLang passes them."""
        kw: Dict[str, Any] = {"sm_scale": self.m.sm_scale, "logits_soft_cap": 0.0}
        if causal is not None:
            kw["causal"] = causal
        return kw

    def _run_paged(self, w: Any, q: torch.Tensor, cache: Any, out: Optional[torch.Tensor],
                   causal: Optional[bool]) -> torch.Tensor:
        """Decode (causal None) or prefill over the paged cache."""
        if "forward" in self.c:
            return w.forward(q, cache, **self._score(causal), **self._scales())
        kw: Dict[str, Any] = dict(self._scales())
        if out is not None:
            kw["out"] = out
        return w.run(q, cache, **kw)

    def _run_extend(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, cache: Any,
                    out: Optional[torch.Tensor], has_prefix: bool) -> torch.Tensor:
        """SGLang's extend: the new tokens on the ragged wrapper, the cached
        prefix (if any request has one) on the paged one, merged."""
        if "strided_kv" not in self.c:
            k, v = k.contiguous(), v.contiguous()
        fwd = "forward" in self.c
        if not has_prefix:
            if fwd:
                return self.ragged_w.forward(q, k, v, **self._score(True))
            return self.ragged_w.run(q, k, v, **({} if out is None else {"out": out}))
        if fwd:
            o1, s1 = self.ragged_w.forward_return_lse(q, k, v, window_left=-1,
                                                      **self._score(True))
            o2, s2 = self.prefill_w.forward_return_lse(q, cache, window_left=-1,
                                                       **self._score(False),
                                                       **self._scales())
        else:
            o1, s1 = self.ragged_w.run_return_lse(q, k, v)
            o2, s2 = self.prefill_w.run_return_lse(q, cache, **self._scales())
        o, _ = cm.merge_state(o1, s1, o2, s2)
        if out is not None:
            out.copy_(o)
            return out
        return o

    # --- a step ------------------------------------------------------------

    def _write_slots(self, layer: int, k: torch.Tensor, v: torch.Tensor,
                     page_ids: torch.Tensor, offsets: torch.Tensor) -> None:
        """K/V written by slot (vLLM's slot_mapping, SGLang's cache_loc)."""
        cache = self.caches[layer]
        if isinstance(cache, tuple):
            cache[0][page_ids, offsets] = k
            cache[1][page_ids, offsets] = v
        else:
            cache[page_ids, 0, offsets] = k
            cache[page_ids, 1, offsets] = v

    def step(self, entries: Sequence[Tuple[str, int]]) -> StepResult:
        m, c = self.m, self.c
        dec = [(r, n) for r, n in entries if r in self.lens and n == 1]
        pre = [(r, n) for r, n in entries if (r, n) not in dec]
        assert list(entries) == dec + pre, "decodes first, as vLLM orders a batch"
        nd, rows = len(dec), sum(n for _, n in entries)
        x = torch.cat([m.emb[r][self.lens.get(r, 0):self.lens.get(r, 0) + n]
                       for r, n in entries])
        for r, n in entries:
            self.lens[r] = self.lens.get(r, 0) + n
            while len(self.pages.setdefault(r, [])) * m.page < self.lens[r]:
                self.pages[r].append(self.free.pop())
        full = self._table(entries)
        qo_all = torch.zeros(len(entries) + 1, dtype=I32)
        qo_all[1:] = torch.cumsum(torch.tensor([n for _, n in entries]), 0)
        if not pre and "graphs" in c and nd <= BUCKETS[-1]:
            q, o = self._graph_step(dec, x, full)
        else:
            q, o = self._eager_step(dec, pre, x, full, qo_all)
        assert all(t.shape[0] == rows for t in o)
        return StepResult(q, o, qo_all, full)

    def _eager_step(self, dec: List[Tuple[str, int]], pre: List[Tuple[str, int]],
                    x: torch.Tensor, full: Table, qo_all: torch.Tensor
                    ) -> Tuple[List[torch.Tensor], List[torch.Tensor]]:
        m, c = self.m, self.c
        nd, npre = len(dec), len(pre)
        rows = x.shape[0]
        # The plans: once per step, before the layers.
        qo_pre = qo_all[nd:] - qo_all[nd]
        ragged = "ragged" in c and npre > 0
        has_prefix = ragged and any(self.lens[r] > n for r, n in pre)
        if "mixed" in c:
            # vLLM: one table for the step; the prefill plan gets its tail.
            if self.bufs is not None:
                assert self.pre_bufs is not None
                self.pre_bufs.qo[:npre + 1].copy_(qo_pre)
                qo_arg = self.pre_bufs.qo[:npre + 1]
            else:
                qo_arg = self._dev(qo_pre)
            ip, ix, ls = self._args(self.bufs, full)
            if nd:
                self._plan_decode(self.decode_w, ip[:nd + 1], ix, ls[:nd])
            if npre:
                self._plan_prefill(qo_arg, ip[nd:], ix, ls[nd:], causal=True)
        else:
            if nd:
                self._plan_decode(self.decode_w, *self._args(self.bufs, self._table(dec)))
            if npre:
                t = self._table(pre, prefix=ragged)
                qo_arg, ip, ix, ls = self._args(self.pre_bufs, t, qo_pre)
                if ragged:
                    self._plan_ragged(qo_arg)
                if not ragged or has_prefix:
                    self._plan_prefill(qo_arg, ip, ix, ls, causal=not ragged)
        # FlashInfer's append flow for the K/V writes of the step.
        kvp, kvi, kvl = (t.to(m.device) for t in (full.indptr, full.indices, full.last))
        bi, pos = cm.get_batch_indices_positions(
            qo_all.to(m.device), cm.get_seq_lens(kvp, kvl, m.page), rows)
        qs, outs = [], []
        for layer in range(m.layers):
            q, k, v = m.split(m.qkv(x, layer))
            cache = self.caches[layer]
            cm.append_paged_kv_cache(k, v, bi, pos, cache, kvi, kvp, kvl, "NHD")
            if "strided_q" not in c:
                q = q.contiguous()
            # out= where run() takes it (FlashInfer's forward() has none).
            ob = None if self.out_buf is None or "forward" in c else self.out_buf[layer]
            parts = []
            if nd:
                parts.append(self._run_paged(self.decode_w, q[:nd], cache,
                                             None if ob is None else ob[:nd], None))
            if npre:
                op = None if ob is None else ob[nd:rows]
                if ragged:
                    parts.append(self._run_extend(q[nd:], k[nd:], v[nd:], cache, op,
                                                  has_prefix))
                else:
                    parts.append(self._run_paged(self.prefill_w, q[nd:], cache, op, True))
            # With out=, what the engine reads next is its buffer.
            o = ob[:rows] if ob is not None else torch.cat(parts)
            qs.append(q)
            outs.append(o.clone())
            x = x + o.reshape(rows, m.hidden)
        return qs, outs

    def _args(self, bufs: Optional[IndexBuffers], t: Table,
              qo: Optional[torch.Tensor] = None) -> Tuple[Any, ...]:
        """(qo_indptr,) indptr, indices, last_page_len for plan(): views of
        the engine's buffers (the whole kv_indices buffer, or for vLLM its
        used slice) or fresh exact arrays."""
        b = t.batch
        if bufs is None:
            head = () if qo is None else (self._dev(qo),)
            return head + (self._dev(t.indptr), self._dev(t.indices, False),
                           self._dev(t.last))
        bufs.fill(t, qo)
        ix = bufs.indices[:t.indices.numel()] if "vllm_args" in self.c else bufs.indices
        head = () if qo is None else (bufs.qo[:b + 1],)
        return head + (bufs.indptr[:b + 1], ix, bufs.last[:b])

    # --- CUDA-graph decode ------------------------------------------------------

    def _graph_step(self, dec: List[Tuple[str, int]], x: torch.Tensor, full: Table
                    ) -> Tuple[List[torch.Tensor], List[torch.Tensor]]:
        m = self.m
        nd = len(dec)
        bucket = min(b for b in BUCKETS if b >= nd)
        g = self.graphs.get(bucket)
        if g is None:
            g = self.graphs[bucket] = self._new_graph(bucket)
        t = full.padded(bucket)
        self._plan_decode(g.wrapper, *self._args(self.bufs, t), override=t.indptr)
        # Static inputs: the rows, and the slots of their new K/V (padded
        # rows write into the scratch page).
        g.x.zero_()
        g.x[:nd] = x
        g.page_ids.fill_(self.scratch)
        g.offsets.copy_(torch.arange(bucket, device=m.device))
        for i, (r, _) in enumerate(dec):
            pos = self.lens[r] - 1
            g.page_ids[i] = self.pages[r][pos // m.page]
            g.offsets[i] = pos % m.page
        if g.graph is None:
            self._graph_body(g)  # warm-up, eager
            torch.cuda.synchronize()
            g.graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g.graph):
                self._graph_body(g)
            if "sglang_args" in self.c:
                g.wrapper.begin_forward = functools.partial(cm.fast_decode_plan, g.wrapper)
        g.graph.replay()
        return [q[:nd].clone() for q in g.q], [o[:nd].clone() for o in g.o]

    def _new_graph(self, bucket: int) -> Graph:
        m, dev = self.m, self.m.device
        if self.bufs is not None:
            # vLLM / SGLang: the decode wrapper in CUDA-graph mode over views
            # of the engine's buffers (indptr[:bs+1], the whole indices).
            w = cm.BatchDecodeWithPagedKVCacheWrapper(
                self.ws, "NHD", use_cuda_graph=True, use_tensor_cores=True,
                paged_kv_indptr_buffer=self.bufs.indptr_dev[:bucket + 1],
                paged_kv_indices_buffer=self.bufs.indices,
                paged_kv_last_page_len_buffer=self.bufs.last_dev[:bucket])
        else:
            w = cm.CUDAGraphBatchDecodeWithPagedKVCacheWrapper(
                self.ws, torch.empty(bucket + 1, dtype=I32, device=dev),
                torch.empty(self.num_pages, dtype=I32, device=dev),
                torch.empty(bucket, dtype=I32, device=dev), "NHD")
        out = [torch.empty(bucket, m.hq, m.d, dtype=m.dtype, device=dev)
               for _ in range(m.layers)]
        return Graph(w, bucket, torch.zeros(bucket, m.hidden, dtype=m.dtype, device=dev),
                     torch.zeros(bucket, dtype=torch.long, device=dev),
                     torch.zeros(bucket, dtype=torch.long, device=dev), out)

    def _graph_body(self, g: Graph) -> None:
        """One decode forward of the bucket: what the graph captures."""
        m = self.m
        x = g.x
        g.q, g.o = [], []
        for layer in range(m.layers):
            q, k, v = m.split(m.qkv(x, layer))
            self._write_slots(layer, k, v, g.page_ids, g.offsets)
            if "strided_q" not in self.c:
                q = q.contiguous()
            out = g.out[layer] if "out" in self.c and "forward" not in self.c else None
            o = self._run_paged(g.wrapper, q, self.caches[layer], out, None)
            if out is not None:
                o = out
            g.q.append(q)
            g.o.append(o)
            x = x + o.reshape(g.bucket, m.hidden)


# --- the check ---------------------------------------------------------------

_SDPA: Dict[Tuple[Any, ...], List[List[torch.Tensor]]] = {}


def check(m: Model, conv: FrozenSet[str], seed: int, key: Tuple[Any, ...]) -> List[str]:
    """Runs the schedule on an engine with conventions `conv`; returns one
    line per layer and step whose attention output misses (a) the float64
    reference over the engine's cache by more than TOL, or (b) the SDPA
    loop by more than 3 TOL (the loops' inputs drift apart by rounding
    through the layers and steps). `key` caches the SDPA loop."""
    if key not in _SDPA:
        _SDPA[key] = sdpa_loop(m)
    sdpa = _SDPA[key]
    eng = Engine(m, conv, seed)
    last_step = {r: i for i, step in enumerate(SCHEDULE) for r, _ in step}
    tol = TOL[str(m.dtype).replace("torch.", "")]
    bad = []
    for i, step in enumerate(SCHEDULE):
        res = eng.step(step)
        for layer in range(m.layers):
            ref, _ = attention_ref(res.q[layer], eng.caches[layer], "NHD", res.qo_indptr,
                                   res.table.indptr, res.table.indices, res.table.last,
                                   m.page, causal=True)
            e64 = rel_err(res.o[layer], ref)
            esd = rel_err(res.o[layer], sdpa[i][layer])
            if not (e64 <= tol and esd <= 3 * tol):
                bad.append(f"step {i} {[r for r, _ in step]} layer {layer}: "
                           f"{e64:.2e} against float64 (tol {tol:.1e}), {esd:.2e} against "
                           f"the SDPA loop (tol {3 * tol:.1e})")
        for r, _ in step:
            if last_step[r] == i:
                eng.release(r)
    return bad
