"""Cascade IR text for one attention configuration.

The static parts of a configuration (heads, head_dim, page size, dtypes,
layout, options) become types and attributes; row counts, batch sizes and page
counts stay dynamic, so one compiled module serves every step of a serving
loop. The functions return the text of a `func.func` in a module, ready for
`cascade_mlir.compiler.verify` or a lowering pipeline.
"""

from dataclasses import dataclass, field
from typing import List, Optional

_DTYPES = {"float16": "f16", "bfloat16": "bf16", "f16": "f16", "bf16": "bf16"}
_POS = {"NONE": "none", "ROPE_LLAMA": "rope_llama", "ALIBI": "alibi"}


def mlir_dtype(name: str) -> str:
    """'float16'/'bfloat16' (torch/FlashInfer names) -> 'f16'/'bf16'."""
    try:
        return _DTYPES[str(name).replace("torch.", "")]
    except KeyError:
        raise ValueError(f"unsupported dtype {name!r}: use float16 or bfloat16")


@dataclass
class AttentionConfig:
    """The static configuration of one attention call."""

    num_qo_heads: int
    num_kv_heads: int
    head_dim: int
    page_size: int
    q_dtype: str = "float16"
    kv_dtype: Optional[str] = None
    kv_layout: str = "NHD"
    causal: bool = False
    pos_encoding_mode: str = "NONE"
    sm_scale: Optional[float] = None
    window_left: int = -1
    logits_soft_cap: Optional[float] = None
    rope_scale: Optional[float] = None
    rope_theta: Optional[float] = None
    extra: dict = field(default_factory=dict)

    def attributes(self) -> str:
        if self.kv_layout not in ("NHD", "HND"):
            raise ValueError(f"kv_layout must be 'NHD' or 'HND', got {self.kv_layout!r}")
        if self.pos_encoding_mode not in _POS:
            raise ValueError(f"pos_encoding_mode must be one of {sorted(_POS)}")
        attrs = [f"page_size = {int(self.page_size)} : i64"]
        if self.kv_layout == "HND":
            attrs.append("kv_layout = #cascade.kv_layout<hnd>")
        if self.causal:
            attrs.append("causal")
        if self.sm_scale is not None:
            attrs.append(f"sm_scale = {float(self.sm_scale)!r} : f32")
        if self.logits_soft_cap:
            attrs.append(f"logits_soft_cap = {float(self.logits_soft_cap)!r} : f32")
        if self.window_left != -1:
            attrs.append(f"window_left = {int(self.window_left)} : i64")
        if self.pos_encoding_mode != "NONE":
            attrs.append(f"pos_encoding = #cascade.pos_encoding<{_POS[self.pos_encoding_mode]}>")
        if self.rope_scale is not None:
            attrs.append(f"rope_scale = {float(self.rope_scale)!r} : f32")
        if self.rope_theta is not None:
            attrs.append(f"rope_theta = {float(self.rope_theta)!r} : f32")
        return "{" + ", ".join(attrs) + "}"

    def types(self):
        q = mlir_dtype(self.q_dtype)
        kv = mlir_dtype(self.kv_dtype or self.q_dtype)
        h, hkv, d, p = self.num_qo_heads, self.num_kv_heads, self.head_dim, self.page_size
        pool = f"tensor<?x2x{p}x{hkv}x{d}x{kv}>" if self.kv_layout == "NHD" \
            else f"tensor<?x2x{hkv}x{p}x{d}x{kv}>"
        return f"tensor<?x{h}x{d}x{q}>", pool, f"tensor<?x{h}xf32>"


def multi_level_attention(cfg: AttentionConfig, num_levels: int,
                          name: str = "cascade_attention",
                          shared_prefix_levels: Optional[List[int]] = None) -> str:
    """A module with one function computing a `num_levels` cascade.

    Levels listed in `shared_prefix_levels` get a static `qo_indptr` of two
    entries (one group of all queries): the shared-prefix form the compiler
    recognises. One level is plain (non-cascade) paged attention.
    """
    if num_levels < 1:
        raise ValueError("num_levels must be >= 1")
    shared = set(shared_prefix_levels or [])
    q_t, pool_t, lse_t = cfg.types()
    args = [f"%q: {q_t}", f"%kv: {pool_t}"]
    groups = {"qo": [], "kp": [], "ki": [], "kl": []}
    types = {"qo": [], "kp": [], "ki": [], "kl": []}
    for lvl in range(num_levels):
        two = lvl in shared
        for key, t in (("qo", "tensor<2xi32>" if two else "tensor<?xi32>"),
                       ("kp", "tensor<2xi32>" if two else "tensor<?xi32>"),
                       ("ki", "tensor<?xi32>"),
                       ("kl", "tensor<1xi32>" if two else "tensor<?xi32>")):
            groups[key].append(f"%{key}{lvl}")
            types[key].append(t)
            args.append(f"%{key}{lvl}: {t}")
    args += [f"%o: {q_t}", f"%lse: {lse_t}"]

    def group(key):
        return f"{', '.join(groups[key])} : {', '.join(types[key])}"

    if num_levels == 1:
        op = (f"cascade.paged_attention q(%q : {q_t}) kv(%kv : {pool_t})\n"
              f"      qo_indptr({group('qo')}) kv_indptr({group('kp')})\n"
              f"      kv_indices({group('ki')}) kv_last_page_len({group('kl')})")
    else:
        op = (f"cascade.multi_level_attention q(%q : {q_t}) kv(%kv : {pool_t})\n"
              f"      qo_indptr({group('qo')}) kv_indptr({group('kp')})\n"
              f"      kv_indices({group('ki')}) kv_last_page_len({group('kl')})")
    return (
        f"func.func @{name}({', '.join(args)})\n"
        f"    -> ({q_t}, {lse_t}) {{\n"
        f"  %r:2 = {op}\n"
        f"      outs(%o, %lse : {q_t}, {lse_t}) {cfg.attributes()}\n"
        f"      -> {q_t}, {lse_t}\n"
        f"  return %r#0, %r#1 : {q_t}, {lse_t}\n"
        f"}}\n")


def decode(cfg: AttentionConfig, name: str = "batch_decode") -> str:
    """Batch decode (one query per request: no qo_indptr)."""
    q_t, pool_t, lse_t = cfg.types()
    return (
        f"func.func @{name}(%q: {q_t}, %kv: {pool_t}, %kp: tensor<?xi32>,\n"
        f"    %ki: tensor<?xi32>, %kl: tensor<?xi32>, %o: {q_t}, %lse: {lse_t})\n"
        f"    -> ({q_t}, {lse_t}) {{\n"
        f"  %r:2 = cascade.paged_attention q(%q : {q_t}) kv(%kv : {pool_t})\n"
        f"      kv_indptr(%kp : tensor<?xi32>) kv_indices(%ki : tensor<?xi32>)\n"
        f"      kv_last_page_len(%kl : tensor<?xi32>)\n"
        f"      outs(%o, %lse : {q_t}, {lse_t}) {cfg.attributes()}\n"
        f"      -> {q_t}, {lse_t}\n"
        f"  return %r#0, %r#1 : {q_t}, {lse_t}\n"
        f"}}\n")
