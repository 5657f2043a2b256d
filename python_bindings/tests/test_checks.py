"""Bad input raises ValueError / TypeError naming the argument, before
anything runs: run()'s tensor checks (the same code as on the GPU, run here
against host arrays), plan() arguments, and the merges' checks."""
import dataclasses

import numpy as np
import pytest

import cascade_mlir as cm
from cascade_mlir import cascade as cc

CONFIG = cm.config.AttentionConfig(32, 8, 128, 16)


def call(q, kv, out=None, lse=None, rows=7, max_page_id=9, device=-1, **over):
    cfg = dataclasses.replace(CONFIG, **over)
    cm.runtime._check_call(q, kv, out, lse, cfg.as_dict(), rows, max_page_id, device)


@pytest.fixture
def good():
    return (np.zeros((7, 32, 128), np.float16), np.zeros((10, 2, 16, 8, 128), np.float16))


def test_good_call_passes(good):
    q, kv = good
    call(q, kv, out=np.zeros_like(q), lse=np.zeros((7, 32), np.float32))
    call(q, (kv[:, 0].copy(), kv[:, 1].copy()))
    call(q, (kv[:, 0], kv[:, 1]))  # the halves of one pool: the pool
    call(q, np.zeros((10, 2, 8, 16, 128), np.float16), kv_layout="hnd")


@pytest.mark.parametrize("mutate,exc,match", [
    (lambda q, kv: (q.astype(np.float32), kv), TypeError, "q has dtype float32"),
    (lambda q, kv: (q[:, :16], kv), ValueError, r"q has shape \[7, 16, 128\]"),
    (lambda q, kv: (q[:6], kv), ValueError, "q has shape"),
    # q may be a strided view (rows and heads), but its head_dim must be
    # contiguous.
    (lambda q, kv: (q.transpose(2, 1, 0).copy().transpose(2, 1, 0), kv), ValueError,
     r"q has strides \[1, 7, 224\]: the kernels take a view whose head_dim is contiguous"),
    (lambda q, kv: (q, kv.astype(np.float32)), TypeError, "paged_kv_cache has dtype"),
    (lambda q, kv: (q, kv[:, :, :, :4]), ValueError, "paged_kv_cache has shape"),
    (lambda q, kv: (q, kv[:9]), ValueError, "plan reads page 9"),
    # A (k, v) pair may be strided views, but not along head_dim.
    (lambda q, kv: (q, tuple(kv[:, i].transpose(3, 1, 2, 0).copy().transpose(3, 1, 2, 0)
                             for i in range(2))), ValueError,
     r"paged_kv_cache\[0\] has strides .*head_dim is contiguous"),
    (lambda q, kv: (q, (kv[:, 0].copy(), kv[:5, 1].copy())), ValueError,
     "different numbers of pages"),
    (lambda q, kv: (q, (kv[:, 0].copy(),)), ValueError, "one 5-D tensor or a"),
    (lambda q, kv: (q.tolist(), kv), TypeError, "q must be a torch tensor or support DLPack"),
])
def test_bad_tensors_name_the_argument(good, mutate, exc, match):
    q, kv = mutate(*good)
    with pytest.raises(exc, match=match):
        call(q, kv)


def test_the_output_is_checked_against_the_output_dtype(good):
    q, kv = good
    call(q, kv, out=np.zeros((7, 32, 128), np.float32), o_dtype="float32")
    with pytest.raises(TypeError, match="out has dtype float16, expected float32"):
        call(q, kv, out=np.zeros_like(q), o_dtype="float32")


def test_the_configuration_dict_is_checked():
    d = CONFIG.as_dict()
    for bad, match in ((dict(d, head_size=4), "unknown key 'head_size'"),
                       (dict(d, kv_layout="nchw"), "kv_layout must be 'nhd' or 'hnd'"),
                       (dict(d, q_dtype="f64"), "q_dtype must be f16, bf16"),
                       (dict(d, page_size=0), "must be positive")):
        with pytest.raises(ValueError, match=match):
            cm.runtime._attention_config(bad)


def test_python_and_cpp_spell_the_same_configuration():
    # Every configuration of the kernel sets, through the C++ reader and
    # back, and its key as contract::AttentionConfig::key() spells it.
    from cascade_mlir import kernels as K
    for key in K.kernel_set("gpu-tests"):
        parsed = K.parse_key(key)
        if isinstance(parsed[0], str):
            continue
        cfg = parsed[0]
        assert cm.runtime._attention_config_key(cfg.as_dict()) == cfg.key()
        back = cm.runtime._attention_config(cfg.as_dict())
        assert cm.AttentionConfig(cfg.num_qo_heads, cfg.num_kv_heads, cfg.head_dim,
                                  cfg.page_size, **{k: v for k, v in back.items() if k not in
                                                    ("num_qo_heads", "num_kv_heads",
                                                     "head_dim", "page_size")}) == cfg
    odd = cm.AttentionConfig(16, 4, 64, 8, q_dtype="bf16", o_dtype="f32",
                             kv_scale="per_tensor", lse_base="e", sm_scale=0.25)
    assert odd.key() == cm.runtime._attention_config_key(odd.as_dict())
    assert cm.AttentionConfig.from_key(odd.key()) == odd


def test_outputs_are_checked(good):
    q, kv = good
    with pytest.raises(TypeError, match="out has dtype float32"):
        call(q, kv, out=np.zeros((7, 32, 128), np.float32))
    with pytest.raises(ValueError, match="lse has shape"):
        call(q, kv, lse=np.zeros((7, 8), np.float32))
    with pytest.raises(TypeError, match="lse has dtype float16"):
        call(q, kv, lse=np.zeros((7, 32), np.float16))


def test_host_tensors_for_a_gpu_wrapper_name_the_device(good):
    q, kv = good
    with pytest.raises(ValueError, match="q is on cpu; the wrapper runs on cuda:0"):
        call(q, kv, device=0)


def test_checked_merge_arguments():
    v = np.zeros((4, 2, 16), np.float16)
    with pytest.raises(ValueError, match="v_a is on cpu, expected cuda:0"):
        cc._Checked(v, "v_a").expect("cuda:0", cc._V_DTYPES, [4, 2, 16])
    with pytest.raises(TypeError, match="s_a has dtype float16, expected float32"):
        cc._Checked(v[:, :, 0], "s_a").expect("cpu", ("float32",), [4, 2])
    with pytest.raises(ValueError, match=r"v_b has shape \[4, 2, 16\], expected \[4, 3, \*\]"):
        cc._Checked(v, "v_b").expect("cpu", cc._V_DTYPES, [4, 3, None])


def test_plan_argument_errors():
    w = cm.MultiLevelCascadeAttentionWrapper(2)
    qo = [np.array([0, 2]), np.arange(3)]
    kp = [np.array([0, 1]), np.array([0, 1, 2])]
    ki = [np.array([0]), np.array([1, 2])]
    kl = [np.array([4]), np.array([1, 1])]
    with pytest.raises(ValueError, match="num_qo_heads .* multiple of num_kv_heads"):
        w.plan(qo, kp, ki, kl, 6, 4, 8, 4)
    with pytest.raises(TypeError, match=r"paged_kv_indices_arr\[1\] must hold integers"):
        w.plan(qo, kp, [ki[0], np.array([1.5, 2.0])], kl, 4, 4, 8, 4)
    with pytest.raises(ValueError, match=r"level 1: kv_last_page_len has 1 entries"):
        w.plan(qo, kp, ki, [kl[0], np.array([1])], 4, 4, 8, 4)
    with pytest.raises(TypeError, match="one array per level"):
        w.plan(qo, kp, ki, 5, 4, 4, 8, 4)
    with pytest.raises(ValueError, match="num_levels"):
        cm.MultiLevelCascadeAttentionWrapper(0)
    with pytest.raises(ValueError, match="use_cuda_graph needs a CUDA"):
        cm.MultiLevelCascadeAttentionWrapper(2, use_cuda_graph=True)


def test_flashinfer_arguments_not_supported_are_rejected():
    w = cm.BatchDecodeWithPagedKVCacheWrapper(None)
    with pytest.raises(ValueError, match="block_tables"):
        w.plan(np.array([0, 1]), np.array([0]), np.array([1]), 4, 4, 8, 4,
               block_tables=np.zeros((1, 1)))
    w.plan(np.array([0, 1]), np.array([0]), np.array([1]), 4, 4, 8, 4)
    q = np.zeros((1, 4, 8), np.float32)
    kv = np.zeros((1, 2, 4, 4, 8), np.float32)
    with pytest.raises(ValueError, match="q_len_per_req"):
        w.run(q, kv, q_len_per_req=2)
    with pytest.raises(ValueError, match="window_left=3 differs"):
        w.run(q, kv, window_left=3)
    with pytest.raises(TypeError, match="by keyword"):
        w.run(q, kv, None)


def test_run_before_plan_is_a_value_error_and_a_runtime_error():
    for w in (cm.MultiLevelCascadeAttentionWrapper(2), cm.BatchDecodeWithPagedKVCacheWrapper(None),
              cm.BatchPrefillWithPagedKVCacheWrapper(None)):
        with pytest.raises(ValueError, match="plan"):
            w.run(np.zeros((1, 4, 8), np.float32), np.zeros((1, 2, 4, 4, 8), np.float32))
        with pytest.raises(RuntimeError):
            w.run(np.zeros((1, 4, 8), np.float32), np.zeros((1, 2, 4, 4, 8), np.float32))
