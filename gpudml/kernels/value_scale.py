"""The value-scale family (DML_VALUE_SCALE_2D): output element [n, c, h, w] = scale *
input[n, c, h, w] + bias[c] over a 4-D NCHW tensor, the scale and the per-channel bias
DirectML FLOATs given in the description rather than tensors.

The element-wise family's formulas read tensors and scalar attributes, not a constant per
channel: this small family decodes each output element's coordinates (its channel among
them), reads the input through its own strides (stride 0 broadcasts) and stores through
the output's. The scale travels as its float32 bits (`scale`, a scalar uniform, bitcast in
WGSL), the bias as the float32 bits of one vec4 of the uniform buffer (`bias`, padded with
zeros): DirectML allows 1 or 3 channels (the page: ChannelCount "must be set to either 1 or
3"), so a new bias or scale compiles nothing and the uniform never grows. A problem of more
than MAX_CHANNELS channels is an UnsupportedError (the operator's validation already
refuses it). FLOAT32 and FLOAT16 compute in float32 (float16 read exactly, rounded once on
the store).

Strategies: `runs` (CPU-class) gives an invocation RUN consecutive outputs, `elements`
(GPU-class) one output each, neighbours on neighbouring outputs; `runs` first on software
adapters and without caps. The store epilogue (kernels/epilogue.py) applies element-wise
consumers in the store.
"""

from __future__ import annotations

from typing import NamedTuple

from ..errors import InternalError, UnsupportedError
from ..tensor_desc import TensorDesc
from .base import RUNS_ELEMENTS, RunsFamily, element_bits, run_length, runs_order
from .builder import Dispatch, KernelPlan, f32_bits, input_buffer, output_buffer
from .epilogue import ElementStores

STRATEGIES = RUNS_ELEMENTS
#: Outputs per `runs` invocation.
RUN = 64
WORKGROUP_SIZE = 64
#: The most channels the bias uniform holds (one vec4; DirectML allows 1 or 3).
MAX_CHANNELS = 4


class ValueScale(NamedTuple):
    """What the family computes (module docstring): `input` and `output` 4-D of one shape,
    each with its own strides; `scale` and `bias` (one per channel) float32 values."""

    op: str
    input: TensorDesc
    output: TensorDesc
    scale: float
    bias: tuple[float, ...]



def _run(p: ValueScale, strategy: str, run) -> int:
    return run_length(p.op, strategy, run, p.output.element_count, RUN)


def strategies_for(p: ValueScale, caps, run=None) -> tuple[str, ...]:
    """Both strategies (`runs` first on software adapters and without caps, `elements` first
    on GPUs), for up to MAX_CHANNELS channels of FLOAT32 or FLOAT16."""
    if len(p.bias) > MAX_CHANNELS or p.input.rank != 4 or not p.input.data_type.is_float \
            or element_bits(p.input) > 32:
        raise UnsupportedError(f"{p.op}: the value-scale kernel takes 4-D FLOAT32 or FLOAT16 tensors of at most "
                               f"{MAX_CHANNELS} channels (got {p.input.data_type.name} sizes "
                               f"{list(p.input.sizes)}, {len(p.bias)} biases)")
    _run(p, "runs", run)
    return runs_order(caps)


def plan(p: ValueScale, caps, strategy: str, run=None) -> KernelPlan:
    if strategy not in strategies_for(p, caps, run):
        raise InternalError(f"{p.op}: strategy {strategy} cannot run {p}")
    bits = element_bits(p.input)
    length = _run(p, strategy, run)
    count = p.output.element_count
    bias = tuple(f32_bits(b) for b in p.bias) + (0,) * (MAX_CHANNELS - len(p.bias))
    uniforms = {"count": count, "run": length, "scale": f32_bits(p.scale), "bias": bias,
                "out_sizes": p.output.sizes, "out_strides": p.output.effective_strides,
                "in_strides": p.input.effective_strides}
    buffers = (output_buffer(0, "output", bits, "stores"), input_buffer(0, "input"))
    return KernelPlan((Dispatch("value_scale_2d.wgsl.j2", {"bits": bits}, buffers, uniforms,
                                -(-count // length), WORKGROUP_SIZE),))


class ValueScaleFamily(ElementStores, RunsFamily):
    """The value-scale family: the module's functions over a `ValueScale`, with the store
    epilogue (ElementStores)."""

    def strategies_for(self, problem: ValueScale, caps, run=None) -> tuple[str, ...]:
        return strategies_for(problem, caps, run)

    def plan(self, problem: ValueScale, caps, strategy: str, run=None) -> KernelPlan:
        return plan(problem, caps, strategy, run)



FAMILY = ValueScaleFamily()
