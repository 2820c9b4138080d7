"""DML_CONVOLUTION_INTEGER's own edge cases (gpudml/ops/convolution_integer.py; the conformance
kit sweeps its types, ranks, layouts and strategies): the sums against a loop over every
product (not the reference's formulation), per-channel filter zero points, padding holding
the input's zero point, int32 wrapping, 1-D at FL 4.0 only, both adapter classes (the CPU-class
`runs` and the GPU-class `elements`), the loop budget and bad input before any GPU work."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import gpudml as dml
import gpudml.reference  # noqa: F401  (dml.reference)

CLASSES = ("cpu", "gpu")


@pytest.fixture(scope="module", params=CLASSES)
def classed(request, adapter):
    """A device of each adapter class on the adapter (the class picks the strategy)."""
    return dml.Device(adapter=adapter, adapter_class=request.param)


def loops(x, xz, w, wz, strides, dilations, pads, groups):
    """The convolution as one loop per output element and product (int64), padding = xz."""
    n, c, h, wd = x.shape
    m, cg, kh, kw = w.shape
    xp = np.full((n, c, h + pads[0] + pads[2], wd + pads[1] + pads[3]), int(xz), np.int64)
    xp[:, :, pads[0]:pads[0] + h, pads[1]:pads[1] + wd] = x
    oh = (h + pads[0] + pads[2] - (kh - 1) * dilations[0] - 1) // strides[0] + 1
    ow = (wd + pads[1] + pads[3] - (kw - 1) * dilations[1] - 1) // strides[1] + 1
    y = np.zeros((n, m, oh, ow), np.int64)
    wzs = np.broadcast_to(np.asarray(wz, np.int64).reshape(-1), (m,))
    for b, o, i, j in itertools.product(range(n), range(m), range(oh), range(ow)):
        g = o // (m // groups)
        total = 0
        for ci, a, e in itertools.product(range(cg), range(kh), range(kw)):
            v = xp[b, g * cg + ci, i * strides[0] + a * dilations[0], j * strides[1] + e * dilations[1]]
            total += (int(v) - int(xz)) * (int(w[o, ci, a, e]) - int(wzs[o]))
        y[b, o, i, j] = total
    return y


@pytest.mark.parametrize("xt, wt", [(np.uint8, np.int8), (np.int8, np.uint8), (np.uint8, np.uint8)])
def test_against_every_product(classed, xt, wt):
    """Groups, strides, dilations, uneven padding (holding x's zero point), per-channel filter
    zero points: every output equals the loop over its products, bit for bit."""
    rng = np.random.default_rng(3)
    ii, wi = np.iinfo(xt), np.iinfo(wt)
    x = rng.integers(ii.min, ii.max + 1, (2, 4, 6, 7)).astype(xt)
    w = rng.integers(wi.min, wi.max + 1, (6, 2, 3, 2)).astype(wt)
    xz, wz = xt(ii.min + 17), rng.integers(wi.min, wi.max + 1, 6).astype(wt)
    y = dml.convolution_integer(x, xz, filter=w, filter_zero_point=wz, strides=[2, 1], dilations=[1, 2],
                                start_padding=[2, 1], end_padding=[0, 3], group_count=2, device=classed)
    want = loops(x, xz, w, wz, (2, 1), (1, 2), (2, 1, 0, 3), 2)
    assert y.dtype == np.int32
    np.testing.assert_array_equal(y, want)


@pytest.mark.parametrize("adapter_class, xt, wt", [("cpu", np.uint8, np.int8), ("gpu", np.int8, np.uint8)])
def test_registers_read_filter_words_and_share_the_window(adapter, adapter_class, xt, wt):
    """One group, an 8-bit filter whose channel and window axes merge into one stride of 1,
    each output channel's on a word: `registers` reads 4 k of a column as one word
    (lib/convolution's b_block) and, where the adapter has subgroups, each window element
    once a subgroup (subgroupBroadcast, 16 x 8 tiles: 64 output positions, 64 channels, so a
    subgroup's 8 tiles along a tile row share their window: kernels/gemm shares only there):
    every output the loop over its products, bit for bit, on both adapter classes."""
    from gpudml.ops import convolution_integer as ci

    device = dml.Device(adapter=adapter, adapter_class=adapter_class)
    rng = np.random.default_rng(9)
    ii, wi = np.iinfo(xt), np.iinfo(wt)
    x = rng.integers(ii.min, ii.max + 1, (1, 4, 8, 8)).astype(xt)
    w = rng.integers(wi.min, wi.max + 1, (64, 4, 3, 3)).astype(wt)
    xz, wz = xt(ii.min + 29), rng.integers(wi.min, wi.max + 1, 64).astype(wt)
    dtype = {np.uint8: dml.DataType.UINT8, np.int8: dml.DataType.INT8}
    desc = ci.infer_output(dml.TensorDesc(dtype[xt], list(x.shape)), dml.TensorDesc(dtype[xt], [1]),
                           dml.TensorDesc(dtype[wt], list(w.shape)), dml.TensorDesc(dtype[wt], [64]),
                           start_padding=[1, 1], end_padding=[1, 1])
    compiled = device.compile_operator(device.create_operator(desc), "registers")
    source = compiled.program.kernels[-1].source
    assert "b_block(cb0, k)" in source
    assert ("subgroupBroadcast" in source) == device.caps.has("subgroup")
    (got,) = compiled.execute([x, np.array([xz]), w, wz])
    np.testing.assert_array_equal(got, loops(x, xz, w, wz, (1, 1), (1, 1), (1, 1, 1, 1), 1))


def test_zero_points_left_out_and_one_per_tensor(classed):
    rng = np.random.default_rng(4)
    x = rng.integers(0, 256, (1, 3, 5, 5)).astype(np.uint8)
    w = rng.integers(-128, 128, (2, 3, 3, 3)).astype(np.int8)
    np.testing.assert_array_equal(dml.convolution_integer(x, filter=w, device=classed),
                                  loops(x, 0, w, 0, (1, 1), (1, 1), (0, 0, 0, 0), 1))
    np.testing.assert_array_equal(
        dml.convolution_integer(x, filter=w, filter_zero_point=np.int8(-3), start_padding=[1, 1], end_padding=[1, 1],
                                device=classed),
        loops(x, 0, w, -3, (1, 1), (1, 1), (1, 1, 1, 1), 1))


def test_longest_reduction_in_the_budget_is_exact(classed):
    """32,000 products of (255 - 0) (-128 - 127) = -65,025: -2,080,800,000, near int32's end,
    exact (8-bit products cannot pass int32 within one invocation's loop budget of positions:
    QUANTIZED_LINEAR_CONVOLUTION's bias can, tests/test_quantized_linear_convolution.py)."""
    k = 32000
    x = np.full((1, k, 1, 2), 255, np.uint8)
    w = np.full((1, k, 1, 1), -128, np.int8)
    y = dml.convolution_integer(x, filter=w, filter_zero_point=np.int8(127), device=classed)
    assert y.ravel().tolist() == [k * 255 * -255] * 2


def test_one_spatial_axis_from_fl_4_0(adapter):
    rng = np.random.default_rng(5)
    x = rng.integers(-128, 128, (2, 3, 9)).astype(np.int8)
    w = rng.integers(-128, 128, (4, 3, 3)).astype(np.int8)
    y = dml.convolution_integer(x, np.int8(5), filter=w, strides=[2], start_padding=[1], end_padding=[1],
                                device=dml.Device("FL_4_0", adapter=adapter))
    want = loops(x[:, :, None], 5, w[:, :, None], 0, (1, 2), (1, 1), (0, 1, 0, 1), 1)[:, :, 0]
    np.testing.assert_array_equal(y, want)
    with pytest.raises(dml.InvalidArgumentError, match="ConvolutionInteger: DimensionCount 3 is not supported at "
                                                       "FL_2_1.*FL_4_0"):
        dml.convolution_integer(x, filter=w, device=dml.Device("FL_2_1", adapter=adapter))


@pytest.mark.any_class
@pytest.mark.parametrize("kwargs, message", [
    ({"filter_zero_point": np.zeros(3, np.int8)},
     r"ConvolutionInteger: filter_zero_point_tensor.sizes \[1, 3, 1, 1\] must hold one element \(per tensor\) or "
     r"OutputChannelCount = 2"),
    ({"filter_zero_point": np.zeros(2, np.uint8)},
     "ConvolutionInteger: filter_zero_point_tensor.data_type UINT8 must equal filter_tensor.data_type INT8"),
    ({"x_zero_point": np.int8(1)},
     "ConvolutionInteger: input_zero_point_tensor.data_type INT8 must equal input_tensor.data_type UINT8"),
    ({"x_zero_point": np.zeros(3, np.uint8)},
     r"ConvolutionInteger: input_zero_point_tensor.sizes \[3\] must hold one element"),
    ({"group_count": 2}, r"ConvolutionInteger: input_tensor.sizes\[1\] = 3 \(InputChannelCount\) must be a "
                         r"multiple of group_count = 2"),
])
def test_bad_input_named_before_gpu_work(adapter, kwargs, message):
    device = dml.Device(adapter=adapter)
    x = np.zeros((1, 3, 4, 4), np.uint8)
    w = np.zeros((2, 3, 2, 2), np.int8)
    before = device._ctx.pool.allocations
    with pytest.raises(dml.InvalidArgumentError, match=message):
        dml.convolution_integer(x, filter=w, device=device, **{"x_zero_point": None, **kwargs})
    assert device._ctx.pool.allocations == before


@pytest.mark.any_class
def test_groups_past_the_loop_budget_are_unsupported(adapter):
    """Groups run on the direct kernel, one output's reduction in one invocation: past the loop
    budget an UnsupportedError naming the sizes (one group cuts K on the GEMM path instead)."""
    x = np.zeros((1, 8000, 3, 3), np.uint8)
    w = np.zeros((2, 4000, 3, 3), np.uint8)
    with pytest.raises(dml.UnsupportedError, match="ConvolutionInteger: an output's reduction of C_in / group_count "
                                                   "x prod\\(window\\) = 4000 x 9 positions passes"):
        dml.convolution_integer(x, filter=w, group_count=2, device=dml.Device(adapter=adapter))


def test_one_group_past_the_loop_budget_wraps_modulo_2_32(classed):
    """One group past the loop budget: the GEMM path's chunks of K, summed in i32. 36,000
    products of (255 - 0) (-128 - 127) = -65,025 make -2,340,900,000, past int32: the output is
    that sum wrapped (two's complement), as int32 arithmetic."""
    k = 36000
    x = np.full((1, k, 1, 2), 255, np.uint8)
    w = np.full((1, k, 1, 1), -128, np.int8)
    y = dml.convolution_integer(x, filter=w, filter_zero_point=np.int8(127), device=classed)
    exact = k * 255 * -255
    assert exact < -(2**31)
    assert y.ravel().tolist() == [exact + 2**32] * 2
