"""Slice (DML_SLICE, the first version): what the conformance kit (tests/test_conformance.py)
does not cover: the Examples' arguments on the page, the reference as Slice1's window, each
validation rule's message, any stride on a size-1 axis (alone and fused), axis merging,
every strategy on block boundaries, a named fused chain, the command line."""

from __future__ import annotations

import re

import numpy as np
import pytest
from conformance import HIGHEST, Case, RandomDraw, laid_out, page_arrays, page_text, run_every_variant
from conftest import assert_bits_equal, random_bits

import gpudml as dml
from gpudml import compiler, examples, reference
from gpudml.ops import slice0

DT = dml.DataType
FL = dml.FeatureLevel
PAGE = "ns-directml-dml_slice_operator_desc.md"
EXAMPLES = [e for e in examples.EXAMPLES if e.operator == "slice0"]


def _desc(in_sizes=(1, 1, 4, 4), out_sizes=(1, 1, 2, 2), offsets=(0, 0, 1, 0), sizes=(1, 1, 2, 2),
          strides=(1, 1, 2, 3), dtype=DT.FLOAT32, out_dtype=None, out_strides=None):
    return dml.SliceOperatorDesc(dml.TensorDesc(dtype, in_sizes), dml.TensorDesc(out_dtype or dtype, out_sizes,
                                                                                 out_strides),
                                 offsets, sizes, strides)


def _raises(device, desc, message: str):
    with pytest.raises(dml.InvalidArgumentError) as err:
        device.create_operator(desc)
    assert str(err.value) == message


# ------------------------------------------------------------------ the page
def test_examples_arguments_are_the_stored_page():
    """Offsets, sizes and strides of the Examples are the stored page's, and they share its
    one input (their tensors and the tables: the conformance kit)."""
    text = page_text(PAGE)
    assert all(e.input is EXAMPLES[0].input for e in EXAMPLES)
    for field in ("offsets", "sizes", "strides"):
        assert page_arrays(text, field.capitalize()) == [list(e.args[field]) for e in EXAMPLES]


def test_reference_is_slice1_with_its_window():
    """DML_SLICE's (offsets, sizes, strides) is DML_SLICE1's window [offset, offset +
    stride * (size - 1)] read with the same strides: two formulations, one result."""
    rng = np.random.default_rng(0)
    x = random_bits(rng, np.float16, (5, 7, 9))
    for offsets, sizes, strides in (([0, 0, 0], [5, 7, 9], [1, 1, 1]), ([1, 2, 3], [2, 3, 2], [3, 2, 5]),
                                    ([4, 6, 8], [1, 1, 1], [7, 9, 2**32 - 1])):
        window = [s * (n - 1) + 1 for n, s in zip(sizes, strides, strict=True)]
        steps = [s if n > 1 else 1 for n, s in zip(sizes, strides, strict=True)]
        assert_bits_equal(reference.slice0(x, offsets, sizes, strides),
                          reference.slice(x, offsets, window, steps, sizes))
    with pytest.raises(ValueError):
        reference.slice0(x, [0, 0, 0], [3, 1, 1], [3, 1, 1])  # x[0], x[3], then x[6]: outside


# ------------------------------------------------------------------ validation: one test per rule
@pytest.mark.parametrize("kwargs, level, message", [
    (dict(out_dtype=DT.INT32), None, "Slice: output_tensor.data_type INT32 must equal input_tensor.data_type FLOAT32"),
    (dict(out_sizes=(1, 2, 2)), None,
     "Slice: all tensors must have the same DimensionCount (got input_tensor 4, output_tensor 3)"),
    (dict(offsets=(0, 0, 1)), None, "Slice: offsets has 3 entries [0, 0, 1]; DimensionCount is 4"),
    (dict(sizes=(1, 1, 2, 2, 1)), None, "Slice: sizes has 5 entries [1, 1, 2, 2, 1]; DimensionCount is 4"),
    (dict(strides=(1, 2, 3)), None, "Slice: strides has 3 entries [1, 2, 3]; DimensionCount is 4"),
    (dict(offsets=(0, 0, -1, 0)), None, "Slice: offsets[2] = -1 must be in 0..4294967295 (UINT)"),
    (dict(sizes=(1, 1, 2, 2**32)), None, "Slice: sizes[3] = 4294967296 must be in 0..4294967295 (UINT)"),
    (dict(strides=(1, 1, -2, 3)), None, "Slice: strides[2] = -2 must be in 0..4294967295 (UINT)"),
    (dict(strides=(1, 1, 2, 0)), None,
     "Slice: strides[3] = 0 must be >= 1 (DML_SLICE steps forwards; DML_SLICE1 takes negative strides)"),
    (dict(sizes=(1, 1, 2, 1)), None, "Slice: sizes[3] = 1 must equal output_tensor.sizes[3] = 2"),
    (dict(sizes=(1, 1, 0, 2)), None, "Slice: sizes[2] = 0 must equal output_tensor.sizes[2] = 2"),
    (dict(offsets=(0, 0, 2, 0)), None,
     "Slice: offsets[2] + strides[2] * (sizes[2] - 1) = 2 + 2 * (2 - 1) = 4 is outside input_tensor.sizes[2] = 4 "
     "(out-of-bounds reads are not permitted)"),
    (dict(strides=(1, 1, 2, 4)), None,
     "Slice: offsets[3] + strides[3] * (sizes[3] - 1) = 0 + 4 * (2 - 1) = 4 is outside input_tensor.sizes[3] = 4 "
     "(out-of-bounds reads are not permitted)"),
    (dict(offsets=(1, 0, 1, 0)), None,
     "Slice: offsets[0] + strides[0] * (sizes[0] - 1) = 1 + 1 * (1 - 1) = 1 is outside input_tensor.sizes[0] = 1 "
     "(out-of-bounds reads are not permitted)"),
    (dict(out_strides=(4, 4, 0, 1)), None,
     "Slice: output_tensor.strides: [4, 4, 0, 1] with sizes [1, 1, 2, 2] make two output elements share one address "
     "(axis 2 stride 0); an output must not alias itself"),
    (dict(in_sizes=(4, 4), out_sizes=(2, 2), offsets=(1, 0), sizes=(2, 2), strides=(2, 3)), FL.FL_2_1,
     "Slice: DimensionCount 2 is not supported at FL_2_1 (supported: 4, 5); it needs FL_3_0 or later"),
    (dict(dtype=DT.INT8), FL.FL_1_0,
     "Slice: input_tensor.data_type INT8 is not supported at FL_1_0 (supported: FLOAT32, FLOAT16, UINT32, UINT16, "
     "INT32, INT16); it needs FL_2_1 or later"),
    (dict(dtype=DT.INT64), FL.FL_3_0,
     "Slice: input_tensor.data_type INT64 is not supported at FL_3_0 (supported: FLOAT32, FLOAT16, UINT32, UINT16, "
     "UINT8, INT32, INT16, INT8); it needs FL_4_1 or later"),
])
def test_validation_rule(at_level, kwargs, level, message):
    _raises(at_level(level), _desc(**kwargs), message)


def test_fields_are_integers():
    with pytest.raises(dml.InvalidArgumentError, match=re.escape("Slice: strides[1]: expected an integer, got 1.5")):
        _desc(strides=(1, 1.5, 2, 3))
    with pytest.raises(dml.InvalidArgumentError, match=re.escape("Slice: offsets: expected a sequence of integers")):
        _desc(offsets=None)


# ------------------------------------------------------------------ functional API
def test_functional_defaults_and_errors(device):
    x = np.arange(60, dtype=np.int16).reshape(3, 4, 5)
    assert_bits_equal(dml.slice0(x, [1, 0, 2], [2, 4, 3], device=device), x[1:3, :, 2:5])
    assert_bits_equal(dml.slice0(x, [0, 1, 0], [2, 2, 3], [2, 2, 2], device=device), x[::2, 1::2, ::2])
    with pytest.raises(dml.InvalidArgumentError, match=re.escape("Slice: strides[0] = 0 must be >= 1")):
        dml.slice0(x, [0, 0, 0], [1, 1, 1], [0, 1, 1], device=device)
    with pytest.raises(dml.InvalidArgumentError, match=re.escape("slice0: sizes[1]: expected an integer")):
        dml.slice0(x, [0, 0, 0], [1, None, 1], device=device)
    with pytest.raises(dml.InvalidArgumentError, match=re.escape("slice0: sizes[2] = 0 must be >= 1")):
        dml.slice0(x, [0, 0, 0], [1, 1, 0], device=device)


def test_any_stride_on_a_size_one_axis(device):
    """An output axis of size 1 reads coordinate `offset` only, whatever its stride (UINT, up
    to 2^32 - 1), alone and inside fused chains (where Slice1's largest strides, through the
    same movement.affine_stage, once overflowed the kernel's 32-bit source strides)."""
    x = np.arange(3 * 4 * 5, dtype=np.float32).reshape(3, 4, 5)
    want = x[2:3, 1:4:2, 4:5]
    assert_bits_equal(dml.slice0(x, [2, 1, 4], [1, 2, 1], [2**32 - 1, 2, 2**31], device=device), want)
    g = dml.Graph(device)
    y = g.input([3, 4, 5], dtype=np.float32, name="y")
    inner = dml.slice0(dml.pad(y, [0, 0, 1], [0, 0, 0]), [2, 1, 5], [1, 2, 1], [2**32 - 1, 2, 2**31])
    outer = dml.slice(y, [2, 1, 4], [1, 3, 1], [2**31 - 1, 2, -(2**31)])
    op = g.compile([dml.pad(inner, [1, 0, 0], [0, 0, 0], mode="edge"), dml.pad(outer, [1, 0, 0], [0, 0, 0])])
    assert op.dispatch_count == 2
    got_inner, got_outer = op({"y": x})
    assert_bits_equal(got_inner, np.concatenate([want, want]))
    assert_bits_equal(got_outer, np.concatenate([np.zeros_like(want), want]))


def test_axes_merge(vulkan_device):
    """Like Slice1, the folded map merges contiguous output axes and drops size-1 ones."""
    def kernel_rank(in_sizes, offsets, sizes, strides):
        desc = _desc(in_sizes, sizes, offsets, sizes, strides)
        return compiler.compile(desc, vulkan_device.caps).kernels[0].params["rank"]

    assert kernel_rank([64, 64, 7, 7], [0] * 4, [32, 64, 7, 7], [2, 1, 1, 1]) == 2
    assert kernel_rank([1, 5, 1, 6], [0, 1, 0, 0], [1, 4, 1, 6], [1, 1, 1, 1]) == 1
    assert kernel_rank([4, 6, 8], [0, 0, 0], [4, 6, 4], [1, 1, 2]) == 1  # steps 48, 8, 2: one row
    assert kernel_rank([4, 6, 8], [0, 0, 0], [4, 3, 8], [1, 2, 1]) == 2


# ------------------------------------------------------------------ every strategy
STRATEGY_CASES = [
    # (input sizes, offsets, sizes, strides): rows shorter and longer than a block, misaligned
    ([11], [0], [11], [1]),
    ([11], [1], [10], [1]),
    ([19], [3], [6], [3]),
    ([5, 7], [1, 1], [3, 3], [1, 2]),
    ([3, 3], [0, 0], [2, 3], [2, 1]),
    ([2, 3, 9], [0, 0, 0], [2, 3, 9], [1, 1, 1]),  # the whole input: one row
    ([6, 3, 7], [1, 0, 0], [3, 3, 7], [2, 1, 1]),
    ([1, 5, 1, 6], [0, 1, 0, 0], [1, 4, 1, 6], [1, 1, 1, 1]),
]


@pytest.mark.parametrize("data_type", [DT.UINT8, DT.FLOAT16, DT.INT32, DT.FLOAT64], ids=lambda t: t.name)
def test_every_strategy(device, data_type):
    """Each case under every eligible strategy (coalesced, the GPU-class one, included), from
    packed, broadcast and padded-row inputs into packed and strided outputs."""
    rng = np.random.default_rng(int(data_type))
    for in_sizes, offsets, sizes, strides in STRATEGY_CASES:
        for layout in ("packed", "broadcast_input", "strided_output"):
            desc = slice0.infer_output(dml.TensorDesc(data_type, in_sizes), offsets, sizes, strides)
            desc = laid_out(desc, RandomDraw(rng), layout)
            assert "coalesced" in run_every_variant(device, Case(slice0.SPEC, HIGHEST, desc), len(in_sizes))


# ------------------------------------------------------------------ graphs
def test_graph_chain_fuses(device):
    """pad > slice0 > reverse_subsequences > slice0 > reduce: the movement nodes are one
    kernel and the reduce reads through it; fused and node by node give the same bits."""
    g = dml.Graph(device)
    x = g.input([4, 6, 5], dtype=np.float16, name="x")
    lengths = np.array([[[2], [0], [5], [1], [3]]], np.uint32).repeat(2, axis=0)
    a = dml.pad(x, [0, 1, 2], [1, 0, 1], mode="symmetric")
    b = dml.slice0(a, [1, 0, 1], [2, 5, 3], [2, 1, 2])
    c = dml.reverse_subsequences(b, lengths, axis=2)
    d = dml.slice0(c, [0, 1, 0], [2, 2, 3], [1, 3, 1])
    r = dml.reduce(d, "max", axes=[0, 2])
    fused, unfused = g.compile([r, d]), g.compile([r, d], fuse=False)
    assert [s.compiled.name for s in fused.steps] == ["Fused(Padding>Slice>ReverseSubsequences>Slice)", "Reduce"]
    assert fused.dispatch_count == 2 and unfused.dispatch_count == 5
    assert [s.compiled.name for s in g.compile([r]).steps] == ["Fused(Padding>Slice>ReverseSubsequences>Slice>Reduce)"]
    array = random_bits(np.random.default_rng(4), np.float16, (4, 6, 5))
    for got, want in zip(fused({"x": array}), unfused({"x": array}), strict=True):
        assert_bits_equal(got, want)
    want_b = reference.slice0(reference.pad(array, [0, 1, 2], [1, 0, 1], "symmetric"), [1, 0, 1], [2, 5, 3],
                                [2, 1, 2])
    want_d = reference.slice0(reference.reverse_subsequences(want_b, lengths, 2), [0, 1, 0], [2, 2, 3], [1, 3, 1])
    assert_bits_equal(fused({"x": array})[1], want_d)


# ------------------------------------------------------------------ command line
def test_cli_shader_slice_v1(capsys):
    from gpudml import cli

    assert cli.main(["shader", "slice0", "--shape", "6,9", "--offsets", "1,2", "--strides", "2,3",
                     "--caps", "vulkan-cpu"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("// Slice at FL_6_4 for profile vulkan-cpu") and "fn main" in out
    assert cli.main(["shader", "slice0", "--shape", "6,9", "--sizes", "6,9", "--offsets", "1,0", "--caps",
                     "gpu"]) == 2
    assert "is outside input_tensor.sizes[0] = 6" in capsys.readouterr().err
