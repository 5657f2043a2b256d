"""Cascade-MLIR: cascade attention for LLM serving, compiled with MLIR.

A drop-in for `flashinfer.cascade` (and the batch decode / prefill wrappers
serving engines call for non-shared batches): `import cascade_mlir as
flashinfer` runs FlashInfer's examples on the compiled kernels.

Modules:
  cascade_mlir.cascade   merge_state / merge_state_in_place / merge_states,
                         MultiLevelCascadeAttentionWrapper and the
                         (deprecated) shared-prefix wrappers
  cascade_mlir.decode    BatchDecodeWithPagedKVCacheWrapper
  cascade_mlir.prefill   BatchPrefillWithPagedKVCacheWrapper
  cascade_mlir.ragged    BatchPrefillWithRaggedKVCacheWrapper (contiguous K/V)
  cascade_mlir.single_request  single_decode/prefill_with_kv_cache
  cascade_mlir.cuda_graph      CUDAGraphBatchDecodeWithPagedKVCacheWrapper,
                         fast_decode_plan
  cascade_mlir.page      append_paged_kv_cache, get_batch_indices_positions,
                         get_seq_lens
  cascade_mlir.masks     packbits, segment_packbits
  cascade_mlir.config    AttentionConfig: the static configuration (one
                         dataclass: bundle keys, the dict C++ takes, IR)
  cascade_mlir.kernels   kernel bundles: keys, default set, lookup, cache
  cascade_mlir.aot       `python -m cascade_mlir.aot`: build bundles
  cascade_mlir.ir        cascade IR for a configuration (compiler builds)
  cascade_mlir.compiler  verify, lower and compile IR (compiler builds)
  cascade_mlir.runtime   plans, GPU execution, the float64 CPU reference

The attention state convention is FlashInfer's: `s` is the log-sum-exp in
base 2, and the empty state is (0, -inf).
"""

from typing import Any, Optional

__version__ = "0.1.0"

from . import _runtime as runtime  # noqa: F401


def _check_numpy_abi():
    # pybind11 < 2.12 reads numpy 2's dtype descriptors at numpy 1's offsets:
    # every array argument would be misread, so refuse to run.
    import numpy
    built = tuple(getattr(runtime, "_pybind11_version", (0, 0)))
    if int(numpy.__version__.split(".")[0]) >= 2 and built < (2, 12):
        raise ImportError(
            f"cascade_mlir was built with pybind11 {built[0]}.{built[1]}, which "
            f"cannot read numpy {numpy.__version__} arrays; rebuild it with "
            "pybind11 >= 2.12 (pip install . builds with pip's pybind11)")


_check_numpy_abi()

compiler: Any
compiler_import_error: Optional[ImportError]
try:  # the compiler half is optional (runtime-only builds have no MLIR)
    from . import _compiler as compiler  # noqa: F401
    compiler_import_error = None
except ImportError as err:  # pragma: no cover - depends on the build
    compiler = None
    compiler_import_error = err

from . import config, ir, kernels  # noqa: F401,E402
from .config import AttentionConfig  # noqa: F401,E402
from .cascade import (  # noqa: F401,E402
    BatchDecodeWithSharedPrefixPagedKVCacheWrapper,
    BatchPrefillWithSharedPrefixPagedKVCacheWrapper,
    MultiLevelCascadeAttentionWrapper,
    NotPlannedError,
    merge_state,
    merge_state_in_place,
    merge_states,
)
from .decode import BatchDecodeWithPagedKVCacheWrapper  # noqa: F401,E402
from .kernels import MissingKernelsError  # noqa: F401,E402
from .prefill import (  # noqa: F401,E402
    BatchAttentionWithAttentionSinkWrapper,
    BatchPrefillWithPagedKVCacheWrapper,
)
# FlashInfer parity beyond the cascade module (docs/python.md).
from ._unsupported import UnsupportedFeatureError  # noqa: F401,E402
from .cuda_graph import (  # noqa: F401,E402
    CUDAGraphBatchDecodeWithPagedKVCacheWrapper,
    fast_decode_plan,
)
from .masks import packbits, segment_packbits  # noqa: F401,E402
from .mla import BatchMLAPagedAttentionWrapper, MultiLevelMLACascadeWrapper  # noqa: F401,E402
from .page import (  # noqa: F401,E402
    append_paged_kv_cache,
    append_paged_mla_kv_cache,
    get_batch_indices_positions,
    get_seq_lens,
)
from .ragged import BatchPrefillWithRaggedKVCacheWrapper  # noqa: F401,E402
from .single_request import (  # noqa: F401,E402
    single_decode_with_kv_cache,
    single_prefill_with_kv_cache,
    single_prefill_with_kv_cache_return_lse,
)

__all__ = [
    "AttentionConfig",
    "BatchAttentionWithAttentionSinkWrapper",
    "BatchDecodeWithPagedKVCacheWrapper",
    "BatchDecodeWithSharedPrefixPagedKVCacheWrapper",
    "BatchMLAPagedAttentionWrapper",
    "BatchPrefillWithPagedKVCacheWrapper",
    "BatchPrefillWithRaggedKVCacheWrapper",
    "BatchPrefillWithSharedPrefixPagedKVCacheWrapper",
    "CUDAGraphBatchDecodeWithPagedKVCacheWrapper",
    "MissingKernelsError",
    "MultiLevelCascadeAttentionWrapper",
    "MultiLevelMLACascadeWrapper",
    "NotPlannedError",
    "UnsupportedFeatureError",
    "append_paged_kv_cache",
    "append_paged_mla_kv_cache",
    "compiler",
    "config",
    "fast_decode_plan",
    "get_batch_indices_positions",
    "get_seq_lens",
    "ir",
    "kernels",
    "merge_state",
    "merge_state_in_place",
    "merge_states",
    "packbits",
    "runtime",
    "segment_packbits",
    "single_decode_with_kv_cache",
    "single_prefill_with_kv_cache",
    "single_prefill_with_kv_cache_return_lse",
]
