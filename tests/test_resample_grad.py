"""ResampleGrad and ResampleGrad1: what the conformance kit (tests/test_conformance.py) does
not cover: the pages' worked example, the reference against the adjoint identity of the
forward resampling, the documented precision at its bound (many contributions per element),
determinism, the loop budget's refusal, each validation rule's message, both adapter
classes' strategies on the software adapters, the command line."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import assert_bits_equal

import gpudml as dml
from gpudml import reference
from gpudml.ops import spec_named
from gpudml.testing import assert_within

F32, F16 = dml.DataType.FLOAT32, dml.DataType.FLOAT16


def test_page_example(device):
    """The pages' nearest scaling of 1.5x in the width and 0.5x in the height, [[1, 2], [3, 4]]
    -> [1, 1, 2]: its gradient [4, 5, 6] is [[9, 6], [0, 0]]. The page picks index floor(o /
    scale): RESAMPLE2's DECREASING with offsets 0 (RESAMPLE_GRAD1) and RESAMPLE1's half-up
    rounding with input offsets 0.5 and output offsets 0 (RESAMPLE_GRAD)."""
    x = np.array([[1, 2], [3, 4]], np.float32)
    dy = np.array([[4, 5, 6]], np.float32)
    want = np.array([[9, 6], [0, 0]], np.float32)
    args1 = dict(scales=[0.5, 1.5], mode="nearest_neighbor", rounding_direction="decreasing",
                 input_pixel_offsets=[0, 0], output_pixel_offsets=[0, 0])
    assert_bits_equal(reference.resample2(x, output_sizes=[1, 3], **args1), np.array([[1, 1, 2]], np.float32))
    assert_bits_equal(dml.resample_grad(dy, [2, 2], device=device, **args1), want)
    args0 = dict(scales=[1, 1, 0.5, 1.5], mode="nearest_neighbor", input_pixel_offsets=[0.5] * 4,
                 output_pixel_offsets=[0] * 4)
    assert_bits_equal(reference.resample1(x[None, None], output_sizes=[1, 1, 1, 3], **args0),
                      np.array([[[[1, 1, 2]]]], np.float32))
    assert_bits_equal(dml.resample_grad0(dy[None, None], [1, 1, 2, 2], device=device, **args0), want[None, None])


@pytest.mark.parametrize("mode", ["nearest_neighbor", "linear"])
def test_reference_is_the_adjoint_of_resample(mode):
    """sum(resample(x) * dy) == sum(x * resample_grad(dy)) (float64) for random scales, offsets
    and rounding: the reference is the forward's transpose, formulated apart (the forward
    gathers, the gradient scatters its nonzero weights)."""
    rng = np.random.default_rng(11)
    for _ in range(12):
        rank = int(rng.integers(1, 5))
        shape = [int(n) for n in rng.integers(1, 6, rank)]
        scales = [float(rng.choice([0.5, 0.75, 1.0, 1.5, 2.0, 3.0])) for _ in shape]
        out = [max(1, int(n * s)) for n, s in zip(shape, scales)]
        offsets = dict(input_pixel_offsets=[float(rng.choice([0.5, 0.0, -0.5])) for _ in shape],
                       output_pixel_offsets=[float(rng.choice([-0.5, 0.0, 0.5])) for _ in shape])
        rounding = str(rng.choice(["decreasing", "increasing"]))
        x, dy = rng.standard_normal(shape), rng.standard_normal(out)
        y = reference.resample2(x, scales, output_sizes=out, mode=mode, rounding_direction=rounding, **offsets)
        dx = reference.resample_grad(dy, shape, scales, mode=mode, rounding_direction=rounding, **offsets)
        assert dx.shape == tuple(shape)
        np.testing.assert_allclose(float((y * dy).sum()), float((x * dx).sum()), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_precision_at_the_bound(device, dtype):
    """An upsampling by 64 on two axes: a dx element gathers about 64 x 64 contributions (the
    edges more), all positive, so the sum's rounding errors pile up: the error stays within
    the documented bound (a worst case: on lavapipe and llvmpipe this case reaches 0.3% of it,
    linear, and 0.7%, nearest) and float32 does round (the case is not trivially exact); the
    same inputs give the same bits on a second run (a fixed order)."""
    rng = np.random.default_rng(2)
    dy = rng.uniform(0.5, 1.0, (1, 1, 192, 192)).astype(dtype)
    args = dict(scales=[1, 1, 64, 64], mode="linear", rounding_direction="decreasing")
    got = dml.resample_grad(dy, [1, 1, 3, 3], device=device, **args)
    want = reference.resample_grad(dy, [1, 1, 3, 3], **args)
    spec = spec_named("resample_grad")
    tolerance = spec.tolerance(want, [dy], dict(output_sizes=[1, 1, 3, 3], **args))
    assert_within(got, want, tolerance, "ResampleGrad1")
    exact = reference.resample_grad(dy.astype(np.float64), [1, 1, 3, 3], **args)
    assert want.dtype == got.dtype == dtype
    if dtype == np.float32:
        worst = float(np.max(np.abs(got.astype(np.float64) - exact) / tolerance))
        assert 0 < worst, "no rounding seen: the case proves nothing about the bound"
    assert_bits_equal(dml.resample_grad(dy, [1, 1, 3, 3], device=device, **args), got)


def test_loop_budget_refused_before_any_gpu_work(vulkan_device):
    """Output offsets that push every output onto the first input element of three axes: one
    element weighs 40^3 candidates, past the loop budget: UnsupportedError naming it."""
    desc = dml.ResampleGrad1OperatorDesc(dml.TensorDesc(F32, [40, 40, 40]), dml.TensorDesc(F32, [4, 4, 4]),
                                         "nearest_neighbor", "decreasing", [1, 1, 1], [0, 0, 0], [1e6, 1e6, 1e6])
    op = vulkan_device.create_operator(desc)
    with pytest.raises(dml.UnsupportedError, match=r"ResampleGrad1: one output gradient element weighs up to "
                                                   r"\d+ input gradient elements .* loop budget \(32768\)"):
        vulkan_device.compile_operator(op)


@pytest.mark.any_class  # both classes' Devices made here: the GPU-class run would repeat them
@pytest.mark.parametrize("strategy_class", ["cpu", "gpu"])
def test_both_adapter_classes(adapter, strategy_class):
    """Each class's documented strategy first, and every strategy, within the bound, on a
    strided and broadcast incoming gradient."""
    dev = dml.Device(adapter=adapter, adapter_class=strategy_class)
    rng = np.random.default_rng(4)
    base = rng.uniform(-1, 1, (2, 1, 6)).astype(np.float32)
    dy = dml.TensorDesc(F32, [2, 5, 6], [6, 0, 1])
    desc = dml.ResampleGrad1OperatorDesc(dy, dml.TensorDesc(F32, [2, 2, 4]), "linear", "decreasing",
                                         [1, 2.5, 1.5], [0.5] * 3, [-0.5] * 3)
    op = dev.create_operator(desc)
    chosen = dev.compile_operator(op)
    assert chosen.strategy == ("runs" if strategy_class == "cpu" else "elements")
    logical = np.broadcast_to(base, (2, 5, 6))
    args = dict(scales=[1, 2.5, 1.5], mode="linear", rounding_direction="decreasing")
    want = reference.resample_grad(logical, [2, 2, 4], **args)
    tolerance = spec_named("resample_grad").tolerance(want, [logical], dict(output_sizes=[2, 2, 4], **args))
    for strategy in chosen.strategies:
        got = dev.compile_operator(op, strategy).execute([base.reshape(-1)])[0]
        assert_within(got, want, tolerance, strategy)


def _grad1(dy=(1, 1, 4, 4), dx=(1, 1, 2, 2), dtype=F32, out_type=None, mode="linear", scales=(1, 1, 2, 2),
           offsets=(0.5,) * 4):
    return dml.ResampleGrad1OperatorDesc(dml.TensorDesc(dtype, dy), dml.TensorDesc(out_type or dtype, dx), mode,
                                         "decreasing", scales, offsets, (-0.5,) * 4)


@pytest.mark.parametrize("desc, message", [
    (lambda: _grad1(out_type=F16), "ResampleGrad1: output_gradient_tensor.data_type FLOAT16 must equal "
                                   "input_gradient_tensor.data_type FLOAT32"),
    (lambda: _grad1(dx=(1, 2, 2)), "ResampleGrad1: all tensors must have the same DimensionCount "
                                   "(got input_gradient_tensor 4, output_gradient_tensor 3)"),
    (lambda: _grad1(scales=(1, 1, 0, 2)), "ResampleGrad1: scales[2] = 0.0 must be a finite number larger than 0 "
                                          "(scales [1.0, 1.0, 0.0, 2.0])"),
    (lambda: _grad1(offsets=(0.5, 0.5)), "ResampleGrad1: input_pixel_offsets has 2 entries [0.5, 0.5]; "
                                         "DimensionCount is 4"),
    (lambda: _grad1(mode="cubic"), "ResampleGrad1: interpolation_mode CUBIC must be NEAREST_NEIGHBOR or LINEAR"),
    (lambda: _grad1(dtype=dml.DataType.INT8), "ResampleGrad1: input_gradient_tensor.data_type INT8 is not "
                                              "supported at FL_6_4 (supported: FLOAT32, FLOAT16)"),
])
def test_validation_rule(vulkan_device, desc, message):
    with pytest.raises(dml.InvalidArgumentError) as err:
        vulkan_device.create_operator(desc())
    assert str(err.value).startswith(message), str(err.value)


def test_levels_and_ranks(at_level):
    grad1 = _grad1(dy=(4,), dx=(2,), scales=(2,), offsets=(0.5,))
    grad1 = dml.ResampleGrad1OperatorDesc(grad1.input_gradient_tensor, grad1.output_gradient_tensor, "linear",
                                          "decreasing", [2], [0.5], [-0.5])
    at_level(dml.FeatureLevel.FL_5_1).create_operator(grad1)
    with pytest.raises(dml.InvalidArgumentError, match=r"ResampleGrad1: not available at feature level FL_5_0 "
                                                       r"\(introduced at FL_5_1\)"):
        at_level(dml.FeatureLevel.FL_5_0).create_operator(grad1)
    grad0 = dml.ResampleGradOperatorDesc(dml.TensorDesc(F32, [1, 4]), dml.TensorDesc(F32, [1, 2]), "linear",
                                         [1, 2], [0.5, 0.5], [-0.5, -0.5])
    with pytest.raises(dml.InvalidArgumentError, match=r"ResampleGrad: DimensionCount 2 is not supported"):
        at_level(dml.FeatureLevel.FL_3_0).create_operator(grad0)


def test_cli_shader(capsys):
    from gpudml import cli

    assert cli.main(["shader", "resample_grad", "--shape", "1,2,8,8", "--output-sizes", "1,2,4,4", "--mode",
                     "linear", "--caps", "vulkan-cpu"]) == 0
    out = capsys.readouterr().out
    assert "// ResampleGrad1 at FL_6_4" in out and "// strategy runs" in out
    assert cli.main(["shader", "resample_grad0", "--shape", "1,2,8,8", "--caps", "gpu"]) == 0
    assert "// strategy elements" in capsys.readouterr().out
