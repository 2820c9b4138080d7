"""DML_OPERATOR_VALUE_SCALE_2D: Output = Scale * Input + Bias[c], an element-wise scale and
a bias per channel over a 4-D NCHW tensor, the scale and the biases DirectML FLOATs of the
description (not tensors). Its kernel is the value-scale family's (kernels/value_scale.py:
the element-wise family's formulas read no per-channel constants), one dispatch whose store
takes a graph's element-wise consumers (the store epilogue).

What the page says (sdk-api's DML_VALUE_SCALE_2D_OPERATOR_DESC, the 11/2020 version), as
implemented:

- InputTensor and OutputTensor: 4-D, one DataType (FLOAT32 or FLOAT16, from FL 1.0), the
  same Sizes; each its own strides (a stride 0 broadcasts the input).
- Scale: a DirectML FLOAT (float32), any value (the page gives no rule).
- ChannelCount: a UINT, the length of Bias; "must be set to either 1 or 3, and must also
  match the size of the Channel dimension of the input tensor" (input_tensor.sizes[1]).
- Bias: ChannelCount FLOATs (float32), one per channel.

The page prints no example. The functional form `value_scale_2d(x, scale=1.0, bias=None)`
takes the biases as a sequence of numbers (None: zeros, one per channel of x).

Precision (`tolerance`): FLOAT16 is read exactly into float32 and the result rounded once.
Every result is within 2^-24 |scale x| (the product's rounding, where the adapter does not
fuse the multiply-add) plus 0.5 ULP of the result (the bias's addition), plus the subnormals
an adapter may flush and float16's rounding of the result, of the float64 reference.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import InvalidArgumentError
from ..kernels.base import ProblemPlanner
from ..kernels.value_scale import FAMILY, ValueScale
from ..tensor_desc import TensorDesc, as_int
from ..types import F16, F32, FeatureLevel
from .base import check_copy_tensors
from .elementwise import Attr, Row, as_float32, tolerance_of
from .spec import Call, Cli, CliArg, OpSpec, support_table

OP = "ValueScale2d"
FL = FeatureLevel
FLOATS = frozenset({F32, F16})
SUPPORT = support_table(OP, ("input_tensor", "output_tensor"), [(FL.FL_1_0, {4}, FLOATS)])
#: The channel counts the page allows.
CHANNEL_COUNTS = (1, 3)


def _bias_tuple(values, field: str) -> tuple[float, ...]:
    """A sequence of DirectML FLOATs (float32), as a tuple; InvalidArgumentError naming the
    field for anything else."""
    if isinstance(values, (str, bytes)) or np.ndim(values) != 1:
        raise InvalidArgumentError(f"{field}: expected a sequence of numbers (DirectML FLOATs), got {values!r}")
    return tuple(as_float32(v, f"{field}[{i}]") for i, v in enumerate(list(values)))


@dataclass(frozen=True)
class ValueScale2dOperatorDesc:
    """DML_VALUE_SCALE_2D_OPERATOR_DESC: Output = Scale * Input + Bias[c] over a 4-D NCHW
    tensor; `bias` holds `channel_count` (1 or 3) FLOATs."""

    input_tensor: TensorDesc
    output_tensor: TensorDesc
    scale: float
    channel_count: int
    bias: tuple[float, ...]

    def __post_init__(self):
        object.__setattr__(self, "scale", as_float32(self.scale, f"{OP}: scale"))
        object.__setattr__(self, "channel_count", as_int(self.channel_count, f"{OP}: channel_count"))
        object.__setattr__(self, "bias", _bias_tuple(self.bias, f"{OP}: bias"))


def _value_scale(x, bias, scale):
    """The page's formula in float64 (bias broadcast per channel)."""
    return scale * x + bias


#: The formula as a row of the element-wise table's kind (not registered): its precision goes
#: through the table's tolerance machinery (ops/elementwise/semantics.py: tolerance_of), the
#: bias an input of shape [1, C, 1, 1].
_ROW = Row("VALUE_SCALE_2D", "value_scale_2d", "value_scale_2d", ("input_tensor", "bias"),
           ((FL.FL_1_0, {4}, FLOATS),), _value_scale, {"float": "u_scale * a + b"},
           "value_scale_2d_operator_desc.md", "scale x + bias[c]", attributes=(Attr("scale", 1.0),),
           ulps=0.5, absolute=lambda x, bias, scale: 2.0**-24 * np.abs(scale * x),
           precision="2^-24 |scale x| + 0.5 ULP (the product's and the sum's roundings)")
_ROW_TOLERANCE = tolerance_of(_ROW)


def infer_output(input_tensor: TensorDesc, *, scale=1.0, bias=None) -> ValueScale2dOperatorDesc:
    """The desc of the functional call: the output the input's shape; channel_count the
    length of `bias` (None: zeros, one per channel of a 4-D input)."""
    if bias is None:
        bias = (0.0,) * (input_tensor.sizes[1] if input_tensor.rank >= 2 else 1)
    bias = _bias_tuple(bias, "value_scale_2d: bias")
    return ValueScale2dOperatorDesc(input_tensor, TensorDesc(input_tensor.data_type, input_tensor.sizes),
                                    scale, len(bias), bias)


def validate(desc: ValueScale2dOperatorDesc, feature_level: FeatureLevel) -> None:
    """The page's rules (module docstring): both tensors valid, 4-D, one type, the support
    row, one set of sizes; channel_count 1 or 3, input_tensor.sizes[1] and len(bias)."""
    inp, out = desc.input_tensor, desc.output_tensor
    check_copy_tensors(OP, SUPPORT, feature_level, inp, out)
    if out.sizes != inp.sizes:
        raise InvalidArgumentError(f"{OP}: output_tensor.sizes {list(out.sizes)} must equal "
                                   f"input_tensor.sizes {list(inp.sizes)}")
    n = desc.channel_count
    if n not in CHANNEL_COUNTS:
        raise InvalidArgumentError(f"{OP}: channel_count = {n} must be 1 or 3 (the page's rule)")
    if inp.sizes[1] != n:
        raise InvalidArgumentError(f"{OP}: channel_count = {n} must equal input_tensor.sizes[1] (the channels) = "
                                   f"{inp.sizes[1]} (input_tensor.sizes {list(inp.sizes)})")
    if len(desc.bias) != n:
        raise InvalidArgumentError(f"{OP}: bias holds {len(desc.bias)} values; it must hold channel_count = {n}")


def problem(desc: ValueScale2dOperatorDesc) -> ValueScale:
    return ValueScale(OP, desc.input_tensor, desc.output_tensor, desc.scale, desc.bias)


def _bias_array(x: np.ndarray, bias) -> np.ndarray:
    if bias is None:
        return np.zeros((1, x.shape[1], 1, 1))
    b = np.asarray(_bias_tuple(bias, "value_scale_2d: bias"), np.float64)
    if x.ndim != 4 or b.size != x.shape[1]:
        raise ValueError(f"bias holds {b.size} values; x (shape {x.shape}) must be 4-D with as many channels")
    return b.reshape(1, -1, 1, 1)


def reference(x, scale=1.0, bias=None) -> np.ndarray:
    """DML_VALUE_SCALE_2D in numpy: scale * x + bias[c] in float64 (the float32 values of
    scale and bias, bias broadcast over axis 1), rounded once to x's type."""
    x = np.asarray(x)
    if x.ndim != 4:
        raise ValueError(f"x must have 4 dimensions, got {x.ndim}")
    b = _bias_array(x, bias)
    s = as_float32(scale, "value_scale_2d: scale")
    with np.errstate(all="ignore"):
        out = np.asarray(_value_scale(x.astype(np.float64), b, s)).astype(x.dtype)
    if out.dtype == np.float16:  # the kernel's float16 store (lib/numeric f32_to_f16_bits): NaN as sign | 0x7E00
        bits = out.view(np.uint16)
        nan = np.isnan(out)
        bits[nan] = (bits[nan] & 0x8000) | 0x7E00
    return out


def tolerance(expected, inputs, arguments: dict):
    """The documented precision (module docstring), per element."""
    x = np.asarray(inputs[0])
    b = _bias_array(x, arguments.get("bias"))
    return _ROW_TOLERANCE(expected, [x, b], {"scale": as_float32(arguments.get("scale", 1.0), "scale")})


def value_scale_2d(x, scale=1.0, bias=None, *, device=None):
    """DML_OPERATOR_VALUE_SCALE_2D: scale * x + bias[c] over a 4-D NCHW x (FLOAT32 or FLOAT16,
    computed in float32), one bias per channel: `bias` a sequence of 1 or 3 numbers (DirectML
    allows those channel counts), x's channel count long (None: zeros). Precision:
    2^-24 |scale x| + 0.5 ULP."""
    return Call([("x", x)], {"scale": scale, "bias": bias}, device)


def arguments(desc: ValueScale2dOperatorDesc) -> dict:
    return {"scale": desc.scale, "bias": desc.bias}


def _from_cli(x: TensorDesc, o: dict) -> ValueScale2dOperatorDesc:
    """--scale (default 1); --bias, comma-separated (default 0.5 per channel)."""
    scale = float(o["scale"]) if o.get("scale") is not None else 1.0
    if o.get("bias"):
        try:
            bias = tuple(float(v) for v in str(o["bias"]).split(","))
        except ValueError:
            raise InvalidArgumentError(f"value_scale_2d: --bias {o['bias']!r}: expected comma-separated numbers") \
                from None
    else:
        bias = (0.5,) * (x.sizes[1] if x.rank >= 2 else 1)
    return infer_output(TensorDesc(x.data_type, x.sizes, x.strides), scale=scale, bias=bias)


SPEC = OpSpec(
    name=OP, key="value_scale_2d", desc=ValueScale2dOperatorDesc, support=SUPPORT,
    infer_output=infer_output, validate=validate, reference=reference, functional=value_scale_2d,
    tensors=("x",), arguments=arguments, planner=ProblemPlanner(problem, FAMILY),
    cli=Cli((CliArg("--scale", "Scale (default 1)", "number"),
             CliArg("--bias", "Bias, one per channel, comma-separated (default 0.5 each)", "str")),
            _from_cli, "--shape 8,3,224,224 --scale 0.0078125 --bias -1,-0.5,0.25"),
    page="DML_VALUE_SCALE_2D_OPERATOR_DESC", tolerance=tolerance,
)

__all__ = ["SPEC", "ValueScale2dOperatorDesc"]
