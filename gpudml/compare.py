"""Comparing results: bit for bit, or within a tolerance (the documented precision).

Free of pytest, for the runtime (the autotuner checks every variant it times) and the shader
lab; gpudml.testing, the pytest plugin, exports the same functions. Anything numpy can
read is compared: numpy arrays, and gpudml Tensors (read back through their __array__).
"""

from __future__ import annotations

import numpy as np


def _as_array(value) -> np.ndarray:
    return np.asarray(value)


def _kind_mismatch(actual: np.ndarray, expected: np.ndarray) -> str:
    return f"dtype/shape {actual.dtype}{list(actual.shape)} != {expected.dtype}{list(expected.shape)}"


def assert_bit_equal(actual, expected) -> None:
    """The same dtype, shape and bits (NaN payloads and -0.0 included); numpy arrays or
    gpudml.Tensors. The message names the first differing elements, their values and bits."""
    actual, expected = _as_array(actual), _as_array(expected)
    __tracebackhide__ = True
    if actual.dtype != expected.dtype or actual.shape != expected.shape:
        raise AssertionError(_kind_mismatch(actual, expected))
    size = actual.dtype.itemsize
    unsigned = np.dtype(f"u{size}") if size in (1, 2, 4, 8) else None
    if unsigned is None:
        same = np.ascontiguousarray(actual).tobytes() == np.ascontiguousarray(expected).tobytes()
        if not same:
            raise AssertionError("the bytes differ")
        return
    a, e = np.ascontiguousarray(actual).view(unsigned), np.ascontiguousarray(expected).view(unsigned)
    bad = np.argwhere(a != e)
    if bad.size:
        first = [tuple(int(i) for i in index) for index in bad[:5]]
        shown = "; ".join(f"at {i}: {actual[i]} (bits {int(a[i]):#0{2 + 2 * size}x}) != {expected[i]} "
                          f"(bits {int(e[i]):#0{2 + 2 * size}x})" for i in first)
        raise AssertionError(f"{len(bad)} of {a.size} elements differ in their bits; {shown}")


def assert_within(actual, expected, tolerance, what: str = "") -> None:
    """Bit-exact where `tolerance` is None; else |actual - expected| <= tolerance (a number
    or one per element) element by element, NaN matching NaN and infinities themselves; an
    expected NaN with an infinite tolerance (a bound with no limit there: the exact result is
    undetermined) takes any value."""
    __tracebackhide__ = True
    if tolerance is None:
        assert_bit_equal(actual, expected)
        return
    actual, expected = _as_array(actual), _as_array(expected)
    if actual.dtype != expected.dtype or actual.shape != expected.shape:
        raise AssertionError(_kind_mismatch(actual, expected))
    with np.errstate(invalid="ignore"):  # a signaling NaN's cast, and inf - inf (NaN; g == w decides)
        g, w = actual.astype(np.float64), expected.astype(np.float64)
        tolerance = np.broadcast_to(np.asarray(tolerance, np.float64), w.shape)
        bad = ~((np.abs(g - w) <= tolerance) | (np.isnan(g) & np.isnan(w)) | (g == w)
                | (np.isnan(w) & np.isposinf(tolerance)))
    if bad.any():
        where = [tuple(int(i) for i in index) for index in np.argwhere(bad)[:5]]
        shown = "; ".join(f"at {i}: {g[i]} != {w[i]} (tolerance {tolerance[i]:.3g})" for i in where)
        raise AssertionError(f"{what + ': ' if what else ''}{int(bad.sum())} of {bad.size} elements outside "
                             f"the tolerance; {shown}")


def first_wrong(actual, expected, tolerance) -> str | None:
    """None where every actual array is within its tolerance of its expected one (as
    assert_within checks; lists, one per output), else the first wrong element and its
    values ("at (0, 3): 2.0 != 1.0 (tolerance 1e-06)")."""
    try:
        for got, want, tol in zip(actual, expected, tolerance, strict=True):
            assert_within(got, want, tol)
    except AssertionError as exc:
        return str(exc).split("; ", 1)[-1].split("; ")[0]
    return None
