"""DML_SCATTER_ND_OPERATOR_DESC (docs/operators/scatter_nd.md; the page is copied under
tests/data/pages/): output = input, then output[indices[...]] = updates[...], each index
tuple (the indices' last dimension, K coordinates) selecting the slice of the input's
actual dimensions after its first K.

Sizes, as ONNX's ScatterND and the page's own example give them (the page's formula
takes the slice from InputTensor.DimensionCount - indexTupleSize, which its example
contradicts): with r = DimensionCount, InputDimensionCount q and IndicesDimensionCount p,
the input's first r - q sizes and the indices' first r - p are 1; the index tuples are
the indices' sizes [r - p, r - 1) (the batch) of K = indices.sizes[r - 1] coordinates,
which select output axes [r - q, r - q + K); UpdatesTensor.Sizes = the batch, then
input.sizes[r - q + K:], right-aligned with leading 1s. InputDimensionCount and
IndicesDimensionCount may be r itself (the page says [1, r); ONNX Runtime's DirectML
provider passes the original ranks, r at rank 4).

What the page leaves open ("no guarantee of which last write wins"), gpudml decides as for
DML_SCATTER_ELEMENTS (ops/scatter_elements.py): the tuple of the highest flat position in
the batch wins; a tuple with a coordinate outside its axis (after a signed one below 0
counts from the end) is dropped; `reduction` is gpudml's extension for ONNX's ScatterND,
combining in tuple order."""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import partial

import numpy as np

from ..errors import InvalidArgumentError
from ..kernels.base import ProblemPlanner
from ..kernels.scatter import FAMILY, Scatter
from ..tensor_desc import TensorDesc, as_int
from ..types import I32, I64, TYPES_8, U32, U64, DataType, FeatureLevel
from .gather import indices_array, leading_ones
from .scatter_elements import (
    REDUCTION_ARG,
    TENSORS,
    apply_updates,
    check_scatter_tensors,
    flush_tolerance,
    index_coordinates,
    index_sample,
    reduction_name,
)
from .spec import Call, Cli, CliArg, OpSpec, random_buffer, support_table

OP = "ScatterNd"
INDEX_TYPES = frozenset({I64, I32, U64, U32})

SUPPORT = support_table(OP, TENSORS, [
    (FeatureLevel.FL_3_0, (1, 8), TYPES_8, INDEX_TYPES, TYPES_8, TYPES_8),
    (FeatureLevel.FL_2_1, {4}, TYPES_8, {U32}, TYPES_8, TYPES_8),
])


@dataclass(frozen=True)
class ScatterNdOperatorDesc:
    input_tensor: TensorDesc
    indices_tensor: TensorDesc
    updates_tensor: TensorDesc
    output_tensor: TensorDesc
    input_dimension_count: int
    indices_dimension_count: int
    #: gpudml's extension (DirectML's struct has no such field): none, add, mul, max, min.
    reduction: str = "none"

    def __post_init__(self):
        for name in ("input_dimension_count", "indices_dimension_count"):
            object.__setattr__(self, name, as_int(getattr(self, name), f"{OP}: {name}"))
        object.__setattr__(self, "reduction", reduction_name(self.reduction, OP))


def updates_sizes(input_sizes, indices_sizes, q: int, p: int) -> tuple[int, ...] | None:
    """UpdatesTensor.Sizes by the rule of the module docstring (None where the batch and
    the slice pass the DimensionCount)."""
    r = len(input_sizes)
    k = indices_sizes[r - 1]
    batch, piece = list(indices_sizes[r - p:r - 1]), list(input_sizes[r - q + k:])
    if len(batch) + len(piece) > r or not 0 <= r - q + k <= r:
        return None
    return tuple([1] * (r - len(batch) - len(piece)) + batch + piece)


def dimension_counts(input_sizes, indices_sizes, updates_sizes_given, q=None, p=None) -> tuple[int, int]:
    """InputDimensionCount and IndicesDimensionCount where not given: the indices' sizes
    after their leading 1s (at least 1); the input's after its leading 1s, at least K, and
    more (up to r) where that is what makes the updates' sizes fit."""
    r = len(input_sizes)
    if p is None:
        p = max(1, r - leading_ones(indices_sizes, r - 1))
    if q is None:
        k = indices_sizes[r - 1]
        low = min(r, max(k, r - leading_ones(input_sizes, r), 1))
        q = next((c for c in range(low, r + 1) if updates_sizes(input_sizes, indices_sizes, c, p)
                  == tuple(updates_sizes_given)), low)
    return q, p


def infer_output(input_tensor: TensorDesc, indices, updates, input_dimension_count=None,
                 indices_dimension_count=None, reduction=None) -> ScatterNdOperatorDesc:
    """The desc of `scatter_nd(x, indices, updates, ...)`: the output is the input's type
    and sizes; the dimension counts default as `dimension_counts` says."""
    q, p = input_dimension_count, indices_dimension_count
    if q is not None:
        q = as_int(q, "scatter_nd: input_dimension_count")
    if p is not None:
        p = as_int(p, "scatter_nd: indices_dimension_count")
    if input_tensor.rank == indices.rank == updates.rank:
        q, p = dimension_counts(input_tensor.sizes, indices.sizes, updates.sizes, q, p)
    return ScatterNdOperatorDesc(input_tensor, indices, updates, TensorDesc(input_tensor.data_type, input_tensor.sizes),
                                 q if q is not None else input_tensor.rank, p if p is not None else indices.rank,
                                 reduction_name(reduction, "scatter_nd"))


def validate(desc: ScatterNdOperatorDesc, feature_level: FeatureLevel) -> None:
    r = check_scatter_tensors(OP, SUPPORT, feature_level, desc)
    inp, indices, updates = desc.input_tensor, desc.indices_tensor, desc.updates_tensor
    q, p = desc.input_dimension_count, desc.indices_dimension_count
    for name, value in (("input_dimension_count", q), ("indices_dimension_count", p)):
        if not 1 <= value <= r:
            raise InvalidArgumentError(f"{OP}: {name} = {value} must be in [1, DimensionCount {r}]")
    for field, td, count in (("input_tensor", inp, q), ("indices_tensor", indices, p)):
        if any(n != 1 for n in td.sizes[:r - count]):
            raise InvalidArgumentError(
                f"{OP}: {field}.sizes {list(td.sizes)} must be 1 before its last {count} dimensions "
                f"({'input' if field == 'input_tensor' else 'indices'}_dimension_count {count})")
    k = indices.sizes[r - 1]
    if not 1 <= k <= q:
        raise InvalidArgumentError(
            f"{OP}: indices_tensor.sizes[{r - 1}] = {k} (the coordinates per index tuple) must be in "
            f"[1, input_dimension_count {q}]")
    want = updates_sizes(inp.sizes, indices.sizes, q, p)
    if want is None:
        raise InvalidArgumentError(
            f"{OP}: the index tuples' {p - 1} batch dimensions and the slice's {q - k} dimensions pass "
            f"DimensionCount {r} (indices_dimension_count {p}, input_dimension_count {q}, tuples of {k})")
    if updates.sizes != want:
        raise InvalidArgumentError(
            f"{OP}: updates_tensor.sizes {list(updates.sizes)} must be {list(want)}: indices_tensor.sizes"
            f"[{r - p}..{r - 1}) {list(indices.sizes[r - p:r - 1])}, then input_tensor.sizes[{r - q + k}..{r}) "
            f"{list(inp.sizes[r - q + k:])}, right-aligned with leading 1s")


def problem(desc: ScatterNdOperatorDesc) -> Scatter:
    """A line per slice element (the output axes after the tuple's), its positions the
    index tuples (the updates' batch axes)."""
    inp, indices, updates = desc.input_tensor, desc.indices_tensor, desc.updates_tensor
    r, q, p = inp.rank, desc.input_dimension_count, desc.indices_dimension_count
    k = indices.sizes[r - 1]
    first_slice, b = r - q + k, p - 1
    us, ids = updates.effective_strides, indices.effective_strides
    line_sizes = tuple(inp.sizes[d] if d >= first_slice else 1 for d in range(r))
    line_upd = tuple(us[d] if d >= first_slice else 0 for d in range(r))
    s = r - first_slice
    pad = (1,) * (r - b)
    return Scatter(OP, inp, indices, updates, desc.output_tensor, desc.reduction, line_sizes, line_upd, (0,) * r,
                   pad + tuple(updates.sizes[r - s - b:r - s]), (0,) * (r - b) + tuple(us[r - s - b:r - s]),
                   (0,) * (r - b) + tuple(ids[r - p:r - 1]), tuple(range(r - q, first_slice)), ids[r - 1])


def targets(x, indices, updates, input_dimension_count=None, indices_dimension_count=None,
            reduction=None) -> tuple[np.ndarray, np.ndarray]:
    """(flat output element, value) of every update that is written, tuple by tuple in
    row-major order, each tuple's slice in row-major order."""
    x, indices, updates = np.asarray(x), np.asarray(indices), np.asarray(updates)
    r = x.ndim
    if indices.ndim != r or updates.ndim != r:
        raise ValueError(f"x, indices and updates have ranks {r}, {indices.ndim}, {updates.ndim}: expected one")
    q, p = dimension_counts(x.shape, indices.shape, updates.shape, input_dimension_count, indices_dimension_count)
    k = indices.shape[r - 1]
    actual = x.shape[r - q:]
    tuples = indices.reshape(-1, k)
    piece = math.prod(actual[k:])
    coords, inside = zip(*(index_coordinates(tuples[:, j], actual[j]) for j in range(k)))
    valid = np.logical_and.reduce(inside)
    prefix = np.ravel_multi_index([c[valid] for c in coords], actual[:k]) if valid.any() else np.zeros(0, np.int64)
    flat = (prefix[:, None] * piece + np.arange(piece)).reshape(-1)
    return flat, updates.reshape(-1, piece)[valid].reshape(-1).astype(x.dtype)


def reference(x, indices, updates, input_dimension_count=None, indices_dimension_count=None,
              reduction=None) -> np.ndarray:
    """output = x; then for each index tuple in row-major order (a signed coordinate below
    0 from the end; a tuple with a coordinate outside its axis dropped), its slice of
    updates written (none: the last of duplicates wins) or combined by `reduction`. x,
    indices and updates have one rank; the dimension counts default as in `scatter_nd`."""
    flat, values = targets(x, indices, updates, input_dimension_count, indices_dimension_count)
    return apply_updates(np.asarray(x), flat, values, reduction_name(reduction, "scatter_nd"))


tolerance = flush_tolerance(targets)


def scatter_nd(x, indices, updates, *, input_dimension_count=None, indices_dimension_count=None, reduction=None,
               device=None):
    """DML_SCATTER_ND: x with each index tuple's slice replaced by updates (ONNX's
    ScatterND). x, indices and updates have one DimensionCount (leading 1s pad them): the
    indices' last dimension holds the K coordinates of a tuple, which select x's first K
    actual dimensions; updates are the tuples' batch sizes, then x's sizes after those K.
    input_dimension_count and indices_dimension_count (DirectML's InputDimensionCount and
    IndicesDimensionCount) default to the sizes after the leading 1s (the input's at least
    K, and as many as the updates' sizes need). Negative indices of signed types count from
    the end; a tuple outside x is dropped; of duplicate tuples the last wins. `reduction`
    (gpudml's extension, ONNX's): "add", "mul", "max" or "min" combine in tuple order."""
    return Call([("x", x), ("indices", indices, partial(indices_array, where="scatter_nd")), ("updates", updates)],
                {"input_dimension_count": input_dimension_count, "indices_dimension_count": indices_dimension_count,
                 "reduction": reduction}, device)


def arguments(desc: ScatterNdOperatorDesc) -> dict:
    return {"input_dimension_count": desc.input_dimension_count,
            "indices_dimension_count": desc.indices_dimension_count, "reduction": desc.reduction}


def sample(desc: ScatterNdOperatorDesc, rng) -> list:
    """Random input and update bits; each tuple coordinate mostly inside its axis."""
    inp, indices = desc.input_tensor, desc.indices_tensor
    r, q = inp.rank, desc.input_dimension_count
    k = indices.sizes[r - 1]
    strides = indices.effective_strides
    values = np.zeros(indices.required_elements, indices.data_type.numpy)
    # Each coordinate j of a tuple drawn for its own axis (by the element's offset along the last axis).
    offsets = np.arange(indices.required_elements)
    column = (offsets // strides[r - 1]) % k if strides[r - 1] else np.zeros_like(offsets)
    for j in range(k):
        where = column == j
        values[where] = index_sample(indices.data_type, inp.sizes[r - q + j], int(where.sum()), rng)
    return [random_buffer(inp, rng), values, random_buffer(desc.updates_tensor, rng)]


def from_cli(x: TensorDesc, a: dict) -> ScatterNdOperatorDesc:
    """Whole rows of x by default: tuples of one coordinate, half as many as x's first axis."""
    r = x.rank
    default = [1] * (r - 2) + [max(1, x.sizes[0] // 2), 1] if r >= 2 else [1, 1][:r]
    sizes = list(a["indices_shape"] or default)
    indices = TensorDesc(DataType.coerce(a["indices_dtype"], "--indices-dtype"), sizes)
    q, p = dimension_counts(x.sizes, sizes, x.sizes)
    updates = updates_sizes(x.sizes, sizes, q, p) if len(sizes) == r and sizes[-1] <= q else None
    return infer_output(x, indices, TensorDesc(x.data_type, updates or x.sizes), q, p, a["reduction"])


SPEC = OpSpec(
    name=OP, key="scatter_nd", desc=ScatterNdOperatorDesc, support=SUPPORT,
    infer_output=infer_output, validate=validate, reference=reference, functional=scatter_nd,
    tensors=("x", "indices", "updates"), arguments=arguments, sample=sample, tolerance=tolerance,
    planner=ProblemPlanner(problem, FAMILY),
    cli=Cli((CliArg("--indices-shape", "IndicesTensor sizes, the tuple size last (default: half the input's first "
                                       "axis of 1-coordinate tuples: whole rows)"),
             CliArg("--indices-dtype", "IndicesTensor type: UINT32, INT32, UINT64 or INT64", "str", "UINT32"),
             REDUCTION_ARG),
            from_cli, "--shape 4096,1024 --indices-shape 2048,1"),
    page="DML_SCATTER_ND_OPERATOR_DESC",
)
