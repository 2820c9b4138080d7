"""What tests/test_cumulative_summation.py and tests/test_cumulative_product.py share: the two
DirectML pages describe one operator with + or x, so each test file subclasses
`CumulativeTests` with its operator's key and adds its own cases, and builds its FUZZ from
the strategies here.

Floats are compared within the operators' documented precision (ops/cumulative.py, the
spec's tolerance), integers bit-exact; every run writes into an output buffer of random
bits, whose bytes outside the output's elements must stay as they were."""

from __future__ import annotations

import dataclasses
import math
import re

import numpy as np
import pytest
from conftest import assert_bits_equal, random_bits
from dml_pages import page_blocks, page_text, support_rows, table_rows
from fuzzkit import Case, maybe_hostile, pick_axis, replace_fields, sizes_of, support_row, tensor, type_of
from hypothesis import strategies as st

import gpudml as dml
from gpudml import caps, cli, compiler
from gpudml.ops import cumulative, spec_named
from gpudml.runtime.tensor import logical_from_raw
from gpudml.tensor_desc import packed_strides
from gpudml.testing import assert_within

T, FL, D = dml.DataType, dml.FeatureLevel, dml.AxisDirection
#: Every data type the two pages' tables list.
TABLE_TYPES = [T.FLOAT32, T.FLOAT16, T.INT32, T.UINT32, T.INT64, T.UINT64]
#: The combination of each operator.
FUNCTION = {"cumulative_summation": "sum", "cumulative_product": "product"}
#: The strategies of both operators.
STRATEGIES = ["runs", "tiles"]
#: (axis_direction, exclusive) in turn.
MODES = [(D.INCREASING, False), (D.DECREASING, True), (D.DECREASING, False), (D.INCREASING, True)]


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
    """Run the description on `raw` (the input's buffer) under `strategy` with plan `options`,
    into a buffer of random bits; the logical output must match the reference within the
    documented precision, and no other byte of the output buffer may change. Returns the
    CompiledOperator."""
    rng = rng or np.random.default_rng(0)
    desc = desc_of(spec, in_desc, axis, direction, exclusive, out_strides)
    compiled = device.compile_operator(device.create_operator(desc), strategy, options=options)
    out_desc = desc.output_tensor
    before = random_bits(rng, out_desc.data_type.numpy, [out_desc.buffer_bytes // out_desc.data_type.size])
    (result,) = compiled.execute([device.tensor(raw, desc=in_desc)], outputs=[device.tensor(before, desc=out_desc)])
    after = result.raw()
    x = logical_from_raw(raw, in_desc)
    want = spec.reference(x, axis, direction, exclusive)
    tolerance = spec.tolerance(want, [x], spec.arguments(desc))
    label = f"{spec.name} {what} {in_desc} axis {axis} {direction.name} exclusive={exclusive} {compiled.strategy}"
    assert_within(logical_from_raw(after, out_desc), want, tolerance, label)
    untouched = np.ones(after.size, dtype=bool)
    untouched[_element_indices(out_desc)] = False
    assert_bits_equal(after[untouched], before[untouched])
    return compiled


def run(device, spec, x, axis, strategy, direction=D.INCREASING, exclusive=False) -> np.ndarray:
    """The operator on the numpy array x (packed) under `strategy`."""
    desc = spec.infer_output(dml.TensorDesc(T.from_numpy(x.dtype), x.shape), axis, direction, exclusive)
    (got,) = device.compile_operator(device.create_operator(desc), strategy).execute([x])
    return got


def _element_indices(desc) -> np.ndarray:
    idx = np.zeros(1, dtype=np.int64)
    for n, s in zip(desc.sizes, desc.effective_strides, strict=True):
        idx = (idx[:, None] + np.arange(n)[None, :] * s).reshape(-1)
    return idx


def layout_of(kind: str, sizes, rng) -> list[int] | None:
    """Input strides: packed (None), padded rows (gaps after every axis), broadcast (stride 0
    on some axes of size > 1), permuted (axes stored in reverse order)."""
    if kind == "packed":
        return None
    if kind == "permuted":
        strides, step = [0] * len(sizes), 1
        for axis in range(len(sizes)):
            strides[axis] = step
            step *= sizes[axis]
        return strides
    strides = list(packed_strides([n + 1 for n in sizes]))
    if kind == "broadcast":
        for axis in rng.choice(len(sizes), size=max(1, len(sizes) // 2), replace=False):
            strides[int(axis)] = 0
    return strides


def _page_accepts(rows, level, rank, data_type) -> bool:
    """Whether the newest of dml_pages.support_rows' rows at or below `level` takes the rank
    and the type for every tensor."""
    below = [row for row in rows if row[0] <= level]
    if not below:
        return False
    _, ranks, types = max(below, key=lambda row: row[0])
    return rank in ranks and all(data_type in listed for _, listed in types)


class CumulativeTests:
    """The tests both operators share; a subclass names the operator's key and function."""

    key: str
    function: str  # "sum" or "product"

    @property
    def spec(self):
        return spec_named(self.key)

    @property
    def exclusive_field(self) -> str:
        return next(f.name for f in dataclasses.fields(self.spec.desc) if f.name.startswith("has_exclusive"))

    @property
    def page_text(self) -> str:
        return page_text(self.spec.examples[0].source)

    def rejects(self, device, desc, *fragments) -> str:
        with pytest.raises(dml.InvalidArgumentError) as info:
            device.create_operator(desc)
        message = str(info.value)
        for fragment in (self.spec.name,) + fragments:
            assert fragment in message, message
        return message

    def small(self, data_type=T.FLOAT32, sizes=(1, 2, 3, 4), axis=3, out_type=None, out_sizes=None):
        out = dml.TensorDesc(out_type or data_type, out_sizes or sizes)
        return self.spec.desc(dml.TensorDesc(data_type, sizes), out, axis, D.INCREASING, False)

    # ------------------------------------------------------------------ the page
    def test_page_examples(self, device):
        for example in self.spec.examples:
            got = dml.FUNCTIONS[self.spec.functional_name](example.input, device=device, **example.args)
            assert_bits_equal(got, example.expected)

    def test_page_example_through_desc_api(self, device):
        """Example 3 (DECREASING) as DirectML's fields spell it."""
        example = self.spec.examples[2]
        x = dml.TensorDesc(T.FLOAT32, [1, 1, 3, 4])
        desc = self.spec.desc(x, x, 3, D.DECREASING, False)
        compiled = device.compile_operator(device.create_operator(desc))
        (out,) = compiled.execute([example.input])
        assert_bits_equal(out, example.expected)

    def test_examples_are_the_pages_numbers(self):
        """Each Example's input, arguments and expected output are what the stored page
        prints (tests/data/pages/)."""
        text = self.page_text
        assert page_blocks(text, "InputTensor: (Sizes:") == [cumulative.PAGE_INPUT.ravel().tolist()]
        blocks = page_blocks(text, "OutputTensor: (Sizes:")
        sections = re.split(r"### Example \d\.", text)[1:]
        assert len(sections) == len(self.spec.examples) == len(blocks)
        for example, section, numbers in zip(self.spec.examples, sections, blocks, strict=True):
            assert f"Axis: {example.args['axis']}\n" in section
            assert f"AxisDirection: DML_AXIS_DIRECTION_{example.args['axis_direction'].upper()}\n" in section
            flag = "".join(word.title() for word in self.exclusive_field.split("_"))
            assert f"{flag}: {'TRUE' if example.args['exclusive'] else 'FALSE'}\n" in section
            assert numbers == example.expected.ravel().tolist(), example.name

    def test_support_table_is_the_pages(self):
        """Every (level, rank, data type) is accepted exactly where the stored page's tables say."""
        rows = support_rows(self.page_text)
        assert rows == table_rows(self.spec.support)
        introduced = re.search(r"introduced in `DML_FEATURE_LEVEL_(\d_\d)`", self.page_text).group(1)
        assert min(r[0] for r in rows) == FL[f"FL_{introduced}"] == self.spec.support.introduced
        for level in FL:
            for rank in range(1, 9):
                for data_type in T:
                    desc = self.small(data_type, (2,) * rank, axis=rank - 1)
                    try:
                        self.spec.validate(desc, level)
                        accepted = True
                    except dml.InvalidArgumentError:
                        accepted = False
                    assert accepted == _page_accepts(rows, level, rank, data_type), (level.name, rank, data_type.name)

    # ------------------------------------------------------------------ validation, one rule each
    def test_rejects_output_type_change(self, at_level):
        self.rejects(at_level(FL.FL_5_0), self.small(out_type=T.FLOAT16),
                     "output_tensor.data_type FLOAT16 must equal input_tensor.data_type FLOAT32")

    def test_rejects_output_sizes_change(self, at_level):
        self.rejects(at_level(FL.FL_5_0), self.small(out_sizes=(1, 2, 4, 4)),
                     "output_tensor.sizes [1, 2, 4, 4] must equal input_tensor.sizes [1, 2, 3, 4]")

    def test_rejects_rank_mismatch(self, at_level):
        self.rejects(at_level(FL.FL_5_0), self.small(out_sizes=(2, 3, 4)), "same DimensionCount",
                     "input_tensor 4, output_tensor 3")

    @pytest.mark.parametrize("axis", [4, 9, -1])
    def test_rejects_axis_outside_the_rank(self, at_level, axis):
        self.rejects(at_level(FL.FL_5_0), self.small(axis=axis),
                     f"axis = {axis} must be less than DimensionCount 4 (and >= 0)")

    @pytest.mark.parametrize("value, shown", [(0.5, "0.5"), ("3", "'3'"), (None, "None"), (True, "True")])
    def test_rejects_non_integer_axis(self, value, shown):
        with pytest.raises(dml.InvalidArgumentError, match=re.escape(f"{self.spec.name}: axis: expected an integer, "
                                                                     f"got {shown}")):
            self.small(axis=value)

    @pytest.mark.parametrize("value", [2, -1, "sideways", None, 0.5])
    def test_rejects_unknown_axis_direction(self, value):
        x = dml.TensorDesc(T.FLOAT32, [4])
        with pytest.raises(dml.InvalidArgumentError,
                           match=re.escape(f"{self.spec.name}: axis_direction: {value!r} is not a AxisDirection "
                                           "(one of INCREASING, DECREASING)")):
            self.spec.desc(x, x, 0, value, False)

    @pytest.mark.parametrize("value", [2, -1, "yes", None, 0.5])
    def test_rejects_exclusive_flag_that_is_not_a_bool(self, value):
        x = dml.TensorDesc(T.FLOAT32, [4])
        field = self.exclusive_field
        with pytest.raises(dml.InvalidArgumentError,
                           match=re.escape(f"{self.spec.name}: {field}: expected a bool (True/False, or 1/0), "
                                           f"got {value!r}")):
            self.spec.desc(x, x, 0, D.INCREASING, value)
        assert getattr(self.spec.desc(x, x, 0, 1, np.True_), field) is True
        assert getattr(self.spec.desc(x, x, 0, "decreasing", 0), field) is False

    @pytest.mark.parametrize("data_type", [T.INT8, T.UINT16, T.FLOAT64])
    def test_rejects_types_no_level_lists(self, at_level, data_type):
        message = self.rejects(at_level(FL.FL_6_4), self.small(data_type),
                               f"input_tensor.data_type {data_type.name} is not supported at FL_6_4 (supported: "
                               "FLOAT32, FLOAT16, UINT32, INT32, UINT64, INT64)")
        assert "needs" not in message

    @pytest.mark.parametrize("data_type", [T.INT64, T.UINT64])
    def test_64_bit_integers_need_fl_5_0(self, at_level, data_type):
        self.rejects(at_level(FL.FL_4_1), self.small(data_type), f"input_tensor.data_type {data_type.name} is not "
                     "supported at FL_4_1 (supported: FLOAT32, FLOAT16, UINT32, INT32)", "it needs FL_5_0 or later")
        at_level(FL.FL_5_0).create_operator(self.small(data_type))

    def test_ranks_other_than_4_need_fl_4_0(self, at_level):
        first = self.spec.support.introduced
        desc = self.small(sizes=(2, 3, 4), axis=2)
        self.rejects(at_level(first), desc, f"DimensionCount 3 is not supported at {first.name} (supported: 4)",
                     "it needs FL_4_0 or later")
        at_level(first).create_operator(self.small())
        at_level(FL.FL_4_0).create_operator(desc)

    def test_not_available_before_its_level(self, at_level):
        first = self.spec.support.introduced
        before = max(lv for lv in FL if lv < first)
        self.rejects(at_level(before), self.small(),
                     f"not available at feature level {before.name} (introduced at {first.name})")

    def test_rejects_aliasing_output(self, at_level):
        x = dml.TensorDesc(T.FLOAT32, [4, 6])
        desc = self.spec.desc(x, dml.TensorDesc(T.FLOAT32, [4, 6], [1, 1]), 1, D.INCREASING, False)
        self.rejects(at_level(FL.FL_5_0), desc, "output_tensor.strides", "share one address")

    # ------------------------------------------------------------------ the functional form
    def test_functional_arguments(self, vulkan_device):
        dev, spec, fn = vulkan_device, self.spec, dml.FUNCTIONS[self.spec.functional_name]
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

    def test_tensor_in_tensor_out_and_no_new_pipelines(self, vulkan_device):
        dev = vulkan_device
        x = values(np.random.default_rng(3), T.FLOAT32, self.function, 60).reshape(3, 4, 5)
        t = dml.FUNCTIONS[self.spec.functional_name](dev.tensor(x), 1)
        assert isinstance(t, dml.Tensor) and t.shape == (3, 4, 5)
        first = t.numpy()
        again = dml.FUNCTIONS[self.spec.functional_name](t, 2, axis_direction="decreasing")  # chained on the GPU
        want = self.spec.reference(first, 2, "decreasing")
        tolerance = self.spec.tolerance(want, [first], {"axis": 2, "axis_direction": "decreasing"})
        assert_within(again.numpy(), want, tolerance, "chained")
        # A new shape of a known kind (the same strategy, under either class: `runs`, the lines
        # too few for `tiles`) compiles nothing.
        dml.FUNCTIONS[self.spec.functional_name](np.ones((3, 4, 9), np.float32), 1, device=dev)
        misses = dev.pipeline_cache_stats.misses
        dml.FUNCTIONS[self.spec.functional_name](np.ones((5, 3, 5), np.float32), 1, device=dev)
        assert dev.pipeline_cache_stats.misses == misses

    def test_cli(self, capsys):
        key, name = self.key, self.spec.name
        assert cli.main(["shader", key, "--shape", "4096,4096", "--axis", "0", "--axis-direction", "decreasing",
                         "--exclusive", "true", "--caps", "gl-cpu"]) == 0
        out = capsys.readouterr().out
        assert f"// {name} at FL_6_4 on profile gl-cpu" in out and "// strategy runs (eligible: runs, tiles)" in out
        assert "fn main" in out
        assert cli.main(["shader", self.spec.functional_name, "--shape", "64,300", "--dtype", "INT64",
                         "--caps", "gpu"]) == 0
        assert "// strategy tiles (eligible: tiles, runs)" in capsys.readouterr().out
        assert cli.main(["shader", key, "--shape", "8", "--exclusive", "maybe", "--caps", "gpu"]) == 2
        assert "--exclusive: 'maybe' is not true or false" in capsys.readouterr().err
        assert cli.main(["examples"]) == 0
        text = capsys.readouterr().out
        assert all(f"== {e.name}: {name} example " in text for e in self.spec.examples)

    # ------------------------------------------------------------------ strategies
    def test_strategy_order_follows_the_adapter_class(self, device):
        desc = self.small(sizes=(64, 300), axis=1)
        assert compiler.compile(desc, caps.profile("gpu")).strategies == ("tiles", "runs")
        for profile in ("vulkan-cpu", "gl-cpu"):
            assert compiler.compile(desc, caps.profile(profile)).strategies == ("runs", "tiles")
        compiled = device.compile_operator(device.create_operator(desc))
        assert compiled.strategy == ("runs" if device.caps.is_software else "tiles")
        # Short lines: a GPU too walks them serially, unless a tile holds 32 of them side by side.
        short = self.small(sizes=(1000, 3), axis=1)
        assert compiler.compile(short, caps.profile("gpu")).strategies == ("runs", "tiles")
        columns = self.small(sizes=(40, 1000), axis=0)
        assert compiler.compile(columns, caps.profile("gpu")).strategies == ("tiles", "runs")
        with pytest.raises(dml.InvalidArgumentError, match="strategy 'scan' cannot run this description; eligible: "):
            device.compile_operator(device.create_operator(desc), "scan")

    @pytest.mark.parametrize("strategy", ["runs", "tiles"])
    def test_pieces_of_a_line_carry_into_each_other(self, device, strategy):
        """Lines cut into several chunks (runs and tiles) by the `chunks` option:
        the second pass starts each piece from the earlier pieces' totals; lines that start
        mid-chunk (odd lengths), columns side by side, both directions, exclusive or not."""
        rng = np.random.default_rng(5)
        # runs: any line of 7 elements or more; tiles: lines of more tiles than pieces (a tile
        # holds 1024 positions of one line, or 32 positions of 32 lines side by side)
        shapes = [((3, 1001), 1), ((700, 8), 0), ((5, 77, 3), 1)] if strategy == "runs" else \
            [((3, 5000), 1), ((700, 40), 0), ((2, 3000, 3), 1)]
        for data_type in (T.FLOAT32, T.INT32, T.UINT64, T.FLOAT16):
            for sizes, axis in shapes:
                in_desc = dml.TensorDesc(data_type, sizes)
                raw = values(rng, data_type, self.function, in_desc.required_elements)
                for pieces in (2, 3, 7):
                    direction, exclusive = MODES[pieces % 4]
                    compiled = check(device, self.spec, raw, in_desc, axis, direction, exclusive, strategy=strategy,
                                     rng=rng, chunks=pieces)
                    first, second = compiled.program.kernels
                    assert (first.params["pass"], second.params["pass"], second.params["carried"]) == \
                        ("totals", "scan", True)

    @pytest.mark.parametrize("strategy", ["runs", "tiles"])
    def test_axis_longer_than_the_loop_budget(self, device, strategy):
        """200,000 elements along the axis: more than one invocation may walk on llvmpipe
        (reduction.LOOP_BUDGET), so the planner cuts the line; along the last axis and along
        the first (lines side by side), both directions."""
        rng = np.random.default_rng(7)
        for data_type in (T.INT32, T.FLOAT32):
            for sizes, axis in (((2, 200_000), 1), ((200_000, 4), 0)):
                in_desc = dml.TensorDesc(data_type, sizes)
                raw = values(rng, data_type, self.function, in_desc.required_elements)
                if data_type.is_float and self.function == "product":
                    raw = rng.uniform(0.9999, 1.0001, raw.size).astype(np.float32)
                for direction, exclusive in MODES[:2]:
                    compiled = check(device, self.spec, raw, in_desc, axis, direction, exclusive, strategy=strategy,
                                     rng=rng)
                    assert len(compiled.program.kernels) == 2, compiled.program.kernels

    @pytest.mark.parametrize("data_type", [T.INT64, T.UINT64])
    def test_64_bit_integers_are_exact_native_and_emulated(self, device, data_type):
        rng = np.random.default_rng(11)
        in_desc = dml.TensorDesc(data_type, [6, 37])
        raw = random_bits(rng, data_type.numpy, [in_desc.required_elements])
        raw[:4] = np.array([2**63 - 1, 2**32 + 1, 2**31, 2**32 - 1], np.uint64).view(data_type.numpy)
        emulated = [{"int64_native": False}] if device.caps.has("shader-int64") else []
        for options in [{}] + emulated:
            for strategy in ("runs", "tiles"):
                for axis in (0, 1):
                    for direction, exclusive in MODES:
                        check(device, self.spec, raw, in_desc, axis, direction, exclusive, strategy=strategy, rng=rng,
                              **options)

    @pytest.mark.parametrize("lines", [1, 2, 64, 256])
    def test_tiles_lines_side_by_side(self, device, lines):
        """Plan option lines: that many contiguous lines share a tile where there are as many
        (a tile then reads lines x element size contiguous bytes per position), else one
        line per tile; within the documented precision (integers exact) either way, and a
        count that is not a power of two up to 256 is an error."""
        rng = np.random.default_rng(lines)
        cases = ((T.FLOAT32, (300, 260), 0), (T.INT32, (3, 70, 2, 33), 1), (T.UINT64, (40, 300), 0),
                 (T.FLOAT16, (9, 130), 0))
        for data_type, sizes, axis in cases:
            in_desc = dml.TensorDesc(data_type, sizes)
            raw = values(rng, data_type, self.function, in_desc.required_elements)
            side_by_side = lines if math.prod(sizes) // sizes[axis] >= lines else 1
            for direction, exclusive in MODES[:2]:
                compiled = check(device, self.spec, raw, in_desc, axis, direction, exclusive, strategy="tiles",
                                 rng=rng, lines=lines)
                assert {k.params["lines_per_tile"] for k in compiled.program.kernels} == {side_by_side}
        operator = device.create_operator(desc_of(self.spec, in_desc, 0))
        with pytest.raises(dml.InvalidArgumentError, match=r"option lines = 3 must be a power of two in \[1, 256\]"):
            device.compile_operator(operator, "tiles", options={"lines": 3})

    def test_chunks_that_do_not_line_up_go_element_by_element(self, device):
        """Where the input's and the output's 16-byte chunks are offset from each other, runs
        falls back to element-wise loads and stores (and stays exact)."""
        rng = np.random.default_rng(13)
        in_desc = dml.TensorDesc(T.INT32, [5, 33], [34, 1])
        raw = random_bits(rng, np.int32, [in_desc.required_elements])
        for out_strides in ([33, 1], [35, 1], [36, 1]):
            for direction, exclusive in MODES:
                compiled = check(device, self.spec, raw, in_desc, 1, direction, exclusive, strategy="runs",
                                 out_strides=out_strides, rng=rng)
                want = "forward" if direction == D.INCREASING else "backward"
                assert compiled.program.kernels[0].params["vec"] == want

    # ------------------------------------------------------------------ sweep against the reference
    @pytest.mark.parametrize("data_type", TABLE_TYPES, ids=lambda t: t.name)
    def test_sweep_against_reference(self, device, data_type):
        """Every type the tables list x every axis of ranks 1-8 x input layouts (packed,
        padded rows, broadcast, permuted) x strided outputs x both directions x exclusive or
        not, under both strategies."""
        rng = np.random.default_rng(int(data_type))
        shapes = {1: (37,), 2: (5, 9), 3: (3, 4, 6), 4: (2, 3, 2, 5), 5: (2, 1, 3, 2, 4), 6: (2, 2, 1, 3, 2, 2),
                  7: (2, 1, 2, 3, 1, 2, 2), 8: (2, 1, 2, 2, 1, 2, 1, 3)}
        kinds = ["packed", "padded", "broadcast", "permuted"]
        for rank, sizes in shapes.items():
            for axis in range(rank):
                kind = kinds[(rank + axis) % 4]
                in_desc = dml.TensorDesc(data_type, sizes, layout_of(kind, sizes, rng))
                raw = values(rng, data_type, self.function, in_desc.required_elements)
                out_strides = packed_strides([n + (axis + d) % 2 for d, n in enumerate(sizes)]) if axis % 2 else None
                direction, exclusive = MODES[(rank + axis) % 4]
                for strategy in ("runs", "tiles"):
                    check(device, self.spec, raw, in_desc, axis, direction, exclusive, strategy=strategy,
                          out_strides=out_strides, rng=rng, what=kind)

    # ------------------------------------------------------------------ graphs
    def test_graph_slice_then_scan(self, device):
        """A slice recorded before the scan: compile() and compile(fuse=False) give the same
        result, and the eager calls' one."""
        g = dml.Graph(device)
        x = g.input([6, 40], dtype=np.float32, name="x")
        window = dml.slice(x, [1, 3], [5, 35], [1, -2])
        y = dml.FUNCTIONS[self.spec.functional_name](window, 1, axis_direction="decreasing", exclusive=True)
        assert y.shape == [5, 18] and y.dtype is T.FLOAT32
        array = values(np.random.default_rng(17), T.FLOAT32, self.function, 240).reshape(6, 40)
        (fused,) = g.compile([y])({"x": array})
        (unfused,) = g.compile([y], fuse=False)({"x": array})
        assert_bits_equal(fused, unfused)
        eager = dml.FUNCTIONS[self.spec.functional_name](dml.slice(array, [1, 3], [5, 35], [1, -2], device=device), 1,
                                     axis_direction="decreasing", exclusive=True, device=device)
        assert_bits_equal(fused, eager)


# ---------------------------------------------------------------------------- fuzz strategies
def valid_cases(key: str):
    """Random valid descriptions of the operator: any level, row, rank, type the table lists,
    fuzzkit's layouts (broadcast inputs, strided outputs), any axis, direction and flag."""
    spec = spec_named(key)
    function = FUNCTION[key]

    @st.composite
    def cases(draw) -> Case:
        level, row, rank = support_row(draw, spec.support)
        data_type = type_of(draw, row, "input_tensor")
        sizes = sizes_of(draw, rank)
        axis = draw(st.integers(0, rank - 1))
        direction = draw(st.sampled_from(list(D)))
        exclusive = draw(st.booleans())
        desc = spec.desc(tensor(draw, data_type, sizes), tensor(draw, data_type, sizes, output=True), axis,
                         direction, exclusive)
        arguments = spec.arguments(desc)

        def fill(rng, dt, count):
            return values(rng, dt, function, count)

        def compare(got, want, xs):
            assert_within(got, want, spec.tolerance(want, xs, arguments), f"{spec.name} {desc}")

        return Case(level, desc, lambda xs: spec.reference(xs[0], **arguments), [fill], compare)

    return cases()


@st.composite
def broken_fields(draw, desc):
    """(builder, fragment, kind) with one of the operator's own fields broken."""
    rank, _, not_int = pick_axis(draw, desc)
    inp, out = desc.input_tensor, desc.output_tensor
    exclusive_field = next(f.name for f in dataclasses.fields(desc) if f.name.startswith("has_exclusive"))
    kind = draw(st.sampled_from(["axis_out", "axis_negative", "axis_type", "direction", "exclusive", "output_type",
                                 "output_sizes", "input_type"]))
    if kind == "axis_out":
        return replace_fields(desc, axis=rank + draw(st.integers(0, 3))), "axis", kind
    if kind == "axis_negative":
        return replace_fields(desc, axis=-draw(st.integers(1, 9))), "axis", kind
    if kind == "axis_type":
        return replace_fields(desc, axis=not_int), "axis", kind
    if kind == "direction":
        return replace_fields(desc, axis_direction=draw(st.sampled_from([2, -1, "sideways", None, 0.5]))), \
            "axis_direction", kind
    if kind == "exclusive":
        return replace_fields(desc, **{exclusive_field: draw(st.sampled_from([2, -1, "yes", None, 0.5]))}), \
            exclusive_field, kind
    if kind == "output_type":
        dt = draw(st.sampled_from([t for t in T if t != inp.data_type]))
        return replace_fields(desc, output_tensor=dml.TensorDesc(dt, out.sizes)), "output_tensor.data_type", kind
    if kind == "output_sizes":
        a = draw(st.integers(0, rank - 1))
        sizes = list(out.sizes)
        sizes[a] += draw(st.integers(1, 3))
        return replace_fields(desc, output_tensor=dml.TensorDesc(out.data_type, sizes)), "output_tensor.sizes", kind
    dt = draw(st.sampled_from([T.INT8, T.UINT8, T.INT16, T.UINT16, T.FLOAT64]))
    both = {"input_tensor": dml.TensorDesc(dt, inp.sizes), "output_tensor": dml.TensorDesc(dt, out.sizes)}
    return replace_fields(desc, **both), "input_tensor.data_type", kind


def functional_calls(key: str):
    """(keyword arguments, expected(x)) for one functional call, some arguments hostile."""
    spec = spec_named(key)

    @st.composite
    def calls(draw, x, shape):
        rank = len(shape)
        axis = maybe_hostile(draw, draw(st.integers(-rank - 1, rank)))
        direction = draw(st.sampled_from(["increasing", "DECREASING", D.DECREASING, 0, 1, "sideways", 7, None]))
        exclusive = draw(st.sampled_from([False, True, 0, 1, np.True_, "yes", 2, None]))
        args = {"axis": axis, "axis_direction": direction, "exclusive": exclusive}
        return args, lambda a: spec.reference(a, axis, direction, bool(exclusive))

    return calls


def functional_compare(key: str):
    """Floats within the documented precision where it promises something: where the
    running sums of |x| (sums), or every factor (products), keep float32 away from its
    range's ends; random bits make the rest overflow or underflow in float32 while the
    reference computes in float64. Integers bit-exact."""
    spec = spec_named(key)
    function = FUNCTION[key]

    def compare(got, want, x, args):
        if want.dtype.kind != "f":
            assert_bits_equal(got, want)
            return
        assert got.dtype == want.dtype and got.shape == want.shape
        axis = int(args["axis"]) % x.ndim
        direction = args["axis_direction"]
        with np.errstate(invalid="ignore", over="ignore"):  # random bits: NaN, infinities
            magnitude = np.abs(x.astype(np.float64))
            if function == "sum":
                tame = cumulative.scan_reference(magnitude, axis, direction, False, "sum") <= 2.0**100
            else:
                wild = ~((magnitude >= 0.5) & (magnitude <= 2.0)) * 1.0
                tame = cumulative.scan_reference(wild, axis, direction, False, "sum") == 0
                tame &= _positions(x.shape, axis, direction) < 100
        tolerance = spec.tolerance(want, [x], {"axis": axis, "axis_direction": direction})
        assert_within(got[tame], want[tame], np.broadcast_to(tolerance, want.shape)[tame], spec.name)

    return compare


def _positions(shape, axis: int, direction) -> np.ndarray:
    """Each element's position along `axis` in scan order."""
    index = np.arange(shape[axis]).reshape([-1 if a == axis else 1 for a in range(len(shape))])
    if D.coerce(direction) == D.DECREASING:
        index = shape[axis] - 1 - index
    return np.broadcast_to(index, shape)


#: The words one of which a rejected functional call's message names.
FIELDS = ("x", "input_tensor", "axis", "axis_direction", "exclusive", "output_tensor", "device")
