"""The element-wise family: one kernel for every DirectML element-wise and activation
operator (the table of ops/elementwise/), the formula a compile-time parameter.

An operator describes its description as a `Problem` (the planner's `problem(desc)`): any
number of input tensors (1-3 for most operators, 7 for QUANTIZED_LINEAR_ADD) and one output
of the same sizes (DirectML's strides per tensor; stride 0 broadcasts), the kind each value
is computed in, and the formula: a WGSL expression over the input values `a`, `b`, `c`, `d`,
... (`input_name(k)`; DML_SCALE_BIAS applied to `a` first, a fused activation applied to the
result after: parts of the same kernel), whose attributes (alpha, min, ...) travel in the
uniform buffer, so that a new attribute value compiles nothing.

Each input is one storage binding, the output another (more where a tensor is bound in
segments): a problem whose tensors need more than the adapter's
max-storage-buffers-per-shader-stage is an UnsupportedError naming the count and the
limit, before any GPU work (WebGPU's default limit, 8, takes 7 inputs and the output; the
compiler counts segments). A fused chain (gpudml/fusion.py) stops inlining where its
kernel's inputs would not fit.

Values, as shaders/lib/elementwise.wgsl.j2 computes them: FLOAT32 and FLOAT16 in f32
(float16 rounded once, to nearest even, on the store, as lib/numeric's f32_to_f16_bits
does); FLOAT64 in f64 (adapters with shader-f64 and shader-int64 only, else
UnsupportedError naming the adapter; a copy needs neither); 8/16/32-bit integers in i32 or
u32 (sign- or zero-extended; the store keeps the low bits: two's-complement wrap); 64-bit
integers as W64 (lib/int64, which the builder emits where Dispatch.int64 asks: native
u64, or exact u32 pairs where the adapter has no shader-int64), with the w64_* functions.

The problem's axes merge where contiguous in every tensor (merge_axes): a packed call of
one shape is a flat 1-D loop. Strategies:

- `runs` (CPU-class): each invocation computes RUN consecutive output elements, decoding
  the coordinates once and stepping them; a packed output whose rows are whole 16-byte
  blocks is written a block at a time (one 16-byte store per block: W24's fused chain 0.76x
  the time of per-element stores, a FLOAT16 bias add 0.26x that of whole words), and
  there an input (a fused read's leaf, `_leaf_blocks`) stepping by +-1 along rows that
  start on blocks is loaded a block at a time too (W24 0.78x again: a reversed read);
  other packed 8/16-bit outputs are assembled into whole words (no atomics).
- `elements` (GPU-class): one output element per invocation (one output word of packed
  8/16-bit outputs), its coordinates decoded with strided index math, so that neighbouring
  invocations touch neighbouring addresses.
- `blocks` (every tensor packed, one element width: 8, 16, 32 or 64 bits): each invocation
  reads and writes whole 16-byte blocks, BLOCK_RUN_CPU of them on CPU adapters, one on GPUs;
  the first choice wherever it can run.

The adapter class orders the others: `runs` first on software adapters, `elements` first
on GPUs.

The family is `ElementWiseFamily` (a kernels.base.KernelFamily of `Problem`s and
`FusedProblem`s), its instance FAMILY; an operator's planner is an `ElementWisePlanner`.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, replace
from typing import NamedTuple

from ..errors import InternalError, InvalidArgumentError, UnsupportedError
from ..tensor_desc import TensorDesc, merge_axes
from .base import KernelFamily, ProblemPlanner, element_bits
from .builder import Dispatch, KernelPlan, f32_bits, input_buffer, int64_mode, output_buffer, scratch_buffer
from .chain import chain

STRATEGIES = ("runs", "elements", "blocks")
WORKGROUP_SIZE = 64
#: Output elements per invocation of `runs` (as the movement family's RUN: decoding a
#: coordinate costs divisions, stepping it does not).
RUN = 64
#: 16-byte blocks per invocation of `blocks` on CPU adapters (32 float32 elements); GPUs take
#: one each, neighbouring invocations on neighbouring blocks. lavapipe (gpudml lab ... --options
#: run=N, 64 MiB float32, interleaved): add 2/4/8/16 blocks 23.8/21.3/20.1/33.4 ms, sigmoid
#: 28.0/30.1/27.5/30.5 ms: an invocation's SIMD lanes (8 on llvmpipe) each stream their own
#: run, and 16-block runs put their three streams 256 bytes apart, past what the prefetcher
#: follows; 4-8 blocks keep them within a few cache lines.
BLOCK_RUN_CPU = 8
#: The names of the inputs in formulas and kernels: input k is NAMES[k] (`input_name`).
NAMES = tuple("abcdefghijklmnopqrstuvw")


def input_name(k: int) -> str:
    """Input k's value in a formula: a, b, c, ..., w, then arg23, arg24, ..."""
    return NAMES[k] if k < len(NAMES) else f"arg{k}"


@dataclass(frozen=True)
class Attribute:
    """A value a formula reads by `name` from the uniforms: `kind` "f32" (a DirectML FLOAT,
    computed in the formula's float type) or "value" (a value of the input's own type, as
    DML_SCALAR_UNION holds it: CLIP1's min and max), and the value itself."""

    name: str
    kind: str
    value: float | int


@dataclass(frozen=True)
class Problem:
    """An element-wise description as the kernels see it. `inputs` and `output` have one
    rank and one set of sizes; `kinds` is the kind ("float", "sint", "uint") each input's
    values are computed in and `out_kind` the output's; `expression` is a WGSL expression of
    the output's value type over the inputs' values `a`, `b`, `c` and the `attributes`;
    `scale_bias` (scale, bias) is applied to `a` first (float inputs), `activation` (a WGSL
    expression over `x`, the result, reading its `activation_attributes`) after; `copy`:
    the output takes each input element's bits (an identity of one type)."""

    op: str
    inputs: tuple[TensorDesc, ...]
    output: TensorDesc
    kinds: tuple[str, ...]
    out_kind: str
    expression: str
    attributes: tuple[Attribute, ...] = ()
    scale_bias: tuple[float, float] | None = None
    activation: str | None = None
    activation_attributes: tuple[Attribute, ...] = ()
    copy: bool = False


class Step(NamedTuple):
    """One operator of a fused element-wise kernel (a graph's chain of element-wise nodes,
    gpudml/fusion.py): its own Problem (its inputs' descs say how it reads its arguments,
    its output desc the type of its result) and what it reads: ("input", k) the fused
    kernel's input k, ("step", j) step j's result, which the kernel passes through the bits
    of step j's output type (rounded and wrapped as a tensor between two kernels would be),
    ("move", m) move m's value (FusedProblem.moves)."""

    problem: Problem
    args: tuple[tuple[str, int], ...]


class Move(NamedTuple):
    """Data-movement stages over step `step`'s result (a graph's data-movement nodes reading
    an element-wise value): `rules` (kernels.chain.StageRule, output side first) map a
    coordinate of the move's value to the coordinate where step `step` is computed, or to
    a fill (a CONSTANT padding's border: the padding's value, not the step's)."""

    rules: tuple
    step: int


@dataclass(frozen=True)
class FusedProblem:
    """Element-wise operators fused into one kernel: `inputs` (the tensors it reads, with
    the output's sizes and their own strides), `output` (the last step's), `steps` in
    order (each reads inputs, earlier steps or moves).

    With data movement (a graph's movement nodes fused with element-wise ones): input k
    is read through `paths[k]` (StageRules, output side first; () none) from its own
    layout, `moves` apply stages to a step's result, and `result` ("step", j) or
    ("move", m) is the value written (None: the last step's); `reads` are the stages'
    extra tensors (lengths, indices), bound after the inputs: the paths' in input order,
    then the moves'. Such a problem is computed per coordinate (`coordinates`): each value
    where its reader needs it, no axis merged."""

    op: str
    inputs: tuple[TensorDesc, ...]
    output: TensorDesc
    steps: tuple[Step, ...]
    paths: tuple[tuple, ...] = ()
    moves: tuple[Move, ...] = ()
    result: tuple[str, int] | None = None
    reads: tuple[TensorDesc, ...] = ()

    @property
    def coordinates(self) -> bool:
        return bool(self.moves) or any(self.paths)


class FetchParams(NamedTuple):
    """A fused read as lib/fused.wgsl.j2 takes it (hashable: template parameters key the
    caches): per input (bits, chain stages), the steps, per move (step, bits, stages), the
    result, the inputs' value kinds, and what the formulas compute with."""

    rank: int
    leaves: tuple
    steps: tuple
    moves: tuple
    result: tuple
    kinds: tuple
    out_bits: int
    f64: bool
    int64: bool
    native64: bool


class _StepParams(NamedTuple):
    """A step as the template sees it (hashable: template parameters key the caches)."""

    prefix: str
    args: tuple
    kinds: tuple
    in_bits: tuple
    out_kind: str
    out_bits: int
    expression: str
    attributes: tuple
    scale_bias: bool
    activation: str
    activation_attributes: tuple


def fused_problem(p) -> FusedProblem:
    """`p` (a Problem or a FusedProblem) as steps: an operator alone is one step over its inputs."""
    if isinstance(p, FusedProblem):
        return p
    return FusedProblem(p.op, p.inputs, p.output, (Step(p, tuple(("input", k) for k in range(len(p.inputs)))),))


def value_kind(data_type) -> str:
    """The kind a DataType's values compute in: "float", "sint" or "uint"."""
    return "float" if data_type.is_float else ("sint" if data_type.is_signed else "uint")


@dataclass(frozen=True)
class _Layout:
    sizes: tuple[int, ...]
    strides: tuple[tuple[int, ...], ...]  # the output's, then each input's
    count: int


def _layout(p) -> _Layout:
    if isinstance(p, FusedProblem) and p.coordinates:  # the stages map the desc's own axes
        return _Layout(p.output.sizes, (p.output.effective_strides,), p.output.element_count)
    tensors = (p.output,) + p.inputs
    axes = merge_axes(p.output.sizes, *(t.effective_strides for t in tensors))
    strides = tuple(tuple(a.strides[k] for a in axes) for k in range(len(tensors)))
    return _Layout(tuple(a.size for a in axes), strides, p.output.element_count)


def _blocks_eligible(p) -> bool:
    """Every tensor packed, one element width (8/16-bit elements too: 16 or 8 to a block,
    taken apart and put back with extractBits/insertBits: a FLOAT16 add of [4096, 4096] on
    lavapipe 2.8x faster than `runs`' words), at least one block (and no data movement: a
    moved value has no block of its own)."""
    if isinstance(p, FusedProblem) and p.coordinates:
        return False
    bits = {element_bits(t) for t in (p.output,) + p.inputs}
    return (len(bits) == 1 and all(t.is_packed for t in (p.output,) + p.inputs)
            and p.output.element_count * p.output.data_type.size >= 16)


def _f64(p) -> bool:
    """Does the kernel compute in f64? (a FLOAT64 value computed as a float: not a bit copy,
    nor the bits of a bit operation)"""
    if isinstance(p, FusedProblem):
        return any(_f64(st.problem) for st in p.steps)
    kinds = (p.out_kind,) + p.kinds
    return not p.copy and any(t.data_type.size == 8 and t.data_type.is_float and k == "float"
                              for t, k in zip((p.output,) + p.inputs, kinds))


def _check_caps(p: Problem | FusedProblem, caps) -> None:
    _split(fused_problem(p), caps)  # (UnsupportedError where the tensors cannot be bound)
    if _f64(p) and caps is not None and not (caps.has("shader-f64") and caps.has("shader-int64")):
        raise UnsupportedError(
            f"{p.op}: FLOAT64 arithmetic needs the shader features shader-f64 and shader-int64, which the adapter "
            f"{caps.name} lacks (FLOAT64 tensors move, but do not compute, there)")


def strategies_for(p: Problem, caps) -> tuple[str, ...]:
    """`blocks` first where it can run; then `runs`, `elements` on CPU adapters (and no
    caps), `elements`, `runs` on GPUs."""
    _check_caps(p, caps)
    order = ("runs", "elements") if caps is None or caps.is_software else ("elements", "runs")
    return (("blocks",) if _blocks_eligible(p) else ()) + order


def _attribute_uniforms(prefix: str, attributes, kind: str, bits: int) -> tuple[dict, tuple]:
    """(uniforms, template entries (name, decoding)) of a formula's attributes: f32 bits for
    "f32" attributes and 32-bit values, (low, high) words for 64-bit values."""
    uniforms, entries = {}, []
    for at in attributes:
        name = prefix + at.name
        if at.kind == "f32" or (at.kind == "value" and kind == "float" and bits < 64):
            uniforms[name] = f32_bits(at.value)
            entries.append((at.name, name, "f32"))
        elif at.kind == "value" and bits == 64:
            word = (struct.unpack("<Q", struct.pack("<d", float(at.value)))[0] if kind == "float"
                    else int(at.value) & (2**64 - 1))
            uniforms[name + "_lo"], uniforms[name + "_hi"] = word & 0xFFFFFFFF, word >> 32
            entries.append((at.name, name, "f64" if kind == "float" else "w64"))
        elif at.kind == "value":
            uniforms[name] = int(at.value) & 0xFFFFFFFF
            entries.append((at.name, name, "i32" if kind == "sint" else "u32"))
        else:
            raise InternalError(f"element-wise attribute {at} has an unknown kind")
    return uniforms, tuple(entries)


#: The uniforms and template entries of a formula's attributes, for the families that apply
#: an activation in their store (kernels/gemm.py).
attribute_uniforms = _attribute_uniforms


def steps(p: FusedProblem, prefix: str | None = None, every: bool = False) -> tuple[dict, tuple[_StepParams, ...]]:
    """(uniforms, template parameters) of the steps (lib/elementwise.wgsl.j2, step_fns): an
    operator alone keeps its attributes' plain uniform names (NAME, act_NAME, sb_scale),
    fused steps (`every`: any step, a fused read's) prefix them n0_, n1_, ...; with `prefix`
    (another family's store epilogue: kernels/epilogue.py), PREFIX0_, PREFIX1_, ..."""
    uniforms, params = {}, []
    fused = len(p.steps) > 1 or every
    for j, (q, args) in enumerate(p.steps):
        prefix_j = f"{prefix}{j}_" if prefix is not None else (f"n{j}_" if fused else "")
        in_bits = tuple(element_bits(_arg_output(p, kind, k)) for kind, k in args)
        out_bits = element_bits(q.output)
        values, attrs = _attribute_uniforms(prefix_j, q.attributes, q.kinds[0], in_bits[0])
        act_values, act_attrs = _attribute_uniforms(prefix_j + "act_", q.activation_attributes, q.out_kind, out_bits)
        uniforms.update(values)
        uniforms.update(act_values)
        if q.scale_bias is not None:
            uniforms.update(_attribute_uniforms(prefix_j + "sb_", (Attribute("scale", "f32", q.scale_bias[0]),
                                                                 Attribute("bias", "f32", q.scale_bias[1])),
                                                "float", 32)[0])
        params.append(_StepParams(prefix_j, tuple(args), tuple(q.kinds), in_bits, q.out_kind, out_bits, q.expression,
                                  attrs, q.scale_bias is not None, q.activation or "", act_attrs))
    return uniforms, tuple(params)


def _arg_output(p: FusedProblem, kind: str, k: int) -> TensorDesc:
    """The desc whose element type a step's argument has: the input's, the step's result's
    (a move's: the result of the step it moves)."""
    if kind == "input":
        return p.inputs[k]
    return p.steps[k if kind == "step" else p.moves[k].step].problem.output


def input_kinds(p: FusedProblem) -> tuple[str, ...]:
    """The kind each input's values are computed in: the kind of the (first) step reading it
    (a bit operation reads a float tensor's bits as "uint")."""
    kinds = {}
    for st in p.steps:
        for position, (kind, k) in enumerate(st.args):
            if kind == "input":
                kinds.setdefault(k, st.problem.kinds[position])
    return tuple(kinds[k] for k in range(len(p.inputs)))


def _split(p: FusedProblem, caps) -> list[tuple[int, int]]:
    """The steps of `p` as consecutive groups (start, stop), one kernel each, whose inputs
    (the kernel's inputs they read, and the results of earlier groups, read from scratch)
    and output fit the adapter's storage bindings: one group where the whole problem fits
    (or no caps). A later group reads only an earlier group's last step (its one result);
    UnsupportedError where no such split fits (a problem with data movement, in coordinate
    mode, is not split: its stages' tensors, `reads`, are bound too)."""
    allowed = None if caps is None else caps.max_storage_buffers_per_shader_stage
    bound = len(p.inputs) + len(p.reads) + 1
    if allowed is None or bound <= allowed:
        return [(0, len(p.steps))]
    if p.coordinates:
        raise UnsupportedError(
            f"{p.op}: reads {len(p.inputs) + len(p.reads)} tensors and writes one, {bound} storage bindings, above the "
            f"adapter's max-storage-buffers-per-shader-stage {allowed} ({caps.name})")
    groups, start, reads = [], 0, set()
    for j, st in enumerate(p.steps):
        more = reads | {(kind, k) for kind, k in st.args if kind == "input" or k < start}
        if len(more) + 1 > allowed and j > start:  # close the group before step j
            groups.append((start, j))
            start, more = j, {(kind, k) for kind, k in st.args if kind == "input" or k < j}
        reads = more
        if len(reads) + 1 > allowed:
            break
    else:
        groups.append((start, len(p.steps)))
        lasts = {stop - 1 for _, stop in groups}
        if all(kind == "input" or k >= first or k in lasts
               for first, stop in groups for st in p.steps[first:stop] for kind, k in st.args):
            return groups
    raise UnsupportedError(
        f"{p.op}: reads {len(p.inputs)} input tensors and writes one, {len(p.inputs) + 1} storage bindings, above the "
        f"adapter's max-storage-buffers-per-shader-stage {allowed} ({caps.name}), and its steps do not split into "
        f"kernels that fit")


def _group(p: FusedProblem, start: int, stop: int) -> tuple[FusedProblem, tuple[tuple[str, int], ...]]:
    """Steps start..stop of `p` as a problem of their own, and what its inputs are: ("input",
    k) the kernel's input k, ("step", j) step j's result (an earlier kernel's, in scratch)."""
    sources: list[tuple[str, int]] = []
    steps = []
    for st in p.steps[start:stop]:
        args = []
        for kind, k in st.args:
            if kind == "step" and k >= start:
                args.append(("step", k - start))
                continue
            if (kind, k) not in sources:
                sources.append((kind, k))
            args.append(("input", sources.index((kind, k))))
        steps.append(Step(st.problem, tuple(args)))
    last = p.steps[stop - 1].problem
    output = p.output if stop == len(p.steps) else TensorDesc(last.output.data_type, p.output.sizes)
    inputs = tuple(p.inputs[k] if kind == "input" else TensorDesc(p.steps[k].problem.output.data_type, p.output.sizes)
                   for kind, k in sources)
    return FusedProblem(p.op, inputs, output, tuple(steps)), tuple(sources)
def _any64(p: FusedProblem) -> bool:
    return any(element_bits(t) == 64 for t in (p.output,) + p.inputs + tuple(st.problem.output for st in p.steps))


def pushed(p: FusedProblem) -> tuple[FusedProblem, tuple[int, ...]]:
    """`p` with its data movement pushed down to the tensors where it can be: a move that
    fills nothing (a slice, an edge or reflection padding: no CONSTANT border) applied to an
    element-wise step is the step of its arguments each moved alike (the step's result
    passes on through its bits either way, so the values are the same bits), down to the
    inputs, whose paths then take the move's stages first, so that affine stages (slices,
    a crop inside a padding's interior) fold into the inputs' strides (kernels/chain.py)
    and the read computes no coordinate map. A step read at several coordinates becomes
    one step per coordinate (the kernel computes each argument where it is read anyway);
    an input read through several paths becomes one leaf per path, the binding
    shared. Returns the problem, whose inputs are the leaves (input k's desc repeated), and
    the binding (input of `p`) each leaf reads. Problems whose stages read tensors (lengths,
    indices: their bindings are ordered by leaf) stay as they are."""
    identity = tuple(range(len(p.inputs)))
    if not p.moves or p.reads or any(r.reads for mv in p.moves for r in mv.rules) or any(
            r.reads for path in p.paths for r in path):
        return p, identity
    paths = p.paths or ((),) * len(p.inputs)
    leaves: list[tuple[int, tuple]] = []
    steps: list[Step] = []
    moves: list[Move] = []
    memo: dict = {}

    def leaf(k: int, prefix: tuple) -> int:
        key = ("input", k, tuple(map(id, prefix)))
        if key not in memo:
            memo[key] = len(leaves)
            leaves.append((k, prefix + tuple(paths[k])))
        return memo[key]

    def step(j: int, prefix: tuple) -> int:
        key = ("step", j, tuple(map(id, prefix)))
        if key not in memo:
            args = tuple(arg(kind, k, prefix) for kind, k in p.steps[j].args)
            memo[key] = len(steps)
            steps.append(Step(p.steps[j].problem, args))
        return memo[key]

    def arg(kind: str, k: int, prefix: tuple) -> tuple[str, int]:
        if kind == "input":
            return ("input", leaf(k, prefix))
        if kind == "step":
            return ("step", step(k, prefix))
        mv = p.moves[k]
        rules = prefix + tuple(mv.rules)
        if any(dict(r.params).get("fills") for r in mv.rules):  # a border of its own: moved as a whole
            moves.append(Move(rules, step(mv.step, ())))
            return ("move", len(moves) - 1)
        return ("step", step(mv.step, rules))

    result = arg(*(p.result or ("step", len(p.steps) - 1)), ())
    inputs = tuple(p.inputs[k] for k, _ in leaves)
    q = FusedProblem(p.op, inputs, p.output, tuple(steps), tuple(path for _, path in leaves), tuple(moves),
                     result, ())
    return q, tuple(k for k, _ in leaves)


def fetch(p: FusedProblem, caps) -> tuple[FetchParams, dict, tuple]:
    """A problem in coordinate mode as a fused read (lib/fused.wgsl.j2) that another kernel
    computes its input with (Planner.plan_through: a Reduce's, a scan's prologue) or writes
    (plan): its template parameters, uniforms and input bindings (input k as in{k}, then
    the stages' extra tensors). Its moves are pushed down to its inputs first (`pushed`)."""
    _check_caps(p, caps)
    buffers = tuple(input_buffer(k, f"in{k}") for k in range(len(p.inputs)))
    p, binding = pushed(p)
    native64 = caps is not None and caps.has("shader-int64")
    uniforms, step_params = steps(p, every=True)
    chains = [chain(rules, t.effective_strides, prefix=f"i{k}")
              for k, (t, rules) in enumerate(zip(p.inputs, p.paths or ((),) * len(p.inputs)))]
    moved = [chain(mv.rules, None, prefix=f"m{m}") for m, mv in enumerate(p.moves)]
    for c in chains + moved:
        buffers += c.buffers(len(buffers))
        uniforms.update(c.uniforms)
    result = p.result or ("step", len(p.steps) - 1)
    out_step = p.moves[result[1]].step if result[0] == "move" else result[1]
    params = FetchParams(
        len(p.output.sizes), tuple((element_bits(t), c.stages, _fixed(c, f"i{k}"), binding[k])
                                   for k, (t, c) in enumerate(zip(p.inputs, chains))), step_params,
        tuple((mv.step, element_bits(p.steps[mv.step].problem.output), c.stages) for mv, c in zip(p.moves, moved)),
        result, input_kinds(p), element_bits(p.steps[out_step].problem.output), _f64(p), _any64(p),
        native64 and _any64(p))
    return params, uniforms, buffers


def _fixed(c, prefix: str) -> bool:
    """Does chain `c` read one element wherever it is read (no stage, every source stride
    0: a scalar operand, as a graph's constant)? Its load then takes the same offset in
    every invocation (the adapter's uniform load, not one per lane)."""
    return not c.stages and not any(c.uniforms[f"{prefix}src_strides"])


def _run_option(run, strategy: str) -> int | None:
    """The plan option `run` (None: the strategy's default), checked: a positive int."""
    if run is None:
        return None
    if isinstance(run, bool) or not isinstance(run, int) or not 1 <= run <= 256:
        raise InvalidArgumentError(f"element-wise plan option run: an int in 1..256 (the {strategy} strategy's "
                                   f"{'16-byte blocks' if strategy == 'blocks' else 'elements'} per invocation), "
                                   f"got {run!r}")
    return run


def plan(p: Problem | FusedProblem, caps, strategy: str, run: int | None = None) -> KernelPlan:
    """The dispatch of `strategy` (one of strategies_for's): one, or one per group of steps
    where the problem's tensors need more storage bindings than the adapter has (`_split`:
    each group's result but the last's goes through a scratch buffer, 32-bit only). `run`
    (a plan option): 16-byte blocks per invocation of `blocks`, elements per invocation of
    `runs` (default BLOCK_RUN_CPU / 1 on GPUs, RUN); `elements` ignores it (one element, or
    one output word, per invocation)."""
    if strategy not in strategies_for(p, caps):
        raise InternalError(f"{p.op}: strategy {strategy} cannot run {p}")
    run = _run_option(run, strategy) if strategy != "elements" else None  # (one element per invocation)
    copy = isinstance(p, Problem) and p.copy
    p = fused_problem(p)
    groups = _split(p, caps)
    if len(groups) == 1:
        return KernelPlan((_dispatch(p, caps, strategy, copy, run=run),))
    dispatches, scratch, slot = [], [], {}
    for start, stop in groups:
        q, sources = _group(p, start, stop)
        ins = tuple(input_buffer(k, f"in{i}") if kind == "input" else scratch_buffer(slot[k], f"in{i}", writable=False)
                    for i, (kind, k) in enumerate(sources))
        out = None
        if stop < len(p.steps):
            if element_bits(q.output) != 32:
                raise UnsupportedError(f"{p.op}: a result between kernels of {q.output.data_type.name} (only 32-bit "
                                       f"ones go through scratch)")
            slot[stop - 1] = len(scratch)
            scratch.append(q.output.element_count * 4)
            out = replace(scratch_buffer(slot[stop - 1], "out", writable=True), access="stores")
        dispatches.append(_dispatch(q, caps, strategy, False, ins, out, run))
    return KernelPlan(tuple(dispatches), scratch_bytes=tuple(scratch))


def _dispatch(p: FusedProblem, caps, strategy: str, copy: bool, ins=None, out=None, run: int | None = None
              ) -> Dispatch:
    """One kernel computing `p`: its inputs the operator's (or the buffers `ins`), its
    output the operator's (or the scratch buffer `out`)."""
    lay = _layout(p)
    rank = len(lay.sizes)
    out_bits = element_bits(p.output)
    in_bits = tuple(element_bits(t) for t in p.inputs)
    native64 = caps is not None and caps.has("shader-int64")
    any64 = _any64(p)
    uniforms, step_params = steps(p)
    last = p.steps[-1].problem
    words = strategy != "blocks" and out_bits < 32 and p.output.is_packed  # (8/16-bit: whole words, no atomics)
    per_word = 32 // out_bits if words else 1
    params = {
        "strategy": strategy, "rank": rank, "inputs": len(p.inputs),
        "kinds": input_kinds(p), "in_bits": in_bits,
        "out_kind": last.out_kind, "out_bits": out_bits, "steps": step_params,
        "copy": copy, "native64": native64 and any64, "int64": any64, "f64": _f64(p),
        "packed_output": p.output.is_packed, "fetch": None,
    }
    inputs = tuple(input_buffer(k, f"in{k}") for k in range(len(p.inputs)))
    if p.coordinates:
        params["fetch"], uniforms, inputs = fetch(p, caps)
    count = lay.count
    if strategy == "blocks":
        per_block = 128 // out_bits
        blocks = -(-count // per_block)
        if run is None:
            run = BLOCK_RUN_CPU if caps is None or caps.is_software else 1
        buffers = (output_buffer(0, "out", out_bits, "blocks"),) + tuple(
            input_buffer(k, f"in{k}", "blocks") for k in range(len(p.inputs)))
        params.update(run=run, per_block=per_block, packed_words=False)
        return Dispatch("elementwise.wgsl.j2", params, buffers, {"count": count, "blocks": blocks, **uniforms},
                        -(-blocks // run), WORKGROUP_SIZE, int64=_int64(params))
    if strategy == "runs" and run is not None and run % per_word:
        raise InvalidArgumentError(f"element-wise plan option run: {run} elements per invocation would share output "
                                   f"words; a {p.output.data_type.name} output packs {per_word} to a word: a "
                                   f"multiple of {per_word}")
    run = (run or RUN) if strategy == "runs" else per_word
    # `runs` over a packed output whose rows are whole 16-byte blocks stores blocks (runs
    # start on one); other packed 8/16-bit outputs are assembled into words.
    per_block = 128 // out_bits
    block_stores = (strategy == "runs" and p.output.is_packed and run % per_block == 0 and run > 1
                    and lay.sizes[-1] % per_block == 0)
    packed_words = words and not block_stores
    access = "words" if packed_words else ("blocks" if block_stores else "stores")
    # ... and reads an input stepping by 1 along rows that start on its load units a unit
    # at a time (not in coordinate mode: the fused read loads its own inputs): `_block_loads`.
    block_loads = (_block_loads(in_bits, lay.strides[1:], out_bits) if block_stores and not p.coordinates
                   else ((),) * len(in_bits))
    leaf_blocks = (_leaf_blocks(params["fetch"], uniforms, p.output.sizes, per_block)
                   if block_stores and p.coordinates else ())
    block_bindings = {leaf[3] for leaf, mode in zip(params["fetch"].leaves, leaf_blocks) if mode} if leaf_blocks else ()
    blocks_bound = {k for k, load in enumerate(block_loads) if load and load[0] == "blocks"} | set(block_bindings)
    inputs = tuple(replace(b, access="blocks") if k in blocks_bound else b for k, b in enumerate(ins or inputs))
    buffers = (out or output_buffer(0, "out", out_bits, access),) + inputs
    # `runs`: an input whose innermost stride is 0 (a broadcast along the row: a bias, a
    # per-channel parameter) is loaded once per row, not per element (not in coordinate
    # mode: its inputs are read through their chains, lib/fused.wgsl.j2).
    row_constant = tuple(run > 1 and s[-1] == 0 for s in lay.strides[1:]) if not p.coordinates else ()
    params.update(run=run, per_word=per_word, row_constant=row_constant, block_stores=block_stores,
                  packed_words=packed_words,
                  per_block=per_block, block_loads=block_loads, leaf_blocks=leaf_blocks)
    axis_uniforms = {"sizes": lay.sizes, **{f"strides{k}": s for k, s in enumerate(lay.strides)}}  # (fetch: strides0)
    return Dispatch("elementwise.wgsl.j2", params, buffers, {**axis_uniforms, "count": count, **uniforms},
                    -(-count // run), WORKGROUP_SIZE, int64=_int64(params))


def _int64(params: dict) -> str:
    """Dispatch.int64: the steps (or the fused read's) compute on 64-bit integers."""
    fetch = params["fetch"]
    return int64_mode(params["int64"] or bool(fetch and fetch.int64),
                      params["native64"] or bool(fetch and fetch.native64))


def _block_loads(in_bits, strides, out_bits: int) -> tuple:
    """Per input of a `runs` kernel storing blocks of 128 / out_bits elements: how it loads
    the values of one output block, where it steps by 1 along rows that start on its load
    unit, else () (element by element): ("blocks", n, per_unit), n 16-byte blocks of
    per_unit elements (inputs as wide as the output or wider: a FLOAT32 -> FLOAT16 CAST
    loads 2 blocks per output block, a comparison's FLOAT32 operands 4 per block of 16 UINT8
    results), or ("words", n, per_unit), n u32 words (narrower inputs: FLOAT16 -> FLOAT32
    loads 2 words per block); an input whose values would take part of a word, () (UINT8 ->
    64 bits)."""
    per_block = 128 // out_bits
    loads = []
    for bits, s in zip(in_bits, strides):
        unit, unit_bits = ("blocks", 128) if bits >= out_bits else ("words", 32)
        per_unit = unit_bits // bits
        aligned = s[-1] == 1 and all(x % per_unit == 0 for x in s[:-1])
        loads.append((unit, per_block * bits // unit_bits, per_unit)
                     if aligned and (per_block * bits) % unit_bits == 0 else ())
    return tuple(loads)


def _leaf_blocks(f: FetchParams, uniforms: dict, sizes, per_block: int) -> tuple[int, ...]:
    """Per leaf of a fused read walked in output blocks of `per_block` elements: the step
    (1 or -1) of a leaf read through its own strides alone (no stage, no move, not one
    element) whose element width is the output's, stepping by +-1 along the row with every
    row's first element where a block begins (ends, stepping down), and whose binding no
    other kind of leaf reads; else 0 (element by element)."""
    modes = []
    for k, (bits, stages, fixed, _) in enumerate(f.leaves):
        strides, base = uniforms[f"i{k}src_strides"], uniforms[f"i{k}src_base"]
        step = strides[-1]
        aligned = step in (1, -1) and base % per_block == (0 if step == 1 else per_block - 1) and all(
            s % per_block == 0 for s, n in zip(strides[:-1], sizes[:-1]) if n > 1)
        modes.append(step if aligned and not stages and not fixed and not f.moves and 128 // bits == per_block else 0)
    shared = {b for (*_, b), mode in zip(f.leaves, modes) if not mode}
    return tuple(0 if b in shared else mode for (*_, b), mode in zip(f.leaves, modes))


class ElementWiseFamily(KernelFamily):
    """The element-wise family over a `Problem` (one operator) or a `FusedProblem` (a fused
    graph's element-wise nodes): the module's functions. No hooks: its kernels are the
    prologues and epilogues of the other families' (lib/fused.wgsl.j2, kernels/epilogue.py)."""

    strategies = STRATEGIES
    options = ("run",)

    def strategies_for(self, problem: Problem | FusedProblem, caps, run: int | None = None) -> tuple[str, ...]:
        return strategies_for(problem, caps)

    def plan(self, problem: Problem | FusedProblem, caps, strategy: str, run: int | None = None) -> KernelPlan:
        return plan(problem, caps, strategy, run)


FAMILY = ElementWiseFamily()


class ElementWisePlanner(ProblemPlanner):
    """The Planner of the element-wise and activation operators: `problem(desc)` (given by
    the operators' table, ops/elementwise/) says what a description computes."""

    family = FAMILY
