"""RoiAlignGrad: what the conformance kit (tests/test_conformance.py) does not cover: the page's
worked example, the reference against the adjoint identity of the forward ROI align, MAX's
pick (ties to the first sample), the documented precision at its bound, determinism, the
loop budget's refusal, the refused ROI gradient, each validation rule's message, both adapter
classes' strategies on the software adapters (strided and broadcast tensors), the command
line."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import assert_bits_equal

import gpudml as dml
from gpudml import reference
from gpudml.ops import spec_named
from gpudml.testing import assert_within

F32, F16, U32 = dml.DataType.FLOAT32, dml.DataType.FLOAT16, dml.DataType.UINT32


def test_page_example(device):
    """The page's nearest scaling of 1.5x in the width and 0.5x in the height of four 2 x 2
    regions of a [1, 1, 4, 4] input (InputPixelOffset 0.5, OutputPixelOffset 0, one sample
    per output): the forward gives [1, 1, 2], [3, 3, 4], [9, 9, 10], [11, 11, 12] and the
    gradient of 1..12 the page's [[3, 3, 9, 6], [0, 0, 0, 0], [15, 9, 21, 12], [0, 0, 0, 0]]."""
    rois = np.array([[0, 0, 2, 2], [2, 0, 4, 2], [0, 2, 2, 4], [2, 2, 4, 4]], np.float32)
    batch = np.zeros(4, np.uint32)
    dy = np.arange(1, 13, dtype=np.float32).reshape(4, 1, 1, 3)
    want = np.array([[[[3, 3, 9, 6], [0, 0, 0, 0], [15, 9, 21, 12], [0, 0, 0, 0]]]], np.float32)
    args = dict(interpolation_mode="nearest_neighbor", input_pixel_offset=0.5, output_pixel_offset=0.0,
                minimum_samples_per_output=1, maximum_samples_per_output=1)
    x = np.arange(1, 17, dtype=np.float32).reshape(1, 1, 4, 4)
    forward = reference.roi_align(x, rois, batch, output_size=(1, 3), **args)
    assert forward.reshape(4, 3).tolist() == [[1, 1, 2], [3, 3, 4], [9, 9, 10], [11, 11, 12]]
    assert_bits_equal(reference.roi_align_grad(dy, rois, batch, input_size=[1, 1, 4, 4], **args), want)
    assert_bits_equal(dml.roi_align_grad(dy, rois, batch, input_size=[1, 1, 4, 4], device=device, **args), want)
    assert_bits_equal(dml.roi_align_grad(dy, rois, batch, x=x, device=device, **args), want)


def _random_case(rng, regions=5, image=(2, 3, 7, 9), out=(3, 4)):
    n, c, h, w = image
    x = rng.standard_normal(image)
    corners = rng.uniform(-2.0, max(h, w) + 1.0, (regions, 4))
    corners[0] = [1.0, 1.0, 1.0, 1.0]  # (an empty region)
    corners[1] = [6.0, 5.0, 2.0, 1.0]  # (an inverted one)
    batch = rng.integers(0, n + 1, regions).astype(np.uint32)  # (some outside [0, N))
    dy = rng.standard_normal((regions, c, *out))
    return x, corners, batch, dy


@pytest.mark.parametrize("mode", ["linear", "nearest_neighbor"])
@pytest.mark.parametrize("corners", [False, True])
def test_reference_is_the_adjoint_of_roi_align(mode, corners):
    """AVERAGE: sum(roi_align(x) * dy) == sum(x * roi_align_grad(dy)) (float64), for empty,
    inverted, out-of-image regions, batch indices past N, scales, offsets and sample counts:
    the reference is the forward's transpose, formulated apart (the forward gathers samples,
    the gradient builds per-axis weight matrices)."""
    rng = np.random.default_rng(7)
    for trial in range(6):
        x, rois, batch, dy = _random_case(rng)
        args = dict(spatial_scale=(float(rng.choice([0.5, 1.0, 1.25])), float(rng.choice([0.75, 1.0]))),
                    interpolation_mode=mode, input_pixel_offset=float(rng.choice([0.5, 0.0])),
                    output_pixel_offset=float(rng.choice([-0.5, 0.0])), align_regions_to_corners=corners,
                    minimum_samples_per_output=1 + trial % 2, maximum_samples_per_output=3 + trial)
        y = reference.roi_align(x, rois, batch, output_size=dy.shape[2:], **args)
        dx = reference.roi_align_grad(dy, rois, batch, input_size=x.shape, **args)
        np.testing.assert_allclose(float((y * dy).sum()), float((x * dx).sum()), rtol=1e-10, atol=1e-10)


def test_max_gradient_goes_to_the_picked_sample(device):
    """MAX: each bin's dy goes to the sample the forward picked, with its interpolation
    weights: sum(roi_align(x) * dy) == sum(x * dx) for the piecewise-linear forward (x at a
    generic point), and a tie goes to the first sample (a constant image: every bin's whole
    dy to its first sample's pixel)."""
    rng = np.random.default_rng(3)
    x, rois, batch, dy = _random_case(rng)
    args = dict(reduction_function="max", minimum_samples_per_output=2, maximum_samples_per_output=2)
    y = reference.roi_align(x, rois, batch, output_size=dy.shape[2:], **args)
    dx = reference.roi_align_grad(dy, rois, batch, x=x, **args)
    np.testing.assert_allclose(float((y * dy).sum()), float((x * dx).sum()), rtol=1e-10)
    flat = np.ones((1, 1, 4, 4), np.float32)
    rois1 = np.array([[0, 0, 4, 4]], np.float32)
    ones = np.ones((1, 1, 1, 1), np.float32)
    tie = dict(reduction_function="max", interpolation_mode="nearest_neighbor", input_pixel_offset=0.0,
               output_pixel_offset=0.0, minimum_samples_per_output=2, maximum_samples_per_output=2)
    want = np.zeros((1, 1, 4, 4), np.float32)
    want[0, 0, 0, 0] = 1  # (the first sample, at (0, 0); the others at 2 tie with it)
    got = dml.roi_align_grad(ones, rois1, np.zeros(1, np.uint32), x=flat, device=device, **tie)
    assert_bits_equal(got, want)
    assert_bits_equal(reference.roi_align_grad(ones, rois1, np.zeros(1, np.uint32), x=flat, **tie), want)


@pytest.mark.parametrize("reduction", ["average", "max"])
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_precision_at_the_bound(device, reduction, dtype):
    """Many overlapping regions over one small image (a dx element gathers from all of them,
    64 samples per bin): within the documented bound, float32 does round (not trivially
    exact), the bound is tight (float32: under 2^-12 of the magnitude) and a second run gives
    the same bits (a fixed order)."""
    rng = np.random.default_rng(5)
    x = rng.uniform(-1, 1, (1, 2, 6, 6)).astype(dtype)
    rois = np.concatenate([rng.uniform(-1, 2, (24, 2)), rng.uniform(4, 7, (24, 2))], axis=1).astype(dtype)
    batch = np.zeros(24, np.uint32)
    dy = rng.uniform(0.5, 1.0, (24, 2, 2, 2)).astype(dtype)
    args = dict(x=x, reduction_function=reduction, minimum_samples_per_output=8, maximum_samples_per_output=8)
    got = dml.roi_align_grad(dy, rois, batch, device=device, **args)
    want = reference.roi_align_grad(dy, rois, batch, **args)
    tolerance = spec_named("roi_align_grad").tolerance(want, [dy, rois, batch], args)
    assert_within(got, want, tolerance, "RoiAlignGrad")
    if dtype == np.float32:
        exact = reference.roi_align_grad(dy.astype(np.float64), rois, batch,
                                         **{**args, "x": x.astype(np.float64)})
        assert float(np.max(np.abs(got - exact))) > 0, "no rounding seen: the case proves nothing about the bound"
        assert float(np.max(tolerance / (1 + np.abs(exact)))) < 2.0**-12
    assert_bits_equal(dml.roi_align_grad(dy, rois, batch, device=device, **args), got)


@pytest.mark.parametrize("strategy_class", ["cpu", "gpu"])
@pytest.mark.parametrize("reduction", ["average", "max"])
def test_both_adapter_classes(adapter, strategy_class, reduction):
    """Each class's documented strategy first, and every strategy, within the bound, on a
    broadcast dy (channels stride 0), a strided input and a [1, 1, NumROIs, 4] region tensor."""
    dev = dml.Device(adapter=adapter, adapter_class=strategy_class)
    rng = np.random.default_rng(4)
    base = rng.uniform(-1, 1, (3, 1, 2, 3)).astype(np.float32)
    dy = dml.TensorDesc(F32, [3, 2, 2, 3], [6, 0, 3, 1])
    x_store = rng.uniform(-1, 1, (2, 2, 5, 12)).astype(np.float32)
    x = dml.TensorDesc(F32, [2, 2, 5, 6], [120, 60, 12, 2])
    rois = np.array([[0.5, 0.5, 4.5, 3.0], [5.0, 4.0, 1.0, 0.0], [-1.0, 2.0, 7.0, 6.0]], np.float32)
    batch = np.array([1, 0, 1], np.uint32)
    desc = dml.RoiAlignGradOperatorDesc(x, dy, dml.TensorDesc(F32, [1, 1, 3, 4]), dml.TensorDesc(U32, [3]),
                                        dml.TensorDesc(F32, [2, 2, 5, 6]), None, reduction, "linear", 1.0, 1.0,
                                        0.5, -0.5, 1, 4, False)
    op = dev.create_operator(desc)
    chosen = dev.compile_operator(op)
    assert chosen.strategy == ("runs" if strategy_class == "cpu" else "elements")
    logical_x = x_store[:, :, :, ::2]
    logical_dy = np.broadcast_to(base, (3, 2, 2, 3))
    args = dict(x=logical_x, reduction_function=reduction, minimum_samples_per_output=1,
                maximum_samples_per_output=4)
    want = reference.roi_align_grad(logical_dy, rois, batch, **args)
    tolerance = spec_named("roi_align_grad").tolerance(want, [logical_dy, rois, batch], args)
    for strategy in chosen.strategies:
        got = dev.compile_operator(op, strategy).execute([x_store.reshape(-1), base.reshape(-1), rois.reshape(-1),
                                                          batch])[0]
        assert_within(got, want, tolerance, strategy)


def test_loop_budget_refused_before_any_gpu_work(vulkan_device):
    """700 regions of 7 x 7 bins: a dx element's gather takes 700 x 57 iterations, past the
    loop budget: UnsupportedError naming it, at compile time."""
    desc = dml.RoiAlignGradOperatorDesc(None, dml.TensorDesc(F32, [700, 1, 7, 7]), dml.TensorDesc(F32, [700, 4]),
                                        dml.TensorDesc(U32, [700]), dml.TensorDesc(F32, [1, 1, 8, 8]), None,
                                        "average", "linear", 1.0, 1.0, 0.5, -0.5, 1, 2, False)
    op = vulkan_device.create_operator(desc)
    with pytest.raises(dml.UnsupportedError, match=r"RoiAlignGrad: each output_gradient_tensor element gathers over "
                                                   r"NumROIs x OutputHeight x OutputWidth = 700 x 7 x 7 bins"):
        vulkan_device.compile_operator(op)


def test_roi_gradient_refused(vulkan_device):
    """OutputROIGradientTensor validates (the page's rules) and is refused, naming the field,
    before any GPU work; the functional form and the reference alike."""
    desc = _desc(droi=(3, 4))
    op = vulkan_device.create_operator(desc)
    with pytest.raises(dml.UnsupportedError, match="RoiAlignGrad: output_roi_gradient_tensor .* not implemented"):
        vulkan_device.compile_operator(op)
    dy = np.zeros((3, 2, 2, 2), np.float32)
    rois, batch, x = np.zeros((3, 4), np.float32), np.zeros(3, np.uint32), np.zeros((1, 2, 4, 4), np.float32)
    with pytest.raises(dml.UnsupportedError, match="output_roi_gradient"):
        dml.roi_align_grad(dy, rois, batch, x=x, output_roi_gradient=True, device=vulkan_device)
    with pytest.raises(dml.UnsupportedError, match="output_roi_gradient"):
        reference.roi_align_grad(dy, rois, batch, x=x, output_roi_gradient=True)


def _desc(x=(1, 2, 4, 4), dy=(3, 2, 2, 2), rois=(3, 4), batch=(3,), dx=(1, 2, 4, 4), droi=None, dtype=F32,
          batch_type=U32, dx_type=None, reduction="average", mode="linear", samples=(1, 2)):
    t = dml.TensorDesc
    return dml.RoiAlignGradOperatorDesc(
        t(dtype, x) if x else None, t(dtype, dy), t(dtype, rois), t(batch_type, batch),
        t(dx_type or dtype, dx) if dx else None, t(dtype, droi) if droi else None, reduction, mode, 1.0, 1.0, 0.5,
        -0.5, *samples, False)


@pytest.mark.parametrize("desc, message", [
    (lambda: _desc(dx=None), "RoiAlignGrad: output_gradient_tensor and output_roi_gradient_tensor are both null"),
    (lambda: _desc(x=None, reduction="max"), "RoiAlignGrad: input_tensor must be supplied when reduction_function "
                                             "is MAX"),
    (lambda: _desc(x=None, droi=(3, 4)), "RoiAlignGrad: input_tensor must be supplied when "
                                         "output_roi_gradient_tensor is supplied"),
    (lambda: _desc(dy=(2, 2, 2, 2)), "RoiAlignGrad: input_gradient_tensor.sizes [2, 2, 2, 2] must be {NumROIs, "
                                     "ChannelCount, OutputHeight, OutputWidth} with NumROIs = 3"),
    (lambda: _desc(dy=(3, 1, 2, 2)), "RoiAlignGrad: input_gradient_tensor.sizes [3, 1, 2, 2] must be"),
    (lambda: _desc(dx=(1, 2, 4, 5)), "RoiAlignGrad: output_gradient_tensor.sizes [1, 2, 4, 5] must equal "
                                     "input_tensor.sizes [1, 2, 4, 4]"),
    (lambda: _desc(droi=(3, 5)), "RoiAlignGrad: output_roi_gradient_tensor.sizes [3, 5] must equal "
                                 "roi_tensor.sizes [3, 4]"),
    (lambda: _desc(rois=(3, 5)), "RoiAlignGrad: roi_tensor.sizes [3, 5] must be {NumROIs, 4}"),
    (lambda: _desc(batch=(2,)), "RoiAlignGrad: batch_indices_tensor.sizes [2] must be NumROIs = 3"),
    (lambda: _desc(batch_type=dml.DataType.INT32), "RoiAlignGrad: batch_indices_tensor.data_type INT32 is not "
                                                   "supported at FL_6_4 (supported: UINT32)"),
    (lambda: _desc(batch_type=dml.DataType.UINT64), "RoiAlignGrad: batch_indices_tensor.data_type UINT64 is not "
                                                    "supported"),
    (lambda: _desc(dx_type=F16), "RoiAlignGrad: output_gradient_tensor.data_type FLOAT16 must equal "
                                 "input_gradient_tensor.data_type FLOAT32"),
    (lambda: _desc(dtype=dml.DataType.INT8), "RoiAlignGrad: input_gradient_tensor.data_type INT8 is not supported"),
    (lambda: _desc(x=(2, 4, 4)), "RoiAlignGrad: input_tensor DimensionCount 3 is not supported"),
    (lambda: _desc(mode="cubic"), "RoiAlignGrad: interpolation_mode CUBIC must be NEAREST_NEIGHBOR or LINEAR"),
    (lambda: _desc(reduction="sum"), "RoiAlignGrad: reduction_function SUM must be AVERAGE or MAX"),
    (lambda: _desc(samples=(3, 2)), "RoiAlignGrad: minimum_samples_per_output = 3 and maximum_samples_per_output "
                                    "= 2 must satisfy"),
])
def test_validation_rule(vulkan_device, desc, message):
    with pytest.raises(dml.InvalidArgumentError) as err:
        vulkan_device.create_operator(desc())
    assert str(err.value).startswith(message), str(err.value)


def test_functional_bad_input():
    """The functional form: dx's sizes from x or input_size (one of them; equal where both);
    numpy's default (64-bit) integers as batch indices where they fit UINT32."""
    dy, rois, batch = np.zeros((1, 1, 2, 2), np.float32), np.zeros((1, 4), np.float32), np.zeros(1, np.uint32)
    ones = np.ones((1, 1, 1, 1), np.float32)
    assert_bits_equal(dml.roi_align_grad(ones, [[0, 0, 2, 2]], [0], input_size=[1, 1, 2, 2]),
                      np.full((1, 1, 2, 2), 0.25, np.float32))
    with pytest.raises(dml.InvalidArgumentError, match="batch_indices_tensor.data_type UINT64 is not supported"):
        dml.roi_align_grad(ones, [[0, 0, 2, 2]], [-1], input_size=[1, 1, 2, 2])
    with pytest.raises(dml.InvalidArgumentError, match=r"RoiAlignGrad: input_size \(the forward input's"):
        dml.roi_align_grad(dy, rois, batch)
    with pytest.raises(dml.InvalidArgumentError, match=r"RoiAlignGrad: input_size \[1, 1, 3, 3\] must equal x's"):
        dml.roi_align_grad(dy, rois, batch, x=np.zeros((1, 1, 4, 4), np.float32), input_size=[1, 1, 3, 3])


def test_levels(at_level):
    at_level(dml.FeatureLevel.FL_4_1).create_operator(_desc())
    with pytest.raises(dml.InvalidArgumentError, match=r"RoiAlignGrad: not available at feature level FL_4_0 "
                                                       r"\(introduced at FL_4_1\)"):
        at_level(dml.FeatureLevel.FL_4_0).create_operator(_desc())


def test_cli_shader(capsys):
    from gpudml import cli

    assert cli.main(["shader", "roi_align_grad", "--shape", "1,4,8,8", "--rois", "3", "--output-size", "2,2",
                     "--caps", "vulkan-cpu"]) == 0
    out = capsys.readouterr().out
    assert "// RoiAlignGrad at FL_6_4" in out and "// strategy runs" in out
    assert cli.main(["shader", "roi_align_grad", "--shape", "1,4,8,8", "--reduction", "max", "--caps", "gpu"]) == 0
    assert "// strategy elements" in capsys.readouterr().out
