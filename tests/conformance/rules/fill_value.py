"""The rules of DML_FILL_VALUE_CONSTANT and DML_FILL_VALUE_SEQUENCE (gpudml.ops.fill_value):
generators, no input tensor; the values drawn in the output's type (its limits, NaN,
infinities and -0.0 among them)."""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

import gpudml as dml
from gpudml import reference

from ..draws import Draw
from ..hostile import broken_choice, maybe_hostile
from ..registry import Ask, Drawn, rule


def value_of(d: Draw, data_type) -> int | float:
    """A value of `data_type`: its limits, small values, and for floats NaN, infinities and -0.0."""
    if data_type.is_float:
        value = d.pick([0.0, -0.0, float("nan"), float("inf"), -float("inf"), d.real(-100.0, 100.0), 65504.0])
        return float(np.float64(value).astype(data_type.numpy))
    info = np.iinfo(data_type.numpy)
    return d.pick([int(info.min), int(info.max), d.int(max(int(info.min), -9), min(int(info.max), 9))])


def step_of(d: Draw, data_type) -> int | float:
    """A sequence's start or step: small values mostly (so float sequences stay finite), the
    type's limits now and then (integers wrap)."""
    if data_type.is_float:
        return float(np.float64(d.pick([d.real(-8.0, 8.0), 0.25, -0.0, 1.0])).astype(data_type.numpy))
    return value_of(d, data_type)


def _broken(fields: tuple[str, ...]):
    @st.composite
    def broken(draw, desc):
        """The values not numbers or beyond the type; value_data_type another type."""
        dt = desc.output_tensor.data_type
        other = dml.DataType.INT32 if dt != dml.DataType.INT32 else dml.DataType.FLOAT32
        choices = {"value_data_type": ("value_data_type", other),
                   **{f"{f}_not_number": (f, draw(st.sampled_from(["1", None, 1j, True, [1]]))) for f in fields}}
        if not dt.is_float:
            choices["beyond"] = (fields[0], 2**70)
        return broken_choice(draw, desc, choices)
    return broken


@st.composite
def _constant_functional(draw, x, shape):
    """A shape (now and then hostile) and a value of float32: the call's first argument is the shape."""
    sizes = maybe_hostile(draw, [draw(st.integers(1, 3)) for _ in range(4)])
    value = maybe_hostile(draw, draw(st.floats(-4, 4, width=32)))
    args = {"value": value, "dtype": maybe_hostile(draw, "float32")}
    return args, lambda _: reference.fill_value_constant(sizes, **args), sizes


@st.composite
def _sequence_functional(draw, x, shape):
    sizes = maybe_hostile(draw, [draw(st.integers(1, 3)) for _ in range(draw(st.integers(1, 4)))])
    args = {"start": maybe_hostile(draw, draw(st.integers(-9, 9))), "delta": maybe_hostile(draw, 3),
            "dtype": maybe_hostile(draw, draw(st.sampled_from(["int32", "uint8", "int64", "float32"])))}
    return args, lambda _: reference.fill_value_sequence(sizes, **args), sizes


@rule("fill_value_constant", broken=_broken(("value",)), functional=_constant_functional,
      fields=("shape", "value", "dtype", "value_data_type", "output_tensor", "DimensionCount", "device"))
def fill_value_constant_call(d: Draw, ask: Ask) -> Drawn:
    """No tensor: the output's sizes and type (the asked input's) and a value of the type."""
    return Drawn([], {"shape": ask.input_sizes(d, 5), "value": value_of(d, ask.data_type), "dtype": ask.data_type})


@rule("fill_value_sequence", broken=_broken(("value_start", "value_delta")), functional=_sequence_functional,
      fields=("shape", "start", "delta", "dtype", "value_start", "value_delta", "value_data_type", "output_tensor",
              "DimensionCount", "device"))
def fill_value_sequence_call(d: Draw, ask: Ask) -> Drawn:
    """No tensor: the output's sizes and type, a start and a step of the type."""
    return Drawn([], {"shape": ask.input_sizes(d, 5), "start": step_of(d, ask.data_type),
                      "delta": step_of(d, ask.data_type), "dtype": ask.data_type})
