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
    # The dataclass refuses 30 % 8 != 0 itself; the builders take the dict.
    cfg = dict(ir.AttentionConfig(32, 8, 128, 16).as_dict(), num_qo_heads=30)
    with pytest.raises(ValueError, match="multiple of the number of KV heads"):
        cm.compiler.verify(cm.compiler.attention_ir(cfg, decode=True))


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


def test_ir_is_built_not_formatted_small_scales_parse():
    # Formatting `sm_scale = 1e-05 : f32` as text does not parse; the C++
    # builders print it the way MLIR reads it back.
    for scale in (1e-05, 3e-38, 0.125, 1 / 3):
        cfg = ir.AttentionConfig(32, 8, 128, 16, sm_scale=scale, logits_soft_cap=1e-06)
        for text in (ir.decode(cfg), ir.prefill(cfg), ir.multi_level_attention(cfg, 2)):
            printed = cm.compiler.verify(text)
            assert "sm_scale" in printed
            assert cm.compiler.verify(printed) == printed  # round trip


def test_multi_level_ir_marks_decode_levels_and_causal():
    cfg = ir.AttentionConfig(8, 2, 64, 16)
    text = ir.multi_level_attention(cfg, 2, shared_prefix_levels=[0],
                                    decode_levels=[False, True], causal=True)
    assert "decode_levels = array<i1: false, true>" in text and "causal" in text
    with pytest.raises(ValueError, match="one entry per level"):
        ir.multi_level_attention(cfg, 2, decode_levels=[True])


def test_multi_level_ir_ragged_levels_have_no_page_table():
    cfg = ir.AttentionConfig(8, 2, 64, 16)
    text = ir.multi_level_attention(cfg, 2, shared_prefix_levels=[0],
                                    decode_levels=[False, True], ragged_levels=[0])
    assert "ragged_levels = array<i1: true, false>" in text
    # One kv_indices (the unique level's): the prefix reads its pages in order.
    assert text.count("kv_indices(") == 1
    assert cm.compiler.verify(text) == cm.compiler.verify(cm.compiler.verify(text))
    # Decomposed, the prefix is a paged_attention without a page table.
    out = cm.compiler.run_pipeline(text, "builtin.module(cascade-decompose-levels)")
    levels = [line for line in out.splitlines() if "cascade.paged_attention" in line]
    assert len(levels) == 2
    assert "kv_indices(" not in levels[0] and "kv_indices(" in levels[1]
    with pytest.raises(ValueError, match="ragged_levels names level 2 of 2"):
        ir.multi_level_attention(cfg, 2, ragged_levels=[2])


def test_buffer_form_split_attention_has_plan_operands():
    cfg = ir.AttentionConfig(32, 8, 128, 16).as_dict()
    text = cm.compiler.attention_ir(cfg, decode=False, split=True, tensors=False)
    assert "plan(" in text and "memref<1xi32>" in text and "tensor<" not in text
    with pytest.raises(ValueError, match="buffer form"):
        cm.compiler.attention_ir(cfg, decode=True, split=True, tensors=True)


def test_config_rejects_unknown_dtype():
    with pytest.raises(ValueError, match="float16, bfloat16, float8_e4m3fn or float8_e5m2"):
        ir.AttentionConfig(8, 8, 64, 16, q_dtype="float64")


def test_the_builders_read_the_whole_configuration():
    cfg = ir.AttentionConfig(16, 4, 64, 8, q_dtype="bfloat16", kv_layout="HND",
                             kv_form="pair", sm_scale=0.5, logits_soft_cap=20.0,
                             window_left=12, pos_encoding="alibi")
    text = cm.compiler.verify(cfg.ir(decode=False, causal=True))
    assert "tensor<?x4x8x64xbf16>, tensor<?x4x8x64xbf16>" in text  # an HND pair
    for attr in ("sm_scale = 5.000000e-01", "logits_soft_cap = 2.000000e+01",
                 "window_left = 12", "alibi", "causal"):
        assert attr in text, attr
    # A separate output dtype reaches the IR (the op verifier wants q's today).
    f32_out = ir.AttentionConfig(8, 8, 64, 16, o_dtype="float32")
    with pytest.raises(ValueError, match="'o' must be .*v's head_dim.*got .*f32"):
        ir.decode(f32_out)
    with pytest.raises(ValueError, match="unknown key 'num_heads'"):
        cm.compiler.attention_ir({"num_heads": 8}, decode=True)
    with pytest.raises(ValueError, match="kv_form must be 'pool'"):
        ir.multi_level_attention(cfg, 2)


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
