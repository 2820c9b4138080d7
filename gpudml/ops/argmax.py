"""DML_ARGMAX_OPERATOR_DESC: the index of the largest element over one or more axes, the
first or the last one of equal elements (AxisDirection). Introduced at FL 3_0; 64-bit
inputs from FL 4_1. Everything but the names, the table and the page's examples is
shared with ArgMin (ops/argminmax.py); the kernels are the reduction planner's
(ops/reduction.py). docs/operators/argmax.md: semantics and the choices gpudml made.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import functional
from . import argminmax
from .spec import Example, support_table

OP = "ArgMax"


@dataclass(frozen=True)
class ArgMaxOperatorDesc(argminmax.ArgDesc):
    OP = OP
    FUNCTION = "ARGMAX"


#: The page's "Tensor support" tables (ops/argminmax.py ROWS).
SUPPORT = support_table(OP, argminmax.TENSORS, argminmax.ROWS)


def reference(x, axes=None, axis_direction="increasing", output_data_type="INT64") -> np.ndarray:
    """The index of the largest element over `axes`, the first (INCREASING) or the last
    (DECREASING) of equal ones; NaN counts as the largest (argminmax.reference)."""
    return argminmax.reference(np.argmax, x, axes, axis_direction, output_data_type)


def argmax(x, axes=None, *, axis_direction="increasing", output_data_type="INT64", device=None):
    """DML_ARGMAX: the flat index of the largest element over `axes` (None: all; one int or
    a list; negative ones count from the end, as in numpy), row-major over the reduced axes.
    The result keeps the rank, size 1 on the reduced axes. `axis_direction`: "increasing"
    (the first of equal largest elements) or "decreasing" (the last); `output_data_type`:
    INT64, INT32, UINT64 or UINT32 (a DataType, its name or a numpy dtype)."""
    return functional.call(SPEC, device, [("x", x)], axes=axes, axis_direction=axis_direction,
                           output_data_type=output_data_type)


_PAGE = "ns-directml-dml_argmax_operator_desc.md"
_INPUT = np.array([[1, 2, 3], [3, 0, 4], [2, 5, 2]], np.float32)
_TIES = np.array([3, 2, 1, 2, 3], np.float32)
_U32 = {"output_data_type": "UINT32"}

SPEC = argminmax.spec(ArgMaxOperatorDesc, SUPPORT, reference, argmax, (
    Example("argmax-1", _INPUT, {"axes": [0], **_U32}, np.array([[1, 2, 1]], np.uint32), _PAGE),
    Example("argmax-2", _INPUT, {"axes": [1], **_U32}, np.array([[2], [2], [1]], np.uint32), _PAGE),
    Example("argmax-3", _INPUT, {"axes": [0, 1], **_U32}, np.array([[7]], np.uint32), _PAGE),
    # The AxisDirection field's own examples (the page names no output type).
    Example("argmax-4", _TIES, {"axes": [0], "axis_direction": "increasing"}, np.array([0], np.int64), _PAGE),
    Example("argmax-5", _TIES, {"axes": [0], "axis_direction": "decreasing"}, np.array([4], np.int64), _PAGE),
))
