"""Batch normalization for training: DML_OPERATOR_BATCH_NORMALIZATION_TRAINING (FL 4_1,
`dml.batch_normalization_training`), DML_OPERATOR_BATCH_NORMALIZATION_GRAD (FL 3_1,
`dml.batch_normalization_grad`) and DML_OPERATOR_BATCH_NORMALIZATION_TRAINING_GRAD (FL 4_1,
`dml.batch_normalization_training_grad`). The normalization family runs all three
(kernels/normalization.py): the training forward pass is its MEAN_VARIANCE (the two-pass
mean and variance, Chan's merge of chunks, the lanes' butterfly) with a FusedAdd and the
row's mean and variance stored as outputs 1 and 2; the gradients its BN_GRAD
(shaders/batch_normalization_grad.wgsl.j2): sum(dy) and sum(dy (x - mean)) in one pass, then
the input gradient. Every strategy of the family (rows, chunks, workgroup), deterministic
(each sum in a fixed order, no atomics). docs/operators/batch_normalization_training.md says
the same for users.

What the pages say (sdk-api, the 07/2022 pages of the training operators, the 07/2021 page of
BATCH_NORMALIZATION_GRAD), as implemented:

- BATCH_NORMALIZATION_TRAINING: Output = FusedActivation(Scale * ((Input - Mean) /
  sqrt(Variance + Epsilon)) + Bias + FusedAdd); Mean and Variance "computed on the input
  across the set of dimensions for which ScaleTensor and BiasTensor sizes equal one" and
  written to OutputMeanTensor and OutputVarianceTensor. Each size of Scale 1 or the input's;
  Bias, OutputMean and OutputVariance the Scale's sizes; FusedAdd (optional) and Output the
  input's. Every tensor one DataType (FLOAT32 or FLOAT16) and one DimensionCount (1 to 8).
- BATCH_NORMALIZATION_GRAD (FL 3_1) and BATCH_NORMALIZATION_TRAINING_GRAD (FL 4_1): inputs
  Input, InputGradient (the input's sizes), Mean, Variance, Scale (each size 1 or the
  input's, one set of sizes); outputs OutputGradient (the input's sizes), OutputScaleGradient
  = sum(InputGradient * (Input - Mean) / sqrt(Variance + Epsilon)) and OutputBiasGradient =
  sum(InputGradient) (the Mean's sizes), the sums "across the set of dimensions for which
  MeanTensor, ScaleTensor and VarianceTensor sizes equal one". GRAD's OutputGradient =
  InputGradient * Scale / sqrt(Variance + Epsilon); TRAINING_GRAD's = Scale * Coef0 *
  (InputGradientCentered - InputCentered * mean(Coef1) / (Variance + Epsilon)), Coef0 = 1 /
  sqrt(Variance + Epsilon), Coef1 = InputGradient * (Input - mean(Input)),
  InputGradientCentered = InputGradient - mean(InputGradient). One DataType and
  DimensionCount (1 to 8) for every tensor.

What gpudml decides where the pages are silent (documented, tested):

- The reduced axes are those where the Scale's (the gradients': the Mean's) size is 1; where
  the input's size is 1 too the axis reduces one element either way. A parameter of the
  input's sizes on every axis reduces nothing: each "row" is one element (its variance 0).
- The variance is the population variance (divided by the count n), as ONNX's
  BatchNormalization's training mode and DirectML's MVN; computed in two passes (not E[x^2]
  - mean^2).
- A batch of one element per channel is accepted (no page forbids it): the variance is 0,
  the output Bias + FusedAdd (activated) where Epsilon > 0; with Epsilon 0 the division by 0
  is IEEE arithmetic's.
- Epsilon must be finite and >= 0 (InvalidArgumentError naming the field and the value),
  as the MVN operators' (ops/normalization.py: check_epsilon).
- FusedAdd is added after the bias, before the activation (the page's formula).
- TRAINING_GRAD's "mean(Input)" is MeanTensor (the page's MeanTensor: "the same tensor that
  was returned ... in the forward pass"; its InputCentered line, "InputCentered =
  InputCentered - mean(InputCentered)", is read as Input - Mean): OutputGradient = Scale r
  (dy - mean(dy) - (x - Mean) mean(dy (x - Mean)) r^2), r = 1 / sqrt(Variance + Epsilon),
  the means over a row's n elements; the scale and bias gradients are GRAD's.
- The functional forms take DirectMLX's shapes, as dml.batch_normalization's: a parameter of
  shape [C] (one dimension, for an input of two or more) is per channel (axis 1), one of the
  input's rank broadcasts where its size is 1, fewer dimensions get leading 1s. The outputs
  of a parameter's sizes come at the input's rank ([1, C, 1, 1] for [C] of an NCHW input).

Precision (`tolerance`), against the float64 reference, u = 2^-24, all in f32 (float16
read exactly; each result rounded once to float16: 1 ULP of float16 more), D(n) = 136 + 2
ceil(n / 64) roundings per term of a sum of a row's n elements at most (subtotals of 64,
chunks merged in order: ops/softmax.py's rounding_depth):

- TRAINING: the output as MEAN_VARIANCE_NORMALIZATION1's (ops/normalization.py: the mean
  within dm = D u mean|x| + 2u |m|, the variance within dv = (D + 6) u v + dx^2 + 4 sqrt(v)
  dx, dx = (D + 2) u max|x|, the normalized value within (dm + u |x - m|) r + |(x - m) r|
  (rel_r + u), scale, bias and FusedAdd one rounding each, 1.01 of that), the activation
  moving it as its function does; OutputMean within dm, OutputVariance within 1.01 (dv + u v),
  each plus 0.5 ULP of its type. Any value where the variance is lost in its own rounding
  (dv >= (v + eps) / 2: a constant row with epsilon 0).
- GRAD and TRAINING_GRAD, with r's relative error rel_r = 5u (the sum, inverseSqrt's 2 ULP):
  sum(dy) within e1 = D u sum|dy|; sum(dy (x - mean)) within e2 = (D + 2) u sum|dy||x - mean|;
  the scale gradient within e2 r + |s2 r| (rel_r + u); the input gradient: GRAD's within
  |dx| (rel_r + 2u), TRAINING_GRAD's within |scale| r (e1 / n + u |m1| + |x - mean| (e2 / n
  r^2 + |m2r| (2 rel_r + 3u)) + u |dy - m1| + 2u |x - mean| |m2r| + u |inner|) + |dx| (rel_r
  + 2u) (m1 = mean(dy), m2r = mean(dy (x - mean)) r^2, inner = dy - m1 - (x - mean) m2r); 1.01
  of each, plus 0.5 ULP of its type.
- Everywhere: the subnormals an adapter may flush (2^-126), and any value where a sum may
  overflow float32 or the result is within its error of the output type's largest value.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..errors import InvalidArgumentError
from ..kernels.base import ProblemPlanner
from ..kernels.elementwise import Attribute
from ..kernels.normalization import STATISTICS_FAMILY, Problem
from ..tensor_desc import TensorDesc
from ..types import F16, F32, FeatureLevel
from .activations import FusedActivation, as_activation, as_float32
from .base import check_one_type
from .batch_normalization import parameter_desc, parameter_shape
from .normalization import TINY, UNIT, check_epsilon, finish_error, moments_error, normalized_error
from .softmax import rounding_depth
from .spec import Call, Cli, CliArg, OpSpec, support_table

TRAINING, GRAD, TRAINING_GRAD = "BatchNormalizationTraining", "BatchNormalizationGrad", "BatchNormalizationTrainingGrad"
FL = FeatureLevel
FLOATS = frozenset({F32, F16})
TRAINING_TENSORS = ("input_tensor", "scale_tensor", "bias_tensor", "fused_add_tensor", "output_tensor",
                    "output_mean_tensor", "output_variance_tensor")
GRAD_TENSORS = ("input_tensor", "input_gradient_tensor", "mean_tensor", "variance_tensor", "scale_tensor",
                "output_gradient_tensor", "output_scale_gradient_tensor", "output_bias_gradient_tensor")
TRAINING_SUPPORT = support_table(TRAINING, TRAINING_TENSORS, [(FL.FL_4_1, (1, 8), FLOATS)])
GRAD_SUPPORT = support_table(GRAD, GRAD_TENSORS, [(FL.FL_3_1, (1, 8), FLOATS)])
TRAINING_GRAD_SUPPORT = support_table(TRAINING_GRAD, GRAD_TENSORS, [(FL.FL_4_1, (1, 8), FLOATS)])
#: inverseSqrt(v + eps)'s relative error (the sum's rounding, 0.25u; inverseSqrt's 2 ULP, 4u at most).
REL_R = 5 * UNIT
_F32_MAX = float(np.finfo(np.float32).max)


# ============================================================================ the descriptions
@dataclass(frozen=True)
class BatchNormalizationTrainingOperatorDesc:
    """DML_BATCH_NORMALIZATION_TRAINING_OPERATOR_DESC (FL_4_1): Output = FusedActivation(Scale *
    ((Input - Mean) / sqrt(Variance + Epsilon)) + Bias + FusedAdd), Mean and Variance over the
    axes where Scale's size is 1, written to OutputMean and OutputVariance. `fused_add_tensor`
    is optional (None)."""

    input_tensor: TensorDesc
    scale_tensor: TensorDesc
    bias_tensor: TensorDesc
    fused_add_tensor: TensorDesc | None
    output_tensor: TensorDesc
    output_mean_tensor: TensorDesc
    output_variance_tensor: TensorDesc
    epsilon: float = 1e-5
    fused_activation: FusedActivation | None = None
    #: Tensor fields that may be None (the conformance kit never breaks them into None).
    OPTIONAL_TENSORS = ("fused_add_tensor",)

    def __post_init__(self):
        object.__setattr__(self, "epsilon", as_float32(self.epsilon, f"{TRAINING}: epsilon"))
        object.__setattr__(self, "fused_activation",
                           FusedActivation.coerce(self.fused_activation, f"{TRAINING}: fused_activation"))


@dataclass(frozen=True)
class _GradFields:
    input_tensor: TensorDesc
    input_gradient_tensor: TensorDesc
    mean_tensor: TensorDesc
    variance_tensor: TensorDesc
    scale_tensor: TensorDesc
    output_gradient_tensor: TensorDesc
    output_scale_gradient_tensor: TensorDesc
    output_bias_gradient_tensor: TensorDesc
    epsilon: float = 1e-5

    def __post_init__(self):
        object.__setattr__(self, "epsilon", as_float32(self.epsilon, f"{self.OP}: epsilon"))


@dataclass(frozen=True)
class BatchNormalizationGradOperatorDesc(_GradFields):
    """DML_BATCH_NORMALIZATION_GRAD_OPERATOR_DESC (FL_3_1): OutputGradient = InputGradient *
    Scale / sqrt(Variance + Epsilon); OutputScaleGradient = sum(InputGradient * (Input - Mean) /
    sqrt(Variance + Epsilon)), OutputBiasGradient = sum(InputGradient) over the axes where the
    Mean's size is 1."""

    OP = GRAD


@dataclass(frozen=True)
class BatchNormalizationTrainingGradOperatorDesc(_GradFields):
    """DML_BATCH_NORMALIZATION_TRAINING_GRAD_OPERATOR_DESC (FL_4_1): GRAD's scale and bias
    gradients; OutputGradient = Scale r (dy - mean(dy) - (x - Mean) mean(dy (x - Mean)) r^2),
    r = 1 / sqrt(Variance + Epsilon), the means over the axes where the Mean's size is 1."""

    OP = TRAINING_GRAD


# ============================================================================ validation
def _check_sizes(op: str, field: str, td: TensorDesc | None, want, rule: str) -> None:
    if td is not None and tuple(td.sizes) != tuple(want):
        raise InvalidArgumentError(f"{op}: {field}.sizes {list(td.sizes)} must equal {rule} {list(want)}")


def _check_broadcast(op: str, field: str, td: TensorDesc, sizes) -> None:
    for axis, (n, want) in enumerate(zip(td.sizes, sizes)):
        if n not in (1, want):
            raise InvalidArgumentError(
                f"{op}: {field}.sizes {list(td.sizes)} must be 1 (broadcast) or input_tensor's size on each axis: "
                f"axis {axis} is {n}, input_tensor.sizes {list(sizes)}")


def validate_training(desc: BatchNormalizationTrainingOperatorDesc, level: FeatureLevel) -> None:
    """The page's rules (module docstring): valid tensors of one DimensionCount and DataType
    (FusedAdd optional), the support row, Scale's sizes 1 or the input's, Bias, OutputMean and
    OutputVariance the Scale's sizes, FusedAdd and Output the input's; epsilon finite, >= 0."""
    check_one_type(TRAINING, TRAINING_SUPPORT, level, {f: getattr(desc, f) for f in TRAINING_TENSORS},
                   ("fused_add_tensor",))
    sizes = desc.input_tensor.sizes
    _check_broadcast(TRAINING, "scale_tensor", desc.scale_tensor, sizes)
    for field in ("bias_tensor", "output_mean_tensor", "output_variance_tensor"):
        _check_sizes(TRAINING, field, getattr(desc, field), desc.scale_tensor.sizes, "scale_tensor.sizes")
    for field in ("fused_add_tensor", "output_tensor"):
        _check_sizes(TRAINING, field, getattr(desc, field), sizes, "input_tensor.sizes")
    check_epsilon(TRAINING, desc.epsilon)


def _validate_grad(op: str, support):
    def validate(desc, level: FeatureLevel) -> None:
        """The page's rules (module docstring): valid tensors of one DimensionCount and
        DataType, the support row, InputGradient and OutputGradient the input's sizes, Mean's
        sizes 1 or the input's, Variance, Scale and the scale and bias gradients the Mean's
        sizes; epsilon finite, >= 0."""
        check_one_type(op, support, level, {f: getattr(desc, f) for f in GRAD_TENSORS})
        sizes = desc.input_tensor.sizes
        for field in ("input_gradient_tensor", "output_gradient_tensor"):
            _check_sizes(op, field, getattr(desc, field), sizes, "input_tensor.sizes")
        _check_broadcast(op, "mean_tensor", desc.mean_tensor, sizes)
        for field in ("variance_tensor", "scale_tensor", "output_scale_gradient_tensor",
                      "output_bias_gradient_tensor"):
            _check_sizes(op, field, getattr(desc, field), desc.mean_tensor.sizes, "mean_tensor.sizes")
        check_epsilon(op, desc.epsilon)
    return validate


# ============================================================================ the kernels' problems
def _over(td: TensorDesc, sizes) -> TensorDesc:
    """`td` (sizes 1 or `sizes`) described over `sizes`: stride 0 where it broadcasts."""
    strides = [0 if n == 1 and s != 1 else st for n, s, st in zip(td.sizes, sizes, td.effective_strides)]
    return TensorDesc(td.data_type, sizes, strides, total_tensor_size_in_bytes=td.total_tensor_size_in_bytes)


def reduced_axes(parameter_sizes, sizes) -> tuple[int, ...]:
    """The axes a batch normalization reduces: where the parameter's size is 1 (and the
    input's is not: a size-1 axis reduces one element either way)."""
    return tuple(a for a, (n, s) in enumerate(zip(parameter_sizes, sizes)) if n == 1 and s != 1)


def training_problem(desc: BatchNormalizationTrainingOperatorDesc) -> Problem:
    inp = desc.input_tensor
    fused = desc.fused_activation
    activation = None if fused is None else as_activation(fused.row.wgsl["float"])
    attributes = () if fused is None else tuple(Attribute(k, "f32", v) for k, v in fused.attributes)
    more = () if desc.fused_add_tensor is None else (("add", desc.fused_add_tensor),)
    return Problem(TRAINING, "MEAN_VARIANCE", inp, desc.output_tensor,
                   reduced_axes(desc.scale_tensor.sizes, inp.sizes), _over(desc.scale_tensor, inp.sizes),
                   _over(desc.bias_tensor, inp.sizes), True, desc.epsilon, 2, activation, attributes,
                   more=more, stats=(_over(desc.output_mean_tensor, inp.sizes),
                                     _over(desc.output_variance_tensor, inp.sizes)))


def grad_problem(desc) -> Problem:
    inp = desc.input_tensor
    more = (("grad", desc.input_gradient_tensor),) + tuple(
        (t, _over(getattr(desc, f), inp.sizes))
        for t, f in (("mean", "mean_tensor"), ("variance", "variance_tensor"), ("scale", "scale_tensor")))
    return Problem(desc.OP, "BN_GRAD", inp, desc.output_gradient_tensor,
                   reduced_axes(desc.mean_tensor.sizes, inp.sizes), epsilon=desc.epsilon, more=more,
                   stats=(_over(desc.output_scale_gradient_tensor, inp.sizes),
                          _over(desc.output_bias_gradient_tensor, inp.sizes)),
                   training=isinstance(desc, BatchNormalizationTrainingGradOperatorDesc))


# ============================================================================ the functional forms
def training_infer(x: TensorDesc, scale: TensorDesc, bias: TensorDesc, fused_add: TensorDesc | None = None, *,
                   epsilon=1e-5, fused_activation=None) -> BatchNormalizationTrainingOperatorDesc:
    """The desc of the functional call: scale and bias at the input's rank (a [C] one per
    channel), the mean and variance of the scale's sizes."""
    scale, bias = (parameter_desc(td, x.rank) for td in (scale, bias))
    stat = TensorDesc(x.data_type, scale.sizes)
    return BatchNormalizationTrainingOperatorDesc(x, scale, bias, fused_add, TensorDesc(x.data_type, x.sizes), stat,
                                                  stat, epsilon=epsilon, fused_activation=fused_activation)


def _grad_infer(cls):
    def infer(x: TensorDesc, input_gradient: TensorDesc, mean: TensorDesc, variance: TensorDesc, scale: TensorDesc,
              *, epsilon=1e-5):
        """The desc of the functional call: mean, variance and scale at the input's rank (a
        [C] one per channel), the scale and bias gradients of the mean's sizes."""
        mean, variance, scale = (parameter_desc(td, x.rank) for td in (mean, variance, scale))
        stat = TensorDesc(x.data_type, mean.sizes)
        return cls(x, input_gradient, mean, variance, scale, TensorDesc(x.data_type, x.sizes), stat, stat,
                   epsilon=epsilon)
    return infer


def batch_normalization_training(x, scale, bias, *, fused_add=None, epsilon=1e-5, fused_activation=None,
                                 device=None):
    """DML_OPERATOR_BATCH_NORMALIZATION_TRAINING (FL 4.1): (output, mean, variance), the mean
    and (population) variance of x over the axes where scale's size is 1, output =
    fused_activation(scale (x - mean) / sqrt(variance + epsilon) + bias + fused_add).
    FLOAT32 or FLOAT16 (computed in float32). scale and bias: [C] (per channel, axis 1:
    [1, C, 1, 1] for NCHW) or of x's rank, a size 1 reduced and broadcast; fused_add
    (optional) of x's shape. mean and variance come at x's rank with scale's sizes."""
    tensors = [("x", x), ("scale", scale), ("bias", bias)] + ([("fused_add", fused_add)] if fused_add is not None
                                                              else [])
    return Call(tensors, {"epsilon": epsilon, "fused_activation": fused_activation}, device)


def batch_normalization_grad(x, input_gradient, mean, variance, scale, *, epsilon=1e-5, device=None):
    """DML_OPERATOR_BATCH_NORMALIZATION_GRAD (FL 3.1): (output_gradient, scale_gradient,
    bias_gradient): input_gradient * scale / sqrt(variance + epsilon), sum(input_gradient (x
    - mean)) / sqrt(variance + epsilon) and sum(input_gradient) over the axes where mean's
    size is 1. mean, variance and scale: [C] (per channel, axis 1) or of x's rank."""
    return Call([("x", x), ("input_gradient", input_gradient), ("mean", mean), ("variance", variance),
                 ("scale", scale)], {"epsilon": epsilon}, device)


def batch_normalization_training_grad(x, input_gradient, mean, variance, scale, *, epsilon=1e-5, device=None):
    """DML_OPERATOR_BATCH_NORMALIZATION_TRAINING_GRAD (FL 4.1): (output_gradient,
    scale_gradient, bias_gradient) of batch_normalization_training's output with respect to
    x, scale and bias, given its mean and variance: scale r (dy - mean(dy) - (x - mean)
    mean(dy (x - mean)) r^2), r = 1 / sqrt(variance + epsilon), and batch_normalization_grad's
    scale and bias gradients."""
    return Call([("x", x), ("input_gradient", input_gradient), ("mean", mean), ("variance", variance),
                 ("scale", scale)], {"epsilon": epsilon}, device)


def _training_arguments(desc) -> dict:
    return {"epsilon": desc.epsilon, "fused_activation": desc.fused_activation}


def _grad_arguments(desc) -> dict:
    return {"epsilon": desc.epsilon}


# ============================================================================ the references
def _params(x: np.ndarray, params) -> list[np.ndarray]:
    """The parameters as float64 arrays of x's rank (the functional form's shapes)."""
    with np.errstate(all="ignore"):
        return [np.asarray(p).reshape(parameter_shape(np.shape(p), x.ndim)).astype(np.float64) for p in params]


def _axes(x: np.ndarray, parameter: np.ndarray) -> tuple[int, ...]:
    return reduced_axes(parameter.shape, x.shape)


def _training_exact(x, scale, bias, fused_add, epsilon):
    """(y before the activation, mean, variance) in float64 (the statistics of scale's shape)."""
    x = np.asarray(x)
    s, b = _params(x, (scale, bias))
    axes = _axes(x, s)
    with np.errstate(all="ignore"):
        v = x.astype(np.float64)
        mean = v.mean(axis=axes, keepdims=True)
        var = ((v - mean) ** 2).mean(axis=axes, keepdims=True)
        y = s * ((v - mean) / np.sqrt(var + epsilon)) + b
        if fused_add is not None:
            y = y + np.asarray(fused_add).astype(np.float64)
    return y, mean.reshape(s.shape), var.reshape(s.shape)


def training_reference(x, scale, bias, *, fused_add=None, epsilon=1e-5, fused_activation=None):
    """DML_BATCH_NORMALIZATION_TRAINING in numpy: (output, mean, variance) in float64, each
    rounded once to x's type; mean and variance of scale's shape at x's rank."""
    x = np.asarray(x)
    eps = as_float32(epsilon, "batch_normalization_training: epsilon")
    fused = FusedActivation.coerce(fused_activation)
    y, mean, var = _training_exact(x, scale, bias, fused_add, eps)
    with np.errstate(all="ignore"):
        if fused is not None:
            y = np.asarray(fused.row.numpy(y, **dict(fused.attributes)), np.float64)
        return tuple(np.asarray(a).astype(x.dtype) for a in (np.broadcast_to(y, x.shape), mean, var))


training_reference.__name__ = training_reference.__qualname__ = "batch_normalization_training"


def _grad_exact(x, dy, mean, variance, scale, epsilon, training):
    """(dx, scale gradient, bias gradient, and the terms of their precision) in float64."""
    x = np.asarray(x)
    m, v, s = _params(x, (mean, variance, scale))
    axes = _axes(x, m)
    with np.errstate(all="ignore"):
        xv, g = x.astype(np.float64), np.asarray(dy).astype(np.float64)
        n = math.prod(x.shape[a] for a in axes)
        r = 1 / np.sqrt(v + epsilon)
        d = xv - m
        s1 = g.sum(axis=axes, keepdims=True)
        s2 = (g * d).sum(axis=axes, keepdims=True)
        if training:
            m1, m2r = s1 / n, (s2 / n) * r * r
            inner = (g - m1) - d * m2r
            dx = s * r * inner
        else:
            m1 = m2r = inner = None
            dx = g * (s * r)
    return dx, s2 * r, s1, (axes, n, r, d, g, s, s1, s2, m1, m2r, inner)


def _grad_reference(training: bool, name: str):
    def reference(x, input_gradient, mean, variance, scale, *, epsilon=1e-5):
        """DirectML's batch-normalization gradient in numpy: (output_gradient, scale_gradient,
        bias_gradient) in float64, each rounded once to x's type; the last two of mean's
        shape at x's rank."""
        x = np.asarray(x)
        eps = as_float32(epsilon, f"{name}: epsilon")
        dx, sg, bg, _ = _grad_exact(x, input_gradient, mean, variance, scale, eps, training)
        shape = _params(x, (mean,))[0].shape
        with np.errstate(all="ignore"):
            return (np.broadcast_to(dx, x.shape).astype(x.dtype), np.broadcast_to(sg, shape).astype(x.dtype),
                    np.broadcast_to(bg, shape).astype(x.dtype))
    reference.__name__ = reference.__qualname__ = name
    return reference


grad_reference = _grad_reference(False, "batch_normalization_grad")
training_grad_reference = _grad_reference(True, "batch_normalization_training_grad")


# ============================================================================ the precision
def _which(expected: np.ndarray, references) -> list[int]:
    """The outputs whose reference `expected` is (by shape and bits; all of its shape where
    none matches bit for bit)."""
    e = np.asarray(expected)
    same = [k for k, a in enumerate(references) if np.shape(a) == e.shape]
    exact = [k for k in same if np.array_equal(np.asarray(references[k]).astype(e.dtype), e, equal_nan=True)]
    return exact or same


def _pick(expected, references, tolerances):
    """The tolerance of the output `expected` is (the largest where several fit)."""
    found = _which(expected, references)
    if not found:
        raise InvalidArgumentError(f"tolerance: an expected array of shape {np.shape(expected)} is no output's "
                                   f"(the outputs' shapes: {[np.shape(a) for a in references]})")
    return np.max(np.stack([np.broadcast_to(tolerances[k], np.shape(expected)) for k in found]), axis=0)


def training_tolerance(expected, inputs, arguments: dict):
    """The documented precision (module docstring) of whichever output `expected` is, per
    element; `arguments` as the functional form takes them."""
    x = np.asarray(inputs[0])
    scale, bias = inputs[1], inputs[2]
    add = inputs[3] if len(inputs) > 3 else arguments.get("fused_add")
    eps = as_float32(arguments.get("epsilon", 1e-5), "epsilon")
    fused = FusedActivation.coerce(arguments.get("fused_activation"))
    s, b = _params(x, (scale, bias))
    axes = _axes(x, s)
    references = training_reference(x, scale, bias, fused_add=add, epsilon=eps, fused_activation=fused)
    out = np.asarray(references[0])
    with np.errstate(all="ignore"):
        y, e = normalized_error(x, axes, eps, s, b, None if add is None else np.asarray(add), True, True)
        m, v, _, dm, dv, _, _, _, overflow = moments_error(x, axes, eps)
        output = finish_error(np.broadcast_to(e, x.shape), np.broadcast_to(y, x.shape), out, fused,
                              np.broadcast_to(y, x.shape))
        mean = finish_error(np.where(overflow, np.inf, dm + TINY).reshape(s.shape), m.reshape(s.shape),
                            np.asarray(references[1]), None, None)
        var = finish_error(np.where(overflow, np.inf, 1.01 * (dv + UNIT * v) + TINY).reshape(s.shape),
                           v.reshape(s.shape), np.asarray(references[2]), None, None)
    return _pick(expected, references, (output, mean, var))


def _grad_tolerance(training: bool):
    reference = training_grad_reference if training else grad_reference

    def tolerance(expected, inputs, arguments: dict):
        """The documented precision (module docstring) of whichever output `expected` is."""
        x = np.asarray(inputs[0])
        eps = as_float32(arguments.get("epsilon", 1e-5), "epsilon")
        references = reference(*inputs[:5], epsilon=eps)
        dx, sg, bg, (axes, n, r, d, g, s, s1, s2, m1, m2r, inner) = _grad_exact(x, *inputs[1:5], eps, training)
        with np.errstate(all="ignore"):
            depth = rounding_depth(n)
            ag, ad = np.abs(g), np.abs(d)
            e1 = depth * UNIT * ag.sum(axis=axes, keepdims=True)
            e2 = (depth + 2) * UNIT * (ag * ad).sum(axis=axes, keepdims=True)
            bad = ~np.isfinite(r) | (ag.sum(axis=axes, keepdims=True) >= _F32_MAX) | \
                ((ag * ad).sum(axis=axes, keepdims=True) >= _F32_MAX)
            e_sg = e2 * r + np.abs(s2 * r) * (REL_R + UNIT) + TINY * (1 + r)
            if training:
                em1 = e1 / n + UNIT * np.abs(m1)
                em2r = (e2 / n) * r * r + np.abs(m2r) * (2 * REL_R + 3 * UNIT)
                e_in = em1 + ad * em2r + UNIT * np.abs(g - m1) + 2 * UNIT * ad * np.abs(m2r) + UNIT * np.abs(inner)
                e_dx = np.abs(s) * r * e_in + np.abs(dx) * (REL_R + 2 * UNIT) + TINY * (1 + np.abs(s) * r)
            else:
                e_dx = np.abs(dx) * (REL_R + 2 * UNIT) + TINY
            shape = np.shape(references[1])
            out = [finish_error(np.where(bad, np.inf, 1.01 * e), y, np.asarray(ref), None, None)
                   for e, y, ref in ((np.broadcast_to(e_dx, x.shape), np.broadcast_to(dx, x.shape), references[0]),
                                     (np.broadcast_to(e_sg, shape), np.broadcast_to(sg, shape), references[1]),
                                     (np.broadcast_to(e1 + TINY, shape), np.broadcast_to(bg, shape),
                                      references[2]))]
            out[0] = np.where(np.broadcast_to(bad, x.shape), np.inf, out[0])
            out[1] = np.where(np.broadcast_to(bad, shape), np.inf, out[1])
            out[2] = np.where(np.broadcast_to(bad, shape), np.inf, out[2])
        return _pick(expected, references, out)
    return tolerance


# ============================================================================ samples, the command line
def _training_sample(desc, rng) -> list:
    """x uniform in [-4, 4] plus an offset per buffer (a mean away from 0: the two-pass
    variance's case), scale in [-2, 2], bias and FusedAdd in [-1, 1]."""
    out = [(rng.uniform(-4, 4, desc.input_tensor.required_elements) + rng.uniform(-8, 8))
           .astype(desc.input_tensor.data_type.numpy)]
    for td, lim in ((desc.scale_tensor, 2.0), (desc.bias_tensor, 1.0), (desc.fused_add_tensor, 1.0)):
        if td is not None:
            out.append(rng.uniform(-lim, lim, td.required_elements).astype(td.data_type.numpy))
    return out


def _grad_sample(desc, rng) -> list:
    """x uniform in [-4, 4] plus an offset, the gradient in [-1, 1], the mean near x's (the
    offset plus [-1, 1]), the variance in [0.25, 4], the scale in [-2, 2]."""
    offset = rng.uniform(-8, 8)
    n = lambda td: td.required_elements  # noqa: E731
    dt = desc.input_tensor.data_type.numpy
    return [(rng.uniform(-4, 4, n(desc.input_tensor)) + offset).astype(dt),
            rng.uniform(-1, 1, n(desc.input_gradient_tensor)).astype(dt),
            (rng.uniform(-1, 1, n(desc.mean_tensor)) + offset).astype(dt),
            rng.uniform(0.25, 4, n(desc.variance_tensor)).astype(dt),
            rng.uniform(-2, 2, n(desc.scale_tensor)).astype(dt)]


def _channel(x: TensorDesc) -> TensorDesc:
    return TensorDesc(x.data_type, [x.sizes[1] if x.rank >= 2 else x.sizes[0]])


def _epsilon_option(o: dict) -> float:
    return float(o["epsilon"]) if o.get("epsilon") is not None else 1e-5


def _training_cli(x: TensorDesc, o: dict):
    """--shape is the input's (NCHW); scale and bias per channel; --epsilon."""
    c = _channel(x)
    return training_infer(TensorDesc(x.data_type, x.sizes, x.strides), c, c, epsilon=_epsilon_option(o))


def _grad_cli(infer):
    def desc(x: TensorDesc, o: dict):
        """--shape is the input's (NCHW); the gradient of its sizes, mean, variance and scale
        per channel; --epsilon."""
        c = _channel(x)
        return infer(TensorDesc(x.data_type, x.sizes, x.strides), TensorDesc(x.data_type, x.sizes), c, c, c,
                     epsilon=_epsilon_option(o))
    return desc


_EPSILON = (CliArg("--epsilon", "Epsilon (default 1e-5)", "number"),)
PLANNER = ProblemPlanner(training_problem, STATISTICS_FAMILY)
GRAD_PLANNER = ProblemPlanner(grad_problem, STATISTICS_FAMILY)
grad_infer = _grad_infer(BatchNormalizationGradOperatorDesc)
training_grad_infer = _grad_infer(BatchNormalizationTrainingGradOperatorDesc)

TRAINING_SPEC = OpSpec(
    name=TRAINING, key="batch_normalization_training", desc=BatchNormalizationTrainingOperatorDesc,
    support=TRAINING_SUPPORT, infer_output=training_infer, validate=validate_training, reference=training_reference,
    functional=batch_normalization_training, tensors=("x", "scale", "bias", "fused_add"),
    arguments=_training_arguments, planner=PLANNER, cli=Cli(_EPSILON, _training_cli, "--shape 32,64,56,56"),
    page="DML_BATCH_NORMALIZATION_TRAINING_OPERATOR_DESC", tolerance=training_tolerance, sample=_training_sample,
)
GRAD_SPEC = OpSpec(
    name=GRAD, key="batch_normalization_grad", desc=BatchNormalizationGradOperatorDesc, support=GRAD_SUPPORT,
    infer_output=grad_infer, validate=_validate_grad(GRAD, GRAD_SUPPORT), reference=grad_reference,
    functional=batch_normalization_grad, tensors=("x", "input_gradient", "mean", "variance", "scale"),
    arguments=_grad_arguments, planner=GRAD_PLANNER, cli=Cli(_EPSILON, _grad_cli(grad_infer), "--shape 32,64,56,56"),
    page="DML_BATCH_NORMALIZATION_GRAD_OPERATOR_DESC", tolerance=_grad_tolerance(False), sample=_grad_sample,
)
TRAINING_GRAD_SPEC = OpSpec(
    name=TRAINING_GRAD, key="batch_normalization_training_grad", desc=BatchNormalizationTrainingGradOperatorDesc,
    support=TRAINING_GRAD_SUPPORT, infer_output=training_grad_infer,
    validate=_validate_grad(TRAINING_GRAD, TRAINING_GRAD_SUPPORT), reference=training_grad_reference,
    functional=batch_normalization_training_grad, tensors=("x", "input_gradient", "mean", "variance", "scale"),
    arguments=_grad_arguments, planner=GRAD_PLANNER,
    cli=Cli(_EPSILON, _grad_cli(training_grad_infer), "--shape 32,64,56,56"),
    page="DML_BATCH_NORMALIZATION_TRAINING_GRAD_OPERATOR_DESC", tolerance=_grad_tolerance(True),
    sample=_grad_sample,
)

SPECS = (TRAINING_SPEC, GRAD_SPEC, TRAINING_GRAD_SPEC)

__all__ = ["BatchNormalizationGradOperatorDesc", "BatchNormalizationTrainingGradOperatorDesc",
           "BatchNormalizationTrainingOperatorDesc", "SPECS"]
