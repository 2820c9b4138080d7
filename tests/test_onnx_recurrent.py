"""ONNX LSTM, GRU and RNN through a session: what ONNX's node tests leave out (they run in
tests/test_onnx_nodes.py and tests/test_onnx_session.py), against onnxruntime's CPU provider.

The mapping (gpudml/onnx/mapping.py, `_recurrent`) is the provider's
DmlOperatorRecurrentNeuralNetwork.cpp: one DML_OPERATOR_LSTM / GRU / RNN over ONNX's tensors
at DirectML's 4-D sizes. Here, per op: both directions (bidirectional, reverse), `layout` 1
(batch first: strides in and out), initial states, sequence lengths (an initializer and a
graph input), activation lists with alpha and beta (consumed as stacks, defaults where the
list runs out), LSTM's clip, input_forget and peepholes, GRU's linear_before_reset, opset 7
(no layout) and 22, any subset of the outputs; and what gpudml refuses at construction,
naming the node, the rule and the values. onnxruntime's CPU provider refuses layout 1
("Batchwise recurrent operations (layout == 1) are not supported"): those cases compare with
the layout-0 model of the same weights, its inputs and outputs transposed (`oracle`).
"""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import gpudml.onnx as gonnx
from gpudml.errors import UnsupportedError
from gpudml.onnx.session import TOLERANCE

ort = pytest.importorskip("onnxruntime")

GATES = {"RNN": 1, "GRU": 3, "LSTM": 4}


def recurrent_model(op: str, *, seq=4, batch=3, inputs=5, hidden=6, opset=22, direction="forward", layout=0,
                    bias=True, lengths=None, initial=False, peephole=False, outputs=("Y", "Y_h", "Y_c"),
                    runtime=(), shapes=None, seed=0, **attrs):
    """A one-node model of `op` with seeded random weights (initializers) and X a graph
    input; `lengths` sequence_lens (a graph input where "sequence_lens" is in `runtime`),
    `initial` initial_h (and initial_c) as graph inputs; `outputs` the outputs named (the
    others ''); `shapes` overrides an input's shape (bad input)."""
    rng = np.random.default_rng(seed)
    dirs, gates = (2 if direction == "bidirectional" else 1), GATES[op]
    shapes = {"X": [batch, seq, inputs] if layout else [seq, batch, inputs], "W": [dirs, gates * hidden, inputs],
              "R": [dirs, gates * hidden, hidden], "B": [dirs, 2 * gates * hidden],
              "initial_h": [batch, dirs, hidden] if layout else [dirs, batch, hidden], "P": [dirs, 3 * hidden],
              **(shapes or {})}
    shapes["initial_c"] = shapes["initial_h"]
    graph_inputs = [helper.make_tensor_value_info("X", TensorProto.FLOAT, shapes["X"])]
    inits, names = [], ["X"]

    def add(name, value):
        names.append(name)
        if name in runtime or name in ("initial_h", "initial_c"):
            graph_inputs.append(helper.make_tensor_value_info(
                name, helper.np_dtype_to_tensor_dtype(value.dtype), list(value.shape)))
        else:
            inits.append(numpy_helper.from_array(value, name))

    scale = 1 / np.sqrt(hidden)
    add("W", (rng.standard_normal(shapes["W"]) * scale).astype(np.float32))
    add("R", (rng.standard_normal(shapes["R"]) * scale).astype(np.float32))
    if bias:
        add("B", (rng.standard_normal(shapes["B"]) * 0.5).astype(np.float32))
    elif lengths is not None or initial or peephole:
        names.append("")
    if lengths is not None:
        add("sequence_lens", np.asarray(lengths, np.int32))
    elif initial or peephole:
        names.append("")
    if initial:
        add("initial_h", np.zeros(shapes["initial_h"], np.float32))
        if op == "LSTM":
            add("initial_c", np.zeros(shapes["initial_c"], np.float32))
    elif peephole:
        names += ["", ""]
    if peephole:
        add("P", (rng.standard_normal(shapes["P"]) * 0.5).astype(np.float32))
    count = 3 if op == "LSTM" else 2
    declared = [name if name in outputs else "" for name in ("Y", "Y_h", "Y_c")[:count]]
    while declared and declared[-1] == "":
        declared.pop()
    if opset >= 14:
        attrs["layout"] = layout
    node = helper.make_node(op, names, declared, name=op.lower(), hidden_size=hidden, direction=direction, **attrs)
    graph = helper.make_graph([node], op.lower(), graph_inputs,
                              [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in declared if n],
                              inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def feeds_for(model, seed=1) -> dict:
    rng = np.random.default_rng(seed)
    feeds = {}
    for value in model.graph.input:
        sizes = [d.dim_value for d in value.type.tensor_type.shape.dim]
        if value.type.tensor_type.elem_type == TensorProto.INT32:
            continue
        feeds[value.name] = rng.standard_normal(sizes).astype(np.float32)
    return feeds


def oracle(args: dict, feeds: dict) -> list:
    """onnxruntime's outputs; for layout 1, which its CPU provider refuses ("Batchwise
    recurrent operations (layout == 1) are not supported"), those of the layout-0 model with
    the same weights, its inputs and outputs transposed (ONNX's definition of layout 1)."""
    layout = args.get("layout", 0)
    model = recurrent_model(**{**args, "layout": 0})
    if layout:
        feeds = {k: v.transpose(1, 0, 2) if k in ("X", "initial_h", "initial_c") else v for k, v in feeds.items()}
    outputs = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)
    if not layout:
        return outputs
    names = [o.name for o in model.graph.output]
    return [o.transpose(2, 0, 1, 3) if name == "Y" else o.transpose(1, 0, 2) for name, o in zip(names, outputs)]


def check(args: dict, feeds: dict, device):
    want = oracle(args, feeds)
    got = gonnx.InferenceSession(recurrent_model(**args), device=device).run(None, feeds)
    assert len(got) == len(want)
    for k, (g, w) in enumerate(zip(got, want)):
        assert g.shape == w.shape and g.dtype == w.dtype, (k, g.shape, w.shape)
        np.testing.assert_allclose(g, w, rtol=0, atol=TOLERANCE * max(np.abs(w).max(), 1e-30), err_msg=f"output {k}")


CASES = {
    # LSTM: both directions, batch first, states in, lengths per batch row, peepholes, every output
    "LSTM bidirectional layout 1 lengths peepholes": dict(
        op="LSTM", direction="bidirectional", layout=1, lengths=[4, 2, 3], initial=True, peephole=True),
    # LSTM: the activation stacks (HardSigmoid's alpha and beta, LeakyRelu's alpha; Elu's default), clip, input_forget
    "LSTM activations clip input_forget": dict(
        op="LSTM", direction="reverse", activations=["HardSigmoid", "LeakyRelu", "Elu"], activation_alpha=[0.3, 0.2],
        activation_beta=[0.4], clip=1.5, input_forget=1),
    # LSTM-7 (no layout attribute), no bias, Y_c alone
    "LSTM-7 Y_c alone": dict(op="LSTM", opset=7, bias=False, outputs=("Y_c",)),
    # sequence_lens a graph input (INT32 read as UINT32: one CAST in the graph)
    "LSTM lengths at run time": dict(op="LSTM", lengths=[1, 4, 2], runtime=("sequence_lens",)),
    # bidirectional with each direction's own activations (the stacks run on into the backward direction's)
    "LSTM bidirectional activations": dict(
        op="LSTM", direction="bidirectional", activations=["Sigmoid", "Softsign", "ScaledTanh", "HardSigmoid",
                                                           "Tanh", "Softplus"],
        activation_alpha=[0.9, 0.3], activation_beta=[1.2]),
    "GRU reverse layout 1 linear_before_reset": dict(
        op="GRU", direction="reverse", layout=1, initial=True, lengths=[3, 4, 1], linear_before_reset=1),
    "GRU bidirectional": dict(op="GRU", direction="bidirectional", initial=True, outputs=("Y",)),
    "GRU-14 activations": dict(op="GRU", opset=14, activations=["HardSigmoid", "Softplus"], activation_alpha=[0.25],
                               activation_beta=[0.55]),
    "RNN bidirectional activations": dict(
        op="RNN", direction="bidirectional", activations=["Relu", "ThresholdedRelu"], activation_alpha=[0.1]),
    "RNN layout 1 lengths Affine": dict(op="RNN", layout=1, lengths=[2, 4, 3], initial=True, activations=["Affine"],
                                        activation_alpha=[0.5], activation_beta=[0.1]),
}


@pytest.mark.parametrize("case", list(CASES))
def test_matches_onnxruntime(case, device):
    feeds = feeds_for(recurrent_model(**CASES[case]))
    if "sequence_lens" in CASES[case].get("runtime", ()):
        feeds["sequence_lens"] = np.asarray(CASES[case]["lengths"], np.int32)
    check(CASES[case], feeds, device)


REFUSED = {
    "W of the wrong shape": (dict(op="LSTM", shapes={"W": [1, 20, 5]}),
                             "W must have shape [1, 24, 5]"),
    "R of another hidden size": (dict(op="GRU", shapes={"R": [1, 18, 5]}),
                                 "hidden_size 6 but R has shape [1, 18, 5]"),
    "B of the wrong shape": (dict(op="RNN", shapes={"B": [1, 6]}), "B must have shape [1, 12]"),
    "initial_h of the wrong layout": (dict(op="GRU", layout=1, initial=True, shapes={"initial_h": [1, 3, 6]}),
                                      "initial_h must have shape [3, 1, 6]"),
    "lengths beyond the sequence": (dict(op="LSTM", lengths=[4, 5, 1]),
                                    "sequence_lens must lie in [0, 4] (the sequence length), got [4, 5, 1]"),
    "negative lengths": (dict(op="RNN", lengths=[-1, 2, 2]), "got [-1, 2, 2]"),
    "activations of the wrong length": (dict(op="LSTM", activations=["Sigmoid", "Tanh"]),
                                        "activations must name 3 function(s) per direction (3 for direction "
                                        "'forward'), got 2"),
    "one direction's activations on a bidirectional node": (
        dict(op="GRU", direction="bidirectional", activations=["Sigmoid", "Tanh"]),
        "activations must name 2 function(s) per direction (4 for direction 'bidirectional'), got 2"),
    "an unknown activation": (dict(op="RNN", activations=["Swish"]), "activation 'Swish' is not one of"),
    "an unknown direction": (dict(op="GRU", direction="sideways"),
                             "direction 'sideways' is not one of forward, reverse, bidirectional"),
    "GRU's clip": (dict(op="GRU", clip=2.0), "clip on GRU: DML_GRU_OPERATOR_DESC has no clip threshold"),
}


@pytest.mark.any_class  # refused before any kernel is chosen
@pytest.mark.parametrize("case", list(REFUSED))
def test_refused_at_construction(case, device):
    args, reason = REFUSED[case]
    model = recurrent_model(**args)
    with pytest.raises(UnsupportedError, match=args["op"].lower()) as info:
        gonnx.InferenceSession(model, device=device)
    assert reason in str(info.value)


def test_unread_outputs_are_not_asked_for(device):
    """An LSTM whose Y nobody reads asks DirectML for Y_h only (the provider's null desc for
    Y); one whose outputs nobody reads records nothing: the session runs the Relu beside it."""
    model = recurrent_model("LSTM", outputs=("Y_h",))
    graph = model.graph
    graph.node[0].output[0] = "unread_y"  # named, read by nothing
    graph.node.append(helper.make_node("Relu", ["X"], ["relu"]))
    graph.output.append(helper.make_tensor_value_info("relu", TensorProto.FLOAT, None))
    feeds = feeds_for(model)
    session = gonnx.InferenceSession(model, device=device)
    want = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)
    for g, w in zip(session.run(None, feeds), want):
        np.testing.assert_allclose(g, w, rtol=0, atol=TOLERANCE * np.abs(w).max())
    dead = recurrent_model("LSTM", outputs=("Y_h",))
    dead.graph.node.append(helper.make_node("Relu", ["X"], ["relu"]))
    del dead.graph.output[:]
    dead.graph.output.append(helper.make_tensor_value_info("relu", TensorProto.FLOAT, None))
    alone = gonnx.InferenceSession(dead, device=device)
    np.testing.assert_array_equal(alone.run(None, feeds)[0], np.maximum(feeds["X"], 0))
    assert alone.dispatch_count == 1
