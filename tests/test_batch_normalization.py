"""DML_OPERATOR_BATCH_NORMALIZATION (gpudml/ops/batch_normalization.py, run by the element-wise
family): what the conformance kit (tests/test_conformance.py) does not cover: DirectMLX's [C]
parameters, broadcasting by sizes of 1, FLOAT16 and FLOAT32 against the float64 formula within
the documented precision, fused activations, `spatial` below and from FL_4_0, each validation
rule's message, fusion with element-wise neighbours in a graph."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from conftest import get_device

import gpudml as dml
from gpudml import reference
from gpudml.ops import spec_named
from gpudml.testing import assert_within

T, FL = dml.DataType, dml.FeatureLevel
SPEC = spec_named("batch_normalization")


def _inputs(rng, shape=(2, 3, 4, 5), dtype=np.float32):
    c = shape[1]
    x = rng.uniform(-3, 3, shape).astype(dtype)
    mean, scale, bias = (rng.uniform(-2, 2, c).astype(dtype) for _ in range(3))
    return x, mean, rng.uniform(0, 2, c).astype(dtype), scale, bias


def _float64(x, mean, variance, scale, bias, epsilon=1e-5):
    shape = (1, -1) + (1,) * (x.ndim - 2)
    m, v, s, b = (np.asarray(p, np.float64).reshape(shape) for p in (mean, variance, scale, bias))
    return s * (x.astype(np.float64) - m) / np.sqrt(v + np.float64(np.float32(epsilon))) + b


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_per_channel_within_the_documented_precision(device, dtype):
    """[C] parameters are per channel (axis 1): the float64 formula within the spec's
    tolerance, FLOAT16 computed in float32 and rounded once; a parameter of x's rank with
    sizes of 1 is the same call."""
    rng = np.random.default_rng(1)
    x, mean, variance, scale, bias = _inputs(rng, dtype=dtype)
    got = dml.batch_normalization(x, mean, variance, scale, bias, epsilon=1e-3, device=device)
    want = reference.batch_normalization(x, mean, variance, scale, bias, epsilon=1e-3)
    assert got.dtype == dtype and got.shape == x.shape
    exact = _float64(x, mean, variance, scale, bias, 1e-3)
    tolerance = SPEC.tolerance(want, [x, mean, variance, scale, bias], {"epsilon": 1e-3})
    assert_within(got, exact.astype(dtype), tolerance, "BatchNormalization")
    assert_within(want, exact.astype(dtype), tolerance, "reference")
    again = dml.batch_normalization(x, mean.reshape(1, 3, 1, 1), variance.reshape(3, 1, 1), scale, bias,
                                    epsilon=1e-3, device=device)
    assert np.array_equal(again, got)


def test_parameters_broadcast_by_sizes_of_one(device):
    """The page: any dimension of the parameters may be 1 (broadcast); others the input's
    (here a per-element scale and a per-width bias)."""
    rng = np.random.default_rng(2)
    x, mean, variance, _, _ = _inputs(rng)
    scale = rng.uniform(-1, 1, x.shape).astype(np.float32)
    bias = rng.uniform(-1, 1, (1, 1, 1, 5)).astype(np.float32)
    got = dml.batch_normalization(x, mean, variance, scale, bias, device=device)
    exact = (scale * (x - mean.reshape(1, 3, 1, 1)) / np.sqrt(variance.reshape(1, 3, 1, 1).astype(np.float64)
                                                               + np.float32(1e-5)) + bias)
    assert_within(got, exact.astype(np.float32),
                  SPEC.tolerance(got, [x, mean, variance, scale, bias], {"epsilon": 1e-5}), "broadcast")
    # A 1-D input: its parameters broadcast as numpy's (there is no channel axis).
    x1 = rng.uniform(-1, 1, 6).astype(np.float32)
    got = dml.batch_normalization(x1, np.float32([0.5]), np.float32([4.0]), np.float32([2.0]), np.float32([1.0]),
                                  epsilon=0.0, device=device)
    assert np.allclose(got, (x1 - 0.5) + 1.0, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("name", ["relu", "sigmoid", "leaky_relu"])
def test_fused_activation(device, name):
    """The activation applied to the normalized result, in the same kernel."""
    rng = np.random.default_rng(3)
    args = _inputs(rng)
    got = dml.batch_normalization(*args, fused_activation=name, device=device)
    want = reference.batch_normalization(*args, fused_activation=name)
    assert_within(got, want, SPEC.tolerance(want, list(args), {"epsilon": 1e-5, "fused_activation": name}), name)
    plain = reference.batch_normalization(*args)
    if name == "relu":
        assert np.array_equal(want, np.maximum(plain, 0))
    desc = SPEC.infer_output(*(dml.TensorDesc(T.FLOAT32, a.shape) for a in args), fused_activation=name)
    assert len(device.compile_operator(device.create_operator(desc)).program.kernels) == 1


def test_zero_variance_and_epsilon(device):
    """Variance 0 and epsilon 0: x = mean gives NaN (0 / 0), others +-inf, as IEEE arithmetic
    says; epsilon keeps the quotient finite."""
    x = np.float32([1.0, 2.0, 0.0]).reshape(1, 3, 1, 1) * np.ones((1, 3, 1, 2), np.float32)
    zeros, ones = np.zeros(3, np.float32), np.ones(3, np.float32)
    got = dml.batch_normalization(x, ones, zeros, ones, zeros, epsilon=0.0, device=device)
    assert np.isnan(got[0, 0]).all() and (got[0, 1] == np.inf).all() and (got[0, 2] == -np.inf).all()
    got = dml.batch_normalization(x, ones, zeros, ones, zeros, epsilon=0.25, device=device)
    assert np.allclose(got[0, :, 0, 0], [0.0, 2.0, -2.0])


def test_spatial_false_keeps_height_and_width_below_fl_4_0(at_level):
    """spatial FALSE: the mean's and variance's Height and Width may not broadcast below
    FL_4_0; from FL_4_0 on the field has no effect (the page: deprecated). Values never
    depend on it."""
    per_channel = dml.TensorDesc(T.FLOAT32, [1, 3, 1, 1])
    x = dml.TensorDesc(T.FLOAT32, [2, 3, 4, 5])
    desc = SPEC.infer_output(x, per_channel, per_channel, per_channel, per_channel, spatial=False)
    with pytest.raises(dml.InvalidArgumentError, match=r"BatchNormalization: spatial FALSE requires mean_tensor's "
                                                       r"Height and Width not to be broadcast at FL_3_1: "
                                                       r"mean_tensor.sizes \[1, 3, 1, 1\] must end in "
                                                       r"input_tensor's \[4, 5\]"):
        at_level(FL.FL_3_1).create_operator(desc)
    assert at_level(FL.FL_4_0).create_operator(desc) is not None
    full = dml.TensorDesc(T.FLOAT32, [1, 3, 4, 5])
    assert at_level(FL.FL_3_1).create_operator(dataclasses.replace(desc, mean_tensor=full, variance_tensor=full))
    rng = np.random.default_rng(4)
    args = _inputs(rng)
    device = at_level(FL.FL_4_0)
    assert np.array_equal(dml.batch_normalization(*args, spatial=False, device=device),
                          dml.batch_normalization(*args, device=device))


def test_bad_descriptions_name_the_rule(vulkan_device):
    x = dml.TensorDesc(T.FLOAT32, [2, 3, 4, 5])
    c = dml.TensorDesc(T.FLOAT32, [1, 3, 1, 1])
    desc = SPEC.infer_output(x, c, c, c, c)
    create = vulkan_device.create_operator
    with pytest.raises(dml.InvalidArgumentError, match=r"BatchNormalization: scale_tensor.sizes \[1, 2, 1, 1\] "
                                                       r"must be 1 \(broadcast\) or input_tensor's size on each "
                                                       r"axis: axis 1"):
        create(dataclasses.replace(desc, scale_tensor=dml.TensorDesc(T.FLOAT32, [1, 2, 1, 1])))
    with pytest.raises(dml.InvalidArgumentError, match=r"output_tensor.sizes \[2, 3, 4, 4\] must equal input_tensor"):
        create(dataclasses.replace(desc, output_tensor=dml.TensorDesc(T.FLOAT32, [2, 3, 4, 4])))
    with pytest.raises(dml.InvalidArgumentError, match=r"bias_tensor.data_type FLOAT16 must equal input_tensor"):
        create(dataclasses.replace(desc, bias_tensor=dml.TensorDesc(T.FLOAT16, [1, 3, 1, 1])))
    with pytest.raises(dml.InvalidArgumentError, match=r"data_type INT32 is not supported"):
        create(SPEC.infer_output(*[dml.TensorDesc(T.INT32, d.sizes) for d in (x, c, c, c, c)]))
    with pytest.raises(dml.InvalidArgumentError, match=r"all tensors must have the same DimensionCount"):
        create(dataclasses.replace(desc, mean_tensor=dml.TensorDesc(T.FLOAT32, [3])))
    with pytest.raises(dml.InvalidArgumentError, match=r"BatchNormalization: epsilon = 1e\+300 is beyond"):
        dataclasses.replace(desc, epsilon=1e300)
    with pytest.raises(dml.InvalidArgumentError, match=r"BatchNormalization: spatial must be True or False"):
        dataclasses.replace(desc, spatial="no")
    with pytest.raises(dml.InvalidArgumentError, match=r"BatchNormalization: fused_activation: 'bogus' is not"):
        dataclasses.replace(desc, fused_activation="bogus")
    with pytest.raises(dml.InvalidArgumentError, match=r"DimensionCount 3 is not supported at FL_2_1"):
        get_device(vulkan_device.adapter_name, FL.FL_2_1).create_operator(
            SPEC.infer_output(*[dml.TensorDesc(T.FLOAT32, s) for s in ([2, 3, 4], [3], [3], [3], [3])]))


def test_fuses_with_element_wise_neighbours(vulkan_device):
    """In a graph, relu(batch_normalization(x + y)) is one kernel (the element-wise family's
    fusion), the same values as the nodes one by one."""
    rng = np.random.default_rng(6)
    x, mean, variance, scale, bias = _inputs(rng)
    y = rng.uniform(-1, 1, x.shape).astype(np.float32)
    g = dml.Graph(vulkan_device)
    gx, gy = g.input(x.shape, name="x"), g.input(y.shape, name="y")
    out = dml.relu(dml.batch_normalization(gx + gy, mean, variance, scale, bias))
    compiled, unfused = g.compile([out]), g.compile([out], fuse=False)
    fused, plain = compiled({"x": x, "y": y})[0], unfused({"x": x, "y": y})[0]
    assert len(compiled.steps) == 1 and len(unfused.steps) == 3
    want = reference.relu(reference.batch_normalization(x + y, mean, variance, scale, bias))
    tolerance = SPEC.tolerance(want, [x + y, mean, variance, scale, bias], {"epsilon": 1e-5})
    assert_within(fused, want, tolerance + 2.0**-22 * np.abs(want), "fused")
    assert_within(plain, want, tolerance, "unfused")
