"""The rule of DML_DEQUANTIZE: an output of the asked rank, its scale per tensor, per axis or
per block (a size dividing the output's on each axis), a zero point or none, an 8-bit input
or (the last size 2 or more) a 4-bit one given as its bytes (an odd last size: each row's
last byte a half)."""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

import gpudml as dml
from gpudml import reference

from ..draws import Draw, T
from ..hostile import broken_choice, maybe_hostile, with_entry
from ..registry import Ask, Drawn, rule


def _divisor(d: Draw, n: int) -> int:
    """A size that divides n: 1, n or a divisor between."""
    return d.pick([k for k in range(1, n + 1) if n % k == 0])


@st.composite
def _dequantize_broken(draw, desc):
    """Its own rules: scale sizes dividing the output's, the scale the output's type, the zero
    point the input's type and the scale's sizes, the input the output's sizes, the quantization type."""
    out, scale, inp = desc.output_tensor, desc.scale_tensor, desc.input_tensor
    axis = draw(st.integers(0, out.rank - 1))
    other = T.FLOAT16 if scale.data_type == T.FLOAT32 else T.FLOAT32
    zero_type = T.UINT8 if inp.data_type == T.INT8 else T.INT8
    choices = {
        "scale_sizes": ("scale_tensor", dml.TensorDesc(scale.data_type,
                                                       with_entry(scale.sizes, axis, out.sizes[axis] + 1))),
        "scale_type": ("scale_tensor", dml.TensorDesc(other, scale.sizes)),
        "zero_type": ("zero_point_tensor", dml.TensorDesc(zero_type, scale.sizes)),
        "zero_sizes": ("zero_point_tensor", dml.TensorDesc(inp.data_type, with_entry(scale.sizes, axis,
                                                                                       scale.sizes[axis] + 1))),
        "input_sizes": ("input_tensor", dml.TensorDesc(inp.data_type, with_entry(inp.sizes, axis,
                                                                                 _other_size(inp, out, axis)))),
        "quantization_type": ("quantization_type", draw(st.sampled_from([0, 3, "scale_zero", None]))),
    }
    return broken_choice(draw, desc, choices, with_entry(out.sizes, axis, out.sizes[axis] + 3))


def _other_size(inp, out, axis: int) -> int:
    """An input size along `axis` that neither reading allows: not the output's (8-bit) nor,
    along the last axis, the output's bytes (4-bit: (n + 1) // 2, so [1] bytes of an output
    [2] grown by one would be a valid 8-bit input)."""
    size = inp.sizes[axis] + 1
    while size == out.sizes[axis] or (axis == out.rank - 1 and size == (out.sizes[axis] + 1) // 2):
        size += 1
    return size


@st.composite
def _dequantize_functional(draw, x, shape):
    """A per-tensor or per-axis scale (now and then hostile arguments) for an 8-bit x."""
    axis = draw(st.integers(0, len(shape) - 1))
    per_axis = draw(st.booleans())
    scale = np.full([shape[axis]] if per_axis else [1], 0.5, np.float32)
    args = {"scale": scale, "axis": maybe_hostile(draw, axis if per_axis else None),
            "block_size": maybe_hostile(draw, None)}
    return args, lambda a: reference.dequantize(a, **args)


@rule("dequantize", broken=_dequantize_broken, functional=_dequantize_functional, free=("output_tensor",),
      fields=("x", "scale", "zero_point", "axis", "block_size", "bits", "size", "input_tensor", "scale_tensor",
              "zero_point_tensor", "quantization_type", "output_tensor", "device"))
def dequantize_call(d: Draw, ask: Ask) -> Drawn:
    """The output's sizes (given ones: the input's); on each axis the scale's size a divisor
    of the output's; a zero point half the time; a 4-bit input half the time where the last
    size is 2 or more (its zero point packed where the scale's last size is even)."""
    sizes = ask.input_sizes(d)
    out_type = ask.types.get("output_tensor", T.FLOAT32)
    if out_type not in (T.FLOAT32, T.FLOAT16):
        out_type = T.FLOAT32
    four = sizes[-1] >= 2 and d.pick([False, True])
    scale = [_divisor(d, n) for n in sizes]
    x = dml.TensorDesc(ask.data_type, sizes[:-1] + [(sizes[-1] + 1) // 2] if four else sizes)
    tensors = [x, dml.TensorDesc(out_type, scale)]
    if d.pick([False, True]):
        packed = four and scale[-1] % 2 == 0 and d.pick([False, True])
        tensors.append(dml.TensorDesc(ask.data_type, scale[:-1] + [scale[-1] // 2] if packed else scale))
    return Drawn(tensors, ({"bits": 4, "size": sizes[-1]} if sizes[-1] % 2 else {"bits": 4}) if four else {})

