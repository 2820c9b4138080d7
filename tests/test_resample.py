"""The resampling operators (RESAMPLE, RESAMPLE1-3, UPSAMPLE_2D): what the conformance kit does
not cover: hand-computed coordinates for every rounding and offset, the versions' relations,
cubic and antialiasing against ONNX's reference implementation, integer rounding, broadcast
inputs, each validation rule's message and the fused graphs. One input shape (X) and a few
scales, so that the cases share their compiled kernels."""

from __future__ import annotations

import re

import numpy as np
import pytest
from conftest import random_bits

import gpudml as dml
from gpudml import reference
from gpudml.ops import spec_named
from gpudml.testing import assert_bit_equal, assert_within

ROW = np.array([0, 1, 2, 3], np.float32)
X = np.random.default_rng(7).uniform(-1, 1, (1, 2, 4, 5)).astype(np.float32)


def _check(name: str, got, x, **args):
    """got against the reference: nearest bit-exact, interpolation within the tolerance."""
    spec = spec_named(name)
    want = spec.reference(x, **args)
    tol = spec.tolerance(want, [x], args)
    if tol is None:
        assert_bit_equal(got, want)
    else:
        assert_within(got, want, np.asarray(tol), spec.name)
    return want


# ---------------------------------------------------------------------------- coordinates by hand
@pytest.mark.parametrize(("rounding", "want"), [("decreasing", [0, 0, 0, 1, 1, 2, 2, 3]),
                                                ("increasing", [0, 1, 1, 2, 2, 3, 3, 3])])
def test_nearest_rounding_directions_by_hand(device, rounding, want):
    """2x with the pixel centers: x = (o + 0.5) / 2 - 0.5 = -0.25, 0.25, 0.75, ...: floor and
    ceil, clamped into the input."""
    got = dml.resample(ROW, [2.0], rounding_direction=rounding, device=device)
    np.testing.assert_array_equal(got, np.array(want, np.float32))


def test_resample0_rounds_half_up_and_linear_by_hand(device):
    """DML_RESAMPLE: floor(x + 0.5) (round_prefer_ceil); linear: 1 - r and r."""
    np.testing.assert_array_equal(dml.resample0(ROW, [2.0], device=device), [0, 0, 1, 1, 2, 2, 3, 3])
    np.testing.assert_array_equal(dml.resample0(ROW, [0.5], device=device), [1, 3])  # x = 0.5, 2.5: halves up
    np.testing.assert_allclose(dml.resample(ROW, [2.0], mode="linear", device=device),
                               [0, 0.25, 0.75, 1.25, 1.75, 2.25, 2.75, 3], rtol=0, atol=1e-7)


def test_offsets_and_scales_that_are_not_the_sizes(device):
    """Asymmetric offsets (0, 0): x = o / scale; output sizes beyond the scaled input clamp to
    its edge, fewer crop it (the pages' crop and clamp)."""
    got = dml.resample(ROW, [2.0], output_sizes=[10], input_pixel_offsets=[0], output_pixel_offsets=[0],
                       device=device)
    np.testing.assert_array_equal(got, [0, 0, 1, 1, 2, 2, 3, 3, 3, 3])
    got = dml.resample(ROW, [2.0], output_sizes=[3], mode="linear", input_pixel_offsets=[0],
                       output_pixel_offsets=[0], device=device)
    np.testing.assert_allclose(got, [0, 0.5, 1], atol=1e-7)
    assert dml.resample(ROW, output_sizes=[6], device=device).shape == (6,)  # scales 6 / 4


def test_the_versions_relations(device):
    """RESAMPLE is RESAMPLE1 with offsets 0.5 / -0.5; RESAMPLE1's nearest (floor(x + 0.5)) is
    RESAMPLE2's DECREASING with the input offsets 0.5 lower; RESAMPLE3 without antialiasing is
    RESAMPLE2; ONNX's round_prefer_floor is INCREASING with the input offsets 0.5 higher
    (DirectML's execution provider)."""
    x4 = X
    scales = [1, 1, 1.5, 0.6]
    a = dml.resample0(x4, scales, device=device)
    b = dml.resample1(x4, scales, input_pixel_offsets=[0.5] * 4, output_pixel_offsets=[-0.5] * 4, device=device)
    c = dml.resample2(x4, scales, input_pixel_offsets=[0.0] * 4, output_pixel_offsets=[-0.5] * 4, device=device)
    assert_bit_equal(a, b)
    assert_bit_equal(b, c)
    lin2 = dml.resample2(x4, scales, mode="linear", device=device)
    assert_bit_equal(lin2, dml.resample(x4, scales, mode="linear", device=device))
    # 0.5x of 0..3, x = 0.5, 2.5: round_prefer_floor gives 0, 2; round_prefer_ceil 1, 3
    floor = dml.resample(ROW, [0.5], input_pixel_offsets=[1.0], rounding_direction="increasing", device=device)
    ceil = dml.resample(ROW, [0.5], input_pixel_offsets=[0.0], rounding_direction="decreasing", device=device)
    np.testing.assert_array_equal(floor, [0, 2])
    np.testing.assert_array_equal(ceil, [1, 3])


# ---------------------------------------------------------------------------- every mode on one shape
CASES = [
    {"scales": [1, 1, 2, 2]},
    {"scales": [1, 1, 0.5, 1.5], "rounding_direction": "increasing"},
    {"scales": [1, 2, 1.5, 0.6], "input_pixel_offsets": [0, 0, 0, 0], "output_pixel_offsets": [0, 0, 0, 0]},
    {"scales": [1, 1, 3, 2], "mode": "linear"},
    {"scales": [1, 1, 0.6, 1.75], "mode": "linear", "input_pixel_offsets": [0, 0, 0, 0]},
    {"scales": [1, 1, 0.25, 0.4], "mode": "linear", "antialiased": True},
    {"scales": [1, 1, 2.5, 0.6], "mode": "cubic"},
    {"scales": [1, 1, 0.5, 0.75], "mode": "cubic", "antialiased": True, "exclude_outside": True},
    # gpudml's antialias_scales: linear widened at [0.5, 1) and below 1/2, the filter's scale
    # not the coordinate's, an axis of scale 1 blurred; cubic too
    {"scales": [1, 1, 0.75, 0.6], "mode": "linear", "antialiased": True, "antialias_scales": [1, 1, 0.75, 0.6]},
    {"scales": [1, 1.5, 0.5, 0.4], "mode": "linear", "antialiased": True, "antialias_scales": [1, 0.9, 0.3, 0.45],
     "input_pixel_offsets": [0, 0, 0, 0], "output_pixel_offsets": [0, 0, 0, 0]},
    {"scales": [1, 1, 1, 0.6], "mode": "cubic", "antialiased": True, "antialias_scales": [1, 1, 0.8, 0.35]},
]


@pytest.mark.parametrize("case", CASES, ids=range(len(CASES)))
def test_modes_roundings_offsets_every_strategy(device, case):
    """Each case under every eligible strategy: nearest bit-exact, interpolation within the
    documented tolerance of the float64 reference."""
    spec = spec_named("resample")
    desc = spec.infer_output(dml.TensorDesc(dml.DataType.FLOAT32, X.shape), **case)
    op = device.create_operator(desc)
    strategies = device.compile_operator(op).strategies
    assert ("stretches" in strategies) == (case.get("mode", "nearest_neighbor") == "nearest_neighbor")
    for strategy in strategies:
        (got,) = device.compile_operator(op, strategy=strategy).execute([X])
        _check("resample", got, X, **spec.arguments(desc))


def test_int8_float16_and_ranks(device):
    """INT8 linear rounds to the nearest (halves to even) and saturates; FLOAT16 is rounded
    once; nearest moves any bits (NaN payloads) of a rank-1 to rank-4 tensor."""
    x = np.array([-128, 127, 1, 2], np.int8)
    got = dml.resample(x, [2.0], mode="linear", device=device)
    # -64.25 -> -64, 63.25 -> 63, 95.5 -> 96 and 32.5 -> 32 (halves to even), 1.25 -> 1, 1.75 -> 2
    np.testing.assert_array_equal(got, [-128, -64, 63, 96, 32, 1, 2, 2])
    wave = np.array([-128, 127, -128, 127], np.int8)
    cubic = _check("resample", dml.resample(wave, [2.0], mode="cubic", device=device), wave, scales=[2.0],
                   mode="cubic")
    assert cubic.min() == -128 and cubic.max() == 127  # the overshoot saturates
    h = X.astype(np.float16)
    _check("resample", dml.resample(h, [1, 1, 1.5, 2], mode="linear", device=device), h, scales=[1, 1, 1.5, 2],
           mode="linear")
    rng = np.random.default_rng(3)
    for shape in ((5,), (3, 4), (2, 3, 4), (1, 2, 3, 4)):
        bits = random_bits(rng, np.float32, shape)
        scales = [2.0] * len(shape)
        assert_bit_equal(dml.resample(bits, scales, device=device), reference.resample(bits, scales))


def test_broadcast_and_strided_inputs(device):
    """A stride-0 (broadcast) input and a transposed one read through their strides."""
    wide = np.broadcast_to(X[:, :, :1, :], X.shape)
    _check("resample", dml.resample(wide, [1, 1, 2, 2], mode="linear", device=device), np.ascontiguousarray(wide),
           scales=[1, 1, 2, 2], mode="linear")
    t = X.transpose(0, 1, 3, 2)
    _check("resample", dml.resample(t, [1, 1, 2, 0.5], device=device), np.ascontiguousarray(t),
           scales=[1, 1, 2, 0.5])


def test_upsample_2d(device):
    """UPSAMPLE_2D is RESAMPLE on the last two axes with integer scales, 5-D too."""
    x5 = X.reshape(1, 2, 1, 4, 5)
    got = dml.upsample_2d(x5, (2, 3), device=device)
    assert_bit_equal(got, reference.resample0(x5[:, :, 0], [1, 1, 2, 3])[:, :, None])
    lin = dml.upsample_2d(X, (3, 2), mode="linear", device=device)
    _check("upsample_2d", lin, X, scale_size=(3, 2), mode="linear")
    assert_within(lin, reference.resample0(X, [1, 1, 3, 2], mode="linear"), 1e-6, "Upsample2D")


# ---------------------------------------------------------------------------- ONNX's reference
def _onnx_resize(x, scales, **attrs):
    onnx = pytest.importorskip("onnx")
    from onnx import helper
    from onnx.reference import ReferenceEvaluator

    node = helper.make_node("Resize", ["x", "", "scales"], ["y"], **attrs)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, x.shape),
                                            helper.make_tensor_value_info("scales", onnx.TensorProto.FLOAT, [4])],
                              [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)])
    return ReferenceEvaluator(model).run(None, {"x": x, "scales": np.array(scales, np.float32)})[0]


@pytest.mark.parametrize("attrs", [
    {"mode": "cubic"},
    {"mode": "cubic", "cubic_coeff_a": -0.5, "exclude_outside": 1},
    {"mode": "cubic", "antialias": 1},
    {"mode": "linear", "antialias": 1},
], ids=["cubic", "coeff-exclude", "cubic-antialias", "linear-antialias"])
def test_cubic_and_antialias_against_onnx_reference(device, attrs):
    """ONNX Resize (half_pixel) of ONNX's reference implementation: cubic with its coefficient
    and exclude_outside, antialiased cubic (widened wherever scale < 1), antialiased linear where
    1 / scale > 2 (RESAMPLE3's page; ONNX's filter)."""
    scales = [1, 1, 0.4, 0.25] if attrs["mode"] == "linear" else [1, 1, 0.6, 1.6]
    want = _onnx_resize(X, scales, **attrs)
    got = dml.resample(X, scales, output_sizes=want.shape, mode=attrs["mode"],
                       cubic_coeff_a=attrs.get("cubic_coeff_a", -0.75),
                       exclude_outside=bool(attrs.get("exclude_outside")), antialiased=bool(attrs.get("antialias")),
                       device=device)
    assert_within(got, want.astype(np.float32), 2e-6, "Resample3")


def test_linear_antialias_leaves_scales_of_a_half_or_more():
    """The page: antialiasing where 1/Scales > 2; at 0.6 the filter is LINEAR's (ONNX's would
    be widened: not what DirectML computes)."""
    plain = reference.resample(X, [1, 1, 0.6, 0.5], mode="linear")
    assert_bit_equal(reference.resample(X, [1, 1, 0.6, 0.5], mode="linear", antialiased=True), plain)
    assert not np.allclose(_onnx_resize(X, [1, 1, 0.6, 0.5], mode="linear", antialias=1), plain)


@pytest.mark.parametrize(("mode", "scales"), [("linear", [1, 1, 0.75, 0.6]), ("linear", [1, 1, 0.5, 0.9]),
                                              ("linear", [1, 1, 0.4, 0.25]), ("cubic", [1, 1, 0.75, 0.45])])
def test_antialias_scales_are_onnx_antialias(device, mode, scales):
    """gpudml's antialias_scales extension, min(scale, 1) per axis, is ONNX Resize's antialias
    (half_pixel) at scales in [1/2, 1) and below 1/2: widened wherever the entry is below 1."""
    want = _onnx_resize(X, scales, mode=mode, antialias=1)
    args = {"scales": scales, "output_sizes": want.shape, "mode": mode, "antialiased": True,
            "antialias_scales": [min(s, 1.0) for s in scales]}
    got = dml.resample(X, **args, device=device)
    assert_within(got, want.astype(np.float32), 2e-6, "Resample3")
    _check("resample", got, X, **args)


def test_antialias_scales_of_every_type(device):
    """The extension on each type of RESAMPLE3's table: FLOAT16 rounded once, INT8 and UINT8
    rounded to the nearest and saturated, within the documented precision."""
    args = {"scales": [1, 1, 0.75, 0.6], "mode": "linear", "antialiased": True, "antialias_scales": [1, 1, 0.75, 0.6]}
    rng = np.random.default_rng(5)
    for x in (X.astype(np.float16), rng.integers(-128, 128, X.shape).astype(np.int8),
              rng.integers(0, 256, X.shape).astype(np.uint8)):
        _check("resample", dml.resample(x, **args, device=device), x, **args)
    cubic = {**args, "mode": "cubic", "antialias_scales": [1, 1, 0.75, 0.3]}
    x = X.astype(np.float16)
    _check("resample", dml.resample(x, **cubic, device=device), x, **cubic)


def test_antialias_scales_default_is_directml_and_unsupported_taps(device):
    """No antialias_scales: DirectML's rule, the same plan (uniforms and WGSL) as before the
    extension; entries of 1 leave the linear filter as it is (normalized: the same values);
    an entry so small its taps pass the loop budget is an UnsupportedError naming it."""
    spec = spec_named("resample")
    x = dml.TensorDesc(dml.DataType.FLOAT32, X.shape)
    base = {"scales": [1, 1, 0.25, 0.4], "mode": "linear", "antialiased": True}
    same = device.create_operator(spec.infer_output(x, **base, antialias_scales=[1, 1, 0.25, 0.4]))
    plain = device.create_operator(spec.infer_output(x, **base))
    (a,), (b,) = (device.compile_operator(op).execute([X]) for op in (same, plain))
    assert_bit_equal(a, b)
    ones = dml.resample(X, [1, 1, 0.6, 0.7], mode="linear", antialiased=True, antialias_scales=[1, 1, 1, 2],
                        device=device)
    np.testing.assert_allclose(ones, reference.resample(X, [1, 1, 0.6, 0.7], mode="linear"), rtol=0, atol=1e-6)
    with pytest.raises(dml.UnsupportedError, match=re.escape("antialias_scales [9.5367431640625e-07]")):
        dml.resample(ROW, [0.5], output_sizes=[2], mode="linear", antialiased=True, antialias_scales=[2**-20],
                     device=device)


# ---------------------------------------------------------------------------- validation
BAD = [
    ({"scales": [1, 1, 0, 2]}, "Resample3: scales[2] = 0.0 must be a finite number larger than 0"),
    ({"scales": [1, 1, float("nan"), 2]}, "Resample3: scales[2] = nan must be a finite number larger than 0"),
    ({"scales": [1, 1, -2, 2]}, "Resample3: scales[2] = -2.0 must be"),
    ({"scales": [1, 1, 2, 2], "input_pixel_offsets": [0, 0, float("inf"), 0]},
     "Resample3: input_pixel_offsets[2] = inf must be a finite number"),
    ({"scales": [1, 1, 2, 2], "output_pixel_offsets": [0, 0]}, "Resample3: output_pixel_offsets has 2 entries"),
    ({"scales": [1, 1, 2, 2], "antialiased": True}, "Resample3: antialiased = True needs interpolation_mode LINEAR"),
    ({"scales": [1, 1, 2, 2], "mode": "bicubic"}, "interpolation_mode"),
    ({"scales": [1, 1, 0.5, 0.5], "mode": "linear", "antialias_scales": [1, 1, 0.5, 0.5]},
     "Resample3: antialias_scales [1.0, 1.0, 0.5, 0.5] needs antialiased = True"),
    ({"scales": [1, 1, 0.5, 0.5], "mode": "linear", "antialiased": True, "antialias_scales": [1, 1, 0, 0.5]},
     "Resample3: antialias_scales[2] = 0.0 must be a finite number larger than 0 (antialias_scales [1.0, 1.0, "
     "0.0, 0.5])"),
    ({"scales": [1, 1, 0.5, 0.5], "mode": "cubic", "antialiased": True, "antialias_scales": [1, float("inf"), 1, 1]},
     "Resample3: antialias_scales[1] = inf must be a finite number larger than 0"),
    ({"scales": [1, 1, 0.5, 0.5], "mode": "linear", "antialiased": True, "antialias_scales": [0.5, 0.5]},
     "Resample3: antialias_scales has 2 entries"),
    ({"scales": [1, 1, 0.5, 0.5], "mode": "linear", "antialiased": True, "antialias_scales": 0.5},
     "Resample3: antialias_scales: expected a sequence of numbers"),
    ({"scales": [1, 1, 2, 2], "rounding_direction": "up"}, "rounding_direction"),
    ({"scales": [1, 1, 2e9, 2]}, "resample: the output size of axis 2, floor(input size * scales[2]) ="),
    ({"output_sizes": [1, 2, 3]}, "resample: output_sizes has 3 entries [1, 2, 3]; x has 4 dimensions"),
    ({}, "resample: give scales or output_sizes"),
]


@pytest.mark.parametrize(("args", "message"), BAD, ids=range(len(BAD)))
def test_bad_calls_name_the_field_rule_and_values(device, args, message):
    with pytest.raises(dml.InvalidArgumentError, match=re.escape(message)):
        dml.resample(X, device=device, **args)


def test_bad_descs_of_the_other_versions(device):
    x, y = dml.TensorDesc(dml.DataType.FLOAT32, [1, 1, 2, 2]), dml.TensorDesc(dml.DataType.FLOAT32, [1, 1, 4, 4])
    with pytest.raises(dml.InvalidArgumentError, match="CUBIC is gpudml's extension of Resample3"):
        device.create_operator(dml.Resample2OperatorDesc(x, y, "cubic", "decreasing", [1, 1, 2, 2], [0.5] * 4,
                                                         [-0.5] * 4))
    with pytest.raises(dml.InvalidArgumentError, match=re.escape("Upsample2D: scale_size.width = 0 must be in")):
        device.create_operator(dml.Upsample2DOperatorDesc(x, y, (2, 0), "linear"))
    with pytest.raises(dml.InvalidArgumentError, match=re.escape("Upsample2D: output_tensor.sizes [1, 1, 4, 4] must "
                                                                 "be [1, 1, 2, 6]")):
        device.create_operator(dml.Upsample2DOperatorDesc(x, y, (1, 3), "linear"))
    with pytest.raises(dml.InvalidArgumentError, match="Resample1: DimensionCount 3 is not supported"):
        dml.resample1(X[0], [1, 2, 2], device=device)


# ---------------------------------------------------------------------------- graphs
def test_nearest_fuses_into_a_chain_and_linear_takes_the_epilogue(device):
    """Nearest is a chain stage: resample -> add -> relu is one kernel reading x through the
    index map; linear stores add and relu in its own kernel: one dispatch too."""
    bias = np.linspace(-1, 1, 10, dtype=np.float32)
    for mode in ("nearest_neighbor", "linear"):
        g = dml.Graph(device)
        x = g.input(list(X.shape), dtype=np.float32, name="x")
        y = dml.relu(dml.add(dml.resample(x, [1, 1, 2, 2], mode=mode), bias))
        fused, unfused = g.compile([y]), g.compile([y], fuse=False)
        assert (fused.dispatch_count, unfused.dispatch_count) == (1, 3), mode
        (got,), (want,) = fused({"x": X}), unfused({"x": X})
        if mode == "linear":
            np.testing.assert_allclose(got, want, rtol=0, atol=1e-6)
        else:
            assert_bit_equal(got, want)


@pytest.mark.parametrize(("name", "args"), [
    ("resample0", {"scales": [1, 1, 2, 1.5]}),
    ("resample1", {"scales": [1, 1, 2, 1.5]}),
    ("resample2", {"scales": [1, 1, 2, 1.5], "rounding_direction": "increasing"}),
    ("resample", {"scales": [1, 1, 0.5, 3]}),
    ("upsample_2d", {"scale_size": (2, 3)}),
])
def test_each_version_is_a_chain_stage(device, name, args):
    """Every version's nearest fuses with a slice before it and a padding after it into one
    movement kernel (the random graphs of the conformance kit reach the resampling operators'
    ranks 1-4 and four types too seldom to promise it): bit for bit the unfused graph."""
    g = dml.Graph(device)
    x = g.input([1, 2, 6, 5], dtype=np.float16, name="x")
    cut = dml.slice(x, [0, 0, 1, 0], [1, 2, 4, 5], [1, 1, 1, -1])
    y = dml.pad(getattr(dml, name)(cut, **args), [0, 0, 1, 0], [0, 0, 0, 2], mode="reflection")
    fused, unfused = g.compile([y]), g.compile([y], fuse=False)
    assert (fused.dispatch_count, unfused.dispatch_count) == (1, 3)
    feed = {"x": random_bits(np.random.default_rng(2), np.float16, (1, 2, 6, 5))}
    assert_bit_equal(fused(feed)[0], unfused(feed)[0])


def test_extreme_scales_clamp_or_are_unsupported(device):
    """Tiny and huge scales map every output into the input (clamped), no crash; an
    antialiased filter wider than one invocation's loop budget is an UnsupportedError naming
    the taps, before any GPU work."""
    np.testing.assert_array_equal(dml.resample(ROW, [1e-30], output_sizes=[3], device=device), [3, 3, 3])
    np.testing.assert_array_equal(dml.resample(ROW, [1e30], output_sizes=[3], device=device), [0, 0, 0])
    with pytest.raises(dml.UnsupportedError, match="taps"):
        dml.resample(ROW, [1e-5], output_sizes=[1], mode="linear", antialiased=True, device=device)


def test_element_wise_nodes_before_are_read_in_place(device):
    """The prologue: add -> linear resample -> relu is one kernel reading x and the bias
    through the fused add; a padding before a linear resample is read through its chain.
    Both as the unfused graph (float32 weights: the same kernel's arithmetic on the same
    values, within one rounding of the stored add)."""
    bias = np.linspace(-1, 1, 5, dtype=np.float32)
    g = dml.Graph(device)
    x = g.input(list(X.shape), dtype=np.float32, name="x")
    y = dml.relu(dml.resample(dml.add(x, bias), [1, 1, 2, 1.5], mode="linear"))
    z = dml.resample(dml.pad(x, [0, 0, 1, 1], [0, 0, 1, 1], mode="edge"), [1, 1, 0.5, 2], mode="cubic")
    fused, unfused = g.compile([y, z]), g.compile([y, z], fuse=False)
    assert (fused.dispatch_count, unfused.dispatch_count) == (2, 5)
    for got, want in zip(fused({"x": X}), unfused({"x": X}), strict=True):
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-6)


# ---------------------------------------------------------------------------- `integer`
W = np.random.default_rng(11).uniform(-1, 1, (1, 2, 3, 8)).astype(np.float32)
INTEGER_CASES = [
    ("resample", {"scales": [1, 1, 2, 2]}),
    ("resample", {"scales": [1, 1, 2, 2], "rounding_direction": "increasing"}),
    ("resample0", {"scales": [1, 1, 2, 2]}),
    ("resample", {"scales": [1, 2, 1.5, 3], "input_pixel_offsets": [0, 0, 0, 0.5],
                  "output_pixel_offsets": [0, 0, 0, -0.5]}),
    ("resample", {"scales": [1, 1, 1, 16]}),
    ("resample", {"scales": [1, 1, 2, 2], "mode": "linear"}),
    ("resample", {"scales": [1, 2, 1.5, 4], "mode": "linear"}),
    ("resample", {"scales": [1, 1, 0.5, 8], "mode": "linear", "input_pixel_offsets": [0, 0, 0, 0.5]}),
    ("resample", {"scales": [2, 2, 2, 2], "mode": "linear"}),
]


def _strategies_agree(device, name: str, x: np.ndarray, integer: bool, **case):
    """`integer` eligible (or not) for x and case; where it is, bit for bit `rows`' result
    (but FLOAT16 linear, whose sums `integer` takes in another order: within the documented
    precision, as every strategy), and every strategy against the reference."""
    spec = spec_named(name)
    desc = spec.infer_output(dml.TensorDesc(dml.DataType.from_numpy(x.dtype), x.shape), **case)
    op = device.create_operator(desc)
    strategies = device.compile_operator(op).strategies
    assert ("integer" in strategies) == integer, (strategies, case)
    if device.caps.is_software and integer:
        assert strategies[0] == "integer"
    got = {s: device.compile_operator(op, strategy=s).execute([x])[0] for s in strategies}
    for result in got.values():
        _check(name, result, x, **spec.arguments(desc))
    if integer and not (x.dtype == np.float16 and case.get("mode") == "linear"):
        assert_bit_equal(got["integer"], got["rows"])


@pytest.mark.parametrize(("name", "case"), INTEGER_CASES, ids=range(len(INTEGER_CASES)))
def test_integer_scales_every_mode_and_rounding(device, name, case):
    """`integer` (an integer scale of the packed innermost axis, the default pixel offsets):
    nearest under each rounding and scales up to 16, linear 2x, 4x, 8x with the outer axes
    up- and downsampled (their weights computed per row): bit for bit `rows`."""
    _strategies_agree(device, name, W, True, **case)


def test_integer_types_ranks_and_row_sizes(device):
    """Every type: nearest moves any element's bits (NaN payloads), linear rounds once to
    the type (saturating INT8 and UINT8); ranks 2-4; rows of one to four blocks (runs of
    fewer blocks than INTEGER_BLOCKS) and of 16 (two runs of 8); the row's first and last
    elements clamp (the neighbours of the run's blocks)."""
    rng = np.random.default_rng(5)
    for dtype in (np.float32, np.float16, np.int8, np.uint8):
        x = random_bits(rng, dtype, (1, 2, 3, 16))
        _strategies_agree(device, "resample", x, True, scales=[1, 1, 2, 2])
        _strategies_agree(device, "resample", x, True, scales=[1, 1, 1.5, 3], rounding_direction="increasing")
        finite = x if dtype not in (np.float16, np.float32) else rng.uniform(-9, 9, x.shape).astype(dtype)
        _strategies_agree(device, "resample", finite, True, scales=[1, 1, 2, 2], mode="linear")
        _strategies_agree(device, "resample", finite, True, scales=[1, 2, 0.5, 4], mode="linear")
    for shape in ((3, 4), (2, 3, 12), (1, 2, 2, 16), (2, 64)):
        x = rng.uniform(-1, 1, shape).astype(np.float32)
        for mode in ("nearest_neighbor", "linear"):
            _strategies_agree(device, "resample", x, True, scales=[2.0] * len(shape), mode=mode)


@pytest.mark.parametrize(("x", "case"), [
    (X, {"scales": [1, 1, 2, 2]}),  # rows of 5: no whole blocks
    (W[..., :6], {"scales": [1, 1, 2, 2], "mode": "linear"}),
    (W, {"scales": [1, 1, 2, 3], "mode": "linear"}),  # 3x: inexact coordinates
    (W, {"scales": [1, 1, 2, 2.5]}),
    (W, {"scales": [1, 1, 2, 2], "input_pixel_offsets": [0, 0, 0, 0]}),
    (W, {"scales": [1, 1, 2, 2], "output_sizes": [1, 2, 6, 12]}),  # not 2 x 8: cropped
    (W, {"scales": [1, 1, 2, 2], "mode": "linear", "antialiased": True}),  # normalized
    (W, {"scales": [1, 1, 2, 2], "mode": "cubic"}),
    (W, {"scales": [1, 1, 2, 1]}),  # the innermost axis not resampled
    (W[..., :4].astype(np.float16), {"scales": [1, 1, 2, 2]}),  # rows of half a block
    (np.zeros((2, 24), np.int8), {"scales": [2, 2], "mode": "linear"}),  # 24 bytes
], ids=range(11))
def test_integer_is_not_eligible(device, x, case):
    """Where `integer` would not be `rows` bit for bit, or its blocks do not fit: odd rows,
    non-power-of-two linear scales, other offsets or output sizes, normalized weights, cubic,
    rows of part of a block."""
    _strategies_agree(device, "resample", x, False, **case)


def test_integer_float16_linear_special_values(device):
    """FLOAT16 linear `integer` sums separably (per input element over the outer axes'
    taps, then along the row) and rounds an output word's two sums at once (integer_parts):
    on infinities (inf - inf: NaN), NaN, the largest finite values (their cancellation puts
    the sums' float32 error at the documented bound), subnormals and signed zeros, the same
    non-finite results as `rows` (bit for bit), zeros of the same sign, the rest within the
    documented precision of the reference."""
    rng = np.random.default_rng(9)
    special = np.array([np.inf, -np.inf, np.nan, 65504, -65504, 6e-8, -6e-8, 0.0, -0.0, 1e-5], np.float16)
    x = rng.uniform(-9, 9, (1, 2, 4, 32)).astype(np.float16)
    x.flat[rng.choice(x.size, 80, replace=False)] = rng.choice(special, 80)
    x[0, 1, :, :16] = -0.0  # the taps of some outputs -0 (their sum -0, as `rows` gives)
    spec = spec_named("resample")
    for scales in ([1, 1, 2, 2], [1, 1, 1, 4], [1, 2, 0.5, 8]):
        desc = spec.infer_output(dml.TensorDesc(dml.DataType.FLOAT16, x.shape), scales=scales, mode="linear")
        op = device.create_operator(desc)
        got = {s: device.compile_operator(op, strategy=s).execute([x])[0] for s in ("integer", "rows")}
        special_out = ~np.isfinite(got["rows"])
        assert special_out.any()
        assert_bit_equal(got["integer"][special_out], got["rows"][special_out])
        zero = (got["integer"] == 0) & (got["rows"] == 0)
        assert zero.any()
        np.testing.assert_array_equal(np.signbit(got["integer"][zero]), np.signbit(got["rows"][zero]))
        args = spec.arguments(desc)
        with np.errstate(invalid="ignore", over="ignore"):  # the reference's inf - inf, NaN
            want = spec.reference(x, **args)
            tol = np.broadcast_to(np.asarray(spec.tolerance(want, [x], args)), want.shape)
        finite = ~special_out
        assert_within(got["integer"][finite], want[finite], tol[finite], spec.name)


@pytest.mark.parametrize("scales", [[1, 1, 2, 2], [1, 1, 1, 4], [1, 2, 1, 8]], ids=["pairs", "row4", "outer2_row8"])
def test_integer_float16_linear_rounds_to_nearest_even(device, scales):
    """FLOAT16 linear `integer` rounds each float32 sum to float16 once, to the nearest, ties
    to even (f16x2_bits in shaders/resample.wgsl.j2), not merely within the bound: on inputs
    whose sums float32 holds exactly (normals of [0.5, 4) of either sign; subnormals, whose
    sums land on the subnormal grid), the result is the exact sum rounded to nearest even, bit
    for bit, both halves of every output word, ties among them (the weights' 1/16ths)."""
    rng = np.random.default_rng(43)
    shape = (2, 3, 4, 32)
    normals = (rng.uniform(0.5, 4, shape) * rng.choice([-1, 1], shape)).astype(np.float16)
    subnormals = (rng.integers(-1023, 1024, shape) * 2.0 ** -24).astype(np.float16)
    spec = spec_named("resample")
    for x in (normals, subnormals):
        desc = spec.infer_output(dml.TensorDesc(dml.DataType.FLOAT16, x.shape), scales=scales, mode="linear")
        got = device.compile_operator(device.create_operator(desc), strategy="integer").execute([x])[0]
        exact = spec.reference(x.astype(np.float32), **spec.arguments(desc))  # float32 holds these sums
        want = exact.astype(np.float16)
        assert_bit_equal(got, want)
        off_grid = exact != want.astype(np.float32)
        ties = np.abs(exact - want.astype(np.float32)) == np.abs(np.spacing(want)).astype(np.float32) / 2
        assert off_grid.mean() > 0.3 and ties.any()  # rounding exercised, ties too


def test_integer_float16_linear_stores_u64_pairs_where_the_adapter_has_int64(device, adapter):
    """FLOAT16 linear `integer` loads and stores its 16-byte blocks as vec2<u64> (the builder's
    `blocks64` access: half the lanes' load and store steps on lavapipe) where the adapter has
    shader-int64, vec4<u32> where not (GL), and no other FLOAT16 or FLOAT32 plan does; the
    same bits either way (test_integer_float16_linear_rounds_to_nearest_even runs the one
    each adapter's caps give against the reference); with the output bound in segments too."""
    from gpudml import caps, compiler

    spec = spec_named("resample")
    half = spec.infer_output(dml.TensorDesc(dml.DataType.FLOAT16, [1, 2, 4, 32]), scales=[1, 1, 2, 2], mode="linear")
    single = spec.infer_output(dml.TensorDesc(dml.DataType.FLOAT32, [1, 2, 4, 32]), scales=[1, 1, 2, 2], mode="linear")
    for profile in ("vulkan-cpu", "gl-cpu", "gpu"):
        profile_caps = caps.profile(profile)
        (kernel,) = compiler.compile(half, profile_caps, strategy="integer").kernels
        wide = profile_caps.has("shader-int64")
        assert ("var<storage, read_write> output_wide: array<vec2<u64>>;" in kernel.source) == wide, profile
        assert ("output_vec_set(" in kernel.source) != wide, profile
        assert ("var<storage, read> input_wide: array<vec2<u64>>;" in kernel.source) == wide, profile
        assert ("input_blocks_at(" in kernel.source) != wide, profile
        (kernel,) = compiler.compile(single, profile_caps, strategy="integer").kernels
        assert "vec2<u64>" not in kernel.source
    assert caps.profile("vulkan-cpu").has("shader-int64") and not caps.profile("gl-cpu").has("shader-int64")
    # an output bound in segments (a binding of 4 KiB: 8 of them for these 32 KiB), each
    # block's wide or vec4 store picking its segment: the bits of the unlimited device
    from isolated import limited_device

    x = np.random.default_rng(5).uniform(-2, 2, [1, 4, 8, 64]).astype(np.float16)
    desc = spec.infer_output(dml.TensorDesc(dml.DataType.FLOAT16, x.shape), scales=[1, 1, 2, 2], mode="linear")
    small = limited_device(adapter, max_storage_binding_size=4096)
    got = small.compile_operator(small.create_operator(desc), strategy="integer").execute([x])[0]
    want = device.compile_operator(device.create_operator(desc), strategy="integer").execute([x])[0]
    assert_bit_equal(got, want)


@pytest.mark.parametrize(("shape", "scales", "pair"), [
    ((1, 2, 1, 16), [1, 1, 2, 2], 2),  # one input row: the pairs (-1, 0) and (1, 2) write one row each
    ((2, 3, 5, 32), [1, 1, 2, 2], 2),
    ((1, 3, 4, 16), [1, 1, 2, 4], 2),
    ((1, 2, 3, 24), [1, 1, 2, 8], 2),  # rows of 3 blocks: 1 block per invocation
    ((2, 3, 3, 16), [1, 2, 2, 2], 2),  # an outer resampled axis besides the pair's
    ((2, 3, 3, 16), [2, 1, 2, 2], 2),
    ((1, 2, 3, 16), [1, 1, 3, 2], -1),  # 3x: no pairs, the row's taps per output row
    ((1, 2, 3, 16), [1, 2, 1, 2], -1),  # the axis outside the row not resampled
    ((3, 16), [2, 2], 0),
    ((48,), [4], -1),
], ids=range(10))
def test_integer_float16_linear_pairs_of_rows(device, shape, scales, pair):
    """FLOAT16 linear `integer` computes two output rows (2i - 1, 2i) per invocation from input
    rows i - 1 and i where the axis outside the row is resampled by exactly 2 (_pair_axis;
    the first and last pairs write one row), per output row elsewhere: every output within
    the documented precision of the reference, and of `rows`."""
    from gpudml.kernels import resample as rs

    x = np.random.default_rng(len(shape) + shape[-1]).uniform(-4, 4, shape).astype(np.float16)
    spec = spec_named("resample")
    desc = spec.infer_output(dml.TensorDesc(dml.DataType.FLOAT16, x.shape), scales=scales, mode="linear")
    assert rs._pair_axis(spec.planner.problem(desc)) == pair
    _strategies_agree(device, "resample", x, True, scales=scales, mode="linear")


def test_integer_float16_linear_broadcast_and_spaced_rows(device):
    """The FLOAT16 pairs of rows read a broadcast input (stride 0 on the pair's axis) and rows
    that lie apart (a slice of a wider tensor) through their strides."""
    w = np.random.default_rng(12).uniform(-1, 1, (1, 2, 3, 32)).astype(np.float16)
    wide = np.broadcast_to(w[:, :, :1, :], w.shape)
    _check("resample", dml.resample(wide, [1, 1, 2, 2], mode="linear", device=device), np.ascontiguousarray(wide),
           scales=[1, 1, 2, 2], mode="linear")
    cut = w[..., 16:]
    _check("resample", dml.resample(cut, [1, 1, 2, 4], mode="linear", device=device), np.ascontiguousarray(cut),
           scales=[1, 1, 2, 4], mode="linear")


def test_integer_rows_up_to_2_16_outputs():
    """`integer` needs rows of at most 2^16 outputs (the coordinate's snapping, 2^-18 of its
    magnitude, stays below 1 / 2k) and packed tensors: decided on the description alone."""
    from gpudml.kernels import resample as rs

    def problem(n: int, k: int, strides=None) -> rs.Resampling:
        t = dml.TensorDesc(dml.DataType.FLOAT32, [2, n], strides)
        return rs.Resampling("Resample", "nearest", "floor", t, dml.TensorDesc(dml.DataType.FLOAT32, [2, k * n]),
                             (1.0, float(k)), (0.5, 0.5), (-0.5, -0.5))

    assert rs._integer(problem(1 << 15, 2)) == 2
    assert rs._integer(problem(1 << 15, 4)) == 0
    assert rs._integer(problem(8, 4, [16, 1])) == 4  # rows apart, in whole blocks
    assert rs._integer(problem(8, 4, [0, 1])) == 4  # broadcast
    assert rs._integer(problem(8, 4, [10, 1])) == 0  # rows not in whole blocks
    assert rs._integer(problem(8, 4, [1, 2])) == 0  # the innermost stride not 1
    u8 = dml.TensorDesc(dml.DataType.UINT8, [2, 2, 2, 16])

    def linear(k: int) -> rs.Resampling:
        return rs.Resampling("Resample", "linear", "floor", u8, dml.TensorDesc(dml.DataType.UINT8, [4, 4, 4, 16 * k]),
                             (2.0, 2.0, 2.0, float(k)), (0.5,) * 4, (-0.5,) * 4)

    assert rs._integer(linear(4)) == 4  # 16 x 4 outputs of 16 taps: 1024 terms
    assert rs._integer(linear(8)) == 0  # 2048: too much code


def test_integer_reads_broadcast_and_spaced_rows(device):
    """`integer` reads a broadcast input (stride 0) and one whose rows lie apart (a slice of
    a wider tensor) through their strides."""
    wide = np.broadcast_to(W[:, :, :1, :], W.shape)
    for mode in ("nearest_neighbor", "linear"):
        _check("resample", dml.resample(wide, [1, 1, 2, 2], mode=mode, device=device), np.ascontiguousarray(wide),
               scales=[1, 1, 2, 2], mode=mode)
    cut = np.random.default_rng(4).uniform(-1, 1, (1, 2, 3, 12)).astype(np.float32)[..., 4:]
    _check("resample", dml.resample(cut, [1, 1, 2, 4], mode="linear", device=device), np.ascontiguousarray(cut),
           scales=[1, 1, 2, 4], mode="linear")
