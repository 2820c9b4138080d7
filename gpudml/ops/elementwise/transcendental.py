"""Rows of the element-wise table: float math (SQRT, EXP, LOG, RECIP, the trigonometric and
hyperbolic functions and their inverses, TANH, POW, CONSTANT_POW, ERF, CEIL, FLOOR, ROUND), each
with its precision as WGSL's accuracy table gives it. `ROWS` in table order; table.py places them
in `TABLE`."""

from __future__ import annotations

import math

import numpy as np

from ...kernels.elementwise import Attribute
from ...types import TYPES_8, RoundingMode
from ..precision import as_float64, pow_ulps
from .common import FL, FLOATS, UNARY_2_0, UNARY_FLOAT
from .row import Attr, Row


def _exp_ulps(x, **_):
    return 3 + 2 * np.abs(x)


def tanh_ulps(x, **_):
    return 8.5 + 4 * np.minimum(np.abs(x), 10.0)


TANH_PRECISION = ("8.5 + 4|x| ULP and 2^-21 absolute (WGSL's tanh is inherited from sinh(x) / cosh(x), each from "
                  "exp); +-1 from |x| >= 10")


TANH_WGSL = "select(select(tanh(a), sign(a), abs(a) >= F(10.0)), a, is_nan(f32(a)))"
_PI = math.pi


def erf(x):
    return np.frompyfunc(math.erf, 1, 1)(x).astype(np.float64)


def _sin_cos_error(x, **_):
    return np.where(np.abs(x) <= _PI, 2.0**-11, 2.0)


def _f(x):
    return np.asarray(x, np.float64)


def _tan_error(x, **_):
    """WGSL's tan is inherited from sin(x) / cos(x), each 2^-11 absolute in [-pi, pi]: the
    quotient's error where |cos x| exceeds that; beyond [-pi, pi] or next to a pole, any value."""
    c = np.abs(np.cos(x))
    t = np.abs(np.tan(x))
    near = np.where(c > 2.0**-11, 2.0**-11 * (1 + t) / np.maximum(c - 2.0**-11, 2.0**-60), np.inf)
    return np.where(np.abs(x) <= _PI, near, np.inf)


def _atan2(y, x):
    return np.arctan2(y, x)


def _erf_error(x, **_):
    return np.where(np.abs(x) >= 0.5, 1.5e-7 + 2.0**-21, 0.0)


def _round(x, rounding_mode=RoundingMode.HALVES_TO_NEAREST_EVEN):
    mode = RoundingMode.coerce(rounding_mode)
    if mode == RoundingMode.HALVES_TO_NEAREST_EVEN:
        return np.rint(x)
    t = np.trunc(x)
    if mode == RoundingMode.TOWARD_ZERO:
        return t
    return np.where(np.abs(x - t) >= 0.5, t + np.sign(x), t)  # halves away from zero


def _pow_real(x, e):
    """x^e in float64 as pow_signed computes it: IEEE pow's special values, the sign of a
    negative base with an integral exponent, NaN for a negative base with another."""
    with np.errstate(all="ignore"):
        r = np.power(np.abs(x), e)
        integral = np.floor(e) == e
        odd = integral & (np.abs(np.fmod(e, 2)) == 1)
        r = np.where(np.signbit(x) & odd, -r, r)
        r = np.where((x < 0) & np.isfinite(x) & ~integral & ~np.isnan(e), np.nan, r)
        return np.where((e == 0) | (x == 1), 1.0, r)


def _int_pow(x, e):
    """Integer x^e: e >= 0 exact modulo 2^bits (wrapping, as MULTIPLY); e < 0 the real
    result truncated toward zero (1, +-1 for x = -1, 0), 0^e the type's largest value."""
    info = np.iinfo(x.dtype)

    def one(a, k):
        if k >= 0:
            return pow(a, k, 2**64)
        if a == 1:
            return 1
        if a == -1:
            return -1 if k % 2 else 1
        return int(info.max) if a == 0 else 0
    out = np.frompyfunc(one, 2, 1)(x.astype(object), e.astype(object))
    return np.asarray([int(v) % 2**64 for v in np.ravel(out)], np.uint64).reshape(np.shape(out)).astype(x.dtype)


def _pow(x, e):
    if x.dtype.kind == "f":
        return _pow_real(x, _f(e))
    if e.dtype.kind == "f":  # a real result, truncated and saturated to the integer type
        info = np.iinfo(x.dtype)
        r = np.trunc(_pow_real(as_float64(x), _f(e)))
        r = np.where(np.isnan(r), 0, np.clip(r, info.min, info.max))
        return r.astype(x.dtype)
    return _int_pow(x, e)


_POW_PRECISION = ("WGSL's pow (inherited from exp2(e log2|x|)): 3 + 3|t| ULP, t = e log2|x|, and log2's error (3 "
                  "ULP, or 2^-21 absolute for |x| in [0.5, 2]) times |e|, through exp2; the sign exact for integral "
                  "exponents")


ROWS: tuple[Row, ...] = (
    Row("ELEMENT_WISE_SQRT", "sqrt", "sqrt", ("input_tensor",), (
        (FL.FL_3_0, (1, 8), FLOATS),
        (FL.FL_1_0, {4}, FLOATS),
    ), np.sqrt, {"float": "sqrt(a)"},
        "element_wise_sqrt_operator_desc.md", "the square root of x",
        scale_bias=True, ulps=5.0, precision="5 ULP (WGSL: sqrt is inherited from 1 / inverseSqrt: 2 + 2.5 ULP)"),
    Row("ELEMENT_WISE_EXP", "exp", "exp", ("input_tensor",), UNARY_FLOAT, np.exp, {"float": "exp(a)"},
        "element_wise_exp_operator_desc.md", "e^x", scale_bias=True, ulps=_exp_ulps,
        precision="3 + 2|x| ULP (WGSL's exp)"),
    Row("ELEMENT_WISE_LOG", "log", "log", ("input_tensor",), UNARY_FLOAT, np.log, {"float": "log(a)"},
        "element_wise_log_operator_desc.md", "the natural logarithm of x", scale_bias=True, ulps=3.0,
        absolute=2.0**-21, precision="3 ULP, or 2^-21 absolute for x in [0.5, 2] (WGSL's log)"),
    Row("ELEMENT_WISE_RECIP", "recip", "recip", ("input_tensor",), UNARY_FLOAT, lambda x: 1 / x,
        {"float": "F(1.0) / a"}, "element_wise_recip_operator_desc.md", "1 / x", scale_bias=True,
        ulps=2.5, precision="2.5 ULP (WGSL's division)"),
    Row("ELEMENT_WISE_SIN", "sin", "sin", ("input_tensor",), UNARY_FLOAT, np.sin, {"float": "sin(reduced_angle(a))"},
        "element_wise_sin_operator_desc.md", "sin(x)", scale_bias=True, absolute=_sin_cos_error,
        precision="2^-11 absolute for x in [-pi, pi] (WGSL's sin); beyond, WGSL promises nothing: any value in "
                  "[-1, 1]"),
    Row("ELEMENT_WISE_COS", "cos", "cos", ("input_tensor",), UNARY_FLOAT, np.cos, {"float": "cos(reduced_angle(a))"},
        "element_wise_cos_operator_desc.md", "cos(x)", scale_bias=True, absolute=_sin_cos_error,
        precision="2^-11 absolute for x in [-pi, pi] (WGSL's cos); beyond, WGSL promises nothing: any value in "
                  "[-1, 1]"),
    Row("ELEMENT_WISE_TANH", "tanh", "tanh", ("input_tensor",), (
        (FL.FL_3_0, (1, 8), FLOATS),
        (FL.FL_2_0, {4}, FLOATS),
    ), np.tanh, {"float": TANH_WGSL}, "element_wise_tanh_operator_desc.md", "tanh(x)",
        scale_bias=True, ulps=tanh_ulps, absolute=2.0**-21, precision=TANH_PRECISION),
    Row("ELEMENT_WISE_POW", "pow", "pow", ("input_tensor", "exponent_tensor"), (
        (FL.FL_3_0, (1, 8), TYPES_8),
        (FL.FL_1_0, {4}, FLOATS),
    ), _pow, {
        "float": "pow_real(a, b)", "float,sint": "pow_signed(a, F(b), (b & 1) != 0)",
        "float,uint": "pow_signed(a, F(b), (b & 1u) != 0u)",
        "sint": "ipow_s(a, b, u_top)", "sint,uint": "bitcast<i32>(ipow_wrap(bitcast<u32>(a), b))",
        "uint,sint": "ipow_us(a, b, u_top)", "uint": "ipow_wrap(a, b)",
        "sint,float": "saturate_s(pow_real(F(a), b), u_bottom, u_top)",
        "uint,float": "saturate_u(pow_real(F(a), b), u_top)"},
        "element_wise_pow_operator_desc.md",
        "x^exponent (a negative base: the exact sign for integral exponents, NaN for others; integers: exact, "
        "wrapping; a float exponent on integers: the real result truncated and saturated)",
        scale_bias=True, mixed=(("exponent_tensor", FL.FL_3_0),), ulps=pow_ulps, precision=_POW_PRECISION,
        int_attributes=lambda values, dtype: (Attribute("top", "value", int(np.iinfo(dtype).max)),
                                              Attribute("bottom", "value", int(np.iinfo(dtype).min)))),
    Row("ELEMENT_WISE_CONSTANT_POW", "constant_pow", "constant_pow", ("input_tensor",), UNARY_FLOAT,
        lambda x, exponent: _pow_real(x, exponent), {"float": "pow_real(a, u_exponent)"},
        "element_wise_constant_pow_operator_desc.md",
        "x^exponent (a negative base: the exact sign for integral exponents, NaN for others)",
        attributes=(Attr("exponent", 1.0),), scale_bias=True, ulps=lambda x, exponent: pow_ulps(x, exponent),
        precision=_POW_PRECISION),
    Row("ELEMENT_WISE_ACOS", "acos", "acos", ("input_tensor",), UNARY_FLOAT, np.arccos, {"float": "acos_real(a)"},
        "element_wise_acos_operator_desc.md", "arccos(x) (NaN outside [-1, 1])", scale_bias=True, ulps=4096.0,
        absolute=2.0**-21, precision="4096 ULP and 2^-21 absolute (computed as WGSL defines acos: atan2(sqrt((1 - x)"
        "(1 + x)), x), atan2's 4096 ULP and the square root's rounding)"),
    Row("ELEMENT_WISE_ASIN", "asin", "asin", ("input_tensor",), UNARY_FLOAT, np.arcsin, {"float": "asin_real(a)"},
        "element_wise_asin_operator_desc.md", "arcsin(x) (NaN outside [-1, 1])", scale_bias=True, ulps=4096.0,
        absolute=2.0**-21, precision="4096 ULP and 2^-21 absolute (computed as WGSL defines asin: atan2(x, "
        "sqrt((1 - x)(1 + x))), atan2's 4096 ULP and the square root's rounding)"),
    Row("ELEMENT_WISE_ATAN", "atan", "atan", ("input_tensor",), UNARY_FLOAT, np.arctan, {"float": "atan_real(a)"},
        "element_wise_atan_operator_desc.md", "arctan(x)", scale_bias=True, ulps=4096.0,
        precision="4096 ULP (WGSL's atan)"),
    Row("ELEMENT_WISE_ATAN_YX", "atan_yx", "atan_yx", ("a_tensor", "b_tensor"), ((FL.FL_3_1, (1, 8), FLOATS),),
        _atan2, {"float": "atan2_real(a, b)"}, "element_wise_atan_yx_operator_desc.md",
        "atan2(a, b), a the y and b the x coordinate (IEEE atan2's values at the origin and the infinities)",
        ulps=4096.0, precision="4096 ULP (WGSL's atan2)"),
    Row("ELEMENT_WISE_ACOSH", "acosh", "acosh", ("input_tensor",), UNARY_2_0, np.arccosh, {"float": "acosh_real(a)"},
        "element_wise_acosh_operator_desc.md", "arcosh(x) (NaN below 1)", scale_bias=True, ulps=6.0,
        absolute=2.0**-20, precision="6 ULP and 2^-20 absolute (WGSL's log of x + sqrt((x - 1)(x + 1)), "
        "log(x) + ln 2 beyond 4096)"),
    Row("ELEMENT_WISE_ASINH", "asinh", "asinh", ("input_tensor",), UNARY_2_0, np.arcsinh, {"float": "asinh_real(a)"},
        "element_wise_asinh_operator_desc.md", "arsinh(x)", scale_bias=True, ulps=6.0, absolute=2.0**-20,
        precision="6 ULP and 2^-20 absolute (WGSL's log of |x| + sqrt(x^2 + 1), log|x| + ln 2 beyond 4096, "
        "x itself below 2^-12)"),
    Row("ELEMENT_WISE_ATANH", "atanh", "atanh", ("input_tensor",), UNARY_2_0, np.arctanh, {"float": "atanh_real(a)"},
        "element_wise_atanh_operator_desc.md", "artanh(x) (+-inf at +-1, NaN beyond)", scale_bias=True, ulps=3.5,
        absolute=2.0**-21, precision="3.5 ULP and 2^-21 absolute (WGSL's log of (1 + |x|) / (1 - |x|), halved; "
                                     "x itself below 2^-12)"),
    Row("ELEMENT_WISE_COSH", "cosh", "cosh", ("input_tensor",), UNARY_2_0, np.cosh, {"float": "cosh_real(a)"},
        "element_wise_cosh_operator_desc.md", "cosh(x)", scale_bias=True, ulps=lambda x, **_: 10 + 2 * np.abs(x),
        precision="10 + 2|x| ULP (WGSL's exp of |x| / 2, squared, halved, plus its reciprocal: finite up to "
                  "float32's limit)"),
    Row("ELEMENT_WISE_SINH", "sinh", "sinh", ("input_tensor",), UNARY_2_0, np.sinh, {"float": "sinh_real(a)"},
        "element_wise_sinh_operator_desc.md", "sinh(x)", scale_bias=True, ulps=lambda x, **_: 13 + 3 * np.abs(x),
        precision="13 + 3|x| ULP (its Taylor series below |x| = 1; beyond, WGSL's exp of |x| / 2, squared, less its "
                  "reciprocal)"),
    Row("ELEMENT_WISE_TAN", "tan", "tan", ("input_tensor",), UNARY_FLOAT, np.tan, {"float": "tan(reduced_angle(a))"},
        "element_wise_tan_operator_desc.md", "tan(x)", scale_bias=True, ulps=2.5, absolute=_tan_error,
        precision="WGSL's tan, inherited from sin(x) / cos(x), each 2^-11 absolute in [-pi, pi]: 2^-11 (1 + |tan x|) "
                  "/ (|cos x| - 2^-11) absolute and 2.5 ULP; beyond [-pi, pi] or next to a pole, WGSL promises "
                  "nothing"),
    Row("ELEMENT_WISE_CEIL", "ceil", "ceil", ("input_tensor",), UNARY_FLOAT, np.ceil, {"float": "ceil(a)"},
        "element_wise_ceil_operator_desc.md", "the least integer >= x", scale_bias=True),
    Row("ELEMENT_WISE_FLOOR", "floor", "floor", ("input_tensor",), UNARY_FLOAT, np.floor, {"float": "floor(a)"},
        "element_wise_floor_operator_desc.md", "the largest integer <= x", scale_bias=True),
    Row("ELEMENT_WISE_ROUND", "round", "round", ("input_tensor",), (
        (FL.FL_3_0, (1, 8), FLOATS),
        (FL.FL_2_1, {4}, FLOATS),
    ), _round, {"float": {RoundingMode.HALVES_TO_NEAREST_EVEN: "round(a)", RoundingMode.TOWARD_ZERO: "trunc(a)",
                          RoundingMode.TOWARD_INFINITY: "round_away(a)"}},
        "element_wise_round_operator_desc.md",
        "x rounded to an integer as rounding_mode says (halves to even, toward zero, halves away from zero)",
        attributes=(Attr("rounding_mode", RoundingMode.HALVES_TO_NEAREST_EVEN, kind="enum", enum=RoundingMode),)),
    Row("ELEMENT_WISE_ERF", "erf", "erf", ("input_tensor",), UNARY_2_0, erf, {"float": "erf_real(a)"},
        "element_wise_erf_operator_desc.md", "erf(x)", scale_bias=True, ulps=2.0, absolute=_erf_error,
        precision="2 ULP below |x| = 0.5 (its Taylor series); beyond, Abramowitz & Stegun 7.1.26 (1.5e-7 absolute; "
                  "WGSL has no erf) and 2^-21 absolute"),
)
