"""ReverseSubsequences: what the conformance kit (tests/test_conformance.py) does not cover:
the older page, each validation rule's message, lengths (0, 1, beyond the axis, UINT64 high
words, the functional form's conversions and errors), negative axes, the pipeline cache
across shapes and axes, the command line."""

from __future__ import annotations

import re

import numpy as np
import pytest
from conformance import page_blocks, page_text
from conftest import assert_bits_equal
from isolated import limited_device

import gpudml as dml
from gpudml import reference
from gpudml.ops import reverse_subsequences

DT = dml.DataType
FL = dml.FeatureLevel


def _desc(in_sizes=(1, 1, 3, 4), lengths_sizes=(1, 1, 3, 1), out_sizes=None, axis=3, dtype=DT.FLOAT32,
          lengths_dtype=DT.UINT32, out_dtype=None, out_strides=None):
    return dml.ReverseSubsequencesOperatorDesc(
        dml.TensorDesc(dtype, in_sizes), dml.TensorDesc(lengths_dtype, lengths_sizes),
        dml.TensorDesc(out_dtype or dtype, out_sizes or in_sizes, out_strides), axis)


def _raises(device, desc, message: str):
    with pytest.raises(dml.InvalidArgumentError, match=re.escape(message)):
        device.create_operator(desc)


# ------------------------------------------------------------------ the pages
def test_the_older_page_prints_the_same_outputs():
    """The examples are transcribed from the current page (000, checked by the conformance
    kit); the older page (002, tables up to FL 3_0) prints the same outputs."""
    blocks = page_blocks(page_text("002_140ade4871e36b36.txt"), "OutputTensor: (Sizes:")
    assert blocks == [e.expected.reshape(-1).tolist() for e in reverse_subsequences.SPEC.examples]


# ------------------------------------------------------------------ validation: one rule each
@pytest.mark.parametrize("axis", [4, -1])
def test_rule_axis_less_than_dimension_count(vulkan_device, axis):
    _raises(vulkan_device, _desc(axis=axis),
            f"ReverseSubsequences: axis = {axis} must be less than DimensionCount 4 (and >= 0)")


def test_rule_axis_is_an_integer():
    with pytest.raises(dml.InvalidArgumentError, match=re.escape("ReverseSubsequences: axis: expected an integer")):
        _desc(axis=1.5)


def test_rule_same_rank(vulkan_device):
    _raises(vulkan_device, _desc(lengths_sizes=(1, 3, 1)),
            "ReverseSubsequences: all tensors must have the same DimensionCount "
            "(got input_tensor 4, sequence_lengths_tensor 3, output_tensor 4)")


def test_rule_lengths_size_one_on_axis(vulkan_device):
    _raises(vulkan_device, _desc(lengths_sizes=(1, 1, 3, 4)),
            "ReverseSubsequences: sequence_lengths_tensor.sizes[3] = 4 must be 1 on axis 3 "
            "(input sizes [1, 1, 3, 4], axis 3: lengths sizes [1, 1, 3, 1])")


def test_rule_lengths_sizes_match_input_elsewhere(vulkan_device):
    _raises(vulkan_device, _desc(lengths_sizes=(1, 1, 1, 1)),
            "ReverseSubsequences: sequence_lengths_tensor.sizes[2] = 1 must be input_tensor.sizes[2] = 3")


def test_rule_output_sizes(vulkan_device):
    _raises(vulkan_device, _desc(out_sizes=(1, 1, 4, 3)),
            "ReverseSubsequences: output_tensor.sizes [1, 1, 4, 3] must equal input_tensor.sizes [1, 1, 3, 4]")


def test_rule_output_data_type(vulkan_device):
    _raises(vulkan_device, _desc(out_dtype=DT.INT32),
            "ReverseSubsequences: output_tensor.data_type INT32 must equal input_tensor.data_type FLOAT32")


def test_rule_lengths_data_type(vulkan_device):
    _raises(vulkan_device, _desc(lengths_dtype=DT.INT32),
            "ReverseSubsequences: sequence_lengths_tensor.data_type INT32 is not supported at FL_6_4 "
            "(supported: UINT32, UINT64)")


def test_rule_output_must_not_alias(vulkan_device):
    _raises(vulkan_device, _desc(out_strides=(0, 0, 0, 1)),
            "ReverseSubsequences: output_tensor.strides: [0, 0, 0, 1] with sizes [1, 1, 3, 4] make two output "
            "elements share one address")


def test_rule_lengths_tensor_desc_checked(vulkan_device):
    desc = dml.ReverseSubsequencesOperatorDesc(
        dml.TensorDesc(DT.FLOAT32, [1, 1, 3, 4]), dml.TensorDesc(DT.UINT32, [1, 1, 3, 1], [0, 0, -1, 0]),
        dml.TensorDesc(DT.FLOAT32, [1, 1, 3, 4]), 3)
    _raises(vulkan_device, desc, "ReverseSubsequences: sequence_lengths_tensor.strides[2] = -1 must be >= 0")


# ------------------------------------------------------------------ lengths
def test_lengths_zero_one_and_beyond_the_axis(device):
    x = np.arange(20, dtype=np.int32).reshape(4, 5)
    lengths = np.array([0, 1, 5, 99], np.uint32).reshape(4, 1)
    got = dml.reverse_subsequences(x, lengths, 1, device=device)
    np.testing.assert_array_equal(got, [[0, 1, 2, 3, 4], [5, 6, 7, 8, 9], [14, 13, 12, 11, 10],
                                        [19, 18, 17, 16, 15]])


def test_uint64_lengths_high_word_clamps(device):
    x = np.arange(12, dtype=np.uint8).reshape(3, 4)
    lengths = np.array([[2**32 + 1, 2**63, 2, 2**64 - 1]], np.uint64)
    desc = _desc((3, 4), (1, 4), axis=0, dtype=DT.UINT8, lengths_dtype=DT.UINT64)
    (got,) = device.compile_operator(device.create_operator(desc)).execute([x, lengths])
    np.testing.assert_array_equal(got, [[8, 9, 6, 11], [4, 5, 2, 7], [0, 1, 10, 3]])


@pytest.mark.parametrize("lengths, data_type", [
    (np.array([[1], [2]], np.int64), DT.UINT32),
    (np.array([[1], [2]], np.uint8), DT.UINT32),
    (np.array([[1], [2**32 - 1]], np.uint64), DT.UINT32),
    (np.array([[1], [2**32]], np.int64), DT.UINT64),
    ([[3], [2]], DT.UINT32),
])
def test_functional_lengths_conversion(device, lengths, data_type):
    from gpudml.ops.reverse_subsequences import sequence_lengths_array

    x = np.arange(6, dtype=np.float16).reshape(2, 3)
    assert DT.from_numpy(sequence_lengths_array(lengths).dtype) == data_type
    got = dml.reverse_subsequences(x, lengths, 1, device=device)
    assert_bits_equal(got, reference.reverse_subsequences(x, np.asarray(lengths).astype(np.uint64), 1))


@pytest.mark.parametrize("lengths, message", [
    (np.array([[1], [-2]], np.int32), "reverse_subsequences: sequence_lengths: lengths must be non-negative, got -2"),
    (np.array([[1.0], [2.0]]), "reverse_subsequences: sequence_lengths: lengths must be non-negative integers, "
                               "got dtype float64"),
    (np.array([[True], [False]]), "lengths must be non-negative integers, got dtype bool"),
    (np.array([1, 2], np.uint32), "ReverseSubsequences: all tensors must have the same DimensionCount"),
    (np.array([[1, 2]], np.uint32), "ReverseSubsequences: sequence_lengths_tensor.sizes[0] = 1 must be "
                                    "input_tensor.sizes[0] = 2"),
])
def test_functional_lengths_errors(device, lengths, message):
    x = np.zeros((2, 3), np.float32)
    with pytest.raises(dml.InvalidArgumentError, match=re.escape(message)):
        dml.reverse_subsequences(x, lengths, 1, device=device)


def test_functional_negative_axis(vulkan_device):
    """A negative axis counts from the end in the functional API (the desc API stays DirectML's)."""
    x = np.arange(24, dtype=np.int16).reshape(2, 3, 4)
    lengths = np.array([[[2], [3], [0]], [[4], [1], [9]]], np.uint32)
    want = reference.reverse_subsequences(x, lengths, 2)
    assert_bits_equal(dml.reverse_subsequences(x, lengths, -1, device=vulkan_device), want)
    assert_bits_equal(reference.reverse_subsequences(x, lengths, -1), want)
    with pytest.raises(dml.InvalidArgumentError,
                       match=re.escape("reverse_subsequences: axis = -4 is outside [-3, 2] (x has 3 dimensions)")):
        dml.reverse_subsequences(x, lengths, -4, device=vulkan_device)


def test_reversing_twice_restores_the_input(device):
    x = np.arange(24, dtype=np.int64).reshape(2, 3, 4)
    lengths = np.array([[[3, 2, 1, 0]], [[9, 3, 2, 2]]], np.uint32)
    out = dml.reverse_subsequences(device.tensor(x), lengths, 1)
    assert isinstance(out, dml.Tensor) and out.shape == (2, 3, 4)
    want = reference.reverse_subsequences(x, lengths, 1)
    np.testing.assert_array_equal(out.numpy(), want)
    again = dml.reverse_subsequences(out, device.tensor(lengths), 1)  # lengths as a Tensor too
    np.testing.assert_array_equal(again.numpy(), x)  # reversing the same prefixes twice restores x


def test_new_shape_or_axis_of_known_kind_compiles_nothing(adapter):
    """Three kinds of float32 kernels: the column strategy (axis second-to-last, rows of whole
    16-byte blocks) of rank 3, and the segments of rank 2 (the axes beside the reversed one
    merge) and of rank 3 (rows not of whole blocks). On a pipeline cache of the test's own
    (nothing compiled before, whatever ran earlier), once they are compiled, new shapes and
    axes of those kinds compile nothing."""
    dev = limited_device(adapter)
    dml.reverse_subsequences(np.zeros((4, 6, 8), np.float32), np.ones((4, 1, 8), np.uint32), 1, device=dev)
    dml.reverse_subsequences(np.zeros((4, 6, 7), np.float32), np.ones((4, 6, 1), np.uint32), 2, device=dev)
    dml.reverse_subsequences(np.zeros((4, 6, 7), np.float32), np.ones((4, 1, 7), np.uint32), 1, device=dev)
    misses = dev.pipeline_cache_stats.misses
    assert misses >= 1
    dml.reverse_subsequences(np.zeros((3, 5, 7), np.float32), np.ones((3, 5, 1), np.uint32), 2, device=dev)
    dml.reverse_subsequences(np.zeros((3, 5, 7), np.float32), np.ones((1, 5, 7), np.uint32), 0, device=dev)
    dml.reverse_subsequences(np.zeros((3, 5, 7), np.float32), np.ones((3, 1, 7), np.uint32), 1, device=dev)
    dml.reverse_subsequences(np.zeros((2, 9, 12), np.float32), np.ones((2, 1, 12), np.uint32), 1, device=dev)
    assert dev.pipeline_cache_stats.misses == misses


def test_cli_shader_reverse_subsequences(capsys):
    from gpudml import cli

    assert cli.main(["shader", "reverse_subsequences", "--dtype", "FLOAT64", "--shape", "2,5,3", "--axis", "1",
                     "--lengths-dtype", "UINT64"]) == 0
    out = capsys.readouterr().out
    assert "var<storage, read> s0_lengths: array<u32>;" in out and "s0_lengths_at2(i)" in out
