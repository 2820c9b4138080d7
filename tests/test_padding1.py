"""Padding1: the page's examples and tables, validation rules, feature levels, padding
values exact in their type, every strategy, graphs, and the dtype x rank 1-8 x layout sweep
vs reference.py."""

from __future__ import annotations

import math
import re
from fractions import Fraction

import numpy as np
import pytest
from conftest import ALL_TYPES, assert_bits_equal, random_bits
from dml_pages import page_arrays, page_blocks, page_text, support_rows, table_rows
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
from movement_check import LAYOUTS, layout_descs, padding_case, run_and_check, run_every_strategy

import gpudml as dml
from gpudml import examples, reference
from gpudml.ops import padding, padding1
from gpudml.runtime.tensor import logical_from_raw

DT = dml.DataType
FL = dml.FeatureLevel
MODES = list(dml.PaddingMode)
PAGE = "ns-directml-dml_padding1_operator_desc.md"
EXAMPLES = [e for e in examples.EXAMPLES if e.operator == "padding1"]
SEED_INPUT = EXAMPLES[0].input


def _desc(in_sizes=(1, 1, 4, 4), out_sizes=(1, 1, 8, 10), start=(0, 0, 1, 2), end=(0, 0, 3, 4),
          mode=dml.PaddingMode.CONSTANT, value=0, dtype=DT.FLOAT32, value_type=None, out_dtype=None,
          out_strides=None):
    return dml.Padding1OperatorDesc(
        dml.TensorDesc(dtype, in_sizes), dml.TensorDesc(out_dtype or dtype, out_sizes, out_strides),
        mode, value_type or dtype, value, start, end)


def _raises(device, desc, message: str):
    with pytest.raises(dml.InvalidArgumentError, match=re.escape(message)):
        device.create_operator(desc)


# ------------------------------------------------------------------ the page
@pytest.mark.parametrize("example", EXAMPLES, ids=lambda e: e.name)
def test_page_examples(device, example):
    got = dml.padding1(example.input, device=device, **example.args)
    assert_bits_equal(got, example.expected)
    assert_bits_equal(examples.run_reference(example), example.expected)


def test_page_example_through_desc_api(device):
    desc = _desc(mode="symmetric")
    (out,) = device.compile_operator(device.create_operator(desc)).execute([SEED_INPUT])
    assert_bits_equal(out, EXAMPLES[3].expected)


def test_examples_are_the_stored_page():
    """Inputs, paddings, modes, the value and outputs of the Examples, and the support
    table, are what tests/data/pages/ holds of the page."""
    text = page_text(PAGE)
    assert page_blocks(text, "OutputTensor: (Sizes:") == [e.expected.reshape(-1).tolist() for e in EXAMPLES]
    assert page_blocks(text, "InputTensor: (Sizes:") == [e.input.reshape(-1).tolist() for e in EXAMPLES]
    assert page_arrays(text, "StartPadding") == [list(e.args["start_padding"]) for e in EXAMPLES]
    assert page_arrays(text, "EndPadding") == [list(e.args["end_padding"]) for e in EXAMPLES]
    assert re.findall(r"^PaddingMode: DML_PADDING_MODE_(\w+)$", text, re.M) == [e.args["mode"].name for e in EXAMPLES]
    assert re.findall(r"^PaddingValueDataType: (\w+)$", text, re.M) == [e.args["value_data_type"].name
                                                                         for e in EXAMPLES]
    assert re.findall(r"^PaddingValue: (\S+)$", text, re.M) == ["9"] and EXAMPLES[0].args["value"] == 9
    assert support_rows(text) == table_rows(padding1.SUPPORT)


# ------------------------------------------------------------------ validation: one rule each
def test_rule_output_size(vulkan_device):
    _raises(vulkan_device, _desc(out_sizes=(1, 1, 8, 9)),
            "Padding1: output_tensor.sizes[3] = 9 must equal input_tensor.sizes[3] + start_padding[3] + "
            "end_padding[3] = 4 + 2 + 4 = 10")


def test_rule_same_data_type(vulkan_device):
    _raises(vulkan_device, _desc(out_dtype=DT.FLOAT16, value_type=DT.FLOAT16),
            "Padding1: output_tensor.data_type FLOAT16 must equal input_tensor.data_type FLOAT32")


def test_rule_same_rank(vulkan_device):
    _raises(vulkan_device, _desc(out_sizes=(1, 8, 10)),
            "Padding1: all tensors must have the same DimensionCount (got input_tensor 4, output_tensor 3)")


@pytest.mark.parametrize("field", ["start_padding", "end_padding"])
def test_rule_padding_length(vulkan_device, field):
    pads = {"start": (0, 0, 1, 2), "end": (0, 0, 3, 4), field.split("_")[0]: (0, 1, 2, 3, 4)}
    _raises(vulkan_device, _desc(**pads), f"Padding1: {field} has 5 entries [0, 1, 2, 3, 4]; DimensionCount is 4")


@pytest.mark.parametrize("value, shown", [(-2, "-2"), (2**32, "4294967296")])
def test_rule_padding_is_uint(vulkan_device, value, shown):
    _raises(vulkan_device, _desc(end=(0, 0, 3, value)), f"Padding1: end_padding[3] = {shown} must be in "
            "0..4294967295 (UINT)")


def test_rule_fields_are_typed():
    with pytest.raises(dml.InvalidArgumentError, match=re.escape("Padding1: start_padding[0]: expected an integer")):
        _desc(start=(0.5, 0, 1, 2))
    with pytest.raises(dml.InvalidArgumentError, match=re.escape("Padding1: padding_mode: 'mirror' is not a "
                                                                 "PaddingMode")):
        _desc(mode="mirror")
    with pytest.raises(dml.InvalidArgumentError, match=re.escape("Padding1: padding_value_data_type: 'FLOAT8' is not "
                                                                 "a DataType")):
        _desc(value_type="FLOAT8")


@pytest.mark.parametrize("value_type", [DT.FLOAT64, DT.INT32, DT.FLOAT16])
def test_rule_value_type_is_the_output_type(vulkan_device, value_type):
    """"The data type of the PaddingValue member, which must match OutputTensor.DataType",
    in every mode (the field is there even where the value is ignored)."""
    for mode in ("constant", "edge"):
        _raises(vulkan_device, _desc(value_type=value_type, mode=mode),
                f"Padding1: padding_value_data_type {value_type.name} must equal output_tensor.data_type FLOAT32")


@pytest.mark.parametrize("dtype, value, message", [
    (DT.INT32, 10.6, "padding_value = 10.6 is not a whole number, so it is no INT32 value (Padding1 holds its "
                     "value exactly: it does not truncate)"),
    (DT.UINT8, 256, "padding_value = 256 is outside the range of UINT8 [0, 255]"),
    (DT.UINT8, -0.5, "padding_value = -0.5 is not a whole number"),
    (DT.INT8, -129.0, "padding_value = -129.0 is outside the range of INT8 [-128, 127]"),
    (DT.INT64, 2**63, "padding_value = 9223372036854775808 is outside the range of INT64"),
    (DT.UINT64, 2**64, "padding_value = 18446744073709551616 is outside the range of UINT64"),
    (DT.UINT64, -1, "padding_value = -1 is outside the range of UINT64 [0, 18446744073709551615]"),
    (DT.INT16, math.inf, "padding_value = inf cannot be converted to the integer type INT16"),
    (DT.UINT32, math.nan, "padding_value = nan cannot be converted to the integer type UINT32"),
    (DT.FLOAT64, "0.1", "padding_value: expected a real number, got '0.1'"),
    (DT.INT8, True, "padding_value: expected a real number, got True"),
])
def test_rule_value_exact_in_its_type(vulkan_device, dtype, value, message):
    _raises(vulkan_device, _desc(dtype=dtype, value=value), f"Padding1: {message}")


def test_value_ignored_by_other_modes_but_typed(vulkan_device):
    for mode in ("edge", "reflection", "symmetric", "wrap"):
        vulkan_device.create_operator(_desc(dtype=DT.INT8, value=1.5, mode=mode))
        vulkan_device.create_operator(_desc(dtype=DT.UINT16, value=math.nan, mode=mode))
    _raises(vulkan_device, _desc(mode="edge", value=None), "Padding1: padding_value: expected a real number, got None")


def test_rule_output_must_not_alias(vulkan_device):
    _raises(vulkan_device, _desc(out_strides=(80, 80, 0, 1)),
            "Padding1: output_tensor.strides: [80, 80, 0, 1] with sizes [1, 1, 8, 10] make two output elements "
            "share one address")


def test_rule_input_tensor_desc_checked(vulkan_device):
    desc = dml.Padding1OperatorDesc(dml.TensorDesc(DT.INT64, [4], [2]), dml.TensorDesc(DT.INT64, [5]), "constant",
                                    DT.INT64, 0, [1], [0])
    vulkan_device.create_operator(desc)
    bad = dml.Padding1OperatorDesc(dml.TensorDesc(DT.INT64, [4], [-1]), dml.TensorDesc(DT.INT64, [5]), "constant",
                                   DT.INT64, 0, [1], [0])
    _raises(vulkan_device, bad, "Padding1: input_tensor.strides[0] = -1 must be >= 0")


# ------------------------------------------------------------------ feature levels
LEVEL_CASES = [
    # (level, rank, dtype, mode, None if valid else the message's tail)
    (FL.FL_4_1, 4, DT.FLOAT32, "constant", "not available at feature level FL_4_1 (introduced at FL_5_0)"),
    (FL.FL_1_0, 4, DT.FLOAT32, "edge", "not available at feature level FL_1_0 (introduced at FL_5_0)"),
    (FL.FL_5_0, 1, DT.INT64, "constant", None),
    (FL.FL_5_0, 8, DT.UINT64, "symmetric", None),
    (FL.FL_5_0, 3, DT.FLOAT64, "reflection", None),
    (FL.FL_5_0, 5, DT.INT8, "edge", None),
    (FL.FL_5_0, 2, DT.FLOAT16, "wrap", "padding_mode WRAP is not supported at FL_5_0; it needs FL_6_4 or later"),
    (FL.FL_6_3, 2, DT.FLOAT16, "wrap", "padding_mode WRAP is not supported at FL_6_3; it needs FL_6_4 or later"),
    (FL.FL_6_4, 6, DT.UINT16, "wrap", None),
]


@pytest.mark.parametrize("level, rank, dtype, mode, error", LEVEL_CASES,
                         ids=[f"{c[0].name}-r{c[1]}-{c[2].name}-{c[3]}" for c in LEVEL_CASES])
def test_feature_level_table(at_level, level, rank, dtype, mode, error):
    device = at_level(level)
    desc = _desc([2] * rank, [5] * rank, [1] * rank, [2] * rank, mode, 3, dtype)
    if error is not None:
        _raises(device, desc, f"Padding1: {error}")
        return
    x = np.arange(2**rank).astype(dtype.numpy).reshape([2] * rank)
    (out,) = device.compile_operator(device.create_operator(desc)).execute([x])
    assert_bits_equal(out, reference.padding1(x, [1] * rank, [2] * rank, mode, 3))


def test_default_device_takes_wrap():
    x = np.arange(6, dtype=np.uint8).reshape(2, 3)
    assert_bits_equal(dml.padding1(x, [1, 4], [0, 2], mode="wrap"), x[np.ix_([1, 0, 1], np.arange(-4, 5) % 3)])


# ------------------------------------------------------------------ values exact in their type
#: (dtype, value, the element it must be, written independently of gpudml's conversion)
EXACT_VALUES = [
    (np.int64, 2**53 + 1, np.int64(9007199254740993)),
    (np.int64, 2**63 - 1, np.iinfo(np.int64).max),
    (np.int64, -(2**63), np.iinfo(np.int64).min),
    (np.uint64, 2**64 - 1, np.iinfo(np.uint64).max),
    (np.uint64, 2**63 + 3, np.uint64(9223372036854775811)),
    (np.uint64, np.uint64(2**64 - 2), np.uint64(18446744073709551614)),
    (np.int64, 2.0**62, np.int64(4611686018427387904)),          # a whole float: exact
    (np.int32, np.float32(-7.0), np.int32(-7)),
    (np.uint8, np.int64(255), np.uint8(255)),
    (np.float64, 0.1, np.uint64(0x3FB999999999999A).view(np.float64)),  # the double, not float32's 0.1
    (np.float64, 2**53 + 1, np.float64(2.0**53)),                     # ties to even
    (np.float64, 10**400, np.float64(np.inf)),
    (np.float32, 2**60 + 2**36 + 1, np.float32(2.0**60 + 2.0**37)),  # once; through float64: 2^60
    (np.float32, -(2**60 + 2**36), np.float32(-(2.0**60))),          # a tie: to even
    (np.float32, Fraction(1, 3), np.uint32(0x3EAAAAAB).view(np.float32)),
    (np.float16, 65519, np.float16(65504)),
    (np.float16, 65520, np.float16(np.inf)),
    (np.float16, -0.0, np.uint16(0x8000).view(np.float16)),
    (np.float16, np.float32(1e-8), np.float16(0)),
]


@pytest.mark.parametrize("dtype, value, want", EXACT_VALUES, ids=[f"{np.dtype(c[0])}-{c[1]!r}" for c in EXACT_VALUES])
def test_constant_is_the_value_exactly(device, dtype, value, want):
    x = np.zeros((2, 3), dtype)
    got = dml.padding1(x, [1, 0], [0, 2], value=value, device=device)
    assert_bits_equal(got[0], np.full(5, want, dtype))
    assert_bits_equal(got[1, 3:], np.full(2, want, dtype))
    assert_bits_equal(got, reference.padding1(x, [1, 0], [0, 2], "constant", value))


def test_pad_and_padding1_agree_where_both_are_exact(device):
    """Padding's FLOAT value and Padding1's typed one give the same result for a value both
    hold exactly; where Padding truncates (10.6), Padding1 refuses."""
    rng = np.random.default_rng(5)
    for data_type in ALL_TYPES:
        x = random_bits(rng, data_type.numpy, (3, 4))
        assert_bits_equal(dml.padding1(x, [1, 2], [2, 1], value=7, device=device),
                          dml.pad(x, [1, 2], [2, 1], value=7, device=device))
    with pytest.raises(dml.InvalidArgumentError, match="not a whole number"):
        dml.padding1(np.ones(2, np.int32), [1], [0], value=10.6, device=device)
    assert dml.pad(np.ones(2, np.int32), [1], [0], value=10.6, device=device)[0] == 10


def test_zero_and_negative_zero_are_different_operators(device):
    x = np.ones(2, np.float64)
    plus = dml.padding1(x, [1], [0], value=0.0, device=device)
    minus = dml.padding1(x, [1], [0], value=-0.0, device=device)
    assert plus.view(np.uint64)[0] == 0 and minus.view(np.uint64)[0] == 2**63


# ------------------------------------------------------------------ functional API
def test_value_data_type_spellings(device):
    x = np.arange(4, dtype=np.int16)
    want = reference.padding1(x, [2], [1], "constant", -3)
    for spelling in (None, DT.INT16, "INT16", "int16", np.int16, 7):
        assert_bits_equal(dml.padding1(x, [2], [1], value=-3, value_data_type=spelling, device=device), want)
    with pytest.raises(dml.InvalidArgumentError, match=re.escape("Padding1: padding_value_data_type UINT16 must "
                                                                 "equal output_tensor.data_type INT16")):
        dml.padding1(x, [2], [1], value=3, value_data_type="uint16", device=device)
    with pytest.raises(dml.InvalidArgumentError, match=re.escape("padding1: value_data_type: 'int128' is not a "
                                                                 "DataType")):
        dml.padding1(x, [2], [1], value_data_type="int128", device=device)


def test_mode_names_and_errors(device):
    x = np.arange(5, dtype=np.float32)
    want = reference.padding1(x, [6], [7], "reflection")
    for mode in ("reflection", "REFLECTION", dml.PaddingMode.REFLECTION, 2):
        assert_bits_equal(dml.padding1(x, [6], [7], mode=mode, device=device), want)
    with pytest.raises(dml.InvalidArgumentError, match=re.escape("padding1: mode: 'mirror' is not a PaddingMode")):
        dml.padding1(x, [2], [3], mode="mirror", device=device)
    with pytest.raises(dml.InvalidArgumentError, match=re.escape("Padding1: start_padding[0] = -1 must be in")):
        dml.padding1(x, [-1], [3], device=device)
    with pytest.raises(dml.InvalidArgumentError, match=re.escape("padding1: end_padding: expected a sequence")):
        dml.padding1(x, [1], None, device=device)


def test_tensor_in_tensor_out(device):
    x = np.arange(24, dtype=np.uint64).reshape(4, 6)[::2, ::-1] + np.uint64(2**60)
    t = device.tensor(x)
    out = dml.padding1(t, [1, 2], [2, 1], mode="wrap")
    assert isinstance(out, dml.Tensor) and out.shape == (5, 9)
    again = dml.padding1(out, [1, 0], [0, 0], value=2**64 - 1)  # chained on the GPU
    assert_bits_equal(again.numpy(), reference.padding1(reference.padding1(x, [1, 2], [2, 1], "wrap"), [1, 0], [0, 0],
                                                        "constant", 2**64 - 1))


# ------------------------------------------------------------------ every strategy
STRATEGY_CASES = [
    # (input sizes, start, end): rows narrower and wider than a chunk, paddings past the axis
    ([5], [3], [9]),
    ([1], [2], [3]),
    ([3, 7], [1, 8], [2, 0]),
    ([2, 3, 8], [0, 2, 4], [1, 0, 4]),
    ([2, 2, 3], [0, 0, 7], [0, 0, 8]),
]


@pytest.mark.parametrize("mode", MODES, ids=lambda m: m.name)
@pytest.mark.parametrize("data_type", [DT.INT8, DT.FLOAT16, DT.UINT32, DT.INT64, DT.FLOAT64], ids=lambda t: t.name)
def test_every_strategy(device, data_type, mode):
    """Each case under every eligible strategy (coalesced, the GPU-class one, included)."""
    rng = np.random.default_rng([int(data_type), int(mode), 1])
    value = _value(rng, data_type)
    for in_sizes, start, end in STRATEGY_CASES:
        out_sizes = [n + s + e for n, s, e in zip(in_sizes, start, end, strict=True)]
        for layout in ("packed", "strided_output"):
            in_desc, out_desc = layout_descs(data_type, in_sizes, out_sizes, layout, rng)
            desc = dml.Padding1OperatorDesc(in_desc, out_desc, mode, data_type, value, start, end)
            assert "coalesced" in device.compile_operator(device.create_operator(desc)).strategies
            raw_in = random_bits(rng, data_type.numpy, [in_desc.required_elements])
            want = reference.padding1(raw_in.reshape(in_sizes), start, end, mode, value)
            run_every_strategy(device, rng, desc, [in_desc], [raw_in], want)


# ------------------------------------------------------------------ graphs
def test_graph_chain_fuses(device):
    """padding1 > slice > pad > padding1 > reduce: the movement nodes are one kernel, the
    reduce reads through them; fused and node by node give the same bits."""
    g = dml.Graph(device)
    x = g.input([3, 5, 4], dtype=np.int64, name="x")
    a = dml.padding1(x, [1, 2, 0], [0, 1, 3], mode="wrap")
    b = dml.slice(a, [0, 1, 0], [4, 6, 7], [-1, 2, 2])
    c = dml.pad(b, [0, 0, 2], [1, 0, 0], mode="symmetric")
    d = dml.padding1(c, [0, 2, 1], [1, 0, 0], value=2**62 + 1)
    r = dml.reduce(d, "max", axes=[1])
    fused, unfused = g.compile([r, d]), g.compile([r, d], fuse=False)
    assert [s.compiled.name for s in fused.steps] == ["Fused(Padding1>Slice1>Padding>Padding1)", "Reduce"]
    reduce_kernels = len(fused.steps[1].compiled.program.kernels)  # 1 (CPU class: rows), 2 (GPU: columns)
    assert fused.dispatch_count == 1 + reduce_kernels and unfused.dispatch_count == 4 + reduce_kernels
    assert [s.compiled.name for s in g.compile([r]).steps] == ["Fused(Padding1>Slice1>Padding>Padding1>Reduce)"]
    array = random_bits(np.random.default_rng(3), np.int64, (3, 5, 4))
    for got, want in zip(fused({"x": array}), unfused({"x": array}), strict=True):
        assert_bits_equal(got, want)
    want_b = reference.slice(reference.padding1(array, [1, 2, 0], [0, 1, 3], "wrap"), [0, 1, 0], [4, 6, 7],
                              [-1, 2, 2])
    want_d = reference.padding1(reference.pad(want_b, [0, 0, 2], [1, 0, 0], "symmetric"), [0, 2, 1], [1, 0, 0],
                                "constant", 2**62 + 1)
    assert_bits_equal(fused({"x": array})[1], want_d)


# ------------------------------------------------------------------ sweep
RANKS = list(range(1, 9))


def _value(rng, dtype: DT):
    """A value exact in `dtype`, often one that float64 or float32 could not carry."""
    if dtype.is_float:
        return [9.5, math.nan, -0.0, math.inf, 0.1, 2**60 + 2**36 + 1][int(rng.integers(6))]
    info = np.iinfo(dtype.numpy)
    return [int(info.max), int(info.min), int(info.max) - 1, -1 if info.min else 1, 2.0][int(rng.integers(5))]


@pytest.mark.parametrize("rank", RANKS)
@pytest.mark.parametrize("data_type", ALL_TYPES, ids=lambda t: t.name)
def test_sweep_against_reference(device, data_type, rank):
    """Every layout, each with a mode of its own (all five over the sweep), bit for bit; the
    output's gaps keep their bytes."""
    rng = np.random.default_rng([int(data_type), rank, 11])
    for i, layout in enumerate(LAYOUTS):
        mode = MODES[(int(data_type) + rank + i) % len(MODES)]
        in_sizes, start, end = padding_case(rng, rank)
        out_sizes = [n + s + e for n, s, e in zip(in_sizes, start, end, strict=True)]
        in_desc, out_desc = layout_descs(data_type, in_sizes, out_sizes, layout, rng)
        value = _value(rng, data_type)
        desc = dml.Padding1OperatorDesc(in_desc, out_desc, mode, data_type, value, start, end)
        compiled = device.compile_operator(device.create_operator(desc))
        raw_in = random_bits(rng, data_type.numpy, [in_desc.required_elements])
        want = reference.padding1(logical_from_raw(raw_in, in_desc), start, end, mode, value)
        run_and_check(device, rng, compiled, [raw_in], [in_desc], out_desc, want)


# ------------------------------------------------------------------ command line
def test_cli_shader_padding1(capsys):
    from gpudml import cli

    assert cli.main(["shader", "padding1", "--dtype", "INT64", "--shape", "2,3", "--start", "1,0", "--end", "0,2",
                     "--value", "9223372036854775807", "--caps", "gl-cpu"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("// Padding1 at FL_6_4 on profile gl-cpu") and "s0_pad_value_high" in out
    assert cli.main(["shader", "padding1", "--dtype", "INT64", "--value-data-type", "INT32", "--caps", "gpu"]) == 2
    assert "padding_value_data_type INT32 must equal output_tensor.data_type INT64" in capsys.readouterr().err


# ------------------------------------------------------------------ fuzz (run by tests/test_fuzz.py)
def exact_values(draw, data_type: dml.DataType):
    """Values exact in `data_type`: any int in an integer type's range (whole floats too);
    any real for a float type (ints past 2^53, NaN, infinities and -0.0 included)."""
    if data_type.is_float:
        return draw(st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers(-(2**70), 2**70),
                              st.sampled_from([0.0, -0.0, 65504.0, 65520.0, 2**60 + 2**36 + 1, Fraction(1, 3)])))
    info = np.iinfo(data_type.numpy)
    return draw(st.one_of(st.integers(int(info.min), int(info.max)),
                          st.integers(max(int(info.min), -(2**40)), min(int(info.max), 2**40)).map(float),
                          st.sampled_from([int(info.min), int(info.max)])))


@st.composite
def valid_cases(draw) -> Case:
    level, row, rank = support_row(draw, padding1.SUPPORT)
    data_type = type_of(draw, row, "input_tensor")
    mode = draw(st.sampled_from([m for m in dml.PaddingMode if padding.MODE_INTRODUCED[m] <= level]))
    out_sizes = sizes_of(draw, rank)  # input sizes and paddings split them (paddings past the axis fold)
    in_sizes, start, end = [], [], []
    for m in out_sizes:
        n = draw(st.integers(1, m))
        s = draw(st.integers(0, m - n))
        in_sizes += [n]
        start += [s]
        end += [m - n - s]
    value = exact_values(draw, data_type) if mode == dml.PaddingMode.CONSTANT else draw(
        st.sampled_from([0, 5.5, float("nan")]))
    desc = dml.Padding1OperatorDesc(tensor(draw, data_type, in_sizes), tensor(draw, data_type, out_sizes, output=True),
                                    mode, data_type, value, start, end)
    return Case(level, desc, lambda xs: reference.padding1(xs[0], start, end, mode, value), [random_fill])


@st.composite
def broken_fields(draw, desc):
    """(builder, fragment, kind) with one of the operator's own fields broken."""
    rank, i, not_int = pick_axis(draw, desc)
    dt = desc.input_tensor.data_type
    constant = {"padding_mode": dml.PaddingMode.CONSTANT}
    info = np.iinfo(dt.numpy) if not dt.is_float else None
    choices = {
        "start_negative": ("start_padding", {"start_padding": with_entry(desc.start_padding, i, -1)}),
        "end_huge": ("end_padding", {"end_padding": with_entry(desc.end_padding, i, 2**32)}),
        "length": ("start_padding", {"start_padding": list(desc.start_padding) + [0]}),
        "not_int": ("end_padding", {"end_padding": with_entry(desc.end_padding, i, not_int)}),
        "mode": ("padding_mode", {"padding_mode": draw(st.sampled_from([5, -1, "mirror", None]))}),
        "value_type": ("padding_value", {"padding_value": draw(st.sampled_from(["0", None, 1j, False, [0]]))}),
        "value_data_type": ("padding_value_data_type", {"padding_value_data_type": draw(st.sampled_from(
            [t for t in DT if t != dt] + ["FLOAT8", None, 0]))}),
    }
    if info is not None:
        choices["value_fraction"] = ("padding_value", {**constant,
                                                       "padding_value": draw(st.sampled_from([0.5, -1.25]))})
        choices["value_range"] = ("padding_value", {**constant, "padding_value": draw(st.sampled_from(
            [int(info.max) + 1, int(info.min) - 1, math.nan, -math.inf]))})
    kind = draw(st.sampled_from(sorted(choices) + ["output_size"]))
    if kind == "output_size":
        out = with_entry(desc.output_tensor.sizes, i, desc.output_tensor.sizes[i] + 1)
        return replace_fields(desc, output_tensor=dml.TensorDesc(dt, out)), "output_tensor.sizes", kind
    fragment, changes = choices[kind]
    return replace_fields(desc, **changes), fragment, kind


@st.composite
def functional_calls(draw, x, shape):
    """(keyword arguments, expected(x)) for one functional call, some arguments hostile."""
    rank = len(shape)
    start, end = draw_ints(draw, rank, 0, 3), draw_ints(draw, rank, 0, 3)
    mode = draw(st.sampled_from(["constant", "edge", "reflection", "symmetric", "wrap", dml.PaddingMode.CONSTANT]))
    value = draw(st.sampled_from([0, 7, -3, 2**63 - 1, 2**64 - 1, 0.5, float("nan"), -0.0, 2**70]))
    value_type = draw(st.sampled_from([None, None, "float32", DT.INT64, "uint8"]))
    args = {"start_padding": maybe_hostile(draw, start), "end_padding": maybe_hostile(draw, end),
            "mode": maybe_hostile(draw, mode), "value": value, "value_data_type": value_type}
    return args, lambda a: reference.padding1(a, args["start_padding"], args["end_padding"], args["mode"],
                                              args["value"], args["value_data_type"])


FUZZ = OpFuzz(valid_cases(), broken_fields, functional_calls,
              fields=("x", "input_tensor", "start_padding", "end_padding", "mode", "value", "padding_value",
                      "value_data_type", "output_tensor", "device"))
