"""DML_LOCAL_RESPONSE_NORMALIZATION_GRAD (gpudml/ops/normalization.py; kernels/normalization.py's
LocalResponseGradFamily): the reference is the forward's derivative (central differences),
the kernels match it within the documented precision under both strategies, across channels
and within them, odd and even local sizes (the transposed window), float16, strided tensors,
the GPU-class order on a software adapter, and each validation rule's message."""

from __future__ import annotations

import numpy as np
import pytest

import gpudml as dml
from gpudml import cli
from gpudml import reference as R
from gpudml.ops import spec_named
from gpudml.testing import assert_within

T = dml.DataType
SPEC = spec_named("local_response_normalization_grad")
KW = {"alpha": 0.5, "beta": 0.75, "bias": 1.5}


def desc_for(x, dy, local_size, **kwargs):
    return SPEC.infer_output(dml.TensorDesc(T.from_numpy(x.dtype), x.shape),
                             dml.TensorDesc(T.from_numpy(dy.dtype), dy.shape), local_size=local_size, **kwargs)


@pytest.mark.parametrize("cross_channel", [True, False])
@pytest.mark.parametrize("local_size", [2, 3])
def test_reference_is_the_forward_derivative(cross_channel, local_size):
    """sum(dy * LRN(x)) differentiated numerically (float64) at a few elements: the reference."""
    rng = np.random.default_rng(1)
    x = rng.uniform(-2, 2, (1, 5, 4, 4))
    dy = rng.uniform(-1, 1, x.shape)
    kw = {"cross_channel": cross_channel, **KW}
    got = R.local_response_normalization_grad(x, dy, local_size, **kw)

    def loss(v):
        return (R.local_response_normalization(v, local_size, **kw) * dy).sum()

    for index in [(0, 0, 0, 0), (0, 2, 1, 3), (0, 4, 3, 1)]:
        step = np.zeros_like(x)
        step[index] = 1e-6
        assert abs((loss(x + step) - loss(x - step)) / 2e-6 - got[index]) < 1e-7


@pytest.mark.parametrize(("cross_channel", "local_size"), [(True, 5), (True, 2), (False, 3), (False, 4)])
def test_every_strategy_within_the_documented_precision(device, cross_channel, local_size):
    rng = np.random.default_rng(2)
    x = rng.uniform(-4, 4, (2, 7, 5, 9)).astype(np.float32)
    dy = rng.uniform(-1, 1, x.shape).astype(np.float32)
    kw = {"cross_channel": cross_channel, **KW}
    desc = desc_for(x, dy, local_size, **kw)
    want = SPEC.reference(x, dy, local_size, **kw)
    tolerance = SPEC.tolerance(want, [x, dy], SPEC.arguments(desc))
    op = device.create_operator(desc)
    strategies = SPEC.planner.strategies_for(desc, device.caps)
    assert set(strategies) == {"runs", "elements"}
    for strategy in strategies:
        (got,) = device.compile_operator(op, strategy).execute([x, dy])
        assert_within(got, want, tolerance, strategy)


def test_precision_at_the_bound(device):
    """A large alpha and beta (the power's error grows with |beta log2 b|): the error stays
    within the bound, and the bound is not vacuous (the largest error 11% of it measured;
    7% across H x W with the defaults' scale)."""
    rng = np.random.default_rng(3)
    x = rng.uniform(-4, 4, (1, 16, 8, 8)).astype(np.float32)
    dy = rng.uniform(-1, 1, x.shape).astype(np.float32)
    kw = {"cross_channel": True, "alpha": 2.0, "beta": 1.5, "bias": 0.5}
    got = dml.local_response_normalization_grad(x, dy, 5, device=device, **kw)
    want = R.local_response_normalization_grad(x.astype(np.float64), dy.astype(np.float64), 5, **kw)
    tolerance = SPEC.tolerance(want, [x, dy], {"local_size": 5, **kw})
    error = np.abs(got - want)
    assert np.all(error <= tolerance)
    assert np.max(error / tolerance) > 0.02  # not vacuous: 0.11 of the bound measured


def test_float16(device):
    rng = np.random.default_rng(4)
    x = rng.uniform(-4, 4, (1, 6, 3, 5)).astype(np.float16)
    dy = rng.uniform(-1, 1, x.shape).astype(np.float16)
    got = dml.local_response_normalization_grad(x, dy, 3, device=device, **KW)
    want = R.local_response_normalization_grad(x, dy, 3, **KW)
    assert got.dtype == np.float16
    assert_within(got, want, SPEC.tolerance(want, [x, dy], {"local_size": 3, **KW}), "float16")


def test_strided_tensors(device):
    """x transposed (strides, no copy), dy broadcast along W (stride 0), a strided output."""
    rng = np.random.default_rng(5)
    base = rng.uniform(-2, 2, (1, 4, 6, 5)).astype(np.float32)
    x = dml.TensorDesc(T.FLOAT32, [1, 4, 5, 6], [120, 30, 1, 5])
    dy = dml.TensorDesc(T.FLOAT32, [1, 4, 5, 6], [20, 5, 1, 0])
    out = dml.TensorDesc(T.FLOAT32, [1, 4, 5, 6], [160, 40, 8, 1])
    desc = SPEC.infer_output(x, dy, local_size=3, cross_channel=False, **KW)
    desc = type(desc)(**{**desc.__dict__, "output_gradient_tensor": out})
    dy_values = rng.uniform(-1, 1, 20).astype(np.float32)
    logical_x = np.swapaxes(base, 2, 3)
    logical_dy = np.broadcast_to(dy_values.reshape(1, 4, 5, 1), (1, 4, 5, 6))
    want = R.local_response_normalization_grad(logical_x, logical_dy, 3, cross_channel=False, **KW)
    tolerance = SPEC.tolerance(want, [logical_x, logical_dy], {"local_size": 3, "cross_channel": False, **KW})
    for strategy in ("runs", "elements"):
        (got,) = device.compile_operator(device.create_operator(desc), strategy).execute([base.reshape(-1),
                                                                                         dy_values])
        assert_within(got, want, tolerance, strategy)


def test_gpu_class_on_a_software_adapter(vulkan_device):
    device = dml.Device(adapter=vulkan_device.adapter_name, adapter_class="gpu")
    rng = np.random.default_rng(6)
    x = rng.uniform(-4, 4, (1, 9, 4, 4)).astype(np.float32)
    dy = rng.uniform(-1, 1, x.shape).astype(np.float32)
    assert SPEC.planner.strategies_for(desc_for(x, dy, 5), device.caps)[0] == "elements"
    got = dml.local_response_normalization_grad(x, dy, 5, device=device, **KW)
    want = R.local_response_normalization_grad(x, dy, 5, **KW)
    assert_within(got, want, SPEC.tolerance(want, [x, dy], {"local_size": 5, **KW}), "gpu class")


@pytest.mark.parametrize(("change", "message"), [
    ({"input_gradient_tensor": dml.TensorDesc(T.FLOAT32, [1, 3, 4, 5])},
     r"LocalResponseNormalizationGrad: input_gradient_tensor.sizes \[1, 3, 4, 5\] must equal input_tensor.sizes"),
    ({"output_gradient_tensor": dml.TensorDesc(T.FLOAT32, [1, 3, 4, 3])},
     r"LocalResponseNormalizationGrad: output_gradient_tensor.sizes \[1, 3, 4, 3\] must equal"),
    ({"input_gradient_tensor": dml.TensorDesc(T.FLOAT16, [1, 3, 4, 4])}, "LocalResponseNormalizationGrad: .*data_type"),
    ({"local_size": 0}, "LocalResponseNormalizationGrad: local_size = 0 must be at least 1"),
    ({"beta": float("nan")}, "LocalResponseNormalizationGrad: beta = nan must be finite"),
])
def test_bad_descriptions_name_the_rule(change, message):
    x = dml.TensorDesc(T.FLOAT32, [1, 3, 4, 4])
    desc = SPEC.infer_output(x, x, local_size=3)
    with pytest.raises(dml.InvalidArgumentError, match=message):
        dml.Device().create_operator(type(desc)(**{**desc.__dict__, **change}))


def test_feature_level_and_rank():
    x = dml.TensorDesc(T.FLOAT32, [1, 3, 4, 4])
    with pytest.raises(dml.InvalidArgumentError, match=r"at feature level FL_3_0 \(introduced at FL_3_1\)"):
        dml.Device(feature_level="FL_3_0").create_operator(SPEC.infer_output(x, x, local_size=3))
    x5 = dml.TensorDesc(T.FLOAT32, [1, 3, 4, 4, 2])
    with pytest.raises(dml.InvalidArgumentError, match="DimensionCount 5 is not supported"):
        dml.Device().create_operator(SPEC.infer_output(x5, x5, local_size=3))


def test_shader_command(capsys):
    assert cli.main(["shader", "local_response_normalization_grad", "--shape", "1,16,8,8", "--local-size", "4",
                     "--within-channel", "1", "--caps", "gl-cpu"]) == 0
    out = capsys.readouterr().out
    assert out.count("fn kernel(gid: u32)") == 2 and "terms_set" in out and "terms_at" in out
