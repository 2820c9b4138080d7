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

from ..tensor_desc import TensorDesc
from .base import LOOP_BUDGET, element_bits
from .builder import Dispatch, KernelPlan, input_buffer, output_buffer
from .epilogue import OutputRunsFamily

WORKGROUP_SIZE = 64


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


class FoldFamily(OutputRunsFamily):
    """The fold family over a `Fold` (epilogue.OutputRunsFamily: `runs`, `elements`, the store epilogue)."""

    def iterations(self, problem: Fold) -> int:
        """One output walks the window's positions."""
        return problem.window_count

    def too_long(self, problem: Fold) -> str:
        return (f"{problem.op}: a window of {problem.window_count} positions (prod(window_sizes)) passes one "
                f"invocation's loop budget ({LOOP_BUDGET - self.OVERHEAD} positions): use a smaller window")

    def plan_runs(self, p: Fold, caps, strategy: str, length: int) -> KernelPlan:
        dt = p.input.data_type
        kind = "float" if dt.is_float else ("sint" if dt.is_signed else "uint")
        bits = element_bits(p.input)
        count = p.output.element_count
        params = {"kind": kind, "bits": bits, "rank": p.output.rank, "sr": p.output.rank - 2,
                  "unit": all(s == 1 for s in p.strides)}
        uniforms = {"count": count, "run": length, "window_count": p.window_count,
                    "out_sizes": p.output.sizes, "out_strides": p.output.effective_strides,
                    "in_strides": p.input.effective_strides, "win": p.window, "fold_strides": p.strides,
                    "dil": p.dilations, "pads": p.start_padding, "blocks": p.blocks}
        buffers = (output_buffer(0, "output", bits, "stores"), input_buffer(0, "input"))
        return KernelPlan((Dispatch("fold.wgsl.j2", params, buffers, uniforms, -(-count // length),
                                    WORKGROUP_SIZE),))


FAMILY = FoldFamily()
