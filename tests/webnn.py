"""WebNN conformance vectors (tests/data/webnn/, from web-platform-tests) as
gpudml cases.

Each WebNN case becomes a `WebnnCase` in the argument forms of
the examples of gpudml's operator specs (functional-API keywords), so the same case runs through
`reference.py` here and through the GPU functional API elsewhere:

- reduceX -> "reduce" {function, axes}; argMax/argMin -> "reduce" {function,
  axes: [axis], output_data_type}. The expected output is reshaped to DirectML's
  keep-rank shape (undoing keepDimensions=false); rank 0 is presented as [1];
  `axes: []` (reduce nothing) becomes a reduction over an appended size-1 axis.
- pad -> "padding" {start_padding, end_padding, mode, value}.
- slice -> "slice1" {offsets, sizes, strides}.
- reverse -> "slice1" with stride -1 over the whole of each reversed axis, and,
  where one DirectML operator can express it (at most one reversed axis), also
  "reverse_subsequences" with every length = the axis size.

What DirectML cannot express becomes a `Skipped` with the reason. Tolerances are
WPT's ULP counts; `ulp_distance` measures them the way WPT's harness does.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

import numpy as np

from gpudml.types import DataType, PaddingMode, ReduceFunction

DATA_DIR = Path(__file__).parent / "data" / "webnn"

FILES = [
    "argmax.json",
    "argmin.json",
    "pad.json",
    "reverse.json",
    "slice.json",
    "reduce_l1.json",
    "reduce_l2.json",
    "reduce_log_sum.json",
    "reduce_log_sum_exp.json",
    "reduce_max.json",
    "reduce_mean.json",
    "reduce_min.json",
    "reduce_product.json",
    "reduce_sum.json",
    "reduce_sum_square.json",
]

REDUCE_FUNCTIONS = {
    "reduceL1": ReduceFunction.L1,
    "reduceL2": ReduceFunction.L2,
    "reduceLogSum": ReduceFunction.LOG_SUM,
    "reduceLogSumExp": ReduceFunction.LOG_SUM_EXP,
    "reduceMax": ReduceFunction.MAX,
    "reduceMean": ReduceFunction.AVERAGE,
    "reduceMin": ReduceFunction.MIN,
    "reduceProduct": ReduceFunction.MULTIPLY,
    "reduceSum": ReduceFunction.SUM,
    "reduceSumSquare": ReduceFunction.SUM_SQUARE,
    "argMax": ReduceFunction.ARGMAX,
    "argMin": ReduceFunction.ARGMIN,
}

_F = ReduceFunction
_INTS = {"int32", "uint32", "int64", "uint64"}
_SMALL_INTS = {"int16", "int8", "uint16", "uint8"}
#: Input types DirectML's Reduce accepts per function at its highest level (its page's support tables).
REDUCE_INPUT_TYPES = {
    **dict.fromkeys([_F.AVERAGE, _F.L2, _F.LOG_SUM, _F.LOG_SUM_EXP], {"float32", "float16"}),
    **dict.fromkeys([_F.L1, _F.SUM_SQUARE, _F.SUM, _F.MULTIPLY], {"float32", "float16"} | _INTS),
    **dict.fromkeys([_F.MIN, _F.MAX, _F.ARGMIN, _F.ARGMAX], {"float32", "float16"} | _INTS | _SMALL_INTS),
}
ARG_OUTPUT_TYPES = {"int32", "int64", "uint32", "uint64"}

#: Cases whose WPT expectation is corrected here, with the reason.
_NAN_PAD_REASON = (
    "WPT expects 0 in the padded border; constant padding with a NaN value writes NaN "
    "(WebNN spec: cast(NaN) = NaN; DirectML: PaddingValue as given)"
)
CORRECTED = {"pad float32 2D tensor with options.value as NaN": _NAN_PAD_REASON}


class WebnnCase(NamedTuple):
    name: str
    kind: str  # "reduce" | "padding" | "slice1" | "reverse_subsequences"
    inputs: tuple  # numpy arrays, the operator's inputs
    args: dict  # functional-API keyword arguments (as in the specs' examples)
    expected: np.ndarray  # DirectML-shaped (keep-rank) expected output
    tolerance: int  # ULP


class Skipped(NamedTuple):
    name: str
    kind: str
    reason: str


# ----------------------------------------------------------------- loading


def _value(v):
    """A JSON scalar with WPT's special-value strings decoded."""
    if isinstance(v, str):
        return {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}[v]
    return v


def to_array(spec: dict) -> np.ndarray:
    """{shape, dataType, data} -> numpy, each value rounded to its dtype (as WPT does)."""
    dtype = np.dtype(spec["dataType"])
    data = [_value(v) for v in spec["data"]]
    if dtype.kind == "f":
        arr = np.array(data, dtype=np.float64).astype(dtype)
    else:
        arr = np.array(data, dtype=dtype)  # int64/uint64 stay exact: no float on the way
    return arr.reshape(spec["shape"])


def iter_cases(filename: str) -> Iterator[WebnnCase | Skipped]:
    """Every case of one vector file, mapped or skipped, in file order."""
    for raw in json.loads((DATA_DIR / filename).read_text()):
        (x,) = [to_array(s) for s in raw["inputs"].values()]
        expected = to_array(raw["expected"])
        tol = int(raw["tolerance"]["value"])
        op, name, opts = raw["op"], raw["name"], raw["options"]
        if op in REDUCE_FUNCTIONS:
            yield _reduce_case(name, REDUCE_FUNCTIONS[op], x, opts, expected, tol)
        elif op == "pad":
            yield _pad_case(name, x, opts, expected, tol)
        elif op == "slice":
            yield _slice_case(name, x, opts, expected, tol)
        elif op == "reverse":
            yield from _reverse_cases(name, x, opts, expected, tol)
        else:
            yield Skipped(name, op, f"no DirectML mapping for WebNN op {op!r}")


def load(filename: str) -> tuple[list[WebnnCase], list[Skipped]]:
    items = list(iter_cases(filename))
    return ([c for c in items if isinstance(c, WebnnCase)], [s for s in items if isinstance(s, Skipped)])


def summary(files=FILES) -> dict[str, dict]:
    """Per file: cases that run and skip reasons with their counts."""
    out = {}
    for f in files:
        cases, skipped = load(f)
        reasons: dict[str, int] = {}
        for s in skipped:
            reasons[s.reason] = reasons.get(s.reason, 0) + 1
        out[f] = {"ran": len(cases), "skipped": reasons}
    return out


# ----------------------------------------------------------------- mapping


def _rank_skip(name, kind, rank) -> Skipped | None:
    if rank > 8:
        return Skipped(name, kind, f"rank {rank}: DirectML tensors have at most 8 dimensions")
    return None


def _reduce_case(name, function, x, opts, expected, tol):
    dtype = x.dtype.name
    if dtype not in REDUCE_INPUT_TYPES[function]:
        return Skipped(name, "reduce", f"DirectML Reduce {function.name} does not take {dtype}")
    args = {"function": function}
    if function in (_F.ARGMAX, _F.ARGMIN):
        out_type = opts.get("outputDataType", "int32")
        if out_type not in ARG_OUTPUT_TYPES:
            return Skipped(name, "reduce", f"{function.name} cannot output {out_type}")
        args["output_data_type"] = DataType.coerce(out_type)
        axes = [opts["axis"]]
    else:
        axes = opts.get("axes")
    if x.ndim == 0:
        x = x.reshape(1)  # DirectML has no rank 0
    if axes is None:
        axes = list(range(x.ndim))
    elif not axes:
        # WebNN `axes: []` reduces nothing: f applied to each element alone, which is
        # a DirectML reduction over an appended size-1 axis.
        x = x.reshape(x.shape + (1,))
        axes = [x.ndim - 1]
    args["axes"] = list(axes)
    keep_shape = [1 if a in axes else n for a, n in enumerate(x.shape)]
    return _rank_skip(name, "reduce", x.ndim) or WebnnCase(
        name, "reduce", (x,), args, expected.reshape(keep_shape), tol
    )


_PAD_MODES = {
    "constant": PaddingMode.CONSTANT,
    "edge": PaddingMode.EDGE,
    "reflection": PaddingMode.REFLECTION,
    "symmetric": PaddingMode.SYMMETRIC,
}


def _pad_case(name, x, opts, expected, tol):
    mode = opts.get("mode", "constant")
    if mode not in _PAD_MODES:
        return Skipped(name, "padding", f"no DirectML padding mode for {mode!r}")
    value = _value(opts.get("value", 0))
    if isinstance(value, int) and float(np.float32(value)) != value:
        return Skipped(
            name,
            "padding",
            "integer pad value not exact in DML_PADDING's FLOAT PaddingValue (needs DML_PADDING1's typed scalar)",
        )
    args = {
        "start_padding": list(opts["beginningPadding"]),
        "end_padding": list(opts["endingPadding"]),
        "mode": _PAD_MODES[mode],
        "value": value,
    }
    if name in CORRECTED:
        expected = _nan_border(expected, x.shape, args["start_padding"])
    return _rank_skip(name, "padding", x.ndim) or WebnnCase(name, "padding", (x,), args, expected, tol)


def _nan_border(expected, in_shape, start) -> np.ndarray:
    """`expected` with its padded border set to NaN (see CORRECTED)."""
    fixed = np.full_like(expected, np.nan)
    inner = tuple(slice(s, s + n) for s, n in zip(start, in_shape, strict=True))
    fixed[inner] = expected[inner]
    return fixed


def _slice_case(name, x, opts, expected, tol):
    starts, sizes = list(opts["starts"]), list(opts["sizes"])
    strides = list(opts.get("strides", [1] * len(starts)))
    if x.ndim == 0:  # a no-op: present it as [1] with a one-element window
        x, starts, sizes, strides = x.reshape(1), [0], [1], [1]
        expected = expected.reshape(1)
    if any(s < 1 for s in strides):
        return Skipped(name, "slice1", f"strides {strides}: WebNN allows only positive ones")
    args = {"offsets": starts, "sizes": sizes, "strides": strides}
    return _rank_skip(name, "slice1", x.ndim) or WebnnCase(name, "slice1", (x,), args, expected, tol)


def _reverse_cases(name, x, opts, expected, tol):
    axes = opts.get("axes")
    axes = list(range(x.ndim)) if axes is None else list(axes)
    strides = [-1 if a in axes else 1 for a in range(x.ndim)]
    args = {"offsets": [0] * x.ndim, "sizes": list(x.shape), "strides": strides}
    yield _rank_skip(name, "slice1", x.ndim) or WebnnCase(name, "slice1", (x,), args, expected, tol)
    sub_name = f"{name} [as reverse_subsequences]"
    if len(axes) > 1:
        yield Skipped(
            sub_name,
            "reverse_subsequences",
            "reverses several axes; ReverseSubsequences reverses one axis per operator",
        )
        return
    axis = axes[0] if axes else 0
    shape = list(x.shape)
    shape[axis] = 1
    # Full-length sequences reverse the whole axis; lengths 0 change nothing (axes: []).
    lengths = np.full(shape, x.shape[axis] if axes else 0, dtype=np.uint32)
    yield WebnnCase(sub_name, "reverse_subsequences", (x,), {"sequence_lengths": lengths, "axis": axis}, expected, tol)


# ----------------------------------------------------------------- ULP


_FLOAT_BITS = {np.dtype(np.float16): np.uint16, np.dtype(np.float32): np.uint32, np.dtype(np.float64): np.uint64}


def _ordered_keys(a: np.ndarray) -> np.ndarray:
    """Float bit patterns read as sign-magnitude integers (WPT's ULP metric):
    adjacent floats differ by 1, +0 and -0 are both 0."""
    bits = a.view(_FLOAT_BITS[a.dtype])
    nbits = 8 * a.dtype.itemsize
    magnitude = bits & bits.dtype.type((1 << (nbits - 1)) - 1)
    negative = (bits >> bits.dtype.type(nbits - 1)) != 0
    if nbits == 64:  # differences of 63-bit magnitudes may overflow int64
        magnitude = magnitude.astype(object)
        return np.where(negative, -magnitude, magnitude)
    magnitude = magnitude.astype(np.int64)
    return np.where(negative, -magnitude, magnitude)


def ulp_distance(actual, expected) -> np.ndarray:
    """Element-wise ULP distance as float64: floats by their sign-magnitude bit
    patterns (both NaN -> 0, one NaN -> inf), integers by their exact difference."""
    actual, expected = np.asarray(actual), np.asarray(expected)
    if actual.dtype != expected.dtype or actual.shape != expected.shape:
        raise ValueError(f"ulp_distance: {actual.dtype}{actual.shape} vs {expected.dtype}{expected.shape}")
    if expected.dtype.kind != "f":
        diff = actual.astype(object) - expected.astype(object)
        return np.abs(diff).astype(np.float64)
    dist = np.abs(_ordered_keys(actual) - _ordered_keys(expected)).astype(np.float64)
    a_nan, e_nan = np.isnan(actual), np.isnan(expected)
    dist[a_nan & e_nan] = 0.0
    dist[a_nan ^ e_nan] = np.inf
    return dist


def assert_ulp_close(actual, expected, tolerance: int, name: str = "") -> None:
    """AssertionError naming the worst element if any is more than `tolerance` ULP off."""
    actual, expected = np.asarray(actual), np.asarray(expected)
    assert actual.dtype == expected.dtype, f"{name}: dtype {actual.dtype} != {expected.dtype}"
    assert actual.shape == expected.shape, f"{name}: shape {actual.shape} != {expected.shape}"
    dist = ulp_distance(actual, expected)
    if dist.size and dist.max() > tolerance:
        worst = np.unravel_index(int(np.argmax(dist)), dist.shape)
        raise AssertionError(
            f"{name}: {int((dist > tolerance).sum())} element(s) beyond {tolerance} ULP; worst at "
            f"{worst}: got {actual[worst]!r}, expected {expected[worst]!r} ({dist[worst]} ULP)"
        )
