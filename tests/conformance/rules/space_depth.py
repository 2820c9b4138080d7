"""The rules of DML_DEPTH_TO_SPACE(1) and DML_SPACE_TO_DEPTH(1) (a rule per row of
gpudml.ops.space_depth.TABLE)."""

from __future__ import annotations

from hypothesis import strategies as st

import gpudml as dml
from gpudml.ops import space_depth as space_depth_op
from gpudml.ops import spec_named

from ..draws import Draw
from ..hostile import broken_choice, maybe_hostile, with_entry
from ..registry import Ask, Drawn, rule


def _broken_of(row):
    @st.composite
    def broken(draw, desc):
        inp, b = desc.input_tensor, desc.block_size
        choices = {
            "zero": ("block_size", 0),
            "negative": ("block_size", -draw(st.integers(1, 2**40))),
            "huge": ("block_size", 2**32),
            "not_int": ("block_size", draw(st.sampled_from([0.5, "2", None, 1j, True]))),
            # sizes that do not divide: the channels (to space) or the height (to depth)
            "indivisible": ("input_tensor", dml.TensorDesc(inp.data_type, with_entry(
                inp.sizes, 1 if row.to_space else 2, inp.sizes[1 if row.to_space else 2] * b * b + 1))
                if b > 1 else dml.TensorDesc(inp.data_type, inp.sizes[:3]))}
        if row.has_order:
            choices["order"] = ("order", draw(st.sampled_from([2, -1, "sideways", None, 0.5])))
        out = desc.output_tensor.sizes
        return broken_choice(draw, desc, choices, with_entry(out, draw(st.integers(0, 3)), out[0] + out[1] + 1))
    return broken


def _functional_of(spec, row):
    @st.composite
    def calls(draw, x, shape):
        b = maybe_hostile(draw, draw(st.integers(1, 3)))
        args = {"block_size": b}
        if row.has_order:
            args["order"] = draw(st.sampled_from(["depth_column_row", "CRD", "dcr", 1, "sideways", None]))
        return args, lambda a: spec.reference(a, **args)
    return calls


def _call_of(row):
    def call(d: Draw, ask: Ask) -> Drawn:
        """Block sizes 1-4 (mostly 2-3), a few channels, height and width blocks; for given
        sizes (a random graph's value), a block size they divide."""
        attributes = {}
        if row.has_order:
            attributes["order"] = d.pick(list(dml.DepthSpaceOrder))
        if ask.sizes is not None or ask.rank != 4:  # (another rank: rejected)
            x = ask.input(d, 3)
            fits = [b for b in (2, 3, 4) if ask.rank == 4 and (
                x.sizes[1] % (b * b) == 0 if row.to_space else x.sizes[2] % b == 0 == x.sizes[3] % b)]
            return Drawn([x], {"block_size": d.pick(fits) if fits else 1, **attributes})
        b = d.pick([1, 2, 2, 3, 4])
        n, c, h, w = d.int(1, 2), d.int(1, 3), d.int(1, 3), d.int(1, 4)
        sizes = [n, c * b * b, h, w] if row.to_space else [n, c, h * b, w * b]
        return Drawn([dml.TensorDesc(ask.data_type, sizes)], {"block_size": b, **attributes})
    return call


for _row in space_depth_op.TABLE:
    _spec = spec_named(_row.functional_name)
    rule(_spec.key, broken=_broken_of(_row), functional=_functional_of(_spec, _row),
         fields=("x", "input_tensor", "block_size", "order", "output_tensor", "device", "DimensionCount"),
         )(_call_of(_row))
