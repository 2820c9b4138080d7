"""The rule of DML_ONE_HOT."""

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


def _one_hot_fill(desc, rng) -> list:
    """Indices with hostile values among them (gather's); random value bits."""
    indices, values = desc.indices_tensor, desc.values_tensor
    return [index_values(rng, indices.data_type, desc.output_tensor.sizes[desc.axis], indices.required_elements),
            random_bits(rng, values.data_type.numpy, [values.required_elements])]


@st.composite
def _one_hot_broken(draw, desc):
    rank = desc.output_tensor.rank
    kind = draw(st.sampled_from(["axis", "indices_size", "indices_type", "values_count", "output_type"]))
    if kind == "axis":
        return replace_fields(desc, axis=draw(st.sampled_from([rank, rank + 2, -1, 1.0, "0", None]))), "axis", kind
    idx, out, values = desc.indices_tensor, desc.output_tensor, desc.values_tensor
    if kind == "indices_size":
        a = draw(st.integers(0, rank - 1))
        bad = with_entry(idx.sizes, a, idx.sizes[a] + draw(st.integers(1, 3)))
        return replace_fields(desc, indices_tensor=dml.TensorDesc(idx.data_type, bad)), "indices_tensor.sizes", kind
    if kind == "indices_type":
        dt = draw(st.sampled_from([T.FLOAT32, T.FLOAT16, T.INT16, T.UINT16, T.INT8, T.UINT8, T.FLOAT64]))
        return replace_fields(desc, indices_tensor=dml.TensorDesc(dt, idx.sizes)), "indices_tensor.data_type", kind
    if kind == "values_count":
        return replace_fields(desc, values_tensor=dml.TensorDesc(values.data_type, [1] * rank)), \
            "values_tensor.sizes", kind
    dt = draw(st.sampled_from([t for t in T if t != out.data_type]))
    return replace_fields(desc, output_tensor=dml.TensorDesc(dt, out.sizes)), "output_tensor.data_type", kind


@st.composite
def _one_hot_functional(draw, x, shape):
    """x as the indices, with an axis of 1 added (a view: x is never written)."""
    rank = len(shape) + 1
    axis = draw(st.integers(0, rank - 1))
    length = draw(st.integers(1, 6))
    values = np.array([draw(st.integers(-9, 9)), draw(st.integers(-9, 9))], np.float32).reshape([1] * (rank - 1) + [2])
    args = {"values": values, "output_length": maybe_hostile(draw, length), "axis": maybe_hostile(draw, axis)}
    expand = (lambda a: np.expand_dims(a, axis)) if len(shape) < 8 else (lambda a: a)  # noqa: E731
    first = expand(x) if isinstance(x, np.ndarray) else x
    return args, lambda a: reference.one_hot(indices_array(expand(a)), values, args["output_length"],
                                             args["axis"]), first


@rule("one_hot", broken=_one_hot_broken, functional=_one_hot_functional, fill=_one_hot_fill,
      free=("values_tensor",),
      fields=("indices", "values", "output_length", "axis", "indices_tensor", "values_tensor", "device"))
def one_hot_call(d: Draw, ask: Ask) -> Drawn:
    """Any axis and sequence length; values with OnValue along a random axis."""
    rank = ask.rank
    sizes = ask.input_sizes(d)
    ones = [a for a, n in enumerate(sizes) if n == 1]
    axis = d.pick(ones) if ask.sizes is not None and ones else d.int(0, rank - 1)
    length = sizes[axis] if sizes[axis] > 1 else d.int(1, MAX_SIZE[rank])
    value_sizes = with_entry([1] * rank, d.int(0, rank - 1), d.int(2, 4))
    indices = dml.TensorDesc(ask.data_type, with_entry(sizes, axis, 1))
    return Drawn([indices, dml.TensorDesc(ask.types["values_tensor"], value_sizes)],
                 {"output_length": length, "axis": axis})
