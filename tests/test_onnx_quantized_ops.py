"""onnxruntime's element-wise quantized contrib ops (QLinearAdd, QLinearMul, QLinearSigmoid,
QLinearConcat: gpudml/onnx/quantized.py) through gpudml's sessions, in hand-built models:
against the composition in numpy (dequantize in float32, the float op, quantize in ONNX's
float32 arithmetic), and against onnxruntime's CPU provider where it is installed (within one
quantization step: its kernels round their own way, e.g. QLinearAdd's scale ratios). Bad
scales refused at construction, naming the node and the rule. The fixture `device` runs each test on both software
adapters and both adapter classes."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import helper

import gpudml.onnx as gonnx
from gpudml import reference
from gpudml.errors import UnsupportedError

MS = "com.microsoft"


def _model(op, inputs: dict, out_type, attrs=None, initializers=()):
    """One com.microsoft node `op` reading `inputs` ({name: array}; None: an omitted optional
    input), writing "y" of `out_type` (a numpy dtype)."""
    names = [name if value is not None else "" for name, value in inputs.items()]
    while names and not names[-1]:
        names.pop()
    node = helper.make_node(op, names, ["y"], domain=MS, **(attrs or {}))
    ins = [helper.make_tensor_value_info(name, helper.np_dtype_to_tensor_dtype(v.dtype), list(v.shape))
           for name, v in inputs.items() if v is not None and name not in initializers]
    inits = [onnx.numpy_helper.from_array(inputs[name], name) for name in initializers]
    out = helper.make_tensor_value_info("y", helper.np_dtype_to_tensor_dtype(np.dtype(out_type)), None)
    graph = helper.make_graph([node], op, ins, [out], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid(MS, 1)],
                             ir_version=9)


def _feeds(inputs: dict, initializers=()) -> dict:
    return {k: v for k, v in inputs.items() if v is not None and k not in initializers}


def _dq(x, scale, zero):
    z = 0 if zero is None else zero.astype(np.int32)
    return ((x.astype(np.int32) - z).astype(np.float32) * np.float32(scale)).astype(np.float32)


def _q(y, scale, zero, dtype):
    return reference.quantize(y.astype(np.float32), np.asarray(scale, np.float32).reshape(1),
                              None if zero is None else np.asarray(zero).reshape(1), dtype=np.dtype(dtype).name)


def _quantized(rng, dtype, shape):
    info = np.iinfo(dtype)
    return rng.integers(int(info.min), int(info.max) + 1, shape).astype(dtype)


def _params(rng, dtype, zero=True):
    """A scale (float32 scalar) and a zero point (None, or a scalar of dtype)."""
    info = np.iinfo(dtype)
    scale = np.array(rng.choice([0.02, 0.1, 0.0625, 0.37]), np.float32)
    return scale, (np.array(rng.integers(int(info.min) // 2, int(info.max) // 2), dtype) if zero else None)


def _run(device, model, feeds):
    return gonnx.InferenceSession(model, device=device).run(None, feeds)[0]


def _against_onnxruntime(model, feeds, got):
    """Within one step of onnxruntime's CPU provider (a float output: 1e-5 relative), where it
    is installed."""
    try:
        import onnxruntime
    except ImportError:
        return
    want = onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(
        None, feeds)[0]
    assert got.dtype == want.dtype and got.shape == want.shape
    if want.dtype.kind == "f":
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    else:
        assert np.abs(got.astype(np.int32) - want.astype(np.int32)).max() <= 1


@pytest.mark.parametrize("dtype", [np.uint8, np.int8])
@pytest.mark.parametrize("zeros", [True, False])
def test_qlinear_mul_broadcasts_and_matches_the_composition(device, dtype, zeros):
    rng = np.random.default_rng(1)
    a, b = _quantized(rng, dtype, (2, 3, 4)), _quantized(rng, dtype, (3, 1))
    (sa, za), (sb, zb), (sc, zc) = (_params(rng, dtype, zeros) for _ in range(3))
    inputs = {"a": a, "a_scale": sa, "a_zero_point": za, "b": b, "b_scale": sb, "b_zero_point": zb,
              "c_scale": sc, "c_zero_point": zc}
    model = _model("QLinearMul", inputs, dtype, initializers=[k for k in inputs if "_" in k and inputs[k] is not None])
    feeds = _feeds(inputs, [k for k in inputs if "_" in k])
    got = _run(device, model, feeds)
    want = _q(_dq(a, sa, za) * _dq(b, sb, zb), sc, zc, dtype)
    assert got.dtype == np.dtype(dtype) and got.shape == (2, 3, 4)
    np.testing.assert_array_equal(got, want)
    if zeros:  # (onnxruntime's type inference refuses QLinearMul with an input's zero point left out)
        _against_onnxruntime(model, feeds, got)


@pytest.mark.parametrize("dtype", [np.uint8, np.int8])
def test_qlinear_sigmoid_within_one_step_of_the_float_sigmoid(device, dtype):
    rng = np.random.default_rng(2)
    x = np.arange(np.iinfo(dtype).min, np.iinfo(dtype).max + 1).astype(dtype).reshape(4, 64)  # every value
    (sx, zx), (sy, zy) = _params(rng, dtype), (np.array(1 / 256, np.float32), np.array(np.iinfo(dtype).min, dtype))
    inputs = {"x": x, "x_scale": sx, "x_zero_point": zx, "y_scale": sy, "y_zero_point": zy}
    model = _model("QLinearSigmoid", inputs, dtype, initializers=["x_scale", "x_zero_point", "y_scale", "y_zero_point"])
    feeds = {"x": x}
    got = _run(device, model, feeds)
    exact = 1 / (1 + np.exp(-_dq(x, sx, zx).astype(np.float64)))
    want = _q(exact.astype(np.float32), sy, zy, dtype)
    assert got.dtype == np.dtype(dtype)
    assert np.abs(got.astype(np.int32) - want.astype(np.int32)).max() <= 1  # (sigmoid's float32 precision)
    assert (got == want).mean() > 0.95
    _against_onnxruntime(model, feeds, got)


@pytest.mark.parametrize("dtype", [np.uint8, np.int8])
def test_qlinear_concat_requantizes_each_input(device, dtype):
    rng = np.random.default_rng(3)
    xs = [_quantized(rng, dtype, (2, n, 3)) for n in (1, 4, 2)]
    params = [_params(rng, dtype) for _ in xs]
    sy, zy = _params(rng, dtype)
    inputs = {"y_scale": sy, "y_zero_point": zy}
    for k, (x, (s, z)) in enumerate(zip(xs, params)):
        inputs.update({f"x{k}": x, f"x{k}_scale": s, f"x{k}_zero_point": z})
    model = _model("QLinearConcat", inputs, dtype, attrs={"axis": -2},
                   initializers=[k for k in inputs if "scale" in k or "zero" in k])
    feeds = {f"x{k}": x for k, x in enumerate(xs)}
    got = _run(device, model, feeds)
    want = _q(np.concatenate([_dq(x, s, z) for x, (s, z) in zip(xs, params)], axis=1), sy, zy, dtype)
    np.testing.assert_array_equal(got, want)
    _against_onnxruntime(model, feeds, got)


@pytest.mark.parametrize("dtype", [np.uint8, np.int8])
def test_qlinear_add_is_quantized_linear_add(device, dtype):
    rng = np.random.default_rng(4)
    a, b = _quantized(rng, dtype, (3, 5)), _quantized(rng, dtype, (5,))
    (sa, za), (sb, zb), (sc, zc) = (_params(rng, dtype) for _ in range(3))
    inputs = {"a": a, "a_scale": sa, "a_zero_point": za, "b": b, "b_scale": sb, "b_zero_point": zb,
              "c_scale": sc, "c_zero_point": zc}
    model = _model("QLinearAdd", inputs, dtype)
    got = _run(device, model, inputs)
    one = {k: np.asarray(v).reshape(1) for k, v in inputs.items() if k not in ("a", "b")}
    want = reference.quantized_linear_add(a, one["a_scale"], one["a_zero_point"], b=np.broadcast_to(b, a.shape),
                                          b_scale=one["b_scale"], b_zero_point=one["b_zero_point"],
                                          output_scale=one["c_scale"], output_zero_point=one["c_zero_point"])
    assert got.dtype == np.dtype(dtype) and got.shape == a.shape
    assert np.abs(got.astype(np.int32) - want.astype(np.int32)).max() <= 1  # (its documented fma contraction)
    _against_onnxruntime(model, inputs, got)


@pytest.mark.parametrize("bad", [0.0, -0.5, np.nan])
def test_a_bad_output_scale_is_refused_when_the_session_is_built(device, bad):
    rng = np.random.default_rng(5)
    x = _quantized(rng, np.uint8, (4,))
    inputs = {"x": x, "x_scale": np.array(0.1, np.float32), "x_zero_point": np.array(3, np.uint8),
              "y_scale": np.array(bad, np.float32), "y_zero_point": np.array(0, np.uint8)}
    model = _model("QLinearSigmoid", inputs, np.uint8, initializers=["x_scale", "x_zero_point", "y_scale",
                                                                     "y_zero_point"])
    with pytest.raises(UnsupportedError, match=r"QLinearSigmoid.*quantize: scale: every scale must be positive"):
        gonnx.InferenceSession(model, device=device)  # (the session names the node and gpudml's refusal)


def test_com_microsoft_quantize_linear_per_axis(device):
    """onnxruntime's contrib QuantizeLinear (per tensor or per axis, as ONNX's of opset 13)."""
    rng = np.random.default_rng(6)
    x = (rng.standard_normal((2, 3, 4)) * 10).astype(np.float32)
    inputs = {"x": x, "y_scale": np.array([0.5, 0.25, 2.0], np.float32), "y_zero_point": np.array([0, 5, -3], np.int8)}
    model = _model("QuantizeLinear", inputs, np.int8, attrs={"axis": 1}, initializers=["y_scale", "y_zero_point"])
    got = _run(device, model, {"x": x})
    want = reference.quantize_linear(x, inputs["y_scale"].reshape(1, 3, 1), inputs["y_zero_point"].reshape(1, 3, 1))
    np.testing.assert_array_equal(got, want)
    _against_onnxruntime(model, {"x": x}, got)


@pytest.mark.parametrize("b_type", [np.uint8, np.int8])
@pytest.mark.parametrize("with_bias", [True, False])
def test_dynamic_quantize_matmul(device, b_type, with_bias):
    """com.microsoft DynamicQuantizeMatMul as the provider composes it: A quantized by
    DYNAMIC_QUANTIZE_LINEAR into B's type, then MATRIX_MULTIPLY_INTEGER_TO_FLOAT: against that
    composition in numpy (float32 rounding of the products: 1e-5 relative), and against
    onnxruntime's CPU provider for UINT8 B (which quantizes A to UINT8 whatever B's type)."""
    rng = np.random.default_rng(8)
    a = rng.standard_normal((2, 3, 16)).astype(np.float32)
    b = _quantized(rng, b_type, (16, 5))
    b_scale = rng.uniform(0.01, 0.1, 5).astype(np.float32)
    b_zero = rng.integers(-3, 4, 5).astype(b_type) if b_type == np.int8 else rng.integers(100, 150, 5).astype(b_type)
    bias = rng.standard_normal(5).astype(np.float32) if with_bias else None
    inputs = {"A": a, "B": b, "b_scale": b_scale, "b_zero_point": b_zero, "bias": bias}
    model = _model("DynamicQuantizeMatMul", inputs, np.float32,
                   initializers=[k for k in ("B", "b_scale", "b_zero_point", "bias") if inputs[k] is not None])
    got = _run(device, model, {"A": a})
    q, s, z = reference.dynamic_quantize_linear(a, dtype=np.dtype(b_type).name)
    acc = (q.astype(np.int64) - z.astype(np.int64).reshape(1)) @ (b.astype(np.int64) - b_zero.astype(np.int64))
    want = acc.astype(np.float64) * float(s.reshape(-1)[0]) * b_scale.astype(np.float64)
    want = want + (0 if bias is None else bias)
    assert got.dtype == np.float32 and got.shape == (2, 3, 5)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    if b_type == np.uint8:
        _against_onnxruntime(model, {"A": a}, got)

