"""DML_ROI_ALIGN_OPERATOR_DESC (FL 3.0, `roi_align0`) and DML_ROI_ALIGN1_OPERATOR_DESC (FL
4.0, `roi_align`; docs/operators/roi_align.md, the pages under tests/data/pages/): Mask
R-CNN's ROI align. Output [r, c, y, x] of [NumROIs, C, OH, OW] reduces (AVERAGE or MAX) the
samples of output bin (y, x) of region r = ROITensor[r] = [x1, y1, x2, y2] (scaled by
SpatialScaleX / SpatialScaleY) in channel c of image BatchIndicesTensor[r] of the input [N,
C, H, W]. ROI_ALIGN is ROI_ALIGN1 with InputPixelOffset 0.5, OutputPixelOffset -0.5 and
AlignRegionsToCorners FALSE (ROI_ALIGN1's page says so).

The rule, per axis (x shown; y alike with OH, H):

    x1 = roi[0] * SpatialScaleX; size = roi[2] * SpatialScaleX - x1
    n = clamp(ceil(|size| / OW), MinimumSamplesPerOutput, min(MaximumSamplesPerOutput, 64))
    step = size / (OW * n)             (AlignRegionsToCorners: size / max(OW * n - 1, 1))
    sample s = x * n + i, i in [0, n): at (s - OutputPixelOffset) * step + x1 - InputPixelOffset

The page's gaps, and gpudml's choices (each tested in tests/test_roi_align.py):
- The samples per output: the page clamps "scaledRegionSize / outputSize", which is not an
  integer, and loops "to <=": gpudml takes ceil(|size| / OW) samples (ONNX RoiAlign's
  sampling_ratio 0, which ONNX Runtime's DirectML provider maps to Minimum 1 and Maximum
  UINT32_MAX), the ceiling exact for the float32 size (x1, size computed in float32), and
  a sample count of the sample grid [x * n, x * n + n). The page's outputSampleToInputScaleY
  divides scaledRegionSizeX: a typo, gpudml uses the Y size.
- At most 64 samples per output and axis (SAMPLE_CAP, kernels/roi.py): one invocation's
  loop budget (llvmpipe ends loops after 65,535 iterations). A region more than 64 outputs'
  worth of input pixels wide takes 64 evenly spaced samples per output.
- MinimumSamplesPerOutput must be >= 1 (0 samples would average nothing) and <= Maximum.
- Inverted regions (x2 < x1) sample mirrored (a negative step), empty ones the one point.
- interpolate2D: ONNX RoiAlign's bilinear rule (Caffe2's, which the DirectML provider
  relies on for ONNX's node tests): a sample outside [-1, W] x [-1, H] is
  OutOfBoundsInputValue; inside, its coordinate clamps into [0, W - 1] and reads the four
  neighbours (the last row or column repeats). NEAREST_NEIGHBOR reads the nearest of the two
  neighbours, ties to the larger index (round half up).
- A batch index outside [0, BatchCount) (the page: undefined) reads nothing: every sample
  of its region is OutOfBoundsInputValue. A NaN coordinate (a box with NaN, or a NaN or
  infinite scale times 0) is out of bounds too: its samples are OutOfBoundsInputValue; a
  NaN size takes MinimumSamplesPerOutput samples, an infinite one the maximum.
- MAX propagates NaN; AVERAGE sums in float32 in row-major sample order, then divides by
  the sample count.
- AlignRegionsToCorners: the step is size / (OW * n - 1), so the samples span the region
  from corner to corner where OutputPixelOffset is 0 (TensorFlow's crop_and_resize); the
  offsets apply as in the general formula.

Precision (`tolerance`, tested at the bound in tests/test_roi_align.py): the reference is
float64 (positions, weights and sums; the sample counts from the float32 sizes, as the
kernel). The kernel computes positions in float32: each within eps = 2^-21 (|x1| + |x2| +
4 |size| + |offsets| + 1) of the exact one (x1, x2 and the size rounded once each, the
step's division within 2.5 ULPs, three more roundings: under 2^-23 times that sum, and a
margin), so each sample is within the largest change of its float64 value over positions
moved by up to eps on each axis (this covers the jumps at
the bounds -1, W and NEAREST's half-way points); its weights, products and the average's
float32 sum add (count + 4) 2^-22 times the mean of the absolute terms (MAX: 2^-20 times the
largest), and the store's rounding and the reference's a unit in the last place of the
output type (float16's, float32's; at least its smallest subnormal).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..errors import InvalidArgumentError
from ..kernels import roi as family
from ..kernels.base import ProblemPlanner
from ..tensor_desc import TensorDesc, as_int, check_tensor_desc
from ..types import F16, F32, U32, U64, DataType, FeatureLevel, InterpolationMode, ReduceFunction
from .base import integer_array
from .elementwise.row import as_float32
from .spec import Call, Cli, CliArg, OpSpec, element_bytes, support_table

OP0, OP1 = "RoiAlign", "RoiAlign1"
TENSORS = ("input_tensor", "roi_tensor", "batch_indices_tensor", "output_tensor")
_RANKS = {"input_tensor": {4}, "roi_tensor": (2, 4), "batch_indices_tensor": (1, 4), "output_tensor": {4}}
_FLOATS = {F32, F16}


def _support(op: str, first: FeatureLevel):
    return support_table(op, TENSORS, [
        (FeatureLevel.FL_5_0, _RANKS, _FLOATS, _FLOATS, {U64, U32}, _FLOATS),
        (first, _RANKS, _FLOATS, _FLOATS, {U32}, _FLOATS),
    ])


SUPPORT0 = _support(OP0, FeatureLevel.FL_3_0)
SUPPORT1 = _support(OP1, FeatureLevel.FL_4_0)
UINT32_MAX = 2**32 - 1


def normalize(desc, op: str) -> None:
    """The enum, float, integer and bool fields as their types (InvalidArgumentError naming the field)."""
    put = object.__setattr__
    put(desc, "reduction_function", ReduceFunction.coerce(desc.reduction_function, f"{op}: reduction_function"))
    put(desc, "interpolation_mode", InterpolationMode.coerce(desc.interpolation_mode, f"{op}: interpolation_mode"))
    for f in ("spatial_scale_x", "spatial_scale_y", "out_of_bounds_input_value", "input_pixel_offset",
              "output_pixel_offset"):
        if hasattr(desc, f):
            put(desc, f, as_float32(getattr(desc, f), f"{op}: {f}"))
    for f in ("minimum_samples_per_output", "maximum_samples_per_output"):
        put(desc, f, as_int(getattr(desc, f), f"{op}: {f}"))
    if hasattr(desc, "align_regions_to_corners"):
        value = desc.align_regions_to_corners
        if not isinstance(value, (bool, np.bool_, int, np.integer)) or value not in (0, 1):
            raise InvalidArgumentError(f"{op}: align_regions_to_corners must be a bool (TRUE or FALSE), got {value!r}")
        put(desc, "align_regions_to_corners", bool(value))


@dataclass(frozen=True)
class _Regions:
    """The fields both versions begin with (DirectML's order)."""

    input_tensor: TensorDesc
    roi_tensor: TensorDesc
    batch_indices_tensor: TensorDesc
    output_tensor: TensorDesc
    reduction_function: ReduceFunction
    interpolation_mode: InterpolationMode
    spatial_scale_x: float
    spatial_scale_y: float


@dataclass(frozen=True)
class RoiAlignOperatorDesc(_Regions):
    out_of_bounds_input_value: float
    minimum_samples_per_output: int
    maximum_samples_per_output: int

    def __post_init__(self):
        normalize(self, OP0)


@dataclass(frozen=True)
class RoiAlign1OperatorDesc(_Regions):
    input_pixel_offset: float
    output_pixel_offset: float
    out_of_bounds_input_value: float
    minimum_samples_per_output: int
    maximum_samples_per_output: int
    align_regions_to_corners: bool

    def __post_init__(self):
        normalize(self, OP1)


# ---------------------------------------------------------------------------- shapes
def pair(value, field: str, where: str) -> tuple:
    """A number for both axes, or an (x, y) / (height, width) pair, as given."""
    if isinstance(value, (list, tuple, np.ndarray)):
        values = list(np.asarray(value).reshape(-1)) if isinstance(value, np.ndarray) else list(value)
        if len(values) != 2:
            raise InvalidArgumentError(f"{where}: {field} must be one number or two, got {value!r}")
        return tuple(values)
    return value, value


def region_count(rois: TensorDesc) -> int:
    """NumROIs: the ROI tensor's second-to-last size (1 where it has fewer than 2 axes)."""
    return rois.sizes[-2] if rois.rank >= 2 else 1


def infer_output(input_tensor: TensorDesc, rois: TensorDesc, batch_indices: TensorDesc, spatial_scale=1.0,
                 output_size=(7, 7), *, reduction_function="average", interpolation_mode="linear",
                 input_pixel_offset=0.5, output_pixel_offset=-0.5, out_of_bounds_input_value=0.0,
                 minimum_samples_per_output=1, maximum_samples_per_output=UINT32_MAX,
                 align_regions_to_corners=False) -> RoiAlign1OperatorDesc:
    """The desc of `roi_align(x, rois, batch_indices, ...)`: the output [NumROIs, C, OH, OW]
    with output_size = (OH, OW) (one int: both), spatial_scale one number or (x, y)."""
    sx, sy = pair(spatial_scale, "spatial_scale", OP1)
    return RoiAlign1OperatorDesc(input_tensor, rois, batch_indices, _output(input_tensor, rois, output_size, OP1),
                                 reduction_function, interpolation_mode, sx, sy, input_pixel_offset,
                                 output_pixel_offset, out_of_bounds_input_value, minimum_samples_per_output,
                                 maximum_samples_per_output, align_regions_to_corners)


def infer_output0(input_tensor: TensorDesc, rois: TensorDesc, batch_indices: TensorDesc, spatial_scale=1.0,
                  output_size=(7, 7), *, reduction_function="average", interpolation_mode="linear",
                  out_of_bounds_input_value=0.0, minimum_samples_per_output=1,
                  maximum_samples_per_output=UINT32_MAX) -> RoiAlignOperatorDesc:
    """The desc of `roi_align0(...)`: roi_align's without the pixel offsets and corners."""
    sx, sy = pair(spatial_scale, "spatial_scale", OP0)
    return RoiAlignOperatorDesc(input_tensor, rois, batch_indices, _output(input_tensor, rois, output_size, OP0),
                                reduction_function, interpolation_mode, sx, sy, out_of_bounds_input_value,
                                minimum_samples_per_output, maximum_samples_per_output)


def _output(x: TensorDesc, rois: TensorDesc, output_size, where: str) -> TensorDesc:
    oh, ow = (as_int(v, f"{where}: output_size[{i}]") for i, v in enumerate(pair(output_size, "output_size", where)))
    if oh < 1 or ow < 1:
        raise InvalidArgumentError(f"{where}: output_size ({oh}, {ow}) must be at least 1 on both axes")
    channels = x.sizes[1] if x.rank >= 2 else 1
    return TensorDesc(x.data_type, [region_count(rois), channels, oh, ow])


# ---------------------------------------------------------------------------- validation
def _support_of(desc):
    return (OP1, SUPPORT1) if isinstance(desc, RoiAlign1OperatorDesc) else (OP0, SUPPORT0)


def check_tensor_descs(op: str, named: dict) -> None:
    """Each tensor desc valid (outputs: fields named output_*)."""
    for field, td in named.items():
        check_tensor_desc(op, field, td, is_output=field.startswith("output"))


def check_regions(op: str, rois: TensorDesc, batch: TensorDesc) -> int:
    """ROITensor {NumROIs, 4} and BatchIndicesTensor {NumROIs} (each after leading 1s); returns NumROIs."""
    count = region_count(rois)
    if rois.sizes != (1,) * (rois.rank - 2) + (count, 4):
        raise InvalidArgumentError(f"{op}: roi_tensor.sizes {list(rois.sizes)} must be {{NumROIs, 4}}, {{1, NumROIs, "
                                   f"4}} or {{1, 1, NumROIs, 4}}")
    if batch.sizes != (1,) * (batch.rank - 1) + (count,):
        raise InvalidArgumentError(f"{op}: batch_indices_tensor.sizes {list(batch.sizes)} must be NumROIs = {count} "
                                   f"after leading 1s ({{NumROIs}}, {{1, NumROIs}}, ...: one index per region of "
                                   f"roi_tensor.sizes {list(rois.sizes)})")
    return count


def check_fields(desc, op: str) -> None:
    """ROI_ALIGN1's non-tensor fields (the reduction, the interpolation, the sample counts, finite floats)."""
    if desc.reduction_function not in (ReduceFunction.AVERAGE, ReduceFunction.MAX):
        raise InvalidArgumentError(f"{op}: reduction_function {desc.reduction_function.name} must be AVERAGE or MAX")
    if desc.interpolation_mode not in (InterpolationMode.NEAREST_NEIGHBOR, InterpolationMode.LINEAR):
        raise InvalidArgumentError(f"{op}: interpolation_mode {desc.interpolation_mode.name} must be "
                                   f"NEAREST_NEIGHBOR or LINEAR")
    low, high = desc.minimum_samples_per_output, desc.maximum_samples_per_output
    if not 1 <= low <= high <= UINT32_MAX:
        raise InvalidArgumentError(
            f"{op}: minimum_samples_per_output = {low} and maximum_samples_per_output = {high} must satisfy 1 <= "
            f"minimum <= maximum <= UINT32_MAX (gpudml: 0 samples would average nothing)")
    for f in ("spatial_scale_x", "spatial_scale_y", "input_pixel_offset", "output_pixel_offset"):
        if hasattr(desc, f) and not math.isfinite(getattr(desc, f)):
            raise InvalidArgumentError(f"{op}: {f} = {getattr(desc, f)} must be finite")


def validate(desc, feature_level: FeatureLevel) -> None:
    op, support = _support_of(desc)
    inp, rois, batch, out = desc.input_tensor, desc.roi_tensor, desc.batch_indices_tensor, desc.output_tensor
    check_tensor_descs(op, {f: getattr(desc, f) for f in TENSORS})
    for field in TENSORS:  # (each tensor its own DimensionCount: the message names which)
        support.check_rank(feature_level, field, getattr(desc, field).rank)
    support.check(feature_level, inp.rank, {f: getattr(desc, f).data_type for f in TENSORS})
    for field in ("roi_tensor", "output_tensor"):
        td = getattr(desc, field)
        if td.data_type != inp.data_type:
            raise InvalidArgumentError(f"{op}: {field}.data_type {td.data_type.name} must equal "
                                       f"input_tensor.data_type {inp.data_type.name}")
    count = check_regions(op, rois, batch)
    want = (count, inp.sizes[1], *out.sizes[2:])
    if out.sizes != want:
        raise InvalidArgumentError(f"{op}: output_tensor.sizes {list(out.sizes)} must be {{NumROIs, ChannelCount, "
                                   f"OutputHeight, OutputWidth}} = {list(want)} (NumROIs of roi_tensor, ChannelCount "
                                   f"of input_tensor)")
    check_fields(desc, op)


def _params(desc) -> dict:
    """ROI_ALIGN1's fields of either desc (ROI_ALIGN: offsets 0.5 and -0.5, no corners)."""
    one = isinstance(desc, RoiAlign1OperatorDesc)
    return {"spatial_scale": (desc.spatial_scale_x, desc.spatial_scale_y),
            "input_pixel_offset": desc.input_pixel_offset if one else 0.5,
            "output_pixel_offset": desc.output_pixel_offset if one else -0.5,
            "out_of_bounds_input_value": desc.out_of_bounds_input_value,
            "minimum_samples_per_output": desc.minimum_samples_per_output,
            "maximum_samples_per_output": desc.maximum_samples_per_output,
            "align_regions_to_corners": desc.align_regions_to_corners if one else False,
            "reduction_function": desc.reduction_function.name.lower(),
            "interpolation_mode": desc.interpolation_mode.name.lower()}


def problem(desc) -> family.RoiAlign:
    p = _params(desc)
    return family.RoiAlign(_support_of(desc)[0], desc.input_tensor, desc.roi_tensor, desc.batch_indices_tensor,
                           desc.output_tensor, p["spatial_scale"], p["input_pixel_offset"], p["output_pixel_offset"],
                           p["out_of_bounds_input_value"], p["minimum_samples_per_output"],
                           p["maximum_samples_per_output"], p["align_regions_to_corners"],
                           desc.reduction_function == ReduceFunction.MAX,
                           desc.interpolation_mode == InterpolationMode.NEAREST_NEIGHBOR)


ROI_ALIGN = ProblemPlanner(problem, family.FAMILY)


# ---------------------------------------------------------------------------- reference
def samples_per_output(a: float, b: float, scale: float, out: int, low: int, high: int) -> int:
    """n for one axis: the float32 size's exact ceil(|size| / out), clamped (kernels/roi.py)."""
    with np.errstate(all="ignore"):
        first = np.float32(a) * np.float32(scale)
        size = float(np.float32(np.float32(b) * np.float32(scale)) - first)
    cap = max(1, min(high, family.SAMPLE_CAP))
    low = min(low, cap)
    if math.isnan(size):
        return low
    q = abs(size) / out
    if q > 128:
        return cap
    k = math.ceil(q)
    if k * out < abs(size):  # (float64 rounding of a / out)
        k += 1
    return min(max(k, low), cap)


def positions(a: float, b: float, scale: float, out: int, n: int, p: dict) -> np.ndarray:
    """The out * n sample positions along one axis, in float64 (the module's rule)."""
    with np.errstate(all="ignore"):
        first = float(a) * float(scale)
        size = float(b) * float(scale) - first
        total = out * n
        step = size / (max(total - 1, 1) if p["align_regions_to_corners"] else total)
        return (np.arange(total, dtype=np.float64) - p["output_pixel_offset"]) * step + first - \
            p["input_pixel_offset"]


def taps(v: np.ndarray, size: int, nearest: bool):
    """(outside, lo, hi, frac) per position: ONNX RoiAlign's clamping (module docstring)."""
    with np.errstate(invalid="ignore"):
        outside = ~((v >= -1.0) & (v <= size))
        p = np.where(outside, 0.0, np.maximum(v, 0.0))
        lo = np.floor(p).astype(np.int64)
        edge = lo >= size - 1
        lo = np.where(edge, size - 1, lo)
        hi = np.where(edge, size - 1, lo + 1)
        frac = np.where(edge, 0.0, p - lo)
    if nearest:
        pick = np.where(frac >= 0.5, hi, lo)
        return outside, pick, pick, np.zeros_like(frac)
    return outside, lo, hi, frac


def sample_grid(plane: np.ndarray, ys: np.ndarray, xs: np.ndarray, nearest: bool, oob: float, inside: bool):
    """The samples [C, Sy, Sx] of the image `plane` [C, H, W] at positions ys x xs (float64),
    and the sum of the absolute values of each sample's four terms."""
    h, w = plane.shape[1:]
    oy, y0, y1, fy = taps(ys, h, nearest)
    ox, x0, x1, fx = taps(xs, w, nearest)
    hy, hx = (1 - fy)[:, None], (1 - fx)[None, :]
    ly, lx = fy[:, None], fx[None, :]
    terms = [hy * hx * plane[:, y0[:, None], x0[None, :]], hy * lx * plane[:, y0[:, None], x1[None, :]],
             ly * hx * plane[:, y1[:, None], x0[None, :]], ly * lx * plane[:, y1[:, None], x1[None, :]]]
    with np.errstate(invalid="ignore", over="ignore"):
        value = terms[0] + terms[1] + terms[2] + terms[3]
        magnitude = sum(np.abs(t) for t in terms)
    outside = (oy[:, None] | ox[None, :])[None] | (not inside)
    return np.where(outside, oob, value), np.where(outside, abs(oob), magnitude)


def _evaluate(x: np.ndarray, rois: np.ndarray, batch: np.ndarray, output_size, p: dict, with_bound: bool):
    """The float64 result [R, C, OH, OW], and with_bound: the documented tolerance's terms."""
    oh, ow = output_size
    n_img, channels, h, w = x.shape
    r_count = rois.shape[0]
    nearest = p["interpolation_mode"] == "nearest_neighbor"
    maximum = p["reduction_function"] == "max"
    oob = float(p["out_of_bounds_input_value"])
    sx, sy = p["spatial_scale"]
    low, high = p["minimum_samples_per_output"], p["maximum_samples_per_output"]
    result = np.zeros((r_count, channels, oh, ow))
    bound = np.zeros_like(result)
    xf = x.astype(np.float64)
    for r in range(r_count):
        x1, y1, x2, y2 = (float(v) for v in rois[r])
        b = int(batch[r])
        inside = 0 <= b < n_img
        plane = xf[b] if inside else np.zeros((channels, h, w))
        nx = samples_per_output(x1, x2, sx, ow, low, high)
        ny = samples_per_output(y1, y2, sy, oh, low, high)
        xs = positions(x1, x2, sx, ow, nx, p)
        ys = positions(y1, y2, sy, oh, ny, p)
        grid, magnitude = sample_grid(plane, ys, xs, nearest, oob, inside)

        def reduce(v, how, shape=(channels, oh, ny, ow, nx)):
            return how(how(v.reshape(shape), axis=4), axis=2)

        with np.errstate(invalid="ignore", over="ignore"):
            result[r] = reduce(grid, np.max) if maximum else reduce(grid, np.sum) / (nx * ny)
        if not with_bound:
            continue
        offsets = abs(p["input_pixel_offset"]) + abs(p["output_pixel_offset"]) + 1
        ex = 2.0**-21 * (abs(x1 * sx) + abs(x2 * sx) + 4 * abs((x2 - x1) * sx) + offsets)
        ey = 2.0**-21 * (abs(y1 * sy) + abs(y2 * sy) + 4 * abs((y2 - y1) * sy) + offsets)
        deviation = np.zeros_like(grid)
        with np.errstate(invalid="ignore", over="ignore"):
            for dy in (-ey, 0.0, ey):
                for dx in (-ex, 0.0, ex):
                    if dy or dx:
                        moved = sample_grid(plane, ys + dy, xs + dx, nearest, oob, inside)[0]
                        change = np.abs(moved - grid)
                        deviation = np.maximum(deviation, np.where(np.isnan(change) & ~(np.isnan(moved) &
                                                                                          np.isnan(grid)),
                                                                   np.inf, np.nan_to_num(change, nan=0.0)))
            if maximum:
                bound[r] = reduce(deviation, np.max) + 2.0**-20 * reduce(magnitude, np.max)
            else:
                count = nx * ny
                bound[r] = (reduce(deviation, np.sum) + (count + 4) * 2.0**-22 * reduce(magnitude, np.sum)) / count
    return result, bound


def _arrays(x, rois, batch_indices):
    x, rois = np.asarray(x), np.asarray(rois)
    if x.ndim != 4:
        raise ValueError(f"roi_align: x has {x.ndim} dimensions; it must be [N, C, H, W]")
    rois = rois.reshape(-1, 4) if rois.size % 4 == 0 else rois
    batch = np.asarray(batch_indices).reshape(-1)
    if rois.ndim != 2 or batch.shape[0] != rois.shape[0]:
        raise ValueError(f"roi_align: rois {rois.shape} and batch_indices {batch.shape}: one index per [x1, y1, x2, "
                         f"y2] region")
    return x, rois, batch.astype(np.uint64) if batch.dtype.kind in "iu" else batch


def reference_params(spatial_scale, output_size, kwargs) -> tuple[dict, tuple]:
    sx, sy = pair(spatial_scale, "spatial_scale", "roi_align")
    oh, ow = (int(v) for v in pair(output_size, "output_size", "roi_align"))
    p = {"spatial_scale": (float(np.float32(sx)), float(np.float32(sy))), "input_pixel_offset": 0.5,
         "output_pixel_offset": -0.5, "out_of_bounds_input_value": 0.0, "minimum_samples_per_output": 1,
         "maximum_samples_per_output": UINT32_MAX, "align_regions_to_corners": False,
         "reduction_function": "average", "interpolation_mode": "linear"}
    for key, value in kwargs.items():
        if key in ("reduction_function", "interpolation_mode"):
            enum = ReduceFunction if key == "reduction_function" else InterpolationMode
            value = enum.coerce(value, key).name.lower()
        elif key in ("input_pixel_offset", "output_pixel_offset", "out_of_bounds_input_value"):
            value = float(np.float32(value))
        p[key] = value
    return p, (oh, ow)


def reference(x, rois, batch_indices, spatial_scale=1.0, output_size=(7, 7), **kwargs) -> np.ndarray:
    """ROI align in float64 (the module's rule: positions, weights and sums in float64, the
    sample counts from the float32 sizes), rounded once to x's type; roi_align's keywords."""
    x, rois, batch = _arrays(x, rois, batch_indices)
    p, size = reference_params(spatial_scale, output_size, kwargs)
    return _evaluate(x, rois, batch, size, p, False)[0].astype(x.dtype)


def tolerance(expected: np.ndarray, inputs, arguments: dict):
    """The documented precision per element (module docstring): the samples' deviation over
    positions moved by eps, the float32 arithmetic's, an ULP of the output type and a floor;
    a non-finite result exactly."""
    x, rois, batch = _arrays(*inputs[:3])
    kwargs = dict(arguments)
    spatial_scale, output_size = kwargs.pop("spatial_scale"), kwargs.pop("output_size")
    p, size = reference_params(spatial_scale, output_size, kwargs)
    _, bound = _evaluate(x, rois, batch, size, p, True)
    # (the kernel's rounding and the expected value's: a unit in the last place, float16's or float32's)
    ulp = {np.dtype(np.float16): 2.0**-10, np.dtype(np.float32): 2.0**-23}[expected.dtype]
    floor = {np.dtype(np.float16): 2.0**-24, np.dtype(np.float32): 2.0**-149}[expected.dtype]
    with np.errstate(invalid="ignore", over="ignore"):
        want = np.abs(expected.astype(np.float64))
        total = bound + ulp * want + floor
    return np.where(np.isfinite(want), total, 0.0)


# ---------------------------------------------------------------------------- API
def batch_indices_array(values, where: str = "roi_align") -> np.ndarray:
    """Batch indices as UINT32 (integers of up to 32 bits) or UINT64 (64-bit integers); a
    negative index wraps (as the DirectML provider's ForceUnsignedDataType), out of range."""
    values = integer_array(values, f"{where}: batch_indices", "batch_indices must be integers")
    if values.dtype.itemsize == 8:
        return values.astype(np.uint64)
    return values.astype(np.int64).astype(np.uint32) if values.dtype.kind == "i" else values.astype(np.uint32)


def rois_array(values, where: str = "roi_align") -> np.ndarray:
    """ROI boxes: a float array as it is, integers as FLOAT32 (InvalidArgumentError naming
    `where` for anything else)."""
    try:
        array = np.asarray(values)
    except (TypeError, ValueError) as exc:
        raise InvalidArgumentError(f"{where}: rois: not an array of numbers ({exc})") from None
    if array.dtype.kind in "iu":
        return array.astype(np.float32)
    if array.dtype.kind != "f":
        raise InvalidArgumentError(f"{where}: rois must be numbers [x1, y1, x2, y2], got dtype {array.dtype}")
    return array


def converters(where: str) -> tuple:
    return (lambda v: rois_array(v, where)), (lambda v: batch_indices_array(v, where))


def roi_align(x, rois, batch_indices, spatial_scale=1.0, output_size=(7, 7), *, reduction_function="average",
              interpolation_mode="linear", input_pixel_offset=0.5, output_pixel_offset=-0.5,
              out_of_bounds_input_value=0.0, minimum_samples_per_output=1, maximum_samples_per_output=UINT32_MAX,
              align_regions_to_corners=False, device=None):
    """DML_ROI_ALIGN1 (Mask R-CNN's ROI align; ONNX RoiAlign): x [N, C, H, W], rois [NumROIs,
    4] of [x1, y1, x2, y2] (or [1, NumROIs, 4], [1, 1, NumROIs, 4]; x's type), batch_indices
    [NumROIs] (UINT32 or UINT64); the output [NumROIs, C, *output_size]. spatial_scale: one
    number or (x, y). reduction_function "average" or "max", interpolation_mode "linear" or
    "nearest_neighbor". Samples per output: ceil(region / output) clamped to [minimum,
    maximum] (at most 64). See docs/operators/roi_align.md for the whole rule."""
    to_rois, to_indices = converters("roi_align")
    return Call([("x", x), ("rois", rois, to_rois), ("batch_indices", batch_indices, to_indices)],
                {"spatial_scale": spatial_scale, "output_size": output_size,
                 "reduction_function": reduction_function, "interpolation_mode": interpolation_mode,
                 "input_pixel_offset": input_pixel_offset, "output_pixel_offset": output_pixel_offset,
                 "out_of_bounds_input_value": out_of_bounds_input_value,
                 "minimum_samples_per_output": minimum_samples_per_output,
                 "maximum_samples_per_output": maximum_samples_per_output,
                 "align_regions_to_corners": align_regions_to_corners}, device)


def roi_align0(x, rois, batch_indices, spatial_scale=1.0, output_size=(7, 7), *, reduction_function="average",
               interpolation_mode="linear", out_of_bounds_input_value=0.0, minimum_samples_per_output=1,
               maximum_samples_per_output=UINT32_MAX, device=None):
    """DML_ROI_ALIGN: roi_align with pixel offsets 0.5 and -0.5 and no corner alignment."""
    to_rois, to_indices = converters("roi_align0")
    return Call([("x", x), ("rois", rois, to_rois), ("batch_indices", batch_indices, to_indices)],
                {"spatial_scale": spatial_scale, "output_size": output_size,
                 "reduction_function": reduction_function, "interpolation_mode": interpolation_mode,
                 "out_of_bounds_input_value": out_of_bounds_input_value,
                 "minimum_samples_per_output": minimum_samples_per_output,
                 "maximum_samples_per_output": maximum_samples_per_output}, device)


def arguments(desc) -> dict:
    p = _params(desc)
    out = {"spatial_scale": p.pop("spatial_scale"), "output_size": desc.output_tensor.sizes[2:]}
    if not isinstance(desc, RoiAlign1OperatorDesc):
        for f in ("input_pixel_offset", "output_pixel_offset", "align_regions_to_corners"):
            p.pop(f)
    return {**out, **p}


def traffic(desc) -> int:
    """The bytes it must move at least: the output written once, the regions and indices
    read once, and the input read once (no more than the output's samples could touch)."""
    taps = 1 if desc.interpolation_mode == InterpolationMode.NEAREST_NEIGHBOR else 4
    reads = min(desc.input_tensor.element_count, desc.output_tensor.element_count * taps)
    return (element_bytes(desc.output_tensor) + element_bytes(desc.roi_tensor) +
            element_bytes(desc.batch_indices_tensor) + reads * desc.input_tensor.data_type.size)


def sample(desc, rng) -> list:
    """Inputs in [-4, 4]; boxes over the image and somewhat beyond it (a few inverted or
    empty), corners at quarter pixels now and then; batch indices mostly in range."""
    inp, rois, batch = desc.input_tensor, desc.roi_tensor, desc.batch_indices_tensor
    n, _, h, w = inp.sizes
    x = rng.uniform(-4.0, 4.0, inp.required_elements).astype(inp.data_type.numpy)
    sx, sy = desc.spatial_scale_x or 1.0, desc.spatial_scale_y or 1.0
    count = rois.required_elements
    corners = np.empty(count)
    corners[:] = rng.uniform(-2.0, max(w, h) + 2.0, count)
    quarter = rng.random(count) < 0.3
    corners[quarter] = np.round(corners[quarter] * 4) / 4
    corners[0::2] /= sx if sx else 1.0  # (strided layouts: every element a plausible coordinate)
    corners[1::2] /= sy if sy else 1.0
    indices = rng.integers(0, n + (2 if rng.random() < 0.3 else 0), batch.required_elements)
    return [x, corners.astype(rois.data_type.numpy), indices.astype(batch.data_type.numpy)]


def from_cli(version: int):
    def build(x: TensorDesc, a: dict):
        count = a["rois"] or 8
        rois = TensorDesc(x.data_type, [count, 4])
        batch = TensorDesc(DataType.coerce(a["indices_dtype"], "--indices-dtype"), [count])
        kwargs = {"reduction_function": a["reduction"] or "average", "interpolation_mode": a["mode"] or "linear",
                  "minimum_samples_per_output": a["samples"] or 1,
                  "maximum_samples_per_output": a["samples"] or UINT32_MAX}
        infer = infer_output if version == 1 else infer_output0
        return infer(x, rois, batch, a["spatial_scale"] if a["spatial_scale"] is not None else 1.0,
                     a["output_size"] or (7, 7), **kwargs)
    return build


CLI_ARGS = (CliArg("--rois", "NumROIs (default 8)", "number"),
            CliArg("--output-size", "OutputHeight,OutputWidth (default 7,7)"),
            CliArg("--spatial-scale", "SpatialScaleX and Y (default 1)", "number"),
            CliArg("--samples", "Minimum = MaximumSamplesPerOutput (default 1 and UINT32_MAX: ceil(region / "
                   "output))", "number"),
            CliArg("--reduction", "average or max (default average)", "str"),
            CliArg("--mode", "linear or nearest_neighbor (default linear)", "str"),
            CliArg("--indices-dtype", "BatchIndicesTensor type: UINT32 or UINT64", "str", "UINT32"))


def _spec(op: str, key: str, desc: type, support, infer, functional, version: int) -> OpSpec:
    return OpSpec(
        name=op, key=key, desc=desc, support=support, infer_output=infer, validate=validate,
        reference=reference, functional=functional, tensors=("x", "rois", "batch_indices"), arguments=arguments,
        planner=ROI_ALIGN, cli=Cli(CLI_ARGS, from_cli(version),
                                   "--shape 1,256,56,56 --rois 100 --output-size 7,7 --samples 2"),
        page=f"DML_{'ROI_ALIGN1' if version else 'ROI_ALIGN'}_OPERATOR_DESC", tolerance=tolerance, traffic=traffic,
        sample=sample)


SPECS = (_spec(OP0, "roi_align0", RoiAlignOperatorDesc, SUPPORT0, infer_output0, roi_align0, 0),
         _spec(OP1, "roi_align1", RoiAlign1OperatorDesc, SUPPORT1, infer_output, roi_align, 1))
