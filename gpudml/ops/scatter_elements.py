"""DML_SCATTER_ELEMENTS_OPERATOR_DESC, also DML_SCATTER_OPERATOR_DESC (one operator:
docs/operators/scatter_elements.md; the page is copied under tests/data/pages/): output =
input, then output[..., indices[i, j, ...], ...] = updates[i, j, ...] along `axis`.

What the page leaves open, gpudml decides (every strategy gives this one result, no race
decides it): of updates that target one output element, the one of the highest coordinate
on `axis` wins ("last write", in index order); an index outside the axis (after a signed
index below 0 counts from the end) is dropped: its update is not written. `reduction`
(none, add, mul, max, min) is gpudml's extension for ONNX's ScatterElements: the updates
that target an element combine with it in index order (integers wrap in their type,
floats round in their type at each step, max/min propagate NaN); DirectML's struct has no
such field. This module also holds what DML_SCATTER_ND shares (`reduction_name`,
`apply_updates`, `index_coordinates`, `index_sample`)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial

import numpy as np

from ..errors import InvalidArgumentError
from ..kernels.base import ProblemPlanner
from ..kernels.scatter import FAMILY, REDUCTIONS, Scatter
from ..tensor_desc import TensorDesc, as_int, check_same_rank, check_tensor_desc
from ..types import F16, F32, I32, I64, TYPES_8, TYPES_11, U32, U64, DataType, FeatureLevel
from .base import check_one_type, numpy_axis
from .gather import indices_array
from .spec import Call, Cli, CliArg, Example, OpSpec, random_buffer, support_table

OP = "ScatterElements"
INDEX_TYPES = frozenset({I64, I32, U64, U32})
TENSORS = ("input_tensor", "indices_tensor", "updates_tensor", "output_tensor")

SUPPORT = support_table(OP, TENSORS, [
    (FeatureLevel.FL_4_1, (1, 8), TYPES_11, INDEX_TYPES, TYPES_11, TYPES_11),
    (FeatureLevel.FL_3_0, (1, 8), TYPES_8, INDEX_TYPES, TYPES_8, TYPES_8),
    (FeatureLevel.FL_2_1, {4}, TYPES_8, {U32}, TYPES_8, TYPES_8),
    (FeatureLevel.FL_1_0, {4}, {F32, F16}, {U32}, {F32, F16}, {F32, F16}),
])


def reduction_name(value, where: str) -> str:
    """The reduction keyword as one of REDUCTIONS (None: "none")."""
    name = "none" if value is None else value
    if not isinstance(name, str) or name not in REDUCTIONS:
        raise InvalidArgumentError(f"{where}: reduction = {value!r} must be one of {', '.join(REDUCTIONS)} "
                                   f"(or None: none)")
    return name


@dataclass(frozen=True)
class ScatterElementsOperatorDesc:
    input_tensor: TensorDesc
    indices_tensor: TensorDesc
    updates_tensor: TensorDesc
    output_tensor: TensorDesc
    axis: int
    #: gpudml's extension (DirectML's struct has no such field): none, add, mul, max, min.
    reduction: str = "none"

    def __post_init__(self):
        object.__setattr__(self, "axis", as_int(self.axis, f"{OP}: axis"))
        object.__setattr__(self, "reduction", reduction_name(self.reduction, OP))


def infer_output(input_tensor: TensorDesc, indices, updates, axis=0, reduction=None) -> ScatterElementsOperatorDesc:
    """The desc of `scatter_elements(x, indices, updates, axis, reduction)`: the output is
    the input's type and sizes; a negative axis counts from the end."""
    axis = numpy_axis(axis, input_tensor.rank, "scatter_elements")
    return ScatterElementsOperatorDesc(input_tensor, indices, updates,
                                       TensorDesc(input_tensor.data_type, input_tensor.sizes), axis,
                                       reduction_name(reduction, "scatter_elements"))


def check_scatter_tensors(op: str, support, level: FeatureLevel, desc) -> int:
    """Every tensor valid, one DimensionCount, input, updates and output of one type, the
    support row; the output of the input's sizes. Returns the rank."""
    check_tensor_desc(op, "indices_tensor", desc.indices_tensor)
    check_one_type(op, support, level, {f: getattr(desc, f) for f in TENSORS if f != "indices_tensor"})
    rank = check_same_rank(op, {f: getattr(desc, f) for f in TENSORS})
    support.check(level, rank, {"indices_tensor": desc.indices_tensor.data_type})
    inp = desc.input_tensor
    if desc.output_tensor.sizes != inp.sizes:
        raise InvalidArgumentError(f"{op}: output_tensor.sizes {list(desc.output_tensor.sizes)} must equal "
                                   f"input_tensor.sizes {list(inp.sizes)}")
    return rank


def validate(desc: ScatterElementsOperatorDesc, feature_level: FeatureLevel) -> None:
    rank = check_scatter_tensors(OP, SUPPORT, feature_level, desc)
    inp, indices, updates = desc.input_tensor, desc.indices_tensor, desc.updates_tensor
    if not 0 <= desc.axis < rank:
        raise InvalidArgumentError(f"{OP}: axis = {desc.axis} must be in [0, OutputTensor.DimensionCount {rank})")
    if updates.sizes != indices.sizes:
        raise InvalidArgumentError(f"{OP}: updates_tensor.sizes {list(updates.sizes)} must equal "
                                   f"indices_tensor.sizes {list(indices.sizes)}")
    for d in range(rank):
        if d != desc.axis and indices.sizes[d] != inp.sizes[d]:
            raise InvalidArgumentError(
                f"{OP}: indices_tensor.sizes[{d}] = {indices.sizes[d]} must equal input_tensor.sizes[{d}] = "
                f"{inp.sizes[d]} (every dimension but axis {desc.axis})")


def problem(desc: ScatterElementsOperatorDesc) -> Scatter:
    """A line per coordinate of the updates off `axis`, its positions along `axis`."""
    a, rank = desc.axis, desc.output_tensor.rank
    us, ids = desc.updates_tensor.effective_strides, desc.indices_tensor.effective_strides
    off = lambda values, fill: tuple(fill if d == a else v for d, v in enumerate(values))  # noqa: E731
    pad = (1,) * (rank - 1)
    return Scatter(OP, desc.input_tensor, desc.indices_tensor, desc.updates_tensor, desc.output_tensor,
                   desc.reduction, off(desc.updates_tensor.sizes, 1), off(us, 0), off(ids, 0),
                   pad + (desc.updates_tensor.sizes[a],), (0,) * (rank - 1) + (us[a],),
                   (0,) * (rank - 1) + (ids[a],), (a,), 0)


# ---------------------------------------------------------------------------- reference
def index_coordinates(values: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """(coordinates as int64, inside) of index values on an axis of n: a signed v < 0
    counts from the end (v + n); inside where the result lies in [0, n). Exact for every
    INT64 and UINT64 value."""
    values = np.asarray(values)
    if values.dtype.kind == "u":
        inside = values.astype(np.uint64) < np.uint64(n)
        return np.where(inside, values, 0).astype(np.int64), inside
    if values.dtype.kind != "i":
        raise ValueError(f"indices must be integers, got dtype {values.dtype}")
    v = np.clip(values.astype(np.int64), -n - 1, n)  # no overflow below
    v = np.where(v < 0, v + n, v)
    inside = (v >= 0) & (v < n)
    return np.where(inside, v, 0), inside


_COMBINE = {"add": np.add, "mul": np.multiply, "max": np.maximum, "min": np.minimum}


def _flushed(values: np.ndarray) -> np.ndarray:
    """float32 subnormals as zeros of their sign (what an adapter that flushes them computes)."""
    if values.dtype != np.float32:
        return values
    return np.where(np.abs(values) < np.float32(2.0**-126), np.copysign(np.float32(0), values), values)


def apply_updates(x: np.ndarray, targets: np.ndarray, values: np.ndarray, reduction: str,
                  flush: bool = False) -> np.ndarray:
    """x with values written to its flat elements `targets` (both in the order of the
    updates' positions): none keeps the last of duplicates; a reduction combines in that
    order, in the type's own arithmetic (float16 through float32, as numpy does), one round
    per duplicate rank (the k-th update of every target in round k). `flush`: as an
    adapter that flushes float32 subnormals computes it (the tolerance's other end)."""
    out = np.array(x, copy=True).reshape(-1)
    if not targets.size:
        return out.reshape(np.shape(x))
    if reduction == "none":
        _, first_from_end = np.unique(targets[::-1], return_index=True)
        keep = targets.size - 1 - first_from_end
        out[targets[keep]] = values[keep]
        return out.reshape(np.shape(x))
    order = np.argsort(targets, kind="stable")
    sorted_targets = targets[order]
    starts = np.r_[0, np.flatnonzero(np.diff(sorted_targets)) + 1]
    rank = np.arange(targets.size) - np.repeat(starts, np.diff(np.r_[starts, targets.size]))
    if flush:
        out, values = _flushed(out), _flushed(values)
    with np.errstate(all="ignore"):
        for k in range(int(rank.max()) + 1):
            pick = order[rank == k]
            t = targets[pick]
            out[t] = _COMBINE[reduction](out[t], values[pick])
            if flush:
                out[t] = _flushed(out[t])
    return out.reshape(np.shape(x))


def flush_tolerance(targets_of):
    """The spec's tolerance of a scatter whose updates' (targets, values) `targets_of(*inputs,
    **arguments)` gives: bit-exact for none and integers; a float reduction exact in value
    (NaN matching any NaN, -0.0 and 0.0 equal) up to what flushing float32 subnormals, in the
    inputs and after every step, changes (0 on the software adapters, which keep them)."""
    def tolerance(expected, inputs, arguments):
        reduction = reduction_name(arguments.get("reduction"), "tolerance")
        if reduction == "none" or np.asarray(expected).dtype.kind != "f":
            return None
        x = np.asarray(inputs[0])
        targets, values = targets_of(*inputs, **arguments)
        with np.errstate(invalid="ignore"):  # (a signaling NaN's cast)
            exact = apply_updates(x, targets, values, reduction).astype(np.float64)
            flushed = apply_updates(x, targets, values, reduction, flush=True).astype(np.float64)
            return np.nan_to_num(np.abs(flushed - exact), nan=0.0, posinf=np.inf)
    return tolerance


def targets(x, indices, updates, axis=0, reduction=None) -> tuple[np.ndarray, np.ndarray]:
    """(flat output element, value) of every update that is written, in row-major order of
    the updates (along `axis`: index order)."""
    x, indices, updates = np.asarray(x), np.asarray(indices), np.asarray(updates)
    rank = x.ndim
    axis = int(axis)
    if not -rank <= axis < rank or indices.ndim != rank or updates.shape != indices.shape:
        raise ValueError(f"axis {axis} of a rank-{rank} x, indices {indices.shape}, updates {updates.shape}")
    axis %= rank
    coords, inside = index_coordinates(indices, x.shape[axis])
    grid = list(np.indices(indices.shape))
    grid[axis] = coords
    flat = np.ravel_multi_index([g[inside] for g in grid], x.shape) if inside.any() else np.zeros(0, np.int64)
    return flat, updates[inside].astype(x.dtype)


def reference(x, indices, updates, axis=0, reduction=None) -> np.ndarray:
    """output = x; then, for every update element in row-major order (its coordinate on
    `axis` replaced by the index there, a signed one below 0 from the end, one outside the
    axis dropped), the update written (none: the last of duplicates wins) or combined by
    `reduction`. x, indices and updates have one rank; a negative axis counts from the end."""
    flat, values = targets(x, indices, updates, axis)
    return apply_updates(np.asarray(x), flat, values, reduction_name(reduction, "scatter_elements"))


tolerance = flush_tolerance(targets)


# ---------------------------------------------------------------------------- API
def scatter_elements(x, indices, updates, axis=0, reduction=None, *, device=None):
    """DML_SCATTER_ELEMENTS (== DML_SCATTER): x with output[..., indices[i, j, ...], ...] =
    updates[i, j, ...] along `axis` (negative: from the end). indices (INT32, INT64, UINT32,
    UINT64, or smaller integers widened) and updates have one shape, x's except on `axis`.
    Negative indices of signed types count from the end; an index outside the axis is
    dropped. Duplicates: the update of the highest coordinate on `axis` wins.
    `reduction` (gpudml's extension, ONNX's): "add", "mul", "max" or "min" combine the
    updates with the element in index order; None or "none" replaces."""
    return Call([("x", x), ("indices", indices, partial(indices_array, where="scatter_elements")),
                 ("updates", updates)],
                {"axis": axis, "reduction": reduction}, device)


def arguments(desc: ScatterElementsOperatorDesc) -> dict:
    return {"axis": desc.axis, "reduction": desc.reduction}


def index_sample(data_type: DataType, n: int, count: int, rng) -> np.ndarray:
    """Indices on an axis of n: mostly inside it (from its end too, for signed types),
    some just past either end."""
    low = -n - 2 if data_type in (I32, I64) else 0
    return rng.integers(low, n + 2, size=count).astype(data_type.numpy)


def sample(desc: ScatterElementsOperatorDesc, rng) -> list:
    """Random input and update bits; indices mostly inside the axis."""
    indices = desc.indices_tensor
    return [random_buffer(desc.input_tensor, rng),
            index_sample(indices.data_type, desc.input_tensor.sizes[desc.axis], indices.required_elements, rng),
            random_buffer(desc.updates_tensor, rng)]


def from_cli(x: TensorDesc, a: dict) -> ScatterElementsOperatorDesc:
    axis = a["axis"] if a["axis"] is not None else x.rank - 1
    sizes = list(a["indices_shape"] or x.sizes)
    indices = TensorDesc(DataType.coerce(a["indices_dtype"], "--indices-dtype"), sizes)
    return infer_output(x, indices, TensorDesc(x.data_type, sizes), axis, a["reduction"])


REDUCTION_ARG = CliArg("--reduction", "gpudml's extension: none, add, mul, max or min", "str", "none")
_SOURCE = "ns-directml-dml_scatter_operator_desc.md"  # tests/data/pages/

SPEC = OpSpec(
    name=OP, key="scatter_elements", desc=ScatterElementsOperatorDesc, support=SUPPORT,
    infer_output=infer_output, validate=validate, reference=reference, functional=scatter_elements,
    tensors=("x", "indices", "updates"), arguments=arguments, sample=sample, tolerance=tolerance,
    planner=ProblemPlanner(problem, FAMILY),
    cli=Cli((CliArg("--axis", "Axis: the axis the indices select on (default: the last)", "number"),
             CliArg("--indices-shape", "IndicesTensor (and UpdatesTensor) sizes (default: the input's)"),
             CliArg("--indices-dtype", "IndicesTensor type: UINT32, INT32, UINT64 or INT64", "str", "UINT32"),
             REDUCTION_ARG),
            from_cli, "--shape 64,1024 --axis 1 --indices-shape 64,256 --indices-dtype INT64 --reduction add"),
    page="DML_SCATTER_OPERATOR_DESC",
    examples=(
        Example("scatter_elements-1", np.array([0, 1, 2, 3, 4], np.float32),
                {"indices": np.array([3, 1, 3, 0], np.uint32), "updates": np.array([5, 6, 7, 8], np.float32),
                 "axis": 0},
                np.array([8, 6, 2, 7, 4], np.float32), _SOURCE),
    ),
)
