"""The rule of DML_SCATTER_ELEMENTS (== DML_SCATTER)."""

from __future__ import annotations

import numpy as np
from conftest import random_bits
from hypothesis import strategies as st

import gpudml as dml
from gpudml import reference
from gpudml.ops.gather import indices_array

from ..draws import MAX_SIZE, Draw, T
from ..hostile import maybe_hostile, replace_fields, with_entry
from ..registry import Ask, Drawn, rule
from .gather import index_values

REDUCTIONS = ["none", "add", "mul", "max", "min"]


def _scatter_fill(desc, rng) -> list:
    """Random input and update bits; indices with hostile values among them (gather's)."""
    inp, indices, updates = desc.input_tensor, desc.indices_tensor, desc.updates_tensor
    return [random_bits(rng, inp.data_type.numpy, [inp.required_elements]),
            index_values(rng, indices.data_type, inp.sizes[desc.axis], indices.required_elements),
            random_bits(rng, updates.data_type.numpy, [updates.required_elements])]


def broken_scatter_tensors(draw, desc, kind: str):
    """(builder, fragment, kind) for the shared rules of both scatters: an index type the
    table lacks, updates of another type or sizes, the output's sizes or type, the reduction."""
    out = desc.output_tensor
    if kind == "indices_type":
        dt = draw(st.sampled_from([T.FLOAT32, T.FLOAT16, T.INT16, T.UINT16, T.INT8, T.UINT8, T.FLOAT64]))
        return replace_fields(desc, indices_tensor=dml.TensorDesc(dt, desc.indices_tensor.sizes)), \
            "indices_tensor.data_type", kind
    if kind == "updates_type":
        dt = draw(st.sampled_from([t for t in T if t != desc.updates_tensor.data_type]))
        return replace_fields(desc, updates_tensor=dml.TensorDesc(dt, desc.updates_tensor.sizes)), \
            "updates_tensor.data_type", kind
    if kind == "output_type":
        dt = draw(st.sampled_from([t for t in T if t != out.data_type]))
        return replace_fields(desc, output_tensor=dml.TensorDesc(dt, out.sizes)), "output_tensor.data_type", kind
    if kind == "updates_size":
        upd = desc.updates_tensor
        a = draw(st.integers(0, upd.rank - 1))
        bad = with_entry(upd.sizes, a, upd.sizes[a] + draw(st.integers(1, 3)))
        return replace_fields(desc, updates_tensor=dml.TensorDesc(upd.data_type, bad)), "updates_tensor.sizes", kind
    if kind == "reduction":
        return replace_fields(desc, reduction=draw(st.sampled_from(["sum", "", "ADD", 1, "mean"]))), "reduction", kind
    a = draw(st.integers(0, out.rank - 1))
    bad = with_entry(out.sizes, a, out.sizes[a] + draw(st.integers(1, 3)))
    return replace_fields(desc, output_tensor=dml.TensorDesc(out.data_type, bad)), "output_tensor.sizes", kind


SHARED_KINDS = ["indices_type", "updates_type", "updates_size", "output_type", "reduction", "output_size"]


@st.composite
def _scatter_broken(draw, desc):
    rank = desc.input_tensor.rank
    kind = draw(st.sampled_from(["axis", *SHARED_KINDS]))
    if kind == "axis":
        value = draw(st.sampled_from([rank, rank + 3, -1, -5, 1.0, "1", None]))
        return replace_fields(desc, axis=value), "axis", kind
    return broken_scatter_tensors(draw, desc, kind)


def reductions_for(dtype) -> list:
    """The reductions a functional call draws: replacing for any type, the arithmetic ones
    for integers (floats of random bits make NaNs whose payloads the adapter chooses)."""
    return [None, "none"] + (["add", "mul", "max", "min"] if np.dtype(dtype).kind in "iu" else [])


@st.composite
def _scatter_functional(draw, x, shape):
    rank = len(shape)
    axis = draw(st.integers(0, rank - 1))
    index_sizes = with_entry(list(shape), axis, draw(st.integers(1, 5)))
    dtype = draw(st.sampled_from([np.uint32, np.int64, np.int8, np.uint16, np.int32, np.uint64]))
    rng = np.random.default_rng(draw(st.integers(0, 999)))
    count = int(np.prod(index_sizes))
    indices = index_values(rng, T.INT64, max(shape[axis], 1), count).astype(dtype).reshape(index_sizes)
    kind = x.dtype.newbyteorder("=") if isinstance(x, np.ndarray) else np.dtype(np.float32)
    updates = random_bits(rng, kind, [count]).reshape(index_sizes) if kind.kind in "biuf" else \
        np.zeros(index_sizes, np.float32)
    hostile = st.sampled_from([indices.astype(np.float32), None, 3, np.zeros([n + 1 for n in index_sizes], np.uint32)])
    index_arg = draw(st.one_of(st.just(indices), hostile)) if draw(st.integers(0, 3)) == 0 else indices
    reduction = draw(st.sampled_from(reductions_for(kind) if kind.kind in "biuf" else [None]))
    args = {"indices": index_arg, "updates": updates, "axis": maybe_hostile(draw, axis),
            "reduction": maybe_hostile(draw, reduction)}
    return args, lambda a: reference.scatter_elements(a, indices_array(args["indices"]), updates, args["axis"],
                                                      args["reduction"])


@rule("scatter_elements", broken=_scatter_broken, functional=_scatter_functional, fill=_scatter_fill,
      free=("indices_tensor",),
      fields=("x", "input_tensor", "indices", "updates", "axis", "reduction", "device"))
def scatter_elements_call(d: Draw, ask: Ask) -> Drawn:
    """Any axis; indices and updates of the input's sizes but on the axis (1 to a few);
    any reduction (FLOAT64: none, the one every adapter runs: its reductions need shader-f64)."""
    rank = ask.rank
    sizes = ask.input_sizes(d)
    axis = d.int(0, rank - 1)
    index_sizes = with_entry(sizes, axis, d.int(1, max(2, MAX_SIZE[rank])))
    indices = dml.TensorDesc(ask.types["indices_tensor"], index_sizes)
    updates = dml.TensorDesc(ask.data_type, index_sizes)
    reduction = "none" if ask.data_type == T.FLOAT64 else d.pick(REDUCTIONS)
    return Drawn([dml.TensorDesc(ask.data_type, sizes), indices, updates], {"axis": axis, "reduction": reduction})
