"""Regressions for the bugs the hardening work found (fuzzing and review), one test each."""

from __future__ import annotations

import gc

import numpy as np
import pytest

import gpudml as dml
from gpudml.ops.slice1 import infer_output as slice_desc

T = dml.DataType


def test_device_argument_must_be_a_device():
    """Was AttributeError ('str' object has no attribute '_run')."""
    x = np.zeros(4, np.float32)
    for call in (lambda d: dml.slice(x, [0], [4], device=d), lambda d: dml.pad(x, [1], [1], device=d),
                 lambda d: dml.reduce(x, "sum", device=d),
                 lambda d: dml.reverse_subsequences(x, np.array([2], np.uint32), 0, device=d)):
        with pytest.raises(dml.InvalidArgumentError, match="device must be a gpudml.Device or None, got str"):
            call("vulkan")


def test_padding_value_must_be_a_number_in_every_mode(vulkan_device):
    """Was accepted (and ignored) outside CONSTANT."""
    desc = dml.PaddingOperatorDesc(dml.TensorDesc(T.FLOAT32, [4]), dml.TensorDesc(T.FLOAT32, [6]),
                                   dml.PaddingMode.EDGE, "x", [1], [1])
    with pytest.raises(dml.InvalidArgumentError, match="Padding: padding_value: expected a real number, got 'x'"):
        vulkan_device.create_operator(desc)
    # NaN stays acceptable for integer tensors outside CONSTANT: the value is not used there.
    x = np.arange(4, dtype=np.int32)
    np.testing.assert_array_equal(dml.pad(x, [1], [1], mode="edge", value=float("nan"), device=vulkan_device),
                                  [0, 0, 1, 2, 3, 3])


def test_scalar_sequence_lengths_are_rejected(vulkan_device):
    """A 0-d lengths array was silently taken as shape [1] (np.ascontiguousarray)."""
    with pytest.raises(dml.InvalidArgumentError, match=r"sequence_lengths has shape \[\]"):
        dml.reverse_subsequences(np.zeros(1, np.float32), 3, 0, device=vulkan_device)


def test_raw_of_a_64_bit_tensor_with_a_partial_last_element(vulkan_device):
    """Tensor.raw() raised numpy's ValueError when total_tensor_size_in_bytes was not a
    multiple of the element size (12 bytes of int64)."""
    desc = dml.TensorDesc(T.INT64, [1], total_tensor_size_in_bytes=12)
    t = vulkan_device.tensor(np.array([-5], np.int64), desc=desc)
    np.testing.assert_array_equal(t.raw(), [-5])
    np.testing.assert_array_equal(t.numpy(), [-5])


def test_outputs_checked_before_inputs_are_staged(vulkan_device):
    """A bad `outputs` argument used to be found after the numpy inputs were uploaded to
    pooled buffers, which were then never given back."""
    dev = vulkan_device
    desc = slice_desc(dml.TensorDesc(T.FLOAT32, [64]), [0], [64], [-1])
    compiled = dev.compile_operator(dev.create_operator(desc))
    memory = dev._ctx.pool
    x = np.zeros(64, np.float32)
    compiled.execute([x])
    gc.collect()
    pooled = memory.pooled_bytes
    for bad in ("x", [None], [dev.tensor(np.zeros(3, np.int8))]):
        with pytest.raises(dml.InvalidArgumentError):
            compiled.execute([x], outputs=bad)
    del bad
    gc.collect()
    assert memory.pooled_bytes >= pooled  # nothing kept out of the pool



def test_tensor_smaller_than_the_desc_is_rejected_even_with_room_in_its_buffer(vulkan_device):
    """The size check compared the pooled buffer (rounded up to 16 bytes) with the desc:
    a Tensor of 4 bytes passed for a desc of 8, and the kernel read (or, for an output,
    wrote) bytes past the Tensor's own desc."""
    dev = vulkan_device
    desc = slice_desc(dml.TensorDesc(T.FLOAT32, [2]), [0], [2], [-1])
    compiled = dev.compile_operator(dev.create_operator(desc))
    small = dev.tensor(np.ones(1, np.float32))
    assert small.nbytes >= desc.input_tensor.buffer_bytes  # the buffer has room; the Tensor has not
    with pytest.raises(dml.InvalidArgumentError, match="Tensor buffer of 4 bytes is smaller than "
                                                       "input_tensor.total_tensor_size_in_bytes 8"):
        compiled.execute([small])
    with pytest.raises(dml.InvalidArgumentError, match="output_tensor.total_tensor_size_in_bytes 8"):
        compiled.execute([dev.tensor(np.ones(2, np.float32))], outputs=[small])


@pytest.mark.parametrize("argv", [
    ["shader", "slice1", "--shape", "1,x"],
    ["shader", "pad", "--shape", "4", "--start", "one"],
    ["shader", "reduce", "--shape", "2,2", "--axes", "0.5"],
])
def test_cli_bad_integer_lists_are_errors_not_tracebacks(argv, capsys):
    """`gpudml shader ... --shape 1,x` ended in a ValueError traceback."""
    from gpudml import cli

    assert cli.main(argv) == 2
    assert "is not a comma-separated list of integers" in capsys.readouterr().err
