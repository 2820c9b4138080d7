"""DML_CUMULATIVE_SUMMATION_OPERATOR_DESC (introduced at FL 2_1): the running sum of the
elements along one axis, from either end, each output including or excluding its own
element. Semantics and precision: ops/cumulative.py; kernels: ops/scan.py."""

from __future__ import annotations

from dataclasses import dataclass

from .. import functional
from ..tensor_desc import TensorDesc
from ..types import F16, F32, I32, I64, U32, U64, AxisDirection, FeatureLevel
from . import cumulative
from .spec import support_table

OP = "CumulativeSummation"

#: The page's "Tensor support" tables (input and output alike).
SUPPORT = support_table(OP, ("input_tensor", "output_tensor"), [
    (FeatureLevel.FL_5_0, (1, 8), {F32, F16, I64, I32, U64, U32}),
    (FeatureLevel.FL_4_0, (1, 8), {F32, F16, I32, U32}),
    (FeatureLevel.FL_2_1, {4}, {F32, F16, I32, U32}),
])

_EXCLUSIVE = "has_exclusive_sum"
_INFO = cumulative.Cumulative(OP, "cumulative_summation", "sum", _EXCLUSIVE, "cumulative_sum", SUPPORT)


@dataclass(frozen=True)
class CumulativeSummationOperatorDesc:
    input_tensor: TensorDesc
    output_tensor: TensorDesc
    axis: int
    axis_direction: AxisDirection
    has_exclusive_sum: bool

    def __post_init__(self):
        cumulative.normalize_desc(self, OP, _EXCLUSIVE)


def cumulative_sum(x, axis, *, axis_direction="increasing", exclusive=False, device=None):
    """DML_CUMULATIVE_SUMMATION along `axis` (negative counts from the end, as in numpy):
    output p is the sum of x's elements up to p (`exclusive`: before p), in the order of
    `axis_direction` ("increasing", or "decreasing": from the axis' end; an AxisDirection
    or its value too). float16 sums in float32; integers wrap in their width."""
    exclusive = int(cumulative.as_bool(exclusive, "cumulative_sum: exclusive"))
    return functional.call(SPEC, device, [("x", x)], axis=axis, axis_direction=axis_direction, exclusive=exclusive)


SPEC = cumulative.spec(
    _INFO, CumulativeSummationOperatorDesc, cumulative_sum, page="DML_CUMULATIVE_SUMMATION_OPERATOR_DESC",
    examples=cumulative.page_examples(
        "cumulative_summation", "ns-directml-dml_cumulative_summation_operator_desc.md", (
            (3, "increasing", False, [[2, 3, 6, 11], [3, 11, 18, 21], [9, 15, 17, 21]]),
            (3, "increasing", True, [[0, 2, 3, 6], [0, 3, 11, 18], [0, 9, 15, 17]]),
            (3, "decreasing", False, [[11, 9, 8, 5], [21, 18, 10, 3], [21, 12, 6, 4]]),
            (2, "increasing", False, [[2, 1, 3, 5], [5, 9, 10, 8], [14, 15, 12, 12]]),
        )),
)
