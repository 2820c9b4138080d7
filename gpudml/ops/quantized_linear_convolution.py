"""DML_OPERATOR_QUANTIZED_LINEAR_CONVOLUTION: a FORWARD convolution of quantized 8-bit tensors,
"mathematically equivalent to dequantizing the inputs, convolving, and then quantizing the
output" (the page): the integer convolution of DML_CONVOLUTION_INTEGER
(gpudml/ops/convolution_integer.py: zero points subtracted, int32 sums) plus the int32 bias,
requantized in the kernel's store (kernels/convolution.py's IntegerConvolutionFamily).
docs/operators/quantized_linear_convolution.md says the same for users.

What the page says (sdk-api's DML_QUANTIZED_LINEAR_CONVOLUTION_OPERATOR_DESC, the 11/2020
version), as implemented:

- Every tensor 4-D (FL 2.1): InputTensor { N, C_in, H, W } and FilterTensor { C_out, C_in /
  GroupCount, FH, FW }, INT8 or UINT8 (each its own); InputScaleTensor, OutputScaleTensor {1,
  1, 1, 1} FLOAT32; FilterScaleTensor FLOAT32 {1, 1, 1, 1} (per tensor) or {1, C_out, 1, 1}
  (per channel); the optional zero points INT8 or UINT8 of their tensor's DataType, the
  input's and the output's one element, the filter's one or C_out; the optional BiasTensor
  INT32 {1, C_out, 1, 1}; OutputTensor INT8 or UINT8 { N, C_out, OH, OW }.
- dequantize f(x, s, z) = (x - z) s, quantize f(x, s, z) = clamp(round(x / s) + z, Min, Max).
- The geometry (strides, dilations, paddings, groups, the output's sizes) is the FORWARD
  convolution's (gpudml/ops/convolution.py's check_geometry).

Where the page is silent, gpudml's choices (ONNX's QLinearConv, which DirectML's execution
provider maps to this operator, and what the kernels compute exactly):

- The padding holds the input's zero point (adds 0), the bias is in the products' scale
  (input scale x filter scale, zero point 0: ONNX's QLinearConv) and is added to the int32
  sum, all int32 arithmetic (wrapping modulo 2^32).
- The requantization: r = float32(acc) (acc rounded to nearest even) x float32(input_scale x
  filter_scale[co]) (each product rounded once to float32), then q = round(r /
  output_scale) (the exact quotient, rounded half to even: QUANTIZE_LINEAR's rounding, NaN
  to 0, +-inf saturating), plus the output zero point, saturated to the output type's range.
  ONNX's reference multiplies acc by x_scale w_scale / y_scale in one float32 factor; the
  two differ where r / output_scale lies within float32 rounding of a half: the ONNX node
  tests pass either way (tests/test_onnx_nodes.py).
- Scales of 0, NaN or negative values: DirectML calls a scale of 0 undefined; gpudml's
  functional form refuses such scales given as arrays (InvalidArgumentError naming the field,
  the rule and the values, before any GPU work); a device-resident scale is not read back.
- Per-channel tensors: {1, C_out, 1, 1} or [C_out] (the input's DimensionCount or 1).

Precision (`tolerance`): exact against the computation above; where the adapter flushes
subnormal float32 values (WGSL allows it: scales near 2^-126), the result of that
computation: per element, the largest difference those make.

The functional form `quantized_linear_convolution(x, x_scale, x_zero_point=None, *, filter,
filter_scale, filter_zero_point=None, bias=None, output_scale, output_zero_point=None,
output_data_type=None, strides=None, dilations=None, start_padding=None, end_padding=None,
group_count=1)`: the output's type is the output zero point's, else `output_data_type`, else
x's; scales and zero points may be scalars or one-element arrays, the filter's and the bias
[C_out].
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import InvalidArgumentError
from ..kernels.base import ProblemPlanner
from ..kernels.convolution import INTEGER_FAMILY, IntegerConvolution
from ..kernels.quantized import checked_scale, requantize_reference, scale_product
from ..tensor_desc import TensorDesc
from ..types import F32, I32, U8, DataType, FeatureLevel
from . import convolution_integer as ci
from .spec import Call, Cli, OpSpec, random_buffer, support_table, tensor_fields

OP = "QuantizedLinearConvolution"
FN = "quantized_linear_convolution"
FL = FeatureLevel
INT8S = ci.INT8S
TENSORS = ("input_tensor", "input_scale_tensor", "input_zero_point_tensor", "filter_tensor", "filter_scale_tensor",
           "filter_zero_point_tensor", "bias_tensor", "output_scale_tensor", "output_zero_point_tensor",
           "output_tensor")
SUPPORT = support_table(OP, TENSORS, [
    (FL.FL_2_1, {4}, INT8S, {F32}, INT8S, INT8S, {F32}, INT8S, {I32}, {F32}, INT8S, INT8S),
])
ROLES = {"input_tensor": "x", "input_scale_tensor": "x_scale", "input_zero_point_tensor": "x_zero_point",
         "filter_tensor": "filter", "filter_scale_tensor": "filter_scale",
         "filter_zero_point_tensor": "filter_zero_point", "bias_tensor": "bias", "output_scale_tensor": "output_scale",
         "output_zero_point_tensor": "output_zero_point"}


@dataclass(frozen=True)
class QuantizedLinearConvolutionOperatorDesc:
    """DML_QUANTIZED_LINEAR_CONVOLUTION_OPERATOR_DESC. The zero points and the bias are
    optional (None); `dimension_count` None: the input's DimensionCount - 2; the arrays None:
    strides and dilations of 1, paddings of 0."""

    input_tensor: TensorDesc
    input_scale_tensor: TensorDesc
    input_zero_point_tensor: TensorDesc | None
    filter_tensor: TensorDesc
    filter_scale_tensor: TensorDesc
    filter_zero_point_tensor: TensorDesc | None
    bias_tensor: TensorDesc | None
    output_scale_tensor: TensorDesc
    output_zero_point_tensor: TensorDesc | None
    output_tensor: TensorDesc
    dimension_count: int | None = None
    strides: tuple[int, ...] | None = None
    dilations: tuple[int, ...] | None = None
    start_padding: tuple[int, ...] | None = None
    end_padding: tuple[int, ...] | None = None
    group_count: int = 1
    OPTIONAL_TENSORS = ("input_zero_point_tensor", "filter_zero_point_tensor", "bias_tensor",
                        "output_zero_point_tensor")

    def __post_init__(self):
        ci.normalize_geometry(self, OP)


def validate(desc: QuantizedLinearConvolutionOperatorDesc, level: FeatureLevel) -> None:
    """The page's rules (module docstring): valid tensors (zero points and bias optional), the
    support row (every tensor 4-D), each zero point of its tensor's type, the input's and the
    output's scale and zero point one element, the filter's and the bias one or C_out (the
    bias: C_out), the convolution's geometry."""
    named = {f: getattr(desc, f) for f in TENSORS}
    rank = ci.check_tensors(OP, SUPPORT, level, named, ("input_tensor", "filter_tensor", "output_tensor"),
                            desc.OPTIONAL_TENSORS)
    ci.check_same_type(OP, named, (("input_tensor", "input_zero_point_tensor"),
                                   ("filter_tensor", "filter_zero_point_tensor"),
                                   ("output_tensor", "output_zero_point_tensor")))
    channels = ci.float_convolution.check_geometry(OP, desc, rank)
    for field in ("input_scale_tensor", "input_zero_point_tensor", "output_scale_tensor", "output_zero_point_tensor"):
        ci.check_parameter(OP, field, named[field], None, "", rank)
    for field in ("filter_scale_tensor", "filter_zero_point_tensor"):
        ci.check_parameter(OP, field, named[field], channels, "OutputChannelCount", rank)
    bias = desc.bias_tensor
    if bias is not None and (list(bias.sizes) != [1, channels, 1, 1]):
        raise InvalidArgumentError(f"{OP}: bias_tensor.sizes {list(bias.sizes)} must be [1, {channels}, 1, 1] "
                                   f"({{1, OutputChannelCount, 1, 1}})")


def problem(desc: QuantizedLinearConvolutionOperatorDesc) -> IntegerConvolution:
    return ci.integer_convolution_of(OP, desc, ROLES, quantized=True)


# ============================================================================ the functional form
def _out_type(output_zero_point: TensorDesc | None, output_data_type, x: TensorDesc) -> DataType:
    if output_zero_point is not None:
        return output_zero_point.data_type
    if output_data_type is not None:
        return DataType.parse(output_data_type, "quantized_linear_convolution: output_data_type")
    return x.data_type


TENSOR_NAMES = tuple(ROLES.values())


def infer_output(*descs, given=None, output_data_type=None, strides=None, dilations=None, start_padding=None,
                 end_padding=None, group_count=1, **left_out) -> QuantizedLinearConvolutionOperatorDesc:
    """The desc of quantized_linear_convolution(...): the output of the FORWARD sizes, of the
    output zero point's type (else output_data_type, else x's); one-element scales and zero
    points take x's DimensionCount, the filter's and the bias' [C_out] {1, C_out, 1, 1}."""
    t = ci.given_descs("quantized_linear_convolution", TENSOR_NAMES, descs, given, left_out)
    x, filter = t["x"], t["filter"]  # noqa: A001
    attrs = ci.geometry(x, strides, dilations, start_padding, end_padding, group_count,
                        "quantized_linear_convolution")
    rank, spatial = x.rank, attrs["dimension_count"]
    out = ci.output_desc(x, filter, attrs, _out_type(t.get("output_zero_point"), output_data_type, x))

    def one(name):
        return ci.one_desc(t.get(name), rank)

    def channel(name):
        return ci.channel_desc(ci.one_desc(t.get(name), rank), spatial)
    return QuantizedLinearConvolutionOperatorDesc(
        x, one("x_scale"), one("x_zero_point"), filter, channel("filter_scale"), channel("filter_zero_point"),
        channel("bias"), one("output_scale"), one("output_zero_point"), out, **attrs)


def positive_scales(where: str, field: str):
    """A functional form's convert for a scale argument: kernels/quantized's checked_scale
    (InvalidArgumentError where a value is 0, negative, NaN or infinite, before any GPU work),
    a scalar as one element."""
    check = checked_scale(where, field)
    return lambda value: ci.as_array(check(value))


def quantized_linear_convolution(x, x_scale, x_zero_point=None, *, filter, filter_scale,  # noqa: A002
                                 filter_zero_point=None, bias=None, output_scale, output_zero_point=None,
                                 output_data_type=None, strides=None, dilations=None, start_padding=None,
                                 end_padding=None, group_count=1, device=None):
    """DML_OPERATOR_QUANTIZED_LINEAR_CONVOLUTION over the spatial axes of x ({N, C_in, H, W},
    INT8 or UINT8): x and filter ({C_out, C_in / group_count, FH, FW}, INT8 or UINT8)
    dequantized with their FLOAT32 scales and zero points (the filter's per tensor or per
    output channel: [C_out]), convolved (the int32 sum plus the INT32 bias [C_out]) and
    quantized with output_scale and output_zero_point (round half to even, saturating) to the
    output zero point's type (else output_data_type, else x's); strides, dilations, paddings
    (holding x's zero point), group_count as convolution's. Scales must be positive."""
    tensors = [("x", x), ("x_scale", x_scale, positive_scales(FN, "x_scale"))]
    tensors += [("x_zero_point", x_zero_point, ci.as_array)] if x_zero_point is not None else []
    tensors += [("filter", filter),
                ("filter_scale", filter_scale, positive_scales(FN, "filter_scale"))]
    tensors += [("filter_zero_point", filter_zero_point, ci.as_array)] if filter_zero_point is not None else []
    tensors += [("bias", bias, ci.as_array)] if bias is not None else []
    tensors += [("output_scale", output_scale, positive_scales(FN, "output_scale"))]
    tensors += [("output_zero_point", output_zero_point, ci.as_array)] if output_zero_point is not None else []
    return Call(tensors, {"given": tuple(t[0] for t in tensors), "output_data_type": output_data_type,
                          "strides": strides, "dilations": dilations,
                          "start_padding": start_padding, "end_padding": end_padding, "group_count": group_count},
                device)


def arguments(desc) -> dict:
    return {**ci.left_out(desc, ROLES), "output_data_type": desc.output_tensor.data_type.name,
            **ci.geometry_arguments(desc)}


# ============================================================================ the reference
def _parts(x, x_scale, x_zero_point, filter, filter_scale, filter_zero_point, bias, strides, dilations,  # noqa: A002
           start_padding, end_padding, group_count):
    """(the int32 sums with the bias, x's scale, the filter's scales per channel [1, C_out, 1, 1])."""
    acc = ci.integer_sums(x, x_zero_point, filter, filter_zero_point, strides, dilations, start_padding,
                          end_padding, group_count)
    cout = np.asarray(filter).shape[0]
    if bias is not None:
        acc = acc + ci.per_channel(bias, cout).astype(np.int64).reshape((1, -1) + (1,) * (acc.ndim - 2))
    xs = np.asarray(x_scale, np.float32).reshape(-1)[:1]
    ws = ci.per_channel(np.asarray(filter_scale, np.float32), cout).reshape((1, -1) + (1,) * (acc.ndim - 2))
    return ci.wrap32(acc), xs, ws


def requantized(acc, xs, ws, output_scale, output_zero_point, dtype, flush: bool = False) -> np.ndarray:
    """The module docstring's requantization (kernels/quantized's numpy twin of the kernel's):
    acc times the float32 scale product, divided by the output scale, rounded, shifted, clamped;
    with `flush`, subnormal float32 values as 0 (an adapter may flush them)."""
    ys = np.asarray(output_scale, np.float32).reshape(-1)[:1].reshape(())
    zp = None if output_zero_point is None else np.asarray(output_zero_point).reshape(-1)[:1].reshape(())
    return requantize_reference(acc, scale_product(xs, ws, flush), ys, zp, dtype, flush)


def _out_dtype(x, output_zero_point, output_data_type):
    if output_zero_point is not None:
        return np.asarray(output_zero_point).dtype
    if output_data_type is not None:
        return DataType.parse(output_data_type, "quantized_linear_convolution: output_data_type").numpy
    return np.asarray(x).dtype


def reference(x, x_scale, x_zero_point=None, *, filter, filter_scale, filter_zero_point=None,  # noqa: A002
              bias=None, output_scale, output_zero_point=None, output_data_type=None, strides=None,
              dilations=None, start_padding=None, end_padding=None, group_count=1):
    """DML_OPERATOR_QUANTIZED_LINEAR_CONVOLUTION on numpy arrays (the functional form's
    arguments): the int32 sums plus the bias, requantized (module docstring)."""
    parts = _parts(x, x_scale, x_zero_point, filter, filter_scale, filter_zero_point, bias, strides, dilations,
                   start_padding, end_padding, group_count)
    return requantized(*parts, output_scale, output_zero_point, _out_dtype(x, output_zero_point, output_data_type))


reference.__name__ = reference.__qualname__ = "quantized_linear_convolution"


def _named(inputs) -> dict:
    """The reference's tensor arguments by name from the given inputs in the desc's order (the
    optional ones left out): the FLOAT32 scales split them (x, x_scale, [x_zero_point],
    filter, filter_scale, [filter_zero_point (8-bit)], [bias (INT32)], output_scale,
    [output_zero_point])."""
    arrays = [np.asarray(a) for a in inputs]
    cuts = [i for i, a in enumerate(arrays) if a.dtype == np.float32]
    xs, fs, ys = cuts
    named = {"x": arrays[0], "x_scale": arrays[xs], "x_zero_point": arrays[xs + 1] if fs - xs == 3 else None,
             "filter": arrays[fs - 1], "filter_scale": arrays[fs], "filter_zero_point": None, "bias": None,
             "output_scale": arrays[ys], "output_zero_point": arrays[ys + 1] if len(arrays) > ys + 1 else None}
    for a in arrays[fs + 1:ys]:
        named["bias" if a.dtype == np.int32 else "filter_zero_point"] = a
    return named


def tolerance(expected, inputs, arguments: dict):
    """Exact, but where the adapter flushes subnormal float32 values: per element, the
    difference flushing makes (module docstring)."""
    named = _named(inputs)
    geometry = {k: arguments.get(k) for k in ("strides", "dilations", "start_padding", "end_padding")}
    parts = _parts(named["x"], named["x_scale"], named["x_zero_point"], named["filter"], named["filter_scale"],
                   named["filter_zero_point"], named["bias"], group_count=arguments.get("group_count", 1), **geometry)
    out = np.asarray(expected).dtype
    plain, flushed = (requantized(*parts, named["output_scale"], named["output_zero_point"], out, f).astype(np.int64)
                      for f in (False, True))
    return np.abs(plain - flushed).astype(np.float64)


# ============================================================================ the command line
def _from_cli(x: TensorDesc, o: dict) -> QuantizedLinearConvolutionOperatorDesc:
    """--shape is the input's ({N, C_in, H, W}, --dtype INT8 or UINT8); a filter of x's type,
    one-element scales and zero points, per-channel filter scales, an INT32 bias."""
    x = x if x.data_type in ci.INT8S else TensorDesc(U8, x.sizes, x.strides)  # (--dtype: INT8 or UINT8; default UINT8)
    f, groups = ci.filter_desc(x, o, x.data_type)
    one = [1] * x.rank
    pads = o.get("pads")
    cout = f.sizes[0]
    return infer_output(x, TensorDesc(F32, one), TensorDesc(x.data_type, one), f,
                        TensorDesc(F32, [cout]), TensorDesc(x.data_type, one), TensorDesc(I32, [cout]),
                        TensorDesc(F32, one), TensorDesc(x.data_type, one), strides=o.get("strides"),
                        dilations=o.get("dilations"), start_padding=pads, end_padding=pads, group_count=groups)


def sample(desc, rng) -> list:
    """Random bits for the 8-bit tensors, a bias of 13 bits; positive scales: the input's and
    the filter's 2^-6 to 2^-2, the output's (0.25 to 1) sqrt(K) (K the reduction's length:
    the requantized sums spread over the output's range rather than saturate)."""
    out = []
    k = int(np.prod(desc.filter_tensor.sizes[1:]))
    for field, td in tensor_fields(desc)[0]:
        if td.data_type == F32:
            n = td.required_elements
            if field == "output_scale_tensor":
                values = rng.uniform(0.25, 1.0, n) * np.sqrt(k)
            else:
                values = 2.0 ** rng.uniform(-6, -2, n)
            out.append(values.astype(np.float32))
        elif field == "bias_tensor":
            out.append(rng.integers(-(2**12), 2**12, td.required_elements).astype(np.int32))
        else:
            out.append(random_buffer(td, rng))
    return out


SPEC = OpSpec(
    name=OP, key="quantized_linear_convolution", desc=QuantizedLinearConvolutionOperatorDesc, support=SUPPORT,
    infer_output=infer_output, validate=validate,
    reference=reference, functional=quantized_linear_convolution,
    tensors=("x", "x_scale", "x_zero_point", "filter", "filter_scale", "filter_zero_point", "bias", "output_scale",
             "output_zero_point"),
    arguments=arguments, planner=ProblemPlanner(problem, INTEGER_FAMILY),
    cli=Cli(ci.CLI_ARGS, _from_cli, "--shape 1,8,8,8 --dtype UINT8 --channels 8 --window 3,3 --pads 1,1"),
    page="DML_QUANTIZED_LINEAR_CONVOLUTION_OPERATOR_DESC", tolerance=tolerance, sample=sample,
)
