"""The rules of the pooling operators (a rule per row of gpudml.ops.pooling.TABLE)."""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

import gpudml as dml
from gpudml.ops import pooling as pooling_op
from gpudml.ops import spec_named
from gpudml.testing import assert_within

from ..draws import Draw, T
from ..hostile import maybe_hostile, one_more, replace_fields, with_entry
from ..registry import Ask, Drawn, rule
from ..running import assert_outputs_equal


def _pool_axis(d: Draw, n: int, dilated: bool) -> tuple[int, int, int, int, int]:
    """(window, stride, start padding, end padding, dilation) for a spatial axis of n: a
    window of 1-3 (dilation 1-2) that fits the padded axis, paddings below the window's
    extent, or none where a window would cover padding only."""
    dil = d.int(1, 2) if dilated else 1
    window = d.int(1, 3)
    stride = d.int(1, 3)
    extent = (window - 1) * dil + 1
    a, b = d.int(0, extent - 1), d.int(0, extent - 1)
    if extent > n + a + b:
        window, dil, extent = 1, 1, 1
    count = pooling_op.output_size(n, window, stride, a, b, dil)
    if pooling_op._empty_window(n, window, stride, a, dil, count) is not None:
        a = b = 0
        if extent > n:
            window, dil = 1, 1
    return window, stride, a, b, dil


def _pool_call(row):
    def call(d: Draw, ask: Ask) -> Drawn:
        """Small inputs; per spatial axis a window of 1-3 that fits, strides 1-3, paddings,
        dilations 1-2 (the versions that have them); MAX's indices half the time (of the
        table's free type), AVERAGE's include_padding, LP's p in 1-3 (now and then 5)."""
        if ask.sizes is None and ask.rank in (4, 5):  # (spatial axes of 2 or more: windows worth sliding)
            x = dml.TensorDesc(ask.data_type, d.ints(2, 1, 3) + d.ints(ask.rank - 2, 2, 5 if ask.rank == 4 else 3))
        else:
            x = ask.input(d, 3)
        axes = [_pool_axis(d, n, row.dilations) for n in x.sizes[2:]]
        attrs = {"window_size": [a[0] for a in axes], "strides": [a[1] for a in axes],
                 "start_padding": [a[2] for a in axes], "end_padding": [a[3] for a in axes]}
        if row.dilations:
            attrs["dilations"] = [a[4] for a in axes]
        if row.indices and (d.bool() or "output_indices_tensor" in ask.types and ask.sizes is not None):
            attrs["output_indices"] = ask.types.get("output_indices_tensor", dml.DataType.UINT32)
        if row.extra == "include_padding":
            attrs["include_padding"] = d.bool()
        if row.extra == "p":
            attrs["p"] = d.pick([1, 2, 2, 3, 5])
        return Drawn([x], attrs)
    return call


def _pool_broken(row):
    @st.composite
    def broken(draw, desc):
        out, spatial = desc.output_tensor, desc.dimension_count
        i = draw(st.integers(0, max(0, spatial - 1)))
        kinds = ["output_sizes", "output_type", *WINDOW_KINDS]
        kinds += ["dilations_zero"] if row.dilations else []
        kinds += ["indices_sizes"] if row.indices and desc.output_indices_tensor is not None else []
        kinds += ["p"] if row.extra == "p" else ["include_padding"] if row.extra else []
        kind = draw(st.sampled_from(kinds))
        if kind == "output_sizes":
            return replace_fields(desc, output_tensor=one_more(out, draw(st.integers(0, out.rank - 1)))), \
                "output_tensor.sizes", kind
        if kind == "indices_sizes":
            idx = desc.output_indices_tensor
            return replace_fields(desc, output_indices_tensor=one_more(idx, idx.rank - 1)), \
                "output_indices_tensor.sizes", kind
        if kind == "output_type":
            dt = draw(st.sampled_from([t for t in T if t != out.data_type]))
            return replace_fields(desc, output_tensor=dml.TensorDesc(dt, out.sizes)), "output_tensor.data_type", kind
        if kind == "p":
            return replace_fields(desc, p=draw(st.sampled_from([0, -1, 1.5, "2"]))), "p", kind
        return broken_window(draw, desc, kind, i)
    return broken


#: The window breakages `broken_window` makes (the forward poolings' and their gradients').
WINDOW_KINDS = ("dimension_count", "window_zero", "strides_zero", "window_big", "length")


def broken_window(draw, desc, kind: str, i: int):
    """(builder, fragment, kind) of a pooling desc's window fields broken as `kind` says (one
    of WINDOW_KINDS, "dilations_zero" or "include_padding"), spatial axis i."""
    if kind == "dimension_count":
        return replace_fields(desc, dimension_count=draw(st.sampled_from([desc.dimension_count + 1, 0, "2",
                                                                          None]))), "dimension_count", kind
    if kind == "length":
        field = draw(st.sampled_from(["strides", "window_size", "start_padding", "end_padding"]))
        return replace_fields(desc, **{field: list(getattr(desc, field)) + [1]}), field, kind
    if kind == "include_padding":
        return replace_fields(desc, include_padding=draw(st.sampled_from(["yes", 2, None]))), "include_padding", kind
    field = {"window_zero": "window_size", "strides_zero": "strides", "dilations_zero": "dilations",
             "window_big": "window_size"}[kind]
    value = 10**6 if kind == "window_big" else draw(st.sampled_from([0, -1]))
    return replace_fields(desc, **{field: with_entry(getattr(desc, field), i, value)}), field, kind


def _pool_functional(row, spec):
    @st.composite
    def calls(draw, x, shape):
        """Windows of 1-3 per spatial axis (now and then a hostile one, or None: global),
        strides, paddings below the window, the row's own argument now and then hostile."""
        spatial = max(0, len(shape) - 2)
        args = {"window_size": draw(st.one_of(st.none(), st.lists(st.integers(1, 3), min_size=spatial,
                                                                  max_size=spatial)))}
        args["window_size"] = maybe_hostile(draw, args["window_size"])
        if draw(st.booleans()):
            args["strides"] = draw(st.integers(1, 2))
        if draw(st.booleans()) and args["window_size"] is not None:
            args["start_padding"] = draw(st.sampled_from([0, 1]))
        if row.dilations and draw(st.booleans()):
            args["dilations"] = maybe_hostile(draw, draw(st.integers(1, 2)))
        if row.indices and draw(st.booleans()):
            args["output_indices"] = draw(st.sampled_from([True, dml.DataType.UINT64, "bogus", np.float32]))
        if row.extra == "include_padding":
            args["include_padding"] = draw(st.sampled_from([False, True, "yes"]))
        if row.extra == "p":
            args["p"] = maybe_hostile(draw, draw(st.integers(1, 3)))

        def expected(a):
            got = spec.reference(a, **args)
            return list(got) if isinstance(got, tuple) else got
        return args, expected
    return calls


def _pool_compare(row, spec):
    def compare(got, want, x, args):
        """MAX bit-exact (its indices too); AVERAGE and LP within the documented precision
        where it is bounded."""
        if spec.tolerance is None:
            assert_outputs_equal(got, want)
            return
        tolerance = np.asarray(spec.tolerance(want, [x], args))
        bounded = ~np.isinf(tolerance)
        assert got.dtype == want.dtype and got.shape == want.shape
        assert_within(got[bounded], want[bounded], tolerance[bounded], spec.name)
    return compare


for _row in pooling_op.TABLE:
    _spec = spec_named(_row.key)
    rule(_spec.key, broken=_pool_broken(_row), functional=_pool_functional(_row, _spec),
         compare=_pool_compare(_row, _spec), free=("output_indices_tensor",) if _row.indices else (),
         fields=("x", "input_tensor", "output_tensor", "output_indices_tensor", "dimension_count", "window_size",
                 "strides", "start_padding", "end_padding", "dilations", "output_indices", "include_padding", "p",
                 "device"),
         light=True)(_pool_call(_row))
