"""Feels like numpy and PyTorch (issue 34): Tensors read back through numpy's protocol and
look like arrays (shape, dtype, len, repr); the reducing forms take keepdims=False (a
re-description, no copy) on numpy arrays, Tensors and Expressions; np.pad's mode names;
enums, compiled operators and graph steps print readably; Python's operators call the
element-wise forms once those are registered (the seam, tested with a stand-in)."""

from __future__ import annotations

import json

import numpy as np
import pytest

import gpudml as dml
from gpudml import functional, python_operators
from gpudml.errors import InvalidArgumentError
from gpudml.ops import gemm as gemm_op
from gpudml.testing import assert_within

RNG = np.random.default_rng(34)


# ------------------------------------------------------------------ Tensor interop
def test_numpy_reads_a_tensor_back(device):
    x = RNG.random((3, 5), dtype=np.float32)
    t = device.tensor(x)
    got = np.asarray(t)
    assert type(got) is np.ndarray and got.dtype == np.float32 and np.array_equal(got, x)
    as64 = np.asarray(t, dtype=np.float64)
    assert as64.dtype == np.float64 and np.array_equal(as64, x.astype(np.float64))
    assert np.array_equal(np.array(t), x) and np.array(t) is not np.array(t)
    with pytest.raises(ValueError, match="live on the device"):
        np.asarray(t, copy=False)  # numpy 2 asks for no copy: a readback always is one
    assert float(np.sum(t)) == pytest.approx(float(x.sum()), rel=1e-5)  # numpy functions read it back


def test_a_tensor_looks_like_an_array(device):
    t = device.tensor(np.zeros((4, 2, 3), np.int16))
    assert t.shape == (4, 2, 3) and isinstance(t.shape, tuple)
    assert t.dtype == np.dtype(np.int16) and isinstance(t.dtype, np.dtype)
    assert t.data_type is dml.DataType.INT16  # the DirectML type, as before
    assert len(t) == 4 and t.ndim == 3 and t.size == 24
    text = repr(t)
    assert text.startswith("Tensor(shape=(4, 2, 3), dtype=int16, data_type=INT16, device=")
    assert device.adapter_name in text
    strided = device.empty(dml.TensorDesc(dml.DataType.FLOAT32, [2, 2], [1, 2]))
    assert "strides=[1, 2]" in repr(strided)
    strided.free()
    assert repr(strided).endswith(", freed)")


# ------------------------------------------------------------------ keepdims=False
def test_keepdims_false_on_numpy(device):
    x = RNG.random((3, 4, 5), dtype=np.float32)
    got = dml.reduce(x, "sum", axes=[1], keepdims=False, device=device)
    assert got.shape == (3, 5) and np.allclose(got, x.sum(axis=1), rtol=1e-5)
    assert got.base is not None  # a view of the kept-rank result: no copy
    assert dml.reduce(x, "max", keepdims=False, device=device).shape == ()  # np.max(x) is 0-d too
    assert dml.reduce(x, "max", axes=[-1], device=device).shape == (3, 4, 1)  # DirectML's default stays
    arg = dml.argmax(x, axes=[0, 2], keepdims=False, device=device)
    assert arg.shape == (4,) and arg.dtype == np.int64
    assert np.array_equal(arg, x.transpose(1, 0, 2).reshape(4, -1).argmax(axis=1))
    assert np.array_equal(dml.argmin(x, axes=2, keepdims=False, device=device), x.argmin(axis=2))
    # an axis of size 1 that is not reduced stays, as in numpy
    y = RNG.random((1, 6), dtype=np.float32)
    assert dml.reduce(y, "sum", axes=[1], keepdims=False, device=device).shape == (1,)


def test_keepdims_false_on_tensors_is_a_redescription(device):
    x = RNG.random((3, 4, 5), dtype=np.float32)
    t = device.tensor(x)
    with device.profile() as prof:
        got = dml.reduce(t, "sum", axes=[0, 2], keepdims=False)
        device.synchronize()
    assert prof.rows and {row["operator"] for row in prof.rows} == {"Reduce"}  # no copy, no kernel of its own
    assert isinstance(got, dml.Tensor) and got.shape == (4,) and got.desc.is_packed
    assert np.allclose(got.numpy(), x.sum(axis=(0, 2)), rtol=1e-5)
    whole = dml.argmax(t, keepdims=False)
    assert whole.shape == (1,) and whole.numpy()[0] == x.argmax()  # DirectML tensors keep one axis
    follow = dml.pad(got, [1], [1], mode="edge")  # the re-described Tensor is an input like any other
    assert np.allclose(follow.numpy(), np.pad(x.sum(axis=(0, 2)), 1, mode="edge"), rtol=1e-5)


@pytest.mark.parametrize("fuse", [True, False])
def test_keepdims_false_on_expressions(device, fuse):
    x = RNG.random((3, 4, 5), dtype=np.float32)
    g = dml.Graph(device)
    e = g.input([3, 4, 5], name="x")
    summed = dml.reduce(dml.pad(e, [0, 1, 0], [0, 1, 0], mode="reflect"), "sum", axes=[1], keepdims=False)
    assert summed.shape == [3, 5] and summed.dtype is dml.DataType.FLOAT32
    padded = dml.pad(summed, [1, 0], [0, 1], mode="edge")  # recorded against the new sizes
    peak = dml.reduce(summed, "max", keepdims=False)
    assert peak.shape == [1]
    op = g.compile([summed, padded, peak, summed], fuse=fuse)
    out = op({"x": x})
    want = np.pad(x, [(0, 0), (1, 1), (0, 0)], mode="reflect").sum(axis=1)
    assert [a.shape for a in out] == [(3, 5), (4, 6), (1,), (3, 5)]
    assert np.allclose(out[0], want, rtol=1e-5) and np.allclose(out[3], want, rtol=1e-5)
    assert np.allclose(out[1], np.pad(want, [(1, 0), (0, 1)], mode="edge"), rtol=1e-5)
    assert np.allclose(out[2], want.max(), rtol=1e-5)
    tensors = op({"x": x}, readback=False)
    assert tensors[0].shape == (3, 5) and tensors[2].shape == (1,)


def test_keepdims_is_checked_before_any_work(device):
    x = np.ones((2, 2), np.float32)
    with pytest.raises(InvalidArgumentError, match="reduce: keepdims must be True or False, got 'no'"):
        dml.reduce(x, "sum", keepdims="no", device=device)
    g = dml.Graph(device)
    e = g.input([2, 2])
    summed = dml.reduce(e, "sum", axes=[0])
    dml.slice(summed, [0, 0], [1, 2])
    with pytest.raises(InvalidArgumentError, match="read by a later node"):
        g.redescribe(summed, [2])
    with pytest.raises(InvalidArgumentError, match="only a node's packed output"):
        g.redescribe(e, [4])


# ------------------------------------------------------------------ numpy's pad mode names
@pytest.mark.parametrize("mode", ["reflect", "edge", "symmetric", "wrap", "constant"])
@pytest.mark.parametrize("width", [(1, 2), (3, 0), (7, 9)])  # 7 and 9 fold more than once over 4
def test_np_pad_mode_names_mean_what_np_pad_does(device, mode, width):
    x = RNG.integers(-50, 50, size=(4,)).astype(np.int32)
    got = dml.pad(x, [width[0]], [width[1]], mode=mode, device=device)
    np.testing.assert_array_equal(got, np.pad(x, [width], mode=mode))


def test_reflect_is_reflection():
    assert dml.PaddingMode.coerce("reflect") is dml.PaddingMode.REFLECTION
    assert dml.PaddingMode.coerce("REFLECT") is dml.PaddingMode.REFLECTION
    with pytest.raises(InvalidArgumentError,
                       match=r"'mean' is not a PaddingMode \(one of .*WRAP\); 'reflect' \(numpy's name\) is REF"):
        dml.PaddingMode.coerce("mean", "pad: mode")
    with pytest.raises(InvalidArgumentError, match="'reflect' is not a ReduceFunction"):
        dml.ReduceFunction.coerce("reflect")  # the alias is Padding's alone


# ------------------------------------------------------------------ readable reprs
def test_enums_print_as_their_names():
    dt = dml.DataType.FLOAT32
    assert repr(dt) == str(dt) == f"{dt}" == "DataType.FLOAT32"
    assert str(dml.FeatureLevel.FL_6_4) == "FeatureLevel.FL_6_4"
    assert f"{dml.FeatureLevel.FL_6_4:#x}" == "0x6400" and f"{dt:d}" == "1" and int(dt) == 1  # numbers on request
    assert repr(dml.ReduceFunction.SUM) == "ReduceFunction.SUM" and str(dml.PaddingMode.WRAP) == "PaddingMode.WRAP"
    assert str(dml.AxisDirection.DECREASING) == "AxisDirection.DECREASING"
    assert json.dumps([dt]) == "[1]" and dt == 1  # still DirectML's values
    g = dml.Graph()
    assert str(g.input([2], dtype=np.int8).dtype) == "DataType.INT8"


def test_graph_steps_name_their_kernels(device):
    g = dml.Graph(device)
    e = g.input([4, 4], name="x")
    rows = dml.reduce(dml.pad(e, [1, 1], [1, 1], mode="edge"), "sum", axes=[1])
    op = g.compile([rows, dml.slice(e, [0, 0], [2, 2])])
    first, second = op.steps
    assert first.name == "Fused(Padding>Reduce)" and second.name == "Slice1"
    text = repr(op.steps)
    assert "object at 0x" not in text
    assert text.startswith("[Step(Fused(Padding>Reduce), strategy ") and "1 dispatch: (%0) -> (%2))" in text
    assert repr(first.compiled).startswith("CompiledOperator(Fused(Padding>Reduce), strategy ")


# ------------------------------------------------------------------ Python operators: the seam
def test_an_operator_not_registered_yet_names_its_form(device, monkeypatch):
    """A form the registry lacks (here `add`, taken out) leaves its operators a TypeError
    naming it."""
    monkeypatch.setattr(functional, "FUNCTIONS", {k: v for k, v in functional.FUNCTIONS.items() if k != "add"})
    t = device.tensor(np.ones((2, 3), np.float32))
    e = dml.Graph(device).input([2, 3])
    for value in (t, e):
        with pytest.raises(TypeError, match=r"\+ on a (Tensor|Expression) is gpudml.add, which is not implemented"):
            value + 1
        with pytest.raises(TypeError, match="gpudml.add"):
            1 + value
    with pytest.raises(TypeError, match="gpudml.add"):
        np.ones(3, np.float32) + t  # numpy leaves it to the Tensor: no silent readback
    with pytest.raises(TypeError, match="unsupported operand"):
        t + "a"  # not a number: Python's own error
    assert t == t and t != device.tensor(np.ones((2, 3), np.float32)) and {e: 1}[e] == 1  # identity, hashable


def test_operators_call_the_registered_forms(device, monkeypatch):
    """Each Python operator is numpy's ufunc of that operator, computed by the registered
    form looked up when it runs (here `add` and `subtract`, wrapped to record their calls):
    reflected ones with the operands swapped, numbers as weak scalars of the tensor's dtype
    (uploaded beside a Tensor, so a Tensor comes back)."""
    calls = []

    def recording(name):
        real = functional.FUNCTIONS[name]
        return lambda *args, **kw: calls.append((name, args)) or real(*args, **kw)

    monkeypatch.setattr(functional, "FUNCTIONS", {**functional.FUNCTIONS, "add": recording("add"),
                                                  "subtract": recording("subtract")})
    assert python_operators.available()["__add__"] == "add" and python_operators.available()["__abs__"] == "abs"
    t = device.tensor(np.ones((2, 3), np.float16))
    assert isinstance(t + 1, dml.Tensor) and isinstance(2 - t, dml.Tensor)
    (name, (a, b)), (name2, (c, d)) = calls
    assert name == "add" and a is t and b.dtype == np.float16 and b.numpy().tolist() == [1.0]
    assert name2 == "subtract" and d is t and c.dtype == np.float16 and c.numpy().tolist() == [2.0]
    for method, (ufunc, reflected) in python_operators.BINARY.items():
        forward = method == "__rshift__" or not method.startswith("__r")  # (`>>` is __rshift__)
        assert python_operators.UFUNCS[ufunc].ufunc is ufunc and reflected != forward, method
        assert getattr(dml.Tensor, method).__name__ == method
    assert python_operators.BINARY["__floordiv__"] == (np.floor_divide, False)
    assert python_operators.BINARY["__rmod__"] == (np.remainder, True)
    assert python_operators.UNARY == {"__neg__": np.negative, "__pos__": np.positive, "__abs__": np.absolute,
                                      "__invert__": np.invert}


def test_every_mapped_form_follows_the_api_naming_rule():
    """The forms named are registered functional forms (API.md's names: ELEMENT_WISE_<X>
    lowercased, GEMM as gemm)."""
    forms = {f for u in python_operators.UFUNCS.values() for f in u.forms.values()}
    assert forms <= set(functional.FUNCTIONS), forms - set(functional.FUNCTIONS)
    assert {"add", "add0", "subtract", "multiply", "divide", "modulus_floor", "pow", "gemm", "logical_less_than",
            "bit_and", "bit_shift_left", "negate", "abs"} <= forms
    assert "__eq__" not in python_operators.BINARY and "__ne__" not in python_operators.BINARY


def test_operators_run_the_element_wise_forms(device):
    """With the element-wise operators registered, Python's operators compute on the GPU:
    float and integer Tensors (`+` is ADD1 for floats, ADD for integers), numbers as weak
    scalars, comparisons as bool Tensors (UINT8 inside), and Expressions in a graph."""
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    t = device.tensor(x)
    np.testing.assert_array_equal(np.asarray(t + 1), x + 1)
    np.testing.assert_array_equal(np.asarray(2 - t), 2 - x)
    np.testing.assert_array_equal(np.asarray(-t * t), -x * x)
    np.testing.assert_array_equal(np.asarray(abs(t - 3)), np.abs(x - 3))
    assert np.asarray(t < 3).dtype == np.bool_ and np.asarray(t < 3).tolist() == (x < 3).tolist()
    i = device.tensor(np.array([2**31 - 1, -5, 7], np.int32))
    np.testing.assert_array_equal(np.asarray(i + 1), np.array([-2**31, -4, 8], np.int32))  # wraps
    g = dml.Graph(device)
    e = g.input([2, 3], name="x")
    (y,) = g.compile([dml.reduce(e * 2 + 1, "sum", [1])])({"x": x})
    np.testing.assert_array_equal(y, (x * 2 + 1).sum(axis=1, keepdims=True))


def test_matmul_is_gemm(device):
    """`a @ b` on Tensors (and Expressions) is dml.gemm(a, b): numpy's matmul for matrices
    and batches of them (the batch axes broadcast), float32 and float16, within gemm's
    documented precision; a numpy array on the left defers to the Tensor (and
    gets numpy back, as every form gives for a first numpy argument); vectors (1-D),
    which gemm does not take, are an InvalidArgumentError naming the DimensionCount."""
    rng = np.random.default_rng(0)
    for sa, sb, dtype in [((3, 4), (4, 5), np.float32), ((2, 3, 4), (2, 4, 5), np.float32),
                          ((2, 1, 3, 4), (5, 4, 6), np.float32), ((4, 7), (3, 7, 2), np.float16)]:
        a, b = rng.uniform(-1, 1, sa).astype(dtype), rng.uniform(-1, 1, sb).astype(dtype)
        want = np.matmul(a, b)
        for got in (device.tensor(a) @ device.tensor(b), a @ device.tensor(b), device.tensor(a) @ b):
            assert isinstance(got, (dml.Tensor, np.ndarray))
            got = np.asarray(got)  # (the first operand decides: a numpy array on the left gives numpy)
            assert got.shape == want.shape and got.dtype == want.dtype
            assert_within(got, np.matmul(a.astype(np.float64), b).astype(dtype),
                          gemm_op.tolerance(want, [a, b], {}), f"{sa} @ {sb}")
    g = dml.Graph(device)
    x, w = g.input([3, 4], name="x"), g.input([4, 2], name="w")
    a, b = rng.uniform(-1, 1, (3, 4)).astype(np.float32), rng.uniform(-1, 1, (4, 2)).astype(np.float32)
    (y,) = g.compile([x @ w])({"x": a, "w": b})
    assert_within(y, (a.astype(np.float64) @ b).astype(np.float32), gemm_op.tolerance(y, [a, b], {}), "graph")
    with pytest.raises(dml.InvalidArgumentError, match="Gemm: DimensionCount 1 is not supported"):
        device.tensor(np.ones(3, np.float32)) @ device.tensor(np.ones(3, np.float32))
