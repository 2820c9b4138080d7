"""DML_GATHER_ELEMENTS_OPERATOR_DESC (docs/operators/gather_elements.md; the page is copied
under tests/data/pages/): output[i, j, k, ...] = input[..., indices[i, j, k, ...], ...], the
coordinate on `axis` read from the indices tensor at the output's own coordinate, every other
coordinate the output's (ONNX's GatherElements, numpy's take_along_axis). The kernels are
the data-movement family's (kernels/movement/gather_elements.py): bit-exact for every type,
a stage of a graph's fused chains.

What the page says, as implemented:

- InputTensor, IndicesTensor and OutputTensor: one DimensionCount (4 at FL 2.1, 1 to 8 from
  FL 3.0); Input and Output of one DataType; the types of the page's two tables (indices
  UINT32 at FL 2.1; INT64, INT32, UINT64, UINT32 from FL 3.0).
- IndicesTensor.Sizes equal InputTensor.Sizes except on Axis; OutputTensor.Sizes equal
  IndicesTensor.Sizes.
- Negative indices of the signed types count from the end of the axis (v + n; the page,
  from FL 3.0: the signed index types exist only from there).

Where the page is silent: an index outside the axis (v >= n, or v < -n) clamps into [0, n - 1],
as DML_GATHER's page promises for its indices ("all reads will be clamped safely within the
input tensor's memory"): no read ever leaves the input, and the result is defined.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import InvalidArgumentError
from ..kernels.movement.gather_elements import GATHER_ELEMENTS
from ..tensor_desc import TensorDesc, as_int
from ..types import TYPES_8, U32, DataType, FeatureLevel
from .base import numpy_axis
from .gather import INDEX_TYPES, axis_operands, check_index_tensors, clamped_indices, indices_array, traffic
from .gather import sample as gather_sample
from .spec import Call, Cli, CliArg, Example, OpSpec, support_table

OP = "GatherElements"

SUPPORT = support_table(OP, ("input_tensor", "indices_tensor", "output_tensor"), [
    (FeatureLevel.FL_3_0, (1, 8), TYPES_8, INDEX_TYPES, TYPES_8),
    (FeatureLevel.FL_2_1, {4}, TYPES_8, {U32}, TYPES_8),
])


@dataclass(frozen=True)
class GatherElementsOperatorDesc:
    input_tensor: TensorDesc
    indices_tensor: TensorDesc
    output_tensor: TensorDesc
    axis: int

    def __post_init__(self):
        object.__setattr__(self, "axis", as_int(self.axis, f"{OP}: axis"))


def infer_output(input_tensor: TensorDesc, indices: TensorDesc, axis=0) -> GatherElementsOperatorDesc:
    """The desc of `gather_elements(x, indices, axis)`: the output has the indices' sizes; a
    negative axis counts from the end."""
    axis = numpy_axis(axis, input_tensor.rank, "gather_elements")
    return GatherElementsOperatorDesc(input_tensor, indices, TensorDesc(input_tensor.data_type, indices.sizes), axis)


def validate(desc: GatherElementsOperatorDesc, feature_level: FeatureLevel) -> None:
    inp, indices, out = desc.input_tensor, desc.indices_tensor, desc.output_tensor
    rank = check_index_tensors(OP, SUPPORT, feature_level, inp, indices, out)
    axis = desc.axis
    if not 0 <= axis < rank:
        raise InvalidArgumentError(f"{OP}: axis = {axis} must be in [0, DimensionCount {rank})")
    for d, (n, m) in enumerate(zip(inp.sizes, indices.sizes, strict=True)):
        if d != axis and n != m:
            raise InvalidArgumentError(
                f"{OP}: indices_tensor.sizes[{d}] = {m} must equal input_tensor.sizes[{d}] = {n} (every "
                f"dimension but axis {axis}: indices_tensor.sizes {list(indices.sizes)}, input_tensor.sizes "
                f"{list(inp.sizes)})")
    if out.sizes != indices.sizes:
        raise InvalidArgumentError(
            f"{OP}: output_tensor.sizes {list(out.sizes)} must equal indices_tensor.sizes {list(indices.sizes)}")


def reference(x, indices, axis=0) -> np.ndarray:
    """numpy.take_along_axis along `axis` (negative: from the end) with the indices clamped
    as the operator does (negative ones of signed types from the end, then into [0, n - 1]).
    x and indices have one rank and one shape but on the axis."""
    x, indices, axis = axis_operands(x, indices, axis)
    if any(a != b for d, (a, b) in enumerate(zip(x.shape, indices.shape)) if d != axis):
        raise ValueError(f"indices shape {indices.shape} must equal x's {x.shape} but on axis {axis}")
    return np.take_along_axis(x, clamped_indices(indices, x.shape[axis]), axis=axis)


def gather_elements(x, indices, axis=0, *, device=None):
    """DML_GATHER_ELEMENTS: output[..., i, ...] = x[..., indices[..., i, ...], ...] on `axis`
    (negative: from the end), every other coordinate the output's (numpy.take_along_axis).
    `indices` has x's sizes but on the axis: a Tensor (INT32, INT64, UINT32, UINT64) or an
    integer array (smaller types widened to 32 bits). Negative indices of signed types count
    from the end of the axis; out-of-range ones clamp."""
    return Call([("x", x), ("indices", indices, _indices)], {"axis": axis}, device)


def _indices(value) -> np.ndarray:
    return indices_array(value, "gather_elements")


def arguments(desc: GatherElementsOperatorDesc) -> dict:
    return {"axis": desc.axis}


def from_cli(x: TensorDesc, a: dict) -> GatherElementsOperatorDesc:
    axis = a["axis"] if a["axis"] is not None else x.rank - 1
    sizes = list(x.sizes)
    if a["indices_size"] is not None:
        sizes[axis] = a["indices_size"]
    indices = TensorDesc(DataType.coerce(a["indices_dtype"], "--indices-dtype"), sizes)
    return infer_output(x, indices, axis)


_SOURCE = "ns-directml-dml_gather_elements_operator_desc.md"  # tests/data/pages/

SPEC = OpSpec(
    name=OP, key="gather_elements", desc=GatherElementsOperatorDesc, support=SUPPORT,
    infer_output=infer_output, validate=validate,
    reference=reference, functional=gather_elements, tensors=("x", "indices"),
    arguments=arguments, traffic=traffic, sample=gather_sample, planner=GATHER_ELEMENTS,
    cli=Cli((CliArg("--axis", "Axis: the axis to gather along (default: the last)", "number"),
             CliArg("--indices-size", "IndicesTensor's size on the axis (default: the input's)", "number"),
             CliArg("--indices-dtype", "IndicesTensor type: UINT32, INT32, UINT64 or INT64", "str", "UINT32")),
            from_cli, "--shape 3,3 --axis 0 --indices-size 2 --indices-dtype INT64"),
    page="DML_GATHER_ELEMENTS_OPERATOR_DESC",
    examples=(
        # The page prints the output's DataType as UINT32; its values are the FLOAT32 input's
        # (the constraint: the output has the input's type).
        Example("gather_elements-1", np.arange(1, 10, dtype=np.float32).reshape(3, 3),
                {"indices": np.array([[1, 2, 0], [2, 0, 0]], np.uint32), "axis": 0},
                np.array([[4, 8, 3], [7, 2, 3]], np.float32), _SOURCE),
    ),
)
