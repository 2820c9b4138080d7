"""ArgMax and ArgMin (DML_ARGMAX_OPERATOR_DESC, DML_ARGMIN_OPERATOR_DESC: two rows of one table,
gpudml/ops/argminmax.py): what the conformance kit (tests/test_conformance.py) does not cover,
for either operator (the fixture `op`): the page's quirks (three examples on one input, the
AxisDirection examples), the desc API's axes in either order, the `gpudml shader` options,
each validation rule's message and the edges of what the rules accept, the functional form,
strategies by adapter class and the GPU-class strategy's boundaries, the loop budget, ties
and NaN in both directions, INCREASING as Reduce's ARGMAX/ARGMIN, a graph reading through a
chain, the WebNN vectors, and ArgMin as the ArgMax of the negation."""

from __future__ import annotations

import re

import numpy as np
import pytest
import webnn
from conformance import page_text, tie_values
from conftest import assert_bits_equal, bits

import gpudml as dml
from gpudml import caps, cli, compiler, fusion
from gpudml.device import CompiledOperator, Operator
from gpudml.kernels import reduction
from gpudml.ops import spec_named
from gpudml.runtime.tensor import logical_from_raw

T, FL, D = dml.DataType, dml.FeatureLevel, dml.AxisDirection
OPS = [spec_named("argmax"), spec_named("argmin")]
INDEX_TYPES = [T.INT64, T.INT32, T.UINT64, T.UINT32]


@pytest.fixture(params=OPS, ids=lambda spec: spec.key, scope="module")
def op(request):
    """The operator's spec: every test below runs for ArgMax and for ArgMin."""
    return request.param


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


# ------------------------------------------------------------------ the page
def test_page_example_through_the_desc_api_axes_in_either_order(device, op):
    """Example 3 (every axis) as the page writes its description, axes in either order."""
    for axes in ([0, 1], [1, 0]):
        desc = op.desc(input_tensor=dml.TensorDesc(T.FLOAT32, [3, 3]), output_tensor=dml.TensorDesc(T.UINT32, [1, 1]),
                       axes=axes, axis_direction=D.INCREASING)
        (got,) = device.compile_operator(device.create_operator(desc)).execute([op.examples[2].input])
        assert_bits_equal(got, op.examples[2].expected)


def test_examples_are_the_pages(op):
    """Three examples on the page's one input, in UINT32 (their numbers: the conformance
    kit), and the two of the AxisDirection field, each on the line of its direction."""
    text = page_text(op.examples[0].source)
    table, ties = op.examples[:3], op.examples[3:]
    assert all(e.input is table[0].input for e in table)
    assert all(e.args["output_data_type"] == "UINT32" for e in table) and text.count("DataType:UINT32") == 3
    for e in ties:
        direction = e.args["axis_direction"].upper()
        values = ",".join(str(int(v)) for v in e.input)
        line = next(s for s in text.splitlines() if f"DML_AXIS_DIRECTION_{direction}**" in s)
        assert line.endswith(f"`{op.key}({{{values}}}) = {int(e.expected[0])}`)"), line


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
    "bad input tensor": ({"in_strides": [60, -20, 5, 1]}, FL.FL_6_4, ["input_tensor.strides[1] = -20 must be >= 0"]),
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
    """The edges of the rules, each beside the refusal it borders: 64-bit inputs from FL 4_1
    (not at FL 4_0), every index type from FL 3_0 (not below: the operator is introduced
    there), an INT32 output holding index 2^31 - 1 exactly (not one more), UINT32 beyond it.
    The small descriptions run and give the reference's indices; the large ones plan."""
    rng = np.random.default_rng(4)
    edges = [(FL.FL_4_1, FL.FL_4_0, T.UINT64, T.INT32, D.INCREASING)]
    edges += [(FL.FL_3_0, FL.FL_2_1, T.INT8, out_type, D.DECREASING) for out_type in INDEX_TYPES]
    for level, below, in_type, out_type, direction in edges:
        desc = _desc(op, in_type, out_type=out_type, direction=direction)
        with pytest.raises(dml.InvalidArgumentError, match=f"{op.name}: .*{below.name}"):
            at_level(below).create_operator(desc)
        device = at_level(level)
        x = tie_values(rng, in_type, desc.input_tensor.element_count).reshape(desc.input_tensor.sizes)
        (got,) = device.compile_operator(device.create_operator(desc)).execute([x])
        assert_bits_equal(got, op.reference(x, **op.arguments(desc)))
    largest = dict(sizes=(1, 2**16, 2**15), in_strides=[0, 0, 0], axes=(1, 2))  # index 2^31 - 1: INT32 holds it
    beyond = dict(largest, sizes=(1, 2**16, 2**15 + 1))
    device = at_level(FL.FL_3_0)
    for arguments, out_type in ((largest, T.INT32), (beyond, T.UINT32)):
        compiled = device.compile_operator(device.create_operator(_desc(op, out_type=out_type, **arguments)))
        assert compiled.strategies and compiled.program.kernels
    with pytest.raises(dml.InvalidArgumentError, match="INT32 cannot hold index 2147549183"):
        device.create_operator(_desc(op, out_type=T.INT32, **beyond))


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
    assert compiler.compile(columns, gpu).strategies == ("columns", "partials", "rows", "workgroup")
    program = compiler.compile(rows, gpu)
    (kernel,) = program.kernels  # 4096 outputs: 64 lanes each (16 16-byte loads a lane), no partial results
    assert kernel.template == "reduce_workgroup.wgsl.j2" and kernel.invocations == 4096 * 64
    assert kernel.params["lanes"] == 64 and kernel.params["vec"]
    assert "workgroupBarrier();" in kernel.source and kernel.params["axis_direction"] == "INCREASING"
    partials, combine = compiler.compile(whole, gpu).kernels  # one output: many workgroups, then a combine pass
    assert partials.invocations == 1024 * partials.params["lanes"] and combine.template == "reduce_workgroup.wgsl.j2"
    assert combine.params["combine"] and combine.invocations == reduction.GPU_WORKGROUP_SIZE  # 256 lanes merge 1,024


@pytest.mark.slow  # 18-24 s a case on 2 cores (a 70,000-row grid, emulated 64-bit rows)
@pytest.mark.any_class  # the strategy forced
@pytest.mark.parametrize("direction", ["increasing", "decreasing"])
def test_workgroup_boundaries(device, op, direction):
    """The GPU-class strategy forced: rows shorter and longer than a workgroup (256 lanes),
    several rows per workgroup (forced lanes), all elements at the bottom of the order
    (lanes holding no element must not win a tie), chunks of partial results (forced),
    several reduced axes (decoded per element), 64-bit inputs (emulated too), strided
    outputs and more than 65,535 workgroups (a folded grid: 18 M invocations, 4-12 s an
    execute on llvmpipe, so run once per adapter and operator, ArgMax increasing and ArgMin
    decreasing, on tie values: the grid's decoding of a row is the same for every operator
    and direction, and the cases above compare both directions and the bottom values)."""
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
    folded = (op.name == "ArgMax") == (direction == "increasing")
    for sizes, dtype, axes, out_strides, options in cases:
        if sizes[0] == 70_000 and not folded:
            continue
        data_type = T.from_numpy(dtype)
        x_desc = dml.TensorDesc(data_type, sizes)
        desc = desc_of(op, x_desc, axes, direction, "UINT32", out_strides)
        count = x_desc.required_elements
        values = [tie_values(rng, data_type, count)]
        if sizes[0] != 70_000:
            values.append(bottom_values(op, data_type, count))
        for raw in values:
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
    assert_bits_equal(device.compile_operator(operator, "partials").execute([x])[0], want)


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
    assert {"rows", "partials", "workgroup"} <= set(step.compiled.strategies)
    for strategy in step.compiled.strategies:
        compiled = CompiledOperator(device, Operator(device, step.compiled.desc, fusion.read_spec(step.compiled.desc)),
                                    strategy)
        assert_bits_equal(compiled.execute(inputs)[0].numpy(), want)


# ------------------------------------------------------------------ WebNN
def webnn_cases():
    """The WPT argMax and argMin vectors (tests/webnn.py maps them as Reduce cases: their
    axes and index type carry over; WebNN picks the first index, as INCREASING does)."""
    found = []
    for op in OPS:
        cases, skipped = webnn.load(f"{op.key}.json")
        assert not skipped and len(cases) == 30
        found += [pytest.param(op, c.inputs[0], {k: c.args[k] for k in ("axes", "output_data_type")}, c.expected,
                               id=f"{op.key}-{c.name}") for c in cases]
    return found


@pytest.mark.parametrize("op, x, args, expected", webnn_cases())
def test_webnn_vectors(device, op, x, args, expected):
    assert_bits_equal(op.reference(x, **args), expected)
    assert_bits_equal(dml.FUNCTIONS[op.functional_name](x, device=device, **args), expected)


# ------------------------------------------------------------------ ArgMin
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
