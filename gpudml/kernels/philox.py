"""The Philox family (DML_RANDOM_GENERATOR, PHILOX_4X32_10): counter-based random bits.

The state [c0, c1, c2, c3, k0, k1] (six UINT32 words, read through the state tensor's own
strides) holds a 128-bit counter C (c0 its least significant word) and a 64-bit key
(k0, k1). Output element i (row-major over the output's sizes, stored at its own strides)
is word i % 4 of Philox4x32-10(C + floor(i / 4), key): each block of four consecutive
elements is one Philox call, the counter advancing by one per block (128-bit, carrying). The
output state is the input's with C advanced by the blocks generated, ceil(count / 4), and the
key unchanged.

Philox4x32-10 (Salmon, Moraes, Dror, Shaw, "Parallel random numbers: as easy as 1, 2, 3",
SC'11; Random123's philox4x32): ten rounds of
    (hi0, lo0) = mulhilo(0xD2511F53, x0); (hi1, lo1) = mulhilo(0xCD9E8D57, x2)
    x = (hi1 ^ x1 ^ k0, lo1, hi0 ^ x3 ^ k1, lo0)
with the key bumped by (0x9E3779B9, 0xBB67AE85) between rounds. mulhilo is the 64-bit
product's two words, computed from 16-bit halves in 32-bit arithmetic (no 64-bit integers:
GL adapters have none), exactly.

Strategies: `runs` (CPU-class) gives an invocation a run of up to RUN consecutive blocks,
`blocks` (GPU-class) one block per invocation. Every output element is written by exactly
one invocation; invocation 0 also writes the output state. The store epilogue
(kernels/epilogue.py) applies element-wise consumers in the output's store.
"""

from __future__ import annotations

from typing import NamedTuple

from ..errors import InternalError, UnsupportedError
from ..tensor_desc import TensorDesc
from .base import LOOP_BUDGET, KernelFamily, count_option
from .builder import Dispatch, KernelPlan, input_buffer, output_buffer
from .epilogue import ElementStores

STRATEGIES = ("runs", "blocks")
#: Blocks (of four output elements) per `runs` invocation.
RUN = 64
WORKGROUP_SIZE = 64
#: Elements per Philox block (one call gives four 32-bit words).
WORDS = 4


class Philox(NamedTuple):
    """What the family computes (module docstring): the `state` tensor (six UINT32 words in
    its last axis), the `output` (UINT32, any sizes and strides) and the optional
    `state_out` (None: not written)."""

    op: str
    state: TensorDesc
    output: TensorDesc
    state_out: TensorDesc | None

    @property
    def blocks(self) -> int:
        """The Philox calls, ceil(elements / 4): also how far the counter advances."""
        return -(-self.output.element_count // WORDS)


def _run(p: Philox, strategy: str, run) -> int:
    if strategy == "blocks":
        return 1
    count_option(p.op, "run", run)
    if run is not None and run > LOOP_BUDGET:
        raise UnsupportedError(f"{p.op}: option run = {run} blocks pass one invocation's loop budget ({LOOP_BUDGET})")
    return max(1, min(RUN if run is None else run, p.blocks))


def _last_stride(desc: TensorDesc) -> int:
    """The step between the six state words: the last axis' stride (the others have one position)."""
    return desc.effective_strides[-1]


class PhiloxFamily(ElementStores, KernelFamily):
    """The Philox family over a `Philox`, with the store epilogue (ONNX's random ops: the
    conversion of the bits to floats in the generator's store; the epilogue's tensors read
    after the state, input 0)."""

    strategies = STRATEGIES
    options = ("run",)

    def strategies_for(self, problem: Philox, caps, run=None) -> tuple[str, ...]:
        """Both strategies run every problem (`runs` first on software adapters and without
        caps, `blocks` first on GPUs)."""
        _run(problem, "runs", run)
        cpu = caps is None or caps.is_software
        return ("runs", "blocks") if cpu else ("blocks", "runs")

    def plan(self, problem: Philox, caps, strategy: str, run=None) -> KernelPlan:
        if strategy not in self.strategies_for(problem, caps, run):
            raise InternalError(f"{problem.op}: strategy {strategy} cannot run {problem}")
        out, length = problem.output, _run(problem, strategy, run)
        params = {"rank": out.rank, "packed": out.is_packed, "has_state": problem.state_out is not None}
        uniforms = {"count": out.element_count, "blocks": problem.blocks, "run": length,
                    "state_stride": _last_stride(problem.state), "out_sizes": out.sizes,
                    "out_strides": out.effective_strides}
        buffers = [output_buffer(0, "output", 32, "stores"), input_buffer(0, "state")]
        if problem.state_out is not None:
            buffers.insert(1, output_buffer(1, "state_out", 32))
            uniforms["state_out_stride"] = _last_stride(problem.state_out)
        return KernelPlan((Dispatch("philox.wgsl.j2", params, tuple(buffers), uniforms,
                                    -(-problem.blocks // length), WORKGROUP_SIZE),))

    def variants(self, problem: Philox, caps, strategy: str) -> tuple[dict, ...]:
        """Other run lengths of `runs`."""
        return tuple({"run": r} for r in (16, 256) if r < problem.blocks) if strategy == "runs" else ()


FAMILY = PhiloxFamily()
