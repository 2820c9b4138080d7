"""CumulativeSummation and CumulativeProduct (two rows of one table, gpudml/ops/cumulative.py:
the pages describe one operator with + or x): what the conformance kit
(tests/test_conformance.py) does not cover. For either operator (the fixture `op`): the
page's Axis, AxisDirection and exclusive flag, each validation rule's message, the
functional form, the pipeline cache across shapes, the command line, the strategies (their
order by adapter class, lines cut into pieces, axes past the loop budget, exact 64-bit
integers, tiles of lines side by side, blocks that do not line up), a graph. Then each
one's own: float16 accumulated or multiplied in float32 and rounded once, integer
wrap-around, zeros, NaN and infinities, float32 accuracy on a long axis, the tiles plans'
rounding depth.

Floats are compared within the operators' documented precision (the spec's tolerance),
integers bit-exact; every run writes into an output buffer of random bits, whose bytes
outside the output's elements must stay as they were."""

from __future__ import annotations

import dataclasses
import math
import re

import numpy as np
import pytest
from conformance import HIGHEST, Case, page_text, run_case
from conftest import assert_bits_equal, random_bits
from isolated import limited_device

import gpudml as dml
from gpudml import caps, cli, compiler
from gpudml.kernels import scan
from gpudml.ops import cumulative, spec_named
from gpudml.testing import assert_within

T, FL, D = dml.DataType, dml.FeatureLevel, dml.AxisDirection
SUM, PRODUCT = spec_named("cumulative_summation"), spec_named("cumulative_product")
#: The combination of each operator.
FUNCTION = {row.functional_name: row.function for row in cumulative.TABLE}
#: The strategies of both operators.
STRATEGIES = ["runs", "tiles"]
#: (axis_direction, exclusive) in turn.
MODES = [(D.INCREASING, False), (D.DECREASING, True), (D.DECREASING, False), (D.INCREASING, True)]


@pytest.fixture(params=[SUM, PRODUCT], ids=lambda spec: spec.key, scope="module")
def op(request):
    """The operator's spec: the tests taking it run for CumulativeSummation and CumulativeProduct."""
    return request.param


def function_of(spec) -> str:
    return FUNCTION[spec.functional_name]


def exclusive_field(spec) -> str:
    return next(f.name for f in dataclasses.fields(spec.desc) if f.name.startswith("has_exclusive"))


def values(rng, data_type: dml.DataType, function: str, count: int) -> np.ndarray:
    """`count` raw elements worth scanning: any bits for integers (they wrap), floats that keep
    sums and products finite (products near 1)."""
    if not data_type.is_float:
        return random_bits(rng, data_type.numpy, [count])
    low, high = (-3.0, 3.0) if function == "sum" else (0.9, 1.1)
    return rng.uniform(low, high, count).astype(data_type.numpy)


def desc_of(spec, in_desc, axis, direction=D.INCREASING, exclusive=False, out_strides=None):
    """The operator's desc for `in_desc` (DirectML's fields), the output packed or strided."""
    out = dml.TensorDesc(in_desc.data_type, in_desc.sizes, out_strides)
    return spec.desc(in_desc, out, axis, direction, exclusive)


def check(device, spec, raw, in_desc, axis, direction=D.INCREASING, exclusive=False, *, strategy=None,
          out_strides=None, rng=None, what="", **options):
    """Run the description on `raw` (the input's buffer) under `strategy` with plan `options`
    (conformance.run_case: the reference's result within the documented precision, no byte
    of the output's buffer but its elements written). Returns the CompiledOperator."""
    desc = desc_of(spec, in_desc, axis, direction, exclusive, out_strides)
    compiled = device.compile_operator(device.create_operator(desc), strategy, options=options)
    label = f"{what} {in_desc} axis {axis} {direction.name} exclusive={exclusive}"
    run_case(device, Case(spec, HIGHEST, desc, contents=[raw]), rng or np.random.default_rng(0), compiled, what=label)
    return compiled


def run(device, spec, x, axis, strategy, direction=D.INCREASING, exclusive=False) -> np.ndarray:
    """The operator on the numpy array x (packed) under `strategy`."""
    desc = spec.infer_output(dml.TensorDesc(T.from_numpy(x.dtype), x.shape), axis, direction, exclusive)
    (got,) = device.compile_operator(device.create_operator(desc), strategy).execute([x])
    return got


def rejects(device, spec, desc, *fragments) -> str:
    with pytest.raises(dml.InvalidArgumentError) as info:
        device.create_operator(desc)
    message = str(info.value)
    for fragment in (spec.name,) + fragments:
        assert fragment in message, message
    return message


def small(spec, data_type=T.FLOAT32, sizes=(1, 2, 3, 4), axis=3, out_type=None, out_sizes=None):
    out = dml.TensorDesc(out_type or data_type, out_sizes or sizes)
    return spec.desc(dml.TensorDesc(data_type, sizes), out, axis, D.INCREASING, False)


# ------------------------------------------------------------------ the page
def test_examples_arguments_are_the_pages(op):
    """Each Example's Axis, AxisDirection and exclusive flag are what the stored page gives
    in its section (the numbers: the conformance kit)."""
    sections = re.split(r"### Example \d\.", page_text(op.examples[0].source))[1:]
    assert len(sections) == len(op.examples)
    flag = "".join(word.title() for word in exclusive_field(op).split("_"))
    for example, section in zip(op.examples, sections, strict=True):
        assert f"Axis: {example.args['axis']}\n" in section
        assert f"AxisDirection: DML_AXIS_DIRECTION_{example.args['axis_direction'].upper()}\n" in section
        assert f"{flag}: {'TRUE' if example.args['exclusive'] else 'FALSE'}\n" in section


# ------------------------------------------------------------------ validation, one rule each
def test_rejects_output_type_change(op, at_level):
    rejects(at_level(FL.FL_5_0), op, small(op, out_type=T.FLOAT16),
            "output_tensor.data_type FLOAT16 must equal input_tensor.data_type FLOAT32")


def test_rejects_output_sizes_change(op, at_level):
    rejects(at_level(FL.FL_5_0), op, small(op, out_sizes=(1, 2, 4, 4)),
            "output_tensor.sizes [1, 2, 4, 4] must equal input_tensor.sizes [1, 2, 3, 4]")


def test_rejects_rank_mismatch(op, at_level):
    rejects(at_level(FL.FL_5_0), op, small(op, out_sizes=(2, 3, 4)), "same DimensionCount",
            "input_tensor 4, output_tensor 3")


@pytest.mark.parametrize("axis", [4, 9, -1])
def test_rejects_axis_outside_the_rank(op, at_level, axis):
    rejects(at_level(FL.FL_5_0), op, small(op, axis=axis),
                 f"axis = {axis} must be less than DimensionCount 4 (and >= 0)")


@pytest.mark.parametrize("value, shown", [(0.5, "0.5"), ("3", "'3'"), (None, "None"), (True, "True")])
def test_rejects_non_integer_axis(op, value, shown):
    with pytest.raises(dml.InvalidArgumentError, match=re.escape(f"{op.name}: axis: expected an integer, "
                                                                 f"got {shown}")):
        small(op, axis=value)


@pytest.mark.parametrize("value", [2, -1, "sideways", None, 0.5])
def test_rejects_unknown_axis_direction(op, value):
    x = dml.TensorDesc(T.FLOAT32, [4])
    with pytest.raises(dml.InvalidArgumentError,
                       match=re.escape(f"{op.name}: axis_direction: {value!r} is not a AxisDirection "
                                       "(one of INCREASING, DECREASING)")):
        op.desc(x, x, 0, value, False)


@pytest.mark.parametrize("value", [2, -1, "yes", None, 0.5])
def test_rejects_exclusive_flag_that_is_not_a_bool(op, value):
    x = dml.TensorDesc(T.FLOAT32, [4])
    field = exclusive_field(op)
    with pytest.raises(dml.InvalidArgumentError,
                       match=re.escape(f"{op.name}: {field}: expected a bool (True/False, or 1/0), "
                                       f"got {value!r}")):
        op.desc(x, x, 0, D.INCREASING, value)
    assert getattr(op.desc(x, x, 0, 1, np.True_), field) is True
    assert getattr(op.desc(x, x, 0, "decreasing", 0), field) is False


def test_rejects_aliasing_output(op, at_level):
    x = dml.TensorDesc(T.FLOAT32, [4, 6])
    desc = op.desc(x, dml.TensorDesc(T.FLOAT32, [4, 6], [1, 1]), 1, D.INCREASING, False)
    rejects(at_level(FL.FL_5_0), op, desc, "output_tensor.strides", "share one address")


# ------------------------------------------------------------------ the functional form
def test_functional_arguments(op, vulkan_device):
    dev, spec, fn = vulkan_device, op, dml.FUNCTIONS[op.functional_name]
    x = np.arange(1, 25, dtype=np.int32).reshape(2, 3, 4)
    for axis in (-1, 2):
        for direction in ("DECREASING", "decreasing", D.DECREASING, 1):
            for exclusive in (True, 1, np.True_):
                got = fn(x, axis, axis_direction=direction, exclusive=exclusive, device=dev)
                assert_bits_equal(got, spec.reference(x, 2, "decreasing", True))
    assert_bits_equal(fn(x, 0, device=dev), spec.reference(x, 0))
    name = spec.functional_name
    for kwargs, message in (({"axis": 3}, f"{name}: axis = 3 is outside [-3, 2] (x has 3 dimensions)"),
                            ({"axis": -4}, f"{name}: axis = -4 is outside [-3, 2]"),
                            ({"axis": 1.0}, f"{name}: axis: expected an integer, got 1.0"),
                            ({"axis": 0, "axis_direction": "up"}, f"{name}: axis_direction: 'up' is not a "
                                                                   "AxisDirection"),
                            ({"axis": 0, "exclusive": "no"}, f"{name}: exclusive: expected a bool")):
        with pytest.raises(dml.InvalidArgumentError, match=re.escape(message)):
            fn(x, device=dev, **kwargs)
    with pytest.raises(dml.InvalidArgumentError, match="input_tensor.data_type INT8 is not supported"):
        fn(x.astype(np.int8), 0, device=dev)


def test_a_new_shape_of_a_known_kind_compiles_nothing(op, adapter):
    """On a pipeline cache of the test's own (nothing compiled before, whatever ran earlier):
    a new shape of a known kind (the same strategy, under either class: `runs`, the lines
    too few for `tiles`) compiles nothing."""
    dev = limited_device(adapter)
    dml.FUNCTIONS[op.functional_name](np.ones((3, 4, 9), np.float32), 1, device=dev)
    misses = dev.pipeline_cache_stats.misses
    assert misses >= 1
    dml.FUNCTIONS[op.functional_name](np.ones((5, 3, 5), np.float32), 1, device=dev)
    assert dev.pipeline_cache_stats.misses == misses


def test_cli(op, capsys):
    key, name = op.key, op.name
    assert cli.main(["shader", key, "--shape", "4096,4096", "--axis", "0", "--axis-direction", "decreasing",
                     "--exclusive", "true", "--caps", "gl-cpu"]) == 0
    out = capsys.readouterr().out
    assert f"// {name} at FL_6_4 for profile gl-cpu" in out and "// strategy runs (eligible: runs, tiles)" in out
    assert "fn main" in out
    assert cli.main(["shader", op.functional_name, "--shape", "64,300", "--dtype", "INT64",
                     "--caps", "gpu"]) == 0
    assert "// strategy tiles (eligible: tiles, runs)" in capsys.readouterr().out
    assert cli.main(["shader", key, "--shape", "8", "--exclusive", "maybe", "--caps", "gpu"]) == 2
    assert "--exclusive: 'maybe' is not true or false" in capsys.readouterr().err


# ------------------------------------------------------------------ strategies
def test_strategy_order_follows_the_adapter_class(op, device):
    desc = small(op, sizes=(64, 300), axis=1)
    assert compiler.compile(desc, caps.profile("gpu")).strategies == ("tiles", "runs")
    for profile in ("vulkan-cpu", "gl-cpu"):
        assert compiler.compile(desc, caps.profile(profile)).strategies == ("runs", "tiles")
    compiled = device.compile_operator(device.create_operator(desc))
    assert compiled.strategy == ("runs" if device.caps.is_software else "tiles")
    # Short lines: a GPU too walks them serially, unless a tile holds 32 of them side by side.
    short = small(op, sizes=(1000, 3), axis=1)
    assert compiler.compile(short, caps.profile("gpu")).strategies == ("runs", "tiles")
    columns = small(op, sizes=(40, 1000), axis=0)
    assert compiler.compile(columns, caps.profile("gpu")).strategies == ("tiles", "runs")
    with pytest.raises(dml.InvalidArgumentError, match="strategy 'scan' cannot run this description; eligible: "):
        device.compile_operator(device.create_operator(desc), "scan")


@pytest.mark.parametrize("strategy", ["runs", "tiles"])
def test_pieces_of_a_line_carry_into_each_other(op, device, strategy):
    """Lines cut into several chunks (runs and tiles) by the `chunks` option:
    the second pass starts each piece from the earlier pieces' totals; lines that start
    mid-block (odd lengths), columns side by side, both directions, exclusive or not."""
    rng = np.random.default_rng(5)
    # runs: any line of 7 elements or more; tiles: lines of more tiles than pieces (a tile
    # holds 1024 positions of one line, or 32 positions of 32 lines side by side)
    shapes = [((3, 1001), 1), ((700, 8), 0), ((5, 77, 3), 1)] if strategy == "runs" else \
        [((3, 5000), 1), ((700, 40), 0), ((2, 3000, 3), 1)]
    for data_type in (T.FLOAT32, T.INT32, T.UINT64, T.FLOAT16):
        for sizes, axis in shapes:
            in_desc = dml.TensorDesc(data_type, sizes)
            raw = values(rng, data_type, function_of(op), in_desc.required_elements)
            for pieces in (2, 3, 7):
                direction, exclusive = MODES[pieces % 4]
                compiled = check(device, op, raw, in_desc, axis, direction, exclusive, strategy=strategy,
                                 rng=rng, chunks=pieces)
                first, second = compiled.program.kernels
                assert (first.params["pass"], second.params["pass"], second.params["carried"]) == \
                    ("totals", "scan", True)


@pytest.mark.parametrize("strategy", ["runs", "tiles"])
def test_axis_longer_than_the_loop_budget(op, device, strategy):
    """200,000 elements along the axis: more than one invocation may walk on llvmpipe
    (reduction.LOOP_BUDGET), so the planner cuts the line; along the last axis and along
    the first (lines side by side), both directions."""
    rng = np.random.default_rng(7)
    for data_type in (T.INT32, T.FLOAT32):
        for sizes, axis in (((2, 200_000), 1), ((200_000, 4), 0)):
            in_desc = dml.TensorDesc(data_type, sizes)
            raw = values(rng, data_type, function_of(op), in_desc.required_elements)
            if data_type.is_float and function_of(op) == "product":
                raw = rng.uniform(0.9999, 1.0001, raw.size).astype(np.float32)
            for direction, exclusive in MODES[:2]:
                compiled = check(device, op, raw, in_desc, axis, direction, exclusive, strategy=strategy,
                                 rng=rng)
                assert len(compiled.program.kernels) == 2, compiled.program.kernels


@pytest.mark.parametrize("data_type", [T.INT64, T.UINT64])
def test_64_bit_integers_are_exact_native_and_emulated(op, device, data_type):
    rng = np.random.default_rng(11)
    in_desc = dml.TensorDesc(data_type, [6, 37])
    raw = random_bits(rng, data_type.numpy, [in_desc.required_elements])
    raw[:4] = np.array([2**63 - 1, 2**32 + 1, 2**31, 2**32 - 1], np.uint64).view(data_type.numpy)
    emulated = [{"int64_native": False}] if device.caps.has("shader-int64") else []
    for options in [{}] + emulated:
        for strategy in ("runs", "tiles"):
            for axis in (0, 1):
                for direction, exclusive in MODES:
                    check(device, op, raw, in_desc, axis, direction, exclusive, strategy=strategy, rng=rng,
                          **options)


@pytest.mark.parametrize("lines", [1, 2, 64, 256])
def test_tiles_lines_side_by_side(op, device, lines):
    """Plan option lines: that many contiguous lines share a tile where there are as many
    (a tile then reads lines x element size contiguous bytes per position), else one
    line per tile; within the documented precision (integers exact) either way, and a
    count that is not a power of two up to 256 is an error."""
    rng = np.random.default_rng(lines)
    cases = ((T.FLOAT32, (300, 260), 0), (T.INT32, (3, 70, 2, 33), 1), (T.UINT64, (40, 300), 0),
             (T.FLOAT16, (9, 130), 0))
    for data_type, sizes, axis in cases:
        in_desc = dml.TensorDesc(data_type, sizes)
        raw = values(rng, data_type, function_of(op), in_desc.required_elements)
        side_by_side = lines if math.prod(sizes) // sizes[axis] >= lines else 1
        for direction, exclusive in MODES[:2]:
            compiled = check(device, op, raw, in_desc, axis, direction, exclusive, strategy="tiles",
                             rng=rng, lines=lines)
            assert {k.params["lines_per_tile"] for k in compiled.program.kernels} == {side_by_side}
    operator = device.create_operator(desc_of(op, in_desc, 0))
    with pytest.raises(dml.InvalidArgumentError, match=r"option lines = 3 must be a power of two in \[1, 256\]"):
        device.compile_operator(operator, "tiles", options={"lines": 3})


def test_blocks_that_do_not_line_up_go_element_by_element(op, device):
    """Where the input's and the output's 16-byte blocks are offset from each other, runs
    falls back to element-wise loads and stores (and stays exact)."""
    rng = np.random.default_rng(13)
    in_desc = dml.TensorDesc(T.INT32, [5, 33], [34, 1])
    raw = random_bits(rng, np.int32, [in_desc.required_elements])
    for out_strides in ([33, 1], [35, 1], [36, 1]):
        for direction, exclusive in MODES:
            compiled = check(device, op, raw, in_desc, 1, direction, exclusive, strategy="runs",
                             out_strides=out_strides, rng=rng)
            want = "forward" if direction == D.INCREASING else "backward"
            assert compiled.program.kernels[0].params["vec"] == want


# ------------------------------------------------------------------ graphs
def test_graph_slice_then_scan(op, device):
    """A slice recorded before the scan: the scan reads it through its prologue (one
    kernel), within the scan's documented precision of the unfused graph, which gives the
    eager calls' result (reading the chain element by element, the scan's subtotals do not
    start where the 16-byte blocks of a packed input would start them)."""
    g = dml.Graph(device)
    x = g.input([6, 40], dtype=np.float32, name="x")
    window = dml.slice(x, [1, 3], [5, 35], [1, -2])
    y = dml.FUNCTIONS[op.functional_name](window, 1, axis_direction="decreasing", exclusive=True)
    assert y.shape == [5, 18] and y.dtype is T.FLOAT32
    array = values(np.random.default_rng(17), T.FLOAT32, function_of(op), 240).reshape(6, 40)
    compiled = g.compile([y])
    assert compiled.dispatch_count == 1 and compiled.steps[0].name == f"Fused(Slice1>{op.name})"
    (fused,) = compiled({"x": array})
    (unfused,) = g.compile([y], fuse=False)({"x": array})
    (window_values,) = g.compile([window], fuse=False)({"x": array})
    arguments = {"axis": 1, "axis_direction": "decreasing", "exclusive": True}
    assert_within(fused, unfused, op.tolerance(unfused, [window_values], arguments))
    eager = dml.FUNCTIONS[op.functional_name](dml.slice(array, [1, 3], [5, 35], [1, -2], device=device), 1,
                                 axis_direction="decreasing", exclusive=True, device=device)
    assert_bits_equal(unfused, eager)


# ------------------------------------------------------------------ CumulativeSummation
@pytest.mark.parametrize("strategy", STRATEGIES)
def test_float16_accumulates_in_float32_and_rounds_once(device, strategy):
    """A float16 running sum of 0.1 would stall at 256 (0.1 is under half a unit there); in
    float32 it reaches 500. Each output rounds once: 65504 + 15 is 65504, + 16 is +inf, and
    back below 65504 the outputs are finite again."""
    x = np.full((2, 5000), 0.1, np.float16)
    check(device, SUM, x, dml.TensorDesc(T.FLOAT16, x.shape), 1, strategy=strategy)
    got = run(device, SUM, x, 1, strategy)
    assert float(got[0, -1]) == float(np.float16(5000 * float(np.float16(0.1))))
    y = np.array([65504, 15, 1, -16, -16], np.float16)
    got = run(device, SUM, y, 0, strategy)
    np.testing.assert_array_equal(got[:4], np.array([65504, 65504, np.inf, 65504], np.float16))
    assert_bits_equal(got, SUM.reference(y, 0))


@pytest.mark.parametrize("dtype", [np.int32, np.uint32])
def test_sums_wrap_in_their_width(device, dtype):
    info = np.iinfo(dtype)
    x = np.array([[info.max, 1, info.max, 5], [info.min, -1 if dtype == np.int32 else 0, 2, info.max]], dtype)
    for strategy in STRATEGIES:
        for direction, exclusive in MODES:
            got = run(device, SUM, x, 1, strategy, direction, exclusive)
            assert_bits_equal(got, SUM.reference(x, 1, direction, exclusive))
    running = np.cumsum([int(v) for v in x[0]]) % 2**32  # Python integers: no wrap until here
    assert_bits_equal(run(device, SUM, x, 1, "runs")[0], running.astype(np.uint32).view(dtype))


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_sums_of_nan_and_infinities(device, strategy):
    nan, inf = np.nan, np.inf
    x = np.array([[1, nan, 3, 4], [inf, -inf, 1, 2], [inf, 1, 2, 3], [-inf, 5, -inf, 1]], np.float32)
    for dtype in (np.float32, np.float16):
        for direction, exclusive in MODES:
            got = run(device, SUM, x.astype(dtype), 1, strategy, direction, exclusive)
            assert_within(got, SUM.reference(x.astype(dtype), 1, direction, exclusive), 0.0)  # NaN matches NaN


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_float32_accuracy_on_a_long_axis(device, strategy):
    """200,000 values in [0, 1): every output within the documented bound (scan.rounding_depth
    roundings of the running sum), and within 64 x 2^-24 of the exact running sum (subtotals of
    64 elements, carries; measured 5.0e-7 runs, 3.4e-7 tiles), where numpy's own float32
    cumsum, one running sum, drifts to 6.8e-6."""
    x = np.random.default_rng(2024).random((1, 200_000), dtype=np.float32)
    exact = np.cumsum(x.astype(np.float64), axis=1)
    got = run(device, SUM, x, 1, strategy).astype(np.float64)
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
                desc = SUM.infer_output(dml.TensorDesc(dml.DataType.FLOAT32, [n, lines]), 0)
                for option in SUM.planner.variants(desc, dml.caps.profile("gpu"), "tiles"):
                    t = scan._tiles(lay, lay.in_step, None, option["lines"])
                    assert t.lines_per_tile == option["lines"] and t.depth <= scan.rounding_depth(n), (n, option)


# ------------------------------------------------------------------ CumulativeProduct
@pytest.mark.parametrize("strategy", STRATEGIES)
def test_float16_multiplies_in_float32_and_rounds_once(device, strategy):
    """2^20 is beyond float16 (+inf there), but the running product is float32: halving it
    twenty times brings the outputs back to 1."""
    x = np.array([2.0] * 20 + [0.5] * 20, np.float16)
    got = run(device, PRODUCT, x, 0, strategy)
    assert np.isinf(got[16]) and got[-1] == 1 and got[14] == 2.0**15
    assert_bits_equal(got, PRODUCT.reference(x, 0))


@pytest.mark.parametrize("dtype", [np.int32, np.uint32])
def test_products_wrap_in_their_width(device, dtype):
    x = np.array([[65536, 65536, 3, 7], [-1 if dtype == np.int32 else 3, 3, 5, 2**31 - 1]], dtype)
    for strategy in STRATEGIES:
        for direction, exclusive in MODES:
            got = run(device, PRODUCT, x, 1, strategy, direction, exclusive)
            assert_bits_equal(got, PRODUCT.reference(x, 1, direction, exclusive))
    assert_bits_equal(run(device, PRODUCT, x, 1, "runs")[0], np.array([65536, 0, 0, 0], dtype))


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_zeros_nan_and_infinities(device, strategy):
    nan, inf = np.nan, np.inf
    x = np.array([[2, 0, inf, 4], [inf, -2, 0.5, 0], [1, nan, 3, 4], [-inf, -inf, 2, 1]], np.float32)
    for dtype in (np.float32, np.float16):
        for direction, exclusive in MODES:
            got = run(device, PRODUCT, x.astype(dtype), 1, strategy, direction, exclusive)
            assert_within(got, PRODUCT.reference(x.astype(dtype), 1, direction, exclusive), 0.0)  # NaN matches NaN


@pytest.mark.parametrize("direction", ["increasing", "decreasing"])
def test_products_whose_partial_products_overflow_are_not_bounded(device, direction):
    """The documented precision holds while no partial product leaves float32's normal range:
    [8e-37, -9e36, 2e5] scanned from its end multiplies -9e36 by 2e5 first (-1.8e42: +-inf in
    any float32 evaluation), so the float64 reference's finite -1.4e6 cannot bind the first
    output; the others keep their bound (the conformance kit's random graphs drew this row)."""
    x = np.array([[8.08e-37, -9.37e36, 1.9e5], [1.5, 2.0, 3.0]], np.float32)
    expected = np.asarray(PRODUCT.reference(x, 1, direction))
    bound = PRODUCT.tolerance(expected, [x], {"axis": 1, "axis_direction": direction})
    # (the second output is -inf exactly, checked exactly; increasing: the run -9e36 x 2e5 before the
    # last output leaves the range too, in a tree's order)
    overflowing = [[True, False, False]] if direction == "decreasing" else [[False, False, True]]
    assert (np.isinf(bound[:1]) == np.array(overflowing)).all() and np.isfinite(bound[1:]).all()
    got = dml.cumulative_product(x, 1, axis_direction=direction, device=device)
    assert_within(got, expected, bound, "CumulativeProduct")
