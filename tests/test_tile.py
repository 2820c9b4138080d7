"""Tile: the page's example, the page's support table, validation rules, feature levels, the
dtype x rank x layout sweep vs reference.py, every strategy, graphs (fused chains with the
other data-movement operators), the command line, and the fuzz strategies."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
from conftest import ALL_TYPES, assert_bits_equal, random_bits
from fuzzkit import (
    Case,
    OpFuzz,
    maybe_hostile,
    pick_axis,
    random_fill,
    replace_fields,
    support_row,
    tensor,
    type_of,
    with_entry,
)
from hypothesis import strategies as st
from movement_check import every_variant, padded_strides, run_and_check
from pagecheck import assert_examples_printed, assert_support_table

import gpudml as dml
from gpudml import compiler, reference
from gpudml.ops import tile
from gpudml.runtime.tensor import logical_from_raw

DT = dml.DataType
FL = dml.FeatureLevel
PAGE = "ns-directml-dml_tile_operator_desc.md"


def _desc(in_sizes=(1, 1, 2, 3), out_sizes=(1, 1, 6, 9), repeats=(1, 1, 3, 3), dtype=DT.FLOAT32, out_dtype=None,
          out_strides=None):
    return dml.TileOperatorDesc(dml.TensorDesc(dtype, in_sizes),
                                dml.TensorDesc(out_dtype or dtype, out_sizes, out_strides), repeats)


def _raises(device, desc, message: str):
    with pytest.raises(dml.InvalidArgumentError, match=re.escape(message)):
        device.create_operator(desc)


# ------------------------------------------------------------------ the page
def test_page_example(device):
    (example,) = tile.SPEC.examples
    assert_bits_equal(dml.tile(example.input, device=device, **example.args), example.expected)
    assert_bits_equal(reference.tile(example.input, **example.args), example.expected)


def test_page_example_through_desc_api(device):
    compiled = device.compile_operator(device.create_operator(_desc()))
    (out,) = compiled.execute([np.arange(1, 7, dtype=np.float32).reshape(1, 1, 2, 3)])
    np.testing.assert_array_equal(out[0, 0, 5], [4, 5, 6, 4, 5, 6, 4, 5, 6])


def test_examples_and_support_table_are_the_pages():
    assert_examples_printed(tile.SPEC)
    assert_support_table(tile.SUPPORT, PAGE, {"InputTensor": "input_tensor", "OutputTensor": "output_tensor"})


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


LEVEL_CASES = [
    # (level, rank, dtype, None if valid else the message's tail)
    (FL.FL_1_0, 4, DT.FLOAT16, None),
    (FL.FL_1_0, 4, DT.INT32, "input_tensor.data_type INT32 is not supported at FL_1_0 (supported: FLOAT32, FLOAT16); "
                             "it needs FL_2_1 or later"),
    (FL.FL_2_1, 4, DT.UINT8, None),
    (FL.FL_2_1, 5, DT.FLOAT32, "DimensionCount 5 is not supported at FL_2_1 (supported: 4); it needs FL_3_1 or later"),
    (FL.FL_3_0, 3, DT.INT8, "DimensionCount 3 is not supported at FL_3_0 (supported: 4); it needs FL_3_1 or later"),
    (FL.FL_3_1, 1, DT.INT16, None),
    (FL.FL_3_1, 8, DT.UINT32, None),
    (FL.FL_4_0, 2, DT.INT64, "input_tensor.data_type INT64 is not supported at FL_4_0 (supported: FLOAT32, FLOAT16, "
                             "UINT32, UINT16, UINT8, INT32, INT16, INT8); it needs FL_4_1 or later"),
    (FL.FL_4_1, 2, DT.UINT64, None),
    (FL.FL_6_4, 3, DT.FLOAT64, "input_tensor.data_type FLOAT64 is not supported at FL_6_4 (supported: FLOAT32, "
                               "FLOAT16, UINT32, UINT16, UINT8, INT32, INT16, INT8, UINT64, INT64)"),
]


@pytest.mark.parametrize("level, rank, dtype, error", LEVEL_CASES,
                         ids=[f"{c[0].name}-r{c[1]}-{c[2].name}" for c in LEVEL_CASES])
def test_feature_level_table(at_level, level, rank, dtype, error):
    device = at_level(level)
    desc = _desc([2] * rank, [4] * rank, [2] * rank, dtype=dtype)
    if error is not None:
        _raises(device, desc, f"Tile: {error}")
        return
    x = np.arange(2**rank).astype(dtype.numpy).reshape([2] * rank)
    (out,) = device.compile_operator(device.create_operator(desc)).execute([x])
    assert_bits_equal(out, np.tile(x, [2] * rank))


def test_tile_is_not_available_below_its_page(at_level):
    """Introduced at FL 1_0, the lowest level: every Device accepts the operator itself."""
    assert tile.SUPPORT.introduced == FL.FL_1_0
    at_level(FL.FL_1_0).create_operator(_desc())


# ------------------------------------------------------------------ sweep
LAYOUTS = ["packed", "strided_input", "broadcast_input", "strided_output"]
MAX_OUTPUT = 4000


def _case(rng, rank: int):
    in_sizes = [int(rng.integers(1, 4 if rank > 4 else 6)) for _ in range(rank)]
    repeats = [int(rng.integers(1, 4)) for _ in range(rank)]
    while math.prod(n * r for n, r in zip(in_sizes, repeats, strict=True)) > MAX_OUTPUT:
        axis = int(rng.integers(rank))
        repeats[axis] = max(1, repeats[axis] - 1)
        in_sizes[axis] = max(1, in_sizes[axis] - 1)
    return in_sizes, repeats


@pytest.mark.parametrize("rank", range(1, 9))
@pytest.mark.parametrize("data_type", ALL_TYPES, ids=lambda t: t.name)
def test_sweep_against_reference(device, data_type, rank):
    """Every type x rank 1-8 x layout (packed, padded rows, stride-0 broadcast inputs,
    outputs with gaps that must stay untouched), bit-exact; FLOAT64, which no level of the
    page lists, is rejected."""
    rng = np.random.default_rng([int(data_type), rank])
    for layout in LAYOUTS:
        in_sizes, repeats = _case(rng, rank)
        out_sizes = [n * r for n, r in zip(in_sizes, repeats, strict=True)]
        in_strides = padded_strides(in_sizes, rng, broadcast=layout == "broadcast_input") \
            if layout in ("strided_input", "broadcast_input") else None
        out_strides = padded_strides(out_sizes) if layout == "strided_output" else None
        in_desc = dml.TensorDesc(data_type, in_sizes, in_strides)
        out_desc = dml.TensorDesc(data_type, out_sizes, out_strides)
        desc = dml.TileOperatorDesc(in_desc, out_desc, repeats)
        if data_type == DT.FLOAT64:
            _raises(device, desc, "Tile: input_tensor.data_type FLOAT64 is not supported at FL_6_4")
            continue
        compiled = device.compile_operator(device.create_operator(desc))
        raw_in = random_bits(rng, data_type.numpy, [in_desc.required_elements])
        want = reference.tile(logical_from_raw(raw_in, in_desc), repeats)
        run_and_check(device, rng, compiled, [raw_in], [in_desc], out_desc, want)


@pytest.mark.parametrize("shape, repeats", [
    ((5, 7), [3, 2]), ((1, 9), [4, 1]), ((3, 1, 2), [1, 6, 5]), ((33,), [3]), ((2, 3, 4), [1, 1, 1]),
])
@pytest.mark.parametrize("dtype", [np.uint8, np.int16, np.float32, np.uint64])
def test_every_strategy(device, shape, repeats, dtype):
    """Each eligible strategy (CPU-class and GPU-class) forced, packed and strided outputs."""
    x = random_bits(np.random.default_rng(len(shape)), dtype, shape)
    want = np.tile(x, repeats)
    in_desc = dml.TensorDesc(dml.DataType.from_numpy(dtype), shape)
    for out_strides in (None, padded_strides(want.shape)):
        desc = dml.TileOperatorDesc(in_desc, dml.TensorDesc(in_desc.data_type, want.shape, out_strides), repeats)
        op = device.create_operator(desc)
        strategies = device.compile_operator(op).strategies
        assert "coalesced" in strategies and len(strategies) >= 2
        for compiled in every_variant(device, op):
            assert compiled.strategy in strategies
            run_and_check(device, np.random.default_rng(0), compiled, [x.reshape(-1)], [in_desc], desc.output_tensor,
                          want)


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
def test_tensor_in_tensor_out_and_odd_layouts(device):
    base = np.arange(60, dtype=np.int8).reshape(6, 10)
    view = base[::2, ::-3]
    assert_bits_equal(dml.tile(view, [2, 3], device=device), np.tile(view, [2, 3]))
    out = dml.tile(device.tensor(view), [1, 2])
    assert isinstance(out, dml.Tensor) and out.shape == (3, 8)
    assert_bits_equal(dml.tile(out, [2, 1]).numpy(), np.tile(view, [2, 2]))


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


@pytest.mark.parametrize("seed", range(6))
def test_random_chains_with_tile(device, seed):
    """Random chains of tiles, pads and slices over every layout of the input, fused and
    unfused, under each movement strategy of the fused kernel: bit-exact."""
    rng = np.random.default_rng(seed)
    data_type = [DT.UINT8, DT.FLOAT16, DT.INT32, DT.UINT64, DT.INT8, DT.FLOAT32][seed]
    rank = int(rng.integers(1, 5))
    sizes = [int(n) for n in rng.integers(1, 5, size=rank)]
    strides = padded_strides(sizes, rng, broadcast=seed % 2 == 1) if seed % 3 else None
    g = dml.Graph(device)
    x = g.input(sizes, dtype=data_type, name="x", strides=strides)
    y = x
    for k in range(int(rng.integers(2, 7))):
        shape = y.shape
        if k % 3 == 0:
            y = dml.tile(y, [int(rng.integers(1, 4)) for _ in shape])
        elif k % 3 == 1:
            y = dml.pad(y, list(rng.integers(0, 3, size=rank)), list(rng.integers(0, 3, size=rank)),
                        mode=str(rng.choice(["wrap", "edge", "constant"])), value=1.0)
        else:
            offsets = [int(rng.integers(0, n)) for n in shape]
            y = dml.slice(y, offsets, [n - o for n, o in zip(shape, offsets)], [int(rng.choice([1, -1, 2]))] * rank)
    feed = {"x": random_bits(rng, data_type.numpy, [x.desc.required_elements] if strides else sizes)}
    (want,) = g.compile([y], fuse=False)(feed)
    op = g.compile([y])
    assert op.dispatch_count == 1
    (got,) = op(feed)
    assert_bits_equal(got, want)


# ------------------------------------------------------------------ command line
def test_cli_shader_tile(capsys):
    from gpudml import cli

    assert cli.main(["shader", "tile", "--shape", "2,3", "--repeats", "3,2", "--caps", "gl-cpu"]) == 0
    out = capsys.readouterr().out
    assert "// Tile at FL_6_4" in out and "% uni.s0_tile_sizes" in out
    assert cli.main(["shader", "tile", "--shape", "2,3", "--strategy", "coalesced", "--caps", "gpu"]) == 0
    assert "// strategy coalesced" in capsys.readouterr().out


# ------------------------------------------------------------------ fuzz (run by tests/test_fuzz.py)
@st.composite
def valid_cases(draw) -> Case:
    level, row, rank = support_row(draw, tile.SUPPORT)
    data_type = type_of(draw, row, "input_tensor")
    top = {1: 40, 2: 9, 3: 5, 4: 4}.get(rank, 2)
    in_sizes = [draw(st.integers(1, top)) for _ in range(rank)]
    repeats = [draw(st.integers(1, 3 if rank > 3 else 5)) for _ in range(rank)]
    out_sizes = [n * r for n, r in zip(in_sizes, repeats, strict=True)]
    desc = dml.TileOperatorDesc(tensor(draw, data_type, in_sizes), tensor(draw, data_type, out_sizes, output=True),
                                repeats)
    return Case(level, desc, lambda xs: reference.tile(xs[0], repeats), [random_fill])


@st.composite
def broken_fields(draw, desc):
    """(builder, fragment, kind) with one of the operator's own fields broken."""
    rank, i, not_int = pick_axis(draw, desc)
    dt = desc.input_tensor.data_type
    choices = {
        "zero": ("repeats", with_entry(desc.repeats, i, 0)),
        "negative": ("repeats", with_entry(desc.repeats, i, -draw(st.integers(1, 2**40)))),
        "huge": ("repeats", with_entry(desc.repeats, i, 2**32)),
        "length": ("repeats", list(desc.repeats) + [1]),
        "not_int": ("repeats", with_entry(desc.repeats, i, not_int)),
        "not_a_list": ("repeats", draw(st.sampled_from([None, 3, "1,1"]))),
    }
    kind = draw(st.sampled_from(sorted(choices) + ["output_size"]))
    if kind == "output_size":
        out = with_entry(desc.output_tensor.sizes, i, desc.output_tensor.sizes[i] + 1)
        return replace_fields(desc, output_tensor=dml.TensorDesc(dt, out)), "output_tensor.sizes", kind
    name, value = choices[kind]
    return replace_fields(desc, **{name: value}), name, kind


@st.composite
def functional_calls(draw, x, shape):
    """(keyword arguments, expected(x)) for one functional call, some arguments hostile."""
    repeats = [draw(st.integers(1, 3)) for _ in shape]
    args = {"repeats": maybe_hostile(draw, repeats)}
    return args, lambda a: reference.tile(a, args["repeats"])


FUZZ = OpFuzz(valid_cases(), broken_fields, functional_calls,
              fields=("x", "input_tensor", "repeats", "output_tensor", "device"))
