"""The pooling family: a window slides over the spatial axes of an input [N, C, spatial...]
(DirectML's 4-D NCHW and 5-D NCDHW layouts) and each output element reduces the input
elements its window covers: their maximum (and the flat index of the first maximum), their
average, or their Lp norm (DML_MAX_POOLING*, DML_AVERAGE_POOLING*, DML_LP_POOLING*:
gpudml/ops/pooling.py).

A description arrives as a `Problem`: the tensors with their own strides (0 broadcasts), the
window per spatial axis (sizes, strides, start padding, dilations), the function and its
attributes. Window position k of spatial axis d of output coordinate o reads input
coordinate o * stride - start_padding + k * dilation; a position outside the input is
padding: MAX skips it, AVERAGE counts it in the divisor only with include_padding (the
divisor is then the window's element count), LP adds nothing (|0|^p = 0).

One loop walks an output's window positions in row-major order (its flat window index k,
the coordinates stepped with a carry, never divided): each invocation runs exactly the
positions it owns, so the loop budget (llvmpipe ends an invocation's loops after 65,535
iterations in all: base.LOOP_BUDGET) is a count of window positions. Strategies:

- `runs` (CPU-class): an invocation computes a run of up to RUN consecutive outputs along
  the innermost axis (their coordinates decoded once: integer division is what a CPU
  adapter pays most for; RUN_STRIDE1 where the innermost stride is 1), as many as the loop
  budget allows for the window. Where run x the innermost window is at most UNROLL (every
  usual window; not global pooling), that axis is unrolled (its window, stride and
  dilation compile-time facts): the loop walks the outer window axes only, and each window
  row reads the run's span of input columns once, every column updating the outputs whose
  windows cover it, in window order (a 3 x 3 / 2 run of 8 reads 17 columns, not 72).
  Columns and rows outside the input are masks computed once per run / row (their loads
  clamped into it), not a clamp and test per position. MAX of elements of at most 32 bits
  compares an integer order key (sign and magnitude to two's complement: -0 and +0 tie,
  every NaN one key above +inf, so a strict > keeps the first of ties and the first NaN)
  and keeps the element's bits (no second read); its flat index is kept only where
  OutputIndicesTensor is asked for. 32-bit elements move in 16-byte blocks where the
  layouts allow (`_blocks`: input rows starting on a block and every run's span at the same
  phase mod 4; packed output rows starting on a block). Measured on lavapipe (interleaved in
  one process, median of 11, float32, before = the per-position loop): max 3 x 3 / 2 pad 1
  [8, 64, 112, 112] (W16) 35.6 -> 9.9 ms, average 3 x 3 / 1 pad 1 [8, 64, 56, 56] 28.6 ->
  6.1 ms, max 3 x 3 / 1 pad 1 [8, 64, 56, 56] 37.7 -> 6.7 ms, max 2 x 2 / 2 [8, 64, 112, 112]
  22.8 -> 7.8 ms. Of those steps: the unrolled span 2.7x / 3.1x / 1.5x (W16 / average /
  2 x 2), blocks 1.3x / 1.3x / 1.5x, the order key alone about 1.0x.
- `elements` (GPU-class): one invocation per output element, neighbouring invocations on
  neighbouring outputs (coalesced stores; neighbouring windows read neighbouring input).
- `chunks` (both, the only one for windows past the loop budget: global pooling over
  256 x 256): the window's flat positions are cut into chunks; a first dispatch writes each
  (output, chunk)'s partial State to scratch, a combine dispatch (one invocation per
  output) merges an output's chunks in window order and stores it.

States (shaders/pooling.wgsl.j2; the unrolled `runs` keeps MAX as a Best instead, above):
MAX keeps the best value, its flat index into the input (row-major over the input's logical
sizes, DirectML's OutputIndicesTensor) and its input offset: the output is the input
element's own bits (float16 NaN payloads included); ties
keep the first position in window order, NaN beats every number (the first NaN wins).
AVERAGE and LP keep a float32 sum (float16 read exactly into float32) and the count of
input positions; the result is rounded once to the output's type.

Plan options (lab variants, autotuning): run (outputs per invocation of `runs`), chunks. The
family is `PoolingFamily` (a kernels.base.KernelFamily of `Problem`s), its instance `FAMILY`;
an operator's planner is `ProblemPlanner(problem, FAMILY)`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import NamedTuple

from ..errors import InternalError, InvalidArgumentError, UnsupportedError
from ..tensor_desc import TensorDesc, packed_strides
from .base import LOOP_BUDGET, KernelFamily, count_option
from .builder import Dispatch, KernelPlan, input_buffer, int64_mode, output_buffer, scratch_buffer
from .convolution import channel_stride
from .epilogue import OutputRunsFamily

STRATEGIES = ("runs", "elements", "chunks")
OPTIONS = ("run", "chunks")
FUNCTIONS = ("MAX", "AVERAGE", "LP")
#: `runs`: at most this many outputs per invocation. Measured on lavapipe (2 vCPUs, shared,
#: one run each, median of 7; float32 [8, 64, 56, 56], max pooling 3 x 3, stride 2: 27 x 27
#: outputs per channel): run 1 (`elements`) 44.1 ms, 2: 40.9, 4: 32.5, 8: 34.1, 16: 32.1 ms
#: (the decode of 4 coordinates is what a run saves; 4-16 are alike within the noise).
RUN = 8
#: `runs` where the innermost window stride is 1 and the run unrolls (`UNROLL`): neighbouring
#: windows overlap most, so a longer run reads fewer columns per output. Measured on lavapipe
#: (interleaved, median of 11, float32 [8, 64, 56, 56], 3 x 3, stride 1, padding 1): average
#: 7.26 ms at run 8, 6.20 ms at 16; max 7.63 and 6.59 ms (at stride 2, 16 was no faster than 8).
RUN_STRIDE1 = 16
WORKGROUP_SIZE = 64
#: `runs` unrolls the innermost window axis (its size, stride and dilation compile-time facts)
#: where a run's window positions along it (run x window) are at most this many; 0: never.
UNROLL = 64
#: The unrolled `runs` moves 32-bit elements in 16-byte blocks where the layouts allow (`_blocks`).
BLOCKS = True
#: Loop iterations an invocation spends besides its window positions (the run loop, set-up).
_OVERHEAD = 64


@dataclass(frozen=True)
class Problem:
    """A pooling description as the kernels see it (module docstring). `indices`: MAX's
    optional OutputIndicesTensor (UINT32 or UINT64), else None; `p`: LP's exponent."""

    op: str
    function: str
    input: TensorDesc
    output: TensorDesc
    indices: TensorDesc | None
    window: tuple[int, ...]
    strides: tuple[int, ...]
    start_padding: tuple[int, ...]
    dilations: tuple[int, ...]
    include_padding: bool = False
    p: int = 2

    @property
    def window_count(self) -> int:
        return math.prod(self.window)

    @property
    def count(self) -> int:
        return self.output.element_count


def _kind(p: Problem) -> str:
    dt = p.input.data_type
    return "float" if dt.is_float else ("sint" if dt.is_signed else "uint")


def state_words(p: Problem) -> int:
    """u32 words one saved partial State takes: MAX its index and offset (the value is read
    again from the input), AVERAGE and LP their sum and count."""
    return 2


def _max_run(p: Problem) -> int:
    """The most outputs one `runs` invocation may compute within the loop budget (0: not one)."""
    return max(0, (LOOP_BUDGET - _OVERHEAD) // (p.window_count + 1))


def _run(p: Problem, requested) -> int:
    if requested is None:
        run = RUN_STRIDE1 if p.strides[-1] == 1 and RUN_STRIDE1 * p.window[-1] <= UNROLL else RUN
        return max(1, min(run, _max_run(p), p.output.sizes[-1]))
    if isinstance(requested, bool) or not isinstance(requested, int) or not 1 <= requested <= 64:
        raise InvalidArgumentError(f"{p.op}: option run = {requested!r} must be an integer in [1, 64]")
    if requested > _max_run(p):
        raise UnsupportedError(f"{p.op}: option run = {requested}: {requested} windows of {p.window_count} "
                               f"positions pass one invocation's loop budget ({LOOP_BUDGET})")
    return requested


def _scratch_limit(caps) -> int:
    return caps.max_storage_binding_size if caps is not None else 1 << 27


def chunks_for(p: Problem, caps, requested=None) -> int:
    """Chunks per output of the `chunks` strategy: at least what the loop budget needs, the
    requested number (default: that, and at least 2 where the window has 2 positions), at
    most one per window position, what one combine pass merges and what one scratch binding
    holds (UnsupportedError where the budget needs more)."""
    count_option(p.op, "chunks", requested)
    positions = p.window_count
    need = -(-positions // (LOOP_BUDGET - _OVERHEAD))
    per_output = 4 * state_words(p)
    limit = _scratch_limit(caps)
    most = min(positions, LOOP_BUDGET - _OVERHEAD, limit // (per_output * p.count))
    if need > most:
        raise UnsupportedError(
            f"{p.op}: a window of {positions} positions needs {need} chunks of partial results per output (one "
            f"invocation's loop budget); a chunk takes {per_output} bytes per output, {p.count} outputs: "
            f"{per_output * p.count} bytes, and the adapter's scratch binding (max-storage-buffer-binding-size, "
            f"{limit} bytes) holds {limit // (per_output * p.count)} chunks. Use a smaller batch (at most "
            f"{limit // (per_output * need)} outputs per call) or a smaller window")
    chunks = max(need, min(requested if requested is not None else max(need, 2), most))
    return -(-positions // -(-positions // chunks))  # no empty chunk


def strategies_for(p: Problem, caps, run=None, chunks=None) -> tuple[str, ...]:
    """`runs` and `elements` where a window fits one invocation's loop budget (`runs` first on
    software adapters and without caps, `elements` first on GPUs), then `chunks`."""
    found = []
    if _max_run(p) >= 1:
        try:
            _run(p, run)
            found.append("runs")
        except UnsupportedError:
            pass
        found.append("elements")
    try:
        chunks_for(p, caps, chunks)
        found.append("chunks")
    except UnsupportedError:
        if not found:
            raise
    if caps is not None and not caps.is_software:
        found.sort(key=lambda s: s != "elements")
    return tuple(found)


def _params(p: Problem, caps) -> dict:
    rank = p.input.rank
    native64 = caps is not None and caps.has("shader-int64") and p.input.data_type.size == 8
    return {"function": p.function, "kind": _kind(p), "bits": p.input.data_type.size * 8, "rank": rank,
            "sr": rank - 2, "has_indices": p.indices is not None,
            "index_bits": p.indices.data_type.size * 8 if p.indices is not None else 32,
            "native64": native64, "include_padding": p.include_padding,
            "power": p.p if p.p in (1, 2) else 0}


def _int64(params: dict) -> str:
    """Dispatch.int64: 64-bit elements (INT64, UINT64) compute as W64."""
    return int64_mode(params["bits"] == 64, params["native64"])


def _uniforms(p: Problem, **extra) -> dict:
    rank = p.input.rank
    uniforms = {
        "count": p.count, "rows": p.count // p.output.sizes[-1],
        "out_sizes": p.output.sizes, "out_strides": p.output.effective_strides,
        "in_sizes": p.input.sizes, "in_strides": p.input.effective_strides,
        "in_flat": packed_strides(p.input.sizes),
        "win": p.window, "pool_strides": p.strides, "pads": p.start_padding, "dil": p.dilations,
        "window_count": p.window_count, "p": p.p,
    }
    uniforms["idx_strides"] = p.indices.effective_strides if p.indices is not None else (0,) * rank
    uniforms.update(extra)
    return uniforms


def _blocks(p: Problem, run: int) -> tuple[int, bool]:
    """How the unrolled `runs` moves 32-bit elements in 16-byte blocks: (phase, vec_out).
    phase >= 0: it reads the input's rows in blocks (packed along the innermost axis, every
    row starting on a block, and a run's first column c0 = j0 * stride - pad the same phase
    c0 % 4 for every run); vec_out: it stores whole blocks of outputs (packed rows starting
    on a block, runs of a multiple of 4)."""
    if p.input.data_type.size != 4 or not BLOCKS:
        return -1, False
    phase = -1
    ins = p.input.effective_strides
    if ins[-1] == 1 and all(s % 4 == 0 for s in ins[:-1]) and run * p.strides[-1] % 4 == 0:
        phase = -p.start_padding[-1] % 4
    outs = p.output.effective_strides
    return phase, outs[-1] == 1 and all(s % 4 == 0 for s in outs[:-1]) and run % 4 == 0


def plan(p: Problem, caps, strategy: str, run=None, chunks=None) -> KernelPlan:
    """The dispatches of `strategy`: one (`runs`, `elements`), or the partial States and
    the combine pass (`chunks`)."""
    if strategy not in strategies_for(p, caps, run, chunks):
        raise InternalError(f"{p.op}: strategy {strategy} cannot run {p}")
    params = _params(p, caps)
    outs = (output_buffer(0, "output", params["bits"], "stores"),)
    if p.indices is not None:
        outs += (output_buffer(1, "indices", params["index_bits"], "stores"),)
    inp = (input_buffer(0, "input"),)
    row = p.output.sizes[-1]
    if strategy in ("runs", "elements"):
        length = _run(p, run) if strategy == "runs" else 1
        per_row = -(-row // length)
        uniforms = _uniforms(p, run=length, runs_per_row=per_row, chunks=1, chunk_len=p.window_count)
        invocations = p.count // row * per_row
        unroll, phase, vec_out = None, -1, False
        if strategy == "runs" and length * p.window[-1] <= UNROLL:
            unroll = (length, p.window[-1], p.strides[-1], p.dilations[-1])
            phase, vec_out = _blocks(p, length)
            inp += (input_buffer(0, "input_vec", "blocks"),) if phase >= 0 else ()
            outs += (output_buffer(0, "output_vec", params["bits"], "blocks"),) if vec_out else ()
        params.update({"pass": "direct", "unroll": unroll, "phase": phase, "vec_out": vec_out})
        return KernelPlan((Dispatch("pooling.wgsl.j2", params, outs + inp, uniforms,
                                    invocations, WORKGROUP_SIZE, int64=_int64(params)),))
    count = chunks_for(p, caps, chunks)
    chunk_len = -(-p.window_count // count)
    uniforms = _uniforms(p, run=1, runs_per_row=row, chunks=count, chunk_len=chunk_len)
    partials = Dispatch("pooling.wgsl.j2", {**params, "pass": "partials"},
                        (scratch_buffer(0, "partials", writable=True),) + inp, uniforms, p.count * count,
                        WORKGROUP_SIZE, int64=_int64(params))
    combine = Dispatch("pooling.wgsl.j2", {**params, "pass": "combine"},
                       outs + inp + (scratch_buffer(0, "partials", writable=False),), uniforms, p.count,
                       WORKGROUP_SIZE, int64=_int64(params))
    return KernelPlan((partials, combine), scratch_bytes=(p.count * count * state_words(p) * 4,))


def variants(p: Problem, caps, strategy: str) -> tuple[dict, ...]:
    """Other run lengths (`runs`) and twice the chunks (`chunks`); sets the description
    cannot take are the tuner's to drop."""
    if strategy == "runs":
        return tuple({"run": r} for r in (2, 4, 16) if r != RUN and r <= _max_run(p))
    if strategy == "chunks":
        try:
            return ({"chunks": 2 * chunks_for(p, caps)},)
        except UnsupportedError:
            return ()
    return ()


# ------------------------------------------------------------------------------ the family
class PoolingFamily(KernelFamily):
    """The pooling family: the module's functions over a `Problem`. No hooks."""

    strategies = STRATEGIES
    options = OPTIONS

    def strategies_for(self, problem: Problem, caps, run=None, chunks=None) -> tuple[str, ...]:
        return strategies_for(problem, caps, run, chunks)

    def plan(self, problem: Problem, caps, strategy: str, run=None, chunks=None) -> KernelPlan:
        return plan(problem, caps, strategy, run, chunks)

    def variants(self, problem: Problem, caps, strategy: str) -> tuple[dict, ...]:
        return variants(problem, caps, strategy)


FAMILY = PoolingFamily()


# ---------------------------------------------------------------------------- quantized average pooling
class QuantizedAverage(NamedTuple):
    """DML_QUANTIZED_LINEAR_AVERAGE_POOLING as its kernel sees it: the input and the output
    (8-bit, their own strides), the window per spatial axis (sizes, strides, start padding,
    dilations), include_padding, and every input tensor by role in the desc's order
    (`tensors`: "x", "x_scale", "x_zero_point", "output_scale", "output_zero_point"; an
    optional one left out is absent)."""

    op: str
    input: TensorDesc
    output: TensorDesc
    window: tuple[int, ...]
    strides: tuple[int, ...]
    start_padding: tuple[int, ...]
    dilations: tuple[int, ...]
    include_padding: bool
    tensors: tuple[tuple[str, TensorDesc], ...]

    def role(self, name: str) -> TensorDesc | None:
        return dict(self.tensors).get(name)


_QUANTIZED_BUFFERS = {"x": "x", "x_scale": "xs", "x_zero_point": "xz", "output_scale": "ys",
                      "output_zero_point": "yz"}


class QuantizedAveragePoolingFamily(OutputRunsFamily):
    """The kernel of DML_QUANTIZED_LINEAR_AVERAGE_POOLING (shaders/quantized_linear_average_pooling.wgsl.j2):
    each output walks its window once, the float pooling family's walk with the integer sum,
    dequantized, averaged and requantized in the store (epilogue.OutputRunsFamily: `runs` on
    CPU-class adapters, `elements` on GPUs, the store epilogue). A window of more positions
    than one invocation's loop budget is an UnsupportedError."""

    def iterations(self, problem: QuantizedAverage) -> int:
        return math.prod(problem.window)

    def too_long(self, problem: QuantizedAverage) -> str:
        return (f"{problem.op}: a window of {math.prod(problem.window)} positions (prod(window_size)) passes one "
                f"invocation's loop budget ({LOOP_BUDGET - self.OVERHEAD} positions)")

    def plan_runs(self, p: QuantizedAverage, caps, strategy: str, run: int) -> KernelPlan:
        x, out = p.input, p.output
        xs = x.effective_strides
        count = out.element_count
        roles = [name for name, _ in p.tensors]
        channels = x.sizes[1]
        buffers = (output_buffer(0, "output", 8, "stores"),) + tuple(
            input_buffer(k, _QUANTIZED_BUFFERS[name]) for k, name in enumerate(roles))
        params = {"spatial": len(p.window), "x_signed": x.data_type.is_signed, "has_xz": "x_zero_point" in roles,
                  "has_yz": "output_zero_point" in roles, "out_signed": out.data_type.is_signed,
                  "include_padding": bool(p.include_padding)}
        uniforms = {"count": count, "run": run, "out_sizes": out.sizes, "out_strides": out.effective_strides,
                    "x_n": xs[0], "x_c": xs[1], "x_strides": tuple(xs[2:]), "in_sizes": tuple(x.sizes[2:]),
                    "steps": p.strides, "dilations": p.dilations, "pads": p.start_padding, "window": p.window,
                    "window_size": math.prod(p.window),
                    **{f"{_QUANTIZED_BUFFERS[r]}_c": channel_stride(p.role(r), channels)
                       for r in ("x_scale", "x_zero_point", "output_scale", "output_zero_point")}}
        for d, (o, i, w, st, dl, p0) in enumerate(zip(out.sizes[2:], x.sizes[2:], p.window, p.strides, p.dilations,
                                                      p.start_padding)):
            if max(o, i) * st + (w - 1) * dl + p0 >= 2**31:  # the kernel's window coordinates are i32
                raise UnsupportedError(f"{p.op}: spatial axis {d} reaches past the kernel's 2^31 - 1")
        return KernelPlan((Dispatch("quantized_linear_average_pooling.wgsl.j2", params, buffers, uniforms,
                                    -(-count // run), 64),))


QUANTIZED_AVERAGE = QuantizedAveragePoolingFamily()
