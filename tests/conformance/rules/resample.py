"""The rules of the resampling operators (a rule per row of gpudml.ops.resample.TABLE)."""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

import gpudml as dml
from gpudml.ops import resample as resample_op
from gpudml.ops import spec_named
from gpudml.testing import assert_within

from ..draws import Draw, T
from ..hostile import broken_choice, maybe_hostile, one_more, replace_fields, with_entry
from ..registry import Ask, Drawn, rule
from ..running import assert_outputs_equal

#: Scales worth drawing: down, up, integer and not, identity.
SCALES = (0.5, 0.75, 1.0, 1.5, 2.0, 3.0)


def _resample_call(row):
    def call(d: Draw, ask: Ask) -> Drawn:
        """Small inputs; a scale per axis (outputs floor(n * scale), at least 1), the mode
        (nearest half the time, always for a value of a random graph, given its sizes: a chain
        stage; CUBIC now and then for Resample3), the offsets of the versions
        that have them (the pixel centers, or 0, or other halves), the rounding direction and
        antialiasing (linear, cubic; now and then gpudml's antialias_scales)."""
        x = ask.input(d, {1: 40, 2: 9, 3: 5, 4: 4}.get(ask.rank, 3))
        if row.version is None:
            return Drawn([x], {"scale_size": d.ints(2, 1, 3), "mode": d.pick(["nearest_neighbor", "linear"])})
        modes = ["nearest_neighbor", "nearest_neighbor", "linear"] + (["cubic"] if row.version == 3 else [])
        mode = "nearest_neighbor" if ask.sizes is not None else d.pick(modes)  # (a graph's value: chain it)
        attrs = {"scales": [d.pick(SCALES) for _ in x.sizes], "mode": mode}
        if row.version >= 1 and d.bool():
            attrs["input_pixel_offsets"] = [d.pick([0.5, 0.0, -0.5, 1.0]) for _ in x.sizes]
            attrs["output_pixel_offsets"] = [d.pick([-0.5, 0.0, 0.5]) for _ in x.sizes]
        if row.version >= 2:
            attrs["rounding_direction"] = d.pick(["decreasing", "increasing"])
        if row.version == 3 and mode != "nearest_neighbor":
            attrs["antialiased"] = d.bool()
            if mode == "cubic":
                attrs["cubic_coeff_a"] = d.pick([-0.75, -0.5])
                attrs["exclude_outside"] = d.bool()
            if attrs["antialiased"] and d.bool():  # gpudml's extension: ONNX's widening rule
                attrs["antialias_scales"] = [d.pick([1.0, 0.75, 0.6, 0.4]) for _ in x.sizes]
        return Drawn([x], attrs)
    return call


def _resample_broken(row):
    @st.composite
    def broken(draw, desc):
        rank = desc.input_tensor.rank
        i = draw(st.integers(0, rank - 1))
        out = desc.output_tensor
        other = draw(st.sampled_from([t for t in T if t != out.data_type]))
        choices = {
            "mode": ("interpolation_mode", draw(st.sampled_from([7, "bilinear", None, -1]))),
            "output_type": ("output_tensor", dml.TensorDesc(other, out.sizes)),
        }
        if row.version is None:
            choices["scale_zero"] = ("scale_size", [0, 1])
            choices["scale_length"] = ("scale_size", [1, 1, 1])
            choices["scale_huge"] = ("scale_size", [2**32, 1])
            return broken_choice(draw, desc, choices, one_more(out, draw(st.integers(0, rank - 1))).sizes)
        choices.update(scale_choices(draw, desc, i, offsets=row.version >= 1))
        if row.version >= 2:
            choices["rounding"] = ("rounding_direction", draw(st.sampled_from([2, "up", None])))
        if row.version == 3:
            choices["antialiased_nearest"] = None
            choices["antialiased_type"] = ("antialiased", draw(st.sampled_from([2, "yes", None])))
            choices["cubic_a"] = ("cubic_coeff_a", draw(st.sampled_from([float("nan"), float("inf"), "a"])))
            choices["antialias_scales"] = ("antialias_scales", draw(st.sampled_from(
                [with_entry([1.0] * rank, i, draw(st.sampled_from([0.0, -1.0, float("nan")]))), [1.0] * (rank + 1),
                 "x"])))
        else:
            choices["cubic"] = ("interpolation_mode", dml.InterpolationMode.CUBIC)
        kind = draw(st.sampled_from(sorted(choices)))
        if kind == "antialiased_nearest":
            return replace_fields(desc, antialiased=True, interpolation_mode="nearest_neighbor"), "antialiased", kind
        name, value = choices[kind]
        return replace_fields(desc, **{name: value}), name, kind
    return broken


def scale_choices(draw, desc, i: int, offsets: bool) -> dict:
    """Broken scales (and, with `offsets`, pixel offsets) on axis i: {kind: (field, value)}
    (the resampling operators' and their gradients')."""
    bad = draw(st.sampled_from([0.0, -1.0, float("nan"), float("inf"), -float("inf")]))
    choices = {
        "scale": ("scales", with_entry(desc.scales, i, bad)),
        "scales_length": ("scales", list(desc.scales) + [1.0]),
        "scales_type": ("scales", draw(st.sampled_from([None, "2", 2.0, [[1.0]], ["x"]]))),
    }
    if offsets:
        field = draw(st.sampled_from(["input_pixel_offsets", "output_pixel_offsets"]))
        choices["offset"] = (field, with_entry(getattr(desc, field), i, draw(st.sampled_from(
            [float("nan"), float("inf")]))))
        choices["offsets_length"] = (field, list(getattr(desc, field))[1:])
    return choices


def _resample_functional(row, spec):
    @st.composite
    def calls(draw, x, shape):
        """Scales per axis (now and then hostile), or output sizes; the mode, now and then bogus."""
        rank = len(shape)
        if row.version is None:
            args = {"scale_size": maybe_hostile(draw, [draw(st.integers(1, 2)), draw(st.integers(1, 2))])}
        elif draw(st.booleans()):
            args = {"scales": maybe_hostile(draw, [draw(st.sampled_from(SCALES)) for _ in range(rank)])}
        else:
            args = {"output_sizes": maybe_hostile(draw, [draw(st.integers(1, 5)) for _ in range(rank)])}
        args["mode"] = draw(st.sampled_from(["nearest_neighbor", "LINEAR", "nearest", "bogus"]))
        if row.version is not None and row.version >= 2 and draw(st.booleans()):
            args["rounding_direction"] = draw(st.sampled_from(["increasing", "sideways"]))
        return args, lambda a: spec.reference(a, **args)
    return calls


def resample_compare(spec):
    def compare(got, want, x, args):
        """Nearest bit-exact; interpolation within the documented precision."""
        tolerance = spec.tolerance(want, [x], args)
        if tolerance is None:
            assert_outputs_equal(got, want)
            return
        tolerance = np.asarray(tolerance)
        bounded = ~np.isinf(tolerance)
        assert got.dtype == want.dtype and got.shape == want.shape
        assert_within(got[bounded], want[bounded], tolerance[bounded], spec.name)
    return compare


for _row in resample_op.TABLE:
    _spec = spec_named(_row.key)
    rule(_spec.key, broken=_resample_broken(_row), functional=_resample_functional(_row, _spec),
         compare=resample_compare(_spec),
         fields=("x", "input_tensor", "output_tensor", "interpolation_mode", "rounding_direction", "scales",
                 "output_sizes", "input_pixel_offsets", "output_pixel_offsets", "antialiased", "cubic_coeff_a",
                 "exclude_outside", "antialias_scales", "scale_size", "mode", "DimensionCount", "device"),
         light=_row.version != 3)(_resample_call(_row))
