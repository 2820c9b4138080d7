"""The rules of DML_DIAGONAL_MATRIX and DML_DIAGONAL_MATRIX1 (gpudml.ops.diagonal_matrix):
stacks of matrices, spans of diagonals anywhere (inverted ones, INT32's limits), and
DIAGONAL_MATRIX1's optional input now and then."""

from __future__ import annotations

from hypothesis import strategies as st

import gpudml as dml
from gpudml import reference

from ..draws import Draw
from ..hostile import NOT_INTEGERS, broken_choice, maybe_hostile
from ..registry import Ask, Drawn, rule
from .fill_value import value_of

INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1


def _bound(d: Draw) -> int:
    return d.pick([d.int(-4, 4), d.int(-4, 4), INT32_MIN, INT32_MAX])


@st.composite
def _broken0(draw, desc):
    choices = {"offset_range": ("offset", draw(st.sampled_from([2**31, -(2**31) - 1, 2**40]))),
               "offset_type": ("offset", draw(NOT_INTEGERS)),
               "value": ("value", draw(st.sampled_from(["1", None, 1j, [1.0], 1e39])))}
    return broken_choice(draw, desc, choices)


@st.composite
def _broken1(draw, desc):
    dt = desc.output_tensor.data_type
    other = dml.DataType.INT32 if dt != dml.DataType.INT32 else dml.DataType.FLOAT32
    choices = {"begin": ("diagonal_fill_begin", draw(st.sampled_from([2**31, -(2**31) - 1]))),
               "end": ("diagonal_fill_end", draw(NOT_INTEGERS)),
               "value_data_type": ("value_data_type", other),
               "value": ("value", draw(st.sampled_from(["1", None, 1j, [1]])))}
    if desc.input_tensor is not None:
        sizes = list(desc.output_tensor.sizes)
        sizes[-1] += 1
        choices["input_sizes"] = ("input_tensor", dml.TensorDesc(dt, sizes))
    return broken_choice(draw, desc, choices)


@st.composite
def _functional0(draw, x, shape):
    sizes = maybe_hostile(draw, [draw(st.integers(1, 3)) for _ in range(4)])
    args = {"offset": maybe_hostile(draw, draw(st.integers(-3, 3))), "value": maybe_hostile(draw, 2.5),
            "dtype": maybe_hostile(draw, draw(st.sampled_from(["float32", "int8", "uint16"])))}
    return args, lambda _: reference.diagonal_matrix0(sizes, **args), sizes


@st.composite
def _functional1(draw, x, shape):
    args = {"value": maybe_hostile(draw, 0), "diagonal_fill_begin": maybe_hostile(draw, draw(st.integers(-3, 3))),
            "diagonal_fill_end": maybe_hostile(draw, draw(st.integers(-3, 3)))}
    return args, lambda a: reference.diagonal_matrix(a, **args)


@rule("diagonal_matrix0", broken=_broken0, functional=_functional0,
      fields=("shape", "offset", "value", "dtype", "output_tensor", "DimensionCount", "device"))
def diagonal_matrix0_call(d: Draw, ask: Ask) -> Drawn:
    """No tensor: the output's sizes and type, an offset (INT32's limits now and then), a value."""
    return Drawn([], {"shape": ask.input_sizes(d, 5), "offset": _bound(d), "value": d.real(-100.0, 100.0),
                      "dtype": ask.data_type})


@rule("diagonal_matrix1", broken=_broken1, functional=_functional1,
      fields=("x", "shape", "dtype", "value", "diagonal_fill_begin", "diagonal_fill_end", "value_data_type",
              "input_tensor", "output_tensor", "DimensionCount", "device"))
def diagonal_matrix1_call(d: Draw, ask: Ask) -> Drawn:
    """An input of the asked sizes and type half the time (else none: the output's shape and
    type), a value of the type and a span (inverted ones, INT32's limits)."""
    attributes = {"value": value_of(d, ask.data_type), "diagonal_fill_begin": _bound(d),
                  "diagonal_fill_end": _bound(d)}
    if d.int(0, 1) == 0:
        return Drawn([ask.input(d, 5)], attributes)
    return Drawn([], {"shape": ask.input_sizes(d, 5), "dtype": ask.data_type, **attributes})
