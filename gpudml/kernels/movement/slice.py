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


class SliceGradPlanner(MovementPlanner):
    """DML_SLICE_GRAD's Planner: Slice1's map transposed (shaders/slice_grad.wgsl.j2), a stage
    that fills 0 where the forward slice read nothing. The desc's input_tensor and
    output_tensor are its two gradients (ops/slice_grad.py)."""

    def stage(self, desc) -> StageRule:
        """Every axis of the desc (fused chains: no axis merges)."""
        return _slice_grad_stage(desc, [(i,) for i in range(desc.output_gradient_tensor.rank)],
                                 desc.output_gradient_tensor.sizes)

    def plan(self, desc, caps, strategy: str, block: str | None = None) -> KernelPlan:
        """Axes the window leaves alone (the whole axis, stride 1) merge with their
        neighbours where contiguous in both tensors; size-1 axes drop."""
        dy, dx = desc.input_gradient_tensor, desc.output_gradient_tensor
        windowed = set(_windowed(desc))
        axes = merge_axes(dx.sizes, dy.effective_strides, dx.effective_strides, fixed=windowed)
        rule = _slice_grad_stage(desc, [a.axes for a in axes], [a.size for a in axes])
        kernel_out = TensorDesc(dx.data_type, [a.size for a in axes], [a.strides[1] for a in axes])
        return chain_plan(strategy, kernel_out, chain([rule], [a.strides[0] for a in axes]), block=block)


def _windowed(desc) -> list[int]:
    """The axes where the output gradient is not the input gradient itself."""
    dy, dx = desc.input_gradient_tensor, desc.output_gradient_tensor
    return [i for i, (off, step, n, m) in enumerate(zip(desc.input_window_offsets, desc.input_window_strides,
                                                        dy.sizes, dx.sizes, strict=True))
            if not (off == 0 and step == 1 and n == m)]


def _slice_grad_stage(desc, axes, sizes) -> StageRule:
    """The stage over kernel axes `axes` (each the desc's axes it stands for) of sizes
    `sizes`: a windowed axis' lowest read element, |stride|, input-gradient size and flip;
    another axis maps to itself (lo 0, step 1, its merged size)."""
    windowed = set(_windowed(desc))
    los, steps, counts, flips, mapped = [], [], [], [], []
    for k, (original, size) in enumerate(zip(axes, sizes, strict=True)):
        i = original[0] if len(original) == 1 and original[0] in windowed else None
        if i is None:
            los.append(0)
            steps.append(1)
            counts.append(size)
            flips.append(0)
            continue
        off, size_w, step = desc.input_window_offsets[i], desc.input_window_sizes[i], desc.input_window_strides[i]
        n = desc.input_gradient_tensor.sizes[i]
        start = off + (size_w - 1 if step < 0 else 0)
        los.append(start + step * (n - 1) if step < 0 else start)
        steps.append(abs(step))
        counts.append(n)
        flips.append(1 if step < 0 else 0)
        mapped.append(k)
    return StageRule("slice_grad.wgsl.j2",
                     params={"axes": tuple(mapped), "fills": True, "divides": any(s > 1 for s in steps),
                             "bits": desc.input_gradient_tensor.data_type.size * 8},
                     uniforms={"sg_lo": tuple(los), "sg_step": tuple(steps), "sg_count": tuple(counts),
                               "sg_flip": tuple(flips)})


SLICE_GRAD = SliceGradPlanner()
