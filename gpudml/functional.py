"""The numpy-level API (API.md section 1): shape inference, then one operator.

numpy in -> numpy out; Tensor in -> Tensor out (no readback).
"""

from __future__ import annotations

import builtins

from .errors import InvalidArgumentError
from .ops.slice1 import Slice1OperatorDesc, max_output_size
from .runtime import Device, Tensor, default_device
from .runtime.tensor import native_array
from .tensor_desc import MAX_DIMENSIONS, TensorDesc, as_int_tuple
from .types import DataType


def _prepare(x, device: Device | None, fn: str) -> tuple[Device, TensorDesc, object]:
    """(device, input desc, input) for a numpy array or Tensor argument."""
    if isinstance(x, Tensor):
        if device is not None and device._ctx is not x.device._ctx:
            raise InvalidArgumentError(f"{fn}: x lives on {x.device.adapter_name}, device is {device.adapter_name}")
        return device or x.device, x.desc, x
    x = native_array(x, f"{fn}: x")
    if not 1 <= x.ndim <= MAX_DIMENSIONS:
        raise InvalidArgumentError(
            f"{fn}: x has {x.ndim} dimensions (shape {list(x.shape)}); DirectML tensors have 1..{MAX_DIMENSIONS}")
    if x.size == 0:
        raise InvalidArgumentError(f"{fn}: x has shape {list(x.shape)}; every size must be >= 1")
    return device or default_device(), TensorDesc(DataType.from_numpy(x.dtype), x.shape), x


def _run_one(device: Device, desc, inputs):
    return device._run(desc, list(inputs))[0]


def slice_desc(in_desc: TensorDesc, offsets, sizes, strides=None, output_sizes=None) -> Slice1OperatorDesc:
    """The Slice1 desc the functional `slice` runs (shape inference only)."""
    offsets = as_int_tuple(offsets, "slice: offsets")
    sizes = as_int_tuple(sizes, "slice: sizes")
    strides = (1,) * in_desc.rank if strides is None else as_int_tuple(strides, "slice: strides")
    if output_sizes is None:
        output_sizes = tuple(max_output_size(n, s) if n >= 1 and s != 0 else 1
                             for n, s in builtins.zip(sizes, strides))
    out_desc = TensorDesc(in_desc.data_type, as_int_tuple(output_sizes, "slice: output_sizes"))
    return Slice1OperatorDesc(in_desc, out_desc, offsets, sizes, strides)


def slice(x, offsets, sizes, strides=None, *, output_sizes=None, device=None):  # noqa: A001
    """DML_SLICE1: the window `offsets`/`sizes` of x, read with `strides` (may be negative).
    `output_sizes=None` takes the largest valid output, 1 + (sizes[i] - 1) // |strides[i]|."""
    device, in_desc, x = _prepare(x, device, "slice")
    return _run_one(device, slice_desc(in_desc, offsets, sizes, strides, output_sizes), [x])
