"""FILL_VALUE_CONSTANT and FILL_VALUE_SEQUENCE: what the conformance kit does not cover:
DML_SCALAR_UNION values exact in every type (limits, -0.0, infinities), 64-bit sequences
exact where float64 would round, wrapping integer sequences (the page's UINT8 step of -2),
float sequences at their documented bound, both strategies under both adapter classes, each
validation rule's message."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import assert_bits_equal

import gpudml as dml
from gpudml import reference
from gpudml.ops import spec_named

DT, FL = dml.DataType, dml.FeatureLevel
CONSTANT, SEQUENCE = spec_named("fill_value_constant"), spec_named("fill_value_sequence")
EIGHT = [DT.FLOAT32, DT.FLOAT16, DT.INT32, DT.INT16, DT.INT8, DT.UINT32, DT.UINT16, DT.UINT8]


def _limits(data_type) -> list:
    if data_type.is_float:
        return [-0.0, float("inf"), -float("inf"), float(np.finfo(data_type.numpy).max), 0.1]
    info = np.iinfo(data_type.numpy)
    return [int(info.min), int(info.max), -1 if info.min < 0 else 1]


@pytest.mark.parametrize("data_type", EIGHT, ids=lambda t: t.name)
def test_constant_is_exact_in_every_type(device, data_type):
    """Each type's limits, -0.0 and infinities, bit for bit (0.1 rounds once to the type)."""
    for value in _limits(data_type):
        got = dml.fill_value_constant([2, 1, 3, 5], value, data_type.numpy, device=device)
        want = np.full((2, 1, 3, 5), np.array(value).astype(data_type.numpy), data_type.numpy)
        assert_bits_equal(got, want)


def test_int64_sequences_are_exact_and_wrap(device):
    """start + i * delta in 64-bit wrapping arithmetic, where float64 would round (2^62 + 1 has
    no double); UINT64 and INT64 alike."""
    shape = [3, 7]
    for dtype, start, delta in ((np.int64, 2**62 + 1, 2**61 + 3), (np.int64, -(2**63), -1),
                                (np.uint64, 2**64 - 5, 2**63 + 1), (np.uint64, 7, 2**32 + 1)):
        got = dml.fill_value_sequence(shape, start, delta, dtype, device=device)
        words = [(start + i * delta) % 2**64 for i in range(21)]
        assert_bits_equal(got, np.array(words, np.uint64).view(dtype).reshape(shape))


def test_small_integer_sequences_wrap(device):
    """8-, 16- and 32-bit sequences wrap in their type; an unsigned step may be given as its
    negative (the page's example 2: UINT8 10, 8, 6, 4, ... 254 more after 0)."""
    got = dml.fill_value_sequence([1, 1, 2, 4], 10, -2, np.uint8, device=device)
    assert_bits_equal(got, np.array([10, 8, 6, 4, 2, 0, 254, 252], np.uint8).reshape(1, 1, 2, 4))
    got = dml.fill_value_sequence([1, 1, 1, 5], 127, 1, np.int8, device=device)
    assert_bits_equal(got, np.array([[[[127, -128, -127, -126, -125]]]], np.int8))
    got = dml.fill_value_sequence([1, 1, 1, 3], 2**31 - 1, 2**31 - 1, np.int32, device=device)
    assert_bits_equal(got, np.array([[[[2**31 - 1, -2, 2**31 - 3]]]], np.int32))


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_float_sequences_at_their_bound(device, dtype):
    """f32(i) * delta + start against the float64 value rounded once: within the documented
    bound, which is tight (an accumulator, start + delta + delta + ..., leaves it)."""
    shape = [300, 100]
    start, delta = 0.1, 1 / 3 if dtype == np.float32 else 0.0625
    got = dml.fill_value_sequence(shape, start, delta, dtype, device=device)
    want = reference.fill_value_sequence(shape, start, delta, dtype)
    tolerance = SEQUENCE.tolerance(want, [], {"shape": shape, "start": start, "delta": delta, "dtype": dtype})
    error = np.abs(got.astype(np.float64) - want.astype(np.float64))
    assert np.all(error <= tolerance), float(np.max(error / tolerance))
    if dtype == np.float32:
        accumulated = np.cumsum(np.r_[np.float32(start), np.full(29999, np.float32(delta))], dtype=np.float32)
        assert np.any(np.abs(accumulated - want.reshape(-1)) > tolerance.reshape(-1))
    assert got.reshape(-1)[0] == np.array(start, dtype)  # element 0 is start itself


def test_element_zero_is_start_even_with_an_infinite_step(device):
    got = dml.fill_value_sequence([1, 1, 1, 3], 1.5, float("inf"), np.float32, device=device)
    assert_bits_equal(got, np.array([[[[1.5, np.inf, np.inf]]]], np.float32))


@pytest.mark.any_class  # both classes' Devices made here: the GPU-class run would repeat them
@pytest.mark.parametrize("adapter_class", ["cpu", "gpu"])
def test_both_strategies_under_both_classes(adapter, adapter_class):
    """Each class's order (runs first on the CPU class, elements on the GPU class), and every
    strategy's result the reference's, on a strided output of 64-bit elements."""
    device = dml.Device(adapter=adapter, adapter_class=adapter_class)
    out = dml.TensorDesc(DT.INT64, [3, 5], [10, 1])
    desc = dml.FillValueSequenceOperatorDesc(out, DT.INT64, -(2**40), 2**35 + 7)
    op = device.create_operator(desc)
    first = "runs" if adapter_class == "cpu" else "elements"
    for strategy in ("runs", "elements"):
        compiled = device.compile_operator(op, strategy)
        assert compiled.strategies[0] == first
        (got,) = compiled.execute([])
        got = got.numpy() if isinstance(got, dml.Tensor) else got
        assert_bits_equal(got, reference.fill_value_sequence([3, 5], -(2**40), 2**35 + 7, np.int64))


def _constant(sizes=(1, 1, 2, 4), dtype=DT.FLOAT32, value=1.0, value_type=None):
    return dml.FillValueConstantOperatorDesc(dml.TensorDesc(dtype, sizes), value_type or dtype, value)


def _sequence(sizes=(1, 1, 2, 4), dtype=DT.INT32, start=0, delta=1, value_type=None):
    return dml.FillValueSequenceOperatorDesc(dml.TensorDesc(dtype, sizes), value_type or dtype, start, delta)


@pytest.mark.parametrize("desc, level, message", [
    (lambda: _constant(dtype=DT.UINT8, value=256), FL.FL_6_4,
     "FillValueConstant: value = 256 is outside the range of UINT8 [0, 255]"),
    (lambda: _constant(dtype=DT.INT32, value=10.5), FL.FL_6_4,
     "FillValueConstant: value = 10.5 is not a whole number"),
    (lambda: _constant(value_type=DT.FLOAT16), FL.FL_6_4,
     "FillValueConstant: value_data_type FLOAT16 must equal output_tensor.data_type FLOAT32"),
    (lambda: _constant(sizes=(2, 3)), FL.FL_6_4,
     "FillValueConstant: DimensionCount 2 is not supported at FL_6_4 (supported: 4) (output_tensor.sizes [2, 3])"),
    (lambda: _constant(dtype=DT.INT64, value=1), FL.FL_6_4,
     "FillValueConstant: output_tensor.data_type INT64 is not supported at FL_6_4"),
    (lambda: _constant(), FL.FL_2_0, "FillValueConstant: not available at feature level FL_2_0"),
    (lambda: _sequence(sizes=(6,)), FL.FL_3_1,
     "FillValueSequence: DimensionCount 1 is not supported at FL_3_1 (supported: 4); it needs FL_4_0"),
    (lambda: _sequence(dtype=DT.INT64), FL.FL_4_1,
     "FillValueSequence: output_tensor.data_type INT64 is not supported at FL_4_1"),
    (lambda: _sequence(dtype=DT.UINT8, delta=-129), FL.FL_6_4,
     "FillValueSequence: value_delta = -129 is outside the range of UINT8"),
    (lambda: _sequence(start="1"), FL.FL_6_4, "FillValueSequence: value_start: expected a real number, got '1'"),
])
def test_each_rule_has_its_message(at_level, desc, level, message):
    with pytest.raises(dml.InvalidArgumentError) as info:
        at_level(level).create_operator(desc())
    assert message in str(info.value)


def test_functional_arguments_are_checked(device):
    with pytest.raises(dml.InvalidArgumentError, match=r"fill_value_constant: shape\[1\] = 0 must be >= 1"):
        dml.fill_value_constant([2, 0, 1, 1], 1.0, np.float32, device=device)
    with pytest.raises(dml.InvalidArgumentError, match="fill_value_sequence: dtype: the output.s data type"):
        dml.fill_value_sequence([4], 0, 1, None, device=device)
    with pytest.raises(dml.InvalidArgumentError, match="fill_value_sequence: shape: expected a sequence of integers"):
        dml.fill_value_sequence(4, 0, 1, np.int32, device=device)


def test_run_lengths_within_the_loop_budget(device):
    """The `runs` option: any length up to the loop budget (GL ends loops past 65,535
    iterations); beyond, an UnsupportedError before any GPU work."""
    op = device.create_operator(_sequence(sizes=(1, 1, 3, 7)))
    for run in (1, 5, 64, 32768):
        (got,) = device.compile_operator(op, "runs", options={"run": run}).execute([])
        got = got.numpy() if isinstance(got, dml.Tensor) else got
        assert_bits_equal(got, np.arange(21, dtype=np.int32).reshape(1, 1, 3, 7))
    with pytest.raises(dml.UnsupportedError, match="option run = 32769 passes one invocation's loop budget"):
        device.compile_operator(op, "runs", options={"run": 32769})
