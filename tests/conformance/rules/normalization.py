"""The rules of DML_MEAN_VARIANCE_NORMALIZATION (versions 0, 1 and 2),
DML_LP_NORMALIZATION, DML_LOCAL_RESPONSE_NORMALIZATION and its gradient."""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

import gpudml as dml
from gpudml.ops import spec_named
from gpudml.testing import assert_within

from ..draws import FL, Draw
from ..hostile import broken_reduced_axes, maybe_hostile, one_more, replace_fields
from ..registry import Ask, Drawn, rule
from ._common import fused_activation


def _epsilon(d: Draw) -> float:
    return d.pick([1e-5, 1e-5, 0.0, 1e-3, 0.5])


def _affine(d: Draw, ask: Ask, x: dml.TensorDesc) -> list:
    """Half the time a scale and a bias of x's sizes or 1 on each axis (before FL_4_0 axis
    1 is x's), leading axes of 1 dropped half the time (numpy's broadcasting)."""
    if d.bool():
        return []
    out = []
    for _ in range(2):
        sizes = [n if d.bool() else 1 for n in x.sizes]
        if ask.level < FL.FL_4_0 and len(sizes) >= 2:
            sizes[1] = x.sizes[1]
        while len(sizes) > 1 and sizes[0] == 1 and d.bool():
            sizes.pop(0)
        out.append(dml.TensorDesc(x.data_type, sizes))
    return out


def _mvn_call(version: int):
    def call(d: Draw, ask: Ask) -> Drawn:
        """Any axes (version 1; some counted from the end) or cross_channel (version 0),
        scale and bias half the time (each axis broadcast or not), normalize_variance,
        epsilon, a fused activation a third of the time."""
        x = ask.input(d)
        attributes = {"normalize_variance": d.int(0, 3) > 0, "epsilon": _epsilon(d)}
        if version == 2:  # (UseMean and UseVariance: each FALSE a third of the time)
            del attributes["normalize_variance"]
            attributes.update(use_mean=d.int(0, 2) > 0, use_variance=d.int(0, 2) > 0)
        if version >= 1:
            attributes["axes"] = [a - ask.rank if d.bool() else a for a in d.subset(ask.rank)]
        else:
            attributes["cross_channel"] = d.bool()
        if d.int(0, 2) == 0:
            attributes["fused_activation"] = fused_activation(d)
        return Drawn([x, *_affine(d, ask, x)], attributes)
    return call


def _mvn_broken(version: int):
    @st.composite
    def broken(draw, desc):
        inp, out = desc.input_tensor, desc.output_tensor
        kinds = ["output_sizes", "epsilon", "fused_activation"]
        kinds += ["use_mean", "use_variance"] if version == 2 else ["normalize_variance"]
        kinds += ["axes_empty", "axis_out", "axis_negative", "axes_repeat", "axes_type"] if version >= 1 \
            else ["cross_channel"]
        kinds += ["scale_sizes"] if desc.scale_tensor is not None else []
        kind = draw(st.sampled_from(kinds))
        if kind.startswith("ax"):
            return *broken_reduced_axes(draw, desc, kind), kind
        if kind == "output_sizes":
            return replace_fields(desc, output_tensor=one_more(out, draw(st.integers(0, out.rank - 1)))), \
                "output_tensor.sizes", kind
        if kind == "scale_sizes":
            axis = draw(st.integers(0, inp.rank - 1))
            return replace_fields(desc, scale_tensor=one_more(inp, axis)), "scale_tensor.sizes", kind
        if kind == "epsilon":
            return replace_fields(desc, epsilon=draw(st.sampled_from([-1.0, float("nan"), float("inf"), "x",
                                                                      None]))), "epsilon", kind
        if kind == "fused_activation":
            return replace_fields(desc, fused_activation=draw(st.sampled_from(["bogus", 7]))), "fused_activation", kind
        return replace_fields(desc, **{kind: draw(st.sampled_from([2, "yes", None, 0.5]))}), kind, kind
    return broken


def _mvn_functional(version: int, key: str):
    @st.composite
    def calls(draw, x, shape):
        """Scale and bias (half the time) of x's last axis or of 1, now and then one that does
        not broadcast; the axes, epsilon and activation now and then hostile."""
        rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
        numeric = isinstance(x, np.ndarray) and x.dtype.kind in "f"
        dtype = x.dtype.newbyteorder("=") if numeric else np.dtype(np.float32)
        args = {}
        if draw(st.booleans()):
            last = shape[-1] if len(shape) else 1
            size = draw(st.sampled_from([last, 1, last + 1]))
            args["scale"] = rng.uniform(-2, 2, [size]).astype(dtype)
            args["bias"] = rng.uniform(-1, 1, [size]).astype(dtype)
        if version == 2:
            args["use_mean"] = maybe_hostile(draw, draw(st.booleans()))
            args["use_variance"] = draw(st.booleans())
        if version >= 1:
            rank = len(shape)
            args["axes"] = maybe_hostile(draw, draw(st.lists(st.integers(-rank, max(rank - 1, 0)), min_size=1,
                                                            max_size=max(rank, 1), unique=True)))
        else:
            args["cross_channel"] = maybe_hostile(draw, draw(st.booleans()))
        args["epsilon"] = draw(st.sampled_from([1e-5, 0.0, -1.0, "x"]))
        args["fused_activation"] = draw(st.sampled_from([None, "relu", "bogus"]))
        return args, lambda a: spec_named(key).reference(a, **args)
    return calls


def _within(key: str, tensors=()):
    def compare(got, want, x, args):
        """Within the documented precision."""
        spec = spec_named(key)
        inputs = [x] + [args[t] for t in tensors if t in args]
        attributes = {k: v for k, v in args.items() if k not in tensors}
        assert_within(got, want, spec.tolerance(want, inputs, attributes), spec.name)
    return compare


for _version, _key in ((1, "mean_variance_normalization1"), (0, "mean_variance_normalization0"),
                       (2, "mean_variance_normalization2")):
    rule(_key, broken=_mvn_broken(_version), functional=_mvn_functional(_version, _key),
         compare=_within(_key, ("scale", "bias")), light=True,
         fields=("x", "scale", "bias", "input_tensor", "scale_tensor", "bias_tensor", "output_tensor", "axes",
                 "cross_channel", "normalize_variance", "use_mean", "use_variance", "epsilon", "fused_activation",
                 "device",
                 "DimensionCount"))(_mvn_call(_version))


@st.composite
def _lp_broken(draw, desc):
    kind = draw(st.sampled_from(["axis", "p", "epsilon", "output_sizes"]))
    if kind == "axis":
        return replace_fields(desc, axis=draw(st.sampled_from([desc.input_tensor.rank, -1, 0.5]))), "axis", kind
    if kind == "p":
        return replace_fields(desc, p=draw(st.sampled_from([0, 3, 1.5]))), "p", kind
    if kind == "epsilon":
        return replace_fields(desc, epsilon=draw(st.sampled_from([-1.0, float("nan"), "x"]))), "epsilon", kind
    out = desc.output_tensor
    return replace_fields(desc, output_tensor=one_more(out, draw(st.integers(0, out.rank - 1)))), \
        "output_tensor.sizes", kind


@st.composite
def _lp_functional(draw, x, shape):
    rank = max(len(shape), 1)
    args = {"axis": maybe_hostile(draw, draw(st.integers(-rank, rank - 1))), "p": draw(st.sampled_from([1, 2, 3])),
            "epsilon": draw(st.sampled_from([1e-5, 0.0, -1.0]))}
    return args, lambda a: spec_named("lp_normalization").reference(a, **args)


@rule("lp_normalization", broken=_lp_broken, functional=_lp_functional, compare=_within("lp_normalization"),
      light=True, fields=("x", "input_tensor", "output_tensor", "axis", "epsilon", "p", "device"))
def lp_call(d: Draw, ask: Ask) -> Drawn:
    """Any axis (some counted from the end), p 1 or 2, epsilon."""
    axis = d.int(0, ask.rank - 1)
    return Drawn([ask.input(d)], {"axis": axis - ask.rank if d.bool() else axis, "p": d.pick([1, 2]),
                                  "epsilon": _epsilon(d)})


def _lrn_broken(output: str, sized=()):
    @st.composite
    def broken(draw, desc):
        """LRN's fields broken, or the sizes of the output (or of another tensor of `sized`)."""
        kind = draw(st.sampled_from(["local_size", "alpha", "beta", "bias", "cross_channel", "output_sizes",
                                     *sized]))
        if kind == "local_size":
            return replace_fields(desc, local_size=draw(st.sampled_from([0, -1, 0.5, None]))), "local_size", kind
        if kind in ("alpha", "beta", "bias"):
            return replace_fields(desc, **{kind: draw(st.sampled_from([float("nan"), float("inf"), "x"]))}), kind, \
                kind
        if kind == "cross_channel":
            return replace_fields(desc, cross_channel=draw(st.sampled_from([2, "yes", None]))), kind, kind
        field = output if kind == "output_sizes" else kind
        td = getattr(desc, field)
        return replace_fields(desc, **{field: one_more(td, draw(st.integers(0, td.rank - 1)))}), f"{field}.sizes", kind
    return broken


@st.composite
def _lrn_functional(draw, x, shape):
    args = {"local_size": maybe_hostile(draw, draw(st.integers(1, 5))), "cross_channel": draw(st.booleans()),
            "alpha": draw(st.sampled_from([1e-4, 0.5, "x"])), "beta": 0.75, "bias": draw(st.sampled_from([1.0, 2.0]))}
    return args, lambda a: spec_named("local_response_normalization").reference(a, **args)


@rule("local_response_normalization", broken=_lrn_broken("output_tensor"), functional=_lrn_functional,
      compare=_within("local_response_normalization"), light=True,
      fields=("x", "input_tensor", "output_tensor", "local_size", "cross_channel", "alpha", "beta", "bias", "device",
              "DimensionCount"))
def lrn_call(d: Draw, ask: Ask) -> Drawn:
    """local_size 1-6 across channels or H x W; alpha in [0, 2], beta in [-1, 1.5], bias in
    [0.5, 3] (the base stays positive: WGSL's pow is undefined below 0)."""
    return Drawn([ask.input(d)], {"local_size": d.int(1, 6), "cross_channel": d.bool(), "alpha": d.real(0.0, 2.0),
                                  "beta": d.real(-1.0, 1.5), "bias": d.real(0.5, 3.0)})


@st.composite
def _lrn_grad_functional(draw, x, shape):
    """LRN's arguments, dy of x's shape and type (now and then hostile)."""
    args = {"local_size": maybe_hostile(draw, draw(st.integers(1, 5))), "cross_channel": draw(st.booleans()),
            "alpha": draw(st.sampled_from([1e-4, 0.5, "x"])), "beta": 0.75, "bias": draw(st.sampled_from([1.0, 2.0]))}
    dtype = getattr(x, "dtype", None)
    rng = np.random.default_rng(draw(st.integers(0, 999)))
    dy = rng.uniform(-1, 1, shape).astype(dtype if dtype in (np.float16, np.float32) else np.float32)
    args["dy"] = draw(st.sampled_from([dy, dy, dy, dy[..., :1] if dy.ndim else dy, None]))
    return args, lambda a: spec_named("local_response_normalization_grad").reference(a, **args)


@rule("local_response_normalization_grad", broken=_lrn_broken("output_gradient_tensor", ("input_gradient_tensor",)),
      functional=_lrn_grad_functional, compare=_within("local_response_normalization_grad", ("dy",)), light=True,
      fields=("x", "dy", "input_tensor", "input_gradient_tensor", "output_gradient_tensor", "local_size",
              "cross_channel", "alpha", "beta", "bias", "device", "DimensionCount", "data_type"))
def lrn_grad_call(d: Draw, ask: Ask) -> Drawn:
    """LRN's call (lrn_call) and dy of x's sizes."""
    x = ask.input(d)
    return Drawn([x, dml.TensorDesc(ask.types.get("input_gradient_tensor", ask.data_type), x.sizes)],
                 {"local_size": d.int(1, 6), "cross_channel": d.bool(), "alpha": d.real(0.0, 2.0),
                  "beta": d.real(-1.0, 1.5), "bias": d.real(0.5, 3.0)})
