"""Store epilogues (gpudml/fusion.py, kernels/epilogue.py, shaders/lib/epilogue.wgsl.j2): a
chain of element-wise nodes reading the value of a Reduce, ArgMax/ArgMin, GEMM, softmax,
normalization or scan node runs in that node's kernel, applied before its store, also
where that kernel reads its input through a prologue (data movement is read, not stored:
the element-wise kernel reads it through its chain). Per
family: the dispatch count and the values against the unfused graph (bit-exact for integer
steps, within the float type's rounding otherwise), float16 and integer cases, a second
input broadcast by stride 0; every strategy of each family against the fused spec's
semantics (what autotuning and the lab check); what is not fused (a value read twice, a
graph output, a 64-bit step)."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import random_bits

import gpudml as dml
from gpudml import fusion
from gpudml.device import CompiledOperator, Operator
from gpudml.testing import assert_bit_equal, assert_within


def _normal(rng, shape, dtype=np.float32, scale=1.0):
    return (rng.standard_normal(shape) * scale).astype(dtype)


# Each case: (graph builder g, rng -> (output, feed)), the fused kernel's name.
def _reduce(g, rng):
    x = g.input([6, 37], name="x")
    return dml.sigmoid(dml.reduce(x, "sum", [1])), {"x": _normal(rng, (6, 37))}


def _reduce_f16_broadcast(g, rng):
    x = g.input([4, 5, 9], dtype=np.float16, name="x")
    bias = np.linspace(-2, 2, 5, dtype=np.float16).reshape(5, 1)  # [5, 1] read as [4, 5, 1]: stride 0 on axis 0
    return dml.add(dml.reduce(x, "max", [2]), bias), {"x": _normal(rng, (4, 5, 9), np.float16, 3)}


def _reduce_columns(g, rng):
    x = g.input([300, 8], name="x")
    return dml.sigmoid(dml.reduce(x, "sum", [0])), {"x": _normal(rng, (300, 8), scale=0.1)}


def _argmax_cast(g, rng):
    x = g.input([7, 11], dtype=np.float16, name="x")
    return dml.cast(dml.argmax(x, [1], output_data_type="UINT32"), "UINT8"), {"x": _normal(rng, (7, 11), np.float16)}


def _argmin_int(g, rng):
    x = g.input([3, 4, 6], dtype=np.int8, name="x")
    y = g.input([4, 1], dtype=np.int32, name="y")
    feed = {"x": random_bits(rng, np.int8, (3, 4, 6)), "y": random_bits(rng, np.int32, (4, 1))}
    return dml.multiply(dml.argmin(x, [2], output_data_type="INT32"), y), feed


def _gemm(g, rng):
    a, b = g.input([6, 5], name="a"), g.input([5, 7], name="b")
    bias = g.input([7], name="bias")  # broadcast along rows: stride 0
    feed = {"a": _normal(rng, (6, 5)), "b": _normal(rng, (5, 7)), "bias": _normal(rng, (7,))}
    return dml.relu(dml.add(dml.gemm(a, b), bias)), feed


def _gemm_f16_activation(g, rng):
    a, b = g.input([2, 3, 4], dtype=np.float16, name="a"), g.input([2, 4, 5], dtype=np.float16, name="b")
    y = g.input([2, 3, 5], dtype=np.float16, name="y")
    feed = {k: _normal(rng, s, np.float16) for k, s in (("a", (2, 3, 4)), ("b", (2, 4, 5)), ("y", (2, 3, 5)))}
    return dml.subtract(dml.gemm(a, b, fused_activation="tanh"), y), feed


def _softmax(g, rng):
    x, y = g.input([4, 10], name="x"), g.input([4, 10], name="y")
    return dml.multiply(dml.softmax(x), y), {"x": _normal(rng, (4, 10), scale=3), "y": _normal(rng, (4, 10))}


def _softmax_blocks(g, rng):
    """Rows of whole 16-byte blocks: `rows` and `chunks` read them by blocks, store element by element."""
    x, y = g.input([4, 16], dtype=np.float16, name="x"), g.input([4, 16], dtype=np.float16, name="y")
    feed = {"x": _normal(rng, (4, 16), np.float16, 3), "y": _normal(rng, (4, 16), np.float16)}
    return dml.multiply(dml.log_softmax(x), y), feed


def _conv(g, rng):
    """A convolution with its bias, then a residual add and a ReLU (ResNet's block end)."""
    x, w, b, y = (g.input(shape, name=n) for shape, n in (([1, 3, 9, 9], "x"), ([4, 3, 3, 3], "w"), ([4], "b"),
                                                           ([1, 4, 9, 9], "y")))
    feed = {"x": _normal(rng, (1, 3, 9, 9)), "w": _normal(rng, (4, 3, 3, 3)), "b": _normal(rng, (4,)),
            "y": _normal(rng, (1, 4, 9, 9))}
    conv = dml.convolution(x, w, b, start_padding=[1, 1], end_padding=[1, 1])
    return dml.relu(dml.add(conv, y)), feed


def _conv_viewed(g, rng):
    """A 1-D convolution run as 2-D (ONNX's Conv of [N, C, W], as the session maps it): its
    [1, 4, 7, 1] output read as [1, 4, 7] (Graph.view, a reshape) by the residual add and the ReLU."""
    x, w, b, y = (g.input(shape, name=n) for shape, n in (([1, 3, 7, 1], "x"), ([4, 3, 3, 1], "w"), ([4], "b"),
                                                           ([1, 4, 7], "y")))
    feed = {"x": _normal(rng, (1, 3, 7, 1)), "w": _normal(rng, (4, 3, 3, 1)), "b": _normal(rng, (4,)),
            "y": _normal(rng, (1, 4, 7))}
    conv = dml.convolution(x, w, b, start_padding=[1, 0], end_padding=[1, 0])
    return dml.relu(dml.add(g.view(conv, [1, 4, 7]), y)), feed


def _mvn(g, rng):
    """LayerNorm with its own scale and bias (the operator's inputs 1 and 2), then a
    residual add: the epilogue's tensor is bound after the operator's."""
    x, s, b, y = (g.input(shape, name=n) for shape, n in (([6, 12], "x"), ([1, 12], "s"), ([1, 12], "b"),
                                                           ([6, 12], "y")))
    feed = {"x": _normal(rng, (6, 12)), "s": _normal(rng, (1, 12)), "b": _normal(rng, (1, 12)),
            "y": _normal(rng, (6, 12))}
    return dml.add(dml.mean_variance_normalization(x, s, b, axes=[1]), y), feed


def _scan(g, rng):
    x = g.input([3, 50], name="x")
    return dml.tanh(dml.cumulative_sum(x, 1)), {"x": _normal(rng, (3, 50), scale=0.3)}


def _scan_int(g, rng):
    x, y = g.input([5, 8], dtype=np.int32, name="x"), g.input([5, 8], dtype=np.int32, name="y")
    feed = {"x": random_bits(rng, np.int32, (5, 8)), "y": random_bits(rng, np.int32, (5, 8))}
    return dml.add0(dml.cumulative_sum(x, 0, axis_direction="decreasing"), y), feed


def _slice(g, rng):
    x = g.input([6, 9], name="x")
    return dml.exp(dml.slice(x, [1, 0], [4, 9], [1, -2])), {"x": _normal(rng, (6, 9))}


def _pad_uint8(g, rng):
    x, y = g.input([3, 5], dtype=np.uint8, name="x"), g.input([5, 7], dtype=np.uint8, name="y")
    feed = {"x": random_bits(rng, np.uint8, (3, 5)), "y": random_bits(rng, np.uint8, (5, 7))}
    return dml.add0(dml.pad(dml.slice(x, [0, 0], [3, 5], [-1, 1]), [1, 1], [1, 1], mode="reflection"), y), feed


def _reduce_through_pad(g, rng):
    x = g.input([6, 37], name="x")
    return dml.sigmoid(dml.reduce(dml.pad(x, [0, 2], [0, 3], mode="edge"), "sum", [1])), {"x": _normal(rng, (6, 37))}


def _reduce_through_exp(g, rng):
    x = g.input([6, 37], name="x")
    bias = np.linspace(-1, 1, 6, dtype=np.float32).reshape(6, 1)
    return dml.add(dml.reduce(dml.exp(dml.multiply(x, np.float32([[0.1]]))), "sum", [1]), bias), \
        {"x": _normal(rng, (6, 37))}


def _argmax_through_slice(g, rng):
    h = g.input([7, 11], dtype=np.float16, name="h")
    arg = dml.argmax(dml.slice(dml.negate(h), [0, 1], [7, 9], [1, -1]), [1], output_data_type="UINT32")
    return dml.cast(arg, "UINT8"), {"h": _normal(rng, (7, 11), np.float16)}


def _scan_through_exp(g, rng):
    c = g.input([5, 9], name="c")
    return dml.tanh(dml.cumulative_sum(dml.exp(dml.multiply(c, np.float32([[0.1]]))), 1)), \
        {"c": _normal(rng, (5, 9))}


def _fold(g, rng):
    x = g.input([2, 12, 12], name="x")  # the blocks of a [2, 3, 5, 4] image: a 2 x 2 window, stride 1
    bias = np.linspace(-1, 1, 3, dtype=np.float32).reshape(1, 3, 1, 1)
    return dml.add(dml.fold(x, [5, 4], [2, 2]), bias), {"x": _normal(rng, (2, 12, 12))}


CASES = {
    "reduce": (_reduce, "Fused(Reduce>ActivationSigmoid)"),
    "reduce-columns": (_reduce_columns, "Fused(Reduce>ActivationSigmoid)"),
    "reduce-float16-broadcast": (_reduce_f16_broadcast, "Fused(Reduce>ElementWiseAdd1)"),
    "argmax-cast": (_argmax_cast, "Fused(ArgMax>Cast)"),
    "argmin-int": (_argmin_int, "Fused(ArgMin>ElementWiseMultiply)"),
    "gemm": (_gemm, "Fused(Gemm>ElementWiseAdd1>ActivationRelu)"),
    "gemm-float16-activation": (_gemm_f16_activation, "Fused(Gemm>ElementWiseSubtract)"),
    "softmax": (_softmax, "Fused(ActivationSoftmax1>ElementWiseMultiply)"),
    "softmax-blocks": (_softmax_blocks, "Fused(ActivationLogSoftmax1>ElementWiseMultiply)"),
    "conv": (_conv, "Fused(Convolution>ElementWiseAdd1>ActivationRelu)"),
    "conv-viewed": (_conv_viewed, "Fused(Convolution>ElementWiseAdd1>ActivationRelu)"),
    "mvn": (_mvn, "Fused(MeanVarianceNormalization1>ElementWiseAdd1)"),
    "scan": (_scan, "Fused(CumulativeSummation>ElementWiseTanh)"),
    "scan-int": (_scan_int, "Fused(CumulativeSummation>ElementWiseAdd)"),
    "fold": (_fold, "Fused(Fold>ElementWiseAdd1)"),
    # a producer reading through its prologue too: a chain, or element-wise (and movement) nodes
    "reduce-through-pad": (_reduce_through_pad, "Fused(Padding>Reduce>ActivationSigmoid)"),
    "reduce-through-exp": (_reduce_through_exp, "Fused(ElementWiseMultiply>ElementWiseExp>Reduce>ElementWiseAdd1)"),
    "argmax-through-slice": (_argmax_through_slice, "Fused(ElementWiseNegate>Slice1>ArgMax>Cast)"),
    "scan-through-exp": (_scan_through_exp,
                         "Fused(ElementWiseMultiply>ElementWiseExp>CumulativeSummation>ElementWiseTanh)"),
}


def _compare(got, want):
    if np.dtype(got.dtype).kind == "f":
        eps = float(np.finfo(got.dtype).eps)
        np.testing.assert_allclose(got, want, rtol=4 * eps, atol=4 * eps * float(np.max(np.abs(want))))
    else:
        assert_bit_equal(got, want)


@pytest.mark.parametrize("case", list(CASES))
def test_an_elementwise_chain_runs_in_the_producers_store(device, case):
    """The producer's kernels and no more: the chain costs no dispatch, and the result is the
    unfused graph's (integer steps bit-exact; float steps within a few ULP of the output type:
    the unfused kernels round the producer's value to its type too, a compiler may contract)."""
    build, name = CASES[case]
    g = dml.Graph(device)
    out, feed = build(g, np.random.default_rng(3))
    fused, unfused = g.compile([out]), g.compile([out], fuse=False)
    assert [s.name for s in fused.steps] == [name]
    assert fused.dispatch_count == len(fused.steps[0].compiled.program.kernels) < unfused.dispatch_count
    (got,), (want,) = fused(feed), unfused(feed)
    _compare(got, want)


def _values(g, feed) -> dict:
    return {**{e.value_id: feed[e.name] for e in g._inputs.values()}, **g.constants}


@pytest.mark.parametrize("case, strategies", [
    ("reduce", {"rows": 1, "partials": 2, "workgroup": 1}),
    ("reduce-columns", {"rows": 1, "partials": 2, "columns": 2, "workgroup": 1}),
    ("argmax-cast", None), ("gemm", None), ("gemm-float16-activation", None), ("softmax", None),
    ("softmax-blocks", None), ("scan", None), ("reduce-through-pad", {"rows": 1, "partials": 2, "workgroup": 1}),
    ("reduce-through-exp", None), ("argmax-through-slice", None), ("scan-through-exp", None), ("conv", None),
    ("conv-viewed", None),
    ("mvn", None), ("fold", {"runs": 1, "elements": 1}),
])
def test_every_strategy_takes_the_epilogue(vulkan_device, case, strategies):
    """Each strategy of the producer's family stores through the epilogue (in the last pass
    of several), checked against the fused spec's semantics: its sample inputs and expected
    outputs (the producer's reference, then the nodes'), as autotuning and the lab check it."""
    build, _ = CASES[case]
    g = dml.Graph(vulkan_device)
    out, feed = build(g, np.random.default_rng(4))
    step = g.compile([out]).steps[-1]
    desc = step.compiled.desc
    spec = fusion.epilogue_spec(desc)
    values = _values(g, feed)
    arrays = [np.asarray(values[v]) for v in step.inputs]
    buffers = spec.sample_buffers(desc, np.random.default_rng(5))
    assert [b.size for b in buffers] == [d.required_elements for d in desc.input_tensors + desc.read_tensors]
    logical = [a.reshape(d.sizes) if a.size == d.element_count else np.broadcast_to(a, d.sizes) if a.ndim else a
               for a, d in zip(arrays, desc.input_tensors + desc.read_tensors)]  # (a bias [C]: its desc [1, C, 1, 1])
    (want,), (tolerance,) = spec.expected_outputs(desc, logical)
    eligible = step.compiled.strategies
    if strategies is not None:
        assert set(eligible) == set(strategies)
    for strategy in eligible:
        compiled = CompiledOperator(vulkan_device, Operator(vulkan_device, desc, spec), strategy)
        if strategies is not None:
            assert len(compiled.program.kernels) == strategies[strategy], strategy
        got = compiled.execute([vulkan_device.tensor(a) for a in arrays])[0].numpy()
        assert_within(got, want, tolerance, strategy) if tolerance is not None else assert_bit_equal(got, want)


def test_what_is_not_fused(vulkan_device):
    """A producer's value that is a graph output, or read twice, is written (the reader's
    chain runs as its own kernel); so is one read by a 64-bit step, or through a broadcast."""
    g = dml.Graph(vulkan_device)
    x = g.input([4, 6], name="x")
    r = dml.reduce(x, "sum", [1])
    as_output = g.compile([dml.sigmoid(r), r])
    assert [s.name for s in as_output.steps] == ["Reduce", "ActivationSigmoid"]
    twice = g.compile([dml.add(dml.sigmoid(r), r)])
    assert [s.name for s in twice.steps] == ["Reduce", "Fused(ActivationSigmoid>ElementWiseAdd1)"]
    wide = g.compile([dml.cast(dml.argmax(x, [1]), "INT32")])  # ArgMax's INT64 output
    assert [s.name for s in wide.steps] == ["ArgMax", "Cast"]
    broadcast = g.compile([dml.add(r, g.input([3, 4, 1], name="y"))])  # r [4, 1] read as [3, 4, 1]
    assert [s.name for s in broadcast.steps] == ["Reduce", "ElementWiseAdd1"]
    # r [4, 1] viewed as [2, 2, 1]: a reshape; but the other operand broadcasts (offsets differ)
    viewed = g.compile([dml.add(g.view(r, [2, 2, 1]), g.input([2, 1, 1], name="z"))])
    assert [s.name for s in viewed.steps] == ["Reduce", "ElementWiseAdd1"]
    w = g.input([6, 2], name="w")
    transposed = g.compile([dml.exp(g.view(dml.gemm(x, w), [2, 4], [1, 2]))])  # a layout change, no reshape
    assert [s.name for s in transposed.steps] == ["Gemm", "ElementWiseExp"]
    chained = g.compile([dml.exp(dml.gemm(x, dml.sigmoid(w)))])
    assert [s.name for s in chained.steps] == ["ActivationSigmoid", "Fused(Gemm>ElementWiseExp)"]
    feed = {"x": np.linspace(-1, 1, 24, dtype=np.float32).reshape(4, 6), "y": np.ones((3, 4, 1), np.float32),
            "w": np.linspace(-2, 2, 12, dtype=np.float32).reshape(6, 2), "z": np.ones((2, 1, 1), np.float32)}
    for op in (as_output, twice, broadcast, viewed, transposed, chained):
        given = {e.name: feed[e.name] for e in op.inputs}
        for got, want in zip(op(given), g.compile(list(op.outputs), fuse=False)(given)):
            _compare(got, want)


def test_the_generated_kernel_applies_the_steps_in_its_store(vulkan_device):
    """The GEMM's own fused activation stays; the epilogue follows it in the same store,
    its attributes in the uniforms (ep0_alpha: a new value compiles nothing)."""
    g = dml.Graph(vulkan_device)
    a, b = g.input([3, 4], name="a"), g.input([4, 5], name="b")
    out = dml.elu(dml.gemm(a, b, fused_activation="relu"), alpha=0.5)
    (step,) = g.compile([out]).steps
    (kernel,) = step.compiled.program.kernels
    assert "fn activation(" in kernel.source and "fn epilogue(" in kernel.source
    assert "ep0_alpha" in kernel.source


@pytest.mark.parametrize("build, name", [(_slice, "Fused(Slice1>ElementWiseExp)"),
                                         (_pad_uint8, "Fused(Slice1>Padding>ElementWiseAdd)")])
def test_data_movement_is_read_through_its_chain(device, build, name):
    """An element-wise chain over data movement is one kernel too, but the element-wise
    kernel's (reading the movement nodes' value through their chain: fusion's load side),
    not the movement kernel storing the steps: bit for bit the unfused graph's here."""
    g = dml.Graph(device)
    out, feed = build(g, np.random.default_rng(3))
    fused, unfused = g.compile([out]), g.compile([out], fuse=False)
    assert [s.name for s in fused.steps] == [name] and fused.dispatch_count == 1
    assert isinstance(fused.steps[0].compiled.desc, fusion.FusedElementWiseDesc)
    (got,), (want,) = fused(feed), unfused(feed)
    _compare(got, want)
