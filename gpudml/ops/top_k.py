"""DML_TOP_K_OPERATOR_DESC and DML_TOP_K1_OPERATOR_DESC (docs/operators/top_k.md): along
one axis of the input, the K largest elements of each sequence (TOP_K1: the largest or,
AxisDirection INCREASING, the smallest), their values and their indices along the axis,
sorted best first; equal elements in ascending index order, whatever the direction. Two
outputs, in DirectML's field order: `values, indices = dml.top_k(x, k)`. The kernels are
the top-k family's (kernels/top_k.py): a CPU-class strategy of per-chunk selection and a
GPU-class one of workgroup bitonic sorts, then merges; bit-exact (the values are the
input's bits), both strategies the same answer.

What the pages say, as implemented (tests/data/pages/ns-directml-dml_top_k*_operator_desc.md):

- InputTensor, OutputValueTensor and OutputIndexTensor: one DimensionCount; the input and
  the values one DataType; the types and levels of each page's "Tensor support" table
  (UINT64 indices and 64-bit inputs from FL 5.0). DML_TOP_K's page says the operator was
  introduced at FL 2.0 (DirectML 1.0 shipped it before feature levels existed: its
  lowest table, FL 2.0, is taken for every earlier level's absence).
- The outputs' sizes: the input's, K on Axis. Axis below the DimensionCount.
- K: "greater than 0, but less than the number of elements ... along the dimension".
  gpudml takes K up to that number (K equal to it sorts the whole sequence; ONNX's TopK
  allows it, and DirectML's execution provider hands it through).

Where the pages are silent, gpudml's choices:

- NaN: the pages say nothing. gpudml orders NaN above +infinity (numpy's sort and
  PyTorch's topk order): the largest K hold the NaNs first, the smallest K last; NaNs tie
  with each other (by index), whatever their sign and payload, and their bits are returned
  as they are.
- -0.0 and +0.0 are equal: a tie, broken by index; each keeps its own bits.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import InvalidArgumentError
from ..kernels import top_k as family
from ..kernels.base import ProblemPlanner
from ..tensor_desc import TensorDesc, as_int, check_same_rank, check_tensor_desc
from ..types import F16, F32, I64, TYPES_8, U32, U64, AxisDirection, DataType, FeatureLevel
from .base import numpy_axis
from .spec import Call, Cli, CliArg, Example, OpSpec, support_table

TENSORS = ("input_tensor", "output_value_tensor", "output_index_tensor")
TYPES_10 = TYPES_8 | {I64, U64}
#: The "Tensor support" tables of the two pages: TOP_K1's are TOP_K's from FL 2.1 on.
_ROWS_2_1 = [
    (FeatureLevel.FL_5_0, (1, 8), TYPES_10, TYPES_10, {U64, U32}),
    (FeatureLevel.FL_3_1, (1, 8), TYPES_8, TYPES_8, {U32}),
    (FeatureLevel.FL_2_1, {4}, TYPES_8, TYPES_8, {U32}),
]
SUPPORT0 = support_table("TopK", TENSORS, [*_ROWS_2_1, (FeatureLevel.FL_2_0, {4}, {F32, F16}, {F32, F16}, {U32})])
SUPPORT1 = support_table("TopK1", TENSORS, _ROWS_2_1)


@dataclass(frozen=True)
class TopKOperatorDesc:
    """DML_TOP_K_OPERATOR_DESC: the K largest elements along `axis`."""

    input_tensor: TensorDesc
    output_value_tensor: TensorDesc
    output_index_tensor: TensorDesc
    axis: int
    k: int

    def __post_init__(self):
        _normalize(self, "TopK")


@dataclass(frozen=True)
class TopK1OperatorDesc:
    """DML_TOP_K1_OPERATOR_DESC: the K largest (DECREASING) or smallest (INCREASING)
    elements along `axis`."""

    input_tensor: TensorDesc
    output_value_tensor: TensorDesc
    output_index_tensor: TensorDesc
    axis: int
    k: int
    axis_direction: AxisDirection

    def __post_init__(self):
        _normalize(self, "TopK1")
        object.__setattr__(self, "axis_direction",
                           AxisDirection.coerce(self.axis_direction, "TopK1: axis_direction"))


def _normalize(desc, op: str) -> None:
    object.__setattr__(desc, "axis", as_int(desc.axis, f"{op}: axis"))
    object.__setattr__(desc, "k", as_int(desc.k, f"{op}: k"))


def _direction(desc) -> AxisDirection:
    return getattr(desc, "axis_direction", AxisDirection.DECREASING)


def _infer(desc_class, where: str, input_tensor: TensorDesc, k, axis, axis_direction, index_data_type):
    """The desc of the functional call: both outputs the input's sizes with K on `axis`
    (numpy's axis: negative counts from the end). A K below 1 is kept in the desc's field
    (sizes of 1 in its place), for validation to name."""
    axis = numpy_axis(axis, input_tensor.rank, where)
    k = as_int(k, f"{where}: k")
    sizes = list(input_tensor.sizes)
    sizes[axis] = max(k, 1)
    index_type = DataType.parse(index_data_type, f"{where}: index_data_type")
    extra = {} if axis_direction is None else {"axis_direction": axis_direction}
    return desc_class(input_tensor, TensorDesc(input_tensor.data_type, sizes), TensorDesc(index_type, sizes), axis, k,
                      **extra)


def infer_output0(input_tensor: TensorDesc, k, axis=-1, index_data_type="UINT32") -> TopKOperatorDesc:
    return _infer(TopKOperatorDesc, "top_k0", input_tensor, k, axis, None, index_data_type)


def infer_output1(input_tensor: TensorDesc, k, axis=-1, axis_direction="decreasing",
                  index_data_type="UINT32") -> TopK1OperatorDesc:
    return _infer(TopK1OperatorDesc, "top_k", input_tensor, k, axis, axis_direction, index_data_type)


def _validate(op: str, support, desc, feature_level: FeatureLevel) -> None:
    """The pages' rules: three valid tensors of one DimensionCount, the types of the table
    row of `feature_level`, the values of the input's type; Axis below the DimensionCount;
    1 <= K <= the axis' size; both outputs of the input's sizes with K on Axis."""
    inp, val, idx = desc.input_tensor, desc.output_value_tensor, desc.output_index_tensor
    check_tensor_desc(op, "input_tensor", inp)
    check_tensor_desc(op, "output_value_tensor", val, is_output=True)
    check_tensor_desc(op, "output_index_tensor", idx, is_output=True)
    rank = check_same_rank(op, {"input_tensor": inp, "output_value_tensor": val, "output_index_tensor": idx})
    support.check(feature_level, rank, {"input_tensor": inp.data_type, "output_value_tensor": val.data_type,
                                        "output_index_tensor": idx.data_type})
    if val.data_type != inp.data_type:
        raise InvalidArgumentError(f"{op}: output_value_tensor.data_type {val.data_type.name} must be "
                                   f"input_tensor.data_type {inp.data_type.name}")
    if not 0 <= desc.axis < rank:
        raise InvalidArgumentError(f"{op}: axis = {desc.axis} must be below the DimensionCount {rank}")
    n = inp.sizes[desc.axis]
    if not 1 <= desc.k <= n:
        raise InvalidArgumentError(f"{op}: k = {desc.k} must be in [1, {n}] (input_tensor.sizes[{desc.axis}] = {n}, "
                                   f"the elements of a sequence along axis {desc.axis})")
    if n > family.MAX_AXIS:
        raise InvalidArgumentError(f"{op}: input_tensor.sizes[{desc.axis}] = {n}: at most {family.MAX_AXIS} "
                                   f"elements along the axis (a UINT32 index)")
    want = tuple(desc.k if d == desc.axis else s for d, s in enumerate(inp.sizes))
    for field, t in (("output_value_tensor", val), ("output_index_tensor", idx)):
        if t.sizes != want:
            raise InvalidArgumentError(f"{op}: {field}.sizes {list(t.sizes)} must be input_tensor.sizes "
                                       f"{list(inp.sizes)} with k = {desc.k} on axis {desc.axis}: {list(want)}")


def problem(desc) -> family.TopK:
    return family.TopK(type(desc).__name__.removesuffix("OperatorDesc"), desc.input_tensor, desc.output_value_tensor,
                       desc.output_index_tensor, desc.axis, desc.k, _direction(desc) == AxisDirection.DECREASING)


TOP_K = ProblemPlanner(problem, family.FAMILY)


# ---------------------------------------------------------------------------- reference
def reference(x, k, axis=-1, axis_direction="decreasing", index_data_type="UINT32") -> list[np.ndarray]:
    """(values, indices): along `axis` (negative: from the end), the k largest
    ("decreasing") or smallest ("increasing") elements of each sequence, best first, equal
    ones in ascending index order, found by numpy's stable lexsort: floats compared as
    float64 with -0.0 equal to +0.0 and NaN above everything; integers by their
    complement for the largest first (no overflow). The values are x's elements at the
    indices (their bits)."""
    x = np.asarray(x)
    axis = numpy_axis(axis, x.ndim, "top_k", "x")
    k = int(k)
    if not 1 <= k <= x.shape[axis]:
        raise ValueError(f"top_k: k = {k} must be in [1, {x.shape[axis]}]")
    decreasing = AxisDirection.coerce(axis_direction) == AxisDirection.DECREASING
    rows = np.moveaxis(x, axis, -1)
    if x.dtype.kind == "f":
        with np.errstate(invalid="ignore"):  # (NaN payloads cast)
            wide = rows.astype(np.float64)
        nan = np.isnan(wide)
        value = np.where(nan, 0.0, wide) + 0.0  # (-0.0 + 0.0 is +0.0)
        primary, secondary = (~nan, -value) if decreasing else (nan, value)
        order = np.lexsort((secondary, primary), axis=-1)
    else:
        order = np.argsort(~rows if decreasing else rows, axis=-1, kind="stable")
    index = order[..., :k]
    values = np.take_along_axis(rows, index, axis=-1)
    index_type = DataType.parse(index_data_type, "top_k: index_data_type")
    return [np.moveaxis(values, -1, axis).copy(), np.moveaxis(index, -1, axis).astype(index_type.numpy)]


def reference0(x, k, axis=-1, index_data_type="UINT32") -> list[np.ndarray]:
    """DML_TOP_K: `reference` with the largest first."""
    return reference(x, k, axis, "decreasing", index_data_type)


# ---------------------------------------------------------------------------- API
def top_k(x, k, axis=-1, axis_direction="decreasing", *, index_data_type="UINT32", device=None):
    """DML_TOP_K1: (values, indices) of the k largest (axis_direction "decreasing") or
    smallest ("increasing") elements of each sequence along `axis` (negative: from the
    end), best first; equal elements in ascending index order. NaN counts as the largest
    value, -0.0 equals +0.0. 1 <= k <= x's size on the axis. index_data_type: UINT32 or
    UINT64 (a DataType, its name or a numpy dtype)."""
    return Call([("x", x)], {"k": k, "axis": axis, "axis_direction": axis_direction,
                             "index_data_type": index_data_type}, device)


def top_k0(x, k, axis=-1, *, index_data_type="UINT32", device=None):
    """DML_TOP_K: (values, indices) of the k largest elements of each sequence along `axis`
    (negative: from the end), largest first; equal elements in ascending index order
    (top_k with axis_direction "decreasing")."""
    return Call([("x", x)], {"k": k, "axis": axis, "index_data_type": index_data_type}, device)


def arguments0(desc) -> dict:
    return {"k": desc.k, "axis": desc.axis, "index_data_type": desc.output_index_tensor.data_type}


def arguments1(desc) -> dict:
    return {**arguments0(desc), "axis_direction": desc.axis_direction}


def sample(desc, rng) -> list:
    """Random bits half the time; else few distinct values (ties), floats with NaN, -0.0
    and infinities among them."""
    inp = desc.input_tensor
    count = inp.required_elements
    raw = rng.integers(0, 256, size=count * inp.data_type.size, dtype=np.uint8).view(inp.data_type.numpy)
    if rng.random() < 0.5:
        return [raw]
    if inp.data_type.is_float:
        pool = np.array([0.0, -0.0, 1.0, -1.0, 2.5, np.inf, -np.inf, np.nan, -np.nan], inp.data_type.numpy)
    else:
        pool = raw[: max(1, min(count, 4))]
    return [pool[rng.integers(0, len(pool), count)]]


_CLI = (CliArg("--k", "elements to select (default 3, at most the axis' size)", "number"),
        CliArg("--axis", "the axis (default: the last)", "number"),
        CliArg("--index-data-type", "UINT32 or UINT64", "str", "UINT32"))
_DIRECTION = CliArg("--axis-direction", "DECREASING (the largest) or INCREASING (the smallest)", "str", "DECREASING")


def _from_cli(x: TensorDesc, a: dict, direction: bool):
    axis = -1 if a["axis"] is None else int(a["axis"])
    n = x.sizes[axis] if -x.rank <= axis < x.rank else 1
    k = min(n, 3) if a["k"] is None else int(a["k"])
    if direction:
        return infer_output1(x, k, axis, a["axis_direction"], a["index_data_type"])
    return infer_output0(x, k, axis, a["index_data_type"])


PAGE0, PAGE1 = "ns-directml-dml_top_k_operator_desc.md", "ns-directml-dml_top_k1_operator_desc.md"
_INPUT = np.array([[[[0, 1, 10, 11], [3, 2, 9, 8], [4, 5, 6, 7]]]], np.float32)
_TIES = np.array([[[[1, 2, 2, 3], [3, 4, 5, 5], [6, 6, 6, 6]]]], np.float32)


def _page(values, indices):
    return [np.array(values, np.float32).reshape(1, 1, len(values), -1),
            np.array(indices, np.uint32).reshape(1, 1, len(indices), -1)]


#: (input, arguments, values, indices) of the pages' examples (TOP_K's are TOP_K1's first three).
_EXAMPLES = (
    (_INPUT, {"k": 2, "axis": 3}, [[11, 10], [9, 8], [7, 6]], [[3, 2], [2, 3], [3, 2]]),
    (_INPUT, {"k": 2, "axis": 2}, [[4, 5, 10, 11], [3, 2, 9, 8]], [[2, 2, 0, 0], [1, 1, 1, 1]]),
    (_TIES, {"k": 3, "axis": 3}, [[3, 2, 2], [5, 5, 4], [6, 6, 6]], [[3, 1, 2], [2, 3, 1], [0, 1, 2]]),
    (_TIES, {"k": 3, "axis": 3, "axis_direction": "increasing"}, [[1, 2, 2], [3, 4, 5], [6, 6, 6]],
     [[0, 1, 2], [0, 1, 2], [0, 1, 2]]),
)

SPECS = (
    OpSpec(
        name="TopK", key="top_k0", desc=TopKOperatorDesc, support=SUPPORT0,
        infer_output=infer_output0, validate=lambda d, level: _validate("TopK", SUPPORT0, d, level),
        reference=reference0, functional=top_k0, tensors=("x",), arguments=arguments0, planner=TOP_K,
        cli=Cli(_CLI, lambda x, a: _from_cli(x, a, False), "--shape 64,32000 --k 5"),
        page="DML_TOP_K_OPERATOR_DESC", sample=sample,
        examples=tuple(Example(f"top_k0-{i}", x, args, _page(v, ix), PAGE0)
                       for i, (x, args, v, ix) in enumerate(_EXAMPLES[:3], 1)),
    ),
    OpSpec(
        name="TopK1", key="top_k1", desc=TopK1OperatorDesc, support=SUPPORT1,
        infer_output=infer_output1, validate=lambda d, level: _validate("TopK1", SUPPORT1, d, level),
        reference=reference, functional=top_k, tensors=("x",), arguments=arguments1, planner=TOP_K,
        cli=Cli((*_CLI, _DIRECTION), lambda x, a: _from_cli(x, a, True), "--shape 64,32000 --k 5"),
        page="DML_TOP_K1_OPERATOR_DESC", sample=sample,
        examples=tuple(Example(f"top_k1-{i}", x, {**args, "axis_direction": args.get("axis_direction", "decreasing")},
                               _page(v, ix), PAGE1)
                       for i, (x, args, v, ix) in enumerate(_EXAMPLES, 1)),
    ),
)
