"""DML_CUMULATIVE_PRODUCT_OPERATOR_DESC (introduced at FL 3_1): the running product of the
elements along one axis, from either end, each output including or excluding its own
element. Semantics and precision: ops/cumulative.py; kernels: ops/scan.py."""

from __future__ import annotations

from dataclasses import dataclass

from .. import functional
from ..tensor_desc import TensorDesc
from ..types import F16, F32, I32, I64, U32, U64, AxisDirection, FeatureLevel
from . import cumulative
from .spec import support_table

OP = "CumulativeProduct"

#: The page's "Tensor support" tables (input and output alike).
SUPPORT = support_table(OP, ("input_tensor", "output_tensor"), [
    (FeatureLevel.FL_5_0, (1, 8), {F32, F16, I64, I32, U64, U32}),
    (FeatureLevel.FL_4_0, (1, 8), {F32, F16, I32, U32}),
    (FeatureLevel.FL_3_1, {4}, {F32, F16, I32, U32}),
])

_EXCLUSIVE = "has_exclusive_product"
_INFO = cumulative.Cumulative(OP, "cumulative_product", "product", _EXCLUSIVE, "cumulative_product", SUPPORT)


@dataclass(frozen=True)
class CumulativeProductOperatorDesc:
    input_tensor: TensorDesc
    output_tensor: TensorDesc
    axis: int
    axis_direction: AxisDirection
    has_exclusive_product: bool

    def __post_init__(self):
        cumulative.normalize_desc(self, OP, _EXCLUSIVE)


def cumulative_product(x, axis, *, axis_direction="increasing", exclusive=False, device=None):
    """DML_CUMULATIVE_PRODUCT along `axis` (negative counts from the end, as in numpy):
    output p is the product of x's elements up to p (`exclusive`: before p), in the order
    of `axis_direction` ("increasing", or "decreasing": from the axis' end; an
    AxisDirection or its value too). float16 multiplies in float32; integers wrap in
    their width."""
    exclusive = int(cumulative.as_bool(exclusive, "cumulative_product: exclusive"))
    return functional.call(SPEC, device, [("x", x)], axis=axis, axis_direction=axis_direction, exclusive=exclusive)


SPEC = cumulative.spec(
    _INFO, CumulativeProductOperatorDesc, cumulative_product, page="DML_CUMULATIVE_PRODUCT_OPERATOR_DESC",
    examples=cumulative.page_examples(
        "cumulative_product", "ns-directml-dml_cumulative_product_operator_desc.md", (
            (3, "increasing", False, [[2, 2, 6, 30], [3, 24, 168, 504], [9, 54, 108, 432]]),
            (3, "increasing", True, [[1, 2, 2, 6], [1, 3, 24, 168], [1, 9, 54, 108]]),
            (3, "decreasing", False, [[30, 15, 15, 5], [504, 168, 21, 3], [432, 48, 8, 4]]),
            (2, "increasing", False, [[2, 1, 3, 5], [6, 8, 21, 15], [54, 48, 42, 60]]),
        )),
)
