"""The FlashInfer conformance runner's parts (test/Integration/flashinfer),
on the CPU: the `flashinfer` shim resolves to cascade_mlir, its conftest
reports UnsupportedFeatureError and fp8 cases as skips naming the
limitation, summary.py counts a run, and keys.py reads the kernel bundles a
test file needs from its parametrize lists."""
import os
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


def test_keys_from_parametrize_lists(tmp_path):
    (tmp_path / "test_batch_decode_kernels.py").write_text(textwrap.dedent('''
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
    (tmp_path / "test_batch_prefill_kernels.py").write_text(textwrap.dedent('''
        import pytest
        @pytest.mark.parametrize("num_kv_heads", [4])
        @pytest.mark.parametrize("num_qo_heads", [4])
        @pytest.mark.parametrize("head_dim", [256])
        @pytest.mark.parametrize("pos_encoding_mode", ["ALIBI"])
        def test_batch_prefill_with_ragged_kv_cache_custom_mask(num_kv_heads, num_qo_heads,
                head_dim, pos_encoding_mode):
            pass
    '''))
    (tmp_path / "test_shared_prefix_kernels.py").write_text("")
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
