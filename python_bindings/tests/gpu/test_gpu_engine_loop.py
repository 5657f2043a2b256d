"""An engine-shaped test on the GPU (issue 41, item 4): a small engine
(engine_loop.py: 3 layers of random Q/K/V projections, D = 128, page 16)
drives the wrappers as vLLM's and SGLang's FlashInfer backends drive
FlashInfer 0.5.3 (per step one plan() per wrapper, then every layer's
run(); a prefill of requests of different lengths, decode steps with
requests joining, a chunked prefill, requests leaving and new ones on their
freed pages, the decode batch moving across CUDA-graph buckets). Every
layer's attention output of every step is checked against the float64
reference over the same cache contents and against the same loop on torch
SDPA.

One test per convention (`test_convention[NAME]`: the tidy calls plus that
one convention, f16, 32/8 heads), so that each convention's result shows on
its own, and one per engine (`test_engine[PROFILE-...]`: vLLM's or SGLang's
conventions all at once, f16 and bf16, GQA 32/8 and 28/4)."""
import pytest

import engine_loop as el
from gpu_support import SEED, gpu  # noqa: F401

#: Test name -> the conventions it turns on (engine_loop.SINGLE)
SINGLE = el.SINGLE


def run(dev, hq, hkv, dtype, conv):
    seed = SEED + 17 * hq + hkv + (1000 if dtype == "bfloat16" else 0)
    m = el.make_model(hq, hkv, 128, dtype, dev, seed)
    bad = el.check(m, conv, seed, ("cuda", hq, hkv, dtype, seed))
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize("name", sorted(SINGLE))
def test_convention(gpu, name):
    run(gpu, 32, 8, "float16", SINGLE[name])


@pytest.mark.parametrize("heads", [(32, 8), (28, 4)], ids=["h32x8", "h28x4"])
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"], ids=["f16", "bf16"])
@pytest.mark.parametrize("profile", sorted(el.PROFILES))
def test_engine(gpu, profile, dtype, heads):
    run(gpu, heads[0], heads[1], dtype, el.PROFILES[profile])

