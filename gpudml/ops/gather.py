"""DML_GATHER_OPERATOR_DESC (docs/operators/gather.md; the page is copied under
tests/data/pages/): output[...] = input[..., indices[...], ...], the coordinate on `axis`
read from the indices tensor. Out-of-range indices clamp into the axis."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import InvalidArgumentError
from ..kernels.movement.gather import GATHER
from ..tensor_desc import TensorDesc, as_int, check_same_rank, check_tensor_desc
from ..types import F16, F32, I32, I64, TYPES_8, TYPES_11, U32, U64, DataType, FeatureLevel
from .base import integer_array, numpy_axis
from .spec import Call, Cli, CliArg, Example, OpSpec, element_bytes, random_buffer, support_table

OP = "Gather"
INDEX_TYPES = frozenset({I64, I32, U64, U32})

SUPPORT = support_table(OP, ("input_tensor", "indices_tensor", "output_tensor"), [
    (FeatureLevel.FL_4_1, (1, 8), TYPES_11, INDEX_TYPES, TYPES_11),
    (FeatureLevel.FL_3_0, (1, 8), TYPES_8, INDEX_TYPES, TYPES_8),
    (FeatureLevel.FL_2_1, {4}, TYPES_8, {U32}, TYPES_8),
    (FeatureLevel.FL_1_0, {4}, {F32, F16}, {U32}, {F32, F16}),
])


@dataclass(frozen=True)
class GatherOperatorDesc:
    input_tensor: TensorDesc
    indices_tensor: TensorDesc
    output_tensor: TensorDesc
    axis: int
    index_dimensions: int

    def __post_init__(self):
        object.__setattr__(self, "axis", as_int(self.axis, f"{OP}: axis"))
        object.__setattr__(self, "index_dimensions", as_int(self.index_dimensions, f"{OP}: index_dimensions"))


# ---------------------------------------------------------------------------- shapes
def output_sizes(input_sizes, indices_sizes, axis: int, index_dimensions: int) -> tuple[int, ...]:
    """OutputTensor.Sizes by the page's rule (and DirectMLX's dml::Gather): the input's
    sizes before `axis`, the indices' last `index_dimensions` sizes, the input's sizes after
    `axis`, right-aligned to the input's DimensionCount: entries beyond it are cropped from
    the front (validate requires them to be leading 1s of the input), a missing one
    (IndexDimensions 0) is a leading 1."""
    rank = len(input_sizes)
    tail = list(indices_sizes[len(indices_sizes) - index_dimensions:]) if index_dimensions else []
    full = [*input_sizes[:axis], *tail, *input_sizes[axis + 1:]]
    full = [1] * (rank - len(full)) + full
    return tuple(full[len(full) - rank:])


def leading_ones(sizes, before: int) -> int:
    """How many of sizes[0], sizes[1], ... before index `before` are 1 in a row."""
    count = 0
    while count < before and sizes[count] == 1:
        count += 1
    return count


def default_index_dimensions(indices_sizes) -> int:
    """The page's "actual index dimensions": the indices' DimensionCount after its leading
    1s, at least 1 (so a single index keeps the gathered axis, of size 1, in place)."""
    rank = len(indices_sizes)
    return max(1, rank - leading_ones(indices_sizes, rank))


def infer_output(input_tensor: TensorDesc, indices, axis, index_dimensions=None) -> GatherOperatorDesc:
    """The desc of `gather(x, indices, axis, index_dimensions=)`: x and indices have one
    DimensionCount; a negative axis counts from the end (the desc takes DirectML's axis
    only); index_dimensions defaults to the indices' dimensions after their leading 1s. The
    output's sizes follow the page's rule where the arguments allow it (validate names what
    they break)."""
    axis = numpy_axis(axis, input_tensor.rank, "gather")
    k = (default_index_dimensions(indices.sizes) if index_dimensions is None
         else as_int(index_dimensions, "gather: index_dimensions"))
    sizes = output_sizes(input_tensor.sizes, indices.sizes, axis, k) if 0 <= k <= indices.rank else input_tensor.sizes
    return GatherOperatorDesc(input_tensor, indices, TensorDesc(input_tensor.data_type, sizes), axis, k)


# ---------------------------------------------------------------------------- validation
def validate(desc: GatherOperatorDesc, feature_level: FeatureLevel) -> None:
    inp, indices, out = desc.input_tensor, desc.indices_tensor, desc.output_tensor
    check_tensor_desc(OP, "input_tensor", inp)
    check_tensor_desc(OP, "indices_tensor", indices)
    check_tensor_desc(OP, "output_tensor", out, is_output=True)
    rank = check_same_rank(OP, {"input_tensor": inp, "indices_tensor": indices, "output_tensor": out})
    if out.data_type != inp.data_type:
        raise InvalidArgumentError(
            f"{OP}: output_tensor.data_type {out.data_type.name} must equal "
            f"input_tensor.data_type {inp.data_type.name}")
    SUPPORT.check(feature_level, rank, {"input_tensor": inp.data_type, "indices_tensor": indices.data_type,
                                        "output_tensor": out.data_type})
    axis, k = desc.axis, desc.index_dimensions
    if not 0 <= axis < rank:
        raise InvalidArgumentError(f"{OP}: axis = {axis} must be in [0, DimensionCount {rank})")
    if not 0 <= k <= rank:
        raise InvalidArgumentError(
            f"{OP}: index_dimensions = {k} must be in [0, DimensionCount {rank}] (the page says [0, "
            f"DimensionCount); its examples 1 and 3 use DimensionCount itself)")
    _check_index_dimensions(desc, rank)
    want = output_sizes(inp.sizes, indices.sizes, axis, k)
    if out.sizes != want:
        raise InvalidArgumentError(
            f"{OP}: output_tensor.sizes {list(out.sizes)} must be {list(want)}: input_tensor.sizes[0..{axis}) "
            f"{list(inp.sizes[:axis])}, the last {k} of indices_tensor.sizes {list(indices.sizes)}, "
            f"input_tensor.sizes({axis}..{rank}) {list(inp.sizes[axis + 1:])}, right-aligned to DimensionCount {rank}")


def _check_index_dimensions(desc: GatherOperatorDesc, rank: int) -> None:
    """Only the indices' last k dimensions hold indices (the others are 1), and the output
    has room for them: original rank + k - 1 <= DimensionCount, the input's original rank
    being its DimensionCount less its leading 1s before the axis (the only dimensions the
    page lets the output crop)."""
    inp, indices, axis, k = desc.input_tensor, desc.indices_tensor, desc.axis, desc.index_dimensions
    for i, n in enumerate(indices.sizes[:rank - k]):
        if n != 1:
            raise InvalidArgumentError(
                f"{OP}: indices_tensor.sizes[{i}] = {n} must be 1: with index_dimensions = {k} only the last {k} "
                f"of indices_tensor.sizes {list(indices.sizes)} hold indices")
    ones = leading_ones(inp.sizes, axis)
    if k - 1 > ones:
        original = rank - ones
        raise InvalidArgumentError(
            f"{OP}: index_dimensions = {k} needs original rank + IndexDimensions - 1 = {original} + {k} - 1 = "
            f"{original + k - 1} <= DimensionCount {rank} (input_tensor.sizes {list(inp.sizes)} has {ones} leading "
            f"1s before axis {axis}; the output crops only those)")


# ---------------------------------------------------------------------------- reference
def reference(x, indices, axis, index_dimensions=None) -> np.ndarray:
    """numpy.take along `axis` with the indices' last `index_dimensions` dimensions, shaped
    by the page's rule (its leading 1s cropped, or a leading 1 added for 0). An index v of
    a signed type counts from the end when negative (v + n); then every index clamps into
    [0, n - 1]. x and indices have one rank; a negative axis counts from the end;
    index_dimensions defaults as in `gather`."""
    x, indices = np.asarray(x), np.asarray(indices)
    rank = x.ndim
    axis = int(axis)
    if not -rank <= axis < rank or indices.ndim != rank:
        raise ValueError(f"axis {axis} of a rank-{rank} x, indices of rank {indices.ndim}: expected one rank")
    axis %= rank
    k = default_index_dimensions(indices.shape) if index_dimensions is None else int(index_dimensions)
    if not 0 <= k <= rank or any(n != 1 for n in indices.shape[:rank - k]):
        raise ValueError(f"indices shape {indices.shape}: only its last {k} dimensions may differ from 1")
    taken = np.take(x, clamped_indices(indices.reshape(indices.shape[rank - k:]), x.shape[axis]), axis=axis)
    want = output_sizes(x.shape, indices.shape, axis, k)
    if taken.size != int(np.prod(want)):
        raise ValueError(f"the output {taken.shape} does not fit DimensionCount {rank} by cropping leading 1s")
    return taken.reshape(want)


def clamped_indices(values: np.ndarray, n: int) -> np.ndarray:
    """Indices into an axis of n as int64: negative ones (signed types) from the end, then
    clamped into [0, n - 1]; exact for every INT64 and UINT64 value."""
    if values.dtype.kind == "u":
        return np.minimum(values, np.array(n - 1, values.dtype)).astype(np.int64)
    if values.dtype.kind != "i":
        raise ValueError(f"indices must be integers, got dtype {values.dtype}")
    v = np.clip(values.astype(np.int64), -n - 1, n)  # no overflow below
    return np.clip(np.where(v < 0, v + n, v), 0, n - 1)


# ---------------------------------------------------------------------------- API
def indices_array(indices, where: str = "gather") -> np.ndarray:
    """An integer array of indices as one of the index types: INT32, INT64, UINT32 and
    UINT64 as they are, smaller integers widened to INT32 or UINT32 (values unchanged);
    `where`: the functional form whose messages name it."""
    values = integer_array(indices, f"{where}: indices", "indices must be integers")
    if values.dtype.itemsize < 4:
        values = values.astype(np.int32 if values.dtype.kind == "i" else np.uint32)
    return values


def gather(x, indices, axis, *, index_dimensions=None, device=None):
    """DML_GATHER: output[...] = x[..., indices[...], ...] along `axis` (negative: from the
    end). `indices` has x's DimensionCount; its last `index_dimensions` dimensions (default:
    all after its leading 1s) are the index dimensions, the others 1. A Tensor (INT32,
    INT64, UINT32, UINT64) or an integer array (smaller types widened to 32 bits). Negative
    indices of signed types count from the end of the axis; out-of-range ones clamp."""
    return Call([("x", x), ("indices", indices, indices_array)], {"axis": axis, "index_dimensions": index_dimensions},
                device)


def arguments(desc: GatherOperatorDesc) -> dict:
    return {"axis": desc.axis, "index_dimensions": desc.index_dimensions}


def traffic(desc: GatherOperatorDesc) -> int:
    """Each output element read once and written once, each index read once."""
    return 2 * element_bytes(desc.output_tensor) + element_bytes(desc.indices_tensor)


def sample(desc: GatherOperatorDesc, rng) -> list:
    """Random input bits; indices mostly inside the axis (from its end too, for signed
    types), a few beyond it either way."""
    indices = desc.indices_tensor
    n = desc.input_tensor.sizes[desc.axis]
    low = -n - 2 if indices.data_type in (I32, I64) else 0
    values = rng.integers(low, n + 2, size=indices.required_elements)
    return [random_buffer(desc.input_tensor, rng), values.astype(indices.data_type.numpy)]


def from_cli(x: TensorDesc, a: dict) -> GatherOperatorDesc:
    axis = a["axis"] if a["axis"] is not None else x.rank - 1
    sizes = a["indices_shape"] or [1] * (x.rank - 1) + [x.sizes[axis]]
    indices = TensorDesc(DataType.coerce(a["indices_dtype"], "--indices-dtype"), sizes)
    return infer_output(x, indices, axis, a["index_dimensions"])


_SOURCE = "ns-directml-dml_gather_operator_desc.md"  # tests/data/pages/
_3X2 = np.arange(1, 7, dtype=np.float32).reshape(3, 2)

SPEC = OpSpec(
    name=OP, key="gather", desc=GatherOperatorDesc, support=SUPPORT,
    infer_output=infer_output, validate=validate,
    reference=reference, functional=gather, tensors=("x", "indices"),
    arguments=arguments, traffic=traffic, sample=sample, planner=GATHER,
    cli=Cli((CliArg("--axis", "Axis: the axis to gather along (default: the last)", "number"),
             CliArg("--indices-shape", "IndicesTensor sizes (default: 1s, then the input's size on the axis)"),
             CliArg("--index-dimensions", "IndexDimensions (default: the indices' dimensions after their leading 1s)",
                    "number"),
             CliArg("--indices-dtype", "IndicesTensor type: UINT32, INT32, UINT64 or INT64", "str", "UINT32")),
            from_cli, "--shape 3,2 --axis 0 --indices-shape 1,4 --index-dimensions 1 --indices-dtype INT64"),
    page="DML_GATHER_OPERATOR_DESC",
    examples=(
        Example("gather-1", np.array([11, 12, 13, 14], np.float32),
                {"indices": np.array([3, 1, 3, 0, 2], np.uint32), "axis": 0, "index_dimensions": 1},
                np.array([14, 12, 14, 11, 13], np.float32), _SOURCE),
        Example("gather-2", _3X2, {"indices": np.array([[0, 1, 1, 2]], np.uint32), "axis": 0, "index_dimensions": 1},
                np.array([[1, 2], [3, 4], [3, 4], [5, 6]], np.float32), _SOURCE),
        # The page says IndexDimensions 2, which its own rule (original rank 2 + 2 - 1 > 2)
        # and DirectMLX (output sizes {1, 2}) reject; its output {3, 2} is IndexDimensions 1.
        Example("gather-3", _3X2, {"indices": np.array([[1, 0]], np.uint32), "axis": 1, "index_dimensions": 1},
                np.array([[2, 1], [4, 3], [6, 5]], np.float32), _SOURCE),
        Example("gather-4", np.arange(1, 10, dtype=np.float32).reshape(1, 3, 3),
                {"indices": np.array([[[0, 2]]], np.uint32), "axis": 2, "index_dimensions": 2},
                np.array([[[1, 3]], [[4, 6]], [[7, 9]]], np.float32), _SOURCE),
        Example("gather-5", _3X2.reshape(1, 3, 2),
                {"indices": np.array([[[0, 1], [1, 2]]], np.uint32), "axis": 1, "index_dimensions": 2},
                np.array([[[1, 2], [3, 4]], [[3, 4], [5, 6]]], np.float32), _SOURCE),
    ),
)
