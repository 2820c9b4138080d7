"""SPEC.md sections 4-7 as plain numpy: the oracle for tests, `gpudml examples`
and the benchmarks' correctness check.

Every function takes and returns *logical* arrays: the shape is the tensor's
sizes, the dtype the tensor's numpy dtype. Layout (strides, padding bytes) is
the runtime's business, not the oracle's.

Data movement (slice1, padding, reverse_subsequences) is computed as integer
source indices followed by one gather, so results are bit-exact for every
dtype (NaN payloads and -0.0 included): no value ever goes through float math.

Validation lives in the operators (`gpudml/ops/`); here only what is needed to
compute raises a plain ValueError (wrong argument lengths, an index that would
fall outside the input, an axis out of range). No wgpu import.
"""

from __future__ import annotations

import math

import numpy as np

from .types import DataType, PaddingMode, ReduceFunction

__all__ = ["slice1", "padding", "reverse_subsequences", "reduce"]


def _int_list(values, rank: int, field: str) -> list[int]:
    """`values` as a list of Python ints of length `rank` (ValueError otherwise)."""
    out = [int(v) for v in np.asarray(values).reshape(-1)]
    if len(out) != rank:
        raise ValueError(f"{field}: expected {rank} entries (the input rank), got {len(out)}")
    return out


def _gather(x: np.ndarray, index_per_axis: list[np.ndarray]) -> np.ndarray:
    """x at the outer product of per-axis source indices (a fresh array).

    Fancy indexing copies raw elements, which is what makes the data-movement
    operators bit-exact.
    """
    if x.ndim == 0:
        return x.copy()
    return x[np.ix_(*index_per_axis)]


# --------------------------------------------------------------------- Slice1


def slice1(x, input_window_offsets, input_window_sizes, input_window_strides=None, output_sizes=None) -> np.ndarray:
    """DML_SLICE1: output[o] = x[start + strides * o], per axis.

    start[i] = offsets[i] + (sizes[i] - 1 if strides[i] < 0 else 0): a negative
    stride walks the window from its end. `input_window_strides=None` means all 1;
    `output_sizes=None` means the largest output, 1 + (sizes[i] - 1) // |strides[i]|.
    Raises ValueError for a zero stride or an output that would read outside the
    window (numpy would silently wrap a negative index).
    """
    x = np.asarray(x)
    rank = x.ndim
    offsets = _int_list(input_window_offsets, rank, "input_window_offsets")
    sizes = _int_list(input_window_sizes, rank, "input_window_sizes")
    strides = _int_list(
        [1] * rank if input_window_strides is None else input_window_strides, rank, "input_window_strides"
    )
    if any(s == 0 for s in strides):
        raise ValueError(f"input_window_strides {strides}: a stride may not be 0")
    if output_sizes is None:
        output_sizes = [1 + (n - 1) // abs(s) for n, s in zip(sizes, strides, strict=True)]
    output_sizes = _int_list(output_sizes, rank, "output_sizes")
    index = [
        _slice_axis(i, o, n, s, m, x.shape[i])
        for i, (o, n, s, m) in enumerate(zip(offsets, sizes, strides, output_sizes, strict=True))
    ]
    return _gather(x, index)


def _slice_axis(axis, offset, size, stride, out_size, dim) -> np.ndarray:
    """Source indices of one axis; ValueError if any leaves the window or the input."""
    start = offset + (size - 1 if stride < 0 else 0)
    idx = start + stride * np.arange(out_size, dtype=np.int64)
    lo, hi = offset, offset + size
    if out_size < 1 or idx.min() < lo or idx.max() >= hi or lo < 0 or hi > dim:
        raise ValueError(
            f"axis {axis}: output size {out_size} with stride {stride} reads outside the "
            f"window [{lo}, {hi}) of an input of size {dim}"
        )
    return idx


# -------------------------------------------------------------------- Padding


def padding(x, start_padding, end_padding, mode=PaddingMode.CONSTANT, value=0.0) -> np.ndarray:
    """DML_PADDING: output sizes = sizes + start + end; each output coordinate
    maps, per axis, to a source index c in [-start, n + end):

    - CONSTANT: `value` converted to x's dtype (see `_constant`) where any axis is
      out of range, else the element;
    - EDGE: clamp(c, 0, n-1);
    - REFLECTION: periodic mirror without the edge, period 2(n-1); n == 1 -> 0;
    - SYMMETRIC: periodic mirror with the edge, period 2n.

    Periodic folding makes any padding size valid (padding >= n folds again),
    which is what the seed page says DirectML does.
    """
    x = np.asarray(x)
    mode = PaddingMode.coerce(mode)
    start = _int_list(start_padding, x.ndim, "start_padding")
    end = _int_list(end_padding, x.ndim, "end_padding")
    if any(p < 0 for p in start + end):
        raise ValueError(f"start_padding {start} / end_padding {end}: paddings are unsigned")
    coords = [np.arange(-s, n + e, dtype=np.int64) for s, n, e in zip(start, x.shape, end, strict=True)]
    out = _gather(x, [_pad_source(c, n, mode) for c, n in zip(coords, x.shape, strict=True)])
    if mode == PaddingMode.CONSTANT:
        outside = np.zeros(out.shape, dtype=bool)
        for axis, (c, n) in enumerate(zip(coords, x.shape, strict=True)):
            shape = [1] * x.ndim
            shape[axis] = c.size
            outside |= ((c < 0) | (c >= n)).reshape(shape)
        out[outside] = _constant(value, x.dtype)
    return out


def _pad_source(c: np.ndarray, n: int, mode: PaddingMode) -> np.ndarray:
    """Source index of each padded coordinate c on an axis of size n (integer math)."""
    if mode in (PaddingMode.CONSTANT, PaddingMode.EDGE):
        return np.clip(c, 0, n - 1)  # CONSTANT overwrites the outside ones afterwards
    if mode == PaddingMode.REFLECTION:
        if n == 1:  # period 2(n-1) = 0: the single element everywhere
            return np.zeros_like(c)
        period = 2 * (n - 1)
        m = np.mod(c, period)  # numpy's mod is non-negative for a positive divisor
        return np.where(m < n, m, period - m)
    period = 2 * n  # SYMMETRIC
    m = np.mod(c, period)
    return np.where(m < n, m, period - 1 - m)


def _constant(value, dtype: np.dtype):
    """The padding value as one element of `dtype`.

    Floats: rounded once, to nearest, from the given Python value (NaN stays NaN,
    too large becomes +-inf). Integers: truncated toward zero (10.6 -> 10, -10.6 ->
    -10), like DirectML's "may be truncated"; a value that is not finite or does
    not fit the type raises ValueError (SPEC: InvalidArgumentError). Python ints
    are taken exactly, so int64 values beyond 2^53 survive.
    """
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        with np.errstate(over="ignore"):
            return np.array(value, dtype=np.float64).astype(dtype)[()]
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        whole = int(value)
    else:
        v = float(value)
        if not math.isfinite(v):
            raise ValueError(f"padding value {value!r} cannot be converted to {dtype}")
        whole = math.trunc(v)
    info = np.iinfo(dtype)
    if not info.min <= whole <= info.max:
        raise ValueError(f"padding value {value!r} is outside the range of {dtype}")
    return np.array(whole, dtype=dtype)[()]


# ------------------------------------------------------- ReverseSubsequences


def reverse_subsequences(x, sequence_lengths, axis: int) -> np.ndarray:
    """DML_REVERSE_SUBSEQUENCES: along `axis`, with L = min(length, n):
    out[k] = x[L-1-k] for k < L, x[k] otherwise. Lengths 0 and 1 change nothing;
    lengths beyond the axis clamp to n (the page: "as if clamped to the maximum").

    `sequence_lengths` has x's rank, size 1 on `axis`, x's sizes elsewhere.
    """
    x = np.asarray(x)
    lengths = np.asarray(sequence_lengths)
    axis = int(axis)
    if not 0 <= axis < x.ndim:
        raise ValueError(f"axis {axis} is outside [0, {x.ndim})")
    want = x.shape[:axis] + (1,) + x.shape[axis + 1 :]
    if lengths.shape != want:
        raise ValueError(f"sequence_lengths shape {lengths.shape}, expected {want}")
    if lengths.dtype.kind not in "iu" or (lengths.dtype.kind == "i" and (lengths < 0).any()):
        raise ValueError("sequence_lengths must be non-negative integers")
    n = x.shape[axis]
    clamped = np.minimum(lengths, n).astype(np.int64)  # min in the lengths' own type: no wrap
    shape = [1] * x.ndim
    shape[axis] = n
    k = np.arange(n, dtype=np.int64).reshape(shape)
    src = np.where(k < clamped, clamped - 1 - k, k)
    return np.take_along_axis(x, src, axis=axis)


# --------------------------------------------------------------------- Reduce

_F = ReduceFunction
_FLOAT_ONLY = {_F.AVERAGE, _F.L2, _F.LOG_SUM, _F.LOG_SUM_EXP}


def reduce(x, function, axes=None, output_data_type=None) -> np.ndarray:
    """DML_REDUCE: reduce `axes` (None = all; any order; no duplicates), keeping
    the rank: every reduced axis has size 1 in the result.

    Float inputs (float16/32/64): SUM, AVERAGE, MULTIPLY, L1, L2, SUM_SQUARE,
    LOG_SUM and LOG_SUM_EXP are computed in float64 and rounded once to the input
    type; the GPU's float32 accumulation must land within a tolerance of this.
    LOG_SUM_EXP is max-shifted, so inputs around 1000 give finite results.
    MIN/MAX work in the input type (exact) and propagate NaN (np.max semantics).

    Integer inputs: SUM, MULTIPLY, L1, SUM_SQUARE wrap modulo 2^bits in the input
    type (computed in uint64, whose arithmetic wraps mod 2^64, then truncated:
    exact even for int64 products, no float anywhere). MIN/MAX are exact.
    AVERAGE, L2, LOG_SUM, LOG_SUM_EXP have no integer definition in DirectML and
    raise ValueError.

    ARGMAX/ARGMIN: the first occurrence (ties and NaN like np.argmax: a row holding
    NaN gives its first NaN); over several axes the flat row-major index into the
    reduced sub-tensor, axes taken in ascending order whatever order they are given.
    The result type is `output_data_type` (DataType, name, value or numpy dtype),
    default UINT32. For other functions `output_data_type` must be None or the
    input's type (DirectML: output type equals input type).
    """
    x = np.asarray(x)
    function = ReduceFunction.coerce(function)
    axes = _reduce_axes(axes, x.ndim)
    kept = [a for a in range(x.ndim) if a not in axes]
    rows = np.transpose(x, kept + axes).reshape([x.shape[a] for a in kept] + [-1])
    out_shape = [1 if a in axes else n for a, n in enumerate(x.shape)]
    if function in (_F.ARGMAX, _F.ARGMIN):
        pick = np.argmax if function == _F.ARGMAX else np.argmin
        index_type = _index_dtype(output_data_type)
        return pick(rows, axis=-1).astype(index_type).reshape(out_shape)
    if output_data_type is not None and _as_numpy_dtype(output_data_type) != x.dtype:
        raise ValueError(f"{function.name}: output type must equal the input type {x.dtype}")
    if function in (_F.MIN, _F.MAX):
        return (np.min if function == _F.MIN else np.max)(rows, axis=-1).reshape(out_shape)
    if x.dtype.kind == "f":
        with np.errstate(over="ignore"):  # beyond the type's range rounds to +-inf, as wanted
            return _float_reduce(rows, function).astype(x.dtype).reshape(out_shape)
    if function in _FLOAT_ONLY:
        raise ValueError(f"{function.name} is defined for float tensors only, not {x.dtype}")
    return _wrapping_reduce(rows, function, x.dtype).reshape(out_shape)


def _reduce_axes(axes, rank: int) -> list[int]:
    """Sorted axis list; ValueError for out-of-range, duplicate or empty axes."""
    if axes is None:
        return list(range(rank))
    axes = [int(a) for a in np.asarray(axes).reshape(-1)]
    if not axes or len(set(axes)) != len(axes) or any(not 0 <= a < rank for a in axes):
        raise ValueError(f"axes {axes}: need at least one, unique, each in [0, {rank})")
    return sorted(axes)


def _as_numpy_dtype(data_type) -> np.dtype:
    """numpy dtype of a DataType / its name / its value / a numpy dtype."""
    if isinstance(data_type, (DataType, str, int, np.integer)):
        try:
            return DataType.coerce(data_type).numpy
        except ValueError:
            if not isinstance(data_type, str):
                raise
    return DataType.from_numpy(data_type).numpy


def _index_dtype(output_data_type) -> np.dtype:
    return np.dtype(np.uint32) if output_data_type is None else _as_numpy_dtype(output_data_type)


def _float_reduce(rows: np.ndarray, function: ReduceFunction) -> np.ndarray:
    """Float reductions over the last axis, computed in float64 (not yet rounded)."""
    v = rows.astype(np.float64)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        if function == _F.SUM:
            return v.sum(axis=-1)
        if function == _F.AVERAGE:
            return v.sum(axis=-1) / v.shape[-1]
        if function == _F.MULTIPLY:
            return v.prod(axis=-1)
        if function == _F.L1:
            return np.abs(v).sum(axis=-1)
        if function == _F.L2:
            return np.sqrt((v * v).sum(axis=-1))
        if function == _F.SUM_SQUARE:
            return (v * v).sum(axis=-1)
        if function == _F.LOG_SUM:
            return np.log(v.sum(axis=-1))
        return _log_sum_exp(v)


def _log_sum_exp(v: np.ndarray) -> np.ndarray:
    """max + log(sum(exp(x - max))): finite for large inputs; an infinite max
    (all -inf, or any +inf) is left unshifted so the result is -inf / +inf, not NaN."""
    m = v.max(axis=-1, keepdims=True)
    shift = np.where(np.isfinite(m), m, 0.0)
    return (shift + np.log(np.exp(v - shift).sum(axis=-1, keepdims=True)))[..., 0]


def _wrapping_reduce(rows: np.ndarray, function: ReduceFunction, dtype: np.dtype) -> np.ndarray:
    """Integer SUM/MULTIPLY/L1/SUM_SQUARE modulo 2^bits, in the input type.

    Everything is done in uint64 (numpy array arithmetic wraps silently mod 2^64);
    two's complement makes the low `bits` bits of that result the wrapped result
    for signed and unsigned types alike.
    """
    if function == _F.L1 and dtype.kind == "i":
        # |INT_MIN| overflows int64 only for int64 itself, and wraps to 2^63 there,
        # which is the right value mod 2^64.
        rows = np.abs(rows.astype(np.int64))
    u = rows.astype(np.uint64)
    if function in (_F.SUM, _F.L1):
        total = u.sum(axis=-1, dtype=np.uint64)
    elif function == _F.MULTIPLY:
        total = u.prod(axis=-1, dtype=np.uint64)
    elif function == _F.SUM_SQUARE:
        total = (u * u).sum(axis=-1, dtype=np.uint64)
    else:
        raise ValueError(f"{function.name} is not an integer reduction")
    bits = 8 * dtype.itemsize
    low = total & np.uint64((1 << bits) - 1)
    return low.astype(np.dtype(f"u{dtype.itemsize}")).view(dtype)
