"""onnxruntime's session surface on gpudml.onnx.InferenceSession (API.md section 16): IO
binding (Tensors that stay on the device: a loop feeding each run's output to the next run
moves no byte through the host, counted at the runtime's transfers), providers and
SessionOptions, get_modelmeta, profiling, and models whose tensors are stored beside them
(external data); compared with onnxruntime's CPU provider."""

from __future__ import annotations

import gc
import json

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import gpudml as dml
import gpudml.onnx as gonnx
from gpudml.errors import InvalidArgumentError

ort = pytest.importorskip("onnxruntime")


def _affine(shape=(2, 3), name="affine", **meta):
    """y = x * 2 + 1 (and x > 0 as a bool output `positive`), built with onnx.helper."""
    nodes = [helper.make_node("Mul", ["x", "two"], ["x2"]), helper.make_node("Add", ["x2", "one"], ["y"]),
             helper.make_node("Greater", ["x", "zero"], ["positive"])]
    inits = [numpy_helper.from_array(np.array(v, np.float32), n) for n, v in (("two", 2), ("one", 1), ("zero", 0))]
    graph = helper.make_graph(nodes, name, [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(shape))],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, list(shape)),
                               helper.make_tensor_value_info("positive", TensorProto.BOOL, list(shape))], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], **meta)
    model.ir_version = 8
    return model


def _ort(model):
    source = model if isinstance(model, str) else model.SerializeToString()
    return ort.InferenceSession(source, providers=["CPUExecutionProvider"])


class _Counted:
    """The device's host <-> device transfers (runtime/transfers.py), counted."""

    def __init__(self, device, monkeypatch):
        self.uploads = self.downloads = 0
        transfers = device._ctx.transfers
        upload, download = transfers.upload, transfers.download

        def counted_upload(*args, **kwargs):
            self.uploads += 1
            return upload(*args, **kwargs)

        def counted_download(*args, **kwargs):
            self.downloads += 1
            return download(*args, **kwargs)

        monkeypatch.setattr(transfers, "upload", counted_upload)
        monkeypatch.setattr(transfers, "download", counted_download)

    @property
    def both(self) -> tuple[int, int]:
        return self.uploads, self.downloads


X = np.array([[-2, -1, 0], [1, 2, 3]], np.float32)


def test_outputs_fed_back_as_inputs_move_nothing_through_the_host(device, monkeypatch):
    session = gonnx.InferenceSession(_affine(), device=device)
    reference = _ort(_affine())
    counted = _Counted(device, monkeypatch)
    binding = session.io_binding()
    binding.bind_input("x", X)  # uploaded once, here
    binding.bind_output("y")
    assert counted.both == (1, 0)
    want = X
    for _ in range(4):
        session.run_with_iobinding(binding)
        (y,) = binding.get_outputs()
        assert isinstance(y, dml.Tensor) and y.shape == (2, 3) and y.dtype == np.float32
        binding.bind_input("x", y)  # the output, on the device, is the next run's input
        want = reference.run(["y"], {"x": want})[0]
    assert counted.both == (1, 0)
    (got,) = binding.copy_outputs_to_cpu()
    assert counted.both == (1, 1)
    np.testing.assert_array_equal(got, want)  # 2x + 1 of small integers: exact


def test_cpu_inputs_preallocated_and_bool_outputs(device, monkeypatch):
    session = gonnx.InferenceSession(_affine(), device=device)
    reference = _ort(_affine())
    y_buffer = device.tensor(np.zeros((2, 3), np.float32))
    counted = _Counted(device, monkeypatch)
    binding = session.io_binding()
    x = X.copy()
    binding.bind_cpu_input("x", x)  # kept, uploaded at each run
    binding.bind_output("positive", "cuda")  # onnxruntime's device type: accepted, the session's device
    binding.bind_output("y", y_buffer)  # written there, by a GPU copy
    for step in range(2):
        session.run_with_iobinding(binding)
        positive, y = binding.get_outputs()
        assert y is y_buffer and positive.dtype == np.bool_
        want_y, want_positive = reference.run(["y", "positive"], {"x": x})
        got_positive, got_y = binding.copy_outputs_to_cpu()
        np.testing.assert_array_equal(got_y, want_y)
        assert got_positive.dtype == np.bool_ and np.array_equal(got_positive, want_positive)
        assert counted.both == (step + 1, 2 * step + 2)
        x *= -1  # what the array holds at the next run is what it reads
    binding.clear_binding_outputs()
    assert binding.get_outputs() == []
    _failing(lambda: y_buffer.copy_from(device.tensor(X.reshape(3, 2))), "a copy keeps the data type, sizes")


def _failing(call, match: str):
    with pytest.raises(InvalidArgumentError, match=match):
        call()


def test_bad_bindings_are_refused_before_any_gpu_work(device, monkeypatch):
    session = gonnx.InferenceSession(_affine(), device=device)
    other = gonnx.InferenceSession(_affine(), device=device)
    good, wrong_dtype = device.tensor(X), device.tensor(X.astype(np.int32))
    wrong_shape, freed = device.tensor(X.reshape(3, 2)), device.tensor(X)
    freed.free()
    counted = _Counted(device, monkeypatch)
    binding = session.io_binding()
    _failing(lambda: binding.bind_input("z", good), r"has no input 'z' \(its inputs: 'x'\)")
    _failing(lambda: binding.bind_input("x", wrong_dtype), "input 'x' has dtype int32, the model's is float32")
    _failing(lambda: binding.bind_input("x", wrong_shape), r"input 'x' has shape \[3, 2\], the model's is \[2, 3\]")
    _failing(lambda: binding.bind_input("x", X.astype(np.float64)), "input 'x' has dtype float64")
    _failing(lambda: binding.bind_input("x", freed), "the Tensor bound to input 'x' was freed")
    _failing(lambda: binding.bind_input("x", "cuda", 0, np.float32, [2, 3], 1234), "raw pointer")
    _failing(lambda: binding.bind_output("q"), r"has no output 'q' \(its outputs: 'y', 'positive'\)")
    _failing(lambda: binding.bind_output("y", wrong_shape), r"output 'y' has shape \[3, 2\]")
    _failing(lambda: binding.bind_output("y", buffer_ptr=1234), "raw buffer_ptr")
    _failing(lambda: session.run_with_iobinding(binding), "input 'x' is not bound")
    binding.bind_input("x", good)
    _failing(lambda: session.run_with_iobinding(binding), "no output is bound")
    binding.bind_output("y")
    _failing(lambda: other.run_with_iobinding(binding), "belongs to another session")
    _failing(lambda: session.run_with_iobinding({"x": X}), "expected an IOBinding")
    good.free()  # freed after it was bound: refused at the run
    _failing(lambda: session.run_with_iobinding(binding), "the Tensor bound to input 'x' was freed")
    assert counted.both == (0, 0)
    binding.bind_input("x", device.tensor(X))
    session.run_with_iobinding(binding)  # the session (and the binding) still work
    np.testing.assert_array_equal(binding.copy_outputs_to_cpu()[0], X * 2 + 1)
    orphan = _orphan(device)
    gc.collect()
    _failing(lambda: orphan.bind_input("x", X), "the binding's session is gone")
    _failing(lambda: session.run_with_iobinding(orphan), "belongs to a session that is gone")


def _orphan(device):
    """A binding whose session is gone."""
    return gonnx.InferenceSession(_affine(), device=device).io_binding()


def test_tensors_of_another_adapter_are_refused(device):
    from conftest import ADAPTERS, get_device

    others = [a for a in ADAPTERS if not get_device(a).shares_memory_with(device)]
    if not others:
        pytest.skip("one adapter selected")
    session = gonnx.InferenceSession(_affine(), device=device)
    foreign = get_device(others[0]).tensor(X)
    _failing(lambda: session.io_binding().bind_input("x", foreign), "input 'x': the Tensor lives on .*, the session's")


def test_providers_and_session_options(device):
    model = _affine()
    for providers in (["DmlExecutionProvider", "CPUExecutionProvider"], ["CPUExecutionProvider"],
                      [("GpudmlExecutionProvider", {"device_id": 0, "performance_preference": "high_performance"})]):
        session = gonnx.InferenceSession(model, providers=providers, device=device)
        assert session.get_providers() == ["GpudmlExecutionProvider"]
    options = session.get_provider_options()["GpudmlExecutionProvider"]
    assert options["performance_preference"] == "high_performance" and options["adapter"] == device.adapter_name
    _failing(lambda: gonnx.InferenceSession(model, providers=["CUDAExecutionProvider"], device=device),
             "unknown execution provider 'CUDAExecutionProvider'.*'GpudmlExecutionProvider', 'DmlExecutionProvider'")
    _failing(lambda: gonnx.InferenceSession(model, providers=[("DmlExecutionProvider", {"device_id": 1})]),
             "device_id='1'.*by name")
    _failing(lambda: gonnx.InferenceSession(model, providers=["DmlExecutionProvider"], device=device,
                                            provider_options=[{}, {}]), "2 provider_options for 1 providers")
    _failing(lambda: gonnx.InferenceSession(model, {"graph_optimization_level": 0}), "sess_options must be")
    _failing(lambda: gonnx.InferenceSession(model, None, ["DmlExecutionProvider"], [{}]),
             "provider_options, is the keyword")
    assert gonnx.get_available_providers()[0] == "GpudmlExecutionProvider"
    fused = gonnx.InferenceSession(model, device=device)
    assert fused.get_session_options().graph_optimization_level == gonnx.GraphOptimizationLevel.ORT_ENABLE_ALL
    for sess_options in (ort.SessionOptions(), gonnx.SessionOptions()):
        sess_options.graph_optimization_level = type(sess_options.graph_optimization_level).ORT_DISABLE_ALL
        sess_options.intra_op_num_threads = 2  # accepted, no effect
        unfused = gonnx.InferenceSession(model, sess_options, device=device)
        assert not unfused.fuse and unfused.dispatch_count > fused.dispatch_count
        assert unfused.get_session_options() is sess_options
        assert np.array_equal(unfused.run(["y"], {"x": X})[0], X * 2 + 1)
    assert gonnx.InferenceSession(model, device).device is device  # the device second, as before section 16


def test_modelmeta_as_onnxruntime():
    model = _affine(producer_name="maker", producer_version="1.2", domain="ai.example", model_version=7,
                    doc_string="twice plus one")
    model.graph.doc_string = "the graph"
    onnx.helper.set_model_props(model, {"author": "me", "license": "MIT"})
    got, want = gonnx.load_model(model), _ort(model).get_modelmeta()
    meta = gonnx.ModelMetadata.of(got)
    for field in ("producer_name", "graph_name", "domain", "description", "graph_description", "version",
                  "custom_metadata_map"):
        assert getattr(meta, field) == getattr(want, field), field


def test_profiling_writes_onnxruntimes_trace(device, tmp_path):
    options = gonnx.SessionOptions(enable_profiling=True, profile_file_prefix=str(tmp_path / "affine"))
    session = gonnx.InferenceSession(_affine(), options, device=device)
    assert session.get_profiling_start_time_ns() > 0
    session.run(None, {"x": X})
    binding = session.io_binding()
    binding.bind_input("x", X)
    binding.bind_output("y")
    session.run_with_iobinding(binding)
    path = session.end_profiling()
    assert path.startswith(str(tmp_path / "affine_")) and path.endswith(".json")
    events = json.loads(open(path).read())
    runs = [e["name"] for e in events if e["cat"] == "Session"]
    nodes = [e for e in events if e["cat"] == "Node"]
    assert runs == ["model_run", "run_with_iobinding"]
    assert len(nodes) == 2 * session.dispatch_count and all(e["ph"] == "X" and e["dur"] >= 0 for e in nodes)
    assert session.end_profiling() == ""  # ended: as onnxruntime, nothing more to write


def test_external_data_loads_from_the_path(device, tmp_path):
    model = _affine((2, 3))
    weights = numpy_helper.from_array(np.arange(6, dtype=np.float32).reshape(2, 3), "w")
    model.graph.initializer.append(weights)
    model.graph.node.append(helper.make_node("Mul", ["y", "w"], ["yw"]))
    model.graph.output.append(helper.make_tensor_value_info("yw", TensorProto.FLOAT, [2, 3]))
    path = str(tmp_path / "affine.onnx")
    onnx.save_model(model, path, save_as_external_data=True, all_tensors_to_one_file=True,
                    location="affine.weights", size_threshold=0)
    assert (tmp_path / "affine.weights").exists()
    session = gonnx.InferenceSession(path, device=device)
    np.testing.assert_array_equal(session.run(["yw"], {"x": X})[0], _ort(path).run(["yw"], {"x": X})[0])
    raw = open(path, "rb").read()
    _failing(lambda: gonnx.InferenceSession(raw, device=device),
             "initializer .* is stored in the external data file 'affine.weights', which only a model loaded from "
             "its path can find")
    (tmp_path / "affine.weights").unlink()
    _failing(lambda: gonnx.InferenceSession(path, device=device),
             "affine.onnx'.*stored in the external data file 'affine.weights', which is missing")


def test_dynamic_dimensions_and_rank_0_outputs(device):
    """Bound Tensors of two batch sizes: compiled per shape, as run(); a rank-0 output is a
    Tensor of shape [1] on the device and rank 0 when copied to the host."""
    nodes = [helper.make_node("Relu", ["x"], ["y"]), helper.make_node("ReduceSum", ["x"], ["total"], keepdims=0)]
    graph = helper.make_graph(nodes, "dynamic", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 3]),
                               helper.make_tensor_value_info("total", TensorProto.FLOAT, [])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    session, reference = gonnx.InferenceSession(model, device=device), _ort(model)
    binding = session.io_binding()
    binding.bind_output("total")
    binding.bind_output("y")
    for batch in (2, 4):
        x = np.arange(batch * 3, dtype=np.float32).reshape(batch, 3) - 4
        binding.bind_input("x", device.tensor(x))
        session.run_with_iobinding(binding)
        total, y = binding.get_outputs()
        assert total.shape == (1,) and y.shape == (batch, 3)
        got, want = binding.copy_outputs_to_cpu(), reference.run(["total", "y"], {"x": x})
        for g, w in zip(got, want):
            assert g.shape == w.shape and g.dtype == w.dtype
            np.testing.assert_array_equal(g, w)
    assert len(session._compiled) == 2
    _failing(lambda: binding.bind_input("x", device.tensor(np.zeros((2, 4), np.float32))),
             r"input 'x' has shape \[2, 4\], the model's is \['N', 3\]")


def _two_layers():
    """y = relu(x @ w1 + b) @ w2: two GEMMs and an intermediate value between them."""
    rng = np.random.default_rng(5)
    w1, b, w2 = (rng.integers(-2, 3, s).astype(np.float32) for s in ((4, 8), (8,), (8, 3)))
    nodes = [helper.make_node("MatMul", ["x", "w1"], ["h"]), helper.make_node("Add", ["h", "b"], ["hb"]),
             helper.make_node("Relu", ["hb"], ["r"]), helper.make_node("MatMul", ["r", "w2"], ["y"])]
    inits = [numpy_helper.from_array(v, n) for n, v in (("w1", w1), ("b", b), ("w2", w2))]
    graph = helper.make_graph(nodes, "two_layers", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model, lambda x: np.maximum(x @ w1 + b, 0) @ w2


def test_repeated_runs_record_the_same_plan_and_rebound_tensors_are_read(device, monkeypatch):
    """A run records its prepared plan (runtime/executor.py Plan: no per-step checks, the
    intermediates' pooled buffers and the steps' bind groups the same run after run), and
    still reads whatever is bound: another Tensor, a freed one's buffer reused by a new one,
    runs of session.run in between taking the pool's buffers."""
    model, reference = _two_layers()
    session = gonnx.InferenceSession(model, device=device)
    assert session.dispatch_count >= 2  # (an intermediate value between two steps)
    rng = np.random.default_rng(0)
    xs = [rng.integers(-3, 4, (2, 4)).astype(np.float32) for _ in range(4)]
    binding = session.io_binding()
    out = device.tensor(np.zeros((2, 3), np.float32))
    binding.bind_output("y", out)
    first = device.tensor(xs[0])
    binding.bind_input("x", first)
    session.run_with_iobinding(binding)
    np.testing.assert_array_equal(out.numpy(), reference(xs[0]))  # small integers: exact
    ctx = device._ctx
    made = []
    bind_group = ctx.bind_group
    monkeypatch.setattr(ctx, "bind_group", lambda *a, **k: made.append(1) or bind_group(*a, **k))
    allocations = ctx.pool.allocations
    for _ in range(3):  # the same binding again: nothing allocated, no bind group made
        session.run_with_iobinding(binding)
    assert (ctx.pool.allocations, len(made)) == (allocations, 0)
    np.testing.assert_array_equal(out.numpy(), reference(xs[0]))
    second = device.tensor(xs[1])  # another Tensor (the first still alive): another buffer
    binding.bind_input("x", second)
    session.run_with_iobinding(binding)
    np.testing.assert_array_equal(binding.copy_outputs_to_cpu()[0], reference(xs[1]))
    first.free()
    second.free()
    for x in xs[2:]:  # a new Tensor in a freed one's buffer (pooled), and session.run between
        third = device.tensor(x)
        binding.bind_input("x", third)
        np.testing.assert_array_equal(session.run(None, {"x": xs[0]})[0], reference(xs[0]))
        session.run_with_iobinding(binding)
        np.testing.assert_array_equal(out.numpy(), reference(x))
        third.free()
    last = device.tensor(xs[0])
    binding.bind_input("x", last)
    last.free()  # a bound Tensor freed since: refused, as before
    with pytest.raises(InvalidArgumentError, match="freed"):
        session.run_with_iobinding(binding)
