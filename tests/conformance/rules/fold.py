"""The rule of DML_FOLD: the call's rank is the image's (the output's); the block tensor,
its input, always has 3 dimensions."""

from __future__ import annotations

import math

from hypothesis import strategies as st

import gpudml as dml
from gpudml import reference
from gpudml.ops import fold as fold_op
from gpudml.ops.unfold import WINDOW_FIELDS, Blocks
from gpudml.testing import assert_within

from ..draws import Draw
from ..hostile import maybe_hostile
from ..registry import Ask, Drawn, rule
from ..running import assert_outputs_equal
from ._common import sliding_window
from .unfold import broken_window


@st.composite
def _fold_broken(draw, desc):
    return draw(broken_window(desc, desc.output_tensor.rank - 2))


@st.composite
def _fold_functional(draw, x, shape):
    """Windows of one position over a 1-D image of x's L (a valid call where x is [N, C, L]),
    now and then hostile."""
    size = shape[2] if len(shape) == 3 else 2
    args = {"output_size": maybe_hostile(draw, [size]), "window_sizes": maybe_hostile(draw, [1]),
            "dilations": maybe_hostile(draw, draw(st.integers(1, 2)))}
    return args, lambda a: reference.fold(a, **args)


def _fold_compare(got, want, x, args):
    """Within FOLD's documented precision (bit-exact for integers)."""
    tolerance = fold_op.tolerance(want, [x], args)
    if tolerance is None:
        assert_outputs_equal(got, want)
    else:
        assert_within(got, want, tolerance, "Fold")


@rule("fold", broken=_fold_broken, functional=_fold_functional, compare=_fold_compare,
      fields=("x", "input_tensor", "output_tensor", "output_size", "window_sizes", "strides", "dilations",
              "start_padding", "end_padding", "DimensionCount", "device"))
def fold_call(d: Draw, ask: Ask) -> Drawn:
    """An image [N, C, spatial...] of the asked rank (its sizes where given), sliding_window's
    windows over it, and the block tensor [N, C * prod(window), L] they make (ranks 1-2: a
    block tensor of that rank, for validation to refuse)."""
    image = ask.input_sizes(d, {3: 7, 4: 5, 5: 3}.get(ask.rank, 2))
    if ask.rank < 3:  # a block tensor of that rank, for validation to name
        return Drawn([dml.TensorDesc(ask.data_type, image)], {"output_size": [], "window_sizes": []})
    window = sliding_window(d, image[2:])
    blocks = Blocks(tuple(image[2:]), *(tuple(window[f]) for f in WINDOW_FIELDS))
    x = dml.TensorDesc(ask.data_type, [image[0], image[1] * math.prod(window["window_sizes"]), blocks.count])
    return Drawn([x], {"output_size": image[2:], **window})
