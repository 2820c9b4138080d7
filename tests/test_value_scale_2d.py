"""ValueScale2d (DML_VALUE_SCALE_2D): what the conformance kit (tests/test_conformance.py)
does not cover: every type on one shape against the float64 reference within the
documented precision, strided and broadcast inputs, a strided output, each validation
rule's message, the channel-count limit of the kernel, the store epilogue's dispatch count
and the command line. One shape (S) serves the device cases."""

from __future__ import annotations

import re

import numpy as np
import pytest

import gpudml as dml
from gpudml import reference
from gpudml.errors import UnsupportedError
from gpudml.kernels import value_scale as family
from gpudml.ops import value_scale_2d as op
from gpudml.testing import assert_within

DT = dml.DataType
S = (2, 3, 4, 5)
BIAS = (1.5, -2.0, 0.25)


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_every_type(device, dtype):
    x = np.random.default_rng(1).standard_normal(S).astype(dtype)
    got = np.asarray(dml.value_scale_2d(x, 0.75, BIAS, device=device))
    want = reference.value_scale_2d(x, 0.75, BIAS)
    assert got.dtype == dtype
    assert_within(got, want, op.tolerance(want, [x], {"scale": 0.75, "bias": BIAS}), "ValueScale2d")
    # One channel; bias left out: zeros (scale * x).
    one = x[:, :1]
    assert_within(np.asarray(dml.value_scale_2d(one, 2.0, device=device)), (2 * one.astype(np.float64))
                  .astype(dtype), 0.0, "ValueScale2d")


def test_strided_and_broadcast_input_strided_output(device):
    """The input read through its strides (stride 0 broadcasts the width), the output
    stored through its own (its gaps keep their bytes)."""
    values = np.arange(2 * 3 * 4, dtype=np.float32).reshape(2, 3, 4, 1) - 7
    x = dml.TensorDesc(DT.FLOAT32, S, [24, 8, 2, 0], total_tensor_size_in_bytes=4 * 48)
    out = dml.TensorDesc(DT.FLOAT32, S, [64, 20, 5, 1], total_tensor_size_in_bytes=4 * 128)
    desc = dml.ValueScale2dOperatorDesc(x, out, -0.5, 3, BIAS)
    raw = np.zeros(48, np.float32)
    raw[::2] = values.ravel()
    compiled = device.compile_operator(device.create_operator(desc))
    (got,) = compiled.execute([raw])
    want = reference.value_scale_2d(np.broadcast_to(values, S), -0.5, BIAS)
    np.testing.assert_array_equal(np.asarray(got), want)


def _desc(sizes=S, dtype=DT.FLOAT32, out_sizes=None, out_dtype=None, scale=1.0, channel_count=3, bias=BIAS):
    return dml.ValueScale2dOperatorDesc(dml.TensorDesc(dtype, sizes), dml.TensorDesc(out_dtype or dtype,
                                        out_sizes or sizes), scale, channel_count, bias)


@pytest.mark.parametrize("make, message", [
    (lambda: _desc(sizes=(2, 4, 4, 5), channel_count=4, bias=(0,) * 4),
     "ValueScale2d: channel_count = 4 must be 1 or 3 (the page's rule)"),
    (lambda: _desc(sizes=(2, 1, 4, 5)),
     "ValueScale2d: channel_count = 3 must equal input_tensor.sizes[1] (the channels) = 1 (input_tensor.sizes "
     "[2, 1, 4, 5])"),
    (lambda: _desc(bias=(1.0,)), "ValueScale2d: bias holds 1 values; it must hold channel_count = 3"),
    (lambda: _desc(out_sizes=(2, 3, 4, 6)),
     "ValueScale2d: output_tensor.sizes [2, 3, 4, 6] must equal input_tensor.sizes [2, 3, 4, 5]"),
    (lambda: _desc(out_dtype=DT.FLOAT16),
     "ValueScale2d: output_tensor.data_type FLOAT16 must equal input_tensor.data_type FLOAT32"),
    (lambda: _desc(dtype=DT.INT32), "ValueScale2d: input_tensor.data_type INT32 is not supported"),
    (lambda: _desc(sizes=(3, 4, 5), channel_count=1, bias=(0,)),
     "ValueScale2d: DimensionCount 3 is not supported at FL_6_4 (supported: 4)"),
    (lambda: _desc(scale="2"), "ValueScale2d: scale: expected a number (a DirectML FLOAT), got '2'"),
    (lambda: _desc(bias=(1.0, None, 2.0)), "ValueScale2d: bias[1]: expected a number (a DirectML FLOAT), got None"),
    (lambda: _desc(bias=1.0), "ValueScale2d: bias: expected a sequence of numbers (DirectML FLOATs), got 1.0"),
    (lambda: _desc(channel_count=1.5), "ValueScale2d: channel_count"),
])
def test_bad_descriptions_name_the_field_and_the_rule(vulkan_device, make, message):
    """Each rule's message (the field, the rule, the values), before any GPU work."""
    with pytest.raises(dml.InvalidArgumentError, match=re.escape(message)):
        vulkan_device.create_operator(make())


def test_the_kernels_channel_limit():
    """The bias is one vec4 of the uniform buffer: more channels are refused by the family
    (validation refuses any count but 1 and 3 first)."""
    x = dml.TensorDesc(DT.FLOAT32, (1, 5, 2, 2))
    with pytest.raises(UnsupportedError, match="at most 4 channels"):
        family.FAMILY.strategies_for(family.ValueScale("ValueScale2d", x, x, 1.0, (0.0,) * 5), None)
    (dispatch,) = family.FAMILY.plan(op.problem(_desc(scale=2.0)), None, "runs").dispatches
    assert dispatch.uniforms["scale"] == 0x40000000 and dispatch.uniforms["bias"][1] == 0xC0000000
    assert len(dispatch.uniforms["bias"]) == 4


def test_an_elementwise_consumer_runs_in_its_store(device):
    """add(value_scale_2d(x), b) and a relu after it: one dispatch, the unfused graph's values."""
    rng = np.random.default_rng(2)
    g = dml.Graph(device)
    x = g.input(S, dtype="float32", name="x")
    b = g.input(S, dtype="float32", name="b")
    out = dml.relu(dml.add(dml.value_scale_2d(x, 0.5, BIAS), b))
    fused, unfused = g.compile([out]), g.compile([out], fuse=False)
    assert fused.dispatch_count == 1 < unfused.dispatch_count
    feed = {"x": rng.standard_normal(S).astype(np.float32), "b": rng.standard_normal(S).astype(np.float32)}
    (got,), (want,) = fused(feed), unfused(feed)
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=4e-7, atol=4e-7)


def test_command_line(capsys):
    from gpudml import cli

    assert cli.main(["shader", "value_scale_2d", "--shape", "1,3,8,8", "--scale", "2", "--bias", "1,2,3",
                     "--caps", "vulkan-cpu"]) == 0
    out = capsys.readouterr().out
    assert "// ValueScale2d at FL_6_4" in out and "// strategy runs" in out and "bitcast<f32>(uni.scale)" in out
    assert cli.main(["shader", "value_scale_2d", "--shape", "1,1,8,8", "--caps", "gpu"]) == 0
    assert "// strategy elements" in capsys.readouterr().out
