"""The region family (DML_ROI_ALIGN, DML_ROI_ALIGN1; DML_ROI_POOLING: ops/roi_pooling.py,
shaders/roi_pooling.wgsl.j2, the maximum over each output's bin of whole pixels).

ROI align: each output element [r, c, y, x] of
[NumROIs, C, OH, OW] reduces (average or maximum) a regular grid of samples of channel c of
image BatchIndices[r] of the input [N, C, H, W] inside region r (ROITensor[r] = [x1, y1,
x2, y2], scaled by SpatialScaleX/Y), each sample interpolated (bilinear or nearest).

Per region and axis (x shown; ops/roi_align.py's docstring has the whole rule and gpudml's
choices where DirectML's page is silent): x1 = roi[0] * sx and size = roi[2] * sx - x1 in
float32; n = clamp(ceil(|size| / OW), MinimumSamplesPerOutput, min(MaximumSamplesPerOutput,
SAMPLE_CAP)) samples per output (the ceiling exact for the float32 size; a NaN size takes
the minimum, an infinite one the maximum); step = size / (OW * n), or size / max(OW * n -
1, 1) with AlignRegionsToCorners; sample s = x * n + i at (s - OutputPixelOffset) * step +
x1 - InputPixelOffset. A sample outside [-1, W] on either axis (or at a NaN coordinate, or
of a batch index outside [0, N)) is OutOfBoundsInputValue; otherwise the coordinate clamps
into [0, W - 1] and reads bilinearly (ONNX RoiAlign's rule) or its nearest pixel (ties to
the larger index). Average sums in float32 and divides by the sample count; maximum
propagates NaN. float16 tensors are read exactly and rounded once on the store.

Each output is written by exactly one invocation (epilogue.OutputRunsFamily): ROI align's
`runs` (CPU-class) gives an invocation one output bin (r, y, x) of a block of consecutive
channels (`run` of them, within the loop budget, base.LOOP_BUDGET: the samples per output
are data-dependent, so the block is sized for the cap), whose sample positions, taps and
weights it computes once and reads in every channel (ONNX Runtime's CPU kernel shares
them so too); ROI pooling's `runs` a run of consecutive outputs; `elements` (GPU-class)
one output per invocation. The store epilogue applies element-wise consumers.
"""

from __future__ import annotations

from typing import NamedTuple

from ..tensor_desc import TensorDesc
from .base import LOOP_BUDGET, element_bits
from .builder import Dispatch, KernelPlan, f32_bits, input_buffer, output_buffer
from .epilogue import OutputRunsFamily

#: Samples per output along each axis at most: the loop budget of one invocation
#: (64 x 65 loop iterations per output), whatever MaximumSamplesPerOutput says.
SAMPLE_CAP = 64
WORKGROUP_SIZE = 64


class RoiAlign(NamedTuple):
    """What the family computes (module docstring); floats as Python floats (float32 values)."""

    op: str
    input: TensorDesc
    rois: TensorDesc
    batch_indices: TensorDesc
    output: TensorDesc
    spatial_scale: tuple[float, float]  # (x, y)
    input_pixel_offset: float
    output_pixel_offset: float
    out_of_bounds_value: float
    min_samples: int
    max_samples: int
    align_corners: bool
    maximum: bool  # the reduction: MAX (else AVERAGE)
    nearest: bool  # the interpolation: NEAREST_NEIGHBOR (else LINEAR)

    @property
    def samples_cap(self) -> int:
        """Samples per output axis at most (MaximumSamplesPerOutput, at most SAMPLE_CAP)."""
        return max(1, min(self.max_samples, SAMPLE_CAP))


class RoiPool(NamedTuple):
    """DML_ROI_POOLING (module docstring of ops/roi_pooling.py): the input [N, C, H, W], the
    regions [1, 1, NumROIs, 5] of [batch, x1, y1, x2, y2], the output [NumROIs, C, PH, PW]."""

    op: str
    input: TensorDesc
    rois: TensorDesc
    output: TensorDesc
    spatial_scale: float


class RoiFamily(OutputRunsFamily):
    """The region family over a `RoiAlign` or a `RoiPool` (epilogue.OutputRunsFamily: `runs`,
    `elements`, the store epilogue)."""

    def iterations(self, problem) -> int:
        """One output: ROI align's n_y rows of n_x samples and the row loop (the sample
        counts at their cap); ROI pooling's bin, at most the whole plane, and its row loop."""
        if isinstance(problem, RoiPool):
            _, _, h, w = problem.input.sizes
            return h * (w + 1)
        n = problem.samples_cap
        return 2 * n * n  # (per channel of a `runs` block: n * n * (lanes + 1) + n + 2 lanes in all)

    def input_count(self, problem) -> int:
        """ROI align's input, regions and batch indices; ROI pooling's input and regions."""
        return 2 if isinstance(problem, RoiPool) else 3

    def too_long(self, problem) -> str:  # (ROI align's 64 x 65 iterations always fit)
        return (f"{problem.op}: an input plane of {list(problem.input.sizes[2:])} takes up to "
                f"{self.iterations(problem)} loop iterations per output (a region over the whole plane), past one "
                f"invocation's loop budget ({LOOP_BUDGET - self.OVERHEAD})")

    def plan_runs(self, p, caps, strategy: str, length: int) -> KernelPlan:
        if isinstance(p, RoiPool):
            return _plan_pool(p, length)
        bits = element_bits(p.input)
        count = p.output.element_count
        rs = p.rois.effective_strides
        r, channels, oh, ow = p.output.sizes
        lanes = min(length, channels) if strategy == "runs" else 0
        if lanes:  # one bin of `lanes` channels per invocation
            count = r * oh * ow * -(-channels // lanes)
            length = 1
        params = {"bits": bits, "index_bits": element_bits(p.batch_indices), "maximum": p.maximum,
                  "nearest": p.nearest, "corners": p.align_corners, "lanes": lanes}
        uniforms = {"count": count, "run": length, "channels": channels, "out_sizes": p.output.sizes,
                    "out_strides": p.output.effective_strides, "in_sizes": p.input.sizes,
                    "in_strides": p.input.effective_strides, "roi_stride": rs[-2], "coord_stride": rs[-1],
                    "index_stride": p.batch_indices.effective_strides[-1],
                    "scale_x": f32_bits(p.spatial_scale[0]), "scale_y": f32_bits(p.spatial_scale[1]),
                    "in_offset": f32_bits(p.input_pixel_offset), "out_offset": f32_bits(p.output_pixel_offset),
                    "oob": f32_bits(p.out_of_bounds_value), "min_samples": min(p.min_samples, p.samples_cap),
                    "max_samples": p.samples_cap}
        buffers = (output_buffer(0, "output", bits, "stores"), input_buffer(0, "input"), input_buffer(1, "rois"),
                   input_buffer(2, "batch"))
        return KernelPlan((Dispatch("roi_align.wgsl.j2", params, buffers, uniforms, -(-count // length),
                                    WORKGROUP_SIZE),))


def _plan_pool(p: RoiPool, length: int) -> KernelPlan:
    bits = element_bits(p.input)
    count = p.output.element_count
    rs = p.rois.effective_strides
    uniforms = {"count": count, "run": length, "out_sizes": p.output.sizes, "out_strides": p.output.effective_strides,
                "in_sizes": p.input.sizes, "in_strides": p.input.effective_strides, "roi_stride": rs[-2],
                "coord_stride": rs[-1], "scale": f32_bits(p.spatial_scale)}
    buffers = (output_buffer(0, "output", bits, "stores"), input_buffer(0, "input"), input_buffer(1, "rois"))
    return KernelPlan((Dispatch("roi_pooling.wgsl.j2", {"bits": bits}, buffers, uniforms, -(-count // length),
                                WORKGROUP_SIZE),))


FAMILY = RoiFamily()
