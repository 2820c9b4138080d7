"""ArgMax (DML_ARGMAX_OPERATOR_DESC): the suite it shares with ArgMin (tests/argminmax_suite.py:
its page's examples and tables, every validation rule, the data type x rank x layout sweep
under every strategy on both adapters, the GPU-class strategy's boundaries, ties and NaN in
both directions, a graph reading through a chain), the WebNN argMax vectors, and its fuzz
strategies (run by tests/test_fuzz.py)."""

from __future__ import annotations

import pytest
from argminmax_suite import *  # noqa: F403 (the shared tests, collected here for ArgMax)
from argminmax_suite import FIELDS, broken_fields, check_webnn, functional_calls, valid_cases, webnn_cases
from fuzzkit import OpFuzz

from gpudml.ops import spec_named

SPEC = spec_named("argmax")


@pytest.fixture(scope="module")
def op():
    return SPEC


@pytest.mark.parametrize("x, args, expected", webnn_cases(SPEC))
def test_webnn_argmax_vectors(device, x, args, expected):
    check_webnn(device, SPEC, x, args, expected)


FUZZ = OpFuzz(valid_cases(SPEC), broken_fields(SPEC), functional_calls(SPEC), fields=FIELDS)
