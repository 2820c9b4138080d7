"""The reduction family: strategies, cost model and plan, for any operator that reduces axes
of one tensor into one output (DML_REDUCE, DML_ARGMAX, DML_ARGMIN: `ReductionFamily`, its
instance FAMILY, and the operators' planners REDUCE and ARG_REDUCE).

The problem is a `Reduction` (function, input desc, output desc, reduced axes, and the
ARGMAX/ARGMIN axis direction); the module's functions take its fields. Size-1 axes drop
and neighbouring axes merge where the strides allow (`layout`). Strategies, CPU-class:

- `rows`: one pass, one invocation per output element (per output word for packed 8/16-bit
  outputs), each reducing its whole sub-tensor; the innermost reduced axis is read in
  16-byte blocks when it has stride 1.
- `partials`: the reduced range of every output is cut into chunks; a first pass writes the
  partial result (State) of each chunk to scratch, a second pass combines them in order.
  Where the innermost kept axis is contiguous, neighbouring outputs share 16-byte blocks
  (groups): up to GROUP_OUTPUTS outputs (GROUP_BLOCKS blocks) per invocation where whole
  groups tile a row, so that each lane streams up to 64 contiguous bytes per reduced step.
  Used for columns, few long rows, and whatever exceeds the loop budget.

GPU-class (every function; `_by_class` orders the families by the adapter's class):

- `workgroup`: L cooperating lanes per output (L a power of two up to GPU_WORKGROUP_SIZE,
  fewer for short rows, so that one workgroup holds several outputs), per output and chunk
  when outputs are too few to fill a GPU (GPU_TARGET_LANES) or rows too long for the loop
  budget (a combine pass then merges the chunks); lane t reads the unit's elements t,
  t + L, ... (16-byte blocks of them where the range is contiguous), so neighbouring lanes
  read neighbouring addresses, and the lanes' States merge through workgroup memory in a
  tree. MIN/MAX carry their index there, so that the tree's order cannot change which of
  two equal extremes (0.0 and -0.0, NaN payloads) is returned.
- `columns`: for reduced axes outside the kept ones: the partials strategy's first pass with
  neighbouring invocations on neighbouring outputs (groups of outputs sharing 16-byte
  blocks), cut into as many chunks as a GPU needs in flight (split-K: partial States), then
  the workgroup strategy's combine pass (L lanes per output merge its chunks in a tree, so
  MIN/MAX States carry their index here too).

The workgroup strategy's lanes merge through subgroupShuffleXor inside a subgroup where the
adapter has subgroups (the feature "subgroup": lavapipe, Vulkan/Metal/D3D12 GPUs; not GL),
through workgroup memory across subgroups and elsewhere; either way bit for bit the same
result (reduce_workgroup.wgsl.j2).

Plan options (for experiments): chunks (partials, columns, workgroup), lanes (workgroup: lanes
per output, a power of two up to GPU_WORKGROUP_SIZE), subgroups=False (workgroup: merge
through workgroup memory only), unroll (workgroup, columns: steps whose loads an
invocation issues together, one of UNROLLS), vectorize=False (element-by-element loads),
int64_native=False (64-bit integers as exact u32 pairs on any adapter).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import NamedTuple

from ..errors import InternalError, InvalidArgumentError, UnsupportedError
from ..tensor_desc import TensorDesc, merge_axes
from ..types import DataType
from . import elementwise
from .base import LOOP_BUDGET, KernelFamily, ProblemPlanner, count_option, power_of_two_option
from .builder import Dispatch, KernelPlan, input_buffer, int64_mode, output_buffer, scratch_buffer
from .chain import Chain
from .epilogue import attach as attach_epilogue
from .epilogue import check as check_epilogue

STRATEGIES = ("rows", "partials")  # CPU-class
GPU_STRATEGIES = ("workgroup", "columns")
OPTIONS = ("chunks", "vectorize", "int64_native", "lanes", "subgroups", "unroll")

#: Functions that carry a (value, index) pair, and the float sums accumulated in subtotals.
ARG_FUNCTIONS = frozenset({"ARGMAX", "ARGMIN"})
FLOAT_SUMS = frozenset({"SUM", "AVERAGE", "L1", "L2", "SUM_SQUARE", "LOG_SUM"})
#: DYNAMIC_QUANTIZE_LINEAR's reduction (no ReduceFunction): the least and the greatest element
#: in one State (one pass over the input), its result the scale (float32) and, from the same
#: invocation, the zero point (the plan option `dql` = (qmin, qmax); the kernel writing the
#: output binds the 8-bit zero point as output 1, see `plan`).
MIN_MAX = "MIN_MAX"


# ------------------------------------------------------------------------------ layout
class Rows:
    """What every reduction layout derives from its merged axes: `count` rows (the product of
    `kept_sizes`) of `n` elements (of `red_sizes`). Mixed into ReduceLayout here and into the
    normalization family's Layout (kernels/normalization.py)."""

    kept_sizes: tuple[int, ...]
    red_sizes: tuple[int, ...]

    @property
    def count(self) -> int:
        return math.prod(self.kept_sizes)

    @property
    def n(self) -> int:
        return math.prod(self.red_sizes)


@dataclass(frozen=True)
class ReduceLayout(Rows):
    """The problem with size-1 axes dropped and neighbouring axes merged where the strides
    allow: kept axes (sizes, input strides, output strides), reduced axes (sizes, input
    strides), each in axis order. Merging keeps the row-major order of both index spaces,
    so ARGMAX's flat index and the output order are unchanged."""

    kept_sizes: tuple[int, ...]
    kept_in_strides: tuple[int, ...]
    kept_out_strides: tuple[int, ...]
    red_sizes: tuple[int, ...]
    red_strides: tuple[int, ...]


def layout(inp: TensorDesc, out: TensorDesc, axes) -> ReduceLayout:
    in_st, out_st = inp.effective_strides, out.effective_strides
    reduced = set(axes)
    kept_axes = [i for i in range(inp.rank) if i not in reduced]
    red_axes = sorted(reduced)
    kept = merge_axes([inp.sizes[i] for i in kept_axes], [in_st[i] for i in kept_axes], [out_st[i] for i in kept_axes])
    red = merge_axes([inp.sizes[i] for i in red_axes], [in_st[i] for i in red_axes])
    return ReduceLayout(tuple(a.size for a in kept), tuple(a.strides[0] for a in kept),
                        tuple(a.strides[1] for a in kept), tuple(a.size for a in red),
                        tuple(a.strides[0] for a in red))


# ------------------------------------------------------------------------------ strategy constants
#: Chosen by measurement on lavapipe (python -m gpudml.bench.reduce_strategies --strategies; float32 [4096, 4096],
#: device-resident medians of one quiet run, Mesa 22.3 on 2 vCPUs):
#: - contiguous rows, many outputs (W1, SUM over the last axis): one invocation per row reading
#:   16-byte blocks 13.7 ms; element by element 21.6 ms; partials of 4 chunks 14.2 ms. A workgroup
#:   per row was slower in a hand-written prototype (shared-memory tree at WG=64 2.0x, WG=256
#:   4.3x, subgroupAdd at WG=8 1.04x, WG=64 1.5x the one-invocation-per-row time).
#: - columns (W2, SUM over axis 0): one pass element by element 67.6 ms; groups of 4 neighbouring
#:   outputs sharing 16-byte blocks, cut into 1/4/16/32/64/128 chunks per output:
#:   42.5/24.3/18.7/17.7/18.4/19.9 ms (32 chunks = 32768 invocations); 32 chunks read element by
#:   element 30.5 ms.
#: - few long rows ([16, 1M] over axis 1): 16-1024 chunks 14.2-14.6 ms, 4096 chunks 15.7 ms.
#: Later (lavapipe on 2 vCPUs, variants interleaved in one process, GPU timestamps,
#: medians of 15; this host's speed drifts, so the ratios are what carries): `partials` groups of
#: 16 float32 outputs (4 blocks a step, 64 bytes a lane per row) against groups of 4 (one
#: block): W2 [4096, 4096] axis 0 25.4 vs 99.3 ms (3.9x), [1024, 1024] axis 0 2.34 vs 8.52 ms
#: (3.6x), [64, 65536] axis 0 3.95 vs 14.95 ms (3.8x); ARGMAX/MAX over W2's axis 0 3.6x;
#: groups of 8 or 32 outputs within noise of 16. A row not tiled by whole wide groups keeps
#: groups of one block ([16384, 100]: its last group per row would take the element path in
#: every SIMD group). The chunks stay as groups of one block would cut them.
GROUP_OUTPUTS = 16  # outputs of one `partials` group at most ...
GROUP_BLOCKS = 4  # ... and 16-byte blocks it reads a step
SMALL_N = 16  # reductions this short run in one pass, whatever the layout
TINY_TOTAL = 1 << 15  # so do problems this small: a second dispatch would cost more
ROWS_MIN_OUTPUTS = 1024  # contiguous rows: one invocation per output from this many outputs
ROW_PARTIALS_INVOCATIONS = 1 << 12  # the partials strategy cuts contiguous rows until this many ...
COLUMN_PARTIALS_INVOCATIONS = 1 << 15  # ... other layouts until this many ...
MIN_CHUNK_BYTES = 1024  # ... but an invocation reads at least this much per chunk
MAX_CHUNKS = 4096  # ... and the combine pass merges at most this many (unless it must)
WORKGROUP_SIZE = 64


def _kind(dt: DataType) -> str:
    return "float" if dt.is_float else ("sint" if dt.is_signed else "uint")


def state_words(function: str, dt: DataType, indexed: bool = False) -> int:
    """u32 words one partial State takes in scratch (lib/reduction.wgsl.j2; `indexed`: MIN/MAX
    carrying their index, as the workgroup strategy's do)."""
    extra = (function in ARG_FUNCTIONS or function in ("LOG_SUM_EXP", MIN_MAX)
             or (indexed and function in ("MIN", "MAX")))
    return (2 if dt.size == 8 else 1) + extra


@dataclass(frozen=True)
class _Problem:
    """What a strategy decision needs: the layout, its cost model and the scratch words."""

    lay: ReduceLayout
    cost: _Cost
    words: int
    vec_inner: bool
    group: int


def _problem(function: str, inp: TensorDesc, out: TensorDesc, axes, vectorize: bool, wide: bool = False) -> _Problem:
    lay = layout(inp, out, axes)
    per_block = 16 // inp.data_type.size  # elements in one 16-byte block
    vec_ok = vectorize and inp.buffer_bytes >= 16
    vec_inner = vec_ok and lay.red_strides[-1] == 1 and lay.red_sizes[-1] >= 2 * per_block
    group = per_block if vec_ok and not vec_inner and _groupable(lay, per_block) else 1
    if wide and group > 1:
        group *= _group_blocks(lay.kept_sizes[-1], per_block)
    cost = _Cost(lay, per_block if vec_inner else 1, group, inp, out, max(1, group // per_block))
    return _Problem(lay, cost, state_words(function, inp.data_type), vec_inner, group)


def strategies_for(function: str, inp: TensorDesc, out: TensorDesc, axes, caps, *, chunks=None,
                   vectorize: bool = True, int64_native=None, lanes=None, subgroups=None,
                   unroll=None) -> tuple[str, ...]:
    """The strategies that can run the problem, the chosen one first (UnsupportedError when
    none can): both families, ordered by the adapter's class (`_by_class`)."""
    count_option("Reduce", "chunks", chunks)
    p = _problem(function, inp, out, axes, vectorize)
    try:
        cpu = _cpu_strategies(p, caps)
    except UnsupportedError:
        cpu = ()
    words = state_words(function, inp.data_type, True)
    columns = "partials" in cpu and p.lay.red_strides[-1] != 1 and _fits(_column_chunks, p.lay, p.cost, words, caps)
    gpu = tuple(s for s, fits in (("workgroup", _fits(_workgroup_shape, p, words, caps, 1)),
                                  ("columns", columns)) if fits)
    if not cpu and not gpu:
        _cpu_strategies(p, caps)  # raises the reason
    return _by_class(cpu, gpu, p.lay, caps)


def _cpu_strategies(p: _Problem, caps) -> tuple[str, ...]:
    """The CPU-class strategies, the better first: one pass for short reductions, small
    problems, many contiguous rows, and outputs too many for partial results in scratch;
    otherwise partial results where they add parallelism or let neighbouring outputs share
    16-byte blocks. `rows` can run only within the loop budget, `partials` only where one
    combine pass can merge the chunks it needs."""
    lay, cost = p.lay, p.cost
    rows = cost.rows_fit()
    try:
        chunks = _chunks(lay, cost, p.words, caps)
    except UnsupportedError:
        if not rows:
            raise
        return ("rows",)
    if not rows:
        return ("partials",)
    small = lay.n <= SMALL_N or lay.n * lay.count <= TINY_TOTAL
    many_rows = lay.red_strides[-1] == 1 and lay.count >= ROWS_MIN_OUTPUTS
    one_pass = small or many_rows or lay.count * p.words * 4 > _binding_limit(caps)
    if one_pass or (chunks == 1 and cost.group == 1):
        return ("rows", "partials")
    return ("partials", "rows")


def _by_class(cpu: tuple[str, ...], gpu: tuple[str, ...], lay: ReduceLayout, caps) -> tuple[str, ...]:
    """The adapter's class picks the family: CPU adapters (and no caps) the CPU-class
    strategies first. On GPUs `workgroup` comes first where the innermost reduced axis is
    contiguous (its lanes read neighbouring elements); otherwise `columns` (neighbouring
    invocations own neighbouring outputs), then the CPU-class ones, `workgroup` last."""
    strided = lay.red_strides[-1] != 1  # lanes would read strided addresses: `workgroup` last
    gpu = tuple(sorted(gpu, key=lambda s: (s == "workgroup") == strided))
    if caps is None or caps.is_software:
        return cpu + gpu
    return gpu[:1] + cpu + gpu[1:] if strided else gpu + cpu


def plan(function: str, inp: TensorDesc, out: TensorDesc, axes, caps, strategy: str, *, chunks=None,
         vectorize: bool = True, int64_native=None, through=None, axis_direction: str = "INCREASING",
         lanes=None, subgroups=None, unroll=None, element_stores: bool = False, dql=None) -> KernelPlan:
    """The dispatches of `strategy` (one of strategies_for's). `function` is a
    ReduceFunction name; the template (lib/reduction.wgsl.j2) implements each.
    `axis_direction` (ARGMAX/ARGMIN): "INCREASING" picks the first index of the extreme,
    "DECREASING" the last.
    `through`: the input is a packed view `inp` of a chain of data-movement stages (an
    kernels.chain.Chain) read from input 0 and its extra tensors (inputs 1, 2, ...): a
    graph's fused chain; or of element-wise and data-movement nodes (an
    elementwise.FusedProblem in coordinate mode: a fused read of its inputs); element by
    element (no 16-byte blocks).
    `element_stores`: every output element is stored on its own (no word of packed 8/16-bit
    outputs assembled by one invocation): a store epilogue's (kernels/epilogue.py).
    `dql` (function MIN_MAX, and only it): (qmin, qmax) of DYNAMIC_QUANTIZE_LINEAR's zero point.
    The output (one element, FLOAT32) takes the scale; the kernel that writes it binds the
    zero point (one 8-bit element) as output 1 and one of its invocations stores it there."""
    if (function == MIN_MAX) != (dql is not None) or (dql is not None and (through is not None or element_stores)):
        raise InternalError(f"Reduce: function {function} with dql = {dql!r} (MIN_MAX needs it, with no prologue "
                            "and no epilogue; no other function takes it)")
    made = _plan(function, inp, out, axes, caps, strategy, chunks=chunks, vectorize=vectorize,
                 int64_native=int64_native, through=through, axis_direction=axis_direction, lanes=lanes,
                 subgroups=subgroups, unroll=unroll, element_stores=element_stores, dql=dql)
    if dql is None:
        return made
    *first, last = made.dispatches
    zero_point = output_buffer(1, "zero_point", 8, "words")
    return replace(made, dispatches=(*first, replace(last, buffers=last.buffers + (zero_point,))))


def _plan(function: str, inp: TensorDesc, out: TensorDesc, axes, caps, strategy: str, *, chunks, vectorize: bool,
          int64_native, through, axis_direction: str, lanes, subgroups, unroll, element_stores: bool,
          dql) -> KernelPlan:
    """plan's dispatches, without the zero point's binding."""
    chunks = count_option("Reduce", "chunks", chunks)
    if through is not None:
        vectorize = False
    p = _problem(function, inp, out, axes, vectorize and strategy != "workgroup", strategy == "partials")
    lay, cost = p.lay, p.cost
    if element_stores:
        cost.packed_output, cost.outputs_per_invocation = False, 1
    in_dt = inp.data_type
    if int64_native is None:
        int64_native = caps is not None and caps.has("shader-int64")
    params = {
        "function": function, "kind": _kind(in_dt), "in_bits": in_dt.size * 8,
        "out_kind": _kind(out.data_type), "out_bits": out.data_type.size * 8,
        "native64": bool(int64_native) and 8 in (in_dt.size, out.data_type.size),
        "rank_r": len(lay.red_sizes), "vec_inner": p.vec_inner,
        "subtotals": in_dt.is_float and function in FLOAT_SUMS,
        "through": through.stages if isinstance(through, Chain) else (),
        "through_rank": inp.rank if through is not None else 0, "through_fetch": None,
        "axis_direction": axis_direction, "rank": len(lay.kept_sizes), "indexed": False, "dql": dql,
    }
    source, reads, through_uniforms = (input_buffer(0, "input"),), (), {}
    if isinstance(through, Chain):
        reads, through_uniforms = through.buffers(1), {**through.uniforms, "through_sizes": inp.sizes}
    elif through is not None:
        params["through_fetch"], fetched, reads = elementwise.fetch(through, caps)
        source, through_uniforms = (), {**fetched, "through_sizes": inp.sizes}
    if strategy == "workgroup":
        return _workgroup_plan(p, function, params, inp, out, source, reads, through_uniforms, caps, chunks, vectorize,
                               lanes, _subgroups(caps, subgroups), unroll)
    vec = (input_buffer(0, "input_vec", "blocks"),) if p.vec_inner or p.group > 1 else ()
    inputs = source + vec + reads
    if strategy == "rows":
        uniforms = _uniforms(lay, chunks=1, chunk_length=lay.n, groups=lay.count, groups_per_row=0)
        rows = _dispatch("reduce.wgsl.j2", _writer(params, cost), (_output(out, cost),) + inputs,
                         {**uniforms, **through_uniforms}, _writers(lay, cost))
        return KernelPlan((rows,))
    columns = strategy == "columns"
    words = state_words(function, in_dt, columns)
    chunks = (_column_chunks if columns else _chunks)(lay, cost, words, caps, chunks)
    per_chunk = -(-lay.n // chunks)
    chunks = -(-lay.n // per_chunk)  # no empty chunk
    uniforms = _uniforms(lay, chunks=chunks, chunk_length=per_chunk, groups=cost.groups,
                         groups_per_row=cost.groups_per_row)
    if columns:  # MIN/MAX States carry their index: the combine merges them in a tree
        params = {**params, "indexed": function in ("MIN", "MAX")}
    first = {**params, "group": p.group, "unroll": _unroll(unroll) if columns else 1}
    partials = _dispatch("reduce_partials.wgsl.j2", first,
                         (scratch_buffer(0, "partials", writable=True),) + inputs,
                         {**uniforms, **through_uniforms}, cost.groups * chunks)
    if columns:
        combine = _workgroup_combine({**params, "workgroup_size": GPU_WORKGROUP_SIZE}, out, uniforms, chunks,
                                     _subgroups(caps, subgroups))
    else:
        combine = _combine(params, out, cost, uniforms)
    return KernelPlan((partials, combine), scratch_bytes=(lay.count * chunks * words * 4,))


def _writer(params: dict, cost: _Cost) -> dict:
    """The parameters of a kernel that writes outputs (lib/reduction.wgsl.j2, output_kernel)."""
    return {**params, "packed_output": cost.packed_output}


def _output(out: TensorDesc, cost: _Cost):
    return output_buffer(0, "output", out.data_type.size * 8, "words" if cost.packed_output else "stores")


def _writers(lay: ReduceLayout, cost: _Cost) -> int:
    """Invocations of an output_kernel: one per output, or per word of packed outputs."""
    return -(-lay.count // cost.outputs_per_invocation)


def _combine(params: dict, out: TensorDesc, cost: _Cost, uniforms: dict) -> Dispatch:
    """The second pass of `partials`: each output merges its chunks' States in order."""
    return _dispatch("reduce_combine.wgsl.j2", {**_writer(params, cost), "vec_inner": False, "subtotals": False},
                     (_output(out, cost), scratch_buffer(0, "partials", writable=False)), uniforms,
                     _writers(cost.lay, cost))


# ------------------------------------------------------------------------------ GPU-class
#: A GPU wants this many lanes in flight (an H100: 132 multiprocessors x 2048): outputs too
#: few for it are cut into chunks (partial results and a combine pass), as long as each
#: lane still reads MIN_LANE_ELEMENTS elements per chunk (workgroup), each invocation
#: MIN_COLUMN_CHUNK rows (columns; their combine pass walks the chunks one by one, so they
#: aim at a quarter of it). H100: a whole tensor of 16 M float32 in 64/256/1024/4096 chunks
#: 0.125/0.046/0.036/0.043 ms; W2 (columns of [4096, 4096]) in 16/32/64/128/256 chunks
#: 0.132/0.079/0.060/0.065/0.092 ms.
GPU_TARGET_LANES = 1 << 18
COLUMN_TARGET_INVOCATIONS = 1 << 16
GPU_WORKGROUP_SIZE = 256
MIN_LANE_ELEMENTS = 16
MIN_COLUMN_CHUNK = 16
#: Loads (16-byte blocks, or elements) one lane of a workgroup unit aims at: rows shorter
#: than L x this get fewer lanes (and their workgroup more outputs), but at least MIN_LANES.
#: H100 (gpudml.bench.gpu_tune, GPU timestamps): W1 [4096, 4096] with 32/64/128/256 lanes
#: 0.034/0.030/0.031/0.033 ms, W3 (ARGMAX) 64/128/256 lanes 0.032/0.033/0.036 ms; rows of 64
#: with 2/4/8/16 lanes 0.038/0.038/0.042/0.066 ms.
LANE_LOADS = 16
MIN_LANES = 4
#: Steps of a workgroup lane's main loop whose loads it issues together, before folding them
#: into its State (in order): loads in flight per lane (and per invocation of `columns`,
#: 64 rows a chunk for W2). Rows of 4096 float32 at 64 lanes are 16 steps a lane, and one
#: workgroup wave covers the H100 (4 rows a workgroup, 1,024 workgroups), so a lane that
#: waits for each load before the next pays 16 memory latencies in a row.
#: Not yet timed on a GPU: gpudml.bench.gpu_tune sweeps 1/2/4/8 (option unroll).
LANE_UNROLL = 4
UNROLLS = (1, 2, 4, 8)
#: Loop iterations of a workgroup lane besides its main loop: head, tail, the tree's steps.
_TREE_ITERATIONS = 64


def _workgroup_vec(p: _Problem, inp: TensorDesc, vectorize: bool) -> bool:
    """Do the workgroup's lanes read 16-byte blocks? (one contiguous reduced axis, 8-32-bit
    elements, a buffer of at least one block)"""
    lay = p.lay
    return (vectorize and len(lay.red_sizes) == 1 and lay.red_strides[0] == 1 and inp.data_type.size <= 4
            and inp.buffer_bytes >= 16 and lay.n >= 2 * (16 // inp.data_type.size))


def _workgroup_loads(p: _Problem, function: str, inp: TensorDesc, vectorize: bool) -> tuple[bool, int, int]:
    """(16-byte blocks?, elements per load, u32 words of a partial State) of the workgroup
    strategy: MIN/MAX States carry their index there."""
    vec = _workgroup_vec(p, inp, vectorize)
    return vec, 16 // inp.data_type.size if vec else 1, state_words(function, inp.data_type, True)


def _lanes(length: int, per_load: int) -> int:
    """Lanes per unit for reducing `length` elements, `per_load` at a time: a power of two,
    about LANE_LOADS loads per lane, at most GPU_WORKGROUP_SIZE."""
    want = max(-(-length // (per_load * LANE_LOADS)), min(MIN_LANES, -(-length // per_load)))
    return min(GPU_WORKGROUP_SIZE, 1 << max(0, want - 1).bit_length())


def _workgroup_shape(p: _Problem, words: int, caps, per_load: int, requested: int | None = None,
                     lanes: int | None = None):
    """(chunks per output, lanes per unit) of the workgroup strategy: the requested chunks,
    else enough for GPU_TARGET_LANES; in any case enough for the loop budget (each lane runs
    one iteration per `lanes` elements of its chunk: `lanes` when forced, else at most
    GPU_WORKGROUP_SIZE, chosen per chunk), and few enough for one combine pass and one binding."""
    lay = p.lay
    if requested is None:
        requested = min(-(-GPU_TARGET_LANES // (lay.count * (lanes or _lanes(lay.n, per_load)))),
                        max(1, lay.n // (GPU_WORKGROUP_SIZE * MIN_LANE_ELEMENTS)))
    need = -(-lay.n // ((LOOP_BUDGET - _TREE_ITERATIONS) * (lanes or GPU_WORKGROUP_SIZE)))
    chunks = _settle_chunks(lay, p.cost, words, caps, need, requested, " in workgroups")
    return chunks, lanes or _lanes(-(-lay.n // chunks), per_load)


def _fits(shape, *args) -> bool:
    """Does `shape(*args)` (_workgroup_shape, _column_chunks) find a plan?"""
    try:
        shape(*args)
    except UnsupportedError:
        return False
    return True


def _workgroup_plan(p: _Problem, function: str, params: dict, inp: TensorDesc, out: TensorDesc, source: tuple,
                    reads: tuple, through_uniforms: dict, caps, chunks: int | None, vectorize: bool, lanes: int | None,
                    subgroups: bool, unroll: int | None) -> KernelPlan:
    """One dispatch of workgroup units writing outputs (reduce_workgroup.wgsl.j2), or, with
    several chunks per output, units saving partial States and the combine pass."""
    lay = p.lay
    vec, per_load, words = _workgroup_loads(p, function, inp, vectorize)
    indexed = function in ("MIN", "MAX")
    lanes = power_of_two_option("Reduce", "lanes", lanes, GPU_WORKGROUP_SIZE)
    chunks, lanes = _workgroup_shape(p, words, caps, per_load, chunks, lanes)
    per_chunk = -(-lay.n // chunks)
    chunks = -(-lay.n // per_chunk)  # no empty chunk
    params = {**params, "indexed": indexed}
    uniforms = _uniforms(lay, chunks=chunks, chunk_length=per_chunk, groups=lay.count, groups_per_row=0)
    steps = -(-(per_chunk // per_load + 1) // lanes) if vec else -(-per_chunk // lanes)
    lane_uniforms = {**uniforms, **through_uniforms, "lane_steps": steps}
    kernel = {**params, "save_partials": chunks > 1, "workgroup_size": GPU_WORKGROUP_SIZE, "lanes": lanes,
              "vec": vec, "combine": False, "unroll": _unroll(unroll)}
    inputs = source + ((input_buffer(0, "input_vec", "blocks"),) if vec else ()) + reads
    units = lay.count * chunks
    invocations = -(-units * lanes // GPU_WORKGROUP_SIZE) * GPU_WORKGROUP_SIZE
    if chunks == 1:
        output = output_buffer(0, "output", out.data_type.size * 8, "stores")
        return KernelPlan((_dispatch("reduce_workgroup.wgsl.j2", kernel, (output,) + inputs, lane_uniforms,
                                     invocations, GPU_WORKGROUP_SIZE, subgroups),))
    partials = _dispatch("reduce_workgroup.wgsl.j2", kernel, (scratch_buffer(0, "partials", writable=True),) + inputs,
                         lane_uniforms, invocations, GPU_WORKGROUP_SIZE, subgroups)
    return KernelPlan((partials, _workgroup_combine(kernel, out, uniforms, chunks, subgroups)),
                      scratch_bytes=(units * words * 4,))


def variants(function: str, inp: TensorDesc, out: TensorDesc, axes, caps, strategy: str) -> tuple[dict, ...]:
    """Plan options worth timing beside `strategy`'s own plan when autotuning
    (device/tuning.py): the GPU-class knobs whose best value depends on the GPU, around
    the values the plan picks. `workgroup`: half and twice its lanes, a quarter and four
    times its chunks (when it cuts outputs into chunks); `columns`: half, twice and four
    times its chunks; both: one step per load (unroll=1), and the workgroup-memory merge
    where the adapter has subgroups. The CPU-class strategies have none. Options a description
    cannot take, and those that build the same kernels as another, are the tuner's to drop."""
    if strategy not in GPU_STRATEGIES:
        return ()
    p = _problem(function, inp, out, axes, strategy != "workgroup")
    try:
        if strategy == "workgroup":
            _, per_load, words = _workgroup_loads(p, function, inp, True)
            chunks, lanes = _workgroup_shape(p, words, caps, per_load)
            found = [{"lanes": n} for n in (lanes // 2, lanes * 2) if 1 <= n <= GPU_WORKGROUP_SIZE]
            found += [{"chunks": n} for n in (chunks // 4, chunks * 4) if chunks > 1 and n >= 1]
        else:
            chunks = _column_chunks(p.lay, p.cost, state_words(function, inp.data_type, True), caps)
            found = [{"chunks": n} for n in (chunks // 2, chunks * 2, chunks * 4) if n >= 1]
        if caps is not None and caps.has("subgroup"):
            found.append({"subgroups": False})
    except UnsupportedError:
        return ()
    return tuple(found) + (({"unroll": 1},) if LANE_UNROLL != 1 else ())


def _unroll(requested) -> int:
    """Steps whose loads a GPU-class lane issues together: LANE_UNROLL, or the option."""
    if requested is None:
        return LANE_UNROLL
    if requested not in UNROLLS:
        raise InvalidArgumentError(
            f"Reduce: option unroll = {requested!r} must be one of {', '.join(map(str, UNROLLS))}")
    return requested


def _subgroups(caps, requested) -> bool:
    """Do the lanes of workgroup kernels merge through subgroup operations? Where the adapter
    has them, unless the option `subgroups` says False (True without them: an error)."""
    has = caps is not None and caps.has("subgroup")
    if requested and not has:
        raise InvalidArgumentError("Reduce: option subgroups = True needs an adapter with the feature "
                                   "\"subgroup\" (this one has none)")
    return has if requested is None else bool(requested)


def _workgroup_combine(kernel: dict, out: TensorDesc, uniforms: dict, chunks: int, subgroups: bool) -> Dispatch:
    """The workgroup strategy's second pass: L lanes per output merge its `chunks` States
    (a whole tensor's 1,024 partial results are not one invocation's sequential walk)."""
    lanes = _lanes(chunks, 1)
    count = uniforms["count"]
    params = {**kernel, "save_partials": False, "combine": True, "lanes": lanes, "vec": False}
    output = output_buffer(0, "output", out.data_type.size * 8, "stores")
    invocations = -(-count * lanes // GPU_WORKGROUP_SIZE) * GPU_WORKGROUP_SIZE
    return _dispatch("reduce_workgroup.wgsl.j2", params, (output, scratch_buffer(0, "partials", writable=False)),
                     {**uniforms, "lane_steps": -(-chunks // lanes)}, invocations, GPU_WORKGROUP_SIZE, subgroups)


def _column_chunks(lay: ReduceLayout, cost: _Cost, words: int, caps, requested: int | None = None) -> int:
    """Chunks per output for the columns strategy: the requested number, else enough for
    GPU_TARGET_LANES invocations (each reading at least MIN_COLUMN_CHUNK rows); in any case
    enough for the loop budget, and few enough for it and for one binding."""
    if requested is None:
        requested = min(-(-COLUMN_TARGET_INVOCATIONS // cost.groups), max(1, lay.n // MIN_COLUMN_CHUNK))
    return _settle_chunks(lay, cost, words, caps, -(-lay.n // cost.max_chunk()), requested)


def _dispatch(template: str, params: dict, buffers, uniforms: dict, invocations: int,
              workgroup_size: int = WORKGROUP_SIZE, subgroups: bool = False) -> Dispatch:
    fetch = params["through_fetch"]
    host = params["in_bits"] == 64 or params["out_bits"] == 64
    # (64-bit values of its own, or only the fused read's: W64 as the fused read takes it)
    int64 = int64_mode(host or bool(fetch and fetch.int64),
                       params["native64"] if host else bool(fetch and fetch.native64))
    return Dispatch(template=template, params=params, buffers=buffers, uniforms=uniforms,
                    invocations=invocations, workgroup_size=workgroup_size, subgroups=subgroups, int64=int64)


def _uniforms(lay: ReduceLayout, **cut) -> dict:
    """The uniforms of every reduce kernel (see shaders/reduce.wgsl.j2): the kept axes
    (count, out_sizes, out_strides, in_strides), the reduced axes (red_sizes, red_strides,
    red_count) and the cut: chunks of chunk_length flat indices per output, groups of
    neighbouring outputs (groups_per_row of them along a row of the innermost kept axis)."""
    return {"count": lay.count, "out_sizes": lay.kept_sizes, "out_strides": lay.kept_out_strides,
            "in_strides": lay.kept_in_strides, "red_sizes": lay.red_sizes, "red_strides": lay.red_strides,
            "red_count": lay.n, **cut}


def _group_blocks(row_length: int, per_block: int) -> int:
    """16-byte blocks per step of a `partials` group: a power of two, up to GROUP_BLOCKS and
    GROUP_OUTPUTS outputs' worth, whose groups tile a row of the innermost kept axis exactly (a row's
    last, partial group reads element by element, and its SIMD group runs both paths)."""
    blocks = 1
    while (blocks * 2 <= GROUP_BLOCKS and blocks * 2 * per_block <= GROUP_OUTPUTS
           and row_length % (blocks * 2 * per_block) == 0):
        blocks *= 2
    return blocks


def _groupable(lay: ReduceLayout, per_block: int) -> bool:
    """Can neighbouring outputs share 16-byte blocks? (innermost kept axis contiguous,
    every other stride a whole number of blocks)"""
    others = lay.kept_in_strides[:-1] + lay.red_strides
    return (lay.kept_in_strides[-1] == 1 and lay.kept_sizes[-1] >= per_block
            and all(s % per_block == 0 for s in others))


class _Cost:
    """Upper bounds of the loop iterations the kernels run, per invocation (see LOOP_BUDGET).

    Reducing L consecutive flat indices (lib/reduction.wgsl.j2) runs at most L // n_in + 2
    passes over rows of the innermost reduced axis (n_in long), each with a few set-up
    iterations (head and tail of a vectorized row: under 2 blocks' elements), plus one
    iteration per element (per 16-byte block when vectorized, per step of a group) and one
    per 64 of them. Planner that write outputs compute 32 // bits of them per invocation for
    packed 8/16-bit outputs (lib/reduction.wgsl.j2, output_kernel)."""

    def __init__(self, lay: ReduceLayout, per_step: int, group: int, inp: TensorDesc, out: TensorDesc,
                 blocks: int = 1):
        self.lay, self.per_step, self.group, self.blocks = lay, per_step, group, blocks
        self.element_bytes = inp.data_type.size
        bits = out.data_type.size * 8
        self.packed_output = TensorDesc(out.data_type, lay.kept_sizes, lay.kept_out_strides).is_packed
        self.outputs_per_invocation = 32 // bits if bits < 32 and self.packed_output else 1
        rows, row_length = lay.count // lay.kept_sizes[-1], lay.kept_sizes[-1]
        self.groups_per_row = -(-row_length // group)
        self.groups = lay.count if group == 1 else rows * self.groups_per_row

    def reduce(self, length: int) -> float:
        per_row = 2 * self.per_step + 8
        return length / self.per_step + length / 64 + (length // self.lay.red_sizes[-1] + 2) * per_row

    def rows_fit(self) -> bool:
        return self.reduce(self.lay.n) * self.outputs_per_invocation <= LOOP_BUDGET

    def max_chunk(self) -> int:
        """The longest chunk the first pass of the partials strategy may reduce."""
        per_row = 2 * self.per_step + 8
        slope = 1 / self.per_step + 1 / 64 + per_row / self.lay.red_sizes[-1]
        return max(1, int((LOOP_BUDGET - 2 * per_row) / slope))

    def max_chunks(self) -> int:
        """The most chunks the combine pass may merge."""
        return int(LOOP_BUDGET / (1 + 1 / 64) / self.outputs_per_invocation)


def _chunks(lay: ReduceLayout, cost: _Cost, words: int, caps, requested: int | None = None) -> int:
    """Chunks per output for the partials strategy: the requested number, else enough for
    ROW_ or COLUMN_PARTIALS_INVOCATIONS without chunks under MIN_CHUNK_BYTES or more than MAX_CHUNKS;
    in any case enough for the loop budget, and few enough for it and for one binding."""
    if requested is None:
        # (counted in groups of one 16-byte block: wider groups cut as those would)
        min_chunk = -(-MIN_CHUNK_BYTES // (cost.group // cost.blocks * cost.element_bytes))
        target = ROW_PARTIALS_INVOCATIONS if lay.red_strides[-1] == 1 else COLUMN_PARTIALS_INVOCATIONS
        requested = min(-(-target // (cost.groups * cost.blocks)), lay.n // min_chunk, MAX_CHUNKS)
    return _settle_chunks(lay, cost, words, caps, -(-lay.n // cost.max_chunk()), requested)


def _settle_chunks(lay: ReduceLayout, cost: _Cost, words: int, caps, need: int, requested: int, how: str = "") -> int:
    """`requested` chunks per output, but at least `need` (what the loop budget needs) and
    at most what one combine pass can merge and one binding can hold (UnsupportedError
    when `need` is more than that)."""
    limit = _binding_limit(caps)
    most = min(cost.max_chunks(), limit // (lay.count * words * 4), lay.n)
    if need > most:
        raise UnsupportedError(
            f"Reduce: reducing {lay.n} elements per output{how} needs {need} chunks of partial results per output "
            f"(one invocation's loop budget), and {lay.count} outputs' chunks take {lay.count * words * 4} bytes "
            f"each: the adapter's scratch binding (max-storage-buffer-binding-size, {limit} bytes) holds "
            f"{limit // (lay.count * words * 4)}, one combine pass merges {cost.max_chunks()}. Reduce fewer outputs "
            f"per call (at most {limit // (need * words * 4)}) or split the reduced axes into two Reduce calls")
    return max(1, need, min(int(requested), most))


def _binding_limit(caps) -> int:
    return caps.max_storage_binding_size if caps is not None else 1 << 27


# ------------------------------------------------------------------------------ the family
class Reduction(NamedTuple):
    """What a reduction computes: `function` (a ReduceFunction name: its State in
    shaders/lib/reduction.wgsl.j2, or ARGMAX/ARGMIN) over `axes` of `input`, into `output`;
    `axis_direction` (ARGMAX/ARGMIN): "INCREASING" picks the first index of the extreme,
    "DECREASING" the last."""

    function: str
    input: TensorDesc
    output: TensorDesc
    axes: tuple[int, ...]
    axis_direction: str = "INCREASING"


class ReductionFamily(KernelFamily):
    """The reduction family over a `Reduction`: the module's functions, the prologue (the
    input read through a chain, element by element) and the epilogue."""

    strategies = STRATEGIES + GPU_STRATEGIES
    options = OPTIONS
    prologue = True
    epilogue = True

    def strategies_for(self, problem: Reduction, caps, **options) -> tuple[str, ...]:
        return strategies_for(*problem[:4], caps, **options)

    def plan(self, problem: Reduction, caps, strategy: str, **options) -> KernelPlan:
        return plan(*problem[:4], caps, strategy, axis_direction=problem.axis_direction, **options)

    def variants(self, problem: Reduction, caps, strategy: str) -> tuple[dict, ...]:
        return variants(*problem[:4], caps, strategy)

    def strategies_through(self, problem: Reduction, caps) -> tuple[str, ...]:
        return strategies_for(*problem[:4], caps, vectorize=False)

    def plan_through(self, problem: Reduction, caps, strategy: str, chain, epilogue=None) -> KernelPlan:
        made = plan(*problem[:4], caps, strategy, through=chain, element_stores=epilogue is not None,
                    axis_direction=problem.axis_direction)
        if epilogue is None:
            return made
        check_epilogue(epilogue, problem.output)
        return attach_epilogue(made, epilogue)

    def plan_with_epilogue(self, problem: Reduction, caps, strategy: str, epilogue) -> KernelPlan:
        """Every strategy: the kernel writing the outputs (the one pass, or the last: the
        combine of partial results) applies it, element by element."""
        check_epilogue(epilogue, problem.output)
        return attach_epilogue(plan(*problem[:4], caps, strategy, element_stores=True,
                                    axis_direction=problem.axis_direction), epilogue, 1)


FAMILY = ReductionFamily()


class ReductionPlanner(ProblemPlanner):
    """The Planner of an operator that reduces axes of its input (fields input_tensor,
    output_tensor, axes): `function(desc)` names its reduce function, `direction(desc)` the
    ARGMAX/ARGMIN axis direction (None: INCREASING)."""

    family = FAMILY

    def __init__(self, function, direction=None):
        def problem(desc) -> Reduction:
            return Reduction(function(desc), desc.input_tensor, desc.output_tensor, desc.axes,
                             "INCREASING" if direction is None else direction(desc))
        super().__init__(problem)


#: DML_REDUCE: the desc's `function`.
REDUCE = ReductionPlanner(lambda desc: desc.function.name)
#: DML_ARGMAX and DML_ARGMIN: the desc's FUNCTION ("ARGMAX" or "ARGMIN") and axis_direction.
ARG_REDUCE = ReductionPlanner(lambda desc: desc.FUNCTION, lambda desc: desc.axis_direction.name)
