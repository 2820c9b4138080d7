"""DML_JOIN_OPERATOR_DESC (docs/operators/join.md): several input tensors concatenated along
one axis; the inverse of DML_SPLIT."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..kernels.movement.join_split import JOIN
from ..tensor_desc import TensorDesc, as_int
from ..types import F16, F32, I16, I32, TYPES_8, TYPES_11, U16, U32, FeatureLevel
from .base import check_parts, numpy_axis
from .spec import Call, Cli, CliArg, Example, OpSpec, support_table

OP = "Join"

SUPPORT = support_table(OP, ("input_tensors", "output_tensor"), [
    (FeatureLevel.FL_4_1, (1, 8), TYPES_11),
    (FeatureLevel.FL_3_0, (4, 5), TYPES_8),
    (FeatureLevel.FL_2_1, {4}, TYPES_8),
    (FeatureLevel.FL_1_0, {4}, {F32, F16, I32, I16, U32, U16}),
])


@dataclass(frozen=True)
class JoinOperatorDesc:
    input_tensors: tuple[TensorDesc, ...]  # InputCount = len(input_tensors)
    output_tensor: TensorDesc
    axis: int

    def __post_init__(self):
        if isinstance(self.input_tensors, list):  # (anything else is left for validate to name)
            object.__setattr__(self, "input_tensors", tuple(self.input_tensors))
        object.__setattr__(self, "axis", as_int(self.axis, f"{OP}: axis"))


def infer_output(input_tensors: list[TensorDesc], axis) -> JoinOperatorDesc:
    """The desc of `join(xs, axis)`: xs[0]'s sizes, the inputs' sizes on `axis` added up.
    A negative axis counts from the end, as in numpy (the desc takes DirectML's axis only)."""
    axis = numpy_axis(axis, input_tensors[0].rank, "join", "xs[0]")
    sizes = list(input_tensors[0].sizes)
    sizes[axis] = sum(t.sizes[axis] for t in input_tensors if t.rank > axis)  # (validate names a rank mismatch)
    return JoinOperatorDesc(tuple(input_tensors), TensorDesc(input_tensors[0].data_type, sizes), axis)


def validate(desc: JoinOperatorDesc, feature_level: FeatureLevel) -> None:
    check_parts(OP, SUPPORT, feature_level, ("output_tensor", desc.output_tensor),
                ("input_tensors", desc.input_tensors), "InputCount", desc.axis, parts_are_outputs=False)


# ---------------------------------------------------------------------------- reference
def reference(xs, axis: int) -> np.ndarray:
    """The arrays of `xs` one after the other along `axis` (negative: from the end); every
    other size must agree (ValueError otherwise, as numpy's concatenate raises)."""
    arrays = [np.asarray(x) for x in xs]
    if not arrays or len({a.ndim for a in arrays}) != 1 or not -arrays[0].ndim <= axis < arrays[0].ndim:
        raise ValueError(f"join: {len(arrays)} arrays of ranks {[a.ndim for a in arrays]} along axis {axis}")
    if len({a.dtype for a in arrays}) != 1:
        raise ValueError(f"join: the arrays' dtypes differ: {[str(a.dtype) for a in arrays]}")
    return np.concatenate(arrays, axis=axis)


# ---------------------------------------------------------------------------- API
def join(xs, axis, *, device=None):
    """DML_JOIN: the tensors of `xs` (a list of numpy arrays, Tensors or Expressions, one
    data type and rank) concatenated along `axis` (negative: from the end), as numpy's
    concatenate. Tensors in (the first one decides) give a Tensor out."""
    return Call([("xs", xs)], {"axis": axis}, device)


def arguments(desc: JoinOperatorDesc) -> dict:
    return {"axis": desc.axis}


def from_cli(x: TensorDesc, a: dict) -> JoinOperatorDesc:
    axis = numpy_axis(a["axis"] if a["axis"] is not None else x.rank - 1, x.rank, "--axis", "--shape")
    more = a["axis_sizes"] or (x.sizes[axis],)
    return infer_output([x] + [TensorDesc(x.data_type, x.sizes[:axis] + (n,) + x.sizes[axis + 1:]) for n in more],
                        axis)


_PAGE = "ns-directml-dml_join_operator_desc.md"


def _page_tensor(rows) -> np.ndarray:
    return np.array(rows, np.float32).reshape((1, 1) + np.shape(rows))


_TRIO = [_page_tensor([[1, 2], [3, 4]]), _page_tensor([[5, 6], [7, 8]]), _page_tensor([[9, 10], [11, 12]])]

SPEC = OpSpec(
    name=OP, key="join", desc=JoinOperatorDesc, support=SUPPORT,
    infer_output=infer_output, validate=validate,
    reference=reference, functional=join, tensors=("xs",), tensor_lists=("xs",), arguments=arguments,
    planner=JOIN,
    cli=Cli((CliArg("--axis", "the axis to join along (default: the last)", "number"),
             CliArg("--axis-sizes", "sizes on the axis of the inputs after the first (--shape), comma-separated; "
                                    "one input each (default: one more like the first)")),
            from_cli, "--shape 1,1,2,3 --axis 3 --axis-sizes 4,2"),
    page="DML_JOIN_OPERATOR_DESC",
    examples=(
        Example("join-1", [_page_tensor([[1, 2, 3], [4, 5, 6]]), _page_tensor([[7, 8, 9, 10], [11, 12, 13, 14]])],
                {"axis": 3}, _page_tensor([[1, 2, 3, 7, 8, 9, 10], [4, 5, 6, 11, 12, 13, 14]]), _PAGE),
        Example("join-2", _TRIO, {"axis": 1},
                np.array([[[1, 2], [3, 4]], [[5, 6], [7, 8]], [[9, 10], [11, 12]]], np.float32).reshape(1, 3, 2, 2),
                _PAGE),
        Example("join-3", _TRIO, {"axis": 2}, _page_tensor([[1, 2], [3, 4], [5, 6], [7, 8], [9, 10], [11, 12]]),
                _PAGE),
        Example("join-4", _TRIO, {"axis": 3}, _page_tensor([[1, 2, 5, 6, 9, 10], [3, 4, 7, 8, 11, 12]]), _PAGE),
    ),
)
