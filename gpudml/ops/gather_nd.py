"""DML_GATHER_ND_OPERATOR_DESC (FL 2.1, `gather_nd0`) and DML_GATHER_ND1_OPERATOR_DESC (FL 3.0,
`gather_nd`: batch dimensions), two rows of one table (docs/operators/gather_nd0.md and
gather_nd1.md; the pages are copied under tests/data/pages/): output[batch, i..., s...] =
input[batch, indices[batch, i..., :], s...], each index tuple (the indices' last dimension,
of size t) selecting a sub-block of the input (ONNX's GatherND with batch_dims). The kernels
are the data-movement family's (kernels/movement/gather_nd.py): bit-exact for every type, a
stage of a graph's fused chains.

What the pages say, as implemented (r the tensors' one DimensionCount; the meaningful
dimensions of a tensor are its last InputDimensionCount m (input) or IndicesDimensionCount k
(indices), the ones before them 1s; b BatchDimensionCount, 0 for GATHER_ND):

- The three tensors have one DimensionCount (4 at FL 2.1, 1 to 8 from FL 3.0), Input and
  Output one DataType; the types of the pages' tables (indices UINT32 at FL 2.1; INT64,
  INT32, UINT64, UINT32 from FL 3.0).
- InputDimensionCount in [1, r], IndicesDimensionCount in [1, r], BatchDimensionCount in
  [0, r); the dimensions before the meaningful ones are 1.
- The first b meaningful dimensions of the input and of the indices are the batches: equal
  sizes (no broadcast: the pages have none). The indices' meaningful dimensions hold the
  batches and at least the tuple: b <= k - 1.
- t = IndicesTensor.Sizes[r - 1], the tuple size: 1 <= t <= m - b (ONNX's rule; the pages say
  only that it "cannot exceed InputTensor.DimensionCount").
- OutputTensor.Sizes: the indices' meaningful sizes but the last, then the input's sizes
  after its batches and the t indexed dimensions, right-aligned with leading 1s; they must
  fit DimensionCount: (k - 1) + (m - b - t) <= r. The pages' formula reads the input's last
  t sizes ("InputTensor.Sizes[(InputTensor.DimensionCount - indexTupleSize) ..
  InputTensor.DimensionCount]"); their own worked example ({3,4,5,6,7} by 3-tuples gives
  {1,1,2,6,7}: "ignoring the first 3 dimensions") and ONNX take the sizes after the
  indexed ones, and so does gpudml.
- Negative indices of the signed types count from the end of their dimension (v + n; the
  pages, from FL 3.0: the signed index types exist only from there).

Where the pages are silent: an index outside its dimension (v >= n, or v < -n) clamps into
[0, n - 1], as DML_GATHER's page promises for its indices: no read ever leaves the input.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import InvalidArgumentError
from ..kernels.movement.gather_nd import GATHER_ND
from ..tensor_desc import TensorDesc, as_int
from ..types import I32, I64, TYPES_8, U32, DataType, FeatureLevel
from .gather import INDEX_TYPES, check_index_tensors, clamped_indices, indices_array, leading_ones, traffic
from .spec import Call, Cli, CliArg, Example, OpSpec, random_buffer, support_table

TENSORS = ("input_tensor", "indices_tensor", "output_tensor")
SUPPORT_0 = support_table("GatherNd", TENSORS, [
    (FeatureLevel.FL_3_0, (1, 8), TYPES_8, INDEX_TYPES, TYPES_8),
    (FeatureLevel.FL_2_1, {4}, TYPES_8, {U32}, TYPES_8),
])
SUPPORT_1 = support_table("GatherNd1", TENSORS, [(FeatureLevel.FL_3_0, (1, 8), TYPES_8, INDEX_TYPES, TYPES_8)])


@dataclass(frozen=True)
class GatherNdOperatorDesc:
    input_tensor: TensorDesc
    indices_tensor: TensorDesc
    output_tensor: TensorDesc
    input_dimension_count: int
    indices_dimension_count: int

    OP = "GatherNd"

    def __post_init__(self):
        for name in ("input_dimension_count", "indices_dimension_count"):
            object.__setattr__(self, name, as_int(getattr(self, name), f"{self.OP}: {name}"))

    @property
    def batch_count(self) -> int:
        return 0


@dataclass(frozen=True)
class GatherNd1OperatorDesc:
    input_tensor: TensorDesc
    indices_tensor: TensorDesc
    output_tensor: TensorDesc
    input_dimension_count: int
    indices_dimension_count: int
    batch_dimension_count: int

    OP = "GatherNd1"

    def __post_init__(self):
        for name in ("input_dimension_count", "indices_dimension_count", "batch_dimension_count"):
            object.__setattr__(self, name, as_int(getattr(self, name), f"{self.OP}: {name}"))

    @property
    def batch_count(self) -> int:
        return self.batch_dimension_count


# ---------------------------------------------------------------------------- shapes
def output_sizes(input_sizes, indices_sizes, m: int, k: int, b: int) -> tuple[int, ...]:
    """OutputTensor.Sizes (module docstring): the indices' meaningful sizes but the last,
    the input's after its batches and indexed dimensions, right-aligned with leading 1s to
    DimensionCount (a longer list, which validate refuses, is returned whole)."""
    r = len(input_sizes)
    t = indices_sizes[-1]
    meaningful = [*indices_sizes[r - k:r - 1], *input_sizes[r - m + b + t:]]
    return tuple([1] * (r - len(meaningful)) + meaningful)


def default_counts(input_sizes, indices_sizes, b: int) -> tuple[int, int]:
    """The functional form's InputDimensionCount and IndicesDimensionCount when not given:
    each tensor's dimensions after its leading 1s, at least the batches and the tuple
    (input: b + t; indices: b + 1)."""
    r = len(input_sizes)
    t = indices_sizes[-1] if indices_sizes else 1
    m = max(r - leading_ones(input_sizes, r), b + t)
    k = max(r - leading_ones(indices_sizes, len(indices_sizes)), b + 1)
    return min(m, r), min(k, len(indices_sizes))


def _infer(desc_class, input_tensor: TensorDesc, indices: TensorDesc, m, k, b, where: str):
    b = as_int(b, f"{where}: batch_dimension_count")
    dm, dk = default_counts(input_tensor.sizes, indices.sizes, b)
    m = dm if m is None else as_int(m, f"{where}: input_dimension_count")
    k = dk if k is None else as_int(k, f"{where}: indices_dimension_count")
    r = input_tensor.rank
    fits = indices.rank == r and 1 <= k <= r and 0 <= m <= r
    sizes = output_sizes(input_tensor.sizes, indices.sizes, m, k, b) if fits else input_tensor.sizes
    out = TensorDesc(input_tensor.data_type, sizes if len(sizes) == r else input_tensor.sizes)
    extra = () if desc_class is GatherNdOperatorDesc else (b,)
    return desc_class(input_tensor, indices, out, m, k, *extra)


def infer_output_0(input_tensor: TensorDesc, indices: TensorDesc, input_dimension_count=None,
                   indices_dimension_count=None) -> GatherNdOperatorDesc:
    """The desc of `gather_nd0(x, indices, ...)`: x and indices have one DimensionCount; the
    counts default as `default_counts` says."""
    return _infer(GatherNdOperatorDesc, input_tensor, indices, input_dimension_count, indices_dimension_count, 0,
                  "gather_nd0")


def infer_output_1(input_tensor: TensorDesc, indices: TensorDesc, batch_dimension_count=0,
                   input_dimension_count=None, indices_dimension_count=None) -> GatherNd1OperatorDesc:
    """The desc of `gather_nd(x, indices, batch_dimension_count, ...)`."""
    return _infer(GatherNd1OperatorDesc, input_tensor, indices, input_dimension_count, indices_dimension_count,
                  batch_dimension_count, "gather_nd")


# ---------------------------------------------------------------------------- validation
def _validate(support):
    def validate(desc, feature_level: FeatureLevel) -> None:
        op = desc.OP
        inp, indices, out = desc.input_tensor, desc.indices_tensor, desc.output_tensor
        r = check_index_tensors(op, support, feature_level, inp, indices, out)
        m, k, b = desc.input_dimension_count, desc.indices_dimension_count, desc.batch_count
        if not 1 <= m <= r:
            raise InvalidArgumentError(f"{op}: input_dimension_count = {m} must be in [1, DimensionCount {r}]")
        if not 1 <= k <= r:
            raise InvalidArgumentError(f"{op}: indices_dimension_count = {k} must be in [1, DimensionCount {r}]")
        if not 0 <= b < r:
            raise InvalidArgumentError(f"{op}: batch_dimension_count = {b} must be in [0, DimensionCount {r})")
        for field, td, count in (("input_tensor", inp, m), ("indices_tensor", indices, k)):
            for d, n in enumerate(td.sizes[:r - count]):
                if n != 1:
                    raise InvalidArgumentError(
                        f"{op}: {field}.sizes[{d}] = {n} must be 1: only the last {count} of {field}.sizes "
                        f"{list(td.sizes)} are meaningful ({field.removesuffix('_tensor')}_dimension_count {count})")
        if b > k - 1:
            raise InvalidArgumentError(
                f"{op}: batch_dimension_count = {b} must be <= indices_dimension_count - 1 = {k - 1} (the indices' "
                f"meaningful dimensions hold the batches, then the index tuple)")
        t = indices.sizes[r - 1]
        if not 1 <= t <= m - b:
            raise InvalidArgumentError(
                f"{op}: the index tuple size indices_tensor.sizes[{r - 1}] = {t} must be in [1, "
                f"input_dimension_count - batch_dimension_count = {m} - {b} = {m - b}]")
        for i in range(b):
            n, nb = inp.sizes[r - m + i], indices.sizes[r - k + i]
            if n != nb:
                raise InvalidArgumentError(
                    f"{op}: batch dimension {i}: indices_tensor.sizes[{r - k + i}] = {nb} must equal "
                    f"input_tensor.sizes[{r - m + i}] = {n}")
        count = (k - 1) + (m - b - t)
        if count > r:
            raise InvalidArgumentError(
                f"{op}: the output's dimensions (indices_dimension_count - 1) + (input_dimension_count - "
                f"batch_dimension_count - tuple size) = {k - 1} + {m - b - t} = {count} must be <= DimensionCount {r}")
        want = output_sizes(inp.sizes, indices.sizes, m, k, b)
        if out.sizes != want:
            raise InvalidArgumentError(
                f"{op}: output_tensor.sizes {list(out.sizes)} must be {list(want)}: indices_tensor.sizes"
                f"[{r - k}..{r - 1}) {list(indices.sizes[r - k:r - 1])}, then input_tensor.sizes[{r - m + b + t}.."
                f"{r}) {list(inp.sizes[r - m + b + t:])}, right-aligned to DimensionCount {r}")
    return validate


# ---------------------------------------------------------------------------- reference
def reference_1(x, indices, batch_dimension_count=0, input_dimension_count=None,
                indices_dimension_count=None) -> np.ndarray:
    """Each index tuple of the indices' last dimension selects a sub-block of x within its
    batch, written in the layout of the pages' rule; each coordinate clamps as DML_GATHER's
    indices do (negative ones of signed types from the end, then into [0, n - 1]). x and
    indices have one rank; the counts default as in `gather_nd`."""
    x, indices = np.asarray(x), np.asarray(indices)
    r, b = x.ndim, int(batch_dimension_count)
    if indices.ndim != r:
        raise ValueError(f"x of rank {r}, indices of rank {indices.ndim}: expected one rank")
    dm, dk = default_counts(x.shape, indices.shape, b)
    m = dm if input_dimension_count is None else int(input_dimension_count)
    k = dk if indices_dimension_count is None else int(indices_dimension_count)
    data, idx = x.reshape(x.shape[r - m:]), indices.reshape(indices.shape[r - k:])
    t = idx.shape[-1]
    batches = int(np.prod(data.shape[:b], dtype=np.int64))
    if data.shape[:b] != idx.shape[:b] or not 1 <= t <= m - b:
        raise ValueError(f"x {x.shape} and indices {indices.shape}: batches or tuple size do not fit")
    rest = data.shape[b + t:]
    tuples = idx.reshape(batches, -1, t)
    coords = [clamped_indices(tuples[..., c], data.shape[b + c]) for c in range(t)]
    blocks = data.reshape(batches, *data.shape[b:])[(np.arange(batches)[:, None], *coords)]
    want = output_sizes(x.shape, indices.shape, m, k, b)
    if len(want) != r:
        raise ValueError(f"the output {want} does not fit DimensionCount {r}")
    assert blocks.shape[2:] == rest
    return blocks.reshape(want)


def reference_0(x, indices, input_dimension_count=None, indices_dimension_count=None) -> np.ndarray:
    """GATHER_ND: `reference_1` of no batch dimension."""
    return reference_1(x, indices, 0, input_dimension_count, indices_dimension_count)


# ---------------------------------------------------------------------------- API
def gather_nd(x, indices, batch_dimension_count=0, *, input_dimension_count=None, indices_dimension_count=None,
              device=None):
    """DML_GATHER_ND1: output[batch, i..., s...] = x[batch, indices[batch, i..., :], s...]
    (ONNX's GatherND with batch_dims). x and indices have one DimensionCount; the indices'
    last dimension is the index tuple. The counts of meaningful dimensions (the rest are
    leading 1s) default to each tensor's dimensions after its leading 1s, at least the
    batches and the tuple: pass them where a leading 1 is meaningful. `indices`: a Tensor
    (INT32, INT64, UINT32, UINT64) or an integer array (smaller types widened to 32 bits);
    negative indices of signed types count from the end, out-of-range ones clamp."""
    return Call([("x", x), ("indices", indices, lambda v: indices_array(v, "gather_nd"))],
                {"batch_dimension_count": batch_dimension_count, "input_dimension_count": input_dimension_count,
                 "indices_dimension_count": indices_dimension_count}, device)


def gather_nd0(x, indices, *, input_dimension_count=None, indices_dimension_count=None, device=None):
    """DML_GATHER_ND: `gather_nd` without batch dimensions (FL 2.1)."""
    return Call([("x", x), ("indices", indices, lambda v: indices_array(v, "gather_nd0"))],
                {"input_dimension_count": input_dimension_count, "indices_dimension_count": indices_dimension_count},
                device)


def arguments_0(desc) -> dict:
    return {"input_dimension_count": desc.input_dimension_count,
            "indices_dimension_count": desc.indices_dimension_count}


def arguments_1(desc) -> dict:
    return {"batch_dimension_count": desc.batch_dimension_count, **arguments_0(desc)}


def sample(desc, rng) -> list:
    """Random input bits; each tuple coordinate mostly inside its dimension (from its end
    too, for signed types), a few beyond it either way."""
    inp, indices = desc.input_tensor, desc.indices_tensor
    r, m, b = inp.rank, desc.input_dimension_count, desc.batch_count
    sizes = np.array(inp.sizes[r - m + b:r - m + b + indices.sizes[-1]])
    count = indices.required_elements
    n = np.resize(sizes, count) if sizes.size else np.ones(count, np.int64)
    signed = indices.data_type in (I32, I64)
    values = rng.integers(np.where(signed, -n - 2, 0), n + 2)
    return [random_buffer(inp, rng), values.astype(indices.data_type.numpy)]


def _from_cli(batch: bool):
    def desc(x: TensorDesc, a: dict):
        r = x.rank
        b = (a["batch_dimension_count"] or 0) if batch else 0
        t = a["tuple_size"] if a["tuple_size"] is not None else 1
        sizes = a["indices_shape"] or [*x.sizes[:b], *([1] * (r - b - 2)), 3, t][-r:]
        indices = TensorDesc(DataType.coerce(a["indices_dtype"], "--indices-dtype"), sizes)
        m, k = a["input_dimension_count"], a["indices_dimension_count"]
        if batch:
            return infer_output_1(x, indices, b, m, k)
        return infer_output_0(x, indices, m, k)
    return desc


def _cli(batch: bool, example: str) -> Cli:
    args = (CliArg("--indices-shape", "IndicesTensor sizes, the tuple last (default: the batches, 1s, then 3 "
                                      "tuples of --tuple-size)"),
            CliArg("--tuple-size", "the index tuple size, where --indices-shape is not given (default 1)", "number"),
            CliArg("--input-dimension-count", "InputDimensionCount (default: after the input's leading 1s)",
                   "number"),
            CliArg("--indices-dimension-count", "IndicesDimensionCount (default: after the indices' leading 1s)",
                   "number"),
            CliArg("--indices-dtype", "IndicesTensor type: UINT32, INT32, UINT64 or INT64", "str", "UINT32"))
    if batch:
        args = (CliArg("--batch-dimension-count", "BatchDimensionCount (default 0)", "number"), *args)
    return Cli(args, _from_cli(batch), example)


_SOURCE_0 = "ns-directml-dml_gather_nd_operator_desc.md"  # tests/data/pages/
_SOURCE_1 = "ns-directml-dml_gather_nd1_operator_desc.md"
_2X2 = np.arange(4, dtype=np.float32).reshape(2, 2)

SPEC_0 = OpSpec(
    name="GatherNd", key="gather_nd0", desc=GatherNdOperatorDesc, support=SUPPORT_0,
    infer_output=infer_output_0, validate=_validate(SUPPORT_0),
    reference=reference_0, functional=gather_nd0, tensors=("x", "indices"),
    arguments=arguments_0, traffic=traffic, sample=sample, planner=GATHER_ND,
    cli=_cli(False, "--shape 1,2,2,2 --indices-shape 1,1,2,2 --input-dimension-count 3 "
                    "--indices-dimension-count 2"),
    page="DML_GATHER_ND_OPERATOR_DESC",
    examples=(
        Example("gather_nd0-1", _2X2, {"indices": np.array([[1], [0]], np.uint32), "input_dimension_count": 2,
                                       "indices_dimension_count": 2},
                np.array([[2, 3], [0, 1]], np.float32), _SOURCE_0),
        Example("gather_nd0-2", np.arange(8, dtype=np.float32).reshape(1, 2, 2, 2),
                {"indices": np.array([[[[0, 1], [1, 0]]]], np.uint32), "input_dimension_count": 3,
                 "indices_dimension_count": 2},
                np.array([[[[2, 3], [4, 5]]]], np.float32), _SOURCE_0),
    ),
)

SPEC_1 = OpSpec(
    name="GatherNd1", key="gather_nd1", desc=GatherNd1OperatorDesc, support=SUPPORT_1,
    infer_output=infer_output_1, validate=_validate(SUPPORT_1),
    reference=reference_1, functional=gather_nd, tensors=("x", "indices"),
    arguments=arguments_1, traffic=traffic, sample=sample, planner=GATHER_ND,
    cli=_cli(True, "--shape 1,3,2,2 --indices-shape 1,3,2,2 --batch-dimension-count 1 "
                   "--input-dimension-count 3 --indices-dimension-count 3 --indices-dtype INT64"),
    page="DML_GATHER_ND1_OPERATOR_DESC",
    examples=(
        Example("gather_nd1-1", _2X2, {"indices": np.array([[1], [0]], np.uint32), "batch_dimension_count": 0,
                                       "input_dimension_count": 2, "indices_dimension_count": 2},
                np.array([[2, 3], [0, 1]], np.float32), _SOURCE_1),
        Example("gather_nd1-2", np.arange(12, dtype=np.float32).reshape(1, 3, 2, 2),
                {"indices": np.array([[[[0, 0], [1, 1]], [[1, 1], [0, 0]], [[0, 1], [1, 0]]]], np.uint32),
                 "batch_dimension_count": 1, "input_dimension_count": 3, "indices_dimension_count": 3},
                np.array([[[[0, 3], [7, 4], [9, 10]]]], np.float32), _SOURCE_1),
    ),
)

SPECS = (SPEC_0, SPEC_1)
