"""The kernels of DML_DEPTH_TO_SPACE(1) and DML_SPACE_TO_DEPTH(1): pure index maps between a
deep tensor [N, C * b * b, H, W] and a shallow one [N, C, H * b, W * b] (b the block size).

With (i, j) the position inside a b x b block and c the shallow channel, the deep channel
is (i * b + j) * C + c in DEPTH_COLUMN_ROW order, (c * b + i) * b + j in COLUMN_ROW_DEPTH
order (types.DepthSpaceOrder). Either way the map is a permutation of a 6-D view of both
tensors, so an operator alone is a strided copy: its output split into 6 axes (the shallow
side's H and W each into (h, i) and (w, j)), the source's strides permuted onto them
(`plan`, no stage left in the kernel), axes merged where both layouts allow. In a graph's
fused chain (no axis merges) it is the stage of shaders/depth_to_space.wgsl.j2 or
shaders/space_to_depth.wgsl.j2 over the desc's own four axes (`stage`).
"""

from __future__ import annotations

from ...tensor_desc import TensorDesc, merge_axes
from ...types import DepthSpaceOrder
from ..base import element_bits
from ..builder import KernelPlan
from ..chain import StageRule, chain
from .family import STRATEGIES, MovementPlanner, chain_plan, check_block
from .family import strategies_for as movement_strategies

DCR, CRD = DepthSpaceOrder.DEPTH_COLUMN_ROW, DepthSpaceOrder.COLUMN_ROW_DEPTH
#: Interleave strategy (the `kernel` of shaders/depth_to_space.wgsl.j2 and
#: space_to_depth.wgsl.j2): steps (b 16-byte blocks in, b out) per invocation, and the
#: block sizes it is compiled for.
INTERLEAVE_STEPS = 64
INTERLEAVE_BLOCKS = (2, 3, 4)


def order_of(desc) -> DepthSpaceOrder:
    """The desc's order (DML_DEPTH_TO_SPACE and DML_SPACE_TO_DEPTH have none: DEPTH_COLUMN_ROW)."""
    return DepthSpaceOrder(getattr(desc, "order", DCR))


def deep_channel_strides(order: DepthSpaceOrder, b: int, channels: int, stride: int) -> tuple[int, int, int]:
    """The deep tensor's strides for (c, i, j), given its channel stride: where the deep
    channel of shallow channel c at block position (i, j) lies."""
    if order == DCR:
        return stride, b * channels * stride, channels * stride
    return b * b * stride, b * stride, stride


class SpaceDepthPlanner(MovementPlanner):
    """DEPTH_TO_SPACE (`to_space` True: the input is the deep tensor) or SPACE_TO_DEPTH."""

    def __init__(self, to_space: bool):
        self.to_space = to_space
        self.strategies = ("interleave",) + STRATEGIES

    def strategies_for(self, desc, caps, block: str | None = None) -> tuple[str, ...]:
        """`interleave` where it applies (both tensors packed, b 2 to 4, the deep tensor's
        width a whole number of 16-byte blocks), first on CPU adapters and last on GPUs:
        DepthToSpace's 6-D copy reads 2 to 4 elements apart, in stretches that short
        (lavapipe, gpudml lab, [8, 256, 64, 64] float32, b 2, the copy kernel's bandwidth:
        stretches 0.32x, elements 0.33-0.46x, interleave 0.80-1.01x; 16, 64 or 256 steps per
        invocation within noise; SpaceToDepth [8, 64, 128, 128] b 2: stretches 0.37-0.74x,
        interleave 1.05-1.22x). Then the data-movement strategies."""
        check_block(block)
        rest = movement_strategies(desc.output_tensor, caps)
        if not self._interleaves(desc):
            return rest
        return ("interleave",) + rest if caps is None or caps.is_software else rest + ("interleave",)

    def _interleaves(self, desc) -> bool:
        inp, out = desc.input_tensor, desc.output_tensor
        deep = inp if self.to_space else out
        return (desc.block_size in INTERLEAVE_BLOCKS and inp.is_packed and out.is_packed
                and deep.sizes[3] % (128 // element_bits(inp)) == 0)

    def stage(self, desc) -> StageRule:
        """The map over the desc's four axes: channel, height and width move (not rowwise
        for DEPTH_TO_SPACE, whose channel depends on the width coordinate)."""
        b = desc.block_size
        shallow = desc.output_tensor if self.to_space else desc.input_tensor
        order = "dcr" if order_of(desc) == DCR else "crd"
        if self.to_space:
            return StageRule("depth_to_space.wgsl.j2", params={"axes": (1, 2, 3), "order": order, "rowwise": False},
                             uniforms={"block": b, "channels": shallow.sizes[1]})
        return StageRule("space_to_depth.wgsl.j2", params={"axes": (1, 2, 3), "order": order},
                         uniforms={"block": b, "channels": shallow.sizes[1]}, unit=b == 1)

    def plan(self, desc, caps, strategy: str, block: str | None = None) -> KernelPlan:
        """A strided copy over the 6-D view (module docstring), merged where contiguous;
        `interleave`: the stage's own kernel over the desc's axes."""
        if strategy == "interleave":
            return self._interleave_plan(desc)
        sizes, out_strides, source = self.view(desc)
        axes = merge_axes(sizes, out_strides, source)
        kernel_out = TensorDesc(desc.output_tensor.data_type, [a.size for a in axes], [a.strides[0] for a in axes])
        return chain_plan(strategy, kernel_out, chain([], [a.strides[1] for a in axes]), block=block)

    def _interleave_plan(self, desc) -> KernelPlan:
        inp, out = desc.input_tensor, desc.output_tensor
        rule = self.stage(desc)
        rule = StageRule(rule.op, {**rule.params, "interleave": desc.block_size}, rule.uniforms)
        deep, shallow = (inp, out) if self.to_space else (out, inp)
        blocks = deep.sizes[3] // (128 // element_bits(inp))  # per row of the deep tensor
        rows = shallow.sizes[0] * shallow.sizes[1] * shallow.sizes[2]  # of the shallow tensor
        return chain_plan("interleave", out, chain([rule], inp.effective_strides), input_blocks=True,
                          uniforms={"il_rows": rows, "il_steps": INTERLEAVE_STEPS},
                          invocations=-(-rows * blocks // INTERLEAVE_STEPS))

    def view(self, desc) -> tuple[list[int], list[int], list[int]]:
        """(sizes, output strides, input strides) of the 6-D view in the output's order."""
        b = desc.block_size
        order = order_of(desc)
        deep, shallow = (desc.input_tensor, desc.output_tensor) if self.to_space else \
            (desc.output_tensor, desc.input_tensor)
        n, channels, height, width = shallow.sizes
        height, width = height // b, width // b
        dn, dc, dh, dw = deep.effective_strides
        sn, sc, sh, sw = shallow.effective_strides
        c_deep, i_deep, j_deep = deep_channel_strides(order, b, channels, dc)
        if self.to_space:  # output [N, C, H, b(i), W, b(j)]
            sizes = [n, channels, height, b, width, b]
            return sizes, [sn, sc, b * sh, sh, b * sw, sw], [dn, c_deep, dh, i_deep, dw, j_deep]
        # output: the deep channel split in the order its channels are laid out
        if order == DCR:  # [N, b(i), b(j), C, H, W]
            return ([n, b, b, channels, height, width], [dn, i_deep, j_deep, c_deep, dh, dw],
                    [sn, sh, sw, sc, b * sh, b * sw])
        return ([n, channels, b, b, height, width], [dn, c_deep, i_deep, j_deep, dh, dw],  # [N, C, b, b, H, W]
                [sn, sc, sh, sw, b * sh, b * sw])


DEPTH_TO_SPACE = SpaceDepthPlanner(to_space=True)
SPACE_TO_DEPTH = SpaceDepthPlanner(to_space=False)
