"""DML_QUANTIZED_LINEAR_AVERAGE_POOLING's own edge cases (gpudml/ops/quantized_linear_average_pooling.py;
the conformance kit sweeps its types, layouts and strategies): against dequantize-average-
quantize in float64, IncludePadding, per-channel scales and zero points, 5-D, both adapter
classes, com.microsoft's QLinearAveragePool and QLinearGlobalAveragePool (channels_last too)
against onnxruntime's CPU provider, and bad input before any GPU work."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import helper, numpy_helper

import gpudml as dml
import gpudml.onnx as gonnx
import gpudml.reference  # noqa: F401  (dml.reference)

CLASSES = ("cpu", "gpu")


@pytest.fixture(scope="module", params=CLASSES)
def classed(request, adapter):
    return dml.Device(adapter=adapter, adapter_class=request.param)


def dequantized_average(x, xs, xz, ys, yz, out, window, strides, pads, include):
    """Dequantize, average (float64; the padding counted in the divisor with `include`),
    quantize (half to even, saturating), 2-D, per-channel scales and zero points."""
    n, c, h, w = x.shape
    cs = lambda v: np.broadcast_to(np.asarray(v, np.float64).reshape(-1), (c,))  # noqa: E731
    xsv, xzv, ysv, yzv = cs(xs), cs(xz), cs(ys), cs(yz)
    oh = (h + 2 * pads[0] - window[0]) // strides[0] + 1
    ow = (w + 2 * pads[1] - window[1]) // strides[1] + 1
    y = np.zeros((n, c, oh, ow), np.int64)
    info = np.iinfo(out)
    for b in range(n):
        for ch in range(c):
            for i in range(oh):
                for j in range(ow):
                    r0, c0 = i * strides[0] - pads[0], j * strides[1] - pads[1]
                    part = x[b, ch, max(r0, 0):r0 + window[0], max(c0, 0):c0 + window[1]].astype(np.float64)
                    count = window[0] * window[1] if include else part.size
                    mean = ((part - xzv[ch]) * xsv[ch]).sum() / count
                    y[b, ch, i, j] = np.clip(np.rint(mean / ysv[ch]) + yzv[ch], info.min, info.max)
    return y.astype(out)


@pytest.mark.parametrize("include", [False, True])
@pytest.mark.parametrize("xt, out", [(np.uint8, np.uint8), (np.int8, np.uint8), (np.int8, np.int8)])
def test_against_dequantize_average_quantize(classed, include, xt, out):
    """Per-channel scales and zero points, padding with IncludePadding either way: the
    reference's results exactly, within 1 of the float64 definition (float32 steps), most equal."""
    rng = np.random.default_rng(21)
    ii, oi = np.iinfo(xt), np.iinfo(out)
    x = rng.integers(ii.min, ii.max + 1, (2, 3, 7, 8)).astype(xt)
    xs = rng.uniform(0.01, 0.05, 3).astype(np.float32)
    xz = rng.integers(ii.min, ii.max + 1, 3).astype(xt)
    ys, yz = np.float32(0.02), out(oi.min + 128)
    args = {"output_scale": ys, "output_zero_point": yz, "window_size": [3, 3], "strides": [2, 2],
            "start_padding": 1, "end_padding": 1, "include_padding": include}
    y = dml.quantized_linear_average_pooling(x, xs, xz, device=classed, **args)
    assert y.dtype == out and y.shape == (2, 3, 4, 4)
    np.testing.assert_array_equal(y, dml.reference.quantized_linear_average_pooling(x, xs, xz, **args))
    exact = dequantized_average(x, xs, xz, ys, yz, out, (3, 3), (2, 2), (1, 1), include)
    diff = np.abs(y.astype(int) - exact.astype(int))
    assert diff.max() <= 1 and (diff == 0).mean() > 0.97


def test_five_dimensions_dilations_global(classed):
    rng = np.random.default_rng(22)
    x = rng.integers(0, 256, (1, 2, 4, 5, 6)).astype(np.uint8)
    for args in ({"window_size": [2, 2, 3], "dilations": [1, 2, 1], "strides": 1, "end_padding": [0, 1, 1]},
                 {}):
        y = dml.quantized_linear_average_pooling(x, np.float32(0.1), np.uint8(9), output_scale=np.float32(0.07),
                                                 device=classed, **args)
        np.testing.assert_array_equal(y, dml.reference.quantized_linear_average_pooling(
            x, np.float32(0.1), np.uint8(9), output_scale=np.float32(0.07), **args))
    assert y.shape == (1, 2, 1, 1, 1)
    want = np.clip(np.rint((x.astype(np.float64) - 9).reshape(1, 2, -1).mean(-1) * 0.1 / np.float64(np.float32(0.07))),
                   0, 255)
    assert np.abs(y.reshape(1, 2) - want).max() <= 1


@pytest.mark.any_class
@pytest.mark.parametrize("change, message", [
    ({"x_scale": np.float32(0.0)}, "quantized_linear_average_pooling: x_scale must be positive and finite"),
    ({"output_scale": np.array([0.1, -0.5, 0.1], np.float32)},
     "quantized_linear_average_pooling: output_scale must be positive and finite"),
    ({"x_zero_point": np.int8(0)}, "QuantizedLinearAveragePooling: input_zero_point_tensor.data_type INT8 must "
                                   "equal input_tensor.data_type UINT8"),
    ({"x_zero_point": np.zeros(4, np.uint8)},
     r"QuantizedLinearAveragePooling: input_zero_point_tensor.sizes \[1, 4, 1, 1\] must hold one element \(per "
     r"tensor\) or ChannelCount = 3"),
    ({"window_size": [9, 2]}, "QuantizedLinearAveragePooling: window_size\\[0\\] = 9"),
    ({"start_padding": [2, 0], "window_size": [2, 2]}, "QuantizedLinearAveragePooling: the window of output "
                                                       "position 0 on spatial axis 0 covers padding only"),
])
def test_bad_input_named_before_gpu_work(adapter, change, message):
    device = dml.Device(adapter=adapter)
    args = {"x_scale": np.float32(0.1), "output_scale": np.float32(0.5), "window_size": [2, 2], **change}
    before = device._ctx.pool.allocations
    with pytest.raises(dml.InvalidArgumentError, match=message):
        dml.quantized_linear_average_pooling(np.zeros((1, 3, 4, 4), np.uint8), device=device, **args)
    assert device._ctx.pool.allocations == before


# ------------------------------------------------------------------------------ ONNX (com.microsoft)
def _run_both(op, x, attrs, device, xz=True, yz=True, out_type=None):
    onnxruntime = pytest.importorskip("onnxruntime")
    dt = helper.np_dtype_to_tensor_dtype(x.dtype)
    inits = {"xs": np.float32(0.04), "xz": x.dtype.type(11) if xz else None, "ys": np.float32(0.03),
             "yz": x.dtype.type(20) if yz else None}
    names = [k if v is not None else "" for k, v in inits.items()]
    while not names[-1]:
        names.pop()
    node = helper.make_node(op, ["x", *names], ["y"], domain="com.microsoft", **attrs)
    graph = helper.make_graph([node], op, [helper.make_tensor_value_info("x", dt, list(x.shape))],
                              [helper.make_tensor_value_info("y", dt, None)],
                              [numpy_helper.from_array(np.asarray(v), k) for k, v in inits.items() if v is not None])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21),
                                                    helper.make_opsetid("com.microsoft", 1)], ir_version=10)
    want = onnxruntime.InferenceSession(model.SerializeToString(),
                                        providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    got = gonnx.InferenceSession(model, device=device).run(None, {"x": x})[0]
    assert got.dtype == want.dtype and got.shape == want.shape, (got.shape, want.shape)
    return got, want


@pytest.mark.parametrize("attrs", [
    {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]},
    {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1], "count_include_pad": 1},
    {"kernel_shape": [2, 3], "ceil_mode": 1, "strides": [2, 2]},
    {"kernel_shape": [3], "auto_pad": "SAME_UPPER"},
    {"kernel_shape": [3, 3], "channels_last": 1},
])
def test_onnx_qlinear_average_pool_against_onnxruntime(classed, attrs):
    rng = np.random.default_rng(23)
    shape = [2, 3, 10] if len(attrs["kernel_shape"]) == 1 else ([1, 7, 8, 3] if attrs.get("channels_last")
                                                                else [1, 3, 7, 8])
    x = rng.integers(0, 256, shape).astype(np.uint8)
    got, want = _run_both("QLinearAveragePool", x, attrs, classed)
    diff = np.abs(got.astype(int) - want.astype(int))
    assert diff.max() <= 1 and (diff == 0).mean() > 0.95  # (onnxruntime rounds each dequantized term)


@pytest.mark.parametrize("channels_last", [0, 1])
def test_onnx_qlinear_global_average_pool_against_onnxruntime(classed, channels_last):
    rng = np.random.default_rng(24)
    x = rng.integers(-128, 128, [2, 5, 6, 4] if channels_last else [2, 4, 5, 6]).astype(np.int8)
    got, want = _run_both("QLinearGlobalAveragePool", x, {"channels_last": channels_last}, classed)
    assert np.abs(got.astype(int) - want.astype(int)).max() <= 1
