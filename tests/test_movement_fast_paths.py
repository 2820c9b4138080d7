"""The strategies of the data-movement kernels (shaders/lib/movement.wgsl.j2 stretches,
elements and strided, the ReverseSubsequences column strategy): cases chosen to land on
their boundaries, each run under every strategy that can run it.
Rows whose length is not a multiple of a 16-byte block, borders narrower than a block,
padding wider than the axis (one-element stretches), misaligned starts, negative and
non-unit inner steps (those of +-1 and +-2 that load whole input blocks too), rows
shorter than a block, tensors ending inside a block, spans along the reversed axis that
end early. Every result is compared bit for bit with
reference.py and the output buffer's bytes outside the tensor's elements must be kept
(the output's total size leaves room past its last element)."""

from __future__ import annotations

import numpy as np
import pytest
from conformance import HIGHEST, Case, padded_strides, run_every_variant
from conftest import assert_bits_equal, random_bits

import gpudml as dml
from gpudml import compiler, reference
from gpudml.ops import spec_for

DT = dml.DataType
WIDTHS = [DT.UINT8, DT.FLOAT16, DT.FLOAT32, DT.INT64]  # 8, 16, 32 and 64 bits


# ------------------------------------------------------------------ Padding
PAD_CASES = [
    # (input sizes, start, end): inner rows of 1..9 elements, borders of 0..5
    ([5], [1], [2]),
    ([9], [3], [0]),
    ([1], [2], [3]),          # a size-1 axis: every border element is the one element
    ([2, 3], [0, 1], [1, 2]),
    ([3, 7], [1, 2], [0, 5]),
    ([2, 4], [1, 4], [2, 4]),
    ([2, 6], [0, 3], [0, 3]),
    ([3, 2, 5], [1, 0, 1], [0, 1, 3]),
    ([2, 3, 8], [0, 2, 4], [1, 0, 4]),  # borders a whole block wide (32-bit)
    ([2, 2, 3], [0, 0, 7], [0, 0, 8]),  # padding wider than the axis: folds several times
    ([4, 16], [1, 16], [2, 16]),
]


@pytest.mark.parametrize("mode", list(dml.PaddingMode), ids=lambda m: m.name)
@pytest.mark.parametrize("data_type", WIDTHS, ids=lambda t: t.name)
def test_padding_stretches(device, data_type, mode):
    rng = np.random.default_rng([int(data_type), int(mode)])
    for in_sizes, start, end in PAD_CASES:
        out_sizes = [n + s + e for n, s, e in zip(in_sizes, start, end)]
        for layout in ("packed", "strided_input", "strided_output"):
            in_strides = padded_strides(in_sizes) if layout == "strided_input" else None
            out_strides = padded_strides(out_sizes) if layout == "strided_output" else None
            in_desc = dml.TensorDesc(data_type, in_sizes, in_strides)
            out_desc = dml.TensorDesc(data_type, out_sizes, out_strides)
            desc = dml.PaddingOperatorDesc(in_desc, out_desc, mode, 3, start, end)
            run_every_variant(device, Case(spec_for(desc), HIGHEST, desc), int(rng.integers(1 << 16)))


# ------------------------------------------------------------------ Slice1
SLICE_CASES = [
    # (input sizes, offsets, window sizes, window strides)
    ([11], [0], [11], [1]),
    ([11], [1], [10], [1]),       # misaligned start
    ([13], [2], [11], [-1]),      # negative inner step
    ([17], [1], [15], [2]),
    ([17], [0], [17], [-2]),
    ([19], [3], [16], [3]),
    ([5, 7], [1, 1], [3, 5], [1, -1]),
    ([4, 9], [0, 2], [4, 7], [-1, 2]),
    ([3, 3], [0, 0], [3, 3], [2, 1]),      # rows shorter than a block
    ([2, 3, 6], [0, 1, 1], [2, 2, 5], [1, 1, -3]),
    ([3, 2, 9], [0, 0, 0], [3, 2, 9], [-1, 1, 1]),   # the inner two axes merge
    ([1, 5, 1, 6], [0, 1, 0, 0], [1, 4, 1, 6], [1, -1, 1, 1]),  # size-1 axes dropped
    ([6, 3, 7], [1, 0, 0], [4, 3, 7], [2, 1, 1]),     # merge inside, not across the step
    ([2, 1, 1], [0, 0, 0], [2, 1, 1], [1, 1, 1]),
    # whole input blocks reversed (step -1 from a block's last element: every width), and
    # pairs of blocks (step 2 or -2 from a block's first or last two elements: 8, 16 bits)
    ([2, 64], [0, 0], [2, 64], [-1, -1]),
    ([2, 64], [0, 1], [2, 63], [1, 2]),     # odd elements
    ([3, 64], [0, 0], [3, 64], [1, -2]),    # even elements, stepping down
    ([2, 64], [0, 1], [2, 63], [-1, -2]),   # odd elements, stepping down
]


@pytest.mark.parametrize("data_type", WIDTHS, ids=lambda t: t.name)
def test_slice_stretches(device, data_type):
    rng = np.random.default_rng(int(data_type))
    for in_sizes, offsets, sizes, strides in SLICE_CASES:
        out_sizes = [1 + (n - 1) // abs(s) for n, s in zip(sizes, strides)]
        for layout in ("packed", "broadcast_input", "strided_output"):
            in_strides = padded_strides(in_sizes, rng, broadcast=True) if layout == "broadcast_input" else None
            out_strides = padded_strides(out_sizes) if layout == "strided_output" else None
            in_desc = dml.TensorDesc(data_type, in_sizes, in_strides)
            out_desc = dml.TensorDesc(data_type, out_sizes, out_strides)
            desc = dml.Slice1OperatorDesc(in_desc, out_desc, offsets, sizes, strides)
            run_every_variant(device, Case(spec_for(desc), HIGHEST, desc), int(rng.integers(1 << 16)))


# ------------------------------------------------------------------ ReverseSubsequences
REVERSE_CASES = [
    # (sizes, axis): the axis second-to-last with rows of whole blocks takes the column
    # strategy (for some widths), the others the stretches.
    ([3, 37, 16], 1),      # 37 coordinates: the last span along the axis is partial
    ([2, 5, 32], 1),
    ([40, 8], 0),          # rank 2
    ([2, 3, 20, 4], 2),
    ([3, 9, 6], 1),        # rows not a whole number of blocks for most widths
    ([4, 11], 1),          # the reversed axis innermost: backwards, then forwards
    ([2, 3, 5, 7], 3),
    ([6, 5, 8], 0),
    ([2, 9, 3, 4], 1),     # the two inner axes merge: a row of 12, the column strategy
    ([1, 7, 1, 8], 1),     # size-1 axes dropped
    ([3, 2, 5, 1, 4], 2),  # axes merge on both sides of the axis
]


@pytest.mark.parametrize("lengths_type", [DT.UINT32, DT.UINT64], ids=lambda t: t.name)
@pytest.mark.parametrize("data_type", WIDTHS, ids=lambda t: t.name)
def test_reverse_subsequences_fast_paths(device, data_type, lengths_type):
    rng = np.random.default_rng([int(data_type), int(lengths_type)])
    for sizes, axis in REVERSE_CASES:
        lengths_sizes = [1 if i == axis else n for i, n in enumerate(sizes)]
        for layout in ("packed", "strided_input", "broadcast_lengths", "strided_output"):
            in_strides = padded_strides(sizes) if layout == "strided_input" else None
            out_strides = padded_strides(sizes) if layout == "strided_output" else None
            l_strides = padded_strides(lengths_sizes, rng, broadcast=True) if layout == "broadcast_lengths" else None
            in_desc = dml.TensorDesc(data_type, sizes, in_strides)
            lengths_desc = dml.TensorDesc(lengths_type, lengths_sizes, l_strides)
            out_desc = dml.TensorDesc(data_type, sizes, out_strides)
            desc = dml.ReverseSubsequencesOperatorDesc(in_desc, lengths_desc, out_desc, axis)
            run_every_variant(device, Case(spec_for(desc), HIGHEST, desc), int(rng.integers(1 << 16)))


def test_reverse_column_strategy_is_chosen(vulkan_device):
    """The cases above do reach the column strategy (and only where it applies)."""
    def plan(sizes, axis, data_type=DT.FLOAT32, out_strides=None):
        lengths = dml.TensorDesc(DT.UINT32, [1 if i == axis else n for i, n in enumerate(sizes)])
        desc = dml.ReverseSubsequencesOperatorDesc(
            dml.TensorDesc(data_type, sizes), lengths, dml.TensorDesc(data_type, sizes, out_strides), axis)
        return compiler.compile(desc, vulkan_device.caps.with_class("cpu")).strategy

    assert plan([3, 37, 16], 1) == "column"
    assert plan([3, 37, 16], 1, DT.UINT8) == "column"
    assert plan([3, 9, 6], 1) == "stretches"
    assert plan([4, 11], 1) == "stretches"
    assert plan([3, 37, 16], 1, out_strides=padded_strides([3, 37, 16])) == "strided"
    assert plan([2, 9, 3, 4], 1) == "column"  # after merging [3, 4] into 12
    assert plan([1, 7, 1, 8], 1) == "column"  # [7, 8] once size-1 axes drop
    gpu = compiler.compile(dml.ReverseSubsequencesOperatorDesc(  # GPU class: coalesced first, column last
        dml.TensorDesc(DT.FLOAT32, [3, 37, 16]), dml.TensorDesc(DT.UINT32, [3, 1, 16]),
        dml.TensorDesc(DT.FLOAT32, [3, 37, 16]), 1), vulkan_device.caps.with_class("gpu"))
    assert gpu.strategy == "coalesced" and gpu.strategies[-1] == "column"


def test_slice_axes_merge(vulkan_device):
    """Axes contiguous in both tensors merge into longer rows; size-1 axes drop out."""
    def kernel_rank(in_sizes, offsets, sizes, strides, out_strides=None):
        out_sizes = [1 + (n - 1) // abs(s) for n, s in zip(sizes, strides)]
        desc = dml.Slice1OperatorDesc(dml.TensorDesc(DT.FLOAT32, in_sizes),
                                      dml.TensorDesc(DT.FLOAT32, out_sizes, out_strides), offsets, sizes, strides)
        return compiler.compile(desc, vulkan_device.caps).kernels[0].params["rank"]

    assert kernel_rank([64, 64, 7, 7], [0] * 4, [64, 64, 7, 7], [2, 1, 1, 1]) == 2
    assert kernel_rank([1, 5, 1, 6], [0, 1, 0, 0], [1, 4, 1, 6], [1, -1, 1, 1]) == 2
    assert kernel_rank([4, 6, 8], [0, 0, 0], [4, 6, 8], [1, -1, 2]) == 3
    assert kernel_rank([3, 2, 9], [0, 0, 0], [3, 2, 9], [1, 1, 1], out_strides=padded_strides([3, 2, 9])) == 3


def test_coalesced_block_forms(device):
    """`coalesced` builds a packed output's blocks element by element, each through the whole
    chain, unless plan option block="stretches" asks for the stretch walk (the stretches
    kernel, a run of one block each: the same grid of one invocation per block); an output
    with gaps is written element by element either way. Same bits; a bad form is an error."""
    rng = np.random.default_rng(7)
    x = random_bits(rng, np.float32, [3, 40, 36])
    desc = dml.PaddingOperatorDesc(dml.TensorDesc(DT.FLOAT32, [3, 40, 36]), dml.TensorDesc(DT.FLOAT32, [3, 44, 44]),
                                   dml.PaddingMode.REFLECTION, 0, [0, 1, 4], [0, 3, 4])
    op = device.create_operator(desc)
    elements = device.compile_operator(op, "coalesced")
    stretches = device.compile_operator(op, "coalesced", options={"block": "stretches"})
    assert stretches.strategy == elements.strategy == "coalesced"
    kernels = [c.program.kernels[0] for c in (stretches, elements)]
    assert [k.params["strategy"] for k in kernels] == ["stretches", "elements"]
    assert [k.params["run"] for k in kernels] == [4, 4]
    assert kernels[0].invocations == kernels[1].invocations == 3 * 44 * 11
    assert "input_blocks" in stretches.wgsl[0] and "input_blocks" not in elements.wgsl[0]
    want = reference.pad(x, [0, 1, 4], [0, 3, 4], "reflection")
    for compiled in (stretches, elements):
        assert_bits_equal(compiled.execute([x])[0], want)
    gapped = dml.TensorDesc(DT.FLOAT32, [3, 44, 44], padded_strides([3, 44, 44]))
    gaps = dml.PaddingOperatorDesc(desc.input_tensor, gapped, desc.padding_mode, 0, desc.start_padding,
                                   desc.end_padding)
    gap_kernel = device.compile_operator(device.create_operator(gaps), "coalesced", options={"block": "stretches"})
    assert gap_kernel.program.kernels[0].params["strategy"] == "strided"
    for strategy in ("coalesced", "stretches"):  # checked whichever strategy it is given to
        with pytest.raises(dml.InvalidArgumentError,
                           match="plan option block='rows': must be one of elements, stretches"):
            device.compile_operator(op, strategy, options={"block": "rows"})
