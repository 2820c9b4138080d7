"""Rows of the element-wise table: arithmetic (IDENTITY, ADD, ADD1, MULTIPLY, SUBTRACT, DIVIDE,
MEAN, NEGATE, ABS, SIGN, DIFFERENCE_SQUARE, MODULUS_FLOOR, MODULUS_TRUNCATE), the larger and the
smaller and clipping (MAX, MIN, CLIP, CLIP1, THRESHOLD, CLIP_GRAD, CLIP_GRAD1). `ROWS` in table
order; table.py places them in `TABLE`."""

from __future__ import annotations

import math

import numpy as np

from ...kernels.elementwise import Attribute
from ...types import F64, I8, I16, I32, I64, TYPES_8, U32, U64
from .common import (
    ALL_INTS,
    FL,
    FLOATS,
    INTS_8_32,
    MINMAX,
    SINTS,
    grad_bounds,
    integer_bounds,
    integer_or_float,
    max_num,
    min_num,
    wrap,
)
from .row import Attr, Row


def _int_divide(a, b):
    """Integer a / b truncated toward zero, a where b is 0 (WGSL's rule; the page says
    nothing), wrapped in the type (INT_MIN / -1 is INT_MIN)."""
    def one(x, y):
        if y == 0:
            return x % 2**64
        q = abs(x) // abs(y)
        return (q if (x < 0) == (y < 0) else -q) % 2**64
    out = np.frompyfunc(one, 2, 1)(a.astype(object), b.astype(object))
    return np.asarray(out.astype(np.uint64)).astype(a.dtype)


def _int_mean(a, b):
    return ((a.astype(np.int64) + b.astype(np.int64)) >> 1).astype(a.dtype)


def _clip(x, min, max):
    if x.dtype.kind == "f":
        return min_num(np.full_like(x, max), max_num(np.full_like(x, min), x))
    lo, hi = integer_bounds(min, max, x.dtype)
    return np.minimum(hi, np.maximum(lo, x)).astype(x.dtype)


_MODULUS_TYPES = (
    (FL.FL_6_0, (1, 8), FLOATS | ALL_INTS),
    (FL.FL_3_0, (1, 8), TYPES_8),
    (FL.FL_2_1, {4}, TYPES_8),
)


def _int_remainder(floor: bool):
    """Integer a mod b: truncated (the dividend's sign) or floored (the divisor's); a where
    b is 0 (a - b * q with DIVIDE's a / 0 = a); exact, wrapped in the type."""
    def one(x, y):
        if y == 0:
            return x % 2**64
        r = abs(x) % abs(y) * (1 if x >= 0 else -1)
        if floor and r != 0 and (r < 0) != (y < 0):
            r += y
        return r % 2**64
    def remainder(a, b):
        out = np.frompyfunc(one, 2, 1)(a.astype(object), b.astype(object))
        return np.asarray(out.astype(np.uint64)).astype(a.dtype)
    return remainder


def _float_mod_floor(a, b):
    """Python's % on floats: fmod, plus b where the signs differ; a zero takes b's sign."""
    r = np.fmod(a, b)
    return np.where(r == 0, np.copysign(0.0, b), np.where((r < 0) != (b < 0), r + b, r))


def _clip_grad(x, gradient, min, max):
    if x.dtype.kind == "f":
        return np.where((x <= min) | (x >= max), 0.0, gradient)
    lo, lo_on, hi, hi_on = grad_bounds(min, max, x.dtype)
    zero = ((lo_on != 0) & (x <= lo)) | ((hi_on != 0) & (x >= hi))
    return np.where(zero, 0, gradient).astype(x.dtype)


def _clip_grad1(x, gradient, min=None, max=None):
    """CLIP_GRAD1: min and max in x's own type (None: the type's lowest and highest value)."""
    if x.dtype.kind == "f":
        lo = -np.inf if min is None else min
        hi = np.inf if max is None else max
        return np.where((x <= lo) | (x >= hi), 0.0, gradient)
    info = np.iinfo(x.dtype)
    lo = np.array(info.min if min is None else min, x.dtype)
    hi = np.array(info.max if max is None else max, x.dtype)
    return np.where((x <= lo) | (x >= hi), np.zeros_like(gradient), gradient).astype(x.dtype)


def _sign(x):
    if x.dtype.kind == "f":
        return np.where(x > 0, 1.0, np.where(x < 0, -1.0, 0.0))  # NaN: 0 (the page's "otherwise")
    if x.dtype.kind == "u":
        return (x > 0).astype(x.dtype)
    return np.sign(x.astype(np.int64)).astype(x.dtype)


def _threshold(x, min):
    if x.dtype.kind == "f":
        return max_num(x, np.full_like(x, min))
    lo, _ = integer_bounds(min, math.inf, x.dtype)
    return np.maximum(x, np.array(lo, x.dtype))


def _threshold_ints(values, dtype):
    lo, _ = integer_bounds(values["min"], math.inf, dtype)
    return (Attribute("min", "value", lo),)


def _clip1(x, min=None, max=None):
    if x.dtype.kind == "f":
        lo = -np.inf if min is None else min
        hi = np.inf if max is None else max
        return max_num(np.full_like(x, lo), min_num(x, np.full_like(x, hi)))
    info = np.iinfo(x.dtype)
    lo = info.min if min is None else min
    hi = info.max if max is None else max
    return np.maximum(np.array(lo, x.dtype), np.minimum(x, np.array(hi, x.dtype)))


_SIGN_TYPES = (
    (FL.FL_4_1, (1, 8), FLOATS | ALL_INTS),
    (FL.FL_3_0, (1, 8), TYPES_8),
    (FL.FL_2_1, {4}, TYPES_8),
    (FL.FL_2_0, {4}, FLOATS),
)


ROWS: tuple[Row, ...] = (
    Row("ELEMENT_WISE_IDENTITY", "identity", "identity", ("input_tensor",), (
        (FL.FL_4_1, (1, 8), TYPES_8 | {F64, I64, U64}),
        (FL.FL_3_0, (1, 8), TYPES_8),
        (FL.FL_2_1, (4, 5), TYPES_8),
        (FL.FL_1_0, (4, 5), FLOATS),
    ), lambda x: x, {"float": "a", "int": "a", "int64": "a"},
        "element_wise_identity_operator_desc.md",
        "x (a copy, or a layout change through strides)", scale_bias=True, copy=True),
    Row("ELEMENT_WISE_ADD", "add0", "add0", ("a_tensor", "b_tensor"), (
        (FL.FL_5_1, (1, 8), FLOATS | ALL_INTS),
        (FL.FL_4_1, (1, 8), FLOATS | {I64, I32, U64, U32}),
        (FL.FL_3_0, (1, 8), FLOATS | {I32, U32}),
        (FL.FL_2_1, (4, 5), FLOATS | {I32, U32}),
        (FL.FL_1_0, (4, 5), FLOATS),
    ), integer_or_float(np.add, wrap(np.add)), {"float": "a + b", "int": "a + b", "int64": "w64_add(a, b)"},
        "element_wise_add_operator_desc.md", "a + b",
        ulps=0.5, precision="correctly rounded (0.5 ULP)"),
    Row("ELEMENT_WISE_ADD1", "add1", "add", ("a_tensor", "b_tensor"), (
        (FL.FL_3_0, (1, 8), FLOATS),
        (FL.FL_2_0, (4, 5), FLOATS),
    ), np.add, {"float": "a + b"},
        "element_wise_add1_operator_desc.md",
        "a + b, then the fused activation", fused_activation=True, ulps=0.5, precision="correctly rounded (0.5 ULP)"),
    Row("ELEMENT_WISE_MULTIPLY", "multiply", "multiply", ("a_tensor", "b_tensor"), (
        (FL.FL_5_1, (1, 8), FLOATS | ALL_INTS),
        (FL.FL_4_1, (1, 8), FLOATS | {I64, I32, U64, U32}),
        (FL.FL_3_0, (1, 8), FLOATS | {I32, U32}),
        (FL.FL_2_1, (4, 5), FLOATS | {I32, U32}),
        (FL.FL_1_0, (4, 5), FLOATS),
    ), integer_or_float(np.multiply, wrap(np.multiply)),
        {"float": "a * b", "int": "a * b", "int64": "w64_mul(a, b)"},
        "element_wise_multiply_operator_desc.md", "a * b",
        ulps=0.5, precision="correctly rounded (0.5 ULP)"),
    Row("ELEMENT_WISE_ABS", "abs", "abs", ("input_tensor",), (
        (FL.FL_4_1, (1, 8), FLOATS | SINTS),
        (FL.FL_3_0, (1, 8), FLOATS | {I32, I16, I8}),
        (FL.FL_2_1, {4}, FLOATS | {I32, I16, I8}),
        (FL.FL_1_0, {4}, FLOATS),
    ), integer_or_float(np.abs, lambda x: np.abs(x.astype(np.int64)).astype(x.dtype)),
        {"float": "abs(a)", "sint": "abs(a)", "sint64": "w64_abs_s(a)"},
        "element_wise_abs_operator_desc.md",
        "|x| (integers wrap: |INT_MIN| is INT_MIN)", scale_bias=True),
    Row("ELEMENT_WISE_SUBTRACT", "subtract", "subtract", ("a_tensor", "b_tensor"), (
        (FL.FL_5_1, (1, 8), FLOATS | ALL_INTS),
        (FL.FL_4_1, (1, 8), FLOATS | {I64, I32, U64, U32}),
        (FL.FL_3_0, (1, 8), FLOATS | {I32, U32}),
        (FL.FL_2_1, {4}, FLOATS | {I32, U32}),
        (FL.FL_1_0, {4}, FLOATS),
    ), integer_or_float(np.subtract, wrap(np.subtract)),
        {"float": "a - b", "int": "a - b", "int64": "w64_sub(a, b)"},
        "element_wise_subtract_operator_desc.md", "a - b",
        ulps=0.5, precision="correctly rounded (0.5 ULP)"),
    Row("ELEMENT_WISE_DIVIDE", "divide", "divide", ("a_tensor", "b_tensor"), (
        (FL.FL_6_0, (1, 8), FLOATS | ALL_INTS),
        (FL.FL_5_1, (1, 8), FLOATS | INTS_8_32),
        (FL.FL_3_0, (1, 8), FLOATS | {I32, U32}),
        (FL.FL_2_1, {4}, FLOATS | {I32, U32}),
        (FL.FL_1_0, {4}, FLOATS),
    ), integer_or_float(np.divide, _int_divide),
        {"float": "a / b", "int": "select(a / b, a, b == 0)", "sint64": "w64_div_s(a, b)",
         "uint64": "w64_div_u(a, b)"},
        "element_wise_divide_operator_desc.md",
        "a / b (integers: truncated toward zero; a where b is 0, as WGSL divides)",
        ulps=2.5, precision="2.5 ULP (WGSL's division)"),
    Row("ELEMENT_WISE_MAX", "max", "max", ("a_tensor", "b_tensor"), MINMAX,
        integer_or_float(max_num, np.maximum),
        {"float": "max_num(a, b)", "int": "max(a, b)", "sint64": "w64_max_s(a, b)", "uint64": "w64_max_u(a, b)"},
        "element_wise_max_operator_desc.md", "the larger of a and b (a NaN operand gives the other)"),
    Row("ELEMENT_WISE_MIN", "min", "min", ("a_tensor", "b_tensor"), MINMAX,
        integer_or_float(min_num, np.minimum),
        {"float": "min_num(a, b)", "int": "min(a, b)", "sint64": "w64_min_s(a, b)", "uint64": "w64_min_u(a, b)"},
        "element_wise_min_operator_desc.md", "the smaller of a and b (a NaN operand gives the other)"),
    Row("ELEMENT_WISE_MEAN", "mean", "mean", ("a_tensor", "b_tensor"), (
        (FL.FL_3_0, (1, 8), FLOATS | {I32, U32}),
        (FL.FL_2_1, {4}, FLOATS | {I32, U32}),
        (FL.FL_1_0, {4}, FLOATS),
    ), integer_or_float(lambda a, b: (a + b) / 2, _int_mean),
        {"float": "a * F(0.5) + b * F(0.5)", "int": "(a & b) + ((a ^ b) >> 1u)"},
        "element_wise_mean_operator_desc.md",
        "(a + b) / 2 (integers: rounded toward negative infinity, without overflow)",
        ulps=0.5, precision="correctly rounded (0.5 ULP; halves are exact)"),
    Row("ELEMENT_WISE_NEGATE", "negate", "negate", ("input_tensor",), (
        (FL.FL_5_0, (1, 8), FLOATS | SINTS),
    ), integer_or_float(np.negative, wrap(np.negative)), {"float": "-a", "sint": "-a", "sint64": "w64_neg(a)"},
        "element_wise_negate_operator_desc.md", "-x (integers wrap: -INT_MIN is INT_MIN)"),
    Row("ELEMENT_WISE_CLIP", "clip0", "clip0", ("input_tensor",), MINMAX, _clip,
        {"float": "min_num(F(u_max), max_num(F(u_min), a))", "int": "min(u_max, max(u_min, a))",
         "sint64": "w64_min_s(u_max, w64_max_s(u_min, a))", "uint64": "w64_min_u(u_max, w64_max_u(u_min, a))"},
        "element_wise_clip_operator_desc.md",
        "min(max, max(min, x)) (NaN gives min; integer tensors: the integers within [min, max])",
        attributes=(Attr("min", -math.inf), Attr("max", math.inf)), scale_bias=True),
    Row("ELEMENT_WISE_MODULUS_FLOOR", "modulus_floor", "modulus_floor", ("a_tensor", "b_tensor"), _MODULUS_TYPES,
        integer_or_float(_float_mod_floor, _int_remainder(True)),
        {"float": "float_mod(a, b, true)", "sint": "mod_floor_s(a, b)", "uint": "rem_u(a, b)",
         "sint64": "w64_mod_floor_s(a, b)", "uint64": "w64_rem_u(a, b)"},
        "element_wise_modulus_floor_operator_desc.md",
        "a - b floor(a / b), Python's % (the divisor's sign; floats: NaN where b is 0, integers: a where b is 0)",
        ulps=0.5, precision="exact where |a| >= |b|; a + b correctly rounded (0.5 ULP) where |a| < |b| and "
                            "the signs differ"),
    Row("ELEMENT_WISE_MODULUS_TRUNCATE", "modulus_truncate", "modulus_truncate", ("a_tensor", "b_tensor"),
        _MODULUS_TYPES, integer_or_float(np.fmod, _int_remainder(False)),
        {"float": "float_mod(a, b, false)", "sint": "rem_s(a, b)", "uint": "rem_u(a, b)",
         "sint64": "w64_rem_s(a, b)", "uint64": "w64_rem_u(a, b)"},
        "element_wise_modulus_truncate_operator_desc.md",
        "a - b trunc(a / b), C's fmod and % (the dividend's sign; floats: NaN where b is 0, integers: a where b is 0)",
        precision="exact (C's fmod: the remainder is representable)"),
    Row("ELEMENT_WISE_CLIP_GRAD", "clip_grad0", "clip_grad0", ("input_tensor", "input_gradient_tensor"), (
        (FL.FL_5_0, (1, 8), FLOATS | ALL_INTS),
        (FL.FL_3_1, (1, 8), TYPES_8),
    ), _clip_grad, {"float": "select(b, F(0.0), a <= u_min || a >= u_max)",
                    "int": "select(b, b ^ b, (u_lo_on != F(0.0) && a <= u_lo) || (u_hi_on != F(0.0) && a >= u_hi))",
                    "sint64": "select(b, b ^ b, (u_lo_on != F(0.0) && !w64_lt_s(u_lo, a)) "
                              "|| (u_hi_on != F(0.0) && !w64_lt_s(a, u_hi)))",
                    "uint64": "select(b, b ^ b, (u_lo_on != F(0.0) && !w64_lt_u(u_lo, a)) "
                              "|| (u_hi_on != F(0.0) && !w64_lt_u(a, u_hi)))"},
        "element_wise_clip_grad_operator_desc.md",
        "0 where x <= min or x >= max, else the gradient (a NaN x passes it; integer x compared exactly)",
        attributes=(Attr("min", -math.inf), Attr("max", math.inf)), output="output_gradient_tensor"),
    Row("ELEMENT_WISE_CLIP_GRAD1", "clip_grad", "clip_grad", ("input_tensor", "input_gradient_tensor"), (
        (FL.FL_5_0, (1, 8), FLOATS | ALL_INTS),
    ), _clip_grad1, {"float": "select(b, F(0.0), a <= u_min || a >= u_max)",
                     "int": "select(b, b ^ b, a <= u_min || a >= u_max)",
                     "sint64": "select(b, b ^ b, !w64_lt_s(u_min, a) || !w64_lt_s(a, u_max))",
                     "uint64": "select(b, b ^ b, !w64_lt_u(u_min, a) || !w64_lt_u(a, u_max))"},
        "element_wise_clip_grad1_operator_desc.md",
        "0 where x <= min or x >= max, else the gradient (min and max in the tensor's own type; a NaN x passes it)",
        attributes=(Attr("min", "lowest", kind="value"), Attr("max", "highest", kind="value")),
        output="output_gradient_tensor", min_max_data_type=True),
    Row("ELEMENT_WISE_CLIP1", "clip", "clip", ("input_tensor",), ((FL.FL_5_0, (1, 8), FLOATS | ALL_INTS),), _clip1,
        {"float": "max_num(u_min, min_num(a, u_max))", "int": "max(u_min, min(a, u_max))",
         "sint64": "w64_max_s(u_min, w64_min_s(a, u_max))", "uint64": "w64_max_u(u_min, w64_min_u(a, u_max))"},
        "element_wise_clip1_operator_desc.md",
        "max(min, min(x, max)) with min and max in the tensor's own type (NaN gives max; min > max gives min)",
        attributes=(Attr("min", "lowest", kind="value"), Attr("max", "highest", kind="value")), scale_bias=True,
        min_max_data_type=True),
    Row("ELEMENT_WISE_SIGN", "sign", "sign", ("input_tensor",), _SIGN_TYPES, _sign,
        {"float": "select(select(F(0.0), F(-1.0), a < F(0.0)), F(1.0), a > F(0.0))",
         "sint": "select(select(0, -1, a < 0), 1, a > 0)", "uint": "select(0u, 1u, a > 0u)",
         "sint64": "select(select(w64_zero(), w64_neg(w64_one()), w64_lt_s(a, w64_zero())), w64_one(), "
                   "w64_lt_s(w64_zero(), a))",
         "uint64": "select(w64_one(), w64_zero(), w64_eq(a, w64_zero()))"},
        "element_wise_sign_operator_desc.md", "-1 where x < 0, 1 where x > 0, else 0 (-0.0 and NaN too)"),
    Row("ELEMENT_WISE_THRESHOLD", "threshold", "threshold", ("input_tensor",), (
        (FL.FL_3_0, (1, 8), TYPES_8),
        (FL.FL_2_1, {4}, TYPES_8),
        (FL.FL_1_0, {4}, FLOATS),
    ), _threshold, {"float": "max_num(a, u_min)", "int": "max(a, u_min)"},
        "element_wise_threshold_operator_desc.md",
        "max(x, min) (NaN gives min; integer tensors: the least integer of the type >= min)",
        attributes=(Attr("min", -math.inf),), scale_bias=True, int_attributes=_threshold_ints),
    Row("ELEMENT_WISE_DIFFERENCE_SQUARE", "difference_square", "difference_square", ("a_tensor", "b_tensor"),
        ((FL.FL_3_1, (1, 8), FLOATS | {I32, U32}),), integer_or_float(lambda a, b: (a - b) * (a - b),
                                                                    wrap(lambda a, b: (a - b) * (a - b))),
        {"float": "(a - b) * (a - b)", "int": "(a - b) * (a - b)"},
        "element_wise_difference_square_operator_desc.md", "(a - b)^2 (integers wrap)",
        ulps=2.0, precision="2 ULP (a subtraction and a product, each correctly rounded)"),
)
