"""ONNX control flow at run time through an InferenceSession (gpudml/onnx/control.py): If on
a condition computed on the GPU, Loop, Scan, nested, against onnxruntime's CPU provider; the
refusals; ONNX's node tests of If, Loop and Scan (and of functions expanded into a Loop)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import gpudml.onnx as gonnx
from gpudml.errors import InvalidArgumentError, UnsupportedError
from gpudml.onnx import control

sys.path.insert(0, str(Path(__file__).parent))
from test_onnx_nodes import NODE_TESTS, REFUSALS, _index, _read, compare  # noqa: E402
from test_onnx_session import oracle  # noqa: E402

F, I64, B = TensorProto.FLOAT, TensorProto.INT64, TensorProto.BOOL


def _vi(name, shape, elem=F):
    return helper.make_tensor_value_info(name, elem, shape)


def _init(name, value):
    return numpy_helper.from_array(np.asarray(value), name)


def _model(nodes, inputs, outputs, inits=(), opset=17):
    graph = helper.make_graph(nodes, "m", inputs, outputs, list(inits))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def _check(session, model, feeds, atol=1e-5):
    got = session.run(None, feeds)
    want = oracle(model, feeds)
    for g, w in zip(got, want):
        assert g.shape == w.shape and g.dtype == w.dtype, (g.shape, w.shape, g.dtype, w.dtype)
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=atol)
    return got


# ------------------------------------------------------------------------------ If
def _if_model():
    """y = relu(x * w) if sum(x) > 0 else x - w, then + 1: the condition computed on the GPU,
    the branches reading the outer x and w (w computed on the GPU too: x's abs)."""
    then = helper.make_graph([helper.make_node("Mul", ["x", "w"], ["tm"]), helper.make_node("Relu", ["tm"], ["t"])],
                             "then", [], [_vi("t", None)])
    other = helper.make_graph([helper.make_node("Sub", ["x", "w"], ["e"])], "else", [], [_vi("e", None)])
    nodes = [helper.make_node("Abs", ["x"], ["w"]),
             helper.make_node("ReduceSum", ["x"], ["total"], keepdims=0),
             helper.make_node("Greater", ["total", "zero"], ["c"]),
             helper.make_node("If", ["c"], ["b"], name="cond_if", then_branch=then, else_branch=other),
             helper.make_node("Add", ["b", "one"], ["y"])]
    return _model(nodes, [_vi("x", ["N", 4])], [_vi("y", None)],
                  [_init("zero", np.float32(0)), _init("one", np.float32(1))])


def test_if_on_a_gpu_condition_takes_each_branch_and_caches_them(device):
    model = _if_model()
    session = gonnx.InferenceSession(model, device=device)
    assert session.value_inputs == []  # (the condition is read back, not computed on the host)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((3, 4)).astype(np.float32)
    for feed in (np.abs(x), -np.abs(x), np.abs(x), -np.abs(x)):  # both branches, in consecutive runs
        _check(session, model, {"x": feed})
    (built,) = session._compiled.values()  # one build of the graph; each branch compiled once, reused
    assert len(built.scopes) == 2 and len(built._after) == 1
    # The part before (Abs, ReduceSum, Greater), the branch, the Add after.
    assert session.dispatch_count == built.compiled.dispatch_count + 2


def test_if_branch_outputs_of_other_shapes_build_the_rest_per_shape(device):
    """ONNX lets the branches give different shapes: the part after is built per output
    shape."""
    then = helper.make_graph([helper.make_node("Identity", ["x"], ["t"])], "then", [], [_vi("t", None)])
    other = helper.make_graph([helper.make_node("Concat", ["x", "x"], ["e"], axis=0)], "else", [],
                              [_vi("e", None)])
    nodes = [helper.make_node("ReduceMax", ["x"], ["m"], keepdims=0),
             helper.make_node("Greater", ["m", "zero"], ["c"]),
             helper.make_node("If", ["c"], ["b"], name="shape_if", then_branch=then, else_branch=other),
             helper.make_node("Mul", ["b", "two"], ["y"])]
    model = _model(nodes, [_vi("x", [2, 3])], [_vi("y", None)],
                   [_init("zero", np.float32(0)), _init("two", np.float32(2))])
    session = gonnx.InferenceSession(model, device=device)
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    _check(session, model, {"x": x})
    _check(session, model, {"x": -x - 1})


# ------------------------------------------------------------------------------ Loop
def _loop_body(cond_from_data: bool):
    """v += x * (i + 1); scan output: the sum of v; the condition: sum(v) < limit (from data)
    or the condition input passed through."""
    nodes = [helper.make_node("Cast", ["i"], ["fi"], to=F),
             helper.make_node("Add", ["fi", "one"], ["f1"]),
             helper.make_node("Mul", ["x", "f1"], ["step"]),
             helper.make_node("Add", ["v_in", "step"], ["v_out"]),
             helper.make_node("ReduceSum", ["v_out"], ["s"], keepdims=0)]
    if cond_from_data:
        nodes.append(helper.make_node("Less", ["s", "limit"], ["cond_out"]))
    else:
        nodes.append(helper.make_node("Identity", ["cond_in"], ["cond_out"]))
    return helper.make_graph(nodes, "body", [_vi("i", [], I64), _vi("cond_in", [], B), _vi("v_in", [4])],
                             [_vi("cond_out", [], B), _vi("v_out", [4]), _vi("s", [])])


def _loop_model(m: str, cond: str, cond_from_data: bool):
    nodes = [helper.make_node("Abs", ["x0"], ["x"]),
             helper.make_node("Loop", [m, cond, "v0"], ["v", "sums"], name="loop", body=_loop_body(cond_from_data)),
             helper.make_node("Neg", ["v"], ["y"])]
    inputs = [_vi("x0", [4]), _vi("v0", [4])]
    if m == "M":
        inputs.append(_vi("M", [], I64))
    if cond == "c0":
        inputs.append(_vi("c0", [], B))
    return _model(nodes, inputs, [_vi("y", [4]), _vi("sums", None)],
                  [_init("one", np.float32(1)), _init("limit", np.float32(30))])


@pytest.mark.parametrize("m,cond,from_data", [("M", "", False), ("", "c0", True), ("M", "c0", True),
                                              ("M", "c0", False)])
def test_loop_trip_count_and_condition(device, m, cond, from_data):
    """M only (a for loop: the body's condition ignored), cond only (a while loop on a
    condition the body computes: read back per iteration), both; scan outputs stacked."""
    model = _loop_model(m, cond, from_data)
    session = gonnx.InferenceSession(model, device=device)
    x0 = np.array([1.0, -2.0, 0.5, 1.5], np.float32)
    for trips in (3, 5, 0):
        feeds = {"x0": x0, "v0": np.zeros(4, np.float32)}
        if m:
            feeds["M"] = np.array(trips, np.int64)
        if cond:
            feeds["c0"] = np.array(trips != 0)
        _check(session, model, feeds)


def test_loop_reads_back_the_condition_only_where_the_body_computes_it(device, monkeypatch):
    reads = []
    original = control.host

    def counting(value):
        reads.append(type(value).__name__)
        return original(value)

    monkeypatch.setattr(control, "host", counting)
    feeds = {"x0": np.ones(4, np.float32), "v0": np.zeros(4, np.float32), "M": np.array(4, np.int64),
             "c0": np.array(True)}
    gonnx.InferenceSession(_loop_model("M", "c0", False), device=device).run(None, feeds)
    assert reads.count("Tensor") == 0  # M and cond are feeds (host values): nothing read back
    reads.clear()
    gonnx.InferenceSession(_loop_model("M", "c0", True), device=device).run(None, feeds)
    assert reads.count("Tensor") == 4  # one per iteration: the sums 4, 12, 24, 40 (the last false)


def test_loop_condition_output_a_constant_is_read_without_a_readback(device, monkeypatch):
    """A body whose condition output is a constant false: one iteration (of M = 5), its
    condition a host value."""
    reads = []
    original = control.host
    monkeypatch.setattr(control, "host", lambda value: reads.append(type(value).__name__) or original(value))
    body = helper.make_graph([helper.make_node("Constant", [], ["cond_out"], value=_init("no", np.array(False))),
                              helper.make_node("Add", ["v_in", "x"], ["v_out"])],
                             "body", [_vi("i", [], I64), _vi("cond_in", [], B), _vi("v_in", [2])],
                             [_vi("cond_out", [], B), _vi("v_out", [2]), _vi("v_out", [2])])
    nodes = [helper.make_node("Loop", ["M", "go", "x"], ["y", "ys"], name="once", body=body)]
    model = _model(nodes, [_vi("x", [2])], [_vi("y", [2]), _vi("ys", None)],
                   [_init("M", np.int64(5)), _init("go", np.array(True))])
    session = gonnx.InferenceSession(model, device=device)
    got = _check(session, model, {"x": np.array([1.0, 2.0], np.float32)})
    assert got[1].shape == (1, 2) and "Tensor" not in reads


def test_loop_trip_count_computed_on_the_gpu_is_read_back_once(device, monkeypatch):
    """M = the number of positive elements of x, computed on the GPU: one readback before the
    loop, none per iteration (no condition input)."""
    reads = []
    original = control.host
    monkeypatch.setattr(control, "host", lambda value: reads.append(type(value).__name__) or original(value))
    body = helper.make_graph([helper.make_node("Identity", ["cond_in"], ["cond_out"]),
                              helper.make_node("Mul", ["v_in", "x"], ["v_out"])],
                             "body", [_vi("i", [], I64), _vi("cond_in", [], B), _vi("v_in", [3])],
                             [_vi("cond_out", [], B), _vi("v_out", [3])])
    nodes = [helper.make_node("Greater", ["x", "zero"], ["pos"]),
             helper.make_node("Cast", ["pos"], ["pos_i"], to=I64),
             helper.make_node("ReduceSum", ["pos_i"], ["M"], keepdims=0),
             helper.make_node("Loop", ["M", "", "x"], ["y"], name="power", body=body)]
    model = _model(nodes, [_vi("x", [3])], [_vi("y", [3])], [_init("zero", np.float32(0))])
    session = gonnx.InferenceSession(model, device=device)
    for x in ([1.5, -1.0, 2.0], [-1.0, -2.0, -0.5], [1.1, 1.2, 1.3]):
        reads.clear()
        _check(session, model, {"x": np.array(x, np.float32)})
        assert reads == ["Tensor"]


def test_loop_body_parameter_from_the_iteration_number(device):
    """A Slice starting at iteration_num (a value input of the body: the host's own count,
    no readback): the body builds per value, each iteration's row a scan output."""
    body = helper.make_graph([helper.make_node("Identity", ["cond_in"], ["cond_out"]),
                              helper.make_node("Unsqueeze", ["i", "axes0"], ["start"]),
                              helper.make_node("Add", ["start", "one_i"], ["end"]),
                              helper.make_node("Slice", ["x", "start", "end"], ["row"]),
                              helper.make_node("Add", ["v_in", "row"], ["v_out"])],
                             "body", [_vi("i", [], I64), _vi("cond_in", [], B), _vi("v_in", [1, 2])],
                             [_vi("cond_out", [], B), _vi("v_out", [1, 2]), _vi("row", [1, 2])])
    nodes = [helper.make_node("Relu", ["x0"], ["x"]),
             helper.make_node("Loop", ["M", "", "v0"], ["v", "rows"], name="rows", body=body)]
    model = _model(nodes, [_vi("x0", [4, 2]), _vi("v0", [1, 2])], [_vi("v", [1, 2]), _vi("rows", None)],
                   [_init("M", np.int64(4)), _init("axes0", np.array([0], np.int64)), _init("one_i", np.int64(1))])
    session = gonnx.InferenceSession(model, device=device)
    x = np.random.default_rng(4).standard_normal((4, 2)).astype(np.float32)
    _check(session, model, {"x0": x, "v0": np.zeros((1, 2), np.float32)})


def test_control_flow_through_io_binding(device):
    """run_with_iobinding: the input bound as a Tensor, the output left on the device."""
    model = _if_model()
    session = gonnx.InferenceSession(model, device=device)
    for sign in (1, -1):
        x = sign * np.abs(np.random.default_rng(5).standard_normal((2, 4)).astype(np.float32))
        binding = session.io_binding()
        binding.bind_input("x", device.tensor(x))
        binding.bind_output("y")
        session.run_with_iobinding(binding)
        (got,) = binding.copy_outputs_to_cpu()
        np.testing.assert_allclose(got, oracle(model, {"x": x})[0], rtol=1e-5, atol=1e-5)


def test_loop_dispatch_count_counts_every_iteration(device):
    model = _loop_model("M", "", False)
    session = gonnx.InferenceSession(model, device=device)
    counts = {}
    for trips in (2, 5):
        session.run(None, {"x0": np.ones(4, np.float32), "v0": np.zeros(4, np.float32),
                           "M": np.array(trips, np.int64)})
        counts[trips] = session.dispatch_count
    per_iteration = (counts[5] - counts[2]) / 3
    assert per_iteration == int(per_iteration) and per_iteration >= 1
    assert counts[2] > 2 * per_iteration  # (the part before, the stacking and the part after besides)


def test_loop_carried_values_may_change_shape(device):
    """v = Concat(v, x) per iteration: the body builds per shape of its carried values."""
    body = helper.make_graph([helper.make_node("Identity", ["cond_in"], ["cond_out"]),
                              helper.make_node("Concat", ["v_in", "x"], ["v_out"], axis=0),
                              helper.make_node("Relu", ["v_out"], ["r"])],
                             "body", [_vi("i", [], I64), _vi("cond_in", [], B), _vi("v_in", ["K"])],
                             [_vi("cond_out", [], B), _vi("v_out", ["K2"])])
    nodes = [helper.make_node("Loop", ["M", "", "x"], ["v"], name="grow", body=body),
             helper.make_node("Mul", ["v", "v"], ["y"])]
    model = _model(nodes, [_vi("x", [3]), _vi("M", [], I64)], [_vi("y", None)])
    session = gonnx.InferenceSession(model, device=device)
    _check(session, model, {"x": np.array([1.0, -2.0, 3.0], np.float32), "M": np.array(3, np.int64)})


def _body_with_if(limit: str, other: str, scanned, scan_shape: list):
    """A Loop body: v_out = v_in + w if sum(v_in) < `limit` else v_in - `other` (an If whose
    branches read w and `other` from the scopes around the Loop); `scanned`, the node giving
    its scan output, of `scan_shape`."""
    then = helper.make_graph([helper.make_node("Add", ["v_in", "w"], ["t"])], "then", [], [_vi("t", None)])
    other_branch = helper.make_graph([helper.make_node("Sub", ["v_in", other], ["e"])], "else", [], [_vi("e", None)])
    return helper.make_graph(
        [helper.make_node("Identity", ["cond_in"], ["cond_out"]),
         helper.make_node("ReduceSum", ["v_in"], ["s"], keepdims=0),
         helper.make_node("Less", ["s", limit], ["body_c"]),
         helper.make_node("If", ["body_c"], ["v_out"], name="inner_if", then_branch=then, else_branch=other_branch),
         scanned],
        "body", [_vi("i", [], I64), _vi("cond_in", [], B), _vi("v_in", [2])],
        [_vi("cond_out", [], B), _vi("v_out", [2]), _vi(scanned.output[0], scan_shape)])


def test_greedy_decoder_loop(device):
    """A generation loop as exporters write one: the carried token embedded (Gather), a
    recurrent state updated (MatMul, Tanh), the next token its ArgMax, the loop ending at
    the end token (a condition computed from data) or after M steps; the tokens scanned out."""
    rng = np.random.default_rng(7)
    vocab, hidden = 6, 8
    body = helper.make_graph(
        [helper.make_node("Gather", ["emb", "tok_in"], ["e"], axis=0),
         helper.make_node("MatMul", ["h_in", "wh"], ["hh"]),
         helper.make_node("Add", ["e", "hh"], ["pre"]),
         helper.make_node("Tanh", ["pre"], ["h_out"]),
         helper.make_node("MatMul", ["h_out", "wo"], ["logits"]),
         helper.make_node("ArgMax", ["logits"], ["tok_out"], axis=-1, keepdims=0),
         helper.make_node("Equal", ["tok_out", "eos"], ["done"]),
         helper.make_node("Not", ["done"], ["go"]),
         helper.make_node("Squeeze", ["go"], ["cond_out"])],
        "step", [_vi("i", [], I64), _vi("cond_in", [], B), _vi("tok_in", [1], I64), _vi("h_in", [1, hidden])],
        [_vi("cond_out", [], B), _vi("tok_out", [1], I64), _vi("h_out", [1, hidden]), _vi("tok_out", [1], I64)])
    nodes = [helper.make_node("Loop", ["M", "start", "bos", "h0"], ["last", "h", "tokens"], name="decode", body=body)]
    inits = [_init("emb", rng.standard_normal((vocab, hidden)).astype(np.float32)),
             _init("wh", rng.standard_normal((hidden, hidden)).astype(np.float32) * 0.5),
             _init("wo", rng.standard_normal((hidden, vocab)).astype(np.float32)),
             _init("eos", np.array([0], np.int64)), _init("start", np.array(True)), _init("M", np.int64(12))]
    model = _model(nodes, [_vi("bos", [1], I64), _vi("h0", [1, hidden])],
                   [_vi("last", [1], I64), _vi("h", [1, hidden]), _vi("tokens", None, I64)], inits)
    session = gonnx.InferenceSession(model, device=device)
    lengths = set()
    for k in range(4):
        feeds = {"bos": np.array([k + 1], np.int64), "h0": rng.standard_normal((1, hidden)).astype(np.float32)}
        got = _check(session, model, feeds, atol=1e-4)
        lengths.add(got[2].shape[0])
    assert len(lengths) > 1  # (the end token reached after different numbers of steps)


def test_nested_if_in_loop_reads_values_two_levels_up(device):
    """A Loop whose body holds an If (on a condition the body computes) whose branches read w,
    computed in the main graph (two scopes up), and the body's v."""
    body = _body_with_if("five", "w", helper.make_node("Identity", ["v_out"], ["trace"]), [2])
    nodes = [helper.make_node("Mul", ["x", "x"], ["w"]),
             helper.make_node("Loop", ["M", "", "v0"], ["v", "traces"], name="outer_loop", body=body)]
    model = _model(nodes, [_vi("x", [2]), _vi("v0", [2]), _vi("M", [], I64)],
                   [_vi("v", [2]), _vi("traces", None)], [_init("five", np.float32(5))])
    session = gonnx.InferenceSession(model, device=device)
    _check(session, model, {"x": np.array([1.0, 1.5], np.float32), "v0": np.zeros(2, np.float32),
                            "M": np.array(6, np.int64)})


def test_if_in_loop_in_if_reads_the_top_graph_three_scopes_up(device):
    """If (a GPU condition) > Loop > If (a GPU condition): the innermost branches read w and k
    of the top graph; the Loop's scan output is a constant (stacked on the host)."""
    body = _body_with_if("ten", "k", helper.make_node(
        "Constant", [], ["mark"], value=numpy_helper.from_array(np.array([1.0], np.float32))), [1])
    then = helper.make_graph([helper.make_node("Loop", ["three", "", "x"], ["tv", "tm"], name="middle", body=body)],
                             "then", [], [_vi("tv", None), _vi("tm", None)])
    other = helper.make_graph([helper.make_node("Neg", ["x"], ["ev"]),
                               helper.make_node("Constant", [], ["em"],
                                                value=numpy_helper.from_array(np.zeros((3, 1), np.float32)))],
                              "else", [], [_vi("ev", None), _vi("em", None)])
    nodes = [helper.make_node("Mul", ["x", "x"], ["w"]),
             helper.make_node("ReduceSum", ["x"], ["total"], keepdims=0),
             helper.make_node("Greater", ["total", "zero"], ["c"]),
             helper.make_node("If", ["c"], ["y", "marks"], name="top", then_branch=then, else_branch=other)]
    model = _model(nodes, [_vi("x", [2])], [_vi("y", None), _vi("marks", None)],
                   [_init("zero", np.float32(0)), _init("ten", np.float32(10)), _init("k", np.float32(0.5)),
                    _init("three", np.int64(3))])
    session = gonnx.InferenceSession(model, device=device)
    for x in ([1.0, 2.0], [-1.0, -2.0], [2.0, 1.5]):
        _check(session, model, {"x": np.array(x, np.float32)})


def test_if_inside_a_build_time_if_runs_as_control_flow(device):
    """An If whose condition is known when the graph is built (x's batch size) around an If on
    the GPU: the outer If then runs its branch as a graph of its own."""
    inner_then = helper.make_graph([helper.make_node("Neg", ["x"], ["it"])], "it", [], [_vi("it", None)])
    inner_else = helper.make_graph([helper.make_node("Relu", ["x"], ["ie"])], "ie", [], [_vi("ie", None)])
    then = helper.make_graph([helper.make_node("ReduceSum", ["x"], ["s"], keepdims=0),
                              helper.make_node("Greater", ["s", "zero"], ["ic"]),
                              helper.make_node("If", ["ic"], ["t"], name="inner", then_branch=inner_then,
                                               else_branch=inner_else)], "then", [], [_vi("t", None)])
    other = helper.make_graph([helper.make_node("Identity", ["x"], ["e"])], "else", [], [_vi("e", None)])
    nodes = [helper.make_node("Shape", ["x"], ["shape"]),
             helper.make_node("Gather", ["shape", "zero_i"], ["n"], axis=0),
             helper.make_node("Greater", ["n", "one_i"], ["c"]),
             helper.make_node("If", ["c"], ["y"], name="outer", then_branch=then, else_branch=other)]
    model = _model(nodes, [_vi("x", ["N", 2])], [_vi("y", None)],
                   [_init("zero", np.float32(0)), _init("zero_i", np.int64(0)), _init("one_i", np.int64(1))])
    session = gonnx.InferenceSession(model, device=device)
    x = np.array([[1.0, -3.0], [2.0, 0.5]], np.float32)
    for feed in (x, -x, x[:1]):
        _check(session, model, {"x": feed})


def test_control_flow_after_control_flow(device):
    """An If on the GPU, then a Loop over its output, then a NonZero (three splits in a row)."""
    then = helper.make_graph([helper.make_node("Relu", ["x"], ["t"])], "then", [], [_vi("t", None)])
    other = helper.make_graph([helper.make_node("Neg", ["x"], ["e"])], "else", [], [_vi("e", None)])
    body = helper.make_graph([helper.make_node("Identity", ["cond_in"], ["cond_out"]),
                              helper.make_node("Sub", ["v_in", "one"], ["v_out"])],
                             "body", [_vi("i", [], I64), _vi("cond_in", [], B), _vi("v_in", [4])],
                             [_vi("cond_out", [], B), _vi("v_out", [4])])
    nodes = [helper.make_node("ReduceSum", ["x"], ["s"], keepdims=0),
             helper.make_node("Greater", ["s", "zero"], ["c"]),
             helper.make_node("If", ["c"], ["b"], name="first", then_branch=then, else_branch=other),
             helper.make_node("Loop", ["M", "", "b"], ["v"], name="second", body=body),
             helper.make_node("NonZero", ["v"], ["nz"])]
    model = _model(nodes, [_vi("x", [4])], [_vi("v", [4]), _vi("nz", None, I64)],
                   [_init("zero", np.float32(0)), _init("one", np.float32(1)), _init("M", np.int64(2))])
    session = gonnx.InferenceSession(model, device=device)
    for x in ([3.0, -1.0, 2.0, 0.5], [-3.0, -1.0, 2.0, -0.5], [1.0, 2.0, 2.0, 3.0]):
        _check(session, model, {"x": np.array(x, np.float32)})


def test_the_limit_binds_a_loop_nested_in_a_loop(device):
    """The session's loop_iteration_limit, set after construction, stops an inner Loop that
    never ends, with the inner node named."""
    inner = helper.make_graph([helper.make_node("Identity", ["ic_in"], ["ic_out"]),
                               helper.make_node("Add", ["iv_in", "one"], ["iv_out"])],
                              "inner_body", [_vi("j", [], I64), _vi("ic_in", [], B), _vi("iv_in", [1])],
                              [_vi("ic_out", [], B), _vi("iv_out", [1])])
    body = helper.make_graph([helper.make_node("Identity", ["cond_in"], ["cond_out"]),
                              helper.make_node("Loop", ["", "yes", "v_in"], ["v_out"], name="inner", body=inner)],
                             "body", [_vi("i", [], I64), _vi("cond_in", [], B), _vi("v_in", [1])],
                             [_vi("cond_out", [], B), _vi("v_out", [1])])
    nodes = [helper.make_node("Abs", ["x"], ["ax"]),
             helper.make_node("Loop", ["M", "", "ax"], ["y"], name="outer", body=body)]
    model = _model(nodes, [_vi("x", [1])], [_vi("y", [1])],
                   [_init("one", np.float32(1)), _init("M", np.int64(2)), _init("yes", np.array(True))])
    session = gonnx.InferenceSession(model, device=device)
    session.loop_iteration_limit = 5
    with pytest.raises(InvalidArgumentError, match="Loop 'inner': 5 iterations ran and its condition is still true"):
        session.run(None, {"x": np.ones(1, np.float32)})


# ------------------------------------------------------------------------------ Scan
@pytest.mark.parametrize("in_axis,in_dir,out_axis,out_dir", [(0, 0, 0, 0), (1, 1, 1, 0), (0, 1, -1, 1)])
def test_scan_axes_and_directions(device, in_axis, in_dir, out_axis, out_dir):
    """A running sum over the scanned axis (forward or reverse), its partial sums stacked on
    the output axis in either direction; the body reads the outer scale."""
    body = helper.make_graph([helper.make_node("Add", ["acc_in", "row"], ["acc_out"]),
                              helper.make_node("Mul", ["acc_out", "scale"], ["out"])],
                             "body", [_vi("acc_in", [3]), _vi("row", [3])], [_vi("acc_out", [3]), _vi("out", [3])])
    nodes = [helper.make_node("Abs", ["x"], ["ax"]),
             helper.make_node("Scan", ["acc0", "ax"], ["acc", "partial"], name="scan", body=body, num_scan_inputs=1,
                              scan_input_axes=[in_axis], scan_input_directions=[in_dir],
                              scan_output_axes=[out_axis], scan_output_directions=[out_dir])]
    shape = [4, 3] if in_axis == 0 else [3, 4]
    model = _model(nodes, [_vi("x", shape), _vi("acc0", [3])], [_vi("acc", [3]), _vi("partial", None)],
                   [_init("scale", np.float32(0.5))], opset=16)
    session = gonnx.InferenceSession(model, device=device)
    x = np.random.default_rng(1).standard_normal(shape).astype(np.float32)
    _check(session, model, {"x": x, "acc0": np.ones(3, np.float32)})


def _scan8_model(directions):
    body = helper.make_graph([helper.make_node("Add", ["acc_in", "row"], ["acc_out"]),
                              helper.make_node("Mul", ["acc_out", "row"], ["out"])],
                             "body", [_vi("acc_in", [2]), _vi("row", [2])], [_vi("acc_out", [2]), _vi("out", [2])])
    nodes = [helper.make_node("Scan", ["lens", "acc0", "x"], ["acc", "outs"], name="scan8", body=body,
                              num_scan_inputs=1, directions=directions)]
    return _model(nodes, [_vi("lens", [3], I64), _vi("acc0", [3, 2]), _vi("x", [3, 4, 2])],
                  [_vi("acc", [3, 2]), _vi("outs", [3, 4, 2])], opset=8)


@pytest.mark.parametrize("directions", [[0], [1]])
def test_scan_of_opset_8_scans_each_batch_row(device, directions):
    """Scan-8: a batch axis before the scanned one; sequence_lens giving whole sequences."""
    model = _scan8_model(directions)
    session = gonnx.InferenceSession(model, device=device)
    rng = np.random.default_rng(6)
    feeds = {"lens": np.full(3, 4, np.int64), "acc0": rng.standard_normal((3, 2)).astype(np.float32),
             "x": rng.standard_normal((3, 4, 2)).astype(np.float32)}
    _check(session, model, feeds)
    with pytest.raises(InvalidArgumentError, match="Scan 'scan8': sequence_lens \\[4, 2, 4\\]: gpudml runs Scan-8 "
                                                   "over whole sequences only \\(each 4\\)"):
        session.run(None, {**feeds, "lens": np.array([4, 2, 4], np.int64)})


# ------------------------------------------------------------------------------ refusals
@pytest.mark.any_class  # (refused before any GPU work / a page: the same under either class)
def test_if_branches_of_other_types_are_refused_at_construction():
    then = helper.make_graph([helper.make_node("Identity", ["x"], ["t"])], "then", [], [_vi("t", None)])
    other = helper.make_graph([helper.make_node("Cast", ["x"], ["e"], to=I64)], "else", [], [_vi("e", None, I64)])
    nodes = [helper.make_node("ReduceSum", ["x"], ["s"], keepdims=0),
             helper.make_node("Greater", ["s", "zero"], ["c"]),
             helper.make_node("If", ["c"], ["y"], name="mixed", then_branch=then, else_branch=other)]
    model = _model(nodes, [_vi("x", [2])], [_vi("y", None)], [_init("zero", np.float32(0))])
    with pytest.raises(UnsupportedError, match="mixed \\(If, opset 17\\): output 0: then_branch gives FLOAT "
                                               "\\('t'\\), else_branch INT64 \\('e'\\): an If's branches give the "
                                               "same element types"):
        gonnx.InferenceSession(model)


@pytest.mark.any_class  # (refused before any GPU work / a page: the same under either class)
def test_loop_without_trip_count_or_condition_is_refused_at_construction():
    nodes = [helper.make_node("Loop", ["", "", "v0"], ["v"], name="forever", body=_loop_body(False))]
    model = _model(nodes, [_vi("v0", [4]), _vi("x", [4])], [_vi("v", [4])], [_init("one", np.float32(1))])
    with pytest.raises(UnsupportedError, match="forever \\(Loop, opset 17\\): neither a trip count M \\(input 0\\) "
                                               "nor a condition \\(input 1\\)"):
        gonnx.InferenceSession(model)


def test_a_body_that_never_ends_stops_at_the_iteration_limit(device):
    """cond input true, passed through: the loop would never end; the session's limit stops
    it with the node named, and the session runs on afterwards."""
    model = _loop_model("", "c0", False)
    session = gonnx.InferenceSession(model, device=device)
    session.loop_iteration_limit = 20
    feeds = {"x0": np.ones(4, np.float32), "v0": np.zeros(4, np.float32), "c0": np.array(True)}
    with pytest.raises(InvalidArgumentError, match="Loop 'loop': 20 iterations ran and its condition is still "
                                                   "true: past the session's loop_iteration_limit 20"):
        session.run(None, feeds)
    _check(session, model, {**feeds, "c0": np.array(False)})


@pytest.mark.any_class  # (refused before any GPU work / a page: the same under either class)
def test_a_known_trip_count_past_the_limit_is_refused_at_construction():
    nodes = [helper.make_node("Abs", ["x0"], ["x"]),
             helper.make_node("Loop", ["M", "", "v0"], ["v", "sums"], name="long", body=_loop_body(False))]
    model = _model(nodes, [_vi("x0", [4]), _vi("v0", [4])], [_vi("v", [4])],
                   [_init("one", np.float32(1)), _init("M", np.int64(gonnx.session.LOOP_ITERATION_LIMIT + 1))])
    with pytest.raises(UnsupportedError, match="long \\(Loop, opset 17\\): its trip count M is 65537, past the "
                                               "session's loop_iteration_limit 65536"):
        gonnx.InferenceSession(model)


# ------------------------------------------------------------------------------ ONNX's node tests
def _control_tests() -> list[str]:
    def ops(graph):
        for node in graph.node:
            yield node.op_type
            for a in node.attribute:
                if a.type == onnx.AttributeProto.GRAPH:
                    yield from ops(a.g)

    names = []
    for folder in sorted(NODE_TESTS.glob("test_*")):
        if (folder / "model.onnx").exists():
            model = onnx.load(str(folder / "model.onnx"), load_external_data=False)
            if {"If", "Loop", "Scan"} & set(ops(model.graph)):
                names.append(folder.name)
    return names


_SEQUENCES = "a sequence or optional value: DirectML has tensors only (issue #45's sequence ops: branch w6-seq)"

#: ONNX's node tests with control flow that the session refuses, and why.
NOT_RUN = {
    **{name: _SEQUENCES for name in (
        "test_if_opt", "test_if_seq", "test_loop13_seq", "test_loop16_seq_none",
        "test_sequence_map_add_1_sequence_1_tensor_expanded", "test_sequence_map_add_2_sequences_expanded",
        "test_sequence_map_extract_shapes_expanded", "test_sequence_map_identity_1_sequence_1_tensor_expanded",
        "test_sequence_map_identity_1_sequence_expanded", "test_sequence_map_identity_2_sequences_expanded")},
    "test_range_bfloat16_type_positive_delta_expanded": "numpy dtype bfloat16 has no DirectML data type",
}

CONTROL_TESTS = _control_tests()


@pytest.mark.any_class  # (refused before any GPU work / a page: the same under either class)
def test_the_control_flow_node_tests_are_found_and_the_page_counts_them():
    assert {"test_if", "test_loop11", "test_scan9_sum", "test_range_float_type_positive_delta_expanded"} \
        <= set(CONTROL_TESTS)
    assert set(NOT_RUN) <= set(CONTROL_TESTS)
    page = " ".join((Path(__file__).resolve().parent.parent / "docs" / "onnx.md").read_text().split())
    assert (f"a function expanded into a Loop: {len(CONTROL_TESTS)}) run through a session in "
            f"`tests/test_onnx_control_flow.py`: {len(CONTROL_TESTS) - len(NOT_RUN)} pass; {len(NOT_RUN)} are "
            f"refused") in page


@pytest.mark.parametrize("name", CONTROL_TESTS)
def test_control_flow_node_test_through_session(name, device):
    folder = NODE_TESTS / name
    try:
        model = onnx.load(str(folder / "model.onnx"))
        for v in [*model.graph.input, *model.graph.output]:
            if v.type.WhichOneof("value") != "tensor_type":
                raise UnsupportedError(f"{_SEQUENCES} ({v.name})")
        data = folder / "test_data_set_0"
        inputs = [_read(p) for p in sorted(data.glob("input_*.pb"), key=_index)]
        want = [_read(p) for p in sorted(data.glob("output_*.pb"), key=_index)]
        session = gonnx.InferenceSession(model, device=device)
        got = session.run(None, dict(zip([v.name for v in session.get_inputs()], inputs)))
    except REFUSALS as exc:
        assert name in NOT_RUN, f"{name}: {type(exc).__name__}: {exc}"
        assert NOT_RUN[name] in str(exc), f"{name}: listed for {NOT_RUN[name]!r}, raised {exc}"
        return
    assert name not in NOT_RUN, f"{name} runs through the session now: take it off NOT_RUN"
    compare(name, got, want)
