"""The FlashInfer conformance runner's parts (test/Integration/flashinfer),
on the CPU: the `flashinfer` shim resolves to cascade_mlir, its conftest
reports UnsupportedFeatureError and fp8 cases as skips naming the
limitation, summary.py counts a run (shards of a file as one row,
out-of-memory failures apart), keys.py reads the kernel bundles a test file
needs from its parametrize lists, and on_demand.py (the run with no
prebuilt bundle) refuses a package that has bundles, a kernel folder or a
non-empty cache, and compiles the files' bundles through the package's own
on-demand path (a stand-in cascade-compile here)."""
import json
import os
import shutil
import stat
import subprocess
import sys
import textwrap

import cascade_mlir as cm

HERE = os.path.dirname(os.path.abspath(__file__))
RUNNER = os.path.join(HERE, "..", "..", "test", "Integration", "flashinfer")

SYNTHETIC = '''
import numpy as np
import pytest

import flashinfer
from flashinfer.utils import has_flashinfer_jit_cache, is_sm90a_supported


def test_names_are_cascade_mlir():
    import cascade_mlir
    assert flashinfer.decode.single_decode_with_kv_cache is \\
        cascade_mlir.single_decode_with_kv_cache
    assert flashinfer.prefill.BatchPrefillWithRaggedKVCacheWrapper is \\
        cascade_mlir.BatchPrefillWithRaggedKVCacheWrapper
    assert flashinfer.decode.CUDAGraphBatchDecodeWithPagedKVCacheWrapper is \\
        cascade_mlir.CUDAGraphBatchDecodeWithPagedKVCacheWrapper
    assert flashinfer.fast_decode_plan is cascade_mlir.fast_decode_plan
    assert flashinfer.page.append_paged_kv_cache is cascade_mlir.append_paged_kv_cache
    assert flashinfer.quantization.packbits is cascade_mlir.packbits
    assert has_flashinfer_jit_cache() and not is_sm90a_supported("cuda")
    flashinfer.jit.build_jit_specs([flashinfer.jit.JitSpec("x")])


@pytest.mark.parametrize("kv_dtype", ["float16", "float8_e4m3fn"])
def test_dtypes(kv_dtype):
    pass


def test_multi_item_scoring():
    w = flashinfer.prefill.BatchPrefillWithRaggedKVCacheWrapper(np.empty(0, np.uint8))
    w.plan(np.array([0, 1]), np.array([0, 1]), 4, 4, 32, prefix_len_ptr=np.zeros(1))


def test_a_real_failure():
    assert 1 == 2
'''


def _shim_with_synthetic_file(tmp_path):
    """make_shim.py's shim and conftest in tmp_path with the synthetic test
    file beside them; the environment that imports them."""
    r = subprocess.run([sys.executable, os.path.join(RUNNER, "make_shim.py"), str(tmp_path)],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    (tmp_path / "test_synthetic.py").write_text(SYNTHETIC)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(tmp_path / "shim"), str(tmp_path),
                                         os.path.dirname(os.path.dirname(cm.__file__))])
    return env


def test_shim_conftest_and_summary(tmp_path):
    env = _shim_with_synthetic_file(tmp_path)
    xml = tmp_path / "out" / "test_synthetic.xml"
    r = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q",
                        f"--junitxml={xml}", "test_synthetic.py"], cwd=tmp_path, env=env,
                       capture_output=True, text=True)
    assert r.returncode == 1, r.stdout + r.stderr  # the one real failure
    s = subprocess.run([sys.executable, os.path.join(RUNNER, "summary.py"),
                        str(tmp_path / "out")], capture_output=True, text=True)
    assert s.returncode == 1, s.stdout
    row = next(line for line in s.stdout.splitlines() if line.startswith("test_synthetic"))
    # fp8 KV caches are supported (the fp8 issue landed): both dtypes run.
    assert row.split()[1:] == ["5", "3", "1", "0", "1"], s.stdout
    assert "documented limitation: prefix_len_ptr: multi-item scoring" in s.stdout
    assert "documented limitation: fp8 KV caches" not in s.stdout


def test_shards_are_disjoint_and_cover_the_file(tmp_path):
    env = _shim_with_synthetic_file(tmp_path)

    def run(shard):
        xml = tmp_path / "out" / f"test_synthetic.shard{shard.replace('/', 'of')}.xml"
        r = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q",
                            f"--junitxml={xml}", "test_synthetic.py"], cwd=tmp_path,
                           env=dict(env, CASCADE_FI_SHARD=shard), capture_output=True,
                           text=True)
        return r, xml

    import xml.etree.ElementTree as ET
    names = []
    for shard in ("0/2", "1/2"):
        r, xml = run(shard)
        assert r.returncode in (0, 1), r.stdout + r.stderr
        names.append({c.get("name") for c in ET.parse(xml).getroot().iter("testcase")})
    assert names[0] and names[1] and not names[0] & names[1]
    assert len(names[0] | names[1]) == 5  # the synthetic file's tests
    s = subprocess.run([sys.executable, os.path.join(RUNNER, "summary.py"),
                        str(tmp_path / "out")], capture_output=True, text=True)
    total = next(line for line in s.stdout.splitlines() if line.startswith("total"))
    assert total.split()[1:] == ["5", "3", "1", "0", "1"], s.stdout
    for bad in ("2/2", "x", "1/0"):
        r, _ = run(bad)
        assert r.returncode == 4 and "CASCADE_FI_SHARD" in r.stdout + r.stderr, bad


def test_summary_rows_per_file_and_out_of_memory(tmp_path):
    case = '<testcase classname="tests.attention.test_x" name="{}">{}</testcase>'
    oom = '<failure message="torch.OutOfMemoryError: CUDA out of memory.">...</failure>'
    for shard, body in (("0", [case.format("a", ""), case.format("b", oom)]),
                        ("1", [case.format("c", '<failure message="assert 1 == 2"/>'),
                               case.format("d", '<skipped message="no"/>')])):
        (tmp_path / f"test_x.shard{shard}of2.xml").write_text(
            f'<testsuites><testsuite>{"".join(body)}</testsuite></testsuites>')
    s = subprocess.run([sys.executable, os.path.join(RUNNER, "summary.py"), str(tmp_path)],
                       capture_output=True, text=True)
    assert s.returncode == 1, s.stdout
    rows = [ln.split() for ln in s.stdout.splitlines() if ln.startswith(("test_x", "total"))]
    assert rows == [["test_x", "4", "1", "2", "0", "1"], ["total", "4", "1", "2", "0", "1"]]
    assert "1 of the failures / errors ran out of GPU memory" in s.stdout


def _write_test_files(folder):
    """Two small FlashInfer-shaped test files (and an empty third): the
    parametrize lists keys.py reads."""
    (folder / "test_batch_decode_kernels.py").write_text(textwrap.dedent('''
        import pytest, torch
        @pytest.mark.parametrize("page_size", [1, 16])
        @pytest.mark.parametrize("num_kv_heads", [4])
        @pytest.mark.parametrize("num_qo_heads", [32])
        @pytest.mark.parametrize("head_dim", [128])
        @pytest.mark.parametrize("pos_encoding_mode", ["NONE"])
        @pytest.mark.parametrize("kv_dtype", [torch.float16, torch.float8_e4m3fn])
        def test_batch_decode_with_tuple_paged_kv_cache(page_size, num_kv_heads,
                num_qo_heads, head_dim, pos_encoding_mode, kv_dtype):
            pass
    '''))
    (folder / "test_batch_prefill_kernels.py").write_text(textwrap.dedent('''
        import pytest
        @pytest.mark.parametrize("num_kv_heads", [4])
        @pytest.mark.parametrize("num_qo_heads", [4])
        @pytest.mark.parametrize("head_dim", [256])
        @pytest.mark.parametrize("pos_encoding_mode", ["ALIBI"])
        def test_batch_prefill_with_ragged_kv_cache_custom_mask(num_kv_heads, num_qo_heads,
                head_dim, pos_encoding_mode):
            pass
    '''))
    (folder / "test_shared_prefix_kernels.py").write_text("")


def test_keys_from_parametrize_lists(tmp_path):
    _write_test_files(tmp_path)
    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(cm.__file__)))
    r = subprocess.run([sys.executable, os.path.join(RUNNER, "keys.py"), str(tmp_path)],
                       env=env, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    # The wrapper's pair form at both page sizes and both KV dtypes (fp8 KV
    # runs since the fp8 issue), the single_decode reference (page 1 pair,
    # the same key as one of them), the merges; the ragged custom-mask test
    # plans the masked group and compares it with the causal one, both on
    # the ragged kernels (no page table).
    assert sorted(r.stdout.split()) == ["decode.f16-f16.d128.h32x4.p1.nhd.pair",
                                        "decode.f16-f16.d128.h32x4.p16.nhd.pair",
                                        "decode.f16-f8e4m3.d128.h32x4.p1.nhd.pair",
                                        "decode.f16-f8e4m3.d128.h32x4.p16.nhd.pair",
                                        "merge.f16.d128", "merge.f16.d256",
                                        "prefill-causal.f16-f16.d256.h4x4.p1.nhd.ragged.alibi",
                                        "prefill-mask.f16-f16.d256.h4x4.p1.nhd.ragged.alibi"]


# A stand-in for the wheel's cascade-compile (the real one needs LLVM to
# build): cascade-compile's command line and output lines, bundles with a
# manifest and PTX, written to a hidden directory and renamed as the real one.
FAKE_COMPILER = """#!{python}
import json, os, sys
args = sys.argv[1:]
out, chip = args[args.index("--out") + 1], args[args.index("--chip") + 1]
for key in [a for a in args if not a.startswith("-") and a not in (out, chip)]:
    dest = os.path.join(out, chip, key)
    if os.path.isfile(os.path.join(dest, "manifest.json")):
        print("present", chip, key, "0")
        continue
    tmp = os.path.join(out, chip, "." + key + ".tmp")
    os.makedirs(tmp, exist_ok=True)
    open(os.path.join(tmp, "kernels.ptx"), "w").write("// " + key)
    json.dump({{"kernels": []}}, open(os.path.join(tmp, "manifest.json"), "w"))
    os.rename(tmp, dest)
    print("built", chip, key, "0.001")
"""
FAKE_PTXAS = """#!{python}
import sys
open(sys.argv[sys.argv.index("-o") + 1], "wb").write(b"cubin")
"""

ON_DEMAND_KEYS = 8  # the keys _write_test_files' parametrize lists need


def _executable(path, text):
    path.write_text(text.format(python=sys.executable))
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)


def _wheel_like_package(tmp_path):
    """cascade_mlir as the on-demand run has it: the package copied without
    its bundles and in-process compiler module, a (stand-in) bin/cascade-
    compile; an empty kernel cache; the environment that imports it."""
    site = tmp_path / "site"
    shutil.copytree(os.path.dirname(cm.__file__), site / "cascade_mlir",
                    ignore=shutil.ignore_patterns("bundles", "bin", "_compiler*.so",
                                                  "__pycache__"))
    (site / "cascade_mlir" / "bin").mkdir()
    _executable(site / "cascade_mlir" / "bin" / "cascade-compile", FAKE_COMPILER)
    _executable(tmp_path / "ptxas", FAKE_PTXAS)
    tests = tmp_path / "tests"
    tests.mkdir()
    _write_test_files(tests)
    env = {k: v for k, v in os.environ.items()
           if k not in ("CASCADE_MLIR_KERNEL_PATH", "CASCADE_MLIR_NO_JIT",
                        "CASCADE_MLIR_COMPILER")}
    env.update(PYTHONPATH=str(site), CASCADE_MLIR_CACHE_DIR=str(tmp_path / "cache"),
               CASCADE_PTXAS=str(tmp_path / "ptxas"))
    return site, tests, env


def _on_demand(env, *args):
    return subprocess.run([sys.executable, os.path.join(RUNNER, "on_demand.py"), *args],
                          env=env, capture_output=True, text=True)


def test_on_demand_check_refuses_what_is_not_on_demand(tmp_path):
    site, tests, env = _wheel_like_package(tmp_path)
    r = _on_demand(env, "check", str(tests), "--json", str(tmp_path / "check.json"))
    assert r.returncode == 0, r.stdout + r.stderr
    assert f"none of the {ON_DEMAND_KEYS} keys of the test files found" in r.stdout
    facts = json.loads((tmp_path / "check.json").read_text())
    assert facts["compiler"] == str(site / "cascade_mlir" / "bin" / "cascade-compile")
    assert facts["problems"] == []
    key = "decode.f16-f16.d128.h32x4.p16.nhd.pair"
    # A bundle left in the package (its default set not removed): refused.
    shipped = site / "cascade_mlir" / "bundles" / "sm_90" / key
    shipped.mkdir(parents=True)
    (shipped / "manifest.json").write_text("{}")
    r = _on_demand(env, "check", str(tests))
    assert r.returncode == 1
    assert "its default kernel set was not removed" in r.stdout
    assert "find_bundle finds 1 of the 8 keys" in r.stdout  # sm_90: sm_90a's fallback
    shutil.rmtree(site / "cascade_mlir" / "bundles")
    # A kernel folder on the search path, another compiler, no JIT: refused.
    for var in ("CASCADE_MLIR_KERNEL_PATH", "CASCADE_MLIR_COMPILER", "CASCADE_MLIR_NO_JIT"):
        r = _on_demand(dict(env, **{var: "1" if var.endswith("JIT") else str(tmp_path)}),
                       "check")
        assert r.returncode == 1 and f"NOT ON DEMAND: {var} is set" in r.stdout, var
    # A kernel cache that is not empty: refused.
    cached = tmp_path / "cache" / "some-compiler" / "sm_90a" / key
    cached.mkdir(parents=True)
    (cached / "manifest.json").write_text("{}")
    r = _on_demand(env, "check")
    assert r.returncode == 1 and "holds 1 bundle(s)" in r.stdout and "not empty" in r.stdout


def test_on_demand_warm_compiles_through_the_package_and_counts(tmp_path):
    site, tests, env = _wheel_like_package(tmp_path)
    assert _on_demand(env, "check", str(tests)).returncode == 0
    warm_json = tmp_path / "warm.json"
    r = _on_demand(env, "warm", str(tests), "--chip", "sm_90a", "--first-use", "3",
                   "--json", str(warm_json))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "first use, one bundle at a time (compile + cubin, no GPU): n=3" in r.stdout
    assert f"warm: {ON_DEMAND_KEYS - 3} bundle(s) for sm_90a by kernels.ensure_bundles" \
        in r.stdout
    assert f"{ON_DEMAND_KEYS} of {ON_DEMAND_KEYS} missing keys now in the cache, " \
        f"{ON_DEMAND_KEYS} with a cubin" in r.stdout
    # Every bundle went into the kernel cache, under the compiler's id.
    root = tmp_path / "cache"
    built = sorted(p.parent.name for p in root.glob("*/sm_90a/*/manifest.json"))
    assert len(built) == ON_DEMAND_KEYS
    assert sorted(json.loads(warm_json.read_text())["compiled"]) == built
    # A bundle the tests compile themselves (keys.py did not foresee it).
    extra = next(root.glob("*/sm_90a")) / "merge.f32.d64"
    extra.mkdir()
    (extra / "manifest.json").write_text("{}")
    r = _on_demand(env, "count", "--warm", str(warm_json))
    assert r.returncode == 0, r.stderr
    assert f"this run (the kernel cache {root}, empty at the start): " \
        f"{ON_DEMAND_KEYS + 1} ({ON_DEMAND_KEYS + 1} sm_90a)" in r.stdout
    assert f"{ON_DEMAND_KEYS} compiled before the tests (warm), 1 by the tests themselves " \
        "on first use: merge.f32.d64" in r.stdout
    # Warm again: nothing left to compile.
    r = _on_demand(env, "warm", str(tests), "--chip", "sm_90a")
    assert r.returncode == 0 and "warm: 0 bundle(s)" in r.stdout, r.stdout + r.stderr
    # A kernel set of the package instead of test files (the GPU tests' run).
    n = len(cm.kernels.kernel_set("minimal"))
    r = _on_demand(env, "warm", "--set", "minimal", "--chip", "sm_90")
    assert r.returncode == 0, r.stdout + r.stderr
    assert f"warm: {n} bundle(s) for sm_90" in r.stdout
    assert len(list(root.glob("*/sm_90/*/manifest.json"))) == n
    assert _on_demand(env, "warm", str(tests), "--set", "minimal").returncode == 2
