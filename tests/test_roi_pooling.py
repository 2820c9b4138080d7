"""ROI_POOLING (roi_pooling; ONNX MaxRoiPool): what the conformance kit does not cover: the
reference against onnxruntime's MaxRoiPool (ONNX's wheel has neither a node test nor a
reference for it), the choices where the page is silent (rounding half away from zero,
inverted regions, empty bins, batch ids outside [0, N), NaN corners, the first NaN and the
first of equal maxima bit for bit), both adapter classes, the loop budget, validation
messages, and MaxRoiPool through a session."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper

import gpudml as dml
import gpudml.onnx as gonnx
from gpudml import reference
from gpudml.errors import UnsupportedError
from gpudml.kernels import roi as roi_family
from gpudml.ops import roi_pooling as rp
from gpudml.testing import assert_bit_equal

DT = dml.DataType
RNG = np.random.default_rng(45)
X = RNG.standard_normal((2, 3, 10, 12)).astype(np.float32)
ROIS = np.array([[0, 0, 0, 9, 7], [1, 2.5, 1.5, 11, 9], [1, 4, 4, 4, 4], [0, -6, -4, 30, 20], [1, 8, 7, 2, 1]],
                np.float32)


def _model(pooled, scale, rois_shape):
    node = helper.make_node("MaxRoiPool", ["x", "r"], ["y"], pooled_shape=list(pooled), spatial_scale=scale)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(X.shape)),
                                            helper.make_tensor_value_info("r", TensorProto.FLOAT, list(rois_shape))],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)


@pytest.mark.parametrize("pooled, scale", [((3, 4), 1.0), ((2, 2), 0.5), ((5, 3), 0.25)])
def test_reference_is_onnxruntime_maxroipool(pooled, scale):
    """An independent implementation: onnxruntime's CPU MaxRoiPool (Caffe's rule, in floats)."""
    ort = pytest.importorskip("onnxruntime")
    rois = ROIS[[0, 1, 2, 3]]  # (onnxruntime's inverted regions are one pixel too; its bins agree)
    session = ort.InferenceSession(_model(pooled, scale, rois.shape).SerializeToString(),
                                   providers=["CPUExecutionProvider"])
    want = session.run(None, {"x": X, "r": rois})[0]
    np.testing.assert_array_equal(reference.roi_pooling(X, rois, pooled, scale), want)


@pytest.mark.any_class  # both classes' Devices made here: the GPU-class run would repeat them
@pytest.mark.parametrize("adapter_class", ["cpu", "gpu"])
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_bit_exact_on_both_classes(adapter, adapter_class, dtype):
    """Both types on each adapter class's default strategy: the reference's bits."""
    device = dml.Device(adapter=adapter, adapter_class=adapter_class)
    x, rois = X.astype(dtype), ROIS.astype(dtype)
    assert_bit_equal(dml.roi_pooling(x, rois, (3, 4), 0.5, device=device), reference.roi_pooling(x, rois, (3, 4), 0.5))


def test_page_silences(device):
    """Half away from zero (2.5 -> 3, -2.5 -> -3); an inverted region is one pixel; a batch id
    outside [0, N) or NaN and a NaN corner give 0 without a read, -0.5 truncates to image 0;
    the first NaN of a bin (its payload) and the first of equal maxima (-0.0 before 0.0)
    bit for bit."""
    assert rp._corner(2.5, 1.0) == 3 and rp._corner(-2.5, 1.0) == -3 and rp._corner(np.nan, 1.0) is None
    x = np.zeros((1, 1, 2, 2), np.float32)
    x[0, 0, 0, 0] = -0.0
    nan = np.array([0x7FC00123, 0x7FC00456], np.uint32).view(np.float32)
    x[0, 0, 1] = nan
    rois = np.array([[0, 0, 0, 1, 0], [0, 0, 0, 1, 1], [2, 0, 0, 1, 1], [np.nan, 0, 0, 1, 1], [0, np.nan, 0, 1, 1],
                     [-0.5, 0, 0, 0, 0]], np.float32)
    got = np.asarray(dml.roi_pooling(x, rois, (1, 1), device=device))
    assert_bit_equal(got, reference.roi_pooling(x, rois, (1, 1)))
    bits = got.reshape(-1).view(np.uint32)
    assert bits[0] == 0x80000000 and bits[1] == 0x7FC00123 and (bits[2:5] == 0).all() and bits[5] == 0x80000000


def test_the_loop_budget():
    """A plane whose area passes one invocation's budget is unsupported (named); a large one
    runs fewer outputs per `runs` invocation."""
    big = roi_family.RoiPool("RoiPooling", dml.TensorDesc(DT.FLOAT32, [1, 1, 200, 200]),
                             dml.TensorDesc(DT.FLOAT32, [1, 1, 1, 5]), dml.TensorDesc(DT.FLOAT32, [1, 1, 7, 7]), 1.0)
    with pytest.raises(UnsupportedError, match=r"an input plane of \[200, 200\] takes up to 40200 loop iterations"):
        roi_family.FAMILY.strategies_for(big, None)
    large = big._replace(input=dml.TensorDesc(DT.FLOAT32, [1, 1, 60, 60]))
    (dispatch,) = roi_family.FAMILY.plan(large, None, "runs").dispatches
    assert dispatch.uniforms["run"] == (2**15 - 64) // (60 * 61)


@pytest.mark.parametrize("change, message", [
    ({"roi_tensor": dml.TensorDesc(DT.FLOAT32, [1, 1, 5, 4])}, r"roi_tensor.sizes \[1, 1, 5, 4\] must be"),
    ({"roi_tensor": dml.TensorDesc(DT.FLOAT32, [5, 5])}, "roi_tensor DimensionCount 2 is not supported"),
    ({"roi_tensor": dml.TensorDesc(DT.FLOAT16, [1, 1, 5, 5])}, "roi_tensor.data_type FLOAT16 must equal"),
    ({"pooled_size": (3, 65536)}, r"pooled_size \[3, 65536\] must be \(height, width\), each in \[1, 65535\]"),
    ({"output_tensor": dml.TensorDesc(DT.FLOAT32, [5, 3, 3, 3])}, r"output_tensor.sizes \[5, 3, 3, 3\] must be"),
    ({"spatial_scale": float("inf")}, "spatial_scale = inf must be finite"),
])
def test_validation_messages(vulkan_device, change, message):
    desc = rp.infer_output(dml.TensorDesc(DT.FLOAT32, X.shape), dml.TensorDesc(DT.FLOAT32, [1, 1, 5, 5]), (3, 4))
    fields = {**{f: getattr(desc, f) for f in desc.__dataclass_fields__}, **change}
    with pytest.raises(dml.InvalidArgumentError, match=f"RoiPooling: .*{message}"):
        vulkan_device.create_operator(rp.RoiPoolingOperatorDesc(**fields))


def test_onnx_maxroipool_through_a_session(device):
    """MaxRoiPool's [num_rois, 5] as DirectML's {1, 1, NumROIs, 5}: the reference's values."""
    model = _model((3, 2), 0.5, ROIS.shape)
    (got,) = gonnx.InferenceSession(model, device=device).run(None, {"x": X, "r": ROIS})
    np.testing.assert_array_equal(got, reference.roi_pooling(X, ROIS, (3, 2), 0.5))
