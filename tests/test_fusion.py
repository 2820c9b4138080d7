"""Fusion of a graph's data-movement chains (gpudml/fusion.py), beside the conformance kit's
random graphs of every chainable operator (tests/test_conformance.py): the fused kernels of
random graphs under each strategy and run length; the fusion rules as dispatch counts (a
chain of any length is one dispatch, chains cut where a kernel would bind too many
tensors, what is materialized); the plan without an adapter; a Reduce reading a chain
under each strategy."""

from __future__ import annotations

import numpy as np
import pytest
from conformance import run_random_graph
from conftest import random_bits

import gpudml as dml
from gpudml import caps, compiler, fusion
from gpudml.kernels.movement import family as movement
from gpudml.ops import spec_named
from gpudml.testing import assert_bit_equal, assert_within

T = dml.DataType
MODES = ("constant", "edge", "reflection", "symmetric", "wrap")


# ------------------------------------------------------------------ random graphs
@pytest.mark.parametrize("strategy", ["elements", "stretches", "coalesced"])
@pytest.mark.parametrize("run", [movement.CHAIN_RUN_CPU, movement.RUN])
def test_fused_kernels_under_each_strategy_and_run(vulkan_device, monkeypatch, strategy, run):
    """A fused chain's kernels under both movement strategies (first in the list is the
    choice) and both run lengths (CPU adapters' and GPU adapters')."""
    monkeypatch.setattr(movement, "CHAIN_RUN_CPU", run)
    real = movement.strategies_for
    monkeypatch.setattr(movement, "strategies_for",
                        lambda out, caps: tuple(sorted(real(out, caps), key=lambda s: s != strategy)))
    strategies = set()
    for seed in range(100, 112):
        _, fused = run_random_graph(vulkan_device, seed, nodes=8)
        strategies.update(step.compiled.strategy for step in fused.steps if step.compiled.name.startswith("Fused"))
    assert strategy in strategies


# ------------------------------------------------------------------ the rules, as dispatch counts
def _chain(g, x, length: int):
    """`length` data-movement nodes in a row (every kind and mode), the values in order."""
    values, y = [], x
    for i in range(length):
        kind = i % 5
        if kind == 0:
            y = dml.pad(y, [1, 0, 2], [0, 2, 1], mode=MODES[(i // 5) % 4], value=7.0)
        elif kind == 1:
            y = dml.slice(y, [1, 0, 1], [y.shape[0] - 1, y.shape[1], y.shape[2] - 1], [1, -1, 2])
        elif kind == 2:
            y = dml.reverse_subsequences(y, np.arange(y.shape[0] * y.shape[1], dtype=np.uint32)
                                         .reshape(y.shape[0], y.shape[1], 1) % (y.shape[2] + 2), 2)
        elif kind == 3:
            y = dml.pad(y, [0, 1, 0], [2, 0, 3], mode="edge")
        else:
            y = dml.slice(y, [0, 1, 0], [y.shape[0], y.shape[1] - 1, y.shape[2]], [-1, 1, 1])
        values.append(y)
    return values


@pytest.mark.parametrize("length", [1, 2, 3, 5, 8, 12])
def test_a_movement_chain_of_any_length_is_one_dispatch(device, length):
    g = dml.Graph(device)
    x = g.input([3, 4, 5], dtype=np.int32, name="x")
    values = _chain(g, x, length)
    op = g.compile([values[-1]])
    assert op.dispatch_count == 1 and len(op.steps) == 1
    array = random_bits(np.random.default_rng(length), np.int32, (3, 4, 5))
    assert_bit_equal(op({"x": array})[0], g.compile([values[-1]], fuse=False)({"x": array})[0])
    reduced = dml.reduce(values[-1], "sum", [0, 2])
    op = g.compile([reduced])  # the reduce reads the chain: its own dispatches only
    assert len(op.steps) == 1 and op.steps[0].compiled.name.endswith(">Reduce)")
    assert_bit_equal(op({"x": array})[0], g.compile([reduced], fuse=False)({"x": array})[0])  # integers: exact


@pytest.mark.parametrize("reduce", [False, True])
def test_a_chain_reading_more_tensors_than_a_kernel_binds_is_cut(device, reduce):
    """30 ReverseSubsequences with lengths of their own: a chain binds its lengths tensors, so
    it is cut where a kernel would bind more storage buffers than the adapter allows
    (Caps.max_storage_buffers_per_shader_stage: lavapipe 32, llvmpipe through GL 16)."""
    g = dml.Graph(device)
    x = g.input([3, 7], dtype=np.int16, name="x")
    y, rng = x, np.random.default_rng(30)
    for _ in range(30):
        y = dml.reverse_subsequences(y, rng.integers(0, 9, size=(3, 1), dtype=np.uint32), 1)
    out = dml.reduce(y, "max", [1]) if reduce else y
    op = g.compile([out])
    limit = device.caps.max_storage_buffers_per_shader_stage
    assert all(len(k.buffers) <= limit for step in op.steps for k in step.compiled.program.kernels)
    assert len(op.steps) == -(-30 // (limit - fusion.FIXED_BINDINGS))
    array = random_bits(rng, np.int16, (3, 7))
    assert_bit_equal(op({"x": array})[0], g.compile([out], fuse=False)({"x": array})[0])


def test_a_kernel_binding_more_than_the_adapter_allows_is_unsupported():
    """The compiler refuses a plan whose kernel binds more storage buffers than the caps
    allow (before any GPU work); fusion plans within the limit (above)."""
    g_desc = dml.TensorDesc(T.FLOAT32, [2, 5])
    nodes, value_descs = [], {0: g_desc}
    rs = spec_named("reverse_subsequences")
    lengths = dml.TensorDesc(T.UINT32, [2, 1])

    class Node:
        def __init__(self, d, inputs, outputs):
            self.desc, self.spec, self.inputs, self.outputs = d, fusion.spec_for(d), inputs, outputs

    for i in range(10):
        value_descs[2 * i + 1] = lengths
        nodes.append(Node(rs.infer_output(g_desc, lengths, 1), (2 * i, 2 * i + 1), (2 * i + 2,)))
        value_descs[2 * i + 2] = g_desc
    gpu = caps.profile("gpu")  # 8 storage buffers per kernel
    (whole,) = fusion.group_nodes(nodes, [20], value_descs)
    with pytest.raises(dml.UnsupportedError, match="needs 12 storage bindings .*above 8, the adapter's "
                                                   "max-storage-buffers-per-shader-stage 8"):
        compiler.compile(whole.desc, gpu, operation=whole.spec)
    cut = fusion.group_nodes(nodes, [20], value_descs, gpu.max_storage_buffers_per_shader_stage)
    assert [len(group.nodes) for group in cut] == [4, 4, 2]
    for group in cut:
        assert all(len(k.buffers) <= 8 for k in compiler.compile(group.desc, gpu, operation=group.spec).kernels)


def test_what_is_materialized(vulkan_device):
    g = dml.Graph(vulkan_device)
    x = g.input([4, 6], dtype=np.float32, name="x")
    a = dml.pad(x, [1, 1], [1, 1], mode="reflection")
    b = dml.slice(a, [0, 1], [6, 6], [1, -1])
    c = dml.pad(b, [0, 2], [0, 0], mode="constant", value=-1.0)
    lengths = dml.slice(g.input([6, 1], dtype=np.uint32, name="n"), [0, 0], [6, 1], [-1, 1])
    d = dml.reverse_subsequences(c, lengths, 1)  # lengths from a data-movement node
    e = dml.reduce(c, "max", [1])
    f = dml.slice(b, [1, 0], [4, 6])  # b read by two chains
    names = [step.compiled.name for step in g.compile([d, e, f]).steps]
    # lengths: one Slice1 of its own (read as lengths, not as data); d: the chain a..d;
    # e: max through a..c; f: a, b, f (b is recomputed, never written)
    assert names == ["Slice1", "Fused(Padding>Slice1>Padding>ReverseSubsequences)",
                     "Fused(Padding>Slice1>Padding>Reduce)", "Fused(Padding>Slice1>Slice1)"]
    # an output in the middle of a chain is written, and the rest of the chain reads it
    names = [step.compiled.name for step in g.compile([d, b]).steps]
    assert names == ["Fused(Padding>Slice1)", "Slice1", "Fused(Padding>ReverseSubsequences)"]
    feed = {"x": np.random.default_rng(3).standard_normal((4, 6)).astype(np.float32),
            "n": np.array([[0], [9], [2], [6], [1], [4]], np.uint32)}
    for outputs in ([d, e, f], [d, b], [e, a, c]):
        for got, want in zip(g.compile(outputs)(feed), g.compile(outputs, fuse=False)(feed)):
            assert_bit_equal(got, want)


def test_fusion_plan_is_pure_and_ordered():
    """fusion.group_nodes needs no adapter: groups come producers first, each fused group's desc
    carries the chain's nodes in order."""
    desc = dml.TensorDesc(T.FLOAT32, [2, 8])
    pad = spec_named("pad")
    slice_ = spec_named("slice")
    n0 = pad.infer_output(desc, [0, 1], [0, 1], "edge")
    n1 = slice_.infer_output(n0.output_tensor, [0, 0], [2, 10], [1, -1])
    n2 = pad.infer_output(n1.output_tensor, [1, 0], [0, 0])

    class Node:
        def __init__(self, d, inputs, outputs):
            self.desc, self.spec, self.inputs, self.outputs = d, fusion.spec_for(d), inputs, outputs

    nodes = [Node(n0, (0,), (1,)), Node(n1, (1,), (2,)), Node(n2, (2,), (3,))]
    value_descs = {0: desc, 1: n0.output_tensor, 2: n1.output_tensor, 3: n2.output_tensor}
    (group,) = fusion.group_nodes(nodes, [3], value_descs)
    assert group.inputs == (0,) and group.outputs == (3,) and group.nodes == (0, 1, 2)
    assert group.desc.nodes == (n0, n1, n2) and group.desc.input_tensor == desc
    groups = fusion.group_nodes(nodes, [3, 1], value_descs)
    assert [(g.inputs, g.outputs, g.nodes) for g in groups] == [((0,), (1,), (0,)), ((1,), (3,), (1, 2))]
    program = compiler.compile(group.desc, caps.profile("gpu"), operation=group.spec)
    assert program.operator == "Fused(Padding>Slice1>Padding)" and len(program.kernels) == 1
    assert "s0_pad_start" in program.kernels[0].source and "s1_starts" in program.kernels[0].source


@pytest.mark.parametrize("function, dtype", [("sum", np.float32), ("argmin", np.float16), ("max", np.int64),
                                             ("sum_square", np.float32), ("multiply", np.uint32)])
def test_a_reduce_reads_a_chain_under_each_strategy(device, function, dtype):
    """Reduce through pad > reverse (lengths bound in both passes of `partials`) > slice, under
    rows and partials, against the reference on the unfused chain."""
    from gpudml.device import CompiledOperator, Operator

    g = dml.Graph(device)
    x = g.input([300, 20], dtype=dtype, name="x")
    lengths = np.random.default_rng(5).integers(0, 30, size=(1, 22), dtype=np.uint32)
    chain = dml.slice(dml.reverse_subsequences(dml.pad(x, [3, 1], [0, 1], mode="symmetric"), lengths, 0),
                      [1, 0], [302, 22], [1, -1])
    r = dml.reduce(chain, function, [0])
    (step,) = g.compile([r]).steps
    assert step.compiled.name == "Fused(Padding>ReverseSubsequences>Slice1>Reduce)"
    rng = np.random.default_rng(6)
    array = (rng.random((300, 20)) + 0.5).astype(dtype) if np.dtype(dtype).kind == "f" else \
        rng.integers(0, 5, size=(300, 20)).astype(dtype)
    materialized = g.compile([chain], fuse=False)({"x": array})[0]
    spec = spec_named("reduce")
    arguments = {"function": function, "axes": [0]}
    want = spec.reference(materialized, **arguments)
    tolerance = spec.tolerance(want, [materialized], arguments)
    inputs = [device.tensor(array), device.tensor(lengths)]
    strategies = step.compiled.strategies
    assert {"rows", "partials", "columns", "workgroup"} == set(strategies)
    for strategy in strategies:
        compiled = CompiledOperator(device, Operator(device, step.compiled.desc, fusion.read_spec(step.compiled.desc)),
                                    strategy)
        assert len(compiled.program.kernels) == {"rows": 1, "partials": 2, "columns": 2}.get(strategy, 1)
        assert_within(compiled.execute(inputs)[0].numpy(), want, tolerance, strategy)


# ------------------------------------------------------------------ element-wise chains
def _elementwise_chain(g, dtype):
    """relu(x * s + y) - w, s a graph input broadcast along rows, w a constant broadcast
    along columns: four element-wise nodes, four inputs (x, s, y, w)."""
    x = g.input([5, 7], dtype=dtype, name="x")
    s = g.input([7], dtype=dtype, name="s")
    y = g.input([5, 7], dtype=dtype, name="y")
    w = np.arange(5, dtype=dtype).reshape(5, 1)
    return dml.subtract(dml.relu(dml.add0(dml.multiply(x, s), y)), w)


def _feed(dtype, rng):
    if np.dtype(dtype).kind == "f":
        return {k: (rng.standard_normal(shape) * 4).astype(dtype) for k, shape in
                (("x", (5, 7)), ("s", (7,)), ("y", (5, 7)))}
    return {k: random_bits(rng, dtype, shape) for k, shape in (("x", (5, 7)), ("s", (7,)), ("y", (5, 7)))}


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int8, np.int32])
def test_an_elementwise_chain_is_one_dispatch(device, dtype):
    """Element-wise nodes each reading the last one's value as it is run as one kernel whose
    steps pass their results through the intermediate type's bits: integers wrap and float16
    rounds between steps as between kernels, so integers equal the unfused graph exactly and
    floats within the float32 rounding a compiler's contraction may change (1 ULP of the
    output type)."""
    g = dml.Graph(device)
    out = _elementwise_chain(g, dtype)
    fused, unfused = g.compile([out]), g.compile([out], fuse=False)
    assert fused.dispatch_count == 1 and unfused.dispatch_count == 4
    assert fused.steps[0].name == "Fused(ElementWiseMultiply>ElementWiseAdd>ActivationRelu>ElementWiseSubtract)"
    feed = _feed(dtype, np.random.default_rng(5))
    (got,), (want,) = fused(feed), unfused(feed)
    if np.dtype(dtype).kind == "f":
        np.testing.assert_allclose(got, want, rtol=float(np.finfo(dtype).eps), atol=0)
    else:
        assert_bit_equal(got, want)


def test_intermediate_rounding_and_wrap_are_kept(device):
    """A fused step's result is the tensor it would have been: INT8 wraps (100 + 100 is -56
    before the next step), FLOAT16 rounds (2049 is 2048 in float16) and the comparison's
    UINT8 feeds the next logical operator."""
    g = dml.Graph(device)
    a = g.input([4], dtype=np.int8, name="a")
    wrapped = dml.divide(dml.add0(a, a), np.array([2], np.int8))  # (a + a) wraps, then / 2
    h = g.input([2], dtype=np.float16, name="h")
    rounded = dml.subtract(dml.add0(h, np.array([1], np.float16)), h)  # (h + 1) rounds to float16
    flags = dml.logical_and(dml.logical_less_than(h, np.array([3000], np.float16)),
                            np.array([1, 1], np.uint8))
    op = g.compile([wrapped, rounded, flags])
    assert op.dispatch_count == 3
    got = op({"a": np.array([100, -100, 64, 1], np.int8), "h": np.array([2048, 1], np.float16)})
    np.testing.assert_array_equal(got[0], np.array([-28, 28, -64, 1], np.int8))
    np.testing.assert_array_equal(got[1], np.array([0, 1], np.float16))
    np.testing.assert_array_equal(got[2], np.array([1, 1], np.uint8))


def test_what_elementwise_chains_materialize(vulkan_device):
    """A value is written when it is a graph output, read twice, read through a broadcast
    (another shape) or by a node that can compute none of its inputs; the rest is computed
    in its reader's kernel (a Reduce's too: its prologue)."""
    g = dml.Graph(vulkan_device)
    x = g.input([3, 4], dtype=np.float32, name="x")
    col = g.input([3, 1], dtype=np.float32, name="c")
    e = dml.exp(x)
    twice = dml.multiply(e, e)  # e read twice: written
    b = dml.sigmoid(col)  # [3, 1] read broadcast to [3, 4]: written
    mixed = dml.add(twice, b)
    total = dml.reduce(dml.relu(mixed), "sum", [1])  # relu read by a Reduce: in the Reduce's kernel
    names = [step.name for step in g.compile([total, mixed]).steps]
    assert names == ["ElementWiseExp", "ActivationSigmoid", "Fused(ElementWiseMultiply>ElementWiseAdd1)",
                     "Fused(ActivationRelu>Reduce)"]
    feed = {"x": np.linspace(-2, 2, 12, dtype=np.float32).reshape(3, 4), "c": np.array([[-1], [0], [1]], np.float32)}
    for got, want in zip(g.compile([total, mixed])(feed), g.compile([total, mixed], fuse=False)(feed)):
        np.testing.assert_allclose(got, want, rtol=2e-7, atol=0)


def test_an_elementwise_chain_is_cut_to_the_bindings():
    """40 inputs added one after another: each kernel binds at most the adapter's storage
    buffers (the output and its inputs), and the plan needs no adapter."""
    desc = dml.TensorDesc(T.FLOAT32, [2, 3])
    add = spec_named("add")

    class Node:
        def __init__(self, d, inputs, outputs):
            self.desc, self.spec, self.inputs, self.outputs = d, fusion.spec_for(d), inputs, outputs

    nodes, value_descs, value = [], {0: desc}, 0
    for i in range(40):
        value_descs[100 + i] = desc
        nodes.append(Node(add.infer_output(desc, desc), (value, 100 + i), (1000 + i,)))
        value_descs[1000 + i] = desc
        value = 1000 + i
    gpu = caps.profile("gpu")  # 8 storage buffers per kernel
    groups = fusion.group_nodes(nodes, [1039], value_descs, gpu.max_storage_buffers_per_shader_stage)
    assert len(groups) > 1 and sum(len(grp.nodes) for grp in groups) == 40
    for group in groups:
        assert len(group.inputs) <= 7
        (kernel,) = compiler.compile(group.desc, gpu, operation=group.spec).kernels
        assert len(kernel.buffers) <= 8


def test_a_fused_elementwise_kernel_is_checked_like_an_operator(vulkan_device):
    """The fused spec's semantics (its nodes' references in turn, the last one's precision)
    check its kernel, as the lab and the autotuner check an operator's; its sample draws each
    input as the node reading it samples it."""
    g = dml.Graph(vulkan_device)
    out = _elementwise_chain(g, np.float32)
    (step,) = g.compile([out]).steps
    desc = step.compiled.desc
    spec = fusion.elementwise_spec(desc)
    rng = np.random.default_rng(8)
    buffers = spec.sample_buffers(desc, rng)
    assert [b.size for b in buffers] == [t.required_elements for t in desc.input_tensors]
    feed = _feed(np.float32, rng)
    w = np.arange(5, dtype=np.float32).reshape(5, 1)
    want = np.maximum(feed["x"].astype(np.float64) * feed["s"] + feed["y"], 0) - w
    views = [feed["x"], np.broadcast_to(feed["s"], (5, 7)), feed["y"], np.broadcast_to(w, (5, 7))]
    (expected,), (tolerance,) = spec.expected_outputs(desc, views)
    np.testing.assert_allclose(expected, want.astype(np.float32), rtol=1e-6)
    assert tolerance is not None


def test_a_chain_of_both_tables_rows_is_one_kernel(device):
    """Rows of every kind fuse alike: ROUND's enum (its formula per member), CLIP1's min and
    max in the tensor's type, POW's exponent of its own type (the "float,sint" formula), CELU,
    CAST to INT8, MODULUS_FLOOR and CLIP_GRAD1's integer bounds: one kernel, the same result
    as a kernel per node."""
    g = dml.Graph(device)
    x = g.input([5, 7], dtype=np.float32, name="x")
    e = g.input([5, 7], dtype=np.int32, name="e")
    m = g.input([5, 7], dtype=np.int8, name="m")
    dy = g.input([5, 7], dtype=np.int8, name="dy")
    y = dml.celu(dml.pow(dml.clip(dml.round(x, "toward_zero"), -3.0, 3.0), e), 1.5)
    out = dml.clip_grad(dml.modulus_floor(dml.cast(y, "INT8"), m), dy, -2, 20)
    fused, unfused = g.compile([out]), g.compile([out], fuse=False)
    assert fused.dispatch_count == 1 and unfused.dispatch_count == 7
    rng = np.random.default_rng(11)
    feed = {"x": rng.uniform(-4, 4, (5, 7)).astype(np.float32), "e": rng.integers(0, 4, (5, 7), dtype=np.int32),
            "m": rng.integers(1, 9, (5, 7), dtype=np.int8) * rng.choice(np.int8([-1, 1]), (5, 7)),
            "dy": rng.integers(-100, 100, (5, 7), dtype=np.int8)}
    (got,), (want,) = fused(feed), unfused(feed)
    assert_bit_equal(got, want)
    r = np.clip(np.trunc(feed["x"].astype(np.float64)), -3, 3) ** feed["e"]
    c = np.trunc(np.where(r > 0, r, 1.5 * np.expm1(r / 1.5))).astype(np.int8)
    z = np.mod(c, feed["m"])
    assert_bit_equal(got, np.where((z <= -2) | (z >= 20), 0, feed["dy"]).astype(np.int8))


# ------------------------------------------------------------------ data movement and element-wise nodes together
def _compare(fused, unfused, feed, exact: bool) -> None:
    """Fused against unfused: bit for bit (data movement, integer steps), else within the
    rounding a compiler's contraction may change (1 ULP of float32, as for element-wise chains)."""
    for got, want in zip(fused(feed), unfused(feed)):
        if exact:
            assert_bit_equal(got, want)
        else:
            np.testing.assert_allclose(got, want, rtol=float(np.finfo(got.dtype).eps), atol=1e-30)


def _mixed_graphs(g):
    """Each load-side pattern, by name: (output, kernels fused, kernels unfused: one per node)."""
    x = g.input([4, 6], dtype=np.float32, name="x")
    y = g.input([3, 5], dtype=np.float32, name="y")
    return {
        # an element-wise node reading data-movement values through their chains
        "add(slice, pad)": (dml.add(dml.slice(x, [1, 0], [3, 5], [1, -1]),
                                    dml.pad(y, [0, 0], [0, 0], mode="reflection")), 1, 3),
        # data movement over element-wise values: the step computed where the chain maps to
        "slice(sigmoid)": (dml.slice(dml.sigmoid(x), [0, 1], [4, 5], [-1, 1]), 1, 2),
        # a CONSTANT padding's border is the padding value, not the expression's
        "pad(add) fill": (dml.pad(dml.add(y, y), [1, 2], [2, 0], value=-3.5), 1, 2),
        # movement > element-wise > movement > element-wise > movement
        "alternation": (dml.slice(dml.exp(dml.pad(dml.multiply(dml.slice(dml.relu(x), [0, 1], [3, 5]), y),
                                                   [1, 0], [0, 1], mode="edge")), [0, 0], [4, 6], [1, -1]), 1, 6),
        # a Reduce, an ArgMin and the scans reading element-wise values (and chains with them)
        "sum(exp)": (dml.reduce(dml.exp(x), "sum", [1]), 1, 2),
        "sum_square(sub)": (dml.reduce(dml.subtract(x, dml.tile(dml.slice(x, [0, 0], [4, 3]), [1, 2])), "sum_square",
                                       [0]), 1, 4),
        "argmin(slice(neg))": (dml.argmin(dml.slice(dml.negate(x), [0, 2], [4, 3]), [1]), 1, 3),
        "cumsum(pad(sigmoid))": (dml.cumulative_sum(dml.pad(dml.sigmoid(y), [0, 1], [0, 1]), 1), 1, 3),
        "cumprod(exp)": (dml.cumulative_product(dml.exp(dml.multiply(x, np.float32([[0.1]]))), 0,
                                                axis_direction="decreasing"), 1, 3),
    }


def test_movement_and_elementwise_nodes_fuse_into_one_kernel(device):
    """Every load-side pattern (see _mixed_graphs) is one kernel: one dispatch, or a Reduce's
    own passes (GPU-class strategies), each node besides the last saving its dispatch; the
    values equal the unfused graph's within float32 rounding, ArgMin's indices exactly."""
    g = dml.Graph(device)
    graphs = _mixed_graphs(g)
    rng = np.random.default_rng(21)
    feed = {"x": rng.standard_normal((4, 6)).astype(np.float32), "y": rng.standard_normal((3, 5)).astype(np.float32)}
    for name, (out, fused_count, unfused_count) in graphs.items():
        fused, unfused = g.compile([out]), g.compile([out], fuse=False)
        assert (len(fused.steps), len(unfused.steps)) == (fused_count, unfused_count), name
        assert unfused.dispatch_count - fused.dispatch_count == unfused_count - 1, name
        assert fused.dispatch_count == 1 or name.startswith("sum"), name
        _compare(fused, unfused, feed, exact=name.startswith("argmin"))


def test_a_padding_fill_is_the_paddings_value(device):
    """pad(add(a, b)) writes the padding's constant on the border, whatever the expression
    would give there (a NaN-free constant, exactly)."""
    g = dml.Graph(device)
    a, b = g.input([2, 3], dtype=np.float32, name="a"), g.input([2, 3], dtype=np.float32, name="b")
    op = g.compile([dml.pad(dml.divide(a, b), [1, 0], [0, 2], value=-7.25)])
    assert op.dispatch_count == 1
    (got,) = op({"a": np.ones((2, 3), np.float32), "b": np.zeros((2, 3), np.float32)})  # 1/0 = inf inside
    want = np.full((3, 5), -7.25, np.float32)
    want[1:, :3] = np.inf
    assert_bit_equal(got, want)


def test_an_integer_and_a_float16_chain(device):
    """Integers wrap as between kernels (bit for bit); float16 rounds once per step, as
    between kernels: the same bits as the unfused graph (these steps are exact in float32)."""
    g = dml.Graph(device)
    i = g.input([3, 4], dtype=np.int8, name="i")
    n = g.input([3, 1], dtype=np.uint32, name="n")
    ints = dml.add0(dml.reverse_subsequences(dml.multiply(i, i), n, 1), dml.pad(dml.slice(i, [0, 1], [3, 3]),
                                                                              [0, 0], [0, 1], value=-128))
    h = g.input([3, 4], dtype=np.float16, name="h")
    halves = dml.slice(dml.add0(dml.tile(dml.slice(h, [0, 0], [3, 2]), [1, 2]), h), [0, 0], [3, 4], [-1, 1])
    fused, unfused = g.compile([ints, halves]), g.compile([ints, halves], fuse=False)
    assert [s.name for s in fused.steps] == [
        "Fused(Slice1>Padding>ElementWiseMultiply>ReverseSubsequences>ElementWiseAdd)",
        "Fused(Slice1>Tile>ElementWiseAdd>Slice1)"]
    rng = np.random.default_rng(3)
    feed = {"i": random_bits(rng, np.int8, (3, 4)), "n": np.array([[0], [3], [9]], np.uint32),
            "h": (rng.integers(-2048, 2048, (3, 4)) / 4).astype(np.float16)}
    _compare(fused, unfused, feed, exact=True)


@pytest.mark.parametrize("dtype", [np.float32, np.int64])
def test_a_fused_read_walks_its_inputs_in_blocks_where_they_align(device, dtype):
    """`runs` over a packed output whose rows are 16-byte blocks loads a leaf stepping by +-1
    a block at a time where every row's first element starts a block (ends one, stepping
    down); a leaf off the blocks, and every leaf of a binding such a leaf reads, go element
    by element. Bit for bit the unfused graph's."""
    g = dml.Graph(device)
    x = g.input([2, 3, 8], dtype=dtype, name="x")
    flip = dml.slice(x, [0, 0, 0], [2, 3, 8], [1, 1, -1])
    shifted = dml.slice(dml.pad(x, [0, 0, 0], [0, 0, 4], mode="edge"), [0, 0, 1], [2, 3, 8])
    y = g.input([2, 3, 4], dtype=dtype, name="y")
    cases = {  # output: the leaves read in blocks
        "reversed, read twice: one leaf": (dml.add0(flip, flip), {0}),
        "forward and reversed": (dml.add0(x, flip), {0, 1}),
        "a leaf with a stage (its own binding of x)": (dml.add0(shifted, flip), {1}),
        "rows flipped": (dml.add0(dml.slice(x, [0, 0, 0], [2, 3, 8], [1, -1, -1]), x), {0, 1}),
        "x off the blocks, y on them": (dml.add0(dml.slice(x, [0, 0, 1], [2, 3, 4]), y), {1}),
    }
    rng = np.random.default_rng(5)
    feed = {name: random_bits(rng, dtype, shape) if dtype == np.int64 else rng.standard_normal(shape).astype(dtype)
            for name, shape in (("x", (2, 3, 8)), ("y", (2, 3, 4)))}
    for name, (out, blocks) in cases.items():
        fused, unfused = g.compile([out]), g.compile([out], fuse=False)
        assert fused.dispatch_count == 1, name
        compiled = fused.steps[0].compiled
        runs = compiled.strategy == "runs"
        assert {k for k in range(2) if f"let fetched_w{k} = " in compiled.program.wgsl[0]} == (blocks if runs else
                                                                                               set()), name
        _compare(fused, unfused, {k: v for k, v in feed.items() if k in {i.name for i in fused.inputs}}, exact=True)


def test_block_leaves_are_aligned_and_keep_their_binding_to_themselves():
    """kernels.elementwise._leaf_blocks: a leaf reads in blocks only through its own strides
    (+-1 along the row, rows starting on blocks: ending on one stepping down), at the
    output's element width, and only where every leaf of its binding does (a binding is
    typed as blocks or words as a whole); an axis of size 1 never moves, whatever its stride."""
    from gpudml.kernels.elementwise import FetchParams, _leaf_blocks

    def modes(leaves, strides, bases, moves=(), sizes=(2, 1, 8)):
        f = FetchParams(3, tuple(leaves), (), tuple(moves), ("step", 0), (), 32, False, False, False)
        uniforms = {f"i{k}src_strides": st for k, st in enumerate(strides)} | {
            f"i{k}src_base": b for k, b in enumerate(bases)}
        return _leaf_blocks(f, uniforms, sizes, 4)

    plain = (32, (), False, 0)
    assert modes([plain], [(8, 5, 1)], [0]) == (1,)  # the size-1 axis's stride 5 does not count
    assert modes([plain], [(8, 8, -1)], [7]) == (-1,) and modes([plain], [(8, 8, -1)], [6]) == (0,)
    assert modes([plain], [(6, 8, 1)], [0]) == (0,) and modes([plain], [(8, 8, 2)], [0]) == (0,)
    assert modes([plain], [(8, 8, 1)], [1]) == (0,)
    assert modes([(64, (), False, 0)], [(8, 8, 1)], [0]) == (0,)  # 2 per block, the output's 4
    assert modes([(32, (), True, 0)], [(0, 0, 0)], [0]) == (0,)  # one element: loaded once instead
    assert modes([plain, (32, (), False, 1)], [(8, 8, 1), (8, 8, 1)], [0, 1]) == (1, 0)
    assert modes([plain, plain], [(8, 8, 1), (8, 8, 1)], [0, 1]) == (0, 0)  # one binding: words for both
    assert modes([plain], [(8, 8, 1)], [0], moves=((0, 32, ()),)) == (0,)  # a move left: per coordinate


def test_what_mixed_chains_materialize(vulkan_device):
    """Fusion stops where a value computes and is read twice (an element-wise value, or data
    movement over one: computed once, written), at a graph output, at a broadcast read
    (another shape than the reader's) and at FLOAT64 steps; data movement alone is
    recomputed in each reader."""
    g = dml.Graph(vulkan_device)
    x = g.input([3, 4], dtype=np.float32, name="x")
    s = dml.slice(dml.exp(x), [0, 0], [3, 4], [1, -1])  # read twice below: written (exp in its kernel)
    twice = dml.add(s, dml.sigmoid(s))
    p = dml.pad(x, [0, 0], [0, 0])  # pure data movement read twice: recomputed (here in one kernel: one read)
    both = dml.multiply(p, dml.relu(p))
    col = dml.slice(x, [0, 0], [3, 1])  # [3, 1] read broadcast to [3, 4]: written
    wide = dml.add(x, col)
    d = g.input([3, 4], dtype=np.float64, name="d")
    f64 = dml.identity(dml.identity(dml.slice(d, [0, 0], [3, 4], [-1, 1])))  # FLOAT64 steps: each its own kernel
    names = [step.name for step in g.compile([twice, both, wide, f64]).steps]
    assert names == ["Fused(ElementWiseExp>Slice1)", "Fused(ActivationSigmoid>ElementWiseAdd1)",
                     "Fused(Padding>ActivationRelu>ElementWiseMultiply)", "Slice1", "ElementWiseAdd1",
                     "Slice1", "ElementWiseIdentity", "ElementWiseIdentity"]
    feed = {"x": np.linspace(-2, 2, 12, dtype=np.float32).reshape(3, 4),
            "d": np.linspace(-3, 3, 12).reshape(3, 4)}
    outputs = [twice, both, wide, f64]
    _compare(g.compile(outputs), g.compile(outputs, fuse=False), feed, exact=False)


def test_a_mixed_chain_is_cut_to_the_bindings():
    """Element-wise nodes adding ReverseSubsequences' values (each with its own lengths):
    every kernel binds at most the adapter's storage buffers, and every node is computed once."""
    desc = dml.TensorDesc(T.FLOAT32, [2, 5])
    lengths = dml.TensorDesc(T.UINT32, [2, 1])
    rs, add = spec_named("reverse_subsequences"), spec_named("add")

    class Node:
        def __init__(self, d, inputs, outputs):
            self.desc, self.spec, self.inputs, self.outputs = d, fusion.spec_for(d), inputs, outputs

    nodes, value_descs, value = [], {0: desc}, 0
    for i in range(12):
        value_descs[100 + i], value_descs[200 + i], value_descs[300 + i] = lengths, desc, desc
        nodes.append(Node(rs.infer_output(desc, lengths, 1), (value, 100 + i), (200 + i,)))
        nodes.append(Node(add.infer_output(desc, desc), (200 + i, 0), (300 + i,)))
        value = 300 + i
    gpu = caps.profile("gpu")  # 8 storage buffers per kernel
    groups = fusion.group_nodes(nodes, [311], value_descs, gpu.max_storage_buffers_per_shader_stage)
    assert len(groups) > 1 and sorted(i for grp in groups for i in grp.nodes) == list(range(24))
    for group in groups:
        (kernel,) = compiler.compile(group.desc, gpu, operation=group.spec).kernels
        assert len(kernel.buffers) <= 8


def test_mixed_fused_kernels_are_checked_like_an_operator(device):
    """The autotuner's and the lab's check of a fused kernel (its spec's sample inputs, its
    nodes' references composed, the precision of the last): an element-wise kernel writing
    moved values, and a Reduce reading them, under every strategy."""
    from gpudml.device import CompiledOperator, Operator
    from gpudml.runtime.tensor import logical_from_raw

    g = dml.Graph(device)
    x = g.input([5, 6], dtype=np.float32, name="x")
    n = g.input([5, 1], dtype=np.uint32, name="n")
    moved = dml.pad(dml.log(dml.reverse_subsequences(dml.abs(x), n, 1)), [1, 0], [0, 1], value=2.0)
    outputs = [moved, dml.reduce(dml.log(dml.pad(dml.abs(x), [1, 0], [0, 1], value=1.0)), "sum", [1])]
    for out in outputs:
        (step,) = g.compile([out]).steps[-1:]
        desc = step.compiled.desc
        spec = fusion.elementwise_spec(desc)
        raws = spec.sample_buffers(desc, np.random.default_rng(2))
        for strategy in step.compiled.strategies:
            compiled = CompiledOperator(device, Operator(device, desc, spec), strategy)
            assert [r.size for r in raws] == [d.required_elements for _, d in compiled.inputs]
            logical = [logical_from_raw(r, d) for r, (_, d) in zip(raws, compiled.inputs)]
            (want,), (tolerance,) = spec.expected_outputs(desc, logical)
            got = compiled.execute([device.tensor(r, desc=d) for r, (_, d) in zip(raws, compiled.inputs)])[0]
            assert_within(got.numpy(), want, tolerance, f"{spec.name} {strategy}")
