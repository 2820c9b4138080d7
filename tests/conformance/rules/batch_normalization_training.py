"""The rules of DML_BATCH_NORMALIZATION_TRAINING, DML_BATCH_NORMALIZATION_GRAD and
DML_BATCH_NORMALIZATION_TRAINING_GRAD."""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

import gpudml as dml
from gpudml.ops import spec_named
from gpudml.testing import assert_within

from ..draws import Draw
from ..hostile import maybe_hostile, one_more, replace_fields
from ..registry import Ask, Drawn, rule
from ._common import fused_activation

_GRAD_PARAMETERS = ("mean_tensor", "variance_tensor", "scale_tensor")
_GRAD_STATS = ("output_scale_gradient_tensor", "output_bias_gradient_tensor")


def _parameter_sizes(d: Draw, ask: Ask, sizes: list) -> list:
    """Per channel (axis 1; every other axis 1) most of the time, else of x's sizes or some
    axes of 1."""
    how = d.pick(["channel", "channel", "full", "mixed"])
    return {"channel": [n if i == 1 else 1 for i, n in enumerate(sizes)] if ask.rank >= 2 else [1],
            "full": sizes, "mixed": [n if d.bool() else 1 for n in sizes]}[how]


def _epsilon(d: Draw) -> float:
    return d.pick([1e-5, 1e-5, 1e-3, 0.5, 0.0])


def _within(key: str, tensors: tuple):
    def compare(got, want, x, args):
        """Each output within the documented precision."""
        spec = spec_named(key)
        inputs = [x] + [args[t] for t in tensors if args.get(t) is not None]
        attributes = {k: v for k, v in args.items() if k not in tensors}
        assert isinstance(got, tuple) and len(got) == len(want) == 3
        for g, w in zip(got, want):
            assert_within(g, w, spec.tolerance(w, inputs, attributes), spec.name)
    return compare


def _wrong(td: dml.TensorDesc, x: dml.TensorDesc, axis: int) -> dml.TensorDesc:
    """td with a size on `axis` that is neither 1 nor x's."""
    return one_more(td, axis, x.sizes[axis] + 1)


def _functional_parameters(draw, x, shape):
    """(a generator, the arrays' dtype, a parameter's shape): per channel ([C]) half the time,
    else of x's rank (sizes 1 or x's), or of a size that does not fit."""
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    numeric = isinstance(x, np.ndarray) and x.dtype.kind in "fiu"
    dtype = x.dtype.newbyteorder("=") if numeric else np.dtype(np.float32)
    channels = shape[1] if len(shape) >= 2 else (shape[0] if shape else 1)
    how = draw(st.sampled_from(["channel", "channel", "rank", "wrong"]))
    own = {"channel": [channels], "rank": [n if draw(st.booleans()) else 1 for n in shape] or [1],
           "wrong": [channels + 1]}[how]
    return rng, dtype, own


# ============================================================================ BATCH_NORMALIZATION_TRAINING
@st.composite
def _training_broken(draw, desc):
    x = desc.input_tensor
    kinds = ["scale_sizes", "bias_sizes", "mean_sizes", "variance_sizes", "output_sizes", "epsilon",
             "fused_activation"] + (["fused_add_sizes"] if desc.fused_add_tensor is not None else [])
    kind = draw(st.sampled_from(kinds))
    axis = draw(st.integers(0, x.rank - 1))
    if kind == "scale_sizes":
        return replace_fields(desc, scale_tensor=_wrong(desc.scale_tensor, x, axis)), "scale_tensor.sizes", kind
    field = {"bias_sizes": "bias_tensor", "mean_sizes": "output_mean_tensor",
             "variance_sizes": "output_variance_tensor", "output_sizes": "output_tensor",
             "fused_add_sizes": "fused_add_tensor"}.get(kind)
    if field is not None:  # (a size off by one: no longer the scale's, or the input's)
        return replace_fields(desc, **{field: one_more(getattr(desc, field), axis)}), f"{field}.sizes", kind
    if kind == "epsilon":
        return replace_fields(desc, epsilon=draw(st.sampled_from([-1.0, float("nan"), float("inf"), "x",
                                                                  None]))), "epsilon", kind
    return replace_fields(desc, fused_activation=draw(st.sampled_from(["bogus", 7]))), "fused_activation", kind


@st.composite
def _training_functional(draw, x, shape):
    """Scale and bias per channel ([C]), of x's rank, or (now and then) of a size that does
    not fit; a fused_add a third of the time; epsilon and the activation now and then hostile."""
    rng, dtype, own = _functional_parameters(draw, x, shape)
    args = {"scale": rng.uniform(-2, 2, own).astype(dtype), "bias": rng.uniform(-1, 1, own).astype(dtype)}
    if draw(st.integers(0, 2)) == 0:
        args["fused_add"] = rng.uniform(-1, 1, shape).astype(dtype)
    args["epsilon"] = maybe_hostile(draw, draw(st.sampled_from([1e-5, 1e-3, -1.0])))
    args["fused_activation"] = draw(st.sampled_from([None, "relu", dml.FusedActivation("sigmoid"), "bogus"]))
    return args, lambda a: spec_named("batch_normalization_training").reference(a, **args)


@rule("batch_normalization_training", broken=_training_broken, functional=_training_functional,
      compare=_within("batch_normalization_training", ("scale", "bias", "fused_add")), light=True,
      fields=("x", "scale", "bias", "fused_add", "input_tensor", "scale_tensor", "bias_tensor", "fused_add_tensor",
              "output_tensor", "output_mean_tensor", "output_variance_tensor", "epsilon", "fused_activation",
              "device"))
def batch_normalization_training_call(d: Draw, ask: Ask) -> Drawn:
    """Scale and bias per channel (or of x's sizes, or some axes of 1), a FusedAdd half the
    time, epsilon (now and then 0), a fused activation a third of the time."""
    x = ask.input(d)
    own = dml.TensorDesc(ask.data_type, _parameter_sizes(d, ask, list(x.sizes)))
    tensors = [x, own, own] + ([dml.TensorDesc(ask.data_type, x.sizes)] if d.bool() else [])
    attributes = {"epsilon": _epsilon(d)}
    if d.int(0, 2) == 0:
        attributes["fused_activation"] = fused_activation(d)
    return Drawn(tensors, attributes)


# ============================================================================ the gradients
@st.composite
def _grad_broken(draw, desc):
    x = desc.input_tensor
    kinds = ["input_gradient_sizes", "output_gradient_sizes", "mean_sizes", "parameter_sizes", "stat_sizes",
             "epsilon"]
    kind = draw(st.sampled_from(kinds))
    axis = draw(st.integers(0, x.rank - 1))
    if kind == "mean_sizes":
        return replace_fields(desc, mean_tensor=_wrong(desc.mean_tensor, x, axis)), "mean_tensor.sizes", kind
    field = {"input_gradient_sizes": "input_gradient_tensor", "output_gradient_sizes": "output_gradient_tensor",
             "parameter_sizes": draw(st.sampled_from(_GRAD_PARAMETERS[1:])),
             "stat_sizes": draw(st.sampled_from(_GRAD_STATS))}.get(kind)
    if field is not None:
        return replace_fields(desc, **{field: one_more(getattr(desc, field), axis)}), f"{field}.sizes", kind
    return replace_fields(desc, epsilon=draw(st.sampled_from([-1.0, float("nan"), float("inf"), "x", None]))), \
        "epsilon", kind


def _grad_functional(key: str):
    @st.composite
    def calls(draw, x, shape):
        """The gradient of x's shape (now and then not), mean, variance and scale per channel
        ([C]), of x's rank, or of a size that does not fit; epsilon now and then hostile."""
        rng, dtype, own = _functional_parameters(draw, x, shape)
        gradient_shape = list(shape) if draw(st.integers(0, 5)) else list(shape) + [2]
        args = {"input_gradient": rng.uniform(-1, 1, gradient_shape).astype(dtype),
                "mean": rng.uniform(-1, 1, own).astype(dtype), "variance": rng.uniform(0.25, 2, own).astype(dtype),
                "scale": rng.uniform(-2, 2, own).astype(dtype),
                "epsilon": maybe_hostile(draw, draw(st.sampled_from([1e-5, 1e-3, -1.0])))}
        return args, lambda a: spec_named(key).reference(a, **args)
    return calls


for _key in ("batch_normalization_grad", "batch_normalization_training_grad"):
    def _grad_call(d: Draw, ask: Ask) -> Drawn:
        """The gradient of x's sizes; mean, variance and scale per channel (or of x's sizes,
        or some axes of 1); epsilon (now and then 0)."""
        x = ask.input(d)
        own = dml.TensorDesc(ask.data_type, _parameter_sizes(d, ask, list(x.sizes)))
        return Drawn([x, dml.TensorDesc(ask.data_type, x.sizes), own, own, own], {"epsilon": _epsilon(d)})

    rule(_key, broken=_grad_broken, functional=_grad_functional(_key), light=True,
         compare=_within(_key, ("input_gradient", "mean", "variance", "scale")),
         fields=("x", "input_gradient", "mean", "variance", "scale", "input_tensor", "input_gradient_tensor",
                 "mean_tensor", "variance_tensor", "scale_tensor", "output_gradient_tensor",
                 "output_scale_gradient_tensor", "output_bias_gradient_tensor", "epsilon", "device"))(_grad_call)
