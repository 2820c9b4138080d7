"""The rules of DML_ROI_ALIGN (`roi_align0`) and DML_ROI_ALIGN1 (`roi_align1`): an image
[N, C, H, W], a few regions over it and beyond (the spec's sample fills them), batch indices
of the table's index type (free), every reduction, interpolation and sample bound."""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

import gpudml as dml
from gpudml import reference
from gpudml.ops import roi_align as roi_op
from gpudml.testing import assert_within

from ..draws import Draw
from ..hostile import broken_choice, maybe_hostile, with_entry
from ..registry import Ask, Drawn, rule
from ..running import assert_outputs_equal

FIELDS = ("x", "input_tensor", "rois", "roi_tensor", "batch_indices", "batch_indices_tensor", "output_tensor",
          "spatial_scale", "output_size", "reduction_function", "interpolation_mode", "minimum_samples_per_output",
          "maximum_samples_per_output", "input_pixel_offset", "output_pixel_offset", "out_of_bounds_input_value",
          "align_regions_to_corners", "device", "DimensionCount")


def region_choices(draw, desc, index_types: list) -> dict:
    """The broken fields ROI align and its gradient share ({kind: (field, value)}): the ROI or
    index tensor's shape or type (`index_types`: types the table refuses), the reduction, the
    interpolation, the sample bounds, a scale."""
    rois, batch = desc.roi_tensor, desc.batch_indices_tensor
    other = dml.DataType.FLOAT16 if rois.data_type == dml.DataType.FLOAT32 else dml.DataType.FLOAT32
    return {
        "roi_five": ("roi_tensor", dml.TensorDesc(rois.data_type, with_entry(rois.sizes, rois.rank - 1, 5))),
        "roi_type": ("roi_tensor", dml.TensorDesc(other, rois.sizes)),
        "roi_rank": ("roi_tensor", dml.TensorDesc(rois.data_type, [4])),
        "index_count": ("batch_indices_tensor", dml.TensorDesc(batch.data_type, [*batch.sizes[:-1],
                                                                               batch.sizes[-1] + 1])),
        "index_type": ("batch_indices_tensor", dml.TensorDesc(draw(st.sampled_from(index_types)), batch.sizes)),
        "reduction": ("reduction_function", draw(st.sampled_from(["sum", "min", 99, None, 1.5]))),
        "interpolation": ("interpolation_mode", draw(st.sampled_from(["cubic", 7, None]))),
        "minimum_zero": ("minimum_samples_per_output", 0),
        "minimum_above": ("minimum_samples_per_output", desc.maximum_samples_per_output + 1),
        "maximum_huge": ("maximum_samples_per_output", 2**32),
        "maximum_not_int": ("maximum_samples_per_output", draw(st.sampled_from([0.5, "2", None]))),
        "scale_nan": ("spatial_scale_x", float("nan")),
        "scale_huge": ("spatial_scale_y", 1e300),
    }


@st.composite
def _broken(draw, desc):
    """One of the operator's own rules broken: the ROI or index tensor's shape, the ROI
    type, the reduction, the interpolation, the sample bounds, a scale or offset."""
    choices = region_choices(draw, desc, [dml.DataType.INT32, dml.DataType.FLOAT32, dml.DataType.UINT16,
                                          dml.DataType.INT64])
    if isinstance(desc, roi_op.RoiAlign1OperatorDesc):
        choices["offset_inf"] = ("input_pixel_offset", float("inf"))
        choices["corners"] = ("align_regions_to_corners", draw(st.sampled_from([2, "yes", None])))
    out = desc.output_tensor.sizes
    return broken_choice(draw, desc, choices, with_entry(out, draw(st.integers(0, 1)), out[0] + out[1] + 1))


def _functional_of(version: int):
    fn = reference.roi_align if version else reference.roi_align0

    @st.composite
    def calls(draw, x, shape):
        """Regions over a 4-D x (of x's type where it is a float), now and then hostile arguments."""
        rng = np.random.default_rng(draw(st.integers(0, 999)))
        count = draw(st.integers(1, 3))
        h, w = (shape[2], shape[3]) if len(shape) == 4 else (2, 2)
        kind = x.dtype if isinstance(x, np.ndarray) and x.dtype.kind == "f" else np.float32
        rois = rng.uniform(-1, max(h, w) + 1, (count, 4)).astype(np.dtype(kind).newbyteorder("="))
        batch = rng.integers(0, shape[0] if len(shape) == 4 else 1, count).astype(
            draw(st.sampled_from([np.uint32, np.int64, np.int32, np.uint64])))
        args = {"rois": maybe_hostile(draw, rois), "batch_indices": batch,
                "spatial_scale": maybe_hostile(draw, draw(st.sampled_from([1.0, 0.5, (1.0, 2.0)]))),
                "output_size": maybe_hostile(draw, draw(st.sampled_from([(2, 3), 1, [1, 2]]))),
                "reduction_function": draw(st.sampled_from(["average", "max", "MAX", "sum"])),
                "maximum_samples_per_output": draw(st.sampled_from([2, 3, roi_op.UINT32_MAX, -1]))}
        if version:
            args["align_regions_to_corners"] = draw(st.sampled_from([False, True, "x"]))
        return args, lambda a: fn(a, **args)
    return calls


def region_compare(tolerance_of, name: str):
    """A rule's compare: within `tolerance_of`'s documented precision (the spec's tolerance of
    the call's first tensor, its regions and indices and its other arguments), where the
    float64 terms stay in float32's range (random bits near FLOAT_MAX overflow the float32
    terms: not a documented result)."""
    def compare(got, want, first, args):
        inputs = [first, np.asarray(args["rois"]), roi_op.batch_indices_array(args["batch_indices"])]
        tolerance = tolerance_of(want, inputs, {k: v for k, v in args.items() if k not in ("rois", "batch_indices")})
        if tolerance is None:
            assert_outputs_equal(got, want)
            return
        unbounded = ~np.isfinite(tolerance) | (tolerance > 2.0**100)
        got, want = np.asarray(got), np.asarray(want)
        assert_within(np.where(unbounded, want, got), want, np.where(unbounded, 0.0, tolerance), name)
    return compare


_compare = region_compare(roi_op.tolerance, "roi_align")


def _call(d: Draw, ask: Ask) -> Drawn:
    """A small image (the asked rank's sizes where another rank: rejected), 1-5 regions of
    the drawn ROI rank (2-4), indices of the drawn rank (1-4), output 1-4 x 1-4, either
    reduction and interpolation, samples per output from 1-3 or ceil(region / output)."""
    if ask.sizes is not None or ask.rank != 4:
        x = ask.input(d, 4)
    else:
        x = dml.TensorDesc(ask.data_type, [d.int(1, 2), d.int(1, 3), d.int(1, 6), d.int(1, 6)])
    count = d.int(1, 5)
    rois = dml.TensorDesc(ask.types["roi_tensor"], [1] * d.int(0, 2) + [count, 4])
    batch = dml.TensorDesc(ask.types["batch_indices_tensor"], [1] * d.int(0, 3) + [count])
    low = d.pick([1, 1, 2])
    high = d.pick([low, low + 1, roi_op.UINT32_MAX, 3])
    attributes = {"spatial_scale": d.pick([1.0, 0.5, (0.75, 1.5)]), "output_size": (d.int(1, 4), d.int(1, 4)),
                  "reduction_function": d.pick(["average", "max"]),
                  "interpolation_mode": d.pick(["linear", "linear", "nearest_neighbor"]),
                  "minimum_samples_per_output": low, "maximum_samples_per_output": max(high, low),
                  "out_of_bounds_input_value": d.pick([0.0, -1.5])}
    return Drawn([x, rois, batch], attributes)


def _call1(d: Draw, ask: Ask) -> Drawn:
    """_call's, and ROI_ALIGN1's offsets (0.5 / -0.5, 0 / 0, or others) and corner alignment."""
    drawn = _call(d, ask)
    offsets = d.pick([(0.5, -0.5), (0.0, 0.0), (0.0, -0.5), (0.25, 0.125)])
    drawn.attributes.update(input_pixel_offset=offsets[0], output_pixel_offset=offsets[1],
                            align_regions_to_corners=d.bool())
    return drawn


rule("roi_align0", broken=_broken, functional=_functional_of(0), compare=_compare, fields=FIELDS,
     free=("batch_indices_tensor",))(_call)
rule("roi_align1", broken=_broken, functional=_functional_of(1), compare=_compare, fields=FIELDS,
     free=("batch_indices_tensor",))(_call1)
