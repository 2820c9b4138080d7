"""DYNAMIC_QUANTIZE_LINEAR as a composite (kernels/composite.py) of the reduction family and
the element-wise family, in 2 dispatches (3 where the reduction needs a second stage):

1. the input's least and greatest values in one pass: the reduction family's MIN_MAX over
   every axis (one State holding both; kernels/reduction.py), whose last stage (the one
   pass, or the combine of partial States for inputs one invocation's loop budget or a GPU's
   width cuts into chunks) derives the scale and the zero point from the two extremes with
   shaders/lib/elementwise.wgsl.j2's dql_scale and dql_zero_point, and writes them (the
   scale as the reduction's output, the zero point from the same invocation) into the
   operator's outputs 1 and 2;
2. the input quantized by them: the element-wise `quantize` problem the operator gives,
   reading outputs 1 and 2 broadcast by stride 0.

Bit-identical to MIN and MAX reductions followed by the two one-element kernels (the five
dispatches before): the extremes are exact whatever the merge order (only which NaN, or
-0.0 against 0.0, can differ, and neither changes the scale or the zero point), and the
helpers are the same. The scale and the zero point are computed once, by one invocation,
rather than by each invocation of the quantizing kernel (that would repeat dql_scale's and
dql_zero_point's exact divisions per element).

The strategies are the reduction's (the MIN_MAX reduction runs the one named); the
element-wise step takes its family's choice for the adapter.
"""

from __future__ import annotations

from typing import NamedTuple

from ..tensor_desc import TensorDesc
from . import composite, elementwise, reduction
from .base import ProblemPlanner
from .builder import INPUT, OUTPUT


class DynamicQuantize(NamedTuple):
    """What the operator computes, in the families' terms: `input` (FLOAT32 or FLOAT16), the
    outputs `output` (the quantized input), `scale` (FLOAT32) and `zero_point` (INT8 or
    UINT8, each of one element), and `quantize`, the element-wise problem of the last step
    (the input, the scale and the zero point read at the input's sizes, into `output`)."""

    input: TensorDesc
    output: TensorDesc
    scale: TensorDesc
    zero_point: TensorDesc
    quantize: elementwise.Problem


def extremes(p: DynamicQuantize) -> reduction.Reduction:
    """The MIN_MAX reduction over every axis, into the scale (its output)."""
    return reduction.Reduction(reduction.MIN_MAX, p.input, p.scale, tuple(range(p.input.rank)))


def levels(p: DynamicQuantize) -> tuple[int, int]:
    """(qmin, qmax) of the zero point's type."""
    return (-128, 127) if p.zero_point.data_type.is_signed else (0, 255)


class DynamicQuantizeFamily(composite.CompositeFamily):
    strategies = reduction.FAMILY.strategies

    def strategies_for(self, problem: DynamicQuantize, caps) -> tuple[str, ...]:
        """The reduction's, `columns` last (its invocations own neighbouring outputs, and this
        reduction has one) and, on GPU-class adapters, `workgroup` first: the family puts
        `columns`, then the CPU-class strategies, before it where the innermost axis is
        strided, but a whole tensor's elements are best cut among a workgroup's lanes (one
        pass where the input is small)."""
        found = reduction.FAMILY.strategies_for(extremes(problem), caps)
        gpu = caps is not None and not caps.is_software
        order = {"workgroup": 0 if gpu else 1, "columns": 2}
        return tuple(sorted(found, key=lambda s: order.get(s, 1)))

    def steps(self, problem: DynamicQuantize, caps, strategy: str, *, element_stores=False) -> composite.Composition:
        quantize = problem.quantize
        return composite.Composition((
            composite.Step(reduction.FAMILY, extremes(problem), strategy, composite.own(1),
                           ((OUTPUT, 1), (OUTPUT, 2)), {"dql": levels(problem)}),
            composite.Step(elementwise.FAMILY, quantize, elementwise.FAMILY.strategies_for(quantize, caps)[0],
                           ((INPUT, 0), (OUTPUT, 1), (OUTPUT, 2)), ((OUTPUT, 0),)),
        ))


FAMILY = DynamicQuantizeFamily()


def planner(problem) -> ProblemPlanner:
    """The operator's Planner: `problem(desc)` a DynamicQuantize."""
    return ProblemPlanner(problem, FAMILY)
