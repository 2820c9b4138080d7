"""The rules of DML_CUMULATIVE_SUMMATION and DML_CUMULATIVE_PRODUCT (a rule per row
of gpudml.ops.cumulative.TABLE)."""

from __future__ import annotations

import dataclasses

import numpy as np
from conftest import assert_bits_equal
from hypothesis import strategies as st

import gpudml as dml
from gpudml.ops import cumulative as cumulative_op
from gpudml.ops import spec_named
from gpudml.testing import assert_within

from ..draws import D, Draw, T
from ..hostile import maybe_hostile, pick_axis, replace_fields, with_entry
from ..registry import Ask, Drawn, rule


@st.composite
def _cumulative_broken(draw, desc):
    rank, _, not_int = pick_axis(draw, desc)
    inp, out = desc.input_tensor, desc.output_tensor
    exclusive_field = next(f.name for f in dataclasses.fields(desc) if f.name.startswith("has_exclusive"))
    kind = draw(st.sampled_from(["axis_out", "axis_negative", "axis_type", "direction", "exclusive", "output_type",
                                 "output_sizes", "input_type"]))
    if kind == "axis_out":
        return replace_fields(desc, axis=rank + draw(st.integers(0, 3))), "axis", kind
    if kind == "axis_negative":
        return replace_fields(desc, axis=-draw(st.integers(1, 9))), "axis", kind
    if kind == "axis_type":
        return replace_fields(desc, axis=not_int), "axis", kind
    if kind == "direction":
        return replace_fields(desc, axis_direction=draw(st.sampled_from([2, -1, "sideways", None, 0.5]))), \
            "axis_direction", kind
    if kind == "exclusive":
        return replace_fields(desc, **{exclusive_field: draw(st.sampled_from([2, -1, "yes", None, 0.5]))}), \
            exclusive_field, kind
    if kind == "output_type":
        dt = draw(st.sampled_from([t for t in T if t != inp.data_type]))
        return replace_fields(desc, output_tensor=dml.TensorDesc(dt, out.sizes)), "output_tensor.data_type", kind
    if kind == "output_sizes":
        a = draw(st.integers(0, rank - 1))
        return replace_fields(desc, output_tensor=dml.TensorDesc(out.data_type, with_entry(
            out.sizes, a, out.sizes[a] + draw(st.integers(1, 3))))), "output_tensor.sizes", kind
    dt = draw(st.sampled_from([T.INT8, T.UINT8, T.INT16, T.UINT16, T.FLOAT64]))
    both = {"input_tensor": dml.TensorDesc(dt, inp.sizes), "output_tensor": dml.TensorDesc(dt, out.sizes)}
    return replace_fields(desc, **both), "input_tensor.data_type", kind


def _cumulative_functional(spec):
    @st.composite
    def calls(draw, x, shape):
        rank = len(shape)
        axis = maybe_hostile(draw, draw(st.integers(-rank - 1, rank)))
        direction = draw(st.sampled_from(["increasing", "DECREASING", D.DECREASING, 0, 1, "sideways", 7, None]))
        exclusive = draw(st.sampled_from([False, True, 0, 1, np.True_, "yes", 2, None]))
        args = {"axis": axis, "axis_direction": direction, "exclusive": exclusive}
        return args, lambda a: spec.reference(a, axis, direction, bool(exclusive))
    return calls


def _positions(shape, axis: int, direction) -> np.ndarray:
    """Each element's position along `axis` in scan order."""
    index = np.arange(shape[axis]).reshape([-1 if a == axis else 1 for a in range(len(shape))])
    if D.coerce(direction) == D.DECREASING:
        index = shape[axis] - 1 - index
    return np.broadcast_to(index, shape)


def _cumulative_compare(spec, function: str):
    """Floats within the documented precision where it promises something: where the
    running sums of |x| (sums), or every factor (products), keep float32 away from its
    range's ends; random bits make the rest overflow or underflow in float32 while the
    reference computes in float64. Integers bit-exact."""
    def compare(got, want, x, args):
        if want.dtype.kind != "f":
            assert_bits_equal(got, want)
            return
        assert got.dtype == want.dtype and got.shape == want.shape
        axis = int(args["axis"]) % x.ndim
        direction = args["axis_direction"]
        with np.errstate(invalid="ignore", over="ignore"):  # random bits: NaN, infinities
            magnitude = np.abs(x.astype(np.float64))
            if function == "sum":
                tame = cumulative_op.scan_reference(magnitude, axis, direction, False, "sum") <= 2.0**100
            else:
                wild = ~((magnitude >= 0.5) & (magnitude <= 2.0)) * 1.0
                tame = cumulative_op.scan_reference(wild, axis, direction, False, "sum") == 0
                tame &= _positions(x.shape, axis, direction) < 100
        tolerance = spec.tolerance(want, [x], {"axis": axis, "axis_direction": direction})
        assert_within(got[tame], want[tame], np.broadcast_to(tolerance, want.shape)[tame], spec.name)
    return compare


def _cumulative_call(d: Draw, ask: Ask) -> Drawn:
    """Any axis, direction and exclusive flag."""
    return Drawn([ask.input(d)], {"axis": d.int(0, ask.rank - 1), "axis_direction": d.pick(list(D)),
                                  "exclusive": d.bool()})


for _row in cumulative_op.TABLE:
    _spec = spec_named(_row.functional_name)
    rule(_spec.key, broken=_cumulative_broken, functional=_cumulative_functional(_spec),
         compare=_cumulative_compare(_spec, _row.function),
         fields=("x", "input_tensor", "axis", "axis_direction", "exclusive", "output_tensor", "device"),
         )(_cumulative_call)
