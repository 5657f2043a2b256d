"""The GPU path (plan, upload, kernel binding, run, CUDA-graph replans,
merges) on a stand-in CUDA driver, so that it is checked in CI without a
GPU: see fake_cuda/fake_device_checks.py. Each scenario runs in its own
process (the runtime loads the driver once per process)."""
import os
import shutil
import subprocess
import sys

import pytest

import cascade_mlir as cm
from cascade_mlir import kernels as K

HERE = os.path.dirname(os.path.abspath(__file__))
KEYS = [K.attention_key(K.AttentionConfig(hq, hkv, 128, 16, kv_form=form), g)
        for hq, hkv in ((64, 8), (32, 8)) for form in ("pool", "pair")
        for g in (K.Group(decode=False), K.Group(decode=True, accumulate=True),
                  K.Group(decode=True), K.Group(decode=False, causal=True),
                  K.Group(decode=False, accumulate=True))] + \
    [K.attention_key(K.AttentionConfig(32, 8, 128, 1, kv_form="pair"), g)
     for g in (K.Group(decode=True), K.Group(decode=False, causal=True),
               K.Group(decode=False, custom_mask=True))] + \
    [K.attention_key(K.AttentionConfig(32, 8, 128, 1, kv_form="ragged"), g)
     for g in (K.Group(decode=False, causal=True), K.Group(decode=False, custom_mask=True))] + \
    ["merge.f16.d128"]


@pytest.fixture(scope="module")
def fake_env(tmp_path_factory):
    cc = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if cc is None:
        pytest.skip("no C compiler here to build the stand-in CUDA driver")
    # The stand-in driver is compute capability 9.0: the package looks for
    # sm_90a bundles first (the Hopper kernels), then sm_90's.
    chip = "sm_90a" if cm.compiler is not None else "sm_90"
    if cm.compiler is None and not all(K.find_bundle(k) for k in KEYS):
        pytest.skip("runtime-only build without the bundles these checks bind")
    tmp = tmp_path_factory.mktemp("fake")
    lib = tmp / "libfakecuda.so"
    subprocess.run([cc, "-shared", "-fPIC", "-O1", "-o", str(lib),
                    os.path.join(HERE, "fake_cuda", "fake_cuda.c")], check=True)
    # PTX-only bundles (the stand-in reads the PTX to count parameters).
    root = tmp / "bundles"
    for key in KEYS:
        found = K.find_bundle(key, chip, own_chip_only=True)
        dest = root / chip / key
        if found:
            dest.mkdir(parents=True)
            for f in ("manifest.json", "kernels.ptx"):
                shutil.copy(os.path.join(found, f), dest / f)
        else:
            K.build_bundle(key, str(root), chip, cubin=False)
    env = dict(os.environ, CASCADE_CUDA_DRIVER=str(lib), CASCADE_MLIR_KERNEL_PATH=str(root),
               CASCADE_MLIR_CACHE_DIR=str(tmp / "cache"))
    return env


@pytest.mark.parametrize("scenario", ["cascade", "graph", "single_and_merges",
                                      "auto", "missing_kernels", "no_leak",
                                      "split_options", "parity", "index_buffers",
                                      "strides", "page_strides", "explicit_plain"])
def test_gpu_path_on_a_stand_in_driver(fake_env, scenario):
    if scenario == "cascade" and cm.compiler is None:
        pytest.skip("the pair-form kernels of this scenario are compiled on first use")
    r = subprocess.run([sys.executable, os.path.join(HERE, "fake_cuda", "fake_device_checks.py"),
                        scenario], env=fake_env, capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    assert f"OK {scenario}" in r.stdout
