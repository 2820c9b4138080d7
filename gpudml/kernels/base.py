"""The protocol of the kernel layer, as code: `KernelFamily`, how the problems of one kernel
family run, and `Planner`, how the descriptions of one operator run.

A kernel family (kernels/reduction.py, scan.py, pooling.py, gemm.py, convolution.py,
normalization.py, elementwise.py, movement/) is one class of `KernelFamily`, with one
instance, the module's `FAMILY`. It answers every question about a *problem*, what a
description computes in the family's own terms (reduction.Reduction, scan.Scan,
pooling.Problem, gemm.Problem, ...):

    class KernelFamily(abc.ABC):
        strategies: tuple[str, ...]          # every named strategy, CPU-class and GPU-class
        options: tuple[str, ...]             # the plan's keyword options (experiments, tuning)
        prologue: bool = False               # reads its first input through a chain
        epilogue: bool = False               # applies element-wise steps in its stores

        def strategies_for(self, problem, caps, **options) -> tuple[str, ...]   # abstract
        def plan(self, problem, caps, strategy, **options) -> KernelPlan       # abstract
        def variants(self, problem, caps, strategy) -> tuple[dict, ...]        # () by default
        def stage(self, problem) -> StageRule | None                           # None by default
        def strategies_through(self, problem, caps) -> tuple[str, ...]         # the prologue ...
        def plan_through(self, problem, caps, strategy, chain, epilogue=None) -> KernelPlan
        def strategies_with_epilogue(self, problem, caps, epilogue) -> tuple[str, ...]  # the epilogue ...
        def plan_with_epilogue(self, problem, caps, strategy, epilogue) -> KernelPlan

- `strategies_for`: the strategies that can run `problem` on an adapter with capabilities
  `caps`, the choice first (None: the CPU-class order); UnsupportedError when none can;
- `plan`: the dispatches (a builder.KernelPlan) of `strategy`, one of strategies_for's;
- `variants`: option sets worth timing beside `strategy`'s own plan when autotuning;
- `stage`: the problem's index rule as a stage of a data-movement chain (kernels/chain.py),
  so that a graph runs a chain of such operators as one kernel;
- the prologue (`prologue` True, `strategies_through`, `plan_through`): the kernels read
  their first input through such a chain, or through fused element-wise and data-movement
  nodes (the element-wise family's FusedProblem in coordinate mode), instead of a tensor
  (a Reduce after a pad never materializes the pad, nor after an exp the exp);
- the epilogue (`epilogue` True, `strategies_with_epilogue`, `plan_with_epilogue`): the
  kernels apply element-wise steps to each value before they store it (kernels/epilogue.py;
  DirectML's FusedActivation generalized), so that a graph's `relu(gemm(a, b) + bias)` is
  one kernel.

The hooks a family does not have answer "not supported": no stage (None), InternalError
for a prologue or an epilogue plan (the planners of fused graphs ask only families whose
flag says they have it).

An operator's spec (gpudml/ops/) holds one `Planner`, its `planner`: the same questions
asked of a *description*. The compiler, the autotuner, the lab and the graph fuser ask only
these. `ProblemPlanner(problem, family)` is the one binding of a family to an operator:
`problem(desc)` (the operator's) says what a description computes, and every question goes
to the family with that problem (`ProblemPlanner(pooling_problem, pooling.FAMILY)`;
a family's named subclasses, such as gemm.GemmPlanner, only fix `family`). The fused
kernels of graphs (gpudml/fusion.py) are Planners too: of a family's problem (a chain of
data movement: the movement family; element-wise nodes: the element-wise family), or
wrapping an operator's planner's prologue or epilogue.

A composite operator, planned as kernels of several families (their dispatches in order,
the values passed between them in intermediate buffers), is a `composite.CompositeFamily`
(kernels/composite.py): the convolution family's GEMM strategies are one.

Also here: what every family's plan options and loops share. Nothing in kernels/ imports
the operators (gpudml/ops/) nor wgpu: a family reads the fields of the problems it is
given, and the runtime runs the plans.
"""

from __future__ import annotations

import abc
from typing import TYPE_CHECKING

import numpy as np

from ..errors import InternalError, InvalidArgumentError, UnsupportedError

if TYPE_CHECKING:  # (annotations only)
    from ..caps import Caps
    from .builder import KernelPlan
    from .chain import Chain, StageRule
    from .epilogue import Epilogue

#: Loop iterations one invocation may run in total. llvmpipe (Mesa's software Vulkan and GL)
#: silently ends every loop of an invocation once 65535 iterations have run in all, so long
#: reductions and scans must be cut into chunks. Half of that leaves room for the lanes of
#: one SIMD group iterating in lockstep through loops of different lengths; the plans'
#: estimates are upper bounds, so the margin is real.
LOOP_BUDGET = 1 << 15


class KernelFamily(abc.ABC):
    """How the problems of one kernel family run: see the module docstring. A subclass per
    family module, one instance of it (the module's FAMILY)."""

    #: Every named strategy, CPU-class and GPU-class (`compile_operator(op, strategy=...)`).
    strategies: tuple[str, ...] = ()
    #: The plan's keyword options, knobs for experiments (tests, `gpudml lab`, autotuning).
    options: tuple[str, ...] = ()
    #: Whether the kernels can read their first input through a chain (the prologue hook).
    prologue: bool = False
    #: Whether the kernels can apply element-wise steps in their stores (the epilogue hook).
    epilogue: bool = False

    @abc.abstractmethod
    def strategies_for(self, problem, caps: Caps | None, **options) -> tuple[str, ...]:
        """The strategies that can run `problem`, the documented choice for `caps` first
        (None: the CPU-class order); UnsupportedError when none can."""

    @abc.abstractmethod
    def plan(self, problem, caps: Caps | None, strategy: str, **options) -> KernelPlan:
        """The dispatches that run `problem` under `strategy` (one of strategies_for's)."""

    def variants(self, problem, caps: Caps | None, strategy: str) -> tuple[dict, ...]:
        """Option sets worth timing beside `strategy`'s own plan when autotuning: the knobs
        whose best value depends on the adapter. None by default."""
        return ()

    def stage(self, problem) -> StageRule | None:
        """The problem's index rule as a stage of a chain, over its own axes (data
        movement); None: it is not a chain stage."""
        return None

    def strategies_through(self, problem, caps: Caps | None) -> tuple[str, ...]:
        """The prologue's strategies_for: reading the first input through a chain."""
        raise InternalError(f"{type(self).__name__} reads no input through a chain")

    def plan_through(self, problem, caps: Caps | None, strategy: str, chain: Chain,
                     epilogue: Epilogue | None = None) -> KernelPlan:
        """The plan of `problem` whose first input is the output of `chain` (as a packed
        tensor): the chain reads input 0 (its source) and inputs 1, 2, ... (its stages'
        extra tensors) of the kernels. `chain` may also be an elementwise.FusedProblem
        (element-wise nodes, with data movement): its value is computed in the loads
        (lib/fused.wgsl.j2), reading its inputs and then its stages' extra tensors. With
        `epilogue` (where the family has the epilogue hook too, among
        strategies_with_epilogue's), its kernels also store the epilogue's result, as
        plan_with_epilogue's do, its tensors bound after the prologue's."""
        raise InternalError(f"{type(self).__name__} reads no input through a chain")

    def strategies_with_epilogue(self, problem, caps: Caps | None, epilogue: Epilogue) -> tuple[str, ...]:
        """The epilogue's strategies_for: those whose kernels can apply `epilogue` in their
        stores (by default all of strategies_for's)."""
        return self.strategies_for(problem, caps)

    def plan_with_epilogue(self, problem, caps: Caps | None, strategy: str, epilogue: Epilogue) -> KernelPlan:
        """The plan of `problem` whose kernels store `epilogue`'s result of each output value
        instead of the value (kernels/epilogue.py): the output tensor is the epilogue's, and
        the tensors the epilogue reads are the kernels' inputs after the problem's own."""
        raise InternalError(f"{type(self).__name__} applies no epilogue in its stores")


class Planner(abc.ABC):
    """How the descriptions of one operator (or of one fused group of them) run: a
    KernelFamily's questions asked of a description (see the module docstring). Most are
    ProblemPlanners; the rest bind an operator's own rules (the data-movement operators'
    stages) or wrap another planner's hooks (gpudml/fusion.py)."""

    strategies: tuple[str, ...] = ()
    options: tuple[str, ...] = ()
    prologue: bool = False
    epilogue: bool = False

    @abc.abstractmethod
    def strategies_for(self, desc, caps: Caps | None, **options) -> tuple[str, ...]:
        """KernelFamily.strategies_for, of the problem `desc` describes."""

    @abc.abstractmethod
    def plan(self, desc, caps: Caps | None, strategy: str, **options) -> KernelPlan:
        """KernelFamily.plan, of the problem `desc` describes."""

    def variants(self, desc, caps: Caps | None, strategy: str) -> tuple[dict, ...]:
        """KernelFamily.variants (none by default)."""
        return ()

    def stage(self, desc) -> StageRule | None:
        """KernelFamily.stage, over the desc's own axes (None: no chain stage)."""
        return None

    def strategies_through(self, desc, caps: Caps | None) -> tuple[str, ...]:
        """KernelFamily.strategies_through."""
        raise InternalError(f"{type(self).__name__} reads no input through a chain")

    def plan_through(self, desc, caps: Caps | None, strategy: str, chain: Chain,
                     epilogue: Epilogue | None = None) -> KernelPlan:
        """KernelFamily.plan_through."""
        raise InternalError(f"{type(self).__name__} reads no input through a chain")

    def strategies_with_epilogue(self, desc, caps: Caps | None, epilogue: Epilogue) -> tuple[str, ...]:
        """KernelFamily.strategies_with_epilogue (by default all of strategies_for's)."""
        return self.strategies_for(desc, caps)

    def plan_with_epilogue(self, desc, caps: Caps | None, strategy: str, epilogue: Epilogue) -> KernelPlan:
        """KernelFamily.plan_with_epilogue."""
        raise InternalError(f"{type(self).__name__} applies no epilogue in its stores")


class ProblemPlanner(Planner):
    """The Planner of an operator whose kernel family is `family` (a KernelFamily instance):
    `problem(desc)`, the operator's, says what a description computes in the family's
    terms, and every question (strategies, options, the hooks and their flags) is the
    family's about that problem.

    The family is given to the constructor (`ProblemPlanner(problem, pooling.FAMILY)`) or
    named by a subclass's class attribute `family` (gemm.GemmPlanner, made as
    `GemmPlanner(problem)`); InternalError unless it is a KernelFamily."""

    #: The family, where a subclass is bound to one (None: the constructor's `family`).
    family: KernelFamily | None = None

    def __init__(self, problem, family: KernelFamily | None = None):
        self.problem = problem
        if family is not None:
            self.family = family
        if not isinstance(self.family, KernelFamily):
            raise InternalError(f"{type(self).__name__}: {self.family!r} is no KernelFamily")
        family = self.family
        self.strategies, self.options = family.strategies, family.options
        self.prologue, self.epilogue = family.prologue, family.epilogue

    def strategies_for(self, desc, caps, **options) -> tuple[str, ...]:
        return self.family.strategies_for(self.problem(desc), caps, **options)

    def plan(self, desc, caps, strategy: str, **options) -> KernelPlan:
        return self.family.plan(self.problem(desc), caps, strategy, **options)

    def variants(self, desc, caps, strategy: str) -> tuple[dict, ...]:
        return self.family.variants(self.problem(desc), caps, strategy)

    def stage(self, desc) -> StageRule | None:
        return self.family.stage(self.problem(desc))

    def strategies_through(self, desc, caps) -> tuple[str, ...]:
        return self.family.strategies_through(self.problem(desc), caps)

    def plan_through(self, desc, caps, strategy: str, chain, epilogue=None) -> KernelPlan:
        return self.family.plan_through(self.problem(desc), caps, strategy, chain, epilogue)

    def strategies_with_epilogue(self, desc, caps, epilogue) -> tuple[str, ...]:
        return self.family.strategies_with_epilogue(self.problem(desc), caps, epilogue)

    def plan_with_epilogue(self, desc, caps, strategy: str, epilogue) -> KernelPlan:
        return self.family.plan_with_epilogue(self.problem(desc), caps, strategy, epilogue)


# ---------------------------------------------------------------------------- plan options
def count_option(op: str, name: str, value) -> int | None:
    """A plan option that counts something (chunks): None (the planner's choice) or an
    integer of at least 1; InvalidArgumentError otherwise."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise InvalidArgumentError(f"{op}: option {name} = {value!r} must be an integer of at least 1")
    return int(value)


def power_of_two_option(op: str, name: str, value, most: int) -> int | None:
    """A plan option that sizes a group of invocations (lanes, lines): None (the planner's
    choice) or a power of two in [1, most]; InvalidArgumentError otherwise."""
    if value is not None and value not in [1 << i for i in range(most.bit_length())]:
        raise InvalidArgumentError(f"{op}: option {name} = {value!r} must be a power of two in [1, {most}]")
    return value


#: The strategies of a kernel that writes its outputs one by one: `runs` (CPU-class) gives an
#: invocation a run of consecutive outputs, `elements` (GPU-class) one output each.
RUNS_ELEMENTS = ("runs", "elements")


def runs_order(caps) -> tuple[str, ...]:
    """RUNS_ELEMENTS in the documented order: `runs` first on software adapters and without
    caps, `elements` first on GPUs."""
    return RUNS_ELEMENTS if caps is None or caps.is_software else RUNS_ELEMENTS[::-1]


def run_length(op: str, strategy: str, run, count: int, default: int) -> int:
    """Outputs per invocation: 1 under `elements`; under `runs` the plan option `run` (an
    integer of at least 1, within LOOP_BUDGET: UnsupportedError beyond; None: `default`), at
    most the `count` outputs."""
    if strategy == "elements":
        return 1
    count_option(op, "run", run)
    if run is not None and run > LOOP_BUDGET:
        raise UnsupportedError(f"{op}: option run = {run} passes one invocation's loop budget ({LOOP_BUDGET})")
    return max(1, min(default if run is None else run, count))


class RunsFamily(KernelFamily, abc.ABC):
    """A family whose kernels write their outputs one by one (RUNS_ELEMENTS: runs_order, and
    run_length for the plan option `run`), other run lengths of `runs` its variants."""

    strategies = RUNS_ELEMENTS
    options = ("run",)

    def variants(self, problem, caps: Caps | None, strategy: str) -> tuple[dict, ...]:
        """Other run lengths of `runs`."""
        return ({"run": 16}, {"run": 256}) if strategy == "runs" else ()


class GatherRunsFamily(RunsFamily):
    """A RunsFamily whose output elements each loop over a host-bounded number of
    contributions (the gradients' gathers: kernels/resample_grad.py, kernels/roi_align_grad.py):
    `per_element(problem)` returns that bound or raises the UnsupportedError past the loop
    budget; `op_of` and `count_of` name the operator and count its output elements."""

    #: Output elements per `runs` invocation by default; iterations an element spends besides
    #: its contributions (set-up, the store).
    RUN = 16
    OVERHEAD = 16

    @abc.abstractmethod
    def per_element(self, problem) -> int: ...

    @abc.abstractmethod
    def op_of(self, problem) -> str: ...

    @abc.abstractmethod
    def count_of(self, problem) -> int: ...

    def strategies_for(self, problem, caps, run=None) -> tuple[str, ...]:
        """Both (`runs` first on software adapters and without caps, `elements` first on
        GPUs), where one element's loop fits the budget."""
        self.per_element(problem)
        run_length(self.op_of(problem), "runs", run, self.count_of(problem), self.RUN)
        return runs_order(caps)

    def run_for(self, problem, caps, strategy: str, run=None) -> int:
        """The elements per invocation of a valid strategy: `run_length`'s, at most what the
        budget allows for elements of `per_element` iterations (UnsupportedError for a larger
        option `run`)."""
        op = self.op_of(problem)
        if strategy not in self.strategies_for(problem, caps, run):
            raise InternalError(f"{op}: strategy {strategy} cannot run {problem}")
        per = self.per_element(problem)
        most = max(1, (LOOP_BUDGET - self.OVERHEAD) // (per + self.OVERHEAD))
        if strategy == "runs" and run is not None and run > most:
            raise UnsupportedError(f"{op}: option run = {run}: {run} elements of up to {per} iterations pass one "
                                   f"invocation's loop budget ({LOOP_BUDGET})")
        return run_length(op, strategy, run, self.count_of(problem), min(self.RUN, most))


def element_bits(desc) -> int:
    """The element width of a TensorDesc in bits."""
    return desc.data_type.size * 8
