"""The rules of DML_TOP_K and DML_TOP_K1: any axis, any k up to the axis' size, inputs
full of ties (argminmax's tie_values: NaN, infinities, -0.0 and +0.0 among them)."""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

import gpudml as dml
from gpudml.ops import spec_named

from ..draws import D, Draw, T
from ..hostile import maybe_hostile, one_more, replace_fields
from ..registry import Ask, Drawn, rule
from .argminmax import tie_values


def _fill(desc, rng) -> list:
    """Ties half the time, else random bits."""
    inp = desc.input_tensor
    if rng.random() < 0.5:
        return [tie_values(rng, inp.data_type, inp.required_elements)]
    raw = rng.integers(0, 256, size=inp.required_elements * inp.data_type.size, dtype=np.uint8)
    return [raw.view(inp.data_type.numpy)]


def _broken(direction: bool):
    @st.composite
    def broken(draw, desc):
        inp, val, idx = desc.input_tensor, desc.output_value_tensor, desc.output_index_tensor
        n = inp.sizes[desc.axis]
        kinds = ["k_zero", "k_past", "axis", "value_type", "index_type", "value_sizes", "index_sizes"]
        kind = draw(st.sampled_from(kinds + (["direction"] if direction else [])))
        if kind == "k_zero":
            return replace_fields(desc, k=0), "k = 0", kind
        if kind == "k_past":
            return replace_fields(desc, k=n + draw(st.integers(1, 3))), "k = ", kind
        if kind == "axis":
            return replace_fields(desc, axis=inp.rank + draw(st.integers(0, 2))), "axis = ", kind
        if kind == "value_type":
            dt = draw(st.sampled_from([t for t in (T.FLOAT32, T.INT8, T.UINT16) if t != inp.data_type]))
            return replace_fields(desc, output_value_tensor=dml.TensorDesc(dt, val.sizes)), "output_value_tensor", kind
        if kind == "index_type":
            dt = draw(st.sampled_from([T.INT32, T.INT64, T.FLOAT32, T.UINT16]))
            return replace_fields(desc, output_index_tensor=dml.TensorDesc(dt, idx.sizes)), "output_index_tensor", kind
        if kind == "value_sizes":
            return replace_fields(desc, output_value_tensor=one_more(val, desc.axis)), "output_value_tensor.sizes", kind
        if kind == "index_sizes":
            axis = draw(st.integers(0, inp.rank - 1))
            return replace_fields(desc, output_index_tensor=one_more(idx, axis)), "output_index_tensor.sizes", kind
        bad = draw(st.sampled_from([2, -1, "sideways", None, 1.5]))
        return replace_fields(desc, axis_direction=bad), "axis_direction", kind
    return broken


def _functional(spec, direction: bool):
    @st.composite
    def calls(draw, x, shape):
        rank = len(shape)
        n = shape[-1] if rank else 1
        args = {"k": maybe_hostile(draw, draw(st.integers(1, max(1, n)))),
                "axis": maybe_hostile(draw, draw(st.integers(-rank, max(rank - 1, 0))) if rank else -1)}
        if direction:
            args["axis_direction"] = draw(st.sampled_from(["increasing", "DECREASING", D.INCREASING, 1, "sideways"]))
        if draw(st.booleans()):
            args["index_data_type"] = draw(st.sampled_from(["UINT64", np.uint32, T.UINT32, "INT32", "nonsense"]))
        return args, lambda a: spec.reference(a, **args)
    return calls


def _call(direction: bool):
    def call(d: Draw, ask: Ask) -> Drawn:
        """Small inputs, any axis, k from 1 to 8 (one call in four: up to the axis' size; a
        k past 128 takes the chunk sort of `rows`, whose kernels compile slowest), either
        direction (TOP_K1), the table's index type."""
        x = ask.input(d)
        axis = d.int(0, ask.rank - 1)
        n = x.sizes[axis]
        attrs = {"k": d.int(1, n) if d.int(0, 3) == 0 else d.int(1, min(n, 8)), "axis": axis,
                 "index_data_type": ask.types.get("output_index_tensor", T.UINT32)}
        if direction:
            attrs["axis_direction"] = d.pick(list(D))
        return Drawn([x], attrs)
    return call


for _key, _direction in (("top_k0", False), ("top_k1", True)):
    rule(_key, broken=_broken(_direction), functional=_functional(spec_named(_key), _direction), fill=_fill,
         free=("output_index_tensor",),
         fields=("x", "input_tensor", "output_value_tensor", "output_index_tensor", "axis", "k", "axis_direction",
                 "index_data_type", "device"),
         )(_call(_direction))
