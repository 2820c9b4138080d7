"""Slice1: what the conformance kit (tests/test_conformance.py) does not cover: grids past
65,535 workgroups, the pipeline cache across shapes, each validation rule's message, the
functional form's and execute's errors."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import assert_bits_equal
from isolated import limited_device

import gpudml as dml

F32 = dml.DataType.FLOAT32
U32 = dml.DataType.UINT32
SEED_INPUT = np.arange(1, 17, dtype=np.float32).reshape(1, 1, 4, 4)


def test_more_than_65535_workgroups(device):
    # 4.5 M float32 elements at 64 per workgroup need 70,313 workgroups: the grid folds into y.
    x = np.arange(4_500_000, dtype=np.uint32)
    got = dml.slice(x, [0], [4_500_000], [-1], device=device)
    np.testing.assert_array_equal(got, x[::-1])
    # uint8 packs 4 per invocation: 17 M elements -> 4.25 M invocations -> 66,407 workgroups.
    y = (np.arange(17_000_000) % 251).astype(np.uint8)
    got = dml.slice(y, [3], [16_999_990], [1], device=device)
    np.testing.assert_array_equal(got, y[3:16_999_993])


def test_coalesced_past_65535_workgroups(device):
    """`coalesced` forced (the GPU-class strategy: one invocation per 16-byte block of a
    packed output, in both of its block forms, or per element of an output with gaps):
    4.3 M invocations are 67,188 workgroups of 64, so the grid folds into y."""
    n = 4_300_000
    x = np.arange(2 * n, dtype=np.uint64).view(np.float64)  # two float64 per block
    desc = dml.ops.slice1.infer_output(dml.TensorDesc(dml.DataType.FLOAT64, [2 * n]), [0], [2 * n], [-1])
    op = device.create_operator(desc)
    for options in ({}, {"block": "stretches"}):
        compiled = device.compile_operator(op, "coalesced", options=options)
        assert compiled.program.kernels[0].invocations == n > 65_535 * 64
        assert_bits_equal(compiled.execute([x])[0], x[::-1])
    y = np.arange(n, dtype=np.uint32)
    gaps = dml.Slice1OperatorDesc(dml.TensorDesc(U32, [n]), dml.TensorDesc(U32, [n], [2]), [0], [n], [-1])
    compiled = device.compile_operator(device.create_operator(gaps), "coalesced")
    assert compiled.program.kernels[0].invocations == n
    np.testing.assert_array_equal(compiled.execute([y])[0], y[::-1])


# ------------------------------------------------------------------ pipeline cache
def test_new_shape_of_known_kind_compiles_nothing(adapter):
    """On a pipeline cache of the test's own (nothing compiled for it before): the first
    call compiles its kernel, a new shape of the same kind compiles nothing."""
    dev = limited_device(adapter)
    x = np.zeros((4, 6, 8), dtype=np.float32)
    dml.slice(x, [0, 0, 0], [4, 6, 8], [1, -1, 2], device=dev)
    stats = dev.pipeline_cache_stats
    assert stats.misses >= 1
    misses, hits = stats.misses, stats.hits
    y = np.zeros((7, 3, 5), dtype=np.float32)
    out = dml.slice(y, [1, 0, 1], [5, 3, 4], [2, 1, -3], device=dev)
    assert out.shape == (3, 3, 2)
    assert (stats.misses, stats.hits) == (misses, hits + 1)


# ------------------------------------------------------------------ validation: one test per rule
def _desc(in_sizes=(1, 1, 4, 4), out_sizes=(1, 1, 2, 2), offsets=(0, 0, 0, 1), sizes=(1, 1, 4, 3),
          strides=(1, 1, 2, 2), dtype=F32, out_dtype=None, in_strides=None, out_strides=None):
    return dml.Slice1OperatorDesc(
        dml.TensorDesc(dtype, in_sizes, in_strides),
        dml.TensorDesc(out_dtype or dtype, out_sizes, out_strides),
        offsets, sizes, strides)


@pytest.mark.parametrize("kwargs, level, message", [
    (dict(out_dtype=dml.DataType.FLOAT16), None,
     "Slice1: output_tensor.data_type FLOAT16 must equal input_tensor.data_type FLOAT32"),
    (dict(out_sizes=(1, 2, 2)), None,
     "Slice1: all tensors must have the same DimensionCount (got input_tensor 4, output_tensor 3)"),
    (dict(offsets=(0, 0, 0)), None,
     "Slice1: input_window_offsets has 3 entries [0, 0, 0]; DimensionCount is 4"),
    (dict(sizes=(1, 1, 4)), None, "Slice1: input_window_sizes has 3 entries [1, 1, 4]; DimensionCount is 4"),
    (dict(strides=(1, 1, 2, 2, 1)), None,
     "Slice1: input_window_strides has 5 entries [1, 1, 2, 2, 1]; DimensionCount is 4"),
    (dict(offsets=(0, 0, 3, 1)), None,
     "Slice1: input_window_offsets[2] + input_window_sizes[2] = 7 exceeds input size 4 on axis 2"),
    (dict(offsets=(0, 0, -1, 1)), None, "Slice1: input_window_offsets[2] = -1 must be in 0..4294967295"),
    (dict(sizes=(1, 1, 0, 3)), None, "Slice1: input_window_sizes[2] = 0 must be >= 1 (empty window)"),
    (dict(strides=(1, 1, 0, 2)), None, "Slice1: input_window_strides[2] must not be 0"),
    (dict(strides=(1, 1, 2, 2**31)), None, "Slice1: input_window_strides[3] = 2147483648 does not fit INT32"),
    (dict(out_sizes=(1, 1, 3, 2)), None,
     "Slice1: output_tensor.sizes[2] = 3 must be in 1..2 (1 + (input_window_sizes[2] - 1) // "
     "|input_window_strides[2]| = 1 + (4 - 1) // 2)"),
    (dict(in_sizes=(4, 4), out_sizes=(2, 2), offsets=(0, 1), sizes=(4, 3), strides=(2, 2)), dml.FeatureLevel.FL_2_1,
     "Slice1: DimensionCount 2 is not supported at FL_2_1 (supported: 4, 5); it needs FL_3_0 or later"),
    (dict(dtype=dml.DataType.FLOAT64), dml.FeatureLevel.FL_3_0,
     "Slice1: input_tensor.data_type FLOAT64 is not supported at FL_3_0 (supported: FLOAT32, FLOAT16, UINT32, "
     "UINT16, UINT8, INT32, INT16, INT8); it needs FL_4_1 or later"),
    (dict(), dml.FeatureLevel.FL_2_0, "Slice1: not available at feature level FL_2_0 (introduced at FL_2_1)"),
    (dict(out_strides=(4, 4, 1, 0)), None,
     "Slice1: output_tensor.strides: [4, 4, 1, 0] with sizes [1, 1, 2, 2] make two output elements share one "
     "address (axis 3 stride 0); an output must not alias itself"),
])
def test_validation_rule(at_level, kwargs, level, message):
    device = at_level(level)
    with pytest.raises(dml.InvalidArgumentError) as err:
        device.create_operator(_desc(**kwargs))
    assert str(err.value) == message


def test_functional_errors_name_the_argument(vulkan_device):
    x = np.zeros((4, 4), dtype=np.float32)
    with pytest.raises(dml.InvalidArgumentError, match=r"slice: x: expected a numpy array or gpudml.Tensor, got list"):
        dml.slice([[1.0]], [0], [1], device=vulkan_device)
    with pytest.raises(dml.InvalidArgumentError, match=r"slice: x has 0 dimensions"):
        dml.slice(np.float32(1.0), [0], [1], device=vulkan_device)
    with pytest.raises(dml.InvalidArgumentError, match=r"numpy dtype bool has no DirectML data type"):
        dml.slice(np.zeros(3, dtype=bool), [0], [1], device=vulkan_device)
    with pytest.raises(dml.InvalidArgumentError, match=r"slice: offsets\[1\]: expected an integer, got 0.5"):
        dml.slice(x, [0, 0.5], [1, 1], device=vulkan_device)
    with pytest.raises(dml.InvalidArgumentError, match=r"slice: x has shape \[0, 4\]"):
        dml.slice(np.zeros((0, 4), np.float32), [0, 0], [1, 1], device=vulkan_device)


def test_execute_checks_its_inputs(vulkan_device):
    dev = vulkan_device
    compiled = dev.compile_operator(dev.create_operator(_desc()))
    with pytest.raises(dml.InvalidArgumentError, match=r"expected 1 inputs \(input_tensor\), got 2"):
        compiled.execute([SEED_INPUT, SEED_INPUT])
    with pytest.raises(dml.InvalidArgumentError, match=r"numpy dtype float64 is FLOAT64, the desc says FLOAT32"):
        compiled.execute([SEED_INPUT.astype(np.float64)])
    with pytest.raises(dml.InvalidArgumentError, match=r"15 elements \(shape \[15\]\) do not cover the tensor's 16"):
        compiled.execute([np.zeros(15, np.float32)])
    small = dev.tensor(np.zeros(8, np.float32))
    with pytest.raises(dml.InvalidArgumentError, match=r"Tensor buffer of 32 bytes is smaller than "
                                                       r"input_tensor.total_tensor_size_in_bytes 64"):
        compiled.execute([small])
    with pytest.raises(dml.InvalidArgumentError, match=r"inputs must be a list"):
        compiled.execute(SEED_INPUT)
