"""The rule of DML_SLICE1."""

from __future__ import annotations

from hypothesis import strategies as st

from gpudml import reference
from gpudml.ops.slice1 import max_output_size

from ..draws import Draw
from ..hostile import broken_choice, maybe_hostile, pick_axis, with_entry
from ..registry import Ask, Drawn, rule
from ._common import slice_window, window_choices


@st.composite
def _slice1_broken(draw, desc):
    rank, i, not_int = pick_axis(draw, desc)
    n = desc.input_tensor.sizes[i]
    size = desc.input_window_sizes[i]
    choices = window_choices(draw, desc, i, n, not_int)
    return broken_choice(draw, desc, choices, with_entry(desc.output_tensor.sizes, i, max_output_size(
        size, desc.input_window_strides[i]) + 1))


@st.composite
def _slice1_functional(draw, x, shape):
    offsets = [draw(st.integers(0, n - 1)) for n in shape]
    sizes = [draw(st.integers(1, n - o)) for n, o in zip(shape, offsets)]
    strides = [draw(st.sampled_from([1, 2, -1, -3])) for _ in shape]
    args = {"offsets": maybe_hostile(draw, offsets), "sizes": maybe_hostile(draw, sizes),
            "strides": maybe_hostile(draw, strides)}
    return args, lambda a: reference.slice(a, args["offsets"], args["sizes"], args["strides"])


@rule("slice1", broken=_slice1_broken, functional=_slice1_functional,
      fields=("x", "input_tensor", "offsets", "sizes", "strides", "output_sizes", "input_window", "output_tensor",
              "device"))
def slice1_call(d: Draw, ask: Ask) -> Drawn:
    """A window of each axis (offset, size), a step of either sign (small, or up to the
    window), an output size up to what the window holds."""
    x = ask.input(d)
    offsets, sizes, strides, out_sizes = slice_window(d, x.sizes)
    return Drawn([x], {"offsets": offsets, "sizes": sizes, "strides": strides, "output_sizes": out_sizes})
