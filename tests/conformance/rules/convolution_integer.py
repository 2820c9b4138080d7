"""The rule of DML_CONVOLUTION_INTEGER (and its helpers, which the rules of
DML_QUANTIZED_LINEAR_CONVOLUTION and DML_QUANTIZED_LINEAR_AVERAGE_POOLING share)."""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

import gpudml as dml
from gpudml.ops import spec_named

from ..draws import Draw, T
from ..hostile import maybe_hostile, one_more, replace_fields, with_entry
from ..registry import Ask, Drawn, rule
from ._common import broken_output

INT8S = (T.INT8, T.UINT8)


def convolution_geometry(d: Draw, sizes) -> tuple[int, dict, list[int]]:
    """(output channels, the geometry attributes, the window) of a FORWARD convolution over an
    input of `sizes` ({N, C, spatial...}): a group count dividing C, 1-3 output channels per
    group, windows of 1-3, strides 1-2, dilations 1-2, paddings 0-2 (the window shrunk where
    it would not fit)."""
    channels = sizes[1]
    groups = d.pick([g for g in range(1, channels + 1) if channels % g == 0])
    window, strides, dilations, start, end = [], [], [], [], []
    for n in sizes[2:]:
        w, s, dl, p0, p1 = d.int(1, 3), d.int(1, 2), d.int(1, 2), d.int(0, 2), d.int(0, 2)
        if (w - 1) * dl + 1 > n + p0 + p1:
            w, dl = 1, 1
        for values, v in ((window, w), (strides, s), (dilations, dl), (start, p0), (end, p1)):
            values.append(v)
    return groups * d.int(1, 3), {"strides": strides, "dilations": dilations, "start_padding": start,
                                  "end_padding": end, "group_count": groups}, window


def parameter(d: Draw, dt, rank: int, channels: int | None) -> dml.TensorDesc:
    """A scale or zero point: one element ({1...} of `rank` axes) or, where `channels` is given,
    half the time one per channel ([C] or {1, C, 1...})."""
    if channels is not None and d.bool():
        return dml.TensorDesc(dt, [channels] if d.bool() else [1, channels] + [1] * (rank - 2))
    return dml.TensorDesc(dt, [1] * rank)


def sized(ask: Ask, d: Draw) -> list[int]:
    return ask.input_sizes(d, {3: 9, 4: 6, 5: 4}.get(ask.rank, 2))


@rule("convolution_integer", broken=lambda desc: _broken(desc), functional=lambda x, shape: _functional(x, shape),
      fields=("x", "x_zero_point", "filter", "filter_zero_point", "input_tensor", "input_zero_point_tensor",
              "filter_tensor", "filter_zero_point_tensor", "output_tensor", "dimension_count", "strides", "dilations",
              "start_padding", "end_padding", "group_count", "DimensionCount", "device"),
      free=("filter_tensor",))
def convolution_integer_call(d: Draw, ask: Ask) -> Drawn:
    """An input of small sizes, the geometry of convolution_geometry, a filter of the table's
    type; each zero point three times in four (the filter's per channel half the time).
    Ranks other than 3 and 4 as they are (validation's to reject)."""
    dt, ft = ask.data_type, ask.types.get("filter_tensor", ask.data_type)
    sizes = sized(ask, d)
    x = dml.TensorDesc(dt, sizes)
    if ask.rank < 3:
        return Drawn([x, dml.TensorDesc(dt, sizes)], {"given": ("x", "filter")})
    cout, geometry, window = convolution_geometry(d, sizes)
    w = dml.TensorDesc(ft, [cout, sizes[1] // geometry["group_count"]] + window)
    tensors, given = [x], ["x"]
    if d.int(0, 3):
        tensors.append(dml.TensorDesc(dt, [1] * ask.rank))
        given.append("x_zero_point")
    tensors.append(w)
    given.append("filter")
    if d.int(0, 3):
        tensors.append(parameter(d, ft, ask.rank, cout))
        given.append("filter_zero_point")
    return Drawn(tensors, {"given": tuple(given), **geometry})


def geometry_choices(draw, desc) -> dict:
    """The broken geometry fields of a convolution desc: {kind: (field, value)}."""
    spatial = desc.dimension_count
    axis = draw(st.integers(0, max(0, spatial - 1)))
    choices = {"dimension_count": ("dimension_count", spatial + draw(st.sampled_from([-1, 1]))),
               "group_count": ("group_count", draw(st.sampled_from([0, -1, "2", None]))),
               "padding_length": ("start_padding", list(desc.start_padding) + [0])}
    if spatial:
        choices["stride_zero"] = ("strides", with_entry(desc.strides, axis, 0))
        choices["dilation_zero"] = ("dilations", with_entry(desc.dilations, axis, 0))
        choices["padding_negative"] = ("end_padding", with_entry(desc.end_padding, axis, -1))
    return choices


def broken_parameter(draw, desc, field: str, channels: int):
    """(builder, fragment, kind): a scale or zero point `field` of the wrong type (a zero point:
    the other 8-bit type; a scale: FLOAT16) or of channels + 1 elements."""
    td = getattr(desc, field)
    if draw(st.booleans()):
        other = T.FLOAT16 if td.data_type == T.FLOAT32 else (T.UINT8 if td.data_type == T.INT8 else T.INT8)
        return replace_fields(desc, **{field: dml.TensorDesc(other, td.sizes)}), f"{field}.data_type", "parameter_type"
    sizes = [1, channels + 1] + [1] * (td.rank - 2) if td.rank >= 2 else [channels + 1]
    return replace_fields(desc, **{field: dml.TensorDesc(td.data_type, sizes)}), f"{field}.sizes", "parameter_count"


@st.composite
def _broken(draw, desc):
    choices = geometry_choices(draw, desc)
    params = [f for f in ("input_zero_point_tensor", "filter_zero_point_tensor") if getattr(desc, f) is not None]
    kinds = sorted(choices) + ["filter", "output_sizes", "output_type"] + (["parameter"] if params else [])
    kind = draw(st.sampled_from(kinds))
    if kind == "filter":
        return replace_fields(desc, filter_tensor=one_more(desc.filter_tensor, 1)), "filter_tensor.sizes", kind
    if kind in ("output_sizes", "output_type"):
        return broken_output(draw, desc, kind)
    if kind == "parameter":
        return broken_parameter(draw, desc, draw(st.sampled_from(params)), desc.output_tensor.sizes[1])
    name, value = choices[kind]
    return replace_fields(desc, **{name: value}), name, kind


def functional_geometry(draw, shape) -> tuple[list[int], dict]:
    """(the filter's window, the geometry arguments, now and then hostile) for x of `shape`."""
    spatial = max(0, len(shape) - 2)
    window = [min(n, draw(st.integers(1, 2))) if n else 1 for n in shape[2:]]
    args = {"strides": maybe_hostile(draw, [draw(st.integers(1, 2)) for _ in range(spatial)]),
            "start_padding": [draw(st.integers(0, 1)) for _ in range(spatial)],
            "group_count": maybe_hostile(draw, 1)}
    return window, args


def int8_array(rng, dtype, shape) -> np.ndarray:
    info = np.iinfo(dtype)
    return rng.integers(int(info.min), int(info.max) + 1, shape).astype(dtype)


@st.composite
def _functional(draw, x, shape):
    """A filter of INT8 or UINT8 (one more input channel now and then: it does not fit) and
    zero points of x's and the filter's types half the time (the filter's of [C_out] half
    of those); the geometry now and then hostile."""
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    rank = len(shape)
    channels = shape[1] if rank >= 2 else 1
    cout = draw(st.integers(1, 3))
    window, args = functional_geometry(draw, shape)
    ft = np.dtype(draw(st.sampled_from([np.int8, np.uint8])))
    fshape = [cout, channels + (draw(st.integers(0, 9)) == 0)] + window if rank >= 3 else list(shape)
    args["filter"] = int8_array(rng, ft, fshape)
    xt = x.dtype.newbyteorder("=") if isinstance(x, np.ndarray) and x.dtype.kind in "iu" else np.dtype(np.uint8)
    if draw(st.booleans()) and xt.itemsize == 1:
        args["x_zero_point"] = int8_array(rng, xt, [1])[0]
    if draw(st.booleans()):
        args["filter_zero_point"] = int8_array(rng, ft, [cout] if draw(st.booleans()) else [1])
    return args, lambda a: spec_named("convolution_integer").reference(a, **args)
