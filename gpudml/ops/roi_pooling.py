"""DML_ROI_POOLING_OPERATOR_DESC (FL 1.0; docs/operators/roi_pooling.md, the page under
tests/data/pages/; ONNX MaxRoiPool, Fast R-CNN's ROI pooling): output [r, c, y, x] of
[NumROIs, C, PH, PW] is the maximum of channel c of image BatchID over bin (y, x) of region
r, ROITensor [1, 1, NumROIs, 5] holding [BatchID, x1, y1, x2, y2] per region.

The page's rule: x1 = round(RoiX1 * SpatialScale) (x2, y1, y2 alike); RegionHeight = y2 -
y1 + 1; the bin's rows [y * RegionHeight / PH + y1, ((y + 1) * RegionHeight + PH - 1) / PH
+ y1) in integer arithmetic (columns alike), clamped into the input. gpudml computes it
exactly (the products of the float32 values in float32, the divisions in integers).

The page's gaps, and gpudml's choices (tests/test_roi_pooling.py):
- round is half away from zero (C's round, as Caffe's and ONNX Runtime's ROI pooling).
- A region with x2 < x1 (the page requires x2 >= x1) is one pixel wide: RegionWidth =
  max(x2 - x1 + 1, 1), as Caffe's and ONNX Runtime's MaxRoiPool.
- An empty bin (clamped away) is 0, as Caffe's and ONNX Runtime's; so is every bin of a
  region whose BatchID (truncated toward zero, as they cast it) is outside [0, N) or NaN,
  or one of whose corners is NaN (no input is read for them).
- Corners round into [-65536, 65536] and PH, PW are at most 65535 (the bins' integer
  arithmetic stays in 32 bits; validation names a larger PooledSize).
- The maximum is one of the bin's elements bit for bit: the first largest (row-major), or
  the first NaN, which propagates.
- An input plane whose whole area passes one invocation's loop budget (H x (W + 1) > 32,704
  iterations: a region may cover the plane) is an UnsupportedError (planning).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..errors import InvalidArgumentError
from ..kernels import roi as family
from ..kernels.base import ProblemPlanner
from ..tensor_desc import TensorDesc, as_int_tuple, check_tensor_desc
from ..types import F16, F32, FeatureLevel
from .base import check_one_type
from .elementwise.row import as_float32
from .roi_align import rois_array
from .spec import Call, Cli, CliArg, OpSpec, element_bytes, support_table

OP = "RoiPooling"
SUPPORT = support_table(OP, ("input_tensor", "roi_tensor", "output_tensor"), [(FeatureLevel.FL_1_0, {4}, {F32, F16})])
MAX_POOLED = 65535


@dataclass(frozen=True)
class RoiPoolingOperatorDesc:
    input_tensor: TensorDesc
    roi_tensor: TensorDesc
    output_tensor: TensorDesc
    spatial_scale: float
    pooled_size: tuple[int, int]  # (height, width): DML_SIZE_2D

    def __post_init__(self):
        object.__setattr__(self, "spatial_scale", as_float32(self.spatial_scale, f"{OP}: spatial_scale"))
        object.__setattr__(self, "pooled_size", as_int_tuple(self.pooled_size, f"{OP}: pooled_size"))


def _pooled(pooled_size, where: str) -> tuple[int, int]:
    if isinstance(pooled_size, (int, np.integer)) and not isinstance(pooled_size, bool):
        return int(pooled_size), int(pooled_size)
    size = as_int_tuple(pooled_size, f"{where}: pooled_size")
    if len(size) != 2:
        raise InvalidArgumentError(f"{where}: pooled_size must be (height, width), got {pooled_size!r}")
    return size


def infer_output(input_tensor: TensorDesc, rois: TensorDesc, pooled_size=(7, 7),
                 spatial_scale=1.0) -> RoiPoolingOperatorDesc:
    """The desc of `roi_pooling(x, rois, pooled_size, spatial_scale)`: the output [NumROIs,
    C, PH, PW], NumROIs the ROI tensor's second-to-last size."""
    ph, pw = _pooled(pooled_size, OP)
    count = rois.sizes[-2] if rois.rank >= 2 else 1
    channels = input_tensor.sizes[1] if input_tensor.rank >= 2 else 1
    return RoiPoolingOperatorDesc(input_tensor, rois, TensorDesc(input_tensor.data_type,
                                                                 [count, channels, max(ph, 1), max(pw, 1)]),
                                  spatial_scale, (ph, pw))


def validate(desc: RoiPoolingOperatorDesc, feature_level: FeatureLevel) -> None:
    inp, rois, out = desc.input_tensor, desc.roi_tensor, desc.output_tensor
    for field in ("input_tensor", "roi_tensor", "output_tensor"):
        check_tensor_desc(OP, field, getattr(desc, field), is_output=field == "output_tensor")
    for field in ("input_tensor", "roi_tensor", "output_tensor"):  # (the message names which)
        SUPPORT.check_rank(feature_level, field, getattr(desc, field).rank)
    check_one_type(OP, SUPPORT, feature_level, {"input_tensor": inp, "roi_tensor": rois, "output_tensor": out})
    count = rois.sizes[2]
    if rois.sizes != (1, 1, count, 5):
        raise InvalidArgumentError(f"{OP}: roi_tensor.sizes {list(rois.sizes)} must be {{1, 1, NumROIs, 5}} "
                                   f"([BatchID, x1, y1, x2, y2] per region)")
    if len(desc.pooled_size) != 2 or not all(1 <= v <= MAX_POOLED for v in desc.pooled_size):
        raise InvalidArgumentError(f"{OP}: pooled_size {list(desc.pooled_size)} must be (height, width), each in "
                                   f"[1, {MAX_POOLED}] (gpudml: the bins' integer arithmetic stays in 32 bits)")
    want = (count, inp.sizes[1], *desc.pooled_size)
    if out.sizes != want:
        raise InvalidArgumentError(f"{OP}: output_tensor.sizes {list(out.sizes)} must be {{NumROIs, "
                                   f"InputChannelCount, PooledSize.Height, PooledSize.Width}} = {list(want)}")
    if not math.isfinite(desc.spatial_scale):
        raise InvalidArgumentError(f"{OP}: spatial_scale = {desc.spatial_scale} must be finite")


def problem(desc: RoiPoolingOperatorDesc) -> family.RoiPool:
    return family.RoiPool(OP, desc.input_tensor, desc.roi_tensor, desc.output_tensor, desc.spatial_scale)


ROI_POOLING = ProblemPlanner(problem, family.FAMILY)


# ---------------------------------------------------------------------------- reference
def _corner(v, scale) -> int | None:
    """round(v * scale) half away from zero (the float32 product), clamped; None for NaN."""
    with np.errstate(all="ignore"):
        p = float(np.float32(v) * np.float32(scale))
    if math.isnan(p):
        return None
    return int(min(max(math.copysign(math.floor(abs(p) + 0.5), p), -65536), 65536))


def _bin(k: int, bins: int, size: int, first: int, limit: int) -> tuple[int, int]:
    lo = k * size // bins + first
    hi = -(-(k + 1) * size // bins) + first
    return min(max(lo, 0), limit), min(max(hi, 0), limit)


def reference(x, rois, pooled_size=(7, 7), spatial_scale=1.0) -> np.ndarray:
    """ROI pooling by the page's integer rule, each bin's first largest element (or first
    NaN) in x's type; empty bins and regions of a batch outside [0, N) or a NaN corner 0."""
    x = np.asarray(x)
    if x.ndim != 4:
        raise ValueError(f"roi_pooling: x has {x.ndim} dimensions; it must be [N, C, H, W]")
    rois = np.asarray(rois).reshape(-1, 5)
    ph, pw = _pooled(pooled_size, "roi_pooling")
    n, channels, h, w = x.shape
    out = np.zeros((rois.shape[0], channels, ph, pw), x.dtype)
    for r, (b, *corners) in enumerate(rois.astype(np.float32)):
        x1, y1, x2, y2 = (_corner(v, spatial_scale) for v in corners)
        if None in (x1, y1, x2, y2) or not -1 < b < n:
            continue
        plane = x[int(b)]
        for i in range(ph):
            r0, r1 = _bin(i, ph, max(y2 - y1 + 1, 1), y1, h)
            for j in range(pw):
                c0, c1 = _bin(j, pw, max(x2 - x1 + 1, 1), x1, w)
                if r0 >= r1 or c0 >= c1:
                    continue
                window = plane[:, r0:r1, c0:c1].reshape(channels, -1)
                out[r, :, i, j] = window[np.arange(channels), np.argmax(window, axis=1)]
    return out


# ---------------------------------------------------------------------------- API
def _rois(value):
    """[NumROIs, 5] boxes as DirectML's {1, 1, NumROIs, 5} (numpy arrays; a Tensor as it is)."""
    array = rois_array(value, "roi_pooling")
    return array.reshape(1, 1, *array.shape) if array.ndim == 2 else array


def roi_pooling(x, rois, pooled_size=(7, 7), spatial_scale=1.0, *, device=None):
    """DML_ROI_POOLING (ONNX MaxRoiPool): x [N, C, H, W], rois [NumROIs, 5] (or [1, 1,
    NumROIs, 5]) of [batch, x1, y1, x2, y2] in x's type; the maximum over each of the
    pooled_size (height, width) bins of each region: [NumROIs, C, PH, PW]."""
    return Call([("x", x), ("rois", rois, _rois)], {"pooled_size": pooled_size, "spatial_scale": spatial_scale},
                device)


def arguments(desc: RoiPoolingOperatorDesc) -> dict:
    return {"pooled_size": desc.pooled_size, "spatial_scale": desc.spatial_scale}


def traffic(desc: RoiPoolingOperatorDesc) -> int:
    """The output once, the regions once, the input once (no more than the output's bins)."""
    reads = min(desc.input_tensor.element_count, desc.output_tensor.element_count)
    return element_bytes(desc.output_tensor) + element_bytes(desc.roi_tensor) + \
        reads * desc.input_tensor.data_type.size


def sample(desc: RoiPoolingOperatorDesc, rng) -> list:
    """Random input bits (bit-exact: any values); regions over the image and somewhat beyond
    (a few inverted), batch ids mostly in range (some fractional, some outside)."""
    inp, rois = desc.input_tensor, desc.roi_tensor
    n, _, h, w = inp.sizes
    raw = rng.integers(0, 256, size=inp.required_elements * inp.data_type.size, dtype=np.uint8)
    values = rng.uniform(-2, max(h, w) + 2, rois.required_elements) / (desc.spatial_scale or 1.0)
    values[0::5] = rng.integers(0, n + 1, values[0::5].shape) + rng.choice([0.0, 0.5], values[0::5].shape)
    return [raw.view(inp.data_type.numpy), values.astype(rois.data_type.numpy)]


def from_cli(x: TensorDesc, a: dict) -> RoiPoolingOperatorDesc:
    rois = TensorDesc(x.data_type, [1, 1, a["rois"] or 8, 5])
    return infer_output(x, rois, a["pooled_size"] or (7, 7), a["spatial_scale"] if a["spatial_scale"] is not None
                        else 1.0)


SPEC = OpSpec(
    name=OP, key="roi_pooling", desc=RoiPoolingOperatorDesc, support=SUPPORT, infer_output=infer_output,
    validate=validate, reference=reference, functional=roi_pooling, tensors=("x", "rois"), arguments=arguments,
    planner=ROI_POOLING,
    cli=Cli((CliArg("--rois", "NumROIs (default 8)", "number"),
             CliArg("--pooled-size", "PooledSize height,width (default 7,7)"),
             CliArg("--spatial-scale", "SpatialScale (default 1)", "number")),
            from_cli, "--shape 1,256,38,50 --rois 300 --pooled-size 7,7 --spatial-scale 0.0625"),
    page="DML_ROI_POOLING_OPERATOR_DESC", traffic=traffic, sample=sample,
)
