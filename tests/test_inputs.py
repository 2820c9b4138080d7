"""Inputs are never written: numpy arrays (read-only ones included) and input Tensors are
bit-identical after every operator; an output Tensor that is also an input is rejected.
(tests/test_conformance.py checks the same on every random case.)"""

from __future__ import annotations

import gc

import numpy as np
import pytest
from conftest import assert_bits_equal, random_bits

import gpudml as dml
from gpudml.ops.padding import infer_output as pad_desc
from gpudml.ops.reverse_subsequences import infer_output as reverse_subsequences_desc
from gpudml.ops.slice1 import infer_output as slice_desc

T = dml.DataType


LENGTHS = np.array([[3, 0, 9, 1, 2, 5, 7]], np.uint32)
#: op -> call(x, lengths, device): every operator, with the inputs it reads.
CALLS = {
    "Slice1": lambda a, lengths, d: dml.slice(a, [1, 2], [4, 5], [-1, 2], device=d),
    "Padding": lambda a, lengths, d: dml.pad(a, [2, 1], [3, 0], mode="reflection", device=d),
    "ReverseSubsequences": lambda a, lengths, d: dml.reverse_subsequences(a, lengths, 0, device=d),
    "Reduce": lambda a, lengths, d: dml.reduce(a, "argmax", [1], device=d),
}


def _read_only(a: np.ndarray) -> np.ndarray:
    a = a.copy()
    a.flags.writeable = False
    return a


@pytest.mark.parametrize("op", list(CALLS))
@pytest.mark.parametrize("data_type", [T.UINT8, T.FLOAT16, T.INT32, T.FLOAT32, T.INT64], ids=lambda t: t.name)
def test_numpy_and_tensor_inputs_are_unchanged(device, op, data_type):
    call = CALLS[op]
    x = random_bits(np.random.default_rng([int(data_type), len(op)]), data_type.numpy, (6, 7))
    expected = call(x.copy(), LENGTHS.copy(), device)

    x_ro, lengths_ro = _read_only(x), _read_only(LENGTHS)  # read-only arrays work, stay as they were
    assert_bits_equal(call(x_ro, lengths_ro, device), expected)
    assert_bits_equal(x_ro, x)
    assert_bits_equal(lengths_ro, LENGTHS)
    assert not x_ro.flags.writeable

    t, t_lengths = device.tensor(x), device.tensor(LENGTHS)
    raw, raw_lengths = t.raw().copy(), t_lengths.raw().copy()
    assert_bits_equal(call(t, t_lengths, None).numpy(), expected)
    assert_bits_equal(t.raw(), raw)
    assert_bits_equal(t_lengths.raw(), raw_lengths)


def _descs(desc: dml.TensorDesc):
    lengths = dml.TensorDesc(T.UINT32, [1, desc.sizes[1]])
    return {
        "Slice1": slice_desc(desc, [0, 0], list(desc.sizes)),
        "Padding": pad_desc(desc, [0, 0], [0, 0], "edge"),
        "ReverseSubsequences": reverse_subsequences_desc(desc, lengths, 0),
    }


@pytest.mark.parametrize("op", ["Slice1", "Padding", "ReverseSubsequences"])
def test_output_that_is_an_input_is_rejected(vulkan_device, op):
    """In-place execution would race (and wgpu forbids one buffer bound for reading and
    writing in a dispatch): InvalidArgumentError before any GPU work, input unchanged."""
    dev = vulkan_device
    x = np.arange(12, dtype=np.int32).reshape(3, 4)
    t = dev.tensor(x)
    desc = _descs(t.desc)[op]
    compiled = dev.compile_operator(dev.create_operator(desc))
    inputs = [t] if op != "ReverseSubsequences" else [t, dev.tensor(np.full((1, 4), 2, np.uint32))]
    with pytest.raises(dml.InvalidArgumentError, match="never writes into its inputs") as info:
        compiled.execute(inputs, outputs=[t])
    assert type(info.value) is dml.InvalidArgumentError
    assert "output_tensor is the Tensor given as input_tensor" in str(info.value)
    np.testing.assert_array_equal(t.numpy(), x)
    out = dev.empty(desc.output_tensor)
    compiled.execute(inputs, outputs=[out])  # another output is fine
    np.testing.assert_array_equal(t.numpy(), x)


def test_failed_execute_stages_nothing(vulkan_device):
    """Arguments are checked before any upload: a bad second input or a bad output leaves
    the pool as it was (nothing acquired, nothing leaked)."""
    dev = vulkan_device
    memory = dev._ctx.pool
    desc = reverse_subsequences_desc(dml.TensorDesc(T.FLOAT32, [5, 3]), dml.TensorDesc(T.UINT32, [1, 3]), 0)
    compiled = dev.compile_operator(dev.create_operator(desc))
    x = np.ones((5, 3), np.float32)
    gc.collect()  # Tensors of earlier tests waiting in cycles would return their buffers meanwhile
    before = (memory.allocations, memory.pooled_bytes)
    with pytest.raises(dml.InvalidArgumentError, match="sequence_lengths_tensor"):
        compiled.execute([x, np.ones((1, 3), np.float32)])
    with pytest.raises(dml.InvalidArgumentError, match="outputs must be Tensors"):
        compiled.execute([x, np.ones((1, 3), np.uint32)], outputs=[np.zeros((5, 3), np.float32)])
    # Nothing allocated, nothing taken from the pool (a Tensor dying meanwhile may only add to it).
    assert memory.allocations == before[0] and memory.pooled_bytes >= before[1]
