"""The resampling gradients (DML_RESAMPLE_GRAD, DML_RESAMPLE_GRAD1: gpudml/ops/resample_grad.py):
the transpose of the resampling family's index map (kernels/resample.py). The problem is the
forward's `Resampling` (its input: the output gradient dx; its output: the incoming gradient
dy). Each dx element *gathers* what the forward's outputs took from it, in a fixed order, so
the float sum is the same on every run and every adapter (no atomics):

    dx[i] = sum over o, row-major over the resampled axes, of w(o, i) * dy[o]

where w(o, i) is the product over the resampled axes d of the weight the forward gave input
index i_d in output o_d's taps (lib/resample.wgsl.j2's coordinate, snapped as the forward
snaps it; nearest: 1 where its rounding picks i_d; linear: 1 - r on floor(x), r on floor(x) + 1,
both clamped into the axis, so that an edge element collects every tap clamped onto it).
A product of exactly 0 adds nothing (a NaN dy the forward weighted by 0 does not reach dx).
An axis that does not resample (the forward's `axes`) maps o_d = i_d.

The candidate outputs of i_d on axis d are those whose coordinate can lie within 1 of it:
o in [floor((i_d - 1 + in_off) scale + out_off) - 1, ceil((i_d + 1 + in_off) scale + out_off)
+ 1] (the inverse map, widened by one output for the float32 rounding), clamped into the
output, extended to its start for i_d = 0 and to its end for the last i_d (the forward clamps
taps past the edges onto them). The kernel weighs every candidate with the forward's own
arithmetic, so the range only has to hold every contributor. The host computes the same
ranges (float64, one more output each side) to bound the loop: the product over the resampled
axes of the longest range is an invocation's iterations per element; past the loop budget
(LOOP_BUDGET: llvmpipe's GL ends loops after 65,535 iterations) the plan is an
UnsupportedError (a forward mapping many outputs onto one edge element of several axes:
offsets that push the whole output off the input).

Accumulation in float32 (float16 read exactly), rounded once on the store.

Strategies (base.GatherRunsFamily): `runs` (CPU-class) computes RUN consecutive dx elements per
invocation (fewer where the loop budget asks), `elements` (GPU-class) one.

An outer axis' candidate of weight 0 skips the axes inside it (their products are all 0).
Measured on lavapipe (gpudml lab, 2 shared cores, a loaded host, 2026-11-29), RESAMPLE_GRAD1
linear of dy [1, 16, 128, 128] float32 to [1, 16, 64, 64], two interleaved A/B pairs, GPU ms
(x the copy kernel): `runs` 35.3 and 43.9 (0.02-0.03x) -> 7.5 and 7.5 (0.13-0.14x). Computing
the innermost axis' weights once per element into an array instead gave nothing measurable
(47.7, 49.4 against 44.1 ms) and was left out.
"""

from __future__ import annotations

import numpy as np

from ..errors import UnsupportedError
from .base import LOOP_BUDGET, GatherRunsFamily, element_bits
from .builder import Dispatch, KernelPlan, f32_bits, input_buffer, output_buffer
from .resample import Resampling, f32

RUN = GatherRunsFamily.RUN
WORKGROUP_SIZE = 64
#: Iterations an element spends besides its candidates (set-up, the ranges).
_OVERHEAD = GatherRunsFamily.OVERHEAD


def candidate_ranges(p: Resampling, d: int) -> tuple[np.ndarray, np.ndarray]:
    """Axis d's candidate outputs of every input index (module docstring), one more output
    either side than the kernel takes: (lo, hi) inclusive, int64 arrays over the input."""
    n_in, n_out = p.input.sizes[d], p.output.sizes[d]
    s, io, oo = f32(p.scales[d]), f32(p.input_offsets[d]), f32(p.output_offsets[d])
    i = np.arange(n_in, dtype=np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        a = np.floor((i - 1 + io) * s + oo) - 2
        b = np.ceil((i + 1 + io) * s + oo) + 2
    lo = np.clip(np.nan_to_num(a, nan=0.0), 0, n_out - 1).astype(np.int64)
    hi = np.clip(np.nan_to_num(b, nan=n_out - 1.0), 0, n_out - 1).astype(np.int64)
    lo[0], hi[-1] = 0, n_out - 1
    return lo, hi


def candidates(p: Resampling) -> int:
    """The most candidate outputs one dx element weighs (the product of the axes' longest ranges)."""
    total = 1
    for d in p.axes:
        lo, hi = candidate_ranges(p, d)
        total *= int(np.max(np.maximum(hi - lo + 1, 0)))
    return total


def _check_budget(p: Resampling) -> int:
    per = candidates(p)
    if per + _OVERHEAD > LOOP_BUDGET:
        raise UnsupportedError(
            f"{p.op}: one output gradient element weighs up to {per} input gradient elements (scales "
            f"{list(p.scales)}, pixel offsets {list(p.input_offsets)}, {list(p.output_offsets)}), past one "
            f"invocation's loop budget ({LOOP_BUDGET})")
    return per


class ResampleGradFamily(GatherRunsFamily):
    """The gradients' gather (module docstring) over a forward `Resampling`."""

    def per_element(self, problem: Resampling) -> int:
        return _check_budget(problem)

    def op_of(self, problem: Resampling) -> str:
        return problem.op

    def count_of(self, problem: Resampling) -> int:
        return problem.input.element_count

    def plan(self, p: Resampling, caps, strategy: str, run=None) -> KernelPlan:
        length = self.run_for(p, caps, strategy, run)
        count = p.input.element_count
        bits = element_bits(p.input)
        params = {"rank": p.input.rank, "axes": p.axes, "mode": p.mode, "rounding": p.rounding, "bits": bits}
        uniforms = {"count": count, "run": length,
                    "dx_sizes": p.input.sizes, "dx_strides": p.input.effective_strides,
                    "dy_sizes": p.output.sizes, "dy_strides": p.output.effective_strides,
                    "rs_scales": tuple(f32_bits(s) for s in p.scales),
                    "rs_in_offs": tuple(f32_bits(v) for v in p.input_offsets),
                    "rs_out_offs": tuple(f32_bits(v) for v in p.output_offsets)}
        buffers = (output_buffer(0, "output", bits, "stores"), input_buffer(0, "input"))
        return KernelPlan((Dispatch("resample_grad.wgsl.j2", params, buffers, uniforms,
                                    -(-count // length), WORKGROUP_SIZE),))


FAMILY = ResampleGradFamily()
__all__ = ["FAMILY", "candidate_ranges", "candidates"]
