"""Rows of the element-wise table: comparisons (LOGICAL_EQUALS, LOGICAL_GREATER_THAN, ...), the
logical (LOGICAL_AND, LOGICAL_OR, LOGICAL_XOR, LOGICAL_NOT) and bit operators (BIT_*), IF, IS_NAN
and IS_INFINITY. `ROWS` in table order; table.py places them in `TABLE`."""

from __future__ import annotations

import numpy as np

from ...types import F16, I64, TYPES_8, TYPES_11, U8, U16, U32, U64, IsInfinityMode
from .common import FL, FLOATS
from .row import Attr, Row


def _compare(fn):
    def compare(a, b):
        return fn(a, b).astype(np.uint8)
    return compare


_LOGICAL_TYPES = (
    (FL.FL_4_1, (1, 8), TYPES_8 | {I64, U64}, TYPES_8 | {I64, U64}, {U32, U8}),
    (FL.FL_3_0, (1, 8), TYPES_8, TYPES_8, {U32, U8}),
    (FL.FL_2_1, {4}, TYPES_8, TYPES_8, {U32, U8}),
    (FL.FL_2_0, {4}, FLOATS, FLOATS, {U32, U8}),
    (FL.FL_1_0, {4}, FLOATS, FLOATS, {U32}),
)
_BIT_TYPES = ((FL.FL_4_1, (1, 8), TYPES_11), (FL.FL_3_0, (1, 8), {U32, U16, U8}))
_SHIFT_TYPES = (
    (FL.FL_4_1, (1, 8), {U64, U32, U16, U8}),
    (FL.FL_3_0, (1, 8), {U32, U16, U8}),
    (FL.FL_2_1, {4}, {U32, U16, U8}),
)
_LOGICAL_BOOL_TYPES = (
    (FL.FL_3_0, (1, 8), {U32, U8}),
    (FL.FL_2_0, {4}, {U32, U8}),
    (FL.FL_1_0, {4}, {U32}),
)


def _shift(left: bool):
    """a << b or a >> b (logical) in the unsigned type; 0 where b is at least the width."""
    def shift(a, b):
        width = a.dtype.itemsize * 8
        count = np.minimum(b, width - 1).astype(a.dtype)
        moved = np.left_shift(a, count) if left else np.right_shift(a, count)
        return np.where(b < width, moved, 0).astype(a.dtype)
    return shift


def _popcount(x):
    return np.bitwise_count(x).astype(np.uint8)


def _is_infinity(x, infinity_mode=IsInfinityMode.EITHER):
    mode = IsInfinityMode.coerce(infinity_mode)
    hit = {IsInfinityMode.EITHER: np.isinf(x), IsInfinityMode.POSITIVE: x == np.inf,
           IsInfinityMode.NEGATIVE: x == -np.inf}[mode]
    return hit.astype(np.uint8)


ROWS: tuple[Row, ...] = (
    Row("ELEMENT_WISE_LOGICAL_EQUALS", "logical_equals", "logical_equals", ("a_tensor", "b_tensor"), _LOGICAL_TYPES,
        _compare(np.equal), {"float": "select(0u, 1u, a == b)", "int": "select(0u, 1u, a == b)",
                             "int64": "select(0u, 1u, w64_eq(a, b))"},
        "element_wise_logical_equals_operator_desc.md", "1 where a == b, else 0", logical=True),
    Row("ELEMENT_WISE_LOGICAL_GREATER_THAN", "logical_greater_than", "logical_greater_than", ("a_tensor", "b_tensor"),
        _LOGICAL_TYPES, _compare(np.greater),
        {"float": "select(0u, 1u, a > b)", "int": "select(0u, 1u, a > b)", "sint64": "select(0u, 1u, w64_lt_s(b, a))",
         "uint64": "select(0u, 1u, w64_lt_u(b, a))"},
        "element_wise_logical_greater_than_operator_desc.md", "1 where a > b, else 0", logical=True),
    Row("ELEMENT_WISE_LOGICAL_LESS_THAN", "logical_less_than", "logical_less_than", ("a_tensor", "b_tensor"),
        _LOGICAL_TYPES, _compare(np.less),
        {"float": "select(0u, 1u, a < b)", "int": "select(0u, 1u, a < b)", "sint64": "select(0u, 1u, w64_lt_s(a, b))",
         "uint64": "select(0u, 1u, w64_lt_u(a, b))"},
        "element_wise_logical_less_than_operator_desc.md", "1 where a < b, else 0", logical=True),
    Row("ELEMENT_WISE_LOGICAL_AND", "logical_and", "logical_and", ("a_tensor", "b_tensor"), (
        (FL.FL_3_0, (1, 8), {U32, U8}),
        (FL.FL_2_0, {4}, {U32, U8}),
        (FL.FL_1_0, {4}, {U32}),
    ), lambda a, b: ((a != 0) & (b != 0)).astype(a.dtype), {"int": "select(0u, 1u, a != 0u && b != 0u)"},
        "element_wise_logical_and_operator_desc.md", "1 where a and b are both non-zero, else 0"),
    Row("ELEMENT_WISE_LOGICAL_NOT", "logical_not", "logical_not", ("input_tensor",), (
        (FL.FL_3_0, (1, 8), {U32, U8}),
        (FL.FL_2_0, {4}, {U32, U8}),
        (FL.FL_1_0, {4}, {U32}),
    ), lambda x: (x == 0).astype(x.dtype), {"int": "select(0u, 1u, a == 0u)"},
        "element_wise_logical_not_operator_desc.md", "1 where x is 0, else 0"),
    Row("ELEMENT_WISE_LOGICAL_OR", "logical_or", "logical_or", ("a_tensor", "b_tensor"), _LOGICAL_BOOL_TYPES,
        lambda a, b: ((a != 0) | (b != 0)).astype(a.dtype), {"int": "select(0u, 1u, a != 0u || b != 0u)"},
        "element_wise_logical_or_operator_desc.md", "1 where a or b is non-zero, else 0"),
    Row("ELEMENT_WISE_LOGICAL_XOR", "logical_xor", "logical_xor", ("a_tensor", "b_tensor"), _LOGICAL_BOOL_TYPES,
        lambda a, b: ((a != 0) != (b != 0)).astype(a.dtype), {"int": "select(0u, 1u, (a != 0u) != (b != 0u))"},
        "element_wise_logical_xor_operator_desc.md", "1 where exactly one of a and b is non-zero, else 0"),
    Row("ELEMENT_WISE_LOGICAL_GREATER_THAN_OR_EQUAL", "logical_greater_than_or_equal", "logical_greater_than_or_equal",
        ("a_tensor", "b_tensor"), _LOGICAL_TYPES[:2], _compare(np.greater_equal),
        {"float": "select(0u, 1u, a >= b)", "int": "select(0u, 1u, a >= b)",
         "sint64": "select(0u, 1u, !w64_lt_s(a, b))", "uint64": "select(0u, 1u, !w64_lt_u(a, b))"},
        "element_wise_logical_greater_than_or_equal_operator_desc.md", "1 where a >= b, else 0 (0 where either is NaN)",
        logical=True),
    Row("ELEMENT_WISE_LOGICAL_LESS_THAN_OR_EQUAL", "logical_less_than_or_equal", "logical_less_than_or_equal",
        ("a_tensor", "b_tensor"), _LOGICAL_TYPES[:2], _compare(np.less_equal),
        {"float": "select(0u, 1u, a <= b)", "int": "select(0u, 1u, a <= b)",
         "sint64": "select(0u, 1u, !w64_lt_s(b, a))", "uint64": "select(0u, 1u, !w64_lt_u(b, a))"},
        "element_wise_logical_less_than_or_equal_operator_desc.md", "1 where a <= b, else 0 (0 where either is NaN)",
        logical=True),
    Row("ELEMENT_WISE_BIT_AND", "bit_and", "bit_and", ("a_tensor", "b_tensor"), _BIT_TYPES, np.bitwise_and,
        {"int": "a & b", "int64": "a & b"}, "element_wise_bit_and_operator_desc.md",
        "the bits of a AND those of b (any type: its bits)", bits=True),
    Row("ELEMENT_WISE_BIT_OR", "bit_or", "bit_or", ("a_tensor", "b_tensor"), _BIT_TYPES, np.bitwise_or,
        {"int": "a | b", "int64": "a | b"}, "element_wise_bit_or_operator_desc.md",
        "the bits of a OR those of b (any type: its bits)", bits=True),
    Row("ELEMENT_WISE_BIT_XOR", "bit_xor", "bit_xor", ("a_tensor", "b_tensor"), _BIT_TYPES, np.bitwise_xor,
        {"int": "a ^ b", "int64": "a ^ b"}, "element_wise_bit_xor_operator_desc.md",
        "the bits of a XOR those of b (any type: its bits)", bits=True),
    Row("ELEMENT_WISE_BIT_NOT", "bit_not", "bit_not", ("input_tensor",), _BIT_TYPES, np.invert,
        {"int": "~a", "int64": "~a"}, "element_wise_bit_not_operator_desc.md",
        "the bits of x inverted (any type: its bits)", bits=True,
        examples=(("bit_not-1", (np.uint8([[0, 128], [42, 255]]),), {}, np.uint8([[255, 127], [213, 0]])),)),
    Row("ELEMENT_WISE_BIT_COUNT", "bit_count", "bit_count", ("input_tensor",), (
        (FL.FL_4_1, (1, 8), TYPES_11, {U32, U8}),
        (FL.FL_3_0, (1, 8), {U32, U16, U8}, {U32, U8}),
    ), _popcount, {"int": "countOneBits(a)", "int64": "w64_popcount(a)"}, "element_wise_bit_count_operator_desc.md",
        "the number of bits set in x (any type: its bits)", bits=True, logical=True,
        examples=(("bit_count-1", (np.uint32([[0, 123], [456, 789]]),), {"output_data_type": "UINT32"},
                   np.uint32([[0, 6], [4, 5]])),)),
    Row("ELEMENT_WISE_BIT_SHIFT_LEFT", "bit_shift_left", "bit_shift_left", ("a_tensor", "b_tensor"), _SHIFT_TYPES,
        _shift(True), {"int": "select(0u, a << (b & 31u), b < 32u)", "int64": "w64_shl(a, b)"},
        "element_wise_bit_shift_left_operator_desc.md",
        "a shifted left by b bits, the bits past the width dropped (0 where b is at least the width)"),
    Row("ELEMENT_WISE_BIT_SHIFT_RIGHT", "bit_shift_right", "bit_shift_right", ("a_tensor", "b_tensor"), _SHIFT_TYPES,
        _shift(False), {"int": "select(0u, a >> (b & 31u), b < 32u)", "int64": "w64_shr(a, b)"},
        "element_wise_bit_shift_right_operator_desc.md",
        "a shifted right by b bits, zeros shifted in (0 where b is at least the width)"),
    Row("ELEMENT_WISE_IF", "if", "if_", ("condition_tensor", "a_tensor", "b_tensor"), (
        (FL.FL_5_0, (1, 8), {U8}, TYPES_11, TYPES_11, TYPES_11),
        (FL.FL_3_0, (1, 8), {U8}, TYPES_8, TYPES_8, TYPES_8),
        (FL.FL_2_0, {4}, {U8}, {F16}, {F16}, {F16}),
    ), lambda c, a, b: np.where(c != 0, a, b), {"int": "select(c, b, a != 0u)"},
        "element_wise_if_operator_desc.md", "a where the condition is non-zero, else b (their bits)",
        bits=True, same_type=(("a_tensor", "b_tensor", "output_tensor"),), out_from="a_tensor"),
    Row("ELEMENT_WISE_IS_NAN", "is_nan", "is_nan", ("input_tensor",), (
        (FL.FL_3_0, (1, 8), FLOATS, {U32, U8}),
        (FL.FL_2_0, {4}, FLOATS, {U32, U8}),
    ), lambda x: np.isnan(x).astype(np.uint8), {"float": "select(0u, 1u, is_nan(f32(a)))"},
        "element_wise_is_nan_operator_desc.md", "1 where x is NaN, else 0", logical=True),
    Row("ELEMENT_WISE_IS_INFINITY", "is_infinity", "is_infinity", ("input_tensor",), (
        (FL.FL_3_0, (1, 8), FLOATS, {U8}),
        (FL.FL_2_1, {4}, FLOATS, {U8}),
    ), _is_infinity, {"float": {
        IsInfinityMode.EITHER: "select(0u, 1u, (bitcast<u32>(f32(a)) & 0x7FFFFFFFu) == 0x7F800000u)",
        IsInfinityMode.POSITIVE: "select(0u, 1u, bitcast<u32>(f32(a)) == 0x7F800000u)",
        IsInfinityMode.NEGATIVE: "select(0u, 1u, bitcast<u32>(f32(a)) == 0xFF800000u)"}},
        "element_wise_is_infinity_operator_desc.md", "1 where x is an infinity of infinity_mode's sign, else 0",
        attributes=(Attr("infinity_mode", IsInfinityMode.EITHER, kind="enum", enum=IsInfinityMode),), logical=True),
)
