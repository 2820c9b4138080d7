"""Composite operators: one operator planned as kernels of several families.

An operator whose work is another family's (a convolution as the GEMM family's implicit
GEMM), or several families' one after the other (an LSTM's GEMMs and element-wise gates,
an attention's GEMMs and softmax, NMS's sort and suppression), is a `CompositeFamily`: a
KernelFamily (kernels/base.py) whose `steps(problem, caps, strategy, **options)` says which
family plans which part, as a `Composition`:

- `steps`: `Step`s in dispatch order, each a family, its problem, its strategy and plan
  options, and where its tensors are: `inputs[k]` (the step's input k) and `outputs[k]` (its
  output k) are `Ref`s, the composite operator's own input or output ("input", i) /
  ("output", i), or an intermediate value ("value", j) that an earlier step wrote;
- `values`: the bytes of each intermediate value (a tensor no caller sees).

`compose` plans each step with its family and concatenates the dispatches in order: each
step's input, output and scratch buffers are rebound to the operator's tensors, to the
intermediate values (scratch buffers 0, 1, ..., written by one step and read by the later
ones) and to the step's own scratch buffers (numbered after the values, step by step). The
kernels are the families' own, byte for byte: only what they bind changes.

The epilogue hook (`epilogue` True where the subclass says so): the composed plan's
dispatches that write output 0 store the epilogue's result (kernels/epilogue.py), the
epilogue's tensors bound after the operator's `input_count(problem)` inputs; the steps
writing output 0 must store element by element (`steps` is told `element_stores=True`).
"""

from __future__ import annotations

import abc
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import NamedTuple

from ..errors import InternalError
from ..tensor_desc import TensorDesc
from .base import KernelFamily
from .builder import INPUT, OUTPUT, SCRATCH, Buffer, KernelPlan
from .epilogue import attach as attach_epilogue
from .epilogue import check as check_epilogue

#: Where a step's tensor is: ("input", i) / ("output", i), the composite operator's tensor i;
#: ("value", j), intermediate value j (a scratch buffer of the composed plan).
Ref = tuple[str, int]
VALUE = "value"


def own(count: int, role: str = INPUT) -> tuple[Ref, ...]:
    """The first `count` of the operator's inputs (or outputs), in order: a step that reads
    (writes) them as they are."""
    return tuple((role, k) for k in range(count))


@dataclass(frozen=True)
class Step:
    """One part of a composite operator: `family` plans `problem` under `strategy` with
    plan `options`; the step's input k is `inputs[k]`, its output k `outputs[k]`."""

    family: KernelFamily
    problem: object
    strategy: str
    inputs: tuple[Ref, ...]
    outputs: tuple[Ref, ...] = ((OUTPUT, 0),)
    options: Mapping = field(default_factory=dict)

    def plan(self, caps) -> KernelPlan:
        if not isinstance(self.family, KernelFamily):
            raise InternalError(f"composite step: {self.family!r} is no KernelFamily")
        return self.family.plan(self.problem, caps, self.strategy, **self.options)


class Composition(NamedTuple):
    """A composite operator's plan before its families plan it: `steps` in dispatch order,
    and the bytes of each intermediate value (scratch buffer j for value j)."""

    steps: tuple[Step, ...]
    values: tuple[int, ...] = ()


def value_bytes(desc: TensorDesc) -> int:
    """The bytes an intermediate value of `desc` takes (its buffer, as a tensor's)."""
    return desc.buffer_bytes


def compose(composition: Composition, caps) -> KernelPlan:
    """The steps' plans, their dispatches concatenated in order, every buffer rebound (see
    the module docstring)."""
    values = tuple(composition.values)
    scratch = list(values)
    dispatches = []
    for number, step in enumerate(composition.steps):
        made = step.plan(caps)
        first_scratch = len(scratch)
        scratch += made.scratch_bytes
        for d in made.dispatches:
            buffers = tuple(_rebound(b, step, number, first_scratch, len(values)) for b in d.buffers)
            dispatches.append(replace(d, buffers=buffers))
    return KernelPlan(tuple(dispatches), scratch_bytes=tuple(scratch))


def _rebound(b: Buffer, step: Step, number: int, first_scratch: int, value_count: int) -> Buffer:
    """Buffer `b` of step `number`'s plan as the composed plan binds it."""
    if b.role == SCRATCH:
        return replace(b, index=first_scratch + b.index)
    refs = step.inputs if b.role == INPUT else step.outputs
    if b.index >= len(refs):
        raise InternalError(f"composite step {number} ({type(step.family).__name__}): its {b.role} {b.index} "
                            f"({b.name}) is not placed (it places {len(refs)})")
    kind, index = refs[b.index]
    if kind == VALUE:
        if index >= value_count:
            raise InternalError(f"composite step {number}: value {index} is not one of the {value_count} values")
        return replace(b, role=SCRATCH, index=index)
    if kind not in (INPUT, OUTPUT) or (b.role == OUTPUT and kind == INPUT):
        raise InternalError(f"composite step {number}: its {b.role} {b.index} cannot be {kind} {index}")
    return replace(b, role=kind, index=index)


class CompositeFamily(KernelFamily):
    """A family whose kernels are other families' (see the module docstring): a subclass
    gives `strategies`, `options`, `strategies_for` and `steps`; `plan` composes them."""

    @abc.abstractmethod
    def steps(self, problem, caps, strategy: str, *, element_stores: bool = False, **options) -> Composition:
        """The parts of `problem` under `strategy`, each a Step of a family. `element_stores`:
        the steps writing output 0 store element by element (an epilogue follows)."""

    def plan(self, problem, caps, strategy: str, **options) -> KernelPlan:
        return compose(self.steps(problem, caps, strategy, **options), caps)

    def output(self, problem) -> TensorDesc:
        """The operator's output 0 (the value an epilogue takes)."""
        raise InternalError(f"{type(self).__name__} applies no epilogue in its stores")

    def input_count(self, problem) -> int:
        """The operator's own inputs (the epilogue's tensors are bound after them)."""
        raise InternalError(f"{type(self).__name__} applies no epilogue in its stores")

    def plan_with_epilogue(self, problem, caps, strategy: str, epilogue) -> KernelPlan:
        if not self.epilogue:
            return super().plan_with_epilogue(problem, caps, strategy, epilogue)
        check_epilogue(epilogue, self.output(problem))
        made = compose(self.steps(problem, caps, strategy, element_stores=True), caps)
        return attach_epilogue(made, epilogue, self.input_count(problem))
