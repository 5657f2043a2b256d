"""Cascade IR for one attention configuration, built by the compiler.

The static parts of a configuration (`AttentionConfig`: heads, head_dim, page
size, dtypes, layout, options) become types and attributes; row counts, batch
sizes and page counts stay dynamic, so one compiled module serves every step
of a serving loop. The modules are built with the dialect's C++ builders
(`cascade_mlir.compiler`, python_bindings/src/IRBuilders.cpp), never by
formatting text, so every attribute value is exact (`sm_scale=1e-05` too).
They need a package built with the compiler.
"""

from typing import Any, List, Optional

from .config import AttentionConfig, dtype_code

__all__ = ["AttentionConfig", "mlir_dtype", "multi_level_attention", "decode", "prefill"]


def mlir_dtype(name: Any) -> str:
    """'float16'/'bfloat16' (torch/FlashInfer names) -> 'f16'/'bf16'."""
    return dtype_code(name)


def _compiler() -> Any:
    from . import compiler, compiler_import_error
    if compiler is None:
        raise RuntimeError("building cascade IR needs the compiler module, which this "
                           f"build does not have (runtime only): {compiler_import_error}")
    return compiler


def multi_level_attention(cfg: AttentionConfig, num_levels: int,
                          name: str = "cascade_attention",
                          shared_prefix_levels: Optional[List[int]] = None,
                          decode_levels: Optional[List[bool]] = None,
                          causal: bool = False,
                          ragged_levels: Optional[List[int]] = None) -> str:
    """A module with one function computing a `num_levels` cascade.

    Levels listed in `shared_prefix_levels` get a static `qo_indptr` of two
    entries (one group of all queries): the shared-prefix form the compiler
    recognises. Levels listed in `ragged_levels` take no `kv_indices`: their
    requests read the pages from `kv_indptr[i]` on, in order. One level is
    plain (non-cascade) paged attention. `causal` masks the last level.
    """
    if num_levels < 1:
        raise ValueError("num_levels must be >= 1")
    return str(_compiler().multi_level_ir(cfg.as_dict(), num_levels,
                                          list(shared_prefix_levels or []),
                                          list(decode_levels or []), bool(causal), name,
                                          list(ragged_levels or [])))


def decode(cfg: AttentionConfig, name: str = "batch_decode") -> str:
    """Batch decode (one query per request: no qo_indptr)."""
    return str(_compiler().attention_ir(cfg.as_dict(), decode=True, name=name))


def prefill(cfg: AttentionConfig, name: str = "batch_prefill", causal: bool = False) -> str:
    """Batch prefill/append (ragged queries: with qo_indptr)."""
    return str(_compiler().attention_ir(cfg.as_dict(), decode=False, causal=bool(causal),
                                        name=name))
