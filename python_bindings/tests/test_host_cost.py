"""The host cost of every run()/merge entry point, on the stand-in CUDA
driver with a stand-in torch (fake_cuda/host_cost.py): the merges' one-call
path launches the right kernel with the right arguments, a bad argument
still gets the checked path's error, and every entry point is timed. The
time is printed, and checked against CASCADE_HOST_BUDGET_US only when that
is set (a shared or sanitised build machine is no clock; the H200 numbers
come from benchmarks/python/host_overhead.py)."""
import os
import subprocess
import sys

from test_fake_device import HERE, fake_env  # noqa: F401 - the fixture


def test_host_cost_on_a_stand_in_driver(fake_env):  # noqa: F811
    cmd = [sys.executable, os.path.join(HERE, "fake_cuda", "host_cost.py"), "--check",
           "--calls", "200"]
    budget = os.environ.get("CASCADE_HOST_BUDGET_US")
    if budget:
        cmd += ["--budget-us", budget]
    env = dict(fake_env, PYTHONPATH=os.pathsep.join(
        [os.path.join(HERE, "fake_cuda")] + sys.path))
    r = subprocess.run(cmd, env=env, capture_output=True, text=True)
    print(r.stdout)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "OK fast merges" in r.stdout and "OK host_cost" in r.stdout
    for name in ("merge_state ", "merge_state_in_place ", "merge_states ", "cascade run ",
                 "decode run ", "prefill run "):
        assert any(line.startswith(name) for line in r.stdout.splitlines()), name
