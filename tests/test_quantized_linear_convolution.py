"""DML_QUANTIZED_LINEAR_CONVOLUTION's own edge cases (gpudml/ops/quantized_linear_convolution.py;
the conformance kit sweeps its types, layouts and strategies): against dequantize-convolve-
quantize in float64, the requantization's ties (half to even) and saturation, per-channel
filter scales and zero points, the INT32 bias (wrapping with the sum), both adapter classes,
ONNX's QLinearConv and ConvInteger against onnxruntime's CPU provider, and bad input (scales of
0, NaN or negative, zero points of the wrong type or count, a bias not INT32) before any GPU
work."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import gpudml as dml
import gpudml.onnx as gonnx
import gpudml.reference  # noqa: F401  (dml.reference)

CLASSES = ("cpu", "gpu")


@pytest.fixture(scope="module", params=CLASSES)
def classed(request, adapter):
    return dml.Device(adapter=adapter, adapter_class=request.param)


def dequantized_convolution(x, xs, xz, w, ws, wz, b, ys, yz, out, **geometry):
    """Dequantize, convolve (the float convolution's reference, float64), add the bias
    dequantized, quantize (round half to even, saturate): the page's definition in float64."""
    xd = (x.astype(np.float64) - float(xz)) * float(xs)
    wd = (w.astype(np.float64) - np.asarray(wz, np.float64).reshape(-1, 1, 1, 1)) * \
        np.asarray(ws, np.float64).reshape(-1, 1, 1, 1)
    y = dml.reference.convolution(xd, wd, None if b is None else b * float(xs) * np.asarray(ws, np.float64), **geometry)
    info = np.iinfo(out)
    return np.clip(np.rint(y / float(ys)) + int(yz), info.min, info.max).astype(out)


@pytest.mark.parametrize("xt, wt, out", [(np.uint8, np.int8, np.uint8), (np.int8, np.int8, np.int8),
                                         (np.uint8, np.uint8, np.int8)])
def test_against_dequantize_convolve_quantize(classed, xt, wt, out):
    """Per-channel filter scales and zero points, a bias, groups, strides, padding: every output
    the reference's exactly, and within 1 of the float64 definition (the float32 steps of the
    requantization; module docstring), most of them equal."""
    rng = np.random.default_rng(7)
    ii, wi, oi = np.iinfo(xt), np.iinfo(wt), np.iinfo(out)
    x = rng.integers(ii.min, ii.max + 1, (2, 4, 7, 6)).astype(xt)
    w = rng.integers(wi.min, wi.max + 1, (6, 2, 3, 3)).astype(wt)
    xs, ws = np.float32(0.02), rng.uniform(0.005, 0.02, 6).astype(np.float32)
    xz, wz = xt(ii.min + 100), rng.integers(wi.min // 4, wi.max // 4, 6).astype(wt)
    b = rng.integers(-5000, 5000, 6).astype(np.int32)
    ys, yz = np.float32(0.35), out(oi.min + 120)
    geometry = {"strides": [1, 2], "start_padding": [1, 1], "end_padding": [1, 0], "group_count": 2}
    args = {"filter": w, "filter_scale": ws, "filter_zero_point": wz, "bias": b, "output_scale": ys,
            "output_zero_point": yz, **geometry}
    y = dml.quantized_linear_convolution(x, xs, xz, device=classed, **args)
    assert y.dtype == out
    np.testing.assert_array_equal(y, dml.reference.quantized_linear_convolution(x, xs, xz, **args))
    exact = dequantized_convolution(x, xs, xz, w, ws, wz, b, ys, yz, out, **geometry)
    diff = np.abs(y.astype(int) - exact.astype(int))
    assert diff.max() <= 1 and (diff == 0).mean() > 0.99
    assert len(np.unique(y)) > 20  # (not all saturated)


def test_ties_round_half_to_even_and_saturate(classed):
    """1 x 1 filters of 1, scales of 1 and an output scale of 2: sums k give k / 2 exactly, ties
    going to the even neighbour; past the type's range, saturation."""
    sums = np.array([1, 3, 5, -1, -3, 254, 255, 1000, -1000], np.int32)
    x = np.zeros((1, 1, 1, len(sums)), np.int8)
    w = np.ones((1, 1, 1, 1), np.int8)
    y = dml.quantized_linear_convolution(x, np.float32(1.0), filter=w, filter_scale=np.float32(1.0),
                                         bias=np.zeros(1, np.int32), output_scale=np.float32(2.0),
                                         output_data_type="INT8", device=classed)
    assert y.ravel().tolist() == [0] * len(sums)  # (no bias: zero sums)
    # The sums through the bias, one output position each: a batch per sum.
    got = [int(dml.quantized_linear_convolution(np.zeros((1, 1, 1, 1), np.int8), np.float32(1.0), filter=w,
                                                filter_scale=np.float32(1.0), bias=np.array([s], np.int32),
                                                output_scale=np.float32(2.0), output_zero_point=np.int8(0),
                                                device=classed).ravel()[0]) for s in sums]
    assert got == [0, 2, 2, 0, -2, 127, 127, 127, -128]


def test_bias_wraps_with_the_sum(classed):
    """The bias joins the int32 sum (int32 arithmetic: wrapping): 2^31 - 1 + 1 is -2^31."""
    x = np.ones((1, 1, 1, 1), np.uint8)
    y = dml.quantized_linear_convolution(x, np.float32(1.0), filter=np.ones((1, 1, 1, 1), np.uint8),
                                         filter_scale=np.float32(2.0**-24), bias=np.array([2**31 - 1], np.int32),
                                         output_scale=np.float32(2.0**6), output_zero_point=np.int8(0),
                                         device=classed)
    assert int(y.ravel()[0]) == -2  # -2^31 * 2^-24 / 2^6 = -2


@pytest.mark.any_class
@pytest.mark.parametrize("change, message", [
    ({"x_scale": np.float32(0.0)}, "quantized_linear_convolution: x_scale must be positive and finite"),
    ({"filter_scale": np.array([0.1, np.nan], np.float32)},
     "quantized_linear_convolution: filter_scale must be positive and finite.*nan"),
    ({"output_scale": np.float32(-1.0)}, "quantized_linear_convolution: output_scale must be positive"),
    ({"bias": np.zeros(2, np.float32)}, "QuantizedLinearConvolution: bias_tensor.data_type FLOAT32 is not supported"),
    ({"bias": np.zeros(3, np.int32)}, r"QuantizedLinearConvolution: bias_tensor.sizes \[1, 3, 1, 1\] must be "
                                      r"\[1, 2, 1, 1\]"),
    ({"filter_zero_point": np.zeros(3, np.int8)},
     r"QuantizedLinearConvolution: filter_zero_point_tensor.sizes \[1, 3, 1, 1\] must hold one element \(per "
     r"tensor\) or OutputChannelCount = 2"),
    ({"filter_scale": np.ones(3, np.float32)},
     r"QuantizedLinearConvolution: filter_scale_tensor.sizes \[1, 3, 1, 1\] must hold one element"),
    ({"x_zero_point": np.int8(0)},
     "QuantizedLinearConvolution: input_zero_point_tensor.data_type INT8 must equal input_tensor.data_type UINT8"),
    ({"output_zero_point": np.zeros(2, np.uint8)},
     "QuantizedLinearConvolution: output_zero_point_tensor DimensionCount 1 is not supported at FL_6_4 "
     r"\(supported: 4\)"),
])
def test_bad_input_named_before_gpu_work(adapter, change, message):
    device = dml.Device(adapter=adapter)
    args = {"x_scale": np.float32(0.1), "x_zero_point": np.uint8(3), "filter": np.zeros((2, 3, 2, 2), np.int8),
            "filter_scale": np.float32(0.1), "output_scale": np.float32(0.5), **change}
    before = device._ctx.pool.allocations
    with pytest.raises(dml.InvalidArgumentError, match=message):
        dml.quantized_linear_convolution(np.zeros((1, 3, 4, 4), np.uint8), device=device, **args)
    assert device._ctx.pool.allocations == before


# ------------------------------------------------------------------------------ ONNX
def _session_pair(model, feeds, device):
    onnxruntime = pytest.importorskip("onnxruntime")
    want = onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)
    got = gonnx.InferenceSession(model, device=device).run(None, feeds)
    return got[0], want[0]


def _model(op, names, inits, attrs, out_type, feeds):
    node = helper.make_node(op, names, ["y"], **attrs)
    ins = [helper.make_tensor_value_info(k, helper.np_dtype_to_tensor_dtype(v.dtype), list(v.shape))
           for k, v in feeds.items()]
    graph = helper.make_graph([node], op, ins, [helper.make_tensor_value_info("y", out_type, None)],
                              [numpy_helper.from_array(v, k) for k, v in inits.items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)], ir_version=10)


@pytest.mark.parametrize("spatial", [1, 2])
def test_onnx_qlinearconv_per_channel_against_onnxruntime(classed, spatial):
    """QLinearConv with per-channel w_scale and w_zero_point 0 (onnxruntime's CPU kernel takes
    per-channel zero points of 0 only), a bias, pads, strides, groups; 1-D as 2-D."""
    rng = np.random.default_rng(11)
    shape = [1, 4, 9] if spatial == 1 else [1, 4, 6, 7]
    x = rng.integers(0, 256, shape).astype(np.uint8)
    w = rng.integers(-128, 128, [6, 2] + [3] * spatial).astype(np.int8)
    inits = {"xs": np.float32(0.05), "xz": np.uint8(128), "w": w, "ws": rng.uniform(0.005, 0.02, 6).astype(np.float32),
             "wz": np.zeros(6, np.int8), "ys": np.float32(0.3), "yz": np.uint8(100),
             "b": rng.integers(-3000, 3000, 6).astype(np.int32)}
    attrs = {"group": 2, "pads": [1] * (2 * spatial), "strides": [2] * spatial}
    model = _model("QLinearConv", ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz", "b"], inits, attrs,
                   TensorProto.UINT8, {"x": x})
    got, want = _session_pair(model, {"x": x}, classed)
    assert got.dtype == want.dtype and got.shape == want.shape
    assert np.abs(got.astype(int) - want.astype(int)).max() <= 1  # (onnxruntime's one float32 multiplier)
    assert (got == want).mean() > 0.98


def test_onnx_convinteger_against_onnxruntime(classed):
    rng = np.random.default_rng(12)
    x = rng.integers(0, 256, [2, 3, 5, 6]).astype(np.uint8)
    w = rng.integers(0, 256, [4, 3, 2, 2]).astype(np.uint8)
    feeds = {"x": x}
    model = _model("ConvInteger", ["x", "w", "xz", "wz"], {"w": w, "xz": np.uint8(7), "wz": np.uint8(130)},
                   {"pads": [1, 0, 0, 1], "dilations": [2, 1]}, TensorProto.INT32, feeds)
    got, want = _session_pair(model, feeds, classed)
    np.testing.assert_array_equal(got, want)
