"""Join: what the conformance kit (tests/test_conformance.py) does not cover: the list field's
inputs, the reference against a second formulation, each validation rule's message, which
strategies are eligible (and each forced), more inputs than a kernel can bind, the plan's
copies, the functional form's list argument, graphs, the command line."""

from __future__ import annotations

import re

import numpy as np
import pytest
from conformance import HIGHEST, Case, run_case, run_every_variant
from conftest import assert_bits_equal, random_bits
from isolated import limited_device

import gpudml as dml
from gpudml import caps, compiler, reference
from gpudml.ops import join

DT = dml.DataType


def _desc(in_sizes=((1, 1, 2, 3), (1, 1, 2, 4)), out_sizes=(1, 1, 2, 7), axis=3, dtype=DT.FLOAT32, in_dtypes=None,
          out_strides=None):
    in_dtypes = in_dtypes or [dtype] * len(in_sizes)
    return dml.JoinOperatorDesc([dml.TensorDesc(t, s) for t, s in zip(in_dtypes, in_sizes, strict=True)],
                                dml.TensorDesc(dtype, out_sizes, out_strides), axis)


def _raises(device, desc, message: str):
    with pytest.raises(dml.InvalidArgumentError, match=re.escape(message)):
        device.create_operator(desc)


def _concatenated(arrays, axis: int) -> np.ndarray:
    """A second formulation of JOIN: each array written into its window of the output."""
    shape = list(arrays[0].shape)
    shape[axis] = sum(a.shape[axis] for a in arrays)
    out, start = np.empty(shape, arrays[0].dtype), 0
    for a in arrays:
        window = [slice(None)] * a.ndim
        window[axis] = slice(start, start + a.shape[axis])
        out[tuple(window)] = a
        start += a.shape[axis]
    return out


def test_compiled_inputs_are_named_per_element(device):
    """A list field's tensors are inputs of their own, named by their place in the list."""
    compiled = device.compile_operator(device.create_operator(_desc()))
    assert [name for name, _ in compiled.inputs] == ["input_tensors[0]", "input_tensors[1]"]


def test_reference_is_a_second_formulation():
    rng = np.random.default_rng(4)
    for shapes, axis in ((((2, 3), (2, 1), (2, 5)), 1), (((1, 4, 2), (3, 4, 2)), 0), (((7,),), 0)):
        arrays = [random_bits(rng, np.float64, s) for s in shapes]
        assert_bits_equal(reference.join(arrays, axis), _concatenated(arrays, axis))
        assert_bits_equal(reference.join(arrays, axis - len(shapes[0])), _concatenated(arrays, axis))


# ------------------------------------------------------------------ validation: one rule each
@pytest.mark.parametrize("desc, message", [
    (_desc(in_sizes=(), in_dtypes=[]), "Join: InputCount is 0 (input_tensors is empty); it must be greater than 0"),
    (_desc(axis=4), "Join: axis = 4 must be in [0, DimensionCount - 1] = [0, 3]"),
    (_desc(axis=-1), "Join: axis = -1 must be in [0, DimensionCount - 1] = [0, 3]"),
    (_desc(in_sizes=((1, 1, 2, 3), (1, 1, 3, 4)), out_sizes=(1, 1, 2, 7)),
     "Join: input_tensors[1].sizes[2] = 3 must equal output_tensor.sizes[2] = 2 (the sizes may differ on axis 3 "
     "only)"),
    (_desc(out_sizes=(1, 1, 2, 8)),
     "Join: output_tensor.sizes[3] = 8 must equal the sum of input_tensors[i].sizes[3] = 3 + 4 = 7"),
    (_desc(in_dtypes=[DT.FLOAT32, DT.INT32]),
     "Join: input_tensors[1].data_type INT32 must equal output_tensor.data_type FLOAT32"),
    (_desc(in_sizes=((1, 1, 2, 3), (1, 2, 4)), out_sizes=(1, 1, 2, 7)),
     "Join: all tensors must have the same DimensionCount (got input_tensors[0] 4, input_tensors[1] 3, "
     "output_tensor 4)"),
    (_desc(out_strides=(14, 14, 7, 0)), "Join: output_tensor.strides: [14, 14, 7, 0] with sizes [1, 1, 2, 7] make two "
                                        "output elements share one address"),
    (dml.JoinOperatorDesc(dml.TensorDesc(DT.FLOAT32, [1, 1, 2, 3]), dml.TensorDesc(DT.FLOAT32, [1, 1, 2, 3]), 3),
     "Join: input_tensors must be a list of TensorDescs, got TensorDesc"),
    (dml.JoinOperatorDesc([dml.TensorDesc(DT.FLOAT32, [1, 1, 2, 3]), None], dml.TensorDesc(DT.FLOAT32, [1, 1, 2, 7]),
                          3), "Join: input_tensors[1]: expected a TensorDesc, got NoneType"),
])
def test_validation_rule(vulkan_device, desc, message):
    _raises(vulkan_device, desc, message)


def test_axis_is_an_integer():
    with pytest.raises(dml.InvalidArgumentError, match=re.escape("Join: axis: expected an integer, got 1.5")):
        _desc(axis=1.5)


@pytest.mark.parametrize("shapes, axis", [
    (((32, 3), (16, 3), (48, 3)), 0),  # every region starts on a 16-byte block, whatever the type
    (((5, 3), (4, 3)), 0),  # the second region starts mid-block
    (((2, 3), (2, 5)), 1),  # regions with gaps
    (((6,), (2,), (9,)), 0),  # on blocks for 8-byte elements only
])
@pytest.mark.parametrize("data_type", [DT.UINT8, DT.FLOAT16, DT.INT32, DT.FLOAT64], ids=lambda t: t.name)
def test_every_strategy(device, shapes, axis, data_type):
    """Each eligible strategy forced, CPU-class and GPU-class: the block strategies where
    every region is packed and starts on a block, else strided; coalesced always."""
    desc = join.infer_output([dml.TensorDesc(data_type, s) for s in shapes], axis)
    op = device.create_operator(desc)
    strategies = device.compile_operator(op).strategies
    row = int(np.prod(shapes[0][1:]))
    starts = np.cumsum([0] + [s[0] for s in shapes[:-1]]) * row
    blocks = axis == 0 and all(start % (16 // data_type.size) == 0 for start in starts)
    assert ("stretches" in strategies) == blocks and ("strided" in strategies) != blocks
    assert "coalesced" in strategies
    assert all(len(device.compile_operator(op, s).program.kernels) == len(shapes) for s in strategies)
    assert run_every_variant(device, Case(join.SPEC, HIGHEST, desc), len(shapes)) == set(strategies)


@pytest.mark.parametrize("count", [1, 40])
def test_more_inputs_than_a_kernel_can_bind(device, count):
    """40 inputs: more than a kernel may bind on either adapter (lavapipe 32 storage buffers,
    llvmpipe through GL 16; a GPU, which binds more, is held to 16). Each dispatch binds one
    input and the output, every strategy."""
    if device.caps.max_storage_buffers_per_shader_stage >= 40:
        device = limited_device(device.adapter_name, max_storage_buffers_per_shader_stage=16)
    limit = device.caps.max_storage_buffers_per_shader_stage
    assert count == 1 or count > limit
    rng = np.random.default_rng(count)
    xs = [random_bits(rng, np.uint16, (3, int(rng.integers(1, 4)), 2)) for _ in range(count)]
    desc = join.infer_output([dml.TensorDesc(DT.UINT16, x.shape) for x in xs], 1)
    op = device.create_operator(desc)
    for strategy in device.compile_operator(op).strategies:
        compiled = device.compile_operator(op, strategy)
        assert len(compiled.program.kernels) == count
        assert all(len(k.buffers) <= 3 for k in compiled.program.kernels)
        run_case(device, Case(join.SPEC, HIGHEST, desc), rng, compiled)
    assert_bits_equal(dml.join(xs, -2, device=device), _concatenated(xs, 1))


def test_plan_is_one_copy_per_input():
    """Pure: the regions' bases and the axes merged in each copy."""
    desc = join.infer_output([dml.TensorDesc(DT.FLOAT32, [2, 3, 4]), dml.TensorDesc(DT.FLOAT32, [2, 5, 4])], 1)
    program = compiler.compile(desc, caps.profile("vulkan-cpu"))
    assert program.strategy == "strided" and program.strategies == ("strided", "coalesced")
    first, second = program.kernels
    assert [b.key for b in first.buffers] == [("output", 0), ("input", 0)]
    assert [b.key for b in second.buffers] == [("output", 0), ("input", 1)]
    assert first.params["rank"] == 2 and first.params["out_base"]  # [2, 12]: the region's rows merged
    words = np.frombuffer(second.uniform_bytes, np.uint32)
    assert 12 in words  # the second region starts at element 3 * 4


# ------------------------------------------------------------------ functional API
def test_functional_forms(device):
    rng = np.random.default_rng(9)
    xs = [random_bits(rng, np.int8, (2, n, 3)) for n in (1, 4, 2)]
    assert_bits_equal(dml.join(xs, 1, device=device), _concatenated(xs, 1))
    assert_bits_equal(dml.join(tuple(xs), -2, device=device), _concatenated(xs, 1))
    assert_bits_equal(dml.join(xs[:1], 0, device=device), xs[0])  # one input: a copy
    odd = [xs[0][:, ::-1], np.asfortranarray(xs[1]), xs[2].astype(np.dtype(np.int8).newbyteorder(">"))]
    assert_bits_equal(dml.join(odd, 1, device=device), _concatenated([np.ascontiguousarray(a) for a in odd], 1))
    tensors = [device.tensor(x) for x in xs]
    out = dml.join(tensors, 1)
    assert isinstance(out, dml.Tensor) and out.shape == (2, 7, 3)
    assert_bits_equal(out.numpy(), _concatenated(xs, 1))
    mixed = dml.join([tensors[0], xs[1], tensors[2]], 1)  # the first decides: a Tensor
    assert isinstance(mixed, dml.Tensor) and np.array_equal(mixed.numpy(), _concatenated(xs, 1))
    assert isinstance(dml.join([xs[0], tensors[1]], 1, device=device), np.ndarray)


@pytest.mark.parametrize("xs, axis, message", [
    ([], 0, "join: xs is an empty list; it takes at least one tensor"),
    (np.zeros((2, 2), np.float32), 0, "join: xs must be a list of numpy arrays, Tensors or Expressions, got ndarray"),
    ([np.zeros(2, np.float32), [1.0]], 0, "join: xs[1]: expected a numpy array or gpudml.Tensor, got list"),
    ([np.zeros(2, np.float32)], 1, "join: axis = 1 is outside [-1, 0] (xs[0] has 1 dimensions)"),
    ([np.zeros(2, np.float32), np.zeros(2, np.int32)], 0,
     "Join: input_tensors[1].data_type INT32 must equal output_tensor.data_type FLOAT32"),
    ([np.zeros((2, 3), np.float32), np.zeros((3, 3), np.float32)], 1,
     "Join: input_tensors[1].sizes[0] = 3 must equal output_tensor.sizes[0] = 2 (the sizes may differ on axis 1"),
    ([np.zeros((2, 3), np.float32), np.zeros(3, np.float32)], 0,
     "Join: all tensors must have the same DimensionCount (got input_tensors[0] 2, input_tensors[1] 1"),
])
def test_functional_errors(vulkan_device, xs, axis, message):
    with pytest.raises(dml.InvalidArgumentError, match=re.escape(message)):
        dml.join(xs, axis, device=vulkan_device)


# ------------------------------------------------------------------ graphs
def test_join_in_graphs(device):
    """A join of data-movement chains, of an input and a constant, read by a Reduce and by a
    Tile: every chain before it is one kernel; fused and unfused are bit-exact."""
    g = dml.Graph(device)
    x = g.input([3, 4], dtype=np.int16, name="x")
    y = g.input([3, 2], dtype=np.int16, name="y")
    a = dml.slice(dml.pad(x, [0, 1], [0, 1], mode="wrap"), [0, 0], [3, 6], [1, -1])
    b = dml.tile(y, [1, 2])
    constant = np.arange(9, dtype=np.int16).reshape(3, 3)
    j = dml.join([a, b, y, constant], 1)
    assert isinstance(j, dml.Expression) and j.shape == [3, 15]
    r = dml.reduce(dml.tile(j, [2, 1]), "max", [0])
    op = g.compile([r, j])
    names = [s.compiled.name for s in op.steps]
    assert names == ["Fused(Padding>Slice1)", "Tile", "Join", "Fused(Tile>Reduce)"]
    rng = np.random.default_rng(5)
    feed = {"x": random_bits(rng, np.int16, (3, 4)), "y": random_bits(rng, np.int16, (3, 2))}
    got, want = op(feed), g.compile([r, j], fuse=False)(feed)
    for a_, b_ in zip(got, want, strict=True):
        assert_bits_equal(a_, b_)
    padded = reference.pad(feed["x"], [0, 1], [0, 1], "wrap")[:, ::-1]
    assert_bits_equal(got[1], _concatenated([padded, np.tile(feed["y"], [1, 2]), feed["y"], constant], 1))


def test_a_join_of_many_graph_values(device):
    """40 node outputs joined: one Join step, 40 dispatches."""
    g = dml.Graph(device)
    x = g.input([2, 3], dtype=np.float32, name="x")
    parts = [dml.slice(x, [0, i % 3], [2, 1]) for i in range(40)]
    j = dml.join(parts, 1)
    op = g.compile([j])
    assert op.steps[-1].compiled.name == "Join" and op.steps[-1].dispatches == 40
    array = np.arange(6, dtype=np.float32).reshape(2, 3)
    assert_bits_equal(op({"x": array})[0], array[:, [i % 3 for i in range(40)]])


def test_graph_errors_name_the_node(vulkan_device):
    g, other = dml.Graph(vulkan_device), dml.Graph(vulkan_device)
    x, z = g.input([2, 2], name="x"), other.input([2, 2], name="z")
    with pytest.raises(dml.InvalidArgumentError, match=re.escape("join: xs[0] is an Expression of")):
        dml.join([x, z], 0)
    with pytest.raises(dml.InvalidArgumentError, match=re.escape(
            "graph node 0 (Join): Join: input_tensors[1].sizes[1] = 3 must equal output_tensor.sizes[1] = 2")):
        dml.join([x, g.input([2, 3], name="w")], 0)


# ------------------------------------------------------------------ command line
def test_cli_shader_join(capsys):
    from gpudml import cli

    assert cli.main(["shader", "join", "--shape", "2,3", "--axis", "-1", "--axis-sizes", "4,1", "--caps", "gpu"]) == 0
    out = capsys.readouterr().out
    assert "// Join at FL_6_4" in out and "// strategy coalesced (eligible: coalesced, strided)" in out
    assert out.count("// dispatch ") == 3
