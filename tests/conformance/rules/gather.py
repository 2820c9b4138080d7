"""The rule of DML_GATHER; `index_values` (indices, hostile ones among them)."""

from __future__ import annotations

import numpy as np
from conftest import random_bits
from hypothesis import strategies as st

import gpudml as dml
from gpudml import reference
from gpudml.ops import gather as gather_op

from ..draws import MAX_SIZE, Draw, T
from ..hostile import maybe_hostile, replace_fields, with_entry
from ..registry import Ask, Drawn, rule


def index_values(rng, data_type: T, n: int, count: int) -> np.ndarray:
    """Indices for an axis of n: mostly inside it (from its end too, for signed types), some
    just past either end, some at the type's extremes and around 2^32."""
    info = np.iinfo(data_type.numpy)
    values = rng.integers(-n if info.min < 0 else 0, n, size=count).astype(object)
    odd = rng.random(count) < 0.2
    hostile = [v for v in (n, n + 1, -n - 1, info.min, info.max, 2**32 - 1, 2**32, -(2**32), 2**31)
               if info.min <= v <= info.max]
    values[odd] = [hostile[i] for i in rng.integers(0, len(hostile), size=int(odd.sum()))]
    return values.astype(data_type.numpy)


def _gather_fill(desc, rng) -> list:
    inp, indices = desc.input_tensor, desc.indices_tensor
    return [random_bits(rng, inp.data_type.numpy, [inp.required_elements]),
            index_values(rng, indices.data_type, inp.sizes[desc.axis], indices.required_elements)]


def _broken_integer(draw, desc, field: str, top: int):
    """(builder, fragment, kind): `field`, an integer in [0, top], made larger, negative or not an integer."""
    how = draw(st.sampled_from(["above", "negative", "not_an_integer"]))
    if how == "above":
        value = top + 1 + draw(st.integers(0, 5))
    elif how == "negative":
        value = -draw(st.integers(1, 9))
    else:
        value = draw(st.sampled_from([1.0, "1", None, [1]]))
    return replace_fields(desc, **{field: value}), field, f"{field}_{how}"


@st.composite
def _gather_broken(draw, desc):
    rank = desc.input_tensor.rank
    kind = draw(st.sampled_from(["axis", "index_dimensions", "indices_type", "output_size", "output_type"]))
    if kind == "axis":
        return _broken_integer(draw, desc, "axis", rank - 1)
    if kind == "index_dimensions":
        return _broken_integer(draw, desc, "index_dimensions", rank)
    return broken_index_tensors(draw, desc, kind)


def broken_index_tensors(draw, desc, kind: str):
    """(builder, fragment, kind) of the gathers' shared breakages: "indices_type" (not an
    index type), "output_type" (not the input's) or "output_size" (one size larger)."""
    if kind == "indices_type":
        dt = draw(st.sampled_from([T.FLOAT32, T.FLOAT16, T.INT16, T.UINT16, T.INT8, T.UINT8, T.FLOAT64]))
        return replace_fields(desc, indices_tensor=dml.TensorDesc(dt, desc.indices_tensor.sizes)), \
            "indices_tensor.data_type", kind
    out = desc.output_tensor
    if kind == "output_type":
        dt = draw(st.sampled_from([t for t in T if t != out.data_type]))
        return replace_fields(desc, output_tensor=dml.TensorDesc(dt, out.sizes)), "output_tensor.data_type", kind
    a = draw(st.integers(0, out.rank - 1))
    bad = with_entry(out.sizes, a, out.sizes[a] + draw(st.integers(1, 3)))
    return replace_fields(desc, output_tensor=dml.TensorDesc(out.data_type, bad)), "output_tensor.sizes", kind


@st.composite
def _gather_functional(draw, x, shape):
    rank = len(shape)
    axis = draw(st.integers(0, rank - 1))
    k = draw(st.integers(0, min(rank, gather_op.leading_ones(shape, axis) + 1)))
    index_sizes = [1] * (rank - k) + [draw(st.integers(1, 5)) for _ in range(k)]
    dtype = draw(st.sampled_from([np.uint32, np.int64, np.int8, np.uint16, np.int32, np.uint64]))
    rng = np.random.default_rng(draw(st.integers(0, 999)))
    # Hostile values too; cast (wrapping) to the array's own dtype, which the call keeps or widens.
    indices = index_values(rng, T.INT64, shape[axis], int(np.prod(index_sizes))).astype(dtype).reshape(index_sizes)
    hostile = st.sampled_from([indices.astype(np.float32), indices.tolist(), None, 3, indices.astype(bool),
                               np.zeros([n + 1 for n in index_sizes], np.uint32), "1", indices.reshape(-1)])
    index_arg = draw(st.one_of(st.just(indices), hostile)) if draw(st.integers(0, 3)) == 0 else indices
    args = {"indices": index_arg, "axis": maybe_hostile(draw, axis),
            "index_dimensions": draw(st.sampled_from([k, k, None]))}
    return args, lambda a: reference.gather(a, gather_op.indices_array(args["indices"]), args["axis"],
                                                args["index_dimensions"])


@rule("gather", broken=_gather_broken, functional=_gather_functional, fill=_gather_fill, free=("indices_tensor",),
      fields=("x", "input_tensor", "indices", "axis", "index_dimensions", "device"))
def gather_call(d: Draw, ask: Ask) -> Drawn:
    """Any axis and index dimension count (the input's leading 1s allowing: drawn where the
    sizes are); indices of the table's index type, hostile values among them (the fill)."""
    rank = ask.rank
    axis = d.int(0, rank - 1)
    if ask.sizes is None:
        k = d.int(0, min(rank, axis + 1))
        sizes = [1] * max(k - 1, 0) + d.ints(rank - max(k - 1, 0), 1, MAX_SIZE[rank])
    else:
        sizes = list(ask.sizes)
        k = d.int(0, min(rank, gather_op.leading_ones(sizes, axis) + 1))
    top = MAX_SIZE[min(rank + k, 8)]  # the output has rank + k - 1 dimensions' worth of elements
    indices = dml.TensorDesc(ask.types["indices_tensor"], [1] * (rank - k) + d.ints(k, 1, top))
    return Drawn([dml.TensorDesc(ask.data_type, sizes), indices], {"axis": axis, "index_dimensions": k})
