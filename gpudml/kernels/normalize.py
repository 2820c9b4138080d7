"""The normalize family: operators that normalize each element against a reduction of
its row (DML_ACTIVATION_SOFTMAX(1), LOG_SOFTMAX(1), HARDMAX(1): ops/softmax.py), where a
*row* is the sub-tensor over the reduced axes at one position of the kept axes.

The problem arrives as a `Problem`: the function ("SOFTMAX", "LOG_SOFTMAX", "HARDMAX"),
the input and output descs (one set of sizes; each its own strides: strided and
broadcast inputs, strided outputs) and the reduced axes, any set of them. Size-1 axes
drop, and neighbouring axes merge where contiguous in both tensors, the kept ones among
themselves and the reduced ones among themselves (`layout`); the reduced axes are walked
row-major in increasing axis order (HARDMAX's "first" maximum is the first in that order).

Per row, as shaders/softmax.wgsl.j2 computes it (FLOAT32 and FLOAT16 in f32; a float16
result is rounded once, on the store):

- SOFTMAX / LOG_SOFTMAX: m, the row's maximum (NaN where any element is NaN); where m is
  not finite (a NaN, a +inf, or every element -inf) every result of the row is NaN;
  otherwise s = sum(exp(x - m)), added in subtotals of SUBTOTAL elements, and each result
  exp(x - m) / s, or (x - m) - log(s).
- HARDMAX: 1 at the first maximum of the row (the first NaN where there is one; 0.0 and
  -0.0 are equal), 0 elsewhere.

Strategies, CPU-class:

- `rows`: one invocation per row: a pass for the maximum, one for the sum (not HARDMAX),
  one writing the row. Runs where a row's passes fit the loop budget (base.LOOP_BUDGET).
- `chunks`: each row cut into chunks; a first dispatch saves each chunk's (maximum, sum of
  exp(x - maximum)) (HARDMAX: its first maximum and index) to scratch, a second one merges
  the row's chunk states in each (row, chunk) invocation (s = sum of s_c * exp(m_c - m))
  and writes the chunk. For rows too long for `rows` (and for few long rows: more
  invocations); it runs rows of up to max_row(function) elements (1.3e8 for the softmaxes).

GPU-class:

- `workgroup`: L lanes per row (a power of two up to GPU_WORKGROUP_SIZE: several rows per
  workgroup when rows are short), lane t reading elements t, t + L, ...; the lanes'
  maxima, sums and (HARDMAX) first maxima merge in a butterfly, through
  subgroupShuffleXor inside a subgroup where the adapter has subgroups, through workgroup
  memory elsewhere (every lane ends with the row's value). Runs rows whose L = 256 lanes'
  passes fit the loop budget.

The adapter's class orders them: `rows` (or `chunks` for long rows and few rows) first on
software adapters, `workgroup` first on GPUs. Plan options (experiments, tests): chunks
(`chunks`: chunks per row), lanes (`workgroup`), subgroups=False (`workgroup`: workgroup
memory only).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..errors import InternalError, InvalidArgumentError, UnsupportedError
from ..tensor_desc import TensorDesc, merge_axes
from .base import LOOP_BUDGET, Planner, count_option, power_of_two_option
from .builder import Dispatch, KernelPlan, input_buffer, output_buffer, scratch_buffer
from .epilogue import attach as attach_epilogue
from .epilogue import check as check_epilogue

STRATEGIES = ("rows", "chunks", "workgroup")
OPTIONS = ("chunks", "lanes", "subgroups")
FUNCTIONS = ("SOFTMAX", "LOG_SOFTMAX", "HARDMAX")
#: Elements added into a subtotal before the running sum takes it (as Reduce's float sums):
#: the rounding error of a sum of n terms grows with SUBTOTAL + n / SUBTOTAL additions, not n.
SUBTOTAL = 64
#: Invocations per workgroup: the `rows` and `chunks` kernels', and the `workgroup` one's
#: (its lanes: L per row, up to all of them).
WORKGROUP_SIZE = 64
GPU_WORKGROUP_SIZE = 256
#: Elements a `workgroup` lane aims at per pass: rows shorter than L x this get fewer lanes.
LANE_ELEMENTS = 8
#: `rows` first on CPU adapters from this many rows, or for rows this short; otherwise
#: `chunks` (more invocations in flight on few long rows).
ROWS_MIN_COUNT = 64
ROWS_SHORT = 2048
#: `chunks` aims at this many invocations in all, each chunk at least MIN_CHUNK elements.
CHUNKS_TARGET = 4096
MIN_CHUNK = 1024
#: Loop iterations of an invocation besides its passes over elements (set-up, the
#: butterfly's steps): the estimates below are upper bounds.
_OVERHEAD = 64


@dataclass(frozen=True)
class Problem:
    """What a normalize description computes: `function` (one of FUNCTIONS) over the
    `axes` of `input` (sorted, distinct, at least one), written to `output` (the input's
    sizes and data type, FLOAT32 or FLOAT16)."""

    op: str
    function: str
    input: TensorDesc
    output: TensorDesc
    axes: tuple[int, ...]


@dataclass(frozen=True)
class Layout:
    """Kept axes (sizes, input strides, output strides) and reduced axes (the same), each
    merged where contiguous in both tensors; `count` rows of `n` elements."""

    kept_sizes: tuple[int, ...]
    kept_in: tuple[int, ...]
    kept_out: tuple[int, ...]
    red_sizes: tuple[int, ...]
    red_in: tuple[int, ...]
    red_out: tuple[int, ...]

    @property
    def count(self) -> int:
        return math.prod(self.kept_sizes)

    @property
    def n(self) -> int:
        return math.prod(self.red_sizes)


def layout(p: Problem) -> Layout:
    in_st, out_st = p.input.effective_strides, p.output.effective_strides
    sizes = p.input.sizes
    reduced = set(p.axes)
    kept_axes = [i for i in range(p.input.rank) if i not in reduced]
    red_axes = sorted(reduced)
    kept = merge_axes([sizes[i] for i in kept_axes], [in_st[i] for i in kept_axes], [out_st[i] for i in kept_axes])
    red = merge_axes([sizes[i] for i in red_axes], [in_st[i] for i in red_axes], [out_st[i] for i in red_axes])
    return Layout(tuple(a.size for a in kept), tuple(a.strides[0] for a in kept), tuple(a.strides[1] for a in kept),
                  tuple(a.size for a in red), tuple(a.strides[0] for a in red), tuple(a.strides[1] for a in red))


# ------------------------------------------------------------------------------ the cost model
def passes(function: str) -> int:
    """Passes over a row's elements: maximum, sum, write (HARDMAX: first maximum, write)."""
    return 2 if function == "HARDMAX" else 3


def rows_fit(p: Problem, lay: Layout) -> bool:
    return passes(p.function) * lay.n + _OVERHEAD <= LOOP_BUDGET


def _chunk_cost(function: str, length: int, chunks: int) -> int:
    """Loop iterations of the costlier invocation of `chunks` (first or second dispatch)."""
    first = (passes(function) - 1) * length
    second = (1 if function == "HARDMAX" else 2) * chunks + length
    return max(first, second) + _OVERHEAD


def _chunks_fitting(function: str, n: int) -> int:
    """The fewest chunks per row of n elements within the loop budget (0: none fits): from
    the fewest the first dispatch allows, while more chunks still shorten the second's work."""
    per_chunk = 1 if function == "HARDMAX" else 2
    chunks = -(-n // ((LOOP_BUDGET - _OVERHEAD) // (passes(function) - 1)))
    while chunks <= math.isqrt(n // per_chunk) + 2:
        if _chunk_cost(function, -(-n // chunks), chunks) <= LOOP_BUDGET:
            return chunks
        chunks += 1
    return 0


def chunks_for(p: Problem, lay: Layout, requested: int | None = None) -> int:
    """Chunks per row for `chunks`: the requested number, else enough for CHUNKS_TARGET
    invocations of at least MIN_CHUNK elements each; at least what the loop budget needs,
    at most what it allows (UnsupportedError where no number fits)."""
    need = _chunks_fitting(p.function, lay.n)
    if need == 0:
        raise UnsupportedError(f"{p.op}: rows of {lay.n} elements are too long to normalize within the loop budget "
                               f"(at most {max_row(p.function)} elements a row)")
    if requested is None:
        requested = min(-(-CHUNKS_TARGET // lay.count), max(1, lay.n // MIN_CHUNK))
    chunks = max(need, min(int(requested), lay.n, (LOOP_BUDGET - _OVERHEAD) // 2))
    while chunks > need and _chunk_cost(p.function, -(-lay.n // chunks), chunks) > LOOP_BUDGET:
        chunks -= 1  # more chunks than the second dispatch can merge: as many as it can
    return -(-lay.n // -(-lay.n // chunks))  # no empty chunk


def max_row(function: str) -> int:
    """The longest row `chunks` runs within the loop budget (about 1.3e8 elements for the
    softmaxes, 2.7e8 for HARDMAX)."""
    first = (LOOP_BUDGET - _OVERHEAD) // (passes(function) - 1)
    per_chunk = 1 if function == "HARDMAX" else 2
    return max(c * min(first, LOOP_BUDGET - _OVERHEAD - per_chunk * c)
               for c in range(1, (LOOP_BUDGET - _OVERHEAD) // per_chunk))


def lanes_for(p: Problem, lay: Layout, requested: int | None = None) -> int:
    """Lanes per row of `workgroup`: the requested power of two, else about LANE_ELEMENTS
    elements per lane, at most GPU_WORKGROUP_SIZE."""
    lanes = power_of_two_option(p.op, "lanes", requested, GPU_WORKGROUP_SIZE)
    if lanes is None:
        want = -(-lay.n // LANE_ELEMENTS)
        lanes = min(GPU_WORKGROUP_SIZE, 1 << max(0, want - 1).bit_length())
    return lanes


def workgroup_fits(p: Problem, lay: Layout, lanes: int) -> bool:
    return passes(p.function) * -(-lay.n // lanes) + 3 * lanes.bit_length() + _OVERHEAD <= LOOP_BUDGET


# ------------------------------------------------------------------------------ strategies and plans
def _subgroups(p: Problem, caps, requested) -> bool:
    has = caps is not None and caps.has("subgroup")
    if requested and not has:
        raise InvalidArgumentError(f"{p.op}: option subgroups = True needs an adapter with the feature \"subgroup\" "
                                   f"(this one has none)")
    return has if requested is None else bool(requested)


def strategies_for(p: Problem, caps, chunks=None, lanes=None, subgroups=None) -> tuple[str, ...]:
    """Those that can run the problem, the adapter class's choice first (module docstring)."""
    if p.function not in FUNCTIONS:
        raise InternalError(f"{p.op}: unknown normalize function {p.function!r}")
    count_option(p.op, "chunks", chunks)
    _subgroups(p, caps, subgroups)
    lay = layout(p)
    rows = rows_fit(p, lay)
    try:
        chunks_for(p, lay, chunks)
        chunked = True
    except UnsupportedError:
        if not rows:
            raise
        chunked = False
    workgroup = workgroup_fits(p, lay, lanes_for(p, lay, lanes))
    if rows and (lay.count >= ROWS_MIN_COUNT or lay.n <= ROWS_SHORT or not chunked):
        cpu = ("rows", "chunks") if chunked else ("rows",)
    else:
        cpu = ("chunks", "rows") if rows else ("chunks",)
    gpu = ("workgroup",) if workgroup else ()
    return cpu + gpu if caps is None or caps.is_software else gpu + cpu


def plan(p: Problem, caps, strategy: str, chunks=None, lanes=None, subgroups=None) -> KernelPlan:
    if strategy not in strategies_for(p, caps, chunks, lanes, subgroups):
        raise InternalError(f"{p.op}: strategy {strategy} cannot run {p}")
    lay = layout(p)
    bits = p.input.data_type.size * 8
    params = {"function": p.function, "bits": bits, "rank_k": len(lay.kept_sizes), "rank_r": len(lay.red_sizes),
              "subtotal": SUBTOTAL}
    uniforms = {"kept_sizes": lay.kept_sizes, "kept_in_strides": lay.kept_in, "kept_out_strides": lay.kept_out,
                "red_sizes": lay.red_sizes, "red_in_strides": lay.red_in, "red_out_strides": lay.red_out,
                "count": lay.count, "n": lay.n}
    inp = input_buffer(0, "input")
    out = output_buffer(0, "output", bits, "stores")
    if strategy == "rows":
        return KernelPlan((Dispatch("softmax.wgsl.j2", {**params, "pass": "rows"}, (out, inp), uniforms,
                                    lay.count, WORKGROUP_SIZE),))
    if strategy == "chunks":
        count = chunks_for(p, lay, chunks)
        uniforms = {**uniforms, "chunks": count, "chunk_length": -(-lay.n // count)}
        first = Dispatch("softmax.wgsl.j2", {**params, "pass": "partials"},
                         (scratch_buffer(0, "partials", writable=True), inp), uniforms, lay.count * count,
                         WORKGROUP_SIZE)
        second = Dispatch("softmax.wgsl.j2", {**params, "pass": "finish"},
                          (out, inp, scratch_buffer(0, "partials", writable=False)), uniforms, lay.count * count,
                          WORKGROUP_SIZE)
        return KernelPlan((first, second), scratch_bytes=(lay.count * count * 8,))
    lanes = lanes_for(p, lay, lanes)
    if not workgroup_fits(p, lay, lanes):
        raise InternalError(f"{p.op}: {lanes} lanes cannot run rows of {lay.n}")
    sg = _subgroups(p, caps, subgroups)
    per_group = GPU_WORKGROUP_SIZE // lanes
    invocations = -(-lay.count // per_group) * GPU_WORKGROUP_SIZE
    return KernelPlan((Dispatch("softmax.wgsl.j2", {**params, "pass": "workgroup", "lanes": lanes,
                                                    "workgroup_size": GPU_WORKGROUP_SIZE},
                                (out, inp), uniforms, invocations, GPU_WORKGROUP_SIZE, sg),))


def variants(p: Problem, caps, strategy: str) -> tuple[dict, ...]:
    """Options worth timing when autotuning: `workgroup`'s lanes (half and twice its
    choice) and its workgroup-memory merge where the adapter has subgroups."""
    if strategy != "workgroup":
        return ()
    lay = layout(p)
    lanes = lanes_for(p, lay)
    found = [{"lanes": n} for n in (lanes // 2, lanes * 2)
             if 1 <= n <= GPU_WORKGROUP_SIZE and workgroup_fits(p, lay, n)]
    if caps is not None and caps.has("subgroup"):
        found.append({"subgroups": False})
    return tuple(found)


class NormalizePlanner(Planner):
    """The Planner of the normalize operators: `problem(desc)` (given by ops/softmax.py's
    table) says what a description computes."""

    strategies = STRATEGIES
    options = OPTIONS

    def __init__(self, problem):
        self.problem = problem

    def strategies_for(self, desc, caps, **options) -> tuple[str, ...]:
        return strategies_for(self.problem(desc), caps, **options)

    def plan(self, desc, caps, strategy: str, **options) -> KernelPlan:
        return plan(self.problem(desc), caps, strategy, **options)

    def variants(self, desc, caps, strategy: str) -> tuple[dict, ...]:
        return variants(self.problem(desc), caps, strategy)

    epilogue = True

    def plan_with_epilogue(self, desc, caps, strategy: str, epilogue) -> KernelPlan:
        """Every strategy: each pass that writes the output (rows, finish, workgroup)
        applies it to the rounded value it stores."""
        p = self.problem(desc)
        check_epilogue(epilogue, p.output)
        return attach_epilogue(plan(p, caps, strategy), epilogue, 1)
