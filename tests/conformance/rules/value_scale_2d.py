"""The rule of DML_VALUE_SCALE_2D: 4-D inputs of 1 or 3 channels (the page's channel
counts), a scale and one bias per channel."""

from __future__ import annotations

from hypothesis import strategies as st

import gpudml as dml
from gpudml import reference

from ..draws import Draw
from ..hostile import broken_choice, maybe_hostile, with_entry
from ..registry import Ask, Drawn, rule


@st.composite
def _value_scale_2d_broken(draw, desc):
    """Its own rules: channel_count 1 or 3, the input's channels, bias's length; the numbers
    FLOATs; the output the input's shape."""
    inp, n = desc.input_tensor, desc.channel_count
    choices = {
        "channel_count": ("channel_count", draw(st.sampled_from([0, 2, 4, 2**32, -1]))),
        "not_int": ("channel_count", draw(st.sampled_from([0.5, "1", None, 1j]))),
        "bias_length": ("bias", tuple([0.5] * draw(st.sampled_from([0, n + 1])))),
        "bias_values": ("bias", draw(st.sampled_from([("a",) * n, (None,) * n, "abc", 1.0, (1e39,) * n]))),
        "scale": ("scale", draw(st.sampled_from([None, "2", [1.0], 1e39]))),
        "channels": ("input_tensor", dml.TensorDesc(inp.data_type, with_entry(inp.sizes, 1, 4 - n))),
    }
    out, axis = desc.output_tensor.sizes, draw(st.integers(0, 3))
    return broken_choice(draw, desc, choices, with_entry(out, axis, out[axis] + 1))


@st.composite
def _value_scale_2d_functional(draw, x, shape):
    """A scale and a bias per channel of x (where x is 4-D), now and then hostile."""
    channels = shape[1] if len(shape) == 4 else 1
    args = {"scale": maybe_hostile(draw, draw(st.floats(-4, 4, width=32))),
            "bias": maybe_hostile(draw, [draw(st.floats(-4, 4, width=32)) for _ in range(channels)])}
    return args, lambda a: reference.value_scale_2d(a, **args)


@rule("value_scale_2d", broken=_value_scale_2d_broken, functional=_value_scale_2d_functional,
      fields=("x", "input_tensor", "output_tensor", "scale", "channel_count", "bias", "DimensionCount", "device"))
def value_scale_2d_call(d: Draw, ask: Ask) -> Drawn:
    """An NCHW input of 1 or 3 channels (of given sizes, channels that are neither become 1
    below 3, else 3: no random graph draws this operator, which is no chain stage), a scale in
    [-4, 4] and biases in [-4, 4]; another rank: a bias per entry of axis 1, for validation to
    refuse."""
    sizes = ask.input_sizes(d, 5)
    if ask.rank == 4 and ask.sizes is None:
        sizes[1] = d.pick([1, 3])
    elif ask.rank == 4 and sizes[1] not in (1, 3):
        sizes[1] = 1 if sizes[1] < 3 else 3
    channels = sizes[1] if len(sizes) >= 2 else 1
    return Drawn([dml.TensorDesc(ask.data_type, sizes)],
                 {"scale": d.real(-4, 4), "bias": [d.real(-4, 4) for _ in range(channels)]})
