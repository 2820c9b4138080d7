"""The rules of softmax, log-softmax and hardmax, versions 0 and 1 (a rule per row of
gpudml.ops.softmax.TABLE)."""

from __future__ import annotations

from hypothesis import strategies as st

import gpudml as dml
from gpudml.ops import softmax as softmax_op
from gpudml.ops import spec_named
from gpudml.testing import assert_within

from ..draws import MAX_SIZE, Draw, T
from ..hostile import broken_reduced_axes, maybe_hostile, replace_fields, with_entry
from ..registry import Ask, Drawn, rule


def _softmax_call(row):
    def call(d: Draw, ask: Ask) -> Drawn:
        """Version 1: any axes (a non-empty set, in any order, some counted from the end as
        numpy's); version 0: sizes of effective rank 2 or less (the leftmost axes of size 1;
        the last one or two drawn up to MAX_SIZE)."""
        if row.axes:
            x = ask.input(d)
            return Drawn([x], {"axes": [a - ask.rank if d.bool() else a for a in d.subset(ask.rank)]})
        if ask.sizes is not None and softmax_op.effective_rank(ask.sizes) <= 2:
            return Drawn([ask.input(d)], {})
        last = min(ask.rank, d.int(1, 2))
        sizes = [1] * (ask.rank - last) + d.ints(last, 1, MAX_SIZE[last])
        return Drawn([dml.TensorDesc(ask.data_type, sizes)], {})
    return call


def _softmax_broken(row):
    @st.composite
    def broken(draw, desc):
        inp, out = desc.input_tensor, desc.output_tensor
        kinds = ["output_sizes", "output_type"]
        if row.axes:
            kinds += ["axes_empty", "axis_out", "axis_negative", "axes_repeat", "axes_type"]
        elif inp.rank >= 3:
            kinds.append("effective_rank")
        kind = draw(st.sampled_from(kinds))
        if kind.startswith("axes") or kind.startswith("axis"):
            return *broken_reduced_axes(draw, desc, kind), kind
        if kind == "output_sizes":
            axis = draw(st.integers(0, out.rank - 1))
            sizes = with_entry(out.sizes, axis, out.sizes[axis] + draw(st.integers(1, 3)))
            return replace_fields(desc, output_tensor=dml.TensorDesc(out.data_type, sizes)), "output_tensor.sizes", kind
        if kind == "output_type":
            dt = draw(st.sampled_from([t for t in T if t != out.data_type]))
            return replace_fields(desc, output_tensor=dml.TensorDesc(dt, out.sizes)), "output_tensor.data_type", kind
        sizes = with_entry(inp.sizes, 0, 2)  # the leftmost axis no longer 1: effective rank = DimensionCount >= 3
        return replace_fields(desc, input_tensor=dml.TensorDesc(inp.data_type, sizes),
                              output_tensor=dml.TensorDesc(out.data_type, sizes)), "input_tensor.sizes", kind
    return broken


def _softmax_functional(row, spec):
    @st.composite
    def calls(draw, x, shape):
        if not row.axes:
            return {}, lambda a: spec.reference(a)
        rank = len(shape)
        axes = draw(st.one_of(st.none(), st.integers(-rank - 1, rank),
                              st.lists(st.integers(-rank, rank - 1), min_size=1, max_size=rank)))
        args = {"axes": maybe_hostile(draw, axes)}
        return args, lambda a: spec.reference(a, **args)
    return calls


def _softmax_compare(spec):
    def compare(got, want, x, args):
        """Within the row's documented precision (HARDMAX bit-exact)."""
        assert_within(got, want, None if spec.tolerance is None else spec.tolerance(want, [x], args), spec.name)
    return compare


for _row in softmax_op.TABLE:
    _spec = spec_named(_row.key)
    rule(_spec.key, broken=_softmax_broken(_row), functional=_softmax_functional(_row, _spec),
         compare=_softmax_compare(_spec), light=not _row.axes,  # version 0 runs version 1's kernels
         fields=("x", "input_tensor", "axes", "output_tensor", "device"))(_softmax_call(_row))
