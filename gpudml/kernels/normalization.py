"""The normalization family: operators that normalize each element against a reduction of
its row (DML_ACTIVATION_SOFTMAX(1), LOG_SOFTMAX(1), HARDMAX(1): ops/softmax.py;
DML_MEAN_VARIANCE_NORMALIZATION(1), DML_LP_NORMALIZATION: ops/normalization.py), where a
*row* is the sub-tensor over the reduced axes at one position of the kept axes.

The problem arrives as a `Problem`: the function ("SOFTMAX", "LOG_SOFTMAX", "HARDMAX",
"MEAN_VARIANCE", "LP"), the input and output descs (one set of sizes; each its own
strides: strided and broadcast inputs, strided outputs), MEAN_VARIANCE's scale and bias
(the input's sizes, stride 0 where they broadcast), and the reduced axes, any set of them.
Size-1 axes drop, and neighbouring axes merge where contiguous in every tensor, the kept
ones among themselves and the reduced ones among themselves (`layout`); the reduced axes
are walked row-major in increasing axis order (HARDMAX's "first" maximum is the first in
that order).

Per row, as shaders/softmax.wgsl.j2 computes it (FLOAT32 and FLOAT16 in f32; a float16
result is rounded once, on the store):

- SOFTMAX / LOG_SOFTMAX: m, the row's maximum (NaN where any element is NaN); where m is
  not finite (a NaN, a +inf, or every element -inf) every result of the row is NaN;
  otherwise s = sum(exp(x - m)), added in subtotals of SUBTOTAL elements, and each result
  exp(x - m) / s, or (x - m) - log(s).
- HARDMAX: 1 at the first maximum of the row (the first NaN where there is one; 0.0 and
  -0.0 are equal), 0 elsewhere.
- MEAN_VARIANCE (shaders/normalization.wgsl.j2): two passes, mean = sum(x) / n, then
  var = sum((x - mean)^2) / n (not the one-pass E[x^2] - mean^2, which cancels), each
  result activation(scale * (x - mean) / sqrt(var + epsilon) + bias) (without
  normalize_variance: activation(scale * (x - mean) + bias); without use_mean,
  MEAN_VARIANCE_NORMALIZATION2's UseMean FALSE, mean = 0 and var = sum(x^2) / n: RMSNorm,
  `rows` and `workgroup` then skip the sum pass); `chunks` saves each chunk's
  (mean_c, M2_c = sum over the chunk of (x - mean_c)^2) and merges them as Chan et al.:
  mean = sum(n_c mean_c) / n, M2 = sum(M2_c + n_c (mean_c - mean)^2); `workgroup` sums the
  lanes' sums, then their sums of squared deviations from the row's mean.
  BATCH_NORMALIZATION_TRAINING (ops/batch_normalization_training.py) is MEAN_VARIANCE with
  `more`'s "add" (its FusedAdd, added after the bias, before the activation) and `stats`:
  outputs 1 and 2, the row's mean and m2 / n, stored once a row (rows: by the row's
  invocation; chunks: by chunk 0's; workgroup: by lane 0).
- LP: s = sum(|x|) (p = 1) or sum(x^2) (p = 2), norm = s or sqrt(s), each result x /
  max(norm, epsilon).
- BN_GRAD (shaders/batch_normalization_grad.wgsl.j2; BATCH_NORMALIZATION_GRAD and
  BATCH_NORMALIZATION_TRAINING_GRAD): `more` holds dy, the mean, variance and scale (constant
  along a row); s1 = sum(dy) and s2 = sum(dy (x - mean)) in one pass (each in subtotals),
  then dx; `stats` are the scale and bias gradients s2 / sqrt(var + epsilon) and s1.
  `chunks` writes them from a third dispatch (one invocation a row, the chunks' partial
  sums added in chunk order): each dispatch binds at most 8 storage buffers (WebGPU's
  default limit).

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

`chunks` of MEAN_VARIANCE and BN_GRAD over rows of several reduced axes (a channel's N x H
x W: N and H x W) cut each row into chunks that lie inside one run of the innermost reduced
axis where a length within a factor 2 of the planned one divides it (`segmented`): each
element's offset is then one multiply-add from its chunk's first (`enter_segment`), not a
division per reduced axis: batch-normalization training over [32, 64, 56, 56] float32 on
lavapipe 3.5x faster (about 600 -> 170 ms, interleaved).

`rows` and `chunks` walk each tensor along the row by 16-byte blocks where its row is
whole blocks (`_modes`: one reduced axis of stride 1, n and the kept strides multiples of a
block's elements; `chunks` then cuts whole blocks): one vec4<u32> load or store per block,
its elements unrolled in order, as the element-wise `runs` do (llvmpipe's lanes load 16
bytes for about what 4 cost); a scale or bias broadcast along the row is loaded once a row.
Every pass goes so (the maximum, HARDMAX's first maximum, the sums, the write): the same
terms in the same order (rows: the same bits); the walks are lib/normalize.wgsl.j2's
(each_x, row_sum, write_loop). Interleaved on lavapipe (BLOCKS = False before):
LayerNorm (with a scale and bias) float32 [4096, 1024] 2.6x faster (41 -> 16 ms), float16
5x (56 -> 11 ms), InstanceNorm [2, 64, 112, 112] (`chunks`) 3.3x (17 -> 5.2 ms), about
half the speed of a copy of the same bytes, the write pass the larger part; softmax over
the last axis float32 [4096, 1024] 2.2-2.8x (29 -> 13 ms), [65536, 128] (attention
scores) 2.1-2.4x (56 -> 27 ms), float16 [4096, 1024] 3.4-4.6x (51 -> 15 ms), log-softmax
float32 [4096, 1024] 2.4-3.9x (30 -> 13 ms), HARDMAX float32 [4096, 1024] 1.8x (14 -> 8
ms), softmax [8, 65536] (`chunks`) 2.2x (4.8 -> 2.2 ms).

The adapter's class orders them: `rows` (or `chunks` for long rows and few rows) first on
software adapters, `workgroup` first on GPUs. Plan options (experiments, tests): chunks
(`chunks`: chunks per row), lanes (`workgroup`), subgroups=False (`workgroup`: workgroup
memory only).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..errors import InternalError, InvalidArgumentError, UnsupportedError
from ..tensor_desc import TensorDesc, merge_axes, packed_strides
from .base import LOOP_BUDGET, KernelFamily, ProblemPlanner, count_option, power_of_two_option
from .builder import Dispatch, KernelPlan, input_buffer, output_buffer, scratch_buffer
from .elementwise import Attribute, attribute_uniforms
from .epilogue import attach as attach_epilogue
from .epilogue import check as check_epilogue
from .reduction import Rows

STRATEGIES = ("rows", "chunks", "workgroup")
OPTIONS = ("chunks", "lanes", "subgroups")
FUNCTIONS = ("SOFTMAX", "LOG_SOFTMAX", "HARDMAX", "MEAN_VARIANCE", "LP", "BN_GRAD")
#: The template of each function's kernels.
TEMPLATES = {"MEAN_VARIANCE": "normalization.wgsl.j2", "LP": "normalization.wgsl.j2",
             "BN_GRAD": "batch_normalization_grad.wgsl.j2"}
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
    """What a normalization description computes: `function` (one of FUNCTIONS) over the
    `axes` of `input` (sorted, distinct, at least one), written to `output` (the input's
    sizes and data type, FLOAT32 or FLOAT16)."""

    op: str
    function: str
    input: TensorDesc
    output: TensorDesc
    axes: tuple[int, ...]
    #: MEAN_VARIANCE: scale and bias (or None) described over the input's sizes (stride 0
    #: where they broadcast), normalize_variance, epsilon (f32), the fused activation as a
    #: WGSL expression over `x` and its attributes (kernels/elementwise.py's Attribute).
    #: LP: p (1 or 2) and epsilon.
    scale: TensorDesc | None = None
    bias: TensorDesc | None = None
    normalize_variance: bool = True
    epsilon: float = 0.0
    p: int = 2
    activation: str | None = None
    activation_attributes: tuple[Attribute, ...] = ()
    #: MEAN_VARIANCE (MEAN_VARIANCE_NORMALIZATION2's UseMean): False takes the mean as 0 (the
    #: variance is then the mean of x^2: RMSNorm).
    use_mean: bool = True
    #: More inputs, (template name, desc over the input's sizes), bound after the scale and
    #: bias in this order: MEAN_VARIANCE's "add" (BATCH_NORMALIZATION_TRAINING's FusedAdd,
    #: added before the activation); BN_GRAD's "grad", "mean", "variance", "scale" (the last
    #: three constant along a row: stride 0 on the reduced axes).
    more: tuple[tuple[str, TensorDesc], ...] = ()
    #: Outputs 1, 2, ... ("s0", "s1", ...): one value per row, described over the input's
    #: sizes with stride 0 on the reduced axes: MEAN_VARIANCE's mean and variance
    #: (BATCH_NORMALIZATION_TRAINING's), BN_GRAD's sum(dy (x - mean)) / sqrt(var + epsilon)
    #: and sum(dy).
    stats: tuple[TensorDesc, ...] = ()
    #: BN_GRAD: True for BATCH_NORMALIZATION_TRAINING_GRAD's input gradient (the batch's
    #: statistics' own gradient subtracted), False for BATCH_NORMALIZATION_GRAD's.
    training: bool = False

    @property
    def tensors(self) -> tuple[tuple[str, TensorDesc], ...]:
        """The tensors a kernel addresses, by their template name: "in", "out", "scale", "bias",
        `more`'s, then the statistics' outputs "s0", "s1", ..."""
        extra = tuple((t, d) for t, d in (("scale", self.scale), ("bias", self.bias)) if d is not None)
        stats = tuple((f"s{k}", d) for k, d in enumerate(self.stats))
        return (("in", self.input), ("out", self.output)) + extra + tuple(self.more) + stats


@dataclass(frozen=True)
class Layout(Rows):
    """Kept axes (sizes, and each tensor's strides, Problem.tensors' order) and reduced axes
    (the same), each merged where contiguous in every tensor; `count` rows of `n` elements
    (reduction.Rows)."""

    kept_sizes: tuple[int, ...]
    kept_strides: tuple[tuple[int, ...], ...]
    red_sizes: tuple[int, ...]
    red_strides: tuple[tuple[int, ...], ...]

    @property
    def kept_in(self) -> tuple[int, ...]:
        return self.kept_strides[0]

    @property
    def red_in(self) -> tuple[int, ...]:
        return self.red_strides[0]


def layout(p: Problem) -> Layout:
    strides = [d.effective_strides for _, d in p.tensors]
    sizes = p.input.sizes
    reduced = set(p.axes)
    kept_axes = [i for i in range(p.input.rank) if i not in reduced]
    red_axes = sorted(reduced)

    def merged(axes):
        found = merge_axes([sizes[i] for i in axes], *[[st[i] for i in axes] for st in strides])
        return tuple(a.size for a in found), tuple(tuple(a.strides[k] for a in found) for k in range(len(strides)))

    return Layout(*merged(kept_axes), *merged(red_axes))


# ------------------------------------------------------------------------------ the cost model
def passes(function: str) -> int:
    """Passes over a row's elements: maximum, sum, write (HARDMAX: first maximum, write).
    The other functions cost as one of these two (`costs_as`)."""
    return 2 if function == "HARDMAX" else 3


def costs_as(p: Problem) -> str:
    """The function whose passes and chunk merges `p`'s match: MEAN_VARIANCE's mean, sum of
    squared deviations and write (2 words a chunk) are SOFTMAX's; LP's sum and write (1
    word a chunk), and MEAN_VARIANCE's without normalize_variance, are HARDMAX's; BN_GRAD's
    two sums in one pass and its write (2 words a chunk) cost at most SOFTMAX's."""
    if p.function == "LP" or (p.function == "MEAN_VARIANCE" and not p.normalize_variance):
        return "HARDMAX"
    return "SOFTMAX" if p.function in ("MEAN_VARIANCE", "BN_GRAD") else p.function


def rows_fit(p: Problem, lay: Layout) -> bool:
    return passes(costs_as(p)) * lay.n + _OVERHEAD <= LOOP_BUDGET


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
    need = _chunks_fitting(costs_as(p), lay.n)
    if need == 0:
        raise UnsupportedError(f"{p.op}: rows of {lay.n} elements are too long: one row's chunks must merge within "
                               f"one invocation's loop budget ({LOOP_BUDGET} steps), which allows at most "
                               f"{max_row(costs_as(p))} elements a row. Normalize over fewer elements (split the "
                               f"normalized axes across calls) or reshape so that each row is shorter")
    if requested is None:
        requested = min(-(-CHUNKS_TARGET // lay.count), max(1, lay.n // MIN_CHUNK))
    chunks = max(need, min(int(requested), lay.n, (LOOP_BUDGET - _OVERHEAD) // 2))
    while chunks > need and _chunk_cost(costs_as(p), -(-lay.n // chunks), chunks) > LOOP_BUDGET:
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
    return passes(costs_as(p)) * -(-lay.n // lanes) + 3 * lanes.bit_length() + _OVERHEAD <= LOOP_BUDGET


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
        raise InternalError(f"{p.op}: unknown normalization function {p.function!r}")
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
    template = TEMPLATES.get(p.function, "softmax.wgsl.j2")
    names = [t for t, _ in p.tensors]
    params = {"function": p.function, "bits": bits, "rank_k": len(lay.kept_sizes), "rank_r": len(lay.red_sizes),
              "subtotal": SUBTOTAL, "tensors": tuple(names)}
    uniforms = {"kept_sizes": lay.kept_sizes, "red_sizes": lay.red_sizes, "count": lay.count, "n": lay.n}
    for t, kept, red in zip(names, lay.kept_strides, lay.red_strides, strict=True):
        uniforms[f"kept_{t}_strides"], uniforms[f"red_{t}_strides"] = kept, red
    # `rows` and `chunks`: each tensor's mode along the row (`modes`).
    modes = _modes(p, lay) if strategy != "workgroup" else {}
    per_block = 128 // bits
    access = {t: "blocks" if modes.get(t) == "blocks" else "words" for t in names}
    params.update(modes=tuple(sorted(modes.items())), per_block=per_block)
    extra = ()
    if p.function in TEMPLATES:
        act_uniforms, act_attrs = attribute_uniforms("act_", p.activation_attributes, "float", 32)
        uniforms.update(act_uniforms)
        uniforms.update(attribute_uniforms("", (Attribute("epsilon", "f32", p.epsilon),), "float", 32)[0])
        params.update(normalize_variance=p.normalize_variance, use_mean=p.use_mean, p=p.p,
                      activation=p.activation or "",
                      activation_attributes=act_attrs, stats=len(p.stats), training=p.training)
        inputs = names[2:len(names) - len(p.stats)]
        extra = tuple(input_buffer(k, t, access[t]) for k, t in enumerate(inputs, 1))
    inp = (input_buffer(0, "input", access["in"]),) + extra
    out = (output_buffer(0, "output", bits, "blocks" if modes.get("out") == "blocks" else "stores"),) + tuple(
        output_buffer(k, f"s{k - 1}", bits, "stores") for k in range(1, len(p.stats) + 1))
    if strategy == "rows":
        return KernelPlan((Dispatch(template, {**params, "pass": "rows"}, (*out, *inp), uniforms,
                                    lay.count, WORKGROUP_SIZE),))
    if strategy == "chunks":
        count = chunks_for(p, lay, chunks)
        length = -(-lay.n // count)
        if modes.get("in") == "blocks":  # chunks of whole blocks (fewer loop iterations: within the budget)
            length = -(-length // per_block) * per_block
            count = -(-lay.n // length)
        # Chunks inside one run of the innermost reduced axis (MEAN_VARIANCE, BN_GRAD: the
        # rows of several reduced axes, a channel's N x HW): each element's offset one
        # multiply-add from its chunk's first one, no division (`segmented`).
        inner = lay.red_sizes[-1]
        segmented = (p.function in ("MEAN_VARIANCE", "BN_GRAD") and len(lay.red_sizes) > 1
                     and modes.get("in") != "blocks" and chunks is None)
        if segmented:
            aligned = _aligned_length(inner, length)
            segmented = aligned is not None and _chunk_cost(costs_as(p), aligned, -(-lay.n // aligned)) <= LOOP_BUDGET
            if segmented:
                length, count = aligned, -(-lay.n // aligned)
        params = {**params, "segmented": segmented}
        uniforms = {**uniforms, "chunks": count, "chunk_length": length}
        # (BN_GRAD's partial sums read every input; the others' the input alone)
        first = Dispatch(template, {**params, "pass": "partials"},
                         (scratch_buffer(0, "partials", writable=True), *(inp if p.function == "BN_GRAD" else inp[:1])),
                         uniforms, lay.count * count, WORKGROUP_SIZE)
        partials = scratch_buffer(0, "partials", writable=False)
        if p.function == "BN_GRAD":  # (its row's gradients a third dispatch's: 8 storage bindings at most each)
            second = Dispatch(template, {**params, "pass": "finish"}, (out[0], *inp, partials), uniforms,
                              lay.count * count, WORKGROUP_SIZE)
            third = Dispatch(template, {**params, "pass": "stats"},
                             (*out[1:], input_buffer(names.index("variance") - 1, "variance"), partials), uniforms,
                             lay.count, WORKGROUP_SIZE)
            return KernelPlan((first, second, third), scratch_bytes=(lay.count * count * 8,))
        second = Dispatch(template, {**params, "pass": "finish"}, (*out, *inp, partials), uniforms, lay.count * count,
                          WORKGROUP_SIZE)
        return KernelPlan((first, second), scratch_bytes=(lay.count * count * 8,))
    lanes = lanes_for(p, lay, lanes)
    if not workgroup_fits(p, lay, lanes):
        raise InternalError(f"{p.op}: {lanes} lanes cannot run rows of {lay.n}")
    sg = _subgroups(p, caps, subgroups)
    per_group = GPU_WORKGROUP_SIZE // lanes
    invocations = -(-lay.count // per_group) * GPU_WORKGROUP_SIZE
    return KernelPlan((Dispatch(template, {**params, "pass": "workgroup", "lanes": lanes,
                                           "workgroup_size": GPU_WORKGROUP_SIZE},
                                (*out, *inp), uniforms, invocations, GPU_WORKGROUP_SIZE, sg),))


def _aligned_length(inner: int, length: int) -> int | None:
    """A chunk length that divides `inner` (every chunk inside one run of the innermost
    reduced axis) within a factor 2 of `length`, the nearest; None where none is."""
    if inner % length == 0:
        return length
    found = [d for d in range(max(1, length // 2), min(inner, 2 * length) + 1) if inner % d == 0]
    return min(found, key=lambda d: abs(d - length)) if found else None


#: Experiments: False walks every tensor element by element (`_modes`).
BLOCKS = True


def _modes(p: Problem, lay: Layout) -> dict[str, str]:
    """How `rows` and `chunks` walk each tensor ("in", "out", "scale", "bias") along a row:
    "blocks" where its row is whole 16-byte blocks (one reduced axis of stride 1, n and the
    kept strides multiples of a block's elements: every row and chunk starts on a block),
    "constant" for a scale or bias broadcast along the row (loaded once per row),
    "elements" otherwise. The scale and bias go by blocks only where the input does, the
    output where the input does too (an epilogue stores element by element: the template
    then stores the blocks' elements one by one)."""
    if not BLOCKS or p.function == "BN_GRAD":  # (BN_GRAD reads two tensors along the row: by elements)
        return {t: "elements" for t, _ in p.tensors}
    per_block = 128 // (p.input.data_type.size * 8)
    modes = {}
    for (t, _), kept, red in zip(p.tensors, lay.kept_strides, lay.red_strides, strict=True):
        if t.startswith("s") and t[1:].isdigit():  # (a statistic: one store a row)
            modes[t] = "elements"
        elif (red == (1,) and lay.n % per_block == 0 and all(s % per_block == 0 for s in kept)
                and (t == "in" or modes["in"] == "blocks")):
            modes[t] = "blocks"
        elif t in ("scale", "bias") and all(s == 0 for s in red):
            modes[t] = "constant"
        else:
            modes[t] = "elements"
    return modes


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


class NormalizationFamily(KernelFamily):
    """The normalization family: the module's functions over a `Problem`, and the epilogue hook."""

    strategies = STRATEGIES
    options = OPTIONS
    epilogue = True

    def strategies_for(self, problem: Problem, caps, chunks=None, lanes=None, subgroups=None) -> tuple[str, ...]:
        return strategies_for(problem, caps, chunks, lanes, subgroups)

    def plan(self, problem: Problem, caps, strategy: str, chunks=None, lanes=None, subgroups=None) -> KernelPlan:
        return plan(problem, caps, strategy, chunks, lanes, subgroups)

    def variants(self, problem: Problem, caps, strategy: str) -> tuple[dict, ...]:
        return variants(problem, caps, strategy)

    def plan_with_epilogue(self, problem: Problem, caps, strategy: str, epilogue) -> KernelPlan:
        """Every strategy: each pass that writes the output (rows, finish, workgroup)
        applies it to the rounded value it stores; its tensors are bound after the
        operator's own inputs (MEAN_VARIANCE's scale and bias)."""
        check_epilogue(epilogue, problem.output)
        return attach_epilogue(plan(problem, caps, strategy), epilogue, len(problem.tensors) - 1 - len(problem.stats))


FAMILY = NormalizationFamily()


class StatisticsFamily(NormalizationFamily):
    """The normalization family for operators with statistics' outputs besides output 0
    (BATCH_NORMALIZATION_TRAINING's mean and variance, the batch-normalization gradients'
    scale and bias gradients): no epilogue (a graph fuses nothing into several outputs)."""

    epilogue = False


STATISTICS_FAMILY = StatisticsFamily()


class NormalizationPlanner(ProblemPlanner):
    """An operator's Planner on the normalization family: `NormalizationPlanner(problem)`,
    `problem(desc)` (ops/softmax.py's table, ops/normalization.py) saying what a
    description computes."""

    family = FAMILY


# ------------------------------------------------------------------------------ local response normalization
class LocalResponseFamily(KernelFamily):
    """DML_LOCAL_RESPONSE_NORMALIZATION's kernels (ops/normalization.py): its problem is the
    desc itself, the family reading its fields (input_tensor, output_tensor: [N, C, H, W],
    cross_channel, local_size, alpha, beta, bias). Each output element sums the squares of its window
    (shaders/local_response_normalization.wgsl.j2: local_size channels, or local_size x
    local_size of H x W, clipped to the tensor) and writes x / (bias + alpha / local_size *
    sum)^beta, the power as WGSL's pow. Strategies: `runs` (CPU-class: an invocation per run
    of LRN_RUN neighbouring elements of a W row, decoding its coordinates once: integer
    division is the costly operation on CPU adapters) and `elements` (GPU-class: an
    invocation per element). A window of more elements within the tensor than LOOP_BUDGET
    is an UnsupportedError."""

    strategies = ("runs", "elements")
    op = "LocalResponseNormalization"

    @staticmethod
    def window(desc) -> int:
        """Loop iterations of one element: its window's elements within the tensor (and the rows' loop)."""
        n, c, h, w = desc.input_tensor.sizes
        k = desc.local_size
        return min(k, c) if desc.cross_channel else min(k, h) * (min(k, w) + 1)

    def strategies_for(self, desc, caps, **options) -> tuple[str, ...]:
        if options:
            raise InvalidArgumentError(f"{self.op}: no plan options (got {sorted(options)})")
        cost = self.window(desc) + 2
        if cost + _OVERHEAD > LOOP_BUDGET:
            raise UnsupportedError(f"{self.op}: a window of {self.window(desc)} elements takes "
                                   f"{cost} loop steps per output, more than one invocation's loop budget "
                                   f"({LOOP_BUDGET - _OVERHEAD} steps). Use a smaller local_size (a window of at "
                                   f"most {LOOP_BUDGET - _OVERHEAD - 2} elements)")
        runs = ("runs",) if LRN_RUN * cost + _OVERHEAD <= LOOP_BUDGET else ()
        return runs + ("elements",) if caps is None or caps.is_software else ("elements",) + runs

    def _setup(self, desc, caps, strategy: str, options) -> tuple[dict, dict, int]:
        """(params, uniforms, invocations) every pass shares."""
        if strategy not in self.strategies_for(desc, caps, **options):
            raise InternalError(f"{self.op}: strategy {strategy} cannot run {desc}")
        inp = desc.input_tensor
        k = desc.local_size
        run = LRN_RUN if strategy == "runs" else 1
        units = tuple(inp.sizes[:3]) + (-(-inp.sizes[3] // run),)
        attrs = tuple(Attribute(name, "f32", getattr(desc, name)) for name in ("alpha", "beta", "bias"))
        uniforms = {"sizes": inp.sizes, "units": units, "in_strides": inp.effective_strides,
                    "count": math.prod(units), "local_size": k,
                    "before": (k - 1) // 2, "after": k // 2, **attribute_uniforms("", attrs, "float", 32)[0]}
        params = {"bits": inp.data_type.size * 8, "cross_channel": desc.cross_channel, "run": run}
        return params, uniforms, math.prod(units)

    def plan(self, desc, caps, strategy: str, **options) -> KernelPlan:
        params, uniforms, count = self._setup(desc, caps, strategy, options)
        uniforms["out_strides"] = desc.output_tensor.effective_strides
        return KernelPlan((Dispatch("local_response_normalization.wgsl.j2", {**params, "pass": "forward"},
                                    (output_buffer(0, "output", params["bits"], "stores"), input_buffer(0, "input")),
                                    uniforms, count, WORKGROUP_SIZE),))


class LocalResponseGradFamily(LocalResponseFamily):
    """DML_LOCAL_RESPONSE_NORMALIZATION_GRAD's kernels (ops/normalization.py): the forward's
    window walk twice. With b_i = bias + alpha / local_size * sum(x^2 over i's window) and
    y_i = x_i b_i^-beta, dx_j = dy_j b_j^-beta - (2 alpha beta / local_size) x_j sum(dy_i x_i
    b_i^(-beta-1)) over the elements i whose windows hold j: the window transposed ([j -
    after, j + before] where i's is [i - before, i + after]). Pass `terms` (an invocation per
    run of elements, as the forward) writes each element's dy_i x_i b_i^(-beta-1) and b_i^-beta
    to scratch (two f32 words per element, at its row-major index); pass `gather` sums each
    element's transposed window of terms in window order and writes dx_j once: deterministic,
    no atomics. The desc's input_tensor is x, input_gradient_tensor dy, output_gradient_tensor
    dx; strategies and the loop budget as the forward's (each pass walks one window)."""

    op = "LocalResponseNormalizationGrad"

    def plan(self, desc, caps, strategy: str, **options) -> KernelPlan:
        params, uniforms, count = self._setup(desc, caps, strategy, options)
        uniforms.update(dy_strides=desc.input_gradient_tensor.effective_strides,
                        out_strides=desc.output_gradient_tensor.effective_strides,
                        flat_strides=packed_strides(desc.input_tensor.sizes))
        bits = params["bits"]
        inputs = (input_buffer(0, "input"), input_buffer(1, "input_gradient"))
        terms = Dispatch("local_response_normalization.wgsl.j2", {**params, "pass": "terms"},
                         (scratch_buffer(0, "terms", writable=True),) + inputs, uniforms, count, WORKGROUP_SIZE)
        transposed = {**uniforms, "before": uniforms["after"], "after": uniforms["before"]}
        gather = Dispatch("local_response_normalization.wgsl.j2", {**params, "pass": "gather"},
                          (output_buffer(0, "output", bits, "stores"),) + inputs
                          + (scratch_buffer(0, "terms", writable=False),), transposed, count, WORKGROUP_SIZE)
        return KernelPlan((terms, gather), scratch_bytes=(8 * desc.input_tensor.element_count,))


#: `runs`: elements of a W row per invocation.
LRN_RUN = 16
LRN_FAMILY = LocalResponseFamily()
LRN_PLANNER = ProblemPlanner(lambda desc: desc, LRN_FAMILY)
LRN_GRAD_FAMILY = LocalResponseGradFamily()
LRN_GRAD_PLANNER = ProblemPlanner(lambda desc: desc, LRN_GRAD_FAMILY)
