"""ROI_ALIGN (roi_align0) and ROI_ALIGN1 (roi_align): what the conformance kit does not
cover: the reference against ONNX's reference RoiAlign, the documented precision at its
bound, every type and index type under both strategies and both adapter classes, the
choices gpudml makes where DirectML's page is silent (out-of-range batch indices, NaN boxes,
inverted and empty regions, the sample cap, nearest's ties, corner alignment), each
validation rule's message, and the ONNX mapping through a session."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper
from onnx.reference import ReferenceEvaluator

import gpudml as dml
import gpudml.onnx as gonnx
from gpudml import reference
from gpudml.kernels import roi as roi_family
from gpudml.ops import roi_align as ra
from gpudml.testing import assert_within

DT = dml.DataType
RNG = np.random.default_rng(44)
X = RNG.uniform(-4, 4, (2, 3, 9, 11)).astype(np.float32)
ROIS = np.array([[0, 0, 10, 8], [1.5, 2.25, 7, 5.5], [9, 7, 2, 1], [-3, -2, 13, 12], [4, 4, 4, 4]], np.float32)
BATCH = np.array([0, 1, 1, 0, 1], np.uint32)


def _onnx_roi_align(x, rois, batch, *, mode, transform, ratio, scale, size):
    node = helper.make_node("RoiAlign", ["x", "r", "b"], ["y"], output_height=size[0], output_width=size[1],
                            sampling_ratio=ratio, spatial_scale=scale, mode=mode,
                            coordinate_transformation_mode=transform)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.DOUBLE, None),
                                            helper.make_tensor_value_info("r", TensorProto.DOUBLE, None),
                                            helper.make_tensor_value_info("b", TensorProto.INT64, None)],
                              [helper.make_tensor_value_info("y", TensorProto.DOUBLE, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 16)])
    return ReferenceEvaluator(model).run(None, {"x": x, "r": rois, "b": batch})[0]


@pytest.mark.parametrize("transform", ["half_pixel", "output_half_pixel"])
@pytest.mark.parametrize("ratio", [0, 2])
def test_reference_is_onnx_roialign_average(transform, ratio):
    """An independent formulation: ONNX's reference RoiAlign (float64) in avg mode, on boxes
    of at least a pixel (output_half_pixel widens smaller ones to 1, DirectML does not)."""
    x = RNG.standard_normal((2, 3, 10, 12))
    rois = np.array([[0, 0, 9, 9], [1.5, 2.25, 8, 6], [3, 1, 11.5, 9.75], [-2, -1, 5, 14]])
    batch = np.array([0, 1, 1, 0], np.int64)
    want = _onnx_roi_align(x, rois, batch, mode="avg", transform=transform, ratio=ratio, scale=0.5, size=(3, 4))
    got = reference.roi_align(x, rois, batch, 0.5, (3, 4), input_pixel_offset=0.5 if transform == "half_pixel" else 0,
                              minimum_samples_per_output=ratio or 1,
                              maximum_samples_per_output=ratio or ra.UINT32_MAX)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def test_max_is_the_largest_interpolated_sample():
    """MAX reduces the samples (DirectML's reduction), not ONNX's reference's weighted terms:
    one sample per output reads exactly the sample's bilinear value, as AVERAGE does."""
    args = dict(minimum_samples_per_output=1, maximum_samples_per_output=1)
    mx = reference.roi_align(X, ROIS, BATCH, 1.0, (3, 4), reduction_function="max", **args)
    avg = reference.roi_align(X, ROIS, BATCH, 1.0, (3, 4), **args)
    np.testing.assert_array_equal(mx, avg)
    two = reference.roi_align(X, ROIS, BATCH, 1.0, (3, 4), reduction_function="max", minimum_samples_per_output=2,
                              maximum_samples_per_output=2)
    avg2 = reference.roi_align(X, ROIS, BATCH, 1.0, (3, 4), minimum_samples_per_output=2,
                               maximum_samples_per_output=2)
    assert (two >= avg2 - 1e-6).all() and (two > avg2).any()


def _run(device, version: int, x, rois, batch, **kwargs):
    fn = dml.roi_align if version else dml.roi_align0
    return np.asarray(fn(x, rois, batch, device=device, **kwargs))


def _check(got, x, rois, batch, version: int, **kwargs):
    want = (reference.roi_align if version else reference.roi_align0)(x, rois, batch, **kwargs)
    arguments = {"spatial_scale": kwargs.pop("spatial_scale", 1.0), "output_size": kwargs.pop("output_size"), **kwargs}
    assert_within(got, want, ra.tolerance(want, [x, rois, batch], arguments), "roi_align")


@pytest.mark.parametrize("data_type", [DT.FLOAT32, DT.FLOAT16], ids=lambda t: t.name)
@pytest.mark.parametrize("index_type", [np.uint32, np.uint64], ids=lambda t: t.__name__)
@pytest.mark.parametrize("strategy", ["runs", "elements"])
def test_every_type_and_strategy(device, data_type, index_type, strategy):
    """Each type and index type under each strategy (forced), max and nearest among them,
    within the documented precision of the float64 reference."""
    x = X.astype(data_type.numpy)
    rois, batch = ROIS.astype(data_type.numpy), BATCH.astype(index_type)
    for version, kwargs in ((1, {"reduction_function": "max", "interpolation_mode": "nearest_neighbor"}),
                            (0, {"spatial_scale": (0.75, 1.25), "minimum_samples_per_output": 2})):
        fn = ra.infer_output if version else ra.infer_output0
        desc = fn(*(dml.TensorDesc(DT.from_numpy(a.dtype), a.shape) for a in (x, rois, batch)),
                  output_size=(3, 2), **kwargs)
        compiled = device.compile_operator(device.create_operator(desc), strategy)
        (got,) = compiled.execute([x, rois, batch])
        _check(np.asarray(got), x, rois, batch, version, output_size=(3, 2), **kwargs)


@pytest.mark.any_class  # both classes' Devices made here: the GPU-class run would repeat them
@pytest.mark.parametrize("adapter_class", ["cpu", "gpu"])
def test_both_adapter_classes(adapter, adapter_class):
    """Each adapter class's default strategy (runs on CPU-class, elements on GPU-class) on
    the software adapters, corner alignment and pixel offsets of 0."""
    device = dml.Device(adapter=adapter, adapter_class=adapter_class)
    kwargs = {"output_size": (4, 3), "input_pixel_offset": 0.0, "output_pixel_offset": 0.0,
              "align_regions_to_corners": True}
    desc = ra.infer_output(*(dml.TensorDesc(DT.from_numpy(a.dtype), a.shape) for a in (X, ROIS, BATCH)), **kwargs)
    compiled = device.compile_operator(device.create_operator(desc))
    assert compiled.strategy == ("runs" if adapter_class == "cpu" else "elements")
    _check(np.asarray(compiled.execute([X, ROIS, BATCH])[0]), X, ROIS, BATCH, 1, **kwargs)


def test_precision_at_its_bound(device):
    """Far from the origin (boxes at x ~ 4000 on a wide image, a steep pattern) float32
    positions are visibly off: the errors are real, within the bound and no less than 1/64
    of it; positions moved by 2^-3 pixel (a wrong pixel offset) are outside it."""
    w = 4100
    x = np.tile(np.where(np.arange(w) % 2 == 0, 100.0, -100.0).astype(np.float32), (1, 1, 3, 1))
    x += np.linspace(0, 1, w, dtype=np.float32)
    rois = np.array([[4001.3, 0.2, 4090.7, 2.9], [4000.1, 0.5, 4012.3, 2.5]], np.float32)
    batch = np.zeros(2, np.uint32)
    kwargs = {"output_size": (2, 5), "minimum_samples_per_output": 2, "maximum_samples_per_output": 2}
    got = _run(device, 1, x, rois, batch, **kwargs)
    want = reference.roi_align(x, rois, batch, **kwargs)
    tol = ra.tolerance(want, [x, rois, batch], {"spatial_scale": 1.0, **kwargs})
    error = np.abs(got.astype(np.float64) - want)
    assert (error <= tol).all() and error.max() >= tol.max() / 64
    shifted = reference.roi_align(x, rois, batch, input_pixel_offset=0.5 + 2**-3, **kwargs)
    assert (np.abs(shifted.astype(np.float64) - want) > tol).any()


def test_page_silences(device):
    """gpudml's choices where the page is silent: a batch index outside [0, N) and a box with
    NaN read OutOfBoundsInputValue; an inverted box samples mirrored; an empty box reads its
    one point; a region past 64 outputs' worth takes 64 samples per output (the cap)."""
    x = X[:1]
    oob = {"out_of_bounds_input_value": -7.5, "output_size": (2, 3)}
    rois = np.array([[1, 1, 6, 5], [1, np.nan, 6, 5], [1, 1, 6, 5]], np.float32)
    got = _run(device, 1, x, rois, np.array([0, 0, 3], np.uint32), **oob)
    assert (got[1:] == -7.5).all() and (got[0] != -7.5).all()
    straight = _run(device, 1, x, np.array([[1, 1, 6, 5]], np.float32), np.zeros(1, np.uint32), output_size=(2, 3))
    mirrored = _run(device, 1, x, np.array([[6, 5, 1, 1]], np.float32), np.zeros(1, np.uint32), output_size=(2, 3))
    np.testing.assert_allclose(mirrored, straight[:, :, ::-1, ::-1], rtol=1e-5, atol=1e-5)
    point = _run(device, 1, x, np.array([[4, 3, 4, 3]], np.float32), np.zeros(1, np.uint32), output_size=(2, 2),
                 input_pixel_offset=0.0)
    assert np.allclose(point, x[0, :, 3, 4][:, None, None] * np.ones((2, 2)), atol=1e-6)
    assert ra.samples_per_output(0, 1e6, 1.0, 1, 1, ra.UINT32_MAX) == roi_family.SAMPLE_CAP
    big = np.array([[0, 0, 200, 150]], np.float32)
    kwargs = {"output_size": (1, 1), "spatial_scale": 0.05}
    _check(_run(device, 1, x, big, np.zeros(1, np.uint32), **kwargs), x, big, np.zeros(1, np.uint32), 1, **kwargs)


def test_nearest_ties_round_up():
    """NEAREST_NEIGHBOR at a half-way position reads the larger index."""
    x = np.arange(4, dtype=np.float32).reshape(1, 1, 1, 4)
    rois = np.array([[1.5, 0, 2.5, 1]], np.float32)  # one sample at x = (0 + 0.5) * 1 + 1.5 - 0.5 = 1.5
    got = reference.roi_align(x, rois, np.zeros(1, np.uint32), 1.0, (1, 1), interpolation_mode="nearest_neighbor")
    assert got[0, 0, 0, 0] == 2.0


@pytest.mark.parametrize("change, message", [
    ({"roi_tensor": dml.TensorDesc(DT.FLOAT32, [5, 5])}, r"roi_tensor.sizes \[5, 5\] must be \{NumROIs, 4\}"),
    ({"roi_tensor": dml.TensorDesc(DT.FLOAT16, [5, 4])}, "roi_tensor.data_type FLOAT16 must equal"),
    ({"roi_tensor": dml.TensorDesc(DT.FLOAT32, [1, 1, 1, 5, 4])}, "roi_tensor DimensionCount 5 is not supported"),
    ({"batch_indices_tensor": dml.TensorDesc(DT.UINT32, [4])}, "batch_indices_tensor.sizes \\[4\\] must be NumROIs"),
    ({"batch_indices_tensor": dml.TensorDesc(DT.INT32, [5])}, "batch_indices_tensor.data_type INT32 is not supported"),
    ({"output_tensor": dml.TensorDesc(DT.FLOAT32, [5, 2, 3, 4])}, r"output_tensor.sizes \[5, 2, 3, 4\] must be"),
    ({"reduction_function": "sum"}, "reduction_function SUM must be AVERAGE or MAX"),
    ({"interpolation_mode": "cubic"}, "interpolation_mode CUBIC must be NEAREST_NEIGHBOR or LINEAR"),
    ({"minimum_samples_per_output": 0}, "minimum_samples_per_output = 0 and maximum_samples_per_output"),
    ({"minimum_samples_per_output": 3, "maximum_samples_per_output": 2}, "1 <= minimum <= maximum"),
    ({"spatial_scale_x": float("nan")}, "spatial_scale_x = nan must be finite"),
    ({"input_pixel_offset": float("inf")}, "input_pixel_offset = inf must be finite"),
    ({"align_regions_to_corners": 2}, "align_regions_to_corners must be a bool"),
])
def test_validation_messages(vulkan_device, change, message):
    desc = ra.infer_output(*(dml.TensorDesc(DT.from_numpy(a.dtype), a.shape) for a in (X, ROIS, BATCH)),
                           output_size=(3, 4))
    fields = {**{f: getattr(desc, f) for f in desc.__dataclass_fields__}, **change}
    with pytest.raises(dml.InvalidArgumentError, match=f"RoiAlign1: .*{message}"):
        vulkan_device.create_operator(ra.RoiAlign1OperatorDesc(**fields))


def test_feature_levels(at_level):
    """ROI_ALIGN from FL 3.0, ROI_ALIGN1 from 4.0, UINT64 indices from 5.0."""
    descs = [dml.TensorDesc(DT.FLOAT32, X.shape), dml.TensorDesc(DT.FLOAT32, ROIS.shape)]
    with pytest.raises(dml.InvalidArgumentError, match="introduced at FL_4_0"):
        at_level(dml.FeatureLevel.FL_3_1).create_operator(ra.infer_output(*descs, dml.TensorDesc(DT.UINT32, [5])))
    at_level(dml.FeatureLevel.FL_3_0).create_operator(ra.infer_output0(*descs, dml.TensorDesc(DT.UINT32, [5])))
    with pytest.raises(dml.InvalidArgumentError, match="UINT64 is not supported at FL_4_1.*it needs FL_5_0"):
        at_level(dml.FeatureLevel.FL_4_1).create_operator(ra.infer_output(*descs, dml.TensorDesc(DT.UINT64, [5])))


def test_onnx_roialign_through_a_session(device):
    """RoiAlign (opset 16, INT64 batch indices as graph inputs: a wrapping CAST to UINT64)
    through a session: ONNX's reference's values (avg mode)."""
    node = helper.make_node("RoiAlign", ["x", "r", "b"], ["y"], output_height=3, output_width=2, sampling_ratio=2,
                            spatial_scale=0.5)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, None),
                                            helper.make_tensor_value_info("r", TensorProto.FLOAT, None),
                                            helper.make_tensor_value_info("b", TensorProto.INT64, None)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 16)])
    rois = ROIS[:4] * 2
    feeds = {"x": X, "r": rois, "b": BATCH[:4].astype(np.int64)}
    (got,) = gonnx.InferenceSession(model, device=device).run(None, feeds)
    want = ReferenceEvaluator(model).run(None, feeds)[0]
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("opset", [10, 16])
def test_onnx_output_half_pixel_regions_are_at_least_a_pixel(device, opset):
    """output_half_pixel (opset 10's only mode) as ONNX's reference and onnxruntime compute
    it: a region under one input pixel on a side (after spatial_scale) is taken one pixel
    wide or high (its end raised), which ROI_ALIGN1 alone does not do: Faster R-CNN's thin
    proposals at an image's edge. Against onnxruntime: ONNX's reference evaluator (1.23.2)
    computes opset 10's RoiAlign as half_pixel."""
    onnxruntime = pytest.importorskip("onnxruntime")
    attrs = {} if opset == 10 else {"coordinate_transformation_mode": "output_half_pixel"}
    node = helper.make_node("RoiAlign", ["x", "r", "b"], ["y"], output_height=3, output_width=2, sampling_ratio=2,
                            spatial_scale=0.5, **attrs)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, None),
                                            helper.make_tensor_value_info("r", TensorProto.FLOAT, None),
                                            helper.make_tensor_value_info("b", TensorProto.INT64, None)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    rois = np.array([[2, 2, 2.4, 2.6], [0, 0, 14, 0.5], [3, 1, 3, 12], [4, 6, 20, 16]], np.float32)
    feeds = {"x": X, "r": rois, "b": np.array([0, 1, 1, 0], np.int64)}
    (got,) = gonnx.InferenceSession(model, device=device).run(None, feeds)
    want = onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)
    np.testing.assert_allclose(got, want[0], rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("op", ["roi_align", "roi_pooling"])
def test_an_elementwise_chain_runs_in_the_store(device, op):
    """A graph's sigmoid of the region operator's value plus a per-channel bias (a read
    tensor, bound after the producer's own inputs) runs in its store (the region family's
    epilogue): its dispatch only, the unfused graph's values."""
    g = dml.Graph(device)
    x = g.input(list(X.shape), name="x")
    if op == "roi_align":
        y = dml.roi_align(x, ROIS, BATCH, output_size=(3, 2))
    else:
        y = dml.roi_pooling(x, np.concatenate([BATCH[:, None].astype(np.float32), ROIS], axis=1), (3, 2))
    out = dml.sigmoid(dml.add(y, np.array([0.5, -1.0, 2.0], np.float32).reshape(1, 3, 1, 1)))
    fused, unfused = g.compile([out]), g.compile([out], fuse=False)
    assert fused.dispatch_count == 1 < unfused.dispatch_count
    (got,), (want,) = fused({"x": X}), unfused({"x": X})
    np.testing.assert_allclose(got, want, rtol=4e-7, atol=4e-7)
