"""The static attention configuration: one frozen dataclass.

Everything an attention kernel is specialised on besides the kind of level
(decode or prefill, causal, accumulating; `kernels.Group`): the dtypes of q,
KV and the output (separate), the KV scaling, head counts, head_dim (and the
head_dim of v and the output where it differs, `head_dim_vo`), page size,
KV layout and form, and the score options. It is the Python mirror of
the C++ `cascade::contract::AttentionConfig` (include/cascade/Contract):
`as_dict()` is what crosses into C++ (the compiler's IR builders, the GPU
program's signature), `key()` spells the configuration's part of a kernel
bundle key, and `ir()` builds the cascade IR of one call.

Values are normalised on construction, so that equal kernels get equal
configurations (and keys): dtypes as the contract names them ('float16',
torch.float16 -> 'f16'), layouts lower-case, floats rounded to float32 (what
the kernels see), the default sm_scale as None, RoPE parameters reset
without RoPE.
"""

import math
import struct
import sys
from dataclasses import dataclass, replace

if sys.version_info >= (3, 10):
    from dataclasses import KW_ONLY
from typing import Any, Dict, Optional, Tuple

__all__ = ["AttentionConfig", "dtype_code", "DTYPES", "FP8_DTYPES", "KV_LAYOUTS", "KV_FORMS",
           "POS_ENCODINGS", "KV_SCALES", "SCORE_OPTIONS", "ScoreArgs", "kv_scales",
           "run_scale"]

#: Element type names of the bundle contract (cascade/Contract/DType.h)
#: that q, KV and outputs may have today, and their numpy/torch spellings.
DTYPES = ("f16", "bf16", "f32", "f8e4m3", "f8e5m2")
_DTYPE_NAMES: Dict[str, str] = {
    "float16": "f16", "half": "f16", "f16": "f16", "torch.float16": "f16",
    "bfloat16": "bf16", "bf16": "bf16", "torch.bfloat16": "bf16",
    "float32": "f32", "f32": "f32", "torch.float32": "f32", "float": "f32",
    "float8_e4m3fn": "f8e4m3", "f8e4m3": "f8e4m3", "torch.float8_e4m3fn": "f8e4m3",
    "float8_e5m2": "f8e5m2", "f8e5m2": "f8e5m2", "torch.float8_e5m2": "f8e5m2",
}
#: The fp8 dtypes: of a KV cache, and of queries over a cache of their type
#: (whose outputs are f16 or bf16; outputs are never fp8).
FP8_DTYPES = ("f8e4m3", "f8e5m2")
KV_LAYOUTS = ("nhd", "hnd")
#: A page pool, a (k, v) pair of pools, or ragged K/V (a pair without a page
#: table: request i's pages are kv_indptr[i] onwards).
KV_FORMS = ("pool", "pair", "ragged")
POS_ENCODINGS = ("none", "rope_llama", "alibi")
#: How KV is scaled: not at all, or one scale per tensor. fp8 KV kernels
#: always take run()'s k_scale / v_scale (1 when not given), whatever this
#: field says; it stays in the key for a per-head variant.
KV_SCALES = ("none", "per_tensor")
LSE_BASES = ("2", "e")
#: The score options as FlashInfer's entry points name them, with their
#: defaults there: one unit that the wrappers take whole (`ScoreArgs`, see
#: _signatures.py) and hand to `AttentionConfig.make`.
SCORE_OPTIONS: Dict[str, Any] = {
    "pos_encoding_mode": "NONE", "window_left": -1, "logits_soft_cap": None,
    "sm_scale": None, "rope_scale": None, "rope_theta": None}
#: Those of them that FlashInfer's run() repeats; run() checks them against
#: plan()'s (the kernels are compiled for the planned value).
RUN_SCORE_OPTIONS = ("window_left",)
#: Score options by name (a subset of SCORE_OPTIONS).
ScoreArgs = Dict[str, Any]
_POS_NAMES: Dict[str, str] = {"NONE": "none", "ROPE_LLAMA": "rope_llama",
                              "ALIBI": "alibi", "none": "none",
                              "rope_llama": "rope_llama", "alibi": "alibi"}


def dtype_code(dtype: Any, name: str = "dtype", allow_f32: bool = False,
               allow_fp8: bool = False) -> str:
    """'float16' / torch.float16 / 'f16' -> 'f16' (and bf16; f32 and the fp8
    KV types float8_e4m3fn / float8_e5m2 where allowed); ValueError naming
    the argument otherwise."""
    code = _DTYPE_NAMES.get(str(dtype))
    if code is None or (code == "f32" and not allow_f32) or \
            (code in FP8_DTYPES and not allow_fp8):
        allowed = ["float16", "bfloat16"] + (["float32"] if allow_f32 else []) + \
            (["float8_e4m3fn", "float8_e5m2"] if allow_fp8 else [])
        raise ValueError(f"{name} must be {', '.join(allowed[:-1])} or {allowed[-1]}, "
                         f"got {dtype!r}")
    return code


def f32(x: float) -> float:
    """`x` rounded to float32 (what the kernels compute with)."""
    return float(struct.unpack(">f", struct.pack(">f", float(x)))[0])


def f32_bits(x: float) -> str:
    """The IEEE bits of float32 `x`, 8 hex digits (as keys spell floats)."""
    return struct.pack(">f", float(x)).hex()


def f32_from_bits(h: str) -> float:
    return float(struct.unpack(">f", bytes.fromhex(h))[0])


def _positive_int(name: str, v: Any) -> int:
    if not isinstance(v, int) or isinstance(v, bool) or v <= 0:
        raise ValueError(f"{name} must be a positive int, got {v!r}")
    return int(v)


def _choice(name: str, v: Any, choices: tuple) -> str:
    s = str(v).lower()
    if s not in choices:
        raise ValueError(f"{name} must be one of {', '.join(choices)}, got {v!r}")
    return s


@dataclass(frozen=True)
class AttentionConfig:
    """The static configuration of an attention call (docs/python.md)."""

    num_qo_heads: int = 32
    num_kv_heads: int = 8
    head_dim: int = 128
    page_size: int = 16
    if sys.version_info >= (3, 10):  # the rest keyword-only (3.9: positional too)
        _: KW_ONLY
    q_dtype: str = "f16"
    #: None: q's dtype.
    kv_dtype: Optional[str] = None
    #: None: q's dtype (fp8 queries: bf16).
    o_dtype: Optional[str] = None
    kv_scale: str = "none"
    kv_layout: str = "nhd"
    kv_form: str = "pool"
    #: None: 1 / sqrt(head_dim).
    sm_scale: Optional[float] = None
    logits_soft_cap: float = 0.0
    window_left: int = -1
    pos_encoding: str = "none"
    rope_scale: float = 1.0
    rope_theta: float = 1e4
    lse_base: str = "2"
    #: The head_dim of v and the output where it differs from q's and k's
    #: (`head_dim`), as in DeepSeek's prefill (192 / 128); None: the same.
    head_dim_vo: Optional[int] = None

    def __post_init__(self) -> None:
        put = object.__setattr__
        for name in ("num_qo_heads", "num_kv_heads", "head_dim", "page_size"):
            put(self, name, _positive_int(name, getattr(self, name)))
        if self.num_qo_heads % self.num_kv_heads:
            raise ValueError(f"num_qo_heads ({self.num_qo_heads}) must be a multiple of "
                             f"num_kv_heads ({self.num_kv_heads})")
        if self.head_dim % 8:
            raise ValueError(f"head_dim must be a multiple of 8, got {self.head_dim}")
        self._check_head_dim_vo()
        q = dtype_code(self.q_dtype, "q_data_type", allow_fp8=True)
        put(self, "q_dtype", q)
        put(self, "kv_dtype", dtype_code(q if self.kv_dtype is None else self.kv_dtype,
                                         "kv_data_type", allow_fp8=True))
        # fp8 queries (both products on fp8 tensor cores) read a cache of
        # their type and write f16 or bf16 (bf16 unless told).
        fp8_q = q in FP8_DTYPES
        if fp8_q and self.kv_dtype != q:
            raise ValueError(f"q_data_type {q} (fp8 queries) needs kv_data_type of the same "
                             f"type, got {self.kv_dtype}")
        o = ("bf16" if fp8_q else q) if self.o_dtype is None else self.o_dtype
        put(self, "o_dtype", dtype_code(o, "o_data_type", allow_f32=not fp8_q))
        put(self, "kv_scale", _choice("kv_scale", self.kv_scale, KV_SCALES))
        put(self, "kv_layout", _choice("kv_layout", self.kv_layout, KV_LAYOUTS))
        put(self, "kv_form", _choice("kv_form", self.kv_form, KV_FORMS))
        if self.head_dim_vo is not None and self.kv_form == "pool":
            # contract::AttentionConfig::validate()'s words.
            raise ValueError(f"head_dim_vo ({self.head_dim_vo}) differs from head_dim "
                             f"({self.head_dim}): k and v need a cache each (a pair or "
                             "ragged K/V), not one pool")
        if self.head_dim_vo is not None and self.head_dim_vo > self.head_dim:
            raise ValueError(f"head_dim_vo ({self.head_dim_vo}) larger than head_dim "
                             f"({self.head_dim}) is not supported: the kernels compute "
                             "v's columns within q's and k's")
        pos = _POS_NAMES.get(str(self.pos_encoding))
        if pos is None:
            raise ValueError("pos_encoding_mode must be NONE, ROPE_LLAMA or ALIBI, "
                             f"got {self.pos_encoding!r}")
        put(self, "pos_encoding", pos)
        put(self, "lse_base", _choice("lse_base", self.lse_base, LSE_BASES))
        if self.sm_scale is not None:
            scale = f32(self.sm_scale)
            if not scale > 0:
                raise ValueError(f"sm_scale must be positive, got {self.sm_scale!r}")
            # The default is no option: one kernel, one key.
            put(self, "sm_scale", None if scale == f32(self.head_dim ** -0.5) else scale)
        cap = f32(self.logits_soft_cap or 0.0)
        if not cap >= 0:
            raise ValueError(f"logits_soft_cap must be >= 0, got {self.logits_soft_cap}")
        put(self, "logits_soft_cap", cap)
        if isinstance(self.window_left, bool) or int(self.window_left) < -1:
            raise ValueError(f"window_left must be an int >= -1, got {self.window_left!r}")
        put(self, "window_left", int(self.window_left))
        rs = f32(1.0 if self.rope_scale is None else self.rope_scale)
        rt = f32(1e4 if self.rope_theta is None else self.rope_theta)
        if pos != "rope_llama":
            rs, rt = 1.0, 1e4
        put(self, "rope_scale", rs)
        put(self, "rope_theta", rt)

    def _check_head_dim_vo(self) -> None:
        """head_dim_vo: None or a positive multiple of 8, normalised to None
        when it equals head_dim (one kernel, one key); __post_init__ then
        checks it against the KV form and head_dim, in the order and words
        of contract::AttentionConfig::validate()."""
        vo = self.head_dim_vo
        if vo is None:
            return
        if not isinstance(vo, int) or isinstance(vo, bool) or vo <= 0:
            raise ValueError(f"head_dim_vo must be a positive int (or None: head_dim's), "
                             f"got {vo!r}")
        vo = int(vo)
        if vo == self.head_dim:
            object.__setattr__(self, "head_dim_vo", None)
            return
        if vo % 8:
            raise ValueError(f"head_dim_vo must be a multiple of 8, got {vo}")
        object.__setattr__(self, "head_dim_vo", vo)

    @classmethod
    def make(cls, *, q_dtype: Any = "float16", kv_dtype: Any = None,
             o_dtype: Any = None, head_dim: int, num_qo_heads: int,
             num_kv_heads: int, page_size: int, kv_layout: str = "NHD",
             kv_form: str = "pool", head_dim_vo: Optional[int] = None,
             **score: Any) -> "AttentionConfig":
        """From FlashInfer's plan() arguments (its names and None defaults):
        the dtypes and shapes, and the score options (SCORE_OPTIONS).
        `head_dim` is q's and k's (FlashInfer's head_dim_qk), `head_dim_vo`
        v's and the output's (None: head_dim's)."""
        unknown = sorted(set(score) - set(SCORE_OPTIONS))
        if unknown:
            raise TypeError(f"unexpected score option(s) {', '.join(unknown)} "
                            f"(known: {', '.join(SCORE_OPTIONS)})")
        s = {**SCORE_OPTIONS, **score}
        return cls(num_qo_heads, num_kv_heads, head_dim, page_size,
                   q_dtype=q_dtype, kv_dtype=kv_dtype, o_dtype=o_dtype,
                   kv_layout=kv_layout, kv_form=kv_form, head_dim_vo=head_dim_vo,
                   sm_scale=s["sm_scale"],
                   logits_soft_cap=s["logits_soft_cap"] or 0.0,
                   window_left=s["window_left"], pos_encoding=s["pos_encoding_mode"],
                   rope_scale=1.0 if s["rope_scale"] is None else s["rope_scale"],
                   rope_theta=1e4 if s["rope_theta"] is None else s["rope_theta"])

    def score_args(self) -> ScoreArgs:
        """The score options as FlashInfer spells them (the inverse of
        make()'s `score`; what the CPU reference takes)."""
        return {"pos_encoding_mode": self.pos_encoding.upper(),
                "window_left": self.window_left,
                "logits_soft_cap": self.logits_soft_cap, "sm_scale": self.sm_scale,
                "rope_scale": self.rope_scale, "rope_theta": self.rope_theta}

    def check_planned(self, repeated: ScoreArgs) -> None:
        """run()'s repetition of plan()'s score options (RUN_SCORE_OPTIONS;
        None: not repeated): TypeError for another name, ValueError for a
        value other than the planned one."""
        planned = self.score_args()
        for name, value in repeated.items():
            if name not in RUN_SCORE_OPTIONS:
                raise TypeError(f"run() got an unexpected keyword argument {name!r}")
            if value is not None and value != planned[name]:
                raise ValueError(f"{name}={value} differs from plan()'s {planned[name]}: "
                                 "the kernels are compiled for the planned value")

    @property
    def position_free(self) -> bool:
        """No score option depends on a key's absolute position (no RoPE, no
        window): what a shared cascade level needs, whose queries do not
        know their positions in it."""
        return self.pos_encoding == "none" and self.window_left < 0

    @property
    def group_size(self) -> int:
        return self.num_qo_heads // self.num_kv_heads

    @property
    def v_dim(self) -> int:
        """The head_dim of v and the output (head_dim_vo, else head_dim)."""
        return self.head_dim if self.head_dim_vo is None else self.head_dim_vo

    @property
    def split_head_dims(self) -> bool:
        """v and the output have a head_dim of their own (head_dim_vo)."""
        return self.head_dim_vo is not None

    @property
    def effective_sm_scale(self) -> float:
        return self.sm_scale if self.sm_scale is not None else f32(self.head_dim ** -0.5)

    def with_form(self, form: str) -> "AttentionConfig":
        return replace(self, kv_form=form)

    def key(self) -> str:
        """The configuration's part of a bundle key
        (`f16-f16.d128.h32x8.p16.nhd.pool`, then the options that differ
        from their defaults, floats as float32 bits, then `dv<D>` for a
        head_dim of v and o of their own); kernels.attention_key
        puts the group in front. cascade::contract::AttentionConfig::key()
        spells the same."""
        parts = [f"{self.q_dtype}-{self.kv_dtype}", f"d{self.head_dim}",
                 f"h{self.num_qo_heads}x{self.num_kv_heads}", f"p{self.page_size}",
                 self.kv_layout, self.kv_form]
        if self.sm_scale is not None:
            parts.append("sm" + f32_bits(self.sm_scale))
        if self.logits_soft_cap:
            parts.append("cap" + f32_bits(self.logits_soft_cap))
        if self.window_left >= 0:
            parts.append(f"win{self.window_left}")
        if self.pos_encoding == "rope_llama":
            parts.append(f"rope{f32_bits(self.rope_scale)}x{f32_bits(self.rope_theta)}")
        if self.pos_encoding == "alibi":
            parts.append("alibi")
        if self.head_dim_vo is not None:
            parts.append(f"dv{self.head_dim_vo}")
        if self.o_dtype != self.q_dtype:
            parts.append(f"o{self.o_dtype}")
        if self.kv_scale != "none":
            parts.append(f"kvscale_{self.kv_scale}")
        if self.lse_base == "e":
            parts.append("lsee")
        return ".".join(parts)

    @classmethod
    def from_key(cls, key: str) -> "AttentionConfig":
        """The inverse of key(); ValueError for anything else."""
        parts = key.split(".")
        try:
            q, kv = parts[0].split("-")
            hq, hkv = parts[2][1:].split("x")
            if parts[1][0] != "d" or parts[2][0] != "h" or parts[3][0] != "p":
                raise ValueError
            fields: Dict[str, Any] = dict(
                q_dtype=dtype_code(q, allow_fp8=True), kv_dtype=dtype_code(kv, allow_fp8=True),
                kv_layout=parts[4],
                kv_form=parts[5])
            if parts[4] not in KV_LAYOUTS or parts[5] not in KV_FORMS:
                raise ValueError
            for p in parts[6:]:
                if p.startswith("sm"):
                    fields["sm_scale"] = f32_from_bits(p[2:])
                elif p.startswith("cap"):
                    fields["logits_soft_cap"] = f32_from_bits(p[3:])
                elif p.startswith("win"):
                    fields["window_left"] = int(p[3:])
                elif p.startswith("rope"):
                    s, t = p[4:].split("x")
                    fields.update(pos_encoding="rope_llama", rope_scale=f32_from_bits(s),
                                  rope_theta=f32_from_bits(t))
                elif p == "alibi":
                    fields["pos_encoding"] = "alibi"
                elif p.startswith("dv"):
                    fields["head_dim_vo"] = int(p[2:])
                elif p.startswith("kvscale_"):
                    fields["kv_scale"] = p[len("kvscale_"):]
                elif p == "lsee":
                    fields["lse_base"] = "e"
                elif p.startswith("o"):
                    fields["o_dtype"] = dtype_code(p[1:], allow_f32=True)
                else:
                    raise ValueError
            cfg = cls(int(hq), int(hkv), int(parts[1][1:]), int(parts[3][1:]), **fields)
        except (ValueError, IndexError, TypeError):
            raise ValueError(f"{key!r} is not an attention configuration key")
        if cfg.key() != key:
            raise ValueError(f"{key!r} is not an attention configuration key (not "
                             f"normalised: {cfg.key()!r})")
        return cfg

    def as_dict(self) -> Dict[str, Any]:
        """The configuration as C++ takes it (cascade_mlir.compiler's
        builders, the GPU program's signature): the contract's key names,
        every field present."""
        return {
            "q_dtype": self.q_dtype, "kv_dtype": self.kv_dtype, "o_dtype": self.o_dtype,
            "kv_scale": self.kv_scale, "head_dim": self.head_dim,
            "head_dim_vo": self.v_dim,
            "num_qo_heads": self.num_qo_heads, "num_kv_heads": self.num_kv_heads,
            "page_size": self.page_size, "kv_layout": self.kv_layout,
            "kv_form": self.kv_form, "sm_scale": self.sm_scale,
            "logits_soft_cap": self.logits_soft_cap, "window_left": self.window_left,
            "pos_encoding": self.pos_encoding, "rope_scale": self.rope_scale,
            "rope_theta": self.rope_theta, "lse_base": self.lse_base,
        }

    def describe(self) -> str:
        """A readable one-line summary (for messages)."""
        parts = [f"q={self.q_dtype}", f"kv={self.kv_dtype}",
                 f"head_dim={self.head_dim}"]
        if self.head_dim_vo is not None:
            parts.append(f"head_dim_vo={self.head_dim_vo}")
        parts += [f"heads={self.num_qo_heads}/{self.num_kv_heads}",
                  f"page_size={self.page_size}", f"layout={self.kv_layout.upper()}",
                  f"kv_form={self.kv_form}"]
        if self.o_dtype != self.q_dtype:
            parts.append(f"o={self.o_dtype}")
        if self.kv_scale != "none":
            parts.append(f"kv_scale={self.kv_scale}")
        if self.sm_scale is not None:
            parts.append(f"sm_scale={self.sm_scale!r}")
        if self.logits_soft_cap:
            parts.append(f"logits_soft_cap={self.logits_soft_cap!r}")
        if self.window_left >= 0:
            parts.append(f"window_left={self.window_left}")
        if self.pos_encoding != "none":
            parts.append(f"pos_encoding={self.pos_encoding}")
        if self.pos_encoding == "rope_llama":
            parts.append(f"rope_scale={self.rope_scale!r} rope_theta={self.rope_theta!r}")
        if self.lse_base == "e":
            parts.append("lse_base=e")
        return " ".join(parts)

    def types(self) -> "tuple[str, str, str]":
        """(q, paged KV pool, lse) tensor types, as printed in the IR."""
        h, hkv, d, p = self.num_qo_heads, self.num_kv_heads, self.head_dim, self.page_size
        kv = self.kv_dtype
        pool = f"tensor<?x2x{p}x{hkv}x{d}x{kv}>" if self.kv_layout == "nhd" \
            else f"tensor<?x2x{hkv}x{p}x{d}x{kv}>"
        return f"tensor<?x{h}x{d}x{self.q_dtype}>", pool, f"tensor<?x{h}xf32>"

    def ir(self, decode: bool = True, causal: bool = False, name: str = "attention") -> str:
        """The cascade IR of one call (cascade_mlir.ir.decode / prefill)."""
        from . import ir
        return ir.decode(self, name=name) if decode else \
            ir.prefill(self, name=name, causal=causal)


def kv_scales(cfg: AttentionConfig, k_scale: Optional[float],
              v_scale: Optional[float]) -> Tuple[float, float]:
    """run()'s k_scale / v_scale (FlashInfer's per-tensor fp8 dequantization
    scales; None = 1) as floats: finite, k_scale positive, and only for an
    fp8 KV cache (the f16/bf16 kernels have no scale to apply them with)."""
    out = []
    for name, value in (("k_scale", k_scale), ("v_scale", v_scale)):
        if value is None:
            out.append(1.0)
            continue
        if cfg.kv_dtype not in FP8_DTYPES:
            raise ValueError(f"{name} dequantizes an fp8 KV cache; plan()'s kv_data_type "
                             f"is {cfg.kv_dtype} (pass kv_data_type=torch.float8_e4m3fn "
                             "or float8_e5m2)")
        f = _finite_float(name, value)
        if name == "k_scale" and f <= 0:
            # The tensor-core kernels fold it into the softmax's exponent
            # scale, where the running max of the logits needs it positive.
            raise ValueError(f"k_scale must be positive (a dequantization scale), got {value!r}")
        out.append(f)
    return out[0], out[1]


def _finite_float(name: str, value: Any) -> float:
    """A scale argument of run() as a finite float (ValueError naming it)."""
    try:
        f = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a float, got {value!r}") from None
    if not math.isfinite(f):
        raise ValueError(f"{name} must be finite, got {value!r}")
    return f


def run_scale(name: str, value: Any, positive: bool = True) -> float:
    """One of run()'s q_scale / k_scale / v_scale (None = 1) as a float:
    finite, and positive for the scales that multiply the softmax scale
    (q_scale, k_scale: FlashInfer folds them into sm_scale)."""
    if value is None:
        return 1.0
    f = _finite_float(name, value)
    if positive and f <= 0:
        raise ValueError(f"{name} must be positive (it multiplies the softmax scale), "
                         f"got {value!r}")
    return f
