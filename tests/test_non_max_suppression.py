"""NonMaxSuppression (gpudml's extension, docs/extensions.md): the reference against ONNX's
own (onnx.reference), the device against the reference on both adapters (corner and center
boxes, score thresholds, ties of scores and of the IoU threshold, several batches and
classes, strided inputs, walks cut into several dispatches), the worst-case output's zero
rows, bad calls, and a detection model's pattern through a session (NMS, then a Gather of
the selected boxes: the graph splits at the count)."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper
from onnx.reference import ReferenceEvaluator

import gpudml as dml
import gpudml.onnx as gonnx
from gpudml import reference
from gpudml.kernels import nms as family
from gpudml.ops import non_max_suppression as nms

DT = dml.DataType


def _onnx(boxes, scores, k, iou, score=None, center=0) -> np.ndarray:
    names = ["boxes", "scores", "k", "iou"] + (["score"] if score is not None else [])
    types = [TensorProto.FLOAT, TensorProto.FLOAT, TensorProto.INT64, TensorProto.FLOAT, TensorProto.FLOAT]
    node = helper.make_node("NonMaxSuppression", names, ["y"], center_point_box=center)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info(n, t, None) for n, t in zip(names, types)],
                              [helper.make_tensor_value_info("y", TensorProto.INT64, None)])
    feeds = {"boxes": boxes, "scores": scores, "k": np.array([k], np.int64), "iou": np.array([iou], np.float32)}
    if score is not None:
        feeds["score"] = np.array([score], np.float32)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    return ReferenceEvaluator(model).run(None, feeds)[0]


def _case(rng, b, c, n, center=0):
    boxes = rng.uniform(0, 10, (b, n, 4)).astype(np.float32)
    if center:
        boxes[..., 2:] = rng.uniform(0.5, 4, (b, n, 2))
    scores = rng.integers(0, 8, (b, c, n)).astype(np.float32) / 8  # many equal scores: index order decides
    return boxes, scores


@pytest.mark.parametrize("center", [0, 1])
def test_reference_is_onnxs(center):
    rng = np.random.default_rng(center)
    for k, iou, score in ((3, 0.5, None), (100, 0.2, 0.3), (7, 0.0, 0.5)):
        boxes, scores = _case(rng, 2, 3, 30, center)
        count, selected = reference.non_max_suppression(boxes, scores, k, iou, score, center_point_box=center)
        want = _onnx(boxes, scores, k, iou, score, center)
        assert int(count[0]) == len(want)
        np.testing.assert_array_equal(selected[:len(want)], want)
        assert not selected[len(want):].any() and selected.shape == (2 * 3 * min(k, 30), 3)


@pytest.mark.parametrize("center", [0, 1])
def test_device_matches_the_reference(device, center):
    """Batches, classes, thresholds; every row (the zero rows after the count too)."""
    rng = np.random.default_rng(10 + center)
    for k, iou, score in ((4, 0.5, None), (60, 0.3, 0.25)):
        boxes, scores = _case(rng, 2, 3, 60, center)
        got = dml.non_max_suppression(boxes, scores, k, iou, score, center_point_box=center, device=device)
        want = reference.non_max_suppression(boxes, scores, k, iou, score, center_point_box=center)
        np.testing.assert_array_equal(got[0], want[0])
        np.testing.assert_array_equal(got[1], want[1])


def test_an_iou_equal_to_the_threshold_does_not_suppress(device):
    """IoU([0,0,1,1], [0,0,1,2]) is 1/2 exactly: kept at threshold 0.5 (strictly greater
    suppresses), dropped at the float32 just below; and 1/3 (not a float32: its rounding
    decides) as ONNX's float32 division rounds it."""
    boxes = np.array([[[0, 0, 1, 1], [0, 0, 1, 2], [0, 0, 1, 3]]], np.float32)
    scores = np.array([[[0.9, 0.8, 0.7]]], np.float32)
    third = np.float32(1) / np.float32(3)
    for iou in (0.5, np.nextafter(np.float32(0.5), np.float32(0)), third, np.nextafter(third, np.float32(0))):
        got = dml.non_max_suppression(boxes, scores, 3, float(iou), device=device)
        want = _onnx(boxes, scores, 3, float(iou))
        assert int(got[0][0]) == len(want)
        np.testing.assert_array_equal(got[1][:len(want)], want)


def test_walks_cut_into_dispatches_and_strided_inputs(adapter):
    """1,500 boxes all kept (K = N): the greedy walk takes two dispatches (the loop budget);
    boxes and scores read through strides (the scores a transposed view)."""
    n = 1500
    rng = np.random.default_rng(3)
    boxes = rng.uniform(0, 100, (1, n, 4)).astype(np.float32)
    scores_nc = rng.random((1, n, 2)).astype(np.float32)  # [B, N, C] in memory, read as [B, C, N]
    desc = nms.infer_output(dml.TensorDesc(DT.FLOAT32, (1, n, 4)),
                            dml.TensorDesc(DT.FLOAT32, (1, 2, n), (2 * n, 1, 2)), n, 0.4, 0.2)
    problem = nms.problem(desc)
    assert len(family.plan(problem).dispatches) >= 4  # rank, two greedy walks, write
    want = reference.non_max_suppression(boxes, scores_nc.transpose(0, 2, 1), n, 0.4, 0.2)
    for cls in ("cpu", "gpu"):
        device = dml.Device(adapter=adapter, adapter_class=cls)
        op = device.compile_operator(device.create_operator(desc))
        got = op.execute([boxes, scores_nc.reshape(-1)])
        np.testing.assert_array_equal(np.asarray(got[0]), want[0])
        np.testing.assert_array_equal(np.asarray(got[1]), want[1])


def test_nothing_to_select(vulkan_device):
    """max_output 0: one row of zeros (written over whatever the output held), count 0
    (DirectML sizes are at least 1); a score threshold above every score: count 0 and
    every row zeros."""
    device = vulkan_device
    boxes, scores = _case(np.random.default_rng(4), 1, 1, 5)
    for k, score in ((0, None), (5, 2.0)):
        desc = nms.infer_output(dml.TensorDesc(DT.FLOAT32, boxes.shape), dml.TensorDesc(DT.FLOAT32, scores.shape),
                                k, 0.5, score)
        op = device.compile_operator(device.create_operator(desc))
        rows = desc.output_indices_tensor.sizes[0]
        outputs = [device.tensor(np.array([7], np.uint32)), device.tensor(np.full((rows, 3), -1, np.int64))]
        count, selected = op.execute([boxes, scores], outputs=outputs)
        assert count.numpy().tolist() == [0] and not selected.numpy().any()


def _desc(boxes=(1, 5, 4), scores=(1, 2, 5), rows=10, center=0, k=5, count=(1,), boxes_type=DT.FLOAT32):
    return dml.NonMaxSuppressionOperatorDesc(
        dml.TensorDesc(boxes_type, boxes), dml.TensorDesc(DT.FLOAT32, scores), dml.TensorDesc(DT.UINT32, count),
        dml.TensorDesc(DT.INT64, (rows, 3)), center, k, 0.5, None)


@pytest.mark.any_class
@pytest.mark.parametrize("desc, message", [
    (_desc(boxes=(1, 5, 5)), "NonMaxSuppression: boxes_tensor.sizes [1, 5, 5] must be [B, N, 4]"),
    (_desc(scores=(1, 2, 6)), "scores_tensor.sizes [1, 2, 6] must be [B, C, N] = [1, C, 5]"),
    (_desc(center=2), "center_point_box = 2 must be 0 (corners) or 1"),
    (_desc(rows=9), "output_indices_tensor.sizes [9, 3] must be [max(B * C * K, 1), 3] = [10, 3]"),
    (_desc(count=(2,)), "output_count_tensor.sizes [2] must be [1]"),
    (_desc(boxes_type=DT.FLOAT16), "boxes_tensor.data_type FLOAT16 is not supported"),
    (_desc(boxes=(5, 4)), "boxes_tensor has DimensionCount 2; it must be 3"),
])
def test_bad_descriptions(vulkan_device, desc, message):
    with pytest.raises(dml.InvalidArgumentError) as info:
        vulkan_device.create_operator(desc)
    assert message in str(info.value)


def test_detection_pattern_through_a_session(device):
    """NMS, then the selected boxes gathered by the third column (a detector's tail): the
    graph splits at NMS's count; as onnxruntime for several inputs (counts seen twice reuse
    their part after the split)."""
    nodes = [helper.make_node("NonMaxSuppression", ["boxes", "scores", "k", "iou", "score"], ["sel"]),
             helper.make_node("Gather", ["sel", "two"], ["which"], axis=1),
             helper.make_node("Squeeze", ["boxes", "zero"], ["flat"]),
             helper.make_node("Gather", ["flat", "which"], ["kept"], axis=0),
             helper.make_node("Relu", ["scores"], ["r"])]
    inits = [onnx.numpy_helper.from_array(np.array([20], np.int64), "k"),
             onnx.numpy_helper.from_array(np.array([0.3], np.float32), "iou"),
             onnx.numpy_helper.from_array(np.array([0.1], np.float32), "score"),
             onnx.numpy_helper.from_array(np.array(2, np.int64), "two"),
             onnx.numpy_helper.from_array(np.array([0], np.int64), "zero")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("boxes", TensorProto.FLOAT, [1, 40, 4]),
                                           helper.make_tensor_value_info("scores", TensorProto.FLOAT, [1, 1, 40])],
                              [helper.make_tensor_value_info("kept", TensorProto.FLOAT, None),
                               helper.make_tensor_value_info("r", TensorProto.FLOAT, None)], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    session = gonnx.InferenceSession(model, device=device)
    oracle = ReferenceEvaluator(model)
    rng = np.random.default_rng(5)
    feeds = [dict(zip(("boxes", "scores"), _case(rng, 1, 1, 40))) for _ in range(3)]
    for feed in (*feeds, feeds[0]):
        got, want = session.run(None, feed), oracle.run(None, feed)
        for g, w in zip(got, want):
            np.testing.assert_array_equal(g, w)
    (built,) = session._compiled.values()
    assert built.split is not None and len(built._after) == len({int(len(oracle.run(None, f)[0])) for f in feeds})


@pytest.mark.any_class
def test_command_line(capsys):
    """`gpudml shader` and `gpudml lab` take extensions as DirectML's operators."""
    from gpudml import cli

    assert cli.main(["shader", "non_max_suppression", "--caps", "gl-cpu", "--shape", "1,100,4", "--classes", "2"]) \
        in (0, None)
    out = capsys.readouterr().out
    assert out.startswith("// NonMaxSuppression at") and "fn div_rn" in out and "dispatch 2:" in out


def test_the_specs_example(vulkan_device):
    """The spec's example (ONNX's test_nonmaxsuppression_suppress_by_IOU), through the
    functional form and the reference."""
    for example in nms.SPEC.examples:
        args = dict(example.args)
        scores = args.pop("scores")
        got = dml.non_max_suppression(example.input, scores, device=vulkan_device, **args)
        for g, r, w in zip(got, reference.non_max_suppression(example.input, scores, **args), example.expected):
            np.testing.assert_array_equal(g, w)
            np.testing.assert_array_equal(r, w)


def test_nan_scores_rank_last(vulkan_device):
    """NaN scores (outside what ONNX's reference defines: its Python sort) rank after every
    other score, among themselves by index, so the order stays a permutation: the boxes
    without NaN give the reference's selection first, every row a valid box."""
    boxes, scores = _case(np.random.default_rng(7), 1, 1, 12)
    scores[0, 0, [2, 5]] = np.nan
    count, selected = dml.non_max_suppression(boxes, scores, 12, 0.5, device=vulkan_device)
    clean = np.delete(np.arange(12), [2, 5])
    want = reference.non_max_suppression(boxes[:, clean], scores[:, :, clean], 12, 0.5)
    kept = clean[want[1][:int(want[0][0]), 2]]
    got = selected[:int(count[0]), 2]
    np.testing.assert_array_equal(got[:len(kept)], kept)
    assert set(got[len(kept):]) <= {2, 5} and len(set(got)) == len(got)
