"""The rule of DML_RANDOM_GENERATOR."""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

import gpudml as dml
from gpudml.ops import random_generator as random_op

from ..draws import MAX_SIZE, Draw
from ..hostile import broken_choice, maybe_hostile, with_entry
from ..registry import Ask, Drawn, rule


@st.composite
def _random_generator_broken(draw, desc):
    """The state's sizes (not {1, 1, 1, 6}), the output state's (not the input state's), the
    type (not PHILOX_4X32_10)."""
    state = desc.input_state_tensor
    axis = draw(st.integers(0, 3))
    wrong = with_entry(state.sizes, axis, state.sizes[axis] + draw(st.integers(1, 3)))
    choices = {
        "state_sizes": ("input_state_tensor", dml.TensorDesc(dml.DataType.UINT32, wrong)),
        "state_short": ("input_state_tensor", dml.TensorDesc(dml.DataType.UINT32, [1, 1, 1, draw(st.integers(1, 5))])),
        "type": ("type", draw(st.sampled_from([1, -1, "mt19937", None, 0.5]))),
    }
    if desc.output_state_tensor is not None:
        choices["state_out_sizes"] = ("output_state_tensor", dml.TensorDesc(dml.DataType.UINT32, wrong))
    return broken_choice(draw, desc, choices)


@st.composite
def _random_generator_functional(draw, x, shape):
    """x itself as the state (rejected unless six UINT32 values), or a state of odd layout
    (big-endian, strided, a list); hostile sizes and flags."""
    sizes = maybe_hostile(draw, [draw(st.integers(1, 3)) for _ in range(4)])
    output_state = draw(st.sampled_from([True, False, True, "yes", None])) if draw(st.integers(0, 3)) == 0 else True
    args = {"output_sizes": sizes, "output_state": output_state}
    if not isinstance(x, np.ndarray) or draw(st.booleans()):
        return args, lambda a: random_op.reference(a, sizes, output_state=output_state)
    words = np.array(draw(st.lists(st.integers(0, 2**32 - 1), min_size=6, max_size=6)), np.uint32)
    how = draw(st.sampled_from(["big_endian", "strided", "list", "flat"]))
    state = {"big_endian": words.astype(">u4").reshape(1, 1, 1, 6),
             "strided": np.repeat(words, 2)[::2].reshape(1, 1, 1, 6), "list": words.tolist(), "flat": words}[how]
    return args, lambda _: random_op.reference(words, sizes, output_state=output_state), state


@rule("random_generator", broken=_random_generator_broken, functional=_random_generator_functional,
      free=("output_tensor", "output_state_tensor"),
      fields=("input_state", "input_state_tensor", "output_sizes", "output_state", "type", "output_tensor", "device",
              "DimensionCount"))
def random_generator_call(d: Draw, ask: Ask) -> Drawn:
    """The state {1, 1, 1, 6} (at another rank, six words on the last axis: rejected), an
    output of up to a few thousand elements, with or without the output state."""
    rank = ask.rank
    state = dml.TensorDesc(ask.data_type, [1] * (rank - 1) + [6])
    sizes = list(ask.sizes) if ask.sizes is not None else d.ints(rank, 1, MAX_SIZE[rank])
    return Drawn([state], {"output_sizes": sizes, "output_state": d.pick([True, True, False])})
