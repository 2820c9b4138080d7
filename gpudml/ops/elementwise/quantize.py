"""Rows of the element-wise table: CAST, QUANTIZE_LINEAR and DEQUANTIZE_LINEAR (formulas built
from the desc, per pair of types). `ROWS` in table order; table.py places them in `TABLE`.
QUANTIZED_LINEAR_ADD, of two steps, is a module of its own on the element-wise family
(gpudml/ops/quantized_linear_add.py): it takes `quantize_reference` from here."""

from __future__ import annotations

import math

import numpy as np

from ...errors import InvalidArgumentError
from ...types import F16, F32, F64, I8, I16, I32, I64, TYPES_8, TYPES_11, U8, U16, U64, DataType, FeatureLevel
from .common import FL, FLOATS, INTS_8_32
from .row import Row


def _zero_point_check(scale_rule: bool):
    """(DE)QUANTIZE_LINEAR's rules beyond the table: the zero point may be left out from
    FL_6_2 on; QUANTIZE_LINEAR's scale is FLOAT32 for an INT32 input, else the input's type."""
    def check(op, named, level):
        if "zero_point_tensor" not in named and level < FL.FL_6_2:
            raise InvalidArgumentError(f"{op}: zero_point_tensor is required at {FeatureLevel(level).name} (it is "
                                       f"optional from FL_6_2 on)")
        if scale_rule:
            x, scale = named["input_tensor"].data_type, named["scale_tensor"].data_type
            want = F32 if x == I32 else x
            if scale != want and x in (F32, F16, I32):
                raise InvalidArgumentError(f"{op}: scale_tensor.data_type {scale.name} must be {want.name} for an "
                                           f"input_tensor of {x.name}")
    return check


def quantize_reference(x, scale, zero_point=None, output_data_type=None):
    """clamp(round(x / scale) + zero_point, the output type's range): x / scale exact (a
    float64 quotient of float32 or int32 values decides a tie exactly), rounded half to
    even; NaN (0 / 0, inf / inf) rounds to 0, +-inf (x / 0) saturates."""
    out = np.dtype(_quantize_type(zero_point, output_data_type))
    with np.errstate(all="ignore"):
        q = x.astype(np.float64) / scale.astype(np.float64)
        q = np.clip(np.rint(np.nan_to_num(q, nan=0.0, posinf=4096.0, neginf=-4096.0)), -4096, 4096).astype(np.int64)
    z = 0 if zero_point is None else zero_point.astype(np.int64)
    info = np.iinfo(out)
    return np.clip(q + z, int(info.min), int(info.max)).astype(out)


def _quantize_type(zero_point, output_data_type):
    if zero_point is not None:
        return DataType.from_numpy(np.asarray(zero_point).dtype).numpy
    return DataType.parse(output_data_type or "UINT8", "output_data_type").numpy


def _quantize_out_type(named, attributes):
    given = attributes.pop("output_data_type", None)
    if given is not None or "zero_point_tensor" not in named:
        return DataType.parse(given or "UINT8", "quantize_linear: output_data_type")
    return named["zero_point_tensor"].data_type


def _quantize_wgsl(desc) -> str:
    x = desc.input_tensor.data_type
    q = f"quantize_{'i32' if x == I32 else 'f32'}(a, b)"
    z = "0i" if desc.zero_point_tensor is None else (
        "c" if desc.zero_point_tensor.data_type.is_signed else "i32(c)")
    if desc.output_tensor.data_type.is_signed:
        return f"clamp({q} + {z}, -128i, 127i)"
    return f"u32(clamp({q} + {z}, 0i, 255i))"


def _dequantize(x, scale, zero_point=None, **_):
    """(x - zero_point) * scale, the difference exact."""
    z = 0 if zero_point is None else zero_point.astype(np.float64 if x.dtype.kind == "f" else np.int64)
    return (x.astype(np.float64 if x.dtype.kind == "f" else np.int64) - z).astype(np.float64) * scale.astype(np.float64)


def _dequantize_wgsl(desc) -> str:
    signed = desc.input_tensor.data_type.is_signed
    z = "c" if desc.zero_point_tensor is not None else ("0i" if signed else "0u")
    return f"dq_diff_{'s' if signed else 'u'}(a, {z}) * b"


def _i32_literal(v: int) -> str:
    return f"bitcast<i32>({v & 0xFFFFFFFF}u)"


def _cast_wgsl(desc) -> str:
    """DML_OPERATOR_CAST's formula from the input's type to the output's (FLOAT64 as bits)."""
    src, dst = desc.input_tensor.data_type, desc.output_tensor.data_type
    if src == dst:
        return "a"
    lo = hi = 0
    if not dst.is_float:
        info = np.iinfo(dst.numpy)
        lo, hi = int(info.min), int(info.max)
    if src == F64:
        w = "w64_words(a)"
        if dst.is_float:
            return f"f64_round({w}, 23u, -126i, 127i)" if dst == F32 else f"f64_round({w}, 10u, -14i, 15i)"
        if dst.size == 8:
            return f"w64_from_words(f64_to_{'i' if dst.is_signed else 'u'}64_words({w}))"
        if dst.is_signed:
            return f"f64_to_i32_sat({w}, {_i32_literal(lo)}, {_i32_literal(hi)})"
        return f"f64_to_u32_sat({w}, {hi}u)"
    if src.is_float:  # FLOAT32, FLOAT16: an f32
        if dst == F64:
            return "w64_from_words(f32_to_f64_bits(a))"
        if dst.is_float:
            return "a"
        if dst.size == 8:
            return f"f32_to_w64_{'s' if dst.is_signed else 'u'}(a)"
        if dst.is_signed:
            return f"f32_to_i32_sat(a, {_i32_literal(lo)}, {_i32_literal(hi)})"
        return f"f32_to_u32_sat(a, {hi}u)"
    if src.size == 8:  # W64
        if dst == F64:
            if src.is_signed:
                return "w64_from_words(mag_to_f64_bits(w64_words(w64_abs_s(a)), w64_lt_s(a, w64_zero())))"
            return "w64_from_words(mag_to_f64_bits(w64_words(a), false))"
        if dst.is_float:
            return f"w64_to_f32_{'s' if src.is_signed else 'u'}(a)"
        if dst.size == 8:
            return "a"
        return "bitcast<i32>(w64_words(a).x)" if dst.is_signed else "w64_words(a).x"
    signed = src.is_signed  # an 8-32-bit integer: i32 or u32
    if dst == F64:
        return ("w64_from_words(mag_to_f64_bits(vec2<u32>(bitcast<u32>(select(a, -a, a < 0i)), 0u), a < 0i))" if signed
                else "w64_from_words(mag_to_f64_bits(vec2<u32>(a, 0u), false))")
    if dst.is_float:
        return "i32_to_f32(a)" if signed else "u32_to_f32(a)"
    if dst.size == 8:
        return "w64_sext(a)" if signed else "w64_from_words(vec2<u32>(a, 0u))"
    if signed == dst.is_signed:
        return "a"
    return "bitcast<u32>(a)" if signed else "bitcast<i32>(a)"


def cast_dtype(value, where: str) -> DataType:
    """CAST's `dtype`: a DataType, its name or a numpy dtype (not None, which numpy reads as float64)."""
    if value is None:
        raise InvalidArgumentError(f"{where}: dtype: None is not a data type (a DataType, its name or a numpy dtype)")
    return DataType.parse(value, f"{where}: dtype")


def _cast(x, output_data_type):
    """DML_OPERATOR_CAST: floats to floats rounded to nearest even (beyond the range +-inf);
    floats to integers truncated toward zero and saturated to the type's range, NaN 0 (as
    D3D's ftoi/ftou); integers to floats rounded to nearest even; integers to integers
    their low bits (two's-complement wrap: sign- or zero-extended first)."""
    dst = np.dtype(DataType.parse(output_data_type, "dtype").numpy)
    if x.dtype == dst:
        return np.array(x)
    if x.dtype.kind == "f" and dst.kind != "f":
        info = np.iinfo(dst)

        def one(v):
            if math.isnan(v):
                return 0
            if math.isinf(v):
                return int(info.max) if v > 0 else int(info.min)
            return max(int(info.min), min(int(info.max), int(v)))
        out = np.frompyfunc(one, 1, 1)(x.astype(np.float64).astype(object))
        return np.asarray(out, dtype=object).astype(dst).reshape(x.shape)
    with np.errstate(all="ignore"):
        return x.astype(dst)


ROWS: tuple[Row, ...] = (
    Row("CAST", "cast", "cast", ("input_tensor",), (
        (FL.FL_4_1, (1, 8), TYPES_11, TYPES_11),
        (FL.FL_3_1, (1, 8), TYPES_8 | {I64, U64}, TYPES_8 | {I64, U64}),
        (FL.FL_3_0, {4}, TYPES_8 | {I64, U64}, TYPES_8 | {I64, U64}),
        (FL.FL_1_0, {4}, {F32, F16, I16, I8, U16, U8}, {F32, F16, I16, I8, U16, U8}),
    ), _cast, _cast_wgsl, "cast_operator_desc.md",
        "x converted to the output's type (floats to integers truncated and saturated, NaN 0; to floats rounded "
        "to nearest even; integers to integers wrap)", cast=True, raw=True, precision="exact (correctly rounded)"),
    Row("ELEMENT_WISE_QUANTIZE_LINEAR", "quantize_linear", "quantize_linear",
        ("input_tensor", "scale_tensor", "zero_point_tensor"), (
            (FL.FL_6_2, (1, 8), {F32, F16, I32}, FLOATS, {I8, U8}, {I8, U8}),
            (FL.FL_6_0, (1, 8), {F32, F16, I32}, FLOATS, {I8, U8}, {I8, U8}),
            (FL.FL_3_0, (1, 8), {F32, I32}, {F32}, {I8, U8}, {I8, U8}),
            (FL.FL_2_1, {4}, {F32, I32}, {F32}, {I8, U8}, {I8, U8}),
            (FL.FL_1_0, {4}, {F32}, {F32}, {U8}, {U8}),
        ), quantize_reference, _quantize_wgsl, "element_wise_quantize_linear_operator_desc.md",
        "clamp(round(x / scale) + zero_point, the output type's range), x / scale exact and rounded half to even "
        "(NaN 0, x / 0 saturating); the zero point optional from FL_6_2 (0; the output then output_data_type's, "
        "default UINT8)",
        raw=True, optional=("zero_point_tensor",),
        same_type=(("input_tensor",), ("zero_point_tensor", "output_tensor")),
        check=_zero_point_check(True), out_type=_quantize_out_type,
        out_type_arguments=lambda desc: {"output_data_type": desc.output_tensor.data_type.name},
        precision="exact (round(x / scale) decided on the exact quotient)"),
    Row("ELEMENT_WISE_DEQUANTIZE_LINEAR", "dequantize_linear", "dequantize_linear",
        ("input_tensor", "scale_tensor", "zero_point_tensor"), (
            (FL.FL_6_2, (1, 8), INTS_8_32, FLOATS, INTS_8_32, FLOATS),
            (FL.FL_6_0, (1, 8), INTS_8_32, FLOATS, INTS_8_32, FLOATS),
            (FL.FL_3_0, (1, 8), INTS_8_32, {F32}, INTS_8_32, {F32}),
            (FL.FL_2_1, {4}, INTS_8_32, {F32}, INTS_8_32, {F32}),
            (FL.FL_1_0, {4}, {U8}, {F32}, {U8}, {F32}),
        ), _dequantize, _dequantize_wgsl, "element_wise_dequantize_linear_operator_desc.md",
        "(x - zero_point) * scale (the zero point optional from FL_6_2: 0)",
        raw=True, optional=("zero_point_tensor",), out_from="scale_tensor",
        same_type=(("input_tensor", "zero_point_tensor"), ("scale_tensor", "output_tensor")),
        check=_zero_point_check(False), ulps=1.5,
        precision="1.5 ULP; correctly rounded (0.5 ULP) where |x - zero_point| < 2^24 (the difference exact)"),
)
