"""Helpers several rules share (not a rule: discovery skips modules named with a leading
underscore): paddings split from an output size, the padding modes of a level, fused
activations and attributes, a broken output, a sum of products' compare."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import strategies as st

import gpudml as dml
from gpudml.ops import elementwise as elementwise_op
from gpudml.ops import padding as padding_op
from gpudml.testing import assert_within

from ..draws import MAX_SIZE, Draw, T
from ..hostile import one_more, replace_fields
from ..registry import Ask


def sizes_split(d: Draw, ask: Ask):
    """(input sizes, start, end) for an operator that grows each axis: the output's sizes
    drawn (MAX_SIZE) and split into input and paddings (a padding may exceed the input
    size); for given input sizes, paddings of up to 3."""
    if ask.sizes is not None:
        return list(ask.sizes), d.ints(ask.rank, 0, 3), d.ints(ask.rank, 0, 3)
    in_sizes, start, end = [], [], []
    for m in d.ints(ask.rank, 1, MAX_SIZE[ask.rank]):
        n = d.int(1, m)
        s = d.int(0, m - n)
        in_sizes.append(n)
        start.append(s)
        end.append(m - n - s)
    return in_sizes, start, end


def padding_modes(level) -> list:
    return [m for m in dml.PaddingMode if padding_op.MODE_INTRODUCED[m] <= level]


def fused_activation(d: Draw):
    """A fused activation with drawn attributes (any real, NaN and infinities among them)."""
    name = d.pick(sorted(elementwise_op.FUSABLE))
    row = elementwise_op.FUSABLE[name]
    return dml.FusedActivation(name, **{a.name: attribute(d, a) for a in row.attributes})


def attribute(d: Draw, attr, level=None, data_type=None):
    """A value of a FLOAT attribute: mostly near its default (near 0 for an infinite one),
    some anywhere in float32; at least the page's minimum where it applies at `level`. An
    enum's: any member; a scalar of the tensor's type (CLIP1's): None (the type's limit) or
    a value of `data_type` (FLOAT32 where not given)."""
    if attr.kind == "enum":
        return d.pick(list(attr.enum))
    if attr.kind == "value":
        data_type = data_type or T.FLOAT32
        if d.int(0, 4) == 0:
            return None
        if data_type.is_float:
            value = d.pick([0.0, -0.0, float("nan"), float("inf"), -float("inf"), d.real(-3.0, 3.0)])
            return float(np.float64(value).astype(data_type.numpy))
        info = np.iinfo(data_type.numpy)
        return d.pick([int(info.min), int(info.max), d.int(max(int(info.min), -9), min(int(info.max), 9))])
    how = d.int(0, 3)
    if how == 0:
        value = d.pick([0.0, -0.0, 1.0, -1.5, 3.0e38, float("nan"), float("inf")])
    else:
        value = (attr.default if math.isfinite(attr.default) else 0.0) + d.real(-3.0, 3.0)
    if not math.isfinite(value) and attr.finite:
        value = attr.default
    binding = attr.minimum is not None and (level is None or attr.minimum_until is None or level < attr.minimum_until)
    if binding and not value >= attr.minimum:
        value = attr.minimum + abs(d.real(0.0, 2.0))
    return value


def broken_output(draw, desc, kind):
    """(builder, fragment, kind): the output one element longer on an axis ("output_sizes")
    or of another data type ("output_type")."""
    out = desc.output_tensor
    if kind == "output_sizes":
        return replace_fields(desc, output_tensor=one_more(out, draw(st.integers(0, out.rank - 1)))), \
            "output_tensor.sizes", kind
    dt = draw(st.sampled_from([t for t in T if t != out.data_type]))
    return replace_fields(desc, output_tensor=dml.TensorDesc(dt, out.sizes)), "output_tensor.data_type", kind


def products_compare(got, want, tensors, attributes, op):
    """Within a sum of products' documented precision (GEMM's, the convolution's), anything
    where it is unbounded (a partial sum that may overflow)."""
    tolerance = np.asarray(op.tolerance(want, tensors, attributes))
    bounded = ~np.isinf(tolerance)
    assert got.dtype == want.dtype and got.shape == want.shape
    assert_within(got[bounded], want[bounded], tolerance[bounded], "Gemm")


def sliding_window(d: Draw, spatial) -> dict:
    """UNFOLD's and FOLD's window fields over spatial sizes `spatial`: per axis a window of
    1-3 (1-2 from 3 spatial axes on, where the blocks multiply), strides 1-3, dilations 1-2,
    paddings 0-2 (none from 3 axes on), shrunk to one position where it would not fit."""
    many = len(spatial) > 2
    fields = {"window_sizes": [], "strides": [], "dilations": [], "start_padding": [], "end_padding": []}
    for n in spatial:
        w, st_, dil = d.int(1, 2 if many else 3), d.int(1, 2 if many else 3), d.int(1, 2)
        a, b = (0, 0) if many else (d.int(0, 2), d.int(0, 2))
        if (w - 1) * dil + 1 > n + a + b:
            w, dil = 1, 1
        for field, v in zip(fields, (w, st_, dil, a, b), strict=True):
            fields[field].append(v)
    return fields


def slice_window(d: Draw, shape) -> tuple[list, list, list, list]:
    """A Slice1 window on an input of `shape`: (offsets, sizes, strides, output sizes): per
    axis an offset and a size inside it, a step of either sign (small, or up to the
    window), an output size up to what the window holds (Slice1's rule, SliceGrad's)."""
    from gpudml.ops.slice1 import max_output_size

    offsets, sizes, strides, out_sizes = [], [], [], []
    for n in shape:
        offset = d.int(0, n - 1)
        size = d.int(1, n - offset)
        step = (d.int(1, 3) if d.bool() else d.int(1, size + 1)) * d.pick([1, -1])
        offsets.append(offset)
        sizes.append(size)
        strides.append(step)
        out_sizes.append(d.int(1, max_output_size(size, step)))
    return offsets, sizes, strides, out_sizes


def window_choices(draw, desc, i: int, n: int, not_int) -> dict:
    """The ways to break a window desc's (Slice1's, SliceGrad's) arrays on axis i of a
    forward input of n elements ({kind: (field, value)}, hostile.broken_choice's)."""
    from .. import hostile

    off, entry = desc.input_window_offsets[i], hostile.with_entry
    return {
        "offset_past_end": ("input_window_offsets", entry(desc.input_window_offsets, i, n)),
        "offset_negative": ("input_window_offsets", entry(desc.input_window_offsets, i, -1)),
        "offset_huge": ("input_window_offsets", entry(desc.input_window_offsets, i, 2**40)),
        "window_empty": ("input_window_sizes", entry(desc.input_window_sizes, i, 0)),
        "window_too_long": ("input_window_sizes", entry(desc.input_window_sizes, i, n - off + 1)),
        "stride_zero": ("input_window_strides", entry(desc.input_window_strides, i, 0)),
        "stride_int32": ("input_window_strides",
                         entry(desc.input_window_strides, i, draw(st.sampled_from([2**31, -2**31 - 1])))),
        "length": ("input_window_offsets", list(desc.input_window_offsets) + [0]),
        "not_int": ("input_window_sizes", entry(desc.input_window_sizes, i, not_int)),
        "not_a_list": ("input_window_strides", draw(st.sampled_from([None, 3, "1,1"]))),
    }
