"""The rule of DML_REVERSE_SUBSEQUENCES."""

from __future__ import annotations

import numpy as np
from conftest import random_bits
from hypothesis import strategies as st

import gpudml as dml
from gpudml import reference

from ..draws import Draw, T
from ..hostile import maybe_hostile, one_more, pick_axis, replace_fields, with_entry
from ..registry import Ask, Drawn, rule


def _reverse_fill(desc, rng) -> list:
    """Random input bits; lengths mostly 0 to n + 2, some far beyond the axis (they clamp to
    it): near 2^32 and 2^31, and for UINT64 with high words (2^32, 2^63, 2^64 - 1)."""
    lengths = desc.sequence_lengths_tensor
    n, count = desc.input_tensor.sizes[desc.axis], lengths.required_elements
    values = rng.integers(0, n + 3, size=count).astype(np.uint64)
    huge = [2**31, 2**32 - 2, 2**32 - 1] + ([2**32, 2**32 + 1, 2**63, 2**64 - 1] if lengths.data_type.size == 8 else [])
    far = rng.random(count) < 0.1
    values[far] = np.array(huge, np.uint64)[rng.integers(0, len(huge), int(far.sum()))]
    return [random_bits(rng, desc.input_tensor.data_type.numpy, [desc.input_tensor.required_elements]),
            values.astype(lengths.data_type.numpy)]


@st.composite
def _reverse_broken(draw, desc):
    rank, i, _ = pick_axis(draw, desc)
    lengths = desc.sequence_lengths_tensor
    kind = draw(st.sampled_from(["axis_out", "axis_negative", "axis_type", "lengths_size", "lengths_type",
                                 "output_size"]))
    if kind == "axis_out":
        return replace_fields(desc, axis=rank + draw(st.integers(0, 5))), "axis", kind
    if kind == "axis_negative":
        return replace_fields(desc, axis=-draw(st.integers(1, 9))), "axis", kind
    if kind == "axis_type":
        return replace_fields(desc, axis=draw(st.sampled_from([0.0, "0", None, [0]]))), "axis", kind
    if kind == "lengths_size":
        return replace_fields(desc, sequence_lengths_tensor=one_more(lengths, i)), "sequence_lengths_tensor.sizes", kind
    if kind == "lengths_type":
        dt = draw(st.sampled_from([T.FLOAT32, T.INT32, T.UINT16, T.INT64, T.UINT8]))
        return replace_fields(desc, sequence_lengths_tensor=dml.TensorDesc(dt, lengths.sizes)), \
            "sequence_lengths_tensor.data_type", kind
    return replace_fields(desc, output_tensor=one_more(desc.output_tensor, i)), "output_tensor.sizes", kind


@st.composite
def _reverse_functional(draw, x, shape):
    rank = len(shape)
    axis = draw(st.integers(0, rank - 1))
    lengths_shape = [1 if i == axis else n for i, n in enumerate(shape)]
    lengths = np.random.default_rng(draw(st.integers(0, 999))).integers(0, shape[axis] + 2, size=lengths_shape)
    lengths = lengths.astype(draw(st.sampled_from([np.uint32, np.int64, np.uint8, np.uint64, np.int16])))
    hostile = st.sampled_from([lengths.astype(np.float32), -lengths - 1, lengths.tolist(), None, 3,
                               np.zeros([n + 1 for n in lengths_shape], np.uint32), "1"])
    lengths_arg = draw(st.one_of(st.just(lengths), hostile)) if draw(st.integers(0, 3)) == 0 else lengths
    args = {"sequence_lengths": lengths_arg, "axis": maybe_hostile(draw, axis)}
    return args, lambda a: reference.reverse_subsequences(a, np.asarray(args["sequence_lengths"]), args["axis"])


@rule("reverse_subsequences", broken=_reverse_broken, functional=_reverse_functional, fill=_reverse_fill,
      free=("sequence_lengths_tensor",), fields=("x", "input_tensor", "sequence_lengths", "axis", "device"))
def reverse_subsequences_call(d: Draw, ask: Ask) -> Drawn:
    """Any axis; the lengths tensor of the table's lengths type, size 1 on the axis."""
    x = ask.input(d)
    axis = d.int(0, ask.rank - 1)
    lengths = dml.TensorDesc(ask.types["sequence_lengths_tensor"], with_entry(x.sizes, axis, 1))
    return Drawn([x, lengths], {"axis": axis})
