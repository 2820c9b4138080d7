"""DML_OPERATOR_BATCH_NORMALIZATION: Output = FusedActivation(Scale * ((Input - Mean) /
sqrt(Variance + Epsilon)) + Bias), an element-wise operator whose mean, variance, scale
and bias broadcast over the input: the element-wise family runs it (kernels/elementwise.py,
one kernel, the four parameters read with stride 0 where they broadcast; graphs fuse it with
the element-wise nodes around it). docs/operators/batch_normalization.md says the same for users.

A module of its own rather than a row of ops/elementwise/'s table, whose descriptions give
every tensor the output's sizes (a broadcast is a stride of 0): this page's description
broadcasts by sizes of 1 ("any dimension in MeanTensor, VarianceTensor, ScaleTensor and
BiasTensor can be set to 1"), its functional form takes DirectMLX's [C] as the channel axis
(not numpy's trailing-axis broadcasting), and it has `spatial`, a rule of its own. What it
shares with the table is imported from it: the fused activation, the documented precision's
machinery (a Row of its formula, not registered), the broadcast reads.

What the page says (sdk-api's DML_BATCH_NORMALIZATION_OPERATOR_DESC, the 11/2022 version), as
implemented:

- InputTensor, MeanTensor, VarianceTensor, ScaleTensor, BiasTensor and OutputTensor: one
  DataType (FLOAT32 or FLOAT16) and one DimensionCount (4 from FL 1.0, 1 to 8 from FL 3.1);
  the input and the output one set of Sizes; each size of the mean, variance, scale and bias
  1 (broadcast) or the input's. Every tensor is required (BiasTensor too: the page's newest
  version marks only FusedActivation _Maybenull_).
- Spatial (BOOL, default TRUE): FALSE requires the Width and Height dimensions (the last two
  axes, of a 4-D or wider input) of MeanTensor and VarianceTensor not to be broadcast (the
  input's sizes). The page: deprecated in FL 4.0, with no effect: from FL_4_0 on the rule
  does not apply, and the result never depends on it.
- Epsilon is a DirectML FLOAT (float32; any value: the page gives no rule; NaN and
  infinities are IEEE arithmetic's); FusedActivation an activation of the element-wise
  family's, applied to the result.

The functional form `batch_normalization(x, mean, variance, scale, bias, *, epsilon=1e-5,
fused_activation=None, spatial=True)` takes DirectMLX's shapes: a parameter of shape [C] (one
dimension, for an input of two or more) is per channel, axis 1 ([1, C, 1, 1] for NCHW); one
of the input's rank broadcasts where its size is 1 (fewer dimensions get leading 1s).

Precision (`tolerance`): FLOAT16 is read exactly into float32 and the result rounded once.
With t = scale (x - mean) / sqrt(variance + epsilon), every result is within 17 2^-24 |t|
(the subtraction and the sum correctly rounded, WGSL's sqrt inherited from 1 / inverseSqrt:
4.5 ULP, its division 2.5 ULP, the product) plus 0.5 ULP of the result (the bias's
addition), plus the subnormals an adapter may flush, the fused activation's error and how it
moves the result's, and float16's rounding of the result, of the float64 reference.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import InvalidArgumentError
from ..kernels.elementwise import Attribute, ElementWisePlanner, Problem
from ..tensor_desc import TensorDesc
from ..types import F16, F32, FeatureLevel
from .activations import FusedActivation, as_activation, as_float32
from .base import check_one_type
from .elementwise import Row, read_broadcast, tolerance_of
from .spec import Call, Cli, CliArg, OpSpec, support_table

OP = "BatchNormalization"
FL = FeatureLevel
FLOATS = frozenset({F32, F16})
PARAMETERS = ("mean_tensor", "variance_tensor", "scale_tensor", "bias_tensor")
TENSORS = ("input_tensor",) + PARAMETERS + ("output_tensor",)
SUPPORT = support_table(OP, TENSORS, [
    (FL.FL_3_1, (1, 8), FLOATS),
    (FL.FL_1_0, {4}, FLOATS),
])


@dataclass(frozen=True)
class BatchNormalizationOperatorDesc:
    """DML_BATCH_NORMALIZATION_OPERATOR_DESC: Output = FusedActivation(Scale * ((Input - Mean)
    / sqrt(Variance + Epsilon)) + Bias); mean, variance, scale and bias broadcast where their
    sizes are 1."""

    input_tensor: TensorDesc
    mean_tensor: TensorDesc
    variance_tensor: TensorDesc
    scale_tensor: TensorDesc
    bias_tensor: TensorDesc
    output_tensor: TensorDesc
    spatial: bool = True
    epsilon: float = 1e-5
    fused_activation: FusedActivation | None = None

    def __post_init__(self):
        if not isinstance(self.spatial, (bool, np.bool_)):
            raise InvalidArgumentError(f"{OP}: spatial must be True or False (a BOOL), got {self.spatial!r}")
        object.__setattr__(self, "spatial", bool(self.spatial))
        object.__setattr__(self, "epsilon", as_float32(self.epsilon, f"{OP}: epsilon"))
        object.__setattr__(self, "fused_activation",
                           FusedActivation.coerce(self.fused_activation, f"{OP}: fused_activation"))


def _normalize(x, mean, variance, scale, bias, epsilon):
    """The page's formula in float64."""
    return scale * ((x - mean) / np.sqrt(variance + epsilon)) + bias


#: The formula as a row of the element-wise table's kind (not registered): its precision goes
#: through the table's tolerance machinery (ops/elementwise/semantics.py: tolerance_of).
_ROW = Row("BATCH_NORMALIZATION", "batch_normalization", "batch_normalization", TENSORS[:-1],
           ((FL.FL_1_0, (1, 8), FLOATS),), _normalize,
           {"float": "d * ((a - b) / sqrt(c + u_epsilon)) + e"}, "batch_normalization_operator_desc.md",
           "scale (x - mean) / sqrt(variance + epsilon) + bias", ulps=0.5,
           absolute=lambda x, mean, variance, scale, bias, epsilon:
               17 * 2.0**-24 * np.abs(scale * ((x - mean) / np.sqrt(variance + epsilon))),
           precision="17 2^-24 |t| + 0.5 ULP, t = scale (x - mean) / sqrt(variance + epsilon) (the subtraction and "
                     "the sum, WGSL's sqrt (1 / inverseSqrt: 4.5 ULP) and division (2.5 ULP), the product; the bias's "
                     "addition)")


def validate(desc: BatchNormalizationOperatorDesc, level: FeatureLevel) -> None:
    """The page's rules (module docstring): valid tensors of one DimensionCount and DataType,
    the support row, the output the input's sizes, each parameter's sizes 1 or the input's;
    spatial FALSE below FL_4_0: the mean's and variance's last two sizes the input's."""
    rank = check_one_type(OP, SUPPORT, level, {f: getattr(desc, f) for f in TENSORS})
    sizes = desc.input_tensor.sizes
    if desc.output_tensor.sizes != sizes:
        raise InvalidArgumentError(f"{OP}: output_tensor.sizes {list(desc.output_tensor.sizes)} must equal "
                                   f"input_tensor.sizes {list(sizes)}")
    for field in PARAMETERS:
        own = getattr(desc, field).sizes
        for axis, (n, want) in enumerate(zip(own, sizes)):
            if n not in (1, want):
                raise InvalidArgumentError(
                    f"{OP}: {field}.sizes {list(own)} must be 1 (broadcast) or input_tensor's size on each axis: "
                    f"axis {axis} is {n}, input_tensor.sizes {list(sizes)}")
    if not desc.spatial and level < FL.FL_4_0 and rank >= 4:
        for field in ("mean_tensor", "variance_tensor"):
            own = getattr(desc, field).sizes
            if tuple(own[-2:]) != tuple(sizes[-2:]):
                raise InvalidArgumentError(
                    f"{OP}: spatial FALSE requires {field}'s Height and Width not to be broadcast at "
                    f"{FeatureLevel(level).name}: {field}.sizes {list(own)} must end in input_tensor's "
                    f"{list(sizes[-2:])} (spatial has no effect from FL_4_0 on)")


def problem(desc: BatchNormalizationOperatorDesc) -> Problem:
    """The element-wise kernel's problem: the parameters read at the input's sizes (stride 0
    where they broadcast), the formula over a (x), b (mean), c (variance), d (scale), e (bias)."""
    out = desc.output_tensor
    inputs = (desc.input_tensor,) + tuple(read_broadcast(getattr(desc, f), out.sizes) for f in PARAMETERS)
    fused = desc.fused_activation
    return Problem(OP, inputs, out, ("float",) * 5, "float", _ROW.wgsl["float"],
                   attributes=(Attribute("epsilon", "f32", desc.epsilon),),
                   activation=None if fused is None else as_activation(fused.row.wgsl["float"]),
                   activation_attributes=() if fused is None else tuple(
                       Attribute(k, "f32", v) for k, v in fused.attributes))


# ============================================================================ shapes, the reference
def parameter_shape(shape: tuple, rank: int) -> tuple:
    """A parameter's shape against an input of `rank`: [C] per channel (axis 1) for an input
    of two or more dimensions, else leading 1s (numpy's)."""
    if len(shape) == 1 and rank >= 2:
        return (1, shape[0]) + (1,) * (rank - 2)
    return (1,) * (rank - len(shape)) + tuple(shape)


def parameter_desc(td: TensorDesc, rank: int) -> TensorDesc:
    shape = parameter_shape(tuple(td.sizes), rank)
    if shape == tuple(td.sizes):
        return td
    strides = list(td.effective_strides)
    strides = [strides[0] if n != 1 else 0 for n in shape] if len(td.sizes) == 1 else \
        [0] * (rank - td.rank) + strides
    return TensorDesc(td.data_type, shape, strides, total_tensor_size_in_bytes=td.total_tensor_size_in_bytes)


def infer_output(x: TensorDesc, mean: TensorDesc, variance: TensorDesc, scale: TensorDesc, bias: TensorDesc, *,
                 epsilon=1e-5, fused_activation=None, spatial=True) -> BatchNormalizationOperatorDesc:
    """The desc of the functional call: the parameters at the input's rank (module docstring)."""
    params = [parameter_desc(td, x.rank) for td in (mean, variance, scale, bias)]
    return BatchNormalizationOperatorDesc(x, *params, TensorDesc(x.data_type, x.sizes), spatial=spatial,
                                          epsilon=epsilon, fused_activation=fused_activation)


def reference(x, mean, variance, scale, bias, *, epsilon=1e-5, fused_activation=None, spatial=True):
    """DML_BATCH_NORMALIZATION in numpy: the parameters broadcast as the functional form's
    (a [C] one per channel), computed in float64 and rounded once to x's type; `spatial` has
    no effect on the values."""
    x = np.asarray(x)
    params = [np.asarray(p).reshape(parameter_shape(np.shape(p), x.ndim)) for p in (mean, variance, scale, bias)]
    eps = as_float32(epsilon, "batch_normalization: epsilon")
    fused = FusedActivation.coerce(fused_activation)
    with np.errstate(all="ignore"):
        y = _normalize(x.astype(np.float64), *(p.astype(np.float64) for p in params), eps)
        if fused is not None:
            y = fused.row.numpy(y, **dict(fused.attributes))
        return np.asarray(y).astype(x.dtype)


_ROW_TOLERANCE = tolerance_of(_ROW)


def tolerance(expected, inputs, arguments: dict):
    """The documented precision (module docstring), per element; `arguments` as the
    functional form takes them (epsilon 1e-5 where it is left out)."""
    x = np.asarray(inputs[0])
    params = [np.asarray(p).reshape(parameter_shape(np.shape(p), x.ndim)) for p in inputs[1:]]
    return _ROW_TOLERANCE(expected, [x, *params],
                          {"epsilon": 1e-5, **{k: v for k, v in arguments.items() if k != "spatial"}})


def batch_normalization(x, mean, variance, scale, bias, *, epsilon=1e-5, fused_activation=None, spatial=True,
                        device=None):
    """DML_OPERATOR_BATCH_NORMALIZATION: fused_activation(scale (x - mean) / sqrt(variance +
    epsilon) + bias), FLOAT32 or FLOAT16 (computed in float32). mean, variance, scale and
    bias: [C] (per channel, axis 1: DirectMLX's [1, C, 1, 1]) or of x's rank, broadcast where
    a size is 1. `spatial` (deprecated by DirectML at FL 4.0): FALSE asks for the mean's and
    variance's Height and Width below FL 4.0; no effect on the values. Precision: 17 2^-24 |t|
    + 0.5 ULP, t = scale (x - mean) / sqrt(variance + epsilon)."""
    return Call([("x", x), ("mean", mean), ("variance", variance), ("scale", scale), ("bias", bias)],
                {"epsilon": epsilon, "fused_activation": fused_activation, "spatial": spatial}, device)


def arguments(desc: BatchNormalizationOperatorDesc) -> dict:
    return {"epsilon": desc.epsilon, "fused_activation": desc.fused_activation, "spatial": desc.spatial}


def _from_cli(x: TensorDesc, o: dict) -> BatchNormalizationOperatorDesc:
    """--shape is the input's (NCHW); the parameters per channel ([1, C, 1, 1]: axis 1, or the
    last axis of a 1-D input); --epsilon."""
    channels = x.sizes[1] if x.rank >= 2 else x.sizes[0]
    param = TensorDesc(x.data_type, [channels])
    epsilon = float(o["epsilon"]) if o.get("epsilon") is not None else 1e-5
    return infer_output(TensorDesc(x.data_type, x.sizes, x.strides), param, param, param, param, epsilon=epsilon)


def sample(desc: BatchNormalizationOperatorDesc, rng) -> list:
    """Inputs worth normalizing: x, mean, scale and bias uniform in [-2, 2], the variance in [0, 2]."""
    out = []
    for field in TENSORS[:-1]:
        td = getattr(desc, field)
        low = 0.0 if field == "variance_tensor" else -2.0
        out.append(rng.uniform(low, 2.0, td.required_elements).astype(td.data_type.numpy))
    return out


SPEC = OpSpec(
    name=OP, key="batch_normalization", desc=BatchNormalizationOperatorDesc, support=SUPPORT,
    infer_output=infer_output, validate=validate, reference=reference, functional=batch_normalization,
    tensors=("x", "mean", "variance", "scale", "bias"), arguments=arguments, planner=ElementWisePlanner(problem),
    cli=Cli((CliArg("--epsilon", "Epsilon (default 1e-5)", "number"),), _from_cli, "--shape 8,64,56,56"),
    page="DML_BATCH_NORMALIZATION_OPERATOR_DESC", tolerance=tolerance, sample=sample,
)

__all__ = ["BatchNormalizationOperatorDesc", "SPEC"]
