"""DML_ROI_ALIGN_GRAD's gradients (gpudml/ops/roi_align_grad.py). The input gradient: the
forward ROI align's (kernels/roi.py) sampling weights transposed. Each dx element *gathers*
what the forward's outputs took from it, in a fixed order (regions, then bins row-major), so
the float32 sum is the same on every run and adapter: no atomics.

AVERAGE: a sample's weight is separable (the bilinear or nearest weight of its row times that
of its column; a sample outside [-1, H] x [-1, W] weighs nothing), so the `tables` dispatch
first computes per region the axis tables Ty[r, y, h] = (1 / n_y) sum over bin y's samples
of the weight the sample gives row h, and Tx[r, x, w] alike (scratch: NumROIs (OH H + OW W)
words, one invocation per entry, n_y or n_x <= 64 iterations each); then

    dx[b, c, h, w] = sum over r with BatchIndices[r] = b, y, x of Ty[r, y, h] Tx[r, x, w] dy[r, c, y, x]

MAX: the `argmax` dispatch recomputes the forward (kernels/roi.py's sample rule, the input
InputTensor, OutOfBoundsInputValue 0: the grad's desc has none) and keeps per dy element the
sample it picks (the first NaN, else the first largest in row-major sample order: a tie goes
to the first sample, as the forward's strict comparison keeps the first) as its taps and
fractions (scratch: 4 words per dy element); the gather weighs each bin's picked sample
(a bin whose taps miss the element's row costs a compare).

A weight of exactly 0 adds nothing (a NaN dy reaches only the dx elements it weighs). The
gather loops NumROIs (OH (OW + 1) + 1) times per dx element (the ROI data is known only at
run time: every region is a candidate); past one invocation's loop budget (LOOP_BUDGET:
llvmpipe's GL ends loops after 65,535 iterations) the plan is an UnsupportedError, before
any GPU work.

The ROI gradient (OutputROIGradientTensor; ops/roi_align_grad.py has the rule): `roi_bins`
computes per dy element [r, c, y, x] its bin's share of region r's four coordinate gradients
(AVERAGE: the sum over the bin's samples in row-major order of slope times weight, times dy /
(n_y n_x); MAX: the picked sample's, the forward recomputed as `argmax` does, times dy) into 4
scratch words (n_y n_x <= 64 x 64 iterations, twice with MAX); `roi_sum` adds each
coordinate's C OH OW shares in order, one invocation per (region, coordinate) and its store;
past ROI_CHUNK shares a region, `roi_partials` first adds runs of ROI_CHUNK into partial sums
(loops within the budget on GL), `roi_sum` then those. One fixed order: no atomics. Both
strategies plan these dispatches alike (the `run` is the dx gather's).

Strategies (base.GatherRunsFamily): `runs` (CPU-class) gathers RUN consecutive dx elements per
invocation (fewer where the budget asks), `elements` (GPU-class) one.
"""

from __future__ import annotations

from typing import NamedTuple

from ..errors import UnsupportedError
from ..tensor_desc import TensorDesc
from .base import LOOP_BUDGET, GatherRunsFamily, element_bits
from .builder import Dispatch, KernelPlan, f32_bits, input_buffer, output_buffer, scratch_buffer
from .roi import RoiAlign

RUN = GatherRunsFamily.RUN
#: Bins one invocation of the ROI gradient's sums adds at most (a region's C OH OW bins in
#: ceil(bins / ROI_CHUNK) partial sums, then those).
ROI_CHUNK = 4096
WORKGROUP_SIZE = 64
#: Iterations an element spends besides its candidates (set-up, the store).
_OVERHEAD = GatherRunsFamily.OVERHEAD


class RoiAlignGrad(NamedTuple):
    """The gradients of the forward `forward` (its input: the forward input's sizes and
    InputTensor's layout where given; its output: dy's): dx (None where not asked for),
    whether InputTensor is an input (the desc's inputs shift by one without it) and the ROI
    gradient (None where not asked for; it needs InputTensor)."""

    forward: RoiAlign
    dy: TensorDesc
    dx: TensorDesc | None
    has_input: bool
    droi: TensorDesc | None = None


def iterations(p: RoiAlignGrad) -> int:
    """One dx element's gather: every region's bins, and the row loops."""
    regions, _, oh, ow = p.dy.sizes
    return regions * (oh * (ow + 1) + 1)


def roi_bin_iterations(p: RoiAlignGrad) -> int:
    """One ROI-gradient bin's loop: its samples (twice with MAX: the pick, then its slopes)."""
    cap = p.forward.samples_cap
    return cap * (cap + 1) * (2 if p.forward.maximum else 1)


def _check_budget(p: RoiAlignGrad) -> int:
    if p.dx is None:  # (the ROI gradient alone: a bin's samples, ROI_BIN_ITERATIONS at most)
        return roi_bin_iterations(p)
    per = iterations(p)
    if per + _OVERHEAD > LOOP_BUDGET:
        regions, _, oh, ow = p.dy.sizes
        raise UnsupportedError(
            f"{p.forward.op}: each output_gradient_tensor element gathers over NumROIs x OutputHeight x "
            f"OutputWidth = {regions} x {oh} x {ow} bins ({per} loop iterations), past one invocation's loop budget "
            f"({LOOP_BUDGET}); fewer regions or smaller outputs per call")
    return per


class RoiAlignGradFamily(GatherRunsFamily):
    """The gather (module docstring) over a `RoiAlignGrad`."""

    def per_element(self, problem: RoiAlignGrad) -> int:
        return _check_budget(problem)

    def op_of(self, problem: RoiAlignGrad) -> str:
        return problem.forward.op

    def count_of(self, problem: RoiAlignGrad) -> int:
        return (problem.dx or problem.dy).element_count

    def plan(self, p: RoiAlignGrad, caps, strategy: str, run=None) -> KernelPlan:
        length = self.run_for(p, caps, strategy, run)
        f = p.forward
        bits = element_bits(p.dy)
        regions, channels, oh, ow = p.dy.sizes
        image = p.dx.sizes if p.dx is not None else f.input.sizes
        _, _, h, w = image
        table_x = regions * oh * h
        rs = f.rois.effective_strides
        layout = f.input if p.has_input else p.dx
        uniforms = {"count": 0, "run": length, "in_sizes": image, "in_strides": layout.effective_strides,
                    "dx_strides": (p.dx or layout).effective_strides, "out_sizes": p.dy.sizes,
                    "dy_strides": p.dy.effective_strides, "roi_stride": rs[-2], "coord_stride": rs[-1],
                    "index_stride": f.batch_indices.effective_strides[-1],
                    "scale_x": f32_bits(f.spatial_scale[0]), "scale_y": f32_bits(f.spatial_scale[1]),
                    "in_offset": f32_bits(f.input_pixel_offset), "out_offset": f32_bits(f.output_pixel_offset),
                    "oob": f32_bits(0.0), "min_samples": min(f.min_samples, f.samples_cap),
                    "max_samples": f.samples_cap, "table_x": table_x}
        first = 1 if p.has_input else 0  # (the inputs: InputTensor where given, dy, the regions, the indices)
        regions_in = (input_buffer(first + 1, "rois"), input_buffer(first + 2, "batch"))
        params = {"bits": bits, "maximum": f.maximum, "nearest": f.nearest, "corners": f.align_corners}
        dispatches, scratch = [], []
        if p.dx is not None:
            count = p.dx.element_count
            if f.maximum:
                pre, pre_count, words = "argmax", p.dy.element_count, 4 * p.dy.element_count
                pre_buffers = (input_buffer(0, "input"), *regions_in, scratch_buffer(0, "tables", writable=True))
            else:
                pre, pre_count, words = "tables", table_x + regions * ow * w, table_x + regions * ow * w
                pre_buffers = (*regions_in, scratch_buffer(0, "tables", writable=True))
            gather = (output_buffer(0, "output", bits, "stores"), input_buffer(first, "dy"), *regions_in,
                      scratch_buffer(0, "tables", writable=False))
            dispatches += [
                Dispatch("roi_align_grad.wgsl.j2", {**params, "step": pre}, pre_buffers,
                         {**uniforms, "count": pre_count, "run": 1}, pre_count, WORKGROUP_SIZE),
                Dispatch("roi_align_grad.wgsl.j2", {**params, "step": "gather"}, gather,
                         {**uniforms, "count": count}, -(-count // length), WORKGROUP_SIZE)]
            scratch.append(4 * words)
        if p.droi is not None:
            dispatches += _roi_dispatches(p, params, uniforms, regions_in, len(scratch), 0 if p.dx is None else 1)
            bins = channels * oh * ow
            parts = -(-bins // ROI_CHUNK)
            scratch.append(4 * (4 * p.dy.element_count + (4 * regions * parts if parts > 1 else 0)))
        return KernelPlan(tuple(dispatches), scratch_bytes=tuple(scratch))


def _roi_dispatches(p: RoiAlignGrad, params: dict, uniforms: dict, regions_in: tuple, scratch: int,
                    output: int) -> list:
    """The ROI gradient's dispatches (module docstring): `roi_bins`, then `roi_sum` (with
    `roi_partials` before it where a region has more than ROI_CHUNK bins)."""
    regions, channels, oh, ow = p.dy.sizes
    bins = channels * oh * ow
    parts = -(-bins // ROI_CHUNK)
    if parts > ROI_CHUNK:
        raise UnsupportedError(f"{p.forward.op}: output_roi_gradient_tensor sums C x OutputHeight x OutputWidth = "
                               f"{channels} x {oh} x {ow} bins per region, more than {ROI_CHUNK} x {ROI_CHUNK}")
    rs = p.droi.effective_strides
    sums = {**uniforms, "bins": bins, "chunk": ROI_CHUNK, "parts": parts, "partial_base": 4 * p.dy.element_count,
            "droi_stride": rs[-2], "droi_coord_stride": rs[-1]}
    count = p.dy.element_count
    writes = scratch_buffer(scratch, "bins", writable=True)
    out = [Dispatch("roi_align_grad.wgsl.j2", {**params, "step": "roi_bins"},
                    (input_buffer(0, "input"), input_buffer(1, "dy"), *regions_in, writes),
                    {**uniforms, "count": count}, count, WORKGROUP_SIZE)]
    if parts > 1:
        out.append(Dispatch("roi_align_grad.wgsl.j2", {**params, "step": "roi_partials"}, (writes,),
                            {**sums, "count": 4 * regions * parts}, 4 * regions * parts, WORKGROUP_SIZE))
    out.append(Dispatch("roi_align_grad.wgsl.j2", {**params, "step": "roi_sum", "staged": parts > 1},
                        (output_buffer(output, "output", params["bits"], "stores"),
                         scratch_buffer(scratch, "bins", writable=False)),
                        {**sums, "count": 4 * regions}, 4 * regions, WORKGROUP_SIZE))
    return out


FAMILY = RoiAlignGradFamily()
__all__ = ["FAMILY", "RoiAlignGrad", "iterations"]
