#!/usr/bin/env python3
"""The kernel bundles FlashInfer 0.5.3's attention test files need, read
from their @pytest.mark.parametrize lists (ast; nothing is imported, so no
torch is needed here):

    python3 keys.py TESTS_DIR            # print the keys
    python3 keys.py TESTS_DIR --build OUT [--jobs N] [--chip sm_90,sm_90a]

TESTS_DIR holds test_batch_decode_kernels.py, test_batch_prefill_kernels.py
and test_shared_prefix_kernels.py. Each test function maps to the kernel
groups and KV forms its wrappers and references use (RULES below), fp8 KV
caches included; custom-mask tests compare the masked group with the
causal one; multi-item tests need none (they skip, naming the
limitation). With the prebuilt carry these bundles are built here and
carried (`tools/cascade-dev gpu prepare flashinfer`); on demand (the wheel,
`KERNELS=on-demand`) on_demand.py compiles them there, through the package.
"""
import argparse
import ast
import itertools
import os
import sys
from typing import Any, Dict, Iterator, List, Tuple

from cascade_mlir import kernels
from cascade_mlir.config import AttentionConfig
from cascade_mlir.kernels import Group

FILES = ("test_batch_decode_kernels.py", "test_batch_prefill_kernels.py",
         "test_shared_prefix_kernels.py")


def _literal(node: ast.AST) -> Any:
    """A parametrize value: literals, and torch.<dtype> as its name."""
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, (ast.List, ast.Tuple)):
        return [_literal(e) for e in node.elts]
    return ast.literal_eval(node)


def parametrized(path: str) -> Iterator[Tuple[str, Dict[str, List[Any]]]]:
    """(test name, {argument: values}) of every test function in a file."""
    with open(path) as f:
        tree = ast.parse(f.read())
    for fn in tree.body:
        if not isinstance(fn, ast.FunctionDef) or not fn.name.startswith("test_"):
            continue
        params: Dict[str, List[Any]] = {}
        for dec in fn.decorator_list:
            if isinstance(dec, ast.Call) and getattr(dec.func, "attr", "") == "parametrize":
                name = ast.literal_eval(dec.args[0])
                try:
                    params[name] = _literal(dec.args[1])
                except ValueError:
                    params[name] = []  # computed values: not a kernel parameter here
        yield fn.name, params


def _kv_dtype(p: Dict[str, Any]) -> str:
    """The KV dtype of a parameter combination: fp8 caches (e4m3 / e5m2)
    run since the fp8 issue landed; everything else is f16."""
    name = str(p.get("kv_dtype", ""))
    if "float8_e4m3" in name:
        return "f8e4m3"
    if "float8_e5m2" in name:
        return "f8e5m2"
    return "f16"


def _cfg(p: Dict[str, Any], hq: int, hkv: int, page: int, form: str,
         layout: str = "nhd") -> AttentionConfig:
    return AttentionConfig(hq, hkv, p["head_dim"], page, q_dtype="f16", kv_dtype=_kv_dtype(p),
                           kv_layout=layout, kv_form=form,
                           logits_soft_cap=float(p.get("logits_soft_cap", 0.0)),
                           pos_encoding=str(p.get("pos_encoding_mode", "NONE")).lower())


def keys_of(test: str, p: Dict[str, Any]) -> List[str]:
    """The bundle keys one parameter combination of a test runs."""
    if "multi_item" in test:
        return []
    decode, causal = Group(decode=True), bool(p.get("causal", False))
    prefill = Group(decode=False, causal=causal)
    out: List[Tuple[AttentionConfig, Group]] = []
    if "custom_mask" in test:  # the masked plan, then the causal one
        hq, hkv = p["num_qo_heads"], p["num_kv_heads"]
        page, form = (1, "ragged") if "ragged" in test else (p["page_size"], "pool")
        out += [(_cfg(p, hq, hkv, page, form), Group(decode=False, custom_mask=True)),
                (_cfg(p, hq, hkv, page, form), Group(decode=False, causal=True))]
        return [kernels.attention_key(c, g) for c, g in out]
    if test == "test_batch_attention_with_shared_prefix_paged_kv_cache":
        h, page = p["num_heads"], p["page_size"]
        last = Group(decode=True, accumulate=True) if p["stage"] == "decode" else \
            Group(decode=False, causal=causal, accumulate=True)
        out += [(_cfg(p, h, h, page, "pool"), Group(decode=False)),
                (_cfg(p, h, h, page, "pool"), last),
                (_cfg(p, h, h, page, "pair"), Group(decode=False))]
    elif "batch_decode" in test:
        hq, hkv = p["num_qo_heads"], p["num_kv_heads"]
        form = "pair" if "tuple" in test else "pool"
        out += [(_cfg(p, hq, hkv, p["page_size"], form), decode),
                (_cfg(p, hq, hkv, 1, "pair"), decode)]  # single_decode reference
    elif "batch_prefill" in test:
        hq, hkv = p["num_qo_heads"], p["num_kv_heads"]
        if "ragged" in test:
            out.append((_cfg(p, hq, hkv, 1, "ragged"), prefill))
        else:
            form = "pair" if "tuple" in test else "pool"
            out.append((_cfg(p, hq, hkv, p["page_size"], form), prefill))
        out.append((_cfg(p, hq, hkv, 1, "pair"), prefill))  # the reference
    return [kernels.attention_key(c, g) for c, g in out]


def all_keys(tests_dir: str) -> List[str]:
    keys: Dict[str, None] = {}
    for name in FILES:
        for test, params in parametrized(os.path.join(tests_dir, name)):
            names = list(params)
            for combo in itertools.product(*(params[n] or [None] for n in names)):
                for k in keys_of(test, dict(zip(names, combo))):
                    keys[k] = None
    merges = [kernels.merge_key("f16", d) for d in (128, 256)]
    return list(keys) + merges


def main(argv: List[str]) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("tests_dir")
    ap.add_argument("--build", metavar="OUT", help="build the bundles into OUT")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--chip", default="sm_90,sm_90a",
                    help="comma-separated chips to build for (default: sm_90 "
                    "and the Hopper kernels of sm_90a, as an H200 runs them)")
    args = ap.parse_args(argv)
    keys = all_keys(args.tests_dir)
    if not args.build:
        print("\n".join(keys))
        return 0

    def progress(i: int, n: int, result: Tuple[str, float]) -> None:
        print(f"[{i}/{n}] {result[0]} ({result[1]:.1f} s)", flush=True)

    chips = [c for c in args.chip.split(",") if c]
    done = []
    for chip in chips:
        done += kernels.build_keys(keys, args.build, chip, args.jobs, progress)
    total = len(keys) * len(chips)
    print(f"{len(done)} bundle(s) built, {total - len(done)} already present")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
