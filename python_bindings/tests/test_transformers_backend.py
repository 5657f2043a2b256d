"""The transformers attention backend (cascade_mlir.transformers_backend) on
CPU tensors, where the wrappers compute with the float64 reference: a tiny
random Llama generates with the shared-prompt cascade and with transformers'
sdpa; logits agree step by step and greedy tokens are identical; the
attention module and the whole model compile with fullgraph=True. The same
on the GPU (the real kernels, 32/8 heads of 128): gpu/test_gpu_frameworks.py.
Skipped without torch and transformers (CI does not install them)."""
import pytest

torch = pytest.importorskip("torch", reason="torch is not installed (a multi-GB "
                            "download CI skips; the GPU session runs these)")
pytest.importorskip("transformers", reason="transformers is not installed")

from cascade_mlir import transformers_backend as tb  # noqa: E402


@pytest.fixture(scope="module")
def inputs():
    g = torch.Generator().manual_seed(7)
    return torch.randint(0, 256, (21,), generator=g), torch.randint(0, 256, (3, 4), generator=g)


@pytest.mark.parametrize("dtype,tol", [(torch.float16, 4e-3), (torch.bfloat16, 3e-2)])
def test_generation_matches_sdpa(inputs, dtype, tol):
    prompt, own = inputs
    model = tb.random_model(tb.llama_config("tiny"), dtype, "cpu", seed=3)
    ref = tb.generate_sdpa(model, prompt, own, 6, keep_logits=True)
    ours = tb.generate(model, prompt, own, 6, keep_logits=True, forced=ref.tokens)
    c = tb.compare(ours, ref)
    assert len(c["rel_logits"]) == 6 and c["max_rel_logits"] <= tol, c
    free = tb.generate(model, prompt, own, 6)
    assert torch.equal(free.tokens, ref.tokens)


def test_cache_plans_two_levels_and_checks_capacity():
    cache = tb.SharedPromptCache(1, 2, 5, 3, 4, 2, 32, device="cpu", page_size=4)
    assert cache.prompt_pages == 2 and cache.own_pages == 1
    with pytest.raises(ValueError, match="plan_prompt"):
        cache.plan_step(1)
    cache.plan_prompt()
    assert cache.positions().tolist() == [[0, 1, 2, 3, 4]]
    cache.commit()
    cache.plan_step(2)
    assert cache.positions().tolist() == [[5, 6], [5, 6]]
    pages, offsets = cache._write
    assert pages.tolist() == [2, 2, 3, 3] and offsets.tolist() == [0, 1, 0, 1]
    cache.commit()
    cache.plan_step(1)
    cache.commit()
    with pytest.raises(ValueError, match="made for 3"):
        cache.plan_step(1)


def test_missing_cache_is_a_clear_error():
    model = tb.random_model(tb.llama_config("tiny"), torch.float16, "cpu")
    tb.register()
    model.set_attn_implementation(tb.ATTENTION)
    with pytest.raises(ValueError, match="cascade_cache"):
        model(torch.tensor([[1, 2]]), use_cache=False)


def test_compile_fullgraph_attention_and_model(inputs):
    prompt, own = inputs
    model = tb.random_model(tb.llama_config("tiny"), torch.float16, "cpu", seed=3)
    tb.register()
    model.set_attn_implementation(tb.ATTENTION)
    cache = tb.SharedPromptCache.for_model(model, 3, prompt.numel(), 8, page_size=4)
    with torch.inference_mode():
        cache.plan_prompt()
        model(prompt[None], position_ids=cache.positions(), cascade_cache=cache,
              use_cache=False)
        cache.commit()
        cache.plan_step(own.shape[1])
        want = model(own, position_ids=cache.positions(), cascade_cache=cache,
                     use_cache=False).logits
        # The same step again, compiled (rewriting the same K/V).
        attn = model.model.layers[0].self_attn
        explain = torch._dynamo.explain(attn)(
            torch.randn(3, 4, 128, dtype=torch.float16),
            position_embeddings=model.model.rotary_emb(
                torch.randn(1, dtype=torch.float16), cache.positions()),
            attention_mask=None, cascade_cache=cache)
        assert explain.graph_break_count == 0, explain.break_reasons
        torch._dynamo.reset()
        compiled = torch.compile(model, fullgraph=True, backend="aot_eager")
        got = compiled(own, position_ids=cache.positions(), cascade_cache=cache,
                       use_cache=False).logits
    assert torch.equal(got, want)


def test_planted_bigram_makes_the_successor_win():
    """random_model(bigram=X): an untied lm_head whose row succ(v) is v's
    embedding, and the embedding scaled so that the current token's
    successor leads; plain random weights (X = 0) stay tied and pick no
    such token."""
    cfg = tb.llama_config("tiny", vocab_size=1024)
    plain = tb.random_model(cfg, torch.float32, "cpu", seed=4)
    planted = tb.random_model(cfg, torch.float32, "cpu", seed=4, bigram=2.0)
    assert plain.config.tie_word_embeddings and not planted.config.tie_word_embeddings
    emb, head = planted.model.embed_tokens.weight, planted.lm_head.weight
    # Row succ(v) of lm_head is parallel to v's embedding.
    succ = (torch.nn.functional.normalize(emb, dim=1)
            @ torch.nn.functional.normalize(head, dim=1).T).argmax(1)
    assert succ.unique().numel() == 1024  # a permutation
    x = torch.randint(0, 1024, (2, 40), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        hit = (planted(x).logits.argmax(-1) == succ[x]).float().mean()
        hit_plain = (plain(x).logits.argmax(-1) == succ[x]).float().mean()
    assert hit > 0.6 and hit_plain < 0.05, (hit, hit_plain)
    with pytest.raises(ValueError, match="bigram"):
        tb.random_model(cfg, torch.float32, "cpu", bigram=-1.0)


def test_greedy_agreement_reports_and_catches_a_wrong_attention(inputs, monkeypatch):
    prompt, own = inputs
    model = tb.random_model(tb.llama_config("tiny"), torch.float16, "cpu", seed=3,
                            bigram=1.0)
    r = tb.greedy_agreement(model, prompt, own, 5)
    assert r["identical_steps"] == [5, 5, 5] and r["flips"] == [], r
    assert len(r["rel_logits"]) == 5 and max(r["rel_logits"]) <= 4e-3
    lines = tb.agreement_lines(r)
    assert "batch identical for the first 5 steps" in lines[0] and "0/15" in lines[3]
    # An attention that drops the shared prompt's level (attends to the
    # sequence's own tokens only) must show in the report.
    attend = tb.SharedPromptCache.attend

    def wrong(self, layer, q, k, v, scaling=None):
        out = attend(self, layer, q, k, v, scaling)
        return out if self._handle == self._handles["prefill"] else out * 0.5

    monkeypatch.setattr(tb.SharedPromptCache, "attend", wrong)
    bad = tb.greedy_agreement(model, prompt, own, 5)
    assert max(bad["rel_logits"]) > 5e-2, bad["rel_logits"]
