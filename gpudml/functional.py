"""The numpy-level API (API.md section 1): shape inference, then one operator.

numpy in -> numpy out; Tensor in -> Tensor out (no readback).
"""

from __future__ import annotations

import builtins
import enum

import numpy as np

from .errors import InvalidArgumentError
from .ops.padding import PaddingOperatorDesc
from .ops.reduce import ARG_FUNCTIONS, ReduceFunction, ReduceOperatorDesc
from .ops.reverse_subsequences import ReverseSubsequencesOperatorDesc
from .ops.slice1 import Slice1OperatorDesc, max_output_size
from .runtime import Device, Tensor, default_device
from .runtime.tensor import native_array
from .tensor_desc import MAX_DIMENSIONS, TensorDesc, as_int, as_int_tuple
from .types import DataType, PaddingMode


def _prepare(x, device: Device | None, fn: str) -> tuple[Device, TensorDesc, object]:
    """(device, input desc, input) for a numpy array or Tensor argument."""
    if device is not None and not isinstance(device, Device):
        raise InvalidArgumentError(f"{fn}: device must be a gpudml.Device or None, got {type(device).__name__}")
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


class _Uncacheable(Exception):
    pass


def _freeze(value):
    """A hashable stand-in for an argument that equals another's only when both build the
    same desc (so 1.0 never hits the entry built for 1, nor -0.0 the one for 0.0)."""
    kind = type(value)
    if kind is int or value is None or kind is TensorDesc:
        return value
    if kind in (list, tuple):
        return tuple(_freeze(v) for v in value)
    if kind is float:
        return ("float", value.hex())
    if kind is str or isinstance(value, enum.Enum):
        return (kind.__name__, str(value))
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.dtype):
        return ("dtype", value.str)
    raise _Uncacheable


def _run_one(device: Device, call: tuple, build_desc, inputs):
    """Execute the operator `build_desc()` describes. `call` (the function name, input descs
    and raw arguments) keys the device's cache of compiled operators, so a repeated call
    neither rebuilds nor revalidates its desc."""
    try:
        key = tuple(_freeze(v) if i >= 2 else v for i, v in enumerate(call))
    except _Uncacheable:
        key = None
    return device._run(key, build_desc, list(inputs))[0]


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
    return _run_one(device, ("slice", in_desc, offsets, sizes, strides, output_sizes),
                    lambda: slice_desc(in_desc, offsets, sizes, strides, output_sizes), [x])


def pad_desc(in_desc: TensorDesc, start_padding, end_padding, mode="constant", value=0.0) -> PaddingOperatorDesc:
    """The Padding desc the functional `pad` runs (shape inference only)."""
    start = as_int_tuple(start_padding, "pad: start_padding")
    end = as_int_tuple(end_padding, "pad: end_padding")
    mode = PaddingMode.coerce(mode, "pad: mode")
    if len(start) == len(end) == in_desc.rank:
        # Negative paddings are left to the operator's check, which names them.
        out_sizes = tuple(n + max(s, 0) + max(e, 0) for n, s, e in builtins.zip(in_desc.sizes, start, end, strict=True))
    else:
        out_sizes = in_desc.sizes  # the operator names the length mismatch
    out_desc = TensorDesc(in_desc.data_type, out_sizes)
    return PaddingOperatorDesc(in_desc, out_desc, mode, value, start, end)


def pad(x, start_padding, end_padding, *, mode="constant", value=0.0, device=None):
    """DML_PADDING: x grown by `start_padding` / `end_padding` elements on each axis.
    `mode`: a PaddingMode or "constant" | "edge" | "reflection" | "symmetric" (any case);
    `value` (CONSTANT only) is converted to x's type (integers: truncated toward zero)."""
    device, in_desc, x = _prepare(x, device, "pad")
    return _run_one(device, ("pad", in_desc, start_padding, end_padding, mode, value),
                    lambda: pad_desc(in_desc, start_padding, end_padding, mode, value), [x])


UINT32_MAX = 2**32 - 1


def sequence_lengths_array(sequence_lengths) -> np.ndarray:
    """Any non-negative integer array as UINT32, or UINT64 when a value does not fit UINT32."""
    where = "reverse_subsequences: sequence_lengths"
    try:
        lengths = np.asarray(sequence_lengths)
    except (TypeError, ValueError) as exc:
        raise InvalidArgumentError(f"{where}: not an integer array ({exc})") from None
    if lengths.dtype.kind not in "iu":
        raise InvalidArgumentError(
            f"{where}: lengths must be non-negative integers, got dtype {lengths.dtype}")
    if lengths.size and lengths.dtype.kind == "i" and lengths.min() < 0:
        raise InvalidArgumentError(f"{where}: lengths must be non-negative, got {int(lengths.min())}")
    fits = not lengths.size or int(lengths.max()) <= UINT32_MAX
    # astype(order="C"), not ascontiguousarray: that would turn a 0-d array into shape [1].
    return lengths.astype(np.uint32 if fits else np.uint64, order="C")


def reverse_subsequences_desc(in_desc: TensorDesc, lengths_desc: TensorDesc, axis) -> ReverseSubsequencesOperatorDesc:
    """The ReverseSubsequences desc the functional `reverse_subsequences` runs."""
    axis = as_int(axis, "reverse_subsequences: axis")
    out_desc = TensorDesc(in_desc.data_type, in_desc.sizes)
    return ReverseSubsequencesOperatorDesc(in_desc, lengths_desc, out_desc, axis)


def reverse_subsequences(x, sequence_lengths, axis, *, device=None):
    """DML_REVERSE_SUBSEQUENCES: along `axis`, reverse the first min(length, n) elements of
    each sequence. `sequence_lengths` has x's rank and sizes, except 1 on `axis`: a Tensor
    (UINT32/UINT64) or any non-negative integer array (sent as UINT32, or UINT64 if needed)."""
    if device is None and not isinstance(x, Tensor) and isinstance(sequence_lengths, Tensor):
        device = sequence_lengths.device
    device, in_desc, x = _prepare(x, device, "reverse_subsequences")
    if isinstance(sequence_lengths, Tensor):
        lengths = sequence_lengths
    else:
        lengths = sequence_lengths_array(sequence_lengths)
        if not 1 <= lengths.ndim <= MAX_DIMENSIONS or lengths.size == 0:
            raise InvalidArgumentError(
                f"reverse_subsequences: sequence_lengths has shape {list(lengths.shape)}; expected the "
                f"shape of x ({list(in_desc.sizes)}) with 1 on axis {axis}")
        if isinstance(x, Tensor):
            lengths = device.tensor(lengths)  # Tensor in -> Tensor out: everything stays on the GPU
    lengths_desc = lengths.desc if isinstance(lengths, Tensor) else TensorDesc(
        DataType.from_numpy(lengths.dtype), lengths.shape)
    return _run_one(device, ("reverse_subsequences", in_desc, lengths_desc, axis),
                    lambda: reverse_subsequences_desc(in_desc, lengths_desc, axis), [x, lengths])


def reduce_desc(in_desc: TensorDesc, function, axes=None, output_data_type=None) -> ReduceOperatorDesc:
    """The Reduce desc the functional `reduce` runs (shape inference only): the output keeps
    the rank with size 1 on each reduced axis; its type is the input's, except ARGMAX/ARGMIN
    (`output_data_type`, default UINT32). A given `output_data_type` for another function
    must equal the input's type (validation says so otherwise)."""
    function = ReduceFunction.coerce(function, "reduce: function")
    if axes is None:
        axes = tuple(range(in_desc.rank))
    elif isinstance(axes, (int, np.integer)) and not isinstance(axes, (bool, np.bool_)):
        axes = (int(axes),)
    axes = as_int_tuple(axes, "reduce: axes")
    if output_data_type is not None:
        out_type = _data_type(output_data_type, "reduce: output_data_type")
    elif function in ARG_FUNCTIONS:
        out_type = DataType.UINT32
    else:
        out_type = in_desc.data_type
    out_sizes = tuple(1 if i in axes else n for i, n in enumerate(in_desc.sizes))
    return ReduceOperatorDesc(function, in_desc, TensorDesc(out_type, out_sizes), axes)


def _data_type(value, field: str) -> DataType:
    """A DataType from a DataType, its name or value, or a numpy dtype."""
    if isinstance(value, (DataType, str, int, np.integer)):
        try:
            return DataType.coerce(value, field)
        except InvalidArgumentError:
            if not isinstance(value, str):
                raise
    return DataType.from_numpy(value, field)


def reduce(x, function, axes=None, *, output_data_type=None, device=None):
    """DML_REDUCE: `function` (a ReduceFunction or its name, any case) over `axes` (None: all).
    The result keeps the rank, size 1 on the reduced axes. `output_data_type` is the index
    type of ARGMAX/ARGMIN (default UINT32); other functions keep the input's type."""
    device, in_desc, x = _prepare(x, device, "reduce")
    return _run_one(device, ("reduce", in_desc, function, axes, output_data_type),
                    lambda: reduce_desc(in_desc, function, axes, output_data_type), [x])
