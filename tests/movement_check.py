"""Helpers of the data-movement sweeps (Padding, ReverseSubsequences, Padding1, Slice, Tile,
Join, Split): run a compiled operator on raw buffers and check both the logical result and
the outputs' gaps, under the default strategy or under every eligible one."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
from conftest import assert_bits_equal, random_bits

import gpudml as dml
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


#: The layouts of the data-movement sweeps (layout_descs).
LAYOUTS = ("packed", "strided_input", "broadcast_input", "strided_output")


def layout_descs(data_type, in_sizes, out_sizes, layout: str, rng) -> tuple:
    """(input desc, output desc) in one of LAYOUTS: packed; an input with gaps between its
    rows (padded_strides), or with gaps and some axes broadcast (stride 0); an output with
    gaps, whose bytes the operator must leave alone."""
    in_strides = padded_strides(in_sizes, rng, broadcast=layout == "broadcast_input") \
        if layout in ("strided_input", "broadcast_input") else None
    out_strides = padded_strides(out_sizes) if layout == "strided_output" else None
    return dml.TensorDesc(data_type, in_sizes, in_strides), dml.TensorDesc(data_type, out_sizes, out_strides)


def padding_case(rng, rank: int, max_output: int = 3000) -> tuple[list[int], list[int], list[int]]:
    """A random padding problem of `rank` axes, (input sizes, start, end): paddings up to
    2n + 2 per side (they fold more than once), halved until the output has at most
    `max_output` elements."""
    top = 6 if rank <= 2 else (3 if rank <= 5 else 2)
    in_sizes = [int(rng.integers(1, top + 1)) for _ in range(rank)]
    start = [int(rng.integers(0, 2 * n + 3)) for n in in_sizes]
    end = [int(rng.integers(0, 2 * n + 3)) for n in in_sizes]
    while math.prod(n + s + e for n, s, e in zip(in_sizes, start, end, strict=True)) > max_output:
        axis = int(rng.integers(rank))
        start[axis], end[axis] = start[axis] // 2, end[axis] // 2
    return in_sizes, start, end


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


#: Bytes of the output tensor past its last element (three 16-byte chunks): a kernel
#: writing past the tensor's last chunk writes there (inside the binding) instead of being
#: dropped by the adapter's bounds checks, and the check of the gaps sees it.
ROOM = 48


#: The plan options each strategy also runs under (besides its defaults) in run_every_strategy:
#: `coalesced` builds a packed output's chunks element by element by default, and through
#: the stretch walk with chunk="stretches" (kernels/movement/family.py).
VARIANTS = {"coalesced": [{"chunk": "stretches"}]}


def every_variant(device, op):
    """The operator compiled under every strategy that can run it, and under each one's
    VARIANTS too: CompiledOperators, the default choice first."""
    for strategy in device.compile_operator(op).strategies:
        for options in [{}] + VARIANTS.get(strategy, []):
            yield device.compile_operator(op, strategy, options=options)


def run_every_strategy(device, rng, desc, in_descs, raw_inputs, want) -> None:
    """run_and_check under every strategy that can run the description (and under its
    VARIANTS), its output given ROOM bytes past the tensor."""
    out = desc.output_tensor
    roomy = dml.TensorDesc(out.data_type, out.sizes, out.strides,
                           total_tensor_size_in_bytes=out.total_tensor_size_in_bytes + ROOM)
    desc = dataclasses.replace(desc, output_tensor=roomy)
    for compiled in every_variant(device, device.create_operator(desc)):
        run_and_check(device, rng, compiled, raw_inputs, in_descs, desc.output_tensor, want)
