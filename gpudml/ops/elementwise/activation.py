"""Rows of the element-wise table: DML_OPERATOR_ACTIVATION_* (those whose `fuses` is set are
what another operator's FusedActivation may name: fused.py, gpudml/ops/activations.py). `ROWS` in
table order; table.py places them in `TABLE`."""

from __future__ import annotations

import math

import numpy as np

from ...kernels.elementwise import Attribute
from ...types import I8, I16, I32, TYPES_8
from .common import ACTIVATION_FLOAT, F32_MAX, FL, FLOATS, integer_or_float, max_num, min_num, wrap
from .row import Attr, Row
from .transcendental import TANH_PRECISION, TANH_WGSL, erf, tanh_ulps


def _product32(alpha, x):
    """alpha * x as a FLOAT32 kernel rounds it before adding beta (LINEAR, HARD_SIGMOID): exact
    but for float32's range (+-inf beyond: inf + -inf is then NaN, as in the kernel)."""
    with np.errstate(all="ignore"):
        p = alpha * x
        return np.where(np.abs(p) > F32_MAX * (1 + 2.0**-25), np.copysign(np.inf, p), p)


def _elu(x, alpha):
    return np.where(x >= 0, x, alpha * np.expm1(x))


def _softplus(x, steepness):
    return np.logaddexp(0.0, steepness * x) / steepness


def _saturated(value: float, dtype) -> int:
    """A FLOAT as an integer of `dtype`: truncated toward zero, saturated to the type's range, NaN 0."""
    info = np.iinfo(dtype)
    if math.isnan(value):
        return 0
    if math.isinf(value):
        return int(info.max) if value > 0 else int(info.min)
    return max(int(info.min), min(int(info.max), int(value)))


def _shrink(x, bias, threshold):
    if x.dtype.kind == "f":
        return np.where(x > threshold, x - bias, np.where(x < -threshold, x + bias, 0.0))
    b = _saturated(bias, x.dtype)
    wide = x.astype(np.int64)
    with np.errstate(invalid="ignore"):
        out = np.where(wide > threshold, wide - b, np.where(wide < -np.float64(threshold), wide + b, 0))
    return out.astype(np.int64).astype(x.dtype)  # wraps in the type


def _shrink_ints(values, dtype):
    return (Attribute("bias", "value", _saturated(values["bias"], dtype)),
            Attribute("threshold", "f32", values["threshold"]))


def _hard_sigmoid(x, alpha, beta):
    return max_num(np.zeros_like(x), min_num(_product32(alpha, x) + beta, np.ones_like(x)))


def _hard_swish(x, alpha, beta):
    h = _hard_sigmoid(x, alpha, beta)
    return np.where(h == 0, 0.0, x * h)


def _swish(x, sigmoid_input_scale):
    d = 1 + np.exp(-sigmoid_input_scale * x)
    return np.where(np.isinf(d), 0.0, x / d)


def _parametric_softplus(x, alpha, beta):
    v = beta * x
    return np.where((alpha == 0) & np.isfinite(x) & np.isfinite(beta), 0.0, alpha * np.logaddexp(0.0, v))


def _swish_ulps(x, sigmoid_input_scale):
    v = np.abs(sigmoid_input_scale * x)
    with np.errstate(all="ignore"):
        far = np.where(sigmoid_input_scale * x < -80, 6 * np.abs(np.log(np.abs(x))) + 8, 0.0)
    return 6.5 + 3 * v + np.nan_to_num(far, nan=0.0, posinf=np.inf)


def _celu_ulps(x, alpha):
    with np.errstate(all="ignore"):
        u = x / alpha
        far = np.where(u > 80, 6 * np.abs(np.log(np.abs(alpha))) + 8, 0.0)
        return np.nan_to_num(7 + 4 * np.abs(u) + far, nan=0.0, posinf=np.inf)


def _celu(x, alpha):
    u = x / alpha
    m = np.where(np.abs(u) < 2.0**-12, x * (1 + 0.5 * u), alpha * np.expm1(u))  # x itself for an infinite alpha
    return max_num(np.zeros_like(x), x) + min_num(np.zeros_like(x), m)


def _prelu(x, slope):
    if x.dtype.kind == "f":
        return np.where(x >= 0, x, slope * x)
    return np.where(x >= 0, x, wrap(np.multiply)(slope, x)).astype(x.dtype)


ROWS: tuple[Row, ...] = (
    Row("ACTIVATION_RELU", "relu", "relu", ("input_tensor",), (
        (FL.FL_5_1, (1, 8), FLOATS | {I32, I16, I8}),
        (FL.FL_3_0, (1, 8), FLOATS),
        (FL.FL_2_0, (4, 5), FLOATS),
        (FL.FL_1_0, {4}, FLOATS),
    ), integer_or_float(lambda x: max_num(x, np.zeros_like(x)), lambda x: np.maximum(x, 0).astype(x.dtype)),
        {"float": "max_num(a, F(0.0))", "int": "max(a, 0)"},
        "activation_relu_operator_desc.md",
        "max(0, x) (NaN gives 0, as HLSL's max)", fuses=True),
    Row("ACTIVATION_RELU_GRAD", "relu_grad", "relu_grad", ("input_tensor", "input_gradient_tensor"), (
        (FL.FL_5_1, (1, 8), FLOATS | {I32, I16, I8}),
        (FL.FL_4_0, (1, 8), FLOATS),
        (FL.FL_3_0, (1, 8), FLOATS),
    ), lambda x, dy: np.where(x > 0, dy, 0).astype(dy.dtype) if x.dtype.kind != "f" else np.where(x > 0, dy, 0.0),
        {"float": "select(F(0.0), b, a > F(0.0))", "sint": "select(0i, b, a > 0i)"},
        "activation_relu_grad_operator_desc.md", "the gradient where x > 0, else 0",
        output="output_gradient_tensor"),
    Row("ACTIVATION_LEAKY_RELU", "leaky_relu", "leaky_relu", ("input_tensor",), ACTIVATION_FLOAT,
        lambda x, alpha: np.where(x >= 0, x, alpha * x), {"float": "select(u_alpha * a, a, a >= F(0.0))"},
        "activation_leaky_relu_operator_desc.md", "x where x >= 0, else alpha * x",
        attributes=(Attr("alpha", 0.01),), fuses=True, ulps=0.5, precision="correctly rounded (0.5 ULP)"),
    Row("ACTIVATION_SIGMOID", "sigmoid", "sigmoid", ("input_tensor",), ACTIVATION_FLOAT,
        lambda x: 1 / (1 + np.exp(-x)), {"float": "F(1.0) / (F(1.0) + exp(-a))"},
        "activation_sigmoid_operator_desc.md", "1 / (1 + e^-x)", fuses=True,
        ulps=lambda x, **_: 6 + 2 * np.abs(x), precision="6 + 2|x| ULP (WGSL's exp, an addition and a division)"),
    Row("ACTIVATION_TANH", "activation_tanh", "activation_tanh", ("input_tensor",), ACTIVATION_FLOAT, np.tanh,
        {"float": TANH_WGSL}, "activation_tanh_operator_desc.md", "tanh(x)", fuses=True,
        ulps=tanh_ulps, absolute=2.0**-21, precision=TANH_PRECISION),
    Row("ACTIVATION_ELU", "elu", "elu", ("input_tensor",), ACTIVATION_FLOAT, _elu,
        {"float": "select(u_alpha * (exp(a) - F(1.0)), a, a >= F(0.0))"},
        "activation_elu_operator_desc.md", "x where x >= 0, else alpha * (e^x - 1)",
        attributes=(Attr("alpha", 1.0),), fuses=True, ulps=1.5,
        absolute=lambda x, alpha: np.where(x < 0, np.abs(alpha) * (3 + 2 * np.abs(x)) * 2.0**-24, 0.0),
        precision="1.5 ULP, and |alpha| (3 + 2|x|) 2^-24 absolute for x < 0 (WGSL's exp, its difference to 1)"),
    Row("ACTIVATION_LINEAR", "linear", "linear", ("input_tensor",), ACTIVATION_FLOAT,
        lambda x, alpha, beta: _product32(alpha, x) + beta, {"float": "u_alpha * a + u_beta"},
        "activation_linear_operator_desc.md", "alpha * x + beta",
        attributes=(Attr("alpha", 1.0), Attr("beta", 0.0)), fuses=True, ulps=0.5,
        absolute=lambda x, alpha, beta: np.spacing(np.abs(alpha * x).astype(np.float32)).astype(np.float64),
        precision="0.5 ULP of the result and 1 ULP of alpha * x (two roundings)"),
    Row("ACTIVATION_SOFTPLUS", "softplus", "softplus", ("input_tensor",), ACTIVATION_FLOAT, _softplus,
        {"float": "(max(u_steepness * a, F(0.0)) + log(F(1.0) + exp(-abs(u_steepness * a)))) / u_steepness"},
        "activation_softplus_operator_desc.md", "ln(1 + e^(steepness x)) / steepness",
        attributes=(Attr("steepness", 1.0, minimum=1.0, minimum_until=FL.FL_6_4),), fuses=True, ulps=4.0,
        absolute=lambda x, steepness: np.where(np.abs(steepness * x) > F32_MAX, np.inf, 2.0**-20 / np.abs(steepness)),
        precision="4 ULP and 2^-20 / |steepness| absolute (WGSL's log on [1, 2], exp, a division)"),
    Row("ACTIVATION_GELU", "gelu", "gelu", ("input_tensor",), ((FL.FL_5_1, (1, 8), FLOATS),),
        lambda x: 0.5 * x * (1 + erf(x / math.sqrt(2))),
        {"float": "F(0.5) * a * (F(1.0) + erf_approx(a * F(0.7071067811865476)))"},
        "activation_gelu_operator_desc.md", "x (1 + erf(x / sqrt(2))) / 2", fuses=True, ulps=4.0,
        absolute=lambda x: 2.0e-7 * np.abs(x) + 2.0**-24,
        precision="erf by Abramowitz & Stegun 7.1.26 (1.5e-7 absolute; WGSL has no erf): 2e-7 |x| absolute and 4 ULP"),
    Row("ACTIVATION_HARD_SIGMOID", "hard_sigmoid", "hard_sigmoid", ("input_tensor",), ACTIVATION_FLOAT,
        _hard_sigmoid, {"float": "max_num(F(0.0), min_num(u_alpha * a + u_beta, F(1.0)))"},
        "activation_hard_sigmoid_operator_desc.md", "max(0, min(alpha * x + beta, 1)) (NaN gives 1, as HLSL's min)",
        attributes=(Attr("alpha", 0.2), Attr("beta", 0.5)), fuses=True, ulps=0.5,
        absolute=lambda x, alpha, beta: np.spacing(np.abs(alpha * x).astype(np.float32)).astype(np.float64),
        precision="0.5 ULP of the result and 1 ULP of alpha * x (two roundings)"),
    Row("ACTIVATION_PARAMETRIC_SOFTPLUS", "parametric_softplus", "parametric_softplus", ("input_tensor",),
        ACTIVATION_FLOAT, _parametric_softplus, {"float": "parametric_softplus(a, u_alpha, u_beta)"},
        "activation_parametric_softplus_operator_desc.md", "alpha ln(1 + e^(beta x))",
        attributes=(Attr("alpha", 1.0), Attr("beta", 1.0)), fuses=True, ulps=4.5,
        absolute=lambda x, alpha, beta: np.where(np.abs(beta * x) > F32_MAX, np.inf, np.abs(alpha) * 2.0**-20),
        precision="4.5 ULP and 2^-20 |alpha| absolute (WGSL's log on [1, 2], exp)"),
    Row("ACTIVATION_SCALED_ELU", "scaled_elu", "scaled_elu", ("input_tensor",), ACTIVATION_FLOAT,
        lambda x, alpha, gamma: np.where(x > 0, gamma * x, gamma * (alpha * np.exp(x) - alpha)),
        {"float": "select(u_gamma * (u_alpha * exp(a) - u_alpha), u_gamma * a, a > F(0.0))"},
        "activation_scaled_elu_operator_desc.md", "gamma x where x > 0, else gamma (alpha e^x - alpha)",
        attributes=(Attr("alpha", 1.6732), Attr("gamma", 1.0507)), fuses=True, ulps=1.5,
        absolute=lambda x, alpha, gamma: np.where(x > 0, 0.0, np.abs(alpha * gamma) * 2.0**-22),
        precision="1.5 ULP, and |alpha gamma| 2^-22 absolute for x <= 0 (WGSL's exp: (3 + 2|x|) e^x <= 3 ULP of 1; "
                  "alpha gamma infinite: any value there, inf times alpha e^x - alpha, 0 or not by exp's rounding)"),
    Row("ACTIVATION_SCALED_TANH", "scaled_tanh", "scaled_tanh", ("input_tensor",), ACTIVATION_FLOAT,
        lambda x, alpha, beta: alpha * np.tanh(beta * x), {"float": "u_alpha * tanh_real(u_beta * a)"},
        "activation_scaled_tanh_operator_desc.md", "alpha tanh(beta x)",
        attributes=(Attr("alpha", 1.0), Attr("beta", 0.5)), fuses=True,
        ulps=lambda x, alpha, beta: 2 * tanh_ulps(beta * x) + 1.5,
        absolute=lambda x, alpha, beta: np.abs(alpha) * 2.0**-21,
        precision="2 (8.5 + 4|beta x|) + 1.5 ULP and 2^-21 |alpha| absolute (tanh's, scaled)"),
    Row("ACTIVATION_SOFTSIGN", "softsign", "softsign", ("input_tensor",), ACTIVATION_FLOAT,
        lambda x: np.where(np.isinf(x), np.sign(x), x / (1 + np.abs(x))),
        {"float": "select(a / (F(1.0) + abs(a)), sign(a), abs(a) >= F(16777216.0))"},
        "activation_softsign_operator_desc.md", "x / (1 + |x|) (+-1 at +-inf)", fuses=True, ulps=3.0,
        precision="3 ULP (an addition and WGSL's division)"),
    Row("ACTIVATION_THRESHOLDED_RELU", "thresholded_relu", "thresholded_relu", ("input_tensor",), ACTIVATION_FLOAT,
        lambda x, alpha: np.where(x > alpha, x, 0.0), {"float": "select(F(0.0), a, a > u_alpha)"},
        "activation_thresholded_relu_operator_desc.md", "x where x > alpha, else 0 (NaN gives 0)",
        attributes=(Attr("alpha", 1.0),), fuses=True),
    Row("ACTIVATION_SHRINK", "shrink", "shrink", ("input_tensor",), (
        (FL.FL_5_1, (1, 8), TYPES_8),
        (FL.FL_3_0, (1, 8), FLOATS),
        (FL.FL_2_0, (4, 5), FLOATS),
    ), _shrink, {"float": "select(select(F(0.0), a + u_bias, a < -u_threshold), a - u_bias, a > u_threshold)",
                 "sint": "select(select(0, a + u_bias, int_below(a, ceil(-u_threshold))), a - u_bias, "
                         "int_above(a, floor(u_threshold)))",
                 "uint": "select(select(0u, a + u_bias, uint_below(a, ceil(-u_threshold))), a - u_bias, "
                         "uint_above(a, floor(u_threshold)))"},
        "activation_shrink_operator_desc.md",
        "x - bias where x > threshold, x + bias where x < -threshold, else 0 (integers: the comparisons exact, bias "
        "truncated toward zero and saturated to the type, the result wrapping)",
        attributes=(Attr("bias", 0.0), Attr("threshold", 0.5)), fuses=True, ulps=0.5, int_attributes=_shrink_ints,
        precision="correctly rounded (0.5 ULP)"),
    Row("ACTIVATION_CELU", "celu", "celu", ("input_tensor",), ((FL.FL_3_0, (1, 8), FLOATS),), _celu,
        {"float": "celu(a, u_alpha)"},
        "activation_celu_operator_desc.md",
        "max(0, x) + min(0, alpha (e^(x / alpha) - 1)) (x (1 + x / 2 alpha) where |x / alpha| < 2^-12: x itself for an "
        "infinite alpha)",
        attributes=(Attr("alpha", 1.0),), fuses=True,
        ulps=_celu_ulps,
        precision="7 + 4|u| ULP, u = x / alpha (WGSL's division; alpha (e^u - 1) by its Taylor series below |u| = "
                  "0.5, else WGSL's exp less 1; beyond u = 80 as e^(u + ln|alpha|): and 6|ln|alpha|| + 8 ULP more)"),
    Row("ACTIVATION_HARD_SWISH", "hard_swish", "hard_swish", ("input_tensor",), ((FL.FL_6_2, (1, 8), FLOATS),),
        _hard_swish, {"float": "hard_swish(a, u_alpha, u_beta)"},
        "activation_hard_swish_operator_desc.md", "x max(0, min(alpha x + beta, 1)) (0 where the second factor is 0)",
        attributes=(Attr("alpha", 1 / 6), Attr("beta", 0.5)), ulps=0.5,
        absolute=lambda x, alpha, beta: np.abs(x) * (np.spacing(np.abs(alpha * x).astype(np.float32)) + 2.0**-24),
        precision="0.5 ULP, and |x| (1 ULP of alpha x + 2^-24) absolute"),
    Row("ACTIVATION_SWISH", "swish", "swish", ("input_tensor",), ((FL.FL_6_2, (1, 8), FLOATS),), _swish,
        {"float": "swish(a, u_sigmoid_input_scale)"},
        "activation_swish_operator_desc.md",
        "x / (1 + e^(-sigmoid_input_scale x)) (0 where x is infinite and the quotient is inf / inf: the limit)",
        attributes=(Attr("sigmoid_input_scale", 1.0),),
        ulps=_swish_ulps, precision="6.5 + 3|v| ULP, v = sigmoid_input_scale x (WGSL's exp, an addition and a "
                                    "division); below v = -80, x e^v as e^(v + ln|x|): and 6|ln|x|| + 8 ULP more"),
    Row("ACTIVATION_IDENTITY", "activation_identity", "activation_identity", ("input_tensor",), ACTIVATION_FLOAT,
        lambda x: x, {"float": "a"}, "activation_identity_operator_desc.md", "x (a copy)", fuses=True, copy=True),
    Row("ACTIVATION_PARAMETERIZED_RELU", "parameterized_relu", "parameterized_relu", ("input_tensor", "slope_tensor"), (
        (FL.FL_5_1, (1, 8), FLOATS | {I32, I16, I8}),
        (FL.FL_3_0, (1, 8), FLOATS),
        (FL.FL_2_0, (4, 5), FLOATS),
        (FL.FL_1_0, {4}, FLOATS),
    ), _prelu, {"float": "select(b * a, a, a >= F(0.0))", "int": "select(b * a, a, a >= 0)"},
        "activation_parameterized_relu_operator_desc.md",
        "x where x >= 0, else slope * x (slope a tensor; integers wrap)", ulps=0.5,
        precision="correctly rounded (0.5 ULP)"),
)
