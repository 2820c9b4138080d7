"""The kernels of DML_SLICE1 and DML_SLICE: an affine map per axis, input = start + step *
output. Alone, the map folds into the source's base and strides on the host (no stage is
left in the kernel); in a fused chain it is the stage of shaders/slice1.wgsl.j2, or folds
into its neighbours (kernels/chain.py)."""

from __future__ import annotations

from ...tensor_desc import TensorDesc, merge_axes
from ..builder import KernelPlan
from ..chain import StageRule, affine_stage, chain
from .family import MovementPlanner, chain_plan


class AffinePlanner(MovementPlanner):
    """A slice's Planner: a subclass gives `stage` (its affine map, affine_stage)."""

    def plan(self, desc, caps, strategy: str, block: str | None = None) -> KernelPlan:
        """The map folds into the source's base and one signed input step per output axis;
        output axes contiguous in the output and in those steps merge (longer rows), size-1
        axes drop."""
        return affine_plan(self.stage(desc), desc.input_tensor, desc.output_tensor, strategy, block)


def affine_plan(rule: StageRule, input_tensor: TensorDesc, output_tensor: TensorDesc, strategy: str,
                block: str | None = None) -> KernelPlan:
    """The plan of the affine `rule` from `input_tensor` to `output_tensor` (AffinePlanner.plan)."""
    folded = chain([rule], input_tensor.effective_strides)
    axes = merge_axes(output_tensor.sizes, output_tensor.effective_strides, folded.uniforms["src_strides"])
    kernel_out = TensorDesc(output_tensor.data_type, [a.size for a in axes], [a.strides[0] for a in axes])
    source = chain([], [a.strides[1] for a in axes], folded.uniforms["src_base"])
    return chain_plan(strategy, kernel_out, source, block=block)


class Slice1Planner(AffinePlanner):
    def stage(self, desc) -> StageRule:
        """The window as an affine map per axis: input = start + stride * output, where
        start is the window's offset, or its last element for a negative stride."""
        starts = tuple(off + (size - 1 if step < 0 else 0) for off, size, step in zip(
            desc.input_window_offsets, desc.input_window_sizes, desc.input_window_strides, strict=True))
        return affine_stage(starts, desc.input_window_strides, desc.output_tensor.sizes)


class SlicePlanner(AffinePlanner):
    def stage(self, desc) -> StageRule:
        """input = offsets + strides * output per axis (any UINT stride on an output axis of
        size 1, where one element is read: affine_stage)."""
        return affine_stage(desc.offsets, desc.strides, desc.output_tensor.sizes)


SLICE1 = Slice1Planner()
SLICE = SlicePlanner()
