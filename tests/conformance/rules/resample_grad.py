"""The rules of the resampling gradients (a rule per row of gpudml.ops.resample_grad.TABLE)."""

from __future__ import annotations

from hypothesis import strategies as st

import gpudml as dml
from gpudml.ops import resample_grad as resample_grad_op
from gpudml.ops import spec_named

from ..draws import Draw, T
from ..hostile import maybe_hostile, replace_fields
from ..registry import Ask, Drawn, rule
from .resample import SCALES, resample_compare, scale_choices


def _call(row):
    def call(d: Draw, ask: Ask) -> Drawn:
        """The forward drawn as the resampling rule draws it: a small input (the output
        gradient's sizes), a scale per axis (the incoming gradient's sizes floor(n * scale),
        at least 1), the mode, the offsets now and then (the pixel centers, 0 or other halves),
        the rounding direction (RESAMPLE_GRAD1). Given sizes (a random graph's value) are the
        incoming gradient's."""
        top = {1: 40, 2: 9, 3: 5, 4: 4}.get(ask.rank, 3)
        scales = [d.pick(SCALES) for _ in range(ask.rank)]
        if ask.sizes is not None:
            dy = ask.input(d)
            outs = [max(1, int(n / s)) for n, s in zip(dy.sizes, scales)]
        else:
            outs = d.ints(ask.rank, 1, top)
            dy = dml.TensorDesc(ask.data_type, [max(1, int(n * s)) for n, s in zip(outs, scales)])
        attrs = {"output_sizes": outs, "scales": scales, "mode": d.pick(["nearest_neighbor", "linear"])}
        if d.bool():
            attrs["input_pixel_offsets"] = [d.pick([0.5, 0.0, -0.5, 1.0]) for _ in dy.sizes]
            attrs["output_pixel_offsets"] = [d.pick([-0.5, 0.0, 0.5]) for _ in dy.sizes]
        if row.version == 1:
            attrs["rounding_direction"] = d.pick(["decreasing", "increasing"])
        return Drawn([dy], attrs)
    return call


def _broken(row):
    @st.composite
    def broken(draw, desc):
        rank = desc.input_gradient_tensor.rank
        i = draw(st.integers(0, rank - 1))
        dx = desc.output_gradient_tensor
        other = draw(st.sampled_from([t for t in T if t != dx.data_type]))
        choices = {
            "mode": ("interpolation_mode", draw(st.sampled_from([7, "bilinear", None, -1]))),
            "cubic": ("interpolation_mode", dml.InterpolationMode.CUBIC),
            "output_type": ("output_gradient_tensor", dml.TensorDesc(other, dx.sizes)),
            "output_rank": ("output_gradient_tensor", dml.TensorDesc(dx.data_type, list(dx.sizes) + [1])),
            **scale_choices(draw, desc, i, offsets=True),
        }
        if row.version == 1:
            choices["rounding"] = ("rounding_direction", draw(st.sampled_from([2, "up", None])))
        kind = draw(st.sampled_from(sorted(choices)))
        name, value = choices[kind]
        return replace_fields(desc, **{name: value}), name, kind
    return broken


def _functional(row, spec):
    @st.composite
    def calls(draw, dy, shape):
        """The forward input's sizes (now and then hostile), scales or not, the mode (now and then bogus)."""
        args = {"output_sizes": maybe_hostile(draw, [draw(st.integers(1, 5)) for _ in shape])}
        if draw(st.booleans()):
            args["scales"] = maybe_hostile(draw, [draw(st.sampled_from(SCALES)) for _ in shape])
        args["mode"] = draw(st.sampled_from(["nearest_neighbor", "LINEAR", "nearest", "bogus"]))
        if row.version == 1 and draw(st.booleans()):
            args["rounding_direction"] = draw(st.sampled_from(["increasing", "sideways"]))
        return args, lambda a: spec.reference(a, **args)
    return calls


for _row in resample_grad_op.TABLE:
    _spec = spec_named(_row.key)
    rule(_spec.key, broken=_broken(_row), functional=_functional(_row, _spec), compare=resample_compare(_spec),
         fields=("dy", "input_gradient_tensor", "output_gradient_tensor", "interpolation_mode", "rounding_direction",
                 "scales", "output_sizes", "input_pixel_offsets", "output_pixel_offsets", "mode", "DimensionCount",
                 "device"))(_call(_row))
