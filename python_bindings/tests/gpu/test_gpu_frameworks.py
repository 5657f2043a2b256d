"""The frameworks on the GPU: the torch custom ops (opcheck on CUDA tensors,
torch.compile(fullgraph=True), CUDA-graph capture under torch.compile(mode=
"reduce-overhead") and replay after replans) and the transformers backend
(a random Llama with 32/8 heads of 128 generating with the cascade against
transformers' sdpa: logits per step, greedy tokens, a captured decode step).
Skipped without a GPU, torch or transformers (the reason is printed)."""
import math

import pytest

import cascade_mlir as cm
from gpu_support import TOL, gpu, rel_err, torch, workspace  # noqa: F401
from test_gpu_cascade import seed_levels

torch_ops = pytest.importorskip("cascade_mlir.torch_ops",
                                reason="torch is not installed") if torch else None


def planned_cascade(dev, use_cuda_graph=False, dtype=None):
    total, levels = seed_levels(dev)
    w = cm.MultiLevelCascadeAttentionWrapper(2, workspace(dev), "NHD",
                                             use_cuda_graph=use_cuda_graph)
    w.plan(*levels, 64, 8, 128, 16, q_data_type=dtype or torch.float16)
    return w, total


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_opcheck_merges_cuda(gpu, dtype):
    dt = getattr(torch, dtype)
    v, s = torch.randn(300, 32, 128, device=gpu).to(dt), torch.randn(300, 32, device=gpu)
    v2, s2 = torch.randn_like(v), torch.randn_like(s)
    torch.library.opcheck(torch.ops.cascade_mlir.merge_state, (v, s, v2, s2))
    mask = torch.rand(600, device=gpu) > 0.5
    torch.library.opcheck(torch.ops.cascade_mlir.merge_state_in_place,
                          (v.clone(), s.clone(), v2, s2, mask[::2]))
    torch.library.opcheck(torch.ops.cascade_mlir.merge_states,
                          (torch.randn(300, 3, 32, 128, device=gpu).to(dt),
                           torch.randn(300, 3, 32, device=gpu)))


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_opcheck_run_cuda(gpu, dtype):
    dt = getattr(torch, dtype)
    w, total = planned_cascade(gpu, dtype=dt)
    h = torch_ops.register(w)
    cache = torch.randn(total, 2, 16, 8, 128, device=gpu).to(dt)
    q = torch.randn(7, 64, 128, device=gpu).to(dt)
    torch.library.opcheck(torch.ops.cascade_mlir.run, (h, q, cache, None))
    o, lse = torch.ops.cascade_mlir.run(h, q, cache, None)
    want = w.run(q, cache)
    assert rel_err(o, want.double()) <= TOL[dtype] and lse.shape == (7, 64)
    out, l2 = torch.empty_like(q), torch.empty(7, 64, device=gpu)
    torch.library.opcheck(torch.ops.cascade_mlir.run_out, (h, q, cache, None, out, l2))


def test_opcheck_single_level_and_shared_prefix(gpu):
    i32 = torch.int32
    cache = torch.randn(64, 2, 16, 8, 128, device=gpu).half()
    d = cm.BatchDecodeWithPagedKVCacheWrapper(workspace(gpu))
    d.plan(torch.tensor([0, 3, 9], dtype=i32), torch.arange(9, dtype=i32),
           torch.tensor([5, 16], dtype=i32), 32, 8, 128, 16)
    torch.library.opcheck(torch.ops.cascade_mlir.run,
                          (torch_ops.register(d), torch.randn(2, 32, 128, device=gpu).half(),
                           cache, None))
    p = cm.BatchPrefillWithPagedKVCacheWrapper(workspace(gpu))
    p.plan(torch.tensor([0, 20, 21], dtype=i32), torch.tensor([0, 3, 9], dtype=i32),
           torch.arange(9, dtype=i32), torch.tensor([5, 16], dtype=i32), 32, 8, 128, 16,
           causal=True)
    torch.library.opcheck(torch.ops.cascade_mlir.run,
                          (torch_ops.register(p), torch.randn(21, 32, 128, device=gpu).half(),
                           cache, None))
    s = cm.BatchPrefillWithSharedPrefixPagedKVCacheWrapper(workspace(gpu), "NHD")
    pool = torch.randn(16, 2, 16, 16, 128, device=gpu).half()
    s.begin_forward(torch.tensor([0, 5, 9], dtype=i32), torch.tensor([0, 2, 4], dtype=i32),
                    torch.arange(4, dtype=i32), torch.tensor([3, 16], dtype=i32),
                    64, 16, 128, 16)
    ks, vs = (torch.randn(256, 16, 128, device=gpu).half() for _ in range(2))
    torch.library.opcheck(torch.ops.cascade_mlir.shared_prefix_forward,
                          (torch_ops.register(s), torch.randn(9, 64, 128, device=gpu).half(),
                           ks, vs, pool, None))


class _Layer(torch.nn.Module if torch else object):
    def __init__(self, handle):
        super().__init__()
        self.handle = handle

    def forward(self, q, cache):
        o, lse = torch.ops.cascade_mlir.run(self.handle, q * 1, cache, None)
        v, s = torch.ops.cascade_mlir.merge_state(o, lse, o, lse)
        return v, s


def test_compile_fullgraph_and_reduce_overhead_replay_after_replan(gpu):
    w, total = planned_cascade(gpu, use_cuda_graph=True)
    m = _Layer(torch_ops.register(w))
    cache = torch.randn(total + 1000, 2, 16, 8, 128, device=gpu).half()
    torch._dynamo.mark_static_address(cache)
    q = torch.randn(7, 64, 128, device=gpu).half()
    explain = torch._dynamo.explain(m)(q, cache)
    assert explain.graph_break_count == 0 and explain.graph_count == 1
    torch._dynamo.reset()
    full = torch.compile(m, fullgraph=True)
    want = m(q, cache)
    got = full(q, cache)
    assert rel_err(got[0], want[0].double()) <= 1e-3
    torch._dynamo.reset()
    captured = torch.compile(m, fullgraph=True, mode="reduce-overhead")
    for _ in range(3):  # warm-up, record, replay
        got = captured(q, cache)
    torch.cuda.synchronize()
    assert rel_err(got[0], want[0].double()) <= 1e-3
    # New lengths: plan() (eager, host work), then the captured graph replays.
    uindptr = torch.tensor([0, 40, 41, 43, 133, 133, 140, 173], dtype=torch.int32)
    lv = ([torch.tensor([0, 7], dtype=torch.int32), torch.arange(8, dtype=torch.int32)],
          [torch.tensor([0, 300], dtype=torch.int32), uindptr],
          [torch.arange(1000, 1300, dtype=torch.int32),
           torch.arange(1300, 1300 + 173, dtype=torch.int32)],
          [torch.tensor([9], dtype=torch.int32),
           torch.tensor([16, 1, 5, 9, 1, 2, 3], dtype=torch.int32)])
    w.plan(*lv, 64, 8, 128, 16)
    q2 = torch.randn_like(q)
    got = captured(q2, cache)
    want = w.run(q2, cache, return_lse=True)
    torch.cuda.synchronize()
    ev, es = cm.merge_state(want[0], want[1], want[0], want[1])
    assert rel_err(got[0], ev.double()) <= 1e-3
    assert rel_err(got[1], es.double()) <= 1e-5


# --- the transformers backend ------------------------------------------------------

def _backend():
    pytest.importorskip("transformers", reason="transformers is not installed")
    from cascade_mlir import transformers_backend as tb
    return tb


@pytest.mark.parametrize("dtype,tol", [("float16", 1e-2), ("bfloat16", 5e-2)])
@pytest.mark.parametrize("bigram", [0.0, "calibrated"])
def test_generation_matches_sdpa(gpu, dtype, tol, bigram):
    tb = _backend()
    dt = getattr(torch, dtype)
    cfg = tb.llama_config("llama-32x8-d128", num_layers=2, vocab_size=32000)
    x = tb.CALIBRATED_BIGRAM if bigram == "calibrated" else bigram
    model = tb.random_model(cfg, dt, gpu, seed=11, bigram=x)
    g = torch.Generator().manual_seed(5)
    prompt = torch.randint(0, 32000, (1003,), generator=g)
    own = torch.randint(0, 32000, (8, 5), generator=g)
    r = tb.greedy_agreement(model, prompt, own, 34)
    print("\n".join([f"{dtype}, bigram {x}:"] + tb.agreement_lines(r)))
    assert max(r["rel_logits"]) <= tol, r["rel_logits"]
    # Greedy choices may flip only as often as the measured noise predicts
    # for sdpa's gaps (a flip at a gap the noise cannot reach, e.g. from a
    # wrong level of the cascade, exceeds it).
    e = r["expected_flips"]
    assert len(r["flips"]) <= e + 3 * e ** 0.5 + 2, (r["flips"], e)


def test_captured_decode_step_replays_after_plan_step(gpu):
    tb = _backend()
    cfg = tb.llama_config("llama-32x8-d128", num_layers=2, vocab_size=32000)
    model = tb.random_model(cfg, torch.float16, gpu, seed=2)
    g = torch.Generator().manual_seed(9)
    prompt = torch.randint(0, 32000, (300,), generator=g)
    own = torch.randint(0, 32000, (4, 3), generator=g)
    want = tb.generate(model, prompt, own, 12, keep_logits=True)
    # Fed the same tokens (a graph-mode plan may split the KV differently,
    # so a near tie could flip a free-running greedy token).
    got = tb.generate(model, prompt, own, 12, cuda_graph_decode=True, keep_logits=True,
                      forced=want.tokens)
    c = tb.compare(got, want)
    assert c["max_rel_logits"] <= 1e-2, c
    assert len(got.step_ms) == 11


def test_transformers_backend_compiles_fullgraph(gpu):
    tb = _backend()
    cfg = tb.llama_config("llama-32x8-d128", num_layers=1, vocab_size=1000)
    model = tb.random_model(cfg, torch.float16, gpu)
    tb.register()
    model.set_attn_implementation(tb.ATTENTION)
    cache = tb.SharedPromptCache.for_model(model, 4, 40, 8)
    with torch.inference_mode():
        cache.plan_prompt()
        model(torch.arange(40, device=gpu)[None], position_ids=cache.positions(),
              cascade_cache=cache, use_cache=False)
        cache.commit()
        cache.plan_step(1)
        tok = torch.arange(4, device=gpu)[:, None]
        want = model(tok, position_ids=cache.positions(), cascade_cache=cache,
                     use_cache=False).logits
        explain = torch._dynamo.explain(model)(tok, position_ids=cache.positions(),
                                                cascade_cache=cache, use_cache=False)
        assert explain.graph_break_count == 0, explain.break_reasons
        torch._dynamo.reset()
        # aot_eager: the trace (no graph break) without inductor's minutes.
        got = torch.compile(model, fullgraph=True, backend="aot_eager")(
            tok, position_ids=cache.positions(),
            cascade_cache=cache, use_cache=False).logits
    assert not math.isnan(float(got.float().abs().max()))
    assert rel_err(got, want.double()) <= 2e-2
