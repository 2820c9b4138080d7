"""Tile: what the conformance kit (tests/test_conformance.py) does not cover: the reference
against numpy's tile, each validation rule's message, every strategy on chosen shapes, the
plan's broadcasts and merges, the functional form's errors, a named fused chain, the
command line."""

from __future__ import annotations

import re

import numpy as np
import pytest
from conformance import HIGHEST, Case, RandomDraw, laid_out, run_every_variant
from conftest import assert_bits_equal, random_bits

import gpudml as dml
from gpudml import compiler, reference
from gpudml.ops import tile

DT = dml.DataType


def _desc(in_sizes=(1, 1, 2, 3), out_sizes=(1, 1, 6, 9), repeats=(1, 1, 3, 3), dtype=DT.FLOAT32, out_dtype=None,
          out_strides=None):
    return dml.TileOperatorDesc(dml.TensorDesc(dtype, in_sizes),
                                dml.TensorDesc(out_dtype or dtype, out_sizes, out_strides), repeats)


def _raises(device, desc, message: str):
    with pytest.raises(dml.InvalidArgumentError, match=re.escape(message)):
        device.create_operator(desc)


def test_reference_is_numpys_tile():
    """An independent formulation: numpy's tile with one repeat per axis."""
    rng = np.random.default_rng(1)
    for shape, repeats in (((3,), [4]), ((2, 1, 3), [1, 5, 2]), ((1, 2, 1, 2, 1), [2, 1, 3, 1, 2])):
        x = random_bits(rng, np.float16, shape)
        assert_bits_equal(reference.tile(x, repeats), np.tile(x, repeats))
    with pytest.raises(ValueError, match="each must be at least 1"):
        reference.tile(x, [1, 0, 1, 1, 1])


# ------------------------------------------------------------------ validation: one rule each
@pytest.mark.parametrize("kwargs, message", [
    (dict(repeats=(1, 3, 3)), "Tile: repeats has 3 entries [1, 3, 3]; DimensionCount is 4"),
    (dict(repeats=(1, 1, 0, 3)), "Tile: repeats[2] = 0 must be in 1..4294967295 (a UINT larger than 0)"),
    (dict(repeats=(1, -2, 3, 3)), "Tile: repeats[1] = -2 must be in 1..4294967295 (a UINT larger than 0)"),
    (dict(repeats=(1, 1, 3, 2**32)), "Tile: repeats[3] = 4294967296 must be in 1..4294967295"),
    (dict(out_sizes=(1, 1, 6, 8)),
     "Tile: output_tensor.sizes[3] = 8 must equal input_tensor.sizes[3] * repeats[3] = 3 * 3 = 9"),
    (dict(out_dtype=DT.FLOAT16), "Tile: output_tensor.data_type FLOAT16 must equal input_tensor.data_type FLOAT32"),
    (dict(out_sizes=(1, 6, 9)), "Tile: all tensors must have the same DimensionCount (got input_tensor 4, "
                                "output_tensor 3)"),
    (dict(out_strides=(54, 54, 9, 0)), "Tile: output_tensor.strides: [54, 54, 9, 0] with sizes [1, 1, 6, 9] make "
                                       "two output elements share one address"),
])
def test_validation_rule(vulkan_device, kwargs, message):
    _raises(vulkan_device, _desc(**kwargs), message)


def test_repeats_are_integers():
    with pytest.raises(dml.InvalidArgumentError, match=re.escape("Tile: repeats[1]: expected an integer, got 1.5")):
        _desc(repeats=(1, 1.5, 3, 3))
    with pytest.raises(dml.InvalidArgumentError, match=re.escape("tile: repeats: expected a sequence of integers")):
        dml.tile(np.zeros(3, np.float32), 3)


@pytest.mark.parametrize("shape, repeats", [
    ((5, 7), [3, 2]), ((1, 9), [4, 1]), ((3, 1, 2), [1, 6, 5]), ((33,), [3]), ((2, 3, 4), [1, 1, 1]),
])
@pytest.mark.parametrize("data_type", [DT.UINT8, DT.INT16, DT.FLOAT32, DT.UINT64], ids=lambda t: t.name)
def test_every_strategy(device, shape, repeats, data_type):
    """Each eligible strategy (CPU-class and GPU-class) forced, packed and strided outputs."""
    for layout in ("packed", "strided_output"):
        desc = tile.infer_output(dml.TensorDesc(data_type, shape), repeats)
        desc = laid_out(desc, RandomDraw(np.random.default_rng(len(shape))), layout)
        ran = run_every_variant(device, Case(tile.SPEC, HIGHEST, desc), len(shape))
        assert "coalesced" in ran and len(ran) >= 2


def test_plan_divides_only_where_an_axis_of_several_elements_repeats():
    """Repeating an axis of one element is a broadcast (source stride 0); unrepeated
    contiguous axes merge."""
    profile = dml.caps.profile("vulkan-cpu")
    broadcast = tile.infer_output(dml.TensorDesc(DT.FLOAT32, [1, 4, 1]), [5, 1, 3])
    (kernel,) = compiler.compile(broadcast, profile).kernels
    assert "tile_sizes" not in kernel.source and kernel.params["stages"] == ()
    folded = tile.infer_output(dml.TensorDesc(DT.FLOAT32, [2, 3, 4, 5]), [1, 1, 2, 1])
    (kernel,) = compiler.compile(folded, profile).kernels
    assert kernel.params["rank"] == 3 and "% uni.s0_tile_sizes" in kernel.source  # [6, 8, 5]


# ------------------------------------------------------------------ functional API
def test_functional_errors(vulkan_device):
    x = np.zeros((2, 3), np.float32)
    with pytest.raises(dml.InvalidArgumentError, match=re.escape("Tile: repeats has 1 entries [2]")):
        dml.tile(x, [2], device=vulkan_device)
    with pytest.raises(dml.InvalidArgumentError, match=re.escape("Tile: repeats[0] = 0 must be in")):
        dml.tile(x, [0, 1], device=vulkan_device)
    with pytest.raises(dml.InvalidArgumentError, match=re.escape("tile: x: expected a numpy array")):
        dml.tile([[1.0]], [1, 1], device=vulkan_device)


# ------------------------------------------------------------------ graphs
def test_tile_fuses_into_chains(device):
    """Tile between paddings, slices and reversals is one kernel; a Reduce reads through it;
    fused and unfused are bit-exact (integers, so the Reduce is exact too)."""
    g = dml.Graph(device)
    x = g.input([3, 5], dtype=np.int32, name="x")
    a = dml.pad(x, [1, 0], [0, 2], mode="reflection")
    b = dml.tile(a, [2, 3])
    c = dml.slice(b, [1, 2], [7, 18], [2, -1])
    d = dml.tile(dml.reverse_subsequences(c, np.array([[3], [1], [4], [7]], np.uint32), 1), [1, 2])
    r = dml.reduce(d, "sum", [1])
    assert [s.compiled.name for s in g.compile([r]).steps] == [
        "Fused(Padding>Tile>Slice1>ReverseSubsequences>Tile>Reduce)"]
    op = g.compile([d, r])  # d is written: the Reduce reads it
    assert [s.compiled.name for s in op.steps] == ["Fused(Padding>Tile>Slice1>ReverseSubsequences>Tile)", "Reduce"]
    array = random_bits(np.random.default_rng(2), np.int32, (3, 5))
    got, want = op({"x": array}), g.compile([d, r], fuse=False)({"x": array})
    for a_, b_ in zip(got, want, strict=True):
        assert_bits_equal(a_, b_)
    assert_bits_equal(g.compile([r])({"x": array})[0], want[1])
    assert_bits_equal(got[0], np.tile(reference.reverse_subsequences(
        np.tile(reference.pad(array, [1, 0], [0, 2], "reflection"), [2, 3])[1:8:2, 19:1:-1],
        np.array([[3], [1], [4], [7]], np.uint32), 1), [1, 2]))


# ------------------------------------------------------------------ command line
def test_cli_shader_tile(capsys):
    from gpudml import cli

    assert cli.main(["shader", "tile", "--shape", "2,3", "--repeats", "3,2", "--caps", "gl-cpu"]) == 0
    out = capsys.readouterr().out
    assert "// Tile at FL_6_4" in out and "% uni.s0_tile_sizes" in out
    assert cli.main(["shader", "tile", "--shape", "2,3", "--strategy", "coalesced", "--caps", "gpu"]) == 0
    assert "// strategy coalesced" in capsys.readouterr().out
