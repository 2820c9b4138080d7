"""Split: what the conformance kit (tests/test_conformance.py) does not cover: the list
field's outputs, the reference against a second formulation, each validation rule's message,
which strategies are eligible (and each forced), more outputs than a kernel can bind, one
Tensor given as two outputs, the plan's copies, the functional form (always a list), graphs
with several outputs per node, the command line."""

from __future__ import annotations

import re

import numpy as np
import pytest
from conformance import HIGHEST, Case, RandomDraw, laid_out, run_case, run_every_variant
from conftest import assert_bits_equal, random_bits
from isolated import limited_device

import gpudml as dml
from gpudml import caps, compiler, reference
from gpudml.ops import split

DT = dml.DataType


def _desc(in_sizes=(1, 1, 6, 2), out_sizes=((1, 1, 2, 2), (1, 1, 1, 2), (1, 1, 3, 2)), axis=2, dtype=DT.FLOAT32,
          out_dtypes=None, out_strides=None):
    out_dtypes = out_dtypes or [dtype] * len(out_sizes)
    out_strides = out_strides or [None] * len(out_sizes)
    return dml.SplitOperatorDesc(
        dml.TensorDesc(dtype, in_sizes),
        [dml.TensorDesc(t, s, st_) for t, s, st_ in zip(out_dtypes, out_sizes, out_strides, strict=True)], axis)


def _raises(device, desc, message: str):
    with pytest.raises(dml.InvalidArgumentError, match=re.escape(message)):
        device.create_operator(desc)


def _pieces(x: np.ndarray, axis: int, sizes) -> list[np.ndarray]:
    """A second formulation of SPLIT: each piece sliced from its window, copied."""
    pieces, start = [], 0
    for n in sizes:
        window = [slice(None)] * x.ndim
        window[axis] = slice(start, start + n)
        pieces.append(x[tuple(window)].copy())
        start += n
    return pieces


def _assert_pieces(got, want):
    assert isinstance(got, list) and len(got) == len(want)
    for g, w in zip(got, want):
        assert_bits_equal(g, w)


def test_compiled_outputs_are_named_per_element(device):
    """A list field's tensors are outputs of their own, named by their place in the list."""
    compiled = device.compile_operator(device.create_operator(_desc()))
    assert [name for name, _ in compiled.outputs] == ["output_tensors[0]", "output_tensors[1]", "output_tensors[2]"]


def test_reference_is_a_second_formulation():
    x = random_bits(np.random.default_rng(3), np.int64, (4, 7, 3))
    for axis, sizes in ((1, [2, 1, 4]), (0, [4]), (-1, [1, 1, 1])):
        _assert_pieces(reference.split(x, axis, sizes), _pieces(x, axis % 3, sizes))
    with pytest.raises(ValueError, match="split: sizes"):
        reference.split(x, 1, [2, 2])


# ------------------------------------------------------------------ validation: one rule each
@pytest.mark.parametrize("desc, message", [
    (_desc(out_sizes=()), "Split: OutputCount is 0 (output_tensors is empty); it must be greater than 0"),
    (_desc(axis=4), "Split: axis = 4 must be in [0, DimensionCount - 1] = [0, 3]"),
    (_desc(axis=-2), "Split: axis = -2 must be in [0, DimensionCount - 1] = [0, 3]"),
    (_desc(out_sizes=((1, 1, 2, 2), (1, 1, 1, 1), (1, 1, 3, 2))),
     "Split: output_tensors[1].sizes[3] = 1 must equal input_tensor.sizes[3] = 2 (the sizes may differ on axis 2 "
     "only)"),
    (_desc(out_sizes=((1, 1, 2, 2), (1, 1, 3, 2))),
     "Split: input_tensor.sizes[2] = 6 must equal the sum of output_tensors[i].sizes[2] = 2 + 3 = 5"),
    (_desc(out_dtypes=[DT.FLOAT32, DT.FLOAT16, DT.FLOAT32]),
     "Split: output_tensors[1].data_type FLOAT16 must equal input_tensor.data_type FLOAT32"),
    (_desc(out_sizes=((1, 1, 2, 2), (1, 1, 4, 2, 1))),
     "Split: all tensors must have the same DimensionCount (got output_tensors[0] 4, output_tensors[1] 5, "
     "input_tensor 4)"),
    (_desc(out_strides=[None, (2, 2, 2, 0), None]),
     "Split: output_tensors[1].strides: [2, 2, 2, 0] with sizes [1, 1, 1, 2] make two output elements share one "
     "address"),
    (dml.SplitOperatorDesc(dml.TensorDesc(DT.FLOAT32, [4]), dml.TensorDesc(DT.FLOAT32, [4]), 0),
     "Split: output_tensors must be a list of TensorDescs, got TensorDesc"),
    (dml.SplitOperatorDesc(dml.TensorDesc(DT.FLOAT32, [4]), [dml.TensorDesc(DT.FLOAT32, [4]), 3], 0),
     "Split: output_tensors[1]: expected a TensorDesc, got int"),
])
def test_validation_rule(vulkan_device, desc, message):
    _raises(vulkan_device, desc, message)


@pytest.mark.parametrize("shape, axis, sizes", [
    ((12, 5), 0, [3, 1, 8]), ((4, 9), 1, [2, 7]), ((33,), 0, [32, 1]), ((2, 3, 4), 2, [4]),
])
@pytest.mark.parametrize("data_type", [DT.INT8, DT.UINT16, DT.FLOAT32, DT.INT64], ids=lambda t: t.name)
def test_every_strategy(device, shape, axis, sizes, data_type):
    """Each eligible strategy forced, CPU-class and GPU-class, packed outputs and outputs
    with gaps (strided only; a 1-D output has none)."""
    for gaps in (False, True) if len(shape) > 1 else (False,):
        desc = split.infer_output(dml.TensorDesc(data_type, shape), axis, sizes)
        if gaps:
            desc = laid_out(desc, RandomDraw(np.random.default_rng(1)), "strided_output")
        op = device.create_operator(desc)
        strategies = device.compile_operator(op).strategies
        assert ("stretches" in strategies) != gaps and ("strided" in strategies) == gaps and "coalesced" in strategies
        assert all(len(device.compile_operator(op, s).program.kernels) == len(sizes) for s in strategies)
        assert run_every_variant(device, Case(split.SPEC, HIGHEST, desc), len(sizes)) == set(strategies)


def test_more_outputs_than_a_kernel_can_bind(device):
    """40 outputs: more than a kernel may bind on either adapter (lavapipe 32, llvmpipe
    through GL 16; a GPU, which binds more, is held to 16). Each dispatch binds the input and
    one output, every strategy."""
    if device.caps.max_storage_buffers_per_shader_stage >= 40:
        device = limited_device(device.adapter_name, max_storage_buffers_per_shader_stage=16)
    assert 40 > device.caps.max_storage_buffers_per_shader_stage
    rng = np.random.default_rng(40)
    sizes = [int(n) for n in rng.integers(1, 4, size=40)]
    x = random_bits(rng, np.float16, (2, sum(sizes)))
    desc = split.infer_output(dml.TensorDesc(DT.FLOAT16, x.shape), 1, sizes)
    op = device.create_operator(desc)
    for strategy in device.compile_operator(op).strategies:
        compiled = device.compile_operator(op, strategy)
        assert len(compiled.program.kernels) == 40 and all(len(k.buffers) <= 3 for k in compiled.program.kernels)
        run_case(device, Case(split.SPEC, HIGHEST, desc), rng, compiled)
    _assert_pieces(dml.split(x, -1, sizes, device=device), _pieces(x, 1, sizes))


def test_one_tensor_given_as_two_outputs_is_refused(vulkan_device):
    """Two outputs in one buffer would keep whichever piece was written last."""
    desc = split.infer_output(dml.TensorDesc(DT.FLOAT32, [2, 6]), 1, [3, 3])
    compiled = vulkan_device.compile_operator(vulkan_device.create_operator(desc))
    out = vulkan_device.empty(desc.output_tensors[0])
    with pytest.raises(dml.InvalidArgumentError, match=re.escape(
            "Split.execute: output_tensors[1] is the Tensor given as output_tensors[0]; each output needs a Tensor "
            "of its own")):
        compiled.execute([np.zeros((2, 6), np.float32)], outputs=[out, out])


def test_plan_is_one_copy_per_output():
    desc = split.infer_output(dml.TensorDesc(DT.UINT8, [3, 10]), 1, [4, 6])
    program = compiler.compile(desc, caps.profile("gpu"))
    assert program.strategy == "coalesced" and program.strategies == ("coalesced", "stretches", "elements")
    first, second = program.kernels
    assert [b.key for b in first.buffers] == [("output", 0), ("input", 0)]
    assert [b.key for b in second.buffers] == [("output", 1), ("input", 0)]
    assert not second.params["out_base"] and 4 in np.frombuffer(second.uniform_bytes, np.uint32)  # src_base 4


# ------------------------------------------------------------------ functional API
def test_functional_forms(device):
    x = random_bits(np.random.default_rng(8), np.uint32, (3, 5, 2))
    _assert_pieces(dml.split(x, 1, [1, 3, 1], device=device), _pieces(x, 1, [1, 3, 1]))
    _assert_pieces(dml.split(x, -3, (3,), device=device), [x])  # one output: still a list
    _assert_pieces(dml.split(x[:, ::-1], 0, [2, 1], device=device), _pieces(x[:, ::-1], 0, [2, 1]))
    out = dml.split(device.tensor(x), 2, [1, 1])
    assert isinstance(out, list) and all(isinstance(t, dml.Tensor) for t in out)
    _assert_pieces([t.numpy() for t in out], _pieces(x, 2, [1, 1]))
    again = dml.join(out, 2)  # JOIN is SPLIT's inverse, on the GPU
    assert isinstance(again, dml.Tensor) and np.array_equal(again.numpy(), x)


@pytest.mark.parametrize("axis, sizes, message", [
    (3, [1], "split: axis = 3 is outside [-3, 2] (x has 3 dimensions)"),
    (1, 5, "split: sizes: expected a sequence of integers, got 5"),
    (1, [2, 2.5], "split: sizes[1]: expected an integer, got 2.5"),
    (1, [], "Split: OutputCount is 0 (output_tensors is empty); it must be greater than 0"),
    (1, [2, 0, 3], "split: sizes[1] = 0 must be >= 1"),
    (1, [2, 2], "Split: input_tensor.sizes[1] = 5 must equal the sum of output_tensors[i].sizes[1] = 2 + 2 = 4"),
])
def test_functional_errors(vulkan_device, axis, sizes, message):
    with pytest.raises(dml.InvalidArgumentError, match=re.escape(message)):
        dml.split(np.zeros((3, 5, 2), np.float32), axis, sizes, device=vulkan_device)


# ------------------------------------------------------------------ graphs
def test_split_in_graphs(device):
    """A node with several outputs: its Expressions feed data-movement chains (which fuse
    after it), a Reduce and a Join; only the outputs used are asked for; fused and
    unfused are bit-exact."""
    g = dml.Graph(device)
    x = g.input([4, 9], dtype=np.uint8, name="x")
    a, b, c = dml.split(dml.pad(x, [0, 1], [0, 2], mode="edge"), 1, [3, 5, 4])
    assert [e.shape for e in (a, b, c)] == [[4, 3], [4, 5], [4, 4]]
    ta = dml.tile(dml.slice(a, [0, 0], [4, 3], [-1, 1]), [1, 2])
    r = dml.reduce(b, "max", [1])
    j = dml.join([c, ta], 1)
    op = g.compile([j, r])
    assert [s.compiled.name for s in op.steps] == ["Padding", "Split", "Fused(Slice1>Tile)", "Reduce", "Join"]
    assert op.steps[1].dispatches == 3 and len(op.steps[1].outputs) == 3
    feed = {"x": random_bits(np.random.default_rng(2), np.uint8, (4, 9))}
    got, want = op(feed), g.compile([j, r], fuse=False)(feed)
    for a_, b_ in zip(got, want, strict=True):
        assert_bits_equal(a_, b_)
    padded = reference.pad(feed["x"], [0, 1], [0, 2], "edge")
    assert_bits_equal(got[0], np.concatenate([padded[:, 8:], np.tile(padded[::-1, :3], [1, 2])], 1))
    only_b = g.compile([b])  # the node runs whole; the other outputs are intermediates
    assert_bits_equal(only_b(feed)[0], padded[:, 3:8])


# ------------------------------------------------------------------ command line
def test_cli_shader_split(capsys):
    from gpudml import cli

    assert cli.main(["shader", "split", "--shape", "1,1,6,2", "--axis", "2", "--sizes", "2,1,3", "--caps",
                     "vulkan-cpu"]) == 0
    out = capsys.readouterr().out
    assert "// Split at FL_6_4" in out and "// strategy stretches" in out and out.count("// dispatch ") == 3
