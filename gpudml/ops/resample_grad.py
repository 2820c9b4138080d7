"""DML_RESAMPLE_GRAD (FL 3.0, `dml.resample_grad0`) and DML_RESAMPLE_GRAD1 (FL 5.1,
`dml.resample_grad`), one table: the gradient of a resampling with respect to its input.
The incoming gradient dy has the forward's output sizes, the output gradient dx its input's:
dx = W^T dy, W the forward's interpolation weights (gpudml/ops/resample.py's rules: the
coordinate rule, its snapping, nearest's rounding, linear's two taps clamped into the axis).
RESAMPLE_GRAD is the gradient of DML_RESAMPLE1 (nearest rounds half up), RESAMPLE_GRAD1 of
DML_RESAMPLE2 (RoundingDirection). The kernel (kernels/resample_grad.py) gathers each dx
element's contributions in a fixed order: deterministic, no atomics.

What the pages say, as implemented:

- InputGradientTensor and OutputGradientTensor: FLOAT32 or FLOAT16, one type and one
  DimensionCount (RESAMPLE_GRAD1's constraint; RESAMPLE_GRAD's table allows only 4); ranks
  4 (RESAMPLE_GRAD) and 1 to 4 (RESAMPLE_GRAD1); each page's table.
- InterpolationMode NEAREST_NEIGHBOR or LINEAR; Scales, InputPixelOffsets and
  OutputPixelOffsets one entry per dimension, as the forward's (finite; scales > 0).
- The sizes: as the forward's, the pages put no rule between the two tensors' sizes and the
  scales (the forward clamps coordinates past the input); gpudml accepts any.

Where the pages are silent: the sum over a dx element's contributions is float32 in a fixed
order (row-major over the forward's output coordinates); a contribution whose weight is
exactly 0 is skipped (a NaN in dy that the forward weighted by 0 does not reach dx). On an
axis that does not resample (scale 1, offsets that cancel, one size) dx takes dy's elements.

Precision (`tolerance`): with C the number of contributions of a dx element, A the resampled
axes, S = sum |w dy| over its contributions and D the sum of |dy| over them:
|dx - exact| <= (C + 2 A + 2) 2^-24 S + A 2^-16 m D (linear only: the float32 coordinate's
error, snapping included, at most 2^-17 of its magnitude m per tap weight, two taps per axis;
m the largest coordinate magnitude of the axis) + the result's rounding (0.5 ULP float32,
1 ULP float16). Nearest selects as the forward selects (its coordinate snapping): its only
error is the sum's.

The functional forms: `dml.resample_grad(dy, output_sizes, scales=None, *, mode,
rounding_direction, input_pixel_offsets, output_pixel_offsets)` and `dml.resample_grad0(dy,
output_sizes, scales=None, *, mode, input_pixel_offsets, output_pixel_offsets)`: output_sizes
are dx's (the forward input's) sizes; scales default to dy's sizes over them (the forward's
output over its input), the offsets to the pixel centers (0.5 and -0.5).
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass

import numpy as np

from ..errors import InvalidArgumentError
from ..kernels import resample as family
from ..kernels import resample_grad as grad_family
from ..kernels.base import ProblemPlanner
from ..tensor_desc import TensorDesc, as_int_tuple
from ..types import AxisDirection, DataType, FeatureLevel, InterpolationMode
from .base import check_one_type
from .resample import FLOATS, ResampleFields, axis_taps, check_scales_offsets, float_tuple, mode_name
from .spec import Cli, CliArg, OpSpec, signature_functional, support_table

FL, IM = FeatureLevel, InterpolationMode
TENSORS = ("input_gradient_tensor", "output_gradient_tensor")
UNIT = 2.0**-24


@dataclass(frozen=True)
class Row:
    """One operator: DirectML's name, its key and functional name, its version (0, 1), its
    stored page and its support rows (the page's)."""

    op: str
    key: str
    functional_name: str
    version: int
    page_file: str
    support: tuple


TABLE: tuple[Row, ...] = (
    Row("ResampleGrad", "resample_grad0", "resample_grad0", 0, "ns-directml-dml_resample_grad_operator_desc.md",
        ((FL.FL_3_0, {4}, FLOATS),)),
    Row("ResampleGrad1", "resample_grad1", "resample_grad", 1, "ns-directml-dml_resample_grad1_operator_desc.md",
        ((FL.FL_5_1, (1, 4), FLOATS),)),
)


class _Grad(ResampleFields):
    """The gradients as the movement-free names the forward's helpers read."""

    @property
    def input_tensor(self) -> TensorDesc:  # the forward's input: dx
        return self.output_gradient_tensor

    @property
    def output_tensor(self) -> TensorDesc:  # the forward's output: dy
        return self.input_gradient_tensor


@dataclass(frozen=True)
class ResampleGradOperatorDesc(_Grad):
    """DML_RESAMPLE_GRAD_OPERATOR_DESC: the gradient of DML_RESAMPLE1."""

    OP = "ResampleGrad"
    input_gradient_tensor: TensorDesc
    output_gradient_tensor: TensorDesc
    interpolation_mode: InterpolationMode
    scales: tuple[float, ...]
    input_pixel_offsets: tuple[float, ...]
    output_pixel_offsets: tuple[float, ...]


@dataclass(frozen=True)
class ResampleGrad1OperatorDesc(_Grad):
    """DML_RESAMPLE_GRAD1_OPERATOR_DESC: the gradient of DML_RESAMPLE2."""

    OP = "ResampleGrad1"
    input_gradient_tensor: TensorDesc
    output_gradient_tensor: TensorDesc
    interpolation_mode: InterpolationMode
    rounding_direction: AxisDirection
    scales: tuple[float, ...]
    input_pixel_offsets: tuple[float, ...]
    output_pixel_offsets: tuple[float, ...]


DESCS = {"resample_grad0": ResampleGradOperatorDesc, "resample_grad1": ResampleGrad1OperatorDesc}


def forward(desc) -> family.Resampling:
    """The forward resampling the desc is the gradient of (kernels/resample.py's problem:
    its input dx, its output dy)."""
    rounding = "half_up" if isinstance(desc, ResampleGradOperatorDesc) else (
        "floor" if desc.rounding_direction == AxisDirection.DECREASING else "ceil")
    return family.Resampling(type(desc).__name__.removesuffix("OperatorDesc"), mode_name(desc.interpolation_mode),
                             rounding, desc.output_gradient_tensor, desc.input_gradient_tensor, desc.scales,
                             desc.input_pixel_offsets, desc.output_pixel_offsets)


PLANNER = ProblemPlanner(forward, grad_family.FAMILY)


def validate(row: Row, support, desc, level: FeatureLevel) -> None:
    op = row.op
    rank = check_one_type(op, support, level, {"input_gradient_tensor": desc.input_gradient_tensor,
                                                "output_gradient_tensor": desc.output_gradient_tensor})
    if desc.interpolation_mode not in (IM.NEAREST_NEIGHBOR, IM.LINEAR):
        raise InvalidArgumentError(f"{op}: interpolation_mode {desc.interpolation_mode.name} must be "
                                   f"NEAREST_NEIGHBOR or LINEAR")
    check_scales_offsets(op, desc, rank, ("scales", "input_pixel_offsets", "output_pixel_offsets"))


# ============================================================================ the functional forms
def _infer(row: Row, dy: TensorDesc, output_sizes, scales=None, *, mode="nearest_neighbor",
           rounding_direction="decreasing", input_pixel_offsets=None, output_pixel_offsets=None):
    where = row.functional_name
    sizes = as_int_tuple(output_sizes, f"{where}: output_sizes")
    if len(sizes) != dy.rank:
        raise InvalidArgumentError(f"{where}: output_sizes has {len(sizes)} entries {list(sizes)}; dy has "
                                   f"{dy.rank} dimensions")
    if scales is None:
        scales = tuple(m / n for m, n in zip(dy.sizes, sizes, strict=True))
    scales = float_tuple(scales, f"{where}: scales")
    offsets = tuple((default,) * dy.rank if v is None else float_tuple(v, f"{where}: {name}") for name, v, default in
                    (("input_pixel_offsets", input_pixel_offsets, 0.5),
                     ("output_pixel_offsets", output_pixel_offsets, -0.5)))
    dx = TensorDesc(dy.data_type, sizes)
    if row.version == 0:
        return ResampleGradOperatorDesc(dy, dx, mode, scales, *offsets)
    return ResampleGrad1OperatorDesc(dy, dx, mode, rounding_direction, scales, *offsets)


def _signature(row: Row) -> inspect.Signature:
    pk, kw = inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY
    params = [inspect.Parameter("dy", pk), inspect.Parameter("output_sizes", pk),
              inspect.Parameter("scales", pk, default=None), inspect.Parameter("mode", kw, default="nearest_neighbor")]
    if row.version == 1:
        params.append(inspect.Parameter("rounding_direction", kw, default="decreasing"))
    params += [inspect.Parameter("input_pixel_offsets", kw, default=None),
               inspect.Parameter("output_pixel_offsets", kw, default=None)]
    return inspect.Signature(params)


def _arguments(row: Row, desc) -> dict:
    out = {"output_sizes": desc.output_gradient_tensor.sizes, "scales": desc.scales,
           "mode": desc.interpolation_mode.name.lower(), "input_pixel_offsets": desc.input_pixel_offsets,
           "output_pixel_offsets": desc.output_pixel_offsets}
    if row.version == 1:
        out["rounding_direction"] = desc.rounding_direction.name.lower()
    return out


def _functional_doc(row: Row) -> str:
    forward_name = "RESAMPLE1 (nearest rounds half up)" if row.version == 0 else "RESAMPLE2 (rounding_direction)"
    return (f"DML_OPERATOR_{row.page_file.removeprefix('ns-directml-dml_').removesuffix('_operator_desc.md').upper()}:"
            f" the gradient of DML_{forward_name} with respect to its input: dy (the gradient of the resampled "
            f"output) mapped back onto an array of output_sizes (the forward input's) through the transpose of the "
            f"forward's weights. scales default to dy's sizes over output_sizes, the pixel offsets to 0.5 and -0.5; "
            f"mode 'nearest_neighbor' or 'linear'. A float32 sum in a fixed order per element "
            f"(gpudml/ops/resample_grad.py states the precision).")


# ============================================================================ the reference
def _matrices(m: family.Resampling) -> list[np.ndarray]:
    """Per axis the forward's weights as a matrix [n_out, n_in] (float64; clamped taps add up)."""
    mats = []
    for d, (n, o) in enumerate(zip(m.input.sizes, m.output.sizes, strict=True)):
        idx, w, _ = axis_taps(m, d, n, o)
        mat = np.zeros((o, n))
        np.add.at(mat, (np.repeat(np.arange(o), idx.shape[1]), idx.reshape(-1)), w.reshape(-1))
        mats.append(mat)
    return mats


def _contract(y: np.ndarray, mats) -> np.ndarray:
    """y [.., n_out_d, ..] through each axis' matrix transposed, skipping zero weights."""
    for d, mat in enumerate(mats):
        rows, cols = np.nonzero(mat)
        moved = np.moveaxis(y, d, 0)
        out = np.zeros((mat.shape[1],) + moved.shape[1:])
        np.add.at(out, cols, mat[rows, cols].reshape((-1,) + (1,) * (moved.ndim - 1)) * moved[rows])
        y = np.moveaxis(out, 0, d)
    return y


def _desc_of(row: Row, dy: np.ndarray, *args, **kwargs):
    return _infer(row, TensorDesc(DataType.from_numpy(dy.dtype, "dy"), dy.shape), *args, **kwargs)


def _reference(row: Row, dy, *args, **kwargs):
    dy = np.asarray(dy)
    m = forward(_desc_of(row, dy, *args, **kwargs))
    return _contract(dy.astype(np.float64), _matrices(m)).astype(dy.dtype)


def _magnitudes(m: family.Resampling, d: int) -> float:
    o = np.arange(m.output.sizes[d], dtype=np.float64)
    q = (o - m.output_offsets[d]) / m.scales[d]
    return float(np.max(np.maximum(1.0, np.maximum(np.abs(q), abs(m.input_offsets[d]))))) if o.size else 1.0


def _tolerance(row: Row, expected: np.ndarray, inputs, arguments: dict):
    """The documented precision (module docstring), per element."""
    dy = np.asarray(inputs[0])
    m = forward(_desc_of(row, dy, **arguments))
    mats = _matrices(m)
    axes = [d for d in m.axes]
    ady = np.abs(dy.astype(np.float64))
    total = _contract(ady, [np.abs(a) for a in mats])
    count = _contract(np.ones_like(ady), [(a != 0).astype(np.float64) for a in mats])
    e = total * (count + 2 * len(axes) + 2) * UNIT
    if m.mode == "linear" and axes:
        reach = _contract(ady, [(a != 0).astype(np.float64) for a in mats])
        e = e + reach * sum(_magnitudes(m, d) for d in axes) * 2.0**-16
    y = np.abs(_contract(dy.astype(np.float64), mats))
    if expected.dtype == np.float32:
        e = e + 0.5 * np.spacing(np.minimum(y, 3.4e38).astype(np.float32)).astype(np.float64)
    else:
        e = e + np.spacing(np.minimum(y, 65504).astype(np.float16)).astype(np.float64)
    return np.where(np.isfinite(e), e, np.inf)


def _sample(desc, rng) -> list:
    """Uniform values in [-1, 1]."""
    td = desc.input_gradient_tensor
    return [rng.uniform(-1.0, 1.0, td.required_elements).astype(td.data_type.numpy)]


# ============================================================================ the command line
def _floats(text, rank: int, flag: str):
    if text is None or text == "":
        return None
    try:
        values = tuple(float(v) for v in str(text).split(","))
    except ValueError:
        raise InvalidArgumentError(f"{flag}: expected comma-separated numbers, got {text!r}") from None
    return values * rank if len(values) == 1 else values


def _from_cli(row: Row, infer):
    def build(dy: TensorDesc, o: dict):
        sizes = o.get("output_sizes") or tuple(max(1, n // 2) if d >= dy.rank - 2 else n
                                                for d, n in enumerate(dy.sizes))
        kwargs = {"mode": o.get("mode") or "nearest_neighbor",
                  "input_pixel_offsets": _floats(o.get("input_offsets"), dy.rank, "--input-offsets"),
                  "output_pixel_offsets": _floats(o.get("output_offsets"), dy.rank, "--output-offsets")}
        if row.version == 1:
            kwargs["rounding_direction"] = o.get("rounding") or "decreasing"
        return infer(dy, sizes, _floats(o.get("scales"), dy.rank, "--scales"), **kwargs)
    return build


def _cli_args(row: Row) -> tuple:
    args = (CliArg("--output-sizes", "the output gradient's (the forward input's) sizes (default: dy's halved on "
                                     "the last two axes)"),
            CliArg("--scales", "the forward's scale per axis (default: dy's sizes over --output-sizes)", "str"),
            CliArg("--mode", "nearest_neighbor or linear (default nearest_neighbor)", "str"),
            CliArg("--input-offsets", "input pixel offset per axis (default 0.5)", "str"),
            CliArg("--output-offsets", "output pixel offset per axis (default -0.5)", "str"))
    if row.version == 1:
        args += (CliArg("--rounding", "decreasing or increasing (default decreasing)", "str"),)
    return args


def spec(row: Row) -> OpSpec:
    support = support_table(row.op, TENSORS, row.support)

    def infer(dy, *args, **kwargs):
        return _infer(row, dy, *args, **kwargs)

    def ref(dy, *args, **kwargs):
        return _reference(row, dy, *args, **kwargs)

    ref.__name__ = ref.__qualname__ = row.functional_name
    ref.__signature__ = _signature(row)
    ref.__doc__ = (f"{row.op} on numpy arrays ({row.functional_name}'s arguments): the forward's float64 weights "
                   f"transposed, summed in float64, rounded once to dy's type.")
    return OpSpec(
        name=row.op, key=row.key, desc=DESCS[row.key], support=support,
        infer_output=infer, validate=lambda d, level: validate(row, support, d, level),
        reference=ref, functional=signature_functional(_signature(row), row.functional_name, _functional_doc(row)),
        tensors=("dy",), arguments=lambda d: _arguments(row, d), planner=PLANNER,
        cli=Cli(_cli_args(row), _from_cli(row, infer), "--shape 1,16,64,64 --output-sizes 1,16,32,32 --mode linear"),
        page=f"DML_{row.op.upper().replace('RESAMPLEGRAD', 'RESAMPLE_GRAD')}_OPERATOR_DESC",
        tolerance=lambda e, i, a: _tolerance(row, e, i, a), sample=_sample,
    )


SPECS = tuple(spec(row) for row in TABLE)
__all__ = ["DESCS", "SPECS", "TABLE", "forward"]
