"""DML_OPERATOR_ADAM_OPTIMIZER (FL 3.0): one Adam step, element-wise over the parameters,
run by the optimizer family (kernels/optimizer.py: one kernel writing the three outputs).
docs/operators/adam_optimizer.md and docs/training.md say the same for users.

What the page says (sdk-api's DML_ADAM_OPTIMIZER_OPERATOR_DESC, stored under
tests/data/pages/), as implemented:

    M' = Beta1 M + (1 - Beta1) G
    V' = Beta2 V + (1 - Beta2) G G
    Alpha = sqrt(1 - Beta2^T) / (1 - Beta1^T)
    X' = X - LearningRate Alpha M' / (sqrt(V') + Epsilon)

- InputParametersTensor (X), InputFirstMomentTensor (M), InputSecondMomentTensor (V),
  GradientTensor (G) and the three outputs: 4 dimensions, one set of Sizes, FLOAT32 or
  FLOAT16, one DataType; TrainingStepTensor (T): {1, 1, 1, 1}.
- The page contradicts itself on T's type: the field's text says UINT32, its "Tensor
  constraints" (every tensor one DataType) and its "Tensor support" table (FLOAT32,
  FLOAT16) say the parameters' type. gpudml follows the constraints and the table (two of
  the three): T has the parameters' data type (a float counts steps exactly up to 2^24,
  FLOAT16 up to 2048). The field's text says T typically starts at 0; the formula is then
  0 / 0 (NaN): start at 1, as Adam's paper and PyTorch do (docs/training.md increments
  it with dml.add after each step).
- The hyperparameters are DirectML FLOATs (float32). The page only says the betas "should
  be between 0.0 and 1.0"; gpudml rejects what makes the step meaningless, as issue 48
  asks: LearningRate finite and >= 0, Beta1 and Beta2 in [0, 1) (1 makes 1 - Beta^T zero:
  0 / 0), Epsilon finite and > 0 (the page: "to prevent division by zero"). NaN is none of
  these.
- In-place execution: the page lets each output alias its input (X with X', M with M', V
  with V'). gpudml never binds one buffer as an input and an output of a dispatch (WebGPU
  forbids a buffer both read-only and writable in one dispatch; CompiledOperator.execute
  rejects it): "in place" for gpudml's Tensors is rebinding, `x, m, v = dml.adam_optimizer(x,
  m, v, g, t, ...)`: the old Tensors go back to the device's pool when dropped, and the next
  step takes their buffers again (no allocation in steady state), or execute(inputs,
  outputs=...) with two sets of Tensors used in turn (ping-pong).

The functional form `adam_optimizer(parameters, first_moment, second_moment, gradient,
training_step, *, learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-8)` returns the
tuple (output parameters, output first moment, output second moment), DirectML's field
order (API.md 15); the tensors are 4-D as the page says; `training_step` is any one-element
array or Tensor of the parameters' type (read as {1, 1, 1, 1}); a Python number is a
FLOAT32 one.

Precision (`tolerance`), against the float64 reference of the float32 values (u = 2^-24;
WGSL's accuracy table): the new moments within 2 ULP of float32 at |b1 M| + |c1 G| (|b2 V| +
|c2 G G|) (two products and a sum; c = 1 - b rounded to float32) plus 2^-126 (flushed
subnormals): e_M, e_V. The bias correction Alpha within 64 u relative (1 - b^T: 1 -
2^(T log2 b), exp2's 3 + 2|x| ULP at most 26 u relative to 1 - b^T where the series is not
used, the series' 5 u where it is, T log2 b's rounding 2 u; sqrt 4.5 ULP, the division 2.5).
The step U = LearningRate Alpha M' / (S + Epsilon), S = sqrt(V'): within |U| (80 u + e_S / (S +
Epsilon)) + LearningRate |Alpha| e_M / (S + Epsilon), e_S = min(e_V / (2 S), sqrt(e_V)) (the square
root's spread). X' within that plus 1 ULP of float32 at |X| + |U| (the subtraction) and
2^-126. Every output within 1 ULP more of its own type (FLOAT16's rounding).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..errors import InvalidArgumentError
from ..kernels import optimizer
from ..kernels.base import ProblemPlanner
from ..tensor_desc import TensorDesc
from ..types import F16, F32, FeatureLevel
from .activations import as_float32
from .base import check_one_type
from .precision import ulp
from .spec import Call, Cli, CliArg, OpSpec, support_table

OP = "AdamOptimizer"
FL = FeatureLevel
FLOATS = frozenset({F32, F16})
INPUTS = ("input_parameters_tensor", "input_first_moment_tensor", "input_second_moment_tensor", "gradient_tensor",
          "training_step_tensor")
OUTPUTS = ("output_parameters_tensor", "output_first_moment_tensor", "output_second_moment_tensor")
TENSORS = INPUTS + OUTPUTS
SUPPORT = support_table(OP, TENSORS, [(FL.FL_3_0, {4}, FLOATS)])
HYPERPARAMETERS = ("learning_rate", "beta1", "beta2", "epsilon")


@dataclass(frozen=True)
class AdamOptimizerOperatorDesc:
    """DML_ADAM_OPTIMIZER_OPERATOR_DESC: one Adam step (module docstring)."""

    input_parameters_tensor: TensorDesc
    input_first_moment_tensor: TensorDesc
    input_second_moment_tensor: TensorDesc
    gradient_tensor: TensorDesc
    training_step_tensor: TensorDesc
    output_parameters_tensor: TensorDesc
    output_first_moment_tensor: TensorDesc
    output_second_moment_tensor: TensorDesc
    learning_rate: float = 0.001
    beta1: float = 0.9
    beta2: float = 0.999
    epsilon: float = 1e-8

    def __post_init__(self):
        for name in HYPERPARAMETERS:
            object.__setattr__(self, name, as_float32(getattr(self, name), f"{OP}: {name}"))


def check_hyperparameters(learning_rate: float, beta1: float, beta2: float, epsilon: float) -> None:
    """The ranges gpudml holds the hyperparameters to (module docstring); InvalidArgumentError."""
    if not (math.isfinite(learning_rate) and learning_rate >= 0):
        raise InvalidArgumentError(f"{OP}: learning_rate = {learning_rate!r} must be finite and >= 0")
    for name, value in (("beta1", beta1), ("beta2", beta2)):
        if not 0.0 <= value < 1.0:
            raise InvalidArgumentError(f"{OP}: {name} = {value!r} must be in [0, 1) (1 - {name}^T is the "
                                       f"bias correction's divisor)")
    if not (math.isfinite(epsilon) and epsilon > 0):
        raise InvalidArgumentError(f"{OP}: epsilon = {epsilon!r} must be finite and > 0 (it keeps the "
                                   f"division by sqrt(V) + epsilon away from zero)")


def validate(desc: AdamOptimizerOperatorDesc, level: FeatureLevel) -> None:
    """The page's rules: every tensor valid, 4-D, one data type (FLOAT32 or FLOAT16) from FL
    3.0; the parameters, moments, gradient and outputs one set of sizes; the training step
    {1, 1, 1, 1}; the hyperparameters in range."""
    check_one_type(OP, SUPPORT, level, {f: getattr(desc, f) for f in TENSORS})
    sizes = desc.input_parameters_tensor.sizes
    for field in TENSORS[1:4] + OUTPUTS:
        own = getattr(desc, field).sizes
        if own != sizes:
            raise InvalidArgumentError(f"{OP}: {field}.sizes {list(own)} must equal input_parameters_tensor.sizes "
                                       f"{list(sizes)}")
    step = desc.training_step_tensor.sizes
    if any(n != 1 for n in step):
        raise InvalidArgumentError(f"{OP}: training_step_tensor.sizes {list(step)} must be [1, 1, 1, 1] (a scalar)")
    check_hyperparameters(desc.learning_rate, desc.beta1, desc.beta2, desc.epsilon)


def problem(desc: AdamOptimizerOperatorDesc) -> optimizer.Adam:
    """The optimizer family's problem: the desc's tensors and hyperparameters."""
    return optimizer.Adam(OP, *(getattr(desc, f) for f in TENSORS), desc.learning_rate, desc.beta1, desc.beta2,
                          desc.epsilon)


# ============================================================================ shapes, the reference
def infer_output(parameters: TensorDesc, first_moment: TensorDesc, second_moment: TensorDesc,
                 gradient: TensorDesc, training_step: TensorDesc, *, learning_rate=0.001, beta1=0.9, beta2=0.999,
                 epsilon=1e-8) -> AdamOptimizerOperatorDesc:
    """The desc of the functional call: a one-element training step read as {1, 1, 1, 1} (1 on
    each of the parameters' axes);
    the outputs packed, of the parameters' sizes and type."""
    step, ones = training_step, [1] * parameters.rank
    if step.element_count == 1 and list(step.sizes) != ones:
        step = TensorDesc(step.data_type, ones, total_tensor_size_in_bytes=step.total_tensor_size_in_bytes)
    outs = [TensorDesc(parameters.data_type, parameters.sizes) for _ in OUTPUTS]
    return AdamOptimizerOperatorDesc(parameters, first_moment, second_moment, gradient, step, *outs,
                                     learning_rate=learning_rate, beta1=beta1, beta2=beta2, epsilon=epsilon)


def _hyper(learning_rate, beta1, beta2, epsilon) -> tuple[float, float, float, float]:
    values = tuple(as_float32(v, f"adam_optimizer: {n}") for n, v in zip(HYPERPARAMETERS,
                                                                          (learning_rate, beta1, beta2, epsilon)))
    check_hyperparameters(*values)
    return values


def _step64(x, m, v, g, t, lr, b1, b2, eps):
    """The page's formula in float64 (its NaN where it has one: T = 0 is 0 / 0)."""
    with np.errstate(all="ignore"):
        m1 = b1 * m + (1.0 - b1) * g
        v1 = b2 * v + (1.0 - b2) * g * g
        alpha = np.sqrt(1.0 - np.power(b2, t)) / (1.0 - np.power(b1, t))
        return x - lr * alpha * m1 / (np.sqrt(v1) + eps), m1, v1, alpha


def reference(parameters, first_moment, second_moment, gradient, training_step, *, learning_rate=0.001, beta1=0.9,
              beta2=0.999, epsilon=1e-8):
    """DML_ADAM_OPTIMIZER in numpy: (X', M', V'), computed in float64 from the inputs' values
    and the float32 hyperparameters, each rounded once to the parameters' type."""
    x = np.asarray(parameters)
    lr, b1, b2, eps = _hyper(learning_rate, beta1, beta2, epsilon)
    t = float(np.asarray(training_step, np.float64).reshape(-1)[0])
    arrays = [np.asarray(a, np.float64) for a in (parameters, first_moment, second_moment, gradient)]
    out = _step64(*arrays, t, lr, b1, b2, eps)[:3]
    return tuple(np.asarray(o).astype(x.dtype) for o in out)


def bounds(parameters, first_moment, second_moment, gradient, training_step, *, learning_rate=0.001, beta1=0.9,
           beta2=0.999, epsilon=1e-8) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The documented precision of (X', M', V') (module docstring), per element."""
    x, m, v, g = (np.asarray(a, np.float64) for a in (parameters, first_moment, second_moment, gradient))
    lr, b1, b2, eps = _hyper(learning_rate, beta1, beta2, epsilon)
    t = float(np.asarray(training_step, np.float64).reshape(-1)[0])
    u = 2.0**-24
    tiny = 2.0**-126
    with np.errstate(all="ignore"):
        x1, m1, v1, alpha = _step64(x, m, v, g, t, lr, b1, b2, eps)
        e_m = 2 * ulp(np.abs(b1 * m) + np.abs((1 - b1) * g), np.float32) + tiny
        e_v = 2 * ulp(np.abs(b2 * v) + np.abs((1 - b2) * g * g), np.float32) + tiny
        s = np.sqrt(np.maximum(v1, 0.0))
        e_s = np.minimum(np.where(s > 0, e_v / (2 * s), np.inf), np.sqrt(e_v))
        step = lr * alpha * m1 / (s + eps)
        e_x = (np.abs(step) * (80 * u + e_s / (s + eps)) + lr * abs(alpha) * e_m / (s + eps)
               + ulp(np.abs(x) + np.abs(step), np.float32) + tiny)
    dtype = np.asarray(parameters).dtype
    own = (lambda y: ulp(y, dtype)) if dtype == np.float16 else (lambda y: 0.0)
    return tuple(np.nan_to_num(e + own(y), nan=np.inf) for e, y in ((e_x, x1), (e_m, m1), (e_v, v1)))


def tolerance(expected, inputs, arguments: dict):
    """The documented precision of the output `expected` is (module docstring): each output
    is told apart by its values (the reference's of the same inputs); where two outputs hold
    the same values, the larger bound."""
    outs = reference(*inputs, **arguments)
    found = [b for o, b in zip(outs, bounds(*inputs, **arguments))
             if o.shape == np.shape(expected) and np.array_equal(o, expected, equal_nan=True)]
    if not found:
        raise InvalidArgumentError(f"{OP}: tolerance: the expected values are none of the reference's outputs")
    return np.maximum.reduce(found)


def adam_optimizer(parameters, first_moment, second_moment, gradient, training_step, *, learning_rate=0.001,
                   beta1=0.9, beta2=0.999, epsilon=1e-8, device=None):
    """DML_OPERATOR_ADAM_OPTIMIZER: one Adam step, (new parameters, new first moment, new
    second moment): M' = beta1 M + (1 - beta1) G, V' = beta2 V + (1 - beta2) G^2, X' = X -
    learning_rate sqrt(1 - beta2^T) / (1 - beta1^T) M' / (sqrt(V') + epsilon). 4-D FLOAT32 or
    FLOAT16 tensors of one shape; `training_step` T, one element of the parameters' type
    (start at 1; T = 0 is 0 / 0). learning_rate >= 0, beta1 and beta2 in [0, 1), epsilon > 0.
    Feed the outputs back as the next step's inputs (gpudml's "in place":
    docs/operators/adam_optimizer.md)."""
    return Call([("parameters", parameters), ("first_moment", first_moment), ("second_moment", second_moment),
                 ("gradient", gradient), ("training_step", training_step, _step_array)],
                {"learning_rate": learning_rate, "beta1": beta1, "beta2": beta2, "epsilon": epsilon}, device)


def _step_array(value) -> np.ndarray:
    """A training step given as a Python number: a FLOAT32 one; a numpy scalar keeps its type
    (either read as {1, 1, 1, 1}); an array is as it is."""
    if isinstance(value, (int, float)) and not isinstance(value, (bool, np.generic)):
        return np.full((1, 1, 1, 1), value, np.float32)
    if isinstance(value, (np.generic, np.ndarray)) and np.ndim(value) == 0:
        return np.asarray(value).reshape(1, 1, 1, 1)
    return value


def arguments(desc: AdamOptimizerOperatorDesc) -> dict:
    return {name: getattr(desc, name) for name in HYPERPARAMETERS}


def _from_cli(x: TensorDesc, o: dict) -> AdamOptimizerOperatorDesc:
    """--shape is the parameters' (4-D); the moments and gradient alike; the hyperparameters."""
    x = TensorDesc(x.data_type, x.sizes, x.strides)
    same = TensorDesc(x.data_type, x.sizes)
    given = {n: float(o[n]) for n in HYPERPARAMETERS if o.get(n) is not None}
    return infer_output(x, same, same, same, TensorDesc(x.data_type, [1, 1, 1, 1]), **given)


def sample(desc: AdamOptimizerOperatorDesc, rng) -> list:
    """Inputs worth a step: parameters, first moment and gradient uniform in [-2, 2], the
    second moment in [0, 2] (a mean of squares), the training step 1 to 100."""
    out = []
    for field in INPUTS:
        td = getattr(desc, field)
        if field == "training_step_tensor":
            values = rng.integers(1, 101, td.required_elements).astype(np.float64)
        else:
            values = rng.uniform(0.0 if field == "input_second_moment_tensor" else -2.0, 2.0, td.required_elements)
        out.append(values.astype(td.data_type.numpy))
    return out


SPEC = OpSpec(
    name=OP, key="adam_optimizer", desc=AdamOptimizerOperatorDesc, support=SUPPORT,
    infer_output=infer_output, validate=validate, reference=reference, functional=adam_optimizer,
    tensors=("parameters", "first_moment", "second_moment", "gradient", "training_step"), arguments=arguments,
    planner=ProblemPlanner(problem, optimizer.FAMILY),
    cli=Cli((CliArg("--learning-rate", "LearningRate (default 0.001)", "number"),
             CliArg("--beta1", "Beta1 (default 0.9)", "number"), CliArg("--beta2", "Beta2 (default 0.999)", "number"),
             CliArg("--epsilon", "Epsilon (default 1e-8)", "number")), _from_cli, "--shape 1,1,256,1024"),
    page="DML_ADAM_OPTIMIZER_OPERATOR_DESC", tolerance=tolerance, sample=sample,
)

__all__ = ["AdamOptimizerOperatorDesc", "SPEC"]
