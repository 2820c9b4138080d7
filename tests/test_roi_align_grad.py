"""RoiAlignGrad: what the conformance kit (tests/test_conformance.py) does not cover: the page's
worked example, the reference against the adjoint identity of the forward ROI align, MAX's
pick (ties to the first sample), the documented precision at its bound, determinism, the
loop budget's refusal, the ROI gradient (its reference against central differences of the
forward and against TensorFlow's CropAndResizeGradBoxes, which DirectML's runs in the
TensorFlow plugin; every mode, its bound, its functional form), each validation rule's
message, both adapter classes' strategies on the software adapters (strided and broadcast
tensors), the command line."""

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


@pytest.mark.any_class  # both classes' Devices made here: the GPU-class run would repeat them
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


@pytest.mark.parametrize("reduction", ["average", "max"])
def test_nonfinite_dy_reaches_only_what_it_weighs(device, reduction):
    """A NaN or infinite dy element adds nothing where its weight is exactly 0 (the kernel's
    rule, the reference's too): dx is NaN or infinite only where that element weighs, the
    ROI gradient only in its own region; kernel and reference agree on which."""
    rng = np.random.default_rng(12)
    x = rng.uniform(-1, 1, (1, 2, 6, 6)).astype(np.float32)
    rois = np.array([[0.7, 0.6, 2.9, 2.4], [3.1, 3.3, 5.2, 5.4]], np.float32)
    dy = rng.uniform(-1, 1, (2, 2, 2, 2)).astype(np.float32)
    dy[0, 1, 0, 0], dy[1, 0, 1, 1] = np.nan, np.inf
    args = dict(x=x, reduction_function=reduction, minimum_samples_per_output=2, maximum_samples_per_output=2,
                output_roi_gradient=True)
    batch = np.zeros(2, np.uint32)
    dx, droi = dml.roi_align_grad(dy, rois, batch, device=device, **args)
    want_dx, want_droi = reference.roi_align_grad(dy, rois, batch, **args)
    for got, want in ((dx, want_dx), (droi, want_droi)):
        assert np.array_equal(np.isfinite(got), np.isfinite(want))
        assert np.array_equal(np.isnan(got), np.isnan(want))
    assert 0 < int((~np.isfinite(want_dx)).sum()) < 16
    assert np.isfinite(want_dx[0, 1, 4:]).all() and np.isfinite(want_dx[0, 0, :2, :2]).all()
    assert not np.isfinite(want_droi[0]).all() and not np.isfinite(want_droi[1]).all()


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


def _forward_derivative(x, rois, batch, dy, args, h=1e-6):
    """sum(roi_align(x, rois) dy)'s central differences in each box coordinate (float64)."""
    out = np.zeros(rois.shape)
    for index in np.ndindex(*rois.shape):
        up, down = rois.copy(), rois.copy()
        up[index] += h
        down[index] -= h
        f = [float((reference.roi_align(x, r, batch, output_size=dy.shape[2:], **args) * dy).sum())
             for r in (up, down)]
        out[index] = (f[0] - f[1]) / (2 * h)
    return out


@pytest.mark.parametrize("reduction", ["average", "max"])
def test_roi_gradient_is_the_forward_derivative(reduction):
    """The ROI gradient's float64 reference against central differences of the float64
    forward (ROI_ALIGN1's reference, formulated apart) in x1, y1, x2, y2 of every region:
    boxes in and beyond the image, an inverted one, a batch index past N, scales, both offset
    pairs, corner alignment, fixed and adaptive sample counts (generic coordinates: no sample
    on an integer, where the page's floor/ceil taps give 0); nearest: 0 everywhere."""
    rng = np.random.default_rng(11)
    for trial in range(6):
        x = rng.standard_normal((2, 2, 6, 7))
        rois = rng.uniform(-1.3, 7.6, (4, 4))
        rois[1, [0, 2]] = np.sort(rois[1, [0, 2]])[::-1]  # (inverted in x)
        batch = np.array([0, 1, 2 if trial == 2 else 1, 0], np.uint32)
        dy = rng.standard_normal((4, 2, 2, 3))
        fixed = 1 + trial % 3
        args = dict(spatial_scale=[(1.0, 1.0), (0.75, 1.25), (1.5, 0.5)][trial % 3], reduction_function=reduction,
                    input_pixel_offset=[0.5, 0.0][trial % 2], output_pixel_offset=[-0.5, 0.0][trial % 2],
                    align_regions_to_corners=trial >= 3, minimum_samples_per_output=fixed,
                    maximum_samples_per_output=fixed if trial < 4 else 2**32 - 1)
        if trial >= 4:
            args["minimum_samples_per_output"] = 1
        got = reference.roi_align_grad(dy, rois, batch, x=x, output_gradient=False, output_roi_gradient=True, **args)
        want = _forward_derivative(x, rois, batch, dy, args)
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6 * (1 + np.abs(want).max()))
        assert np.abs(got).max() > 0.1
        assert trial != 2 or not got[2].any()  # (a batch index past N: no gradient)
        nearest = reference.roi_align_grad(dy, rois, batch, x=x, output_gradient=False, output_roi_gradient=True,
                                           **{**args, "interpolation_mode": "nearest_neighbor"})
        assert not nearest.any()
        np.testing.assert_allclose(_forward_derivative(x, rois, batch, dy, {**args,
                                                                           "interpolation_mode": "nearest_neighbor"}),
                                   0.0, atol=1e-9)


def _crop_and_resize_grad_boxes(grads, image, boxes, box_index):
    """TensorFlow's CropAndResizeGradBoxes (bilinear; NHWC grads and image, boxes [y1, x1, y2,
    x2] normalized, crops of more than one pixel), its loop written out in float64: per crop
    sample at in = y1 (H - 1) + y (y2 - y1) (H - 1) / (CH - 1) (x alike) inside [0, H - 1] x
    [0, W - 1], the bilinear slopes with floor and ceil taps times the incoming gradient, to
    y1 with (H - 1 - y (H - 1) / (CH - 1)) and to y2 with y (H - 1) / (CH - 1)."""
    out = np.zeros(boxes.shape)
    _, h, w, _ = image.shape
    _, ch, cw, _ = grads.shape
    for b, (y1, x1, y2, x2) in enumerate(boxes):
        hr, wr = (h - 1) / (ch - 1), (w - 1) / (cw - 1)
        for y in range(ch):
            iy = y1 * (h - 1) + y * (y2 - y1) * hr
            if not 0 <= iy <= h - 1:
                continue
            top, bottom = int(np.floor(iy)), int(np.ceil(iy))
            fy = iy - top
            for xx in range(cw):
                ix = x1 * (w - 1) + xx * (x2 - x1) * wr
                if not 0 <= ix <= w - 1:
                    continue
                left, right = int(np.floor(ix)), int(np.ceil(ix))
                fx = ix - left
                im = image[box_index[b]]
                tl, tr, bl, br = im[top, left], im[top, right], im[bottom, left], im[bottom, right]
                gy = ((1 - fx) * (bl - tl) + fx * (br - tr)) * grads[b, y, xx]
                gx = ((1 - fy) * (tr - tl) + fy * (br - bl)) * grads[b, y, xx]
                out[b, 0] += gy.sum() * (h - 1 - y * hr)
                out[b, 2] += gy.sum() * y * hr
                out[b, 1] += gx.sum() * (w - 1 - xx * wr)
                out[b, 3] += gx.sum() * xx * wr
    return out


def test_roi_gradient_is_tensorflow_crop_and_resize_grad_boxes(device):
    """DirectML's ROI gradient is what tensorflow-directml-plugin runs TensorFlow's
    CropAndResizeGradBoxes on (ROI_ALIGN_GRAD with the boxes' y and x swapped, SpatialScale (W -
    1, H - 1), one sample per output, offsets 0, AlignRegionsToCorners, AVERAGE, LINEAR): the
    reference and the kernel equal TensorFlow's loop there (boxes inside the image, some
    crop samples on integer coordinates: 0 there in both)."""
    rng = np.random.default_rng(9)
    image = rng.standard_normal((2, 5, 6, 3))  # NHWC
    boxes = np.concatenate([rng.uniform(0, 0.45, (4, 2)), rng.uniform(0.55, 1, (4, 2))], axis=1)
    boxes[0] = [0.0, 0.0, 1.0, 1.0]  # (the whole image at its size: every crop sample on a pixel)
    box_index = np.array([0, 1, 1, 0], np.uint32)
    grads = rng.standard_normal((4, 5, 6, 3))  # [boxes, crop height, crop width, depth]
    want = _crop_and_resize_grad_boxes(grads, image, boxes, box_index)
    args = dict(spatial_scale=(5.0, 4.0), input_pixel_offset=0.0, output_pixel_offset=0.0,
                align_regions_to_corners=True, minimum_samples_per_output=1, maximum_samples_per_output=1,
                output_gradient=False, output_roi_gradient=True)
    x, dy, rois = image.transpose(0, 3, 1, 2), grads.transpose(0, 3, 1, 2), boxes[:, [1, 0, 3, 2]]
    got = reference.roi_align_grad(dy, rois, box_index, x=x, **args)[:, [1, 0, 3, 2]]
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    assert not want[0].any() and np.abs(want[1:]).min() > 0.01
    as32 = [a.astype(np.float32) for a in (dy, rois, x)]
    kernel = dml.roi_align_grad(as32[0], as32[1], box_index, x=as32[2], device=device, **args)
    exact = reference.roi_align_grad(as32[0].astype(np.float64), as32[1], box_index,
                                     x=as32[2].astype(np.float64), **args)
    bound = spec_named("roi_align_grad").tolerance(exact.astype(np.float32), [as32[0], as32[1], box_index],
                                                   {"x": as32[2], **args})
    assert_within(kernel, exact.astype(np.float32), bound, "RoiAlignGrad")


def _roi_case(rng, dtype=np.float32, regions=5, channels=3, out=(3, 4)):
    x = rng.uniform(-1, 1, (2, channels, 7, 9)).astype(dtype)
    rois = rng.uniform(-1.5, 9.5, (regions, 4)).astype(dtype)
    rois[0] = [2.0, 3.0, 2.0, 3.0]  # (an empty region: every sample on one integer point)
    rois[1, [0, 2]] = np.sort(rois[1, [0, 2]])[::-1]  # (inverted)
    batch = (np.arange(regions) % 3).astype(np.uint32)  # (some past N)
    dy = rng.uniform(-1, 1, (regions, channels, *out)).astype(dtype)
    return x, rois, batch, dy


@pytest.mark.any_class  # both classes' Devices made here: the GPU-class run would repeat them
@pytest.mark.parametrize("strategy_class", ["cpu", "gpu"])
@pytest.mark.parametrize("reduction", ["average", "max"])
@pytest.mark.parametrize("mode", ["linear", "nearest_neighbor"])
def test_roi_gradient_every_mode(adapter, strategy_class, reduction, mode):
    """OutputROIGradientTensor alone and beside OutputGradientTensor, every reduction and
    interpolation, corner alignment and offsets, under each adapter class's strategies: within
    the documented bound of the float64 reference (nearest: exactly 0), on a strided x, a
    broadcast dy (channels stride 0), [1, 1, NumROIs, 4] regions and a strided ROI gradient."""
    dev = dml.Device(adapter=adapter, adapter_class=strategy_class)
    rng = np.random.default_rng(6)
    x_store = rng.uniform(-1, 1, (2, 2, 7, 18)).astype(np.float32)
    logical_x = x_store[:, :, :, ::2]
    base = rng.uniform(-1, 1, (4, 1, 2, 3)).astype(np.float32)
    logical_dy = np.broadcast_to(base, (4, 2, 2, 3))
    rois = np.array([[0.3, 0.6, 6.7, 5.2], [8.1, 4.4, 1.2, 0.3], [-1.2, 2.3, 9.6, 7.1], [2.5, 1.5, 3.7, 5.9]],
                    np.float32)
    batch = np.array([1, 0, 1, 3], np.uint32)
    t = dml.TensorDesc
    for both, corners, offsets in ((False, False, (0.5, -0.5)), (True, True, (0.0, 0.0))):
        droi = t(F32, [1, 1, 4, 4], [64, 64, 8, 2])
        desc = dml.RoiAlignGradOperatorDesc(
            t(F32, [2, 2, 7, 9], [252, 126, 18, 2]), t(F32, [4, 2, 2, 3], [6, 0, 3, 1]), t(F32, [1, 1, 4, 4]),
            t(U32, [4]), t(F32, [2, 2, 7, 9]) if both else None, droi, reduction, mode, 1.25, 0.75, *offsets, 1, 3,
            corners)
        op = dev.create_operator(desc)
        chosen = dev.compile_operator(op)
        assert chosen.strategy == ("runs" if strategy_class == "cpu" else "elements")
        args = dict(x=logical_x, spatial_scale=(1.25, 0.75), reduction_function=reduction, interpolation_mode=mode,
                    input_pixel_offset=offsets[0], output_pixel_offset=offsets[1], align_regions_to_corners=corners,
                    minimum_samples_per_output=1, maximum_samples_per_output=3, output_gradient=both,
                    output_roi_gradient=True)
        want = reference.roi_align_grad(logical_dy, rois.reshape(1, 1, 4, 4), batch, **args)
        want = want if both else (want,)
        inputs = [x_store.reshape(-1), base.reshape(-1), rois.reshape(-1), batch]
        for strategy in chosen.strategies:
            got = dev.compile_operator(op, strategy).execute(inputs)
            for g, w in zip(got, want, strict=True):
                bound = spec_named("roi_align_grad").tolerance(w, [logical_dy, rois.reshape(1, 1, 4, 4), batch], args)
                if w.shape == (1, 1, 4, 4):
                    if mode == "nearest_neighbor":
                        assert_bits_equal(g, np.zeros_like(w))
                    else:
                        assert np.abs(w).max() > 0.1
                assert_within(g, w, bound, f"{strategy} {w.shape}")


@pytest.mark.parametrize("reduction", ["average", "max"])
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_roi_gradient_precision_at_the_bound(device, reduction, dtype):
    """Regions with 8 x 8 samples per bin and 96 channels of 7 x 7 bins (4,704 bins a region:
    the sums in two stages, ROI_CHUNK = 4096) inside a ramp (slopes of one sign: the bound's
    sum of magnitudes is the result's; MAX: one largest sample per bin, no near tie): within
    the documented bound, float32 visibly rounding, the bound tight (float32: under 2^-10 of
    the gradients' magnitude), a second run the same bits (one fixed-order sum per
    coordinate)."""
    rng = np.random.default_rng(8)
    rois = rng.uniform(0.6, 6.4, (3, 4)).astype(dtype)
    rois[1, [0, 2]] = np.sort(rois[1, [0, 2]])[::-1]  # (inverted)
    batch = np.array([0, 1, 0], np.uint32)
    ramp = np.add.outer(0.173 * np.arange(7.0), 0.0613 * np.arange(9.0))  # (no two samples of a bin alike)
    x = (ramp * rng.uniform(0.5, 1.0, (2, 96, 1, 1))).astype(dtype)
    dy = rng.uniform(0.5, 1.0, (3, 96, 7, 7)).astype(dtype)
    args = dict(x=x, reduction_function=reduction, minimum_samples_per_output=8, maximum_samples_per_output=8,
                output_gradient=False, output_roi_gradient=True)
    got = dml.roi_align_grad(dy, rois, batch, device=device, **args)
    want = reference.roi_align_grad(dy, rois, batch, **args)
    bound = spec_named("roi_align_grad").tolerance(want, [dy, rois, batch], args)
    assert_within(got, want, bound, "RoiAlignGrad")
    if dtype == np.float32:
        exact = reference.roi_align_grad(dy.astype(np.float64), rois, batch, **{**args, "x": x.astype(np.float64)})
        assert float(np.max(np.abs(got - exact))) > 0, "no rounding seen: the case proves nothing about the bound"
        assert float(np.max(bound)) < 2.0**-10 * float(np.max(np.abs(exact)))
        print(f"error / bound at most {float(np.max(np.abs(got - want) / bound)):.3g}")
    assert_bits_equal(dml.roi_align_grad(dy, rois, batch, device=device, **args), got)


def test_roi_gradient_functional_outputs(vulkan_device):
    """The functional form returns the ROI gradient (rois' shape and type) alone, or (dx, ROI
    gradient) where both are asked for; the reference alike; the ROI gradient needs x."""
    rng = np.random.default_rng(2)
    x, rois, batch, dy = _roi_case(rng, np.float16, regions=3, channels=2, out=(2, 2))
    rois = rois.reshape(1, 3, 4)
    droi = dml.roi_align_grad(dy, rois, batch, x=x, output_gradient=False, output_roi_gradient=True,
                              device=vulkan_device)
    assert droi.shape == (1, 3, 4) and droi.dtype == np.float16
    dx, droi2 = dml.roi_align_grad(dy, rois, batch, x=x, output_roi_gradient=True, device=vulkan_device)
    assert dx.shape == x.shape
    assert_bits_equal(droi2, droi)
    want = reference.roi_align_grad(dy, rois, batch, x=x, output_gradient=False, output_roi_gradient=True)
    assert want.shape == (1, 3, 4) and want.dtype == np.float16
    with pytest.raises(dml.InvalidArgumentError, match="input_tensor must be supplied when output_roi_gradient"):
        dml.roi_align_grad(dy, rois, batch, input_size=x.shape, output_roi_gradient=True, device=vulkan_device)


def _desc(x=(1, 2, 4, 4), dy=(3, 2, 2, 2), rois=(3, 4), batch=(3,), dx=(1, 2, 4, 4), droi=None, dtype=F32,
          batch_type=U32, dx_type=None, droi_type=None, reduction="average", mode="linear", samples=(1, 2)):
    t = dml.TensorDesc
    return dml.RoiAlignGradOperatorDesc(
        t(dtype, x) if x else None, t(dtype, dy), t(dtype, rois), t(batch_type, batch),
        t(dx_type or dtype, dx) if dx else None, t(droi_type or dtype, droi) if droi else None, reduction, mode, 1.0,
        1.0, 0.5, -0.5, *samples, False)


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
    (lambda: _desc(droi=(1, 3, 4)), "RoiAlignGrad: output_roi_gradient_tensor.sizes [1, 3, 4] must equal "
                                    "roi_tensor.sizes [3, 4]"),
    (lambda: _desc(droi=(1, 1, 1, 3, 4)), "RoiAlignGrad: output_roi_gradient_tensor DimensionCount 5 is not "
                                          "supported"),
    (lambda: _desc(droi=(3, 4), droi_type=F16), "RoiAlignGrad: output_roi_gradient_tensor.data_type FLOAT16 must "
                                                "equal input_gradient_tensor.data_type FLOAT32"),
    (lambda: _desc(droi=(3, 4), droi_type=dml.DataType.INT32), "RoiAlignGrad: output_roi_gradient_tensor.data_type "
                                                              "INT32 is not supported"),
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
    assert cli.main(["shader", "roi_align_grad", "--shape", "1,4,8,8", "--rois", "3", "--output-size", "2,2",
                     "--outputs", "both", "--caps", "vulkan-cpu"]) == 0
    out = capsys.readouterr().out
    assert "// dispatch 3: 12 invocations" in out and "OutputROIGradientTensor[r, k]" in out
    assert cli.main(["shader", "roi_align_grad", "--shape", "1,4,8,8", "--outputs", "roi", "--caps", "gpu"]) == 0
    out = capsys.readouterr().out  # (the bins' shares, their sums: no dx gather)
    assert "// dispatch 1:" in out and "// dispatch 2:" not in out and "fn gather" not in out
    assert cli.main(["shader", "roi_align_grad", "--shape", "1,4,8,8", "--outputs", "all"]) != 0
    assert "RoiAlignGrad: --outputs 'all' must be one of ['both', 'input', 'roi']" in capsys.readouterr().err
