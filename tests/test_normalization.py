"""MEAN_VARIANCE_NORMALIZATION(1), LP_NORMALIZATION and LOCAL_RESPONSE_NORMALIZATION
(gpudml/ops/normalization.py; kernels/normalization.py): what the conformance kit does not
cover: the layouts models use (LayerNorm over [C, H, W] or the last axis, InstanceNorm over
[H, W] with a scale and bias per channel), every strategy on them, a row past llvmpipe's
65,535 loop iterations, the two-pass variance on a mean far from 0, a bias without a scale
(FL 5_2, the desc API), each validation rule's message, LRN's window limit."""

from __future__ import annotations

import numpy as np
import pytest
from conformance import limited

import gpudml as dml
from gpudml import reference
from gpudml.ops import spec_named
from gpudml.ops.normalization import LRN_SUPPORT, MeanVarianceNormalization1OperatorDesc
from gpudml.testing import assert_within

T, FL = dml.DataType, dml.FeatureLevel
MVN1 = spec_named("mean_variance_normalization1")
rng = np.random.default_rng(31)


def check(device, spec, desc, arrays, strategies=None):
    """Run `desc` under each eligible strategy (or those given); within the spec's precision."""
    want = spec.reference_outputs(desc, arrays)[0]
    tolerance = spec.tolerance(want, arrays, spec.arguments(desc))
    operator = device.create_operator(desc)
    for strategy in strategies or device.compile_operator(operator).strategies:
        (got,) = device.compile_operator(operator, strategy).execute(arrays)
        assert_within(got, want, tolerance, f"{spec.key} {strategy}")


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_layer_and_instance_norm_every_strategy(device, dtype):
    """LayerNorm over [C, H, W] (scale and bias of [C, H, W]) and over the last axis,
    InstanceNorm over [H, W] (scale and bias per channel, a fused activation), without
    normalize_variance: each strategy, float32 and float16."""
    x = (rng.normal(size=(2, 3, 5, 7)) * 3 + 5).astype(dtype)
    per_channel = rng.uniform(-2, 2, (3, 1, 1)).astype(dtype)
    whole = rng.uniform(-2, 2, (3, 5, 7)).astype(dtype)
    td = lambda a: dml.TensorDesc(T.from_numpy(a.dtype), a.shape)  # noqa: E731
    cases = [
        (dict(axes=[1, 2, 3]), [whole, whole + 1]),
        (dict(axes=-1), []),
        (dict(axes=[2, 3], fused_activation="relu"), [per_channel, per_channel]),
        (dict(axes=[0, 2], normalize_variance=False, epsilon=0.0), [per_channel, whole]),
    ]
    for kwargs, affine in cases:
        desc = MVN1.infer_output(td(x), *map(td, affine), **kwargs)
        check(device, MVN1, desc, [x, *affine])
        got = dml.mean_variance_normalization(x, *affine, **kwargs, device=device)
        want = reference.mean_variance_normalization(x, *affine, **kwargs)
        assert_within(got, want, MVN1.tolerance(want, [x, *affine], kwargs))


def test_strided_input_and_output(device):
    """A transposed input (strides) and a strided output; scale broadcast by stride 0."""
    x = rng.normal(size=(4, 6)).astype(np.float32)
    inp = dml.TensorDesc(T.FLOAT32, [6, 4], [1, 6])  # x.T, no copy
    out = dml.TensorDesc(T.FLOAT32, [6, 4], [8, 2])
    scale = dml.TensorDesc(T.FLOAT32, [1, 4])
    desc = MeanVarianceNormalization1OperatorDesc(inp, scale, scale, out, [0], True, 1e-5, None)
    s = rng.uniform(1, 2, 4).astype(np.float32)
    operator = device.create_operator(desc)
    for strategy in device.compile_operator(operator).strategies:
        (got,) = device.compile_operator(operator, strategy).execute([x.reshape(-1), s, s])  # buffer contents
        assert got.shape == (6, 4)  # the output's logical elements
        want = reference.mean_variance_normalization(x.T, s, s, axes=[0])
        assert_within(got, want, MVN1.tolerance(want, [x.T, s, s], {"axes": [0]}))


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_rows_of_whole_blocks(device, adapter, dtype):
    """Rows of whole 16-byte blocks, read and written a block at a time by `rows` and
    `chunks` (kernels/normalization.py's _modes): LayerNorm with a scale and bias per column
    (blocks too), chunks of a length rounded up to whole blocks, InstanceNorm with a scale
    and bias per channel (loaded once a row), an output whose rows are not whole blocks
    (stored element by element), an input whose rows start past a gap, in 256-byte bindings."""
    td = lambda a: dml.TensorDesc(T.from_numpy(a.dtype), a.shape)  # noqa: E731
    x = (rng.normal(size=(5, 24)) * 2 + 3).astype(dtype)
    col = rng.uniform(0.5, 2, (1, 24)).astype(dtype)
    desc = MVN1.infer_output(td(x), td(col), td(col), axes=[1])
    for dev in (device, limited(adapter)):
        check(dev, MVN1, desc, [x, col, col + 1])
        operator = dev.create_operator(desc)
        (got,) = dev.compile_operator(operator, "chunks", options={"chunks": 4}).execute([x, col, col + 1])
        want = MVN1.reference_outputs(desc, [x, col, col + 1])[0]
        assert_within(got, want, MVN1.tolerance(want, [x, col, col + 1], {"axes": [1]}), "chunks=4")
    image = (rng.normal(size=(2, 3, 4, 8)) + 1).astype(dtype)
    channel = rng.uniform(-2, 2, (1, 3, 1, 1)).astype(dtype)
    check(device, MVN1, MVN1.infer_output(td(image), td(channel), td(channel), axes=[2, 3]), [image, channel, channel])
    t = T.from_numpy(dtype)
    padded = dml.TensorDesc(t, [5, 24], [32, 1])  # rows of 24 elements 32 apart: whole blocks still
    gapped = dml.TensorDesc(t, [5, 24], [25, 1])  # rows not on blocks: element by element
    for inp, out in ((padded, gapped), (gapped, padded)):
        desc = MeanVarianceNormalization1OperatorDesc(inp, None, None, out, [1], True, 1e-5, None)
        raw = np.zeros(inp.required_elements, dtype)
        raw[np.arange(5)[:, None] * inp.strides[0] + np.arange(24)] = x
        for strategy in device.compile_operator(device.create_operator(desc)).strategies:
            (got,) = device.compile_operator(device.create_operator(desc), strategy).execute([raw])
            want = reference.mean_variance_normalization(x, axes=[1])
            assert_within(got, want, MVN1.tolerance(want, [x], {"axes": [1]}), strategy)


def test_row_past_the_loop_limit(device):
    """One row of 70,000 elements (llvmpipe ends an invocation's loops after 65,535
    iterations): `chunks` on CPU adapters; LP too."""
    x = (rng.normal(size=(1, 70_000)) + 3).astype(np.float32)
    y = dml.mean_variance_normalization(x, axes=[1], device=device)
    want = reference.mean_variance_normalization(x, axes=[1])
    assert_within(y, want, MVN1.tolerance(want, [x], {"axes": [1]}))
    lp = spec_named("lp_normalization")
    y = dml.lp_normalization(x, 1, device=device)
    want = reference.lp_normalization(x, 1)
    assert_within(y, want, lp.tolerance(want, [x], {"axis": 1}))


def test_two_pass_variance_far_from_zero(device):
    """Values 1e4 + N(0, 1) in float32: E[x^2] - mean^2 would lose every digit (1e8 with 7
    digits); the two passes keep the normalized values within 5e-3 (the float32 mean's own
    rounding, about 1e-3 of the unit variance), and within the documented bound."""
    x = (1e4 + rng.normal(size=(8, 512))).astype(np.float32)
    got = dml.mean_variance_normalization(x, axes=[1], device=device)
    want = reference.mean_variance_normalization(x, axes=[1])
    np.testing.assert_allclose(got, want, atol=5e-3)
    assert_within(got, want, MVN1.tolerance(want, [x], {"axes": [1]}))


def test_bias_without_scale_is_a_description(device):
    """From FL 5_2 a bias alone runs (the desc API); before, it is refused; the functional
    form asks for a scale."""
    x = rng.normal(size=(2, 3, 4)).astype(np.float32)
    b = rng.normal(size=(1, 3, 1)).astype(np.float32)
    td = dml.TensorDesc(T.FLOAT32, x.shape)
    desc = MeanVarianceNormalization1OperatorDesc(td, None, dml.TensorDesc(T.FLOAT32, b.shape), td, [2])
    (got,) = device.compile_operator(device.create_operator(desc)).execute([x, b])
    want = reference.mean_variance_normalization(x, np.ones_like(b), b, axes=[2])
    assert_within(got, want, MVN1.tolerance(want, [x, np.ones_like(b), b], {"axes": [2]}))
    with pytest.raises(dml.InvalidArgumentError, match="bias_tensor without scale_tensor: at FL_5_1"):
        MVN1.validate(desc, FL.FL_5_1)
    with pytest.raises(dml.InvalidArgumentError, match="bias without scale"):
        dml.mean_variance_normalization(x, bias=b, axes=[2], device=device)


def td(*sizes, dt=T.FLOAT32):
    return dml.TensorDesc(dt, list(sizes))


@pytest.mark.parametrize("make, level, message", [
    (lambda: MVN1.infer_output(td(2, 3), axes=[0]), FL.FL_3_1, None),
    (lambda: MeanVarianceNormalization1OperatorDesc(td(2, 3), None, None, td(2, 3), [1, 1]), FL.FL_6_4,
     r"axes\[1\] = 1 repeats an axis"),
    (lambda: MeanVarianceNormalization1OperatorDesc(td(2, 3), None, None, td(2, 3), [2]), FL.FL_6_4,
     r"axes\[0\] = 2 is outside \[0, 1\]"),
    (lambda: MeanVarianceNormalization1OperatorDesc(td(2, 3), None, None, td(2, 3), []), FL.FL_6_4,
     "at least one axis"),
    (lambda: MeanVarianceNormalization1OperatorDesc(td(2, 3), td(2, 2), td(2, 3), td(2, 3), [1]), FL.FL_6_4,
     r"scale_tensor.sizes\[1\] = 2 must be 1 \(broadcast\) or input_tensor.sizes\[1\] = 3"),
    (lambda: MeanVarianceNormalization1OperatorDesc(td(2, 3, 4, 5), td(1, 1, 1, 5), td(1, 1, 1, 5),
                                                    td(2, 3, 4, 5), [3]), FL.FL_3_1,
     r"scale_tensor.sizes\[1\] = 1 must equal input_tensor.sizes\[1\] = 3 \(ChannelCount\) at FL_3_1"),
    (lambda: MeanVarianceNormalization1OperatorDesc(td(2, 3), None, None, td(2, 3), [1], True, float("nan")),
     FL.FL_6_4, "epsilon = nan must be finite and >= 0"),
    (lambda: MeanVarianceNormalization1OperatorDesc(td(2, 3), None, None, td(2, 3), [1], True, -1.0), FL.FL_6_4,
     "epsilon = -1.0 must be finite and >= 0"),
    (lambda: MeanVarianceNormalization1OperatorDesc(td(2, 3), None, None, td(2, 3), [1], 2), FL.FL_6_4,
     "normalize_variance: expected True or False"),
    (lambda: MeanVarianceNormalization1OperatorDesc(td(2, 3), td(1, 3, dt=T.FLOAT16), td(1, 3), td(2, 3), [1]),
     FL.FL_6_4, "scale_tensor.data_type FLOAT16 must equal input_tensor.data_type FLOAT32"),
    (lambda: MVN1.infer_output(td(2, 3), axes=[1]), FL.FL_2_1, "DimensionCount 2 is not supported at FL_2_1"),
    (lambda: spec_named("mean_variance_normalization0").infer_output(td(1, 2, 3)), FL.FL_6_4,
     "DimensionCount 3 is not supported"),
    (lambda: spec_named("lp_normalization").infer_output(td(2, 3), p=3), FL.FL_6_4, "p = 3 must be 1 or 2"),
    (lambda: spec_named("lp_normalization").infer_output(td(2, 3), epsilon=-1), FL.FL_6_4, "epsilon = -1.0"),
    (lambda: spec_named("local_response_normalization").infer_output(td(1, 2, 3, 4), local_size=0), FL.FL_6_4,
     "local_size = 0 must be at least 1"),
    (lambda: spec_named("local_response_normalization").infer_output(td(1, 2, 3, 4), local_size=3,
                                                                      beta=float("inf")), FL.FL_6_4,
     "beta = inf must be finite"),
])
def test_bad_descriptions(make, level, message):
    """Each rule's InvalidArgumentError names the field, the rule and the values (before any GPU work)."""
    if message is None:
        desc = make()
        next(s for s in dml.SPECS if isinstance(desc, s.desc)).validate(desc, level)
        return
    with pytest.raises(dml.InvalidArgumentError, match=message) as info:
        desc = make()  # (a field of the wrong kind: the desc itself refuses it)
        next(s for s in dml.SPECS if isinstance(desc, s.desc)).validate(desc, level)
    assert any(s.name in str(info.value) for s in dml.SPECS)


def test_lrn_modes_and_window_limit(device):
    """Across channels (ONNX's) and over H x W; a window beyond the loop budget is an UnsupportedError."""
    x = rng.normal(size=(2, 7, 5, 6)).astype(np.float32)
    spec = spec_named("local_response_normalization")
    for kwargs in (dict(local_size=4), dict(local_size=3, cross_channel=False, beta=-0.5, bias=2.0)):
        desc = spec.infer_output(dml.TensorDesc(T.FLOAT32, x.shape), **kwargs)
        check(device, spec, desc, [x])
    assert LRN_SUPPORT.introduced == FL.FL_1_0
    wide = spec.infer_output(dml.TensorDesc(T.FLOAT32, [1, 1, 300, 300]), local_size=300, cross_channel=False)
    with pytest.raises(dml.UnsupportedError, match="loop budget"):
        device.compile_operator(device.create_operator(wide))


# ------------------------------------------------------------------------------ MEAN_VARIANCE_NORMALIZATION2
MVN2 = spec_named("mean_variance_normalization2")


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
@pytest.mark.parametrize("shape, axes", [((3, 5, 40), [2]), ((1, 70_000), [1]), ((2, 3, 4, 5), [1, 3])])
def test_mvn2_use_mean_and_use_variance_every_strategy(device, dtype, shape, axes):
    """UseMean FALSE (RMSNorm: x / sqrt(mean(x^2) + eps) * scale + bias, checked against that
    formula in float64 too) and UseVariance FALSE, every strategy: a last axis, a row past
    llvmpipe's 65,535 loop iterations (`chunks`), two axes apart; a mean far from 0."""
    x = (rng.normal(size=shape) * 2 + 3).astype(dtype)
    scale = rng.normal(size=shape[-1:]).astype(dtype)
    bias = rng.normal(size=shape[-1:]).astype(dtype)
    dt = T.FLOAT32 if dtype == np.float32 else T.FLOAT16
    for use_mean in (True, False):
        for use_variance in (True, False):
            desc = MVN2.infer_output(dml.TensorDesc(dt, shape), dml.TensorDesc(dt, scale.shape),
                                     dml.TensorDesc(dt, bias.shape), axes=axes, use_mean=use_mean,
                                     use_variance=use_variance, epsilon=1e-3)
            check(device, MVN2, desc, [x, scale, bias])
    wide = x.astype(np.float64)
    rms = wide / np.sqrt((wide * wide).mean(axis=tuple(axes), keepdims=True) + 1e-3) * scale + bias
    got = dml.mean_variance_normalization2(x, scale, bias, axes=axes, use_mean=False, epsilon=1e-3, device=device)
    np.testing.assert_allclose(np.asarray(got, np.float64), rms, atol=2e-2 if dtype == np.float16 else 1e-5)


def test_mvn2_transposed_input_and_bias_alone(device):
    """A transposed input; a bias without a scale runs as a description (the functional form asks
    for a scale, as version 1's)."""
    x = rng.normal(size=(6, 4)).astype(np.float32).T  # (4, 6)
    b = rng.normal(size=(1, 6)).astype(np.float32)
    tdx = dml.TensorDesc(T.FLOAT32, x.shape)
    desc = dml.MeanVarianceNormalization2OperatorDesc(tdx, None, dml.TensorDesc(T.FLOAT32, b.shape), tdx, [1],
                                                      use_mean=False)
    (got,) = device.compile_operator(device.create_operator(desc)).execute([np.ascontiguousarray(x), b])
    want = MVN2.reference(x, None, b, axes=[1], use_mean=False)
    assert_within(got, want, MVN2.tolerance(want, [x, None, b], {"axes": [1], "use_mean": False}))
    got = dml.mean_variance_normalization2(x, np.ones_like(b), b, axes=[1], use_mean=False, device=device)
    assert_within(got, want, MVN2.tolerance(want, [x, None, b], {"axes": [1], "use_mean": False}))
    with pytest.raises(dml.InvalidArgumentError, match="mean_variance_normalization2: bias without scale"):
        dml.mean_variance_normalization2(x, bias=b, axes=[1], device=device)


@pytest.mark.parametrize("make, level, message", [
    (lambda: MVN2.infer_output(td(2, 3), axes=[1], use_mean=False), FL.FL_6_3, None),
    (lambda: MVN2.infer_output(td(2, 3), axes=[1], use_mean=False), FL.FL_6_2,
     r"not available at feature level FL_6_2 \(introduced at FL_6_3\)"),
    (lambda: MVN2.infer_output(td(2, 3), axes=[1], use_mean="no"), FL.FL_6_4, "use_mean: expected True or False"),
    (lambda: MVN2.infer_output(td(2, 3), axes=[1], use_variance=2), FL.FL_6_4,
     "use_variance: expected True or False"),
    (lambda: dml.MeanVarianceNormalization2OperatorDesc(td(2, 3), None, None, td(2, 3), [1, 1]), FL.FL_6_4,
     r"axes\[1\] = 1 repeats an axis"),
    (lambda: MVN2.infer_output(td(2, 3), axes=[1], epsilon=-1.0), FL.FL_6_4, "epsilon = -1.0 must be finite"),
    (lambda: MVN2.infer_output(td(2, 3), td(2), axes=[1]), FL.FL_6_4,
     r"scale_tensor.sizes\[1\] = 2 must be 1 \(broadcast\) or input_tensor.sizes\[1\] = 3"),
])
def test_mvn2_bad_descriptions(make, level, message):
    """MEAN_VARIANCE_NORMALIZATION2's rules: FL 6_3, BOOLs, version 1's axes, epsilon and broadcasting."""
    test_bad_descriptions(make, level, message)
