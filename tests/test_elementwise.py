"""What is special about the element-wise and activation operators (gpudml/ops/elementwise/);
the conformance kit (tests/conformance/) covers every row's tables, layouts (stride-0
broadcasts included), strategies and segments."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import numpy as np
import pytest
from conftest import assert_bits_equal, get_device
from isolated import limited_device

import gpudml as dml
from gpudml import compiler, reference
from gpudml.ops import quantized_linear_add, spec_named
from gpudml.ops.elementwise import TABLE, broadcast_descs, integer_bounds
from gpudml.testing import assert_within

T, FL = dml.DataType, dml.FeatureLevel
NAN, INF = math.nan, math.inf


# ============================================================================ the table and its names
def test_names_follow_the_api_rule():
    """API.md 11: the newest version takes the plain name, the older its number (ADD1 is
    dml.add, ADD is add0); an activation named as an element-wise operator is
    activation_<x>; the descs are ElementWise<X>OperatorDesc / Activation<X>OperatorDesc."""
    assert dml.add.__wrapped__ is spec_named("add1").functional
    assert spec_named("add0").name == "ElementWiseAdd" and dml.ElementWiseAdd1OperatorDesc.ROW.key == "add1"
    assert spec_named("tanh").name == "ElementWiseTanh" and spec_named("activation_tanh").name == "ActivationTanh"
    assert dml.ActivationLeakyReluOperatorDesc.ROW.functional == "leaky_relu"
    assert len({r.functional for r in TABLE}) == len({r.key for r in TABLE}) == len(TABLE)
    for row in (*TABLE, quantized_linear_add.ROW):  # the page a row names is its spec's (the kit checks its excerpt)
        assert f"ns-directml-dml_{row.page}" == f"ns-directml-{spec_named(row.key).page.lower()}.md"


def test_the_precision_table_states_every_float_row():
    """docs/elementwise.md lists each float operator with its row's precision sentence."""
    page = (Path(__file__).parent.parent / "docs" / "elementwise.md").read_text(encoding="utf-8").replace("\\|", "|")
    for row in (*TABLE, quantized_linear_add.ROW):
        if any(t.is_float for _, _, *sets in row.support for types in sets for t in types):
            assert f"| `dml.{row.functional}` | DML_{row.dml} | {row.precision} |" in page, row.key


# ============================================================================ broadcasting
def test_functional_forms_broadcast_as_numpy_by_stride_0_descs(device):
    a = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    b = np.array([[10], [20], [30]], np.float32)
    assert_bits_equal(dml.add(a, b, device=device), a + b)
    assert_bits_equal(dml.add(b, a, device=device), b + a)
    assert_bits_equal(dml.multiply(np.float32([2.0]), a, device=device), 2 * a)
    # The desc the call runs: b read with stride 0 on the axes it lacks (no copy).
    given = [dml.TensorDesc(T.FLOAT32, [2, 3, 4]), dml.TensorDesc(T.FLOAT32, [3, 1])]
    descs = broadcast_descs("add", given, ["a", "b"])
    assert descs[1].sizes == (2, 3, 4) and descs[1].strides == (0, 1, 0) and descs[1].total_tensor_size_in_bytes == 12
    # Tensors in, a Tensor out.
    out = dml.add(device.tensor(a), b, device=device)
    assert isinstance(out, dml.Tensor) and np.array_equal(out.numpy(), a + b)


def test_shapes_that_do_not_broadcast_are_named():
    with pytest.raises(dml.InvalidArgumentError, match=r"add: the shapes do not broadcast \(a \[2, 3\], b \[4\]"):
        dml.add(np.zeros((2, 3), np.float32), np.zeros(4, np.float32))


def test_descs_are_strict_as_directml():
    """A desc takes one set of sizes for every tensor (a broadcast is a stride of 0) and one type."""
    t = dml.TensorDesc(T.FLOAT32, [2, 3])
    with pytest.raises(dml.InvalidArgumentError, match=r"ElementWiseAdd1: b_tensor.sizes \[1, 3\] must equal"):
        dml.Device().create_operator(dml.ElementWiseAdd1OperatorDesc(t, dml.TensorDesc(T.FLOAT32, [1, 3]), t))
    with pytest.raises(dml.InvalidArgumentError, match=r"b_tensor.data_type FLOAT16 must equal a_tensor.data_type"):
        dml.Device().create_operator(dml.ElementWiseAdd1OperatorDesc(t, dml.TensorDesc(T.FLOAT16, [2, 3]), t))
    broadcast = dml.TensorDesc(T.FLOAT32, [2, 3], [0, 1])
    op = dml.Device().create_operator(dml.ElementWiseAdd1OperatorDesc(t, broadcast, t))
    assert op is not None


# ============================================================================ ScaleBias, fused activations
def test_scale_bias_applies_before_the_function(device):
    x = np.array([0.0, 1.5, 4.0, 12.0], np.float32)
    got = dml.sqrt(x, scale_bias=(2.0, 1.0), device=device)
    np.testing.assert_allclose(got, np.sqrt(2 * x + 1), rtol=1e-6)
    assert_bits_equal(dml.identity(x, scale_bias=dml.ScaleBias(0.5, -1.0), device=device), x * 0.5 - 1)
    assert_bits_equal(dml.clip0(x, 0.0, 5.0, scale_bias=(1.0, -2.0), device=device), np.clip(x - 2, 0, 5))
    with pytest.raises(dml.InvalidArgumentError, match="ElementWiseIdentity: scale_bias applies to float tensors"):
        dml.identity(np.arange(3, dtype=np.int32), scale_bias=(2.0, 0.0), device=device)
    with pytest.raises(dml.InvalidArgumentError, match=r"ElementWiseSqrt: scale_bias.scale = 1e\+300 is beyond"):
        dml.sqrt(x, scale_bias=(1e300, 0.0), device=device)


def test_fused_activation_applies_to_the_result(device):
    a = np.linspace(-3, 3, 13, dtype=np.float32)
    b = np.float32([0.5])
    assert_bits_equal(dml.add(a, b, fused_activation="relu", device=device), np.maximum(a + b, 0))
    leaky = dml.add(a, b, fused_activation=dml.FusedActivation("leaky_relu", alpha=0.25), device=device)
    assert_bits_equal(leaky, np.where(a + b >= 0, a + b, np.float32(0.25) * (a + b)))
    np.testing.assert_allclose(dml.add(a, b, fused_activation="sigmoid", device=device), 1 / (1 + np.exp(-(a + b))),
                               rtol=1e-6)
    assert_bits_equal(reference.add(a, b, fused_activation="relu"), np.maximum(a + b, 0))
    assert dml.FusedActivation("elu") == dml.FusedActivation("ELU", alpha=1.0)
    with pytest.raises(dml.InvalidArgumentError, match="'softmax' is not an activation that fuses"):
        dml.FusedActivation("softmax")
    with pytest.raises(dml.InvalidArgumentError, match="relu has no attribute 'alpha'"):
        dml.FusedActivation("relu", alpha=0.1)
    with pytest.raises(dml.InvalidArgumentError, match="ElementWiseAdd1: fused_activation: 'bogus'"):
        dml.add(a, b, fused_activation="bogus", device=device)


# ============================================================================ integers
def test_integers_wrap_in_their_type(device):
    i8 = np.array([127, -128, 100, -1], np.int8)
    assert_bits_equal(dml.add0(i8, np.int8([1]), device=device), np.array([-128, -127, 101, 0], np.int8))
    assert_bits_equal(dml.multiply(i8, np.int8([2]), device=device), np.array([-2, 0, -56, -2], np.int8))
    assert_bits_equal(dml.negate(i8, device=device), np.array([-127, -128, -100, 1], np.int8))
    assert_bits_equal(dml.abs(i8, device=device), np.array([127, -128, 100, 1], np.int8))
    big = np.array([2**63 - 1, -(2**63), 3, -7], np.int64)
    assert_bits_equal(dml.add0(big, np.int64([1]), device=device), np.array([-(2**63), -(2**63) + 1, 4, -6], np.int64))
    assert_bits_equal(dml.multiply(big, np.int64([3]), device=device), big * np.int64(3))
    assert_bits_equal(dml.subtract(np.uint64([0, 5]), np.uint64([1, 7]), device=device),
                      np.array([2**64 - 1, 2**64 - 2], np.uint64))
    # Division truncates toward zero; a / 0 is a (WGSL's rule); INT_MIN / -1 wraps.
    num = np.array([7, -7, 5, -(2**63), 2**63 - 1], np.int64)
    den = np.array([2, 2, 0, -1, -3], np.int64)
    want = np.array([3, -3, 5, -(2**63), -(2**63 - 1) // 3 + 1], np.int64)
    assert_bits_equal(dml.divide(num, den, device=device), want)
    assert_bits_equal(reference.divide(num, den), want)
    assert_bits_equal(dml.divide(np.uint64([2**64 - 1, 9]), np.uint64([2**32, 0]), device=device),
                      np.array([2**32 - 1, 9], np.uint64))
    assert_bits_equal(dml.mean(np.int32([2**31 - 1, -3]), np.int32([2**31 - 1, 2]), device=device),
                      np.int32([2**31 - 1, -1]))


def test_clip0_of_integers_keeps_the_integers_within_the_bounds(device):
    x = np.arange(-4, 5, dtype=np.int8)
    assert_bits_equal(dml.clip0(x, -1.5, 2.5, device=device), np.clip(x, -1, 2))
    assert_bits_equal(dml.clip0(x, NAN, 1.0, device=device), np.minimum(x, 1))
    assert integer_bounds(-1e30, 1e30, np.uint8) == (0, 255) and integer_bounds(3.0, -INF, np.int16) == (3, -32768)
    u64 = np.array([0, 2**63, 2**64 - 1], np.uint64)
    assert_bits_equal(dml.clip0(u64, 1.0, 2.0**63, device=device), np.array([1, 2**63, 2**63], np.uint64))


# ---------------------------------------------------------------------------- integer, bit and quantize rows (ew-int)
_NAN_BITS = np.array([0x7FA00001, 0xFFC12345, 0x3F800000], np.uint32).view(np.float32)
_I32_MIN, _I64_MIN = -(2**31), -(2**63)
#: (function, arguments, keyword arguments, the exact result) of what the pages leave open.
_SPECIAL = {
    # Shift counts at or past the width give 0 (not HLSL's count & 31); the bits past the width drop.
    "shift_left": ("bit_shift_left", (np.uint8([1, 200, 255, 7]), np.uint8([1, 1, 8, 200])), {},
                   np.uint8([2, 144, 0, 0])),
    "shift_left_u32": ("bit_shift_left", (np.uint32([1, 1, 1, 3]), np.uint32([31, 32, 33, 2**32 - 1])), {},
                       np.uint32([2**31, 0, 0, 0])),
    "shift_right_u64": ("bit_shift_right", (np.uint64([2**63, 2**63, 2**64 - 1, 5]), np.uint64([63, 64, 33, 2**32])),
                        {}, np.uint64([1, 0, 2**31 - 1, 0])),
    "shift_left_u64": ("bit_shift_left", (np.uint64([1, 3, 2**40 + 1]), np.uint64([63, 62, 30])), {},
                       np.uint64([2**63, 2**63 + 2**62, 2**70 % 2**64 + 2**30])),
    # Bits of any type: NaN payloads and -0.0 are bits like any other.
    "bit_and_float": ("bit_and", (_NAN_BITS, np.float32([-0.0])), {},
                      np.array([0, 0x80000000, 0], np.uint32).view(np.float32)),
    "bit_xor_f64": ("bit_xor", (np.float64([1.0, -2.0]), np.float64([-0.0])), {}, np.float64([-1.0, 2.0])),
    "bit_not_i64": ("bit_not", (np.int64([0, -1, _I64_MIN]),), {}, np.int64([-1, 0, 2**63 - 1])),
    "bit_count_f16": ("bit_count", (np.float16([-0.0, np.inf, 1.0]),), {}, np.uint8([1, 5, 4])),
    "bit_count_u64": ("bit_count", (np.uint64([2**64 - 1, 2**63 + 1]),), {"output_data_type": "UINT32"},
                      np.uint32([64, 2])),
    # Moduli: the dividend where the divisor is 0; INT_MIN mod -1 is 0; the signs of C's and Python's %.
    "mod_truncate_i32": ("modulus_truncate", (np.int32([7, -7, 7, -7, 5, _I32_MIN]), np.int32([3, 3, -3, -3, 0, -1])),
                         {}, np.int32([1, -1, 1, -1, 5, 0])),
    "mod_floor_i32": ("modulus_floor", (np.int32([7, -7, 7, -7, 5, _I32_MIN, _I32_MIN]),
                                        np.int32([3, 3, -3, -3, 0, -1, 3])), {}, np.int32([1, 2, -2, -1, 5, 0, 1])),
    "mod_floor_i64": ("modulus_floor", (np.int64([_I64_MIN, -7 * 2**40, 9]), np.int64([-1, 3, 0])), {},
                      np.int64([0, (-7 * 2**40) % 3, 9])),
    "mod_truncate_u64": ("modulus_truncate", (np.uint64([2**64 - 1, 10]), np.uint64([2**63 + 1, 0])), {},
                         np.uint64([2**63 - 2, 10])),
    "mod_floor_f32": ("modulus_floor", (np.float32([5.5, -5.5, -1.0, -0.0, 1e30, np.inf, 3.0]),
                                        np.float32([-2.0, 2.0, np.inf, 3.0, 7.0, 2.0, 0.0])), {},
                      np.float32([-0.5, 0.5, np.inf, 0.0, np.fmod(np.float32(1e30), np.float32(7.0)), np.nan, np.nan])),
    "mod_truncate_f16": ("modulus_truncate", (np.float16([5.5, -5.5, -0.0, 65504.0]),
                                              np.float16([-2.0, 2.0, 3.0, 3.0])), {},
                         np.float16([1.5, -1.5, -0.0, 65504.0 % 3])),
    # IF: bits through (NaN payloads), the condition broadcast.
    "if_nan_payloads": ("if_", (np.uint8([[1], [0]]), _NAN_BITS, np.float32([0.5])), {},
                        np.stack([_NAN_BITS, np.float32([0.5] * 3)])),
    # CLIP_GRAD (clip_grad0) of integers: the FLOAT bounds compared exactly; a NaN bound or one past the type's
    # range holds nowhere.
    "clip_grad_int": ("clip_grad0", (np.int8([-128, -2, -1, 0, 1, 2, 127]), np.int8([1, 2, 3, 4, 5, 6, 7])),
                      {"min": -1.5, "max": 1.5}, np.int8([0, 0, 3, 4, 5, 0, 0])),
    "clip_grad_wide": ("clip_grad0", (np.int8([-128, 0, 127]), np.int8([1, 2, 3])), {"min": -1000.0, "max": math.nan},
                       np.int8([1, 2, 3])),
    "clip_grad_u64": ("clip_grad0", (np.uint64([0, 2**63, 2**64 - 1]), np.uint64([1, 2, 3])),
                      {"min": 0.0, "max": 2.0**64}, np.uint64([0, 2, 3])),
    "clip_grad_nan_x": ("clip_grad0", (np.float32([np.nan, -1.0, 1.0]), np.float32([4.0, 5.0, 6.0])),
                        {"min": -1.0, "max": 1.0}, np.float32([4.0, 0.0, 0.0])),
    # CLIP_GRAD1 (clip_grad): min and max in the tensor's own type, compared exactly (INT64's and UINT64's ends
    # too); None is the type's end, where the gradient is 0; a NaN x passes the gradient.
    "clip_grad1_int": ("clip_grad", (np.int8([-128, -2, -1, 0, 1, 2, 127]), np.int8([1, 2, 3, 4, 5, 6, 7])),
                       {"min": -2, "max": 2}, np.int8([0, 0, 3, 4, 5, 0, 0])),
    "clip_grad1_ends": ("clip_grad", (np.int8([-128, 0, 127]), np.int8([1, 2, 3])), {}, np.int8([0, 2, 0])),
    "clip_grad1_i64": ("clip_grad", (np.array([_I64_MIN, _I64_MIN + 1, 2**62, 2**63 - 1], np.int64),
                                     np.int64([1, 2, 3, 4])),
                       {"min": _I64_MIN, "max": 2**63 - 1}, np.int64([0, 2, 3, 0])),
    "clip_grad1_u64": ("clip_grad", (np.uint64([0, 2**63, 2**64 - 2, 2**64 - 1]), np.uint64([1, 2, 3, 4])),
                       {"min": 0, "max": 2**64 - 1}, np.uint64([0, 2, 3, 0])),
    "clip_grad1_f16": ("clip_grad", (np.float16([np.nan, -1.0, 0.0999, 0.1, np.inf]),
                                     np.float16([4.0, 5.0, 6.0, 7.0, 8.0])),
                       {"min": -1.0, "max": 0.1}, np.float16([4.0, 0.0, 6.0, 0.0, 0.0])),
    # CAST: to integers truncated, saturated, NaN 0; to floats rounded to nearest even (once); integers wrap.
    "cast_f32_i8": ("cast", (np.float32([300.7, -300.7, -1.9, np.nan, np.inf, -0.0]), "INT8"), {},
                    np.int8([127, -128, -1, 0, 127, 0])),
    "cast_f32_u64": ("cast", (np.float32([-1.5, 2.0**64, 2.0**63 + 2.0**40, np.nan]), "UINT64"), {},
                     np.array([0, 2**64 - 1, 2**63 + 2**40, 0], np.uint64)),
    "cast_f64_i64": ("cast", (np.float64([2.0**63, -2.0**63, -2.0**63 - 2.0**11, -1e300, 1e-300, -7.9]), "INT64"), {},
                     np.array([2**63 - 1, -(2**63), -(2**63), -(2**63), 0, -7], np.int64)),
    "cast_f64_f16": ("cast", (np.float64([1.0 + 2.0**-11 + 2.0**-40, 65519.999, 65520.0, 2.0**-25, 1e-300]), "FLOAT16"),
                     {}, np.float16([1.0 + 2.0**-10, 65504.0, np.inf, 0.0, 0.0])),
    "cast_i64_f32": ("cast", (np.array([2**24 + 1, 2**24 + 3, -(2**63), 2**63 - 1], np.int64), "FLOAT32"), {},
                     np.float32([2.0**24, 2.0**24 + 4, -(2.0**63), 2.0**63])),
    "cast_i32_f16": ("cast", (np.int32([65519, 65520, -2049, 2**31 - 1]), "FLOAT16"), {},
                     np.float16([65504.0, np.inf, -2048.0, np.inf])),
    "cast_wrap": ("cast", (np.int32([300, -129, -1, 2**31 - 1]), "UINT8"), {}, np.uint8([44, 127, 255, 255])),
    "cast_sign_extend": ("cast", (np.int8([-1, -128, 5]), "UINT64"), {},
                         np.array([2**64 - 1, 2**64 - 128, 5], np.uint64)),
    "cast_u64_f64": ("cast", (np.array([2**64 - 1, 2**53 + 1, 2**53 + 3], np.uint64), "FLOAT64"), {},
                     np.float64([2.0**64, 2.0**53, 2.0**53 + 4])),
    "cast_nan_f64": ("cast", (np.array([0x7FF8000000000001, 0xFFF0000000000000], np.uint64).view(np.float64),
                              "FLOAT32"), {}, np.float32([np.nan, -np.inf])),
    # QUANTIZE_LINEAR: the exact quotient rounded half to even (7.5 / 3 is 2.5: 2), saturated; NaN 0; x / 0 saturates.
    "quantize": ("quantize_linear", (np.float32([7.5, 0.5, 1.5, -2.5, 1e10, np.nan, 5.0, 0.0]),
                                     np.float32([3.0, 1.0, 1.0, 1.0, 1.0, 1.0, 0.0, 0.0]), np.int8([1])), {},
                 np.int8([3, 1, 3, -1, 127, 1, 127, 1])),
    "quantize_i32_no_zero_point": ("quantize_linear", (np.int32([2**31 - 1, -(2**31), 5, 7]), np.float32([2.0])),
                                   {"output_data_type": "UINT8"}, np.uint8([255, 0, 2, 4])),
    "dequantize_i32": ("dequantize_linear", (np.int32([2**31 - 1, -(2**31), 2**24 + 1]), np.float32([1.0, 1.0, 2.0]),
                                             np.int32([-(2**31), 2**31 - 1, 0])), {},
                       np.float32([2.0**32 - 1, -(2.0**32 - 1), 2.0**25 + 2])),
    "relu_grad": ("relu_grad", (np.float32([-1.0, 0.0, -0.0, 2.0, np.nan]), np.float32([5.0, 5.0, 5.0, np.nan, 5.0])),
                  {}, np.float32([0.0, 0.0, 0.0, np.nan, 0.0])),
}


@pytest.mark.parametrize("case", list(_SPECIAL))
def test_integer_and_bit_rows_where_the_pages_are_silent(device, case):
    """What docs/elementwise.md decides where the pages say nothing: on every adapter (GL's
    64-bit values as u32 pairs), exactly, and the reference the same."""
    fn, args, kwargs, want = _SPECIAL[case]

    def check(got):
        if case in ("bit_and_float", "if_nan_payloads") or want.dtype.kind != "f":
            assert_bits_equal(got, want)  # bits, NaN payloads included
        else:  # NaN where NaN (its sign and payload the adapter's), else the bits (-0.0 too)
            assert got.dtype == want.dtype and np.array_equal(np.isnan(got), np.isnan(want))
            assert_bits_equal(got[~np.isnan(want)], want[~np.isnan(want)])
    check(getattr(reference, fn)(*args, **kwargs))
    check(getattr(dml, fn)(*args, device=device, **kwargs))


# ============================================================================ special values
def test_special_values(device):
    """NaN, infinities and -0.0 as the module docstring says: IEEE arithmetic, and HLSL's
    maxNum/minNum for MAX, MIN, CLIP and RELU."""
    x = np.array([NAN, INF, -INF, -0.0, 0.0, 1.0, -1.0], np.float32)
    y = np.array([1.0, NAN, 2.0, 0.0, -0.0, NAN, -INF], np.float32)

    def check(got, want):
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
        ok = ~np.isnan(want)
        np.testing.assert_array_equal(got[ok], want[ok])  # (-0.0 == 0.0: WGSL leaves a zero's sign open)

    f = np.float32
    check(dml.max(x, y, device=device), f([1.0, INF, 2.0, 0.0, -0.0, 1.0, -1.0]))
    check(dml.min(x, y, device=device), f([1.0, INF, -INF, 0.0, -0.0, 1.0, -INF]))
    check(dml.relu(x, device=device), f([0.0, INF, 0.0, 0.0, 0.0, 1.0, 0.0]))
    check(dml.clip0(x, -0.5, 0.5, device=device), f([-0.5, 0.5, -0.5, -0.0, 0.0, 0.5, -0.5]))
    check(dml.add(x, y, device=device), x + y)
    check(dml.negate(x, device=device), -x)
    check(dml.recip(f([-0.0, 0.0, INF, -INF]), device=device), f([-INF, INF, 0.0, -0.0]))
    check(dml.sqrt(f([-1.0, -0.0, INF]), device=device), f([NAN, -0.0, INF]))
    check(dml.log(f([0.0, -1.0, INF, 1.0]), device=device), f([-INF, NAN, INF, 0.0]))
    check(dml.exp(f([-INF, INF, NAN, 0.0]), device=device), f([0.0, INF, NAN, 1.0]))
    check(dml.sigmoid(f([-INF, INF]), device=device), f([0.0, 1.0]))
    check(dml.tanh(f([-INF, INF, 30.0, -0.0]), device=device), f([-1.0, 1.0, 1.0, -0.0]))
    assert_bits_equal(dml.logical_equals(x, x, device=device), np.array([0, 1, 1, 1, 1, 1, 1], np.uint8))
    assert_bits_equal(dml.logical_greater_than(x, y, device=device, output_data_type="UINT32"),
                      (x > y).astype(np.uint32))
    # float16 computes in float32 and rounds once: beyond 65504 is inf.
    h = np.float16([65504.0, 1.0, 2.0**-24])
    check(dml.add(h, h, device=device), np.float16([INF, 2.0, 2.0**-23]))
    # IDENTITY copies bits: NaN payloads too.
    payload = np.array([0x7FA00001, 0xFFC12345], np.uint32).view(np.float32)
    assert_bits_equal(dml.identity(payload, device=device), payload)


def test_float64_computes_where_the_adapter_has_shader_f64(device):
    x = np.array([1.0 + 2.0**-40, -3.25], np.float64)
    if device.caps.has("shader-f64") and device.caps.has("shader-int64"):
        assert_bits_equal(dml.identity(x, scale_bias=(2.0, 0.5), device=device), x * 2 + 0.5)
    else:
        with pytest.raises(dml.UnsupportedError, match=r"ElementWiseIdentity: FLOAT64 arithmetic needs .*"
                                                       + device.caps.name.split(" (")[0]):
            dml.identity(x, scale_bias=(2.0, 0.5), device=device)
    assert_bits_equal(dml.identity(x, device=device), x)  # a copy computes nothing: every adapter


# ============================================================================ bad input
def test_bad_calls_are_invalid_arguments():
    x = np.ones(4, np.float32)
    with pytest.raises(dml.InvalidArgumentError, match=r"^add: missing a required argument: 'b'"):
        dml.add(x)
    with pytest.raises(dml.InvalidArgumentError, match=r"^relu: too many positional arguments"):
        dml.relu(x, x)
    with pytest.raises(dml.InvalidArgumentError, match=r"ActivationLeakyRelu: alpha: expected a number"):
        dml.leaky_relu(x, alpha="0.1")
    with pytest.raises(dml.InvalidArgumentError, match=r"ActivationLinear: alpha = 1e\+300 is beyond FLOAT"):
        dml.linear(x, alpha=1e300)
    with pytest.raises(dml.InvalidArgumentError, match="ElementWiseAdd1: a_tensor.data_type INT32 is not supported"):
        dml.add(np.ones(3, np.int32), np.ones(3, np.int32))


def test_tables_name_the_level_that_would_accept(at_level):
    """A type a level does not list: the message names the level that would take it."""
    with pytest.raises(dml.InvalidArgumentError, match=r"ElementWiseAdd: a_tensor.data_type INT64 is not supported at "
                                                       r"FL_3_0 .*it needs FL_4_1 or later"):
        dml.add0(np.ones(3, np.int64), np.ones(3, np.int64), device=at_level(FL.FL_3_0))
    with pytest.raises(dml.InvalidArgumentError, match="ActivationGelu: not available at feature level FL_5_0"):
        dml.gelu(np.ones(3, np.float32), device=at_level(FL.FL_5_0))


def test_softplus_steepness_below_1_from_fl_6_4(at_level):
    """The page: Steepness cannot be less than 1; the feature-level history lifts that at FL_6_4."""
    x = np.linspace(-2, 2, 5, dtype=np.float32)
    with pytest.raises(dml.InvalidArgumentError, match=r"ActivationSoftplus: steepness = 0.5 must be at least 1.0 at "
                                                       r"FL_6_3; FL_6_4 and later take any"):
        dml.softplus(x, steepness=0.5, device=at_level(FL.FL_6_3))
    got = dml.softplus(x, steepness=0.5, device=at_level(FL.FL_6_4))
    np.testing.assert_allclose(got, np.logaddexp(0, 0.5 * x) / 0.5, rtol=1e-5)


# ============================================================================ strategies
def test_strategies_by_layout_and_class(vulkan_device):
    """A packed call of one shape is one flat loop in 16-byte blocks (first choice); a
    broadcast one goes element by element, runs first on a CPU adapter."""
    device = vulkan_device
    packed = dml.ElementWiseAdd1OperatorDesc(*[dml.TensorDesc(T.FLOAT32, [2, 3, 64])] * 3)
    compiled = device.compile_operator(device.create_operator(packed))
    assert compiled.strategies[0] == "blocks" and "array<u32, 1>" not in compiled.wgsl[0]
    elements = device.compile_operator(device.create_operator(packed), "elements")
    assert "array<u32, 1>" in elements.wgsl[0]  # three axes merged into one
    t = dml.TensorDesc(T.FLOAT32, [2, 3, 64])
    broadcast = dml.ElementWiseAdd1OperatorDesc(t, dml.TensorDesc(T.FLOAT32, [2, 3, 64], [0, 64, 1]), t)
    order = device.compile_operator(device.create_operator(broadcast)).strategies
    assert "blocks" not in order and order[0] == ("runs" if device.caps.is_software else "elements")
    mixed = dml.ElementWiseLogicalEqualsOperatorDesc(t, t, dml.TensorDesc(T.UINT8, [2, 3, 64]))
    assert "blocks" not in device.compile_operator(device.create_operator(mixed)).strategies  # 32 and 8 bits


@pytest.mark.parametrize("dtype, sizes", [(T.FLOAT16, [3, 5]), (T.UINT8, [37]), (T.FLOAT16, [2, 8])])
def test_blocks_take_8_and_16_bit_elements_apart(device, dtype, sizes):
    """`blocks` over 8/16-bit tensors: 16 or 8 elements a block, extracted and inserted by
    bits, a partial last block too (the conformance kit checks the bytes past the tensor)."""
    rng = np.random.default_rng(11)
    a, b = (rng.integers(0, 60, sizes).astype(dtype.numpy) for _ in range(2))
    t = dml.TensorDesc(dtype, sizes)
    op = device.create_operator(dml.ElementWiseAddOperatorDesc(t, t, t))
    compiled = device.compile_operator(op, "blocks")
    assert compiled.strategies[0] == "blocks"
    got = compiled.execute([device.tensor(a), device.tensor(b)])[0].numpy()
    assert_bits_equal(got, (a + b).astype(dtype.numpy))


@pytest.mark.parametrize("dtype, sizes", [(T.FLOAT32, [3, 5, 8]), (T.INT64, [2, 6]), (T.UINT16, [3, 8]),
                                          (T.INT8, [2, 32]), (T.FLOAT32, [3, 5, 7]), (T.INT64, [2, 5]),
                                          (T.UINT16, [3, 6])])
@pytest.mark.parametrize("run", [None, 4, 12])
def test_runs_store_whole_blocks_where_rows_are_blocks(device, dtype, sizes, run):
    """`runs` over a packed output whose rows are whole 16-byte blocks stores blocks (the
    elements of each gathered, a row's end checked once a block) and reads an input
    stepping by 1 a block at a time; other rows go element by element (8/16-bit outputs
    assembled into words). Every plan option `run` computes the same bits, the broadcast
    input read once a row."""
    per_block = 16 // dtype.size
    rng = np.random.default_rng(7)
    a = rng.integers(0, 99, sizes).astype(dtype.numpy)
    b = rng.integers(0, 99, [sizes[0]] + [1] * (len(sizes) - 1)).astype(dtype.numpy)  # constant along each row
    t = dml.TensorDesc(dtype, sizes)
    desc = dml.ElementWiseMaxOperatorDesc(t, dml.TensorDesc(dtype, sizes, [1] + [0] * (len(sizes) - 1)), t)
    program = compiler.compile(desc, device.caps, strategy="runs", options={"run": run} if run else None)
    blocks = sizes[-1] % per_block == 0 and (run or 64) % per_block == 0  # (runs start on blocks)
    assert ("var blk: vec4<u32>;" in program.wgsl[0]) == blocks
    assert (f"let w0_0 = in0_at(o1 / {per_block}u);" in program.wgsl[0]) == blocks  # `a` read in blocks too
    compiled = device.compile_operator(device.create_operator(desc), "runs", options={"run": run} if run else None)
    got = compiled.execute([device.tensor(a), device.tensor(b.reshape(-1), desc=desc.b_tensor)])[0].numpy()
    assert_bits_equal(got, np.maximum(a, b))


@pytest.mark.parametrize("source, target, loads", [
    (T.FLOAT32, T.FLOAT16, ["in0_at(o1 / 4u)", "in0_at(o1 / 4u + 1u)"]),  # 2 blocks per 8 outputs
    (T.FLOAT16, T.FLOAT32, ["in0_at(o1 / 2u)", "in0_at(o1 / 2u + 1u)"]),  # 2 words per 4 outputs
    (T.UINT8, T.FLOAT32, ["in0_at(o1 / 4u)"]),  # 1 word
    (T.INT64, T.INT32, ["in0_at(o1 / 2u)", "in0_at(o1 / 2u + 1u)"]),
    (T.UINT8, T.INT64, []),  # 2 outputs a block: half a word of UINT8, element by element
])
def test_runs_read_inputs_of_other_widths_in_units(device, source, target, loads):
    """An input wider than the output loads the 16-byte blocks one output block needs, a
    narrower one the u32 words; the values are the same casts as element by element."""
    sizes = [4, 16]
    rng = np.random.default_rng(13)
    x = rng.integers(0, 100, sizes).astype(source.numpy)
    desc = dml.CastOperatorDesc(dml.TensorDesc(source, sizes), dml.TensorDesc(target, sizes))
    program = compiler.compile(desc, device.caps, strategy="runs")
    for load in loads:
        assert load in program.wgsl[0]
    assert ("let w0_0 = " in program.wgsl[0]) == bool(loads)
    got = device.compile_operator(device.create_operator(desc), "runs").execute([device.tensor(x)])[0].numpy()
    assert_bits_equal(got, x.astype(target.numpy))


def test_the_run_option_is_checked(vulkan_device):
    """`run` (elements per invocation of `runs`, 16-byte blocks of `blocks`): an int in
    1..256, a whole number of output words for 8/16-bit outputs; `elements` ignores it."""
    t = dml.TensorDesc(T.FLOAT32, [4, 64])
    desc = dml.ElementWiseAdd1OperatorDesc(t, t, t)
    for bad in (0, 257, 2.5, True, "8"):
        with pytest.raises(dml.InvalidArgumentError, match=r"option run: an int in 1\.\.256.*got"):
            compiler.compile(desc, vulkan_device.caps, strategy="runs", options={"run": bad})
    h = dml.TensorDesc(T.FLOAT16, [4, 64])
    with pytest.raises(dml.InvalidArgumentError, match="run: 5 elements per invocation would share output words.*"
                                                       "multiple of 2"):
        compiler.compile(dml.ElementWiseAdd1OperatorDesc(h, h, h), vulkan_device.caps, strategy="runs",
                         options={"run": 5})
    assert compiler.compile(desc, vulkan_device.caps, strategy="elements", options={"run": 8}).wgsl


# ============================================================================ float math rows (ew-math)
_X = np.array([NAN, INF, -INF, -0.0, 0.0, 1.0, -1.0, 2.0, -2.0, 0.5], np.float32)
_PI2 = math.pi / 2
#: Special values per row on _X (NaN, +-inf, +-0, +-1, +-2, 0.5): the page's formula in IEEE
#: arithmetic, HLSL's maxNum/minNum where it says max or min, the decisions the docs state.
_MATH_SPECIAL = {
    "acos": [NAN, NAN, NAN, _PI2, _PI2, 0.0, math.pi, NAN, NAN, math.acos(0.5)],
    "asin": [NAN, NAN, NAN, 0.0, 0.0, _PI2, -_PI2, NAN, NAN, math.asin(0.5)],
    "atan": [NAN, _PI2, -_PI2, 0.0, 0.0, math.pi / 4, -math.pi / 4, math.atan(2), -math.atan(2), math.atan(0.5)],
    "acosh": [NAN, INF, NAN, NAN, NAN, 0.0, NAN, math.acosh(2), NAN, NAN],
    "asinh": [NAN, INF, -INF, 0.0, 0.0, math.asinh(1), -math.asinh(1), math.asinh(2), -math.asinh(2), math.asinh(0.5)],
    "atanh": [NAN, NAN, NAN, 0.0, 0.0, INF, -INF, NAN, NAN, math.atanh(0.5)],
    "cosh": [NAN, INF, INF, 1.0, 1.0, math.cosh(1), math.cosh(1), math.cosh(2), math.cosh(2), math.cosh(0.5)],
    "sinh": [NAN, INF, -INF, 0.0, 0.0, math.sinh(1), -math.sinh(1), math.sinh(2), -math.sinh(2), math.sinh(0.5)],
    "tan": [NAN, NAN, NAN, 0.0, 0.0, math.tan(1), -math.tan(1), math.tan(2), -math.tan(2), math.tan(0.5)],
    "ceil": [NAN, INF, -INF, 0.0, 0.0, 1.0, -1.0, 2.0, -2.0, 1.0],
    "floor": [NAN, INF, -INF, 0.0, 0.0, 1.0, -1.0, 2.0, -2.0, 0.0],
    "round": [NAN, INF, -INF, 0.0, 0.0, 1.0, -1.0, 2.0, -2.0, 0.0],
    "erf": [NAN, 1.0, -1.0, 0.0, 0.0, math.erf(1), -math.erf(1), math.erf(2), -math.erf(2), math.erf(0.5)],
    "sign": [0.0, 1.0, -1.0, 0.0, 0.0, 1.0, -1.0, 1.0, -1.0, 1.0],  # NaN: 0, the page's "otherwise"
    "clip": [INF, INF, -INF, 0.0, 0.0, 1.0, -1.0, 2.0, -2.0, 0.5],  # NaN: max (min(NaN, max) is max)
    "threshold": [-INF, INF, -INF, 0.0, 0.0, 1.0, -1.0, 2.0, -2.0, 0.5],  # NaN: min
    "hard_sigmoid": [1.0, 1.0, 0.0, 0.5, 0.5, 0.7, 0.3, 0.9, 0.1, 0.6],  # NaN: min(NaN, 1) is 1
    "parametric_softplus": [NAN, INF, 0.0] + [math.log1p(math.exp(v)) for v in (-0.0, 0.0, 1, -1, 2, -2, 0.5)],
    "scaled_elu": [NAN, INF, -1.6732 * 1.0507] + [1.0507 * (v if v > 0 else 1.6732 * math.expm1(v))
                                                   for v in (-0.0, 0.0, 1, -1, 2, -2, 0.5)],
    "scaled_tanh": [NAN, 1.0, -1.0] + [math.tanh(0.5 * v) for v in (-0.0, 0.0, 1, -1, 2, -2, 0.5)],
    "softsign": [NAN, 1.0, -1.0, 0.0, 0.0, 0.5, -0.5, 2 / 3, -2 / 3, 1 / 3],
    "thresholded_relu": [0.0, INF, 0.0, 0.0, 0.0, 0.0, 0.0, 2.0, 0.0, 0.0],
    "shrink": [0.0, INF, -INF, 0.0, 0.0, 1.0, -1.0, 2.0, -2.0, 0.0],
    "celu": [0.0, INF, -1.0, 0.0, 0.0, 1.0, math.expm1(-1), 2.0, math.expm1(-2), 0.5],  # NaN: maxNum and minNum give 0
    "hard_swish": [NAN, INF, 0.0, 0.0, 0.0, 2 / 3, -1 / 3, 5 / 3, -1 / 3, 0.5 * (0.5 / 6 + 0.5)],  # -inf: 0, the limit
    "swish": [NAN, INF, 0.0] + [v / (1 + math.exp(-v)) for v in (-0.0, 0.0, 1, -1, 2, -2, 0.5)],  # 0 at -inf
    "activation_identity": list(_X),
}


@pytest.mark.parametrize("name", sorted(_MATH_SPECIAL))
def test_special_values_of_the_math_rows(device, name):
    """NaN, +-inf and +-0 through each row (its WGSL built-ins guarded where they leave them
    open: acos, asin, atan of NaN, atanh at +-1, cosh and sinh to float32's limit)."""
    got = np.asarray(getattr(dml, name)(_X, device=device))
    want = np.array(_MATH_SPECIAL[name], np.float32)
    row = next(r for r in TABLE if r.functional == name)
    defaults = {a.name: None if a.kind == "value" else a.default for a in row.attributes}
    assert_within(got, want, spec_named(row.key).tolerance(want, [_X], defaults), name)  # NaN matching NaN


def test_math_rows_keep_their_precision_at_the_ends(device):
    """No overflow or cancellation where the plain formulas have it: cosh and sinh up to
    float32's limit, acosh and asinh of huge values, asinh, atanh, sinh, erf relative to a
    tiny x, CELU with a huge alpha (x / alpha would underflow)."""
    f = np.float32
    big = f([89.0, -89.0, 1e30, 3e38])
    np.testing.assert_allclose(dml.cosh(big[:2], device=device), np.cosh(np.float64(89.0)) * np.ones(2), rtol=1e-5)
    np.testing.assert_allclose(dml.sinh(big[:2], device=device), np.sinh(np.float64([89.0, -89.0])), rtol=1e-5)
    np.testing.assert_allclose(dml.acosh(big[2:], device=device), np.arccosh(big[2:].astype(np.float64)), rtol=1e-6)
    np.testing.assert_allclose(dml.asinh(-big[2:], device=device), -np.arcsinh(big[2:].astype(np.float64)), rtol=1e-6)
    tiny = f([1e-10, -3e-7, 1e-30])
    for name, fn in (("asinh", np.arcsinh), ("atanh", np.arctanh), ("sinh", np.sinh), ("erf", None)):
        want = fn(tiny.astype(np.float64)) if fn else 2 / math.sqrt(math.pi) * tiny.astype(np.float64)
        np.testing.assert_allclose(getattr(dml, name)(tiny, device=device), want, rtol=1e-6, err_msg=name)
    np.testing.assert_allclose(dml.celu(np.float16([-23856.0, -4.5e-5]), alpha=3e38, device=device),
                               np.float16([-23856.0, -4.5e-5]), rtol=1e-3)
    far = f([-1e30, -90.0])  # SWISH where e^-v overflows: x e^v
    np.testing.assert_allclose(dml.swish(far, sigmoid_input_scale=1e-28, device=device),
                               [-1e30 * np.exp(-100.0), -45.0], rtol=1e-4)


def test_round_follows_the_rounding_mode_table(device):
    """The DML_ROUNDING_MODE page's table, and halves beyond it (0.49999997 is not a half)."""
    x = np.float32([-2.5, -1.75, -1.5, -1.25, 0.0, 1.25, 1.5, 1.75, 2.5])
    table = {"halves_to_nearest_even": [-2, -2, -2, -1, 0, 1, 2, 2, 2], "toward_zero": [-2, -1, -1, -1, 0, 1, 1, 1, 2],
             "toward_infinity": [-3, -2, -2, -1, 0, 1, 2, 2, 3]}
    for mode, want in table.items():
        assert_bits_equal(dml.round(x, mode, device=device), np.float32(want) + np.float32(0.0))
        assert_bits_equal(reference.round(x, rounding_mode=mode), np.float32(want) + np.float32(0.0))
    edge = np.float32([0.49999997, -0.49999997, 8388607.5, -8388607.5, 16777216.0])
    assert_bits_equal(dml.round(edge, dml.RoundingMode.TOWARD_INFINITY, device=device),
                      np.float32([0.0, -0.0, 8388608.0, -8388608.0, 16777216.0]))
    assert_bits_equal(dml.round(np.float16([0.5, 1.5, -2.5]), 0, device=device), np.float16([0.0, 2.0, -2.0]))
    with pytest.raises(dml.InvalidArgumentError, match="ElementWiseRound: rounding_mode: 'up' is not a RoundingMode"):
        dml.round(x, "up", device=device)


def test_is_nan_and_is_infinity(device, at_level):
    x = np.array([NAN, INF, -INF, 0.0, -3e38], np.float32)
    assert_bits_equal(dml.is_nan(x, device=device), np.uint8([1, 0, 0, 0, 0]))
    assert_bits_equal(dml.is_nan(np.float16([NAN, INF, 65504.0]), output_data_type="UINT32", device=device),
                      np.uint32([1, 0, 0]))
    for mode, want in (("either", [0, 1, 1, 0, 0]), ("positive", [0, 1, 0, 0, 0]), ("negative", [0, 0, 1, 0, 0])):
        assert_bits_equal(dml.is_infinity(x, mode, device=device), np.uint8(want))
    # float16 beyond 65504 is inf in the tensor, not 3e38 rounded in the kernel
    assert_bits_equal(dml.is_infinity(np.float16([65504, -np.inf]), device=device), np.uint8([0, 1]))
    with pytest.raises(dml.InvalidArgumentError, match="ElementWiseIsInfinity: output_tensor.data_type UINT32 is not "
                                                       "supported"):
        dml.is_infinity(x, output_data_type="UINT32", device=device)
    with pytest.raises(dml.InvalidArgumentError, match="ElementWiseIsInfinity: not available at feature level FL_2_0"):
        dml.is_infinity(x.reshape(1, 1, 1, 5), device=at_level(FL.FL_2_0))


def test_clip1_takes_min_and_max_in_the_tensors_type(device):
    """CLIP1 is max(min, min(x, max)) (CLIP0 is min(max, max(min, x))): they differ for NaN
    (max against min) and min > max (min against max). min and max are the tensor's own
    values: integers exactly (INT64 and UINT64 too), float16 rounded; None is the type's end."""
    f = np.float32([NAN, -5.0, 0.25, 5.0])
    assert_bits_equal(dml.clip(f, -1.0, 1.0, device=device), np.float32([1.0, -1.0, 0.25, 1.0]))
    assert_bits_equal(dml.clip0(f, -1.0, 1.0, device=device), np.float32([-1.0, -1.0, 0.25, 1.0]))
    assert_bits_equal(dml.clip(f[1:], 2.0, -2.0, device=device), np.float32([2.0, 2.0, 2.0]))
    assert_bits_equal(dml.clip0(f[1:], 2.0, -2.0, device=device), np.float32([-2.0, -2.0, -2.0]))
    big = np.array([-(2**63), -5, 2**62 + 1, 2**63 - 1], np.int64)
    assert_bits_equal(dml.clip(big, -(2**63) + 1, 2**62 + 1, device=device),
                      np.array([-(2**63) + 1, -5, 2**62 + 1, 2**62 + 1], np.int64))
    u8 = np.arange(0, 256, 51, dtype=np.uint8)
    assert_bits_equal(dml.clip(u8, 60, device=device), np.maximum(u8, 60))
    assert_bits_equal(dml.clip(u8, max=100, device=device), np.minimum(u8, 100))
    desc = dml.ElementWiseClip1OperatorDesc(dml.TensorDesc(T.INT8, [4]), dml.TensorDesc(T.INT8, [4]))
    assert desc.min_max_data_type == T.INT8 and (desc.min, desc.max) == (-128, 127)
    with pytest.raises(dml.InvalidArgumentError, match=r"ElementWiseClip1: min = 1.5 is not a value of INT8"):
        dml.clip(np.int8([1, 2]), 1.5, device=device)
    with pytest.raises(dml.InvalidArgumentError, match=r"ElementWiseClip1: max = 300 is beyond UINT8's range \[0, 25"):
        dml.clip(u8, 0, 300, device=device)
    with pytest.raises(dml.InvalidArgumentError, match=r"ElementWiseClip1: max = 70000.0 is beyond FLOAT16's range"):
        dml.clip(np.float16([1.0]), 0.0, 70000.0, device=device)
    t = dml.TensorDesc(T.FLOAT32, [4])
    with pytest.raises(dml.InvalidArgumentError, match="ElementWiseClip1: min_max_data_type FLOAT16 must match "
                                                       "output_tensor.data_type FLOAT32"):
        device.create_operator(dml.ElementWiseClip1OperatorDesc(t, t, min_max_data_type=T.FLOAT16, min=0.0, max=1.0))


def test_pow_signs_integers_and_mixed_types(device, at_level):
    """A negative base: the exact sign for integral exponents (float or integer tensors), NaN
    for others; IEEE pow's special values; integers exact (wrapping in the type), a negative
    exponent truncated (0 to a negative power: the type's largest value); a float exponent on
    integers: the real result truncated toward zero and saturated (NaN: 0). From FL_3_0 the
    exponent takes its own type; before, it must be the input's, and the message names FL_3_0."""
    f = np.float32
    base = f([-2.0, -2.0, -2.0, -0.5, -1.0, -0.0, -0.0, -INF, 0.0, NAN, 1.0])
    expo = f([3.0, 2.0, 0.5, -3.0, INF, 3.0, -1.0, 3.0, -2.0, 0.0, NAN])
    want = f([-8.0, 4.0, NAN, -8.0, 1.0, -0.0, -INF, -INF, INF, 1.0, 1.0])
    got = np.asarray(dml.pow(base, expo, device=device))
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_allclose(got[~np.isnan(want)], want[~np.isnan(want)], rtol=1e-6)
    assert np.signbit(got[5]) and got[6] == -INF
    np.testing.assert_allclose(dml.constant_pow(f([-3.0, -3.0, 2.0]), 3.0, device=device), f([-27.0, -27.0, 8.0]),
                               rtol=1e-6)
    assert np.isnan(np.asarray(dml.constant_pow(f([-3.0]), 0.5, device=device))[0])
    # An integer exponent tensor on a float base: its parity is exact beyond 2^24.
    odd = np.int32([2**24 + 1, 2**24 + 1, 3])
    np.testing.assert_array_equal(dml.pow(f([-1.0, -0.0, -2.0]), odd, device=device), f([-1.0, -0.0, -8.0]))
    # Integers: exact and wrapping; negative exponents truncated.
    i8 = np.int8([3, -3, 2, -1, -1, 0, 2, 1])
    e8 = np.int8([4, 3, 7, -3, -4, -1, -1, -5])
    assert_bits_equal(dml.pow(i8, e8, device=device), np.int8([81, -27, -128, -1, 1, 127, 0, 1]))
    assert_bits_equal(dml.pow(np.uint32([3, 7, 0]), np.uint32([21, 0, 0]), device=device),
                      np.uint32([3**21 % 2**32, 1, 1]))
    assert_bits_equal(dml.pow(np.uint16([2, 0, 1]), np.int32([-1, -2, -7]).astype(np.int16), device=device),
                      np.uint16([0, 65535, 1]))
    # A float exponent on integers: truncated and saturated.
    got = dml.pow(np.int16([10, 100, 2, -2, 0, -8, 7]), f([0.5, 0.25, 40.0, 41.0, -1.0, 1 / 3, NAN]), device=device)
    assert_bits_equal(got, np.int16([3, 3, 32767, -32768, 32767, 0, 0]))
    assert_bits_equal(dml.pow(np.uint8([200, 5]), f([2.0, -1.0]), device=device), np.uint8([255, 0]))
    # A float16 exponent on a float32 base, and an integer one, from FL_3_0.
    x = f([1.5, -2.0])
    np.testing.assert_allclose(dml.pow(x, np.float16([2.0, 3.0]), device=at_level(FL.FL_3_0)), f([2.25, -8.0]),
                               rtol=1e-6)
    with pytest.raises(dml.InvalidArgumentError, match=r"ElementWisePow: exponent_tensor.data_type FLOAT16 must equal "
                                                       r"input_tensor.data_type FLOAT32 at FL_2_1; it needs FL_3_0"):
        dml.pow(x.reshape(1, 1, 1, 2), np.float16([2.0, 3.0]).reshape(1, 1, 1, 2), device=at_level(FL.FL_2_1))
    assert_bits_equal(reference.pow(np.int8([-2]), np.uint8([3])), np.int8([-8]))


def test_threshold_and_shrink_of_integers(device):
    """THRESHOLD on integers: max(x, the least integer >= min); SHRINK: the comparisons with
    threshold exact, bias truncated toward zero and saturated to the type, the result wrapping."""
    x = np.arange(-5, 6, dtype=np.int8)
    assert_bits_equal(dml.threshold(x, -2.5, device=device), np.maximum(x, -2))
    assert_bits_equal(dml.threshold(np.uint8([0, 3, 250]), 2.5, device=device), np.uint8([3, 3, 250]))
    assert_bits_equal(dml.shrink(x, bias=1.75, threshold=2.5, device=device),
                      np.where(x > 2.5, x - 1, np.where(x < -2.5, x + 1, 0)).astype(np.int8))
    assert_bits_equal(dml.shrink(np.int8([127, -128, 0]), bias=-300.0, threshold=-0.5, device=device),
                      np.int8([-1, 0, -128]))  # bias -128; 0 > -0.5: 0 - (-128) wraps
    assert_bits_equal(dml.shrink(np.uint32([0, 4, 2**32 - 1]), bias=3.0, threshold=3.9, device=device),
                      np.uint32([0, 1, 2**32 - 4]))
    with pytest.raises(dml.InvalidArgumentError, match=r"ActivationShrink: input_tensor.data_type INT32 is not "
                                                       r"supported at FL_5_0 .*it needs FL_5_1 or later"):
        dml.shrink(np.int32([1]), device=dml.Device(feature_level=FL.FL_5_0))


def test_parameterized_relu_slopes_broadcast_by_strides(device):
    x = np.linspace(-3, 3, 24, dtype=np.float32).reshape(2, 3, 4)
    slope = np.float32([[0.5], [2.0], [-1.0]])
    assert_bits_equal(dml.parameterized_relu(x, slope, device=device), np.where(x >= 0, x, slope * x))
    t = dml.TensorDesc(T.FLOAT32, [2, 3, 4])
    desc = dml.ActivationParameterizedReluOperatorDesc(t, dml.TensorDesc(T.FLOAT32, [2, 3, 4], [0, 1, 0]), t)
    assert desc.slope_tensor.strides == (0, 1, 0) and device.create_operator(desc) is not None
    i = np.int8([-100, -3, 5])
    assert_bits_equal(dml.parameterized_relu(i, np.int8([3, -2, 9]), device=device), np.int8([-44, 6, 5]))


def test_activations_fuse_into_add(device):
    """The new fusable activations as ADD1's fused activation; HARD_SWISH, SWISH and
    PARAMETERIZED_RELU do not fuse (the fused-activations list)."""
    a = np.linspace(-4, 4, 17, dtype=np.float32)
    b = np.float32([0.25])
    for name, kw in (("hard_sigmoid", {"alpha": 0.3}), ("celu", {"alpha": 2.0}), ("shrink", {"threshold": 1.0}),
                     ("softsign", {}), ("identity", {}), ("scaled_tanh", {"beta": 1.0})):
        got = dml.add(a, b, fused_activation=dml.FusedActivation(name, **kw), device=device)
        functional = getattr(dml, "activation_identity" if name == "identity" else name)
        np.testing.assert_allclose(got, functional(a + b, **kw, device=device), rtol=2e-6, atol=1e-7, err_msg=name)
    for name in ("hard_swish", "swish", "parameterized_relu"):
        with pytest.raises(dml.InvalidArgumentError, match=f"'{name}' is not an activation that fuses"):
            dml.FusedActivation(name)


def test_math_rows_name_the_level_that_accepts(at_level):
    x = np.ones((1, 1, 1, 3), np.float32)
    with pytest.raises(dml.InvalidArgumentError, match=r"ElementWiseSign: input_tensor.data_type INT64 is not "
                                                       r"supported at FL_3_0 .*it needs FL_4_1 or later"):
        dml.sign(np.ones(3, np.int64), device=at_level(FL.FL_3_0))
    with pytest.raises(dml.InvalidArgumentError, match=r"ElementWiseThreshold: input_tensor.data_type INT16 is not "
                                                       r"supported at FL_2_0 .*it needs FL_2_1 or later"):
        dml.threshold(x.astype(np.int16), 0.0, device=at_level(FL.FL_2_0))
    with pytest.raises(dml.InvalidArgumentError, match="ElementWiseAtanYx: not available at feature level FL_3_0"):
        dml.atan_yx(x, x, device=at_level(FL.FL_3_0))
    with pytest.raises(dml.InvalidArgumentError, match="ActivationSwish: not available at feature level FL_6_1"):
        dml.swish(x, device=at_level(FL.FL_6_1))
    with pytest.raises(dml.InvalidArgumentError, match=r"ElementWiseDifferenceSquare: a_tensor.data_type INT16 is not "
                                                       r"supported"):
        dml.difference_square(np.int16([1]), np.int16([2]), device=at_level(FL.FL_6_4))
    with pytest.raises(dml.InvalidArgumentError, match=r"ActivationCelu: alpha: expected a number"):
        dml.celu(x, alpha="1")
    with pytest.raises(dml.InvalidArgumentError, match=r"ElementWiseIsInfinity: infinity_mode: 3 is not a "
                                                       r"IsInfinityMode"):
        dml.is_infinity(x, 3)
    assert_bits_equal(dml.difference_square(np.uint32([1, 2**31]), np.uint32([3, 0]), device=at_level(FL.FL_3_1)),
                      np.uint32([4, 0]))


# ============================================================================ QUANTIZED_LINEAR_ADD
def _qla_inputs(rng, a_type=np.uint8, b_type=np.int8, shape=(2, 3, 5)):
    def ints(dtype, shape):
        info = np.iinfo(dtype)
        return rng.integers(info.min, info.max + 1, shape, dtype=dtype)
    return (ints(a_type, shape), np.float32([0.05]), ints(a_type, (1,)), ints(b_type, shape[1:]), np.float32([0.1]),
            ints(b_type, (1,)), np.float32([0.2]), ints(np.uint8, (1,)))


def _qla_float64(a, sa, za, b, sb, zb, so, zo, out=np.uint8):
    """The page's formula in float64 (round half to even, saturated)."""
    info = np.iinfo(out)
    value = ((a.astype(float) - (0 if za is None else za)) * sa.astype(float)
             + (b.astype(float) - (0 if zb is None else zb)) * sb.astype(float)) / so.astype(float)
    return np.clip(np.rint(value) + (0 if zo is None else zo.astype(float)), info.min, info.max)


def test_quantized_linear_add_dequantizes_adds_and_requantizes(device):
    """The page's formula: within 1 of it in float64 (the float32 sum's rounding), exactly
    the reference's; zero points left out are 0 (b given by name after a_zero_point left out);
    a and b of different types; INT8 output from the output zero point's type."""
    rng = np.random.default_rng(3)
    a, sa, za, b, sb, zb, so, zo = _qla_inputs(rng)
    got = dml.quantized_linear_add(a, sa, za, b=b, b_scale=sb, b_zero_point=zb, output_scale=so, output_zero_point=zo,
                                   device=device)
    assert got.dtype == np.uint8 and got.shape == a.shape
    assert_bits_equal(got, reference.quantized_linear_add(a, sa, za, b=b, b_scale=sb, b_zero_point=zb,
                                                          output_scale=so, output_zero_point=zo))
    assert np.abs(got - _qla_float64(a, sa, za, b, sb, zb, so, zo)).max() <= 1
    # Zero points left out (0): the output a's type; a gap before b_zero_point.
    got = dml.quantized_linear_add(a, sa, b=b, b_scale=sb, b_zero_point=zb, output_scale=so, device=device)
    want = reference.quantized_linear_add(a, sa, b=b, b_scale=sb, b_zero_point=zb, output_scale=so)
    assert_bits_equal(got, want)
    assert got.dtype == np.uint8 and np.abs(got - _qla_float64(a, sa, None, b, sb, zb, so, None)).max() <= 1
    zo8 = np.int8([-7])
    got = dml.quantized_linear_add(a, sa, za, b=b, b_scale=sb, output_scale=so, output_zero_point=zo8, device=device)
    assert got.dtype == np.int8
    assert np.abs(got - _qla_float64(a, sa, za, b, sb, None, so, zo8, np.int8)).max() <= 1
    # Exact cases: halves round to even, the range saturates.
    a1, b1 = np.uint8([0, 1, 2, 3, 255]), np.uint8([0, 0, 0, 0, 255])
    half, one = np.float32([0.5]), np.float32([1.0])
    got = dml.quantized_linear_add(a1, half, b=b1, b_scale=one, output_scale=one, device=device)
    assert got.tolist() == [0, 0, 1, 2, 255]  # 0.5 -> 0, 1.5 -> 2 (even), 255.0 + 127.5 -> 255
    got = dml.quantized_linear_add(a1, half, b=b1, b_scale=one, output_scale=one, output_data_type="INT8",
                                   device=device)
    assert got.tolist() == [0, 0, 1, 2, 127]


def test_quantized_linear_add_special_scales(device):
    """NaN sums quantize to the zero point, infinite ones saturate, a zero output scale
    saturates by the sum's sign (as QUANTIZE_LINEAR)."""
    a = np.uint8([1, 2, 0, 3])
    b = np.uint8([0, 0, 0, 9])
    for scales, want in (((np.float32([np.inf]), np.float32([1.0]), np.float32([1.0])), [255, 255, 10, 255]),
                         ((np.float32([1.0]), np.float32([1.0]), np.float32([0.0])), [255, 255, 10, 255]),
                         ((np.float32([np.nan]), np.float32([1.0]), np.float32([1.0])), [10, 10, 10, 10])):
        got = dml.quantized_linear_add(a, scales[0], b=b, b_scale=scales[1], output_scale=scales[2],
                                       output_zero_point=np.uint8([10]), device=device)
        assert_bits_equal(got, reference.quantized_linear_add(a, scales[0], b=b, b_scale=scales[1],
                                                              output_scale=scales[2], output_zero_point=np.uint8([10])))
        assert got.tolist() == want


def test_quantized_linear_add_scales_and_zero_points_hold_one_element(vulkan_device):
    """The page: each scale and zero point holds one element; a desc gives it sizes of 1 or
    the output's sizes with stride 0 (the functional form broadcasts a (1,)-shaped array),
    anything else is an InvalidArgumentError naming the field."""
    u8, f32 = dml.TensorDesc(T.UINT8, [2, 3]), dml.TensorDesc(T.FLOAT32, [1, 1])
    desc = dml.ElementWiseQuantizedLinearAddOperatorDesc(
        a_tensor=u8, a_scale_tensor=f32, b_tensor=u8, b_scale_tensor=dml.TensorDesc(T.FLOAT32, [2, 3], [0, 0]),
        output_scale_tensor=f32, output_tensor=u8)
    assert vulkan_device.create_operator(desc) is not None
    with pytest.raises(dml.InvalidArgumentError, match=r"QuantizedLinearAdd: a_scale_tensor must hold one element .*"
                                                       r"a_scale_tensor.sizes \[2, 3\] with strides \[3, 1\]"):
        vulkan_device.create_operator(dataclasses.replace(desc, a_scale_tensor=dml.TensorDesc(T.FLOAT32, [2, 3])))
    with pytest.raises(dml.InvalidArgumentError, match=r"a_scale_tensor must hold one element"):
        dml.quantized_linear_add(np.zeros((2, 3), np.uint8), np.ones(3, np.float32), b=np.zeros((2, 3), np.uint8),
                                 b_scale=np.ones(1, np.float32), output_scale=np.ones(1, np.float32))
    # Types: the page's table and constraints.
    with pytest.raises(dml.InvalidArgumentError, match=r"a_zero_point_tensor.data_type INT8 must equal a_tensor"):
        vulkan_device.create_operator(dataclasses.replace(desc, a_zero_point_tensor=dml.TensorDesc(T.INT8, [1, 1])))
    with pytest.raises(dml.InvalidArgumentError, match=r"data_type FLOAT16 is not supported"):
        vulkan_device.create_operator(dataclasses.replace(desc, a_scale_tensor=dml.TensorDesc(T.FLOAT16, [1, 1])))
    with pytest.raises(dml.InvalidArgumentError, match=r"introduced at FL_4_0"):
        get_device(vulkan_device.adapter_name, FL.FL_3_1).create_operator(desc)
    # b and what follows a_zero_point go by name (Python's rule: a required argument after an optional one).
    with pytest.raises(dml.InvalidArgumentError, match=r"quantized_linear_add: too many positional arguments \(its "
                                                       r"arguments: \(a, a_scale, a_zero_point=None, \*, b, b_scale"):
        dml.quantized_linear_add(np.zeros(3, np.uint8), np.ones(1, np.float32), None, np.zeros(3, np.uint8))
    with pytest.raises(dml.InvalidArgumentError, match=r"quantized_linear_add: missing a required argument: 'b'"):
        dml.quantized_linear_add(np.zeros(3, np.uint8), np.ones(1, np.float32))


def test_quantized_linear_add_splits_where_the_adapter_binds_too_few(vulkan_device):
    """Nine tensors: on an adapter of 8 storage bindings per kernel (WebGPU's default) the
    sum goes through a float32 scratch buffer between two kernels, with the same result;
    fewer than the first kernel's is an UnsupportedError naming the limit."""
    rng = np.random.default_rng(5)
    inputs = _qla_inputs(rng, shape=(3, 70))
    names = ("a_scale", "a_zero_point", "b", "b_scale", "b_zero_point", "output_scale", "output_zero_point")
    kwargs = dict(zip(names, inputs[1:]))
    want = dml.quantized_linear_add(inputs[0], device=vulkan_device, **kwargs)
    small = limited_device(vulkan_device.adapter_name, max_storage_buffers_per_shader_stage=8)
    assert_bits_equal(dml.quantized_linear_add(inputs[0], device=small, **kwargs), want)
    one = {n: dml.TensorDesc(dml.DataType.from_numpy(v.dtype), [1, 1]) for n, v in zip(names, inputs[1:])}
    u8, i8 = dml.TensorDesc(T.UINT8, [3, 70]), dml.TensorDesc(T.INT8, [3, 70], [0, 1])
    desc = dml.ElementWiseQuantizedLinearAddOperatorDesc(
        a_tensor=u8, b_tensor=i8, output_tensor=u8, **{f"{n}_tensor": d for n, d in one.items() if n != "b"})
    program = compiler.compile(desc, small.caps)
    assert len(program.kernels) == 2 and program.scratch_bytes == (3 * 70 * 4,)
    assert len(compiler.compile(desc, vulkan_device.caps).kernels) == 1
    tiny = dataclasses.replace(small.caps, max_storage_buffers_per_shader_stage=6)
    with pytest.raises(dml.UnsupportedError, match=r"9 storage bindings, above the adapter's "
                                                   r"max-storage-buffers-per-shader-stage 6"):
        compiler.compile(desc, tiny)


def test_parametric_softplus_of_an_infinite_alpha_is_alpha_where_the_softplus_is_positive(device):
    """Regression (found by the fuzz of valid descriptions): alpha = inf times a softplus that
    rounds to 0 in float32 (beta x = -20, -200) gave NaN; the reference's float64 softplus is
    positive down to about -745.13 (inf there), 0 below (NaN, inf times 0)."""
    from gpudml.ops.elementwise.activation import _parametric_softplus

    x = np.array([-20.0, -200.0, -800.0, 5.0, -np.inf, np.nan, 0.0, -740.0], np.float32)
    for alpha in (np.inf, -np.inf, 2.0):
        got = dml.parametric_softplus(x, alpha, 1.0, device=device)
        with np.errstate(all="ignore"):  # inf times 0 and the like, as the reference means them
            want = _parametric_softplus(x.astype(np.float64), alpha, 1.0).astype(np.float32)
        np.testing.assert_array_equal(np.isnan(got), np.isnan(want), err_msg=f"alpha {alpha}")
        finite = np.isfinite(want)
        assert (got[~finite & ~np.isnan(want)] == want[~finite & ~np.isnan(want)]).all(), (alpha, got, want)
        np.testing.assert_allclose(got[finite], want[finite], rtol=1e-5, atol=1e-30)


def test_scaled_elu_of_an_infinite_gamma_is_any_value_where_its_difference_is_undetermined(device):
    """Regression (found by the fuzz of valid descriptions): gamma = inf times alpha e^x - alpha,
    which the float64 reference makes exactly 0 for 0 < |x| < ~1e-16 (NaN) and lavapipe's exp
    does not (exp(-1e-38) is 1 - 2^-24: -inf). The documented bound, |alpha gamma| 2^-22, is
    infinite there: the tolerance is, and an expected NaN takes any value; elsewhere the
    infinities and NaNs are exact."""
    x = np.array([5.0, -1.0, -20.0, -np.inf, np.nan, 0.0, -0.0, -1e-38, -1e-45, -1e-20], np.float32)
    spec = spec_named("scaled_elu")
    got = dml.scaled_elu(x, 1.6732, np.inf, device=device)
    with np.errstate(all="ignore"):
        want = reference.scaled_elu(x, 1.6732, np.inf)
    tolerance = spec.tolerance(want, [x], {"alpha": 1.6732, "gamma": np.inf})
    assert np.isposinf(tolerance[1:]).all() and np.isnan(want[4:]).all()
    assert_bits_equal(got[:4], np.array([np.inf, -np.inf, -np.inf, -np.inf], np.float32))
    assert np.isnan(got[4:7]).all()  # NaN in; e^0 is 1 on every adapter: inf times 0
    assert_within(got, want, tolerance, "scaled_elu")
    finite = spec.tolerance(reference.scaled_elu(x, 1.6732, 1.0507), [x], {"alpha": 1.6732, "gamma": 1.0507})
    assert np.isfinite(finite[[0, 1, 2, 5, 6, 7, 8, 9]]).all()  # a finite gamma keeps its bound
