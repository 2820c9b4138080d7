"""Precision: the pieces of the documented error bounds (docs/operators/precision.md) that
the operators share. A bound is in ULPs of the compute type at the exact result (`ulp`) plus
an absolute part; a function's error moves with its input's (`spread`); a row's bound is a
number or a function of its inputs (`bound_of`); a fused activation carries its input's
error and adds its own (`activation_error`: GEMM, MEAN_VARIANCE_NORMALIZATION, the element-wise
table); WGSL's pow (`pow_ulps`: POW, CONSTANT_POW, LP_POOLING). No gpudml import: numpy only."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from .activations import FusedActivation


def as_float64(x: np.ndarray) -> np.ndarray:
    """`x` as float64 values (a float's exactly, an integer's rounded beyond 2^53)."""
    with np.errstate(invalid="ignore"):
        return x.astype(np.float64)


SUBNORMAL = {np.dtype(np.float32): 2.0**-126, np.dtype(np.float64): 2.0**-1022}


def ulp(values: np.ndarray, compute_type) -> np.ndarray:
    """One ULP of `compute_type` at each |value| (the largest finite one's beyond it)."""
    top = np.finfo(compute_type).max
    return np.spacing(np.minimum(np.abs(values), top).astype(compute_type)).astype(np.float64)


def spread(fn, x: np.ndarray, delta: np.ndarray, y: np.ndarray) -> np.ndarray:
    """How far fn moves from y = fn(x) when x moves by up to +-delta (0 where undefined)."""
    moved = np.maximum(np.abs(fn(x + delta) - y), np.abs(fn(x - delta) - y))
    return np.nan_to_num(moved, nan=0.0, posinf=np.inf)


def activation_error(fused: FusedActivation, x: np.ndarray, e: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(y, its error): a fused activation of x, where x is within e of the exact value (the
    families that apply one in their store: GEMM, MEAN_VARIANCE_NORMALIZATION): the error
    as the function moves it, plus the activation's own (its ULPs and absolute part) and
    a flushed subnormal."""
    attrs = dict(fused.attributes)
    g = lambda v: np.asarray(fused.row.numpy(v, **attrs), np.float64)  # noqa: E731
    y = g(x)
    return y, (spread(g, x, e, y) + bound_of(fused.row.ulps, [x], attrs) * ulp(y, np.float32)
               + bound_of(fused.row.absolute, [x], attrs) + 2.0**-126)


def bound_of(value, xs: list, attrs: dict):
    """A row's ulps or absolute error: a number, or a function of its inputs and attributes."""
    return value(*xs, **attrs) if callable(value) else value


def pow_ulps(x, e, **_):
    """WGSL's pow, inherited from exp2(e log2 |x|): exp2's 3 + 2|t| ULP (t = e log2|x|), and
    log2's error (3 ULP, or 2^-21 absolute for |x| in [0.5, 2]) times |e| with t's rounding,
    carried through exp2 (ln 2 per unit of t: 2^24 ln 2 ULP at most); e's rounding to float32."""
    with np.errstate(all="ignore"):
        m = np.abs(x)
        e = np.asarray(e, np.float64)
        lg = np.log2(m)
        t = e * lg
        d_log = np.where((m >= 0.5) & (m <= 2), 2.0**-21, 3 * np.spacing(np.abs(lg).astype(np.float32)))
        d_t = np.abs(e) * d_log + np.spacing(np.abs(t).astype(np.float32))
        ulps = 3 + 3 * np.abs(t) + math.log(2) * 2.0**24 * d_t
        return np.nan_to_num(ulps, nan=0.0, posinf=np.inf)
