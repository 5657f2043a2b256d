"""Cascade IR for one attention configuration, built by the compiler.

The static parts of a configuration (heads, head_dim, page size, dtypes,
layout, options) become types and attributes; row counts, batch sizes and page
counts stay dynamic, so one compiled module serves every step of a serving
loop. The modules are built with the dialect's C++ builders
(`cascade_mlir.compiler`, python_bindings/src/IRBuilders.cpp), never by
formatting text, so every attribute value is exact (`sm_scale=1e-05` too).
They need a package built with the compiler.
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


def _compiler():
    from . import compiler, compiler_import_error
    if compiler is None:
        raise RuntimeError("building cascade IR needs the compiler module, which this "
                           f"build does not have (runtime only): {compiler_import_error}")
    return compiler


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

    def as_dict(self) -> dict:
        """The builders' configuration (cascade_mlir.compiler)."""
        if self.kv_layout not in ("NHD", "HND"):
            raise ValueError(f"kv_layout must be 'NHD' or 'HND', got {self.kv_layout!r}")
        if self.pos_encoding_mode not in _POS:
            raise ValueError(f"pos_encoding_mode must be one of {sorted(_POS)}")
        return {
            "q_dtype": mlir_dtype(self.q_dtype),
            "kv_dtype": mlir_dtype(self.kv_dtype or self.q_dtype),
            "head_dim": int(self.head_dim), "num_qo_heads": int(self.num_qo_heads),
            "num_kv_heads": int(self.num_kv_heads), "page_size": int(self.page_size),
            "kv_layout": self.kv_layout.lower(), "sm_scale": self.sm_scale,
            "logits_soft_cap": self.logits_soft_cap or 0.0,
            "window_left": int(self.window_left),
            "pos_encoding": _POS[self.pos_encoding_mode],
            "rope_scale": self.rope_scale, "rope_theta": self.rope_theta,
        }

    def types(self):
        """(q, paged KV pool, lse) tensor types, as printed in the IR."""
        q = mlir_dtype(self.q_dtype)
        kv = mlir_dtype(self.kv_dtype or self.q_dtype)
        h, hkv, d, p = self.num_qo_heads, self.num_kv_heads, self.head_dim, self.page_size
        pool = f"tensor<?x2x{p}x{hkv}x{d}x{kv}>" if self.kv_layout == "NHD" \
            else f"tensor<?x2x{hkv}x{p}x{d}x{kv}>"
        return f"tensor<?x{h}x{d}x{q}>", pool, f"tensor<?x{h}xf32>"


def multi_level_attention(cfg: AttentionConfig, num_levels: int,
                          name: str = "cascade_attention",
                          shared_prefix_levels: Optional[List[int]] = None,
                          decode_levels: Optional[List[bool]] = None) -> str:
    """A module with one function computing a `num_levels` cascade.

    Levels listed in `shared_prefix_levels` get a static `qo_indptr` of two
    entries (one group of all queries): the shared-prefix form the compiler
    recognises. One level is plain (non-cascade) paged attention.
    """
    if num_levels < 1:
        raise ValueError("num_levels must be >= 1")
    return _compiler().multi_level_ir(cfg.as_dict(), num_levels,
                                      list(shared_prefix_levels or []),
                                      list(decode_levels or []), bool(cfg.causal), name)


def decode(cfg: AttentionConfig, name: str = "batch_decode") -> str:
    """Batch decode (one query per request: no qo_indptr)."""
    return _compiler().attention_ir(cfg.as_dict(), decode=True, name=name)


def prefill(cfg: AttentionConfig, name: str = "batch_prefill") -> str:
    """Batch prefill/append (ragged queries: with qo_indptr)."""
    return _compiler().attention_ir(cfg.as_dict(), decode=False, causal=bool(cfg.causal),
                                    name=name)
