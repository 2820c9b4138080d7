"""The rule of DML_QUANTIZE: a scale of the input's type and a zero point of the output's
(each left out now and then), per tensor, per axis or blocked along an axis; half the time
(the last size 2 or more) a 4-bit output, INT4 or UINT4 as its INT8/UINT8 bytes, its zero
point one value a byte or (the scale's last size even) packed two a byte."""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

import gpudml as dml
from gpudml import reference

from ..draws import Draw, T
from ..hostile import maybe_hostile, replace_fields, with_entry
from ..registry import Ask, Drawn, rule


def _divisors(n: int) -> list[int]:
    return [b for b in range(1, n + 1) if n % b == 0]


@st.composite
def _quantize_broken(draw, desc):
    """Its own rules: the quantization type and count, the scale's type and sizes (each 1,
    the input's or a divisor), the zero point's type and sizes, the output's sizes."""
    scale, zero = desc.scale_tensor, desc.zero_point_tensor
    inp = desc.input_tensor
    axis = draw(st.integers(0, inp.rank - 1))
    other_float = T.FLOAT16 if scale.data_type == T.FLOAT32 else T.FLOAT32
    n = inp.sizes[axis]
    bad_size = next(s for s in range(2, n + 3) if n % s)  # (n + 1 at most: never a divisor)
    zero_type = desc.output_tensor.data_type
    rest = desc.quantization_tensors[1:]
    bad_sizes = with_entry(scale.sizes, axis, bad_size)
    choices = {
        "type_none": ("quantization_type", dml.QuantizationType.NONE),
        "type_count": ("quantization_type", dml.QuantizationType.SCALE if zero is not None
                       else dml.QuantizationType.SCALE_ZERO_POINT),
        "scale_type": ("quantization_tensors", (dml.TensorDesc(other_float, scale.sizes), *rest)),
        "scale_size": ("quantization_tensors", (dml.TensorDesc(scale.data_type, bad_sizes), *rest)),
        "zero_type": ("quantization_tensors", (scale, dml.TensorDesc(T.INT8 if zero_type == T.UINT8 else T.UINT8,
                                                                        scale.sizes))),
        "zero_size": ("quantization_tensors", (scale, dml.TensorDesc(zero_type, with_entry(
            scale.sizes, axis, inp.sizes[axis] if scale.sizes[axis] == 1 else 1)))),
        "not_tensors": ("quantization_tensors", draw(st.sampled_from([None, 1, scale]))),
    }
    kind = draw(st.sampled_from(sorted(choices) + ["output_size", "output_type"]))
    out = desc.output_tensor
    if kind == "output_size":
        return replace_fields(desc, output_tensor=dml.TensorDesc(out.data_type, with_entry(
            out.sizes, axis, out.sizes[axis] + 1))), "output_tensor.sizes", kind
    if kind == "output_type":
        dt = draw(st.sampled_from([T.FLOAT32, T.INT16, T.UINT32, T.INT32]))
        return replace_fields(desc, output_tensor=dml.TensorDesc(dt, out.sizes)), "output_tensor", kind
    name, value = choices[kind]
    return replace_fields(desc, **{name: value}), name, kind


@st.composite
def _quantize_functional(draw, x, shape):
    """A positive scale per tensor, per axis or per block (hostile now and then: zero,
    negative, NaN, a shape that does not fit, a block size that does not divide)."""
    rank = len(shape)
    how = draw(st.sampled_from(["tensor", "axis", "block"]))
    axis = draw(st.integers(0, rank - 1))
    dtype = draw(st.sampled_from(["int8", "uint8", np.int8, "INT4", "uint4", "float32"]))
    scale_type = np.float16 if isinstance(x, np.ndarray) and x.dtype == np.float16 else np.float32
    kwargs = {}
    if how == "tensor":
        sizes = ()
    elif how == "axis":
        sizes = (shape[axis],)
        kwargs["axis"] = axis
    else:
        b = draw(st.sampled_from(_divisors(shape[axis]) + [shape[axis] + 1]))
        sizes = tuple(n // b if k == axis else n for k, n in enumerate(shape))
        kwargs.update(axis=axis, block_size=b)
    scale = np.full(sizes, draw(st.sampled_from([0.5, 0.25, 3.0])), scale_type)
    if draw(st.integers(0, 4)) == 0:
        scale = scale * draw(st.sampled_from([0.0, -1.0, np.nan]))
    args = {"scale": maybe_hostile(draw, scale), "dtype": dtype, **kwargs}
    if draw(st.booleans()):
        zero_type = np.int8 if str(dtype).lower() in ("int8", "<class 'numpy.int8'>", "int4") else np.uint8
        value = draw(st.sampled_from([3, 9]))  # (9: past INT4's range, refused for 4-bit outputs)
        args["zero_point"] = maybe_hostile(draw, np.full(sizes, value, zero_type))
    return args, lambda a: reference.quantize(a, **args)


@rule("quantize", broken=_quantize_broken, functional=_quantize_functional, free=("output_tensor",),
      fields=("x", "scale", "zero_point", "input_tensor", "quantization_tensors", "quantization_type",
              "output_tensor", "dtype", "axis", "block_size", "DimensionCount", "device"))
def quantize_call(d: Draw, ask: Ask) -> Drawn:
    """A scale per tensor, per axis or per block (a divisor of the axis' size) along an axis,
    a zero point three times in four; a 4-bit output half the time where the last size is 2
    or more (its zero point packed half the time where the scale's last size is even)."""
    x = ask.input(d)
    axis = d.int(0, ask.rank - 1)
    how = d.pick(["tensor", "axis", "block"])
    out_type = ask.types["output_tensor"]
    four = out_type in (T.INT8, T.UINT8) and x.sizes[-1] >= 2 and d.pick([False, True])  # (8-bit bytes only)
    attributes = {"dtype": ("INT4" if out_type == T.INT8 else "UINT4") if four else out_type}
    if how == "tensor":
        sizes = [1]
    elif how == "axis":
        sizes = [x.sizes[axis]]
        attributes["axis"] = axis
    else:
        b = d.pick(_divisors(x.sizes[axis]))
        sizes = [n // b if k == axis else n for k, n in enumerate(x.sizes)]
        attributes.update(axis=axis, block_size=b)
    tensors = [x, dml.TensorDesc(ask.data_type, sizes)]
    if d.int(0, 3):
        packed = four and how == "block" and sizes[-1] % 2 == 0 and d.pick([False, True])  # (x's rank)
        tensors.append(dml.TensorDesc(out_type, sizes[:-1] + [sizes[-1] // 2] if packed else sizes))
    return Drawn(tensors, attributes)
