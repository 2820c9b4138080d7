"""The kernels of DML_REVERSE_SUBSEQUENCES: along one axis, output coordinate k reads
L - 1 - k where k < L, the sequence's clamped length (the stage of
shaders/reverse_subsequences.wgsl.j2, which reads the lengths tensor), and the operator's
own CPU-class `column` strategy."""

from __future__ import annotations

from ...tensor_desc import TensorDesc, merge_axes
from ..base import element_bits
from ..builder import KernelPlan
from ..chain import StageRule, chain
from .family import STRATEGIES, MovementPlanner, chain_plan, check_block
from .family import strategies_for as movement_strategies

#: Column strategy (see reverse_subsequences.wgsl.j2): coordinates on the axis per invocation.
#: W7, paired kernel-time ratios (quiet host): 8 / 16 = 1.10, 32 / 16 = 0.93, 64 / 32 = 0.98, 128 / 32 = 0.97.
COLUMN = 64


class ReverseSubsequencesPlanner(MovementPlanner):
    strategies = ("column",) + STRATEGIES

    def strategies_for(self, desc, caps, block: str | None = None) -> tuple[str, ...]:
        """`column` (the choice on CPU adapters where it applies: the output packed, the
        reversed axis second-to-last once axes merge, rows a whole number of 16-byte blocks):
        an invocation owns one output block across COLUMN axis coordinates and reads its
        lengths once. Then the data-movement strategies (on GPUs `coalesced` leads and
        `column`, CPU-shaped, comes last)."""
        check_block(block)
        out = desc.output_tensor
        axes, axis = _kernel_axes(desc)
        per_vec = 128 // element_bits(out)
        column = out.is_packed and len(axes) >= 2 and axis == len(axes) - 2 and axes[-1].size % per_vec == 0
        rest = movement_strategies(out, caps)
        if not column:
            return rest
        return ("column",) + rest if caps is None or caps.is_software else rest + ("column",)

    def stage(self, desc) -> StageRule:
        """Every axis of the desc as a stage of a chain (fused graphs: no axis merges)."""
        lengths = desc.sequence_lengths_tensor
        length_strides = tuple(0 if i == desc.axis else s for i, s in enumerate(lengths.effective_strides))
        return _stage(desc, desc.axis, desc.input_tensor.sizes[desc.axis], length_strides, fixed_axis=True)

    def plan(self, desc, caps, strategy: str, block: str | None = None) -> KernelPlan:
        """The stage on the merged kernel axes; the column strategy adds its grid's uniforms."""
        axes, axis = _kernel_axes(desc)
        data_type = desc.input_tensor.data_type
        out = TensorDesc(data_type, [a.size for a in axes], [a.strides[2] for a in axes])
        n, in_strides = axes[axis].size, [a.strides[0] for a in axes]
        the_chain = chain([_stage(desc, axis, n, [a.strides[1] for a in axes])], in_strides)
        uniforms, invocations = {}, None
        if strategy == "column":
            blocks = out.sizes[-1] // (128 // element_bits(out))
            outers = out.element_count // (n * out.sizes[-1])
            spans = -(-n // COLUMN)
            uniforms = {"column_spans": spans, "column_blocks": blocks, "column_outers": outers,
                        "column_axis_stride": in_strides[axis]}
            invocations = outers * spans * blocks
        return chain_plan(strategy, out, the_chain, uniforms=uniforms, invocations=invocations, block=block)


def _kernel_axes(desc):
    """Non-axis neighbours contiguous in the input, the lengths and the output merge, and
    size-1 non-axis axes drop: longer rows, and more shapes reach the column strategy.
    (the axes, the reversed axis' index among them)"""
    inp, lengths, out = desc.input_tensor, desc.sequence_lengths_tensor, desc.output_tensor
    length_strides = [0 if i == desc.axis else s for i, s in enumerate(lengths.effective_strides)]
    axes = merge_axes(inp.sizes, inp.effective_strides, length_strides, out.effective_strides, fixed={desc.axis})
    return axes, next(k for k, a in enumerate(axes) if a.axes == (desc.axis,))


def _stage(desc, axis: int, n: int, length_strides, *, fixed_axis: bool = False) -> StageRule:
    """The stage on kernel axes where the reversed axis is `axis`, of size n, and the
    lengths tensor has `length_strides` (0 on the axis). The axis is a uniform (one
    pipeline for every axis of a rank), or with `fixed_axis` compiled in (a fused chain:
    its pipeline is its own anyway, and the map touches one coordinate instead of all)."""
    rank = len(length_strides)
    inner = rank - 1
    return StageRule(
        "reverse_subsequences.wgsl.j2", params={
            "length_bits": element_bits(desc.sequence_lengths_tensor), "column": COLUMN,
            "axis": axis if fixed_axis else None, "axes": (axis,) if fixed_axis else tuple(range(rank)),
            "rowwise": fixed_axis and (axis == inner or length_strides[inner] == 0)},
        uniforms={"length_strides": tuple(length_strides), "rev_axis": axis, "rev_size": n},
        reads=(desc.sequence_lengths_tensor,))


REVERSE_SUBSEQUENCES = ReverseSubsequencesPlanner()
