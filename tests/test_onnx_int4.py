"""4-bit tensors computed at run time in a session (gpudml/onnx/nbits.py): QuantizeLinear to
INT4/UINT4 (DML_OPERATOR_QUANTIZE's 4-bit output, its bytes on the graph), a
QuantizeLinear -> DequantizeLinear pair, 4-bit graph inputs (ml_dtypes int4/uint4 feeds, packed
on the host) and outputs (read back as the ml_dtypes arrays), odd last sizes, a run-time 4-bit
zero point; against onnx's reference evaluator, bit-exact. What is refused names the node and
why: Cast to or from INT4 (ONNX Runtime's DirectML provider registers Cast for 8- to 64-bit
types only), another op reading a 4-bit value. onnxruntime 1.32's Python API can neither take
an int4 feed nor return an int4 output (its run raises), so the reference is onnx's."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from onnx import TensorProto, helper
from onnx.reference import ReferenceEvaluator

import gpudml as dml
import gpudml.onnx as gonnx

F32 = np.float32
TYPES = {"int4": (TensorProto.INT4, ml_dtypes.int4, (-8, 8)), "uint4": (TensorProto.UINT4, ml_dtypes.uint4, (0, 16))}


def _model(nodes, inputs, outputs, initializers=()):
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info(*i) for i in inputs],
                              [helper.make_tensor_value_info(*o) for o in outputs], list(initializers))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])
    model.ir_version = 10
    return model


def _same(got, want):
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, got.shape, want.dtype, want.shape)
    np.testing.assert_array_equal(got.astype(np.float64), want.astype(np.float64))


@pytest.mark.parametrize("kind", ["int4", "uint4"])
@pytest.mark.parametrize("shape, axis, block", [([3, 5], 0, 0), ([2, 8], 1, 4), ([7], None, 0)])
def test_quantize_dequantize_pair_and_4bit_output(kind, shape, axis, block, device):
    """x -> QuantizeLinear (INT4/UINT4: per axis, blocked, per tensor) -> q (a graph output, the
    ml_dtypes values) -> DequantizeLinear -> y: the 4-bit value never leaves the device between."""
    onnx_type, dtype, (lo, hi) = TYPES[kind]
    rng = np.random.default_rng(3)
    x = (rng.integers(-40, 40, shape) / 4).astype(F32)
    if block:
        s_shape = [shape[0], shape[1] // block]
    elif axis is not None:
        s_shape = [shape[axis]]
    else:
        s_shape = []
    scale = rng.choice([0.5, 0.75, 2.0], s_shape).astype(F32)
    zero = rng.integers(lo, hi, s_shape).astype(dtype)
    attrs = {k: v for k, v in {"axis": axis, "block_size": block or None}.items() if v is not None}
    nodes = [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"], **attrs),
             helper.make_node("DequantizeLinear", ["q", "s", "z"], ["y"], **attrs)]
    inits = [helper.make_tensor("s", TensorProto.FLOAT, s_shape, scale.reshape(-1)),
             helper.make_tensor("z", onnx_type, s_shape, zero.astype(np.int64).reshape(-1))]
    model = _model(nodes, [("x", TensorProto.FLOAT, shape)], [("q", onnx_type, shape), ("y", TensorProto.FLOAT, shape)],
                   inits)
    want = ReferenceEvaluator(model).run(None, {"x": x})
    got = gonnx.InferenceSession(model, device=device).run(None, {"x": x})
    _same(got[0], want[0])
    _same(got[1], want[1])


@pytest.mark.parametrize("kind", ["int4", "uint4"])
def test_4bit_graph_inputs_and_a_runtime_zero_point(kind, device):
    """A 4-bit feed x [2, 5] (odd rows) and zero point z [2] (fed: a run-time zero point, one a
    byte on the device) into DequantizeLinear per axis; and z into a QuantizeLinear as well."""
    onnx_type, dtype, (lo, hi) = TYPES[kind]
    rng = np.random.default_rng(5)
    x = rng.integers(lo, hi, (2, 5)).astype(dtype)
    z = rng.integers(lo, hi, 2).astype(dtype)
    f = (rng.integers(-30, 30, (2, 5)) / 2).astype(F32)
    scale = np.array([0.5, 2.0], F32)
    nodes = [helper.make_node("DequantizeLinear", ["x", "s", "z"], ["y"], axis=0),
             helper.make_node("QuantizeLinear", ["f", "s", "z"], ["q"], axis=0)]
    model = _model(nodes, [("x", onnx_type, [2, 5]), ("z", onnx_type, [2]), ("f", TensorProto.FLOAT, [2, 5])],
                   [("y", TensorProto.FLOAT, [2, 5]), ("q", onnx_type, [2, 5])],
                   [helper.make_tensor("s", TensorProto.FLOAT, [2], scale)])
    feeds = {"x": x, "z": z, "f": f}
    want = ReferenceEvaluator(model).run(None, feeds)
    session = gonnx.InferenceSession(model, device=device)
    got = session.run(None, feeds)
    _same(got[0], want[0])
    _same(got[1], want[1])
    assert session.get_inputs()[0].type == f"tensor({kind})"
    with pytest.raises(dml.UnsupportedError, match=rf"io_binding: 'x' is a tensor\({kind}\): an IOBinding binds "
                                                   r"gpudml Tensors, which have no 4-bit type"):
        session.io_binding()
    with pytest.raises(dml.InvalidArgumentError, match=f"input 'x' has dtype int8, the model's is {kind}"):
        session.run(None, {**feeds, "x": x.astype(np.int8)})


def test_refusals_name_the_node_and_why(device):
    """Cast from INT4 (the provider registers Cast for 8- to 64-bit types), and an Identity of a
    4-bit value: refused when the session is made, the node named."""
    cast = _model([helper.make_node("Cast", ["x"], ["y"], to=TensorProto.FLOAT, name="to_float")],
                  [("x", TensorProto.INT4, [4])], [("y", TensorProto.FLOAT, [4])])
    with pytest.raises(dml.UnsupportedError, match=r"to_float \(Cast.*a Cast to or from INT4: ONNX Runtime's "
                                                   r"DirectML provider registers Cast for 8- to 64-bit types only"):
        gonnx.InferenceSession(cast, device=device)
    ident = _model([helper.make_node("Identity", ["x"], ["y"], name="copy")],
                   [("x", TensorProto.UINT4, [4])], [("y", TensorProto.UINT4, [4])])
    with pytest.raises(dml.UnsupportedError, match=r"copy \(Identity.*reads the 4-bit \(UINT4\) value 'x' computed "
                                                   r"at run time"):
        gonnx.InferenceSession(ident, device=device)
    one = _model([helper.make_node("DequantizeLinear", ["x", "s"], ["y"], name="dq")],
                 [("x", TensorProto.INT4, [3, 1])], [("y", TensorProto.FLOAT, [3, 1])],
                 [helper.make_tensor("s", TensorProto.FLOAT, [], [1.0])])
    with pytest.raises(dml.UnsupportedError, match=r"dq \(DequantizeLinear.*a 4-bit DequantizeLinear input of "
                                                   r"shape \[3, 1\].*a last size of 2 or more"):
        gonnx.InferenceSession(one, device=device)
