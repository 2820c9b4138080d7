"""The rule of DML_QUANTIZED_LINEAR_AVERAGE_POOLING."""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

import gpudml as dml
from gpudml.ops import spec_named

from ..draws import Draw, T
from ..hostile import maybe_hostile, replace_fields, with_entry
from ..registry import Ask, Drawn, rule
from ._common import broken_output
from .convolution_integer import broken_parameter, int8_array, parameter, sized

PARAMETERS = ("input_scale_tensor", "input_zero_point_tensor", "output_scale_tensor", "output_zero_point_tensor")


@rule("quantized_linear_average_pooling", broken=lambda desc: _broken(desc),
      functional=lambda x, shape: _functional(x, shape),
      fields=("x", "x_scale", "x_zero_point", "output_scale", "output_zero_point", "output_data_type", "window_size",
              "strides", "start_padding", "end_padding", "dilations", "include_padding", "input_tensor",
              "input_scale_tensor", "input_zero_point_tensor", "output_scale_tensor", "output_zero_point_tensor",
              "output_tensor", "dimension_count", "DimensionCount", "device"),
      free=("output_tensor",))
def quantized_linear_average_pooling_call(d: Draw, ask: Ask) -> Drawn:
    """An input of small sizes; per axis a window of 1-3, strides 1-2, dilations 1-2, paddings
    below the window (cut where a window would fit no input); global pooling one time in six;
    scales (per channel half the time each) and zero points three times in four each;
    include_padding either way."""
    dt, ot = ask.data_type, ask.types.get("output_tensor", ask.data_type)
    sizes = sized(ask, d)
    x = dml.TensorDesc(dt, sizes)
    channels = sizes[1] if ask.rank >= 2 else 1
    named = {"x": x, "x_scale": parameter(d, T.FLOAT32, ask.rank, channels)}
    if d.int(0, 3):
        named["x_zero_point"] = parameter(d, dt, ask.rank, channels)
    named["output_scale"] = parameter(d, T.FLOAT32, ask.rank, channels)
    if d.int(0, 3):
        named["output_zero_point"] = parameter(d, ot, ask.rank, channels)
    attributes = {"given": tuple(named), "output_data_type": ot, "include_padding": d.bool()}
    if ask.rank >= 3 and d.int(0, 5):
        window, strides, dilations, start, end = [], [], [], [], []
        for n in sizes[2:]:
            w, dl = d.int(1, 3), d.int(1, 2)
            if (w - 1) * dl + 1 > n:
                w, dl = 1, 1
            p0, p1 = d.int(0, w - 1), d.int(0, w - 1)
            for values, v in ((window, w), (strides, d.int(1, 2)), (dilations, dl), (start, p0), (end, p1)):
                values.append(v)
        attributes.update(window_size=window, strides=strides, dilations=dilations, start_padding=start,
                          end_padding=end)
    return Drawn(list(named.values()), attributes)


@st.composite
def _broken(draw, desc):
    spatial = desc.dimension_count
    axis = draw(st.integers(0, max(0, spatial - 1)))
    choices = {"dimension_count": ("dimension_count", spatial + draw(st.sampled_from([-1, 1]))),
               "include_padding": ("include_padding", draw(st.sampled_from(["yes", 2, None]))),
               "padding_length": ("start_padding", list(desc.start_padding) + [0]),
               "stride_zero": ("strides", with_entry(desc.strides, axis, 0)),
               "window_zero": ("window_size", with_entry(desc.window_size, axis, 0)),
               "window_large": ("window_size", with_entry(desc.window_size, axis, 10**6)),
               "dilation_zero": ("dilations", with_entry(desc.dilations, axis, 0))}
    params = [f for f in PARAMETERS if getattr(desc, f) is not None]
    kind = draw(st.sampled_from(sorted(choices) + ["output_sizes", "output_type", "parameter"]))
    if kind in ("output_sizes", "output_type"):
        return broken_output(draw, desc, kind)
    if kind == "parameter":
        return broken_parameter(draw, desc, draw(st.sampled_from(params)), desc.input_tensor.sizes[1])
    name, value = choices[kind]
    return replace_fields(desc, **{name: value}), name, kind


@st.composite
def _functional(draw, x, shape):
    """Positive scales (now and then a zero, negative or NaN one: refused), zero points half the
    time each, a window of 1-2 per axis (global one time in four), strides now and then
    hostile, include_padding either way."""
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    spatial = max(0, len(shape) - 2)
    args = {"x_scale": np.float32(2.0 ** rng.uniform(-6, -2)), "output_scale": np.float32(2.0 ** rng.uniform(-7, -3)),
            "include_padding": draw(st.booleans())}
    if draw(st.integers(0, 9)) == 0:
        args[draw(st.sampled_from(["x_scale", "output_scale"]))] = np.float32(draw(st.sampled_from([0.0, -1.0,
                                                                                                     np.nan])))
    if draw(st.integers(0, 3)):
        args["window_size"] = [min(n, draw(st.integers(1, 2))) if n else 1 for n in shape[2:]]
        args["strides"] = maybe_hostile(draw, [draw(st.integers(1, 2)) for _ in range(spatial)])
    xt = x.dtype.newbyteorder("=") if isinstance(x, np.ndarray) and x.dtype.kind in "iu" else np.dtype(np.uint8)
    if draw(st.booleans()) and xt.itemsize == 1:
        args["x_zero_point"] = int8_array(rng, xt, [1])[0]
    if draw(st.booleans()):
        args["output_zero_point"] = int8_array(rng, np.dtype(draw(st.sampled_from([np.int8, np.uint8]))), [1])
    fn = spec_named("quantized_linear_average_pooling").reference
    return args, lambda a: fn(a, **args)
