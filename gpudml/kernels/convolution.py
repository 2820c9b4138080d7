"""Convolution as implicit GEMM on the GEMM family (kernels/gemm.py): DML_OPERATOR_CONVOLUTION's
kernels (ops/convolution.py), forward and backward (transposed), every group count.

For each batch position and group, the convolution is one matrix product

    Y[m, n] = sum_k A[m, k] B[k, n]

- m runs over the output's spatial positions (row-major, M = prod(output spatial sizes)),
- n over the group's output channels (N = C_out / groups),
- k over the group's input channels and the window (K = C_in / groups x prod(window),
  channel-major, the window's last axis fastest: the filter's packed order),
- A is the im2col view of the input, computed on the fly (shaders/lib/convolution.wgsl.j2:
  `a_row(bo, m)` finds the window's origin of output position m once, `a_load(row, k)` the
  input element of window offset k, 0 in the padding), B the filter read in place (one
  stride along K where the filter's channel and window axes merge, the window's axes one by
  one elsewhere; mode CONVOLUTION flips them: negative strides). FLOAT32 filters whose
  channel and window axes merge into a stride of 1 (packed, unflipped) are read as 16-byte
  blocks of 4 k (`registers`: Problem.blocks, lib/convolution's `b_block`), 8-bit filters
  of the integer path likewise as words of 4 k (`integer_gemm_of`); the im2col reads of A
  go element by element, and `registers` with subgroups makes them once per subgroup (one
  lane per row, handed on: kernels/gemm.py), float and integer alike. W66 (QLinearConv
  [1,64,56,56] x [64,64,3,3], lavapipe, a call beside the float32
  convolution's GPU time, interleaved): 3.3-3.7x before, 1.75x with both, 1.14x with
  kernels/gemm.py's row-by-row integer stores.
- BACKWARD (the transposed convolution) gathers: output position o receives x[i] w[k]
  wherever o + start_padding = i stride + k dilation, so a_load takes the window offset's
  input position (o + start_padding - k dilation) / stride where that divides evenly and
  lies inside the input, 0 elsewhere (a stride s of d spatial axes leaves s^d - 1 of every
  s^d products at 0: the K walk is the forward one's).
- The batch axes of the product are (batch, group); the bias is C (a stride of 0 along m),
  the fused activation the epilogue's; the output's spatial axes are addressed through
  `out_offset` (any strides).

The GEMM strategies' everything else (both strategies, register tiles and workgroup tiles, split-K past the loop
budget and as cache blocking, float16 accumulated in f32, tensors in segments) is the GEMM
family's. A group of few output channels (depthwise: N = 1) takes `registers` first on
every adapter: `workgroup`'s 64 x 64 tiles would compute 64 columns for one.

`direct` (shaders/convolution_direct.wgsl.j2), FORWARD only (BACKWARD stays on GEMM), for
groups of few channels (at most DIRECT_CHANNELS input and output channels per group: the
depthwise convolution and the like), chosen first there on every adapter: each output
element sums its group's input channels x its window in f32, no im2col index arithmetic
per product. On CPU-class adapters an invocation computes a run of up to RUN neighbouring
outputs along the output's innermost spatial axis: per input channel and position of the
window's outer axes it reads the input row segment the run's windows cover into registers
once (neighbouring windows overlap) and walks the window's innermost axis over it (that
axis' window size, stride and dilation compile-time: the inner loops unroll); on
GPU-class adapters one output per invocation (neighbouring invocations on neighbouring
outputs). An invocation runs C_in / groups x prod(window) window positions: a window
past the loop budget (base.LOOP_BUDGET) is not offered `direct` (GEMM cuts K instead).
The integer convolutions (IntegerConvolutionFamily) take the same `direct` (rules, runs,
template) in i32: the template's `integer` form sums (x - x's zero point) (filter - its zero
point) exactly (wrapping as int32), and QUANTIZED_LINEAR_CONVOLUTION's bias and
requantization are lib/quantized's convolution_fns, the ones its `runs`/`elements` kernel
stores with (the GEMM path's requantize, same rounding).

The family, `ConvolutionFamily` (its instance FAMILY), is a composite one
(kernels/composite.py): a strategy is one step, the GEMM family's (gemm.FAMILY, the
implicit GEMM `gemm_of`) or `direct`'s (DIRECT, this module's own kernel), on the
operator's input, filter and bias.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

from ..errors import InternalError, InvalidArgumentError, UnsupportedError
from ..tensor_desc import TensorDesc, merge_axes
from . import gemm
from .base import LOOP_BUDGET, KernelFamily, ProblemPlanner
from .builder import Dispatch, KernelPlan, input_buffer, output_buffer, scratch_buffer
from .composite import CompositeFamily, Composition, Step, own
from .elementwise import Attribute, attribute_uniforms
from .epilogue import OutputRunsFamily
from .quantized import Quantized


class Geometry:
    """What a convolution problem derives from its filter, input, output and groups (the float
    and the integer problems alike)."""

    @property
    def window(self) -> tuple[int, ...]:
        return tuple(self.filter.sizes[2:])

    @property
    def channels_in(self) -> int:
        """Input channels per group."""
        return self.input.sizes[1] // self.groups

    @property
    def channels_out(self) -> int:
        """Output channels per group."""
        return self.output.sizes[1] // self.groups


@dataclass(frozen=True)
class Convolution(Geometry):
    """A convolution as the kernels see it: the tensors (bias None or `{1, C_out, 1...}`),
    BACKWARD or not, the filter flipped or not (mode CONVOLUTION), per spatial axis the
    strides, dilations and start paddings, the group count, and the fused activation (a WGSL
    expression over `x` with its attributes)."""

    op: str
    input: TensorDesc
    filter: TensorDesc
    bias: TensorDesc | None
    output: TensorDesc
    backward: bool
    flip: bool
    strides: tuple[int, ...]
    dilations: tuple[int, ...]
    start_padding: tuple[int, ...]
    groups: int
    activation: str | None = None
    activation_attributes: tuple[Attribute, ...] = ()


def _virtual(dt, sizes, strides) -> TensorDesc:
    """A GEMM operand's description: only its sizes and batch strides are read (the
    operands template addresses the elements)."""
    return TensorDesc(dt, sizes, strides, total_tensor_size_in_bytes=0)


def gemm_of(cv: Convolution) -> tuple[gemm.Problem, dict, dict]:
    """(the GEMM problem, its extra uniforms, the operands template's parameters)."""
    x, f, out = cv.input, cv.filter, cv.output
    xs, fs, os_ = x.effective_strides, f.effective_strides, out.effective_strides
    nb, g, cin, cout = x.sizes[0], cv.groups, cv.channels_in, cv.channels_out
    window = cv.window
    spatial = len(window)
    m, k, n = math.prod(out.sizes[2:]), cin * math.prod(window), cout
    # The filter: FORWARD {C_out, C_in / groups, window...}, BACKWARD {C_in, C_out / groups, window...}.
    f_ci, f_n = (fs[1], fs[0]) if not cv.backward else (fs[0], fs[1])
    f_group = (cout if not cv.backward else cin) * fs[0]
    f_k = [(-s if cv.flip else s) for s in fs[2:]]
    f_base = sum((w - 1) * s for w, s in zip(window, fs[2:])) if cv.flip else 0
    merged = merge_axes((cin,) + window, (f_ci,) + tuple(fs[2:]))
    f_step = merged[0].strides[0] if len(merged) == 1 and not cv.flip else None
    dt = x.data_type
    a = _virtual(dt, [nb, g, m, k], [xs[0], cin * xs[1], 1, m])
    b = _virtual(dt, [nb, g, k, n], [0, f_group, 1, k])
    c = None
    if cv.bias is not None:
        c = _virtual(dt, [nb, g, m, n], [0, cout * cv.bias.effective_strides[1], 0, cv.bias.effective_strides[1]])
    o = _virtual(out.data_type, [nb, g, m, n], [os_[0], cout * os_[1], 0, os_[1]])
    # B as 16-byte blocks of 4 k (`registers`): the filter's channel and window axes one
    # stride of 1, each output channel's and group's filter starting on a block.
    b_blocks = f_step == 1 and dt.size == 4 and f_n % 4 == 0 and f_group % 4 == 0
    problem = gemm.Problem(cv.op, a, b, c, o, 1.0, 1.0, cv.activation, cv.activation_attributes,
                           operands="lib/convolution.wgsl.j2", blocks=("", "k" if b_blocks else ""))
    uniforms = {
        "x_c": xs[1], "x_strides": tuple(xs[2:]), "in_sizes": tuple(x.sizes[2:]), "out_sizes": tuple(out.sizes[2:]),
        "out_strides": tuple(os_[2:]), "window": window, "steps": cv.strides, "dilations": cv.dilations,
        "pads": cv.start_padding, "window_size": math.prod(window), "f_ci": f_ci, "f_n": f_n, "f_k": tuple(f_k),
        "f_base": f_base, "f_step": f_step if f_step is not None else 0,
    }
    _check_reach(cv)
    padded = any(cv.start_padding) or _reaches_end(cv)
    params = {"spatial": spatial, "has_window": math.prod(window) > 1, "backward": cv.backward,
              "checked": cv.backward or padded, "f_merged": f_step is not None}
    return problem, uniforms, params


def _check_reach(cv: Convolution) -> None:
    """UnsupportedError where a window coordinate passes the kernels' i32."""
    for d, (o, i, w, st, dl, p0) in enumerate(zip(cv.output.sizes[2:], cv.input.sizes[2:], cv.window, cv.strides,
                                                  cv.dilations, cv.start_padding)):
        reach = max(o, i) * st + (w - 1) * dl + p0
        if reach >= 2**31:  # the kernels' window coordinates are i32
            raise UnsupportedError(f"{cv.op}: spatial axis {d} reaches coordinate {reach} (sizes x strides + window x "
                                   f"dilations + padding), past the kernels' 2^31 - 1")


def _reaches_end(cv: Convolution) -> bool:
    """Whether a FORWARD window may pass the input's end (end padding in use)."""
    for o, w, s, d, p, i in zip(cv.output.sizes[2:], cv.window, cv.strides, cv.dilations, cv.start_padding,
                                cv.input.sizes[2:]):
        if (o - 1) * s + (w - 1) * d - p >= i:
            return True
    return False


# ---------------------------------------------------------------------------- the direct strategy
#: `direct` is offered where a group has at most this many input and output channels.
DIRECT_CHANNELS = 4
#: `direct` on CPU-class adapters: at most this many outputs per invocation, and at most
#: SPAN input elements held per row segment (the run shrinks to fit both and the budget).
RUN = 8
SPAN = 64
DIRECT_WORKGROUP = 64
#: Loop iterations a `direct` invocation spends besides its window (set-up, the run's loops).
_DIRECT_OVERHEAD = 64


def _span(cv: Convolution, run: int) -> int:
    return (run - 1) * cv.strides[-1] + (cv.window[-1] - 1) * cv.dilations[-1] + 1


def _direct_iterations(cv: Convolution, run: int) -> int:
    """Loop iterations of one `direct` invocation (an upper bound: every loop counted)."""
    outer = cv.channels_in * math.prod(cv.window[:-1])
    inner = (_span(cv, run) + cv.window[-1] * (run + 1) if run > 1 else cv.window[-1]) + 2
    return outer * inner + cv.channels_in + 2 * run + _DIRECT_OVERHEAD


def direct_run(cv: Convolution, caps, requested=None) -> int:
    """Outputs per `direct` invocation: the requested run, else RUN on CPU-class adapters (and
    without caps), 1 on GPUs; halved until its row segment fits SPAN and the loop budget
    holds (0: not even one output fits)."""
    if requested is not None:
        if isinstance(requested, bool) or not isinstance(requested, int) or not 1 <= requested <= 64:
            raise InvalidArgumentError(f"{cv.op}: option run = {requested!r} must be an integer in [1, 64]")
        if requested > 1 and _span(cv, requested) > SPAN or _direct_iterations(cv, requested) > LOOP_BUDGET:
            raise UnsupportedError(f"{cv.op}: option run = {requested}: its row segment or its windows pass one "
                                   f"invocation's registers ({SPAN}) or loop budget ({LOOP_BUDGET})")
        return requested
    run = RUN if caps is None or caps.is_software else 1
    run = min(run, 1 << (max(1, cv.output.sizes[-1]) - 1).bit_length())
    while run > 1 and (_span(cv, run) > SPAN or _direct_iterations(cv, run) > LOOP_BUDGET):
        run //= 2
    return run if _direct_iterations(cv, run) <= LOOP_BUDGET else 0


def direct_fits(cv: Convolution, caps, run=None) -> bool:
    """Whether `direct` runs `cv`: FORWARD, few channels per group, the window within the
    loop budget."""
    if cv.backward or cv.channels_in > DIRECT_CHANNELS or cv.channels_out > DIRECT_CHANNELS:
        return False
    try:
        return direct_run(cv, caps, run) > 0
    except UnsupportedError:
        return False


def _direct_parts(cv, caps, run) -> tuple[int, dict, dict]:
    """`direct`'s plan of a Convolution or an IntegerConvolution, all but the values' types:
    (invocations, uniforms, parameters)."""
    _check_reach(cv)
    if not direct_fits(cv, caps, run):
        raise InternalError(f"{cv.op}: strategy direct cannot run {cv}")
    run = direct_run(cv, caps, run)
    x, f, out = cv.input, cv.filter, cv.output
    xs, fs, os_ = x.effective_strides, f.effective_strides, out.effective_strides
    window = cv.window
    per_row = -(-out.sizes[-1] // run)
    units = out.element_count // out.sizes[-1] * per_row
    uniforms = {
        "units": units, "runs_per_row": per_row, "channels": out.sizes[1], "cout_g": cv.channels_out,
        "cin_g": cv.channels_in, "x_n": xs[0], "x_c": xs[1], "x_strides": tuple(xs[2:]),
        "in_sizes": tuple(x.sizes[2:]), "out_sizes": tuple(out.sizes[2:]), "out_strides": tuple(os_[2:]),
        "o_n": os_[0], "o_c": os_[1], "steps": cv.strides, "dilations": cv.dilations, "pads": cv.start_padding,
        "window": window, "outer_window": math.prod(window[:-1]), "f_n": fs[0], "f_ci": fs[1],
        "f_k": tuple(-s if cv.flip else s for s in fs[2:]),
        "f_base": sum((w - 1) * s for w, s in zip(window, fs[2:])) if cv.flip else 0,
    }
    params = {"spatial": len(window), "run": run, "span": _span(cv, run), "win": window[-1], "step": cv.strides[-1],
              "dil": cv.dilations[-1], "bits": out.data_type.size * 8}
    return units, uniforms, params


def plan_direct(cv: Convolution, caps, run=None) -> KernelPlan:
    """One dispatch: an invocation per run of outputs along the innermost spatial axis."""
    units, uniforms, params = _direct_parts(cv, caps, run)
    bits = params["bits"]
    act_uniforms, act_attrs = attribute_uniforms("act_", cv.activation_attributes, "float", 32)
    uniforms.update(b_c=cv.bias.effective_strides[1] if cv.bias is not None else 0, **act_uniforms)
    params.update(integer=False, has_bias=cv.bias is not None, activation=cv.activation or "",
                  activation_attributes=act_attrs)
    buffers = (output_buffer(0, "output", bits, "stores"), input_buffer(0, "x"), input_buffer(1, "f"))
    buffers += (input_buffer(2, "bias"),) if cv.bias is not None else ()
    return KernelPlan((Dispatch("convolution_direct.wgsl.j2", params, buffers, uniforms, units,
                                DIRECT_WORKGROUP),))


class DirectFamily(KernelFamily):
    """`direct` alone, over a `Convolution` (a step of ConvolutionFamily's)."""

    strategies = ("direct",)
    options = ("run",)

    def strategies_for(self, problem: Convolution, caps, run=None) -> tuple[str, ...]:
        if not direct_fits(problem, caps, run):
            raise UnsupportedError(f"{problem.op}: strategy direct cannot run {problem}")
        return self.strategies

    def plan(self, problem: Convolution, caps, strategy: str, run=None) -> KernelPlan:
        return plan_direct(problem, caps, run)

    def variants(self, problem: Convolution, caps, strategy: str) -> tuple[dict, ...]:
        runs = (1, 4, 16) if caps is None or caps.is_software else (2, 4)
        return tuple({"run": r} for r in runs if r != direct_run(problem, caps) and direct_fits(problem, caps, r))


DIRECT = DirectFamily()


class IntegerWindows(DirectFamily):
    """`direct` alone over an `IntegerConvolution` (a step of IntegerConvolutionFamily's): the
    float `direct`'s rules, runs and template, i32 sums (plan_integer_direct)."""

    def plan(self, problem: IntegerConvolution, caps, strategy: str, run=None) -> KernelPlan:
        return plan_integer_direct(problem, caps, run)


class ConvolutionFamily(CompositeFamily):
    """The convolution kernels over a `Convolution`: each strategy one step, of the GEMM
    family or of DIRECT (the module docstring). The epilogue hook: the step's."""

    strategies = gemm.STRATEGIES + ("direct",)
    options = gemm.OPTIONS + ("run",)
    epilogue = True

    def strategies_for(self, problem: Convolution, caps, run=None, **options) -> tuple[str, ...]:
        """`direct` first where it fits (few channels per group: the module docstring), then
        GEMM's (`registers` first for few output channels per group)."""
        cv = problem
        found = gemm.FAMILY.strategies_for(gemm_of(cv)[0], caps, **options)
        if cv.channels_out < gemm.GPU_THREADS:  # depthwise and the like: see the module docstring
            found = tuple(sorted(found, key=lambda s: s != "registers"))
        if direct_fits(cv, caps, run):
            found = ("direct",) + found
        return found

    def steps(self, problem: Convolution, caps, strategy: str, *, element_stores: bool = False, run=None,
              **options) -> Composition:
        """One step on the operator's tensors (input, filter, bias): `direct`'s, or the
        implicit GEMM's (its operands template and uniforms). Both store element by element
        whatever `element_stores` says."""
        cv = problem
        tensors = own(2 + (cv.bias is not None))
        if strategy == "direct":
            if options:
                raise InvalidArgumentError(f"{cv.op}: strategy direct takes the option run only, not {sorted(options)}")
            return Composition((Step(DIRECT, cv, "direct", tensors, options={"run": run}),))
        if run is not None:
            raise InvalidArgumentError(f"{cv.op}: option run is strategy direct's, not {strategy}'s")
        problem, uniforms, params = gemm_of(cv)
        return Composition((Step(gemm.FAMILY, problem, strategy, tensors,
                                 options={**options, "extra_uniforms": uniforms, "extra_params": params}),))

    def output(self, problem: Convolution) -> TensorDesc:
        """`finish` stores the epilogue's result of the convolution's value (bias and fused
        activation applied, rounded to the output's type) at the output's element offsets."""
        return problem.output

    def input_count(self, problem: Convolution) -> int:
        """The epilogue's tensors are bound after the input, the filter and the bias."""
        return 2 + (problem.bias is not None)

    def variants(self, problem: Convolution, caps, strategy: str) -> tuple[dict, ...]:
        """GEMM's, fewer: one other tile per strategy (registers 8 x 8, workgroup 2 x 2) and
        twice the chunks where the plan cuts K. Each is a pipeline of its own, and the
        operand reads' index arithmetic makes a convolution's several times slower to compile
        than a GEMM's (0.2-0.6 s each on lavapipe). `direct`: other runs."""
        if strategy == "direct":
            return DIRECT.variants(problem, caps, strategy)
        keep = {"registers": {"tile": (8, 8)}, "workgroup": {"tile": (2, 2)}}[strategy]
        return tuple(v for v in gemm.FAMILY.variants(gemm_of(problem)[0], caps, strategy)
                     if v == keep or "chunks" in v)


FAMILY = ConvolutionFamily()


class ConvolutionPlanner(ProblemPlanner):
    """The Planner of the convolution kernels: `convolution(desc)` (given by the operator:
    ops/convolution.py) says what a description computes."""

    family = FAMILY


# ---------------------------------------------------------------------------- the integer convolutions
@dataclass(frozen=True)
class IntegerConvolution(Geometry):
    """An integer convolution as its kernels see it (DML_CONVOLUTION_INTEGER,
    DML_QUANTIZED_LINEAR_CONVOLUTION: FORWARD, cross-correlation): the input, the filter and
    the output, per spatial axis the strides, dilations and start paddings, the group count,
    and every input tensor by role, in the desc's input order (`tensors`: "x",
    "x_zero_point", "filter", "filter_zero_point"; QUANTIZED_LINEAR_CONVOLUTION's also
    "x_scale", "filter_scale", "bias", "output_scale", "output_zero_point"; an optional one
    left out is absent). `quantized`: the int32 sum requantized to the output's 8-bit type
    (else stored as INT32)."""

    op: str
    input: TensorDesc
    filter: TensorDesc
    output: TensorDesc
    strides: tuple[int, ...]
    dilations: tuple[int, ...]
    start_padding: tuple[int, ...]
    groups: int
    tensors: tuple[tuple[str, TensorDesc], ...]
    quantized: bool
    #: (FORWARD cross-correlation: `direct`'s rules read these as a Convolution's)
    backward = False
    flip = False

    def role(self, name: str) -> TensorDesc | None:
        return dict(self.tensors).get(name)


#: The kernels' buffer names of the integer convolutions' roles.
_INTEGER_BUFFERS = {"x": "x", "x_zero_point": "xz", "filter": "f", "filter_zero_point": "fz", "x_scale": "xs",
                    "filter_scale": "fs", "bias": "bias", "output_scale": "ys", "output_zero_point": "yz"}


def channel_stride(td: TensorDesc | None, channels: int) -> int:
    """The element stride between the channels of a per-channel tensor (a scale, a zero point,
    a bias: one element, or `channels` along one axis and 1 along the others; validated by
    the operator): 0 for one element."""
    if td is None or td.element_count == 1:
        return 0
    axis = next(i for i, n in enumerate(td.sizes) if n != 1)
    if td.sizes[axis] != channels:
        raise InternalError(f"a per-channel tensor {list(td.sizes)} of {channels} channels")
    return td.effective_strides[axis]


class IntegerDirectFamily(OutputRunsFamily):
    """The integer convolutions' direct kernels (shaders/convolution_integer.wgsl.j2) over an
    `IntegerConvolution`: each output element sums its group's channels x window in i32
    (epilogue.OutputRunsFamily: `runs` of consecutive outputs on CPU-class adapters,
    `elements` on GPUs, the store epilogue). A reduction of more positions than one
    invocation's loop budget is an UnsupportedError."""

    def iterations(self, problem: IntegerConvolution) -> int:
        """One output walks C_in / groups x prod(window) positions (one loop)."""
        return problem.channels_in * math.prod(problem.window)

    def too_long(self, problem: IntegerConvolution) -> str:
        return (f"{problem.op}: an output's reduction of C_in / group_count x prod(window) = {problem.channels_in} "
                f"x {math.prod(problem.window)} positions passes one invocation's loop budget "
                f"({LOOP_BUDGET - self.OVERHEAD})")

    def plan_runs(self, p: IntegerConvolution, caps, strategy: str, run: int) -> KernelPlan:
        x, f, out = p.input, p.filter, p.output
        xs, fs = x.effective_strides, f.effective_strides
        count = out.element_count
        staged, buffers, params, uniforms = _integer_parts(p)
        params.update(spatial=len(p.window), has_yz="output_zero_point" in dict(p.tensors),
                      out_bits=out.data_type.size * 8)
        uniforms.update({"count": count, "run": run, "out_sizes": out.sizes, "out_strides": out.effective_strides,
                         "x_n": xs[0], "x_c": xs[1], "x_strides": tuple(xs[2:]), "in_sizes": tuple(x.sizes[2:]),
                         "steps": p.strides, "dilations": p.dilations, "pads": p.start_padding,
                         "k_sizes": (p.channels_in, *p.window), "k_count": p.channels_in * math.prod(p.window),
                         "cin_g": p.channels_in, "cout_g": p.channels_out,
                         "f_n": fs[0], "f_ci": fs[1], "f_k": tuple(fs[2:]),
                         "fs_c": channel_stride(p.role("filter_scale"), out.sizes[1])})
        _check_reach(p)
        main = Dispatch("convolution_integer.wgsl.j2", params, buffers, uniforms, -(-count // run), _INTEGER_WORKGROUP)
        return _integer_plan(p, staged, main)


def _integer_parts(p: IntegerConvolution) -> tuple[tuple, tuple, dict, dict]:
    """What the integer convolutions' own kernels (`runs`/`elements`, `direct`) share: (the
    dispatches staging QUANTIZED_LINEAR_CONVOLUTION's quantization values, the main
    kernel's buffers, its parameters of the types, zero points and bias, the uniforms of
    the per-channel strides fz_c and b_c). At most 8 bindings a kernel: the quantized
    one's zero points and scales are gathered into scratch 0 first (_staged_params)."""
    roles = [name for name, _ in p.tensors]
    out = p.output
    staged = ()
    if p.quantized:
        staged, q_buffer = _staged_params(p)
        buffers = (output_buffer(0, "output", out.data_type.size * 8, "stores"),) + tuple(
            input_buffer(k, _INTEGER_BUFFERS[name]) for k, name in enumerate(roles)
            if name in ("x", "filter", "bias")) + (q_buffer,)
    else:
        buffers = (output_buffer(0, "output", out.data_type.size * 8, "stores"),) + tuple(
            input_buffer(k, _INTEGER_BUFFERS[name]) for k, name in enumerate(roles))
    params = {"x_signed": p.input.data_type.is_signed, "f_signed": p.filter.data_type.is_signed,
              "has_xz": "x_zero_point" in roles, "has_fz": "filter_zero_point" in roles,
              "quantized": p.quantized, "has_bias": "bias" in roles, "out_signed": out.data_type.is_signed}
    uniforms = {"fz_c": channel_stride(p.role("filter_zero_point"), out.sizes[1]),
                "b_c": channel_stride(p.role("bias"), out.sizes[1])}
    return staged, buffers, params, uniforms


def _integer_plan(p: IntegerConvolution, staged: tuple, main: Dispatch) -> KernelPlan:
    if staged:
        return KernelPlan(staged + (main,), scratch_bytes=(4 * (4 + 2 * p.output.sizes[1]),))
    return KernelPlan((main,))


def plan_integer_direct(p: IntegerConvolution, caps, run=None) -> KernelPlan:
    """`direct` of an integer convolution: the float `direct`'s dispatch (plan_direct) on the
    template's integer form (i32 sums of the zero points' differences), after the staged
    quantization values where QUANTIZED_LINEAR_CONVOLUTION has them."""
    units, uniforms, params = _direct_parts(p, caps, run)
    staged, buffers, int_params, int_uniforms = _integer_parts(p)
    params.update(integer=True, activation="", activation_attributes=(), **int_params)
    uniforms.update(int_uniforms)
    main = Dispatch("convolution_direct.wgsl.j2", params, buffers, uniforms, units, DIRECT_WORKGROUP)
    return _integer_plan(p, staged, main)


_INTEGER_WORKGROUP = 64
INTEGER_DIRECT = IntegerDirectFamily()
INTEGER_WINDOWS = IntegerWindows()
#: The GEMM roles (shaders/quantized_params.wgsl.j2's) of QUANTIZED_LINEAR_CONVOLUTION's tensors.
_GEMM_ROLES = {"a_zero": "x_zero_point", "b_zero": "filter_zero_point", "a_scale": "x_scale",
               "b_scale": "filter_scale", "out_scale": "output_scale", "out_zero": "output_zero_point"}


def _staged_params(p: IntegerConvolution):
    """The direct kernel's quantization values gathered into scratch 0 first (the integer
    GEMM's shaders/quantized_params.wgsl.j2 of one row and a column per output channel: words
    0-3 x's zero point, x's scale, the output's scale and zero point, then per channel co
    words 4 + 2 co, 5 + 2 co: the filter's zero point and scale): (that dispatch, the main
    kernel's read-only binding of it)."""
    roles = dict(p.tensors)
    index = {role: k for k, (role, _) in enumerate(p.tensors)}
    cout = p.output.sizes[1]
    present = {g: o for g, o in _GEMM_ROLES.items() if o in roles}
    q = {}
    for g, o in present.items():
        q[f"{g}_bits"], q[f"{g}_signed"] = roles[o].data_type.size * 8, roles[o].data_type.is_signed
    strides = {f"q_{g}": (channel_stride(roles[o], cout) if g in ("b_zero", "b_scale") else 0)
               for g, o in present.items()}
    gather = Dispatch("quantized_params.wgsl.j2", {"q": tuple(sorted(q.items()))},
                      (scratch_buffer(0, "qparams", writable=True),)
                      + tuple(input_buffer(index[o], g) for g, o in present.items()),
                      {"m": 1, "n": cout, **strides}, 1 + cout, _INTEGER_WORKGROUP)
    return (gather,), scratch_buffer(0, "qparams", writable=False)


def integer_gemm_of(p: IntegerConvolution) -> tuple[gemm.Problem, dict, dict]:
    """The implicit GEMM of an integer convolution of one group on the GEMM family's integer
    path (kernels/quantized.py): the float convolution's problem (gemm_of: A the im2col view
    of x, B the filter, C the bias) with A and B of their integer types, C INT32, and the
    quantization tensors by GEMM role: x's zero point and scale per row (one value), the
    filter's per column (output channel), the output's per row (one value)."""
    if p.groups != 1:
        raise InternalError(f"{p.op}: the integer implicit GEMM takes one group, not {p.groups}")
    roles = dict(p.tensors)
    index = {role: k for k, (role, _) in enumerate(p.tensors)}
    cv = Convolution(p.op, p.input, p.filter, roles.get("bias"), p.output, False, False, p.strides, p.dilations,
                     p.start_padding, 1)
    problem, uniforms, params = gemm_of(cv)
    cout = p.output.sizes[1]
    b = _virtual(p.filter.data_type, problem.b.sizes, problem.b.strides)
    # B as words of 4 k (`registers`' b_block, lib/convolution): an 8-bit filter whose
    # channel and window axes are one stride of 1, each output channel's starting on a word.
    f_n = p.filter.effective_strides[0]
    b_words = (p.filter.data_type.size == 1 and uniforms["f_step"] == 1 and params.get("f_merged")
               and f_n % 4 == 0)
    problem = dataclasses.replace(problem, blocks=("", "k" if b_words else ""))
    c = None if problem.c is None else _virtual(roles["bias"].data_type, problem.c.sizes, problem.c.strides)
    gemm_roles = {"a_zero": "x_zero_point", "b_zero": "filter_zero_point", "a_scale": "x_scale",
                  "b_scale": "filter_scale", "out_scale": "output_scale", "out_zero": "output_zero_point"}
    present = {g: o for g, o in gemm_roles.items() if o in roles}
    per_column = {"b_zero", "b_scale"}
    q = Quantized("requantize" if p.quantized else "int32", **{g: roles[o] for g, o in present.items()},
                  strides=tuple((g, channel_stride(roles[o], cout) if g in per_column else 0)
                                for g, o in present.items()),
                  inputs=(("a", index["x"]), ("b", index["filter"]))
                  + ((("c", index["bias"]),) if "bias" in roles else ())
                  + tuple((g, index[o]) for g, o in present.items()))
    return dataclasses.replace(problem, b=b, c=c, quantized=q), uniforms, params


class IntegerConvolutionFamily(CompositeFamily):
    """The integer convolutions' kernels over an `IntegerConvolution`: each strategy one step,
    the GEMM family's integer path (`registers`, `workgroup`: the implicit GEMM of
    `integer_gemm_of`, one group; K cut into chunks past the loop budget), the direct
    kernels' (`runs`, `elements`: IntegerDirectFamily, every group count, K within one
    invocation's loop budget) or the float convolution's `direct` in i32 (INTEGER_WINDOWS:
    few channels per group, the float one's rules: `direct_fits`). `direct` comes first
    where it runs (depthwise and the like, on every adapter, as the float convolution's),
    then the GEMM's strategies where they run (one group), in the GEMM family's order for
    the adapter, then `runs`/`elements`."""

    strategies = gemm.STRATEGIES + ("runs", "elements", "direct")
    options = gemm.OPTIONS + ("run",)
    epilogue = True

    def strategies_for(self, problem: IntegerConvolution, caps, run=None, **options) -> tuple[str, ...]:
        found = ()
        if problem.groups == 1 and run is None:
            found = gemm.FAMILY.strategies_for(integer_gemm_of(problem)[0], caps, **options)
        if not options:
            direct = direct_fits(problem, caps, run)
            try:
                found += INTEGER_DIRECT.strategies_for(problem, caps, run)
            except UnsupportedError:
                if not found and not direct:
                    raise
            if direct:
                found = ("direct",) + found
        return found

    def steps(self, problem: IntegerConvolution, caps, strategy: str, *, element_stores: bool = False, run=None,
              **options) -> Composition:
        tensors = own(len(problem.tensors))
        if strategy == "direct":
            if options:
                raise InvalidArgumentError(f"{problem.op}: strategy direct takes the option run only, not "
                                           f"{sorted(options)}")
            return Composition((Step(INTEGER_WINDOWS, problem, "direct", tensors, options={"run": run}),))
        if strategy in ("runs", "elements"):
            if options:
                raise InvalidArgumentError(f"{problem.op}: strategy {strategy} takes the option run only, not "
                                           f"{sorted(options)}")
            return Composition((Step(INTEGER_DIRECT, problem, strategy, tensors, options={"run": run}),))
        if run is not None:
            raise InvalidArgumentError(f"{problem.op}: option run is strategy runs' and direct's, not {strategy}'s")
        gp, uniforms, params = integer_gemm_of(problem)
        return Composition((Step(gemm.FAMILY, gp, strategy, tensors,
                                 options={**options, "extra_uniforms": uniforms, "extra_params": params}),))

    def output(self, problem: IntegerConvolution) -> TensorDesc:
        return problem.output

    def input_count(self, problem: IntegerConvolution) -> int:
        return len(problem.tensors)

    def variants(self, problem: IntegerConvolution, caps, strategy: str) -> tuple[dict, ...]:
        """The direct kernels' runs; GEMM's: one other tile per strategy (registers 8 x 8,
        workgroup 2 x 2) and twice the chunks where the plan cuts K."""
        if strategy == "direct":
            return INTEGER_WINDOWS.variants(problem, caps, strategy)
        if strategy in ("runs", "elements"):
            return INTEGER_DIRECT.variants(problem, caps, strategy)
        keep = {"registers": {"tile": (8, 8)}, "workgroup": {"tile": (2, 2)}}[strategy]
        return tuple(v for v in gemm.FAMILY.variants(integer_gemm_of(problem)[0], caps, strategy)
                     if v == keep or "chunks" in v)


INTEGER_FAMILY = IntegerConvolutionFamily()
