"""The rule of DML_GATHER_ELEMENTS (indices: gather's `index_values`, hostile ones among them)."""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

import gpudml as dml
from gpudml import reference
from gpudml.ops import gather as gather_op

from ..draws import MAX_SIZE, Draw, T
from ..hostile import maybe_hostile, replace_fields, with_entry
from ..registry import Ask, Drawn, rule
from .gather import _broken_integer, _gather_fill, broken_index_tensors, index_values


@st.composite
def _broken(draw, desc):
    rank = desc.input_tensor.rank
    kind = draw(st.sampled_from(["axis", "indices_type", "indices_size", "output_size", "output_type"]))
    if kind == "axis":
        return _broken_integer(draw, desc, "axis", rank - 1)
    if kind != "indices_size":
        return broken_index_tensors(draw, desc, kind)
    indices, out = desc.indices_tensor, desc.output_tensor
    a = draw(st.integers(0, rank - 1))
    if a == desc.axis:
        a = (a + 1) % rank
    if rank == 1:  # no other dimension: a rank of its own
        bad = dml.TensorDesc(indices.data_type, [1, *indices.sizes])
    else:
        bad = dml.TensorDesc(indices.data_type, with_entry(indices.sizes, a, indices.sizes[a] + 1))
    return replace_fields(desc, indices_tensor=bad, output_tensor=dml.TensorDesc(out.data_type, bad.sizes)), \
        "indices_tensor.sizes" if rank > 1 else "DimensionCount", kind


@st.composite
def _functional(draw, x, shape):
    rank = len(shape)
    axis = draw(st.integers(0, rank - 1))
    index_sizes = with_entry(shape, axis, draw(st.integers(1, 5)))
    dtype = draw(st.sampled_from([np.uint32, np.int64, np.int8, np.uint16, np.int32, np.uint64]))
    rng = np.random.default_rng(draw(st.integers(0, 999)))
    indices = index_values(rng, T.INT64, shape[axis], int(np.prod(index_sizes))).astype(dtype).reshape(index_sizes)
    hostile = st.sampled_from([indices.astype(np.float32), None, 3, indices.astype(bool),
                               np.zeros([n + 1 for n in index_sizes], np.uint32), "1", indices.reshape(-1)[:1]])
    index_arg = draw(st.one_of(st.just(indices), hostile)) if draw(st.integers(0, 3)) == 0 else indices
    args = {"indices": index_arg, "axis": maybe_hostile(draw, axis)}
    return args, lambda a: reference.gather_elements(a, gather_op.indices_array(args["indices"]), args["axis"])


@rule("gather_elements", broken=_broken, functional=_functional, fill=_gather_fill, free=("indices_tensor",),
      fields=("x", "input_tensor", "indices", "indices_tensor", "axis", "device"))
def gather_elements_call(d: Draw, ask: Ask) -> Drawn:
    """Any axis, the indices' size on it drawn; indices of the table's index type, hostile
    values among them (the fill)."""
    sizes = ask.input_sizes(d)
    axis = d.int(0, ask.rank - 1)
    index_sizes = with_entry(sizes, axis, d.int(1, MAX_SIZE[ask.rank]))
    indices = dml.TensorDesc(ask.types["indices_tensor"], index_sizes)
    return Drawn([dml.TensorDesc(ask.data_type, sizes), indices], {"axis": axis})
