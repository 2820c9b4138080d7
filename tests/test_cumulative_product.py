"""CumulativeProduct: the tests both cumulative operators share (tests/cumulative_check.py:
the page's examples and tables, every validation rule, the sweep of types x ranks 1-8 x
layouts under both strategies, lines cut into pieces, 200,000-element axes, exact 64-bit
integers, a graph), and the product's own: float16 multiplied in float32 and rounded once,
integer wrap-around, zeros, NaN and infinities."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import assert_bits_equal
from cumulative_check import (
    FIELDS,
    MODES,
    STRATEGIES,
    CumulativeTests,
    broken_fields,
    functional_calls,
    functional_compare,
    run,
    valid_cases,
)
from fuzzkit import OpFuzz

import gpudml as dml
from gpudml.ops import spec_named
from gpudml.testing import assert_within

KEY = "cumulative_product"
SPEC = spec_named(KEY)
T, D = dml.DataType, dml.AxisDirection


class TestCumulativeProduct(CumulativeTests):
    key = KEY
    function = "product"



@pytest.mark.parametrize("strategy", STRATEGIES)
def test_float16_multiplies_in_float32_and_rounds_once(device, strategy):
    """2^20 is beyond float16 (+inf there), but the running product is float32: halving it
    twenty times brings the outputs back to 1."""
    x = np.array([2.0] * 20 + [0.5] * 20, np.float16)
    got = run(device, SPEC, x, 0, strategy)
    assert np.isinf(got[16]) and got[-1] == 1 and got[14] == 2.0**15
    assert_bits_equal(got, SPEC.reference(x, 0))


@pytest.mark.parametrize("dtype", [np.int32, np.uint32])
def test_integers_wrap_in_their_width(device, dtype):
    x = np.array([[65536, 65536, 3, 7], [-1 if dtype == np.int32 else 3, 3, 5, 2**31 - 1]], dtype)
    for strategy in STRATEGIES:
        for direction, exclusive in MODES:
            got = run(device, SPEC, x, 1, strategy, direction, exclusive)
            assert_bits_equal(got, SPEC.reference(x, 1, direction, exclusive))
    assert_bits_equal(run(device, SPEC, x, 1, "runs")[0], np.array([65536, 0, 0, 0], dtype))


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_zeros_nan_and_infinities(device, strategy):
    nan, inf = np.nan, np.inf
    x = np.array([[2, 0, inf, 4], [inf, -2, 0.5, 0], [1, nan, 3, 4], [-inf, -inf, 2, 1]], np.float32)
    for dtype in (np.float32, np.float16):
        for direction, exclusive in MODES:
            got = run(device, SPEC, x.astype(dtype), 1, strategy, direction, exclusive)
            assert_within(got, SPEC.reference(x.astype(dtype), 1, direction, exclusive), 0.0)  # NaN matches NaN


FUZZ = OpFuzz(valid_cases(KEY), broken_fields, functional_calls(KEY), fields=FIELDS, compare=functional_compare(KEY))
