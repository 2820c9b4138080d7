"""The rule of DML_BATCH_NORMALIZATION."""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

import gpudml as dml
from gpudml.ops import spec_named
from gpudml.testing import assert_within

from ..draws import Draw, T
from ..hostile import maybe_hostile, one_more, replace_fields
from ..registry import Ask, Drawn, rule
from ._common import fused_activation

_BN_PARAMETERS = ("mean_tensor", "variance_tensor", "scale_tensor", "bias_tensor")


@rule("batch_normalization", broken=lambda desc: _batch_normalization_broken(desc),
      functional=lambda x, shape: _batch_normalization_functional(x, shape),
      compare=lambda got, want, x, args: _batch_normalization_compare(got, want, x, args),
      fields=("x", "mean", "variance", "scale", "bias", "input_tensor", "output_tensor", "epsilon", "spatial",
              "fused_activation", "device") + _BN_PARAMETERS, light=True)
def batch_normalization_call(d: Draw, ask: Ask) -> Drawn:
    """Parameters per channel (axis 1 of x; every axis 1 but that one), now and then of x's
    sizes or some axes of 1; epsilon near 1e-5 (now and then 0 or any float32); spatial FALSE
    a quarter of the time (the mean and variance then keep Height and Width below FL_4_0);
    a fused activation a third of the time."""
    x = ask.input(d)
    dt, sizes = ask.data_type, list(x.sizes)
    spatial = d.int(0, 3) != 0
    params = []
    for field in _BN_PARAMETERS:
        how = d.pick(["channel", "channel", "full", "mixed"])
        own = {"channel": [n if i == 1 else 1 for i, n in enumerate(sizes)] if ask.rank >= 2 else [1],
               "full": sizes, "mixed": [n if d.bool() else 1 for n in sizes]}[how]
        if not spatial and ask.rank >= 4 and field in ("mean_tensor", "variance_tensor"):
            own = own[:-2] + sizes[-2:]
        params.append(dml.TensorDesc(dt, own))
    attributes = {"epsilon": d.pick([1e-5, 1e-5, 1e-3, 0.0]) if d.int(0, 7) else d.real(-3.0e38, 3.0e38),
                  "spatial": spatial}
    if d.int(0, 2) == 0:
        attributes["fused_activation"] = fused_activation(d)
    return Drawn([x, *params], attributes)


@st.composite
def _batch_normalization_broken(draw, desc):
    x = desc.input_tensor
    kinds = ["parameter_sizes", "output_sizes", "output_type", "epsilon", "spatial", "fused_activation"]
    kind = draw(st.sampled_from(kinds))
    if kind == "parameter_sizes":  # a size neither 1 nor the input's
        field = draw(st.sampled_from(_BN_PARAMETERS))
        axis = draw(st.integers(0, x.rank - 1))
        td = getattr(desc, field)
        return replace_fields(desc, **{field: one_more(td, axis, x.sizes[axis] + 1)}), f"{field}.sizes", kind
    if kind == "output_sizes":
        return replace_fields(desc, output_tensor=one_more(desc.output_tensor, draw(st.integers(0, x.rank - 1)))), \
            "output_tensor.sizes", kind
    if kind == "output_type":
        dt = draw(st.sampled_from([t for t in T if t != x.data_type]))
        return replace_fields(desc, output_tensor=dml.TensorDesc(dt, x.sizes)), "output_tensor.data_type", kind
    if kind == "epsilon":
        return replace_fields(desc, epsilon=draw(st.sampled_from(["1", None, [1.0], 1e300, True]))), "epsilon", kind
    if kind == "spatial":
        return replace_fields(desc, spatial=draw(st.sampled_from(["yes", None, 1, 0.0]))), "spatial", kind
    value = draw(st.sampled_from(["bogus", 7, ("relu",), dml.ScaleBias()]))
    return replace_fields(desc, fused_activation=value), "fused_activation", kind


@st.composite
def _batch_normalization_functional(draw, x, shape):
    """Parameters per channel ([C], C the size of x's axis 1), of x's rank, or (now and then)
    of a size that does not fit; epsilon, spatial and the activation now and then hostile."""
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    numeric = isinstance(x, np.ndarray) and x.dtype.kind in "fiu"
    dtype = x.dtype.newbyteorder("=") if numeric else np.dtype(np.float32)
    channels = shape[1] if len(shape) >= 2 else (shape[0] if shape else 1)
    args = {}
    for name in ("mean", "variance", "scale", "bias"):
        how = draw(st.sampled_from(["channel", "channel", "rank", "wrong"]))
        own = {"channel": [channels], "rank": [n if draw(st.booleans()) else 1 for n in shape] or [1],
               "wrong": [channels + 1]}[how]
        args[name] = rng.uniform(0 if name == "variance" else -2, 2, own).astype(dtype)
    args["epsilon"] = maybe_hostile(draw, draw(st.sampled_from([1e-5, 0.0, 1e-3])))
    args["spatial"] = draw(st.sampled_from([True, True, False, "no"]))
    args["fused_activation"] = draw(st.sampled_from([None, "relu", dml.FusedActivation("sigmoid"), "bogus"]))
    return args, lambda a: spec_named("batch_normalization").reference(a, **args)


def _batch_normalization_compare(got, want, x, args):
    """Within the documented precision."""
    params = [args[k] for k in ("mean", "variance", "scale", "bias")]
    attributes = {k: v for k, v in args.items() if k not in ("mean", "variance", "scale", "bias")}
    assert_within(got, want, spec_named("batch_normalization").tolerance(want, [x, *params], attributes),
                  "BatchNormalization")
