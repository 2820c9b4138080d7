"""The store epilogue: element-wise steps that a kernel of another family applies to each
value it computes, in its store, instead of storing the value (a graph's
`sigmoid(reduce(x))`, `add(gemm(a, b), bias)` run as one kernel: gpudml/fusion.py).
DirectML's FusedActivation is its one-unary-step case; the GEMM family keeps its own
fused activation, and an epilogue follows it.

An `Epilogue` is an element-wise FusedProblem (kernels/elementwise.py: one Step per
element-wise operator, the family's own code generator) whose input 0 is the producer's
value (its desc: the producer's output, packed) and whose inputs 1, 2, ... are the other
tensors the steps read, each at the output element's coordinates through its own strides
(0: broadcast); its output is the tensor the kernel stores (packed, the producer's
output's sizes, any element type of up to 32 bits). A packed output's element offset is
the element's row-major index, so the store's offset alone says which element of each
read tensor the steps take.

A family takes an epilogue through the KernelFamily hook (kernels/base.py: `epilogue`,
`strategies_with_epilogue`, `plan_with_epilogue`): it plans its kernels with element-wise
stores (no words or 16-byte blocks assembled from several outputs: an 8/16-bit output is
stored with atomic read-modify-write), and `attach` gives each dispatch that writes the
output the epilogue: the output buffer in the epilogue's element type, the read tensors
bound after the producer's own inputs, their uniforms (ep_sizes, ep_stridesK, the steps'
attributes ep0_NAME, ...) and the template parameter `epilogue`. The family's template
stores through lib/epilogue.wgsl.j2's `store_fn`, which applies it. A producer that reads
its input through a prologue as well (KernelFamily.plan_through with an epilogue: a Reduce's,
a scan's) binds the epilogue's tensors after the prologue's.
"""

from __future__ import annotations

import abc
from dataclasses import dataclass, replace
from typing import NamedTuple

from ..errors import InternalError, UnsupportedError
from ..tensor_desc import TensorDesc, merge_axes
from . import base
from .base import element_bits
from .builder import INPUT, OUTPUT, KernelPlan, input_buffer
from .elementwise import FusedProblem, input_kinds, steps


@dataclass(frozen=True)
class Epilogue:
    """Element-wise steps applied in a producer kernel's store: `problem`'s input 0 is the
    producer's value, inputs 1.. are read at the stored element's coordinates."""

    problem: FusedProblem

    @property
    def output(self) -> TensorDesc:
        return self.problem.output

    @property
    def reads(self) -> tuple[TensorDesc, ...]:
        return self.problem.inputs[1:]


class EpilogueParams(NamedTuple):
    """The epilogue as the templates see it (hashable: template parameters key the caches):
    the steps' code (lib/elementwise.wgsl.j2 steps_fns), the read tensors' element widths
    and the rank of the coordinates they are read at."""

    steps: tuple
    kinds: tuple
    in_bits: tuple
    out_kind: str
    out_bits: int
    rank: int


def check(ep: Epilogue, value: TensorDesc) -> None:
    """An epilogue fits a producer whose output is `value`: input 0 is that value, every
    tensor is at most 32 bits wide, the output is packed with the value's sizes."""
    tensors = (ep.output,) + ep.problem.inputs
    if ep.problem.inputs[0] != value or not ep.output.is_packed or ep.output.sizes != value.sizes \
            or any(element_bits(t) > 32 for t in tensors):
        raise InternalError(f"{ep.problem.op}: an epilogue of {ep.problem.inputs} -> {ep.output} cannot follow a "
                            f"kernel writing {value}")


def attach(plan: KernelPlan, ep: Epilogue, first_read: int | None = None) -> KernelPlan:
    """`plan` with the epilogue in the store of every dispatch that writes output 0: its
    output buffer in the epilogue's element type (element-wise stores), the read tensors as
    inputs `first_read`, `first_read` + 1, ... (after the producer's own inputs; None: after
    every input the plan binds, a prologue's tensors included)."""
    if first_read is None:
        first_read = 1 + max(b.index for d in plan.dispatches for b in d.buffers if b.role == INPUT)
    p = ep.problem
    out = ep.output
    axes = merge_axes(out.sizes, out.effective_strides, *(t.effective_strides for t in ep.reads))
    uniforms, step_params = steps(p, prefix="ep")
    uniforms["ep_sizes"] = tuple(a.size for a in axes)
    for k in range(1, len(p.inputs)):
        uniforms[f"ep_strides{k}"] = tuple(a.strides[k] for a in axes)
    params = EpilogueParams(step_params, input_kinds(p), tuple(element_bits(t) for t in p.inputs),
                            p.steps[-1].problem.out_kind, element_bits(out), len(axes))
    reads = tuple(input_buffer(first_read + k, f"ep_in{k + 1}") for k in range(len(ep.reads)))
    dispatches = []
    for d in plan.dispatches:
        if not any(b.key == (OUTPUT, 0) for b in d.buffers):
            dispatches.append(d)
            continue
        if any(b.role == INPUT and b.index >= first_read for b in d.buffers):
            raise InternalError(f"{d.template}: input {first_read} is the producer's own, not the epilogue's")
        buffers = tuple(replace(b, bits=element_bits(out), access="stores") if b.key == (OUTPUT, 0) else b
                        for b in d.buffers)
        if any(b.key == (OUTPUT, 0) and b.name != "output" for b in buffers):
            raise InternalError(f"{d.template}: an epilogue needs the output stored element by element")
        dispatches.append(replace(d, params={**d.params, "epilogue": params}, buffers=buffers + reads,
                                  uniforms={**d.uniforms, **uniforms}))
    return replace(plan, dispatches=tuple(dispatches))


class ElementStores:
    """A KernelFamily mixin (before KernelFamily in the bases) for a family whose kernels store
    output 0 element by element through lib/epilogue's store and bind one input of their own:
    the store epilogue, its read tensors bound after that input; the problem's `output` is the
    value the epilogue takes (DML_FOLD's, DML_VALUE_SCALE_2D's, DML_RANDOM_GENERATOR's families)."""

    epilogue = True

    def plan_with_epilogue(self, problem, caps, strategy: str, epilogue) -> KernelPlan:
        """Every strategy: the kernels store element by element already."""
        check(epilogue, problem.output)
        return attach(self.plan(problem, caps, strategy), epilogue, self.input_count(problem))

    def input_count(self, problem) -> int:
        """The producer's own inputs (the epilogue's read tensors are bound after them)."""
        return 1

class OutputRunsFamily(ElementStores, base.RunsFamily):
    """A family whose kernels write each output element from one invocation, element by
    element (the fold and region families): `runs` (CPU-class) gives an invocation a run of
    up to `run` consecutive outputs (row-major) within the loop budget, `elements`
    (GPU-class) one output per invocation; the store epilogue applies element-wise
    consumers in the store (ElementStores). A subclass gives `iterations(problem)` (the loop iterations
    one output takes at most), `too_long(problem)` (the UnsupportedError message where one
    output passes the budget) and `plan_runs(problem, caps, strategy, run)`."""

    #: Outputs per `runs` invocation unless the budget allows fewer.
    RUN = 16
    #: Loop iterations an invocation spends besides its outputs'.
    OVERHEAD = 64

    @abc.abstractmethod
    def iterations(self, problem) -> int: ...

    @abc.abstractmethod
    def too_long(self, problem) -> str: ...

    @abc.abstractmethod
    def plan_runs(self, problem, caps, strategy: str, run: int) -> KernelPlan: ...

    def max_run(self, problem) -> int:
        return max(0, (base.LOOP_BUDGET - self.OVERHEAD) // self.iterations(problem))

    def run_length(self, problem, strategy: str, run=None) -> int:
        """The outputs per invocation: 1 for `elements`; for `runs` the option `run` (an
        UnsupportedError past the budget), else RUN or what the budget allows."""
        if strategy == "elements":
            return 1
        base.count_option(problem.op, "run", run)
        wanted = self.RUN if run is None else run
        if wanted > self.max_run(problem):
            if run is not None:
                raise UnsupportedError(f"{problem.op}: option run = {run}: {run} outputs of up to "
                                       f"{self.iterations(problem)} loop iterations each pass one invocation's loop "
                                       f"budget ({base.LOOP_BUDGET})")
            wanted = self.max_run(problem)
        return max(1, min(wanted, problem.output.element_count))

    def strategies_for(self, problem, caps, run=None) -> tuple[str, ...]:
        """Both strategies where one output fits the loop budget (`runs` first on software
        adapters and without caps, `elements` first on GPUs)."""
        if self.max_run(problem) < 1:
            raise UnsupportedError(self.too_long(problem))
        self.run_length(problem, "runs", run)
        return base.runs_order(caps)

    def plan(self, problem, caps, strategy: str, run=None) -> KernelPlan:
        if strategy not in self.strategies_for(problem, caps, run):
            raise InternalError(f"{problem.op}: strategy {strategy} cannot run {problem}")
        return self.plan_runs(problem, caps, strategy, self.run_length(problem, strategy, run))

    def variants(self, problem, caps, strategy: str) -> tuple[dict, ...]:
        """Other run lengths of `runs` (what the budget allows)."""
        if strategy != "runs":
            return ()
        return tuple({"run": r} for r in (4, 64) if r <= self.max_run(problem))

