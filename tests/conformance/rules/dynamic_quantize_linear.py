"""The rule of DML_DYNAMIC_QUANTIZE_LINEAR: any input, an INT8 or UINT8 output."""

from __future__ import annotations

from hypothesis import strategies as st

import gpudml as dml
from gpudml import reference

from ..draws import Draw, T
from ..hostile import replace_fields, with_entry
from ..registry import Ask, Drawn, rule


@st.composite
def _dynamic_quantize_linear_broken(draw, desc):
    """Its own rules: the zero point of the output's type, the scale FLOAT32, both of one
    element, the output of the input's sizes."""
    out, scale, zero = desc.output_tensor, desc.output_scale_tensor, desc.output_zero_point_tensor
    rank = out.rank
    axis = draw(st.integers(0, rank - 1))
    kind = draw(st.sampled_from(["zero_type", "scale_type", "scale_size", "zero_size", "output_size"]))
    if kind == "zero_type":
        value = dml.TensorDesc(T.INT8 if out.data_type == T.UINT8 else T.UINT8, zero.sizes)
        return replace_fields(desc, output_zero_point_tensor=value), "output_zero_point_tensor", kind
    if kind == "scale_type":
        value = dml.TensorDesc(draw(st.sampled_from([T.FLOAT16, T.INT32, T.UINT8])), scale.sizes)
        return replace_fields(desc, output_scale_tensor=value), "output_scale_tensor", kind
    if kind in ("scale_size", "zero_size"):
        field = "output_scale_tensor" if kind == "scale_size" else "output_zero_point_tensor"
        td = getattr(desc, field)
        return replace_fields(desc, **{field: dml.TensorDesc(td.data_type, with_entry(td.sizes, axis, 2))}), field, kind
    return replace_fields(desc, output_tensor=dml.TensorDesc(out.data_type, with_entry(
        out.sizes, axis, out.sizes[axis] + 1))), "output_tensor.sizes", kind


@st.composite
def _dynamic_quantize_linear_functional(draw, x, shape):
    dtype = draw(st.sampled_from(["uint8", "int8", "UINT8", "int4", "float32", None]))
    return {"dtype": dtype}, lambda a: list(reference.dynamic_quantize_linear(a, dtype=dtype))


@rule("dynamic_quantize_linear", broken=_dynamic_quantize_linear_broken,
      functional=_dynamic_quantize_linear_functional, free=("output_tensor",),
      fields=("x", "input_tensor", "output_tensor", "output_scale_tensor", "output_zero_point_tensor", "dtype",
              "DimensionCount", "device"))
def dynamic_quantize_linear_call(d: Draw, ask: Ask) -> Drawn:
    """The input of any sizes, the output's type the table's (UINT8 or INT8)."""
    return Drawn([ask.input(d)], {"dtype": ask.types["output_tensor"]})
