"""A GEMM whose B is the value of a DEQUANTIZE (gpudml/fusion.py fuses the pair: ONNX Runtime's
DirectML execution provider maps MatMulNBits to this graph): B's elements are dequantized in
the GEMM's operand load, so that a 4-bit weight is never expanded in memory.

Strategies:

- `registers`, `workgroup`: the GEMM family's own kernels (kernels/gemm.py) with its operand
  hook (`Problem.operands`): shaders/lib/gemm_dequantize.wgsl.j2 gives `b_load(col, k)`, which
  reads B's element from the quantized bytes, the scale and the zero point of its block
  (element reads: no 16-byte blocks of B). Every product and sum as the GEMM of the
  dequantized value computes it (the same f32 value of each weight, the same order of k).
- `gemv` (decode-shaped, M = 1: MatMulNBits at one token): one invocation per GEMV_ROWS
  output columns walks their weight rows (the DEQUANTIZE's rows: B read transposed,
  MatMulNBits' layout) a 16-byte block of each at a time (32 4-bit or 16 8-bit elements), A
  as 16-byte blocks read once for all its rows, the scale and zero point once per block
  of the quantization, so that the packed weight is read once, at bandwidth. Per block it
  sums a_k (q_k - z) (the differences exact in f32) and adds that sum times the scale: the
  scale's product once per block instead of once per weight (a reassociation of the
  unfused GEMM's sum, within GEMM's documented precision). Measured on lavapipe (W67, 4096 x
  4096, blocks of 32, GPU timestamps, the machine shared): 4 rows 16 ms, 8 rows 8.6 ms, 16
  rows 31-35 ms (registers spill); the scale per weight 8.6 ms, per block 4.0 ms, beside a
  copy of the 8 MB weight in 1.9 ms. On a CPU adapter every load is a loop over the SIMD
  lanes (lavapipe's and llvmpipe's storage-buffer reads; perf on W67 put about two thirds
  of the kernel's time in those loops), so the kernel makes fewer of them: where the
  adapter has subgroups (lavapipe; not GL) and a subgroup holds the 8 (4-bit; 4 for 8-bit)
  A blocks of a step, lane l reads block l and subgroupBroadcast hands them on (one load a
  lane instead of 8); the scales of 4 blocks come as one 16-byte block (`_scale_quads`)
  and the zero points of 8 packed blocks (4 of one byte each) as one word (`_zero_words`)
  where the layout allows (W67's does: a row's scales and zero points fill whole blocks and words). The same
  values in the same order: the result's bits do not change (tests/test_nbits_models.py).
  W67 on lavapipe, idle host, interleaved: 7.9 -> 6.2 ms (0.26x the copy kernel). Each
  element is masked in place (not shifted out) and converted, its level (q - z) 16^t made
  exact by one fma, against A's value times 16^-t (powers of two: the same product, the
  same bits): GL 7.9 -> 7.4 ms, lavapipe unchanged within noise (6.2-6.4 ms). Where a block
  of the quantization is one 16-byte block (`one_quad`: 32 4-bit or 16 8-bit weights, W67's),
  its body is straight code, not a loop of one pass over uni.block_words (on a CPU adapter a
  loop of a run-time count costs its lanes' masks each pass): lavapipe 6.9 -> 5.5 CPU ms a
  call, GL 8.4 -> 6.6. Where the adapter has shader-int64 and a row's blocks pair up
  (`_wide`, builder.unit_access), the weight rows are read as 32-byte units (vec4<u64>, the builder's `wide`
  access: a read every other block, its halves split into words): on lavapipe a 32-byte
  read costs about 1.4 16-byte ones (timing-only kernels: the weight reads alone 1.75 ->
  1.25 ms), W67 5.5 -> 5.0 CPU ms. The same words in the same order: no bit changes.
  Offered first (both adapter classes) where it applies:
  a 2-D GEMM of one row, FLOAT32, A contiguous along K, the DEQUANTIZE's input rows packed
  (stride 1 along a row, rows of whole 16-byte blocks), its blocks along the row whole
  16-byte blocks (block_size a multiple of 32 for 4 bits, 16 for 8), one scale per row
  block (the scale's rows the output's columns), K within the loop budget. Unmeasured on a GPU (no
  device was lent): there a row per subgroup would spread K over lanes; the autotuner can time it
  against `workgroup`.

The GEMM's epilogue (alpha, C, its fused activation, a graph's element-wise steps in the
store) applies in every strategy.
"""

from __future__ import annotations

from typing import NamedTuple

from ..errors import InternalError, UnsupportedError
from . import gemm
from .base import LOOP_BUDGET, KernelFamily, element_bits
from .builder import Dispatch, KernelPlan, f32_bits, input_buffer, output_buffer, unit_access
from .dequantize import Dequantize
from .elementwise import attribute_uniforms
from .epilogue import attach as attach_epilogue
from .epilogue import check as check_epilogue

OPERANDS = "lib/gemm_dequantize.wgsl.j2"
GEMV_WORKGROUP = 64
#: `gemv`: the weight rows (outputs) of one invocation, which share its reads of A.
GEMV_ROWS = 8


class DequantizedGemm(NamedTuple):
    """`gemm`: the GEMM as the family sees it, B the DEQUANTIZE's 2-D value as the GEMM reads
    it; `dequantize`: the DEQUANTIZE; `b_rows_n`: the GEMM reads it transposed (its row r is
    the GEMM's column n)."""

    gemm: gemm.Problem
    dequantize: Dequantize
    b_rows_n: bool


def _operand_parts(p: DequantizedGemm) -> tuple[gemm.Problem, dict, tuple, dict]:
    """(the GEMM problem with the dequantizing operands, its extra uniforms, inputs, params)."""
    dq = p.dequantize
    out = dq.output
    has_c = p.gemm.c is not None
    uniforms = {"dq_in": dq.input.effective_strides, "dq_scale_s": dq.scale.effective_strides,
                "dq_ratio": tuple(n // s for n, s in zip(out.sizes, dq.scale.sizes, strict=True))}
    inputs = (input_buffer(2 + has_c, "dq_scale"),)
    if dq.zero_point is not None:
        uniforms["dq_zero_s"] = dq.zero_point.effective_strides
        inputs += (input_buffer(3 + has_c, "dq_zero"),)
    params = {"four": dq.bits == 4, "signed": dq.input.data_type.is_signed, "zero": dq.zero_point is not None,
              "zero_packed": dq.zero_packed, "b_rows_n": p.b_rows_n, "scale_bits": element_bits(dq.scale)}
    problem = gemm.Problem(p.gemm.op, p.gemm.a, p.gemm.b, p.gemm.c, p.gemm.output, p.gemm.alpha, p.gemm.beta,
                           p.gemm.activation, p.gemm.activation_attributes, OPERANDS)
    return problem, uniforms, inputs, params


def gemv_fits(p: DequantizedGemm) -> bool:
    """Does the `gemv` strategy apply (module docstring)?"""
    g, dq = p.gemm, p.dequantize
    if g.output.rank != 2 or g.output.sizes[0] != 1 or not p.b_rows_n or element_bits(g.output) != 32:
        return False
    if g.a.effective_strides[-1] != 1 or g.a.data_type.size != 4:
        return False
    rows, cols = dq.output.sizes
    per_word = 8 if dq.bits == 4 else 4
    in_s = dq.input.effective_strides
    ratio_r, ratio_c = rows // dq.scale.sizes[0], cols // dq.scale.sizes[1]
    return (in_s[1] == 1 and in_s[0] % 16 == 0 and cols % per_word == 0 and ratio_c % (4 * per_word) == 0
            and ratio_r == 1 and cols // per_word + cols // ratio_c + 64 < LOOP_BUDGET
            and g.a.buffer_bytes >= 16)


class DequantizedGemmFamily(KernelFamily):
    """`gemv` (M = 1, where it fits), `registers` and `workgroup` (the GEMM family's, through
    its operand hook), with the GEMM's store epilogue."""

    strategies = ("gemv",) + gemm.STRATEGIES
    options = gemm.OPTIONS
    epilogue = True

    def strategies_for(self, p: DequantizedGemm, caps, **options) -> tuple[str, ...]:
        if element_bits(p.dequantize.output) != element_bits(p.gemm.output):
            raise UnsupportedError(f"{p.gemm.op}: a DEQUANTIZE of another type than the GEMM's")
        problem, *_ = _operand_parts(p)
        own = gemm.strategies_for(problem, caps, **options)
        return (("gemv",) if gemv_fits(p) and not options else ()) + own

    def plan(self, p: DequantizedGemm, caps, strategy: str, **options) -> KernelPlan:
        if strategy == "gemv":
            if not gemv_fits(p) or options:
                raise InternalError(f"{p.gemm.op}: strategy gemv cannot run {p}")
            return _gemv(p, caps)
        problem, uniforms, inputs, params = _operand_parts(p)
        return gemm.plan(problem, caps, strategy, extra_uniforms=uniforms, extra_inputs=inputs,
                         extra_params=params, **options)

    def variants(self, p: DequantizedGemm, caps, strategy: str) -> tuple[dict, ...]:
        return () if strategy == "gemv" else gemm.variants(_operand_parts(p)[0], caps, strategy)

    def plan_with_epilogue(self, p: DequantizedGemm, caps, strategy: str, epilogue) -> KernelPlan:
        check_epilogue(epilogue, p.gemm.output)
        own = 2 + (p.gemm.c is not None) + 1 + (p.dequantize.zero_point is not None)
        return attach_epilogue(self.plan(p, caps, strategy), epilogue, own)


def _scale_quads(p: DequantizedGemm) -> bool:
    """`gemv` reads 4 blocks' scales as one 16-byte block (float32 scales, a row's blocks
    contiguous and its first one 16-byte aligned, a multiple of 4 blocks a row)."""
    dq = p.dequantize
    s = dq.scale.effective_strides
    return element_bits(dq.scale) == 32 and s[1] == 1 and s[0] % 4 == 0 and dq.scale.sizes[1] % 4 == 0


def _zero_words(p: DequantizedGemm) -> bool:
    """`gemv` reads the zero points of 8 blocks (packed, two a byte) or 4 (a byte each) as
    one word (a row's bytes contiguous, its first one word aligned)."""
    zp = p.dequantize.zero_point
    return zp is not None and zp.effective_strides[1] == 1 and zp.effective_strides[0] % 4 == 0


def _wide(p: DequantizedGemm, caps, one_quad: bool) -> bool:
    """`gemv` reads the weight rows as 32-byte units (vec4<u64>: two 16-byte blocks, two
    blocks of the quantization, a read every other block) where the builder gives the
    weight that access (`unit_access`: shader-int64, the tensor bound as whole units), a
    block of the quantization is one 16-byte block and a row's blocks come in whole 32-byte
    units (the kernel's own arithmetic: its stride and its length in blocks even, so that
    every unit it reads lies in one row)."""
    dq = p.dequantize
    quads = dq.output.sizes[1] // (8 if dq.bits == 4 else 4) // 4
    return (one_quad and quads % 2 == 0 and dq.input.effective_strides[0] % 32 == 0
            and unit_access(caps, ("wide", "blocks"), dq.input.buffer_bytes) == "wide")


def _gemv(p: DequantizedGemm, caps) -> KernelPlan:
    """One invocation per output column (module docstring)."""
    g, dq = p.gemm, p.dequantize
    rows, cols = dq.output.sizes
    lay = gemm.layout(g)
    subgroups = caps is not None and caps.has("subgroup")
    has_c = g.c is not None
    uniforms = {"n": rows, "words": cols // (8 if dq.bits == 4 else 4),
                "row_quads": dq.input.effective_strides[0] // 16,
                "block_words": cols // dq.scale.sizes[1] // (8 if dq.bits == 4 else 4),
                "scale_s": dq.scale.effective_strides, "a_base": 0, "c_m": lay.c_m, "c_n": lay.c_n,
                "o_m": lay.o_m, "o_n": lay.o_n, "alpha": f32_bits(g.alpha), "beta": f32_bits(g.beta),
                "batch_sizes": lay.batch_sizes, "out_bs": lay.batch_strides[0], "a_bs": lay.batch_strides[1],
                "b_bs": lay.batch_strides[2], "c_bs": lay.batch_strides[3]}
    params = {"rows": GEMV_ROWS, "bits": 32, "four": dq.bits == 4, "signed": dq.input.data_type.is_signed,
              "zero": dq.zero_point is not None, "zero_packed": dq.zero_packed, "scale_bits": element_bits(dq.scale),
              "has_c": has_c, "activation": g.activation or "", "batch_rank": len(lay.batch_sizes),
              "subgroups": subgroups, "scale_quads": _scale_quads(p), "zero_words": _zero_words(p),
              "one_quad": uniforms["block_words"] == 4}
    params["wide"] = _wide(p, caps, params["one_quad"])
    act_uniforms, act_attrs = attribute_uniforms("act_", g.activation_attributes, "float", 32)
    uniforms.update(act_uniforms)
    params["activation_attributes"] = act_attrs
    buffers = [output_buffer(0, "output", 32, "stores"), input_buffer(0, "a_vec", "blocks"),
               input_buffer(1, "b_vec", "wide" if params["wide"] else "blocks"),
               input_buffer(2 + has_c, "dq_scale")]
    if params["scale_quads"]:
        buffers.append(input_buffer(2 + has_c, "dq_scale_quad", "blocks"))
    if dq.zero_point is not None:
        uniforms["zero_s"] = dq.zero_point.effective_strides
        buffers.append(input_buffer(3 + has_c, "dq_zero"))
    if has_c:
        buffers.append(input_buffer(2, "c"))
    return KernelPlan((Dispatch("dequantize_gemv.wgsl.j2", params, tuple(buffers), uniforms, -(-rows // GEMV_ROWS),
                                GEMV_WORKGROUP, subgroups=subgroups),))


FAMILY = DequantizedGemmFamily()
