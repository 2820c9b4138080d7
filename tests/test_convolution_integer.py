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
from gpudml.ops import convolution_integer as conv_int

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
    device = dml.Device(adapter=adapter, adapter_class=adapter_class)
    rng = np.random.default_rng(9)
    ii, wi = np.iinfo(xt), np.iinfo(wt)
    x = rng.integers(ii.min, ii.max + 1, (1, 4, 8, 8)).astype(xt)
    w = rng.integers(wi.min, wi.max + 1, (64, 4, 3, 3)).astype(wt)
    xz, wz = xt(ii.min + 29), rng.integers(wi.min, wi.max + 1, 64).astype(wt)
    dtype = {np.uint8: dml.DataType.UINT8, np.int8: dml.DataType.INT8}
    desc = conv_int.infer_output(dml.TensorDesc(dtype[xt], list(x.shape)), dml.TensorDesc(dtype[xt], [1]),
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


# ------------------------------------------------------------------------------ direct
T = dml.DataType
DTYPES = {np.uint8: T.UINT8, np.int8: T.INT8}


def _ints(rng, dtype, shape):
    info = np.iinfo(dtype)
    return rng.integers(info.min, info.max + 1, shape).astype(dtype)


def _every_strategy(device, desc, inputs, strategies=None):
    """{strategy: output} of every strategy the planner offers `desc` (or `strategies`), each
    forced; `direct` also with one output per invocation (run 1)."""
    operator = device.create_operator(desc)
    offered = device.compile_operator(operator).strategies
    got = {}
    for strategy in strategies or offered:
        (got[strategy],) = device.compile_operator(operator, strategy).execute(inputs)
    if "direct" in offered:
        (got["direct-run-1"],) = device.compile_operator(operator, "direct", options={"run": 1}).execute(inputs)
    return offered, got


def test_direct_strategy_order():
    """`direct` first where the float convolution takes it (at most DIRECT_CHANNELS input and
    output channels per group: depthwise and the like; one group of few channels too) on both
    adapter classes, for both integer operators; not past DIRECT_CHANNELS output channels per
    group."""
    from gpudml import caps as caps_module
    from gpudml.ops import quantized_linear_convolution as qlc

    cpu, gpu = caps_module.profile("vulkan-cpu"), caps_module.profile("gpu")
    u8, i8, f32 = (lambda *s, t=t: dml.TensorDesc(t, list(s)) for t in (T.UINT8, T.INT8, T.FLOAT32))
    depthwise = conv_int.infer_output(u8(1, 32, 8, 8), None, i8(32, 1, 3, 3), None, group_count=32)
    one_group = conv_int.infer_output(u8(1, 3, 8, 8), None, i8(2, 3, 3, 3), None)
    wide = conv_int.infer_output(u8(1, 4, 8, 8), None, i8(32, 1, 3, 3), None, group_count=4)  # 8 per group
    for caps in (cpu, gpu):
        assert conv_int.SPEC.planner.strategies_for(depthwise, caps)[:1] == ("direct",)
        assert set(conv_int.SPEC.planner.strategies_for(depthwise, caps)) == {"direct", "runs", "elements"}
        assert conv_int.SPEC.planner.strategies_for(one_group, caps)[0] == "direct"
        assert {"registers", "workgroup"} <= set(conv_int.SPEC.planner.strategies_for(one_group, caps))
        assert "direct" not in conv_int.SPEC.planner.strategies_for(wide, caps)
    quantized = qlc.infer_output(u8(1, 16, 8, 8), f32(1), None, i8(16, 1, 3, 3), f32(16), None, None, f32(1), u8(1),
                                 group_count=16)
    assert qlc.SPEC.planner.strategies_for(quantized, cpu)[0] == qlc.SPEC.planner.strategies_for(quantized, gpu)[0] \
        == "direct"


DIRECT_SHAPES = {  # name: (x shape, filter shape, geometry)
    "depthwise": ((2, 6, 7, 9), (6, 1, 3, 3), {"strides": [2, 1], "dilations": [1, 2], "start_padding": [1, 2],
                                               "end_padding": [1, 1], "group_count": 6}),
    "2-per-group": ((1, 8, 6, 11), (12, 2, 3, 2), {"strides": [1, 2], "start_padding": [2, 0],
                                                   "end_padding": [0, 1], "group_count": 4}),
    "one-group": ((1, 3, 5, 13), (2, 3, 2, 3), {"dilations": [2, 1], "start_padding": [1, 1],
                                                "end_padding": [1, 1]}),
}


@pytest.mark.parametrize("name, xt, wt", [("depthwise", np.uint8, np.int8), ("2-per-group", np.int8, np.uint8),
                                          ("one-group", np.int8, np.int8), ("depthwise", np.uint8, np.uint8)])
def test_direct_bit_identical_to_every_strategy(classed, name, xt, wt):
    """Depthwise (one input and output channel per group), two per group and one group of few
    channels, the four type mixes, per-channel filter zero points, strides, dilations and
    uneven padding: `direct` is the default on both adapter classes and its output (runs and
    run 1) is the loop over every product's, bit for bit the other strategies' (`runs`,
    `elements`, and the GEMM's on one group)."""
    xs, ws, geometry = DIRECT_SHAPES[name]
    rng = np.random.default_rng(sorted(DIRECT_SHAPES).index(name))
    x, w = _ints(rng, xt, xs), _ints(rng, wt, ws)
    xz, wz = np.array([np.iinfo(xt).min + 77], xt), _ints(rng, wt, ws[0])
    desc = conv_int.infer_output(dml.TensorDesc(DTYPES[xt], list(xs)), dml.TensorDesc(DTYPES[xt], [1]),
                           dml.TensorDesc(DTYPES[wt], list(ws)), dml.TensorDesc(DTYPES[wt], [ws[0]]), **geometry)
    offered, got = _every_strategy(classed, desc, [x, xz, w, wz])
    assert offered[0] == "direct" and len(got) >= 4
    pads = (*geometry.get("start_padding", (0, 0)), *geometry.get("end_padding", (0, 0)))
    want = loops(x, xz[0], w, wz, geometry.get("strides", (1, 1)), geometry.get("dilations", (1, 1)),
                 (pads[0], pads[1], pads[2], pads[3]), geometry.get("group_count", 1))
    for strategy, y in got.items():
        np.testing.assert_array_equal(y, want, err_msg=strategy)


@pytest.mark.parametrize("xt, wt, out", [(np.uint8, np.int8, np.uint8), (np.int8, np.int8, np.int8),
                                         (np.int8, np.uint8, np.uint8), (np.uint8, np.uint8, np.int8)])
def test_quantized_direct_bit_identical(classed, xt, wt, out):
    """QUANTIZED_LINEAR_CONVOLUTION depthwise (MobileNet's 3x3, stride 2, padding) with
    per-channel filter scales and zero points and an INT32 bias, and one group of 3 channels
    (the GEMM's requantizing store beside it): `direct` is the default, and it, `runs`,
    `elements` and the GEMM store the reference's output bit for bit (the one requantization:
    lib/quantized's)."""
    from gpudml.ops import quantized_linear_convolution as qlc

    rng = np.random.default_rng(21)
    for xs, ws, geometry in (((1, 5, 9, 10), (5, 1, 3, 3), {"strides": [2, 2], "start_padding": [1, 1],
                                                             "end_padding": [1, 1], "group_count": 5}),
                             ((1, 3, 6, 7), (3, 3, 3, 3), {"start_padding": [1, 0], "end_padding": [0, 1]})):
        c = ws[0]
        x, w = _ints(rng, xt, xs), _ints(rng, wt, ws)
        xz, wz = np.array([np.iinfo(xt).min + 90], xt), _ints(rng, wt, c) // 4
        xsc, wsc = np.array([0.03], np.float32), rng.uniform(0.002, 0.02, c).astype(np.float32)
        b, ysc, yz = rng.integers(-4000, 4000, c).astype(np.int32), np.array([0.2], np.float32), \
            np.array([np.iinfo(out).min + 110], out)
        f32 = lambda *s: dml.TensorDesc(T.FLOAT32, list(s))  # noqa: E731
        desc = qlc.infer_output(dml.TensorDesc(DTYPES[xt], list(xs)), f32(1), dml.TensorDesc(DTYPES[xt], [1]),
                                dml.TensorDesc(DTYPES[wt], list(ws)), f32(c), dml.TensorDesc(DTYPES[wt], [c]),
                                dml.TensorDesc(T.INT32, [c]), f32(1), dml.TensorDesc(DTYPES[out], [1]), **geometry)
        one_group = geometry.get("group_count", 1) == 1  # (GEMM's `registers` beside it: GL compiles slowly)
        offered, got = _every_strategy(classed, desc, [x, xsc, xz, w, wsc, wz, b, ysc, yz],
                                       ("direct", "registers") if one_group else None)
        assert offered[0] == "direct" and ("registers" in offered) == one_group
        want = dml.reference.quantized_linear_convolution(
            x, xsc[0], xz[0], filter=w, filter_scale=wsc, filter_zero_point=wz, bias=b, output_scale=ysc[0],
            output_zero_point=yz[0], **geometry)
        assert len(np.unique(want)) > 20  # (not saturated)
        for strategy, y in got.items():
            np.testing.assert_array_equal(y, want, err_msg=strategy)


def test_direct_window_at_the_loop_budget(adapter):
    """One group of 4 channels, a 123 x 64 window: `direct`'s loops (4 x 123 x (64 + 2) + 70 =
    32,542) just within the loop budget (2^15), run as `direct` (one output per invocation) on
    both adapter classes, exact (the 31,488 products' sum wraps to int32 as the reference's);
    a 124 x 64 window (32,806) is not offered `direct` (the GEMM cuts K)."""
    rng = np.random.default_rng(5)
    shape = (1, 4, 123, 64)
    x, w = _ints(rng, np.uint8, shape), _ints(rng, np.int8, shape)
    xz, wz = np.array([3], np.uint8), np.array([-100], np.int8)
    desc = conv_int.infer_output(dml.TensorDesc(T.UINT8, list(shape)), dml.TensorDesc(T.UINT8, [1]),
                           dml.TensorDesc(T.INT8, list(shape)), dml.TensorDesc(T.INT8, [1]))
    want = np.array(((x.astype(np.int64) - 3) * (w.astype(np.int64) + 100)).sum()).astype(np.int32)
    for adapter_class in CLASSES:
        device = dml.Device(adapter=adapter, adapter_class=adapter_class)
        compiled = device.compile_operator(device.create_operator(desc))
        assert compiled.strategy == "direct"
        (y,) = compiled.execute([x, xz, w, wz])
        assert y.ravel().tolist() == [int(want)]
    past = conv_int.infer_output(dml.TensorDesc(T.UINT8, [1, 4, 124, 64]), None,
                                 dml.TensorDesc(T.INT8, [1, 4, 124, 64]), None)
    assert "direct" not in device.compile_operator(device.create_operator(past)).strategies


def test_direct_takes_a_graphs_epilogue(device):
    """A depthwise CONVOLUTION_INTEGER and a consumer (an INT32 max): one `direct` kernel
    storing through the epilogue, the unfused graph's result."""
    g = dml.Graph(device)
    x = g.input([1, 4, 6, 9], T.UINT8, name="x")
    w = g.input([4, 1, 3, 3], T.INT8, name="w")
    y = g.input([1, 4, 6, 9], T.INT32, name="y")
    out = dml.max(dml.convolution_integer(x, filter=w, start_padding=[1, 1], end_padding=[1, 1], group_count=4), y)
    rng = np.random.default_rng(8)
    feed = {"x": _ints(rng, np.uint8, (1, 4, 6, 9)), "w": _ints(rng, np.int8, (4, 1, 3, 3)),
            "y": rng.integers(-1000, 1000, (1, 4, 6, 9)).astype(np.int32)}
    fused, unfused = g.compile([out]), g.compile([out], fuse=False)
    (step,) = fused.steps
    assert step.compiled.strategy == "direct" and fused.dispatch_count == 1
    (got,), (want,) = fused(feed), unfused(feed)
    np.testing.assert_array_equal(got, want)
