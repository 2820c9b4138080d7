"""The kernels of DML_UNFOLD (im2col): the index rule of shaders/unfold.wgsl.j2 on a view
of the output [N, C * prod(W), L] as [N, C, W_1..W_D, B_1..B_D] (window positions and blocks
apart, row-major as the output flattens them): block coordinate b_d of window position w_d
reads input coordinate b_d * stride + w_d * dilation - start_padding on spatial axis d, and
zero outside the input (a fill, as a CONSTANT padding's). Where no block reads outside the
input (no start padding, the last window inside), the map is affine: a strided copy with
no stage, its axes merged where contiguous.

The stage reads the window coordinates beside the block ones, so it is no stage of a chain
over the desc's own axes (its output has 3 dimensions, its input 2 + D): UNFOLD runs alone,
its kernel the movement family's (every strategy, bit-exact for every type), and `stage`
returns None, so graphs do not fuse it into data-movement chains."""

from __future__ import annotations

import math

from ...tensor_desc import TensorDesc, merge_axes
from ..base import element_bits
from ..builder import KernelPlan
from ..chain import StageRule, chain
from .family import MovementPlanner, chain_plan


class UnfoldPlanner(MovementPlanner):
    def stage(self, desc) -> None:
        """None: the rule changes the rank (module docstring), a chain's stages share one."""
        return None

    def plan(self, desc, caps, strategy: str, block: str | None = None) -> KernelPlan:
        inp, out = desc.input_tensor, desc.output_tensor
        count = inp.rank - 2
        window, blocks = desc.window_sizes, _blocks(desc)
        n_stride, k_stride, l_stride = out.effective_strides
        w_strides = [k_stride * math.prod(window[d + 1:]) for d in range(count)]
        b_strides = [l_stride * math.prod(blocks[d + 1:]) for d in range(count)]
        sizes = [out.sizes[0], inp.sizes[1], *window, *blocks]
        kernel_out = TensorDesc(out.data_type, sizes,
                                [n_stride, k_stride * math.prod(window), *w_strides, *b_strides])
        in_strides = inp.effective_strides
        if _inside(desc, blocks):
            # Every read is inside the input: an affine map (window axis d steps dilations[d]
            # input elements, block axis d strides[d]), a strided copy with no stage whose
            # axes merge where contiguous in both tensors.
            source = [in_strides[0], in_strides[1],
                      *(d * s for d, s in zip(desc.dilations, in_strides[2:], strict=True)),
                      *(t * s for t, s in zip(desc.strides, in_strides[2:], strict=True))]
            axes = merge_axes(kernel_out.sizes, source, kernel_out.effective_strides)
            merged = TensorDesc(out.data_type, [a.size for a in axes], [a.strides[1] for a in axes])
            return chain_plan(strategy, merged, chain([], [a.strides[0] for a in axes]), block=block)
        source = [in_strides[0], in_strides[1], *([0] * count), *in_strides[2:]]
        zeros = (0,) * (2 + count)
        rule = StageRule("unfold.wgsl.j2",
                         params={"axes": tuple(range(2 + count, 2 + 2 * count)), "count": count, "fills": True,
                                 "bits": element_bits(inp)},
                         uniforms={"unf_strides": zeros + desc.strides, "unf_dil": zeros + desc.dilations,
                                   "unf_pad": zeros + desc.start_padding, "unf_in": zeros + inp.sizes[2:]})
        return chain_plan(strategy, kernel_out, chain([rule], source), block=block)


def _inside(desc, blocks) -> bool:
    """No start padding, and the last block's last window position inside the input: no fill."""
    return not any(desc.start_padding) and all(
        (b - 1) * t + (w - 1) * d < n for b, t, w, d, n in
        zip(blocks, desc.strides, desc.window_sizes, desc.dilations, desc.input_tensor.sizes[2:], strict=True))


def _blocks(desc) -> list[int]:
    """Blocks per spatial axis (ops/unfold.py's Blocks.per_axis; validated descs only)."""
    return [(n + a + b - d * (w - 1) - 1) // s + 1 for n, w, s, d, a, b in zip(
        desc.input_tensor.sizes[2:], desc.window_sizes, desc.strides, desc.dilations, desc.start_padding,
        desc.end_padding, strict=True)]


UNFOLD = UnfoldPlanner()
