"""The rule of DML_CONVOLUTION."""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

import gpudml as dml
from gpudml.ops import convolution as convolution_op
from gpudml.ops import spec_named

from ..draws import Draw
from ..hostile import maybe_hostile, one_more, replace_fields, with_entry
from ..registry import Ask, Drawn, rule
from ._common import broken_output, fused_activation, products_compare


@rule("convolution", broken=lambda desc: _convolution_broken(desc),
      functional=lambda x, shape: _convolution_functional(x, shape),
      compare=lambda got, want, x, args: _convolution_compare(got, want, x, args),
      fields=("x", "filter", "bias", "input_tensor", "filter_tensor", "bias_tensor", "output_tensor", "mode",
              "direction", "dimension_count", "strides", "dilations", "start_padding", "end_padding",
              "output_padding", "group_count", "fused_activation", "DimensionCount", "device"), light=True)
def convolution_call(d: Draw, ask: Ask) -> Drawn:
    """An input of small sizes ({N, C, spatial...}), a group count dividing C, FORWARD three
    times in four (BACKWARD with OutputPadding below the stride), 1-3 output channels per
    group, windows of 1-3, strides 1-2 (3 BACKWARD), dilations 1-2, paddings 0-2 (cut where
    the window would not fit), a bias half the time ([C_out] or {1, C_out, 1...}), either
    mode, a fused activation a third of the time. Ranks below 3 as they are (validation's
    to reject)."""
    dt = ask.data_type
    sizes = ask.input_sizes(d, {3: 8, 4: 5, 5: 3}.get(ask.rank, 2))
    x = dml.TensorDesc(dt, sizes)
    if ask.rank < 3:
        return Drawn([x, dml.TensorDesc(dt, sizes)], {})
    spatial, channels = ask.rank - 2, sizes[1]
    groups = d.pick([g for g in range(1, channels + 1) if channels % g == 0])
    backward, per = d.int(0, 3) == 0, d.int(1, 3)
    window, strides, dilations, start, end, adjust = [], [], [], [], [], []
    for n in sizes[2:]:
        w, s, dl, p0, p1 = d.int(1, 3), d.int(1, 3 if backward else 2), d.int(1, 2), d.int(0, 2), d.int(0, 2)
        if not backward and (w - 1) * dl + 1 > n + p0 + p1:
            w, dl = 1, 1
        a = d.int(0, s - 1) if backward else 0
        if backward and (n - 1) * s + (w - 1) * dl + 1 - p0 - p1 + a < 1:
            p0 = p1 = 0
        for values, v in ((window, w), (strides, s), (dilations, dl), (start, p0), (end, p1), (adjust, a)):
            values.append(v)
    cout = groups * per
    fsizes = ([channels, per] if backward else [cout, channels // groups]) + window
    tensors = [x, dml.TensorDesc(dt, fsizes)]
    if d.bool():
        tensors.append(dml.TensorDesc(dt, [cout] if d.bool() else [1, cout] + [1] * spatial))
    attributes = {"strides": strides, "dilations": dilations, "start_padding": start, "end_padding": end,
                  "output_padding": adjust, "group_count": groups, "direction": "backward" if backward else "forward",
                  "mode": d.pick(["cross_correlation", "convolution"])}
    if d.int(0, 2) == 0:
        attributes["fused_activation"] = fused_activation(d)
    return Drawn(tensors, attributes)


@st.composite
def _convolution_broken(draw, desc):
    out, f, spatial = desc.output_tensor, desc.filter_tensor, desc.dimension_count
    forward = desc.direction == dml.ConvolutionDirection.FORWARD
    axis = draw(st.integers(0, max(0, spatial - 1)))
    choices = {
        "mode": ("mode", draw(st.sampled_from(["bogus", 2, None, 1.5]))),
        "direction": ("direction", draw(st.sampled_from(["sideways", 7, None]))),
        "dimension_count": ("dimension_count", spatial + draw(st.sampled_from([-1, 1]))),
        "group_count": ("group_count", draw(st.sampled_from([0, -1, "2", None]))),
        "fused_activation": ("fused_activation", draw(st.sampled_from(["bogus", 7, ("relu",), dml.ScaleBias()]))),
        "padding_length": ("start_padding", list(desc.start_padding) + [0]),
    }
    if spatial:
        choices["stride_zero"] = ("strides", with_entry(desc.strides, axis, 0))
        choices["dilation_zero"] = ("dilations", with_entry(desc.dilations, axis, 0))
        choices["padding_negative"] = ("end_padding", with_entry(desc.end_padding, axis, -1))
    if forward and spatial:
        choices["output_padding"] = ("output_padding", with_entry(desc.output_padding, axis, 1))
    kinds = sorted(choices) + ["filter", "output_sizes", "output_type"] + (["bias"] if desc.bias_tensor else [])
    kind = draw(st.sampled_from(kinds))
    if kind == "filter":
        return replace_fields(desc, filter_tensor=one_more(f, 1 if forward else 0)), "filter_tensor.sizes", kind
    if kind in ("output_sizes", "output_type"):
        return broken_output(draw, desc, kind)
    if kind == "bias":
        return replace_fields(desc, bias_tensor=one_more(desc.bias_tensor, draw(st.integers(0, out.rank - 1)))), \
            "bias_tensor.sizes", kind
    name, value = choices[kind]
    return replace_fields(desc, **{name: value}), name, kind


@st.composite
def _convolution_functional(draw, x, shape):
    """A filter (and a bias half the time) of uniform values that fit x's shape ({N, C,
    spatial...}), now and then one that does not; strides, group_count, direction and the
    activation now and then hostile."""
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    numeric = isinstance(x, np.ndarray) and x.dtype.kind in "fiu"
    dtype = x.dtype.newbyteorder("=") if numeric else np.dtype(np.float32)
    rank = len(shape)
    channels = shape[1] if rank >= 2 else 1
    cout = draw(st.integers(1, 3))
    window = [min(n, draw(st.integers(1, 2))) if n else 1 for n in shape[2:]]
    fshape = [cout, channels + (draw(st.integers(0, 9)) == 0)] + window if rank >= 3 else list(shape)
    args = {"filter": rng.uniform(-1, 1, fshape).astype(dtype)}
    if draw(st.booleans()):
        args["bias"] = rng.uniform(-1, 1, draw(st.sampled_from([[cout], [cout + 1]]))).astype(dtype)
    spatial = max(0, rank - 2)
    args["strides"] = maybe_hostile(draw, [draw(st.integers(1, 2)) for _ in range(spatial)])
    args["start_padding"] = [draw(st.integers(0, 1)) for _ in range(spatial)]
    args["group_count"] = maybe_hostile(draw, 1)
    args["mode"] = draw(st.sampled_from(["cross_correlation", "convolution", dml.ConvolutionMode.CONVOLUTION, "x"]))
    args["fused_activation"] = draw(st.sampled_from([None, "relu", dml.FusedActivation("sigmoid"), "bogus"]))
    return args, lambda a: spec_named("convolution").reference(a, **args)


def _convolution_compare(got, want, x, args):
    products_compare(got, want, [x, args["filter"]] + ([args["bias"]] if "bias" in args else []),
                      {k: v for k, v in args.items() if k not in ("filter", "bias")}, convolution_op)
