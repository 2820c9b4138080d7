"""The rule of DML_ROI_POOLING: an image [N, C, H, W], a few regions [1, 1, NumROIs, 5] over
it and beyond (the spec's sample fills them: batch ids, fractional ones and ones outside
among them), bins of 1-3 x 1-3."""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

import gpudml as dml
from gpudml import reference

from ..draws import Draw
from ..hostile import broken_choice, maybe_hostile, with_entry
from ..registry import Ask, Drawn, rule


@st.composite
def _broken(draw, desc):
    rois = desc.roi_tensor
    other = dml.DataType.FLOAT16 if rois.data_type == dml.DataType.FLOAT32 else dml.DataType.FLOAT32
    choices = {
        "roi_four": ("roi_tensor", dml.TensorDesc(rois.data_type, with_entry(rois.sizes, 3, 4))),
        "roi_leading": ("roi_tensor", dml.TensorDesc(rois.data_type, with_entry(rois.sizes, 0, 2))),
        "roi_type": ("roi_tensor", dml.TensorDesc(other, rois.sizes)),
        "pooled_zero": ("pooled_size", (0, desc.pooled_size[1])),
        "pooled_huge": ("pooled_size", (desc.pooled_size[0], 65536)),
        "pooled_three": ("pooled_size", (1, 2, 3)),
        "pooled_not_int": ("pooled_size", draw(st.sampled_from([(1.5, 2), "7", None]))),
        "scale_nan": ("spatial_scale", float("nan")),
        "scale_text": ("spatial_scale", "1"),
    }
    out = desc.output_tensor.sizes
    return broken_choice(draw, desc, choices, with_entry(out, draw(st.integers(0, 3)), out[0] + out[1] + 1))


@st.composite
def _functional(draw, x, shape):
    """Regions over a 4-D x (of x's type where it is a float), now and then hostile arguments."""
    rng = np.random.default_rng(draw(st.integers(0, 999)))
    count = draw(st.integers(1, 3))
    n, h, w = (shape[0], shape[2], shape[3]) if len(shape) == 4 else (1, 2, 2)
    kind = x.dtype if isinstance(x, np.ndarray) and x.dtype.kind == "f" else np.float32
    rois = rng.uniform(-1, max(h, w) + 1, (count, 5))
    rois[:, 0] = rng.integers(0, n, count)
    rois = rois.astype(np.dtype(kind).newbyteorder("="))
    args = {"rois": maybe_hostile(draw, rois),
            "pooled_size": maybe_hostile(draw, draw(st.sampled_from([(2, 3), 1, [1, 2]]))),
            "spatial_scale": maybe_hostile(draw, draw(st.sampled_from([1.0, 0.5])))}
    return args, lambda a: reference.roi_pooling(a, **args)


@rule("roi_pooling", broken=_broken, functional=_functional,
      fields=("x", "input_tensor", "rois", "roi_tensor", "output_tensor", "pooled_size", "spatial_scale", "device",
              "DimensionCount"))
def roi_pooling_call(d: Draw, ask: Ask) -> Drawn:
    """A small image (the asked rank's sizes where another rank: rejected), 1-4 regions,
    bins of 1-3 x 1-3, a scale of 1, 1/2 or 1/4."""
    if ask.sizes is not None or ask.rank != 4:
        x = ask.input(d, 4)
    else:
        x = dml.TensorDesc(ask.data_type, [d.int(1, 2), d.int(1, 3), d.int(1, 7), d.int(1, 7)])
    rois = dml.TensorDesc(ask.data_type, [1, 1, d.int(1, 4), 5])
    return Drawn([x, rois], {"pooled_size": (d.int(1, 3), d.int(1, 3)), "spatial_scale": d.pick([1.0, 0.5, 0.25])})
