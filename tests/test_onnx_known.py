"""gpudml.onnx.InferenceSession: dimensions as onnxruntime reads them (docs/onnx.md).

- A dim_param, -1 (paddle2onnx's dynamic dimension), 0 and no shape at all are dynamic; a
  feed is checked against the fixed dimensions only, a wrong one named by input and axis.
"""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import gpudml.onnx as gonnx
from gpudml.errors import InvalidArgumentError


def _model(nodes, inputs, outputs, inits=(), opset=17):
    graph = helper.make_graph(nodes, "m", inputs, outputs, list(inits))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def _vi(name, shape, t=TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, t, shape)


def _init(name, value):
    return numpy_helper.from_array(np.asarray(value), name)


def oracle(model, feeds):
    """onnxruntime's CPU provider where importable, else onnx's reference evaluator."""
    try:
        import onnxruntime
    except ImportError:
        from onnx.reference import ReferenceEvaluator
        return ReferenceEvaluator(model).run(None, feeds), None
    session = onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return session.run(None, feeds), session


# ------------------------------------------------------------------------------ dimensions
def _paddle_classifier():
    """The shape of a paddle2onnx OCR direction classifier's head: [-1, 3, '?', '?'] in,
    pooled, a linear layer and Softmax out ([-1, 2])."""
    nodes = [helper.make_node("GlobalAveragePool", ["x"], ["p"]),
             helper.make_node("Flatten", ["p"], ["f"]),
             helper.make_node("MatMul", ["f", "w"], ["m"]),
             helper.make_node("Softmax", ["m"], ["y"], axis=-1)]
    w = np.array([[0.5, -1.0], [2.0, 0.25], [-0.75, 1.5]], np.float32)
    return _model(nodes, [_vi("x", [-1, 3, "?", "?"])], [_vi("y", [-1, 2])], [_init("w", w)])


def test_paddle_minus_one_dimensions_run_as_onnxruntime(device):
    model = _paddle_classifier()
    session = gonnx.InferenceSession(model, device=device)
    x = np.random.default_rng(0).standard_normal((1, 3, 48, 192)).astype(np.float32)
    (got,) = session.run(None, {"x": x})
    (want,), ort = oracle(model, {"x": x})
    np.testing.assert_allclose(got, want, atol=1e-5)
    assert session.get_inputs()[0].shape == [None, 3, "?", "?"]  # as onnxruntime's NodeArg reads -1
    if ort is not None:
        assert session.get_inputs()[0].shape == ort.get_inputs()[0].shape


def test_no_input_shape_and_zero_dimension_are_dynamic(device):
    """An input with no shape takes any rank and sizes; dim_value 0 is a dynamic dimension
    (onnxruntime takes it as a fixed 0 and refuses other sizes; gpudml runs no empty tensor)."""
    nodes = [helper.make_node("Relu", ["x"], ["y"]),
             helper.make_node("Add", ["z", "one"], ["w"])]
    model = _model(nodes, [_vi("x", None), _vi("z", [0, 2])], [_vi("y", None), _vi("w", [0, 2])],
                   [_init("one", np.float32(1))])
    session = gonnx.InferenceSession(model, device=device)
    rng = np.random.default_rng(1)
    for shape in [(3,), (2, 3)]:
        feeds = {"x": rng.standard_normal(shape).astype(np.float32),
                 "z": rng.standard_normal((3, 2)).astype(np.float32)}
        got = session.run(None, feeds)
        np.testing.assert_array_equal(got[0], np.maximum(feeds["x"], 0))
        np.testing.assert_array_equal(got[1], feeds["z"] + 1)
    assert len(session._compiled) == 2
    assert [a.shape for a in session.get_inputs()] == [[], [0, 2]]  # onnxruntime's NodeArg shapes


def test_a_wrong_fixed_dimension_names_the_input_and_the_axis():
    session = gonnx.InferenceSession(_paddle_classifier())
    x = np.zeros((1, 4, 48, 192), np.float32)
    with pytest.raises(InvalidArgumentError, match=re_escape(
            "input 'x' has shape [1, 4, 48, 192], the model's is [-1, 3, '?', '?']: axis 1 is 4, the model fixes "
            "it at 3")):
        session.run(None, {"x": x})
    with pytest.raises(InvalidArgumentError, match=re_escape(
            "input 'x' has shape [3, 48, 192], the model's is [-1, 3, '?', '?']: rank 3, the model's is 4")):
        session.run(None, {"x": x[0, :3]})


def re_escape(text: str) -> str:
    import re
    return re.escape(text)
