"""The rules of DML_GATHER_ND (`gather_nd0`) and DML_GATHER_ND1 (`gather_nd`): counts of
meaningful dimensions, batches and tuple sizes drawn where the input's sizes allow them;
indices of gather's `index_values` per tuple coordinate, hostile ones among them."""

from __future__ import annotations

import numpy as np
from conftest import random_bits
from hypothesis import strategies as st

import gpudml as dml
from gpudml import reference
from gpudml.ops import gather as gather_op

from ..draws import MAX_SIZE, Draw, T
from ..hostile import maybe_hostile
from ..registry import Ask, Drawn, rule
from .gather import _broken_integer, broken_index_tensors, index_values


def tuple_values(rng, data_type: T, desc) -> np.ndarray:
    """The indices' buffer: each tuple coordinate c drawn for its dimension of the input."""
    inp, indices = desc.input_tensor, desc.indices_tensor
    r, m, b, t = inp.rank, desc.input_dimension_count, desc.batch_count, indices.sizes[-1]
    count = indices.required_elements
    values = np.zeros(count, data_type.numpy)
    column = np.arange(count) % t  # (a packed buffer's coordinate; roomy layouts get some spread)
    for c in range(t):
        at = column == c
        values[at] = index_values(rng, data_type, inp.sizes[r - m + b + c], int(at.sum()))
    return values


def _fill(desc, rng) -> list:
    inp = desc.input_tensor
    return [random_bits(rng, inp.data_type.numpy, [inp.required_elements]),
            tuple_values(rng, desc.indices_tensor.data_type, desc)]


def counts(d, sizes, batched: bool) -> tuple[int, int, int, int]:
    """(m, k, b, t): a valid InputDimensionCount, IndicesDimensionCount, BatchDimensionCount
    and tuple size for an input of `sizes`."""
    r = len(sizes)
    m = d.int(max(1, r - gather_op.leading_ones(sizes, r)), r)
    b = d.int(0, min(m - 1, r - 1)) if batched else 0
    t = d.int(1, m - b)
    q = m - b - t
    k = d.int(b + 1, min(r, r - q + 1))
    return m, k, b, t


def _broken_of(batched: bool):
    @st.composite
    def broken(draw, desc):
        r = desc.input_tensor.rank
        kinds = ["input_dimension_count", "indices_dimension_count", "indices_type", "output_size", "output_type"]
        kind = draw(st.sampled_from(kinds + (["batch_dimension_count"] if batched else [])))
        if kind == "batch_dimension_count":
            return _broken_integer(draw, desc, kind, r - 1)
        if kind.endswith("_count"):
            return _broken_integer(draw, desc, kind, r)
        return broken_index_tensors(draw, desc, kind)
    return broken


def _functional_of(batched: bool):
    name = "gather_nd" if batched else "gather_nd0"

    @st.composite
    def functional(draw, x, shape):
        r = len(shape)
        b = draw(st.integers(0, r - 1)) if batched else 0
        t = draw(st.integers(1, r - b))
        q = r - b - t
        k = draw(st.integers(b + 1, min(r, r - q + 1)))
        index_sizes = [1] * (r - k) + list(shape[:b]) + [draw(st.integers(1, 3)) for _ in range(k - 1 - b)] + [t]
        dtype = draw(st.sampled_from([np.uint32, np.int64, np.int8, np.uint16, np.int32, np.uint64]))
        rng = np.random.default_rng(draw(st.integers(0, 999)))
        count = int(np.prod(index_sizes))
        columns = [index_values(rng, T.INT64, shape[b + c], count // t) for c in range(t)]
        indices = np.stack(columns, axis=-1).astype(dtype).reshape(index_sizes)
        hostile = st.sampled_from([indices.astype(np.float32), None, 3, indices.astype(bool), "1",
                                   indices.reshape(-1)])
        index_arg = draw(st.one_of(st.just(indices), hostile)) if draw(st.integers(0, 3)) == 0 else indices
        args = {"indices": index_arg, "input_dimension_count": maybe_hostile(draw, r),
                "indices_dimension_count": k}
        if batched:
            args["batch_dimension_count"] = maybe_hostile(draw, b)
        fn = getattr(reference, name)
        return args, lambda a: fn(a, gather_op.indices_array(args["indices"]),
                                  **{key: v for key, v in args.items() if key != "indices"})
    return functional


def _call_of(batched: bool):
    def call(d: Draw, ask: Ask) -> Drawn:
        """Counts drawn for the input's sizes; the indices: the input's batches, index
        dimensions of 1 to 4, the tuple; of the table's index type (hostile values: the fill)."""
        r = ask.rank
        sizes = ask.input_sizes(d)
        m, k, b, t = counts(d, sizes, batched)
        top = max(1, min(4, MAX_SIZE[r]))
        index_sizes = [1] * (r - k) + list(sizes[r - m:r - m + b]) + d.ints(k - 1 - b, 1, top) + [t]
        indices = dml.TensorDesc(ask.types["indices_tensor"], index_sizes)
        attributes = {"input_dimension_count": m, "indices_dimension_count": k}
        if batched:
            attributes["batch_dimension_count"] = b
        return Drawn([dml.TensorDesc(ask.data_type, sizes), indices], attributes)
    return call


_FIELDS = ("x", "input_tensor", "indices", "indices_tensor", "input_dimension_count", "indices_dimension_count",
           "device")
rule("gather_nd0", broken=_broken_of(False), functional=_functional_of(False), fill=_fill, free=("indices_tensor",),
     fields=_FIELDS)(_call_of(False))
rule("gather_nd1", broken=_broken_of(True), functional=_functional_of(True), fill=_fill, free=("indices_tensor",),
     fields=(*_FIELDS, "batch_dimension_count"))(_call_of(True))
