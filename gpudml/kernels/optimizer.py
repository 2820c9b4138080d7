"""The optimizer family: DirectML's ADAM_OPTIMIZER, element-wise over the parameters' rows,
one kernel for the three outputs (shaders/adam_optimizer.wgsl.j2):

    output first moment  M' = b1 M + c1 G
    output second moment V' = b2 V + c2 G G
    output parameters    X' = X - lr alpha(T) M' / (sqrt(V') + eps)

with c1 = 1 - b1 and c2 = 1 - b2 (the host's, float64 rounded to float32) and alpha(T) =
sqrt(1 - b2^T) / (1 - b1^T), computed once per invocation from the training step (element
0 of its tensor). Each element reads X, M, V and G once through its own strides (stride 0
broadcasts) and writes the three outputs through theirs; FLOAT32 and FLOAT16 compute in
float32 (float16 read exactly, each output rounded once on its store, 16-bit stores as the
element stores of lib/elements: atomic read-modify-write of the shared word). The
hyperparameters travel as uniforms: a new learning rate compiles nothing.

1 - beta^T is the template's one_minus_pow: 1 - 2^(T l) with l = log2(beta) computed on the
host in float64 (at least LOG2_FLOOR: beta = 0 gives 2^-256 = 0), 0 at T = 0 exactly
(beta^0 = 1), and where |T l ln 2| < 0.25 the series of -expm1, so that 1 - b2^T near T = 1
(b2 = 0.999: 0.001) does not lose the digits a subtraction of exp2's result would.

Strategies (kernels/base.py's RunsFamily): `runs` (CPU-class, RUN elements per invocation,
the plan option `run`) and `elements` (GPU-class, one element per invocation, neighbours on
neighbouring elements). `Adam` is the problem; `FAMILY` the family.
"""

from __future__ import annotations

import math
from typing import NamedTuple

from ..errors import InternalError, UnsupportedError
from ..tensor_desc import TensorDesc
from .base import RunsFamily, element_bits, run_length, runs_order
from .builder import Dispatch, KernelPlan, f32_bits, input_buffer, output_buffer

#: Elements per `runs` invocation.
RUN = 64
WORKGROUP_SIZE = 64
#: The least log2(beta) the kernel takes (beta = 0: 2^(-256 T) is 0 in float32 for T >= 1).
LOG2_FLOOR = -256.0


class Adam(NamedTuple):
    """One ADAM_OPTIMIZER: the inputs and outputs (4-D, one set of sizes; the training step
    {1, 1, 1, 1}), the hyperparameters (float32 values)."""

    op: str
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


def _run(p: Adam, strategy: str, run) -> int:
    return run_length(p.op, strategy, run, p.parameters.element_count, RUN)


def strategies_for(p: Adam, caps, run=None) -> tuple[str, ...]:
    """Both strategies (`runs` first on software adapters and without caps), for 4-D FLOAT32
    or FLOAT16 tensors."""
    if p.parameters.rank != 4 or not p.parameters.data_type.is_float or element_bits(p.parameters) > 32:
        raise UnsupportedError(f"{p.op}: the optimizer kernel takes 4-D FLOAT32 or FLOAT16 tensors (got "
                               f"{p.parameters.data_type.name} sizes {list(p.parameters.sizes)})")
    _run(p, "runs", run)
    return runs_order(caps)


def plan(p: Adam, caps, strategy: str, run=None) -> KernelPlan:
    if strategy not in strategies_for(p, caps, run):
        raise InternalError(f"{p.op}: strategy {strategy} cannot run {p}")
    bits = element_bits(p.parameters)
    length = _run(p, strategy, run)
    count = p.parameters.element_count
    strides = {"out_x": p.output_parameters, "out_m": p.output_first_moment, "out_v": p.output_second_moment,
               "x": p.parameters, "m": p.first_moment, "v": p.second_moment, "g": p.gradient}
    uniforms = {"count": count, "run": length, "sizes": p.parameters.sizes,
                **{f"strides_{name}": td.effective_strides for name, td in strides.items()},
                **{name: f32_bits(value) for name, value in (
                    ("lr", p.learning_rate), ("b1", p.beta1), ("b2", p.beta2), ("c1", 1.0 - p.beta1),
                    ("c2", 1.0 - p.beta2), ("l1", _log2(p.beta1)), ("l2", _log2(p.beta2)), ("eps", p.epsilon))}}
    buffers = (output_buffer(0, "out_x", bits, "stores"), output_buffer(1, "out_m", bits, "stores"),
               output_buffer(2, "out_v", bits, "stores"),
               *(input_buffer(k, name) for k, name in enumerate(("x", "m", "v", "g", "t"))))
    return KernelPlan((Dispatch("adam_optimizer.wgsl.j2", {"bits": bits}, buffers, uniforms,
                                -(-count // length), WORKGROUP_SIZE),))


class AdamFamily(RunsFamily):
    """The optimizer family: the module's functions over an `Adam`."""

    def strategies_for(self, problem: Adam, caps, run=None) -> tuple[str, ...]:
        return strategies_for(problem, caps, run)

    def plan(self, problem: Adam, caps, strategy: str, run=None) -> KernelPlan:
        return plan(problem, caps, strategy, run)


FAMILY = AdamFamily()
