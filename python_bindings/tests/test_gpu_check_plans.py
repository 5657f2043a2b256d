"""The float64 GPU check (test/Integration/gpu/check.py) plans through the
runtime (cascade_mlir._runtime): every case's plans are made here, on the CPU.

check.py runs with cupy replaced by numpy and a stand-in kernel bundle whose
launches record their parameters instead of running; the references are
skipped. Every split launch must get a runtime plan whose arrays agree with
its scalars, with the chunk the case asks for (plans.py: fixed_split_pages),
and every prefill launch the grid slack of a CUDA-graph plan.
"""
import importlib
import json
import os
import sys
import types

import numpy as np
import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
GPU_CHECK = os.path.join(ROOT, "test", "Integration", "gpu")


def numpy_cupy():
    """A module standing in for cupy: device arrays are numpy arrays."""
    cp = types.ModuleType("cupy")
    for name in ("asarray", "zeros", "full", "empty", "float16", "float32", "uint16",
                 "uint8", "int32"):
        setattr(cp, name, getattr(np, name))
    cp.asnumpy = np.asarray

    class Event:
        """Work on the stand-in device is done when it is queued (cupy's
        Event says so through its `done` property)."""

        def record(self, stream=None):
            pass

        @property
        def done(self):
            return True

    cp.cuda = types.SimpleNamespace(
        Event=Event, runtime=types.SimpleNamespace(deviceSynchronize=lambda: None))
    return cp


def bench_decode_configs():
    """The distinct (family, kv_tile, stages) of the decode benchmark's
    kernels in fp8_kernels.mlir: selection's and gen_fp8_kernels.py's
    FORCED_DECODE (a configuration listed twice is one kernel)."""
    gen = importlib.import_module("gen_fp8_kernels")
    out = [("mma_sync", 64, 4)]
    for config in gen.FORCED_DECODE.values():
        fields = dict(f.split(" = ") for f in config.split(", ") if " = " in f
                      and not f.startswith("threads"))
        out.append((config.split(",")[0], int(fields["kv_tile"]), int(fields["stages"])))
    return list(dict.fromkeys(out))


class RecordingBundle:
    """A bundle whose kernels exist for any static configuration (query tile
    64 for the tensor-core family) and whose launches are recorded; its
    manifest lists the fp8 decode benchmark's kernel configurations (what
    check.py --fp8 looks up there)."""

    def __init__(self, path):
        self.kernels = {}
        self.launches = []
        shape = dict(num_qo_heads=32, num_kv_heads=8, head_dim=128, page_size=16,
                     kv_layout="nhd", kv_form="pool", q_dtype="f16", accumulate=False,
                     pos_encoding="none", window_left=-1, logits_soft_cap=0.0)
        for op in ("decode", "decode_split"):
            for kv in ("f8e4m3", "f8e5m2"):
                for family, tile, stages in bench_decode_configs():
                    self.kernels[f"{op}-{kv}-{family}-kv{tile}-s{stages}"] = {
                        "op": op, "static": dict(shape, kv_dtype=kv, kernel_family=family,
                                                 tile_tokens=tile, stages=stages)}
        self.manifest = {"kernels": [dict(k, name=n) for n, k in self.kernels.items()]}

    def find(self, op, **static):
        name = f"{op}{sorted(static.items())}"
        st = dict(static)
        # A family tuple (TENSOR_CORE: wgmma on sm_90a bundles, else
        # mma_sync) finds the kernel of an sm_90 bundle: mma_sync.
        if isinstance(st.get("kernel_family"), tuple):
            st["kernel_family"] = st["kernel_family"][-1]
        if st.get("kernel_family") == "mma_sync" and op.startswith("prefill"):
            st["qo_tile_size"] = 64
        self.kernels[name] = {"op": op, "static": st}
        return name

    def launch(self, name, bufs):
        self.launches.append((self.kernels[name], dict(bufs)))


@pytest.fixture
def check_module(monkeypatch):
    """check.py imported against the stand-in cupy, nothing else replaced."""
    try:
        from cascade_mlir import _runtime  # noqa: F401
    except ImportError as e:
        pytest.skip(f"cascade_mlir._runtime not importable: {e}")
    monkeypatch.setitem(sys.modules, "cupy", numpy_cupy())
    monkeypatch.syspath_prepend(ROOT)
    monkeypatch.syspath_prepend(GPU_CHECK)
    for mod in ("check", "gpu_common", "plans", "benchmarks.common.bundle"):
        monkeypatch.delitem(sys.modules, mod, raising=False)
    mod = importlib.import_module("check")
    importlib.import_module("benchmarks.common.bundle")
    yield mod
    # What was imported against the stand-in cupy goes with it.
    for name in ("check", "gpu_common", "plans", "benchmarks.common.bundle"):
        sys.modules.pop(name, None)


@pytest.fixture
def check(check_module, monkeypatch):
    mod = check_module
    bundles = []

    def make_bundle(path):
        bundles.append(RecordingBundle(path))
        return bundles[-1]
    monkeypatch.setattr(mod, "Bundle", make_bundle)

    # No float64 references, no KV data: page pools of the right shapes that
    # take no memory (the plans depend on the lengths only).
    def no_reference(q, *args):
        return np.zeros(q.shape), np.full(q.shape[:2], -np.inf)

    def no_attention_ref(q, Kp, Vp, *args):
        # The output has v's head_dim.
        return np.zeros(q.shape[:2] + Vp.shape[-1:]), np.full(q.shape[:2], -np.inf)
    monkeypatch.setattr(mod, "attention_ref", no_attention_ref)
    monkeypatch.setattr(mod, "cascade_ref", no_reference)
    monkeypatch.setattr(mod, "dev", lambda a: a)

    def make_paged(rng, lens, ps, Hkv, D, dtype, identity=False, Dv=None):
        pages, last, indptr = mod.paged_layout(lens, ps)
        P = sum(pages) + 3
        perm = np.arange(sum(pages), dtype=np.int32) if identity else \
            rng.permutation(P)[:sum(pages)].astype(np.int32)
        pool = np.broadcast_to(np.float16(0), (P, ps, Hkv, D))
        vpool = np.broadcast_to(np.float16(0), (P, ps, Hkv, Dv or D))
        return pages, last, perm, indptr, pool, pool, vpool, vpool
    monkeypatch.setattr(mod, "make_paged", make_paged)

    def kv_bufs(layout, form, Kp_s, Vp_s):
        if form == "pool":
            P = Kp_s.shape[0]
            return dict(kv_cache=np.broadcast_to(np.float16(0), (P, 2) + Kp_s.shape[1:]))
        return dict(k_cache=Kp_s, v_cache=Vp_s)
    monkeypatch.setattr(mod, "kv_bufs", kv_bufs)
    mod.bundles = bundles
    return mod


def run_check(check, monkeypatch, *args):
    monkeypatch.setattr(sys, "argv", ["check.py", "unused-bundle", "--seed", "3", *args])
    check.results.clear()
    with pytest.raises(SystemExit):
        check.main()
    (bundle,) = check.bundles[-1:]
    return bundle.launches, list(check.results)


def chunks_per_request(kv_indptr, chunk):
    pages = np.diff(kv_indptr)
    return np.where(pages > chunk, -(-pages // chunk), 1)


def check_split_launch(check, static, bufs):
    """The plan of a split launch is whole and consistent."""
    padded = bufs["padded_batch_size"]
    for key in ("request_indices", "kv_tile_indices", "block_valid_mask"):
        assert len(bufs[key]) == padded, key
    valid = bufs["block_valid_mask"].astype(bool)
    items = int(valid.sum())
    assert np.all(valid[:items]) and not np.any(valid[items:]), "padding at the end"
    ps = static["page_size"]
    chunk_tokens = int(bufs["kv_chunk_size"][0])
    assert chunk_tokens > 0 and chunk_tokens % ps == 0
    kv_indptr = np.asarray(bufs["kv_indptr"])
    B = len(kv_indptr) - 1
    assert bufs["batch_size"] == B and len(bufs["o_indptr"]) == B + 1
    n = chunks_per_request(kv_indptr, chunk_tokens // ps)
    req = bufs["request_indices"][:items]
    kt = bufs["kv_tile_indices"][:items]
    decode = "qo_indptr" not in bufs
    if decode:
        assert np.array_equal(np.bincount(req, minlength=B), n)
        assert np.all(kt < n[req])
        assert np.array_equal(np.diff(bufs["o_indptr"]), n)
    else:
        qo = np.diff(bufs["qo_indptr"])
        assert np.array_equal(np.diff(bufs["o_indptr"]), qo * n)
        assert bufs["row_capacity"] == bufs["num_rows"] + check.ROW_SLACK
        assert len(bufs["merge_indptr"]) == bufs["row_capacity"] + 1
    rows = int(bufs["o_indptr"][-1])
    assert bufs["tmp_v"].shape[0] >= max(rows, 1) and bufs["tmp_s"].shape[0] >= max(rows, 1)
    return chunk_tokens // ps


@pytest.mark.parametrize("small", [True, False])
def test_every_case_plans_through_the_runtime(check, monkeypatch, small):
    launches, results = run_check(check, monkeypatch, *(["--small"] if small else []))
    assert len(results) == (12 if small else 66)
    split = [(k, b) for k, b in launches if k["op"].endswith("_split")]
    assert len(split) == (4 if small else 15)
    # Ragged K/V (kernels without a page table), one launch of each kind;
    # the reference reads the pages the kernels compute: the identity.
    ragged = [(k, b) for k, b in launches if k["static"].get("kv_form") == "ragged"]
    assert sorted(k["op"] for k, _ in ragged) == ["decode", "prefill", "prefill_split"]
    for _, b in ragged:
        assert np.array_equal(b["kv_indices"], np.arange(len(b["kv_indices"])))
    for k, b in split:
        check_split_launch(check, k["static"], b)
    prefill = [(k, b) for k, b in launches if k["op"] == "prefill"]
    assert prefill
    for k, b in prefill:
        assert b["row_capacity"] == b["num_rows"] + check.ROW_SLACK
    # The RoPE decode cascade (check_rope_cascade): a shared level of all
    # the rows on the tensor-core prefill, then the accumulating rows decode.
    rope = [(k, b) for k, b in launches if k["static"].get("num_qo_heads") == 12]
    assert [(k["op"], k["static"]["kernel_family"], k["static"]["accumulate"])
            for k, _ in rope] == ([] if small else [("prefill", "mma_sync", False),
                                                    ("decode", "rows", True)])
    if rope:
        assert list(rope[0][1]["qo_indptr"]) == [0, 100]
        assert all(k["static"]["pos_encoding"] == "rope_llama" for k, _ in rope)


@pytest.mark.parametrize("small", [True, False])
def test_every_fp8_case_plans_and_binds_its_scales(check, monkeypatch, small):
    """check.py --fp8: the rows and mma_sync kernels with e4m3 and e5m2
    caches, each launch with its kv_dtype and the scales bound by name."""
    launches, results = run_check(check, monkeypatch, "--fp8",
                                  *(["--small"] if small else []))
    configs = bench_decode_configs()
    assert len(results) == (8 if small else 48 + 4 * len(configs))
    attention = [(k, b) for k, b in launches if not k["op"].startswith("merge")]
    assert {k["static"]["kv_dtype"] for k, _ in attention} == {"f8e4m3", "f8e5m2"}
    assert {k["static"]["kernel_family"] for k, _ in attention} == {"rows", "mma_sync"}
    scaled = [b for _, b in attention if b["k_scale"] != 1.0]
    assert scaled and all(b["k_scale"] == 0.37 and b["v_scale"] == 2.5 for b in scaled)
    split = [(k, b) for k, b in attention if k["op"].endswith("_split")]
    assert len(split) == (4 if small else 12 + 2 * len(configs))
    for k, b in split:
        check_split_launch(check, k["static"], b)
    # The decode benchmark's shape at every kernel configuration of its
    # manifest (selection's and gen_fp8_kernels.py's FORCED_DECODE), plain
    # and split, with both fp8 dtypes.
    bench = {(k["op"], k["static"]["kv_dtype"], k["static"]["kernel_family"],
              k["static"]["tile_tokens"], k["static"]["stages"])
             for k, _ in attention if "stages" in k["static"]}
    if not small:
        assert bench == {(op, kv) + c for op in ("decode", "decode_split")
                         for kv in ("f8e4m3", "f8e5m2") for c in configs}


class RopeLevelBundle:
    """Kernels that compute a RoPE level on the CPU (HND pair, bf16 bits),
    each query at kv_len - qo_len + j and key t at t, with q and k rotated by
    `rotate` (test_rope_cascade's numpy code, independent of check.py's)."""

    def __init__(self, rotate):
        self.rotate = rotate
        self.kernels = {}

    def find(self, op, **static):
        name = f"{op}-{len(self.kernels)}"
        family = static["kernel_family"]
        static = dict(static, kernel_family=family[-1] if isinstance(family, tuple) else family)
        self.kernels[name] = {"op": op, "static": static}
        return name

    def launch(self, name, bufs):
        rc = importlib.import_module("test_rope_cascade")
        static = self.kernels[name]["static"]
        bits = lambda a: (np.asarray(a, np.uint32) << 16).view(np.float32).astype(np.float64)
        q, kc, vc = bits(bufs["q"]), bits(bufs["k_cache"]), bits(bufs["v_cache"])
        ps, last = static["page_size"], bufs["kv_last_page_len"]
        kvp, kvi = bufs["kv_indptr"], bufs["kv_indices"]
        qo = bufs.get("qo_indptr", np.arange(len(last) + 1))
        for i in range(len(last)):
            pages = kvi[kvp[i]:kvp[i + 1]]
            L = (len(pages) - 1) * ps + last[i] if len(pages) else 0
            k = kc[pages].transpose(0, 2, 1, 3).reshape(-1, *kc.shape[1::2])[:L]
            v = vc[pages].transpose(0, 2, 1, 3).reshape(-1, *vc.shape[1::2])[:L]
            rows = np.arange(qo[i], qo[i + 1])
            o, s = rc.attend(q[rows], k, v, L - len(rows) + np.arange(len(rows)),
                             np.arange(L), self.rotate)
            if static["accumulate"]:
                o, s = rc.merge([(bits(bufs["o"][rows]), bufs["lse"][rows].astype(np.float64)),
                                 (o, s)])
            bufs["o"][rows] = rc.to_bf16(o).view(np.uint32) >> 16
            bufs["lse"][rows] = s


@pytest.mark.parametrize("rotation, passes", [
    ("rule", True), ("float64", False), ("unrounded f32", False), ("positions + 92", False)])
def test_rope_cascade_check_tells_the_rule_from_its_neighbours(check_module, rotation,
                                                                passes):
    """check_rope_cascade on kernels that follow the rounding rule passes;
    on kernels a little off it (exact or unrounded rotation, which the
    float64 bound alone accepts; positions shifted to be non-negative) it
    fails: the rule-model bound is what catches them."""
    rc = importlib.import_module("test_rope_cascade")
    rotate = {"rule": rc.rope_rule, "float64": rc.rope_exact, "unrounded f32": rc.rope_f32,
              "positions + 92": lambda x, pos: rc.rope_rule(x, np.asarray(pos) + 92)}[rotation]
    check_module.results.clear()
    check_module.check_rope_cascade(RopeLevelBundle(rotate), np.random.default_rng(3))
    ((name, dtype, eo, es, nan, rule_ok, ok, note),) = check_module.results
    assert not nan and eo < 1e-2 and es < 1e-2  # the float64 bounds hold for all four
    assert ok == passes and rule_ok == passes, note


@pytest.mark.parametrize("small", [True, False])
def test_every_sink_case_plans_and_binds_its_sinks(check, monkeypatch, small):
    """check.py --sinks: every launch binds one f32 sink per query head;
    unsplit kernels are the sink kernels, a split level's attention kernel
    is the plain one and its merge adds the sinks; the split plans are
    whole."""
    launches, results = run_check(check, monkeypatch, "--sinks",
                                  *(["--small"] if small else []))
    assert len(results) == 13
    attention = [(k, b) for k, b in launches if not k["op"].startswith("merge")]
    assert {k["static"]["kernel_family"] for k, _ in attention} == \
        {"rows", "mma_sync", "wgmma"}
    for k, b in attention:
        assert k["static"].get("sinks", False) == (not k["op"].endswith("_split"))
        assert b["sinks"].dtype == np.float32 and b["sinks"].shape == b["lse"].shape[1:]
    merges = [k for k, _ in launches if k["op"].startswith("merge")]
    assert merges and all(k["static"]["sinks"] for k in merges)
    split = [(k, b) for k, b in attention if k["op"].endswith("_split")]
    assert len(split) == 4 and len(merges) == 4
    for k, b in split:
        check_split_launch(check, dict(k["static"], page_size=16), b)


@pytest.mark.parametrize("small", [True, False])
def test_shape_cases_check_every_prefill_kernel_by_name(check, monkeypatch, small):
    """check.py --shapes: each prefill kernel of the bundle by its own name
    (a shape's tuning variants share its static configuration), causal as
    its manifest says; fp8 queries bind the cache's scales and write their
    manifest's output dtype; --kernels keeps the matching names only."""
    shape = dict(num_qo_heads=32, num_kv_heads=8, head_dim=128, page_size=16,
                 kv_layout="nhd", kv_form="pool", kernel_family="wgmma", accumulate=False)
    kernels = {
        "cascade_prefill_wgmma_bf16_bf16_d128_g4_h8_p16_nhd_pool_w4x1_q192_kv64_s4":
            dict(shape, q_dtype="bf16", causal=False),
        "cascade_prefill_causal_wgmma_f8e4m3_f8e4m3_d128_of16_g4_h8_p16_nhd_pool"
        "_w3x1_q128_kv128_s4_ex2e2":
            dict(shape, q_dtype="f8e4m3", kv_dtype="f8e4m3", o_dtype="f16", causal=True),
    }
    make = check.Bundle

    def with_prefill(path):
        b = make(path)
        for name, st in kernels.items():
            b.kernels[name] = {"op": "prefill", "static": dict(st, qo_tile_size=128)}
        return b
    monkeypatch.setattr(check, "Bundle", with_prefill)
    launches, results = run_check(check, monkeypatch, "--shapes",
                                  *(["--small"] if small else []))
    per_kernel = 1 if small else 2  # and the large logits
    assert len(results) == len(kernels) * per_kernel
    by_name = {}
    for k, b in launches:
        by_name.setdefault(next(n for n, kk in check.bundles[-1].kernels.items() if kk is k),
                           []).append(b)
    assert sorted(by_name) == sorted(kernels)
    for name, binds in by_name.items():
        fp8 = kernels[name]["q_dtype"] == "f8e4m3"
        for b in binds:
            assert (b["k_scale"], b["v_scale"]) == ((0.37, 2.5) if fp8 else (1.0, 1.0))
    launches, results = run_check(check, monkeypatch, "--shapes", "--small",
                                  "--kernels", "_ex2e[0-9]$")
    assert len(results) == 1 and len(launches) == 1


@pytest.mark.parametrize("small", [True, False])
def test_head_dim_vo_cases_check_every_narrow_v_kernel_by_name(check, monkeypatch, small):
    """check.py --head-dim-vo: each prefill kernel whose v is narrower than
    q and k, by its own name, with its manifest's form and mask: V pages,
    the output and a split level's partial states are v's head_dim wide, a
    split kernel runs on a whole plan and its merge is v's head_dim's;
    kernels of one head_dim are left to the other sets."""
    base = dict(kernel_family="wgmma", accumulate=False, kv_layout="nhd", q_dtype="bf16",
                num_qo_heads=16, num_kv_heads=16, head_dim=192, head_dim_vo=128,
                qo_tile_size=192, sm_scale=0.125)
    kernels = {
        "cascade_prefill_causal_wgmma_bf16_bf16_d192v128_g1_h16_p1_nhd_pair_ragged"
        "_w4x1_q192_kv64_s3": ("prefill", dict(base, kv_form="ragged", page_size=1,
                                               causal=True)),
        "cascade_prefill_split_causal_wgmma_bf16_bf16_d192v128_g1_h16_p16_nhd_pair"
        "_w3x1_q128_kv128_s2_kvsplit": ("prefill_split", dict(base, kv_form="pair",
                                                             page_size=16, causal=True,
                                                             qo_tile_size=128)),
        "cascade_prefill_wgmma_bf16_bf16_d128_g4_h8_p16_nhd_pool_w4x1_q192_kv64_s4":
            ("prefill", dict(base, head_dim=128, num_qo_heads=32, num_kv_heads=8,
                             kv_form="pool", page_size=16, causal=False)),
    }
    # A kernel of one head_dim (no head_dim_vo in its manifest).
    del kernels["cascade_prefill_wgmma_bf16_bf16_d128_g4_h8_p16_nhd_pool_w4x1_q192_kv64_s4"][
        1]["head_dim_vo"]
    make = check.Bundle

    def with_prefill(path):
        b = make(path)
        for name, (op, st) in kernels.items():
            b.kernels[name] = {"op": op, "static": st}
        return b
    monkeypatch.setattr(check, "Bundle", with_prefill)
    launches, results = run_check(check, monkeypatch, "--head-dim-vo",
                                  *(["--small"] if small else []))
    assert len(results) == 2 * (1 if small else 2)  # and the large logits
    names = {id(kk): n for n, kk in check.bundles[-1].kernels.items()}
    ran = {names[id(k)] for k, _ in launches if k["op"].startswith("prefill")}
    assert ran == {n for n, (_, st) in kernels.items() if "head_dim_vo" in st}
    split = [(k, b) for k, b in launches if k["op"] == "prefill_split"]
    merges = [(k, b) for k, b in launches if k["op"] == "merge_states_indptr"]
    assert split and len(merges) == len(split)
    for k, b in merges:
        assert k["static"]["head_dim"] == 128
    for k, b in launches:
        if k["op"].startswith("prefill"):
            assert b["o"].shape[-1] == 128 and b["v_cache"].shape[-1] == 128
            assert b["k_cache"].shape[-1] == 192 and b["q"].shape[-1] == 192
    for k, b in split:
        assert b["tmp_v"].shape[-1] == 128
        check_split_launch(check, k["static"], b)


def test_bundle_launch_sizes_a_decode_merge_grid_by_tmp_s(check_module, tmp_path):
    """A decode's split merge adds a block per partial row tmp_s holds room
    for (the manifest's grid `add`): the launcher reads that count off tmp_s
    when the caller does not pass it, as the compiler's launch does, and a
    given one wins; a grid without `add` is as before."""
    bundle_mod = importlib.import_module("benchmarks.common.bundle")
    merge = {"name": "merge", "op": "merge_states_indptr", "ptx": "kernels.ptx",
             "block": [128, 1, 1], "static": {"num_qo_heads": 32},
             "grid": [{"param": "num_rows", "mul": 32, "div": 8,
                       "add": "partial_rows_capacity"}, 1, 1],
             "params": [{"name": "tmp_s", "kind": "memref", "dtype": "f32"},
                        {"name": "num_rows", "kind": "i64"}]}
    prefill = dict(merge, name="byrow", grid=[{"param": "num_rows", "div": 8}, 1, 1])
    (tmp_path / "manifest.json").write_text(json.dumps(
        {"format": "cascade-kernel-bundle", "version": 1, "kernels": [merge, prefill]}))
    b = bundle_mod.Bundle(str(tmp_path))
    grids = []
    b.function = lambda name: (lambda grid, block, args, **kw: grids.append(grid))
    # A device array as the launcher sees one: its size and pointer (a flat
    # one, as the benchmarks pass torch tensors through cpa()).
    tmp_s = types.SimpleNamespace(size=37 * 32, data=types.SimpleNamespace(ptr=4096))
    b.launch("merge", dict(tmp_s=tmp_s, num_rows=3))
    b.launch("merge", dict(tmp_s=tmp_s, num_rows=3, partial_rows_capacity=5))
    b.launch("byrow", dict(tmp_s=tmp_s, num_rows=17))
    assert grids == [(12 + 37, 1, 1), (12 + 5, 1, 1), (3, 1, 1)]


def test_split_plan_keeps_the_chunk(check):
    plans = importlib.import_module("plans")
    rng = np.random.default_rng(5)
    for decode, ps, chunk, pad in ((True, 16, 2, 2), (True, 1, 37, 0), (False, 16, 3, 2),
                                   (False, 1, 97, 0), (False, 16, 8, 3)):
        qo, lens = plans.request_lengths(rng, 12, 60, 700, decode)
        pages, last, kv_indptr = plans.paged_layout(lens, ps)
        qo_indptr = np.concatenate([[0], np.cumsum(qo)]).astype(np.int32)
        p = plans.split_plan(decode=decode, qo_indptr=qo_indptr, kv_indptr=kv_indptr,
                             last=last, ps=ps, Hqo=32, Hkv=8, D=128, chunk_pages=chunk,
                             qo_tile=64, pad=pad, max_num_rows=int(qo_indptr[-1]) + 5)
        assert p["split_kv"]
        assert p["kv_chunk_size_pages"] == chunk and p["kv_chunk_size"] == chunk * ps
        n = chunks_per_request(kv_indptr, chunk)
        valid = p["request_indices"][:p["num_work_items"]]
        assert np.array_equal(np.bincount(valid, minlength=len(last)),
                              n * (1 if decode else np.ceil(np.diff(qo_indptr) * 4 / 64)))
        assert p["padded_batch_size"] >= p["num_work_items"] + pad
        assert not p["block_valid_mask"][p["num_work_items"]:].any()


def test_row_capacity_is_the_graph_plans(check):
    plans = importlib.import_module("plans")
    qo_indptr = np.array([0, 3, 3, 10], np.int32)
    kv_indptr = np.array([0, 2, 2, 5], np.int32)
    last = np.array([4, 1, 16], np.int32)
    assert plans.row_capacity(qo_indptr, kv_indptr, last, ps=16, Hqo=8, Hkv=2,
                              D=64) == 10 + plans.ROW_SLACK


# ---------------------------------------------------------------------------
# The benchmarks' one timer (benchmarks/common/timing.py), with fake events
# ---------------------------------------------------------------------------

class FakeClock:
    """Device time in ms; each call of `step` takes the next duration."""

    def __init__(self, durations):
        self.now = 0.0
        self.durations = list(durations)

    def step(self):
        self.now += self.durations.pop(0)


def fake_event_modules(clock):
    class TorchEvent:
        def __init__(self, enable_timing=False):
            assert enable_timing
            self.t = None

        def record(self, stream=None):
            self.t = clock.now

        def synchronize(self):
            pass

        def query(self):
            return clock.now >= self.t

        def elapsed_time(self, end):
            return end.t - self.t

    torch = types.ModuleType("torch")
    torch.cuda = types.SimpleNamespace(Event=TorchEvent, synchronize=lambda: None)

    class CupyEvent:
        def record(self, stream=None):
            self.t = clock.now

        def synchronize(self):
            pass

        @property
        def done(self):
            return clock.now >= self.t

    cupy = types.ModuleType("cupy")
    cupy.cuda = types.SimpleNamespace(
        Event=CupyEvent, get_elapsed_time=lambda a, z: z.t - a.t,
        runtime=types.SimpleNamespace(deviceSynchronize=lambda: None))
    return torch, cupy


class CupyStream:
    def synchronize(self):
        pass


CupyStream.__module__ = "cupy.cuda.stream"


@pytest.mark.parametrize("backend", ["torch", "cupy"])
def test_benchmark_timer_is_a_median_in_us(monkeypatch, backend):
    monkeypatch.syspath_prepend(ROOT)
    timing = importlib.import_module("benchmarks.common.timing")
    # 2 warm-up calls (not timed), then 3 reps of 2 calls: 1+3, 2+2, 10+10 ms.
    clock = FakeClock([100.0, 100.0, 1.0, 3.0, 2.0, 2.0, 10.0, 10.0])
    torch, cupy = fake_event_modules(clock)
    monkeypatch.setitem(sys.modules, "torch", torch)
    monkeypatch.setitem(sys.modules, "cupy", cupy)
    stream = CupyStream() if backend == "cupy" else None
    t = timing.cuda_time_us(clock.step, reps=3, warmup=2, inner=2, stream=stream)
    assert t == pytest.approx(2000.0)  # median of 2, 2 and 10 ms per call, in us
    assert not clock.durations
    with pytest.raises(ValueError):
        timing.cuda_time_us(clock.step, reps=0)


@pytest.mark.parametrize("backend", ["torch", "cupy"])
def test_finish_or_exit_polls_the_librarys_own_event(monkeypatch, backend):
    """torch's events answer query(), cupy's the `done` property: the hang
    guard returns once the recorded work is done, through either."""
    monkeypatch.syspath_prepend(ROOT)
    timing = importlib.import_module("benchmarks.common.timing")
    clock = FakeClock([])
    torch, cupy = fake_event_modules(clock)
    monkeypatch.setitem(sys.modules, "torch", torch)
    monkeypatch.setitem(sys.modules, "cupy", cupy)
    timing.finish_or_exit("the test's work", seconds=5, backend=backend)


def test_clock_sampler_reports_medians_or_nothing(monkeypatch, tmp_path):
    """ClockSampler: the medians of NVML's SM clock (MHz) and power (mW,
    reported in W) sampled while the block ran; without pynvml those of
    nvidia-smi's samples; without either, nothing."""
    monkeypatch.syspath_prepend(ROOT)
    timing = importlib.import_module("benchmarks.common.timing")
    monkeypatch.setitem(sys.modules, "pynvml", None)  # import fails
    monkeypatch.setenv("PATH", "")  # and no nvidia-smi
    with timing.ClockSampler() as c:
        pass
    assert c.summary() == "" and c.clocks == []
    # nvidia-smi's CSV lines instead (a stand-in on PATH).
    bindir = tmp_path / "bin"
    bindir.mkdir()
    smi = bindir / "nvidia-smi"
    smi.write_text("#!/bin/sh\necho 1980, 650.5\necho 1755, 700.0\necho 1755, 690.0\n"
                   "echo '[N/A], [N/A]'\nexec sleep 5\n")
    smi.chmod(0o755)
    monkeypatch.setenv("PATH", str(bindir) + ":/usr/bin:/bin")
    import time as _time
    with timing.ClockSampler() as c:
        _time.sleep(0.3)
    assert c.clocks == [1980, 1755, 1755] and c.watts == [650.5, 700.0, 690.0]
    assert c.summary() == "@ 1755 MHz 690 W"
    readings = iter([(1980, 650000), (1755, 700000), (1755, 690000)] + [(1755, 690000)] * 1000)
    current = {}
    nvml = types.ModuleType("pynvml")
    nvml.NVML_CLOCK_SM = 1
    nvml.nvmlInit = lambda: None
    nvml.nvmlDeviceGetHandleByIndex = lambda i: ("gpu", i)

    def clock(handle, kind):
        assert handle == ("gpu", 0) and kind == nvml.NVML_CLOCK_SM
        mhz, current["mw"] = next(readings)
        return mhz
    nvml.nvmlDeviceGetClockInfo = clock
    nvml.nvmlDeviceGetPowerUsage = lambda handle: current["mw"]
    monkeypatch.setitem(sys.modules, "pynvml", nvml)
    with timing.ClockSampler(period_s=0.001) as c:
        while len(c.clocks) < 3:
            _time.sleep(0.001)
    assert c.clocks[:3] == [1980, 1755, 1755] and c.watts[:3] == [650.0, 700.0, 690.0]
    assert c.summary() == "@ 1755 MHz 690 W"
