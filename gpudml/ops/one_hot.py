"""DML_ONE_HOT_OPERATOR_DESC (docs/operators/one_hot.md; the page is copied under
tests/data/pages/): along `axis`, every sequence of the output is OffValue except the
element its index selects, which is OnValue. OffValue is ValuesTensor's element 0,
OnValue its element 1 along its fastest-changing dimension of size > 1. A negative index
of a signed type counts from the end of the sequence; an index outside the sequence
leaves the whole sequence OffValue."""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial

import numpy as np

from ..errors import InvalidArgumentError
from ..kernels.base import ProblemPlanner
from ..kernels.one_hot import FAMILY, OneHot
from ..tensor_desc import TensorDesc, as_int, check_same_rank, check_tensor_desc
from ..types import F16, F32, I32, I64, TYPES_8, U32, U64, DataType, FeatureLevel
from .base import numpy_axis
from .gather import indices_array
from .scatter_elements import index_coordinates, index_sample
from .spec import Call, Cli, CliArg, Example, OpSpec, random_buffer, support_table

OP = "OneHot"
INDEX_TYPES = frozenset({I64, I32, U64, U32})

SUPPORT = support_table(OP, ("indices_tensor", "values_tensor", "output_tensor"), [
    (FeatureLevel.FL_3_0, (1, 8), INDEX_TYPES, TYPES_8, TYPES_8),
    (FeatureLevel.FL_2_1, {4}, {U32}, TYPES_8, TYPES_8),
    (FeatureLevel.FL_2_0, {4}, {U32}, {F32, F16}, {F32, F16}),
])


@dataclass(frozen=True)
class OneHotOperatorDesc:
    indices_tensor: TensorDesc
    values_tensor: TensorDesc
    output_tensor: TensorDesc
    axis: int

    def __post_init__(self):
        object.__setattr__(self, "axis", as_int(self.axis, f"{OP}: axis"))


def infer_output(indices: TensorDesc, values: TensorDesc, output_length, axis=-1) -> OneHotOperatorDesc:
    """The desc of `one_hot(indices, values, output_length, axis)`: the output is the
    indices' sizes with `output_length` on `axis` (negative: from the end), the values' type."""
    axis = numpy_axis(axis, indices.rank, "one_hot", "indices")
    length = as_int(output_length, "one_hot: output_length")
    sizes = [length if d == axis else n for d, n in enumerate(indices.sizes)]
    if length < 1:
        raise InvalidArgumentError(f"one_hot: output_length = {length} must be at least 1")
    return OneHotOperatorDesc(indices, values, TensorDesc(values.data_type, sizes), axis)


def validate(desc: OneHotOperatorDesc, feature_level: FeatureLevel) -> None:
    indices, values, out = desc.indices_tensor, desc.values_tensor, desc.output_tensor
    named = {"indices_tensor": indices, "values_tensor": values, "output_tensor": out}
    for field, td in named.items():
        check_tensor_desc(OP, field, td, is_output=field == "output_tensor")
    rank = check_same_rank(OP, named)
    if out.data_type != values.data_type:
        raise InvalidArgumentError(f"{OP}: output_tensor.data_type {out.data_type.name} must equal "
                                   f"values_tensor.data_type {values.data_type.name}")
    SUPPORT.check(feature_level, rank, {f: td.data_type for f, td in named.items()})
    if not 0 <= desc.axis < rank:
        raise InvalidArgumentError(f"{OP}: axis = {desc.axis} must be less than IndicesTensor.DimensionCount {rank}")
    for d in range(rank):
        want = 1 if d == desc.axis else out.sizes[d]
        if indices.sizes[d] != want:
            rule = f"1 (the axis {desc.axis})" if d == desc.axis else f"output_tensor.sizes[{d}] = {out.sizes[d]}"
            raise InvalidArgumentError(f"{OP}: indices_tensor.sizes[{d}] = {indices.sizes[d]} must be {rule}")
    if values.element_count < 2:
        raise InvalidArgumentError(f"{OP}: values_tensor.sizes {list(values.sizes)} must hold at least two elements "
                                   f"(OffValue and OnValue)")


def on_axis(sizes) -> int:
    """The values' fastest-changing dimension of size > 1 (OnValue is element 1 along it)."""
    return max(d for d, n in enumerate(sizes) if n > 1)


def problem(desc: OneHotOperatorDesc) -> OneHot:
    values = desc.values_tensor
    on = values.effective_strides[on_axis(values.sizes)]
    return OneHot(OP, desc.indices_tensor, values, desc.output_tensor, desc.axis, on)


def reference(indices, values, output_length, axis=-1) -> np.ndarray:
    """OffValue (values' element 0) everywhere but where the coordinate on `axis` is the
    sequence's index (a signed one below 0 from the end; one outside the sequence selects
    nothing): OnValue (values' element 1 in row-major order: along its last axis of size > 1)."""
    indices, values = np.asarray(indices), np.asarray(values)
    rank = indices.ndim
    axis = int(axis) % rank
    n = int(output_length)
    coords, inside = index_coordinates(indices, n)
    shape = [1] * rank
    shape[axis] = n
    hot = inside & (coords == np.arange(n).reshape(shape))
    flat = values.reshape(-1)
    return np.where(hot, flat[1], flat[0]).astype(values.dtype)


def one_hot(indices, values, output_length, axis=-1, *, device=None):
    """DML_ONE_HOT: OffValue (values' element 0) everywhere, OnValue (values' element 1
    along its last axis of size > 1) where the coordinate on `axis` (negative: from the
    end) is the sequence's index. indices (INT32, INT64, UINT32, UINT64, or smaller
    integers widened) has the output's sizes with 1 on `axis`; values (at least two
    elements) has its DimensionCount and gives the output's type; the output has
    `output_length` on `axis`. A negative index of a signed type counts from the end; an
    index outside the sequence leaves it all OffValue."""
    return Call([("indices", indices, partial(indices_array, where="one_hot")), ("values", values)],
                {"output_length": output_length, "axis": axis}, device)


def arguments(desc: OneHotOperatorDesc) -> dict:
    return {"output_length": desc.output_tensor.sizes[desc.axis], "axis": desc.axis}


def sample(desc: OneHotOperatorDesc, rng) -> list:
    """Indices mostly inside the sequence; random value bits."""
    indices = desc.indices_tensor
    return [index_sample(indices.data_type, desc.output_tensor.sizes[desc.axis], indices.required_elements, rng),
            random_buffer(desc.values_tensor, rng)]


def from_cli(x: TensorDesc, a: dict) -> OneHotOperatorDesc:
    """--shape and --dtype are the output's: the indices are its sizes with 1 on the axis,
    of --indices-dtype; the values [1, ..., 1, 2] of the output's type."""
    axis = a["axis"] if a["axis"] is not None else x.rank - 1
    axis = axis + x.rank if axis < 0 else axis
    indices = TensorDesc(DataType.coerce(a["indices_dtype"], "--indices-dtype"),
                         [1 if d == axis else n for d, n in enumerate(x.sizes)])
    values = TensorDesc(x.data_type, [1] * (x.rank - 1) + [2])
    return infer_output(indices, values, x.sizes[axis] if 0 <= axis < x.rank else 1, axis)


_SOURCE = "ns-directml-dml_one_hot_operator_desc.md"  # tests/data/pages/
_01 = np.array([[[[0, 1]]]], np.float32)
_COLUMN = np.array([[[[0], [3], [2]]]], np.uint32)

SPEC = OpSpec(
    name=OP, key="one_hot", desc=OneHotOperatorDesc, support=SUPPORT,
    infer_output=infer_output, validate=validate, reference=reference, functional=one_hot,
    tensors=("indices", "values"), arguments=arguments, sample=sample, planner=ProblemPlanner(problem, FAMILY),
    cli=Cli((CliArg("--axis", "Axis: the axis of the sequences (default: the last)", "number"),
             CliArg("--indices-dtype", "IndicesTensor type: UINT32, INT32, UINT64 or INT64", "str", "UINT32")),
            from_cli, "--shape 64,1000 --axis 1 --indices-dtype INT64"),
    page="DML_ONE_HOT_OPERATOR_DESC",
    examples=(
        Example("one_hot-1", _COLUMN, {"values": _01, "output_length": 4, "axis": 3},
                np.array([[[[1, 0, 0, 0], [0, 0, 0, 1], [0, 0, 1, 0]]]], np.float32), _SOURCE),
        Example("one_hot-2", np.array([[[[0, 2, 1, 0]]]], np.uint32), {"values": _01, "output_length": 3, "axis": 2},
                np.array([[[[1, 0, 0, 1], [0, 0, 1, 0], [0, 1, 0, 0]]]], np.float32), _SOURCE),
        Example("one_hot-3", _COLUMN, {"values": np.array([[[[4], [2], [9]]]], np.float32), "output_length": 4,
                                       "axis": 3},
                np.array([[[[2, 4, 4, 4], [4, 4, 4, 2], [4, 4, 2, 4]]]], np.float32), _SOURCE),
        Example("one_hot-4", np.array([[[[-3], [100], [3]]]], np.int32), {"values": _01, "output_length": 4,
                                                                          "axis": 3},
                np.array([[[[0, 1, 0, 0], [0, 0, 0, 0], [0, 0, 0, 1]]]], np.float32), _SOURCE),
    ),
)
