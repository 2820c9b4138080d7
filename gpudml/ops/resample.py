"""DirectML's resampling operators, one table: DML_RESAMPLE (`dml.resample0`), RESAMPLE1
(pixel offsets: `dml.resample1`), RESAMPLE2 (rounding direction: `dml.resample2`), RESAMPLE3
(antialiasing: `dml.resample`) and DML_UPSAMPLE_2D (`dml.upsample_2d`). Every row runs the
resampling kernel family (kernels/resample.py, which states the arithmetic: the coordinate
rule, its snapping, the taps and weights). docs/operators/resample3.md says the same for users.

What the pages say, and what gpudml reads into them:

- Axis d of the output maps to the input by DirectML's execution provider's rule
  input_coordinate = (output_coordinate - OutputPixelOffsets[d]) / Scales[d] -
  InputPixelOffsets[d] (the pages write its inverse, OutputTensorX = (InputTensorX +
  InputPixelOffset) * Scale + OutputPixelOffset). Scales need not be OutputSize /
  InputSize: the output's sizes are the desc's, coordinates past the input clamp to its edge.
  DML_RESAMPLE has no offsets: it applies InputPixelOffsets 0.5 and OutputPixelOffsets -0.5
  (the pixel centers: RESAMPLE1's page says it is RESAMPLE1 with those).
- NEAREST_NEIGHBOR: RESAMPLE and RESAMPLE1 round half up, floor(x + 0.5) (DirectML's
  execution provider, DmlOperatorResize.cpp: "DML's nearest neighbor mode uses
  round-halves-up ... via floor(input.x + 0.5)"). RESAMPLE2 and RESAMPLE3 take
  RoundingDirection: DECREASING floor(x), INCREASING ceil(x) (the page). RESAMPLE2's page adds
  that it equals RESAMPLE1 with DECREASING "and OutputPixelOffsets adjusted an additional
  -0.5"; that holds only at scale 1: the execution provider's mapping of ONNX's nearest
  modes (round_prefer_ceil: DECREASING with InputPixelOffsets + 0.5 ... -0.5) is what
  gpudml follows, and the equivalence it implements is RESAMPLE1's floor(x + 0.5) =
  RESAMPLE2's DECREASING with InputPixelOffsets - 0.5.
- LINEAR: the 2 nearest input elements per resampled axis, weighted by distance.
- RESAMPLE3 (FL 6.4): RESAMPLE2 with Antialiased: "stretching the resampling filter by a
  factor max(1, 1 / scale)" where InterpolationMode is LINEAR and "1/Scales > 2" (its page),
  the filter ONNX Resize's antialias defines (kernels/resample.py), the weights normalized.
  On an axis with 1/2 <= scale < 1 it is RESAMPLE2's linear filter (ONNX widens it there:
  Resize with antialias at such scales is not what DirectML computes). gpudml's refusal, beside the
  page (issue #43): Antialiased with NEAREST_NEIGHBOR (no filter to widen).
- gpudml's extension, RESAMPLE3 only: InterpolationMode CUBIC, ONNX Resize's cubic (Keys'
  kernel with cubic_coeff_a, 4 taps per axis; antialiased: ONNX's rule, widened wherever scale < 1),
  exclude_outside (taps outside the input weigh 0, the rest are normalized: LINEAR and CUBIC)
  and antialias_scales (antialiased only: per axis the factor the filter is stretched by, one
  finite entry > 0 per dimension, the LINEAR or CUBIC filter widened by 1 / entry wherever the
  entry is < 1, ONNX Resize's antialias, whose filter scale is min(out / in, 1) also where the
  coordinate scale differs, e.g. align_corners), the desc's last three fields, with ONNX's
  defaults (-0.75, False) and None (DirectML's rule: widened by the scale). DirectML has none.
- DML_UPSAMPLE_2D (FL 1.0): 4-D or 5-D, the last two axes scaled by ScaleSize's integers
  (Height, Width); NEAREST_NEIGHBOR or bilinear, pixel centers as DML_RESAMPLE.

Precision (`tolerance`): NEAREST_NEIGHBOR is bit-exact for every type (a selection of
elements: data movement). LINEAR and CUBIC compute float32 weights and sum in float32: within
(T + 8 A + 8) 2^-24 sum |w x| (T taps, A resampled axes, the weights' and the sum's
roundings), plus the coordinate's float32 error (at most 2^-17 max(1, |x|) per axis, snapping
included) times the filter's slope (1 linear, 3 cubic) times the taps times the largest
|input|, plus the result's rounding (0.5 ULP float32, 1 ULP float16; INT8 and UINT8: 1).
"""

from __future__ import annotations

import inspect
import math
from dataclasses import dataclass, fields

import numpy as np

from ..errors import InvalidArgumentError
from ..kernels import resample as family
from ..kernels.base import ProblemPlanner
from ..tensor_desc import MAX_ELEMENTS, TensorDesc, as_int_tuple, check_length
from ..types import AxisDirection, DataType, FeatureLevel, InterpolationMode
from .activations import as_float32
from .base import check_copy_tensors, gather
from .cumulative import as_bool
from .spec import Cli, CliArg, OpSpec, signature_functional, support_table

FL, T = FeatureLevel, DataType
FLOATS = frozenset({T.FLOAT32, T.FLOAT16})
FLOATS_INT8 = FLOATS | {T.INT8, T.UINT8}
IM = InterpolationMode
#: The snap width of a coordinate, relative to its magnitude (kernels/resample.py).
SNAP = 2.0**-18


def _page(name: str) -> str:
    return f"ns-directml-dml_{name}_operator_desc.md"


@dataclass(frozen=True)
class Row:
    """One resampling operator: DirectML's name, its key and functional name, its version
    (0-3; UPSAMPLE_2D: None), its stored page and its support rows (the page's)."""

    op: str
    key: str
    functional_name: str
    version: int | None
    page_file: str
    support: tuple

    @property
    def enum(self) -> str:
        return self.page_file.removeprefix("ns-directml-dml_").removesuffix("_operator_desc.md").upper()


TABLE: tuple[Row, ...] = (
    Row("Resample", "resample0", "resample0", 0, _page("resample"),
        ((FL.FL_6_2, (1, 4), FLOATS_INT8), (FL.FL_5_1, (1, 4), FLOATS), (FL.FL_2_0, {4}, FLOATS))),
    Row("Resample1", "resample1", "resample1", 1, _page("resample1"), ((FL.FL_2_1, {4}, FLOATS),)),
    Row("Resample2", "resample2", "resample2", 2, _page("resample2"), ((FL.FL_5_1, (1, 4), FLOATS),)),
    Row("Resample3", "resample3", "resample", 3, _page("resample3"), ((FL.FL_6_4, (1, 4), FLOATS_INT8),)),
    Row("Upsample2D", "upsample_2d", "upsample_2d", None, _page("upsample_2d"), ((FL.FL_1_0, (4, 5), FLOATS),)),
)
ROWS = {row.key: row for row in TABLE}


# ============================================================================ descs
class ResampleFields:
    """Normalizing a resampling desc's fields (each class: its fields in DirectML's order)."""

    OP = ""

    def __post_init__(self):
        names = {f.name for f in fields(self)}
        object.__setattr__(self, "interpolation_mode",
                           IM.coerce(self.interpolation_mode, f"{self.OP}: interpolation_mode"))
        for name in ("scales", "input_pixel_offsets", "output_pixel_offsets"):
            if name in names:
                object.__setattr__(self, name, float_tuple(getattr(self, name), f"{self.OP}: {name}"))
        if "rounding_direction" in names:
            object.__setattr__(self, "rounding_direction",
                               AxisDirection.coerce(self.rounding_direction, f"{self.OP}: rounding_direction"))
        if "antialiased" in names:
            for name in ("antialiased", "exclude_outside"):
                object.__setattr__(self, name, as_bool(getattr(self, name), f"{self.OP}: {name}"))
            object.__setattr__(self, "cubic_coeff_a", as_float32(self.cubic_coeff_a, f"{self.OP}: cubic_coeff_a"))
            if self.antialias_scales is not None:
                object.__setattr__(self, "antialias_scales",
                                   float_tuple(self.antialias_scales, f"{self.OP}: antialias_scales"))


def float_tuple(values, field: str) -> tuple[float, ...]:
    if isinstance(values, (str, bytes)) or values is None or np.ndim(values) != 1:
        raise InvalidArgumentError(f"{field}: expected a sequence of numbers (FLOATs), got {values!r}")
    return tuple(as_float32(v, f"{field}[{i}]") for i, v in enumerate(values))


@dataclass(frozen=True)
class ResampleOperatorDesc(ResampleFields):
    """DML_RESAMPLE_OPERATOR_DESC: pixel centers (offsets 0.5 and -0.5), nearest rounds half up."""

    OP = "Resample"
    input_tensor: TensorDesc
    output_tensor: TensorDesc
    interpolation_mode: InterpolationMode
    scales: tuple[float, ...]


@dataclass(frozen=True)
class Resample1OperatorDesc(ResampleFields):
    """DML_RESAMPLE1_OPERATOR_DESC: RESAMPLE with the pixel offsets per axis."""

    OP = "Resample1"
    input_tensor: TensorDesc
    output_tensor: TensorDesc
    interpolation_mode: InterpolationMode
    scales: tuple[float, ...]
    input_pixel_offsets: tuple[float, ...]
    output_pixel_offsets: tuple[float, ...]


@dataclass(frozen=True)
class Resample2OperatorDesc(ResampleFields):
    """DML_RESAMPLE2_OPERATOR_DESC: RESAMPLE1 with nearest's rounding direction."""

    OP = "Resample2"
    input_tensor: TensorDesc
    output_tensor: TensorDesc
    interpolation_mode: InterpolationMode
    rounding_direction: AxisDirection
    scales: tuple[float, ...]
    input_pixel_offsets: tuple[float, ...]
    output_pixel_offsets: tuple[float, ...]


@dataclass(frozen=True)
class Resample3OperatorDesc(ResampleFields):
    """DML_RESAMPLE3_OPERATOR_DESC: RESAMPLE2 with Antialiased; cubic_coeff_a,
    exclude_outside and antialias_scales are gpudml's extension (InterpolationMode CUBIC,
    ONNX Resize's; antialias_scales: per axis the factor the antialiased filter is stretched
    by, widened wherever it is < 1, ONNX Resize's antialias; None: DirectML's rule)."""

    OP = "Resample3"
    input_tensor: TensorDesc
    output_tensor: TensorDesc
    interpolation_mode: InterpolationMode
    rounding_direction: AxisDirection
    scales: tuple[float, ...]
    input_pixel_offsets: tuple[float, ...]
    output_pixel_offsets: tuple[float, ...]
    antialiased: bool
    cubic_coeff_a: float = -0.75
    exclude_outside: bool = False
    antialias_scales: tuple[float, ...] | None = None


@dataclass(frozen=True)
class Upsample2DOperatorDesc:
    """DML_UPSAMPLE_2D_OPERATOR_DESC: the last two axes scaled by scale_size, DML_SIZE_2D
    given as (height, width), the tensor's axis order."""

    input_tensor: TensorDesc
    output_tensor: TensorDesc
    scale_size: tuple[int, int]
    interpolation_mode: InterpolationMode

    def __post_init__(self):
        object.__setattr__(self, "scale_size", as_int_tuple(self.scale_size, "Upsample2D: scale_size"))
        object.__setattr__(self, "interpolation_mode",
                           IM.coerce(self.interpolation_mode, "Upsample2D: interpolation_mode"))


DESCS = {"resample0": ResampleOperatorDesc, "resample1": Resample1OperatorDesc,
         "resample2": Resample2OperatorDesc, "resample3": Resample3OperatorDesc,
         "upsample_2d": Upsample2DOperatorDesc}


# ============================================================================ what a desc computes
def mode_name(mode: InterpolationMode) -> str:
    return {IM.NEAREST_NEIGHBOR: "nearest", IM.LINEAR: "linear", IM.CUBIC: "cubic"}[mode]


def mapping(desc) -> family.Resampling:
    """Every desc's resampling in one form (RESAMPLE3's fields, the kernel family's problem):
    what the reference, the tolerance and the kernels read."""
    rank = desc.input_tensor.rank
    mode = mode_name(desc.interpolation_mode)
    op = type(desc).__name__.removesuffix("OperatorDesc")

    def form(rounding, scales, input_offsets=(0.5,) * rank, output_offsets=(-0.5,) * rank, *extension):
        return family.Resampling(op, mode, rounding, desc.input_tensor, desc.output_tensor, scales, input_offsets,
                                 output_offsets, *extension)

    if isinstance(desc, Upsample2DOperatorDesc):
        return form("half_up", (1.0,) * (rank - 2) + tuple(float(s) for s in desc.scale_size))
    if isinstance(desc, ResampleOperatorDesc):
        return form("half_up", desc.scales)
    offsets = (desc.input_pixel_offsets, desc.output_pixel_offsets)
    if isinstance(desc, Resample1OperatorDesc):
        return form("half_up", desc.scales, *offsets)
    rounding = "floor" if desc.rounding_direction == AxisDirection.DECREASING else "ceil"
    if isinstance(desc, Resample2OperatorDesc):
        return form(rounding, desc.scales, *offsets)
    return form(rounding, desc.scales, *offsets, desc.antialiased, desc.cubic_coeff_a, desc.exclude_outside,
                desc.antialias_scales)


problem = mapping


PLANNER = ProblemPlanner(problem, family.FAMILY)


# ============================================================================ validation
def validate(row: Row, support, desc, level: FeatureLevel) -> None:
    """The pages' rules and gpudml's (module docstring), each naming the field, the rule
    and the values."""
    op = row.op
    rank = check_copy_tensors(op, support, level, desc.input_tensor, desc.output_tensor)
    mode = desc.interpolation_mode
    if mode not in (IM.NEAREST_NEIGHBOR, IM.LINEAR) and row.version != 3:
        raise InvalidArgumentError(
            f"{op}: interpolation_mode {mode.name} is not DirectML's (NEAREST_NEIGHBOR or LINEAR); CUBIC is gpudml's "
            f"extension of Resample3 (dml.resample)")
    if row.version is None:
        _validate_upsample(desc, rank)
        return
    check_scales_offsets(op, desc, rank, ("scales",) + (("input_pixel_offsets", "output_pixel_offsets")
                                                        if row.version >= 1 else ()))
    if row.version == 3:
        if desc.antialiased and mode == IM.NEAREST_NEIGHBOR:
            raise InvalidArgumentError(
                f"{op}: antialiased = True needs interpolation_mode LINEAR or CUBIC (NEAREST_NEIGHBOR has no filter to "
                f"widen)")
        if not math.isfinite(desc.cubic_coeff_a):
            raise InvalidArgumentError(f"{op}: cubic_coeff_a = {desc.cubic_coeff_a!r} must be a finite number")
        if desc.antialias_scales is not None:
            if not desc.antialiased:
                raise InvalidArgumentError(
                    f"{op}: antialias_scales {list(desc.antialias_scales)} needs antialiased = True (gpudml's "
                    f"extension: the factor the antialiased filter is stretched by)")
            check_scales_offsets(op, desc, rank, ("antialias_scales",))


def check_scales_offsets(op: str, desc, rank: int, names) -> None:
    """The desc's FLOAT arrays `names`: one entry per dimension, finite, scales larger than 0."""
    for name in names:
        values = getattr(desc, name)
        check_length(op, name, values, rank)
        for i, v in enumerate(values):
            if not math.isfinite(v) or (name.endswith("scales") and v <= 0):
                rule = "a finite number larger than 0" if name.endswith("scales") else "a finite number"
                raise InvalidArgumentError(f"{op}: {name}[{i}] = {v!r} must be {rule} ({name} {list(values)})")


def _validate_upsample(desc: Upsample2DOperatorDesc, rank: int) -> None:
    inp, out = desc.input_tensor, desc.output_tensor
    if len(desc.scale_size) != 2:
        raise InvalidArgumentError(f"Upsample2D: scale_size has {len(desc.scale_size)} entries "
                                   f"{list(desc.scale_size)}; it is a DML_SIZE_2D (height, width)")
    for name, s, n in zip(("height", "width"), desc.scale_size, inp.sizes[-2:], strict=True):
        if not 0 < s <= MAX_ELEMENTS // n:
            raise InvalidArgumentError(
                f"Upsample2D: scale_size.{name} = {s} must be in 1..UINT_MAX / input {name} = {MAX_ELEMENTS // n} "
                f"(the page: 0 < ScaleSize.{name.title()} <= UINT_MAX / Input{name.title()})")
    want = list(inp.sizes[:-2]) + [inp.sizes[-2] * desc.scale_size[0], inp.sizes[-1] * desc.scale_size[1]]
    if list(out.sizes) != want:
        raise InvalidArgumentError(
            f"Upsample2D: output_tensor.sizes {list(out.sizes)} must be {want} (input_tensor's, height * "
            f"scale_size.height and width * scale_size.width)")


# ============================================================================ the functional forms
def _resolved(where: str, x: TensorDesc, scales, output_sizes) -> tuple[tuple, tuple]:
    """(scales, output sizes) of a functional call: scales alone give the sizes floor(n *
    scale); output_sizes alone give the scales output / input; both: as given."""
    rank = x.rank
    if scales is None and output_sizes is None:
        raise InvalidArgumentError(f"{where}: give scales or output_sizes (one entry per axis of x, rank {rank})")
    if output_sizes is not None:
        sizes = as_int_tuple(output_sizes, f"{where}: output_sizes")
        if len(sizes) != rank:
            raise InvalidArgumentError(f"{where}: output_sizes has {len(sizes)} entries {list(sizes)}; x has "
                                       f"{rank} dimensions")
        if scales is None:
            scales = tuple(m / n for m, n in zip(sizes, x.sizes, strict=True))
        return float_tuple(scales, f"{where}: scales"), sizes
    scales = float_tuple(scales, f"{where}: scales")
    if len(scales) != rank:
        return scales, x.sizes  # validation names the length
    sizes = []
    for i, (n, s) in enumerate(zip(x.sizes, scales, strict=True)):
        m = n * s if math.isfinite(s) and s > 0 else n  # (validation names the scale)
        if m >= MAX_ELEMENTS + 1:
            raise InvalidArgumentError(f"{where}: the output size of axis {i}, floor(input size * scales[{i}]) = "
                                       f"floor({n} * {s!r}), exceeds {MAX_ELEMENTS}")
        sizes.append(max(1, math.floor(m)))
    return scales, tuple(sizes)


def _offsets(where: str, name: str, values, rank: int, default: float) -> tuple:
    return (default,) * rank if values is None else float_tuple(values, f"{where}: {name}")


def _infer(row: Row, x: TensorDesc, scales=None, *, output_sizes=None, mode="nearest_neighbor",
           rounding_direction="decreasing", input_pixel_offsets=None, output_pixel_offsets=None, antialiased=False,
           cubic_coeff_a=-0.75, exclude_outside=False, antialias_scales=None, scale_size=(2, 2)):
    where = row.functional_name
    if row.version is None:
        size = as_int_tuple(scale_size, f"{where}: scale_size")
        out = list(x.sizes)
        if len(size) == 2 and x.rank >= 2:
            out[-2:] = [n * max(s, 1) for n, s in zip(out[-2:], size, strict=True)]
        return Upsample2DOperatorDesc(x, TensorDesc(x.data_type, out), size, mode)
    scales, sizes = _resolved(where, x, scales, output_sizes)
    y = TensorDesc(x.data_type, sizes)
    if row.version == 0:
        return ResampleOperatorDesc(x, y, mode, scales)
    offsets = (_offsets(where, "input_pixel_offsets", input_pixel_offsets, x.rank, 0.5),
               _offsets(where, "output_pixel_offsets", output_pixel_offsets, x.rank, -0.5))
    if row.version == 1:
        return Resample1OperatorDesc(x, y, mode, scales, *offsets)
    if row.version == 2:
        return Resample2OperatorDesc(x, y, mode, rounding_direction, scales, *offsets)
    return Resample3OperatorDesc(x, y, mode, rounding_direction, scales, *offsets, antialiased, cubic_coeff_a,
                                 exclude_outside, antialias_scales)


_KEYWORDS = {  # the functional keywords of each version, after (x, scales)
    0: ("output_sizes", "mode"),
    1: ("output_sizes", "mode", "input_pixel_offsets", "output_pixel_offsets"),
    2: ("output_sizes", "mode", "rounding_direction", "input_pixel_offsets", "output_pixel_offsets"),
    3: ("output_sizes", "mode", "rounding_direction", "input_pixel_offsets", "output_pixel_offsets", "antialiased",
        "cubic_coeff_a", "exclude_outside", "antialias_scales"),
}
_DEFAULTS = {"output_sizes": None, "mode": "nearest_neighbor", "rounding_direction": "decreasing",
             "input_pixel_offsets": None, "output_pixel_offsets": None, "antialiased": False, "cubic_coeff_a": -0.75,
             "exclude_outside": False, "antialias_scales": None}


def _signature(row: Row) -> inspect.Signature:
    pk, kw = inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY
    params = [inspect.Parameter("x", pk)]
    if row.version is None:
        params += [inspect.Parameter("scale_size", pk, default=(2, 2)),
                   inspect.Parameter("mode", kw, default="nearest_neighbor")]
    else:
        params.append(inspect.Parameter("scales", pk, default=None))
        params += [inspect.Parameter(k, kw, default=_DEFAULTS[k]) for k in _KEYWORDS[row.version]]
    return inspect.Signature(params)


def _arguments(row: Row, desc) -> dict:
    mode = desc.interpolation_mode.name.lower()
    if row.version is None:
        return {"scale_size": desc.scale_size, "mode": mode}
    out = {"scales": desc.scales, "output_sizes": desc.output_tensor.sizes, "mode": mode}
    if row.version >= 1:
        out.update(input_pixel_offsets=desc.input_pixel_offsets, output_pixel_offsets=desc.output_pixel_offsets)
    if row.version >= 2:
        out["rounding_direction"] = desc.rounding_direction.name.lower()
    if row.version == 3:
        out.update(antialiased=desc.antialiased, cubic_coeff_a=desc.cubic_coeff_a,
                   exclude_outside=desc.exclude_outside)
        if desc.antialias_scales is not None:
            out["antialias_scales"] = desc.antialias_scales
    return out


_WHAT = {
    0: "pixel centers (offsets 0.5, -0.5); nearest rounds half up",
    1: "input_pixel_offsets (default 0.5) and output_pixel_offsets (default -0.5) per axis; nearest rounds half up",
    2: "pixel offsets as resample1; rounding_direction 'decreasing' (floor) or 'increasing' (ceil) for nearest",
    3: "pixel offsets and rounding_direction as resample2; antialiased (linear, cubic: the filter widened by "
       "1 / scale when downsampling, linear where 1 / scale > 2); mode 'cubic' (gpudml's extension: ONNX Resize's "
       "cubic, cubic_coeff_a, exclude_outside); antialias_scales (gpudml's extension: per axis the factor the "
       "filter is stretched by, widened wherever < 1, ONNX Resize's antialias)",
}


def _functional_doc(row: Row) -> str:
    if row.version is None:
        return ("DML_OPERATOR_UPSAMPLE_2D: x (4-D NCHW or 5-D NCDHW) upsampled on its last two axes by the integers "
                "scale_size = (height, width); mode 'nearest_neighbor' or 'linear' (bilinear), pixel centers. "
                "Nearest: bit-exact; linear: float32 weights (gpudml/ops/resample.py).")
    return (f"DML_OPERATOR_{row.enum}: x resampled on every axis: scales (one per axis; > 1 upsamples) or "
            f"output_sizes (scales = output / input; both: the sizes are the output's, the scales the mapping); "
            f"input coordinate = (output coordinate - output offset) / scale - input offset, clamped to the edges. "
            f"mode 'nearest_neighbor' or 'linear'; {_WHAT[row.version]}. Nearest: bit-exact for every type; "
            f"linear and cubic: float32 weights and sum (gpudml/ops/resample.py).")


def _functional(row: Row):
    return signature_functional(_signature(row), row.functional_name, _functional_doc(row))


# ============================================================================ the reference
def _coordinates(m: family.Resampling, d: int, n_out: int) -> np.ndarray:
    """Axis d's input coordinate of every output coordinate, float64 from the FLOATs,
    snapped as the kernels snap (kernels/resample.py)."""
    o = np.arange(n_out, dtype=np.float64)
    q = (o - m.output_offsets[d]) / m.scales[d]
    x = q - m.input_offsets[d]
    r = np.round(x)
    magnitude = np.maximum(1.0, np.maximum(np.abs(q), abs(m.input_offsets[d])))
    return np.where(np.abs(x - r) <= magnitude * SNAP, r, x), magnitude


def _filter(m: family.Resampling, t: np.ndarray) -> np.ndarray:
    t = np.abs(t)
    if m.mode == "linear":
        return np.maximum(0.0, 1.0 - t)
    a = m.cubic_a
    return np.where(t <= 1, ((a + 2) * t - (a + 3)) * t * t + 1,
                    np.where(t < 2, ((a * t - 5 * a) * t + 8 * a) * t - 4 * a, 0.0))


def axis_taps(m: family.Resampling, d: int, n_in: int, n_out: int):
    """Axis d's taps: (indices [n_out, K] clamped into the input, weights [n_out, K] float64,
    coordinate magnitudes [n_out]); nearest: K = 1, weight 1."""
    x, magnitude = _coordinates(m, d, n_out)
    if m.mode == "nearest":
        i = {"floor": np.floor(x), "ceil": np.ceil(x), "half_up": np.floor(x + 0.5)}[m.rounding]
        return np.clip(i, 0, n_in - 1).astype(np.int64)[:, None], np.ones((n_out, 1)), magnitude
    k_lo, count = m.taps(d)
    x0 = np.floor(x)
    k = np.arange(k_lo, k_lo + count, dtype=np.float64)
    s = m.filter_scale(d)
    w = _filter(m, (k[None, :] - (x - x0)[:, None]) * s)
    idx = x0[:, None].astype(np.int64) + k[None, :].astype(np.int64)
    if m.exclude_outside:
        w = np.where((idx < 0) | (idx >= n_in), 0.0, w)
    if m.antialiased or m.exclude_outside:
        with np.errstate(invalid="ignore"):  # every tap outside (excluded): 0 / 0, NaN, as ONNX's reference
            w = w / w.sum(axis=1, keepdims=True)
    return np.clip(idx, 0, n_in - 1), w, magnitude


def _identity(m: family.Resampling, d: int, n_in: int, n_out: int) -> bool:
    return m.scales[d] == 1.0 and m.input_offsets[d] == -m.output_offsets[d] and n_in == n_out and not m.widened(d)


def resample_array(x: np.ndarray, m: family.Resampling, sizes) -> np.ndarray:
    """x resampled to `sizes` (float64 for interpolation, x's own elements for nearest)."""
    if m.mode == "nearest":
        return gather(x, [axis_taps(m, d, n, o)[0][:, 0] for d, (n, o) in enumerate(zip(x.shape, sizes))])
    y = x.astype(np.float64)
    for d, (n, o) in enumerate(zip(x.shape, sizes, strict=True)):
        if _identity(m, d, n, o):
            continue
        idx, w, _ = axis_taps(m, d, n, o)
        taken = np.take(y, idx, axis=d)  # [..., o, K, ...]
        shape = [1] * taken.ndim
        shape[d], shape[d + 1] = w.shape
        y = (taken * w.reshape(shape)).sum(axis=d + 1)
    return y


def _round_to(y: np.ndarray, dtype) -> np.ndarray:
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        return y.astype(dtype)
    info = np.iinfo(dtype)
    return np.clip(np.rint(y), info.min, info.max).astype(dtype)


def _reference(row: Row, x, *args, **kwargs):
    x = np.asarray(x)
    desc = _infer(row, TensorDesc(DataType.from_numpy(x.dtype, "x"), x.shape), *args, **kwargs)
    m = mapping(desc)
    y = resample_array(x, m, desc.output_tensor.sizes)
    return y if m.mode == "nearest" else _round_to(y, x.dtype)


# ============================================================================ precision
UNIT = 2.0**-24


def _tolerance(row: Row, expected: np.ndarray, inputs, arguments: dict):
    """The documented precision (module docstring), per element; None (bit-exact) for nearest."""
    x = np.asarray(inputs[0])
    desc = _infer(row, TensorDesc(DataType.from_numpy(x.dtype, "x"), x.shape), **arguments)
    m = mapping(desc)
    if m.mode == "nearest":
        return None
    xs = np.abs(x.astype(np.float64))
    total = resample_array_abs(xs, m, desc.output_tensor.sizes)
    axes = [d for d, (n, o) in enumerate(zip(x.shape, desc.output_tensor.sizes)) if not _identity(m, d, n, o)]
    taps = math.prod(m.taps(d)[1] for d in axes) if axes else 1
    e = total * (taps + 8 * len(axes) + 8) * UNIT
    largest = float(xs.max()) if xs.size else 0.0
    slope = 1.0 if m.mode == "linear" else 3.0
    for d in axes:
        n, o = x.shape[d], desc.output_tensor.sizes[d]
        _, w, magnitude = axis_taps(m, d, n, o)
        s = m.filter_scale(d)
        per = w.shape[1] * slope * s * magnitude * 2.0**-17 * (2 if (m.antialiased or m.exclude_outside) else 1)
        shape = [1] * x.ndim
        shape[d] = o
        e = e + (per * largest).reshape(shape)
    y = np.abs(resample_array(x, m, desc.output_tensor.sizes))
    if expected.dtype == np.float32:
        e = e + 0.5 * np.spacing(np.minimum(y, 3.4e38).astype(np.float32)).astype(np.float64)
    elif expected.dtype == np.float16:
        e = e + np.spacing(np.minimum(y, 65504).astype(np.float16)).astype(np.float64)
    else:
        e = e + 1.0
    e = np.where(np.isfinite(e), e, np.inf)
    return np.broadcast_to(e, expected.shape)


def resample_array_abs(xs: np.ndarray, m: family.Resampling, sizes) -> np.ndarray:
    """sum |w| |x| over each output's taps (|x| given)."""
    y = xs
    for d, (n, o) in enumerate(zip(xs.shape, sizes, strict=True)):
        if _identity(m, d, n, o):
            continue
        idx, w, _ = axis_taps(m, d, n, o)
        taken = np.take(y, idx, axis=d)
        shape = [1] * taken.ndim
        shape[d], shape[d + 1] = w.shape
        y = (taken * np.abs(w).reshape(shape)).sum(axis=d + 1)
    return y


def _sample(desc, rng) -> list:
    """Nearest: random bits (NaN, infinities, -0.0 included: a selection is bit-exact on
    them); interpolation: uniform values in [-1, 1] (integers: random bits)."""
    td = desc.input_tensor
    if desc.interpolation_mode == IM.NEAREST_NEIGHBOR or not td.data_type.is_float:
        raw = rng.integers(0, 256, size=td.required_elements * td.data_type.size, dtype=np.uint8)
        return [raw.view(td.data_type.numpy)]
    return [rng.uniform(-1.0, 1.0, td.required_elements).astype(td.data_type.numpy)]


# ============================================================================ the command line
def _floats(text, default, rank: int, flag: str) -> tuple | None:
    if text is None or text == "":
        return default
    try:
        values = tuple(float(v) for v in str(text).split(","))
    except ValueError:
        raise InvalidArgumentError(f"{flag}: expected comma-separated numbers, got {text!r}") from None
    return values * rank if len(values) == 1 else values


def _cli_args(row: Row) -> tuple:
    mode = CliArg("--mode", "nearest_neighbor or linear" + (" or cubic" if row.version == 3 else "") +
                  " (default nearest_neighbor)", "str")
    if row.version is None:
        return (CliArg("--scale-size", "height,width: the integer scales (default 2,2)"), mode)
    args = (CliArg("--scales", "scale per axis, comma-separated (default 1 on the outer axes, 2 on the last two)",
                   "str"), mode)
    if row.version >= 1:
        args += (CliArg("--input-offsets", "input pixel offset per axis (default 0.5)", "str"),
                 CliArg("--output-offsets", "output pixel offset per axis (default -0.5)", "str"))
    if row.version >= 2:
        args += (CliArg("--rounding", "decreasing or increasing (default decreasing)", "str"),)
    if row.version == 3:
        args += (CliArg("--antialiased", "1: antialiased (linear, cubic)", "number"),)
    return args


def _from_cli(row: Row, infer):
    def build(x: TensorDesc, o: dict):
        mode = o.get("mode") or "nearest_neighbor"
        if row.version is None:
            return infer(x, o.get("scale_size") or (2, 2), mode=mode)
        default = (1.0,) * max(0, x.rank - 2) + (2.0,) * min(2, x.rank)
        kwargs = {"mode": mode}
        if row.version >= 1:
            kwargs["input_pixel_offsets"] = _floats(o.get("input_offsets"), None, x.rank, "--input-offsets")
            kwargs["output_pixel_offsets"] = _floats(o.get("output_offsets"), None, x.rank, "--output-offsets")
        if row.version >= 2:
            kwargs["rounding_direction"] = o.get("rounding") or "decreasing"
        if row.version == 3:
            kwargs["antialiased"] = bool(o.get("antialiased") or 0)
        return infer(x, _floats(o.get("scales"), default, x.rank, "--scales"), **kwargs)
    return build


# ============================================================================ the specs
def spec(row: Row) -> OpSpec:
    support = support_table(row.op, ("input_tensor", "output_tensor"), row.support)

    def infer(x, *args, **kwargs):
        return _infer(row, x, *args, **kwargs)

    def ref(x, *args, **kwargs):
        return _reference(row, x, *args, **kwargs)

    ref.__name__ = ref.__qualname__ = row.functional_name
    ref.__signature__ = _signature(row)
    ref.__doc__ = (f"DML_OPERATOR_{row.enum} on numpy arrays ({row.functional_name}'s arguments): float64 "
                   f"coordinates and weights, rounded once to x's type (nearest: x's own elements).")
    example = "--shape 1,64,128,128" + ("" if row.version is None else " --scales 1,1,2,2") + " --mode linear"
    return OpSpec(
        name=row.op, key=row.key, desc=DESCS[row.key], support=support,
        infer_output=infer, validate=lambda d, level: validate(row, support, d, level),
        reference=ref, functional=_functional(row), tensors=("x",), arguments=lambda d: _arguments(row, d),
        planner=PLANNER, cli=Cli(_cli_args(row), _from_cli(row, infer), example),
        page=f"DML_{row.enum}_OPERATOR_DESC",
        tolerance=lambda e, i, a: _tolerance(row, e, i, a), sample=_sample,
    )


SPECS = tuple(spec(row) for row in TABLE)
__all__ = ["DESCS", "SPECS", "TABLE", "mapping"]
