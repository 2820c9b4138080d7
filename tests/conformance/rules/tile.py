"""The rule of DML_TILE."""

from __future__ import annotations

from hypothesis import strategies as st

from gpudml import reference

from ..draws import Draw
from ..hostile import broken_choice, maybe_hostile, one_more, pick_axis, with_entry
from ..registry import Ask, Drawn, rule


@st.composite
def _tile_broken(draw, desc):
    rank, i, not_int = pick_axis(draw, desc)
    choices = {
        "zero": ("repeats", with_entry(desc.repeats, i, 0)),
        "negative": ("repeats", with_entry(desc.repeats, i, -draw(st.integers(1, 2**40)))),
        "huge": ("repeats", with_entry(desc.repeats, i, 2**32)),
        "length": ("repeats", list(desc.repeats) + [1]),
        "not_int": ("repeats", with_entry(desc.repeats, i, not_int)),
        "not_a_list": ("repeats", draw(st.sampled_from([None, 3, "1,1"]))),
    }
    return broken_choice(draw, desc, choices, one_more(desc.output_tensor, i).sizes)


@st.composite
def _tile_functional(draw, x, shape):
    args = {"repeats": maybe_hostile(draw, [draw(st.integers(1, 3)) for _ in shape])}
    return args, lambda a: reference.tile(a, args["repeats"])


@rule("tile", broken=_tile_broken, functional=_tile_functional,
      fields=("x", "input_tensor", "repeats", "output_tensor", "device"))
def tile_call(d: Draw, ask: Ask) -> Drawn:
    """Small inputs, 1-5 repeats per axis (1-3 from rank 4 on)."""
    x = ask.input(d, {1: 40, 2: 9, 3: 5, 4: 4}.get(ask.rank, 2))
    return Drawn([x], {"repeats": d.ints(ask.rank, 1, 3 if ask.rank > 3 else 5)})
