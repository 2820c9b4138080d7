"""The kernels of DML_GATHER: the coordinate on `axis` read from the indices tensor, clamped
into the axis (the stage of shaders/gather.wgsl.j2), on axes merged where the layout allows."""

from __future__ import annotations

from ...tensor_desc import TensorDesc, merge_axes
from ...types import DataType
from ..base import element_bits
from ..builder import KernelPlan
from ..chain import StageRule, chain
from .family import MovementPlanner, chain_plan


class GatherPlanner(MovementPlanner):
    def stage(self, desc) -> StageRule:
        """The index rule over the desc's own axes, as a stage of a chain."""
        return _stage(desc.input_tensor.rank, desc.axis, desc.index_dimensions, _index_strides(desc),
                      desc.input_tensor.sizes[desc.axis], desc.indices_tensor)

    def plan(self, desc, caps, strategy: str, block: str | None = None) -> KernelPlan:
        kernel_out, source, stage = _kernel_frame(desc)
        return chain_plan(strategy, kernel_out, chain([stage], source), block=block)


def _index_strides(desc) -> tuple[int, ...]:
    """The indices' strides on the output's axes: output axis j in (axis - k, axis] reads
    indices axis j + (rank - 1 - axis); the other output axes do not move the index."""
    rank, axis, k = desc.input_tensor.rank, desc.axis, desc.index_dimensions
    strides = desc.indices_tensor.effective_strides
    shift = rank - 1 - axis
    return tuple(strides[j + shift] if axis - k < j <= axis else 0 for j in range(rank))


def _stage(rank: int, axis: int, k: int, index_strides, n: int, indices: TensorDesc) -> StageRule:
    """The stage of a gather on `axis` (of size n) of a rank-`rank` tensor with k index
    dimensions, the indices read with `index_strides` (per output axis; shaders/gather.wgsl.j2).
    The axes before `axis` move too unless k is 1 (those past the cropped ones shift by
    k - 1: `shifted` when there are any). Rowwise, except
    for k = 0 on the innermost axis, where the output's innermost coordinate becomes the
    input's second-to-last."""
    inner = rank - 1
    return StageRule(
        "gather.wgsl.j2", params={
            "axis": axis, "index_dimensions": k, "index_bits": element_bits(indices),
            "index_signed": indices.data_type in (DataType.INT32, DataType.INT64),
            "axes": (axis,) if k == 1 else tuple(range(axis + 1)), "row_index": axis < inner or k == 0,
            "shifted": k != 1 and axis > max(k - 1, 0),
            "rowwise": not (k == 0 and axis == inner)},
        uniforms={"index_strides": tuple(index_strides), "gather_size": n},
        reads=(indices,))


def _kernel_frame(desc):
    """The gather on merged axes: the output's axes before the index axes (they read the
    input's axes before `axis`), the index axes and those after (the input's own) merge
    within each group where contiguous in every tensor, size-1 axes drop. The result is a
    gather of p + m + q axes with m index dimensions (at least 1: IndexDimensions 0 is one
    index axis of size 1): (kernel output desc, source strides, stage)."""
    inp, out = desc.input_tensor, desc.output_tensor
    axis, k = desc.axis, desc.index_dimensions
    first = axis + 1 - k  # the first index axis of the output
    in_strides, out_strides, index_strides = inp.effective_strides, out.effective_strides, _index_strides(desc)
    outer_src = [in_strides[j + k - 1] if j + k >= 1 else 0 for j in range(first)]
    outer = _merged(out.sizes[:first], out_strides[:first], outer_src)
    index = merge_axes(out.sizes[first:axis + 1], out_strides[first:axis + 1], index_strides[first:axis + 1])
    inner = _merged(out.sizes[axis + 1:], out_strides[axis + 1:], in_strides[axis + 1:])
    axes = outer + index + inner
    p, m = len(outer), len(index)
    kernel_out = TensorDesc(out.data_type, [a.size for a in axes], [a.strides[0] for a in axes])
    source = [0] * (m - 1) + [a.strides[1] for a in outer] + [in_strides[axis]] + [a.strides[1] for a in inner]
    strides = [0] * p + [a.strides[1] for a in index] + [0] * len(inner)
    stage = _stage(len(axes), p + m - 1, m, strides, inp.sizes[axis], desc.indices_tensor)
    return kernel_out, source, stage


def _merged(sizes, *strides) -> list:
    """merge_axes of a group of axes, without its stand-in axis when every one drops."""
    return [a for a in merge_axes(sizes, *strides) if a.axes]


GATHER = GatherPlanner()
