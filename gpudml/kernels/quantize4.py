"""The 4-bit quantize family (DML_QUANTIZE to INT4/UINT4, FL 6.3: gpudml/ops/quantize.py):
output byte o holds the quantized values of the input's elements 2 o_last and 2 o_last + 1
along the last axis (the even one in the low nibble; a row of odd length leaves its last
byte's high nibble 0), each y = clamp(round(x / scale) + zero_point, [-8, 7] (INT4) or
[0, 15] (UINT4)), the scale (and zero point) of element c read at q_d = c_d / (input size_d /
scale size_d) on every axis, as DEQUANTIZE reads them (kernels/dequantize.py). The rounding
is QUANTIZE's 8-bit one (lib/elementwise's quantize_f32_rn: the float32 quotient, half to
even; NaN 0, x / 0 saturating); a zero point is a byte per value (its low nibble,
sign-extended for INT4) or packed two a byte (`zero_packed`).

Strategies: `runs` (CPU-class) gives an invocation a run of consecutive output bytes,
`elements` (GPU-class) one byte each (epilogue.OutputRunsFamily); every tensor is read through
its own strides. A packed output under `runs` is written a whole word (4 bytes, 8 values) at a
time where its byte count is a multiple of 4 (no byte past the output is written; each
word's bytes' coordinates stepped from the first's); otherwise
each byte is stored through lib/elements' store (GL has no 8-bit stores: the byte written into
its word by atomic and/or), as with a store epilogue.
"""

from __future__ import annotations

from typing import NamedTuple

from ..tensor_desc import TensorDesc
from .base import element_bits
from .builder import Dispatch, KernelPlan, input_buffer, output_buffer
from .dequantize import DequantizeFamily
from .epilogue import attach, check

WORKGROUP_SIZE = 64


class Quantize4(NamedTuple):
    """What the family computes (module docstring): `input` FLOAT32/FLOAT16, `scale` (its
    type) and `zero_point` (None: 0; INT8/UINT8 bytes, one value a byte or `zero_packed`) of
    the input's rank with sizes dividing its, `output` the bytes (INT8: INT4, UINT8: UINT4),
    the input's sizes with the last (n + 1) // 2."""

    op: str
    input: TensorDesc
    scale: TensorDesc
    zero_point: TensorDesc | None
    output: TensorDesc
    zero_packed: bool


class Quantize4Family(DequantizeFamily):
    """The 4-bit quantize family over a `Quantize4` (DequantizeFamily's: `runs`, `elements`,
    the store epilogue, one iteration an output, the zero point the third input)."""

    def plan_with_epilogue(self, problem: Quantize4, caps, strategy: str, epilogue) -> KernelPlan:
        """Byte stores (the epilogue applies to each byte)."""
        check(epilogue, problem.output)
        plan = self.plan_runs(problem, caps, strategy, self.run_length(problem, strategy), words=False)
        return attach(plan, epilogue, self.input_count(problem))

    def plan_runs(self, p: Quantize4, caps, strategy: str, length: int, words: bool | None = None) -> KernelPlan:
        out = p.output
        count = out.element_count
        words = strategy == "runs" and out.is_packed and count % 4 == 0 if words is None else words
        units = -(-count // 4) if words else count  # (words: `length` bytes an invocation, whole words)
        length = -(-length // 4) if words else length
        ratio = tuple(n // s for n, s in zip(p.input.sizes, p.scale.sizes, strict=True))
        params = {"rank": out.rank, "in_bits": element_bits(p.input), "scale_bits": element_bits(p.scale),
                  "signed": out.data_type.is_signed, "zero": p.zero_point is not None, "zero_packed": p.zero_packed,
                  "words": words}
        uniforms = {"count": count, "units": units, "run": length, "in_last": p.input.sizes[-1], "out_sizes": out.sizes,
                    "out_strides": out.effective_strides, "in_strides": p.input.effective_strides,
                    "scale_strides": p.scale.effective_strides, "ratio": ratio}
        buffers = [output_buffer(0, "output", 8, "words" if words else "stores"), input_buffer(0, "input"),
                   input_buffer(1, "scale")]
        if p.zero_point is not None:
            uniforms["zero_strides"] = p.zero_point.effective_strides
            buffers.append(input_buffer(2, "zero_point"))
        return KernelPlan((Dispatch("quantize4.wgsl.j2", params, tuple(buffers), uniforms, -(-units // length),
                                    WORKGROUP_SIZE),))


FAMILY = Quantize4Family()
