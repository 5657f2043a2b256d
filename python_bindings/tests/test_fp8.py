"""fp8 KV caches (e4m3, e5m2) on the host: dtype names, keys, the IR, a
compiled bundle, run(k_scale=, v_scale=) on the CPU reference and the errors
before any launch (docs/semantics.md, "fp8 KV cache")."""

import json
import os
import re

import numpy as np
import pytest

import cascade_mlir as cm
from cascade_mlir import ir
from cascade_mlir.config import AttentionConfig
from cascade_mlir.kernels import Group, attention_key, builds_on, parse_key

E4M3 = "float8_e4m3fn"


def e4m3_values(rng, shape):
    """float32 values that e4m3 represents exactly: s * 2^e * (1 + m/8)."""
    m = rng.integers(0, 8, shape)
    e = rng.integers(-4, 3, shape)
    s = rng.choice([-1.0, 1.0], shape)
    return (s * np.ldexp(1 + m / 8, e)).astype(np.float32)


@pytest.mark.parametrize("name,code", [(E4M3, "f8e4m3"), ("float8_e5m2", "f8e5m2"),
                                       ("torch.float8_e4m3fn", "f8e4m3")])
def test_fp8_kv_dtype_names_and_keys(name, code):
    cfg = AttentionConfig.make(q_dtype="float16", kv_dtype=name, head_dim=128,
                               num_qo_heads=32, num_kv_heads=8, page_size=16)
    assert cfg.kv_dtype == code
    key = attention_key(cfg, Group(decode=True))
    assert key == f"decode.f16-{code}.d128.h32x8.p16.nhd.pool"
    assert parse_key(key)[0] == cfg


@pytest.mark.parametrize("q", ["float16", E4M3])
def test_fp8_outputs_are_refused(q):
    with pytest.raises(ValueError, match="o_data_type must be float16(,| or) bfloat16"):
        AttentionConfig.make(q_dtype=q, o_dtype=E4M3, head_dim=64, num_qo_heads=8,
                             num_kv_heads=8, page_size=16)


@pytest.mark.parametrize("q,kv", [(E4M3, "float16"), (E4M3, "float8_e5m2"),
                                  ("float8_e5m2", E4M3)])
def test_fp8_queries_need_a_cache_of_their_type(q, kv):
    with pytest.raises(ValueError, match="fp8 queries.*needs kv_data_type of the same type"):
        AttentionConfig.make(q_dtype=q, kv_dtype=kv, head_dim=128, num_qo_heads=32,
                             num_kv_heads=8, page_size=16)


@pytest.mark.parametrize("o,code", [(None, "bf16"), ("float16", "f16"), ("bfloat16", "bf16")])
def test_fp8_query_keys(o, code):
    """fp8 queries: the cache of their type by default, a 16-bit output
    (bf16 unless told) spelled in the key, which parses back; their bundles
    are built for sm_90a only (fp8 wgmma)."""
    cfg = AttentionConfig.make(q_dtype=E4M3, o_dtype=o, head_dim=128, num_qo_heads=32,
                               num_kv_heads=8, page_size=16)
    assert (cfg.q_dtype, cfg.kv_dtype, cfg.o_dtype) == ("f8e4m3", "f8e4m3", code)
    key = attention_key(cfg, Group(decode=False, causal=True))
    assert key == f"prefill-causal.f8e4m3-f8e4m3.d128.h32x8.p16.nhd.pool.o{code}"
    assert parse_key(key)[0] == cfg
    assert builds_on(key, "sm_90a") and not builds_on(key, "sm_90")
    assert builds_on("prefill.f16-f8e4m3.d128.h32x8.p16.nhd.pool", "sm_90")


def _ptx(out, kernels):
    """The PTX text of a bundle's kernels (one file, or one per kernel)."""
    text = ""
    for f in sorted({k["ptx"] for k in kernels}):
        with open(os.path.join(out, f)) as fh:
            text += fh.read()
    return text


@pytest.mark.skipif(cm.compiler is None,
                    reason="verifies IR with the in-process compiler module, which a wheel "
                           "does not have (its bin/cascade-compile builds bundles only)")
def test_fp8_ir_verifies():
    cfg = ir.AttentionConfig(32, 8, 128, 16, kv_dtype="float8_e5m2", q_dtype="bfloat16")
    text = cm.compiler.verify(cfg.ir(decode=True))
    assert "tensor<?x2x16x8x128xf8E5M2>" in text and "tensor<?x32x128xbf16>" in text


@pytest.mark.parametrize("kv_heads,group,family,kv", [
    (32, Group(decode=True), "rows", "f8e4m3"),
    (8, Group(decode=True), "mma_sync", "f8e4m3"),
    (8, Group(decode=False, causal=True), "mma_sync", "f8e5m2")])
def test_fp8_bundle_has_scale_params(tmp_path, kv_heads, group, family, kv):
    """fp8 decode runs on the rows kernels at G 1 and on mma_sync from G 2
    (here 4), causal prefill on mma_sync; both the unsplit and the split
    kernel take k_scale / v_scale."""
    cfg = AttentionConfig(32, kv_heads, 128, 16, kv_dtype=kv)
    out = cm.kernels.build_bundle(attention_key(cfg, group), str(tmp_path), cubin=False)
    with open(os.path.join(out, "manifest.json")) as f:
        kernels = json.load(f)["kernels"]
    attention = [k for k in kernels if not k["op"].startswith("merge")]
    assert len(attention) == 2
    for k in attention:
        assert k["static"]["kv_dtype"] == kv and k["static"]["kernel_family"] == family
        names = [p["name"] for p in k["params"] if p["kind"] == "f32"]
        assert names == ["k_scale", "v_scale"]
    assert f"cvt.rn.f16x2.{kv[2:]}x2" in _ptx(out, kernels)


@pytest.mark.parametrize("q", ["f16", "bf16"])
def test_fp8_prefill_on_sm90a_runs_on_wgmma(tmp_path, q):
    """On sm_90a the shared-prefix level over an fp8 cache (a prefill)
    runs on wgmma, whose producer converts the fp8 tiles; its unsplit and
    split kernels take k_scale / v_scale and need the panel ring plus the
    fp8 staging ring (D=128, not causal: three consumers of 64 query rows,
    64-key tiles, 3 stages: 48 + 96 + 48 KiB)."""
    cfg = AttentionConfig(32, 8, 128, 16, q_dtype=q, kv_dtype="f8e4m3")
    out = cm.kernels.build_bundle(attention_key(cfg, Group(decode=False)), str(tmp_path),
                                  chip="sm_90a", cubin=False)
    with open(os.path.join(out, "manifest.json")) as f:
        kernels = json.load(f)["kernels"]
    attention = [k for k in kernels if not k["op"].startswith("merge")]
    assert len(attention) == 2
    for k in attention:
        assert k["static"]["kernel_family"] == "wgmma" and k["static"]["kv_dtype"] == "f8e4m3"
        assert f"_wgmma_{q}_f8e4m3_d128_" in k["name"]
        assert k["name"].endswith("_w4x1_q192_kv64_s3")
        assert k["dynamic_shared_bytes"] == 196608
        assert [p["name"] for p in k["params"] if p["kind"] == "f32"] == ["k_scale", "v_scale"]
    ptx = _ptx(out, kernels)
    assert "cvt.rn.f16x2.e4m3x2" in ptx
    assert re.search(r"setmaxnreg\.dec\.sync\.aligned\.u32\s+56;", ptx)


@pytest.mark.parametrize("kv", ["f8e4m3", "f8e5m2"])
def test_fp8_query_prefill_runs_on_fp8_wgmma(tmp_path, kv):
    """fp8 queries over a cache of their type on sm_90a: the unsplit and
    split kernels multiply on fp8 tensor cores (k32), take k_scale /
    v_scale and write bf16; sm_90 (no wgmma) refuses them with the reason."""
    cfg = AttentionConfig(32, 8, 128, 16, q_dtype=kv, kv_dtype=kv)
    key = attention_key(cfg, Group(decode=False, causal=True))
    out = cm.kernels.build_bundle(key, str(tmp_path), chip="sm_90a", cubin=False)
    with open(os.path.join(out, "manifest.json")) as f:
        kernels = json.load(f)["kernels"]
    attention = [k for k in kernels if not k["op"].startswith("merge")]
    assert len(attention) == 2
    for k in attention:
        assert k["static"]["kernel_family"] == "wgmma"
        assert (k["static"]["q_dtype"], k["static"]["o_dtype"]) == (kv, "bf16")
        assert k["name"].endswith("_w3x1_q128_kv128_s4")
        assert [p["name"] for p in k["params"] if p["kind"] == "f32"] == ["k_scale", "v_scale"]
    assert f"wgmma.mma_async.sync.aligned.m64n128k32.f32.{kv[2:]}.{kv[2:]}" in \
        _ptx(out, kernels)
    with pytest.raises(ValueError, match="fp8 queries.*wgmma family only.*sm_90a"):
        cm.kernels.build_bundle(key, str(tmp_path / "sm90"), chip="sm_90", cubin=False)


def test_fp8_on_sm80_is_refused_when_compiling(tmp_path):
    cfg = AttentionConfig(32, 8, 128, 16, kv_dtype="f8e5m2")
    key = attention_key(cfg, Group(decode=True))
    with pytest.raises(ValueError, match="needs sm_89 or newer.*sm_80"):
        cm.kernels.build_bundle(key, str(tmp_path), chip="sm_80", cubin=False)


def _decode_case(rng, hq=4, hkv=2, d=16, page=4):
    indptr = np.array([0, 3, 4, 6], np.int32)
    indices = rng.permutation(6).astype(np.int32)
    last = np.array([2, 4, 1], np.int32)
    q = rng.standard_normal((3, hq, d)).astype(np.float32)
    kv = e4m3_values(rng, (6, 2, page, hkv, d))
    return indptr, indices, last, q, kv


@pytest.mark.parametrize("wrapper", ["decode", "cascade"])
def test_scales_on_the_cpu_reference(rng, wrapper):
    """k_scale / v_scale (powers of two: exact) equal a cache holding
    k_scale * k and v_scale * v."""
    indptr, indices, last, q, kv = _decode_case(rng)
    ks, vs = 0.25, 8.0
    scaled = kv.copy()
    scaled[:, 0] *= ks
    scaled[:, 1] *= vs

    def run(kv_dtype, cache, **scales):
        if wrapper == "decode":
            w = cm.BatchDecodeWithPagedKVCacheWrapper(None)
            w.plan(indptr, indices, last, 4, 2, 16, 4, kv_data_type=kv_dtype,
                   logits_soft_cap=5.0)
        else:
            w = cm.MultiLevelCascadeAttentionWrapper(1)
            w.plan([np.arange(4, dtype=np.int32)], [indptr], [indices], [last], 4, 2, 16,
                   4, kv_data_type=kv_dtype, logits_soft_cap=5.0)
        return w.run(q, cache, return_lse=True, **scales)

    o_fp8, lse_fp8 = run(E4M3, kv, k_scale=ks, v_scale=vs)
    o_ref, lse_ref = run("float16", scaled)
    np.testing.assert_allclose(o_fp8, o_ref, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(lse_fp8, lse_ref, rtol=1e-6, atol=1e-6)
    o_plain, lse_plain = run(E4M3, kv)
    assert np.abs(lse_plain - lse_fp8).max() > 1e-3


def test_scale_errors_before_any_launch(rng):
    indptr, indices, last, q, kv = _decode_case(rng)
    w = cm.BatchDecodeWithPagedKVCacheWrapper(None)
    w.plan(indptr, indices, last, 4, 2, 16, 4, kv_data_type=E4M3)
    with pytest.raises(ValueError, match="k_scale must be finite"):
        w.run(q, kv, k_scale=float("inf"))
    # The tensor-core kernels fold k_scale into the softmax's exponent
    # scale: a magnitude, positive (v_scale may be any finite float).
    for bad in (0.0, -0.5):
        with pytest.raises(ValueError, match="k_scale must be positive"):
            w.run(q, kv, k_scale=bad)
    w.run(q, kv, v_scale=-2.0)
    with pytest.raises(ValueError, match="v_scale must be a float"):
        w.run(q, kv, v_scale="two")
    # An f16 cache takes them too (FlashInfer: k_scale multiplies sm_scale,
    # v_scale the output), with the same checks.
    f16 = cm.BatchPrefillWithPagedKVCacheWrapper(None)
    f16.plan(np.array([0, 1, 2, 3], np.int32), indptr, indices, last, 4, 2, 16, 4)
    with pytest.raises(ValueError, match="k_scale must be positive"):
        f16.run(q, kv, k_scale=0.0)
    with pytest.raises(ValueError, match="v_scale must be finite"):
        f16.run(q, kv, v_scale=float("nan"))
