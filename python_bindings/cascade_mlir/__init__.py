"""Cascade-MLIR: cascade attention for LLM serving, compiled with MLIR.

Modules:
  cascade_mlir.cascade   merge_state / merge_state_in_place / merge_states and
                         MultiLevelCascadeAttentionWrapper, shaped like
                         flashinfer.cascade
  cascade_mlir.ir        cascade IR text for a given attention configuration
  cascade_mlir.compiler  verify and lower IR (present in compiler builds)
  cascade_mlir.runtime   plans and the float64 CPU reference (always present)

The attention state convention is FlashInfer's: `s` is the log-sum-exp in
base 2, and the empty state is (0, -inf).
"""

__version__ = "0.1.0"

from . import _runtime as runtime  # noqa: F401
from . import ir  # noqa: F401

try:  # the compiler half is optional (runtime-only builds have no MLIR)
    from . import _compiler as compiler  # noqa: F401
    compiler_import_error = None
except ImportError as err:  # pragma: no cover - depends on the build
    compiler = None
    compiler_import_error = err

from .cascade import (  # noqa: F401
    MultiLevelCascadeAttentionWrapper,
    merge_state,
    merge_state_in_place,
    merge_states,
)

__all__ = [
    "MultiLevelCascadeAttentionWrapper",
    "compiler",
    "ir",
    "merge_state",
    "merge_state_in_place",
    "merge_states",
    "runtime",
]
