"""The kernels of DML_PADDING and DML_PADDING1 (one Planner for both: a Padding1 desc has
Padding's fields, and each gives its CONSTANT element's bits through `fill_bits()`): the
index rule of shaders/padding.wgsl.j2, an output coordinate folded back into the input
(or to the fill) per padded axis."""

from __future__ import annotations

import dataclasses

from ...errors import UnsupportedError
from ...tensor_desc import TensorDesc, merge_axes
from ...types import PaddingMode
from ..base import element_bits
from ..builder import KernelPlan
from ..chain import StageRule, chain
from .family import MovementPlanner, chain_plan

UINT32_MAX = 2**32 - 1


class PaddingPlanner(MovementPlanner):
    def stage(self, desc) -> StageRule:
        """Every axis of the desc as a stage of a chain (fused graphs: no axis merges)."""
        rule = _stage(desc, [(i,) for i in range(desc.input_tensor.rank)], desc.input_tensor.sizes)
        return dataclasses.replace(rule, interior=tuple(zip(desc.start_padding, desc.input_tensor.sizes,
                                                            strict=True)))

    def plan(self, desc, caps, strategy: str, block: str | None = None) -> KernelPlan:
        """Unpadded neighbours contiguous in both tensors merge and size-1 axes drop: the
        stage runs on those kernel axes."""
        inp, out = desc.input_tensor, desc.output_tensor
        padded = {i for i, (s, e) in enumerate(zip(desc.start_padding, desc.end_padding)) if s or e}
        axes = merge_axes(out.sizes, inp.effective_strides, out.effective_strides, fixed=padded)
        stage = _stage(desc, [a.axes for a in axes], [a.size for a in axes])
        kernel_out = TensorDesc(inp.data_type, [a.size for a in axes], [a.strides[1] for a in axes])
        return chain_plan(strategy, kernel_out, chain([stage], [a.strides[0] for a in axes]), block=block)


def _stage(desc, axes, sizes) -> StageRule:
    """The stage over kernel axes `axes` (each the original axes it stands for) of sizes
    `sizes`: per axis the start padding, the input size and the fold period (an unpadded
    axis has no padding and the merged size).

    The period is 2(n-1) for REFLECTION (1 when n == 1, so that no modulo is by zero),
    2n for SYMMETRIC and n for WRAP. `fold` compiles in the modulo only when some axis of
    size > 1 reaches a coordinate a whole period away (padding >= n or so); a size-1 axis
    never needs it (the kernel clamps to its single element).
    """
    inp, mode = desc.input_tensor, desc.padding_mode
    mirror = 1 if mode == PaddingMode.SYMMETRIC else 0
    starts, in_sizes, periods, fold, padded = [], [], [], False, []
    for original, size in zip(axes, sizes, strict=True):
        (i,) = original if len(original) == 1 and (desc.start_padding[original[0]] or
                                                   desc.end_padding[original[0]]) else (None,)
        start, end, n = (desc.start_padding[i], desc.end_padding[i], inp.sizes[i]) if i is not None else (0, 0, size)
        if mode == PaddingMode.REFLECTION:
            period = max(2 * (n - 1), 1)
        elif mode == PaddingMode.SYMMETRIC:
            period = 2 * n
        elif mode == PaddingMode.WRAP:
            period = n
        else:
            period = 0
        if period > UINT32_MAX:
            op = type(desc).__name__.removesuffix("OperatorDesc")
            raise UnsupportedError(f"{op}: an input axis of {n} elements is too long to fold in 32 bits")
        # The largest mirrored coordinate x the kernel sees on this axis (see padding.wgsl.j2);
        # WRAP folds once for free (a padding up to n on either side).
        if mode == PaddingMode.WRAP:
            fold |= n > 1 and max(start, end) > n
        else:
            fold |= period > 0 and n > 1 and max(start - mirror, n - 1 + end) >= period
        if i is not None:
            padded.append(len(starts))
        starts.append(start)
        in_sizes.append(n)
        periods.append(period)
    value = desc.fill_bits() if mode == PaddingMode.CONSTANT else (0, 0)
    return StageRule(
        "padding.wgsl.j2", params={"axes": tuple(padded), "fills": mode == PaddingMode.CONSTANT, "mode": mode.name,
                                    "fold": fold, "bits": element_bits(inp)},
        uniforms={"pad_start": tuple(starts), "pad_in_sizes": tuple(in_sizes), "pad_periods": tuple(periods),
                  "pad_value_low": value[0], "pad_value_high": value[1]})


PADDING = PaddingPlanner()
