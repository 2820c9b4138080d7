"""The scan family: strategies, cost model and plan, for any operator that writes the running
combination of the elements along one axis (DML_CUMULATIVE_SUMMATION and
DML_CUMULATIVE_PRODUCT: `ScanFamily`, its instance FAMILY, and the operators' `ScanPlanner`;
their semantics are ops/cumulative.py's).

The problem is a `Scan` (the operator's template, input desc, output desc, axis, direction,
exclusive); the module's functions take its fields. The axis stays, the other
axes drop when of size 1 and merge where contiguous in both tensors (`layout`): `lines`
independent lines of `n` elements. The direction folds into where a line starts and the
signed step between its elements, so the kernels always scan forwards. Strategies:

- `runs` (CPU-class): few invocations, each scanning a run of consecutive positions of one
  line serially. A line longer than a run (the loop budget, or too few lines to keep the
  adapter busy) is cut into chunks: a first pass writes every chunk's total to scratch,
  the second starts each chunk from the combination of the earlier chunks' totals
  (reduce, then scan: the input is read twice, the output written once).
- `tiles` (GPU-class): a workgroup of 256 invocations scans a tile of the line(s) in
  workgroup memory: coalesced loads (neighbouring invocations read neighbouring elements:
  along the axis when it is contiguous, across 32 neighbouring lines when those are), a
  serial scan of 4 elements per invocation, a Hillis-Steele scan of the invocations'
  totals, coalesced stores. A workgroup walks the tiles of one chunk of its line(s),
  carrying the running total from tile to tile; a line of several chunks goes through
  chunk totals in scratch as `runs` does. GPUs take it first, except for
  lines of at most SHORT_LINE elements that cannot lie side by side in a tile (a serial
  walk of a short line is no long walk, and the tile would idle).

Float sums in `runs` accumulate subtotals of SUBTOTAL elements before adding them to the running
carry, so that no output goes through more than a few hundred roundings (the bound the
operators document: `rounding_depth`).

Plan options (for experiments): chunks (pieces per line, each with its total in scratch),
lines (tiles: lines side by side where they are contiguous, a power of two up to 256 in
place of TILE_LINES: a tile then reads lines * 4 contiguous bytes per position),
int64_native=False (64-bit integers as exact u32 pairs on any adapter).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import NamedTuple

from ..errors import UnsupportedError
from ..tensor_desc import TensorDesc, merge_axes
from ..types import AxisDirection, DataType
from . import elementwise
from .base import LOOP_BUDGET, KernelFamily, ProblemPlanner, count_option, power_of_two_option
from .builder import Dispatch, KernelPlan, input_buffer, int64_mode, output_buffer, scratch_buffer
from .chain import Chain
from .epilogue import attach as attach_epilogue
from .epilogue import check as check_epilogue

STRATEGIES = ("runs", "tiles")
OPTIONS = ("chunks", "lines", "int64_native")

#: Float sums of `runs` add subtotals of this many elements to the carry (rounding depth).
SUBTOTAL = 64
#: runs: the longest run one invocation scans (with the carry loop, under LOOP_BUDGET) ...
RUN_MAX = 16384
#: ... lines are cut into chunks until this many invocations run (few long lines) ...
RUNS_INVOCATIONS = 1024
#: ... but not into chunks shorter than this (the totals pass reads the input once more).
RUN_MIN = 1024
RUNS_WORKGROUP = 64
#: tiles: invocations per workgroup, elements each, lines side by side where lines are
#: contiguous, tiles one workgroup walks at most, workgroups wanted to fill a GPU.
TILE_WORKGROUP = 256
TILE_ELEMENTS = 4
TILE_LINES = 32
TILES_PER_CHUNK = 64
TILE_WORKGROUPS = 1024
#: GPUs too take `runs` first for lines this short that tiles cannot put side by side: a
#: tile would hold one line of a few elements and leave most of its 256 invocations idle
#: (measured on lavapipe, [300000, 3] int32 along the last axis: runs 0.2 s, tiles 19 s).
SHORT_LINE = 64


@dataclass(frozen=True)
class ScanLayout:
    """Lines of n elements: the other axes merged (line_sizes, their strides in the input
    and output; at least one axis), and along the scanned axis, in scan order, where a
    line starts (relative to the line's offset) and the signed step, per tensor."""

    n: int
    line_sizes: tuple[int, ...]
    line_in_strides: tuple[int, ...]
    line_out_strides: tuple[int, ...]
    in_start: int
    in_step: int
    out_start: int
    out_step: int

    @property
    def lines(self) -> int:
        return math.prod(self.line_sizes)


def layout(inp: TensorDesc, out: TensorDesc, axis: int, direction: AxisDirection) -> ScanLayout:
    """The scan of `axis` as lines (see ScanLayout); DECREASING starts at the axis' end."""
    axes = merge_axes(inp.sizes, inp.effective_strides, out.effective_strides, fixed={axis})
    along = next(a for a in axes if a.axes == (axis,))
    others = [a for a in axes if a is not along] or [along._replace(size=1, strides=(0, 0))]
    n, (s_in, s_out) = along.size, along.strides
    backwards = direction == AxisDirection.DECREASING
    return ScanLayout(
        n, tuple(a.size for a in others), tuple(a.strides[0] for a in others), tuple(a.strides[1] for a in others),
        (n - 1) * s_in if backwards else 0, -s_in if backwards else s_in,
        (n - 1) * s_out if backwards else 0, -s_out if backwards else s_out)


def rounding_depth(n: int) -> int:
    """An upper bound of the roundings any float output of a scan of n elements goes
    through, under either strategy as planned (the operators' documented precision; plan
    option `chunks` may go deeper). runs: a subtotal of SUBTOTAL, the carry within a run
    (RUN_MAX / SUBTOTAL subtotals), the carry of earlier chunks (subtotals of SUBTOTAL totals, each
    total as deep as a run). tiles: TILE_ELEMENTS serial elements, log2(TILE_WORKGROUP)
    Hillis-Steele steps, TILES_PER_CHUNK tile carries, and the chunk carry: each of the
    Y invocations of a line walks every Y-th earlier chunk total, then a tree of log2(Y)
    steps merges them. The deepest walk is Y = TILE_WORKGROUP / TILE_LINES (lines side by
    side), over at most TILE_WORKGROUPS + n / (Y * TILE_ELEMENTS * TILES_PER_CHUNK)
    chunks: n / 16384 + 131 steps, past the runs bound from about 11 M elements on."""
    run = SUBTOTAL + RUN_MAX // SUBTOTAL + 1
    chunks = -(-n // RUN_MIN)
    runs = 2 * run + SUBTOTAL + chunks // SUBTOTAL + 4
    y = TILE_WORKGROUP // TILE_LINES
    chunks = TILE_WORKGROUPS + -(-n // (y * TILE_ELEMENTS * TILES_PER_CHUNK))
    return max(runs, _Tiles(TILE_LINES, chunks, TILES_PER_CHUNK).depth + 1)


# ---------------------------------------------------------------------------- runs
@dataclass(frozen=True)
class _Runs:
    chunks: int
    length: int

    @property
    def cost(self) -> float:
        """Loop iterations of one invocation of the scan pass, at most (carry, then run)."""
        return self.chunks * (1 + 1 / SUBTOTAL) + self.length * (1 + 1 / SUBTOTAL) + 8


def _runs(lay: ScanLayout, requested: int | None, group: int) -> _Runs:
    n = lay.n
    need = -(-n // RUN_MAX)
    if requested is None:
        requested = min(-(-RUNS_INVOCATIONS * group // lay.lines), n // RUN_MIN)
    chunks = max(1, need, min(int(requested), n))
    length = -(-n // chunks)
    return _Runs(-(-n // length), length)


# ---------------------------------------------------------------------------- tiles
@dataclass(frozen=True)
class _Tiles:
    lines_per_tile: int  # G: neighbouring lines side by side in a tile (1 or TILE_LINES)
    chunks: int  # S per line
    tiles_per_chunk: int  # M

    @property
    def cost(self) -> float:
        """Loop iterations of one invocation, at most: the chunk carry, then per tile
        the loads, the serial scan, the Hillis-Steele steps, the rescan and the stores."""
        steps = int(math.log2(TILE_WORKGROUP // self.lines_per_tile))
        carry = self.chunks * self.lines_per_tile / TILE_WORKGROUP + steps
        return carry + self.tiles_per_chunk * (4 * TILE_ELEMENTS + steps + 2) + 8

    @property
    def depth(self) -> int:
        """Roundings of the deepest output: the serial elements, the Hillis-Steele steps,
        the tile carries, and the chunk carry (each of a line's Y invocations walks every
        Y-th earlier chunk total, then a tree of log2(Y) steps merges them)."""
        y = TILE_WORKGROUP // self.lines_per_tile
        steps = int(math.log2(TILE_WORKGROUP))
        return TILE_ELEMENTS + steps + self.tiles_per_chunk + -(-self.chunks // y) + int(math.log2(y))


def _tiles(lay: ScanLayout, in_axis_stride: int, requested: int | None, lines: int | None = None) -> _Tiles:
    g = TILE_LINES if lines is None else lines
    columns = lay.line_in_strides[-1] == 1 and lay.lines >= g and abs(in_axis_stride) != 1
    g = g if columns else 1
    tiles = -(-lay.n // (TILE_WORKGROUP // g * TILE_ELEMENTS))
    line_groups = -(-lay.lines // g)
    if requested is None:
        requested = -(-TILE_WORKGROUPS // line_groups)
    chunks = min(tiles, max(int(requested), -(-tiles // TILES_PER_CHUNK), 1))
    per_chunk = -(-tiles // chunks)
    return _Tiles(g, -(-tiles // per_chunk), per_chunk)


def variants(inp: TensorDesc, out: TensorDesc, axis: int, direction, caps, strategy: str) -> tuple[dict, ...]:
    """Plan options worth timing beside `strategy`'s own plan when autotuning: `tiles` with
    more lines side by side (64, 128, 256 in place of TILE_LINES: a tile reads more of each
    row), where the lines lie side by side at all and the plan stays within the rounding
    depth the operators document (`rounding_depth`). `runs` has none (its chunks would)."""
    if strategy != "tiles":
        return ()
    lay = layout(inp, out, axis, direction)
    found = []
    for g in (64, 128, 256):
        tiles = _tiles(lay, _in_axis_stride(inp, axis), None, g)
        if tiles.lines_per_tile == g and tiles.depth <= rounding_depth(lay.n):
            found.append({"lines": g})
    return tuple(found)


# ---------------------------------------------------------------------------- strategies, plan
def _in_axis_stride(inp: TensorDesc, axis: int) -> int:
    return inp.effective_strides[axis] if inp.sizes[axis] > 1 else 0


def _value_words(dt: DataType) -> int:
    return 2 if dt.size == 8 else 1


def strategies_for(inp: TensorDesc, out: TensorDesc, axis: int, direction, caps, *, chunks=None, lines=None,
                   int64_native=None) -> tuple[str, ...]:
    """The strategies that can run the scan, the chosen one first: `runs` on CPU adapters,
    `tiles` elsewhere (but `runs` for short lines that a tile cannot put side by side).
    `runs` needs its invocations within the loop budget, `tiles` its workgroup within the
    adapter's limits; both their partial totals within one binding (UnsupportedError when
    neither can run)."""
    count_option("scan", "chunks", chunks)
    lines = power_of_two_option("scan", "lines", lines, TILE_WORKGROUP)
    lay = layout(inp, out, axis, direction)
    words = _value_words(inp.data_type)
    limit = _binding_limit(caps)
    ok = []
    runs = _runs(lay, chunks, _side_by_side(lay, inp.data_type))
    if runs.cost <= LOOP_BUDGET and lay.lines * runs.chunks * words * 4 <= limit:
        ok.append("runs")
    tiles = _tiles(lay, _in_axis_stride(inp, axis), chunks, lines)
    storage = (TILE_ELEMENTS + 1) * TILE_WORKGROUP * 4 * words + 4
    fits = caps is None or (caps.max_workgroup_storage_size >= storage
                            and caps.max_invocations_per_workgroup >= TILE_WORKGROUP)
    if fits and tiles.cost <= LOOP_BUDGET and lay.lines * tiles.chunks * words * 4 <= limit:
        ok.append("tiles")
    if not ok:
        most = limit // (max(runs.chunks, 1) * words * 4)
        raise UnsupportedError(
            f"scan of {lay.n} elements per line over {lay.lines} lines: 'runs' needs {math.ceil(runs.cost)} loop "
            f"steps per invocation (one invocation's loop budget: {LOOP_BUDGET}) and "
            f"{lay.lines * runs.chunks * words * 4} bytes of partial totals ({runs.chunks} per line); 'tiles' "
            f"needs {math.ceil(tiles.cost)} loop steps, "
            f"{lay.lines * tiles.chunks * words * 4} bytes of partial totals and {storage} bytes of workgroup "
            f"storage (the adapter has {caps.max_workgroup_storage_size if caps else 'no limit'}); the partial "
            f"totals must fit one binding (max-storage-buffer-binding-size, {limit} bytes). Scan fewer lines per "
            f"call (at most {most}) or split the axis into pieces scanned in turn (each piece's total added to "
            f"the next)")
    serial = caps is None or caps.is_software or (lay.n <= SHORT_LINE and tiles.lines_per_tile == 1)
    return tuple(sorted(ok, key=lambda s: (s == "runs") != serial))


def plan(template: str, inp: TensorDesc, out: TensorDesc, axis: int, direction, exclusive: bool, caps,
         strategy: str, *, chunks=None, lines=None, int64_native=None, through=None,
         element_stores: bool = False) -> KernelPlan:
    """The dispatches of `strategy` (one of strategies_for's) for the operator whose
    template (it defines the combination, then runs lib/scan.wgsl.j2) is `template`.
    `through` (the prologue): the input is the packed value `inp` of a chain of
    data-movement stages (a kernels.chain.Chain read from input 0 and its extra tensors) or
    of element-wise and data-movement nodes (an elementwise.FusedProblem in coordinate
    mode), read element by element (no 16-byte blocks). `element_stores`: `runs` stores
    element by element (no 16-byte blocks, no lines side by side): a store epilogue's
    (kernels/epilogue.py)."""
    chunks = count_option("scan", "chunks", chunks)
    lines = power_of_two_option("scan", "lines", lines, TILE_WORKGROUP)
    lay = layout(inp, out, axis, direction)
    dt = inp.data_type
    if int64_native is None:
        int64_native = caps is not None and caps.has("shader-int64")
    params = {
        "kind": "float" if dt.is_float else "uint", "bits": dt.size * 8, "exclusive": bool(exclusive),
        "native64": bool(int64_native) and dt.size == 8, "rank": len(lay.line_sizes), "strategy": strategy,
        "through": through.stages if isinstance(through, Chain) else (),
        "through_rank": inp.rank if through is not None else 0, "through_fetch": None,
    }
    source, reads = (input_buffer(0, "input"),), ()
    if isinstance(through, Chain):
        reads = through.buffers(1)
        uniforms_through = {**through.uniforms, "through_sizes": inp.sizes}
    elif through is not None:
        params["through_fetch"], fetched, reads = elementwise.fetch(through, caps)
        source, uniforms_through = (), {**fetched, "through_sizes": inp.sizes}
    else:
        uniforms_through = {}
    uniforms = {
        "line_sizes": lay.line_sizes, "line_in_strides": lay.line_in_strides, "line_out_strides": lay.line_out_strides,
        "n": lay.n, "lines": lay.lines, "in_start": lay.in_start, "in_step": lay.in_step,
        "out_start": lay.out_start, "out_step": lay.out_step, **uniforms_through,
    }
    words = _value_words(dt)
    vec, group = "", 1
    if strategy == "runs":
        plain = through is None and not element_stores  # (16-byte blocks: loaded, stored)
        vec, group = (_vec_direction(lay, dt), _side_by_side(lay, dt)) if plain else ("", 1)
        runs = _runs(lay, chunks, group)
        pieces, invocations, workgroup = runs.chunks, lay.lines // group, RUNS_WORKGROUP
        params.update(subtotals=dt.is_float, vec=vec, group=group > 1)
        uniforms.update(chunks=runs.chunks, chunk_length=runs.length)
    else:
        tiles = _tiles(lay, _in_axis_stride(inp, axis), chunks, lines)
        pieces, workgroup = tiles.chunks, TILE_WORKGROUP
        invocations = -(-lay.lines // tiles.lines_per_tile) * TILE_WORKGROUP
        params.update(workgroup=TILE_WORKGROUP, elements=TILE_ELEMENTS, lines_per_tile=tiles.lines_per_tile)
        uniforms.update(chunks=tiles.chunks, tiles_per_chunk=tiles.tiles_per_chunk,
                        line_groups=-(-lay.lines // tiles.lines_per_tile))
    bits = dt.size * 8
    by_blocks = vec or group > 1
    reads = source + ((input_buffer(0, "input_vec", "blocks"),) if by_blocks else ()) + reads
    writes = (output_buffer(0, "output", bits, "stores"),) + (
        (output_buffer(0, "output_vec", bits, "blocks"),) if by_blocks else ())
    if pieces == 1:
        scan = _dispatch(template, {**params, "pass": "scan", "carried": False}, writes + reads, uniforms,
                         invocations, workgroup)
        return KernelPlan((scan,))
    totals = _dispatch(template, {**params, "pass": "totals", "carried": False},
                       (scratch_buffer(0, "totals", writable=True),) + reads, uniforms, invocations * (pieces - 1),
                       workgroup)
    scan = _dispatch(template, {**params, "pass": "scan", "carried": True},
                     writes + reads + (scratch_buffer(0, "totals", writable=False),), uniforms,
                     invocations * pieces, workgroup)
    return KernelPlan((totals, scan), scratch_bytes=(lay.lines * (pieces - 1) * words * 4,))


def _vec_direction(lay: ScanLayout, dt: DataType) -> str:
    """'forward' or 'backward' where runs can move whole 16-byte blocks (32- and 64-bit
    elements, step +1 or -1 along the axis in both tensors, lines of two blocks or more),
    else ''. Measured with `gpudml lab` on lavapipe (2 cores), [4096, 4096] float32 along the
    last axis: 0.71-0.78x the copy kernel's speed with blocks (32-36 ms), 0.25-0.31x element
    by element (46-48 ms)."""
    if dt.size < 4 or lay.in_step != lay.out_step or abs(lay.in_step) != 1 or lay.n < 2 * 16 // dt.size:
        return ""
    return "forward" if lay.in_step == 1 else "backward"


def _side_by_side(lay: ScanLayout, dt: DataType) -> int:
    """Lines per runs invocation: the elements of a 16-byte block's worth of neighbouring
    lines (32- and 64-bit elements) where, in both tensors, the innermost line axis is
    contiguous and whole blocks of it line up at every position; else 1. Measured with
    `gpudml lab` on lavapipe (2 cores), [4096, 4096] float32 along the first axis: 0.35-0.36x
    the copy kernel's speed side by side (66-70 ms), 0.19-0.20x one line per invocation (127 ms)."""
    per = 16 // dt.size
    if dt.size < 4 or lay.line_in_strides[-1] != 1 or lay.line_out_strides[-1] != 1 or lay.line_sizes[-1] % per:
        return 1
    steps = lay.line_in_strides[:-1] + lay.line_out_strides[:-1] + (lay.in_step, lay.out_step, lay.in_start,
                                                                  lay.out_start)
    return per if all(s % per == 0 for s in steps) else 1


def _dispatch(template: str, params: dict, buffers, uniforms: dict, invocations: int, workgroup: int) -> Dispatch:
    fetch, host = params["through_fetch"], params["bits"] == 64
    # (64-bit values of its own, or only the fused read's: W64 as the fused read takes it)
    int64 = int64_mode(host or bool(fetch and fetch.int64),
                       params["native64"] if host else bool(fetch and fetch.native64))
    return Dispatch(template=template, params=params, buffers=buffers, uniforms=uniforms,
                    invocations=invocations, workgroup_size=workgroup, int64=int64)


def _binding_limit(caps) -> int:
    return caps.max_storage_binding_size if caps is not None else 1 << 27


# ---------------------------------------------------------------------------- the family
class Scan(NamedTuple):
    """What a scan computes: the running combination along `axis` of `input` into `output`,
    in `direction` (an AxisDirection), `exclusive` or not; the operator's `template` (which
    defines the combination, then runs lib/scan.wgsl.j2)."""

    template: str
    input: TensorDesc
    output: TensorDesc
    axis: int
    direction: AxisDirection
    exclusive: bool


class ScanFamily(KernelFamily):
    """The scan family over a `Scan`: the module's functions, the prologue and the epilogue."""

    strategies = STRATEGIES
    options = OPTIONS
    prologue = True
    epilogue = True

    def strategies_for(self, problem: Scan, caps, **options) -> tuple[str, ...]:
        return strategies_for(problem.input, problem.output, problem.axis, problem.direction, caps, **options)

    def plan(self, problem: Scan, caps, strategy: str, **options) -> KernelPlan:
        return plan(*problem, caps, strategy, **options)

    def variants(self, problem: Scan, caps, strategy: str) -> tuple[dict, ...]:
        return variants(problem.input, problem.output, problem.axis, problem.direction, caps, strategy)

    def plan_with_epilogue(self, problem: Scan, caps, strategy: str, epilogue) -> KernelPlan:
        """Both strategies, the scan pass storing element by element (`runs` without its
        16-byte blocks)."""
        check_epilogue(epilogue, problem.output)
        return attach_epilogue(plan(*problem, caps, strategy, element_stores=True), epilogue, 1)

    def strategies_through(self, problem: Scan, caps) -> tuple[str, ...]:
        return self.strategies_for(problem._replace(input=_packed(problem.input)), caps)

    def plan_through(self, problem: Scan, caps, strategy: str, chain, epilogue=None) -> KernelPlan:
        made = plan(*problem._replace(input=_packed(problem.input)), caps, strategy, through=chain,
                    element_stores=epilogue is not None)
        if epilogue is None:
            return made
        check_epilogue(epilogue, problem.output)
        return attach_epilogue(made, epilogue)


FAMILY = ScanFamily()


class ScanPlanner(ProblemPlanner):
    """The Planner of a cumulative operator (fields input_tensor, output_tensor, axis,
    axis_direction and its exclusive flag, `exclusive_field`), whose template is `template`."""

    family = FAMILY

    def __init__(self, template: str, exclusive_field: str):
        def problem(desc) -> Scan:
            return Scan(template, desc.input_tensor, desc.output_tensor, desc.axis, desc.axis_direction,
                        getattr(desc, exclusive_field))
        super().__init__(problem)


def _packed(desc: TensorDesc) -> TensorDesc:
    """The value a prologue reads, as the kernel sees it: packed."""
    return TensorDesc(desc.data_type, desc.sizes)
