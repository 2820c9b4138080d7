"""Every worked example of the seed DirectML pages, as data.

Used by `gpudml examples` (run on the GPU, compare with `expected`) and by the
tests (run through `reference.py`). Inputs and outputs are transcribed from the
pages with the page's sizes as shapes; `args` are keyword arguments of the
functional API (`FUNCTIONAL_NAME[operator]` names the function). Page typos
(SPEC / seeds README) are noted where an example is affected.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from . import reference
from .types import PaddingMode, ReduceFunction

#: SeedExample.operator -> the functional API function that runs it.
FUNCTIONAL_NAME = {
    "slice1": "slice",
    "padding": "pad",
    "reverse_subsequences": "reverse_subsequences",
    "reduce": "reduce",
}


@dataclass(frozen=True)
class SeedExample:
    name: str
    operator: str  # "slice1" | "padding" | "reverse_subsequences" | "reduce"
    input: np.ndarray
    args: dict = field(repr=False)
    expected: np.ndarray
    source: str


def _f32(rows, shape) -> np.ndarray:
    return np.array(rows, dtype=np.float32).reshape(shape)


# ---------------------------------------------------------------- Slice1 (003)

_SLICE_SOURCE = "003_6bb030eeb1b9e3ae.txt"
_SLICE_INPUT = _f32(range(1, 17), (1, 1, 4, 4))

_SLICE = [
    SeedExample(
        "slice1-1",
        "slice1",
        _SLICE_INPUT,
        {"offsets": [0, 0, 0, 1], "sizes": [1, 1, 4, 3], "strides": [1, 1, 2, 2]},
        _f32([[2, 4], [10, 12]], (1, 1, 2, 2)),
        _SLICE_SOURCE,
    ),
    # The page's text says InputWindowSizes[0] where [2] is meant; the numbers are right.
    SeedExample(
        "slice1-2",
        "slice1",
        _SLICE_INPUT,
        {"offsets": [0, 0, 0, 1], "sizes": [1, 1, 4, 3], "strides": [1, 1, -2, 2]},
        _f32([[14, 16], [6, 8]], (1, 1, 2, 2)),
        _SLICE_SOURCE,
    ),
]

# --------------------------------------------------------------- Padding (001)

_PAD_SOURCE = "001_1509160903300232.txt"
_PAD_INPUT = _f32([[1, 2, 3, 4], [5, 6, 7, 8], [1, 2, 3, 4], [5, 6, 7, 8]], (1, 1, 4, 4))
_PAD_ARGS = {"start_padding": [0, 0, 1, 2], "end_padding": [0, 0, 3, 4]}

_PAD_OUTPUTS = {
    # Example 1 misses a comma after its first row on the page; values as printed.
    (PaddingMode.CONSTANT, 9.0): [
        [9, 9, 9, 9, 9, 9, 9, 9, 9, 9],
        [9, 9, 1, 2, 3, 4, 9, 9, 9, 9],
        [9, 9, 5, 6, 7, 8, 9, 9, 9, 9],
        [9, 9, 1, 2, 3, 4, 9, 9, 9, 9],
        [9, 9, 5, 6, 7, 8, 9, 9, 9, 9],
        [9, 9, 9, 9, 9, 9, 9, 9, 9, 9],
        [9, 9, 9, 9, 9, 9, 9, 9, 9, 9],
        [9, 9, 9, 9, 9, 9, 9, 9, 9, 9],
    ],
    (PaddingMode.EDGE, 0.0): [
        [1, 1, 1, 2, 3, 4, 4, 4, 4, 4],
        [1, 1, 1, 2, 3, 4, 4, 4, 4, 4],
        [5, 5, 5, 6, 7, 8, 8, 8, 8, 8],
        [1, 1, 1, 2, 3, 4, 4, 4, 4, 4],
        [5, 5, 5, 6, 7, 8, 8, 8, 8, 8],
        [5, 5, 5, 6, 7, 8, 8, 8, 8, 8],
        [5, 5, 5, 6, 7, 8, 8, 8, 8, 8],
        [5, 5, 5, 6, 7, 8, 8, 8, 8, 8],
    ],
    (PaddingMode.REFLECTION, 0.0): [
        [7, 6, 5, 6, 7, 8, 7, 6, 5, 6],
        [3, 2, 1, 2, 3, 4, 3, 2, 1, 2],
        [7, 6, 5, 6, 7, 8, 7, 6, 5, 6],
        [3, 2, 1, 2, 3, 4, 3, 2, 1, 2],
        [7, 6, 5, 6, 7, 8, 7, 6, 5, 6],
        [3, 2, 1, 2, 3, 4, 3, 2, 1, 2],
        [7, 6, 5, 6, 7, 8, 7, 6, 5, 6],
        [3, 2, 1, 2, 3, 4, 3, 2, 1, 2],
    ],
    # From DML_FEATURE_LEVEL_3_0.
    (PaddingMode.SYMMETRIC, 0.0): [
        [2, 1, 1, 2, 3, 4, 4, 3, 2, 1],
        [2, 1, 1, 2, 3, 4, 4, 3, 2, 1],
        [6, 5, 5, 6, 7, 8, 8, 7, 6, 5],
        [2, 1, 1, 2, 3, 4, 4, 3, 2, 1],
        [6, 5, 5, 6, 7, 8, 8, 7, 6, 5],
        [6, 5, 5, 6, 7, 8, 8, 7, 6, 5],
        [2, 1, 1, 2, 3, 4, 4, 3, 2, 1],
        [6, 5, 5, 6, 7, 8, 8, 7, 6, 5],
    ],
}

_PADDING = [
    SeedExample(
        f"padding-{i}",
        "padding",
        _PAD_INPUT,
        {**_PAD_ARGS, "mode": mode, "value": value},
        _f32(rows, (1, 1, 8, 10)),
        _PAD_SOURCE,
    )
    for i, ((mode, value), rows) in enumerate(_PAD_OUTPUTS.items(), start=1)
]

# ----------------------------------------------------- ReverseSubsequences (000, 002)

# Both pages (000 current, 002 older) carry the same two examples; 000 is cited.
_REVERSE_SOURCE = "000_27b19467a3c16f5b.txt"
_REVERSE_INPUT = _f32(range(1, 13), (1, 1, 3, 4))

_REVERSE = [
    SeedExample(
        "reverse_subsequences-1",
        "reverse_subsequences",
        _REVERSE_INPUT,
        {"sequence_lengths": np.array([2, 4, 3], np.uint32).reshape(1, 1, 3, 1), "axis": 3},
        _f32([[2, 1, 3, 4], [8, 7, 6, 5], [11, 10, 9, 12]], (1, 1, 3, 4)),
        _REVERSE_SOURCE,
    ),
    # Lengths 1 and 0 are no-ops (the page's comment).
    SeedExample(
        "reverse_subsequences-2",
        "reverse_subsequences",
        _REVERSE_INPUT,
        {"sequence_lengths": np.array([2, 3, 1, 0], np.uint32).reshape(1, 1, 1, 4), "axis": 2},
        _f32([[5, 10, 3, 4], [1, 6, 7, 8], [9, 2, 11, 12]], (1, 1, 3, 4)),
        _REVERSE_SOURCE,
    ),
]

# ---------------------------------------------------------------- Reduce (004)

_REDUCE_SOURCE = "004_39588914205b92fc.txt"
_REDUCE_INPUT = _f32([[1, 2, 3], [3, 0, 4], [2, 4, 2]], (3, 3))

# The page has only these three SUM examples (no ARGMAX/ARGMIN or other function).
_REDUCE = [
    SeedExample(
        "reduce-1",
        "reduce",
        _REDUCE_INPUT,
        {"function": ReduceFunction.SUM, "axes": [0]},
        _f32([[6, 6, 9]], (1, 3)),
        _REDUCE_SOURCE,
    ),
    SeedExample(
        "reduce-2",
        "reduce",
        _REDUCE_INPUT,
        {"function": ReduceFunction.SUM, "axes": [1]},
        _f32([[6], [7], [8]], (3, 1)),
        _REDUCE_SOURCE,
    ),
    # The page's comment lists a 5 where the input holds a 4; its sum, 21, is right.
    SeedExample(
        "reduce-3",
        "reduce",
        _REDUCE_INPUT,
        {"function": ReduceFunction.SUM, "axes": [0, 1]},
        _f32([[21]], (1, 1)),
        _REDUCE_SOURCE,
    ),
]

#: All seed examples, in page order per operator.
SEED_EXAMPLES: list[SeedExample] = _SLICE + _PADDING + _REVERSE + _REDUCE


def call_reference(operator: str, x, args: dict) -> np.ndarray:
    """Run `reference.py` on one input with functional-API-style `args`."""
    if operator == "slice1":
        return reference.slice1(
            x, args["offsets"], args["sizes"], args.get("strides"), output_sizes=args.get("output_sizes")
        )
    if operator == "padding":
        return reference.padding(
            x,
            args["start_padding"],
            args["end_padding"],
            args.get("mode", PaddingMode.CONSTANT),
            args.get("value", 0.0),
        )
    if operator == "reverse_subsequences":
        return reference.reverse_subsequences(x, args["sequence_lengths"], args["axis"])
    if operator == "reduce":
        return reference.reduce(x, args["function"], args.get("axes"), args.get("output_data_type"))
    raise ValueError(f"unknown operator {operator!r}")


def run_reference(example: SeedExample) -> np.ndarray:
    """The example's output as computed by `reference.py`."""
    return call_reference(example.operator, example.input, example.args)
