"""The rule of DML_UNFOLD."""

from __future__ import annotations

from hypothesis import strategies as st

from gpudml import reference

from ..draws import Draw
from ..hostile import broken_choice, maybe_hostile, one_more, replace_fields, with_entry
from ..registry import Ask, Drawn, rule
from ._common import sliding_window


@st.composite
def broken_window(draw, desc, spatial: int):
    """(builder, fragment, kind) of a desc with one window field broken, or its block
    tensor (UNFOLD's output, FOLD's input) one element longer on an axis."""
    i = draw(st.integers(0, max(spatial - 1, 0)))
    choices = {
        "window_zero": ("window_sizes", with_entry(desc.window_sizes, i, 0)),
        "window_big": ("window_sizes", with_entry(desc.window_sizes, i, 1000)),
        "strides_zero": ("strides", with_entry(desc.strides, i, 0)),
        "dilations_zero": ("dilations", with_entry(desc.dilations, i, 0)),
        "padding_negative": ("start_padding", with_entry(desc.start_padding, i, -1)),
        "end_padding_huge": ("end_padding", with_entry(desc.end_padding, i, 2**32)),
        "length": ("strides", list(desc.strides) + [1]),
        "not_int": ("dilations", with_entry(desc.dilations, i, 0.5)),
    }
    field = "output_tensor" if type(desc).__name__.startswith("Unfold") else "input_tensor"
    blocks = getattr(desc, field)
    kind = draw(st.sampled_from(sorted(choices) + ["blocks"]))
    if kind == "blocks":  # one more block (L) than the geometry makes
        return replace_fields(desc, **{field: one_more(blocks, 2)}), f"{field}.sizes", kind
    return broken_choice(draw, desc, {kind: choices[kind]})


@st.composite
def _unfold_broken(draw, desc):
    return draw(broken_window(desc, desc.input_tensor.rank - 2))


@st.composite
def _unfold_functional(draw, x, shape):
    spatial = max(len(shape) - 2, 1)
    args = {"window_sizes": maybe_hostile(draw, [draw(st.integers(1, 2)) for _ in range(spatial)]),
            "strides": maybe_hostile(draw, draw(st.integers(1, 2))),
            "start_padding": maybe_hostile(draw, [draw(st.integers(0, 1)) for _ in range(spatial)])}
    return args, lambda a: reference.unfold(a, **args)


@rule("unfold", broken=_unfold_broken, functional=_unfold_functional,
      fields=("x", "input_tensor", "output_tensor", "window_sizes", "strides", "dilations", "start_padding",
              "end_padding", "DimensionCount", "device"))
def unfold_call(d: Draw, ask: Ask) -> Drawn:
    """Small inputs [N, C, spatial...]; sliding_window's windows (ranks 1-2: no spatial axis,
    for validation to refuse)."""
    x = ask.input(d, {3: 7, 4: 5, 5: 3}.get(ask.rank, 2))
    return Drawn([x], sliding_window(d, x.sizes[2:]) if ask.rank >= 3 else {"window_sizes": [1]})
