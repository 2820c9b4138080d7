"""The rule of DML_REDUCE (one support table per function)."""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

import gpudml as dml
from gpudml import reference
from gpudml.ops import reduce as reduce_op
from gpudml.testing import assert_within

from ..draws import Draw, T
from ..hostile import REDUCED_AXES_KINDS, broken_reduced_axes, maybe_hostile, replace_fields
from ..registry import Ask, Drawn, rule


@st.composite
def _reduce_broken(draw, desc):
    function, out = desc.function, desc.output_tensor
    kind = draw(st.sampled_from(REDUCED_AXES_KINDS + ("output_type", "input_float64", "function")))
    if kind in REDUCED_AXES_KINDS:
        return *broken_reduced_axes(draw, desc, kind), kind
    if kind == "output_type":
        if function in reduce_op.ARG_FUNCTIONS:
            dt = draw(st.sampled_from([T.FLOAT32, T.FLOAT16, T.INT16, T.UINT8]))
        else:
            dt = draw(st.sampled_from([t for t in T if t != desc.input_tensor.data_type]))
        return replace_fields(desc, output_tensor=dml.TensorDesc(dt, out.sizes)), "output_tensor.data_type", kind
    if kind == "input_float64":
        new_out = out if function in reduce_op.ARG_FUNCTIONS else dml.TensorDesc(T.FLOAT64, out.sizes)
        return replace_fields(desc, input_tensor=dml.TensorDesc(T.FLOAT64, desc.input_tensor.sizes),
                              output_tensor=new_out), "input_tensor.data_type", kind
    return replace_fields(desc, function=draw(st.sampled_from([12, -1, "median", None]))), "function", kind


@st.composite
def _reduce_functional(draw, x, shape):
    rank = len(shape)
    function = draw(st.sampled_from(["max", "min", "argmax", "ARGMIN", dml.ReduceFunction.MAX, "bogus", None, 99]))
    axes = draw(st.one_of(st.none(), st.integers(-1, rank), st.lists(st.integers(0, rank - 1), min_size=1,
                                                                         max_size=rank, unique=True)))
    out_type = draw(st.sampled_from([None, None, "int64", np.uint32, T.INT32, "float32", "nonsense"]))
    args = {"function": function, "axes": maybe_hostile(draw, axes), "output_data_type": out_type}
    return args, lambda a: reference.reduce(a, args["function"], args["axes"], args["output_data_type"])


def _reduce_compare(got, want, x, args):
    """Within Reduce's documented precision (integers, MIN/MAX and indices exactly)."""
    axes = None if args["axes"] is None else np.atleast_1d(args["axes"]).tolist()
    tolerance = reduce_op.tolerance(want, [x], {"function": args["function"], "axes": axes})
    assert_within(got, want, tolerance, f"reduce {args['function']}")


@rule("reduce", broken=_reduce_broken, functional=_reduce_functional, compare=_reduce_compare,
      free=lambda function: ("output_tensor",) if function in reduce_op.ARG_FUNCTIONS else (),
      fields=("x", "input_tensor", "function", "axes", "output_data_type", "output_tensor", "device"))
def reduce_call(d: Draw, ask: Ask) -> Drawn:
    """The table's function over any axes (in any order); ARGMAX/ARGMIN write the table's index type."""
    arg = ask.key in reduce_op.ARG_FUNCTIONS
    return Drawn([ask.input(d)], {"function": ask.key, "axes": d.subset(ask.rank),
                                  "output_data_type": ask.types["output_tensor"] if arg else None})
