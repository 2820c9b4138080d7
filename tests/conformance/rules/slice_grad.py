"""The rule of DML_SLICE_GRAD."""

from __future__ import annotations

from hypothesis import strategies as st

import gpudml as dml
from gpudml import reference
from gpudml.ops.slice1 import max_output_size

from ..draws import Draw
from ..hostile import broken_choice, maybe_hostile, pick_axis, replace_fields, with_entry
from ..registry import Ask, Drawn, rule
from ._common import slice_window, window_choices


@st.composite
def _slice_grad_broken(draw, desc):
    rank, i, not_int = pick_axis(draw, desc)
    dy, dx = desc.input_gradient_tensor, desc.output_gradient_tensor
    n = dx.sizes[i]
    choices = window_choices(draw, desc, i, n, not_int)
    kind = draw(st.sampled_from(sorted(choices) + ["gradient_size"]))
    if kind == "gradient_size":  # an input gradient larger than the forward slice's output
        most = max_output_size(desc.input_window_sizes[i], desc.input_window_strides[i])
        grown = dml.TensorDesc(dy.data_type, with_entry(dy.sizes, i, most + 1))
        return replace_fields(desc, input_gradient_tensor=grown), "input_gradient_tensor.sizes", kind
    return broken_choice(draw, desc, {kind: choices[kind]})


@st.composite
def _slice_grad_functional(draw, dy, shape):
    strides = [draw(st.sampled_from([1, 2, -1, -3])) for _ in shape]
    offsets = [draw(st.integers(0, 2)) for _ in shape]
    sizes = [1 + (n - 1) * abs(s) + draw(st.integers(0, 1)) for n, s in zip(shape, strides)]
    outs = [o + w + draw(st.integers(0, 2)) for o, w in zip(offsets, sizes)]
    args = {"output_sizes": maybe_hostile(draw, outs), "offsets": maybe_hostile(draw, offsets),
            "sizes": maybe_hostile(draw, sizes), "strides": maybe_hostile(draw, strides)}
    return args, lambda a: reference.slice_grad(a, args["output_sizes"], args["offsets"], args["sizes"],
                                                args["strides"])


@rule("slice_grad", broken=_slice_grad_broken, functional=_slice_grad_functional,
      fields=("dy", "input_gradient_tensor", "output_sizes", "offsets", "sizes", "strides", "input_window",
              "output_gradient_tensor", "device"))
def slice_grad_call(d: Draw, ask: Ask) -> Drawn:
    """The forward slice drawn as Slice1's rule draws it (a window per axis, a step of either
    sign, an output up to what the window holds); its output's sizes are the input
    gradient's, its input's the output gradient's. Given sizes (a random graph's value)
    are the input gradient's: the window is drawn around them."""
    if ask.sizes is not None:
        dy = ask.input(d)
        offsets, sizes, strides, outs = [], [], [], []
        for n in dy.sizes:
            step = d.pick([1, 2, -1, -3])
            offsets.append(d.int(0, 2))
            sizes.append(1 + (n - 1) * abs(step) + d.int(0, abs(step) - 1))
            strides.append(step)
            outs.append(offsets[-1] + sizes[-1] + d.int(0, 2))
        return Drawn([dy], {"output_sizes": outs, "offsets": offsets, "sizes": sizes, "strides": strides})
    x = ask.input(d)
    offsets, sizes, strides, dy_sizes = slice_window(d, x.sizes)
    dy = dml.TensorDesc(ask.data_type, dy_sizes)
    return Drawn([dy], {"output_sizes": list(x.sizes), "offsets": offsets, "sizes": sizes, "strides": strides})
