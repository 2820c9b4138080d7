"""The scatter family (DML_SCATTER_ELEMENTS, DML_SCATTER_ND): output = input, then each
update element written to the output element its index (tuple) selects, combined with
what is there by the reduction (none: replaced; add, mul, max, min: gpudml's extension).

Both operators are one problem, `Scatter`, over the output's own axes:

- a *line* is a set of update elements that may target the same output elements, and
  that no other line's elements ever target: for SCATTER_ELEMENTS the updates along
  `axis` at one coordinate of every other axis (they write one output line along the
  axis), for SCATTER_ND one element of the slice each index tuple writes (the update
  elements at that slice coordinate, one per tuple);
- a *position* is an update element's place in its line: the coordinate on `axis`
  (ELEMENTS), the index tuple's flat number (ND);
- an index tuple of K coordinates (ELEMENTS: K = 1) selects the output coordinates on
  the `tuple_dims`; an index of a signed type below 0 counts from the end of its axis
  (v + n), and a tuple with any coordinate outside [0, n) after that is dropped: nothing
  is written for it, so no write ever leaves the output.

Duplicate targets are decided by position order, never by a race: the update of the
highest position wins (none), and reductions combine in ascending position order
(integers wrap in their type; floats round in their type at each step, float16 through
float32 as numpy's float16 arithmetic does). Every strategy gives this one result:

- `lines` (CPU-class): one invocation per line walks its positions in order, reading
  and writing the output elements its line owns (no other invocation touches them); four
  positions a pass where their indices (and 32/64-bit updates) are whole 16-byte blocks
  (quads_fit), written in position order; with shader-int64, four 64-bit indices load as
  one 32-byte vec4<u64> unit and the input's copy into the output moves vec2<u64> blocks
  (lavapipe: one step per component of a lane's vector).
- `slices` (first where it runs: a replacing SCATTER_ND of 32/64-bit elements, whose index
  tuples target the same output element of every line): each tuple's target and row, the
  last valid tuple of each row found by one sequential pass over the tuples (a scratch word
  per row), then every update element of a row's last tuple copied, as data movement:
  parallel over all update elements, no invocation writes an element another writes.
- `elements` (GPU-class where lines are few): one invocation per output element walks
  every position of its line in order and keeps what targets it (work: output elements
  x positions; the choice where lines alone cannot fill a GPU).

Positions are split into dispatches of at most a loop budget's worth each (base.LOOP_BUDGET;
llvmpipe ends an invocation's loops after 65,535 iterations), run in order: the result
is the same for any split. 32/64-bit outputs are updated in place (a first dispatch copies
the input to the output); 8/16-bit elements share words with neighbours of other lines,
so they are combined in a scratch buffer of one word per output element (the input
copied in first, the output stored from it last). FLOAT64 moves as bits (none); its
reductions compute in f64, on adapters with shader-f64 and shader-int64 (else
UnsupportedError).
"""

from __future__ import annotations

import math
from typing import NamedTuple

from ..errors import InternalError, UnsupportedError
from ..tensor_desc import TensorDesc, merge_axes
from ..types import DataType
from .base import LOOP_BUDGET, KernelFamily, count_option, element_bits
from .builder import Dispatch, KernelPlan, input_buffer, int64_mode, output_buffer, scratch_buffer, unit_access
from .movement import family as movement

STRATEGIES = ("slices", "lines", "elements")
REDUCTIONS = ("none", "add", "mul", "max", "min")
WORKGROUP_SIZE = 64
#: Elements per invocation of the copy and store dispatches.
RUN = 16
#: 16-byte blocks per invocation of the block copies on CPU adapters (GPUs: one each): the
#: element-wise family's BLOCK_RUN_CPU (kernels/elementwise.py: longer runs outrun the
#: prefetcher of lavapipe's SIMD lanes).
BLOCK_RUN = 8
#: Loop iterations an invocation spends besides its positions.
_OVERHEAD = 64
#: Below this many lines a GPU runs `elements` first (one invocation per output element).
GPU_LINES = 1 << 14


class Scatter(NamedTuple):
    """What the family computes (module docstring), every per-axis tuple over the output's
    rank r: `line_sizes` (1 on the tuple's axes), the updates' and the indices' strides
    along the lines (`line_upd`, `line_idx`); the positions' sizes and strides (`pos_*`,
    padded in front with 1 / 0 to r); the tuple's output axes (`tuple_dims`, K of them)
    and the indices' stride between a tuple's coordinates (`tuple_step`)."""

    op: str
    input: TensorDesc
    indices: TensorDesc
    updates: TensorDesc
    output: TensorDesc
    reduction: str
    line_sizes: tuple[int, ...]
    line_upd: tuple[int, ...]
    line_idx: tuple[int, ...]
    pos_sizes: tuple[int, ...]
    pos_upd: tuple[int, ...]
    pos_idx: tuple[int, ...]
    tuple_dims: tuple[int, ...]
    tuple_step: int

    @property
    def lines(self) -> int:
        return math.prod(self.line_sizes)

    @property
    def positions(self) -> int:
        return math.prod(self.pos_sizes)

    @property
    def scratch(self) -> bool:
        """8/16-bit elements: combined in a word per element (module docstring)."""
        return element_bits(self.output) < 32


def _chunk(p: Scatter) -> int:
    """Positions per dispatch: each costs K + 1 loop iterations."""
    return max(1, (LOOP_BUDGET - _OVERHEAD) // (len(p.tuple_dims) + 1))


def strategies_for(p: Scatter, caps, chunk=None) -> tuple[str, ...]:
    """`slices` first where it runs (slices_fit), then `lines` and `elements` (`lines` first
    on software adapters and without caps; on GPUs `elements` first where the lines are
    fewer than GPU_LINES and a line has at most 64 positions). FLOAT64 reductions:
    UnsupportedError."""
    count_option(p.op, "chunk", chunk)
    if (p.output.data_type == DataType.FLOAT64 and p.reduction != "none" and caps is not None
            and not (caps.has("shader-f64") and caps.has("shader-int64"))):
        raise UnsupportedError(f"{p.op}: reduction {p.reduction!r} of FLOAT64 needs the shader features shader-f64 and "
                               f"shader-int64, which the adapter {caps.name} lacks (FLOAT64 scatters with reduction "
                               f"'none' move bits and run there)")
    cpu = caps is None or caps.is_software
    order = ("lines", "elements") if cpu or (p.lines >= GPU_LINES or p.positions > 64) else ("elements", "lines")
    return ("slices", *order) if slices_fit(p) else order


#: The most rows (tuple targets) `slices` keeps a scratch word for (256 MiB).
SLICES_ROWS = 1 << 26


def _rows(p: Scatter) -> int:
    return math.prod(p.output.sizes[d] for d in p.tuple_dims)


def slices_fit(p: Scatter) -> bool:
    """`slices` runs a replacing scatter of 32/64-bit elements whose positions target the
    same element of every line (the indices do not move along the lines: SCATTER_ND), of at
    most SLICES_ROWS rows."""
    return p.reduction == "none" and not p.scratch and not any(p.line_idx) and _rows(p) <= SLICES_ROWS


def _kind(dt: DataType) -> str:
    return "float" if dt.is_float else ("sint" if dt.is_signed else "uint")


def plan(p: Scatter, caps, strategy: str, chunk=None) -> KernelPlan:
    if strategy not in strategies_for(p, caps, chunk):
        raise InternalError(f"{p.op}: strategy {strategy} cannot run {p}")
    bits = element_bits(p.output)
    rank = p.output.rank
    count = p.output.element_count
    packed = [math.prod(p.output.sizes[d + 1:]) for d in range(rank)]
    # The target: the output's own elements (32/64-bit) or the scratch words (8/16-bit).
    target_strides = packed if p.scratch else p.output.effective_strides
    index_bits = element_bits(p.indices)
    native64 = caps is not None and caps.has("shader-int64")
    params = {"kind": _kind(p.output.data_type), "bits": bits, "rank": rank, "reduction": p.reduction,
              "index_bits": index_bits, "index_signed": p.indices.data_type in (DataType.INT32, DataType.INT64),
              "scratch": p.scratch, "blocks": False}
    common = {"out_sizes": p.output.sizes, "tgt_strides": tuple(target_strides)}
    needs64 = bits == 64 and p.reduction != "none"
    int64 = int64_mode(needs64, native64)
    dispatches = []
    # 1. The input copied to the target: the movement family's copy (32/64-bit), or into
    # the scratch words (8/16-bit).
    if p.scratch:
        dispatches.append(Dispatch(
            "scatter.wgsl.j2", {**params, "step": "copy"},
            (scratch_buffer(0, "dest", writable=True), input_buffer(0, "input")),
            {**common, "in_strides": p.input.effective_strides, "count": count, "run": RUN}, -(-count // RUN),
            WORKGROUP_SIZE))
    elif _whole_blocks(p.input) and _whole_blocks(p.output) and p.input.sizes == p.output.sizes:
        blocks = count * bits // 128
        run = BLOCK_RUN if caps is None or caps.is_software else 1
        # vec2<u64> blocks where the builder gives them (builder.unit_access: shader-int64):
        # lavapipe stores a lane's vector one component at a time, 2 steps a block in place of
        # 4 (W43: about 1.5 ms of 28; docs/performance.md).
        unit = unit_access(caps, ("blocks64", "blocks"), p.input.buffer_bytes, p.output.buffer_bytes)
        dispatches.append(Dispatch(
            "scatter.wgsl.j2", {**params, "step": "copy", "blocks": True},
            (output_buffer(0, "dest", bits, unit), input_buffer(0, "input", unit)),
            {**common, "count": blocks, "run": run}, -(-blocks // run), WORKGROUP_SIZE))
    else:
        copies = [movement.copy(p.output.data_type, p.output.sizes, p.output.effective_strides,
                                p.input.effective_strides)]
        dispatches += movement.copy_plan(copies, movement.copy_strategies(copies, caps)[0]).dispatches
    # 2. The updates, a chunk of positions per dispatch, in order.
    size = chunk or _chunk(p)
    if size > _chunk(p):
        raise UnsupportedError(f"{p.op}: option chunk = {chunk}: {chunk} positions of {len(p.tuple_dims)} "
                               f"coordinates pass one invocation's loop budget ({LOOP_BUDGET})")
    tuple_sizes = [p.output.sizes[d] for d in p.tuple_dims]
    tuple_tgt = [target_strides[d] for d in p.tuple_dims]
    pad = rank - len(p.tuple_dims)
    update_buffers = ((scratch_buffer(0, "dest", writable=True) if p.scratch
                       else output_buffer(0, "dest", bits)),
                      input_buffer(1, "indices"), input_buffer(2, "updates"))
    uniforms = {**common, "line_sizes": p.line_sizes, "line_upd": p.line_upd, "line_idx": p.line_idx,
                "pos_sizes": p.pos_sizes, "pos_upd": p.pos_upd, "pos_idx": p.pos_idx,
                "tuple_dims": tuple(p.tuple_dims) + (0,) * pad, "tuple_sizes": tuple(tuple_sizes) + (1,) * pad,
                "tuple_tgt": tuple(tuple_tgt) + (0,) * pad, "tuple_count": len(p.tuple_dims),
                "tuple_step": p.tuple_step}
    # Positions on one merged axis step their offsets; else coordinates over pos_sizes.
    pos_axes = [a for a in merge_axes(p.pos_sizes, p.pos_upd, p.pos_idx) if a.axes]
    flat = len(pos_axes) <= 1
    steps = pos_axes[0].strides if pos_axes else (0, 0)
    params = {**params, "flat_pos": flat, "single": len(p.tuple_dims) == 1}
    uniforms.update({"pos_upd_step": steps[0], "pos_idx_step": steps[1]})
    sizes = [p.output.sizes[d] for d in p.tuple_dims]
    rows = [math.prod(sizes[k + 1:]) for k in range(len(sizes))]
    uniforms["tuple_row"] = tuple(rows) + (0,) * pad
    if strategy == "slices":
        run = BLOCK_RUN if caps is None or caps.is_software else 1
        return KernelPlan(tuple(dispatches) + _slices(p, params, uniforms, update_buffers, run),
                          scratch_bytes=(12 * p.positions, 4 * _rows(p)))
    invocations = p.lines if strategy == "lines" else count
    quads = strategy == "lines" and flat and quads_fit(p, steps[1], p.line_idx, size)
    upd_blocks = quads and not p.scratch and quads_fit(p, steps[0], p.line_upd, size)
    # Four 64-bit indices load as one 32-byte vec4<u64> unit (the builder's `wide` access,
    # where builder.unit_access gives it: shader-int64, the indices bound as whole units;
    # quads_fit puts four on one unit): on lavapipe a load is one step per component of the
    # lane's vector, 4 in place of 8.
    index_units = (quads and index_bits == 64
                   and unit_access(caps, ("wide", "blocks"), p.indices.buffer_bytes) == "wide")
    index_access = "wide" if index_units else "blocks"
    buffers = update_buffers + ((input_buffer(1, f"indices_{index_access}", index_access),) if quads else ()) + (
        (input_buffer(2, "updates_blocks", "blocks"),) if upd_blocks else ())
    for first in range(0, p.positions, size):
        dispatches.append(Dispatch(
            "scatter.wgsl.j2", {**params, "step": strategy, "quads": quads, "upd_blocks": upd_blocks,
                                "index_units": index_units}, buffers,
            {**uniforms, "first": first, "stop": min(first + size, p.positions),
             "invocations": invocations}, invocations, WORKGROUP_SIZE, int64=int64))
    # 3. 8/16-bit: the output stored from the scratch words.
    if p.scratch:
        dispatches.append(Dispatch(
            "scatter.wgsl.j2", {**params, "step": "store"},
            (output_buffer(0, "output", bits, "stores"), scratch_buffer(0, "dest", writable=False)),
            {**common, "out_strides": p.output.effective_strides, "count": count, "run": RUN}, -(-count // RUN),
            WORKGROUP_SIZE))
    scratch = (4 * count,) if p.scratch else ()
    return KernelPlan(tuple(dispatches), scratch_bytes=scratch)


def quads_fit(p: Scatter, step: int, line_strides, chunk: int) -> bool:
    """Whether `lines` reads four positions of a tensor (the indices, or 32/64-bit updates)
    as 16-byte blocks: tuples of one index, the positions one axis stepping 1 in it, and
    every line and every chunk of positions starting on a multiple of four elements (so
    four positions are whole blocks: 16 bytes of 32-bit elements, 32 of 64-bit ones).
    Four positions a pass, their loads as blocks: W43 (SCATTER_ELEMENTS axis 1 of
    [4096, 1024] float32, INT64 indices) on lavapipe, paired with the element-by-element
    kernel in one `gpudml lab` run: the lines step ~0.65x its time."""
    return len(p.tuple_dims) == 1 and step == 1 and chunk % 4 == 0 and all(s % 4 == 0 for s in line_strides)


def _whole_blocks(desc: TensorDesc) -> bool:
    """A packed tensor of whole 16-byte blocks: copied a block at a time."""
    return desc.is_packed and desc.element_count * element_bits(desc) % 128 == 0


def _slices(p: Scatter, params, uniforms, buffers, run: int) -> tuple[Dispatch, ...]:
    """`slices`: marks, owners, keep, then writes. `marks` gives each position t (one
    invocation each) three scratch words: its tuple's target offset, whether the tuple is
    valid, and its row (the tuple's coordinates packed over the tuple's axes); `owners`, one
    invocation per loop budget of positions, in order, writes each valid position into its
    row of a second scratch buffer (the last one stays); `keep` leaves position t marked
    where it is valid and its row's owner. `writes` then copies, one invocation per run of
    update elements (position major, line minor), every element of a marked position to its
    target (16-byte blocks where the updates and the output are packed and a slice is whole
    blocks): each output element is written by at most one invocation, the last position's,
    as `lines` gives. The rows' words need no clearing: a row is read only where a valid
    position of this call wrote it."""
    marks = (scratch_buffer(0, "marks", writable=True), input_buffer(1, "indices"))
    t = p.positions
    out = [Dispatch("scatter.wgsl.j2", {**params, "step": "marks"}, marks, {**uniforms, "invocations": t}, t,
                    WORKGROUP_SIZE)]
    for first in range(0, t, LOOP_BUDGET - _OVERHEAD):
        out.append(Dispatch(
            "scatter.wgsl.j2", {**params, "step": "owners"},
            (scratch_buffer(0, "marks", writable=False), scratch_buffer(1, "owners", writable=True)),
            {**uniforms, "first": first, "stop": min(first + LOOP_BUDGET - _OVERHEAD, t)}, 1, WORKGROUP_SIZE))
    out.append(Dispatch(
        "scatter.wgsl.j2", {**params, "step": "keep"},
        (scratch_buffer(0, "marks", writable=True), scratch_buffer(1, "owners", writable=False)),
        {**uniforms, "invocations": t}, t, WORKGROUP_SIZE))
    count = p.positions * p.lines
    per = 128 // element_bits(p.output)  # elements per 16-byte block
    if p.output.is_packed and p.updates.is_packed and p.lines % per == 0:
        # Whole blocks: a position's slice is whole blocks of the updates and of its target
        # row (packed tensors, lines a multiple of the block: the targets are too).
        blocks = count // per
        out.append(Dispatch(
            "scatter.wgsl.j2", {**params, "step": "writes", "blocks": True},
            (output_buffer(0, "dest", element_bits(p.output), "blocks"), scratch_buffer(0, "marks", writable=False),
             input_buffer(2, "updates", "blocks")),
            {**uniforms, "count": blocks, "run": run, "lines": p.lines // per, "per": per}, -(-blocks // run),
            WORKGROUP_SIZE))
        return tuple(out)
    out.append(Dispatch(
        "scatter.wgsl.j2", {**params, "step": "writes", "blocks": False},
        (buffers[0], scratch_buffer(0, "marks", writable=False), buffers[2]),
        {**uniforms, "count": count, "run": RUN, "lines": p.lines}, -(-count // RUN), WORKGROUP_SIZE))
    return tuple(out)


class ScatterFamily(KernelFamily):
    """The scatter family: the module's functions over a `Scatter`."""

    strategies = STRATEGIES
    options = ("chunk",)

    def strategies_for(self, problem: Scatter, caps, chunk=None) -> tuple[str, ...]:
        return strategies_for(problem, caps, chunk)

    def plan(self, problem: Scatter, caps, strategy: str, chunk=None) -> KernelPlan:
        return plan(problem, caps, strategy, chunk)


FAMILY = ScatterFamily()
