"""DML_SPLIT_OPERATOR_DESC (docs/operators/split.md): one input tensor cut along one axis
into several output tensors; the inverse of DML_JOIN."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..kernels.movement.join_split import SPLIT
from ..tensor_desc import TensorDesc, as_int, as_int_tuple, positive_sizes
from ..types import F16, F32, I16, I32, TYPES_8, TYPES_11, U16, U32, FeatureLevel
from .base import check_parts, numpy_axis
from .spec import Call, Cli, CliArg, Example, OpSpec, support_table

OP = "Split"

SUPPORT = support_table(OP, ("input_tensor", "output_tensors"), [
    (FeatureLevel.FL_4_1, (1, 8), TYPES_11),
    (FeatureLevel.FL_3_0, (1, 8), TYPES_8),
    (FeatureLevel.FL_2_1, {4}, TYPES_8),
    (FeatureLevel.FL_1_0, {4}, {F32, F16, I32, I16, U32, U16}),
])


@dataclass(frozen=True)
class SplitOperatorDesc:
    input_tensor: TensorDesc
    output_tensors: tuple[TensorDesc, ...]  # OutputCount = len(output_tensors)
    axis: int

    def __post_init__(self):
        if isinstance(self.output_tensors, list):  # (anything else is left for validate to name)
            object.__setattr__(self, "output_tensors", tuple(self.output_tensors))
        object.__setattr__(self, "axis", as_int(self.axis, f"{OP}: axis"))


def infer_output(input_tensor: TensorDesc, axis, sizes) -> SplitOperatorDesc:
    """The desc of `split(x, axis, sizes)`: one output per entry of `sizes`, x's sizes with
    that size on `axis`. A negative axis counts from the end, as in numpy (the desc takes
    DirectML's axis only)."""
    axis = numpy_axis(axis, input_tensor.rank, "split", "x")
    sizes = positive_sizes(as_int_tuple(sizes, "split: sizes"), "split: sizes")
    rest = input_tensor.sizes
    outputs = tuple(TensorDesc(input_tensor.data_type, rest[:axis] + (n,) + rest[axis + 1:]) for n in sizes)
    return SplitOperatorDesc(input_tensor, outputs, axis)


def validate(desc: SplitOperatorDesc, feature_level: FeatureLevel) -> None:
    check_parts(OP, SUPPORT, feature_level, ("input_tensor", desc.input_tensor),
                ("output_tensors", desc.output_tensors), "OutputCount", desc.axis, parts_are_outputs=True)


# ---------------------------------------------------------------------------- reference
def reference(x, axis: int, sizes) -> list[np.ndarray]:
    """x cut along `axis` (negative: from the end) into consecutive pieces of `sizes`
    elements (each >= 1, adding up to x's size there; ValueError otherwise): new arrays."""
    x = np.asarray(x)
    sizes = [int(n) for n in sizes]
    if not -x.ndim <= axis < x.ndim or not sizes or min(sizes) < 1 or sum(sizes) != x.shape[axis]:
        raise ValueError(f"split: sizes {sizes} along axis {axis} of an array of shape {list(x.shape)}")
    return [piece.copy() for piece in np.split(x, np.cumsum(sizes)[:-1], axis=axis)]


# ---------------------------------------------------------------------------- API
def split(x, axis, sizes, *, device=None):
    """DML_SPLIT: x cut along `axis` (negative: from the end) into a list of tensors of
    `sizes` elements there (each >= 1, adding up to x's size on the axis): numpy arrays,
    or Tensors for a Tensor (Expressions for an Expression); always a list, one output too."""
    return Call([("x", x)], {"axis": axis, "sizes": sizes}, device)


def arguments(desc: SplitOperatorDesc) -> dict:
    return {"axis": desc.axis, "sizes": tuple(t.sizes[desc.axis] for t in desc.output_tensors)}


def from_cli(x: TensorDesc, a: dict) -> SplitOperatorDesc:
    axis = numpy_axis(a["axis"] if a["axis"] is not None else x.rank - 1, x.rank, "--axis", "--shape")
    n = x.sizes[axis]
    return infer_output(x, axis, a["sizes"] or ((n // 2, n - n // 2) if n > 1 else (n,)))


_PAGE = "ns-directml-dml_split_operator_desc.md"


def _page_tensor(rows) -> np.ndarray:
    return np.array(rows, np.float32).reshape((1, 1) + np.shape(rows))


_INPUT = _page_tensor([[1, 2], [3, 4], [5, 6], [7, 8], [9, 10], [11, 12]])

SPEC = OpSpec(
    name=OP, key="split", desc=SplitOperatorDesc, support=SUPPORT,
    infer_output=infer_output, validate=validate,
    reference=reference, functional=split, tensors=("x",), arguments=arguments,
    planner=SPLIT,
    cli=Cli((CliArg("--axis", "the axis to split along (default: the last)", "number"),
             CliArg("--sizes", "each output's size on the axis, comma-separated (default: two halves)")),
            from_cli, "--shape 1,1,6,2 --axis 2 --sizes 2,1,3"),
    page="DML_SPLIT_OPERATOR_DESC",
    examples=(
        Example("split-1", _INPUT, {"axis": 2, "sizes": [2, 1, 3]},
                [_page_tensor([[1, 2], [3, 4]]), _page_tensor([[5, 6]]), _page_tensor([[7, 8], [9, 10], [11, 12]])],
                _PAGE),
        Example("split-2", _INPUT, {"axis": 3, "sizes": [1, 1]},
                [_page_tensor([[1], [3], [5], [7], [9], [11]]), _page_tensor([[2], [4], [6], [8], [10], [12]])], _PAGE),
    ),
)
