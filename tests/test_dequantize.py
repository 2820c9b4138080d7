"""DEQUANTIZE (DML_DEQUANTIZE, FL 6.3): what the conformance kit does not cover: a worked
blocked example, the reference against ONNX's DequantizeLinear (per tensor, per axis,
blocked, int4/uint4), the 4-bit packing (ml_dtypes arrays, bytes with bits=4, packed and
one-a-byte zero points), a strided input, FLOAT16 at its documented bound, both adapter
classes, and every bad input as an InvalidArgumentError before any GPU work."""

from __future__ import annotations

import dataclasses

import ml_dtypes
import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper
from onnx.reference import ReferenceEvaluator

import gpudml as dml
from gpudml import reference
from gpudml.ops import dequantize as dq
from gpudml.testing import assert_within

X = np.array([[-8, -1, 0, 7], [1, 2, 3, 4]], np.int8)
SCALE = np.array([[0.5, 2.0], [0.25, 1.0]], np.float32)
ZERO = np.array([[0, 1], [-1, 2]], np.int8)
WANT = np.array([[-4.0, -0.5, -2.0, 12.0], [0.5, 0.75, 1.0, 2.0]], np.float32)


def _onnx_dequantize(x, scale, zero, axis, block_size) -> np.ndarray:
    """ONNX's reference DequantizeLinear (opset 21)."""
    types = {np.dtype(np.int8): TensorProto.INT8, np.dtype(np.uint8): TensorProto.UINT8,
             np.dtype(ml_dtypes.int4): TensorProto.INT4, np.dtype(ml_dtypes.uint4): TensorProto.UINT4}
    names = ["x", "s"] + (["z"] if zero is not None else [])
    node = helper.make_node("DequantizeLinear", names, ["y"], axis=axis, block_size=block_size)
    inputs = [helper.make_tensor_value_info("x", types[x.dtype], None),
              helper.make_tensor_value_info("s", TensorProto.FLOAT, None)]
    if zero is not None:
        inputs.append(helper.make_tensor_value_info("z", types[zero.dtype], None))
    graph = helper.make_graph([node], "g", inputs, [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])
    feeds = {"x": x, "s": scale} | ({"z": zero} if zero is not None else {})
    return ReferenceEvaluator(model).run(None, feeds)[0]


def test_blocked_example(device):
    """Blocks of 2 along axis 1 with a zero point: 8-bit, int4 (ml_dtypes), and int4 bytes with bits=4."""
    np.testing.assert_array_equal(reference.dequantize(X, SCALE, ZERO, axis=1, block_size=2), WANT)
    np.testing.assert_array_equal(dml.dequantize(X, SCALE, ZERO, axis=1, block_size=2, device=device), WANT)
    x4, z4 = X.astype(ml_dtypes.int4), ZERO.astype(ml_dtypes.int4)
    np.testing.assert_array_equal(dml.dequantize(x4, SCALE, z4, axis=1, block_size=2, device=device), WANT)
    packed, zpacked = dq.pack4(X).view(np.int8), dq.pack4(ZERO).view(np.int8)
    assert packed.shape == (2, 2) and packed.view(np.uint8)[0, 0] == 0xF8  # -1 high, -8 low
    got = dml.dequantize(device.tensor(packed), SCALE, zpacked, axis=1, block_size=2, bits=4, device=device)
    np.testing.assert_array_equal(got.numpy(), WANT)


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, ml_dtypes.int4, ml_dtypes.uint4])
@pytest.mark.parametrize("form", ["tensor", "axis", "blocked"])
def test_reference_is_onnx(dtype, form):
    """The reference is ONNX's DequantizeLinear: per tensor, per axis 0, blocked (16) on axis 1."""
    rng = np.random.default_rng(3)
    lo, hi = (-8, 8) if np.dtype(dtype).name == "int4" else (0, 16) if np.dtype(dtype).name == "uint4" else (
        (-128, 128) if dtype == np.int8 else (0, 256))
    x = rng.integers(lo, hi, (4, 32)).astype(dtype)
    shape, axis, block = {"tensor": ([], 1, 0), "axis": ([4], 0, 0), "blocked": ([4, 2], 1, 16)}[form]
    scale = (2.0 ** rng.uniform(-6, 2, shape)).astype(np.float32)
    zero = rng.integers(lo, hi, shape).astype(dtype)
    want = _onnx_dequantize(x, scale, zero, axis, block)
    scale_arg, zero_arg = (scale.reshape(1), zero.reshape(1)) if form == "tensor" else (scale, zero)
    got = reference.dequantize(x, scale_arg, zero_arg, axis=axis if form != "tensor" else None,
                               block_size=block or None)
    np.testing.assert_array_equal(got, want)


@pytest.mark.any_class  # both classes' Devices made here: the GPU-class run would repeat them
@pytest.mark.parametrize("adapter_class", ["cpu", "gpu"])
def test_int4_weights_both_classes(adapter, adapter_class):
    """A [64, 128] uint4 weight in blocks of 32 with packed zero points, strategy by class."""
    device = dml.Device(adapter=adapter, adapter_class=adapter_class)
    rng = np.random.default_rng(4)
    w = rng.integers(0, 16, (64, 128)).astype(ml_dtypes.uint4)
    scale = (2.0 ** rng.uniform(-8, 0, (64, 4))).astype(np.float32)
    zero = rng.integers(0, 16, (64, 4)).astype(ml_dtypes.uint4)
    want = _onnx_dequantize(w, scale, zero, 1, 32)
    got = dml.dequantize(w, scale, zero, axis=1, block_size=32, device=device)
    np.testing.assert_array_equal(got, want)


def test_strided_input_and_broadcast_scale(device):
    """An input read through strides (a transposed view), a per-axis scale broadcast."""
    x = np.arange(-12, 12, dtype=np.int8).reshape(4, 6)
    t = device.tensor(x.T.copy())  # [6, 4]
    desc = dml.TensorDesc(dml.DataType.INT8, [4, 6], [1, 4])
    scale = np.array([0.5, 1.0, 2.0, 4.0], np.float32)
    op = dq.infer_output(desc, dml.TensorDesc(dml.DataType.FLOAT32, [4]), axis=0)
    compiled = device.compile_operator(device.create_operator(op))
    (got,) = compiled.execute([t, scale])
    np.testing.assert_array_equal(got, x.astype(np.float32) * scale[:, None])


def test_float16_within_its_bound(device):
    """FLOAT16 scale and output: within 0.5 ULP of float16 + 2^-24 relative of the exact product."""
    rng = np.random.default_rng(5)
    x = rng.integers(-128, 128, (8, 64)).astype(np.int8)
    scale = (2.0 ** rng.uniform(-10, 3, (8, 1))).astype(np.float16)
    exact = x.astype(np.float64) * scale.astype(np.float64)
    got = dml.dequantize(x, scale, device=device)
    assert got.dtype == np.float16
    want = exact.astype(np.float16)
    assert_within(got, want, dq.tolerance(want, [x, scale], {}), "Dequantize")


@pytest.mark.any_class
@pytest.mark.parametrize("call, words", [
    (lambda d: dml.dequantize(X, np.ones((2, 1), np.float32), axis=1, block_size=3, device=d),
     ["block_size = 3", "divide"]),
    (lambda d: dml.dequantize(X, np.ones(3, np.float32), axis=1, device=d), ["scale.sizes [3]", "[4]"]),
    (lambda d: dml.dequantize(X, np.ones((2, 3), np.float32), axis=1, block_size=2, device=d), ["scale.sizes [2, 3]"]),
    (lambda d: dml.dequantize(X, np.array([0.0], np.float32), device=d), ["scale[0] = 0.0", "not zero"]),
    (lambda d: dml.dequantize(X, np.array([1.0, np.nan], np.float32), axis=0, device=d), ["scale[1] = nan"]),
    (lambda d: dml.dequantize(X, np.array([np.inf], np.float32), device=d), ["scale[0] = inf"]),
    (lambda d: dml.dequantize(np.zeros((2, 1), ml_dtypes.int4), np.ones(1, np.float32), device=d),
     ["size = 1", "must be 1 or 2", "2 or more"]),
    (lambda d: dml.dequantize(np.zeros((2, 2), np.int8), np.ones(1, np.float32), bits=4, size=2, device=d),
     ["size = 2", "must be 3 or 4", "2 bytes a row"]),
    (lambda d: dml.dequantize(np.zeros((2, 2), np.int8), np.ones(1, np.float32), size=3, device=d),
     ["size = 3", "bits=4"]),
    (lambda d: dml.dequantize(X, np.ones(1, np.float32), np.zeros(1, np.uint8), device=d),
     ["zero_point_tensor.data_type UINT8", "INT8"]),
    (lambda d: dml.dequantize(X, np.ones(1, np.int32), device=d), ["scale_tensor.data_type INT32"]),
    (lambda d: dml.dequantize(X, np.ones(2, np.float32), np.zeros(3, np.int8), axis=0, device=d), ["zero_point"]),
    (lambda d: dml.dequantize(X, np.ones(1, np.float32), bits=2, device=d), ["bits = 2"]),
])
def test_bad_input_before_gpu_work(device, call, words):
    """Each rule as an InvalidArgumentError naming the operator or call, the field and the values."""
    before = device._ctx.pool.allocations
    with pytest.raises(dml.InvalidArgumentError) as info:
        call(device)
    message = str(info.value)
    assert "equantize" in message and all(w in message for w in words), message
    assert device._ctx.pool.allocations == before


@pytest.mark.any_class
def test_desc_rules():
    """The desc's own rules: a 4-bit input's last size half the output's, scale sizes dividing
    the output's, the quantization type matching the tensors."""
    T = dml.TensorDesc
    u8 = dml.DataType.UINT8
    good = dq.infer_output(T(u8, [4, 8]), T(dml.DataType.FLOAT32, [4, 2]), T(u8, [4, 1]), bits=4)
    assert good.bits == 4 and good.output_tensor.sizes == (4, 16) and good.zero_point_tensor.sizes == (4, 1)
    dq.validate(good, dml.FeatureLevel.FL_6_3)
    with pytest.raises(dml.InvalidArgumentError, match="not available at feature level FL_6_2"):
        dq.validate(good, dml.FeatureLevel.FL_6_2)
    for change, words in [
        ({"scale_tensor": T(dml.DataType.FLOAT32, [4, 3])}, "scale_tensor.sizes[1] = 3 must divide"),
        ({"input_tensor": T(dml.DataType.UINT8, [4, 5])}, "input_tensor.sizes [4, 5]"),
        ({"quantization_type": "scale"}, "quantization_type SCALE takes 1"),
        ({"zero_point_tensor": T(dml.DataType.UINT8, [4, 3])}, "zero_point_tensor.sizes [4, 3]"),
    ]:
        with pytest.raises(dml.InvalidArgumentError, match=words.replace("[", r"\[")):
            dq.validate(dataclasses.replace(good, **change), dml.FeatureLevel.FL_6_3)


def test_onnx_int4_type_names():
    """ml_dtypes' 4-bit types are what onnx's numpy_helper gives for INT4/UINT4 initializers."""
    t = onnx.numpy_helper.from_array(np.array([1, -2, 3], ml_dtypes.int4), "w")
    assert onnx.numpy_helper.to_array(t).dtype.name == "int4"


def test_4bit_odd_rows_as_onnx_packs_them(device):
    """An ml_dtypes int4 array of 5 values (ONNX's test_dequantizelinear_int4: 3 bytes, the
    last high nibble unused) and a [2, 3] uint4 one: each row's bytes end in a half byte."""
    x = np.array([0, 1, 7, -4, -8], ml_dtypes.int4)
    got = dml.dequantize(x, np.array(2.0, np.float32), np.array([1], ml_dtypes.int4), device=device)
    np.testing.assert_array_equal(np.asarray(got), [-2.0, 0.0, 12.0, -10.0, -18.0])
    u = np.array([[0, 15, 3], [9, 1, 2]], ml_dtypes.uint4)
    got = dml.dequantize(u, np.array([0.5, 1.0], np.float32), axis=0, device=device)
    np.testing.assert_array_equal(np.asarray(got), [[0.0, 7.5, 1.5], [9.0, 1.0, 2.0]])
