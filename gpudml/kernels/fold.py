"""The fold family (DML_FOLD, col2im): each element of the image [N, C, S_1..S_D] sums the
elements of the block tensor [N, C * prod(W), L] that a sliding window puts on it.

Output element [n, c, s] gathers, for every window position w (flat k, row-major), the
block b with b_d * stride_d + w_d * dilation_d - start_padding_d = s_d on every spatial axis
(there is at most one per position: b_d = (s_d + start_padding_d - w_d * dilation_d) /
stride_d where that divides exactly and lands in [0, B_d)), and adds input element [n, c *
prod(W) + k, flat b]. Each output is written by exactly one invocation, which walks the
window in row-major order: no atomics, no race, and a deterministic order of the sums.
Floats (FLOAT32, FLOAT16) sum in float32 (float16 read exactly, rounded once on the store);
integers (8-32 bits) sum their bits modulo 2^32, whose low bits are the sum wrapped in the
element's type, as DirectML's integer arithmetic wraps.

Strategies: `runs` (CPU-class) gives an invocation a run of up to RUN consecutive outputs
(row-major) within the loop budget (base.LOOP_BUDGET: llvmpipe ends an invocation's loops
after 65,535 iterations), `elements` (GPU-class) one output per invocation, neighbours on
neighbouring outputs. A window of more positions than the budget is an UnsupportedError.
The store epilogue (kernels/epilogue.py) applies element-wise consumers in the store.
"""

from __future__ import annotations

import math
from typing import NamedTuple

from ..errors import InternalError, UnsupportedError
from ..tensor_desc import TensorDesc
from .base import LOOP_BUDGET, KernelFamily, count_option, element_bits
from .builder import Dispatch, KernelPlan, input_buffer, output_buffer
from .epilogue import ElementStores

STRATEGIES = ("runs", "elements")
#: Outputs per `runs` invocation (fewer where the window is large: the loop budget).
RUN = 16
WORKGROUP_SIZE = 64
#: Loop iterations an invocation spends besides its window positions.
_OVERHEAD = 64


class Fold(NamedTuple):
    """What the family computes (module docstring): the block tensor `input` [N, C *
    prod(window), L], the image `output` [N, C, spatial...], each with its own strides; the
    window, its strides, dilations and start padding, and the blocks per spatial axis."""

    op: str
    input: TensorDesc
    output: TensorDesc
    window: tuple[int, ...]
    strides: tuple[int, ...]
    dilations: tuple[int, ...]
    start_padding: tuple[int, ...]
    blocks: tuple[int, ...]

    @property
    def window_count(self) -> int:
        return math.prod(self.window)


def _max_run(p: Fold) -> int:
    return max(0, (LOOP_BUDGET - _OVERHEAD) // p.window_count)


def _run(p: Fold, strategy: str, run) -> int:
    if strategy == "elements":
        return 1
    count_option(p.op, "run", run)
    wanted = RUN if run is None else run
    if wanted > _max_run(p):
        if run is not None:
            raise UnsupportedError(f"{p.op}: option run = {run}: {run} outputs of {p.window_count} window "
                                   f"positions each pass one invocation's loop budget ({LOOP_BUDGET})")
        wanted = _max_run(p)
    return max(1, min(wanted, p.output.element_count))


def strategies_for(p: Fold, caps, run=None) -> tuple[str, ...]:
    """Both strategies where the window fits the loop budget (`runs` first on software
    adapters and without caps, `elements` first on GPUs)."""
    if _max_run(p) < 1:
        raise UnsupportedError(f"{p.op}: a window of {p.window_count} positions (prod(window_sizes)) passes one "
                               f"invocation's loop budget ({LOOP_BUDGET - _OVERHEAD} positions): use a smaller window")
    _run(p, "runs", run)
    cpu = caps is None or caps.is_software
    return ("runs", "elements") if cpu else ("elements", "runs")


def plan(p: Fold, caps, strategy: str, run=None) -> KernelPlan:
    if strategy not in strategies_for(p, caps, run):
        raise InternalError(f"{p.op}: strategy {strategy} cannot run {p}")
    dt = p.input.data_type
    kind = "float" if dt.is_float else ("sint" if dt.is_signed else "uint")
    bits = element_bits(p.input)
    length = _run(p, strategy, run)
    count = p.output.element_count
    params = {"kind": kind, "bits": bits, "rank": p.output.rank, "sr": p.output.rank - 2,
              "unit": all(s == 1 for s in p.strides)}
    uniforms = {"count": count, "run": length, "window_count": p.window_count,
                "out_sizes": p.output.sizes, "out_strides": p.output.effective_strides,
                "in_strides": p.input.effective_strides, "win": p.window, "fold_strides": p.strides,
                "dil": p.dilations, "pads": p.start_padding, "blocks": p.blocks}
    buffers = (output_buffer(0, "output", bits, "stores"), input_buffer(0, "input"))
    return KernelPlan((Dispatch("fold.wgsl.j2", params, buffers, uniforms, -(-count // length), WORKGROUP_SIZE),))


class FoldFamily(ElementStores, KernelFamily):
    """The fold family: the module's functions over a `Fold`, with the store epilogue."""

    strategies = STRATEGIES
    options = ("run",)

    def strategies_for(self, problem: Fold, caps, run=None) -> tuple[str, ...]:
        return strategies_for(problem, caps, run)

    def plan(self, problem: Fold, caps, strategy: str, run=None) -> KernelPlan:
        return plan(problem, caps, strategy, run)

    def variants(self, problem: Fold, caps, strategy: str) -> tuple[dict, ...]:
        """Other run lengths of `runs` (what the budget allows)."""
        if strategy != "runs":
            return ()
        return tuple({"run": r} for r in (4, 64) if r <= _max_run(problem))


FAMILY = FoldFamily()
