"""DML_OPERATOR_CONVOLUTION (gpudml/ops/convolution.py; kernels/convolution.py): what the
conformance kit (tests/test_conformance.py) does not cover: the reference against a
brute-force loop (a third formulation), 1-D to 3-D shapes with strides, dilations,
asymmetric padding, BACKWARD with OutputPadding, groups and depthwise, both modes, the bias
and fused activations, FLOAT16 accumulated in float32, strided and broadcast descriptions,
split-K, each validation rule's message, the strategies' order, `gpudml shader
convolution`. Shapes are small: every distinct kernel is a pipeline to compile."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import gpudml as dml
from gpudml import caps as caps_module
from gpudml import cli
from gpudml.ops import convolution as conv_op
from gpudml.ops import spec_named
from gpudml.testing import assert_within

T = dml.DataType
SPEC = spec_named("convolution")


def uniform(rng, shape, dtype=np.float32):
    return rng.uniform(-1, 1, shape).astype(dtype)


def brute_force(x, w, b=None, *, strides, dilations, start_padding, output_padding=None, group_count=1,
                direction="forward", mode="cross_correlation", out_sizes):
    """Element by element, from the page's definitions: FORWARD gathers x[o s + k d - p],
    BACKWARD scatters x[i] to o = i s + k d - p (kept where it lands inside the output)."""
    x, w = x.astype(np.float64), w.astype(np.float64)
    if mode == "convolution":
        w = np.flip(w, axis=tuple(range(2, w.ndim)))
    n, cin = x.shape[:2]
    cig = cin // group_count
    window = w.shape[2:]
    cout = w.shape[0] if direction == "forward" else w.shape[1] * group_count
    cog = cout // group_count
    y = np.zeros((n, cout, *out_sizes))
    for b_, co in itertools.product(range(n), range(cout)):
        g = co // cog
        for ci in range(g * cig, (g + 1) * cig):
            for k in itertools.product(*map(range, window)):
                if direction == "forward":
                    wv = w[co, ci - g * cig][k]
                    for o in itertools.product(*map(range, out_sizes)):
                        i = [o[d] * strides[d] + k[d] * dilations[d] - start_padding[d] for d in range(len(o))]
                        if all(0 <= i[d] < x.shape[2 + d] for d in range(len(i))):
                            y[(b_, co) + o] += x[(b_, ci) + tuple(i)] * wv
                else:
                    wv = w[ci, co - g * cog][k]
                    for i in itertools.product(*map(range, x.shape[2:])):
                        o = [i[d] * strides[d] + k[d] * dilations[d] - start_padding[d] for d in range(len(i))]
                        if all(0 <= o[d] < out_sizes[d] for d in range(len(o))):
                            y[(b_, co) + tuple(o)] += x[(b_, ci) + i] * wv
    if b is not None:
        y += b.astype(np.float64).reshape((1, -1) + (1,) * len(out_sizes))
    return y


CASES = {  # name: (x shape, filter shape, bias?, keyword arguments)
    "1d": ((2, 3, 11), (4, 3, 3), True, {}),
    "2d-strides-dilations": ((1, 2, 9, 8), (3, 2, 3, 2), False, {"strides": (2, 3), "dilations": (2, 1)}),
    "2d-asymmetric-padding": ((1, 3, 6, 5), (2, 3, 3, 3), True,
                              {"start_padding": (2, 0), "end_padding": (0, 1), "strides": (1, 2)}),
    "3d": ((1, 2, 4, 5, 3), (2, 2, 2, 3, 2), True, {"start_padding": (1, 0, 1), "end_padding": (0, 1, 1)}),
    "groups": ((2, 6, 5, 5), (4, 3, 3, 3), True, {"group_count": 2, "start_padding": (1, 1), "end_padding": (1, 1)}),
    "depthwise": ((1, 5, 7, 6), (5, 1, 3, 3), True,
                  {"group_count": 5, "start_padding": (1, 1), "end_padding": (1, 1), "strides": (2, 1)}),
    "convolution-mode": ((1, 2, 6, 5), (3, 2, 3, 2), False, {"mode": "convolution", "start_padding": (1, 0)}),
    "backward": ((1, 2, 3, 4), (2, 3, 3, 3), True,
                 {"direction": "backward", "strides": (2, 3), "start_padding": (1, 0), "end_padding": (0, 2),
                  "output_padding": (1, 2)}),
    "backward-groups-dilations-convolution-mode": (
        (2, 4, 3, 3), (4, 1, 2, 3), False,
        {"direction": "backward", "group_count": 2, "dilations": (2, 1), "mode": "convolution", "strides": (1, 2)}),
    "backward-1d": ((1, 2, 5), (2, 2, 4), True, {"direction": "backward", "strides": (3,), "output_padding": (2,)}),
}


def _arrays(name, dtype=np.float32):
    xs, ws, has_bias, kwargs = CASES[name]
    rng = np.random.default_rng(sorted(CASES).index(name))
    x, w = uniform(rng, xs, dtype), uniform(rng, ws, dtype)
    cout = ws[0] if kwargs.get("direction", "forward") == "forward" else ws[1] * kwargs.get("group_count", 1)
    return x, w, (uniform(rng, (cout,), dtype) if has_bias else None), kwargs


@pytest.mark.parametrize("name", sorted(CASES))
def test_reference_is_the_brute_force_loop(name):
    """The reference (slices of the padded input, scatters of the transposed one) against the
    page's definitions element by element."""
    x, w, b, kwargs = _arrays(name)
    want = conv_op.exact_convolution(x, w, b, **{k: kwargs.get(k) for k in (
        "strides", "dilations", "start_padding", "end_padding", "output_padding")},
        group_count=kwargs.get("group_count", 1), direction=kwargs.get("direction", "forward"),
        mode=kwargs.get("mode", "cross_correlation"))
    spatial = x.ndim - 2
    loop = brute_force(x, w, b, strides=kwargs.get("strides", (1,) * spatial),
                       dilations=kwargs.get("dilations", (1,) * spatial),
                       start_padding=kwargs.get("start_padding", (0,) * spatial),
                       group_count=kwargs.get("group_count", 1), direction=kwargs.get("direction", "forward"),
                       mode=kwargs.get("mode", "cross_correlation"), out_sizes=want.shape[2:])
    np.testing.assert_allclose(want, loop, rtol=1e-12, atol=1e-12)


def check(device, x, w, b=None, strategies=(None,), options=None, **kwargs):
    """convolution(x, w, b, **kwargs) under each strategy (None: the default) against the
    reference within the documented precision; the compiled operators."""
    descs = [dml.TensorDesc(T.from_numpy(a.dtype), a.shape) for a in (x, w, b) if a is not None]
    desc = SPEC.infer_output(*descs, **kwargs)
    inputs = [a for a in (x, w, b) if a is not None]
    want = SPEC.reference(*inputs, **kwargs)
    tolerance = SPEC.tolerance(want, inputs, SPEC.arguments(desc))
    op = device.create_operator(desc)
    compiled = []
    for strategy in strategies:
        c = device.compile_operator(op, strategy, options=options)
        (got,) = c.execute(inputs)
        assert got.shape == want.shape
        assert_within(got, want, tolerance, f"convolution {strategy} {kwargs}")
        compiled.append(c)
    return compiled


@pytest.mark.parametrize("name", sorted(CASES))
def test_shapes(device, name):
    """1-D to 3-D, strides, dilations, asymmetric padding, groups, depthwise, both modes,
    BACKWARD with OutputPadding, the bias: the reference's result, one dispatch."""
    x, w, b, kwargs = _arrays(name)
    (compiled,) = check(device, x, w, b, **kwargs)
    assert len(compiled.program.kernels) == 1


def test_both_strategies_and_fused_activation(device):
    """`registers` and `workgroup` on one padded, grouped case with a bias and a fused
    activation (applied in the store: one dispatch)."""
    x, w, b, kwargs = _arrays("groups")
    for c in check(device, x * 3, w, b, strategies=("registers", "workgroup"), fused_activation="leaky_relu",
                   **kwargs):
        assert len(c.program.kernels) == 1
    check(device, *_arrays("backward")[:3], strategies=("workgroup",), fused_activation=dml.FusedActivation(
        "elu", alpha=0.5), **_arrays("backward")[3])


def test_float16_accumulates_in_float32(device):
    """FLOAT16: 4096 products of ones sum to exactly 4096 (a float16 sum would stop at 2048),
    rounded once; a random FLOAT16 case within its bound."""
    x = np.ones((1, 1024, 2, 2), np.float16)
    w = np.ones((2, 1024, 2, 2), np.float16)
    got = dml.convolution(x, w, device=device)
    assert got.dtype == np.float16 and got.shape == (1, 2, 1, 1) and (got == 4096).all()
    x, w, b, kwargs = _arrays("depthwise", np.float16)
    check(device, x, w, b, fused_activation="sigmoid", **kwargs)


def test_split_k(device):
    """K = 128 channels x 9, past twice `registers`' chunk of K: partial sums and a combine pass."""
    rng = np.random.default_rng(4)
    x, w, b = uniform(rng, (1, 128, 4, 4)), uniform(rng, (3, 128, 3, 3)), uniform(rng, (3,))
    (compiled,) = check(device, x, w, b, strategies=("registers",), start_padding=(1, 1), end_padding=(1, 1))
    assert len(compiled.program.kernels) == 2


def test_strided_and_broadcast_descriptions(device):
    """An input with gaps between rows and a broadcast (stride 0) batch axis, a filter stored
    with its channel axis outermost, a bias of stride 0 on its ones, a strided output: the
    reference's result on the logical tensors."""
    rng = np.random.default_rng(5)
    raw_x, raw_w, raw_b = uniform(rng, 400), uniform(rng, 400), uniform(rng, 8)
    x = dml.TensorDesc(T.FLOAT32, [2, 2, 5, 4], [0, 40, 7, 1])
    w = dml.TensorDesc(T.FLOAT32, [3, 2, 2, 2], [4, 12, 2, 1])
    b = dml.TensorDesc(T.FLOAT32, [1, 3, 1, 1], [0, 2, 0, 0])
    out = dml.TensorDesc(T.FLOAT32, [2, 3, 5, 3], [60, 1, 12, 3])
    desc = conv_op.ConvolutionOperatorDesc(x, w, b, out, start_padding=(1, 0), end_padding=(0, 0))
    lx = np.lib.stride_tricks.as_strided(raw_x, (2, 2, 5, 4), (0, 160, 28, 4))
    lw = np.lib.stride_tricks.as_strided(raw_w, (3, 2, 2, 2), (16, 48, 8, 4))
    lb = raw_b[::2][:3]
    want = SPEC.reference(lx, lw, lb, start_padding=(1, 0))
    tolerance = SPEC.tolerance(want, [lx, lw, lb], SPEC.arguments(desc))
    op = device.create_operator(desc)
    for strategy in ("registers", "workgroup"):
        (got,) = device.compile_operator(op, strategy).execute([raw_x, raw_w, raw_b])
        assert_within(got, want, tolerance, strategy)


def test_bias_as_given():
    """A bias of [C_out] is described as {1, C_out, 1, 1} with strides of 0 (no copy); one
    of {1, C_out, 1, 1} as it is."""
    x, w = dml.TensorDesc(T.FLOAT32, [1, 2, 4, 4]), dml.TensorDesc(T.FLOAT32, [3, 2, 1, 1])
    desc = SPEC.infer_output(x, w, dml.TensorDesc(T.FLOAT32, [3]))
    assert desc.bias_tensor.sizes == (1, 3, 1, 1) and desc.bias_tensor.strides == (0, 1, 0, 0)
    full = dml.TensorDesc(T.FLOAT32, [1, 3, 1, 1])
    assert SPEC.infer_output(x, w, full).bias_tensor is full


def test_strategy_order():
    """`registers` first on software adapters; `workgroup` first on GPUs, but for few output
    channels per group: `registers` there too; `direct` first for few channels per group
    both ways (depthwise), FORWARD, GEMM's strategies after it."""
    f32 = lambda *s: dml.TensorDesc(T.FLOAT32, list(s))  # noqa: E731
    cpu, gpu = caps_module.profile("vulkan-cpu"), caps_module.profile("gpu")
    wide = SPEC.infer_output(f32(1, 32, 8, 8), f32(32, 32, 3, 3))
    depthwise = SPEC.infer_output(f32(1, 32, 8, 8), f32(32, 1, 3, 3), group_count=32)
    few_out = SPEC.infer_output(f32(1, 32, 8, 8), f32(64, 1, 3, 3), group_count=32)
    backward = SPEC.infer_output(f32(1, 32, 8, 8), f32(32, 1, 3, 3), group_count=32, direction="backward")
    assert SPEC.planner.strategies_for(wide, cpu)[0] == "registers"
    assert SPEC.planner.strategies_for(wide, gpu)[0] == "workgroup"
    assert SPEC.planner.strategies_for(depthwise, cpu) == ("direct", "registers", "workgroup")
    assert SPEC.planner.strategies_for(depthwise, gpu) == ("direct", "registers", "workgroup")
    assert SPEC.planner.strategies_for(few_out, gpu)[0] == "direct"
    assert SPEC.planner.strategies_for(backward, gpu)[0] == "registers"
    assert "direct" not in SPEC.planner.strategies_for(SPEC.infer_output(  # 8 output channels per group
        f32(1, 4, 8, 8), f32(32, 1, 3, 3), group_count=4), cpu)


def test_direct_runs_and_the_loop_budget():
    """`direct`: runs of up to 8 outputs on CPU-class adapters (shorter where the row is, or
    where the row segment would pass 64 registers), one on GPUs; a window past the loop
    budget is not offered `direct` (GEMM cuts K)."""
    f32 = lambda *s: dml.TensorDesc(T.FLOAT32, list(s))  # noqa: E731
    cpu, gpu = caps_module.profile("vulkan-cpu"), caps_module.profile("gpu")

    def run(desc, caps):
        return SPEC.planner.plan(desc, caps, "direct").dispatches[0].params["run"]

    depthwise = SPEC.infer_output(f32(1, 4, 8, 20), f32(4, 1, 3, 3), group_count=4)
    assert (run(depthwise, cpu), run(depthwise, gpu)) == (8, 1)
    assert run(SPEC.infer_output(f32(1, 4, 8, 6), f32(4, 1, 3, 3), group_count=4), cpu) == 4
    assert run(SPEC.infer_output(f32(1, 4, 8, 90), f32(4, 1, 3, 3), group_count=4, dilations=(1, 40)), cpu) == 1
    assert "direct" in SPEC.planner.strategies_for(
        SPEC.infer_output(f32(1, 4, 170, 170), f32(4, 1, 170, 170), group_count=4), gpu)
    big = SPEC.infer_output(f32(1, 4, 190, 190), f32(4, 1, 190, 190), group_count=4)  # 36,100 positions
    assert "direct" not in SPEC.planner.strategies_for(big, cpu)
    assert "direct" not in SPEC.planner.strategies_for(big, gpu)
    with pytest.raises(dml.InvalidArgumentError, match="option run"):
        SPEC.planner.plan(depthwise, cpu, "registers", run=2)


DIRECT_CASES = {  # name: (x shape, filter shape, bias?, keyword arguments)
    "1d-dilations-padding": ((2, 4, 13), (4, 1, 3), True,
                             {"group_count": 4, "dilations": (2,), "start_padding": (2,), "end_padding": (1,)}),
    "2d-strides-padding": ((1, 5, 7, 11), (5, 1, 3, 3), True,
                           {"group_count": 5, "start_padding": (1, 1), "end_padding": (1, 1), "strides": (2, 1)}),
    "3d-convolution-mode": ((1, 3, 4, 5, 6), (3, 1, 2, 3, 3), False,
                            {"group_count": 3, "start_padding": (1, 0, 1), "end_padding": (0, 1, 1),
                             "mode": "convolution"}),
    "2-channels-strides-dilations": ((1, 4, 9, 10), (8, 2, 3, 3), True,
                                     {"group_count": 2, "strides": (2, 3), "dilations": (1, 2)}),
}


@pytest.mark.parametrize("name", sorted(DIRECT_CASES))
def test_direct(device, name):
    """Forced `direct` (chosen first for these anyway) on depthwise 1-D to 3-D cases and two
    channels per group, strides, dilations, padding, both modes, bias and fused activation,
    on runs (CPU-class) and one output per invocation (run 1)."""
    xs, ws, has_bias, kwargs = DIRECT_CASES[name]
    rng = np.random.default_rng(sorted(DIRECT_CASES).index(name))
    x, w = uniform(rng, xs), uniform(rng, ws)
    b = uniform(rng, (ws[0],)) if has_bias else None
    for options in (None, {"run": 1}):
        (compiled,) = check(device, x * 2, w, b, strategies=("direct",), options=options,
                            fused_activation="leaky_relu" if has_bias else None, **kwargs)
        assert len(compiled.program.kernels) == 1
    x16, w16 = x.astype(np.float16), w.astype(np.float16)
    check(device, x16, w16, None if b is None else b.astype(np.float16), strategies=("direct",),
          fused_activation="sigmoid", **kwargs)


def test_direct_takes_a_graphs_epilogue(device):
    """A depthwise convolution, its bias, a residual add and a ReLU: one `direct` kernel
    storing through the epilogue, the unfused graph's result."""
    g = dml.Graph(device)
    x, w, b, y = (g.input(shape, name=n) for shape, n in (([1, 4, 6, 9], "x"), ([4, 1, 3, 3], "w"), ([4], "b"),
                                                           ([1, 4, 6, 9], "y")))
    rng = np.random.default_rng(8)
    feed = {"x": uniform(rng, (1, 4, 6, 9)), "w": uniform(rng, (4, 1, 3, 3)), "b": uniform(rng, (4,)),
            "y": uniform(rng, (1, 4, 6, 9))}
    out = dml.relu(dml.add(dml.convolution(x, w, b, start_padding=[1, 1], end_padding=[1, 1], group_count=4), y))
    fused, unfused = g.compile([out]), g.compile([out], fuse=False)
    (step,) = fused.steps
    assert step.compiled.strategy == "direct" and fused.dispatch_count == 1
    (got,), (want,) = fused(feed), unfused(feed)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


# ============================================================================ bad input
def _f(*sizes, dt=T.FLOAT32):
    return dml.TensorDesc(dt, list(sizes))


def _desc(x=(1, 4, 5, 5), w=(2, 4, 3, 3), out=(1, 2, 3, 3), bias=None, dt=T.FLOAT32, **kwargs):
    return conv_op.ConvolutionOperatorDesc(_f(*x, dt=dt), _f(*w, dt=dt), None if bias is None else _f(*bias, dt=dt),
                                           _f(*out, dt=dt), **kwargs)


@pytest.mark.parametrize(("desc", "match"), [
    (lambda: _desc(w=(2, 3, 3, 3)),
     r"Convolution: filter_tensor.sizes\[1\] = 3 must be InputChannelCount / group_count = 4 / 1 = 4"),
    (lambda: _desc(w=(3, 2, 3, 3), out=(1, 3, 3, 3), group_count=2),
     r"Convolution: filter_tensor.sizes\[0\] = 3 \(OutputChannelCount\) must be a multiple of group_count = 2"),
    (lambda: _desc(group_count=3), r"Convolution: input_tensor.sizes\[1\] = 4 \(InputChannelCount\) must be a multiple "
                                   r"of group_count = 3"),
    (lambda: _desc(group_count=0), r"Convolution: group_count = 0 must be at least 1"),
    (lambda: _desc(w=(2, 4, 7, 3)),
     r"Convolution: the window is larger than the padded input on spatial axis 0: \(filter_tensor.sizes\[2\] - 1\) "
     r"\* dilations\[0\] \+ 1 = \(7 - 1\) \* 1 \+ 1 = 7 > input_tensor.sizes\[2\] \+ start_padding\[0\] \+ "
     r"end_padding\[0\] = 5 \+ 0 \+ 0 = 5"),
    (lambda: _desc(dilations=(3, 1)), r"Convolution: the window is larger than the padded input on spatial axis 0"),
    (lambda: _desc(strides=(0, 1)), r"Convolution: strides\[0\] = 0 must be in \[1, 4294967295\]"),
    (lambda: _desc(dilations=(1, 0)), r"Convolution: dilations\[1\] = 0 must be in \[1, 4294967295\]"),
    (lambda: _desc(start_padding=(-1, 0)), r"Convolution: start_padding\[0\] = -1 must be in \[0, 4294967295\]"),
    (lambda: _desc(strides=(1, 1, 1)), r"Convolution: strides has 3 entries \[1, 1, 1\]; DimensionCount is 2"),
    (lambda: _desc(out=(1, 2, 3, 4)), r"Convolution: output_tensor.sizes \[1, 2, 3, 4\] must be \[1, 2, 3, 3\]"),
    (lambda: _desc(out=(1, 4, 3, 3)), r"Convolution: output_tensor.sizes \[1, 4, 3, 3\] must be \[1, 2, 3, 3\]"),
    (lambda: _desc(output_padding=(1, 0)), r"Convolution: output_padding = \[1, 0\] must be zeros in the FORWARD"),
    (lambda: _desc(bias=(2,)), r"Convolution: all tensors must have the same DimensionCount"),
    (lambda: _desc(bias=(1, 3, 1, 1)), r"Convolution: bias_tensor.sizes \[1, 3, 1, 1\] must be \[1, 2, 1, 1\]"),
    (lambda: _desc(dimension_count=3), r"Convolution: dimension_count = 3 must be the tensors' DimensionCount 4 - 2"),
    (lambda: _desc(w=(4, 2, 3, 3), out=(1, 2, 7, 8), direction="backward"),
     r"Convolution: output_tensor.sizes \[1, 2, 7, 8\] must be \[1, 2, 7, 7\] .* of the BACKWARD direction"),
    (lambda: _desc(w=(3, 2, 3, 3), out=(1, 2, 7, 7), direction="backward"),
     r"Convolution: filter_tensor.sizes\[0\] = 3 must be InputChannelCount = input_tensor.sizes\[1\] = 4 \(BACKWARD"),
    (lambda: _desc(x=(1, 4, 1, 1), w=(4, 2, 1, 1), out=(1, 2, 1, 1), direction="backward", start_padding=(1, 0)),
     r"Convolution: the BACKWARD output is empty on spatial axis 0: .* = 0 < 1"),
    (lambda: _desc(w=(2, 4, 3, 3, 1)), r"Convolution: all tensors must have the same DimensionCount"),
    (lambda: _desc(dt=T.INT32), r"Convolution: input_tensor.data_type INT32 is not supported at FL_6_4 "
                                r"\(supported: FLOAT32, FLOAT16\)"),
    (lambda: conv_op.ConvolutionOperatorDesc(_f(1, 4, 5, 5), _f(2, 4, 3, 3, dt=T.FLOAT16), None, _f(1, 2, 3, 3)),
     r"Convolution: filter_tensor.data_type FLOAT16 must equal input_tensor.data_type FLOAT32"),
    (lambda: _desc(x=(1, 4, 5, 5, 5, 5), w=(2, 4, 3, 3, 3, 3), out=(1, 2, 3, 3, 3, 3)),
     r"Convolution: DimensionCount 6 is not supported at FL_6_4 \(supported: 3-5\)"),
    (lambda: _desc(mode="sideways"), r"Convolution: mode: 'sideways' is not a ConvolutionMode"),
    (lambda: _desc(direction="up"), r"Convolution: direction: 'up' is not a ConvolutionDirection"),
    (lambda: _desc(fused_activation="softmax"), r"Convolution: fused_activation: 'softmax' is not an activation"),
])
def test_bad_descriptions(vulkan_device, desc, match):
    """Each rule's InvalidArgumentError names the field, the rule and the values, before any
    GPU work."""
    with pytest.raises(dml.InvalidArgumentError, match=match):
        vulkan_device.create_operator(desc())


def test_feature_level_1_0_takes_four_and_five_dimensions():
    desc = conv_op.ConvolutionOperatorDesc(_f(1, 2, 5), _f(1, 2, 3), None, _f(1, 1, 3))
    with pytest.raises(dml.InvalidArgumentError, match="DimensionCount 3 is not supported at FL_1_0 .* FL_4_0"):
        SPEC.validate(desc, dml.FeatureLevel.FL_1_0)
    SPEC.validate(desc, dml.FeatureLevel.FL_4_0)


def test_bad_functional_calls(vulkan_device):
    x, w = np.ones((1, 2, 4, 4), np.float32), np.ones((3, 2, 3, 3), np.float32)
    with pytest.raises(dml.InvalidArgumentError, match=r"convolution: direction: 'up' is not a ConvolutionDirection"):
        dml.convolution(x, w, direction="up", device=vulkan_device)
    with pytest.raises(dml.InvalidArgumentError, match=r"convolution: strides\[0\]: expected an integer"):
        dml.convolution(x, w, strides=[1.5, 1], device=vulkan_device)
    with pytest.raises(dml.InvalidArgumentError, match=r"Convolution: bias_tensor.sizes \[1, 2, 1, 1\] must be"):
        dml.convolution(x, w, np.ones(2, np.float32), device=vulkan_device)
    with pytest.raises(dml.InvalidArgumentError, match=r"DimensionCount 2 is not supported"):
        dml.convolution(np.ones((2, 4), np.float32), np.ones((2, 4), np.float32), device=vulkan_device)


def test_shader_cli(capsys):
    assert cli.main(["shader", "convolution", "--shape", "1,8,6,6", "--channels", "4", "--pads", "1,1", "--bias",
                     "yes", "--caps", "gl-cpu"]) == 0
    out = capsys.readouterr().out
    assert "fn a_load" in out and "fn out_offset" in out
    assert cli.main(["shader", "convolution", "--shape", "1,8,6,6", "--direction", "backward", "--strides", "2,2",
                     "--caps", "gpu", "--strategy", "workgroup"]) == 0
    assert "var<workgroup> tile_a" in capsys.readouterr().out


def test_window_coordinates_past_i32_are_unsupported(vulkan_device):
    """A stride whose window origins pass 2^31 is an UnsupportedError naming the axis, at compile."""
    desc = SPEC.infer_output(_f(1, 1, 1, 3), _f(1, 1, 1, 1), strides=(1, 2**30))
    op = vulkan_device.create_operator(desc)
    with pytest.raises(dml.UnsupportedError, match="Convolution: spatial axis 1 reaches coordinate"):
        vulkan_device.compile_operator(op)
