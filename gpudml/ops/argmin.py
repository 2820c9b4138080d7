"""DML_ARGMIN_OPERATOR_DESC, ArgMax's twin for the smallest element: the same fields, rules,
tables (from FL 3_0; 64-bit inputs from FL 4_1) and kernels, all in ops/argminmax.py, with
the ARGMIN State. Here: its names, its table, its reference, its functional form and its
page's examples. docs/operators/argmin.md.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import functional
from . import argminmax
from .spec import Example, support_table

OP = "ArgMin"


@dataclass(frozen=True)
class ArgMinOperatorDesc(argminmax.ArgDesc):
    OP = OP
    FUNCTION = "ARGMIN"


#: The page's "Tensor support" tables (ops/argminmax.py ROWS).
SUPPORT = support_table(OP, argminmax.TENSORS, argminmax.ROWS)


def reference(x, axes=None, axis_direction="increasing", output_data_type="INT64") -> np.ndarray:
    """The index of the smallest element over `axes`, the first (INCREASING) or the last
    (DECREASING) of equal ones; NaN counts as the smallest, as numpy's argmin has it
    (argminmax.reference)."""
    return argminmax.reference(np.argmin, x, axes, axis_direction, output_data_type)


def argmin(x, axes=None, *, axis_direction="increasing", output_data_type="INT64", device=None):
    """DML_ARGMIN: the flat index of the smallest element over `axes` (None: all; one int or
    a list; negative ones count from the end, as in numpy), row-major over the reduced axes.
    The result keeps the rank, size 1 on the reduced axes. `axis_direction`: "increasing"
    (the first of equal smallest elements) or "decreasing" (the last); `output_data_type`:
    INT64, INT32, UINT64 or UINT32 (a DataType, its name or a numpy dtype)."""
    return functional.call(SPEC, device, [("x", x)], axes=axes, axis_direction=axis_direction,
                           output_data_type=output_data_type)


_PAGE = "ns-directml-dml_argmin_operator_desc.md"
_INPUT = np.array([[1, 2, 3], [3, 0, 4], [2, 5, 2]], np.float32)
_TIES = np.array([1, 2, 3, 2, 1], np.float32)
_U32 = {"output_data_type": "UINT32"}

SPEC = argminmax.spec(ArgMinOperatorDesc, SUPPORT, reference, argmin, (
    Example("argmin-1", _INPUT, {"axes": [0], **_U32}, np.array([[0, 1, 2]], np.uint32), _PAGE),
    Example("argmin-2", _INPUT, {"axes": [1], **_U32}, np.array([[0], [1], [0]], np.uint32), _PAGE),
    Example("argmin-3", _INPUT, {"axes": [0, 1], **_U32}, np.array([[4]], np.uint32), _PAGE),
    # The AxisDirection field's own examples (the page names no output type).
    Example("argmin-4", _TIES, {"axes": [0], "axis_direction": "increasing"}, np.array([0], np.int64), _PAGE),
    Example("argmin-5", _TIES, {"axes": [0], "axis_direction": "decreasing"}, np.array([4], np.int64), _PAGE),
))
