"""DML_OPERATOR_QUANTIZED_LINEAR_AVERAGE_POOLING (FL 6.2): average pooling of a quantized 8-bit
tensor, "mathematically equivalent to dequantizing the inputs, then performing average
pooling, and then quantizing the output" (the page). Its kernel walks the float pooling
family's window with the integer sum (kernels/pooling.py's QuantizedAveragePoolingFamily).
docs/operators/quantized_linear_average_pooling.md says the same for users.

What the page says (sdk-api's DML_QUANTIZED_LINEAR_AVERAGE_POOLING_OPERATOR_DESC, the 08/2024
version), as implemented:

- InputTensor { N, C, [D], H, W } (4-D or 5-D) INT8 or UINT8; OutputTensor of the same
  DimensionCount, INT8 or UINT8 (its own type), { N, C, spatial... } with spatial size
  (size + StartPadding + EndPadding - WindowSize) / Strides + 1 (the window dilated:
  (WindowSize - 1) Dilations + 1, as DML_AVERAGE_POOLING1; the page's formula leaves the
  dilation out, its Dilations field puts it in).
- InputScaleTensor, OutputScaleTensor FLOAT32; the optional zero points INT8 or UINT8 of
  their tensor's DataType; each one element ({1, 1, 1, 1}: per tensor) or C ({1, C, 1, 1}:
  per channel), 1 to 5 dimensions.
- dequantize f(x, s, z) = (x - z) s, quantize f(x, s, z) = clamp(round(x / s) + z, Min, Max);
  IncludePadding: the padding counts in the divisor (the window's element count), else only
  the input's positions do.

Where the page is silent, gpudml's choices (what the kernel computes exactly):

- q = round(v / d) + output_zero_point, saturated, where v = float32(sum of (x -
  input_zero_point) over the window's input positions) x input_scale (the integer sum exact,
  the product rounded once to float32) and d = float32(divisor) x output_scale (rounded
  once); round(v / d) is the exact quotient rounded half to even (QUANTIZE_LINEAR's
  rounding). The dequantized values' float sum of ONNX Runtime's CPU kernel rounds each term:
  the two differ where the mean lies within float32 rounding of a half.
- The float pooling rules (gpudml/ops/pooling.py): strides, windows and dilations of at
  least 1, the dilated window within the padded input, no window over padding only.
- Scales and zero points have the input's DimensionCount or 1 (the page allows 1 to 5
  without saying where C goes in the others): {1, C, 1...} or [C] per channel.
- Scales of 0, NaN or negative values are refused by the functional form (its arrays:
  InvalidArgumentError before any GPU work); the page calls a scale of 0 undefined.

Precision (`tolerance`): exact against the computation above; where the adapter flushes
subnormal float32 values (scales near 2^-126), the result of that computation.

The functional form `quantized_linear_average_pooling(x, x_scale, x_zero_point=None, *,
output_scale, output_zero_point=None, output_data_type=None, window_size=None, strides=None,
start_padding=None, end_padding=None, dilations=None, include_padding=False)`: window_size
None is global pooling (ONNX's QLinearGlobalAveragePool); per-axis arguments are lists or one
int for every axis; the output's type is the output zero point's, else output_data_type,
else x's.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import InvalidArgumentError
from ..kernels.base import ProblemPlanner
from ..kernels.pooling import QUANTIZED_AVERAGE, QuantizedAverage
from ..kernels.quantized import requantize_reference, scale_product
from ..tensor_desc import TensorDesc, as_int, as_int_tuple, check_window_fields
from ..types import F32, U8, DataType, FeatureLevel
from . import convolution_integer as ci
from . import pooling
from .quantized_linear_convolution import positive_scales
from .spec import Call, Cli, CliArg, OpSpec, random_buffer, support_table, tensor_fields

OP = "QuantizedLinearAveragePooling"
FN = "quantized_linear_average_pooling"
FL = FeatureLevel
TENSORS = ("input_tensor", "input_scale_tensor", "input_zero_point_tensor", "output_scale_tensor",
           "output_zero_point_tensor", "output_tensor")
SUPPORT = support_table(OP, TENSORS, [
    (FL.FL_6_2, {"input_tensor": (4, 5), "input_scale_tensor": (1, 5), "input_zero_point_tensor": (1, 5),
                 "output_scale_tensor": (1, 5), "output_zero_point_tensor": (1, 5), "output_tensor": (4, 5)},
     ci.INT8S, {F32}, ci.INT8S, {F32}, ci.INT8S, ci.INT8S),
])
ROLES = {"input_tensor": "x", "input_scale_tensor": "x_scale", "input_zero_point_tensor": "x_zero_point",
         "output_scale_tensor": "output_scale", "output_zero_point_tensor": "output_zero_point"}
TENSOR_NAMES = tuple(ROLES.values())
ARRAYS = ("strides", "window_size", "start_padding", "end_padding", "dilations")


@dataclass(frozen=True)
class QuantizedLinearAveragePoolingOperatorDesc:
    """DML_QUANTIZED_LINEAR_AVERAGE_POOLING_OPERATOR_DESC. The zero points are optional
    (None); `dimension_count` None: the input's DimensionCount - 2; `dilations` None: 1s,
    the paddings None: 0s."""

    input_tensor: TensorDesc
    input_scale_tensor: TensorDesc
    input_zero_point_tensor: TensorDesc | None
    output_scale_tensor: TensorDesc
    output_zero_point_tensor: TensorDesc | None
    output_tensor: TensorDesc
    dimension_count: int | None = None
    strides: tuple[int, ...] | None = None
    window_size: tuple[int, ...] | None = None
    start_padding: tuple[int, ...] | None = None
    end_padding: tuple[int, ...] | None = None
    dilations: tuple[int, ...] | None = None
    include_padding: bool = False
    OPTIONAL_TENSORS = ("input_zero_point_tensor", "output_zero_point_tensor")

    def __post_init__(self):
        set_ = object.__setattr__
        count = self.dimension_count
        if count is None:
            count = self.input_tensor.rank - 2 if isinstance(self.input_tensor, TensorDesc) else 0
        set_(self, "dimension_count", as_int(count, f"{OP}: dimension_count"))
        for name in ARRAYS:
            value = getattr(self, name)
            if value is None:
                value = [0 if name.endswith("padding") else 1] * max(0, self.dimension_count)
            set_(self, name, as_int_tuple(value, f"{OP}: {name}"))
        if not isinstance(self.include_padding, (bool, np.bool_)):
            raise InvalidArgumentError(f"{OP}: include_padding must be a bool, got {self.include_padding!r}")
        set_(self, "include_padding", bool(self.include_padding))


def validate(desc: QuantizedLinearAveragePoolingOperatorDesc, level: FeatureLevel) -> None:
    """The page's rules (module docstring): valid tensors (zero points optional), the support
    row, the input's and the output's DimensionCount, each zero point of its tensor's type,
    scales and zero points of one element or one per channel, DimensionCount = the spatial
    axes, the arrays, the windows and the output's sizes (gpudml/ops/pooling.py's rules)."""
    named = {f: getattr(desc, f) for f in TENSORS}
    rank = ci.check_tensors(OP, SUPPORT, level, named, ("input_tensor", "output_tensor"), desc.OPTIONAL_TENSORS)
    ci.check_same_type(OP, named, (("input_tensor", "input_zero_point_tensor"),
                                   ("output_tensor", "output_zero_point_tensor")))
    spatial = rank - 2
    if desc.dimension_count != spatial:
        raise InvalidArgumentError(f"{OP}: dimension_count = {desc.dimension_count} must be input_tensor's "
                                   f"DimensionCount - 2 = {spatial} (the spatial axes)")
    check_window_fields(OP, desc, ARRAYS, spatial, "dimension_count")
    channels = desc.input_tensor.sizes[1]
    for field in TENSORS[1:5]:
        ci.check_parameter(OP, field, named[field], channels, "ChannelCount", rank)
    pooling.check_windows(OP, desc, desc.input_tensor, desc.dilations, {"output_tensor": desc.output_tensor})


def problem(desc: QuantizedLinearAveragePoolingOperatorDesc) -> QuantizedAverage:
    tensors = tuple((role, getattr(desc, f)) for f, role in ROLES.items() if getattr(desc, f) is not None)
    return QuantizedAverage(OP, desc.input_tensor, desc.output_tensor, desc.window_size, desc.strides,
                            desc.start_padding, desc.dilations, desc.include_padding, tensors)


# ============================================================================ the functional form
def _per_axis(value, spatial: int, field: str, default: int) -> tuple[int, ...]:
    return pooling.per_axis(value, spatial, field, default, "quantized_linear_average_pooling")


def infer_output(*descs, given=None, output_data_type=None, window_size=None, strides=None, start_padding=None,
                 end_padding=None, dilations=None, include_padding=False,
                 **left_out) -> QuantizedLinearAveragePoolingOperatorDesc:
    """The desc of quantized_linear_average_pooling(...): window_size None is the input's
    spatial sizes (global pooling); the output's sizes by the page's formula, its type the
    output zero point's, else output_data_type, else x's; one-element scales and zero points
    take x's DimensionCount, [C] ones {1, C, 1...}."""
    t = ci.given_descs("quantized_linear_average_pooling", TENSOR_NAMES, descs, given, left_out)
    x = t["x"]
    spatial = max(0, x.rank - 2)
    window = tuple(x.sizes[2:]) if window_size is None else _per_axis(window_size, spatial, "window_size", 1)
    fields = {"strides": _per_axis(strides, spatial, "strides", 1), "window_size": window,
              "start_padding": _per_axis(start_padding, spatial, "start_padding", 0),
              "end_padding": _per_axis(end_padding, spatial, "end_padding", 0),
              "dilations": _per_axis(dilations, spatial, "dilations", 1)}
    out = list(x.sizes[:2])
    for i in range(spatial):
        try:
            out.append(max(1, pooling.output_size(x.sizes[i + 2], window[i], fields["strides"][i],
                                                  fields["start_padding"][i], fields["end_padding"][i],
                                                  fields["dilations"][i])))
        except (IndexError, ZeroDivisionError):
            out.append(1)
    zp = t.get("output_zero_point")
    out_type = zp.data_type if zp is not None else (
        DataType.parse(output_data_type, "quantized_linear_average_pooling: output_data_type")
        if output_data_type is not None else x.data_type)

    def param(name):
        return ci.channel_desc(ci.one_desc(t.get(name), x.rank), spatial)
    return QuantizedLinearAveragePoolingOperatorDesc(
        x, param("x_scale"), param("x_zero_point"), param("output_scale"), param("output_zero_point"),
        TensorDesc(out_type, out), dimension_count=spatial, include_padding=include_padding, **fields)


def quantized_linear_average_pooling(x, x_scale, x_zero_point=None, *, output_scale, output_zero_point=None,
                                     output_data_type=None, window_size=None, strides=None, start_padding=None,
                                     end_padding=None, dilations=None, include_padding=False, device=None):
    """DML_OPERATOR_QUANTIZED_LINEAR_AVERAGE_POOLING (FL 6.2) over the spatial axes of x ({N,
    C, [D], H, W}, INT8 or UINT8): each window's input elements dequantized with x_scale and
    x_zero_point (FLOAT32 and x's type; one element or [C]), averaged (include_padding: the
    padding counts in the divisor) and quantized with output_scale and output_zero_point
    (round half to even, saturating) to the output zero point's type (else
    output_data_type, else x's). window_size None: global pooling; strides, paddings and
    dilations per spatial axis (lists or one int). Scales must be positive."""
    tensors = [("x", x), ("x_scale", x_scale, positive_scales(FN, "x_scale"))]
    tensors += [("x_zero_point", x_zero_point, ci.as_array)] if x_zero_point is not None else []
    tensors += [("output_scale", output_scale,
                 positive_scales(FN, "output_scale"))]
    tensors += [("output_zero_point", output_zero_point, ci.as_array)] if output_zero_point is not None else []
    return Call(tensors, {"given": tuple(t[0] for t in tensors), "output_data_type": output_data_type,
                          "window_size": window_size, "strides": strides, "start_padding": start_padding,
                          "end_padding": end_padding, "dilations": dilations, "include_padding": include_padding},
                device)


def arguments(desc) -> dict:
    return {**ci.left_out(desc, ROLES), "output_data_type": desc.output_tensor.data_type.name,
            **{name: getattr(desc, name) for name in ARRAYS}, "include_padding": desc.include_padding}


# ============================================================================ the reference
def _channel(value, channels: int, spatial: int, dtype) -> np.ndarray | None:
    """A scale or zero point as an array [1, C or 1, 1...] (None stays None)."""
    if value is None:
        return None
    return ci.per_channel(np.asarray(value).astype(dtype), channels).reshape((1, -1) + (1,) * spatial)


def _sums(x, x_zero_point, window, strides, start_padding, end_padding, dilations, include_padding):
    """(the int sums of x - x_zero_point over each window's input positions, the divisors)."""
    x = np.asarray(x)
    spatial, channels = x.ndim - 2, x.shape[1]
    values, _, valid = pooling.window_elements(x, window, strides, start_padding, end_padding, dilations)
    z = _channel(x_zero_point, channels, spatial, np.int64)
    total = np.where(valid, values.astype(np.int64) - (0 if z is None else z[..., None]), 0).sum(axis=-1)
    count = valid.shape[-1] if include_padding else valid.sum(axis=-1)
    return total, np.broadcast_to(count, total.shape)


def _average(x, x_scale, x_zero_point, output_scale, output_zero_point, out_dtype, geometry, include_padding,
             flush: bool = False):
    """The module docstring's computation (kernels/quantized's requantization of the integer
    sum with the input scale, over the divisor times the output scale); with `flush`, subnormal
    float32 values as 0 (an adapter may flush them)."""
    x = np.asarray(x)
    spatial, channels = x.ndim - 2, x.shape[1]
    total, count = _sums(x, x_zero_point, *geometry, include_padding)
    ys = _channel(output_scale, channels, spatial, np.float32)
    with np.errstate(all="ignore"):
        den = scale_product(count.astype(np.float32), ys, flush)
    z = None if output_zero_point is None else _channel(output_zero_point, channels, spatial,
                                                        np.asarray(output_zero_point).dtype)
    return requantize_reference(total.astype(np.int32), _channel(x_scale, channels, spatial, np.float32), den, z,
                                out_dtype, flush)


def _geometry(x, window_size, strides, start_padding, end_padding, dilations) -> tuple:
    spatial = np.asarray(x).ndim - 2
    window = tuple(np.asarray(x).shape[2:]) if window_size is None else _per_axis(window_size, spatial,
                                                                                   "window_size", 1)
    return (window, _per_axis(strides, spatial, "strides", 1), _per_axis(start_padding, spatial, "start_padding", 0),
            _per_axis(end_padding, spatial, "end_padding", 0), _per_axis(dilations, spatial, "dilations", 1))


def _out_dtype(x, output_zero_point, output_data_type):
    if output_zero_point is not None:
        return np.asarray(output_zero_point).dtype
    if output_data_type is not None:
        return DataType.parse(output_data_type, "quantized_linear_average_pooling: output_data_type").numpy
    return np.asarray(x).dtype


def reference(x, x_scale, x_zero_point=None, *, output_scale, output_zero_point=None, output_data_type=None,
              window_size=None, strides=None, start_padding=None, end_padding=None, dilations=None,
              include_padding=False):
    """DML_OPERATOR_QUANTIZED_LINEAR_AVERAGE_POOLING on numpy arrays (the functional form's
    arguments): the module docstring's computation."""
    x = np.asarray(x)
    geometry = _geometry(x, window_size, strides, start_padding, end_padding, dilations)
    return _average(x, x_scale, x_zero_point, output_scale, output_zero_point,
                    _out_dtype(x, output_zero_point, output_data_type), geometry, include_padding)


reference.__name__ = reference.__qualname__ = "quantized_linear_average_pooling"


def _named(inputs) -> dict:
    """The reference's tensors by name from the given inputs in the desc's order: the FLOAT32
    scales split them (x, x_scale, [x_zero_point], output_scale, [output_zero_point])."""
    arrays = [np.asarray(a) for a in inputs]
    xs, ys = [i for i, a in enumerate(arrays) if a.dtype == np.float32]
    return {"x": arrays[0], "x_scale": arrays[xs], "x_zero_point": arrays[xs + 1] if ys - xs == 2 else None,
            "output_scale": arrays[ys], "output_zero_point": arrays[ys + 1] if len(arrays) > ys + 1 else None}


def tolerance(expected, inputs, arguments: dict):
    """Exact, but where the adapter flushes subnormal float32 values: per element, the
    difference flushing makes (module docstring)."""
    t = _named(inputs)
    x = t["x"]
    geometry = _geometry(x, *(arguments.get(k) for k in ("window_size", "strides", "start_padding", "end_padding",
                                                         "dilations")))
    include = bool(arguments.get("include_padding", False))
    out = np.asarray(expected).dtype
    q = [_average(x, t["x_scale"], t["x_zero_point"], t["output_scale"], t["output_zero_point"], out, geometry,
                  include, flush).astype(np.int64) for flush in (False, True)]
    return np.abs(q[0] - q[1]).astype(np.float64)


def sample(desc, rng) -> list:
    """Random bits for the 8-bit tensors; positive scales: the input's 2^-6 to 2^-2, the
    output's (0.5 to 2) x the input's (a scale's typical ratio: averages spread over the
    output's range)."""
    out = []
    for field, td in tensor_fields(desc)[0]:
        if td.data_type == F32:
            n = td.required_elements
            low = -6 if field == "input_scale_tensor" else -7
            out.append((2.0 ** rng.uniform(low, low + 4, n)).astype(np.float32))
        else:
            out.append(random_buffer(td, rng))
    return out


# ============================================================================ the command line
def _from_cli(x: TensorDesc, o: dict) -> QuantizedLinearAveragePoolingOperatorDesc:
    """--shape is the input's ({N, C, spatial...}, --dtype INT8 or UINT8); one-element scales
    and zero points; --window (default: global), --strides, --pads (start = end),
    --include-padding yes/no."""
    x = x if x.data_type in ci.INT8S else TensorDesc(U8, x.sizes, x.strides)  # (--dtype: INT8 or UINT8; default UINT8)
    one = [1] * x.rank
    pads = o.get("pads")
    return infer_output(x, TensorDesc(F32, one), TensorDesc(x.data_type, one), TensorDesc(F32, one),
                        TensorDesc(x.data_type, one), window_size=o.get("window"), strides=o.get("strides"),
                        start_padding=pads, end_padding=pads,
                        include_padding=(o.get("include_padding") or "no").lower() in ("yes", "true", "1"))


SPEC = OpSpec(
    name=OP, key="quantized_linear_average_pooling", desc=QuantizedLinearAveragePoolingOperatorDesc,
    support=SUPPORT, infer_output=infer_output, validate=validate,
    reference=reference, functional=quantized_linear_average_pooling, tensors=TENSOR_NAMES, arguments=arguments,
    planner=ProblemPlanner(problem, QUANTIZED_AVERAGE),
    cli=Cli((CliArg("--window", "the window per spatial axis (default: the input's spatial sizes: global)"),
             CliArg("--strides", "strides per spatial axis (default 1)"),
             CliArg("--pads", "start and end padding per spatial axis (default 0)"),
             CliArg("--include-padding", "yes: the padding counts in the divisor", "str")),
            _from_cli, "--shape 1,8,8,8 --dtype UINT8 --window 3,3 --strides 2,2 --pads 1,1"),
    page="DML_QUANTIZED_LINEAR_AVERAGE_POOLING_OPERATOR_DESC", tolerance=tolerance, sample=sample,
)
