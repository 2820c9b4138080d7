"""numpy 2's promotion and operators on Tensors and Expressions (issue 42): every Python
operator on every dtype a Tensor holds (the 11 DirectML types and bool) against numpy's own
result, dtype and values (integers and bools exact; floats within 4 ULP of the result's type,
`**` within POW's documented bound), where numpy raises the same kind of error, and where
DirectML has no operator for numpy's result type (FLOAT64 arithmetic; POW of 64-bit
integers) an UnsupportedError naming it. Reflected operators, ndarray-first operators, numpy
ufuncs on Tensors and on Expressions (a graph compiled and run), bool Tensors and the error
messages.

Every tensor has 4 elements: one shape, so pipelines are shared across cases. The default run
covers every operator x dtype with Python scalars (bool, int, a negative int, float) and a
numpy array of the tensor's dtype, and every strong operand kind (numpy scalars and arrays of
other dtypes) x dtype with + < and //; `-m exhaustive` runs the full product."""

from __future__ import annotations

import operator

import numpy as np
import pytest

import gpudml as dml
from gpudml.errors import UnsupportedError
from gpudml.ops.precision import pow_ulps
from gpudml.testing import assert_within

BINARY = {"+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.truediv,
          "//": operator.floordiv, "%": operator.mod, "**": operator.pow, "&": operator.and_,
          "|": operator.or_, "^": operator.xor, "<<": operator.lshift, ">>": operator.rshift,
          "<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge}
UFUNC = {"+": np.add, "-": np.subtract, "*": np.multiply, "/": np.true_divide, "//": np.floor_divide,
         "%": np.remainder, "**": np.power, "&": np.bitwise_and, "|": np.bitwise_or, "^": np.bitwise_xor,
         "<<": np.left_shift, ">>": np.right_shift, "<": np.less, "<=": np.less_equal, ">": np.greater,
         ">=": np.greater_equal}
UNARY = {"-": operator.neg, "+": operator.pos, "abs": abs, "~": operator.invert}

DTYPES = [np.dtype(t.numpy) for t in dml.DataType] + [np.dtype(bool)]
VALUES = {"f": [-7.5, -0.5, 2.0, 9.25], "i": [-7, -2, 3, 9], "u": [1, 2, 7, 200], "b": [True, False, True, True]}
WEAK = [True, 3, -3, 2.5]
STRONG = [np.bool_(True), np.int8(3), np.uint8(3), np.int16(-3), np.int32(3), np.int64(3), np.uint64(3),
          np.float16(1.5), np.float32(2.5), np.float64(2.5), np.array([1, 2, 3, 4], np.int8),
          np.array([5, 6, 7, 8], np.uint16), np.array([1, -2, 3, -4], np.int64),
          np.array([0.5, 1.5, -2.5, 3.0], np.float32)]


def _host(dtype: np.dtype, positive: bool = False) -> np.ndarray:
    values = VALUES[dtype.kind]
    return np.abs(np.array(values, dtype)) if positive and dtype.kind in "if" else np.array(values, dtype)


def _lacks(symbol: str, loop: tuple) -> str | None:
    """Where DirectML has no operator for numpy's dtypes, what the error says: FLOAT64
    arithmetic and comparisons, POW of 64-bit integers, int64 compared with uint64."""
    if loop[0] != loop[1]:
        return "DirectML's operators take operands of one type"
    if loop[0] == np.float64 or (symbol == "**" and loop[0].kind in "iu" and loop[0].itemsize == 8):
        return f"numpy's result type is {loop[0]}"
    return None


def _loop(symbol: str, a, b) -> tuple:
    kind = [type(x) if type(x) in (int, float) else np.asarray(x).dtype for x in (a, b)]
    return UFUNC[symbol].resolve_dtypes((*kind, None))[:2]


def _tolerance(symbol: str, want: np.ndarray, a, b):
    if want.dtype.kind != "f":
        return None
    ulps = 4.0
    if symbol == "**":
        ulps = np.maximum(pow_ulps(np.asarray(a, np.float64), np.asarray(b, np.float64)), 4.0)
    with np.errstate(invalid="ignore"):  # (NaN and infinities: assert_within matches them as they are)
        return ulps * np.spacing(np.abs(want).astype(want.dtype)).astype(np.float64)


def check(device, symbol: str, tensor_np: np.ndarray, other, reflected: bool) -> None:
    """`tensor op other` (or `other op tensor`) on a Tensor of `tensor_np` against numpy."""
    fn = BINARY[symbol]
    a, b = (other, tensor_np) if reflected else (tensor_np, other)
    t = device.tensor(tensor_np)
    ta, tb = (other, t) if reflected else (t, other)
    case = f"{a!r} {symbol} {b!r}"
    with np.errstate(all="ignore"):
        try:
            want = np.asarray(fn(a, b))
        except (TypeError, OverflowError, ValueError) as exc:
            with pytest.raises(type(exc)):
                fn(ta, tb)
            return
    lacks = _lacks(symbol, _loop(symbol, a, b))
    if lacks:
        with pytest.raises(UnsupportedError, match=lacks):
            fn(ta, tb)
        return
    got = fn(ta, tb)
    assert isinstance(got, dml.Tensor), case
    array = np.asarray(got)
    assert array.dtype == want.dtype, (case, array.dtype, want.dtype)
    assert_within(array, want, _tolerance(symbol, want, a, b), case)


def _operands(dtype: np.dtype, symbol: str, reflected: bool) -> np.ndarray:
    # (`x ** t` with a negative integer exponent in a Tensor is DirectML's, not numpy's
    # ValueError: tested apart; the reflected power takes the tensor's magnitudes)
    return _host(dtype, positive=symbol == "**" and reflected)


@pytest.mark.parametrize("symbol", list(BINARY))
def test_every_operator_every_dtype(device, symbol):
    """Python scalars (weak) and a numpy array of the tensor's own dtype, both sides."""
    for dtype in DTYPES:
        for reflected in (False, True):
            tensor_np = _operands(dtype, symbol, reflected)
            same = np.array(VALUES[dtype.kind][::-1], dtype)
            for other in (*WEAK, same):
                check(device, symbol, tensor_np, other, reflected)


@pytest.mark.parametrize("symbol", ["+", "<", "//"])
def test_strong_operands_promote(device, symbol):
    """numpy scalars and arrays of every kind are strong: int32 + np.int64 array is int64,
    int32 + np.float32 is float64 (unsupported), uint8 + np.int8 is int16."""
    for dtype in DTYPES:
        for reflected in (False, True):
            for other in STRONG:
                check(device, symbol, _operands(dtype, symbol, reflected), other, reflected)


@pytest.mark.exhaustive
@pytest.mark.parametrize("symbol", list(BINARY))
def test_every_operator_every_dtype_every_kind(device, symbol):
    for dtype in DTYPES:
        for reflected in (False, True):
            for other in (*WEAK, *STRONG):
                check(device, symbol, _operands(dtype, symbol, reflected), other, reflected)


@pytest.mark.parametrize("symbol", list(UNARY))
def test_unary_operators_every_dtype(device, symbol):
    fn = UNARY[symbol]
    for dtype in DTYPES:
        x = _host(dtype)
        t = device.tensor(x)
        try:
            want = fn(x)
        except TypeError:
            with pytest.raises(TypeError):
                fn(t)
            continue
        if dtype == np.float64 and symbol != "+":  # (unary + is IDENTITY, which takes FLOAT64)
            with pytest.raises(UnsupportedError, match="numpy's result type is float64"):
                fn(t)
            continue
        got = np.asarray(fn(t))
        assert got.dtype == want.dtype, (symbol, dtype)
        np.testing.assert_array_equal(got, want)


# ------------------------------------------------------------------ the defects of issue 42
def test_weak_python_scalars(device):
    i32 = device.tensor(np.array([1, 2, 3, 4], np.int32))
    f32 = device.tensor(np.array([1, 2, 3, 4], np.float32))
    assert np.asarray(f32 + 1.5).dtype == np.float32 and np.asarray(f32 + 1.5).tolist() == [2.5, 3.5, 4.5, 5.5]
    for bad in (lambda: i32 + 1.5, lambda: i32 / 2, lambda: 1.5 * i32):
        with pytest.raises(UnsupportedError, match=r"numpy's result type is float64 .*dml.cast\(x, np.float32\)"):
            bad()
    with pytest.raises(OverflowError, match="Python integer 300 out of bounds for int8"):
        device.tensor(np.zeros(4, np.int8)) + 300
    assert np.asarray(dml.cast(i32, np.float32) / 2).tolist() == [0.5, 1.0, 1.5, 2.0]  # the way out


def test_an_adapter_without_the_result_type(device, monkeypatch):
    """An adapter without FLOAT64 (none of this machine's lacks it: pretended) names it."""
    i8 = device.tensor(np.array([1, 2, 3, 4], np.int8))
    monkeypatch.setattr(device, "supports_data_type", lambda dt: dt != dml.DataType.INT64)
    with pytest.raises(UnsupportedError, match=r"numpy's result type is int64 \(INT64\), which this adapter "
                                               r"\(.*\) does not support"):
        i8 + np.int64(1)


def test_reflected_and_ndarray_first_stay_tensors(device):
    x = np.array([1, -2, 3, -4], np.int32)
    t = device.tensor(x)
    for got, want in ((2 * t, 2 * x), (1 - t, 1 - x), (x + t, x + x), (np.int64(5) - t, np.int64(5) - x),
                      (np.array([7, 7, 7, 7], np.int16) // t, np.int16(7) // x), (x < t, x < x), (3 % t, 3 % x)):
        assert isinstance(got, dml.Tensor)
        array = np.asarray(got)
        assert array.dtype == want.dtype and array.tolist() == want.tolist()


def test_floor_division_and_remainder_are_numpys(device):
    """Floor, not truncation; the divisor's sign; integer division by zero gives 0 (numpy
    warns and gives 0); float // and % with numpy's edge cases (1 // 0.1 is 9)."""
    a = np.array([7, -7, 7, -7], np.int32)
    b = np.array([2, 2, -2, 0], np.int32)
    ta, tb = device.tensor(a), device.tensor(b)
    with np.errstate(all="ignore"):
        assert np.asarray(ta // tb).tolist() == (a // b).tolist() == [3, -4, -4, 0]
        assert np.asarray(ta % tb).tolist() == (a % b).tolist() == [1, 1, -1, 0]
        assert np.asarray(ta // 0).tolist() == [0, 0, 0, 0] and np.asarray(ta % 0).tolist() == [0, 0, 0, 0]
        f = np.array([1.0, -7.5, 7.5, 1.0], np.float32)
        g = np.array([0.1, 2.0, -2.0, 0.0], np.float32)
        got = np.asarray(device.tensor(f) // device.tensor(g))
        np.testing.assert_array_equal(got, f // g)  # [9, -4, -4, inf]
        np.testing.assert_array_equal(np.asarray(device.tensor(f) % device.tensor(g))[:3], (f % g)[:3])
        assert np.isnan(np.asarray(device.tensor(f) % device.tensor(g))[3])
    edge = device.tensor(np.array([-128, -128, 127, 5], np.int8))
    with np.errstate(all="ignore"):
        want = np.array([-128, -128, 127, 5], np.int8) // np.int8(-1)
    assert np.asarray(edge // np.int8(-1)).tolist() == want.tolist()


def test_shifts_of_signed_integers(device):
    x = np.array([-8, -1, 5, 64], np.int8)
    n = np.array([1, 9, -1, 2], np.int8)  # a shift past the width, a negative shift
    tx, tn = device.tensor(x), device.tensor(n)
    assert np.asarray(tx >> tn).tolist() == (x >> n).tolist() == [-4, -1, 0, 16]
    assert np.asarray(tx << tn).tolist() == (x << n).tolist()
    assert np.asarray(tx >> 1).tolist() == (x >> 1).tolist()


def test_comparisons_return_bool_and_are_exact_beyond_the_type(device):
    u = np.array([0, 1, 200, 255], np.uint8)
    t = device.tensor(u)
    for value in (-1, 300, 2**70, -(2**70), 255, 0):
        for fn in (operator.lt, operator.le, operator.gt, operator.ge):
            got = fn(t, value)
            assert got.dtype == np.bool_ and got.data_type == dml.DataType.UINT8 and got.is_bool
            assert np.asarray(got).tolist() == fn(u, value).tolist(), (fn, value)
            assert np.asarray(fn(value, t)).tolist() == fn(value, u).tolist(), (fn, value)
        for uf in (np.equal, np.not_equal):
            assert np.asarray(uf(t, value)).tolist() == uf(u, value).tolist(), (uf, value)
    assert (t == t) is True and (t != t) is False  # == and != stay identity


def test_bool_tensors(device):
    m = np.array([True, False, True, False])
    n = np.array([True, True, False, False])
    tm, tn = device.tensor(m), device.tensor(n)
    assert tm.is_bool and tm.dtype == np.bool_ and tm.data_type == dml.DataType.UINT8
    assert np.asarray(tm).dtype == np.bool_ and "dtype=bool, data_type=UINT8" in repr(tm)
    for got, want in ((tm & tn, m & n), (tm | tn, m | n), (tm ^ tn, m ^ n), (~tm, ~m), (tm + tn, m + n),
                      (tm * tn, m * n), (tm + 1, m + 1), (np.logical_xor(tm, tn), np.logical_xor(m, n)),
                      (tm.copy(), m), (np.logical_not(device.tensor(np.float32([0, 1, -2, 0]))),
                                       np.logical_not(np.float32([0, 1, -2, 0])))):
        array = np.asarray(got)
        assert array.dtype == want.dtype and array.tolist() == want.tolist()
    with pytest.raises(TypeError, match="boolean subtract"):
        tm - tn  # numpy's own TypeError
    with pytest.raises(TypeError, match="boolean negative"):
        operator.neg(tm)


def test_ufuncs_on_tensors(device):
    x = np.array([0.25, -1.5, 2.0, np.nan], np.float32)
    t = device.tensor(x)
    for uf in (np.exp, np.sqrt, np.abs, np.negative, np.floor, np.ceil, np.trunc, np.rint, np.tanh, np.sign,
               np.isnan, np.isinf, np.isfinite, np.square):
        got = uf(t)
        assert isinstance(got, dml.Tensor), uf
        with np.errstate(all="ignore"):
            want = uf(x)
        tolerance = None if want.dtype == np.bool_ else 4 * np.spacing(np.abs(want))
        assert_within(np.asarray(got), want, tolerance, uf.__name__)
    for uf, ulps in ((np.maximum, 0), (np.minimum, 0), (np.fmax, 0), (np.fmin, 0), (np.add, 0.5), (np.less, None),
                     (np.arctan2, 4096)):  # (ATAN_YX: WGSL's atan2, 4096 ULP)
        got = uf(t, np.float32(1.0))
        want = uf(x, np.float32(1.0))
        assert isinstance(got, dml.Tensor)
        assert_within(np.asarray(got), want, None if ulps is None else ulps * np.spacing(np.abs(want)), uf.__name__)
    assert np.isnan(np.asarray(np.maximum(t, 0))[3])  # np.maximum propagates NaN; np.fmax does not
    assert np.asarray(np.fmax(t, np.float32(0)))[3] == 0
    assert float(np.sum(device.tensor(x[:3]))) == pytest.approx(0.75)  # np.add.reduce: read back, as before
    with pytest.raises(TypeError, match="np.log2 on a gpudml Tensor: gpudml has no DirectML operator"):
        np.log2(t)
    with pytest.raises(TypeError, match="out= cannot name a Tensor"):
        np.add(t, t, out=t)
    i8 = device.tensor(np.array([1, 2, 3, 4], np.int8))
    got = np.exp(i8)  # numpy computes exp of int8 in float16
    assert got.dtype == np.float16
    assert_within(np.asarray(got), np.exp(np.int8([1, 2, 3, 4])), np.spacing(np.float16([3, 8, 21, 55])) * 2)


def test_operators_and_ufuncs_on_expressions(device):
    """`x_np + expr` is an Expression (was an object ndarray of Expressions); the graph
    compiles and runs with numpy's promotion and bool outputs."""
    g = dml.Graph(device)
    e = g.input([4], np.int16, name="x")
    host = np.array([1, 2, 3, 4], np.int32)
    outputs = [host + e, np.int16(3) // e, e < 2, np.maximum(e, 0), -e, np.negative(e) & 6, ~(e > 0),
               (e > 0) + 1]
    assert all(isinstance(o, dml.graph.Expression) for o in outputs)
    assert outputs[0].dtype == dml.DataType.INT32 and outputs[2].is_bool and outputs[2].dtype == dml.DataType.UINT8
    x = np.array([-3, 1, 2, 7], np.int16)
    got = g.compile(outputs)({"x": x})
    wants = [host + x, np.int16(3) // x, x < 2, np.maximum(x, 0), -x, np.negative(x) & 6, ~(x > 0), (x > 0) + 1]
    for array, want in zip(got, wants):
        assert array.dtype == want.dtype and array.tolist() == want.tolist()
    (t,) = g.compile([outputs[2]])({"x": x}, readback=False)
    assert t.is_bool and t.dtype == np.bool_
    with pytest.raises(UnsupportedError, match="numpy's result type is float64"):
        e / 2
    with pytest.raises(TypeError, match=r"np.add.reduce on a gpudml Expression"):
        np.add.reduce(e)


def test_matmul_promotes(device):
    a = np.array([[1, 2], [3, 4]], np.int8)
    b = np.array([[0.5, 1.0], [-1.0, 2.0]], np.float32)
    got = device.tensor(a) @ b  # int8 @ float32: numpy computes in float32
    assert isinstance(got, dml.Tensor) and got.dtype == np.float32
    assert_within(np.asarray(got), a @ b, 4 * np.spacing(np.abs(a @ b).astype(np.float32)))
    with pytest.raises(UnsupportedError, match="DirectML's Gemm does not take INT8"):
        device.tensor(a) @ a


def test_integer_power(device):
    x = device.tensor(np.array([-7, -2, 3, 9], np.int32))
    with pytest.raises(ValueError, match="Integers to negative integer powers are not allowed"):
        x ** -1  # numpy's own ValueError, for a host exponent
    with pytest.raises(UnsupportedError, match="ElementWisePow does not take INT64"):
        device.tensor(np.array([1, 2, 3, 4], np.int64)) ** 2
