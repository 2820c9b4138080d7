"""Helpers of the data-movement sweeps (Padding, ReverseSubsequences, Tile, Join, Split): run
a compiled operator on raw buffers and check both the logical result and the outputs' gaps."""

from __future__ import annotations

import numpy as np
from conftest import assert_bits_equal, random_bits

from gpudml.runtime.tensor import logical_from_raw
from gpudml.tensor_desc import packed_strides


def padded_strides(sizes, rng=None, broadcast: bool = False) -> list[int]:
    """Row-major strides of a buffer one element longer on every axis (gaps between rows);
    with `broadcast`, some axes (at least one) get stride 0."""
    strides = list(packed_strides([n + 1 for n in sizes]))
    if broadcast:
        for axis in rng.choice(len(sizes), size=max(1, len(sizes) // 2), replace=False):
            strides[int(axis)] = 0
    return strides


def sequence_lengths(rng, lengths_desc, n: int) -> np.ndarray:
    """Raw ReverseSubsequences lengths buffer for an axis of n: mostly 0..n+2; UINT64 also
    gets high words (longer than any axis)."""
    count = lengths_desc.required_elements
    values = rng.integers(0, n + 3, size=count).astype(np.uint64)
    if lengths_desc.data_type.numpy == np.uint64:
        big = rng.random(count) < 0.25
        values[big] = np.array([2**32, 2**32 + 1, 2**63, 2**64 - 1], np.uint64)[rng.integers(0, 4, big.sum())]
    return values.astype(lengths_desc.data_type.numpy)


def output_indices(desc) -> np.ndarray:
    """Buffer element index of every logical element of `desc`."""
    idx = np.zeros(1, dtype=np.int64)
    for n, s in zip(desc.sizes, desc.effective_strides, strict=True):
        idx = (idx[:, None] + np.arange(n)[None, :] * s).reshape(-1)
    return idx


def run_and_check(device, rng, compiled, raw_inputs, in_descs, out_desc, want) -> None:
    """Execute with the raw buffers as inputs and an output buffer of random bits; the
    output's logical elements must equal `want` bit for bit, every other element of its
    buffer must keep its random bits. `out_desc` and `want` are lists for an operator
    with several outputs (SPLIT), checked one by one."""
    out_descs = out_desc if isinstance(out_desc, list) else [out_desc]
    wants = want if isinstance(want, list) else [want]
    raw_outs = [random_bits(rng, d.data_type.numpy, [d.buffer_bytes // d.data_type.size]) for d in out_descs]
    outputs = [device.tensor(raw, desc=d) for raw, d in zip(raw_outs, out_descs, strict=True)]
    inputs = [device.tensor(raw, desc=d) for raw, d in zip(raw_inputs, in_descs, strict=True)]
    results = compiled.execute(inputs, outputs=outputs)
    for result, d, raw_out, w in zip(results, out_descs, raw_outs, wants, strict=True):
        after = result.raw()
        assert_bits_equal(logical_from_raw(after, d), w)
        untouched = np.ones(raw_out.size, dtype=bool)
        untouched[output_indices(d)] = False
        assert_bits_equal(after[untouched], raw_out[untouched])
