"""ReverseSubsequences: seed examples, validation rules, feature levels, length types and
clamping, and the dtype x rank x axis x layout sweep vs reference.py."""

from __future__ import annotations

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
    sizes_of,
    support_row,
    tensor,
    type_of,
)
from hypothesis import strategies as st
from movement_check import padded_strides, run_and_check, sequence_lengths

import gpudml as dml
from gpudml import examples, reference
from gpudml.ops import reverse_subsequences
from gpudml.runtime.tensor import logical_from_raw

DT = dml.DataType
FL = dml.FeatureLevel
SEED_INPUT = np.arange(1, 13, dtype=np.float32).reshape(1, 1, 3, 4)


def _desc(in_sizes=(1, 1, 3, 4), lengths_sizes=(1, 1, 3, 1), out_sizes=None, axis=3, dtype=DT.FLOAT32,
          lengths_dtype=DT.UINT32, out_dtype=None, out_strides=None):
    return dml.ReverseSubsequencesOperatorDesc(
        dml.TensorDesc(dtype, in_sizes), dml.TensorDesc(lengths_dtype, lengths_sizes),
        dml.TensorDesc(out_dtype or dtype, out_sizes or in_sizes, out_strides), axis)


def _raises(device, desc, message: str):
    with pytest.raises(dml.InvalidArgumentError, match=re.escape(message)):
        device.create_operator(desc)


# ------------------------------------------------------------------ seed examples
REVERSE_SEEDS = [e for e in examples.EXAMPLES if e.operator == "reverse_subsequences"]


@pytest.mark.parametrize("example", REVERSE_SEEDS, ids=lambda e: e.name)
def test_seed_examples(device, example):
    got = dml.reverse_subsequences(example.input, device=device, **example.args)
    np.testing.assert_array_equal(got, example.expected)
    np.testing.assert_array_equal(examples.run_reference(example), example.expected)


def test_seed_example_through_desc_api(device):
    desc = _desc(lengths_sizes=(1, 1, 1, 4), axis=2)
    compiled = device.compile_operator(device.create_operator(desc))
    assert len(compiled.wgsl) == 1 and "fn value_at" in compiled.wgsl[0]
    lengths = np.array([2, 3, 1, 0], np.uint32).reshape(1, 1, 1, 4)
    (out,) = compiled.execute([SEED_INPUT, lengths])
    np.testing.assert_array_equal(out.reshape(3, 4), [[5, 10, 3, 4], [1, 6, 7, 8], [9, 2, 11, 12]])


# ------------------------------------------------------------------ validation: one rule each
@pytest.mark.parametrize("axis", [4, -1])
def test_rule_axis_less_than_dimension_count(vulkan_device, axis):
    _raises(vulkan_device, _desc(axis=axis),
            f"ReverseSubsequences: axis = {axis} must be less than DimensionCount 4 (and >= 0)")


def test_rule_axis_is_an_integer():
    with pytest.raises(dml.InvalidArgumentError, match=re.escape("ReverseSubsequences: axis: expected an integer")):
        _desc(axis=1.5)


def test_rule_same_rank(vulkan_device):
    _raises(vulkan_device, _desc(lengths_sizes=(1, 3, 1)),
            "ReverseSubsequences: all tensors must have the same DimensionCount "
            "(got input_tensor 4, sequence_lengths_tensor 3, output_tensor 4)")


def test_rule_lengths_size_one_on_axis(vulkan_device):
    _raises(vulkan_device, _desc(lengths_sizes=(1, 1, 3, 4)),
            "ReverseSubsequences: sequence_lengths_tensor.sizes[3] = 4 must be 1 on axis 3 "
            "(input sizes [1, 1, 3, 4], axis 3: lengths sizes [1, 1, 3, 1])")


def test_rule_lengths_sizes_match_input_elsewhere(vulkan_device):
    _raises(vulkan_device, _desc(lengths_sizes=(1, 1, 1, 1)),
            "ReverseSubsequences: sequence_lengths_tensor.sizes[2] = 1 must be input_tensor.sizes[2] = 3")


def test_rule_output_sizes(vulkan_device):
    _raises(vulkan_device, _desc(out_sizes=(1, 1, 4, 3)),
            "ReverseSubsequences: output_tensor.sizes [1, 1, 4, 3] must equal input_tensor.sizes [1, 1, 3, 4]")


def test_rule_output_data_type(vulkan_device):
    _raises(vulkan_device, _desc(out_dtype=DT.INT32),
            "ReverseSubsequences: output_tensor.data_type INT32 must equal input_tensor.data_type FLOAT32")


def test_rule_lengths_data_type(vulkan_device):
    _raises(vulkan_device, _desc(lengths_dtype=DT.INT32),
            "ReverseSubsequences: sequence_lengths_tensor.data_type INT32 is not supported at FL_6_4 "
            "(supported: UINT32, UINT64)")


def test_rule_output_must_not_alias(vulkan_device):
    _raises(vulkan_device, _desc(out_strides=(0, 0, 0, 1)),
            "ReverseSubsequences: output_tensor.strides: [0, 0, 0, 1] with sizes [1, 1, 3, 4] make two output "
            "elements share one address")


def test_rule_lengths_tensor_desc_checked(vulkan_device):
    desc = dml.ReverseSubsequencesOperatorDesc(
        dml.TensorDesc(DT.FLOAT32, [1, 1, 3, 4]), dml.TensorDesc(DT.UINT32, [1, 1, 3, 1], [0, 0, -1, 0]),
        dml.TensorDesc(DT.FLOAT32, [1, 1, 3, 4]), 3)
    _raises(vulkan_device, desc, "ReverseSubsequences: sequence_lengths_tensor.strides[2] = -1 must be >= 0")


# ------------------------------------------------------------------ feature levels
LEVEL_CASES = [
    # (level, rank, dtype, lengths dtype, None if valid else the message's tail)
    (FL.FL_2_0, 4, DT.FLOAT32, DT.UINT32, "not available at feature level FL_2_0 (introduced at FL_2_1)"),
    (FL.FL_2_1, 4, DT.INT8, DT.UINT32, None),
    (FL.FL_2_1, 5, DT.FLOAT32, DT.UINT32, "DimensionCount 5 is not supported at FL_2_1 (supported: 4); "
                                          "it needs FL_3_0 or later"),
    (FL.FL_3_0, 5, DT.UINT16, DT.UINT32, None),
    (FL.FL_3_1, 3, DT.FLOAT32, DT.UINT32, "DimensionCount 3 is not supported at FL_3_1 (supported: 4, 5); "
                                          "it needs FL_4_0 or later"),
    (FL.FL_4_0, 1, DT.FLOAT16, DT.UINT32, None),
    (FL.FL_4_0, 8, DT.INT32, DT.UINT32, None),
    (FL.FL_4_1, 4, DT.FLOAT32, DT.UINT64, "sequence_lengths_tensor.data_type UINT64 is not supported at FL_4_1 "
                                          "(supported: UINT32); it needs FL_5_0 or later"),
    (FL.FL_4_1, 4, DT.INT64, DT.UINT32, "input_tensor.data_type INT64 is not supported at FL_4_1"),
    (FL.FL_5_0, 2, DT.FLOAT64, DT.UINT64, None),
    (FL.FL_5_0, 8, DT.UINT64, DT.UINT32, None),
]


@pytest.mark.parametrize("level, rank, dtype, lengths_dtype, error", LEVEL_CASES,
                         ids=[f"{c[0].name}-r{c[1]}-{c[2].name}-{c[3].name}" for c in LEVEL_CASES])
def test_feature_level_table(at_level, level, rank, dtype, lengths_dtype, error):
    device = at_level(level)
    sizes = [2] * rank
    axis = rank - 1
    lengths_sizes = [1 if i == axis else 2 for i in range(rank)]
    desc = _desc(sizes, lengths_sizes, axis=axis, dtype=dtype, lengths_dtype=lengths_dtype)
    if error is not None:
        _raises(device, desc, f"ReverseSubsequences: {error}")
        return
    x = np.arange(2**rank).astype(dtype.numpy).reshape(sizes)
    lengths = np.full(lengths_sizes, 2, lengths_dtype.numpy)
    (out,) = device.compile_operator(device.create_operator(desc)).execute([x, lengths])
    assert_bits_equal(out, reference.reverse_subsequences(x, lengths, axis))


# ------------------------------------------------------------------ lengths
def test_lengths_zero_one_and_beyond_the_axis(device):
    x = np.arange(20, dtype=np.int32).reshape(4, 5)
    lengths = np.array([0, 1, 5, 99], np.uint32).reshape(4, 1)
    got = dml.reverse_subsequences(x, lengths, 1, device=device)
    np.testing.assert_array_equal(got, [[0, 1, 2, 3, 4], [5, 6, 7, 8, 9], [14, 13, 12, 11, 10],
                                        [19, 18, 17, 16, 15]])


def test_uint64_lengths_high_word_clamps(device):
    x = np.arange(12, dtype=np.uint8).reshape(3, 4)
    lengths = np.array([[2**32 + 1, 2**63, 2, 2**64 - 1]], np.uint64)
    desc = _desc((3, 4), (1, 4), axis=0, dtype=DT.UINT8, lengths_dtype=DT.UINT64)
    (got,) = device.compile_operator(device.create_operator(desc)).execute([x, lengths])
    np.testing.assert_array_equal(got, [[8, 9, 6, 11], [4, 5, 2, 7], [0, 1, 10, 3]])


@pytest.mark.parametrize("lengths, data_type", [
    (np.array([[1], [2]], np.int64), DT.UINT32),
    (np.array([[1], [2]], np.uint8), DT.UINT32),
    (np.array([[1], [2**32 - 1]], np.uint64), DT.UINT32),
    (np.array([[1], [2**32]], np.int64), DT.UINT64),
    ([[3], [2]], DT.UINT32),
])
def test_functional_lengths_conversion(device, lengths, data_type):
    from gpudml.ops.reverse_subsequences import sequence_lengths_array

    x = np.arange(6, dtype=np.float16).reshape(2, 3)
    assert DT.from_numpy(sequence_lengths_array(lengths).dtype) == data_type
    got = dml.reverse_subsequences(x, lengths, 1, device=device)
    assert_bits_equal(got, reference.reverse_subsequences(x, np.asarray(lengths).astype(np.uint64), 1))


@pytest.mark.parametrize("lengths, message", [
    (np.array([[1], [-2]], np.int32), "reverse_subsequences: sequence_lengths: lengths must be non-negative, got -2"),
    (np.array([[1.0], [2.0]]), "reverse_subsequences: sequence_lengths: lengths must be non-negative integers, "
                               "got dtype float64"),
    (np.array([[True], [False]]), "lengths must be non-negative integers, got dtype bool"),
    (np.array([1, 2], np.uint32), "ReverseSubsequences: all tensors must have the same DimensionCount"),
    (np.array([[1, 2]], np.uint32), "ReverseSubsequences: sequence_lengths_tensor.sizes[0] = 1 must be "
                                    "input_tensor.sizes[0] = 2"),
])
def test_functional_lengths_errors(device, lengths, message):
    x = np.zeros((2, 3), np.float32)
    with pytest.raises(dml.InvalidArgumentError, match=re.escape(message)):
        dml.reverse_subsequences(x, lengths, 1, device=device)


def test_functional_negative_axis(vulkan_device):
    """A negative axis counts from the end in the functional API (the desc API stays DirectML's)."""
    x = np.arange(24, dtype=np.int16).reshape(2, 3, 4)
    lengths = np.array([[[2], [3], [0]], [[4], [1], [9]]], np.uint32)
    want = reference.reverse_subsequences(x, lengths, 2)
    assert_bits_equal(dml.reverse_subsequences(x, lengths, -1, device=vulkan_device), want)
    assert_bits_equal(reference.reverse_subsequences(x, lengths, -1), want)
    with pytest.raises(dml.InvalidArgumentError,
                       match=re.escape("reverse_subsequences: axis = -4 is outside [-3, 2] (x has 3 dimensions)")):
        dml.reverse_subsequences(x, lengths, -4, device=vulkan_device)


def test_tensor_in_tensor_out(device):
    x = np.arange(24, dtype=np.int64).reshape(2, 3, 4)
    lengths = np.array([[[3, 2, 1, 0]], [[9, 3, 2, 2]]], np.uint32)
    out = dml.reverse_subsequences(device.tensor(x), lengths, 1)
    assert isinstance(out, dml.Tensor) and out.shape == (2, 3, 4)
    want = reference.reverse_subsequences(x, lengths, 1)
    np.testing.assert_array_equal(out.numpy(), want)
    again = dml.reverse_subsequences(out, device.tensor(lengths), 1)  # lengths as a Tensor too
    np.testing.assert_array_equal(again.numpy(), x)  # reversing the same prefixes twice restores x


def test_new_shape_or_axis_of_known_kind_compiles_nothing(vulkan_device):
    # Three kinds of float32 kernels: the column strategy (axis second-to-last, rows of whole
    # 16-byte chunks) of rank 3, and the segments of rank 2 (the axes beside the reversed one
    # merge) and of rank 3 (rows not of whole chunks). (Alone, this test once failed: the
    # rank-3 segments kernel had been compiled by the tests before it.)
    dev = vulkan_device
    dml.reverse_subsequences(np.zeros((4, 6, 8), np.float32), np.ones((4, 1, 8), np.uint32), 1, device=dev)
    dml.reverse_subsequences(np.zeros((4, 6, 7), np.float32), np.ones((4, 6, 1), np.uint32), 2, device=dev)
    dml.reverse_subsequences(np.zeros((4, 6, 7), np.float32), np.ones((4, 1, 7), np.uint32), 1, device=dev)
    misses = dev.pipeline_cache_stats.misses
    dml.reverse_subsequences(np.zeros((3, 5, 7), np.float32), np.ones((3, 5, 1), np.uint32), 2, device=dev)
    dml.reverse_subsequences(np.zeros((3, 5, 7), np.float32), np.ones((1, 5, 7), np.uint32), 0, device=dev)
    dml.reverse_subsequences(np.zeros((3, 5, 7), np.float32), np.ones((3, 1, 7), np.uint32), 1, device=dev)
    dml.reverse_subsequences(np.zeros((2, 9, 12), np.float32), np.ones((2, 1, 12), np.uint32), 1, device=dev)
    assert dev.pipeline_cache_stats.misses == misses


# ------------------------------------------------------------------ sweep
RANKS = [1, 2, 4, 5, 8]
LAYOUTS = ["packed", "strided_input", "broadcast_input", "strided_output", "broadcast_lengths"]


def _axes(rank: int) -> list[int]:
    return sorted({0, rank // 2, rank - 1})


SWEEP = [(rank, axis) for rank in RANKS for axis in _axes(rank)]


@pytest.mark.parametrize("rank, axis", SWEEP, ids=[f"r{r}-axis{a}" for r, a in SWEEP])
@pytest.mark.parametrize("data_type", ALL_TYPES, ids=lambda t: t.name)
def test_sweep_against_reference(device, data_type, rank, axis):
    rng = np.random.default_rng([int(data_type), rank, axis])
    layout = LAYOUTS[(int(data_type) + rank + axis) % len(LAYOUTS)]
    lengths_type = DT.UINT64 if (int(data_type) + axis) % 2 else DT.UINT32
    top = 7 if rank <= 2 else (4 if rank <= 5 else 2)
    sizes = [int(rng.integers(1, top + 1)) for _ in range(rank)]
    sizes[axis] = max(sizes[axis], min(top, 3))
    lengths_sizes = [1 if i == axis else n for i, n in enumerate(sizes)]
    in_strides = padded_strides(sizes, rng, broadcast=layout == "broadcast_input") \
        if layout in ("strided_input", "broadcast_input") else None
    out_strides = padded_strides(sizes) if layout == "strided_output" else None
    lengths_strides = padded_strides(lengths_sizes, rng, broadcast=True) if layout == "broadcast_lengths" else None
    in_desc = dml.TensorDesc(data_type, sizes, in_strides)
    lengths_desc = dml.TensorDesc(lengths_type, lengths_sizes, lengths_strides)
    out_desc = dml.TensorDesc(data_type, sizes, out_strides)
    desc = dml.ReverseSubsequencesOperatorDesc(in_desc, lengths_desc, out_desc, axis)
    compiled = device.compile_operator(device.create_operator(desc))

    raw_in = random_bits(rng, data_type.numpy, [in_desc.required_elements])
    raw_lengths = sequence_lengths(rng, lengths_desc, sizes[axis])
    want = reference.reverse_subsequences(
        logical_from_raw(raw_in, in_desc), logical_from_raw(raw_lengths, lengths_desc), axis)
    run_and_check(device, rng, compiled, [raw_in, raw_lengths], [in_desc, lengths_desc], out_desc, want)


def test_cli_shader_reverse_subsequences(capsys):
    from gpudml import cli

    assert cli.main(["shader", "reverse_subsequences", "--dtype", "FLOAT64", "--shape", "2,5,3", "--axis", "1",
                     "--lengths-dtype", "UINT64"]) == 0
    out = capsys.readouterr().out
    assert "var<storage, read> s0_lengths: array<u32>;" in out and "s0_lengths_at2(i)" in out


# ------------------------------------------------------------------ fuzz (run by tests/test_fuzz.py)
@st.composite
def valid_cases(draw) -> Case:
    level, row, rank = support_row(draw, reverse_subsequences.SUPPORT)
    data_type = type_of(draw, row, "input_tensor")
    length_type = type_of(draw, row, "sequence_lengths_tensor")
    in_sizes = sizes_of(draw, rank)
    axis = draw(st.integers(0, rank - 1))
    length_sizes = [1 if i == axis else n for i, n in enumerate(in_sizes)]
    n = in_sizes[axis]

    def lengths(rng, dt, count):
        values = rng.integers(0, n + 3, size=count).astype(dt.numpy)
        huge = rng.random(count) < 0.1  # lengths far beyond the axis clamp to it
        values[huge] = np.iinfo(dt.numpy).max - rng.integers(0, 3, size=int(huge.sum())).astype(dt.numpy)
        return values

    desc = dml.ReverseSubsequencesOperatorDesc(
        tensor(draw, data_type, in_sizes), tensor(draw, length_type, length_sizes),
        tensor(draw, data_type, in_sizes, output=True), axis)
    return Case(level, desc,
                lambda xs: reference.reverse_subsequences(xs[0], xs[1], axis), [random_fill, lengths])


@st.composite
def broken_fields(draw, desc):
    """(builder, fragment, kind) with one of the operator's own fields broken."""
    rank, i, not_int = pick_axis(draw, desc)
    lengths = desc.sequence_lengths_tensor
    kind = draw(st.sampled_from(["axis_out", "axis_negative", "axis_type", "lengths_size", "lengths_type",
                                 "output_size"]))
    if kind == "axis_out":
        return replace_fields(desc, axis=rank + draw(st.integers(0, 5))), "axis", kind
    if kind == "axis_negative":
        return replace_fields(desc, axis=-draw(st.integers(1, 9))), "axis", kind
    if kind == "axis_type":
        return replace_fields(desc, axis=draw(st.sampled_from([0.0, "0", None, [0]]))), "axis", kind
    if kind == "lengths_size":
        bad = list(lengths.sizes)
        bad[i] += 1
        return replace_fields(desc, sequence_lengths_tensor=dml.TensorDesc(lengths.data_type, bad)), \
            "sequence_lengths_tensor.sizes", kind
    if kind == "lengths_type":
        dt = draw(st.sampled_from([DT.FLOAT32, DT.INT32, DT.UINT16, DT.INT64, DT.UINT8]))
        return replace_fields(desc, sequence_lengths_tensor=dml.TensorDesc(dt, lengths.sizes)), \
            "sequence_lengths_tensor.data_type", kind
    bad = list(desc.output_tensor.sizes)
    bad[i] += 1
    return replace_fields(desc, output_tensor=dml.TensorDesc(desc.output_tensor.data_type, bad)), \
        "output_tensor.sizes", kind


@st.composite
def functional_calls(draw, x, shape):
    """(keyword arguments, expected(x)) for one functional call, some arguments hostile."""
    rank = len(shape)
    axis = draw(st.integers(0, rank - 1))
    lengths_shape = [1 if i == axis else n for i, n in enumerate(shape)]
    lengths = np.random.default_rng(draw(st.integers(0, 999))).integers(0, shape[axis] + 2, size=lengths_shape)
    lengths = lengths.astype(draw(st.sampled_from([np.uint32, np.int64, np.uint8, np.uint64, np.int16])))
    hostile_lengths = st.sampled_from([lengths.astype(np.float32), -lengths - 1, lengths.tolist(), None, 3,
                                       np.zeros([n + 1 for n in lengths_shape], np.uint32), "1"])
    lengths_arg = draw(st.one_of(st.just(lengths), hostile_lengths)) if draw(st.integers(0, 3)) == 0 else lengths
    args = {"sequence_lengths": lengths_arg, "axis": maybe_hostile(draw, axis)}
    return args, lambda a: reference.reverse_subsequences(a, np.asarray(args["sequence_lengths"]),
                                                             args["axis"])


FUZZ = OpFuzz(valid_cases(), broken_fields, functional_calls,
              fields=("x", "input_tensor", "sequence_lengths", "axis", "device"))
