"""Bundles built by the in-process compiler: the kernels each group needs,
specialised on the configuration, readable by the runtime."""
import json

import pytest

import cascade_mlir as cm
from cascade_mlir import kernels as K

pytestmark = pytest.mark.skipif(cm.compiler is None,
                                reason="runtime-only build: no compiler module")


def manifest(path):
    with open(f"{path}/manifest.json") as f:
        return json.load(f)["kernels"]


@pytest.mark.parametrize("key,ops", [
    ("decode.f16-f16.d128.h32x8.p16.nhd.pool", {"decode", "decode_split"}),
    ("prefill-causal-acc.bf16-bf16.d64.h32x4.p1.hnd.pair", {"prefill", "prefill_split"}),
])
def test_group_bundle_has_unsplit_split_and_merge(tmp_path, key, ops):
    cfg, group = K.parse_key(key)
    path = K.build_bundle(key, str(tmp_path), cubin=False)
    ks = manifest(path)
    assert {k["op"] for k in ks} == ops | {"merge_states_indptr"}
    for k in ks:
        st = k["static"]
        if k["op"] in ops:
            assert st["head_dim"] == cfg.head_dim
            assert (st["num_qo_heads"], st["num_kv_heads"]) == (cfg.num_qo_heads,
                                                                 cfg.num_kv_heads)
            assert st["kv_layout"] == cfg.kv_layout and st["kv_form"] == cfg.kv_form
            assert st["q_dtype"] == cfg.q_dtype and st["causal"] == group.causal
            assert st["accumulate"] == group.accumulate
    names = {n for n, _ in cm.runtime.load_bundle(path)}
    assert names == {k["name"] for k in ks}


def test_options_reach_the_kernels(tmp_path):
    cfg = K.KernelConfig.make(head_dim=128, num_qo_heads=32, num_kv_heads=8, page_size=16,
                              sm_scale=1e-05, logits_soft_cap=30.0, window_left=40)
    key = K.attention_key(cfg, K.Group(decode=True))
    st = manifest(K.build_bundle(key, str(tmp_path), cubin=False))[0]["static"]
    assert abs(st["sm_scale"] - 1e-05) < 1e-12
    assert st["logits_soft_cap"] == 30.0 and st["window_left"] == 40


def test_merge_bundle(tmp_path):
    path = K.build_bundle("merge.bf16.d256", str(tmp_path), cubin=False)
    ks = manifest(path)
    assert sorted(k["op"] for k in ks) == ["merge_state", "merge_state_in_place",
                                           "merge_state_in_place", "merge_states"]
    assert {k["static"]["v_dtype"] for k in ks} == {"bf16"}
    assert {k["static"]["head_dim"] for k in ks} == {256}


def test_aot_cli_builds_and_lists(tmp_path, capsys):
    from cascade_mlir import aot
    assert aot.main(["--list", "minimal"]) == 0
    listed = capsys.readouterr().out.split()
    assert listed == K.kernel_set("minimal")
    assert aot.main(["--key", "merge.f16.d64", "--out", str(tmp_path)]) == 0
    assert (tmp_path / "sm_90" / "merge.f16.d64" / "manifest.json").is_file()
    with pytest.raises(ValueError, match="not a kernel bundle key"):
        aot.main(["--key", "nonsense", "--out", str(tmp_path)])
