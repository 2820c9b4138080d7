"""The rule of DML_NONZERO_COORDINATES."""

from __future__ import annotations

from hypothesis import strategies as st

import gpudml as dml
from gpudml import reference
from gpudml.ops.nonzero_coordinates import effective_rank

from ..draws import Draw
from ..hostile import broken_choice, maybe_hostile, with_entry
from ..registry import Ask, Drawn, rule


@st.composite
def _nonzero_broken(draw, desc):
    inp, coords = desc.input_tensor, desc.output_coordinates_tensor
    rank, sizes = coords.rank, list(coords.sizes)
    u32 = dml.DataType.UINT32
    wrong_type = draw(st.sampled_from([dml.DataType.INT32, dml.DataType.UINT64, dml.DataType.FLOAT32]))
    choices = {
        "rows": ("output_coordinates_tensor", dml.TensorDesc(u32, with_entry(sizes, rank - 2, sizes[-2] + 1))),
        "columns_many": ("output_coordinates_tensor", dml.TensorDesc(u32, with_entry(sizes, rank - 1, rank + 1))),
        "lead": ("output_coordinates_tensor", dml.TensorDesc(u32, with_entry(sizes, 0, 2))),
        "count_sizes": ("output_count_tensor", dml.TensorDesc(u32, with_entry([1] * rank, rank - 1, 2))),
        "count_type": ("output_count_tensor", dml.TensorDesc(wrong_type, [1] * rank)),
        "coordinates_type": ("output_coordinates_tensor", dml.TensorDesc(wrong_type, sizes)),
    }
    if effective_rank(inp.sizes) > 1:
        choices["columns_few"] = ("output_coordinates_tensor",
                                  dml.TensorDesc(u32, with_entry(sizes, rank - 1, effective_rank(inp.sizes) - 1)))
    return broken_choice(draw, desc, choices)


@st.composite
def _nonzero_functional(draw, x, shape):
    args = {"columns": maybe_hostile(draw, draw(st.sampled_from([None, len(shape)])))}
    return args, lambda a: reference.nonzero_coordinates(a, **args)


@rule("nonzero_coordinates", broken=_nonzero_broken, functional=_nonzero_functional,
      fields=("x", "input_tensor", "output_count_tensor", "output_coordinates_tensor", "columns", "DimensionCount",
              "device"))
def nonzero_coordinates_call(d: Draw, ask: Ask) -> Drawn:
    """Small inputs (a few hundred elements), the columns from the effective rank to the rank."""
    x = ask.input(d, {4: 5, 5: 4}.get(ask.rank, 3))
    low = max(effective_rank(x.sizes), 1)
    return Drawn([x], {"columns": d.int(low, max(ask.rank, low))})
