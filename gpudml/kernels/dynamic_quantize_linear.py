"""DYNAMIC_QUANTIZE_LINEAR as a composite (kernels/composite.py) of the reduction family and
the element-wise family: the input's least and greatest values (two reductions, MIN and MAX
over every axis, into intermediate values of one element: deterministic, as any order of
min and max gives the same value), the scale and the zero point from them (two element-wise
kernels of one element, shaders/lib/elementwise.wgsl.j2's dql_scale and dql_zero_point, into
the operator's outputs 1 and 2), then the input quantized by them (the element-wise
`quantize` problem the operator gives, reading outputs 1 and 2 broadcast by stride 0).

The strategies are the reduction's (both reductions run the one named); the element-wise
steps take their family's choice for the adapter.
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


def extremes(p: DynamicQuantize) -> tuple[TensorDesc, reduction.Reduction, reduction.Reduction]:
    """The intermediate value (one element of the input's type) and the MIN and MAX reductions."""
    value = TensorDesc(p.input.data_type, [1] * p.input.rank)
    axes = tuple(range(p.input.rank))
    return value, reduction.Reduction("MIN", p.input, value, axes), reduction.Reduction("MAX", p.input, value, axes)


def parameter_problems(p: DynamicQuantize) -> tuple[elementwise.Problem, elementwise.Problem]:
    """The scale's and the zero point's element-wise problems over the two extremes."""
    value = extremes(p)[0]
    signed = p.zero_point.data_type.is_signed
    qmin, qmax = (-128, 127) if signed else (0, 255)
    zero = f"dql_zero_point(a, b, {qmin}i, {qmax}i)"
    scale = elementwise.Problem("DynamicQuantizeLinear", (value, value), p.scale, ("float", "float"), "float",
                                "dql_scale(a, b)")
    zero_point = elementwise.Problem("DynamicQuantizeLinear", (value, value), p.zero_point, ("float", "float"),
                                     "sint" if signed else "uint", zero if signed else f"u32({zero})")
    return scale, zero_point


class DynamicQuantizeFamily(composite.CompositeFamily):
    strategies = reduction.FAMILY.strategies

    def strategies_for(self, problem: DynamicQuantize, caps) -> tuple[str, ...]:
        _, low, high = extremes(problem)
        return tuple(s for s in reduction.FAMILY.strategies_for(low, caps)
                     if s in reduction.FAMILY.strategies_for(high, caps))

    def steps(self, problem: DynamicQuantize, caps, strategy: str, *, element_stores=False) -> composite.Composition:
        value, low, high = extremes(problem)
        scale, zero_point = parameter_problems(problem)

        def ew(p, inputs, output) -> composite.Step:
            return composite.Step(elementwise.FAMILY, p, elementwise.FAMILY.strategies_for(p, caps)[0], inputs,
                                  (output,))
        values = ((composite.VALUE, 0), (composite.VALUE, 1))
        return composite.Composition((
            composite.Step(reduction.FAMILY, low, strategy, composite.own(1), (values[0],)),
            composite.Step(reduction.FAMILY, high, strategy, composite.own(1), (values[1],)),
            ew(scale, values, (OUTPUT, 1)),
            ew(zero_point, values, (OUTPUT, 2)),
            ew(problem.quantize, ((INPUT, 0), (OUTPUT, 1), (OUTPUT, 2)), (OUTPUT, 0)),
        ), (composite.value_bytes(value), composite.value_bytes(value)))


FAMILY = DynamicQuantizeFamily()


def planner(problem) -> ProblemPlanner:
    """The operator's Planner: `problem(desc)` a DynamicQuantize."""
    return ProblemPlanner(problem, FAMILY)
