"""The rule of DML_ROI_ALIGN_GRAD (`roi_align_grad`): the forward drawn as ROI_ALIGN1's rule
draws it (a small image, a few regions over it and beyond, the spec's sample filling them,
every reduction, interpolation, sample bound, offsets and corner alignment), its incoming
gradient dy [NumROIs, C, OH, OW] the input; InputTensor now and then (always with MAX); with
InputTensor the ROI gradient (OutputROIGradientTensor) now and then, alone or beside the input
gradient."""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

import gpudml as dml
from gpudml.ops import roi_align_grad as grad_op

from ..draws import Draw
from ..hostile import broken_choice, maybe_hostile, with_entry
from ..registry import Ask, Drawn, rule
from .roi_align import region_choices, region_compare

FIELDS = ("x", "dy", "input_tensor", "input_gradient_tensor", "rois", "roi_tensor", "batch_indices",
          "batch_indices_tensor", "output_gradient_tensor", "output_roi_gradient_tensor", "input_size",
          "spatial_scale", "reduction_function", "interpolation_mode", "minimum_samples_per_output",
          "maximum_samples_per_output", "input_pixel_offset", "output_pixel_offset", "align_regions_to_corners",
          "device", "DimensionCount", "output_gradient", "output_roi_gradient")


@st.composite
def _broken(draw, desc):
    """One of the operator's own rules broken: the ROI or index tensor's shape or type, dy's
    sizes against the regions, dx's against the input, both outputs left out, MAX without
    InputTensor, the reduction, the interpolation, the sample bounds, a scale or offset."""
    dy = desc.input_gradient_tensor
    choices = region_choices(draw, desc, [dml.DataType.INT32, dml.DataType.FLOAT32, dml.DataType.UINT64,
                                          dml.DataType.INT64])
    choices.update({
        "dy_regions": ("input_gradient_tensor", dml.TensorDesc(dy.data_type, with_entry(dy.sizes, 0, dy.sizes[0] + 1))),
        "dy_rank": ("input_gradient_tensor", dml.TensorDesc(dy.data_type, dy.sizes[1:])),
        "offset_inf": ("input_pixel_offset", float("inf")),
        "corners": ("align_regions_to_corners", draw(st.sampled_from([2, "yes", None]))),
    })
    if desc.input_tensor is None:
        choices["max_without_input"] = ("reduction_function", "max")
    dx, droi = desc.output_gradient_tensor, desc.output_roi_gradient_tensor
    if dx is None or droi is None:  # (both left out)
        choices["no_output"] = ("output_gradient_tensor", None) if droi is None else \
            ("output_roi_gradient_tensor", None)
    if dx is not None:
        choices["dx_channels"] = ("output_gradient_tensor", dml.TensorDesc(dx.data_type, with_entry(
            dx.sizes, 1, dx.sizes[1] + 2)))
        if desc.input_tensor is not None:
            choices["dx_sizes"] = ("output_gradient_tensor", dml.TensorDesc(dx.data_type, with_entry(
                dx.sizes, draw(st.integers(2, 3)), dx.sizes[2] + 3)))
    if droi is not None:
        choices["droi_sizes"] = ("output_roi_gradient_tensor", dml.TensorDesc(droi.data_type, with_entry(
            droi.sizes, droi.rank - 1, 5)))
        other = dml.DataType.FLOAT16 if droi.data_type == dml.DataType.FLOAT32 else dml.DataType.FLOAT32
        choices["droi_type"] = ("output_roi_gradient_tensor", dml.TensorDesc(other, droi.sizes))
        choices["roi_without_input"] = ("input_tensor", None)
    return broken_choice(draw, desc, choices)


@st.composite
def _functional(draw, dy, shape):
    """Regions and indices for a 4-D dy (of dy's type where it is a float), the forward input's
    sizes (or, now and then, its x and the ROI gradient alone), now and then hostile
    arguments."""
    rng = np.random.default_rng(draw(st.integers(0, 999)))
    count = shape[0] if len(shape) == 4 else 1
    kind = dy.dtype if isinstance(dy, np.ndarray) and dy.dtype.kind == "f" else np.float32
    rois = rng.uniform(-1, 6, (count, 4)).astype(np.dtype(kind).newbyteorder("="))
    batch = rng.integers(0, 2, count).astype(draw(st.sampled_from([np.uint32, np.int64, np.int32])))
    channels = shape[1] if len(shape) == 4 else 1
    args = {"rois": maybe_hostile(draw, rois), "batch_indices": batch,
            "input_size": maybe_hostile(draw, [2, channels, 5, 5]),
            "spatial_scale": maybe_hostile(draw, draw(st.sampled_from([1.0, 0.5, (1.0, 2.0)]))),
            "reduction_function": draw(st.sampled_from(["average", "AVERAGE", "sum"])),
            "maximum_samples_per_output": draw(st.sampled_from([2, 3, grad_op.UINT32_MAX, -1])),
            "align_regions_to_corners": draw(st.sampled_from([False, True, "x"]))}
    if draw(st.integers(0, 3)) == 0:  # the ROI gradient alone (it needs x: the forward's input)
        del args["input_size"]
        args.update(x=maybe_hostile(draw, rng.uniform(-1, 1, (2, channels, 5, 5)).astype(rois.dtype)),
                    output_gradient=False, output_roi_gradient=True)
    return args, lambda a: grad_op.reference(a, **args)


@rule("roi_align_grad", broken=_broken, functional=_functional,
      compare=region_compare(grad_op.tolerance, "roi_align_grad"), fields=FIELDS, free=("batch_indices_tensor",))
def _call(d: Draw, ask: Ask) -> Drawn:
    """dy [NumROIs, C, OH, OW] (the asked sizes where given: NumROIs their first), the forward
    input [1-2, C, 1-6, 1-6], regions of the drawn ROI rank (2-4), indices of the drawn rank
    (1-4); InputTensor with MAX and now and then with AVERAGE (else input_size), with it the
    input gradient, the ROI gradient or both."""
    if ask.sizes is not None or ask.rank != 4:
        dy = ask.input(d, 4)
    else:
        dy = dml.TensorDesc(ask.data_type, [d.int(1, 5), d.int(1, 3), d.int(1, 4), d.int(1, 4)])
    count = dy.sizes[0] if dy.rank == 4 else 1
    channels = dy.sizes[1] if dy.rank == 4 else 1
    image = [d.int(1, 2), channels, d.int(1, 6), d.int(1, 6)]
    rois = dml.TensorDesc(ask.types["roi_tensor"], [1] * d.int(0, 2) + [count, 4])
    batch = dml.TensorDesc(ask.types["batch_indices_tensor"], [1] * d.int(0, 3) + [count])
    low = d.pick([1, 1, 2])
    high = d.pick([low, low + 1, grad_op.UINT32_MAX, 3])
    offsets = d.pick([(0.5, -0.5), (0.0, 0.0), (0.0, -0.5), (0.25, 0.125)])
    reduction = d.pick(["average", "max"])
    attributes = {"spatial_scale": d.pick([1.0, 0.5, (0.75, 1.5)]), "reduction_function": reduction,
                  "interpolation_mode": d.pick(["linear", "linear", "nearest_neighbor"]),
                  "minimum_samples_per_output": low, "maximum_samples_per_output": max(high, low),
                  "input_pixel_offset": offsets[0], "output_pixel_offset": offsets[1],
                  "align_regions_to_corners": d.bool()}
    if reduction == "max" or d.bool():
        outputs = d.pick([(True, False), (True, False), (True, True), (False, True)])
        attributes.update(output_gradient=outputs[0], output_roi_gradient=outputs[1])
        return Drawn([dml.TensorDesc(ask.types["input_tensor"], image), dy, rois, batch], attributes)
    return Drawn([dy, rois, batch], {**attributes, "input_size": image})
