"""Quantized ONNX models through gpudml.onnx.InferenceSession, against onnxruntime's CPU provider.

Host folding that does not depend on onnx's reference evaluator's opset coverage (a constant
DequantizeLinear before opset 19, what onnxruntime's quantization tool writes at opset 17; a
constant node the evaluator has no implementation of runs on the device); QuantizeLinear kept
out of a GEMM's or convolution's store (fusion.NOT_IN_STORE: inlined in a register tile's
every store it made kernels that LLVM-based adapters compiled for minutes); and the QDQ models
of tests/data/models/quantized/ (scripts/export_quantized.py) run as written.
"""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import helper, numpy_helper

import gpudml as dml
import gpudml.onnx as gonnx
from gpudml.graph import Graph

ort = pytest.importorskip("onnxruntime")

QUANTIZED = Path(__file__).parent / "data" / "models" / "quantized"


def _model(nodes, inputs, outputs, initializers, opset: int) -> onnx.ModelProto:
    graph = helper.make_graph(nodes, "g", inputs, outputs, initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def _ort(model, feeds, level=None):
    options = ort.SessionOptions()
    if level is not None:
        options.graph_optimization_level = level
    session = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    return session.run(None, feeds)


@pytest.mark.parametrize("opset", [10, 13, 17, 19, 21])
def test_constant_dequantize_folds_at_every_opset(opset, device):
    """DequantizeLinear of an initializer (a QDQ model's weights) is folded on the host at
    every opset: onnx's reference evaluator has no DequantizeLinear before 19 (session.FOLD_AS)."""
    rng = np.random.default_rng(opset)
    w = rng.integers(-128, 128, (16, 8), dtype=np.int8)
    axis = {} if opset < 13 else {"axis": 1}
    scale = np.float32(0.02) if opset < 13 else rng.uniform(0.01, 0.05, 8).astype(np.float32)
    nodes = [helper.make_node("DequantizeLinear", ["w", "s"], ["wf"], **axis),
             helper.make_node("MatMul", ["x", "wf"], ["y"])]
    model = _model(nodes, [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [4, 16])],
                   [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [4, 8])],
                   [numpy_helper.from_array(w, "w"), numpy_helper.from_array(scale, "s")], opset)
    x = rng.standard_normal((4, 16)).astype(np.float32)
    session = gonnx.InferenceSession(model, device=device)
    # (onnxruntime's optimizations off: at its default level its CPU provider rewrites the
    # DequantizeLinear-MatMul pair into an integer product of x quantized: 1% apart)
    (got,), (want,) = session.run(None, {"x": x}), _ort(model, {"x": x}, ort.GraphOptimizationLevel.ORT_DISABLE_ALL)
    np.testing.assert_allclose(got, want, rtol=0, atol=gonnx.session.TOLERANCE * np.abs(want).max())
    assert session.dispatch_count == 1  # the MatMul alone: the dequantized weights are a constant


def test_constant_node_without_host_implementation_runs_on_device(device):
    """A node whose inputs are all constants and which onnx's reference evaluator cannot run
    (GlobalLpPool: no implementation at any version) runs on the device instead of refusing
    the model."""
    c = np.random.default_rng(0).standard_normal((1, 3, 4, 4)).astype(np.float32)
    nodes = [helper.make_node("GlobalLpPool", ["c"], ["p"], p=2), helper.make_node("Add", ["x", "p"], ["y"])]
    model = _model(nodes, [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [1, 3, 1, 1])],
                   [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [1, 3, 1, 1])],
                   [numpy_helper.from_array(c, "c")], 17)
    x = np.ones((1, 3, 1, 1), np.float32)
    got = gonnx.InferenceSession(model, device=device).run(None, {"x": x})[0]
    want = x + np.sqrt((c.astype(np.float64) ** 2).sum(axis=(2, 3), keepdims=True))
    np.testing.assert_allclose(got, want, rtol=1e-5)


@pytest.mark.parametrize("producer", ["gemm", "convolution"])
def test_quantize_linear_not_fused_into_a_store(producer, device):
    """GEMM/convolution then QuantizeLinear: two kernels (the quantization's own element-wise
    kernel), whose bytes equal the unfused graph's; the graph compiles and runs in seconds."""
    rng = np.random.default_rng(1)
    graph = Graph(device)
    if producer == "gemm":
        a = rng.standard_normal((24, 40)).astype(np.float32)
        x = graph.input(a.shape, np.float32, "x")
        value = dml.gemm(x, graph.constant(rng.standard_normal((40, 16)).astype(np.float32)))
    else:
        a = rng.standard_normal((1, 8, 12, 12)).astype(np.float32)
        x = graph.input(a.shape, np.float32, "x")
        value = dml.convolution(x, graph.constant(rng.standard_normal((8, 8, 3, 3)).astype(np.float32)),
                                start_padding=[1, 1], end_padding=[1, 1])
    y = dml.quantize_linear(value, graph.constant(np.array([0.07], np.float32)), graph.constant(np.array([3], np.int8)))
    fused, unfused = graph.compile([y]), graph.compile([y], fuse=False)
    assert fused.dispatch_count == 2 and [s.name for s in fused.steps][1] == "ElementWiseQuantizeLinear"
    got, want = fused({"x": a})[0], unfused({"x": a})[0]
    assert got.dtype == np.int8 and np.array_equal(got, want)
    assert len(np.unique(got)) > 20  # (values spread over the int8 range: not all saturated or zero)


def _load(name: str) -> onnx.ModelProto:
    return onnx.load_from_string(gzip.decompress((QUANTIZED / f"{name}.onnx.gz").read_bytes()))


def _image(seed: int = 7) -> np.ndarray:
    return np.random.default_rng(seed).random((1, 3, 64, 64), dtype=np.float32)


@pytest.mark.slow
def test_qdq_resnet18(device):
    """onnxruntime's quantize_static QDQ ResNet-18 at opset 17 (int8 activations, per-channel
    weights), against onnxruntime's CPU provider: as gpudml's session runs it (its residual
    Adds as QLinearAdd; its int8 convolutions stay DQ -> Conv -> Q, as on x86-64) against
    onnxruntime on the same rewritten model, and at ORT_ENABLE_BASIC (every pair as written)
    against onnxruntime with its optimizations off. A float convolution's result that lands
    within rounding of a half step of the next QuantizeLinear's scale may round to the
    neighbouring level (the sums' order differs) and carry through: measured 0 steps of the
    logits' scale on two images of three, 4 on the third; asserted within 8, the same class."""
    from gpudml.onnx import qdq

    model = _load("resnet18_qdq")
    x = _image()
    off = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    got = gonnx.InferenceSession(model, device=device).run(None, {"x": x})[0]
    want = _ort(qdq.fuse(model), {"x": x}, off)[0]
    assert _steps_apart(model, got, want).max() <= 8 and np.argmax(got) == np.argmax(want)
    basic = gonnx.SessionOptions(graph_optimization_level=gonnx.GraphOptimizationLevel.ORT_ENABLE_BASIC)
    written = gonnx.InferenceSession(model, basic, device=device).run(None, {"x": x})[0]
    want = _ort(model, {"x": x}, off)[0]
    assert _steps_apart(model, written, want).max() <= 8 and np.argmax(written) == np.argmax(want)


def _output_step(model) -> float:
    """The scale of the last DequantizeLinear before the graph's output (one quantization step
    of the logits)."""
    inits = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    producers = {o: n for n in model.graph.node for o in n.output}
    node = producers[model.graph.output[0].name]
    while node.op_type != "DequantizeLinear":
        node = producers[node.input[0]]
    return float(inits[node.input[1]])


# ------------------------------------------------------------- QDQ groups as the provider gets them
def _qdq_pool_model(same_params: bool = True) -> onnx.ModelProto:
    """x -> Q -> DQ -> MaxPool -> Q -> DQ -> ArgMax over the channels, and the pooled values."""
    out_scale = 0.05 if same_params else 0.06
    nodes = [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["xq"]),
             helper.make_node("DequantizeLinear", ["xq", "s", "z"], ["xd"]),
             helper.make_node("MaxPool", ["xd"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
             helper.make_node("QuantizeLinear", ["p", "s2", "z"], ["pq"]),
             helper.make_node("DequantizeLinear", ["pq", "s2", "z"], ["y"]),
             helper.make_node("DequantizeLinear", ["pq", "s2", "z"], ["pd"]),
             helper.make_node("ArgMax", ["pd"], ["best"], axis=1)]
    inits = [numpy_helper.from_array(np.float32(0.05), "s"), numpy_helper.from_array(np.float32(out_scale), "s2"),
             numpy_helper.from_array(np.uint8(128), "z")]
    return _model(nodes, [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [1, 4, 6, 6])],
                  [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [1, 4, 3, 3]),
                   helper.make_tensor_value_info("best", onnx.TensorProto.INT64, [1, 1, 3, 3])], inits, 17)


def test_qdq_drop_rules_run_on_the_integers(device):
    """DQ -> MaxPool -> Q with one scale and zero point runs MaxPool on the integers; DQ ->
    ArgMax reads them: the results equal the model run as written (onnxruntime, optimizations
    off) exactly; a group whose scales differ stays as written."""
    from gpudml.onnx import qdq

    model = _qdq_pool_model()
    fused = qdq.fuse(model)
    ops = [n.op_type for n in fused.graph.node]
    assert ops == ["QuantizeLinear", "MaxPool", "DequantizeLinear", "ArgMax"], ops
    x = np.random.default_rng(3).standard_normal((1, 4, 6, 6)).astype(np.float32) * 3
    want = _ort(model, {"x": x}, ort.GraphOptimizationLevel.ORT_DISABLE_ALL)
    for options in (None, gonnx.SessionOptions(graph_optimization_level=gonnx.GraphOptimizationLevel.ORT_DISABLE_ALL)):
        got = gonnx.InferenceSession(model, options, device=device).run(None, {"x": x})
        assert np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1])
    assert [n.op_type for n in qdq.fuse(_qdq_pool_model(same_params=False)).graph.node].count("MaxPool") == 1
    assert len(qdq.fuse(_qdq_pool_model(same_params=False)).graph.node) == 6  # (only ArgMax's DQ dropped)


def test_qdq_int8_conv_stays_float_unless_allowed():
    """An INT8-activation DQ -> Conv -> Q group is not rewritten by default (onnxruntime's
    QDQIsInt8Allowed() is false on x86-64, where DirectML's provider runs), and the session
    config entry turns the rule on (QLinearConv where gpudml maps it)."""
    from gpudml.onnx import mapping, qdq

    model = _load("resnet18_qdq")
    assert [n.op_type for n in qdq.fuse(model).graph.node].count("Conv") == 20
    allowed = gonnx.SessionOptions()
    allowed.add_session_config_entry(qdq.INT8_ALLOWED_KEY, "1")
    convs = [n.op_type for n in qdq.fuse(model, qdq.int8_allowed(allowed)).graph.node].count("Conv")
    assert convs == (0 if mapping.row("QLinearConv", "") is not None else 20)
    assert not qdq.int8_allowed(gonnx.SessionOptions()) and not qdq.int8_allowed(None)


@pytest.mark.parametrize("quantized_output", [False, True])
@pytest.mark.parametrize("trans_b", [0, 1])
def test_qgemm_matches_onnxruntime_exactly(quantized_output, trans_b, device):
    """com.microsoft QGemm (quantize_static's QOperator Gemm): uint8 A, int8 B with a scale
    per column, an INT32 bias, alpha; float output, or uint8 requantized: onnxruntime's CPU
    kernel's values exactly (one rounding of acc * alpha a_scale b_scale / y_scale)."""
    rng = np.random.default_rng(trans_b)
    m, k, n = 5, 64, 10
    a = rng.integers(0, 256, (m, k), dtype=np.uint8)
    b = rng.integers(-128, 128, (n, k) if trans_b else (k, n), dtype=np.int8)
    inits = [numpy_helper.from_array(np.float32(0.02), "as"), numpy_helper.from_array(np.uint8(120), "az"),
             numpy_helper.from_array(b, "B"),
             numpy_helper.from_array(rng.uniform(0.001, 0.01, n).astype(np.float32), "bs"),
             numpy_helper.from_array(np.zeros(n, np.int8), "bz"),
             numpy_helper.from_array(rng.integers(-5000, 5000, n, dtype=np.int32), "C")]
    inputs = ["A", "as", "az", "B", "bs", "bz", "C"]
    out_type = onnx.TensorProto.FLOAT
    if quantized_output:
        inits += [numpy_helper.from_array(np.float32(0.05), "ys"), numpy_helper.from_array(np.uint8(7), "yz")]
        inputs += ["ys", "yz"]
        out_type = onnx.TensorProto.UINT8
    node = helper.make_node("QGemm", inputs, ["Y"], domain="com.microsoft", alpha=0.75, transB=trans_b)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("A", onnx.TensorProto.UINT8, [m, k])],
                              [helper.make_tensor_value_info("Y", out_type, [m, n])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17),
                                                    helper.make_opsetid("com.microsoft", 1)])
    got, want = gonnx.InferenceSession(model, device=device).run(None, {"A": a})[0], _ort(model, {"A": a})[0]
    assert got.dtype == want.dtype and np.array_equal(got, want)
    assert len(np.unique(want)) > 10


@pytest.mark.parametrize("direction", ["forward", "bidirectional"])
@pytest.mark.parametrize("per_column", [False, True])
def test_dynamic_quantize_lstm(direction, per_column, device):
    """com.microsoft DynamicQuantizeLSTM: the float LSTM of the dequantized weights (onnxruntime's
    LSTM on those weights, within the session's tolerance), and within 2% of the largest output
    of onnxruntime's DynamicQuantizeLSTM (which also quantizes X and the hidden state to uint8
    at every step)."""
    rng = np.random.default_rng(per_column)
    steps, batch, size, hidden = 6, 2, 5, 8
    dirs = 2 if direction == "bidirectional" else 1
    w = rng.integers(-128, 128, (dirs, size, 4 * hidden), dtype=np.int8)
    r = rng.integers(-128, 128, (dirs, hidden, 4 * hidden), dtype=np.int8)
    sizes = (dirs, 4 * hidden) if per_column else (dirs,)
    ws, rs = (rng.uniform(0.002, 0.004, sizes).astype(np.float32) for _ in range(2))
    wz, rz = np.zeros(sizes, np.int8), np.zeros(sizes, np.int8)  # (onnxruntime's kernel requires 0)
    bias = (rng.standard_normal((dirs, 8 * hidden)) * 0.1).astype(np.float32)
    outputs = [helper.make_tensor_value_info(o, onnx.TensorProto.FLOAT, None) for o in ("Y", "Yh", "Yc")]
    x_info = [helper.make_tensor_value_info("X", onnx.TensorProto.FLOAT, [steps, batch, size])]
    inits = [numpy_helper.from_array(v, k) for k, v in
             {"W": w, "R": r, "B": bias, "ws": ws, "wz": wz, "rs": rs, "rz": rz}.items()]
    node = helper.make_node("DynamicQuantizeLSTM", ["X", "W", "R", "B", "", "", "", "", "ws", "wz", "rs", "rz"],
                            ["Y", "Yh", "Yc"], domain="com.microsoft", hidden_size=hidden, direction=direction)
    model = helper.make_model(helper.make_graph([node], "g", x_info, outputs, inits),
                              opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)])
    per = (slice(None), None, None) if not per_column else (slice(None), None, slice(None))
    wf = ((w.astype(np.float32) - wz.astype(np.float32)[per]) * ws[per]).transpose(0, 2, 1)
    rf = ((r.astype(np.float32) - rz.astype(np.float32)[per]) * rs[per]).transpose(0, 2, 1)
    float_inits = [numpy_helper.from_array(np.ascontiguousarray(v), k)
                   for k, v in {"W": wf, "R": rf, "B": bias}.items()]
    lstm = helper.make_node("LSTM", ["X", "W", "R", "B"], ["Y", "Yh", "Yc"], hidden_size=hidden, direction=direction)
    float_model = helper.make_model(helper.make_graph([lstm], "g", x_info, outputs, float_inits),
                                    opset_imports=[helper.make_opsetid("", 17)])
    x = rng.standard_normal((steps, batch, size)).astype(np.float32)
    got = gonnx.InferenceSession(model, device=device).run(None, {"X": x})
    for g, f, q in zip(got, _ort(float_model, {"X": x}), _ort(model, {"X": x})):
        np.testing.assert_allclose(g, f, rtol=0, atol=gonnx.session.TOLERANCE * np.abs(f).max())
        assert np.abs(g - q).max() <= 0.02 * np.abs(q).max()


# ------------------------------------------------------------------- models quantized by onnxruntime's tool
def test_dynamically_quantized_bert(device):
    """bert.onnx through quantize_dynamic: each MatMul with a constant weight a
    DynamicQuantizeLinear of its input (uint8, ONNX's min/max range), MatMulInteger with the int8
    weights and a float rescale: within the session's tolerance of onnxruntime's CPU provider
    (the integer sums are exact; the float rescales and everything after them are float32)."""
    rng = np.random.default_rng(0)
    feeds = {"input_ids": rng.integers(0, 96, (2, 7)).astype(np.int64), "attention_mask": np.ones((2, 7), np.int64),
             "token_type_ids": np.zeros((2, 7), np.int64)}
    feeds["attention_mask"][1, 5:] = 0
    model = _load("bert_dynamic")
    got = gonnx.InferenceSession(model, device=device).run(None, feeds)
    for g, w in zip(got, _ort(model, feeds)):
        np.testing.assert_allclose(g, w, rtol=0, atol=gonnx.session.TOLERANCE * np.abs(w).max())


def _steps_apart(model, got, want) -> np.ndarray:
    """|got - want| in quantization steps of the logits (the last DequantizeLinear's scale)."""
    return np.abs(got.astype(np.float64) - want.astype(np.float64)) / _output_step(model)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["resnet18_qop", "mobilenet_v2_qop"])
def test_qoperator_models(name, device):
    """quantize_static's QOperator models (QLinearConv per channel, QLinearAdd,
    QLinearGlobalAveragePool, QGemm; uint8 activations) against onnxruntime's CPU provider:
    integer arithmetic throughout, each requantization one rounding: the quantized logits
    equal onnxruntime's."""
    model = _load(name)
    x = _image()
    got = gonnx.InferenceSession(model, device=device).run(None, {"x": x})[0]
    want = _ort(model, {"x": x})[0]
    assert np.array_equal(got, want)


@pytest.mark.slow
def test_qdq_mobilenet_v2_fused_as_the_provider_does(device):
    """A uint8-activation QDQ MobileNetV2: its 52 DQ -> Conv -> Q groups run as QLinearConv and
    its 10 residual Adds as QLinearAdd (gpudml/onnx/qdq.py): the quantized logits equal
    onnxruntime's CPU provider's on the same rewritten model; run as written (float operators
    between the pairs: ORT_ENABLE_BASIC, onnxruntime's optimizations off), within a few steps."""
    from gpudml.onnx import qdq

    model = _load("mobilenet_v2_qdq")
    fused = qdq.fuse(model)
    ops = [n.op_type for n in fused.graph.node]
    assert (ops.count("QLinearConv"), ops.count("QLinearAdd"), ops.count("Conv")) == (52, 10, 0)
    x = _image()
    got = gonnx.InferenceSession(model, device=device).run(None, {"x": x})[0]
    want = _ort(fused, {"x": x}, ort.GraphOptimizationLevel.ORT_DISABLE_ALL)[0]
    assert np.array_equal(got, want)
    off = gonnx.SessionOptions(graph_optimization_level=gonnx.GraphOptimizationLevel.ORT_ENABLE_BASIC)
    written = gonnx.InferenceSession(model, off, device=device).run(None, {"x": x})[0]
    as_written = _ort(model, {"x": x}, ort.GraphOptimizationLevel.ORT_DISABLE_ALL)[0]
    assert _steps_apart(model, written, as_written).max() <= 4
