"""Padding1: what the conformance kit (tests/test_conformance.py) does not cover: the
Examples' arguments on the page, each validation rule's message, padding values exact in
their type (and Padding's where both are exact), value type spellings, mode names, every
strategy on block boundaries, a named fused chain, the command line."""

from __future__ import annotations

import math
import re
from fractions import Fraction

import numpy as np
import pytest
from conformance import HIGHEST, Case, RandomDraw, laid_out, page_arrays, page_text, run_every_variant
from conftest import ALL_TYPES, assert_bits_equal, random_bits

import gpudml as dml
from gpudml import examples, reference
from gpudml.ops import padding1

DT = dml.DataType
FL = dml.FeatureLevel
MODES = list(dml.PaddingMode)
PAGE = "ns-directml-dml_padding1_operator_desc.md"
EXAMPLES = [e for e in examples.EXAMPLES if e.operator == "padding1"]


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
def test_examples_arguments_are_the_stored_page():
    """The paddings, modes, value type and value of the Examples are the ones the stored page
    gives (its tensors and tables: the conformance kit)."""
    text = page_text(PAGE)
    assert page_arrays(text, "StartPadding") == [list(e.args["start_padding"]) for e in EXAMPLES]
    assert page_arrays(text, "EndPadding") == [list(e.args["end_padding"]) for e in EXAMPLES]
    assert re.findall(r"^PaddingMode: DML_PADDING_MODE_(\w+)$", text, re.M) == [e.args["mode"].name for e in EXAMPLES]
    assert re.findall(r"^PaddingValueDataType: (\w+)$", text, re.M) == [e.args["value_data_type"].name
                                                                         for e in EXAMPLES]
    assert re.findall(r"^PaddingValue: (\S+)$", text, re.M) == ["9"] and EXAMPLES[0].args["value"] == 9


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


def test_value_ignored_by_other_modes_but_typed(device):
    """Outside CONSTANT a value the type cannot hold is no error and changes nothing (the
    modes give what they give with 0); one that is no real number still is an error."""
    x = np.arange(16, dtype=np.int8).reshape(1, 1, 4, 4)
    for mode in ("edge", "reflection", "symmetric", "wrap"):
        want = reference.padding1(x, [0, 0, 1, 2], [0, 0, 3, 4], mode)
        for dtype, value in ((DT.INT8, 1.5), (DT.INT8, math.nan), (DT.INT8, 0)):
            (got,) = device.compile_operator(device.create_operator(_desc(dtype=dtype, value=value, mode=mode))) \
                .execute([x])
            assert_bits_equal(got, want)
        device.create_operator(_desc(dtype=DT.UINT16, value=math.nan, mode=mode))
    _raises(device, _desc(mode="edge", value=None), "Padding1: padding_value: expected a real number, got None")


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
@pytest.mark.parametrize("level", [FL.FL_5_0, FL.FL_6_3])
def test_rule_wrap_needs_fl_6_4(at_level, level):
    _raises(at_level(level), _desc([2, 2], [5, 5], [1, 1], [2, 2], "wrap", 3, DT.FLOAT16),
            f"Padding1: padding_mode WRAP is not supported at {level.name}; it needs FL_6_4 or later")
    at_level(FL.FL_6_4).create_operator(_desc([2] * 6, [5] * 6, [1] * 6, [2] * 6, "wrap", 3, DT.UINT16))


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


# ------------------------------------------------------------------ every strategy
STRATEGY_CASES = [
    # (input sizes, start, end): rows narrower and wider than a block, paddings past the axis
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
        for layout in ("packed", "strided_output"):
            desc = padding1.infer_output(dml.TensorDesc(data_type, in_sizes), start, end, mode, value)
            desc = laid_out(desc, RandomDraw(rng), layout)
            assert "coalesced" in run_every_variant(device, Case(padding1.SPEC, HIGHEST, desc), int(mode))


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


def _value(rng, dtype: DT):
    """A value exact in `dtype`, often one that float64 or float32 could not carry."""
    if dtype.is_float:
        return [9.5, math.nan, -0.0, math.inf, 0.1, 2**60 + 2**36 + 1][int(rng.integers(6))]
    info = np.iinfo(dtype.numpy)
    return [int(info.max), int(info.min), int(info.max) - 1, -1 if info.min else 1, 2.0][int(rng.integers(5))]


# ------------------------------------------------------------------ command line
def test_cli_shader_padding1(capsys):
    from gpudml import cli

    assert cli.main(["shader", "padding1", "--dtype", "INT64", "--shape", "2,3", "--start", "1,0", "--end", "0,2",
                     "--value", "9223372036854775807", "--caps", "gl-cpu"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("// Padding1 at FL_6_4 for profile gl-cpu") and "s0_pad_value_high" in out
    assert cli.main(["shader", "padding1", "--dtype", "INT64", "--value-data-type", "INT32", "--caps", "gpu"]) == 2
    assert "padding_value_data_type INT32 must equal output_tensor.data_type INT64" in capsys.readouterr().err
