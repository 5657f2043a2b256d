"""A transformers attention backend: shared-prompt generation where every
sequence's attention is a two-level cascade (the shared prompt's pages, read
once for the whole batch, plus the sequence's own pages).

    from cascade_mlir import transformers_backend as tb
    tb.register()                                   # AttentionInterface
    model.set_attn_implementation(tb.ATTENTION)     # "cascade_mlir"
    cache = tb.SharedPromptCache.for_model(model, batch_size=64, prompt_len=8192,
                                           max_own_tokens=160, device="cuda")
    cache.plan_prompt()                             # the prompt, once
    model(prompt_ids, position_ids=..., cascade_cache=cache, use_cache=False)
    cache.plan_step(num_new=1)                      # once per step
    logits = model(tokens, position_ids=..., cascade_cache=cache,
                   use_cache=False).logits          # attention: the cascade

`generate()` runs that loop (prompt prefill, each sequence's own prefix,
greedy decode). The cache is the package's own, with a plan point per
step (plan_step); docs/python.md says why transformers' continuous-batching
cache is not bound yet (it could be without copies, but its loop has no
per-step plan hook).

Inside the model the attention is `torch.ops.cascade_mlir.run` (torch_ops):
`torch.compile(fullgraph=True)` traces the model with no graph break, and
with `use_cuda_graph=True` a captured decode step replays after each
plan_step() (the plan lives in the workspace the captured kernels read).
"""

import math
import time
from typing import Any, Callable, Dict, List, Optional, Tuple

import numpy as np
import torch

from . import torch_ops
from .cascade import MultiLevelCascadeAttentionWrapper
from .prefill import BatchPrefillWithPagedKVCacheWrapper

__all__ = ["ATTENTION", "register", "SharedPromptCache", "cascade_attention_forward",
           "generate", "generate_sdpa", "StepTimer", "greedy_agreement",
           "agreement_lines"]

#: The name the backend is registered under (AttentionInterface).
ATTENTION = "cascade_mlir"

#: random_model's planted-bigram strength whose greedy choices are as
#: decisive, against rounding noise, as a trained model's (docs/python.md,
#: "Greedy tokens with random weights": how it was calibrated).
CALIBRATED_BIGRAM = 1.07


def cascade_attention_forward(module: torch.nn.Module, query: torch.Tensor,
                              key: torch.Tensor, value: torch.Tensor,
                              attention_mask: Optional[torch.Tensor],
                              scaling: Optional[float] = None, dropout: float = 0.0,
                              cascade_cache: Optional["SharedPromptCache"] = None,
                              **kwargs: Any) -> Tuple[torch.Tensor, None]:
    """transformers' attention-function signature: query [B, Hq, T, D],
    key / value [B, Hkv, T, D] (the step's new tokens, RoPE applied);
    returns [B, T, Hq, D]. The KV history is `cascade_cache`'s."""
    if cascade_cache is None:
        raise ValueError("the cascade_mlir attention needs its cache: call the model "
                         "with cascade_cache=SharedPromptCache(...) and use_cache=False")
    if dropout:
        raise ValueError("the cascade_mlir attention is for inference (dropout=0)")
    b, hq, t, d = query.shape
    q = query.transpose(1, 2).reshape(b * t, hq, d)
    k = key.transpose(1, 2).reshape(b * t, key.shape[1], d)
    v = value.transpose(1, 2).reshape(b * t, value.shape[1], d)
    out = cascade_cache.attend(module.layer_idx, q, k, v, scaling)
    return out.view(b, t, hq, d), None


_registered = False


def register() -> None:
    """Registers the backend with transformers' AttentionInterface as
    ATTENTION (no mask function: the cache knows every sequence's extent,
    and transformers builds no mask for a backend without one)."""
    global _registered
    if _registered:
        return
    from transformers import AttentionInterface
    AttentionInterface.register(ATTENTION, cascade_attention_forward)
    _registered = True


class SharedPromptCache:
    """The package's paged KV cache for a batch sharing one prompt.

    Per layer one 5-D pool [pages, 2, page_size, Hkv, D] (NHD). Pages
    [0, prompt_pages) hold the shared prompt; sequence b owns the
    `own_pages` pages after them, filled in order. Three wrappers: a batch
    prefill (causal) for the prompt, and two 2-level MultiLevelCascades for
    everything after it (level 0: the prompt for all rows, level 1: each
    sequence's own pages): `extend` for steps of several tokens per
    sequence (causal on the last level), `cascade` for decode steps (in
    CUDA-graph mode with index buffers for the largest step).

    plan_prompt() / plan_step(n) plan the next forward (host work, once per
    step, outside any compiled or captured region); attend() (the model's
    attention, per layer) writes the step's K/V into the pools and runs the
    planned wrapper through the torch ops.
    """

    def __init__(self, num_layers: int, batch_size: int, prompt_len: int,
                 max_own_tokens: int, num_qo_heads: int, num_kv_heads: int,
                 head_dim: int, dtype: torch.dtype = torch.float16,
                 device: Any = "cuda", page_size: int = 16,
                 workspace_bytes: int = 128 << 20, use_cuda_graph: bool = False):
        if prompt_len < 1 or batch_size < 1 or max_own_tokens < 1:
            raise ValueError("prompt_len, batch_size and max_own_tokens must be >= 1")
        self.num_layers, self.batch_size = num_layers, batch_size
        self.prompt_len, self.max_own_tokens = prompt_len, max_own_tokens
        self.hq, self.hkv, self.d = num_qo_heads, num_kv_heads, head_dim
        self.page, self.dtype = page_size, dtype
        self.device = torch.device(device)
        self.prompt_pages = -(-prompt_len // page_size)
        self.own_pages = -(-max_own_tokens // page_size)
        pages = self.prompt_pages + batch_size * self.own_pages
        self.pools = [torch.zeros(pages, 2, page_size, num_kv_heads, head_dim, dtype=dtype,
                                  device=self.device) for _ in range(num_layers)]
        cuda = self.device.type == "cuda"
        ws = (lambda: torch.empty(workspace_bytes, dtype=torch.uint8,
                                  device=self.device)) if cuda else (lambda: None)
        self.prefill = BatchPrefillWithPagedKVCacheWrapper(ws(), "NHD")
        # Steps of several tokens per sequence (the own prefixes): causal
        # prefill kernels on the last level, never captured.
        self.extend = MultiLevelCascadeAttentionWrapper(2, ws(), "NHD")
        # Decode steps: with use_cuda_graph, the plan's arrays live in index
        # buffers sized for the last step (every sequence holding
        # max_own_tokens), so a captured step replays after every plan.
        graph = use_cuda_graph and cuda
        buffers: Dict[str, Any] = {}
        if graph:
            def i32(*sizes: int) -> List[torch.Tensor]:
                return [torch.empty(n, dtype=torch.int32, device=self.device) for n in sizes]
            buffers = dict(qo_indptr_buf_arr=i32(2, batch_size + 1),
                           paged_kv_indptr_buf_arr=i32(2, batch_size + 1),
                           paged_kv_indices_buf_arr=i32(self.prompt_pages,
                                                        batch_size * self.own_pages),
                           paged_kv_last_page_len_buf_arr=i32(1, batch_size))
        self.cascade = MultiLevelCascadeAttentionWrapper(2, ws(), "NHD", use_cuda_graph=graph,
                                                         **buffers)
        self._handles = {"prefill": torch_ops.register(self.prefill),
                         "extend": torch_ops.register(self.extend),
                         "cascade": torch_ops.register(self.cascade)}
        self.own_len = 0          # tokens each sequence holds after the prompt
        self.prompt_done = False
        self._pending = 0         # tokens the planned step appends per sequence
        self._handle = self._handles["prefill"]
        self._write: Tuple[torch.Tensor, torch.Tensor] = (torch.empty(0), torch.empty(0))
        self._scale = head_dim ** -0.5
        #: Optional hooks around each attention call (StepTimer).
        self.timer: Optional["StepTimer"] = None

    @classmethod
    def for_model(cls, model: Any, batch_size: int, prompt_len: int, max_own_tokens: int,
                  **kwargs: Any) -> "SharedPromptCache":
        c = model.config
        d = getattr(c, "head_dim", None) or c.hidden_size // c.num_attention_heads
        kwargs.setdefault("dtype", model.dtype)
        kwargs.setdefault("device", model.device)
        return cls(c.num_hidden_layers, batch_size, prompt_len, max_own_tokens,
                   c.num_attention_heads, c.num_key_value_heads, d, **kwargs)

    def _plan_kwargs(self) -> Dict[str, Any]:
        return dict(num_qo_heads=self.hq, num_kv_heads=self.hkv, page_size=self.page,
                    q_data_type=self.dtype)

    def _prompt_last(self) -> int:
        return self.prompt_len - (self.prompt_pages - 1) * self.page

    def plan_prompt(self) -> None:
        """Plans the prompt's forward: one sequence of prompt_len tokens,
        causal, over the prompt's pages."""
        i32 = np.int32
        n = self.prompt_len
        self.prefill.plan(np.array([0, n], i32), np.array([0, self.prompt_pages], i32),
                          np.arange(self.prompt_pages, dtype=i32),
                          np.array([self._prompt_last()], i32), head_dim_qk=self.d,
                          causal=True, **self._plan_kwargs())
        pos = torch.arange(n)
        self._set_write(pos // self.page, pos % self.page)
        self._handle, self._pending = self._handles["prefill"], 0

    def plan_step(self, num_new: int = 1) -> None:
        """Plans a step that appends num_new tokens to every sequence (its
        own prefix: several, a decode step: 1): the 2-level cascade."""
        if not self.prompt_done:
            raise ValueError("plan_prompt() and the prompt's forward come first")
        after = self.own_len + num_new
        if after > self.max_own_tokens:
            raise ValueError(f"a sequence would hold {after} own tokens; the cache was "
                             f"made for {self.max_own_tokens}")
        i32, b, page = np.int32, self.batch_size, self.page
        used = -(-after // page)
        first = self.prompt_pages + np.arange(b, dtype=i32) * self.own_pages
        indices = (first[:, None] + np.arange(used, dtype=i32)[None, :]).reshape(-1)
        wrapper = self.cascade if num_new == 1 else self.extend
        wrapper.plan(
            [np.array([0, b * num_new], i32), np.arange(b + 1, dtype=i32) * num_new],
            [np.array([0, self.prompt_pages], i32), np.arange(b + 1, dtype=i32) * used],
            [np.arange(self.prompt_pages, dtype=i32), indices],
            [np.array([self._prompt_last()], i32),
             np.full(b, after - (used - 1) * page, i32)],
            head_dim=self.d, causal=num_new > 1, **self._plan_kwargs())
        pos = torch.arange(self.own_len, after)
        pidx = torch.from_numpy(first).long()[:, None] + (pos // page)[None, :]
        self._set_write(pidx.reshape(-1), (pos % page).expand(b, -1).reshape(-1))
        self._handle = self._handles["cascade" if num_new == 1 else "extend"]
        self._pending = num_new

    def _set_write(self, pages: torch.Tensor, offsets: torch.Tensor) -> None:
        # Fixed-size index buffers when captured: copied in place.
        pages, offsets = pages.to(self.device), offsets.to(self.device)
        w = self._write
        if w[0].shape == pages.shape and w[0].device == self.device:
            w[0].copy_(pages)
            w[1].copy_(offsets)
        else:
            self._write = (pages.clone(), offsets.clone())  # owned, no stride-0 views

    def positions(self) -> torch.Tensor:
        """position_ids of the planned forward ([1, prompt_len] for the
        prompt, [B, num_new] after it)."""
        if self._handle == self._handles["prefill"]:
            return torch.arange(self.prompt_len, device=self.device)[None]
        start = self.prompt_len + self.own_len
        return (torch.arange(start, start + self._pending, device=self.device)[None]
                .expand(self.batch_size, -1))

    def commit(self) -> None:
        """After the planned forward ran: its tokens are in the cache."""
        if self._handle == self._handles["prefill"]:
            self.prompt_done = True
        else:
            self.own_len += self._pending
        self._pending = 0

    def attend(self, layer: int, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
               scaling: Optional[float] = None) -> torch.Tensor:
        """One layer's attention of the planned step: q [rows, Hq, D] and the
        step's k / v [rows, Hkv, D]; returns [rows, Hq, D]."""
        if scaling is not None and abs(scaling - self._scale) > 1e-6 * self._scale:
            raise ValueError(f"scaling {scaling} differs from 1/sqrt(head_dim)")
        timer = self.timer
        if timer is not None:
            timer.begin()
        pool = self.pools[layer]
        pages, offsets = self._write
        pool[pages, 0, offsets] = k
        pool[pages, 1, offsets] = v
        out, _ = torch.ops.cascade_mlir.run(self._handle, q.contiguous(), pool, None)
        if timer is not None:
            timer.end()
        return out


class StepTimer:
    """CUDA events around every attention call of a step (no
    synchronisation until read): attention time vs the step's."""

    def __init__(self) -> None:
        self.pairs: List[Tuple[Any, Any]] = []

    def begin(self) -> None:
        e = torch.cuda.Event(enable_timing=True)
        e.record()
        self.pairs.append((e, None))

    def end(self) -> None:
        e = torch.cuda.Event(enable_timing=True)
        e.record()
        self.pairs[-1] = (self.pairs[-1][0], e)

    def take_ms(self) -> float:
        """Attention ms since the last take (synchronises)."""
        torch.cuda.synchronize()
        ms = sum(a.elapsed_time(b) for a, b in self.pairs)
        self.pairs = []
        return ms


def _sdpa_timed(timer: StepTimer, fn: Callable[..., Any]) -> Callable[..., Any]:
    def timed(*args: Any, **kwargs: Any) -> Any:
        timer.begin()
        r = fn(*args, **kwargs)
        timer.end()
        return r
    return timed


class Result:
    """What generate() / generate_sdpa() return: the greedy tokens
    [B, new_tokens], per-step logits (when kept) and times."""

    def __init__(self) -> None:
        self.tokens: Optional[torch.Tensor] = None
        self.logits: List[torch.Tensor] = []
        self.prefill_s = 0.0
        self.step_ms: List[float] = []
        self.attention_ms: List[float] = []

    @property
    def decode_tokens_per_s(self) -> float:
        if not self.step_ms or self.tokens is None:
            return 0.0
        return self.tokens.shape[0] * len(self.step_ms) / (sum(self.step_ms) / 1e3)


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


@torch.inference_mode()
def generate(model: Any, prompt: torch.Tensor, own: torch.Tensor, new_tokens: int,
             keep_logits: bool = False, time_attention: bool = False,
             cuda_graph_decode: bool = False, forced: Optional[torch.Tensor] = None,
             progress: Optional[Callable[[int], None]] = None) -> Result:
    """Greedy generation with the cascade backend: prompt [P] shared by the
    batch, own [B, S] each sequence's own prefix (S >= 1), then new_tokens
    decode steps. `forced` [B, new_tokens] feeds those tokens instead of
    the greedy ones (teacher forcing, to compare logits step by step).
    `cuda_graph_decode`: the first decode step runs eagerly, the second is
    captured as one CUDA graph (torch.cuda.graph) and every later step is
    plan_step(1) then a replay."""
    register()
    dev = model.device
    b, s = own.shape
    model.set_attn_implementation(ATTENTION)
    graphs = cuda_graph_decode and dev.type == "cuda"
    cache = SharedPromptCache.for_model(model, b, prompt.numel(), s + new_tokens,
                                        use_cuda_graph=graphs)
    # No events inside a captured graph: a captured step is timed whole.
    timer = StepTimer() if time_attention and dev.type == "cuda" and not graphs else None
    res = Result()
    _sync(dev)
    t0 = time.perf_counter()
    cache.plan_prompt()
    model(prompt.view(1, -1).to(dev), position_ids=cache.positions(), cascade_cache=cache,
          use_cache=False, logits_to_keep=1)
    cache.commit()
    cache.plan_step(s)
    logits = model(own.to(dev), position_ids=cache.positions(), cascade_cache=cache,
                   use_cache=False, logits_to_keep=1).logits[:, -1]
    cache.commit()
    _sync(dev)
    res.prefill_s = time.perf_counter() - t0
    cache.timer = timer
    captured = _CapturedStep(model, cache)

    def step(feed: torch.Tensor, i: int) -> torch.Tensor:
        cache.plan_step(1)
        if graphs and i >= 1:
            out = captured.run(feed, cache.positions())
        else:
            out = model(feed[:, None], position_ids=cache.positions(), cascade_cache=cache,
                        use_cache=False).logits[:, -1]
        cache.commit()
        return out

    _decode(res, logits, new_tokens, step, keep_logits, forced, progress, timer, dev)
    return res


def _decode(res: "Result", logits: torch.Tensor, new_tokens: int,
            step: Callable[[torch.Tensor, int], torch.Tensor], keep_logits: bool,
            forced: Optional[torch.Tensor], progress: Optional[Callable[[int], None]],
            timer: Optional[StepTimer], dev: torch.device) -> None:
    """The greedy decode loop of both attentions: `step(tokens, i)` runs
    one decode step and returns its last-position logits."""
    tokens = []
    for i in range(new_tokens):
        nxt = logits.argmax(-1)
        tokens.append(nxt)
        if keep_logits:
            res.logits.append(logits.float().cpu())
        if progress:
            progress(i)
        if i == new_tokens - 1:
            break
        feed = nxt if forced is None else forced[:, i].to(dev)
        t = time.perf_counter()
        logits = step(feed, i)
        _sync(dev)
        res.step_ms.append((time.perf_counter() - t) * 1e3)
        if timer is not None:
            res.attention_ms.append(timer.take_ms())
    res.tokens = torch.stack(tokens, 1).cpu()


class _CapturedStep:
    """One decode step of `model` captured as a CUDA graph on first use:
    static token and position buffers, replayed after each plan_step(1)."""

    def __init__(self, model: Any, cache: SharedPromptCache):
        self.model, self.cache = model, cache
        self.graph: Optional[Any] = None

    def run(self, tokens: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
        if self.graph is None:
            self.tok = tokens[:, None].clone()
            self.pos = positions.clone()
            self.graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(self.graph):
                self.logits = self.model(self.tok, position_ids=self.pos,
                                         cascade_cache=self.cache,
                                         use_cache=False).logits[:, -1]
        else:
            self.tok.copy_(tokens[:, None])
            self.pos.copy_(positions)
        self.graph.replay()
        return self.logits.clone()


@torch.inference_mode()
def generate_sdpa(model: Any, prompt: torch.Tensor, own: torch.Tensor, new_tokens: int,
                  keep_logits: bool = False, time_attention: bool = False,
                  attention: str = "sdpa", forced: Optional[torch.Tensor] = None,
                  progress: Optional[Callable[[int], None]] = None) -> Result:
    """The same loop with transformers' own attention (`sdpa`) and its
    DynamicCache: the prompt prefilled once, its cache repeated for the
    batch, then the own prefixes and the decode steps."""
    from transformers import AttentionInterface, DynamicCache
    dev = model.device
    b, s = own.shape
    p = prompt.numel()
    model.set_attn_implementation(attention)
    timer = StepTimer() if time_attention and dev.type == "cuda" else None
    res = Result()
    _sync(dev)
    t0 = time.perf_counter()
    cache = DynamicCache(config=model.config)
    model(prompt.view(1, -1).to(dev), past_key_values=cache, use_cache=True,
          logits_to_keep=1)
    cache.batch_repeat_interleave(b)
    pos = torch.arange(p, p + s, device=dev)
    logits = model(own.to(dev), past_key_values=cache, use_cache=True,
                   position_ids=pos[None].expand(b, -1), cache_position=pos,
                   logits_to_keep=1).logits[:, -1]
    _sync(dev)
    res.prefill_s = time.perf_counter() - t0
    original = AttentionInterface._global_mapping[attention]
    if timer is not None:
        AttentionInterface._global_mapping[attention] = _sdpa_timed(timer, original)

    def step(feed: torch.Tensor, i: int) -> torch.Tensor:
        cp = torch.arange(p + s + i, p + s + i + 1, device=dev)  # no host copy
        return model(feed[:, None], past_key_values=cache, use_cache=True,
                     position_ids=cp[None].expand(b, -1), cache_position=cp).logits[:, -1]

    try:
        _decode(res, logits, new_tokens, step, keep_logits, forced, progress, timer, dev)
    finally:
        AttentionInterface._global_mapping[attention] = original
    return res


def llama_config(preset: str = "llama-32x8-d128", num_layers: Optional[int] = None,
                 vocab_size: Optional[int] = None, **overrides: Any) -> Any:
    """A Llama-architecture config (random weights come from it; nothing is
    downloaded). Presets:
      llama-32x8-d128  32/8 heads of 128 (hidden 4096), 16 layers (the depth
                       of Llama-3.2-1B), MLP 8192, vocab 128256, tied
                       embeddings as Llama-3.2
      tiny             4/2 heads of 32, 2 layers, vocab 256 (CPU tests)"""
    from transformers import LlamaConfig
    presets: Dict[str, Dict[str, Any]] = {
        "llama-32x8-d128": dict(hidden_size=4096, intermediate_size=8192,
                                num_attention_heads=32, num_key_value_heads=8, head_dim=128,
                                num_hidden_layers=16, vocab_size=128256,
                                tie_word_embeddings=True, rope_theta=500000.0,
                                max_position_embeddings=131072),
        "tiny": dict(hidden_size=128, intermediate_size=256, num_attention_heads=4,
                     num_key_value_heads=2, head_dim=32, num_hidden_layers=2,
                     vocab_size=256, tie_word_embeddings=True,
                     max_position_embeddings=4096),
    }
    if preset not in presets:
        raise ValueError(f"unknown preset {preset!r}: {', '.join(presets)}")
    kw = dict(presets[preset])
    if num_layers is not None:
        kw["num_hidden_layers"] = num_layers
    if vocab_size is not None:
        kw["vocab_size"] = vocab_size
    kw.update(overrides)
    return LlamaConfig(**kw)


def random_model(config: Any, dtype: torch.dtype, device: Any, seed: int = 0,
                 bigram: float = 0.0) -> Any:
    """LlamaForCausalLM with random weights (seeded), in eval mode.

    bigram > 0 plants a successor structure that makes the greedy choices as
    decisive as a trained model's (docs/python.md, "Greedy tokens with random
    weights"): a random permutation succ of the vocabulary, an untied lm_head
    whose row succ(v) is token v's embedding, and the embedding scaled so
    that, at the final norm, the current token's embedding has
    bigram * sqrt(2 ln(vocab) / hidden) times the norm of everything the
    layers added (measured on random tokens, three fixed-point rounds), each
    token's embedding times its own factor drawn uniformly from [0, 2).
    sqrt(2 ln(vocab) / hidden) is where the largest of the vocabulary's
    random logits lies, so bigram = 1 puts the successor's logit level with
    it on average, whatever the model's dimensions. The logits then rank
    succ(current token) first by a margin that the context (attention over
    the whole prompt) moves: large after some tokens, a near tie after
    others, as a trained model is sure of some next tokens and torn between
    a few after others. Every other weight keeps transformers' random
    initialisation."""
    import copy
    from transformers import LlamaForCausalLM
    if bigram < 0:
        raise ValueError(f"bigram must be >= 0, got {bigram}")
    torch.manual_seed(seed)
    if bigram:
        config = copy.deepcopy(config)
        config.tie_word_embeddings = False
    with torch.device(device):
        model = LlamaForCausalLM(config)
    if bigram:
        _plant_bigram(model, bigram, seed)
    return model.to(dtype).eval().requires_grad_(False)


@torch.no_grad()
def _plant_bigram(model: Any, strength: float, seed: int) -> None:
    emb = model.model.embed_tokens.weight
    vocab = emb.shape[0]
    g = torch.Generator().manual_seed(seed + 7)
    succ = torch.randperm(vocab, generator=g).to(emb.device)
    base = emb.clone()
    # lm_head row succ(v) = embedding of v: the logit of succ(v) is the
    # final hidden state's projection on v's (unscaled) embedding.
    model.lm_head.weight[succ] = base
    factor = (2 * torch.rand(vocab, 1, generator=g)).to(base)
    toks = torch.randint(0, vocab, (2, 64), generator=g).to(emb.device)
    seen: List[torch.Tensor] = []
    hook = model.model.norm.register_forward_pre_hook(lambda _m, a: seen.append(a[0]))
    unit = float(base.norm(dim=1).median())
    level = strength * (2 * math.log(vocab) / emb.shape[1]) ** 0.5
    try:
        for _ in range(3):
            seen.clear()
            model.model(toks, use_cache=False)
            added = (seen[0] - emb[toks]).norm(dim=-1)
            scale = level * float(added.median()) / unit
            emb.copy_(base * factor * scale)
    finally:
        hook.remove()


def compare(ours: Result, ref: Result) -> Dict[str, Any]:
    """Per step max|diff| / max|logit| of kept logits, and greedy agreement:
    the first step where the tokens differ (None: identical), per batch."""
    rel = [float((a - b).abs().max() / b.abs().max().clamp_min(1e-30))
           for a, b in zip(ours.logits, ref.logits)]
    assert ours.tokens is not None and ref.tokens is not None
    same = ours.tokens == ref.tokens
    first: Optional[int] = None
    if not bool(same.all()):
        first = int((~same).any(0).nonzero()[0])
    return {"rel_logits": rel, "max_rel_logits": max(rel) if rel else 0.0,
            "first_divergence": first,
            "sequences_identical": int(same.all(1).sum()),
            "batch_size": int(same.shape[0])}


def top2_gap(logits: torch.Tensor) -> torch.Tensor:
    """The gap between each row's two largest logits (a near tie flips
    greedy decoding under any rounding difference)."""
    t = logits.float().topk(2, -1).values
    return t[..., 0] - t[..., 1]


def greedy_agreement(model: Any, prompt: torch.Tensor, own: torch.Tensor,
                     steps: int) -> Dict[str, Any]:
    """The cascade against transformers' sdpa on the same model, `steps`
    greedy steps of the batch:

    * teacher forced (both fed sdpa's greedy tokens, so every step compares
      on equal inputs): per step max|diff| / max|logit| (`rel_logits`); the
      top-1/top-2 gap of sdpa's logits at every (sequence, step)
      (`gap_median`, `gap_p10`, in nats) and the median top-1 probability;
      sigma, the spread of d[top1] - d[top2] (d = ours - sdpa) over all
      pairs; every (step, sequence) whose greedy choice differs, with its
      gap (`flips`); `expected_flips`, the sum over pairs of
      Phi(-gap / sigma) (what that noise predicts for these gaps);
    * free running (each its own greedy tokens): per sequence the steps
      before the first differing token (`identical_steps`).
    """
    ref = generate_sdpa(model, prompt, own, steps, keep_logits=True)
    ours = generate(model, prompt, own, steps, keep_logits=True, forced=ref.tokens)
    free = generate(model, prompt, own, steps)
    assert ref.tokens is not None and free.tokens is not None
    rel = compare(ours, ref)["rel_logits"]
    a, b = torch.stack(ours.logits, 1), torch.stack(ref.logits, 1)  # [B, S, V]
    top = b.topk(2, -1)
    gap = top.values[..., 0] - top.values[..., 1]
    d = a - b
    pair = (d.gather(-1, top.indices[..., :1]) - d.gather(-1, top.indices[..., 1:]))[..., 0]
    sigma = float(pair.std()) if pair.numel() > 1 else 0.0
    differ = a.argmax(-1) != b.argmax(-1)
    flips = [(int(step), int(seq), float(gap[seq, step]))
             for seq, step in differ.nonzero().tolist()]
    expected = float((0.5 * torch.erfc(gap / max(sigma, 1e-30) / 2 ** 0.5)).sum())
    same = (free.tokens == ref.tokens).int().cumprod(1).sum(1)
    return {"steps": steps, "batch": int(own.shape[0]), "rel_logits": rel,
            "gap_median": float(gap.median()),
            "gap_p10": float(gap.flatten().quantile(0.1)),
            "top1_prob_median": float(b.softmax(-1).amax(-1).median()),
            "sigma": sigma, "flips": sorted(flips), "expected_flips": expected,
            "identical_steps": same.tolist()}


def agreement_lines(r: Dict[str, Any]) -> List[str]:
    """greedy_agreement's result as report lines."""
    rel, same = r["rel_logits"], sorted(r["identical_steps"])
    n, s = r["batch"] * r["steps"], r["steps"]
    flips = r["flips"]
    shown = ", ".join(f"step {t} seq {q}: gap {g:.3f} ({g / max(r['sigma'], 1e-30):.1f} sigma)"
                      for t, q, g in flips[:8])
    more = f" and {len(flips) - 8} more" if len(flips) > 8 else ""
    return [
        f"free running: identical steps per sequence min {same[0]}, median "
        f"{same[len(same) // 2]}, {sum(x == s for x in same)}/{len(same)} sequences "
        f"identical over all {s} steps; batch identical for the first {same[0]} steps "
        + (f"(criterion >= 32: {'met' if same[0] >= 32 else 'NOT met'})" if s >= 32
           else f"(criterion >= 32: not measured, {s} steps run)"),
        f"teacher forced: max|diff|/max|logit| per step median "
        f"{sorted(rel)[len(rel) // 2]:.2e}, max {max(rel):.2e}: "
        + " ".join(f"{x:.1e}" for x in rel),
        f"teacher forced: sdpa's top-1/top-2 gap median {r['gap_median']:.3f}, 10th "
        f"percentile {r['gap_p10']:.3f} nats; top-1 probability median "
        f"{r['top1_prob_median']:.3f}; noise sigma (d[top1] - d[top2]) {r['sigma']:.4f} nats",
        f"teacher forced: {len(flips)}/{n} greedy choices differ (the noise predicts "
        f"{r['expected_flips']:.1f})" + (f": {shown}{more}" if flips else ""),
    ]
