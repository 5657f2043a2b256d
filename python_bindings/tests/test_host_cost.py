"""The host cost of every run()/merge entry point, on the stand-in CUDA
driver with a stand-in torch (fake_cuda/host_cost.py): the merges' one-call
path launches the right kernel with the right arguments, a bad argument
still gets the checked path's error, and every entry point is timed. The
time is printed, and checked against CASCADE_HOST_BUDGET_US only when that
is set (a shared or sanitised build machine is no clock; the H200 numbers
come from benchmarks/python/host_overhead.py).

The torch ops' C++ kernels (cascade_mlir._torch_bridge) on the same driver
with real torch (host_cost.py --torch): run / run_out launch what the
wrapper's run() launches, the merges' ops what the functions launch, and
what they must not take goes to the Python kernels; skipped where torch
or the bridge is missing (failed without the bridge under
CASCADE_EXPECT_TORCH_BRIDGE=1, as test_torch_bridge.py)."""
import os
import subprocess
import sys

import pytest

from test_fake_device import HERE, fake_env  # noqa: F401 - the fixture


def host_cost(env, *args):
    """host_cost.py --check --calls 200 ARGS (and the budget, if set)."""
    cmd = [sys.executable, os.path.join(HERE, "fake_cuda", "host_cost.py"), "--check",
           "--calls", "200", *args]
    budget = os.environ.get("CASCADE_HOST_BUDGET_US")
    if budget:
        cmd += ["--budget-us", budget]
    env = dict(env, PYTHONPATH=os.pathsep.join(
        [os.path.join(HERE, "fake_cuda")] + sys.path))
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    print(r.stdout)
    assert r.returncode == 0, r.stdout + r.stderr
    return r


def test_host_cost_on_a_stand_in_driver(fake_env):  # noqa: F811
    r = host_cost(fake_env)
    assert "OK fast merges" in r.stdout and "OK host_cost" in r.stdout
    for name in ("merge_state ", "merge_state_in_place ", "merge_states ", "cascade run ",
                 "decode run ", "prefill run "):
        assert any(line.startswith(name) for line in r.stdout.splitlines()), name


def test_torch_ops_on_a_stand_in_driver(fake_env):  # noqa: F811
    pytest.importorskip("torch", reason="torch is not installed: the torch ops are torch's")
    from test_torch_bridge import require_bridge
    require_bridge()
    r = host_cost(fake_env, "--torch")
    assert "OK torch ops" in r.stdout and "OK host_cost" in r.stdout
    for name in ("torch.ops run (cascade) ", "torch.ops run (decode) ",
                 "torch.ops run (prefill) ", "torch.ops run_out (decode) ",
                 "torch.ops run (decode), Python kernel ", "torch.ops merge_state ",
                 "torch.ops merge_state_in_place ", "torch.ops merge_states "):
        assert any(line.startswith(name) for line in r.stdout.splitlines()), name
