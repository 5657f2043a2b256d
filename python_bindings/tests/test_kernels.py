"""Kernel bundle keys, sets, lookup order, the on-demand build into the cache
and the error when nothing can build a missing bundle."""
import os

import pytest

import cascade_mlir as cm
from cascade_mlir import kernels as K


@pytest.fixture
def isolated(tmp_path, monkeypatch):
    """No shipped or cached bundle is visible: an empty package dir, a fresh
    cache and no extra path."""
    monkeypatch.setenv("CASCADE_MLIR_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("CASCADE_MLIR_KERNEL_PATH", raising=False)
    monkeypatch.setattr(K, "_package_kernels", lambda: str(tmp_path / "pkg"))
    return tmp_path


@pytest.mark.parametrize("name", ["default", "minimal", "gpu-tests"])
def test_every_key_of_every_set_parses_back(name):
    keys = K.kernel_set(name)
    assert keys and len(keys) == len(set(keys))
    for key in keys:
        parsed = K.parse_key(key)
        if parsed[0] == "merge":
            assert K.merge_key(parsed[1], parsed[2]) == key
        else:
            assert K.attention_key(*parsed) == key


def test_default_set_covers_the_documented_models():
    keys = set(K.kernel_set("default"))
    for hq, hkv, d in K.DEFAULT_MODELS.values():
        for dt in ("f16", "bf16"):
            cfg = K.AttentionConfig(hq, hkv, d, 16, q_dtype=dt, kv_dtype=dt)
            for group in K.DEFAULT_GROUPS:
                assert K.attention_key(cfg, group) in keys
            for kv in ("f8e4m3", "f8e5m2"):  # fp8 caches: a decode cascade's groups
                cfg = K.AttentionConfig(hq, hkv, d, 16, q_dtype=dt, kv_dtype=kv)
                for group in K.FP8_GROUPS:
                    assert K.attention_key(cfg, group) in keys


def test_custom_mask_groups_have_their_own_bundles():
    """A masked prefill is a group of its own (kernels with the custom_mask /
    mask_indptr parameters); gpu-tests holds it at page 1 and 16."""
    g = K.Group(decode=False, custom_mask=True)
    cfg = K.AttentionConfig(32, 8, 128, 16)
    key = K.attention_key(cfg, g)
    assert key == "prefill-mask.f16-f16.d128.h32x8.p16.nhd.pool"
    assert K.parse_key(key) == (cfg, g)
    assert g.as_dict()["custom_mask"] and not K.Group(decode=False).as_dict()["custom_mask"]
    assert key in K.kernel_set("gpu-tests")
    assert K.attention_key(K.AttentionConfig(32, 8, 64, 1, kv_form="pair"), g) in \
        K.kernel_set("gpu-tests")
    from cascade_mlir import _gpu
    import numpy as np
    z = np.zeros(2, np.int32)
    with pytest.raises(ValueError, match="custom mask exactly when its group says so"):
        _gpu.Level(z, z, z, z[:1], g)


@pytest.mark.parametrize("bad", ["", "decode", "decode.f16.d128", "merge.f8.d128",
                                 "decode.f16-f16.d128.h32x8.p16.nhd.tube",
                                 "decode-causal-x.f16-f16.d128.h32x8.p16.nhd.pool",
                                 "decode.f16-f16.d128.h32x8.p16.nhd.pool.bogus"])
def test_malformed_keys_are_rejected(bad):
    with pytest.raises(ValueError, match="not a kernel bundle key"):
        K.parse_key(bad)


def test_config_normalisation_gives_one_key_per_kernel():
    base = dict(head_dim=128, num_qo_heads=32, num_kv_heads=8, page_size=16)
    a = K.KernelConfig.make(**base)
    # The default scale, rope parameters without RoPE, float16 spellings:
    # the same kernels, so the same key.
    b = K.KernelConfig.make(**base, sm_scale=128 ** -0.5, rope_theta=5e5,
                            q_dtype="torch.float16")
    assert a == b
    c = K.KernelConfig.make(**base, sm_scale=1e-05)
    assert c != a and "sm" in K.attention_key(c, K.Group(decode=True))
    rope = K.KernelConfig.make(**base, pos_encoding_mode="ROPE_LLAMA", rope_theta=5e5)
    assert K.parse_key(K.attention_key(rope, K.Group(decode=True)))[0] == rope


@pytest.mark.parametrize("kwargs,match", [
    (dict(num_qo_heads=30), "multiple of num_kv_heads"),
    (dict(head_dim=100), "multiple of 8"),
    (dict(page_size=0), "page_size must be a positive int"),
    (dict(q_dtype="float64"), "q_data_type must be float16, bfloat16, float8_e4m3fn or float8_e5m2"),
    (dict(kv_layout="NCHW"), "kv_layout"),
    (dict(pos_encoding_mode="YARN"), "pos_encoding_mode"),
    (dict(window_left=-7), "window_left"),
])
def test_bad_configurations_name_the_argument(kwargs, match):
    args = dict(head_dim=128, num_qo_heads=32, num_kv_heads=8, page_size=16)
    args.update(kwargs)
    with pytest.raises(ValueError, match=match):
        K.KernelConfig.make(**args)


def test_missing_bundle_without_compiler_names_config_and_command(isolated, monkeypatch):
    monkeypatch.setattr(K, "_compiler", lambda: None)
    monkeypatch.setattr(K, "compiler_executable", lambda: None)
    key = "decode.bf16-bf16.d64.h16x2.p8.hnd.pair"
    with pytest.raises(K.MissingKernelsError) as err:
        K.ensure_bundle(key)
    text = str(err.value)
    assert "head_dim=64" in text and "heads=16/2" in text and "layout=HND" in text
    assert f"python -m cascade_mlir.aot --key {key}" in text
    assert "CASCADE_MLIR_KERNEL_PATH" in text
    assert isinstance(err.value, ValueError)


def test_kernel_path_comes_first(isolated, monkeypatch):
    key = "merge.f16.d64"
    for root in ("first", "second"):
        d = isolated / root / "sm_90" / key
        d.mkdir(parents=True)
        (d / "manifest.json").write_text("{}")
    monkeypatch.setenv("CASCADE_MLIR_KERNEL_PATH",
                       os.pathsep.join([str(isolated / "first"), str(isolated / "second")]))
    assert K.find_bundle(key) == str(isolated / "first" / "sm_90" / key)
    # A newer chip falls back to sm_90 PTX; an older one does not.
    assert K.find_bundle(key, "sm_100") == str(isolated / "first" / "sm_90" / key)
    assert K.find_bundle(key, "sm_80") is None


def test_sm90a_looks_for_its_own_bundles_first_then_sm90(isolated, monkeypatch):
    key = "merge.f16.d64"
    roots = [isolated / "first", isolated / "second"]
    monkeypatch.setenv("CASCADE_MLIR_KERNEL_PATH", os.pathsep.join(map(str, roots)))

    def put(root, chip):
        d = root / chip / key
        d.mkdir(parents=True)
        (d / "manifest.json").write_text("{}")
        return str(d)

    assert K._chips_for("sm_90a") == ["sm_90a", "sm_90", "sm_89", "sm_86", "sm_80"]
    sm90 = put(roots[0], "sm_90")
    assert K.find_bundle(key, "sm_90a") == sm90  # the fallback
    assert K.find_bundle(key, "sm_90a", own_chip_only=True) is None
    # The chip's own bundle wins over a fallback in an earlier root.
    own = put(roots[1], "sm_90a")
    assert K.find_bundle(key, "sm_90a") == own
    # sm_90a PTX runs on compute capability 9.0 only.
    assert K.find_bundle(key, "sm_100") == sm90


def test_without_compiler_sm90a_runs_the_sm90_bundle(isolated, monkeypatch):
    monkeypatch.setattr(K, "_compiler", lambda: None)
    monkeypatch.setattr(K, "compiler_executable", lambda: None)
    key = "merge.f16.d64"
    d = isolated / "kp" / "sm_90" / key
    d.mkdir(parents=True)
    (d / "manifest.json").write_text("{}")
    monkeypatch.setenv("CASCADE_MLIR_KERNEL_PATH", str(isolated / "kp"))
    assert K.ensure_bundle(key, "sm_90a") == str(d)


needs_compiler = pytest.mark.skipif(cm.compiler is None,
                                    reason="runtime-only build: no compiler to build bundles")


@needs_compiler
def test_first_use_compiles_into_the_cache_once(isolated):
    key = "decode.f16-f16.d64.h8x8.p16.nhd.pool"
    path = K.ensure_bundle(key)
    assert path.startswith(str(isolated / "cache"))
    ops = sorted(op for _, op in cm.runtime.load_bundle(path))
    assert ops == ["decode", "decode_split", "merge_states_indptr"]
    stamp = os.stat(os.path.join(path, "manifest.json")).st_mtime_ns
    assert K.ensure_bundle(key) == path  # found, not rebuilt
    assert os.stat(os.path.join(path, "manifest.json")).st_mtime_ns == stamp


@needs_compiler
def test_no_jit_switch_turns_compilation_off(isolated, monkeypatch):
    monkeypatch.setenv("CASCADE_MLIR_NO_JIT", "1")
    with pytest.raises(K.MissingKernelsError, match="CASCADE_MLIR_NO_JIT"):
        K.ensure_bundle("merge.bf16.d64")


@needs_compiler
def test_sm90a_compiles_its_own_bundle_with_the_hopper_kernels(isolated, monkeypatch):
    # An sm_90 bundle of the key is on the search path, but where the
    # compiler is here an sm_90a device gets its own: prefill on wgmma.
    key = "prefill.f16-f16.d64.h8x8.p16.nhd.pool"
    fallback = K.build_bundle(key, str(isolated / "kp"), "sm_90", cubin=False)
    monkeypatch.setenv("CASCADE_MLIR_KERNEL_PATH", str(isolated / "kp"))
    path = K.ensure_bundle(key, "sm_90a")
    assert path != fallback and path.startswith(str(isolated / "cache"))
    assert os.path.basename(os.path.dirname(path)) == "sm_90a"
    names = [n for n, _ in cm.runtime.load_bundle(path)]
    assert any("_wgmma_" in n for n in names), names
    assert not any("_wgmma_" in n for n, _ in cm.runtime.load_bundle(fallback))
