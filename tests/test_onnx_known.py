"""gpudml.onnx.InferenceSession: dimensions as onnxruntime reads them, and what is known when
the graph is built (gpudml/onnx/analysis.py; docs/onnx.md, "What happens to a model").

- A dim_param, -1 (paddle2onnx's dynamic dimension), 0 and no shape at all are dynamic; a
  feed is checked against the fixed dimensions only, a wrong one named by input and axis.
- An If whose condition is known when the graph is built (from input shapes) runs its
  branch, which reads the outer graph's tensors; a Loop of known values is evaluated on the
  host with the outer values its body reads; both match onnxruntime.
- Value inputs: a parameter DirectML needs when the graph is built (a reduction's axes, a
  Reshape's shape, ConstantOfShape's shape, an If's condition) computed from graph inputs is
  computed on the host from their values, and the session builds per distinct value (a
  bounded cache) as per shape, through run() and IO binding alike.
- What gpudml cannot run is refused at construction, listing every node, subgraph nodes by
  their path: control flow on what gpudml cannot run, the shape of an output gpudml cannot
  compute (Unique's) where a value known when the graph is built is needed.
- A mapped node whose output sizes depend on the data (NonZero) splits the graph: the part
  after it is built per observed count, so a Reshape to its shape and an If on it run.
"""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import gpudml.onnx as gonnx
from gpudml.errors import InvalidArgumentError, UnsupportedError


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


# ------------------------------------------------------------------------------ known when built
def test_if_on_a_shape_condition_runs_its_branch(device):
    """cond = Shape(x)[0] > 2, known once x's shape is given: the taken branch is recorded in
    the If's place, reading the outer x and w (and folding a ConstantOfShape of Shape(x))."""
    then = helper.make_graph(
        [helper.make_node("Shape", ["x"], ["ts"]),
         helper.make_node("ConstantOfShape", ["ts"], ["half"], value=numpy_helper.from_array(np.array([0.5],
                                                                                                np.float32))),
         helper.make_node("Mul", ["x", "w"], ["tm"]),
         helper.make_node("Add", ["tm", "half"], ["t"])],
        "then", [], [_vi("t", None)])
    other = helper.make_graph([helper.make_node("Neg", ["x"], ["e"])], "else", [], [_vi("e", None)])
    nodes = [helper.make_node("Shape", ["x"], ["s"]),
             helper.make_node("Gather", ["s", "zero"], ["n"], axis=0),
             helper.make_node("Greater", ["n", "two"], ["c"]),
             helper.make_node("If", ["c"], ["b"], name="shape_if", then_branch=then, else_branch=other),
             helper.make_node("Relu", ["b"], ["y"])]
    inits = [_init("zero", np.int64(0)), _init("two", np.int64(2)),
             _init("w", np.array([1.0, -2.0, 3.0, 0.5], np.float32))]
    model = _model(nodes, [_vi("x", ["N", 4])], [_vi("y", ["N", 4])], inits)
    session = gonnx.InferenceSession(model, device=device)
    rng = np.random.default_rng(2)
    for batch in (1, 3):  # the else branch, then the then branch
        x = rng.standard_normal((batch, 4)).astype(np.float32)
        (got,) = session.run(None, {"x": x})
        (want,), _ = oracle(model, {"x": x})
        np.testing.assert_allclose(got, want, atol=1e-6)


def test_loop_of_known_values_is_evaluated_on_the_host(device):
    """A Loop whose trip count is an initializer and whose body reads an outer initializer:
    evaluated on the host when the graph is built (its outer values supplied)."""
    body = helper.make_graph(
        [helper.make_node("Identity", ["cond_in"], ["cond_out"]),
         helper.make_node("Add", ["v_in", "step"], ["v_out"])],
        "body", [_vi("i", [], TensorProto.INT64), _vi("cond_in", [], TensorProto.BOOL), _vi("v_in", [4])],
        [_vi("cond_out", [], TensorProto.BOOL), _vi("v_out", [4])])
    nodes = [helper.make_node("Loop", ["trips", "", "v0"], ["acc"], name="loop", body=body),
             helper.make_node("Add", ["x", "acc"], ["y"])]
    inits = [_init("trips", np.int64(3)), _init("v0", np.zeros(4, np.float32)),
             _init("step", np.array([1.0, 2.0, 3.0, 4.0], np.float32))]
    model = _model(nodes, [_vi("x", [2, 4])], [_vi("y", [2, 4])], inits)
    session = gonnx.InferenceSession(model, device=device)
    x = np.random.default_rng(3).standard_normal((2, 4)).astype(np.float32)
    (got,) = session.run(None, {"x": x})
    (want,), _ = oracle(model, {"x": x})
    np.testing.assert_allclose(got, want, atol=1e-6)
    assert session.dispatch_count == 1


def _refusal(model) -> list[str]:
    """The lines of the UnsupportedError that constructing `model` raises."""
    with pytest.raises(UnsupportedError) as info:
        gonnx.InferenceSession(model)
    return [line.strip() for line in str(info.value).splitlines()[1:]]


def _if_on_data():
    """y = x if sum(x) > 0 else -x: an If on a condition computed from the data."""
    then = helper.make_graph([helper.make_node("Identity", ["x"], ["t"])], "then", [], [_vi("t", None)])
    other = helper.make_graph([helper.make_node("Neg", ["x"], ["e"], name="neg")], "else", [], [_vi("e", None)])
    nodes = [helper.make_node("ReduceSum", ["x"], ["total"], keepdims=0),
             helper.make_node("Greater", ["total", "zero"], ["c"]),
             helper.make_node("If", ["c"], ["y"], name="cond_if", then_branch=then, else_branch=other)]
    return _model(nodes, [_vi("x", ["N", 4])], [_vi("y", None)], [_init("zero", np.float32(0))])


def test_if_on_a_data_condition_runs_on_the_gpu(device):
    """The condition is computed on the GPU and read back (the graph split at the If): x is
    no value input; one build per shape, each branch compiled once
    (tests/test_onnx_control_flow.py tests control flow further)."""
    session = gonnx.InferenceSession(_if_on_data(), device=device)
    assert session.value_inputs == []
    for x in (np.arange(8, dtype=np.float32).reshape(2, 4), -np.arange(8, dtype=np.float32).reshape(2, 4) - 1) * 2:
        (got,) = session.run(None, {"x": x})
        np.testing.assert_array_equal(got, x if x.sum() > 0 else -x)
    (built,) = session._compiled.values()
    assert len(built.scopes) == 2


def test_control_flow_on_what_gpudml_cannot_run_is_refused_with_its_subgraph_nodes():
    """An If on a condition computed from a Unique (no mapping), with a Unique in its
    then_branch: all listed at construction."""
    then = helper.make_graph([helper.make_node("Unique", ["x"], ["nzi"], name="uq"),
                              helper.make_node("Cast", ["nzi"], ["t"], to=TensorProto.FLOAT)],
                             "then", [], [_vi("t", None)])
    other = helper.make_graph([helper.make_node("Neg", ["x"], ["e"], name="neg")], "else", [], [_vi("e", None)])
    nodes = [helper.make_node("Unique", ["x"], ["idx"], name="outer_uq"),
             helper.make_node("ReduceSum", ["idx"], ["total"], keepdims=0),
             helper.make_node("Greater", ["total", "zero"], ["c"]),
             helper.make_node("If", ["c"], ["y"], name="cond_if", then_branch=then, else_branch=other)]
    model = _model(nodes, [_vi("x", ["N", 4])], [_vi("y", None)], [_init("zero", np.int64(0))])
    lines = _refusal(model)
    assert lines == [
        "outer_uq (Unique, opset 17): no DirectML mapping in gpudml (see docs/onnx.md for the mapped ops)",
        "cond_if (If, opset 17): its condition (input 0) is computed from what gpudml cannot run",
        "If 'cond_if' then_branch / uq (Unique, opset 17): no DirectML mapping in gpudml (see docs/onnx.md for the "
        "mapped ops)"]


def test_the_shape_of_a_data_dependent_output_is_known_after_the_split(device):
    """NonZero's output sizes are known once its count is read back: a Reshape to them and
    an If on them (a detection model's pattern) run, the part after the split built per
    count and cached; as onnxruntime, an empty result included."""
    then = helper.make_graph([helper.make_node("Identity", ["x"], ["t"])], "then", [], [_vi("t", None)])
    other = helper.make_graph([helper.make_node("Neg", ["x"], ["e"])], "else", [], [_vi("e", None)])
    nodes = [helper.make_node("NonZero", ["x"], ["idx"], name="nz"),
             helper.make_node("Shape", ["idx"], ["s"], name="shape"),
             helper.make_node("Gather", ["s", "one"], ["count"], axis=0, name="count"),
             helper.make_node("Reshape", ["x", "shape2"], ["r"], name="reshape"),
             helper.make_node("Unsqueeze", ["count", "zero1"], ["count1"]),
             helper.make_node("Expand", ["fill", "count1"], ["e1"]),  # (its shape: the count)
             helper.make_node("Equal", ["count", "zero"], ["none"], name="none"),
             helper.make_node("If", ["none"], ["y"], name="det_if", then_branch=then, else_branch=other)]
    model = _model(nodes, [_vi("x", [2, 3])], [_vi("idx", None, TensorProto.INT64), _vi("r", None), _vi("y", None),
                                               _vi("e1", None)],
                   [_init("one", np.int64(1)), _init("zero", np.int64(0)), _init("zero1", np.array([0], np.int64)),
                    _init("shape2", np.array([3, 2], np.int64)), _init("fill", np.array([2.5], np.float32))])
    session = gonnx.InferenceSession(model, device=device)
    x = np.array([[1, 0, 2], [0, 0, 3]], np.float32)
    for feed in (x, -x, x, np.zeros_like(x)):
        got = session.run(None, {"x": feed})
        want, _ = oracle(model, {"x": feed})
        for g, w in zip(got, want):
            assert g.dtype == w.dtype and g.shape == w.shape
            np.testing.assert_array_equal(g, w)
    (built,) = session._compiled.values()
    assert built.split is not None and sorted(built._after) == [0, 3]  # one part after per count seen


def test_a_split_graph_through_io_binding(device):
    """Through IO binding, the parts before and after the split stay on the device (the
    count alone is read back): the outputs of both parts as onnxruntime's; an output empty
    for these inputs (a count of 0) is refused with its name, as an empty input is."""
    nodes = [helper.make_node("Relu", ["x"], ["r"]),
             helper.make_node("NonZero", ["r"], ["idx"]),
             helper.make_node("Cast", ["idx"], ["f"], to=TensorProto.FLOAT),
             helper.make_node("ReduceSum", ["f"], ["total"], keepdims=0)]
    model = _model(nodes, [_vi("x", ["N", 5])], [_vi("idx", None, TensorProto.INT64), _vi("total", None),
                                                 _vi("r", None)])
    session = gonnx.InferenceSession(model, device=device)
    x = np.random.default_rng(6).standard_normal((4, 5)).astype(np.float32)
    binding = session.io_binding()
    binding.bind_input("x", device.tensor(x))
    for name in ("idx", "total", "r"):
        binding.bind_output(name)
    session.run_with_iobinding(binding)
    want, _ = oracle(model, {"x": x})
    for got, w in zip(binding.copy_outputs_to_cpu(), want):
        np.testing.assert_array_equal(got.reshape(w.shape), w)
    binding.bind_input("x", device.tensor(-np.abs(x) - 1))
    with pytest.raises(InvalidArgumentError, match="output 'idx' is an empty tensor for these inputs"):
        session.run_with_iobinding(binding)


def test_loop_at_run_time_lists_its_body_nodes_gpudml_cannot_run():
    body = helper.make_graph(
        [helper.make_node("Identity", ["cond_in"], ["cond_out"]),
         helper.make_node("Add", ["v_in", "x"], ["v_out"]),
         helper.make_node("Unique", ["v_out"], ["dead"], name="loop_uq")],
        "body", [_vi("i", [], TensorProto.INT64), _vi("cond_in", [], TensorProto.BOOL), _vi("v_in", [4])],
        [_vi("cond_out", [], TensorProto.BOOL), _vi("v_out", [4])])
    nodes = [helper.make_node("Loop", ["trips", "", "x"], ["y"], name="loop", body=body)]
    model = _model(nodes, [_vi("x", [4]), _vi("trips", [], TensorProto.INT64)], [_vi("y", [4])])
    lines = _refusal(model)
    assert lines == ["Loop 'loop' body / loop_uq (Unique, opset 17): no DirectML mapping in gpudml (see "
                         "docs/onnx.md for the mapped ops)"]


def test_constant_of_shape_of_an_input_runs_per_value(device):
    """It raised KeyError: 'ConstantOfShape' from the builder; then it was refused; now the
    shape is a value input: each run's shape builds a DML_FILL_VALUE_CONSTANT node (as the
    execution provider runs it), then the Add: two dispatches."""
    model = _model([helper.make_node("ConstantOfShape", ["shape"], ["z"], name="cos",
                                     value=numpy_helper.from_array(np.array([1.5], np.float32))),
                    helper.make_node("Add", ["z", "x"], ["y"])],
                   [_vi("shape", [2], TensorProto.INT64), _vi("x", [1, 3])], [_vi("y", None)])
    session = gonnx.InferenceSession(model, device=device)
    assert session.value_inputs == ["shape"]
    x = np.array([[1, 2, 3]], np.float32)
    for shape in ([2, 3], [4, 1]):
        feeds = {"shape": np.array(shape, np.int64), "x": x}
        (got,) = session.run(None, feeds)
        (want,), _ = oracle(model, feeds)
        np.testing.assert_array_equal(got, want)
        assert session.dispatch_count == 2


def _reduce_with_axes_input():
    nodes = [helper.make_node("ReduceSum", ["x", "axes"], ["y"], keepdims=1)]
    return _model(nodes, [_vi("x", [2, 3, 4]), _vi("axes", [None], TensorProto.INT64)], [_vi("y", None)], opset=18)


def test_value_inputs_build_per_value_in_a_bounded_cache(device):
    """A reduction's axes as a graph input: one build per distinct value, the least recently
    used dropped past build_cache_size; an empty axes (ONNX: every axis) is a value too."""
    session = gonnx.InferenceSession(_reduce_with_axes_input(), device=device, build_cache_size=2)
    x = np.random.default_rng(5).standard_normal((2, 3, 4)).astype(np.float32)
    for axes in ([1], [0, 2], [1], [-1], []):
        feeds = {"x": x, "axes": np.array(axes, np.int64)}
        (got,) = session.run(None, feeds)
        np.testing.assert_allclose(got, x.sum(axis=tuple(axes) or None, keepdims=True), rtol=1e-5, atol=1e-6)
        assert len(session._compiled) <= 2
    kept = [np.frombuffer(b, np.dtype(dt)).tolist() for _, values in session._compiled for _, dt, _, b in values]
    assert kept == [[-1], []]  # the two most recent
    with pytest.raises(InvalidArgumentError, match="build_cache_size must be an int >= 1"):
        gonnx.InferenceSession(_reduce_with_axes_input(), build_cache_size=0)


def test_value_inputs_through_io_binding(device):
    """A bound Tensor that is a value input is read back once per run for its value."""
    session = gonnx.InferenceSession(_reduce_with_axes_input(), device=device)
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    binding = session.io_binding()
    binding.bind_input("x", device.tensor(x))
    binding.bind_input("axes", np.array([2], np.int64))
    binding.bind_output("y")
    session.run_with_iobinding(binding)
    np.testing.assert_array_equal(binding.copy_outputs_to_cpu()[0], x.sum(axis=2, keepdims=True))
