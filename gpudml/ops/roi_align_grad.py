"""DML_ROI_ALIGN_GRAD_OPERATOR_DESC (FL 4.1, `dml.roi_align_grad`; its page under
tests/data/pages/): the backpropagation of DML_ROI_ALIGN1 (gpudml/ops/roi_align.py, whose rule
and choices it shares: the samples per output, their positions, the taps, the out-of-bounds
rule). The incoming gradient dy (InputGradientTensor) has the forward's output sizes
[NumROIs, C, OH, OW]; the output gradient dx (OutputGradientTensor) the forward input's [N, C,
H, W]: dx = W^T dy, W the forward's sampling weights:

- AVERAGE: each sample of bin (y, x) of region r gives (1 / (n_y n_x)) dy[r, c, y, x] to the
  pixels it reads, with its interpolation weights (bilinear: the four taps; nearest: its
  pixel); a sample outside [-1, H] x [-1, W] (OutOfBoundsInputValue in the forward) gives
  nothing; a region whose batch index is outside [0, N) gives nothing.
- MAX: the whole dy[r, c, y, x] goes, with the interpolation weights, to the one sample the
  forward picked: the forward's samples are recomputed from InputTensor (which the page
  requires with MAX); the pick is the bin's first NaN, else its first largest sample in
  row-major sample order (ties: the first, as the forward's strict comparison keeps it). The
  grad's desc has no OutOfBoundsInputValue: gpudml compares an outside sample as 0 (ROI
  align's default); it gives no gradient wherever it is picked.

The kernel (kernels/roi_align_grad.py) gathers each dx element's contributions in a fixed
order (regions, bins row-major), and sums each ROI gradient coordinate in a fixed order (each
dy bin's share, then the bins in order): deterministic, no atomics.

What the page says, as implemented: InputTensor optional (required with MAX or the ROI
gradient), OutputGradientTensor and OutputROIGradientTensor optional, at least one of them;
every float tensor one type (FLOAT32, FLOAT16), BatchIndicesTensor UINT32; the ranks of the
page's table; ROITensor {NumROIs, 4} (or with leading 1s), BatchIndicesTensor {NumROIs} (or
with leading 1s); InputGradientTensor {NumROIs, C, OH, OW}; OutputGradientTensor InputTensor's
sizes where both are given; OutputROIGradientTensor ROITensor's sizes. The fields the page
takes from ROI_ALIGN1 validate as ROI_ALIGN1's (reduction AVERAGE or MAX, interpolation
NEAREST_NEIGHBOR or LINEAR, 1 <= MinimumSamplesPerOutput <= MaximumSamplesPerOutput, finite
scales and offsets).

The ROI gradient (OutputROIGradientTensor, rois' sizes: d / d [x1, y1, x2, y2] of each
region) is the forward's derivative in each box coordinate under the same sampling: the
samples per output (piecewise constant in the box: no derivative), their positions p_s = (s -
OutputPixelOffset) step + x1 SpatialScaleX - InputPixelOffset with step = (x2 - x1)
SpatialScaleX / D (D = OW n, or max(OW n - 1, 1) with AlignRegionsToCorners), so dp_s / dx1 =
SpatialScaleX (1 - t_s), dp_s / dx2 = SpatialScaleX t_s, t_s = (s - OutputPixelOffset) / D
(y alike); a bilinear sample's slope along x (1 - fy) (v01 - v00) + fy (v11 - v10), along y
(1 - fx) (v10 - v00) + fx (v11 - v01), with the forward's taps and fractions:

    droi[r, 0] = sum over c, y, x of dy[r, c, y, x] S(r, c, y, x, slope_x SpatialScaleX (1 - t))
    (droi[r, 2] with t; droi[r, 1], droi[r, 3] with slope_y and the y axis' t)

S the bin's reduction of its samples' terms: AVERAGE their sum over n_y n_x, MAX the term of
the sample the forward picked (the input gradient's pick). What the page defines is kept: its
pseudo-code's taps are floor and ceil, so along an axis whose fraction is 0 (an integer
coordinate, or one clamped into the first or last row or column) the slope is 0; and the
weights it writes, `inputWidth - x` and `x`, are TensorFlow's CropAndResizeGradBoxes' (the
pseudo-code is that loop's, names and all), whose exact form is (W - 1) - x (W - 1) / (OW -
1) and x (W - 1) / (OW - 1): this rule's SpatialScaleX (1 - t) and SpatialScaleX t in the
configuration tensorflow-directml-plugin runs CropAndResizeGradBoxes through ROI_ALIGN_GRAD's
ROI gradient (SpatialScale W - 1, offsets 0, one sample, AlignRegionsToCorners). Read
literally (x the output column), `inputWidth - x` is neither the derivative of the forward's
sample positions nor what TensorFlow's CropAndResizeGradBoxes computes (its consumer): gpudml
takes the derivative, and tests/test_roi_align_grad.py
checks the reference against central differences of the float64 forward and against
TensorFlow's loop. Where the page is silent: NEAREST_NEIGHBOR samples are piecewise constant
(ROI gradient 0); a sample outside [-1, H] x [-1, W] or of a batch index outside [0, N) gives
nothing; a bin whose share is exactly 0 adds nothing (a NaN dy reaches only the coordinates
it weighs).

Precision (`tolerance`, tested at the bound in tests/test_roi_align_grad.py): the reference
is float64 (positions, weights, sums; the sample counts from the float32 sizes, as the
kernel). The kernel's positions are within eps (ROI_ALIGN1's bound: 2^-21 (|x1| + |x2| + 4
|size| + |offsets| + 1)) of the exact ones, so each weight is within the largest change of
its float64 value over positions moved by eps (this covers the jumps at the bounds -1, W and
nearest's half-way points): AVERAGE adds sum |dy| ((|Wy| + dWy)(|Wx| + dWx) - |Wy||Wx|) with
dW those changes; the float32 tables, products and the sum add (R OH OW + n_y + n_x + 8)
2^-23 sum |Wy Wx dy|. MAX: where the bin's samples within the forward's own bound of its
largest could be picked (a near tie), |dy| times the difference of their weights from the
picked one's; plus the picked weights' moves and the sum's rounding as above. And the store's
rounding (a unit in the last place of the type, float16's or float32's, and its smallest
subnormal).

The ROI gradient's precision (the same tests): the reference is float64 (positions, slopes,
weights, sums). Per sample term (its slope times its weight): the slope's change over
positions moved by eps on each axis, and onto the nearest integer within eps (where the slope
is 0), times |weight|; the slope's float32 arithmetic, 8 2^-23 times its terms' magnitude;
the weight's float32 t and products, 4 2^-23 (|scale| + 2 |weight|); and the sums' rounding,
(n_y n_x + C OH OW + 8) 2^-23 times the sum of the terms' magnitudes; each bin's times
|dy| / (n_y n_x) (MAX: |dy|, the picked sample, and in a near tie the largest difference of
another candidate's term from the picked one's). Plus the store's rounding as above.
"""

from __future__ import annotations

import types
from dataclasses import dataclass

import numpy as np

from ..errors import InvalidArgumentError
from ..kernels import roi_align_grad as grad_family
from ..kernels.base import ProblemPlanner
from ..tensor_desc import TensorDesc, as_int_tuple, check_tensor_desc, positive_sizes
from ..types import F16, F32, U32, FeatureLevel, InterpolationMode, ReduceFunction
from . import roi_align as forward_ops
from .spec import Call, Cli, CliArg, OpSpec, support_table

OP = "RoiAlignGrad"
#: float32's unit roundoff (the ROI gradient's bound).
_UNIT = 2.0**-23
UINT32_MAX = forward_ops.UINT32_MAX
_FLOATS = {F32, F16}
_TENSORS = ("input_gradient_tensor", "input_tensor", "roi_tensor", "batch_indices_tensor", "output_gradient_tensor",
            "output_roi_gradient_tensor")
SUPPORT = support_table(OP, _TENSORS, [
    (FeatureLevel.FL_4_1, {"input_gradient_tensor": {4}, "input_tensor": {4}, "roi_tensor": (2, 4),
                           "batch_indices_tensor": (1, 4), "output_gradient_tensor": {4},
                           "output_roi_gradient_tensor": (2, 4)},
     _FLOATS, _FLOATS, _FLOATS, {U32}, _FLOATS, _FLOATS),
])


@dataclass(frozen=True)
class RoiAlignGradOperatorDesc:
    """DML_ROI_ALIGN_GRAD_OPERATOR_DESC (DirectML's field order)."""

    OPTIONAL_TENSORS = ("input_tensor", "output_gradient_tensor", "output_roi_gradient_tensor")
    input_tensor: TensorDesc | None
    input_gradient_tensor: TensorDesc
    roi_tensor: TensorDesc
    batch_indices_tensor: TensorDesc
    output_gradient_tensor: TensorDesc | None
    output_roi_gradient_tensor: TensorDesc | None
    reduction_function: ReduceFunction
    interpolation_mode: InterpolationMode
    spatial_scale_x: float
    spatial_scale_y: float
    input_pixel_offset: float
    output_pixel_offset: float
    minimum_samples_per_output: int
    maximum_samples_per_output: int
    align_regions_to_corners: bool

    def __post_init__(self):
        forward_ops.normalize(self, OP)


# ---------------------------------------------------------------------------- shapes
def _split(descs: tuple) -> tuple:
    """(x or None, dy, rois, batch_indices) of the functional form's tensors in the desc's order."""
    if len(descs) == 4:
        return descs
    if len(descs) == 3:
        return (None, *descs)
    raise InvalidArgumentError(f"{OP}: needs dy, rois and batch_indices (and x optionally), got {len(descs)} tensors")


def infer_output(*tensors: TensorDesc, input_size=None, spatial_scale=1.0, reduction_function="average",
                 interpolation_mode="linear", input_pixel_offset=0.5, output_pixel_offset=-0.5,
                 minimum_samples_per_output=1, maximum_samples_per_output=UINT32_MAX,
                 align_regions_to_corners=False, output_gradient=True,
                 output_roi_gradient=False) -> RoiAlignGradOperatorDesc:
    """The desc of `roi_align_grad(dy, rois, batch_indices, x=..., ...)`: dx of `input_size`
    (the forward input's [N, C, H, W]; x's sizes where x is given) where output_gradient,
    the ROI gradient (rois' sizes) where output_roi_gradient."""
    x, dy, rois, batch = _split(tensors)
    size = None
    if input_size is not None:
        size = positive_sizes(as_int_tuple(input_size, f"{OP}: input_size"), f"{OP}: input_size")
        if len(size) != 4:
            raise InvalidArgumentError(f"{OP}: input_size {list(size)} must be 4 sizes (the forward input's [N, C, "
                                       f"H, W])")
        if x is not None and size != tuple(x.sizes):
            raise InvalidArgumentError(f"{OP}: input_size {list(size)} must equal x's sizes {list(x.sizes)}")
    elif x is not None:
        size = tuple(x.sizes)
    if output_gradient and size is None:
        raise InvalidArgumentError(f"{OP}: input_size (the forward input's [N, C, H, W]) or x is needed for the "
                                   f"output gradient")
    sx, sy = forward_ops.pair(spatial_scale, "spatial_scale", OP)
    dx = TensorDesc(dy.data_type, list(size)) if output_gradient else None
    droi = TensorDesc(rois.data_type, list(rois.sizes)) if output_roi_gradient else None
    return RoiAlignGradOperatorDesc(x, dy, rois, batch, dx, droi, reduction_function, interpolation_mode, sx, sy,
                                    input_pixel_offset, output_pixel_offset, minimum_samples_per_output,
                                    maximum_samples_per_output, align_regions_to_corners)


# ---------------------------------------------------------------------------- validation
def validate(desc: RoiAlignGradOperatorDesc, level: FeatureLevel) -> None:
    x, dy, rois, batch = desc.input_tensor, desc.input_gradient_tensor, desc.roi_tensor, desc.batch_indices_tensor
    dx, droi = desc.output_gradient_tensor, desc.output_roi_gradient_tensor
    if dx is None and droi is None:
        raise InvalidArgumentError(f"{OP}: output_gradient_tensor and output_roi_gradient_tensor are both null; at "
                                   f"least one must be supplied")
    if x is None and (droi is not None or desc.reduction_function == ReduceFunction.MAX):
        why = "output_roi_gradient_tensor is supplied" if droi is not None else "reduction_function is MAX"
        raise InvalidArgumentError(f"{OP}: input_tensor must be supplied when {why} (the page)")
    for field in ("input_gradient_tensor", "roi_tensor", "batch_indices_tensor"):
        check_tensor_desc(OP, field, getattr(desc, field))
    floats = {f: getattr(desc, f) for f in ("input_gradient_tensor", "input_tensor", "roi_tensor",
                                            "output_gradient_tensor", "output_roi_gradient_tensor")}
    present = {f: td for f, td in floats.items() if td is not None}
    forward_ops.check_tensor_descs(OP, present)
    for field, td in present.items():
        SUPPORT.check_rank(level, field, td.rank)
    SUPPORT.check_rank(level, "batch_indices_tensor", batch.rank)
    SUPPORT.check(level, dy.rank, {**{f: td.data_type for f, td in present.items()},
                                   "batch_indices_tensor": batch.data_type})
    for field, td in present.items():
        if td.data_type != dy.data_type:
            raise InvalidArgumentError(f"{OP}: {field}.data_type {td.data_type.name} must equal "
                                       f"input_gradient_tensor.data_type {dy.data_type.name} (one type)")
    count = forward_ops.check_regions(OP, rois, batch)
    source = "input_tensor" if x is not None else "output_gradient_tensor" if dx is not None else None
    channels = getattr(desc, source).sizes[1] if source else dy.sizes[1]
    if dy.sizes[:2] != (count, channels):
        raise InvalidArgumentError(f"{OP}: input_gradient_tensor.sizes {list(dy.sizes)} must be {{NumROIs, "
                                   f"ChannelCount, OutputHeight, OutputWidth}} with NumROIs = {count} (roi_tensor) "
                                   f"and ChannelCount = {channels} ({source}.sizes[1])")
    if x is not None and dx is not None and dx.sizes != x.sizes:
        raise InvalidArgumentError(f"{OP}: output_gradient_tensor.sizes {list(dx.sizes)} must equal "
                                   f"input_tensor.sizes {list(x.sizes)}")
    if droi is not None and droi.sizes != rois.sizes:
        raise InvalidArgumentError(f"{OP}: output_roi_gradient_tensor.sizes {list(droi.sizes)} must equal "
                                   f"roi_tensor.sizes {list(rois.sizes)}")
    forward_ops.check_fields(desc, OP)


# ---------------------------------------------------------------------------- planning
def problem(desc: RoiAlignGradOperatorDesc) -> grad_family.RoiAlignGrad:
    dx, dy = desc.output_gradient_tensor, desc.input_gradient_tensor
    image = dx if desc.input_tensor is None else desc.input_tensor
    forward = forward_ops.RoiAlign1OperatorDesc(
        image, desc.roi_tensor, desc.batch_indices_tensor, dy, desc.reduction_function, desc.interpolation_mode,
        desc.spatial_scale_x, desc.spatial_scale_y, desc.input_pixel_offset, desc.output_pixel_offset, 0.0,
        desc.minimum_samples_per_output, desc.maximum_samples_per_output, desc.align_regions_to_corners)
    return grad_family.RoiAlignGrad(forward_ops.problem(forward)._replace(op=OP), dy, dx,
                                    desc.input_tensor is not None, desc.output_roi_gradient_tensor)


PLANNER = ProblemPlanner(problem, grad_family.FAMILY)


# ---------------------------------------------------------------------------- reference
def _params(kwargs: dict) -> dict:
    p, _ = forward_ops.reference_params(kwargs.pop("spatial_scale", 1.0), (1, 1), kwargs)
    p["out_of_bounds_input_value"] = 0.0
    return p


def _axis_weights(v: np.ndarray, size: int, nearest: bool) -> np.ndarray:
    """[len(v), size]: the weight each sample position gives each index (0 outside [-1, size])."""
    outside, lo, hi, frac = forward_ops.taps(v, size, nearest)
    m = np.zeros((len(v), size))
    rows = np.arange(len(v))
    np.add.at(m, (rows, lo), np.where(outside, 0.0, 1.0 - frac))
    np.add.at(m, (rows, hi), np.where(outside, 0.0, frac))
    return m


def _moved(v: np.ndarray, eps: float, size: int, nearest: bool) -> np.ndarray:
    """The largest change of each weight over positions moved by up to eps."""
    base = _axis_weights(v, size, nearest)
    return np.maximum(np.abs(_axis_weights(v - eps, size, nearest) - base),
                      np.abs(_axis_weights(v + eps, size, nearest) - base))


def _regions(rois, batch, n_img: int, dy_shape, p: dict):
    """Per region r of an image in [0, N): (r, its image b, its samples per output along x and
    y, their positions (float64), and the kernel's position error bound along x and y
    (ROI_ALIGN1's eps))."""
    _, _, oh, ow = dy_shape
    sx, sy = p["spatial_scale"]
    low, high = p["minimum_samples_per_output"], p["maximum_samples_per_output"]
    offsets = abs(p["input_pixel_offset"]) + abs(p["output_pixel_offset"]) + 1
    for r in range(len(rois)):
        x1, y1, x2, y2 = (float(v) for v in rois[r])
        b = int(batch[r])
        if not 0 <= b < n_img:
            continue
        nx = forward_ops.samples_per_output(x1, x2, sx, ow, low, high)
        ny = forward_ops.samples_per_output(y1, y2, sy, oh, low, high)
        ex = 2.0**-21 * (abs(x1 * sx) + abs(x2 * sx) + 4 * abs((x2 - x1) * sx) + offsets)
        ey = 2.0**-21 * (abs(y1 * sy) + abs(y2 * sy) + 4 * abs((y2 - y1) * sy) + offsets)
        yield (r, b, nx, ny, forward_ops.positions(x1, x2, sx, ow, nx, p), forward_ops.positions(y1, y2, sy, oh, ny, p),
               ex, ey)


def _add_nonfinite(out: np.ndarray, dy: np.ndarray, rows: np.ndarray, cols: np.ndarray) -> None:
    """Adds to `out` [C, H, W] the terms of dy's [C, OH, OW] non-finite elements (NaN,
    infinities) where their weight is not 0 (rows [C, OH, OW, H] and cols [C, OH, OW, W], or
    broadcast to them: the row and column weights of each dy element): the kernel's rule, a
    weight of exactly 0 adds nothing (a NaN dy reaches only the elements it weighs)."""
    rows = np.broadcast_to(rows, (*dy.shape, rows.shape[-1]))
    cols = np.broadcast_to(cols, (*dy.shape, cols.shape[-1]))
    for c, y, xx in zip(*np.nonzero(~np.isfinite(dy)), strict=True):
        weight = np.outer(rows[c, y, xx], cols[c, y, xx])
        with np.errstate(invalid="ignore"):
            out[c] += np.where(weight != 0, weight * dy[c, y, xx], 0.0)


def _evaluate(x, dy, rois, batch, size, p: dict, with_bound: bool):
    n_img, channels, h, w = size
    regions, _, oh, ow = dy.shape
    nearest = p["interpolation_mode"] == "nearest_neighbor"
    maximum = p["reduction_function"] == "max"
    sx, sy = p["spatial_scale"]
    dyf = dy.astype(np.float64)
    result = np.zeros(size)
    bound = np.zeros(size)
    for r, b, nx, ny, xs, ys, ex, ey in _regions(rois, batch, n_img, dy.shape, p):
        wy, wx = _axis_weights(ys, h, nearest), _axis_weights(xs, w, nearest)  # [OH ny, H], [OW nx, W]
        dwy, dwx = _moved(ys, ey, h, nearest), _moved(xs, ex, w, nearest)
        terms = oh * ow * regions + nx + ny + 8
        finite = np.where(np.isfinite(dyf[r]), dyf[r], 0.0)  # (the others: _add_nonfinite)
        if not maximum:
            ty, tx = wy.reshape(oh, ny, h).sum(1) / ny, wx.reshape(ow, nx, w).sum(1) / nx
            result[b] += np.einsum("yh,xw,cyx->chw", ty, tx, finite)
            _add_nonfinite(result[b], dyf[r], ty[None, :, None], tx[None, None])
            if with_bound:
                ay, ax = np.abs(ty), np.abs(tx)
                my, mx = dwy.reshape(oh, ny, h).sum(1) / ny, dwx.reshape(ow, nx, w).sum(1) / nx
                s = np.einsum("yh,xw,cyx->chw", ay, ax, np.abs(finite))
                bound[b] += np.einsum("yh,xw,cyx->chw", ay + my, ax + mx, np.abs(finite)) - s
                bound[b] += terms * 2.0**-23 * s
            continue
        grid, magnitude = forward_ops.sample_grid(x[b].astype(np.float64), ys, xs, nearest, 0.0, True)
        g = grid.reshape(channels, oh, ny, ow, nx).transpose(0, 1, 3, 2, 4).reshape(channels, oh, ow, ny * nx)
        pick = _first_pick(g)
        iy, ix = pick // nx, pick % nx
        sy_idx = np.arange(oh)[None, :, None] * ny + iy
        sx_idx = np.arange(ow)[None, None, :] * nx + ix
        result[b] += np.einsum("cyx,cyxh,cyxw->chw", finite, wy[sy_idx], wx[sx_idx])
        _add_nonfinite(result[b], dyf[r], wy[sy_idx], wx[sx_idx])
        if not with_bound:
            continue
        ady = np.abs(finite)
        s = np.einsum("cyx,cyxh,cyxw->chw", ady, wy[sy_idx], wx[sx_idx])
        bound[b] += np.einsum("cyx,cyxh,cyxw->chw", ady, wy[sy_idx] + dwy[sy_idx], wx[sx_idx] + dwx[sx_idx]) - s
        bound[b] += terms * 2.0**-23 * s
        # near ties: every sample within the forward's bound of the largest could be the pick
        mag = magnitude.reshape(channels, oh, ny, ow, nx).transpose(0, 1, 3, 2, 4).reshape(g.shape)
        slack = 2 * (2.0**-20 * mag.max(-1, keepdims=True) + 2.0**-18 * (1 + np.abs(g).max(-1, keepdims=True)))
        with np.errstate(invalid="ignore"):
            near = g >= np.max(g, -1, keepdims=True) - slack
        near &= ~np.isnan(g).any(-1, keepdims=True)
        for c, y, xx in zip(*np.nonzero(near.sum(-1) > 1), strict=True):
            py, px = iy[c, y, xx], ix[c, y, xx]
            picked = np.outer(wy[y * ny + py], wx[xx * nx + px])
            for k in np.flatnonzero(near[c, y, xx]):
                alt = np.outer(wy[y * ny + k // nx], wx[xx * nx + k % nx])
                bound[b, c] += ady[c, y, xx] * np.abs(alt - picked)
    return result, bound


def _first_pick(g: np.ndarray) -> np.ndarray:
    """The forward's pick per bin (last axis: the samples row-major): its first NaN, else
    its first largest."""
    nan = np.isnan(g)
    with np.errstate(invalid="ignore"):
        largest = np.argmax(np.where(nan, -np.inf, g), axis=-1)
    return np.where(nan.any(-1), np.argmax(nan, axis=-1), largest)


# ---------------------------------------------------------------------------- the ROI gradient
def _corner_weights(scale: float, out: int, n: int, p: dict) -> tuple:
    """(d position / d first corner, d position / d second corner) of each of an axis' out * n
    samples: scale (1 - t) and scale t, t = (s - OutputPixelOffset) / D (D = out n, or max(out
    n - 1, 1) with AlignRegionsToCorners)."""
    total = out * n
    den = max(total - 1, 1) if p["align_regions_to_corners"] else total
    t = (np.arange(total, dtype=np.float64) - p["output_pixel_offset"]) / den
    return scale * (1.0 - t), scale * t


def _slopes(plane: np.ndarray, ys: np.ndarray, xs: np.ndarray) -> tuple:
    """(d sample / d x, d sample / d y, |terms| of each) [C, Sy, Sx] of the bilinear samples of
    `plane` [C, H, W] at ys x xs (module docstring): along an axis 0 where the sample is outside
    [-1, H] x [-1, W] or the axis' fraction is 0."""
    h, w = plane.shape[1:]
    oy, y0, y1, fy = forward_ops.taps(ys, h, False)
    ox, x0, x1, fx = forward_ops.taps(xs, w, False)
    v00, v01 = plane[:, y0[:, None], x0[None, :]], plane[:, y0[:, None], x1[None, :]]
    v10, v11 = plane[:, y1[:, None], x0[None, :]], plane[:, y1[:, None], x1[None, :]]
    fy2, fx2 = fy[:, None], fx[None, :]
    with np.errstate(invalid="ignore", over="ignore"):
        gx = (1 - fy2) * (v01 - v00) + fy2 * (v11 - v10)
        gy = (1 - fx2) * (v10 - v00) + fx2 * (v11 - v01)
        mag_x = (1 - fy2) * (np.abs(v01) + np.abs(v00)) + fy2 * (np.abs(v11) + np.abs(v10))
        mag_y = (1 - fx2) * (np.abs(v10) + np.abs(v00)) + fx2 * (np.abs(v11) + np.abs(v01))
    outside = (oy[:, None] | ox[None, :])[None]
    zero_x, zero_y = outside | (fx2 == 0)[None], outside | (fy2 == 0)[None]
    return (np.where(zero_x, 0.0, gx), np.where(zero_y, 0.0, gy), np.where(zero_x, 0.0, mag_x),
            np.where(zero_y, 0.0, mag_y))


def _nudged(v: np.ndarray, eps: float) -> list:
    """Positions within eps of each of v: v - eps, v + eps, and the nearest integer where it is
    within eps (a float32 position may land on it, where the axis' slope is 0)."""
    k = np.round(v)
    return [v - eps, v + eps, np.where(np.abs(v - k) <= eps, k, v)]


def _bins(v: np.ndarray, shape: tuple, maximum: bool, pick) -> np.ndarray:
    """Per-sample values [C, OH ny, OW nx] as per-bin ones [C, OH, OW]: the sum over the bin's
    samples (AVERAGE), the picked sample's (MAX)."""
    c, oh, ny, ow, nx = shape
    v = np.broadcast_to(v, (c, oh * ny, ow * nx)).reshape(shape)
    if not maximum:
        return v.sum(axis=(2, 4))
    flat = v.transpose(0, 1, 3, 2, 4).reshape(c, oh, ow, ny * nx)
    return np.take_along_axis(flat, pick[..., None], axis=-1)[..., 0]


def _per_bin_samples(v: np.ndarray, shape: tuple) -> np.ndarray:
    c, oh, ny, ow, nx = shape
    return np.broadcast_to(v, (c, oh * ny, ow * nx)).reshape(shape).transpose(0, 1, 3, 2, 4).reshape(
        c, oh, ow, ny * nx)


def _roi_evaluate(x, dy, rois, batch, p: dict, with_bound: bool):
    """The ROI gradient [NumROIs, 4] (d / d x1, y1, x2, y2) in float64 (module docstring), and
    with_bound its documented precision's terms before the store's rounding."""
    n_img, channels, h, w = x.shape
    regions, _, oh, ow = dy.shape
    maximum = p["reduction_function"] == "max"
    sx, sy = p["spatial_scale"]
    result, bound = np.zeros((regions, 4)), np.zeros((regions, 4))
    if p["interpolation_mode"] == "nearest_neighbor":  # (piecewise constant samples: every slope is 0)
        return result, bound
    dyf = dy.astype(np.float64)
    for r, b, nx, ny, xs, ys, ex, ey in _regions(rois, batch, n_img, dy.shape, p):
        plane = x[b].astype(np.float64)
        (ax1, ax2), (ay1, ay2) = _corner_weights(sx, ow, nx, p), _corner_weights(sy, oh, ny, p)
        gx, gy, mag_x, mag_y = _slopes(plane, ys, xs)
        shape = (channels, oh, ny, ow, nx)
        slopes, mags = (gx, gy, gx, gy), (mag_x, mag_y, mag_x, mag_y)
        weights = (ax1[None, None, :], ay1[None, :, None], ax2[None, None, :], ay2[None, :, None])
        pick = None
        if maximum:
            grid, magnitude = forward_ops.sample_grid(plane, ys, xs, False, 0.0, True)
            g = _per_bin_samples(grid, shape)
            pick = _first_pick(g)
        factor = dyf[r] if maximum else dyf[r] / (nx * ny)
        with np.errstate(invalid="ignore", over="ignore"):
            sums = [_bins(slopes[k] * weights[k], shape, maximum, pick) for k in range(4)]
            for k in range(4):
                result[r, k] = np.sum(np.where(sums[k] == 0, 0.0, sums[k] * factor))
        if not with_bound:
            continue
        dev_x, dev_y = np.zeros_like(gx), np.zeros_like(gy)
        with np.errstate(invalid="ignore", over="ignore"):
            for my in [ys, *_nudged(ys, ey)]:
                for mx in [xs, *_nudged(xs, ex)]:
                    moved_x, moved_y = _slopes(plane, my, mx)[:2]
                    dev_x = np.fmax(dev_x, np.abs(moved_x - gx))
                    dev_y = np.fmax(dev_y, np.abs(moved_y - gy))
            devs = (dev_x, dev_y, dev_x, dev_y)
            terms = nx * ny + channels * oh * ow + 8
            near = None
            if maximum:  # near ties: every sample within the forward's bound of the largest could be the pick
                mag = _per_bin_samples(magnitude, shape)
                slack = 2 * (2.0**-20 * mag.max(-1, keepdims=True) + 2.0**-18 * (1 + np.abs(g).max(-1, keepdims=True)))
                near = (g >= np.max(g, -1, keepdims=True) - slack) & ~np.isnan(g).any(-1, keepdims=True)
                near &= near.sum(-1, keepdims=True) > 1
            for k in range(4):
                scale = (abs(sx), abs(sy))[k % 2]
                wk = np.abs(weights[k])
                werr = 4 * _UNIT * (scale + 2 * wk)  # (t, 1 - t and the scale's product in float32)
                spread = np.abs(slopes[k]) + devs[k]
                local = devs[k] * wk + 8 * _UNIT * mags[k] * wk + spread * werr
                big = spread * (wk + werr)
                e = _bins(local, shape, maximum, pick) + terms * _UNIT * _bins(big, shape, maximum, pick)
                if maximum:
                    each = _per_bin_samples(slopes[k] * weights[k], shape)
                    picked = np.take_along_axis(each, pick[..., None], axis=-1)
                    alt = np.abs(each - picked) + _per_bin_samples(local + big, shape)
                    e = e + np.where(near, alt, 0.0).max(-1, initial=0.0)
                bound[r, k] = np.sum(np.abs(factor) * e)
    return result, bound


def _arrays(dy, rois, batch_indices, x):
    dy = np.asarray(dy)
    if dy.ndim != 4:
        raise ValueError(f"roi_align_grad: dy has {dy.ndim} dimensions; it must be [NumROIs, C, OH, OW]")
    rois = np.asarray(rois).reshape(-1, 4)
    batch = np.asarray(batch_indices).reshape(-1)
    return dy, rois, batch, None if x is None else np.asarray(x)


def _prepare(dy, rois, batch_indices, x, input_size, kwargs):
    """(dy, rois [NumROIs, 4], batch, x, dx's sizes or None, the parameters, which outputs)."""
    outputs = (bool(kwargs.pop("output_gradient", True)), bool(kwargs.pop("output_roi_gradient", False)))
    if not any(outputs):
        raise ValueError("roi_align_grad: no output asked for")
    shape = np.shape(rois)
    dy, rois, batch, x = _arrays(dy, rois, batch_indices, x)
    if outputs[1] and x is None:
        raise ValueError("roi_align_grad: the ROI gradient needs x (the page: InputTensor)")
    size = None
    if outputs[0]:
        size = tuple(int(v) for v in (x.shape if input_size is None else input_size))
    return dy, rois, batch, x, size, _params(kwargs), outputs, shape


def reference(dy, rois, batch_indices, *, x=None, input_size=None, **kwargs):
    """The outputs asked for in float64 (the module's rule), each rounded once to dy's type:
    dx, the ROI gradient (rois' shape), or (dx, ROI gradient) where both are."""
    dy, rois, batch, x, size, p, (want_dx, want_roi), shape = _prepare(dy, rois, batch_indices, x, input_size,
                                                                       dict(kwargs))
    out = []
    if want_dx:
        out.append(_evaluate(x, dy, rois, batch, size, p, False)[0].astype(dy.dtype))
    if want_roi:
        out.append(_roi_evaluate(x, dy, rois, batch, p, False)[0].reshape(shape).astype(dy.dtype))
    return out[0] if len(out) == 1 else tuple(out)


def _finish(bound: np.ndarray, expected: np.ndarray) -> np.ndarray:
    """A bound plus the store's rounding (a unit in the last place of the type and its
    smallest subnormal); 0 where the expected value is not finite (bit-exact there)."""
    ulp = {np.dtype(np.float16): 2.0**-10, np.dtype(np.float32): 2.0**-23}[expected.dtype]
    floor = {np.dtype(np.float16): 2.0**-24, np.dtype(np.float32): 2.0**-149}[expected.dtype]
    want = np.abs(expected.astype(np.float64))
    return np.where(np.isfinite(want), bound + ulp * want + floor, 0.0)


def tolerance(expected: np.ndarray, inputs, arguments: dict):
    """The documented precision per element of whichever output `expected` is (module
    docstring; by its shape, the larger where both outputs have it); `inputs` the desc's (x
    first where given) or the functional form's positional ones (x then among `arguments`)."""
    kwargs = dict(arguments)
    x = kwargs.pop("x", None)
    if len(inputs) == 4:
        x, inputs = inputs[0], inputs[1:]
    dy, rois, batch, x, size, p, (want_dx, want_roi), shape = _prepare(*inputs, x, kwargs.pop("input_size", None),
                                                                       kwargs)
    found = []
    if want_dx and np.shape(expected) == size:
        found.append(_evaluate(x, dy, rois, batch, size, p, True)[1])
    if want_roi and np.shape(expected) == shape:
        found.append(_roi_evaluate(x, dy, rois, batch, p, True)[1].reshape(shape))
    if not found:
        raise InvalidArgumentError(f"{OP}: tolerance: an expected array of shape {np.shape(expected)} is no output's")
    return _finish(np.max(np.stack(found), axis=0), expected)


# ---------------------------------------------------------------------------- API
def roi_align_grad(dy, rois, batch_indices, *, x=None, input_size=None, spatial_scale=1.0,
                   reduction_function="average", interpolation_mode="linear", input_pixel_offset=0.5,
                   output_pixel_offset=-0.5, minimum_samples_per_output=1, maximum_samples_per_output=UINT32_MAX,
                   align_regions_to_corners=False, output_gradient=True, output_roi_gradient=False, device=None):
    """DML_ROI_ALIGN_GRAD: the gradients of roi_align (DML_ROI_ALIGN1) with respect to its
    input and its regions: dy [NumROIs, C, OH, OW] (the forward output's gradient), rois and batch_indices
    (UINT32) as the forward's, x the forward's input (needed with reduction "max" and the
    ROI gradient; else input_size [N, C, H, W] gives dx's sizes); the other keywords
    roi_align's. Returns dx [N, C, H, W] (output_gradient), the ROI gradient d / d [x1, y1,
    x2, y2] of rois' shape (output_roi_gradient), or (dx, ROI gradient) where both are asked
    for. See docs/operators/roi_align_grad.md."""
    to_rois, _ = forward_ops.converters("roi_align_grad")
    tensors = ([("x", x)] if x is not None else []) + [("dy", dy), ("rois", rois, to_rois),
                                                          ("batch_indices", batch_indices, _indices)]
    return Call(tensors, {"input_size": input_size, "spatial_scale": spatial_scale,
                          "reduction_function": reduction_function, "interpolation_mode": interpolation_mode,
                          "input_pixel_offset": input_pixel_offset, "output_pixel_offset": output_pixel_offset,
                          "minimum_samples_per_output": minimum_samples_per_output,
                          "maximum_samples_per_output": maximum_samples_per_output,
                          "align_regions_to_corners": align_regions_to_corners, "output_gradient": output_gradient,
                          "output_roi_gradient": output_roi_gradient}, device)


def _indices(values) -> np.ndarray:
    """Batch indices as UINT32 (the page's one type): 64-bit integers too where every value
    fits 32 bits (numpy's default integers), else as UINT64 (which validation refuses)."""
    values = forward_ops.batch_indices_array(values, "roi_align_grad")
    return values.astype(np.uint32) if values.dtype == np.uint64 and bool(np.all(values < 2**32)) else values


def arguments(desc: RoiAlignGradOperatorDesc) -> dict:
    dx = desc.output_gradient_tensor
    return {"input_size": None if dx is None or desc.input_tensor is not None else dx.sizes,
            "spatial_scale": (desc.spatial_scale_x, desc.spatial_scale_y),
            "reduction_function": desc.reduction_function.name.lower(),
            "interpolation_mode": desc.interpolation_mode.name.lower(),
            "input_pixel_offset": desc.input_pixel_offset, "output_pixel_offset": desc.output_pixel_offset,
            "minimum_samples_per_output": desc.minimum_samples_per_output,
            "maximum_samples_per_output": desc.maximum_samples_per_output,
            "align_regions_to_corners": desc.align_regions_to_corners,
            "output_gradient": dx is not None, "output_roi_gradient": desc.output_roi_gradient_tensor is not None}


def sample(desc: RoiAlignGradOperatorDesc, rng) -> list:
    """ROI align's sample (boxes over the image and beyond it, a few inverted or empty;
    batch indices mostly in range), dy in [-4, 4]."""
    image = desc.output_gradient_tensor if desc.input_tensor is None else desc.input_tensor
    x, rois, indices = forward_ops.sample(types.SimpleNamespace(
        input_tensor=image, roi_tensor=desc.roi_tensor, batch_indices_tensor=desc.batch_indices_tensor,
        spatial_scale_x=desc.spatial_scale_x, spatial_scale_y=desc.spatial_scale_y), rng)
    dy = desc.input_gradient_tensor
    grads = rng.uniform(-4.0, 4.0, dy.required_elements).astype(dy.data_type.numpy)
    return ([x] if desc.input_tensor is not None else []) + [grads, rois, indices]


#: `gpudml shader roi_align_grad --outputs`: which outputs the desc asks for.
_CLI_OUTPUTS = {"input": (True, False), "roi": (False, True), "both": (True, True)}


def from_cli(x: TensorDesc, a: dict) -> RoiAlignGradOperatorDesc:
    """The gradient of `gpudml shader roi_align1`'s forward with the same options (x its
    input): `--outputs` input (OutputGradientTensor, the default), roi
    (OutputROIGradientTensor) or both; InputTensor where MAX or the ROI gradient needs it."""
    forward = forward_ops.from_cli(1)(x, {**a, "indices_dtype": "UINT32"})
    choice = str(a.get("outputs") or "input").lower()
    if choice not in _CLI_OUTPUTS:
        raise InvalidArgumentError(f"{OP}: --outputs {choice!r} must be one of {sorted(_CLI_OUTPUTS)}")
    want_dx, want_roi = _CLI_OUTPUTS[choice]
    needs_x = forward.reduction_function == ReduceFunction.MAX or want_roi
    tensors = (x,) if needs_x else ()
    return infer_output(*tensors, forward.output_tensor, forward.roi_tensor, forward.batch_indices_tensor,
                        input_size=None if needs_x else x.sizes,
                        spatial_scale=(forward.spatial_scale_x, forward.spatial_scale_y),
                        reduction_function=forward.reduction_function, interpolation_mode=forward.interpolation_mode,
                        minimum_samples_per_output=forward.minimum_samples_per_output,
                        maximum_samples_per_output=forward.maximum_samples_per_output,
                        output_gradient=want_dx, output_roi_gradient=want_roi)


def traffic(desc: RoiAlignGradOperatorDesc) -> int:
    """dx and the ROI gradient written once, dy, the regions and indices read once (and
    InputTensor, where MAX or the ROI gradient reads it: at most its taps, 4 per dy element)."""
    total = sum(td.element_count * td.data_type.size for td in (
        desc.output_gradient_tensor, desc.output_roi_gradient_tensor, desc.input_gradient_tensor, desc.roi_tensor,
        desc.batch_indices_tensor) if td is not None)
    reads_x = desc.reduction_function == ReduceFunction.MAX or desc.output_roi_gradient_tensor is not None
    if reads_x and desc.input_tensor is not None:
        total += min(desc.input_tensor.element_count, desc.input_gradient_tensor.element_count * 4) * \
            desc.input_tensor.data_type.size
    return total


CLI_ARGS = tuple(a for a in forward_ops.CLI_ARGS if a.flag != "--indices-dtype") + (
    CliArg("--outputs", "input (OutputGradientTensor), roi (OutputROIGradientTensor) or both (default input)",
           "str", "input"),)

SPECS = (OpSpec(
    name=OP, key="roi_align_grad", desc=RoiAlignGradOperatorDesc, support=SUPPORT, infer_output=infer_output,
    validate=validate, reference=reference, functional=roi_align_grad,
    tensors=("x", "dy", "rois", "batch_indices"), arguments=arguments, planner=PLANNER,
    cli=Cli(CLI_ARGS, from_cli, "--shape 1,64,28,28 --rois 16 --output-size 7,7 --samples 2"),
    page="DML_ROI_ALIGN_GRAD_OPERATOR_DESC", tolerance=tolerance, traffic=traffic,
    sample=sample),)
