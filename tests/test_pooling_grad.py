"""The pooling gradients (gpudml/ops/pooling_grad.py; kernels/pooling_grad.py): what the
conformance kit does not cover: the pages' examples, 2-D (MAX) and 2-D/3-D (AVERAGE) windows
with strides, dilations and asymmetric padding under every strategy, ties and NaN (MAX),
include_padding, overlapping windows summed (the documented precision, at its bound),
float16, strided inputs and outputs, the GPU-class order on a software adapter, the loop
budget, each validation rule's message and `gpudml shader`."""

from __future__ import annotations

import numpy as np
import pytest

import gpudml as dml
from gpudml import caps as caps_module
from gpudml import cli
from gpudml import reference as R
from gpudml.kernels import pooling_grad as family
from gpudml.ops import pooling_grad as grad_op
from gpudml.ops import spec_named
from gpudml.testing import assert_within

T = dml.DataType
MAX, AVERAGE = spec_named("max_pooling_grad"), spec_named("average_pooling_grad")


def run_every_strategy(device, spec, arrays, *args, **kwargs):
    """The operator under each strategy: the reference's result within the documented
    precision; returns it."""
    descs = [dml.TensorDesc(T.from_numpy(a.dtype), a.shape) for a in arrays]
    desc = spec.infer_output(*descs, *args, **kwargs)
    want = spec.reference(*arrays, *args, **kwargs)
    tolerance = spec.tolerance(want, arrays, spec.arguments(desc))
    op = device.create_operator(desc)
    strategies = spec.planner.strategies_for(desc, device.caps)
    assert set(strategies) == {"runs", "elements"}
    for strategy in strategies:
        (got,) = device.compile_operator(op, strategy).execute(arrays)
        assert_within(got, want, tolerance, f"{spec.key} {strategy} {kwargs}")
    return want


def test_the_pages_examples(device):
    """MAX_POOLING_GRAD's and AVERAGE_POOLING_GRAD's examples (tests/data/pages), through the
    functional forms and the references."""
    x = np.array([[1, 2, 3], [2, 4, 2], [5, 6, 7]], np.float32).reshape(1, 1, 3, 3)
    dy = np.array([[1, 2], [4, 5]], np.float32).reshape(1, 1, 2, 2)
    want = np.array([[0, 0, 0], [0, 3, 0], [0, 4, 5]], np.float32).reshape(1, 1, 3, 3)
    assert np.array_equal(dml.max_pooling_grad(x, dy, 2, device=device), want)
    assert np.array_equal(R.max_pooling_grad(x, dy, 2), want)
    g = np.array([[1, 2], [3, 4]], np.float32).reshape(1, 1, 2, 2)
    want = np.array([[0.25, 0.75, 0.5], [1, 2.5, 1.5], [0.75, 1.75, 1]], np.float32).reshape(1, 1, 3, 3)
    assert np.array_equal(dml.average_pooling_grad(g, [1, 1, 3, 3], 2, device=device), want)
    assert np.array_equal(R.average_pooling_grad(g, [1, 1, 3, 3], 2), want)


def _forward_shape(name, shape, window, **kwargs):
    return R.max_pooling(np.zeros(shape, np.float32), window, **kwargs).shape if name == "max" else \
        R.average_pooling(np.zeros(shape, np.float32), window, **kwargs).shape


@pytest.mark.parametrize(("shape", "window", "kwargs"), [
    ((1, 2, 9, 8), (3, 2), {"strides": (2, 1), "start_padding": (1, 0), "end_padding": (0, 1)}),
    ((2, 1, 7, 7), (2, 3), {"strides": (3, 2), "dilations": (2, 2), "start_padding": (2, 1), "end_padding": (1, 2)}),
    ((1, 3, 11, 12), (3, 3), {"strides": 2, "start_padding": 1, "end_padding": 1}),
])
def test_max_windows_under_every_strategy(device, shape, window, kwargs):
    """Strides, dilations, asymmetric paddings, overlapping windows; x of small integers
    (ties everywhere: the first in window order wins), some NaN."""
    rng = np.random.default_rng(1)
    x = rng.integers(-2, 3, shape).astype(np.float32)
    x.reshape(-1)[rng.integers(0, x.size, 3)] = np.nan
    dy = rng.uniform(-1, 1, _forward_shape("max", shape, window, **kwargs)).astype(np.float32)
    run_every_strategy(device, MAX, [x, dy], window, **kwargs)


@pytest.mark.parametrize(("shape", "window", "kwargs"), [
    ((1, 2, 9, 8), (3, 2), {"strides": (2, 1), "start_padding": (1, 0), "end_padding": (0, 1)}),
    ((1, 2, 4, 5, 6), (2, 3, 2), {"strides": (1, 2, 3), "start_padding": (1, 0, 1)}),
    ((2, 1, 6, 7), (4, 4), {"strides": 1, "start_padding": 2, "end_padding": 1}),
])
@pytest.mark.parametrize("include_padding", [False, True])
def test_average_windows_under_every_strategy(device, shape, window, kwargs, include_padding):
    rng = np.random.default_rng(2)
    dy = rng.uniform(-1, 1, _forward_shape("avg", shape, window, **kwargs)).astype(np.float32)
    run_every_strategy(device, AVERAGE, [dy], shape, window, include_padding=include_padding, **kwargs)


def test_ties_go_to_the_lowest_index_and_nan_wins():
    """The page's rule (the lowest logical index of equal maxima: the first in row-major
    window order) and gpudml's (NaN counts as the largest, the first NaN wins), exactly."""
    device = dml.Device()
    x = np.array([[5, 5, 1], [5, 5, 1], [0, np.nan, np.nan]], np.float32).reshape(1, 1, 3, 3)
    dy = np.array([[1, 2], [4, 8]], np.float32).reshape(1, 1, 2, 2)
    # windows: (0,0) ties at 0,1,3,4 -> 0; (0,1) ties at 1,4 -> 1; (1,0) NaN at 7 -> 7; (1,1) NaN at 7, 8 -> 7
    want = np.array([[1, 2, 0], [0, 0, 0], [0, 12, 0]], np.float32).reshape(1, 1, 3, 3)
    assert np.array_equal(R.max_pooling_grad(x, dy, 2), want)
    for strategy in ("runs", "elements"):
        op = device.create_operator(MAX.infer_output(dml.TensorDesc(T.FLOAT32, x.shape),
                                                     dml.TensorDesc(T.FLOAT32, dy.shape), 2))
        (got,) = device.compile_operator(op, strategy).execute([x, dy])
        assert np.array_equal(got, want), strategy


def test_non_overlapping_max_is_bit_exact(device):
    """Windows that do not overlap: each element receives at most one gradient, its bits."""
    rng = np.random.default_rng(4)
    x = rng.standard_normal((2, 3, 8, 8)).astype(np.float32)
    dy = (rng.standard_normal((2, 3, 4, 4)) * 1e-3).astype(np.float32)
    got = dml.max_pooling_grad(x, dy, 2, strides=2, device=device)
    want = R.max_pooling_grad(x, dy, 2, strides=2)
    assert got.tobytes() == want.tobytes()
    assert np.count_nonzero(got) == dy.size


def test_precision_at_the_bound(device):
    """Many overlapping windows (3 x 3, stride 1: 9 per element) with values of magnitudes
    10^-3 to 10^3: the f32 sums err within the documented bound, and the bound is not vacuous
    (the largest error is more than 5% of it: 36% measured; MAX's 97%)."""
    rng = np.random.default_rng(6)
    dy = (rng.standard_normal((1, 4, 30, 30)) * 10.0 ** rng.integers(-3, 4, (1, 4, 30, 30))).astype(np.float32)
    desc = AVERAGE.infer_output(dml.TensorDesc(T.FLOAT32, dy.shape), (1, 4, 32, 32), 3)
    want = AVERAGE.reference(dy, (1, 4, 32, 32), 3)
    tolerance = AVERAGE.tolerance(want, [dy], AVERAGE.arguments(desc))
    got = dml.average_pooling_grad(dy, (1, 4, 32, 32), 3, device=device)
    exact = np.zeros((1, 4, 32, 32))
    for i in range(3):
        for j in range(3):
            exact[:, :, i:i + 30, j:j + 30] += dy.astype(np.float64) / 9
    error = np.abs(got.astype(np.float64) - exact)
    assert np.all(error <= tolerance + np.abs(want.astype(np.float64) - exact))
    assert np.max(error / tolerance) > 0.05  # the bound is tight: measured 0.36 of it at most
    x = rng.integers(0, 2, (1, 4, 32, 32)).astype(np.float32)  # ties: an element is the max of many windows
    dym = dy[:, :, :30, :30]
    got = dml.max_pooling_grad(x, dym, 3, device=device)
    want = MAX.reference(x, dym, 3)
    tolerance = MAX.tolerance(want, [x, dym], {"window_size": 3})
    assert_within(got, want, tolerance, "max_pooling_grad")
    error = np.abs(got.astype(np.float64) - want)
    assert np.max(np.where(tolerance > 0, error / np.where(tolerance > 0, tolerance, 1), 0)) > 0.05


def test_float16(device):
    """float16 read exactly, summed in float32, rounded once: the centre of a 5 x 5 x is the
    maximum of the 9 windows 3 x 3 covering it, their dy 2048 and eight 1s: 2056 (a float16
    running sum would stay at 2048)."""
    x = np.zeros((1, 1, 5, 5), np.float16)
    x[0, 0, 2, 2] = 1
    dy = np.ones((1, 1, 3, 3), np.float16)
    dy[0, 0, 0, 0] = 2048
    got = dml.max_pooling_grad(x, dy, 3, device=device)
    assert got.dtype == np.float16 and got[0, 0, 2, 2] == 2056 and np.count_nonzero(got) == 1
    g = np.full((1, 1, 3, 3), 0.1, np.float16)
    got = dml.average_pooling_grad(g, (1, 1, 5, 5), 3, include_padding=True, device=device)
    assert got[0, 0, 2, 2] == np.float16(np.float32(np.float16(0.1)) / 9 * 9)
    assert_within(got, R.average_pooling_grad(g, (1, 1, 5, 5), 3, include_padding=True),
                  AVERAGE.tolerance(got, [g], {"input_sizes": (1, 1, 5, 5), "window_size": 3,
                                               "include_padding": True}), "float16")


def test_strided_inputs_and_output(device):
    """A transposed x (strides, no copy), a broadcast dy (stride 0) and a strided output whose
    gaps keep their bytes."""
    rng = np.random.default_rng(7)
    base_x = rng.standard_normal((1, 2, 6, 5)).astype(np.float32)
    x = dml.TensorDesc(T.FLOAT32, [1, 2, 5, 6], [60, 30, 1, 5])
    dy = dml.TensorDesc(T.FLOAT32, [1, 2, 2, 3], [0, 3, 0, 1])  # one row per channel, broadcast
    out = dml.TensorDesc(T.FLOAT32, [1, 2, 5, 6], [80, 40, 8, 1])
    desc = MAX.infer_output(x, dy, 2, strides=2)
    desc = type(desc)(**{**desc.__dict__, "output_gradient_tensor": out})
    dy_values = rng.standard_normal(6).astype(np.float32)
    for strategy in ("runs", "elements"):
        compiled = device.compile_operator(device.create_operator(desc), strategy)
        (got,) = compiled.execute([base_x.reshape(-1), dy_values])
        logical_dy = np.broadcast_to(dy_values.reshape(1, 2, 1, 3), (1, 2, 2, 3))
        want = R.max_pooling_grad(np.swapaxes(base_x, 2, 3), logical_dy, 2, strides=2)
        assert np.array_equal(got, want), strategy


def test_the_first_pass_is_the_forward_kernel_where_dx_fills_its_buffer():
    """MAX's maxima come from the forward pooling family's kernel (its value output into dx's
    buffer, which the gather then overwrites) where dx is packed and at least as large as the
    forward output; elsewhere (a strided dx whose gaps keep their bytes: test_strided_inputs_and_output;
    a forward output larger than x) from the gradient family's own argmax pass."""
    f32 = lambda sizes, strides=None: dml.TensorDesc(T.FLOAT32, sizes, strides)  # noqa: E731
    packed = MAX.infer_output(f32([1, 2, 8, 8]), f32([1, 2, 4, 4]), 3, strides=2, start_padding=1, end_padding=1)
    templates = [d.template for d in MAX.planner.plan(packed, None, "runs").dispatches]
    assert templates == ["pooling.wgsl.j2", "pooling_grad.wgsl.j2"]
    larger = MAX.infer_output(f32([1, 1, 2, 2]), f32([1, 1, 3, 3]), 2, start_padding=1, end_padding=1)
    assert [d.params["pass"] for d in MAX.planner.plan(larger, None, "elements").dispatches] == ["argmax", "gather"]
    x = np.array([[[[1, 2], [3, 4]]]], np.float32)
    got = dml.max_pooling_grad(x, np.ones((1, 1, 3, 3), np.float32), 2, start_padding=1, end_padding=1)
    assert np.array_equal(got, np.array([[[[1, 2], [2, 4]]]], np.float32))  # 9 windows: 1, 2, 2 and 4 of them


def test_gpu_class_runs_elements_first_on_a_software_adapter(vulkan_device):
    """The GPU-class order (`elements` first) on the software adapter: its default runs and is right."""
    device = dml.Device(adapter=vulkan_device.adapter_name, adapter_class="gpu")
    rng = np.random.default_rng(8)
    x = rng.standard_normal((1, 2, 7, 7)).astype(np.float32)
    dy = rng.standard_normal((1, 2, 4, 4)).astype(np.float32)
    desc = MAX.infer_output(dml.TensorDesc(T.FLOAT32, x.shape), dml.TensorDesc(T.FLOAT32, dy.shape), 3, strides=2,
                            start_padding=1, end_padding=1)
    assert MAX.planner.strategies_for(desc, device.caps)[0] == "elements"
    got = dml.max_pooling_grad(x, dy, 3, strides=2, start_padding=1, end_padding=1, device=device)
    want = R.max_pooling_grad(x, dy, 3, strides=2, start_padding=1, end_padding=1)
    assert_within(got, want, MAX.tolerance(want, [x, dy], MAX.arguments(desc)), "gpu class")
    g = rng.standard_normal((1, 2, 3, 3, 3)).astype(np.float32)
    got = dml.average_pooling_grad(g, (1, 2, 6, 6, 6), 2, strides=2, device=device)
    assert_within(got, R.average_pooling_grad(g, (1, 2, 6, 6, 6), 2, strides=2), 1e-6, "gpu class average")


def test_loop_budget():
    """Runs shortened to fit the budget; a MAX window past it is an UnsupportedError naming the
    budget where dx is strided (the gradient family's own argmax pass walks it); the global
    AVERAGE gradient (one covering window per element) fits."""
    f32 = lambda sizes, strides=None: dml.TensorDesc(T.FLOAT32, sizes, strides)  # noqa: E731
    big = MAX.infer_output(f32([1, 1, 200, 200]), f32([1, 1, 1, 1]))
    strided = type(big)(**{**big.__dict__, "output_gradient_tensor": f32([1, 1, 200, 200], [80000, 80000, 400, 2])})
    with pytest.raises(dml.UnsupportedError, match="loop budget"):
        MAX.planner.strategies_for(strided, None)
    p = grad_op.problem(type(big)(**{**MAX.infer_output(f32([1, 1, 100, 100]), f32([1, 1, 1, 1])).__dict__,
                                     "output_gradient_tensor": f32([1, 1, 100, 100], [20000, 20000, 200, 2])}))
    assert family.costs(p)["argmax"] == 10100 and family._run(p, None) == 3
    avg = AVERAGE.infer_output(dml.TensorDesc(T.FLOAT32, [1, 1, 1, 1]), (1, 1, 300, 300))
    assert AVERAGE.planner.strategies_for(avg, caps_module.PROFILES["gl-cpu"]) == ("runs", "elements")
    assert family.costs(grad_op.problem(avg)) == {"gather": 2}


def test_global_max_gradient_past_the_loop_budget(device):
    """Global max pooling over 256 x 256 (65,536 positions): the first pass is the forward
    family's `chunks` (its partial results in a scratch of their own), the gradient goes to
    each channel's first maximum."""
    rng = np.random.default_rng(9)
    x = rng.uniform(-1, 1, (1, 2, 256, 256)).astype(np.float32)
    x[0, 0, 7, 9] = x[0, 0, 200, 3] = 5.0  # a tie: the first (lower flat index) wins
    x[0, 1, 255, 255] = 5.0
    dy = np.array([2.0, -3.0], np.float32).reshape(1, 2, 1, 1)
    desc = MAX.infer_output(dml.TensorDesc(T.FLOAT32, x.shape), dml.TensorDesc(T.FLOAT32, dy.shape))
    kinds = [d.params.get("pass") for d in MAX.planner.plan(desc, device.caps, "runs").dispatches]
    assert kinds == ["partials", "combine", "gather"]
    got = dml.max_pooling_grad(x, dy, None, device=device)
    assert got[0, 0, 7, 9] == 2 and got[0, 1, 255, 255] == -3 and np.count_nonzero(got) == 2


def test_global_average_gradient_on_a_large_window(device):
    """Global average pooling over 256 x 256: every element dy / 65536."""
    dy = np.array([3.0, -1.0], np.float32).reshape(1, 2, 1, 1)
    got = dml.average_pooling_grad(dy, (1, 2, 256, 256), None, device=device)
    assert np.all(got[0, 0] == np.float32(3.0 / 65536)) and np.all(got[0, 1] == np.float32(-1.0 / 65536))


@pytest.mark.parametrize(("call", "message"), [
    (lambda: MAX.infer_output(dml.TensorDesc(T.FLOAT32, [1, 1, 4, 4]), dml.TensorDesc(T.FLOAT32, [1, 1, 3, 2]), 2),
     r"MaxPoolingGrad: input_gradient_tensor.sizes \[1, 1, 3, 2\] must be the forward pooling's output sizes "
     r"\[1, 1, 3, 3\]"),
    (lambda: MAX.infer_output(dml.TensorDesc(T.FLOAT32, [1, 1, 4, 4]), dml.TensorDesc(T.FLOAT16, [1, 1, 3, 3]), 2),
     "MaxPoolingGrad: .*data_type"),
    (lambda: MAX.infer_output(dml.TensorDesc(T.FLOAT32, [1, 1, 4, 4, 4]),
                              dml.TensorDesc(T.FLOAT32, [1, 1, 3, 3, 3]), 2),
     "MaxPoolingGrad: DimensionCount 5 is not supported"),
    (lambda: MAX.infer_output(dml.TensorDesc(T.FLOAT32, [1, 1, 4, 4]), dml.TensorDesc(T.FLOAT32, [1, 1, 1, 1]),
                              (5, 1)),
     r"MaxPoolingGrad: window_size\[0\] = 5 .* larger than the padded input: output_gradient_tensor.sizes\[2\]"),
    (lambda: MAX.infer_output(dml.TensorDesc(T.FLOAT32, [1, 1, 4, 4]), dml.TensorDesc(T.FLOAT32, [1, 1, 4, 4]), 2,
                              strides=(0, 1)),
     r"MaxPoolingGrad: strides\[0\] = 0 must be in \[1,"),
    (lambda: MAX.infer_output(dml.TensorDesc(T.FLOAT32, [1, 1, 4, 4]), dml.TensorDesc(T.FLOAT32, [1, 1, 3, 3]), 2,
                              dilations=(1, 0)),
     r"MaxPoolingGrad: dilations\[1\] = 0"),
    (lambda: AVERAGE.infer_output(dml.TensorDesc(T.FLOAT32, [1, 1, 3, 3]), (1, 1, 4, 4), 2, start_padding=3,
                                  end_padding=3, strides=3),
     "AveragePoolingGrad: the window of output position 0 on spatial axis 0 covers padding only"),
    (lambda: AVERAGE.infer_output(dml.TensorDesc(T.UINT32, [1, 1, 3, 3]), (1, 1, 4, 4), 2),
     "AveragePoolingGrad: .*data_type UINT32 is not supported"),
    (lambda: AVERAGE.infer_output(dml.TensorDesc(T.FLOAT32, [1, 1, 3, 3]), (1, 1, 4, 4), (2, 2, 2)),
     r"AveragePoolingGrad: window_size has 3 entries \[2, 2, 2\]; dimension_count is 2"),
])
def test_bad_descriptions_name_the_rule(device, call, message):
    """Each rule's InvalidArgumentError, when the operator is created (before any GPU work)."""
    with pytest.raises(dml.InvalidArgumentError, match=message):
        device.create_operator(call())


def test_bad_desc_fields_and_shapes():
    with pytest.raises(dml.InvalidArgumentError, match="AveragePoolingGrad: include_padding"):
        AVERAGE.infer_output(dml.TensorDesc(T.FLOAT32, [1, 1, 3, 3]), (1, 1, 4, 4), 2, include_padding="yes")
    x, dy = dml.TensorDesc(T.FLOAT32, [1, 1, 4, 4]), dml.TensorDesc(T.FLOAT32, [1, 1, 3, 3])
    desc = MAX.infer_output(x, dy, 2)
    bad = type(desc)(**{**desc.__dict__, "output_gradient_tensor": dml.TensorDesc(T.FLOAT32, [1, 1, 4, 5])})
    with pytest.raises(dml.InvalidArgumentError, match=r"MaxPoolingGrad: output_gradient_tensor.sizes \[1, 1, 4, 5\] "
                                                       r"must equal input_tensor.sizes \[1, 1, 4, 4\]"):
        dml.Device().create_operator(bad)
    with pytest.raises(dml.InvalidArgumentError, match="max_pooling_grad"):
        dml.max_pooling_grad(np.zeros((1, 1, 4, 4), np.float32), np.zeros((1, 1, 3, 3), np.float32), "2")


def test_shader_command(capsys):
    assert cli.main(["shader", "max_pooling_grad", "--shape", "1,8,16,16", "--window", "3,3", "--strides", "2,2",
                     "--pads", "1", "--caps", "gl-cpu"]) == 0
    out = capsys.readouterr().out
    assert out.count("fn kernel(gid: u32)") == 2 and "store_index" in out and "argmax_at" in out
    assert cli.main(["shader", "average_pooling_grad", "--shape", "1,8,16,16,16", "--window", "2,2,2", "--strides",
                     "2,2,2", "--include-padding", "1", "--caps", "gpu"]) == 0
    assert "uni.window_count" in capsys.readouterr().out
