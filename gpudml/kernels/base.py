"""The one protocol of the kernel layer: `Planner`, how the descriptions of an operator run.

Every kernel family implements it (kernels/movement/, kernels/reduction.py,
kernels/scan.py), and so do the fused kernels of graphs (gpudml/fusion.py). An operator's
spec (gpudml/ops/) holds one instance, its `planner`, made by its family; the compiler,
the autotuner, the lab and the graph fuser ask only these questions:

- `strategies` and `options`: the named kernel strategies and the plan's keyword options;
- `strategies_for(desc, caps, **options)`: those that can run `desc` on an adapter with
  capabilities `caps`, the choice first (UnsupportedError when none can);
- `plan(desc, caps, strategy, **options) -> KernelPlan`: the dispatches;
- `variants(desc, caps, strategy)`: option sets worth timing when autotuning;
- fusion hooks: `stage(desc)`, the operator's index rule as a stage of a data-movement
  chain (kernels/chain.py), so that a graph runs a chain of such operators as one kernel;
  and the prologue, `prologue` True with `strategies_through` and `plan_through`: the
  operator reads its first input through such a chain, or through fused element-wise
  and data-movement nodes (the element-wise family's FusedProblem in coordinate mode),
  instead of a tensor (a Reduce after a pad never materializes the pad, nor after an exp
  the exp); and the epilogue, `epilogue` True with `strategies_with_epilogue` and
  `plan_with_epilogue`: the operator's kernels apply element-wise steps to each value
  before they store it (kernels/epilogue.py; DirectML's FusedActivation generalized), so
  that a graph's `relu(gemm(a, b) + bias)` is one kernel.

Also here: what every family's plan options and loops share. Nothing in kernels/ imports
the operators (gpudml/ops/) nor wgpu: a family reads the fields of the descriptions it is
given, and the runtime runs the plans.
"""

from __future__ import annotations

import abc
from typing import TYPE_CHECKING

import numpy as np

from ..errors import InternalError, InvalidArgumentError

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


class Planner(abc.ABC):
    """How the descriptions of one operator (or of one fused group of them) run. See the
    module docstring; subclasses are the kernel families' bindings."""

    #: Every named strategy, CPU-class and GPU-class (`compile_operator(op, strategy=...)`).
    strategies: tuple[str, ...] = ()
    #: The plan's keyword options, knobs for experiments (tests, `gpudml lab`, autotuning).
    options: tuple[str, ...] = ()
    #: Whether the operator can read its first input through a chain (the prologue hook).
    prologue: bool = False
    #: Whether the operator's kernels can apply element-wise steps in their stores (the
    #: epilogue hook).
    epilogue: bool = False

    @abc.abstractmethod
    def strategies_for(self, desc, caps: Caps | None, **options) -> tuple[str, ...]:
        """The strategies that can run `desc`, the documented choice for `caps` first
        (None: the CPU-class order); UnsupportedError when none can."""

    @abc.abstractmethod
    def plan(self, desc, caps: Caps | None, strategy: str, **options) -> KernelPlan:
        """The dispatches that run `desc` under `strategy` (one of strategies_for's)."""

    def variants(self, desc, caps: Caps | None, strategy: str) -> tuple[dict, ...]:
        """Option sets worth timing beside `strategy`'s own plan when autotuning: the knobs
        whose best value depends on the adapter. None by default."""
        return ()

    def stage(self, desc) -> StageRule | None:
        """The operator's index rule as a stage of a chain, over the desc's own axes
        (data-movement operators); None: it is not a chain stage."""
        return None

    def strategies_through(self, desc, caps: Caps | None) -> tuple[str, ...]:
        """The prologue's strategies_for: reading the first input through a chain."""
        raise InternalError(f"{type(self).__name__} reads no input through a chain")

    def plan_through(self, desc, caps: Caps | None, strategy: str, chain: Chain,
                     epilogue: Epilogue | None = None) -> KernelPlan:
        """The plan of `desc` whose first input is the output of `chain` (as a packed
        tensor): the chain reads input 0 (its source) and inputs 1, 2, ... (its stages'
        extra tensors) of the kernels. `chain` may also be an elementwise.FusedProblem
        (element-wise nodes, with data movement): its value is computed in the loads
        (lib/fused.wgsl.j2), reading its inputs and then its stages' extra tensors. With
        `epilogue` (where the planner has the epilogue hook too, among
        strategies_with_epilogue's), its kernels also store the epilogue's result, as
        plan_with_epilogue's do, its tensors bound after the prologue's."""
        raise InternalError(f"{type(self).__name__} reads no input through a chain")

    def strategies_with_epilogue(self, desc, caps: Caps | None, epilogue: Epilogue) -> tuple[str, ...]:
        """The epilogue's strategies_for: those whose kernels can apply `epilogue` in their
        stores (by default all of strategies_for's)."""
        return self.strategies_for(desc, caps)

    def plan_with_epilogue(self, desc, caps: Caps | None, strategy: str, epilogue: Epilogue) -> KernelPlan:
        """The plan of `desc` whose kernels store `epilogue`'s result of each output value
        instead of the value (kernels/epilogue.py): the output tensor is the epilogue's, and
        the tensors the epilogue reads are the kernels' inputs after the desc's own."""
        raise InternalError(f"{type(self).__name__} applies no epilogue in its stores")


class ProblemPlanner(Planner):
    """The Planner of a family whose functions take a problem rather than a desc: the
    operator gives `problem(desc)` (what a description computes, in the family's terms), the
    family its module's `strategies_for(problem, caps, **options)`, `plan(problem, caps,
    strategy, **options)` and `variants(problem, caps, strategy)`, and its `strategies` and
    `options` (its STRATEGIES and OPTIONS).

    The family module is either given to the constructor (the pooling family:
    `ProblemPlanner(problem, kernels.pooling)`) or named by a subclass's class attribute
    `family`, the subclass adding only what is its own, such as the epilogue hook (the GEMM
    and normalize families: kernels/gemm.py's GemmPlanner, kernels/normalize.py's
    NormalizePlanner, made as `GemmPlanner(problem)`)."""

    #: The family module, where a subclass is bound to one (None: the constructor's `family`).
    family = None

    def __init__(self, problem, family=None):
        self.problem = problem
        if family is not None:
            self.family = family
        if self.family is None:
            raise InternalError(f"{type(self).__name__}: no kernel family")
        self.strategies, self.options = self.family.STRATEGIES, self.family.OPTIONS

    def strategies_for(self, desc, caps, **options) -> tuple[str, ...]:
        return self.family.strategies_for(self.problem(desc), caps, **options)

    def plan(self, desc, caps, strategy: str, **options) -> KernelPlan:
        return self.family.plan(self.problem(desc), caps, strategy, **options)

    def variants(self, desc, caps, strategy: str) -> tuple[dict, ...]:
        return self.family.variants(self.problem(desc), caps, strategy)


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


def element_bits(desc) -> int:
    """The element width of a TensorDesc in bits."""
    return desc.data_type.size * 8
