"""The rule of DML_ADAM_OPTIMIZER."""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

import gpudml as dml
from gpudml.ops import spec_named
from gpudml.ops.adam_optimizer import bounds as adam_bounds
from gpudml.testing import assert_within

from ..draws import Draw
from ..hostile import maybe_hostile, one_more, replace_fields
from ..registry import Ask, Drawn, rule

_SAME_SIZES = ("input_first_moment_tensor", "input_second_moment_tensor", "gradient_tensor",
               "output_parameters_tensor", "output_first_moment_tensor", "output_second_moment_tensor")
_HYPER = ("learning_rate", "beta1", "beta2", "epsilon")


@rule("adam_optimizer", broken=lambda desc: _adam_broken(desc),
      functional=lambda x, shape: _adam_functional(x, shape),
      compare=lambda got, want, x, args: _adam_compare(got, want, x, args),
      fields=("parameters", "first_moment", "second_moment", "gradient", "training_step",
              "input_parameters_tensor", "training_step_tensor", "DimensionCount", "device") + _SAME_SIZES + _HYPER)
def adam_optimizer_call(d: Draw, ask: Ask) -> Drawn:
    """The moments and the gradient of the parameters' sizes, the step {1, 1, 1, 1}; the
    hyperparameters near the usual ones, now and then at their ranges' ends (0, just below 1)."""
    x = ask.input(d)
    same = dml.TensorDesc(ask.data_type, x.sizes)
    step = dml.TensorDesc(ask.data_type, [1] * ask.rank)
    attributes = {"learning_rate": d.pick([1e-3, 1e-2, 0.5, 0.0]), "beta1": d.pick([0.9, 0.5, 0.0, 0.99999]),
                  "beta2": d.pick([0.999, 0.9, 0.0, 0.99999]), "epsilon": d.pick([1e-8, 1e-3, 1.0, 1e-30])}
    return Drawn([x, same, same, same, step], attributes)


@st.composite
def _adam_broken(draw, desc):
    kind = draw(st.sampled_from(["sizes", "step_sizes", "learning_rate", "beta", "epsilon", "not_a_number"]))
    x = desc.input_parameters_tensor
    if kind == "sizes":  # a moment, the gradient or an output of other sizes
        field = draw(st.sampled_from(_SAME_SIZES))
        axis = draw(st.integers(0, x.rank - 1))
        return replace_fields(desc, **{field: one_more(getattr(desc, field), axis)}), f"{field}.sizes", kind
    if kind == "step_sizes":
        axis = draw(st.integers(0, 3))
        return replace_fields(desc, training_step_tensor=one_more(desc.training_step_tensor, axis)), \
            "training_step_tensor.sizes", kind
    if kind == "learning_rate":
        value = draw(st.sampled_from([-1e-3, -0.0001, float("nan"), float("inf"), -float("inf")]))
        return replace_fields(desc, learning_rate=value), "learning_rate", kind
    if kind == "beta":
        field = draw(st.sampled_from(["beta1", "beta2"]))
        value = draw(st.sampled_from([1.0, -0.1, 1.5, float("nan"), -float("inf"), 1e30]))
        return replace_fields(desc, **{field: value}), field, kind
    if kind == "epsilon":
        value = draw(st.sampled_from([0.0, -1e-8, -0.0, float("nan"), float("inf")]))
        return replace_fields(desc, epsilon=value), "epsilon", kind
    field = draw(st.sampled_from(_HYPER))
    return replace_fields(desc, **{field: draw(st.sampled_from(["0.1", None, [0.1], True, 1e300]))}), field, kind


@st.composite
def _adam_functional(draw, x, shape):
    """The moments, gradient and step of x's shape and type (now and then a shape that does
    not fit); the hyperparameters now and then hostile or out of range."""
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    numeric = isinstance(x, np.ndarray) and x.dtype.kind in "fiu"
    dtype = x.dtype.newbyteorder("=") if numeric else np.dtype(np.float32)
    own = list(shape) if draw(st.integers(0, 5)) else [n + 1 for n in shape] or [2]
    args = {"first_moment": rng.uniform(-1, 1, own).astype(dtype),
            "second_moment": rng.uniform(0, 1, own).astype(dtype),
            "gradient": rng.uniform(-1, 1, own).astype(dtype),
            "training_step": draw(st.sampled_from([np.ones((1, 1, 1, 1), dtype), np.full((1,), 7, dtype), 3,
                                                    np.ones((1, 2), dtype)]))}
    args["learning_rate"] = maybe_hostile(draw, draw(st.sampled_from([1e-3, 0.1, -0.1])))
    args["beta1"] = draw(st.sampled_from([0.9, 0.9, 1.0, "0.9"]))
    args["beta2"] = draw(st.sampled_from([0.999, 0.999, -0.5]))
    args["epsilon"] = draw(st.sampled_from([1e-8, 1e-8, 0.0]))
    return args, lambda a: spec_named("adam_optimizer").reference(a, **args)


def _adam_compare(got, want, x, args):
    """Each output within the documented precision."""
    inputs = [x, *(args[k] for k in ("first_moment", "second_moment", "gradient"))]
    step = args["training_step"]
    inputs.append(np.full((1, 1, 1, 1), step, np.float32) if isinstance(step, int) else step)
    hyper = {k: args[k] for k in _HYPER}
    bounds = adam_bounds(*inputs, **hyper)
    assert isinstance(got, tuple) and len(got) == 3
    for g, w, b in zip(got, want, bounds):
        assert_within(g, w, b, "AdamOptimizer")
