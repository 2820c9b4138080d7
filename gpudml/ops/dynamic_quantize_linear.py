"""DML_OPERATOR_DYNAMIC_QUANTIZE_LINEAR (FL 4.0): the scale and zero point that quantize the
whole input into INT8 or UINT8, and the input quantized by them (ONNX's
DynamicQuantizeLinear, which ONNX Runtime's DirectML provider runs as this operator). A
composite (kernels/dynamic_quantize_linear.py) in 2 dispatches (3 for inputs the reduction
cuts into chunks): one MIN_MAX reduction of the reduction family over every axis (the least
and greatest values in one pass; its last stage writes the scale and the zero point), then
QUANTIZE's element-wise kernel.

What the page says (sdk-api's DML_DYNAMIC_QUANTIZE_LINEAR_OPERATOR_DESC, 07/2021), as
implemented: InputTensor FLOAT32 or FLOAT16; OutputTensor and OutputZeroPointTensor INT8 or
UINT8, one DataType; OutputScaleTensor FLOAT32; every tensor one DimensionCount (1 to 8);
OutputScaleTensor and OutputZeroPointTensor hold one element; OutputTensor has the input's
sizes. Its formula:

    scale = (max - min) / (qmax - qmin)          (qmin, qmax: 0, 255 for UINT8; -128, 127 for INT8)
    zero_point = qmin - min / scale, rounded and saturated
    y = clamp(round(x / scale) + zero_point, qmin, qmax)

Where the page is silent, ONNX's definition (DynamicQuantizeLinear): min and max include 0
(min = min(0, min(x)), max = max(0, max(x)): 0 is always exactly representable); scale in
float32 ((max - min) rounded, then / 255 correctly rounded: bit-exact against numpy's
float32); rounding half to even. x / scale and min / scale are decided on the exact quotient
(as QUANTIZE_LINEAR's: the float32 quotient ONNX's reference rounds first can differ from it
only where that quotient lands within half a float32 ULP of a tie). An input of zeros gives
scale 0, zero point qmin and y = qmin (0 / 0 quantizes to 0). A NaN input makes min or max
NaN (as REDUCE's MIN/MAX), so scale NaN, zero point qmin and y = qmin; an infinite one makes
scale +inf, y = zero point. FLOAT16 inputs are read exactly into float32.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import InvalidArgumentError
from ..kernels.dynamic_quantize_linear import DynamicQuantize, planner
from ..tensor_desc import TensorDesc, check_same_rank, check_tensor_desc
from ..types import F16, F32, I8, U8, DataType, FeatureLevel, QuantizationType
from . import quantize as quantize_op
from .spec import Call, Cli, CliArg, OpSpec, support_table

OP = "DynamicQuantizeLinear"
FL = FeatureLevel
OUT_TYPES = frozenset({I8, U8})
SUPPORT = support_table(OP, ("input_tensor", "output_tensor", "output_scale_tensor", "output_zero_point_tensor"), [
    (FL.FL_4_0, (1, 8), {F32, F16}, OUT_TYPES, {F32}, OUT_TYPES),
])


@dataclass(frozen=True)
class DynamicQuantizeLinearOperatorDesc:
    """DML_DYNAMIC_QUANTIZE_LINEAR_OPERATOR_DESC: the input, the quantized output, its scale
    and its zero point (one element each), in DirectML's field order."""

    OUTPUT_TENSORS = ("output_tensor", "output_scale_tensor", "output_zero_point_tensor")

    input_tensor: TensorDesc
    output_tensor: TensorDesc
    output_scale_tensor: TensorDesc
    output_zero_point_tensor: TensorDesc


def infer_output(input_tensor: TensorDesc, *, dtype="uint8") -> DynamicQuantizeLinearOperatorDesc:
    """The desc of the functional call: the output x's sizes of type `dtype`, the scale and
    zero point one element at x's rank."""
    out = DataType.parse(dtype, "dynamic_quantize_linear: dtype")
    one = [1] * input_tensor.rank
    return DynamicQuantizeLinearOperatorDesc(input_tensor, TensorDesc(out, input_tensor.sizes),
                                             TensorDesc(F32, one), TensorDesc(out, one))


def validate(desc: DynamicQuantizeLinearOperatorDesc, feature_level: FeatureLevel) -> None:
    """The page's rules (module docstring), each error naming the field, the rule and the values."""
    named = {f: getattr(desc, f) for f in ("input_tensor", "output_tensor", "output_scale_tensor",
                                            "output_zero_point_tensor")}
    for field, td in named.items():
        check_tensor_desc(OP, field, td, is_output=field != "input_tensor")
    rank = check_same_rank(OP, named)
    SUPPORT.check(feature_level, rank, {f: td.data_type for f, td in named.items()})
    inp, out, zero = desc.input_tensor, desc.output_tensor, desc.output_zero_point_tensor
    if out.sizes != inp.sizes:
        raise InvalidArgumentError(f"{OP}: output_tensor.sizes {list(out.sizes)} must equal input_tensor.sizes "
                                   f"{list(inp.sizes)}")
    if zero.data_type != out.data_type:
        raise InvalidArgumentError(f"{OP}: output_zero_point_tensor.data_type {zero.data_type.name} must be "
                                   f"output_tensor's, {out.data_type.name} (the page's rule)")
    for field in ("output_scale_tensor", "output_zero_point_tensor"):
        td = named[field]
        if td.element_count != 1:
            raise InvalidArgumentError(f"{OP}: {field} must hold one element (the page: its expected number of "
                                       f"elements is 1); its sizes are {list(td.sizes)}")


def problem(desc: DynamicQuantizeLinearOperatorDesc) -> DynamicQuantize:
    """The composite's problem: the last step is QUANTIZE's element-wise kernel over x, the
    scale and the zero point (read broadcast)."""
    q = quantize_op.QuantizeOperatorDesc(desc.input_tensor, QuantizationType.SCALE_ZERO_POINT,
                                         (desc.output_scale_tensor, desc.output_zero_point_tensor),
                                         desc.output_tensor)
    return DynamicQuantize(desc.input_tensor, desc.output_tensor, desc.output_scale_tensor,
                           desc.output_zero_point_tensor, quantize_op.problem(q))


def reference(x, *, dtype="uint8") -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """ONNX's DynamicQuantizeLinear in numpy (the module docstring's choices): (y, scale,
    zero_point), the scale and zero point of one element at x's rank."""
    x = np.asarray(x)
    out = np.dtype(DataType.parse(dtype, "dtype").numpy)
    qmin, qmax = (-128, 127) if out == np.int8 else (0, 255)
    f32 = np.float32
    with np.errstate(all="ignore"):
        lo = np.minimum(f32(0), np.min(x).astype(f32))
        hi = np.maximum(f32(0), np.max(x).astype(f32))
        scale = f32(hi - lo) / f32(qmax - qmin)
        if np.isnan(scale) or scale == 0:
            zero = qmin
        else:
            z = f32(qmin) + f32(-lo) / scale  # (float32 operations, each rounded to nearest even)
            zero = qmax if not z < qmax else int(np.clip(np.rint(z), qmin, qmax))
    shape = (1,) * x.ndim
    scale_arr = np.full(shape, scale, np.float32)
    zero_arr = np.full(shape, zero, out)
    y = quantize_op.quantize_reference(x, scale_arr, zero_arr, out.name)
    return y, scale_arr, zero_arr


def dynamic_quantize_linear(x, *, dtype="uint8", device=None):
    """DML_OPERATOR_DYNAMIC_QUANTIZE_LINEAR: (y, scale, zero_point) quantizing all of x
    (FLOAT32 or FLOAT16) into `dtype` (UINT8, ONNX's, or INT8) as ONNX's DynamicQuantizeLinear:
    scale = (max(0, max x) - min(0, min x)) / 255 in float32, zero_point = qmin - min / scale
    rounded half to even and saturated, y = clamp(round(x / scale) + zero_point); the scale
    (FLOAT32) and zero point one element each at x's rank. Bit-exact."""
    return Call([("x", x)], {"dtype": dtype}, device)


def arguments(desc: DynamicQuantizeLinearOperatorDesc) -> dict:
    return {"dtype": desc.output_tensor.data_type.name}


def sample(desc: DynamicQuantizeLinearOperatorDesc, rng: np.random.Generator) -> list[np.ndarray]:
    """x of moderate values, now and then all of one sign or all zeros."""
    inp = desc.input_tensor
    x = rng.standard_normal(inp.required_elements) * rng.choice([0.01, 1.0, 100.0])
    how = rng.integers(0, 6)
    if how == 0:
        x = np.abs(x)
    elif how == 1:
        x = -np.abs(x)
    elif how == 2:
        x = np.zeros_like(x)
    return [x.astype(inp.data_type.numpy)]


def _from_cli(x: TensorDesc, o: dict) -> DynamicQuantizeLinearOperatorDesc:
    return infer_output(TensorDesc(x.data_type, x.sizes, x.strides), dtype=o.get("output_type") or "UINT8")


SPEC = OpSpec(
    name=OP, key="dynamic_quantize_linear", desc=DynamicQuantizeLinearOperatorDesc, support=SUPPORT,
    infer_output=infer_output, validate=validate, reference=reference, functional=dynamic_quantize_linear,
    tensors=("x",), arguments=arguments, planner=planner(problem),
    cli=Cli((CliArg("--output-type", "the output's type, UINT8 or INT8 (default UINT8)", "str"),),
            _from_cli, "--shape 128,768 --output-type UINT8"),
    page="DML_DYNAMIC_QUANTIZE_LINEAR_OPERATOR_DESC", sample=sample,
)

__all__ = ["OP", "SPEC", "DynamicQuantizeLinearOperatorDesc"]
