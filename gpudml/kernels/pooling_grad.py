"""The pooling family's gradients: DML_MAX_POOLING_GRAD and DML_AVERAGE_POOLING_GRAD
(gpudml/ops/pooling_grad.py), the pooling family's window walk (kernels/pooling.py) turned
into a GATHER over the windows that cover each input element (shaders/pooling_grad.wgsl.j2).

A description arrives as a `Problem`: the forward pooling's input X (MAX only: its maxima
decide where a gradient goes), the forward output's gradient dY (the operator's
InputGradientTensor), the input gradient dX (OutputGradientTensor), with their own strides
(0 broadcasts; dX's gaps keep their bytes), and the forward window (sizes, strides, start
padding, dilations per spatial axis).

Each dX element is written once, by one invocation, which sums its contributions in a fixed
order (the covering forward outputs in row-major order): deterministic, no atomics, the same
bits on every adapter and strategy. Along spatial axis d, the forward outputs whose windows
cover input position x are o in [ceil((x + pad - (win - 1) dil) / stride), floor((x + pad) /
stride)] (clipped to the output) whose window position (x + pad - o stride) / dil is an
integer: at most ceil(((win - 1) dil + 1) / stride) of them.

- AVERAGE: one pass, dX[x] = sum over covering o of dY[o] / divisor(o) (the window's element
  count with include_padding, else its input elements: a product of per-axis counts, closed
  form).
- MAX: two passes. First each window's maximum as a flat index into X (row-major over X's
  sizes; a u32 per forward output, scratch): the forward pooling family's own MAX_POOLING2
  kernel with its OutputIndicesTensor (kernels/pooling.py, the same strategy: its `runs`
  unroll the window's innermost axis; the window's first maximum, NaN first: the tie rule of
  DirectML's page), its value output written into dX's buffer where dX is packed, fills its
  buffer and is at least as large (the gather then writes every dX element); elsewhere this
  family's `argmax` pass (the same walk and rule, a loop per outer window axis, the innermost
  unrolled). Then `gather`: dX[x] = sum over covering o whose maximum is x of dY[o].

Strategies (both passes): `runs` (CPU-class) and `elements` (GPU-class: an invocation per
element). `runs`: an invocation takes a run of up to RUN neighbouring elements of the
innermost axis (coordinates decoded once); the gather pass walks the covering outputs of the
whole run (outer axes as one element's, the innermost over the run's span), reads each dY
(and maximum or divisor) once and adds it to the run's accumulators (registers), each
element's terms in the order `elements` adds them: the same bits under both. The window's
sizes, strides and dilations are compile-time parameters (divisions by constants: a CPU
adapter has no vector integer division). The loop budget (llvmpipe ends an invocation's loops after 65,535
iterations: base.LOOP_BUDGET, 32,768, with margin) bounds a run: `cost` counts an element's
loop iterations (its window's positions for `argmax`, its covering outputs and their outer
loops for `gather`); a run is shortened to fit. A MAX window past the budget (global max
pooling over 181 x 181 or more) runs where the forward family makes the first pass (its
`chunks`, their partial results in scratch 1); where dx is strided (the own argmax pass) it is
an UnsupportedError naming the limit.

Measured on lavapipe (`gpudml lab`, float32 [8, 64, 56, 56], GPU ms, the machine shared;
interleaved runs drift 2-10x, so each step against the one before in the same minutes):
MAX 3 x 3 / 2 padding 1 under `runs`: 536 ms (uniform window facts, one element per
iteration) -> 108 (window facts compile-time, the run's span gathered at once) -> 67 (the
forward family's kernel as the first pass) -> 45 (16-byte block stores); `elements` 240-370.
AVERAGE 2 x 2 / 2: 309 -> 89 -> 53 -> 20 ms; `elements` 112-212. Bench W68 (batch 32, one
run, the copy kernel at 1.72 GB/s): MAX 265 ms, 0.13x copy; AVERAGE 100 ms, 0.19x; the
forward W16 0.59x in the same run.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from ..errors import InternalError, InvalidArgumentError, UnsupportedError
from ..tensor_desc import TensorDesc, packed_strides
from ..types import DataType
from . import pooling
from .base import LOOP_BUDGET, KernelFamily, count_option, runs_order
from .builder import OUTPUT, SCRATCH, Dispatch, KernelPlan, input_buffer, output_buffer, scratch_buffer

STRATEGIES = ("runs", "elements")
OPTIONS = ("run",)
FUNCTIONS = ("MAX", "AVERAGE")
#: `runs`: elements of the innermost axis per invocation (as the pooling family's RUN).
RUN = 8
WORKGROUP_SIZE = 64
#: Loop iterations an invocation spends besides its elements' own (the run loop, set-up).
_OVERHEAD = 64


@dataclass(frozen=True)
class Problem:
    """A pooling gradient as the kernels see it (module docstring). `x`: the forward input
    (MAX; None for AVERAGE), `dy`: the forward output's gradient, `dx`: the input gradient."""

    op: str
    function: str
    x: TensorDesc | None
    dy: TensorDesc
    dx: TensorDesc
    window: tuple[int, ...]
    strides: tuple[int, ...]
    start_padding: tuple[int, ...]
    dilations: tuple[int, ...]
    include_padding: bool = False

    @property
    def window_count(self) -> int:
        return math.prod(self.window)


def covering(p: Problem) -> tuple[int, ...]:
    """Per spatial axis, the most forward outputs whose windows cover one input position."""
    return tuple(min(o, -(-((w - 1) * d + 1) // s))
                 for o, w, s, d in zip(p.dy.sizes[2:], p.window, p.strides, p.dilations, strict=True))


def costs(p: Problem) -> dict[str, int]:
    """Loop iterations of one element, per pass: `argmax` its window's positions (and the outer
    axes' loop steps), `gather` its covering outputs (each axis' loop iterations counted, outer
    ones too)."""
    counts = covering(p)
    gather = sum(math.prod(counts[: i + 1]) for i in range(len(counts)))
    if p.function == "AVERAGE" or _forward_problem(p) is not None:  # (the forward family budgets its own)
        return {"gather": gather}
    return {"argmax": p.window_count + math.prod(p.window[:-1]), "gather": gather}  # (outer loops count too)


def _max_run(p: Problem) -> int:
    """The most elements one `runs` invocation may take within the loop budget (0: not one)."""
    return max(0, (LOOP_BUDGET - _OVERHEAD) // (max(costs(p).values()) + 1))


def _run(p: Problem, requested) -> int:
    count_option(p.op, "run", requested)
    if requested is None:
        return max(1, min(RUN, _max_run(p)))
    if requested > 64:
        raise InvalidArgumentError(f"{p.op}: option run = {requested} must be an integer in [1, 64]")
    if requested > _max_run(p):
        raise UnsupportedError(f"{p.op}: option run = {requested}: {requested} elements of "
                               f"{max(costs(p).values())} loop steps pass one invocation's loop budget "
                               f"({LOOP_BUDGET})")
    return requested


def strategies_for(p: Problem, caps, run=None) -> tuple[str, ...]:
    """`runs` and `elements` (runs_order: `runs` first on software adapters) where one element
    fits the loop budget; UnsupportedError where none does."""
    forward = _forward_problem(p)
    if forward is not None:
        pooling.strategies_for(forward, caps)  # (UnsupportedError where its chunks' scratch cannot fit either)
    if _max_run(p) < 1:
        raise UnsupportedError(
            f"{p.op}: a window of {p.window_count} positions takes {max(costs(p).values())} loop steps per element, "
            f"more than one invocation's loop budget ({LOOP_BUDGET - _OVERHEAD} steps, llvmpipe's 65,535 with "
            f"margin). Use a smaller window")
    order = runs_order(caps)
    if run is not None:
        _run(p, run)
    return order


def _uniforms(p: Problem, sizes: tuple[int, ...], run: int) -> dict:
    units = tuple(sizes[:-1]) + (-(-sizes[-1] // run),)
    x_strides = p.x.effective_strides if p.x is not None else (0,) * p.dx.rank
    return {"count": math.prod(units), "units": units, "sizes": sizes, "x_sizes": p.dx.sizes,
            "x_strides": x_strides, "dy_sizes": p.dy.sizes, "dy_strides": p.dy.effective_strides,
            "dx_strides": p.dx.effective_strides, "win": p.window, "pool_strides": p.strides,
            "pads": p.start_padding, "dil": p.dilations, "window_count": p.window_count,
            "x_flat": packed_strides(p.dx.sizes)}


def _forward_problem(p: Problem):
    """The forward MAX_POOLING2 (with UINT32 indices) whose kernels make MAX's first pass,
    where they can: dx packed and filling its buffer, at least as large as the forward's
    output (its values go there; the gather pass then writes every dx element). None
    elsewhere (AVERAGE; then MAX's own argmax pass runs)."""
    if p.function != "MAX" or not p.dx.covers_buffer or p.dy.element_count > p.dx.element_count:
        return None
    return pooling.Problem(p.op, "MAX", p.x, TensorDesc(p.dx.data_type, p.dy.sizes),
                           TensorDesc(DataType.UINT32, p.dy.sizes), p.window, p.strides, p.start_padding, p.dilations)


def _forward(p: Problem, caps, strategy: str):
    """MAX's first pass as the forward pooling family's own MAX_POOLING2 kernel with its
    OutputIndicesTensor (kernels/pooling.py: its `runs` unroll the window's innermost axis;
    the window's first maximum, NaN first), where `_forward_problem` gives one: the same
    strategy, or its `chunks` for a window past one invocation's loop budget (global max
    pooling: its partial results in scratch 1). Its value output goes to dx's buffer, its
    indices to scratch 0. (dispatches, the forward's scratch bytes), or None."""
    forward = _forward_problem(p)
    if forward is None:
        return None
    found = pooling.strategies_for(forward, caps)
    chosen = strategy if strategy in found else "chunks"
    plan = pooling.plan(forward, caps, chosen)

    def rebind(b):
        if (b.role, b.index) == (OUTPUT, 1):
            return replace(b, role=SCRATCH, index=0)
        return replace(b, index=b.index + 1) if b.role == SCRATCH else b
    return tuple(replace(d, buffers=tuple(rebind(b) for b in d.buffers)) for d in plan.dispatches), plan.scratch_bytes


def plan(p: Problem, caps, strategy: str, run=None) -> KernelPlan:
    """AVERAGE: the gather pass; MAX: the maxima's flat indices into x (a u32 per forward
    output, scratch: the forward family's kernel, `_forward`, or the argmax pass), then the
    gather pass."""
    if strategy not in strategies_for(p, caps, run):
        raise InternalError(f"{p.op}: strategy {strategy} cannot run {p}")
    length = _run(p, run) if strategy == "runs" else 1
    bits = p.dx.data_type.size * 8
    params = {"function": p.function, "bits": bits, "rank": p.dx.rank, "sr": p.dx.rank - 2, "run": length,
              "include_padding": p.include_padding, "win": p.window, "strides": p.strides, "dil": p.dilations}
    gather_uniforms = _uniforms(p, p.dx.sizes, length)
    outs = p.dx.effective_strides
    vec_out = bits == 32 and length % 4 == 0 and outs[-1] == 1 and all(s % 4 == 0 for s in outs[:-1])
    gather_params = {**params, "pass": "gather", "vec_out": vec_out}
    out = (output_buffer(0, "output", bits, "stores"),) + ((output_buffer(0, "output_vec", bits, "blocks"),)
                                                           if vec_out else ())
    if p.function == "AVERAGE":
        return KernelPlan((Dispatch("pooling_grad.wgsl.j2", gather_params,
                                    (*out, input_buffer(0, "input_gradient")), gather_uniforms,
                                    gather_uniforms["count"], WORKGROUP_SIZE),))
    first, more = _forward(p, caps, strategy) or ((), ())
    if not first:
        argmax_uniforms = _uniforms(p, p.dy.sizes, length)
        first = (Dispatch("pooling_grad.wgsl.j2", {**params, "pass": "argmax"},
                          (scratch_buffer(0, "argmax", writable=True), input_buffer(0, "input")), argmax_uniforms,
                          argmax_uniforms["count"], WORKGROUP_SIZE),)
    gather = Dispatch("pooling_grad.wgsl.j2", gather_params,
                      (*out, input_buffer(1, "input_gradient"), scratch_buffer(0, "argmax", writable=False)),
                      gather_uniforms, gather_uniforms["count"], WORKGROUP_SIZE)
    return KernelPlan((*first, gather), scratch_bytes=(4 * p.dy.element_count, *more))


def variants(p: Problem, caps, strategy: str) -> tuple[dict, ...]:
    """Other run lengths of `runs`; those the description cannot take are the tuner's to drop."""
    if strategy == "runs":
        return tuple({"run": r} for r in (2, 4, 16) if r <= _max_run(p))
    return ()


# ------------------------------------------------------------------------------ the family
class PoolingGradFamily(KernelFamily):
    """The pooling gradients: the module's functions over a `Problem`. No hooks."""

    strategies = STRATEGIES
    options = OPTIONS

    def strategies_for(self, problem: Problem, caps, run=None) -> tuple[str, ...]:
        return strategies_for(problem, caps, run)

    def plan(self, problem: Problem, caps, strategy: str, run=None) -> KernelPlan:
        return plan(problem, caps, strategy, run)

    def variants(self, problem: Problem, caps, strategy: str) -> tuple[dict, ...]:
        return variants(problem, caps, strategy)


FAMILY = PoolingGradFamily()
