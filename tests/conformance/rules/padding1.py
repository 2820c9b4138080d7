"""The rule of DML_PADDING1."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
from hypothesis import strategies as st

import gpudml as dml
from gpudml import reference

from ..draws import Draw, T
from ..hostile import maybe_hostile, pick_axis, replace_fields, with_entry
from ..registry import Ask, Drawn, rule
from ._common import padding_modes, sizes_split


def _exact_value(d: Draw, data_type: T):
    """A value exact in `data_type`: any int in an integer type's range (whole floats too);
    any real for a float type (ints past 2^53, NaN, infinities and -0.0 included)."""
    how = d.int(0, 2)
    if data_type.is_float:
        return [d.real, lambda: d.int(-(2**70), 2**70),
                lambda: d.pick([0.0, -0.0, 65504.0, 65520.0, 2**60 + 2**36 + 1, Fraction(1, 3)])][how]()
    info = np.iinfo(data_type.numpy)
    return [lambda: d.int(int(info.min), int(info.max)),
            lambda: float(d.int(max(int(info.min), -(2**40)), min(int(info.max), 2**40))),
            lambda: d.pick([int(info.min), int(info.max)])][how]()


@st.composite
def _padding1_broken(draw, desc):
    rank, i, not_int = pick_axis(draw, desc)
    dt = desc.input_tensor.data_type
    constant = {"padding_mode": dml.PaddingMode.CONSTANT}
    choices = {
        "start_negative": ("start_padding", {"start_padding": with_entry(desc.start_padding, i, -1)}),
        "end_huge": ("end_padding", {"end_padding": with_entry(desc.end_padding, i, 2**32)}),
        "length": ("start_padding", {"start_padding": list(desc.start_padding) + [0]}),
        "not_int": ("end_padding", {"end_padding": with_entry(desc.end_padding, i, not_int)}),
        "mode": ("padding_mode", {"padding_mode": draw(st.sampled_from([5, -1, "mirror", None]))}),
        "value_type": ("padding_value", {"padding_value": draw(st.sampled_from(["0", None, 1j, False, [0]]))}),
        "value_data_type": ("padding_value_data_type", {"padding_value_data_type": draw(st.sampled_from(
            [t for t in T if t != dt] + ["FLOAT8", None, 0]))}),
    }
    if not dt.is_float:
        info = np.iinfo(dt.numpy)
        choices["value_fraction"] = ("padding_value", {**constant,
                                                       "padding_value": draw(st.sampled_from([0.5, -1.25]))})
        choices["value_range"] = ("padding_value", {**constant, "padding_value": draw(st.sampled_from(
            [int(info.max) + 1, int(info.min) - 1, math.nan, -math.inf]))})
    kind = draw(st.sampled_from(sorted(choices) + ["output_size"]))
    if kind == "output_size":
        out = with_entry(desc.output_tensor.sizes, i, desc.output_tensor.sizes[i] + 1)
        return replace_fields(desc, output_tensor=dml.TensorDesc(dt, out)), "output_tensor.sizes", kind
    fragment, changes = choices[kind]
    return replace_fields(desc, **changes), fragment, kind


@st.composite
def _padding1_functional(draw, x, shape):
    start, end = [draw(st.integers(0, 3)) for _ in shape], [draw(st.integers(0, 3)) for _ in shape]
    mode = draw(st.sampled_from(["constant", "edge", "reflection", "symmetric", "wrap", dml.PaddingMode.CONSTANT]))
    value = draw(st.sampled_from([0, 7, -3, 2**63 - 1, 2**64 - 1, 0.5, float("nan"), -0.0, 2**70]))
    value_type = draw(st.sampled_from([None, None, "float32", T.INT64, "uint8"]))
    args = {"start_padding": maybe_hostile(draw, start), "end_padding": maybe_hostile(draw, end),
            "mode": maybe_hostile(draw, mode), "value": value, "value_data_type": value_type}
    return args, lambda a: reference.padding1(a, args["start_padding"], args["end_padding"], args["mode"],
                                                  args["value"], args["value_data_type"])


@rule("padding1", broken=_padding1_broken, functional=_padding1_functional,
      fields=("x", "input_tensor", "start_padding", "end_padding", "mode", "value", "padding_value",
              "value_data_type", "output_tensor", "device"))
def padding1_call(d: Draw, ask: Ask) -> Drawn:
    """Padding's paddings and modes; a value exact in the type for CONSTANT (ignored by the others)."""
    in_sizes, start, end = sizes_split(d, ask)
    mode = d.pick(padding_modes(ask.level))
    value = _exact_value(d, ask.data_type) if mode == dml.PaddingMode.CONSTANT else d.pick([0, 5.5, math.nan])
    return Drawn([dml.TensorDesc(ask.data_type, in_sizes)], {"start_padding": start, "end_padding": end,
                                                            "mode": mode, "value": value})
