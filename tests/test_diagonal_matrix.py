"""DIAGONAL_MATRIX and DIAGONAL_MATRIX1: what the conformance kit does not cover: the
reference against numpy's triu/tril/eye (ONNX's Trilu and EyeLike as the provider builds
them), the FLOAT value's conversion for integer types, spans at INT32's limits, the optional
input's every type bit for bit (NaN payloads, 64-bit) through strided and broadcast
layouts, both strategies under both adapter classes, each validation rule's message."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import assert_bits_equal, random_bits

import gpudml as dml
from gpudml import reference

DT, FL = dml.DataType, dml.FeatureLevel
INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1


def test_reference_is_numpys_triangles():
    """The page's rule over x - y is numpy's triu (begin INT32_MIN, end k: ONNX's upper Trilu
    as the provider writes it) and tril (begin k + 1, end INT32_MAX), and eye for offsets."""
    x = np.arange(1, 31, dtype=np.float32).reshape(2, 3, 5)
    for k in range(-4, 6):
        assert_bits_equal(reference.diagonal_matrix(x, value=0, diagonal_fill_begin=INT32_MIN, diagonal_fill_end=k),
                          np.triu(x, k))
        assert_bits_equal(reference.diagonal_matrix(x, value=0, diagonal_fill_begin=k + 1,
                                                    diagonal_fill_end=INT32_MAX), np.tril(x, k))
        assert_bits_equal(reference.diagonal_matrix0([1, 2, 3, 5], k), np.broadcast_to(np.eye(3, 5, k), (1, 2, 3, 5))
                          .astype(np.float32))


@pytest.mark.parametrize("data_type", list(DT), ids=lambda t: t.name)
def test_input_is_kept_bit_for_bit_in_every_type(device, data_type):
    """Random bits (NaN payloads, -0.0) off the span, the value (the type's largest) on it:
    64-bit types and FLOAT64 too (moved as bits), through the functional form."""
    x = random_bits(np.random.default_rng(int(data_type)), data_type.numpy, (2, 3, 4, 6))
    value = float(np.finfo(data_type.numpy).max) if data_type.is_float else int(np.iinfo(data_type.numpy).max)
    for begin, end in ((-1, 2), (2, -1), (INT32_MIN, INT32_MAX), (INT32_MAX, INT32_MIN)):
        got = dml.diagonal_matrix(x, value=value, diagonal_fill_begin=begin, diagonal_fill_end=end, device=device)
        want = reference.diagonal_matrix(x, value=value, diagonal_fill_begin=begin, diagonal_fill_end=end)
        assert_bits_equal(got, want)


def test_strided_and_broadcast_inputs(device):
    """The input through its own strides: a transposed view, and one row broadcast (stride 0)."""
    data = np.arange(30, dtype=np.int64) * (2**40 + 3)
    for sizes, strides, view in (([5, 6], [1, 5], data.reshape(6, 5).T), ([4, 6], [0, 1], np.broadcast_to(data[:6],
                                                                                                           (4, 6)))):
        x = dml.TensorDesc(DT.INT64, sizes, strides)
        desc = dml.DiagonalMatrix1OperatorDesc(x, dml.TensorDesc(DT.INT64, sizes), DT.INT64, -7, 0, 2)
        (got,) = device.compile_operator(device.create_operator(desc)).execute([data])
        assert_bits_equal(got, reference.diagonal_matrix(view, value=-7, diagonal_fill_begin=0, diagonal_fill_end=2))


def test_first_version_truncates_and_saturates(device):
    """DIAGONAL_MATRIX's FLOAT value: truncated toward zero for integer types (the page's
    10.6 -> 10), saturated to the type's range, NaN 0 (where the page is silent); FLOAT16
    rounds once."""
    for dtype, value, want in ((np.int32, 10.6, 10), (np.int32, -10.6, -10), (np.int8, 300.5, 127),
                               (np.uint8, -3.0, 0), (np.int16, float("nan"), 0), (np.int32, float("inf"), 2**31 - 1),
                               (np.float16, 1.0 / 3.0, np.float16(np.float32(1.0 / 3.0)))):
        got = dml.diagonal_matrix0([1, 1, 2, 3], offset=1, value=value, dtype=dtype, device=device)
        assert_bits_equal(got, (np.eye(2, 3, 1) * np.array(want, dtype)).astype(dtype).reshape(1, 1, 2, 3))


def test_offsets_at_int32s_limits_fill_nothing(device):
    for offset in (INT32_MAX, INT32_MIN):
        got = dml.diagonal_matrix0([1, 1, 3, 4], offset=offset, device=device)
        assert_bits_equal(got, np.zeros((1, 1, 3, 4), np.float32))


@pytest.mark.any_class  # both classes' Devices made here: the GPU-class run would repeat them
@pytest.mark.parametrize("adapter_class", ["cpu", "gpu"])
def test_both_strategies_under_both_classes(adapter, adapter_class):
    device = dml.Device(adapter=adapter, adapter_class=adapter_class)
    x = random_bits(np.random.default_rng(5), np.float16, (3, 7, 9))
    desc = dml.DiagonalMatrix1OperatorDesc(dml.TensorDesc(DT.FLOAT16, x.shape), dml.TensorDesc(DT.FLOAT16, x.shape),
                                           DT.FLOAT16, 2.5, 3, -2)
    op = device.create_operator(desc)
    for strategy in ("runs", "elements"):
        compiled = device.compile_operator(op, strategy)
        assert compiled.strategies[0] == ("runs" if adapter_class == "cpu" else "elements")
        (got,) = compiled.execute([x])
        assert_bits_equal(got, reference.diagonal_matrix(x, value=2.5, diagonal_fill_begin=3, diagonal_fill_end=-2))


def _dm1(in_sizes=(4, 5), out_sizes=(4, 5), dtype=DT.FLOAT32, value_type=None, value=0.0, begin=0, end=1):
    x = None if in_sizes is None else dml.TensorDesc(dtype, in_sizes)
    return dml.DiagonalMatrix1OperatorDesc(x, dml.TensorDesc(dtype, out_sizes), value_type or dtype, value, begin, end)


@pytest.mark.parametrize("desc, level, message", [
    (lambda: _dm1(in_sizes=(4, 6)), FL.FL_6_4,
     "DiagonalMatrix1: input_tensor.sizes [4, 6] must equal output_tensor.sizes [4, 5]"),
    (lambda: _dm1(value_type=DT.INT32), FL.FL_6_4,
     "DiagonalMatrix1: value_data_type INT32 must equal output_tensor.data_type FLOAT32"),
    (lambda: _dm1(dtype=DT.UINT16, value=-1), FL.FL_6_4, "DiagonalMatrix1: value = -1 is outside the range of UINT16"),
    (lambda: _dm1(begin=2**31), FL.FL_6_4, "DiagonalMatrix1: diagonal_fill_begin = 2147483648 is not an INT"),
    (lambda: _dm1(in_sizes=None, out_sizes=(2, 2, 2, 2, 2)), FL.FL_6_4,
     "DiagonalMatrix1: DimensionCount 5 is not supported at FL_6_4 (supported: 2-4) (output_tensor.sizes"),
    (lambda: _dm1(), FL.FL_5_0, "DiagonalMatrix1: not available at feature level FL_5_0 (introduced at FL_5_1)"),
    (lambda: dml.DiagonalMatrixOperatorDesc(dml.TensorDesc(DT.INT8, [1, 1, 2, 2]), 0, 1.0), FL.FL_2_0,
     "DiagonalMatrix: output_tensor.data_type INT8 is not supported at FL_2_0 (supported: FLOAT32, FLOAT16); "
     "it needs FL_2_1"),
    (lambda: dml.DiagonalMatrixOperatorDesc(dml.TensorDesc(DT.FLOAT32, [1, 1, 2, 2]), -(2**31) - 1, 1.0), FL.FL_6_4,
     "DiagonalMatrix: offset = -2147483649 is not an INT"),
])
def test_each_rule_has_its_message(at_level, desc, level, message):
    with pytest.raises(dml.InvalidArgumentError) as info:
        at_level(level).create_operator(desc())
    assert message in str(info.value)


def test_functional_arguments_are_checked(device):
    with pytest.raises(dml.InvalidArgumentError, match="diagonal_matrix: without x, shape"):
        dml.diagonal_matrix(value=1, device=device)
    with pytest.raises(dml.InvalidArgumentError, match=r"diagonal_matrix: shape \[3, 3\] differs from x's \[2, 2\]"):
        dml.diagonal_matrix(np.zeros((2, 2), np.float32), shape=[3, 3], device=device)
    with pytest.raises(dml.InvalidArgumentError, match="diagonal_matrix: dtype 'int8' differs from x's FLOAT32"):
        dml.diagonal_matrix(np.zeros((2, 2), np.float32), dtype="int8", device=device)


def test_axes_past_int32_are_unsupported():
    """x - y is computed in 32 bits: a last axis of 2^31 is an UnsupportedError when planned
    (a description that large is never allocated here: planning is pure)."""
    from gpudml.kernels import generator

    wide = dml.TensorDesc(DT.UINT8, [1, 2**31])
    with pytest.raises(dml.UnsupportedError, match="the two last axes must be shorter than 2\\^31"):
        generator.strategies_for(generator.Generator("DiagonalMatrix1", wide, "diagonal", 1), None)
    assert generator.strategies_for(generator.Generator("DiagonalMatrix1", dml.TensorDesc(DT.UINT8, [1, 2**31 - 1]),
                                                        "diagonal", 1), None) == ("runs", "elements")
