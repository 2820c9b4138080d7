"""The WebNN conformance vectors of the reductions and argMin/argMax (tests/data/webnn/, from
web-platform-tests; see its README for provenance and licence) run on the GPU, each adapter.

Mapping (README "WebNN -> DirectML mapping"): reduceX -> Reduce function X over `axes`
(absent: all axes); `axes: []` reduces nothing, which is a reduction over an appended size-1
axis; argMax/argMin -> ARGMAX/ARGMIN over [axis] into `outputDataType` (default int32).
DirectML keeps the rank, so the expected output is reshaped to the keep-rank shape
(keepDimensions=false drops axes, the data order is the same); rank 0 is presented as [1].
Each case passes within its own ULP tolerance (WPT's metric: float bit patterns read as
sign-magnitude integers; integers exactly).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

import gpudml as dml

DATA = Path(__file__).parent / "data" / "webnn"
FUNCTIONS = {
    "reduceL1": "L1", "reduceL2": "L2", "reduceLogSum": "LOG_SUM", "reduceLogSumExp": "LOG_SUM_EXP",
    "reduceMax": "MAX", "reduceMean": "AVERAGE", "reduceMin": "MIN", "reduceProduct": "MULTIPLY",
    "reduceSum": "SUM", "reduceSumSquare": "SUM_SQUARE", "argMax": "ARGMAX", "argMin": "ARGMIN",
}
FILES = ["argmax.json", "argmin.json"] + [f"reduce_{n}.json" for n in (
    "l1", "l2", "log_sum", "log_sum_exp", "max", "mean", "min", "product", "sum", "sum_square")]


def _array(spec: dict) -> np.ndarray:
    """{shape, dataType, data} as numpy; floats rounded to their type as WPT does, the
    special-value strings decoded, 64-bit integers exact."""
    dtype = np.dtype(spec["dataType"])
    special = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}
    data = [special[v] if isinstance(v, str) else v for v in spec["data"]]
    if dtype.kind == "f":
        return np.array(data, np.float64).astype(dtype).reshape(spec["shape"])
    return np.array(data, dtype).reshape(spec["shape"])


def _cases():
    for name in FILES:
        for raw in json.loads((DATA / name).read_text()):
            yield pytest.param(raw, id=raw["name"])


def as_directml(raw: dict):
    """(input, functional-API keyword arguments, keep-rank expected output, ULP tolerance)."""
    (x,) = [_array(spec) for spec in raw["inputs"].values()]
    expected, opts = _array(raw["expected"]), raw["options"]
    args = {"function": FUNCTIONS[raw["op"]]}
    if raw["op"] in ("argMax", "argMin"):
        axes = [opts["axis"]]
        args["output_data_type"] = opts.get("outputDataType", "int32")
    else:
        axes = opts.get("axes")
    if x.ndim == 0:
        x = x.reshape(1)
    if axes is None:
        axes = list(range(x.ndim))
    elif not axes:
        x = x.reshape(x.shape + (1,))
        axes = [x.ndim - 1]
    args["axes"] = axes
    keep_rank = [1 if a in axes else n for a, n in enumerate(x.shape)]
    return x, args, expected.reshape(keep_rank), int(raw["tolerance"]["value"])


def ulp_distance(got: np.ndarray, want: np.ndarray) -> np.ndarray:
    if want.dtype.kind != "f":
        return np.abs(got.astype(object) - want.astype(object)).astype(np.float64)
    bits = {2: np.uint16, 4: np.uint32}[want.dtype.itemsize]
    top = 8 * want.dtype.itemsize - 1

    def key(a):
        b = a.view(bits).astype(np.int64)
        magnitude = b & ((1 << top) - 1)
        return np.where(b >> top, -magnitude, magnitude)

    dist = np.abs(key(got) - key(want)).astype(np.float64)
    dist[np.isnan(got) & np.isnan(want)] = 0
    dist[np.isnan(got) ^ np.isnan(want)] = np.inf
    return dist


@pytest.mark.parametrize("raw", list(_cases()))
def test_webnn_vector(device, raw):
    x, args, expected, tolerance = as_directml(raw)
    got = dml.reduce(x, device=device, **args)
    assert got.dtype == expected.dtype and got.shape == expected.shape, (got.dtype, got.shape, expected.shape)
    dist = ulp_distance(got, expected)
    assert dist.max() <= tolerance, (
        f"{int((dist > tolerance).sum())} element(s) beyond {tolerance} ULP: got {got.ravel()[:6]}, "
        f"expected {expected.ravel()[:6]}, distances {dist.ravel()[:6]}")


def test_every_vector_file_is_used():
    """All 411 reduction and 60 argMin/argMax vectors are collected (none skipped)."""
    counts = {name: len(json.loads((DATA / name).read_text())) for name in FILES}
    assert sum(counts.values()) == 471, counts
