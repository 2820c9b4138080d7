"""Padding: what the conformance kit (tests/test_conformance.py) does not cover: each
validation rule's message, the modes at their edges (periodic folds, WRAP, size-1 axes),
axis merging in every layout, the padding value (truncated, rounded once, ignored outside
CONSTANT), mode names, the pipeline cache across shapes, the command line."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
from conformance import HIGHEST, LAYOUTS, Case, RandomDraw, laid_out, run_case
from conftest import assert_bits_equal
from isolated import limited_device

import gpudml as dml
from gpudml import compiler, reference
from gpudml.ops import padding

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


def test_padding_value_ignored_by_other_modes(device):
    """Outside CONSTANT the value is no error, even one no integer type holds, and changes
    nothing: the modes give what they give with value 0 (and the reference without one)."""
    x = np.arange(12, dtype=np.uint8).reshape(1, 1, 3, 4)
    for mode in ("edge", "reflection", "symmetric", "wrap"):
        want = reference.pad(x, [0, 0, 2, 1], [0, 0, 1, 3], mode)
        for value in (0, math.nan, 300, -1e30):
            desc = _desc((1, 1, 3, 4), (1, 1, 6, 8), (0, 0, 2, 1), (0, 0, 1, 3), mode, value, DT.UINT8)
            (got,) = device.compile_operator(device.create_operator(desc)).execute([x])
            assert_bits_equal(got, want)
            assert_bits_equal(dml.pad(x, [0, 0, 2, 1], [0, 0, 1, 3], mode=mode, value=value, device=device), want)


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


@pytest.mark.parametrize("layout", LAYOUTS)
def test_unpadded_neighbours_merge(device, layout):
    """The planner drops size-1 output axes and merges unpadded contiguous neighbours; the
    result must not change, whatever the layout."""
    rng = np.random.default_rng(LAYOUTS.index(layout))
    in_sizes, start, end = [1, 3, 4, 2, 5, 1, 2], [0, 0, 0, 2, 0, 0, 0], [0, 0, 0, 1, 0, 0, 0]
    for mode in MODES:
        desc = padding.infer_output(dml.TensorDesc(DT.INT16, in_sizes), start, end, mode, -7)
        desc = laid_out(desc, RandomDraw(rng), layout)
        if layout == "packed":
            assert compiler.compile(desc, device.caps).kernels[0].params["rank"] == 3  # [12, 5, 10]
        run_case(device, Case(padding.SPEC, HIGHEST, desc), rng)


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


def test_new_shape_of_known_kind_compiles_nothing(adapter):
    """On a pipeline cache of the test's own (nothing compiled for it before, whatever ran
    earlier): the first call compiles its kernel, a new shape of the same kind nothing."""
    dev = limited_device(adapter)
    dml.pad(np.zeros((4, 6, 8), np.float32), [1, 2, 3], [3, 2, 1], mode="reflection", device=dev)
    stats = dev.pipeline_cache_stats
    assert stats.misses >= 1
    misses, hits = stats.misses, stats.hits
    out = dml.pad(np.zeros((7, 3, 5), np.float32), [0, 9, 1], [2, 0, 6], mode="reflection", device=dev)
    assert out.shape == (9, 12, 12)
    assert (stats.misses, stats.hits) == (misses, hits + 1)


# ------------------------------------------------------------------ command line
def test_cli_shader_pad(capsys):
    from gpudml import cli

    assert cli.main(["shader", "pad", "--mode", "symmetric", "--dtype", "INT8", "--shape", "2,3",
                     "--start", "5,0", "--end", "0,1"]) == 0
    out = capsys.readouterr().out
    assert "x = x % p;" in out  # start 5 - 1 >= period 4: folds
    assert cli.main(["shader", "pad", "--mode", "symmetric", "--dtype", "INT8", "--shape", "2,3", "--start", "5,0",
                     "--end", "0,1", "--strategy", "elements"]) == 0
    out = capsys.readouterr().out  # (a kernel carries the functions it calls: `elements` reads value by value)
    assert "fn value_at(at: array<u32, 2>)" in out and "x = x % p;" in out
