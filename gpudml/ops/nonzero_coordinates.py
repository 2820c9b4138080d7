"""DML_NONZERO_COORDINATES_OPERATOR_DESC (docs/operators/nonzero_coordinates.md, FL 3.0):
the count of an input's non-zero elements and their coordinates, in ascending element
(row-major) order. The coordinates tensor is sized for the worst case, [1.., M, N] with M
the input's element count and N columns (the input's effective rank, its rank without
leading axes of size 1, up to its rank): a row holds the last N coordinates of an element.
FLOAT32 and FLOAT16 treat -0.0 as zero (and NaN as non-zero); integers compare their bits.

The page's gaps, and gpudml's choices (tests/data/pages/ns-directml-dml_nonzero_coordinates_operator_desc.md):
the rows past the count are "undefined" on the page; gpudml writes zeros there (as the
page's example prints them), so that every run gives the same bytes and the whole output
is defined (the kernel writes every row exactly once: kernels/nonzero.py). The functional
form's `columns` picks N (default: the input's rank, which every input allows). The
output count is a UINT32 of the input's rank, sizes all 1.

How it runs: a composite of the scan family (kernels/nonzero.py): flags, their inclusive
sum (CUMULATIVE_SUMMATION's kernels), the coordinates written at their positions: the
result is bit-exact and deterministic on every strategy.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import InvalidArgumentError
from ..kernels import nonzero as family
from ..kernels.base import ProblemPlanner
from ..tensor_desc import TensorDesc, as_int, check_same_rank, check_tensor_desc
from ..types import TYPES_8, U32, DataType, FeatureLevel
from .spec import Call, Cli, CliArg, Example, OpSpec, support_table

OP = "NonzeroCoordinates"
FIELDS = ("input_tensor", "output_count_tensor", "output_coordinates_tensor")
SUPPORT = support_table(OP, FIELDS, [(FeatureLevel.FL_3_0, (4, 5), TYPES_8, {U32}, {U32})])


@dataclass(frozen=True)
class NonzeroCoordinatesOperatorDesc:
    input_tensor: TensorDesc
    output_count_tensor: TensorDesc
    output_coordinates_tensor: TensorDesc


def effective_rank(sizes) -> int:
    """The rank without the leading axes of size 1 (the page's effective rank)."""
    sizes = list(sizes)
    while sizes and sizes[0] == 1:
        sizes.pop(0)
    return len(sizes)


def infer_output(input_tensor: TensorDesc, columns=None) -> NonzeroCoordinatesOperatorDesc:
    """The desc of `nonzero_coordinates(x, columns=)`: the count [1, ..., 1] and the
    coordinates [1, ..., 1, M, columns] (both UINT32, x's rank; columns default x's rank)."""
    rank = input_tensor.rank
    n = rank if columns is None else as_int(columns, "nonzero_coordinates: columns")
    if n < 1:  # (a size validation would name less clearly)
        raise InvalidArgumentError(f"nonzero_coordinates: columns = {n} must be at least 1")
    m = input_tensor.element_count
    # (a rank-1 input: coordinates of rank 1 too, [M * columns], which validation refuses by rank)
    sizes = (1,) * (rank - 2) + (m, n) if rank >= 2 else (m * n,)
    return NonzeroCoordinatesOperatorDesc(input_tensor, TensorDesc(DataType.UINT32, (1,) * rank),
                                          TensorDesc(DataType.UINT32, sizes))


def validate(desc: NonzeroCoordinatesOperatorDesc, feature_level: FeatureLevel) -> None:
    """The three tensors (one DimensionCount, 4-5; the input one of 8 types, the outputs
    UINT32), the count's sizes all 1, the coordinates' [1.., M, N] with M the input's
    elements and N from its effective rank to its rank."""
    named = dict(zip(FIELDS, (desc.input_tensor, desc.output_count_tensor, desc.output_coordinates_tensor),
                     strict=True))
    for field, td in named.items():
        check_tensor_desc(OP, field, td, is_output=field != "input_tensor")
    rank = check_same_rank(OP, named)
    SUPPORT.check(feature_level, rank, {f: td.data_type for f, td in named.items()})
    count, coords, inp = desc.output_count_tensor.sizes, desc.output_coordinates_tensor.sizes, desc.input_tensor
    if any(s != 1 for s in count):
        raise InvalidArgumentError(f"{OP}: output_count_tensor.sizes {list(count)} must all be 1 (a scalar)")
    m, low = inp.element_count, effective_rank(inp.sizes)
    want = f"[{', '.join(['1'] * (rank - 2))}, M = {m}, N] with {low} <= N <= {rank}"
    if any(s != 1 for s in coords[:-2]) or coords[-2] != m or not low <= coords[-1] <= rank:
        raise InvalidArgumentError(
            f"{OP}: output_coordinates_tensor.sizes {list(coords)} must be {want} (M: input_tensor's element "
            f"count; N: from its effective rank, its rank without leading sizes of 1, to its DimensionCount)")


def problem(desc: NonzeroCoordinatesOperatorDesc) -> family.Compaction:
    return family.Compaction(OP, desc.input_tensor, desc.output_count_tensor, desc.output_coordinates_tensor)


NONZERO_COORDINATES = ProblemPlanner(problem, family.FAMILY)


# ---------------------------------------------------------------------------- reference
def reference(x, columns=None) -> list[np.ndarray]:
    """[count, coordinates]: numpy's nonzero (x != 0: -0.0 is zero, NaN is not) in row-major
    order, the last `columns` (default x's rank) coordinates of each non-zero element as the
    first rows of [1.., M, columns] UINT32, zeros below; the count as [1, ..., 1] UINT32."""
    x = np.asarray(x)
    rank = x.ndim
    n = rank if columns is None else int(columns)
    if not 1 <= n <= max(rank, 1):
        raise ValueError(f"nonzero_coordinates: columns {n} of an array of rank {rank}")
    found = np.stack(np.nonzero(x), axis=-1)[:, rank - n:] if rank else np.zeros((int(x != 0), 0), np.int64)
    out = np.zeros((x.size, n), np.uint32)
    out[:len(found)] = found
    lead = (1,) * max(rank - 2, 0)
    return [np.full((1,) * rank, len(found), np.uint32), out.reshape(lead + (x.size, n))]


# ---------------------------------------------------------------------------- API
def nonzero_coordinates(x, *, columns=None, device=None):
    """DML_NONZERO_COORDINATES: (count, coordinates) of x's non-zero elements (-0.0 is zero,
    NaN is not): count, UINT32 [1, ..., 1], their number C; coordinates, UINT32
    [1, ..., 1, M, columns] (M: x's element count, the worst case), whose first C rows are
    the last `columns` coordinates (default: all, x's rank) of each non-zero element in
    row-major order, the rows after them zeros. x: rank 4-5 (DirectML's), any 8-32-bit type."""
    return Call([("x", x)], {"columns": columns}, device)


def arguments(desc: NonzeroCoordinatesOperatorDesc) -> dict:
    return {"columns": desc.output_coordinates_tensor.sizes[-1]}


def from_cli(x: TensorDesc, a: dict) -> NonzeroCoordinatesOperatorDesc:
    return infer_output(x, a["columns"][0] if a["columns"] else None)


def sample(desc: NonzeroCoordinatesOperatorDesc, rng) -> list:
    """Random bits with about half the elements zero (-0.0 among the floats' zeros)."""
    inp = desc.input_tensor
    dt = inp.data_type.numpy
    raw = rng.integers(0, 256, size=inp.required_elements * inp.data_type.size, dtype=np.uint8).view(dt).copy()
    zero = rng.random(raw.shape) < 0.5
    raw[zero] = 0
    if inp.data_type.is_float:
        raw[zero & (rng.random(raw.shape) < 0.3)] = -0.0
    return [raw]


PAGE = "ns-directml-dml_nonzero_coordinates_operator_desc.md"
_PAGE_INPUT = np.array([[[[1.0, 0.0, 0.0, 2.0], [-0.0, 3.5, 0.0, -5.2]]]], np.float32)
_PAGE_ROWS = [[0, 0, 0], [0, 0, 3], [0, 1, 1], [0, 1, 3]] + [[0, 0, 0]] * 4

SPEC = OpSpec(
    name=OP, key="nonzero_coordinates", desc=NonzeroCoordinatesOperatorDesc, support=SUPPORT,
    infer_output=infer_output, validate=validate,
    reference=reference, functional=nonzero_coordinates, tensors=("x",), arguments=arguments,
    planner=NONZERO_COORDINATES,
    cli=Cli((CliArg("--columns", "the coordinates' columns N (default: the input's rank)"),),
            from_cli, "--shape 1,1,12,5 --columns 2"),
    page="DML_NONZERO_COORDINATES_OPERATOR_DESC", sample=sample,
    examples=(
        Example("nonzero_coordinates-1", _PAGE_INPUT, {"columns": 3},
                [np.array([[[[4]]]], np.uint32), np.array([[_PAGE_ROWS]], np.uint32)], PAGE),
    ),
)
