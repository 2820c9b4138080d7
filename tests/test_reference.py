"""reference.py (the oracle) against hand-computed cases, numpy's own slicing/padding, and
the WebNN conformance vectors (against the pages' examples: tests/test_conformance.py). No
GPU needed.

Expected values never come from reference.py itself: they are transcribed from
the pages / vectors, written out by hand, or computed by an independent numpy
formulation (basic slicing, np.pad, Python big-integer arithmetic).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import webnn

from gpudml import reference as ref
from gpudml.examples import EXAMPLES
from gpudml.ops import SPECS, spec_named
from gpudml.types import DataType, PaddingMode, ReduceFunction

pytestmark = pytest.mark.any_class  # the numpy references: the same under either adapter class

F = ReduceFunction
ALL_DTYPES = [t.numpy for t in DataType]


def bits(a: np.ndarray) -> np.ndarray:
    """Raw bit patterns, for bit-exact comparisons (NaN payloads, -0.0)."""
    a = np.ascontiguousarray(a)
    return a.view(np.dtype(f"u{a.dtype.itemsize}"))


def assert_bit_equal(actual, expected):
    assert actual.dtype == expected.dtype and actual.shape == expected.shape
    np.testing.assert_array_equal(bits(actual), bits(expected))


def sample(dtype, shape, seed=0) -> np.ndarray:
    """Random bit patterns of `dtype` (NaNs, infinities, -0.0 included for floats)."""
    rng = np.random.default_rng(seed)
    n = int(np.prod(shape)) * np.dtype(dtype).itemsize
    return rng.integers(0, 256, n, dtype=np.uint8).view(dtype).reshape(shape)


# ---------------------------------------------------------------- seed pages


def test_seed_example_inventory():
    """The seed pages' examples, first and in order; every operator's are named key-1, key-2, ...
    in registry order (an operator added later adds its own with nothing to edit here)."""
    names = [e.name for e in EXAMPLES]
    assert names[:11] == [
        "slice1-1",
        "slice1-2",
        "padding-1",
        "padding-2",
        "padding-3",
        "padding-4",
        "reverse_subsequences-1",
        "reverse_subsequences-2",
        "reduce-1",
        "reduce-2",
        "reduce-3",
    ]
    assert names == [f"{s.key}-{i}" for s in SPECS for i in range(1, len(s.examples) + 1)]


# ---------------------------------------------------------------- Slice1


def _numpy_slice(x, offsets, sizes, strides):
    """Slice1 written as numpy basic slicing (an independent formulation)."""
    keys = []
    for o, n, s in zip(offsets, sizes, strides, strict=True):
        if s > 0:
            keys.append(slice(o, o + n, s))
        else:
            keys.append(slice(o + n - 1, o - 1 if o > 0 else None, s))
    return x[tuple(keys)]


@pytest.mark.parametrize("strides", [(1, -1, 2), (-2, -3, -1), (-1, 2, -4), (3, -1, -3)])
def test_slice_negative_strides_match_numpy(strides):
    x = np.arange(5 * 6 * 7, dtype=np.float32).reshape(5, 6, 7)
    offsets, sizes = (1, 0, 2), (4, 6, 5)
    out = ref.slice(x, offsets, sizes, strides)
    np.testing.assert_array_equal(out, _numpy_slice(x, offsets, sizes, strides))


def test_slice_hand_checked_negative_stride():
    x = np.arange(10, dtype=np.int16)
    # window [2, 9), stride -3: start at 8, then 5, 2
    np.testing.assert_array_equal(ref.slice(x, [2], [7], [-3]), np.array([8, 5, 2], np.int16))
    # a shorter output than the maximum takes the first elements
    np.testing.assert_array_equal(ref.slice(x, [2], [7], [-3], output_sizes=[2]), [8, 5])


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_slice_bit_exact_every_dtype(dtype):
    x = sample(dtype, (4, 5, 3), seed=1)
    out = ref.slice(x, [0, 1, 0], [4, 4, 3], [-1, 2, -2])
    assert_bit_equal(out, x[::-1, 1:5:2, ::-2])


def test_slice_rejects_reads_outside_the_window():
    x = np.arange(8)
    with pytest.raises(ValueError):
        ref.slice(x, [0], [4], [-2], output_sizes=[3])  # would read index -1
    with pytest.raises(ValueError):
        ref.slice(x, [0], [4], [0])
    with pytest.raises(ValueError):
        ref.slice(x, [0, 0], [4, 1], [1, 1])  # wrong length


# ---------------------------------------------------------------- Padding


def test_padding_reflection_multi_fold():
    x = np.array([10, 20, 30], np.float32)
    out = ref.pad(x, [5], [5], "reflection")  # period 4: ... 2 1 0 1 2 1 0 ...
    expected = [20, 10, 20, 30, 20, 10, 20, 30, 20, 10, 20, 30, 20]
    np.testing.assert_array_equal(out, np.array(expected, np.float32))


def test_padding_symmetric_multi_fold():
    x = np.array([10, 20, 30], np.int32)
    out = ref.pad(x, [4], [5], PaddingMode.SYMMETRIC)  # period 6: 0 1 2 2 1 0 0 1 2 ...
    expected = [30, 30, 20, 10, 10, 20, 30, 30, 20, 10, 10, 20]
    np.testing.assert_array_equal(out, np.array(expected, np.int32))


def test_padding_edge_larger_than_axis():
    x = np.array([[1, 2]], np.uint8)
    out = ref.pad(x, [1, 3], [2, 2], "edge")
    row = [1, 1, 1, 1, 2, 2, 2]
    np.testing.assert_array_equal(out, np.array([row] * 4, np.uint8))


@pytest.mark.parametrize("mode", ["reflection", "symmetric", "edge"])
def test_padding_single_element_axis(mode):
    x = np.array([[7], [8]], np.float16)  # axis 1 has n == 1: REFLECTION's period is 0
    out = ref.pad(x, [0, 2], [0, 3], mode)
    np.testing.assert_array_equal(out, np.array([[7] * 6, [8] * 6], np.float16))


@pytest.mark.parametrize("mode,np_mode", [("reflection", "reflect"), ("symmetric", "symmetric"), ("edge", "edge")])
def test_padding_matches_numpy_pad(mode, np_mode):
    x = np.arange(3 * 4 * 2, dtype=np.float32).reshape(3, 4, 2)
    pads = [(7, 2), (0, 9), (4, 5)]  # larger than the axes: several folds
    out = ref.pad(x, [p[0] for p in pads], [p[1] for p in pads], mode)
    np.testing.assert_array_equal(out, np.pad(x, pads, mode=np_mode))


def test_padding_constant_hand_checked():
    x = np.array([[1, 2]], np.int32)
    out = ref.pad(x, [1, 0], [0, 1], "constant", 10.6)  # int: truncation toward zero
    np.testing.assert_array_equal(out, np.array([[10, 10, 10], [1, 2, 10]], np.int32))
    neg = ref.pad(x, [0, 1], [0, 0], "constant", -10.6)
    np.testing.assert_array_equal(neg, np.array([[-10, 1, 2]], np.int32))


def test_padding_constant_value_conversion():
    f16 = ref.pad(np.zeros(1, np.float16), [1], [0], "constant", 0.1)
    assert bits(f16)[0] == 0x2E66  # float16 nearest to 0.1
    nan = ref.pad(np.zeros(1, np.float32), [1], [1], "constant", math.nan)
    assert np.isnan(nan[0]) and np.isnan(nan[2]) and nan[1] == 0
    big = ref.pad(np.zeros(1, np.int64), [1], [0], "constant", 2**62 + 1)  # exact int
    assert big[0] == 2**62 + 1
    u8 = ref.pad(np.zeros(1, np.uint8), [1], [0], "constant", 255.9)
    assert u8[0] == 255 and u8.dtype == np.uint8


@pytest.mark.parametrize(
    "dtype,value", [(np.uint8, 256.0), (np.uint8, -1.0), (np.int8, -129.0), (np.int32, math.nan), (np.int64, math.inf)]
)
def test_padding_constant_unrepresentable_value(dtype, value):
    with pytest.raises(ValueError):
        ref.pad(np.zeros(2, dtype), [1], [1], "constant", value)


@pytest.mark.parametrize("dtype", ALL_DTYPES)
@pytest.mark.parametrize("mode,np_mode", [("reflection", "reflect"), ("symmetric", "symmetric")])
def test_padding_bit_exact_every_dtype(dtype, mode, np_mode):
    x = sample(dtype, (3, 4), seed=2)
    out = ref.pad(x, [2, 5], [4, 1], mode)
    assert_bit_equal(out, np.pad(x, [(2, 4), (5, 1)], mode=np_mode))


def test_padding_rejects_wrong_lengths():
    with pytest.raises(ValueError):
        ref.pad(np.zeros((2, 2)), [1], [1, 1])


# ---------------------------------------------------- ReverseSubsequences


def test_reverse_lengths_zero_one_and_beyond():
    x = np.arange(1, 13, dtype=np.int8).reshape(4, 3)  # reverse along axis 0 (n = 4)
    lengths = np.array([[0, 1, 9]], np.uint32)  # 9 clamps to 4
    out = ref.reverse_subsequences(x, lengths, 0)
    expected = np.array([[1, 2, 12], [4, 5, 9], [7, 8, 6], [10, 11, 3]], np.int8)
    np.testing.assert_array_equal(out, expected)


def test_reverse_partial_and_huge_uint64_lengths():
    x = np.arange(10, dtype=np.float64).reshape(2, 5)
    lengths = np.array([[3], [2**63 + 5]], np.uint64)
    out = ref.reverse_subsequences(x, lengths, 1)
    np.testing.assert_array_equal(out, [[2, 1, 0, 3, 4], [9, 8, 7, 6, 5]])


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_reverse_bit_exact_every_dtype(dtype):
    x = sample(dtype, (2, 6), seed=3)
    out = ref.reverse_subsequences(x, np.array([[6], [4]], np.uint32), 1)
    expected = np.concatenate([x[:1, ::-1], np.concatenate([x[1:, 3::-1], x[1:, 4:]], 1)])
    assert_bit_equal(out, expected)


def test_reverse_rejects_bad_lengths_shape():
    with pytest.raises(ValueError):
        ref.reverse_subsequences(np.zeros((2, 3)), np.zeros((2, 3), np.uint32), 1)
    with pytest.raises(ValueError):
        ref.reverse_subsequences(np.zeros((2, 3)), np.array([[-1], [0]]), 1)


# ---------------------------------------------------------------- Reduce


def _wrap(value: int, bits: int, signed: bool) -> int:
    """Python big-integer modulo 2^bits, two's complement when signed."""
    v = value % (1 << bits)
    return v - (1 << bits) if signed and v >= 1 << (bits - 1) else v


def test_reduce_int32_sum_wraps():
    x = np.array([2**31 - 1, 1, 5], np.int32)
    out = ref.reduce(x, "sum")
    assert out.dtype == np.int32 and out.shape == (1,)
    assert out[0] == -(2**31) + 5


def test_reduce_uint32_sum_and_sum_square_wrap():
    assert ref.reduce(np.array([2**32 - 1, 2], np.uint32), F.SUM)[0] == 1
    assert ref.reduce(np.array([65536, 3], np.uint32), F.SUM_SQUARE)[0] == 9


def test_reduce_int64_multiply_wraps_exactly():
    values = [3**39, 3**5, -7, 2**40 + 1]
    expected = _wrap(math.prod(values), 64, signed=True)
    out = ref.reduce(np.array(values, np.int64), F.MULTIPLY)
    assert out.dtype == np.int64 and int(out[0]) == expected
    assert ref.reduce(np.array([2**62, 4], np.int64), F.MULTIPLY)[0] == 0


def test_reduce_int64_sum_and_uint64_multiply_wrap():
    assert ref.reduce(np.array([2**63 - 1, 1], np.int64), F.SUM)[0] == -(2**63)
    values = [2**33 + 7, 2**35 + 11]
    out = ref.reduce(np.array(values, np.uint64), F.MULTIPLY)
    assert int(out[0]) == _wrap(math.prod(values), 64, signed=False)


def test_reduce_int_l1_of_int_min():
    out = ref.reduce(np.array([-(2**31), -1], np.int32), F.L1)
    assert out[0] == _wrap(2**31 + 1, 32, signed=True)  # -2147483647


def test_reduce_int64_min_max_exact():
    x = np.array([2**62 + 1, 2**62, 2**62 + 3, 2**62 + 2], np.int64)  # float64 can't tell apart
    assert int(ref.reduce(x, F.MAX)[0]) == 2**62 + 3
    assert int(ref.reduce(x, F.MIN)[0]) == 2**62


def test_reduce_float16_sum_overflows_to_inf():
    out = ref.reduce(np.array([60000, 60000], np.float16), F.SUM)
    assert out.dtype == np.float16 and np.isposinf(out[0])


def test_reduce_float16_accumulates_wide():
    # float16 step-by-step: 2048 + 1 rounds back to 2048 twice; the wide sum is 2050.
    out = ref.reduce(np.array([2048, 1, 1], np.float16), F.SUM)
    assert out[0] == 2050


def test_reduce_log_sum_exp_large_inputs_finite():
    out = ref.reduce(np.array([1000, 1000], np.float32), F.LOG_SUM_EXP)
    assert np.isfinite(out[0]) and out[0] == np.float32(1000 + math.log(2))
    low = ref.reduce(np.array([-1000, -1000], np.float32), F.LOG_SUM_EXP)
    assert low[0] == np.float32(-1000 + math.log(2))
    inf = ref.reduce(np.array([-np.inf, -np.inf], np.float32), F.LOG_SUM_EXP)
    assert np.isneginf(inf[0])


@pytest.mark.parametrize(
    "function,values,expected",
    [
        (F.AVERAGE, [1, 2, 3, 4], 2.5),
        (F.L2, [3, -4], 5.0),
        (F.L1, [3, -4], 7.0),
        (F.SUM_SQUARE, [3, -4], 25.0),
        (F.MULTIPLY, [2, 3, -4], -24.0),
        (F.MIN, [2, -3, 1], -3.0),
        (F.MAX, [2, -3, 1], 2.0),
        (F.LOG_SUM, [math.e - 1, 1], 1.0),
        (F.SUM, [0.5, 0.25], 0.75),
    ],
)
def test_reduce_float_functions_hand_checked(function, values, expected):
    out = ref.reduce(np.array(values, np.float32), function)
    assert out.dtype == np.float32 and out[0] == np.float32(expected)


def test_reduce_keeps_rank_and_axis_order_irrelevant():
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    a = ref.reduce(x, F.SUM, axes=[2, 0])
    b = ref.reduce(x, F.SUM, axes=[0, 2])
    assert a.shape == (1, 3, 1)
    np.testing.assert_array_equal(a, b)
    # row j sums x[i, j, k] over i, k: 2 * (4 * 4j + 6) + 12 * 4 = 32j + 60
    np.testing.assert_array_equal(a.reshape(-1), [60, 92, 124])


def test_argmax_multi_axis_flat_index():
    x = np.zeros((2, 3, 4), np.float32)
    x[0, 2, 1] = 5  # flat index into the (3, 4) sub-tensor: 2 * 4 + 1 = 9
    x[1, 0, 3] = 5  # 0 * 4 + 3 = 3
    for axes in ([1, 2], [2, 1]):
        out = ref.reduce(x, F.ARGMAX, axes)
        assert out.dtype == np.uint32 and out.shape == (2, 1, 1)
        np.testing.assert_array_equal(out.reshape(-1), [9, 3])
    y = np.zeros((2, 3, 4), np.int16)
    y[1, 2, 3] = -1  # reduced sub-tensor (2, 4) on axes {0, 2}: 1 * 4 + 3 = 7
    out = ref.reduce(y, F.ARGMIN, axes=(2, 0), output_data_type=DataType.INT64)
    assert out.dtype == np.int64
    np.testing.assert_array_equal(out.reshape(-1), [0, 0, 7])


def test_arg_first_occurrence_on_ties():
    assert ref.reduce(np.array([3, 1, 3], np.float32), F.ARGMAX)[0] == 0
    assert ref.reduce(np.array([1, 0, 0], np.uint8), F.ARGMIN)[0] == 1
    assert ref.reduce(np.array([[7, 7], [7, 7]], np.int32), F.ARGMAX, [0, 1])[0, 0] == 0


def test_nan_propagation():
    x = np.array([1, np.nan, 3, np.nan], np.float32)
    assert np.isnan(ref.reduce(x, F.MAX)[0]) and np.isnan(ref.reduce(x, F.MIN)[0])
    assert ref.reduce(x, F.ARGMAX)[0] == 1 and ref.reduce(x, F.ARGMIN)[0] == 1
    assert np.isnan(ref.reduce(x, F.SUM)[0])


def test_reduce_output_data_type_forms():
    x = np.array([[1, 5], [6, 2]], np.float16)
    for t in ("int32", DataType.INT32, 6, np.int32):
        out = ref.reduce(x, "argmax", [1], output_data_type=t)
        assert out.dtype == np.int32 and out.reshape(-1).tolist() == [1, 0]


def test_reduce_rejects_what_it_cannot_compute():
    x = np.arange(4, dtype=np.int32)
    for bad in ([], [1], [0, 0]):
        with pytest.raises(ValueError):
            ref.reduce(x, F.SUM, bad)
    with pytest.raises(ValueError):
        ref.reduce(x, F.AVERAGE)
    with pytest.raises(ValueError):
        ref.reduce(x, F.SUM, output_data_type=DataType.FLOAT32)


# ---------------------------------------------------------------- WebNN

WEBNN = {f: webnn.load(f) for f in webnn.FILES}
WEBNN_CASES = [c for cases, _ in WEBNN.values() for c in cases]


@pytest.mark.parametrize("case", WEBNN_CASES, ids=lambda c: c.name)
def test_webnn_case(case):
    out = spec_named(case.kind).reference(case.inputs[0], **case.args)
    webnn.assert_ulp_close(out, case.expected, case.tolerance, case.name)


def test_webnn_counts():
    """Every vector is used; the only skips are multi-axis reverses as ReverseSubsequences."""
    got = {f: (len(cases), len(skipped)) for f, (cases, skipped) in WEBNN.items()}
    expected = {
        f: (n, 0)
        for f, n in {
            "argmax.json": 30,
            "argmin.json": 30,
            "pad.json": 24,
            "slice.json": 19,
            "reduce_l1.json": 45,
            "reduce_l2.json": 43,
            "reduce_log_sum.json": 39,
            "reduce_log_sum_exp.json": 43,
            "reduce_max.json": 37,
            "reduce_mean.json": 43,
            "reduce_min.json": 37,
            "reduce_product.json": 37,
            "reduce_sum.json": 43,
            "reduce_sum_square.json": 44,
        }.items()
    }
    expected["reverse.json"] = (8 + 2, 6)  # 8 as slice1, 2 of 8 as reverse_subsequences
    assert got == expected
    reasons = {s.reason for _, skipped in WEBNN.values() for s in skipped}
    assert reasons == {"reverses several axes; ReverseSubsequences reverses one axis per operator"}


def test_webnn_nan_pad_correction():
    (case,) = [c for c in WEBNN["pad.json"][0] if c.name in webnn.CORRECTED]
    border = np.ones(case.expected.shape, bool)
    border[1:-1, 1:-1] = False
    assert np.isnan(case.expected[border]).all() and not np.isnan(case.expected[~border]).any()


def test_ulp_distance():
    one = np.float32(1)
    up = np.nextafter(one, np.float32(2))
    assert webnn.ulp_distance(np.array([up]), np.array([one]))[0] == 1
    tiny = np.array([np.float32(1e-45)])
    assert webnn.ulp_distance(tiny, -tiny)[0] == 2  # across zero
    assert webnn.ulp_distance(np.array([-0.0], np.float16), np.array([0.0], np.float16))[0] == 0
    h = np.array([1.0], np.float16)
    assert webnn.ulp_distance(h, np.nextafter(h, np.float16(0)))[0] == 1
    d = np.array([1.0])
    assert webnn.ulp_distance(np.nextafter(d, 2), np.nextafter(d, 0))[0] == 2
    nan = np.array([np.nan, np.nan], np.float32)
    assert webnn.ulp_distance(nan, np.array([np.nan, 1], np.float32)).tolist() == [0, np.inf]
    big = np.array([2**64 - 1], np.uint64)
    assert webnn.ulp_distance(big, np.array([2**64 - 3], np.uint64))[0] == 2
    with pytest.raises(AssertionError):
        webnn.assert_ulp_close(np.array([up]), np.array([one]), 0)
    webnn.assert_ulp_close(np.array([up]), np.array([one]), 1)
