"""The wheel (`pip wheel .`, tools/cascade-dev wheel) installed into a fresh
environment, as a serving box without LLVM has it: no compiler module, the
self-contained compiler in cascade_mlir/bin, a small kernel set; a
configuration outside that set is compiled on first use into the cache.
CASCADE_WHEEL names the wheel (tools/cascade-dev test builds it and sets it)."""

import os
import subprocess
import sys
import textwrap
import venv

import pytest

WHEEL = os.environ.get("CASCADE_WHEEL")
if not WHEEL:
    pytest.skip("CASCADE_WHEEL is not set: no wheel was built in this run "
                "(tools/cascade-dev wheel builds one)", allow_module_level=True)

#: A configuration no kernel set has: heads 40/8, head_dim 96, page 32, a
#: window, a soft cap, an fp8 cache, sinks.
NEW_KEY = ("prefill-causal-sinks.bf16-f8e4m3.d96.h40x8.p32.nhd.pool"
           ".cap41f00000.win256")


@pytest.fixture(scope="module")
def python(tmp_path_factory):
    """A venv (seeing the system's numpy) with the wheel installed."""
    env_dir = tmp_path_factory.mktemp("wheel-venv")
    venv.create(env_dir, system_site_packages=True, with_pip=True)
    py = str(env_dir / "bin" / "python")
    subprocess.run([py, "-m", "pip", "install", "-q", "--no-deps", "--no-index",
                    WHEEL], check=True)
    return py


def run(python, code, tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("CASCADE_MLIR")
           and k != "PYTHONPATH"}
    env["CASCADE_MLIR_CACHE_DIR"] = str(tmp_path / "cache")
    r = subprocess.run([python, "-c", textwrap.dedent(code)], capture_output=True,
                       text=True, env=env, cwd=str(tmp_path))
    assert r.returncode == 0, r.stdout + r.stderr
    return r.stdout


def test_the_installed_wheel_compiles_a_new_configuration(python, tmp_path):
    out = run(python, f"""
        import os, time
        import cascade_mlir
        from cascade_mlir import kernels
        assert kernels._compiler() is None, "a wheel has no compiler module"
        exe = kernels.compiler_executable()
        assert exe and exe.startswith(os.path.dirname(cascade_mlir.__file__)), exe
        assert kernels.find_bundle({NEW_KEY!r}, "sm_90") is None
        t = time.time()
        path = kernels.ensure_bundle({NEW_KEY!r}, "sm_90a")
        cold = time.time() - t
        assert path.startswith(kernels.cache_dir()), path
        assert os.path.isfile(os.path.join(path, "manifest.json"))
        assert any(f.endswith(".ptx") for f in os.listdir(path))  # one per kernel
        t = time.time()
        assert kernels.ensure_bundle({NEW_KEY!r}, "sm_90a") == path
        print(f"cold {{cold:.2f}} s, hit {{(time.time() - t) * 1e3:.2f}} ms")
    """, tmp_path)
    print(out)


def test_the_wheel_has_its_small_kernel_set(python, tmp_path):
    run(python, """
        from cascade_mlir import kernels
        for key in kernels.kernel_set("minimal"):
            assert kernels.find_bundle(key, "sm_90", own_chip_only=True), key
    """, tmp_path)
