"""BATCH_NORMALIZATION_TRAINING, BATCH_NORMALIZATION_GRAD and BATCH_NORMALIZATION_TRAINING_GRAD
(gpudml/ops/batch_normalization_training.py, the normalization family's MEAN_VARIANCE with
statistics' outputs and its BN_GRAD): what the conformance kit does not cover: every strategy
(the CPU-class rows and chunks, the GPU-class workgroup) on the layouts models use, FLOAT16 and
FLOAT32; the gradients against a float64 finite difference of the forward pass; a row past
llvmpipe's 65,535 loop iterations with a mean far from 0, within the documented precision
(a function of the reduced count) and the precision not vacuous; strided and broadcast
tensors; one element per channel; each validation rule's message before any GPU work."""

from __future__ import annotations

import numpy as np
import pytest

import gpudml as dml
from gpudml import reference
from gpudml.ops import spec_named
from gpudml.testing import assert_within

T, FL = dml.DataType, dml.FeatureLevel
TRAINING = spec_named("batch_normalization_training")
GRAD = spec_named("batch_normalization_grad")
TRAINING_GRAD = spec_named("batch_normalization_training_grad")
rng = np.random.default_rng(48)


def td(a) -> dml.TensorDesc:
    return dml.TensorDesc(T.from_numpy(a.dtype), a.shape)


def check(device, spec, desc, arrays, strategies=None):
    """Run `desc` under each eligible strategy (or those given): every output within the
    spec's precision; returns the strategies run."""
    want = spec.reference_outputs(desc, arrays)
    tolerances = [spec.tolerance(w, arrays, spec.arguments(desc)) for w in want]
    operator = device.create_operator(desc)
    ran = strategies or device.compile_operator(operator).strategies
    for strategy in ran:
        got = device.compile_operator(operator, strategy).execute(arrays)
        assert len(got) == len(want) == 3
        for k, (g, w, t) in enumerate(zip(got, want, tolerances)):
            assert_within(g, w, t, f"{spec.key} {strategy} output {k}")
    return ran


def _forward_cases(dtype):
    x = (rng.normal(size=(3, 4, 5, 6)) * 3 + 5).astype(dtype)
    per_channel = rng.uniform(-2, 2, (1, 4, 1, 1)).astype(dtype)
    mixed = rng.uniform(-2, 2, (1, 4, 5, 1)).astype(dtype)
    add = rng.uniform(-1, 1, x.shape).astype(dtype)
    return x, [
        ([per_channel, per_channel + 1], {}),
        ([per_channel, per_channel - 1, add], {"fused_activation": "relu", "epsilon": 1e-3}),
        ([mixed, mixed], {"epsilon": 0.5}),  # (the axes where the scale is 1: N and W)
    ]


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_training_every_strategy(device, dtype):
    """Per channel (NCHW's BatchNorm), with a FusedAdd and a fused activation, and over N and W
    (a scale of [1, C, H, 1]): output, mean and variance within the documented precision
    under every strategy, FLOAT32 and FLOAT16."""
    x, cases = _forward_cases(dtype)
    for params, kwargs in cases:
        desc = TRAINING.infer_output(td(x), td(params[0]), td(params[1]),
                                     fused_add=td(params[2]) if len(params) > 2 else None, **kwargs)
        ran = check(device, TRAINING, desc, [x, *params])
        assert set(ran) == {"rows", "chunks", "workgroup"}
    # Rows of whole 16-byte blocks (the last axis reduced, stride 1): x, the output and the
    # FusedAdd read and written a block at a time by `rows` and `chunks`.
    x2 = (rng.normal(size=(6, 32)) + 2).astype(dtype)
    s2, add2 = rng.uniform(-2, 2, (6, 1)).astype(dtype), rng.uniform(-1, 1, x2.shape).astype(dtype)
    desc = TRAINING.infer_output(td(x2), td(s2), td(s2), td(add2), fused_activation="sigmoid")
    plan = TRAINING.planner.plan(desc, device.caps, "rows")
    assert dict(plan.dispatches[0].params["modes"])["add"] == "blocks"
    check(device, TRAINING, desc, [x2, s2, s2 - 1, add2])
    out, mean, variance = dml.batch_normalization_training(x, x[0, :, 0, 0], x[1, :, 0, 0], device=device)
    assert out.shape == x.shape and mean.shape == variance.shape == (1, 4, 1, 1)
    want = reference.batch_normalization_training(x, x[0, :, 0, 0], x[1, :, 0, 0])
    for g, w in zip((out, mean, variance), want):
        assert_within(g, w, TRAINING.tolerance(w, [x, x[0, :, 0, 0], x[1, :, 0, 0]], {}))


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_gradients_every_strategy(device, dtype):
    """Both gradients, per channel and over N and W, every strategy, FLOAT32 and FLOAT16; the
    scale and bias gradients of the mean's shape."""
    x = (rng.normal(size=(3, 4, 5, 6)) * 2 + 3).astype(dtype)
    dy = rng.uniform(-1, 1, x.shape).astype(dtype)
    for shape in ((1, 4, 1, 1), (1, 4, 5, 1)):
        mean = (x.astype(np.float64).mean(axis=tuple(a for a, n in enumerate(shape) if n == 1), keepdims=True)
                ).astype(dtype)
        variance = rng.uniform(0.5, 3, shape).astype(dtype)
        scale = rng.uniform(-2, 2, shape).astype(dtype)
        for spec in (GRAD, TRAINING_GRAD):
            desc = spec.infer_output(td(x), td(dy), td(mean), td(variance), td(scale), epsilon=1e-3)
            assert set(check(device, spec, desc, [x, dy, mean, variance, scale])) == {"rows", "chunks", "workgroup"}
    dx, dscale, dbias = dml.batch_normalization_training_grad(x, dy, mean[0, :, 0, 0], variance[0, :, 0, 0],
                                                              scale[0, :, 0, 0], device=device)
    assert dx.shape == x.shape and dscale.shape == dbias.shape == (1, 4, 1, 1)


@pytest.mark.any_class
def test_gradients_are_the_forward_pass_derivatives():
    """In float64 (the references): TRAINING_GRAD's outputs are the derivatives of sum(dy *
    batch_normalization_training(x, scale, bias)[0]) with respect to x, scale and bias (the
    batch's mean and variance depending on x); GRAD's are batch_normalization's with the mean
    and variance held."""
    x = rng.normal(size=(3, 2, 2, 3)) + 1.5
    dy, scale, bias = rng.normal(size=x.shape), rng.uniform(0.5, 2, 2), rng.normal(size=2)
    eps = float(np.float32(1e-3))

    def loss(x, scale, bias):
        return float(np.sum(dy * reference.batch_normalization_training(x, scale, bias, epsilon=eps)[0]))

    _, mean, variance = reference.batch_normalization_training(x, scale, bias, epsilon=eps)
    dx, dscale, dbias = reference.batch_normalization_training_grad(x, dy, mean, variance, scale, epsilon=eps)
    h = 1e-6
    for name, value, got in (("x", x, dx), ("scale", scale, dscale), ("bias", bias, dbias)):
        numeric = np.zeros(value.shape)
        for i in np.ndindex(value.shape):
            up, down = value.copy(), value.copy()
            up[i] += h
            down[i] -= h
            args = {"x": x, "scale": scale, "bias": bias, name: None}
            numeric[i] = (loss(**{**args, name: up}) - loss(**{**args, name: down})) / (2 * h)
        np.testing.assert_allclose(np.asarray(got).reshape(value.shape), numeric, rtol=1e-6, atol=1e-7,
                                   err_msg=name)
    # GRAD: the mean and variance held, d/dx of sum(dy * batch_normalization(x, ...)) is dy * scale r.
    gx, gscale, gbias = reference.batch_normalization_grad(x, dy, mean, variance, scale, epsilon=eps)
    r = 1 / np.sqrt(variance + eps)
    np.testing.assert_allclose(gx, dy * scale.reshape(1, 2, 1, 1) * r, rtol=1e-12)
    np.testing.assert_allclose(gscale, (dy * (x - mean) * r).sum(axis=(0, 2, 3), keepdims=True), rtol=1e-12)
    np.testing.assert_allclose(gbias, dy.sum(axis=(0, 2, 3), keepdims=True), rtol=1e-12)
    np.testing.assert_allclose(dscale, gscale, rtol=1e-12)  # (the same scale and bias gradients)


def test_long_rows_at_the_documented_precision(device):
    """One channel of 2 x 70,000 elements (past llvmpipe's 65,535 loop iterations per
    invocation: `chunks`, and `workgroup`'s lanes), its mean 10 (the two-pass variance's
    case: 1/300 of the mean's square): every output within the documented precision, a
    worst-case bound that grows with the reduced count (D(n) = 136 + 2 ceil(n / 64)), finite
    here and within 15% of the values (the variance's, 5%)."""
    x = (rng.uniform(-1, 1, (2, 1, 70000)) + 10).astype(np.float32)
    scale, bias = np.float32([[[1.5]]]), np.float32([[[0.25]]])
    desc = TRAINING.infer_output(td(x), td(scale), td(bias))
    ran = check(device, TRAINING, desc, [x, scale, bias])
    assert "rows" not in ran and {"chunks", "workgroup"} <= set(ran)
    want = TRAINING.reference_outputs(desc, [x, scale, bias])
    for w, share in zip(want, (0.15, 1e-3, 0.05)):
        tolerance = np.broadcast_to(TRAINING.tolerance(w, [x, scale, bias], {}), w.shape)
        assert np.all(tolerance < share * np.maximum(np.abs(w.astype(np.float64)), 0.1))
        short = TRAINING.tolerance(w, [x[..., :640], scale, bias], {}) if w.size == 1 else None
        assert short is None or np.all(short < tolerance)  # (a function of the count)
    _, mean, variance = want
    dy = rng.uniform(-1, 1, x.shape).astype(np.float32)
    for spec in (GRAD, TRAINING_GRAD):
        desc = spec.infer_output(td(x), td(dy), td(mean), td(variance), td(scale))
        check(device, spec, desc, [x, dy, mean, variance, scale])
        terms = (np.abs(dy) * np.abs(x - mean)).sum() / np.sqrt(variance + np.float32(1e-5)), np.abs(dy).sum()
        for k, w in enumerate(spec.reference_outputs(desc, [x, dy, mean, variance, scale])):
            tolerance = np.broadcast_to(spec.tolerance(w, [x, dy, mean, variance, scale], {}), w.shape)
            assert np.all(np.isfinite(tolerance))
            if k == 0:  # the input gradient: within 1e-3 of its largest value
                assert np.max(tolerance) < 1e-3 * float(np.max(np.abs(w)))
            else:  # the sums: within D(n) u sum|terms| (2 ULP more: the sum's and the rounding)
                assert np.max(tolerance) < 1.02 * (4512 + 2) * 2.0**-24 * terms[k - 1] + 2 * np.spacing(w)


def test_strided_and_broadcast_tensors(device):
    """A transposed input (strides), a strided output, a scale broadcast by stride 0, the
    mean written with a stride: through the desc API, every strategy."""
    x = rng.normal(size=(6, 4)).astype(np.float32)  # x.T is [4, 6]: the channels are its axis 1
    inp = dml.TensorDesc(T.FLOAT32, [4, 6], [1, 4])
    out = dml.TensorDesc(T.FLOAT32, [4, 6], [12, 2])
    scale = dml.TensorDesc(T.FLOAT32, [1, 6], [0, 1])
    stat = dml.TensorDesc(T.FLOAT32, [1, 6], [0, 2])
    desc = dml.BatchNormalizationTrainingOperatorDesc(inp, scale, scale, None, out, stat, stat, epsilon=1e-4)
    s = rng.uniform(1, 2, 6).astype(np.float32)
    operator = device.create_operator(desc)
    want = reference.batch_normalization_training(x.T, s, s, epsilon=1e-4)
    for strategy in device.compile_operator(operator).strategies:
        got = device.compile_operator(operator, strategy).execute([x.reshape(-1), s, s])
        assert [g.shape for g in got] == [(4, 6), (1, 6), (1, 6)]
        for g, w in zip(got, want):
            assert_within(g, w, TRAINING.tolerance(w, [x.T, s, s], {"epsilon": 1e-4}), strategy)


def test_one_element_per_channel_and_every_rank(device):
    """No page forbids one element per channel: its variance is 0 and the output bias (epsilon
    > 0); ranks 1 and 8."""
    x = rng.normal(size=(1, 3)).astype(np.float32)
    out, mean, variance = dml.batch_normalization_training(x, np.float32([2, 2, 2]), np.float32([1, -1, 0.5]),
                                                           device=device)
    assert np.array_equal(mean, x) and np.array_equal(variance, np.zeros((1, 3), np.float32))
    assert np.array_equal(out, np.float32([[1, -1, 0.5]]))
    x1 = rng.normal(size=7).astype(np.float32)
    got = dml.batch_normalization_training(x1, np.float32([1.0]), np.float32([0.0]), device=device)
    for g, w in zip(got, reference.batch_normalization_training(x1, np.float32([1.0]), np.float32([0.0]))):
        assert_within(g, w, TRAINING.tolerance(w, [x1, np.float32([1.0]), np.float32([0.0])], {}))
    x8 = rng.normal(size=(2, 3, 1, 2, 1, 2, 1, 2)).astype(np.float32)
    dy = rng.normal(size=x8.shape).astype(np.float32)
    m, v, s = np.float32([0.1, 0.2, 0.3]), np.float32([1, 2, 3]), np.float32([1, -1, 2])
    got = dml.batch_normalization_training_grad(x8, dy, m, v, s, device=device)
    for g, w in zip(got, reference.batch_normalization_training_grad(x8, dy, m, v, s)):
        assert_within(g, w, TRAINING_GRAD.tolerance(w, [x8, dy, m, v, s], {}))


@pytest.mark.any_class
def test_bad_input_named_before_any_gpu_work(vulkan_device, at_level):
    """Each rule's InvalidArgumentError names the operator, the field, the rule and the values."""
    x = np.zeros((2, 3, 4), np.float32)
    c = np.ones(3, np.float32)
    cases = [
        (lambda: dml.batch_normalization_training(x, c, c, epsilon=-1.0, device=vulkan_device),
         ("BatchNormalizationTraining", "epsilon", "-1.0", ">= 0")),
        (lambda: dml.batch_normalization_training(x, c, np.ones(4, np.float32), device=vulkan_device),
         ("BatchNormalizationTraining", "bias_tensor.sizes [1, 4, 1]", "scale_tensor.sizes [1, 3, 1]")),
        (lambda: dml.batch_normalization_training(x, np.ones(5, np.float32), c, device=vulkan_device),
         ("BatchNormalizationTraining", "scale_tensor.sizes [1, 5, 1]", "1 (broadcast) or input_tensor's size")),
        (lambda: dml.batch_normalization_training(x, c, c, fused_add=np.zeros((2, 3, 5), np.float32),
                                                  device=vulkan_device),
         ("BatchNormalizationTraining", "fused_add_tensor.sizes [2, 3, 5]", "input_tensor.sizes [2, 3, 4]")),
        (lambda: dml.batch_normalization_grad(x, np.zeros((2, 3, 5), np.float32), c, c, c, device=vulkan_device),
         ("BatchNormalizationGrad", "input_gradient_tensor.sizes [2, 3, 5]", "input_tensor.sizes [2, 3, 4]")),
        (lambda: dml.batch_normalization_training_grad(x, x, c, np.ones(2, np.float32), c, device=vulkan_device),
         ("BatchNormalizationTrainingGrad", "variance_tensor.sizes [1, 2, 1]", "mean_tensor.sizes [1, 3, 1]")),
        (lambda: dml.batch_normalization_training_grad(x, x, c, c, c, epsilon=float("nan"), device=vulkan_device),
         ("BatchNormalizationTrainingGrad", "epsilon", "nan")),
        (lambda: dml.batch_normalization_grad(x, x.astype(np.float16), c, c, c, device=vulkan_device),
         ("BatchNormalizationGrad", "input_gradient_tensor.data_type FLOAT16", "FLOAT32")),
        (lambda: dml.batch_normalization_training(x, c, c, device=at_level(FL.FL_4_0)),
         ("BatchNormalizationTraining", "FL_4_1")),
        (lambda: dml.batch_normalization_training_grad(x, x, c, c, c, device=at_level(FL.FL_4_0)),
         ("BatchNormalizationTrainingGrad", "FL_4_1")),
        (lambda: dml.batch_normalization_grad(x, x, c, c, c, device=at_level(FL.FL_3_0)),
         ("BatchNormalizationGrad", "FL_3_1")),
    ]
    for call, fragments in cases:
        with pytest.raises(dml.InvalidArgumentError) as info:
            call()
        for fragment in fragments:
            assert fragment in str(info.value), (fragment, str(info.value))
    # BATCH_NORMALIZATION_GRAD is there at FL_3_1.
    got = dml.batch_normalization_grad(x, x, c, c, c, device=at_level(FL.FL_3_1))
    assert [g.shape for g in got] == [(2, 3, 4), (1, 3, 1), (1, 3, 1)]


@pytest.mark.parametrize("spec", [TRAINING, GRAD, TRAINING_GRAD], ids=lambda s: s.key)
def test_chunks_inside_runs_of_the_innermost_axis(device, spec):
    """A channel's N x W elements (two reduced axes) in chunks that each lie inside one run of
    W (`segmented`: an offset a multiply-add from the chunk's first, no division), the
    input transposed (strides): within the documented precision; the plan says so."""
    x = (rng.normal(size=(2048, 2, 4)) + 3).astype(np.float32)  # x.T is [4, 2, 2048]
    inp = dml.TensorDesc(T.FLOAT32, [4, 2, 2048], [1, 4, 8])
    param = dml.TensorDesc(T.FLOAT32, [1, 2, 1])
    p = rng.uniform(0.5, 2, 2).astype(np.float32)
    if spec is TRAINING:
        desc = spec.infer_output(inp, param, param)
        arrays, logical = [x.reshape(-1), p, p], [x.T, p.reshape(1, 2, 1), p.reshape(1, 2, 1)]
    else:
        dy = rng.normal(size=(4, 2, 2048)).astype(np.float32)
        desc = spec.infer_output(inp, td(dy), param, param, param)
        arrays = [x.reshape(-1), dy, p - 3, p, p]
        logical = [x.T, dy, *(a.reshape(1, 2, 1) for a in (p - 3, p, p))]
    plan = spec.planner.plan(desc, device.caps, "chunks")
    assert all(d.params["segmented"] for d in plan.dispatches if d.params["pass"] != "stats")
    operator = device.create_operator(desc)
    want = spec.reference_outputs(desc, logical)
    for strategy in device.compile_operator(operator).strategies:
        got = device.compile_operator(operator, strategy).execute(arrays)
        for g, w in zip(got, want):
            assert_within(g, w, spec.tolerance(w, logical, spec.arguments(desc)), f"{spec.key} {strategy}")


def test_every_strategy_gives_the_same_bits_on_every_run(device):
    """Deterministic sums (each in a fixed order, no atomics deciding it): two runs of each
    strategy give the same bits, for the forward pass and the gradient."""
    x = (rng.normal(size=(4, 3, 40, 40)) + 2).astype(np.float32)
    dy = rng.normal(size=x.shape).astype(np.float32)
    c = rng.uniform(0.5, 2, (1, 3, 1, 1)).astype(np.float32)
    for spec, desc, arrays in (
            (TRAINING, TRAINING.infer_output(td(x), td(c), td(c)), [x, c, c]),
            (TRAINING_GRAD, TRAINING_GRAD.infer_output(td(x), td(dy), td(c), td(c), td(c)), [x, dy, c - 1, c, c])):
        operator = device.create_operator(desc)
        for strategy in device.compile_operator(operator).strategies:
            compiled = device.compile_operator(operator, strategy)
            first, second = compiled.execute(arrays), compiled.execute(arrays)
            for a, b in zip(first, second):
                assert np.asarray(a).tobytes() == np.asarray(b).tobytes(), (spec.key, strategy)
