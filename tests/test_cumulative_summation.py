"""CumulativeSummation: the tests both cumulative operators share (tests/cumulative_check.py:
the page's examples and tables, every validation rule, the sweep of types x ranks 1-8 x
layouts under both strategies, lines cut into pieces, 200,000-element axes, exact 64-bit
integers, a graph), and the sum's own: float16 accumulated in float32 and rounded once,
integer wrap-around, NaN and infinities, float32 accuracy on a long axis."""

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
    check,
    functional_calls,
    functional_compare,
    run,
    valid_cases,
)
from fuzzkit import OpFuzz

import gpudml as dml
from gpudml.kernels import scan
from gpudml.ops import spec_named
from gpudml.testing import assert_within

KEY = "cumulative_summation"
SPEC = spec_named(KEY)
T, D = dml.DataType, dml.AxisDirection


class TestCumulativeSummation(CumulativeTests):
    key = KEY
    function = "sum"



@pytest.mark.parametrize("strategy", STRATEGIES)
def test_float16_accumulates_in_float32_and_rounds_once(device, strategy):
    """A float16 running sum of 0.1 would stall at 256 (0.1 is under half a unit there); in
    float32 it reaches 500. Each output rounds once: 65504 + 15 is 65504, + 16 is +inf, and
    back below 65504 the outputs are finite again."""
    x = np.full((2, 5000), 0.1, np.float16)
    check(device, SPEC, x, dml.TensorDesc(T.FLOAT16, x.shape), 1, strategy=strategy)
    got = run(device, SPEC, x, 1, strategy)
    assert float(got[0, -1]) == float(np.float16(5000 * float(np.float16(0.1))))
    y = np.array([65504, 15, 1, -16, -16], np.float16)
    got = run(device, SPEC, y, 0, strategy)
    np.testing.assert_array_equal(got[:4], np.array([65504, 65504, np.inf, 65504], np.float16))
    assert_bits_equal(got, SPEC.reference(y, 0))


@pytest.mark.parametrize("dtype", [np.int32, np.uint32])
def test_integers_wrap_in_their_width(device, dtype):
    info = np.iinfo(dtype)
    x = np.array([[info.max, 1, info.max, 5], [info.min, -1 if dtype == np.int32 else 0, 2, info.max]], dtype)
    for strategy in STRATEGIES:
        for direction, exclusive in MODES:
            got = run(device, SPEC, x, 1, strategy, direction, exclusive)
            assert_bits_equal(got, SPEC.reference(x, 1, direction, exclusive))
    running = np.cumsum([int(v) for v in x[0]]) % 2**32  # Python integers: no wrap until here
    assert_bits_equal(run(device, SPEC, x, 1, "runs")[0], running.astype(np.uint32).view(dtype))


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_nan_and_infinities_propagate(device, strategy):
    nan, inf = np.nan, np.inf
    x = np.array([[1, nan, 3, 4], [inf, -inf, 1, 2], [inf, 1, 2, 3], [-inf, 5, -inf, 1]], np.float32)
    for dtype in (np.float32, np.float16):
        for direction, exclusive in MODES:
            got = run(device, SPEC, x.astype(dtype), 1, strategy, direction, exclusive)
            assert_within(got, SPEC.reference(x.astype(dtype), 1, direction, exclusive), 0.0)  # NaN matches NaN


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_float32_accuracy_on_a_long_axis(device, strategy):
    """200,000 values in [0, 1): every output within the documented bound (scan.rounding_depth
    roundings of the running sum), and within 64 x 2^-24 of the exact running sum (blocks of
    64 elements, carries; measured 5.0e-7 runs, 3.4e-7 tiles), where numpy's own float32
    cumsum, one running sum, drifts to 6.8e-6."""
    x = np.random.default_rng(2024).random((1, 200_000), dtype=np.float32)
    exact = np.cumsum(x.astype(np.float64), axis=1)
    got = run(device, SPEC, x, 1, strategy).astype(np.float64)
    ours = float(np.max(np.abs(got - exact) / exact))
    numpys = float(np.max(np.abs(np.cumsum(x, axis=1).astype(np.float64) - exact) / exact))
    print(f"{strategy}: worst relative error {ours:.2e} (numpy float32 cumsum {numpys:.2e}; documented bound "
          f"{scan.rounding_depth(x.size) * 2.0**-24:.2e})")
    assert ours <= scan.rounding_depth(x.size) * 2.0**-24
    assert ours < 64 * 2.0**-24


@pytest.mark.parametrize("lines", [1, 32, 4096, 1 << 16])
def test_rounding_depth_bounds_the_tiles_plans(lines):
    """Pure: the deepest output of every `tiles` plan (lines side by side where they are
    contiguous, or one per tile), counted from the plan itself: the serial elements, the
    Hillis-Steele steps, the tile carries, the chunk carry (each of a line's Y
    invocations walks every Y-th earlier total, a tree merges the Y), within the bound the
    operators document. Long axes across few lines once went past it (16 M elements over 32
    lines: 1,103 > 966). The autotuner's variants (more lines side by side) stay within it
    too: the plan's own count (`depth`, by which scan.variants filters them) is this one."""
    for n in [2, 1000, 4096, 1 << 16, 1 << 20, 1 << 23, 1 << 24, 1 << 26]:
        for line_stride in {1, lines}:  # lines contiguous (columns) or rows
            lay = scan.ScanLayout(n, (lines,), (1 if line_stride == 1 else n,), (1,), 0, lines if line_stride == 1
                                  else 1, 0, 1)
            for side_by_side in (None, 64, 128, 256):
                t = scan._tiles(lay, lay.in_step, None, side_by_side)
                y = scan.TILE_WORKGROUP // t.lines_per_tile
                depth = (scan.TILE_ELEMENTS + int(np.log2(scan.TILE_WORKGROUP)) + t.tiles_per_chunk
                         + -(-t.chunks // y) + int(np.log2(y)))
                assert t.depth == depth
                if side_by_side is None:
                    assert depth <= scan.rounding_depth(n), (n, lines, t, depth)
            if line_stride == 1 and n * lines < 1 << 31:
                desc = SPEC.infer_output(dml.TensorDesc(dml.DataType.FLOAT32, [n, lines]), 0)
                for option in SPEC.planner.variants(desc, dml.caps.profile("gpu"), "tiles"):
                    t = scan._tiles(lay, lay.in_step, None, option["lines"])
                    assert t.lines_per_tile == option["lines"] and t.depth <= scan.rounding_depth(n), (n, option)


FUZZ = OpFuzz(valid_cases(KEY), broken_fields, functional_calls(KEY), fields=FIELDS, compare=functional_compare(KEY))
