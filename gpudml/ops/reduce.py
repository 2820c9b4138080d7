"""DML_REDUCE_OPERATOR_DESC (SPEC.md section 4, seed 004).

Semantics beyond the page, as implemented (and tested against `reference.py`):

- float16 is read as float32, accumulated in float32 and rounded once at the end;
  a result beyond float16's range becomes +-inf. float32 sums add blocks of 64
  elements separately before adding the block sums (and long reductions go through
  partial results), so their error grows far slower than one running sum's.
- Integer SUM, MULTIPLY, L1 and SUM_SQUARE wrap modulo 2^bits in the input type
  (L1 of INT_MIN is INT_MIN's bit pattern, i.e. 2^(bits-1) modulo 2^bits).
  INT64/UINT64 are exact: native 64-bit integers where the adapter has
  shader-int64, exact 32-bit pairs where it has not.
- LOG_SUM_EXP is max-shifted, max + log(sum(exp(x - max))): inputs around 1000
  give finite results; any +inf gives +inf, all -inf gives -inf.
- LOG_SUM of a sum <= 0 is log's value there (-inf for 0, NaN below).
- L2 squares in float32: |x| above ~1.8e19 overflows to +inf.
- NaN: SUM-like functions propagate it through arithmetic. MAX, MIN, ARGMAX and
  ARGMIN propagate it as numpy does: any NaN makes MAX/MIN NaN, and ARGMAX/ARGMIN
  return the index of the first NaN. Otherwise ARGMAX/ARGMIN return the first
  occurrence of the extreme value. (WGSL's min/max may drop NaN; the kernels
  compare explicitly.)
- ARGMAX/ARGMIN over several axes return the flat row-major index into the reduced
  sub-tensor, the reduced axes taken in increasing order whatever order `axes`
  lists them in. The index is written into the output type (I32, U32, I64, U64).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..errors import InvalidArgumentError, UnsupportedError
from ..tensor_desc import TensorDesc, as_int_tuple, check_same_rank, check_tensor_desc
from ..types import TYPES_8, DataType, FeatureLevel, ReduceFunction
from .base import Binding, Dispatch, KernelPlan, SupportRow, SupportTable, ranks

OP = "Reduce"
F = ReduceFunction
T = DataType
_FL = FeatureLevel

_FLOATS = frozenset({T.FLOAT32, T.FLOAT16})
_ARITH_5_0 = frozenset({T.FLOAT32, T.FLOAT16, T.INT64, T.INT32, T.UINT64, T.UINT32})
_ALL_BUT_F64 = TYPES_8 | {T.INT64, T.UINT64}
_INDEX_TYPES = frozenset({T.INT64, T.INT32, T.UINT64, T.UINT32})


def _rows(*rows) -> list[SupportRow]:
    """Rows (level, dims, input types, output types or None for 'same as input')."""
    return [SupportRow(level, dims, {"input_tensor": types, "output_tensor": out or types})
            for level, dims, types, out in rows]


_DIMS_4 = frozenset({4})
_GROUP_ROWS = {
    (F.ARGMIN, F.ARGMAX): _rows(
        (_FL.FL_4_1, ranks(1, 8), _ALL_BUT_F64, _INDEX_TYPES),
        (_FL.FL_3_0, ranks(1, 8), TYPES_8, _INDEX_TYPES),
        (_FL.FL_2_1, _DIMS_4, TYPES_8, frozenset({T.UINT32})),
        (_FL.FL_1_0, _DIMS_4, _FLOATS, frozenset({T.UINT32})),
    ),
    (F.AVERAGE, F.L2, F.LOG_SUM, F.LOG_SUM_EXP): _rows(
        (_FL.FL_3_0, ranks(1, 8), _FLOATS, None),
        (_FL.FL_1_0, _DIMS_4, _FLOATS, None),
    ),
    (F.L1, F.SUM_SQUARE): _rows(
        (_FL.FL_5_0, ranks(1, 8), _ARITH_5_0, None),
        (_FL.FL_3_0, ranks(1, 8), _FLOATS, None),
        (_FL.FL_1_0, _DIMS_4, _FLOATS, None),
    ),
    (F.MIN, F.MAX): _rows(
        (_FL.FL_5_0, ranks(1, 8), _ALL_BUT_F64, None),
        (_FL.FL_3_0, ranks(1, 8), TYPES_8, None),
        (_FL.FL_2_1, _DIMS_4, frozenset({T.FLOAT32, T.FLOAT16, T.INT32, T.UINT32}), None),
        (_FL.FL_1_0, _DIMS_4, _FLOATS, None),
    ),
    (F.MULTIPLY, F.SUM): _rows(
        (_FL.FL_5_0, ranks(1, 8), _ARITH_5_0, None),
        (_FL.FL_3_0, ranks(1, 8), frozenset({T.FLOAT32, T.FLOAT16, T.INT32, T.UINT32}), None),
        (_FL.FL_2_1, _DIMS_4, frozenset({T.FLOAT32, T.FLOAT16, T.INT32, T.UINT32}), None),
        (_FL.FL_1_0, _DIMS_4, _FLOATS, None),
    ),
}

#: The seed page's support tables, one per function (rows shared within a function group).
SUPPORT: dict[ReduceFunction, SupportTable] = {
    function: SupportTable(f"{OP} ({function.name})", rows)
    for group, rows in _GROUP_ROWS.items() for function in group
}

ARG_FUNCTIONS = frozenset({F.ARGMAX, F.ARGMIN})
FLOAT_SUMS = frozenset({F.SUM, F.AVERAGE, F.L1, F.L2, F.SUM_SQUARE, F.LOG_SUM})


@dataclass(frozen=True)
class ReduceOperatorDesc:
    function: ReduceFunction
    input_tensor: TensorDesc
    output_tensor: TensorDesc
    axes: tuple[int, ...]

    def __post_init__(self):
        object.__setattr__(self, "function", ReduceFunction.coerce(self.function, f"{OP}: function"))
        object.__setattr__(self, "axes", as_int_tuple(self.axes, f"{OP}: axes"))


def validate(desc: ReduceOperatorDesc, feature_level: FeatureLevel) -> None:
    check_tensor_desc(OP, "input_tensor", desc.input_tensor)
    check_tensor_desc(OP, "output_tensor", desc.output_tensor, is_output=True)
    inp, out, fn = desc.input_tensor, desc.output_tensor, desc.function
    rank = check_same_rank(OP, {"input_tensor": inp, "output_tensor": out})
    if fn not in ARG_FUNCTIONS and out.data_type != inp.data_type:
        raise InvalidArgumentError(
            f"{OP}: output_tensor.data_type {out.data_type.name} must equal input_tensor.data_type "
            f"{inp.data_type.name} (only ARGMAX and ARGMIN change the type; function is {fn.name})")
    SUPPORT[fn].check(feature_level, rank, {"input_tensor": inp.data_type, "output_tensor": out.data_type})
    axes = desc.axes
    if not axes:
        raise InvalidArgumentError(f"{OP}: axes must name at least one axis (AxisCount is 0)")
    for i, axis in enumerate(axes):
        if not 0 <= axis < rank:
            raise InvalidArgumentError(
                f"{OP}: axes[{i}] = {axis} is outside [0, {rank - 1}] (DimensionCount {rank})")
        if axis in axes[:i]:
            raise InvalidArgumentError(f"{OP}: axes[{i}] = {axis} repeats an axis (axes {list(axes)})")
    for i, (n_in, n_out) in enumerate(zip(inp.sizes, out.sizes, strict=True)):
        if i in axes and n_out != 1:
            raise InvalidArgumentError(
                f"{OP}: output_tensor.sizes[{i}] = {n_out} must be 1 on reduced axis {i} "
                f"(input {list(inp.sizes)}, output {list(out.sizes)})")
        if i not in axes and n_out != n_in:
            raise InvalidArgumentError(
                f"{OP}: output_tensor.sizes[{i}] = {n_out} must equal input_tensor.sizes[{i}] = {n_in} "
                f"on kept axis {i} (input {list(inp.sizes)}, output {list(out.sizes)})")


# ------------------------------------------------------------------------------ layout


@dataclass(frozen=True)
class ReduceLayout:
    """The problem with size-1 axes dropped and neighbouring axes merged where the strides
    allow: kept axes (sizes, input strides, output strides), reduced axes (sizes, input
    strides), each in axis order. Merging keeps the row-major order of both index spaces,
    so ARGMAX's flat index and the output order are unchanged."""

    kept_sizes: tuple[int, ...]
    kept_in_strides: tuple[int, ...]
    kept_out_strides: tuple[int, ...]
    red_sizes: tuple[int, ...]
    red_strides: tuple[int, ...]

    @property
    def count(self) -> int:
        return math.prod(self.kept_sizes)

    @property
    def n(self) -> int:
        return math.prod(self.red_sizes)


def _merge(axes: list[tuple[int, ...]]) -> list[tuple[int, ...]]:
    """Merge neighbouring (size, *strides) entries where the outer one steps over the inner."""
    merged: list[tuple[int, ...]] = []
    for axis in axes:
        if merged and all(o == i * axis[0] for o, i in zip(merged[-1][1:], axis[1:], strict=True)):
            outer = merged.pop()
            axis = (outer[0] * axis[0],) + axis[1:]
        merged.append(axis)
    return merged


def layout(desc: ReduceOperatorDesc) -> ReduceLayout:
    sizes = desc.input_tensor.sizes
    in_st, out_st = desc.input_tensor.effective_strides, desc.output_tensor.effective_strides
    reduced = set(desc.axes)
    kept = _merge([(n, in_st[i], out_st[i]) for i, n in enumerate(sizes) if i not in reduced and n > 1])
    red = _merge([(n, in_st[i]) for i, n in enumerate(sizes) if i in reduced and n > 1])
    kept = kept or [(1, 0, 0)]
    red = red or [(1, 0)]
    columns = [tuple(column) for column in zip(*kept, strict=True)]
    columns += [tuple(column) for column in zip(*red, strict=True)]
    return ReduceLayout(*columns)


# ------------------------------------------------------------------------------ plan

#: Strategy constants, chosen by measurement on lavapipe (bench/bench_reduce.py --strategies;
#: float32 [4096, 4096], device-resident medians of one quiet run, Mesa 22.3 on 2 vCPUs):
#: - contiguous rows, many outputs (W1, SUM over the last axis): one invocation per row reading
#:   16-byte blocks 13.7 ms; element by element 21.6 ms; split into 4 chunks 14.2 ms. A workgroup
#:   per row was slower in a hand-written prototype (shared-memory tree at WG=64 2.0x, WG=256
#:   4.3x, subgroupAdd at WG=8 1.04x, WG=64 1.5x the one-invocation-per-row time).
#: - columns (W2, SUM over axis 0): one pass element by element 67.6 ms; groups of 4 neighbouring
#:   outputs sharing 16-byte blocks, split into 1/4/16/32/64/128 chunks per output:
#:   42.5/24.3/18.7/17.7/18.4/19.9 ms (32 chunks = 32768 invocations); 32 chunks read element by
#:   element 30.5 ms.
#: - few long rows ([16, 1M] over axis 1): 16-1024 chunks 14.2-14.6 ms, 4096 chunks 15.7 ms.
SMALL_N = 16  # reductions this short run in one pass, whatever the layout
TINY_TOTAL = 1 << 15  # so do problems this small: a second dispatch would cost more
ROWS_MIN_OUTPUTS = 1024  # contiguous rows: one invocation per output from this many outputs
ROW_SPLIT_INVOCATIONS = 1 << 12  # the split strategy cuts contiguous rows until this many ...
COLUMN_SPLIT_INVOCATIONS = 1 << 15  # ... other layouts until this many ...
MIN_CHUNK_BYTES = 1024  # ... but an invocation reads at least this much per chunk
MAX_CHUNKS = 4096  # ... and the combine pass merges at most this many (unless it must)
#: Loop iterations one invocation may run in total. llvmpipe (Mesa's software Vulkan and GL)
#: silently ends every loop of an invocation once 65535 iterations have run in all, so long
#: reductions must be cut into chunks. Half of that leaves room for the lanes of one SIMD
#: group iterating in lockstep through loops of different lengths; the estimate below is an
#: upper bound, so the margin is real.
LOOP_BUDGET = 1 << 15
WORKGROUP_SIZE = 64


def _kind(dt: DataType) -> str:
    return "float" if dt.is_float else ("sint" if dt.is_signed else "uint")


def state_words(function: ReduceFunction, dt: DataType) -> int:
    """u32 words one partial State takes in scratch (lib/reduction.wgsl.j2)."""
    extra = function in ARG_FUNCTIONS or function == F.LOG_SUM_EXP
    return (2 if dt.size == 8 else 1) + extra


def plan(desc: ReduceOperatorDesc, caps, *, strategy: str | None = None, chunks: int | None = None,
         vectorize: bool = True, int64_native: bool | None = None) -> KernelPlan:
    """The dispatches for `desc`. Keyword options force choices (tests and benchmarks):
    strategy "rows" (one pass, one invocation per output) or "split" (chunked partial
    results in scratch, then a combine pass); chunks for "split"; vectorize=False reads
    element by element; int64_native=False emulates 64-bit integers on any adapter.
    Forced choices that would exceed the loop budget are corrected (more chunks)."""
    lay = layout(desc)
    inp, out = desc.input_tensor, desc.output_tensor
    in_dt, fn = inp.data_type, desc.function
    per_block = 16 // in_dt.size  # elements in one 16-byte block
    if int64_native is None:
        int64_native = caps is not None and caps.has("shader-int64")
    vec_ok = vectorize and inp.buffer_bytes >= 16
    vec_inner = vec_ok and lay.red_strides[-1] == 1 and lay.red_sizes[-1] >= 2 * per_block
    group = per_block if vec_ok and not vec_inner and _groupable(lay, per_block) else 1
    cost = _Cost(lay, per_block if vec_inner else 1, group, inp, out)
    words = state_words(fn, in_dt)
    if strategy is None:
        strategy, chunks = _choose(lay, cost, words, caps)
    elif strategy == "rows" and not cost.rows_fit():
        strategy = "split"
    if strategy == "split":
        chunks = _chunks(lay, cost, words, caps, chunks)
    params = {
        "function": fn.name, "kind": _kind(in_dt), "in_bits": in_dt.size * 8,
        "out_kind": _kind(out.data_type), "out_bits": out.data_type.size * 8,
        "native64": bool(int64_native) and 8 in (in_dt.size, out.data_type.size),
        "rank_r": len(lay.red_sizes), "vec_inner": vec_inner,
        "blocked": in_dt.is_float and fn in FLOAT_SUMS,
    }
    vec_binding = (Binding("input_vec", "input:0", "array<vec4<u32>>"),) if vec_inner or group > 1 else ()
    out_bits = out.data_type.size * 8
    packed = cost.packed_output
    output = Binding("output", "output:0", "array<atomic<u32>>" if out_bits < 32 and not packed else "array<u32>",
                     writable=True)
    writer = {**params, "rank": len(lay.kept_sizes), "packed_output": packed}
    writers = -(-lay.count // cost.outputs_per_invocation)
    if strategy == "rows":
        red = (lay.n, 1, lay.n, lay.count, 0)
        rows = _dispatch("reduce.wgsl.j2", writer, (output, Binding("input", "input:0")) + vec_binding,
                         _uniforms(lay, red), writers)
        return KernelPlan((rows,))
    if strategy != "split":
        raise ValueError(f"unknown reduce strategy {strategy!r}")
    per_chunk = -(-lay.n // chunks)
    chunks = -(-lay.n // per_chunk)  # no empty chunk
    red = (lay.n, chunks, per_chunk, cost.groups, cost.groups_per_row)
    partials = _dispatch(
        "reduce_partials.wgsl.j2", {**params, "rank": len(lay.kept_sizes), "group": group},
        (Binding("partials", "scratch:0", writable=True), Binding("input", "input:0")) + vec_binding,
        _uniforms(lay, red), cost.groups * chunks)
    combine = _dispatch("reduce_combine.wgsl.j2", {**writer, "vec_inner": False, "blocked": False},
                        (output, Binding("partials", "scratch:0")), _uniforms(lay, red), writers)
    return KernelPlan((partials, combine), scratch_bytes=(lay.count * chunks * words * 4,))


def _dispatch(template: str, params: dict, bindings: tuple[Binding, ...],
              uniforms: list[tuple[str, tuple[int, ...]]], invocations: int) -> Dispatch:
    return Dispatch(template=template, params=params, bindings=bindings, uniforms=tuple(uniforms),
                    invocations=invocations, workgroup_size=WORKGROUP_SIZE)


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
    per 64 of them. Kernels that write outputs compute 32 // bits of them per invocation for
    packed 8/16-bit outputs (lib/reduction.wgsl.j2, output_main)."""

    def __init__(self, lay: ReduceLayout, per_step: int, group: int, inp: TensorDesc, out: TensorDesc):
        self.lay, self.per_step, self.group = lay, per_step, group
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
        """The longest chunk the first pass of the split strategy may reduce."""
        per_row = 2 * self.per_step + 8
        slope = 1 / self.per_step + 1 / 64 + per_row / self.lay.red_sizes[-1]
        return max(1, int((LOOP_BUDGET - 2 * per_row) / slope))

    def max_chunks(self) -> int:
        """The most chunks the combine pass may merge."""
        return int(LOOP_BUDGET / (1 + 1 / 64) / self.outputs_per_invocation)


def _uniforms(lay: ReduceLayout, red: tuple[int, ...]) -> list[tuple[str, tuple[int, ...]]]:
    """The uniform block of every reduce kernel (see shaders/reduce.wgsl.j2)."""
    return [
        ("shape", (lay.count,)),
        ("out_sizes", lay.kept_sizes),
        ("out_strides", lay.kept_out_strides),
        ("in_strides", lay.kept_in_strides),
        ("red_sizes", lay.red_sizes),
        ("red_strides", lay.red_strides),
        ("red", red),
    ]


def _chunks(lay: ReduceLayout, cost: _Cost, words: int, caps, requested: int | None = None) -> int:
    """Chunks per output for the split strategy: the requested number, else enough for
    ROW_ or COLUMN_SPLIT_INVOCATIONS without chunks under MIN_CHUNK_BYTES or more than MAX_CHUNKS;
    in any case enough for the loop budget, and few enough for it and for one binding."""
    if requested is None:
        min_chunk = -(-MIN_CHUNK_BYTES // (cost.group * cost.element_bytes))
        target = ROW_SPLIT_INVOCATIONS if lay.red_strides[-1] == 1 else COLUMN_SPLIT_INVOCATIONS
        requested = min(-(-target // cost.groups), lay.n // min_chunk, MAX_CHUNKS)
    need = -(-lay.n // cost.max_chunk())
    most = min(cost.max_chunks(), _binding_limit(caps) // (lay.count * words * 4), lay.n)
    if need > most:
        raise UnsupportedError(
            f"{OP}: reducing {lay.n} elements per output needs {need} partial results per output, "
            f"more than the {most} one combine pass can merge within the adapter's limits")
    return max(1, need, min(int(requested), most))


def _choose(lay: ReduceLayout, cost: _Cost, words: int, caps) -> tuple[str, int | None]:
    """One pass for short reductions, small problems, many contiguous rows, and outputs too
    many for partial results in scratch; otherwise partial results where they add
    parallelism or let neighbouring outputs share 16-byte blocks."""
    if cost.rows_fit():
        small = lay.n <= SMALL_N or lay.n * lay.count <= TINY_TOTAL
        many_rows = lay.red_strides[-1] == 1 and lay.count >= ROWS_MIN_OUTPUTS
        if small or many_rows or lay.count * words * 4 > _binding_limit(caps):
            return "rows", None
    chunks = _chunks(lay, cost, words, caps)
    if chunks == 1 and cost.group == 1 and cost.rows_fit():
        return "rows", None
    return "split", chunks


def _binding_limit(caps) -> int:
    return caps.max_storage_binding_size if caps is not None else 1 << 27
