"""The engine-shaped test (gpu/engine_loop.py, issue 41, item 4) on CPU
tensors, where the wrappers compute with the runtime's float64 reference:
the same schedule, page tables, plan()/run() spellings and checks as
gpu/test_gpu_engine_loop.py, at a smaller size (2 layers, D = 32, page 8),
without the CUDA-graph conventions. What it checks is the API the engines
call (argument names and forms, index buffers, views, the K/V writes and
the merges), not the kernels. Skipped where torch is not installed."""
import os
import sys

import pytest

torch = pytest.importorskip(
    "torch", reason="torch is not installed: the engine loop drives torch tensors "
    "(pip install torch to run it; the GPU session runs the GPU variant)")

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "gpu"))
try:
    import engine_loop as el  # noqa: E402
    from gpu_support import SEED  # noqa: E402
finally:
    sys.path.pop(0)

#: Test name -> the conventions it turns on (engine_loop.SINGLE: those
#: that need no GPU)
SINGLE = el.SINGLE_ON_CPU


def run(hq, hkv, dtype, conv):
    seed = SEED + 17 * hq + hkv + (1000 if dtype == "bfloat16" else 0)
    m = el.make_model(hq, hkv, 32, dtype, "cpu", seed, layers=2, page=8)
    bad = el.check(m, conv, seed, ("cpu", hq, hkv, dtype, seed))
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize("name", sorted(SINGLE))
def test_convention(name):
    run(8, 2, "float16", SINGLE[name])


@pytest.mark.parametrize("dtype,hq,hkv", [("float16", 8, 2), ("bfloat16", 6, 2)],
                         ids=["f16-h8x2", "bf16-h6x2"])
@pytest.mark.parametrize("profile", sorted(el.PROFILES))
def test_engine(profile, dtype, hq, hkv):
    run(hq, hkv, dtype, el.PROFILES[profile] - {"graphs"})


def test_schedule_replays_cuda_graph_buckets():
    """The GPU test's CUDA-graph conventions rely on the schedule: its
    pure-decode steps capture buckets 1, 4 and 8 and replay 4 and 8 after
    other steps re-planned their wrappers."""
    seen, buckets = set(), []
    for step in el.SCHEDULE:
        if all(r in seen and n == 1 for r, n in step):
            buckets.append(min(b for b in el.BUCKETS if b >= len(step)))
        seen.update(r for r, _ in step)
    assert buckets == [4, 8, 4, 4, 1, 8]
