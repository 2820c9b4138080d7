"""The rule of DML_PADDING."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import strategies as st

import gpudml as dml
from gpudml import reference

from ..draws import Draw, T
from ..hostile import maybe_hostile, pick_axis, replace_fields, with_entry
from ..registry import Ask, Drawn, rule
from ._common import padding_modes, sizes_split


def _padding_value(d: Draw, data_type: T):
    """A value of DML_PADDING's FLOAT field for `data_type`: any real for a float type; for
    an integer type one whose truncation is in range."""
    how = d.int(0, 2)
    if data_type.is_float:
        return [d.real, lambda: d.int(-70000, 70000),
                lambda: d.pick([0.0, -0.0, 65504.0, 65520.0, 1e300, -1e-300])][how]()
    info = np.iinfo(data_type.numpy)
    limit = 2.0**62 if data_type.size == 8 else float(info.max)
    low = -0.99 if info.min == 0 else -limit
    edges = [int(info.min), int(info.max), 10.6, -0.0] + ([-10.6] if info.min < 0 else [])
    return [lambda: d.int(int(info.min), int(info.max)), lambda: d.real(low, limit), lambda: d.pick(edges)][how]()


@st.composite
def _padding_broken(draw, desc):
    rank, i, not_int = pick_axis(draw, desc)
    dt = desc.input_tensor.data_type
    kinds = ["start_negative", "end_huge", "output_size", "length", "not_int", "mode", "value_type"]
    if not dt.is_float:
        kinds.append("value_for_integers")
    kind = draw(st.sampled_from(kinds))
    if kind == "start_negative":
        return replace_fields(desc, start_padding=with_entry(desc.start_padding, i, -1)), "start_padding", kind
    if kind == "end_huge":
        return replace_fields(desc, end_padding=with_entry(desc.end_padding, i, 2**32)), "end_padding", kind
    if kind == "output_size":
        out = with_entry(desc.output_tensor.sizes, i, desc.output_tensor.sizes[i] + draw(st.sampled_from([1, -1])))
        if out[i] < 1:
            out[i] = desc.output_tensor.sizes[i] + 1
        return replace_fields(desc, output_tensor=dml.TensorDesc(dt, out)), "output_tensor.sizes", kind
    if kind == "length":
        return replace_fields(desc, end_padding=list(desc.end_padding)[:-1]), "end_padding", kind
    if kind == "not_int":
        return replace_fields(desc, start_padding=with_entry(desc.start_padding, i, not_int)), "start_padding", kind
    if kind == "mode":
        bad = draw(st.sampled_from([5, -1, "mirror", None, 1.5]))  # 4 and "wrap" are WRAP from FL_6_4 on
        return replace_fields(desc, padding_mode=bad), "padding_mode", kind
    if kind == "value_type":
        value = draw(st.sampled_from(["0", None, 1j, True, [0.0], np.zeros(1)]))
        return replace_fields(desc, padding_value=value), "padding_value", kind
    info = np.iinfo(dt.numpy)
    value = draw(st.sampled_from([float("nan"), float("inf"), -float("inf"), int(info.max) + 1,
                                  int(info.min) - 1, 1e30, -1e30, 2.0**64]))
    return replace_fields(desc, padding_mode=dml.PaddingMode.CONSTANT, padding_value=value), "padding_value", kind


@st.composite
def _padding_functional(draw, x, shape):
    rank = len(shape)
    start, end = [draw(st.integers(0, 3)) for _ in shape], [draw(st.integers(0, 3)) for _ in range(rank)]
    mode = draw(st.sampled_from(["constant", "edge", "reflection", "symmetric", "CONSTANT", dml.PaddingMode.EDGE]))
    value = draw(st.sampled_from([0.0, 7, -3.5, float("nan"), float("inf"), 300, 2**64, -0.0]))
    args = {"start_padding": maybe_hostile(draw, start), "end_padding": maybe_hostile(draw, end),
            "mode": maybe_hostile(draw, mode), "value": value}
    return args, lambda a: reference.pad(a, args["start_padding"], args["end_padding"], args["mode"],
                                             args["value"])


@rule("padding", broken=_padding_broken, functional=_padding_functional,
      fields=("x", "input_tensor", "start_padding", "end_padding", "mode", "value", "padding_value", "output_tensor",
              "device"))
def padding_call(d: Draw, ask: Ask) -> Drawn:
    """Paddings (past the axis too: REFLECTION and SYMMETRIC fold periodically), a mode the
    level has, a value (any the type takes for CONSTANT; ignored by the others)."""
    in_sizes, start, end = sizes_split(d, ask)
    mode = d.pick(padding_modes(ask.level))
    value = _padding_value(d, ask.data_type) if mode == dml.PaddingMode.CONSTANT else d.pick([0.0, 5.0, math.nan])
    return Drawn([dml.TensorDesc(ask.data_type, in_sizes)], {"start_padding": start, "end_padding": end,
                                                            "mode": mode, "value": value})
