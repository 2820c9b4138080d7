"""The rule of DML_SCATTER_ND."""

from __future__ import annotations

import numpy as np
from conftest import random_bits
from hypothesis import strategies as st

import gpudml as dml
from gpudml import reference
from gpudml.ops.gather import indices_array, leading_ones
from gpudml.ops.scatter_nd import updates_sizes

from ..draws import Draw, T
from ..hostile import maybe_hostile, replace_fields, with_entry
from ..registry import Ask, Drawn, rule
from .gather import index_values
from .scatter_elements import REDUCTIONS, SHARED_KINDS, broken_scatter_tensors, reductions_for


def _tuples(rng, data_type: T, axes, count: int) -> np.ndarray:
    """`count` index tuples (rows) of len(axes) coordinates, each drawn for its axis (hostile
    values among them: gather's index_values)."""
    return np.stack([index_values(rng, data_type, n, count) for n in axes], axis=-1) if count else \
        np.zeros((0, len(axes)), data_type.numpy)


def _nd_fill(desc, rng) -> list:
    """Random input and update bits; each tuple coordinate drawn for its axis, laid out by
    the indices' strides (elements no tuple reads stay 0)."""
    inp, indices, updates = desc.input_tensor, desc.indices_tensor, desc.updates_tensor
    r, q, k = inp.rank, desc.input_dimension_count, indices.sizes[-1]
    values = np.zeros(indices.required_elements, indices.data_type.numpy)
    tuples = _tuples(rng, indices.data_type, inp.sizes[r - q:r - q + k], indices.element_count // k)
    offsets = np.zeros(indices.sizes, np.int64)
    for d, (n, s) in enumerate(zip(indices.sizes, indices.effective_strides)):
        offsets = offsets + (np.arange(n) * s).reshape([n if j == d else 1 for j in range(r)])
    values[offsets.reshape(-1, k)] = tuples
    return [random_bits(rng, inp.data_type.numpy, [inp.required_elements]), values,
            random_bits(rng, updates.data_type.numpy, [updates.required_elements])]


@st.composite
def _nd_broken(draw, desc):
    r = desc.input_tensor.rank
    kind = draw(st.sampled_from(["input_dimension_count", "indices_dimension_count", "tuple_size", *SHARED_KINDS]))
    if kind in ("input_dimension_count", "indices_dimension_count"):
        return replace_fields(desc, **{kind: draw(st.sampled_from([0, r + 1, -1, 1.5, None]))}), kind, kind
    if kind == "tuple_size":
        idx = desc.indices_tensor
        bad = with_entry(idx.sizes, r - 1, desc.input_dimension_count + draw(st.integers(1, 3)))
        return replace_fields(desc, indices_tensor=dml.TensorDesc(idx.data_type, bad)), "indices_tensor.sizes", kind
    return broken_scatter_tensors(draw, desc, kind)


@st.composite
def _nd_functional(draw, x, shape):
    r = len(shape)
    k = draw(st.integers(1, min(r, 3)))
    p = 2 if r >= 2 else 1
    count = draw(st.integers(1, 5)) if p == 2 else 1
    index_sizes = [1] * (r - p) + ([count] if p == 2 else []) + [k]
    dtype = draw(st.sampled_from([np.uint32, np.int64, np.int8, np.uint16, np.int32, np.uint64]))
    rng = np.random.default_rng(draw(st.integers(0, 999)))
    indices = _tuples(rng, T.INT64, [max(n, 1) for n in shape[:k]], count).astype(dtype).reshape(index_sizes)
    sizes = updates_sizes(tuple(shape), index_sizes, r, p) or tuple(shape)
    kind = x.dtype.newbyteorder("=") if isinstance(x, np.ndarray) else np.dtype(np.float32)
    n = int(np.prod(sizes))
    updates = random_bits(rng, kind, [n]).reshape(sizes) if kind.kind in "biuf" else np.zeros(sizes, np.float32)
    hostile = st.sampled_from([indices.astype(np.float32), None, 3, indices.reshape(-1)])
    index_arg = draw(st.one_of(st.just(indices), hostile)) if draw(st.integers(0, 3)) == 0 else indices
    reduction = draw(st.sampled_from(reductions_for(kind) if kind.kind in "biuf" else [None]))
    args = {"indices": index_arg, "updates": updates, "input_dimension_count": maybe_hostile(draw, r),
            "indices_dimension_count": p, "reduction": reduction}
    return args, lambda a: reference.scatter_nd(a, indices_array(args["indices"]), updates,
                                                args["input_dimension_count"], p, reduction)


@rule("scatter_nd", broken=_nd_broken, functional=_nd_functional, fill=_nd_fill, free=("indices_tensor",),
      fields=("x", "input_tensor", "indices", "updates", "input_dimension_count", "indices_dimension_count",
              "reduction", "device"))
def scatter_nd_call(d: Draw, ask: Ask) -> Drawn:
    """Input dimension counts past the input's leading 1s, tuples of 1 to all of them, a
    batch of tuples (duplicates likely) as the DimensionCount allows; any reduction."""
    r = ask.rank
    sizes = ask.input_sizes(d)
    q = d.int(max(1, r - leading_ones(sizes, r)), r)
    k = d.int(1, q)
    b = d.int(0, min(r - (q - k), r - 1))
    batch = d.ints(b, 1, 4)
    index_sizes = [1] * (r - b - 1) + batch + [k]
    updates = updates_sizes(tuple(sizes), index_sizes, q, b + 1)
    return Drawn([dml.TensorDesc(ask.data_type, sizes), dml.TensorDesc(ask.types["indices_tensor"], index_sizes),
                  dml.TensorDesc(ask.data_type, updates)],
                 {"input_dimension_count": q, "indices_dimension_count": b + 1, "reduction": d.pick(REDUCTIONS)})
