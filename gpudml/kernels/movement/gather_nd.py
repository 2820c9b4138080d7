"""The kernels of DML_GATHER_ND and DML_GATHER_ND1: the input's batch coordinates from the
output's batch axes, its t indexed coordinates from the index tuple, each clamped into its
dimension, the rest the output's (the stage of shaders/gather_nd.wgsl.j2, on the desc's
own axes)."""

from __future__ import annotations

from ..base import element_bits
from ..builder import KernelPlan
from ..chain import StageRule, chain
from .family import MovementPlanner, chain_plan


class GatherNdPlanner(MovementPlanner):
    def stage(self, desc) -> StageRule:
        """The index rule over the desc's own axes, as a stage of a chain."""
        inp, indices = desc.input_tensor, desc.indices_tensor
        r, m, k, b = inp.rank, desc.input_dimension_count, desc.indices_dimension_count, desc.batch_count
        t = indices.sizes[r - 1]
        q = m - b - t  # the input's dimensions after the indexed ones: the output's last q
        first = r - q - (k - 1)  # the output's first batch or index axis
        strides = indices.effective_strides
        index_strides = tuple(strides[j + q - 1] if first <= j < r - q else 0 for j in range(r))
        return StageRule(
            "gather_nd.wgsl.j2", params={
                "lead": r - m, "batch": b, "tuple_size": t, "first": first, "q": q,
                "index_bits": element_bits(indices), "index_signed": indices.data_type.numpy.kind == "i",
                "axes": tuple(range(r - q)), "rowwise": q >= 1},
            uniforms={"index_strides": index_strides, "tuple_stride": strides[r - 1], "gather_sizes": inp.sizes},
            reads=(indices,))

    def plan(self, desc, caps, strategy: str, block: str | None = None) -> KernelPlan:
        return chain_plan(strategy, desc.output_tensor, chain([self.stage(desc)], desc.input_tensor.effective_strides),
                          block=block)


GATHER_ND = GatherNdPlanner()
