"""The rule of DML_SPLIT."""

from __future__ import annotations

from hypothesis import strategies as st

from gpudml import reference

from ..draws import Draw
from ..hostile import broken_parts, maybe_hostile
from ..registry import Ask, Drawn, rule


@st.composite
def _split_functional(draw, x, shape):
    rank = len(shape)
    axis = draw(st.integers(-rank, rank - 1))
    cuts = sorted(set(draw(st.lists(st.integers(1, max(1, shape[axis] - 1)), max_size=3)))) if shape[axis] > 1 else []
    args = {"axis": maybe_hostile(draw, axis),
            "sizes": maybe_hostile(draw, [b - a for a, b in zip([0, *cuts], [*cuts, shape[axis]])])}
    return args, lambda a: reference.split(a, args["axis"], args["sizes"])


@rule("split", broken=lambda desc: broken_parts(desc, "input_tensor", "output_tensors", "OutputCount"),
      functional=_split_functional, fields=("x", "input_tensor", "axis", "sizes", "output_tensors", "device"))
def split_call(d: Draw, ask: Ask) -> Drawn:
    """The axis cut into 1-6 pieces."""
    x = ask.input(d, {1: 60, 2: 12, 3: 6, 4: 4}.get(ask.rank, 2))
    axis = d.int(0, ask.rank - 1)
    sizes, left = [], x.sizes[axis]
    while left:
        sizes.append(d.int(1, left) if len(sizes) < 5 else left)
        left -= sizes[-1]
    return Drawn([x], {"axis": axis, "sizes": sizes})
