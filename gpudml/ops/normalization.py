"""DirectML's normalization operators (not BATCH_NORMALIZATION): DML_OPERATOR_MEAN_VARIANCE_
NORMALIZATION2 (`dml.mean_variance_normalization2`, FL 6_3: UseMean and UseVariance, so RMSNorm),
DML_OPERATOR_MEAN_VARIANCE_NORMALIZATION1 (`mean_variance_normalization1`,
`dml.mean_variance_normalization`: LayerNorm and InstanceNorm are this), its first version
DML_OPERATOR_MEAN_VARIANCE_NORMALIZATION
(`mean_variance_normalization0`: CrossChannel instead of Axes), DML_OPERATOR_LP_NORMALIZATION
(`dml.lp_normalization`) and DML_OPERATOR_LOCAL_RESPONSE_NORMALIZATION
(`dml.local_response_normalization`). The normalization kernel family runs the first three
(kernels/normalization.py: MEAN_VARIANCE and LP, shaders/normalization.wgsl.j2), LRN its window
kernel (shaders/local_response_normalization.wgsl.j2). docs/operators/
mean_variance_normalization1.md says the same for users.

What the pages say (sdk-api, the 05/2023 versions of the MVN pages), as implemented:

- MEAN_VARIANCE_NORMALIZATION1 (from FL 2_1): Output = FusedActivation(Scale * ((Input -
  Mean) / sqrt(Variance + Epsilon)) + Bias), Mean and Variance over `axes`;
  NormalizeVariance FALSE: FusedActivation(Scale * (Input - Mean) + Bias). DimensionCount 4
  from FL 2_1, 1 to 8 from FL 3_1; FLOAT32 or FLOAT16; every tensor one DataType and one
  DimensionCount; the output the input's Sizes. Scale and Bias are optional: each of their
  sizes 1 (broadcast) or the input's; before FL 4_0 their axis 1 must be the input's
  ChannelCount; before FL 5_2 one requires the other.
- MEAN_VARIANCE_NORMALIZATION (FL 1_0): the same with CrossChannel: axes {1, 2, 3}
  (TRUE) or {2, 3} (FALSE); DimensionCount 4; Scale and Bias any size 1 or the input's.
- LP_NORMALIZATION (FL 1_0): x / ||x||_p along Axis, P 1 or 2; DimensionCount 4, 1 to 8
  from FL 3_1.
- LOCAL_RESPONSE_NORMALIZATION (FL 1_0): Output = Input / (Bias + (Alpha / LocalSize) *
  sum(Input^2 over the local region))^Beta; LocalSize at least 1; DimensionCount 4.
- LOCAL_RESPONSE_NORMALIZATION_GRAD (FL 3_1; `dml.local_response_normalization_grad`): its
  backpropagation gradient: InputTensor (the forward input x), InputGradientTensor (dy, the
  gradient of the forward output), OutputGradientTensor (dx); one DataType and one Sizes for
  the three, DimensionCount 4, FLOAT32 or FLOAT16; the forward's fields. The page gives no
  formula: gpudml computes the forward's derivative, with b = Bias + Alpha / LocalSize *
  sum(x^2 over the window), dx_j = dy_j b_j^-Beta - (2 Alpha Beta / LocalSize) x_j sum(dy_i
  x_i b_i^(-Beta-1)) over the elements i whose windows hold j (the window mirrored: [j -
  ceil((LocalSize - 1) / 2), j + floor((LocalSize - 1) / 2)] per axis), the local region as
  the forward's below. Two passes (kernels/normalization.py's LocalResponseGradFamily): the
  per-element terms to scratch, then each dx element sums its mirrored window in window
  order and is written once (deterministic, no atomics).

- MEAN_VARIANCE_NORMALIZATION2 (FL 6_3; its page, ms.date 02/14/2025, says "TBD" for the
  description, UseMean and UseVariance): version 1 with Axes, UseMean and UseVariance; 1 to 8
  dimensions, FLOAT32 or FLOAT16, one DataType and DimensionCount for every tensor.

What gpudml decides where the pages are silent (documented, tested):

- MEAN_VARIANCE_NORMALIZATION2: UseMean FALSE takes Mean = 0, so Variance = mean(x^2) over
  the axes and the result Scale * x / sqrt(mean(x^2) + Epsilon) + Bias (RMSNorm, as
  DirectML's execution provider uses it for SimplifiedLayerNormalization); UseVariance FALSE
  leaves the division out (version 1's NormalizeVariance FALSE). The plain functional name
  stays version 1's (`dml.mean_variance_normalization`: renaming would make it need FL 6_3
  and change the description its callers record); version 2 is
  `dml.mean_variance_normalization2` (docs/operators/mean_variance_normalization2.md).

- Variance is the population variance (divided by n), as ONNX's LayerNormalization,
  InstanceNormalization and MeanVarianceNormalization have it.
- Epsilon (all three that have one) must be finite and >= 0 (InvalidArgumentError): the
  pages give it "to avoid division by zero". LP divides by max(||x||_p, Epsilon) (so a zero
  row gives 0, and a row of norm above Epsilon is x / ||x||_p as ONNX's LpNormalization).
- Axes: at least one, each in [0, DimensionCount - 1], none twice (as Softmax1's).
- LRN's local region: along the channel axis (CrossChannel TRUE; ONNX's LRN, which
  DirectML's execution provider maps to CrossChannel TRUE) or, CrossChannel FALSE, a
  LocalSize x LocalSize square of Height x Width; each axis' window is [i - floor((LocalSize
  - 1) / 2), i + ceil((LocalSize - 1) / 2)] clipped to the tensor (ONNX's); the scale is
  Alpha / LocalSize in both modes (the page's formula). A window of more elements than one
  invocation's loop budget (kernels/base.py, 32,768) within the tensor is an UnsupportedError.
- The functional forms take numpy's broadcasting for scale and bias (unidirectional, to
  x's shape: [C, 1, 1] scales channels of [N, C, H, W]), described as DirectML's sizes (axes
  of 1 prepended). A bias without a scale (FL 5_2) is a description's
  (MeanVarianceNormalization1OperatorDesc(scale_tensor=None, ...)); the functional form
  takes scale= whenever bias= is given.

Precision (`tolerance_*`), against the float64 reference, u = 2^-24, all in f32 (float16
read exactly, the result rounded once to float16: 1 ULP of float16 more). The sums run in
subtotals (kernels/normalization.py) through D(n) = 136 + 2 ceil(n / 64) roundings per term at
most (ops/softmax.py's rounding_depth). With n a row's elements, m its mean, v its variance,
A its largest |x|:

- MEAN_VARIANCE: the mean within dm = D u mean|x| + 2u |m| (0 without UseMean: the mean is 0); the variance within
  dv = (D + 6) u v + dx^2 + 4 sqrt(v) dx (dx = (D + 2) u A: the two-pass sum of squared
  deviations about the computed mean, and Chan's merge of chunks); r = 1 / sqrt(v + eps)
  within 1.01 (0.5 dv / (v + eps) + 6u) (inverseSqrt's 2 ULP); (x - m) r within (dm + u |x
  - m|) r + |(x - m) r| (rel_r + u); the scale's product and the bias's sum add 1 ULP of
  each; the fused activation moves the error as its function does, plus its own; any value
  where dv >= (v + eps) / 2 (the variance lost in its own rounding: a constant row, eps 0).
- LP: the divisor within 1.01 (0.5 (D + 1) u + 9 u) (p 2: sqrt's 4.5 ULP) or D u (p 1),
  relative; the result x / d within that plus 2.5 ULP (the division).
- LRN: the window's sum of squares within (w + 1) u (w its elements), the base b = Bias +
  (Alpha / LocalSize) sum within |Alpha / LocalSize| sum (w + 4) u + u |b|; b^Beta =
  exp2(Beta log2 b) within WGSL's bounds (log2: 3 ULP, 2^-21 absolute in [0.5, 2]; exp2:
  3 + 2|t| ULP); the division 2.5 ULP. Any value where b <= 0 (WGSL's pow is undefined).
- LRN_GRAD: with rp and rb the relative errors of b^Beta and b above (per element), the
  terms t_i = dy_i x_i / (b_i^Beta b_i) within (rp + rb + 7 u) |t_i|, their f32 sum S over w
  elements within sum(|t_i| (rp_i + rb_i + 7 u)) + 1.01 w u sum|t_i|; dy b^-Beta within (rp +
  6 u) of itself (the reciprocal's 2.5 ULP and the product); c = 2 Alpha Beta / LocalSize
  times x and S within 8 u |c x| sum|t| plus |c x| times S's error; the difference one u of
  each side; all times 1.01, plus (w + 2) 2^-126 (1 + |c x|). Any value where an element of
  the window has an unbounded b^Beta (above).
- Everywhere: the subnormals an adapter may flush (2^-126), and any value where a sum
  may overflow float32 or the result is within its error of the output type's largest value.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..errors import InvalidArgumentError
from ..kernels.elementwise import Attribute
from ..kernels.normalization import LRN_GRAD_PLANNER, LRN_PLANNER, NormalizationPlanner, Problem
from ..tensor_desc import TensorDesc, as_int, as_int_tuple, check_same_rank, check_tensor_desc
from ..types import F16, F32, FeatureLevel
from .activations import FusedActivation, as_activation, as_float32
from .base import check_copy_tensors, check_one_type, normalize_axes, numpy_axis
from .precision import activation_error, ulp
from .softmax import check_axes, rounding_depth
from .spec import Call, Cli, CliArg, OpSpec, support_table

FL = FeatureLevel
FLOATS = frozenset({F32, F16})
MVN2, MVN1, MVN0, LP, LRN = ("MeanVarianceNormalization2", "MeanVarianceNormalization1", "MeanVarianceNormalization",
                             "LpNormalization", "LocalResponseNormalization")
MVN_TENSORS = ("input_tensor", "scale_tensor", "bias_tensor", "output_tensor")
TENSORS = ("input_tensor", "output_tensor")
MVN2_SUPPORT = support_table(MVN2, MVN_TENSORS, [(FL.FL_6_3, (1, 8), FLOATS)])
MVN1_SUPPORT = support_table(MVN1, MVN_TENSORS, [(FL.FL_3_1, (1, 8), FLOATS), (FL.FL_2_1, {4}, FLOATS)])
MVN0_SUPPORT = support_table(MVN0, MVN_TENSORS, [(FL.FL_1_0, {4}, FLOATS)])
LP_SUPPORT = support_table(LP, TENSORS, [(FL.FL_3_1, (1, 8), FLOATS), (FL.FL_1_0, {4}, FLOATS)])
LRN_SUPPORT = support_table(LRN, TENSORS, [(FL.FL_1_0, {4}, FLOATS)])

UNIT = 2.0**-24
TINY = 2.0**-126
_F32_MAX = float(np.finfo(np.float32).max)


def as_bool(value, field: str) -> bool:
    """A DirectML BOOL: True/False (or numpy's, or the integers 0 and 1)."""
    if isinstance(value, (bool, np.bool_)) or (isinstance(value, (int, np.integer)) and value in (0, 1)):
        return bool(value)
    raise InvalidArgumentError(f"{field}: expected True or False (a DirectML BOOL), got {value!r}")


def check_epsilon(op: str, epsilon: float) -> None:
    if not (math.isfinite(epsilon) and epsilon >= 0):
        raise InvalidArgumentError(f"{op}: epsilon = {epsilon!r} must be finite and >= 0 (it keeps the divisor "
                                   f"from 0)")


# ============================================================================ MEAN_VARIANCE_NORMALIZATION(1)
@dataclass(frozen=True)
class MeanVarianceNormalization2OperatorDesc:
    """DML_MEAN_VARIANCE_NORMALIZATION2_OPERATOR_DESC (FL_6_3): FusedActivation(Scale * (Input -
    Mean) / sqrt(Variance + Epsilon) + Bias) over `axes`, Mean 0 where use_mean is False (the
    variance then the mean of Input^2: RMSNorm), no division where use_variance is False;
    scale_tensor and bias_tensor optional (None)."""

    input_tensor: TensorDesc
    scale_tensor: TensorDesc | None
    bias_tensor: TensorDesc | None
    output_tensor: TensorDesc
    axes: tuple[int, ...]
    use_mean: bool = True
    use_variance: bool = True
    epsilon: float = 1e-5
    fused_activation: FusedActivation | None = None
    OPTIONAL_TENSORS = ("scale_tensor", "bias_tensor")

    def __post_init__(self):
        object.__setattr__(self, "axes", as_int_tuple(self.axes, f"{MVN2}: axes"))
        object.__setattr__(self, "use_mean", as_bool(self.use_mean, f"{MVN2}: use_mean"))
        object.__setattr__(self, "use_variance", as_bool(self.use_variance, f"{MVN2}: use_variance"))
        _coerce_mvn(self, MVN2)

    @property
    def normalize_variance(self) -> bool:
        """UseVariance, version 1's NormalizeVariance."""
        return self.use_variance


@dataclass(frozen=True)
class MeanVarianceNormalization1OperatorDesc:
    """DML_MEAN_VARIANCE_NORMALIZATION1_OPERATOR_DESC: FusedActivation(Scale * (Input - Mean)
    / sqrt(Variance + Epsilon) + Bias) over `axes`; scale_tensor and bias_tensor optional (None)."""

    input_tensor: TensorDesc
    scale_tensor: TensorDesc | None
    bias_tensor: TensorDesc | None
    output_tensor: TensorDesc
    axes: tuple[int, ...]
    normalize_variance: bool = True
    epsilon: float = 1e-5
    fused_activation: FusedActivation | None = None
    OPTIONAL_TENSORS = ("scale_tensor", "bias_tensor")

    def __post_init__(self):
        object.__setattr__(self, "axes", as_int_tuple(self.axes, f"{MVN1}: axes"))
        _coerce_mvn(self, MVN1)


@dataclass(frozen=True)
class MeanVarianceNormalizationOperatorDesc:
    """DML_MEAN_VARIANCE_NORMALIZATION_OPERATOR_DESC: as version 1 over axes {1, 2, 3}
    (cross_channel) or {2, 3}; scale_tensor and bias_tensor optional (None)."""

    input_tensor: TensorDesc
    scale_tensor: TensorDesc | None
    bias_tensor: TensorDesc | None
    output_tensor: TensorDesc
    cross_channel: bool = False
    normalize_variance: bool = True
    epsilon: float = 1e-5
    fused_activation: FusedActivation | None = None
    OPTIONAL_TENSORS = ("scale_tensor", "bias_tensor")

    def __post_init__(self):
        object.__setattr__(self, "cross_channel", as_bool(self.cross_channel, f"{MVN0}: cross_channel"))
        _coerce_mvn(self, MVN0)


def _coerce_mvn(desc, op: str) -> None:
    if op != MVN2:
        object.__setattr__(desc, "normalize_variance", as_bool(desc.normalize_variance, f"{op}: normalize_variance"))
    object.__setattr__(desc, "epsilon", as_float32(desc.epsilon, f"{op}: epsilon"))
    object.__setattr__(desc, "fused_activation",
                       FusedActivation.coerce(desc.fused_activation, f"{op}: fused_activation"))


def mvn_axes(desc) -> tuple[int, ...]:
    """The axes a MEAN_VARIANCE_NORMALIZATION(1) desc normalizes over, sorted."""
    if isinstance(desc, MeanVarianceNormalizationOperatorDesc):
        return (1, 2, 3) if desc.cross_channel else (2, 3)
    return tuple(sorted(desc.axes))


def _validate_mvn(desc, level: FeatureLevel) -> None:
    """The pages' rules (module docstring)."""
    v2 = isinstance(desc, MeanVarianceNormalization2OperatorDesc)
    v1 = v2 or isinstance(desc, MeanVarianceNormalization1OperatorDesc)  # (an axes field)
    op, support = (MVN2, MVN2_SUPPORT) if v2 else (MVN1, MVN1_SUPPORT) if v1 else (MVN0, MVN0_SUPPORT)
    named = {"input_tensor": desc.input_tensor}
    for field in ("scale_tensor", "bias_tensor"):
        if getattr(desc, field) is not None:
            named[field] = getattr(desc, field)
    named["output_tensor"] = desc.output_tensor
    for field, td in named.items():
        check_tensor_desc(op, field, td, is_output=field == "output_tensor")
    rank = check_same_rank(op, named)
    inp = desc.input_tensor
    for field, td in named.items():
        if td.data_type != inp.data_type:
            raise InvalidArgumentError(f"{op}: {field}.data_type {td.data_type.name} must equal "
                                       f"input_tensor.data_type {inp.data_type.name}")
    support.check(level, rank, {f: td.data_type for f, td in named.items()})
    if desc.output_tensor.sizes != inp.sizes:
        raise InvalidArgumentError(f"{op}: output_tensor.sizes {list(desc.output_tensor.sizes)} must equal "
                                   f"input_tensor.sizes {list(inp.sizes)}")
    if v1:
        check_axes(op, desc.axes, rank)
    for field in ("scale_tensor", "bias_tensor"):
        td = getattr(desc, field)
        if td is None:
            continue
        for i, (s, n) in enumerate(zip(td.sizes, inp.sizes)):
            if s not in (1, n):
                raise InvalidArgumentError(f"{op}: {field}.sizes[{i}] = {s} must be 1 (broadcast) or "
                                           f"input_tensor.sizes[{i}] = {n} ({field}.sizes {list(td.sizes)})")
        if v1 and level < FL.FL_4_0 and rank >= 2 and td.sizes[1] != inp.sizes[1]:
            raise InvalidArgumentError(
                f"{op}: {field}.sizes[1] = {td.sizes[1]} must equal input_tensor.sizes[1] = {inp.sizes[1]} "
                f"(ChannelCount) at {level.name}; from FL_4_0 it may be 1")
    if level < FL.FL_5_2 and (desc.scale_tensor is None) != (desc.bias_tensor is None):
        given, missing = ("scale_tensor", "bias_tensor") if desc.bias_tensor is None else ("bias_tensor",
                                                                                          "scale_tensor")
        raise InvalidArgumentError(f"{op}: {given} without {missing}: at {level.name} each requires the other "
                                   f"(from FL_5_2 either may be None)")
    check_epsilon(op, desc.epsilon)


def _over(td: TensorDesc, sizes) -> TensorDesc:
    """`td` (sizes 1 or `sizes`, one rank) described over `sizes`: stride 0 where it broadcasts."""
    strides = [0 if n == 1 and s != 1 else st for n, s, st in zip(td.sizes, sizes, td.effective_strides)]
    return TensorDesc(td.data_type, sizes, strides, total_tensor_size_in_bytes=td.total_tensor_size_in_bytes)


def _activation(fused: FusedActivation | None) -> tuple:
    if fused is None:
        return None, ()
    return as_activation(fused.row.wgsl["float"]), tuple(Attribute(k, "f32", v) for k, v in fused.attributes)


def mvn_problem(desc) -> Problem:
    inp = desc.input_tensor
    activation, attributes = _activation(desc.fused_activation)
    scale, bias = (None if td is None else _over(td, inp.sizes) for td in (desc.scale_tensor, desc.bias_tensor))
    op = {MeanVarianceNormalization2OperatorDesc: MVN2, MeanVarianceNormalization1OperatorDesc: MVN1}.get(
        type(desc), MVN0)
    return Problem(op, "MEAN_VARIANCE", inp, desc.output_tensor, mvn_axes(desc), scale, bias,
                   desc.normalize_variance, desc.epsilon, 2, activation, attributes,
                   use_mean=getattr(desc, "use_mean", True))


def _prepended(td: TensorDesc | None, rank: int) -> TensorDesc | None:
    """numpy's broadcasting, unidirectional: axes of 1 prepended up to `rank` (no copy)."""
    if td is None or td.rank >= rank:
        return td
    lead = rank - td.rank
    return TensorDesc(td.data_type, (1,) * lead + tuple(td.sizes), (0,) * lead + tuple(td.effective_strides),
                      total_tensor_size_in_bytes=td.total_tensor_size_in_bytes)


def _bias_alone(fn: str, scale, bias) -> None:
    if bias is not None and scale is None:
        raise InvalidArgumentError(f"{fn}: bias without scale: pass scale too (a bias alone, FL_5_2, is a "
                                   f"description's: scale_tensor=None)")


def mvn1_infer(x: TensorDesc, scale: TensorDesc | None = None, bias: TensorDesc | None = None, *, axes,
               normalize_variance=True, epsilon=1e-5, fused_activation=None):
    axes = normalize_axes(axes, x.rank, "mean_variance_normalization: axes")
    return MeanVarianceNormalization1OperatorDesc(
        x, _prepended(scale, x.rank), _prepended(bias, x.rank), TensorDesc(x.data_type, x.sizes), axes,
        normalize_variance, epsilon, fused_activation)


def mvn2_infer(x: TensorDesc, scale: TensorDesc | None = None, bias: TensorDesc | None = None, *, axes,
               use_mean=True, use_variance=True, epsilon=1e-5, fused_activation=None):
    axes = normalize_axes(axes, x.rank, "mean_variance_normalization2: axes")
    return MeanVarianceNormalization2OperatorDesc(
        x, _prepended(scale, x.rank), _prepended(bias, x.rank), TensorDesc(x.data_type, x.sizes), axes,
        use_mean, use_variance, epsilon, fused_activation)


def mvn0_infer(x: TensorDesc, scale: TensorDesc | None = None, bias: TensorDesc | None = None, *,
               cross_channel=False, normalize_variance=True, epsilon=1e-5, fused_activation=None):
    return MeanVarianceNormalizationOperatorDesc(
        x, _prepended(scale, x.rank), _prepended(bias, x.rank), TensorDesc(x.data_type, x.sizes), cross_channel,
        normalize_variance, epsilon, fused_activation)


def mean_variance_normalization(x, scale=None, bias=None, *, axes, normalize_variance=True, epsilon=1e-5,
                                fused_activation=None, device=None):
    """DML_OPERATOR_MEAN_VARIANCE_NORMALIZATION1: fused_activation(scale * (x - mean) /
    sqrt(var + epsilon) + bias), mean and (population) variance over `axes` (an int or a
    list, negative ones counting from the end; LayerNorm: the last axes, InstanceNorm of
    NCHW: [2, 3]); without normalize_variance fused_activation(scale * (x - mean) + bias).
    scale and bias (optional; bias needs scale) broadcast to x as numpy's. FLOAT32 or
    FLOAT16, computed in float32 (two-pass variance); gpudml/ops/normalization.py states
    the precision."""
    _bias_alone("mean_variance_normalization", scale, bias)
    return Call([("x", x)] + [(n, t) for n, t in (("scale", scale), ("bias", bias)) if t is not None],
                {"axes": axes, "normalize_variance": normalize_variance, "epsilon": epsilon,
                 "fused_activation": fused_activation}, device)


def mean_variance_normalization2(x, scale=None, bias=None, *, axes, use_mean=True, use_variance=True, epsilon=1e-5,
                                 fused_activation=None, device=None):
    """DML_OPERATOR_MEAN_VARIANCE_NORMALIZATION2 (FL_6_3): fused_activation(scale * (x - mean) /
    sqrt(var + epsilon) + bias) over `axes`, as mean_variance_normalization; use_mean False
    takes the mean as 0 (var is then mean(x^2): RMSNorm, `use_mean=False`), use_variance False
    leaves the division out. scale and bias (optional; bias needs scale, as version 1's: a bias
    alone is a description's) broadcast to x as numpy's. FLOAT32 or FLOAT16, computed in
    float32; gpudml/ops/normalization.py states the precision."""
    _bias_alone("mean_variance_normalization2", scale, bias)
    return Call([("x", x)] + [(n, t) for n, t in (("scale", scale), ("bias", bias)) if t is not None],
                {"axes": axes, "use_mean": use_mean, "use_variance": use_variance, "epsilon": epsilon,
                 "fused_activation": fused_activation}, device)


def mean_variance_normalization0(x, scale=None, bias=None, *, cross_channel=False, normalize_variance=True,
                                 epsilon=1e-5, fused_activation=None, device=None):
    """DML_OPERATOR_MEAN_VARIANCE_NORMALIZATION: mean_variance_normalization over axes
    [1, 2, 3] (cross_channel) or [2, 3] of a 4-D x ([N, C, H, W])."""
    _bias_alone("mean_variance_normalization0", scale, bias)
    return Call([("x", x)] + [(n, t) for n, t in (("scale", scale), ("bias", bias)) if t is not None],
                {"cross_channel": cross_channel, "normalize_variance": normalize_variance, "epsilon": epsilon,
                 "fused_activation": fused_activation}, device)


def _mvn_exact(x, scale, bias, axes, normalize_variance, epsilon, use_mean=True):
    """(y before the activation, mean, variance, the deviations) in float64, unrounded; the mean
    0 without use_mean."""
    with np.errstate(all="ignore"):
        v = np.asarray(x).astype(np.float64)
        mean = v.mean(axis=axes, keepdims=True) if use_mean else np.zeros_like(v.sum(axis=axes, keepdims=True))
        d = v - mean
        var = (d * d).mean(axis=axes, keepdims=True)
        y = d / np.sqrt(var + epsilon) if normalize_variance else d
        if scale is not None:
            y = y * np.asarray(scale).astype(np.float64)
        if bias is not None:
            y = y + np.asarray(bias).astype(np.float64)
    return y, mean, var, d


def _mvn_reference(x, scale, bias, axes, normalize_variance, epsilon, fused_activation, use_mean=True):
    fused = FusedActivation.coerce(fused_activation)
    epsilon = as_float32(epsilon, "epsilon")
    y = _mvn_exact(x, scale, bias, axes, as_bool(normalize_variance, "normalize_variance"), epsilon,
                   as_bool(use_mean, "use_mean"))[0]
    with np.errstate(all="ignore"):
        if fused is not None:
            y = np.asarray(fused.row.numpy(y, **dict(fused.attributes)), np.float64)
        return np.broadcast_to(y, np.shape(x)).astype(np.asarray(x).dtype)


def mvn1_reference(x, scale=None, bias=None, *, axes, normalize_variance=True, epsilon=1e-5, fused_activation=None):
    """DML_OPERATOR_MEAN_VARIANCE_NORMALIZATION1 on numpy arrays: float64, rounded once to x's type."""
    x = np.asarray(x)
    axes = normalize_axes(axes, x.ndim, "mean_variance_normalization: axes")
    return _mvn_reference(x, scale, bias, axes, normalize_variance, epsilon, fused_activation)


def mvn2_reference(x, scale=None, bias=None, *, axes, use_mean=True, use_variance=True, epsilon=1e-5,
                   fused_activation=None):
    """DML_OPERATOR_MEAN_VARIANCE_NORMALIZATION2 on numpy arrays: float64, rounded once to x's type."""
    x = np.asarray(x)
    axes = normalize_axes(axes, x.ndim, "mean_variance_normalization2: axes")
    return _mvn_reference(x, scale, bias, axes, use_variance, epsilon, fused_activation, use_mean)


def mvn0_reference(x, scale=None, bias=None, *, cross_channel=False, normalize_variance=True, epsilon=1e-5,
                   fused_activation=None):
    """DML_OPERATOR_MEAN_VARIANCE_NORMALIZATION on numpy arrays: float64, rounded once to x's type."""
    axes = (1, 2, 3) if as_bool(cross_channel, "cross_channel") else (2, 3)
    return _mvn_reference(np.asarray(x), scale, bias, axes, normalize_variance, epsilon, fused_activation)


mvn2_reference.__name__ = mvn2_reference.__qualname__ = "mean_variance_normalization2"
mvn1_reference.__name__ = mvn1_reference.__qualname__ = "mean_variance_normalization"
mvn0_reference.__name__ = mvn0_reference.__qualname__ = "mean_variance_normalization0"


def finish_error(e, y, expected, fused, pre):
    """The activation's part of the error (as GEMM's), rounding, float16, the edges."""
    with np.errstate(all="ignore"):
        if fused is not None:
            y, e = activation_error(fused, pre, e)
        e = e + 0.5 * ulp(y, np.float32) + TINY
        if expected.dtype == np.float16:
            e = e + np.spacing(np.minimum(np.abs(y), 65504).astype(np.float16)).astype(np.float64)
        e = np.nan_to_num(e, nan=np.inf, posinf=np.inf)
        edge = np.abs(y) + e >= float(np.finfo(expected.dtype).max)
        return np.broadcast_to(np.where(edge, np.inf, e), expected.shape)


def moments_error(x, axes, epsilon, centred=True, normalize_variance=True):
    """The statistics of the rows of x over `axes` (float64, keepdims) and their documented
    errors (module docstring), shared by MEAN_VARIANCE and BATCH_NORMALIZATION_TRAINING
    (ops/batch_normalization_training.py): (m, v, d, dm, dv, r, rel_r, lost, overflow): the
    mean, the variance, the deviations x - m, the bounds dm and dv of the kernel's mean and
    variance, r = 1 / sqrt(v + eps) and its relative bound, where the variance is lost in
    its own rounding, where a sum may overflow float32."""
    n = math.prod(x.shape[a] for a in axes)
    depth = rounding_depth(n)
    with np.errstate(all="ignore"):
        _, m, v, d = _mvn_exact(x, None, None, axes, normalize_variance, epsilon, centred)
        ax = np.abs(x.astype(np.float64))
        big = np.max(ax, axis=axes, keepdims=True)
        dm = depth * UNIT * np.mean(ax, axis=axes, keepdims=True) + 2 * UNIT * np.abs(m)
        if not centred:  # (the mean is 0, exactly)
            dm = np.zeros_like(dm)
        overflow = np.sum(ax, axis=axes, keepdims=True) >= _F32_MAX
        dx = (depth + 2) * UNIT * big
        dv = (depth + 6) * UNIT * v + dx * dx + 4 * np.sqrt(v) * dx
        if normalize_variance:
            lost = dv >= 0.5 * (v + epsilon)
            r = 1 / np.sqrt(v + epsilon)
            rel_r = 1.01 * (0.5 * dv / (v + epsilon) + 6 * UNIT)
            overflow = overflow | (np.sum(ax * ax, axis=axes, keepdims=True) * 4 >= _F32_MAX)
        else:
            lost, r, rel_r = False, 1.0, 0.0
    return m, v, d, dm, dv, r, rel_r, lost, overflow


def normalized_error(x, axes, epsilon, scale=None, bias=None, add=None, centred=True, normalize_variance=True):
    """(y, e): scale (x - m) r + bias + add in float64 (before any activation) and the
    documented bound of the kernel's value of it (module docstring; `add`,
    BATCH_NORMALIZATION_TRAINING's FusedAdd, one more correctly rounded sum), inf where the
    variance is lost or a sum may overflow."""
    m, v, d, dm, dv, r, rel_r, lost, overflow = moments_error(x, axes, epsilon, centred, normalize_variance)
    with np.errstate(all="ignore"):
        z = d * r
        e = (dm + UNIT * np.abs(d)) * r + np.abs(z) * (rel_r + UNIT) + TINY * (1 + r)
        y = z
        if scale is not None:
            s = np.abs(np.asarray(scale).astype(np.float64))
            y = z * np.asarray(scale).astype(np.float64)
            e = s * e + UNIT * np.abs(y) + TINY
        for term in (bias, add):
            if term is not None:
                y = y + np.asarray(term).astype(np.float64)
                e = e + UNIT * np.abs(y) + TINY
        e = np.where(lost | overflow, np.inf, 1.01 * e)
    return y, e


def _mvn_tolerance(axes_of):
    def tolerance(expected: np.ndarray, inputs, arguments: dict):
        """The documented precision (module docstring), per element."""
        x = np.asarray(inputs[0])
        scale = inputs[1] if len(inputs) > 1 else arguments.get("scale")
        bias = inputs[2] if len(inputs) > 2 else arguments.get("bias")
        axes = axes_of(x, arguments)
        nv = bool(arguments.get("normalize_variance", arguments.get("use_variance", True)))
        centred = bool(arguments.get("use_mean", True))
        eps = as_float32(arguments.get("epsilon", 1e-5), "epsilon")
        fused = FusedActivation.coerce(arguments.get("fused_activation"))
        with np.errstate(all="ignore"):
            pre = _mvn_exact(x, scale, bias, axes, nv, eps, centred)[0]
            y, e = normalized_error(x, axes, eps, scale, bias, None, centred, nv)
        return finish_error(np.broadcast_to(e, x.shape), np.broadcast_to(y, x.shape), expected, fused,
                       np.broadcast_to(pre, x.shape))
    return tolerance


def _mvn1_axes(x, arguments):
    return normalize_axes(arguments["axes"], x.ndim, "axes")


def _mvn0_axes(x, arguments):
    return (1, 2, 3) if arguments.get("cross_channel") else (2, 3)


def _mvn_sample(desc, rng) -> list:
    """Inputs worth normalizing: x uniform in [-4, 4] plus an offset per buffer (a mean
    away from 0: the two-pass variance's case), scale in [-2, 2], bias in [-1, 1]."""
    out = [(rng.uniform(-4, 4, desc.input_tensor.required_elements) + rng.uniform(-8, 8))
           .astype(desc.input_tensor.data_type.numpy)]
    for td, lim in ((desc.scale_tensor, 2.0), (desc.bias_tensor, 1.0)):
        if td is not None:
            out.append(rng.uniform(-lim, lim, td.required_elements).astype(td.data_type.numpy))
    return out


def _mvn_cli(version: int):
    def desc(x: TensorDesc, o: dict):
        scale = TensorDesc(x.data_type, [1] + list(x.sizes[1:2]) + [1] * max(0, x.rank - 2)) if o.get("affine") \
            else None
        bias = scale
        if version == 2:
            axes = (-1,) if o.get("axes") is None else o["axes"]
            return mvn2_infer(x, scale, bias, axes=axes, use_mean=not o.get("rms"))
        if version == 1:
            axes = (-1,) if o.get("axes") is None else o["axes"]
            return mvn1_infer(x, scale, bias, axes=axes)
        return mvn0_infer(x, scale, bias, cross_channel=bool(o.get("cross_channel")))
    args = (CliArg("--affine", "1: a scale and bias per channel (axis 1)", "number"),)
    if version == 2:
        return Cli((CliArg("--axes", "normalized axes, comma-separated (default the last)"),
                    CliArg("--rms", "1: UseMean FALSE (RMSNorm)", "number")) + args, desc,
                   "--shape 4096,1024 --axes 1 --rms 1")
    if version == 1:
        return Cli((CliArg("--axes", "normalized axes, comma-separated (default the last)"),) + args, desc,
                   "--shape 4096,1024 --axes 1")
    return Cli((CliArg("--cross-channel", "1: normalize over C, H, W (default H, W)", "number"),) + args, desc,
               "--shape 2,64,56,56")


def _mvn_traffic(desc) -> int:
    """Every element of every tensor once (the input is read twice or three times more)."""
    tds = [t for t in (desc.input_tensor, desc.scale_tensor, desc.bias_tensor, desc.output_tensor) if t is not None]
    return sum(t.element_count * t.data_type.size for t in tds)


def _mvn2_arguments(desc) -> dict:
    return {"axes": desc.axes, "use_mean": desc.use_mean, "use_variance": desc.use_variance,
            "epsilon": desc.epsilon, "fused_activation": desc.fused_activation}


def _mvn1_arguments(desc) -> dict:
    return {"axes": desc.axes, "normalize_variance": desc.normalize_variance, "epsilon": desc.epsilon,
            "fused_activation": desc.fused_activation}


def _mvn0_arguments(desc) -> dict:
    return {"cross_channel": desc.cross_channel, "normalize_variance": desc.normalize_variance,
            "epsilon": desc.epsilon, "fused_activation": desc.fused_activation}


MVN_PLANNER = NormalizationPlanner(mvn_problem)

MVN1_SPEC = OpSpec(
    name=MVN1, key="mean_variance_normalization1", desc=MeanVarianceNormalization1OperatorDesc,
    support=MVN1_SUPPORT, infer_output=mvn1_infer, validate=_validate_mvn, reference=mvn1_reference,
    functional=mean_variance_normalization, tensors=("x", "scale", "bias"), arguments=_mvn1_arguments,
    planner=MVN_PLANNER, cli=_mvn_cli(1), page="DML_MEAN_VARIANCE_NORMALIZATION1_OPERATOR_DESC",
    tolerance=_mvn_tolerance(_mvn1_axes), traffic=_mvn_traffic, sample=_mvn_sample,
)
MVN2_SPEC = OpSpec(
    name=MVN2, key="mean_variance_normalization2", desc=MeanVarianceNormalization2OperatorDesc,
    support=MVN2_SUPPORT, infer_output=mvn2_infer, validate=_validate_mvn, reference=mvn2_reference,
    functional=mean_variance_normalization2, tensors=("x", "scale", "bias"), arguments=_mvn2_arguments,
    planner=MVN_PLANNER, cli=_mvn_cli(2), page="DML_MEAN_VARIANCE_NORMALIZATION2_OPERATOR_DESC",
    tolerance=_mvn_tolerance(_mvn1_axes), traffic=_mvn_traffic, sample=_mvn_sample,
)
MVN0_SPEC = OpSpec(
    name=MVN0, key="mean_variance_normalization0", desc=MeanVarianceNormalizationOperatorDesc,
    support=MVN0_SUPPORT, infer_output=mvn0_infer, validate=_validate_mvn, reference=mvn0_reference,
    functional=mean_variance_normalization0, tensors=("x", "scale", "bias"), arguments=_mvn0_arguments,
    planner=MVN_PLANNER, cli=_mvn_cli(0), page="DML_MEAN_VARIANCE_NORMALIZATION_OPERATOR_DESC",
    tolerance=_mvn_tolerance(_mvn0_axes), traffic=_mvn_traffic, sample=_mvn_sample,
)


# ============================================================================ LP_NORMALIZATION
@dataclass(frozen=True)
class LpNormalizationOperatorDesc:
    """DML_LP_NORMALIZATION_OPERATOR_DESC: x / max(||x||_p, epsilon) along `axis`, p 1 or 2."""

    input_tensor: TensorDesc
    output_tensor: TensorDesc
    axis: int
    epsilon: float = 1e-5
    p: int = 2

    def __post_init__(self):
        object.__setattr__(self, "axis", as_int(self.axis, f"{LP}: axis"))
        object.__setattr__(self, "epsilon", as_float32(self.epsilon, f"{LP}: epsilon"))
        object.__setattr__(self, "p", as_int(self.p, f"{LP}: p"))


def _validate_lp(desc: LpNormalizationOperatorDesc, level: FeatureLevel) -> None:
    rank = check_copy_tensors(LP, LP_SUPPORT, level, desc.input_tensor, desc.output_tensor)
    if desc.output_tensor.sizes != desc.input_tensor.sizes:
        raise InvalidArgumentError(f"{LP}: output_tensor.sizes {list(desc.output_tensor.sizes)} must equal "
                                   f"input_tensor.sizes {list(desc.input_tensor.sizes)}")
    if not 0 <= desc.axis < rank:
        raise InvalidArgumentError(f"{LP}: axis = {desc.axis} is outside [0, {rank - 1}] (DimensionCount {rank})")
    if desc.p not in (1, 2):
        raise InvalidArgumentError(f"{LP}: p = {desc.p} must be 1 or 2")
    check_epsilon(LP, desc.epsilon)


def lp_problem(desc: LpNormalizationOperatorDesc) -> Problem:
    return Problem(LP, "LP", desc.input_tensor, desc.output_tensor, (desc.axis,), epsilon=desc.epsilon, p=desc.p)


def lp_infer(x: TensorDesc, *, axis=-1, epsilon=1e-5, p=2) -> LpNormalizationOperatorDesc:
    return LpNormalizationOperatorDesc(x, TensorDesc(x.data_type, x.sizes),
                                       numpy_axis(axis, x.rank, "lp_normalization: axis"), epsilon, p)


def lp_normalization(x, axis=-1, *, epsilon=1e-5, p=2, device=None):
    """DML_OPERATOR_LP_NORMALIZATION: x / max(||x||_p, epsilon) along `axis` (negative
    counting from the end), p 1 or 2. FLOAT32 or FLOAT16, computed in float32."""
    return Call([("x", x)], {"axis": axis, "epsilon": epsilon, "p": p}, device)


def _lp_exact(x, axis, epsilon, p):
    with np.errstate(all="ignore"):
        v = np.asarray(x).astype(np.float64)
        norm = np.sum(np.abs(v), axis=axis, keepdims=True) if p == 1 else np.sqrt(np.sum(v * v, axis=axis,
                                                                                          keepdims=True))
        return v / np.maximum(norm, epsilon), v


def lp_reference(x, axis=-1, *, epsilon=1e-5, p=2):
    """DML_OPERATOR_LP_NORMALIZATION on numpy arrays: float64, rounded once to x's type."""
    x = np.asarray(x)
    axis = numpy_axis(axis, x.ndim, "lp_normalization: axis")
    y = _lp_exact(x, axis, as_float32(epsilon, "epsilon"), p)[0]
    with np.errstate(all="ignore"):
        return y.astype(x.dtype)


lp_reference.__name__ = lp_reference.__qualname__ = "lp_normalization"


def _lp_tolerance(expected, inputs, arguments):
    """The documented precision (module docstring), per element."""
    x = np.asarray(inputs[0])
    axis = numpy_axis(arguments.get("axis", -1), x.ndim, "axis")
    p = arguments.get("p", 2)
    y, v = _lp_exact(x, axis, as_float32(arguments.get("epsilon", 1e-5), "epsilon"), p)
    depth = rounding_depth(x.shape[axis])
    with np.errstate(all="ignore"):
        rel = 1.01 * ((0.5 * (depth + 1) + 9) * UNIT if p == 2 else depth * UNIT) + 5 * UNIT
        e = 1.01 * np.abs(y) * rel + TINY * (1 + np.abs(y))
        power = np.abs(v) if p == 1 else v * v
        overflow = np.sum(power, axis=axis, keepdims=True) * 2 >= _F32_MAX
        e = np.where(overflow, np.inf, e)
    return finish_error(e, y, expected, None, None)


def _lp_sample(desc, rng) -> list:
    """Uniform in [-4, 4], a zero row now and then (rows of one element)."""
    return [rng.uniform(-4, 4, desc.input_tensor.required_elements).astype(desc.input_tensor.data_type.numpy)]


LP_SPEC = OpSpec(
    name=LP, key="lp_normalization", desc=LpNormalizationOperatorDesc, support=LP_SUPPORT, infer_output=lp_infer,
    validate=_validate_lp, reference=lp_reference, functional=lp_normalization, tensors=("x",),
    arguments=lambda d: {"axis": d.axis, "epsilon": d.epsilon, "p": d.p}, planner=NormalizationPlanner(lp_problem),
    cli=Cli((CliArg("--axis", "the normalized axis (default the last)"),
             CliArg("--p", "1 or 2 (default 2)")),
            lambda x, o: lp_infer(x, axis=(o.get("axis") or [-1])[0], p=(o.get("p") or [2])[0]),
            "--shape 1,64,56,56 --axis 1"),
    page="DML_LP_NORMALIZATION_OPERATOR_DESC", tolerance=_lp_tolerance, sample=_lp_sample,
)


# ============================================================================ LOCAL_RESPONSE_NORMALIZATION
@dataclass(frozen=True)
class LocalResponseNormalizationOperatorDesc:
    """DML_LOCAL_RESPONSE_NORMALIZATION_OPERATOR_DESC: x / (bias + alpha / local_size *
    sum(x^2 over the local region))^beta."""

    input_tensor: TensorDesc
    output_tensor: TensorDesc
    cross_channel: bool
    local_size: int
    alpha: float = 1e-4
    beta: float = 0.75
    bias: float = 1.0

    def __post_init__(self):
        normalize_lrn_fields(self, LRN)


def normalize_lrn_fields(desc, op: str) -> None:
    """LRN's fields (the forward's and the gradient's desc): cross_channel a BOOL, local_size
    an int, alpha, beta and bias FLOATs (float32)."""
    object.__setattr__(desc, "cross_channel", as_bool(desc.cross_channel, f"{op}: cross_channel"))
    object.__setattr__(desc, "local_size", as_int(desc.local_size, f"{op}: local_size"))
    for name in ("alpha", "beta", "bias"):
        object.__setattr__(desc, name, as_float32(getattr(desc, name), f"{op}: {name}"))


def _validate_lrn(desc: LocalResponseNormalizationOperatorDesc, level: FeatureLevel) -> None:
    check_copy_tensors(LRN, LRN_SUPPORT, level, desc.input_tensor, desc.output_tensor)
    if desc.output_tensor.sizes != desc.input_tensor.sizes:
        raise InvalidArgumentError(f"{LRN}: output_tensor.sizes {list(desc.output_tensor.sizes)} must equal "
                                   f"input_tensor.sizes {list(desc.input_tensor.sizes)}")
    _check_lrn_fields(LRN, desc)


def lrn_infer(x: TensorDesc, *, local_size, cross_channel=True, alpha=1e-4, beta=0.75, bias=1.0):
    return LocalResponseNormalizationOperatorDesc(x, TensorDesc(x.data_type, x.sizes), cross_channel, local_size,
                                                  alpha, beta, bias)


def local_response_normalization(x, local_size, *, cross_channel=True, alpha=1e-4, beta=0.75, bias=1.0,
                                 device=None):
    """DML_OPERATOR_LOCAL_RESPONSE_NORMALIZATION of a 4-D x ([N, C, H, W]): x / (bias +
    alpha / local_size * sum(x^2 over the local region))^beta, the region local_size
    channels (cross_channel, ONNX's LRN) or local_size x local_size of H x W around each
    element, clipped to the tensor. FLOAT32 or FLOAT16, computed in float32."""
    return Call([("x", x)], {"local_size": local_size, "cross_channel": cross_channel, "alpha": alpha,
                             "beta": beta, "bias": bias}, device)


def _window_sum(q: np.ndarray, axis: int, size: int) -> np.ndarray:
    """Sum of q over [i - floor((size - 1) / 2), i + ceil((size - 1) / 2)] along `axis`, clipped."""
    lo, hi = (size - 1) // 2, size // 2
    n = q.shape[axis]
    c = np.cumsum(np.moveaxis(q, axis, -1), axis=-1)
    c = np.concatenate([np.zeros(c.shape[:-1] + (1,)), c], axis=-1)
    i = np.arange(n)
    out = c[..., np.minimum(i + hi, n - 1) + 1] - c[..., np.maximum(i - lo, 0)]
    return np.moveaxis(out, -1, axis)


def _lrn_exact(x, local_size, cross_channel, alpha, beta, bias):
    """(y, the window's sum of squares, base) in float64."""
    with np.errstate(all="ignore"):
        v = np.asarray(x).astype(np.float64)
        q = v * v
        if cross_channel:
            s = _window_sum(q, 1, local_size)
        else:
            s = _window_sum(_window_sum(q, 2, local_size), 3, local_size)
        base = bias + alpha / local_size * s
        return v / base**beta, s, base


def lrn_reference(x, local_size, *, cross_channel=True, alpha=1e-4, beta=0.75, bias=1.0):
    """DML_OPERATOR_LOCAL_RESPONSE_NORMALIZATION on numpy arrays: float64, rounded once to x's type."""
    x = np.asarray(x)
    f = lambda v, name: as_float32(v, name)  # noqa: E731
    y = _lrn_exact(x, int(local_size), as_bool(cross_channel, "cross_channel"), f(alpha, "alpha"), f(beta, "beta"),
                   f(bias, "bias"))[0]
    with np.errstate(all="ignore"):
        return y.astype(x.dtype)


lrn_reference.__name__ = lrn_reference.__qualname__ = "local_response_normalization"


def _lrn_arguments(arguments) -> tuple:
    """(local_size, cross_channel, alpha, beta, bias) of LRN's (or its gradient's) arguments."""
    alpha, beta, bias = (as_float32(arguments.get(k, d), k) for k, d in (("alpha", 1e-4), ("beta", 0.75),
                                                                         ("bias", 1.0)))
    return int(arguments["local_size"]), bool(arguments.get("cross_channel", True)), alpha, beta, bias


def _lrn_power_error(x, ls, cross, alpha, beta, bias):
    """(y, base, base^beta's relative error, the base's, where either is unbounded) of the
    kernels' f32 sum of squares, base and WGSL's pow (module docstring)."""
    y, s, base = _lrn_exact(x, ls, cross, alpha, beta, bias)
    w = min(ls, x.shape[1]) if cross else min(ls, x.shape[2]) * min(ls, x.shape[3])
    with np.errstate(all="ignore"):
        err_base = abs(alpha / ls) * s * (w + 4) * UNIT + UNIT * np.abs(base) + TINY
        rel_base = err_base / base
        lg = np.log2(base)
        err_log = np.where((base >= 0.5) & (base <= 2), 2.0**-21, 6 * UNIT * np.abs(lg)) + rel_base / math.log(2)
        t = beta * lg
        err_t = abs(beta) * err_log + UNIT * np.abs(t)
        rel_pow = (3 + 2 * np.abs(t)) * 2 * UNIT + math.log(2) * err_t * 1.01
        bad = (base <= 0) | (rel_pow > 0.5) | (s * 2 >= _F32_MAX) | ~np.isfinite(base)
    return y, base, rel_pow, np.abs(rel_base), bad


def _lrn_tolerance(expected, inputs, arguments):
    """The documented precision (module docstring), per element."""
    y, _, rel_pow, _, bad = _lrn_power_error(np.asarray(inputs[0]), *_lrn_arguments(arguments))
    with np.errstate(all="ignore"):
        e = 1.01 * np.abs(y) * (rel_pow + 5 * UNIT) + TINY * (1 + np.abs(y))
        e = np.where(bad, np.inf, e)
    return finish_error(e, y, expected, None, None)


def _lrn_sample(desc, rng) -> list:
    """Uniform in [-4, 4]."""
    return [rng.uniform(-4, 4, desc.input_tensor.required_elements).astype(desc.input_tensor.data_type.numpy)]


LRN_SPEC = OpSpec(
    name=LRN, key="local_response_normalization", desc=LocalResponseNormalizationOperatorDesc, support=LRN_SUPPORT,
    infer_output=lrn_infer, validate=_validate_lrn, reference=lrn_reference,
    functional=local_response_normalization, tensors=("x",),
    arguments=lambda d: {"local_size": d.local_size, "cross_channel": d.cross_channel, "alpha": d.alpha,
                         "beta": d.beta, "bias": d.bias},
    planner=LRN_PLANNER,
    cli=Cli((CliArg("--local-size", "the window (default 5)"),
             CliArg("--within-channel", "1: a local_size x local_size window of H x W", "number")),
            lambda x, o: lrn_infer(x, local_size=(o.get("local_size") or [5])[0],
                                   cross_channel=not o.get("within_channel")),
            "--shape 1,64,56,56 --local-size 5"),
    page="DML_LOCAL_RESPONSE_NORMALIZATION_OPERATOR_DESC", tolerance=_lrn_tolerance, sample=_lrn_sample,
)

# ============================================================================ LOCAL_RESPONSE_NORMALIZATION_GRAD
LRN_GRAD = "LocalResponseNormalizationGrad"
LRN_GRAD_TENSORS = ("input_tensor", "input_gradient_tensor", "output_gradient_tensor")
LRN_GRAD_SUPPORT = support_table(LRN_GRAD, LRN_GRAD_TENSORS, [(FL.FL_3_1, {4}, FLOATS)])


@dataclass(frozen=True)
class LocalResponseNormalizationGradOperatorDesc:
    """DML_LOCAL_RESPONSE_NORMALIZATION_GRAD_OPERATOR_DESC: the gradient of
    LOCAL_RESPONSE_NORMALIZATION with respect to its input (input_tensor: the forward input,
    input_gradient_tensor: the gradient of its output, output_gradient_tensor: of its input)."""

    input_tensor: TensorDesc
    input_gradient_tensor: TensorDesc
    output_gradient_tensor: TensorDesc
    cross_channel: bool
    local_size: int
    alpha: float = 1e-4
    beta: float = 0.75
    bias: float = 1.0

    def __post_init__(self):
        normalize_lrn_fields(self, LRN_GRAD)


def _check_lrn_fields(op: str, desc) -> None:
    """LRN's own fields (the forward's and the gradient's): local_size a UINT of at least 1,
    alpha, beta and bias finite."""
    if not 1 <= desc.local_size <= 0xFFFFFFFF:
        raise InvalidArgumentError(f"{op}: local_size = {desc.local_size} must be at least 1 (a UINT)")
    for name in ("alpha", "beta", "bias"):
        if not math.isfinite(getattr(desc, name)):
            raise InvalidArgumentError(f"{op}: {name} = {getattr(desc, name)!r} must be finite")


def _validate_lrn_grad(desc: LocalResponseNormalizationGradOperatorDesc, level: FeatureLevel) -> None:
    """The page's rules: the three tensors valid, 4-D, one DataType and one Sizes; LRN's fields."""
    named = {name: getattr(desc, name) for name in LRN_GRAD_TENSORS}
    check_one_type(LRN_GRAD, LRN_GRAD_SUPPORT, level, named)
    for name in LRN_GRAD_TENSORS[1:]:
        if named[name].sizes != desc.input_tensor.sizes:
            raise InvalidArgumentError(f"{LRN_GRAD}: {name}.sizes {list(named[name].sizes)} must equal "
                                       f"input_tensor.sizes {list(desc.input_tensor.sizes)} (the page: the same "
                                       f"Sizes for every tensor)")
    _check_lrn_fields(LRN_GRAD, desc)


def lrn_grad_infer(x: TensorDesc, dy: TensorDesc, *, local_size, cross_channel=True, alpha=1e-4, beta=0.75,
                   bias=1.0):
    return LocalResponseNormalizationGradOperatorDesc(x, dy, TensorDesc(x.data_type, x.sizes), cross_channel,
                                                      local_size, alpha, beta, bias)


def local_response_normalization_grad(x, dy, local_size, *, cross_channel=True, alpha=1e-4, beta=0.75, bias=1.0,
                                      device=None):
    """DML_OPERATOR_LOCAL_RESPONSE_NORMALIZATION_GRAD: the gradient of
    local_response_normalization(x, local_size, ...) with respect to x, given dy (the gradient
    of its output, x's sizes): with b = bias + alpha / local_size * sum(x^2 over the window),
    dx_j = dy_j b_j^-beta - (2 alpha beta / local_size) x_j sum(dy_i x_i b_i^(-beta-1)) over
    the elements i whose windows hold j. 4-D, FLOAT32 or FLOAT16, computed in float32;
    precision: gpudml/ops/normalization.py."""
    return Call([("x", x), ("dy", dy)], {"local_size": local_size, "cross_channel": cross_channel, "alpha": alpha,
                                         "beta": beta, "bias": bias}, device)


def _transposed_window_sum(q: np.ndarray, local_size: int, cross_channel: bool) -> np.ndarray:
    """Sum of q over the elements whose windows hold each element: the window mirrored
    ([j - ceil((size - 1) / 2), j + floor((size - 1) / 2)]), as _window_sum of the axes reversed."""
    axes = (1,) if cross_channel else (2, 3)
    flipped = np.flip(q, axes)
    for axis in axes:
        flipped = _window_sum(flipped, axis, local_size)
    return np.flip(flipped, axes)


def lrn_grad_reference(x, dy, local_size, *, cross_channel=True, alpha=1e-4, beta=0.75, bias=1.0):
    """DML_OPERATOR_LOCAL_RESPONSE_NORMALIZATION_GRAD on numpy arrays: float64 (the
    derivative of the forward's formula), rounded once to dy's type."""
    x, dy = np.asarray(x), np.asarray(dy)
    ls, cross = int(local_size), as_bool(cross_channel, "cross_channel")
    alpha, beta, bias = (as_float32(v, name) for v, name in ((alpha, "alpha"), (beta, "beta"), (bias, "bias")))
    _, _, base = _lrn_exact(x, ls, cross, alpha, beta, bias)
    with np.errstate(all="ignore"):
        v, g = x.astype(np.float64), dy.astype(np.float64)
        terms = g * v * base ** (-beta - 1)
        dx = g * base**-beta - 2 * alpha * beta / ls * v * _transposed_window_sum(terms, ls, cross)
        return dx.astype(dy.dtype)


lrn_grad_reference.__name__ = lrn_grad_reference.__qualname__ = "local_response_normalization_grad"


def _lrn_grad_tolerance(expected, inputs, arguments):
    """The documented precision (module docstring), per element."""
    x, dy = np.asarray(inputs[0]), np.asarray(inputs[1])
    ls, cross, alpha, beta, bias = _lrn_arguments(arguments)
    _, base, rel_pow, rel_base, bad = _lrn_power_error(x, ls, cross, alpha, beta, bias)
    w = min(ls, x.shape[1]) if cross else min(ls, x.shape[2]) * min(ls, x.shape[3])
    with np.errstate(all="ignore"):
        v, g = x.astype(np.float64), dy.astype(np.float64)
        terms = np.abs(g * v * base ** (-beta - 1))
        total = _transposed_window_sum(terms, ls, cross)
        err_sum = _transposed_window_sum(terms * (rel_pow + rel_base + 7 * UNIT), ls, cross) + 1.01 * w * UNIT * total
        scaled = abs(2 * alpha * beta / ls) * np.abs(v)
        first = np.abs(g * base**-beta)
        y = g * base**-beta - 2 * alpha * beta / ls * v * _transposed_window_sum(g * v * base ** (-beta - 1), ls,
                                                                                  cross)
        e = (first * (rel_pow + 6 * UNIT) + scaled * total * 8 * UNIT + scaled * err_sum
             + UNIT * (first + scaled * total) + TINY * (w + 2) * (1 + scaled))
        unbounded = _transposed_window_sum(bad.astype(np.float64), ls, cross) > 0
        e = np.where(bad | unbounded | (total * np.maximum(scaled, 1) >= _F32_MAX / 4), np.inf, 1.01 * e)
    return finish_error(e, y, expected, None, None)


def _lrn_grad_sample(desc, rng) -> list:
    """x uniform in [-4, 4], dy in [-1, 1]."""
    x, dy = desc.input_tensor, desc.input_gradient_tensor
    return [rng.uniform(-4, 4, x.required_elements).astype(x.data_type.numpy),
            rng.uniform(-1, 1, dy.required_elements).astype(dy.data_type.numpy)]


LRN_GRAD_SPEC = OpSpec(
    name=LRN_GRAD, key="local_response_normalization_grad", desc=LocalResponseNormalizationGradOperatorDesc,
    support=LRN_GRAD_SUPPORT, infer_output=lrn_grad_infer, validate=_validate_lrn_grad,
    reference=lrn_grad_reference, functional=local_response_normalization_grad, tensors=("x", "dy"),
    arguments=lambda d: {"local_size": d.local_size, "cross_channel": d.cross_channel, "alpha": d.alpha,
                         "beta": d.beta, "bias": d.bias},
    planner=LRN_GRAD_PLANNER,
    cli=Cli((CliArg("--local-size", "the window (default 5)"),
             CliArg("--within-channel", "1: a local_size x local_size window of H x W", "number")),
            lambda x, o: lrn_grad_infer(x, x, local_size=(o.get("local_size") or [5])[0],
                                        cross_channel=not o.get("within_channel")),
            "--shape 1,64,56,56 --local-size 5"),
    page="DML_LOCAL_RESPONSE_NORMALIZATION_GRAD_OPERATOR_DESC", tolerance=_lrn_grad_tolerance,
    sample=_lrn_grad_sample,
)

# (MVN2_SPEC and LRN_GRAD_SPEC: registered apart, after the others, in gpudml.ops.SPECS)
SPECS = (MVN1_SPEC, MVN0_SPEC, LP_SPEC, LRN_SPEC, MVN2_SPEC, LRN_GRAD_SPEC)

__all__ = ["SPECS"]
