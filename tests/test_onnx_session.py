"""gpudml.onnx.InferenceSession: ONNX models through DirectML semantics (API.md section 13).

- ONNX's node tests (the onnx 1.22.0 wheel's; tests/test_onnx_nodes.py runs them eagerly
  through the same mapping, gpudml/onnx/mapping.py) run again through a session: the model
  as it is, the parameters DirectML needs when the graph is built (pads, axes, starts,
  repeats, ...) made initializers, as a real model has them; the same outputs, or the same
  refusal with the reason test_onnx_nodes.NOT_DIRECTML gives.
- Whole networks (gpudml/onnx/models.py, random weights: an MLP, a transformer encoder
  block and the block without its LayerNormalizations, a small CNN, a ResNet-18-shaped
  network) against onnxruntime's CPU provider when it is importable, else onnx's reference
  evaluator: within gpudml.onnx.session.TOLERANCE of the largest reference magnitude, on both adapters,
  with their dispatches per run pinned, fused and unfused.
- Fusion (dispatch_count), views (Reshape/Transpose/Expand cost no dispatch), dynamic
  shapes (compiled per shape, cached), no new allocations on repeated runs, UnsupportedError
  listing every node, malformed models and feeds.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import gpudml as dml
import gpudml.onnx as gonnx
from gpudml.errors import InvalidArgumentError, UnsupportedError
from gpudml.onnx import mapping, models
from gpudml.onnx.session import TOLERANCE

sys.path.insert(0, str(Path(__file__).parent))
from test_onnx_nodes import (  # noqa: E402
    NODE_NAMES,
    NOT_DIRECTML,
    REFUSALS,
    check_refused,
    compare,
    expected,
    load,
    refused_markdown,
)


@pytest.mark.parametrize("name", NODE_NAMES)
def test_node_through_session(name, device):
    """ONNX's node tests (tests/test_onnx_nodes.py runs them eagerly) through a session, the
    model as it is (the inputs DirectML needs when the graph is built, such as pads, axes,
    starts and repeats, are value inputs, read per run): the same outputs, or the same
    refusal with the reason NOT_DIRECTML gives."""
    try:
        model, inputs, want = load(name)
        (node,) = model.graph.node  # (an empty optional input is fed as None, as it is given)
        feeds = {name: a for name, a in zip(node.input, inputs) if name}
        got = gonnx.InferenceSession(model, device=device).run(None, feeds)
    except REFUSALS as exc:
        check_refused(name, exc)
        return
    assert name not in NOT_DIRECTML, f"{name} runs through the session now: take it off NOT_DIRECTML"
    compare(name, got, expected(name, model, inputs, want))


# ------------------------------------------------------------------------------ networks
def oracle(model, feeds) -> list[np.ndarray]:
    """onnxruntime's CPU provider where importable, else onnx's reference evaluator."""
    try:
        import onnxruntime
    except ImportError:
        from onnx.reference import ReferenceEvaluator
        return ReferenceEvaluator(model).run(None, feeds)
    session = onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return session.run(None, feeds)


#: Dispatches per run after fusion and without (fuse=False), on the models' default sizes, by
#: the device's adapter class: the convolution runs a long reduction over a small output in
#: two dispatches: the GPU class's strategies so run 3 of the 3x3 convolutions of the
#: ResNet's last stage (the CPU class's `registers` cuts K in chunks of ~512: none).
_CPU_CLASS = {"mlp": (4, 7), "attention": (11, 23), "transformer": (13, 25), "cnn": (5, 9), "resnet18": (23, 68)}
DISPATCHES = {"cpu": _CPU_CLASS, "gpu": {**_CPU_CLASS, "resnet18": (26, 71)}}


@pytest.mark.parametrize("name", list(models.MODELS))
def test_network_matches_oracle(name, device):
    model, feeds = models.MODELS[name]()
    session = gonnx.InferenceSession(model, device=device)
    (got,), (want,) = session.run(None, feeds), oracle(model, feeds)
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_allclose(got, want, rtol=0, atol=TOLERANCE * np.abs(want).max())
    unfused = gonnx.InferenceSession(model, device=device, fuse=False)
    np.testing.assert_allclose(unfused.run(None, feeds)[0], want, rtol=0, atol=TOLERANCE * np.abs(want).max())
    assert (session.dispatch_count, unfused.dispatch_count) == DISPATCHES[device.adapter_class][name]


def test_dynamic_batch_compiles_per_shape_and_reuses_buffers(device):
    model, feeds = models.mlp()
    session = gonnx.InferenceSession(model, device=device)
    assert session.get_inputs()[0].shape == ["N", 4, 16] and session.get_inputs()[0].type == "tensor(float)"
    with pytest.raises(InvalidArgumentError, match="dynamic dimensions and has not run yet"):
        _ = session.dispatch_count
    for batch in (8, 3, 8):
        x = feeds["x"][:batch]
        (got,) = session.run(["y"], {"x": x})
        np.testing.assert_allclose(got, oracle(model, {"x": x})[0], atol=1e-5)
    assert len(session._compiled) == 2
    pool = device._ctx.pool
    before = pool.allocations
    session.run(None, {"x": feeds["x"]})
    assert pool.allocations == before  # every buffer of the run came from the pool


def _model(nodes, inputs, outputs, inits=(), opset=17):
    graph = helper.make_graph(nodes, "m", inputs, outputs, list(inits))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def _vi(name, shape, t=TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, t, shape)


def _empty_cases():
    """(model, feeds, dispatches) of models that meet empty tensors beside GPU data."""
    a, b, n = np.arange(10, dtype=np.float32).reshape(2, 5), np.ones((1, 5), np.float32), np.zeros((0, 5), np.float32)
    i64 = TensorProto.INT64
    yield "concat skips the empty part", _model(
        [helper.make_node("Concat", ["e", "a"], ["y"], axis=0), helper.make_node("Relu", ["y"], ["z"])],
        [_vi("e", ["n", 5]), _vi("a", [2, 5])], [_vi("z", None)]), {"e": n, "a": a}, 1
    yield "empty outputs take no dispatch", _model(
        [helper.make_node("Relu", ["e"], ["r"]), helper.make_node("Add", ["r", "b"], ["y"]),
         helper.make_node("Mul", ["a", "a"], ["m"])],
        [_vi("e", ["n", 5]), _vi("b", [1, 5]), _vi("a", [2, 5])], [_vi("y", None), _vi("m", None)]),\
        {"e": n, "b": b, "a": a}, 1
    yield "reduction over an empty set", _model(
        [helper.make_node("ReduceMax", ["e"], ["r"], keepdims=0, axes=[0]), helper.make_node("Add", ["r", "a"], ["y"])],
        [_vi("e", ["n", 5]), _vi("a", [2, 5])], [_vi("y", None)], opset=17), {"e": n, "a": a}, 1
    yield "empty slice and zero-size split parts", _model(
        [helper.make_node("Slice", ["a", "s", "t"], ["y"]), helper.make_node("Concat", ["y", "a"], ["c"], axis=0),
         helper.make_node("Split", ["a", "p"], ["u", "v", "w"], axis=1), helper.make_node("Neg", ["w"], ["x"])],
        [_vi("a", [2, 5]), _vi("s", [1], i64), _vi("t", [1], i64), _vi("p", [3], i64)],
        [_vi("y", None), _vi("c", None), _vi("u", None), _vi("v", None), _vi("x", None)]),\
        {"a": a, "s": np.array([1], np.int64), "t": np.array([1], np.int64), "p": np.array([2, 0, 3], np.int64)}, 3
    none = np.zeros((0,), np.int64)
    yield "gather of no index keeps the data's other axes", _model(  # (Faster R-CNN's empty pyramid level)
        [helper.make_node("Gather", ["a", "i"], ["g"], axis=0), helper.make_node("Gather", ["g", "c"], ["y"], axis=1),
         helper.make_node("Mul", ["a", "a"], ["m"])],
        [_vi("a", [2, 5]), _vi("i", ["n"], i64), _vi("c", [1], i64)], [_vi("y", None), _vi("m", None)]),\
        {"a": a, "i": none, "c": np.array([1], np.int64)}, 1
    yield "flatten of no element", _model(  # (RetinaNet's empty pyramid level)
        [helper.make_node("Flatten", ["e"], ["f"], axis=1), helper.make_node("Flatten", ["e"], ["g"], axis=0),
         helper.make_node("Concat", ["f", "a"], ["y"], axis=0), helper.make_node("Mul", ["a", "a"], ["m"])],
        [_vi("e", ["n", 5]), _vi("a", [2, 5])], [_vi("y", None), _vi("g", None), _vi("m", None)]),\
        {"e": n, "a": a}, 1
    yield "scatter of no update is its data", _model(
        [helper.make_node("ScatterElements", ["a", "i", "u"], ["s"], axis=0), helper.make_node("Relu", ["s"], ["y"]),
         helper.make_node("ScatterND", ["a", "j", "v"], ["t"]), helper.make_node("Neg", ["t"], ["z"])],
        [_vi("a", [2, 5]), _vi("i", ["n", 5], i64), _vi("u", ["n", 5]), _vi("j", ["n", 1], i64), _vi("v", ["n", 5])],
        [_vi("y", None), _vi("z", None)]),\
        {"a": a, "i": none.reshape(0, 5), "u": n, "j": none.reshape(0, 1), "v": n}, 2


@pytest.mark.parametrize("case", list(_empty_cases()), ids=lambda c: c[0])
def test_empty_tensors_as_onnxruntime(case, device):
    """Empty tensors beside data computed on the GPU, as DirectML's execution provider
    handles them (docs/onnx.md): the same outputs (shapes, values) as onnxruntime, empty
    parts and empty outputs without a dispatch of their own."""
    _, model, feeds, dispatches = case
    session = gonnx.InferenceSession(model, device=device)
    got, want = session.run(None, feeds), oracle(model, feeds)
    for g, w in zip(got, want):
        assert g.shape == w.shape and g.dtype == w.dtype
        np.testing.assert_array_equal(g, w)
    assert session.dispatch_count == dispatches


def test_a_rank_0_boolean_constant_is_a_broadcast_operand(device):
    """And(a rank-0 comparison computed on the GPU, a rank-0 BOOL constant): the constant a
    one-element UINT8 operand, as a numeric one is (a scripted loop's `break` exports this)."""
    zero = helper.make_tensor("z", TensorProto.FLOAT, [], [0.0])
    true = helper.make_tensor("c", TensorProto.BOOL, [], [True])
    model = _model([helper.make_node("ReduceSum", ["x"], ["s"], keepdims=0),
                    helper.make_node("Constant", [], ["z"], value=zero), helper.make_node("Greater", ["s", "z"], ["g"]),
                    helper.make_node("Constant", [], ["c"], value=true), helper.make_node("And", ["g", "c"], ["y"])],
                   [_vi("x", [3])], [_vi("y", None, TensorProto.BOOL)])
    session = gonnx.InferenceSession(model, device=device)
    for x in (np.ones(3, np.float32), -np.ones(3, np.float32)):
        (got,), (want,) = session.run(None, {"x": x}), oracle(model, {"x": x})
        assert got.shape == want.shape == () and got == want


def test_empty_tensor_into_a_non_empty_result_of_gpu_data_is_refused_with_the_node(device):
    """A Gemm over an empty inner dimension whose C is computed on the GPU: refused at that
    build, the node, the empty inputs and the output named."""
    model = _model([helper.make_node("Gemm", ["a", "b", "c"], ["y"], name="g")],
                   [_vi("a", [2, "k"]), _vi("b", ["k", 3]), _vi("c", [2, 3])], [_vi("y", None)])
    session = gonnx.InferenceSession(model, device=device)
    feeds = {"a": np.zeros((2, 0), np.float32), "b": np.zeros((0, 3), np.float32), "c": np.ones((2, 3), np.float32)}
    with pytest.raises(UnsupportedError, match=r"  g \(Gemm.*the empty input 'a' \[2, 0\], 'b' \[0, 3\] beside data "
                                               r"computed on the GPU gives the non-empty output 'y' \[2, 3\]"):
        session.run(None, feeds)
    ones = {**feeds, "a": np.ones((2, 4), np.float32), "b": np.ones((4, 3), np.float32)}
    np.testing.assert_allclose(session.run(None, ones)[0], np.full((2, 3), 5, np.float32))  # the model still runs


def test_views_cost_no_dispatch(device):
    """Reshape, Unsqueeze, Squeeze, Transpose and Expand are tensor descs: x^T (a strided
    view) times w expanded (stride 0) is one GEMM and one add."""
    nodes = [helper.make_node("Transpose", ["x"], ["xt"], perm=[1, 0]),
             helper.make_node("Unsqueeze", ["xt", "ax"], ["xu"]),
             helper.make_node("Squeeze", ["xu", "ax"], ["xs"]),
             helper.make_node("MatMul", ["xs", "w"], ["m"]),
             helper.make_node("Expand", ["b", "shape"], ["be"]),
             helper.make_node("Add", ["m", "be"], ["y0"]),
             helper.make_node("Reshape", ["y0", "flat"], ["y"])]
    inits = [numpy_helper.from_array(np.array([0], np.int64), "ax"),
             numpy_helper.from_array(np.arange(12, dtype=np.float32).reshape(3, 4) / 10, "w"),
             numpy_helper.from_array(np.arange(4, dtype=np.float32), "b"),
             numpy_helper.from_array(np.array([5, 4], np.int64), "shape"),
             numpy_helper.from_array(np.array([-1], np.int64), "flat")]
    model = _model(nodes, [_vi("x", [3, 5])], [_vi("y", [20])], inits)
    session = gonnx.InferenceSession(model, device=device)
    x = np.random.default_rng(1).standard_normal((3, 5)).astype(np.float32)
    (got,) = session.run(None, {"x": x})
    np.testing.assert_allclose(got, oracle(model, {"x": x})[0], atol=1e-5)
    assert session.dispatch_count == 1  # Fused(Gemm>ElementWiseAdd1), the add reading b by stride 0


def test_slices_from_the_start_are_views(device):
    """A Slice from the start of every axis, forward, of a graph input (or of any value that
    fusion would write anyway) is a view (the LSTM-state case: state[0]): a GEMM reads x[0:3]
    and x[0:4:2] in place; x[1:3] is SLICE1 (a view has no base offset); a slice of an
    element-wise value stays SLICE1 (a view would write the value; fused, the slice costs no
    kernel). 5 kernels: 3 GEMMs, x[1:3]'s SLICE1, Sigmoid(Relu(x)[0:3]); 7 with SLICE1 for all."""
    nodes = [helper.make_node("Slice", ["x", "z1", "e3", "a0"], ["xv"]),  # x[0:3]: a view
             helper.make_node("MatMul", ["xv", "w"], ["y0"]),
             helper.make_node("Slice", ["x", "o1", "e3", "a0"], ["xo"]),  # x[1:3]: SLICE1
             helper.make_node("MatMul", ["xo", "w"], ["y1"]),
             helper.make_node("Relu", ["x"], ["r"]),
             helper.make_node("Slice", ["r", "z1", "e3", "a0"], ["rs"]),  # of an element-wise value: SLICE1
             helper.make_node("Sigmoid", ["rs"], ["y2"]),
             helper.make_node("Slice", ["x", "z1", "e4", "a0", "s2"], ["xs"]),  # x[0:4:2]: a view
             helper.make_node("MatMul", ["xs", "w"], ["y3"])]
    inits = [numpy_helper.from_array(np.arange(8, dtype=np.float32).reshape(2, 4) / 10, "w")] + [
        numpy_helper.from_array(np.array(v, np.int64), n) for n, v in (
            ("z1", [0]), ("e3", [3]), ("e4", [4]), ("a0", [0]), ("s2", [2]), ("o1", [1]))]
    model = _model(nodes, [_vi("x", [4, 2])], [_vi(f"y{k}", None) for k in range(4)], inits)
    session = gonnx.InferenceSession(model, device=device)
    x = np.random.default_rng(2).standard_normal((4, 2)).astype(np.float32)
    for got, want in zip(session.run(None, {"x": x}), oracle(model, {"x": x})):
        np.testing.assert_allclose(got, want, atol=1e-6)
    assert session.dispatch_count == 5


def test_folding_bool_and_gelu_forms(device):
    """Shape arithmetic on a Shape folds at load; BOOL tensors travel as UINT8 and come back
    as bools; Gelu's erf and tanh forms."""
    nodes = [helper.make_node("Shape", ["x"], ["s"]),
             helper.make_node("Gather", ["s", "one"], ["n"], axis=0),
             helper.make_node("Mul", ["n", "two"], ["n2"]),
             helper.make_node("Concat", ["n2", "minus"], ["target"], axis=0),
             helper.make_node("Reshape", ["x", "target"], ["r"]),
             helper.make_node("Gelu", ["r"], ["g"]),
             helper.make_node("Gelu", ["r"], ["gt"], approximate="tanh"),
             helper.make_node("Greater", ["g", "zero"], ["pos"]),
             helper.make_node("Not", ["pos"], ["neg"]),
             helper.make_node("Where", ["neg", "gt", "g"], ["y"])]
    inits = [numpy_helper.from_array(np.array([1], np.int64), "one"),
             numpy_helper.from_array(np.array([2], np.int64), "two"),
             numpy_helper.from_array(np.array([-1], np.int64), "minus"),
             numpy_helper.from_array(np.array(0, np.float32), "zero")]
    model = _model(nodes, [_vi("x", [2, 6, 2])], [_vi("y", [12, 2]), _vi("neg", [12, 2], TensorProto.BOOL)],
                   inits, opset=20)
    session = gonnx.InferenceSession(model, device=device)
    x = np.random.default_rng(2).standard_normal((2, 6, 2)).astype(np.float32)
    got, want = session.run(None, {"x": x}), oracle(model, {"x": x})
    np.testing.assert_allclose(got[0], want[0], atol=1e-5)
    assert got[1].dtype == np.bool_ and np.array_equal(got[1], want[1])
    assert session.get_outputs()[1].type == "tensor(bool)"


# ------------------------------------------------------------------------------ errors
def test_unsupported_lists_every_node():
    nodes = [helper.make_node("Relu", ["x"], ["a"], name="ok"),
             helper.make_node("Det", ["a"], ["b"], name="det"),
             helper.make_node("SparseAttention", ["a", "a"], ["c"], name="ms", domain="com.microsoft"),
             helper.make_node("Foo", ["a"], ["e"], name="foo", domain="com.example"),
             helper.make_node("Conv", ["x", "w"], ["d"], name="conv")]
    model = _model(nodes, [_vi("x", [1, 1, 4, 4])], [_vi("b", [1]), _vi("c", [1]), _vi("d", [1]), _vi("e", [1])],
                   [numpy_helper.from_array(np.ones((1, 1, 3, 3), np.float32), "w")])
    model.opset_import.extend([helper.make_opsetid("com.microsoft", 1), helper.make_opsetid("com.example", 1)])
    with pytest.raises(UnsupportedError) as info:
        gonnx.InferenceSession(model)
    text = str(info.value)
    assert "det (Det, opset 17): no DirectML mapping" in text
    assert "ms (SparseAttention, opset 17): no DirectML mapping" in text  # (a contrib op gpudml does not map)
    assert "foo (Foo, opset 17): domain 'com.example'" in text
    assert "conv (" not in text and "ok (" not in text


def test_build_time_rejections_name_the_node():
    """What DirectML's operator rejects (a type its table lacks) is unsupported, named."""
    model = _model([helper.make_node("Erf", ["x"], ["y"], name="erf64")], [_vi("x", [4], TensorProto.DOUBLE)],
                   [_vi("y", [4], TensorProto.DOUBLE)])
    with pytest.raises(UnsupportedError, match=r"erf64 \(Erf, opset 17\): DirectML: .*FLOAT64"):
        gonnx.InferenceSession(model)


def test_malformed_models_and_feeds(tmp_path):
    relu = _model([helper.make_node("Relu", ["x"], ["y"])], [_vi("x", [2, 3])], [_vi("y", [2, 3])])
    with pytest.raises(InvalidArgumentError, match="onnx.checker"):
        gonnx.InferenceSession(_model([helper.make_node("Relu", ["x"], ["y"], alpha=1.0)], [_vi("x", [2])],
                                      [_vi("y", [2])]))
    missing = _model([helper.make_node("Add", ["x", "w"], ["y"], name="add")], [_vi("x", [2])], [_vi("y", [2])])
    with pytest.raises(InvalidArgumentError, match="(?s)onnx.checker.*input 'w' of node.*add"):
        gonnx.InferenceSession(missing)
    with pytest.raises(InvalidArgumentError, match="no such model file"):
        gonnx.InferenceSession(str(tmp_path / "none.onnx"))
    path = tmp_path / "relu.onnx"
    onnx.save(relu, str(path))
    for source in (path, str(path), relu.SerializeToString()):
        session = gonnx.InferenceSession(source)
    x = np.arange(6, dtype=np.float32).reshape(2, 3) - 3
    assert np.array_equal(session.run(None, {"x": x})[0], np.maximum(x, 0))
    with pytest.raises(InvalidArgumentError, match="unknown input name 'z'.*'x'"):
        session.run(None, {"x": x, "z": x})
    with pytest.raises(InvalidArgumentError, match="missing input 'x' \\(float32 of shape \\[2, 3\\]\\)"):
        session.run(None, {})
    with pytest.raises(InvalidArgumentError, match="'x' has dtype float64, the model's is float32"):
        session.run(None, {"x": x.astype(np.float64)})
    with pytest.raises(InvalidArgumentError, match=r"'x' has shape \[3, 2\], the model's is \[2, 3\]"):
        session.run(None, {"x": x.reshape(3, 2)})
    with pytest.raises(InvalidArgumentError, match="unknown output name 'q'"):
        session.run(["q"], {"x": x})


def _unreadable_models(folder: Path) -> dict:
    """{case: (model path, what the message says)}: files no ONNX loader can read."""
    good = _model([helper.make_node("Relu", ["x"], ["y"])], [_vi("x", [2, 3])], [_vi("y", [2, 3])]).SerializeToString()
    files = {"truncated": good[: len(good) // 2], "garbage": b"\x00\xffnot a model", "empty": b""}
    cases = {}
    for name, data in files.items():
        (folder / f"{name}.onnx").write_bytes(data)
        cases[name] = str(folder / f"{name}.onnx")
    size = len(good) // 2
    return {
        "truncated": (cases["truncated"], f"is not an ONNX model: protobuf cannot parse its {size} bytes"),
        "garbage": (cases["garbage"], "is not an ONNX model: protobuf cannot parse its 13 bytes"),
        "empty": (cases["empty"], "is empty (0 bytes), not an ONNX model"),
        "directory": (str(folder), "is a directory, not a model file (.onnx)"),
        "missing": (str(folder / "none.onnx"), "no such model file"),
    }


def test_model_files_that_cannot_be_read_name_the_file_and_the_reason(tmp_path, capsys):
    """InvalidArgumentError from the API (the session and load_model), one line and exit
    status 2 from `gpudml run`; no traceback, nothing left behind."""
    from gpudml import cli

    cases = _unreadable_models(tmp_path)
    made = sorted(tmp_path.iterdir())
    for case, (path, reason) in cases.items():
        for loader, where in ((gonnx.InferenceSession, "InferenceSession"),
                              (gonnx.load_model, "gpudml.onnx.load_model")):
            with pytest.raises(InvalidArgumentError) as info:
                loader(path)
            message = str(info.value)
            assert message.startswith(f"{where}: ") and repr(path) in message and reason in message, (case, message)
            assert "\n" not in message and info.value.__cause__ is None, (case, message)
        assert cli.main(["run", path, "--random"]) == 2, case
        err = capsys.readouterr().err
        assert err.startswith("error: InferenceSession: ") and repr(path) in err and reason in err, (case, err)
        assert err.count("\n") == 1 and "Traceback" not in err, (case, err)
    assert sorted(tmp_path.iterdir()) == made
    with pytest.raises(InvalidArgumentError, match="the model given as bytes is not an ONNX model: protobuf cannot "
                                                   "parse its 3 bytes"):
        gonnx.InferenceSession(b"xyz")


def test_checker_refusals_name_the_node_or_the_value():
    bad_attribute = _model([helper.make_node("Relu", ["x"], ["y"], name="relu1", alpha=1.0)], [_vi("x", [2])],
                           [_vi("y", [2])])
    with pytest.raises(InvalidArgumentError, match=re.escape(
            "InferenceSession: the model fails onnx.checker at node 'relu1' (Relu, output 'y'): Unrecognized "
            "attribute: alpha for operator Relu")):
        gonnx.InferenceSession(bad_attribute)
    no_type = _model([helper.make_node("Relu", ["x"], ["y"])], [helper.make_empty_tensor_value_info("x")],
                     [_vi("y", [2])])
    with pytest.raises(InvalidArgumentError, match=re.escape(
            "the model fails onnx.checker at graph input 'x': Field 'type' of 'value_info' is required")):
        gonnx.load_model(no_type)


@pytest.mark.parametrize("output", ["no shape", "no type"])
def test_outputs_with_no_shape_or_type_load_as_in_onnxruntime(device, output):
    """onnx.checker refuses a graph output with no shape (or no type); onnxruntime infers it
    and runs the model: so does gpudml, with the same NodeArg and outputs."""
    y = _vi("y", None) if output == "no shape" else helper.make_empty_tensor_value_info("y")
    model = _model([helper.make_node("Relu", ["x"], ["r"]), helper.make_node("Transpose", ["r"], ["y"])],
                   [_vi("x", [2, 3])], [y])
    with pytest.raises(onnx.checker.ValidationError):
        onnx.checker.check_model(model)
    before = model.SerializeToString()
    session = gonnx.InferenceSession(model, device=device)
    assert model.SerializeToString() == before  # the caller's ModelProto is not changed
    x = np.arange(6, dtype=np.float32).reshape(2, 3) - 3
    (got,) = session.run(None, {"x": x})
    assert session.get_outputs() == [gonnx.NodeArg("y", [3, 2], "tensor(float)")]
    ort = pytest.importorskip("onnxruntime")
    reference = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    (want,) = reference.run(None, {"x": x})
    (arg,) = reference.get_outputs()
    assert (arg.name, arg.shape, arg.type) == ("y", [3, 2], "tensor(float)")
    assert got.dtype == want.dtype and np.array_equal(got, want)


def test_mapping_table_covers_the_issue():
    """The ops the issue names are rows of the table, each with its DirectML operator."""
    named = {"Cast", "Where", "MatMul", "Gemm", "Conv", "ConvTranspose", "MaxPool", "AveragePool",
             "GlobalAveragePool", "LayerNormalization", "InstanceNormalization", "BatchNormalization", "Softmax",
             "LogSoftmax", "Hardmax", "ReduceMean", "ArgMax", "ArgMin", "Pad", "Slice", "Concat", "Split", "Gather",
             "Tile", "CumSum", "ReverseSequence", "Gelu", "Erf", "Reshape", "Flatten", "Squeeze", "Unsqueeze",
             "Transpose", "Expand"}
    assert named <= set(mapping.BY_TYPE)
    assert len(mapping.BY_TYPE) == len(mapping.TABLE)
    for row in mapping.TABLE:
        assert row.directml and 7 <= row.since <= mapping.NEWEST, row
        assert row.needs and all(name in dml.FUNCTIONS for name in row.needs) or row.directml.startswith(
            ("none", "strides", "stride 0")), row


# ------------------------------------------------------------------------------ gpudml run
def test_cli_run(tmp_path, capsys, adapter):
    from gpudml import cli

    model, feeds = models.mlp(batch_size=2)
    path, x = tmp_path / "mlp.onnx", tmp_path / "x.npy"
    onnx.save(model, str(path))
    np.save(x, feeds["x"])
    assert cli.main(["--adapter", adapter, "run", str(path), "--input", f"x={x}", "--profile"]) == 0
    out = capsys.readouterr().out
    assert "4 dispatches per run" in out and "y: float32 [2, 10]" in out and "gpudml profile" in out
    assert cli.main(["--adapter", adapter, "run", str(path)]) == 2
    assert "no value for input 'x'" in capsys.readouterr().err
    try:
        import onnxruntime  # noqa: F401
    except ImportError:
        assert cli.main(["--adapter", adapter, "run", str(path), "--random", "--compare-onnxruntime"]) == 2
        assert "onnxruntime is missing" in capsys.readouterr().out
        return
    assert cli.main(["--adapter", adapter, "run", str(path), "--random", "--compare-onnxruntime"]) == 0
    assert re.search(r"y: largest difference \S+ \(bound \S+\) ok", capsys.readouterr().out)


def test_docs_page_has_the_mapping_table_and_the_refused_node_tests():
    page = (Path(__file__).parent.parent / "docs" / "onnx.md").read_text()
    assert mapping.markdown_table() in page
    assert refused_markdown() in page
    assert f"{len(NODE_NAMES) - len(NOT_DIRECTML)} pass; these {len(NOT_DIRECTML)} are refused" in page


def test_bench_table(device):
    from gpudml.bench import onnx_models

    rows = onnx_models.measure(device, reps=1)
    text = onnx_models.table(rows, device.adapter_name)
    for row in rows:
        assert f"| {row['model']} |" in text
        assert (row["dispatches"], row["unfused_dispatches"]) == DISPATCHES[device.adapter_class][row["model"]]
    assert [r["model"] for r in rows] == list(models.MODELS)


def test_graph_view_feeds_fused_chains(device):
    """Graph.view (what the session's views are): a transposed view read by a fused
    Padding>Slice1 chain, a Reduce and an element-wise add, and a packed reshape as an
    output; a view larger than its value is refused."""
    g = dml.Graph(device)
    x = g.input([2, 3], name="x")
    y = dml.relu(x)
    t = g.view(y, [3, 2], [1, 3])
    chained = dml.slice(dml.pad(t, [1, 0], [0, 1]), [0, 0], [3, 2])
    op = g.compile([chained, dml.add(t, np.ones((1, 2), np.float32)), dml.reduce(t, "sum", [0]), g.view(y, [6])])
    a = np.arange(6, dtype=np.float32).reshape(2, 3) - 2
    got = op({"x": a})
    ra = np.maximum(a, 0).T
    assert np.array_equal(got[0], np.pad(ra, ((1, 0), (0, 1)))[:3, :2])
    assert np.array_equal(got[1], ra + 1) and np.array_equal(got[2], ra.sum(0, keepdims=True))
    assert np.array_equal(got[3], ra.T.reshape(-1))
    with pytest.raises(InvalidArgumentError, match="Graph.view"):
        g.view(y, [7])


def _dynamic_relu(tmp_path) -> str:
    """A one-node model whose input x is [batch, seq, 4] (two named dynamic dimensions) and
    [?, 2] for w (an unnamed one)."""
    x = onnx.helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, ["batch", "seq", 4])
    w = onnx.helper.make_tensor_value_info("w", onnx.TensorProto.FLOAT, [None, 2])
    outs = [onnx.helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, ["batch", "seq", 4]),
            onnx.helper.make_tensor_value_info("z", onnx.TensorProto.FLOAT, [None, 2])]
    graph = onnx.helper.make_graph([onnx.helper.make_node("Relu", ["x"], ["y"]),
                                    onnx.helper.make_node("Relu", ["w"], ["z"])], "dynamic", [x, w], outs)
    path = tmp_path / "dynamic.onnx"
    onnx.save(onnx.helper.make_model(graph, opset_imports=[onnx.helper.make_opsetid("", 13)]), str(path))
    return str(path)


def test_cli_run_sizes_dynamic_dimensions(tmp_path, capsys, adapter):
    """issue #42: `gpudml run --random --dim NAME=SIZE` sizes a named dynamic dimension; the
    others stay 1, and the command says which got what and why."""
    from gpudml import cli

    path = _dynamic_relu(tmp_path)
    assert cli.main(["--adapter", adapter, "run", path, "--random", "--dim", "batch=3"]) == 0
    out = capsys.readouterr().out
    assert "dynamic dimensions of the random inputs: batch=3 (--dim), seq=1 (not given: --dim seq=SIZE sets it), " \
           "w's axis 0=1 (unnamed: always 1)\n" in out
    assert "  y: float32 [3, 1, 4]" in out and "  z: float32 [1, 2]" in out
    assert cli.main(["--adapter", adapter, "run", path, "--random", "--dim", "seq=5", "--dim", "batch=2"]) == 0
    out = capsys.readouterr().out
    assert "batch=2 (--dim), seq=5 (--dim)" in out and "  y: float32 [2, 5, 4]" in out


@pytest.mark.parametrize("dims, message", [
    (["nope=2"], "--dim nope: the model's inputs have no dynamic dimension named 'nope' (their named dynamic "
                 "dimensions: 'batch', 'seq')"),
    (["batch=0"], "--dim batch: the size must be an integer of at least 1 (DirectML sizes are), got '0'"),
    (["batch=two"], "--dim batch: the size must be an integer of at least 1 (DirectML sizes are), got 'two'"),
    (["batch"], "--dim takes NAME=SIZE (a dynamic dimension's name and its size), got 'batch'"),
    (["batch=2", "batch=3"], "--dim batch is given twice, as 2 and 3"),
])
def test_cli_run_refuses_bad_dims(tmp_path, capsys, dims, message):
    from gpudml import cli

    args = [a for d in dims for a in ("--dim", d)]
    assert cli.main(["run", _dynamic_relu(tmp_path), "--random", *args]) == 2
    captured = capsys.readouterr()
    assert captured.err == f"error: gpudml run: {message}\n" and captured.out == ""


def test_cli_run_dims_need_random(tmp_path, capsys):
    from gpudml import cli

    assert cli.main(["run", _dynamic_relu(tmp_path), "--dim", "batch=2"]) == 2
    assert "--dim sets the dynamic dimensions of the --random inputs; add --random (given: batch=2)" in \
        capsys.readouterr().err
