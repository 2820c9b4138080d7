"""The optimizer family: DirectML's ADAM_OPTIMIZER, element-wise over the parameters' rows,
as three kernels of the element-wise family (kernels/elementwise.py), one per output:

    output parameters    X - lr alpha(T) (b1 M + c1 G) / (sqrt(b2 V + c2 G G) + eps)
    output first moment  b1 M + c1 G
    output second moment b2 V + c2 G G

with c1 = 1 - b1 and c2 = 1 - b2 (the host's, float64 rounded to float32) and
alpha(T) = sqrt(1 - b2^T) / (1 - b1^T). Each output is the element-wise family's formula
over the inputs (the training step read with stride 0 at the parameters' sizes), so every
layout, broadcast, strategy and FLOAT16 rounding is the element-wise family's; the
parameters' kernel recomputes the new moments in float32 rather than reading them back
(no kernel reads what another writes: the three are independent, any order). The
hyperparameters travel as uniforms: a new learning rate compiles nothing.

1 - beta^T is shaders/lib/elementwise.wgsl.j2's adam_one_minus_pow: 1 - 2^(T l) with l =
log2(beta) computed on the host in float64 (at least -256: beta = 0 gives 2^-256 = 0), 0 at
T = 0 exactly (beta^0 = 1), and where |T l ln 2| < 0.25 the series of -expm1, so that
1 - b2^T near T = 1 (b2 = 0.999: 0.001) does not lose the digits a subtraction of exp2's
result would.

`Adam` is the problem (TensorDescs and the four float32 hyperparameters); `FAMILY` the
composite family (kernels/composite.py) with the element-wise family's `runs` and
`elements` strategies (each kernel takes the strategy; the moments' kernels take `blocks`,
the element-wise family's first choice, where their tensors are packed).
"""

from __future__ import annotations

import math
from typing import NamedTuple

from ..tensor_desc import TensorDesc
from . import composite, elementwise
from .elementwise import Attribute, Problem

#: The formulas over the element-wise family's input names: the parameters' kernel reads
#: a (X), b (M), c (V), d (G), e (T); the moments' kernels a (M or V), b (G).
PARAMETERS = "a - u_lr * adam_alpha(F(e), u_l1, u_l2) * (u_b1 * b + u_c1 * d) / (sqrt(u_b2 * c + u_c2 * d * d) + u_eps)"
FIRST_MOMENT = "u_b1 * a + u_c1 * b"
SECOND_MOMENT = "u_b2 * a + u_c2 * b * b"
#: The least log2(beta) the kernels take (beta = 0: 2^(-256 T) is 0 in float32 for T >= 1).
LOG2_FLOOR = -256.0


class Adam(NamedTuple):
    """One ADAM_OPTIMIZER: the inputs (the training step already read at the parameters'
    sizes, stride 0), the outputs, the hyperparameters (float32 values)."""

    parameters: TensorDesc
    first_moment: TensorDesc
    second_moment: TensorDesc
    gradient: TensorDesc
    training_step: TensorDesc
    output_parameters: TensorDesc
    output_first_moment: TensorDesc
    output_second_moment: TensorDesc
    learning_rate: float
    beta1: float
    beta2: float
    epsilon: float


def _log2(beta: float) -> float:
    return max(math.log2(beta), LOG2_FLOOR) if beta > 0 else LOG2_FLOOR


def problems(p: Adam) -> tuple[Problem, Problem, Problem]:
    """The three element-wise problems: the parameters', the first moment's, the second's."""
    f = lambda name, v: Attribute(name, "f32", v)  # noqa: E731
    b1, b2 = f("b1", p.beta1), f("b2", p.beta2)
    c1, c2 = f("c1", 1.0 - p.beta1), f("c2", 1.0 - p.beta2)
    ins = (p.parameters, p.first_moment, p.second_moment, p.gradient, p.training_step)
    return (
        Problem("AdamOptimizer", ins, p.output_parameters, ("float",) * 5, "float", PARAMETERS,
                attributes=(f("lr", p.learning_rate), b1, b2, c1, c2, f("l1", _log2(p.beta1)),
                            f("l2", _log2(p.beta2)), f("eps", p.epsilon))),
        Problem("AdamOptimizer", (p.first_moment, p.gradient), p.output_first_moment, ("float",) * 2, "float",
                FIRST_MOMENT, attributes=(b1, c1)),
        Problem("AdamOptimizer", (p.second_moment, p.gradient), p.output_second_moment, ("float",) * 2, "float",
                SECOND_MOMENT, attributes=(b2, c2)),
    )


class AdamFamily(composite.CompositeFamily):
    strategies = ("runs", "elements")
    options = ()

    def strategies_for(self, problem: Adam, caps) -> tuple[str, ...]:
        for p in problems(problem):  # (UnsupportedError where a kernel's tensors cannot be bound)
            elementwise.FAMILY.strategies_for(p, caps)
        return ("runs", "elements") if caps is None or caps.is_software else ("elements", "runs")

    def steps(self, problem: Adam, caps, strategy: str, *, element_stores: bool = False) -> composite.Composition:
        own = composite.own
        parameters, first, second = problems(problem)

        def moment(p: Problem) -> str:
            return "blocks" if elementwise.FAMILY.strategies_for(p, caps)[0] == "blocks" else strategy
        return composite.Composition((
            composite.Step(elementwise.FAMILY, parameters, strategy, own(5), (("output", 0),)),
            composite.Step(elementwise.FAMILY, first, moment(first), (("input", 1), ("input", 3)), (("output", 1),)),
            composite.Step(elementwise.FAMILY, second, moment(second), (("input", 2), ("input", 3)),
                           (("output", 2),)),
        ))


FAMILY = AdamFamily()
