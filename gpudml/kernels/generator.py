"""The generator family (DML_FILL_VALUE_CONSTANT, DML_FILL_VALUE_SEQUENCE,
DML_DIAGONAL_MATRIX, DML_DIAGONAL_MATRIX1): kernels that write every element of their
output from the description's values, reading no input (DIAGONAL_MATRIX1's optional input
aside). One kernel, `shaders/generator.wgsl.j2`, with one of three rules (`kind`):

- "constant": every element the bits of `value`;
- "sequence": element i (its row-major index among the output's elements) `start + i *
  delta` in the output's type: integers in wrapping arithmetic of the element width
  (32-bit words, masked to 8 or 16 bits; 64-bit integers as exact word pairs, lib/int64:
  `Value += Delta` repeated i times is exactly that), floats `f32(i) * delta + start` in
  float32 (float16 values read exactly, the result rounded once to float16 on the store);
- "diagonal": element [..., y, x] `value` where DirectML's DIAGONAL_MATRIX1 rule holds
  (topX = x - y; (end >= begin) ^ (topX >= begin) ^ (topX < end)), else the input's element
  at the same coordinates (through its own strides; stride 0 broadcasts) or zero.

The values travel as their bits in scalar uniforms (`value`, `value_hi`, `delta`,
`delta_hi`: the high words of 64-bit elements; floats as float32 bits), so new values
compile nothing. Every element moves as bits (lib/elements), so FLOAT64 needs no shader-f64
and 8/16-bit elements no native small types. Coordinates are 32-bit: x - y is computed in
i32 (the operators' validation keeps the two last axes below 2^31).

Strategies: `runs` (CPU-class) gives an invocation RUN consecutive outputs, `elements`
(GPU-class) one output each; `runs` first on software adapters and without caps. Axes merge
where contiguous in every tensor; a constant or a sequence whose output is then one axis of
stride 1 (packed) is written a 16-byte block at a time (`runs`: RUN elements' worth of
blocks per invocation; `elements`: one block), the last block keeping the bytes past the
tensor (read, then written back whole): no per-element atomics for 8/16-bit elements.
"""

from __future__ import annotations

from typing import NamedTuple

from ..errors import InternalError, UnsupportedError
from ..tensor_desc import TensorDesc, merge_axes
from .base import RUNS_ELEMENTS, RunsFamily, element_bits, run_length, runs_order
from .builder import Dispatch, KernelPlan, input_buffer, output_buffer

STRATEGIES = RUNS_ELEMENTS
KINDS = ("constant", "sequence", "diagonal")
#: Outputs per `runs` invocation (far below GL's 65,535 loop iterations).
RUN = 64
WORKGROUP_SIZE = 64


class Generator(NamedTuple):
    """What the family computes (module docstring): `output` (any rank 1-8, its own
    strides), the rule `kind`, the element bits of `value` (and `delta`, a sequence's
    step; 64-bit values as one int), `number` ("float", "sint" or "uint": how a sequence
    adds), the diagonal span [`begin`, `end`) and its optional `input`."""

    op: str
    output: TensorDesc
    kind: str
    value: int
    delta: int = 0
    number: str = "uint"
    begin: int = 0
    end: int = 0
    input: TensorDesc | None = None


def _run(p: Generator, strategy: str, run) -> int:
    return run_length(p.op, strategy, run, p.output.element_count, RUN)


def strategies_for(p: Generator, caps, run=None) -> tuple[str, ...]:
    """Both strategies (`runs` first on software adapters and without caps, `elements` first
    on GPUs), for any rule of KINDS over outputs of 1-8 dimensions."""
    if p.kind not in KINDS or not 1 <= p.output.rank <= 8 or (p.kind == "diagonal" and p.output.rank < 2):
        raise UnsupportedError(f"{p.op}: the generator kernel has no rule {p.kind!r} for an output of "
                               f"{p.output.rank} dimensions")
    if p.kind == "diagonal" and max(p.output.sizes[-2:]) >= 2**31:
        raise UnsupportedError(f"{p.op}: the generator kernel computes x - y in 32 bits: the two last axes must be "
                               f"shorter than 2^31 (output sizes {list(p.output.sizes)})")
    _run(p, "runs", run)
    return runs_order(caps)


def _words(value: int, bits: int) -> tuple[int, int]:
    value &= (1 << bits) - 1 if bits < 64 else (1 << 64) - 1
    return value & 0xFFFFFFFF, value >> 32


def plan(p: Generator, caps, strategy: str, run=None) -> KernelPlan:
    if strategy not in strategies_for(p, caps, run):
        raise InternalError(f"{p.op}: strategy {strategy} cannot run {p}")
    bits = element_bits(p.output)
    length = _run(p, strategy, run)
    count = p.output.element_count
    value, value_hi = _words(p.value, 64 if bits == 64 else 32)
    delta, delta_hi = _words(p.delta, 64 if bits == 64 else 32)
    has_input = p.kind == "diagonal" and p.input is not None
    layouts = [p.output.effective_strides] + ([p.input.effective_strides] if has_input else [])
    # Axes merged where contiguous in every tensor (row-major order kept: a sequence's index is
    # the element's); a diagonal keeps its two last axes apart. One axis of stride 1: packed,
    # element i stored at offset i with no coordinates.
    rank = p.output.rank
    axes = merge_axes(p.output.sizes, *layouts, fixed=(rank - 2, rank - 1) if p.kind == "diagonal" else ())
    sizes = tuple(a.size for a in axes)
    packed = len(axes) == 1 and (axes[0].strides[0] == 1 or sizes[0] == 1)
    uniforms = {"count": count, "run": length, "value": value, "value_hi": value_hi, "delta": delta,
                "delta_hi": delta_hi, "begin": p.begin, "end": p.end,
                "out_sizes": sizes, "out_strides": tuple(a.strides[0] for a in axes)}
    params = {"bits": bits, "rank": len(axes), "kind": p.kind, "number": p.number, "has_input": has_input,
              "packed": packed, "per_block": 128 // bits}
    int64 = "emulated" if p.kind == "sequence" and bits == 64 else ""
    if packed:  # whole 16-byte blocks, `length` elements' worth per invocation under `runs`, one under `elements`
        blocks = -(-count // params["per_block"])
        per_invocation = 1 if strategy == "elements" else -(-length // params["per_block"])
        uniforms.update(run=per_invocation, blocks=blocks)
        return KernelPlan((Dispatch("generator.wgsl.j2", params, (output_buffer(0, "output", bits, "blocks"),),
                                    uniforms, -(-blocks // per_invocation), WORKGROUP_SIZE, int64=int64),))
    buffers = [output_buffer(0, "output", bits, "stores")]
    if has_input:
        uniforms["in_strides"] = tuple(a.strides[1] for a in axes)
        buffers.append(input_buffer(0, "input"))
    return KernelPlan((Dispatch("generator.wgsl.j2", params, tuple(buffers), uniforms, -(-count // length),
                                WORKGROUP_SIZE, int64=int64),))


class GeneratorFamily(RunsFamily):
    """The generator family: the module's functions over a `Generator`."""

    def strategies_for(self, problem: Generator, caps, run=None) -> tuple[str, ...]:
        return strategies_for(problem, caps, run)

    def plan(self, problem: Generator, caps, strategy: str, run=None) -> KernelPlan:
        return plan(problem, caps, strategy, run)


FAMILY = GeneratorFamily()
