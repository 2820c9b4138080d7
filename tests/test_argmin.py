"""ArgMin (DML_ARGMIN_OPERATOR_DESC): the suite it shares with ArgMax (tests/argminmax_suite.py:
its page's examples and tables, every validation rule, the data type x rank x layout sweep
under every strategy on both adapters, the GPU-class strategy's boundaries, ties and NaN in
both directions, a graph reading through a chain), the WebNN argMin vectors, its fuzz
strategies (run by tests/test_fuzz.py), and ArgMin as the ArgMax of the negation."""

from __future__ import annotations

import numpy as np
import pytest
from argminmax_suite import *  # noqa: F403 (the shared tests, collected here for ArgMin)
from argminmax_suite import (
    FIELDS,
    T,
    broken_fields,
    check_webnn,
    functional_calls,
    tie_values,
    valid_cases,
    webnn_cases,
)
from conftest import assert_bits_equal
from fuzzkit import OpFuzz

import gpudml as dml
from gpudml.ops import spec_named

SPEC = spec_named("argmin")


@pytest.fixture(scope="module")
def op():
    return SPEC


@pytest.mark.parametrize("x, args, expected", webnn_cases(SPEC))
def test_webnn_argmin_vectors(device, x, args, expected):
    check_webnn(device, SPEC, x, args, expected)


FUZZ = OpFuzz(valid_cases(SPEC), broken_fields(SPEC), functional_calls(SPEC), fields=FIELDS)


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int8, np.int32, np.int64])
def test_argmin_is_argmax_of_the_negation(device, dtype):
    """Negating a signed tensor turns its minima into maxima, ties, NaN and -0.0 included
    (the most negative integer, whose negation wraps to itself, is left out): ArgMin of x
    is ArgMax of -x, in both directions, over rows, columns and every axis."""
    rng = np.random.default_rng(int(np.dtype(dtype).itemsize))
    x = tie_values(rng, T.from_numpy(dtype), 40 * 70).reshape(40, 70)
    if np.dtype(dtype).kind == "i":
        x[x == np.iinfo(dtype).min] = 0
    for direction in ("increasing", "decreasing"):
        for axes in ([1], [0], None):
            got = dml.argmin(x, axes, axis_direction=direction, device=device)
            assert_bits_equal(got, dml.argmax(-x, axes, axis_direction=direction, device=device))
