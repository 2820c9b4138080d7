"""The tests DML_ARGMAX and DML_ARGMIN share, written once for either operator.

tests/test_argmax.py and tests/test_argmin.py import these test functions and define the
fixture `op` (the operator's spec), so that each file runs the whole suite for its own
operator: the page's examples (on both adapters, through the desc API, in `gpudml
examples`, checked against the page's text in tests/data/pages/), its support tables
(parsed from the page), one test per validation rule, the data type x rank 1-8 x layout
sweep under every strategy, the boundaries of the GPU-class strategy, ties and NaN in
both directions, a graph reading through a data-movement chain, and the WebNN vectors.
The fuzz strategies (`valid_cases`, `broken_fields`, `functional_calls`) are built here
for either spec; each test file declares its FUZZ with them.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path

import numpy as np
import pytest
import webnn
from conftest import assert_bits_equal, bits, random_bits
from fuzzkit import (
    REDUCED_AXES_KINDS,
    Case,
    broken_reduced_axes,
    maybe_hostile,
    replace_fields,
    sizes_of,
    support_row,
    tensor,
    type_of,
)
from hypothesis import strategies as st

import gpudml as dml
from gpudml import caps, cli, compiler, fusion
from gpudml.kernels import reduction
from gpudml.runtime import CompiledOperator, Operator
from gpudml.runtime.tensor import logical_from_raw
from gpudml.tensor_desc import packed_strides

#: The shared tests: a test file that imports them (`from argminmax_suite import *`) collects them.
__all__ = [
    "test_page_examples",
    "test_page_example_through_the_desc_api",
    "test_examples_are_the_pages_numbers",
    "test_gpudml_examples_runs_them",
    "test_gpudml_shader",
    "test_support_table_is_the_pages",
    "test_validation_rule",
    "test_what_the_rules_accept",
    "test_desc_fields_are_checked_when_built",
    "test_functional_arguments",
    "test_sweep_against_reference",
    "test_strategies_by_adapter_class",
    "test_workgroup_boundaries",
    "test_long_rows_stay_within_the_loop_budget",
    "test_nan_and_ties_in_both_directions",
    "test_increasing_is_reduce_with_argmax_or_argmin",
    "test_a_graph_reads_through_a_chain",
]

T, FL, D = dml.DataType, dml.FeatureLevel, dml.AxisDirection
PAGES = Path(__file__).parent / "data" / "pages"
INDEX_TYPES = [T.INT64, T.INT32, T.UINT64, T.UINT32]
INPUT_TYPES = [t for t in T if t != T.FLOAT64]
#: Words one of which a rejected functional call's message names (fuzzkit.OpFuzz.fields).
FIELDS = ("x", "input_tensor", "axes", "axis_direction", "output_data_type", "output_tensor", "device")


def page_text(op) -> str:
    return (PAGES / f"ns-directml-{op.page.lower()}.md").read_text(encoding="utf-8")


def desc_of(op, x_desc, axes, direction="increasing", out_type="INT64", out_strides=None):
    """The desc the functional call with these arguments runs, with an output layout of its own."""
    desc = op.infer_output(x_desc, axes, direction, out_type)
    if out_strides is None:
        return desc
    out = desc.output_tensor
    return op.desc(x_desc, dml.TensorDesc(out.data_type, out.sizes, out_strides), desc.axes, desc.axis_direction)


def check_every_strategy(device, op, desc, raw, **options) -> tuple[str, ...]:
    """Run `desc` on buffer contents `raw` under each strategy that can run it (with plan
    `options`) and compare each with the reference, exactly; the strategies come back."""
    x = logical_from_raw(raw, desc.input_tensor)
    want = op.reference(x, **op.arguments(desc))
    operator = device.create_operator(desc)
    strategies = device.compile_operator(operator, options=options).strategies
    for strategy in strategies:
        (got,) = device.compile_operator(operator, strategy, options=options).execute([raw])
        assert got.dtype == want.dtype and np.array_equal(bits(got), bits(want)), (strategy, options, desc, got, want)
    return strategies


def tie_values(rng, data_type: dml.DataType, count: int) -> np.ndarray:
    """`count` elements drawn from five bit patterns: three random ones (NaN, infinities
    and -0.0 among them for floats), zero, and the sign bit alone (-0.0, or an integer
    type's most negative value / 2^(bits-1)): many ties, in every kind of value."""
    item = data_type.size
    pool = random_bits(rng, data_type.numpy, [5])
    pool[3:] = np.array([0, 1 << (8 * item - 1)], np.dtype(f"u{item}")).view(data_type.numpy)
    return pool[rng.integers(0, 5, count)]


def bottom_values(op, data_type: dml.DataType, count: int) -> np.ndarray:
    """`count` elements at the bottom of the operator's order (every element beats or ties
    them: what the kernels start from): the smallest value for ArgMax, the largest for
    ArgMin, infinities for floats."""
    largest = op.desc.FUNCTION == "ARGMIN"
    if data_type.is_float:
        value = np.inf if largest else -np.inf
    else:
        info = np.iinfo(data_type.numpy)
        value = info.max if largest else info.min
    return np.full(count, value, data_type.numpy)


# ------------------------------------------------------------------ the page's examples
def test_page_examples(device, op):
    for example in op.examples:
        got = dml.FUNCTIONS[op.functional_name](example.input, device=device, **example.args)
        assert_bits_equal(got, example.expected)


def test_page_example_through_the_desc_api(device, op):
    """Example 3 (every axis) as the page writes its description, axes in either order."""
    for axes in ([0, 1], [1, 0]):
        desc = op.desc(input_tensor=dml.TensorDesc(T.FLOAT32, [3, 3]), output_tensor=dml.TensorDesc(T.UINT32, [1, 1]),
                       axes=axes, axis_direction=D.INCREASING)
        (got,) = device.compile_operator(device.create_operator(desc)).execute([op.examples[2].input])
        assert_bits_equal(got, op.examples[2].expected)


def _numbers_after(text: str, marker: str) -> list[list[int]]:
    """The numbers of each code block's tensor printed after `marker` (`// comments` dropped)."""
    blocks = []
    for chunk in text.split(marker)[1:]:
        body = re.sub(r"//[^\n]*", "", chunk.split("```")[0].split(")", 1)[1])
        blocks.append([int(v) for v in re.findall(r"-?\d+", body)])
    return blocks


def test_examples_are_the_pages_numbers(op):
    """The transcribed inputs and outputs are the ones the page prints (tests/data/pages/):
    three examples on one input, and the two of the AxisDirection field."""
    text = page_text(op)
    table, ties = op.examples[:3], op.examples[3:]
    assert _numbers_after(text, "InputTensor: (Sizes:") == [e.input.ravel().astype(int).tolist() for e in table[:1]]
    assert all(e.input is table[0].input for e in table)
    assert _numbers_after(text, "OutputTensor: (Sizes:") == [e.expected.ravel().tolist() for e in table]
    assert all(e.args["output_data_type"] == "UINT32" for e in table) and text.count("DataType:UINT32") == 3
    for e in ties:
        direction = e.args["axis_direction"].upper()
        values = ",".join(str(int(v)) for v in e.input)
        line = next(s for s in text.splitlines() if f"DML_AXIS_DIRECTION_{direction}**" in s)
        assert line.endswith(f"`{op.key}({{{values}}}) = {int(e.expected[0])}`)"), line


def test_gpudml_examples_runs_them(capsys, op):
    assert cli.main(["examples"]) == 0
    text = capsys.readouterr().out
    assert all(f"== {e.name}: {op.name} example " in text for e in op.examples)


def test_gpudml_shader(capsys, op):
    assert cli.main(["shader", op.key, "--axes", "0,2", "--shape", "3,4,5", "--dtype", "INT8", "--axis-direction",
                     "decreasing", "--output-data-type", "UINT64", "--strategy", "workgroup", "--caps", "gl-cpu"]) == 0
    out = capsys.readouterr().out
    assert "var<workgroup> lanes" in out and "b.i > a.i" in out  # ties go to the larger index
    assert cli.main(["shader", op.key, "--axes", "1", "--shape", "4096,4096"]) == 0
    assert "fn main" in capsys.readouterr().out
    assert cli.main(["shader", op.key, "--axis-direction", "sideways"]) == 2
    assert "axis_direction: 'sideways' is not a AxisDirection (one of INCREASING, DECREASING)" in \
        capsys.readouterr().err


# ------------------------------------------------------------------ the support tables
def page_support(text: str):
    """(introducing level, [(level, {tensor: (ranks, types)})]) as the page's Availability
    and Tensor support sections state them."""
    major, minor = re.search(r"introduced in `DML_FEATURE_LEVEL_(\d)_(\d)`", text).groups()
    rows = []
    for m in re.finditer(r"### DML_FEATURE_LEVEL_(\d)_(\d) and above\n(.*?)(?=\n###|\Z)", text, re.S):
        tensors = {}
        for line in m.group(3).splitlines():
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if cells[0] in ("InputTensor", "OutputTensor"):
                lo, _, hi = cells[2].partition(" to ")
                tensors[cells[0]] = (range(int(lo), int(hi or lo) + 1), {T[n.strip()] for n in cells[3].split(",")})
        rows.append((FL[f"FL_{m.group(1)}_{m.group(2)}"], tensors))
    return FL[f"FL_{major}_{minor}"], sorted(rows, reverse=True)


def _page_accepts(support, level, rank, in_type, out_type) -> bool:
    introduced, rows = support
    row = next((tensors for lv, tensors in rows if lv <= level), None)
    if level < introduced or row is None:
        return False
    (in_ranks, in_types), (out_ranks, out_types) = row["InputTensor"], row["OutputTensor"]
    return rank in in_ranks and rank in out_ranks and in_type in in_types and out_type in out_types


def test_support_table_is_the_pages(op):
    """Every (level, rank, input type, output type) is accepted exactly where the page's
    tables say (read from the stored page, not from the module)."""
    support = page_support(page_text(op))
    assert support[0] == FL.FL_3_0 and [lv for lv, _ in support[1]] == [FL.FL_4_1, FL.FL_3_0]
    for level in FL:
        for rank in range(1, 9):
            sizes = (2,) * rank
            for in_type in T:
                for out_type in T:
                    desc = op.desc(dml.TensorDesc(in_type, sizes), dml.TensorDesc(out_type, (1,) + sizes[1:]), (0,),
                                   D.INCREASING)
                    try:
                        op.validate(desc, level)
                        accepted = True
                    except dml.InvalidArgumentError:
                        accepted = False
                    assert accepted == _page_accepts(support, level, rank, in_type, out_type), \
                        (level.name, rank, in_type.name, out_type.name)


# ------------------------------------------------------------------ validation, rule by rule
def _desc(op, in_type=T.FLOAT32, sizes=(2, 3, 4, 5), axes=(3,), out_type=T.INT64, out_sizes=None, out_strides=None,
          direction=D.INCREASING, in_strides=None):
    out_sizes = out_sizes or [1 if i in axes else n for i, n in enumerate(sizes)]
    return op.desc(dml.TensorDesc(in_type, sizes, in_strides), dml.TensorDesc(out_type, out_sizes, out_strides),
                   axes, direction)


RULES = {
    # rule: (description arguments, level, fragments of the message)
    "below FL 3_0": ({}, FL.FL_2_1, ["not available at feature level FL_2_1 (introduced at FL_3_0)"]),
    "64-bit input before FL 4_1": ({"in_type": T.INT64}, FL.FL_4_0,
                                   ["input_tensor.data_type INT64 is not supported at FL_4_0",
                                    "it needs FL_4_1 or later"]),
    "FLOAT64 input": ({"in_type": T.FLOAT64}, FL.FL_6_4, ["input_tensor.data_type FLOAT64 is not supported at FL_6_4",
                                                          "(supported: FLOAT32, FLOAT16, UINT32"]),
    "non-index output type": ({"out_type": T.FLOAT32}, FL.FL_6_4,
                              ["output_tensor.data_type FLOAT32 is not supported at FL_6_4",
                               "(supported: UINT32, INT32, UINT64, INT64)"]),
    "16-bit output type": ({"out_type": T.UINT16}, FL.FL_3_0, ["output_tensor.data_type UINT16 is not supported"]),
    "ranks differ": ({"out_sizes": [2, 3, 4]}, FL.FL_6_4,
                     ["all tensors must have the same DimensionCount (got input_tensor 4, output_tensor 3)"]),
    "no axis": ({"axes": ()}, FL.FL_6_4, ["axes must name at least one axis (AxisCount is 0)"]),
    "axis beyond the rank": ({"axes": (1, 4), "out_sizes": [2, 1, 4, 5]}, FL.FL_6_4,
                             ["axes[1] = 4 is outside [0, 3] (DimensionCount 4)"]),
    "negative axis": ({"axes": (-1,), "out_sizes": [2, 3, 4, 1]}, FL.FL_6_4, ["axes[0] = -1 is outside [0, 3]"]),
    "repeated axis": ({"axes": (3, 1, 3), "out_sizes": [2, 1, 4, 1]}, FL.FL_6_4,
                      ["axes[2] = 3 repeats an axis (axes [3, 1, 3])"]),
    "reduced output size": ({"out_sizes": [2, 3, 4, 5]}, FL.FL_6_4,
                            ["output_tensor.sizes[3] = 5 must be 1 on reduced axis 3"]),
    "kept output size": ({"out_sizes": [2, 4, 4, 1]}, FL.FL_6_4,
                         ["output_tensor.sizes[1] = 4 must equal input_tensor.sizes[1] = 3 on kept axis 1"]),
    "aliasing output": ({"out_strides": [0, 4, 1, 1]}, FL.FL_6_4, ["output_tensor.strides", "share one address"]),
    "bad input tensor": ({"sizes": (2, 0, 4, 5)}, FL.FL_6_4, ["input_tensor.sizes[1] = 0 must be >= 1"]),
    "INT32 cannot hold the index": ({"sizes": (1, 2**16, 2**15 + 1), "in_strides": [0, 0, 0], "axes": (1, 2),
                                     "out_type": T.INT32}, FL.FL_6_4,
                                    ["output_tensor.data_type INT32 cannot hold index 2147549183",
                                     "hold 2147549184 elements; at most 2147483648"]),
}


@pytest.mark.parametrize("rule", list(RULES))
def test_validation_rule(at_level, op, rule):
    arguments, level, fragments = RULES[rule]
    with pytest.raises(dml.InvalidArgumentError) as info:
        at_level(level).create_operator(_desc(op, **arguments))
    message = str(info.value)
    assert message.startswith(f"{op.name}: "), message
    for fragment in fragments:
        assert fragment in message, message


def test_what_the_rules_accept(at_level, op):
    """The edges of the rules: 64-bit inputs from FL 4_1, every index type from FL 3_0, an
    INT32 output holding index 2^31 - 1 exactly, UINT32 beyond it."""
    at_level(FL.FL_4_1).create_operator(_desc(op, T.UINT64, out_type=T.INT32))
    for out_type in INDEX_TYPES:
        at_level(FL.FL_3_0).create_operator(_desc(op, T.INT8, out_type=out_type, direction=D.DECREASING))
    at_level(FL.FL_3_0).create_operator(_desc(op, sizes=(1, 2**16, 2**15), in_strides=[0, 0, 0], axes=(1, 2),
                                              out_type=T.INT32))
    at_level(FL.FL_3_0).create_operator(_desc(op, sizes=(1, 2**16, 2**15 + 1), in_strides=[0, 0, 0], axes=(1, 2),
                                              out_type=T.UINT32))


def test_desc_fields_are_checked_when_built(op):
    with pytest.raises(dml.InvalidArgumentError, match=re.escape(
            f"{op.name}: axis_direction: 2 is not a AxisDirection (one of INCREASING, DECREASING)")):
        _desc(op, direction=2)
    with pytest.raises(dml.InvalidArgumentError, match=f"{op.name}: axes"):
        _desc(op, axes=[0.5])
    assert _desc(op, direction="decreasing").axis_direction is D.DECREASING
    assert _desc(op, axes=np.array([3])).axes == (3,)


def test_functional_arguments(vulkan_device, op):
    dev = vulkan_device
    x = np.array([[[5, 1, 5], [2, 7, 7]], [[0, 0, 9], [9, 3, 3]]], np.int16)
    got = dml.FUNCTIONS[op.functional_name](x, device=dev)  # every axis; INT64; increasing
    assert got.dtype == np.int64 and got.shape == (1, 1, 1)
    np.testing.assert_array_equal(got, op.reference(x))
    for axes in (-1, [0, -1], 1, [2, 0]):
        for direction in ("decreasing", "DECREASING", D.DECREASING, 1):
            for out_type in ("int32", np.uint64, T.UINT32, "INT64"):
                got = dml.FUNCTIONS[op.functional_name](x, axes, axis_direction=direction, output_data_type=out_type,
                                                        device=dev)
                assert got.dtype == T.parse(out_type).numpy
                np.testing.assert_array_equal(got, op.reference(x, axes, "decreasing", out_type), err_msg=str(axes))
    tensor = dml.FUNCTIONS[op.functional_name](dev.tensor(x), [2], axis_direction="decreasing")  # Tensor in, Tensor out
    assert isinstance(tensor, dml.Tensor) and tensor.shape == (2, 2, 1)
    np.testing.assert_array_equal(tensor.numpy(), op.reference(x, [2], "decreasing"))
    key = op.key
    for kwargs, message in (({"axes": [3]}, f"{key}: axes[0] = 3 is outside [-3, 2] (x has 3 dimensions)"),
                            ({"axes": [2, -1]}, f"{key}: axes [2, -1] name axis 2 twice"),
                            ({"axes": []}, f"{op.name}: axes must name at least one axis"),
                            ({"axis_direction": "up"}, f"{key}: axis_direction: 'up' is not a AxisDirection"),
                            ({"output_data_type": "FLOAT32"}, f"{op.name}: output_tensor.data_type FLOAT32 is not "
                                                              "supported at FL_6_4"),
                            ({"output_data_type": "INT65"}, f"{key}: output_data_type: 'INT65' is not a DataType")):
        with pytest.raises(dml.InvalidArgumentError, match=re.escape(message)):
            dml.FUNCTIONS[op.functional_name](x, device=dev, **kwargs)


# ------------------------------------------------------------------ the sweep
#: Largest size per axis by rank: a few hundred to a few thousand elements.
MAX_SIZE = {1: 300, 2: 40, 3: 12, 4: 7, 5: 5, 6: 4, 7: 3, 8: 3}
LAYOUTS = ("packed", "padded rows", "broadcast", "strided output")


def _sweep_case(rng, data_type, rank, layout):
    """(input desc, reduced axes, output strides or None) for one rank and layout."""
    sizes = [int(rng.integers(2, MAX_SIZE[rank] + 1)) for _ in range(rank)]
    axes = sorted(int(a) for a in rng.choice(rank, size=int(rng.integers(1, rank + 1)), replace=False))
    in_strides = None
    if layout == "padded rows":
        in_strides = list(packed_strides([n + 1 for n in sizes]))
    elif layout == "broadcast":
        in_strides = list(packed_strides(sizes))
        for axis in rng.choice(rank, size=max(1, rank // 2), replace=False):
            in_strides[int(axis)] = 0
    out_strides = None
    if layout == "strided output":
        out_strides = list(packed_strides([1 if a in axes else n + 2 for a, n in enumerate(sizes)]))
    return dml.TensorDesc(data_type, sizes, in_strides), axes, out_strides


@pytest.mark.parametrize("data_type", INPUT_TYPES, ids=lambda t: t.name)
def test_sweep_against_reference(device, op, data_type):
    """Every input type x ranks 1-8 x layouts (padded rows, broadcast axes of stride 0,
    strided outputs), both directions, every index type, under every strategy: exact."""
    rng = np.random.default_rng([int(data_type), len(op.key), 7])
    for rank in range(1, 9):
        layout = LAYOUTS[rank % len(LAYOUTS)]
        x_desc, axes, out_strides = _sweep_case(rng, data_type, rank, layout)
        direction = ("increasing", "decreasing")[rank % 2]
        desc = desc_of(op, x_desc, axes, direction, INDEX_TYPES[rank % 4], out_strides)
        raw = tie_values(rng, data_type, x_desc.required_elements)
        strategies = check_every_strategy(device, op, desc, raw)
        assert {"rows", "split", "workgroup"} <= set(strategies) <= set(op.planner.strategies), strategies


# ------------------------------------------------------------------ strategies
def test_strategies_by_adapter_class(op):
    """CPU adapters get the CPU-class strategies first and the GPU-class ones last; GPUs get
    `workgroup` first for contiguous rows, `columns` (coalesced across invocations) first
    for columns."""
    rows = op.infer_output(dml.TensorDesc(T.FLOAT32, [4096, 4096]), [1])
    columns = op.infer_output(dml.TensorDesc(T.FLOAT32, [4096, 4096]), [0])
    whole = op.infer_output(dml.TensorDesc(T.FLOAT16, [1 << 24]), None, "decreasing")
    for profile in ("vulkan-cpu", "gl-cpu"):
        for desc in (rows, columns, whole):
            program = compiler.compile(desc, caps.profile(profile))
            assert program.strategy in reduction.STRATEGIES, profile
            assert set(program.strategies[-2:]) & set(reduction.GPU_STRATEGIES), profile
    gpu = caps.profile("gpu")
    assert compiler.compile(rows, gpu).strategy == "workgroup"
    assert compiler.compile(whole, gpu).strategy == "workgroup"
    assert compiler.compile(columns, gpu).strategies == ("columns", "split", "rows", "workgroup")
    program = compiler.compile(rows, gpu)
    (kernel,) = program.kernels  # 4096 outputs: 64 lanes each (16 16-byte loads a lane), no partial results
    assert kernel.template == "reduce_workgroup.wgsl.j2" and kernel.invocations == 4096 * 64
    assert kernel.params["lanes"] == 64 and kernel.params["vec"]
    assert "workgroupBarrier();" in kernel.source and kernel.params["axis_direction"] == "INCREASING"
    partials, combine = compiler.compile(whole, gpu).kernels  # one output: many workgroups, then a combine pass
    assert partials.invocations == 1024 * partials.params["lanes"] and combine.template == "reduce_workgroup.wgsl.j2"
    assert combine.params["combine"] and combine.invocations == reduction.GPU_WORKGROUP_SIZE  # 256 lanes merge 1,024


@pytest.mark.parametrize("direction", ["increasing", "decreasing"])
def test_workgroup_boundaries(device, op, direction):
    """The GPU-class strategy forced: rows shorter and longer than a workgroup (256 lanes),
    several rows per workgroup (forced lanes), all elements at the bottom of the order
    (lanes holding no element must not win a tie), chunks of partial results (forced),
    several reduced axes (decoded per element), 64-bit inputs (emulated too), strided
    outputs and more than 65,535 workgroups (a folded grid)."""
    rng = np.random.default_rng(len(direction))
    cases = [  # (input sizes, dtype, axes, output strides, plan options)
        ((5, 1), np.float32, [1], None, {}), ((7, 3), np.int8, [1], None, {}),
        ((4, 63), np.uint16, [1], None, {}), ((4, 64), np.float16, [1], None, {}),
        ((4, 65), np.int32, [1], [2, 1], {}), ((3, 700), np.float32, [1], None, {"chunks": 7}),
        ((5, 300), np.float16, [1], None, {"lanes": 4}), ((9, 2000), np.uint8, [1], None, {"lanes": 256}),
        ((3, 1100), np.int16, [1], None, {"lanes": 2, "chunks": 3}),
        ((2, 5000), np.int64, [1], None, {"int64_native": False}), ((6, 9, 40), np.uint64, [0, 2], None, {"chunks": 3}),
        ((70_000, 3), np.uint8, [1], None, {"lanes": 256}),
    ]
    for sizes, dtype, axes, out_strides, options in cases:
        data_type = T.from_numpy(dtype)
        x_desc = dml.TensorDesc(data_type, sizes)
        desc = desc_of(op, x_desc, axes, direction, "UINT32", out_strides)
        count = x_desc.required_elements
        for raw in (tie_values(rng, data_type, count), bottom_values(op, data_type, count)):
            operator = device.create_operator(desc)
            compiled = device.compile_operator(operator, "workgroup", options=options)
            x = logical_from_raw(raw, x_desc)
            assert_bits_equal(compiled.execute([raw])[0], op.reference(x, axes, direction, "UINT32"))
        if sizes[0] == 70_000:
            assert compiled.program.kernels[0].workgroups == (65535, 2)
        if "chunks" in options:
            assert len(compiled.program.kernels) == 2  # partial results, then the combine pass


def test_long_rows_stay_within_the_loop_budget(device, op):
    """llvmpipe ends an invocation's loops after 65,535 iterations in all: a row of 8.4 M
    elements read one by one is 32,813 steps for each of 256 lanes, so even when one chunk
    is asked for, the workgroup strategy cuts it in two (and `rows` is not eligible)."""
    n = 8_400_000
    x = np.zeros((1, n), np.int8)
    x[0, [17, 1_500_000, n - 2]] = 9
    desc = op.infer_output(dml.TensorDesc(T.INT8, [1, n]), [1], "decreasing", "UINT32")
    operator = device.create_operator(desc)
    assert "rows" not in device.compile_operator(operator).strategies
    compiled = device.compile_operator(operator, "workgroup", options={"chunks": 1, "vectorize": False})
    assert compiled.program.kernels[0].params["save_partials"] and len(compiled.program.kernels) == 2
    want = op.reference(x, [1], "decreasing", "UINT32")
    assert_bits_equal(compiled.execute([x])[0], want)
    assert_bits_equal(device.compile_operator(operator, "split").execute([x])[0], want)


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_nan_and_ties_in_both_directions(device, op, dtype):
    """NaN counts as the extreme, as Reduce's ARGMAX/ARGMIN have it (README, Semantics): the
    first NaN INCREASING, the last one DECREASING; equal values (-0.0 and 0.0 too) give the
    first or the last index, across 16-byte blocks, chunk edges and workgroup lanes."""
    nan, inf = np.nan, np.inf
    rows = [[1, nan, 3, nan, 2], [5, 4, 5, 0, 5], [nan] * 5, [-inf, -inf, -inf, -inf, -inf],
            [inf, inf, -inf, inf, 1], [0.0, -0.0, 0.0, -0.0, -0.0]]
    x = np.repeat(np.array(rows, dtype), 30, axis=1)  # rows of 150: several blocks, lanes and chunks
    for direction in ("increasing", "decreasing"):
        desc = op.infer_output(dml.TensorDesc(T.from_numpy(x.dtype), x.shape), [1], direction, "INT32")
        for options in ({}, {"chunks": 4}, {"vectorize": False}):
            check_every_strategy(device, op, desc, x, **options)
        got = dml.FUNCTIONS[op.functional_name](x, [1], axis_direction=direction, output_data_type="INT32",
                                                device=device).ravel()
        first = direction == "increasing"
        assert got[0] == (30 if first else 119) and got[2] == (0 if first else 149)
        assert got[3] == (0 if first else 149) and got[5] == (0 if first else 149)


def test_increasing_is_reduce_with_argmax_or_argmin(device, op):
    """The page's remark: with AxisDirection INCREASING the operator is DML_REDUCE with
    DML_REDUCE_FUNCTION_ARGMAX (ARGMIN)."""
    rng = np.random.default_rng(3)
    for dtype, shape, axes in ((np.float16, (9, 70, 5), [1]), (np.int8, (6, 50), [0, 1]), (np.uint32, (40, 33), [0])):
        x = tie_values(rng, T.from_numpy(dtype), int(np.prod(shape))).reshape(shape)
        got = dml.FUNCTIONS[op.functional_name](x, axes, output_data_type="UINT32", device=device)
        assert_bits_equal(got, dml.reduce(x, op.desc.FUNCTION, axes, output_data_type="UINT32", device=device))


# ------------------------------------------------------------------ graphs
def test_a_graph_reads_through_a_chain(device, op):
    """pad > reverse > slice > the operator: fused, the operator reads the chain (one
    kernel, or its two passes), under every strategy, exactly as the unfused graph."""
    g = dml.Graph(device)
    x = g.input([90, 20], dtype=np.int16, name="x")
    lengths = np.random.default_rng(5).integers(0, 30, size=(1, 22), dtype=np.uint32)
    chain = dml.slice(dml.reverse_subsequences(dml.pad(x, [3, 1], [0, 1], mode="symmetric"), lengths, 0),
                      [1, 0], [92, 22], [1, -1])
    found = dml.FUNCTIONS[op.functional_name](chain, [0], axis_direction="decreasing", output_data_type="UINT64")
    fused, unfused = g.compile([found]), g.compile([found], fuse=False)
    (step,) = fused.steps
    assert step.compiled.name == f"Fused(Padding>ReverseSubsequences>Slice1>{op.name})"
    assert len(unfused.steps) == 4 and fused.dispatch_count == len(step.compiled.program.kernels)
    assert unfused.dispatch_count == sum(len(s.compiled.program.kernels) for s in unfused.steps)
    array = np.random.default_rng(6).integers(0, 4, size=(90, 20)).astype(np.int16)  # many ties
    want = unfused({"x": array})[0]
    assert_bits_equal(fused({"x": array})[0], want)
    materialized = g.compile([chain])({"x": array})[0]
    assert_bits_equal(want, op.reference(materialized, [0], "decreasing", "UINT64"))
    inputs = [device.tensor(array), device.tensor(lengths)]
    assert {"rows", "split", "workgroup"} <= set(step.compiled.strategies)
    for strategy in step.compiled.strategies:
        compiled = CompiledOperator(device, Operator(device, step.compiled.desc, fusion.read_spec(step.compiled.desc)),
                                    strategy)
        assert_bits_equal(compiled.execute(inputs)[0].numpy(), want)


# ------------------------------------------------------------------ WebNN
def webnn_cases(op):
    """The WPT argMax or argMin vectors (tests/webnn.py maps them as Reduce cases: their
    axes and index type carry over; WebNN picks the first index, as INCREASING does)."""
    cases, skipped = webnn.load(f"{op.key}.json")
    assert not skipped and len(cases) == 30
    return [pytest.param(c.inputs[0], {"axes": c.args["axes"], "output_data_type": c.args["output_data_type"]},
                         c.expected, id=c.name) for c in cases]


def check_webnn(device, op, x, args, expected):
    assert_bits_equal(op.reference(x, **args), expected)
    assert_bits_equal(dml.FUNCTIONS[op.functional_name](x, device=device, **args), expected)


# ------------------------------------------------------------------ fuzz strategies
@st.composite
def _valid_cases(draw, op) -> Case:
    level, row, rank = support_row(draw, op.support)
    in_type, out_type = type_of(draw, row, "input_tensor"), type_of(draw, row, "output_tensor")
    in_sizes = sizes_of(draw, rank)
    axes = draw(st.lists(st.integers(0, rank - 1), min_size=1, max_size=rank, unique=True))
    direction = draw(st.sampled_from(list(D)))
    out_sizes = [1 if i in axes else n for i, n in enumerate(in_sizes)]
    desc = op.desc(tensor(draw, in_type, in_sizes), tensor(draw, out_type, out_sizes, output=True), axes, direction)
    return Case(level, desc, lambda xs: op.reference(xs[0], axes, direction, out_type), [tie_values])


def valid_cases(op):
    """Valid descriptions at a random level of the table, every layout fuzzkit draws, both
    directions, inputs full of ties."""
    return _valid_cases(op)


@st.composite
def _broken_fields(draw, op, desc):
    out = desc.output_tensor
    kind = draw(st.sampled_from(REDUCED_AXES_KINDS + ("output_type", "input_float64", "direction")))
    if kind in REDUCED_AXES_KINDS:
        return *broken_reduced_axes(draw, desc, kind), kind
    if kind == "output_type":
        dt = draw(st.sampled_from([t for t in T if t not in INDEX_TYPES]))
        return replace_fields(desc, output_tensor=dml.TensorDesc(dt, out.sizes)), "output_tensor.data_type", kind
    if kind == "input_float64":
        return replace_fields(desc, input_tensor=dml.TensorDesc(T.FLOAT64, desc.input_tensor.sizes)), \
            "input_tensor.data_type", kind
    bad = draw(st.sampled_from([2, -1, "sideways", None, 1.5, "INCREASING_", True]))
    return replace_fields(desc, axis_direction=bad), "axis_direction", kind


def broken_fields(op):
    """desc -> a strategy of (builder, fragment, kind) with one of the operator's own fields broken."""
    return functools.partial(_broken_fields, op)


def _mostly(draw, good: list, bad: list):
    """One of `good` about three times in four, else one of `bad` (hypothesis' simplest
    draw, 0, is a good one)."""
    return draw(st.sampled_from(bad if draw(st.integers(0, 3)) == 3 else good))


@st.composite
def _functional_calls(draw, op, x, shape):
    rank = len(shape)
    axes = draw(st.one_of(st.none(), st.integers(-rank - 1, rank),
                          st.lists(st.integers(-rank, rank - 1), min_size=1, max_size=rank)))
    direction = _mostly(draw, ["increasing", "DECREASING", D.DECREASING, 0, 1], ["sideways", None, 7, []])
    out_type = _mostly(draw, ["INT64", "int32", np.uint32, T.UINT64, 10], ["float32", "nonsense", None, "INT16"])
    args = {"axes": maybe_hostile(draw, axes), "axis_direction": direction, "output_data_type": out_type}
    return args, lambda a: op.reference(a, **args)


def functional_calls(op):
    """(x, shape) -> a strategy of (keyword arguments, expected(x)), some arguments hostile."""
    return functools.partial(_functional_calls, op)

