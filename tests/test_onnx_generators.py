"""ConstantOfShape, Range, EyeLike and Trilu through a session, beyond ONNX's node tests
(tests/test_onnx_nodes.py, tests/test_onnx_session.py): a generator whose parameters come
from the graph's inputs is a graph node built per distinct value (value inputs), one of
constants is folded as onnxruntime folds it; the 64-bit types through DIAGONAL_MATRIX1;
Trilu's k at INT64's limits; EyeLike's dtype."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper

import gpudml.onnx as gonnx
from gpudml.errors import UnsupportedError


def _model(nodes, inputs, outputs, opset=21):
    graph = helper.make_graph(nodes, "g", inputs, outputs)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def test_constant_of_shape_of_an_input_is_a_graph_node_per_value(device):
    """The shape a graph input: one build per distinct shape value, each one generator node
    (FILL_VALUE_CONSTANT), the int64 value's bits through DIAGONAL_MATRIX1."""
    value = helper.make_tensor("v", TensorProto.INT64, [1], [-(2**62) - 3])
    model = _model([helper.make_node("ConstantOfShape", ["shape"], ["y"], value=value)],
                   [helper.make_tensor_value_info("shape", TensorProto.INT64, [3])],
                   [helper.make_tensor_value_info("y", TensorProto.INT64, None)])
    sess = gonnx.InferenceSession(model, device=device)
    assert sess.value_inputs == ["shape"]
    for sizes in ([2, 3, 4], [1, 5, 2], [2, 3, 4]):
        (got,) = sess.run(None, {"shape": np.array(sizes, np.int64)})
        assert got.dtype == np.int64 and np.array_equal(got, np.full(sizes, -(2**62) - 3, np.int64))
        assert sess.dispatch_count == 1


def test_range_of_inputs_and_of_constants(device):
    """Range of graph inputs runs FILL_VALUE_SEQUENCE (int64 exact beyond 2^53); of
    initializers it is folded (no dispatch)."""
    start, delta = 2**60 + 1, 2**55 + 3
    model = _model([helper.make_node("Range", ["a", "b", "d"], ["y"])],
                   [helper.make_tensor_value_info(n, TensorProto.INT64, []) for n in "abd"],
                   [helper.make_tensor_value_info("y", TensorProto.INT64, None)])
    sess = gonnx.InferenceSession(model, device=device)
    (got,) = sess.run(None, {"a": np.array(start), "b": np.array(start + 5 * delta), "d": np.array(delta)})
    assert np.array_equal(got, np.array([start + i * delta for i in range(5)], np.int64))
    assert sess.dispatch_count == 1
    init = [helper.make_tensor(n, TensorProto.FLOAT, [], [v]) for n, v in (("a", 1.0), ("b", 4.0), ("d", 0.5))]
    graph = helper.make_graph([helper.make_node("Range", ["a", "b", "d"], ["r"]),
                               helper.make_node("Add", ["r", "x"], ["y"])], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [6])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [6])], init)
    sess = gonnx.InferenceSession(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)]),
                                  device=device)
    (got,) = sess.run(None, {"x": np.zeros(6, np.float32)})
    assert np.array_equal(got, np.arange(1.0, 4.0, 0.5, dtype=np.float32)) and sess.dispatch_count == 1


@pytest.mark.parametrize("elem, dtype", [(TensorProto.INT64, np.int64), (TensorProto.DOUBLE, np.float64),
                                         (TensorProto.FLOAT16, np.float16), (TensorProto.BOOL, np.bool_)])
def test_eye_like_types(device, elem, dtype):
    model = _model([helper.make_node("EyeLike", ["x"], ["y"], k=-1, dtype=elem)],
                   [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 4])],
                   [helper.make_tensor_value_info("y", elem, [3, 4])])
    (got,) = gonnx.InferenceSession(model, device=device).run(None, {"x": np.zeros((3, 4), np.float32)})
    assert got.dtype == dtype and np.array_equal(got, np.eye(3, 4, -1, dtype=dtype))


@pytest.mark.parametrize("k", [-(2**63), -3, 0, 2, 2**63 - 1])
@pytest.mark.parametrize("upper", [0, 1])
def test_trilu_k_anywhere(device, k, upper):
    """k of any INT64 (beyond INT32's range no element lies on that diagonal), a 4-D uint64 input."""
    x = (np.arange(2 * 3 * 4 * 5, dtype=np.uint64) + np.uint64(2**63)).reshape(2, 3, 4, 5)
    model = _model([helper.make_node("Trilu", ["x", "k"], ["y"], upper=upper)],
                   [helper.make_tensor_value_info("x", TensorProto.UINT64, x.shape),
                    helper.make_tensor_value_info("k", TensorProto.INT64, [])],
                   [helper.make_tensor_value_info("y", TensorProto.UINT64, x.shape)])
    (got,) = gonnx.InferenceSession(model, device=device).run(None, {"x": x, "k": np.array(k, np.int64)})
    kk = min(max(k, -100), 100)
    assert np.array_equal(got, np.triu(x, kk) if upper else np.tril(x, kk))


def test_trilu_of_five_dimensions_is_refused(device):
    model = _model([helper.make_node("Trilu", ["x"], ["y"])],
                   [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 1, 2, 2])],
                   [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 1, 1, 2, 2])])
    with pytest.raises(UnsupportedError, match="Trilu of 5 dimensions: DIAGONAL_MATRIX1 takes 2 to 4"):
        gonnx.InferenceSession(model, device=device)


@pytest.mark.parametrize("start, limit, delta, want", [
    (np.float32(0.1), np.float32(1.0), np.float32(0.3), None),           # ceil((1.0 - 0.1) / 0.3) elements
    (np.int16(10), np.int16(-7), np.int16(-4), np.array([10, 6, 2, -2, -6], np.int16)),
    (np.float32(1.0), np.float32(1.0), np.float32(1.0), np.zeros([0], np.float32)),
    (np.int32(1), np.int32(5), np.int32(0), "Range with delta 0"),
    (np.float32(0.0), np.float32(np.inf), np.float32(1.0), "no finite element count"),
])
def test_range_counts_as_onnxruntime(device, start, limit, delta, want):
    """limit - start in the inputs' type, divided in double, ceil: onnxruntime's count; none,
    a zero step or an infinite span refused with the reason."""
    elem = {np.dtype(np.float32): TensorProto.FLOAT, np.dtype(np.int16): TensorProto.INT16,
            np.dtype(np.int32): TensorProto.INT32}[np.asarray(start).dtype]
    model = _model([helper.make_node("Range", ["a", "b", "d"], ["y"])],
                   [helper.make_tensor_value_info(n, elem, []) for n in "abd"],
                   [helper.make_tensor_value_info("y", elem, None)])
    feeds = {"a": np.array(start), "b": np.array(limit), "d": np.array(delta)}
    if isinstance(want, str):
        with pytest.raises((UnsupportedError, gonnx.mapping.NotMapped), match=want):
            gonnx.InferenceSession(model, device=device).run(None, feeds)
        return
    (got,) = gonnx.InferenceSession(model, device=device).run(None, feeds)
    if want is None:
        count = int(np.ceil(float(np.float32(limit) - np.float32(start)) / float(delta)))
        want = (start + np.arange(count, dtype=np.float64) * np.float64(delta)).astype(np.float32)
        np.testing.assert_allclose(got, want, rtol=1e-6)
    else:
        assert got.dtype == want.dtype and np.array_equal(got, want)
