"""What the element-wise table's rows share: the type sets of their support tables (`FLOATS`, ...,
beside types.py's TYPES_8 and TYPES_11), the numpy helpers of their references (IEEE maxNum/minNum, two's-complement
wrapping) and CLIP's and CLIP_GRAD's FLOAT bounds as the integer bounds of an integer tensor."""

from __future__ import annotations

import math

import numpy as np

from ...types import F16, F32, I8, I16, I32, I64, U8, U16, U32, U64, FeatureLevel

FL = FeatureLevel
FLOATS = frozenset({F32, F16})
F32_MAX = float(np.finfo(np.float32).max)


def wrap(fn):
    """An integer function computed in uint64 (wrapping modulo 2^64, two's complement),
    its result truncated to the inputs' type."""
    def wrapped(*xs, **kw):
        dtype = xs[0].dtype
        with np.errstate(over="ignore"):
            out = fn(*(x.astype(np.uint64) for x in xs), **kw)
        return out.astype(dtype)
    return wrapped


def max_num(a, b):
    return np.where((a > b) | np.isnan(b), a, b)


def min_num(a, b):
    return np.where((a < b) | np.isnan(b), a, b)


def integer_or_float(float_fn, int_fn):
    def fn(*xs, **kw):
        return (float_fn if xs[0].dtype.kind == "f" else int_fn)(*xs, **kw)
    return fn


ALL_INTS = frozenset({I64, I32, I16, I8, U64, U32, U16, U8})
INTS_8_32 = frozenset({I32, I16, I8, U32, U16, U8})
SINTS = frozenset({I64, I32, I16, I8})
UNARY_FLOAT = ((FL.FL_3_0, (1, 8), FLOATS), (FL.FL_1_0, {4}, FLOATS))
ACTIVATION_FLOAT = ((FL.FL_3_0, (1, 8), FLOATS), (FL.FL_2_0, (4, 5), FLOATS), (FL.FL_1_0, {4}, FLOATS))
MINMAX = (
    (FL.FL_5_0, (1, 8), FLOATS | ALL_INTS),
    (FL.FL_3_0, (1, 8), FLOATS | INTS_8_32),
    (FL.FL_2_1, {4}, FLOATS | INTS_8_32),
    (FL.FL_1_0, {4}, FLOATS),
)
UNARY_2_0 = ((FL.FL_3_0, (1, 8), FLOATS), (FL.FL_2_0, {4}, FLOATS))


def grad_bounds(low: float, high: float, dtype) -> tuple[int, float, int, float]:
    """CLIP_GRAD's x <= min and x >= max on an integer tensor, as integer bounds: (lo, on,
    hi, on): x <= floor(min) where on, x >= ceil(max) where on (a NaN bound, or one beyond
    the type's range on the far side, holds nowhere)."""
    info = np.iinfo(dtype)
    lo_on = hi_on = 1.0
    if math.isnan(low) or low < int(info.min):
        lo, lo_on = int(info.min), 0.0
    else:
        lo = int(info.max) if low >= int(info.max) else math.floor(low)
    if math.isnan(high) or high > int(info.max):
        hi, hi_on = int(info.max), 0.0
    else:
        hi = int(info.min) if high <= int(info.min) else math.ceil(high)
    return lo, lo_on, hi, hi_on


def integer_bounds(low: float, high: float, dtype) -> tuple[int, int]:
    """CLIP's FLOAT bounds for an integer tensor: the least and the largest integer of the
    type within [low, high] (ceil(low) and floor(high), clamped to the type's range); a NaN
    bound bounds nothing (as HLSL's max and min ignore a NaN operand)."""
    info = np.iinfo(dtype)

    def clamped(value: float, rounding, default: int) -> int:
        if math.isnan(value):
            return default
        if math.isinf(value):
            return int(info.max) if value > 0 else int(info.min)
        return max(int(info.min), min(int(info.max), rounding(value)))
    return clamped(low, math.ceil, int(info.min)), clamped(high, math.floor, int(info.max))
