"""The dequantize family (DML_DEQUANTIZE, FL 6.3): output element o = (input[o] - zero_point[q])
* scale[q], q the element's block: q_d = o_d / (output size_d / scale size_d) on every axis
(gpudml/ops/dequantize.py). The input is 8-bit (INT8, UINT8) or 4-bit (INT4, UINT4 given as
their bytes: two elements a byte, the even one in the low nibble, each row of the last axis
starting on a byte); a 4-bit zero point is packed the same way or one element a byte (its low
nibble). Integers are read sign- or zero-extended (4-bit: sign-extended from bit 3 for INT4),
the difference taken in i32 (exact) and converted to f32 (exact: |difference| <= 510), the
product with the scale (FLOAT32, or FLOAT16 read exactly) rounded once to f32, and for a
FLOAT16 output rounded to float16 on the store.

Strategies: `runs` (CPU-class) gives an invocation a run of consecutive outputs, `elements`
(GPU-class) one output each (epilogue.OutputRunsFamily); the store epilogue applies a graph's
element-wise consumers in the store. Every tensor is read through its own strides (a stride 0
broadcasts), the input's and the zero point's in bytes.
"""

from __future__ import annotations

from typing import NamedTuple

from ..tensor_desc import TensorDesc
from .base import element_bits
from .builder import Dispatch, KernelPlan, input_buffer, output_buffer
from .epilogue import OutputRunsFamily

WORKGROUP_SIZE = 64


class Dequantize(NamedTuple):
    """What the family computes (module docstring): `input` (8-bit, or `bits` 4: its last size
    half the output's), `scale` and `zero_point` (None: 0; `zero_packed`: a 4-bit zero point
    two a byte) of the output's rank with sizes dividing its, `output` FLOAT32 or FLOAT16."""

    op: str
    input: TensorDesc
    scale: TensorDesc
    zero_point: TensorDesc | None
    output: TensorDesc
    bits: int
    zero_packed: bool


class DequantizeFamily(OutputRunsFamily):
    """The dequantize family over a `Dequantize` (OutputRunsFamily: `runs`, `elements`, the store epilogue)."""

    RUN = 64

    def iterations(self, problem: Dequantize) -> int:
        return 1

    def too_long(self, problem: Dequantize) -> str:  # pragma: no cover (one iteration an output)
        return f"{problem.op}: an output takes no loop"

    def input_count(self, problem: Dequantize) -> int:
        return 2 if problem.zero_point is None else 3

    def plan_runs(self, p: Dequantize, caps, strategy: str, length: int) -> KernelPlan:
        out = p.output
        count = out.element_count
        ratio = tuple(n // s for n, s in zip(out.sizes, p.scale.sizes, strict=True))
        params = {"rank": out.rank, "bits": element_bits(out), "scale_bits": element_bits(p.scale),
                  "signed": p.input.data_type.is_signed, "four": p.bits == 4, "zero": p.zero_point is not None,
                  "zero_packed": p.zero_packed}
        uniforms = {"count": count, "run": length, "out_sizes": out.sizes, "out_strides": out.effective_strides,
                    "in_strides": p.input.effective_strides, "scale_strides": p.scale.effective_strides,
                    "ratio": ratio}
        buffers = [output_buffer(0, "output", element_bits(out), "stores"), input_buffer(0, "input"),
                   input_buffer(1, "scale")]
        if p.zero_point is not None:
            uniforms["zero_strides"] = p.zero_point.effective_strides
            buffers.append(input_buffer(2, "zero_point"))
        return KernelPlan((Dispatch("dequantize.wgsl.j2", params, tuple(buffers), uniforms, -(-count // length),
                                    WORKGROUP_SIZE),))


FAMILY = DequantizeFamily()
