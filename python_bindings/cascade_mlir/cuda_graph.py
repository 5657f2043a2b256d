"""`flashinfer.decode.CUDAGraphBatchDecodeWithPagedKVCacheWrapper` and
`flashinfer.fast_decode_plan` over Cascade-MLIR.

The CUDA-graph wrapper is the batch decode wrapper in CUDA-graph mode with
the index buffers given at construction: run() launches read the plan and
the page table from fixed device addresses (the int workspace and those
buffers), so a graph captured once replays correctly after every later
plan() of the same batch size (docs/runtime.md, CUDA graphs).
"""

from typing import Any, Optional

from ._frameworks import host_int32
from ._signatures import flashinfer_signature
from .config import ScoreArgs
from .decode import BatchDecodeWithPagedKVCacheWrapper

__all__ = ["CUDAGraphBatchDecodeWithPagedKVCacheWrapper", "fast_decode_plan"]


def _length(x: Any, name: str) -> int:
    shape = getattr(x, "shape", None)
    if shape is None or len(shape) != 1:
        raise ValueError(f"{name} must be a 1-D int32 device buffer")
    return int(shape[0])


class CUDAGraphBatchDecodeWithPagedKVCacheWrapper(BatchDecodeWithPagedKVCacheWrapper):
    """Batch decode for CUDA graphs: the batch size is fixed by
    `last_page_len_buffer` (`indptr_buffer` has one entry more), the page
    table holds at most len(indices_buffer) pages; plan() may be called
    between replays of a captured run()."""

    def __init__(self, workspace_buffer: Any, indptr_buffer: Any, indices_buffer: Any,
                 last_page_len_buffer: Any, kv_layout: str = "NHD",
                 use_tensor_cores: bool = False) -> None:
        batch = _length(last_page_len_buffer, "last_page_len_buffer")
        if _length(indptr_buffer, "indptr_buffer") != batch + 1:
            raise ValueError(f"indptr_buffer has {_length(indptr_buffer, 'indptr_buffer')} "
                             f"entries; the batch size fixed by last_page_len_buffer "
                             f"({batch}) needs {batch + 1}")
        self._fixed_batch_size = batch
        self._max_num_pages = _length(indices_buffer, "indices_buffer")
        super().__init__(workspace_buffer, kv_layout, use_cuda_graph=True,
                         use_tensor_cores=use_tensor_cores,
                         paged_kv_indptr_buffer=indptr_buffer,
                         paged_kv_indices_buffer=indices_buffer,
                         paged_kv_last_page_len_buffer=last_page_len_buffer)

    def plan(self, indptr: Any, indices: Any, last_page_len: Any, *args: Any,
             **kwargs: Any) -> None:
        """BatchDecodeWithPagedKVCacheWrapper.plan() for the fixed batch size."""
        self._check_fixed(indptr, indices)
        BatchDecodeWithPagedKVCacheWrapper.plan(self, indptr, indices, last_page_len,
                                                *args, **kwargs)

    begin_forward = plan

    def _check_fixed(self, indptr: Any, indices: Any) -> None:
        batch = _length(indptr, "indptr") - 1
        if batch != self._fixed_batch_size:
            raise ValueError(f"CUDA-graph mode: the batch size is fixed at "
                             f"{self._fixed_batch_size} (the buffers given at "
                             f"construction); plan() got {batch}")
        pages = _length(indices, "indices")
        if pages > self._max_num_pages:
            raise ValueError(f"CUDA-graph mode: indices has {pages} entries, more than "
                             f"indices_buffer holds ({self._max_num_pages})")


@flashinfer_signature("fast_decode_plan")
def fast_decode_plan(self: Any, indptr: Any, indices: Any, last_page_len: Any,
                     num_qo_heads: int, num_kv_heads: int, head_dim: int, page_size: int,
                     q_data_type: Any = None, kv_data_type: Any = None, data_type: Any = None,
                     non_blocking: bool = True, fixed_split_size: Optional[int] = None,
                     disable_split_kv: bool = False, global_override_indptr_cpu: Any = None,
                     *, score: ScoreArgs) -> None:
    """FlashInfer's fast_decode_plan(wrapper, ...) (used as
    `wrapper.plan = functools.partial(fast_decode_plan, wrapper)`): the
    wrapper's plan with `global_override_indptr_cpu`, when given, as the
    host copy of indptr (no device-to-host copy of it). The plan is the same
    as plan()'s; cascade_mlir's plan() never copies index buffers device to
    device in CUDA-graph mode beyond the upload of the arrays it is given."""
    if not isinstance(self, BatchDecodeWithPagedKVCacheWrapper):
        raise TypeError("fast_decode_plan: self must be a BatchDecodeWithPagedKVCacheWrapper "
                        f"(or its CUDA-graph form), got {type(self).__name__}")
    if global_override_indptr_cpu is not None:
        indptr = host_int32(global_override_indptr_cpu, "global_override_indptr_cpu")
    if isinstance(self, CUDAGraphBatchDecodeWithPagedKVCacheWrapper):
        self._check_fixed(indptr, indices)
    # The class's plan, not self.plan: callers replace self.plan with this.
    BatchDecodeWithPagedKVCacheWrapper.plan(
        self, indptr, indices, last_page_len, num_qo_heads, num_kv_heads, head_dim,
        page_size, q_data_type=q_data_type, kv_data_type=kv_data_type,
        data_type=data_type, non_blocking=non_blocking, fixed_split_size=fixed_split_size,
        disable_split_kv=disable_split_kv, **score)
