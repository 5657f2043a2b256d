"""The self-contained compiler, cascade-compile (tools/cascade-compile): the
package compiles with it where it has no compiler module (a wheel on a GPU
box without LLVM). Keys parse as the Python package spells them, bundles are
the compiler module's byte for byte, concurrent builders of one key build it
once, and the wrappers' first plan compiles every missing group at once.
Also: the package's sources are valid for the oldest Python it claims."""

import json
import os
import re
import shutil
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from cascade_mlir import kernels

EXE = kernels.compiler_executable()
EXPECT = os.environ.get("CASCADE_EXPECT_COMPILER") == "1"
if EXE is None:
    if EXPECT:
        raise RuntimeError("CASCADE_EXPECT_COMPILER=1 but the package has no "
                           "bin/cascade-compile")
    pytest.skip("this cascade_mlir has no cascade-compile (a runtime-only build)",
                allow_module_level=True)

KEY = "prefill-causal.f16-f16.d64.h8x2.p16.nhd.pool.cap41f00000"


def run(*args):
    return subprocess.run([EXE, *args], capture_output=True, text=True)


def test_keys_parse_as_the_package_spells_them():
    keys = sorted(set(kernels.kernel_set("default")) | set(kernels.kernel_set("gpu-tests")))
    r = run("--parse-keys", *keys)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == keys


@pytest.mark.parametrize("bad, why", [
    ("decode.f16-f16.d128.h32x8.p16.nhd", "is not a kernel bundle key"),
    ("prefill-acc-causal.f16-f16.d128.h32x8.p16.nhd.pool", "is not a kernel bundle key"),
    ("decode.f16-f16.d128.h32x8.p16.nhd.pool.sm3db504f3", "normal spelling"),
    ("decode.f16-f16.d128.h32x8.p16.nhd.pool.cap7fc00000", "logits_soft_cap"),
])
def test_bad_keys_are_refused_with_the_reason(bad, why, tmp_path):
    r = run("--out", str(tmp_path), bad)
    assert r.returncode != 0 and why in r.stderr
    assert not any(tmp_path.iterdir())


def test_bundle_equals_the_compiler_modules(tmp_path):
    if kernels._compiler() is None:
        pytest.skip("no compiler module to compare with (a static build)")
    r = run("--out", str(tmp_path / "exe"), "--chip", "sm_90,sm_90a", "--ptx-per-kernel=false",
            KEY, "merge.bf16.d64")
    assert r.returncode == 0, r.stderr
    lines = sorted(r.stdout.splitlines())
    assert [ln.split()[:3] for ln in lines] == sorted(
        [["built", c, k] for c in ("sm_90", "sm_90a") for k in (KEY, "merge.bf16.d64")])
    for chip in ("sm_90", "sm_90a"):
        for key in (KEY, "merge.bf16.d64"):
            mod = kernels.build_bundle(key, str(tmp_path / "mod"), chip, cubin=False)
            for f in ("kernels.ptx", "manifest.json"):
                a = (tmp_path / "exe" / chip / key / f).read_bytes()
                assert a == open(os.path.join(mod, f), "rb").read(), (chip, key, f)
    # A second run keeps what is there.
    again = run("--out", str(tmp_path / "exe"), KEY)
    assert again.returncode == 0 and again.stdout.startswith("cached sm_90 " + KEY)


#: Names LLVM numbers per module: branch labels $L__BB<function>_<block>,
#: demoted shared globals, a constant table merged with an identical one.
_PER_MODULE_NAMES = [(re.compile(r"\$L__BB\d+_"), "$L__BB#_"),
                     (re.compile(r"\b__mbarrier(_\d+)?\b"), "__mbarrier#"),
                     (re.compile(r"\bcascade_\w+_(rope|alibi)\b"), r"TABLE_\1")]


def _entries(bundle):
    """{kernel: its .entry's PTX, per-module names normalized} and the
    manifest without the ptx fields."""
    with open(os.path.join(bundle, "manifest.json")) as f:
        man = json.load(f)
    out = {}
    for k in man["kernels"]:
        with open(os.path.join(bundle, k.pop("ptx"))) as f:
            text = f.read()
        start = text.index(f".visible .entry {k['name']}(")
        body = text[start:text.index("\n}\n", start)]
        for r, t in _PER_MODULE_NAMES:
            body = r.sub(t, body)
        out[k["name"]] = body
    return out, man


def test_one_ptx_file_per_kernel_holds_the_same_kernels(tmp_path):
    """The default layout: one <kernel>.ptx per kernel, each holding only
    its entry, the manifest naming it; kernels and manifest otherwise the
    single kernels.ptx bundle's. A relative --out is the working
    directory's."""
    for key in (KEY, "merge.bf16.d64"):
        r = subprocess.run([EXE, "--out", "per", "--chip", "sm_90a", key],
                           capture_output=True, text=True, cwd=str(tmp_path))
        assert r.returncode == 0, r.stderr
        r = run("--out", str(tmp_path / "one"), "--chip", "sm_90a", "--ptx-per-kernel=false", key)
        assert r.returncode == 0, r.stderr
        per, one = tmp_path / "per" / "sm_90a" / key, tmp_path / "one" / "sm_90a" / key
        with open(per / "manifest.json") as f:
            man = json.load(f)
        files = sorted(p.name for p in per.iterdir() if p.suffix == ".ptx")
        assert files == sorted(k["name"] + ".ptx" for k in man["kernels"])
        for k in man["kernels"]:
            assert k["ptx"] == k["name"] + ".ptx"
            assert (per / k["ptx"]).read_text().count(".entry ") == 1
        assert _entries(str(per)) == _entries(str(one))


def test_concurrent_builders_build_once(tmp_path):
    def build(_):
        return run("--out", str(tmp_path), KEY)
    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(build, range(4)))
    assert all(r.returncode == 0 for r in results), [r.stderr for r in results]
    status = sorted(r.stdout.split()[0] for r in results)
    assert status == ["built", "cached", "cached", "cached"]
    left = sorted(p.name for p in (tmp_path / "sm_90").iterdir())
    assert left == ["." + KEY + ".lock", KEY]  # no temporary directory left behind


def test_package_compiles_missing_bundles_with_the_executable(tmp_path, monkeypatch):
    """No compiler module (as in a wheel): ensure_bundles compiles a plan's
    missing groups in one cascade-compile run, into the cache."""
    monkeypatch.setattr(kernels, "_compiler", lambda: None)
    monkeypatch.setenv("CASCADE_MLIR_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("CASCADE_MLIR_KERNEL_PATH", "")
    monkeypatch.setattr(kernels, "_package_kernels", lambda: str(tmp_path / "none"))
    assert kernels.can_compile()
    keys = [KEY, "decode.f16-f16.d64.h8x2.p16.nhd.pool.cap41f00000"]
    start = time.time()
    kernels.ensure_bundles(keys, "sm_90")
    took = time.time() - start
    ptxas = kernels._ptxas()
    for k in keys:
        found = kernels.find_bundle(k, "sm_90", own_chip_only=True)
        assert found and found.startswith(kernels.cache_dir()), (k, found)
        if ptxas:  # a cubin beside every kernel's PTX file
            for ptx in kernels._ptx_files(found):
                assert os.path.isfile(ptx[:-len(".ptx")] + ".sm_90.cubin"), ptx
    assert kernels.ensure_bundle(keys[0], "sm_90").startswith(kernels.cache_dir())
    print(f"two groups compiled by cascade-compile in {took:.2f} s")


def test_sources_are_valid_for_the_oldest_claimed_python(tmp_path):
    """pyproject.toml's requires-python: every module byte-compiles under
    that Python, and the configuration (pure Python) works there."""
    text = open(os.path.join(os.path.dirname(__file__), "..", "..",
                             "pyproject.toml")).read()
    oldest = re.search(r'requires-python = ">=(\d+)\.(\d+)"', text).groups()
    py = os.environ.get("CASCADE_OLDEST_PYTHON") or shutil.which(f"python{'.'.join(oldest)}")
    if py and subprocess.run([py, "-c", "pass"], capture_output=True).returncode != 0:
        py = None  # a version manager's shim for a version it has not selected
    if not py:
        pytest.skip(f"no Python {'.'.join(oldest)} here to check the claim with "
                    "(set CASCADE_OLDEST_PYTHON)")
    pkg = os.path.dirname(kernels.__file__)
    out = subprocess.run([py, "-c", f"""
import sys, glob, py_compile, importlib.util
assert sys.version_info[:2] == ({oldest[0]}, {oldest[1]}), sys.version
for f in sorted(glob.glob({pkg!r} + '/*.py')):
    py_compile.compile(f, cfile={str(tmp_path)!r} + '/x.pyc', doraise=True)
spec = importlib.util.spec_from_file_location('config', {pkg!r} + '/config.py')
m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)
c = m.AttentionConfig(32, 8, 128, 16, q_dtype='bf16', window_left=3)
assert m.AttentionConfig.from_key(c.key()) == c
print('ok')
"""], capture_output=True, text=True)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr
