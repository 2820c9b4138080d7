"""The rule of DML_QUANTIZED_LINEAR_CONVOLUTION."""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

import gpudml as dml
from gpudml.ops import spec_named

from ..draws import Draw, T
from ..hostile import one_more, replace_fields
from ..registry import Ask, Drawn, rule
from ._common import broken_output
from .convolution_integer import (
    broken_parameter,
    convolution_geometry,
    functional_geometry,
    geometry_choices,
    int8_array,
    parameter,
    sized,
)

PARAMETERS = ("input_scale_tensor", "input_zero_point_tensor", "filter_scale_tensor", "filter_zero_point_tensor",
              "output_scale_tensor", "output_zero_point_tensor")


@rule("quantized_linear_convolution", broken=lambda desc: _broken(desc),
      functional=lambda x, shape: _functional(x, shape),
      fields=("x", "x_scale", "x_zero_point", "filter", "filter_scale", "filter_zero_point", "bias", "output_scale",
              "output_zero_point", "output_data_type", "input_tensor", "input_scale_tensor",
              "input_zero_point_tensor", "filter_tensor", "filter_scale_tensor", "filter_zero_point_tensor",
              "bias_tensor", "output_scale_tensor", "output_zero_point_tensor", "output_tensor", "dimension_count",
              "strides", "dilations", "start_padding", "end_padding", "group_count", "DimensionCount", "device"),
      free=("filter_tensor", "output_tensor"))
def quantized_linear_convolution_call(d: Draw, ask: Ask) -> Drawn:
    """An input of small sizes, convolution_integer's geometry, a filter and an output of the
    table's types; FLOAT32 scales (the filter's per channel half the time); each zero point
    and the bias three times in four (the output's type then the output_data_type)."""
    dt, ft = ask.data_type, ask.types.get("filter_tensor", ask.data_type)
    ot = ask.types.get("output_tensor", ask.data_type)
    sizes = sized(ask, d)
    x = dml.TensorDesc(dt, sizes)
    one = [1] * ask.rank
    if ask.rank < 3:
        return Drawn([x, dml.TensorDesc(T.FLOAT32, one), dml.TensorDesc(dt, sizes), dml.TensorDesc(T.FLOAT32, one),
                      dml.TensorDesc(T.FLOAT32, one)], {"given": ("x", "x_scale", "filter", "filter_scale",
                                                                  "output_scale")})
    cout, geometry, window = convolution_geometry(d, sizes)
    w = dml.TensorDesc(ft, [cout, sizes[1] // geometry["group_count"]] + window)
    named = {"x": x, "x_scale": dml.TensorDesc(T.FLOAT32, one)}
    if d.int(0, 3):
        named["x_zero_point"] = dml.TensorDesc(dt, one)
    named["filter"], named["filter_scale"] = w, parameter(d, T.FLOAT32, ask.rank, cout)
    if d.int(0, 3):
        named["filter_zero_point"] = parameter(d, ft, ask.rank, cout)
    if d.int(0, 3):
        named["bias"] = dml.TensorDesc(T.INT32, [cout] if d.bool() else [1, cout] + [1] * (ask.rank - 2))
    named["output_scale"] = dml.TensorDesc(T.FLOAT32, one)
    if d.int(0, 3):
        named["output_zero_point"] = dml.TensorDesc(ot, one)
    return Drawn(list(named.values()), {"given": tuple(named), "output_data_type": ot, **geometry})


@st.composite
def _broken(draw, desc):
    choices = geometry_choices(draw, desc)
    params = [f for f in PARAMETERS if getattr(desc, f) is not None]
    kinds = sorted(choices) + ["filter", "output_sizes", "output_type", "parameter"]
    kinds += ["bias"] if desc.bias_tensor is not None else []
    kind = draw(st.sampled_from(kinds))
    if kind == "filter":
        return replace_fields(desc, filter_tensor=one_more(desc.filter_tensor, 1)), "filter_tensor.sizes", kind
    if kind in ("output_sizes", "output_type"):
        return broken_output(draw, desc, kind)
    if kind == "parameter":
        return broken_parameter(draw, desc, draw(st.sampled_from(params)), desc.output_tensor.sizes[1])
    if kind == "bias":
        if draw(st.booleans()):
            return replace_fields(desc, bias_tensor=dml.TensorDesc(T.FLOAT32, desc.bias_tensor.sizes)), \
                "bias_tensor.data_type", kind
        return replace_fields(desc, bias_tensor=one_more(desc.bias_tensor, 1)), "bias_tensor.sizes", kind
    name, value = choices[kind]
    return replace_fields(desc, **{name: value}), name, kind


@st.composite
def _functional(draw, x, shape):
    """A filter of INT8 or UINT8 (one more input channel now and then: it does not fit),
    positive scales (the filter's of [C_out] half the time; now and then a zero, negative or
    NaN one: refused), zero points and an INT32 bias half the time each; the geometry now and
    then hostile."""
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    rank = len(shape)
    channels = shape[1] if rank >= 2 else 1
    cout = draw(st.integers(1, 3))
    window, args = functional_geometry(draw, shape)
    ft = np.dtype(draw(st.sampled_from([np.int8, np.uint8])))
    fshape = [cout, channels + (draw(st.integers(0, 9)) == 0)] + window if rank >= 3 else list(shape)
    args["filter"] = int8_array(rng, ft, fshape)
    k = max(1, int(np.prod(fshape[1:])))
    args["x_scale"] = np.float32(2.0 ** rng.uniform(-6, -2))
    args["filter_scale"] = (2.0 ** rng.uniform(-6, -2, [cout] if draw(st.booleans()) else [1])).astype(np.float32)
    args["output_scale"] = np.float32(rng.uniform(0.25, 1.0) * np.sqrt(k))
    if draw(st.integers(0, 9)) == 0:
        args[draw(st.sampled_from(["x_scale", "output_scale"]))] = np.float32(draw(st.sampled_from([0.0, -1.0,
                                                                                                     np.nan])))
    xt = x.dtype.newbyteorder("=") if isinstance(x, np.ndarray) and x.dtype.kind in "iu" else np.dtype(np.uint8)
    if draw(st.booleans()) and xt.itemsize == 1:
        args["x_zero_point"] = int8_array(rng, xt, [1])[0]
    if draw(st.booleans()):
        args["filter_zero_point"] = int8_array(rng, ft, [cout] if draw(st.booleans()) else [1])
    if draw(st.booleans()):
        args["bias"] = rng.integers(-(2**12), 2**12, cout).astype(np.int32)
    if draw(st.booleans()):
        args["output_zero_point"] = int8_array(rng, np.dtype(draw(st.sampled_from([np.int8, np.uint8]))), [1])
    fn = spec_named("quantized_linear_convolution").reference
    return args, lambda a: fn(a, **args)
