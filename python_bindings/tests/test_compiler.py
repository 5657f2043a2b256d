"""The compiler module: verification diagnostics and pipelines from Python."""
import pytest

import cascade_mlir as cm
from cascade_mlir import ir

pytestmark = pytest.mark.skipif(cm.compiler is None, reason="runtime-only build")


def test_decode_ir_for_every_layout_and_dtype():
    for layout in ("NHD", "HND"):
        for dtype in ("float16", "bfloat16"):
            cfg = ir.AttentionConfig(32, 8, 128, 16, q_dtype=dtype, kv_layout=layout,
                                     logits_soft_cap=30.0, window_left=256)
            out = cm.compiler.verify(ir.decode(cfg))
            assert "cascade.paged_attention" in out
            assert ("hnd" in out) == (layout == "HND")


def test_verifier_errors_surface_with_location():
    cfg = ir.AttentionConfig(30, 8, 128, 16)  # 30 % 8 != 0
    with pytest.raises(ValueError, match="multiple of the number of KV heads"):
        cm.compiler.verify(ir.decode(cfg))


def test_bad_pipeline_is_reported():
    cfg = ir.AttentionConfig(8, 8, 64, 16)
    with pytest.raises(ValueError, match="no-such-pass"):
        cm.compiler.run_pipeline(ir.decode(cfg), "builtin.module(no-such-pass)")


def test_bufferize_from_python():
    cfg = ir.AttentionConfig(8, 2, 64, 1)
    text = ir.multi_level_attention(cfg, 3, shared_prefix_levels=[0])
    out = cm.compiler.run_pipeline(
        text, "builtin.module(cascade-decompose-levels, "
              "one-shot-bufferize{bufferize-function-boundaries})")
    assert "tensor<" not in out.split("func.func")[1].split("{")[1]
    assert out.count("cascade.paged_attention") == 3


def test_config_rejects_unknown_dtype():
    with pytest.raises(ValueError, match="float16 or bfloat16"):
        ir.AttentionConfig(8, 8, 64, 16, q_dtype="float64").types()


def test_bundle_manifest_is_valid_json_under_a_german_locale(tmp_path):
    import json
    import locale
    try:
        previous = locale.setlocale(locale.LC_NUMERIC)
        locale.setlocale(locale.LC_NUMERIC, "de_DE.UTF-8")
    except locale.Error:
        pytest.skip("the de_DE.UTF-8 locale is not installed here "
                    "(tools/cascade-dev generates it)")
    try:
        cfg = ir.AttentionConfig(32, 8, 128, 16)
        cm.compiler.run_pipeline(
            ir.decode(cfg), f"builtin.module(cascade-to-ptx{{bundle-dir={tmp_path}}})")
    finally:
        locale.setlocale(locale.LC_NUMERIC, previous)
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    scales = [k["static"]["sm_scale"] for k in manifest["kernels"]]
    assert scales and all(abs(s - 128 ** -0.5) < 1e-7 for s in scales)
