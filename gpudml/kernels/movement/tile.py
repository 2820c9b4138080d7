"""The kernels of DML_TILE: output coordinate o reads input coordinate o mod n on each
repeated axis (the stage of shaders/tile.wgsl.j2)."""

from __future__ import annotations

from ...tensor_desc import TensorDesc, merge_axes
from ..builder import KernelPlan
from ..chain import StageRule, chain
from .family import MovementPlanner, chain_plan


class TilePlanner(MovementPlanner):
    def stage(self, desc) -> StageRule:
        """Every axis of the desc that repeats, as a stage of a chain (fused graphs)."""
        repeated = tuple(i for i, r in enumerate(desc.repeats) if r > 1)
        return _stage(repeated, desc.input_tensor.sizes)

    def plan(self, desc, caps, strategy: str, block: str | None = None) -> KernelPlan:
        """A repeated axis of one element is a broadcast (source stride 0, no modulo); the
        other repeated axes stay apart, and the axes that do not repeat merge where they are
        contiguous in both tensors (size-1 axes drop). No repeated axis left: a copy."""
        inp, out = desc.input_tensor, desc.output_tensor
        source = [0 if n == 1 else s for n, s in zip(inp.sizes, inp.effective_strides, strict=True)]
        tiled = {i for i, (n, r) in enumerate(zip(inp.sizes, desc.repeats, strict=True)) if r > 1 and n > 1}
        axes = merge_axes(out.sizes, source, out.effective_strides, fixed=tiled)
        folded = [k for k, a in enumerate(axes) if a.axes and a.axes[0] in tiled]
        stages = [_stage(folded, [inp.sizes[a.axes[0]] if k in folded else a.size for k, a in enumerate(axes)])]
        kernel_out = TensorDesc(out.data_type, [a.size for a in axes], [a.strides[1] for a in axes])
        the_chain = chain(stages if folded else [], [a.strides[0] for a in axes])
        return chain_plan(strategy, kernel_out, the_chain, block=block)


def _stage(axes, sizes) -> StageRule:
    """The stage folding the coordinates of `axes` modulo `sizes` (one per kernel axis)."""
    return StageRule("tile.wgsl.j2", params={"axes": tuple(axes)}, uniforms={"tile_sizes": tuple(sizes)})


TILE = TilePlanner()
