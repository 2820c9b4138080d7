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
order (regions, bins row-major): deterministic, no atomics.

What the page says, as implemented: InputTensor optional (required with MAX or the ROI
gradient), OutputGradientTensor and OutputROIGradientTensor optional, at least one of them;
every float tensor one type (FLOAT32, FLOAT16), BatchIndicesTensor UINT32; the ranks of the
page's table; ROITensor {NumROIs, 4} (or with leading 1s), BatchIndicesTensor {NumROIs} (or
with leading 1s); InputGradientTensor {NumROIs, C, OH, OW}; OutputGradientTensor InputTensor's
sizes where both are given; OutputROIGradientTensor ROITensor's sizes. The fields the page
takes from ROI_ALIGN1 validate as ROI_ALIGN1's (reduction AVERAGE or MAX, interpolation
NEAREST_NEIGHBOR or LINEAR, 1 <= MinimumSamplesPerOutput <= MaximumSamplesPerOutput, finite
scales and offsets).

Not implemented: OutputROIGradientTensor. The page gives it only as pseudo-code for one
sample per output (with inputWidth - x weights that are not the forward's derivative); a desc
with it validates, and running it is an UnsupportedError naming the field (before any GPU
work); the reference refuses it alike.

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
"""

from __future__ import annotations

import types
from dataclasses import dataclass

import numpy as np

from ..errors import InvalidArgumentError, UnsupportedError
from ..kernels import roi_align_grad as grad_family
from ..kernels.base import ProblemPlanner
from ..tensor_desc import TensorDesc, as_int_tuple, check_tensor_desc
from ..types import F16, F32, U32, FeatureLevel, InterpolationMode, ReduceFunction
from . import roi_align as forward_ops
from .spec import Call, Cli, OpSpec, support_table

OP = "RoiAlignGrad"
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
        size = as_int_tuple(input_size, f"{OP}: input_size")
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
    if desc.output_roi_gradient_tensor is not None:
        raise UnsupportedError(f"{OP}: output_roi_gradient_tensor (the gradient with respect to roi_tensor) is not "
                               f"implemented in gpudml; supply output_gradient_tensor alone")
    dx, dy = desc.output_gradient_tensor, desc.input_gradient_tensor
    image = dx if desc.input_tensor is None else desc.input_tensor
    forward = forward_ops.RoiAlign1OperatorDesc(
        image, desc.roi_tensor, desc.batch_indices_tensor, dy, desc.reduction_function, desc.interpolation_mode,
        desc.spatial_scale_x, desc.spatial_scale_y, desc.input_pixel_offset, desc.output_pixel_offset, 0.0,
        desc.minimum_samples_per_output, desc.maximum_samples_per_output, desc.align_regions_to_corners)
    return grad_family.RoiAlignGrad(forward_ops.problem(forward)._replace(op=OP), dy, dx,
                                    desc.input_tensor is not None)


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


def _evaluate(x, dy, rois, batch, size, p: dict, with_bound: bool):
    n_img, channels, h, w = size
    regions, _, oh, ow = dy.shape
    nearest = p["interpolation_mode"] == "nearest_neighbor"
    maximum = p["reduction_function"] == "max"
    sx, sy = p["spatial_scale"]
    low, high = p["minimum_samples_per_output"], p["maximum_samples_per_output"]
    dyf = dy.astype(np.float64)
    result = np.zeros(size)
    bound = np.zeros(size)
    offsets = abs(p["input_pixel_offset"]) + abs(p["output_pixel_offset"]) + 1
    for r in range(regions):
        x1, y1, x2, y2 = (float(v) for v in rois[r])
        b = int(batch[r])
        if not 0 <= b < n_img:
            continue
        nx = forward_ops.samples_per_output(x1, x2, sx, ow, low, high)
        ny = forward_ops.samples_per_output(y1, y2, sy, oh, low, high)
        xs = forward_ops.positions(x1, x2, sx, ow, nx, p)
        ys = forward_ops.positions(y1, y2, sy, oh, ny, p)
        wy, wx = _axis_weights(ys, h, nearest), _axis_weights(xs, w, nearest)  # [OH ny, H], [OW nx, W]
        ex = 2.0**-21 * (abs(x1 * sx) + abs(x2 * sx) + 4 * abs((x2 - x1) * sx) + offsets)
        ey = 2.0**-21 * (abs(y1 * sy) + abs(y2 * sy) + 4 * abs((y2 - y1) * sy) + offsets)
        dwy, dwx = _moved(ys, ey, h, nearest), _moved(xs, ex, w, nearest)
        terms = oh * ow * regions + nx + ny + 8
        if not maximum:
            ty, tx = wy.reshape(oh, ny, h).sum(1) / ny, wx.reshape(ow, nx, w).sum(1) / nx
            result[b] += np.einsum("yh,xw,cyx->chw", ty, tx, dyf[r])
            if with_bound:
                ay, ax = np.abs(ty), np.abs(tx)
                my, mx = dwy.reshape(oh, ny, h).sum(1) / ny, dwx.reshape(ow, nx, w).sum(1) / nx
                s = np.einsum("yh,xw,cyx->chw", ay, ax, np.abs(dyf[r]))
                bound[b] += np.einsum("yh,xw,cyx->chw", ay + my, ax + mx, np.abs(dyf[r])) - s
                bound[b] += terms * 2.0**-23 * s
            continue
        grid, magnitude = forward_ops.sample_grid(x[b].astype(np.float64), ys, xs, nearest, 0.0, True)
        g = grid.reshape(channels, oh, ny, ow, nx).transpose(0, 1, 3, 2, 4).reshape(channels, oh, ow, ny * nx)
        pick = _first_pick(g)
        iy, ix = pick // nx, pick % nx
        sy_idx = np.arange(oh)[None, :, None] * ny + iy
        sx_idx = np.arange(ow)[None, None, :] * nx + ix
        result[b] += np.einsum("cyx,cyxh,cyxw->chw", dyf[r], wy[sy_idx], wx[sx_idx])
        if not with_bound:
            continue
        ady = np.abs(dyf[r])
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


def _arrays(dy, rois, batch_indices, x):
    dy = np.asarray(dy)
    if dy.ndim != 4:
        raise ValueError(f"roi_align_grad: dy has {dy.ndim} dimensions; it must be [NumROIs, C, OH, OW]")
    rois = np.asarray(rois).reshape(-1, 4)
    batch = np.asarray(batch_indices).reshape(-1)
    return dy, rois, batch, None if x is None else np.asarray(x)


def _prepare(dy, rois, batch_indices, x, input_size, kwargs):
    if kwargs.pop("output_roi_gradient", False):
        raise UnsupportedError(f"{OP}: output_roi_gradient (the gradient with respect to roi_tensor) is not "
                               f"implemented in gpudml")
    if not kwargs.pop("output_gradient", True):
        raise ValueError("roi_align_grad: no output asked for")
    dy, rois, batch, x = _arrays(dy, rois, batch_indices, x)
    size = tuple(int(v) for v in (x.shape if input_size is None else input_size))
    return dy, rois, batch, x, size, _params(kwargs)


def reference(dy, rois, batch_indices, *, x=None, input_size=None, **kwargs) -> np.ndarray:
    """The input gradient in float64 (the module's rule), rounded once to dy's type."""
    dy, rois, batch, x, size, p = _prepare(dy, rois, batch_indices, x, input_size, dict(kwargs))
    return _evaluate(x, dy, rois, batch, size, p, False)[0].astype(dy.dtype)


def tolerance(expected: np.ndarray, inputs, arguments: dict):
    """The documented precision per element (module docstring); `inputs` the desc's (x first
    where given) or the functional form's positional ones (x then among `arguments`)."""
    kwargs = dict(arguments)
    x = kwargs.pop("x", None)
    if len(inputs) == 4:
        x, inputs = inputs[0], inputs[1:]
    dy, rois, batch, x, size, p = _prepare(*inputs, x, kwargs.pop("input_size", None), kwargs)
    _, bound = _evaluate(x, dy, rois, batch, size, p, True)
    ulp = {np.dtype(np.float16): 2.0**-10, np.dtype(np.float32): 2.0**-23}[expected.dtype]
    floor = {np.dtype(np.float16): 2.0**-24, np.dtype(np.float32): 2.0**-149}[expected.dtype]
    want = np.abs(expected.astype(np.float64))
    return np.where(np.isfinite(want), bound + ulp * want + floor, 0.0)


# ---------------------------------------------------------------------------- API
def roi_align_grad(dy, rois, batch_indices, *, x=None, input_size=None, spatial_scale=1.0,
                   reduction_function="average", interpolation_mode="linear", input_pixel_offset=0.5,
                   output_pixel_offset=-0.5, minimum_samples_per_output=1, maximum_samples_per_output=UINT32_MAX,
                   align_regions_to_corners=False, output_gradient=True, output_roi_gradient=False, device=None):
    """DML_ROI_ALIGN_GRAD: the gradient of roi_align (DML_ROI_ALIGN1) with respect to its
    input: dy [NumROIs, C, OH, OW] (the forward output's gradient), rois and batch_indices
    (UINT32) as the forward's, x the forward's input (needed with reduction "max"; else
    input_size [N, C, H, W] gives dx's sizes); the other keywords roi_align's. Returns dx
    [N, C, H, W]. output_roi_gradient (the gradient with respect to rois) is not implemented:
    an UnsupportedError. See docs/operators/roi_align_grad.md."""
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


def from_cli(x: TensorDesc, a: dict) -> RoiAlignGradOperatorDesc:
    """The gradient of `gpudml shader roi_align1`'s forward with the same options (x its input)."""
    forward = forward_ops.from_cli(1)(x, {**a, "indices_dtype": "UINT32"})
    maximum = forward.reduction_function == ReduceFunction.MAX
    tensors = (x,) if maximum else ()
    return infer_output(*tensors, forward.output_tensor, forward.roi_tensor, forward.batch_indices_tensor,
                        input_size=None if maximum else x.sizes,
                        spatial_scale=(forward.spatial_scale_x, forward.spatial_scale_y),
                        reduction_function=forward.reduction_function, interpolation_mode=forward.interpolation_mode,
                        minimum_samples_per_output=forward.minimum_samples_per_output,
                        maximum_samples_per_output=forward.maximum_samples_per_output)


def traffic(desc: RoiAlignGradOperatorDesc) -> int:
    """dx written once, dy, the regions and indices read once (and InputTensor, where MAX reads it)."""
    total = sum(td.element_count * td.data_type.size for td in (
        desc.output_gradient_tensor, desc.input_gradient_tensor, desc.roi_tensor, desc.batch_indices_tensor)
        if td is not None)
    if desc.reduction_function == ReduceFunction.MAX and desc.input_tensor is not None:
        total += min(desc.input_tensor.element_count, desc.input_gradient_tensor.element_count * 4) * \
            desc.input_tensor.data_type.size
    return total


CLI_ARGS = tuple(a for a in forward_ops.CLI_ARGS if a.flag != "--indices-dtype")

SPECS = (OpSpec(
    name=OP, key="roi_align_grad", desc=RoiAlignGradOperatorDesc, support=SUPPORT, infer_output=infer_output,
    validate=validate, reference=reference, functional=roi_align_grad,
    tensors=("x", "dy", "rois", "batch_indices"), arguments=arguments, planner=PLANNER,
    cli=Cli(CLI_ARGS, from_cli, "--shape 1,64,28,28 --rois 16 --output-size 7,7 --samples 2"),
    page="DML_ROI_ALIGN_GRAD_OPERATOR_DESC", tolerance=tolerance, traffic=traffic,
    sample=sample),)
