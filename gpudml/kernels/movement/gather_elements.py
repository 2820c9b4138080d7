"""The kernels of DML_GATHER_ELEMENTS: the coordinate on `axis` read from the indices tensor
at the output's coordinate, clamped into the axis (the stage of
shaders/gather_elements.wgsl.j2), on the desc's axes with the other axes merged where
contiguous in the three tensors; alone, also the operator's own CPU-class `rows`
strategy (shaders/gather_elements.wgsl.j2's kernel: per row, offsets computed once, per
element its index, the clamp and one load; indices loaded as 16-byte blocks where whole, as
32-byte vec4<u64> units and the output stored as vec2<u64> with shader-int64).
W40 on lavapipe: `rows` 0.68-0.79x the copy kernel's bandwidth by process CPU time (before the
u64 units 0.58-0.84, 12% more time in the same processes), 0.55-0.65x by GPU timestamps
(paired 0.52-0.65), `stretches` 0.33-0.42x (docs/performance.md, "Gathers")."""

from __future__ import annotations

from ...tensor_desc import TensorDesc, merge_axes
from ..base import element_bits
from ..builder import KernelPlan, input_buffer, unit_access
from ..chain import StageRule, chain
from .family import STRATEGIES, MovementPlanner, chain_plan, check_block
from .family import strategies_for as movement_strategies

#: `rows`: output elements per invocation (a multiple of every element width's block).
ROWS_RUN = 64


class GatherElementsPlanner(MovementPlanner):
    strategies = ("rows",) + STRATEGIES

    def strategies_for(self, desc, caps, block: str | None = None) -> tuple[str, ...]:
        """`rows` (the choice on CPU adapters where it applies: the output packed and its
        rows, the innermost kernel axis, whole 16-byte blocks): an invocation owns ROWS_RUN
        consecutive output elements, the rows' offsets computed once per row, each element
        its index, the clamp and one load (no stretch per element: along the axis every
        element of a random gather is one). Then the data-movement strategies (on GPUs
        `coalesced` leads and `rows`, CPU-shaped, comes last)."""
        check_block(block)
        rest = movement_strategies(desc.output_tensor, caps)
        if not rows_fit(desc):
            return rest
        return ("rows",) + rest if caps is None or caps.is_software else rest + ("rows",)

    def stage(self, desc) -> StageRule:
        """The index rule over the desc's own axes, as a stage of a chain."""
        return _stage(desc.input_tensor.rank, desc.axis, desc.indices_tensor.effective_strides,
                      desc.input_tensor.sizes[desc.axis], desc.indices_tensor)

    def plan(self, desc, caps, strategy: str, block: str | None = None) -> KernelPlan:
        rows = strategy == "rows"
        kernel_out, source, stage = _kernel_frame(desc, ROWS_RUN if rows else None, caps)
        the_chain = chain([stage], source)
        extra = ()
        if rows and stage.params["index_blocks"]:
            access = stage.params["index_access"]
            extra = (input_buffer(1, f"{the_chain.stages[0].prefix}lengths_{access}", access),)
        run = {"run": ROWS_RUN, "output_access": "blocks64" if stage.params["out_wide"] else "blocks"} if rows else {}
        return chain_plan(strategy, kernel_out, the_chain, block=block, extra_buffers=extra, **run)


def rows_fit(desc) -> bool:
    """Whether `rows` runs `desc`: a packed output whose kernel rows (merged innermost axis)
    are a whole number of 16-byte blocks."""
    kernel_out = _kernel_frame(desc)[0]
    return kernel_out.is_packed and kernel_out.sizes[-1] % (128 // element_bits(kernel_out)) == 0


def _stage(rank: int, axis: int, index_strides, n: int, indices: TensorDesc, run: int | None = None,
           out: TensorDesc | None = None, caps=None) -> StageRule:
    """The stage of a gather of elements on `axis` (of size n) of rank-`rank` tensors, the
    indices read with `index_strides` (per output axis); `run`: the `rows` kernel's
    elements per invocation, `out` the operator's output and `caps` the adapter's (that
    strategy only: its 64-bit units, builder.unit_access)."""
    # `rows` reads a block's indices as 16-byte blocks where each block's are whole blocks of
    # the indices: packed along the row, every row starting on a block of them.
    per_block = 128 // element_bits(indices)
    index_blocks = (run is not None and index_strides[-1] == 1 and all(s % per_block == 0 for s in index_strides[:-1])
                    and (16 // out.data_type.size) % per_block == 0)
    access = _index_access(index_blocks, caps, indices, index_strides, out)
    rows = {} if run is None else {
        "run": run, "index_blocks": index_blocks, "index_access": access,
        "out_wide": unit_access(caps, ("blocks64", "blocks"), out.buffer_bytes) == "blocks64"}
    return StageRule(
        "gather_elements.wgsl.j2", params={
            **rows,
            "axis": axis, "index_bits": element_bits(indices),
            "index_signed": indices.data_type.numpy.kind == "i",
            "axes": (axis,), "rowwise": axis == rank - 1},
        uniforms={"index_strides": tuple(index_strides), "gather_size": n},
        reads=(indices,))


def _index_access(index_blocks: bool, caps, indices: TensorDesc, index_strides, out: TensorDesc) -> str:
    """How `rows` loads a block's indices (index_blocks: as whole 16-byte blocks at all): where
    the builder gives them 64-bit units (builder.unit_access: shader-int64, the indices bound
    as whole units), 64-bit ones as 32-byte vec4<u64> units (the builder's `wide` access)
    where each output block's are whole units (the kernel's arithmetic: 4 of them, packed
    along the row, every row on a unit), else as vec2<u64> blocks (`blocks64`); 32-bit
    ones, or without 64-bit units, as vec4<u32> `blocks`. lavapipe loads a lane's vector in
    one step per 64-bit component: W40's 4 indices a block in 4 steps, not 8
    (docs/performance.md)."""
    if not (index_blocks and element_bits(indices) == 64):
        return "blocks"
    per_block = 16 // out.data_type.size
    units = per_block % 4 == 0 and all(s % 4 == 0 for s in index_strides[:-1])
    return unit_access(caps, ("wide", "blocks64", "blocks") if units else ("blocks64", "blocks"), indices.buffer_bytes)


def _kernel_frame(desc, run: int | None = None, caps=None):
    """The gather on merged axes: the other axes merge where contiguous in the output, the
    input and the indices (their sizes are one but on the axis), size-1 ones drop; the axis
    stays, whatever its size. (kernel output desc, source strides, stage)."""
    inp, indices, out, axis = desc.input_tensor, desc.indices_tensor, desc.output_tensor, desc.axis
    axes = merge_axes(out.sizes, out.effective_strides, inp.effective_strides, indices.effective_strides,
                      fixed=(axis,))
    kernel_out = TensorDesc(out.data_type, [a.size for a in axes], [a.strides[0] for a in axes])
    kernel_axis = next(i for i, a in enumerate(axes) if a.axes == (axis,))
    stage = _stage(len(axes), kernel_axis, [a.strides[2] for a in axes], inp.sizes[axis], indices, run, out, caps)
    return kernel_out, [a.strides[1] for a in axes], stage


GATHER_ELEMENTS = GatherElementsPlanner()
