"""The rules of the pooling gradients (gpudml.ops.pooling_grad: MAX_POOLING_GRAD,
AVERAGE_POOLING_GRAD)."""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

import gpudml as dml
from gpudml.ops import pooling as pooling_op
from gpudml.ops import spec_named
from gpudml.testing import assert_within

from ..draws import Draw, T
from ..hostile import maybe_hostile, one_more, replace_fields
from ..registry import Ask, Drawn, rule
from .pooling import WINDOW_KINDS, _pool_axis, broken_window

MAX_SPEC, AVERAGE_SPEC = spec_named("max_pooling_grad"), spec_named("average_pooling_grad")
FIELDS = ("x", "dy", "input_sizes", "input_tensor", "input_gradient_tensor", "output_gradient_tensor",
          "dimension_count", "window_size", "strides", "start_padding", "end_padding", "dilations", "include_padding",
          "device", "DimensionCount", "data_type")


def _forward(sizes, axes) -> list[int]:
    return list(sizes[:2]) + [pooling_op.output_size(n, *a[:4], a[4]) for n, a in zip(sizes[2:], axes, strict=True)]


def _attrs(axes, dilated: bool) -> dict:
    attrs = {"window_size": [a[0] for a in axes], "strides": [a[1] for a in axes],
             "start_padding": [a[2] for a in axes], "end_padding": [a[3] for a in axes]}
    if dilated:
        attrs["dilations"] = [a[4] for a in axes]
    return attrs


def _axis_for_output(d: Draw, m: int) -> tuple[tuple, int]:
    """(window, stride, start, end, 1) and an input size n whose forward output along the axis is m."""
    window, stride = d.int(1, 3), d.int(1, 3)
    a, b = d.int(0, window - 1), d.int(0, window - 1)
    n = (m - 1) * stride + window - a - b
    if n < 1 or pooling_op._empty_window(n, window, stride, a, 1, m) is not None:
        a = b = 0
        n = (m - 1) * stride + window
    return (window, stride, a, b, 1), n


@rule("max_pooling_grad", broken=lambda desc: _broken(desc, True),
      functional=lambda x, shape: _max_functional(x, shape),
      compare=lambda got, want, x, args: _compare(MAX_SPEC, got, want, [x, args["dy"]], args), fields=FIELDS,
      light=True)
def max_pooling_grad_call(d: Draw, ask: Ask) -> Drawn:
    """4-D x (small), per spatial axis a window of 1-3 that fits, strides 1-3, paddings,
    dilations 1-2; dy of the forward output's sizes."""
    dt = ask.data_type
    if ask.sizes is None and ask.rank == 4:
        x = dml.TensorDesc(dt, d.ints(2, 1, 3) + d.ints(2, 2, 5))
    else:  # (given sizes, or a rank the table rejects)
        x = ask.input(d, 3)
    axes = [_pool_axis(d, n, True) for n in x.sizes[2:]]
    dy = dml.TensorDesc(ask.types.get("input_gradient_tensor", dt), _forward(x.sizes, axes))
    return Drawn([x, dy], _attrs(axes, True))


@rule("average_pooling_grad", broken=lambda desc: _broken(desc, False),
      functional=lambda x, shape: _average_functional(x, shape),
      compare=lambda got, want, x, args: _compare(AVERAGE_SPEC, got, want, [x], args), fields=FIELDS, light=True)
def average_pooling_grad_call(d: Draw, ask: Ask) -> Drawn:
    """dy 4-D or 5-D (small; given sizes: dy's); per spatial axis a window of 1-3, strides
    1-3, paddings, and the forward input's sizes that give dy's; include_padding either."""
    if ask.sizes is None and ask.rank in (4, 5):
        sizes = d.ints(2, 1, 3) + d.ints(ask.rank - 2, 2, 6 if ask.rank == 4 else 4)
    else:  # (given sizes, or a rank the table rejects)
        sizes = ask.input_sizes(d, 3)
    dy = dml.TensorDesc(ask.data_type, sizes)
    picked = [_axis_for_output(d, m) for m in sizes[2:]]
    attrs = _attrs([p[0] for p in picked], False)
    return Drawn([dy], {"input_sizes": sizes[:2] + [p[1] for p in picked], **attrs, "include_padding": d.bool()})


def _compare(spec, got, want, inputs, args):
    """Within the documented precision where it is bounded."""
    tolerance = np.asarray(spec.tolerance(want, inputs, args))
    bounded = ~np.isinf(tolerance)
    assert got.dtype == want.dtype and got.shape == want.shape
    assert_within(got[bounded], want[bounded], tolerance[bounded], spec.name)


@st.composite
def _broken(draw, desc, maxed: bool):
    dy, dx = desc.input_gradient_tensor, desc.output_gradient_tensor
    i = draw(st.integers(0, max(0, desc.dimension_count - 1)))
    kinds = ["dy_sizes", "dx_type", *WINDOW_KINDS]
    kinds += ["x_sizes", "dilations_zero"] if maxed else ["include_padding"]
    kind = draw(st.sampled_from(kinds))
    if kind == "dy_sizes":
        return replace_fields(desc, input_gradient_tensor=one_more(dy, draw(st.integers(0, dy.rank - 1)))), \
            "input_gradient_tensor.sizes", kind
    if kind == "x_sizes":
        return replace_fields(desc, input_tensor=one_more(desc.input_tensor, draw(st.integers(0, 3)))), \
            "output_gradient_tensor.sizes", kind
    if kind == "dx_type":
        dt = draw(st.sampled_from([t for t in T if t != dx.data_type]))
        return replace_fields(desc, output_gradient_tensor=dml.TensorDesc(dt, dx.sizes)), \
            "output_gradient_tensor", kind
    return broken_window(draw, desc, kind, i)


def _float_like(x) -> type:
    dtype = getattr(x, "dtype", None)
    return dtype if dtype is not None and dtype in (np.float16, np.float32) else np.float32


@st.composite
def _max_functional(draw, x, shape):
    """Windows of 1-3 per spatial axis (now and then hostile, or None: global), strides,
    paddings; dy of the forward output's shape (now and then one element more)."""
    spatial = max(0, len(shape) - 2)
    window = draw(st.one_of(st.none(), st.lists(st.integers(1, 3), min_size=spatial, max_size=spatial)))
    args = {"window_size": maybe_hostile(draw, window)}
    if draw(st.booleans()):
        args["strides"] = draw(st.integers(1, 2))
    if draw(st.booleans()):
        args["dilations"] = maybe_hostile(draw, draw(st.integers(1, 2)))
    try:
        win = tuple(shape[2:]) if window is None else tuple(window)
        st_, dil = args.get("strides", 1), args.get("dilations", 1)
        out = list(shape[:2]) + [max(1, pooling_op.output_size(n, w, st_, 0, 0, dil if isinstance(dil, int) else 1))
                                 for n, w in zip(shape[2:], win, strict=True)]
    except (TypeError, ValueError):
        out = [1] * len(shape)
    if draw(st.integers(0, 5)) == 0 and out:
        out[-1] += 1
    rng = np.random.default_rng(draw(st.integers(0, 999)))
    args["dy"] = rng.uniform(-1, 1, out).astype(_float_like(x))
    return args, lambda a: MAX_SPEC.reference(a, **args)


@st.composite
def _average_functional(draw, x, shape):
    """x is dy: windows of 1-3 per spatial axis (now and then hostile), strides, the forward
    input's sizes that give dy's (now and then hostile), include_padding either (or hostile)."""
    spatial = max(0, len(shape) - 2)
    window = draw(st.lists(st.integers(1, 3), min_size=spatial, max_size=spatial))
    stride = draw(st.integers(1, 2))
    sizes = list(shape[:2]) + [(m - 1) * stride + w for m, w in zip(shape[2:], window, strict=True)]
    args = {"input_sizes": maybe_hostile(draw, sizes), "window_size": maybe_hostile(draw, window), "strides": stride,
            "include_padding": draw(st.sampled_from([False, True, "yes"]))}
    return args, lambda a: AVERAGE_SPEC.reference(a, **args)
