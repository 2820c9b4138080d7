"""WebNN conformance vectors (web-platform-tests) for pad and reverse, run on the GPU.

pad maps 1:1 onto DML_PADDING (beginningPadding -> start_padding, endingPadding ->
end_padding, mode, value). reverse (whole axes) is ReverseSubsequences with every length
equal to the axis size, once per reversed axis, chained on the device; `axes: []` is a copy
(all lengths 0). Data: tests/data/webnn/ (see ATTRIBUTION-pad-reverse.md). The loader is
this file's own, so it does not depend on any shared WebNN helper.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import gpudml as dml
from gpudml import reference

DATA = Path(__file__).parent / "data" / "webnn"
SPECIAL = {"NaN": np.nan, "Infinity": np.inf, "-Infinity": -np.inf}
#: WPT expects 0 in the border where NaN is right (the conformance README; spec: cast(NaN) = NaN).
NAN_VALUE_CASE = "pad float32 2D tensor with options.value as NaN"


def _load(name: str) -> list[dict]:
    return json.loads((DATA / name).read_text())


def _array(operand: dict) -> np.ndarray:
    dtype = np.dtype(operand["dataType"])
    values = [SPECIAL.get(v, v) if isinstance(v, str) else v for v in operand["data"]]
    if dtype.kind == "f":  # round each value to the type, as the WPT harness does
        array = np.array(values, dtype=np.float64).astype(dtype)
    else:
        array = np.array(values, dtype=dtype)  # int64/uint64 values are exact JSON integers
    return array.reshape(operand["shape"])


def _value(value):
    return float(SPECIAL[value]) if isinstance(value, str) else value


PAD_CASES = _load("pad.json")
REVERSE_CASES = _load("reverse.json")


def test_every_vector_is_loaded():
    assert len(PAD_CASES) == 24 and all(c["op"] == "pad" for c in PAD_CASES)
    assert len(REVERSE_CASES) == 8 and all(c["op"] == "reverse" for c in REVERSE_CASES)
    assert all(c["tolerance"] == {"metric": "ULP", "value": 0} for c in PAD_CASES + REVERSE_CASES)


@pytest.mark.parametrize("case", PAD_CASES, ids=lambda c: c["name"])
def test_pad(device, case):
    x = _array(case["inputs"]["padInput"])
    options = case["options"]
    start, end = options["beginningPadding"], options["endingPadding"]
    mode = options.get("mode", "constant")
    value = _value(options.get("value", 0))
    got = dml.pad(x, start, end, mode=mode, value=value, device=device)
    want = _array(case["expected"])
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, reference.pad(x, start, end, mode, value))
    if case["name"] == NAN_VALUE_CASE:
        border = np.pad(np.zeros(x.shape, bool), list(zip(start, end, strict=True)), constant_values=True)
        assert np.all(want[border] == 0)  # what WPT expects
        assert np.all(np.isnan(got[border]))  # what DirectML and the WebNN spec give
        got, want = got[~border], want[~border]
    np.testing.assert_array_equal(got, want)  # 0 ULP: equal values (NaN == NaN)


@pytest.mark.parametrize("case", REVERSE_CASES, ids=lambda c: c["name"])
def test_reverse_as_full_length_reverse_subsequences(device, case):
    x = _array(case["inputs"]["reverseInput"])
    axes = case["options"].get("axes", list(range(x.ndim)))
    t = device.tensor(x)
    for axis in axes or [0]:
        n = x.shape[axis] if axes else 0  # axes [] -> lengths 0: a copy through the GPU
        lengths = np.full([1 if i == axis else s for i, s in enumerate(x.shape)], n, np.uint32)
        t = dml.reverse_subsequences(t, lengths, axis)
    got = t.numpy()
    want = _array(case["expected"])
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)
