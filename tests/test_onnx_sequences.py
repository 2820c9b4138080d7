"""ONNX's sequences and optionals through gpudml.onnx.InferenceSession (gpudml/onnx/sequences.py):
hand-built models against onnxruntime's CPU provider, the onnx wheel's sequence models
(simple/test_sequence_model1-8: the ops with no node test of their own), positions out of
range (an error naming the node, the input, the range and the value, as onnxruntime fails),
sequences as graph inputs and outputs (lists of arrays, onnxruntime's type strings),
tensors computed on the GPU inside sequences (no dispatch for the list itself)."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto as T
from onnx import helper as h
from onnx import numpy_helper

import gpudml as dml
import gpudml.onnx as gonnx
from gpudml.errors import InvalidArgumentError, OutOfBoundsError, UnsupportedError

onnxruntime = pytest.importorskip("onnxruntime")

SIMPLE = Path(onnx.__file__).parent / "backend" / "test" / "data" / "simple"


def _model(nodes, inputs, outputs, initializers=(), opset=17):
    return h.make_model(h.make_graph(nodes, "g", inputs, outputs, list(initializers)),
                        opset_imports=[h.make_opsetid("", opset)])


def _tensor(name, elem=T.FLOAT, shape=None):
    return h.make_tensor_value_info(name, elem, shape)


def _seq(name, elem=T.FLOAT):
    return h.make_tensor_sequence_value_info(name, elem, None)


def _ort(model, feeds):
    session = onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return session.run(None, feeds)


def _same(got, want):
    """Outputs alike: lists item by item, arrays of the same shape and dtype, values exact
    (the sequence ops move data; the GPU ops here are exact on these values)."""
    if isinstance(want, list):
        assert isinstance(got, list) and len(got) == len(want), (got, want)
        for g, w in zip(got, want):
            _same(g, w)
        return
    assert got.shape == want.shape and got.dtype == want.dtype, (got.shape, got.dtype, want.shape, want.dtype)
    np.testing.assert_array_equal(got, want)


def _check(model, feeds, device):
    session = gonnx.InferenceSession(model, device=device)
    got = session.run(None, feeds)
    for g, w in zip(got, _ort(model, feeds)):
        _same(g, w)
    return session


def _x(*shape, dtype=np.float32, start=0):
    return (np.arange(int(np.prod(shape)), dtype=np.float64) - start).astype(dtype).reshape(shape)


def test_every_op_on_gpu_computed_tensors(device):
    """Relu's and Neg's outputs (GPU tensors) in a sequence, inserted, erased, read at
    negative positions, counted, concatenated (axis and new_axis) and split back; the
    sequence itself a graph output. The list operations cost no dispatch."""
    nodes = [
        h.make_node("Relu", ["x"], ["a"]), h.make_node("Neg", ["x"], ["b"]),
        h.make_node("SequenceConstruct", ["a", "b"], ["s1"]),
        h.make_node("SequenceInsert", ["s1", "x", "minus_one"], ["s2"]),  # [a, x, b]
        h.make_node("SequenceInsert", ["s2", "b"], ["s3"]),  # [a, x, b, b]
        h.make_node("SequenceErase", ["s3", "zero"], ["s4"]),  # [x, b, b]
        h.make_node("SequenceErase", ["s4"], ["s5"]),  # [x, b]
        h.make_node("SequenceAt", ["s5", "minus_two"], ["at"]),  # x
        h.make_node("SequenceLength", ["s4"], ["n"]),
        h.make_node("ConcatFromSequence", ["s4"], ["cat"], axis=-1),
        h.make_node("ConcatFromSequence", ["s4"], ["stack"], axis=1, new_axis=1),
        h.make_node("SplitToSequence", ["cat", "two"], ["parts"], axis=1),
        h.make_node("SplitToSequence", ["stack"], ["rows"], axis=1, keepdims=0),
        h.make_node("SequenceAt", ["rows", "one"], ["row"]),
    ]
    consts = [numpy_helper.from_array(np.array(v, np.int64), name) for name, v in
              [("minus_one", -1), ("zero", 0), ("minus_two", -2), ("two", 2), ("one", 1)]]
    model = _model(nodes, [_tensor("x", shape=[2, 3])],
                   [_tensor("at"), _tensor("n", T.INT64, []), _tensor("cat"), _tensor("stack"), _seq("parts"),
                    _seq("s5"), _tensor("row"), _seq("rows")], consts)
    _check(model, {"x": _x(2, 3, start=3)}, device)


def test_list_operations_cost_no_dispatch(device):
    """Relu's output through SequenceConstruct, SequenceInsert, SequenceErase and SequenceAt
    into Neg: the dispatches of Relu and Neg alone (fused as they are without the list)."""
    listed = [h.make_node("Relu", ["x"], ["r"]), h.make_node("SequenceConstruct", ["r", "x"], ["s"]),
              h.make_node("SequenceInsert", ["s", "x", "zero"], ["t"]),
              h.make_node("SequenceErase", ["t", "zero"], ["u"]),
              h.make_node("SequenceErase", ["u"], ["v"]), h.make_node("SequenceAt", ["v", "zero"], ["a"]),
              h.make_node("Neg", ["a"], ["y"])]
    model = _model(listed, [_tensor("x", shape=[4])], [_tensor("y")],
                   [numpy_helper.from_array(np.array(0, np.int64), "zero")])
    direct = _model([h.make_node("Relu", ["x"], ["r"]), h.make_node("Neg", ["r"], ["y"])], [_tensor("x", shape=[4])],
                    [_tensor("y")])
    session = _check(model, {"x": _x(4, start=2)}, device)
    assert session.dispatch_count == gonnx.InferenceSession(direct, device=device).dispatch_count


def test_concat_from_sequence_of_different_shapes_and_empty_items(device):
    """Items of different sizes on the axis, an empty one left out; new_axis at the end
    (axis = rank); items of other sizes elsewhere are refused as onnxruntime refuses them."""
    nodes = [h.make_node("SequenceConstruct", ["a", "b", "c"], ["s"]),
             h.make_node("ConcatFromSequence", ["s"], ["y"], axis=1)]
    model = _model(nodes, [_tensor("a", shape=[2, 1]), _tensor("b", shape=[None, None]), _tensor("c", shape=[2, 3])],
                   [_tensor("y")])
    feeds = {"a": _x(2, 1), "b": _x(2, 4, start=9), "c": _x(2, 3, start=-5)}
    _check(model, feeds, device)
    _check(model, {**feeds, "b": np.zeros((2, 0), np.float32)}, device)
    stack = _model([h.make_node("SequenceConstruct", ["a", "b"], ["s"]),
                    h.make_node("ConcatFromSequence", ["s"], ["y"], axis=2, new_axis=1)],
                   [_tensor("a", shape=[2, 3]), _tensor("b", shape=[2, 3])], [_tensor("y")])
    _check(stack, {"a": _x(2, 3), "b": _x(2, 3, start=4)}, device)
    session = gonnx.InferenceSession(model, device=device)
    with pytest.raises(InvalidArgumentError, match=r"ConcatFromSequence '\(unnamed\)': every item's sizes but axis 1 "
                                                   r"must be the first's: item 0 is \[2, 1\], item 1 is \[3, 4\]"):
        session.run(None, {**feeds, "b": _x(3, 4)})


def test_sequence_as_graph_input_and_output(device):
    """A sequence fed as a list of arrays (tensors of several shapes, one empty) and returned
    as one; get_inputs/get_outputs name the types as onnxruntime does; a changed list (length,
    shapes) builds again."""
    nodes = [h.make_node("SequenceInsert", ["s", "x", "zero"], ["t"]),
             h.make_node("SequenceAt", ["s", "last"], ["y"]),
             h.make_node("Identity", ["t"], ["u"])]
    consts = [numpy_helper.from_array(np.array(0, np.int64), "zero"),
              numpy_helper.from_array(np.array(-1, np.int32), "last")]
    model = _model(nodes, [_seq("s"), _tensor("x", shape=[2])], [_seq("u"), _tensor("y")], consts)
    session = gonnx.InferenceSession(model, device=device)
    ort = onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    assert [(a.name, a.shape, a.type) for a in session.get_inputs()] == \
        [(a.name, a.shape, a.type) for a in ort.get_inputs()] == [("s", [], "seq(tensor(float))"),
                                                                  ("x", [2], "tensor(float)")]
    assert [(a.name, a.type) for a in session.get_outputs()] == [(a.name, a.type) for a in ort.get_outputs()]
    for feed in ([_x(3), _x(2, 2, start=1)], [np.zeros((0, 4), np.float32), _x(1, 5)], [_x(4)]):
        feeds = {"s": feed, "x": _x(2, start=7)}
        for g, w in zip(session.run(None, feeds), ort.run(None, feeds)):
            _same(g, w)
    with pytest.raises(InvalidArgumentError, match=r"input 's' is a sequence \(seq\(tensor\(float\)\)\): feed a "
                                                   r"list of numpy arrays, got ndarray"):
        session.run(None, {"s": _x(3), "x": _x(2)})
    with pytest.raises(InvalidArgumentError, match=r"input 's\[1\]': a tensor of dtype int64, the model's is float32"):
        session.run(None, {"s": [_x(3), np.zeros(2, np.int64)], "x": _x(2)})
    with pytest.raises(UnsupportedError, match="'s' is a seq\\(tensor\\(float\\)\\): an IOBinding binds tensors"):
        session.io_binding()


@pytest.mark.parametrize("op, position, message", [
    ("SequenceAt", 3, r"SequenceAt 'pick': position \(input 1\) must be in \[-3, 2\] for a sequence of 3 tensors "
                      r"\(onnxruntime: invalid sequence index\), got 3"),
    ("SequenceAt", -4, r"must be in \[-3, 2\] for a sequence of 3 tensors .*got -4"),
    ("SequenceInsert", 4, r"SequenceInsert 'pick': position \(input 2\) must be in \[-3, 3\] .*got 4"),
    ("SequenceErase", -4, r"SequenceErase 'pick': position \(input 1\) must be in \[-3, 2\] .*got -4"),
])
def test_positions_out_of_range(op, position, message, device):
    """A position out of range fails as onnxruntime's run fails: an OutOfBoundsError (an
    InvalidArgumentError) naming the node, the input, the range and the value; a constant
    position at construction, a position fed as an input at that run (a value input), the
    session usable afterwards."""
    inputs = {"SequenceAt": ["s", "p"], "SequenceInsert": ["s", "c", "p"], "SequenceErase": ["s", "p"]}[op]
    out = _tensor("y") if op == "SequenceAt" else _seq("y")
    nodes = [h.make_node("Relu", ["a"], ["b"]), h.make_node("Neg", ["a"], ["c"]),
             h.make_node("SequenceConstruct", ["a", "b", "c"], ["s"]), h.make_node(op, inputs, ["y"], name="pick")]
    fed = _model(nodes, [_tensor("a", shape=[2]), _tensor("p", T.INT64, [])], [out])
    session = gonnx.InferenceSession(fed, device=device)
    assert session.value_inputs == ["p"]
    with pytest.raises(OutOfBoundsError, match=message):
        session.run(None, {"a": _x(2), "p": np.array(position)})
    with pytest.raises(Exception, match="Invalid sequence index"):
        _ort(fed, {"a": _x(2), "p": np.array(position)})
    for p in (0, -1):  # in range: as onnxruntime
        for g, w in zip(session.run(None, {"a": _x(2, start=1), "p": np.array(p)}),
                        _ort(fed, {"a": _x(2, start=1), "p": np.array(p)})):
            _same(g, w)
    constant = _model(nodes, [_tensor("a", shape=[2])], [out], [numpy_helper.from_array(np.array(position), "p")])
    with pytest.raises(OutOfBoundsError, match=message):
        gonnx.InferenceSession(constant, device=device)


def test_split_to_sequence_forms(device):
    """split absent (keepdims 1 and 0), a scalar (the last part smaller; larger than the
    axis: one part), 1-D sizes (one of 0: an empty tensor), a negative axis; bad splits."""
    x = _x(3, 5, start=4)
    cases = [({}, None), ({"keepdims": 0}, None), ({}, np.array(2)), ({}, np.array(7)),
             ({}, np.array([1, 0, 4])), ({"axis": -1}, np.array([2, 3]))]
    for attrs, split in cases:
        attrs = {"axis": 1, **attrs}
        inputs = ["x"] if split is None else ["x", "split"]
        consts = [] if split is None else [numpy_helper.from_array(split.astype(np.int64), "split")]
        model = _model([h.make_node("SplitToSequence", inputs, ["s"], **attrs)], [_tensor("x", shape=[3, 5])],
                       [_seq("s")], consts)
        _check(model, {"x": x}, device)
    fed = _model([h.make_node("SplitToSequence", ["x", "split"], ["s"], axis=1, name="cut")],
                 [_tensor("x", shape=[3, 5]), _tensor("split", T.INT64, None)], [_seq("s")])
    session = gonnx.InferenceSession(fed, device=device)
    with pytest.raises(InvalidArgumentError, match=r"SplitToSequence 'cut': split \(input 1\), a scalar, must be > 0, "
                                                   r"got 0"):
        session.run(None, {"x": x, "split": np.array(0)})
    with pytest.raises(InvalidArgumentError, match=r"must hold sizes >= 0 adding up to the input's size on axis 1, 5; "
                                                   r"got \[2, 2\]"):
        session.run(None, {"x": x, "split": np.array([2, 2])})


def test_empty_sequences_and_bool_items(device):
    """SequenceEmpty filled by SequenceInsert; an empty sequence as a graph output (an empty
    list); BOOL tensors in a sequence (UINT8 on the device, bool out)."""
    nodes = [h.make_node("SequenceEmpty", [], ["e"], dtype=T.BOOL),
             h.make_node("Greater", ["x", "zero"], ["g"]),
             h.make_node("SequenceInsert", ["e", "g"], ["s"]),
             h.make_node("SequenceInsert", ["s", "g", "zero64"], ["t"]),
             h.make_node("ConcatFromSequence", ["t"], ["y"], axis=0),
             h.make_node("SequenceLength", ["e"], ["n"])]
    consts = [numpy_helper.from_array(np.array(0, np.float32), "zero"),
              numpy_helper.from_array(np.array(0, np.int64), "zero64")]
    model = _model(nodes, [_tensor("x", shape=[4])], [_seq("e", T.BOOL), _seq("t", T.BOOL), _tensor("y", T.BOOL),
                                                     _tensor("n", T.INT64, [])], consts)
    _check(model, {"x": _x(4, start=2)}, device)


def test_optionals(device):
    """Optional of a GPU tensor and an empty Optional; OptionalHasElement of both and of an
    omitted input; OptionalGetElement; an empty optional fed as None; getting the element of
    an empty optional fails (as in onnxruntime)."""
    opt_type = h.make_optional_type_proto(h.make_tensor_type_proto(T.FLOAT, [2]))
    nodes = [h.make_node("Relu", ["x"], ["r"]), h.make_node("Optional", ["r"], ["o"]),
             h.make_node("Optional", [], ["none"], type=h.make_tensor_type_proto(T.FLOAT, [2])),
             h.make_node("OptionalHasElement", ["o"], ["has"]), h.make_node("OptionalHasElement", ["none"], ["hasnt"]),
             h.make_node("OptionalHasElement", [], ["omitted"]), h.make_node("OptionalGetElement", ["o"], ["y"]),
             h.make_node("OptionalHasElement", ["fed"], ["fed_has"])]
    model = _model(nodes, [_tensor("x", shape=[2]), h.make_value_info("fed", opt_type)],
                   [_tensor("has", T.BOOL, []), _tensor("hasnt", T.BOOL, []), _tensor("omitted", T.BOOL, []),
                    _tensor("y", shape=[2]), _tensor("fed_has", T.BOOL, [])], opset=18)
    session = gonnx.InferenceSession(model, device=device)
    assert session.get_inputs()[1].type == "optional(tensor(float))"
    has, hasnt, omitted, y, fed_has = session.run(None, {"x": _x(2, start=1), "fed": None})
    assert (has, hasnt, omitted, fed_has) == (True, False, False, False)
    np.testing.assert_array_equal(y, np.maximum(_x(2, start=1), 0))
    assert session.run(None, {"x": _x(2), "fed": _x(2)})[4]
    bad = _model([h.make_node("Optional", [], ["none"], type=h.make_tensor_type_proto(T.FLOAT, [2])),
                  h.make_node("OptionalGetElement", ["none"], ["y"], name="get")], [], [_tensor("y", shape=[2])],
                 opset=18)
    with pytest.raises(InvalidArgumentError, match="OptionalGetElement 'get': input 0 is an empty optional"):
        gonnx.InferenceSession(bad, device=device)


@pytest.mark.parametrize("k", range(1, 9))
def test_onnx_sequence_models(k, device):
    """The onnx wheel's sequence models (several sequence nodes each: the ops with no node
    test of their own): the expected outputs, or the same refusal of a type DirectML lacks."""
    folder = SIMPLE / f"test_sequence_model{k}"
    model = onnx.load(str(folder / "model.onnx"))
    data = folder / "test_data_set_0"
    initializers = {t.name for t in model.graph.initializer}
    names = [v.name for v in model.graph.input if v.name not in initializers]
    feeds = {}
    for name, path in zip(names, sorted(data.glob("input_*.pb"))):
        proto = onnx.TensorProto()
        proto.ParseFromString(path.read_bytes())
        feeds[name] = numpy_helper.to_array(proto)
    proto = onnx.TensorProto()
    proto.ParseFromString((data / "output_0.pb").read_bytes())
    want = numpy_helper.to_array(proto)
    session = gonnx.InferenceSession(model, device=device)
    try:
        (got,) = session.run(None, feeds)
    except UnsupportedError as exc:  # (FLOAT64 data movement on GL: the adapter lacks 64-bit types)
        assert want.dtype == np.float64 and "FLOAT64" in str(exc), exc
        return
    _same(got, want)


@pytest.mark.any_class  # both classes' Devices made here: the GPU-class run would repeat them
@pytest.mark.parametrize("adapter_class", ["cpu", "gpu"])
def test_both_adapter_classes(adapter_class, device):
    """The join and split behind ConcatFromSequence and SplitToSequence under either
    adapter class's strategies."""
    device = dml.Device(adapter=device.adapter_name, adapter_class=adapter_class)
    nodes = [h.make_node("SplitToSequence", ["x", "split"], ["s"], axis=0),
             h.make_node("ConcatFromSequence", ["s"], ["y"], axis=1, new_axis=1)]
    model = _model(nodes, [_tensor("x", shape=[6, 5])], [_tensor("y"), _seq("s")],
                   [numpy_helper.from_array(np.array(2, np.int64), "split")])
    _check(model, {"x": _x(6, 5, start=11)}, device)


def test_sequence_map_records_its_body_per_item(device):
    """SequenceMap over a sequence of tensors of several lengths and a tensor, its body
    reading an outer value (Mul by `scale`) and computing a shape; against onnxruntime."""
    body = h.make_graph([h.make_node("Add", ["item", "bias"], ["added"]),
                         h.make_node("Mul", ["added", "scale"], ["out"]), h.make_node("Shape", ["item"], ["shape"])],
                        "body",
                        [_tensor("item", shape=None), _tensor("bias", shape=[1])],
                        [_tensor("out", shape=None), _tensor("shape", T.INT64, [1])])
    nodes = [h.make_node("Relu", ["x"], ["scale"]),
             h.make_node("SequenceMap", ["s", "b"], ["outs", "shapes"], body=body)]
    model = _model(nodes, [_seq("s"), _tensor("b", shape=[1]), _tensor("x", shape=[1])],
                   [_seq("outs"), _seq("shapes", T.INT64)])
    _check(model, {"s": [_x(3), _x(5, start=2), _x(1)], "b": np.array([0.5], np.float32),
                   "x": np.array([2.0], np.float32)}, device)


def test_cli_run_prints_and_compares_sequence_items(tmp_path, capsys, adapter):
    """`gpudml run` of a model with a sequence output: each item named `name[k]`, compared
    with onnxruntime's item by item; a sequence input is refused for --random with the reason."""
    from gpudml import cli

    split = _model([h.make_node("SplitToSequence", ["x"], ["s"], axis=0)], [_tensor("x", shape=[3, 2])], [_seq("s")])
    path = tmp_path / "split.onnx"
    onnx.save(split, str(path))
    assert cli.main(["--adapter", adapter, "run", str(path), "--random", "--compare-onnxruntime"]) == 0
    out = capsys.readouterr().out
    assert "s[2]: float32 [1, 2]" in out and re.search(r"s\[2\]: largest difference 0 \(bound \S+\) ok", out), out
    concat = _model([h.make_node("ConcatFromSequence", ["s"], ["y"], axis=0)], [_seq("s")], [_tensor("y")])
    onnx.save(concat, str(path))
    assert cli.main(["--adapter", adapter, "run", str(path), "--random"]) == 2
    assert "input 's' is a seq(tensor(float)): --random and --input make tensors only" in capsys.readouterr().err


def test_sequence_across_a_data_dependent_split(device):
    """A graph split at NonZero passes a sequence read after it (its GPU items, tensors of
    the part after, a host item as it is); a position computed from a sequence input's
    values is refused at construction."""
    nodes = [h.make_node("Relu", ["x"], ["r"]), h.make_node("SequenceConstruct", ["r", "x", "c"], ["s"]),
             h.make_node("NonZero", ["x"], ["nz"]), h.make_node("SequenceErase", ["s"], ["t"]),
             h.make_node("ConcatFromSequence", ["t"], ["joined"], axis=0)]
    model = _model(nodes, [_tensor("x", shape=[4])], [_tensor("nz", T.INT64), _seq("s"), _tensor("joined")],
                   [numpy_helper.from_array(np.array([9, 8, 7, 6], np.float32), "c")])
    _check(model, {"x": np.array([0, -2, 0, 3], np.float32)}, device)
    position = _model([h.make_node("SequenceAt", ["s", "zero"], ["p"]), h.make_node("SequenceAt", ["s", "p"], ["y"])],
                      [_seq("s", T.INT64)], [_tensor("y", T.INT64)],
                      [numpy_helper.from_array(np.array(0, np.int64), "zero")])
    with pytest.raises(UnsupportedError, match=r"computed from input 's', a seq\(tensor\(int64\)\): gpudml computes "
                                               r"such values on the host from tensor inputs only"):
        gonnx.InferenceSession(position, device=device)


def test_scalar_items_and_repeated_items(device):
    """Rank-0 tensors in a sequence (a type that declares them so: rank 0 out, as
    onnxruntime), the same GPU tensor twice in one sequence output."""
    scalar_seq = h.make_value_info("s", h.make_sequence_type_proto(h.make_tensor_type_proto(T.FLOAT, [])))
    nodes = [h.make_node("ReduceSum", ["x"], ["total"], keepdims=0), h.make_node("Relu", ["x"], ["r"]),
             h.make_node("SequenceConstruct", ["total", "total"], ["s"]),
             h.make_node("SequenceConstruct", ["r", "r", "x"], ["twice"])]
    model = _model(nodes, [_tensor("x", shape=[3])], [scalar_seq, _seq("twice")], opset=13)
    _check(model, {"x": _x(3, start=1)}, device)


def test_strided_and_broadcast_items(device):
    """A Transpose (a strided view) and an Expand (stride 0) in a sequence: concatenated, split
    again and returned (written packed), as onnxruntime gives them."""
    nodes = [h.make_node("Transpose", ["x"], ["t"], perm=[1, 0]), h.make_node("Expand", ["b", "shape"], ["e"]),
             h.make_node("SequenceConstruct", ["t", "e"], ["s"]),
             h.make_node("ConcatFromSequence", ["s"], ["y"], axis=0),
             h.make_node("SplitToSequence", ["t"], ["cols"], axis=1, keepdims=0)]
    model = _model(nodes, [_tensor("x", shape=[2, 3]), _tensor("b", shape=[1, 2])],
                   [_seq("s"), _tensor("y"), _seq("cols")], [numpy_helper.from_array(np.array([4, 2]), "shape")])
    _check(model, {"x": _x(2, 3, start=2), "b": np.array([[7, -1]], np.float32)}, device)


def test_position_from_what_gpudml_cannot_run_is_refused_at_construction():
    """A position is a build-time value: one computed from a node gpudml cannot run (Unique)
    is refused at construction, both nodes named; never read back from the GPU."""
    nodes = [h.make_node("Unique", ["p"], ["u"], name="uniq"), h.make_node("SequenceConstruct", ["x"], ["s"]),
             h.make_node("SequenceAt", ["s", "u"], ["y"], name="pick")]
    model = _model(nodes, [_tensor("x", shape=[2]), _tensor("p", T.INT64, [1])], [_tensor("y")])
    with pytest.raises(UnsupportedError) as caught:
        gonnx.InferenceSession(model)
    text = str(caught.value)
    assert "uniq (Unique, opset 17)" in text and "pick (SequenceAt, opset 17): position (input 1) is computed from " \
                                                  "what gpudml cannot run" in text, text


def test_a_loop_carrying_a_sequence_of_known_values(device):
    """A Loop carrying a sequence whose inputs are all known (never folded on the host: a
    sequence is no array) runs as control flow, its items host values, and gives
    onnxruntime's result."""
    body = h.make_graph([h.make_node("Identity", ["cond_in"], ["cond_out"]),
                         h.make_node("SequenceInsert", ["seq_in", "item"], ["seq_out"])], "body",
                        [_tensor("i", T.INT64, []), _tensor("cond_in", T.BOOL, []), _seq("seq_in")],
                        [_tensor("cond_out", T.BOOL, []), _seq("seq_out")])
    nodes = [h.make_node("SequenceEmpty", [], ["empty"]),
             h.make_node("Loop", ["n", "", "empty"], ["out"], body=body, name="loop"),
             h.make_node("ConcatFromSequence", ["out"], ["y"], axis=0), h.make_node("Add", ["y", "x"], ["z"])]
    model = _model(nodes, [_tensor("x", shape=[6])], [_tensor("z")],
                   [numpy_helper.from_array(np.array(3, np.int64), "n"),
                    numpy_helper.from_array(np.array([1.0, 2.0], np.float32), "item")], opset=13)
    _check(model, {"x": _x(6)}, device)
