"""Rows of the element-wise table: CAST, QUANTIZE_LINEAR, DEQUANTIZE_LINEAR and
QUANTIZED_LINEAR_ADD (formulas built from the desc, per pair of types). `ROWS` in table order;
table.py places them in `TABLE`."""

from __future__ import annotations

import math

import numpy as np

from ...errors import InvalidArgumentError
from ...kernels.elementwise import FusedProblem, Problem, Step, input_name, value_kind
from ...tensor_desc import TensorDesc
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


def _quantize(x, scale, zero_point=None, output_data_type=None):
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


def _quantized_add_out_type(named, attributes):
    """QUANTIZED_LINEAR_ADD's output type: `output_data_type` where given, else the output
    zero point's, else a's."""
    given = attributes.pop("output_data_type", None)
    if given is not None:
        return DataType.parse(given, "quantized_linear_add: output_data_type")
    return named.get("output_zero_point_tensor", named["a_tensor"]).data_type


def _flushed(x: np.ndarray, flush: bool) -> np.ndarray:
    """float32 `x` with its subnormals flushed to zero (sign kept) where `flush`."""
    return np.where(np.abs(x) < np.float32(2.0**-126), np.copysign(np.float32(0.0), x), x).astype(np.float32) \
        if flush else x


def _quantized_add_sum(a, a_scale, a_zero_point, b, b_scale, b_zero_point, contract: int = 0, flush: bool = False):
    """(a - a_zero_point) a_scale + (b - b_zero_point) b_scale in float32: each product and
    the sum rounded to float32, or (`contract` 1 or 2) a's or b's product and the sum
    rounded once (a fused multiply-add); with `flush`, subnormal scales, products and sum 0."""
    with np.errstate(all="ignore"):
        terms = []
        for x, scale, zero in ((a, a_scale, a_zero_point), (b, b_scale, b_zero_point)):
            d = x.astype(np.int32) - (0 if zero is None else zero.astype(np.int32))  # exact in float32 too
            terms.append((d.astype(np.float64), _flushed(scale.astype(np.float32), flush).astype(np.float64)))
        (da, sa), (db, sb) = terms
        av = _flushed((da * sa).astype(np.float32), flush)  # da sa exact in float64 (9 x 24 bits)
        bv = _flushed((db * sb).astype(np.float32), flush)
        if contract == 1:
            total = (da * sa + bv.astype(np.float64)).astype(np.float32)
        elif contract == 2:
            total = (av.astype(np.float64) + db * sb).astype(np.float32)
        else:
            total = (av + bv).astype(np.float32)
        return _flushed(total, flush)


def _quantized_add(a, a_scale, a_zero_point, b, b_scale, b_zero_point, output_scale, output_zero_point,
                   output_data_type=None):
    """DML_ELEMENT_WISE_QUANTIZED_LINEAR_ADD: a and b dequantized and added in float32, the
    sum quantized as QUANTIZE_LINEAR does (round half to even, saturated)."""
    total = _quantized_add_sum(a, a_scale, a_zero_point, b, b_scale, b_zero_point)
    return _quantize(total, output_scale, output_zero_point, output_data_type or a.dtype)


def _quantized_add_tolerance(expected, named, arguments):
    """Exact against the float32 computation; where a compiler contracts a product and the
    sum into one fused multiply-add, or the adapter flushes subnormals (WGSL allows both), the
    result of that computation: per element, the largest difference those make."""
    args = [named[f] for f in ("a_tensor", "a_scale_tensor", "a_zero_point_tensor", "b_tensor", "b_scale_tensor",
                               "b_zero_point_tensor")]
    args = [None if x is None else np.asarray(x) for x in args]
    out_type = arguments.get("output_data_type") or expected.dtype
    quantized = [_quantize(_quantized_add_sum(*args, contract=c, flush=f), named["output_scale_tensor"],
                           named["output_zero_point_tensor"], out_type).astype(np.int64)
                 for c in (0, 1, 2) for f in (False, True)]
    return np.max([np.abs(q - quantized[0]) for q in quantized], axis=0).astype(np.float64)


def _quantized_add_problem(desc, inputs: tuple[TensorDesc, ...], output: TensorDesc) -> FusedProblem:
    """The kernel's two steps: the sum (a and b dequantized and added, a float32 value) over
    the inputs of a and b, then its quantization over the output's scale and zero point (an
    adapter of few storage bindings runs them as two kernels: kernels/elementwise.py)."""
    fields = [f for f in desc.ROW.tensors if getattr(desc, f) is not None]
    index = {f: k for k, f in enumerate(fields)}
    first = [f for f in fields if not f.startswith("output_")]
    name = {f: input_name(k) for k, f in enumerate(first)}

    def value(x: str) -> str:
        signed = getattr(desc, f"{x}_tensor").data_type.is_signed
        zero = name.get(f"{x}_zero_point_tensor", "0i" if signed else "0u")
        return f"dq_diff_{'s' if signed else 'u'}({name[f'{x}_tensor']}, {zero}) * {name[f'{x}_scale_tensor']}"
    kind = {f: value_kind(getattr(desc, f).data_type) for f in fields}
    total = TensorDesc(F32, output.sizes)
    add = Problem(desc.ROW.op, tuple(inputs[index[f]] for f in first), total, tuple(kind[f] for f in first), "float",
                  f"{value('a')} + {value('b')}")
    z = "c" if desc.output_zero_point_tensor is not None else "0i"
    if desc.output_zero_point_tensor is not None and not desc.output_zero_point_tensor.data_type.is_signed:
        z = "i32(c)"
    q = f"quantize_f32(a, b) + {z}"
    second = [f for f in fields if f.startswith("output_")]
    out_kind = value_kind(output.data_type)
    quantize = Problem(desc.ROW.op, (total,) + tuple(inputs[index[f]] for f in second), output,
                       ("float",) + tuple(kind[f] for f in second), out_kind,
                       f"clamp({q}, -128i, 127i)" if out_kind == "sint" else f"u32(clamp({q}, 0i, 255i))")
    return FusedProblem(desc.ROW.op, inputs, output, (
        Step(add, tuple(("input", index[f]) for f in first)),
        Step(quantize, (("step", 0),) + tuple(("input", index[f]) for f in second))))


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
        ), _quantize, _quantize_wgsl, "element_wise_quantize_linear_operator_desc.md",
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
    Row("ELEMENT_WISE_QUANTIZED_LINEAR_ADD", "quantized_linear_add", "quantized_linear_add",
        ("a_tensor", "a_scale_tensor", "a_zero_point_tensor", "b_tensor", "b_scale_tensor", "b_zero_point_tensor",
         "output_scale_tensor", "output_zero_point_tensor"), (
            (FL.FL_4_0, (1, 8), {I8, U8}, {F32}, {I8, U8}, {I8, U8}, {F32}, {I8, U8}, {F32}, {I8, U8}, {I8, U8}),
        ), _quantized_add, {}, "element_wise_quantized_linear_add_operator_desc.md",
        "clamp(round(((a - a_zero_point) a_scale + (b - b_zero_point) b_scale) / output_scale) + output_zero_point, "
        "the output type's range): a and b dequantized and added in float32, the sum quantized as quantize_linear "
        "does (half to even, NaN 0, saturating); each scale and zero point one element, a zero point optional (0; "
        "the output then output_data_type's, else a's type)",
        raw=True, optional=("a_zero_point_tensor", "b_zero_point_tensor", "output_zero_point_tensor"),
        single=("a_scale_tensor", "a_zero_point_tensor", "b_scale_tensor", "b_zero_point_tensor",
                "output_scale_tensor", "output_zero_point_tensor"),
        same_type=(("a_tensor", "a_zero_point_tensor"), ("b_tensor", "b_zero_point_tensor"),
                   ("output_zero_point_tensor", "output_tensor")),
        out_type=_quantized_add_out_type,
        out_type_arguments=lambda desc: {"output_data_type": desc.output_tensor.data_type.name},
        tolerance=_quantized_add_tolerance, steps=_quantized_add_problem,
        precision="exact against the float32 sum (each product and the sum rounded); where a compiler contracts a "
                  "product and the sum into a fused multiply-add, or the adapter flushes subnormals, the result of "
                  "that computation"),
)
