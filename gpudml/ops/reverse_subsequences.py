"""DML_REVERSE_SUBSEQUENCES_OPERATOR_DESC (the page: tests/data/seeds/000 and 002): along
one axis, the first min(length, n) elements of each sequence reversed."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import InvalidArgumentError
from ..kernels.movement.reverse_subsequences import REVERSE_SUBSEQUENCES
from ..tensor_desc import MAX_DIMENSIONS, TensorDesc, as_int, check_same_rank, check_tensor_desc
from ..types import TYPES_8, TYPES_11, U32, U64, DataType, FeatureLevel
from .base import integer_array, numpy_axis
from .spec import Call, Cli, CliArg, Example, OpSpec, element_bytes, random_buffer, support_table

OP = "ReverseSubsequences"
UINT32_MAX = 2**32 - 1

SUPPORT = support_table(OP, ("input_tensor", "sequence_lengths_tensor", "output_tensor"), [
    (FeatureLevel.FL_5_0, (1, 8), TYPES_11, {U32, U64}, TYPES_11),
    (FeatureLevel.FL_4_0, (1, 8), TYPES_8, {U32}, TYPES_8),
    (FeatureLevel.FL_3_0, (4, 5), TYPES_8, {U32}, TYPES_8),
    (FeatureLevel.FL_2_1, {4}, TYPES_8, {U32}, TYPES_8),
])


@dataclass(frozen=True)
class ReverseSubsequencesOperatorDesc:
    input_tensor: TensorDesc
    sequence_lengths_tensor: TensorDesc
    output_tensor: TensorDesc
    axis: int

    def __post_init__(self):
        object.__setattr__(self, "axis", as_int(self.axis, f"{OP}: axis"))


def infer_output(input_tensor: TensorDesc, sequence_lengths: TensorDesc, axis) -> ReverseSubsequencesOperatorDesc:
    """The desc of `reverse_subsequences(x, sequence_lengths, axis)`: the output is x's shape.
    A negative axis counts from the end, as in numpy (the desc takes DirectML's axis only)."""
    axis = numpy_axis(axis, input_tensor.rank, "reverse_subsequences")
    out = TensorDesc(input_tensor.data_type, input_tensor.sizes)
    return ReverseSubsequencesOperatorDesc(input_tensor, sequence_lengths, out, axis)


def validate(desc: ReverseSubsequencesOperatorDesc, feature_level: FeatureLevel) -> None:
    check_tensor_desc(OP, "input_tensor", desc.input_tensor)
    check_tensor_desc(OP, "sequence_lengths_tensor", desc.sequence_lengths_tensor)
    check_tensor_desc(OP, "output_tensor", desc.output_tensor, is_output=True)
    inp, lengths, out = desc.input_tensor, desc.sequence_lengths_tensor, desc.output_tensor
    rank = check_same_rank(OP, {"input_tensor": inp, "sequence_lengths_tensor": lengths, "output_tensor": out})
    if out.data_type != inp.data_type:
        raise InvalidArgumentError(
            f"{OP}: output_tensor.data_type {out.data_type.name} must equal "
            f"input_tensor.data_type {inp.data_type.name}")
    SUPPORT.check(feature_level, rank, {"input_tensor": inp.data_type,
                                        "sequence_lengths_tensor": lengths.data_type,
                                        "output_tensor": out.data_type})
    axis = desc.axis
    if not 0 <= axis < rank:
        raise InvalidArgumentError(f"{OP}: axis = {axis} must be less than DimensionCount {rank} (and >= 0)")
    if out.sizes != inp.sizes:
        raise InvalidArgumentError(
            f"{OP}: output_tensor.sizes {list(out.sizes)} must equal input_tensor.sizes {list(inp.sizes)}")
    for i, (got, n) in enumerate(zip(lengths.sizes, inp.sizes, strict=True)):
        want = 1 if i == axis else n
        if got != want:
            rule = f"1 on axis {axis}" if i == axis else f"input_tensor.sizes[{i}] = {n}"
            raise InvalidArgumentError(
                f"{OP}: sequence_lengths_tensor.sizes[{i}] = {got} must be {rule} "
                f"(input sizes {list(inp.sizes)}, axis {axis}: lengths sizes {_lengths_sizes(inp.sizes, axis)})")


def _lengths_sizes(sizes, axis: int) -> list[int]:
    return [1 if i == axis else n for i, n in enumerate(sizes)]


# ---------------------------------------------------------------------------- reference
def reference(x, sequence_lengths, axis: int) -> np.ndarray:
    """Along `axis`, with L = min(length, n): out[k] = x[L-1-k] for k < L, x[k] otherwise.
    Lengths 0 and 1 change nothing; lengths beyond the axis clamp to n (the page: "as if
    clamped to the maximum"). `sequence_lengths` has x's rank, size 1 on `axis`, x's
    sizes elsewhere; a negative axis counts from the end."""
    x = np.asarray(x)
    lengths = np.asarray(sequence_lengths)
    axis = int(axis)
    if not -x.ndim <= axis < x.ndim:
        raise ValueError(f"axis {axis} is outside [{-x.ndim}, {x.ndim})")
    axis %= x.ndim
    want = x.shape[:axis] + (1,) + x.shape[axis + 1:]
    if lengths.shape != want:
        raise ValueError(f"sequence_lengths shape {lengths.shape}, expected {want}")
    if lengths.dtype.kind not in "iu" or (lengths.dtype.kind == "i" and (lengths < 0).any()):
        raise ValueError("sequence_lengths must be non-negative integers")
    n = x.shape[axis]
    clamped = np.minimum(lengths, n).astype(np.int64)  # min in the lengths' own type: no wrap
    shape = [1] * x.ndim
    shape[axis] = n
    k = np.arange(n, dtype=np.int64).reshape(shape)
    src = np.where(k < clamped, clamped - 1 - k, k)
    return np.take_along_axis(x, src, axis=axis)


# ---------------------------------------------------------------------------- API
def sequence_lengths_array(sequence_lengths) -> np.ndarray:
    """Any non-negative integer array as UINT32, or UINT64 when a value does not fit UINT32."""
    where = "reverse_subsequences: sequence_lengths"
    lengths = integer_array(sequence_lengths, where, "lengths must be non-negative integers")
    if lengths.size and lengths.dtype.kind == "i" and lengths.min() < 0:
        raise InvalidArgumentError(f"{where}: lengths must be non-negative, got {int(lengths.min())}")
    fits = not lengths.size or int(lengths.max()) <= UINT32_MAX
    # astype(order="C"), not ascontiguousarray: that would turn a 0-d array into shape [1].
    return lengths.astype(np.uint32 if fits else np.uint64, order="C")


def reverse_subsequences(x, sequence_lengths, axis, *, device=None):
    """DML_REVERSE_SUBSEQUENCES: along `axis` (negative: from the end), reverse the first
    min(length, n) elements of each sequence. `sequence_lengths` has x's rank and sizes, except 1 on `axis`: a Tensor
    (UINT32/UINT64) or any non-negative integer array (sent as UINT32, or UINT64 if needed)."""
    def lengths_array(value) -> np.ndarray:
        lengths = sequence_lengths_array(value)
        if not 1 <= lengths.ndim <= MAX_DIMENSIONS or lengths.size == 0:
            shape = list(x.shape) if hasattr(x, "shape") else "?"
            raise InvalidArgumentError(
                f"reverse_subsequences: sequence_lengths has shape {list(lengths.shape)}; expected the "
                f"shape of x ({shape}) with 1 on axis {axis}")
        return lengths

    return Call([("x", x), ("sequence_lengths", sequence_lengths, lengths_array)], {"axis": axis}, device)


def arguments(desc: ReverseSubsequencesOperatorDesc) -> dict:
    return {"axis": desc.axis}


def traffic(desc: ReverseSubsequencesOperatorDesc) -> int:
    return 2 * element_bytes(desc.input_tensor) + element_bytes(desc.sequence_lengths_tensor)


def sample(desc: ReverseSubsequencesOperatorDesc, rng) -> list:
    """Random input bits, and lengths mostly within the axis (0 to n + 2)."""
    lengths = desc.sequence_lengths_tensor
    n = desc.input_tensor.sizes[desc.axis]
    values = rng.integers(0, n + 3, size=lengths.required_elements)
    return [random_buffer(desc.input_tensor, rng), values.astype(lengths.data_type.numpy)]


def from_cli(x: TensorDesc, a: dict) -> ReverseSubsequencesOperatorDesc:
    axis = a["axis"] if a["axis"] is not None else x.rank - 1
    lengths = TensorDesc(DataType.coerce(a["lengths_dtype"], "--lengths-dtype"),
                         [1 if i == axis else n for i, n in enumerate(x.sizes)])
    return infer_output(x, lengths, axis)


# Both pages (000 current, 002 older) carry the same two examples; 000 is cited.
_SOURCE = "000_27b19467a3c16f5b.txt"
_INPUT = np.arange(1, 13, dtype=np.float32).reshape(1, 1, 3, 4)

SPEC = OpSpec(
    name=OP, key="reverse_subsequences", desc=ReverseSubsequencesOperatorDesc, support=SUPPORT,
    infer_output=infer_output, validate=validate,
    reference=reference, functional=reverse_subsequences, tensors=("x", "sequence_lengths"),
    arguments=arguments, traffic=traffic, sample=sample, planner=REVERSE_SUBSEQUENCES,
    cli=Cli((CliArg("--axis", "the axis to reverse along (default: the last)", "number"),
             CliArg("--lengths-dtype", "sequence_lengths_tensor type: UINT32 or UINT64", "str", "UINT32")),
            from_cli, "--shape 1,1,3,4 --axis 3 --lengths-dtype UINT32"),
    page="DML_REVERSE_SUBSEQUENCES_OPERATOR_DESC",
    examples=(
        Example("reverse_subsequences-1", _INPUT,
                {"sequence_lengths": np.array([2, 4, 3], np.uint32).reshape(1, 1, 3, 1), "axis": 3},
                np.array([[2, 1, 3, 4], [8, 7, 6, 5], [11, 10, 9, 12]], np.float32).reshape(1, 1, 3, 4), _SOURCE),
        # Lengths 1 and 0 are no-ops (the page's comment).
        Example("reverse_subsequences-2", _INPUT,
                {"sequence_lengths": np.array([2, 3, 1, 0], np.uint32).reshape(1, 1, 1, 4), "axis": 2},
                np.array([[5, 10, 3, 4], [1, 6, 7, 8], [9, 2, 11, 12]], np.float32).reshape(1, 1, 3, 4), _SOURCE),
    ),
)
