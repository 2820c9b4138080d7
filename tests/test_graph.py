"""Graphs (docs/graphs.md): recording, compiling and calling, against the same operators
run one by one (eager), on each adapter; every error a graph raises; one submission and
no new buffers per call; dispatch counts; threads."""

from __future__ import annotations

import gc

import numpy as np
import pytest
from conftest import assert_bits_equal, random_bits
from isolated import limited_device
from test_threads import run_threads

import gpudml as dml
from gpudml import examples
from gpudml.graph import needed_nodes, plan_steps
from gpudml.ops import spec_named

F32 = dml.DataType.FLOAT32
RNG = np.random.default_rng(13)


def _api_example(g):
    """The graph of docs/graphs.md's first example: (x, y, z, r)."""
    x = g.input([1, 3, 64, 64], dtype=np.float32, name="x")
    y = dml.padding(x, padding_mode=dml.PaddingMode.REFLECTION, padding_value=0.0,
                    start_padding=[0, 0, 2, 2], end_padding=[0, 0, 2, 2])
    z = dml.slice(y, input_window_offsets=[0, 0, 0, 0], input_window_sizes=[1, 3, 68, 68],
                  input_window_strides=[1, 1, -1, 2])
    r = dml.reduce(z, dml.ReduceFunction.SUM, axes=[3])
    return x, y, z, r


def _api_example_eager(array, device):
    y = dml.pad(array, [0, 0, 2, 2], [0, 0, 2, 2], mode="reflection", device=device)
    z = dml.slice(y, [0, 0, 0, 0], [1, 3, 68, 68], [1, 1, -1, 2], device=device)
    return dml.reduce(z, "sum", axes=[3], device=device), z


def _submissions(device, monkeypatch) -> list:
    """Each queue.submit of `device`'s wgpu device from now on appends its command buffers."""
    queue = device._ctx.device.queue
    submitted = []
    real = queue.submit

    def submit(buffers, *args, **kwargs):
        submitted.append(list(buffers))
        return real(buffers, *args, **kwargs)

    monkeypatch.setattr(queue, "submit", submit)
    return submitted


# ------------------------------------------------------------------ the docs' example, end to end
def test_api_example_matches_eager(device):
    g = dml.Graph(device)
    x, y, z, r = _api_example(g)
    assert (x.shape, y.shape, z.shape, r.shape) == ([1, 3, 64, 64], [1, 3, 68, 68], [1, 3, 68, 34], [1, 3, 68, 1])
    assert r.dtype is F32 and isinstance(r.dtype, dml.DataType)
    op = g.compile([r, z])
    array = RNG.random((1, 3, 64, 64), dtype=np.float32)
    want_r, want_z = _api_example_eager(array, device)
    r_np, z_np = op({"x": array})
    assert_bits_equal(r_np, want_r)  # the same kernels on the same values: bit-exact
    assert_bits_equal(z_np, want_z)
    r_t, z_t = op({x: array}, readback=False)
    assert isinstance(r_t, dml.Tensor) and isinstance(z_t, dml.Tensor)
    assert r_t.device is device and z_t.desc.sizes == (1, 3, 68, 34)
    assert_bits_equal(r_t.numpy(), want_r)
    assert_bits_equal(z_t.numpy(), want_z)
    # pad > slice fused into one kernel (z is an output), the reduce reads z: 2 dispatches
    assert op.dispatch_count == sum(step.dispatches for step in op.steps) == 2
    assert g.compile([r, z], fuse=False).dispatch_count == 3


def test_default_device_and_expression_attributes():
    g = dml.Graph()
    assert g.device is dml.default_device()
    x = g.input([2, 3], dtype="int16")
    c = g.constant(np.arange(3, dtype=np.uint32).reshape(1, 3))
    y = dml.slice(x, [0, 1], [2, 2])
    assert x.name == "input0" and c.name is None and y.name is None
    assert x.graph is g and y.graph is g
    assert x.shape == [2, 3] and isinstance(x.shape, list) and x.dtype is dml.DataType.INT16
    assert y.desc == dml.TensorDesc(dml.DataType.INT16, [2, 2])
    assert "input 'input0'" in repr(x) and "Slice1(input0)" in repr(y) and "constant" in repr(c)
    table = {x: 1, y: 2}  # hashable by identity
    assert table[x] == 1 and table[y] == 2 and x != y
    assert g.input([1], dtype=dml.DataType.UINT8).name == "input1"
    assert g.input([1], name="input2").dtype is F32  # the default dtype
    assert g.input([1]).name == "input3"  # default names skip taken ones


# ------------------------------------------------------------------ chains, DAGs, constants
def test_chain_of_every_operator_matches_eager(device):
    g = dml.Graph(device)
    x = g.input([2, 5, 6], dtype=np.int16, name="x")
    lengths = np.array([3, 0, 9, 2, 5, 1], np.int64).reshape(1, 1, 6).repeat(3, axis=0)
    a = dml.pad(x, [1, 0, 2], [0, 3, 1], mode="symmetric")
    b = dml.slice(a, [0, 1, 0], [3, 7, 9], [1, -2, 1], output_sizes=[3, 4, 6])
    c = dml.reverse_subsequences(b, lengths, axis=1)
    d = dml.reduce(c, "max", axes=[0, 2])
    array = random_bits(RNG, np.int16, (2, 5, 6))
    want_a = dml.pad(array, [1, 0, 2], [0, 3, 1], mode="symmetric", device=device)
    want_b = dml.slice(want_a, [0, 1, 0], [3, 7, 9], [1, -2, 1], output_sizes=[3, 4, 6], device=device)
    want_c = dml.reverse_subsequences(want_b, lengths, 1, device=device)
    want_d = dml.reduce(want_c, "max", axes=[0, 2], device=device)
    got = g.compile([d, c, b, a])({"x": array})
    for out, want in zip(got, [want_d, want_c, want_b, want_a]):
        assert_bits_equal(out, want)


def test_shared_subexpressions_and_multiple_consumers(device):
    g = dml.Graph(device)
    x = g.input([4, 6], dtype=np.float16, name="x")
    y = dml.pad(x, [1, 1], [1, 1], mode="edge")  # consumed by three nodes, and an output
    left = dml.slice(y, [0, 0], [6, 4])
    right = dml.slice(y, [0, 4], [6, 4], [1, -1])
    both = dml.reduce(y, "sum", axes=[1])
    total = dml.reduce(dml.pad(left, [0, 0], [0, 0]), "min", axes=[0])
    op = g.compile([total, both, y, right, left, y])
    # y, left and right are outputs (materialized); `total` reduces pad(left) without it
    assert [step.compiled.name for step in op.steps] == ["Padding", "Slice1", "Slice1", "Reduce",
                                                         "Fused(Padding>Reduce)"]
    assert len(g.compile([total, both, y, right, left, y], fuse=False).steps) == 6
    array = RNG.standard_normal((4, 6)).astype(np.float16)
    want_y = dml.pad(array, [1, 1], [1, 1], mode="edge", device=device)
    want_left = dml.slice(want_y, [0, 0], [6, 4], device=device)
    wants = [dml.reduce(want_left, "min", axes=[0], device=device), dml.reduce(want_y, "sum", axes=[1], device=device),
             want_y, dml.slice(want_y, [0, 4], [6, 4], [1, -1], device=device), want_left, want_y]
    outs = op({"x": array})
    for out, want in zip(outs, wants):
        assert_bits_equal(out, want)
    assert outs[2] is not outs[5] and not np.shares_memory(outs[2], outs[5])


def test_only_the_needed_nodes_are_compiled(vulkan_device):
    g = dml.Graph(vulkan_device)
    x = g.input([8], name="x")
    y = g.input([8], name="y")
    a = dml.slice(x, [0], [8], [-1])
    dml.pad(a, [1], [1])  # not needed by `a`
    dml.slice(y, [2], [4])  # nor this one
    assert [node.index for node in needed_nodes(g, [a])] == [0]
    op = g.compile([a])
    assert len(op.steps) == 1 and op.dispatch_count == op.steps[0].dispatches
    assert op.inputs == (x,)
    array = np.arange(8, dtype=np.float32)
    (got,) = op({"x": array})  # y is not needed: it may be left out ...
    assert_bits_equal(got, array[::-1])
    (got,) = op({"x": array, "y": array})  # ... or given
    assert_bits_equal(got, array[::-1])


def test_graph_inputs_and_constants_as_outputs_are_copies(device):
    g = dml.Graph(device)
    x = g.input([3, 4], dtype=np.uint8, name="x")
    c = g.constant(np.full((2, 2), 7, np.uint8))
    y = dml.slice(x, [0, 0], [3, 4], [-1, 1])
    op = g.compile([x, y, x, c, y])
    array = np.arange(12, dtype=np.uint8).reshape(3, 4)
    outs = op({"x": array})
    for out, want in zip(outs, [array, array[::-1], array, np.full((2, 2), 7, np.uint8), array[::-1]]):
        assert_bits_equal(out, want)
        assert not np.shares_memory(out, array)
    assert outs[0] is not outs[2] and outs[1] is not outs[4]
    t = device.tensor(array)
    tensors = op({x: t}, readback=False)
    assert all(isinstance(o, dml.Tensor) for o in tensors)
    assert len({id(o.buffer) for o in tensors} | {id(t.buffer)}) == 6  # no Tensor is the input, none twice
    tensors[0].free()  # the caller's input lives on
    assert_bits_equal(t.numpy(), array)
    assert_bits_equal(tensors[2].numpy(), array)
    assert_bits_equal(tensors[3].numpy(), np.full((2, 2), 7, np.uint8))


def test_constants_are_copied_when_recorded_and_uploaded_once(vulkan_device, monkeypatch):
    dev = vulkan_device
    g = dml.Graph(dev)
    x = g.input([4, 4], dtype=np.int32, name="x")
    weights = np.arange(16, dtype=np.int32).reshape(4, 4)
    c = g.constant(weights)
    weights[:] = -1  # recorded before this edit
    lengths = np.array([4, 1, 2, 3], np.uint8).reshape(1, 4)
    y = dml.reverse_subsequences(c, lengths, axis=0)  # the numpy lengths become a second constant
    z = dml.reverse_subsequences(x, lengths, axis=0)
    assert len(g.constants) == 3 and g.constants[y.value_id - 1].dtype == np.uint32  # as eager sends them
    op = g.compile([y, z])
    assert op.inputs == (x,)
    uploads = []
    real = dev._ctx.transfers.upload
    monkeypatch.setattr(dev._ctx.transfers, "upload", lambda buf, data: (uploads.append(data.nbytes), real(buf, data)))
    array = np.arange(100, 116, dtype=np.int32).reshape(4, 4)
    got_y, got_z = op({"x": array})
    assert uploads == [array.nbytes]  # x only: the constants were uploaded at compile
    original = np.arange(16, dtype=np.int32).reshape(4, 4)
    assert_bits_equal(got_y, dml.reverse_subsequences(original, lengths, 0, device=dev))
    assert_bits_equal(got_z, dml.reverse_subsequences(array, lengths, 0, device=dev))


def test_reverse_subsequences_lengths_from_an_input(device):
    g = dml.Graph(device)
    x = g.input([3, 5], dtype=np.float64, name="x")
    lengths = g.input([3, 1], dtype=np.uint64, name="lengths")
    y = dml.reverse_subsequences(x, lengths, axis=-1)
    op = g.compile([y])
    assert set(op.inputs) == {x, lengths}
    array = RNG.standard_normal((3, 5))
    lens = np.array([[5], [2], [2**40]], np.uint64)
    (got,) = op({"x": array, lengths: lens})
    assert_bits_equal(got, dml.reverse_subsequences(array, lens, axis=-1, device=device))
    # a numpy x beside an Expression of lengths: x becomes the constant
    g2 = dml.Graph(device)
    lens2 = g2.input([3, 1], dtype=np.uint32, name="lengths")
    (got,) = g2.compile([dml.reverse_subsequences(array, lens2, axis=1)])({"lengths": lens.astype(np.uint32) % 7})
    assert_bits_equal(got, dml.reverse_subsequences(array, lens.astype(np.uint32) % 7, axis=1, device=device))


def test_tensor_arguments_become_constants(vulkan_device):
    dev = vulkan_device
    g = dml.Graph(dev)
    x = g.input([2, 3], dtype=np.int8, name="x")
    lengths = dev.tensor(np.array([[2, 3, 1]], np.uint32))
    y = dml.reverse_subsequences(x, lengths, axis=0)
    lengths.free()  # copied when recorded
    array = np.arange(6, dtype=np.int8).reshape(2, 3)
    (got,) = g.compile([y])({"x": array})
    assert_bits_equal(got, dml.reverse_subsequences(array, np.array([[2, 3, 1]], np.uint32), 0, device=dev))


def test_strided_and_broadcast_inputs(device):
    g = dml.Graph(device)
    t = g.input([2, 3], dtype=np.int32, strides=[1, 2], name="t")  # a transposed layout
    b = g.input([2, 3], dtype=np.int32, strides=[0, 1], name="b")  # one row broadcast
    op = g.compile([dml.slice(t, [0, 0], [2, 3], [1, -1]), dml.pad(b, [0, 1], [0, 0], value=-5)])
    logical = np.arange(6, dtype=np.int32).reshape(2, 3)
    row = np.array([7, 8, 9], np.int32)
    for t_value, b_value in [(logical, np.stack([row, row])),  # logical arrays
                             (logical.T.copy(), row)]:         # or the buffer contents of the layouts
        got_t, got_b = op({"t": t_value, "b": b_value})
        assert_bits_equal(got_t, logical[:, ::-1])
        assert_bits_equal(got_b, np.array([[-5, 7, 8, 9]] * 2, np.int32))
    desc = dml.TensorDesc(dml.DataType.INT32, [2, 3], [1, 2])
    got_t, _ = op({"t": device.tensor(logical.T.copy(), desc=desc), "b": row}, readback=False)
    assert_bits_equal(got_t.numpy(), logical[:, ::-1])
    with pytest.raises(dml.InvalidArgumentError, match=r"input 'b'.*strides \[0, 1\].*differ"):
        op({"t": logical, "b": np.array([[1, 2, 3], [4, 5, 6]], np.int32)})


def test_directmlx_spellings_on_numpy_and_tensors(device):
    x = random_bits(RNG, np.float32, (1, 2, 5, 4))
    kwargs = dict(input_window_offsets=[0, 1, 1, 0], input_window_sizes=[1, 1, 4, 4],
                  input_window_strides=[1, 1, 2, -3])
    want = dml.slice(x, [0, 1, 1, 0], [1, 1, 4, 4], [1, 1, 2, -3], device=device)
    assert_bits_equal(dml.slice(x, device=device, **kwargs), want)
    assert_bits_equal(dml.slice(device.tensor(x), **kwargs).numpy(), want)
    assert_bits_equal(dml.slice(x, [0, 1, 1, 0], input_window_sizes=[1, 1, 4, 4], strides=[1, 1, 2, -3],
                                device=device), want)  # the two spellings of different arguments mix
    want = dml.pad(x, [0, 0, 1, 2], [0, 1, 0, 3], mode="constant", value=-2.5, device=device)
    got = dml.padding(x, dml.PaddingMode.CONSTANT, -2.5, [0, 0, 1, 2], [0, 1, 0, 3], device=device)
    assert_bits_equal(got, want)
    got = dml.padding(device.tensor(x), padding_mode="constant", padding_value=-2.5,
                      start_padding=[0, 0, 1, 2], end_padding=[0, 1, 0, 3])
    assert_bits_equal(got.numpy(), want)
    assert_bits_equal(dml.padding(x, start_padding=[1, 0, 0, 0], end_padding=[0, 0, 0, 0], device=device),
                      dml.pad(x, [1, 0, 0, 0], [0, 0, 0, 0], device=device))  # CONSTANT 0.0 by default


# ------------------------------------------------------------------ one command buffer, no new buffers
def test_repeated_calls_allocate_no_buffers(adapter):
    """On a buffer pool of the test's own (no other test's buffers in it, whatever ran
    before): the first call of each kind fills it, repeated calls make no buffer."""
    dev = limited_device(adapter, shared_pipelines=True)
    g = dml.Graph(dev)
    _, _, z, r = _api_example(g)
    c = g.constant(np.ones((1, 3, 68, 1), np.float32))
    s = dml.reverse_subsequences(r, np.full((1, 3, 1, 1), 40, np.uint32), axis=2)
    op = g.compile([r, z, s, c])
    array = RNG.random((1, 3, 64, 64), dtype=np.float32)
    for readback in (True, False):
        op({"x": array}, readback=readback)  # the first call of each kind may fill the pool
        gc.collect()
        before = dev._ctx.pool.allocations
        assert before > 0  # (the pool counts this test's buffers)
        for _ in range(5):
            outs = op({"x": array}, readback=readback)
            del outs  # (results a caller keeps hold their buffers, of course)
        assert dev._ctx.pool.allocations == before, readback


def test_a_call_is_recorded_and_submitted_at_once_when_needed(device, monkeypatch):
    """A call with Tensors out records its work and submits nothing (its numpy input is
    uploaded; the upload submits only work recorded before it); the next synchronize submits
    it all as one command buffer, and the results are right."""
    g = dml.Graph(device)
    x = g.input([3, 5], dtype=np.float16, name="x")  # odd sizes: outputs whose tails get cleared
    y = dml.pad(x, [1, 0], [1, 2], mode="reflection")
    z = dml.reverse_subsequences(dml.slice(y, [0, 1], [5, 5], [-1, 1]), np.array([[3]] * 5, np.uint32), axis=1)
    op = g.compile([dml.reduce(z, "l2", axes=[0]), z, x, z])  # copies (x, the second z) recorded with them
    array = RNG.standard_normal((3, 5)).astype(np.float16)
    device.synchronize()
    submitted = _submissions(device, monkeypatch)
    outs = op({"x": array}, readback=False)
    assert submitted == []
    device.synchronize()
    assert len(submitted) == 1 and len(submitted[0]) == 1
    assert_bits_equal(outs[2].numpy(), array)
    assert_bits_equal(outs[3].numpy(), outs[1].numpy())


def test_dispatch_count_is_what_a_call_dispatches(vulkan_device):
    dev = vulkan_device
    g = dml.Graph(dev)
    x = g.input([65536, 4], name="x")
    s = dml.reduce(dml.slice(x, [0, 0], [65536, 4], [-1, 1]), "sum", axes=[0])  # a two-pass reduce
    op = g.compile([s, s])  # the reduce reads the slice: one two-pass step
    assert [len(step.compiled.wgsl) for step in op.steps] == [2] and op.dispatch_count == 2
    with dev.profile() as prof:
        op({"x": np.ones((65536, 4), np.float32)})
    assert len(prof.rows) == op.dispatch_count
    assert [step.dispatches for step in plan_steps(g, [s], dev, fuse=False)] == [1, 2]


# ------------------------------------------------------------------ feature levels
def test_nodes_are_validated_at_the_graph_devices_feature_level(at_level):
    g = dml.Graph(at_level(dml.FeatureLevel.FL_2_1))
    x4 = g.input([1, 1, 4, 4], name="x4")
    y = dml.pad(x4, [0, 0, 1, 1], [0, 0, 1, 1], mode="edge")  # node 0: fine at FL_2_1
    with pytest.raises(dml.InvalidArgumentError,
                       match=r"^graph node 1 \(Padding\): Padding: padding_mode SYMMETRIC .* FL_2_1.*FL_3_0"):
        dml.pad(y, [0, 0, 1, 1], [0, 0, 1, 1], mode="symmetric")
    x3 = g.input([2, 4, 4], name="x3")
    with pytest.raises(dml.InvalidArgumentError, match=r"^graph node 1 \(Slice1\): .*DimensionCount 3 .*FL_2_1"):
        dml.slice(x3, [0, 0, 0], [2, 4, 4])
    assert len(g.nodes) == 1 and not g.constants  # failed nodes leave nothing behind
    g_high = dml.Graph(at_level(dml.FeatureLevel.FL_3_0))
    assert dml.slice(g_high.input([2, 4, 4]), [0, 0, 0], [2, 4, 4]).shape == [2, 4, 4]


# ------------------------------------------------------------------ errors
@pytest.fixture
def graph(vulkan_device):
    return dml.Graph(vulkan_device)


def test_node_errors_name_the_node(graph):
    x = graph.input([4, 4], name="x")
    lengths = graph.input([1, 4], np.uint32, name="lengths")
    dml.slice(x, [0, 0], [4, 4])
    with pytest.raises(dml.InvalidArgumentError,
                       match=r"^graph node 1 \(Slice1\): Slice1: input_window_offsets\[1\] \+ input_window_sizes\[1\] "
                             r"= 7 exceeds input size 4 on axis 1"):
        dml.slice(x, [0, 3], [4, 4])
    with pytest.raises(dml.InvalidArgumentError, match=r"^graph node 1 \(Reduce\): reduce: function: 'median'"):
        dml.reduce(x, "median")
    with pytest.raises(dml.InvalidArgumentError, match=r"^graph node 1 \(ReverseSubsequences\): .*sequence_lengths"):
        dml.reverse_subsequences(x, np.array([[-1, 2, 3, 4]]), axis=0)
    with pytest.raises(dml.InvalidArgumentError, match=r"^graph node 1 \(ReverseSubsequences\): reverse_subsequences: "
                                                       r"x: expected a numpy array or gpudml.Tensor, got list"):
        dml.reverse_subsequences([[1.0] * 4] * 4, lengths, axis=0)
    assert len(graph.nodes) == 1 and not graph.constants


def test_node_errors_for_graphs_and_devices(graph, vulkan_device, at_level):
    x = graph.input([4], name="x")
    other = dml.Graph(vulkan_device)
    lengths = other.input([1], dtype=np.uint32, name="lengths")
    with pytest.raises(dml.InvalidArgumentError, match=r"x is an Expression of Graph\(.*\) and sequence_lengths one "
                                                       r"of Graph\(.*\); the Expressions of one node come from one"):
        dml.reverse_subsequences(x, lengths, axis=0)
    with pytest.raises(dml.InvalidArgumentError, match=r"^graph node 0 \(Slice1\): slice: device=Device.*FL_3_0.* is "
                                                       r"not the graph's device"):
        dml.slice(x, [0], [4], device=at_level(dml.FeatureLevel.FL_3_0))
    assert dml.slice(x, [0], [2], device=vulkan_device).shape == [2]  # the graph's own device is fine
    with pytest.raises(dml.InvalidArgumentError, match="device must be a gpudml.Device or None, got str"):
        dml.Graph("vulkan")


def test_functional_spelling_errors():
    x = np.zeros((2, 2), np.float32)
    with pytest.raises(dml.InvalidArgumentError, match="slice: offsets and input_window_offsets are two names of one"):
        dml.slice(x, [0, 0], [2, 2], input_window_offsets=[0, 0])
    with pytest.raises(dml.InvalidArgumentError, match="slice: strides and input_window_strides"):
        dml.slice(x, [0, 0], [2, 2], [1, 1], input_window_strides=[1, 1])
    with pytest.raises(dml.InvalidArgumentError, match=r"slice: sizes \(or input_window_sizes\) is required"):
        dml.slice(x, input_window_offsets=[0, 0])
    with pytest.raises(dml.InvalidArgumentError, match="padding: end_padding is required"):
        dml.padding(x, start_padding=[0, 0])


@pytest.mark.parametrize("kwargs, message", [
    ({"sizes": "abc"}, r"Graph.input: sizes: expected a sequence of integers, got 'abc'"),
    ({"sizes": [2, "a"]}, r"Graph.input: sizes\[1\]: expected an integer, got 'a'"),
    ({"sizes": 4}, r"Graph.input: sizes: expected a sequence of integers, got 4"),
    ({"sizes": [2, 0], "name": "q"}, r"Graph.input: q.sizes\[1\] = 0 must be >= 1"),
    ({"sizes": []}, r"Graph.input: input.sizes: DimensionCount 0 must be in 1..8"),
    ({"sizes": [1] * 9}, r"DimensionCount 9 must be in 1..8"),
    ({"sizes": [2, 2], "strides": [1]}, r"Graph.input: input.strides: 1 strides \[1\] for DimensionCount 2"),
    ({"sizes": [2, 2], "strides": [2, -1]}, r"Graph.input: input.strides\[1\] = -1 must be >= 0"),
    ({"sizes": [2], "strides": 1.5}, r"Graph.input: strides: expected a sequence of integers, got 1.5"),
    ({"sizes": [2], "dtype": "complex64"}, r"Graph.input: dtype: numpy dtype complex64 has no DirectML data type"),
    ({"sizes": [2], "dtype": "bogus"}, r"Graph.input: dtype: 'bogus' is not a DataType"),
    ({"sizes": [2], "name": 3}, r"Graph.input: name must be a non-empty str or None, got 3"),
    ({"sizes": [2], "name": ""}, r"Graph.input: name must be a non-empty str"),
    ({"sizes": [2], "name": "x"}, r"Graph.input: name 'x' is taken by another input of this graph"),
])
def test_input_errors(graph, kwargs, message):
    graph.input([1], name="x")
    with pytest.raises(dml.InvalidArgumentError, match=message):
        graph.input(**kwargs)
    assert len(graph.inputs) == 1


@pytest.mark.parametrize("value, message", [
    ([1, 2], "Graph.constant: array: expected a numpy array or gpudml.Tensor, got list"),
    (np.zeros(0, np.float32), r"Graph.constant: array has shape \[0\]; every size must be >= 1"),
    (np.float32(1), r"Graph.constant: array has 0 dimensions"),
    (np.zeros(2, np.complex64), "Graph.constant: array: numpy dtype complex64 has no DirectML data type"),
])
def test_constant_errors(graph, value, message):
    with pytest.raises(dml.InvalidArgumentError, match=message):
        graph.constant(value)


def test_compile_errors(graph, vulkan_device):
    x = graph.input([4], name="x")
    foreign = dml.Graph(vulkan_device).input([4])
    for outputs, message in [
        ([], "outputs is empty"),
        (x, r"got one Expression \(write compile\(\[expression\]\)\)"),
        ("x", "outputs must be a list of Expressions, got str"),
        (None, "outputs must be a list of Expressions, got NoneType"),
        ([x, 3], r"outputs\[1\] is a int, not an Expression"),
        ([x, [x]], r"outputs\[1\] is a list, not an Expression"),
        ([foreign], r"outputs\[0\] Expression\(input 'input0'.*\) is an Expression of another graph"),
    ]:
        with pytest.raises(dml.InvalidArgumentError, match=message):
            graph.compile(outputs)


@pytest.fixture
def compiled(graph):
    x = graph.input([2, 3], dtype=np.float32, name="x")
    lengths = graph.input([1, 3], dtype=np.uint32, name="lengths")
    y = dml.reverse_subsequences(x, lengths, axis=0)
    c = graph.constant(np.zeros(2, np.int8))
    return graph.compile([y]), x, lengths, y, c


def test_call_errors_name_the_input(compiled, vulkan_device, at_level):
    op, x, lengths, y, c = compiled
    good_x, good_lengths = np.zeros((2, 3), np.float32), np.ones((1, 3), np.uint32)
    other = dml.Graph(vulkan_device).input([2, 3], name="x")
    for inputs, message in [
        ({"x": good_x}, r"missing input 'lengths' \(UINT32 of shape \[1, 3\]\)"),
        ({}, r"missing inputs 'x' \(FLOAT32 of shape \[2, 3\]\), 'lengths'"),
        ({"x": good_x, "lengths": good_lengths, "z": good_x}, r"unknown input name 'z' \(the graph's inputs: 'x', "
                                                             r"'lengths'\)"),
        ({"x": good_x, lengths: good_lengths, "lengths": good_lengths}, "input 'lengths' is given twice"),
        ({"x": good_x, "lengths": good_lengths, y: good_x}, r"is the output of node 0, not an input"),
        ({"x": good_x, "lengths": good_lengths, c: good_x}, r"Expression\(constant %3.*is a constant, not an input"),
        ({other: good_x, "lengths": good_lengths}, "is an Expression of another graph"),
        ({0: good_x}, "input keys are input names or input Expressions, got int 0"),
        ({"x": good_x.astype(np.float64), "lengths": good_lengths},
         r"input 'x': dtype float64 \(FLOAT64\) differs from the input's FLOAT32; graphs do not cast"),
        ({"x": good_x, "lengths": good_lengths.astype(np.int64)}, r"input 'lengths': dtype int64 \(INT64\) differs"),
        ({"x": good_x.reshape(3, 2), "lengths": good_lengths},
         r"input 'x': shape \[3, 2\], expected FLOAT32 of shape \[2, 3\]$"),
        ({"x": good_x.reshape(-1), "lengths": good_lengths}, r"input 'x': shape \[6\], expected"),
        ({"x": good_x.tolist(), "lengths": good_lengths},
         "input 'x': expected a numpy array or gpudml.Tensor, got list"),
        ({"x": np.zeros((2, 3), np.complex64), "lengths": good_lengths}, "input 'x': numpy dtype complex64"),
        ({"x": vulkan_device.tensor(good_x.T.copy()), "lengths": good_lengths},
         r"input 'x': a Tensor of TensorDesc\(FLOAT32, sizes=\[3, 2\].*expected TensorDesc\(FLOAT32, sizes=\[2, 3\]"),
    ]:
        with pytest.raises(dml.InvalidArgumentError, match=message):
            op(inputs)
    freed = vulkan_device.tensor(good_x)
    freed.free()
    with pytest.raises(dml.InvalidArgumentError, match="input 'x': the Tensor was freed"):
        op({"x": freed, "lengths": good_lengths})
    with pytest.raises(dml.InvalidArgumentError, match="inputs must be a dict keyed by input names or input "
                                                       "Expressions, got list"):
        op([good_x, good_lengths])
    with pytest.raises(dml.InvalidArgumentError, match="readback must be True or False, got 'no'"):
        op({"x": good_x, "lengths": good_lengths}, readback="no")
    late = op.graph.input([1], name="late")
    with pytest.raises(dml.InvalidArgumentError, match="was added to the graph after it was compiled"):
        op({"x": good_x, "lengths": good_lengths, late: np.zeros(1, np.float32)})
    (got,) = op({"x": good_x, "lengths": good_lengths})  # after all that, it still runs
    assert_bits_equal(got, good_x)


def test_tensor_inputs_from_another_adapter_are_rejected(compiled):
    op = compiled[0]
    from conftest import ADAPTERS, get_device

    others = [a for a in ADAPTERS if not get_device(a).shares_memory_with(op.device)]
    if not others:
        pytest.skip("one adapter selected")
    foreign = get_device(others[0]).tensor(np.zeros((2, 3), np.float32))
    with pytest.raises(dml.InvalidArgumentError, match="input 'x': the Tensor lives on .*, the graph's device is"):
        op({"x": foreign, "lengths": np.ones((1, 3), np.uint32)})


# ------------------------------------------------------------------ threads
def test_one_compiled_graph_called_from_several_threads(device):
    g = dml.Graph(device)
    x = g.input([6, 8], dtype=np.uint16, name="x")
    y = dml.pad(dml.slice(x, [1, 0], [5, 8], [1, -1]), [1, 2], [0, 1], mode="reflection")
    op = g.compile([dml.reduce(y, "max", axes=[1]), y])

    def work(i):
        rng = np.random.default_rng(i)
        for _ in range(15):
            array = random_bits(rng, np.uint16, (6, 8))
            want_y = dml.pad(array[1:, ::-1], [1, 2], [0, 1], mode="reflection", device=device)
            got_r, got_y = op({"x": array}, readback=bool(rng.integers(0, 2)))
            got_r, got_y = (t if isinstance(t, np.ndarray) else t.numpy() for t in (got_r, got_y))
            assert_bits_equal(got_y, want_y)
            assert_bits_equal(got_r, want_y.max(axis=1, keepdims=True))

    run_threads(work)


# ------------------------------------------------------------------ DirectML's own results
@pytest.mark.parametrize("example", examples.EXAMPLES, ids=lambda e: e.name)
def test_every_page_example_through_a_graph(device, example):
    """Each DirectML page example recorded on a graph (its input a graph input, one per array
    of a list input; its other arguments constants) and behind a flip of each input, which
    makes a chain of two for data movement: the page's printed output (every output of a
    node with several), fused and unfused. An example without input (a generator's) has no
    graph value to record on: its call runs at once and gives the page's output as a numpy
    array (a graph takes it as a constant)."""
    spec = spec_named(example.operator)
    if example.input is None:
        got = dml.FUNCTIONS[spec.functional_name](device=device, **example.args)
        assert isinstance(got, np.ndarray)
        assert_bits_equal(got, example.expected)
        return
    g = dml.Graph(device)
    arrays = examples.arrays(example.input)
    xs = [g.input(a.shape, dtype=a.dtype, name=f"x{i}") for i, a in enumerate(arrays)]
    several = isinstance(example.input, list)
    y = dml.FUNCTIONS[spec.functional_name](xs if several else xs[0], **example.args)
    feed = {f"x{i}": a for i, a in enumerate(arrays)}
    for fuse in (True, False):
        got = g.compile(examples.arrays(y), fuse=fuse)(feed)
        for a, b in zip(got, examples.arrays(example.expected), strict=True):
            assert_bits_equal(a, b)
    # Behind a flip of each input (undone on the host)
    flipped = [dml.slice(x, [0] * x.desc.rank, x.shape, [-1] + [1] * (x.desc.rank - 1)) for x in xs]
    z = dml.FUNCTIONS[spec.functional_name](flipped if several else flipped[0], **example.args)
    got = g.compile(examples.arrays(z))({f"x{i}": a[::-1].copy() for i, a in enumerate(arrays)})
    for a, b in zip(got, examples.arrays(example.expected), strict=True):
        assert_bits_equal(a, b)
