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
