"""The pooling operators (gpudml/ops/pooling.py; kernels/pooling.py): what the conformance kit
(tests/test_conformance.py) does not cover: 2-D and 3-D windows with strides, dilations and
asymmetric padding under every strategy, include_padding, MAX's indices (flat, row-major,
the first of ties, NaN first), integer types and float16, strided inputs, 1-D pooling
through a height of 1, global pooling (a window past the loop budget: the `chunks`
strategy, on llvmpipe too), each validation rule's message, the strategies' order by
adapter class, `gpudml shader max_pooling2`."""

from __future__ import annotations

import numpy as np
import pytest

import gpudml as dml
from gpudml import caps as caps_module
from gpudml import cli
from gpudml.kernels import base
from gpudml.kernels import pooling as family
from gpudml.ops import pooling as pooling_op
from gpudml.ops import spec_named
from gpudml.testing import assert_within

T = dml.DataType
STRATEGIES = family.STRATEGIES


def desc_of(name, x, window, **kwargs):
    return spec_named(name).infer_output(dml.TensorDesc(T.from_numpy(x.dtype), x.shape), window, **kwargs)


def check(device, name, x, window, strategies=STRATEGIES, **kwargs):
    """Run `name` on x under each strategy that can run it: the reference's outputs (within the
    documented precision; MAX bit for bit)."""
    spec = spec_named(name)
    desc = desc_of(name, x, window, **kwargs)
    want = spec.reference(x, window, **kwargs)
    wants = list(want) if isinstance(want, tuple) else [want]
    tolerance = None if spec.tolerance is None else spec.tolerance(wants[0], [x], spec.arguments(desc))
    op = device.create_operator(desc)
    eligible = spec.planner.strategies_for(desc, device.caps)
    ran = []
    for strategy in strategies:
        if strategy not in eligible:
            continue
        got = device.compile_operator(op, strategy).execute([x])
        for g, w in zip(got, wants, strict=True):
            assert_within(g, w, tolerance if g is got[0] else None, f"{name} {strategy} {kwargs}")
        ran.append(strategy)
    assert ran
    return wants


@pytest.mark.parametrize(("shape", "window", "kwargs"), [
    ((1, 2, 9, 8), (3, 2), {"strides": (2, 1), "start_padding": (1, 0), "end_padding": (0, 1)}),
    ((2, 1, 7, 7), (2, 3), {"strides": (3, 2), "dilations": (2, 2), "start_padding": (2, 1), "end_padding": (1, 2)}),
    ((1, 2, 4, 5, 6), (2, 3, 2), {"strides": (1, 2, 3), "dilations": (1, 2, 1), "start_padding": (1, 0, 1)}),
])
@pytest.mark.parametrize("name", ["max_pooling", "average_pooling", "lp_pooling"])
def test_windows_under_every_strategy(device, name, shape, window, kwargs):
    """2-D and 3-D: strides, dilations, asymmetric paddings; every strategy the reference's."""
    rng = np.random.default_rng(len(shape))
    x = rng.uniform(-1, 1, shape).astype(np.float32)
    extra = {"max_pooling": {"output_indices": True}, "average_pooling": {"include_padding": True},
             "lp_pooling": {"p": 3}}[name]
    check(device, name, x, window, **kwargs, **extra)


def test_include_padding_counts_the_padded_positions(device):
    """A 2 x 2 window over a 1-padded 2 x 2 input of ones: 4 / 4 inside, 1 / 4 with
    include_padding at the corner, 1 / 1 without."""
    x = np.ones((1, 1, 2, 2), np.float32)
    args = {"strides": 1, "start_padding": 1, "end_padding": 1}
    without = dml.average_pooling(x, 2, device=device, **args)
    with_padding = dml.average_pooling(x, 2, include_padding=True, device=device, **args)
    assert without.shape == (1, 1, 3, 3) and np.all(without == 1.0)
    assert with_padding[0, 0, 0, 0] == 0.25 and with_padding[0, 0, 1, 1] == 1.0 and with_padding[0, 0, 0, 1] == 0.5


def test_indices_are_flat_row_major_first_of_ties_nan_first(device):
    """The flat index into the whole input (batch and channel included), row-major; of equal
    maxima the first in window order; a NaN wins over every number (the first NaN)."""
    x = np.zeros((2, 2, 3, 4), np.float32)
    x[1, 1, 2, 3] = 5.0
    x[0, 1, 0, 2] = np.nan
    x[0, 1, 1, 1] = np.nan
    y, i = dml.max_pooling(x, (3, 4), output_indices=True, device=device)
    assert i.dtype == np.uint32 and i.shape == (2, 2, 1, 1)
    assert i[0, 0, 0, 0] == 0  # all zeros: the first
    assert i[0, 1, 0, 0] == 12 + 2 and np.isnan(y[0, 1, 0, 0])
    assert i[1, 1, 0, 0] == 47 and y[1, 1, 0, 0] == 5.0
    _, wide = dml.max_pooling(x, (3, 4), output_indices=T.UINT64, device=device)
    assert wide.dtype == np.uint64 and np.array_equal(wide, i)


@pytest.mark.parametrize("pad", [0, 1, 2, 3])
def test_unrolled_runs_in_blocks(device, pad):
    """`runs` unrolls the window's innermost axis and reads 32-bit rows in 16-byte blocks, the
    run's first column at phase -pad (mod 4); output rows of 8 to 11 (partial blocks): ties
    (-0 and +0 too), NaNs (payloads, signs), infinities, indices, bit for bit; the mean too."""
    rng = np.random.default_rng(pad)
    values = np.array([0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, np.nan, -np.nan], np.float32)
    values[-1:] = np.uint32(0xFFC00001).view(np.float32)
    x = rng.choice(values, (2, 3, 6, 20))
    check(device, "max_pooling", x, (2, 5), strides=(1, 2), start_padding=(1, pad), output_indices=True)
    check(device, "average_pooling", rng.uniform(-1, 1, x.shape).astype(np.float32), (3, 3),
          start_padding=(1, pad % 3), end_padding=(1, 1))


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64, np.uint64,
                                   np.float16])
def test_max_of_every_type(device, dtype):
    """The page's integer types and float16, extremes included: the element itself, bit for bit."""
    rng = np.random.default_rng(7)
    x = rng.integers(0, 256, size=2 * 3 * 5 * 5 * np.dtype(dtype).itemsize, dtype=np.uint8).view(dtype)
    check(device, "max_pooling", x.reshape(2, 3, 5, 5), (2, 3), strides=(1, 2), start_padding=(1, 1),
          output_indices=True)


def test_float16_accumulates_in_float32(device):
    """4096 float16 values of 1 and one of 2048: a float16 running sum would stall at 2048."""
    x = np.ones((1, 1, 64, 64), np.float16)
    x[0, 0, 0, 0] = 2048
    got = dml.average_pooling(x, None, device=device)
    assert got[0, 0, 0, 0] == np.float16((2048 + 4095) / 4096)
    assert dml.lp_pooling(x, None, p=1, device=device)[0, 0, 0, 0] == np.float16(2048 + 4095)


def test_strided_input_and_output(device):
    """A transposed input (strides, no copy) and a strided output: the packed result."""
    rng = np.random.default_rng(3)
    base_x = rng.uniform(-1, 1, (1, 2, 6, 5)).astype(np.float32)
    x = dml.TensorDesc(T.FLOAT32, [1, 2, 5, 6], [60, 30, 1, 5])
    desc = spec_named("max_pooling").infer_output(x, (2, 2), strides=2)
    out = desc.output_tensor
    strided = dml.TensorDesc(T.FLOAT32, out.sizes, [40, 20, 4, 1])
    desc = type(desc)(**{**desc.__dict__, "output_tensor": strided})
    compiled = device.compile_operator(device.create_operator(desc))
    (got,) = compiled.execute([base_x.reshape(-1)])
    want = dml.reference.max_pooling(np.swapaxes(base_x, 2, 3), (2, 2), strides=2)
    assert np.array_equal(got, want)


def test_global_pooling_past_the_loop_budget(device):
    """Global pooling over 256 x 256 (65,536 window positions: more than one invocation may
    loop on llvmpipe) goes through chunks; max, its index, the mean and the L2 norm."""
    rng = np.random.default_rng(5)
    x = rng.uniform(-1, 1, (1, 2, 256, 256)).astype(np.float32)
    x[0, 1, 200, 17] = 9.0
    desc = desc_of("max_pooling", x, None)
    assert spec_named("max_pooling").planner.strategies_for(desc, device.caps) == ("chunks",)
    y, i = dml.global_max_pooling(x, output_indices=True, device=device)
    assert y[0, 1, 0, 0] == 9.0 and i[0, 1, 0, 0] == 65536 + 200 * 256 + 17
    assert y[0, 0, 0, 0] == x[0, 0].max()
    check(device, "average_pooling", x, None)
    check(device, "lp_pooling", x[:, :1], None)


def test_one_dimensional_pooling_is_a_height_of_one(device):
    x = np.arange(10, dtype=np.float32).reshape(1, 1, 1, 10)
    got = dml.max_pooling(x, (1, 3), strides=(1, 2), device=device)
    assert np.array_equal(got.reshape(-1), [2, 4, 6, 8])


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"window_size": (0, 1)}, "window_size[0] = 0 must be in [1,"),
    ({"window_size": (2, 2), "strides": (1, 0)}, "strides[1] = 0 must be in [1,"),
    ({"window_size": (2, 2), "dilations": (0, 1)}, "dilations[0] = 0 must be in [1,"),
    ({"window_size": (6, 2)}, "window_size[0] = 6 (dilated: (window_size - 1) * dilations + 1 = 6) is larger than "
                              "the padded input: input_tensor.sizes[2] + start_padding + end_padding = 4 + 0 + 0 = 4"),
    ({"window_size": (2, 2), "dilations": (4, 1)},
     "window_size[0] = 2 (dilated: (window_size - 1) * dilations + 1 = 5)"),
    ({"window_size": (2, 2), "end_padding": (0, 2)}, "the window of output position 5 on spatial axis 1 covers "
                                                     "padding only"),
    ({"window_size": (1, 2, 3)}, "window_size has 3 entries [1, 2, 3]; dimension_count is 2"),
])
def test_bad_descriptions_name_the_rule(device, kwargs, message):
    x = dml.TensorDesc(T.FLOAT32, [1, 2, 4, 5])
    desc = spec_named("max_pooling").infer_output(x, **kwargs)
    with pytest.raises(dml.InvalidArgumentError, match=r"^MaxPooling2: ") as info:
        device.create_operator(desc)
    assert message in str(info.value)


def test_bad_fields_and_arguments(device):
    x = dml.TensorDesc(T.FLOAT32, [1, 2, 4, 5])
    desc = spec_named("lp_pooling").infer_output(x, 2, p=0)
    with pytest.raises(dml.InvalidArgumentError, match=r"LpPooling1: p = 0 must be in \[1,"):
        device.create_operator(desc)
    good = spec_named("max_pooling").infer_output(x, 2)
    with pytest.raises(dml.InvalidArgumentError, match="output_tensor.sizes"):
        device.create_operator(type(good)(**{**good.__dict__,
                                             "output_tensor": dml.TensorDesc(T.FLOAT32, [1, 2, 3, 3])}))
    with pytest.raises(dml.InvalidArgumentError, match="dimension_count = 3 must be"):
        device.create_operator(type(good)(**{**good.__dict__, "dimension_count": 3}))
    with pytest.raises(dml.InvalidArgumentError, match="include_padding must be True or False"):
        dml.average_pooling(np.ones((1, 1, 2, 2), np.float32), 2, include_padding="yes", device=device)
    with pytest.raises(dml.InvalidArgumentError, match="output_indices must be False, True"):
        dml.max_pooling(np.ones((1, 1, 2, 2), np.float32), 2, output_indices="float", device=device)
    with pytest.raises(dml.InvalidArgumentError, match="DimensionCount 3 is not supported"):
        dml.max_pooling(np.ones((1, 1, 4), np.float32), 2, device=device)
    with pytest.raises(dml.InvalidArgumentError, match="output_indices_tensor.data_type UINT64 is not supported at "
                                                       "FL_4_1"):
        dml.Device(feature_level="FL_4_1").create_operator(spec_named("max_pooling").infer_output(
            x, 2, output_indices=T.UINT64))


def test_strategy_order_and_options():
    """`runs` first on software adapters, `elements` first on GPUs, `chunks` last; runs within
    the loop budget; chunks at least what the budget needs."""
    x = dml.TensorDesc(T.FLOAT32, [1, 4, 32, 32])
    desc = spec_named("average_pooling").infer_output(x, 3)
    planner = spec_named("average_pooling").planner
    assert planner.strategies_for(desc, caps_module.PROFILES["vulkan-cpu"]) == ("runs", "elements", "chunks")
    assert planner.strategies_for(desc, caps_module.PROFILES["gpu"]) == ("elements", "runs", "chunks")
    with pytest.raises(dml.InvalidArgumentError, match="option run = 0"):
        planner.plan(desc, None, "runs", run=0)
    p = pooling_op.problem(spec_named("average_pooling").infer_output(dml.TensorDesc(T.FLOAT32, [1, 1, 512, 512])))
    assert family.chunks_for(p, None) >= p.window_count / base.LOOP_BUDGET
    assert family.strategies_for(p, None) == ("chunks",)


def test_shader_command(capsys):
    assert cli.main(["shader", "max_pooling2", "--shape", "1,8,16,16", "--window", "3,3", "--strides", "2,2",
                     "--indices", "uint32", "--caps", "gl-cpu"]) == 0
    out = capsys.readouterr().out
    assert "fn kernel(gid: u32)" in out and "store_index" in out
