"""The unpooling family (DML_MAX_UNPOOLING): the output [B, C, H', W'] is zero but where an
input element's index (flat, row-major over the output's sizes) names it; that element is
then the input's, bit for bit. Deterministic: where several input elements name one output
element, the one of the lowest flat (row-major) input position wins, whatever order the
invocations run in; an index outside the output writes nothing.

Three dispatches, an output-centric formulation (no invocation writes an element another
may write): `clear` sets one claim word per output element to 0xFFFFFFFF (a scratch
buffer); `claim` takes each in-range input element's flat position i to atomicMin(claim[
index], i), whose result no order changes; `gather` writes each output element from its
claim: the input element at that position, or zero. Any element width (8-64 bits: the bits
move, FLOAT16 and the 64-bit types included on adapters without those shader types).

Strategies: `runs` (CPU-class) gives an invocation a run of RUN consecutive elements in
each pass, `elements` (GPU-class) one element per invocation.
"""

from __future__ import annotations

from typing import NamedTuple

from ..errors import InternalError
from ..tensor_desc import TensorDesc
from .base import RUNS_ELEMENTS, KernelFamily, count_option, element_bits, runs_order
from .builder import Dispatch, KernelPlan, input_buffer, output_buffer, scratch_buffer

STRATEGIES = RUNS_ELEMENTS
RUN = 16
WORKGROUP_SIZE = 64


class Unpooling(NamedTuple):
    """The input [B, C, H, W], its indices (the same sizes, UINT32 or UINT64) and the output."""

    op: str
    input: TensorDesc
    indices: TensorDesc
    output: TensorDesc


def _run(p: Unpooling, strategy: str, run) -> int:
    count_option(p.op, "run", run)
    return 1 if strategy == "elements" else (RUN if run is None else run)


class UnpoolingFamily(KernelFamily):
    strategies = STRATEGIES
    options = ("run",)

    def strategies_for(self, problem: Unpooling, caps, run=None) -> tuple[str, ...]:
        """Both strategies (`runs` first on software adapters and without caps, `elements` first on GPUs)."""
        count_option(problem.op, "run", run)
        return runs_order(caps)

    def plan(self, p: Unpooling, caps, strategy: str, run=None) -> KernelPlan:
        if strategy not in self.strategies_for(p, caps, run):
            raise InternalError(f"{p.op}: strategy {strategy} cannot run {p}")
        length = _run(p, strategy, run)
        bits = element_bits(p.input)
        counts = {"clear": p.output.element_count, "claim": p.input.element_count,
                  "gather": p.output.element_count}
        uniforms = {"run": length, "in_sizes": p.input.sizes, "in_strides": p.input.effective_strides,
                    "index_strides": p.indices.effective_strides, "out_sizes": p.output.sizes,
                    "out_strides": p.output.effective_strides, "out_count": p.output.element_count}
        buffers = {
            "clear": (scratch_buffer(0, "claims", writable=True, access="atomics"),),
            "claim": (input_buffer(1, "indices"), scratch_buffer(0, "claims", writable=True, access="atomics")),
            "gather": (output_buffer(0, "output", bits, "stores"), input_buffer(0, "input"),
                       scratch_buffer(0, "claims", writable=True, access="atomics")),
        }
        dispatches = tuple(
            Dispatch("max_unpooling.wgsl.j2", {"step": step, "bits": bits, "index_bits": element_bits(p.indices)},
                     buffers[step], {**uniforms, "count": counts[step]}, -(-counts[step] // length), WORKGROUP_SIZE)
            for step in ("clear", "claim", "gather"))
        return KernelPlan(dispatches, scratch_bytes=(4 * p.output.element_count,))

    def variants(self, problem: Unpooling, caps, strategy: str) -> tuple[dict, ...]:
        return ({"run": 4}, {"run": 64}) if strategy == "runs" else ()


FAMILY = UnpoolingFamily()
