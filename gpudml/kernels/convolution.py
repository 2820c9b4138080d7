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
  one elsewhere; mode CONVOLUTION flips them: negative strides).
- BACKWARD (the transposed convolution) gathers: output position o receives x[i] w[k]
  wherever o + start_padding = i stride + k dilation, so a_load takes the window offset's
  input position (o + start_padding - k dilation) / stride where that divides evenly and
  lies inside the input, 0 elsewhere (a stride s of d spatial axes leaves s^d - 1 of every
  s^d products at 0: the K walk is the forward one's).
- The batch axes of the product are (batch, group); the bias is C (a stride of 0 along m),
  the fused activation the epilogue's; the output's spatial axes are addressed through
  `out_offset` (any strides).

Everything else (both strategies, register tiles and workgroup tiles, split-K past the loop
budget and as cache blocking, float16 accumulated in f32, tensors in segments) is the GEMM
family's. A group of few output channels (depthwise: N = 1) takes `registers` first on
every adapter: `workgroup`'s 64 x 64 tiles would compute 64 columns for one.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..errors import UnsupportedError
from ..tensor_desc import TensorDesc, merge_axes
from . import gemm
from .base import Planner
from .builder import KernelPlan
from .elementwise import Attribute
from .epilogue import attach as attach_epilogue
from .epilogue import check as check_epilogue


@dataclass(frozen=True)
class Convolution:
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
    problem = gemm.Problem(cv.op, a, b, c, o, 1.0, 1.0, cv.activation, cv.activation_attributes,
                           operands="lib/convolution.wgsl.j2")
    uniforms = {
        "x_c": xs[1], "x_strides": tuple(xs[2:]), "in_sizes": tuple(x.sizes[2:]), "out_sizes": tuple(out.sizes[2:]),
        "out_strides": tuple(os_[2:]), "window": window, "steps": cv.strides, "dilations": cv.dilations,
        "pads": cv.start_padding, "window_size": math.prod(window), "f_ci": f_ci, "f_n": f_n, "f_k": tuple(f_k),
        "f_base": f_base, "f_step": f_step if f_step is not None else 0,
    }
    for d, (o, i, w, st, dl, p0) in enumerate(zip(out.sizes[2:], x.sizes[2:], window, cv.strides, cv.dilations,
                                                 cv.start_padding)):
        reach = max(o, i) * st + (w - 1) * dl + p0
        if reach >= 2**31:  # the kernels' window coordinates are i32
            raise UnsupportedError(f"{cv.op}: spatial axis {d} reaches coordinate {reach} (sizes x strides + window x "
                                   f"dilations + padding), past the kernels' 2^31 - 1")
    padded = any(cv.start_padding) or _reaches_end(cv)
    params = {"spatial": spatial, "has_window": math.prod(window) > 1, "backward": cv.backward,
              "checked": cv.backward or padded, "f_merged": f_step is not None}
    return problem, uniforms, params


def _reaches_end(cv: Convolution) -> bool:
    """Whether a FORWARD window may pass the input's end (end padding in use)."""
    for o, w, s, d, p, i in zip(cv.output.sizes[2:], cv.window, cv.strides, cv.dilations, cv.start_padding,
                                cv.input.sizes[2:]):
        if (o - 1) * s + (w - 1) * d - p >= i:
            return True
    return False


class ConvolutionPlanner(Planner):
    """The Planner of the convolution kernels: `convolution(desc)` (given by the operator:
    ops/convolution.py) says what a description computes; the GEMM family plans it."""

    strategies = gemm.STRATEGIES
    options = gemm.OPTIONS

    def __init__(self, convolution):
        self.convolution = convolution

    def strategies_for(self, desc, caps, **options) -> tuple[str, ...]:
        cv = self.convolution(desc)
        found = gemm.strategies_for(gemm_of(cv)[0], caps, **options)
        if cv.channels_out < gemm.GPU_THREADS:  # depthwise and the like: see the module docstring
            found = tuple(sorted(found, key=lambda s: s != "registers"))
        return found

    def plan(self, desc, caps, strategy: str, **options) -> KernelPlan:
        problem, uniforms, params = gemm_of(self.convolution(desc))
        return gemm.plan(problem, caps, strategy, extra_uniforms=uniforms, extra_params=params, **options)

    epilogue = True

    def plan_with_epilogue(self, desc, caps, strategy: str, epilogue) -> KernelPlan:
        """GEMM's: `finish` stores the epilogue's result of the convolution's value (bias and
        fused activation applied, rounded to the output's type) at the output's element
        offsets; its tensors are bound after the input, the filter and the bias."""
        cv = self.convolution(desc)
        check_epilogue(epilogue, cv.output)
        problem, uniforms, params = gemm_of(cv)
        return attach_epilogue(gemm.plan(problem, caps, strategy, extra_uniforms=uniforms, extra_params=params),
                               epilogue, 2 + (problem.c is not None))

    def variants(self, desc, caps, strategy: str) -> tuple[dict, ...]:
        """GEMM's, fewer: one other tile per strategy (registers 4 x 4, workgroup 2 x 2) and
        twice the chunks where the plan cuts K. Each is a pipeline of its own, and the
        operand reads' index arithmetic makes a convolution's several times slower to compile
        than a GEMM's (0.2-0.6 s each on lavapipe)."""
        keep = {"registers": {"tile": (4, 4)}, "workgroup": {"tile": (2, 2)}}[strategy]
        return tuple(v for v in gemm.variants(gemm_of(self.convolution(desc))[0], caps, strategy)
                     if v == keep or "chunks" in v)
