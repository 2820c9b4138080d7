"""The rules of DML_ARGMAX and DML_ARGMIN; `tie_values` (inputs full of ties)."""

from __future__ import annotations

import numpy as np
from conftest import random_bits
from hypothesis import strategies as st

import gpudml as dml
from gpudml.ops import argminmax as argminmax_op
from gpudml.ops import spec_named

from ..draws import D, Draw, T
from ..hostile import REDUCED_AXES_KINDS, broken_reduced_axes, maybe_hostile, replace_fields
from ..registry import Ask, Drawn, rule


def tie_values(rng, data_type: T, count: int) -> np.ndarray:
    """`count` elements drawn from five bit patterns: three random ones (NaN, infinities
    and -0.0 among them for floats), zero, and the sign bit alone (-0.0, or an integer
    type's most negative value / 2^(bits-1)): many ties, in every kind of value."""
    item = data_type.size
    pool = random_bits(rng, data_type.numpy, [5])
    pool[3:] = np.array([0, 1 << (8 * item - 1)], np.dtype(f"u{item}")).view(data_type.numpy)
    return pool[rng.integers(0, 5, count)]


def _arg_fill(desc, rng) -> list:
    return [tie_values(rng, desc.input_tensor.data_type, desc.input_tensor.required_elements)]


def _arg_broken(spec):
    @st.composite
    def broken(draw, desc):
        out = desc.output_tensor
        kind = draw(st.sampled_from(REDUCED_AXES_KINDS + ("output_type", "input_float64", "direction")))
        if kind in REDUCED_AXES_KINDS:
            return *broken_reduced_axes(draw, desc, kind), kind
        if kind == "output_type":
            dt = draw(st.sampled_from([t for t in T if t not in argminmax_op.INDEX_TYPES]))
            return replace_fields(desc, output_tensor=dml.TensorDesc(dt, out.sizes)), "output_tensor.data_type", kind
        if kind == "input_float64":
            return replace_fields(desc, input_tensor=dml.TensorDesc(T.FLOAT64, desc.input_tensor.sizes)), \
                "input_tensor.data_type", kind
        bad = draw(st.sampled_from([2, -1, "sideways", None, 1.5, "INCREASING_", True]))
        return replace_fields(desc, axis_direction=bad), "axis_direction", kind
    return broken


def _mostly(draw, good: list, bad: list):
    """One of `good` about three times in four, else one of `bad`."""
    return draw(st.sampled_from(bad if draw(st.integers(0, 3)) == 3 else good))


def _arg_functional(spec):
    @st.composite
    def calls(draw, x, shape):
        rank = len(shape)
        axes = draw(st.one_of(st.none(), st.integers(-rank - 1, rank),
                              st.lists(st.integers(-rank, rank - 1), min_size=1, max_size=rank)))
        direction = _mostly(draw, ["increasing", "DECREASING", D.DECREASING, 0, 1], ["sideways", None, 7, []])
        out_type = _mostly(draw, ["INT64", "int32", np.uint32, T.UINT64, 10], ["float32", "nonsense", None, "INT16"])
        args = {"axes": maybe_hostile(draw, axes), "axis_direction": direction, "output_data_type": out_type}
        return args, lambda a: spec.reference(a, **args)
    return calls


def _arg_call(d: Draw, ask: Ask) -> Drawn:
    """Any axes, either direction, the table's index type; inputs full of ties (the rule's fill)."""
    return Drawn([ask.input(d)], {"axes": d.subset(ask.rank), "axis_direction": d.pick(list(D)),
                                  "output_data_type": ask.types["output_tensor"]})


for _key in ("argmax", "argmin"):
    rule(_key, broken=_arg_broken(spec_named(_key)), functional=_arg_functional(spec_named(_key)), fill=_arg_fill,
         free=("output_tensor",),
         fields=("x", "input_tensor", "axes", "axis_direction", "output_data_type", "output_tensor", "device"),
         )(_arg_call)
