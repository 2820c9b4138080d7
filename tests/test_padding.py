"""Padding: seed examples, validation rules, feature levels, padding values, and the
dtype x rank x mode x layout sweep vs reference.py."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
from conftest import ALL_TYPES, assert_bits_equal, random_bits
from fuzzkit import (
    Case,
    OpFuzz,
    draw_ints,
    maybe_hostile,
    pick_axis,
    random_fill,
    replace_fields,
    sizes_of,
    support_row,
    tensor,
    type_of,
    with_entry,
)
from hypothesis import strategies as st
from movement_check import LAYOUTS, layout_descs, padding_case, run_and_check

import gpudml as dml
from gpudml import compiler, examples, reference
from gpudml.ops import padding
from gpudml.runtime.tensor import logical_from_raw

DT = dml.DataType
FL = dml.FeatureLevel
MODES = list(dml.PaddingMode)
SEED_INPUT = np.array([[1, 2, 3, 4], [5, 6, 7, 8], [1, 2, 3, 4], [5, 6, 7, 8]], np.float32).reshape(1, 1, 4, 4)


def _desc(in_sizes=(1, 1, 4, 4), out_sizes=(1, 1, 8, 10), start=(0, 0, 1, 2), end=(0, 0, 3, 4),
          mode=dml.PaddingMode.CONSTANT, value=0.0, dtype=DT.FLOAT32, out_dtype=None, out_strides=None):
    return dml.PaddingOperatorDesc(
        dml.TensorDesc(dtype, in_sizes), dml.TensorDesc(out_dtype or dtype, out_sizes, out_strides),
        mode, value, start, end)


def _raises(device, desc, message: str):
    with pytest.raises(dml.InvalidArgumentError, match=re.escape(message)):
        device.create_operator(desc)


# ------------------------------------------------------------------ seed examples
PAD_SEEDS = [e for e in examples.EXAMPLES if e.operator == "padding"]


@pytest.mark.parametrize("example", PAD_SEEDS, ids=lambda e: e.name)
def test_seed_examples(device, example):
    got = dml.pad(example.input, device=device, **example.args)
    np.testing.assert_array_equal(got, example.expected)
    np.testing.assert_array_equal(examples.run_reference(example), example.expected)


def test_seed_example_through_desc_api(device):
    desc = _desc(mode=dml.PaddingMode.SYMMETRIC)
    compiled = device.compile_operator(device.create_operator(desc))
    assert len(compiled.wgsl) == 1 and "fn value_at" in compiled.wgsl[0]
    (out,) = compiled.execute([SEED_INPUT])
    assert out.shape == (1, 1, 8, 10)
    np.testing.assert_array_equal(out[0, 0, 0], [2, 1, 1, 2, 3, 4, 4, 3, 2, 1])
    np.testing.assert_array_equal(out, reference.pad(SEED_INPUT, [0, 0, 1, 2], [0, 0, 3, 4], "symmetric"))


# ------------------------------------------------------------------ validation: one rule each
def test_rule_output_size(vulkan_device):
    _raises(vulkan_device, _desc(out_sizes=(1, 1, 7, 10)),
            "Padding: output_tensor.sizes[2] = 7 must equal input_tensor.sizes[2] + start_padding[2] + "
            "end_padding[2] = 4 + 1 + 3 = 8")


def test_rule_same_data_type(vulkan_device):
    _raises(vulkan_device, _desc(out_dtype=DT.FLOAT16),
            "Padding: output_tensor.data_type FLOAT16 must equal input_tensor.data_type FLOAT32")


def test_rule_same_rank(vulkan_device):
    _raises(vulkan_device, _desc(out_sizes=(1, 8, 10)),
            "Padding: all tensors must have the same DimensionCount (got input_tensor 4, output_tensor 3)")


@pytest.mark.parametrize("field", ["start_padding", "end_padding"])
def test_rule_padding_length(vulkan_device, field):
    pads = {"start": (0, 0, 1, 2), "end": (0, 0, 3, 4), field.split("_")[0]: (1, 2, 3)}
    _raises(vulkan_device, _desc(**pads), f"Padding: {field} has 3 entries [1, 2, 3]; DimensionCount is 4")


@pytest.mark.parametrize("value, shown", [(-1, "-1"), (2**32, "4294967296")])
def test_rule_padding_is_uint(vulkan_device, value, shown):
    _raises(vulkan_device, _desc(start=(0, 0, value, 2)),
            f"Padding: start_padding[2] = {shown} must be in 0..4294967295 (UINT)")


def test_rule_padding_entries_are_integers():
    with pytest.raises(dml.InvalidArgumentError, match=re.escape("Padding: end_padding[1]: expected an integer")):
        _desc(end=(0, 1.5, 3, 4))


def test_rule_padding_mode_is_a_padding_mode():
    with pytest.raises(dml.InvalidArgumentError,
                       match=re.escape("Padding: padding_mode: 7 is not a PaddingMode (one of CONSTANT, EDGE, "
                                       "REFLECTION, SYMMETRIC, WRAP)")):
        _desc(mode=7)


def test_rule_symmetric_needs_fl_3_0(at_level):
    _raises(at_level(FL.FL_2_1), _desc(mode="symmetric"),
            "Padding: padding_mode SYMMETRIC is not supported at FL_2_1; it needs FL_3_0 or later")
    at_level(FL.FL_3_0).create_operator(_desc(mode="symmetric"))


def test_rule_wrap_needs_fl_6_4(at_level):
    _raises(at_level(FL.FL_6_3), _desc(mode="wrap"),
            "Padding: padding_mode WRAP is not supported at FL_6_3; it needs FL_6_4 or later")
    at_level(FL.FL_6_4).create_operator(_desc(mode="wrap"))


def test_wrap_is_periodic_at_any_padding(device):
    """WRAP (FL 6_4) repeats the input with period n on every axis, paddings wider than the
    axis included, and on a default Device (which validates at FL 6_4)."""
    x = np.arange(15, dtype=np.int32).reshape(3, 5)
    for start, end in (([1, 2], [0, 3]), ([7, 0], [4, 11]), ([3, 5], [3, 5]), ([0, 0], [0, 0])):
        want = x[np.mod(np.arange(-start[0], 3 + end[0]), 3)][:, np.mod(np.arange(-start[1], 5 + end[1]), 5)]
        assert_bits_equal(dml.pad(x, start, end, mode="wrap", device=device), want)
    assert_bits_equal(dml.pad(x[:1, :1], [4, 2], [3, 1], mode="wrap"), np.zeros((8, 4), np.int32))


def test_rule_output_must_not_alias(vulkan_device):
    _raises(vulkan_device, _desc(out_strides=(80, 80, 10, 0)),
            "Padding: output_tensor.strides: [80, 80, 10, 0] with sizes [1, 1, 8, 10] make two output elements "
            "share one address")


def test_rule_input_tensor_desc_checked(vulkan_device):
    desc = dml.PaddingOperatorDesc(dml.TensorDesc(DT.FLOAT32, [1, 1, 4, 4], total_tensor_size_in_bytes=16),
                                   dml.TensorDesc(DT.FLOAT32, [1, 1, 8, 10]), "constant", 0.0,
                                   [0, 0, 1, 2], [0, 0, 3, 4])
    _raises(vulkan_device, desc, "Padding: input_tensor.total_tensor_size_in_bytes = 16 is smaller than "
            "DMLCalcBufferTensorSize = 64")


@pytest.mark.parametrize("dtype, value, message", [
    (DT.UINT8, 256, "Padding: padding_value = 256 (truncated: 256) is outside the range of UINT8 [0, 255]"),
    (DT.INT8, -129.5, "Padding: padding_value = -129.5 (truncated: -129) is outside the range of INT8 [-128, 127]"),
    (DT.UINT32, -1.5, "Padding: padding_value = -1.5 (truncated: -1) is outside the range of UINT32"),
    (DT.INT64, 2.0**63, "Padding: padding_value = 9.223372036854776e+18 (truncated: 9223372036854775808) is "
                        "outside the range of INT64"),
    (DT.INT32, math.nan, "Padding: padding_value = nan cannot be converted to the integer type INT32"),
    (DT.UINT16, math.inf, "Padding: padding_value = inf cannot be converted to the integer type UINT16"),
    (DT.FLOAT32, "9", "Padding: padding_value: expected a real number, got '9'"),
])
def test_rule_padding_value_fits_the_type(vulkan_device, dtype, value, message):
    _raises(vulkan_device, _desc(dtype=dtype, value=value), message)


def test_padding_value_ignored_by_other_modes(vulkan_device):
    vulkan_device.create_operator(_desc(dtype=DT.UINT8, value=math.nan, mode="edge"))


# ------------------------------------------------------------------ feature levels
LEVEL_CASES = [
    # (level, rank, dtype, None if valid else the message's tail)
    (FL.FL_1_0, 4, DT.FLOAT32, None),
    (FL.FL_1_0, 5, DT.FLOAT16, None),
    (FL.FL_1_0, 3, DT.FLOAT32, "DimensionCount 3 is not supported at FL_1_0 (supported: 4, 5); it needs FL_3_1"),
    (FL.FL_1_0, 4, DT.INT32, "input_tensor.data_type INT32 is not supported at FL_1_0 (supported: FLOAT32, "
                             "FLOAT16); it needs FL_2_1 or later"),
    (FL.FL_2_1, 4, DT.UINT8, None),
    (FL.FL_3_0, 6, DT.INT16, "DimensionCount 6 is not supported at FL_3_0 (supported: 4, 5); it needs FL_3_1"),
    (FL.FL_3_1, 1, DT.INT8, None),
    (FL.FL_3_1, 8, DT.UINT16, None),
    (FL.FL_4_1, 4, DT.FLOAT64, "input_tensor.data_type FLOAT64 is not supported at FL_4_1 (supported: FLOAT32, "
                               "FLOAT16, UINT32, UINT16, UINT8, INT32, INT16, INT8); it needs FL_5_0 or later"),
    (FL.FL_5_0, 1, DT.INT64, None),
    (FL.FL_5_0, 8, DT.UINT64, None),
]


@pytest.mark.parametrize("level, rank, dtype, error", LEVEL_CASES,
                         ids=[f"{c[0].name}-r{c[1]}-{c[2].name}" for c in LEVEL_CASES])
def test_feature_level_table(at_level, level, rank, dtype, error):
    device = at_level(level)
    in_sizes = [2] * rank
    desc = _desc(in_sizes, [3] * rank, [1] * rank, [0] * rank, "edge", dtype=dtype)
    if error is not None:
        _raises(device, desc, f"Padding: {error}")
        return
    x = np.arange(2**rank).astype(dtype.numpy).reshape(in_sizes)
    (out,) = device.compile_operator(device.create_operator(desc)).execute([x])
    assert_bits_equal(out, reference.pad(x, [1] * rank, [0] * rank, "edge"))


# ------------------------------------------------------------------ modes at the edges
def test_reflection_and_symmetric_fold_periodically(device):
    x = np.arange(1, 4, dtype=np.int32)  # n = 3: REFLECTION period 4, SYMMETRIC period 6
    got = dml.pad(x, [9], [10], mode="reflection", device=device)
    np.testing.assert_array_equal(got, [2, 1, 2, 3, 2, 1, 2, 3, 2, 1, 2, 3, 2, 1, 2, 3, 2, 1, 2, 3, 2, 1])
    got = dml.pad(x, [7], [8], mode="symmetric", device=device)
    np.testing.assert_array_equal(got, [1, 1, 2, 3, 3, 2, 1, 1, 2, 3, 3, 2, 1, 1, 2, 3, 3, 2])
    for mode in ("reflection", "symmetric", "edge"):
        assert_bits_equal(dml.pad(x, [9], [10], mode=mode, device=device), reference.pad(x, [9], [10], mode))


def test_size_one_axis_repeats_its_element(device):
    x = np.array([[7], [8]], dtype=np.uint16)
    for mode in ("reflection", "symmetric", "edge"):
        got = dml.pad(x, [0, 5], [0, 6], mode=mode, device=device)
        np.testing.assert_array_equal(got, [[7] * 12, [8] * 12])


@pytest.mark.parametrize("layout", ["packed", "strided_input", "broadcast_input", "strided_output"])
def test_unpadded_neighbours_merge(device, layout):
    """The planner drops size-1 output axes and merges unpadded contiguous neighbours; the
    result must not change, whatever the layout."""
    rng = np.random.default_rng(LAYOUTS.index(layout))
    in_sizes, start, end = [1, 3, 4, 2, 5, 1, 2], [0, 0, 0, 2, 0, 0, 0], [0, 0, 0, 1, 0, 0, 0]
    out_sizes = [n + s + e for n, s, e in zip(in_sizes, start, end, strict=True)]
    in_desc, out_desc = layout_descs(DT.INT16, in_sizes, out_sizes, layout, rng)
    for mode in MODES:
        desc = dml.PaddingOperatorDesc(in_desc, out_desc, mode, -7, start, end)
        if layout == "packed":
            assert compiler.compile(desc, device.caps).kernels[0].params["rank"] == 3  # [12, 5, 10]
        raw_in = random_bits(rng, np.int16, [in_desc.required_elements])
        want = reference.pad(logical_from_raw(raw_in, in_desc), start, end, mode, -7)
        compiled = device.compile_operator(device.create_operator(desc))
        run_and_check(device, rng, compiled, [raw_in], [in_desc], out_desc, want)


# ------------------------------------------------------------------ padding values
@pytest.mark.parametrize("dtype, value, want", [
    (np.int32, 10.6, 10),
    (np.int32, -10.6, -10),
    (np.uint8, 255.9, 255),
    (np.uint8, -0.9, 0),
    (np.int8, -128.7, -128),
    (np.int64, 2**62 + 1, 2**62 + 1),
    (np.int64, -(2**63), -(2**63)),
    (np.uint64, 2**64 - 1, 2**64 - 1),
    (np.uint32, np.float32(7.99), 7),
])
def test_integer_padding_value_truncates(device, dtype, value, want):
    got = dml.pad(np.ones(3, dtype), [2], [1], value=value, device=device)
    np.testing.assert_array_equal(got, np.array([want, want, 1, 1, 1, want], dtype=dtype))


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
@pytest.mark.parametrize("value", [math.nan, -0.0, 0.1, -math.inf, 1e300, 65519.0])
def test_float_padding_value_bits(device, dtype, value):
    x = np.ones((2, 2), dtype)
    got = dml.pad(x, [1, 0], [0, 1], value=value, device=device)
    assert_bits_equal(got, reference.pad(x, [1, 0], [0, 1], "constant", value))
    with np.errstate(over="ignore"):
        assert_bits_equal(got[0, :1], np.array([value], np.float64).astype(dtype))


def test_float_padding_value_rounds_once_from_its_exact_value(device):
    """An int no double holds rounds straight to the tensor's type: 2^60 + 2^36 + 1 is
    2^60 + 2^37 in float32 (through float64 it would be 2^60, a tie rounded to even); an int
    beyond float64 is an infinity, as any float too large for the type."""
    got = dml.pad(np.zeros(1, np.float32), [2], [0], value=2**60 + 2**36 + 1, device=device)
    assert got[0] == np.float32(2.0**60 + 2.0**37) and got[0] != np.float32(float(2**60 + 2**36 + 1))
    assert dml.pad(np.zeros(1, np.float64), [1], [0], value=-(10**400), device=device)[0] == -np.inf


def test_zero_and_negative_zero_are_different_operators(device):
    x = np.ones(2, np.float32)
    plus = dml.pad(x, [1], [0], value=0.0, device=device)
    minus = dml.pad(x, [1], [0], value=-0.0, device=device)
    assert plus.view(np.uint32)[0] == 0 and minus.view(np.uint32)[0] == 0x80000000


# ------------------------------------------------------------------ functional API
def test_mode_names_any_case_and_enum(device):
    x = np.arange(5, dtype=np.float32)
    want = reference.pad(x, [2], [3], dml.PaddingMode.REFLECTION)
    for mode in ("reflection", "REFLECTION", "Reflection", dml.PaddingMode.REFLECTION, 2):
        np.testing.assert_array_equal(dml.pad(x, [2], [3], mode=mode, device=device), want)
    with pytest.raises(dml.InvalidArgumentError, match=re.escape("pad: mode: 'mirror' is not a PaddingMode")):
        dml.pad(x, [2], [3], mode="mirror", device=device)


def test_functional_errors_name_the_rule(device):
    x = np.zeros((2, 3), np.float32)
    with pytest.raises(dml.InvalidArgumentError, match=re.escape("Padding: start_padding[1] = -1 must be in")):
        dml.pad(x, [0, -1], [0, 0], device=device)
    with pytest.raises(dml.InvalidArgumentError, match=re.escape("Padding: end_padding has 1 entries [2]")):
        dml.pad(x, [0, 1], [2], device=device)
    with pytest.raises(dml.InvalidArgumentError, match=re.escape("Padding: padding_value = 300")):
        dml.pad(x.astype(np.int8), [1, 1], [1, 1], value=300, device=device)


def test_tensor_in_tensor_out_and_noncontiguous(device):
    base = np.arange(120, dtype=np.int16).reshape(10, 12)
    view = base[::3, ::-2]
    want = reference.pad(view, [2, 1], [1, 3], "symmetric")
    np.testing.assert_array_equal(dml.pad(view, [2, 1], [1, 3], mode="symmetric", device=device), want)
    t = device.tensor(view)
    out = dml.pad(t, [2, 1], [1, 3], mode="symmetric")
    assert isinstance(out, dml.Tensor) and out.shape == want.shape
    again = dml.pad(out, [1, 0], [0, 0], mode="edge")  # chained on the GPU
    np.testing.assert_array_equal(again.numpy(), reference.pad(want, [1, 0], [0, 0], "edge"))


def test_new_shape_of_known_kind_compiles_nothing(vulkan_device):
    dev = vulkan_device
    dml.pad(np.zeros((4, 6, 8), np.float32), [1, 2, 3], [3, 2, 1], mode="reflection", device=dev)
    misses, hits = dev.pipeline_cache_stats.misses, dev.pipeline_cache_stats.hits
    out = dml.pad(np.zeros((7, 3, 5), np.float32), [0, 9, 1], [2, 0, 6], mode="reflection", device=dev)
    assert out.shape == (9, 12, 12)
    assert dev.pipeline_cache_stats.misses == misses
    assert dev.pipeline_cache_stats.hits == hits + 1


# ------------------------------------------------------------------ sweep
RANKS = [1, 2, 4, 5, 8]


def _value(rng, dtype: DT):
    if dtype.is_float:
        return [9.5, math.nan, -0.0, math.inf, -1e-3][int(rng.integers(5))]
    info = np.iinfo(dtype.numpy)
    return [10.6, -0.9, int(info.max), int(info.min), -3.7 if info.min < 0 else 3.7][int(rng.integers(5))]


@pytest.mark.parametrize("mode", MODES, ids=lambda m: m.name)
@pytest.mark.parametrize("rank", RANKS)
@pytest.mark.parametrize("data_type", ALL_TYPES, ids=lambda t: t.name)
def test_sweep_against_reference(device, data_type, rank, mode):
    rng = np.random.default_rng([int(data_type), rank, int(mode)])
    layout = LAYOUTS[(int(data_type) + rank + int(mode)) % len(LAYOUTS)]
    in_sizes, start, end = padding_case(rng, rank)
    out_sizes = [n + s + e for n, s, e in zip(in_sizes, start, end, strict=True)]
    in_desc, out_desc = layout_descs(data_type, in_sizes, out_sizes, layout, rng)
    value = _value(rng, data_type)
    desc = dml.PaddingOperatorDesc(in_desc, out_desc, mode, value, start, end)
    compiled = device.compile_operator(device.create_operator(desc))

    raw_in = random_bits(rng, data_type.numpy, [in_desc.required_elements])
    want = reference.pad(logical_from_raw(raw_in, in_desc), start, end, mode, value)
    run_and_check(device, rng, compiled, [raw_in], [in_desc], out_desc, want)


# ------------------------------------------------------------------ command line
def test_cli_shader_pad(capsys):
    from gpudml import cli

    assert cli.main(["shader", "pad", "--mode", "symmetric", "--dtype", "INT8", "--shape", "2,3",
                     "--start", "5,0", "--end", "0,1"]) == 0
    out = capsys.readouterr().out
    assert "fn value_at(at: array<u32, 2>)" in out and "x = x % p;" in out  # start 5 - 1 >= period 4: folds


def test_cli_examples_run_the_padding_and_reverse_seed_examples(capsys):
    from gpudml import cli

    assert cli.main(["examples"]) == 0
    out = capsys.readouterr().out
    for name in ("padding-1", "padding-2", "padding-3", "padding-4", "reverse_subsequences-1",
                 "reverse_subsequences-2"):
        assert f"== {name}: " in out
    assert " 0 failed" in out


# ------------------------------------------------------------------ fuzz (run by tests/test_fuzz.py)
def padding_values(draw, data_type: dml.DataType):
    if data_type.is_float:
        return draw(st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers(-70000, 70000),
                              st.sampled_from([0.0, -0.0, 65504.0, 65520.0, 1e300, -1e-300])))
    info = np.iinfo(data_type.numpy)
    limit = 2.0**62 if data_type.size == 8 else float(info.max)
    low = -0.99 if info.min == 0 else -limit
    edges = [int(info.min), int(info.max), 10.6, -0.0] + ([-10.6] if info.min < 0 else [])
    return draw(st.one_of(st.integers(int(info.min), int(info.max)), st.floats(low, limit), st.sampled_from(edges)))


@st.composite
def valid_cases(draw) -> Case:
    level, row, rank = support_row(draw, padding.SUPPORT)
    data_type = type_of(draw, row, "input_tensor")
    modes = [m for m in dml.PaddingMode if padding.MODE_INTRODUCED[m] <= level]
    mode = draw(st.sampled_from(modes))
    # Output sizes bounded per axis; input sizes and paddings split them (a padding may
    # exceed the input size: REFLECTION and SYMMETRIC fold periodically).
    out_sizes = sizes_of(draw, rank)
    in_sizes, start, end = [], [], []
    for m in out_sizes:
        n = draw(st.integers(1, m))
        s = draw(st.integers(0, m - n))
        in_sizes.append(n)
        start.append(s)
        end.append(m - n - s)
    value = padding_values(draw, data_type) if mode == dml.PaddingMode.CONSTANT else draw(
        st.sampled_from([0.0, 5.0, float("nan")]))
    desc = dml.PaddingOperatorDesc(tensor(draw, data_type, in_sizes), tensor(draw, data_type, out_sizes, output=True),
                                   mode, value, start, end)
    return Case(level, desc, lambda xs: reference.pad(xs[0], start, end, mode, value), [random_fill])


@st.composite
def broken_fields(draw, desc):
    """(builder, fragment, kind) with one of the operator's own fields broken."""
    rank, i, not_int = pick_axis(draw, desc)
    dt = desc.input_tensor.data_type
    kinds = ["start_negative", "end_huge", "output_size", "length", "not_int", "mode", "value_type"]
    if not dt.is_float:
        kinds.append("value_for_integers")
    kind = draw(st.sampled_from(kinds))
    if kind == "start_negative":
        return replace_fields(desc, start_padding=with_entry(desc.start_padding, i, -1)), "start_padding", kind
    if kind == "end_huge":
        return replace_fields(desc, end_padding=with_entry(desc.end_padding, i, 2**32)), "end_padding", kind
    if kind == "output_size":
        out = with_entry(desc.output_tensor.sizes, i, desc.output_tensor.sizes[i] + draw(st.sampled_from([1, -1])))
        if out[i] < 1:
            out[i] = desc.output_tensor.sizes[i] + 1
        return replace_fields(desc, output_tensor=dml.TensorDesc(dt, out)), "output_tensor.sizes", kind
    if kind == "length":
        return replace_fields(desc, end_padding=list(desc.end_padding)[:-1]), "end_padding", kind
    if kind == "not_int":
        return replace_fields(desc, start_padding=with_entry(desc.start_padding, i, not_int)), "start_padding", kind
    if kind == "mode":
        bad = draw(st.sampled_from([5, -1, "mirror", None, 1.5]))  # 4 and "wrap" are WRAP from FL_6_4 on
        return replace_fields(desc, padding_mode=bad), "padding_mode", kind
    if kind == "value_type":
        value = draw(st.sampled_from(["0", None, 1j, True, [0.0], np.zeros(1)]))
        return replace_fields(desc, padding_value=value), "padding_value", kind
    info = np.iinfo(dt.numpy)
    value = draw(st.sampled_from([float("nan"), float("inf"), -float("inf"), int(info.max) + 1,
                                  int(info.min) - 1, 1e30, -1e30, 2.0**64]))
    return replace_fields(desc, padding_mode=dml.PaddingMode.CONSTANT, padding_value=value), "padding_value", kind


@st.composite
def functional_calls(draw, x, shape):
    """(keyword arguments, expected(x)) for one functional call, some arguments hostile."""
    rank = len(shape)
    start, end = draw_ints(draw, rank, 0, 3), draw_ints(draw, rank, 0, 3)
    mode = draw(st.sampled_from(["constant", "edge", "reflection", "symmetric", "CONSTANT", dml.PaddingMode.EDGE]))
    value = draw(st.sampled_from([0.0, 7, -3.5, float("nan"), float("inf"), 300, 2**64, -0.0]))
    args = {"start_padding": maybe_hostile(draw, start), "end_padding": maybe_hostile(draw, end),
            "mode": maybe_hostile(draw, mode), "value": value}
    return args, lambda a: reference.pad(a, args["start_padding"], args["end_padding"], args["mode"],
                                             args["value"])


FUZZ = OpFuzz(valid_cases(), broken_fields, functional_calls,
              fields=("x", "input_tensor", "start_padding", "end_padding", "mode", "value", "padding_value",
                      "output_tensor", "device"))
