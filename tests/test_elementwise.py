"""What is special about the element-wise and activation operators (gpudml/ops/elementwise.py);
the conformance kit (tests/conformance.py) covers every row's tables, layouts (stride-0
broadcasts included), strategies and segments."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from conftest import assert_bits_equal

import gpudml as dml
from gpudml import reference
from gpudml.ops import spec_named
from gpudml.ops.elementwise import TABLE, broadcast_descs, integer_bounds

T, FL = dml.DataType, dml.FeatureLevel
NAN, INF = math.nan, math.inf


# ============================================================================ the table and its names
def test_names_follow_the_api_rule():
    """API.md 11: the newest version takes the plain name, the older its number (ADD1 is
    dml.add, ADD is add0); an activation named as an element-wise operator is
    activation_<x>; the descs are ElementWise<X>OperatorDesc / Activation<X>OperatorDesc."""
    assert dml.add.__wrapped__ is spec_named("add1").functional
    assert spec_named("add0").name == "ElementWiseAdd" and dml.ElementWiseAdd1OperatorDesc.ROW.key == "add1"
    assert spec_named("tanh").name == "ElementWiseTanh" and spec_named("activation_tanh").name == "ActivationTanh"
    assert dml.ActivationLeakyReluOperatorDesc.ROW.functional == "leaky_relu"
    assert len({r.functional for r in TABLE}) == len({r.key for r in TABLE}) == len(TABLE)
    for row in TABLE:  # the page a row names is its spec's (whose excerpt the kit checks)
        assert f"ns-directml-dml_{row.page}" == f"ns-directml-{spec_named(row.key).page.lower()}.md"


def test_the_precision_table_states_every_float_row():
    """docs/elementwise.md lists each float operator with its row's precision sentence."""
    page = (Path(__file__).parent.parent / "docs" / "elementwise.md").read_text(encoding="utf-8").replace("\\|", "|")
    for row in TABLE:
        if any(t.is_float for _, _, *sets in row.support for types in sets for t in types):
            assert f"| `dml.{row.functional}` | DML_{row.dml} | {row.precision} |" in page, row.key


# ============================================================================ broadcasting
def test_functional_forms_broadcast_as_numpy_by_stride_0_descs(device):
    a = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    b = np.array([[10], [20], [30]], np.float32)
    assert_bits_equal(dml.add(a, b, device=device), a + b)
    assert_bits_equal(dml.add(b, a, device=device), b + a)
    assert_bits_equal(dml.multiply(np.float32([2.0]), a, device=device), 2 * a)
    # The desc the call runs: b read with stride 0 on the axes it lacks (no copy).
    given = [dml.TensorDesc(T.FLOAT32, [2, 3, 4]), dml.TensorDesc(T.FLOAT32, [3, 1])]
    descs = broadcast_descs("add", given, ["a", "b"])
    assert descs[1].sizes == (2, 3, 4) and descs[1].strides == (0, 1, 0) and descs[1].total_tensor_size_in_bytes == 12
    # Tensors in, a Tensor out.
    out = dml.add(device.tensor(a), b, device=device)
    assert isinstance(out, dml.Tensor) and np.array_equal(out.numpy(), a + b)


def test_shapes_that_do_not_broadcast_are_named():
    with pytest.raises(dml.InvalidArgumentError, match=r"add: the shapes do not broadcast \(a \[2, 3\], b \[4\]"):
        dml.add(np.zeros((2, 3), np.float32), np.zeros(4, np.float32))


def test_descs_are_strict_as_directml():
    """A desc takes one set of sizes for every tensor (a broadcast is a stride of 0) and one type."""
    t = dml.TensorDesc(T.FLOAT32, [2, 3])
    with pytest.raises(dml.InvalidArgumentError, match=r"ElementWiseAdd1: b_tensor.sizes \[1, 3\] must equal"):
        dml.Device().create_operator(dml.ElementWiseAdd1OperatorDesc(t, dml.TensorDesc(T.FLOAT32, [1, 3]), t))
    with pytest.raises(dml.InvalidArgumentError, match=r"b_tensor.data_type FLOAT16 must equal a_tensor.data_type"):
        dml.Device().create_operator(dml.ElementWiseAdd1OperatorDesc(t, dml.TensorDesc(T.FLOAT16, [2, 3]), t))
    broadcast = dml.TensorDesc(T.FLOAT32, [2, 3], [0, 1])
    op = dml.Device().create_operator(dml.ElementWiseAdd1OperatorDesc(t, broadcast, t))
    assert op is not None


# ============================================================================ ScaleBias, fused activations
def test_scale_bias_applies_before_the_function(device):
    x = np.array([0.0, 1.5, 4.0, 12.0], np.float32)
    got = dml.sqrt(x, scale_bias=(2.0, 1.0), device=device)
    np.testing.assert_allclose(got, np.sqrt(2 * x + 1), rtol=1e-6)
    assert_bits_equal(dml.identity(x, scale_bias=dml.ScaleBias(0.5, -1.0), device=device), x * 0.5 - 1)
    assert_bits_equal(dml.clip0(x, 0.0, 5.0, scale_bias=(1.0, -2.0), device=device), np.clip(x - 2, 0, 5))
    with pytest.raises(dml.InvalidArgumentError, match="ElementWiseIdentity: scale_bias applies to float tensors"):
        dml.identity(np.arange(3, dtype=np.int32), scale_bias=(2.0, 0.0), device=device)
    with pytest.raises(dml.InvalidArgumentError, match=r"ElementWiseSqrt: scale_bias.scale = 1e\+300 is beyond"):
        dml.sqrt(x, scale_bias=(1e300, 0.0), device=device)


def test_fused_activation_applies_to_the_result(device):
    a = np.linspace(-3, 3, 13, dtype=np.float32)
    b = np.float32([0.5])
    assert_bits_equal(dml.add(a, b, fused_activation="relu", device=device), np.maximum(a + b, 0))
    leaky = dml.add(a, b, fused_activation=dml.FusedActivation("leaky_relu", alpha=0.25), device=device)
    assert_bits_equal(leaky, np.where(a + b >= 0, a + b, np.float32(0.25) * (a + b)))
    np.testing.assert_allclose(dml.add(a, b, fused_activation="sigmoid", device=device), 1 / (1 + np.exp(-(a + b))),
                               rtol=1e-6)
    assert_bits_equal(reference.add(a, b, fused_activation="relu"), np.maximum(a + b, 0))
    assert dml.FusedActivation("elu") == dml.FusedActivation("ELU", alpha=1.0)
    with pytest.raises(dml.InvalidArgumentError, match="'softmax' is not an activation that fuses"):
        dml.FusedActivation("softmax")
    with pytest.raises(dml.InvalidArgumentError, match="relu has no attribute 'alpha'"):
        dml.FusedActivation("relu", alpha=0.1)
    with pytest.raises(dml.InvalidArgumentError, match="ElementWiseAdd1: fused_activation: 'bogus'"):
        dml.add(a, b, fused_activation="bogus", device=device)


# ============================================================================ integers
def test_integers_wrap_in_their_type(device):
    i8 = np.array([127, -128, 100, -1], np.int8)
    assert_bits_equal(dml.add0(i8, np.int8([1]), device=device), np.array([-128, -127, 101, 0], np.int8))
    assert_bits_equal(dml.multiply(i8, np.int8([2]), device=device), np.array([-2, 0, -56, -2], np.int8))
    assert_bits_equal(dml.negate(i8, device=device), np.array([-127, -128, -100, 1], np.int8))
    assert_bits_equal(dml.abs(i8, device=device), np.array([127, -128, 100, 1], np.int8))
    big = np.array([2**63 - 1, -(2**63), 3, -7], np.int64)
    assert_bits_equal(dml.add0(big, np.int64([1]), device=device), np.array([-(2**63), -(2**63) + 1, 4, -6], np.int64))
    assert_bits_equal(dml.multiply(big, np.int64([3]), device=device), big * np.int64(3))
    assert_bits_equal(dml.subtract(np.uint64([0, 5]), np.uint64([1, 7]), device=device),
                      np.array([2**64 - 1, 2**64 - 2], np.uint64))
    # Division truncates toward zero; a / 0 is a (WGSL's rule); INT_MIN / -1 wraps.
    num = np.array([7, -7, 5, -(2**63), 2**63 - 1], np.int64)
    den = np.array([2, 2, 0, -1, -3], np.int64)
    want = np.array([3, -3, 5, -(2**63), -(2**63 - 1) // 3 + 1], np.int64)
    assert_bits_equal(dml.divide(num, den, device=device), want)
    assert_bits_equal(reference.divide(num, den), want)
    assert_bits_equal(dml.divide(np.uint64([2**64 - 1, 9]), np.uint64([2**32, 0]), device=device),
                      np.array([2**32 - 1, 9], np.uint64))
    assert_bits_equal(dml.mean(np.int32([2**31 - 1, -3]), np.int32([2**31 - 1, 2]), device=device),
                      np.int32([2**31 - 1, -1]))


def test_clip0_of_integers_keeps_the_integers_within_the_bounds(device):
    x = np.arange(-4, 5, dtype=np.int8)
    assert_bits_equal(dml.clip0(x, -1.5, 2.5, device=device), np.clip(x, -1, 2))
    assert_bits_equal(dml.clip0(x, NAN, 1.0, device=device), np.minimum(x, 1))
    assert integer_bounds(-1e30, 1e30, np.uint8) == (0, 255) and integer_bounds(3.0, -INF, np.int16) == (3, -32768)
    u64 = np.array([0, 2**63, 2**64 - 1], np.uint64)
    assert_bits_equal(dml.clip0(u64, 1.0, 2.0**63, device=device), np.array([1, 2**63, 2**63], np.uint64))


# ============================================================================ special values
def test_special_values(device):
    """NaN, infinities and -0.0 as the module docstring says: IEEE arithmetic, and HLSL's
    maxNum/minNum for MAX, MIN, CLIP and RELU."""
    x = np.array([NAN, INF, -INF, -0.0, 0.0, 1.0, -1.0], np.float32)
    y = np.array([1.0, NAN, 2.0, 0.0, -0.0, NAN, -INF], np.float32)

    def check(got, want):
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
        ok = ~np.isnan(want)
        np.testing.assert_array_equal(got[ok], want[ok])  # (-0.0 == 0.0: WGSL leaves a zero's sign open)

    f = np.float32
    check(dml.max(x, y, device=device), f([1.0, INF, 2.0, 0.0, -0.0, 1.0, -1.0]))
    check(dml.min(x, y, device=device), f([1.0, INF, -INF, 0.0, -0.0, 1.0, -INF]))
    check(dml.relu(x, device=device), f([0.0, INF, 0.0, 0.0, 0.0, 1.0, 0.0]))
    check(dml.clip0(x, -0.5, 0.5, device=device), f([-0.5, 0.5, -0.5, -0.0, 0.0, 0.5, -0.5]))
    check(dml.add(x, y, device=device), x + y)
    check(dml.negate(x, device=device), -x)
    check(dml.recip(f([-0.0, 0.0, INF, -INF]), device=device), f([-INF, INF, 0.0, -0.0]))
    check(dml.sqrt(f([-1.0, -0.0, INF]), device=device), f([NAN, -0.0, INF]))
    check(dml.log(f([0.0, -1.0, INF, 1.0]), device=device), f([-INF, NAN, INF, 0.0]))
    check(dml.exp(f([-INF, INF, NAN, 0.0]), device=device), f([0.0, INF, NAN, 1.0]))
    check(dml.sigmoid(f([-INF, INF]), device=device), f([0.0, 1.0]))
    check(dml.tanh(f([-INF, INF, 30.0, -0.0]), device=device), f([-1.0, 1.0, 1.0, -0.0]))
    assert_bits_equal(dml.logical_equals(x, x, device=device), np.array([0, 1, 1, 1, 1, 1, 1], np.uint8))
    assert_bits_equal(dml.logical_greater_than(x, y, device=device, output_data_type="UINT32"),
                      (x > y).astype(np.uint32))
    # float16 computes in float32 and rounds once: beyond 65504 is inf.
    h = np.float16([65504.0, 1.0, 2.0**-24])
    check(dml.add(h, h, device=device), np.float16([INF, 2.0, 2.0**-23]))
    # IDENTITY copies bits: NaN payloads too.
    payload = np.array([0x7FA00001, 0xFFC12345], np.uint32).view(np.float32)
    assert_bits_equal(dml.identity(payload, device=device), payload)


def test_float64_computes_where_the_adapter_has_shader_f64(device):
    x = np.array([1.0 + 2.0**-40, -3.25], np.float64)
    if device.caps.has("shader-f64") and device.caps.has("shader-int64"):
        assert_bits_equal(dml.identity(x, scale_bias=(2.0, 0.5), device=device), x * 2 + 0.5)
    else:
        with pytest.raises(dml.UnsupportedError, match=r"ElementWiseIdentity: FLOAT64 arithmetic needs .*"
                                                       + device.caps.name.split(" (")[0]):
            dml.identity(x, scale_bias=(2.0, 0.5), device=device)
    assert_bits_equal(dml.identity(x, device=device), x)  # a copy computes nothing: every adapter


# ============================================================================ bad input
def test_bad_calls_are_invalid_arguments():
    x = np.ones(4, np.float32)
    with pytest.raises(dml.InvalidArgumentError, match=r"^add: missing a required argument: 'b'"):
        dml.add(x)
    with pytest.raises(dml.InvalidArgumentError, match=r"^relu: too many positional arguments"):
        dml.relu(x, x)
    with pytest.raises(dml.InvalidArgumentError, match=r"ActivationLeakyRelu: alpha: expected a number"):
        dml.leaky_relu(x, alpha="0.1")
    with pytest.raises(dml.InvalidArgumentError, match=r"ActivationLinear: alpha = 1e\+300 is beyond FLOAT"):
        dml.linear(x, alpha=1e300)
    with pytest.raises(dml.InvalidArgumentError, match="ElementWiseAdd1: a_tensor.data_type INT32 is not supported"):
        dml.add(np.ones(3, np.int32), np.ones(3, np.int32))


def test_tables_name_the_level_that_would_accept(at_level):
    """A type a level does not list: the message names the level that would take it."""
    with pytest.raises(dml.InvalidArgumentError, match=r"ElementWiseAdd: a_tensor.data_type INT64 is not supported at "
                                                       r"FL_3_0 .*it needs FL_4_1 or later"):
        dml.add0(np.ones(3, np.int64), np.ones(3, np.int64), device=at_level(FL.FL_3_0))
    with pytest.raises(dml.InvalidArgumentError, match="ActivationGelu: not available at feature level FL_5_0"):
        dml.gelu(np.ones(3, np.float32), device=at_level(FL.FL_5_0))


def test_softplus_steepness_below_1_from_fl_6_4(at_level):
    """The page: Steepness cannot be less than 1; the feature-level history lifts that at FL_6_4."""
    x = np.linspace(-2, 2, 5, dtype=np.float32)
    with pytest.raises(dml.InvalidArgumentError, match=r"ActivationSoftplus: steepness = 0.5 must be at least 1.0 at "
                                                       r"FL_6_3; FL_6_4 and later take any"):
        dml.softplus(x, steepness=0.5, device=at_level(FL.FL_6_3))
    got = dml.softplus(x, steepness=0.5, device=at_level(FL.FL_6_4))
    np.testing.assert_allclose(got, np.logaddexp(0, 0.5 * x) / 0.5, rtol=1e-5)


# ============================================================================ strategies
def test_strategies_by_layout_and_class(vulkan_device):
    """A packed call of one shape is one flat loop in 16-byte blocks (first choice); a
    broadcast one goes element by element, runs first on a CPU adapter."""
    device = vulkan_device
    packed = dml.ElementWiseAdd1OperatorDesc(*[dml.TensorDesc(T.FLOAT32, [2, 3, 64])] * 3)
    compiled = device.compile_operator(device.create_operator(packed))
    assert compiled.strategies[0] == "blocks" and "array<u32, 1>" not in compiled.wgsl[0]
    elements = device.compile_operator(device.create_operator(packed), "elements")
    assert "array<u32, 1>" in elements.wgsl[0]  # three axes merged into one
    t = dml.TensorDesc(T.FLOAT32, [2, 3, 64])
    broadcast = dml.ElementWiseAdd1OperatorDesc(t, dml.TensorDesc(T.FLOAT32, [2, 3, 64], [0, 64, 1]), t)
    order = device.compile_operator(device.create_operator(broadcast)).strategies
    assert "blocks" not in order and order[0] == ("runs" if device.caps.is_software else "elements")
